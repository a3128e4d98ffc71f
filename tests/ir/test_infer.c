/* test_infer.c: ir_infer_shape for every op family, with result shapes
 * computed by hand from the XLA semantics, and the exact error text for
 * ill-typed instructions. */
#include "ir_test_util.h"

static ir_module *M;
static ir_comp_id ADD_F32, ADD_S32, VAR_RED, FUSED, BAD_RED;

/* Runs inference on operands written as shape spellings; returns the
 * result spelling or "error: <message>". target pre-fills *out (or NULL). */
static const char *infer(ir_op op, const ir_attrs *a, const char *target, int n, const char *const *specs,
                         const ir_comp_id *calls, int ncalls) {
  static char res[512];
  ir_shape ops[16];
  for (int i = 0; i < n; i++) ops[i] = tu_shape(M->arena, specs[i]);
  ir_shape out;
  memset(&out, 0, sizeof out);
  if (target) out = tu_shape(M->arena, target);
  char err[256] = "untouched";
  if (!ir_infer_shape(M, op, ops, n, a, calls, ncalls, &out, err, sizeof err)) {
    snprintf(res, sizeof res, "error: %s", err);
    return res;
  }
  snprintf(res, sizeof res, "%s", tu_str(&out));
  return res;
}

#define SPECS(...) (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), (const char *[]){__VA_ARGS__}
#define INFER(op, a, target, ...) infer(IR_OP_##op, (a), (target), SPECS(__VA_ARGS__), NULL, 0)
#define INFER0(op, a, target) infer(IR_OP_##op, (a), (target), 0, NULL, NULL, 0)
#define INFER_CALL(op, a, comp, ...) infer(IR_OP_##op, (a), NULL, SPECS(__VA_ARGS__), (ir_comp_id[]){comp}, 1)

static ir_attrs attrs(void) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.feature_group_count = a.batch_group_count = 1;
  return a;
}

static int setup(void **st) {
  (void)st;
  M = ir_module_create("infer_test");
  ADD_F32 = tu_reducer(M, "add_f32", IR_F32, IR_OP_ADD);
  ADD_S32 = tu_reducer(M, "add_s32", IR_S32, IR_OP_ADD);
  /* (f32[], s32[], f32[], s32[]) -> (f32[], s32[]) */
  VAR_RED = ir_comp_add(M, "argmax_like");
  ir_id p[4];
  p[0] = tu_param(M, VAR_RED, 0, "v.a", "f32[]");
  p[1] = tu_param(M, VAR_RED, 1, "v.b", "s32[]");
  p[2] = tu_param(M, VAR_RED, 2, "v.c", "f32[]");
  p[3] = tu_param(M, VAR_RED, 3, "v.d", "s32[]");
  ir_id mx = tu_inst(M, VAR_RED, IR_OP_MAXIMUM, "v.mx", "f32[]", 2, (ir_id[]){p[0], p[2]}, NULL);
  ir_id mn = tu_inst(M, VAR_RED, IR_OP_MINIMUM, "v.mn", "s32[]", 2, (ir_id[]){p[1], p[3]}, NULL);
  ir_comp_get(M, VAR_RED)->root = tu_inst(M, VAR_RED, IR_OP_TUPLE, "v.t", "(f32[], s32[])", 2, (ir_id[]){mx, mn}, NULL);
  ir_comp_finish(M, VAR_RED);
  /* fused(f32[3], f32[3]) -> f32[3] */
  FUSED = ir_comp_add(M, "fused");
  ir_id a = tu_param(M, FUSED, 0, "f.a", "f32[3]"), b = tu_param(M, FUSED, 1, "f.b", "f32[3]");
  ir_comp_get(M, FUSED)->root = tu_inst(M, FUSED, IR_OP_MULTIPLY, "f.m", "f32[3]", 2, (ir_id[]){a, b}, NULL);
  ir_comp_finish(M, FUSED);
  /* (f32[], f32[]) -> s32[]: a reducer with the wrong result type */
  BAD_RED = ir_comp_add(M, "bad_red");
  ir_id x = tu_param(M, BAD_RED, 0, "b.x", "f32[]");
  tu_param(M, BAD_RED, 1, "b.y", "f32[]");
  ir_attrs c = attrs();
  ir_comp_get(M, BAD_RED)->root = tu_inst(M, BAD_RED, IR_OP_CONVERT, "b.c", "s32[]", 1, &x, &c);
  ir_comp_finish(M, BAD_RED);
  return 0;
}

static int teardown(void **st) {
  (void)st;
  ir_module_destroy(M);
  return 0;
}

/* ---- elementwise ---------------------------------------------------- */

static void elementwise_same_shapes(void **st) {
  (void)st;
  assert_string_equal(INFER(ADD, NULL, NULL, "f32[2,3]", "f32[2,3]"), "f32[2,3]");
  assert_string_equal(INFER(NEGATE, NULL, NULL, "s8[5]"), "s8[5]");
  assert_string_equal(INFER(EXP, NULL, NULL, "bf16[]"), "bf16[]");
  assert_string_equal(INFER(MAXIMUM, NULL, NULL, "s32[0,4]", "s32[0,4]"), "s32[0,4]");
}

