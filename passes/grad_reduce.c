/* grad_reduce.c: the VJPs of reduce and reduce-window.
 *
 * reduce (one input, one init): with add, the adjoint broadcast back over
 * the reduced dimensions (the init gets the sum of the adjoint); with
 * maximum or minimum, the adjoint goes to the elements equal to the
 * result, split evenly among ties (as jax), and the init gets none (a
 * gradient asked for an active init is a located error).
 * reduce-window add: the adjoint padded (edges from the window and
 * padding, strides as interior padding) and summed over the same window
 * with stride 1, as XLA and jax transpose it; reduce-window maximum and
 * minimum (pooling): as select-and-scatter would, see window_choice; base
 * dilation is refused. A reducer that selects one of its inputs (variadic,
 * argmax-style) is grad_argreduce.c's; other reducers (multiply) are
 * located errors. */
#include "passes/grad_internal.h"

ir_op gr_reducer_op(const ir_module *m, ir_comp_id c) {
  const ir_comp *cp = &m->comps.v[c];
  if (cp->root == IR_NONE || cp->nparams != 2) return IR_OP__COUNT;
  const ir_inst *r = &cp->insts.v[cp->root];
  if (r->nops != 2) return IR_OP__COUNT;
  bool pp = r->ops[0] != r->ops[1];
  for (int k = 0; k < 2; k++) pp = pp && cp->insts.v[r->ops[k]].op == IR_OP_PARAMETER;
  if (!pp) return IR_OP__COUNT;
  switch (r->op) {
  case IR_OP_ADD:
  case IR_OP_MAXIMUM:
  case IR_OP_MINIMUM:
  case IR_OP_MULTIPLY: return r->op;
  default: return IR_OP__COUNT;
  }
}

bool gr_reduce(gr_ctx *g, ir_id i, ir_id ct) {
  const ir_inst *in = gr_inst(g, i);
  if (in->nops != 2) return gr_reduce_select(g, i, ct);
  ir_op op = gr_reducer_op(g->m, in->calls[0]);
  if (op != IR_OP_ADD && op != IR_OP_MAXIMUM && op != IR_OP_MINIMUM && gr_reducer_selects(g->m, in->calls[0], 1))
    return gr_reduce_select(g, i, ct);
  if (op != IR_OP_ADD && op != IR_OP_MAXIMUM && op != IR_OP_MINIMUM)
    return gr_fail(g, "a gradient through a reduce whose computation is not add, maximum or minimum "
                      "is not supported");
  ir_id x = in->ops[0], init = in->ops[1];
  const ir_shape *xs = gr_shape(g, x);
  ir_ints dims = in->a->dimensions;
  int64_t kept[IR_MAX_RANK];
  int nk = 0;
  for (int d = 0; d < xs->rank; d++) {
    bool red = false;
    for (int k = 0; k < dims.n; k++) red = red || dims.v[k] == d;
    if (!red) kept[nk++] = d;
  }
  if (op == IR_OP_ADD) {
    if (gr_wants(g, x)) gr_accum(g, x, gr_broadcast(g, ct, xs, kept));
    if (gr_wants(g, init)) gr_accum(g, init, gr_sum_all(g, ct));
    return true;
  }
  if (gr_wants(g, init))
    return gr_fail(g, "a gradient for the init value of a maximum or minimum reduce is not supported");
  if (!gr_wants(g, x)) return true;
  ir_id xv = gr_fwd(g, x), yb = gr_broadcast(g, gr_fwd(g, i), xs, kept);
  ir_id hit = gr_cmp(g, IR_CMP_EQ, xv, yb);
  ir_id ones = gr_select(g, hit, gr_like(g, xv, 1), gr_like(g, xv, 0));
  ir_id count = gr_sum(g, ones, dims.v, dims.n);
  ir_id share = gr_broadcast(g, gr_bin(g, IR_OP_DIVIDE, ct, count), xs, kept);
  gr_accum(g, x, gr_select(g, hit, share, gr_like(g, xv, 0)));
  return true;
}

static int64_t dilate(int64_t n, int64_t d) { return n == 0 ? 0 : 1 + d * (n - 1); }

void gr_window_offset(const ir_window *w, int r, int64_t o, const int64_t *ydims, const int64_t *plen,
                      int64_t *start, int64_t *limit, int64_t *stride, ir_padding_dim *back) {
  for (int k = r - 1; k >= 0; k--) {
    int64_t off = (o % w->dims[k].size) * w->dims[k].rhs_dilate;
    o /= w->dims[k].size;
    start[k] = off;
    stride[k] = w->dims[k].stride;
    limit[k] = off + (ydims[k] - 1) * w->dims[k].stride + 1;
    back[k] = (ir_padding_dim){off, plen[k] - limit[k], w->dims[k].stride - 1};
  }
}

/* reduce-window maximum/minimum: what select-and-scatter with GE (LE) and
 * add computes, written with core ops so that every target runs it: the
 * operand padded with the init value; for each window offset o in
 * row-major order, the strided slice X_o of the elements at offset o of
 * every window; the adjoint goes to offset o where X_o equals the result
 * and no earlier offset took it (the first extreme element of the
 * window), padded back to its place; the sum over offsets, with the
 * padding sliced off. */
