/* elem.c: fused elementwise loops on 8x128 vector tiles.
 *
 * A tk_elem is a small expression DAG over flat inputs of equal element
 * count. The kernel streams chunks of every input HBM -> VMEM (two slots
 * per buffer, so the load of chunk c+1 overlaps the compute of chunk c),
 * evaluates the DAG tile by tile in vector registers (intermediates never
 * leave registers), stores the outputs to VMEM and DMAs them back. The
 * last tile of a chunk computes on stale lanes that are never stored.
 *
 * Value representation in registers: f32 lanes for f32, bf16 and f16
 * (bf16 results are rounded with vrndbf after every op, f16 results by
 * the integer sequence round_f16, as the evaluator rounds once per op), s32 lanes for s32, u32 (the same bits; compare, max/min,
 * clamp, divide/remainder, sign and converts take the unsigned sequences
 * below), s8 (kept sign-extended: wrapped after every op that can
 * overflow) and pred (0 or 1).
 *
 * sine, cosine, expm1, log1p, cbrt, power, atan2 and float remainder are
 * one vector instruction each (vsin .. vremf, kernels of base/vmath.c).
 * Element types without a vector-unit representation are rejected by
 * tk_elem_supported, which lower.c turns into a located error.
 *
 * f16 crosses HBM at the program's edges only: a bitcast-convert node
 * between s32 and f16 (which the verifier never admits, the widths
 * differ) means the f16 bits in the low half of a word to the value
 * (f16_from_bits), or back (f16_to_bits). */
#include "backend/tpu/tb.h"

ir_type tk_itype(ir_type t) {
  switch (t) {
  case IR_F32: return IR_F32;
  case IR_BF16: return IR_BF16;
  case IR_S32:
  case IR_U32:
  case IR_S8:
  case IR_PRED: return IR_S32;
  case IR_F16: return IR_F32;
  default: return IR_TYPE_INVALID;
  }
}

static bool is_f(ir_type t) { return t == IR_F32 || t == IR_BF16 || t == IR_F16; }

bool tk_elem_supported(tb *b, const tk_node *n, const char **why) {
  (void)b;
  *why = NULL;
  if (n->kind != TK_OP) return true;
  ir_type t = n->type;
  if (tk_itype(t) == IR_TYPE_INVALID) {
    *why = "element type not supported by the vector unit";
    return false;
  }
  switch (n->op) {
  case IR_OP_EXPM1: case IR_OP_LOG1P: case IR_OP_CBRT: case IR_OP_SINE: case IR_OP_COSINE:
  case IR_OP_POWER: case IR_OP_ATAN2:
    if (!is_f(t)) {
      *why = "integer power/transcendental has no vector-unit sequence";
      return false;
    }
    return true;
  case IR_OP_SHL: case IR_OP_SHR_A: case IR_OP_SHR_L:
    if (t == IR_PRED) {
      *why = "pred shift";
      return false;
    }
    return true;
  case IR_OP_BITCAST_CONVERT:
    return true; /* same width (verifier); lower.c maps it to copy or convert */
  case IR_OP_TAN: case IR_OP_ACOS: case IR_OP_ACOSH: case IR_OP_ASIN: case IR_OP_ASINH:
  case IR_OP_ATAN: case IR_OP_ATANH: case IR_OP_SINH: case IR_OP_COSH: case IR_OP_ERF:
    *why = "no vector-unit sequence within the documented tolerance (runs on interp and cpu)";
    return false;
  default: return true;
  }
}

/* ---- register pool ------------------------------------------------------ */

typedef struct rp {
  tb *b;
  uint32_t used;
  int mb;   /* masks m(mb+1), m(mb+2) are this evaluation's */
  int peak; /* most registers in use at once */
  uint32_t clock, age[TGT_VREGS]; /* when each register was freed: the
                                     least recently freed is reused first,
                                     so that schedule() can overlap work */
  const tk_plan *pl; /* constants held in registers (imm() uses them) */
  tk_plan *coll;     /* or: collects the constants imm() needs */
} rp;

#define M1 (p->mb + 1)
#define M2 (p->mb + 2)

static int ralloc(rp *p) {
  int best = -1;
  for (int r = 0; r < TGT_VREGS; r++)
    if (!(p->used >> r & 1) && (best < 0 || p->age[r] < p->age[best])) best = r;
  if (best < 0) return -1;
  p->used |= 1u << best;
  int n = __builtin_popcount(p->used);
  if (n > p->peak) p->peak = n;
  return best;
}
static void rfree(rp *p, int r) {
  if (r >= 0 && p->pl && r >= TGT_VREGS - p->pl->nconst) return; /* a held constant */
  if (r >= 0) {
    p->used &= ~(1u << r);
    p->age[r] = ++p->clock;
  }
}
/* A register holding bits that the caller may overwrite. */
static int imm(rp *p, uint32_t bits) {
  int r = ralloc(p);
  if (r >= 0) tb_valu(p->b, OP_VIMM, r, (int32_t)bits, 0);
  return r;
}

/* A register holding bits that the caller only reads (and frees): a
 * constant the plan holds for the whole loop when there is one. */
static int cimm(rp *p, uint32_t bits) {
  for (int k = 0; p->pl && k < p->pl->nconst; k++)
    if (p->pl->bits[k] == bits) return TGT_VREGS - 1 - k; /* rfree leaves it */
  if (p->coll) {
    bool seen = false;
    for (int k = 0; k < p->coll->nconst; k++) seen |= p->coll->bits[k] == bits;
    if (!seen && p->coll->nconst < TK_PLAN_CONSTS) p->coll->bits[p->coll->nconst++] = bits;
  }
  int r = ralloc(p);
  if (r >= 0) tb_valu(p->b, OP_VIMM, r, (int32_t)bits, 0);
  return r;
}
#define V3(op, d, a_, c_) tb_valu(b, (op), (d), (a_), (c_))

static void wrap8(tb *b, rp *p, int r) {
  int k = cimm(p, 24);
  V3(OP_VSHL, r, r, k);
  V3(OP_VSRA, r, r, k);
  rfree(p, k);
}

/* Floor/ceil/round family on f32 lanes: result into d. */
static void rounding(tb *b, rp *p, ir_op op, int d, int x) {
  int a = ralloc(p), t = ralloc(p), k = ralloc(p), u = ralloc(p);
  int msmall = M1, mfix = M2;
  V3(OP_VABSF, a, x, 0);
  tb_valu(b, OP_VIMM, k, 0x4B000000, 0); /* 2^23 */
  tb_raw(b, OP_VCMPLTF, msmall, a, k, 0, 0, 0);
  if (op == IR_OP_ROUND_EVEN) {
    V3(OP_VADDF, t, a, k);
    V3(OP_VSUBF, t, t, k);
  } else if (op == IR_OP_ROUND_AFZ) {
    V3(OP_VCVTFI, t, a, 0);
    V3(OP_VCVTIF, t, t, 0);
    V3(OP_VSUBF, u, a, t);
    tb_valu(b, OP_VIMM, k, 0x3F000000, 0); /* 0.5 */
    tb_raw(b, OP_VCMPLEF, mfix, k, u, 0, 0, 0);
    tb_valu(b, OP_VIMM, k, 0x3F800000, 0);
    V3(OP_VADDF, u, t, k);
    tb_raw(b, OP_VSEL, t, mfix, u, t, 0, 0);
  } else {
    V3(OP_VCVTFI, t, x, 0);
    V3(OP_VCVTIF, t, t, 0);
    tb_valu(b, OP_VIMM, k, 0x3F800000, 0);
    if (op == IR_OP_FLOOR) {
      tb_raw(b, OP_VCMPLTF, mfix, x, t, 0, 0, 0);
      V3(OP_VSUBF, u, t, k);
    } else {
      tb_raw(b, OP_VCMPLTF, mfix, t, x, 0, 0, 0);
      V3(OP_VADDF, u, t, k);
    }
    tb_raw(b, OP_VSEL, t, mfix, u, t, 0, 0);
  }
  /* Sign of x on the result (zero results keep x's sign). */
  tb_valu(b, OP_VIMM, k, (int32_t)0x80000000u, 0);
  V3(OP_VAND, u, x, k);
  V3(OP_VOR, t, t, u);
  tb_raw(b, OP_VSEL, d, msmall, t, x, 0, 0);
  rfree(p, a);
  rfree(p, t);
  rfree(p, k);
  rfree(p, u);
}

