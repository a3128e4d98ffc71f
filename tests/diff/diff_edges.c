/* diff_edges.c: directed cases of the TPU numerics contract
 * (docs/numerics.md), each with a hand-derived expected result that both
 * ir_eval's TPU-numerics mode and the emulator (backend/tpu on v3, v2,
 * v3,mxu=64x64 and a v2 with so little VMEM that K is chunked) must give
 * bit for bit. These are the corners where tiling or the order of
 * accumulation could show: the sign of a zero sum when K is not a multiple
 * of the MXU's rows, bf16 subnormal inputs, NaN payloads, 0 x inf in the
 * padding of a convolution, the bf16x3 / bf16x6 pass order, the tree order
 * of large sums, the row order of sums over the trailing dims. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backend/tpu/tpu.h"
#include "frontend/frontend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const targets[] = {"v3", "v2", "v3,mxu=64x64", "v2,vmem=192KiB"};

static ir_module *parse(const char *text) {
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("edge.hlo", text, strlen(text), d);
  if (!m) fprintf(stderr, "%s", diag_text(d));
  diag_destroy(d);
  assert_non_null(m);
  return m;
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* Runs m on args with the oracle and on every target; every f32 result
 * element i must have the bits want[i]. */
static void check(ir_module *m, ir_literal **args, int nargs, const uint32_t *want, int64_t n,
                  int ntargets) {
  arena *a = arena_create();
  char err[512];
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  eo.tpu_numerics = true;
  ir_literal *ref = NULL;
  assert_int_equal(ir_eval(m, &eo, args, nargs, a, &ref, err, sizeof err), ST_OK);
  assert_int_equal(ir_shape_count(&ref->shape), n);
  for (int64_t i = 0; i < n; i++) {
    uint32_t got = f32_bits(((float *)ref->data)[i]);
    if (got != want[i]) fprintf(stderr, "oracle element %lld: 0x%08x, want 0x%08x\n", (long long)i, got, want[i]);
    assert_int_equal(got, want[i]);
  }
  for (int t = 0; t < ntargets; t++) {
    tpu_options o;
    tpu_options_init(&o);
    o.target = targets[t];
    diag *d = diag_create();
    tpub_image *img = NULL;
    base_status st = tpu_compile(m, &o, d, &img, NULL);
    if (st != ST_OK) fprintf(stderr, "%s: %s\n", targets[t], diag_text(d));
    diag_destroy(d);
    assert_int_equal(st, ST_OK);
    ir_literal *got = NULL;
    st = tpu_execute(img, targets[t], m, args, nargs, a, &got, NULL, NULL, err, sizeof err);
    tpub_free(img);
    if (st != ST_OK) fprintf(stderr, "%s: %s\n", targets[t], err);
    assert_int_equal(st, ST_OK);
    for (int64_t i = 0; i < n; i++) {
      uint32_t g = f32_bits(((float *)got->data)[i]);
      if (g != want[i])
        fprintf(stderr, "%s element %lld: 0x%08x, want 0x%08x\n", targets[t], (long long)i, g,
                want[i]);
      assert_int_equal(g, want[i]);
    }
  }
  arena_destroy(a);
}

static ir_literal *f32_array(arena *a, int rank, const int64_t *dims, float v) {
  ir_shape s = ir_shape_array(IR_F32, rank, dims);
  ir_literal *l = ir_literal_create(a, &s);
  for (int64_t i = 0; i < ir_shape_count(&s); i++) ((float *)l->data)[i] = v;
  return l;
}

/* sum_k (-2^-100)(2^-100): every fused add rounds -2^-200 to -0, so the
 * sum is -0 (0x80000000) for every K, whether or not K fills the MXU's
 * rows: the zero padding of K must not turn -0 into +0. */
static void neg_zero_sum_any_K(void **state) {
  (void)state;
  static const int64_t Ks[] = {1, 64, 100, 128, 129, 300, 4000}; /* 4000: K-chunked on the small v2 */
  for (size_t i = 0; i < COUNTOF(Ks); i++) {
    char text[512];
    int64_t K = Ks[i];
    snprintf(text, sizeof text,
             "HloModule negzero\nENTRY e {\n  a = f32[2,%lld] parameter(0)\n"
             "  b = f32[%lld,3] parameter(1)\n"
             "  ROOT d = f32[2,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
             (long long)K, (long long)K);
    ir_module *m = parse(text);
    arena *a = arena_create();
    int64_t da[2] = {2, K}, db[2] = {K, 3};
    ir_literal *args[2] = {f32_array(a, 2, da, -ldexpf(1, -100)), f32_array(a, 2, db, ldexpf(1, -100))};
    uint32_t want[6];
    for (int j = 0; j < 6; j++) want[j] = 0x80000000u;
    check(m, args, 2, want, 6, 4);
    arena_destroy(a);
    ir_module_destroy(m);
  }
}

