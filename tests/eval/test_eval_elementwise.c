/* test_eval_elementwise.c: elementwise ops, compare, select, clamp,
 * convert and bitcast-convert on the reference evaluator, against values
 * worked out by hand. */
#include "eval_test.h"

/* Evaluates op(x, y) on parameters of shape s with the given values. */
static ir_literal *binary(tb *t, ir_op op, ir_shape s, ir_shape rs, const double *x,
                          const double *y, int64_t n) {
  ir_id p0 = tb_param(t, 0, s), p1 = tb_param(t, 1, s);
  ir_id r = OP2(t, op, rs, NULL, p0, p1);
  ir_literal *args[2] = {tb_lit(t, s, x, n), tb_lit(t, s, y, n)};
  return tb_run(t, r, args, 2);
}

static ir_literal *unary(tb *t, ir_op op, ir_shape s, ir_shape rs, const double *x, int64_t n) {
  ir_id p0 = tb_param(t, 0, s);
  ir_id r = OP1(t, op, rs, NULL, p0);
  ir_literal *args[1] = {tb_lit(t, s, x, n)};
  return tb_run(t, r, args, 1);
}

static void add_bf16_tie_rounds_to_even(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* bf16 has 8 significant bits: the ulp at 1 is 2^-7. 1 + 2^-8 is a tie
   * between 1 and 1 + 2^-7 and goes to the even 1; 1 + 3 * 2^-8 is a tie
   * between 1 + 2^-7 (odd) and 1 + 2^-6 (even). 1 + 2^-7 + 2^-9 is
   * above the tie, so it rounds up. */
  double e8 = ldexp(1, -8), e7 = ldexp(1, -7), e6 = ldexp(1, -6);
  ir_literal *r = binary(&t, IR_OP_ADD, SH(IR_BF16, 3), SH(IR_BF16, 3), A(1, 1, 1),
                         (double[]){e8, 3 * e8, e7}, 3);
  expect_f(r, VALS(1, 1 + e6, 1 + e7));
  tb_free(&t);
}

static void add_f16_rounds_once_and_overflows_to_inf(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* f16: 11 significant bits; 1 + 2^-11 ties to 1; 60000 + 10000 > 65520
   * overflows to inf; 2^-24 (the smallest subnormal) + 2^-24 = 2^-23. */
  double s = ldexp(1, -24);
  ir_literal *r = binary(&t, IR_OP_ADD, SH(IR_F16, 3), SH(IR_F16, 3), A(1, 60000, s),
                         (double[]){ldexp(1, -11), 10000, s}, 3);
  expect_f(r, VALS(1, INFINITY, 2 * s));
  tb_free(&t);
}

static void int_add_and_multiply_wrap(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_literal *r =
      binary(&t, IR_OP_ADD, SH(IR_S8, 3), SH(IR_S8, 3), A(127, -128, 100), A(1, -1, 100), 3);
  expect_i(r, IVALS(-128, 127, -56));
  tb_free(&t);
  tb_init(&t);
  r = binary(&t, IR_OP_MULTIPLY, SH(IR_S32, 3), SH(IR_S32, 3), A(65536, INT32_MAX, -2147483648.0),
             A(65536, 2, -1), 3);
  expect_i(r, IVALS(0, -2, INT32_MIN));
  tb_free(&t);
  tb_init(&t);
  r = binary(&t, IR_OP_SUBTRACT, SH(IR_S32, 1), SH(IR_S32, 1), A(-2147483648.0), A(1), 1);
  expect_i(r, IVALS(INT32_MAX));
  tb_free(&t);
}

static void int_divide_and_remainder_edge_cases(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  double x[] = {7, -7, 7, 5, -2147483648.0, 0};
  double y[] = {-2, 2, 2, 0, -1, 0};
  ir_literal *r = binary(&t, IR_OP_DIVIDE, SH(IR_S32, 6), SH(IR_S32, 6), x, y, 6);
  expect_i(r, IVALS(-3, -3, 3, -1, INT32_MIN, -1));
  tb_free(&t);
  tb_init(&t);
  r = binary(&t, IR_OP_REMAINDER, SH(IR_S32, 6), SH(IR_S32, 6), x, y, 6);
  expect_i(r, IVALS(1, -1, 1, 5, 0, 0));
  tb_free(&t);
  tb_init(&t);
  r = binary(&t, IR_OP_DIVIDE, SH(IR_S8, 2), SH(IR_S8, 2), A(-128, 9), A(-1, 0), 2);
  expect_i(r, IVALS(-128, -1));
  tb_free(&t);
  /* floats: IEEE division and fmod */
  tb_init(&t);
  r = binary(&t, IR_OP_REMAINDER, SH(IR_F32, 3), SH(IR_F32, 3), A(7.5, -7.5, 1), A(2, 2, 0), 3);
  expect_f(r, VALS(1.5, -1.5, NAN));
  tb_free(&t);
}

