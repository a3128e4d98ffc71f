/* test_grad.c: gradients (passes/grad.c).
 *   the rule table has a row for every op of ir/ops.def;
 *   each differentiable op's rule against central finite differences on
 *   the evaluator (grad_fd.h: f32 today, with the tolerance derived there
 *   from the step and the f32 unit roundoff);
 *   value_and_grad agrees with the vjp seeded with 1;
 *   remat gives bitwise the same gradients and leaves no forward value
 *   live across into the backward pass (ir_grad_saved_values);
 *   located errors for gradients through ops that have none;
 *   wrt lists: chosen order, refused entries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "frontend/frontend.h"
#include "tests/passes/grad_fd.h"

static ir_module *parse(const char *text) {
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("g.hlo", text, strlen(text), d);
  if (!m) fprintf(stderr, "%s\n%s", text, diag_text(d));
  diag_destroy(d);
  assert_non_null(m);
  return m;
}

static void expect_fd(const char *text, double lo, double hi) {
  ir_module *m = parse(text);
  gfd_options o;
  gfd_options_init(&o);
  o.lo = lo;
  o.hi = hi;
  char msg[1024];
  int checked = 0;
  bool f64 = false;
  gfd_outcome r = gfd_check_f64(m, &o, msg, sizeof msg, &checked, &f64);
  if (r != GFD_PASS) fprintf(stderr, "%s\n-> %s\n", text, msg);
  assert_int_equal(r, GFD_PASS);
  assert_true(checked > 0);
  /* every rule is checked in float64 where the module has f32 values */
  if (strstr(text, "f32[") && !f64) fprintf(stderr, "%s\n-> checked in f32 only\n", text);
  assert_true(f64 || !strstr(text, "f32["));
  ir_module_destroy(m);
}

static void table_covers_ops(void **state) {
  (void)state;
  int rule = 0, zero = 0, none = 0;
  for (int op = 0; op < IR_OP__COUNT; op++) {
    pass_grad_kind k = pass_grad_kind_of((ir_op)op);
    if (k == PASS_GRAD_UNSET) fprintf(stderr, "no gradient row for %s\n", ir_op_name((ir_op)op));
    assert_int_not_equal(k, PASS_GRAD_UNSET);
    rule += k == PASS_GRAD_RULE;
    zero += k == PASS_GRAD_ZERO;
    none += k == PASS_GRAD_NONE;
    if (k == PASS_GRAD_NONE) assert_non_null(pass_grad_why_none((ir_op)op));
  }
  assert_int_equal(rule + zero + none, IR_OP__COUNT);
  assert_int_equal(pass_grad_kind_of(IR_OP_DOT), PASS_GRAD_RULE);
  assert_int_equal(pass_grad_kind_of(IR_OP_COMPARE), PASS_GRAD_ZERO);
  assert_int_equal(pass_grad_kind_of(IR_OP__COUNT), PASS_GRAD_UNSET);
}

/* y = op(x) on f32[2,3], x in [lo, hi). */
static void unary_case(const char *op, double lo, double hi) {
  char t[512];
  snprintf(t, sizeof t,
           "HloModule u\nENTRY e {\n  x = f32[2,3] parameter(0)\n  ROOT y = f32[2,3] %s(x)\n}\n", op);
  expect_fd(t, lo, hi);
}

static void unary_rules(void **state) {
  (void)state;
  static const char *const any[] = {"negate", "abs", "exponential", "exponential-minus-one", "tanh",
                                    "logistic", "sine", "cosine", "cbrt"};
  for (size_t k = 0; k < sizeof any / sizeof *any; k++) unary_case(any[k], -1.5, 1.5);
  static const char *const pos[] = {"log", "log-plus-one", "sqrt", "rsqrt"};
  for (size_t k = 0; k < sizeof pos / sizeof *pos; k++) unary_case(pos[k], 0.5, 2);
  /* piecewise constant: zero gradient, matching finite differences away
   * from the steps */
  unary_case("floor", 0.1, 0.9);
}

static void binary_case(const char *op, double lo, double hi) {
  char t[512];
  snprintf(t, sizeof t,
           "HloModule b\nENTRY e {\n  x = f32[3,2] parameter(0)\n  y = f32[3,2] parameter(1)\n"
           "  ROOT z = f32[3,2] %s(x, y)\n}\n", op);
  expect_fd(t, lo, hi);
}