static void elementwise_operand_mismatch_message(void **st) {
  (void)st;
  assert_string_equal(INFER(ADD, NULL, NULL, "f32[2]", "f32[3]"),
                      "error: add: operand 1 shape f32[3] does not match f32[2]");
  assert_string_equal(INFER(MULTIPLY, NULL, NULL, "f32[2]", "s32[2]"),
                      "error: multiply: operand 1 shape s32[2] does not match f32[2]");
  assert_string_equal(INFER(ADD, NULL, NULL, "f32[2]"), "error: add: expected 2 operands, got 1");
  assert_string_equal(INFER(ADD, NULL, NULL, "(f32[2])", "f32[2]"),
                      "error: add: operand 0 is a tuple (f32[2]), expected an array");
}

static void compare_and_is_finite_give_pred(void **st) {
  (void)st;
  ir_attrs a = attrs();
  a.cmp_dir = IR_CMP_LT;
  assert_string_equal(INFER(COMPARE, &a, NULL, "s32[4,1]", "s32[4,1]"), "pred[4,1]");
  assert_string_equal(INFER(IS_FINITE, NULL, NULL, "f16[7]"), "pred[7]");
}

static void elementwise_type_classes(void **st) {
  (void)st;
  assert_string_equal(INFER(EXP, NULL, NULL, "s32[2]"),
                      "error: exponential: operand 0 has type s32, expected a floating-point type");
  assert_string_equal(INFER(AND, NULL, NULL, "pred[3]", "pred[3]"), "pred[3]");
  assert_string_equal(INFER(NOT, NULL, NULL, "s8[3]"), "s8[3]");
  assert_string_equal(INFER(AND, NULL, NULL, "f32[3]", "f32[3]"),
                      "error: and: operand 0 has type f32, expected an integer type or pred");
  assert_string_equal(INFER(SHL, NULL, NULL, "pred[3]", "pred[3]"),
                      "error: shift-left: operand 0 has type pred, expected an integer type");
  assert_string_equal(INFER(NEGATE, NULL, NULL, "pred[3]"),
                      "error: negate: operand 0 has type pred, expected a number type");
  assert_string_equal(INFER(ATAN2, NULL, NULL, "s32[]", "s32[]"),
                      "error: atan2: operand 0 has type s32, expected a floating-point type");
}

static void select_scalar_predicate_and_errors(void **st) {
  (void)st;
  assert_string_equal(INFER(SELECT, NULL, NULL, "pred[2,3]", "f32[2,3]", "f32[2,3]"), "f32[2,3]");
  assert_string_equal(INFER(SELECT, NULL, NULL, "pred[]", "s32[4]", "s32[4]"), "s32[4]");
  assert_string_equal(INFER(SELECT, NULL, NULL, "pred[3]", "s32[4]", "s32[4]"),
                      "error: select: predicate pred[3] does not match s32[4]");
  assert_string_equal(INFER(SELECT, NULL, NULL, "s32[4]", "s32[4]", "s32[4]"),
                      "error: select: predicate has type s32, expected pred");
  assert_string_equal(INFER(SELECT, NULL, NULL, "pred[4]", "s32[4]", "f32[4]"),
                      "error: select: on_true s32[4] and on_false f32[4] differ");
}

static void clamp_scalar_bounds_and_errors(void **st) {
  (void)st;
  assert_string_equal(INFER(CLAMP, NULL, NULL, "f32[]", "f32[4]", "f32[]"), "f32[4]");
  assert_string_equal(INFER(CLAMP, NULL, NULL, "f32[4]", "f32[4]", "f32[4]"), "f32[4]");
  assert_string_equal(INFER(CLAMP, NULL, NULL, "f32[3]", "f32[4]", "f32[]"),
                      "error: clamp: min f32[3] does not match operand f32[4]");
  assert_string_equal(INFER(CLAMP, NULL, NULL, "s32[]", "f32[4]", "f32[]"),
                      "error: clamp: element types differ (s32, f32, f32)");
}

/* ---- data movement ---------------------------------------------------- */

static void broadcast_takes_target_and_maps_dims(void **st) {
  (void)st;
  ir_attrs a = attrs();
  a.dimensions = INTS(1);
  assert_string_equal(INFER(BROADCAST, &a, "f32[2,3]", "f32[3]"), "f32[2,3]");
  a.dimensions = INTS(0);
  assert_string_equal(INFER(BROADCAST, &a, "f32[2,3]", "f32[3]"),
                      "error: broadcast: operand dimension 0 (size 3) does not match result dimension 0 (size 2)");
  a.dimensions = (ir_ints){0};
  assert_string_equal(INFER(BROADCAST, &a, "s32[4,5]", "s32[]"), "s32[4,5]");
  a.dimensions = INTS(2);
  assert_string_equal(INFER(BROADCAST, &a, "f32[2,3]", "f32[3]"),
                      "error: broadcast: dimensions[0] = 2 out of range for rank 2");
  a.dimensions = INTS(1);
  assert_string_equal(INFER(BROADCAST, &a, "s32[2,3]", "f32[3]"),
                      "error: broadcast: result type s32 differs from operand type f32");
  /* XLA's verifier allows any order (a transposing broadcast), no repeats */
  a.dimensions = INTS(2, 0);
  assert_string_equal(INFER(BROADCAST, &a, "f32[3,4,2]", "f32[2,3]"), "f32[3,4,2]");
  a.dimensions = INTS(1, 1);
  assert_string_equal(INFER(BROADCAST, &a, "f32[2,2]", "f32[2,2]"),
                      "error: broadcast: dimensions repeats dimension 1");
}

