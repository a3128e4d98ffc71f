/* test_eval_types.c: the wider element types (s16, s64, u8, u16, u32, u64,
 * f64) on the reference evaluator, against values worked out by hand: wrap
 * at each width, unsigned divide/compare/max, shifts and bit counts per
 * width, converts between them (saturation, one rounding), f64 computed in
 * double (not through f32), and their tensor text. */
#include "eval_test.h"

/* A literal of integer type from int64 values (u64: the bit pattern). */
static ir_literal *lit_i(tb *t, ir_shape s, const int64_t *v, int64_t n) {
  ir_literal *l = ir_literal_create(t->out, &s);
  for (int64_t i = 0; i < n; i++) ir_literal_set_i64(l, i, v[i]);
  return l;
}

/* op(x, y) on parameters of shape s; result shape rs. */
static ir_literal *bin_i(tb *t, ir_op op, ir_shape s, ir_shape rs, const ir_attrs *a,
                         const int64_t *x, int64_t n, const int64_t *y, int64_t ny) {
  assert_int_equal(n, ny);
  ir_id r = OP2(t, op, rs, a, tb_param(t, 0, s), tb_param(t, 1, s));
  ir_literal *args[2] = {lit_i(t, s, x, n), lit_i(t, s, y, n)};
  return tb_run(t, r, args, 2);
}

static ir_literal *un(tb *t, ir_op op, ir_shape s, ir_shape rs, ir_literal *x) {
  ir_id r = OP1(t, op, rs, NULL, tb_param(t, 0, s));
  return tb_run(t, r, &x, 1);
}

static double f64_at(const ir_literal *l, int64_t i) {
  double d;
  memcpy(&d, (const char *)l->data + 8 * i, 8);
  return d;
}

static void wrap_at_every_width(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_literal *r = bin_i(&t, IR_OP_ADD, SH(IR_S16, 2), SH(IR_S16, 2), NULL, IVALS(32767, -32768),
                        IVALS(1, -1));
  expect_i(r, IVALS(-32768, 32767));
  tb_free(&t);
  tb_init(&t);
  r = bin_i(&t, IR_OP_ADD, SH(IR_U8, 2), SH(IR_U8, 2), NULL, IVALS(255, 3), IVALS(1, -4));
  expect_i(r, IVALS(0, 255)); /* 3 + 252 = 255 */
  tb_free(&t);
  tb_init(&t);
  r = bin_i(&t, IR_OP_MULTIPLY, SH(IR_S64, 2), SH(IR_S64, 2), NULL, IVALS(INT64_MAX, 1LL << 32),
            IVALS(2, 1LL << 32));
  expect_i(r, IVALS(-2, 0));
  tb_free(&t);
  tb_init(&t);
  r = bin_i(&t, IR_OP_SUBTRACT, SH(IR_U64, 1), SH(IR_U64, 1), NULL, IVALS(0), IVALS(1));
  assert_true((uint64_t)ir_literal_get_i64(r, 0) == UINT64_MAX);
  tb_free(&t);
}

