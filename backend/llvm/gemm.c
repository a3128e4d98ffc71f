/* gemm.c: the packed, register-tiled, cache-blocked f32 matrix multiply,
 * emitted as LLVM IR with explicit vector types (GotoBLAS / BLIS structure).
 *
 *   C[b] (M x N) = A[b] (M x K) * B[b] (K x N), all row-major f32.
 *
 * Register tile: MR rows x NR = NV vectors of VL floats (AVX-512: 12 x 32
 * in 24 zmm accumulators, or 16 x 16 when N <= 16; otherwise 6 x 16 / 12 x
 * 8 in ymm). K is cut into the fewest equal blocks of at most KC_DEFAULT. B
 * is packed once (in parallel) as, per batch and K block, NR-wide column
 * panels [kc][NR] (zero-padded to a multiple of NR); the main kernel splits
 * the MR-row tiles of all batches across threads, and for each block of up
 * to TPB tiles and each K block packs those rows of A as [kc][MR]
 * (zero-padded), then sweeps the B panels in chunks of JC: each A tile
 * (kc x MR, in L1) meets the chunk's panels (in L2), each micro-kernel call
 * doing kc rank-1 updates of its accumulators with fused multiply-adds.
 *
 * Each output element receives its products in ascending k, one fused
 * multiply-add each, from +0 (the first K block starts at zero, later ones
 * reload the partial sums). That is the MXU's contract for bf16 operands,
 * so under TPU numerics this kernel is exact; under NATIVE numerics it
 * differs from the evaluator's separate multiply and add in the last bits.
 * Partial sums live in C itself: tiles store only their rows below M and
 * columns below N (the last panel stores lane by lane), so no padded copy
 * of C exists. After the last K block an optional epilogue (bias, relu,
 * scale: gemm_epi) is applied to the accumulators before the store, so a
 * dense layer's dot + bias + relu is one pass over C.
 *
 * Convolutions use the same kernel as an implicit GEMM: the A-packing step
 * gathers image patches from the input (zero outside it) instead of reading
 * a materialised im2col matrix. */
#include "backend/llvm/lower.h"

enum { KC_DEFAULT = 384, TPB = 16, JC = 8 };

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

void llvm_fma_splat(emitter *e, LLVMTypeRef vt, int VL, LLVMValueRef x, const LLVMValueRef *w, int n,
                    const LLVMValueRef *acc) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef undef = LLVMGetUndef(vt);
  LLVMValueRef mask = LLVMConstNull(LLVMVectorType(e->t_i32, (unsigned)VL));
  LLVMValueRef s = LLVMBuildInsertElement(b, undef, x, LLVMConstInt(e->t_i32, 0, 0), "");
  s = LLVMBuildShuffleVector(b, s, undef, mask, "");
  for (int v = 0; v < n; v++) {
    LLVMValueRef args[3] = {s, w[v], LLVMBuildLoad2(b, vt, acc[v], "")};
    LLVMBuildStore(b, llvm_call_intrinsic(e, "llvm.fma", vt, args, 3), acc[v]);
  }
}

static bool features_wide(const char *features) {
  char *host = NULL;
  const char *f = features ? features : (host = LLVMGetHostCPUFeatures());
  bool wide = strstr(f, "+avx512f") != NULL;
  if (host) LLVMDisposeMessage(host);
  return wide;
}

bool llvm_gemm_wide(const emitter *e) { return features_wide(e->opt.cpu_features); }

