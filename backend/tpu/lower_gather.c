/* lower_gather.c: the indexing ops on the TPU, with the values of
 * ir/eval_gather.c under TPU numerics.
 *
 * select-and-scatter (the max-pool gradient) has static addresses only:
 * it runs as K passes over the window positions w (K = the window's size,
 * row-major), each a strided copy and one elementwise program over the
 * source's shape, so its addressing is the copy kernel's and its compute
 * the vector unit's:
 *  - the operand padded (pad values are never selected) and a 0/1
 *    validity array padded with 0 give, per w, Xw[p] = operand at
 *    p * stride + w - pad_lo and Vw[p] (that position is inside);
 *  - selection, w ascending: take = Vw & (!have | !select(kept, Xw));
 *    kept = take ? Xw : kept, index = take ? w : index, have |= Vw: the
 *    evaluator's protocol (the first position inside, replaced whenever
 *    select(kept, current) is false);
 *  - scatter, w descending, into the padded result R (init everywhere):
 *    Rw = R at p * stride + w - pad_lo; Rw = (have & index == w) ?
 *    scatter(source, Rw) : Rw, copied back. Within a pass the positions
 *    are distinct; across passes a position receives its contributions
 *    from sources in ascending row-major order (w descending is p
 *    ascending for a fixed position), the evaluator's order, so the
 *    combined values have the evaluator's bits even where windows
 *    overlap.
 * The result is R's interior. */
#include "backend/tpu/lower.h"

/* Appends program sub's nodes to nodes (n used, room for sub->nnodes
 * more), its inputs bound to nodes in_node[]; returns the node of its
 * output k. */
static int embed(arena *a, tk_node *nodes, int *n, const tk_elem *sub, const int *in_node, int k) {
  int *map = arena_array(a, (size_t)sub->nnodes + 1, sizeof(int));
  for (int j = 0; j < sub->nnodes; j++) {
    tk_node nd = sub->nodes[j];
    if (nd.kind == TK_IN) {
      map[j] = in_node[nd.input];
      continue;
    }
    for (int j2 = 0; j2 < nd.nargs; j2++) nd.args[j2] = map[nd.args[j2]];
    nodes[*n] = nd;
    map[j] = (*n)++;
  }
  return map[sub->out_node[k]];
}

static int node_in(tk_node *nodes, int *n, ir_type t, int input) {
  nodes[*n] = (tk_node){.kind = TK_IN, .type = t, .input = input};
  return (*n)++;
}

static int node_const(tk_node *nodes, int *n, ir_type t, uint32_t bits) {
  nodes[*n] = (tk_node){.kind = TK_CONST, .type = t, .bits = bits};
  return (*n)++;
}

static int node_op(tk_node *nodes, int *n, ir_type t, ir_op op, int nargs, int a0, int a1, int a2) {
  nodes[*n] = (tk_node){.kind = TK_OP, .type = t, .op = op, .nargs = nargs, .args = {a0, a1, a2}};
  return (*n)++;
}

/* Runs program (nodes, n) over count elements of the given inputs into
 * new buffers of the outputs' types (dims rank/dims). */
static void run_program(tb *b, tk_node *nodes, int n, int nin, tval **ins, int nout, const int *out_node,
                        tval **outs, int rank, const int64_t *dims) {
  tk_elem e = {0};
  e.nnodes = n;
  e.nodes = nodes;
  e.ninputs = nin;
  e.in_addr = arena_array(b->a, (size_t)nin, sizeof(uint64_t));
  e.in_type = arena_array(b->a, (size_t)nin, sizeof(ir_type));
  for (int k = 0; k < nin; k++) e.in_addr[k] = tv_addr(ins[k]), e.in_type[k] = ins[k]->type;
  e.noutputs = nout;
  e.out_node = (int *)out_node;
  e.out_addr = arena_array(b->a, (size_t)nout, sizeof(uint64_t));
  for (int k = 0; k < nout; k++) {
    outs[k] = tv_new(b, nodes[out_node[k]].type, rank, dims);
    e.out_addr[k] = tv_addr(outs[k]);
  }
  e.count = outs[0]->count;
  tk_elementwise(b, &e);
}

/* The strided view of v at p * stride + w (p over dims m) as a new dense
 * value. */
static tval *strided(tb *b, const tval *v, const int64_t *w, const int64_t *stride, const int64_t *m) {
  int64_t vs[IR_MAX_RANK], ss[IR_MAX_RANK], ds[IR_MAX_RANK];
  tv_strides(v, vs);
  tval *o = tv_new(b, v->type, v->rank, m);
  tv_strides(o, ds);
  uint64_t src = tv_addr(v);
  for (int d = 0; d < v->rank; d++) {
    src += (uint64_t)(w[d] * vs[d] * tv_esize(v->type));
    ss[d] = stride[d] * vs[d];
  }
  tk_copy(b, tv_addr(o), ds, src, ss, v->rank, m, tv_esize(v->type));
  return o;
}

/* Selection pass w > 0 over (kept, Xw, have, Vw, index): the new kept,
 * have and index replace st[0], st[1], st[2]. */
