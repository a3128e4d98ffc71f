/* test_eval_dot_conv.c: dot (batch, contracting and free dims, numerics,
 * preferred types, speed) and convolution (padding, strides, lhs and rhs
 * dilation, window reversal, feature and batch groups, 2-D labels). */
#include "eval_test.h"

#include <time.h>

static ir_attrs attrs(void) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  return a;
}

static ir_literal *dot(tb *t, ir_literal *l, ir_literal *r, ir_shape out, ir_ints lb, ir_ints rb,
                       ir_ints lc, ir_ints rc) {
  ir_attrs a = attrs();
  a.lhs_batch = lb;
  a.rhs_batch = rb;
  a.lhs_contracting = lc;
  a.rhs_contracting = rc;
  a.preferred_type = IR_TYPE_INVALID;
  ir_id x = tb_param(t, 0, l->shape), y = tb_param(t, 1, r->shape);
  ir_id d = OP2(t, IR_OP_DOT, out, &a, x, y);
  ir_literal *args[2] = {l, r};
  return tb_run(t, d, args, 2);
}

static void dot_matmul_and_vector_dot(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_literal *l = tb_lit(&t, SH(IR_F32, 2, 3), VALS(1, 2, 3, 4, 5, 6));
  ir_literal *r = tb_lit(&t, SH(IR_F32, 3, 2), VALS(7, 8, 9, 10, 11, 12));
  expect_f(dot(&t, l, r, SH(IR_F32, 2, 2), NO_INTS, NO_INTS, INTS(1), INTS(0)),
           VALS(58, 64, 139, 154));
  tb_free(&t);
  tb_init(&t); /* contracting lhs dim 0 with rhs dim 1: l^T r^T */
  l = tb_lit(&t, SH(IR_S32, 3, 2), VALS(1, 4, 2, 5, 3, 6));
  r = tb_lit(&t, SH(IR_S32, 2, 3), VALS(7, 9, 11, 8, 10, 12));
  expect_i(dot(&t, l, r, SH(IR_S32, 2, 2), NO_INTS, NO_INTS, INTS(0), INTS(1)),
           IVALS(58, 64, 139, 154));
  tb_free(&t);
  tb_init(&t);
  l = tb_lit(&t, SH(IR_F32, 3), VALS(1, 2, 3));
  r = tb_lit(&t, SH(IR_F32, 3), VALS(4, 5, 6));
  ir_literal *o = dot(&t, l, r, SCALAR(IR_F32), NO_INTS, NO_INTS, INTS(0), INTS(0));
  expect_dims(o, IR_F32, 0, NULL);
  expect_f(o, VALS(32));
  tb_free(&t);
  tb_init(&t); /* no contraction: an outer product */
  l = tb_lit(&t, SH(IR_F32, 2), VALS(1, 2));
  r = tb_lit(&t, SH(IR_F32, 3), VALS(3, 4, 5));
  expect_f(dot(&t, l, r, SH(IR_F32, 2, 3), NO_INTS, NO_INTS, NO_INTS, NO_INTS),
           VALS(3, 4, 5, 6, 8, 10));
  tb_free(&t);
}

static void dot_batch_dims_and_two_contracting_dims(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* lhs [k1=3, b=2, m=2, k2=2], rhs [k2=2, n=2, b=2, k1=3];
   * out[b][m][n] = sum_{k1,k2} lhs[k1][b][m][k2] * rhs[k2][n][b][k1]. */
  double lv[24], rv[24];
  for (int i = 0; i < 24; i++) {
    lv[i] = (i * 7) % 11 - 5;
    rv[i] = (i * 5) % 13 - 6;
  }
  ir_literal *l = tb_lit(&t, SH(IR_S32, 3, 2, 2, 2), lv, 24);
  ir_literal *r = tb_lit(&t, SH(IR_S32, 2, 2, 2, 3), rv, 24);
  ir_literal *o = dot(&t, l, r, SH(IR_S32, 2, 2, 2), INTS(1), INTS(2), INTS(0, 3), INTS(3, 0));
  int64_t want[8];
  for (int b = 0; b < 2; b++)
    for (int m = 0; m < 2; m++)
      for (int n = 0; n < 2; n++) {
        int64_t s = 0;
        for (int k1 = 0; k1 < 3; k1++)
          for (int k2 = 0; k2 < 2; k2++)
            s += (int64_t)lv[((k1 * 2 + b) * 2 + m) * 2 + k2] *
                 (int64_t)rv[((k2 * 2 + n) * 2 + b) * 3 + k1];
        want[(b * 2 + m) * 2 + n] = s;
      }
  expect_i(o, want, 8);
  tb_free(&t);
}

