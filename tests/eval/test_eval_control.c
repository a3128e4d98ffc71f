/* test_eval_control.c: the evaluator's call, while, conditional and map
 * (ir/eval_control.c), on modules written as HLO text, against values
 * worked out by hand: counted and data-dependent loops, nested loops,
 * tuple and array state, every branch form (an index out of range runs
 * the last branch), map with a type change; a loop that never ends stops
 * at the step limit naming the while; a long loop runs in constant memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "frontend/frontend.h"

typedef struct run {
  ir_module *m;
  arena *a;
  diag *d;
  ir_literal *out;
  char err[512];
  base_status st;
} run;

/* Parses text (failing the test on a diagnostic) and evaluates it on args
 * with at most max_steps steps and max_bytes bytes (0: the defaults). */
static void eval_text(run *r, const char *text, ir_literal **args, int nargs, int64_t max_steps,
                      int64_t max_bytes) {
  memset(r, 0, sizeof *r);
  r->d = diag_create();
  r->m = fe_parse_hlo("control.hlo", text, strlen(text), r->d);
  if (!r->m) fail_msg("does not import:\n%s", diag_text(r->d));
  r->a = arena_create();
  ir_eval_options o;
  ir_eval_options_init(&o);
  o.max_steps = max_steps;
  o.max_bytes = max_bytes;
  r->st = ir_eval(r->m, &o, args, nargs, r->a, &r->out, r->err, sizeof r->err);
}

static void run_free(run *r) {
  ir_module_destroy(r->m);
  arena_destroy(r->a);
  diag_destroy(r->d);
}

static ir_literal *scalar_s32(arena *a, int32_t v) {
  ir_shape s = ir_shape_scalar(IR_S32);
  ir_literal *l = ir_literal_create(a, &s);
  ir_literal_set_i64(l, 0, v);
  return l;
}

static ir_literal *scalar_f32(arena *a, float v) {
  ir_shape s = ir_shape_scalar(IR_F32);
  ir_literal *l = ir_literal_create(a, &s);
  memcpy(l->data, &v, 4);
  return l;
}

static int64_t ival(const ir_literal *l, int64_t i) { return ir_literal_get_i64(l, i); }
static float fval(const ir_literal *l, int64_t i) {
  float f;
  memcpy(&f, (const uint8_t *)l->data + 4 * i, 4);
  return f;
}

static void expect_ok(run *r) {
  if (r->st != ST_OK) fail_msg("eval failed: %s: %s", base_status_str(r->st), r->err);
}

/* i counts to 5 while x doubles: x = 3 * 2^5 in every element. */
static const char counted_loop[] =
    "HloModule counted\n"
    "body {\n"
    "  p = (s32[], f32[3]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  x = f32[3] get-tuple-element(p), index=1\n"
    "  one = s32[] constant(1)\n"
    "  ROOT t = (s32[], f32[3]) tuple(add(i, one), add(x, x))\n"
    "}\n"
    "cond {\n"
    "  p = (s32[], f32[3]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  ROOT lt = pred[] compare(i, s32[] constant(5)), direction=LT\n"
    "}\n"
    "ENTRY main {\n"
    "  x = f32[3] parameter(0)\n"
    "  init = (s32[], f32[3]) tuple(s32[] constant(0), x)\n"
    "  ROOT w = (s32[], f32[3]) while(init), body=body, condition=cond\n"
    "}\n";

static void while_counted_tuple_state(void **state) {
  (void)state;
  arena *a = arena_create();
  ir_shape s = ir_shape_array(IR_F32, 1, (int64_t[]){3});
  ir_literal *x = ir_literal_create(a, &s);
  float v[3] = {3, -0.5f, 0};
  memcpy(x->data, v, sizeof v);
  run r;
  eval_text(&r, counted_loop, &x, 1, 0, 0);
  expect_ok(&r);
  assert_int_equal(r.out->shape.type, IR_TUPLE);
  assert_int_equal(ival(r.out->elems[0], 0), 5);
  assert_true(fval(r.out->elems[1], 0) == 96.0f);
  assert_true(fval(r.out->elems[1], 1) == -16.0f);
  assert_true(fval(r.out->elems[1], 2) == 0.0f);
  run_free(&r);
  arena_destroy(a);
}