void llvm_kernel_isa(const char *cpu_name, const char *features, char *buf, size_t n) {
  char *host = cpu_name ? NULL : LLVMGetHostCPUName();
  char *hostf = features ? NULL : LLVMGetHostCPUFeatures();
  const char *f = features ? features : hostf;
  bool wide = strstr(f, "+avx512f") != NULL, avx2 = strstr(f, "+avx2") && strstr(f, "+fma");
  snprintf(buf, n, "%s: f32 GEMM and convolution micro-kernels on %d-lane vectors (%s; %s register "
           "tiles)", cpu_name ? cpu_name : host, wide ? 16 : 8,
           wide ? "avx512f" : avx2 ? "avx2 and fma" : "no avx2: LLVM splits them",
           wide ? "12x32, 8x32 and 8x16" : "6x16 and 8x8");
  if (host) LLVMDisposeMessage(host);
  if (hostf) LLVMDisposeMessage(hostf);
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

/* The shape of one GEMM, all compile-time. */
typedef struct geom {
  int VL, NV, MR, NR;  /* vector width, vectors per B panel, tile rows, panel width */
  int64_t NB, M, N, K, Mt, Nt, KC, nkb;
} geom;

/* A vector of VL floats at element offset off of base, of which only the
 * first `valid` lanes (a compile-time count) are inside the row: the rest
 * read as zero. */
static LLVMValueRef ld_part(emitter *e, LLVMTypeRef vt, LLVMValueRef base, LLVMValueRef off, int valid, int VL) {
  if (valid == VL) return ldv(e, vt, fptr(e, vt, base, off), 4);
  LLVMValueRef v = LLVMConstNull(vt);
  for (int l = 0; l < valid; l++) {
    LLVMValueRef x = ldv(e, e->t_f32, fptr(e, e->t_f32, base, LLVMBuildAdd(e->b, off, i64c(e, l), "")), 4);
    v = LLVMBuildInsertElement(e->b, v, x, LLVMConstInt(e->t_i32, (unsigned)l, 0), "");
  }
  return v;
}

/* Stores the first `valid` lanes of v at element offset off of base. */
static void st_part(emitter *e, LLVMValueRef v, LLVMValueRef base, LLVMValueRef off, int valid, int VL) {
  if (valid == VL) {
    stv(e, v, fptr(e, LLVMTypeOf(v), base, off), 4);
    return;
  }
  for (int l = 0; l < valid; l++) {
    LLVMValueRef x = LLVMBuildExtractElement(e->b, v, LLVMConstInt(e->t_i32, (unsigned)l, 0), "");
    stv(e, x, fptr(e, e->t_f32, base, LLVMBuildAdd(e->b, off, i64c(e, l), "")), 4);
  }
}

int llvm_gemm_epi_bufs(const gemm_epi *epi, cbuf **bufs, int nbufs) {
  for (int i = 0; epi && i < epi->n; i++) {
    bool dup = epi->ops[i].x->kind == CB_CONST; /* read through its global */
    for (int j = 0; j < nbufs && !dup; j++) dup = bufs[j] == epi->ops[i].x;
    if (!dup) bufs[nbufs++] = epi->ops[i].x;
  }
  return nbufs;
}

LLVMValueRef llvm_gemm_epi_apply(emitter *e, const gemm_epi *epi, LLVMValueRef v, LLVMValueRef col, int valid) {
  LLVMTypeRef vt = LLVMTypeOf(v);
  int VL = (int)LLVMGetVectorSize(vt);
  for (int i = 0; i < epi->n; i++) {
    const gemm_epi_op *o = &epi->ops[i];
    LLVMValueRef x;
    if (o->col) {
      x = ld_part(e, vt, llvm_buf_ptr(e, o->x), col, valid, VL);
    } else {
      x = ldv(e, e->t_f32, fptr(e, e->t_f32, llvm_buf_ptr(e, o->x), i64c(e, 0)), 4);
      x = LLVMBuildInsertElement(e->b, LLVMGetUndef(vt), x, LLVMConstInt(e->t_i32, 0, 0), "");
      x = LLVMBuildShuffleVector(e->b, x, LLVMGetUndef(vt), LLVMConstNull(LLVMVectorType(e->t_i32, (unsigned)VL)), "");
    }
    v = o->swap ? llvm_binary(e, o->op, IR_F32, x, v) : llvm_binary(e, o->op, IR_F32, v, x);
  }
  return v;
}

typedef enum tile_io { IO_NONE, IO_LOAD, IO_STORE, IO_STORE_EPI } tile_io;

/* Moves the MR x NR tile of C whose top-left element is row `row0` (of
 * all batches' rows), column jt*NR between C and the accumulators. Rows at
 * or beyond M within the batch (rowin + r >= M) are skipped; `valid` gives
 * each vector's lanes inside the row. */
static void tile_rows(emitter *e, const geom *g, tile_io io, const gemm_epi *epi, cbuf *C, LLVMValueRef *acc,
                      LLVMValueRef row0, LLVMValueRef rowin, LLVMValueRef col0, const int *valid) {
  LLVMBuilderRef b = e->b;
  LLVMTypeRef vt = LLVMVectorType(e->t_f32, (unsigned)g->VL);
  for (int r = 0; r < g->MR; r++) {
    LLVMBasicBlockRef next = NULL;
    if (g->M % g->MR != 0) {
      LLVMBasicBlockRef in = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "row.in");
      next = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "row.next");
      LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildAdd(b, rowin, i64c(e, r), ""), i64c(e, g->M), ""),
                      in, next);
      LLVMPositionBuilderAtEnd(b, in);
    }
    LLVMValueRef roff = LLVMBuildMul(b, LLVMBuildAdd(b, row0, i64c(e, r), ""), i64c(e, g->N), "");
    for (int v = 0; v < g->NV; v++) {
      if (valid[v] == 0) continue;
      LLVMValueRef col = LLVMBuildAdd(b, col0, i64c(e, v * g->VL), "");
      LLVMValueRef off = LLVMBuildAdd(b, roff, col, "");
      LLVMValueRef a = acc[r * g->NV + v];
      if (io == IO_LOAD) {
        LLVMBuildStore(b, ld_part(e, vt, llvm_buf_ptr(e, C), off, valid[v], g->VL), a);
      } else {
        LLVMValueRef x = LLVMBuildLoad2(b, vt, a, "");
        if (io == IO_STORE_EPI) x = llvm_gemm_epi_apply(e, epi, x, col, valid[v]);
        st_part(e, x, llvm_buf_ptr(e, C), off, valid[v], g->VL);
      }
    }
    if (next) {
      LLVMBuildBr(b, next);
      LLVMPositionBuilderAtEnd(b, next);
    }
  }
}

