/* test_kernels.c: hand-written assembly kernels (tests/runtime/kernels/NAME.s)
 * run through libtpurt and compared bit for bit with straightforward C that
 * follows the documented numerics (docs/isa.md): a 256x256x256 bf16 matmul
 * through DMA and the MXU, an elementwise kernel, a row reduction and a
 * transpose. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "rt_test.h"

static tpurt_device_t *dev;

static tpurt_program_t *load_kernel(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", KERNEL_DIR, name);
  size_t n = 0;
  char *text = rt_read_file(path, &n);
  assert_non_null(text);
  tpurt_program_t *p = NULL;
  tpurt_status_t st = tpurt_program_assemble(dev, text, n, name, &p);
  if (st) fprintf(stderr, "%s\n", tpurt_device_message(dev));
  assert_int_equal(st, TPURT_OK);
  free(text);
  return p;
}

static tpurt_buffer_t *make(tpurt_dtype_t dt, int rank, const int64_t *dims, const void *data,
                            size_t bytes) {
  tpurt_buffer_t *b = NULL;
  assert_int_equal(tpurt_buffer_create(dev, dt, rank, dims, data, bytes, &b), TPURT_OK);
  return b;
}

static void run(tpurt_program_t *p, tpurt_buffer_t **in, size_t nin, tpurt_buffer_t **out,
                size_t nout, tpurt_stats_t *st) {
  tpurt_status_t s = tpurt_program_execute(p, in, nin, out, nout, st);
  if (s) fprintf(stderr, "%s\n", tpurt_device_message(dev));
  assert_int_equal(s, TPURT_OK);
}

static void matmul_256x256x256_bf16(void **state) {
  (void)state;
  enum { N = 256 };
  static uint16_t a[N][N], b[N][N];
  static float c[N][N], want[N][N];
  uint64_t seed = 42;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      a[i][j] = rt_bf16(rt_randf(&seed, -1, 1));
      b[i][j] = rt_bf16(rt_randf(&seed, -1, 1));
    }
  /* Rounding ties and signed zeros in a few places. */
  a[3][7] = 0x8000;
  b[5][9] = 0x3F81;
  a[1][1] = 0x3F81;
  /* The documented MXU numerics: per output, k ascending from +0, one
   * fused multiply-add per product (bf16 products are exact in f32). */
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0.0f;
      for (int k = 0; k < N; k++)
        acc = fmaf(rt_bf16_f32(a[i][k]), rt_bf16_f32(b[k][j]), acc);
      want[i][j] = acc;
    }
  tpurt_program_t *p = load_kernel("matmul256.s");
  int64_t dims[2] = {N, N};
  tpurt_buffer_t *in[2] = {make(TPURT_BF16, 2, dims, a, sizeof a),
                           make(TPURT_BF16, 2, dims, b, sizeof b)};
  tpurt_buffer_t *out[1];
  tpurt_stats_t st;
  run(p, in, 2, out, 1, &st);
  assert_int_equal(tpurt_buffer_read(out[0], c, sizeof c), TPURT_OK);
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      if (rt_bits(c[i][j]) != rt_bits(want[i][j])) {
        fprintf(stderr, "c[%d][%d] = %a, want %a\n", i, j, c[i][j], want[i][j]);
        fail();
      }
  assert_int_equal(st.mxu_macs, (uint64_t)N * N * N);
  assert_int_equal(st.mxu_weight_loads, 4);
  assert_int_equal(st.hbm_read_bytes, 2 * N * N * 2);
  assert_int_equal(st.hbm_write_bytes, N * N * 4);
  /* 4 pushes of 256 rows keep the array busy 1024 cycles. */
  assert_int_equal(st.mxu_busy_cycles, 1024);
  assert_true(st.cycles > 1024);
  /* Weight loads 2..4 are issued while the array streams: only the first
   * load's 128 cycles are exposed (docs/isa.md, "MXU timing"). */
  assert_int_equal(st.units[2].stall_weight_load, 128 - 1);
  tpurt_buffer_destroy(in[0]);
  tpurt_buffer_destroy(in[1]);
  tpurt_buffer_destroy(out[0]);
  tpurt_program_destroy(p);
}