/* mask -> 0/1 s32 in d */
static void mask_to01(tb *b, rp *p, int d, int m) {
  int one = cimm(p, 1), zero = cimm(p, 0);
  tb_raw(b, OP_VSEL, d, m, one, zero, 0, 0);
  rfree(p, one);
  rfree(p, zero);
}

static void compare(tb *b, rp *p, const tk_node *n, ir_type at, int d, int x, int y) {
  bool f = is_f(at);
  int xx = x, yy = y, tx = -1, ty = -1;
  if (f && n->cmp_type == IR_CMPT_TOTALORDER) {
    /* key = u ^ ((u >>a 31) & 0x7fffffff), then signed compare. */
    int k = ralloc(p), s = ralloc(p);
    tx = ralloc(p);
    ty = ralloc(p);
    for (int i = 0; i < 2; i++) {
      int src = i ? y : x, dst = i ? ty : tx;
      tb_valu(b, OP_VIMM, k, 31, 0);
      V3(OP_VSRA, s, src, k);
      tb_valu(b, OP_VIMM, k, 0x7fffffff, 0);
      V3(OP_VAND, s, s, k);
      V3(OP_VXOR, dst, src, s);
    }
    rfree(p, k);
    rfree(p, s);
    xx = tx;
    yy = ty;
    f = false;
  } else if (!f && (n->cmp_type == IR_CMPT_UNSIGNED || at == IR_U32) &&
             (at == IR_S32 || at == IR_U32 || at == IR_S8)) {
    /* unsigned order as signed: 32-bit words flip the sign bit, s8 keeps the low byte */
    bool w32 = at != IR_S8;
    int k = cimm(p, w32 ? 0x80000000u : 0xffu);
    isa_op op = w32 ? OP_VXOR : OP_VAND;
    tx = ralloc(p);
    ty = ralloc(p);
    V3(op, tx, x, k);
    V3(op, ty, y, k);
    rfree(p, k);
    xx = tx;
    yy = ty;
  }
  int m = M1;
  isa_op eq = f ? OP_VCMPEQF : OP_VCMPEQI, lt = f ? OP_VCMPLTF : OP_VCMPLTI,
         le = f ? OP_VCMPLEF : OP_VCMPLEI;
  switch (n->cmp_dir) {
  case IR_CMP_EQ: tb_raw(b, eq, m, xx, yy, 0, 0, 0); break;
  case IR_CMP_NE:
    if (f) tb_raw(b, OP_VCMPNEF, m, xx, yy, 0, 0, 0);
    else {
      tb_raw(b, eq, m, xx, yy, 0, 0, 0);
      tb_raw(b, OP_MNOT, m, m, 0, 0, 0, 0);
    }
    break;
  case IR_CMP_LT: tb_raw(b, lt, m, xx, yy, 0, 0, 0); break;
  case IR_CMP_LE: tb_raw(b, le, m, xx, yy, 0, 0, 0); break;
  case IR_CMP_GT: tb_raw(b, lt, m, yy, xx, 0, 0, 0); break;
  case IR_CMP_GE: tb_raw(b, le, m, yy, xx, 0, 0, 0); break;
  }
  rfree(p, tx);
  rfree(p, ty);
  mask_to01(b, p, d, m);
}

/* Restoring division of the unsigned words ua / ub, 32 steps: quotient
 * into q, remainder into r (k, u, w scratch). ub = 0 leaves q all ones
 * and r = ua; the callers select their own results for it. */
static void restoring_div(tb *b, rp *p, int ua, int ub, int q, int r, int k, int u, int w) {
  tb_valu(b, OP_VIMM, q, 0, 0);
  tb_valu(b, OP_VIMM, r, 0, 0);
  tb_valu(b, OP_VIMM, k, (int32_t)0x80000000u, 0);
  V3(OP_VXOR, w, ub, k); /* ub with the sign flipped, for unsigned compares */
  for (int i = 31; i >= 0; i--) {
    tb_valu(b, OP_VIMM, k, 1, 0);
    V3(OP_VSHL, r, r, k);
    tb_valu(b, OP_VIMM, u, i, 0);
    V3(OP_VSHR, u, ua, u);
    V3(OP_VAND, u, u, k);
    V3(OP_VOR, r, r, u);
    tb_valu(b, OP_VIMM, k, (int32_t)0x80000000u, 0);
    V3(OP_VXOR, u, r, k);
    tb_raw(b, OP_VCMPLTI, M1, u, w, 0, 0, 0); /* r < ub (unsigned) */
    tb_raw(b, OP_MNOT, M1, M1, 0, 0, 0, 0);
    V3(OP_VSUBI, u, r, ub);
    tb_raw(b, OP_VSEL, r, M1, u, r, 0, 0);
    tb_valu(b, OP_VIMM, k, (int32_t)(1u << i), 0);
    V3(OP_VOR, u, q, k);
    tb_raw(b, OP_VSEL, q, M1, u, q, 0, 0);
  }
}

/* u32 bits x -> f32, rounded once to nearest even: below 2^31 as s32;
 * else (x >> 1) | (x & 1) (the dropped bit kept as a sticky bit below the
 * rounding position, so the rounding is the same) converted and doubled
 * exactly. d may be x. */
static void u32_to_f32(tb *b, rp *p, int d, int x) {
  int one = cimm(p, 1), zr = cimm(p, 0), h = ralloc(p), s = ralloc(p);
  V3(OP_VSHR, h, x, one);
  V3(OP_VAND, s, x, one);
  V3(OP_VOR, h, h, s);
  V3(OP_VCVTIF, h, h, 0);
  V3(OP_VADDF, h, h, h);
  tb_raw(b, OP_VCMPLTI, M1, x, zr, 0, 0, 0); /* x >= 2^31 */
  V3(OP_VCVTIF, s, x, 0);
  tb_raw(b, OP_VSEL, d, M1, h, s, 0, 0);
  rfree(p, one);
  rfree(p, zr);
  rfree(p, h);
  rfree(p, s);
}

/* u32 bits x -> f32 holding the value to be rounded once to bf16 (by the
 * caller's vrndbf), as the evaluator's single rounding: below 2^24 x
 * itself (exact); else (x >> 8) | (x & 0xff != 0), exact in f32 and
 * scaled by 2^8, whose dropped bits lie below bf16's rounding bit and
 * keep its sticky bit. d may be x. */
static void u32_to_bf16(tb *b, rp *p, int d, int x) {
  int c = ralloc(p), s = ralloc(p), t = ralloc(p);
  tb_valu(b, OP_VIMM, s, 8, 0);
  V3(OP_VSHR, c, x, s);
  tb_valu(b, OP_VIMM, s, 0xff, 0);
  V3(OP_VAND, s, x, s);
  tb_valu(b, OP_VIMM, t, 0, 0);
  tb_raw(b, OP_VCMPEQI, M1, s, t, 0, 0, 0);
  tb_valu(b, OP_VIMM, s, 1, 0);
  tb_raw(b, OP_VSEL, s, M1, t, s, 0, 0); /* the sticky bit */
  V3(OP_VOR, c, c, s);
  V3(OP_VCVTIF, c, c, 0);
  tb_valu(b, OP_VIMM, s, 0x43800000, 0); /* 256.0f */
  V3(OP_VMULF, c, c, s);
  tb_valu(b, OP_VIMM, s, (int32_t)0x80000000u, 0);
  V3(OP_VXOR, t, x, s);
  tb_valu(b, OP_VIMM, s, (int32_t)0x80ffffffu, 0);
  tb_raw(b, OP_VCMPLTI, M1, s, t, 0, 0, 0); /* 2^24 - 1 < x, unsigned */
  V3(OP_VCVTIF, t, x, 0);
  tb_raw(b, OP_VSEL, d, M1, c, t, 0, 0);
  rfree(p, c);
  rfree(p, s);
  rfree(p, t);
}

/* f32 x -> u32 as the evaluator: truncate, NaN and x <= 0 give 0, x >=
 * 2^32 gives UINT32_MAX. Below 2^31 vcvtfi clamped at 0; else x - 2^31
 * (exact: x is a multiple of 256 there) converted (saturating) with the
 * top bit set. d may be x. */
