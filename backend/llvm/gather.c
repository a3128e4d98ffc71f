/* gather.c: the indexing ops on the CPU, with the semantics of
 * ir/eval_gather.c (bit-exact: they move elements, and the computations
 * scatter and select-and-scatter call are inlined by llvm_gen_call, the
 * same scalar code the elementwise ops use).
 *
 * dynamic-slice, dynamic-update-slice and gather are elemental (gen.c
 * calls llvm_gen_indexing): an output element reads its start indices
 * (any integer type, widened to i64), clamps them and loads one operand
 * element, or for dynamic-update-slice selects between the operand and the
 * update, so a fusion inlines them like a slice.
 *
 * scatter and select-and-scatter are kernels of their own (one call, one
 * thread): the result is first the operands (the init value), then one
 * loop nest in the evaluator's order applies the updates; out-of-range
 * scatter windows are skipped by a branch per window, select-and-scatter
 * windows skip the padding by a branch per position. */
#include "backend/llvm/lower.h"

static LLVMValueRef i64c(emitter *e, int64_t v) { return llvm_i64(e, v); }

static const ir_shape *op_shape(const scope *s, const ir_inst *in, int k) {
  return llvm_inst(s, in->ops[k])->shape;
}

/* An integer value of type t (compute type) widened to i64. */
static LLVMValueRef to_i64(emitter *e, ir_type t, LLVMValueRef v) {
  if (LLVMGetIntTypeWidth(LLVMTypeOf(v)) == 64) return v;
  return t == IR_PRED || ir_type_is_unsigned(t) ? LLVMBuildZExt(e->b, v, e->t_i64, "")
                                                : LLVMBuildSExt(e->b, v, e->t_i64, "");
}

/* v clamped into [lo, hi] (signed; hi >= lo). */
static LLVMValueRef clamp(emitter *e, LLVMValueRef v, int64_t lo, int64_t hi) {
  LLVMBuilderRef b = e->b;
  v = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, v, i64c(e, lo), ""), i64c(e, lo), v, "");
  return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, v, i64c(e, hi), ""), i64c(e, hi), v, "");
}

static void idx_multi(idx *ix, const ir_shape *s) {
  memset(ix, 0, sizeof *ix);
  ix->rank = s->rank;
  ix->dims = s->dims;
  ix->have_multi = true;
}

/* Start index d of a dynamic slice whose starts begin at operand first. */
static LLVMValueRef start_at(emitter *e, scope *s, const ir_inst *in, int first, int d) {
  const ir_shape *ss = op_shape(s, in, first);
  idx ix;
  ir_id op = in->ops[first];
  if (in->nops - first == 1 && ss->rank == 1 && op_shape(s, in, 0)->rank != 0) {
    idx_multi(&ix, ss);
    ix.v[0] = ix.lin = i64c(e, d);
  } else {
    op = in->ops[first + d];
    ss = op_shape(s, in, first + d);
    llvm_idx_scalar(e, &ix);
  }
  return to_i64(e, ss->type, llvm_gen(e, s, op, 0, &ix));
}

static LLVMValueRef gen_dynamic_slice(emitter *e, scope *s, const ir_inst *in, idx *ix) {
  const ir_shape *xs = op_shape(s, in, 0);
  llvm_idx_multi(e, ix);
  idx oi;
  idx_multi(&oi, xs);
  for (int d = 0; d < xs->rank; d++) {
    LLVMValueRef st = clamp(e, start_at(e, s, in, 1, d), 0, xs->dims[d] - in->shape->dims[d]);
    oi.v[d] = LLVMBuildNUWAdd(e->b, ix->v[d], st, "");
  }
  return llvm_gen(e, s, in->ops[0], 0, &oi);
}

/* The update where the output index lies in it, else the operand; the
 * update is read at a clamped index, so both loads stay in bounds. */
