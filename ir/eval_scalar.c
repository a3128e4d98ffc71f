/* eval_scalar.c: the semantics of one element: unary, binary, compare and
 * convert for every element type. Elementwise ops, the reduce fast path and
 * convert all go through these functions, so they agree bit for bit.
 *
 * Float types compute in f32 (bf16 and f16 load exactly, the result is
 * rounded to nearest even once, see eval_internal.h). Integer types compute
 * on int64 values and wrap to the type's width through uint64. Definitions
 * that XLA's evaluator leaves to the C++ library are fixed here:
 *  - max/min: NaN in either operand propagates (the first NaN operand is
 *    returned); otherwise max(a, b) = a < b ? b : a and min(a, b) = b < a ? b
 *    : a, so max(-0, +0) = -0 and min(+0, -0) = +0 (the first operand wins
 *    ties, as std::max/std::min).
 *  - integer divide: x / 0 = -1, INT_MIN / -1 = INT_MIN; remainder: x % 0 =
 *    x, INT_MIN % -1 = 0; both truncate toward zero.
 *  - integer power: y >= 0 exact with wraparound; y < 0: 1 for x = 1, +-1 for
 *    x = -1 by the parity of y, else 0.
 *  - shifts: an amount outside [0, bits) gives 0 (shift-left, logical) or
 *    the sign fill (arithmetic).
 *  - sign: -1, 0, +1 keeping the sign of zero; NaN stays NaN.
 *  - round-nearest-even does not depend on the floating-point environment.
 *  - clz/popcnt count within the type's width (pred: 1 bit). */
#include "ir/eval_internal.h"

/* ---- floats ------------------------------------------------------------ */

static float round_half_even(float x) {
  if (!isfinite(x)) return x;
  float t = truncf(x), d = fabsf(x - t);
  if (d < 0.5f) return t;
  if (d > 0.5f) return t + copysignf(1.0f, x);
  /* a tie: pick the even neighbour */
  return fmodf(t, 2.0f) == 0.0f ? t : t + copysignf(1.0f, x);
}

/* Returns false when op is not a float unary op; else *r. */
static bool unary_f(ir_op op, float x, float *r) {
  switch (op) {
  case IR_OP_ABS:
    *r = fabsf(x);
    return true;
  case IR_OP_NEGATE:
    *r = -x;
    return true;
  case IR_OP_EXP:
    *r = expf(x);
    return true;
  case IR_OP_EXPM1:
    *r = expm1f(x);
    return true;
  case IR_OP_LOG:
    *r = logf(x);
    return true;
  case IR_OP_LOG1P:
    *r = log1pf(x);
    return true;
  case IR_OP_SQRT:
    *r = sqrtf(x);
    return true;
  case IR_OP_RSQRT:
    *r = 1.0f / sqrtf(x);
    return true;
  case IR_OP_CBRT:
    *r = cbrtf(x);
    return true;
  case IR_OP_TANH:
    *r = tanhf(x);
    return true;
  case IR_OP_LOGISTIC:
    *r = 1.0f / (1.0f + expf(-x));
    return true;
  case IR_OP_SINE:
    *r = sinf(x);
    return true;
  case IR_OP_COSINE:
    *r = cosf(x);
    return true;
  case IR_OP_FLOOR:
    *r = floorf(x);
    return true;
  case IR_OP_CEIL:
    *r = ceilf(x);
    return true;
  case IR_OP_ROUND_AFZ:
    *r = roundf(x);
    return true;
  case IR_OP_ROUND_EVEN:
    *r = round_half_even(x);
    return true;
  case IR_OP_SIGN:
    *r = isnan(x) ? x : copysignf(x != 0.0f ? 1.0f : 0.0f, x);
    return true;
  default:
    return false;
  }
}

static bool binary_f(ir_op op, float a, float b, float *r) {
  switch (op) {
  case IR_OP_ADD:
    *r = a + b;
    return true;
  case IR_OP_SUBTRACT:
    *r = a - b;
    return true;
  case IR_OP_MULTIPLY:
    *r = a * b;
    return true;
  case IR_OP_DIVIDE:
    *r = a / b;
    return true;
  case IR_OP_REMAINDER:
    *r = fmodf(a, b);
    return true;
  case IR_OP_MAXIMUM:
    *r = isnan(a) ? a : isnan(b) ? b : a < b ? b : a;
    return true;
  case IR_OP_MINIMUM:
    *r = isnan(a) ? a : isnan(b) ? b : b < a ? b : a;
    return true;
  case IR_OP_POWER:
    *r = powf(a, b);
    return true;
  case IR_OP_ATAN2:
    *r = atan2f(a, b);
    return true;
  default:
    return false;
  }
}