static void f32_to_u32(tb *b, rp *p, int d, int x) {
  int k = cimm(p, 0x4F000000u), zr = cimm(p, 0), sg = cimm(p, 0x80000000u), lo = ralloc(p),
      hi = ralloc(p);
  V3(OP_VCVTFI, lo, x, 0);
  V3(OP_VMAXI, lo, lo, zr);
  V3(OP_VSUBF, hi, x, k);
  V3(OP_VCVTFI, hi, hi, 0);
  V3(OP_VXOR, hi, hi, sg);
  tb_raw(b, OP_VCMPLEF, M1, k, x, 0, 0, 0); /* 2^31 <= x, false for NaN */
  tb_raw(b, OP_VSEL, d, M1, hi, lo, 0, 0);
  rfree(p, k);
  rfree(p, zr);
  rfree(p, sg);
  rfree(p, lo);
  rfree(p, hi);
}

/* Unsigned max (or min) of 32-bit words: signed max of the words with the
 * sign bit flipped, flipped back. d may be x or y. */
static void umaxmin(tb *b, rp *p, bool max, int d, int x, int y) {
  int k = cimm(p, 0x80000000u), tx = ralloc(p), ty = ralloc(p);
  V3(OP_VXOR, tx, x, k);
  V3(OP_VXOR, ty, y, k);
  V3(max ? OP_VMAXI : OP_VMINI, tx, tx, ty);
  V3(OP_VXOR, d, tx, k);
  rfree(p, k);
  rfree(p, tx);
  rfree(p, ty);
}

/* u32 divide/remainder: 32-step restoring division; x / 0 = UINT32_MAX,
 * x % 0 = x, as the evaluator. */
static void uint_divrem(tb *b, rp *p, bool rem, int d, int x, int y) {
  int q = ralloc(p), r = ralloc(p), k = ralloc(p), u = ralloc(p), w = ralloc(p);
  restoring_div(b, p, x, y, q, r, k, u, w);
  tb_valu(b, OP_VIMM, k, 0, 0);
  tb_raw(b, OP_VCMPEQI, M1, y, k, 0, 0, 0);
  if (rem) {
    tb_raw(b, OP_VSEL, d, M1, x, r, 0, 0);
  } else {
    tb_valu(b, OP_VIMM, k, -1, 0);
    tb_raw(b, OP_VSEL, d, M1, k, q, 0, 0);
  }
  rfree(p, q);
  rfree(p, r);
  rfree(p, k);
  rfree(p, u);
  rfree(p, w);
}

/* ---- f16 in f32 lanes ---------------------------------------------------- */

/* d = the f32 value x rounded to f16 (nearest even) as ir_f32_to_f16
 * does, held as f32: NaN quieted with its top 10 payload bits and sign,
 * |x| >= 65520 to infinity, below 2^-14 to a multiple of 2^-24 (by
 * (|x| + 0.5) - 0.5: the ulp of [0.5, 1) is 2^-24), else the mantissa
 * rounded to 10 bits on the integer bits (a carry moves the exponent).
 * d may be x. */
static void round_f16(tb *b, rp *p, int d, int x) {
  int a = ralloc(p), r = ralloc(p), k = ralloc(p), s = ralloc(p);
  tb_valu(b, OP_VIMM, k, 0x7fffffff, 0);
  V3(OP_VAND, a, x, k);
  tb_valu(b, OP_VIMM, k, 13, 0);
  V3(OP_VSHR, r, a, k);
  tb_valu(b, OP_VIMM, k, 1, 0);
  V3(OP_VAND, r, r, k);
  tb_valu(b, OP_VIMM, k, 0xfff, 0);
  V3(OP_VADDI, r, r, k);
  V3(OP_VADDI, r, a, r);
  tb_valu(b, OP_VIMM, k, (int32_t)0xffffe000u, 0);
  V3(OP_VAND, r, r, k); /* the normal rounding */
  tb_valu(b, OP_VIMM, k, 0x3f000000, 0); /* 0.5f */
  V3(OP_VADDF, s, a, k);
  V3(OP_VSUBF, s, s, k); /* the subnormal rounding */
  tb_valu(b, OP_VIMM, k, 0x38800000, 0); /* 2^-14 */
  tb_raw(b, OP_VCMPLTI, M1, a, k, 0, 0, 0);
  tb_raw(b, OP_VSEL, r, M1, s, r, 0, 0);
  tb_valu(b, OP_VIMM, k, 0x477fefff, 0); /* below 65520 */
  tb_raw(b, OP_VCMPLTI, M1, k, a, 0, 0, 0);
  tb_valu(b, OP_VIMM, s, 0x7f800000, 0);
  tb_raw(b, OP_VSEL, r, M1, s, r, 0, 0);
  tb_raw(b, OP_VCMPLTI, M1, s, a, 0, 0, 0); /* NaN */
  tb_valu(b, OP_VIMM, k, (int32_t)0xffffe000u, 0);
  V3(OP_VAND, s, a, k);
  tb_valu(b, OP_VIMM, k, 0x00400000, 0);
  V3(OP_VOR, s, s, k);
  tb_raw(b, OP_VSEL, r, M1, s, r, 0, 0);
  tb_valu(b, OP_VIMM, k, (int32_t)0x80000000u, 0);
  V3(OP_VAND, s, x, k);
  V3(OP_VOR, d, r, s);
  rfree(p, a);
  rfree(p, r);
  rfree(p, k);
  rfree(p, s);
}

/* d = the f32 value of the f16 bits in the low half of x (the upper half
 * zero), as ir_f16_to_f32: subnormals m * 2^-24, infinities and NaNs
 * (payload kept) with an all-ones exponent, else rebiased. d may be x. */
static void f16_from_bits(tb *b, rp *p, int d, int x) {
  int a = ralloc(p), r = ralloc(p), k = ralloc(p), s = ralloc(p);
  tb_valu(b, OP_VIMM, k, 0x7fff, 0);
  V3(OP_VAND, a, x, k);
  tb_valu(b, OP_VIMM, k, 13, 0);
  V3(OP_VSHL, r, a, k);
  tb_valu(b, OP_VIMM, k, 0x38000000, 0);
  V3(OP_VADDI, s, r, k); /* normal: exponent 15 -> 127 */
  tb_valu(b, OP_VIMM, k, 0x7f800000, 0);
  V3(OP_VOR, r, r, k);   /* infinity, NaN */
  tb_valu(b, OP_VIMM, k, 0x7bff, 0);
  tb_raw(b, OP_VCMPLTI, M1, k, a, 0, 0, 0);
  tb_raw(b, OP_VSEL, r, M1, r, s, 0, 0);
  V3(OP_VCVTIF, s, a, 0);
  tb_valu(b, OP_VIMM, k, 0x33800000, 0); /* 2^-24 */
  V3(OP_VMULF, s, s, k);                 /* subnormal (exact) */
  tb_valu(b, OP_VIMM, k, 0x0400, 0);
  tb_raw(b, OP_VCMPLTI, M1, a, k, 0, 0, 0);
  tb_raw(b, OP_VSEL, r, M1, s, r, 0, 0);
  tb_valu(b, OP_VIMM, k, 0x8000, 0);
  V3(OP_VAND, s, x, k);
  tb_valu(b, OP_VIMM, k, 16, 0);
  V3(OP_VSHL, s, s, k);
  V3(OP_VOR, d, r, s);
  rfree(p, a);
  rfree(p, r);
  rfree(p, k);
  rfree(p, s);
}

/* d = the f16 bits (zero-extended) of x, an f32 holding an f16 value
 * (round_f16's results): normals rebiased, subnormals |x| * 2^24
 * converted, infinities and NaNs their top 10 mantissa bits under an
 * all-ones exponent. d may be x. */
