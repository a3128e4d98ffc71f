/* gemm.c: the packed, register-tiled, cache-blocked f32 matrix multiply,
 * emitted as LLVM IR with explicit vector types (GotoBLAS / BLIS structure).
 *
 *   C[b] (M x N) = A[b] (M x K) * B[b] (K x N), all row-major f32.
 *
 * Register tile: MR rows x NR = 2 vectors of VL floats (AVX-512: 12 x 32 in
 * 24 zmm accumulators; otherwise 6 x 16 in 12 ymm). K is cut into blocks of
 * KC. B is packed once (in parallel) as, per batch and K block, NR-wide
 * column panels [kc][NR] (zero-padded to a multiple of NR); the main kernel
 * splits the MR-row tiles of all batches across threads, and for each block
 * of up to TPB tiles and each K block packs those rows of A as [kc][MR]
 * (zero-padded), then sweeps the B panels: each micro-kernel call keeps a
 * B panel (kc x NR) in L1 and an A tile in L2 and does kc rank-1 updates of
 * its accumulators with fused multiply-adds.
 *
 * Each output element receives its products in ascending k, one fused
 * multiply-add each, from +0 (the first K block starts at zero, later ones
 * reload the partial sums). That is the MXU's contract for bf16 operands,
 * so under TPU numerics this kernel is exact; under NATIVE numerics it
 * differs from the evaluator's separate multiply and add in the last bits.
 * When M or N is not a multiple of the tile, the product goes to a padded
 * scratch copy of C and the valid part is copied out.
 *
 * Convolutions use the same kernel as an implicit GEMM: the A-packing step
 * gathers image patches from the input (zero outside it) instead of reading
 * a materialised im2col matrix. */
#include "backend/llvm/lower.h"

enum { KC_DEFAULT = 256, TPB = 16, JC = 8 };

static LLVMValueRef i64c(emitter *e, int64_t v) { return llvm_i64(e, v); }

static LLVMValueRef fptr(emitter *e, LLVMTypeRef t, LLVMValueRef base, LLVMValueRef off_elems) {
  LLVMValueRef p = LLVMBuildPointerCast(e->b, base, LLVMPointerType(e->t_f32, 0), "");
  p = LLVMBuildInBoundsGEP2(e->b, e->t_f32, p, &off_elems, 1, "");
  return LLVMBuildPointerCast(e->b, p, LLVMPointerType(t, 0), "");
}

static LLVMValueRef ldv(emitter *e, LLVMTypeRef t, LLVMValueRef p, unsigned align) {
  LLVMValueRef v = LLVMBuildLoad2(e->b, t, p, "");
  LLVMSetAlignment(v, align);
  return v;
}

static void stv(emitter *e, LLVMValueRef v, LLVMValueRef p, unsigned align) {
  LLVMSetAlignment(LLVMBuildStore(e->b, v, p), align);
}

static LLVMValueRef imin(emitter *e, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(e->b, LLVMBuildICmp(e->b, LLVMIntSLT, a, b, ""), a, b, "");
}

bool llvm_gemm_wide(const emitter *e) {
  const char *f = e->opt.cpu_features;
  char *host = NULL;
  if (!f) f = host = LLVMGetHostCPUFeatures();
  bool wide = strstr(f, "+avx512f") != NULL;
  if (host) LLVMDisposeMessage(host);
  return wide;
}