static LLVMValueRef gen_dynamic_update_slice(emitter *e, scope *s, const ir_inst *in, idx *ix) {
  LLVMBuilderRef b = e->b;
  const ir_shape *xs = op_shape(s, in, 0), *us = op_shape(s, in, 1);
  LLVMValueRef xv = llvm_gen(e, s, in->ops[0], 0, ix);
  for (int d = 0; d < us->rank; d++)
    if (us->dims[d] == 0) return xv;
  llvm_idx_multi(e, ix);
  idx ui;
  idx_multi(&ui, us);
  LLVMValueRef inside = LLVMConstInt(e->t_i1, 1, 0);
  for (int d = 0; d < xs->rank; d++) {
    LLVMValueRef st = clamp(e, start_at(e, s, in, 2, d), 0, xs->dims[d] - us->dims[d]);
    LLVMValueRef rel = LLVMBuildSub(b, ix->v[d], st, "");
    LLVMValueRef in_d = LLVMBuildICmp(b, LLVMIntULT, rel, i64c(e, us->dims[d]), "");
    inside = LLVMBuildAnd(b, inside, in_d, "");
    ui.v[d] = LLVMBuildSelect(b, in_d, rel, i64c(e, 0), "");
  }
  LLVMValueRef uv = llvm_gen(e, s, in->ops[1], 0, &ui);
  return LLVMBuildSelect(b, inside, uv, xv, "");
}

static bool in_list(const ir_ints *l, int64_t d) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == d) return true;
  return false;
}

/* The operand dims a gather/scatter window covers, in order. */
static int window_dims(const ir_attrs *a, int rank, int64_t *wd) {
  int n = 0;
  for (int d = 0; d < rank; d++)
    if (!in_list(&a->collapsed_dims, d) && !in_list(&a->operand_batching, d)) wd[n++] = d;
  return n;
}

/* The operand start S[] (i64, not clamped) of the batch position G[] of
 * gather/scatter instruction in, whose indices are operand k. */
static void gs_start(emitter *e, scope *s, const ir_inst *in, int k, int xrank, LLVMValueRef *G,
                     LLVMValueRef *S) {
  const ir_attrs *a = in->a;
  const ir_shape *is = op_shape(s, in, k);
  idx ii;
  idx_multi(&ii, is);
  for (int d = 0, b = 0; d < is->rank; d++) ii.v[d] = d == a->index_vector_dim ? i64c(e, 0) : G[b++];
  for (int d = 0; d < xrank; d++) S[d] = i64c(e, 0);
  for (int j = 0; j < a->index_map.n; j++) {
    if (a->index_vector_dim < is->rank) ii.v[a->index_vector_dim] = i64c(e, j);
    ii.lin = NULL;
    S[a->index_map.v[j]] = to_i64(e, is->type, llvm_gen(e, s, in->ops[k], 0, &ii));
  }
  for (int i = 0; i < a->operand_batching.n; i++) S[a->operand_batching.v[i]] = ii.v[a->index_batching.v[i]];
}

/* Splits the multi-index of an array whose dims in window_dims are the
 * window (W) and the others the batch (G). */
static void split_index(const ir_attrs *a, int rank, LLVMValueRef *v, LLVMValueRef *G, LLVMValueRef *W) {
  for (int i = 0, j = 0, b = 0; i < rank; i++) {
    if (j < a->window_dims.n && a->window_dims.v[j] == i) W[j++] = v[i];
    else G[b++] = v[i];
  }
}

static LLVMValueRef gen_gather(emitter *e, scope *s, const ir_inst *in, idx *ix) {
  const ir_attrs *a = in->a;
  const ir_shape *xs = op_shape(s, in, 0);
  llvm_idx_multi(e, ix);
  LLVMValueRef G[IR_MAX_RANK], W[IR_MAX_RANK], S[IR_MAX_RANK];
  split_index(a, in->shape->rank, ix->v, G, W);
  gs_start(e, s, in, 1, xs->rank, G, S);
  int64_t wd[IR_MAX_RANK];
  int nw = window_dims(a, xs->rank, wd);
  idx oi;
  idx_multi(&oi, xs);
  for (int d = 0; d < xs->rank; d++) oi.v[d] = clamp(e, S[d], 0, xs->dims[d] - a->slice_sizes.v[d]);
  for (int j = 0; j < nw; j++) oi.v[wd[j]] = LLVMBuildNUWAdd(e->b, oi.v[wd[j]], W[j], "");
  return llvm_gen(e, s, in->ops[0], 0, &oi);
}

LLVMValueRef llvm_gen_indexing(emitter *e, scope *s, const ir_inst *in, idx *ix) {
  switch (in->op) {
  case IR_OP_DYNAMIC_SLICE: return gen_dynamic_slice(e, s, in, ix);
  case IR_OP_DYNAMIC_UPDATE_SLICE: return gen_dynamic_update_slice(e, s, in, ix);
  case IR_OP_GATHER: return gen_gather(e, s, in, ix);
  default: base_die("llvm_gen_indexing: %s", ir_op_name(in->op));
  }
}

