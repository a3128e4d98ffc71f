/* dot.c: dot_general on float operands as batched matrix products.
 *
 * Every float dot is brought to C[b] = A[b] (MxK) * B[b] (KxN), row-major:
 * the output order of dot_general is exactly (batch, lhs free, rhs free), so
 * C is the output when it is f32; operands not already in that order (or
 * not f32, or under TPU numerics) are packed into f32 scratch first (TPU
 * numerics: the MXU's passes, docs/numerics.md section 2: each operand's
 * bf16 parts, bf16 subnormals read as zero, the 1, 3 or 6 passes laid side
 * by side along K, so one ascending-k sum runs them in order). Then, by
 * numerics and size:
 *   - NATIVE with use_blas, JIT, OpenBLAS present, large: cblas_sgemm per
 *     batch (XLA:CPU calls Eigen the same way);
 *   - NATIVE or TPU, not tiny: the packed register-tiled kernel (gemm.c),
 *     fused multiply-adds in ascending k: exact for TPU numerics;
 *   - otherwise the row kernel: for each output row, for k ascending,
 *     C[i, :] += A[i, k] * B[k, :]. Each output element sums its products in
 *     ascending k in f32, which is the evaluator's order (STRICT: separate
 *     multiply and add; NATIVE/TPU: fused multiply-add, exact for TPU's
 *     bf16 products); the j loop vectorises, rows split across threads.
 * TPU numerics store NaN results as 0x7FC00000 (the MXU's rule 5).
 * Integer and pred dots run elementally (gen.c). */
#include "backend/llvm/lower.h"

enum { BLAS_MIN_FLOPS = 1 << 18, TILED_MIN_FLOPS = 1 << 15 };

static LLVMValueRef i64c(emitter *e, int64_t v) { return llvm_i64(e, v); }

static LLVMValueRef gep_f32(emitter *e, LLVMValueRef base, LLVMValueRef off) {
  LLVMValueRef p = LLVMBuildPointerCast(e->b, base, LLVMPointerType(e->t_f32, 0), "");
  return LLVMBuildInBoundsGEP2(e->b, e->t_f32, p, &off, 1, "");
}

static LLVMValueRef ld(emitter *e, LLVMValueRef p) {
  LLVMValueRef v = LLVMBuildLoad2(e->b, e->t_f32, p, "");
  LLVMSetAlignment(v, 4);
  return v;
}

static void st(emitter *e, LLVMValueRef v, LLVMValueRef p) {
  LLVMSetAlignment(LLVMBuildStore(e->b, v, p), 4);
}

/* Decomposes the linear value v over source dims list[0..n) (row-major in
 * that order) and adds each component times the dim's stride to *lin. */
static LLVMValueRef add_decomposed(emitter *e, LLVMValueRef lin, LLVMValueRef v,
                                   const ir_shape *src, const int64_t *list, int n) {
  LLVMBuilderRef b = e->b;
  int64_t stride[IR_MAX_RANK];
  int64_t st_ = 1;
  for (int d = src->rank - 1; d >= 0; d--) {
    stride[d] = st_;
    st_ *= src->dims[d];
  }
  for (int i = n - 1; i >= 0; i--) {
    int64_t sz = src->dims[list[i]];
    LLVMValueRef c = v;
    if (i > 0) {
      c = LLVMBuildURem(b, v, i64c(e, sz > 0 ? sz : 1), "");
      v = LLVMBuildUDiv(b, v, i64c(e, sz > 0 ? sz : 1), "");
    }
    lin = LLVMBuildAdd(b, lin, LLVMBuildMul(b, c, i64c(e, stride[list[i]]), ""), "");
  }
  return lin;
}

static int64_t prod(const ir_shape *s, const int64_t *list, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; i++) p *= s->dims[list[i]];
  return p;
}

/* The MXU passes of an operand under TPU numerics: pass p holds bf16 part
 * part[p] (llvm_mxu_part) of every element, the passes laid along K: with
 * k_inner (lhs, K = Y) dst[B][X][P][Y], else (rhs, K = X) dst[B][P][X][Y]. */
typedef struct mxu_pack {
  int P;
  const int *part;
  bool k_inner;
} mxu_pack;

/* Packs src into f32 dst[B][X][Y] where B, X, Y enumerate the listed source
 * dims, converting through the result type rt (the evaluator's rule); with
 * mp (TPU numerics) the float operand as is, in the MXU's passes. */
