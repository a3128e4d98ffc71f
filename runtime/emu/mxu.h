/* mxu.h: the emulated matrix unit's arithmetic, one contract, two paths.
 *
 * The MXU computes acc[m][n] += lhs[m][k] x w[k][n] with bf16 operands and an
 * f32 accumulator. Two implementations share this contract bit for bit:
 *   - emu_mxu_matmul_bf16*: the fast host kernel (packed, register-tiled,
 *     vectorised; mxu.c), used by the emulator for every MXU operation;
 *   - emu_mxu_systolic_matmul_bf16: a weight-stationary array of R x C
 *     processing elements stepped cycle by cycle (mxu_systolic.c), which
 *     exists to prove the fast path (tests/runtime/test_mxu*.c).
 *
 * ---- Numerics (the contract) --------------------------------------------
 * 1. Inputs. A bf16 value is the upper 16 bits of an f32. By default a bf16
 *    subnormal input (exponent field 0, fraction != 0) is read as a zero of
 *    the same sign: TPU hardware has no bf16 subnormals. The flag
 *    EMU_MXU_KEEP_SUBNORMALS reads it as its exact value instead. Both paths
 *    apply the same rule. Infinities and NaNs are read as such.
 * 2. Products are exact. The product of two bf16 values (8-bit significands)
 *    is never rounded: it is carried with its exact value into the add.
 * 3. Accumulation order and rounding. For each output element (i, j),
 *        for kk = 0, 1, ..., k-1 (ascending):
 *            acc[i][j] = RNE_f32(acc[i][j] + lhs[i][kk] * w[kk][j])
 *    i.e. one IEEE-754 binary32 fused multiply-add per product, rounded to
 *    nearest, ties to even. The sum starts from the value already in acc
 *    (the MXU accumulates in place), never from a fresh zero.
 *    When the product lies in f32's normal range (the usual case) it is an
 *    f32 number exactly, and step 3 is the same as a plain f32 add of the
 *    f32 product: fma(a, b, c) == c + a*b bit for bit. They differ only when
 *    a*b itself would overflow f32 or fall below 2^-126 with more bits than
 *    the subnormal grid holds; then this contract (one rounding, "the only
 *    rounding in the MXU is in accumulation") is the one that holds.
 * 4. f32 results follow IEEE: gradual underflow in the accumulator (no
 *    flush of f32 subnormals), signed zeros per IEEE (so -0 + -0 = -0 and
 *    x + -x = +0), overflow to +-inf, inf - inf = NaN, inf * 0 = NaN.
 * 5. NaN results are canonical. Whenever k > 0, an output element that is
 *    NaN after its k additions is stored as 0x7FC00000 (positive quiet NaN),
 *    whatever the payloads of the NaNs involved; this makes both paths
 *    agree bit for bit independent of host NaN-propagation rules.
 *    With k == 0 (or m == 0 or n == 0) acc is not touched at all.
 * The host must run with the default floating-point environment (round to
 * nearest, no flush-to-zero / denormals-are-zero); this code never changes it.
 *
 * ---- Layout --------------------------------------------------------------
 * All matrices are row-major with strides counted in elements:
 *   lhs[i][kk] = lhs[i * lds_lhs + kk]   (bf16 bits), lds_lhs >= k
 *   w[kk][j]   = w[kk * ld_w + j]        (bf16 bits), ld_w >= n
 *     with EMU_MXU_W_TRANSPOSED: w[kk][j] = w[j * ld_w + kk], ld_w >= k
 *   acc[i][j]  = acc[i * ld_acc + j]     (f32),       ld_acc >= n
 * acc must not overlap lhs or w. The functions are reentrant and
 * thread-safe for disjoint acc; they keep no state between calls. Sizes and
 * strides are checked with assertions only: callers (the emulator) validate
 * shapes. m, k or n <= 0 is an empty product. */
#ifndef TPUCC_EMU_MXU_H
#define TPUCC_EMU_MXU_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/base.h"

/* Flags for the _ex variants; 0 is the documented default. */
enum {
  EMU_MXU_KEEP_SUBNORMALS = 1u << 0, /* read bf16 subnormal inputs exactly */
  EMU_MXU_W_TRANSPOSED = 1u << 1,    /* w is stored [n][k] (transpose on load) */
};

/* Host kernels of the fast path. All give identical bits; AUTO picks the
 * fastest the host supports. Selecting one by flag (EMU_MXU_IMPL(x)) exists
 * for tests and benchmarks; an unavailable choice falls back to AUTO. */
