/* conv.c: direct 2-d convolution for channels-last f32 (NHWC input, NHWC
 * output, the kernel in any layout: HWIO read in place, others packed)
 * under native numerics.
 *
 * Register tile: PX consecutive output pixels of one row x OV vectors of VL
 * output channels, at most 28 accumulators on AVX-512 (12 with 16 vector
 * registers). pick_tile chooses (PX, OV) for the row width: a 56-wide row
 * gets 7 x 4 (no pixel computed in vain) rather than 6 x 4 (60 computed for
 * 56). For each window position (ky, kx) and input feature ci in ascending
 * order, the OV weight vectors W[ky][kx][ci][o..] (contiguous in HWIO) are
 * loaded once and each of the PX input values in[b][iy][ix_p][ci] is
 * broadcast against them: PX x OV fused multiply-adds per input feature
 * (weights packed per block of OV vectors first when there are several).
 * Rows of the image outside the padding are skipped for the whole tile;
 * pixels falling in the left/right padding read a zero (so, as in the
 * implicit GEMM, a padded position contributes 0 x w). Tiles split across
 * threads; each output element sums its products in (ky, kx, ci) order, the
 * GEMM path's order. */
#include "backend/llvm/lower.h"

#include <stdio.h>
#include <stdlib.h>

enum { MAX_ACC = 28, MAX_ACC_NARROW = 12 };

/* The register tile for rows of Wo pixels and nv output-channel vectors:
 * the (px, ov) with ov dividing nv, px * ov <= budget accumulators and
 * room for the ov weight vectors and one broadcast beside them in nregs
 * vector registers, that minimises the estimated cycles per row and input
 * feature (FMAs at two per cycle plus one cycle of loop overhead, pixels of
 * the last tile beyond Wo included); ties go to the larger ov (fewer input
 * broadcasts). Measured on Zen 5 for 56-wide rows of 64 channels (thread
 * CPU time): 6 x 4 8.5 ms, 7 x 4 8.9 ms (32 registers: spills), 7 x 2
 * 7.6 ms, 14 x 2 7.4 ms. cpu_options.conv_tile (PX, OV) overrides the
 * choice (for such experiments; ignored when it does not fit). */
static void pick_tile(const cpu_options *opt, int64_t Wo, int64_t nv, int budget, int nregs, int *px,
                      int *ov) {
  double best = 0;
  *px = 1, *ov = 1;
  for (int o = 4; o >= 1; o /= 2) {
    if (nv % o != 0) continue;
    for (int p = 1; p * o <= budget && p * o + o + 1 <= nregs && p <= Wo; p++) {
      double tiles = (double)((Wo + p - 1) / p) * (double)(nv / o);
      double cyc = tiles * ((double)(p * o) / 2.0 + 1.0);
      if (best == 0 || cyc < best - 1e-9) best = cyc, *px = p, *ov = o;
    }
  }
  int ep = opt->conv_tile[0], eo = opt->conv_tile[1];
  if (ep >= 1 && eo >= 1 && eo <= 4 && nv % eo == 0 && ep * eo <= budget) *px = ep, *ov = eo;
}

static LLVMValueRef i64c(emitter *e, int64_t v) { return llvm_i64(e, v); }

static LLVMValueRef vptr(emitter *e, LLVMTypeRef t, LLVMValueRef base, LLVMValueRef off) {
  LLVMValueRef p = LLVMBuildPointerCast(e->b, base, LLVMPointerType(e->t_f32, 0), "");
  p = LLVMBuildInBoundsGEP2(e->b, e->t_f32, p, &off, 1, "");
  return LLVMBuildPointerCast(e->b, p, LLVMPointerType(t, 0), "");
}

/* The direct convolution's geometry: image N x H x W x C, kernel
 * KH x KW x C x O, output N x Ho x Wo x O, strides (sy, sx), top/left
 * padding (pt, pl); register tile PX pixels x OV vectors of VL lanes;
 * tiles = N * Ho * nxt * nob, nxt tiles per row and nob blocks of ow
 * output channels. */
typedef struct dconv {
  bool wide, packed;
  int VL, PX, OV;
  int64_t sy, sx, pt, pl;
  int64_t N, H, W, C, KH, KW, O, Ho, Wo;
  int64_t nxt, nob, ow, tiles;
  int64_t kst[4]; /* kernel strides (elements) of ky, kx, ci, o */
  LLVMTypeRef vt;
} dconv;

