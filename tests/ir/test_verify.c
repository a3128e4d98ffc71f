/* test_verify.c: ir_verify on modules built with ir_inst_add, one kind of
 * malformation per test, each checked by its exact message and count. */
#include "ir_test_util.h"

/* A well-formed base: main(p0: f32[2], p1: f32[2]) -> add(p0, p1). */
typedef struct fixture {
  ir_module *m;
  ir_comp_id c;
  ir_id p0, p1, add;
  diag *d;
} fixture;

static ir_attrs attrs(void) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.feature_group_count = a.batch_group_count = 1;
  return a;
}

static int setup(void **st) {
  fixture *f = calloc(1, sizeof *f);
  f->m = ir_module_create("verify_test");
  f->c = ir_comp_add(f->m, "main");
  f->p0 = tu_param(f->m, f->c, 0, "p0", "f32[2]");
  f->p1 = tu_param(f->m, f->c, 1, "p1", "f32[2]");
  f->add = tu_inst(f->m, f->c, IR_OP_ADD, "add.3", "f32[2]", 2, (ir_id[]){f->p0, f->p1}, NULL);
  ir_comp_get(f->m, f->c)->root = f->add;
  ir_comp_finish(f->m, f->c);
  f->m->entry = f->c;
  f->d = diag_create();
  *st = f;
  return 0;
}

static int teardown(void **st) {
  fixture *f = *st;
  ir_module_destroy(f->m);
  diag_destroy(f->d);
  free(f);
  return 0;
}

/* Verifies and checks that exactly `n` problems were found, the first one
 * reading `first`. */
static void expect(fixture *f, int n, const char *first) {
  int got = ir_verify(f->m, f->d);
  if (got != n || strcmp(diag_first_message(f->d), first) != 0) print_message("%s", diag_text(f->d));
  assert_string_equal(diag_first_message(f->d), first);
  assert_int_equal(got, n);
  assert_int_equal(diag_error_count(f->d), n);
}

static ir_inst *inst(fixture *f, ir_id i) { return ir_inst_get(f->m, f->c, i); }

/* Gives instruction i the shape spelled spec, bypassing inference. */
static void set_shape(fixture *f, ir_id i, const char *spec) {
  ir_shape s = tu_shape(f->m->arena, spec);
  ir_inst_set_shape(f->m, inst(f, i), &s);
}

/* i's attributes, writable (to corrupt them). */
static ir_attrs *attrs_of(fixture *f, ir_id i) { return ir_inst_attrs_mut(f->m, inst(f, i)); }

static void well_formed_module_has_no_problems(void **st) {
  fixture *f = *st;
  assert_int_equal(ir_verify(f->m, f->d), 0);
  assert_string_equal(diag_text(f->d), "");
}

static void operand_shape_mismatch(void **st) {
  fixture *f = *st;
  set_shape(f, f->p1, "f32[3]");
  expect(f, 1, "verify: %add.3: operand 1 shape f32[3] does not match f32[2]");
}

static void declared_shape_differs_from_inferred(void **st) {
  fixture *f = *st;
  set_shape(f, f->add, "f32[3]");
  expect(f, 1, "verify: %add.3: shape f32[3] does not match inferred f32[2]");
}

static void layout_difference_is_accepted(void **st) {
  fixture *f = *st;
  ir_id t = tu_inst(f->m, f->c, IR_OP_TRANSPOSE, "t", "f32[2]", 1, &f->add, &(ir_attrs){.dimensions = INTS(0)});
  (void)t;
  ir_shape s = tu_shape(f->m->arena, "f32[2,3]");
  ir_layout l = *ir_layout_default(2);
  l.minor_to_major[0] = 0;
  l.minor_to_major[1] = 1;
  s.layout = &l;
  ir_id p2 = tu_param(f->m, f->c, 2, "p2", "f32[2,3]");
  ir_inst_set_shape(f->m, inst(f, p2), &s);
  ir_id cp = tu_inst(f->m, f->c, IR_OP_COPY, "cp", "f32[2,3]", 1, &p2, NULL);
  (void)cp;
  ir_comp_finish(f->m, f->c);
  assert_int_equal(ir_verify(f->m, f->d), 0);
}

