/* grad_index.c: the VJPs of the indexing ops (start indices have no
 * gradient).
 *   dynamic-slice: the adjoint written into zeros at the same starts
 *     (dynamic-update-slice clamps them as dynamic-slice did);
 *   dynamic-update-slice: the operand gets the adjoint with zeros written
 *     over the update's place, the update the dynamic-slice of the
 *     adjoint there;
 *   gather: the adjoint scatter-added into zeros with the gather's
 *     dimension numbers (offset_dims as update_window_dims, collapsed
 *     slice dims as inserted window dims, start_index_map as
 *     scatter_dims_to_operand_dims, the batching dims alike), the start
 *     indices first clamped as gather clamps them, so that no window is
 *     skipped as out of range. */
#include "passes/grad_internal.h"

static ir_id zeros_of(gr_ctx *g, ir_id x) { return gr_like(g, x, 0); }

bool gr_dynamic_slice(gr_ctx *g, ir_id i, ir_id ct) {
  int n = gr_inst(g, i)->nops;
  ir_id x = gr_inst(g, i)->ops[0];
  ir_id *ops = arena_array(g->m->arena, (size_t)n + 1, sizeof(ir_id));
  ops[0] = zeros_of(g, x);
  ops[1] = ct;
  for (int k = 1; k < n; k++) ops[k + 1] = gr_operand(g, i, k);
  gr_accum(g, x, gr_build(g, IR_OP_DYNAMIC_UPDATE_SLICE, ops, n + 1, NULL));
  return true;
}

bool gr_dynamic_update_slice(gr_ctx *g, ir_id i, ir_id ct) {
  int n = gr_inst(g, i)->nops;
  ir_id x = gr_inst(g, i)->ops[0], u = gr_inst(g, i)->ops[1];
  ir_id *ops = arena_array(g->m->arena, (size_t)n + 1, sizeof(ir_id));
  for (int k = 2; k < n; k++) ops[k] = gr_operand(g, i, k);
  if (gr_wants(g, x)) {
    ops[0] = ct;
    ops[1] = zeros_of(g, u);
    gr_accum(g, x, gr_build(g, IR_OP_DYNAMIC_UPDATE_SLICE, ops, n, NULL));
  }
  if (gr_wants(g, u)) {
    const ir_shape *us = gr_shape(g, u);
    ir_attrs a = ir_attrs_none;
    a.slice_sizes = (ir_ints){us->rank, (int64_t *)us->dims};
    ops[1] = ct;
    gr_accum(g, u, gr_build(g, IR_OP_DYNAMIC_SLICE, ops + 1, n - 1, &a));
  }
  return true;
}

/* The start indices of gather i clamped into [0, dim - slice size] of
 * the operand dimension each component names. */
static ir_id clamped_indices(gr_ctx *g, ir_id i) {
  const ir_inst *in = gr_inst(g, i);
  const ir_attrs *a = in->a;
  const ir_shape *xs = gr_shape(g, in->ops[0]), *is = gr_shape(g, in->ops[1]);
  ir_id idx = gr_operand(g, i, 1);
  int ncomp = a->index_map.n;
  ir_shape bs = ir_shape_array(is->type, 1, (int64_t[]){ncomp});
  ir_literal *lit = ir_literal_create(g->m->arena, &bs);
  for (int k = 0; k < ncomp; k++) {
    int64_t d = a->index_map.v[k];
    ir_literal_set_i64(lit, k, xs->dims[d] - a->slice_sizes.v[d]);
  }
  ir_id bound = gr_constant(g, lit);
  int64_t ivd = a->index_vector_dim;
  ir_id hi = ivd < is->rank ? gr_broadcast(g, bound, is, &ivd)
                            : gr_broadcast(g, gr_reshape(g, bound, &(ir_shape){.type = is->type}), is, NULL);
  return gr_build(g, IR_OP_CLAMP, (ir_id[]){gr_splat(g, &(ir_shape){.type = is->type}, 0), idx, hi}, 3, NULL);
}

bool gr_gather(gr_ctx *g, ir_id i, ir_id ct) {
  ir_id x = gr_inst(g, i)->ops[0];
  ir_attrs a = *gr_inst(g, i)->a; /* the dimension numbers carry over (shared fields) */
  ir_attrs s = ir_attrs_none;
  s.window_dims = a.window_dims;
  s.collapsed_dims = a.collapsed_dims;
  s.index_map = a.index_map;
  s.operand_batching = a.operand_batching;
  s.index_batching = a.index_batching;
  s.index_vector_dim = a.index_vector_dim;
  s.indices_are_sorted = a.indices_are_sorted;
  ir_type t = gr_shape(g, ct)->type;
  ir_comp_id add = gr_add_comp(g, t);
  ir_id ops[3] = {zeros_of(g, x), clamped_indices(g, i), ct};
  gr_accum(g, x, ir_build(g->m, g->c, IR_OP_SCATTER, ops, 3, &s, &add, 1, g->loc));
  return true;
}