static void reshape_keeps_element_count(void **st) {
  (void)st;
  assert_string_equal(INFER(RESHAPE, NULL, "f32[3,2]", "f32[2,3]"), "f32[3,2]");
  assert_string_equal(INFER(RESHAPE, NULL, "f32[]", "f32[1,1]"), "f32[]");
  assert_string_equal(INFER(RESHAPE, NULL, "f32[7]", "f32[2,3]"),
                      "error: reshape: f32[7] has 7 elements, operand f32[2,3] has 6");
}

static void transpose_permutes(void **st) {
  (void)st;
  ir_attrs a = attrs();
  a.dimensions = INTS(2, 0, 1);
  /* result dim i = operand dim perm[i]: [4, 2, 3] */
  assert_string_equal(INFER(TRANSPOSE, &a, NULL, "f32[2,3,4]"), "f32[4,2,3]");
  a.dimensions = INTS(0, 0, 1);
  assert_string_equal(INFER(TRANSPOSE, &a, NULL, "f32[2,3,4]"),
                      "error: transpose: dimensions repeats dimension 0");
  a.dimensions = INTS(1, 0);
  assert_string_equal(INFER(TRANSPOSE, &a, NULL, "f32[2,3,4]"),
                      "error: transpose: dimensions has 2 entries, operand f32[2,3,4] has rank 3");
}

static void slice_strided_and_bounds(void **st) {
  (void)st;
  ir_attrs a = attrs();
  /* [1:8:3] of 10 -> ceil(7/3) = 3; [0:5:2] of 5 -> ceil(5/2) = 3 */
  a.slice_start = INTS(1, 0);
  a.slice_limit = INTS(8, 5);
  a.slice_stride = INTS(3, 2);
  assert_string_equal(INFER(SLICE, &a, NULL, "f32[10,5]"), "f32[3,3]");
  a.slice_start = INTS(4, 0);
  a.slice_limit = INTS(4, 5);
  assert_string_equal(INFER(SLICE, &a, NULL, "f32[10,5]"), "f32[0,3]");
  a.slice_limit = INTS(4, 6);
  assert_string_equal(INFER(SLICE, &a, NULL, "f32[10,5]"),
                      "error: slice: slice [0:6] out of bounds for dimension 1 of size 5");
  a.slice_start = INTS(5, 0);
  a.slice_limit = INTS(4, 5);
  assert_string_equal(INFER(SLICE, &a, NULL, "f32[10,5]"),
                      "error: slice: slice [5:4] out of bounds for dimension 0 of size 10");
  a.slice_start = INTS(0, 0);
  a.slice_stride = INTS(0, 1);
  assert_string_equal(INFER(SLICE, &a, NULL, "f32[10,5]"), "error: slice: stride 0 in dimension 0 must be >= 1");
}

static void concatenate_sums_one_dim(void **st) {
  (void)st;
  ir_attrs a = attrs();
  a.dimensions = INTS(0);
  assert_string_equal(INFER(CONCATENATE, &a, NULL, "f32[2,3]", "f32[4,3]", "f32[0,3]"), "f32[6,3]");
  a.dimensions = INTS(1);
  assert_string_equal(INFER(CONCATENATE, &a, NULL, "f32[2,3]", "f32[2,1]"), "f32[2,4]");
  assert_string_equal(INFER(CONCATENATE, &a, NULL, "f32[2,3]", "f32[3,1]"),
                      "error: concatenate: operand 1 f32[3,1] differs from f32[2,3] in dimension 0");
  assert_string_equal(INFER(CONCATENATE, &a, NULL, "f32[2,3]", "s32[2,1]"),
                      "error: concatenate: operand 1 type s32 differs from f32");
  a.dimensions = INTS(2);
  assert_string_equal(INFER(CONCATENATE, &a, NULL, "f32[2,3]"),
                      "error: concatenate: dimension 2 out of range for rank 2");
}

static void pad_negative_edges_and_interior(void **st) {
  (void)st;
  ir_attrs a = attrs();
  ir_padding_dim p[2] = {{1, 2, 0}, {-1, 0, 1}};
  a.npad = 2;
  a.padding = p;
  /* dim0: 1 + 2 + 3 = 6; dim1: -1 + 0 + 4 + 3*1 = 6 */
  assert_string_equal(INFER(PAD, &a, NULL, "f32[3,4]", "f32[]"), "f32[6,6]");
  ir_padding_dim q[1] = {{1, 1, 5}};
  a.npad = 1;
  a.padding = q;
  /* an empty dimension gets no interior padding: 1 + 1 + 0 */
  assert_string_equal(INFER(PAD, &a, NULL, "s32[0]", "s32[]"), "s32[2]");
  ir_padding_dim r[1] = {{-3, 0, 0}};
  a.padding = r;
  assert_string_equal(INFER(PAD, &a, NULL, "f32[2]", "f32[]"),
                      "error: pad: dimension 0 would have negative size -1 (lo -3, hi 0, interior 0, size 2)");
  ir_padding_dim s[1] = {{0, 0, -1}};
  a.padding = s;
  assert_string_equal(INFER(PAD, &a, NULL, "f32[2]", "f32[]"),
                      "error: pad: interior padding -1 in dimension 0 must be >= 0");
  a.padding = q;
  assert_string_equal(INFER(PAD, &a, NULL, "f32[2]", "f32[1]"), "error: pad: padding value f32[1] must be a scalar");
}

