/* test_mxu: the MXU numerics contract (runtime/emu/mxu.h).
 *
 * Three independent computations must agree bit for bit:
 *   - ref_matmul below: the contract written as a plain loop, one output at
 *     a time (flush bf16 subnormal inputs, fmaf in ascending k, canonical
 *     NaN);
 *   - the fast kernel (every host implementation: portable, AVX2, AVX-512);
 *   - the PE-by-PE systolic array at 4x4, 8x8, 16x16 and 128x128.
 * Inputs mix random normals with NaNs (several payloads and signs), +-inf,
 * signed zeros, bf16 subnormals and values whose accumulation produces
 * exact f32 rounding ties; a checker asserts that the outputs really contain
 * NaN, inf, -0 and that ties really happened, so the comparison cannot pass
 * vacuously. Hand-derived cases pin the rounding and the fused-add choice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/emu/mxu.h"

/* ---- helpers ---------------------------------------------------------- */

#ifdef HAVE_WRAP_MALLOC
/* Linked with -Wl,--wrap=malloc: lets a test make the MXU's allocations
 * fail to reach its fallback paths. */
void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
static int fail_malloc;
void *__wrap_malloc(size_t n) { return fail_malloc ? NULL : __real_malloc(n); }
#endif

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint64_t rng;
static uint32_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 32);
}

/* The contract as a loop: the test's oracle. */
static float ref_in(uint16_t h, unsigned flags) {
  if (!(flags & EMU_MXU_KEEP_SUBNORMALS) && (h & 0x7F80u) == 0) h &= 0x8000u;
  return u2f((uint32_t)h << 16);
}

static long ref_ties; /* adds whose exact sum lay halfway between two floats */

static void ref_matmul(const uint16_t *lhs, const uint16_t *w, float *acc, int m, int k, int n,
                       int lds, int ldw, int ldacc, unsigned flags) {
  if (m <= 0 || k <= 0 || n <= 0) return;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float s = acc[(size_t)i * ldacc + j];
      for (int kk = 0; kk < k; kk++) {
        uint16_t wv =
            (flags & EMU_MXU_W_TRANSPOSED) ? w[(size_t)j * ldw + kk] : w[(size_t)kk * ldw + j];
        float a = ref_in(lhs[(size_t)i * lds + kk], flags), b = ref_in(wv, flags);
        float t = fmaf(a, b, s);
        /* Tie detector: with a*b exact in double (16-bit significands) and
         * the sum exact in long double when magnitudes are close, a result
         * exactly halfway between t and its neighbour is a tie. */
        if (isfinite(t) && t != 0.0f) {
          long double exact = (long double)s + (long double)((double)a * (double)b);
          long double up = nextafterf(t, INFINITY), dn = nextafterf(t, -INFINITY);
          if (exact == ((long double)t + up) / 2 || exact == ((long double)t + dn) / 2) ref_ties++;
        }
        s = t;
      }
      acc[(size_t)i * ldacc + j] = isnan(s) ? u2f(0x7FC00000u) : s;
    }
}

/* Inputs: three mixes that together hit every case of the contract.
 *   MIX_DENSE:  many specials (inf, NaN payloads, signed zeros, subnormals);
 *   MIX_TIES:   mostly +-1, +-1.5, +-2^-12, +-2^-24, whose products land on
 *               half-ulps of the accumulator: exact rounding ties;
 *   MIX_SPARSE: normals and signed zeros, a special about once per four
 *               dot products, so outputs are a mix of finite, inf and NaN;
 *               and output (0,0) is built to be -0. */
enum { MIX_DENSE, MIX_TIES, MIX_SPARSE, MIX__COUNT };

