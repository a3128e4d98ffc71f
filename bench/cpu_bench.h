/* bench/cpu_bench.h: the timing helpers of the bench/cpu_*.c benchmarks
 * (header-only, static inline: each benchmark is one translation unit).
 *
 * bench_now is wall time. bench_cpu_now is the CPU time of the whole
 * process (every thread): it does not advance while the process waits for
 * a CPU, so on a machine shared with other jobs it measures the code rather
 * than the queue. The two agree on an idle machine (for one thread; pool
 * threads that spin while waiting add their spinning to the CPU time). */
#ifndef TPUCC_BENCH_CPU_BENCH_H
#define TPUCC_BENCH_CPU_BENCH_H

#include <stdlib.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double bench_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* CPU seconds used so far by all threads of this process. */
static inline double bench_cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The median of v[0..n), n >= 1 (sorts v in place). */
static inline double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