/* ---- scatter and select-and-scatter kernels ------------------------------ */

/* The row-major linear index of multi-index v over dims. */
static LLVMValueRef lin_of(emitter *e, int rank, const int64_t *dims, LLVMValueRef *v) {
  LLVMValueRef l = i64c(e, 0);
  for (int d = 0; d < rank; d++)
    l = LLVMBuildNUWAdd(e->b, LLVMBuildNUWMul(e->b, l, i64c(e, dims[d]), ""), v[d], "");
  return l;
}

/* Begins the one-call kernel of instruction in over buffers kb, running
 * its body once (rows [lo, hi) of [0, 1)); *skip is where it ends. */
static void once_begin(emitter *e, kfn *k, const ir_inst *in, cbuf **kb, int nk, LLVMBasicBlockRef *skip) {
  char *name = arena_printf(e->a, "k%d.%s", e->nkernels, in->info->name);
  llvm_kernel_begin(e, k, kb, nk, name);
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "once");
  *skip = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "done");
  LLVMBuildCondBr(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, k->lo, k->hi, ""), body, *skip);
  LLVMPositionBuilderAtEnd(e->b, body);
}

static void once_end(emitter *e, kfn *k, LLVMBasicBlockRef skip) {
  LLVMBuildBr(e->b, skip);
  LLVMPositionBuilderAtEnd(e->b, skip);
  llvm_kernel_end(e, k, 1, 1);
}

/* The non-constant buffers of in's operands and result leaves. */
static int kernel_bufs(emitter *e, scope *s, ir_id id, cbuf ***out) {
  const ir_inst *in = llvm_inst(s, id);
  bool *used = arena_array(e->a, (size_t)e->bufs.n + 1, sizeof(bool));
  for (int k = 0; k < in->nops; k++) used[s->mat[in->ops[k]][0]->id] = true;
  for (int l = 0; l < llvm_leaf_count(in->shape); l++) used[s->mat[id][l]->id] = true;
  cbuf **kb = arena_array(e->a, (size_t)e->bufs.n + 1, sizeof(cbuf *));
  int nk = 0;
  for (int i = 0; i < e->bufs.n; i++)
    if (used[i] && e->bufs.v[i]->kind != CB_CONST) kb[nk++] = e->bufs.v[i];
  *out = kb;
  return nk;
}

/* Loops v[d] over [0, dims[d]) for d < rank (entered innermost last). */
static void loops_begin(emitter *e, loop *lp, int rank, const int64_t *dims, LLVMValueRef *v) {
  for (int d = 0; d < rank; d++) v[d] = llvm_loop_begin(e, &lp[d], i64c(e, 0), i64c(e, dims[d]));
}

static void loops_end(emitter *e, loop *lp, int rank) {
  for (int d = rank - 1; d >= 0; d--) llvm_loop_end(e, &lp[d]);
}

