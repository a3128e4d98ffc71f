/* test_eval_gather.c: the evaluator's indexing ops against values worked
 * out by hand: dynamic-slice and dynamic-update-slice clamp their starts
 * (scalar and vector start forms); gather clamps starts, collapses and
 * batches dimensions; scatter combines duplicates in order, calls
 * to_apply(current, update), skips a window any part of which falls
 * outside, and takes several operands; select-and-scatter picks by the
 * select protocol (ties, padding, computed select) and scatters with
 * scatter(source, current). Modules are HLO text with constant inputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "frontend/frontend.h"

#define VALS(...) (double[]){__VA_ARGS__}, (int)(sizeof((double[]){__VA_ARGS__}) / sizeof(double))

typedef struct run {
  ir_module *m;
  arena *out;
  ir_literal *v;
} run;

/* Parses, verifies and evaluates text (no parameters); opts may be NULL. */
static run eval_text(const char *text, const ir_eval_options *opts) {
  run r = {0};
  diag *d = diag_create();
  r.m = fe_parse_hlo("t.hlo", text, strlen(text), d);
  if (!r.m) fail_msg("%s", diag_first_message(d));
  if (ir_verify(r.m, d)) fail_msg("verify: %s", diag_first_message(d));
  diag_destroy(d);
  r.out = arena_create();
  char err[512];
  if (ir_eval(r.m, opts, NULL, 0, r.out, &r.v, err, sizeof err) != ST_OK) fail_msg("eval: %s", err);
  return r;
}

static void run_free(run *r) {
  arena_destroy(r->out);
  ir_module_destroy(r->m);
}

static void expect(const ir_literal *l, const double *v, int n) {
  assert_int_equal(ir_shape_count(&l->shape), n);
  for (int i = 0; i < n; i++) {
    double got = ir_literal_get_f64(l, i);
    if (got != v[i]) fail_msg("element %d: got %.9g, expected %.9g", i, got, v[i]);
  }
}

/* Evaluates text and compares tuple element k (or the array, k = -1). */
static void check(const char *text, int k, const double *v, int n) {
  run r = eval_text(text, NULL);
  expect(k < 0 ? r.v : r.v->elems[k], v, n);
  run_free(&r);
}

static void dynamic_slice_clamps_starts(void **state) {
  (void)state;
  const char *t = "ENTRY e {\n  x = s32[5] constant({0,1,2,3,4})\n  i = s32[] constant(-2)\n"
                  "  j = s32[] constant(4)\n"
                  "  a = s32[2] dynamic-slice(x, i), dynamic_slice_sizes={2}\n"
                  "  b = s32[2] dynamic-slice(x, j), dynamic_slice_sizes={2}\n"
                  "  ROOT t = (s32[2], s32[2]) tuple(a, b)\n}\n";
  check(t, 0, VALS(0, 1));
  check(t, 1, VALS(3, 4));
  /* the vector form of the starts; column 3 clamps to 2 */
  check("ENTRY e {\n  x = f32[3,4] constant({{0,1,2,3},{4,5,6,7},{8,9,10,11}})\n"
        "  s = s8[2] constant({1,3})\n"
        "  ROOT d = f32[2,2] dynamic-slice(x, s), dynamic_slice_sizes={2,2}\n}\n",
        -1, VALS(6, 7, 10, 11));
}

static void dynamic_update_slice_clamps_starts(void **state) {
  (void)state;
  check("ENTRY e {\n  x = s32[2,3] constant({{1,1,1},{1,1,1}})\n  u = s32[1,2] constant({{7,8}})\n"
        "  i = s32[] constant(5)\n  j = s32[] constant(-1)\n"
        "  ROOT d = s32[2,3] dynamic-update-slice(x, u, i, j)\n}\n",
        -1, VALS(1, 1, 1, 7, 8, 1));
  check("ENTRY e {\n  x = bf16[4] constant({1,2,3,4})\n  u = bf16[2] constant({-1.5,9})\n"
        "  i = s32[1] constant({2})\n  ROOT d = bf16[4] dynamic-update-slice(x, u, i)\n}\n",
        -1, VALS(1, 2, -1.5, 9));
}