static void f16_to_bits(tb *b, rp *p, int d, int x) {
  int a = ralloc(p), r = ralloc(p), k = ralloc(p), s = ralloc(p);
  tb_valu(b, OP_VIMM, k, 0x7fffffff, 0);
  V3(OP_VAND, a, x, k);
  tb_valu(b, OP_VIMM, k, 0x38000000, 0);
  V3(OP_VSUBI, r, a, k);
  tb_valu(b, OP_VIMM, k, 13, 0);
  V3(OP_VSHR, r, r, k); /* normal */
  V3(OP_VSHR, s, a, k);
  tb_valu(b, OP_VIMM, k, 0x3ff, 0);
  V3(OP_VAND, s, s, k);
  tb_valu(b, OP_VIMM, k, 0x7c00, 0);
  V3(OP_VOR, s, s, k); /* infinity, NaN */
  tb_valu(b, OP_VIMM, k, 0x7f7fffff, 0);
  tb_raw(b, OP_VCMPLTI, M1, k, a, 0, 0, 0);
  tb_raw(b, OP_VSEL, r, M1, s, r, 0, 0);
  tb_valu(b, OP_VIMM, k, 0x4b800000, 0); /* 2^24 */
  V3(OP_VMULF, s, a, k);
  V3(OP_VCVTFI, s, s, 0); /* subnormal (exact) */
  tb_valu(b, OP_VIMM, k, 0x38800000, 0);
  tb_raw(b, OP_VCMPLTI, M1, a, k, 0, 0, 0);
  tb_raw(b, OP_VSEL, r, M1, s, r, 0, 0);
  tb_valu(b, OP_VIMM, k, 16, 0);
  V3(OP_VSHR, s, x, k);
  tb_valu(b, OP_VIMM, k, 0x8000, 0);
  V3(OP_VAND, s, s, k);
  V3(OP_VOR, d, r, s);
  rfree(p, a);
  rfree(p, r);
  rfree(p, k);
  rfree(p, s);
}

static void convert(tb *b, rp *p, ir_type from, ir_type to, int d, int x) {
  if (is_f(from) && is_f(to)) {
    if (to == IR_BF16) V3(OP_VRNDBF, d, x, 0); /* bf16 -> bf16 too: quiets a signalling NaN */
    else if (to == IR_F16) round_f16(b, p, d, x);
    else V3(OP_VMOV, d, x, 0);
  } else if (is_f(from)) {
    if (to == IR_U32) {
      f32_to_u32(b, p, d, x);
    } else if (to == IR_PRED) {
      int z = imm(p, 0);
      tb_raw(b, OP_VCMPNEF, M1, x, z, 0, 0, 0);
      rfree(p, z);
      mask_to01(b, p, d, M1);
    } else {
      V3(OP_VCVTFI, d, x, 0);
      if (to == IR_S8) {
        int k = imm(p, 127);
        V3(OP_VMINI, d, d, k);
        tb_valu(b, OP_VIMM, k, -128, 0);
        V3(OP_VMAXI, d, d, k);
        rfree(p, k);
      }
    }
  } else if (is_f(to)) {
    if (from == IR_U32 && to == IR_BF16) u32_to_bf16(b, p, d, x);
    else if (from == IR_U32) u32_to_f32(b, p, d, x);
    else V3(OP_VCVTIF, d, x, 0);
    /* f16: f32 rounds only beyond 2^24, where f16 is infinite either way */
    if (to == IR_BF16) V3(OP_VRNDBF, d, d, 0);
    else if (to == IR_F16) round_f16(b, p, d, d);
  } else if (to == IR_PRED && from != IR_PRED) {
    int z = imm(p, 0);
    tb_raw(b, OP_VCMPEQI, M1, x, z, 0, 0, 0);
    tb_raw(b, OP_MNOT, M1, M1, 0, 0, 0, 0);
    rfree(p, z);
    mask_to01(b, p, d, M1);
  } else {
    V3(OP_VMOV, d, x, 0);
    if (to == IR_S8 && (from == IR_S32 || from == IR_U32)) wrap8(b, p, d);
  }
}

static void shift(tb *b, rp *p, ir_op op, ir_type t, int d, int x, int y) {
  int bits = t == IR_S8 ? 8 : 32;
  int k = imm(p, (uint32_t)bits), z = imm(p, 0), r = ralloc(p), xs = x;
  tb_raw(b, OP_VCMPLTI, M1, y, k, 0, 0, 0); /* y < bits */
  tb_raw(b, OP_VCMPLTI, M2, y, z, 0, 0, 0); /* y < 0 */
  tb_raw(b, OP_MNOT, M2, M2, 0, 0, 0, 0);
  tb_raw(b, OP_MAND, M1, M1, M2, 0, 0, 0);
  if (op == IR_OP_SHR_L && t == IR_S8) {
    xs = ralloc(p);
    tb_valu(b, OP_VIMM, k, 0xff, 0);
    V3(OP_VAND, xs, x, k);
  }
  V3(op == IR_OP_SHL ? OP_VSHL : op == IR_OP_SHR_L ? OP_VSHR : OP_VSRA, r, xs, y);
  if (op == IR_OP_SHR_A) {
    tb_valu(b, OP_VIMM, k, 31, 0);
    V3(OP_VSRA, z, x, k);
  }
  tb_raw(b, OP_VSEL, d, M1, r, z, 0, 0);
  if (t == IR_S8) wrap8(b, p, d);
  if (xs != x) rfree(p, xs);
  rfree(p, k);
  rfree(p, z);
  rfree(p, r);
}

/* popcnt (SWAR) and clz (binary search) on the type's width: s8 and pred
 * count within their low 8/1 bits. */
static void popcnt_clz(tb *b, rp *p, ir_op op, ir_type t, int d, int x) {
  int w = ralloc(p), k = ralloc(p), u = ralloc(p);
  uint32_t width_mask = t == IR_S8 ? 0xffu : t == IR_PRED ? 1u : 0xffffffffu;
  tb_valu(b, OP_VIMM, k, (int32_t)width_mask, 0);
  V3(OP_VAND, w, x, k);
  if (op == IR_OP_POPCNT) {
    static const uint32_t m[3] = {0x55555555u, 0x33333333u, 0x0f0f0f0fu};
    /* w - ((w >> 1) & m0) */
    tb_valu(b, OP_VIMM, k, 1, 0);
    V3(OP_VSHR, u, w, k);
    tb_valu(b, OP_VIMM, k, (int32_t)m[0], 0);
    V3(OP_VAND, u, u, k);
    V3(OP_VSUBI, w, w, u);
    /* (w & m1) + ((w >> 2) & m1) */
    tb_valu(b, OP_VIMM, k, 2, 0);
    V3(OP_VSHR, u, w, k);
    tb_valu(b, OP_VIMM, k, (int32_t)m[1], 0);
    V3(OP_VAND, u, u, k);
    V3(OP_VAND, w, w, k);
    V3(OP_VADDI, w, w, u);
    /* (w + (w >> 4)) & m2, then * 0x01010101 >> 24 */
    tb_valu(b, OP_VIMM, k, 4, 0);
    V3(OP_VSHR, u, w, k);
    V3(OP_VADDI, w, w, u);
    tb_valu(b, OP_VIMM, k, (int32_t)m[2], 0);
    V3(OP_VAND, w, w, k);
    tb_valu(b, OP_VIMM, k, 0x01010101, 0);
    V3(OP_VMULI, w, w, k);
    tb_valu(b, OP_VIMM, k, 24, 0);
    V3(OP_VSHR, d, w, k);
  } else {
    /* n = 0; for s in 16, 8, 4, 2, 1: if (w >> (32 - s)) == 0 { n += s; w <<= s }
     * then n += (w == 0) (all 32 zero bits), minus 24 (s8) or 31 (pred). */
    int n = ralloc(p), z = ralloc(p);
    tb_valu(b, OP_VIMM, n, 0, 0);
    tb_valu(b, OP_VIMM, z, 0, 0);
    for (int s = 16; s >= 1; s /= 2) {
      tb_valu(b, OP_VIMM, k, 32 - s, 0);
      V3(OP_VSHR, u, w, k);
      tb_raw(b, OP_VCMPEQI, M1, u, z, 0, 0, 0);
      tb_valu(b, OP_VIMM, k, s, 0);
      V3(OP_VADDI, u, n, k);
      tb_raw(b, OP_VSEL, n, M1, u, n, 0, 0);
      V3(OP_VSHL, u, w, k);
      tb_raw(b, OP_VSEL, w, M1, u, w, 0, 0);
    }
    tb_raw(b, OP_VCMPEQI, M1, w, z, 0, 0, 0);
    tb_valu(b, OP_VIMM, k, 1, 0);
    V3(OP_VADDI, u, n, k);
    tb_raw(b, OP_VSEL, n, M1, u, n, 0, 0);
    tb_valu(b, OP_VIMM, k, t == IR_S8 ? 24 : t == IR_PRED ? 31 : 0, 0);
    V3(OP_VSUBI, d, n, k);
    rfree(p, n);
    rfree(p, z);
  }
  rfree(p, w);
  rfree(p, k);
  rfree(p, u);
}