/* tile_rows for panel jt, with the lanes beyond N masked on the last panel. */
static void tile_io_panel(emitter *e, const geom *g, tile_io io, const gemm_epi *epi, cbuf *C, LLVMValueRef *acc,
                          LLVMValueRef row0, LLVMValueRef rowin, LLVMValueRef jt) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef col0 = LLVMBuildMul(b, jt, i64c(e, g->NR), "");
  int full[2] = {g->VL, g->VL}, part[2];
  int64_t rest = g->N - (g->Nt - 1) * g->NR;
  for (int v = 0; v < g->NV; v++) {
    int64_t n = rest - (int64_t)v * g->VL;
    part[v] = (int)(n < 0 ? 0 : n > g->VL ? g->VL : n);
  }
  if (rest == g->NR) {
    tile_rows(e, g, io, epi, C, acc, row0, rowin, col0, full);
    return;
  }
  LLVMBasicBlockRef bp = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "panel.part");
  LLVMBasicBlockRef bf = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "panel.full");
  LLVMBasicBlockRef bj = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "panel.join");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, jt, i64c(e, g->Nt - 1), ""), bp, bf);
  LLVMPositionBuilderAtEnd(b, bp);
  tile_rows(e, g, io, epi, C, acc, row0, rowin, col0, part);
  LLVMBuildBr(b, bj);
  LLVMPositionBuilderAtEnd(b, bf);
  tile_rows(e, g, io, epi, C, acc, row0, rowin, col0, full);
  LLVMBuildBr(b, bj);
  LLVMPositionBuilderAtEnd(b, bj);
}

