/* mxu.c: the fast host kernel of the emulated MXU (contract in mxu.h).
 *
 * Structure (GotoBLAS/BLIS style, kept bit-exact):
 *   - weights are converted once to f32 and packed in panels of 32 columns
 *     (emu_mxu_pack_w); bf16 -> f32 is a 16-bit shift, subnormals flushed
 *     here unless EMU_MXU_KEEP_SUBNORMALS;
 *   - lhs is converted in blocks of MC rows x KC columns into f32 rows
 *     (pack_a), so a micro-kernel broadcasts one float per row and k;
 *   - a micro-kernel keeps an MR x 32 tile of the accumulator in registers,
 *     loads it from acc, runs kc fused multiply-adds per element in ascending
 *     k, canonicalises NaNs and stores it back;
 *   - loop order per k block: lhs block (L2), then chunks of JPC weight
 *     panels (L2), then a row of micro-tiles walking acc left to right (so
 *     the hardware prefetcher streams each acc row; walking acc down a
 *     column instead cost 15% at 2048^3 in TLB and cache misses).
 * Block sizes were tuned on the machine in docs/performance.md.
 * Why this is bit-exact: every output element's value is a chain
 * acc = fma(a_kk, w_kk, acc) over kk ascending. Blocking k (KC) only splits
 * that chain at a store/load of the same f32 value; blocking m and n, the
 * register tiles and the SIMD lanes only change which outputs are computed
 * together, never the order within one output. Padded rows and columns of
 * the packed blocks (zeros) feed only outputs that are never stored.
 * NaN canonicalisation at every store is idempotent (NaN stays NaN through
 * any later fma), so storing between k blocks does not change results.
 * The AVX2 kernel has its own driver on the same packed weights
 * (mxu_avx2.c); the portable and AVX-512 kernels run through the one here. */
#include "runtime/emu/mxu.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "runtime/emu/mxu_kernels.h"

#define MXU_X86 EMU_MXU_X86
#if MXU_X86
#include <immintrin.h>
#endif

enum {
  PANEL = 32,  /* columns per packed weight panel (and per micro-tile) */
  KC = 512,    /* k per block: fewer passes of acc through memory */
  MC = 96,     /* lhs rows per packed block: MC x KC floats (L2) */
  JPC = 8,     /* weight panels per chunk: KC x 256 floats (L2) */
  MR_MAX = 16, /* largest micro-tile height of any kernel */
  A_PAD = 16,  /* floats of padding per packed lhs row */
};
_Static_assert(PANEL == EMU_MXU_PANEL, "one packed layout");

#define CANONICAL_NAN_BITS EMU_MXU_CANONICAL_NAN_BITS

/* ---- conversions -------------------------------------------------------- */

/* bf16 bits -> f32 bits, with the MXU's input rule for subnormals. */
static inline uint32_t in_bits(uint16_t h, int keep_sub) {
  if (!keep_sub && (h & 0x7F80u) == 0) h &= 0x8000u;
  return (uint32_t)h << 16;
}