static void pack(emitter *e, ir_type rt, cbuf *src, const ir_shape *ss, cbuf *dst,
                 const int64_t *bl, int nb, const int64_t *xl, int nx, const int64_t *yl, int ny,
                 const mxu_pack *mp) {
  LLVMBuilderRef b = e->b;
  int64_t X = prod(ss, xl, nx), Y = prod(ss, yl, ny), B = prod(ss, bl, nb);
  cbuf *bufs[2] = {src, dst};
  kfn k;
  llvm_kernel_begin(e, &k, bufs, 2, arena_printf(e->a, "k%d.pack", e->nkernels));
  loop lr, lj;
  LLVMValueRef r = llvm_loop_begin(e, &lr, k.lo, k.hi);
  LLVMValueRef bi = LLVMBuildUDiv(b, r, i64c(e, X ? X : 1), "");
  LLVMValueRef xi = LLVMBuildURem(b, r, i64c(e, X ? X : 1), "");
  LLVMValueRef base = add_decomposed(e, i64c(e, 0), bi, ss, bl, nb);
  base = add_decomposed(e, base, xi, ss, xl, nx);
  LLVMValueRef j = llvm_loop_begin(e, &lj, i64c(e, 0), i64c(e, Y));
  LLVMValueRef lin = add_decomposed(e, base, j, ss, yl, ny);
  LLVMValueRef v = llvm_load(e, src->type, llvm_buf_ptr(e, src), lin);
  if (!mp) {
    v = llvm_convert(e, rt, IR_F32, llvm_convert(e, src->type, rt, v));
    LLVMValueRef o = LLVMBuildAdd(b, LLVMBuildMul(b, r, i64c(e, Y), ""), j, "");
    st(e, v, gep_f32(e, llvm_buf_ptr(e, dst), o));
  } else {
    LLVMValueRef f = llvm_convert(e, src->type, IR_F32, v);
    for (int p = 0; p < mp->P; p++) {
      /* the row of Y elements: r P + p, or (bi P + p) X + xi */
      LLVMValueRef row = mp->k_inner
          ? LLVMBuildAdd(b, LLVMBuildMul(b, r, i64c(e, mp->P), ""), i64c(e, p), "")
          : LLVMBuildAdd(b, LLVMBuildMul(b, bi, i64c(e, mp->P * X), ""),
                         LLVMBuildAdd(b, xi, i64c(e, p * X), ""), "");
      LLVMValueRef o = LLVMBuildAdd(b, LLVMBuildMul(b, row, i64c(e, Y), ""), j, "");
      st(e, llvm_mxu_part(e, f, mp->part[p]), gep_f32(e, llvm_buf_ptr(e, dst), o));
    }
  }
  llvm_loop_end(e, &lj);
  llvm_loop_end(e, &lr);
  llvm_kernel_end(e, &k, B * X, (double)(B * X * Y) * (mp ? mp->P : 1));
}

static bool is_identity(const int64_t *seq, int n) {
  for (int i = 0; i < n; i++)
    if (seq[i] != i) return false;
  return true;
}

static LLVMValueRef cblas_decl(emitter *e) {
  LLVMValueRef fn = LLVMGetNamedFunction(e->mod, "cblas_sgemm");
  LLVMTypeRef ps[14] = {e->t_i32, e->t_i32, e->t_i32, e->t_i32, e->t_i32, e->t_i32, e->t_f32,
                        e->t_ptr, e->t_i32, e->t_ptr, e->t_i32, e->t_f32, e->t_ptr, e->t_i32};
  LLVMTypeRef ft = LLVMFunctionType(e->t_void, ps, 14, 0);
  if (!fn) fn = LLVMAddFunction(e->mod, "cblas_sgemm", ft);
  return fn;
}

