/* lk_call.c: dots on the precompiled library GEMM (lk.h) from JIT'd code.
 *
 * Two kernels, as gemm.c emits: one packs B (rows: NB * K), one computes
 * the tiles (rows: NB * Mt); each body fills an lk_gemm on its stack with
 * its buffers and the sizes and calls the variant's function, which the
 * JIT resolves to an absolute address (jit.c): `tpucc_lk_gemm_packb` and
 * `tpucc_lk_gemm_tiles`. The variant's geometry (cpu_lk_plan) sizes the
 * packed B here, and the variant's name is in the compile cache's key.
 * Only the JIT calls them: AOT objects keep emitted kernels (self-contained). */
#include "backend/llvm/lk.h"
#include "backend/llvm/lower.h"

#include <stddef.h>

/* The size rule: GEMMs of fewer multiply-adds than this (all batches) call
 * the library; larger ones get the kernel emitted for their sizes, whose
 * 0.2-0.4 s of optimisation and code generation is small beside their run
 * time over a few runs (and paid once with the compile cache), and which
 * ran the MLP benchmark's 256 x 1024 x 1024 layers about 20% faster than
 * the library on an AVX-512 host (docs/cpu-backend.md, "Precompiled GEMM
 * kernels"). */
#define LK_MAX_MACS 16777216.0 /* 2^24 */

_Static_assert(sizeof(void *) == 8 && sizeof(lk_epi) == 24 &&
                   offsetof(lk_gemm, NB) == LK_SLOT_NB * 8 &&
                   offsetof(lk_gemm, epi) == LK_SLOT_EPI * 8 && sizeof(lk_gemm) == LK_SLOTS * 8,
               "lk_gemm is the array of 8-byte slots the JIT'd code fills");

static LLVMValueRef slot(emitter *e, LLVMValueRef arr, int i, LLVMTypeRef t) {
  LLVMValueRef ix = llvm_i64(e, i);
  LLVMValueRef p = LLVMBuildInBoundsGEP2(e->b, e->t_i64, arr, &ix, 1, "");
  return LLVMBuildPointerCast(e->b, p, LLVMPointerType(t, 0), "");
}

static void put_ptr(emitter *e, LLVMValueRef arr, int i, const cbuf *cb) {
  LLVMValueRef p =
      cb ? LLVMBuildPointerCast(e->b, llvm_buf_ptr(e, cb), e->t_ptr, "") : LLVMConstNull(e->t_ptr);
  LLVMBuildStore(e->b, p, slot(e, arr, i, e->t_ptr));
}

static void put_int(emitter *e, LLVMValueRef arr, int i, int64_t v) {
  LLVMBuildStore(e->b, llvm_i64(e, v), slot(e, arr, i, e->t_i64));
}

static int64_t epi_code(ir_op op) {
  switch (op) {
  case IR_OP_ADD:
    return LK_ADD;
  case IR_OP_SUBTRACT:
    return LK_SUB;
  case IR_OP_MULTIPLY:
    return LK_MUL;
  case IR_OP_DIVIDE:
    return LK_DIV;
  case IR_OP_MAXIMUM:
    return LK_MAX;
  case IR_OP_MINIMUM:
    return LK_MIN;
  default:
    return 0;
  }
}

/* One kernel whose body calls fn(args, lo, hi) with args the lk_gemm of
 * A, B, Bp, C and epi, over n rows of `work` operations in all. */
static void call_kernel(emitter *e, const char *fn, const char *what, cbuf *A, cbuf *B, cbuf *Bp,
                        cbuf *C, int64_t NB, int64_t M, int64_t N, int64_t K, const gemm_epi *epi,
                        int64_t n, double work) {
  cbuf *bufs[4 + GEMM_EPI_MAX], *all[4] = {A, B, Bp, C};
  int nb = 0;
  for (int i = 0; i < 4; i++) {
    bool skip = !all[i] || all[i]->kind == CB_CONST; /* constants: read through their globals */
    for (int j = 0; j < nb && !skip; j++)
      skip = bufs[j] == all[i];
    if (!skip) bufs[nb++] = all[i];
  }
  nb = llvm_gemm_epi_bufs(epi, bufs, nb);
  kfn k;
  llvm_kernel_begin(e, &k, bufs, nb, arena_printf(e->a, "k%d.%s", e->nkernels, what));
  LLVMValueRef arr = llvm_alloca(e, LLVMArrayType(e->t_i64, LK_SLOTS));
  arr = LLVMBuildPointerCast(e->b, arr, LLVMPointerType(e->t_i64, 0), "");
  put_ptr(e, arr, LK_SLOT_A, A);
  put_ptr(e, arr, LK_SLOT_B, B);
  put_ptr(e, arr, LK_SLOT_BP, Bp);
  put_ptr(e, arr, LK_SLOT_C, C);
  put_int(e, arr, LK_SLOT_NB, NB);
  put_int(e, arr, LK_SLOT_M, M);
  put_int(e, arr, LK_SLOT_N, N);
  put_int(e, arr, LK_SLOT_K, K);
  int nepi = epi ? epi->n : 0;
  put_int(e, arr, LK_SLOT_NEPI, nepi);
  for (int i = 0; i < nepi; i++) {
    const gemm_epi_op *o = &epi->ops[i];
    put_int(e, arr, LK_SLOT_EPI + 3 * i, epi_code(o->op));
    put_int(e, arr, LK_SLOT_EPI + 3 * i + 1,
            (o->col ? LK_EPI_COL : 0) | (o->swap ? LK_EPI_SWAP : 0));
    put_ptr(e, arr, LK_SLOT_EPI + 3 * i + 2, o->x);
  }
  LLVMValueRef f = LLVMGetNamedFunction(e->mod, fn);
  if (!f) f = LLVMAddFunction(e->mod, fn, e->t_kernel);
  LLVMValueRef args[3] = {LLVMBuildPointerCast(e->b, arr, e->t_ptr, ""), k.lo, k.hi};
  LLVMBuildCall2(e->b, e->t_kernel, f, args, 3, "");
  e->lib_work += work;
  llvm_kernel_end(e, &k, n, work);
}

bool llvm_emit_lk_gemm(emitter *e, cbuf *A, cbuf *B, cbuf *C, int64_t NB, int64_t M, int64_t N,
                       int64_t K, const gemm_epi *epi) {
  const lk_variant *v = e->lk;
  if (!v || M <= 0 || N <= 0 || K <= 0 ||
      (double)NB * (double)M * (double)N * (double)K >= LK_MAX_MACS)
    return false;
  for (int i = 0; epi && i < epi->n; i++)
    if (!epi_code(epi->ops[i].op)) return false;
  lk_geom g;
  cpu_lk_plan(v, M, N, K, &g);
  int64_t npad = g.Nt * g.NR;
  ir_shape bs = ir_shape_array(IR_F32, 1, &(int64_t){NB * K * npad});
  cbuf *Bp = llvm_scratch_buf(e, &bs);
  call_kernel(e, "tpucc_lk_gemm_packb", "lkpackb", NULL, B, Bp, NULL, NB, M, N, K, NULL, NB * K,
              (double)(NB * K * npad));
  call_kernel(e, "tpucc_lk_gemm_tiles", "lkgemm", A, NULL, Bp, C, NB, M, N, K, epi, NB * g.Mt,
              (double)NB * (double)(g.Mt * g.MR) * (double)npad * (double)K);
  return true;
}