static void shifts_out_of_range_give_zero_or_sign_fill(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  double x[] = {1, 1, 1, 3};
  double y[] = {31, 32, -1, 1};
  ir_literal *r = binary(&t, IR_OP_SHL, SH(IR_S32, 4), SH(IR_S32, 4), x, y, 4);
  expect_i(r, IVALS(INT32_MIN, 0, 0, 6));
  tb_free(&t);
  tb_init(&t);
  double a[] = {-8, -8, 8, -8, -1};
  double b[] = {1, 40, 40, 28, 32};
  r = binary(&t, IR_OP_SHR_A, SH(IR_S32, 5), SH(IR_S32, 5), a, b, 5);
  expect_i(r, IVALS(-4, -1, 0, -1, -1));
  tb_free(&t);
  tb_init(&t);
  r = binary(&t, IR_OP_SHR_L, SH(IR_S32, 5), SH(IR_S32, 5), a, b, 5);
  expect_i(r, IVALS(0x7ffffffc, 0, 0, 15, 0));
  tb_free(&t);
  tb_init(&t);
  r = binary(&t, IR_OP_SHR_L, SH(IR_S8, 3), SH(IR_S8, 3), A(-1, -128, 64), A(4, 7, 8), 3);
  expect_i(r, IVALS(15, 1, 0));
  tb_free(&t);
}

static void max_min_propagate_nan_and_order_zeros(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  double x[] = {NAN, 1, -INFINITY, INFINITY, -0.0, 0.0, 2};
  double y[] = {1, NAN, 3, NAN, 0.0, -0.0, -5};
  ir_literal *r = binary(&t, IR_OP_MAXIMUM, SH(IR_F32, 7), SH(IR_F32, 7), x, y, 7);
  expect_f(r, VALS(NAN, NAN, 3, NAN, 0, 0, 2));
  /* ties keep the first operand: max(-0, +0) = -0, max(+0, -0) = +0 */
  assert_int_equal(f32_bits(r, 4), 0x80000000u);
  assert_int_equal(f32_bits(r, 5), 0x00000000u);
  tb_free(&t);
  tb_init(&t);
  r = binary(&t, IR_OP_MINIMUM, SH(IR_F32, 7), SH(IR_F32, 7), x, y, 7);
  expect_f(r, VALS(NAN, NAN, -INFINITY, NAN, 0, 0, -5));
  assert_int_equal(f32_bits(r, 4), 0x80000000u);
  assert_int_equal(f32_bits(r, 5), 0x00000000u);
  tb_free(&t);
  tb_init(&t);
  r = binary(&t, IR_OP_MAXIMUM, SH(IR_BF16, 2), SH(IR_BF16, 2), A(NAN, -1), A(2, -2), 2);
  expect_f(r, VALS(NAN, -1));
  tb_free(&t);
}

static ir_literal *compare(tb *t, ir_cmp_dir dir, ir_cmp_type ct, ir_type ty, const double *x,
                           const double *y, int64_t n) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.cmp_dir = dir;
  a.cmp_type = ct;
  ir_id p0 = tb_param(t, 0, SH(ty, n)), p1 = tb_param(t, 1, SH(ty, n));
  ir_id r = OP2(t, IR_OP_COMPARE, SH(IR_PRED, n), &a, p0, p1);
  ir_literal *args[2] = {tb_lit(t, SH(ty, n), x, n), tb_lit(t, SH(ty, n), y, n)};
  return tb_run(t, r, args, 2);
}

