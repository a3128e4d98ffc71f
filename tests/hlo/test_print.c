/* test_print.c: the HLO printer on hand-built IR (no parser involved).
 * Expected strings are derived by hand from XLA's printing rules (the
 * float spellings from C's %.6g/%.9g/%.4g/%.5g on the exact values). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "frontend/frontend.h"

static ir_literal *lit(arena *a, ir_type t, int rank, const int64_t *dims) {
  ir_shape s = ir_shape_array(t, rank, dims);
  ir_literal *l = ir_literal_create(a, &s);
  assert_non_null(l);
  return l;
}

static void expect_literal(const ir_literal *l, const char *want) {
  strbuf b;
  sb_init(&b);
  ir_literal_print(&b, l);
  assert_string_equal(sb_str(&b), want);
  sb_free(&b);
}

static void set_f32_bits(ir_literal *l, int64_t i, uint32_t bits) {
  memcpy((char *)l->data + 4 * i, &bits, 4);
}

static void f32_spellings(void **state) {
  (void)state;
  arena *a = arena_create();
  int64_t n = 9;
  ir_literal *l = lit(a, IR_F32, 1, &n);
  float *f = l->data;
  f[0] = 0.1f;              /* %.6g reads back: 0.1 */
  f[1] = 1.0f / 3.0f;       /* needs 9 digits */
  f[2] = 16777216.0f;       /* %.6g is 1.67772e+07, which does not read back */
  f[3] = -0.0f;
  f[4] = 1e30f;
  set_f32_bits(l, 5, 0x00000001u); /* smallest subnormal */
  set_f32_bits(l, 6, 0x7f800000u); /* inf */
  set_f32_bits(l, 7, 0xff800000u); /* -inf */
  set_f32_bits(l, 8, 0x7fc00000u); /* default quiet NaN */
  expect_literal(l, "{0.1, 0.333333343, 16777216, -0, 1e+30, 1.4013e-45, inf, -inf, nan}");
  arena_destroy(a);
}

static void nan_payloads(void **state) {
  (void)state;
  arena *a = arena_create();
  int64_t n = 2;
  ir_literal *f = lit(a, IR_F32, 1, &n);
  set_f32_bits(f, 0, 0x7f800001u); /* signalling, payload 1 */
  set_f32_bits(f, 1, 0xffffffffu); /* negative, all payload bits */
  expect_literal(f, "{nan(0x1), -nan(0x7fffff)}");
  ir_literal *b = lit(a, IR_BF16, 1, &n);
  ((uint16_t *)b->data)[0] = 0x7fc0; /* default quiet */
  ((uint16_t *)b->data)[1] = 0xffc1; /* negative, payload 0x41 */
  expect_literal(b, "{nan, -nan(0x41)}");
  ir_literal *h = lit(a, IR_F16, 1, &n);
  ((uint16_t *)h->data)[0] = 0x7e00; /* default quiet */
  ((uint16_t *)h->data)[1] = 0x7c01; /* payload 1 */
  expect_literal(h, "{nan, nan(0x1)}");
  arena_destroy(a);
}

static void half_spellings(void **state) {
  (void)state;
  arena *a = arena_create();
  int64_t n = 4;
  ir_literal *b = lit(a, IR_BF16, 1, &n);
  uint16_t *bv = b->data;
  bv[0] = 0x3f80; /* 1 */
  bv[1] = 0x4049; /* 3.140625 -> %.4g 3.141 */
  bv[2] = 0x43fa; /* 500 */
  bv[3] = 0xff80; /* -inf */
  expect_literal(b, "{1, 3.141, 500, -inf}");
  ir_literal *h = lit(a, IR_F16, 1, &n);
  uint16_t *hv = h->data;
  hv[0] = 0x0001; /* 2^-24 = 5.96046448e-08 -> %.5g 5.9605e-08 */
  hv[1] = 0x7bff; /* 65504 */
  hv[2] = 0x2e66; /* 0.0999755859375 -> 0.099976 */
  hv[3] = 0x8000; /* -0 */
  expect_literal(h, "{5.9605e-08, 65504, 0.099976, -0}");
  arena_destroy(a);
}

static void ints_and_preds(void **state) {
  (void)state;
  arena *a = arena_create();
  int64_t n = 3;
  ir_literal *s8 = lit(a, IR_S8, 1, &n);
  ((int8_t *)s8->data)[0] = -128;
  ((int8_t *)s8->data)[2] = 127;
  expect_literal(s8, "{-128, 0, 127}");
  ir_literal *s32 = lit(a, IR_S32, 0, NULL);
  *(int32_t *)s32->data = INT32_MIN;
  expect_literal(s32, "-2147483648");
  ir_literal *p0 = lit(a, IR_PRED, 0, NULL);
  *(uint8_t *)p0->data = 1;
  expect_literal(p0, "true"); /* scalars spell out the value ... */
  ir_literal *p1 = lit(a, IR_PRED, 1, &n);
  ((uint8_t *)p1->data)[1] = 1;
  expect_literal(p1, "{0, 1, 0}"); /* ... arrays use digits */
  arena_destroy(a);
}