/* One tile's place: batch bn, output row y, first pixel x0, output block
 * ob whose first channel is o0. */
typedef struct dtile {
  LLVMValueRef bn, y, x0, ob, o0;
} dtile;

/* The strides of the kernel's (ky, kx, ci, o) in its row-major layout. */
static void kernel_strides(const ir_shape *ks, const ir_conv_dims *cd, int64_t *kst) {
  int64_t st[4], acc = 1;
  for (int d = 3; d >= 0; d--) {
    st[d] = acc;
    acc *= ks->dims[d];
  }
  kst[0] = st[cd->k_spatial[0]], kst[1] = st[cd->k_spatial[1]], kst[2] = st[cd->k_in], kst[3] = st[cd->k_out];
}

/* Whether convolution id (with epilogue epi, or NULL) takes the direct
 * path; fills g when it does. Emits no code. */
static bool direct_plan(emitter *e, scope *s, ir_id id, const gemm_epi *epi, dconv *g) {
  const ir_inst *in = llvm_inst(s, id);
  const ir_attrs *a = in->a;
  const ir_conv_dims *cd = &a->conv;
  const ir_shape *is = llvm_inst(s, in->ops[0])->shape, *ks = llvm_inst(s, in->ops[1])->shape;
  const ir_shape *os = in->shape;
  g->wide = llvm_gemm_wide(e);
  g->VL = g->wide ? 16 : 8;
  if (e->opt.numerics != CPU_NUMERICS_NATIVE || cd->nspatial != 2 || is->type != IR_F32 ||
      ks->type != IR_F32 || os->type != IR_F32 || a->feature_group_count > 1 || a->batch_group_count > 1)
    return false;
  /* NHWC, HWIO, NHWC */
  if (cd->in_batch != 0 || cd->in_spatial[0] != 1 || cd->in_spatial[1] != 2 || cd->in_feature != 3 ||
      cd->out_batch != 0 || cd->out_spatial[0] != 1 || cd->out_spatial[1] != 2 || cd->out_feature != 3)
    return false;
  g->sy = 1, g->sx = 1, g->pt = 0, g->pl = 0;
  if ((a->window != NULL)) {
    if (ir_window_of(a)->rank != 2) return false;
    for (int d = 0; d < 2; d++) {
      const ir_window_dim *w = &ir_window_of(a)->dims[d];
      if (w->lhs_dilate != 1 || w->rhs_dilate != 1 || w->reversal) return false;
    }
    g->sy = ir_window_of(a)->dims[0].stride, g->sx = ir_window_of(a)->dims[1].stride;
    g->pt = ir_window_of(a)->dims[0].pad_lo, g->pl = ir_window_of(a)->dims[1].pad_lo;
  }
  g->N = is->dims[0], g->H = is->dims[1], g->W = is->dims[2], g->C = is->dims[3];
  g->KH = ks->dims[cd->k_spatial[0]], g->KW = ks->dims[cd->k_spatial[1]], g->O = ks->dims[cd->k_out];
  kernel_strides(ks, cd, g->kst);
  g->Ho = os->dims[1], g->Wo = os->dims[2];
  if (g->O % g->VL != 0 || g->C < 1 || g->KH < 1 || g->KW < 1 || g->N * g->Ho * g->Wo * g->O == 0) return false;
  /* Rows of fewer than 4 pixels under a large window (a 3 x 3 output of
   * an 11 x 11 x 128 window): each tile would stream the whole kernel for
   * at most 3 x 4 products per weight vector; the implicit GEMM instead. */
  if (g->Wo < 4 && g->KH * g->KW * g->C >= 1024) return false;
  pick_tile(&e->opt, g->Wo, g->O / g->VL, g->wide ? MAX_ACC : MAX_ACC_NARROW, g->wide ? 32 : 16, &g->PX, &g->OV);
  g->nxt = (g->Wo + g->PX - 1) / g->PX, g->nob = g->O / ((int64_t)g->OV * g->VL);
  g->tiles = g->N * g->Ho * g->nxt * g->nob;
  g->vt = LLVMVectorType(e->t_f32, (unsigned)g->VL);
  if (epi)
    for (int i = 0; i < epi->n; i++)
      if (epi->ops[i].col && epi->ops[i].x->count != g->O) return false;
  g->ow = (int64_t)g->OV * g->VL;
  g->packed = g->nob > 1 || !(g->kst[3] == 1 && g->kst[2] == g->O && g->kst[1] == g->C * g->O);
  return true;
}