static void bad_layout_is_reported(void **st) {
  fixture *f = *st;
  ir_shape s = tu_shape(f->m->arena, "f32[2,2]");
  ir_layout l = *ir_layout_default(2);
  l.minor_to_major[0] = 1;
  l.minor_to_major[1] = 1;
  s.layout = &l;
  ir_inst_set_shape(f->m, inst(f, f->p0), &s);
  inst(f, f->p1)->shape = inst(f, f->p0)->shape;
  inst(f, f->add)->shape = inst(f, f->p0)->shape;
  expect(f, 3, "verify: %p0: layout minor_to_major is not a permutation of 0..1");
}

static void no_entry(void **st) {
  fixture *f = *st;
  f->m->entry = IR_NONE;
  expect(f, 1, "verify: module verify_test has no entry computation");
}

static void computation_without_root(void **st) {
  fixture *f = *st;
  ir_comp_get(f->m, f->c)->root = IR_NONE;
  expect(f, 1, "verify: computation main has no root");
}

static void operand_out_of_range(void **st) {
  fixture *f = *st;
  inst(f, f->add)->ops[1] = 17;
  expect(f, 1, "verify: %add.3: operand 1 refers to instruction 17, not in computation main");
}

static void wrong_arity(void **st) {
  fixture *f = *st;
  inst(f, f->add)->nops = 1;
  expect(f, 1, "verify: %add.3: add takes 2 operands, has 1");
}

static void use_before_definition(void **st) {
  fixture *f = *st;
  ir_id n = tu_inst(f->m, f->c, IR_OP_NEGATE, "neg", "f32[2]", 1, &f->add, NULL);
  /* make add use neg (defined later) without a cycle: add(p0, neg) with neg(p1) */
  inst(f, n)->ops[0] = f->p1;
  inst(f, f->add)->ops[1] = n;
  expect(f, 1, "verify: %add.3: operand 1 %neg is used before its definition");
}

static void cycle_is_reported(void **st) {
  fixture *f = *st;
  ir_id n = tu_inst(f->m, f->c, IR_OP_NEGATE, "neg", "f32[2]", 1, &f->add, NULL);
  inst(f, f->add)->ops[1] = n;
  expect(f, 1, "verify: %add.3: computation main has a cycle through this instruction");
}

static void operand_refers_to_removed_instruction(void **st) {
  fixture *f = *st;
  inst(f, f->p1)->dead = true;
  ir_comp_finish(f->m, f->c);
  expect(f, 1, "verify: %add.3: operand 1 refers to removed instruction %p1");
}

static void duplicate_parameter_number(void **st) {
  fixture *f = *st;
  attrs_of(f, f->p1)->parameter_number = 0;
  expect(f, 1, "verify: %p1: parameter number 0 already used by %p0");
}

static void parameter_numbers_with_gap(void **st) {
  fixture *f = *st;
  attrs_of(f, f->p1)->parameter_number = 2;
  expect(f, 1, "verify: %p1: parameter number 2 out of range: computation main has 2 parameters");
}

static void stale_params_array(void **st) {
  fixture *f = *st;
  tu_param(f->m, f->c, 2, "p2", "f32[2]");
  expect(f, 1, "verify: computation main: params[] is out of date (call ir_comp_finish)");
}

static void duplicate_instruction_names(void **st) {
  fixture *f = *st;
  inst(f, f->p1)->info->name = "p0";
  expect(f, 1, "verify: %p0: instruction name is used twice");
}

