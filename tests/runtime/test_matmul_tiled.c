/* test_matmul_tiled.c: a tiled bf16 matmul program generated the way the
 * backend will generate one (weight-stationary 128x128 tiles, K
 * accumulated in the MXU accumulators, A resident in VMEM, B and C panels
 * double-buffered through DMA, N panels alternating between v3's two
 * MXUs, every hand-off ordered by a semaphore, which the emulator's
 * memory-ordering check verifies). The result must equal the documented
 * numerics bit for bit, and the counters must show the overlap.
 *
 *   test_rt_matmul_tiled            the test (512 x 512 x 512)
 *   test_rt_matmul_tiled M K N      time one run (e.g. 2048 2048 2048),
 *                                   checking 256 sampled outputs */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <time.h>

#include <cmocka.h>

#include "rt_test.h"

typedef struct text {
  char *s;
  size_t len, cap;
} text;

static void emit(text *t, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int k = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if ((size_t)k < t->cap - t->len) {
      t->len += (size_t)k;
      return;
    }
    t->cap = t->cap * 2 + (size_t)k + 1024;
    t->s = realloc(t->s, t->cap);
  }
}

/* The program for c[M][N] = a[M][K] x b[K][N], M <= 2048, all multiples of
 * 128. Four B panel buffers and four C panel buffers (two per MXU) rotate
 * with the panel index j; semaphores: 0 A loaded, 5 A seen by mxu0 (passed
 * on to mxu1), 10+j%4 B panel loaded, 14+j%4 B buffer free again, 18+j%4
 * C panel written by the MXU, 22+j%4 C panel stored (buffer free again). */
static char *gen_matmul(int M, int K, int N, size_t *len) {
  text t = {malloc(1 << 16), 0, 1 << 16};
  const long a_hbm = 0, b_hbm = (long)M * K * 2, c_hbm = b_hbm + (long)K * N * 2;
  const long a_vm = 0, b_vm = (long)M * K * 2, c_vm = b_vm + 4L * K * 256;
  const int NT = N / 128, KT = K / 128;
  emit(&t, ".target v3\n.hbm %ld\n", c_hbm + (long)M * N * 4);
  emit(&t, ".param a bf16[%d,%d] @%ld\n.param b bf16[%d,%d] @%ld\n", M, K, a_hbm, K, N, b_hbm);
  emit(&t, ".result c f32[%d,%d] @%ld\n", M, N, c_hbm);
  /* descriptors: A whole; a B panel (K rows of 256 bytes); a C panel */
  emit(&t, ".smem 0 %ld, 1, 1, 1, 0, 0, 0, 0, 0, 0\n", (long)M * K * 2);
  emit(&t, ".smem 40 256, %d, 1, 1, %d, 0, 0, 256, 0, 0\n", K, N * 2);
  emit(&t, ".smem 80 512, %d, 1, 1, %d, 0, 0, 512, 0, 0\n", M, N * 4);
  emit(&t, "  sli s1, 40\n  sli s2, 80\n  sli s3, %d\n  sli s4, 256\n  sli s5, 512\n", K * 2);
  emit(&t, "  sli s6, %ld\n  dmald dma0, s6, s6, s0, sem0\n", a_vm);
  for (int j = 0; j < NT; j++) {
    int buf = j % 4, mx = j % 2;
    long bv = b_vm + (long)buf * K * 256, cv = c_vm + (long)buf * M * 512;
    /* load the B panel (after its buffer's previous user is done) */
    if (j >= 4) emit(&t, "  wait dma1, sem%d, 1\n", 14 + buf);
    emit(&t, "  sli s7, %ld\n  sli s8, %ld\n  dmald dma1, s7, s8, s1, sem%d\n", bv,
         b_hbm + (long)j * 256, 10 + buf);
    /* the MXU: A once per MXU, then the panel */
    if (j == 0) emit(&t, "  wait mxu0, sem0, 1\n  signal mxu0, sem5, 1\n");
    if (j == 1) emit(&t, "  wait mxu1, sem5, 1\n");
    emit(&t, "  wait mxu%d, sem%d, 1\n", mx, 10 + buf);
    emit(&t, "  sli s9, %ld\n  mwt mxu%d, s9, s4\n  mswap mxu%d\n", bv, mx, mx);
    for (int k = 0; k < KT; k++) {
      if (k + 1 < KT)
        emit(&t, "  sli s9, %ld\n  mwt mxu%d, s9, s4\n", bv + (long)(k + 1) * 128 * 256, mx);
      emit(&t, "  sli s10, %ld\n  %s mxu%d, s10, s3, s0, %d\n", a_vm + (long)k * 256,
           k ? "mpusha" : "mpush", mx, M);
      if (k + 1 < KT) emit(&t, "  mswap mxu%d\n", mx);
    }
    /* results to the C buffer once its previous store has read it */
    if (j >= 4) emit(&t, "  wait mxu%d, sem%d, 1\n", mx, 22 + buf);
    emit(&t, "  sli s11, %ld\n  mpopm mxu%d, s11, s5, s0, %d\n", cv, mx, M);
    /* signal is a fence (after all earlier work of the unit): after mpopm
     * it costs nothing, before the last push it would drain the array */
    emit(&t, "  signal mxu%d, sem%d, 1\n", mx, 18 + buf);
    emit(&t, "  signal mxu%d, sem%d, 1\n", mx, 14 + buf); /* B buffer free */
    emit(&t, "  wait dma0, sem%d, 1\n", 18 + buf);
    emit(&t, "  sli s12, %ld\n  dmast dma0, s11, s12, s2, sem%d\n", c_hbm + (long)j * 512,
         22 + buf);
  }
  /* The last store into each C buffer was never waited for. */
  for (int b = 0; b < 4 && b < NT; b++)
    emit(&t, "  wait scalar, sem%d, 1\n", 22 + b);
  emit(&t, "  halt\n");
  *len = t.len;
  return t.s;
}