/* pred divide/remainder by the integer rules on 0/1, as the evaluator:
 * x / 1 = x, x / 0 = 1 (wrapped -1), so x / y = x | !y; x % 1 = 0,
 * x % 0 = x, so x % y = x & !y. */
static void pred_divrem(tb *b, rp *p, bool rem, int d, int x, int y) {
  int k = cimm(p, 1), ny = ralloc(p);
  V3(OP_VXOR, ny, y, k);
  V3(rem ? OP_VAND : OP_VOR, d, x, ny);
  rfree(p, k);
  rfree(p, ny);
}

/* Integer divide/remainder (s32, s8 held sign-extended): restoring
 * division of the magnitudes, 32 steps, then the signs; x/0 = -1, x%0 = x,
 * INT_MIN/-1 = INT_MIN (and s8's wrap), INT_MIN%-1 = 0, as the evaluator. */
static void int_divrem(tb *b, rp *p, bool rem, ir_type t, int d, int x, int y) {
  int ua = ralloc(p), ub = ralloc(p), q = ralloc(p), r = ralloc(p), k = ralloc(p), u = ralloc(p),
      w = ralloc(p);
  /* |x|, |y| as unsigned: (v ^ s) - s with s = v >> 31 */
  tb_valu(b, OP_VIMM, k, 31, 0);
  V3(OP_VSRA, u, x, k);
  V3(OP_VXOR, ua, x, u);
  V3(OP_VSUBI, ua, ua, u);
  V3(OP_VSRA, u, y, k);
  V3(OP_VXOR, ub, y, u);
  V3(OP_VSUBI, ub, ub, u);
  restoring_div(b, p, ua, ub, q, r, k, u, w);
  tb_valu(b, OP_VIMM, k, 31, 0);
  if (rem) { /* sign of x */
    V3(OP_VSRA, u, x, k);
    V3(OP_VXOR, r, r, u);
    V3(OP_VSUBI, r, r, u);
  } else { /* sign of x ^ y */
    V3(OP_VXOR, u, x, y);
    V3(OP_VSRA, u, u, k);
    V3(OP_VXOR, q, q, u);
    V3(OP_VSUBI, q, q, u);
  }
  tb_valu(b, OP_VIMM, k, 0, 0);
  tb_raw(b, OP_VCMPEQI, M1, y, k, 0, 0, 0);
  if (rem) {
    tb_raw(b, OP_VSEL, d, M1, x, r, 0, 0);
  } else {
    tb_valu(b, OP_VIMM, k, -1, 0);
    tb_raw(b, OP_VSEL, d, M1, k, q, 0, 0);
  }
  if (t == IR_S8) wrap8(b, p, d);
  rfree(p, ua);
  rfree(p, ub);
  rfree(p, q);
  rfree(p, r);
  rfree(p, k);
  rfree(p, u);
  rfree(p, w);
}

/* bitcast-convert (same width) from type from to t: f16 <-> bf16 moves
 * the bits between an f16 value and the top half of a bf16 lane; f16 <->
 * s32 (never admitted by the verifier; the program edges use it) between
 * the value and f16 bits in a word's low half; anything else is a move. */
static void bitcast(tb *b, rp *p, ir_type from, ir_type t, int d, int x) {
  int k = cimm(p, 16);
  if (t == IR_F16 && from == IR_BF16) {
    V3(OP_VSHR, d, x, k);
    f16_from_bits(b, p, d, d);
  } else if (t == IR_F16 && from != IR_F16) {
    f16_from_bits(b, p, d, x);
  } else if (t != IR_F16 && from == IR_F16) {
    f16_to_bits(b, p, d, x);
    if (t == IR_BF16) V3(OP_VSHL, d, d, k);
  } else {
    V3(OP_VMOV, d, x, 0);
  }
  rfree(p, k);
}