static uint16_t gen_special(void) {
  switch (rnd() % 6) {
  case 0:
    return 0x7F80; /* +inf */
  case 1:
    return 0xFF80; /* -inf */
  case 2:
    return (uint16_t)(0x7FC0 | (rnd() & 0x3F)); /* qNaN */
  case 3:
    return (uint16_t)(0xFF81 + (rnd() & 0x3E)); /* -NaN */
  default:
    return (uint16_t)((rnd() & 0x8000) | (1 + rnd() % 0x7F)); /* subnormal */
  }
}

static uint16_t gen_normal(void) {
  /* sign, exponent in [2^-20, 2^20] or (one in 16) anywhere from 2^-126 to
   * 2^127, where products overflow or underflow f32, 7-bit fraction */
  uint32_t e = rnd() % 16 ? 127 - 20 + rnd() % 41 : 1 + rnd() % 254;
  return (uint16_t)((rnd() & 0x8000) | (e << 7) | (rnd() & 0x7F));
}

/* Specials come at a rate per element of about 1/(4k) (dense) or 1/(8k), so
 * that whatever k is, outputs are a mix of finite values, infinities and
 * NaNs rather than all NaN. */
static uint16_t gen_value(int mix, int k) {
  uint32_t r = rnd() % 1000;
  uint32_t special_odds = (uint32_t)(mix == MIX_DENSE ? 4 * k + 8 : 8 * k + 8);
  if (rnd() % special_odds == 0) return gen_special();
  switch (mix) {
  case MIX_TIES: {
    static const uint16_t tie[] = {0x3F80, 0xBF80, 0x3980, 0xB980, 0x3380, 0xB380, 0x3FC0, 0xBFC0};
    return r < 700 ? tie[rnd() % 8] : gen_normal();
  }
  case MIX_SPARSE:
    return r < 300 ? (uint16_t)(rnd() & 0x8000) : gen_normal();
  default:
    if (r < 100) /* subnormals: zeros by default, values with the flag */
      return (uint16_t)((rnd() & 0x8000) | (1 + rnd() % 0x7F));
    if (r < 300) return (uint16_t)(rnd() & 0x8000); /* +-0 */
    return gen_normal();
  }
}

static float gen_acc(void) {
  uint32_t r = rnd() % 100;
  if (r < 3) return u2f(0x80000000u); /* -0 */
  if (r < 6) return 0.0f;
  if (r < 8) return u2f(0x7FC00123u);                       /* NaN with payload */
  if (r < 40) return 1.0f + (float)(rnd() % 64) * 0x1p-23f; /* odd/even ulps */
  return ldexpf((float)(int32_t)(rnd() % 2000001u - 1000000), -(int)(rnd() % 20));
}

typedef struct problem {
  int m, k, n, lds, ldw, ldacc;
  unsigned flags;
  uint16_t *lhs, *w;
  float *acc0; /* initial accumulator */
} problem;

static problem make_problem(int m, int k, int n, unsigned flags, int mix) {
  problem p = {m, k, n, k + 3, 0, n + 5, flags, NULL, NULL, NULL};
  p.ldw = (flags & EMU_MXU_W_TRANSPOSED) ? k + 1 : n + 2;
  size_t wrows = (flags & EMU_MXU_W_TRANSPOSED) ? (size_t)n : (size_t)k;
  p.lhs = malloc((size_t)m * p.lds * sizeof *p.lhs);
  p.w = malloc(wrows * p.ldw * sizeof *p.w);
  p.acc0 = malloc((size_t)m * p.ldacc * sizeof *p.acc0);
  assert_non_null(p.lhs);
  assert_non_null(p.w);
  assert_non_null(p.acc0);
  for (size_t i = 0; i < (size_t)m * p.lds; i++)
    p.lhs[i] = gen_value(mix, k);
  for (size_t i = 0; i < wrows * p.ldw; i++)
    p.w[i] = gen_value(mix, k);
  for (size_t i = 0; i < (size_t)m * p.ldacc; i++)
    p.acc0[i] = gen_acc();
  if (mix == MIX_SPARSE) { /* output (0,0) = -0 + sum of -0 * positive = -0 */
    p.acc0[0] = u2f(0x80000000u);
    for (int kk = 0; kk < k; kk++) {
      p.lhs[kk] = 0x8000;
      size_t w0 = (flags & EMU_MXU_W_TRANSPOSED) ? (size_t)kk : (size_t)kk * p.ldw;
      p.w[w0] = gen_normal() & 0x7FFF;
    }
  }
  return p;
}