/* The update windows of scatter at batch position G, applied in place. */
static void scatter_window(emitter *e, scope *s, ir_id id, LLVMValueRef *G) {
  const ir_inst *in = llvm_inst(s, id);
  const ir_attrs *a = in->a;
  LLVMBuilderRef b = e->b;
  int n = (in->nops - 1) / 2;
  const ir_shape *xs = op_shape(s, in, 0), *us = op_shape(s, in, n + 1);
  int64_t wd[IR_MAX_RANK], wsize[IR_MAX_RANK];
  int nw = window_dims(a, xs->rank, wd);
  for (int j = 0; j < nw; j++) wsize[j] = us->dims[a->window_dims.v[j]];
  LLVMValueRef S[IR_MAX_RANK], W[IR_MAX_RANK], P[IR_MAX_RANK], U[IR_MAX_RANK];
  gs_start(e, s, in, n, xs->rank, G, S);
  LLVMValueRef inside = LLVMConstInt(e->t_i1, 1, 0);
  for (int d = 0; d < xs->rank; d++) {
    int64_t size = 1;
    for (int j = 0; j < nw; j++)
      if (wd[j] == d) size = wsize[j];
    /* 0 <= S[d] <= dim - size, as one unsigned compare */
    LLVMValueRef ok = xs->dims[d] < size ? LLVMConstInt(e->t_i1, 0, 0)
                                         : LLVMBuildICmp(b, LLVMIntULE, S[d], i64c(e, xs->dims[d] - size), "");
    inside = LLVMBuildAnd(b, inside, ok, "");
  }
  LLVMBasicBlockRef win = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "sc.win");
  LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "sc.next");
  LLVMBuildCondBr(b, inside, win, next);
  LLVMPositionBuilderAtEnd(b, win);
  llvm_level_push(e);
  loop lp[IR_MAX_RANK];
  loops_begin(e, lp, nw, wsize, W);
  for (int d = 0; d < xs->rank; d++) P[d] = S[d];
  for (int j = 0; j < nw; j++) P[wd[j]] = LLVMBuildNUWAdd(b, P[wd[j]], W[j], "");
  for (int i = 0, j = 0, g = 0; i < us->rank; i++)
    U[i] = j < a->window_dims.n && a->window_dims.v[j] == i ? W[j++] : G[g++];
  LLVMValueRef io = lin_of(e, xs->rank, xs->dims, P), uo = lin_of(e, us->rank, us->dims, U);
  LLVMValueRef args[128], res[64];
  for (int k = 0; k < n; k++) {
    const cbuf *rb = s->mat[id][k];
    const cbuf *ub = s->mat[in->ops[n + 1 + k]][0];
    args[k] = llvm_load(e, rb->type, llvm_buf_ptr(e, rb), io);
    args[n + k] = llvm_load(e, ub->type, llvm_buf_ptr(e, ub), uo);
  }
  llvm_gen_call(e, in->calls[0], args, res);
  for (int k = 0; k < n; k++) llvm_store(e, s->mat[id][k]->type, llvm_buf_ptr(e, s->mat[id][k]), io, res[k]);
  loops_end(e, lp, nw);
  llvm_level_pop(e);
  LLVMBuildBr(b, next);
  LLVMPositionBuilderAtEnd(b, next);
}

bool llvm_emit_scatter(emitter *e, scope *s, ir_id id) {
  const ir_inst *in = llvm_inst(s, id);
  int n = (in->nops - 1) / 2;
  const ir_shape *is = op_shape(s, in, n);
  cbuf **kb;
  int nk = kernel_bufs(e, s, id, &kb);
  kfn k;
  LLVMBasicBlockRef skip;
  once_begin(e, &k, in, kb, nk, &skip);
  for (int j = 0; j < n; j++) {
    const ir_shape *xs = op_shape(s, in, j);
    int64_t bytes = ir_shape_count(xs) * ir_type_size(xs->type);
    if (bytes)
      LLVMBuildMemCpy(e->b, llvm_buf_ptr(e, s->mat[id][j]), 1, llvm_buf_ptr(e, s->mat[in->ops[j]][0]), 1,
                      i64c(e, bytes));
  }
  int64_t bdims[IR_MAX_RANK];
  int nb = 0;
  for (int d = 0; d < is->rank; d++)
    if (d != in->a->index_vector_dim) bdims[nb++] = is->dims[d];
  loop lp[IR_MAX_RANK];
  LLVMValueRef G[IR_MAX_RANK];
  loops_begin(e, lp, nb, bdims, G);
  scatter_window(e, s, id, G);
  loops_end(e, lp, nb);
  once_end(e, &k, skip);
  return e->st == ST_OK;
}

/* Within the window of source position Psrc: records in *have / *sel the
 * position select keeps (the first inside, replaced whenever select(kept,
 * current) is false). */
