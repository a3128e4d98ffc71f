/* test_module.c: building modules, unique names, ir_comp_finish,
 * ir_comp_topo_sort and ir_module_clone. */
#include "ir_test_util.h"

static ir_attrs no_attrs(void) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  return a;
}

static void unique_names_from_op_spelling(void **st) {
  (void)st;
  ir_module *m = ir_module_create("names");
  ir_comp_id c = ir_comp_add(m, "main");
  ir_id p = tu_param(m, c, 0, NULL, "f32[]");
  ir_id a = tu_inst(m, c, IR_OP_NEGATE, NULL, "f32[]", 1, &p, NULL);
  ir_id b = tu_inst(m, c, IR_OP_NEGATE, NULL, "f32[]", 1, &a, NULL);
  assert_string_equal(ir_inst_get(m, c, p)->info->name, "parameter");
  assert_string_equal(ir_inst_get(m, c, a)->info->name, "negate");
  assert_string_not_equal(ir_inst_get(m, c, b)->info->name, "negate");
  assert_int_equal(strncmp(ir_inst_get(m, c, b)->info->name, "negate.", 7), 0);
  /* an explicit name is taken, so a derived one avoids it */
  tu_inst(m, c, IR_OP_NEGATE, "exp.1", "f32[]", 1, &b, NULL);
  const char *n = ir_unique_name(m, "exp");
  assert_string_equal(n, "exp");
  n = ir_unique_name(m, "exp");
  assert_string_not_equal(n, "exp");
  assert_string_not_equal(n, "exp.1");
  ir_module_destroy(m);
}

static void finish_collects_parameters_by_number(void **st) {
  (void)st;
  ir_module *m = ir_module_create("params");
  ir_comp_id c = ir_comp_add(m, "main");
  ir_id p1 = tu_param(m, c, 1, "b", "f32[]");
  ir_id p0 = tu_param(m, c, 0, "a", "f32[]");
  ir_comp_finish(m, c);
  ir_comp *cp = ir_comp_get(m, c);
  assert_int_equal(cp->nparams, 2);
  assert_int_equal(cp->params[0], p0);
  assert_int_equal(cp->params[1], p1);
  ir_module_destroy(m);
}

static void finish_ignores_out_of_range_parameter_numbers(void **st) {
  (void)st;
  /* a user-written parameter(1000000000) must not size an allocation */
  ir_module *m = ir_module_create("params");
  ir_comp_id c = ir_comp_add(m, "main");
  tu_param(m, c, 1000000000, "huge", "f32[]");
  tu_param(m, c, -5, "neg", "f32[]");
  size_t before = arena_bytes(m->arena);
  ir_comp_finish(m, c);
  assert_true(arena_bytes(m->arena) - before < 1024);
  ir_comp *cp = ir_comp_get(m, c);
  assert_int_equal(cp->nparams, 2);
  assert_int_equal(cp->params[0], IR_NONE);
  assert_int_equal(cp->params[1], IR_NONE);
  ir_module_destroy(m);
}

static void topo_sort_moves_operands_first(void **st) {
  (void)st;
  ir_module *m = ir_module_create("topo");
  ir_comp_id c = ir_comp_add(m, "main");
  /* 0: neg = negate(2)   1: p = parameter(0)   2: e = exponential(1) */
  ir_id neg = tu_inst(m, c, IR_OP_NEGATE, "neg", "f32[4]", 1, (ir_id[]){2}, NULL);
  tu_param(m, c, 0, "p", "f32[4]");
  tu_inst(m, c, IR_OP_EXP, "e", "f32[4]", 1, (ir_id[]){1}, NULL);
  ir_comp_get(m, c)->root = neg;
  m->entry = c;
  assert_true(ir_comp_topo_sort(m, c));
  ir_comp *cp = ir_comp_get(m, c);
  assert_string_equal(cp->insts.v[0].info->name, "p");
  assert_string_equal(cp->insts.v[1].info->name, "e");
  assert_string_equal(cp->insts.v[2].info->name, "neg");
  assert_int_equal(cp->insts.v[1].ops[0], 0);
  assert_int_equal(cp->insts.v[2].ops[0], 1);
  assert_int_equal(cp->root, 2);
  assert_int_equal(cp->nparams, 1); /* params[] refreshed */
  assert_int_equal(cp->params[0], 0);
  diag *d = diag_create();
  assert_int_equal(ir_verify(m, d), 0);
  diag_destroy(d);
  ir_module_destroy(m);
}