static void select_pass(tb *b, const tk_elem *sel, int64_t w, tval **st, tval *xw, tval *vw) {
  int nmax = sel->nnodes + 16, n = 0;
  tk_node *nodes = arena_array(b->a, (size_t)nmax, sizeof(tk_node));
  ir_type t = xw->type;
  int kept = node_in(nodes, &n, t, 0), cur = node_in(nodes, &n, t, 1);
  int have = node_in(nodes, &n, IR_PRED, 2), valid = node_in(nodes, &n, IR_PRED, 3);
  int idx = node_in(nodes, &n, IR_S32, 4);
  int keep = embed(b->a, nodes, &n, sel, (int[]){kept, cur}, 0);
  int any = node_op(nodes, &n, IR_PRED, IR_OP_OR, 2, node_op(nodes, &n, IR_PRED, IR_OP_NOT, 1, have, 0, 0),
                    node_op(nodes, &n, IR_PRED, IR_OP_NOT, 1, keep, 0, 0), 0);
  int take = node_op(nodes, &n, IR_PRED, IR_OP_AND, 2, valid, any, 0);
  int outs[3] = {node_op(nodes, &n, t, IR_OP_SELECT, 3, take, cur, kept),
                 node_op(nodes, &n, IR_PRED, IR_OP_OR, 2, have, valid, 0),
                 node_op(nodes, &n, IR_S32, IR_OP_SELECT, 3, take, node_const(nodes, &n, IR_S32, (uint32_t)w), idx)};
  tval *ins[5] = {st[0], xw, st[1], vw, st[2]}, *res[3];
  run_program(b, nodes, n, 5, ins, 3, outs, res, xw->rank, xw->dims);
  for (int k = 0; k < 3; k++) {
    tv_release(b, st[k]);
    st[k] = res[k];
  }
}

/* Scatter pass w: Rw = (have & index == w) ? scatter(source, Rw) : Rw. */
static tval *scatter_pass(tb *b, const tk_elem *sc, int64_t w, tval *src, tval *rw, tval *have, tval *idx) {
  int nmax = sc->nnodes + 16, n = 0;
  tk_node *nodes = arena_array(b->a, (size_t)nmax, sizeof(tk_node));
  ir_type t = rw->type;
  int s = node_in(nodes, &n, t, 0), r = node_in(nodes, &n, t, 1);
  int h = node_in(nodes, &n, IR_PRED, 2), ix = node_in(nodes, &n, IR_S32, 3);
  int v = embed(b->a, nodes, &n, sc, (int[]){s, r}, 0);
  int eq = node_op(nodes, &n, IR_PRED, IR_OP_COMPARE, 2, ix, node_const(nodes, &n, IR_S32, (uint32_t)w), 0);
  nodes[eq].cmp_dir = IR_CMP_EQ;
  int mask = node_op(nodes, &n, IR_PRED, IR_OP_AND, 2, h, eq, 0);
  int out = node_op(nodes, &n, t, IR_OP_SELECT, 3, mask, v, r);
  tval *ins[4] = {src, rw, have, idx}, *res;
  run_program(b, nodes, n, 4, ins, 1, &out, &res, rw->rank, rw->dims);
  return res;
}

/* The operand padded by the window (with init), and the 0/1 validity
 * array of the same padded dims. */
static void padded_inputs(tb *b, const ir_window *w, tval *x, tval *init, tval **xp, tval **vp) {
  int r = x->rank;
  ir_padding_dim pd[IR_MAX_RANK];
  int64_t np[IR_MAX_RANK], vs[IR_MAX_RANK], os[IR_MAX_RANK];
  for (int d = 0; d < r; d++) {
    pd[d] = (ir_padding_dim){w->dims[d].pad_lo, w->dims[d].pad_hi, 0};
    np[d] = x->dims[d] + w->dims[d].pad_lo + w->dims[d].pad_hi;
  }
  *xp = tv_pad(b, x, init, pd, x->type);
  *vp = tv_new(b, IR_PRED, r, np);
  tk_fill(b, tv_addr(*vp), (*vp)->count, 4, 0);
  tval *ones = tv_new(b, IR_PRED, r, x->dims);
  tk_fill(b, tv_addr(ones), ones->count, 4, 1);
  tv_strides(*vp, vs);
  tv_strides(ones, os);
  uint64_t at = tv_addr(*vp);
  for (int d = 0; d < r; d++) at += (uint64_t)(w->dims[d].pad_lo * vs[d] * 4);
  tk_copy(b, at, vs, tv_addr(ones), os, r, x->dims, 4);
  tv_release(b, ones);
}

/* Window position k (row-major) as a multi-index. */
static void window_pos(const ir_window *w, int r, int64_t k, int64_t *pos) {
  for (int d = r - 1; d >= 0; d--) {
    pos[d] = k % w->dims[d].size;
    k /= w->dims[d].size;
  }
}