static void transpose_not_a_permutation(void **st) {
  fixture *f = *st;
  ir_attrs a = attrs();
  a.dimensions = INTS(0, 0);
  ir_id p2 = tu_param(f->m, f->c, 2, "p2", "f32[2,3]");
  tu_inst(f->m, f->c, IR_OP_TRANSPOSE, "tr", "f32[3,2]", 1, &p2, &a);
  ir_comp_finish(f->m, f->c);
  expect(f, 1, "verify: %tr: dimensions repeats dimension 0");
}

static void tuple_index_out_of_range(void **st) {
  fixture *f = *st;
  ir_id t = tu_inst(f->m, f->c, IR_OP_TUPLE, "tup", "(f32[2], f32[2])", 2, (ir_id[]){f->p0, f->p1}, NULL);
  ir_attrs a = attrs();
  a.index = 2;
  tu_inst(f->m, f->c, IR_OP_GET_TUPLE_ELEMENT, "gte", "f32[2]", 1, &t, &a);
  expect(f, 1, "verify: %gte: index 2 out of range for a tuple of 2 elements");
}

static void iota_dimension_out_of_range(void **st) {
  fixture *f = *st;
  ir_attrs a = attrs();
  a.index = 1;
  tu_inst(f->m, f->c, IR_OP_IOTA, "io", "s32[5]", 0, NULL, &a);
  expect(f, 1, "verify: %io: iota_dimension 1 out of range for rank 1");
}

static void constant_literal_shape_mismatch(void **st) {
  fixture *f = *st;
  ir_attrs a = attrs();
  ir_shape ls = tu_shape(f->m->arena, "f32[3]");
  a.literal = ir_literal_create(f->m->arena, &ls);
  tu_inst(f->m, f->c, IR_OP_CONSTANT, "k", "f32[2]", 0, NULL, &a);
  expect(f, 1, "verify: %k: literal shape f32[3] does not match instruction shape f32[2]");
}

static void constant_without_literal(void **st) {
  fixture *f = *st;
  tu_inst(f->m, f->c, IR_OP_CONSTANT, "k", "f32[2]", 0, NULL, NULL);
  expect(f, 1, "verify: %k: constant has no literal");
}

static void called_computation_missing(void **st) {
  fixture *f = *st;
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_FUSION;
  in.name = "fu";
  in.shape = tu_shape(f->m->arena, "f32[2]");
  in.nops = 1;
  in.ops = &f->p0;
  in.ncalls = 1;
  in.calls = (ir_comp_id[]){7};
  ir_inst_add(f->m, f->c, &in);
  expect(f, 1, "verify: %fu: called computation 7 does not exist");
}

static void fusion_parameter_count_mismatch(void **st) {
  fixture *f = *st;
  ir_comp_id g = ir_comp_add(f->m, "fused");
  ir_id x = tu_param(f->m, g, 0, "fx", "f32[2]");
  ir_comp_get(f->m, g)->root = tu_inst(f->m, g, IR_OP_NEGATE, "fn", "f32[2]", 1, &x, NULL);
  ir_comp_finish(f->m, g);
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_FUSION;
  in.name = "fu";
  in.shape = tu_shape(f->m->arena, "f32[2]");
  in.nops = 2;
  in.ops = (ir_id[]){f->p0, f->p1};
  in.ncalls = 1;
  in.calls = &g;
  ir_inst_add(f->m, f->c, &in);
  expect(f, 1, "verify: %fu: computation fused takes 1 parameters, given 2 operands");
}

static void reducer_with_wrong_signature(void **st) {
  fixture *f = *st;
  ir_comp_id r = tu_reducer(f->m, "add_s32", IR_S32, IR_OP_ADD);
  ir_id z = tu_param(f->m, f->c, 2, "z", "f32[]");
  ir_comp_finish(f->m, f->c);
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_REDUCE;
  in.name = "red";
  in.shape = tu_shape(f->m->arena, "f32[]");
  in.nops = 2;
  in.ops = (ir_id[]){f->p0, z};
  in.a.dimensions = INTS(0);
  in.ncalls = 1;
  in.calls = &r;
  ir_inst_add(f->m, f->c, &in);
  expect(f, 1, "verify: %red: to_apply add_s32 parameter 0 is s32[], expected f32[]");
}