static void binary_rules(void **state) {
  (void)state;
  static const char *const any[] = {"add", "subtract", "multiply", "maximum", "minimum", "atan2"};
  for (size_t k = 0; k < sizeof any / sizeof *any; k++) binary_case(any[k], -2, 2);
  binary_case("divide", 0.5, 2);
  binary_case("power", 0.5, 2);
  binary_case("remainder", 0.3, 2);
  /* the same operand twice: contributions add */
  expect_fd("HloModule s\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT z = f32[4] multiply(x, x)\n}\n", -2, 2);
}

static void select_clamp_compare(void **state) {
  (void)state;
  expect_fd("HloModule s\nENTRY e {\n  x = f32[5] parameter(0)\n  y = f32[5] parameter(1)\n"
            "  p = pred[5] compare(x, y), direction=GT\n  ROOT z = f32[5] select(p, x, y)\n}\n",
            -2, 2);
  expect_fd("HloModule c\nENTRY e {\n  lo = f32[] parameter(0)\n  x = f32[6] parameter(1)\n"
            "  hi = f32[] constant(0.45)\n  ROOT z = f32[6] clamp(lo, x, hi)\n}\n",
            -1, 1);
  expect_fd("HloModule c\nENTRY e {\n  lo = f32[6] parameter(0)\n  x = f32[6] parameter(1)\n"
            "  hi = f32[6] parameter(2)\n  ROOT z = f32[6] clamp(lo, x, hi)\n}\n",
            -1, 1);
}

static void movement_rules(void **state) {
  (void)state;
  expect_fd("HloModule m\nENTRY e {\n  x = f32[3] parameter(0)\n"
            "  b = f32[2,3,4] broadcast(x), dimensions={1}\n  ROOT t = f32[4,3,2] transpose(b), dimensions={2,1,0}\n}\n",
            -1, 1);
  expect_fd("HloModule m\nENTRY e {\n  x = f32[2,3] parameter(0)\n"
            "  b = f32[3,4,2] broadcast(x), dimensions={2,0}\n  ROOT r = f32[6,4] reshape(b)\n}\n",
            -1, 1);
  expect_fd("HloModule m\nENTRY e {\n  x = f32[7,5] parameter(0)\n"
            "  ROOT s = f32[3,2] slice(x), slice={[1:7:2], [0:4:3]}\n}\n", -1, 1);
  expect_fd("HloModule m\nENTRY e {\n  x = f32[4,6] parameter(0)\n  v = f32[] parameter(1)\n"
            "  ROOT p = f32[4,12] pad(x, v), padding=0_0_0x-1_2_1\n}\n", -1, 1);
  expect_fd("HloModule m\nENTRY e {\n  x = f32[2,3] parameter(0)\n  y = f32[2,2] parameter(1)\n"
            "  ROOT c = f32[2,8] concatenate(x, y, x), dimensions={1}\n}\n", -1, 1);
  expect_fd("HloModule m\nENTRY e {\n  x = f32[2,3] parameter(0)\n"
            "  ROOT r = f32[2,3] reverse(x), dimensions={1}\n}\n", -1, 1);
  expect_fd("HloModule m\nENTRY e {\n  x = f32[2,3] parameter(0)\n  c = f32[2,3] copy(x)\n"
            "  i = s32[2,3] convert(c)\n  f = f32[2,3] convert(i)\n  ROOT z = f32[2,3] add(c, f)\n}\n", -3, 3);
}

static void tuple_rules(void **state) {
  (void)state;
  expect_fd("HloModule t\nENTRY e {\n  x = f32[3] parameter(0)\n  y = f32[3] parameter(1)\n"
            "  t = (f32[3], f32[3]) tuple(x, y)\n  a = f32[3] get-tuple-element(t), index=1\n"
            "  b = f32[3] get-tuple-element(t), index=1\n  m = f32[3] multiply(a, b)\n"
            "  ROOT r = (f32[3], f32[3]) tuple(m, x)\n}\n",
            -1, 1);
  /* a nested result: one cotangent per leaf, depth first */
  expect_fd("HloModule t\nENTRY e {\n  x = f32[3] parameter(0)\n  y = f32[2] parameter(1)\n"
            "  e = f32[3] exponential(x)\n  i = (f32[3], f32[2]) tuple(e, y)\n"
            "  ROOT r = (f32[3], (f32[3], f32[2])) tuple(x, i)\n}\n",
            -1, 1);
}

