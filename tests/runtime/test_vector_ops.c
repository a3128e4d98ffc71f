/* test_vector_ops.c: every vector arithmetic instruction against a
 * straightforward C model of its documented numerics (docs/isa.md,
 * section 6), on random values plus the special ones (signed zeros,
 * infinities, NaN, subnormals, rounding ties, integer extremes). One small
 * program per instruction: DMA in, vld, the op, vst, DMA out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "rt_test.h"

#define N 1024 /* one vector register: 8 x 128 */
#define CANON 0x7FC00000u

static tpurt_device_t *dev;

/* Runs "op vd, ..." on x (and y) and returns the 1024 result words. */
static void run_op(const char *line, const uint32_t *x, const uint32_t *y, uint32_t *out) {
  char src[2048];
  snprintf(src, sizeof src,
           ".hbm 12288\n.param x s32[1024] @0\n.param y s32[1024] @4096\n"
           ".result z s32[1024] @8192\n"
           ".smem 0 8192, 1, 1, 1, 0, 0, 0, 0, 0, 0\n"
           ".smem 40 4096, 1, 1, 1, 0, 0, 0, 0, 0, 0\n"
           "  dmald dma0, s0, s0, s0, sem0\n  wait vector, sem0, 1\n"
           "  sli s1, 512\n  vld v1, s0, 0, s1\n  vld v2, s0, 4096, s1\n"
           "  viota v5, 0\n  vimm v6, 64\n  vcmplti m1, v5, v6\n"
           "  %s\n"
           "  vst v3, s0, 8192, s1, m0\n  signal vector, sem1, 1\n"
           "  wait dma0, sem1, 1\n  sli s2, 8192\n  sli s3, 40\n"
           "  dmast dma0, s2, s2, s3, sem2\n  wait scalar, sem2, 1\n  halt\n",
           line);
  tpurt_program_t *p = NULL;
  tpurt_status_t st = tpurt_program_assemble(dev, src, strlen(src), line, &p);
  if (st) fprintf(stderr, "%s\n", tpurt_device_message(dev));
  assert_int_equal(st, TPURT_OK);
  int64_t dims[1] = {N};
  tpurt_buffer_t *in[2], *res[1];
  assert_int_equal(tpurt_buffer_create(dev, TPURT_S32, 1, dims, x, 4 * N, &in[0]), 0);
  assert_int_equal(tpurt_buffer_create(dev, TPURT_S32, 1, dims, y, 4 * N, &in[1]), 0);
  st = tpurt_program_execute(p, in, 2, res, 1, NULL);
  if (st) fprintf(stderr, "%s\n", tpurt_device_message(dev));
  assert_int_equal(st, TPURT_OK);
  assert_int_equal(tpurt_buffer_read(res[0], out, 4 * N), 0);
  tpurt_buffer_destroy(in[0]);
  tpurt_buffer_destroy(in[1]);
  tpurt_buffer_destroy(res[0]);
  tpurt_program_destroy(p);
}

static uint32_t canon(float f) { return f != f ? CANON : rt_bits(f); }
static float F(uint32_t u) { return rt_float(u); }

/* Inputs: specials first, then random floats of mixed magnitudes. */
static void inputs(uint32_t *x, uint32_t *y, uint64_t seed) {
  static const uint32_t sp[] = {0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000,
                                0xFFC12345, 0x00000001, 0x807FFFFF, 0x3F800000, 0xBF800000,
                                0x3F808000, 0x3F818000, 0x4B000001, 0xCF000000, 0x4F000000,
                                0x3EFFFFFF, 0x40200000, 0xC0200000, 0x3FC00000, 0x7F7FFFFF};
  for (int i = 0; i < N; i++) {
    uint64_t r = rt_rand(&seed);
    float f = rt_randf(&seed, -4, 4) * (float)(1 << (r % 8)) / 16.0f;
    x[i] = rt_bits(f);
    y[i] = rt_bits(rt_randf(&seed, -4, 4));
  }
  int ns = (int)(sizeof sp / sizeof sp[0]);
  for (int i = 0; i < ns; i++)
    for (int j = 0; j < ns; j++) {
      x[i * ns + j] = sp[i];
      y[i * ns + j] = sp[j];
    }
}

