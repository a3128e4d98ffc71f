/* pool.c: the thread pool behind parallel kernels.
 *
 * threads - 1 workers wait for jobs (spinning briefly, then on a condition
 * variable); cpu_pool_parfor publishes one job (kernel, env, n), runs the
 * first range on the calling thread and waits until every worker has
 * finished its range. One job at a time: the pool belongs to one cpu_exe,
 * which runs one call at a time. */
#include "backend/llvm/lower.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Workers spin this many pause iterations (tens of microseconds) for the
 * next job before sleeping, and so does the caller for the last range:
 * back-to-back kernels then cost no wake-up latency. */
enum { SPIN = 1000 };

struct cpu_pool {
  int threads;
  pthread_t *tids;
  pthread_mutex_t mu;
  pthread_cond_t go, done;
  _Atomic uint64_t gen;  /* job generation; the job fields are published before it */
  _Atomic int pending;   /* workers still running the current job */
  _Atomic int quit;
  cpu_kernel_fn k;
  void *env;
  int64_t n;
};

typedef struct worker_arg {
  cpu_pool *p;
  int rank;
} worker_arg;

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static void run_range(cpu_pool *p, int rank) {
  int64_t lo = p->n * rank / p->threads, hi = p->n * (rank + 1) / p->threads;
  if (lo < hi) p->k(p->env, lo, hi);
}

static void *worker(void *arg) {
  worker_arg wa = *(worker_arg *)arg;
  free(arg);
  cpu_pool *p = wa.p;
  uint64_t seen = 0;
  for (;;) {
    for (int i = 0; i < SPIN && atomic_load(&p->gen) == seen && !atomic_load(&p->quit); i++) relax();
    if (atomic_load(&p->gen) == seen && !atomic_load(&p->quit)) {
      pthread_mutex_lock(&p->mu);
      while (atomic_load(&p->gen) == seen && !atomic_load(&p->quit)) pthread_cond_wait(&p->go, &p->mu);
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->quit)) break;
    seen = atomic_load(&p->gen);
    run_range(p, wa.rank);
    if (atomic_fetch_sub(&p->pending, 1) == 1) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->mu);
    }
  }
  return NULL;
}

cpu_pool *cpu_pool_create(int threads) {
  cpu_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->threads = threads < 1 ? 1 : threads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->go, NULL);
  pthread_cond_init(&p->done, NULL);
  atomic_init(&p->gen, 0);
  atomic_init(&p->pending, 0);
  atomic_init(&p->quit, 0);
  p->tids = calloc((size_t)p->threads, sizeof(pthread_t));
  if (!p->tids) {
    p->threads = 1;
    cpu_pool_destroy(p);
    return NULL;
  }
  for (int i = 1; i < p->threads; i++) {
    worker_arg *wa = malloc(sizeof *wa);
    if (!wa) {
      p->threads = i;
      break;
    }
    wa->p = p;
    wa->rank = i;
    if (pthread_create(&p->tids[i], NULL, worker, wa) != 0) {
      free(wa);
      p->threads = i; /* run with the workers we have */
      break;
    }
  }
  return p;
}

void cpu_pool_destroy(cpu_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->quit, 1);
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  for (int i = 1; i < p->threads && p->tids; i++) pthread_join(p->tids[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->go);
  pthread_cond_destroy(&p->done);
  free(p->tids);
  free(p);
}

void cpu_pool_parfor(void *pool, cpu_kernel_fn k, void *env, int64_t n) {
  cpu_pool *p = pool;
  if (p->threads == 1 || n < 2) {
    k(env, 0, n);
    return;
  }
  p->k = k;
  p->env = env;
  p->n = n;
  atomic_store(&p->pending, p->threads - 1);
  pthread_mutex_lock(&p->mu);
  atomic_fetch_add(&p->gen, 1);
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  run_range(p, 0);
  for (int i = 0; i < SPIN && atomic_load(&p->pending) > 0; i++) relax();
  if (atomic_load(&p->pending) > 0) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load(&p->pending) > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
}
