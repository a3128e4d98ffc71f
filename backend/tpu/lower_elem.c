/* lower_elem.c: elementwise instructions as fused loops (tk_elementwise).
 *
 * Fusion at lowering: an elementwise instruction with exactly one use, by
 * an elementwise instruction of the same element count, is deferred (not
 * materialised, lower_comp decides): its consumer's program computes it
 * in registers. Broadcasts of scalar constants become immediates. In a
 * kOutput fusion the root's program is the epilogue of the dot or
 * convolution it reads (lower_dot_epilogue, lower_conv_epilogue), with [N]
 * vectors broadcast over rows read as rows. */
#include "backend/tpu/lower.h"

static const ir_inst *inst_of(lctx *x, ir_id i) { return &x->comp->insts.v[i]; }

bool lower_is_elem(const ir_inst *in) {
  return (ir_op_flags(in->op) & OPF_ELEMWISE) || in->op == IR_OP_CONVERT ||
         in->op == IR_OP_BITCAST_CONVERT;
}

const ir_literal *lower_splat(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  if (in->op == IR_OP_BROADCAST) {
    const ir_inst *o = inst_of(x, in->ops[0]);
    if (o->op == IR_OP_CONSTANT && o->shape->rank == 0 && tk_itype(o->shape->type) != IR_TYPE_INVALID)
      return o->a->literal;
  }
  if (in->op == IR_OP_CONSTANT && in->shape->rank == 0 &&
      tk_itype(in->shape->type) != IR_TYPE_INVALID)
    return in->a->literal;
  return NULL;
}

/* An elementwise program under construction. Lookups are hashed (memo by
 * instruction id, inputs by value), so building a program costs time in
 * its own size, never in the computation's. */
typedef struct dag {
  int epi_in1;     /* 1 + input index of x->epi_dot, 0 before it is met */
  strmap *memo;    /* ir_id -> its node (shared uses) */
  strmap *in_map;  /* tval pointer -> its input index */
  VEC(int) row_in; /* inputs that are x->row_bcast vectors (not full) */
  VEC(tk_node) nodes;
  VEC(ir_id) in_ids; /* materialised inputs */
  VEC(tval *) in_vals;
  VEC(int) in_node; /* per input: its TK_IN node, or -1 before one exists */
} dag;

static int add_node(lctx *x, dag *d, tk_node n) {
  VEC_PUSH(x->b->a, d->nodes, n);
  return d->nodes.n - 1;
}

/* Appends input v (id: the instruction it is, or IR_NONE); its index. */
static int dag_add_input(lctx *x, dag *d, tval *v, ir_id id) {
  VEC_PUSH(x->b->a, d->in_vals, v);
  VEC_PUSH(x->b->a, d->in_ids, id);
  VEC_PUSH(x->b->a, d->in_node, -1);
  if (v) {
    if (!d->in_map) d->in_map = strmap_create(x->b->a);
    if (strmap_get(d->in_map, (const char *)&v, sizeof v) < 0)
      strmap_put(d->in_map, (const char *)&v, sizeof v, d->in_vals.n - 1);
  }
  return d->in_vals.n - 1;
}

/* The TK_IN node of input k (made on first use). */
static int dag_in_node(lctx *x, dag *d, int k, ir_type t) {
  if (d->in_node.v[k] < 0) {
    tk_node n = {TK_IN, t, k, 0, 0, 0, 0, 0, {0, 0, 0}};
    d->in_node.v[k] = add_node(x, d, n);
  }
  return d->in_node.v[k];
}

/* The first input whose value is v, or -1. */
static int dag_find_input(const dag *d, tval *v) {
  return d->in_map ? strmap_get(d->in_map, (const char *)&v, sizeof v) : -1;
}

static int dag_input(lctx *x, dag *d, tval *v, ir_id id) {
  if (id != IR_NONE) VEC_PUSH(x->b->a, x->pending, id);
  int k = dag_find_input(d, v);
  if (k < 0) k = dag_add_input(x, d, v, id);
  return dag_in_node(x, d, k, v->type);
}