static void emit_blas(emitter *e, cbuf *A, cbuf *Bm, cbuf *C, int64_t nb, int64_t M, int64_t N, int64_t K) {
  LLVMBuilderRef b = e->b;
  cbuf *bufs[3] = {A, Bm, C};
  kfn k;
  llvm_kernel_begin(e, &k, bufs, 3, arena_printf(e->a, "k%d.sgemm", e->nkernels));
  loop lb;
  LLVMValueRef bi = llvm_loop_begin(e, &lb, k.lo, k.hi);
  LLVMValueRef pa = gep_f32(e, llvm_buf_ptr(e, A), LLVMBuildMul(b, bi, i64c(e, M * K), ""));
  LLVMValueRef pb = gep_f32(e, llvm_buf_ptr(e, Bm), LLVMBuildMul(b, bi, i64c(e, K * N), ""));
  LLVMValueRef pc = gep_f32(e, llvm_buf_ptr(e, C), LLVMBuildMul(b, bi, i64c(e, M * N), ""));
  LLVMValueRef fn = cblas_decl(e);
  LLVMValueRef args[14] = {
      LLVMConstInt(e->t_i32, 101, 0), LLVMConstInt(e->t_i32, 111, 0), LLVMConstInt(e->t_i32, 111, 0),
      LLVMConstInt(e->t_i32, (unsigned long long)M, 0), LLVMConstInt(e->t_i32, (unsigned long long)N, 0),
      LLVMConstInt(e->t_i32, (unsigned long long)K, 0), LLVMConstReal(e->t_f32, 1.0),
      LLVMBuildPointerCast(b, pa, e->t_ptr, ""), LLVMConstInt(e->t_i32, (unsigned long long)(K ? K : 1), 0),
      LLVMBuildPointerCast(b, pb, e->t_ptr, ""), LLVMConstInt(e->t_i32, (unsigned long long)(N ? N : 1), 0),
      LLVMConstReal(e->t_f32, 0.0),
      LLVMBuildPointerCast(b, pc, e->t_ptr, ""), LLVMConstInt(e->t_i32, (unsigned long long)(N ? N : 1), 0)};
  LLVMBuildCall2(b, LLVMGlobalGetValueType(fn), fn, args, 14, "");
  llvm_loop_end(e, &lb);
  llvm_kernel_end(e, &k, nb, 0); /* BLAS threads itself */
}

/* c = c + a*b in the configured numerics. STRICT: the evaluator's
 * `acc += x * y` through llvm_binary, which also gives the evaluator's NaN
 * when operands are NaN (elem.c). */
static LLVMValueRef madd(emitter *e, LLVMValueRef c, LLVMValueRef a, LLVMValueRef bv) {
  if (e->opt.numerics == CPU_NUMERICS_STRICT)
    return llvm_binary(e, IR_OP_ADD, IR_F32, c, llvm_binary(e, IR_OP_MULTIPLY, IR_F32, a, bv));
  LLVMValueRef args[3] = {a, bv, c};
  return llvm_call_intrinsic(e, e->opt.numerics == CPU_NUMERICS_TPU ? "llvm.fma" : "llvm.fmuladd",
                             LLVMTypeOf(c), args, 3);
}

/* The row kernel described above. */
static void emit_rows(emitter *e, cbuf *A, cbuf *Bm, cbuf *C, int64_t nb, int64_t M, int64_t N, int64_t K) {
  LLVMBuilderRef b = e->b;
  cbuf *bufs[3] = {A, Bm, C};
  kfn k;
  llvm_kernel_begin(e, &k, bufs, 3, arena_printf(e->a, "k%d.dot", e->nkernels));
  loop lr, lz, lk, lj;
  LLVMValueRef r = llvm_loop_begin(e, &lr, k.lo, k.hi);
  LLVMValueRef bi = LLVMBuildUDiv(b, r, i64c(e, M ? M : 1), "");
  LLVMValueRef crow = LLVMBuildMul(b, r, i64c(e, N), "");
  LLVMValueRef arow = LLVMBuildMul(b, r, i64c(e, K), "");
  LLVMValueRef bbase = LLVMBuildMul(b, bi, i64c(e, K * N), "");
  LLVMValueRef z = llvm_loop_begin(e, &lz, i64c(e, 0), i64c(e, N));
  st(e, LLVMConstReal(e->t_f32, 0.0), gep_f32(e, llvm_buf_ptr(e, C), LLVMBuildAdd(b, crow, z, "")));
  llvm_loop_end(e, &lz);
  LLVMValueRef kk = llvm_loop_begin(e, &lk, i64c(e, 0), i64c(e, K));
  LLVMValueRef av = ld(e, gep_f32(e, llvm_buf_ptr(e, A), LLVMBuildAdd(b, arow, kk, "")));
  LLVMValueRef brow = LLVMBuildAdd(b, bbase, LLVMBuildMul(b, kk, i64c(e, N), ""), "");
  LLVMValueRef j = llvm_loop_begin(e, &lj, i64c(e, 0), i64c(e, N));
  LLVMValueRef pc = gep_f32(e, llvm_buf_ptr(e, C), LLVMBuildAdd(b, crow, j, ""));
  LLVMValueRef bv = ld(e, gep_f32(e, llvm_buf_ptr(e, Bm), LLVMBuildAdd(b, brow, j, "")));
  st(e, madd(e, ld(e, pc), av, bv), pc);
  llvm_loop_end(e, &lj);
  llvm_loop_end(e, &lk);
  llvm_loop_end(e, &lr);
  llvm_kernel_end(e, &k, nb * M, (double)(M * N) * (double)K * (double)nb);
}