static void dot_rules(void **state) {
  (void)state;
  static const char *const dots[] = {
      "x = f32[4,5] parameter(0)\n  y = f32[5,3] parameter(1)\n"
      "  ROOT d = f32[4,3] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
      "x = f32[5,4] parameter(0)\n  y = f32[3,5] parameter(1)\n"
      "  ROOT d = f32[4,3] dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={1}",
      "x = f32[2,3,5,4] parameter(0)\n  y = f32[2,4,3,6] parameter(1)\n"
      "  ROOT d = f32[2,3,5,6] dot(x, y), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, "
      "rhs_contracting_dims={1}",
      "x = f32[3,4,5] parameter(0)\n  y = f32[4,3,5] parameter(1)\n"
      "  ROOT d = f32[5] dot(x, y), lhs_batch_dims={2}, lhs_contracting_dims={0,1}, rhs_batch_dims={2}, "
      "rhs_contracting_dims={1,0}",
      "x = f32[4] parameter(0)\n  y = f32[3] parameter(1)\n"
      "  ROOT d = f32[4,3] dot(x, y), lhs_contracting_dims={}, rhs_contracting_dims={}",
      "x = f32[6] parameter(0)\n  y = f32[6,2] parameter(1)\n"
      "  ROOT d = f32[2] dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}",
  };
  for (size_t k = 0; k < sizeof dots / sizeof *dots; k++) {
    char t[1024];
    snprintf(t, sizeof t, "HloModule d\nENTRY e {\n  %s\n}\n", dots[k]);
    expect_fd(t, -1, 1);
  }
}


static void convolution_rules(void **state) {
  (void)state;
  static const char *const convs[] = {
      "x = f32[2,6,6,3] parameter(0)\n  k = f32[3,3,3,4] parameter(1)\n"
      "  ROOT c = f32[2,6,6,4] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f",
      "x = f32[2,7,7,3] parameter(0)\n  k = f32[3,3,3,2] parameter(1)\n"
      "  ROOT c = f32[2,3,3,2] convolution(x, k), window={size=3x3 stride=2x2}, dim_labels=b01f_01io->b01f",
      "x = f32[1,8,8,2] parameter(0)\n  k = f32[2,2,2,2] parameter(1)\n"
      "  ROOT c = f32[1,4,3,2] convolution(x, k), window={size=2x2 stride=2x3 pad=0_1x1_0 rhs_dilate=2x2}, "
      "dim_labels=b01f_01io->b01f",
      "x = f32[2,5,5,2] parameter(0)\n  k = f32[3,3,2,3] parameter(1)\n"
      "  ROOT c = f32[2,9,9,3] convolution(x, k), window={size=3x3 pad=1_1x1_1 lhs_dilate=2x2}, "
      "dim_labels=b01f_01io->b01f",
      "x = f32[2,6,5,4] parameter(0)\n  k = f32[6,3,2,2] parameter(1)\n"
      "  ROOT c = f32[2,6,4,3] convolution(x, k), window={size=2x2}, dim_labels=bf01_oi01->bf01, feature_group_count=2",
      "x = f32[2,5,5,2] parameter(0)\n  k = f32[3,3,2,3] parameter(1)\n"
      "  ROOT c = f32[2,3,3,3] convolution(x, k), window={size=3x3 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f",
      "x = f32[4,5,2] parameter(0)\n  k = f32[2,2,6] parameter(1)\n"
      "  ROOT c = f32[2,4,6] convolution(x, k), window={size=2}, dim_labels=b0f_0io->b0f, batch_group_count=2",
      "x = f32[3,8,2] parameter(0)\n  k = f32[3,3,4] parameter(1)\n"
      "  ROOT c = f32[4,6,2] convolution(x, k), window={size=3}, dim_labels=f0b_0io->f0b",
  };
  for (size_t k = 0; k < sizeof convs / sizeof *convs; k++) {
    char t[1024];
    snprintf(t, sizeof t, "HloModule c\nENTRY e {\n  %s\n}\n", convs[k]);
    expect_fd(t, -1, 1);
  }
}