/* Node for operand `opi` of an elementwise instruction of `count` elements. */
static int dag_operand(lctx *x, dag *d, ir_id opi, int64_t count, int rank, const int64_t *dims);

static int dag_inst(lctx *x, dag *d, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  if (!d->memo) d->memo = strmap_create(x->b->a);
  int memo = strmap_get(d->memo, (const char *)&i, sizeof i);
  if (memo >= 0) return memo;
  tk_node n = {TK_OP,         in->shape->type, 0,        0,        in->op,
               in->a->cmp_dir, in->a->cmp_type, in->nops, {0, 0, 0}};
  int64_t count = 1;
  for (int k = 0; k < in->shape->rank; k++)
    count *= in->shape->dims[k];
  for (int k = 0; k < in->nops; k++)
    n.args[k] = dag_operand(x, d, in->ops[k], count, in->shape->rank,
                            in->shape->dims);
  if (in->op == IR_OP_BITCAST_CONVERT) {
    /* Between types of one width (the verifier's rule): the same bits in
     * the register representation, except that a pred result from s8 is
     * "byte nonzero", which is convert's rule. */
    ir_type ot = inst_of(x, in->ops[0])->shape->type;
    n.op = in->shape->type == IR_PRED && ot != IR_PRED ? IR_OP_CONVERT
           : (in->shape->type == IR_F16) != (ot == IR_F16) ? IR_OP_BITCAST_CONVERT /* elem.c */
                                                           : IR_OP_COPY;
  }
  const char *why;
  if (!tk_elem_supported(x->b, &n, &why)) {
    x->b->loc = in->info->loc;
    tb_error(x->b, ST_UNSUPPORTED, "%s (%s%s%s)", why, ir_op_name(in->op), " on ",
             ir_type_name(in->shape->type));
  }
  int r = add_node(x, d, n);
  strmap_put(d->memo, (const char *)&i, sizeof i, r);
  return r;
}

static int dag_operand(lctx *x, dag *d, ir_id opi, int64_t count, int rank, const int64_t *dims) {
  const ir_literal *lit = lower_splat(x, opi);
  if (lit) {
    tk_node n = {TK_CONST, lit->shape.type, 0, lit_bits(lit, 0), 0, 0, 0, 0, {0, 0, 0}};
    return add_node(x, d, n);
  }
  if (x->deferred[opi]) return dag_inst(x, d, opi);
  if (opi == x->epi_dot) { /* not lowered yet: an input without a buffer */
    if (!d->epi_in1) d->epi_in1 = 1 + dag_add_input(x, d, NULL, IR_NONE);
    return dag_in_node(x, d, d->epi_in1 - 1, IR_F32);
  }
  if (x->row_bcast && x->row_bcast[opi]) { /* the [N] vector itself, once */
    ir_id src = inst_of(x, opi)->ops[0];
    tval *v = x->val[src];
    for (int k = 0; k < d->row_in.n; k++)
      if (d->in_vals.v[d->row_in.v[k]] == v) return dag_in_node(x, d, d->row_in.v[k], v->type);
    int k = dag_add_input(x, d, v, IR_NONE);
    VEC_PUSH(x->b->a, d->row_in, k);
    VEC_PUSH(x->b->a, x->pending, src);
    return dag_in_node(x, d, k, v->type);
  }
  tval *v = x->val[opi];
  if (v->count != count) { /* a scalar operand of clamp/select */
    tval *bv = tv_broadcast(x->b, v, rank, dims);
    VEC_PUSH(x->b->a, x->pending, opi);
    return dag_input(x, d, bv, IR_NONE);
  }
  return dag_input(x, d, v, opi);
}