static void reverse_convert_copy_bitcast(void **st) {
  (void)st;
  ir_attrs a = attrs();
  a.dimensions = INTS(1);
  assert_string_equal(INFER(REVERSE, &a, NULL, "f32[2,3]"), "f32[2,3]");
  a.dimensions = INTS(2);
  assert_string_equal(INFER(REVERSE, &a, NULL, "f32[2,3]"),
                      "error: reverse: dimensions[0] = 2 out of range for rank 2");
  /* convert takes its element type from the target, dims from the operand */
  assert_string_equal(INFER(CONVERT, NULL, "bf16[]", "s32[2,2]"), "bf16[2,2]");
  assert_string_equal(INFER(COPY, NULL, NULL, "s8[9]"), "s8[9]");
  assert_string_equal(INFER(BITCAST_CONVERT, NULL, "s32[]", "f32[4]"), "s32[4]");
  assert_string_equal(INFER(BITCAST_CONVERT, NULL, "bf16[]", "f32[4]"),
                      "error: bitcast-convert: f32 and bf16 differ in width (only same-width bitcasts are supported)");
}

/* ---- dot --------------------------------------------------------------- */

static void dot_matmul_and_contracting_mismatch(void **st) {
  (void)st;
  ir_attrs a = attrs();
  a.lhs_contracting = INTS(1);
  a.rhs_contracting = INTS(0);
  assert_string_equal(INFER(DOT, &a, NULL, "f32[2,3]", "f32[3,4]"), "f32[2,4]");
  assert_string_equal(INFER(DOT, &a, NULL, "f32[2,784]", "f32[768,10]"),
                      "error: dot: contracting dimensions differ (784 vs 768)");
  a.lhs_contracting = INTS(0);
  /* vector . matrix: f32[3] x f32[3,4] -> f32[4] */
  assert_string_equal(INFER(DOT, &a, NULL, "f32[3]", "f32[3,4]"), "f32[4]");
}

static void dot_batch_dims_come_first(void **st) {
  (void)st;
  ir_attrs a = attrs();
  a.lhs_batch = INTS(0);
  a.rhs_batch = INTS(0);
  a.lhs_contracting = INTS(2);
  a.rhs_contracting = INTS(1);
  assert_string_equal(INFER(DOT, &a, NULL, "f32[5,2,3]", "f32[5,3,4]"), "f32[5,2,4]");
  /* batch in the middle: result is batch, lhs free, rhs free */
  a.lhs_batch = INTS(1);
  a.rhs_batch = INTS(1);
  a.lhs_contracting = INTS(2);
  a.rhs_contracting = INTS(0);
  assert_string_equal(INFER(DOT, &a, NULL, "f32[2,5,3]", "f32[3,5,4]"), "f32[5,2,4]");
  assert_string_equal(INFER(DOT, &a, NULL, "f32[2,6,3]", "f32[3,5,4]"), "error: dot: batch dimensions differ (6 vs 5)");
  a.lhs_contracting = INTS(1);
  assert_string_equal(INFER(DOT, &a, NULL, "f32[2,5,3]", "f32[5,5,4]"),
                      "error: dot: lhs dimension 1 is both batch and contracting");
  a.lhs_contracting = INTS(2, 2);
  a.rhs_contracting = INTS(0, 2);
  assert_string_equal(INFER(DOT, &a, NULL, "f32[2,5,3]", "f32[3,5,3]"),
                      "error: dot: lhs_contracting_dims repeats dimension 2");
}

static void dot_outer_product_and_result_types(void **st) {
  (void)st;
  ir_attrs a = attrs();
  assert_string_equal(INFER(DOT, &a, NULL, "f32[2]", "f32[3]"), "f32[2,3]");
  a.lhs_contracting = INTS(1);
  a.rhs_contracting = INTS(0);
  a.preferred_type = IR_F32;
  assert_string_equal(INFER(DOT, &a, NULL, "bf16[2,3]", "bf16[3,4]"), "f32[2,4]");
  /* zero-filled attributes (preferred_type reads as pred) mean "unset" */
  a.preferred_type = IR_PRED;
  assert_string_equal(INFER(DOT, &a, NULL, "bf16[2,3]", "bf16[3,4]"), "bf16[2,4]");
  a.preferred_type = IR_S32;
  assert_string_equal(INFER(DOT, &a, NULL, "f32[2,3]", "f32[3,4]"),
                      "error: dot: result type s32 is incompatible with operand type f32");
  /* XLA's type rules: pred from pred; integers widen but never narrow and
   * never become floats; float operands may mix precisions */
  a.preferred_type = IR_PRED;
  assert_string_equal(INFER(DOT, &a, NULL, "pred[2,3]", "pred[3,4]"), "pred[2,4]");
  a.preferred_type = IR_S32;
  assert_string_equal(INFER(DOT, &a, NULL, "s8[2,3]", "s8[3,4]"), "s32[2,4]");
  a.preferred_type = IR_S8;
  assert_string_equal(INFER(DOT, &a, NULL, "s32[2,3]", "s32[3,4]"),
                      "error: dot: result type s8 is incompatible with operand type s32");
  a.preferred_type = IR_F32;
  assert_string_equal(INFER(DOT, &a, NULL, "s8[2,3]", "s8[3,4]"),
                      "error: dot: result type f32 is incompatible with operand type s8");
  a.preferred_type = IR_TYPE_INVALID;
  assert_string_equal(INFER(DOT, &a, NULL, "bf16[2,3]", "f32[3,4]"), "f32[2,4]");
  assert_string_equal(INFER(DOT, &a, NULL, "s8[2,3]", "s32[3,4]"),
                      "error: dot: operand types s8 and s32 are incompatible");
  assert_string_equal(INFER(DOT, &a, NULL, "f32[2,3]", "s32[3,4]"),
                      "error: dot: operand types f32 and s32 are incompatible");
  a.lhs_contracting = INTS(2);
  assert_string_equal(INFER(DOT, &a, NULL, "f32[2,3]", "f32[3,4]"),
                      "error: dot: lhs_contracting_dims[0] = 2 out of range for rank 2");
}