static void gather_rows_clamped(void **state) {
  (void)state;
  /* an embedding lookup: ids 9 and -1 clamp to rows 3 and 0 */
  check("ENTRY e {\n  t = f32[4,2] constant({{0,1},{10,11},{20,21},{30,31}})\n"
        "  i = s32[3] constant({2,9,-1})\n"
        "  ROOT g = f32[3,2] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, "
        "start_index_map={0}, index_vector_dim=1, slice_sizes={1,2}\n}\n",
        -1, VALS(20, 21, 30, 31, 0, 1));
  /* TensorFlow's GatherV2 on axis 1: out[i][j] = x[i][idx[j]] */
  check("ENTRY e {\n  x = s32[3,3] constant({{1,2,3},{4,5,6},{7,8,9}})\n  i = s32[2] constant({2,0})\n"
        "  ROOT g = s32[3,2] gather(x, i), offset_dims={0}, collapsed_slice_dims={1}, "
        "start_index_map={1}, index_vector_dim=1, slice_sizes={3,1}\n}\n",
        -1, VALS(3, 1, 6, 4, 9, 7));
}

static void gather_windows_and_batching(void **state) {
  (void)state;
  /* 2x2 windows at (0,1) and at (2,2), which clamps to (1,1) */
  check("ENTRY e {\n  x = f32[3,3] constant({{0,1,2},{3,4,5},{6,7,8}})\n"
        "  i = s32[2,2] constant({{0,1},{2,2}})\n"
        "  ROOT g = f32[2,2,2] gather(x, i), offset_dims={1,2}, collapsed_slice_dims={}, "
        "start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,2}\n}\n",
        -1, VALS(1, 2, 4, 5, 4, 5, 7, 8));
  /* batching: out[b][k] = x[b][clamp(i[b][k])] */
  check("ENTRY e {\n  x = f32[2,3] constant({{0,1,2},{10,11,12}})\n"
        "  i = s32[2,2] constant({{2,0},{1,5}})\n"
        "  ROOT g = f32[2,2] gather(x, i), offset_dims={}, collapsed_slice_dims={1}, "
        "start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, "
        "index_vector_dim=2, slice_sizes={1,1}\n}\n",
        -1, VALS(2, 0, 11, 12));
  /* pred elements move as bytes */
  check("ENTRY e {\n  x = pred[4] constant({1,0,0,1})\n  i = s32[3,1] constant({{3},{1},{0}})\n"
        "  ROOT g = pred[3] gather(x, i), offset_dims={}, collapsed_slice_dims={0}, "
        "start_index_map={0}, index_vector_dim=1, slice_sizes={1}\n}\n",
        -1, VALS(1, 0, 1));
}

static const char add_f32[] = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                              "  ROOT s = f32[] add(a, b)\n}\n\n";

static void scatter_duplicates_and_out_of_range(void **state) {
  (void)state;
  char t[1024];
  /* index 1 twice (summed), 7 and -1 outside (skipped) */
  snprintf(t, sizeof t,
           "%sENTRY e {\n  x = f32[5] constant({0,0,0,0,0})\n  i = s32[5,1] constant({{1},{3},{1},{7},{-1}})\n"
           "  u = f32[5] constant({1,2,4,8,16})\n"
           "  ROOT s = f32[5] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, "
           "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n",
           add_f32);
  check(t, -1, VALS(0, 5, 0, 2, 0));
  /* a 2x2 window at column 3 would reach column 4: all of it is skipped */
  check("add {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  ROOT s = s32[] add(a, b)\n}\n\n"
        "ENTRY e {\n  x = s32[2,4] constant({{0,0,0,0},{0,0,0,0}})\n  i = s32[2,1] constant({{1},{3}})\n"
        "  u = s32[2,2,2] constant({{{1,2},{3,4}},{{5,6},{7,8}}})\n"
        "  ROOT s = s32[2,4] scatter(x, i, u), update_window_dims={1,2}, inserted_window_dims={}, "
        "scatter_dims_to_operand_dims={1}, index_vector_dim=1, to_apply=add\n}\n",
        -1, VALS(0, 1, 2, 0, 0, 3, 4, 0));
}