static void unsigned_divide_compare_and_max(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* u64 values above 2^63 are large, not negative. */
  int64_t big = (int64_t)(UINT64_C(1) << 63) + 6; /* 2^63 + 6 */
  ir_literal *r = bin_i(&t, IR_OP_DIVIDE, SH(IR_U64, 3), SH(IR_U64, 3), NULL, IVALS(big, 7, -1),
                        IVALS(2, 0, -1));
  expect_i(r, IVALS((int64_t)(UINT64_C(1) << 62) + 3, -1, 1));
  tb_free(&t);
  tb_init(&t);
  r = bin_i(&t, IR_OP_REMAINDER, SH(IR_U64, 2), SH(IR_U64, 2), NULL, IVALS(big, 9), IVALS(-1, 0));
  expect_i(r, IVALS(big, 9));
  tb_free(&t);
  tb_init(&t);
  r = bin_i(&t, IR_OP_MAXIMUM, SH(IR_U64, 2), SH(IR_U64, 2), NULL, IVALS(big, 3), IVALS(5, 2));
  expect_i(r, IVALS(big, 3));
  tb_free(&t);
  tb_init(&t);
  ir_attrs lt = ir_attrs_none;
  lt.cmp_dir = IR_CMP_LT;
  lt.cmp_type = IR_CMPT_UNSIGNED;
  r = bin_i(&t, IR_OP_COMPARE, SH(IR_U64, 2), SH(IR_PRED, 2), &lt, IVALS(5, big), IVALS(big, 5));
  expect_i(r, IVALS(1, 0));
  tb_free(&t);
  tb_init(&t);
  /* u32 4294967295 / 2 = 2147483647; s64 INT64_MIN / -1 = INT64_MIN */
  r = bin_i(&t, IR_OP_DIVIDE, SH(IR_U32, 1), SH(IR_U32, 1), NULL, IVALS(4294967295LL), IVALS(2));
  expect_i(r, IVALS(2147483647));
  tb_free(&t);
  tb_init(&t);
  r = bin_i(&t, IR_OP_DIVIDE, SH(IR_S64, 2), SH(IR_S64, 2), NULL, IVALS(INT64_MIN, -7),
            IVALS(-1, 2));
  expect_i(r, IVALS(INT64_MIN, -3));
  tb_free(&t);
}

static void shifts_and_bit_counts_per_width(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* an arithmetic shift of an unsigned type fills with its top bit */
  ir_literal *r = bin_i(&t, IR_OP_SHR_A, SH(IR_U8, 3), SH(IR_U8, 3), NULL, IVALS(0x80, 0x40, 0x80),
                        IVALS(1, 1, 8));
  expect_i(r, IVALS(0xC0, 0x20, 0xFF));
  tb_free(&t);
  tb_init(&t);
  r = bin_i(&t, IR_OP_SHL, SH(IR_S16, 3), SH(IR_S16, 3), NULL, IVALS(1, 1, 1), IVALS(15, 16, -1));
  expect_i(r, IVALS(-32768, 0, 0));
  tb_free(&t);
  tb_init(&t);
  r = bin_i(&t, IR_OP_SHR_L, SH(IR_U64, 2), SH(IR_U64, 2), NULL, IVALS(-1, -1), IVALS(63, 64));
  expect_i(r, IVALS(1, 0));
  tb_free(&t);
  tb_init(&t);
  r = un(&t, IR_OP_CLZ, SH(IR_U16, 3), SH(IR_U16, 3), lit_i(&t, SH(IR_U16, 3), IVALS(1, 0, 0x8000)));
  expect_i(r, IVALS(15, 16, 0));
  tb_free(&t);
  tb_init(&t);
  r = un(&t, IR_OP_POPCNT, SH(IR_S64, 2), SH(IR_S64, 2), lit_i(&t, SH(IR_S64, 2), IVALS(-1, 255)));
  expect_i(r, IVALS(64, 8));
  tb_free(&t);
  tb_init(&t);
  r = un(&t, IR_OP_NOT, SH(IR_U8, 1), SH(IR_U8, 1), lit_i(&t, SH(IR_U8, 1), IVALS(5)));
  expect_i(r, IVALS(250));
  tb_free(&t);
}