/* The whole 256^3 program again with every push run PE by PE through the
 * systolic-array model: the same bits and the same cycle count. */
static void matmul_256_systolic_mode_identical(void **state) {
  (void)state;
  enum { N = 256 };
  static uint16_t a[N][N], b[N][N];
  static float c1[N][N], c2[N][N];
  uint64_t seed = 43;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      a[i][j] = rt_bf16(rt_randf(&seed, -2, 2));
      b[i][j] = rt_bf16(rt_randf(&seed, -2, 2));
    }
  a[0][0] = 0x7F80; /* inf, NaN and a subnormal through the whole path */
  b[1][1] = 0x7FC0;
  a[2][3] = 0x0001;
  tpurt_stats_t st[2];
  float *outs[2] = {&c1[0][0], &c2[0][0]};
  for (int mode = 0; mode < 2; mode++) {
    tpurt_device_options_t o;
    tpurt_device_options_init(&o);
    o.mxu_systolic = mode;
    tpurt_device_t *d;
    assert_int_equal(tpurt_device_create(&o, &d), TPURT_OK);
    tpurt_device_t *saved = dev;
    dev = d;
    tpurt_program_t *p = load_kernel("matmul256.s");
    int64_t dims[2] = {N, N};
    tpurt_buffer_t *in[2] = {make(TPURT_BF16, 2, dims, a, sizeof a),
                             make(TPURT_BF16, 2, dims, b, sizeof b)};
    tpurt_buffer_t *out[1];
    run(p, in, 2, out, 1, &st[mode]);
    assert_int_equal(tpurt_buffer_read(out[0], outs[mode], sizeof c1), TPURT_OK);
    tpurt_buffer_destroy(in[0]);
    tpurt_buffer_destroy(in[1]);
    tpurt_buffer_destroy(out[0]);
    tpurt_program_destroy(p);
    tpurt_device_destroy(d);
    dev = saved;
  }
  assert_memory_equal(c1, c2, sizeof c1);
  assert_int_equal(st[0].cycles, st[1].cycles);
  assert_int_equal(st[0].mxu_array_cycles, 0);
  /* Four pushes of 256 rows through a 128x128 array: the PE model steps
   * R + K + N - 2 cycles per push from the first row entering to the last
   * result leaving; the timing model's push latency R + K + N adds one
   * cycle to enter the array and one to write the accumulator (docs/isa.md,
   * section 8). */
  assert_int_equal(st[1].mxu_array_cycles, 4 * (256 + 128 + 128 - 2));
}

/* The MXU size is a target parameter: a 64x64 array (v3,mxu=64x64) runs a
 * [128,64] x [64,64] product with K = N = 64 tiles. */