static uint32_t fmaxm(uint32_t a, uint32_t b) {
  float x = F(a), y = F(b);
  if (x != x || y != y) return CANON;
  if (x == y) return (a >> 31) && (b >> 31) ? a : (a >> 31 ? b : a); /* +0 wins */
  return x > y ? a : b;
}
static uint32_t fminm(uint32_t a, uint32_t b) {
  float x = F(a), y = F(b);
  if (x != x || y != y) return CANON;
  if (x == y) return a >> 31 ? a : b; /* -0 wins */
  return x < y ? a : b;
}
static uint32_t cvtfi(uint32_t a) {
  float x = F(a);
  if (x != x) return 0;
  if (x >= 2147483648.0f) return 0x7FFFFFFFu;
  if (x < -2147483648.0f) return 0x80000000u;
  return (uint32_t)(int32_t)x;
}
static uint32_t rne_int(uint32_t a) {
  float x = F(a);
  if (x != x) return CANON;
  if (fabsf(x) >= 8388608.0f) return a; /* already an integer (or inf) */
  float fl = floorf(x), d = x - fl;
  float r = d > 0.5f ? fl + 1 : d < 0.5f ? fl : (fmodf(fl, 2.0f) == 0 ? fl : fl + 1);
  if (r == 0) return a & 0x80000000u; /* keep the sign of zero */
  return rt_bits(r);
}

typedef uint32_t (*model)(uint32_t a, uint32_t b);
#define M1(name, expr)                                                                             \
  static uint32_t name(uint32_t a, uint32_t b) {                                                   \
    (void)b;                                                                                       \
    return (expr);                                                                                 \
  }
M1(m_addf, canon(F(a) + F(b)))
M1(m_subf, canon(F(a) - F(b)))
M1(m_mulf, canon(F(a) * F(b)))
M1(m_divf, canon(F(a) / F(b)))
M1(m_maxf, fmaxm(a, b))
M1(m_minf, fminm(a, b))
M1(m_addi, a + b)
M1(m_subi, a - b)
M1(m_muli, a *b)
M1(m_maxi, (int32_t)a > (int32_t)b ? a : b)
M1(m_mini, (int32_t)a < (int32_t)b ? a : b)
M1(m_and, a &b)
M1(m_or, a | b)
M1(m_xor, a ^ b)
M1(m_shl, a << (b & 31))
M1(m_shr, a >> (b & 31))
M1(m_sra, (uint32_t)((int32_t)a >> (b & 31)))
M1(m_exp, canon((float)exp((double)F(a))))
M1(m_log, canon((float)log((double)F(a))))
M1(m_tanh, canon((float)tanh((double)F(a))))
M1(m_logistic, canon((float)(1.0 / (1.0 + exp(-(double)F(a))))))
M1(m_sqrt, canon(sqrtf(F(a))))
M1(m_rsqrt, canon((float)(1.0 / sqrt((double)F(a)))))
M1(m_sin, canon((float)sin((double)F(a))))
M1(m_cos, canon((float)cos((double)F(a))))
M1(m_expm1, canon((float)expm1((double)F(a))))
M1(m_log1p, canon((float)log1p((double)F(a))))
M1(m_erf, canon((float)erf((double)F(a))))
M1(m_pow, canon((float)pow((double)F(a), (double)F(b))))
M1(m_atan2, canon((float)atan2((double)F(a), (double)F(b))))
M1(m_abs, a & 0x7FFFFFFFu)
M1(m_neg, a ^ 0x80000000u)
M1(m_cvtif, rt_bits((float)(int32_t)a))
M1(m_cvtfi, cvtfi(a))
M1(m_rndbf, (uint32_t)rt_bf16(F(a)) << 16)
M1(m_floor, canon(floorf(F(a))))
M1(m_ceil, canon(ceilf(F(a))))
M1(m_rne, rne_int(a))
M1(m_ltf_sel, F(a) < F(b) ? a : b)
M1(m_lef_sel, F(a) <= F(b) ? a : b)
M1(m_eqf_sel, F(a) == F(b) ? a : b)
M1(m_nef_sel, F(a) != F(b) ? a : b)
M1(m_lti_sel, (int32_t)a < (int32_t)b ? a : b)
M1(m_lei_sel, (int32_t)a <= (int32_t)b ? a : b)
M1(m_eqi_sel, a == b ? a : b)