static void converts_saturate_and_round_once(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* f32 -> u8: truncate, saturate to [0, 255], NaN -> 0 */
  ir_literal *r = un(&t, IR_OP_CONVERT, SH(IR_F32, 4), SH(IR_U8, 4),
                     tb_lit(&t, SH(IR_F32, 4), A(300, -5, NAN, 7.9), 4));
  expect_i(r, IVALS(255, 0, 0, 7));
  tb_free(&t);
  tb_init(&t);
  r = un(&t, IR_OP_CONVERT, SH(IR_F64, 3), SH(IR_S64, 3),
         tb_lit(&t, SH(IR_F64, 3), A(1e19, -1e19, -2.5), 3));
  expect_i(r, IVALS(INT64_MAX, INT64_MIN, -2));
  tb_free(&t);
  tb_init(&t);
  /* u64 max -> f32 rounds to 2^64; -> f64 likewise */
  r = un(&t, IR_OP_CONVERT, SH(IR_U64, 1), SH(IR_F32, 1), lit_i(&t, SH(IR_U64, 1), IVALS(-1)));
  expect_f(r, VALS(18446744073709551616.0));
  tb_free(&t);
  tb_init(&t);
  /* u32 2^31 + 2^23 + 1 -> bf16: just above the tie between 2^31 and
   * 2^31 + 2^24, so it rounds up; rounding through f32 to nearest would
   * land on the tie and give 2^31. */
  r = un(&t, IR_OP_CONVERT, SH(IR_U32, 1), SH(IR_BF16, 1),
         lit_i(&t, SH(IR_U32, 1), IVALS(2147483648LL + 8388608 + 1)));
  expect_f(r, VALS(2164260864.0));
  tb_free(&t);
  tb_init(&t);
  /* f64 1 + 2^-8 + 2^-40 -> bf16: above the tie, 1 + 2^-7 */
  r = un(&t, IR_OP_CONVERT, SH(IR_F64, 1), SH(IR_BF16, 1),
         tb_lit(&t, SH(IR_F64, 1), A(1 + ldexp(1, -8) + ldexp(1, -40)), 1));
  expect_f(r, VALS(1 + ldexp(1, -7)));
  tb_free(&t);
  tb_init(&t);
  /* s8 -1 -> u16 wraps to 65535; u16 65535 -> s16 wraps to -1 */
  r = un(&t, IR_OP_CONVERT, SH(IR_S8, 1), SH(IR_U16, 1), lit_i(&t, SH(IR_S8, 1), IVALS(-1)));
  expect_i(r, IVALS(65535));
  tb_free(&t);
}

static void f64_computes_in_double(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* 0.1 + 0.2 in double is 0.30000000000000004 (in f32 it would be
   * 0.300000011920928955...); exp(1) and sqrt(2) to the last bit. */
  ir_literal *x = tb_lit(&t, SH(IR_F64, 1), A(0.1), 1), *y = tb_lit(&t, SH(IR_F64, 1), A(0.2), 1);
  ir_id s = OP2(&t, IR_OP_ADD, SH(IR_F64, 1), NULL, tb_param(&t, 0, SH(IR_F64, 1)),
                tb_param(&t, 1, SH(IR_F64, 1)));
  ir_literal *args[2] = {x, y};
  ir_literal *r = tb_run(&t, s, args, 2);
  assert_true(f64_at(r, 0) == 0.30000000000000004);
  tb_free(&t);
  tb_init(&t);
  r = un(&t, IR_OP_EXP, SH(IR_F64, 1), SH(IR_F64, 1), tb_lit(&t, SH(IR_F64, 1), A(1), 1));
  assert_true(f64_at(r, 0) == 2.718281828459045);
  tb_free(&t);
  tb_init(&t);
  r = un(&t, IR_OP_SQRT, SH(IR_F64, 1), SH(IR_F64, 1), tb_lit(&t, SH(IR_F64, 1), A(2), 1));
  assert_true(f64_at(r, 0) == 1.4142135623730951);
  tb_free(&t);
  tb_init(&t);
  /* a dot accumulates in double: [0.1, 0.2] . [1, 1] */
  ir_attrs d = ir_attrs_none;
  d.lhs_contracting = INTS(0);
  d.rhs_contracting = INTS(0);
  ir_id dot = OP2(&t, IR_OP_DOT, SCALAR(IR_F64), &d, tb_param(&t, 0, SH(IR_F64, 2)),
                  tb_param(&t, 1, SH(IR_F64, 2)));
  ir_literal *dargs[2] = {tb_lit(&t, SH(IR_F64, 2), A(0.1, 0.2), 2),
                          tb_lit(&t, SH(IR_F64, 2), A(1, 1), 2)};
  r = tb_run(&t, dot, dargs, 2);
  assert_true(f64_at(r, 0) == 0.30000000000000004);
  tb_free(&t);
  tb_init(&t);
  /* a reduce folds in double */
  ir_comp_id add = tb_binary_comp(&t, IR_OP_ADD, IR_F64);
  ir_attrs rd = ir_attrs_none;
  rd.dimensions = INTS(0);
  ir_id red = tb_op(&t, IR_OP_REDUCE, SCALAR(IR_F64), &rd, 2,
                    (ir_id[]){tb_param(&t, 0, SH(IR_F64, 3)), tb_scalar(&t, IR_F64, 0)}, 1, &add);
  ir_literal *rarg = tb_lit(&t, SH(IR_F64, 3), A(0.1, 0.2, 1e-17), 3);
  r = tb_run(&t, red, &rarg, 1);
  assert_true(f64_at(r, 0) == 0.30000000000000004 + 1e-17);
  tb_free(&t);
}

