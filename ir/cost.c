/* cost.c: what a computation asks of an accelerator, independent of any
 * target: the multiply-adds of its dots and convolutions (the "useful"
 * MACs that FLOP/s and MXU-utilisation figures divide by). Contract: ir.h. */
#include "ir/ir.h"

uint64_t ir_inst_macs(const ir_inst *in, const ir_shape *lhs, const ir_shape *rhs) {
  uint64_t out = (uint64_t)ir_shape_count(in->shape), k = 1;
  if (in->op == IR_OP_DOT) {
    for (int i = 0; i < in->a->lhs_contracting.n; i++)
      k *= (uint64_t)lhs->dims[in->a->lhs_contracting.v[i]];
  } else if (in->op == IR_OP_CONVOLUTION) {
    /* every output element sums over the kernel's window and its input
     * features (already divided by feature_group_count in the kernel) */
    const ir_conv_dims *d = &in->a->conv;
    k = (uint64_t)rhs->dims[d->k_in];
    for (int i = 0; i < d->nspatial; i++) k *= (uint64_t)rhs->dims[d->k_spatial[i]];
  } else {
    return 0;
  }
  return out * k;
}

static uint64_t comp_macs(const ir_module *m, ir_comp_id c, int depth) {
  const ir_comp *cp = &m->comps.v[c];
  uint64_t n = 0;
  if (depth > 64) return 0; /* the verifier rejects cycles; this bounds the walk regardless */
  for (int i = 0; i < cp->insts.n; i++) {
    const ir_inst *in = &cp->insts.v[i];
    if (in->dead) continue;
    if (in->op == IR_OP_DOT || in->op == IR_OP_CONVOLUTION)
      n += ir_inst_macs(in, cp->insts.v[in->ops[0]].shape, cp->insts.v[in->ops[1]].shape);
    else if (in->op == IR_OP_FUSION)
      for (int k = 0; k < in->ncalls; k++) n += comp_macs(m, in->calls[k], depth + 1);
  }
  return n;
}

uint64_t ir_module_macs(const ir_module *m) {
  return m->entry == IR_NONE ? 0 : comp_macs(m, m->entry, 0);
}