static const struct {
  const char *line;
  model f;
  int ints; /* integer inputs instead of floats */
} ops[] = {
    {"vaddf v3, v1, v2", m_addf, 0},
    {"vsubf v3, v1, v2", m_subf, 0},
    {"vmulf v3, v1, v2", m_mulf, 0},
    {"vdivf v3, v1, v2", m_divf, 0},
    {"vmaxf v3, v1, v2", m_maxf, 0},
    {"vminf v3, v1, v2", m_minf, 0},
    {"vaddi v3, v1, v2", m_addi, 1},
    {"vsubi v3, v1, v2", m_subi, 1},
    {"vmuli v3, v1, v2", m_muli, 1},
    {"vmaxi v3, v1, v2", m_maxi, 1},
    {"vmini v3, v1, v2", m_mini, 1},
    {"vand v3, v1, v2", m_and, 1},
    {"vor v3, v1, v2", m_or, 1},
    {"vxor v3, v1, v2", m_xor, 1},
    {"vshl v3, v1, v2", m_shl, 1},
    {"vshr v3, v1, v2", m_shr, 1},
    {"vsra v3, v1, v2", m_sra, 1},
    {"vexp v3, v1", m_exp, 0},
    {"vlog v3, v1", m_log, 0},
    {"vtanh v3, v1", m_tanh, 0},
    {"vlogistic v3, v1", m_logistic, 0},
    {"vsqrt v3, v1", m_sqrt, 0},
    {"vrsqrt v3, v1", m_rsqrt, 0},
    {"vsin v3, v1", m_sin, 0},
    {"vcos v3, v1", m_cos, 0},
    {"vexpm1 v3, v1", m_expm1, 0},
    {"vlog1p v3, v1", m_log1p, 0},
    {"verf v3, v1", m_erf, 0},
    {"vpow v3, v1, v2", m_pow, 0},
    {"vatan2 v3, v1, v2", m_atan2, 0},
    {"vabsf v3, v1", m_abs, 0},
    {"vnegf v3, v1", m_neg, 0},
    {"vcvtif v3, v1", m_cvtif, 1},
    {"vcvtfi v3, v1", m_cvtfi, 0},
    {"vrndbf v3, v1", m_rndbf, 0},
    {"vfloor v3, v1", m_floor, 0},
    {"vceil v3, v1", m_ceil, 0},
    {"vrne v3, v1", m_rne, 0},
    {"vcmpltf m2, v1, v2\n  vsel v3, m2, v1, v2", m_ltf_sel, 0},
    {"vcmplef m2, v1, v2\n  vsel v3, m2, v1, v2", m_lef_sel, 0},
    {"vcmpeqf m2, v1, v2\n  vsel v3, m2, v1, v2", m_eqf_sel, 0},
    {"vcmpnef m2, v1, v2\n  vsel v3, m2, v1, v2", m_nef_sel, 0},
    {"vcmplti m2, v1, v2\n  vsel v3, m2, v1, v2", m_lti_sel, 1},
    {"vcmplei m2, v1, v2\n  vsel v3, m2, v1, v2", m_lei_sel, 1},
    {"vcmpeqi m2, v1, v2\n  vsel v3, m2, v1, v2", m_eqi_sel, 1},
};

