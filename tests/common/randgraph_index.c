/* randgraph_index.c: randgraph's indexing family (RG_INDEX): a gather,
 * scatter, dynamic slice, dynamic update slice or select-and-scatter on a
 * value of the graph, with random dimension numbers (gsdims.h) and fresh
 * s32 index parameters (rg_args gives them values in [-1000, 1000] or
 * [-4, 35]: many outside the operand, so clamping and skipped scatter
 * windows are exercised). */
#include "tests/common/gsdims.h"
#include "tests/common/randgraph.h"
#include "tests/common/testgen.h"

static int pick(uint64_t *rs, int n) { return n > 0 ? (int)(tc_splitmix(rs) % (uint64_t)n) : 0; }

static ir_id emit(ir_module *m, ir_comp_id c, ir_op op, const ir_id *ops, int nops, const ir_attrs *a,
                  const ir_comp_id *calls, int ncalls) {
  ir_shape os[8], out;
  for (int i = 0; i < nops; i++) os[i] = *ir_inst_get(m, c, ops[i])->shape;
  memset(&out, 0, sizeof out);
  char err[256];
  if (!ir_infer_shape(m, op, os, nops, a, calls, ncalls, &out, err, sizeof err)) return IR_NONE;
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = op, in.shape = out, in.nops = nops, in.ops = (ir_id *)ops;
  in.ncalls = ncalls, in.calls = (ir_comp_id *)calls, in.a = *a;
  return ir_inst_add(m, c, &in);
}

/* (a, b) -> op(a, b) on t[] scalars; a compare when op is IR_OP_COMPARE. */
static ir_comp_id scalar_fn(ir_module *m, ir_op op, ir_cmp_dir dir, ir_type t) {
  ir_comp_id f = ir_comp_add(m, ir_unique_name(m, op == IR_OP_COMPARE ? "select" : "combine"));
  ir_shape s = ir_shape_scalar(t);
  ir_id p[2] = {tc_param(m, f, &s, 0), tc_param(m, f, &s, 1)};
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.cmp_dir = dir;
  ir_comp_get(m, f)->root = emit(m, f, op, p, 2, &a, NULL, 0);
  ir_comp_finish(m, f);
  return f;
}

static ir_id select_and_scatter(ir_module *m, ir_comp_id c, ir_id x, uint64_t *rs, int *np) {
  const ir_shape xs = *ir_inst_get(m, c, x)->shape;
  if (!ir_type_is_float(xs.type)) return IR_NONE;
  ir_window w;
  int64_t sd[IR_MAX_RANK];
  tc_rand_sas_window(rs, &xs, &w, sd);
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.window = &w;
  ir_shape src = ir_shape_array(xs.type, xs.rank, sd), one = ir_shape_scalar(xs.type);
  ir_literal *z = ir_literal_create(m->arena, &one);
  ir_comp_id fs[2] = {scalar_fn(m, IR_OP_COMPARE, pick(rs, 2) ? IR_CMP_GE : IR_CMP_GT, xs.type),
                      scalar_fn(m, IR_OP_ADD, IR_CMP_EQ, xs.type)};
  ir_id ops[3] = {x, tc_param(m, c, &src, (*np)++), tc_constant(m, c, z)};
  return emit(m, c, IR_OP_SELECT_AND_SCATTER, ops, 3, &a, fs, 2);
}

ir_id rg_index_step(ir_module *m, ir_comp_id c, ir_id x, uint64_t *rs, int *np) {
  const ir_shape xs = *ir_inst_get(m, c, x)->shape;
  if (xs.type == IR_TUPLE || xs.rank == 0) return IR_NONE;
  ir_shape one = ir_shape_scalar(IR_S32);
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  ir_id ops[2 + IR_MAX_RANK];
  int kind = pick(rs, 5);
  if (kind == 4) return select_and_scatter(m, c, x, rs, np);
  if (kind <= 1) { /* dynamic-slice, dynamic-update-slice */
    int64_t sz[IR_MAX_RANK];
    for (int d = 0; d < xs.rank; d++) sz[d] = 1 + pick(rs, (int)xs.dims[d]);
    int n = 0;
    ops[n++] = x;
    if (kind == 0) a.slice_sizes = tc_ints(m->arena, xs.rank, sz);
    else {
      ir_shape u = ir_shape_array(xs.type, xs.rank, sz);
      ops[n++] = tc_param(m, c, &u, (*np)++);
    }
    for (int d = 0; d < xs.rank; d++) ops[n++] = tc_param(m, c, &one, (*np)++);
    return emit(m, c, kind == 0 ? IR_OP_DYNAMIC_SLICE : IR_OP_DYNAMIC_UPDATE_SLICE, ops, n, &a, NULL, 0);
  }
  tc_gsdims o;
  tc_rand_gsdims(rs, m->arena, &xs, IR_S32, &o);
  ir_id ix = tc_param(m, c, &o.ix, (*np)++);
  if (kind == 2) {
    o.a.slice_sizes = tc_ints(m->arena, xs.rank, o.win);
    return emit(m, c, IR_OP_GATHER, (ir_id[]){x, ix}, 2, &o.a, NULL, 0);
  }
  ir_shape u = ir_shape_array(xs.type, o.nw + o.nb, o.out);
  ir_op comb = xs.type == IR_S32 ? IR_OP_ADD : pick(rs, 2) ? IR_OP_ADD : IR_OP_MAXIMUM;
  ir_comp_id f = scalar_fn(m, comb, IR_CMP_EQ, xs.type);
  ir_id sops[3] = {x, ix, tc_param(m, c, &u, (*np)++)};
  return emit(m, c, IR_OP_SCATTER, sops, 3, &o.a, &f, 1);
}