/* ---- convolution ------------------------------------------------------- */

/* dim_labels b01f_01io->b01f */
static ir_attrs conv2d(void) {
  ir_attrs a = attrs();
  a.conv.nspatial = 2;
  a.conv.in_batch = 0, a.conv.in_feature = 3, a.conv.in_spatial[0] = 1, a.conv.in_spatial[1] = 2;
  a.conv.k_spatial[0] = 0, a.conv.k_spatial[1] = 1, a.conv.k_in = 2, a.conv.k_out = 3;
  a.conv.out_batch = 0, a.conv.out_feature = 3, a.conv.out_spatial[0] = 1, a.conv.out_spatial[1] = 2;
  ir_window *w = arena_alloc(M->arena, sizeof *w);
  a.window = w;
  w->rank = 2;
  for (int i = 0; i < 2; i++) w->dims[i] = (ir_window_dim){3, 1, 0, 0, 1, 1, false};
  return a;
}

static void convolution_valid_window(void **st) {
  (void)st;
  ir_attrs a = conv2d();
  /* 5 - 3 + 1 = 3 */
  assert_string_equal(INFER(CONVOLUTION, &a, NULL, "f32[1,5,5,2]", "f32[3,3,2,4]"), "f32[1,3,3,4]");
}

static void convolution_stride_padding_dilation(void **st) {
  (void)st;
  ir_attrs a = conv2d();
  /* dim0: in 7, pad 1+1 -> 9, window 3 dilated by 2 -> 5, stride 2: (9-5)/2+1 = 3
   * dim1: in 6, pad 0+1 -> 7, window 2, stride 1: 7-2+1 = 6 */
  ((ir_window *)a.window)->dims[0] = (ir_window_dim){3, 2, 1, 1, 1, 2, false};
  ((ir_window *)a.window)->dims[1] = (ir_window_dim){2, 1, 0, 1, 1, 1, false};
  assert_string_equal(INFER(CONVOLUTION, &a, NULL, "f32[2,7,6,3]", "f32[3,2,3,8]"), "f32[2,3,6,8]");
  /* lhs dilation 2 of 4 -> 7; window 3: 5. Window larger than input: 0 */
  ((ir_window *)a.window)->dims[0] = (ir_window_dim){3, 1, 0, 0, 2, 1, false};
  ((ir_window *)a.window)->dims[1] = (ir_window_dim){3, 1, 0, 0, 1, 1, false};
  assert_string_equal(INFER(CONVOLUTION, &a, NULL, "f32[1,4,2,3]", "f32[3,3,3,8]"), "f32[1,5,0,8]");
}

/* dim_labels bf0_oi0->bf0 (1-D) */
static ir_attrs conv1d(void) {
  ir_attrs a = attrs();
  a.conv.nspatial = 1;
  a.conv.in_batch = 0, a.conv.in_feature = 1, a.conv.in_spatial[0] = 2;
  a.conv.k_out = 0, a.conv.k_in = 1, a.conv.k_spatial[0] = 2;
  a.conv.out_batch = 0, a.conv.out_feature = 1, a.conv.out_spatial[0] = 2;
  ir_window *w = arena_alloc(M->arena, sizeof *w);
  a.window = w;
  w->rank = 1;
  w->dims[0] = (ir_window_dim){3, 1, 0, 0, 1, 1, false};
  return a;
}

static void convolution_feature_and_batch_groups(void **st) {
  (void)st;
  ir_attrs a = conv1d();
  a.feature_group_count = 3;
  /* 6 input features in 3 groups of 2; 9 output features */
  assert_string_equal(INFER(CONVOLUTION, &a, NULL, "f32[2,6,5]", "f32[9,2,3]"), "f32[2,9,3]");
  assert_string_equal(INFER(CONVOLUTION, &a, NULL, "f32[2,6,5]", "f32[9,3,3]"),
                      "error: convolution: input features 6 / feature_group_count 3 != kernel input features 3");
  assert_string_equal(INFER(CONVOLUTION, &a, NULL, "f32[2,6,5]", "f32[8,2,3]"),
                      "error: convolution: kernel output features 8 not divisible by feature_group_count 3");
  a.feature_group_count = 1;
  a.batch_group_count = 2;
  /* batch 4 in 2 groups -> output batch 2 */
  assert_string_equal(INFER(CONVOLUTION, &a, NULL, "f32[4,3,5]", "f32[6,3,3]"), "f32[2,6,3]");
  assert_string_equal(INFER(CONVOLUTION, &a, NULL, "f32[3,3,5]", "f32[6,3,3]"),
                      "error: convolution: input batch 3 not divisible by batch_group_count 2");
}