void lower_select_and_scatter(lctx *x, ir_id i) {
  const ir_inst *in = &x->comp->insts.v[i];
  tb *b = x->b;
  tval *X = x->val[in->ops[0]], *S = x->val[in->ops[1]], *I = x->val[in->ops[2]];
  const ir_window *w = ir_window_of(in->a);
  int r = X->rank;
  tk_elem sel, sc;
  if (!lower_scalar_comp(x, in->calls[0], &sel) || !lower_scalar_comp(x, in->calls[1], &sc)) return;
  b->loc = in->info->loc;
  int64_t stride[IR_MAX_RANK], np[IR_MAX_RANK], K = 1, pos[IR_MAX_RANK];
  for (int d = 0; d < r; d++) {
    stride[d] = w->dims[d].stride;
    np[d] = X->dims[d] + w->dims[d].pad_lo + w->dims[d].pad_hi;
    K *= w->dims[d].size;
  }
  tval *R = tv_broadcast(b, I, r, np);
  if (S->count > 0) {
    tval *xp, *vp, *st[3] = {NULL, NULL, NULL};
    padded_inputs(b, w, X, I, &xp, &vp);
    for (int64_t k = 0; k < K; k++) {
      window_pos(w, r, k, pos);
      tval *xw = strided(b, xp, pos, stride, S->dims), *vw = strided(b, vp, pos, stride, S->dims);
      if (k == 0) {
        st[0] = xw, st[1] = vw;
        st[2] = tv_new(b, IR_S32, r, S->dims);
        tk_fill(b, tv_addr(st[2]), st[2]->count, 4, 0);
        continue;
      }
      select_pass(b, &sel, k, st, xw, vw);
      tv_release(b, xw);
      tv_release(b, vw);
    }
    tv_release(b, xp);
    tv_release(b, vp);
    int64_t rs[IR_MAX_RANK], ds[IR_MAX_RANK];
    tv_strides(R, rs);
    for (int64_t k = K - 1; k >= 0; k--) {
      window_pos(w, r, k, pos);
      tval *rw = strided(b, R, pos, stride, S->dims);
      tval *nw = scatter_pass(b, &sc, k, S, rw, st[1], st[2]);
      uint64_t at = tv_addr(R);
      for (int d = 0; d < r; d++) ds[d] = stride[d] * rs[d], at += (uint64_t)(pos[d] * rs[d] * tv_esize(R->type));
      int64_t ns[IR_MAX_RANK];
      tv_strides(nw, ns);
      tk_copy(b, at, ds, tv_addr(nw), ns, r, S->dims, tv_esize(R->type));
      tv_release(b, rw);
      tv_release(b, nw);
    }
    for (int k = 0; k < 3; k++) tv_release(b, st[k]);
  }
  int64_t lo[IR_MAX_RANK];
  for (int d = 0; d < r; d++) lo[d] = w->dims[d].pad_lo, stride[d] = 1;
  x->val[i] = strided(b, R, lo, stride, X->dims);
  tv_release(b, R);
}

/* ---- run-time addressed windows ------------------------------------------
 *
 * dynamic-slice, dynamic-update-slice, gather and scatter read their start
 * indices on the scalar unit: the 8x128 tile (1024 words) holding an index
 * is DMA'd into VMEM and loaded into v0, `vtos` moves the element into a
 * scalar register, and scalar arithmetic clamps it (or, for scatter,
 * tests it) and scales it into an HBM byte address. The window then moves
 * by DMA between HBM at that address and VMEM (tb_dma_at), its box split
 * like a copy's (run, up to three strided dimensions, outer ones
 * unrolled). Gather stages its windows in VMEM in [batch..., window...]
 * order and stores them by static DMAs (then transposes into the result's
 * order when that differs); scatter moves each window's current values
 * and its updates into HBM scratch, applies to_apply on the vector unit
 * (tk_elementwise, the same programs as every elementwise op) and writes
 * the window back. A scatter window any part of which falls outside is
 * redirected to a scratch buffer (its address selected on the scalar
 * unit, no branch), so the program's DMAs and semaphores are the same
 * whatever the indices. */

enum { IX_WORDS = 1024, IX_SLOT = 0, STAGE = 4096 };

typedef struct ixreader {
  tb *b;
  const tval *v; /* the indices whose tile t is in v0, or NULL */
  int64_t t;
} ixreader;

/* Scalar register reg = element e (a 32-bit word) of index value v.
 * Indices are pred, s8, s32 or u32, all held as 32-bit words; a u32 index
 * of 2^31 or more reads as INT32_MAX, so that the signed clamps and range
 * checks after it see an index above every bound, as the unsigned value
 * is. Another type is a located error (register 0 is read instead). */
