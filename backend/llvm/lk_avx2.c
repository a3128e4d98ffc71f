/* lk_avx2.c: the library GEMM on AVX2 with FMA (8 floats per vector; 6 x 16
 * and 8 x 8 register tiles, as gemm.c picks them). Built with -mavx2 -mfma
 * (meson); called only where cpu_lk_avx2.runs() holds. */
#include "backend/llvm/lk.h"

#include <immintrin.h>

typedef __m256 vec;
#define LK_VL 8
#define LK_NAME "avx2"
#define LK_TILES_DOC "6x16 and 8x8"
#define LK_SYM(x) x##_avx2
#define LK_TILES(X) X(6, 2) X(8, 1)
#define LK_RUNS cpu_lk_runs_avx2
bool cpu_lk_runs_avx2(void);

static inline vec v_zero(void) { return _mm256_setzero_ps(); }
static inline vec v_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void v_store(float *p, vec v) { _mm256_storeu_ps(p, v); }
static inline vec v_bcast(float x) { return _mm256_set1_ps(x); }
static inline vec v_fma(vec a, vec b, vec c) { return _mm256_fmadd_ps(a, b, c); }
static inline vec v_add(vec a, vec b) { return _mm256_add_ps(a, b); }
static inline vec v_sub(vec a, vec b) { return _mm256_sub_ps(a, b); }
static inline vec v_mul(vec a, vec b) { return _mm256_mul_ps(a, b); }
static inline vec v_div(vec a, vec b) { return _mm256_div_ps(a, b); }
static inline vec v_maxmin(vec x, vec y, bool max) {
  vec c = max ? _mm256_cmp_ps(x, y, _CMP_LT_OQ) : _mm256_cmp_ps(y, x, _CMP_LT_OQ);
  vec r = _mm256_blendv_ps(x, y, c);
  r = _mm256_blendv_ps(r, y, _mm256_cmp_ps(y, y, _CMP_UNORD_Q));
  return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

#include "backend/llvm/lk_gemm.h"
