/* vmath.c: the scalar kernels of the emulated vector unit, shared by the
 * emulator (runtime/emu/vector.c applies them lane by lane) and the
 * reference evaluator's TPU-numerics mode (ir/eval_tpu.c), so that both
 * compute the same bits by construction. docs/numerics.md describes them.
 *
 * Contract: every function is pure and thread-safe; the host runs in the
 * default floating-point environment (round to nearest even, subnormals
 * kept). Transcendentals are the double-precision C library function of
 * the exactly widened f32 input, rounded once to f32. NaN canonicalisation
 * (vmath_bits) is applied by the caller to arithmetic results. */
#include "base/base.h"

#include <math.h>

uint32_t vmath_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return f != f ? VMATH_CANON_NAN : u;
}

float vmath_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

float vmath_exp(float x) { return (float)exp((double)x); }
float vmath_log(float x) { return (float)log((double)x); }
float vmath_tanh(float x) { return (float)tanh((double)x); }
float vmath_logistic(float x) { return (float)(1.0 / (1.0 + exp(-(double)x))); }
float vmath_sqrt(float x) { return sqrtf(x); }
float vmath_rsqrt(float x) { return (float)(1.0 / sqrt((double)x)); }
float vmath_floor(float x) { return floorf(x); }
float vmath_ceil(float x) { return ceilf(x); }
float vmath_rne(float x) { return nearbyintf(x); } /* default mode: RNE */
float vmath_sin(float x) { return (float)sin((double)x); }
float vmath_cos(float x) { return (float)cos((double)x); }
float vmath_expm1(float x) { return (float)expm1((double)x); }
float vmath_log1p(float x) { return (float)log1p((double)x); }
float vmath_erf(float x) { return (float)erf((double)x); }
float vmath_pow(float x, float y) { return (float)pow((double)x, (double)y); }
float vmath_atan2(float y, float x) { return (float)atan2((double)y, (double)x); }
float vmath_cbrt(float x) { return (float)cbrt((double)x); }
float vmath_fmod(float x, float y) { return fmodf(x, y); } /* exact */

uint32_t vmath_fmax(uint32_t a, uint32_t b) {
  float x = vmath_float(a), y = vmath_float(b);
  if (x != x || y != y) return VMATH_CANON_NAN;
  if (x == y) return a & b; /* +0 wins over -0 */
  return x > y ? a : b;
}

uint32_t vmath_fmin(uint32_t a, uint32_t b) {
  float x = vmath_float(a), y = vmath_float(b);
  if (x != x || y != y) return VMATH_CANON_NAN;
  if (x == y) return a | b; /* -0 wins */
  return x < y ? a : b;
}

int32_t vmath_cvtfi(uint32_t u) {
  float x = vmath_float(u);
  if (x != x) return 0;
  if (x >= 2147483648.0f) return INT32_MAX;
  if (x < -2147483648.0f) return INT32_MIN;
  return (int32_t)x;
}

float vmath_cvtif(uint32_t u) { return (float)(int32_t)u; }