static void compare_float_with_nan_and_signed_zero(void **state) {
  (void)state;
  double x[] = {NAN, NAN, 1, INFINITY, -0.0, 2};
  double y[] = {NAN, 1, NAN, INFINITY, 0.0, 3};
  struct {
    ir_cmp_dir dir;
    int64_t want[6];
  } cases[] = {
      {IR_CMP_EQ, {0, 0, 0, 1, 1, 0}}, {IR_CMP_NE, {1, 1, 1, 0, 0, 1}},
      {IR_CMP_LT, {0, 0, 0, 0, 0, 1}}, {IR_CMP_LE, {0, 0, 0, 1, 1, 1}},
      {IR_CMP_GT, {0, 0, 0, 0, 0, 0}}, {IR_CMP_GE, {0, 0, 0, 1, 1, 0}},
  };
  for (unsigned i = 0; i < COUNTOF(cases); i++) {
    tb t;
    tb_init(&t);
    expect_i(compare(&t, cases[i].dir, IR_CMPT_DEFAULT, IR_F32, x, y, 6), cases[i].want, 6);
    tb_free(&t);
  }
}

static void compare_totalorder_orders_nan_and_zeros(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* -NaN < -inf < -1 < -0 < +0 < 1 < inf < +NaN */
  double x[] = {-NAN, -INFINITY, -0.0, 1, INFINITY, NAN, -0.0};
  double y[] = {-INFINITY, -1, 0.0, NAN, NAN, NAN, -0.0};
  expect_i(compare(&t, IR_CMP_LT, IR_CMPT_TOTALORDER, IR_F32, x, y, 7), IVALS(1, 1, 1, 1, 1, 0, 0));
  tb_free(&t);
  tb_init(&t);
  expect_i(compare(&t, IR_CMP_EQ, IR_CMPT_TOTALORDER, IR_F32, x, y, 7), IVALS(0, 0, 0, 0, 0, 1, 1));
  tb_free(&t);
  tb_init(&t); /* the same order holds for bf16 */
  expect_i(compare(&t, IR_CMP_LT, IR_CMPT_TOTALORDER, IR_BF16, x, y, 7),
           IVALS(1, 1, 1, 1, 1, 0, 0));
  tb_free(&t);
}

static void compare_integers_signed_and_unsigned(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  expect_i(compare(&t, IR_CMP_LT, IR_CMPT_DEFAULT, IR_S8, A(-1, -128, 5), A(1, 127, 5), 3),
           IVALS(1, 1, 0));
  tb_free(&t);
  tb_init(&t); /* as unsigned, -1 is 255 and -128 is 128 */
  expect_i(compare(&t, IR_CMP_LT, IR_CMPT_UNSIGNED, IR_S8, A(-1, -128, 5), A(1, 127, 5), 3),
           IVALS(0, 0, 0));
  tb_free(&t);
  tb_init(&t);
  expect_i(compare(&t, IR_CMP_GT, IR_CMPT_DEFAULT, IR_PRED, A(1, 0, 1), A(0, 1, 1), 3),
           IVALS(1, 0, 0));
  tb_free(&t);
}

static void sign_keeps_negative_zero_and_nan(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_literal *r = unary(&t, IR_OP_SIGN, SH(IR_F32, 6), SH(IR_F32, 6),
                        A(-0.0, 0.0, -3, NAN, INFINITY, 1e-40), 6);
  expect_f(r, VALS(0, 0, -1, NAN, 1, 1));
  assert_int_equal(f32_bits(r, 0), 0x80000000u);
  assert_int_equal(f32_bits(r, 1), 0u);
  tb_free(&t);
  tb_init(&t);
  r = unary(&t, IR_OP_SIGN, SH(IR_S32, 3), SH(IR_S32, 3), A(-5, 0, -2147483648.0), 3);
  expect_i(r, IVALS(-1, 0, -1));
  tb_free(&t);
}

static void round_afz_and_round_even_on_ties(void **state) {
  (void)state;
  double x[] = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.7, -3.2, 8388609};
  tb t;
  tb_init(&t);
  ir_literal *r = unary(&t, IR_OP_ROUND_AFZ, SH(IR_F32, 9), SH(IR_F32, 9), x, 9);
  expect_f(r, VALS(-3, -2, -1, 1, 2, 3, 4, -3, 8388609));
  tb_free(&t);
  tb_init(&t);
  r = unary(&t, IR_OP_ROUND_EVEN, SH(IR_F32, 9), SH(IR_F32, 9), x, 9);
  expect_f(r, VALS(-2, -2, -0.0, 0, 2, 2, 4, -3, 8388609));
  assert_int_equal(f32_bits(r, 2), 0x80000000u);
  tb_free(&t);
  tb_init(&t);
  r = unary(&t, IR_OP_FLOOR, SH(IR_F32, 3), SH(IR_F32, 3), A(-1.5, 1.5, -0.0), 3);
  expect_f(r, VALS(-2, 1, -0.0));
  tb_free(&t);
  tb_init(&t);
  r = unary(&t, IR_OP_CEIL, SH(IR_F32, 3), SH(IR_F32, 3), A(-1.5, 1.5, -0.5), 3);
  expect_f(r, VALS(-1, 2, -0.0));
  assert_int_equal(f32_bits(r, 2), 0x80000000u);
  tb_free(&t);
}

