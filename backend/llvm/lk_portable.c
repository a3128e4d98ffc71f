/* lk_portable.c: the library GEMM in plain C for any CPU (8-float "vectors"
 * of scalars, 6 x 16 and 8 x 8 tiles; each product through fmaf, so the
 * bits are those of the vector variants, at a fraction of their speed). */
#include "backend/llvm/lk.h"

#include <math.h>

typedef struct vec {
  float f[8];
} vec;
#define LK_VL 8
#define LK_NAME "portable"
#define LK_TILES_DOC "6x16 and 8x8, scalar fmaf"
#define LK_SYM(x) x##_portable
#define LK_TILES(X) X(6, 2) X(8, 1)
#define LK_RUNS cpu_lk_runs_portable
bool cpu_lk_runs_portable(void);

static inline vec v_zero(void) { return (vec){{0}}; }
static inline vec v_load(const float *p) {
  vec v;
  for (int i = 0; i < 8; i++)
    v.f[i] = p[i];
  return v;
}
static inline void v_store(float *p, vec v) {
  for (int i = 0; i < 8; i++)
    p[i] = v.f[i];
}
static inline vec v_bcast(float x) {
  vec v;
  for (int i = 0; i < 8; i++)
    v.f[i] = x;
  return v;
}
static inline vec v_fma(vec a, vec b, vec c) {
  for (int i = 0; i < 8; i++)
    c.f[i] = fmaf(a.f[i], b.f[i], c.f[i]);
  return c;
}
#define LK_LANES(expr)                                                                             \
  vec r;                                                                                           \
  for (int i = 0; i < 8; i++) {                                                                    \
    float x = a.f[i], y = b.f[i];                                                                  \
    r.f[i] = (expr);                                                                               \
  }                                                                                                \
  return r;
static inline vec v_add(vec a, vec b) { LK_LANES(x + y) }
static inline vec v_sub(vec a, vec b) { LK_LANES(x - y) }
static inline vec v_mul(vec a, vec b) { LK_LANES(x * y) }
static inline vec v_div(vec a, vec b) { LK_LANES(x / y) }
static inline vec v_maxmin(vec a, vec b, bool max) {
  LK_LANES(isnan(x) ? x : isnan(y) ? y : (max ? x < y : y < x) ? y : x)
}
#undef LK_LANES

#include "backend/llvm/lk_gemm.h"