static void recursive_calls(void **st) {
  fixture *f = *st;
  /* g(x) = fusion(x) calls g itself */
  ir_comp_id g = ir_comp_add(f->m, "g");
  ir_id x = tu_param(f->m, g, 0, "gx", "f32[2]");
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_FUSION;
  in.name = "again";
  in.shape = tu_shape(f->m->arena, "f32[2]");
  in.nops = 1;
  in.ops = &x;
  in.ncalls = 1;
  in.calls = &g;
  ir_comp_get(f->m, g)->root = ir_inst_add(f->m, g, &in);
  ir_comp_finish(f->m, g);
  expect(f, 1, "verify: %again: call to g is recursive (computation g calls itself)");
}

static void non_calling_op_with_calls(void **st) {
  fixture *f = *st;
  ir_comp_id r = tu_reducer(f->m, "sum", IR_F32, IR_OP_ADD);
  ir_inst *a = inst(f, f->add);
  a->ncalls = 1;
  a->calls = &r;
  expect(f, 1, "verify: %add.3: add calls no computations, has 1");
}

static void dot_declared_result_type_is_honoured(void **st) {
  fixture *f = *st;
  ir_id l = tu_param(f->m, f->c, 2, "l", "bf16[2,3]"), r = tu_param(f->m, f->c, 3, "r", "bf16[3,4]");
  ir_comp_finish(f->m, f->c);
  ir_attrs a = attrs();
  a.lhs_contracting = INTS(1);
  a.rhs_contracting = INTS(0);
  ir_id d = tu_inst(f->m, f->c, IR_OP_DOT, "dot", "f32[2,4]", 2, (ir_id[]){l, r}, &a);
  assert_int_equal(ir_verify(f->m, f->d), 0);
  set_shape(f, d, "s32[2,4]");
  expect(f, 1, "verify: %dot: result type s32 is incompatible with operand type bf16");
}

static void located_report_shows_source_line(void **st) {
  fixture *f = *st;
  const char *src = "HloModule m\nENTRY main {\n  add.3 = f32[2] add(p0, p1)\n}\n";
  diag_add_source(f->d, "m.hlo", src, strlen(src));
  inst(f, f->add)->info->loc = (src_loc){"m.hlo", 3, 3};
  set_shape(f, f->add, "s32[2]");
  assert_int_equal(ir_verify(f->m, f->d), 1);
  assert_string_equal(diag_text(f->d),
                      "m.hlo:3:3: error: verify: %add.3: shape s32[2] does not match inferred f32[2]\n"
                      "    add.3 = f32[2] add(p0, p1)\n"
                      "    ^\n");
}

static void several_problems_are_all_counted(void **st) {
  fixture *f = *st;
  f->m->entry = IR_NONE;
  inst(f, f->p1)->info->name = "p0";
  set_shape(f, f->add, "f32[9]");
  expect(f, 3, "verify: module verify_test has no entry computation");
}

static void malformed_shapes_are_reported_once(void **st) {
  fixture *f = *st;
  ir_shape s0 = *inst(f, f->p0)->shape, s1 = *inst(f, f->p1)->shape;
  s0.dims[0] = -4;
  s1.rank = IR_MAX_RANK + 1;
  ir_inst_set_shape(f->m, inst(f, f->p0), &s0);
  ir_inst_set_shape(f->m, inst(f, f->p1), &s1);
  ir_verify(f->m, f->d);
  assert_string_equal(diag_text(f->d), "error: verify: %p0: shape has negative dimension -4\n"
                                       "error: verify: %p1: shape has rank 13, outside 0..12\n");
  assert_int_equal(diag_error_count(f->d), 2); /* add is not blamed for them */
}

