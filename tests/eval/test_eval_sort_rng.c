/* test_eval_sort_rng.c: the evaluator's sort, topk, TopK custom-call and
 * rng against hand-derived values, and the random bit generators against
 * Random123's published known-answer vectors and XLA's definitions of
 * rng-bit-generator (counter per element, state update). */
#include "eval_test.h"

#include "frontend/frontend.h"
#include "passes/passes.h"

/* Parses HLO text, evaluates with args; asserts success. */
static ir_literal *run_text(tb *t, const char *text, ir_literal **args, int nargs) {
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("t.hlo", text, strlen(text), d);
  if (!m || diag_error_count(d)) fail_msg("parse: %s", diag_text(d));
  assert_int_equal(ir_verify(m, d), 0);
  ir_literal *out = NULL;
  base_status st = ir_eval(m, &t->opts, args, nargs, t->out, &out, t->err, sizeof t->err);
  if (st != ST_OK) fail_msg("eval: %s", t->err);
  diag_destroy(d);
  ir_module_destroy(m);
  return out;
}

/* The verifier's messages for text include want. */
static void expect_verify_error(const char *text, const char *want) {
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("t.hlo", text, strlen(text), d);
  if (m) ir_verify(m, d); /* the importer verifies what it builds: m is NULL then */
  assert_true(diag_error_count(d) > 0);
  if (!strstr(diag_text(d), want)) fail_msg("got: %s\nwant: %s", diag_text(d), want);
  diag_destroy(d);
  ir_module_destroy(m);
}

static const char *const sort_kv =
    "HloModule s\n"
    "cmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
    "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
    "  ROOT lt = pred[] compare(a, b), direction=LT\n}\n"
    "ENTRY e {\n  k = f32[2,4] parameter(0)\n  v = s32[2,4] parameter(1)\n"
    "  ROOT s = (f32[2,4], s32[2,4]) sort(k, v), dimensions={1}, to_apply=cmp\n}\n";

/* Ties keep input order (is_stable absent: every target sorts stably). */
static void sort_key_value_ties(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_literal *a[2] = {tb_lit(&t, SH(IR_F32, 2, 4), VALS(3, 1, 3, 1, -0.0, 2, 0, -1)),
                      tb_lit(&t, SH(IR_S32, 2, 4), VALS(0, 1, 2, 3, 4, 5, 6, 7))};
  ir_literal *r = run_text(&t, sort_kv, a, 2);
  expect_f(r->elems[0], VALS(1, 1, 3, 3, -1, -0.0, 0, 2));
  expect_i(r->elems[1], IVALS(1, 3, 0, 2, 7, 4, 6, 5));
  tb_free(&t);
}

/* A comparator that is not one compare (descending by key, then by value
 * ascending): the general path that evaluates the computation. */
static void sort_general_comparator_dim0(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  const char *text =
      "HloModule s\n"
      "cmp {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
      "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
      "  gt = pred[] compare(a, b), direction=GT\n  eq = pred[] compare(a, b), direction=EQ\n"
      "  lt = pred[] compare(c, d), direction=LT\n  both = pred[] and(eq, lt)\n"
      "  ROOT r = pred[] or(gt, both)\n}\n"
      "ENTRY e {\n  k = s32[5,2] parameter(0)\n  v = s32[5,2] parameter(1)\n"
      "  ROOT s = (s32[5,2], s32[5,2]) sort(k, v), dimensions={0}, is_stable=false, "
      "to_apply=cmp\n}\n";
  ir_literal *a[2] = {tb_lit(&t, SH(IR_S32, 5, 2), VALS(1, 7, 2, 7, 1, 7, 2, 8, 0, 7)),
                      tb_lit(&t, SH(IR_S32, 5, 2), VALS(9, 4, 3, 3, 2, 2, 5, 1, 1, 0))};
  ir_literal *r = run_text(&t, text, a, 2);
  /* column 0: keys 1 2 1 2 0, values 9 3 2 5 1 -> (2,3) (2,5) (1,2) (1,9) (0,1)
   * column 1: keys 7 7 7 8 7, values 4 3 2 1 0 -> (8,1) (7,0) (7,2) (7,3) (7,4) */
  expect_i(r->elems[0], IVALS(2, 8, 2, 7, 1, 7, 1, 7, 0, 7));
  expect_i(r->elems[1], IVALS(3, 1, 5, 0, 2, 2, 9, 3, 1, 4));
  tb_free(&t);
}

