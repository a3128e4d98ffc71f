/* eval_scalar.c: the semantics of one element: unary, binary, compare and
 * convert for every element type. Elementwise ops, the reduce fast path and
 * convert all go through these functions, so they agree bit for bit.
 *
 * bf16, f16 and f32 compute in f32 (bf16 and f16 load exactly, the result
 * is rounded to nearest even once, see eval_internal.h); f64 computes in
 * double with the same definitions (one function body, instantiated for
 * float and double). Integer types compute on their canonical int64
 * (eval_internal.h: signed sign-extended, unsigned zero-extended, u64 its
 * bit pattern) and wrap to the type's width through uint64; unsigned types
 * divide, compare, take max/min and convert as unsigned. Definitions
 * that XLA's evaluator leaves to the C++ library are fixed here:
 *  - max/min: NaN in either operand propagates (the first NaN operand is
 *    returned); otherwise max(a, b) = a < b ? b : a and min(a, b) = b < a ? b
 *    : a, so max(-0, +0) = -0 and min(+0, -0) = +0 (the first operand wins
 *    ties, as std::max/std::min).
 *  - integer divide: x / 0 = -1 (all ones), INT_MIN / -1 = INT_MIN;
 *    remainder: x % 0 = x, INT_MIN % -1 = 0; both truncate toward zero.
 *  - integer power: y >= 0 exact with wraparound; y < 0: 1 for x = 1, +-1 for
 *    x = -1 by the parity of y, else 0.
 *  - shifts: an amount outside [0, bits) gives 0 (shift-left, logical) or
 *    the sign fill (arithmetic); the amount is read in the operand's type,
 *    and an arithmetic shift of an unsigned type fills with its top bit.
 *  - sign: -1, 0, +1 keeping the sign of zero; NaN stays NaN.
 *  - round-nearest-even does not depend on the floating-point environment.
 *  - clz/popcnt count within the type's width (pred: 1 bit). */
#include "ir/eval_internal.h"

/* ---- floats ------------------------------------------------------------ */

/* One function body for f32 (F = f: expf, ...) and f64 (F empty: exp). */
#define ROUND_HALF_EVEN(NAME, T, F)                                                                 \
  static T NAME(T x) {                                                                             \
    if (!isfinite(x)) return x;                                                                    \
    T t = trunc##F(x), d = fabs##F(x - t);                                                         \
    if (d < (T)0.5) return t;                                                                      \
    if (d > (T)0.5) return t + copysign##F((T)1, x);                                               \
    /* a tie: pick the even neighbour */                                                           \
    return fmod##F(t, (T)2) == (T)0 ? t : t + copysign##F((T)1, x);                                \
  }