static void huge_shape_is_reported(void **st) {
  fixture *f = *st;
  set_shape(f, f->p0, "f32[1048576,1048576,2]");
  expect(f, 1, "verify: %p0: shape has more than 2^40 elements");
}

static void replica_groups_must_be_distinct(void **st) {
  fixture *f = *st;
  ir_comp_id r = tu_reducer(f->m, "sum", IR_F32, IR_OP_ADD);
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_ALL_REDUCE;
  in.name = "ar";
  in.shape = tu_shape(f->m->arena, "f32[2]");
  in.nops = 1;
  in.ops = &f->add;
  in.ncalls = 1;
  in.calls = &r;
  ir_ints groups[2] = {INTS(0, 1), INTS(2, 1)};
  in.a.replica_groups.ngroups = 2;
  in.a.replica_groups.groups = groups;
  ir_id ar = ir_inst_add(f->m, f->c, &in);
  expect(f, 1, "verify: %ar: replica_groups lists replica 1 twice");
  attrs_of(f, ar)->replica_groups.groups[1].v[1] = 3;
  assert_int_equal(ir_verify(f->m, f->d), 0);
  attrs_of(f, ar)->replica_groups.groups[0].v[0] = -1;
  assert_int_equal(ir_verify(f->m, f->d), 1);
}

static void fusion_kind_out_of_range(void **st) {
  fixture *f = *st;
  ir_comp_id g = ir_comp_add(f->m, "fused");
  ir_id x = tu_param(f->m, g, 0, "fx", "f32[2]");
  ir_comp_get(f->m, g)->root = tu_inst(f->m, g, IR_OP_NEGATE, "fn", "f32[2]", 1, &x, NULL);
  ir_comp_finish(f->m, g);
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_FUSION;
  in.name = "fu";
  in.shape = tu_shape(f->m->arena, "f32[2]");
  in.nops = 1;
  in.ops = &f->add;
  in.ncalls = 1;
  in.calls = &g;
  in.a.fusion_kind = (ir_fusion_kind)9;
  ir_inst_add(f->m, f->c, &in);
  expect(f, 1, "verify: %fu: invalid fusion kind 9");
}

static void malformed_attribute_list(void **st) {
  fixture *f = *st;
  ir_attrs a = attrs();
  a.dimensions = INTS(0);
  ir_id t = tu_inst(f->m, f->c, IR_OP_TRANSPOSE, "tr", "f32[2]", 1, &f->add, &a);
  attrs_of(f, t)->dimensions = (ir_ints){2, NULL}; /* a count without an array */
  expect(f, 1, "verify: %tr: malformed attribute list");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(well_formed_module_has_no_problems),
      T(operand_shape_mismatch),
      T(declared_shape_differs_from_inferred),
      T(layout_difference_is_accepted),
      T(bad_layout_is_reported),
      T(no_entry),
      T(computation_without_root),
      T(operand_out_of_range),
      T(wrong_arity),
      T(use_before_definition),
      T(cycle_is_reported),
      T(operand_refers_to_removed_instruction),
      T(duplicate_parameter_number),
      T(parameter_numbers_with_gap),
      T(stale_params_array),
      T(duplicate_instruction_names),
      T(transpose_not_a_permutation),
      T(tuple_index_out_of_range),
      T(iota_dimension_out_of_range),
      T(constant_literal_shape_mismatch),
      T(constant_without_literal),
      T(called_computation_missing),
      T(fusion_parameter_count_mismatch),
      T(reducer_with_wrong_signature),
      T(recursive_calls),
      T(non_calling_op_with_calls),
      T(dot_declared_result_type_is_honoured),
      T(located_report_shows_source_line),
      T(several_problems_are_all_counted),
      T(malformed_shapes_are_reported_once),
      T(huge_shape_is_reported),
      T(replica_groups_must_be_distinct),
      T(fusion_kind_out_of_range),
      T(malformed_attribute_list),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
