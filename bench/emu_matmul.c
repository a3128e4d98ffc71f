/* emu_matmul: speed of the emulator's fast MXU path against OpenBLAS sgemm.
 *
 *   bench/emu_matmul [size [runs [impl]]]     (defaults: 2048 5 auto)
 *
 * Both run in the same process on the same data: lhs[size][size] and
 * w[size][size] random bf16 values; the MXU path computes acc += lhs x w with
 * the contract of runtime/emu/mxu.h (emu_mxu_matmul_bf16_ex, including its
 * weight packing and conversion), OpenBLAS computes C += A x B in f32 on the
 * same values (cblas_sgemm, row major, beta = 1). The runs alternate, and the
 * median of each is reported as MAC/s; ratio = MXU / sgemm (wall time),
 * and the same from each call's thread CPU time (steadier on a loaded
 * machine). For a fair single-thread comparison run with
 * OPENBLAS_NUM_THREADS=1 and OPENBLAS_CORETYPE chosen to match the kernel
 * (bench/run.sh's modes do). Before timing, a sample of
 * output elements is checked against the scalar contract, so a fast wrong
 * kernel cannot report a number. A last line times the emulator's shape of
 * work: 8-row pushes against one packed 128x128 weight tile. */
#include "runtime/emu/mxu.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef HAVE_OPENBLAS_CORENAME
char *openblas_get_corename(void);
#endif

static double clock_s(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }
/* CPU time of this thread: on a shared, loaded machine it leaves out the
 * time the process waited for a CPU (not the cache misses others cause). */
static double cpu_now(void) { return clock_s(CLOCK_THREAD_CPUTIME_ID); }

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 32);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 2048;
  int runs = argc > 2 ? atoi(argv[2]) : 5;
  int impl = EMU_MXU_IMPL_AUTO;
  if (argc > 3)
    for (int i = 0; i < EMU_MXU_IMPL__COUNT; i++)
      if (!strcmp(argv[3], emu_mxu_impl_name((emu_mxu_impl)i))) impl = i;
  if (n < 1 || n > 16384 || runs < 1 || runs > 100) {
    fprintf(stderr, "usage: emu_matmul [size 1..16384 [runs 1..100 [impl]]]\n");
    return 2;
  }
  size_t nn = (size_t)n * (size_t)n;
  uint16_t *lhs = malloc(nn * sizeof *lhs), *w = malloc(nn * sizeof *w);
  float *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b);
  float *acc = malloc(nn * sizeof *acc), *c = malloc(nn * sizeof *c);
  double *t_mxu = malloc((size_t)runs * sizeof(double));
  double *t_blas = malloc((size_t)runs * sizeof(double));
  double *c_mxu = malloc((size_t)runs * sizeof(double));
  double *c_blas = malloc((size_t)runs * sizeof(double));
  if (!lhs || !w || !a || !b || !acc || !c || !t_mxu || !t_blas || !c_mxu || !c_blas) {
    fprintf(stderr, "emu_matmul: out of memory\n");
    return 1;
  }
  /* Values in [-2, 2): random sign, exponent and 7-bit fraction. */
  for (size_t i = 0; i < nn; i++) {
    lhs[i] = base_f32_to_bf16(((float)(rnd() >> 8) / 16777216.0f) * 4.0f - 2.0f);
    w[i] = base_f32_to_bf16(((float)(rnd() >> 8) / 16777216.0f) * 4.0f - 2.0f);
    a[i] = base_bf16_to_f32(lhs[i]);
    b[i] = base_bf16_to_f32(w[i]);
  }
  unsigned flags = EMU_MXU_IMPL(impl);

  /* Correctness sample against the contract (fma chain in k order). */
  memset(acc, 0, nn * sizeof *acc);
  emu_mxu_matmul_bf16_ex(lhs, w, acc, n, n, n, n, n, n, flags);
  for (int s = 0; s < 64; s++) {
    int i = (int)(rnd() % (uint32_t)n), j = (int)(rnd() % (uint32_t)n);
    float ref = 0.0f;
    for (int kk = 0; kk < n; kk++)
      ref = fmaf(a[(size_t)i * n + kk], b[(size_t)kk * n + j], ref);
    if (memcmp(&ref, &acc[(size_t)i * n + j], sizeof ref)) {
      fprintf(stderr, "emu_matmul: MISMATCH at (%d,%d): %a vs %a\n", i, j,
              (double)acc[(size_t)i * n + j], (double)ref);
      return 1;
    }
  }

  for (int r = 0; r < runs; r++) {
    memset(acc, 0, nn * sizeof *acc);
    double t0 = now(), c0 = cpu_now();
    emu_mxu_matmul_bf16_ex(lhs, w, acc, n, n, n, n, n, n, flags);
    t_mxu[r] = now() - t0, c_mxu[r] = cpu_now() - c0;
    memset(c, 0, nn * sizeof *c);
    t0 = now(), c0 = cpu_now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 1.0f, c, n);
    t_blas[r] = now() - t0, c_blas[r] = cpu_now() - c0;
  }
  double macs = (double)n * (double)n * (double)n;
  double mxu = macs / median(t_mxu, runs), blas = macs / median(t_blas, runs);
  const char *core = "?";