static inline float in_f32(uint16_t h, int keep_sub) {
  uint32_t u = in_bits(h, keep_sub);
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

void emu_bf16_row_to_f32(const uint16_t *src, float *dst, size_t count) {
  for (size_t i = 0; i < count; i++)
    dst[i] = base_bf16_to_f32(src[i]);
}

void emu_f32_row_to_bf16(const float *src, uint16_t *dst, size_t count) {
  for (size_t i = 0; i < count; i++)
    dst[i] = base_f32_to_bf16(src[i]);
}

static inline float canon(float x) {
  if (x != x) {
    uint32_t u = CANONICAL_NAN_BITS;
    memcpy(&x, &u, sizeof x);
  }
  return x;
}

/* ---- packing of lhs ---------------------------------------------------- */

/* Row conversion with the input rule: the one step of packing that touches
 * every element, so it has vector versions below. */
typedef void cvt_fn(const uint16_t *src, float *dst, int count, int keep);

static void cvt_portable(const uint16_t *src, float *dst, int count, int keep) {
  for (int i = 0; i < count; i++)
    dst[i] = in_f32(src[i], keep);
}

/* lhs[mc][kc] (stride lds) -> f32 rows dst[mc][kc] (stride lda), then zero
 * rows up to the next multiple of mr (read by edge tiles, never stored).
 * lda = kc + 16 keeps the rows of a micro-tile in different L1 sets. */
static void pack_a(cvt_fn *cvt, const uint16_t *lhs, int lds, int mc, int kc, size_t lda, int mr,
                   int keep, float *dst) {
  int padded = (mc + mr - 1) / mr * mr;
  for (int r = 0; r < mc; r++)
    cvt(lhs + (size_t)r * (size_t)lds, dst + (size_t)r * lda, kc, keep);
  for (int r = mc; r < padded; r++)
    memset(dst + (size_t)r * lda, 0, (size_t)kc * sizeof(float));
}

/* ---- micro-kernels -------------------------------------------------------
 * Contract of every kernel: for i < MR, j < 32:
 *   c[i*ldc + j] = canon(fma chain over kk < kc of a[i*lda + kk] * b[kk*32 + j]
 *                        starting from c[i*ldc + j]). */
typedef void ukr_fn(int kc, const float *a, size_t lda, const float *b, float *c, size_t ldc);

enum { MR_PORTABLE = 4 };

static void ukr_portable(int kc, const float *a, size_t lda, const float *b, float *c, size_t ldc) {
  float t[MR_PORTABLE][PANEL];
  for (int i = 0; i < MR_PORTABLE; i++)
    memcpy(t[i], c + (size_t)i * ldc, sizeof t[i]);
  for (int kk = 0; kk < kc; kk++) {
    const float *bk = b + (size_t)kk * PANEL;
    for (int i = 0; i < MR_PORTABLE; i++)
      for (int j = 0; j < PANEL; j++)
        t[i][j] = fmaf(a[(size_t)i * lda + kk], bk[j], t[i][j]);
  }
  for (int i = 0; i < MR_PORTABLE; i++)
    for (int j = 0; j < PANEL; j++)
      c[(size_t)i * ldc + j] = canon(t[i][j]);
}

#if MXU_X86
enum { MR_AVX512 = 12 };

__attribute__((target("avx512f"))) static void cvt_avx512(const uint16_t *src, float *dst,
                                                          int count, int keep) {
  const __m512i expo = _mm512_set1_epi32(0x7F800000), sign = _mm512_set1_epi32((int)0x80000000u);
  int i = 0;
  for (; i + 16 <= count; i += 16) {
    __m512i x = _mm512_slli_epi32(
        _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(src + i))), 16);
    if (!keep) {
      __mmask16 nz = _mm512_test_epi32_mask(x, expo);
      x = _mm512_mask_mov_epi32(_mm512_and_si512(x, sign), nz, x);
    }
    _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(x));
  }
  cvt_portable(src + i, dst + i, count - i, keep);
}

/* AVX-512: a 12 x 32 tile in 24 zmm accumulators (and an 8 x 32 one for
 * the 8-row pushes the emulator makes). Per k: two weight vectors, one
 * broadcast per row, two fmas per row. */
#define Z_LD(i)                                                                                    \
  __m512 c##i##0 = _mm512_loadu_ps(c + i * ldc), c##i##1 = _mm512_loadu_ps(c + i * ldc + 16);
#define Z_FM(i)                                                                                    \
  {                                                                                                \
    __m512 x = _mm512_set1_ps(a[i * lda]);                                                         \
    c##i##0 = _mm512_fmadd_ps(x, b0, c##i##0);                                                     \
    c##i##1 = _mm512_fmadd_ps(x, b1, c##i##1);                                                     \
  }
#define Z_ST1(p, v)                                                                                \
  _mm512_storeu_ps((p), _mm512_mask_mov_ps((v), _mm512_cmp_ps_mask((v), (v), _CMP_UNORD_Q), qnan))
