/* test_types.c: element types, the op table, and the exact bf16/f16
 * conversions, against bit patterns derived by hand from IEEE 754:
 *   bf16 = the top 16 bits of an f32, rounded to nearest, ties to even;
 *   f16  = 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
#include <math.h>

#include "ir_test_util.h"

static float f32_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint32_t bits_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static void type_names_sizes_and_lookup(void **st) {
  (void)st;
  assert_string_equal(ir_type_name(IR_BF16), "bf16");
  assert_string_equal(ir_type_name(IR_TUPLE), "tuple");
  assert_int_equal(ir_type_size(IR_PRED), 1);
  assert_int_equal(ir_type_size(IR_F16), 2);
  assert_int_equal(ir_type_size(IR_S32), 4);
  assert_int_equal(ir_type_from_name("s8", 2), IR_S8);
  assert_int_equal(ir_type_from_name("f32x", 3), IR_F32); /* length-bounded */
  assert_int_equal(ir_type_from_name("f64", 3), IR_F64);
  assert_int_equal(ir_type_from_name("f8e5m2", 6), IR_TYPE_INVALID);
  assert_int_equal(ir_type_from_name("", 0), IR_TYPE_INVALID);
  assert_true(ir_type_is_float(IR_BF16) && !ir_type_is_float(IR_S32));
  assert_true(ir_type_is_int(IR_S8) && !ir_type_is_int(IR_PRED));
  /* every type imports; the thirteen of libtpucc's list are core */
  assert_int_equal(ir_type_size(IR_S64), 8);
  assert_int_equal(ir_type_size(IR_C128), 16);
  assert_int_equal(ir_type_size(IR_TOKEN), 0);
  assert_true(ir_type_is_int(IR_U64) && ir_type_is_unsigned(IR_U4) && !ir_type_is_unsigned(IR_S4));
  assert_true(ir_type_is_float(IR_F64) && ir_type_is_complex(IR_C64) && !ir_type_is_float(IR_C64));
  assert_true(ir_type_is_core(IR_F32) && ir_type_is_core(IR_S64) && ir_type_is_core(IR_F64));
  assert_true(!ir_type_is_core(IR_S4) && !ir_type_is_core(IR_C64) && !ir_type_is_core(IR_TOKEN));
}

static void op_table_spellings_arity_flags(void **st) {
  (void)st;
  assert_string_equal(ir_op_name(IR_OP_GET_TUPLE_ELEMENT), "get-tuple-element");
  assert_int_equal(ir_op_from_name("reduce-window", 13), IR_OP_REDUCE_WINDOW);
  assert_int_equal(ir_op_from_name("reduce", 6), IR_OP_REDUCE);
  assert_int_equal(ir_op_from_name("frobnicate", 10), IR_OP__COUNT);
  assert_int_equal(ir_op_arity(IR_OP_PAD), 2);
  assert_int_equal(ir_op_arity(IR_OP_CONCATENATE), -1);
  assert_int_equal(ir_op_arity(IR_OP_SELECT), 3);
  assert_true(ir_op_flags(IR_OP_REDUCE) & OPF_CALLS);
  assert_true(ir_op_flags(IR_OP_EXP) & OPF_FLOAT);
  assert_false(ir_op_flags(IR_OP_DOT) & OPF_ELEMWISE);
  /* every spelling maps back to its op */
  for (int op = 0; op < IR_OP__COUNT; op++)
    assert_int_equal(ir_op_from_name(ir_op_name((ir_op)op), strlen(ir_op_name((ir_op)op))), op);
}

static void bf16_exact_values(void **st) {
  (void)st;
  assert_int_equal(ir_f32_to_bf16(1.0f), 0x3F80);
  assert_int_equal(ir_f32_to_bf16(-2.5f), 0xC020);
  assert_int_equal(ir_f32_to_bf16(0.0f), 0x0000);
  assert_int_equal(ir_f32_to_bf16(-0.0f), 0x8000);
  assert_int_equal(bits_f32(ir_bf16_to_f32(0x3F81)), 0x3F810000u); /* 1.0078125 */
  assert_true(ir_bf16_to_f32(0x3F81) == 1.0078125f);
  assert_true(ir_bf16_to_f32(0xC020) == -2.5f);
}

static void bf16_rounds_to_nearest_ties_to_even(void **st) {
  (void)st;
  /* 1 + 2^-8 lies halfway between 0x3F80 and 0x3F81: even 0x3F80 */
  assert_int_equal(ir_f32_to_bf16(f32_bits(0x3F808000u)), 0x3F80);
  /* 1 + 3*2^-8 lies halfway between 0x3F81 and 0x3F82: even 0x3F82 */
  assert_int_equal(ir_f32_to_bf16(f32_bits(0x3F818000u)), 0x3F82);
  assert_int_equal(ir_f32_to_bf16(f32_bits(0x3F808001u)), 0x3F81); /* just above half */
  assert_int_equal(ir_f32_to_bf16(f32_bits(0x3F807FFFu)), 0x3F80); /* just below half */
  assert_int_equal(ir_f32_to_bf16(f32_bits(0xBF818000u)), 0xBF82); /* sign symmetric */
  /* the carry ripples into the exponent: 0x3FFF8000 -> 2.0 */
  assert_int_equal(ir_f32_to_bf16(f32_bits(0x3FFF8000u)), 0x4000);
  /* f32 subnormals round the same way */
  assert_int_equal(ir_f32_to_bf16(f32_bits(0x00008000u)), 0x0000);
  assert_int_equal(ir_f32_to_bf16(f32_bits(0x00018000u)), 0x0002);
}

