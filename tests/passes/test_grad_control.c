/* test_grad_control.c: the VJP rules of while and conditional
 * (passes/grad_control.c) against central finite differences in float64
 * (grad_fd.h), saving and under remat, and which of the two each loop's
 * gradient uses. The modules are tests/passes/grad/{while,conditional}_*.hlo:
 *   while_counted      5 trips of x = x * w + sin(x) (a counted loop)
 *   while_dynamic      x = 0.9 x + x.w while i < n, n a parameter
 *   conditional_pred   (a, b) -> a * b or c -> sin(c) on a predicate
 *   conditional_index  three branches with tuple results; an index out of
 *                      range runs the last */
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(while_counted_saves),
      cmocka_unit_test(while_counted_remat_recomputes),
      cmocka_unit_test(while_dynamic_trip_count),
      cmocka_unit_test(conditional_both_forms),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