static void every_vector_op_matches_its_model(void **state) {
  (void)state;
  static uint32_t x[N], y[N], z[N];
  int bad = 0;
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    inputs(x, y, 11 + k);
    if (ops[k].ints)
      for (int i = 400; i < N; i++) {
        uint64_t s = 77 * k + (uint64_t)i;
        x[i] = (uint32_t)rt_rand(&s);
        y[i] = i % 3 ? (uint32_t)(rt_rand(&s) % 40) : (uint32_t)rt_rand(&s);
      }
    if (ops[k].ints) x[1000] = 0x80000000u, y[1000] = 0xFFFFFFFFu;
    run_op(ops[k].line, x, y, z);
    for (int i = 0; i < N; i++) {
      uint32_t w = ops[k].f(x[i], y[i]);
      if (w != z[i]) {
        if (bad++ < 10)
          fprintf(stderr, "%s: x=%08x y=%08x got %08x want %08x\n", ops[k].line, x[i], y[i], z[i],
                  w);
      }
    }
  }
  assert_int_equal(bad, 0);
}

/* Reductions in the documented order, masks, iota, byte and bf16 I/O. */
static void reductions_masks_and_narrow_io(void **state) {
  (void)state;
  static uint32_t x[N], y[N], z[N];
  inputs(x, y, 5);
  run_op("vrlsum v3, v1", x, y, z);
  for (int r = 0; r < 8; r++) {
    float s = F(x[r * 128]);
    for (int l = 1; l < 128; l++)
      s += F(x[r * 128 + l]);
    for (int l = 0; l < 128; l++)
      assert_int_equal(z[r * 128 + l], canon(s));
  }
  run_op("vrsmax v3, v2", x, y, z);
  for (int l = 0; l < 128; l++) {
    uint32_t m = y[l];
    for (int r = 1; r < 8; r++)
      m = fmaxm(m, y[r * 128 + l]);
    for (int r = 0; r < 8; r++)
      assert_int_equal(z[r * 128 + l], m);
  }
  run_op("vrlmin v3, v2", x, y, z);
  for (int r = 0; r < 8; r++) {
    uint32_t m = y[r * 128];
    for (int l = 1; l < 128; l++)
      m = fminm(m, y[r * 128 + l]);
    assert_int_equal(z[r * 128 + 5], m);
  }
  /* m1 = lanes < 64: select, and the masked store keeps the old v3. */
  run_op("vimm v3, 7\n  vsel v3, m1, v1, v3", x, y, z);
  for (int i = 0; i < N; i++)
    assert_int_equal(z[i], i % 128 < 64 ? x[i] : 7u);
  run_op("mnot m2, m1\n  viota v3, 1\n  vimm v4, 0\n  vsel v3, m2, v3, v4", x, y, z);
  for (int i = 0; i < N; i++)
    assert_int_equal(z[i], i % 128 >= 64 ? (uint32_t)(i / 128) : 0u);
  /* bf16 store then load: RNE rounding, exact widening. */
  run_op("vsth v1, s0, 65536, s0, m0\n  vldh v3, s0, 65536, s0", x, y, z);
  for (int i = 0; i < N; i++)
    assert_int_equal(z[i], (uint32_t)rt_bf16(F(x[896 + i % 128])) << 16);
  /* byte store (low byte) then sign-extending load */
  run_op("vstb v1, s0, 65536, s0, m0\n  vldb v3, s0, 65536, s0", x, y, z);
  for (int i = 0; i < N; i++)
    assert_int_equal(z[i], (uint32_t)(int32_t)(int8_t)(x[896 + i % 128] & 0xFF));
}

static int setup(void **state) {
  (void)state;
  return tpurt_device_create(NULL, &dev) == TPURT_OK ? 0 : -1;
}
static int teardown(void **state) {
  (void)state;
  tpurt_device_destroy(dev);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_vector_op_matches_its_model),
      cmocka_unit_test(reductions_masks_and_narrow_io),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
