/* lk_gemm.h: the body of a library GEMM variant (lk.h), included once by
 * each lk_<isa>.c after it defines:
 *   LK_VL                       floats per vector
 *   vec                         the vector type
 *   v_zero, v_load, v_store, v_bcast, v_fma (a * b + c, fused),
 *   v_add, v_sub, v_mul, v_div, v_maxmin (elem.c's f32 maximum / minimum:
 *   the first NaN operand, else the first operand on ties)
 *   LK_NAME                     the variant's name (a string)
 *   LK_SYM(x)                   x suffixed with the variant (file-unique names)
 *   LK_TILES(X)                 X(MR, NV) for each register tile lk_plan picks
 *   LK_RUNS                     its lk_variant.runs function
 * Structure (GotoBLAS / BLIS, as gemm.c): B packed once per call as NR-wide
 * column panels per K block; tiles of A packed per K block for up to TPB
 * row tiles; each packed A tile (in L1) meets a chunk of JC B panels (in
 * L2); the micro-kernel does kc rank-1 updates of MR x NV vectors. */
#include <string.h>

enum { TPB = 16, JC = 8, KC_MAX = 384, MR_MAX = 12 };

static vec v_epi(int64_t op, vec x, vec y) {
  switch (op) {
  case LK_ADD:
    return v_add(x, y);
  case LK_SUB:
    return v_sub(x, y);
  case LK_MUL:
    return v_mul(x, y);
  case LK_DIV:
    return v_div(x, y);
  case LK_MAX:
    return v_maxmin(x, y, true);
  case LK_MIN:
    return v_maxmin(x, y, false);
  default:
    return x;
  }
}

/* acc, the outputs of one row at columns col0 .. col0 + LK_VL - 1 (the
 * first `valid` inside the row), after the epilogue's operations. */
static vec epilogue(const lk_gemm *g, vec acc, int64_t col0, int valid) {
  for (int64_t i = 0; i < g->nepi; i++) {
    const lk_epi *ep = &g->epi[i];
    vec x;
    if (!(ep->flags & LK_EPI_COL)) {
      x = v_bcast(ep->x[0]);
    } else if (valid == LK_VL) {
      x = v_load(ep->x + col0);
    } else {
      float t[LK_VL] = {0};
      memcpy(t, ep->x + col0, (size_t)valid * sizeof(float));
      x = v_load(t);
    }
    acc = ep->flags & LK_EPI_SWAP ? v_epi(ep->op, x, acc) : v_epi(ep->op, acc, x);
  }
  return acc;
}

/* One MR x (NV * LK_VL) tile: acc = (first ? 0 : C) + Ap * Bp over kc, then
 * stored to the rows x cols of it inside C, through the epilogue when last. */
static inline __attribute__((always_inline)) void tile(int MR, int NV, int64_t kc, const float *ap,
                                                       const float *bp, float *c, int64_t ldc,
                                                       int rows, int cols, bool first, bool last,
                                                       const lk_gemm *g, int64_t col0) {
  const int NR = NV * LK_VL;
  vec acc[MR_MAX * 2];
  bool full = rows == MR && cols == NR;
#pragma GCC unroll 24
  for (int i = 0; i < MR * NV; i++)
    acc[i] = v_zero();
  if (!first) {
    if (full) {
#pragma GCC unroll 12
      for (int r = 0; r < MR; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
          acc[r * NV + v] = v_load(c + r * ldc + v * LK_VL);
    } else {
      for (int r = 0; r < rows; r++) {
        float t[2 * LK_VL] = {0};
        memcpy(t, c + r * ldc, (size_t)cols * sizeof(float));
        for (int v = 0; v < NV; v++)
          acc[r * NV + v] = v_load(t + v * LK_VL);
      }
    }
  }
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; k++) {
    const float *bk = bp + k * NR, *ak = ap + k * MR;
    vec b0 = v_load(bk), b1 = NV > 1 ? v_load(bk + LK_VL) : b0;
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++) {
      vec a = v_bcast(ak[r]);
      acc[r * NV] = v_fma(a, b0, acc[r * NV]);
      if (NV > 1) acc[r * NV + 1] = v_fma(a, b1, acc[r * NV + 1]);
    }
  }
  if (last && g->nepi > 0)
    for (int r = 0; r < rows; r++)
      for (int v = 0; v < NV; v++) {
        int valid = cols - v * LK_VL < LK_VL ? cols - v * LK_VL : LK_VL;
        if (valid > 0) acc[r * NV + v] = epilogue(g, acc[r * NV + v], col0 + v * LK_VL, valid);
      }
  if (full) {
#pragma GCC unroll 12
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 2
      for (int v = 0; v < NV; v++)
        v_store(c + r * ldc + v * LK_VL, acc[r * NV + v]);
  } else {
    for (int r = 0; r < rows; r++) {
      float t[2 * LK_VL];
      for (int v = 0; v < NV; v++)
        v_store(t + v * LK_VL, acc[r * NV + v]);
      memcpy(c + r * ldc, t, (size_t)cols * sizeof(float));
    }
  }
}

typedef void (*tile_fn)(int64_t kc, const float *ap, const float *bp, float *c, int64_t ldc,
                        int rows, int cols, bool first, bool last, const lk_gemm *g, int64_t col0);

