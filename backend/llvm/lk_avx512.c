/* lk_avx512.c: the library GEMM on AVX-512F (16 floats per vector; 12 x 32,
 * 8 x 32 and 8 x 16 register tiles, as gemm.c picks them). Built with
 * -mavx512f -mfma (meson); called only where cpu_lk_avx512.runs() holds. */
#include "backend/llvm/lk.h"

#include <immintrin.h>

typedef __m512 vec;
#define LK_VL 16
#define LK_NAME "avx512"
#define LK_TILES_DOC "12x32, 8x32 and 8x16"
#define LK_SYM(x) x##_avx512
#define LK_TILES(X) X(12, 2) X(8, 2) X(8, 1)
#define LK_RUNS cpu_lk_runs_avx512
bool cpu_lk_runs_avx512(void);

static inline vec v_zero(void) { return _mm512_setzero_ps(); }
static inline vec v_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void v_store(float *p, vec v) { _mm512_storeu_ps(p, v); }
static inline vec v_bcast(float x) { return _mm512_set1_ps(x); }
static inline vec v_fma(vec a, vec b, vec c) { return _mm512_fmadd_ps(a, b, c); }
static inline vec v_add(vec a, vec b) { return _mm512_add_ps(a, b); }
static inline vec v_sub(vec a, vec b) { return _mm512_sub_ps(a, b); }
static inline vec v_mul(vec a, vec b) { return _mm512_mul_ps(a, b); }
static inline vec v_div(vec a, vec b) { return _mm512_div_ps(a, b); }
static inline vec v_maxmin(vec x, vec y, bool max) {
  __mmask16 c = max ? _mm512_cmp_ps_mask(x, y, _CMP_LT_OQ) : _mm512_cmp_ps_mask(y, x, _CMP_LT_OQ);
  vec r = _mm512_mask_blend_ps(c, x, y);
  r = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q), r, y);
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), r, x);
}

#include "backend/llvm/lk_gemm.h"
