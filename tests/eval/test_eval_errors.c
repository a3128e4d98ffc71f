/* test_eval_errors.c: the evaluator fails with a status and a message that
 * names the instruction, never a crash: wrong arguments, byte limits,
 * malformed instructions, ops undefined on a type, runaway recursion. */
#include "eval_test.h"

static ir_attrs attrs(void) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  return a;
}

static void expect_error(tb *t, ir_id root, ir_literal **args, int nargs, base_status want,
                         const char *fragment) {
  ir_literal *out = (ir_literal *)1;
  base_status st = tb_eval(t, root, args, nargs, &out);
  if (st != want)
    fail_msg("status %s, expected %s (%s)", base_status_str(st), base_status_str(want), t->err);
  assert_null(out);
  if (!strstr(t->err, fragment)) fail_msg("message \"%s\" lacks \"%s\"", t->err, fragment);
}

static void wrong_argument_shape_names_the_parameter(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_id p = tb_param(&t, 0, SH(IR_F32, 2));
  ir_inst_get(t.m, t.entry, p)->info->loc = (src_loc){"model.hlo", 3, 5};
  ir_literal *arg = tb_lit(&t, SH(IR_F32, 3), VALS(1, 2, 3));
  expect_error(&t, p, &arg, 1, ST_INVALID_ARGUMENT, "argument 0 has shape f32[3], expected f32[2]");
  assert_non_null(strstr(t.err, "model.hlo:3:5:"));
  assert_non_null(strstr(t.err, ir_inst_get(t.m, t.entry, p)->info->name));
  tb_free(&t);
  tb_init(&t); /* wrong type */
  p = tb_param(&t, 0, SH(IR_F32, 2));
  arg = tb_lit(&t, SH(IR_S32, 2), VALS(1, 2));
  expect_error(&t, p, &arg, 1, ST_INVALID_ARGUMENT, "s32[2]");
  tb_free(&t);
}

static void wrong_argument_count(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_id p = tb_param(&t, 0, SH(IR_F32, 2));
  expect_error(&t, p, NULL, 0, ST_INVALID_ARGUMENT, "parameter(0)");
  tb_free(&t);
  tb_init(&t);
  p = tb_param(&t, 0, SH(IR_F32, 1));
  ir_literal *args[2] = {tb_lit(&t, SH(IR_F32, 1), VALS(1)), tb_lit(&t, SH(IR_F32, 1), VALS(2))};
  expect_error(&t, p, args, 2, ST_INVALID_ARGUMENT, "takes 1 arguments, 2 given");
  tb_free(&t);
}

static void byte_limit_names_the_instruction(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  t.opts.max_bytes = 1 << 20;
  ir_attrs a = attrs();
  ir_id s = tb_scalar(&t, IR_F32, 1);
  ir_id b = OP1(&t, IR_OP_BROADCAST, SH(IR_F32, 1024, 1024), &a, s);
  expect_error(&t, b, NULL, 0, ST_RESOURCE_EXHAUSTED,
               ir_inst_get(t.m, t.entry, b)->info->name);
  assert_non_null(strstr(t.err, "limit"));
  tb_free(&t);
  tb_init(&t); /* an element count that overflows is refused, not allocated */
  s = tb_scalar(&t, IR_F32, 1);
  b = OP1(&t, IR_OP_BROADCAST, SH(IR_F32, (int64_t)1 << 30, (int64_t)1 << 30, 1 << 20), &a, s);
  ir_literal *out = NULL;
  assert_int_not_equal(tb_eval(&t, b, NULL, 0, &out), ST_OK);
  assert_null(out);
  tb_free(&t);
}

