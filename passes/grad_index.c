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
 *     skipped as out of range;
 *   scatter (one operand, add): see gr_scatter. */
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

/* The largest valid start of each index component (operand dimension
 * index_map[k] minus the window size there), broadcast to the indices'
 * shape along index_vector_dim. */
static ir_id index_bounds(gr_ctx *g, const ir_shape *xs, const ir_shape *is, const ir_attrs *a, const int64_t *sizes) {
  int ncomp = a->index_map.n;
  ir_shape bs = ir_shape_array(is->type, 1, (int64_t[]){ncomp});
  ir_literal *lit = ir_literal_create(g->m->arena, &bs);
  for (int k = 0; k < ncomp; k++) {
    int64_t d = a->index_map.v[k];
    ir_literal_set_i64(lit, k, xs->dims[d] - sizes[d]);
  }
  ir_id bound = gr_constant(g, lit);
  int64_t ivd = a->index_vector_dim;
  return ivd < is->rank ? gr_broadcast(g, bound, is, &ivd)
                        : gr_broadcast(g, gr_reshape(g, bound, &(ir_shape){.type = is->type}), is, NULL);
}

/* The start indices of gather i clamped into [0, dim - slice size] of
 * the operand dimension each component names. */
static ir_id clamped_indices(gr_ctx *g, ir_id i) {
  const ir_inst *in = gr_inst(g, i);
  const ir_attrs *a = in->a;
  const ir_shape *xs = gr_shape(g, in->ops[0]), *is = gr_shape(g, in->ops[1]);
  ir_id idx = gr_operand(g, i, 1);
  ir_id hi = index_bounds(g, xs, is, a, a->slice_sizes.v);
  return gr_build(g, IR_OP_CLAMP, (ir_id[]){gr_splat(g, &(ir_shape){.type = is->type}, 0), idx, hi}, 3, NULL);
}

/* The dimension numbers a gather and a scatter share (the same fields,
 * read as each other's: offset_dims as update_window_dims, ...). */
static ir_attrs dimension_numbers(const ir_attrs *a) {
  ir_attrs r = ir_attrs_none;
  r.window_dims = a->window_dims;
  r.collapsed_dims = a->collapsed_dims;
  r.index_map = a->index_map;
  r.operand_batching = a->operand_batching;
  r.index_batching = a->index_batching;
  r.index_vector_dim = a->index_vector_dim;
  return r;
}

static bool in_list(const ir_ints *l, int64_t v) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == v) return true;
  return false;
}

/* scatter with add, one operand: the operand's adjoint is g; the
 * updates' is g gathered at the same windows (the scatter's dimension
 * numbers read as a gather's), zero for the windows scatter skips as out
 * of range. */
bool gr_scatter(gr_ctx *g, ir_id i, ir_id ct) {
  const ir_inst *in = gr_inst(g, i);
  if (in->nops != 3 || gr_reducer_op(g->m, in->calls[0]) != IR_OP_ADD)
    return gr_fail(g, "a gradient through a scatter other than one operand combined by add is not supported");
  ir_id x = in->ops[0], u = in->ops[2];
  ir_attrs a = *in->a;
  gr_accum(g, x, ct);
  if (!gr_wants(g, u)) return true;
  const ir_shape *xs = gr_shape(g, x), *us = gr_shape(g, u), *is = gr_shape(g, in->ops[1]);
  int64_t sizes[IR_MAX_RANK];
  for (int d = 0, w = 0; d < xs->rank; d++)
    sizes[d] = in_list(&a.collapsed_dims, d) || in_list(&a.operand_batching, d) ? 1 : us->dims[a.window_dims.v[w++]];
  ir_attrs ga = dimension_numbers(&a);
  ga.slice_sizes = (ir_ints){xs->rank, sizes};
  ir_id idx = gr_operand(g, i, 1);
  ir_id got = gr_build(g, IR_OP_GATHER, (ir_id[]){ct, idx}, 2, &ga);
  /* the windows in range: every component in [0, bound] */
  ir_id zero = gr_splat(g, &(ir_shape){.type = is->type}, 0);
  ir_id ok = gr_bin(g, IR_OP_AND, gr_cmp(g, IR_CMP_GE, idx, gr_broadcast(g, zero, is, NULL)),
                    gr_cmp(g, IR_CMP_LE, idx, index_bounds(g, xs, is, &a, sizes)));
  int64_t ivd = a.index_vector_dim;
  if (ivd < is->rank) {
    ir_shape cs = ir_shape_array(IR_S32, is->rank, is->dims);
    ir_id n = gr_sum(g, ir_build_shaped(g->m, g->c, IR_OP_CONVERT, &ok, 1, NULL, NULL, 0, &cs, g->loc), &ivd, 1);
    ok = gr_cmp(g, IR_CMP_EQ, n, gr_like(g, n, a.index_map.n));
  }
  int64_t bdims[IR_MAX_RANK];
  int nb = 0;
  for (int d = 0; d < us->rank; d++)
    if (!in_list(&a.window_dims, d)) bdims[nb++] = d;
  ir_shape ps = ir_shape_array(IR_PRED, us->rank, us->dims);
  ir_id mask = gr_broadcast(g, ok, &ps, bdims);
  gr_accum(g, u, gr_select(g, mask, got, gr_like(g, got, 0)));
  return true;
}

bool gr_gather(gr_ctx *g, ir_id i, ir_id ct) {
  ir_id x = gr_inst(g, i)->ops[0];
  ir_attrs a = *gr_inst(g, i)->a;
  ir_attrs s = dimension_numbers(&a);
  s.indices_are_sorted = a.indices_are_sorted;
  ir_type t = gr_shape(g, ct)->type;
  ir_comp_id add = gr_add_comp(g, t);
  ir_id ops[3] = {zeros_of(g, x), clamped_indices(g, i), ct};
  gr_accum(g, x, ir_build(g->m, g->c, IR_OP_SCATTER, ops, 3, &s, &add, 1, g->loc));
  return true;
}