#define Z_ST(i)                                                                                    \
  Z_ST1(c + i * ldc, c##i##0);                                                                     \
  Z_ST1(c + i * ldc + 16, c##i##1);
#define Z_KERNEL(name, ROWS)                                                                       \
  __attribute__((target("avx512f"))) static void name(int kc, const float *a, size_t lda,          \
                                                      const float *b, float *c, size_t ldc) {      \
    ROWS(Z_LD)                                                                                     \
    for (int kk = 0; kk < kc; kk++) {                                                              \
      __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);                                \
      ROWS(Z_FM)                                                                                   \
      a++;                                                                                         \
      b += PANEL;                                                                                  \
    }                                                                                              \
    const __m512 qnan = _mm512_castsi512_ps(_mm512_set1_epi32((int)CANONICAL_NAN_BITS));           \
    ROWS(Z_ST)                                                                                     \
  }
#define ROWS8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define ROWS12(X) ROWS8(X) X(8) X(9) X(10) X(11)
Z_KERNEL(ukr_avx512, ROWS12)
Z_KERNEL(ukr_avx512_8, ROWS8)
#endif

/* ---- selection -------------------------------------------------------- */

typedef struct kernel {
  int mr; /* rows of the main micro-kernel */
  ukr_fn *ukr;
  int mr_short; /* rows of a shorter one for the last tile (<= mr) */
  ukr_fn *ukr_short;
  cvt_fn *cvt;
} kernel;

int emu_mxu_impl_available(emu_mxu_impl impl) {
  switch (impl) {
  case EMU_MXU_IMPL_AUTO:
  case EMU_MXU_IMPL_PORTABLE:
    return 1;
#if MXU_X86
  case EMU_MXU_IMPL_AVX2:
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  case EMU_MXU_IMPL_AVX512:
    return __builtin_cpu_supports("avx512f");
#endif
  default:
    return 0;
  }
}

const char *emu_mxu_impl_name(emu_mxu_impl impl) {
  switch (impl) {
  case EMU_MXU_IMPL_AUTO:
    return "auto";
  case EMU_MXU_IMPL_PORTABLE:
    return "portable";
  case EMU_MXU_IMPL_AVX2:
    return "avx2";
  case EMU_MXU_IMPL_AVX512:
    return "avx512";
  default:
    return "?";
  }
}

emu_mxu_impl emu_mxu_impl_selected(unsigned flags) {
  emu_mxu_impl want = (emu_mxu_impl)((flags >> 8) & 0xFu);
  if (want >= EMU_MXU_IMPL__COUNT || !emu_mxu_impl_available(want)) want = EMU_MXU_IMPL_AUTO;
  if (want != EMU_MXU_IMPL_AUTO) return want;
  return emu_mxu_impl_available(EMU_MXU_IMPL_AVX512) ? EMU_MXU_IMPL_AVX512
         : emu_mxu_impl_available(EMU_MXU_IMPL_AVX2) ? EMU_MXU_IMPL_AVX2
                                                     : EMU_MXU_IMPL_PORTABLE;
}

static kernel pick(unsigned flags) {
  emu_mxu_impl want = emu_mxu_impl_selected(flags);
#if MXU_X86
  if (want == EMU_MXU_IMPL_AVX512)
    return (kernel){MR_AVX512, ukr_avx512, 8, ukr_avx512_8, cvt_avx512};
  if (want == EMU_MXU_IMPL_AVX2) /* its own driver: ukr unused */
    return (kernel){MR_PORTABLE, ukr_portable, MR_PORTABLE, ukr_portable, emu_mxu_avx2_cvt};
#endif
  return (kernel){MR_PORTABLE, ukr_portable, MR_PORTABLE, ukr_portable, cvt_portable};
}

static cvt_fn *pick_cvt(unsigned flags) { return pick(flags).cvt; }

/* ---- packing of weights ---------------------------------------------- */

size_t emu_mxu_packed_w_bytes(int k, int n) {
  if (k <= 0 || n <= 0) return 0;
  size_t panels = ((size_t)n + PANEL - 1) / PANEL;
  return panels * (size_t)k * PANEL * sizeof(float);
}

void emu_mxu_pack_w(const uint16_t *w, int k, int n, int ld_w, unsigned flags, float *packed) {
  int keep = (flags & EMU_MXU_KEEP_SUBNORMALS) != 0;
  /* the AVX2 kernel reads 16-column panels: one is a contiguous stream */
  int width = emu_mxu_impl_selected(flags) == EMU_MXU_IMPL_AVX2 ? EMU_MXU_PANEL_AVX2 : PANEL;
  int panels = (n + width - 1) / width;
  cvt_fn *cvt = pick_cvt(flags);
  for (int p = 0; p < panels; p++) {
    int j0 = p * width, nr = n - j0 < width ? n - j0 : width;
    float *dst = packed + (size_t)p * (size_t)k * (size_t)width;
    if (flags & EMU_MXU_W_TRANSPOSED) {
      /* w[kk][j] = w[j * ld_w + kk]: walk each source row once. */
      for (int kk = 0; kk < k; kk++)
        for (int c = nr; c < width; c++)
          dst[(size_t)kk * (size_t)width + c] = 0.0f;
      for (int c = 0; c < nr; c++) {
        const uint16_t *src = w + (size_t)(j0 + c) * (size_t)ld_w;
        for (int kk = 0; kk < k; kk++)
          dst[(size_t)kk * (size_t)width + c] = in_f32(src[kk], keep);
      }
    } else {
      for (int kk = 0; kk < k; kk++) {
        const uint16_t *src = w + (size_t)kk * (size_t)ld_w + j0;
        float *d = dst + (size_t)kk * (size_t)width;
        cvt(src, d, nr, keep);
        for (int c = nr; c < width; c++)
          d[c] = 0.0f;
      }
    }
  }
}

/* ---- drivers ---------------------------------------------------------- */

#if MXU_X86
_Static_assert((size_t)(MC + MR_MAX) * (KC + A_PAD) + (size_t)MR_MAX * PANEL >=
                   EMU_MXU_AVX2_SCRATCH_FLOATS,
               "emu_mxu_scratch_bytes covers the AVX2 driver");
#endif

size_t emu_mxu_scratch_bytes(void) {
  return ((size_t)(MC + MR_MAX) * (KC + A_PAD) + (size_t)MR_MAX * PANEL) * sizeof(float) + 64;
}

/* One micro-tile: mr x nr live outputs of the kernel's MR x 32 tile. */
static void run_tile(const kernel *kr, int kc, const float *a, size_t lda, const float *b, float *c,
                     size_t ldc, int mr, int nr, float *tile) {
  if (mr == kr->mr && nr == PANEL) {
    kr->ukr(kc, a, lda, b, c, ldc);
    return;
  }
  if (mr == kr->mr_short && nr == PANEL) {
    kr->ukr_short(kc, a, lda, b, c, ldc);
    return;
  }
  /* Edge tile: run on a copy; lanes past the edge are discarded. The rows
   * of a past mr are the zero padding of pack_a. */
  int rows = mr <= kr->mr_short ? kr->mr_short : kr->mr;
  ukr_fn *ukr = mr <= kr->mr_short ? kr->ukr_short : kr->ukr;
  memset(tile, 0, (size_t)rows * PANEL * sizeof(float));
  emu_mxu_tile_copy(tile, PANEL, c, ldc, mr, nr);
  ukr(kc, a, lda, b, tile, PANEL);
  emu_mxu_tile_copy(c, ldc, tile, PANEL, mr, nr);
}

void emu_mxu_matmul_packed(const uint16_t *lhs, const float *packed, float *acc, int m, int k,
                           int n, int lds_lhs, int ld_acc, unsigned flags, void *scratch) {
  if (m <= 0 || k <= 0 || n <= 0) return;
  assert(lds_lhs >= k && ld_acc >= n && lhs && packed && acc && scratch);
  int keep = (flags & EMU_MXU_KEEP_SUBNORMALS) != 0;
  uintptr_t p = ((uintptr_t)scratch + 63) & ~(uintptr_t)63;
  float *abuf = (float *)p;
#if MXU_X86
  if (emu_mxu_impl_selected(flags) == EMU_MXU_IMPL_AVX2) {
    emu_mxu_avx2_matmul_packed(lhs, packed, acc, m, k, n, (size_t)lds_lhs, (size_t)ld_acc, keep,
                               abuf);
    return;
  }
#endif
  kernel kr = pick(flags);
  float *tile = abuf + (size_t)(MC + MR_MAX) * (KC + A_PAD); /* edge tile */
  int panels = (n + PANEL - 1) / PANEL;
  size_t ldc = (size_t)ld_acc;

  for (int pc = 0; pc < k; pc += KC) {
    int kc = k - pc < KC ? k - pc : KC;
    size_t lda = (size_t)kc + A_PAD;
    for (int ic = 0; ic < m; ic += MC) {
      int mc = m - ic < MC ? m - ic : MC;
      pack_a(kr.cvt, lhs + (size_t)ic * (size_t)lds_lhs + pc, lds_lhs, mc, kc, lda, kr.mr, keep,
             abuf);
      for (int jc = 0; jc < panels; jc += JPC) {
        int jend = panels - jc < JPC ? panels : jc + JPC;
        for (int ir = 0; ir < mc; ir += kr.mr) {
          int mr = mc - ir < kr.mr ? mc - ir : kr.mr;
          const float *a = abuf + (size_t)ir * lda;
          for (int jp = jc; jp < jend; jp++) {
            const float *b = packed + ((size_t)jp * (size_t)k + (size_t)pc) * PANEL;
            int j0 = jp * PANEL, nr = n - j0 < PANEL ? n - j0 : PANEL;
            run_tile(&kr, kc, a, lda, b, acc + (size_t)(ic + ir) * ldc + (size_t)j0, ldc, mr, nr,
                     tile);
          }
        }
      }
    }
  }
}

/* The contract, one element at a time: the fallback when scratch memory is
 * not available. */
static void matmul_scalar(const uint16_t *lhs, const uint16_t *w, float *acc, int m, int k, int n,
                          int lds, int ld_w, int ld_acc, unsigned flags) {
  int keep = (flags & EMU_MXU_KEEP_SUBNORMALS) != 0;
  int tr = (flags & EMU_MXU_W_TRANSPOSED) != 0;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float s = acc[(size_t)i * (size_t)ld_acc + j];
      for (int kk = 0; kk < k; kk++) {
        uint16_t wv = tr ? w[(size_t)j * (size_t)ld_w + kk] : w[(size_t)kk * (size_t)ld_w + j];
        s = fmaf(in_f32(lhs[(size_t)i * (size_t)lds + kk], keep), in_f32(wv, keep), s);
      }
      acc[(size_t)i * (size_t)ld_acc + j] = canon(s);
    }
}