/* The Collatz walk from n, counting its steps: a trip count that only the
 * data decides (27 takes 111 steps, 1 takes none, 6 takes 8). */
static const char collatz[] =
    "HloModule collatz\n"
    "body {\n"
    "  p = (s32[], s32[]) parameter(0)\n"
    "  n = s32[] get-tuple-element(p), index=0\n"
    "  k = s32[] get-tuple-element(p), index=1\n"
    "  one = s32[] constant(1)\n"
    "  odd = pred[] compare(and(n, one), one), direction=EQ\n"
    "  up = s32[] add(multiply(n, s32[] constant(3)), one)\n"
    "  down = s32[] divide(n, s32[] constant(2))\n"
    "  ROOT t = (s32[], s32[]) tuple(select(odd, up, down), add(k, one))\n"
    "}\n"
    "cond {\n"
    "  p = (s32[], s32[]) parameter(0)\n"
    "  n = s32[] get-tuple-element(p), index=0\n"
    "  ROOT ne = pred[] compare(n, s32[] constant(1)), direction=NE\n"
    "}\n"
    "ENTRY main {\n"
    "  n = s32[] parameter(0)\n"
    "  w = (s32[], s32[]) while(tuple(n, s32[] constant(0))), condition=cond, body=body\n"
    "  ROOT steps = s32[] get-tuple-element(w), index=1\n"
    "}\n";

static void while_data_dependent_trips(void **state) {
  (void)state;
  static const int32_t n[] = {27, 1, 6, 7};
  static const int64_t want[] = {111, 0, 8, 16};
  for (size_t i = 0; i < sizeof n / sizeof n[0]; i++) {
    arena *a = arena_create();
    ir_literal *arg = scalar_s32(a, n[i]);
    run r;
    eval_text(&r, collatz, &arg, 1, 0, 0);
    expect_ok(&r);
    assert_int_equal(ival(r.out, 0), want[i]);
    run_free(&r);
    arena_destroy(a);
  }
}

/* The outer loop runs 4 times; the inner one adds the outer counter to s
 * (outer + 1) times: s = sum over o of o * (o + 1) = 0 + 2 + 6 + 12 = 20. */
static const char nested[] =
    "HloModule nested\n"
    "ibody {\n"
    "  p = (s32[], s32[], s32[]) parameter(0)\n"
    "  j = s32[] get-tuple-element(p), index=0\n"
    "  o = s32[] get-tuple-element(p), index=1\n"
    "  s = s32[] get-tuple-element(p), index=2\n"
    "  ROOT t = (s32[], s32[], s32[]) tuple(add(j, s32[] constant(1)), o, add(s, o))\n"
    "}\n"
    "icond {\n"
    "  p = (s32[], s32[], s32[]) parameter(0)\n"
    "  j = s32[] get-tuple-element(p), index=0\n"
    "  o = s32[] get-tuple-element(p), index=1\n"
    "  ROOT le = pred[] compare(j, o), direction=LE\n"
    "}\n"
    "obody {\n"
    "  p = (s32[], s32[]) parameter(0)\n"
    "  o = s32[] get-tuple-element(p), index=0\n"
    "  s = s32[] get-tuple-element(p), index=1\n"
    "  w = (s32[], s32[], s32[]) while(tuple(s32[] constant(0), o, s)), condition=icond, "
    "body=ibody\n"
    "  s2 = s32[] get-tuple-element(w), index=2\n"
    "  ROOT t = (s32[], s32[]) tuple(add(o, s32[] constant(1)), s2)\n"
    "}\n"
    "ocond {\n"
    "  p = (s32[], s32[]) parameter(0)\n"
    "  o = s32[] get-tuple-element(p), index=0\n"
    "  ROOT lt = pred[] compare(o, s32[] constant(4)), direction=LT\n"
    "}\n"
    "ENTRY main {\n"
    "  z = s32[] constant(0)\n"
    "  w = (s32[], s32[]) while(tuple(z, z)), condition=ocond, body=obody\n"
    "  ROOT s = s32[] get-tuple-element(w), index=1\n"
    "}\n";