/* bf16 subnormal operands read as zeros of their sign: 2^-130 x 1 over
 * K = 5 sums to +0 (the default evaluator would give 5 x 2^-130); a
 * normal 2^-126 passes. */
static void subnormal_operands_flush(void **state) {
  (void)state;
  ir_module *m = parse("HloModule sub\nENTRY e {\n  a = f32[2,5] parameter(0)\n"
                       "  b = f32[5,1] parameter(1)\n"
                       "  ROOT d = f32[2,1] dot(a, b), lhs_contracting_dims={1}, "
                       "rhs_contracting_dims={0}\n}\n");
  arena *a = arena_create();
  int64_t da[2] = {2, 5}, db[2] = {5, 1};
  ir_literal *args[2] = {f32_array(a, 2, da, ldexpf(1, -130)), f32_array(a, 2, db, 1.0f)};
  for (int k = 0; k < 5; k++) ((float *)args[0]->data)[5 + k] = ldexpf(1, -126);
  uint32_t want[2] = {0x00000000u, f32_bits(5 * ldexpf(1, -126))};
  check(m, args, 2, want, 2, 4);
  arena_destroy(a);
  ir_module_destroy(m);
}

/* A NaN operand with a payload, inf - inf and inf x 0 all give the
 * canonical NaN 0x7FC00000; +inf alone stays +inf. */
static void nan_canonical(void **state) {
  (void)state;
  ir_module *m = parse("HloModule nan\nENTRY e {\n  a = f32[4,3] parameter(0)\n"
                       "  b = f32[3,1] parameter(1)\n"
                       "  ROOT d = f32[4,1] dot(a, b), lhs_contracting_dims={1}, "
                       "rhs_contracting_dims={0}\n}\n");
  arena *a = arena_create();
  int64_t da[2] = {4, 3}, db[2] = {3, 1};
  ir_literal *args[2] = {f32_array(a, 2, da, 1.0f), f32_array(a, 2, db, 1.0f)};
  float *x = args[0]->data;
  uint32_t payload = 0xFFA12345u; /* a negative signalling-ish NaN */
  memcpy(&x[0], &payload, 4);
  x[3] = INFINITY;
  x[4] = -INFINITY;
  x[6] = INFINITY;
  ((float *)args[1]->data)[2] = 0.0f; /* row 2: inf x 1 + 1 x 1 + 1 x 0 ... */
  x[8] = INFINITY;                     /* ... row 2 col 2: inf x 0 = NaN */
  x[9] = INFINITY;
  uint32_t want[4] = {0x7FC00000u, 0x7FC00000u, 0x7FC00000u, 0x7F800000u};
  check(m, args, 2, want, 4, 4);
  arena_destroy(a);
  ir_module_destroy(m);
}

/* A convolution whose window overlaps the zero padding, with an infinite
 * kernel tap there: the padding is a real +0 operand on the MXU, so
 * 0 x inf = NaN, canonical (the default evaluator skips padding and would
 * give a finite sum). Output 1 has the inf tap on real data: +inf. */
static void conv_padding_times_inf(void **state) {
  (void)state;
  ir_module *m = parse("HloModule cpad\nENTRY e {\n  x = f32[1,2,1] parameter(0)\n"
                       "  k = f32[2,1,1] parameter(1)\n"
                       "  ROOT c = f32[1,2,1] convolution(x, k), window={size=2 pad=1_0}, "
                       "dim_labels=b0f_0io->b0f\n}\n");
  arena *a = arena_create();
  int64_t dx[3] = {1, 2, 1}, dk[3] = {2, 1, 1};
  ir_literal *args[2] = {f32_array(a, 3, dx, 1.0f), f32_array(a, 3, dk, 2.0f)};
  ((float *)args[1]->data)[0] = INFINITY;
  uint32_t want[2] = {0x7FC00000u, 0x7F800000u};
  check(m, args, 2, want, 2, 4);
  arena_destroy(a);
  ir_module_destroy(m);
}

/* HIGH (bf16x3) and HIGHEST (bf16x6) on x = 1 + 2^-9 + 2^-18 (three bf16
 * parts 1, 2^-9, 2^-18) times y = 1: the passes a0b0, a0b1, a1b0 give
 * 1 + 2^-9 (a1 = 2^-9 + 2^-18 rounds to 2^-9 in bf16: the third part is
 * lost at HIGH); HIGHEST adds a2b0 = 2^-18: the exact x. One pass: 1. */