/* ---- integers ---------------------------------------------------------- */

static int64_t int_min(ir_type t) { return t == IR_PRED ? 0 : t == IR_S8 ? -128 : INT32_MIN; }

static int64_t int_pow(ir_type t, int64_t x, int64_t y) {
  if (y < 0) return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
  uint64_t base = (uint64_t)x, acc = 1;
  while (y > 0) {
    if (y & 1) acc *= base;
    base *= base;
    y >>= 1;
  }
  return ev_wrap(t, acc);
}

static bool unary_i(ir_op op, ir_type t, int64_t x, int64_t *r) {
  int bits = ev_int_bits(t);
  uint64_t mask = ((uint64_t)1 << bits) - 1;
  switch (op) {
  case IR_OP_ABS:
    *r = ev_wrap(t, x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x);
    return true;
  case IR_OP_NEGATE:
    *r = ev_wrap(t, (uint64_t)0 - (uint64_t)x);
    return true;
  case IR_OP_SIGN:
    *r = (x > 0) - (x < 0);
    return true;
  case IR_OP_NOT:
    *r = t == IR_PRED ? !x : ev_wrap(t, ~(uint64_t)x);
    return true;
  case IR_OP_POPCNT:
    *r = __builtin_popcountll((uint64_t)x & mask);
    return true;
  case IR_OP_CLZ: {
    uint64_t u = (uint64_t)x & mask;
    int n = 0;
    for (int b = bits - 1; b >= 0 && !((u >> b) & 1); b--)
      n++;
    *r = n;
    return true;
  }
  default:
    return false;
  }
}

static bool binary_i(ir_op op, ir_type t, int64_t a, int64_t b, int64_t *r) {
  int bits = ev_int_bits(t);
  uint64_t mask = ((uint64_t)1 << bits) - 1;
  switch (op) {
  case IR_OP_ADD:
    *r = ev_wrap(t, (uint64_t)a + (uint64_t)b);
    return true;
  case IR_OP_SUBTRACT:
    *r = ev_wrap(t, (uint64_t)a - (uint64_t)b);
    return true;
  case IR_OP_MULTIPLY:
    *r = ev_wrap(t, (uint64_t)a * (uint64_t)b);
    return true;
  case IR_OP_DIVIDE:
    *r = b == 0 ? ev_wrap(t, (uint64_t)-1) : (a == int_min(t) && b == -1) ? a : a / b;
    return true;
  case IR_OP_REMAINDER:
    *r = b == 0 ? a : (a == int_min(t) && b == -1) ? 0 : a % b;
    return true;
  case IR_OP_MAXIMUM:
    *r = a < b ? b : a;
    return true;
  case IR_OP_MINIMUM:
    *r = b < a ? b : a;
    return true;
  case IR_OP_POWER:
    *r = int_pow(t, a, b);
    return true;
  case IR_OP_AND:
    *r = ev_wrap(t, (uint64_t)a & (uint64_t)b);
    return true;
  case IR_OP_OR:
    *r = ev_wrap(t, (uint64_t)a | (uint64_t)b);
    return true;
  case IR_OP_XOR:
    *r = ev_wrap(t, (uint64_t)a ^ (uint64_t)b);
    return true;
  case IR_OP_SHL:
    *r = (b < 0 || b >= bits) ? 0 : ev_wrap(t, (uint64_t)a << b);
    return true;
  case IR_OP_SHR_L:
    *r = (b < 0 || b >= bits) ? 0 : ev_wrap(t, ((uint64_t)a & mask) >> b);
    return true;
  case IR_OP_SHR_A:
    if (b < 0 || b >= bits)
      *r = a < 0 ? ev_wrap(t, (uint64_t)-1) : 0;
    else
      *r = a < 0 ? ~(~a >> b) : a >> b; /* ~a >= 0: no implementation-defined shift */
    return true;
  default:
    return false;
  }
}

/* ---- the element interface -------------------------------------------- */

bool ev_unary_elem(ir_op op, ir_type t, const void *a, void *out) {
  if (ir_type_is_float(t)) {
    float x = ev_load_f(t, a), r;
    if (op == IR_OP_IS_FINITE) {
      *(uint8_t *)out = isfinite(x) ? 1 : 0;
      return true;
    }
    if (!unary_f(op, x, &r)) return false;
    ev_store_f(t, out, r);
    return true;
  }
  int64_t r;
  if (!unary_i(op, t, ev_load_i(t, a), &r)) return false;
  ev_store_i(t, out, r);
  return true;
}

