/* lower.c: lowering of IR instructions to kernels: values, data movement
 * (broadcast, reshape, transpose, slice, reverse, concatenate, pad, iota),
 * elementwise ops fused into loops, tuples, fusion computations (inlined)
 * and single-replica all-reduce. Dots, convolutions and reductions are in
 * lower_ops.c.
 *
 * Fusion at lowering: an elementwise instruction with exactly one use, by
 * an elementwise instruction of the same element count, is not
 * materialised: its consumer's loop computes it in registers. Broadcasts
 * of scalar constants become immediates. Everything else is an HBM buffer
 * freed after its last use. */
#include "backend/tpu/lower.h"

int tv_esize(ir_type t) { return tk_itype(t) == IR_BF16 ? 2 : 4; }

tval *tv_new(lctx *x, ir_type t, int rank, const int64_t *dims) {
  tval *v = arena_alloc(x->b->a, sizeof *v);
  v->type = t;
  v->rank = rank;
  v->count = 1;
  for (int k = 0; k < rank; k++) {
    v->dims[k] = dims[k];
    v->count *= dims[k];
  }
  v->buf = arena_alloc(x->b->a, sizeof *v->buf);
  v->buf->bytes = (uint64_t)v->count * (uint64_t)tv_esize(t);
  v->buf->addr = tb_hbm_alloc(x->b, v->buf->bytes);
  v->buf->refs = 1;
  v->buf->owned = true;
  return v;
}

tval *tv_alias(lctx *x, const tval *v, ir_type t, int rank, const int64_t *dims) {
  tval *r = arena_alloc(x->b->a, sizeof *r);
  r->type = t;
  r->rank = rank;
  r->count = 1;
  for (int k = 0; k < rank; k++) {
    r->dims[k] = dims[k];
    r->count *= dims[k];
  }
  r->buf = v->buf;
  r->buf->refs++;
  return r;
}

static tval *tv_ref(lctx *x, tval *v) {
  if (v->tuple) {
    tval *t = arena_alloc(x->b->a, sizeof *t);
    *t = *v;
    t->elems = arena_array(x->b->a, (size_t)(v->n ? v->n : 1), sizeof(tval *));
    for (int k = 0; k < v->n; k++) t->elems[k] = tv_ref(x, v->elems[k]);
    return t;
  }
  return tv_alias(x, v, v->type, v->rank, v->dims);
}

void tv_release(lctx *x, tval *v) {
  if (!v) return;
  if (v->tuple) {
    for (int k = 0; k < v->n; k++) tv_release(x, v->elems[k]);
    return;
  }
  if (--v->buf->refs == 0 && v->buf->owned) tb_hbm_free(x->b, v->buf->addr, v->buf->bytes);
}

void tv_strides(const tval *v, int64_t *st) {
  int64_t s = 1;
  for (int k = v->rank - 1; k >= 0; k--) {
    st[k] = s;
    s *= v->dims[k];
  }
}

uint64_t tv_addr(const tval *v) { return v->buf->addr; }

static const ir_inst *inst_of(lctx *x, ir_id i) { return &x->comp->insts.v[i]; }

static void consume(lctx *x, ir_id i) {
  if (--x->rem[i] == 0) {
    tv_release(x, x->val[i]);
    x->val[i] = NULL;
  }
}

static tval *shape_val(lctx *x, const ir_shape *s) {
  return tv_new(x, s->type, s->rank, s->dims);
}

uint32_t lit_bits(const ir_literal *l, int64_t idx) {
  switch (l->shape.type) {
  case IR_F32: {
    uint32_t u;
    memcpy(&u, (const char *)l->data + idx * 4, 4);
    return u;
  }
  case IR_BF16: {
    uint16_t h;
    memcpy(&h, (const char *)l->data + idx * 2, 2);
    return (uint32_t)h << 16;
  }
  case IR_F16: {
    uint16_t h;
    memcpy(&h, (const char *)l->data + idx * 2, 2);
    float f = ir_f16_to_f32(h);
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
  }
  default: return (uint32_t)(int32_t)ir_literal_get_i64(l, idx);
  }
}

/* ---- elementwise groups ----------------------------------------------------- */

static bool is_elem(const ir_inst *in) {
  return (ir_op_flags(in->op) & OPF_ELEMWISE) || in->op == IR_OP_CONVERT ||
         in->op == IR_OP_BITCAST_CONVERT;
}

/* Scalar constant behind a broadcast (or a scalar constant): its literal. */
static const ir_literal *splat_of(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  if (in->op == IR_OP_BROADCAST) {
    const ir_inst *o = inst_of(x, in->ops[0]);
    if (o->op == IR_OP_CONSTANT && o->shape->rank == 0 && tk_itype(o->shape->type) != IR_TYPE_INVALID)
      return o->a->literal;
  }
  if (in->op == IR_OP_CONSTANT && in->shape->rank == 0 && tk_itype(in->shape->type) != IR_TYPE_INVALID)
    return in->a->literal;
  return NULL;
}

/* An elementwise program under construction. Lookups are hashed (memo by
 * instruction id, inputs by value), so building a program costs time in
 * its own size, never in the computation's. */