static void ix_read(ixreader *rd, const tval *v, int64_t e, int reg) {
  tb *b = rd->b;
  if (v->type != IR_S32 && v->type != IR_U32 && v->type != IR_S8 && v->type != IR_PRED) {
    tb_error(b, ST_UNSUPPORTED, "start indices of type %s (the TPU reads pred, s8, s32 and u32 indices)",
             ir_type_name(v->type));
    tb_raw(b, OP_SADD, reg, 0, 0, 0, 0, 0);
    return;
  }
  int64_t t = e / IX_WORDS;
  if (rd->v != v || rd->t != t) {
    int64_t words = v->count - t * IX_WORDS < IX_WORDS ? v->count - t * IX_WORDS : IX_WORDS;
    int64_t d[10] = {words * 4, 1, 1, 1, 0, 0, 0, 0, 0, 0};
    tb_dma(b, true, IX_SLOT, tv_addr(v) + (uint64_t)(t * IX_WORDS * 4), d);
    tb_vld(b, 0, IX_SLOT, TGT_VROW_BYTES, false);
    rd->v = v, rd->t = t;
  }
  tb_raw(b, OP_VTOS, reg, 0, 0, 0, 0, (int32_t)(e % IX_WORDS));
  if (v->type == IR_U32) { /* m = reg < 0 ? -1 : 0; reg = (reg | m) ^ (m << 31) */
    int m = tb_sreg_take(b);
    tb_raw(b, OP_SSLTI, m, reg, 0, 0, 0, 0);
    tb_raw(b, OP_SMULI, m, m, 0, 0, 0, -1);
    tb_raw(b, OP_SOR, reg, reg, m, 0, 0, 0);
    tb_raw(b, OP_SSHLI, m, m, 0, 0, 0, 31);
    tb_raw(b, OP_SXOR, reg, reg, m, 0, 0, 0);
    tb_sreg_give(b, m);
  }
}

/* Bytes of each of the two VMEM staging slots after the index tile. */
static uint64_t stage_bytes(tb *b) {
  uint64_t s = (b->t.vmem_bytes - STAGE) / 2;
  if (s > ((uint64_t)2 << 20)) s = (uint64_t)2 << 20;
  return s / TB_GRANULE * TB_GRANULE;
}

/* Advances a row-major multi-index over dims; false after the last. */
static bool next_index(int rank, const int64_t *dims, int64_t *idx) {
  for (int i = rank - 1; i >= 0; i--) {
    if (++idx[i] < dims[i]) return true;
    idx[i] = 0;
  }
  return false;
}

/* Moves a box (dims, HBM byte strides hs) between HBM at the run-time
 * address in hreg (within [hlo, hhi]) and dense VMEM at vaddr. */
static void dyn_box(tb *b, bool load, uint64_t vaddr, int hreg, uint64_t hlo, uint64_t hhi, int rank,
                    const int64_t *dims, const int64_t *hs, int es) {
  int64_t n[IR_MAX_RANK], h[IR_MAX_RANK];
  int r = 0;
  for (int k = 0; k < rank; k++) {
    if (dims[k] == 0) return;
    if (dims[k] > 1) n[r] = dims[k], h[r++] = hs[k];
  }
  for (int k = r - 2; k >= 0; k--)
    if (h[k] == h[k + 1] * n[k + 1]) {
      n[k] *= n[k + 1], h[k] = h[k + 1];
      for (int j = k + 1; j < r - 1; j++) n[j] = n[j + 1], h[j] = h[j + 1];
      r--;
    }
  int64_t run = es;
  if (r > 0 && h[r - 1] == es) run = n[--r] * es;
  int nb = r < 3 ? r : 3, outer = r - nb;
  int64_t d[10] = {run, 1, 1, 1, 0, 0, 0, 0, 0, 0}, vs = run;
  for (int k = 0; k < nb; k++) {
    d[1 + k] = n[r - 1 - k], d[4 + k] = h[r - 1 - k], d[7 + k] = vs;
    vs *= n[r - 1 - k];
  }
  int64_t idx[IR_MAX_RANK] = {0}, voff = 0;
  do {
    int64_t off = 0;
    for (int k = 0; k < outer; k++) off += idx[k] * h[k];
    if (off == 0) {
      tb_dma_at(b, load, vaddr + (uint64_t)voff, hreg, hlo, hhi, d);
    } else {
      int t = tb_sreg_take(b);
      tb_raw(b, OP_SADD, t, hreg, tb_sreg(b, (uint32_t)off), 0, 0, 0);
      tb_dma_at(b, load, vaddr + (uint64_t)voff, t, hlo + (uint64_t)off, hhi + (uint64_t)off, d);
      tb_sreg_give(b, t);
    }
    voff += vs;
  } while (outer > 0 && next_index(outer, n, idx));
}

/* One contiguous static DMA of bytes between VMEM and HBM. */
static void flat_dma(tb *b, bool load, uint64_t vaddr, uint64_t haddr, int64_t bytes) {
  if (bytes <= 0) return;
  int64_t d[10] = {bytes, 1, 1, 1, 0, 0, 0, 0, 0, 0};
  tb_dma(b, load, vaddr, haddr, d);
}

/* acc (a taken register) = base + sum over k of clamp(start k, 0, hi[k])
 * * mul[k], start k being element elem[k] of src[k]. */