static void float_unary_functions_exact_points(void **state) {
  (void)state;
  struct {
    ir_op op;
    double x, want;
  } cases[] = {
      {IR_OP_EXP, 0, 1},
      {IR_OP_EXPM1, 0, 0},
      {IR_OP_LOG, 1, 0},
      {IR_OP_LOG, 0, -INFINITY},
      {IR_OP_LOG, -1, NAN},
      {IR_OP_LOG1P, 0, 0},
      {IR_OP_SQRT, 4, 2},
      {IR_OP_SQRT, -1, NAN},
      {IR_OP_RSQRT, 4, 0.5},
      {IR_OP_RSQRT, 0, INFINITY},
      {IR_OP_CBRT, -27, -3},
      {IR_OP_TANH, 0, 0},
      {IR_OP_TANH, INFINITY, 1},
      {IR_OP_LOGISTIC, 0, 0.5},
      {IR_OP_LOGISTIC, -INFINITY, 0},
      {IR_OP_SINE, 0, 0},
      {IR_OP_COSINE, 0, 1},
      {IR_OP_ABS, -INFINITY, INFINITY},
      {IR_OP_NEGATE, 2, -2},
      {IR_OP_EXP, INFINITY, INFINITY},
  };
  for (unsigned i = 0; i < COUNTOF(cases); i++) {
    for (int ty = 0; ty < 3; ty++) {
      ir_type types[] = {IR_F32, IR_BF16, IR_F16};
      tb t;
      tb_init(&t);
      ir_literal *r = unary(&t, cases[i].op, SH(types[ty], 1), SH(types[ty], 1), &cases[i].x, 1);
      expect_f(r, &cases[i].want, 1);
      tb_free(&t);
    }
  }
  tb t;
  tb_init(&t);
  ir_literal *r =
      unary(&t, IR_OP_IS_FINITE, SH(IR_F32, 4), SH(IR_PRED, 4), A(INFINITY, NAN, -1, -INFINITY), 4);
  expect_i(r, IVALS(0, 0, 1, 0));
  tb_free(&t);
  tb_init(&t); /* abs(-0) is +0 */
  r = unary(&t, IR_OP_ABS, SH(IR_F32, 1), SH(IR_F32, 1), A(-0.0), 1);
  assert_int_equal(f32_bits(r, 0), 0u);
  tb_free(&t);
  tb_init(&t); /* bf16 exp(1) = 2.71828... rounds to 2.71875 (8 bits) */
  r = unary(&t, IR_OP_EXP, SH(IR_BF16, 1), SH(IR_BF16, 1), A(1), 1);
  expect_f(r, VALS(2.71875));
  tb_free(&t);
}

static void power_float_and_integer(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_literal *r =
      binary(&t, IR_OP_POWER, SH(IR_F32, 4), SH(IR_F32, 4), A(2, 0, NAN, 4), A(10, 0, 0, 0.5), 4);
  expect_f(r, VALS(1024, 1, 1, 2));
  tb_free(&t);
  tb_init(&t);
  double x[] = {3, 2, -1, 1, 2, 0, 2, 5};
  double y[] = {4, -1, -3, -7, 31, 0, 32, 0};
  r = binary(&t, IR_OP_POWER, SH(IR_S32, 8), SH(IR_S32, 8), x, y, 8);
  expect_i(r, IVALS(81, 0, -1, 1, INT32_MIN, 1, 0, 1));
  tb_free(&t);
  tb_init(&t); /* atan2(1, 1) = pi/4 in f32 */
  r = binary(&t, IR_OP_ATAN2, SH(IR_F32, 1), SH(IR_F32, 1), A(1), A(1), 1);
  expect_f(r, (double[]){(float)(M_PI / 4)}, 1);
  tb_free(&t);
}