static void matmul_on_a_64x64_mxu(void **state) {
  (void)state;
  enum { M = 128, K = 64, N = 64 };
  static uint16_t a[M][K], b[K][N];
  static float c[M][N];
  uint64_t seed = 64;
  for (int i = 0; i < M; i++)
    for (int k = 0; k < K; k++)
      a[i][k] = rt_bf16(rt_randf(&seed, -1, 1));
  for (int k = 0; k < K; k++)
    for (int j = 0; j < N; j++)
      b[k][j] = rt_bf16(rt_randf(&seed, -1, 1));
  const char *src = ".target v3,mxu=64x64\n.hbm 57344\n"
                    ".param a bf16[128,64] @0\n.param b bf16[64,64] @16384\n"
                    ".result c f32[128,64] @24576\n"
                    ".smem 0 24576, 1, 1, 1, 0, 0, 0, 0, 0, 0\n"
                    ".smem 40 32768, 1, 1, 1, 0, 0, 0, 0, 0, 0\n"
                    "  dmald dma0, s0, s0, s0, sem0\n" /* a and b: HBM [0, 24576) */
                    "  wait mxu0, sem0, 1\n"
                    "  sli s1, 16384\n  sli s2, 128\n"
                    "  mwt mxu0, s1, s2\n  mswap mxu0\n"
                    "  mpush mxu0, s0, s2, s0, 128\n"
                    "  sli s3, 24576\n  sli s4, 256\n"
                    "  mpopm mxu0, s3, s4, s0, 128\n"
                    "  signal mxu0, sem1, 1\n  wait dma0, sem1, 1\n"
                    "  sli s5, 40\n  dmast dma0, s3, s3, s5, sem2\n"
                    "  wait scalar, sem2, 1\n  halt\n";
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = "v3,mxu=64x64";
  tpurt_device_t *d;
  assert_int_equal(tpurt_device_create(&o, &d), TPURT_OK);
  tpurt_program_t *p = NULL;
  tpurt_status_t st = tpurt_program_assemble(d, src, strlen(src), "mxu64.s", &p);
  if (st) fprintf(stderr, "%s\n", tpurt_device_message(d));
  assert_int_equal(st, TPURT_OK);
  int64_t ad[2] = {M, K}, bd[2] = {K, N};
  tpurt_buffer_t *in[2], *out[1];
  assert_int_equal(tpurt_buffer_create(d, TPURT_BF16, 2, ad, a, sizeof a, &in[0]), 0);
  assert_int_equal(tpurt_buffer_create(d, TPURT_BF16, 2, bd, b, sizeof b, &in[1]), 0);
  tpurt_stats_t stats;
  st = tpurt_program_execute(p, in, 2, out, 1, &stats);
  if (st) fprintf(stderr, "%s\n", tpurt_device_message(d));
  assert_int_equal(st, TPURT_OK);
  assert_int_equal(tpurt_buffer_read(out[0], c, sizeof c), 0);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0.0f;
      for (int k = 0; k < K; k++)
        acc = fmaf(rt_bf16_f32(a[i][k]), rt_bf16_f32(b[k][j]), acc);
      assert_int_equal(rt_bits(c[i][j]), rt_bits(acc));
    }
  assert_int_equal(stats.mxu_macs, (uint64_t)M * K * N);
  /* fill and drain on this array: the push's results are ready R + K + N
   * cycles after it starts, and the weight load took K cycles. */
  assert_int_equal(stats.units[2].stall_weight_load, K - 1);
  /* A program for a 128x128 MXU does not load on this device. */
  tpurt_program_t *q = NULL;
  const char *other = ".target v3\nhalt\n";
  assert_int_equal(tpurt_program_assemble(d, other, strlen(other), "o.s", &q), TPURT_UNSUPPORTED);
  assert_non_null(
      strstr(tpurt_device_message(d), "compiled for 128x128 MXUs, the device has 64x64"));
  tpurt_buffer_destroy(in[0]);
  tpurt_buffer_destroy(in[1]);
  tpurt_buffer_destroy(out[0]);
  tpurt_program_destroy(p);
  tpurt_device_destroy(d);
}