static int start_address(ixreader *rd, uint64_t base, int n, const tval *const *src, const int64_t *elem,
                         const int64_t *hi, const int64_t *mul) {
  tb *b = rd->b;
  int acc = tb_sreg_take(b);
  tb_raw(b, OP_SADD, acc, 0, tb_sreg(b, (uint32_t)base), 0, 0, 0);
  for (int k = 0; k < n; k++) {
    int r = tb_sreg_take(b);
    ix_read(rd, src[k], elem[k], r);
    tb_raw(b, OP_SMAX, r, r, 0, 0, 0, 0);
    tb_raw(b, OP_SMIN, r, r, tb_sreg(b, (uint32_t)hi[k]), 0, 0, 0);
    tb_raw(b, OP_SMUL, r, r, tb_sreg(b, (uint32_t)mul[k]), 0, 0, 0);
    tb_raw(b, OP_SADD, acc, acc, r, 0, 0, 0);
    tb_sreg_give(b, r);
  }
  return acc;
}

/* The start operands of a dynamic slice from operand `first`: sources
 * and elements per operand dim. */
static void slice_starts(lctx *x, const ir_inst *in, int first, int rank, const tval **src, int64_t *elem) {
  bool vec = in->nops - first == 1 && x->comp->insts.v[in->ops[first]].shape->rank == 1 && rank != 0;
  for (int d = 0; d < rank; d++) {
    src[d] = x->val[in->ops[vec ? first : first + d]];
    elem[d] = vec ? d : 0;
  }
}

static bool fits_stage(tb *b, int64_t bytes, const char *what) {
  if ((uint64_t)bytes <= stage_bytes(b)) return tb_vmem_fits(b, STAGE + 2 * stage_bytes(b), what);
  tb_error(b, ST_UNSUPPORTED, "%s of %lld bytes is larger than the %llu-byte VMEM staging buffer", what,
           (long long)bytes, (unsigned long long)stage_bytes(b));
  return false;
}

void lower_dynamic_slice(lctx *x, ir_id i) {
  const ir_inst *in = &x->comp->insts.v[i];
  tb *b = x->b;
  const tval *X = x->val[in->ops[0]];
  int r = X->rank, es = tv_esize(X->type);
  tval *out = tv_new(b, X->type, r, in->shape->dims);
  x->val[i] = out;
  if (out->count == 0 || !fits_stage(b, out->count * es, "a dynamic-slice")) return;
  const tval *src[IR_MAX_RANK];
  int64_t elem[IR_MAX_RANK], hi[IR_MAX_RANK], mul[IR_MAX_RANK], xs[IR_MAX_RANK], hs[IR_MAX_RANK];
  slice_starts(x, in, 1, r, src, elem);
  tv_strides(X, xs);
  uint64_t hmax = tv_addr(X);
  for (int d = 0; d < r; d++) {
    hi[d] = X->dims[d] - out->dims[d], mul[d] = xs[d] * es, hs[d] = xs[d] * es;
    hmax += (uint64_t)(hi[d] * mul[d]);
  }
  ixreader rd = {b, NULL, 0};
  int acc = start_address(&rd, tv_addr(X), r, src, elem, hi, mul);
  dyn_box(b, true, STAGE, acc, tv_addr(X), hmax, r, out->dims, hs, es);
  tb_sreg_give(b, acc);
  flat_dma(b, false, STAGE, tv_addr(out), out->count * es);
}

void lower_dynamic_update_slice(lctx *x, ir_id i) {
  const ir_inst *in = &x->comp->insts.v[i];
  tb *b = x->b;
  const tval *X = x->val[in->ops[0]], *U = x->val[in->ops[1]];
  int r = X->rank, es = tv_esize(X->type);
  tval *out = tv_new(b, X->type, r, X->dims);
  x->val[i] = out;
  int64_t xs[IR_MAX_RANK], hs[IR_MAX_RANK], hi[IR_MAX_RANK], mul[IR_MAX_RANK];
  tv_strides(X, xs);
  tk_copy(b, tv_addr(out), xs, tv_addr(X), xs, r, X->dims, es);
  if (U->count == 0 || !fits_stage(b, U->count * es, "a dynamic-update-slice update")) return;
  const tval *src[IR_MAX_RANK];
  int64_t elem[IR_MAX_RANK];
  slice_starts(x, in, 2, r, src, elem);
  uint64_t hmax = tv_addr(out);
  for (int d = 0; d < r; d++) {
    hi[d] = X->dims[d] - U->dims[d], mul[d] = xs[d] * es, hs[d] = xs[d] * es;
    hmax += (uint64_t)(hi[d] * mul[d]);
  }
  flat_dma(b, true, STAGE, tv_addr(U), U->count * es);
  ixreader rd = {b, NULL, 0};
  int acc = start_address(&rd, tv_addr(out), r, src, elem, hi, mul);
  dyn_box(b, false, STAGE, acc, tv_addr(out), hmax, r, U->dims, hs, es);
  tb_sreg_give(b, acc);
}

static bool in_list(const ir_ints *l, int64_t d) {
  for (int k = 0; k < l->n; k++)
    if (l->v[k] == d) return true;
  return false;
}

/* The gather/scatter index geometry of instruction in: the operand dims
 * the window covers (wd), the indices' batch dims (bdims, with bdim_of:
 * the indices dim of each), and the element of index component k at
 * batch position G. */
typedef struct gsgeo {
  const ir_attrs *a;
  const tval *ix;
  int nw, nb;
  int64_t wd[IR_MAX_RANK], bdims[IR_MAX_RANK], ixs[IR_MAX_RANK];
} gsgeo;