static void topo_sort_keeps_ordered_input(void **st) {
  (void)st;
  ir_module *m = ir_module_create("topo");
  ir_comp_id c = ir_comp_add(m, "main");
  ir_id a = tu_param(m, c, 0, "a", "s32[]");
  ir_id b = tu_param(m, c, 1, "b", "s32[]");
  ir_id k = tu_inst(m, c, IR_OP_ADD, "k", "s32[]", 2, (ir_id[]){a, b}, NULL);
  ir_id unused = tu_inst(m, c, IR_OP_NEGATE, "unused", "s32[]", 1, &a, NULL);
  ir_id r = tu_inst(m, c, IR_OP_MULTIPLY, "r", "s32[]", 2, (ir_id[]){k, b}, NULL);
  ir_comp_get(m, c)->root = r;
  assert_true(ir_comp_topo_sort(m, c));
  ir_comp *cp = ir_comp_get(m, c);
  const char *want[] = {"a", "b", "k", "unused", "r"};
  for (int i = 0; i < 5; i++) assert_string_equal(cp->insts.v[i].info->name, want[i]);
  assert_int_equal(cp->insts.v[r].ops[0], k);
  assert_int_equal(cp->insts.v[unused].ops[0], a);
  assert_int_equal(cp->root, r);
  ir_module_destroy(m);
}

static void topo_sort_reports_cycle_and_leaves_order(void **st) {
  (void)st;
  ir_module *m = ir_module_create("topo");
  ir_comp_id c = ir_comp_add(m, "main");
  tu_inst(m, c, IR_OP_NEGATE, "x", "f32[]", 1, (ir_id[]){1}, NULL);
  tu_inst(m, c, IR_OP_NEGATE, "y", "f32[]", 1, (ir_id[]){0}, NULL);
  assert_false(ir_comp_topo_sort(m, c));
  ir_comp *cp = ir_comp_get(m, c);
  assert_string_equal(cp->insts.v[0].info->name, "x");
  assert_int_equal(cp->insts.v[0].ops[0], 1);
  assert_int_equal(cp->insts.v[1].ops[0], 0);
  ir_module_destroy(m);
}

/* A module with everything that points into the arena: literal, tuple
 * shapes, raw attributes, metadata, a called computation. */
static ir_module *rich_module(void) {
  ir_module *m = ir_module_create("rich");
  m->raw = arena_alloc(m->arena, sizeof(ir_raw_attr));
  m->raw[0].name = arena_strdup(m->arena, "num_partitions");
  m->raw[0].text = arena_strdup(m->arena, "1");
  m->nraw = 1;
  ir_comp_id add = tu_reducer(m, "sum", IR_F32, IR_OP_ADD);
  ir_comp_id c = ir_comp_add(m, "main");
  ir_id p = tu_param(m, c, 0, "p", "f32[3]");
  ir_attrs ka = no_attrs();
  ir_shape ks = tu_shape(m->arena, "f32[3]");
  ka.literal = ir_literal_create(m->arena, &ks);
  for (int i = 0; i < 3; i++) ir_literal_set_f64(ka.literal, i, 1.5 * i);
  ir_id k = tu_inst(m, c, IR_OP_CONSTANT, "k", "f32[3]", 0, NULL, &ka);
  ir_id s = tu_inst(m, c, IR_OP_ADD, "s", "f32[3]", 2, (ir_id[]){p, k}, NULL);
  ir_inst *si = ir_inst_get(m, c, s);
  si->info->meta.op_name = arena_strdup(m->arena, "jit(f)/add");
  si->info->meta.source_file = arena_strdup(m->arena, "model.py");
  si->info->meta.source_line = 12;
  si->info->raw = arena_alloc(m->arena, sizeof(ir_raw_attr));
  si->info->raw[0].name = arena_strdup(m->arena, "backend_config");
  si->info->raw[0].text = arena_strdup(m->arena, "{\"x\":1}");
  si->info->nraw = 1;
  ir_attrs ra = no_attrs();
  ra.dimensions = INTS(0);
  ir_id z = tu_inst(m, c, IR_OP_CONSTANT, "z", "f32[]", 0, NULL, &(ir_attrs){0});
  ir_shape zs = ir_shape_scalar(IR_F32);
  ir_inst_attrs_mut(m, ir_inst_get(m, c, z))->literal = ir_literal_create(m->arena, &zs);
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_REDUCE;
  in.name = "r";
  in.shape = ir_shape_scalar(IR_F32);
  in.nops = 2;
  in.ops = (ir_id[]){s, z};
  in.a = ra;
  in.ncalls = 1;
  in.calls = &add;
  ir_id r = ir_inst_add(m, c, &in);
  ir_id t = tu_inst(m, c, IR_OP_TUPLE, "t", "(f32[3], f32[])", 2, (ir_id[]){s, r}, NULL);
  ir_comp_get(m, c)->root = t;
  ir_comp_finish(m, c);
  m->entry = c;
  return m;
}