static void dot_bf16_accumulates_in_f32_and_rounds_once(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* bf16 sums rounded per step would give 1 + 2^-8 -> 1, then 1 again;
   * an f32 accumulator holds 1 + 2^-7, which bf16 represents. */
  double e8 = ldexp(1, -8);
  ir_literal *l = tb_lit(&t, SH(IR_BF16, 3), (double[]){1, e8, e8}, 3);
  ir_literal *r = tb_lit(&t, SH(IR_BF16, 3), VALS(1, 1, 1));
  expect_f(dot(&t, l, r, SCALAR(IR_BF16), NO_INTS, NO_INTS, INTS(0), INTS(0)),
           (double[]){1 + 2 * e8}, 1);
  tb_free(&t);
  tb_init(&t); /* f32 summation order is ascending: (1e8 + 1) - 1e8 = 0 in f32, not 1 */
  l = tb_lit(&t, SH(IR_F32, 3), VALS(1e8, 1, -1e8));
  r = tb_lit(&t, SH(IR_F32, 3), VALS(1, 1, 1));
  expect_f(dot(&t, l, r, SCALAR(IR_F32), NO_INTS, NO_INTS, INTS(0), INTS(0)), VALS(0));
  tb_free(&t);
  tb_init(&t); /* f32 operands, bf16 result: operands are converted to bf16 first, so
                * 2^-8 + 2^-17 becomes 2^-8 and the sum 1 + 2^-8 ties to 1 */
  l = tb_lit(&t, SH(IR_F32, 2), (double[]){1, e8 + ldexp(1, -17)}, 2);
  r = tb_lit(&t, SH(IR_F32, 2), VALS(1, 1));
  expect_f(dot(&t, l, r, SCALAR(IR_BF16), NO_INTS, NO_INTS, INTS(0), INTS(0)), VALS(1));
  tb_free(&t);
}

static void dot_s8_operands_with_s32_result_and_wrap(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_literal *l = tb_lit(&t, SH(IR_S8, 2), VALS(127, 127));
  ir_literal *r = tb_lit(&t, SH(IR_S8, 2), VALS(127, 127));
  expect_i(dot(&t, l, r, SCALAR(IR_S32), NO_INTS, NO_INTS, INTS(0), INTS(0)), IVALS(32258));
  tb_free(&t);
  tb_init(&t); /* an s8 result wraps: 32258 mod 256 = 2 */
  l = tb_lit(&t, SH(IR_S8, 2), VALS(127, 127));
  r = tb_lit(&t, SH(IR_S8, 2), VALS(127, 127));
  expect_i(dot(&t, l, r, SCALAR(IR_S8), NO_INTS, NO_INTS, INTS(0), INTS(0)), IVALS(2));
  tb_free(&t);
  tb_init(&t); /* s32 accumulation wraps */
  l = tb_lit(&t, SH(IR_S32, 2), VALS(65536, 65536));
  r = tb_lit(&t, SH(IR_S32, 2), VALS(32768, 32768));
  expect_i(dot(&t, l, r, SCALAR(IR_S32), NO_INTS, NO_INTS, INTS(0), INTS(0)), IVALS(0));
  tb_free(&t);
}