static void window_choice(gr_ctx *g, ir_id i, ir_id ct, const ir_window *w, int64_t nwin) {
  ir_id x = gr_inst(g, i)->ops[0];
  const ir_shape *xs = gr_shape(g, x), *ys = gr_shape(g, i);
  int r = xs->rank;
  ir_padding_dim edge[IR_MAX_RANK], back[IR_MAX_RANK];
  int64_t plen[IR_MAX_RANK], start[IR_MAX_RANK], limit[IR_MAX_RANK], stride[IR_MAX_RANK];
  for (int k = 0; k < r; k++) {
    edge[k] = (ir_padding_dim){w->dims[k].pad_lo, w->dims[k].pad_hi, 0};
    plen[k] = xs->dims[k] + w->dims[k].pad_lo + w->dims[k].pad_hi;
  }
  ir_id xp = gr_pad(g, gr_fwd(g, x), gr_fwd(g, gr_inst(g, i)->ops[1]), edge);
  ir_id y = gr_fwd(g, i), zero = gr_like(g, ct, 0), sum = IR_NONE, taken = IR_NONE;
  for (int64_t o = 0; o < nwin; o++) {
    gr_window_offset(w, r, o, ys->dims, plen, start, limit, stride, back);
    ir_id hit = gr_cmp(g, IR_CMP_EQ, gr_slice(g, xp, start, limit, stride), y);
    if (taken != IR_NONE) hit = gr_bin(g, IR_OP_AND, hit, gr_un(g, IR_OP_NOT, taken));
    taken = taken == IR_NONE ? hit : gr_bin(g, IR_OP_OR, taken, hit);
    ir_id part = gr_pad(g, gr_select(g, hit, ct, zero), gr_splat(g, &(ir_shape){.type = ys->type}, 0), back);
    sum = sum == IR_NONE ? part : gr_bin(g, IR_OP_ADD, sum, part);
  }
  for (int k = 0; k < r; k++) {
    start[k] = w->dims[k].pad_lo;
    limit[k] = w->dims[k].pad_lo + xs->dims[k];
    stride[k] = 1;
  }
  gr_accum(g, x, gr_slice(g, sum, start, limit, stride));
}

bool gr_reduce_window(gr_ctx *g, ir_id i, ir_id ct) {
  const ir_inst *in = gr_inst(g, i);
  if (in->nops != 2) return gr_fail(g, "a gradient through a variadic reduce-window is not supported");
  ir_op op = gr_reducer_op(g->m, in->calls[0]);
  if (op != IR_OP_ADD && op != IR_OP_MAXIMUM && op != IR_OP_MINIMUM)
    return gr_fail(g, "a gradient through a reduce-window whose computation is not add, maximum or minimum "
                      "is not supported");
  ir_id x = in->ops[0], init = in->ops[1];
  const ir_shape *xs = gr_shape(g, x), *ys = in->shape;
  const ir_window *w = ir_window_of(in->a);
  ir_padding_dim p[IR_MAX_RANK];
  ir_window *bw = arena_alloc(g->m->arena, sizeof *bw);
  bw->rank = xs->rank;
  int64_t nwin = 1, n;
  ir_window full = {.rank = xs->rank};
  for (int k = 0; k < xs->rank; k++) {
    ir_window_dim wd = k < w->rank ? w->dims[k] : (ir_window_dim){1, 1, 0, 0, 1, 1, false};
    full.dims[k] = wd;
    if (wd.lhs_dilate != 1) return gr_fail(g, "a gradient through a reduce-window with base dilation is not supported");
    int64_t rd = dilate(wd.size, wd.rhs_dilate), od = dilate(ys->dims[k], wd.stride);
    p[k].lo = rd - wd.pad_lo - 1;
    p[k].hi = xs->dims[k] + rd - 1 - od - p[k].lo;
    p[k].interior = wd.stride - 1;
    bw->dims[k] = (ir_window_dim){wd.size, 1, 0, 0, 1, wd.rhs_dilate, false};
    nwin *= wd.size;
  }
  if (!ir_shape_elements(ys, &n) || n == 0) return true;
  if (op != IR_OP_ADD) {
    if (gr_wants(g, init))
      return gr_fail(g, "a gradient for the init value of a maximum or minimum reduce-window is not supported");
    if (gr_wants(g, x)) window_choice(g, i, ct, &full, nwin);
    return true;
  }
  if (gr_wants(g, x)) {
    ir_id zero = gr_splat(g, &(ir_shape){.type = ys->type}, 0);
    ir_id padded = gr_pad(g, ct, zero, p);
    ir_attrs a = ir_attrs_none;
    a.window = bw;
    ir_comp_id add = gr_add_comp(g, ys->type);
    gr_accum(g, x, ir_build(g->m, g->c, IR_OP_REDUCE_WINDOW, (ir_id[]){padded, zero}, 2, &a, &add, 1, g->loc));
  }
  if (gr_wants(g, init)) gr_accum(g, init, gr_sum_all(g, ct));
  return true;
}