static void free_problem(problem *p) {
  free(p->lhs);
  free(p->w);
  free(p->acc0);
}

static float *copy_acc(const problem *p) {
  size_t sz = (size_t)p->m * p->ldacc * sizeof(float);
  float *a = malloc(sz);
  assert_non_null(a);
  memcpy(a, p->acc0, sz);
  return a;
}

/* Bitwise equality over the whole buffer, including the padding columns
 * past n that must stay untouched. */
static void assert_same_bits(const float *want, const float *got, const problem *p,
                             const char *what) {
  for (int i = 0; i < p->m; i++)
    for (int j = 0; j < p->ldacc; j++) {
      size_t x = (size_t)i * p->ldacc + j;
      if (f2u(want[x]) != f2u(got[x]))
        fail_msg("%s: m=%d k=%d n=%d flags=%#x: (%d,%d) want %08x got %08x", what, p->m, p->k, p->n,
                 p->flags, i, j, f2u(want[x]), f2u(got[x]));
    }
}

/* What the outputs contain, to prove the inputs exercise the contract. */
typedef struct coverage {
  long nan, inf, negzero, finite;
} coverage;

static void count(const float *acc, const problem *p, coverage *cv) {
  for (int i = 0; i < p->m; i++)
    for (int j = 0; j < p->n; j++) {
      float v = acc[(size_t)i * p->ldacc + j];
      cv->nan += isnan(v) != 0;
      cv->inf += isinf(v) != 0;
      cv->negzero += f2u(v) == 0x80000000u;
      cv->finite += isfinite(v) != 0;
    }
}

/* Runs one problem through the oracle, every fast implementation and the
 * systolic array of rows x cols (0: skip), asserting identical bits. */
static void check_problem(const problem *p, int rows, int cols, coverage *cv) {
  float *want = copy_acc(p);
  ref_matmul(p->lhs, p->w, want, p->m, p->k, p->n, p->lds, p->ldw, p->ldacc, p->flags);
  coverage mine = {0, 0, 0, 0};
  count(want, p, &mine);
  if (p->m * p->n >= 40) /* not vacuous: at least a quarter finite */
    assert_true(mine.finite * 4 >= (long)p->m * p->n);
  if (cv) {
    cv->nan += mine.nan;
    cv->inf += mine.inf;
    cv->negzero += mine.negzero;
    cv->finite += mine.finite;
  }
  for (int impl = EMU_MXU_IMPL_AUTO; impl < EMU_MXU_IMPL__COUNT; impl++) {
    if (!emu_mxu_impl_available((emu_mxu_impl)impl)) continue;
    float *got = copy_acc(p);
    emu_mxu_matmul_bf16_ex(p->lhs, p->w, got, p->m, p->k, p->n, p->lds, p->ldw, p->ldacc,
                           p->flags | EMU_MXU_IMPL(impl));
    char what[64];
    snprintf(what, sizeof what, "fast/%s", emu_mxu_impl_name((emu_mxu_impl)impl));
    assert_same_bits(want, got, p, what);
    free(got);
  }
  if (rows > 0) {
    float *got = copy_acc(p);
    int64_t cycles = emu_mxu_systolic_matmul_bf16(p->lhs, p->w, got, p->m, p->k, p->n, p->lds,
                                                  p->ldw, p->ldacc, rows, cols, p->flags);
    /* fill + stream + drain per weight tile: m + rows + cols - 2 cycles */
    int64_t tiles = (int64_t)((p->k + rows - 1) / rows) * ((p->n + cols - 1) / cols);
    assert_int_equal(cycles, tiles * (p->m + rows + cols - 2));
    char what[64];
    snprintf(what, sizeof what, "systolic %dx%d", rows, cols);
    assert_same_bits(want, got, p, what);
    free(got);
  }
  free(want);
}