/* Bp[b][kb][jt][kk][NR] = B[b][k][jt*NR + jj], zero beyond N. Rows: b, k. */
static void pack_b(emitter *e, cbuf *B, cbuf *Bp, int64_t NB, int64_t K, int64_t N, int64_t Npad, int NR,
                   int64_t KC) {
  LLVMBuilderRef b = e->b;
  cbuf *bufs[2] = {B, Bp};
  kfn k;
  llvm_kernel_begin(e, &k, bufs, 2, arena_printf(e->a, "k%d.packb", e->nkernels));
  loop lr, lj, li;
  LLVMValueRef r = llvm_loop_begin(e, &lr, k.lo, k.hi);
  LLVMValueRef bi = LLVMBuildUDiv(b, r, i64c(e, K), "");
  LLVMValueRef kk = LLVMBuildURem(b, r, i64c(e, K), "");
  LLVMValueRef kb = LLVMBuildUDiv(b, kk, i64c(e, KC), "");
  LLVMValueRef kin = LLVMBuildURem(b, kk, i64c(e, KC), "");
  LLVMValueRef k0 = LLVMBuildMul(b, kb, i64c(e, KC), "");
  LLVMValueRef kc = imin(e, i64c(e, KC), LLVMBuildSub(b, i64c(e, K), k0, ""));
  /* dst = b*K*Npad + k0*Npad + jt*kc*NR + kin*NR + jj */
  LLVMValueRef dbase = LLVMBuildAdd(b, LLVMBuildMul(b, bi, i64c(e, K * Npad), ""),
                                    LLVMBuildMul(b, k0, i64c(e, Npad), ""), "");
  dbase = LLVMBuildAdd(b, dbase, LLVMBuildMul(b, kin, i64c(e, NR), ""), "");
  LLVMValueRef sbase = LLVMBuildMul(b, r, i64c(e, N), "");
  LLVMValueRef jt = llvm_loop_begin(e, &lj, i64c(e, 0), i64c(e, Npad / NR));
  LLVMValueRef d0 = LLVMBuildAdd(b, dbase, LLVMBuildMul(b, LLVMBuildMul(b, jt, kc, ""), i64c(e, NR), ""), "");
  LLVMValueRef jj = llvm_loop_begin(e, &li, i64c(e, 0), i64c(e, NR));
  LLVMValueRef j = LLVMBuildAdd(b, LLVMBuildMul(b, jt, i64c(e, NR), ""), jj, "");
  LLVMValueRef in = LLVMBuildICmp(b, LLVMIntSLT, j, i64c(e, N), "");
  LLVMValueRef jc = LLVMBuildSelect(b, in, j, i64c(e, 0), "");
  LLVMValueRef v = ldv(e, e->t_f32, fptr(e, e->t_f32, llvm_buf_ptr(e, B), LLVMBuildAdd(b, sbase, jc, "")), 4);
  v = LLVMBuildSelect(b, in, v, LLVMConstReal(e->t_f32, 0), "");
  stv(e, v, fptr(e, e->t_f32, llvm_buf_ptr(e, Bp), LLVMBuildAdd(b, d0, jj, "")), 4);
  llvm_loop_end(e, &li);
  llvm_loop_end(e, &lj);
  llvm_loop_end(e, &lr);
  llvm_kernel_end(e, &k, NB * K, (double)(NB * K * Npad));
}

/* The main kernel: rows are the MR-row tiles of all batches. */
/* The value of A[b][row][k0 + kk] for the pack loop: from a row-major
 * buffer, or gathered from a convolution input (zero outside the image). */
typedef struct arow {
  LLVMValueRef base;                 /* plain: element offset of A[b][row][k0] */
  LLVMValueRef cbase, pbase[IR_MAX_RANK]; /* conv: batch offset, window origin */
} arow;

static void a_row(emitter *e, const gemm_conv *cv, LLVMValueRef abase, LLVMValueRef rowc,
                  LLVMValueRef k0, int64_t K, arow *ar) {
  LLVMBuilderRef b = e->b;
  if (!cv) {
    ar->base = LLVMBuildAdd(b, abase, LLVMBuildAdd(b, LLVMBuildMul(b, rowc, i64c(e, K), ""), k0, ""), "");
    return;
  }
  LLVMValueRef rem = rowc;
  for (int i = cv->ns - 1; i >= 0; i--) {
    LLVMValueRef o = LLVMBuildURem(b, rem, i64c(e, cv->osz[i]), "");
    rem = LLVMBuildUDiv(b, rem, i64c(e, cv->osz[i]), "");
    ar->pbase[i] = LLVMBuildSub(b, LLVMBuildMul(b, o, i64c(e, cv->stride[i]), ""), i64c(e, cv->pad_lo[i]), "");
  }
  ar->cbase = LLVMBuildMul(b, rem, i64c(e, cv->s_b), "");
}