/* Returns false when op is not a float unary op; else *r. */
#define UNARY_FLOAT(NAME, T, F, RHE)                                                               \
  static bool NAME(ir_op op, T x, T *r) {                                                          \
    switch (op) {                                                                                  \
    case IR_OP_ABS: *r = fabs##F(x); return true;                                                  \
    case IR_OP_NEGATE: *r = -x; return true;                                                       \
    case IR_OP_EXP: *r = exp##F(x); return true;                                                   \
    case IR_OP_EXPM1: *r = expm1##F(x); return true;                                               \
    case IR_OP_LOG: *r = log##F(x); return true;                                                   \
    case IR_OP_LOG1P: *r = log1p##F(x); return true;                                               \
    case IR_OP_SQRT: *r = sqrt##F(x); return true;                                                 \
    case IR_OP_RSQRT: *r = (T)1 / sqrt##F(x); return true;                                         \
    case IR_OP_CBRT: *r = cbrt##F(x); return true;                                                 \
    case IR_OP_TANH: *r = tanh##F(x); return true;                                                 \
    case IR_OP_LOGISTIC: *r = (T)1 / ((T)1 + exp##F(-x)); return true;                             \
    case IR_OP_SINE: *r = sin##F(x); return true;                                                  \
    case IR_OP_COSINE: *r = cos##F(x); return true;                                                \
    case IR_OP_TAN: *r = tan##F(x); return true;                                                   \
    case IR_OP_ACOS: *r = acos##F(x); return true;                                                 \
    case IR_OP_ACOSH: *r = acosh##F(x); return true;                                               \
    case IR_OP_ASIN: *r = asin##F(x); return true;                                                 \
    case IR_OP_ASINH: *r = asinh##F(x); return true;                                               \
    case IR_OP_ATAN: *r = atan##F(x); return true;                                                 \
    case IR_OP_ATANH: *r = atanh##F(x); return true;                                               \
    case IR_OP_SINH: *r = sinh##F(x); return true;                                                 \
    case IR_OP_COSH: *r = cosh##F(x); return true;                                                 \
    case IR_OP_ERF: *r = erf##F(x); return true;                                                   \
    case IR_OP_FLOOR: *r = floor##F(x); return true;                                               \
    case IR_OP_CEIL: *r = ceil##F(x); return true;                                                 \
    case IR_OP_ROUND_AFZ: *r = round##F(x); return true;                                           \
    case IR_OP_ROUND_EVEN: *r = RHE(x); return true;                                               \
    case IR_OP_SIGN: *r = isnan(x) ? x : copysign##F(x != (T)0 ? (T)1 : (T)0, x); return true;     \
    default: return false;                                                                         \
    }                                                                                              \
  }

#define BINARY_FLOAT(NAME, T, F)                                                                   \
  static bool NAME(ir_op op, T a, T b, T *r) {                                                     \
    switch (op) {                                                                                  \
    case IR_OP_ADD: *r = a + b; return true;                                                       \
    case IR_OP_SUBTRACT: *r = a - b; return true;                                                  \
    case IR_OP_MULTIPLY: *r = a * b; return true;                                                  \
    case IR_OP_DIVIDE: *r = a / b; return true;                                                    \
    case IR_OP_REMAINDER: *r = fmod##F(a, b); return true;                                         \
    case IR_OP_MAXIMUM: *r = isnan(a) ? a : isnan(b) ? b : a < b ? b : a; return true;             \
    case IR_OP_MINIMUM: *r = isnan(a) ? a : isnan(b) ? b : b < a ? b : a; return true;             \
    case IR_OP_POWER: *r = pow##F(a, b); return true;                                              \
    case IR_OP_ATAN2: *r = atan2##F(a, b); return true;                                            \
    default: return false;                                                                         \
    }                                                                                              \
  }

ROUND_HALF_EVEN(round_half_even_f, float, f)
ROUND_HALF_EVEN(round_half_even_d, double, )
UNARY_FLOAT(unary_f, float, f, round_half_even_f)
UNARY_FLOAT(unary_d, double, , round_half_even_d)
BINARY_FLOAT(binary_f, float, f)
BINARY_FLOAT(binary_d, double, )

/* ---- integers ---------------------------------------------------------- */

/* The most negative value of a signed type (0 for unsigned types). */
static int64_t int_min(ir_type t) {
  if (t == IR_PRED || ev_is_unsigned(t)) return 0;
  return ev_wrap(t, (uint64_t)1 << (ev_int_bits(t) - 1));
}

/* x read as t's signed type of the same width (sign-extended). */
static int64_t as_signed(ir_type t, int64_t x) {
  int bits = ev_int_bits(t);
  if (bits >= 64) return x;
  uint64_t sign = (uint64_t)1 << (bits - 1), u = (uint64_t)x & (((uint64_t)1 << bits) - 1);
  return u >= sign ? (int64_t)u - (int64_t)(sign << 1) : (int64_t)u;
}

static int64_t int_pow(ir_type t, int64_t x, int64_t y) {
  if (y < 0 && !ev_is_unsigned(t)) return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
  uint64_t base = (uint64_t)x, acc = 1, e = (uint64_t)y;
  while (e > 0) {
    if (e & 1) acc *= base;
    base *= base;
    e >>= 1;
  }
  return ev_wrap(t, acc);
}

static bool unary_i(ir_op op, ir_type t, int64_t x, int64_t *r) {
  int bits = ev_int_bits(t);
  uint64_t mask = ev_int_mask(t);
  switch (op) {
  case IR_OP_ABS:
    *r = ev_is_unsigned(t) ? x : ev_wrap(t, x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x);
    return true;
  case IR_OP_NEGATE:
    *r = ev_wrap(t, (uint64_t)0 - (uint64_t)x);
    return true;
  case IR_OP_SIGN:
    *r = ev_is_unsigned(t) ? x != 0 : (x > 0) - (x < 0);
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

/* Divide and remainder: signed truncate toward zero, unsigned as
 * unsigned; x / 0 = all ones, x % 0 = x, INT_MIN / -1 = INT_MIN. */
static int64_t int_divrem(ir_op op, ir_type t, int64_t a, int64_t b) {
  bool div = op == IR_OP_DIVIDE;
  if (b == 0) return div ? ev_wrap(t, ~(uint64_t)0) : a;
  if (ev_is_unsigned(t)) {
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    return ev_wrap(t, div ? ua / ub : ua % ub);
  }
  if (a == int_min(t) && b == -1) return div ? a : 0;
  return div ? a / b : a % b;
}

static bool binary_i(ir_op op, ir_type t, int64_t a, int64_t b, int64_t *r) {
  int bits = ev_int_bits(t);
  uint64_t mask = ev_int_mask(t);
  /* a shift amount outside [0, bits): for u64, above 2^63 reads negative */
  bool out = b < 0 || b >= bits;
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
  case IR_OP_REMAINDER:
    *r = int_divrem(op, t, a, b);
    return true;
  case IR_OP_MAXIMUM:
    *r = ev_int_lt(t, a, b) ? b : a;
    return true;
  case IR_OP_MINIMUM:
    *r = ev_int_lt(t, b, a) ? b : a;
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
    *r = out ? 0 : ev_wrap(t, (uint64_t)a << b);
    return true;
  case IR_OP_SHR_L:
    *r = out ? 0 : ev_wrap(t, ((uint64_t)a & mask) >> b);
    return true;
  case IR_OP_SHR_A: {
    int64_t sa = as_signed(t, a);
    if (out)
      *r = sa < 0 ? ev_wrap(t, ~(uint64_t)0) : 0;
    else /* ~sa >= 0: no implementation-defined shift */
      *r = ev_wrap(t, (uint64_t)(sa < 0 ? ~(~sa >> b) : sa >> b));
    return true;
  }
  default:
    return false;
  }
}

/* ---- the element interface -------------------------------------------- */

bool ev_unary_elem(ir_op op, ir_type t, const void *a, void *out) {
  if (t == IR_F64) {
    double x = ev_load_d(t, a), r;
    if (op == IR_OP_IS_FINITE) {
      *(uint8_t *)out = isfinite(x) ? 1 : 0;
      return true;
    }
    if (!unary_d(op, x, &r)) return false;
    memcpy(out, &r, 8);
    return true;
  }
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
  if (t == IR_F64) {
    double r;
    if (!binary_d(op, ev_load_d(t, a), ev_load_d(t, b), &r)) return false;
    memcpy(out, &r, 8);
    return true;
  }
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

/* Total order on floats: -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN,
 * on the value's own bits (f32 bits for bf16/f16/f32: widening to f32 is
 * exact, NaN payloads included; f64 bits for f64). The key compares as
 * unsigned after flipping (sign set: all bits; else the sign bit). */
static uint64_t total_order_key(ir_type t, const void *p) {
  uint64_t u;
  if (t == IR_F64) {
    memcpy(&u, p, 8);
  } else {
    float f = ev_load_f(t, p);
    uint32_t w;
    memcpy(&w, &f, 4);
    u = (uint64_t)w << 32;
  }
  return (u >> 63) ? ~u : u | ((uint64_t)1 << 63);
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
    double x = ev_load_d(t, a), y = ev_load_d(t, b);
    if (ct == IR_CMPT_TOTALORDER) {
      uint64_t kx = total_order_key(t, a), ky = total_order_key(t, b);
      return cmp_result(dir, (kx > ky) - (kx < ky), false);
    }
    return cmp_result(dir, (x > y) - (x < y), isnan(x) || isnan(y));
  }
  int64_t x = ev_load_i(t, a), y = ev_load_i(t, b);
  if (ct == IR_CMPT_UNSIGNED || ev_is_unsigned(t)) {
    uint64_t mask = ev_int_mask(t);
    uint64_t ux = (uint64_t)x & mask, uy = (uint64_t)y & mask;
    return cmp_result(dir, (ux > uy) - (ux < uy), false);
  }
  return cmp_result(dir, (x > y) - (x < y), false);
}

/* ---- conversion ---------------------------------------------------------- */

/* An integer magnitude to f32 rounded to odd (keep the top 24 significant
 * bits, OR any dropped bit into the last one kept; exact as a float):
 * rounding that value to bf16 or f16 (fewer bits by more than 1) gives the
 * correctly rounded result of the integer, with no double rounding. */
static float u64_to_f32_round_odd(uint64_t u) {
  if (u < ((uint64_t)1 << 24)) return (float)u;
  int drop = 64 - 24 - __builtin_clzll(u);
  uint64_t kept = u >> drop, sticky = (u & (((uint64_t)1 << drop) - 1)) != 0;
  return ldexpf((float)(kept | sticky), drop);
}

/* A double to f32 rounded to odd (truncate, then set the last bit when
 * inexact; beyond the f32 range: the largest finite f32, odd). */
static float f64_to_f32_round_odd(double v) {
  float f = (float)v;
  if (isnan(v) || (double)f == v) return f;
  if (isinf(f) || fabs((double)f) > fabs(v)) f = nextafterf(f, 0.0f);
  uint32_t u;
  memcpy(&u, &f, 4);
  u |= 1;
  memcpy(&f, &u, 4);
  return f;
}

void ev_store_d(ir_type t, void *p, double v) {
  if (t == IR_F64)
    memcpy(p, &v, 8);
  else if (t == IR_F32)
    ev_store_f(t, p, (float)v);
  else
    ev_store_f(t, p, f64_to_f32_round_odd(v));
}

/* An integer of type `from` (canonical int64) into any type: ints wrap,
 * floats round once to nearest even, pred = nonzero. */
static void store_from_int(ir_type from, int64_t v, ir_type t, void *p) {
  bool neg = !ev_is_unsigned(from) && v < 0;
  uint64_t mag = neg ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  switch (t) {
  case IR_F64: { /* one rounding, to nearest even */
    double d = neg ? -(double)mag : (double)mag;
    memcpy(p, &d, 8);
    break;
  }
  case IR_F32: /* one rounding, to nearest even */
    ev_store_f(t, p, neg ? -(float)mag : (float)mag);
    break;
  case IR_BF16:
  case IR_F16: {
    float f = u64_to_f32_round_odd(mag);
    ev_store_f(t, p, neg ? -f : f);
    break;
  }
  default:
    ev_store_i(t, p, v);
    break;
  }
}

void ev_store_from_i64(ir_type t, void *p, int64_t v) { store_from_int(IR_S64, v, t, p); }

/* Float to integer: truncate toward zero, saturate to t's range, NaN -> 0. */
static int64_t float_to_int(ir_type t, double x) {
  if (isnan(x)) return 0;
  double d = trunc(x);
  int bits = ev_int_bits(t);
  if (ev_is_unsigned(t)) {
    double hi = ldexp(1.0, bits); /* 2^bits: first value above the range */
    if (d <= 0) return 0;
    if (d >= hi) return ev_wrap(t, ~(uint64_t)0);
    return ev_wrap(t, (uint64_t)d);
  }
  double lim = ldexp(1.0, bits - 1); /* 2^(bits-1) */
  if (d < -lim) return int_min(t);
  if (d >= lim) return ev_wrap(t, ((uint64_t)1 << (bits - 1)) - 1);
  return (int64_t)d;
}

void ev_convert_elem(ir_type from, const void *a, ir_type to, void *out) {
  if (ir_type_is_float(from)) {
    double x = ev_load_d(from, a); /* exact */
    if (ir_type_is_float(to) && from != IR_F64 && to != IR_F64)
      ev_store_f(to, out, ev_load_f(from, a)); /* through f32: a NaN keeps its bits */
    else if (ir_type_is_float(to))
      ev_store_d(to, out, x); /* narrower float types: one rounding */
    else if (to == IR_PRED)
      *(uint8_t *)out = x != 0.0; /* NaN is true */
    else
      ev_store_i(to, out, float_to_int(to, x));
    return;
  }
  store_from_int(from, ev_load_i(from, a), to, out);
}