/* ---- fast == systolic == oracle on random inputs ----------------------- */

static void check_array(int rows, int cols, const int shapes[][3], int nshapes) {
  static const unsigned flag_sets[] = {0, EMU_MXU_KEEP_SUBNORMALS, EMU_MXU_W_TRANSPOSED};
  coverage cv = {0, 0, 0, 0};
  long ties0 = ref_ties;
  for (int s = 0; s < nshapes; s++)
    for (size_t f = 0; f < sizeof flag_sets / sizeof flag_sets[0]; f++)
      for (int mix = 0; mix < MIX__COUNT; mix++) {
        problem p = make_problem(shapes[s][0], shapes[s][1], shapes[s][2], flag_sets[f], mix);
        check_problem(&p, rows, cols, &cv);
        free_problem(&p);
      }
  assert_true(cv.nan > 0);
  assert_true(cv.inf > 0);
  assert_true(cv.negzero > 0);
  assert_true(ref_ties - ties0 > 0);
}

static void systolic_4x4(void **state) {
  (void)state;
  rng = 0x1234567887654321ull;
  /* multiples of the array, non-multiples, thinner than the array */
  static const int shapes[][3] = {{5, 8, 8},  {7, 4, 4}, {9, 11, 6},
                                  {3, 3, 13}, {1, 1, 1}, {12, 17, 5}};
  check_array(4, 4, shapes, 6);
}

static void systolic_8x8(void **state) {
  (void)state;
  rng = 0x0FEDCBA987654321ull;
  static const int shapes[][3] = {{8, 16, 16}, {13, 24, 8}, {10, 19, 21}, {2, 5, 3}, {17, 9, 33}};
  check_array(8, 8, shapes, 5);
}

static void systolic_16x16(void **state) {
  (void)state;
  rng = 0x5555AAAA3333CCCCull;
  static const int shapes[][3] = {{16, 32, 16}, {21, 48, 35}, {6, 17, 15}, {33, 7, 40}};
  check_array(16, 16, shapes, 4);
}

static void systolic_128x128(void **state) {
  (void)state;
  rng = 0x9E3779B97F4A7C15ull;
  /* exactly one tile; 2 x 2 tiles; ragged edges on both sides */
  static const int shapes[][3] = {{8, 128, 128}, {9, 256, 256}, {11, 131, 133}};
  check_array(128, 128, shapes, 3);
}

/* Non-square arrays tile k and n differently. */
static void systolic_rectangular(void **state) {
  (void)state;
  rng = 0xC0FFEE0123456789ull;
  static const int shapes[][3] = {{6, 10, 9}, {4, 23, 7}};
  check_array(3, 5, shapes, 2);
  check_array(8, 2, shapes, 2);
}

/* Large enough to cross every block boundary of the fast kernel: k past
 * one k block (512), m past one lhs block (96), n past one panel chunk
 * (256 columns); checked against the oracle and a 16x16 array. */
static void fast_block_edges(void **state) {
  (void)state;
  rng = 0xABCDEF0011223344ull;
  problem p = make_problem(100, 1030, 270, 0, MIX_TIES);
  check_problem(&p, 16, 16, NULL);
  free_problem(&p);
  problem q = make_problem(97, 513, 257, EMU_MXU_W_TRANSPOSED, MIX_SPARSE);
  check_problem(&q, 0, 0, NULL);
  free_problem(&q);
}

/* Every kernel this host runs (check_problem loops over them) on the odd
 * shapes its register tiles and blocks split differently: m = 1..14 covers
 * every row count modulo the 6- and 4-row tiles (8 = 4 + 4, 14 = 6 + 4 + 4,
 * 5 and 11 a padded tile), n covers a lone column, 16-column halves of a
 * 32-column panel and ragged halves, k crosses the 256 block of the AVX2
 * kernel; the input mixes put NaN, inf, signed zeros, subnormals and
 * rounding ties at every tile edge. Then m past the AVX2 lhs block (192). */