/* With several output blocks, or a kernel not in HWIO (the input
 * gradient's HWOI), the weights are first packed per block,
 * Kp[ob][ky][kx][ci][OV * VL] (a small kernel per call: 147 KiB for 3 x 3
 * x 64 x 64), so a tile streams its block's weights contiguously instead
 * of OV * VL of every O floats: 1.5-2% on the 56 x 56 x 64 benchmark.
 * Emits the packing kernel and returns the packed buffer. */
static cbuf *pack_weights(emitter *e, const dconv *g, cbuf *K) {
  LLVMBuilderRef b = e->b;
  int64_t KH = g->KH, KW = g->KW, C = g->C, O = g->O, ow = g->ow;
  ir_shape ps = ir_shape_array(IR_F32, 1, &(int64_t){KH * KW * C * O});
  cbuf *Kp = llvm_scratch_buf(e, &ps);
  cbuf *pb[2] = {K, Kp};
  kfn kp;
  llvm_kernel_begin(e, &kp, pb, 2, arena_printf(e->a, "k%d.convpack", e->nkernels));
  loop lr, lo;
  LLVMValueRef r = llvm_loop_begin(e, &lr, kp.lo, kp.hi);
  LLVMValueRef o = llvm_loop_begin(e, &lo, i64c(e, 0), i64c(e, O));
  LLVMValueRef blk = LLVMBuildUDiv(b, o, i64c(e, ow), "");
  LLVMValueRef dst = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, blk, i64c(e, KH * KW * C), ""), r, ""),
                                                  i64c(e, ow), ""), LLVMBuildURem(b, o, i64c(e, ow), ""), "");
  LLVMValueRef src = LLVMBuildMul(b, o, i64c(e, g->kst[3]), "");
  LLVMValueRef ci = LLVMBuildURem(b, r, i64c(e, C), ""), kyx = LLVMBuildUDiv(b, r, i64c(e, C), "");
  src = LLVMBuildAdd(b, src, LLVMBuildMul(b, ci, i64c(e, g->kst[2]), ""), "");
  src = LLVMBuildAdd(b, src, LLVMBuildMul(b, LLVMBuildURem(b, kyx, i64c(e, KW), ""), i64c(e, g->kst[1]), ""), "");
  src = LLVMBuildAdd(b, src, LLVMBuildMul(b, LLVMBuildUDiv(b, kyx, i64c(e, KW), ""), i64c(e, g->kst[0]), ""), "");
  LLVMValueRef v = LLVMBuildLoad2(b, e->t_f32, vptr(e, e->t_f32, llvm_buf_ptr(e, K), src), "");
  LLVMSetAlignment(v, 4);
  LLVMSetAlignment(LLVMBuildStore(b, v, vptr(e, e->t_f32, llvm_buf_ptr(e, Kp), dst)), 4);
  llvm_loop_end(e, &lo);
  llvm_loop_end(e, &lr);
  llvm_kernel_end(e, &kp, KH * KW * C, (double)(KH * KW * C * O));
  return Kp;
}

/* Tile index t = ((bn * Ho + y) * nxt + xt) * nob + ob, decoded. */
static dtile tile_at(emitter *e, const dconv *g, LLVMValueRef t) {
  LLVMBuilderRef b = e->b;
  dtile d;
  d.ob = LLVMBuildURem(b, t, i64c(e, g->nob), "");
  LLVMValueRef r = LLVMBuildUDiv(b, t, i64c(e, g->nob), "");
  LLVMValueRef xt = LLVMBuildURem(b, r, i64c(e, g->nxt), "");
  r = LLVMBuildUDiv(b, r, i64c(e, g->nxt), "");
  d.y = LLVMBuildURem(b, r, i64c(e, g->Ho), "");
  d.bn = LLVMBuildUDiv(b, r, i64c(e, g->Ho), "");
  d.x0 = LLVMBuildMul(b, xt, i64c(e, g->PX), "");
  d.o0 = LLVMBuildMul(b, d.ob, i64c(e, (int64_t)g->OV * g->VL), "");
  return d;
}

/* The feature loop at one window position (ky, kx): for each ci, the OV
 * weight vectors from K at wbase, and each pixel's input (at base[p]; with
 * border, zero where !valid[p]) broadcast against them into acc. */