/* Emits one op node into d from operand registers. */
static void op_node(tb *b, rp *p, const tk_node *n, const ir_type *atypes, int d, const int *a) {
  ir_type t = n->type;
  bool f = is_f(t);
  int x = a[0], y = n->nargs > 1 ? a[1] : -1, z = n->nargs > 2 ? a[2] : -1;
  switch (n->op) {
  case IR_OP_ABS:
    if (f) V3(OP_VABSF, d, x, 0);
    else if (t == IR_U32) V3(OP_VMOV, d, x, 0);
    else {
      int zr = cimm(p, 0), ng = ralloc(p);
      V3(OP_VSUBI, ng, zr, x);
      tb_raw(b, OP_VCMPLTI, M1, x, zr, 0, 0, 0);
      tb_raw(b, OP_VSEL, d, M1, ng, x, 0, 0);
      rfree(p, zr);
      rfree(p, ng);
      if (t == IR_S8) wrap8(b, p, d);
    }
    break;
  case IR_OP_NEGATE:
    if (f) V3(OP_VNEGF, d, x, 0);
    else {
      int zr = cimm(p, 0);
      V3(OP_VSUBI, d, zr, x);
      rfree(p, zr);
      if (t == IR_S8) wrap8(b, p, d);
      if (t == IR_PRED) V3(OP_VMOV, d, x, 0);
    }
    break;
  case IR_OP_EXP: V3(OP_VEXP, d, x, 0); break;
  case IR_OP_LOG: V3(OP_VLOG, d, x, 0); break;
  case IR_OP_SQRT: V3(OP_VSQRT, d, x, 0); break;
  case IR_OP_RSQRT: V3(OP_VRSQRT, d, x, 0); break;
  case IR_OP_TANH: V3(OP_VTANH, d, x, 0); break;
  case IR_OP_LOGISTIC: V3(OP_VLOGISTIC, d, x, 0); break;
  case IR_OP_SINE: V3(OP_VSIN, d, x, 0); break;
  case IR_OP_COSINE: V3(OP_VCOS, d, x, 0); break;
  case IR_OP_EXPM1: V3(OP_VEXPM1, d, x, 0); break;
  case IR_OP_LOG1P: V3(OP_VLOG1P, d, x, 0); break;
  case IR_OP_CBRT: V3(OP_VCBRT, d, x, 0); break;
  case IR_OP_POWER: V3(OP_VPOW, d, x, y); break;
  case IR_OP_ATAN2: V3(OP_VATAN2, d, x, y); break;
  case IR_OP_FLOOR: case IR_OP_CEIL: case IR_OP_ROUND_AFZ: case IR_OP_ROUND_EVEN:
    rounding(b, p, n->op, d, x);
    break;
  case IR_OP_SIGN: {
    if (t == IR_U32) { /* 0 or 1 */
      convert(b, p, IR_U32, IR_PRED, d, x);
      break;
    }
    int zr = cimm(p, 0), one = cimm(p, f ? 0x3F800000u : 1u),
        mone = cimm(p, f ? 0xBF800000u : 0xFFFFFFFFu);
    isa_op lt = f ? OP_VCMPLTF : OP_VCMPLTI;
    int tmp = ralloc(p);
    tb_raw(b, lt, M1, x, zr, 0, 0, 0);
    tb_raw(b, OP_VSEL, tmp, M1, mone, x, 0, 0);
    tb_raw(b, lt, M1, zr, x, 0, 0, 0);
    tb_raw(b, OP_VSEL, d, M1, one, tmp, 0, 0);
    rfree(p, zr);
    rfree(p, one);
    rfree(p, mone);
    rfree(p, tmp);
    break;
  }
  case IR_OP_IS_FINITE: {
    int inf = cimm(p, 0x7F800000u), ab = ralloc(p);
    V3(OP_VABSF, ab, x, 0);
    tb_raw(b, OP_VCMPLTF, M1, ab, inf, 0, 0, 0);
    rfree(p, inf);
    rfree(p, ab);
    mask_to01(b, p, d, M1);
    break;
  }
  case IR_OP_NOT: {
    int k = cimm(p, t == IR_PRED ? 1u : 0xFFFFFFFFu);
    V3(OP_VXOR, d, x, k);
    rfree(p, k);
    break;
  }
  case IR_OP_ADD:
    V3(f ? OP_VADDF : t == IR_PRED ? OP_VOR : OP_VADDI, d, x, y);
    if (t == IR_S8) wrap8(b, p, d);
    break;
  case IR_OP_SUBTRACT:
    V3(f ? OP_VSUBF : t == IR_PRED ? OP_VXOR : OP_VSUBI, d, x, y);
    if (t == IR_S8) wrap8(b, p, d);
    break;
  case IR_OP_MULTIPLY:
    V3(f ? OP_VMULF : t == IR_PRED ? OP_VAND : OP_VMULI, d, x, y);
    if (t == IR_S8) wrap8(b, p, d);
    break;
  case IR_OP_DIVIDE:
    if (f) V3(OP_VDIVF, d, x, y);
    else if (t == IR_PRED) pred_divrem(b, p, false, d, x, y);
    else if (t == IR_U32) uint_divrem(b, p, false, d, x, y);
    else int_divrem(b, p, false, t, d, x, y);
    break;
  case IR_OP_REMAINDER:
    if (f) V3(OP_VREMF, d, x, y);
    else if (t == IR_PRED) pred_divrem(b, p, true, d, x, y);
    else if (t == IR_U32) uint_divrem(b, p, true, d, x, y);
    else int_divrem(b, p, true, t, d, x, y);
    break;
  case IR_OP_MAXIMUM:
    if (t == IR_U32) umaxmin(b, p, true, d, x, y);
    else V3(f ? OP_VMAXF : OP_VMAXI, d, x, y);
    break;
  case IR_OP_MINIMUM:
    if (t == IR_U32) umaxmin(b, p, false, d, x, y);
    else V3(f ? OP_VMINF : OP_VMINI, d, x, y);
    break;
  case IR_OP_AND: V3(OP_VAND, d, x, y); break;
  case IR_OP_OR: V3(OP_VOR, d, x, y); break;
  case IR_OP_XOR: V3(OP_VXOR, d, x, y); break;
  case IR_OP_SHL: case IR_OP_SHR_A: case IR_OP_SHR_L: shift(b, p, n->op, t, d, x, y); break;
  case IR_OP_COMPARE: compare(b, p, n, atypes[0], d, x, y); break;
  case IR_OP_POPCNT: case IR_OP_CLZ: popcnt_clz(b, p, n->op, t, d, x); break;
  case IR_OP_SELECT: {
    int zr = cimm(p, 0);
    tb_raw(b, OP_VCMPEQI, M1, x, zr, 0, 0, 0);
    tb_raw(b, OP_VSEL, d, M1, z, y, 0, 0);
    rfree(p, zr);
    break;
  }
  case IR_OP_CLAMP:
    if (t == IR_U32) { /* min(max(x, lo), hi) unsigned; d may alias z */
      int m = ralloc(p);
      umaxmin(b, p, true, m, y, x);
      umaxmin(b, p, false, d, m, z);
      rfree(p, m);
      break;
    }
    V3(f ? OP_VMAXF : OP_VMAXI, d, y, x);
    V3(f ? OP_VMINF : OP_VMINI, d, d, z);
    break;
  case IR_OP_CONVERT: convert(b, p, atypes[0], t, d, x); return;
  case IR_OP_BITCAST_CONVERT: bitcast(b, p, atypes[0], t, d, x); return;
  case IR_OP_COPY: V3(OP_VMOV, d, x, 0); return;
  default: base_die("elem: unsupported op %s reached codegen", ir_op_name(n->op));
  }
  if (t == IR_BF16 && n->op != IR_OP_COMPARE) V3(OP_VRNDBF, d, d, 0);
  /* f16: rounded as the evaluator rounds each result; select moves bits */
  if (t == IR_F16 && n->op != IR_OP_SELECT) round_f16(b, p, d, d);
}

/* ---- DAG evaluation --------------------------------------------------------- */

static bool eval_dag(tb *b, uint32_t *used, int mb, const tk_elem *e, const int *in_regs,
                     int *out_regs, int *peak, const tk_plan *pl, tk_plan *coll);

bool tk_eval_dag(tb *b, uint32_t *used, const tk_elem *e, const int *in_regs, int *out_regs) {
  return eval_dag(b, used, 0, e, in_regs, out_regs, NULL, NULL, NULL);
}

/* Registers e needs at once on one tile (inputs and, with pl, its
 * hoisted constants included): a dry run into a throwaway builder. */
static int dag_regs(tb *b, const tk_elem *e, const tk_plan *pl, tk_plan *coll) {
  tb dry;
  memset(&dry, 0, sizeof dry);
  dry.a = b->a;
  dry.t = b->t;
  dry.d = b->d;
  dry.max_code = b->max_code;
  dry.ops.n = 1; /* no op bookkeeping */
  int in_regs[64], outs[64], peak = 0;
  uint32_t used = 0;
  if (e->ninputs > 24 || e->noutputs > 64) return TGT_VREGS + 1;
  for (int i = 0; i < e->ninputs; i++) {
    in_regs[i] = i;
    used |= 1u << i;
  }
  for (int k = 0; pl && k < pl->nconst; k++) used |= 1u << (TGT_VREGS - 1 - k);
  arena_mark mk = arena_get_mark(b->a); /* the dry run's code is scratch */
  bool ok = eval_dag(&dry, &used, 0, e, in_regs, outs, &peak, pl, coll);
  arena_reset(b->a, mk);
  tb_fini(&dry);
  if (!ok) return TGT_VREGS + 1;
  int base = e->ninputs + (pl ? pl->nconst : 0);
  return peak > base ? peak : base;
}

void tk_plan_make(tb *b, const tk_elem *e, tk_plan *pl) {
  memset(pl, 0, sizeof *pl);
  for (int i = 0; i < e->nnodes && pl->nconst < TK_PLAN_CONSTS; i++) {
    if (e->nodes[i].kind != TK_CONST) continue;
    bool seen = false;
    for (int k = 0; k < pl->nconst; k++) seen |= pl->bits[k] == e->nodes[i].bits;
    if (!seen) pl->bits[pl->nconst++] = e->nodes[i].bits;
  }
  int need = dag_regs(b, e, NULL, pl); /* also collects the op sequences' constants */
  int plain = 3 * need <= TGT_VREGS ? 3 : 2 * need <= TGT_VREGS ? 2 : 1;
  int hoisted = 0;
  if (pl->nconst) {
    int nh = dag_regs(b, e, pl, NULL) - pl->nconst, avail = TGT_VREGS - pl->nconst;
    hoisted = 3 * nh <= avail ? 3 : 2 * nh <= avail ? 2 : nh <= avail ? 1 : 0;
  }
  /* constants in registers unless that leaves one tile where there were more */
  if (hoisted >= 2 || (hoisted == 1 && plain == 1)) {
    pl->tiles = hoisted;
  } else {
    pl->nconst = 0;
    pl->tiles = plain;
  }
}

int tk_plan_part(const tk_plan *pl, int gn) { return (TGT_VREGS - pl->nconst) / gn; }

void tk_plan_consts(tb *b, const tk_plan *pl) {
  for (int k = 0; k < pl->nconst; k++)
    tb_valu(b, OP_VIMM, TGT_VREGS - 1 - k, (int32_t)pl->bits[k], 0);
}

/* Code words lo[g]..hi[g] of gn segments (in order, adjacent) reordered
 * round robin, one word of each in turn. */
static void interleave(tb *b, const uint32_t *lo, const uint32_t *hi, int gn) {
  if (gn < 2 || b->failed) return;
  uint32_t at = lo[0], n = hi[gn - 1] - at;
  arena_mark mk = arena_get_mark(b->a);
  uint64_t *tmp = arena_array(b->a, n + 1, sizeof(uint64_t));
  memcpy(tmp, b->code.v + at, (size_t)n * sizeof(uint64_t));
  uint32_t w = at, pos[4] = {0, 0, 0, 0};
  for (bool more = true; more;) {
    more = false;
    for (int g = 0; g < gn; g++)
      if (lo[g] + pos[g] < hi[g]) {
        b->code.v[w++] = tmp[lo[g] - at + pos[g]++];
        more = true;
      }
  }
  arena_reset(b->a, mk);
}