static void kernel_tilings(void **state) {
  (void)state;
  rng = 0x2468ACE013579BDFull;
  static const int ns[] = {1, 15, 16, 17, 33, 48}, ks[] = {1, 5, 256, 257};
  coverage cv = {0, 0, 0, 0};
  long ties0 = ref_ties;
  int round = 0;
  for (int m = 1; m <= 14; m++)
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
      for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++, round++) {
        unsigned flags = round % 4 == 3 ? EMU_MXU_KEEP_SUBNORMALS : 0;
        /* long dot products in the dense or sparse mixes overflow to all
         * inf/NaN; the ties mix keeps them mostly finite */
        int mix = ks[ki] > 5 ? MIX_TIES : round % MIX__COUNT;
        problem p = make_problem(m, ks[ki], ns[ni], flags, mix);
        check_problem(&p, 0, 0, &cv);
        free_problem(&p);
      }
  assert_true(cv.nan > 0);
  assert_true(cv.inf > 0);
  assert_true(cv.negzero > 0);
  assert_true(ref_ties - ties0 > 0);
  problem q = make_problem(200, 300, 40, 0, MIX_TIES);
  check_problem(&q, 0, 0, NULL);
  free_problem(&q);
}

/* The emulator's path: weights packed once, lhs pushed 8 rows at a time.
 * want: the expected accumulator after the whole product. */
static void check_pushes(const problem *p, const float *want) {
  for (int impl = EMU_MXU_IMPL_AUTO; impl < EMU_MXU_IMPL__COUNT; impl++) {
    if (!emu_mxu_impl_available((emu_mxu_impl)impl)) continue;
    size_t bytes = emu_mxu_packed_w_bytes(p->k, p->n);
    assert_int_equal(bytes, (size_t)(p->n + 31) / 32 * 32 * p->k * sizeof(float));
    float *packed = malloc(bytes);
    void *scratch = malloc(emu_mxu_scratch_bytes());
    float *got = copy_acc(p);
    assert_non_null(packed);
    assert_non_null(scratch);
    emu_mxu_pack_w(p->w, p->k, p->n, p->ldw, p->flags | EMU_MXU_IMPL(impl), packed);
    for (int i0 = 0; i0 < p->m; i0 += 8)
      emu_mxu_matmul_packed(p->lhs + (size_t)i0 * p->lds, packed, got + (size_t)i0 * p->ldacc,
                            p->m - i0 < 8 ? p->m - i0 : 8, p->k, p->n, p->lds, p->ldacc,
                            p->flags | EMU_MXU_IMPL(impl), scratch);
    assert_same_bits(want, got, p, emu_mxu_impl_name((emu_mxu_impl)impl));
    free(packed);
    free(scratch);
    free(got);
  }
}

/* One 128x128 weight tile, as the emulator holds it, against the 128x128
 * array; then k and n past the kernel's block sizes against the oracle. */
static void packed_pushes(void **state) {
  (void)state;
  rng = 0x7777000011112222ull;
  problem p = make_problem(40, 128, 128, 0, MIX_DENSE);
  float *want = copy_acc(&p);
  int64_t cyc = emu_mxu_systolic_matmul_bf16(p.lhs, p.w, want, p.m, p.k, p.n, p.lds, p.ldw, p.ldacc,
                                             128, 128, 0);
  assert_int_equal(cyc, 40 + 128 + 128 - 2);
  check_pushes(&p, want);
  free(want);
  free_problem(&p);

  problem q = make_problem(21, 1100, 300, EMU_MXU_W_TRANSPOSED, MIX_TIES);
  want = copy_acc(&q);
  ref_matmul(q.lhs, q.w, want, q.m, q.k, q.n, q.lds, q.ldw, q.ldacc, q.flags);
  coverage cv = {0, 0, 0, 0};
  count(want, &q, &cv);
  assert_true(cv.finite * 2 >= (long)q.m * q.n);
  check_pushes(&q, want);
  free(want);
  free_problem(&q);
}