static LLVMValueRef a_elem(emitter *e, const gemm_conv *cv, cbuf *A, const arow *ar, LLVMValueRef k0,
                           LLVMValueRef kk, LLVMValueRef row_ok) {
  (void)cv;
  (void)k0;
  LLVMValueRef v = ldv(e, e->t_f32, fptr(e, e->t_f32, llvm_buf_ptr(e, A), LLVMBuildAdd(e->b, ar->base, kk, "")), 4);
  return LLVMBuildSelect(e->b, row_ok, v, LLVMConstReal(e->t_f32, 0), "");
}

static void main_kernel(emitter *e, const gemm_conv *cv, cbuf *A, cbuf *Bp, cbuf *Cp, int64_t NB, int64_t M, int64_t K,
                        int64_t Mt, int64_t Mpad, int64_t Npad, int VL, int MR, int64_t KC) {
  LLVMBuilderRef b = e->b;
  int NR = 2 * VL;
  LLVMTypeRef vt = LLVMVectorType(e->t_f32, (unsigned)VL);
  cbuf *bufs[3] = {A, Bp, Cp};
  kfn k;
  llvm_kernel_begin(e, &k, bufs, 3, arena_printf(e->a, "k%d.gemm", e->nkernels));
  LLVMValueRef ap_buf = llvm_alloca(e, LLVMArrayType(e->t_f32, (unsigned)(TPB * MR * KC)));
  /* TPB x MR x KC floats on the stack: at most 768 KiB (KC <= 1024). */
  LLVMSetAlignment(ap_buf, 64);
  LLVMValueRef ap = LLVMBuildPointerCast(b, ap_buf, e->t_ptr, "");
  LLVMValueRef acc[2 * 16];
  for (int i = 0; i < MR * 2; i++) acc[i] = llvm_alloca(e, vt);
  /* while (pos < hi) */
  LLVMValueRef posv = llvm_alloca(e, e->t_i64);
  LLVMBuildStore(b, k.lo, posv);
  LLVMBasicBlockRef wh = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "blocks");
  LLVMBasicBlockRef wb = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "block");
  LLVMBasicBlockRef wx = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "done");
  LLVMBuildBr(b, wh);
  LLVMPositionBuilderAtEnd(b, wh);
  LLVMValueRef pos = LLVMBuildLoad2(b, e->t_i64, posv, "pos");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, pos, k.hi, ""), wb, wx);
  LLVMPositionBuilderAtEnd(b, wb);
  llvm_level_push(e);
  LLVMValueRef bi = LLVMBuildUDiv(b, pos, i64c(e, Mt), "");
  LLVMValueRef t0 = LLVMBuildURem(b, pos, i64c(e, Mt), "");
  LLVMValueRef nt = imin(e, imin(e, i64c(e, TPB), LLVMBuildSub(b, i64c(e, Mt), t0, "")),
                         LLVMBuildSub(b, k.hi, pos, ""));
  LLVMValueRef abase = LLVMBuildMul(b, bi, i64c(e, M * K), "");
  loop lkb, lit, lkk, lr, ljt, lit2, lk;
  int64_t nkb = (K + KC - 1) / KC;
  LLVMValueRef kb = llvm_loop_begin(e, &lkb, i64c(e, 0), i64c(e, nkb));
  LLVMValueRef k0 = LLVMBuildMul(b, kb, i64c(e, KC), "");
  LLVMValueRef kc = imin(e, i64c(e, KC), LLVMBuildSub(b, i64c(e, K), k0, ""));
  LLVMValueRef first = LLVMBuildICmp(b, LLVMIntEQ, kb, i64c(e, 0), "");
  /* pack A: Ap[(it*kc + kk)*MR + r] = A[row][k0 + kk], row = (t0+it)*MR + r */
  {
    LLVMValueRef it = llvm_loop_begin(e, &lit, i64c(e, 0), nt);
    LLVMValueRef row0 = LLVMBuildMul(b, LLVMBuildAdd(b, t0, it, ""), i64c(e, MR), "");
    LLVMValueRef rr = llvm_loop_begin(e, &lr, i64c(e, 0), i64c(e, MR));
    LLVMValueRef row = LLVMBuildAdd(b, row0, rr, "");
    LLVMValueRef in = LLVMBuildICmp(b, LLVMIntSLT, row, i64c(e, M), "");
    LLVMValueRef rowc = LLVMBuildSelect(b, in, row, i64c(e, 0), "");
    arow ar;
    a_row(e, cv, abase, rowc, k0, K, &ar);
    LLVMValueRef dst0 = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildMul(b, it, kc, ""), i64c(e, MR), ""), rr, "");
    if (!cv) {
      LLVMValueRef kk = llvm_loop_begin(e, &lkk, i64c(e, 0), kc);
      LLVMValueRef v = a_elem(e, cv, A, &ar, k0, kk, in);
      stv(e, v, fptr(e, e->t_f32, ap, LLVMBuildAdd(b, dst0, LLVMBuildMul(b, kk, i64c(e, MR), ""), "")), 4);
      llvm_loop_end(e, &lkk);
    } else {
      /* K blocks hold whole window positions (KC is a multiple of cin): per
       * position one bounds check, then a contiguous run of features. */
      loop lw;
      LLVMValueRef wp = llvm_loop_begin(e, &lw, i64c(e, 0), LLVMBuildUDiv(b, kc, i64c(e, cv->cin), ""));
      LLVMValueRef rem = LLVMBuildAdd(b, LLVMBuildUDiv(b, k0, i64c(e, cv->cin), ""), wp, "");
      LLVMValueRef ok = in, off = ar.cbase;
      for (int i = cv->ns - 1; i >= 0; i--) {
        LLVMValueRef w = i > 0 ? LLVMBuildURem(b, rem, i64c(e, cv->ksz[i]), "") : rem;
        if (i > 0) rem = LLVMBuildUDiv(b, rem, i64c(e, cv->ksz[i]), "");
        LLVMValueRef p = LLVMBuildAdd(b, ar.pbase[i], LLVMBuildMul(b, w, i64c(e, cv->rdil[i]), ""), "");
        ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntULT, p, i64c(e, cv->isz[i]), ""), "");
        off = LLVMBuildAdd(b, off, LLVMBuildMul(b, p, i64c(e, cv->s_sp[i]), ""), "");
      }
      off = LLVMBuildSelect(b, ok, off, i64c(e, 0), "");
      LLVMValueRef d1 = LLVMBuildAdd(b, dst0, LLVMBuildMul(b, LLVMBuildMul(b, wp, i64c(e, cv->cin), ""),
                                                          i64c(e, MR), ""), "");
      LLVMValueRef ci = llvm_loop_begin(e, &lkk, i64c(e, 0), i64c(e, cv->cin));
      LLVMValueRef src = LLVMBuildAdd(b, off, LLVMBuildMul(b, ci, i64c(e, cv->s_c), ""), "");
      LLVMValueRef v = llvm_convert(e, A->type, IR_F32, llvm_load(e, A->type, llvm_buf_ptr(e, A), src));
      v = LLVMBuildSelect(b, ok, v, LLVMConstReal(e->t_f32, 0), "");
      stv(e, v, fptr(e, e->t_f32, ap, LLVMBuildAdd(b, d1, LLVMBuildMul(b, ci, i64c(e, MR), ""), "")), 4);
      llvm_loop_end(e, &lkk);
      llvm_loop_end(e, &lw);
    }
    llvm_loop_end(e, &lr);
    llvm_loop_end(e, &lit);
  }
  /* Sweep the B panels in chunks of JC: for each chunk, each A tile walks
   * its C rows along JC panels (C streams along rows; the chunk of B, JC x
   * kc x NR floats, stays in L2 and the A tile in L1). */
  loop ljc;
  int64_t Nt = Npad / NR;
  LLVMValueRef jc = llvm_loop_begin(e, &ljc, i64c(e, 0), i64c(e, (Nt + JC - 1) / JC));
  LLVMValueRef j0 = LLVMBuildMul(b, jc, i64c(e, JC), "");
  LLVMValueRef j1 = imin(e, LLVMBuildAdd(b, j0, i64c(e, JC), ""), i64c(e, Nt));
  LLVMValueRef it = llvm_loop_begin(e, &lit2, i64c(e, 0), nt);
  LLVMValueRef jt = llvm_loop_begin(e, &ljt, j0, j1);
  LLVMValueRef bpo = LLVMBuildAdd(b, LLVMBuildMul(b, bi, i64c(e, K * Npad), ""),
                                  LLVMBuildMul(b, k0, i64c(e, Npad), ""), "");
  bpo = LLVMBuildAdd(b, bpo, LLVMBuildMul(b, LLVMBuildMul(b, jt, kc, ""), i64c(e, NR), ""), "");
  LLVMValueRef apo = LLVMBuildMul(b, LLVMBuildMul(b, it, kc, ""), i64c(e, MR), "");
  LLVMValueRef crow = LLVMBuildAdd(b, LLVMBuildMul(b, bi, i64c(e, Mpad), ""),
                                   LLVMBuildMul(b, LLVMBuildAdd(b, t0, it, ""), i64c(e, MR), ""), "");
  LLVMValueRef co = LLVMBuildAdd(b, LLVMBuildMul(b, crow, i64c(e, Npad), ""), LLVMBuildMul(b, jt, i64c(e, NR), ""), "");
  LLVMValueRef zero = LLVMConstNull(vt);
  for (int r = 0; r < MR; r++)
    for (int v = 0; v < 2; v++) {
      LLVMValueRef p = fptr(e, vt, llvm_buf_ptr(e, Cp), LLVMBuildAdd(b, co, i64c(e, r * Npad + v * VL), ""));
      LLVMValueRef old = ldv(e, vt, p, 4);
      LLVMBuildStore(b, LLVMBuildSelect(b, first, zero, old, ""), acc[r * 2 + v]);
    }
  LLVMValueRef kk = llvm_loop_begin(e, &lk, i64c(e, 0), kc);
  LLVMValueRef bo = LLVMBuildAdd(b, bpo, LLVMBuildMul(b, kk, i64c(e, NR), ""), "");
  LLVMValueRef bv[2];
  for (int v = 0; v < 2; v++)
    bv[v] = ldv(e, vt, fptr(e, vt, llvm_buf_ptr(e, Bp), LLVMBuildAdd(b, bo, i64c(e, v * VL), "")), 4);
  LLVMValueRef ao = LLVMBuildAdd(b, apo, LLVMBuildMul(b, kk, i64c(e, MR), ""), "");
  LLVMValueRef undef = LLVMGetUndef(vt);
  LLVMValueRef mask = LLVMConstNull(LLVMVectorType(e->t_i32, (unsigned)VL));
  for (int r = 0; r < MR; r++) {
    LLVMValueRef a = ldv(e, e->t_f32, fptr(e, e->t_f32, ap, LLVMBuildAdd(b, ao, i64c(e, r), "")), 4);
    LLVMValueRef s = LLVMBuildInsertElement(b, undef, a, LLVMConstInt(e->t_i32, 0, 0), "");
    s = LLVMBuildShuffleVector(b, s, undef, mask, "");
    for (int v = 0; v < 2; v++) {
      LLVMValueRef args[3] = {s, bv[v], LLVMBuildLoad2(b, vt, acc[r * 2 + v], "")};
      LLVMBuildStore(b, llvm_call_intrinsic(e, "llvm.fma", vt, args, 3), acc[r * 2 + v]);
    }
  }
  llvm_loop_end(e, &lk);
  for (int r = 0; r < MR; r++)
    for (int v = 0; v < 2; v++) {
      LLVMValueRef p = fptr(e, vt, llvm_buf_ptr(e, Cp), LLVMBuildAdd(b, co, i64c(e, r * Npad + v * VL), ""));
      stv(e, LLVMBuildLoad2(b, vt, acc[r * 2 + v], ""), p, 4);
    }
  llvm_loop_end(e, &ljt);
  llvm_loop_end(e, &lit2);
  llvm_loop_end(e, &ljc);
  llvm_loop_end(e, &lkb);
  LLVMBuildStore(b, LLVMBuildAdd(b, pos, nt, ""), posv);
  llvm_level_pop(e);
  LLVMBuildBr(b, wh);
  LLVMPositionBuilderAtEnd(b, wx);
  llvm_kernel_end(e, &k, NB * Mt, (double)NB * (double)Mpad * (double)Npad * (double)K);
}