static void geo_init(gsgeo *g, const ir_attrs *a, const tval *ix, int xrank) {
  memset(g, 0, sizeof *g);
  g->a = a, g->ix = ix;
  for (int d = 0; d < xrank; d++)
    if (!in_list(&a->collapsed_dims, d) && !in_list(&a->operand_batching, d)) g->wd[g->nw++] = d;
  for (int d = 0; d < ix->rank; d++)
    if (d != a->index_vector_dim) g->bdims[g->nb++] = ix->dims[d];
  tv_strides(ix, g->ixs);
}

/* The indices position of batch position G (component k on
 * index_vector_dim) as an element number. */
static int64_t geo_elem(const gsgeo *g, const int64_t *G, int k) {
  int64_t e = 0;
  for (int d = 0, j = 0; d < g->ix->rank; d++) e += (d == g->a->index_vector_dim ? k : G[j++]) * g->ixs[d];
  return e;
}

/* The static part of a window's operand offset (elements): the batching
 * dims take the batch position's coordinates. */
static int64_t geo_batch_offset(const gsgeo *g, const int64_t *G, const int64_t *xs) {
  int64_t pos[IR_MAX_RANK], off = 0;
  for (int d = 0, j = 0; d < g->ix->rank; d++) pos[d] = d == g->a->index_vector_dim ? 0 : G[j++];
  for (int k = 0; k < g->a->operand_batching.n; k++)
    off += pos[g->a->index_batching.v[k]] * xs[g->a->operand_batching.v[k]];
  return off;
}

void lower_gather(lctx *x, ir_id i) {
  const ir_inst *in = &x->comp->insts.v[i];
  const ir_attrs *a = in->a;
  tb *b = x->b;
  const tval *X = x->val[in->ops[0]];
  int es = tv_esize(X->type);
  gsgeo g;
  geo_init(&g, a, x->val[in->ops[1]], X->rank);
  int64_t td[IR_MAX_RANK], xs[IR_MAX_RANK], hs[IR_MAX_RANK], wsize[IR_MAX_RANK], hi[IR_MAX_RANK],
      mul[IR_MAX_RANK], wb = es, nbatch = 1;
  tv_strides(X, xs);
  for (int j = 0; j < g.nb; j++) td[j] = g.bdims[j], nbatch *= g.bdims[j];
  for (int j = 0; j < g.nw; j++) {
    wsize[j] = a->slice_sizes.v[g.wd[j]], hs[j] = xs[g.wd[j]] * es;
    td[g.nb + j] = wsize[j], wb *= wsize[j];
  }
  tval *T = tv_new(b, X->type, g.nb + g.nw, td);
  uint64_t hmax = tv_addr(X);
  for (int d = 0; d < X->rank; d++) hmax += (uint64_t)((X->dims[d] - a->slice_sizes.v[d]) * xs[d] * es);
  if (T->count > 0 && fits_stage(b, wb, "a gather window")) {
    int64_t group = (int64_t)stage_bytes(b) / wb, G[IR_MAX_RANK] = {0}, gi = 0;
    const tval *src[IR_MAX_RANK];
    int64_t elem[IR_MAX_RANK];
    ixreader rd = {b, NULL, 0};
    int slot = 0;
    do {
      for (int k = 0; k < a->index_map.n; k++) {
        int64_t d = a->index_map.v[k];
        src[k] = g.ix, elem[k] = geo_elem(&g, G, k);
        hi[k] = X->dims[d] - a->slice_sizes.v[d], mul[k] = xs[d] * es;
      }
      uint64_t v = STAGE + (uint64_t)slot * stage_bytes(b) + (uint64_t)((gi % group) * wb);
      int acc = start_address(&rd, tv_addr(X) + (uint64_t)(geo_batch_offset(&g, G, xs) * es), a->index_map.n,
                              src, elem, hi, mul);
      dyn_box(b, true, v, acc, tv_addr(X), hmax, g.nw, wsize, hs, es);
      tb_sreg_give(b, acc);
      if (++gi % group == 0 || gi == nbatch) {
        int64_t first = (gi - 1) / group * group;
        flat_dma(b, false, STAGE + (uint64_t)slot * stage_bytes(b), tv_addr(T) + (uint64_t)(first * wb),
                 (gi - first) * wb);
        slot ^= 1;
      }
    } while (next_index(g.nb, g.bdims, G));
  }
  /* result dim k: an offset dim takes the next window dim, else the next batch dim */
  int64_t perm[IR_MAX_RANK];
  bool ident = true;
  for (int k = 0, j = 0, bb = 0; k < in->shape->rank; k++) {
    perm[k] = in_list(&a->window_dims, k) ? g.nb + j++ : bb++;
    ident = ident && perm[k] == k;
  }
  if (ident) {
    x->val[i] = T;
  } else {
    x->val[i] = tv_transpose(b, T, perm);
    tv_release(b, T);
  }
}