typedef struct run_result {
  float *c;
  tpurt_stats_t st;
  double seconds;
} run_result;

static void run_matmul(int M, int K, int N, const uint16_t *a, const uint16_t *b, run_result *r) {
  tpurt_device_t *d = NULL;
  assert_int_equal(tpurt_device_create(NULL, &d), TPURT_OK);
  size_t len;
  char *src = gen_matmul(M, K, N, &len);
  tpurt_program_t *p = NULL;
  tpurt_status_t st = tpurt_program_assemble(d, src, len, "matmul.s", &p);
  if (st) fprintf(stderr, "%s\n", tpurt_device_message(d));
  assert_int_equal(st, TPURT_OK);
  int64_t ad[2] = {M, K}, bd[2] = {K, N};
  tpurt_buffer_t *in[2] = {NULL, NULL}, *out[1] = {NULL};
  assert_int_equal(tpurt_buffer_create(d, TPURT_BF16, 2, ad, a, (size_t)M * K * 2, &in[0]), 0);
  assert_int_equal(tpurt_buffer_create(d, TPURT_BF16, 2, bd, b, (size_t)K * N * 2, &in[1]), 0);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  st = tpurt_program_execute(p, in, 2, out, 1, &r->st);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (st) fprintf(stderr, "%s\n", tpurt_device_message(d));
  assert_int_equal(st, TPURT_OK);
  r->seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  r->c = malloc((size_t)M * N * 4);
  assert_int_equal(tpurt_buffer_read(out[0], r->c, (size_t)M * N * 4), 0);
  tpurt_buffer_destroy(in[0]);
  tpurt_buffer_destroy(in[1]);
  tpurt_buffer_destroy(out[0]);
  tpurt_program_destroy(p);
  tpurt_device_destroy(d);
  free(src);
}

static float want_at(const uint16_t *a, const uint16_t *b, int K, int N, int i, int j) {
  float acc = 0.0f;
  for (int k = 0; k < K; k++)
    acc = fmaf(rt_bf16_f32(a[(size_t)i * K + k]), rt_bf16_f32(b[(size_t)k * N + j]), acc);
  return acc;
}

static void fill(uint16_t *x, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++)
    x[i] = rt_bf16(rt_randf(&seed, -1, 1));
}