static void precision_passes(void **state) {
  (void)state;
  static const char *prec[] = {"default", "high", "highest"};
  float x = 1.0f + ldexpf(1, -9) + ldexpf(1, -18);
  uint32_t want_of[3] = {f32_bits(1.0f), f32_bits(1.0f + ldexpf(1, -9)), f32_bits(x)};
  for (int p = 0; p < 3; p++) {
    char text[512];
    snprintf(text, sizeof text,
             "HloModule prec\nENTRY e {\n  a = f32[1,1] parameter(0)\n  b = f32[1,1] parameter(1)\n"
             "  ROOT d = f32[1,1] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
             "operand_precision={%s,%s}\n}\n",
             prec[p], prec[p]);
    ir_module *m = parse(text);
    arena *a = arena_create();
    int64_t d2[2] = {1, 1};
    ir_literal *args[2] = {f32_array(a, 2, d2, x), f32_array(a, 2, d2, 1.0f)};
    check(m, args, 2, &want_of[p], 1, 4);
    arena_destroy(a);
    ir_module_destroy(m);
  }
}

/* Elementwise: maximum prefers +0 over -0 and returns the canonical NaN
 * (the default evaluator gives -0 and the NaN operand); exp is the double
 * exp of the widened input rounded once. */
static void vector_kernels(void **state) {
  (void)state;
  ir_module *m = parse("HloModule vk\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n"
                       "  mx = f32[4] maximum(a, b)\n  ex = f32[4] exponential(a)\n"
                       "  ROOT r = f32[8] concatenate(mx, ex), dimensions={0}\n}\n");
  arena *a = arena_create();
  int64_t d1 = 4;
  ir_literal *args[2] = {f32_array(a, 1, &d1, 0.0f), f32_array(a, 1, &d1, 0.0f)};
  float *x = args[0]->data, *y = args[1]->data;
  uint32_t qnan = 0x7FC01234u; /* a NaN with a payload */
  x[0] = -0.0f;
  y[0] = 0.0f;
  x[1] = 0.7f;
  memcpy(&y[1], &qnan, 4);
  x[2] = -3.25f;
  y[2] = -5.0f;
  x[3] = 10.5f;
  y[3] = 1.0f;
  uint32_t want[8] = {0x00000000u,        0x7FC00000u,
                      f32_bits(-3.25f),   f32_bits(10.5f),
                      f32_bits(1.0f),     f32_bits((float)exp(0.7f)),
                      f32_bits((float)exp(-3.25)), f32_bits((float)exp(10.5))};
  check(m, args, 2, want, 8, 3);
  arena_destroy(a);
  ir_module_destroy(m);
}

/* The tree order of a large sum, written out directly: v = [R, O] floats,
 * R2 = min(8192 / O, R / 8); partial j folds column j of the [R / R2,
 * R2 * O] view from its first row; partials then leftover rows, again;
 * below 4096 rows a plain fold from 0. */
static void tree_sum(float *v, int64_t R, int64_t O, float *out) {
  int64_t R2 = 8192 / O < R / 8 ? 8192 / O : R / 8;
  if (R < 4096 || R2 < 2) {
    for (int64_t o = 0; o < O; o++) {
      float acc = 0.0f;
      for (int64_t i = 0; i < R; i++) acc += v[i * O + o];
      out[o] = acc;
    }
    return;
  }
  int64_t R1 = R / R2, W = R2 * O, rem = R - R1 * R2;
  for (int64_t j = 0; j < W; j++)
    for (int64_t i = 1; i < R1; i++) v[j] += v[i * W + j];
  memmove(v + W, v + R1 * W, (size_t)(rem * O) * sizeof *v);
  tree_sum(v, R2 + rem, O, out);
}

/* Sums of many rows into few outputs fold as a tree of partial
 * accumulators on the TPU; the values (2^24 among ones) make every order
 * give different bits, so this checks the exact order, and that it is not
 * the sequential one. */
static void large_sum_tree_order(void **state) {
  (void)state;
  static const int64_t shapes[][2] = {{8192, 1}, {4100, 3}, {20000, 2}, {3000, 2}};
  for (size_t c = 0; c < COUNTOF(shapes); c++) {
    int64_t R = shapes[c][0], O = shapes[c][1];
    char text[640];
    snprintf(text, sizeof text,
             "HloModule bigsum\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
             "  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  x = f32[%lld,%lld] parameter(0)\n"
             "  z = f32[] constant(0)\n"
             "  ROOT r = f32[%lld] reduce(x, z), dimensions={0}, to_apply=add\n}\n",
             (long long)R, (long long)O, (long long)O);
    ir_module *m = parse(text);
    arena *a = arena_create();
    int64_t d[2] = {R, O};
    ir_literal *args[1] = {f32_array(a, 2, d, 1.0f)};
    float *x = args[0]->data;
    for (int64_t i = 0; i < R * O; i++)
      if (i % 97 == 5) x[i] = 16777216.0f;
    float *v = malloc((size_t)(R * O) * sizeof *v), want_f[3], seq[3];
    memcpy(v, x, (size_t)(R * O) * sizeof *v);
    tree_sum(v, R, O, want_f);
    uint32_t want[3];
    for (int64_t o = 0; o < O; o++) {
      want[o] = f32_bits(want_f[o]);
      seq[o] = 0.0f;
      for (int64_t i = 0; i < R; i++) seq[o] += x[i * O + o];
      if (R >= 4096) assert_true(f32_bits(seq[o]) != want[o]); /* the order shows */
    }
    free(v);
    check(m, args, 1, want, O, 4);
    arena_destroy(a);
    ir_module_destroy(m);
  }
}

