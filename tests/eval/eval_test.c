/* eval_test.c: the helpers of eval_test.h. */
#include "eval_test.h"

ir_shape sh_(ir_type t, const int64_t *dims, int rank) { return ir_shape_array(t, rank, dims); }

ir_shape tuple_shape(tb *t, int n, const ir_shape *elems) {
  ir_shape s;
  memset(&s, 0, sizeof s);
  s.type = IR_TUPLE;
  s.ntuple = n;
  s.tuple = arena_dup(t->m->arena, elems, sizeof(ir_shape) * (size_t)n);
  return s;
}

void tb_init(tb *t) {
  memset(t, 0, sizeof *t);
  t->m = ir_module_create("test");
  t->entry = t->c = ir_comp_add(t->m, "main");
  t->m->entry = t->entry;
  t->out = arena_create();
  ir_eval_options_init(&t->opts);
}

void tb_free(tb *t) {
  ir_module_destroy(t->m);
  arena_destroy(t->out);
}

ir_id tb_op(tb *t, ir_op op, ir_shape s, const ir_attrs *a, int nops, const ir_id *ops, int ncalls,
            const ir_comp_id *calls) {
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = op;
  in.shape = s;
  if (a) in.a = *a;
  in.nops = nops;
  in.ops = (ir_id *)ops;
  in.ncalls = ncalls;
  in.calls = (ir_comp_id *)calls;
  return ir_inst_add(t->m, t->c, &in);
}

ir_id tb_param(tb *t, int num, ir_shape s) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.parameter_number = num;
  return tb_op(t, IR_OP_PARAMETER, s, &a, 0, NULL, 0, NULL);
}

static void fill(ir_literal *l, const double *v, int64_t n) {
  assert_int_equal(n, ir_shape_count(&l->shape));
  for (int64_t i = 0; i < n; i++) {
    if (ir_type_is_float(l->shape.type))
      ir_literal_set_f64(l, i, v[i]);
    else
      ir_literal_set_i64(l, i, (int64_t)v[i]);
  }
}

ir_id tb_const(tb *t, ir_shape s, const double *v, int64_t n) {
  ir_literal *l = ir_literal_create(t->m->arena, &s);
  fill(l, v, n);
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.literal = l;
  return tb_op(t, IR_OP_CONSTANT, s, &a, 0, NULL, 0, NULL);
}

ir_id tb_scalar(tb *t, ir_type ty, double v) { return tb_const(t, SCALAR(ty), &v, 1); }

ir_comp_id tb_binary_comp(tb *t, ir_op op, ir_type ty) {
  ir_comp_id saved = t->c;
  t->c = ir_comp_add(t->m, ir_op_name(op));
  ir_id p0 = tb_param(t, 0, SCALAR(ty)), p1 = tb_param(t, 1, SCALAR(ty));
  ir_shape rs = SCALAR(op == IR_OP_COMPARE ? IR_PRED : ty);
  ir_comp_get(t->m, t->c)->root = OP2(t, op, rs, NULL, p0, p1);
  ir_comp_finish(t->m, t->c);
  ir_comp_id c = t->c;
  t->c = saved;
  return c;
}

ir_comp_id tb_slow_add_comp(tb *t, ir_type ty) {
  ir_comp_id saved = t->c;
  t->c = ir_comp_add(t->m, "slow_add");
  ir_id p0 = tb_param(t, 0, SCALAR(ty)), p1 = tb_param(t, 1, SCALAR(ty));
  ir_id s = OP2(t, IR_OP_ADD, SCALAR(ty), NULL, p0, p1);
  ir_comp_get(t->m, t->c)->root = OP1(t, IR_OP_COPY, SCALAR(ty), NULL, s);
  ir_comp_finish(t->m, t->c);
  ir_comp_id c = t->c;
  t->c = saved;
  return c;
}

ir_literal *tb_lit(tb *t, ir_shape s, const double *v, int64_t n) {
  ir_literal *l = ir_literal_create(t->out, &s);
  fill(l, v, n);
  return l;
}

ir_literal *tb_lit_bits32(tb *t, ir_shape s, const uint32_t *bits, int64_t n) {
  ir_literal *l = ir_literal_create(t->out, &s);
  assert_int_equal(l->nbytes, (size_t)n * 4);
  memcpy(l->data, bits, l->nbytes);
  return l;
}

base_status tb_eval(tb *t, ir_id root, ir_literal **args, int nargs, ir_literal **out) {
  ir_comp_get(t->m, t->entry)->root = root;
  for (int c = 0; c < t->m->comps.n; c++)
    ir_comp_finish(t->m, c);
  return ir_eval(t->m, &t->opts, args, nargs, t->out, out, t->err, sizeof t->err);
}

ir_literal *tb_run(tb *t, ir_id root, ir_literal **args, int nargs) {
  ir_literal *out = NULL;
  base_status st = tb_eval(t, root, args, nargs, &out);
  if (st != ST_OK) fail_msg("ir_eval failed (%s): %s", base_status_str(st), t->err);
  assert_non_null(out);
  return out;
}

void expect_f(const ir_literal *l, const double *v, int64_t n) {
  assert_true(ir_type_is_float(l->shape.type));
  assert_int_equal(ir_shape_count(&l->shape), n);
  for (int64_t i = 0; i < n; i++) {
    double got = ir_literal_get_f64(l, i);
    if (isnan(v[i]) && isnan(got)) continue;
    if (got != v[i]) fail_msg("element %lld: got %.9g, expected %.9g", (long long)i, got, v[i]);
  }
}

void expect_i(const ir_literal *l, const int64_t *v, int64_t n) {
  assert_false(ir_type_is_float(l->shape.type));
  assert_int_equal(ir_shape_count(&l->shape), n);
  for (int64_t i = 0; i < n; i++) {
    int64_t got = ir_literal_get_i64(l, i);
    if (got != v[i])
      fail_msg("element %lld: got %lld, expected %lld", (long long)i, (long long)got,
               (long long)v[i]);
  }
}

void expect_dims(const ir_literal *l, ir_type ty, int rank, const int64_t *dims) {
  assert_int_equal(l->shape.type, ty);
  assert_int_equal(l->shape.rank, rank);
  for (int i = 0; i < rank; i++)
    assert_int_equal(l->shape.dims[i], dims[i]);
}

uint32_t f32_bits(const ir_literal *l, int64_t i) {
  uint32_t u;
  assert_int_equal(l->shape.type, IR_F32);
  memcpy(&u, (const uint8_t *)l->data + i * 4, 4);
  return u;
}

uint16_t u16_at(const ir_literal *l, int64_t i) {
  uint16_t u;
  assert_int_equal(ir_type_size(l->shape.type), 2);
  memcpy(&u, (const uint8_t *)l->data + i * 2, 2);
  return u;
}