typedef struct dag {
  int epi_in1;       /* 1 + input index of x->epi_dot, 0 before it is met */
  strmap *memo;      /* ir_id -> its node (shared uses) */
  strmap *in_map;    /* tval pointer -> its input index */
  VEC(int) row_in;   /* inputs that are x->row_bcast vectors (not full) */
  VEC(tk_node) nodes;
  VEC(ir_id) in_ids; /* materialised inputs */
  VEC(tval *) in_vals;
  VEC(int) in_node;  /* per input: its TK_IN node, or -1 before one exists */
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

static tval *materialize_broadcast(lctx *x, tval *v, int rank, const int64_t *dims);

/* Node for operand `opi` of an elementwise instruction of `count` elements. */
static int dag_operand(lctx *x, dag *d, ir_id opi, int64_t count, int rank, const int64_t *dims);

static int dag_inst(lctx *x, dag *d, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  if (!d->memo) d->memo = strmap_create(x->b->a);
  int memo = strmap_get(d->memo, (const char *)&i, sizeof i);
  if (memo >= 0) return memo;
  tk_node n = {TK_OP, in->shape->type, 0, 0, in->op, in->a->cmp_dir,
in->a->cmp_type, in->nops, {0, 0, 0}};
  int64_t count = 1;
  for (int k = 0; k < in->shape->rank; k++) count *= in->shape->dims[k];
  for (int k = 0; k < in->nops; k++)
    n.args[k] = dag_operand(x, d, in->ops[k], count, in->shape->rank,
                            in->shape->dims);
  if (in->op == IR_OP_BITCAST_CONVERT) {
    /* Between types of one width (the verifier's rule): the same bits in
     * the register representation, except that a pred result from s8 is
     * "byte nonzero", which is convert's rule. */
    ir_type ot = inst_of(x, in->ops[0])->shape->type;
    n.op = in->shape->type == IR_PRED && ot != IR_PRED ? IR_OP_CONVERT : IR_OP_COPY;
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
  const ir_literal *lit = splat_of(x, opi);
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
    tval *bv = materialize_broadcast(x, v, rank, dims);
    VEC_PUSH(x->b->a, x->pending, opi);
    return dag_input(x, d, bv, IR_NONE);
  }
  return dag_input(x, d, v, opi);
}

static void lower_elementwise(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  dag d = {0};
  int root = dag_inst(x, &d, i);
  if (x->b->failed) return;
  tval *out;
  if (x->root_bf16 && i == x->comp->root && in->shape->type == IR_F32) {
    /* stored rounded to bf16 (lower_bf16_store): a convert at the root */
    tk_node cv = {TK_OP, IR_BF16, 0, 0, IR_OP_CONVERT, 0, 0, 1, {root, 0, 0}};
    root = add_node(x, &d, cv);
    out = tv_new(x, IR_BF16, in->shape->rank, in->shape->dims);
  } else {
    out = shape_val(x, in->shape);
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
  for (int k = 0; k < d.row_in.n; k++) row[d.row_in.v[k]] = true;
  bool done = false;
  if (d.epi_in1) {
    /* kOutput fusion: the program is the dot's epilogue when the matmul
     * plan allows, else the dot is lowered now and the program runs after. */
    int di = d.epi_in1 - 1;
    ir_id dot = x->epi_dot;
    const ir_inst *din = inst_of(x, dot);
    e.in_type[di] = IR_F32;
    done = lower_dot_epilogue(x, dot, &e, di, oa, row);
    if (!done) {
      tb_explain(x->b, "the dot is lowered alone and the epilogue runs as a separate pass over "
                       "its f32 result");
      int np = x->pending.n;
      ir_id *saved = arena_array(x->b->a, (size_t)np + 1, sizeof(ir_id));
      for (int k = 0; k < np; k++) saved[k] = x->pending.v[k];
      lower_dot(x, dot);
      x->pending.n = 0;
      for (int k = 0; k < np; k++) VEC_PUSH(x->b->a, x->pending, saved[k]);
      if (x->b->failed) return;
      e.in_addr[di] = tv_addr(x->val[dot]);
      VEC_PUSH(x->b->a, x->pending, dot);
    }
    for (int k = 0; k < din->nops; k++) VEC_PUSH(x->b->a, x->pending, din->ops[k]);
  }
  if (!done) {
    /* Row vectors are broadcast to full buffers for the separate pass. */
    for (int k = 0; k < d.row_in.n; k++) {
      tval *v = d.in_vals.v[d.row_in.v[k]];
      tval *full = tv_new(x, v->type, out->rank, out->dims);
      int64_t ds[IR_MAX_RANK], ss[IR_MAX_RANK] = {0}, vs[IR_MAX_RANK];
      tv_strides(full, ds);
      tv_strides(v, vs);
      for (int j = 0; j < v->rank; j++) ss[out->rank - v->rank + j] = vs[j];
      tk_copy(x->b, tv_addr(full), ds, tv_addr(v), ss, out->rank, out->dims, tv_esize(v->type));
      e.in_addr[d.row_in.v[k]] = tv_addr(full);
      d.in_vals.v[d.row_in.v[k]] = full;
      row[d.row_in.v[k]] = false; /* a temporary now */
    }
    tk_elementwise(x->b, &e);
  }
  /* Temporary broadcasts made for scalar operands (and rows) die now. */
  for (int k = 0; k < e.ninputs; k++)
    if (d.in_ids.v[k] == IR_NONE && k != d.epi_in1 - 1 && !row[k]) tv_release(x, d.in_vals.v[k]);
  x->val[i] = out;
}

/* Runs a one-node elementwise program on v (a convert, or a copy). */
tval *lower_convert(lctx *x, const tval *v, ir_type t) {
  tval *out = tv_new(x, t, v->rank, v->dims);
  tk_node nodes[2] = {{TK_IN, v->type, 0, 0, 0, 0, 0, 0, {0, 0, 0}},
                      {TK_OP, t, 0, 0, IR_OP_CONVERT, 0, 0, 1, {0, 0, 0}}};
  int root = 1;
  uint64_t ia = tv_addr(v), oa = tv_addr(out);
  ir_type it = v->type;
  tk_elem e = {2, nodes, 1, &ia, &it, 1, &root, &oa, v->count};
  tk_elementwise(x->b, &e);
  return out;
}

/* A dot of the entry whose result only feeds one-pass dots (the fused
 * attention's Q, K, V: lower_bf16_store) stores it rounded to bf16 from
 * its matmul's epilogue: the bits those dots would round it to, half the
 * bytes. false (nothing emitted) otherwise. */
static bool lower_dot_bf16(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  if (!lower_bf16_store(x, i)) return false;
  tval *out = tv_new(x, IR_BF16, in->shape->rank, in->shape->dims);
  tk_node nodes[2] = {{TK_IN, IR_F32, 0, 0, 0, 0, 0, 0, {0, 0, 0}},
                      {TK_OP, IR_BF16, 0, 0, IR_OP_CONVERT, 0, 0, 1, {0, 0, 0}}};
  int root = 1;
  uint64_t ia = 0, oa = tv_addr(out);
  ir_type it = IR_F32;
  tk_elem e = {2, nodes, 1, &ia, &it, 1, &root, &oa, out->count};
  if (!lower_dot_epilogue(x, i, &e, 0, oa, NULL)) {
    tv_release(x, out);
    return false;
  }
  x->val[i] = out;
  return true;
}

/* ---- data movement -------------------------------------------------------------- */

static tval *materialize_broadcast(lctx *x, tval *v, int rank, const int64_t *dims) {
  tval *out = tv_new(x, v->type, rank, dims);
  int64_t ds[IR_MAX_RANK], ss[IR_MAX_RANK] = {0};
  tv_strides(out, ds);
  tk_copy(x->b, tv_addr(out), ds, tv_addr(v), ss, rank, dims, tv_esize(v->type));
  return out;
}

tval *lower_transpose(lctx *x, const tval *v, const int64_t *perm) {
  int64_t dims[IR_MAX_RANK], vs[IR_MAX_RANK], ss[IR_MAX_RANK], ds[IR_MAX_RANK];
  tv_strides(v, vs);
  for (int k = 0; k < v->rank; k++) {
    dims[k] = v->dims[perm[k]];
    ss[k] = vs[perm[k]];
  }
  tval *out = tv_new(x, v->type, v->rank, dims);
  tv_strides(out, ds);
  tk_copy(x->b, tv_addr(out), ds, tv_addr(v), ss, v->rank, dims, tv_esize(v->type));
  return out;
}

tval *lower_pad(lctx *x, const tval *v, const tval *pv, const ir_padding_dim *pd, ir_type t) {
  int64_t dims[IR_MAX_RANK];
  for (int k = 0; k < v->rank; k++) {
    int64_t in = v->dims[k];
    dims[k] = pd[k].lo + pd[k].hi + in + (in > 0 ? (in - 1) * pd[k].interior : 0);
    if (dims[k] < 0) dims[k] = 0;
  }
  tval *out = tv_new(x, t, v->rank, dims);
  int es = tv_esize(t);
  /* Fill with the pad value (broadcast from its one-element buffer). */
  int64_t ds[IR_MAX_RANK], zs[IR_MAX_RANK] = {0}, vs[IR_MAX_RANK];
  tv_strides(out, ds);
  tv_strides(v, vs);
  tk_copy(x->b, tv_addr(out), ds, tv_addr(pv), zs, out->rank, dims, es);
  /* Interior: operand index i lands at lo + i*(interior+1). */
  int64_t n[IR_MAX_RANK], so[IR_MAX_RANK], dstr[IR_MAX_RANK];
  int64_t src = 0, dst = 0;
  for (int k = 0; k < v->rank; k++) {
    int64_t s = pd[k].interior + 1, lo = pd[k].lo, first = 0;
    if (lo < 0) first = (-lo + s - 1) / s;
    int64_t last = v->dims[k] - 1; /* largest i with lo + i*s < dims[k] */
    if (lo + last * s >= dims[k]) last = dims[k] - 1 - lo < 0 ? -1 : (dims[k] - 1 - lo) / s;
    n[k] = last >= first ? last - first + 1 : 0;
    if (n[k] <= 0) return out;
    src += first * vs[k];
    dst += (lo + first * s) * ds[k];
    so[k] = vs[k];
    dstr[k] = ds[k] * s;
  }
  tk_copy(x->b, tv_addr(out) + (uint64_t)(dst * es), dstr, tv_addr(v) + (uint64_t)(src * es), so,
          v->rank, n, es);
  return out;
}

static void lower_iota(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tb *b = x->b;
  int d = (int) in->a->index;
  int64_t L = in->shape->dims[d];
  int64_t one = L;
  tval *line = tv_new(x, in->shape->type, 1, &one);
  /* Values base + r*128 + l, tile by tile, converted to the type. */
  ir_type t = in->shape->type;
  bool h = tv_esize(t) == 2;
  int64_t tiles = (L + 1023) / 1024;
  uint64_t vbuf = 0;
  if (!tb_vmem_fits(b, (uint64_t)tiles * 4096 + 4096, "iota")) return;
  uint64_t chunk = 1024; /* tiles per DMA */
  for (int64_t t0 = 0; t0 < tiles; t0 += (int64_t)chunk) {
    int64_t tn = tiles - t0 < (int64_t)chunk ? tiles - t0 : (int64_t)chunk;
    for (int64_t tt = 0; tt < tn; tt++) {
      tb_valu(b, OP_VIOTA, 1, 1, 0); /* r */
      tb_valu(b, OP_VIMM, 2, 128, 0);
      tb_valu(b, OP_VMULI, 1, 1, 2);
      tb_valu(b, OP_VIOTA, 2, 0, 0); /* l */
      tb_valu(b, OP_VADDI, 1, 1, 2);
      tb_valu(b, OP_VIMM, 2, (int32_t)((t0 + tt) * 1024), 0);
      tb_valu(b, OP_VADDI, 1, 1, 2);
      if (ir_type_is_float(t)) {
        tb_valu(b, OP_VCVTIF, 1, 1, 0);
        if (t == IR_BF16) tb_valu(b, OP_VRNDBF, 1, 1, 0);
      }
      tb_vst(b, 1, vbuf + (uint64_t)tt * (h ? 2048 : 4096), h ? 256 : 512, h, 0);
    }
    int64_t elems = (L - t0 * 1024) < tn * 1024 ? L - t0 * 1024 : tn * 1024;
    int64_t dd[10] = {elems * (h ? 2 : 4), 1, 1, 1, 0, 0, 0, 0, 0, 0};
    tb_dma(b, false, vbuf, tv_addr(line) + (uint64_t)(t0 * 1024 * (h ? 2 : 4)), dd);
  }
  tval *out = shape_val(x, in->shape);
  int64_t ds[IR_MAX_RANK], ss[IR_MAX_RANK] = {0};
  tv_strides(out, ds);
  ss[d] = 1;
  tk_copy(b, tv_addr(out), ds, tv_addr(line), ss, out->rank, out->dims, tv_esize(t));
  tv_release(x, line);
  x->val[i] = out;
}

static void lower_constant(lctx *x, ir_id i);

/* A pointwise convolution (1x1 window, no padding or dilation, one group)
 * of bf16 operands, input and output laid out batch, spatial..., feature
 * and the kernel's input feature before its output feature, is the matmul
 * [B*S, Cin] x [Cin, Cout] on the buffers as they are (any stride: the
 * sampled positions are gathered first): no patch view, no scatter of the
 * result into the output layout (lower_conv's general path costs an extra
 * f32 pass over HBM). Same products in the same ascending-Cin order, so
 * the same bits. False when it does not apply. */
static bool lower_pointwise_conv(lctx *x, ir_id i) {
  const ir_inst *in = &x->comp->insts.v[i];
  const tval *v = x->val[in->ops[0]], *kv = x->val[in->ops[1]];
  const ir_conv_dims *cd = &in->a->conv;
  ir_type rt = in->shape->type;
  int ns = cd->nspatial, r = in->shape->rank;
  if (v->type != IR_BF16 || kv->type != IR_BF16 || !ir_type_is_float(rt) ||
      in->a->feature_group_count > 1 || in->a->batch_group_count > 1 || ns < 1 ||
      ir_window_of(in->a)->rank != ns || v->rank != r || kv->rank != r || r != ns + 2)
    return false;
  if (cd->in_batch != 0 || cd->out_batch != 0 || cd->in_feature != r - 1 ||
      cd->out_feature != r - 1 || cd->k_in > cd->k_out)
    return false;
  bool strided = false;
  for (int k = 0; k < ns; k++) {
    const ir_window_dim *w = &ir_window_of(in->a)->dims[k];
    if (w->size != 1 || w->stride < 1 || w->pad_lo || w->pad_hi || w->lhs_dilate != 1 ||
        w->rhs_dilate != 1 || cd->in_spatial[k] != k + 1 || cd->out_spatial[k] != k + 1 ||
        kv->dims[cd->k_spatial[k]] != 1 ||
        in->shape->dims[k + 1] != (v->dims[k + 1] - 1) / w->stride + 1)
      return false;
    strided |= w->stride != 1;
  }
  int64_t Cin = v->dims[r - 1], Cout = kv->dims[cd->k_out];
  if (Cin != kv->dims[cd->k_in] || Cout != in->shape->dims[r - 1] || Cin == 0 ||
      in->shape->dims[0] != v->dims[0])
    return false;
  /* Strided: the sampled positions first, as a bf16 [batch, out spatial...,
   * Cin] buffer (a quarter of the input for stride 2). */
  tval *a = NULL;
  if (strided) {
    int64_t dims[IR_MAX_RANK], ss[IR_MAX_RANK], ds[IR_MAX_RANK];
    for (int k = 0; k < r; k++) dims[k] = in->shape->dims[k];
    dims[r - 1] = Cin;
    a = tv_new(x, IR_BF16, r, dims);
    tv_strides(v, ss);
    tv_strides(a, ds);
    for (int k = 0; k < ns; k++) ss[k + 1] *= ir_window_of(in->a)->dims[k].stride;
    tk_copy(x->b, tv_addr(a), ds, tv_addr(v), ss, r, dims, 2);
  }
  int64_t M = (a ? a->count : v->count) / Cin;
  tb_explain(x->b, "pointwise convolution: one matmul [%lld, %lld] x [%lld, %lld] on the "
                   "buffers as they lie%s",
             (long long)M, (long long)Cin, (long long)Cin, (long long)Cout,
             strided ? " (the strided positions gathered first)" : "");
  tval *C = tv_new(x, IR_F32, r, in->shape->dims);
  tk_matmul(x->b, 1, M, Cout, Cin, tv_addr(a ? a : v), 0, tv_addr(kv), 0, tv_addr(C), 0);
  if (a) tv_release(x, a);
  if (x->b->max_passes < 1) x->b->max_passes = 1;
  x->b->flops += (uint64_t)(2 * M * Cout * Cin);
  if (rt != IR_F32) {
    tval *cv = lower_convert(x, C, rt);
    tv_release(x, C);
    C = cv;
  }
  x->val[i] = C;
  return true;
}

void lower_inst(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tb *b = x->b;
  b->loc = in->info->loc;
  b->opname = ir_op_name(in->op);
  if (x->comp == b->attr_comp) tb_set_op(b, in->info->name,
                                         ir_op_name(in->op), in->info->loc);
  if (in->shape->type != IR_TUPLE && tk_itype(in->shape->type) == IR_TYPE_INVALID) {
    tb_error(b, ST_UNSUPPORTED, "element type %s is not supported",
             ir_type_name(in->shape->type));
    return;
  }
  x->pending.n = 0;
  tval *ov = in->nops > 0 ? x->val[in->ops[0]] : NULL;
  bool consume_ops = true;
  switch (in->op) {
  case IR_OP_PARAMETER: {
    int64_t p = in->a->parameter_number;
    x->val[i] = tv_ref(x, x->params[p]);
    break;
  }
  case IR_OP_CONSTANT: lower_constant(x, i); break;
  case IR_OP_IOTA: lower_iota(x, i); break;
  case IR_OP_BROADCAST: {
    tval *out = shape_val(x, in->shape);
    int64_t ds[IR_MAX_RANK], ss[IR_MAX_RANK] = {0}, os[IR_MAX_RANK];
    tv_strides(out, ds);
    tv_strides(ov, os);
    for (int k = 0; k < in->a->dimensions.n; k++) ss[in->a->dimensions.v[k]] = os[k];
    tk_copy(b, tv_addr(out), ds, tv_addr(ov), ss, out->rank, out->dims, tv_esize(out->type));
    x->val[i] = out;
    break;
  }
  case IR_OP_RESHAPE:
  case IR_OP_COPY:
    x->val[i] = tv_alias(x, ov, in->shape->type, in->shape->rank,
                         in->shape->dims);
    break;
  case IR_OP_BITCAST_CONVERT: {
    ir_type ot = inst_of(x, in->ops[0])->shape->type;
    /* An operand without a buffer (computed in registers by this, its
     * elementwise user: deferred, a splat, a fused dot or row vector) has
     * nothing to alias: the bitcast is the copy node ending its program.
     * A pred result from another type is normalised to 0/1 there too. */
    if (!ov || (in->shape->type == IR_PRED && ot != IR_PRED)) {
      lower_elementwise(x, i);
      consume_ops = false;
      break;
    }
    x->val[i] = tv_alias(x, ov, in->shape->type, in->shape->rank,
                         in->shape->dims);
    break;
  }
  case IR_OP_TRANSPOSE: x->val[i] = lower_transpose(x, ov,
                                                    in->a->dimensions.v); break;
  case IR_OP_SLICE: {
    tval *out = shape_val(x, in->shape);
    int64_t ds[IR_MAX_RANK], ss[IR_MAX_RANK], os[IR_MAX_RANK], off = 0;
    tv_strides(out, ds);
    tv_strides(ov, os);
    for (int k = 0; k < ov->rank; k++) {
      int64_t st = in->a->slice_stride.n ? in->a->slice_stride.v[k] : 1;
      off += in->a->slice_start.v[k] * os[k];
      ss[k] = os[k] * st;
    }
    int es = tv_esize(out->type);
    tk_copy(b, tv_addr(out), ds, tv_addr(ov) + (uint64_t)(off * es), ss, out->rank, out->dims, es);
    x->val[i] = out;
    break;
  }
  case IR_OP_REVERSE: {
    tval *out = shape_val(x, in->shape);
    int64_t ds[IR_MAX_RANK], ss[IR_MAX_RANK], off = 0;
    tv_strides(out, ds);
    tv_strides(ov, ss);
    for (int k = 0; k < in->a->dimensions.n; k++) {
      int64_t d = in->a->dimensions.v[k];
      off += (ov->dims[d] - 1) * ss[d];
      ss[d] = -ss[d];
    }
    int es = tv_esize(out->type);
    tk_copy(b, tv_addr(out), ds, tv_addr(ov) + (uint64_t)(off * es), ss, out->rank, out->dims, es);
    x->val[i] = out;
    break;
  }
  case IR_OP_CONCATENATE: {
    tval *out = shape_val(x, in->shape);
    int64_t d = in->a->dimensions.v[0], ds[IR_MAX_RANK], at = 0;
    tv_strides(out, ds);
    int es = tv_esize(out->type);
    for (int k = 0; k < in->nops; k++) {
      tval *v = x->val[in->ops[k]];
      int64_t ss[IR_MAX_RANK];
      tv_strides(v, ss);
      tk_copy(b, tv_addr(out) + (uint64_t)(at * ds[d] * es), ds, tv_addr(v), ss, v->rank, v->dims,
              es);
      at += v->dims[d];
    }
    x->val[i] = out;
    break;
  }
  case IR_OP_PAD:
    x->val[i] = lower_pad(x, ov, x->val[in->ops[1]], in->a->padding,
                          in->shape->type);
    break;
  case IR_OP_DOT:
    if (!lower_dot_bf16(x, i)) lower_dot(x, i);
    break;
  case IR_OP_CONVOLUTION:
    if (!lower_pointwise_conv(x, i)) lower_conv(x, i);
    break;
  case IR_OP_REDUCE: lower_reduce(x, i); break;
  case IR_OP_REDUCE_WINDOW: lower_reduce_window(x, i); break;
  case IR_OP_ALL_REDUCE: {
    /* One replica: the identity on every operand. */
    if (in->nops == 1 && in->shape->type != IR_TUPLE) {
      x->val[i] = tv_ref(x, ov);
    } else {
      tval *t = arena_alloc(b->a, sizeof *t);
      t->tuple = true;
      t->n = in->nops;
      t->elems = arena_array(b->a, (size_t)(in->nops ? in->nops : 1), sizeof(tval *));
      for (int k = 0; k < in->nops; k++) t->elems[k] = tv_ref(x, x->val[in->ops[k]]);
      x->val[i] = t;
    }
    break;
  }
  case IR_OP_TUPLE: {
    tval *t = arena_alloc(b->a, sizeof *t);
    t->tuple = true;
    t->n = in->nops;
    t->elems = arena_array(b->a, (size_t)(in->nops ? in->nops : 1), sizeof(tval *));
    for (int k = 0; k < in->nops; k++) t->elems[k] = tv_ref(x, x->val[in->ops[k]]);
    x->val[i] = t;
    break;
  }
  case IR_OP_GET_TUPLE_ELEMENT: x->val[i] = tv_ref(x, ov->elems[in->a->index]); break;
  case IR_OP_FUSION: {
    if (in->a->fusion_kind == IR_FUSION_CUSTOM && lower_attention(x, i, lower_bf16_store(x, i)))
      break;
    bool bf = lower_bf16_store(x, i);
    if (in->a->fusion_kind == IR_FUSION_INPUT && lower_rows_fusion(x, i, bf)) break;
    if (in->a->fusion_kind == IR_FUSION_INPUT)
      tb_explain(b, "not a row kernel (its reduces are not over trailing dims with rows that "
                    "fit VMEM, or it holds an op the row kernel lacks): lowered instruction by "
                    "instruction");
    tval **ps = arena_array(b->a, (size_t)(in->nops ? in->nops : 1), sizeof(tval *));
    for (int k = 0; k < in->nops; k++) ps[k] = x->val[in->ops[k]];
    x->val[i] = lower_comp_ex(b, x->m, in->calls[0], ps, x->precision, bf);
    b->loc = in->info->loc;
    b->opname = ir_op_name(in->op);
    break;
  }
  default:
    if (is_elem(in)) {
      lower_elementwise(x, i);
      consume_ops = false;
      break;
    }
    tb_error(b, ST_UNSUPPORTED, "op '%s' is not supported by the TPU backend", ir_op_name(in->op));
    return;
  }
  if (consume_ops)
    for (int k = 0; k < in->nops; k++) consume(x, in->ops[k]);
  else
    for (int k = 0; k < x->pending.n; k++) consume(x, x->pending.v[k]);
}

/* Constants become CONST entries of the image: see compile.c's pool. */
static void lower_constant(lctx *x, ir_id i) {
  x->val[i] = tpu_const_value(x, inst_of(x, i)->a->literal);
}

/* ---- computations ------------------------------------------------------------ */

tval *lower_comp(tb *b, const ir_module *m, ir_comp_id c, tval **params, ir_precision prec) {
  return lower_comp_ex(b, m, c, params, prec, false);
}

static tval *lower_comp_body(tb *b, const ir_module *m, ir_comp_id c, tval **params,
                             ir_precision prec, bool root_bf16);

/* Bounds on the programs deferral builds. Deferred instructions are
 * compiled by recursion from their consumer (dag_inst), one level per
 * instruction of a deferred chain, and a program reads at most
 * TK_MAX_INPUTS buffers (tk_elementwise). Walking the computation in
 * order, an elementwise instruction whose program would read more
 * materialises its deferred operand with the most inputs until it fits
 * (n counts an input once per use: an upper bound), and a chain longer
 * than MAX_CHAIN is cut by materialising its MAX_CHAIN-th link; so
 * neither depends on the computation's size. */
enum { MAX_CHAIN = 256 };

static void cut_programs(lctx *x) {
  const ir_comp *comp = x->comp;
  int32_t *len = arena_array(x->b->a, (size_t)comp->insts.n + 1, sizeof(int32_t));
  int32_t *nin = arena_array(x->b->a, (size_t)comp->insts.n + 1, sizeof(int32_t));
  for (int i = 0; i < comp->insts.n; i++) {
    const ir_inst *in = &comp->insts.v[i];
    if (in->dead || !is_elem(in)) continue;
    for (;;) {
      int32_t l = 0, n = 0;
      ir_id big = IR_NONE;
      for (int k = 0; k < in->nops; k++) {
        ir_id o = in->ops[k];
        if (!x->deferred[o]) {
          n += splat_of(x, o) ? 0 : 1;
          continue;
        }
        n += nin[o];
        if (len[o] > l) l = len[o];
        if (big == IR_NONE || nin[o] > nin[big]) big = o;
      }
      if (n > TK_MAX_INPUTS && big != IR_NONE) {
        x->deferred[big] = false;
        continue;
      }
      len[i] = l + 1;
      nin[i] = n;
      break;
    }
    if (x->deferred[i] && len[i] >= MAX_CHAIN) x->deferred[i] = false;
  }
}

tval *lower_comp_ex(tb *b, const ir_module *m, ir_comp_id c, tval **params, ir_precision prec,
                    bool root_bf16) {
  if (b->depth >= TB_MAX_DEPTH) {
    tb_error(b, ST_RESOURCE_EXHAUSTED, "computations nested deeper than %d (calling %s)",
             TB_MAX_DEPTH, m->comps.v[c].name);
    return NULL;
  }
  b->depth++;
  tval *r = lower_comp_body(b, m, c, params, prec, root_bf16);
  b->depth--;
  return r;
}

static tval *lower_comp_body(tb *b, const ir_module *m, ir_comp_id c, tval **params,
                             ir_precision prec, bool root_bf16) {
  const ir_comp *comp = &m->comps.v[c];
  lctx x = {0};
  x.root_bf16 = root_bf16;
  x.b = b;
  x.m = m;
  x.c = c;
  x.comp = comp;
  x.params = params;
  x.precision = prec;
  x.epi_dot = IR_NONE;
  int n = comp->insts.n;
  x.val = arena_array(b->a, (size_t)n + 1, sizeof(tval *));
  x.rem = arena_array(b->a, (size_t)n + 1, sizeof(int32_t));
  x.deferred = arena_array(b->a, (size_t)n + 1, sizeof(bool));
  int32_t *users = arena_array(b->a, (size_t)n + 1, sizeof(int32_t));
  for (int i = 0; i < n; i++) {
    const ir_inst *in = &comp->insts.v[i];
    if (in->dead) continue;
    for (int k = 0; k < in->nops; k++) {
      x.rem[in->ops[k]]++;
      users[in->ops[k]] = i;
    }
  }
  /* Every user of instruction i, once per operand edge, in increasing
   * order: ulist[uoff[i] .. uoff[i + 1]). */
  int32_t *uoff = arena_array(b->a, (size_t)n + 2, sizeof(int32_t));
  for (int i = 0; i < n; i++) uoff[i + 1] = uoff[i] + x.rem[i];
  int32_t *ulist = arena_array(b->a, (size_t)uoff[n] + 1, sizeof(int32_t));
  int32_t *ufill = arena_array(b->a, (size_t)n + 1, sizeof(int32_t));
  for (int j = 0; j < n; j++) {
    const ir_inst *u = &comp->insts.v[j];
    if (u->dead) continue;
    for (int k = 0; k < u->nops; k++) ulist[uoff[u->ops[k]] + ufill[u->ops[k]]++] = j;
  }
  x.rem[comp->root]++;
  /* Deferral: single use by an elementwise op of the same element count. */
  for (int i = 0; i < n; i++) {
    const ir_inst *in = &comp->insts.v[i];
    if (in->dead || !is_elem(in) || x.rem[i] != 1 || i == comp->root) continue;
    const ir_inst *u = &comp->insts.v[users[i]];
    if (!is_elem(u) || u->shape->type == IR_TUPLE) continue;
    int64_t a = 1, bb = 1;
    for (int k = 0; k < in->shape->rank; k++) a *= in->shape->dims[k];
    for (int k = 0; k < u->shape->rank; k++) bb *= u->shape->dims[k];
    if (a == bb) x.deferred[i] = true;
  }
  cut_programs(&x);
  /* A fusion computation whose f32 elementwise root reaches a dot through
   * deferred elementwise ops (a kOutput fusion) lowers that dot with the
   * root's program as its epilogue (lower_elementwise). */
  const ir_inst *rt = comp->root >= 0 ? &comp->insts.v[comp->root] : NULL;
  if (params && rt && is_elem(rt) && rt->shape->type == IR_F32 && !x.deferred[comp->root]) {
    int64_t rc = 1;
    for (int k = 0; k < rt->shape->rank; k++) rc *= rt->shape->dims[k];
    /* Elementwise ops of the root's element count whose every use is in
     * the root's program join it even when used more than once (the
     * program shares their node: dag.memo), so that the whole epilogue
     * (e.g. GELU of a biased dot) is one program. Reverse order: users
     * are decided first. */
    bool has_dot = false;
    for (int i = 0; i < n; i++) {
      const ir_inst *in = &comp->insts.v[i];
      has_dot |= !in->dead && in->op == IR_OP_DOT && x.rem[i] == 1 && in->shape->type == IR_F32;
    }
    for (int i = n - 1; i >= 0 && has_dot; i--) {
      const ir_inst *in = &comp->insts.v[i];
      if (in->dead || !is_elem(in) || i == comp->root || x.deferred[i] || x.rem[i] < 1 ||
          in->shape->type == IR_TUPLE)
        continue;
      int64_t a = 1;
      for (int k = 0; k < in->shape->rank; k++) a *= in->shape->dims[k];
      bool all = a == rc;
      for (int q = uoff[i]; q < uoff[i + 1] && all; q++) {
        ir_id j = ulist[q];
        all = is_elem(&comp->insts.v[j]) && (j == comp->root || x.deferred[j]);
      }
      if (all) x.deferred[i] = true;
    }
    cut_programs(&x);
    for (int i = 0; i < n && x.epi_dot == IR_NONE; i++) {
      const ir_inst *in = &comp->insts.v[i];
      if (in->dead || in->op != IR_OP_DOT || x.rem[i] != 1 || in->shape->type != IR_F32) continue;
      int64_t dc = 1;
      for (int k = 0; k < in->shape->rank; k++) dc *= in->shape->dims[k];
      ir_id u = users[i];
      if (dc == rc && (u == comp->root || x.deferred[u]) && is_elem(&comp->insts.v[u]))
        x.epi_dot = i;
    }
    /* Broadcasts of an f32 vector over the dot's N dims (a bias) used only
     * inside the program: the epilogue reads the vector as a row. */
    if (x.epi_dot != IR_NONE) {
      const ir_inst *dt = &comp->insts.v[x.epi_dot];
      int nN = comp->insts.v[dt->ops[1]].shape->rank - dt->a->rhs_batch.n - dt->a->rhs_contracting.n;
      x.row_bcast = arena_array(b->a, (size_t)n + 1, sizeof(bool));
      for (int i = 0; i < n; i++) {
        const ir_inst *in = &comp->insts.v[i];
        const ir_inst *o = in->nops ? &comp->insts.v[in->ops[0]] : NULL;
        if (in->dead || in->op != IR_OP_BROADCAST || !o || o->shape->type != IR_F32 ||
            o->shape->rank != nN || nN < 1 || in->shape->rank != dt->shape->rank ||
            in->a->dimensions.n != nN || splat_of(&x, i))
          continue;
        bool ok = true;
        for (int k = 0; k < nN; k++) ok &= in->a->dimensions.v[k] == in->shape->rank - nN + k;
        for (int q = uoff[i]; q < uoff[i + 1] && ok; q++) {
          ir_id j = ulist[q];
          ok = is_elem(&comp->insts.v[j]) && (j == comp->root || x.deferred[j]);
        }
        x.row_bcast[i] = ok && i != comp->root;
      }
    }
  }
  for (int i = 0; i < n && !b->failed; i++) {
    const ir_inst *in = &comp->insts.v[i];
    if (in->dead || x.deferred[i] || i == x.epi_dot || (x.row_bcast && x.row_bcast[i])) continue;
    /* Broadcasts of scalar constants used only by elementwise ops stay
     * immediates. */
    if (splat_of(&x, i) && in->op == IR_OP_BROADCAST && i != comp->root) {
      bool all = true;
      for (int q = uoff[i]; q < uoff[i + 1] && all; q++) all = is_elem(&comp->insts.v[ulist[q]]);
      if (all) {
        x.deferred[i] = true;
        continue;
      }
    }
    if (x.rem[i] == 0 && in->op != IR_OP_PARAMETER) continue; /* unused */
    lower_inst(&x, i);
  }
  if (b->failed) return NULL;
  return x.val[comp->root];
}