static void while_nested(void **state) {
  (void)state;
  run r;
  eval_text(&r, nested, NULL, 0, 0, 0);
  expect_ok(&r);
  assert_int_equal(ival(r.out, 0), 20);
  run_free(&r);
}

static const char forever[] = "HloModule forever\n"
                              "body {\n"
                              "  p = f32[64] parameter(0)\n"
                              "  ROOT n = f32[64] negate(p)\n"
                              "}\n"
                              "cond {\n"
                              "  p = f32[64] parameter(0)\n"
                              "  ROOT t = pred[] constant(true)\n"
                              "}\n"
                              "ENTRY main {\n"
                              "  x = f32[64] parameter(0)\n"
                              "  ROOT spin = f32[64] while(x), condition=cond, body=body\n"
                              "}\n";

/* A loop that never ends is a located status naming the while, never a
 * hang; its 64-float state is held in constant memory meanwhile. */
static void while_forever_stops_at_step_limit(void **state) {
  (void)state;
  arena *a = arena_create();
  ir_shape s = ir_shape_array(IR_F32, 1, (int64_t[]){64});
  ir_literal *x = ir_literal_create(a, &s);
  run r;
  eval_text(&r, forever, &x, 1, 1000000, 1 << 20);
  assert_int_equal(r.st, ST_RESOURCE_EXHAUSTED);
  assert_non_null(strstr(r.err, "control.hlo:12:"));
  assert_non_null(strstr(r.err, "spin (while)"));
  assert_non_null(strstr(r.err, "stopped after"));
  run_free(&r);
  arena_destroy(a);
}

/* 5000 trips of a 16 KiB state within a 1 MiB byte limit: the trips do
 * not accumulate memory. Negating 5000 times gives x back. */
static const char long_loop[] =
    "HloModule long_loop\n"
    "body {\n"
    "  p = (s32[], f32[4096]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  x = f32[4096] get-tuple-element(p), index=1\n"
    "  ROOT t = (s32[], f32[4096]) tuple(add(i, s32[] constant(1)), negate(x))\n"
    "}\n"
    "cond {\n"
    "  p = (s32[], f32[4096]) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  ROOT lt = pred[] compare(i, s32[] constant(5000)), direction=LT\n"
    "}\n"
    "ENTRY main {\n"
    "  x = f32[4096] parameter(0)\n"
    "  w = (s32[], f32[4096]) while(tuple(s32[] constant(0), x)), condition=cond, body=body\n"
    "  ROOT y = f32[4096] get-tuple-element(w), index=1\n"
    "}\n";

static void while_long_loop_constant_memory(void **state) {
  (void)state;
  arena *a = arena_create();
  ir_shape s = ir_shape_array(IR_F32, 1, (int64_t[]){4096});
  ir_literal *x = ir_literal_create(a, &s);
  for (int i = 0; i < 4096; i++) {
    float f = (float)i - 100.5f;
    memcpy((uint8_t *)x->data + 4 * i, &f, 4);
  }
  run r;
  eval_text(&r, long_loop, &x, 1, 0, 1 << 20);
  expect_ok(&r);
  for (int i = 0; i < 4096; i += 511)
    assert_true(fval(r.out, i) == (float)i - 100.5f);
  run_free(&r);
  arena_destroy(a);
}

/* Three branches on an s32 index; any index out of 0..2 runs the last. */
static const char indexed[] =
    "HloModule indexed\n"
    "neg { x = f32[] parameter(0)\n ROOT r = f32[] negate(x) }\n"
    "dbl { y = f32[] parameter(0)\n ROOT r = f32[] add(y, y) }\n"
    "flo { z = f32[] parameter(0)\n ROOT r = f32[] floor(z) }\n"
    "ENTRY main {\n"
    "  k = s32[] parameter(0)\n"
    "  a = f32[] constant(2.5)\n"
    "  b = f32[] constant(10)\n"
    "  c = f32[] constant(-1.5)\n"
    "  ROOT r = f32[] conditional(k, a, b, c), branch_computations={neg, dbl, flo}\n"
    "}\n";