bool ev_binary_elem(ir_op op, ir_type t, const void *a, const void *b, void *out) {
  if (ir_type_is_float(t)) {
    float r;
    if (!binary_f(op, ev_load_f(t, a), ev_load_f(t, b), &r)) return false;
    ev_store_f(t, out, r);
    return true;
  }
  int64_t r;
  if (!binary_i(op, t, ev_load_i(t, a), ev_load_i(t, b), &r)) return false;
  ev_store_i(t, out, r);
  return true;
}

/* Total order on floats: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN.
 * Widening bf16/f16 to f32 is exact and keeps this order. */
static int64_t total_order_key(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (u & 0x80000000u) ? -1 - (int64_t)(u & 0x7fffffffu) : (int64_t)u;
}

static bool cmp_result(ir_cmp_dir dir, int c, bool unordered) {
  if (unordered) return dir == IR_CMP_NE;
  switch (dir) {
  case IR_CMP_EQ:
    return c == 0;
  case IR_CMP_NE:
    return c != 0;
  case IR_CMP_LT:
    return c < 0;
  case IR_CMP_LE:
    return c <= 0;
  case IR_CMP_GT:
    return c > 0;
  case IR_CMP_GE:
    return c >= 0;
  }
  return false;
}

bool ev_compare_elem(ir_cmp_dir dir, ir_cmp_type ct, ir_type t, const void *a, const void *b) {
  if (ir_type_is_float(t)) {
    float x = ev_load_f(t, a), y = ev_load_f(t, b);
    if (ct == IR_CMPT_TOTALORDER) {
      int64_t kx = total_order_key(x), ky = total_order_key(y);
      return cmp_result(dir, (kx > ky) - (kx < ky), false);
    }
    return cmp_result(dir, (x > y) - (x < y), isnan(x) || isnan(y));
  }
  int64_t x = ev_load_i(t, a), y = ev_load_i(t, b);
  if (ct == IR_CMPT_UNSIGNED) {
    uint64_t mask = ((uint64_t)1 << ev_int_bits(t)) - 1;
    uint64_t ux = (uint64_t)x & mask, uy = (uint64_t)y & mask;
    return cmp_result(dir, (ux > uy) - (ux < uy), false);
  }
  return cmp_result(dir, (x > y) - (x < y), false);
}

/* ---- conversion ---------------------------------------------------------- */

/* An integer to f32 rounded to odd (truncate, then set the last bit when
 * inexact): rounding that value to bf16 or f16 (fewer bits by more than 1)
 * gives the correctly rounded result of the integer, with no double
 * rounding. |v| <= 2^40 here (s32 values and iota indices). */
static float i64_to_f32_round_odd(int64_t v) {
  float f = (float)v; /* nearest even */
  int64_t back = (int64_t)f;
  if (back == v) return f;
  if ((v > 0 && back > v) || (v < 0 && back < v)) f = nextafterf(f, 0.0f); /* now truncated */
  uint32_t u;
  memcpy(&u, &f, 4);
  u |= 1;
  memcpy(&f, &u, 4);
  return f;
}

void ev_store_from_i64(ir_type t, void *p, int64_t v) {
  switch (t) {
  case IR_F32: /* one rounding, to nearest even (|v| <= 2^40: exact as int64) */
    ev_store_f(t, p, (float)v);
    break;
  case IR_BF16:
  case IR_F16:
    ev_store_f(t, p, i64_to_f32_round_odd(v));
    break;
  default:
    ev_store_i(t, p, v);
    break;
  }
}

/* Float to integer: truncate toward zero, saturate, NaN -> 0. */
static int64_t f32_to_int(ir_type t, float x) {
  if (isnan(x)) return 0;
  double lo = t == IR_S8 ? -128.0 : -2147483648.0, hi = t == IR_S8 ? 127.0 : 2147483647.0;
  double d = trunc((double)x);
  if (d <= lo) return (int64_t)lo;
  if (d >= hi) return (int64_t)hi;
  return (int64_t)d;
}

void ev_convert_elem(ir_type from, const void *a, ir_type to, void *out) {
  if (ir_type_is_float(from)) {
    float x = ev_load_f(from, a);
    if (ir_type_is_float(to))
      ev_store_f(to, out, x);
    else if (to == IR_PRED)
      *(uint8_t *)out = x != 0.0f; /* NaN is true */
    else
      ev_store_i(to, out, f32_to_int(to, x));
    return;
  }
  ev_store_from_i64(to, out, ev_load_i(from, a));
}
