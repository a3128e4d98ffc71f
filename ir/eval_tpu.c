/* eval_tpu.c: the evaluator's TPU-numerics mode (ir_eval_options
 * .tpu_numerics): what the emulated TensorCore computes, so that compiled
 * programs (backend/tpu on runtime/emu) can be compared bit for bit.
 * docs/numerics.md is the reference; in short:
 *
 *  - Elementwise float ops (f32, and bf16 and f16 computed in f32 and
 *    rounded to nearest even after every op) follow the vector-unit sequences that
 *    backend/tpu/elem.c emits, built from the kernels of base/vmath.c that
 *    the emulator's vector unit runs: arithmetic results are NaN-
 *    canonicalised (0x7FC00000), remainder is the exact fmod, exp/log/tanh/logistic/rsqrt (and sin,
 *    cos, expm1, log1p, cbrt, power, atan2) are the double libm function of the
 *    widened input rounded once, maximum/minimum return the canonical NaN
 *    and prefer +0 / -0 between zeros, clamp is min(max(x, lo), hi),
 *    floor/ceil/round-* are exact (2^23 threshold, the sign of x OR'ed in),
 *    sign and is-finite are compares (NaN passes through sign unchanged).
 *  - Converts: float -> s32 truncates and saturates (NaN -> 0), -> s8 then
 *    clamps to [-128, 127]; s32/s8/pred -> bf16 rounds twice (to f32, then
 *    to bf16), as vcvtif + vrndbf do (u32 -> bf16 rounds once, as the
 *    default: its vector sequence rounds once too). Other converts and integer ops are
 *    the evaluator's default (the vector unit computes them identically).
 *  - Float dot and convolution run as the MXU does (runtime/emu/mxu.h):
 *    each operand is split into bf16 parts (one part at DEFAULT, or when
 *    both operands are bf16; two parts and three passes a0b0, a0b1, a1b0
 *    at HIGH; three parts and six passes a0b0, a0b1, a1b0, a0b2, a1b1,
 *    a2b0 at HIGHEST, with a0 = bf16(x), a1 = bf16(x - a0), a2 =
 *    bf16((x - a0) - a1), differences in f32), bf16 subnormals read as
 *    signed zero, and every output accumulates from +0 with one f32 fused
 *    multiply-add per product: passes in that order, within a pass the
 *    contraction index ascending (dot: row-major over the contracting dims
 *    in lhs_contracting order; convolution: window position row-major,
 *    then input feature; positions in padding or lhs-dilation holes
 *    contribute a +0 operand, as in the backend's zero-filled patches).
 *    A NaN sum becomes 0x7FC00000; the f32 sum is rounded once to the
 *    result type.
 * Integer and pred dots/convolutions keep the default (exact) path. */
#include "ir/eval_internal.h"

/* ---- elementwise --------------------------------------------------------- */

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* floor/ceil/round-nearest-afz/round-nearest-even as elem.c's rounding():
 * |x| < 2^23 rounds through cvtfi/cvtif (or +-2^23 for RNE) and keeps the
 * sign of x; anything else (large, inf, NaN) is x itself, bits unchanged. */
static uint32_t rounding(ir_op op, uint32_t xb) {
  float x = vmath_float(xb), a = vmath_float(xb & 0x7FFFFFFFu);
  if (!(a < 8388608.0f)) return xb;
  uint32_t t;
  if (op == IR_OP_ROUND_EVEN) {
    t = vmath_bits(vmath_float(vmath_bits(a + 8388608.0f)) - 8388608.0f);
  } else if (op == IR_OP_ROUND_AFZ) {
    float tf = vmath_cvtif((uint32_t)vmath_cvtfi(bits_of(a)));
    float u = vmath_float(vmath_bits(a - tf));
    t = 0.5f <= u ? vmath_bits(tf + 1.0f) : bits_of(tf);
  } else {
    float tf = vmath_cvtif((uint32_t)vmath_cvtfi(xb));
    bool fix = op == IR_OP_FLOOR ? x < tf : tf < x;
    t = fix ? vmath_bits(op == IR_OP_FLOOR ? tf - 1.0f : tf + 1.0f) : bits_of(tf);
  }
  return t | (xb & 0x80000000u);
}

/* One float op on f32 bits; false when the op has no TPU definition here
 * (the caller then uses the default semantics). */