/* if (cond) tile_io_panel(yes) else tile_io_panel(no), no = IO_NONE: nothing. */
static void tile_io_if(emitter *e, const geom *g, LLVMValueRef cond, tile_io yes, tile_io no, const gemm_epi *epi,
                       cbuf *C, LLVMValueRef *acc, LLVMValueRef row0, LLVMValueRef rowin, LLVMValueRef jt) {
  LLVMBuilderRef b = e->b;
  LLVMBasicBlockRef by = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "tile.then");
  LLVMBasicBlockRef bn = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "tile.else");
  LLVMBasicBlockRef bj = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "tile.join");
  LLVMBuildCondBr(b, cond, by, bn);
  for (int side = 0; side < 2; side++) {
    LLVMPositionBuilderAtEnd(b, side == 0 ? by : bn);
    tile_io io = side == 0 ? yes : no;
    if (io != IO_NONE) tile_io_panel(e, g, io, epi, C, acc, row0, rowin, jt);
    LLVMBuildBr(b, bj);
  }
  LLVMPositionBuilderAtEnd(b, bj);
}

/* The main kernel: rows are the MR-row tiles of all batches. C is the
 * output itself: the first K block starts from zero, later ones reload the
 * partial sums, the last one applies the epilogue as it stores. */
/* Packs the A rows of tiles t0 .. t0 + nt - 1 (MR rows each, rows past M
 * zero) for the K block [k0, k0 + kc): Ap[(it*kc + kk)*MR + r] =
 * A[row][k0 + kk], row = (t0+it)*MR + r; with cv, A is the convolution's
 * input read as its patch matrix. */
static void pack_a(emitter *e, const geom *g, const gemm_conv *cv, cbuf *A, LLVMValueRef ap, LLVMValueRef abase,
                   LLVMValueRef t0, LLVMValueRef nt, LLVMValueRef k0, LLVMValueRef kc) {
  LLVMBuilderRef b = e->b;
  int MR = g->MR;
  int64_t M = g->M, K = g->K;
  loop lit, lkk, lr;
  LLVMValueRef it = llvm_loop_begin(e, &lit, i64c(e, 0), nt);
  LLVMValueRef row0 = LLVMBuildMul(b, LLVMBuildAdd(b, t0, it, ""), i64c(e, MR), "");
  LLVMBasicBlockRef slow = NULL, packed = NULL;
  if (cv && cv->wgrad) {
    llvm_conv_wgrad_pack_a(e, cv, A, ap, row0, LLVMBuildMul(b, LLVMBuildMul(b, it, kc, ""), i64c(e, MR), ""), k0,
                           kc, MR, M);
    llvm_loop_end(e, &lit);
    return;
  }
  if (!cv) {
    /* A whole tile of a row-major A: per k, MR loads at constant offsets
     * and MR consecutive stores (no per-element bounds selects, which
     * LLVM would turn into masked scatters). */
    LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "packa.fast");
    slow = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "packa.edge");
    packed = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "packa.done");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLE, LLVMBuildAdd(b, row0, i64c(e, MR), ""), i64c(e, M), ""),
                    fast, slow);
    LLVMPositionBuilderAtEnd(b, fast);
    llvm_level_push(e);
    LLVMValueRef src0 = LLVMBuildAdd(b, abase, LLVMBuildAdd(b, LLVMBuildMul(b, row0, i64c(e, K), ""), k0, ""), "");
    LLVMValueRef dst = LLVMBuildMul(b, LLVMBuildMul(b, it, kc, ""), i64c(e, MR), "");
    LLVMValueRef kk = llvm_loop_begin(e, &lkk, i64c(e, 0), kc);
    LLVMValueRef src = LLVMBuildAdd(b, src0, kk, "");
    LLVMValueRef d = LLVMBuildAdd(b, dst, LLVMBuildMul(b, kk, i64c(e, MR), ""), "");
    for (int r = 0; r < MR; r++) {
      LLVMValueRef v = ldv(e, e->t_f32, fptr(e, e->t_f32, llvm_buf_ptr(e, A), LLVMBuildAdd(b, src, i64c(e, r * K), "")), 4);
      stv(e, v, fptr(e, e->t_f32, ap, LLVMBuildAdd(b, d, i64c(e, r), "")), 4);
    }
    llvm_loop_end(e, &lkk);
    llvm_level_pop(e);
    LLVMBuildBr(b, packed);
    LLVMPositionBuilderAtEnd(b, slow);
    llvm_level_push(e);
  }
  LLVMValueRef rr = llvm_loop_begin(e, &lr, i64c(e, 0), i64c(e, MR));
  LLVMValueRef row = LLVMBuildAdd(b, row0, rr, "");
  LLVMValueRef in = LLVMBuildICmp(b, LLVMIntSLT, row, i64c(e, M), "");
  LLVMValueRef rowc = LLVMBuildSelect(b, in, row, i64c(e, 0), "");
  arow ar;
  a_row(e, cv, abase, rowc, k0, K, &ar);
  LLVMValueRef dst0 = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildMul(b, it, kc, ""), i64c(e, MR), ""), rr, "");
  if (!cv) {
    LLVMValueRef kk = llvm_loop_begin(e, &lkk, i64c(e, 0), kc);
    LLVMValueRef v = ldv(e, e->t_f32, fptr(e, e->t_f32, llvm_buf_ptr(e, A), LLVMBuildAdd(b, ar.base, kk, "")), 4);
    v = LLVMBuildSelect(b, in, v, LLVMConstReal(e->t_f32, 0), "");
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
  if (!cv) {
    llvm_level_pop(e);
    LLVMBuildBr(b, packed);
    LLVMPositionBuilderAtEnd(b, packed);
  }
  llvm_loop_end(e, &lit);
}