static void work_limit_stops_huge_windows_and_dots(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* a 2^30 x 2^30 window over a padded 2x2 input: 2^60 steps, refused at once */
  ir_comp_id f = tb_binary_comp(&t, IR_OP_ADD, IR_F32);
  ir_attrs a = attrs();
  ir_window win_a;
  memset(&win_a, 0, sizeof win_a);
  a.window = &win_a;
  win_a.rank = 2;
  win_a.dims[0] = win_a.dims[1] =
  		(ir_window_dim){(int64_t)1 << 30, 1, (int64_t)1 << 30, (int64_t)1 << 30, 1, 1, false};
  ir_id x = tb_param(&t, 0, SH(IR_F32, 2, 2));
  ir_id i = tb_scalar(&t, IR_F32, 0);
  /* padded 2^31 + 2, window 2^30: 2^30 + 3 outputs per dim */
  int64_t od = ((int64_t)1 << 30) + 3;
  ir_id r = tb_op(&t, IR_OP_REDUCE_WINDOW, SH(IR_F32, od, od), &a, 2, (ir_id[]){x, i}, 1, &f);
  ir_literal *arg = tb_lit(&t, SH(IR_F32, 2, 2), VALS(1, 2, 3, 4));
  expect_error(&t, r, &arg, 1, ST_RESOURCE_EXHAUSTED, "steps");
  tb_free(&t);
  tb_init(&t); /* a 64x64x64 dot is 2^18 products: over a limit of 100000 steps */
  t.opts.max_steps = 100000;
  a = attrs();
  a.lhs_contracting = INTS(1);
  a.rhs_contracting = INTS(0);
  ir_id l = tb_param(&t, 0, SH(IR_F32, 64, 64));
  r = OP2(&t, IR_OP_DOT, SH(IR_F32, 64, 64), &a, l, l);
  ir_shape s = SH(IR_F32, 64, 64);
  arg = ir_literal_create(t.out, &s);
  expect_error(&t, r, &arg, 1, ST_RESOURCE_EXHAUSTED,
               ir_inst_get(t.m, t.entry, r)->info->name);
  tb_free(&t);
}

static void op_undefined_on_type_is_an_error(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_id x = tb_scalar(&t, IR_S32, 2);
  ir_id e = OP1(&t, IR_OP_EXP, SCALAR(IR_S32), NULL, x);
  expect_error(&t, e, NULL, 0, ST_INVALID_ARGUMENT, "exponential is not defined on s32");
  tb_free(&t);
  tb_init(&t);
  ir_id f = tb_scalar(&t, IR_F32, 2);
  ir_id sh = OP2(&t, IR_OP_SHL, SCALAR(IR_F32), NULL, f, f);
  expect_error(&t, sh, NULL, 0, ST_INVALID_ARGUMENT, "shift-left is not defined on f32");
  tb_free(&t);
}

static void inconsistent_shapes_are_reported(void **state) {
  (void)state;
  tb t;
  tb_init(&t); /* add declared f32[3] over f32[2] operands */
  ir_id x = tb_param(&t, 0, SH(IR_F32, 2));
  ir_id r = OP2(&t, IR_OP_ADD, SH(IR_F32, 3), NULL, x, x);
  ir_literal *arg = tb_lit(&t, SH(IR_F32, 2), VALS(1, 2));
  expect_error(&t, r, &arg, 1, ST_INVALID_ARGUMENT, "neither a scalar nor the result");
  tb_free(&t);
  tb_init(&t); /* slice past the end */
  ir_attrs a = attrs();
  a.slice_start = INTS(1);
  a.slice_limit = INTS(5);
  a.slice_stride = INTS(1);
  x = tb_param(&t, 0, SH(IR_F32, 2));
  r = OP1(&t, IR_OP_SLICE, SH(IR_F32, 4), &a, x);
  arg = tb_lit(&t, SH(IR_F32, 2), VALS(1, 2));
  expect_error(&t, r, &arg, 1, ST_INVALID_ARGUMENT, "slice [1:5:1]");
  tb_free(&t);
  tb_init(&t); /* transpose that is not a permutation */
  a = attrs();
  a.dimensions = INTS(0, 0);
  x = tb_param(&t, 0, SH(IR_F32, 2, 2));
  r = OP1(&t, IR_OP_TRANSPOSE, SH(IR_F32, 2, 2), &a, x);
  arg = tb_lit(&t, SH(IR_F32, 2, 2), VALS(1, 2, 3, 4));
  expect_error(&t, r, &arg, 1, ST_INVALID_ARGUMENT, "permutation");
  tb_free(&t);
  tb_init(&t); /* dot with mismatched contracting sizes */
  a = attrs();
  a.lhs_contracting = INTS(0);
  a.rhs_contracting = INTS(0);
  ir_id l = tb_param(&t, 0, SH(IR_F32, 2)), rr = tb_param(&t, 1, SH(IR_F32, 3));
  r = OP2(&t, IR_OP_DOT, SCALAR(IR_F32), &a, l, rr);
  ir_literal *args[2] = {tb_lit(&t, SH(IR_F32, 2), VALS(1, 2)),
                         tb_lit(&t, SH(IR_F32, 3), VALS(1, 2, 3))};
  expect_error(&t, r, args, 2, ST_INVALID_ARGUMENT,
               "contracting dimension 0 sizes differ (2 vs 3)");
  tb_free(&t);
}