#define ADD_MAX                                                                                    \
  "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"     \
  "max {\n  a.1 = f32[] parameter(0)\n  b.1 = f32[] parameter(1)\n  ROOT c.1 = f32[] maximum(a.1, b.1)\n}\n"

/* Indexing ops: integer inputs are in [0, 4), so starts get clamped. */
static void indexing_rules(void **state) {
  (void)state;
  /* an embedding lookup: repeated rows add up */
  expect_fd("HloModule g\nENTRY e {\n  x = f32[5,3] parameter(0)\n  i = s32[6] parameter(1)\n"
            "  ROOT g = f32[6,3] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
            "index_vector_dim=1, slice_sizes={1,3}\n}\n",
            -1, 1);
  /* 2-D windows whose starts are clamped */
  expect_fd("HloModule g\nENTRY e {\n  x = f32[4,5] parameter(0)\n  i = s32[3,2] parameter(1)\n"
            "  ROOT g = f32[3,2,3] gather(x, i), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0,1}, "
            "index_vector_dim=1, slice_sizes={2,3}\n}\n",
            -1, 1);
  /* scatter-add: repeated rows add up; with windows of 2 rows, starts
   * 3 are out of range on 4 rows and skipped */
  expect_fd("HloModule s\n" ADD_MAX "ENTRY e {\n  x = f32[4,3] parameter(0)\n  i = s32[5] parameter(1)\n"
            "  u = f32[5,3] parameter(2)\n  ROOT s = f32[4,3] scatter(x, i, u), update_window_dims={1}, "
            "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n",
            -1, 1);
  expect_fd("HloModule s\n" ADD_MAX "ENTRY e {\n  x = f32[4,3] parameter(0)\n  i = s32[5,1] parameter(1)\n"
            "  u = f32[5,2,3] parameter(2)\n  ROOT s = f32[4,3] scatter(x, i, u), update_window_dims={1,2}, "
            "inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n",
            -1, 1);
  /* select-and-scatter (the max-pool gradient) in its source and init */
  expect_fd("HloModule s\n" ADD_MAX "ge {\n  a.2 = f32[] parameter(0)\n  b.2 = f32[] parameter(1)\n"
            "  ROOT c.2 = pred[] compare(a.2, b.2), direction=GE\n}\n"
            "ENTRY e {\n  x = f32[5,6] parameter(0)\n  s = f32[3,3] parameter(1)\n  i = f32[] parameter(2)\n"
            "  ROOT r = f32[5,6] select-and-scatter(x, s, i), window={size=3x2 stride=2x2 pad=1_1x0_0}, "
            "select=ge, scatter=add\n}\n",
            -1, 1);
  expect_fd("HloModule d\nENTRY e {\n  x = f32[6,4] parameter(0)\n  i = s32[] parameter(1)\n  j = s32[] parameter(2)\n"
            "  ROOT d = f32[3,2] dynamic-slice(x, i, j), dynamic_slice_sizes={3,2}\n}\n",
            -1, 1);
  expect_fd("HloModule d\nENTRY e {\n  x = f32[5,4] parameter(0)\n  u = f32[2,3] parameter(1)\n"
            "  i = s32[] parameter(2)\n  j = s32[] parameter(3)\n"
            "  ROOT d = f32[5,4] dynamic-update-slice(x, u, i, j)\n}\n",
            -1, 1);
}