static void main_kernel(emitter *e, const geom *g, const gemm_conv *cv, cbuf *A, cbuf *Bp, cbuf *C,
                        const gemm_epi *epi) {
  LLVMBuilderRef b = e->b;
  int VL = g->VL, MR = g->MR, NR = g->NR, NV = g->NV;
  int64_t M = g->M, K = g->K, Mt = g->Mt, Nt = g->Nt, KC = g->KC;
  LLVMTypeRef vt = LLVMVectorType(e->t_f32, (unsigned)VL);
  cbuf *bufs[3 + GEMM_EPI_MAX];
  int nbufs = 0;
  bufs[nbufs++] = A, bufs[nbufs++] = Bp, bufs[nbufs++] = C;
  nbufs = llvm_gemm_epi_bufs(epi, bufs, nbufs);
  kfn k;
  llvm_kernel_begin(e, &k, bufs, nbufs, arena_printf(e->a, "k%d.gemm", e->nkernels));
  LLVMValueRef ap_buf = llvm_alloca(e, LLVMArrayType(e->t_f32, (unsigned)(TPB * MR * KC)));
  /* TPB x MR x KC floats on the stack: at most 1 MiB (KC <= 1024). */
  LLVMSetAlignment(ap_buf, 64);
  LLVMValueRef ap = LLVMBuildPointerCast(b, ap_buf, e->t_ptr, "");
  LLVMValueRef acc[GEMM_MAX_ACC];
  for (int i = 0; i < MR * NV; i++) acc[i] = llvm_alloca(e, vt);
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
  loop lkb, ljt, lit2, lk;
  LLVMValueRef kb = llvm_loop_begin(e, &lkb, i64c(e, 0), i64c(e, g->nkb));
  LLVMValueRef k0 = LLVMBuildMul(b, kb, i64c(e, KC), "");
  LLVMValueRef kc = imin(e, i64c(e, KC), LLVMBuildSub(b, i64c(e, K), k0, ""));
  LLVMValueRef first = LLVMBuildICmp(b, LLVMIntEQ, kb, i64c(e, 0), "");
  LLVMValueRef last = LLVMBuildICmp(b, LLVMIntEQ, kb, i64c(e, g->nkb - 1), "");
  pack_a(e, g, cv, A, ap, abase, t0, nt, k0, kc);
  /* Sweep the B panels in chunks of JC: for each chunk, each A tile walks
   * its C rows along JC panels (C streams along rows; the chunk of B, JC x
   * kc x NR floats, stays in L2 and the A tile in L1). */
  loop ljc;
  LLVMValueRef jc = llvm_loop_begin(e, &ljc, i64c(e, 0), i64c(e, (Nt + JC - 1) / JC));
  LLVMValueRef j0 = LLVMBuildMul(b, jc, i64c(e, JC), "");
  LLVMValueRef j1 = imin(e, LLVMBuildAdd(b, j0, i64c(e, JC), ""), i64c(e, Nt));
  LLVMValueRef it = llvm_loop_begin(e, &lit2, i64c(e, 0), nt);
  LLVMValueRef jt = llvm_loop_begin(e, &ljt, j0, j1);
  LLVMValueRef bpo = LLVMBuildAdd(b, LLVMBuildMul(b, bi, i64c(e, K * Nt * NR), ""),
                                  LLVMBuildMul(b, k0, i64c(e, Nt * NR), ""), "");
  bpo = LLVMBuildAdd(b, bpo, LLVMBuildMul(b, LLVMBuildMul(b, jt, kc, ""), i64c(e, NR), ""), "");
  LLVMValueRef apo = LLVMBuildMul(b, LLVMBuildMul(b, it, kc, ""), i64c(e, MR), "");
  LLVMValueRef rowin = LLVMBuildMul(b, LLVMBuildAdd(b, t0, it, ""), i64c(e, MR), "");
  LLVMValueRef row0 = LLVMBuildAdd(b, LLVMBuildMul(b, bi, i64c(e, M), ""), rowin, "");
  LLVMValueRef zero = LLVMConstNull(vt);
  for (int i = 0; i < MR * NV; i++) LLVMBuildStore(b, zero, acc[i]);
  tile_io_if(e, g, LLVMBuildNot(b, first, ""), IO_LOAD, IO_NONE, epi, C, acc, row0, rowin, jt);
  LLVMValueRef kk = llvm_loop_begin(e, &lk, i64c(e, 0), kc);
  LLVMValueRef bo = LLVMBuildAdd(b, bpo, LLVMBuildMul(b, kk, i64c(e, NR), ""), "");
  LLVMValueRef bv[2];
  for (int v = 0; v < NV; v++)
    bv[v] = ldv(e, vt, fptr(e, vt, llvm_buf_ptr(e, Bp), LLVMBuildAdd(b, bo, i64c(e, v * VL), "")), 4);
  LLVMValueRef ao = LLVMBuildAdd(b, apo, LLVMBuildMul(b, kk, i64c(e, MR), ""), "");
  for (int r = 0; r < MR; r++) {
    LLVMValueRef a = ldv(e, e->t_f32, fptr(e, e->t_f32, ap, LLVMBuildAdd(b, ao, i64c(e, r), "")), 4);
    llvm_fma_splat(e, vt, VL, a, bv, NV, acc + r * NV);
  }
  llvm_loop_end(e, &lk);
  if (epi && epi->n > 0) tile_io_if(e, g, last, IO_STORE_EPI, IO_STORE, epi, C, acc, row0, rowin, jt);
  else tile_io_panel(e, g, IO_STORE, epi, C, acc, row0, rowin, jt);
  llvm_loop_end(e, &ljt);
  llvm_loop_end(e, &lit2);
  llvm_loop_end(e, &ljc);
  llvm_loop_end(e, &lkb);
  LLVMBuildStore(b, LLVMBuildAdd(b, pos, nt, ""), posv);
  llvm_level_pop(e);
  LLVMBuildBr(b, wh);
  LLVMPositionBuilderAtEnd(b, wx);
  llvm_kernel_end(e, &k, g->NB * Mt, (double)g->NB * (double)(Mt * MR) * (double)(Nt * NR) * (double)K);
}