static void bf16_inf_nan_and_overflow(void **st) {
  (void)st;
  assert_int_equal(ir_f32_to_bf16(INFINITY), 0x7F80);
  assert_int_equal(ir_f32_to_bf16(-INFINITY), 0xFF80);
  assert_int_equal(ir_f32_to_bf16(f32_bits(0x7FC00000u)), 0x7FC0);
  /* a signalling NaN whose payload lives in the low bits stays a NaN */
  uint16_t h = ir_f32_to_bf16(f32_bits(0x7F800001u));
  assert_int_equal(h & 0x7F80, 0x7F80);
  assert_int_not_equal(h & 0x007F, 0);
  assert_true(isnan(ir_bf16_to_f32(h)));
  assert_int_equal(ir_f32_to_bf16(f32_bits(0xFFC00000u)) & 0x8000, 0x8000);
  /* FLT_MAX rounds up past the largest bf16 (0x7F7F) to infinity */
  assert_int_equal(ir_f32_to_bf16(f32_bits(0x7F7FFFFFu)), 0x7F80);
  assert_int_equal(ir_f32_to_bf16(f32_bits(0x7F7F7FFFu)), 0x7F7F);
  assert_int_equal(ir_f32_to_bf16(f32_bits(0x7F7F8000u)), 0x7F80); /* tie, 0x7F7F odd */
  assert_true(isinf(ir_bf16_to_f32(0x7F80)));
}

static void f16_exact_values(void **st) {
  (void)st;
  assert_int_equal(ir_f32_to_f16(1.0f), 0x3C00);
  assert_int_equal(ir_f32_to_f16(-2.0f), 0xC000);
  assert_int_equal(ir_f32_to_f16(65504.0f), 0x7BFF);
  assert_int_equal(ir_f32_to_f16(0.1f), 0x2E66); /* 0.0999755859375 */
  assert_int_equal(ir_f32_to_f16(-0.0f), 0x8000);
  assert_true(ir_f16_to_f32(0x7BFF) == 65504.0f);
  assert_true(ir_f16_to_f32(0x3555) == 0.333251953125f);
  assert_true(ir_f16_to_f32(0x2E66) == 0.0999755859375f);
  assert_true(ir_f16_to_f32(0xC000) == -2.0f);
}

static void f16_rounds_to_nearest_ties_to_even(void **st) {
  (void)st;
  /* mantissa step at 1.0 is 2^-10; 1 + 2^-11 is a tie -> 0x3C00 */
  assert_int_equal(ir_f32_to_f16(1.0f + 0x1p-11f), 0x3C00);
  assert_int_equal(ir_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);
  assert_int_equal(ir_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
  /* 2047.5 .. : step 1 at [1024, 2048): 1025.5 is a tie -> 1026 (0x6402) */
  assert_int_equal(ir_f32_to_f16(1025.5f), 0x6402);
  assert_int_equal(ir_f32_to_f16(1024.5f), 0x6400);
}

static void f16_overflow_to_inf(void **st) {
  (void)st;
  /* the largest f16 is 65504 and the step there is 32: 65520 is the tie,
   * rounding to even goes up to infinity */
  assert_int_equal(ir_f32_to_f16(65519.0f), 0x7BFF);
  assert_int_equal(ir_f32_to_f16(65520.0f), 0x7C00);
  assert_int_equal(ir_f32_to_f16(-65520.0f), 0xFC00);
  assert_int_equal(ir_f32_to_f16(1e10f), 0x7C00);
  assert_int_equal(ir_f32_to_f16(INFINITY), 0x7C00);
  assert_int_equal(ir_f32_to_f16(-INFINITY), 0xFC00);
  assert_true(isinf(ir_f16_to_f32(0xFC00)) && ir_f16_to_f32(0xFC00) < 0);
}

static void f16_nan_stays_nan(void **st) {
  (void)st;
  uint16_t h = ir_f32_to_f16(NAN);
  assert_int_equal(h & 0x7C00, 0x7C00);
  assert_int_not_equal(h & 0x03FF, 0);
  h = ir_f32_to_f16(f32_bits(0x7F800001u)); /* payload only in low bits */
  assert_int_equal(h & 0x7C00, 0x7C00);
  assert_int_not_equal(h & 0x03FF, 0);
  assert_true(isnan(ir_f16_to_f32(0x7E00)));
  assert_true(isnan(ir_f16_to_f32(0x7C01)));
}

static void f16_subnormals(void **st) {
  (void)st;
  /* subnormal step is 2^-24 */
  assert_int_equal(ir_f32_to_f16(0x1p-24f), 0x0001);
  assert_int_equal(ir_f32_to_f16(1023 * 0x1p-24f), 0x03FF);  /* largest subnormal */
  assert_int_equal(ir_f32_to_f16(0x1p-14f), 0x0400);         /* smallest normal */
  assert_int_equal(ir_f32_to_f16(1023.5f * 0x1p-24f), 0x0400); /* tie, up to even */
  assert_int_equal(ir_f32_to_f16(0x1p-25f), 0x0000);         /* tie with 0: even */
  assert_int_equal(ir_f32_to_f16(f32_bits(0x33000001u)), 0x0001); /* just above */
  assert_int_equal(ir_f32_to_f16(1.5f * 0x1p-24f), 0x0002);  /* tie 1|2 -> 2 */
  assert_int_equal(ir_f32_to_f16(2.5f * 0x1p-24f), 0x0002);  /* tie 2|3 -> 2 */
  assert_int_equal(ir_f32_to_f16(-3 * 0x1p-24f), 0x8003);
  assert_int_equal(ir_f32_to_f16(0x1p-30f), 0x0000);
  assert_true(ir_f16_to_f32(0x0001) == 0x1p-24f);
  assert_true(ir_f16_to_f32(0x03FF) == 1023 * 0x1p-24f);
  assert_true(ir_f16_to_f32(0x8001) == -0x1p-24f);
}

static void f16_roundtrip_all_finite_values(void **st) {
  (void)st;
  /* every finite f16 widens exactly and narrows back to itself */
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7C00) == 0x7C00) continue;
    assert_int_equal(ir_f32_to_f16(ir_f16_to_f32((uint16_t)h)), h);
  }
}