static void clone_is_deep_and_independent(void **st) {
  (void)st;
  ir_module *m = rich_module();
  diag *d = diag_create();
  assert_int_equal(ir_verify(m, d), 0);
  ir_module *c = ir_module_clone(m);
  /* scribble over the original's arena, then free it */
  ir_comp *oc = ir_comp_get(m, 1);
  ((ir_shape *)oc->insts.v[0].shape)->dims[0] = 99;
  ir_module_destroy(m);

  assert_int_equal(ir_verify(c, d), 0);
  assert_string_equal(c->name, "rich");
  assert_int_equal(c->entry, 1);
  assert_int_equal(c->nraw, 1);
  assert_string_equal(c->raw[0].text, "1");
  ir_comp *cc = ir_comp_get(c, 1);
  assert_string_equal(cc->name, "main");
  assert_int_equal(cc->nparams, 1);
  assert_int_equal(cc->params[0], 0);
  const ir_inst *k = &cc->insts.v[1];
  assert_string_equal(k->info->name, "k");
  assert_true(ir_literal_get_f64(k->a->literal, 2) == 3.0);
  const ir_inst *s = &cc->insts.v[2];
  assert_string_equal(s->info->meta.op_name, "jit(f)/add");
  assert_string_equal(s->info->meta.source_file, "model.py");
  assert_int_equal(s->info->meta.source_line, 12);
  assert_string_equal(s->info->raw[0].name, "backend_config");
  assert_string_equal(s->info->raw[0].text, "{\"x\":1}");
  const ir_inst *r = &cc->insts.v[4];
  assert_int_equal(r->calls[0], 0);
  assert_int_equal(r->a->dimensions.n, 1);
  assert_int_equal(r->a->dimensions.v[0], 0);
  assert_string_equal(tu_str(cc->insts.v[cc->root].shape), "(f32[3], f32[])");
  /* the clone keeps names unique: a derived "k" is fresh */
  assert_string_not_equal(ir_unique_name(c, "k"), "k");
  diag_destroy(d);
  ir_module_destroy(c);
}

/* The hot instruction stays within one 64-byte cache line; equal shapes
 * share one interned copy; an instruction without attributes shares
 * ir_attrs_none. */
static void instruction_is_lean_and_shapes_are_shared(void **st) {
  (void)st;
  assert_true(sizeof(ir_inst) <= 64);
  ir_module *m = ir_module_create("lean");
  ir_comp_id c = ir_comp_add(m, "main");
  ir_id p0 = tu_param(m, c, 0, "p0", "f32[8,128]");
  ir_id p1 = tu_param(m, c, 1, "p1", "f32[8,128]");
  ir_id s = tu_inst(m, c, IR_OP_ADD, "s", "f32[8,128]", 2, (ir_id[]){p0, p1}, NULL);
  ir_id t = tu_inst(m, c, IR_OP_TANH, "t", "f32[8,128]", 1, &s, NULL);
  const ir_inst *a = ir_inst_get(m, c, s), *b = ir_inst_get(m, c, t);
  assert_ptr_equal(a->shape, b->shape);
  assert_ptr_equal(a->shape, ir_inst_get(m, c, p0)->shape);
  assert_ptr_equal(a->a, &ir_attrs_none);
  assert_ptr_not_equal(ir_inst_get(m, c, p1)->a, &ir_attrs_none); /* parameter_number 1 */
  ir_shape other = tu_shape(m->arena, "f32[8,129]");
  assert_ptr_not_equal(ir_shape_intern(m, &other), a->shape);
  ir_layout l = *ir_layout_default(2);
  l.minor_to_major[0] = 0;
  l.minor_to_major[1] = 1;
  ir_shape colmajor = *a->shape;
  colmajor.layout = &l;
  const ir_shape *cm = ir_shape_intern(m, &colmajor);
  assert_ptr_not_equal(cm, a->shape);
  assert_ptr_not_equal(cm->layout, &l); /* copied into the module */
  assert_ptr_equal(ir_shape_intern(m, &colmajor), cm);
  ir_module_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(instruction_is_lean_and_shapes_are_shared),
      cmocka_unit_test(unique_names_from_op_spelling),
      cmocka_unit_test(finish_collects_parameters_by_number),
      cmocka_unit_test(finish_ignores_out_of_range_parameter_numbers),
      cmocka_unit_test(topo_sort_moves_operands_first),
      cmocka_unit_test(topo_sort_keeps_ordered_input),
      cmocka_unit_test(topo_sort_reports_cycle_and_leaves_order),
      cmocka_unit_test(clone_is_deep_and_independent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