static bool float_op(ir_op op, const uint32_t *x, uint32_t *r) {
  float a = vmath_float(x[0]), b = vmath_float(x[1]);
  switch (op) {
  case IR_OP_ABS: *r = x[0] & 0x7FFFFFFFu; return true;
  case IR_OP_NEGATE: *r = x[0] ^ 0x80000000u; return true;
  case IR_OP_EXP: *r = vmath_bits(vmath_exp(a)); return true;
  case IR_OP_LOG: *r = vmath_bits(vmath_log(a)); return true;
  case IR_OP_TANH: *r = vmath_bits(vmath_tanh(a)); return true;
  case IR_OP_LOGISTIC: *r = vmath_bits(vmath_logistic(a)); return true;
  case IR_OP_SQRT: *r = vmath_bits(vmath_sqrt(a)); return true;
  case IR_OP_RSQRT: *r = vmath_bits(vmath_rsqrt(a)); return true;
  case IR_OP_SINE: *r = vmath_bits(vmath_sin(a)); return true;
  case IR_OP_COSINE: *r = vmath_bits(vmath_cos(a)); return true;
  case IR_OP_EXPM1: *r = vmath_bits(vmath_expm1(a)); return true;
  case IR_OP_LOG1P: *r = vmath_bits(vmath_log1p(a)); return true;
  case IR_OP_CBRT: *r = vmath_bits(vmath_cbrt(a)); return true;
  case IR_OP_FLOOR: case IR_OP_CEIL: case IR_OP_ROUND_AFZ: case IR_OP_ROUND_EVEN:
    *r = rounding(op, x[0]);
    return true;
  case IR_OP_SIGN:
    *r = a < 0.0f ? 0xBF800000u : 0.0f < a ? 0x3F800000u : x[0];
    return true;
  case IR_OP_ADD: *r = vmath_bits(a + b); return true;
  case IR_OP_SUBTRACT: *r = vmath_bits(a - b); return true;
  case IR_OP_MULTIPLY: *r = vmath_bits(a * b); return true;
  case IR_OP_DIVIDE: *r = vmath_bits(a / b); return true;
  case IR_OP_MAXIMUM: *r = vmath_fmax(x[0], x[1]); return true;
  case IR_OP_MINIMUM: *r = vmath_fmin(x[0], x[1]); return true;
  case IR_OP_POWER: *r = vmath_bits(vmath_pow(a, b)); return true;
  case IR_OP_ATAN2: *r = vmath_bits(vmath_atan2(a, b)); return true;
  case IR_OP_REMAINDER: *r = vmath_bits(vmath_fmod(a, b)); return true;
  default: return false;
  }
}

bool ev_tpu_elem(ir_op op, ir_type t, int nops, const void *const *ops, void *out) {
  if (t != IR_F32 && t != IR_BF16 && t != IR_F16) return false;
  uint32_t x[3] = {0, 0, 0}, r;
  for (int k = 0; k < nops && k < 3; k++) x[k] = bits_of(ev_load_f(t, ops[k]));
  if (op == IR_OP_IS_FINITE) {
    *(uint8_t *)out = vmath_float(x[0] & 0x7FFFFFFFu) < INFINITY;
    return true;
  }
  if (op == IR_OP_CLAMP) { /* clamp(lo, x, hi) = min(max(x, lo), hi) */
    r = vmath_fmin(vmath_fmax(x[1], x[0]), x[2]);
  } else if (!float_op(op, x, &r)) {
    return false;
  }
  ev_store_f(t, out, vmath_float(r));
  return true;
}

bool ev_tpu_convert(ir_type from, const void *a, ir_type to, void *out) {
  bool ff = ir_type_is_float(from), ft = ir_type_is_float(to);
  if (from == IR_F16 || to == IR_F16) return false;
  if (ff && (to == IR_S32 || to == IR_S8)) {
    int32_t v = vmath_cvtfi(bits_of(ev_load_f(from, a)));
    if (to == IR_S8) v = v < -128 ? -128 : v > 127 ? 127 : v;
    ev_store_i(to, out, v);
    return true;
  }
  if (!ff && to == IR_BF16 && from != IR_U32) {
    float f = vmath_cvtif((uint32_t)(int32_t)ev_load_i(from, a));
    ev_store_f(IR_BF16, out, f);
    return true;
  }
  (void)ft;
  return false;
}

/* ---- the MXU ------------------------------------------------------------- */

const int ev_tpu_pair_a[6] = {0, 0, 1, 0, 1, 2}, ev_tpu_pair_b[6] = {0, 1, 0, 2, 1, 0};

int ev_tpu_passes(const ir_inst *in, ir_type lt, ir_type rt) {
  ir_precision p = in->a->precision[0] > in->a->precision[1] ? in->a->precision[0]
                                                           : in->a->precision[1];
  if (lt == IR_BF16 && rt == IR_BF16) return 1;
  return p == IR_PREC_HIGHEST ? 6 : p == IR_PREC_HIGH ? 3 : 1;
}

/* A bf16 value as the MXU reads it: subnormals are signed zeros. */
static float mxu_read(uint16_t h) {
  if ((h & 0x7F80u) == 0) h &= 0x8000u;
  return ir_bf16_to_f32(h);
}

base_status ev_tpu_parts(ev_ctx *cx, const ir_inst *in, const ir_literal *v, int nparts,
                         ir_literal **parts) {
  ir_shape s = ir_shape_array(IR_F32, v->shape.rank, v->shape.dims);
  int64_t n = ir_shape_count(&s);
  size_t es = (size_t)ir_type_size(v->shape.type);
  base_status st;
  for (int p = 0; p < nparts; p++)
    if ((st = ev_new_array(cx, in, &s, &parts[p])) != ST_OK) return st;
  for (int64_t i = 0; i < n; i++) {
    float x = ev_load_f(v->shape.type, (const uint8_t *)v->data + (size_t)i * es);
    for (int p = 0; p < nparts; p++) {
      uint16_t h = ir_f32_to_bf16(x);
      ((float *)parts[p]->data)[i] = mxu_read(h);
      x = vmath_float(vmath_bits(x - ir_bf16_to_f32(h))); /* the f32 remainder */
    }
  }
  return ST_OK;
}

float ev_tpu_mac(float acc, float a, float b) { return fmaf(a, b, acc); }

void ev_tpu_store(ir_type rt, void *out, float acc) {
  ev_store_f(rt, out, acc != acc ? vmath_float(VMATH_CANON_NAN) : acc);
}