/* The tile shape: 2 vectors of columns per panel (12 x 32 on AVX-512,
 * 6 x 16 otherwise), or 1 when N fits one vector (16 x 16 / 12 x 8), so a
 * narrow output (N = 10, a classifier's last layer) does not pay for 32
 * columns. K blocks: the fewest blocks of at most KC_DEFAULT (whole window
 * positions for convolutions), of equal size. */
static void plan_geom(emitter *e, const gemm_conv *cv, int64_t NB, int64_t M, int64_t N, int64_t K, geom *g) {
  bool wide = llvm_gemm_wide(e);
  g->VL = wide ? 16 : 8;
  g->NV = N <= g->VL ? 1 : 2;
  /* AVX-512: 12 rows unless that leaves more than 1% of the rows padding
   * (M = 256: 264 computed), then 8 (16 accumulators; also what a narrow
   * N gets). Measured on Zen 5 (thread CPU time): 256 x 1024 x 1024 in
   * 2.27 ms with 8 rows against 2.42 ms with 12; 256 x 1024 x 10 in 0.059
   * ms with 8 x 16 against 0.114 ms with 16 x 16 (16 rows 4 KiB apart
   * thrash one L1 set while A is packed); 2048^3 2% faster with 12. */
  if (wide) g->MR = g->NV == 2 && (M + 11) / 12 * 12 * 100 <= M * 101 ? 12 : 8;
  else g->MR = g->NV == 2 ? 6 : 8;
  if (cv && cv->mr == 8) g->MR = 8;
  g->NR = g->NV * g->VL;
  g->NB = NB, g->M = M, g->N = N, g->K = K;
  g->Mt = (M + g->MR - 1) / g->MR;
  g->Nt = (N + g->NR - 1) / g->NR;
  int64_t unit = cv ? cv->cin : 1;
  int64_t per = KC_DEFAULT / unit > 0 ? KC_DEFAULT / unit : 1, units = K / unit;
  g->nkb = (units + per - 1) / per;
  g->KC = (units + g->nkb - 1) / g->nkb * unit;
}