/* topk: TOTALORDER, ties to the lower index; largest=false; NaN largest. */
static void topk_total_order(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  const char *text = "HloModule t\nENTRY e {\n  x = f32[2,5] parameter(0)\n"
                     "  a = (f32[2,3], s32[2,3]) topk(x), k=3, largest=true\n"
                     "  b = (f32[2,2], s32[2,2]) topk(x), k=2, largest=false\n"
                     "  ROOT t = ((f32[2,3], s32[2,3]), (f32[2,2], s32[2,2])) tuple(a, b)\n}\n";
  ir_literal *a[1] = {tb_lit(&t, SH(IR_F32, 2, 5), VALS(1, 5, 5, -0.0, 0, NAN, 2, -INFINITY, 2, 0))};
  ir_literal *r = run_text(&t, text, a, 1);
  expect_f(r->elems[0]->elems[0], VALS(5, 5, 1, NAN, 2, 2));
  expect_i(r->elems[0]->elems[1], IVALS(1, 2, 0, 0, 1, 3));
  expect_f(r->elems[1]->elems[0], VALS(-0.0, 0, -INFINITY, 0));
  expect_i(r->elems[1]->elems[1], IVALS(3, 4, 2, 4));
  assert_true(signbit(ir_literal_get_f64(r->elems[1]->elems[0], 0)));
  tb_free(&t);
}

/* XLA's TopK custom-call: rank 1 and 2, k from the result. */
static void topk_custom_call(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  const char *text = "HloModule t\nENTRY e {\n  x = f32[6] parameter(0)\n"
                     "  ROOT c = (f32[2], s32[2]) custom-call(x), custom_call_target=\"TopK\"\n}\n";
  ir_literal *a[1] = {tb_lit(&t, SH(IR_F32, 6), VALS(4, 9, 1, 9, 7, 3))};
  ir_literal *r = run_text(&t, text, a, 1);
  expect_f(r->elems[0], VALS(9, 9));
  expect_i(r->elems[1], IVALS(1, 3));
  tb_free(&t);
}

/* Located verifier errors for malformed sorts and top-ks. */
static void sort_malformed(void **state) {
  (void)state;
  expect_verify_error(
      "HloModule s\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
      "  ROOT r = f32[] add(a, b)\n}\n"
      "ENTRY e {\n  k = f32[4] parameter(0)\n"
      "  ROOT s = f32[4] sort(k), dimensions={0}, to_apply=cmp\n}\n",
      "t.hlo:9:8: error: verify: %s: comparator cmp returns f32[], expected pred[]");
  expect_verify_error(
      "HloModule s\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
      "  ROOT r = pred[] compare(a, b), direction=LT\n}\n"
      "ENTRY e {\n  k = f32[4] parameter(0)\n  v = s32[4] parameter(1)\n"
      "  ROOT s = (f32[4], s32[4]) sort(k, v), dimensions={0}, to_apply=cmp\n}\n",
      "comparator cmp takes 2 parameters, expected 4 (two per operand)");
  expect_verify_error(
      "HloModule s\ncmp {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
      "  ROOT r = pred[] compare(a, b), direction=LT\n}\n"
      "ENTRY e {\n  k = f32[4] parameter(0)\n"
      "  ROOT s = f32[4] sort(k), dimensions={0}, to_apply=cmp\n}\n",
      "comparator cmp takes s32[] as parameter 0, expected f32[]");
  expect_verify_error(
      "HloModule s\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
      "  ROOT r = pred[] compare(a, b), direction=LT\n}\n"
      "ENTRY e {\n  k = f32[4] parameter(0)\n"
      "  ROOT s = f32[4] sort(k), dimensions={1}, to_apply=cmp\n}\n",
      "sort dimension 1 out of range for rank 1");
  expect_verify_error("HloModule t\nENTRY e {\n  x = f32[5] parameter(0)\n"
                      "  ROOT a = (f32[6], s32[6]) topk(x), k=6, largest=true\n}\n",
                      "topk k=6 out of range for a last dimension of 5");
  expect_verify_error("HloModule t\nENTRY e {\n  x = f32[5] parameter(0)\n"
                      "  ROOT a = (f32[2], f32[2]) topk(x), k=2\n}\n",
                      "topk result is written as (f32[2], f32[2]), expected (f32[2], s32[2])");
  expect_verify_error("HloModule t\nENTRY e {\n  s = u64[2] parameter(0)\n"
                      "  ROOT r = (u64[2], f32[4]) rng-bit-generator(s), algorithm=rng_philox\n}\n",
                      "rng-bit-generator bits must be an integer type of 8 to 64 bits, not f32");
  expect_verify_error("HloModule t\nENTRY e {\n  s = u64[3] parameter(0)\n"
                      "  ROOT r = (u64[3], u32[4]) rng-bit-generator(s), algorithm=rng_three_fry\n}\n",
                      "rng-bit-generator state is u64[3], expected u64[2]");
}

