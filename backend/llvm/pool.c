/* pool.c: the thread pool behind parallel kernels.
 *
 * threads - 1 workers wait for jobs (spinning briefly, then on a condition
 * variable); cpu_pool_parfor publishes one job (kernel, env, n) and the
 * calling thread works on it too. The rows [0, n) are handed out in
 * CHUNKS_PER_THREAD x threads contiguous chunks from an atomic counter, so
 * when another process holds one CPU the threads still running take the
 * rest of the work instead of waiting for a fixed half (on a machine
 * shared with other jobs a static split made every parallel kernel as
 * slow as its most delayed thread). parfor returns once every chunk is
 * done. One job at a time: the pool belongs to one cpu_exe, which runs
 * one call at a time. */
#include "backend/llvm/lower.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

/* Workers spin this many pause iterations (tens of microseconds) for the
 * next job before sleeping, and so does the caller for the last range:
 * back-to-back kernels then cost no wake-up latency. */
enum { SPIN = 1000, CHUNKS_PER_THREAD = 4 };

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
  int64_t n, chunk;
  _Atomic int64_t next; /* first row not yet handed out */
};

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Runs chunks of the current job until none is left. */
static void run_chunks(cpu_pool *p) {
  for (;;) {
    int64_t lo = atomic_fetch_add(&p->next, p->chunk);
    if (lo >= p->n) return;
    int64_t hi = p->n - lo < p->chunk ? p->n : lo + p->chunk;
    p->k(p->env, lo, hi);
  }
}

static void *worker(void *arg) {
  cpu_pool *p = arg;
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
    run_chunks(p);
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
  atomic_init(&p->next, 0);
  p->tids = calloc((size_t)p->threads, sizeof(pthread_t));
  if (!p->tids) {
    p->threads = 1;
    cpu_pool_destroy(p);
    return NULL;
  }
  for (int i = 1; i < p->threads; i++) {
    if (pthread_create(&p->tids[i], NULL, worker, p) != 0) {
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
  int64_t parts = (int64_t)p->threads * CHUNKS_PER_THREAD;
  p->chunk = (n + parts - 1) / parts;
  atomic_store(&p->next, 0);
  atomic_store(&p->pending, p->threads - 1);
  pthread_mutex_lock(&p->mu);
  atomic_fetch_add(&p->gen, 1);
  pthread_cond_broadcast(&p->go);
  pthread_mutex_unlock(&p->mu);
  run_chunks(p);
  for (int i = 0; i < SPIN && atomic_load(&p->pending) > 0; i++) relax();
  if (atomic_load(&p->pending) > 0) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load(&p->pending) > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
}