typedef enum emu_mxu_impl {
  EMU_MXU_IMPL_AUTO,
  EMU_MXU_IMPL_PORTABLE, /* plain C, fmaf */
  EMU_MXU_IMPL_AVX2,     /* x86-64 AVX2 + FMA, 6x16 and 4x16 register tiles */
  EMU_MXU_IMPL_AVX512,   /* x86-64 AVX-512F, 12x32 and 8x32 register tiles */
  EMU_MXU_IMPL__COUNT
} emu_mxu_impl;
#define EMU_MXU_IMPL(x) ((unsigned)(x) << 8)   /* flag bits 8..11 */
int emu_mxu_impl_available(emu_mxu_impl impl); /* 1 when usable here */
const char *emu_mxu_impl_name(emu_mxu_impl impl);
/* The implementation that calls with these flags use (never AUTO). */
emu_mxu_impl emu_mxu_impl_selected(unsigned flags);

/* acc[m][n] += lhs[m][k] x w[k][n] under the contract above, defaults
 * (bf16 subnormal inputs read as signed zero, w not transposed). Allocates
 * scratch with malloc (2 KiB per column of n, at most 8 MiB, plus
 * emu_mxu_scratch_bytes()); if that fails it computes the same bits with a
 * slow scalar loop instead, so it never fails. The emulator's hot path uses
 * the packed API below. */
void emu_mxu_matmul_bf16(const uint16_t *lhs, const uint16_t *w, float *acc, int m, int k, int n,
                         int lds_lhs, int ld_w, int ld_acc);

/* The same with EMU_MXU_* flags. */
void emu_mxu_matmul_bf16_ex(const uint16_t *lhs, const uint16_t *w, float *acc, int m, int k, int n,
                            int lds_lhs, int ld_w, int ld_acc, unsigned flags);

/* ---- Stationary weights (what the emulator uses per weight tile) -------
 * A weight matrix is converted once into an f32 "packed" form (flags
 * EMU_MXU_KEEP_SUBNORMALS and EMU_MXU_W_TRANSPOSED apply here), then any
 * number of lhs row blocks stream against it without touching memory other
 * than the caller's: no allocation happens in these calls.
 *
 * Packed layout (for reference; treat it as opaque): ceil(n/32) panels of 32
 * columns, panel p holding f32 w[kk][32p + c] at [p][kk][c], columns past n
 * zero; when the flags select the AVX2 kernel, ceil(n/16) panels of 16
 * columns instead. So pack and multiply with the same EMU_MXU_IMPL choice
 * (the emulator passes AUTO to both). emu_mxu_packed_w_bytes gives the size
 * (enough for either layout); 64-byte alignment is best. */
size_t emu_mxu_packed_w_bytes(int k, int n);
void emu_mxu_pack_w(const uint16_t *w, int k, int n, int ld_w, unsigned flags, float *packed);
/* Bytes of scratch that emu_mxu_matmul_packed needs (a constant, ~233 KiB). */
size_t emu_mxu_scratch_bytes(void);
/* acc[m][n] += lhs[m][k] x W where W was packed for exactly this k and n.
 * flags: EMU_MXU_KEEP_SUBNORMALS (for lhs) and EMU_MXU_IMPL(x); scratch is
 * emu_mxu_scratch_bytes() of caller memory (any alignment). */
void emu_mxu_matmul_packed(const uint16_t *lhs, const float *packed, float *acc, int m, int k,
                           int n, int lds_lhs, int ld_acc, unsigned flags, void *scratch);

/* The PE-by-PE systolic model of the same operation (mxu_systolic.c) on an
 * array of rows x cols processing elements, weight stationary:
 *   - the weight tile w[k0 + r][n0 + c] (r < rows, c < cols) is preloaded,
 *     one value per PE (PEs past the edge of k or n hold zero and are
 *     bypassed);
 *   - activation lhs[i][k0 + r] enters row r from the left at cycle i + r
 *     (skewed by row) and moves right one PE per cycle;
 *   - partial sums move down one PE per cycle; PE (r, c) computes
 *     psum_out = fma(a, w, psum_in) (contract step 3); the psum entering
 *     row 0 of column c for output row i is acc[i][n0 + c], and what leaves
 *     the bottom is written back to acc (NaN canonicalised).
 * k is tiled over array rows in ascending order (tile k0 = 0, rows, ...),
 * n over array columns; so each output sees ascending k, as in the fast path.
 * Returns the number of array cycles stepped (fill, stream and drain of
 * every tile), or -1 when scratch memory could not be allocated (acc is then
 * unchanged). rows, cols >= 1. */
int64_t emu_mxu_systolic_matmul_bf16(const uint16_t *lhs, const uint16_t *w, float *acc, int m,
                                     int k, int n, int lds_lhs, int ld_w, int ld_acc, int rows,
                                     int cols, unsigned flags);

/* ---- bf16 conversions ----------------------------------------------------
 * Element by element: base_bf16_to_f32 and base_f32_to_bf16 (base/base.h). */

/* Row conversions of count elements; src and dst must not overlap. */
void emu_bf16_row_to_f32(const uint16_t *src, float *dst, size_t count);
void emu_f32_row_to_bf16(const float *src, uint16_t *dst, size_t count);

#endif