static void iota_and_total_order_on_wide_types(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_attrs io = ir_attrs_none;
  io.index = 0;
  ir_literal *r = tb_run(&t, tb_op(&t, IR_OP_IOTA, SH(IR_U16, 3), &io, 0, NULL, 0, NULL), NULL, 0);
  expect_i(r, IVALS(0, 1, 2));
  tb_free(&t);
  tb_init(&t);
  ir_attrs to = ir_attrs_none;
  to.cmp_dir = IR_CMP_LT;
  to.cmp_type = IR_CMPT_TOTALORDER;
  ir_id c = OP2(&t, IR_OP_COMPARE, SH(IR_PRED, 3), &to, tb_param(&t, 0, SH(IR_F64, 3)),
                tb_param(&t, 1, SH(IR_F64, 3)));
  ir_literal *args[2] = {tb_lit(&t, SH(IR_F64, 3), A(-0.0, -NAN, 1), 3),
                         tb_lit(&t, SH(IR_F64, 3), A(0.0, -INFINITY, 1 + ldexp(1, -52)), 3)};
  r = tb_run(&t, c, args, 2);
  expect_i(r, IVALS(1, 1, 1));
  tb_free(&t);
}

static void tensor_text_round_trips(void **state) {
  (void)state;
  arena *a = arena_create();
  char err[256];
  ir_named_literal *l;
  int n;
  assert_int_equal(ir_tensor_parse(a, "3xu64=18446744073709551615 0 7", &l, &n, err, sizeof err),
                   ST_OK);
  strbuf b;
  sb_init(&b);
  ir_tensor_print(&b, l[0].lit, 0);
  assert_string_equal(sb_str(&b), "3xu64=18446744073709551615 0 7");
  b.len = 0;
  assert_int_equal(ir_tensor_parse(a, "2xf64=0.1 -1e300", &l, &n, err, sizeof err), ST_OK);
  ir_tensor_print(&b, l[0].lit, 0);
  assert_string_equal(sb_str(&b), "2xf64=0.1 -1e+300");
  b.len = 0;
  assert_int_equal(ir_tensor_parse(a, "2xi64=-9223372036854775808 1", &l, &n, err, sizeof err),
                   ST_OK);
  ir_tensor_print(&b, l[0].lit, 0);
  assert_string_equal(sb_str(&b), "2xs64=-9223372036854775808 1");
  sb_free(&b);
  assert_int_equal(ir_tensor_parse(a, "1xu8=256", &l, &n, err, sizeof err), ST_INVALID_ARGUMENT);
  assert_string_equal(err, "value 0: 256 is out of range for u8");
  assert_int_equal(ir_tensor_parse(a, "1xu16=-1", &l, &n, err, sizeof err), ST_INVALID_ARGUMENT);
  assert_int_equal(ir_tensor_parse(a, "1xs16=32768", &l, &n, err, sizeof err), ST_INVALID_ARGUMENT);
  arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(wrap_at_every_width),
      cmocka_unit_test(unsigned_divide_compare_and_max),
      cmocka_unit_test(shifts_and_bit_counts_per_width),
      cmocka_unit_test(converts_saturate_and_round_once),
      cmocka_unit_test(f64_computes_in_double),
      cmocka_unit_test(iota_and_total_order_on_wide_types),
      cmocka_unit_test(tensor_text_round_trips),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