static void conditional_indexed_out_of_range_runs_last(void **state) {
  (void)state;
  static const int32_t k[] = {0, 1, 2, 3, -1, 2147483647, -2147483647 - 1};
  static const float want[] = {-2.5f, 20.0f, -2.0f, -2.0f, -2.0f, -2.0f, -2.0f};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    arena *a = arena_create();
    ir_literal *arg = scalar_s32(a, k[i]);
    run r;
    eval_text(&r, indexed, &arg, 1, 0, 0);
    expect_ok(&r);
    if (fval(r.out, 0) != want[i])
      fail_msg("index %d gave %g, expected %g", k[i], fval(r.out, 0), want[i]);
    run_free(&r);
    arena_destroy(a);
  }
}

/* A pred selects true_computation (written second here) on true; the
 * branches take different operand shapes, an empty tuple among them. */
static const char predicated[] =
    "HloModule predicated\n"
    "ten { e = () parameter(0)\n ROOT c = f32[2] constant({10, 20}) }\n"
    "sum {\n"
    "  p = (f32[2], f32[2]) parameter(0)\n"
    "  a = f32[2] get-tuple-element(p), index=0\n"
    "  b = f32[2] get-tuple-element(p), index=1\n"
    "  ROOT s = f32[2] add(a, b)\n"
    "}\n"
    "ENTRY main {\n"
    "  x = f32[] parameter(0)\n"
    "  big = pred[] compare(x, f32[] constant(0)), direction=GT\n"
    "  v = f32[2] constant({1, 2})\n"
    "  ROOT r = f32[2] conditional(big, tuple(v, v), tuple()), false_computation=ten, "
    "true_computation=sum\n"
    "}\n";

static void conditional_predicated_tuple_operands(void **state) {
  (void)state;
  static const float x[] = {1, -1};
  static const float want[2][2] = {{2, 4}, {10, 20}};
  for (int i = 0; i < 2; i++) {
    arena *a = arena_create();
    ir_literal *arg = scalar_f32(a, x[i]);
    run r;
    eval_text(&r, predicated, &arg, 1, 0, 0);
    expect_ok(&r);
    assert_true(fval(r.out, 0) == want[i][0] && fval(r.out, 1) == want[i][1]);
    run_free(&r);
    arena_destroy(a);
  }
}

/* call with three operands; the same computation called twice; map with
 * two operands and a result type other than theirs. */
static const char calls_and_map[] =
    "HloModule calls\n"
    "fma {\n"
    "  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  c = s32[] parameter(2)\n"
    "  ROOT r = s32[] add(multiply(a, b), c)\n"
    "}\n"
    "gt { x = s32[] parameter(0)\n y = s32[] parameter(1)\n"
    " ROOT r = pred[] compare(x, y), direction=GT }\n"
    "ENTRY main {\n"
    "  v = s32[4] constant({1, 5, -3, 7})\n"
    "  w = s32[4] constant({2, 5, -4, 9})\n"
    "  k1 = s32[] call(s32[] constant(3), s32[] constant(4), s32[] constant(5)), to_apply=fma\n"
    "  k2 = s32[] call(k1, k1, s32[] constant(-1)), to_apply=fma\n"
    "  m = pred[4] map(v, w), dimensions={0}, to_apply=gt\n"
    "  ROOT t = (s32[], pred[4]) tuple(k2, m)\n"
    "}\n";

static void call_twice_and_map(void **state) {
  (void)state;
  run r;
  eval_text(&r, calls_and_map, NULL, 0, 0, 0);
  expect_ok(&r);
  assert_int_equal(ival(r.out->elems[0], 0), 17 * 17 - 1);
  static const int64_t gt[] = {0, 0, 1, 0};
  for (int i = 0; i < 4; i++)
    assert_int_equal(ival(r.out->elems[1], i), gt[i]);
  run_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(while_counted_tuple_state),
      cmocka_unit_test(while_data_dependent_trips),
      cmocka_unit_test(while_nested),
      cmocka_unit_test(while_forever_stops_at_step_limit),
      cmocka_unit_test(while_long_loop_constant_memory),
      cmocka_unit_test(conditional_indexed_out_of_range_runs_last),
      cmocka_unit_test(conditional_predicated_tuple_operands),
      cmocka_unit_test(call_twice_and_map),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