/* An f32 sum over the trailing dim folds in the row order: lanes first
 * (element l with l + 128, ...), then the lanes in order. Row of R = 130:
 * x[0] = 1, x[1..129] = 2^-24. Sequentially every 2^-24 is half an ulp of
 * 1 and rounds away (tie to even): 1.0. In the row order lane 0 holds
 * 1 + 2^-24 = 1, lane 1 holds 2^-24 + 2^-24 = 2^-23 and lanes 2..127 hold
 * 2^-24; 1 + 2^-23 is exact, + 2^-24 is a tie that rounds to the even
 * 1 + 2^-22, where the remaining halves of 2^-23 ulps tie back down:
 * 1 + 2^-22 = 0x3F800002. A second row (x[0] = -0, the rest -0 too)
 * sums -0 lanes to -0 and 0 + -0 = +0; a third of length 130 all 2^-24
 * gives 130 x 2^-24 exactly (0x37020000). Also the same sum as a
 * [2, 65] reduce over both dims (R = 130 as well) and the trailing-dim
 * sum of 5000 elements into 2 outputs, which folds as the tree. */
static void row_sum_order(void **state) {
  (void)state;
  const char *text =
      "HloModule rowsum\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  x = f32[3,130] parameter(0)\n"
      "  z = f32[] constant(0)\n  r = f32[3] reduce(x, z), dimensions={1}, to_apply=add\n"
      "  y = f32[3,2,65] reshape(x)\n  q = f32[3] reduce(y, z), dimensions={1,2}, to_apply=add\n"
      "  ROOT c = f32[6] concatenate(r, q), dimensions={0}\n}\n";
  ir_module *m = parse(text);
  arena *a = arena_create();
  int64_t d[2] = {3, 130};
  ir_literal *args[1] = {f32_array(a, 2, d, 0x1p-24f)};
  float *x = args[0]->data;
  x[0] = 1.0f;
  for (int i = 130; i < 260; i++) x[i] = -0.0f;
  uint32_t want[6] = {0x3F800002u, 0x00000000u, 0x37020000u, 0x3F800002u, 0x00000000u, 0x37020000u};
  float seq = 0.0f;
  for (int i = 0; i < 130; i++) seq += x[i];
  assert_int_equal(f32_bits(seq), 0x3F800000u); /* the order shows */
  check(m, args, 1, want, 6, 4);
  arena_destroy(a);
  ir_module_destroy(m);
  /* [2, 5000] over the trailing dim: the tree of [5000, 2] (as transposed) */
  const char *t2 =
      "HloModule rowtree\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  x = f32[2,5000] parameter(0)\n"
      "  z = f32[] constant(0)\n  ROOT r = f32[2] reduce(x, z), dimensions={1}, to_apply=add\n}\n";
  m = parse(t2);
  a = arena_create();
  int64_t d2[2] = {2, 5000};
  ir_literal *a2[1] = {f32_array(a, 2, d2, 1.0f)};
  float *x2 = a2[0]->data, *v = malloc(10000 * sizeof *v), wf[2];
  for (int64_t i = 0; i < 10000; i++) {
    if (i % 97 == 5) x2[i] = 16777216.0f;
    v[(i % 5000) * 2 + i / 5000] = x2[i]; /* [5000, 2] */
  }
  tree_sum(v, 5000, 2, wf);
  free(v);
  uint32_t w2[2] = {f32_bits(wf[0]), f32_bits(wf[1])};
  check(m, a2, 1, w2, 2, 4);
  arena_destroy(a);
  ir_module_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(neg_zero_sum_any_K),    cmocka_unit_test(subnormal_operands_flush),
      cmocka_unit_test(nan_canonical),         cmocka_unit_test(conv_padding_times_inf),
      cmocka_unit_test(precision_passes),      cmocka_unit_test(vector_kernels),
      cmocka_unit_test(large_sum_tree_order),  cmocka_unit_test(row_sum_order),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
