/* lk.h: the precompiled GEMM kernels of the cpu target ("library kernels").
 *
 * The JIT'd code of a module calls these instead of a register-tiled GEMM
 * emitted as LLVM IR per module (gemm.c), which made LLVM's optimisation
 * and code generation of every dot cost 0.2-0.4 s. They are compiled with
 * tpucc, once per ISA (lk_avx512.c, lk_avx2.c, lk_portable.c); one variant
 * is chosen when a module is compiled (cpu_options.lib_kernels, NULL: the
 * best this CPU runs, by cpuid) and named in --stats.
 *
 * Contract (the same as gemm.c's, so results are the same bits): C[b] (M x
 * N) = A[b] (M x K) * B[b] (K x N), row-major f32; each output element
 * receives its products in ascending k, one fused multiply-add each, from
 * +0 (K is cut into blocks whose partial sums are stored in C and reloaded,
 * exactly). After the last K block the epilogue (lk_epi: a dense layer's
 * bias, relu, scale) is applied to each stored element, operation by
 * operation, with elem.c's semantics of the f32 operation.
 *
 * Two entry points per variant, both cpu_kernel_fn-shaped row functions
 * the JIT'd code calls directly or through parfor:
 *   packb(args, lo, hi): rows [lo, hi) of the NB * K rows of B into Bp;
 *   tiles(args, lo, hi): MR-row tiles [lo, hi) of the NB * Mt tiles of C.
 * args points to an lk_gemm; Bp holds lk_plan's bp_floats floats. */
#ifndef TPUCC_BACKEND_LLVM_LK_H
#define TPUCC_BACKEND_LLVM_LK_H

#include <stdbool.h>
#include <stdint.h>

enum { LK_EPI_MAX = 8 };

/* Epilogue operations (the values are part of the JIT'd code's ABI). */
enum { LK_ADD = 1, LK_SUB, LK_MUL, LK_DIV, LK_MAX, LK_MIN };
enum { LK_EPI_COL = 1, LK_EPI_SWAP = 2 };

/* One epilogue step: v = v OP x (x OP v with LK_EPI_SWAP), x = x[col]
 * with LK_EPI_COL (a vector of N floats), else x[0]. */
typedef struct lk_epi {
  int64_t op, flags;
  const float *x;
} lk_epi;

/* The arguments of one GEMM; every field is 8 bytes (the JIT'd code fills
 * it as an array of 8-byte slots, in this order). */
typedef struct lk_gemm {
  const float *A, *B;
  float *Bp, *C;
  int64_t NB, M, N, K;
  int64_t nepi;
  lk_epi epi[LK_EPI_MAX];
} lk_gemm;

enum {
  LK_SLOT_A,
  LK_SLOT_B,
  LK_SLOT_BP,
  LK_SLOT_C,
  LK_SLOT_NB,
  LK_SLOT_M,
  LK_SLOT_N,
  LK_SLOT_K,
  LK_SLOT_NEPI,
  LK_SLOT_EPI,
  LK_SLOTS = LK_SLOT_EPI + 3 * LK_EPI_MAX
};

typedef void (*lk_row_fn)(void *args, int64_t lo, int64_t hi);

/* A compiled variant. */
typedef struct lk_variant {
  const char *name;      /* "avx512", "avx2", "portable" */
  const char *tiles_doc; /* its register tiles, for --stats */
  int VL;                /* floats per vector */
  bool (*runs)(void);    /* whether this CPU runs it */
  lk_row_fn packb, tiles;
} lk_variant;

/* The geometry of one GEMM on a variant (lk_plan). */
typedef struct lk_geom {
  int VL, NV, MR, NR;
  int64_t M, N, K, Mt, Nt, KC, nkb;
} lk_geom;

/* The variants, best first; NULL-terminated. */
extern const lk_variant *const cpu_lk_variants[];
/* The variant called name, NULL: the first this CPU runs (the portable one
 * always runs); NULL when name is unknown or this CPU cannot run it. */
const lk_variant *cpu_lk_find(const char *name);
/* The tile shape and K blocking of an M x N x K GEMM on v; what the JIT'd
 * code sizes (Bp: NB * K * Nt * NR floats; NB * Mt tiles) and what the
 * variant's functions use. */
void cpu_lk_plan(const lk_variant *v, int64_t M, int64_t N, int64_t K, lk_geom *g);

/* Variant definitions (lk_*.c). */
extern const lk_variant cpu_lk_avx512, cpu_lk_avx2, cpu_lk_portable;

#endif