/* ---- hand-derived cases ------------------------------------------------ */

/* Runs a 1 x k x 1 product through every path; returns the result bits
 * after asserting all paths agree. */
static uint32_t dot1(const uint16_t *a, const uint16_t *b, int k, float acc0, unsigned flags) {
  float want = acc0;
  ref_matmul(a, b, &want, 1, k, 1, k, 1, 1, flags);
  for (int impl = EMU_MXU_IMPL_AUTO; impl < EMU_MXU_IMPL__COUNT; impl++) {
    if (!emu_mxu_impl_available((emu_mxu_impl)impl)) continue;
    float got = acc0;
    emu_mxu_matmul_bf16_ex(a, b, &got, 1, k, 1, k, 1, 1, flags | EMU_MXU_IMPL(impl));
    assert_int_equal(f2u(got), f2u(want));
  }
  static const int sizes[] = {1, 4, 128};
  for (int s = 0; s < 3; s++) {
    float got = acc0;
    assert_true(
        emu_mxu_systolic_matmul_bf16(a, b, &got, 1, k, 1, k, 1, 1, sizes[s], sizes[s], flags) > 0);
    assert_int_equal(f2u(got), f2u(want));
  }
  return f2u(want);
}

static void hand_rounding_ties(void **state) {
  (void)state;
  /* products of 2^-12 * 2^-12 = 2^-24, half an ulp of [1, 2) */
  uint16_t a[4] = {0x3980, 0x3980, 0x3980, 0x3980}, b[4] = {0x3980, 0x3980, 0x3980, 0x3980};
  /* 1 + 2^-24 ties to 1 (even); four times in a row: still 1. Summing the
   * products first (another order) would give 1 + 2^-22. */
  assert_int_equal(dot1(a, b, 4, 1.0f, 0), 0x3F800000u);
  /* 1 + 2^-23 (odd significand) + 2^-24 ties up to 1 + 2^-22 (even); the
   * next three adds tie back to that even value. */
  assert_int_equal(dot1(a, b, 4, 1.0f + 0x1p-23f, 0), 0x3F800002u);
  /* a product of exactly one ulp moves by one ulp: 1 + 2^-23 */
  uint16_t one[1] = {0x3F80}, ulp[1] = {0x3400}; /* 1 * 2^-23 */
  assert_int_equal(dot1(one, ulp, 1, 1.0f, 0), 0x3F800001u);
}

static void hand_signed_zeros(void **state) {
  (void)state;
  uint16_t pz[1] = {0x0000}, nz[1] = {0x8000}, one[1] = {0x3F80}, mone[1] = {0xBF80};
  float mzero = u2f(0x80000000u);
  assert_int_equal(dot1(nz, one, 1, mzero, 0), 0x80000000u);  /* -0 + -0 = -0 */
  assert_int_equal(dot1(pz, one, 1, mzero, 0), 0x00000000u);  /* -0 + +0 = +0 */
  assert_int_equal(dot1(one, mone, 1, 1.0f, 0), 0x00000000u); /* 1 - 1 = +0 */
  /* bf16 subnormals are zeros of their sign by default: -sub * 1 + -0 = -0 */
  uint16_t nsub[1] = {0x8001};
  assert_int_equal(dot1(nsub, one, 1, mzero, 0), 0x80000000u);
  /* and exact with EMU_MXU_KEEP_SUBNORMALS: -2^-133 */
  assert_int_equal(dot1(nsub, one, 1, mzero, EMU_MXU_KEEP_SUBNORMALS), 0x80010000u);
}

