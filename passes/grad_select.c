/* grad_select.c: the VJP of select-and-scatter (the max-pool gradient)
 * with a select that compares its parameters (GE, GT, LE, LT) and a
 * scatter that adds. Its value is init everywhere plus each source
 * element added at the position select picks in its window (evaluator:
 * the first position inside the operand, then each later one replacing it
 * unless select(kept, candidate) holds). So:
 *   source: g at the picked position of each window, found as the
 *     evaluator finds it: the operand padded with -inf (GE, GT) or +inf
 *     (LE, LT), which select never keeps over an inside element, and a
 *     running pick over the window offsets in row-major order;
 *   init: the sum of g;
 *   operand: nothing (it only moves the picks). */
#include "passes/grad_internal.h"

#include <math.h>

/* The direction of a select computation compare(p0, p1), or -1. */
static int select_dir(const ir_module *m, ir_comp_id c) {
  const ir_comp *cp = &m->comps.v[c];
  if (cp->root == IR_NONE || cp->nparams != 2) return -1;
  const ir_inst *r = &cp->insts.v[cp->root];
  if (r->op != IR_OP_COMPARE) return -1;
  const ir_inst *a = &cp->insts.v[r->ops[0]], *b = &cp->insts.v[r->ops[1]];
  if (a->op != IR_OP_PARAMETER || b->op != IR_OP_PARAMETER || a->a->parameter_number != 0 ||
      b->a->parameter_number != 1)
    return -1;
  ir_cmp_dir d = r->a->cmp_dir;
  return d == IR_CMP_GE || d == IR_CMP_GT || d == IR_CMP_LE || d == IR_CMP_LT ? (int)d : -1;
}

bool gr_select_and_scatter(gr_ctx *g, ir_id i, ir_id ct) {
  const ir_inst *in = gr_inst(g, i);
  int dir = select_dir(g->m, in->calls[0]);
  if (dir < 0 || gr_reducer_op(g->m, in->calls[1]) != IR_OP_ADD)
    return gr_fail(g, "a gradient through a select-and-scatter whose select is not a comparison of its "
                      "parameters or whose scatter is not add is not supported");
  ir_id x = in->ops[0], src = in->ops[1], init = in->ops[2];
  if (gr_wants(g, init)) gr_accum(g, init, gr_sum_all(g, ct));
  if (!gr_wants(g, src)) return true;
  const ir_shape *xs = gr_shape(g, x), *ss = gr_shape(g, src);
  int r = xs->rank;
  const ir_window *w0 = ir_window_of(in->a);
  ir_window w = {.rank = r};
  int64_t nwin = 1, plen[IR_MAX_RANK], start[IR_MAX_RANK], limit[IR_MAX_RANK], stride[IR_MAX_RANK];
  ir_padding_dim edge[IR_MAX_RANK], back[IR_MAX_RANK];
  for (int k = 0; k < r; k++) {
    w.dims[k] = k < w0->rank ? w0->dims[k] : (ir_window_dim){1, 1, 0, 0, 1, 1, false};
    nwin *= w.dims[k].size;
    edge[k] = (ir_padding_dim){w.dims[k].pad_lo, w.dims[k].pad_hi, 0};
    plen[k] = xs->dims[k] + w.dims[k].pad_lo + w.dims[k].pad_hi;
  }
  int64_t n;
  if (!ir_shape_elements(ss, &n) || n == 0) return true;
  bool up = dir == IR_CMP_GE || dir == IR_CMP_GT;
  ir_id xp = gr_pad(g, gr_fwd(g, x), gr_splat(g, &(ir_shape){.type = xs->type}, up ? -INFINITY : INFINITY), edge);
  ir_id gp = gr_pad(g, ct, gr_splat(g, &(ir_shape){.type = xs->type}, 0), edge);
  ir_shape is = ir_shape_array(IR_S32, ss->rank, ss->dims);
  ir_id *gs = arena_array(g->m->arena, (size_t)nwin, sizeof(ir_id));
  ir_id val = IR_NONE, pick = IR_NONE;
  for (int64_t o = 0; o < nwin; o++) {
    gr_window_offset(&w, r, o, ss->dims, plen, start, limit, stride, back);
    ir_id xo = gr_slice(g, xp, start, limit, stride);
    gs[o] = gr_slice(g, gp, start, limit, stride);
    if (o == 0) {
      val = xo;
      pick = gr_splat(g, &is, 0);
      continue;
    }
    ir_id take = gr_un(g, IR_OP_NOT, gr_cmp(g, (ir_cmp_dir)dir, val, xo));
    val = gr_select(g, take, xo, val);
    pick = gr_select(g, take, gr_splat(g, &is, (double)o), pick);
  }
  ir_id sum = IR_NONE, zero = gr_like(g, gs[0], 0);
  for (int64_t o = 0; o < nwin; o++) {
    ir_id part = gr_select(g, gr_cmp(g, IR_CMP_EQ, pick, gr_splat(g, &is, (double)o)), gs[o], zero);
    sum = sum == IR_NONE ? part : gr_bin(g, IR_OP_ADD, sum, part);
  }
  gr_accum(g, src, sum);
  return true;
}