/* f32 acc -> the output type (rounded), elementwise. */
static void emit_cast(emitter *e, cbuf *src, cbuf *dst, int64_t n, bool canon_nan) {
  cbuf *bufs[2] = {src, dst};
  kfn k;
  llvm_kernel_begin(e, &k, bufs, 2, arena_printf(e->a, "k%d.cast", e->nkernels));
  loop l;
  LLVMValueRef i = llvm_loop_begin(e, &l, k.lo, k.hi);
  LLVMValueRef v = ld(e, gep_f32(e, llvm_buf_ptr(e, src), i));
  if (canon_nan) /* the MXU's rule 5: NaN results are 0x7FC00000 */
    v = LLVMBuildSelect(e->b, LLVMBuildFCmp(e->b, LLVMRealUNO, v, v, ""),
                        LLVMConstBitCast(LLVMConstInt(e->t_i32, 0x7fc00000, 0), e->t_f32), v, "");
  llvm_store(e, dst->type, llvm_buf_ptr(e, dst), i, llvm_convert(e, IR_F32, dst->type, v));
  llvm_loop_end(e, &l);
  llvm_kernel_end(e, &k, n, (double)n);
}

/* Emits dot id; with an epilogue (epi->n > 0) only when the tiled kernel
 * runs and writes the f32 result straight into the output, else it emits
 * nothing and returns false with *declined set. */