static void nesting(void **state) {
  (void)state;
  arena *a = arena_create();
  int64_t d2[2] = {2, 2}, d4[4] = {2, 1, 1, 2}, e[1] = {0}, e4[4] = {2, 0, 4, 3},
          col[2] = {2, 1};
  ir_literal *m = lit(a, IR_S32, 2, d2);
  for (int i = 0; i < 4; i++) ((int32_t *)m->data)[i] = i + 1;
  expect_literal(m, "{ { 1, 2 }, { 3, 4 } }");
  ir_literal *c = lit(a, IR_S32, 2, col);
  ((int32_t *)c->data)[0] = 1;
  ((int32_t *)c->data)[1] = 2;
  expect_literal(c, "{ {1}, {2} }");
  ir_literal *r4 = lit(a, IR_S32, 4, d4);
  for (int i = 0; i < 4; i++) ((int32_t *)r4->data)[i] = i + 1;
  expect_literal(r4, "{ { /*i0=0*/ { /*i1=0*/ { 1, 2 } } }, { /*i0=1*/ { /*i1=0*/ { 3, 4 } } } }");
  expect_literal(lit(a, IR_F32, 1, e), "{}");
  expect_literal(lit(a, IR_F32, 4, e4), "{ { /*i0=0*/ }, { /*i0=1*/ } }");
  /* a tuple literal: ( element, element ) */
  ir_shape el[2] = {ir_shape_scalar(IR_F32), ir_shape_array(IR_S32, 2, d2)};
  ir_shape ts = {0};
  ts.type = IR_TUPLE;
  ts.ntuple = 2;
  ts.tuple = el;
  ir_literal *t = ir_literal_create(a, &ts);
  *(float *)t->elems[0]->data = 2.5f;
  memcpy(t->elems[1]->data, m->data, 16);
  expect_literal(t, "( 2.5, { { 1, 2 }, { 3, 4 } } )");
  arena_destroy(a);
}

/* A small module built by hand, printed in both styles. */
static void module_long_and_short(void **state) {
  (void)state;
  ir_module *m = ir_module_create("demo");
  ir_comp_id c = ir_comp_add(m, "main");
  int64_t d[2] = {2, 3};
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_PARAMETER;
  in.name = "x";
  in.shape = ir_shape_array(IR_F32, 2, d);
  in.a.preferred_type = IR_TYPE_INVALID;
  ir_id x = ir_inst_add(m, c, &in);
  memset(&in, 0, sizeof in);
  in.op = IR_OP_CONSTANT;
  in.name = "one";
  in.shape = ir_shape_scalar(IR_F32);
  in.a.preferred_type = IR_TYPE_INVALID;
  in.a.literal = ir_literal_create(m->arena, &in.shape);
  *(float *)in.a.literal->data = 1.0f;
  ir_id one = ir_inst_add(m, c, &in);
  memset(&in, 0, sizeof in);
  in.op = IR_OP_BROADCAST;
  in.name = "b";
  in.shape = ir_shape_array(IR_F32, 2, d);
  in.a.preferred_type = IR_TYPE_INVALID;
  in.nops = 1;
  in.ops = &one;
  ir_id b = ir_inst_add(m, c, &in);
  ir_id ab[2] = {x, b};
  memset(&in, 0, sizeof in);
  in.op = IR_OP_ADD;
  in.name = "sum";
  in.shape = ir_shape_array(IR_F32, 2, d);
  in.a.preferred_type = IR_TYPE_INVALID;
  in.nops = 2;
  in.ops = ab;
  in.meta.op_name = "a \"quoted\" name";
  in.meta.source_line = 7;
  ir_id sum = ir_inst_add(m, c, &in);
  ir_comp_get(m, c)->root = sum;
  ir_comp_finish(m, c);
  m->entry = c;

  strbuf s;
  sb_init(&s);
  ir_print_module(&s, m);
  assert_string_equal(
      sb_str(&s),
      "HloModule demo, entry_computation_layout={(f32[2,3]{1,0})->f32[2,3]{1,0}}\n"
      "\n"
      "ENTRY %main (x: f32[2,3]) -> f32[2,3] {\n"
      "  %x = f32[2,3]{1,0} parameter(0)\n"
      "  %one = f32[] constant(1)\n"
      "  %b = f32[2,3]{1,0} broadcast(f32[] %one), dimensions={}\n"
      "  ROOT %sum = f32[2,3]{1,0} add(f32[2,3]{1,0} %x, f32[2,3]{1,0} %b), "
      "metadata={op_name=\"a \\\"quoted\\\" name\" source_line=7}\n"
      "}\n");
  sb_free(&s);
  sb_init(&s);
  ir_print_module_style(&s, m, IR_PRINT_SHORT);
  assert_string_equal(
      sb_str(&s),
      "HloModule demo, entry_computation_layout={(f32[2,3]{1,0})->f32[2,3]{1,0}}\n"
      "\n"
      "ENTRY main {\n"
      "  x = f32[2,3]{1,0} parameter(0)\n"
      "  one = f32[] constant(1)\n"
      "  b = f32[2,3]{1,0} broadcast(one), dimensions={}\n"
      "  ROOT sum = f32[2,3]{1,0} add(x, b), metadata={op_name=\"a \\\"quoted\\\" name\" "
      "source_line=7}\n"
      "}\n");
  /* and it reads back to the same text */
  diag *dg = diag_create();
  ir_module *m2 = fe_parse_hlo("short.hlo", sb_str(&s), s.len, dg);
  assert_non_null(m2);
  strbuf s2;
  sb_init(&s2);
  ir_print_module_style(&s2, m2, IR_PRINT_SHORT);
  assert_string_equal(sb_str(&s2), sb_str(&s));
  /* the metadata string was decoded on the way in */
  ir_comp *mc = ir_comp_get(m2, m2->entry);
  assert_string_equal(mc->insts.v[mc->root].info->meta.op_name, "a \"quoted\" name");
  assert_int_equal(mc->insts.v[mc->root].info->loc.line, 7);
  assert_int_equal(mc->insts.v[mc->root].info->loc.col, 8);
  sb_free(&s2);
  sb_free(&s);
  ir_module_destroy(m2);
  diag_destroy(dg);
  ir_module_destroy(m);
}

