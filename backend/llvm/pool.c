/* pool.c: the thread pool behind parallel kernels.
 *
 * threads - 1 workers sleep on a condition variable; cpu_pool_parfor
 * publishes one job (kernel, env, n), runs the first range on the calling
 * thread and waits until every worker has finished its range. One job at a
 * time: the pool belongs to one cpu_exe, which runs one call at a time. */
#include "backend/llvm/lower.h"

#include <pthread.h>
#include <stdlib.h>

struct cpu_pool {
  int threads;
  pthread_t *tids;
  pthread_mutex_t mu;
  pthread_cond_t go, done;
  uint64_t gen;     /* job generation */
  int pending;      /* workers still running the current job */
  bool quit;
  cpu_kernel_fn k;
  void *env;
  int64_t n;
};

typedef struct worker_arg {
  cpu_pool *p;
  int rank;
} worker_arg;

static void run_range(cpu_pool *p, int rank) {
  int64_t lo = p->n * rank / p->threads, hi = p->n * (rank + 1) / p->threads;
  if (lo < hi) p->k(p->env, lo, hi);
}

static void *worker(void *arg) {
  worker_arg wa = *(worker_arg *)arg;
  free(arg);
  cpu_pool *p = wa.p;
  uint64_t seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->quit && p->gen == seen) pthread_cond_wait(&p->go, &p->mu);
    if (p->quit) break;
    seen = p->gen;
    pthread_mutex_unlock(&p->mu);
    run_range(p, wa.rank);
    pthread_mutex_lock(&p->mu);
    if (--p->pending == 0) pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

cpu_pool *cpu_pool_create(int threads) {
  cpu_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->threads = threads < 1 ? 1 : threads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->go, NULL);
  pthread_cond_init(&p->done, NULL);
  p->tids = calloc((size_t)p->threads, sizeof(pthread_t));
  if (!p->tids) {
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
  p->quit = true;
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
  pthread_mutex_lock(&p->mu);
  p->k = k;
  p->env = env;
  p->n = n;
  p->pending = p->threads - 1;
  p->gen++;
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  run_range(p, 0);
  pthread_mutex_lock(&p->mu);
  while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}