static void sas_select(emitter *e, scope *s, const ir_inst *in, LLVMValueRef *Psrc, LLVMValueRef have,
                       LLVMValueRef sel) {
  LLVMBuilderRef b = e->b;
  const ir_shape *xs = op_shape(s, in, 0);
  const ir_window *w = ir_window_of(in->a);
  const cbuf *xb = s->mat[in->ops[0]][0];
  int r = xs->rank;
  int64_t wsize[IR_MAX_RANK] = {0};
  for (int d = 0; d < r; d++) wsize[d] = w->dims[d].size;
  loop lp[IR_MAX_RANK];
  LLVMValueRef W[IR_MAX_RANK], P[IR_MAX_RANK];
  loops_begin(e, lp, r, wsize, W);
  LLVMValueRef valid = LLVMConstInt(e->t_i1, 1, 0);
  for (int d = 0; d < r; d++) {
    P[d] = LLVMBuildSub(b, LLVMBuildAdd(b, LLVMBuildMul(b, Psrc[d], i64c(e, w->dims[d].stride), ""), W[d], ""),
                        i64c(e, w->dims[d].pad_lo), "");
    valid = LLVMBuildAnd(b, valid, LLVMBuildICmp(b, LLVMIntULT, P[d], i64c(e, xs->dims[d]), ""), "");
  }
  LLVMBasicBlockRef vb = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "sas.in");
  LLVMBasicBlockRef first = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "sas.first");
  LLVMBasicBlockRef cmp = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "sas.cmp");
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "sas.join");
  LLVMBuildCondBr(b, valid, vb, join);
  LLVMPositionBuilderAtEnd(b, vb);
  LLVMValueRef off = lin_of(e, r, xs->dims, P);
  LLVMBuildCondBr(b, LLVMBuildLoad2(b, e->t_i1, have, ""), cmp, first);
  LLVMPositionBuilderAtEnd(b, first);
  LLVMBuildStore(b, off, sel);
  LLVMBuildStore(b, LLVMConstInt(e->t_i1, 1, 0), have);
  LLVMBuildBr(b, join);
  LLVMPositionBuilderAtEnd(b, cmp);
  llvm_level_push(e);
  LLVMValueRef kept = LLVMBuildLoad2(b, e->t_i64, sel, "");
  LLVMValueRef args[2] = {llvm_load(e, xb->type, llvm_buf_ptr(e, xb), kept),
                          llvm_load(e, xb->type, llvm_buf_ptr(e, xb), off)};
  LLVMValueRef keep;
  llvm_gen_call(e, in->calls[0], args, &keep);
  LLVMBuildStore(b, LLVMBuildSelect(b, keep, kept, off, ""), sel);
  llvm_level_pop(e);
  LLVMBuildBr(b, join);
  LLVMPositionBuilderAtEnd(b, join);
  loops_end(e, lp, r);
}

bool llvm_emit_select_and_scatter(emitter *e, scope *s, ir_id id) {
  const ir_inst *in = llvm_inst(s, id);
  LLVMBuilderRef b = e->b;
  const ir_shape *xs = op_shape(s, in, 0), *ss = op_shape(s, in, 1);
  const cbuf *rb = s->mat[id][0], *sb = s->mat[in->ops[1]][0], *ib = s->mat[in->ops[2]][0];
  cbuf **kb;
  int nk = kernel_bufs(e, s, id, &kb);
  kfn k;
  LLVMBasicBlockRef skip;
  once_begin(e, &k, in, kb, nk, &skip);
  LLVMValueRef init = llvm_load(e, ib->type, llvm_buf_ptr(e, ib), i64c(e, 0));
  loop fl;
  LLVMValueRef i = llvm_loop_begin(e, &fl, i64c(e, 0), i64c(e, ir_shape_count(xs)));
  llvm_store(e, rb->type, llvm_buf_ptr(e, rb), i, init);
  llvm_loop_end(e, &fl);
  LLVMValueRef have = llvm_alloca(e, e->t_i1), sel = llvm_alloca(e, e->t_i64);
  loop lp[IR_MAX_RANK];
  LLVMValueRef P[IR_MAX_RANK];
  loops_begin(e, lp, ss->rank, ss->dims, P);
  LLVMBuildStore(b, LLVMConstInt(e->t_i1, 0, 0), have);
  sas_select(e, s, in, P, have, sel);
  LLVMBasicBlockRef sc = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "sas.scatter");
  LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "sas.next");
  LLVMBuildCondBr(b, LLVMBuildLoad2(b, e->t_i1, have, ""), sc, next);
  LLVMPositionBuilderAtEnd(b, sc);
  llvm_level_push(e);
  LLVMValueRef at = LLVMBuildLoad2(b, e->t_i64, sel, "");
  LLVMValueRef args[2] = {llvm_load(e, sb->type, llvm_buf_ptr(e, sb), lin_of(e, ss->rank, ss->dims, P)),
                          llvm_load(e, rb->type, llvm_buf_ptr(e, rb), at)};
  LLVMValueRef r;
  llvm_gen_call(e, in->calls[1], args, &r);
  llvm_store(e, rb->type, llvm_buf_ptr(e, rb), at, r);
  llvm_level_pop(e);
  LLVMBuildBr(b, next);
  LLVMPositionBuilderAtEnd(b, next);
  loops_end(e, lp, ss->rank);
  once_end(e, &k, skip);
  return e->st == ST_OK;
}
