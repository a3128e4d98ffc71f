/* lower_move.c: data movement (broadcast, slice, reverse, concatenate,
 * bitcast, iota) as strided copies of HBM buffers (tk_copy), and tuples
 * and single-replica all-reduce as references to their operands. */
#include "backend/tpu/lower.h"

static const ir_inst *inst_of(lctx *x, ir_id i) { return &x->comp->insts.v[i]; }

/* A new value of instruction in's array shape. */
static tval *result_of(lctx *x, const ir_inst *in) {
  return tv_new(x->b, in->shape->type, in->shape->rank, in->shape->dims);
}

/* x->val[i] = out, copied from ov's elements at offset off (elements)
 * with strides ss. */
static void copy_into(lctx *x, ir_id i, tval *out, const tval *ov, int64_t off, const int64_t *ss) {
  int64_t ds[IR_MAX_RANK];
  tv_strides(out, ds);
  int es = tv_esize(out->type);
  tk_copy(x->b, tv_addr(out), ds, tv_addr(ov) + (uint64_t)(off * es), ss, out->rank, out->dims, es);
  x->val[i] = out;
}

void lower_broadcast(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tval *ov = x->val[in->ops[0]], *out = result_of(x, in);
  int64_t ss[IR_MAX_RANK] = {0}, os[IR_MAX_RANK];
  tv_strides(ov, os);
  for (int k = 0; k < in->a->dimensions.n; k++)
    ss[in->a->dimensions.v[k]] = os[k];
  copy_into(x, i, out, ov, 0, ss);
}

bool lower_bitcast(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tval *ov = x->val[in->ops[0]];
  ir_type ot = inst_of(x, in->ops[0])->shape->type;
  /* An operand without a buffer (computed in registers by this, its
   * elementwise user: deferred, a splat, a fused dot or row vector) has
   * nothing to alias: the bitcast is the copy node ending its program.
   * A pred result from another type is normalised to 0/1 there too, and
   * bits between f16 (held as f32 values) and bf16 are moved there. */
  if (!ov || (in->shape->type == IR_PRED && ot != IR_PRED) ||
      (in->shape->type == IR_F16 && ot != IR_F16)) {
    lower_elementwise(x, i);
    return false;
  }
  if (in->shape->type == IR_BF16 && ot == IR_F16) {
    /* f16 bits into 32-bit words, their low halves DMA'd into the bf16
     * buffer: every pattern kept (a vector store of bf16 would quiet the
     * signalling NaNs among them) */
    tval *w = tv_new(x->b, IR_S32, in->shape->rank, in->shape->dims), *out = result_of(x, in);
    tk_node nodes[2] = {{TK_IN, IR_F16, 0, 0, 0, 0, 0, 0, {0, 0, 0}},
                        {TK_OP, IR_S32, 0, 0, IR_OP_BITCAST_CONVERT, 0, 0, 1, {0, 0, 0}}};
    int root = 1;
    uint64_t ia = tv_addr(ov), oa = tv_addr(w);
    ir_type it = IR_F16;
    tk_elem e = {2, nodes, 1, &ia, &it, 1, &root, &oa, ov->count};
    tk_elementwise(x->b, &e);
    int64_t n = ov->count, ds = 1, ss = 2;
    tk_copy(x->b, tv_addr(out), &ds, oa, &ss, 1, &n, 2);
    tv_release(x->b, w);
    x->val[i] = out;
    return true;
  }
  x->val[i] = tv_alias(x->b, ov, in->shape->type, in->shape->rank,
                       in->shape->dims);
  return true;
}

void lower_slice(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tval *ov = x->val[in->ops[0]], *out = result_of(x, in);
  int64_t ss[IR_MAX_RANK], os[IR_MAX_RANK], off = 0;
  tv_strides(ov, os);
  for (int k = 0; k < ov->rank; k++) {
    int64_t st = in->a->slice_stride.n ? in->a->slice_stride.v[k] : 1;
    off += in->a->slice_start.v[k] * os[k];
    ss[k] = os[k] * st;
  }
  copy_into(x, i, out, ov, off, ss);
}

void lower_reverse(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tval *ov = x->val[in->ops[0]], *out = result_of(x, in);
  int64_t ss[IR_MAX_RANK], off = 0;
  tv_strides(ov, ss);
  for (int k = 0; k < in->a->dimensions.n; k++) {
    int64_t d = in->a->dimensions.v[k];
    off += (ov->dims[d] - 1) * ss[d];
    ss[d] = -ss[d];
  }
  copy_into(x, i, out, ov, off, ss);
}

