/* grad_topk.c: the VJP of top-k (the topk op and the TopK custom-call;
 * grad_internal.h).
 *
 * top-k of x [..., n] gives values [..., k] and s32 indices [..., k]: the
 * values are x at the indices along the last dimension, so x's adjoint is
 * the values' adjoint scattered (added) to those positions; the indices
 * carry no gradient. The indices of one row are distinct, so the scatter
 * never adds two contributions to one place. It is written with core ops
 * every target runs: over [..., k, n], the one-hot mask iota(n) == index
 * selects the broadcast adjoint, summed over the k dimension. */
#include "passes/grad_internal.h"

bool gr_topk(gr_ctx *g, ir_id i, ir_id ct) {
  (void)ct;
  const ir_inst *in = gr_inst(g, i);
  ir_id x = in->ops[0];
  ir_id a = g->adjt[i] ? g->adjt[i][0] : IR_NONE;
  if (in->nops != 1)
    return gr_fail(g, "a gradient through a top-k of %d operands is not supported", in->nops);
  if (a == IR_NONE || !gr_wants(g, x)) return true;
  const ir_shape *xs = gr_shape(g, x), *vs = gr_shape(g, a);
  int r = xs->rank;
  ir_shape wide = ir_shape_array(xs->type, r + 1, vs->dims);
  wide.dims[r] = xs->dims[r - 1];
  int64_t lead[IR_MAX_RANK + 1];
  for (int d = 0; d < r; d++)
    lead[d] = d;
  ir_id idx = gr_gte(g, gr_fwd(g, i), 1);
  ir_shape is = ir_shape_array(IR_S32, r + 1, wide.dims);
  ir_attrs ia = ir_attrs_none;
  ia.index = r;
  ir_id iota = ir_build_shaped(g->m, g->c, IR_OP_IOTA, NULL, 0, &ia, NULL, 0, &is, g->loc);
  ir_id hit = gr_cmp(g, IR_CMP_EQ, iota, gr_broadcast(g, idx, &is, lead));
  ir_id ab = gr_broadcast(g, a, &wide, lead);
  int64_t kdim = r - 1;
  gr_accum(g, x, gr_sum(g, gr_select(g, hit, ab, gr_like(g, ab, 0)), &kdim, 1));
  return true;
}