#ifdef HAVE_OPENBLAS_CORENAME
  core = openblas_get_corename();
#endif
  const char *nt = getenv("OPENBLAS_NUM_THREADS"), *ct = getenv("OPENBLAS_CORETYPE");
  printf("matmul %dx%dx%d bf16, %d runs (median), mxu kernel %s\n", n, n, n, runs,
         emu_mxu_impl_name(emu_mxu_impl_selected(flags)));
  printf("openblas core %s, OPENBLAS_NUM_THREADS=%s, OPENBLAS_CORETYPE=%s\n", core,
         nt ? nt : "(unset)", ct ? ct : "(unset)");
  printf("mxu    %8.2f GMAC/s  (%.4f s)\n", mxu * 1e-9, macs / mxu);
  printf("sgemm  %8.2f GMAC/s  (%.4f s)\n", blas * 1e-9, macs / blas);
  printf("ratio  %8.3f\n", mxu / blas);
  double cmxu = macs / median(c_mxu, runs), cblas = macs / median(c_blas, runs);
  printf("cpu-time  mxu %.2f, sgemm %.2f GMAC/s, ratio %.3f (medians of thread CPU time)\n",
         cmxu * 1e-9, cblas * 1e-9, cmxu / cblas);

  /* The emulator's shape: one packed 128x128 weight tile, 8-row pushes. */
  float *packed = malloc(emu_mxu_packed_w_bytes(128, 128));
  void *scratch = malloc(emu_mxu_scratch_bytes());
  if (packed && scratch && n >= 128) {
    emu_mxu_pack_w(w, 128, 128, n, flags, packed);
    int pushes = 20000, rows_avail = n / 8;
    for (int r = 0; r < runs; r++) {
      double t0 = now(), c0 = cpu_now();
      for (int q = 0; q < pushes; q++) {
        size_t row = (size_t)(q % rows_avail) * 8;
        emu_mxu_matmul_packed(lhs + row * n, packed, acc + row * n, 8, 128, 128, n, n, flags,
                              scratch);
      }
      t_mxu[r] = now() - t0, c_mxu[r] = cpu_now() - c0;
    }
    double t = median(t_mxu, runs), tc = median(c_mxu, runs), push_macs = pushes * 8.0 * 128 * 128;
    printf("push   %8.2f GMAC/s  (8x128 lhs x packed 128x128 tile: %.0f ns per push; cpu time "
           "%.2f GMAC/s)\n",
           push_macs / t * 1e-9, t / pushes * 1e9, push_macs / tc * 1e-9);
  }
  free(packed), free(scratch);
  free(lhs), free(w), free(a), free(b), free(acc), free(c);
  free(t_mxu), free(t_blas), free(c_mxu), free(c_blas);
  return 0;
}