static void reduce_rules(void **state) {
  (void)state;
  expect_fd("HloModule r\n" ADD_MAX "ENTRY e {\n  x = f32[3,4,5] parameter(0)\n  i = f32[] parameter(1)\n"
            "  ROOT s = f32[4] reduce(x, i), dimensions={0,2}, to_apply=add\n}\n",
            -1, 1);
  expect_fd("HloModule r\n" ADD_MAX "ENTRY e {\n  x = f32[3,4,5] parameter(0)\n  i = f32[] constant(-inf)\n"
            "  ROOT s = f32[3,5] reduce(x, i), dimensions={1}, to_apply=max\n}\n",
            -1, 1);
  /* max pooling, overlapping windows with padding; min with dilation */
  expect_fd("HloModule r\n" ADD_MAX "ENTRY e {\n  x = f32[2,6,6,3] parameter(0)\n  i = f32[] constant(-inf)\n"
            "  ROOT s = f32[2,3,3,3] reduce-window(x, i), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=max\n}\n",
            -1, 1);
  expect_fd("HloModule r\n" ADD_MAX "ENTRY e {\n  x = f32[7,5] parameter(0)\n  i = f32[] constant(-inf)\n"
            "  ROOT s = f32[4,3] reduce-window(x, i), window={size=3x3 stride=2x2 pad=1_1x1_1}, to_apply=max\n}\n",
            -1, 1);
  expect_fd("HloModule r\nmin {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] minimum(a, b)\n}\n"
            "ENTRY e {\n  x = f32[9] parameter(0)\n  i = f32[] constant(inf)\n"
            "  ROOT s = f32[6] reduce-window(x, i), window={size=2 rhs_dilate=3}, to_apply=min\n}\n",
            -1, 1);
  /* reduce-window add: strides, padding, window dilation */
  expect_fd("HloModule r\n" ADD_MAX "ENTRY e {\n  x = f32[2,7,6] parameter(0)\n  i = f32[] constant(0)\n"
            "  ROOT s = f32[2,4,3] reduce-window(x, i), window={size=1x3x2 stride=1x2x2 pad=0_0x1_1x0_0}, to_apply=add\n}\n",
            -1, 1);
  expect_fd("HloModule r\n" ADD_MAX "ENTRY e {\n  x = f32[9,5] parameter(0)\n  i = f32[] parameter(1)\n"
            "  ROOT s = f32[3,5] reduce-window(x, i), window={size=2x1 stride=3x1 pad=1_0x0_0 rhs_dilate=2x1}, to_apply=add\n}\n",
            -1, 1);
}

static const char *const mlp_path_env = "TPUCC_MODULES";

