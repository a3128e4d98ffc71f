/* conv_wgrad.c: kernel-gradient convolutions as an implicit GEMM over the
 * batch, in the layouts the VJP of a channels-last convolution writes.
 *
 * The gradient of conv(x: b01f, k: 01io -> b01f) with respect to k is a
 * convolution that contracts over the batch (passes/grad_conv.c):
 *
 *   dk = conv(x as f01b, dy as i01o -> 01bf),  window = dy's spatial size,
 *   dk[o0, o1, c, f] = sum_{n, w0, w1} x[n, o0 s0 + w0 r0 - p0, o1 s1 + w1 r1 - p1, c]
 *                                      * dy[n, w0, w1, f]
 *
 * (s the window stride, r the window dilation, p the low padding; the
 * labels name x's dims as the convolution sees them: its "batch" c is the
 * forward input feature, its "feature" n the forward batch). Read as
 * C = A B with
 *
 *   C[m, f], m = (o0, o1, c) row-major: dk itself, 01bf, row-major;
 *   B[k, f], k = (n, w0, w1) row-major: dy itself, i01o, row-major;
 *   A[m, k] = the x element above (zero outside x),
 *
 * it is the packed GEMM of gemm.c with its A-packing step gathering from x
 * (llvm_conv_wgrad_pack_a): M = out spatial x c (288 for the second layer
 * of samples/train/fashion_cnn.tg), N = f, K = n x window (15,488 there).
 * Neither operand nor the result is copied or transposed. Each output
 * element receives its products in ascending k, one fused multiply-add
 * each, so this runs only under NATIVE numerics (as the other convolution
 * kernels do). */
#include "backend/llvm/lower.h"

static LLVMValueRef i64c(emitter *e, int64_t v) { return llvm_i64(e, v); }

/* Whether convolution in (operand shapes is, ks) has the kernel-gradient
 * form above and types this kernel runs; fills cv (but cv->in). */
static bool wgrad_plan(const emitter *e, const ir_inst *in, const ir_shape *is, const ir_shape *ks,
                       gemm_conv *cv) {
  const ir_attrs *a = in->a;
  const ir_conv_dims *cd = &a->conv;
  const ir_shape *os = in->shape;
  int ns = cd->nspatial;
  if (e->opt.numerics != CPU_NUMERICS_NATIVE || ns < 1 || is->type != IR_F32 || ks->type != IR_F32 ||
      os->type != IR_F32 || a->feature_group_count > 1 || a->batch_group_count > 1)
    return false;
  if (cd->out_batch != ns || cd->out_feature != ns + 1 || cd->k_in != 0 || cd->k_out != ns + 1) return false;
  const ir_window *w = a->window ? ir_window_of(a) : NULL;
  if (w && w->rank != ns) return false;
  memset(cv, 0, sizeof *cv);
  int64_t st[IR_MAX_RANK], acc = 1;
  for (int d = is->rank - 1; d >= 0; d--) {
    st[d] = acc;
    acc *= is->dims[d];
  }
  cv->wgrad = true;
  cv->ns = ns;
  cv->cin = 1; /* K blocks of any length */
  cv->batch = is->dims[cd->in_batch];
  cv->nf = is->dims[cd->in_feature];
  cv->s_b = st[cd->in_batch];
  cv->s_c = st[cd->in_feature];
  cv->inside = true;
  /* rows per tile dividing the batch, so every tile is one run of x */
  int wide = llvm_gemm_wide(e);
  cv->mr = cv->batch % (wide ? 12 : 6) == 0 ? 0 : cv->batch % 8 == 0 ? 8 : 0;
  for (int i = 0; i < ns; i++) {
    const ir_window_dim *wd = w ? &w->dims[i] : NULL;
    if (cd->out_spatial[i] != i || cd->k_spatial[i] != i + 1) return false;
    if (wd && (wd->lhs_dilate != 1 || wd->reversal)) return false;
    cv->osz[i] = os->dims[i];
    cv->isz[i] = is->dims[cd->in_spatial[i]];
    cv->ksz[i] = ks->dims[i + 1];
    cv->stride[i] = wd ? wd->stride : 1;
    cv->pad_lo[i] = wd ? wd->pad_lo : 0;
    cv->rdil[i] = wd ? wd->rhs_dilate : 1;
    cv->s_sp[i] = st[cd->in_spatial[i]];
    int64_t hi = (cv->osz[i] - 1) * cv->stride[i] + (cv->ksz[i] - 1) * cv->rdil[i] - cv->pad_lo[i];
    if (cv->pad_lo[i] > 0 || hi >= cv->isz[i]) cv->inside = false;
  }
  return ks->dims[0] == cv->nf && os->dims[ns] == cv->batch;
}

bool llvm_emit_conv_wgrad(emitter *e, scope *s, ir_id id) {
  const ir_inst *in = llvm_inst(s, id);
  const ir_shape *is = llvm_inst(s, in->ops[0])->shape, *ks = llvm_inst(s, in->ops[1])->shape;
  gemm_conv cv;
  if (!wgrad_plan(e, in, is, ks, &cv)) return false;
  int64_t M = cv.batch, N = ks->dims[cv.ns + 1], K = cv.nf;
  for (int i = 0; i < cv.ns; i++) M *= cv.osz[i], K *= cv.ksz[i];
  if (M <= 0 || N <= 0 || K <= 0) return false;
  cv.in = s->mat[in->ops[0]][0];
  llvm_emit_gemm_conv(e, &cv, s->mat[in->ops[1]][0], s->mat[id][0], M, N, K);
  return true;
}

