/* test_grad_control.c: the VJP rules of while and conditional
 * (passes/grad_control.c), top-k (grad_topk.c) and selecting reduces
 * (grad_argreduce.c) against central finite differences in float64
 * (grad_fd.h), saving and under remat, which of the two each loop's
 * gradient uses, and where ties send the adjoint. The modules are
 * tests/passes/grad/{while,conditional}_*.hlo, topk.hlo, argreduce.hlo:
 *   while_counted      5 trips of x = x * w + sin(x) (a counted loop)
 *   while_dynamic      x = 0.9 x + x.w while i < n, n a parameter
 *   conditional_pred   (a, b) -> a * b or c -> sin(c) on a predicate
 *   conditional_index  three branches with tuple results; an index out of
 *                      range runs the last
 *   topk               topk largest and smallest, the TopK custom-call
 *   argreduce          jax's argmax reducer, a (max, companion) pair over
 *                      two dimensions with a parameter as init, a
 *                      one-operand reduce by select */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "tests/passes/grad_fd.h"

/* Module NAME of tests/passes/grad (GRAD_DIR). */
static ir_module *load(const char *name) {
  char path[1024], *text, err[512];
  size_t len;
  snprintf(path, sizeof path, "%s/%s", GRAD_DIR, name);
  assert_int_equal(ir_file_read(path, 1 << 20, &text, &len, err, sizeof err), ST_OK);
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo(path, text, len, d);
  if (!m) fprintf(stderr, "%s", diag_text(d));
  diag_destroy(d);
  free(text);
  assert_non_null(m);
  return m;
}

static void expect_fd(const char *name, bool remat, const int *wrt, int nwrt) {
  ir_module *m = load(name);
  gfd_options o;
  gfd_options_init(&o);
  o.remat = remat;
  o.wrt = wrt;
  o.nwrt = nwrt;
  char msg[1024];
  int checked = 0;
  bool f64 = false;
  gfd_outcome r = gfd_check_f64(m, &o, msg, sizeof msg, &checked, &f64);
  if (r != GFD_PASS) fprintf(stderr, "%s%s: %s\n", name, remat ? " (remat)" : "", msg);
  assert_int_equal(r, GFD_PASS);
  assert_true(checked > 0);
  assert_true(f64);
  ir_module_destroy(m);
}

/* How many instructions of op the VJP of module NAME has, over every
 * computation. */
static int vjp_count(const char *name, bool remat, ir_op op) {
  ir_module *m = load(name), *v = NULL;
  ir_grad_options o;
  ir_grad_options_init(&o);
  o.remat = remat;
  char err[512];
  assert_int_equal(ir_grad_module(m, &o, &v, err, sizeof err), ST_OK);
  int n = 0;
  for (int c = 0; c < v->comps.n; c++)
    for (int i = 0; i < v->comps.v[c].insts.n; i++)
      n += !v->comps.v[c].insts.v[i].dead && v->comps.v[c].insts.v[i].op == op;
  ir_module_destroy(v);
  ir_module_destroy(m);
  return n;
}

static void while_counted_saves(void **st) {
  (void)st;
  expect_fd("while_counted.hlo", false, NULL, 0);
  /* saving: a stack per leaf written by dynamic-update-slice; the
   * recording loop and the reverse loop (the VJP alone does not need the
   * forward loop's result) */
  assert_int_equal(vjp_count("while_counted.hlo", false, IR_OP_DYNAMIC_UPDATE_SLICE), 3);
  assert_int_equal(vjp_count("while_counted.hlo", false, IR_OP_WHILE), 2);
}

static void while_counted_remat_recomputes(void **st) {
  (void)st;
  expect_fd("while_counted.hlo", true, NULL, 0);
  /* no stacks: a counting loop, and the reverse loop with an inner
   * recomputing loop */
  assert_int_equal(vjp_count("while_counted.hlo", true, IR_OP_DYNAMIC_UPDATE_SLICE), 0);
  assert_int_equal(vjp_count("while_counted.hlo", true, IR_OP_WHILE), 3);
}

static void while_dynamic_trip_count(void **st) {
  (void)st;
  const int wrt[] = {0, 1};
  expect_fd("while_dynamic.hlo", false, wrt, 2);
  expect_fd("while_dynamic.hlo", true, wrt, 2);
  assert_int_equal(vjp_count("while_dynamic.hlo", false, IR_OP_DYNAMIC_UPDATE_SLICE), 0);
}

static void conditional_both_forms(void **st) {
  (void)st;
  const int wrt3[] = {0, 1, 2};
  expect_fd("conditional_pred.hlo", false, wrt3, 3);
  expect_fd("conditional_pred.hlo", true, wrt3, 3);
  const int wrt2[] = {0, 1};
  expect_fd("conditional_index.hlo", false, wrt2, 2);
}