static bool emit_dot(emitter *e, scope *s, ir_id id, const gemm_epi *epi, bool *declined) {
  const ir_inst *in = llvm_inst(s, id);
  const ir_attrs *a = in->a;
  const ir_shape *ls = llvm_inst(s, in->ops[0])->shape, *rs = llvm_inst(s,
                                                                        in->ops[1])->shape;
  ir_type ot = in->shape->type;
  if (!ir_type_is_float(ls->type) || !ir_type_is_float(rs->type) || !ir_type_is_float(ot) ||
      ls->type == IR_F64 || rs->type == IR_F64 || ot == IR_F64) { /* the plain kernel */
    if (epi) {
      *declined = true;
      return false;
    }
    return llvm_emit_kernel(e, s, id);
  }
  cbuf *lb = s->mat[in->ops[0]][0], *rb = s->mat[in->ops[1]][0], *ob = s->mat[id][0];
  int nbt = a->lhs_batch.n, nc = a->lhs_contracting.n;
  int64_t lfree[IR_MAX_RANK], rfree[IR_MAX_RANK], lbat[IR_MAX_RANK], rbat[IR_MAX_RANK];
  int64_t lcon[IR_MAX_RANK], rcon[IR_MAX_RANK];
  int nlf = 0, nrf = 0;
  bool lused[IR_MAX_RANK] = {0}, rused[IR_MAX_RANK] = {0};
  for (int i = 0; i < nbt; i++) {
    lbat[i] = a->lhs_batch.v[i];
    rbat[i] = a->rhs_batch.v[i];
    lused[lbat[i]] = rused[rbat[i]] = true;
  }
  for (int i = 0; i < nc; i++) {
    lcon[i] = a->lhs_contracting.v[i];
    rcon[i] = a->rhs_contracting.v[i];
    lused[lcon[i]] = rused[rcon[i]] = true;
  }
  for (int d = 0; d < ls->rank; d++)
    if (!lused[d]) lfree[nlf++] = d;
  for (int d = 0; d < rs->rank; d++)
    if (!rused[d]) rfree[nrf++] = d;
  int64_t NB = prod(ls, lbat, nbt), M = prod(ls, lfree, nlf), K = prod(ls, lcon, nc), N = prod(rs, rfree, nrf);
  bool tpu = e->opt.numerics == CPU_NUMERICS_TPU;
  /* TPU numerics: the passes side by side along K (K' = P K), one f32 sum. */
  int P = tpu ? llvm_mxu_passes(in, ls->type, rs->type) : 1;
  mxu_pack mpa = {P, llvm_mxu_pair[0], true}, mpb = {P, llvm_mxu_pair[1], false};
  bool blas = false;
#ifdef TPUCC_HAVE_OPENBLAS
  blas = e->opt.use_blas && !e->aot && e->opt.numerics == CPU_NUMERICS_NATIVE &&
         (double)M * (double)N * (double)K >= BLAS_MIN_FLOPS && M < INT32_MAX && N < INT32_MAX &&
         K < INT32_MAX;
#endif
  bool tiled = e->opt.numerics != CPU_NUMERICS_STRICT && M > 0 && N > 0 && K > 0 &&
               (double)M * (double)N * (double)K >= TILED_MIN_FLOPS;
  if (epi) {
    /* Column operands are indexed by the output's last dim: N must be it. */
    bool ok = !blas && tiled && !tpu && ot == IR_F32 && e->opt.numerics == CPU_NUMERICS_NATIVE;
    for (int i = 0; ok && i < epi->n; i++) ok = !epi->ops[i].col || (nrf == 1 && epi->ops[i].x->count == N);
    if (!ok) {
      *declined = true;
      return false;
    }
  }
  /* A = [B, M, K] */
  int64_t seq[IR_MAX_RANK * 3];
  int q = 0;
  for (int i = 0; i < nbt; i++) seq[q++] = lbat[i];
  for (int i = 0; i < nlf; i++) seq[q++] = lfree[i];
  for (int i = 0; i < nc; i++) seq[q++] = lcon[i];
  cbuf *A = lb;
  if (!is_identity(seq, q) || ls->type != IR_F32 || ot != IR_F32 || tpu) {
    ir_shape ps = ir_shape_array(IR_F32, 1, &(int64_t){NB * M * K * P});
    A = llvm_scratch_buf(e, &ps);
    pack(e, ot, lb, ls, A, lbat, nbt, lfree, nlf, lcon, nc, tpu ? &mpa : NULL);
  }
  q = 0;
  for (int i = 0; i < nbt; i++) seq[q++] = rbat[i];
  for (int i = 0; i < nc; i++) seq[q++] = rcon[i];
  for (int i = 0; i < nrf; i++) seq[q++] = rfree[i];
  cbuf *Bm = rb;
  if (!is_identity(seq, q) || rs->type != IR_F32 || ot != IR_F32 || tpu) {
    ir_shape ps = ir_shape_array(IR_F32, 1, &(int64_t){NB * K * N * P});
    Bm = llvm_scratch_buf(e, &ps);
    pack(e, ot, rb, rs, Bm, rbat, nbt, rcon, nc, rfree, nrf, tpu ? &mpb : NULL);
  }
  cbuf *C = ob;
  if (ot != IR_F32 || (tpu && K > 0)) {
    ir_shape ps = ir_shape_array(IR_F32, 1, &(int64_t){NB * M * N});
    C = llvm_scratch_buf(e, &ps);
  }
  K *= P;
  if (blas) emit_blas(e, A, Bm, C, NB, M, N, K);
  else if (tiled) llvm_emit_gemm_epi(e, A, Bm, C, NB, M, N, K, epi);
  else emit_rows(e, A, Bm, C, NB, M, N, K);
  if (C != ob) emit_cast(e, C, ob, NB * M * N, tpu && K > 0);
  return e->st == ST_OK;
}

bool llvm_emit_dot(emitter *e, scope *s, ir_id id) {
  bool declined = false;
  return emit_dot(e, s, id, NULL, &declined);
}

bool llvm_emit_dot_epi(emitter *e, scope *s, ir_id id, const gemm_epi *epi) {
  bool declined = false;
  bool ok = emit_dot(e, s, id, epi, &declined);
  return ok && !declined;
}

/* ---- convolution as an implicit GEMM ------------------------------------ */

/* NATIVE numerics, float types, no feature/batch groups, no base dilation
 * or window reversal, output laid out (batch, spatial..., feature): then
 * out[m, co] = sum_k patches[m, k] * kernel[k, co] with the GEMM kernel,
 * the patches gathered while packing. Anything else runs elementally. */
