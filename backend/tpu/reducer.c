/* reducer.c: what the reduce, row and attention lowerings share about a
 * reduction: a scalar reducer computation as a kernel program, and the rule
 * that decides when a reduction folds as a tree. It calls only the value
 * layer and the kernels (tk_*), so rows.c and attention.c depend on it and
 * not on lower_ops.c. */
#include "backend/tpu/lower.h"

/* ---- scalar computations as elementwise programs ----------------------------- */

bool lower_scalar_comp(lctx *x, ir_comp_id c, tk_elem *out) {
  return lower_scalar_comp_as(x, c, out, "reducer");
}

bool lower_scalar_comp_as(lctx *x, ir_comp_id c, tk_elem *out, const char *role) {
  const ir_comp *comp = &x->m->comps.v[c];
  int n = comp->insts.n;
  int *node = arena_array(x->b->a, (size_t)n + 1, sizeof(int));
  VEC(tk_node) nodes = {0};
  out->ninputs = comp->nparams;
  out->in_type = arena_array(x->b->a, (size_t)comp->nparams + 1, sizeof(ir_type));
  for (int i = 0; i < n; i++) {
    const ir_inst *in = &comp->insts.v[i];
    node[i] = -1;
    if (in->dead) continue;
    if (in->op == IR_OP_TUPLE) continue;
    if (in->shape->type == IR_TUPLE || in->shape->rank != 0) goto bad;
    tk_node nd = {0};
    nd.type = in->shape->type;
    if (in->op == IR_OP_PARAMETER) {
      nd.kind = TK_IN;
      nd.input = (int)in->a->parameter_number;
      out->in_type[nd.input] = in->shape->type;
    } else if (in->op == IR_OP_CONSTANT) {
      nd.kind = TK_CONST;
      nd.bits = lit_bits(in->a->literal, 0);
    } else if ((ir_op_flags(in->op) & OPF_ELEMWISE) || in->op == IR_OP_CONVERT ||
               in->op == IR_OP_BITCAST_CONVERT) {
      nd.kind = TK_OP;
      nd.op = in->op;
      nd.cmp_dir = in->a->cmp_dir;
      nd.cmp_type = in->a->cmp_type;
      nd.nargs = in->nops;
      for (int k = 0; k < in->nops; k++) {
        if (node[in->ops[k]] < 0) goto bad;
        nd.args[k] = node[in->ops[k]];
      }
      const char *why;
      if (!tk_elem_supported(x->b, &nd, &why)) {
        x->b->loc = in->info->loc;
        tb_error(x->b, ST_UNSUPPORTED, "%s op %s: %s", role, ir_op_name(in->op), why);
        return false;
      }
    } else {
      goto bad;
    }
    VEC_PUSH(x->b->a, nodes, nd);
    node[i] = nodes.n - 1;
  }
  const ir_inst *root = &comp->insts.v[comp->root];
  if (root->op == IR_OP_TUPLE) {
    out->noutputs = root->nops;
    out->out_node = arena_array(x->b->a, (size_t)root->nops + 1, sizeof(int));
    for (int k = 0; k < root->nops; k++) {
      if (node[root->ops[k]] < 0) goto bad;
      out->out_node[k] = node[root->ops[k]];
    }
  } else {
    out->noutputs = 1;
    out->out_node = arena_array(x->b->a, 1, sizeof(int));
    out->out_node[0] = node[comp->root];
  }
  out->nnodes = nodes.n;
  out->nodes = nodes.v;
  return true;
bad:
  tb_error(x->b, ST_UNSUPPORTED, "%s computation '%s' is not a scalar elementwise computation",
           role, comp->name);
  return false;
}

/* A reduction of R rows into O outputs folds as a tree (R2 partial
 * accumulators per output, folded again) when R is large and O small;
 * fusion asks the same question through the target hooks. */
bool lower_tree_fold(int64_t R, int64_t O) { return R >= 4096 && O < 1024; }