static void dot_empty_contraction_gives_zero(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_literal *l = tb_lit(&t, SH(IR_F32, 2, 0), NULL, 0);
  ir_literal *r = tb_lit(&t, SH(IR_F32, 0, 3), NULL, 0);
  ir_literal *o = dot(&t, l, r, SH(IR_F32, 2, 3), NO_INTS, NO_INTS, INTS(1), INTS(0));
  expect_f(o, VALS(0, 0, 0, 0, 0, 0));
  assert_int_equal(f32_bits(o, 0), 0u); /* +0 */
  tb_free(&t);
  tb_init(&t); /* empty batch: empty result */
  l = tb_lit(&t, SH(IR_F32, 0, 2), NULL, 0);
  r = tb_lit(&t, SH(IR_F32, 0, 2), NULL, 0);
  o = dot(&t, l, r, SH(IR_F32, 0), INTS(0), INTS(0), INTS(1), INTS(1));
  expect_dims(o, IR_F32, 1, (int64_t[]){0});
  tb_free(&t);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void dot_256_cubed_takes_under_a_second(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  enum { N = 256 };
  ir_shape sq = SH(IR_F32, N, N);
  ir_literal *l = ir_literal_create(t.out, &sq);
  ir_literal *r = ir_literal_create(t.out, &sq);
  float *lf = l->data, *rf = r->data;
  for (int i = 0; i < N * N; i++) {
    lf[i] = (float)(i % 7) - 3; /* small integers: the sums are exact */
    rf[i] = (float)(i % 5) - 2;
  }
  double t0 = now();
  ir_literal *o = dot(&t, l, r, SH(IR_F32, N, N), NO_INTS, NO_INTS, INTS(1), INTS(0));
  double dt = now() - t0;
  for (int i = 0; i < N; i += 37)
    for (int j = 0; j < N; j += 41) {
      double s = 0;
      for (int k = 0; k < N; k++)
        s += (double)lf[i * N + k] * rf[k * N + j];
      assert_true(ir_literal_get_f64(o, i * N + j) == s);
    }
  if (dt >= 1.0) fail_msg("256^3 dot took %.3f s", dt);
  tb_free(&t);
}

/* ---- convolution ---- */

typedef struct conv_case {
  ir_conv_dims dims;
  ir_window win;
  int64_t fgc, bgc;
} conv_case;

/* 1-D labels bf0_oi0->bf0 with one window dimension. */
static conv_case conv1d(int64_t size, int64_t stride, int64_t lo, int64_t hi, int64_t ldil,
                        int64_t rdil, bool rev) {
  conv_case c;
  memset(&c, 0, sizeof c);
  c.dims.nspatial = 1;
  c.dims.in_batch = 0, c.dims.in_feature = 1, c.dims.in_spatial[0] = 2;
  c.dims.k_out = 0, c.dims.k_in = 1, c.dims.k_spatial[0] = 2;
  c.dims.out_batch = 0, c.dims.out_feature = 1, c.dims.out_spatial[0] = 2;
  c.win.rank = 1;
  c.win.dims[0] = (ir_window_dim){size, stride, lo, hi, ldil, rdil, rev};
  c.fgc = c.bgc = 1;
  return c;
}

static ir_literal *conv(tb *t, const conv_case *c, ir_literal *l, ir_literal *r, ir_shape out) {
  ir_attrs a = attrs();
  a.conv = c->dims;
  a.window = &c->win;
  a.feature_group_count = c->fgc;
  a.batch_group_count = c->bgc;
  a.preferred_type = IR_TYPE_INVALID;
  ir_id x = tb_param(t, 0, l->shape), y = tb_param(t, 1, r->shape);
  ir_id d = OP2(t, IR_OP_CONVOLUTION, out, &a, x, y);
  ir_literal *args[2] = {l, r};
  return tb_run(t, d, args, 2);
}

static void conv_1d_valid_padded_and_strided(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  conv_case c = conv1d(3, 1, 0, 0, 1, 1, false);
  ir_literal *l = tb_lit(&t, SH(IR_F32, 1, 1, 5), VALS(1, 2, 3, 4, 5));
  ir_literal *r = tb_lit(&t, SH(IR_F32, 1, 1, 3), VALS(1, 0, -1));
  expect_f(conv(&t, &c, l, r, SH(IR_F32, 1, 1, 3)), VALS(-2, -2, -2));
  tb_free(&t);
  tb_init(&t); /* pad 1/1, stride 2: windows (0,1,2) (2,3,4) (4,5,0) of 0 1 2 3 4 5 0 */
  c = conv1d(3, 2, 1, 1, 1, 1, false);
  l = tb_lit(&t, SH(IR_F32, 1, 1, 5), VALS(1, 2, 3, 4, 5));
  r = tb_lit(&t, SH(IR_F32, 1, 1, 3), VALS(1, 2, 3));
  expect_f(conv(&t, &c, l, r, SH(IR_F32, 1, 1, 3)), VALS(8, 20, 14));
  tb_free(&t);
  tb_init(&t); /* negative padding crops the input: [2, 3] */
  c = conv1d(1, 1, -1, 0, 1, 1, false);
  l = tb_lit(&t, SH(IR_F32, 1, 1, 3), VALS(1, 2, 3));
  r = tb_lit(&t, SH(IR_F32, 1, 1, 1), VALS(1));
  expect_f(conv(&t, &c, l, r, SH(IR_F32, 1, 1, 2)), VALS(2, 3));
  tb_free(&t);
  tb_init(&t); /* kernel larger than the input: empty output */
  c = conv1d(3, 1, 0, 0, 1, 1, false);
  l = tb_lit(&t, SH(IR_F32, 1, 1, 2), VALS(1, 2));
  r = tb_lit(&t, SH(IR_F32, 1, 1, 3), VALS(1, 1, 1));
  expect_dims(conv(&t, &c, l, r, SH(IR_F32, 1, 1, 0)), IR_F32, 3, (int64_t[]){1, 1, 0});
  tb_free(&t);
}

static void conv_lhs_and_rhs_dilation_and_reversal(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* lhs dilation 2: 1 0 2 0 3; kernel [1, 10]: d[i] + 10 d[i+1] */
  conv_case c = conv1d(2, 1, 0, 0, 2, 1, false);
  ir_literal *l = tb_lit(&t, SH(IR_F32, 1, 1, 3), VALS(1, 2, 3));
  ir_literal *r = tb_lit(&t, SH(IR_F32, 1, 1, 2), VALS(1, 10));
  expect_f(conv(&t, &c, l, r, SH(IR_F32, 1, 1, 4)), VALS(1, 20, 2, 30));
  tb_free(&t);
  tb_init(&t); /* rhs dilation 2: x[i] + 10 x[i+2] */
  c = conv1d(2, 1, 0, 0, 1, 2, false);
  l = tb_lit(&t, SH(IR_F32, 1, 1, 5), VALS(1, 2, 3, 4, 5));
  r = tb_lit(&t, SH(IR_F32, 1, 1, 2), VALS(1, 10));
  expect_f(conv(&t, &c, l, r, SH(IR_F32, 1, 1, 3)), VALS(31, 42, 53));
  tb_free(&t);
  tb_init(&t); /* reversal: the kernel acts as [10, 1] */
  c = conv1d(2, 1, 0, 0, 1, 1, true);
  l = tb_lit(&t, SH(IR_F32, 1, 1, 3), VALS(1, 2, 3));
  r = tb_lit(&t, SH(IR_F32, 1, 1, 2), VALS(1, 10));
  expect_f(conv(&t, &c, l, r, SH(IR_F32, 1, 1, 2)), VALS(12, 23));
  tb_free(&t);
  tb_init(&t); /* both dilations, high padding and a stride: lhs 1 2 3 dilated
                * by 2 and padded 0/1 is 1 0 2 0 3 0; the kernel [1, 10]
                * dilated by 2 reads d[i] and d[i+2]; stride 2 gives i = 0, 2:
                * 1 + 20 = 21 and 2 + 30 = 32 */
  c = conv1d(2, 2, 0, 1, 2, 2, false);
  l = tb_lit(&t, SH(IR_F32, 1, 1, 3), VALS(1, 2, 3));
  r = tb_lit(&t, SH(IR_F32, 1, 1, 2), VALS(1, 10));
  expect_f(conv(&t, &c, l, r, SH(IR_F32, 1, 1, 2)), VALS(21, 32));
  tb_free(&t);
}

static void conv_feature_group_count_2(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* input features f0 = 1 2 3, f1 = 10 20 30; kernel o0 = [1, 1] reads f0,
   * o1 = [1, -1] reads f1 */
  conv_case c = conv1d(2, 1, 0, 0, 1, 1, false);
  c.fgc = 2;
  ir_literal *l = tb_lit(&t, SH(IR_F32, 1, 2, 3), VALS(1, 2, 3, 10, 20, 30));
  ir_literal *r = tb_lit(&t, SH(IR_F32, 2, 1, 2), VALS(1, 1, 1, -1));
  expect_f(conv(&t, &c, l, r, SH(IR_F32, 1, 2, 2)), VALS(3, 5, -10, -10));
  tb_free(&t);
  tb_init(&t); /* 2 groups of 2 input features, 4 output features */
  c.fgc = 2;
  c.win.dims[0] = (ir_window_dim){1, 1, 0, 0, 1, 1, false};
  /* lhs [1, 4, 1]: features 1 2 3 4; kernel [4 out, 2 in, 1] */
  l = tb_lit(&t, SH(IR_S32, 1, 4, 1), VALS(1, 2, 3, 4));
  r = tb_lit(&t, SH(IR_S32, 4, 2, 1), VALS(1, 0, 0, 1, 1, 1, 10, 100));
  /* o0 = f0 = 1, o1 = f1 = 2 (group 0); o2 = f2 + f3 = 7, o3 = 10 f2 + 100 f3 = 430 */
  expect_i(conv(&t, &c, l, r, SH(IR_S32, 1, 4, 1)), IVALS(1, 2, 7, 430));
  tb_free(&t);
}

static void conv_batch_group_count(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* batch 2 split in 2 groups: feature 0 = batch 0 * o0, feature 1 = batch 1 * o1 */
  conv_case c = conv1d(2, 1, 0, 0, 1, 1, false);
  c.bgc = 2;
  ir_literal *l = tb_lit(&t, SH(IR_F32, 2, 1, 3), VALS(1, 2, 3, 10, 20, 30));
  ir_literal *r = tb_lit(&t, SH(IR_F32, 2, 1, 2), VALS(1, 1, 1, -1));
  expect_f(conv(&t, &c, l, r, SH(IR_F32, 1, 2, 2)), VALS(3, 5, -10, -10));
  tb_free(&t);
  tb_init(&t); /* batch 4 in 2 groups of 2: out batch b, feature g uses lhs batch 2g + b */
  c = conv1d(1, 1, 0, 0, 1, 1, false);
  c.bgc = 2;
  l = tb_lit(&t, SH(IR_F32, 4, 1, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8));
  r = tb_lit(&t, SH(IR_F32, 2, 1, 1), VALS(1, 100));
  expect_f(conv(&t, &c, l, r, SH(IR_F32, 2, 2, 2)), VALS(1, 2, 500, 600, 3, 4, 700, 800));
  tb_free(&t);
}

static conv_case nhwc(void) {
  conv_case c;
  memset(&c, 0, sizeof c);
  c.dims.nspatial = 2;
  c.dims.in_batch = 0, c.dims.in_spatial[0] = 1, c.dims.in_spatial[1] = 2, c.dims.in_feature = 3;
  c.dims.k_spatial[0] = 0, c.dims.k_spatial[1] = 1, c.dims.k_in = 2, c.dims.k_out = 3;
  c.dims.out_batch = 0, c.dims.out_spatial[0] = 1, c.dims.out_spatial[1] = 2,
  c.dims.out_feature = 3;
  c.win.rank = 2;
  c.fgc = c.bgc = 1;
  return c;
}

static void conv_2d_nhwc_same_padding_counts_neighbours(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  conv_case c = nhwc();
  c.win.dims[0] = c.win.dims[1] = (ir_window_dim){3, 1, 1, 1, 1, 1, false};
  ir_literal *l = tb_lit(&t, SH(IR_F32, 1, 3, 3, 1), VALS(1, 1, 1, 1, 1, 1, 1, 1, 1));
  ir_literal *r = tb_lit(&t, SH(IR_F32, 3, 3, 1, 1), VALS(1, 1, 1, 1, 1, 1, 1, 1, 1));
  expect_f(conv(&t, &c, l, r, SH(IR_F32, 1, 3, 3, 1)), VALS(4, 6, 4, 6, 9, 6, 4, 6, 4));
  tb_free(&t);
}

static void conv_2d_all_features_against_direct_formula(void **state) {
  (void)state;
  /* b01f_01io->b01f, lhs [2,4,5,3], kernel [2,3,3,2], strides (1,2), pads
   * (1,0) and (2,1), lhs dilation (1,2), rhs dilation (2,1), reversal on
   * dim 1; compared with the definition written out directly. */
  tb t;
  tb_init(&t);
  conv_case c = nhwc();
  c.win.dims[0] = (ir_window_dim){2, 1, 1, 0, 1, 2, false};
  c.win.dims[1] = (ir_window_dim){3, 2, 2, 1, 2, 1, true};
  double lv[2 * 4 * 5 * 3], rv[2 * 3 * 3 * 2];
  for (int i = 0; i < 120; i++)
    lv[i] = (i * 37) % 17 - 8;
  for (int i = 0; i < 36; i++)
    rv[i] = (i * 11) % 7 - 3;
  /* out dims: H: padded (4-1)*1+1+1+0 = 5, eff (2-1)*2+1 = 3 -> 3;
   *           W: padded (5-1)*2+1+2+1 = 12, eff 3, stride 2 -> 5 */
  ir_literal *l = tb_lit(&t, SH(IR_S32, 2, 4, 5, 3), lv, 120);
  ir_literal *r = tb_lit(&t, SH(IR_S32, 2, 3, 3, 2), rv, 36);
  ir_literal *o = conv(&t, &c, l, r, SH(IR_S32, 2, 3, 5, 2));
  int64_t want[2 * 3 * 5 * 2];
  for (int b = 0; b < 2; b++)
    for (int y = 0; y < 3; y++)
      for (int x = 0; x < 5; x++)
        for (int f = 0; f < 2; f++) {
          int64_t s = 0;
          for (int ky = 0; ky < 2; ky++)
            for (int kx = 0; kx < 3; kx++) {
              /* position in the padded, dilated input */
              int py = y * 1 + ky * 2 - 1, px = x * 2 + kx * 1 - 2;
              if (py < 0 || px < 0 || py % 1 || px % 2) continue;
              int iy = py / 1, ix = px / 2;
              if (iy >= 4 || ix >= 5) continue;
              int kxr = 2 - kx; /* reversed */
              for (int z = 0; z < 3; z++)
                s += (int64_t)lv[((b * 4 + iy) * 5 + ix) * 3 + z] *
                     (int64_t)rv[((ky * 3 + kxr) * 3 + z) * 2 + f];
            }
          want[((b * 3 + y) * 5 + x) * 2 + f] = s;
        }
  expect_i(o, want, 60);
  tb_free(&t);
}

static void conv_numerics_bf16_f32_accumulation_and_s8_to_s32(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  double e8 = ldexp(1, -8);
  conv_case c = conv1d(1, 1, 0, 0, 1, 1, false);
  ir_literal *l = tb_lit(&t, SH(IR_BF16, 1, 3, 1), (double[]){1, e8, e8}, 3);
  ir_literal *r = tb_lit(&t, SH(IR_BF16, 1, 3, 1), VALS(1, 1, 1));
  expect_f(conv(&t, &c, l, r, SH(IR_BF16, 1, 1, 1)), (double[]){1 + 2 * e8}, 1);
  tb_free(&t);
  tb_init(&t);
  l = tb_lit(&t, SH(IR_S8, 1, 2, 1), VALS(127, 127));
  r = tb_lit(&t, SH(IR_S8, 1, 2, 1), VALS(127, 127));
  expect_i(conv(&t, &c, l, r, SH(IR_S32, 1, 1, 1)), IVALS(32258));
  tb_free(&t);
}

static void conv_without_input_features_is_zero_and_fast(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* a 2^20 x 2^20 window over 0 input features: every sum is empty; the
   * window must not be walked (2^40 positions) */
  conv_case c = nhwc();
  int64_t big = (int64_t)1 << 20;
  c.win.dims[0] = c.win.dims[1] = (ir_window_dim){big, 1, big / 2, big / 2 - 1, 1, 1, false};
  ir_literal *l = tb_lit(&t, SH(IR_F32, 2, 1, 1, 0), NULL, 0);
  ir_shape ks = SH(IR_F32, big, big, 0, 3);
  ir_literal *r = ir_literal_create(t.out, &ks);
  ir_literal *o = conv(&t, &c, l, r, SH(IR_F32, 2, 1, 1, 3));
  expect_f(o, VALS(0, 0, 0, 0, 0, 0));
  tb_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(dot_matmul_and_vector_dot),
      cmocka_unit_test(dot_batch_dims_and_two_contracting_dims),
      cmocka_unit_test(dot_bf16_accumulates_in_f32_and_rounds_once),
      cmocka_unit_test(dot_s8_operands_with_s32_result_and_wrap),
      cmocka_unit_test(dot_empty_contraction_gives_zero),
      cmocka_unit_test(dot_256_cubed_takes_under_a_second),
      cmocka_unit_test(conv_1d_valid_padded_and_strided),
      cmocka_unit_test(conv_lhs_and_rhs_dilation_and_reversal),
      cmocka_unit_test(conv_feature_group_count_2),
      cmocka_unit_test(conv_batch_group_count),
      cmocka_unit_test(conv_2d_nhwc_same_padding_counts_neighbours),
      cmocka_unit_test(conv_2d_all_features_against_direct_formula),
      cmocka_unit_test(conv_numerics_bf16_f32_accumulation_and_s8_to_s32),
      cmocka_unit_test(conv_without_input_features_is_zero_and_fast),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
