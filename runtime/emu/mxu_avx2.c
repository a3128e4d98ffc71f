/* mxu_avx2.c: the MXU's host kernel for x86-64 AVX2 + FMA (contract in
 * mxu.h; driver interface in mxu_kernels.h).
 *
 * Every function carries target("avx2,fma"), so this file builds without
 * -mavx2 and the library still runs on hosts without AVX2: mxu.c calls in
 * here only after emu_mxu_impl_available(EMU_MXU_IMPL_AVX2).
 *
 * Structure (the BLIS loop order; Van Zee & van de Geijn, "BLIS: A Framework
 * for Rapidly Instantiating BLAS Functionality", 2015):
 *   - k in blocks of KC2; within one, lhs in blocks of MC2 rows, converted
 *     from bf16 and packed into row tiles of 6 (or 4) rows stored k-major,
 *     a[kk][i], so one tile is one sequential stream (the block sits in L2);
 *   - the weights come packed in 16-column panels (emu_mxu_pack_w, already
 *     converted to f32); the KC2 x 16 floats (16 KiB) of one panel are a
 *     contiguous block that stays in L1 while every row tile of the lhs
 *     block streams past it;
 *   - a micro-kernel holds a 6 x 16 (or 4 x 16) block of acc in 12 (8) ymm
 *     registers: per k two weight vectors, one broadcast per row, two FMAs
 *     per row; it loads the block from acc, runs kc FMAs per element in
 *     ascending k, canonicalises NaNs and stores it back, and meanwhile
 *     prefetches the acc block it runs on next.
 * Bit-exactness is the argument of mxu.c: each output is the chain
 * acc = fma(a_kk, w_kk, acc) over kk ascending; blocking only splits the
 * chain at a store and reload of the same f32, and rows or columns past the
 * edges (zeros) feed outputs that are never stored. */
#include "runtime/emu/mxu_kernels.h"

#if EMU_MXU_X86
#include <immintrin.h>
#include <string.h>

enum {
  KC2 = 256,               /* k per block: a panel's block is 256 x 16 floats, 16 KiB (L1) */
  MC2 = 192,               /* lhs rows per block: MC2 x KC2 floats, 192 KiB (L2) */
  NR = EMU_MXU_PANEL_AVX2, /* columns per packed panel and per micro-tile */
  MR6 = 6,                 /* rows of the main micro-tile */
  MR4 = 4,                 /* rows of the short one (pushes of 8 rows are 4 + 4) */
  TILES = MC2 / MR4,
};

_Static_assert((MC2 + MR6) * KC2 + MR6 * NR <= EMU_MXU_AVX2_SCRATCH_FLOATS, "scratch size");

#define AVX2 __attribute__((target("avx2,fma")))

AVX2 void emu_mxu_avx2_cvt(const uint16_t *src, float *dst, int count, int keep) {
  const __m256i expo = _mm256_set1_epi32(0x7F800000), sign = _mm256_set1_epi32((int)0x80000000u);
  int i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256i x =
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + i))), 16);
    if (!keep) {
      __m256i z = _mm256_cmpeq_epi32(_mm256_and_si256(x, expo), _mm256_setzero_si256());
      x = _mm256_blendv_epi8(x, _mm256_and_si256(x, sign), z);
    }
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(x));
  }
  for (; i < count; i++) {
    uint16_t h = src[i];
    if (!keep && (h & 0x7F80u) == 0) h &= 0x8000u;
    uint32_t u = (uint32_t)h << 16;
    memcpy(dst + i, &u, sizeof u);
  }
}

/* Micro-kernels. Contract: for i < R, j < 16,
 *   c[i*ldc + j] = canon(fma chain over kk < kc of a[kk*R + i] * b[kk*16 + j]
 *                        starting from c[i*ldc + j]);
 * next is the acc block the caller runs on next (prefetched, never read). */
#define LD(i)                                                                                      \
  __m256 c##i##0 = _mm256_loadu_ps(c + i * ldc), c##i##1 = _mm256_loadu_ps(c + i * ldc + 8);
#define FM(i)                                                                                      \
  {                                                                                                \
    __m256 x = _mm256_broadcast_ss(a + i);                                                         \
    c##i##0 = _mm256_fmadd_ps(x, b0, c##i##0);                                                     \
    c##i##1 = _mm256_fmadd_ps(x, b1, c##i##1);                                                     \
  }
#define ST1(p, v)                                                                                  \
  _mm256_storeu_ps((p), _mm256_blendv_ps((v), qnan, _mm256_cmp_ps((v), (v), _CMP_UNORD_Q)))