static void literal_store_rounds_once(void **st) {
  (void)st;
  arena *a = arena_create();
  ir_shape s = ir_shape_array(IR_BF16, 1, (int64_t[]){2});
  ir_literal *l = ir_literal_create(a, &s);
  /* 1 + 2^-8 + 2^-30 is just above a bf16 tie: the nearest bf16 is
   * 1 + 2^-7 (0x3F81). Going through f32 first would land on the tie and
   * round to 0x3F80. */
  ir_literal_set_f64(l, 0, 1.0 + 0x1p-8 + 0x1p-30);
  ir_literal_set_f64(l, 1, 1.0 + 0x1p-8);
  assert_int_equal(((uint16_t *)l->data)[0], 0x3F81);
  assert_int_equal(((uint16_t *)l->data)[1], 0x3F80);
  s.type = IR_F16;
  l = ir_literal_create(a, &s);
  ir_literal_set_f64(l, 0, 1.0 + 0x1p-11 + 0x1p-40);
  ir_literal_set_f64(l, 1, 70000.0);
  assert_int_equal(((uint16_t *)l->data)[0], 0x3C01);
  assert_int_equal(((uint16_t *)l->data)[1], 0x7C00);
  assert_true(ir_literal_get_f64(l, 0) == 1.0 + 0x1p-10);
  arena_destroy(a);
}

static void literal_int_stores_wrap_and_saturate(void **st) {
  (void)st;
  arena *a = arena_create();
  ir_shape s = ir_shape_array(IR_S8, 1, (int64_t[]){3});
  ir_literal *l = ir_literal_create(a, &s);
  ir_literal_set_i64(l, 0, 200);     /* wraps: 200 - 256 */
  ir_literal_set_f64(l, 1, 200.0);   /* float -> int saturates */
  ir_literal_set_f64(l, 2, NAN);     /* NaN -> 0 */
  assert_int_equal(ir_literal_get_i64(l, 0), -56);
  assert_int_equal(ir_literal_get_i64(l, 1), 127);
  assert_int_equal(ir_literal_get_i64(l, 2), 0);
  s.type = IR_PRED;
  l = ir_literal_create(a, &s);
  ir_literal_set_i64(l, 0, 5);
  assert_int_equal(((uint8_t *)l->data)[0], 1);
  arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(type_names_sizes_and_lookup),
      cmocka_unit_test(op_table_spellings_arity_flags),
      cmocka_unit_test(bf16_exact_values),
      cmocka_unit_test(bf16_rounds_to_nearest_ties_to_even),
      cmocka_unit_test(bf16_inf_nan_and_overflow),
      cmocka_unit_test(f16_exact_values),
      cmocka_unit_test(f16_rounds_to_nearest_ties_to_even),
      cmocka_unit_test(f16_overflow_to_inf),
      cmocka_unit_test(f16_nan_stays_nan),
      cmocka_unit_test(f16_subnormals),
      cmocka_unit_test(f16_roundtrip_all_finite_values),
      cmocka_unit_test(literal_store_rounds_once),
      cmocka_unit_test(literal_int_stores_wrap_and_saturate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