/* Reorders the vector-unit register code in words lo..hi (ALU, compare
 * and select instructions only: no memory access, no other unit) so that
 * the in-order vector unit stalls less: list scheduling that keeps, for
 * every vector and mask register, the order of its writes and of each
 * read relative to the writes (a read still sees the value it saw), and
 * picks next the instruction that can start earliest (its inputs' latency
 * from docs/isa.md), the earlier one in program order on a tie. Values are
 * therefore unchanged; only the timing improves. */
static void schedule_words(tb *b, uint32_t lo, uint32_t hi);
static void schedule(tb *b, uint32_t lo, uint32_t hi) {
  arena_mark mk = arena_get_mark(b->a); /* its tables are scratch, per group */
  schedule_words(b, lo, hi);
  arena_reset(b->a, mk);
}

static void schedule_words(tb *b, uint32_t lo, uint32_t hi) {
  int n = (int)(hi - lo);
  if (n < 3 || n > 4096 || b->failed) return;
  typedef struct sn {
    int nr, nw, lat;
    uint8_t r[4], w[2]; /* registers: 0..31 vector, 32..39 mask */
  } sn;
  sn *in = arena_array(b->a, (size_t)n, sizeof *in);
  for (int i = 0; i < n; i++) {
    isa_inst d;
    char err[8];
    if (isa_decode(b->code.v[lo + (uint32_t)i], &d, err, sizeof err) != 0) return;
    const isa_info *fi = isa_info_of((isa_op)d.op);
    if (fi->unit != ISA_VECTOR || fi->lat < 1) return;
    const char *f = fi->operands;
    const uint8_t fld[4] = {d.a, d.b, d.c, d.d};
    in[i].lat = fi->lat;
    for (int k = 0; f[k] && k < 4; k++) {
      if (f[k] != 'V' && f[k] != 'M') {
        if (f[k] != 'I') return; /* S: a memory access; not this code */
        continue;
      }
      uint8_t r = (uint8_t)(fld[k] + (f[k] == 'M' ? 32 : 0));
      if (k == 0 && strcmp(f, "VSISM") != 0) in[i].w[in[i].nw++] = r;
      else if (r != 32) in[i].r[in[i].nr++] = r; /* m0 is constant */
    }
  }
  /* dependences: pred lists with the latency each edge needs */
  int *npred = arena_array(b->a, (size_t)n, sizeof(int));
  int (*pred)[32] = arena_array(b->a, (size_t)n, sizeof *pred);
  int (*plat)[32] = arena_array(b->a, (size_t)n, sizeof *plat);
  int lastw[40], nread[40];
  bool over[40]; /* more readers than tracked: a later write is not movable */
  int (*reads)[24] = arena_array(b->a, 40, sizeof *reads);
  for (int r = 0; r < 40; r++) lastw[r] = -1, nread[r] = 0, over[r] = false;
  for (int i = 0; i < n; i++) {
    int np = 0;
    for (int k = 0; k < in[i].nr; k++) { /* RAW */
      int w = lastw[in[i].r[k]];
      if (w >= 0 && np < 32) pred[i][np] = w, plat[i][np++] = in[w].lat;
    }
    for (int k = 0; k < in[i].nw; k++) { /* WAW, WAR: keep the order */
      int r = in[i].w[k];
      if (over[r]) return; /* leave the code as it is */
      if (lastw[r] >= 0 && np < 32) pred[i][np] = lastw[r], plat[i][np++] = 1;
      for (int j = 0; j < nread[r]; j++)
        if (np < 32) pred[i][np] = reads[r][j], plat[i][np++] = 1;
        else return;
    }
    npred[i] = np;
    for (int k = 0; k < in[i].nw; k++) {
      lastw[in[i].w[k]] = i;
      nread[in[i].w[k]] = 0;
      over[in[i].w[k]] = false;
    }
    for (int k = 0; k < in[i].nr; k++) {
      int r = in[i].r[k];
      if (nread[r] >= 24) over[r] = true;
      else reads[r][nread[r]++] = i;
    }
  }
  int *start = arena_array(b->a, (size_t)n, sizeof(int));
  bool *done = arena_array(b->a, (size_t)n, sizeof(bool));
  uint64_t *out = arena_array(b->a, (size_t)n, sizeof(uint64_t));
  int t = -1, first = 0;
  for (int m = 0; m < n; m++) {
    int best = -1, bs = 0;
    while (done[first]) first++;
    for (int i = first; i < n; i++) {
      if (done[i]) continue;
      int st = t + 1;
      bool ok = true;
      for (int k = 0; k < npred[i] && ok; k++) {
        int p = pred[i][k];
        if (!done[p]) ok = false;
        else if (start[p] + plat[i][k] > st) st = start[p] + plat[i][k];
      }
      if (ok && (best < 0 || st < bs)) best = i, bs = st;
      if (ok && st == t + 1) break; /* cannot do better than no stall */
    }
    done[best] = true;
    start[best] = bs;
    t = bs;
    out[m] = b->code.v[lo + (uint32_t)best];
  }
  memcpy(b->code.v + lo, out, (size_t)n * sizeof(uint64_t));
}

int tk_dag_regs(tb *b, const tk_elem *e) { return dag_regs(b, e, NULL, NULL); }

bool tk_eval_tiles(tb *b, const tk_elem *e, const tk_plan *pl, int gn, int *in_regs,
                   int *out_regs) {
  return tk_eval_tiles_keep(b, e, pl, gn, in_regs, out_regs, 0);
}

bool tk_eval_tiles_keep(tb *b, const tk_elem *e, const tk_plan *pl, int gn, int *in_regs,
                        int *out_regs, uint32_t keep) {
  int RP = tk_plan_part(pl, gn);
  uint32_t lo[4], hi[4];
  for (int g = 0; g < gn; g++) {
    uint32_t part = RP >= 32 ? 0xffffffffu : ((1u << RP) - 1) << (g * RP);
    uint32_t used = ~part | keep;
    for (int i = 0; i < e->ninputs; i++) used |= 1u << in_regs[g * e->ninputs + i];
    lo[g] = (uint32_t)b->code.n;
    if (!eval_dag(b, &used, 2 * g, e, in_regs + g * e->ninputs, out_regs + g * e->noutputs, NULL,
                  pl, NULL))
      return false;
    hi[g] = (uint32_t)b->code.n;
  }
  interleave(b, lo, hi, gn);
  schedule(b, lo[0], hi[gn - 1]);
  return !b->failed;
}

static bool eval_dag(tb *b, uint32_t *used, int mb, const tk_elem *e, const int *in_regs,
                     int *out_regs, int *peak, const tk_plan *pl, tk_plan *coll) {
  rp p = {b, *used, mb, __builtin_popcount(*used), 0, {0}, pl, coll};
  uint32_t fixed = 0; /* registers of hoisted constants: never freed */
  int *uses = arena_array(b->a, (size_t)e->nnodes, sizeof(int));
  int *reg = arena_array(b->a, (size_t)e->nnodes, sizeof(int));
  for (int i = 0; i < e->nnodes; i++)
    for (int j = 0; j < e->nodes[i].nargs; j++) uses[e->nodes[i].args[j]]++;
  for (int o = 0; o < e->noutputs; o++) uses[e->out_node[o]] += 1000000;
  for (int i = 0; i < e->nnodes; i++) {
    const tk_node *n = &e->nodes[i];
    if (n->kind == TK_IN) {
      reg[i] = in_regs[n->input];
      continue;
    }
    int hk = -1;
    for (int k = 0; n->kind == TK_CONST && pl && k < pl->nconst; k++)
      if (pl->bits[k] == n->bits) hk = k;
    if (hk >= 0) { /* in its register for the whole loop */
      reg[i] = TGT_VREGS - 1 - hk;
      fixed |= 1u << reg[i];
      continue;
    }
    int d = ralloc(&p);
    if (d < 0) {
      tb_error(b, ST_UNSUPPORTED, "fused expression needs more than %d vector registers",
               TGT_VREGS);
      return false;
    }
    reg[i] = d;
    if (n->kind == TK_CONST) {
      tb_valu(b, OP_VIMM, d, (int32_t)n->bits, 0);
    } else {
      int a[3] = {0, 0, 0};
      ir_type at[3] = {IR_F32, IR_F32, IR_F32};
      for (int j = 0; j < n->nargs; j++) {
        a[j] = reg[n->args[j]];
        at[j] = e->nodes[n->args[j]].type;
      }
      op_node(b, &p, n, at, d, a);
      for (int j = 0; j < n->nargs; j++) {
        int q = n->args[j];
        if (--uses[q] == 0 && e->nodes[q].kind != TK_IN && !(fixed >> reg[q] & 1))
          rfree(&p, reg[q]);
      }
    }
    if (uses[i] == 0) rfree(&p, d);
  }
  for (int o = 0; o < e->noutputs; o++) out_regs[o] = reg[e->out_node[o]];
  *used = p.used;
  if (peak) *peak = p.peak;
  return !b->failed;
}