static void feature_loop(emitter *e, const dconv *g, const dtile *d, cbuf *X, cbuf *K, LLVMValueRef wbase,
                         const LLVMValueRef *base, const LLVMValueRef *valid, bool border, LLVMValueRef *acc) {
  LLVMBuilderRef b = e->b;
  LLVMTypeRef vt = g->vt;
  int VL = g->VL;
  loop lci;
  LLVMValueRef ci = llvm_loop_begin(e, &lci, i64c(e, 0), i64c(e, g->C));
  LLVMValueRef wrow = g->packed ? LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildAdd(b, wbase, ci, ""),
                                                               LLVMBuildMul(b, d->ob, i64c(e, g->KH * g->KW * g->C), ""), ""),
                                               i64c(e, g->ow), "")
                                : LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildAdd(b, wbase, ci, ""), i64c(e, g->O), ""), d->o0, "");
  LLVMValueRef wv[4];
  for (int v = 0; v < g->OV; v++) {
    wv[v] = LLVMBuildLoad2(b, vt, vptr(e, vt, llvm_buf_ptr(e, K), LLVMBuildAdd(b, wrow, i64c(e, v * VL), "")), "");
    LLVMSetAlignment(wv[v], 4);
  }
  for (int p = 0; p < g->PX; p++) {
    LLVMValueRef xv = LLVMBuildLoad2(b, e->t_f32, vptr(e, e->t_f32, llvm_buf_ptr(e, X), LLVMBuildAdd(b, base[p], ci, "")), "");
    LLVMSetAlignment(xv, 4);
    if (border) xv = LLVMBuildSelect(b, valid[p], xv, LLVMConstReal(e->t_f32, 0), "");
    llvm_fma_splat(e, vt, VL, xv, wv, g->OV, acc + p * g->OV);
  }
  llvm_loop_end(e, &lci);
}

/* Accumulate the tile d over the window: rows of the image outside the
 * padding are skipped for the whole tile; per window column, the feature
 * loop runs plain when every pixel is inside the row, bordered otherwise. */
static void accumulate(emitter *e, const dconv *g, const dtile *d, cbuf *X, cbuf *K, LLVMValueRef *acc) {
  LLVMBuilderRef b = e->b;
  loop lky, lkx;
  LLVMValueRef ky = llvm_loop_begin(e, &lky, i64c(e, 0), i64c(e, g->KH));
  LLVMValueRef iy = LLVMBuildSub(b, LLVMBuildAdd(b, LLVMBuildMul(b, d->y, i64c(e, g->sy), ""), ky, ""), i64c(e, g->pt), "");
  LLVMBasicBlockRef rowin = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "row.in");
  LLVMBasicBlockRef rowx = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "row.skip");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, iy, i64c(e, g->H), ""), rowin, rowx);
  LLVMPositionBuilderAtEnd(b, rowin);
  llvm_level_push(e);
  LLVMValueRef rowbase = LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, d->bn, i64c(e, g->H), ""), iy, ""), i64c(e, g->W), "");
  LLVMValueRef kx = llvm_loop_begin(e, &lkx, i64c(e, 0), i64c(e, g->KW));
  LLVMValueRef valid[MAX_ACC], base[MAX_ACC];
  for (int p = 0; p < g->PX; p++) {
    LLVMValueRef ix = LLVMBuildSub(b, LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildAdd(b, d->x0, i64c(e, p), ""),
                                                                    i64c(e, g->sx), ""), kx, ""), i64c(e, g->pl), "");
    valid[p] = LLVMBuildICmp(b, LLVMIntULT, ix, i64c(e, g->W), "");
    LLVMValueRef ixc = LLVMBuildSelect(b, valid[p], ix, i64c(e, 0), "");
    base[p] = LLVMBuildMul(b, LLVMBuildAdd(b, rowbase, ixc, ""), i64c(e, g->C), "");
  }
  LLVMValueRef wbase = LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, ky, i64c(e, g->KW), ""), kx, ""), i64c(e, g->C), "");
  /* Two copies of the feature loop: interior (every pixel inside the image,
   * plain loads) and border (zero outside). */
  LLVMValueRef all = valid[0];
  for (int p = 1; p < g->PX; p++) all = LLVMBuildAnd(b, all, valid[p], "");
  LLVMBasicBlockRef inner = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "px.inner");
  LLVMBasicBlockRef border = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "px.border");
  LLVMBasicBlockRef joined = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "px.join");
  LLVMBuildCondBr(b, all, inner, border);
  for (int pass = 0; pass < 2; pass++) {
    LLVMPositionBuilderAtEnd(b, pass == 0 ? inner : border);
    llvm_level_push(e);
    feature_loop(e, g, d, X, K, wbase, base, valid, pass == 1, acc);
    llvm_level_pop(e);
    LLVMBuildBr(b, joined);
  }
  LLVMPositionBuilderAtEnd(b, joined);
  llvm_loop_end(e, &lkx);
  llvm_level_pop(e);
  LLVMBuildBr(b, rowx);
  LLVMPositionBuilderAtEnd(b, rowx);
  llvm_loop_end(e, &lky);
}