static void bit_ops_popcnt_clz_not(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_literal *r = unary(&t, IR_OP_CLZ, SH(IR_S32, 4), SH(IR_S32, 4), A(1, 0, -1, 65535), 4);
  expect_i(r, IVALS(31, 32, 0, 16));
  tb_free(&t);
  tb_init(&t);
  r = unary(&t, IR_OP_CLZ, SH(IR_S8, 3), SH(IR_S8, 3), A(1, 0, -1), 3);
  expect_i(r, IVALS(7, 8, 0));
  tb_free(&t);
  tb_init(&t);
  r = unary(&t, IR_OP_POPCNT, SH(IR_S8, 3), SH(IR_S8, 3), A(-1, 5, -128), 3);
  expect_i(r, IVALS(8, 2, 1));
  tb_free(&t);
  tb_init(&t);
  r = unary(&t, IR_OP_NOT, SH(IR_S32, 2), SH(IR_S32, 2), A(0, 5), 2);
  expect_i(r, IVALS(-1, -6));
  tb_free(&t);
  tb_init(&t);
  r = unary(&t, IR_OP_NOT, SH(IR_PRED, 2), SH(IR_PRED, 2), A(0, 1), 2);
  expect_i(r, IVALS(1, 0));
  tb_free(&t);
  tb_init(&t);
  r = binary(&t, IR_OP_XOR, SH(IR_S32, 2), SH(IR_S32, 2), A(12, -1), A(10, 5), 2);
  expect_i(r, IVALS(6, -6));
  tb_free(&t);
  tb_init(&t);
  r = unary(&t, IR_OP_NEGATE, SH(IR_S32, 2), SH(IR_S32, 2), A(-2147483648.0, 7), 2);
  expect_i(r, IVALS(INT32_MIN, -7));
  tb_free(&t);
  tb_init(&t);
  r = unary(&t, IR_OP_ABS, SH(IR_S8, 2), SH(IR_S8, 2), A(-128, -7), 2);
  expect_i(r, IVALS(-128, 7));
  tb_free(&t);
}

static void pred_arithmetic_is_logical(void **state) {
  (void)state;
  double x[] = {0, 0, 1, 1}, y[] = {0, 1, 0, 1};
  struct {
    ir_op op;
    int64_t want[4];
  } cases[] = {
      {IR_OP_ADD, {0, 1, 1, 1}},       {IR_OP_SUBTRACT, {0, 1, 1, 0}},
      {IR_OP_MULTIPLY, {0, 0, 0, 1}},  {IR_OP_MAXIMUM, {0, 1, 1, 1}},
      {IR_OP_MINIMUM, {0, 0, 0, 1}},   {IR_OP_AND, {0, 0, 0, 1}},
      {IR_OP_OR, {0, 1, 1, 1}},        {IR_OP_XOR, {0, 1, 1, 0}},
      {IR_OP_POWER, {1, 0, 1, 1}},     {IR_OP_DIVIDE, {1, 0, 1, 1}},
      {IR_OP_REMAINDER, {0, 0, 1, 0}},
  };
  for (unsigned i = 0; i < COUNTOF(cases); i++) {
    tb t;
    tb_init(&t);
    expect_i(binary(&t, cases[i].op, SH(IR_PRED, 4), SH(IR_PRED, 4), x, y, 4), cases[i].want, 4);
    tb_free(&t);
  }
}

static void convert_float_to_int_saturates_and_nan_is_zero(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  double x[] = {NAN, INFINITY, -INFINITY, 3e9, -3e9, -2.7, 2.7, -0.0};
  ir_literal *r = unary(&t, IR_OP_CONVERT, SH(IR_F32, 8), SH(IR_S32, 8), x, 8);
  expect_i(r, IVALS(0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, -2, 2, 0));
  tb_free(&t);
  tb_init(&t);
  r = unary(&t, IR_OP_CONVERT, SH(IR_F32, 4), SH(IR_S8, 4), A(300, -300, 127.9, NAN), 4);
  expect_i(r, IVALS(127, -128, 127, 0));
  tb_free(&t);
  tb_init(&t);
  r = unary(&t, IR_OP_CONVERT, SH(IR_F32, 4), SH(IR_PRED, 4), A(0, -0.0, NAN, 0.5), 4);
  expect_i(r, IVALS(0, 0, 1, 1));
  tb_free(&t);
  tb_init(&t); /* int -> int wraps */
  r = unary(&t, IR_OP_CONVERT, SH(IR_S32, 3), SH(IR_S8, 3), A(200, -129, 256), 3);
  expect_i(r, IVALS(-56, 127, 0));
  tb_free(&t);
}