static void gemm(emitter *e, const gemm_conv *cv, cbuf *A, cbuf *B, cbuf *C, int64_t NB, int64_t M, int64_t N,
                 int64_t K, const gemm_epi *epi) {
  if (!cv && llvm_emit_lk_gemm(e, A, B, C, NB, M, N, K, epi)) return;
  geom g;
  plan_geom(e, cv, NB, M, N, K, &g);
  ir_shape bs = ir_shape_array(IR_F32, 1, &(int64_t){NB * K * g.Nt * g.NR});
  cbuf *Bp = llvm_scratch_buf(e, &bs);
  pack_b(e, B, Bp, NB, K, N, g.Nt * g.NR, g.NR, g.KC);
  main_kernel(e, &g, cv, A, Bp, C, epi);
}

void llvm_emit_gemm(emitter *e, cbuf *A, cbuf *B, cbuf *C, int64_t NB, int64_t M, int64_t N, int64_t K) {
  gemm(e, NULL, A, B, C, NB, M, N, K, NULL);
}

void llvm_emit_gemm_epi(emitter *e, cbuf *A, cbuf *B, cbuf *C, int64_t NB, int64_t M, int64_t N, int64_t K,
                        const gemm_epi *epi) {
  gemm(e, NULL, A, B, C, NB, M, N, K, epi);
}

void llvm_emit_gemm_conv(emitter *e, const gemm_conv *cv, cbuf *B, cbuf *C, int64_t M, int64_t N, int64_t K) {
  gemm(e, cv, cv->in, B, C, 1, M, N, K, NULL);
}