static void topk_and_selecting_reduce(void **st) {
  (void)st;
  expect_fd("topk.hlo", false, NULL, 0);
  expect_fd("topk.hlo", true, NULL, 0);
  expect_fd("argreduce.hlo", false, NULL, 0);
  expect_fd("argreduce.hlo", true, NULL, 0);
}

/* The gradient of ENTRY (one parameter f32[4], one result f32[]) at x
 * with cotangent 1, by the evaluator. */
static void grad_at(const char *text, const double *x, double *out) {
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("t.hlo", text, strlen(text), d), *v = NULL;
  diag_destroy(d);
  assert_non_null(m);
  char err[512];
  assert_int_equal(ir_grad_module(m, NULL, &v, err, sizeof err), ST_OK);
  arena *a = arena_create();
  ir_shape xs = ir_shape_array(IR_F32, 1, (int64_t[]){4}), cs = ir_shape_scalar(IR_F32);
  ir_literal *args[2] = {ir_literal_create(a, &xs), ir_literal_create(a, &cs)}, *res;
  for (int k = 0; k < 4; k++) ir_literal_set_f64(args[0], k, x[k]);
  ir_literal_set_f64(args[1], 0, 1);
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  assert_int_equal(ir_eval(v, &eo, args, 2, a, &res, err, sizeof err), ST_OK);
  const ir_literal *g = res->shape.type == IR_TUPLE ? res->elems[0] : res;
  for (int k = 0; k < 4; k++) out[k] = ir_literal_get_f64(g, k);
  arena_destroy(a);
  ir_module_destroy(v);
  ir_module_destroy(m);
}

/* Ties: jax's argmax reducer and top-k give the whole adjoint to the
 * lowest index of the equal maxima (the element they select); a maximum
 * reduce splits it between them. */
static void ties_follow_the_selection(void **st) {
  (void)st;
  static const char argmax[] =
      "HloModule t\nr {\n  av = f32[] parameter(0)\n  ai = s32[] parameter(1)\n  bv = f32[] parameter(2)\n"
      "  bi = s32[] parameter(3)\n  gt = pred[] compare(bv, av), direction=GT\n"
      "  eq = pred[] compare(bv, av), direction=EQ\n  lt = pred[] compare(bi, ai), direction=LT\n"
      "  tie = pred[] and(eq, lt)\n  pi = pred[] or(gt, tie)\n  v = f32[] select(gt, bv, av)\n"
      "  i = s32[] select(pi, bi, ai)\n  ROOT t = (f32[], s32[]) tuple(v, i)\n}\n"
      "ENTRY e {\n  x = f32[4] parameter(0)\n  i = s32[4] iota(), iota_dimension=0\n"
      "  m = f32[] constant(-inf)\n  z = s32[] constant(0)\n"
      "  a = (f32[], s32[]) reduce(x, i, m, z), dimensions={0}, to_apply=r\n"
      "  ROOT v = f32[] get-tuple-element(a), index=0\n}\n";
  static const char topk[] = "HloModule t\nENTRY e {\n  x = f32[4] parameter(0)\n"
                             "  t = (f32[1], s32[1]) topk(x), k=1, largest=true\n"
                             "  v = f32[1] get-tuple-element(t), index=0\n  ROOT r = f32[] reshape(v)\n}\n";
  static const char max[] = "HloModule t\nmx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                            "  ROOT c = f32[] maximum(a, b)\n}\nENTRY e {\n  x = f32[4] parameter(0)\n"
                            "  m = f32[] constant(-inf)\n  ROOT r = f32[] reduce(x, m), dimensions={0}, to_apply=mx\n}\n";
  const double x[4] = {1, 3, 3, 2};
  double g[4];
  grad_at(argmax, x, g);
  assert_true(g[0] == 0 && g[1] == 1 && g[2] == 0 && g[3] == 0);
  grad_at(topk, x, g);
  assert_true(g[0] == 0 && g[1] == 1 && g[2] == 0 && g[3] == 0);
  grad_at(max, x, g);
  assert_true(g[0] == 0 && g[1] == 0.5 && g[2] == 0.5 && g[3] == 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(while_counted_saves),
      cmocka_unit_test(while_counted_remat_recomputes),
      cmocka_unit_test(while_dynamic_trip_count),
      cmocka_unit_test(conditional_both_forms),
      cmocka_unit_test(topk_and_selecting_reduce),
      cmocka_unit_test(ties_follow_the_selection),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