/* The project's MLP with softmax cross-entropy (tests/modules). */
static ir_module *load_module(const char *name) {
  const char *dir = getenv(mlp_path_env);
  assert_non_null(dir);
  char path[1024], err[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  char *text;
  size_t len;
  assert_int_equal(ir_file_read(path, 1 << 24, &text, &len, err, sizeof err), ST_OK);
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo(path, text, len, d);
  diag_destroy(d);
  free(text);
  assert_non_null(m);
  return m;
}

static void mlp_softmax_cross_entropy(void **state) {
  (void)state;
  ir_module *m = load_module("softmax_mlp.hlo");
  gfd_options o;
  gfd_options_init(&o);
  o.max_elems = 0; /* every weight */
  char msg[1024];
  int checked;
  gfd_outcome r = gfd_check(m, &o, msg, sizeof msg, &checked);
  if (r != GFD_PASS) fprintf(stderr, "softmax_mlp: %s\n", msg);
  assert_int_equal(r, GFD_PASS);
  assert_int_equal(checked, 16 * 32 + 32 * 64 + 64 + 64 * 10 + 10);
  ir_module_destroy(m);
}


/* Evaluates the vjp of m (options o) on m's seeded inputs and cotangents
 * of 1, into arena a. */
static ir_literal *eval_vjp(const ir_module *v, const ir_module *m, arena *a) {
  gfd_options fo;
  gfd_options_init(&fo);
  ir_literal **in = gfd_inputs(a, m, &fo);
  const ir_comp *e = &m->comps.v[m->entry];
  const ir_shape *rs = e->insts.v[e->root].shape;
  int np = e->nparams, nr = rs->type == IR_TUPLE ? rs->ntuple : 1;
  ir_literal **args = arena_array(a, (size_t)(np + nr), sizeof *args);
  for (int p = 0; p < np; p++) args[p] = in[p];
  for (int k = 0; k < nr; k++) {
    args[np + k] = ir_literal_create(a, rs->type == IR_TUPLE ? &rs->tuple[k] : rs);
    for (int64_t i = 0; i < ir_shape_count(&args[np + k]->shape); i++) ir_literal_set_f64(args[np + k], i, 1);
  }
  int nargs = v->comps.v[v->entry].nparams;
  ir_literal *out;
  char err[512];
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  base_status st = ir_eval(v, &eo, args, nargs, a, &out, err, sizeof err);
  if (st != ST_OK) fprintf(stderr, "%s\n", err);
  assert_int_equal(st, ST_OK);
  return out;
}

/* The MLP's loss alone (result 0 of softmax_mlp): value_and_grad's value
 * is the loss and its gradients are the vjp's with cotangent 1. */
static ir_module *mlp_loss_only(void) {
  ir_module *m = load_module("softmax_mlp.hlo");
  ir_comp *e = ir_comp_get(m, m->entry);
  ir_id root = e->root;
  e->root = ir_inst_get(m, m->entry, root)->ops[0];
  return m;
}

static void value_and_grad_matches_vjp(void **state) {
  (void)state;
  ir_module *m = mlp_loss_only(), *v, *vg;
  char err[256];
  assert_int_equal(ir_grad_module(m, NULL, &v, err, sizeof err), ST_OK);
  assert_int_equal(ir_value_and_grad_module(m, NULL, &vg, err, sizeof err), ST_OK);
  assert_int_equal(vg->comps.v[vg->entry].nparams, 6);
  arena *a = arena_create();
  ir_literal *g1 = eval_vjp(v, m, a), *g2 = eval_vjp(vg, m, a);
  gfd_options fo;
  gfd_options_init(&fo);
  ir_literal *loss;
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  assert_int_equal(ir_eval(m, &eo, gfd_inputs(a, m, &fo), 6, a, &loss, err, sizeof err), ST_OK);
  assert_int_equal(g1->shape.ntuple, 5);
  assert_int_equal(g2->shape.ntuple, 6);
  assert_true(ir_literal_equal(g2->elems[0], loss));
  for (int k = 0; k < 5; k++) assert_true(ir_literal_equal(g1->elems[k], g2->elems[k + 1]));
  /* a result that is not a floating-point scalar */
  ir_module *t = load_module("softmax_mlp.hlo"), *none;
  assert_int_equal(ir_value_and_grad_module(t, NULL, &none, err, sizeof err), ST_INVALID_ARGUMENT);
  assert_null(none);
  assert_string_equal(err, "value_and_grad: the entry's result must be a floating-point scalar");
  ir_module_destroy(t);
  arena_destroy(a);
  ir_module_destroy(v);
  ir_module_destroy(vg);
  ir_module_destroy(m);
}

static void remat_same_gradients_fewer_saved(void **state) {
  (void)state;
  ir_module *m = load_module("softmax_mlp.hlo"), *v, *r;
  ir_grad_options o;
  ir_grad_options_init(&o);
  char err[256];
  assert_int_equal(ir_grad_module(m, &o, &v, err, sizeof err), ST_OK);
  o.remat = true;
  assert_int_equal(ir_grad_module(m, &o, &r, err, sizeof err), ST_OK);
  arena *a = arena_create();
  ir_literal *gv = eval_vjp(v, m, a), *gr = eval_vjp(r, m, a);
  assert_true(ir_literal_equal(gv, gr));
  int saved = ir_grad_saved_values(v, 6), saved_remat = ir_grad_saved_values(r, 6);
  /* saved: the activations the backward pass reads (relu, probs, ...) */
  assert_true(saved >= 5);
  assert_int_equal(saved_remat, 0);
  /* and the checks hold under remat too */
  gfd_options fo;
  gfd_options_init(&fo);
  fo.remat = true;
  char msg[512];
  int checked;
  assert_int_equal(gfd_check(m, &fo, msg, sizeof msg, &checked), GFD_PASS);
  arena_destroy(a);
  ir_module_destroy(v);
  ir_module_destroy(r);
  ir_module_destroy(m);
}

static void expect_error(const char *text, const ir_grad_options *o, base_status want, const char *msg) {
  ir_module *m = parse(text), *v = NULL;
  char err[512] = "";
  assert_int_equal(ir_grad_module(m, o, &v, err, sizeof err), want);
  assert_null(v);
  assert_string_equal(err, msg);
  ir_module_destroy(m);
}

static void located_errors(void **state) {
  (void)state;
  expect_error("HloModule e\nENTRY e {\n  x = f32[4] parameter(0)\n"
               "  ROOT y = f32[4] custom-call(x), custom_call_target=\"foo\"\n}\n",
               NULL, ST_UNSUPPORTED, "g.hlo:4:8: error: 'y' (custom-call): has no gradient: an opaque custom call has no gradient");
  expect_error("HloModule e\nmul {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
               "  ROOT c = f32[] multiply(a, b)\n}\nENTRY e {\n  x = f32[4] parameter(0)\n  one = f32[] constant(1)\n"
               "  ROOT y = f32[] reduce(x, one), dimensions={0}, to_apply=mul\n}\n",
               NULL, ST_UNSUPPORTED,
               "g.hlo:10:8: error: 'y' (reduce): a gradient through a reduce whose computation is not add, maximum or "
               "minimum is not supported");
  expect_error("HloModule e\nsm {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  c = f32[] parameter(2)\n"
               "  d = f32[] parameter(3)\n  s = f32[] add(a, c)\n  m = f32[] maximum(b, d)\n"
               "  ROOT t = (f32[], f32[]) tuple(s, m)\n}\nENTRY e {\n  x = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
               "  r = (f32[], f32[]) reduce(x, x, z, z), dimensions={0}, to_apply=sm\n"
               "  ROOT y = f32[] get-tuple-element(r), index=0\n}\n",
               NULL, ST_UNSUPPORTED,
               "g.hlo:14:3: error: 'r' (reduce): a gradient through result 0 of a reduce needs its reducer 'sm' to "
               "give it as a select between its two inputs 0 and 2 (argmax-style); it computes something else, so no "
               "single element it came from is defined");
  /* no gradient asked through it: an inactive custom call is fine */
  ir_module *m = parse("HloModule e\nENTRY e {\n  x = f32[4] parameter(0)\n  k = f32[4] custom-call(), "
                       "custom_call_target=\"foo\"\n  ROOT y = f32[4] multiply(x, k)\n}\n");
  ir_module *v;
  char err[256];
  int w = 0;
  ir_grad_options o;
  ir_grad_options_init(&o);
  o.wrt = &w;
  o.nwrt = 1;
  assert_int_equal(ir_grad_module(m, &o, &v, err, sizeof err), ST_OK);
  ir_module_destroy(v);
  ir_module_destroy(m);
}

static void wrt_lists(void **state) {
  (void)state;
  static const char *const text = "HloModule w\nENTRY e {\n  x = f32[3] parameter(0)\n  i = s32[3] parameter(1)\n"
                                  "  y = f32[3] parameter(2)\n  ROOT z = f32[3] multiply(x, y)\n}\n";
  ir_grad_options o;
  ir_grad_options_init(&o);
  int bad[][2] = {{3, 0}, {1, 0}, {0, 0}};
  const char *msgs[] = {"wrt: the entry has no parameter 3", "wrt: parameter 1 is not floating point",
                        "wrt: parameter 0 is named twice"};
  for (int k = 0; k < 3; k++) {
    o.wrt = bad[k];
    o.nwrt = k == 2 ? 2 : 1;
    expect_error(text, &o, ST_INVALID_ARGUMENT, msgs[k]);
  }
  /* the order given is the result order; default: the float parameters */
  ir_module *m = parse(text), *v;
  char err[256];
  int order[] = {2, 0};
  o.wrt = order;
  o.nwrt = 2;
  assert_int_equal(ir_grad_module(m, &o, &v, err, sizeof err), ST_OK);
  const ir_comp *e = &v->comps.v[v->entry];
  assert_int_equal(e->nparams, 4);
  const ir_inst *root = &e->insts.v[e->root];
  assert_int_equal(root->nops, 2);
  gfd_options fo;
  gfd_options_init(&fo);
  fo.wrt = order;
  fo.nwrt = 2;
  char msg[256];
  int checked;
  assert_int_equal(gfd_check(m, &fo, msg, sizeof msg, &checked), GFD_PASS);
  assert_int_equal(checked, 6);
  ir_module_destroy(v);
  ir_module_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(table_covers_ops), cmocka_unit_test(unary_rules),
      cmocka_unit_test(binary_rules),     cmocka_unit_test(select_clamp_compare),
      cmocka_unit_test(movement_rules),   cmocka_unit_test(tuple_rules),
      cmocka_unit_test(dot_rules), cmocka_unit_test(convolution_rules), cmocka_unit_test(indexing_rules),        cmocka_unit_test(reduce_rules),
      cmocka_unit_test(mlp_softmax_cross_entropy), cmocka_unit_test(value_and_grad_matches_vjp),
      cmocka_unit_test(remat_same_gradients_fewer_saved), cmocka_unit_test(located_errors),
      cmocka_unit_test(wrt_lists),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