static void convert_int_to_float_rounds_nearest_even_once(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_literal *r =
      unary(&t, IR_OP_CONVERT, SH(IR_S32, 3), SH(IR_F32, 3), A(16777217, 16777219, -16777217), 3);
  expect_f(r, VALS(16777216, 16777220, -16777216));
  tb_free(&t);
  tb_init(&t);
  /* bf16: 257 ties to 256, 259 ties to 260; 2^24 + 2^16 + 1 is just above
   * the tie between 2^24 and 2^24 + 2^17 and must round up (rounding via
   * f32 first would make it a tie and give 2^24). */
  double big = 16777216.0 + 65536.0 + 1.0;
  r = unary(&t, IR_OP_CONVERT, SH(IR_S32, 4), SH(IR_BF16, 4), (double[]){257, 259, big, -big}, 4);
  expect_f(r, (double[]){256, 260, 16777216.0 + 131072.0, -(16777216.0 + 131072.0)}, 4);
  tb_free(&t);
  tb_init(&t);
  r = unary(&t, IR_OP_CONVERT, SH(IR_S32, 4), SH(IR_F16, 4), A(2049, 2051, 70000, -65519), 4);
  expect_f(r, VALS(2048, 2052, INFINITY, -65504));
  tb_free(&t);
  tb_init(&t);
  r = unary(&t, IR_OP_CONVERT, SH(IR_PRED, 2), SH(IR_BF16, 2), A(1, 0), 2);
  expect_f(r, VALS(1, 0));
  tb_free(&t);
}

static void convert_between_float_types(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  double e8 = ldexp(1, -8);
  ir_literal *r = unary(&t, IR_OP_CONVERT, SH(IR_F32, 4), SH(IR_BF16, 4),
                        (double[]){1 + e8, NAN, -INFINITY, 1 + 3 * e8}, 4);
  expect_f(r, (double[]){1, NAN, -INFINITY, 1 + 4 * e8}, 4);
  tb_free(&t);
  tb_init(&t); /* f16 max is 65504; 65520 and above round to inf */
  r = unary(&t, IR_OP_CONVERT, SH(IR_F32, 3), SH(IR_F16, 3), A(65519, 65520, ldexp(1, -25)), 3);
  expect_f(r, VALS(65504, INFINITY, 0));
  tb_free(&t);
  tb_init(&t); /* bf16 -> f16: 2^-20 is a subnormal in f16, exact */
  r = unary(&t, IR_OP_CONVERT, SH(IR_BF16, 2), SH(IR_F16, 2), (double[]){ldexp(1, -20), 1e10}, 2);
  expect_f(r, (double[]){ldexp(1, -20), INFINITY}, 2);
  tb_free(&t);
}

static void bitcast_convert_reinterprets_bits(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_literal *r =
      unary(&t, IR_OP_BITCAST_CONVERT, SH(IR_F32, 3), SH(IR_S32, 3), A(1.0, -0.0, 2.0), 3);
  expect_i(r, IVALS(0x3f800000, INT32_MIN, 0x40000000));
  tb_free(&t);
  tb_init(&t); /* f32[2] -> s8[2,4], little-endian bytes */
  ir_id p = tb_param(&t, 0, SH(IR_F32, 2));
  ir_id b = OP1(&t, IR_OP_BITCAST_CONVERT, SH(IR_S8, 2, 4), NULL, p);
  ir_literal *arg = tb_lit(&t, SH(IR_F32, 2), VALS(1.0, -2.0));
  r = tb_run(&t, b, &arg, 1);
  expect_i(r, IVALS(0, 0, -128, 63, 0, 0, 0, -64));
  tb_free(&t);
}