static void elementwise_exp_mul_sub_max(void **state) {
  (void)state;
  enum { R = 16, L = 128 };
  static float x[R][L], z[R][L], y[R][L];
  static uint16_t w[R][L];
  uint64_t seed = 7;
  for (int i = 0; i < R; i++)
    for (int j = 0; j < L; j++) {
      x[i][j] = rt_randf(&seed, -3, 3);
      z[i][j] = rt_randf(&seed, -2, 2);
    }
  x[0][0] = 0.0f;
  z[0][1] = 0.0f;
  tpurt_program_t *p = load_kernel("elementwise.s");
  int64_t dims[2] = {R, L};
  tpurt_buffer_t *in[2] = {make(TPURT_F32, 2, dims, x, sizeof x),
                           make(TPURT_F32, 2, dims, z, sizeof z)};
  tpurt_buffer_t *out[2];
  tpurt_stats_t st;
  run(p, in, 2, out, 2, &st);
  assert_int_equal(tpurt_buffer_read(out[0], y, sizeof y), TPURT_OK);
  assert_int_equal(tpurt_buffer_read(out[1], w, sizeof w), TPURT_OK);
  for (int i = 0; i < R; i++)
    for (int j = 0; j < L; j++) {
      float e = (float)exp((double)x[i][j]);
      float t = e * z[i][j];
      t = t - x[i][j];
      float want = t > 0.25f ? t : 0.25f;
      assert_int_equal(rt_bits(y[i][j]), rt_bits(want));
      assert_int_equal(w[i][j], rt_bf16(x[i][j] * z[i][j]));
    }
  assert_int_equal(st.units[1].instructions, 2 * 9 + 2 + 1 + 1);
  for (int k = 0; k < 2; k++) {
    tpurt_buffer_destroy(in[k]);
    tpurt_buffer_destroy(out[k]);
  }
  tpurt_program_destroy(p);
}

static void row_reduction_sum_64x128(void **state) {
  (void)state;
  enum { R = 64, L = 128 };
  static float x[R][L], y[R];
  uint64_t seed = 99;
  for (int i = 0; i < R; i++)
    for (int j = 0; j < L; j++)
      x[i][j] = rt_randf(&seed, -100, 100);
  x[5][0] = 1e30f; /* order matters: large cancellation in row 5 */
  x[5][64] = -1e30f;
  tpurt_program_t *p = load_kernel("rowsum.s");
  int64_t dims[2] = {R, L}, ydims[1] = {R};
  tpurt_buffer_t *in = make(TPURT_F32, 2, dims, x, sizeof x);
  tpurt_buffer_t *out;
  run(p, &in, 1, &out, 1, NULL);
  tpurt_tensor_info_t info;
  tpurt_buffer_info(out, &info);
  assert_int_equal(info.rank, 1);
  assert_int_equal(info.dims[0], ydims[0]);
  assert_int_equal(tpurt_buffer_read(out, y, sizeof y), TPURT_OK);
  for (int i = 0; i < R; i++) {
    float s = x[i][0];
    for (int j = 1; j < L; j++)
      s += x[i][j];
    assert_int_equal(rt_bits(y[i]), rt_bits(s));
  }
  tpurt_buffer_destroy(in);
  tpurt_buffer_destroy(out);
  tpurt_program_destroy(p);
}

static void transpose_128x128(void **state) {
  (void)state;
  enum { N = 128 };
  static float x[N][N], y[N][N];
  uint64_t seed = 5;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      x[i][j] = rt_randf(&seed, -1, 1);
  tpurt_program_t *p = load_kernel("transpose.s");
  int64_t dims[2] = {N, N};
  tpurt_buffer_t *in = make(TPURT_F32, 2, dims, x, sizeof x);
  tpurt_buffer_t *out;
  run(p, &in, 1, &out, 1, NULL);
  assert_int_equal(tpurt_buffer_read(out, y, sizeof y), TPURT_OK);
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      assert_int_equal(rt_bits(y[i][j]), rt_bits(x[j][i]));
  tpurt_buffer_destroy(in);
  tpurt_buffer_destroy(out);
  tpurt_program_destroy(p);
}

static int setup(void **state) {
  (void)state;
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = "v3";
  return tpurt_device_create(&o, &dev) == TPURT_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  tpurt_device_destroy(dev);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(matmul_256x256x256_bf16),
      cmocka_unit_test(matmul_256_systolic_mode_identical),
      cmocka_unit_test(matmul_on_a_64x64_mxu),
      cmocka_unit_test(elementwise_exp_mul_sub_max),
      cmocka_unit_test(row_reduction_sum_64x128),
      cmocka_unit_test(transpose_128x128),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
