/* progress.c: the progress line of a long cpu compile (cache.h). A thread
 * wakes every 0.2 s; after the first half second it draws
 * "tpucc: cpu: compiling N kernels: PHASE, T s" with a carriage return,
 * and llvm_progress_end erases it and joins the thread. */
#include "backend/llvm/cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct llvm_progress {
  FILE *f;
  int32_t kernels;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  const char *phase;
  bool done, drawn;
  struct timespec t0;
};

static double since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

static void *run(void *arg) {
  llvm_progress *p = arg;
  pthread_mutex_lock(&p->mu);
  while (!p->done) {
    struct timespec wake;
    clock_gettime(CLOCK_MONOTONIC, &wake);
    wake.tv_nsec += 200000000;
    if (wake.tv_nsec >= 1000000000) wake.tv_sec++, wake.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&p->cv, &p->mu, &wake);
    double t = since(&p->t0);
    if (p->done || t < 0.5) continue;
    fprintf(p->f, "\rtpucc: cpu: compiling %d kernel%s: %s, %.1f s\033[K", (int)p->kernels,
            p->kernels == 1 ? "" : "s", p->phase, t);
    fflush(p->f);
    p->drawn = true;
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

llvm_progress *llvm_progress_start(FILE *f, int32_t kernels) {
  if (!f) return NULL;
  llvm_progress *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->f = f;
  p->kernels = kernels;
  p->phase = "optimising and generating code";
  clock_gettime(CLOCK_MONOTONIC, &p->t0);
  pthread_mutex_init(&p->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&p->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (pthread_create(&p->th, NULL, run, p)) {
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
    return NULL;
  }
  return p;
}

void llvm_progress_phase(llvm_progress *p, const char *phase) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->phase = phase;
  pthread_mutex_unlock(&p->mu);
}

void llvm_progress_end(llvm_progress *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->done = true;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
  pthread_join(p->th, NULL);
  if (p->drawn) {
    fputs("\r\033[K", p->f);
    fflush(p->f);
  }
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}