void lower_elementwise(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  dag d = {0};
  int root = dag_inst(x, &d, i);
  if (x->b->failed) return;
  tval *out;
  if (x->root_bf16 && i == x->comp->root && in->shape->type == IR_F32) {
    /* stored rounded to bf16 (lower_bf16_store): a convert at the root */
    tk_node cv = {TK_OP, IR_BF16, 0, 0, IR_OP_CONVERT, 0, 0, 1, {root, 0, 0}};
    root = add_node(x, &d, cv);
    out = tv_new(x->b, IR_BF16, in->shape->rank, in->shape->dims);
  } else {
    out = tv_new(x->b, in->shape->type, in->shape->rank, in->shape->dims);
  }
  tk_elem e = {0};
  e.nnodes = d.nodes.n;
  e.nodes = d.nodes.v;
  e.ninputs = d.in_vals.n;
  e.in_addr = arena_array(x->b->a, (size_t)e.ninputs + 1, sizeof(uint64_t));
  e.in_type = arena_array(x->b->a, (size_t)e.ninputs + 1, sizeof(ir_type));
  for (int k = 0; k < e.ninputs; k++)
    if (k != d.epi_in1 - 1) {
      e.in_addr[k] = tv_addr(d.in_vals.v[k]);
      e.in_type[k] = d.in_vals.v[k]->type;
    }
  e.noutputs = 1;
  e.out_node = &root;
  uint64_t oa = tv_addr(out);
  e.out_addr = &oa;
  e.count = out->count;
  bool *row = arena_array(x->b->a, (size_t)e.ninputs + 1, sizeof(bool));
  for (int k = 0; k < d.row_in.n; k++)
    row[d.row_in.v[k]] = true;
  bool done = false;
  if (d.epi_in1) {
    /* kOutput fusion: the program is the dot's (convolution's) epilogue
     * when the matmul plan allows, else the dot is lowered now and the
     * program runs after. */
    int di = d.epi_in1 - 1;
    ir_id dot = x->epi_dot;
    const ir_inst *din = inst_of(x, dot);
    e.in_type[di] = IR_F32;
    bool conv = din->op == IR_OP_CONVOLUTION;
    done = conv ? lower_conv_epilogue(x, dot, &e, di, oa, row)
                : lower_dot_epilogue(x, dot, &e, di, oa, row);
    if (!done) {
      tb_explain(x->b, "the %s is lowered alone and the epilogue runs as a separate pass over "
                       "its f32 result", conv ? "convolution" : "dot");
      int np = x->pending.n;
      ir_id *saved = arena_array(x->b->a, (size_t)np + 1, sizeof(ir_id));
      for (int k = 0; k < np; k++)
        saved[k] = x->pending.v[k];
      if (!conv) lower_dot(x, dot);
      else if (!lower_pointwise_conv(x, dot)) lower_conv(x, dot);
      x->pending.n = 0;
      for (int k = 0; k < np; k++)
        VEC_PUSH(x->b->a, x->pending, saved[k]);
      if (x->b->failed) return;
      e.in_addr[di] = tv_addr(x->val[dot]);
      VEC_PUSH(x->b->a, x->pending, dot);
    }
    for (int k = 0; k < din->nops; k++)
      VEC_PUSH(x->b->a, x->pending, din->ops[k]);
  }
  if (!done) {
    /* Row vectors are broadcast to full buffers for the separate pass. */
    for (int k = 0; k < d.row_in.n; k++) {
      tval *v = d.in_vals.v[d.row_in.v[k]];
      tval *full = tv_new(x->b, v->type, out->rank, out->dims);
      int64_t ds[IR_MAX_RANK], ss[IR_MAX_RANK] = {0}, vs[IR_MAX_RANK];
      tv_strides(full, ds);
      tv_strides(v, vs);
      for (int j = 0; j < v->rank; j++)
        ss[out->rank - v->rank + j] = vs[j];
      tk_copy(x->b, tv_addr(full), ds, tv_addr(v), ss, out->rank, out->dims, tv_esize(v->type));
      e.in_addr[d.row_in.v[k]] = tv_addr(full);
      d.in_vals.v[d.row_in.v[k]] = full;
      row[d.row_in.v[k]] = false; /* a temporary now */
    }
    tk_elementwise(x->b, &e);
  }
  /* Temporary broadcasts made for scalar operands (and rows) die now. */
  for (int k = 0; k < e.ninputs; k++)
    if (d.in_ids.v[k] == IR_NONE && k != d.epi_in1 - 1 && !row[k]) tv_release(x->b, d.in_vals.v[k]);
  x->val[i] = out;
}