bool llvm_emit_conv(emitter *e, scope *s, ir_id id) {
  if (llvm_emit_conv_wgrad(e, s, id)) return e->st == ST_OK;
  const ir_inst *in = llvm_inst(s, id);
  const ir_attrs *a = in->a;
  const ir_conv_dims *cd = &a->conv;
  const ir_shape *is = llvm_inst(s, in->ops[0])->shape, *ks = llvm_inst(s,
                                                                        in->ops[1])->shape;
  const ir_shape *os = in->shape;
  ir_type ot = os->type;
  int ns = cd->nspatial;
  bool ok = e->opt.numerics == CPU_NUMERICS_NATIVE && ir_type_is_float(ot) &&
            ir_type_is_float(is->type) && ir_type_is_float(ks->type) &&
            (ot == IR_F32 || (is->type == ot && ks->type == ot)) &&
            a->feature_group_count <= 1 && a->batch_group_count <= 1 &&
            cd->out_batch == 0 && cd->out_feature == ns + 1 && (!(a->window != NULL) || ir_window_of(a)->rank == ns);
  for (int i = 0; ok && i < ns; i++) {
    ok = cd->out_spatial[i] == i + 1;
    if ((a->window != NULL)) ok = ok && ir_window_of(a)->dims[i].lhs_dilate == 1 && !ir_window_of(a)->dims[i].reversal;
  }
  if (ok && llvm_emit_conv_direct(e, s, id)) return e->st == ST_OK;
  gemm_conv cv;
  memset(&cv, 0, sizeof cv);
  int64_t M = os->dims[0], K = ks->dims[cd->k_in], N = os->dims[ns + 1];
  if (ok) {
    int64_t st[IR_MAX_RANK], acc = 1;
    for (int d = is->rank - 1; d >= 0; d--) {
      st[d] = acc;
      acc *= is->dims[d];
    }
    cv.in = s->mat[in->ops[0]][0];
    cv.ns = ns;
    cv.batch = is->dims[cd->in_batch];
    cv.cin = is->dims[cd->in_feature];
    cv.s_b = st[cd->in_batch];
    cv.s_c = st[cd->in_feature];
    for (int i = 0; i < ns; i++) {
      const ir_window_dim *w = (a->window != NULL) ? &ir_window_of(a)->dims[i] : NULL;
      cv.osz[i] = os->dims[i + 1];
      cv.isz[i] = is->dims[cd->in_spatial[i]];
      cv.ksz[i] = ks->dims[cd->k_spatial[i]];
      cv.stride[i] = w ? w->stride : 1;
      cv.pad_lo[i] = w ? w->pad_lo : 0;
      cv.rdil[i] = w ? w->rhs_dilate : 1;
      cv.s_sp[i] = st[cd->in_spatial[i]];
      M *= cv.osz[i];
      K *= cv.ksz[i];
    }
    ok = cv.cin == ks->dims[cd->k_in] && cv.cin <= 1024 && M > 0 && N > 0 && K > 0 &&
         (double)M * (double)N * (double)K >= TILED_MIN_FLOPS;
  }
  if (!ok) return llvm_emit_kernel(e, s, id);
  /* The kernel as [K = (spatial..., in feature), N = out feature] in f32. */
  int64_t xl[IR_MAX_RANK], yl[1] = {cd->k_out};
  for (int i = 0; i < ns; i++) xl[i] = cd->k_spatial[i];
  xl[ns] = cd->k_in;
  ir_shape bs = ir_shape_array(IR_F32, 1, &(int64_t){K * N});
  cbuf *Bc = llvm_scratch_buf(e, &bs);
  pack(e, ot, s->mat[in->ops[1]][0], ks, Bc, NULL, 0, xl, ns + 1, yl, 1, NULL);
  cbuf *ob = s->mat[id][0], *C = ob;
  if (ot != IR_F32) {
    ir_shape cs = ir_shape_array(IR_F32, 1, &(int64_t){M * N});
    C = llvm_scratch_buf(e, &cs);
  }
  llvm_emit_gemm_conv(e, &cv, Bc, C, M, N, K);
  if (C != ob) emit_cast(e, C, ob, M * N, false);
  return e->st == ST_OK;
}