static void scatter_order_and_operands(void **state) {
  (void)state;
  /* to_apply(current, update) = current - update */
  check("sub {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] subtract(a, b)\n}\n\n"
        "ENTRY e {\n  x = f32[2] constant({10,20})\n  i = s32[1,1] constant({{1}})\n"
        "  u = f32[1] constant({3})\n"
        "  ROOT s = f32[2] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, "
        "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=sub\n}\n",
        -1, VALS(10, 17));
  /* two operands, one to_apply over both */
  const char *t = "f {\n  a = f32[] parameter(0)\n  b = s32[] parameter(1)\n  c = f32[] parameter(2)\n"
                  "  d = s32[] parameter(3)\n  x = f32[] add(a, c)\n  y = s32[] maximum(b, d)\n"
                  "  ROOT t = (f32[], s32[]) tuple(x, y)\n}\n\n"
                  "ENTRY e {\n  x = f32[3] constant({1,1,1})\n  y = s32[3] constant({3,3,3})\n"
                  "  i = s32[3] constant({0,2,2})\n  u = f32[3] constant({1.5,2.5,4})\n"
                  "  v = s32[3] constant({4,1,9})\n"
                  "  ROOT s = (f32[3], s32[3]) scatter(x, y, i, u, v), update_window_dims={}, "
                  "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
                  "to_apply=f\n}\n";
  check(t, 0, VALS(2.5, 1, 7.5));
  check(t, 1, VALS(4, 3, 9));
}

/* select-and-scatter of operand x and source src over window w, with
 * select computation `sel` (named sel) given as text. */
static void check_sas(const char *sel, const char *x, const char *src, const char *w, const double *v, int n) {
  char t[2048];
  snprintf(t, sizeof t,
           "%s\n%sENTRY e {\n  x = %s\n  s = %s\n  z = f32[] constant(0)\n"
           "  ROOT r = f32[%d] select-and-scatter(x, s, z), window={%s}, select=sel, scatter=add\n}\n",
           sel, add_f32, x, src, n, w);
  check(t, -1, v, n);
}

static const char sel_ge[] = "sel {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                             "  ROOT c = pred[] compare(a, b), direction=GE\n}\n";
static const char sel_gt[] = "sel {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                             "  ROOT c = pred[] compare(a, b), direction=GT\n}\n";
/* GE through a negation: not the direct compare */
static const char sel_slow_ge[] = "sel {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                                  "  c = pred[] compare(a, b), direction=LT\n  ROOT n = pred[] not(c)\n}\n";

static void select_and_scatter_max_pool_gradient(void **state) {
  (void)state;
  /* XLA's R4F32OverlapSmall, in two dimensions: 2x3 windows, stride 2x2 */
  check("ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT c = pred[] compare(a, b), direction=GE\n}\n\n"
        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"
        "ENTRY e {\n  x = f32[4,5] constant({{7,2,5,3,8},{3,8,9,3,4},{1,5,7,5,6},{0,6,2,10,2}})\n"
        "  s = f32[2,2] constant({{2,6},{3,1}})\n  z = f32[] constant(0)\n"
        "  ROOT r = f32[4,5] select-and-scatter(x, s, z), window={size=2x3 stride=2x2}, "
        "select=ge, scatter=add\n}\n",
        -1, VALS(0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 1, 0));
  /* padding: the first window is {pad, 1, 5}, the second {5, 2, 6} */
  check_sas(sel_ge, "f32[4] constant({1,5,2,6})", "f32[2] constant({10,20})", "size=3 stride=2 pad=1_0",
            VALS(0, 10, 0, 20));
  check_sas(sel_slow_ge, "f32[4] constant({1,5,2,6})", "f32[2] constant({10,20})",
            "size=3 stride=2 pad=1_0", VALS(0, 10, 0, 20));
}

static void select_and_scatter_ties(void **state) {
  (void)state;
  /* GE keeps the first of equal values, GT moves to the last */
  check_sas(sel_ge, "f32[3] constant({3,3,1})", "f32[1] constant({5})", "size=3", VALS(5, 0, 0));
  check_sas(sel_gt, "f32[3] constant({3,3,1})", "f32[1] constant({5})", "size=3", VALS(0, 5, 0));
  /* overlapping windows scatter into one position twice */
  check_sas(sel_ge, "f32[3] constant({1,9,1})", "f32[2] constant({2,3})", "size=2 stride=1",
            VALS(0, 5, 0));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(dynamic_slice_clamps_starts),
      cmocka_unit_test(dynamic_update_slice_clamps_starts),
      cmocka_unit_test(gather_rows_clamped),
      cmocka_unit_test(gather_windows_and_batching),
      cmocka_unit_test(scatter_duplicates_and_out_of_range),
      cmocka_unit_test(scatter_order_and_operands),
      cmocka_unit_test(select_and_scatter_max_pool_gradient),
      cmocka_unit_test(select_and_scatter_ties),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