#define LK_TILE_FN(MR, NV)                                                                         \
  static void LK_SYM(tile_##MR##x##NV)(int64_t kc, const float *ap, const float *bp, float *c,     \
                                       int64_t ldc, int rows, int cols, bool first, bool last,     \
                                       const lk_gemm *g, int64_t col0) {                           \
    tile(MR, NV, kc, ap, bp, c, ldc, rows, cols, first, last, g, col0);                            \
  }
LK_TILES(LK_TILE_FN)
#undef LK_TILE_FN

static tile_fn tile_for(int MR, int NV) {
#define LK_TILE_CASE(MR_, NV_)                                                                     \
  if (MR == MR_ && NV == NV_) return LK_SYM(tile_##MR_##x##NV_);
  LK_TILES(LK_TILE_CASE)
#undef LK_TILE_CASE
  return NULL;
}

/* Bp[b][kb][jt][kk][NR] = B[b][k][jt * NR + jj], zero beyond N; rows (b, k). */
static void LK_SYM(packb)(void *args, int64_t lo, int64_t hi) {
  const lk_gemm *g = args;
  lk_geom geo;
  cpu_lk_plan(&LK_SYM(cpu_lk), g->M, g->N, g->K, &geo);
  int64_t K = g->K, N = g->N, NR = geo.NR, Npad = geo.Nt * NR;
  for (int64_t r = lo; r < hi; r++) {
    int64_t bi = r / K, k = r % K, k0 = k / geo.KC * geo.KC, kin = k - k0;
    int64_t kc = geo.KC < K - k0 ? geo.KC : K - k0;
    float *d = g->Bp + bi * K * Npad + k0 * Npad + kin * NR;
    const float *s = g->B + r * N;
    for (int64_t jt = 0; jt < geo.Nt; jt++) {
      int64_t j0 = jt * NR, n = N - j0 < NR ? N - j0 : NR;
      float *dj = d + jt * kc * NR;
      memcpy(dj, s + j0, (size_t)n * sizeof(float));
      for (int64_t jj = n; jj < NR; jj++)
        dj[jj] = 0;
    }
  }
}

/* Ap[(it * kc + kk) * MR + r] = A[row][k0 + kk], row = (t0 + it) * MR + r,
 * zero for rows at or beyond M. */
static void pack_a(const lk_geom *geo, const float *A, float *ap, int64_t t0, int64_t nt,
                   int64_t k0, int64_t kc) {
  int MR = geo->MR;
  for (int64_t it = 0; it < nt; it++) {
    int64_t row0 = (t0 + it) * MR;
    float *d = ap + it * kc * MR;
    for (int r = 0; r < MR; r++) {
      int64_t row = row0 + r;
      if (row >= geo->M) {
        for (int64_t kk = 0; kk < kc; kk++)
          d[kk * MR + r] = 0;
        continue;
      }
      const float *s = A + row * geo->K + k0;
      for (int64_t kk = 0; kk < kc; kk++)
        d[kk * MR + r] = s[kk];
    }
  }
}

/* Tiles [lo, hi) of the NB * Mt row tiles. */
static void LK_SYM(tiles)(void *args, int64_t lo, int64_t hi) {
  const lk_gemm *g = args;
  lk_geom geo;
  cpu_lk_plan(&LK_SYM(cpu_lk), g->M, g->N, g->K, &geo);
  tile_fn fn = tile_for(geo.MR, geo.NV);
  int64_t M = g->M, N = g->N, K = g->K, Mt = geo.Mt, Nt = geo.Nt, NR = geo.NR, MR = geo.MR;
  float ap[TPB * MR_MAX * KC_MAX] __attribute__((aligned(64)));
  for (int64_t pos = lo; pos < hi;) {
    int64_t bi = pos / Mt, t0 = pos % Mt;
    int64_t nt = TPB < Mt - t0 ? TPB : Mt - t0;
    if (nt > hi - pos) nt = hi - pos;
    const float *A = g->A + bi * M * K;
    for (int64_t kb = 0; kb < geo.nkb; kb++) {
      int64_t k0 = kb * geo.KC, kc = geo.KC < K - k0 ? geo.KC : K - k0;
      pack_a(&geo, A, ap, t0, nt, k0, kc);
      for (int64_t j0 = 0; j0 < Nt; j0 += JC)
        for (int64_t it = 0; it < nt; it++) {
          int64_t rowin = (t0 + it) * MR;
          int rows = (int)(M - rowin < MR ? M - rowin : MR);
          float *crow = g->C + (bi * M + rowin) * N;
          for (int64_t jt = j0; jt < j0 + JC && jt < Nt; jt++) {
            const float *bp = g->Bp + bi * K * Nt * NR + k0 * Nt * NR + jt * kc * NR;
            int cols = (int)(N - jt * NR < NR ? N - jt * NR : NR);
            fn(kc, ap + it * kc * MR, bp, crow + jt * NR, N, rows, cols, kb == 0, kb == geo.nkb - 1,
               g, jt * NR);
          }
        }
    }
    pos += nt;
  }
}

const lk_variant LK_SYM(cpu_lk) = {LK_NAME, LK_TILES_DOC,  LK_VL,
                                   LK_RUNS, LK_SYM(packb), LK_SYM(tiles)};