static void matmul_tiled_512_two_mxus(void **state) {
  (void)state;
  enum { M = 512, K = 512, N = 512 };
  uint16_t *a = malloc((size_t)M * K * 2), *b = malloc((size_t)K * N * 2);
  fill(a, (size_t)M * K, 1);
  fill(b, (size_t)K * N, 2);
  run_result r;
  run_matmul(M, K, N, a, b, &r);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float w = want_at(a, b, K, N, i, j);
      if (rt_bits(w) != rt_bits(r.c[(size_t)i * N + j])) {
        fprintf(stderr, "c[%d][%d] = %a, want %a\n", i, j, r.c[(size_t)i * N + j], w);
        fail();
      }
    }
  assert_int_equal(r.st.mxu_macs, (uint64_t)M * K * N);
  assert_int_equal(r.st.mxu_weight_loads, (K / 128) * (N / 128));
  /* Both MXUs worked, each on half of the panels. */
  uint64_t half = (uint64_t)M * (K / 128) * (N / 256);
  assert_true(r.st.units[2].busy_cycles >= half && r.st.units[2].busy_cycles < half + 200);
  assert_true(r.st.units[3].busy_cycles >= half && r.st.units[3].busy_cycles < half + 200);
  /* Weight loads hide behind 512-row pushes: each MXU only waits for its
   * first tile of each panel. */
  assert_true(r.st.units[2].stall_weight_load < 2 * 128 * (N / 128));
  /* The array was busy for M rows per tile. */
  assert_int_equal(r.st.mxu_busy_cycles, (uint64_t)M * (K / 128) * (N / 128));
  assert_int_equal(r.st.hbm_read_bytes, (uint64_t)M * K * 2 + (uint64_t)K * N * 2);
  assert_int_equal(r.st.hbm_write_bytes, (uint64_t)M * N * 4);
  double util = (double)r.st.mxu_macs / (double)r.st.mxu_peak_macs;
  fprintf(stderr, "  512^3 on v3: %llu cycles, MXU utilisation %.1f%%\n",
          (unsigned long long)r.st.cycles, 100 * util);
  assert_true(util > 0.5);
  free(r.c);
  free(a);
  free(b);
}

int main(int argc, char **argv) {
  if (argc == 4) {
    int M = atoi(argv[1]), K = atoi(argv[2]), N = atoi(argv[3]);
    if (M < 128 || M > 2048 || K < 128 || N < 128 || M % 128 || K % 128 || N % 128 ||
        (long)M * K * 2 + 4L * K * 256 + 4L * M * 512 > (16L << 20)) {
      fprintf(stderr, "M, K, N: multiples of 128, M <= 2048, fitting 16 MiB VMEM\n");
      return 2;
    }
    uint16_t *a = malloc((size_t)M * K * 2), *b = malloc((size_t)K * N * 2);
    fill(a, (size_t)M * K, 1);
    fill(b, (size_t)K * N, 2);
    run_result r;
    run_matmul(M, K, N, a, b, &r);
    uint64_t seed = 3;
    int bad = 0;
    for (int s = 0; s < 256; s++) {
      int i = (int)(rt_rand(&seed) % (uint64_t)M), j = (int)(rt_rand(&seed) % (uint64_t)N);
      bad += rt_bits(want_at(a, b, K, N, i, j)) != rt_bits(r.c[(size_t)i * N + j]);
    }
    printf("%dx%dx%d bf16 on v3: %.3f s host, %.2f GMAC/s simulated per host second; "
           "%llu cycles (%.3f ms at 940 MHz), MXU utilisation %.1f%%; samples %s\n",
           M, K, N, r.seconds, (double)r.st.mxu_macs / r.seconds * 1e-9,
           (unsigned long long)r.st.cycles, r.st.seconds * 1e3,
           100.0 * (double)r.st.mxu_macs / (double)r.st.mxu_peak_macs, bad ? "MISMATCH" : "match");
    free(r.c);
    free(a);
    free(b);
    return bad != 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(matmul_tiled_512_two_mxus),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
