/* grad_sort.c: the VJP rule of sort (grad_internal.h).
 *
 * A sort permutes each operand along its dimension the same way, so each
 * floating-point operand's adjoint is its result's adjoint permuted back.
 * The permutation comes from sorting the operands again with an iota
 * (s32, counting along the dimension) as one more operand, under the same
 * comparator given two more parameters it ignores: the comparisons, and
 * so the order, are those of the forward sort. Row r of the result came
 * from position perm[r]; sorting (perm, adjoint) by perm ascending puts
 * each adjoint element back at the position it came from. */
#include "passes/grad_internal.h"

#include <string.h>

enum { MAX_SORT_OPERANDS = 64 };

/* Scalar parameter k of type t. */
static ir_id param(gr_ctx *g, ir_type t, int k) {
  ir_shape s = ir_shape_scalar(t);
  return gr_param(g, &s, k, "p");
}

/* A comparator of 2n + 2 scalar parameters: cmp on the first 2n (their
 * types in ts), the last two (s32) ignored. */
static ir_comp_id extended(gr_ctx *g, ir_comp_id cmp, const ir_type *ts, int n) {
  ir_comp_id c = ir_comp_add(g->m, ir_unique_name(g->m, "sort_with_index")), back = g->c;
  ir_comp_get(g->m, c)->loc = g->loc;
  g->c = c;
  ir_id ps[2 * MAX_SORT_OPERANDS];
  for (int k = 0; k < 2 * n; k++) ps[k] = param(g, ts[k / 2], k);
  param(g, IR_S32, 2 * n);
  param(g, IR_S32, 2 * n + 1);
  ir_comp_get(g->m, c)->root = ir_grad_inline(g->m, c, cmp, ps);
  ir_comp_finish(g->m, c);
  g->c = back;
  return c;
}

/* (s32 key a, s32 key b, t, t) -> a < b. */
static ir_comp_id by_index(gr_ctx *g, ir_type t) {
  ir_comp_id c = ir_comp_add(g->m, ir_unique_name(g->m, "by_index")), back = g->c;
  ir_comp_get(g->m, c)->loc = g->loc;
  g->c = c;
  ir_id a = param(g, IR_S32, 0), b = param(g, IR_S32, 1);
  param(g, t, 2);
  param(g, t, 3);
  ir_comp_get(g->m, c)->root = gr_cmp(g, IR_CMP_LT, a, b);
  ir_comp_finish(g->m, c);
  g->c = back;
  return c;
}

/* A sort like forward sort i (its dimension and stability) of ops, with
 * comparator cmp and result element shapes rs. */
static ir_id sort_like(gr_ctx *g, ir_id i, ir_id *ops, int n, ir_comp_id cmp, const ir_shape *rs) {
  const ir_inst *in = gr_inst(g, i);
  ir_inst_proto p = ir_inst_proto_of(in);
  p.name = ir_unique_name(g->m, "sort");
  p.ops = ops;
  p.nops = n;
  p.calls = &cmp;
  p.ncalls = 1;
  p.loc = g->loc;
  ir_shape *el = arena_array(g->m->arena, (size_t)n, sizeof *el);
  for (int k = 0; k < n; k++) el[k] = rs[k];
  memset(&p.shape, 0, sizeof p.shape);
  p.shape.type = IR_TUPLE;
  p.shape.ntuple = n;
  p.shape.tuple = el;
  return ir_inst_add(g->m, g->c, &p);
}

bool gr_sort(gr_ctx *g, ir_id i, ir_id ct) {
  const ir_inst *in = gr_inst(g, i);
  int n = in->nops;
  int64_t dim;
  bool stable;
  if (n > MAX_SORT_OPERANDS) return gr_fail(g, "a gradient through a sort of more than %d operands is not supported", MAX_SORT_OPERANDS);
  if (!ir_sort_attrs_of(in, &dim, &stable)) return gr_fail(g, "sort needs dimensions={d}");
  ir_comp_id cmp = in->calls[0];
  ir_type ts[MAX_SORT_OPERANDS];
  ir_shape rs[MAX_SORT_OPERANDS + 1];
  ir_id ops[MAX_SORT_OPERANDS + 1];
  for (int k = 0; k < n; k++) {
    ops[k] = gr_operand(g, i, k);
    rs[k] = *gr_shape(g, ops[k]);
    ts[k] = rs[k].type;
  }
  ir_shape is = ir_shape_array(IR_S32, rs[0].rank, rs[0].dims);
  ir_attrs ia = ir_attrs_none;
  ia.index = dim;
  ops[n] = ir_build_shaped(g->m, g->c, IR_OP_IOTA, NULL, 0, &ia, NULL, 0, &is, g->loc);
  rs[n] = is;
  ir_id s = sort_like(g, i, ops, n + 1, extended(g, cmp, ts, n), rs);
  ir_id perm = gr_gte(g, s, n);
  bool is_tuple = gr_inst(g, i)->shape->type == IR_TUPLE;
  for (int k = 0; k < n; k++) {
    ir_id x = gr_inst(g, i)->ops[k];
    ir_id a = is_tuple ? (g->adjt[i] ? g->adjt[i][k] : IR_NONE) : ct;
    if (a == IR_NONE || !ir_type_is_float(ts[k]) || !gr_wants(g, x)) continue;
    ir_id pair[2] = {perm, a};
    ir_shape ps[2] = {is, *gr_shape(g, a)};
    ir_id back = sort_like(g, i, pair, 2, by_index(g, gr_shape(g, a)->type), ps);
    gr_accum(g, x, gr_gte(g, back, 1));
  }
  return true;
}