static void select_and_clamp_with_scalar_operands(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_id pr = tb_param(&t, 0, SH(IR_PRED, 4));
  ir_id a = tb_param(&t, 1, SH(IR_F32, 4));
  ir_id z = tb_scalar(&t, IR_F32, -1);
  ir_id s = OP3(&t, IR_OP_SELECT, SH(IR_F32, 4), NULL, pr, a, z);
  ir_literal *args[2] = {tb_lit(&t, SH(IR_PRED, 4), VALS(1, 0, 1, 0)),
                         tb_lit(&t, SH(IR_F32, 4), VALS(10, 20, 30, 40))};
  expect_f(tb_run(&t, s, args, 2), VALS(10, -1, 30, -1));
  tb_free(&t);

  tb_init(&t);
  ir_id x = tb_param(&t, 0, SH(IR_F32, 6));
  ir_id lo = tb_scalar(&t, IR_F32, 0), hi = tb_scalar(&t, IR_F32, 6);
  ir_id c = OP3(&t, IR_OP_CLAMP, SH(IR_F32, 6), NULL, lo, x, hi);
  ir_literal *arg = tb_lit(&t, SH(IR_F32, 6), VALS(-3, 2, 9, NAN, -INFINITY, INFINITY));
  expect_f(tb_run(&t, c, &arg, 1), VALS(0, 2, 6, NAN, 0, 6));
  tb_free(&t);

  tb_init(&t);
  x = tb_param(&t, 0, SH(IR_S32, 3));
  ir_id los = tb_const(&t, SH(IR_S32, 3), VALS(0, 0, 5)), his = tb_scalar(&t, IR_S32, 4);
  c = OP3(&t, IR_OP_CLAMP, SH(IR_S32, 3), NULL, los, x, his);
  arg = tb_lit(&t, SH(IR_S32, 3), VALS(-3, 7, 1));
  expect_i(tb_run(&t, c, &arg, 1), IVALS(0, 4, 4)); /* lo > hi: min(hi, max(x, lo)) = hi */
  tb_free(&t);
}

static void elementwise_on_empty_and_scalar_shapes(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_id p0 = tb_param(&t, 0, SH(IR_F32, 0, 3)), p1 = tb_param(&t, 1, SH(IR_F32, 0, 3));
  ir_id r = OP2(&t, IR_OP_ADD, SH(IR_F32, 0, 3), NULL, p0, p1);
  ir_literal *args[2] = {tb_lit(&t, SH(IR_F32, 0, 3), NULL, 0),
                         tb_lit(&t, SH(IR_F32, 0, 3), NULL, 0)};
  ir_literal *out = tb_run(&t, r, args, 2);
  expect_dims(out, IR_F32, 2, (int64_t[]){0, 3});
  assert_int_equal(out->nbytes, 0);
  tb_free(&t);
  tb_init(&t);
  ir_id a = tb_scalar(&t, IR_F32, 1.5), b = tb_scalar(&t, IR_F32, 2);
  r = OP2(&t, IR_OP_MULTIPLY, SCALAR(IR_F32), NULL, a, b);
  out = tb_run(&t, r, NULL, 0);
  expect_dims(out, IR_F32, 0, NULL);
  expect_f(out, VALS(3));
  tb_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(add_bf16_tie_rounds_to_even),
      cmocka_unit_test(add_f16_rounds_once_and_overflows_to_inf),
      cmocka_unit_test(int_add_and_multiply_wrap),
      cmocka_unit_test(int_divide_and_remainder_edge_cases),
      cmocka_unit_test(shifts_out_of_range_give_zero_or_sign_fill),
      cmocka_unit_test(max_min_propagate_nan_and_order_zeros),
      cmocka_unit_test(compare_float_with_nan_and_signed_zero),
      cmocka_unit_test(compare_totalorder_orders_nan_and_zeros),
      cmocka_unit_test(compare_integers_signed_and_unsigned),
      cmocka_unit_test(sign_keeps_negative_zero_and_nan),
      cmocka_unit_test(round_afz_and_round_even_on_ties),
      cmocka_unit_test(float_unary_functions_exact_points),
      cmocka_unit_test(power_float_and_integer),
      cmocka_unit_test(bit_ops_popcnt_clz_not),
      cmocka_unit_test(pred_arithmetic_is_logical),
      cmocka_unit_test(convert_float_to_int_saturates_and_nan_is_zero),
      cmocka_unit_test(convert_int_to_float_rounds_nearest_even_once),
      cmocka_unit_test(convert_between_float_types),
      cmocka_unit_test(bitcast_convert_reinterprets_bits),
      cmocka_unit_test(select_and_clamp_with_scalar_operands),
      cmocka_unit_test(elementwise_on_empty_and_scalar_shapes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