#define ST(i)                                                                                      \
  ST1(c + i * ldc, c##i##0);                                                                       \
  ST1(c + i * ldc + 8, c##i##1);
#define PF(i)                                                                                      \
  _mm_prefetch((const char *)(next + i * ldc), _MM_HINT_T0);                                       \
  _mm_prefetch((const char *)(next + i * ldc + NR - 1), _MM_HINT_T0);
#define KERNEL(name, R, ROWS)                                                                      \
  AVX2 static void name(int kc, const float *a, const float *b, float *c, size_t ldc,              \
                        const float *next) {                                                       \
    ROWS(LD)                                                                                       \
    ROWS(PF)                                                                                       \
    _Pragma("GCC unroll 4") for (int kk = 0; kk < kc; kk++) {                                      \
      __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);                                 \
      ROWS(FM)                                                                                     \
      a += R;                                                                                      \
      b += NR;                                                                                     \
    }                                                                                              \
    const __m256 qnan = _mm256_castsi256_ps(_mm256_set1_epi32((int)EMU_MXU_CANONICAL_NAN_BITS));   \
    ROWS(ST)                                                                                       \
  }
#define ROWS4(X) X(0) X(1) X(2) X(3)
#define ROWS6(X) ROWS4(X) X(4) X(5)
KERNEL(ukr6, MR6, ROWS6)
KERNEL(ukr4, MR4, ROWS4)
#undef KERNEL
#undef LD
#undef FM
#undef ST1
#undef ST
#undef PF

typedef void ukr_fn(int kc, const float *a, const float *b, float *c, size_t ldc,
                    const float *next);

/* A block of mc rows as row tiles: tile t has rows[t] kernel rows, live[t]
 * of them real (live < rows only for the last tile, which runs on a copy);
 * the rows sum to at most mc + 3. */
typedef struct plan {
  int count;
  int rows[TILES], live[TILES];
} plan;

static void plan_tiles(int mc, plan *p) {
  int q = mc / MR6, r = mc % MR6;
  if (r == 2 && q > 0) q--, r = 8; /* 6(q-1) + 4 + 4: no padded rows */
  p->count = 0;
  for (int t = 0; t < q; t++)
    p->rows[p->count] = MR6, p->live[p->count++] = MR6;
  if (r == 5) p->rows[p->count] = MR6, p->live[p->count++] = r, r = 0;
  for (; r >= MR4; r -= MR4)
    p->rows[p->count] = MR4, p->live[p->count++] = MR4;
  if (r > 0) p->rows[p->count] = MR4, p->live[p->count++] = r;
}

/* Converts lhs rows [0, mc) x k [0, kc) into the plan's tiles, k-major per
 * tile, with zeros in the padded rows of a short last tile. */
AVX2 static void pack_lhs(const uint16_t *lhs, size_t lds, int kc, int keep, const plan *p,
                          float *dst) {
  float row[KC2];
  for (int t = 0, r0 = 0; t < p->count; r0 += p->rows[t], t++) {
    int rr = p->rows[t];
    for (int i = 0; i < rr; i++) {
      if (i < p->live[t])
        emu_mxu_avx2_cvt(lhs + (size_t)(r0 + i) * lds, row, kc, keep);
      else
        memset(row, 0, (size_t)kc * sizeof(float));
      for (int kk = 0; kk < kc; kk++)
        dst[(size_t)kk * (size_t)rr + (size_t)i] = row[kk];
    }
    dst += (size_t)kc * (size_t)rr;
  }
}

/* One panel column of row tiles: acc[ic..][j0, j0 + nr) for the block, b
 * the panel's row pc (stride NR). bnext (or NULL) is the next column's
 * panel: its kc lines of 64 bytes are prefetched into L2 a few per tile, so
 * the next column starts from L2 rather than L3. */
AVX2 static void run_column(int kc, const float *apack, const plan *p, const float *b,
                            const float *bnext, float *c, size_t ldc, int nr, float *edge) {
  const float *c0 = c;
  int per_tile = (kc + p->count - 1) / p->count, line = 0;
  for (int t = 0; t < p->count; t++) {
    for (int l = 0; bnext && l < per_tile && line < kc; l++, line++)
      _mm_prefetch((const char *)(bnext + (size_t)line * NR), _MM_HINT_T1);
    int rr = p->rows[t], live = p->live[t];
    ukr_fn *ukr = rr == MR6 ? ukr6 : ukr4;
    const float *next = t + 1 < p->count ? c + (size_t)rr * ldc : c0 + NR;
    if (live == rr && nr == NR) {
      ukr(kc, apack, b, c, ldc, next);
    } else {
      /* Edge tile on a copy; lanes and rows past the edge are discarded. */
      memset(edge, 0, (size_t)rr * NR * sizeof(float));
      emu_mxu_tile_copy(edge, NR, c, ldc, live, nr);
      ukr(kc, apack, b, edge, NR, edge);
      emu_mxu_tile_copy(c, ldc, edge, NR, live, nr);
    }
    apack += (size_t)kc * (size_t)rr;
    c += (size_t)rr * ldc;
  }
}

AVX2 void emu_mxu_avx2_matmul_packed(const uint16_t *lhs, const float *packed, float *acc, int m,
                                     int k, int n, size_t lds, size_t ldc, int keep,
                                     float *scratch) {
  float *edge = scratch + (size_t)(MC2 + MR6) * KC2;
  int panels = (n + NR - 1) / NR;
  plan p;
  for (int pc = 0; pc < k; pc += KC2) {
    int kc = k - pc < KC2 ? k - pc : KC2;
    for (int ic = 0; ic < m; ic += MC2) {
      int mc = m - ic < MC2 ? m - ic : MC2;
      plan_tiles(mc, &p);
      pack_lhs(lhs + (size_t)ic * lds + (size_t)pc, lds, kc, keep, &p, scratch);
      for (int jp = 0; jp < panels; jp++) {
        const float *b = packed + ((size_t)jp * (size_t)k + (size_t)pc) * NR;
        int j0 = jp * NR, nr = n - j0 < NR ? n - j0 : NR;
        const float *bnext = jp + 1 < panels ? b + (size_t)k * NR : NULL;
        run_column(kc, scratch, &p, b, bnext, acc + (size_t)ic * ldc + (size_t)j0, ldc, nr, edge);
      }
    }
  }
}
#endif