/* Random123 kat_vectors: threefry2x32 20 (ctr, key -> out) and philox4x32
 * 10 (ctr, key -> out), all three of each. */
static void random123_known_answers(void **state) {
  (void)state;
  static const uint32_t tf[3][6] = {
      {0, 0, 0, 0, 0x6b200159, 0x99ba4efe},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x1cb996fc, 0xbb002be7},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xc4923a9c, 0x483df7a0}};
  for (int i = 0; i < 3; i++) {
    uint32_t o[2];
    ir_threefry2x32(&tf[i][2], &tf[i][0], o);
    assert_int_equal(o[0], tf[i][4]);
    assert_int_equal(o[1], tf[i][5]);
  }
  static const uint32_t px[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
       0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
       0x94fdcceb, 0x5001e420, 0x24126ea1}};
  for (int i = 0; i < 3; i++) {
    uint32_t o[4];
    ir_philox4x32(&px[i][4], &px[i][0], o);
    for (int k = 0; k < 4; k++) assert_int_equal(o[k], px[i][6 + k]);
  }
}

/* rng-bit-generator as XLA's expander defines it, from the block
 * functions: ThreeFry u32[2,3] splits dim 0 (even) into a half [1,3]:
 * element (j, b) is word j of counter ctr + b; 3 blocks used. */
static void rng_bits_three_fry_layout(void **state) {
  (void)state;
  uint64_t st[2] = {0x0123456789abcdefu, 0xfffffffffffffffeu}, ns[2];
  uint32_t out[6];
  ir_rng_bit_generator(IR_RNG_THREE_FRY, st, 2, 2, (int64_t[]){2, 3}, 32, out, ns);
  uint32_t key[2] = {0x89abcdef, 0x01234567};
  for (int b = 0; b < 3; b++) {
    uint64_t c = st[1] + (uint64_t)b;
    uint32_t o[2];
    ir_threefry2x32(key, (uint32_t[]){(uint32_t)c, (uint32_t)(c >> 32)}, o);
    assert_int_equal(out[b], o[0]);
    assert_int_equal(out[3 + b], o[1]);
  }
  assert_true(ns[0] == st[0] && ns[1] == 1); /* wraps: ...fe + 3 */
  /* u32[3] (odd): split the largest dim into [2,1]: elements 0,1 are
   * block 0, element 2 is word 0 of block 1 */
  ir_rng_bit_generator(IR_RNG_THREE_FRY, st, 2, 1, (int64_t[]){3}, 32, out, ns);
  uint32_t o0[2], o1[2];
  ir_threefry2x32(key, (uint32_t[]){0xfffffffe, 0xffffffff}, o0);
  ir_threefry2x32(key, (uint32_t[]){0xffffffff, 0xffffffff}, o1);
  assert_int_equal(out[0], o0[0]);
  assert_int_equal(out[1], o0[1]);
  assert_int_equal(out[2], o1[0]);
  assert_true(ns[1] == 0);
  /* u64[2]: one block per element, low word first */
  uint64_t w[2];
  ir_rng_bit_generator(IR_RNG_THREE_FRY, st, 2, 1, (int64_t[]){2}, 64, w, ns);
  assert_true(w[0] == ((uint64_t)o0[1] << 32 | o0[0]));
  assert_true(w[1] == ((uint64_t)o1[1] << 32 | o1[0]));
}