/* C[b][i][j] = Cp[b][i][j] for the valid part. */
static void unpad(emitter *e, cbuf *Cp, cbuf *C, int64_t NB, int64_t M, int64_t N, int64_t Mpad, int64_t Npad) {
  LLVMBuilderRef b = e->b;
  cbuf *bufs[2] = {Cp, C};
  kfn k;
  llvm_kernel_begin(e, &k, bufs, 2, arena_printf(e->a, "k%d.unpad", e->nkernels));
  loop lr, lj;
  LLVMValueRef r = llvm_loop_begin(e, &lr, k.lo, k.hi);
  LLVMValueRef bi = LLVMBuildUDiv(b, r, i64c(e, M), "");
  LLVMValueRef i = LLVMBuildURem(b, r, i64c(e, M), "");
  LLVMValueRef so = LLVMBuildMul(b, LLVMBuildAdd(b, LLVMBuildMul(b, bi, i64c(e, Mpad), ""), i, ""), i64c(e, Npad), "");
  LLVMValueRef dso = LLVMBuildMul(b, r, i64c(e, N), "");
  LLVMValueRef j = llvm_loop_begin(e, &lj, i64c(e, 0), i64c(e, N));
  LLVMValueRef v = ldv(e, e->t_f32, fptr(e, e->t_f32, llvm_buf_ptr(e, Cp), LLVMBuildAdd(b, so, j, "")), 4);
  stv(e, v, fptr(e, e->t_f32, llvm_buf_ptr(e, C), LLVMBuildAdd(b, dso, j, "")), 4);
  llvm_loop_end(e, &lj);
  llvm_loop_end(e, &lr);
  llvm_kernel_end(e, &k, NB * M, (double)(NB * M * N));
}