static void hand_inf_nan(void **state) {
  (void)state;
  uint16_t inf[1] = {0x7F80}, ninf[1] = {0xFF80}, zero[1] = {0}, one[1] = {0x3F80};
  uint16_t nanp[1] = {0xFFC1}; /* negative NaN with a payload */
  assert_int_equal(dot1(inf, one, 1, 5.0f, 0), 0x7F800000u);
  assert_int_equal(dot1(ninf, one, 1, 5.0f, 0), 0xFF800000u);
  assert_int_equal(dot1(inf, zero, 1, 5.0f, 0), 0x7FC00000u);     /* inf * 0 */
  assert_int_equal(dot1(inf, one, 1, -INFINITY, 0), 0x7FC00000u); /* inf - inf */
  assert_int_equal(dot1(nanp, one, 1, 1.0f, 0), 0x7FC00000u);     /* canonical */
  assert_int_equal(dot1(one, one, 1, u2f(0xFFC00042u), 0), 0x7FC00000u);
  uint16_t a2[2] = {0x7F80, 0x3F80}, b2[2] = {0x3F80, 0xFF80}; /* inf then -inf */
  assert_int_equal(dot1(a2, b2, 2, 0.0f, 0), 0x7FC00000u);
}

/* Products are exact (fused add): where a plain f32 multiply would round,
 * the contract does not. */
static void hand_fused_products(void **state) {
  (void)state;
  /* 2^-75 * 2^-75 = 2^-150, half the smallest subnormal; added to 2^-149:
   * exact sum 1.5 * 2^-149 ties to even 2^-148 (a rounded product would be
   * 0 and leave 2^-149). */
  uint16_t t75[1] = {0x1A00}; /* 2^-75: exponent 52 */
  assert_int_equal(dot1(t75, t75, 1, u2f(1), 0), 2u);
  /* 2^100 * 1.5 * 2^28 = 1.5 * 2^128 overflows alone, but added to -FLT_MAX
   * it is 2^127 + 2^104 exactly, which f32 holds (a rounded product would
   * be inf). */
  uint16_t big[1] = {0x71800000u >> 16}, b15[1] = {0x4DC0}; /* 2^100, 1.5*2^28 */
  assert_int_equal(dot1(big, b15, 1, -FLT_MAX, 0), 0x7F000001u);
}

static void k_zero_leaves_acc(void **state) {
  (void)state;
  uint16_t x[1] = {0x3F80};
  float acc[2] = {u2f(0x7FC00123u), 3.0f}; /* a NaN payload stays untouched */
  emu_mxu_matmul_bf16(x, x, acc, 1, 0, 2, 1, 2, 2);
  assert_int_equal(emu_mxu_systolic_matmul_bf16(x, x, acc, 1, 0, 2, 1, 2, 2, 4, 4, 0), 0);
  emu_mxu_matmul_bf16(x, x, acc, 0, 1, 2, 1, 2, 2);
  assert_int_equal(f2u(acc[0]), 0x7FC00123u);
  assert_int_equal(f2u(acc[1]), f2u(3.0f));
}

/* ---- conversions ------------------------------------------------------- */