static void convolution_output_labels_and_errors(void **st) {
  (void)st;
  ir_attrs a = conv1d();
  /* output labels 0bf: spatial first, then batch, then feature */
  a.conv.out_spatial[0] = 0, a.conv.out_batch = 1, a.conv.out_feature = 2;
  assert_string_equal(INFER(CONVOLUTION, &a, NULL, "f32[2,3,5]", "f32[9,3,3]"), "f32[3,2,9]");
  assert_string_equal(INFER(CONVOLUTION, &a, NULL, "f32[2,3,5]", "f32[9,3,2]"),
                      "error: convolution: window size 3 in dimension 0 differs from kernel size 2");
  assert_string_equal(INFER(CONVOLUTION, &a, NULL, "f32[2,3,5,1]", "f32[9,3,3]"),
                      "error: convolution: input f32[2,3,5,1] has rank 4, dim_labels expect 3");
  a.conv.out_batch = 0;
  assert_string_equal(INFER(CONVOLUTION, &a, NULL, "f32[2,3,5]", "f32[9,3,3]"),
                      "error: convolution: dim_labels repeat an output dimension");
  a = conv1d();
  ((ir_window *)a.window)->dims[0].stride = 0;
  assert_string_equal(INFER(CONVOLUTION, &a, NULL, "f32[2,3,5]", "f32[9,3,3]"),
                      "error: convolution: window dimension 0 has stride 0 (must be >= 1)");
}

/* ---- reductions -------------------------------------------------------- */

static void reduce_drops_dimensions(void **st) {
  (void)st;
  ir_attrs a = attrs();
  a.dimensions = INTS(0, 2);
  assert_string_equal(INFER_CALL(REDUCE, &a, ADD_F32, "f32[4,5,6]", "f32[]"), "f32[5]");
  a.dimensions = INTS(0, 1, 2);
  assert_string_equal(INFER_CALL(REDUCE, &a, ADD_F32, "f32[4,5,6]", "f32[]"), "f32[]");
  a.dimensions = (ir_ints){0};
  assert_string_equal(INFER_CALL(REDUCE, &a, ADD_S32, "s32[4,5]", "s32[]"), "s32[4,5]");
}

static void reduce_variadic_gives_tuple(void **st) {
  (void)st;
  ir_attrs a = attrs();
  a.dimensions = INTS(1);
  assert_string_equal(INFER_CALL(REDUCE, &a, VAR_RED, "f32[4,5]", "s32[4,5]", "f32[]", "s32[]"), "(f32[4], s32[4])");
  assert_string_equal(INFER_CALL(REDUCE, &a, VAR_RED, "f32[4,5]", "s32[4,6]", "f32[]", "s32[]"),
                      "error: reduce: input 1 s32[4,6] does not match input 0 f32[4,5]");
}

static void reduce_checks_to_apply_signature(void **st) {
  (void)st;
  ir_attrs a = attrs();
  a.dimensions = INTS(0);
  assert_string_equal(INFER_CALL(REDUCE, &a, ADD_F32, "s32[4]", "s32[]"),
                      "error: reduce: to_apply add_f32 parameter 0 is f32[], expected s32[]");
  assert_string_equal(INFER_CALL(REDUCE, &a, VAR_RED, "f32[4]", "f32[]"),
                      "error: reduce: to_apply argmax_like takes 4 parameters, expected 2");
  assert_string_equal(INFER_CALL(REDUCE, &a, BAD_RED, "f32[4]", "f32[]"),
                      "error: reduce: to_apply bad_red returns s32[], expected f32[]");
  assert_string_equal(INFER_CALL(REDUCE, &a, ADD_F32, "f32[4]", "s32[]"),
                      "error: reduce: init value 0 type s32 differs from input type f32");
  assert_string_equal(INFER_CALL(REDUCE, &a, ADD_F32, "f32[4]", "f32[1]"),
                      "error: reduce: init value 0 f32[1] must be a scalar");
  assert_string_equal(INFER(REDUCE, &a, NULL, "f32[4]", "f32[]"),
                      "error: reduce: expected one called computation (to_apply=), got 0");
  assert_string_equal(INFER_CALL(REDUCE, &a, 99, "f32[4]", "f32[]"),
                      "error: reduce: to_apply computation 99 does not exist");
  a.dimensions = INTS(1);
  assert_string_equal(INFER_CALL(REDUCE, &a, ADD_F32, "f32[4]", "f32[]"),
                      "error: reduce: dimensions[0] = 1 out of range for rank 1");
}