/* ---- the kernel ------------------------------------------------------------ */

static int esize_of(ir_type t) { return tk_itype(t) == IR_BF16 ? 2 : 4; }

/* The register code of one group of gn tiles, and its output registers. */
typedef struct group_code {
  int n;            /* words; 0: not evaluated yet */
  uint64_t *words;  /* in the arena */
  int outs[3 * TK_MAX_INPUTS];
} group_code;

/* tk_eval_tiles for a group of gn tiles whose inputs are in in_regs. The
 * words it emits depend only on e, pl, gn and in_regs (register code: no
 * memory access, no scalar register, nothing else of the builder), and
 * tk_elementwise gives every group of gn tiles the same registers: so the
 * first group's words are kept in m and the later groups replay them. */
static bool eval_group(tb *b, const tk_elem *e, const tk_plan *pl, int gn, int *in_regs,
                       int *outs, group_code *m) {
  if (m->n > 0) {
    tb_words(b, m->words, m->n);
    memcpy(outs, m->outs, (size_t)(gn * e->noutputs) * sizeof *outs);
    return !b->failed;
  }
  uint32_t lo = (uint32_t)b->code.n;
  if (!tk_eval_tiles(b, e, pl, gn, in_regs, outs)) return false;
  m->n = (int)((uint32_t)b->code.n - lo);
  m->words = arena_dup(b->a, b->code.v + lo, (size_t)m->n * sizeof *m->words);
  memcpy(m->outs, outs, (size_t)(gn * e->noutputs) * sizeof *outs);
  return true;
}

/* A DMA of chunk bytes at offset off of the buffer at addr, or (reg > 0)
 * of the buffer whose address register reg holds at run time. */
static void elem_dma(tb *b, bool load, uint64_t vaddr, uint64_t addr, int reg, uint64_t span,
                     uint64_t off, const int64_t d[10]) {
  if (reg <= 0) {
    tb_dma(b, load, vaddr, addr + off, d);
    return;
  }
  int t = reg;
  if (off) {
    t = tb_sreg_take(b);
    tb_raw(b, OP_SADDI, t, reg, 0, 0, 0, (int32_t)off);
  }
  tb_dma_at(b, load, vaddr, t, addr + off, addr + off + span, d);
  if (off) tb_sreg_give(b, t);
}

void tk_elementwise(tb *b, const tk_elem *e) { tk_elementwise_at(b, e, NULL, NULL, 0); }

void tk_elementwise_at(tb *b, const tk_elem *e, const int *in_reg, const int *out_reg,
                       uint64_t span) {
  if (b->failed || e->count <= 0) return;
  int nb = e->ninputs + e->noutputs;
  /* Chunk: a multiple of 1024 elements; 2 slots per buffer in half of VMEM. */
  int64_t C = (int64_t)(b->t.vmem_bytes / 2 / (uint64_t)(nb * 8)) / 1024 * 1024;
  if (C > 65536) C = 65536;
  if (C < 1024) C = 1024;
  int64_t nchunks = (e->count + C - 1) / C;
  if (nchunks == 1) C = (e->count + 1023) / 1024 * 1024;
  uint64_t slot = (uint64_t)C * 4;
  if (!tb_vmem_fits(b, (uint64_t)nb * 2 * slot, "an elementwise loop")) return;
  int in_regs[3 * TK_MAX_INPUTS];
  /* Tiles per group: as many as have registers for the expression's peak
   * (a dry run) and masks (two each); scalar constants stay in registers
   * for the whole chunk when that leaves enough. */
  tk_plan pl;
  tk_plan_make(b, e, &pl);
  int G = pl.tiles;
  if (e->ninputs > TK_MAX_INPUTS || e->noutputs > TK_MAX_INPUTS) {
    tb_error(b, ST_UNSUPPORTED, "fused loop with %d inputs and %d outputs (at most %d each)",
             e->ninputs, e->noutputs, TK_MAX_INPUTS);
    return;
  }
  group_code memo[4] = {{0}}; /* by tiles per group, gn <= pl.tiles <= 3 */
  for (int64_t c = -1; c < nchunks; c++) {
    /* Issue the loads of chunk c+1 before computing chunk c. */
    if (c + 1 < nchunks) {
      int64_t c1 = c + 1, off = c1 * C, len = e->count - off < C ? e->count - off : C;
      for (int i = 0; i < e->ninputs; i++) {
        int es = esize_of(e->in_type[i]);
        int64_t d[10] = {len * es, 1, 1, 1, 0, 0, 0, 0, 0, 0};
        elem_dma(b, true, (uint64_t)i * 2 * slot + (uint64_t)(c1 & 1) * slot, e->in_addr[i],
                 in_reg ? in_reg[i] : 0, span, (uint64_t)(off * es), d);
      }
    }
    if (c < 0) continue;
    int64_t off = c * C, len = e->count - off < C ? e->count - off : C;
    int64_t tiles = (len + 1023) / 1024;
    tk_plan_consts(b, &pl);
    for (int64_t t0 = 0; t0 < tiles && !b->failed; t0 += G) {
      int gn = tiles - t0 < G ? (int)(tiles - t0) : G, RP = tk_plan_part(&pl, gn);
      int outs[3 * 24];
      /* Loads, in order (they may wait for DMAs). */
      for (int g = 0; g < gn; g++)
        for (int i = 0; i < e->ninputs; i++) {
          int64_t t = t0 + g;
          bool h = esize_of(e->in_type[i]) == 2;
          tb_vld(b, g * RP + i,
                 (uint64_t)i * 2 * slot + (uint64_t)(c & 1) * slot + (uint64_t)t * (h ? 2048 : 4096),
                 h ? 256 : 512, h);
        }
      /* Compute, each tile in its own registers and masks, the register
       * code of the tiles interleaved so that one tile's latency hides
       * behind the others' work (the vector unit issues in order). */
      for (int g = 0; g < gn; g++)
        for (int i = 0; i < e->ninputs; i++) in_regs[g * e->ninputs + i] = g * RP + i;
      if (!eval_group(b, e, &pl, gn, in_regs, outs, &memo[gn])) return;
      for (int g = 0; g < gn; g++)
        for (int o = 0; o < e->noutputs; o++) {
          int64_t t = t0 + g;
          bool h = esize_of(e->nodes[e->out_node[o]].type) == 2;
          tb_vst(b, outs[g * e->noutputs + o],
                 (uint64_t)(e->ninputs + o) * 2 * slot + (uint64_t)(c & 1) * slot +
                     (uint64_t)t * (h ? 2048 : 4096),
                 h ? 256 : 512, h, 0);
        }
    }
    for (int o = 0; o < e->noutputs; o++) {
      int es = esize_of(e->nodes[e->out_node[o]].type);
      int64_t d[10] = {len * es, 1, 1, 1, 0, 0, 0, 0, 0, 0};
      elem_dma(b, false, (uint64_t)(e->ninputs + o) * 2 * slot + (uint64_t)(c & 1) * slot,
               e->out_addr[o], out_reg ? out_reg[o] : 0, span, (uint64_t)(off * es), d);
    }
  }
}