/* bad |= !(0 <= r <= hi) for the start in register r. */
static void flag_outside(tb *b, int bad, int r, int64_t hi) {
  int t = tb_sreg_take(b);
  tb_raw(b, OP_SSLTI, t, r, 0, 0, 0, 0);
  tb_raw(b, OP_SOR, bad, bad, t, 0, 0, 0);
  tb_raw(b, OP_SSLT, t, tb_sreg(b, (uint32_t)hi), r, 0, 0, 0);
  tb_raw(b, OP_SOR, bad, bad, t, 0, 0, 0);
  tb_sreg_give(b, t);
}

enum { SC_MAX_OPERANDS = 4 };

/* The state of a scatter's lowering: per operand k, its result buffer,
 * the HBM scratch of one window's current values, updates and new values,
 * and the trash box an outside window is redirected to; per window dim j
 * its size and its strides (elements) in the operand and the updates. */
typedef struct scat {
  int n, nw, es[SC_MAX_OPERANDS];
  tval *res[SC_MAX_OPERANDS], *cur[SC_MAX_OPERANDS], *upd[SC_MAX_OPERANDS], *nv[SC_MAX_OPERANDS],
      *trash[SC_MAX_OPERANDS];
  const tval *U[SC_MAX_OPERANDS];
  int64_t we, ext; /* window elements; elements its box spans in the operand */
  int64_t wsize[IR_MAX_RANK], xs[IR_MAX_RANK], uws[IR_MAX_RANK], us[IR_MAX_RANK];
  tk_elem prog;
} scat;

/* The HBM range [lo, hi] a window start of operand k may take. */
static void scat_range(const scat *sc, int k, uint64_t *lo, uint64_t *hi) {
  uint64_t r = tv_addr(sc->res[k]), t = tv_addr(sc->trash[k]);
  uint64_t top = r + (uint64_t)((sc->res[k]->count - sc->ext) * sc->es[k]);
  *lo = r < t ? r : t;
  *hi = top > t ? top : t;
}

/* Moves window k between VMEM staging and HBM at register addr. */
static void scat_move(tb *b, const scat *sc, int k, bool load, int addr) {
  int64_t hs[IR_MAX_RANK];
  uint64_t lo, hi;
  for (int j = 0; j < sc->nw; j++) hs[j] = sc->xs[j] * sc->es[k];
  scat_range(sc, k, &lo, &hi);
  dyn_box(b, load, STAGE, addr, lo, hi, sc->nw, sc->wsize, hs, sc->es[k]);
}

/* One update window at batch position G: the operand element offset of
 * its start is in register off, bad is 1 when it is outside (then the
 * window goes to the trash box instead). */
static void scatter_one(lctx *x, scat *sc, const gsgeo *g, const int64_t *G, int off, int bad) {
  tb *b = x->b;
  int64_t uoff = 0;
  for (int d = 0, bb = 0; d < sc->U[0]->rank; d++)
    if (!in_list(&g->a->window_dims, d)) uoff += G[bb++] * sc->us[d];
  int addr[SC_MAX_OPERANDS];
  for (int k = 0; k < sc->n; k++) {
    int es = sc->es[k], dif = tb_sreg_take(b);
    addr[k] = tb_sreg_take(b);
    tb_raw(b, OP_SMUL, addr[k], off, tb_sreg(b, (uint32_t)es), 0, 0, 0);
    tb_raw(b, OP_SADD, addr[k], addr[k], tb_sreg(b, (uint32_t)tv_addr(sc->res[k])), 0, 0, 0);
    tb_raw(b, OP_SSUB, dif, tb_sreg(b, (uint32_t)tv_addr(sc->trash[k])), addr[k], 0, 0, 0);
    tb_raw(b, OP_SMUL, dif, dif, bad, 0, 0, 0);
    tb_raw(b, OP_SADD, addr[k], addr[k], dif, 0, 0, 0);
    tb_sreg_give(b, dif);
    scat_move(b, sc, k, true, addr[k]);
    flat_dma(b, false, STAGE, tv_addr(sc->cur[k]), sc->we * es);
    int64_t ds[IR_MAX_RANK], st = 1;
    for (int j = sc->nw - 1; j >= 0; j--) ds[j] = st, st *= sc->wsize[j];
    tk_copy(b, tv_addr(sc->upd[k]), ds, tv_addr(sc->U[k]) + (uint64_t)(uoff * es), sc->uws, sc->nw, sc->wsize, es);
  }
  tk_elementwise(b, &sc->prog);
  for (int k = 0; k < sc->n; k++) {
    flat_dma(b, true, STAGE, tv_addr(sc->nv[k]), sc->we * sc->es[k]);
    scat_move(b, sc, k, false, addr[k]);
    tb_sreg_give(b, addr[k]);
  }
}

/* Sets up sc for scatter in (results copied from the operands, scratch
 * buffers, the to_apply program); false after an error. */