/* Philox: the 128-bit counter (state[1], state[2]) with carry, words
 * round robin, the state advanced by blocks; u64[2] state: counter
 * (state[1], state[0]), only the low word carried back. */
static void rng_bits_philox_layout(void **state) {
  (void)state;
  uint64_t st[3] = {0x1111222233334444u, 0xffffffffffffffffu, 7}, ns[3];
  uint32_t out[5];
  ir_rng_bit_generator(IR_RNG_PHILOX, st, 3, 1, (int64_t[]){5}, 32, out, ns);
  uint32_t key[2] = {0x33334444, 0x11112222}, o0[4], o1[4];
  ir_philox4x32(key, (uint32_t[]){0xffffffff, 0xffffffff, 7, 0}, o0);
  ir_philox4x32(key, (uint32_t[]){0, 0, 8, 0}, o1);
  for (int k = 0; k < 4; k++) assert_int_equal(out[k], o0[k]);
  assert_int_equal(out[4], o1[0]);
  assert_true(ns[0] == st[0] && ns[1] == 1 && ns[2] == 8);
  uint64_t s2[2] = {5, 9}, n2[2], w[3];
  ir_rng_bit_generator(IR_RNG_DEFAULT, s2, 2, 1, (int64_t[]){3}, 64, w, n2);
  uint32_t p0[4], p1[4];
  ir_philox4x32((uint32_t[]){5, 0}, (uint32_t[]){9, 0, 5, 0}, p0);
  ir_philox4x32((uint32_t[]){5, 0}, (uint32_t[]){10, 0, 5, 0}, p1);
  assert_true(w[0] == ((uint64_t)p0[1] << 32 | p0[0]));
  assert_true(w[1] == ((uint64_t)p0[3] << 32 | p0[2]));
  assert_true(w[2] == ((uint64_t)p1[1] << 32 | p1[0]));
  assert_true(n2[0] == 5 && n2[1] == 11);
  /* u16: the low halves of the 32-bit words */
  uint16_t h[4];
  ir_rng_bit_generator(IR_RNG_PHILOX, st, 3, 1, (int64_t[]){4}, 16, h, ns);
  for (int k = 0; k < 4; k++) assert_int_equal(h[k], o0[k] & 0xffff);
}

/* rng uniform: u * (b - a) + a with u the top 23 bits of Philox words
 * under the name's key; s32 as XLA's ConvertRandomBitsToUniformInt;
 * normal within [a - 6b, a + 6b] and the same twice. */