static void operand_defined_after_use_is_an_error(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* add.0 uses id 1, which comes after it: not topologically ordered */
  ir_id r = OP2(&t, IR_OP_ADD, SCALAR(IR_F32), NULL, 1, 1);
  tb_scalar(&t, IR_F32, 1);
  expect_error(&t, r, NULL, 0, ST_INVALID_ARGUMENT, "not evaluated before its use");
  tb_free(&t);
}

static void unknown_opcode_is_an_error(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_id r = tb_op(&t, (ir_op)(IR_OP__COUNT + 7), SCALAR(IR_F32), NULL, 0, NULL, 0, NULL);
  expect_error(&t, r, NULL, 0, ST_INVALID_ARGUMENT, "unknown opcode");
  tb_free(&t);
}

/* Variadic ops that read their first operand, given none (the evaluator
 * once returned an uninitialised pointer for async-update). */
static void variadic_ops_without_operands(void **state) {
  (void)state;
  const ir_op ops[] = {IR_OP_ASYNC_UPDATE, IR_OP_ASYNC_DONE};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    tb t;
    tb_init(&t);
    ir_id r = tb_op(&t, ops[k], SCALAR(IR_F32), NULL, 0, NULL, 0, NULL);
    expect_error(&t, r, NULL, 0, ST_INVALID_ARGUMENT, "needs an operand");
    tb_free(&t);
  }
}

static void missing_root_and_entry(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  tb_scalar(&t, IR_F32, 1);
  expect_error(&t, IR_NONE, NULL, 0, ST_INVALID_ARGUMENT, "has no root");
  tb_free(&t);
  tb_init(&t);
  ir_id c = tb_scalar(&t, IR_F32, 1);
  t.m->entry = IR_NONE;
  expect_error(&t, c, NULL, 0, ST_INVALID_ARGUMENT, "no entry computation");
  tb_free(&t);
}

static void self_calling_fusion_stops_at_depth_limit(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* main: fusion(x) calls "loop", whose root is a fusion calling "loop" */
  ir_comp_id loop = ir_comp_add(t.m, "loop");
  t.c = loop;
  ir_id lp = tb_param(&t, 0, SCALAR(IR_F32));
  ir_comp_get(t.m, loop)->root = tb_op(&t, IR_OP_FUSION, SCALAR(IR_F32), NULL, 1, &lp, 1, &loop);
  t.c = t.entry;
  ir_id x = tb_scalar(&t, IR_F32, 1);
  ir_id f = tb_op(&t, IR_OP_FUSION, SCALAR(IR_F32), NULL, 1, &x, 1, &loop);
  expect_error(&t, f, NULL, 0, ST_RESOURCE_EXHAUSTED, "nested deeper");
  tb_free(&t);
}

static void reduce_with_bad_to_apply_signature(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_comp_id f = tb_binary_comp(&t, IR_OP_ADD, IR_S32); /* s32 computation for f32 data */
  ir_attrs a = attrs();
  a.dimensions = INTS(0);
  ir_id x = tb_param(&t, 0, SH(IR_F32, 2));
  ir_id i = tb_scalar(&t, IR_F32, 0);
  ir_id r = tb_op(&t, IR_OP_REDUCE, SCALAR(IR_F32), &a, 2, (ir_id[]){x, i}, 1, &f);
  ir_literal *arg = tb_lit(&t, SH(IR_F32, 2), VALS(1, 2));
  expect_error(&t, r, &arg, 1, ST_INVALID_ARGUMENT, "to_apply");
  tb_free(&t);
}

static void result_outlives_the_module(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_id c = tb_const(&t, SH(IR_S32, 3), VALS(7, 8, 9));
  ir_literal *out = tb_run(&t, c, NULL, 0);
  ir_module_destroy(t.m);
  t.m = NULL;
  expect_i(out, IVALS(7, 8, 9));
  arena_destroy(t.out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(wrong_argument_shape_names_the_parameter),
      cmocka_unit_test(wrong_argument_count),
      cmocka_unit_test(byte_limit_names_the_instruction),
      cmocka_unit_test(work_limit_stops_huge_windows_and_dots),
      cmocka_unit_test(op_undefined_on_type_is_an_error),
      cmocka_unit_test(inconsistent_shapes_are_reported),
      cmocka_unit_test(operand_defined_after_use_is_an_error),
      cmocka_unit_test(variadic_ops_without_operands),
      cmocka_unit_test(unknown_opcode_is_an_error),
      cmocka_unit_test(missing_root_and_entry),
      cmocka_unit_test(self_calling_fusion_stops_at_depth_limit),
      cmocka_unit_test(reduce_with_bad_to_apply_signature),
      cmocka_unit_test(result_outlives_the_module),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