static void gemm(emitter *e, const gemm_conv *cv, cbuf *A, cbuf *B, cbuf *C, int64_t NB, int64_t M, int64_t N, int64_t K) {
  bool wide = llvm_gemm_wide(e);
  int VL = wide ? 16 : 8, MR = wide ? 12 : 6, NR = 2 * VL;
  int64_t Mt = (M + MR - 1) / MR, Nt = (N + NR - 1) / NR;
  int64_t Mpad = Mt * MR, Npad = Nt * NR;
  ir_shape bs = ir_shape_array(IR_F32, 1, &(int64_t){NB * K * Npad});
  cbuf *Bp = llvm_scratch_buf(e, &bs);
  cbuf *Cp = C;
  if (Mpad != M || Npad != N) {
    ir_shape cs = ir_shape_array(IR_F32, 1, &(int64_t){NB * Mpad * Npad});
    Cp = llvm_scratch_buf(e, &cs);
  }
  int64_t KC = KC_DEFAULT;
  if (cv) KC = cv->cin * (cv->cin < KC_DEFAULT ? KC_DEFAULT / cv->cin : 1);
  pack_b(e, B, Bp, NB, K, N, Npad, NR, KC);
  main_kernel(e, cv, A, Bp, Cp, NB, M, K, Mt, Mpad, Npad, VL, MR, KC);
  if (Cp != C) unpad(e, Cp, C, NB, M, N, Mpad, Npad);
}

void llvm_emit_gemm(emitter *e, cbuf *A, cbuf *B, cbuf *C, int64_t NB, int64_t M, int64_t N, int64_t K) {
  gemm(e, NULL, A, B, C, NB, M, N, K);
}

void llvm_emit_gemm_conv(emitter *e, const gemm_conv *cv, cbuf *B, cbuf *C, int64_t M, int64_t N, int64_t K) {
  gemm(e, cv, cv->in, B, C, 1, M, N, K);
}