static bool scat_init(lctx *x, const ir_inst *in, const gsgeo *g, scat *sc) {
  tb *b = x->b;
  memset(sc, 0, sizeof *sc);
  sc->n = (in->nops - 1) / 2;
  if (sc->n > SC_MAX_OPERANDS) {
    tb_error(b, ST_UNSUPPORTED, "a scatter of %d operands (the TPU lowering takes up to %d)", sc->n,
             SC_MAX_OPERANDS);
    return false;
  }
  if (!lower_scalar_comp(x, in->calls[0], &sc->prog)) return false;
  b->loc = in->info->loc;
  const tval *X = x->val[in->ops[0]];
  int64_t xs[IR_MAX_RANK];
  tv_strides(X, xs);
  sc->U[0] = x->val[in->ops[sc->n + 1]];
  tv_strides(sc->U[0], sc->us);
  sc->nw = g->nw, sc->we = 1, sc->ext = 1;
  for (int j = 0; j < g->nw; j++) {
    sc->wsize[j] = sc->U[0]->dims[g->a->window_dims.v[j]];
    sc->xs[j] = xs[g->wd[j]], sc->uws[j] = sc->us[g->a->window_dims.v[j]];
    sc->we *= sc->wsize[j], sc->ext += (sc->wsize[j] - 1) * sc->xs[j];
  }
  if (sc->we == 0) sc->ext = 1;
  sc->prog.count = sc->we;
  sc->prog.in_addr = arena_array(b->a, (size_t)(2 * sc->n), sizeof(uint64_t));
  sc->prog.out_addr = arena_array(b->a, (size_t)sc->n, sizeof(uint64_t));
  for (int k = 0; k < sc->n; k++) {
    const tval *Xk = x->val[in->ops[k]];
    sc->U[k] = x->val[in->ops[sc->n + 1 + k]];
    sc->es[k] = tv_esize(Xk->type);
    sc->res[k] = tv_new(b, Xk->type, Xk->rank, Xk->dims);
    tk_copy(b, tv_addr(sc->res[k]), xs, tv_addr(Xk), xs, Xk->rank, Xk->dims, sc->es[k]);
    sc->cur[k] = tv_new(b, Xk->type, 1, &sc->we);
    sc->upd[k] = tv_new(b, Xk->type, 1, &sc->we);
    sc->nv[k] = tv_new(b, Xk->type, 1, &sc->we);
    sc->trash[k] = tv_new(b, Xk->type, 1, &sc->ext);
    sc->prog.in_addr[k] = tv_addr(sc->cur[k]);
    sc->prog.in_addr[sc->n + k] = tv_addr(sc->upd[k]);
    sc->prog.out_addr[k] = tv_addr(sc->nv[k]);
  }
  return fits_stage(b, sc->ext * 4, "a scatter window");
}

void lower_scatter(lctx *x, ir_id i) {
  const ir_inst *in = &x->comp->insts.v[i];
  const ir_attrs *a = in->a;
  tb *b = x->b;
  int n = (in->nops - 1) / 2;
  const tval *X = x->val[in->ops[0]];
  gsgeo g;
  geo_init(&g, a, x->val[in->ops[n]], X->rank);
  scat sc;
  bool ok = scat_init(x, in, &g, &sc);
  int64_t xs[IR_MAX_RANK], nb = 1;
  tv_strides(X, xs);
  for (int j = 0; j < g.nb; j++) nb *= g.bdims[j];
  if (ok && nb > 0 && sc.we > 0 && X->count > 0) {
    ixreader rd = {b, NULL, 0};
    int64_t G[IR_MAX_RANK] = {0};
    do {
      int off = tb_sreg_take(b), bad = tb_sreg_take(b);
      tb_raw(b, OP_SADD, off, 0, tb_sreg(b, (uint32_t)geo_batch_offset(&g, G, xs)), 0, 0, 0);
      tb_raw(b, OP_SADD, bad, 0, 0, 0, 0, 0);
      for (int k = 0; k < a->index_map.n; k++) {
        int64_t d = a->index_map.v[k], size = 1;
        for (int j = 0; j < g.nw; j++)
          if (g.wd[j] == d) size = sc.wsize[j];
        int r = tb_sreg_take(b);
        ix_read(&rd, g.ix, geo_elem(&g, G, k), r);
        flag_outside(b, bad, r, X->dims[d] - size);
        tb_raw(b, OP_SMUL, r, r, tb_sreg(b, (uint32_t)xs[d]), 0, 0, 0);
        tb_raw(b, OP_SADD, off, off, r, 0, 0, 0);
        tb_sreg_give(b, r);
      }
      scatter_one(x, &sc, &g, G, off, bad);
      rd.v = NULL; /* the kernels between used v0 */
      tb_sreg_give(b, off);
      tb_sreg_give(b, bad);
    } while (next_index(g.nb, g.bdims, G));
  }
  for (int k = 0; k < sc.n && ok; k++) {
    tv_release(b, sc.cur[k]);
    tv_release(b, sc.upd[k]);
    tv_release(b, sc.nv[k]);
    tv_release(b, sc.trash[k]);
  }
  if (!ok) return;
  if (n == 1) {
    x->val[i] = sc.res[0];
    return;
  }
  tval *t = arena_alloc(b->a, sizeof *t);
  t->tuple = true;
  t->n = n;
  t->elems = arena_array(b->a, (size_t)n, sizeof(tval *));
  for (int k = 0; k < n; k++) t->elems[k] = sc.res[k];
  x->val[i] = t;
}