static void bf16_conversions(void **state) {
  (void)state;
  assert_int_equal(base_f32_to_bf16(1.0f), 0x3F80);
  assert_int_equal(base_f32_to_bf16(u2f(0x3F808000u)), 0x3F80); /* tie -> even */
  assert_int_equal(base_f32_to_bf16(u2f(0x3F818000u)), 0x3F82); /* tie -> even */
  assert_int_equal(base_f32_to_bf16(u2f(0x3F808001u)), 0x3F81); /* above tie */
  assert_int_equal(base_f32_to_bf16(u2f(0xBF807FFFu)), 0xBF80); /* below tie */
  assert_int_equal(base_f32_to_bf16(FLT_MAX), 0x7F80);          /* rounds to inf */
  assert_int_equal(base_f32_to_bf16(-INFINITY), 0xFF80);
  assert_int_equal(base_f32_to_bf16(u2f(0x7F800001u)), 0x7FC0); /* sNaN stays NaN */
  assert_int_equal(base_f32_to_bf16(u2f(0xFFC12345u)), 0xFFC1);
  assert_int_equal(base_f32_to_bf16(u2f(0x80000000u)), 0x8000);
  assert_int_equal(base_f32_to_bf16(u2f(0x00018000u)), 0x0002); /* subnormal tie */
  assert_int_equal(f2u(base_bf16_to_f32(0x8001)), 0x80010000u);
  float src[3] = {1.0f, u2f(0x3F818000u), -2.5f}, back[3];
  uint16_t mid[3];
  emu_f32_row_to_bf16(src, mid, 3);
  emu_bf16_row_to_f32(mid, back, 3);
  assert_int_equal(mid[1], 0x3F82);
  assert_int_equal(f2u(back[1]), 0x3F820000u);
  assert_int_equal(f2u(back[2]), f2u(-2.5f));
}

/* Without scratch memory the general entry computes the same bits with its
 * scalar loop, and the systolic model reports -1 leaving acc untouched. */
static void alloc_failure(void **state) {
  (void)state;
#ifdef HAVE_WRAP_MALLOC
  rng = 0x1111222233334444ull;
  problem p = make_problem(13, 70, 45, EMU_MXU_W_TRANSPOSED, MIX_DENSE);
  float *want = copy_acc(&p), *got = copy_acc(&p), *untouched = copy_acc(&p);
  ref_matmul(p.lhs, p.w, want, p.m, p.k, p.n, p.lds, p.ldw, p.ldacc, p.flags);
  fail_malloc = 1;
  emu_mxu_matmul_bf16_ex(p.lhs, p.w, got, p.m, p.k, p.n, p.lds, p.ldw, p.ldacc, p.flags);
  int64_t cyc = emu_mxu_systolic_matmul_bf16(p.lhs, p.w, untouched, p.m, p.k, p.n, p.lds, p.ldw,
                                             p.ldacc, 8, 8, p.flags);
  fail_malloc = 0;
  assert_int_equal(cyc, -1);
  assert_same_bits(want, got, &p, "scalar fallback");
  assert_same_bits(p.acc0, untouched, &p, "systolic without memory");
  free(want);
  free(got);
  free(untouched);
  free_problem(&p);
#else
  skip();
#endif
}

static void impl_selection(void **state) {
  (void)state;
  assert_int_equal(emu_mxu_impl_selected(EMU_MXU_IMPL(EMU_MXU_IMPL_PORTABLE)),
                   EMU_MXU_IMPL_PORTABLE);
  emu_mxu_impl best = emu_mxu_impl_selected(0);
  assert_int_not_equal(best, EMU_MXU_IMPL_AUTO);
  assert_true(emu_mxu_impl_available(best));
  /* an unknown choice falls back to the automatic one */
  assert_int_equal(emu_mxu_impl_selected(EMU_MXU_IMPL(15)), best);
  assert_string_equal(emu_mxu_impl_name(EMU_MXU_IMPL_AVX512), "avx512");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bf16_conversions),     cmocka_unit_test(impl_selection),
      cmocka_unit_test(alloc_failure),        cmocka_unit_test(hand_rounding_ties),
      cmocka_unit_test(hand_signed_zeros),    cmocka_unit_test(hand_inf_nan),
      cmocka_unit_test(hand_fused_products),  cmocka_unit_test(k_zero_leaves_acc),
      cmocka_unit_test(systolic_4x4),         cmocka_unit_test(systolic_8x8),
      cmocka_unit_test(systolic_16x16),       cmocka_unit_test(systolic_128x128),
      cmocka_unit_test(systolic_rectangular), cmocka_unit_test(fast_block_edges),
      cmocka_unit_test(packed_pushes),        cmocka_unit_test(kernel_tilings),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