/* Store the tile's pixels inside the row, through the epilogue. */
static void store_tile(emitter *e, const dconv *g, const dtile *d, const gemm_epi *epi, cbuf *Y, LLVMValueRef *acc) {
  LLVMBuilderRef b = e->b;
  LLVMTypeRef vt = g->vt;
  int VL = g->VL;
  LLVMValueRef orow = LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, d->bn, i64c(e, g->Ho), ""), d->y, ""), i64c(e, g->Wo), "");
  for (int p = 0; p < g->PX; p++) {
    LLVMValueRef xp = LLVMBuildAdd(b, d->x0, i64c(e, p), "");
    LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "px.store");
    LLVMBasicBlockRef nx = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "px.next");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, xp, i64c(e, g->Wo), ""), st, nx);
    LLVMPositionBuilderAtEnd(b, st);
    LLVMValueRef yo = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildAdd(b, orow, xp, ""), i64c(e, g->O), ""), d->o0, "");
    for (int v = 0; v < g->OV; v++) {
      LLVMValueRef val = LLVMBuildLoad2(b, vt, acc[p * g->OV + v], "");
      if (epi) val = llvm_gemm_epi_apply(e, epi, val, LLVMBuildAdd(b, d->o0, i64c(e, v * VL), ""), VL);
      LLVMValueRef sto = LLVMBuildStore(b, val, vptr(e, vt, llvm_buf_ptr(e, Y), LLVMBuildAdd(b, yo, i64c(e, v * VL), "")));
      LLVMSetAlignment(sto, 4);
    }
    LLVMBuildBr(b, nx);
    LLVMPositionBuilderAtEnd(b, nx);
  }
}

static bool direct(emitter *e, scope *s, ir_id id, const gemm_epi *epi) {
  dconv g;
  if (!direct_plan(e, s, id, epi, &g)) return false;
  const ir_inst *in = llvm_inst(s, id);
  cbuf *X = s->mat[in->ops[0]][0], *K = s->mat[in->ops[1]][0], *Y = s->mat[id][0];
  if (g.packed) K = pack_weights(e, &g, K);
  cbuf *bufs[3 + GEMM_EPI_MAX] = {X, K, Y};
  int nbufs = llvm_gemm_epi_bufs(epi, bufs, 3);
  kfn k;
  llvm_kernel_begin(e, &k, bufs, nbufs, arena_printf(e->a, "k%d.conv", e->nkernels));
  LLVMValueRef acc[MAX_ACC];
  for (int i = 0; i < g.PX * g.OV; i++) acc[i] = llvm_alloca(e, g.vt);
  loop lt;
  LLVMValueRef t = llvm_loop_begin(e, &lt, k.lo, k.hi);
  dtile d = tile_at(e, &g, t);
  LLVMValueRef zero = LLVMConstNull(g.vt);
  for (int i = 0; i < g.PX * g.OV; i++) LLVMBuildStore(e->b, zero, acc[i]);
  accumulate(e, &g, &d, X, K, acc);
  store_tile(e, &g, &d, epi, Y, acc);
  llvm_loop_end(e, &lt);
  llvm_kernel_end(e, &k, g.tiles, (double)g.N * g.Ho * g.Wo * g.O * g.KH * g.KW * g.C);
  return true;
}

bool llvm_emit_conv_direct(emitter *e, scope *s, ir_id id) { return direct(e, s, id, NULL); }

bool llvm_emit_conv_epi(emitter *e, scope *s, ir_id id, const gemm_epi *epi) { return direct(e, s, id, epi); }