static void rng_uniform_and_normal(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  const char *text = "HloModule r\nENTRY e {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                     "  i = s32[] constant(-5)\n  j = s32[] constant(10)\n"
                     "  u = f32[6] rng(a, b), distribution=rng_uniform\n"
                     "  n = f32[3,2] rng(a, b), distribution=rng_normal\n"
                     "  k = s32[4] rng(i, j), distribution=rng_uniform\n"
                     "  ROOT t = (f32[6], f32[3,2], s32[4]) tuple(u, n, k)\n}\n";
  ir_literal *a[2] = {tb_lit(&t, SCALAR(IR_F32), VALS(2)), tb_lit(&t, SCALAR(IR_F32), VALS(3))};
  ir_literal *r = run_text(&t, text, a, 2);
  uint64_t key = ir_rng_key_of("u");
  uint32_t o[8];
  ir_philox4x32((uint32_t[]){(uint32_t)key, (uint32_t)(key >> 32)}, (uint32_t[]){0, 0, 0, 0}, o);
  ir_philox4x32((uint32_t[]){(uint32_t)key, (uint32_t)(key >> 32)}, (uint32_t[]){1, 0, 0, 0},
                o + 4);
  for (int e = 0; e < 6; e++) {
    float u = (float)(o[e] >> 9) / 8388608.0f;
    assert_true(ir_literal_get_f64(r->elems[0], e) == (double)(u * 1.0f + 2.0f));
  }
  key = ir_rng_key_of("k");
  ir_philox4x32((uint32_t[]){(uint32_t)key, (uint32_t)(key >> 32)}, (uint32_t[]){0, 0, 0, 0}, o);
  for (int e = 0; e < 4; e++) {
    uint32_t d = o[e] % 15u;
    assert_int_equal(ir_literal_get_i64(r->elems[2], e), -5 + (int64_t)(d / 2) + (int64_t)(d - d / 2));
  }
  for (int e = 0; e < 6; e++) {
    double z = ir_literal_get_f64(r->elems[1], e);
    assert_true(z > 2 - 18 && z < 2 + 18);
  }
  ir_literal *r2 = run_text(&t, text, a, 2);
  assert_true(ir_literal_equal(r->elems[1], r2->elems[1]));
  tb_free(&t);
}

/* rng expanded into a constant and f32 ops (passes/expand.c, what every
 * target runs) equals the evaluator's own rng bit for bit. */
static void rng_expansion_matches_native(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  const char *text = "HloModule r\nENTRY e {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                     "  c = f16[] convert(a)\n  d = f16[] convert(b)\n"
                     "  i = s32[] constant(2147483000)\n  j = s32[] constant(-2147483000)\n"
                     "  u = f32[5,3] rng(a, b), distribution=rng_uniform\n"
                     "  n = f32[3,5] rng(a, b), distribution=rng_normal\n"
                     "  h = f16[7] rng(c, d), distribution=rng_uniform\n"
                     "  k = s32[6] rng(i, j), distribution=rng_uniform\n"
                     "  ROOT t = (f32[5,3], f32[3,5], f16[7], s32[6]) tuple(u, n, h, k)\n}\n";
  ir_literal *a[2] = {tb_lit(&t, SCALAR(IR_F32), VALS(-0.75)), tb_lit(&t, SCALAR(IR_F32), VALS(5))};
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("t.hlo", text, strlen(text), d);
  assert_non_null(m);
  ir_literal *native = NULL, *expanded = NULL;
  assert_int_equal(ir_eval(m, &t.opts, a, 2, t.out, &native, t.err, sizeof t.err), ST_OK);
  pass_ctx ctx = {d, 0, false, NULL, NULL};
  assert_true(pass_expand(m, &ctx));
  assert_int_equal(ir_verify(m, d), 0);
  for (int c = 0; c < m->comps.n; c++)
    for (int i = 0; i < m->comps.v[c].insts.n; i++)
      assert_int_not_equal(m->comps.v[c].insts.v[i].op, IR_OP_RNG);
  assert_int_equal(ir_eval(m, &t.opts, a, 2, t.out, &expanded, t.err, sizeof t.err), ST_OK);
  for (int k = 0; k < 4; k++) assert_true(ir_literal_equal(native->elems[k], expanded->elems[k]));
  diag_destroy(d);
  ir_module_destroy(m);
  tb_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sort_key_value_ties),   cmocka_unit_test(sort_general_comparator_dim0),
      cmocka_unit_test(topk_total_order),      cmocka_unit_test(topk_custom_call),
      cmocka_unit_test(sort_malformed),        cmocka_unit_test(random123_known_answers),
      cmocka_unit_test(rng_bits_three_fry_layout), cmocka_unit_test(rng_bits_philox_layout),
      cmocka_unit_test(rng_uniform_and_normal), cmocka_unit_test(rng_expansion_matches_native),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