static void reduce_window_strides_padding_dilation(void **st) {
  (void)st;
  ir_attrs a = attrs();
  ir_window win_a;
  memset(&win_a, 0, sizeof win_a);
  a.window = &win_a;
  win_a.rank = 2;
  win_a.dims[0] = (ir_window_dim){2, 2, 0, 0, 1, 1, false};
  win_a.dims[1] = (ir_window_dim){3, 3, 0, 0, 1, 1, false};
  assert_string_equal(INFER_CALL(REDUCE_WINDOW, &a, ADD_F32, "f32[4,6]", "f32[]"), "f32[2,2]");
  /* dim0: base 4 dilated by 2 -> 7, pad 1+1 -> 9, window 3 dilated by 2 -> 5,
   * stride 2: (9-5)/2+1 = 3. dim1: 6 with window 3 stride 3 -> 2 */
  win_a.dims[0] = (ir_window_dim){3, 2, 1, 1, 2, 2, false};
  assert_string_equal(INFER_CALL(REDUCE_WINDOW, &a, ADD_F32, "f32[4,6]", "f32[]"), "f32[3,2]");
  win_a.rank = 1;
  assert_string_equal(INFER_CALL(REDUCE_WINDOW, &a, ADD_F32, "f32[4,6]", "f32[]"),
                      "error: reduce-window: window has 1 dimensions, operand f32[4,6] has rank 2");
}

static void all_reduce_keeps_shapes(void **st) {
  (void)st;
  ir_attrs a = attrs();
  assert_string_equal(INFER_CALL(ALL_REDUCE, &a, ADD_F32, "f32[8]"), "f32[8]");
  assert_string_equal(INFER_CALL(ALL_REDUCE, &a, ADD_F32, "f32[8]", "f32[2,2]"), "(f32[8], f32[2,2])");
  assert_string_equal(INFER_CALL(ALL_REDUCE, &a, ADD_F32, "s32[8]"),
                      "error: all-reduce: to_apply add_f32 parameter 0 is f32[], expected s32[]");
}

/* ---- structure and leaves ---------------------------------------------- */

static void tuple_and_get_tuple_element(void **st) {
  (void)st;
  assert_string_equal(INFER(TUPLE, NULL, NULL, "f32[2]", "s32[]"), "(f32[2], s32[])");
  assert_string_equal(infer(IR_OP_TUPLE, NULL, NULL, 0, NULL, NULL, 0), "()");
  ir_attrs a = attrs();
  a.index = 1;
  assert_string_equal(INFER(GET_TUPLE_ELEMENT, &a, NULL, "(f32[2], (s32[], pred[3]))"), "(s32[], pred[3])");
  a.index = 2;
  assert_string_equal(INFER(GET_TUPLE_ELEMENT, &a, NULL, "(f32[2], s32[])"),
                      "error: get-tuple-element: index 2 out of range for a tuple of 2 elements");
  a.index = 0;
  assert_string_equal(INFER(GET_TUPLE_ELEMENT, &a, NULL, "f32[2]"),
                      "error: get-tuple-element: operand f32[2] is not a tuple");
}

static void fusion_returns_root_shape(void **st) {
  (void)st;
  assert_string_equal(infer(IR_OP_FUSION, NULL, NULL, SPECS("f32[3]", "f32[3]"), (ir_comp_id[]){FUSED}, 1), "f32[3]");
  assert_string_equal(infer(IR_OP_FUSION, NULL, NULL, SPECS("f32[3]", "f32[4]"), (ir_comp_id[]){FUSED}, 1),
                      "error: fusion: operand 1 f32[4] does not match parameter 1 f32[3] of fused");
  assert_string_equal(infer(IR_OP_FUSION, NULL, NULL, SPECS("f32[3]"), (ir_comp_id[]){FUSED}, 1),
                      "error: fusion: computation fused takes 2 parameters, given 1 operands");
}

static void iota_parameter_constant_validate_target(void **st) {
  (void)st;
  ir_attrs a = attrs();
  a.index = 1;
  assert_string_equal(INFER0(IOTA, &a, "s32[4,5]"), "s32[4,5]");
  a.index = 2;
  assert_string_equal(INFER0(IOTA, &a, "s32[4,5]"), "error: iota: iota_dimension 2 out of range for rank 2");
  a.index = 0;
  assert_string_equal(INFER0(IOTA, &a, "s32[]"), "error: iota: result must have rank >= 1");
  assert_string_equal(INFER0(PARAMETER, &a, "(f32[2], s8[])"), "(f32[2], s8[])");
  a.parameter_number = -1;
  assert_string_equal(INFER0(PARAMETER, &a, "f32[2]"), "error: parameter: parameter number -1 must be >= 0");
  a.parameter_number = 0;
  ir_shape ls = tu_shape(M->arena, "f32[3]");
  a.literal = ir_literal_create(M->arena, &ls);
  assert_string_equal(INFER0(CONSTANT, &a, "f32[3]"), "f32[3]");
  assert_string_equal(INFER0(CONSTANT, &a, "f32[4]"), "error: constant: literal shape f32[3] differs from result f32[4]");
}

static void result_layout_is_default(void **st) {
  (void)st;
  ir_attrs a = attrs();
  a.dimensions = INTS(1, 0);
  ir_shape x = tu_shape(M->arena, "f32[2,3]"), out;
  char err[128];
  assert_true(ir_infer_shape(M, IR_OP_TRANSPOSE, &x, 1, &a, NULL, 0, &out, err, sizeof err));
  assert_null(out.layout); /* the default */
  assert_int_equal(ir_shape_layout(&out)->minor_to_major[0], 1);
  assert_int_equal(ir_shape_layout(&out)->minor_to_major[1], 0);
  assert_int_equal(ir_shape_layout(&out)->ntiles, 0);
}