void llvm_conv_wgrad_pack_a(emitter *e, const gemm_conv *cv, cbuf *A, LLVMValueRef ap, LLVMValueRef row0,
                            LLVMValueRef dst0, LLVMValueRef k0, LLVMValueRef kc, int MR, int64_t M) {
  LLVMBuilderRef b = e->b;
  int ns = cv->ns;
  /* Tiles of MR features of one window origin, contiguous in x and never
   * outside it: one vector of MR floats per k. */
  bool runs = cv->inside && cv->s_b == 1 && cv->batch % MR == 0;
  int rows = runs ? 1 : MR;
  /* Per tile row r (m = row0 + r): whether it is inside M, the window
   * origin org[r][i] = o_i s_i - p_i and the element offset of x[c, org]
   * (rows past M read row 0 and store zero). */
  LLVMValueRef valid[GEMM_MAX_ROWS], off[GEMM_MAX_ROWS], org[GEMM_MAX_ROWS][IR_MAX_RANK];
  for (int r = 0; r < rows; r++) {
    LLVMValueRef m = LLVMBuildAdd(b, row0, i64c(e, r), "");
    valid[r] = LLVMBuildICmp(b, LLVMIntSLT, m, i64c(e, M), "");
    LLVMValueRef rem = LLVMBuildSelect(b, valid[r], m, i64c(e, 0), "");
    off[r] = LLVMBuildMul(b, LLVMBuildURem(b, rem, i64c(e, cv->batch), ""), i64c(e, cv->s_b), "");
    rem = LLVMBuildUDiv(b, rem, i64c(e, cv->batch), "");
    for (int i = ns - 1; i >= 0; i--) {
      LLVMValueRef o = i > 0 ? LLVMBuildURem(b, rem, i64c(e, cv->osz[i]), "") : rem;
      if (i > 0) rem = LLVMBuildUDiv(b, rem, i64c(e, cv->osz[i]), "");
      org[r][i] = LLVMBuildSub(b, LLVMBuildMul(b, o, i64c(e, cv->stride[i]), ""), i64c(e, cv->pad_lo[i]), "");
      off[r] = LLVMBuildAdd(b, off[r], LLVMBuildMul(b, org[r][i], i64c(e, cv->s_sp[i]), ""), "");
    }
  }
  /* Per k = (n, w...): the offset of x[n, w r] from a row's origin, then
   * the MR rows' elements into ap[dst0 + kk MR + r]. */
  loop lk;
  LLVMValueRef kk = llvm_loop_begin(e, &lk, i64c(e, 0), kc);
  LLVMValueRef rem = LLVMBuildAdd(b, k0, kk, "");
  LLVMValueRef wo[IR_MAX_RANK], kb = i64c(e, 0);
  for (int i = ns - 1; i >= 0; i--) {
    wo[i] = LLVMBuildMul(b, LLVMBuildURem(b, rem, i64c(e, cv->ksz[i]), ""), i64c(e, cv->rdil[i]), "");
    rem = LLVMBuildUDiv(b, rem, i64c(e, cv->ksz[i]), "");
    kb = LLVMBuildAdd(b, kb, LLVMBuildMul(b, wo[i], i64c(e, cv->s_sp[i]), ""), "");
  }
  kb = LLVMBuildAdd(b, kb, LLVMBuildMul(b, rem, i64c(e, cv->s_c), ""), "");
  LLVMValueRef d = LLVMBuildAdd(b, dst0, LLVMBuildMul(b, kk, i64c(e, MR), ""), "");
  LLVMTypeRef pf = LLVMPointerType(e->t_f32, 0);
  LLVMValueRef xp = LLVMBuildPointerCast(b, llvm_buf_ptr(e, A), pf, "");
  LLVMValueRef app = LLVMBuildPointerCast(b, ap, pf, "");
  if (runs) {
    LLVMTypeRef vt = LLVMVectorType(e->t_f32, (unsigned)MR);
    LLVMValueRef src = LLVMBuildAdd(b, off[0], kb, "");
    LLVMValueRef v = LLVMBuildLoad2(b, vt, LLVMBuildPointerCast(b, LLVMBuildInBoundsGEP2(b, e->t_f32, xp, &src, 1, ""),
                                                                 LLVMPointerType(vt, 0), ""), "");
    LLVMSetAlignment(v, 4);
    LLVMValueRef dp = LLVMBuildInBoundsGEP2(b, e->t_f32, app, &d, 1, "");
    LLVMSetAlignment(LLVMBuildStore(b, v, LLVMBuildPointerCast(b, dp, LLVMPointerType(vt, 0), "")), 4);
  }
  for (int r = 0; r < MR && !runs; r++) {
    LLVMValueRef ok = valid[r], src = LLVMBuildAdd(b, off[r], kb, "");
    if (!cv->inside) /* zero outside x: one bounds check per spatial dim */
      for (int i = 0; i < ns; i++) {
        LLVMValueRef p = LLVMBuildAdd(b, org[r][i], wo[i], "");
        ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntULT, p, i64c(e, cv->isz[i]), ""), "");
      }
    if (!cv->inside) src = LLVMBuildSelect(b, ok, src, i64c(e, 0), "");
    LLVMValueRef v = LLVMBuildLoad2(b, e->t_f32, LLVMBuildInBoundsGEP2(b, e->t_f32, xp, &src, 1, ""), "");
    LLVMSetAlignment(v, 4);
    v = LLVMBuildSelect(b, ok, v, LLVMConstReal(e->t_f32, 0), "");
    LLVMValueRef dr = LLVMBuildAdd(b, d, i64c(e, r), "");
    LLVMSetAlignment(LLVMBuildStore(b, v, LLVMBuildInBoundsGEP2(b, e->t_f32, app, &dr, 1, "")), 4);
  }
  llvm_loop_end(e, &lk);
}