/* The general entry packs weights one k block at a time (KC x NC columns)
 * and streams all of lhs against it, so lhs and w are each converted once
 * when n <= NC. Splitting k into blocks keeps each output's chain in
 * ascending k (the blocks run in order, acc carries the value). */
enum { NC = 4096 };

void emu_mxu_matmul_bf16_ex(const uint16_t *lhs, const uint16_t *w, float *acc, int m, int k, int n,
                            int lds_lhs, int ld_w, int ld_acc, unsigned flags) {
  if (m <= 0 || k <= 0 || n <= 0) return;
  assert(lds_lhs >= k && ld_acc >= n && ld_w >= ((flags & EMU_MXU_W_TRANSPOSED) ? k : n));
  size_t wbytes = emu_mxu_packed_w_bytes(k < KC ? k : KC, n < NC ? n : NC);
  size_t sbytes = emu_mxu_scratch_bytes();
  char *mem = malloc(wbytes + sbytes + 64);
  if (!mem) {
    matmul_scalar(lhs, w, acc, m, k, n, lds_lhs, ld_w, ld_acc, flags);
    return;
  }
  float *packed = (float *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
  void *scratch = (char *)packed + wbytes;
  int tr = (flags & EMU_MXU_W_TRANSPOSED) != 0;
  for (int jc = 0; jc < n; jc += NC) {
    int nc = n - jc < NC ? n - jc : NC;
    for (int pc = 0; pc < k; pc += KC) {
      int kc = k - pc < KC ? k - pc : KC;
      const uint16_t *wb =
          tr ? w + (size_t)jc * (size_t)ld_w + pc : w + (size_t)pc * (size_t)ld_w + jc;
      emu_mxu_pack_w(wb, kc, nc, ld_w, flags, packed);
      emu_mxu_matmul_packed(lhs + pc, packed, acc + jc, m, kc, nc, lds_lhs, ld_acc, flags, scratch);
    }
  }
  free(mem);
}

void emu_mxu_matmul_bf16(const uint16_t *lhs, const uint16_t *w, float *acc, int m, int k, int n,
                         int lds_lhs, int ld_w, int ld_acc) {
  emu_mxu_matmul_bf16_ex(lhs, w, acc, m, k, n, lds_lhs, ld_w, ld_acc, 0);
}