/* Shapes from the XLA corpus (../shared/corpus/hlo), checked by hand. */
static void corpus_integer_dot_batch_last(void **st) {
  (void)st;
  /* dot_operation_test__IntegerDotTest: batch 5, lhs free 4, rhs free 6 */
  ir_attrs a = attrs();
  a.lhs_batch = INTS(2);
  a.lhs_contracting = INTS(1);
  a.rhs_batch = INTS(1);
  a.rhs_contracting = INTS(0);
  a.preferred_type = IR_S32;
  assert_string_equal(INFER(DOT, &a, NULL, "s32[4,3,5]", "s32[3,5,6]"), "s32[5,4,6]");
}

static void corpus_conv0d_and_boolean_conv(void **st) {
  (void)st;
  /* convolution_test__TestConv0D: dim_labels=bf_io->bf, no window */
  ir_attrs a = attrs();
  a.conv.nspatial = 0;
  a.conv.in_batch = 0, a.conv.in_feature = 1;
  a.conv.k_in = 0, a.conv.k_out = 1;
  a.conv.out_batch = 0, a.conv.out_feature = 1;
  assert_string_equal(INFER(CONVOLUTION, &a, NULL, "f32[10,5]", "f32[5,7]"), "f32[10,7]");
  /* convolution_test__TestBooleanInput: bf0_oi0->bf0, size=3 pad=1_1 */
  a = conv1d();
  ((ir_window *)a.window)->dims[0].pad_lo = ((ir_window *)a.window)->dims[0].pad_hi = 1;
  a.preferred_type = IR_PRED;
  assert_string_equal(INFER(CONVOLUTION, &a, NULL, "pred[3,3,3]", "pred[3,3,3]"), "pred[3,3,3]");
}

static void corpus_reduce_window_scalar_and_variadic(void **st) {
  (void)st;
  /* hlo_parser_test__ReduceWindowScalar / ReduceWindowVariadic: rank 0, no window */
  ir_attrs a = attrs();
  assert_string_equal(INFER_CALL(REDUCE_WINDOW, &a, ADD_F32, "f32[]", "f32[]"), "f32[]");
  assert_string_equal(INFER_CALL(REDUCE_WINDOW, &a, VAR_RED, "f32[]", "s32[]", "f32[]", "s32[]"), "(f32[], s32[])");
}

static void errors_are_truncated_to_buffer(void **st) {
  (void)st;
  ir_shape ops[2] = {tu_shape(M->arena, "f32[2]"), tu_shape(M->arena, "f32[3]")}, out;
  char err[8];
  assert_false(ir_infer_shape(M, IR_OP_ADD, ops, 2, NULL, NULL, 0, &out, err, sizeof err));
  assert_string_equal(err, "add: op");
  assert_false(ir_infer_shape(M, IR_OP_ADD, ops, 2, NULL, NULL, 0, &out, NULL, 0));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(elementwise_same_shapes),
      cmocka_unit_test(elementwise_operand_mismatch_message),
      cmocka_unit_test(compare_and_is_finite_give_pred),
      cmocka_unit_test(elementwise_type_classes),
      cmocka_unit_test(select_scalar_predicate_and_errors),
      cmocka_unit_test(clamp_scalar_bounds_and_errors),
      cmocka_unit_test(broadcast_takes_target_and_maps_dims),
      cmocka_unit_test(reshape_keeps_element_count),
      cmocka_unit_test(transpose_permutes),
      cmocka_unit_test(slice_strided_and_bounds),
      cmocka_unit_test(concatenate_sums_one_dim),
      cmocka_unit_test(pad_negative_edges_and_interior),
      cmocka_unit_test(reverse_convert_copy_bitcast),
      cmocka_unit_test(dot_matmul_and_contracting_mismatch),
      cmocka_unit_test(dot_batch_dims_come_first),
      cmocka_unit_test(dot_outer_product_and_result_types),
      cmocka_unit_test(convolution_valid_window),
      cmocka_unit_test(convolution_stride_padding_dilation),
      cmocka_unit_test(convolution_feature_and_batch_groups),
      cmocka_unit_test(convolution_output_labels_and_errors),
      cmocka_unit_test(reduce_drops_dimensions),
      cmocka_unit_test(reduce_variadic_gives_tuple),
      cmocka_unit_test(reduce_checks_to_apply_signature),
      cmocka_unit_test(reduce_window_strides_padding_dilation),
      cmocka_unit_test(all_reduce_keeps_shapes),
      cmocka_unit_test(tuple_and_get_tuple_element),
      cmocka_unit_test(fusion_returns_root_shape),
      cmocka_unit_test(iota_parameter_constant_validate_target),
      cmocka_unit_test(result_layout_is_default),
      cmocka_unit_test(corpus_integer_dot_batch_last),
      cmocka_unit_test(corpus_conv0d_and_boolean_conv),
      cmocka_unit_test(corpus_reduce_window_scalar_and_variadic),
      cmocka_unit_test(errors_are_truncated_to_buffer),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