void lower_concatenate(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tval *out = result_of(x, in);
  int64_t d = in->a->dimensions.v[0], ds[IR_MAX_RANK], at = 0;
  tv_strides(out, ds);
  int es = tv_esize(out->type);
  for (int k = 0; k < in->nops; k++) {
    tval *v = x->val[in->ops[k]];
    int64_t ss[IR_MAX_RANK];
    tv_strides(v, ss);
    tk_copy(x->b, tv_addr(out) + (uint64_t)(at * ds[d] * es), ds, tv_addr(v), ss, v->rank, v->dims,
            es);
    at += v->dims[d];
  }
  x->val[i] = out;
}

void lower_tuple(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tb *b = x->b;
  /* A one-operand all-reduce (one replica: the identity) is its operand. */
  if (in->op == IR_OP_ALL_REDUCE && in->nops == 1 && in->shape->type != IR_TUPLE) {
    x->val[i] = tv_ref(b, x->val[in->ops[0]]);
    return;
  }
  tval *t = arena_alloc(b->a, sizeof *t);
  t->tuple = true;
  t->n = in->nops;
  t->elems = arena_array(b->a, (size_t)(in->nops ? in->nops : 1), sizeof(tval *));
  for (int k = 0; k < in->nops; k++)
    t->elems[k] = tv_ref(b, x->val[in->ops[k]]);
  x->val[i] = t;
}

void lower_iota(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  x->val[i] = lower_iota_value(x->b, in->shape->type, in->shape->rank, in->shape->dims,
                               (int)in->a->index);
}

tval *lower_iota_value(tb *b, ir_type t, int rank, const int64_t *dims, int d) {
  int64_t L = dims[d];
  int64_t one = L;
  tval *line = tv_new(b, t, 1, &one);
  /* Values base + r*128 + l, tile by tile, converted to the type. */
  bool h = tv_esize(t) == 2;
  int64_t E = TGT_VREG_ELEMS, tiles = (L + E - 1) / E;
  uint64_t vbuf = 0;
  if (!tb_vmem_fits(b, (uint64_t)(tiles + 1) * TGT_VREG_BYTES, "iota")) {
    tv_release(b, line);
    return NULL;
  }
  uint64_t chunk = 1024; /* tiles per DMA */
  for (int64_t t0 = 0; t0 < tiles; t0 += (int64_t)chunk) {
    int64_t tn = tiles - t0 < (int64_t)chunk ? tiles - t0 : (int64_t)chunk;
    for (int64_t tt = 0; tt < tn; tt++) {
      tb_valu(b, OP_VIOTA, 1, 1, 0); /* r */
      tb_valu(b, OP_VIMM, 2, TGT_LANES, 0);
      tb_valu(b, OP_VMULI, 1, 1, 2);
      tb_valu(b, OP_VIOTA, 2, 0, 0); /* l */
      tb_valu(b, OP_VADDI, 1, 1, 2);
      tb_valu(b, OP_VIMM, 2, (int32_t)((t0 + tt) * E), 0);
      tb_valu(b, OP_VADDI, 1, 1, 2);
      if (ir_type_is_float(t)) {
        tb_valu(b, OP_VCVTIF, 1, 1, 0);
        if (t == IR_BF16) tb_valu(b, OP_VRNDBF, 1, 1, 0);
      }
      tb_vst(b, 1, vbuf + (uint64_t)tt * tb_tile_bytes(h), tb_row_bytes(h), h, 0);
    }
    int64_t elems = (L - t0 * E) < tn * E ? L - t0 * E : tn * E;
    int64_t dd[10] = {elems * (h ? 2 : 4), 1, 1, 1, 0, 0, 0, 0, 0, 0};
    tb_dma(b, false, vbuf, tv_addr(line) + (uint64_t)(t0 * E * (h ? 2 : 4)), dd);
  }
  tval *out = tv_new(b, t, rank, dims);
  int64_t ds[IR_MAX_RANK], ss[IR_MAX_RANK] = {0};
  tv_strides(out, ds);
  ss[d] = 1;
  tk_copy(b, tv_addr(out), ds, tv_addr(line), ss, out->rank, out->dims, tv_esize(t));
  tv_release(b, line);
  return out;
}
