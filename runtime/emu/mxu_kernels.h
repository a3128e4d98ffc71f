/* mxu_kernels.h: private interface between the MXU drivers (mxu.c) and the
 * per-ISA kernel files (mxu_avx2.c). Not part of the emulator's interface;
 * the contract every function here keeps is the one in mxu.h. */
#ifndef TPUCC_EMU_MXU_KERNELS_H
#define TPUCC_EMU_MXU_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Columns per packed weight panel: packed f32 w[kk][32p + c] sits at
 * packed[(p * k + kk) * EMU_MXU_PANEL + c] (emu_mxu_pack_w); for the AVX2
 * kernel, w[kk][16p + c] at packed[(p * k + kk) * EMU_MXU_PANEL_AVX2 + c]
 * (the same size or less: n rounded up to 16 instead of 32). */
#define EMU_MXU_PANEL 32
#define EMU_MXU_PANEL_AVX2 16

/* What every NaN output is stored as (mxu.h, point 5). */
#define EMU_MXU_CANONICAL_NAN_BITS 0x7FC00000u

/* Edge tiles run on a copy: emu_mxu_tile_copy(dst, ldd, src, lds, live, nr)
 * copies live rows of nr floats; the caller zeroes the copy first, so the
 * lanes and rows past the edge are zeros whose results are discarded. */
static inline void emu_mxu_tile_copy(float *dst, size_t ldd, const float *src, size_t lds, int live,
                                     int nr) {
  for (int i = 0; i < live; i++)
    memcpy(dst + (size_t)i * ldd, src + (size_t)i * lds, (size_t)nr * sizeof(float));
}

#if defined(__x86_64__) && defined(__GNUC__)
#define EMU_MXU_X86 1
/* bf16 bits -> f32 with the input rule (keep != 0: subnormals kept), count
 * elements; needs AVX2. */
void emu_mxu_avx2_cvt(const uint16_t *src, float *dst, int count, int keep);
/* acc[m][n] += lhs[m][k] x W for W packed by emu_mxu_pack_w for this k and
 * n with the AVX2 flags (16-column panels; m, k, n >= 1), with the AVX2 +
 * FMA kernels; scratch is 64-byte aligned and holds at least
 * EMU_MXU_AVX2_SCRATCH_FLOATS floats. */
#define EMU_MXU_AVX2_SCRATCH_FLOATS ((192 + 6) * 256 + 6 * 16)
void emu_mxu_avx2_matmul_packed(const uint16_t *lhs, const float *packed, float *acc, int m, int k,
                                int n, size_t lds, size_t ldc, int keep, float *scratch);
#else
#define EMU_MXU_X86 0
#endif

#endif
