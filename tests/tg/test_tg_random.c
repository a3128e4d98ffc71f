/* test_tg_random.c: the .tg sorting and random-number builtins
 * (frontend/tg/ops_random.c) on the reference evaluator, against oracles
 * written here: random_bits against ir_threefry2x32 (which reproduces
 * Random123's known answers, tests/eval/test_eval_sort_rng.c) in the
 * documented counter layout, uniform as the bit formula, split, dropout,
 * bernoulli, sort and top_k against hand-derived values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/tg/tg_util.h"

/* Evaluates src's entry on args; the tuple of results. */
static ir_literal *run(arena *a, const char *src, ir_literal **args, int nargs) {
  diag *d = diag_create();
  ir_module *m = fe_parse_tg("r.tg", src, strlen(src), NULL, d);
  if (!m) fail_msg("does not compile:\n%s", diag_text(d));
  ir_eval_options o;
  ir_eval_options_init(&o);
  ir_literal *out;
  char err[256];
  if (ir_eval(m, &o, args, nargs, a, &out, err, sizeof err) != ST_OK) fail_msg("eval: %s", err);
  ir_module_destroy(m);
  diag_destroy(d);
  return out;
}

/* random_bits(key, [n]): block i < m/2 of counters (i, i + m/2) gives
 * bits i and i + m/2 (m: n rounded up to even); split(key) is
 * random_bits(key, [4]) as two keys; uniform is the top 23 bits. */
static void bits_split_uniform(void **state) {
  (void)state;
  arena *a = arena_create();
  const char *src = "graph g() -> (s32[2], s32[7], s32[2], s32[2], f32[3], s32[3]) {\n"
                    "  let key = rng_key(1234567);\n  let k1, k2 = split(key);\n"
                    "  return key, random_bits(key, [7]), k1, k2, uniform(k2, [3], -2, 6), "
                    "random_bits(k2, [3]);\n}\n";
  ir_literal *r = run(a, src, NULL, 0);
  assert_int_equal(ir_literal_get_i64(r->elems[0], 0), 0);
  assert_int_equal(ir_literal_get_i64(r->elems[0], 1), 1234567);
  uint32_t key[2] = {0, 1234567}, o[2];
  for (uint32_t i = 0; i < 4; i++) {
    ir_threefry2x32(key, (uint32_t[]){i, i + 4}, o);
    assert_int_equal((uint32_t)ir_literal_get_i64(r->elems[1], i), o[0]);
    if (i + 4 < 7) assert_int_equal((uint32_t)ir_literal_get_i64(r->elems[1], i + 4), o[1]);
  }
  uint32_t sp[4];
  for (uint32_t i = 0; i < 2; i++) {
    ir_threefry2x32(key, (uint32_t[]){i, i + 2}, o);
    sp[i] = o[0];
    sp[i + 2] = o[1];
  }
  for (int i = 0; i < 2; i++) {
    assert_int_equal((uint32_t)ir_literal_get_i64(r->elems[2], i), sp[i]);
    assert_int_equal((uint32_t)ir_literal_get_i64(r->elems[3], i), sp[2 + i]);
  }
  for (int i = 0; i < 3; i++) {
    uint32_t w = (uint32_t)ir_literal_get_i64(r->elems[5], i), fb = w >> 9 | 0x3f800000u;
    float f;
    memcpy(&f, &fb, 4);
    float want = (f - 1.0f) * 8.0f + -2.0f;
    if (want < -2.0f) want = -2.0f;
    assert_true(ir_literal_get_f64(r->elems[4], i) == (double)want);
  }
  arena_destroy(a);
}

/* dropout keeps x / (1 - rate) exactly where bernoulli(key, 1 - rate)
 * holds; about 1 - rate of 4096 elements survive. */
static void dropout_and_bernoulli(void **state) {
  (void)state;
  arena *a = arena_create();
  const char *src = "graph g(x: f32[64,64]) -> (f32[64,64], pred[64,64]) {\n"
                    "  let k = rng_key(7);\n"
                    "  return dropout(x, 0.25, k), bernoulli(k, 0.75, [64, 64]);\n}\n";
  ir_shape s = ir_shape_array(IR_F32, 2, (int64_t[]){64, 64});
  ir_literal *x = ir_literal_create(a, &s);
  for (int i = 0; i < 4096; i++) ir_literal_set_f64(x, i, (i % 17) - 8 + 0.5);
  ir_literal *r = run(a, src, &x, 1);
  int kept = 0;
  for (int i = 0; i < 4096; i++) {
    bool keep = ir_literal_get_i64(r->elems[1], i) != 0;
    float want = keep ? (float)ir_literal_get_f64(x, i) / 0.75f : 0.0f;
    assert_true(ir_literal_get_f64(r->elems[0], i) == (double)want);
    kept += keep;
  }
  assert_true(kept > 4096 * 0.75 - 150 && kept < 4096 * 0.75 + 150);
  arena_destroy(a);
}

/* sort (ascending, descending, any axis; NaN last ascending by
 * TOTALORDER) and top_k (values and indices, ties to the lower index). */
static void sort_and_top_k(void **state) {
  (void)state;
  arena *a = arena_create();
  const char *src = "graph g(x: f32[2,4]) -> (f32[2,4], f32[2,4], f32[2,4], f32[2,2], s32[2,2]) {\n"
                    "  let v, i = top_k(x, 2);\n"
                    "  return sort(x), sort(x, axis=1, descending=true), sort(x, axis=0), v, i;\n}\n";
  ir_shape s = ir_shape_array(IR_F32, 2, (int64_t[]){2, 4});
  ir_literal *x = ir_literal_create(a, &s);
  const double xs[8] = {3, NAN, -1, 3, 0.5, 2, 2, -4};
  for (int i = 0; i < 8; i++) ir_literal_set_f64(x, i, xs[i]);
  ir_literal *r = run(a, src, &x, 1);
  const double asc[8] = {-1, 3, 3, NAN, -4, 0.5, 2, 2}, desc[8] = {NAN, 3, 3, -1, 2, 2, 0.5, -4},
               col[8] = {0.5, 2, -1, -4, 3, NAN, 2, 3}, top[4] = {NAN, 3, 2, 2};
  const int64_t idx[4] = {1, 0, 1, 2};
  for (int i = 0; i < 8; i++) {
    double g0 = ir_literal_get_f64(r->elems[0], i), g1 = ir_literal_get_f64(r->elems[1], i),
           g2 = ir_literal_get_f64(r->elems[2], i);
    assert_true(g0 == asc[i] || (isnan(g0) && isnan(asc[i])));
    assert_true(g1 == desc[i] || (isnan(g1) && isnan(desc[i])));
    assert_true(g2 == col[i] || (isnan(g2) && isnan(col[i])));
  }
  for (int i = 0; i < 4; i++) {
    double g = ir_literal_get_f64(r->elems[3], i);
    assert_true(g == top[i] || (isnan(g) && isnan(top[i])));
    assert_int_equal(ir_literal_get_i64(r->elems[4], i), idx[i]);
  }
  arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bits_split_uniform),
      cmocka_unit_test(dropout_and_bernoulli),
      cmocka_unit_test(sort_and_top_k),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