/* Values read from text land bit-exactly where the printer says they are. */
static void parse_exact_values(void **state) {
  (void)state;
  const char *text =
      "HloModule v\n"
      "ENTRY e {\n"
      "  ROOT t = (bf16[3], f16[2], f32[2]) constant(( {1.00390625, 1.01171875, -0}, "
      "{65519, 1}, {nan(0x2), -1.17549421e-38} ))\n"
      "}\n";
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("v.hlo", text, strlen(text), d);
  assert_non_null(m);
  ir_comp *c = ir_comp_get(m, m->entry);
  const ir_literal *l = c->insts.v[c->root].a->literal;
  const uint16_t *bf = l->elems[0]->data, *h = l->elems[1]->data;
  uint32_t f[2];
  memcpy(f, l->elems[2]->data, 8);
  /* bf16 ties: 1 + 2^-8 is halfway between 1 (0x3f80, even) and 0x3f81 */
  assert_int_equal(bf[0], 0x3f80);
  /* 1 + 3*2^-8 is halfway between 0x3f81 and 0x3f82 (even) */
  assert_int_equal(bf[1], 0x3f82);
  assert_int_equal(bf[2], 0x8000);
  /* f16: 65519 is below the halfway point 65520 and rounds to 65504 */
  assert_int_equal(h[0], 0x7bff);
  assert_int_equal(h[1], 0x3c00);
  assert_int_equal(f[0], 0x7f800002u);
  assert_int_equal(f[1], 0x807fffffu); /* largest negative subnormal */
  ir_module_destroy(m);
  diag_destroy(d);
  /* 65520 is out of range for f16 (rounds to infinity) */
  d = diag_create();
  const char *bad = "ENTRY e {\n  ROOT c = f16[] constant(65520)\n}\n";
  assert_null(fe_parse_hlo("b.hlo", bad, strlen(bad), d));
  assert_string_equal(diag_first_message(d), "value 65520 is out of range for f16");
  diag_destroy(d);
  d = diag_create();
  const char *ok = "ENTRY e {\n  ROOT c = f16[] constant(65519)\n}\n";
  m = fe_parse_hlo("o.hlo", ok, strlen(ok), d);
  assert_non_null(m);
  c = ir_comp_get(m, m->entry);
  assert_int_equal(*(const uint16_t *)c->insts.v[c->root].a->literal->data, 0x7bff);
  ir_module_destroy(m);
  diag_destroy(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(f32_spellings),   cmocka_unit_test(nan_payloads),
      cmocka_unit_test(half_spellings),  cmocka_unit_test(ints_and_preds),
      cmocka_unit_test(nesting),         cmocka_unit_test(module_long_and_short),
      cmocka_unit_test(parse_exact_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
