/* elem.c: the scalar semantics of every elementwise op, conversion and
 * comparison, as LLVM IR. Values travel in a COMPUTE type (pred i1, the
 * integers iN of their width, signed or not, bf16/f16/f32 float, f64
 * double); bf16 and f16 results are rounded to their type (nearest even)
 * after every op, so a bf16 value in flight is always exactly
 * representable in bf16, as in the reference evaluator. Storage types
 * follow ir_literal (pred i8, bf16/f16 i16 bits). Unsigned types divide,
 * compare, take max/min, extend and convert as unsigned; f64 computes in
 * double with the double libm functions.
 *
 * Semantics follow ops.def and the evaluator: integer x/0 = -1,
 * INT_MIN/-1 = INT_MIN, x%0 = x, INT_MIN%-1 = 0; shifts out of range give 0
 * (arithmetic right: the sign); float max/min propagate NaN; float->int
 * conversion truncates, saturates and maps NaN to 0.
 *
 * Under CPU_NUMERICS_TPU, f32 and bf16 ops compute what the emulated
 * vector unit computes (base/vmath.c, the evaluator's TPU mode in
 * ir/eval_tpu.c, docs/numerics.md section 4): arithmetic results are
 * NaN-canonicalised (0x7FC00000) before any rounding to bf16,
 * transcendentals are the double libm functions rounded once,
 * maximum/minimum return the canonical NaN and prefer +0 / -0 between
 * zeros, floor/ceil/round-* pass a NaN through with its bits, and
 * s32 -> bf16 rounds twice (to f32, then to bf16). f16 ops compute in
 * f32 the same way and round once to f16, as the evaluator does. */
#include "backend/llvm/lower.h"

#include <math.h>

LLVMValueRef llvm_i64(emitter *e, int64_t v) {
  return LLVMConstInt(e->t_i64, (unsigned long long)v, 1);
}

LLVMTypeRef llvm_ctype(emitter *e, ir_type t) {
  switch (t) {
  case IR_PRED: return e->t_i1;
  case IR_S8: case IR_U8: return e->t_i8;
  case IR_S16: case IR_U16: return e->t_i16;
  case IR_S32: case IR_U32: return e->t_i32;
  case IR_S64: case IR_U64: return e->t_i64;
  case IR_F64: return e->t_f64;
  default: return e->t_f32;
  }
}

LLVMTypeRef llvm_stype(emitter *e, ir_type t) {
  switch (t) {
  case IR_PRED: return e->t_i8;
  case IR_BF16: case IR_F16: return e->t_i16;
  default: return llvm_ctype(e, t);
  }
}

static int int_bits(ir_type t) { return t == IR_PRED ? 1 : ir_type_size(t) * 8; }

void llvm_int_range(ir_type t, int64_t *lo, int64_t *hi) {
  int bits = int_bits(t);
  if (ir_type_is_unsigned(t) || t == IR_PRED) {
    *lo = 0;
    *hi = bits == 64 ? -1 : (int64_t)(((uint64_t)1 << bits) - 1);
  } else {
    *hi = bits == 64 ? INT64_MAX : (int64_t)(((uint64_t)1 << (bits - 1)) - 1);
    *lo = -*hi - 1;
  }
}

LLVMValueRef llvm_zero(emitter *e, ir_type t) {
  return LLVMConstNull(llvm_ctype(e, t));
}

static LLVMValueRef ci(LLVMTypeRef t, int64_t v) {
  return LLVMConstInt(t, (unsigned long long)v, 1);
}

LLVMValueRef llvm_from_bits(emitter *e, ir_type t, LLVMValueRef v) {
  LLVMBuilderRef b = e->b;
  switch (t) {
  case IR_PRED: return LLVMBuildICmp(b, LLVMIntNE, v, ci(e->t_i8, 0), "");
  case IR_BF16: {
    LLVMValueRef w = LLVMBuildZExt(b, v, e->t_i32, "");
    w = LLVMBuildShl(b, w, ci(e->t_i32, 16), "");
    return LLVMBuildBitCast(b, w, e->t_f32, "");
  }
  case IR_F16: {
    LLVMValueRef h = LLVMBuildBitCast(b, v, e->t_f16, "");
    return LLVMBuildFPExt(b, h, e->t_f32, "");
  }
  default: return v;
  }
}

/* f32 -> bf16 bits, nearest even; NaN keeps its top bits and is quieted
 * (ir_f32_to_bf16). With keep_exact, a value already exact in bf16 (low
 * 16 bits zero) keeps its bits, a signalling NaN too. */
static LLVMValueRef f32_to_bf16_bits(emitter *e, LLVMValueRef v, bool keep_exact) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef u = LLVMBuildBitCast(b, v, e->t_i32, "");
  LLVMValueRef absu = LLVMBuildAnd(b, u, ci(e->t_i32, 0x7fffffff), "");
  LLVMValueRef isnan = LLVMBuildICmp(b, LLVMIntUGT, absu, ci(e->t_i32, 0x7f800000), "");
  LLVMValueRef hi = LLVMBuildLShr(b, u, ci(e->t_i32, 16), "");
  LLVMValueRef qnan = LLVMBuildOr(b, hi, ci(e->t_i32, 0x40), "");
  LLVMValueRef lsb = LLVMBuildAnd(b, hi, ci(e->t_i32, 1), "");
  LLVMValueRef r = LLVMBuildAdd(b, u, LLVMBuildAdd(b, lsb, ci(e->t_i32, 0x7fff), ""), "");
  r = LLVMBuildLShr(b, r, ci(e->t_i32, 16), "");
  r = LLVMBuildSelect(b, isnan, qnan, r, "");
  if (keep_exact)
    r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildAnd(b, u, ci(e->t_i32, 0xffff), ""), ci(e->t_i32, 0), ""),
                        hi, r, "");
  return LLVMBuildTrunc(b, r, e->t_i16, "");
}

/* Under TPU numerics a bf16 value in flight (always exact in bf16) is
 * stored with its bits, as the evaluator and the emulator move a signalling
 * NaN; results are quieted by llvm_round when they are rounded. */
LLVMValueRef llvm_to_bits(emitter *e, ir_type t, LLVMValueRef v) {
  LLVMBuilderRef b = e->b;
  switch (t) {
  case IR_PRED: return LLVMBuildZExt(b, v, e->t_i8, "");
  case IR_BF16: return f32_to_bf16_bits(e, v, e->opt.numerics == CPU_NUMERICS_TPU);
  case IR_F16: {
    LLVMValueRef h = LLVMBuildFPTrunc(b, v, e->t_f16, "");
    return LLVMBuildBitCast(b, h, e->t_i16, "");
  }
  default: return v;
  }
}

LLVMValueRef llvm_round(emitter *e, ir_type t, LLVMValueRef v) {
  if (t == IR_BF16) return llvm_from_bits(e, t, f32_to_bf16_bits(e, v, false));
  if (t != IR_F16) return v;
  return llvm_from_bits(e, t, llvm_to_bits(e, t, v));
}

static LLVMValueRef elem_ptr(emitter *e, ir_type t, LLVMValueRef base, LLVMValueRef lin) {
  LLVMTypeRef st = llvm_stype(e, t);
  LLVMValueRef p = LLVMBuildPointerCast(e->b, base, LLVMPointerType(st, 0), "");
  return LLVMBuildInBoundsGEP2(e->b, st, p, &lin, 1, "");
}

LLVMValueRef llvm_load(emitter *e, ir_type t, LLVMValueRef base, LLVMValueRef lin) {
  LLVMTypeRef st = llvm_stype(e, t);
  LLVMValueRef v = LLVMBuildLoad2(e->b, st, elem_ptr(e, t, base, lin), "");
  LLVMSetAlignment(v, (unsigned)ir_type_size(t));
  return llvm_from_bits(e, t, v);
}

void llvm_store(emitter *e, ir_type t, LLVMValueRef base, LLVMValueRef lin, LLVMValueRef v) {
  LLVMValueRef s = LLVMBuildStore(e->b, llvm_to_bits(e, t, v), elem_ptr(e, t, base, lin));
  LLVMSetAlignment(s, (unsigned)ir_type_size(t));
}

LLVMValueRef llvm_const_elem(emitter *e, const ir_literal *l, int64_t i) {
  ir_type t = l->shape.type;
  switch (t) {
  case IR_PRED: return ci(e->t_i1, ir_literal_get_i64(l, i) ? 1 : 0);
  case IR_F64: {
    uint64_t u;
    memcpy(&u, (const char *)l->data + 8 * i, 8);
    return LLVMConstBitCast(LLVMConstInt(e->t_i64, u, 0), e->t_f64);
  }
  case IR_F32: {
    /* Through the bits, so NaN payloads and -0 survive. */
    uint32_t u;
    memcpy(&u, (const char *)l->data + 4 * i, 4);
    return LLVMConstBitCast(ci(e->t_i32, (int32_t)u), e->t_f32);
  }
  case IR_BF16:
  case IR_F16: {
    float f = (float)ir_literal_get_f64(l, i);
    uint32_t u;
    memcpy(&u, &f, 4);
    return LLVMConstBitCast(ci(e->t_i32, (int32_t)u), e->t_f32);
  }
  default: return ci(llvm_ctype(e, t), ir_literal_get_i64(l, i)); /* the integers */
  }
}

LLVMValueRef llvm_call_intrinsic(emitter *e, const char *name, LLVMTypeRef t,
                                 LLVMValueRef *args, int nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  BASE_ASSERT(id != 0);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(e->mod, id, &t, 1);
  LLVMTypeRef ft = LLVMIntrinsicGetType(e->ctx, id, &t, 1);
  return LLVMBuildCall2(e->b, ft, fn, args, (unsigned)nargs, "");
}

/* A call to a libm float function. Except under NATIVE numerics the call
 * is nobuiltin: LLVM neither folds it on constants with its own arithmetic
 * nor replaces it by an intrinsic, so the result is the host libm's, the
 * function the evaluator calls (ir/eval_scalar.c). */
static LLVMValueRef libm(emitter *e, const char *name, LLVMValueRef *args, int nargs) {
  LLVMTypeRef at = LLVMTypeOf(args[0]), ps[2] = {at, at};
  LLVMTypeRef ft = LLVMFunctionType(at, ps, (unsigned)nargs, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(e->mod, name);
  if (!fn) {
    fn = LLVMAddFunction(e->mod, name, ft);
    const char *attrs[] = {"nounwind", "willreturn"};
    for (unsigned i = 0; i < COUNTOF(attrs); i++) {
      unsigned k = LLVMGetEnumAttributeKindForName(attrs[i], strlen(attrs[i]));
      LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(e->ctx, k, 0));
    }
  }
  LLVMValueRef call = LLVMBuildCall2(e->b, ft, fn, args, (unsigned)nargs, "");
  if (e->opt.numerics != CPU_NUMERICS_NATIVE) {
    unsigned k = LLVMGetEnumAttributeKindForName("nobuiltin", strlen("nobuiltin"));
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(e->ctx, k, 0));
  }
  return call;
}

/* A constant of the float compute type of t (f32 or double). */
static LLVMValueRef tconst(emitter *e, ir_type t, double v) {
  return LLVMConstReal(llvm_ctype(e, t), v);
}

/* The vector unit's transcendentals (base/vmath.c, TPU numerics): the
 * double libm function `dname` of the exactly widened f32 arguments,
 * rounded once to f32. LLVM keeps the double call: shrinking it to the
 * float function is only allowed under fast-math flags, which are never
 * set here. */
static LLVMValueRef libm_f64(emitter *e, const char *dname, LLVMValueRef *args, int nargs) {
  LLVMTypeRef t64 = LLVMDoubleTypeInContext(e->ctx), ps[2] = {t64, t64};
  LLVMTypeRef ft = LLVMFunctionType(t64, ps, (unsigned)nargs, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(e->mod, dname);
  if (!fn) fn = LLVMAddFunction(e->mod, dname, ft);
  LLVMValueRef w[2];
  for (int i = 0; i < nargs; i++) w[i] = LLVMBuildFPExt(e->b, args[i], t64, "");
  return LLVMBuildCall2(e->b, ft, fn, w, (unsigned)nargs, "");
}

/* Whether ops on type t follow the vector unit (TPU numerics, f32/bf16/f16). */
static bool vec_unit(emitter *e, ir_type t) {
  return e->opt.numerics == CPU_NUMERICS_TPU && (t == IR_F32 || t == IR_BF16 || t == IR_F16);
}

/* Whether ops on type t must give the evaluator's default bits, NaNs
 * included: STRICT, and TPU numerics outside the vector unit (f64). */
static bool evaluator_bits(emitter *e, ir_type t) {
  return e->opt.numerics == CPU_NUMERICS_STRICT || (e->opt.numerics == CPU_NUMERICS_TPU && !vec_unit(e, t));
}

/* The vector unit's vmath_bits: a NaN becomes 0x7FC00000. */
LLVMValueRef llvm_canon_nan(emitter *e, LLVMValueRef v) {
  LLVMValueRef nan = LLVMBuildFCmp(e->b, LLVMRealUNO, v, v, "");
  LLVMValueRef c = LLVMConstBitCast(ci(e->t_i32, VMATH_CANON_NAN), e->t_f32);
  return LLVMBuildSelect(e->b, nan, c, v, "");
}

/* libm function `fname` ("expf") of f32 arguments: the float function,
 * or with vu (the vector unit's numerics) its double one ("exp"); of f64
 * arguments the double one. */
static LLVMValueRef transc(emitter *e, bool vu, const char *fname, LLVMValueRef *args, int nargs) {
  bool f64 = LLVMTypeOf(args[0]) == e->t_f64;
  if (!vu && !f64) return libm(e, fname, args, nargs);
  char dname[16];
  size_t n = strlen(fname);
  BASE_ASSERT(n > 1 && n < sizeof dname && fname[n - 1] == 'f');
  memcpy(dname, fname, n - 1);
  dname[n - 1] = 0;
  if (f64) return libm(e, dname, args, nargs);
  return LLVMBuildFPTrunc(e->b, libm_f64(e, dname, args, nargs), e->t_f32, "");
}

static LLVMValueRef isnan_f(emitter *e, LLVMValueRef x) {
  return LLVMBuildFCmp(e->b, LLVMRealUNO, x, x, "");
}

/* Integer power by squaring; negative exponents give 0 except for bases
 * 1 and -1 (as XLA). */
static LLVMValueRef ipow(emitter *e, ir_type t, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = e->b;
  LLVMTypeRef ty = llvm_ctype(e, t);
  int bits = int_bits(t);
  LLVMValueRef r = ci(ty, 1), base = x, ex = y;
  for (int i = 0; i < bits; i++) {
    LLVMValueRef bit = LLVMBuildTrunc(b, ex, e->t_i1, "");
    r = LLVMBuildSelect(b, bit, LLVMBuildMul(b, r, base, ""), r, "");
    base = LLVMBuildMul(b, base, base, "");
    ex = LLVMBuildLShr(b, ex, ci(ty, 1), "");
  }
  if (ir_type_is_unsigned(t)) return r; /* no negative exponents */
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, y, ci(ty, 0), "");
  LLVMValueRef odd = LLVMBuildTrunc(b, y, e->t_i1, "");
  LLVMValueRef is1 = LLVMBuildICmp(b, LLVMIntEQ, x, ci(ty, 1), "");
  LLVMValueRef ism1 = LLVMBuildICmp(b, LLVMIntEQ, x, ci(ty, -1), "");
  LLVMValueRef negr = LLVMBuildSelect(b, is1, ci(ty, 1),
      LLVMBuildSelect(b, ism1, LLVMBuildSelect(b, odd, ci(ty, -1), ci(ty, 1), ""), ci(ty, 0), ""), "");
  return LLVMBuildSelect(b, neg, negr, r, "");
}

LLVMValueRef llvm_unary(emitter *e, ir_op op, ir_type t, LLVMValueRef x) {
  LLVMBuilderRef b = e->b;
  /* tan ... erf have no vector-unit sequence: the evaluator's default
   * semantics under every numerics */
  bool fl = ir_type_is_float(t), vu = vec_unit(e, t) && !(op >= IR_OP_TAN && op <= IR_OP_ERF);
  LLVMTypeRef ty = llvm_ctype(e, t);
  LLVMValueRef r = NULL, a[1] = {x};
  switch (op) {
  case IR_OP_ABS:
    if (fl) r = llvm_call_intrinsic(e, "llvm.fabs", ty, a, 1);
    else if (t == IR_PRED || ir_type_is_unsigned(t)) r = x;
    else r = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, x, ci(ty, 0), ""),
                             LLVMBuildNeg(b, x, ""), x, "");
    break;
  case IR_OP_NEGATE:
    r = fl ? LLVMBuildFNeg(b, x, "") : t == IR_PRED ? x : LLVMBuildNeg(b, x, "");
    break;
  case IR_OP_EXP: r = transc(e, vu, "expf", a, 1); break;
  case IR_OP_EXPM1: r = transc(e, vu, "expm1f", a, 1); break;
  case IR_OP_LOG: r = transc(e, vu, "logf", a, 1); break;
  case IR_OP_LOG1P: r = transc(e, vu, "log1pf", a, 1); break;
  case IR_OP_SQRT: r = llvm_call_intrinsic(e, "llvm.sqrt", ty, a, 1); break;
  case IR_OP_RSQRT:
    if (vu) { /* 1 / sqrt in double, rounded once */
      LLVMTypeRef t64 = LLVMDoubleTypeInContext(e->ctx);
      LLVMValueRef w[1] = {LLVMBuildFPExt(b, x, t64, "")};
      r = LLVMBuildFPTrunc(b, LLVMBuildFDiv(b, LLVMConstReal(t64, 1.0),
                                            llvm_call_intrinsic(e, "llvm.sqrt", t64, w, 1), ""),
                           e->t_f32, "");
    } else {
      r = LLVMBuildFDiv(b, tconst(e, t, 1.0), llvm_call_intrinsic(e, "llvm.sqrt", ty, a, 1), "");
    }
    break;
  case IR_OP_CBRT: r = transc(e, vu, "cbrtf", a, 1); break;
  case IR_OP_TANH: r = transc(e, vu, "tanhf", a, 1); break;
  case IR_OP_LOGISTIC: {
    LLVMValueRef n[1] = {LLVMBuildFNeg(b, x, "")};
    if (vu) { /* 1 / (1 + exp(-x)) in double, rounded once */
      LLVMTypeRef t64 = LLVMDoubleTypeInContext(e->ctx);
      LLVMValueRef one = LLVMConstReal(t64, 1.0);
      r = LLVMBuildFPTrunc(
          b, LLVMBuildFDiv(b, one, LLVMBuildFAdd(b, one, libm_f64(e, "exp", n, 1), ""), ""),
          e->t_f32, "");
    } else {
      r = LLVMBuildFDiv(b, tconst(e, t, 1.0),
                        LLVMBuildFAdd(b, tconst(e, t, 1.0), transc(e, false, "expf", n, 1), ""), "");
    }
    break;
  }
  case IR_OP_SINE: r = transc(e, vu, "sinf", a, 1); break;
  case IR_OP_COSINE: r = transc(e, vu, "cosf", a, 1); break;
  case IR_OP_TAN: case IR_OP_ACOS: case IR_OP_ACOSH: case IR_OP_ASIN: case IR_OP_ASINH:
  case IR_OP_ATAN: case IR_OP_ATANH: case IR_OP_SINH: case IR_OP_COSH: case IR_OP_ERF: {
    static const char *const fn[] = {"tanf",  "acosf",  "acoshf", "asinf", "asinhf",
                                     "atanf", "atanhf", "sinhf",  "coshf", "erff"};
    r = transc(e, vu, fn[op - IR_OP_TAN], a, 1);
    break;
  }
  case IR_OP_FLOOR:
  case IR_OP_CEIL:
  case IR_OP_ROUND_AFZ:
  case IR_OP_ROUND_EVEN: {
    static const char *const fn[] = {"llvm.floor", "llvm.ceil", "llvm.round", "llvm.roundeven"};
    if (evaluator_bits(e, t) && op == IR_OP_ROUND_AFZ) {
      r = transc(e, false, "roundf", a, 1); /* the evaluator's call: it quiets a NaN */
      break;
    }
    r = llvm_call_intrinsic(e, fn[op - IR_OP_FLOOR], ty, a, 1);
    /* A NaN is returned unchanged (a signalling one too), the values are
     * IEEE's otherwise: the vector unit (ir/eval_tpu.c: rounding), and
     * otherwise under STRICT and TPU numerics the evaluator's floorf and
     * ceilf, which the C compiler expands inline (magnitudes of 2^23 and
     * up returned as they are), and its round-half-even. */
    if (vu || evaluator_bits(e, t))
      return llvm_round(e, t, LLVMBuildSelect(b, isnan_f(e, x), x, r, ""));
    break;
  }
  case IR_OP_SIGN:
    if (fl) {
      LLVMValueRef one[2] = {tconst(e, t, 1.0), x};
      LLVMValueRef s = llvm_call_intrinsic(e, "llvm.copysign", ty, one, 2);
      LLVMValueRef z = LLVMBuildFCmp(b, LLVMRealOEQ, x, tconst(e, t, 0.0), "");
      r = LLVMBuildSelect(b, LLVMBuildOr(b, z, isnan_f(e, x), ""), x, s, "");
    } else if (t == IR_PRED) {
      r = x;
    } else if (ir_type_is_unsigned(t)) {
      r = LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntNE, x, ci(ty, 0), ""), ty, "");
    } else {
      LLVMValueRef gt = LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntSGT, x, ci(ty, 0), ""), ty, "");
      LLVMValueRef lt = LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntSLT, x, ci(ty, 0), ""), ty, "");
      r = LLVMBuildSub(b, gt, lt, "");
    }
    break;
  case IR_OP_IS_FINITE: {
    LLVMTypeRef xt = LLVMTypeOf(x); /* t may name the pred result */
    LLVMValueRef ab = llvm_call_intrinsic(e, "llvm.fabs", xt, a, 1);
    return LLVMBuildFCmp(b, LLVMRealOLT, ab, LLVMConstReal(xt, 1.0 / 0.0), "");
  }
  case IR_OP_NOT: return LLVMBuildNot(b, x, "");
  case IR_OP_POPCNT: return llvm_call_intrinsic(e, "llvm.ctpop", ty, a, 1);
  case IR_OP_CLZ: {
    LLVMValueRef args[2] = {x, ci(e->t_i1, 0)};
    return llvm_call_intrinsic(e, "llvm.ctlz", ty, args, 2);
  }
  default: base_die("llvm_unary: %s", ir_op_name(op));
  }
  /* abs, negate and sign move bits; the others are arithmetic. */
  if (vu && op != IR_OP_ABS && op != IR_OP_NEGATE && op != IR_OP_SIGN) r = llvm_canon_nan(e, r);
  return fl ? llvm_round(e, t, r) : r;
}

/* The vector unit's vmath_fmax / vmath_fmin on f32 values: the canonical
 * NaN if either is NaN; between equal values the AND (max: +0 wins) or OR
 * (min: -0 wins) of the bits; otherwise the larger / smaller. */
static LLVMValueRef vec_maxmin(emitter *e, bool max, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef xb = LLVMBuildBitCast(b, x, e->t_i32, ""), yb = LLVMBuildBitCast(b, y, e->t_i32, "");
  LLVMValueRef eq = max ? LLVMBuildAnd(b, xb, yb, "") : LLVMBuildOr(b, xb, yb, "");
  LLVMValueRef pick = LLVMBuildFCmp(b, max ? LLVMRealOGT : LLVMRealOLT, x, y, "");
  LLVMValueRef r = LLVMBuildSelect(b, pick, xb, yb, "");
  r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, y, ""), eq, r, "");
  r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, y, ""), ci(e->t_i32, VMATH_CANON_NAN), r, "");
  return LLVMBuildBitCast(b, r, e->t_f32, "");
}

/* The NaN the evaluator gets from `x op y` (and fmodf) on the host: the
 * first NaN operand, quieted (x86), else the host's default NaN when r is
 * a NaN (an invalid operation: inf - inf, 0 * inf, 0 / 0, fmod(inf, y));
 * r otherwise. LLVM may commute fadd and fmul, turn x - y into x + -y
 * (which flips a NaN y's sign) and fold an invalid operation of constants
 * to +NaN, so the NaN is chosen here. */
static LLVMValueRef strict_nan(emitter *e, LLVMValueRef x, LLVMValueRef y, LLVMValueRef r) {
  LLVMBuilderRef b = e->b;
  volatile double inf = INFINITY;
  double dflt = inf - inf; /* computed on the host at run time, never folded */
  LLVMValueRef nan;
  if (LLVMTypeOf(r) == e->t_f64) {
    uint64_t u;
    memcpy(&u, &dflt, 8);
    nan = LLVMConstBitCast(LLVMConstInt(e->t_i64, u, 0), e->t_f64);
  } else {
    float f = (float)dflt;
    uint32_t u;
    memcpy(&u, &f, 4);
    nan = LLVMConstBitCast(ci(e->t_i32, (int32_t)u), e->t_f32);
  }
  r = LLVMBuildSelect(b, isnan_f(e, r), nan, r, "");
  return LLVMBuildSelect(b, isnan_f(e, x), LLVMBuildFAdd(b, x, x, ""),
                         LLVMBuildSelect(b, isnan_f(e, y), LLVMBuildFAdd(b, y, y, ""), r, ""), "");
}

/* Float max/min: NaN in either operand gives NaN (the first NaN). */
static LLVMValueRef fmaxmin(emitter *e, bool max, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = e->b;
  /* max = x < y ? y : x, min = y < x ? y : x: the first operand wins ties
   * (max(-0, +0) = -0), as the evaluator. */
  LLVMValueRef c = max ? LLVMBuildFCmp(b, LLVMRealOLT, x, y, "") : LLVMBuildFCmp(b, LLVMRealOLT, y, x, "");
  LLVMValueRef r = LLVMBuildSelect(b, c, y, x, "");
  r = LLVMBuildSelect(b, isnan_f(e, y), y, r, "");
  return LLVMBuildSelect(b, isnan_f(e, x), x, r, "");
}

LLVMValueRef llvm_binary(emitter *e, ir_op op, ir_type t, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = e->b;
  bool fl = ir_type_is_float(t), vu = vec_unit(e, t);
  LLVMTypeRef ty = llvm_ctype(e, t);
  int bits = int_bits(t);
  LLVMValueRef r = NULL, a[2] = {x, y};
  if (t == IR_PRED) {
    switch (op) {
    case IR_OP_ADD: case IR_OP_OR: case IR_OP_MAXIMUM: return LLVMBuildOr(b, x, y, "");
    case IR_OP_MULTIPLY: case IR_OP_AND: case IR_OP_MINIMUM: return LLVMBuildAnd(b, x, y, "");
    case IR_OP_SUBTRACT: case IR_OP_XOR: return LLVMBuildXor(b, x, y, "");
    default: break;
    }
  }
  switch (op) {
  case IR_OP_ADD: r = fl ? LLVMBuildFAdd(b, x, y, "") : LLVMBuildAdd(b, x, y, ""); break;
  case IR_OP_SUBTRACT: r = fl ? LLVMBuildFSub(b, x, y, "") : LLVMBuildSub(b, x, y, ""); break;
  case IR_OP_MULTIPLY: r = fl ? LLVMBuildFMul(b, x, y, "") : LLVMBuildMul(b, x, y, ""); break;
  case IR_OP_DIVIDE:
  case IR_OP_REMAINDER:
    if (fl) {
      r = op == IR_OP_DIVIDE ? LLVMBuildFDiv(b, x, y, "") : LLVMBuildFRem(b, x, y, "");
    } else if (t == IR_PRED) { /* x/0 = -1 wraps to 1; x%0 = x; x/1 = x; x%1 = 0 */
      LLVMValueRef ny = LLVMBuildNot(b, y, "");
      r = op == IR_OP_DIVIDE ? LLVMBuildOr(b, x, ny, "") : LLVMBuildAnd(b, x, ny, "");
    } else if (ir_type_is_unsigned(t)) {
      LLVMValueRef z = LLVMBuildICmp(b, LLVMIntEQ, y, ci(ty, 0), "");
      LLVMValueRef sy = LLVMBuildSelect(b, z, ci(ty, 1), y, "");
      if (op == IR_OP_DIVIDE)
        r = LLVMBuildSelect(b, z, ci(ty, -1), LLVMBuildUDiv(b, x, sy, ""), "");
      else
        r = LLVMBuildSelect(b, z, x, LLVMBuildURem(b, x, sy, ""), "");
    } else {
      int64_t lo, hi;
      llvm_int_range(t, &lo, &hi);
      LLVMValueRef z = LLVMBuildICmp(b, LLVMIntEQ, y, ci(ty, 0), "");
      LLVMValueRef ov = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, x, ci(ty, lo), ""),
                                     LLVMBuildICmp(b, LLVMIntEQ, y, ci(ty, -1), ""), "");
      LLVMValueRef sy = LLVMBuildSelect(b, LLVMBuildOr(b, z, ov, ""), ci(ty, 1), y, "");
      if (op == IR_OP_DIVIDE)
        r = LLVMBuildSelect(b, z, ci(ty, -1), LLVMBuildSDiv(b, x, sy, ""), "");
      else
        r = LLVMBuildSelect(b, z, x, LLVMBuildSRem(b, x, sy, ""), "");
    }
    break;
  case IR_OP_MAXIMUM:
  case IR_OP_MINIMUM:
    if (vu) r = vec_maxmin(e, op == IR_OP_MAXIMUM, x, y);
    else if (fl) r = fmaxmin(e, op == IR_OP_MAXIMUM, x, y);
    else {
      bool u = ir_type_is_unsigned(t);
      LLVMIntPredicate p = op == IR_OP_MAXIMUM ? (u ? LLVMIntUGT : LLVMIntSGT) : (u ? LLVMIntULT : LLVMIntSLT);
      r = LLVMBuildSelect(b, LLVMBuildICmp(b, p, x, y, ""), x, y, "");
    }
    break;
  case IR_OP_POWER:
    if (fl) r = transc(e, vu, "powf", a, 2);
    else if (t == IR_PRED) r = LLVMBuildOr(b, x, LLVMBuildNot(b, y, ""), "");
    else r = ipow(e, t, x, y);
    break;
  case IR_OP_ATAN2: r = transc(e, vu, "atan2f", a, 2); break;
  case IR_OP_AND: return LLVMBuildAnd(b, x, y, "");
  case IR_OP_OR: return LLVMBuildOr(b, x, y, "");
  case IR_OP_XOR: return LLVMBuildXor(b, x, y, "");
  case IR_OP_SHL:
  case IR_OP_SHR_A:
  case IR_OP_SHR_L: {
    LLVMValueRef big = LLVMBuildICmp(b, LLVMIntUGE, y, ci(ty, bits), "");
    LLVMValueRef sy = LLVMBuildSelect(b, big, ci(ty, bits - 1), y, "");
    if (op == IR_OP_SHL)
      r = LLVMBuildSelect(b, big, ci(ty, 0), LLVMBuildShl(b, x, sy, ""), "");
    else if (op == IR_OP_SHR_L)
      r = LLVMBuildSelect(b, big, ci(ty, 0), LLVMBuildLShr(b, x, sy, ""), "");
    else
      r = LLVMBuildAShr(b, x, sy, "");
    return r;
  }
  default: base_die("llvm_binary: %s", ir_op_name(op));
  }
  if (fl && evaluator_bits(e, t) &&
      (op == IR_OP_ADD || op == IR_OP_SUBTRACT || op == IR_OP_MULTIPLY || op == IR_OP_DIVIDE ||
       op == IR_OP_REMAINDER))
    r = strict_nan(e, x, y, r);
  if (vu && op != IR_OP_MAXIMUM && op != IR_OP_MINIMUM) r = llvm_canon_nan(e, r); /* arithmetic */
  return fl ? llvm_round(e, t, r) : r;
}

/* clamp(lo, x, hi). Floats: under the vector unit's numerics
 * min(max(x, lo), hi) with its maximum/minimum; otherwise the evaluator's
 * rule: the first NaN of lo, x, hi, else x raised to lo when x < lo, then
 * lowered to hi when hi < that (ties keep x). Integers: min(max(x, lo), hi). */
LLVMValueRef llvm_clamp(emitter *e, ir_type t, LLVMValueRef lo, LLVMValueRef x, LLVMValueRef hi) {
  LLVMBuilderRef b = e->b;
  if (!ir_type_is_float(t) || vec_unit(e, t))
    return llvm_binary(e, IR_OP_MINIMUM, t, llvm_binary(e, IR_OP_MAXIMUM, t, x, lo), hi);
  LLVMValueRef m = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, x, lo, ""), lo, x, "");
  LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, hi, m, ""), hi, m, "");
  r = LLVMBuildSelect(b, isnan_f(e, hi), hi, r, "");
  r = LLVMBuildSelect(b, isnan_f(e, x), x, r, "");
  return LLVMBuildSelect(b, isnan_f(e, lo), lo, r, ""); /* r is an input: no rounding */
}

/* Total order on floats: -NaN < -inf < ... < -0 < +0 < ... < inf < NaN,
 * as signed integers after flipping the magnitude bits of negatives. */
static LLVMValueRef total_key(emitter *e, LLVMValueRef x) {
  LLVMBuilderRef b = e->b;
  bool f64 = LLVMTypeOf(x) == e->t_f64;
  LLVMTypeRef it = f64 ? e->t_i64 : e->t_i32;
  LLVMValueRef u = LLVMBuildBitCast(b, x, it, "");
  LLVMValueRef m = LLVMBuildAShr(b, u, ci(it, f64 ? 63 : 31), "");
  m = LLVMBuildLShr(b, m, ci(it, 1), "");
  return LLVMBuildXor(b, u, m, "");
}

LLVMValueRef llvm_compare(emitter *e, const ir_attrs *at, ir_type t, LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = e->b;
  static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
                                         LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
  static const LLVMIntPredicate sp[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT,
                                        LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
  static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT,
                                        LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
  int d = (int)at->cmp_dir;
  if (ir_type_is_float(t)) {
    if (at->cmp_type == IR_CMPT_TOTALORDER)
      return LLVMBuildICmp(b, sp[d], total_key(e, x), total_key(e, y), "");
    return LLVMBuildFCmp(b, fp[d], x, y, "");
  }
  if (t == IR_PRED || at->cmp_type == IR_CMPT_UNSIGNED || ir_type_is_unsigned(t))
    return LLVMBuildICmp(b, up[d], x, y, "");
  return LLVMBuildICmp(b, sp[d], x, y, "");
}

/* float -> integer: NaN -> 0, saturating, toward zero (LLVM's
 * fptosi.sat / fptoui.sat are exactly that). */
static LLVMValueRef f2i(emitter *e, ir_type to, LLVMValueRef x) {
  const char *name = ir_type_is_unsigned(to) ? "llvm.fptoui.sat" : "llvm.fptosi.sat";
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  BASE_ASSERT(id != 0);
  LLVMTypeRef ts[2] = {llvm_ctype(e, to), LLVMTypeOf(x)};
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(e->mod, id, ts, 2);
  LLVMTypeRef ft = LLVMIntrinsicGetType(e->ctx, id, ts, 2);
  return LLVMBuildCall2(e->b, ft, fn, &x, 1, "");
}

/* An integer of type `from` (32 or 64 bits) to f32 rounded to odd: the
 * top 24 significant bits of its magnitude, any dropped bit ORed into the
 * last one kept, scaled back exactly (the evaluator's
 * u64_to_f32_round_odd), so that rounding it to bf16/f16 is the correctly
 * rounded result. */
static LLVMValueRef int_to_f32_odd(emitter *e, ir_type from, LLVMValueRef x) {
  LLVMBuilderRef b = e->b;
  LLVMTypeRef i64 = e->t_i64;
  bool uns = ir_type_is_unsigned(from);
  LLVMValueRef v = uns ? LLVMBuildZExt(b, x, i64, "") : LLVMBuildSExt(b, x, i64, "");
  if (LLVMTypeOf(x) == i64) v = x;
  LLVMValueRef neg = uns ? ci(e->t_i1, 0) : LLVMBuildICmp(b, LLVMIntSLT, v, llvm_i64(e, 0), "");
  LLVMValueRef mag = LLVMBuildSelect(b, neg, LLVMBuildNeg(b, v, ""), v, "");
  LLVMValueRef args[2] = {mag, ci(e->t_i1, 0)};
  LLVMValueRef lz = llvm_call_intrinsic(e, "llvm.ctlz", i64, args, 2);
  /* drop = max(0, 40 - lz) low bits */
  LLVMValueRef drop = LLVMBuildSub(b, llvm_i64(e, 40), lz, "");
  drop = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, drop, llvm_i64(e, 0), ""), llvm_i64(e, 0),
                         drop, "");
  LLVMValueRef kept = LLVMBuildLShr(b, mag, drop, "");
  LLVMValueRef low = LLVMBuildAnd(b, mag, LLVMBuildSub(b, LLVMBuildShl(b, llvm_i64(e, 1), drop, ""),
                                                        llvm_i64(e, 1), ""), "");
  LLVMValueRef sticky = LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntNE, low, llvm_i64(e, 0), ""), i64, "");
  LLVMValueRef f = LLVMBuildUIToFP(b, LLVMBuildOr(b, kept, sticky, ""), e->t_f32, "");
  /* times 2^drop (drop <= 40): an f32 power of two built from its bits */
  LLVMValueRef pw = LLVMBuildShl(b, LLVMBuildTrunc(b, LLVMBuildAdd(b, drop, llvm_i64(e, 127), ""),
                                                   e->t_i32, ""), ci(e->t_i32, 23), "");
  f = LLVMBuildFMul(b, f, LLVMBuildBitCast(b, pw, e->t_f32, ""), "");
  return LLVMBuildSelect(b, neg, LLVMBuildFNeg(b, f, ""), f, "");
}

/* An f64 to f32 rounded to odd: truncated toward zero (beyond the f32
 * range: the largest finite f32), the last bit set when inexact. */
static LLVMValueRef f64_to_f32_odd(emitter *e, LLVMValueRef d) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef f = LLVMBuildFPTrunc(b, d, e->t_f32, "");
  LLVMValueRef back = LLVMBuildFPExt(b, f, e->t_f64, "");
  LLVMValueRef inexact = LLVMBuildFCmp(b, LLVMRealONE, back, d, ""); /* false for NaN */
  LLVMValueRef fabs_args[1] = {back}, dabs_args[1] = {d};
  LLVMValueRef away = LLVMBuildFCmp(b, LLVMRealOGT,
                                    llvm_call_intrinsic(e, "llvm.fabs", e->t_f64, fabs_args, 1),
                                    llvm_call_intrinsic(e, "llvm.fabs", e->t_f64, dabs_args, 1), "");
  LLVMValueRef u = LLVMBuildBitCast(b, f, e->t_i32, "");
  u = LLVMBuildSelect(b, LLVMBuildAnd(b, inexact, away, ""), LLVMBuildSub(b, u, ci(e->t_i32, 1), ""),
                      u, "");
  u = LLVMBuildSelect(b, inexact, LLVMBuildOr(b, u, ci(e->t_i32, 1), ""), u, "");
  return LLVMBuildBitCast(b, u, e->t_f32, "");
}

/* s32 -> bf16/f16 must round once: f = (float)v rounded to odd (truncate,
 * then set the last bit when inexact) rounds correctly to the narrower
 * type afterwards. f is (float)v rounded to nearest. */
static LLVMValueRef round_odd_fixup(emitter *e, LLVMValueRef v, LLVMValueRef f) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef v64 = LLVMBuildSExt(b, v, e->t_i64, "");
  LLVMValueRef back = LLVMBuildFPToSI(b, f, e->t_i64, "");
  LLVMValueRef inexact = LLVMBuildICmp(b, LLVMIntNE, back, v64, "");
  LLVMValueRef away = LLVMBuildOr(b,
      LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGT, v64, llvm_i64(e, 0), ""),
                   LLVMBuildICmp(b, LLVMIntSGT, back, v64, ""), ""),
      LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSLT, v64, llvm_i64(e, 0), ""),
                   LLVMBuildICmp(b, LLVMIntSLT, back, v64, ""), ""), "");
  LLVMValueRef u = LLVMBuildBitCast(b, f, e->t_i32, "");
  u = LLVMBuildSelect(b, away, LLVMBuildSub(b, u, ci(e->t_i32, 1), ""), u, "");
  u = LLVMBuildSelect(b, inexact, LLVMBuildOr(b, u, ci(e->t_i32, 1), ""), u, "");
  return LLVMBuildBitCast(b, u, e->t_f32, "");
}

LLVMValueRef llvm_convert(emitter *e, ir_type from, ir_type to, LLVMValueRef x) {
  LLVMBuilderRef b = e->b;
  bool ff = ir_type_is_float(from), tf = ir_type_is_float(to);
  LLVMTypeRef ty = llvm_ctype(e, to);
  /* bf16 -> bf16 rounds to bf16 as the evaluator does (ir_f32_to_bf16),
   * which quiets a signalling NaN a value in flight may hold under TPU
   * numerics (llvm_to_bits). */
  if (from == to) return to == IR_BF16 ? llvm_round(e, to, x) : x;
  if (to == IR_PRED) {
    if (ff) return LLVMBuildFCmp(b, LLVMRealUNE, x, LLVMConstNull(LLVMTypeOf(x)), "");
    return LLVMBuildICmp(b, LLVMIntNE, x, LLVMConstNull(llvm_ctype(e, from)), "");
  }
  if (ff && tf) {
    if (to == IR_F64) return LLVMBuildFPExt(b, x, e->t_f64, ""); /* exact */
    if (from == IR_F64)
      return to == IR_F32 ? LLVMBuildFPTrunc(b, x, e->t_f32, "")
                          : llvm_round(e, to, f64_to_f32_odd(e, x));
    return llvm_round(e, to, x);
  }
  if (tf) {
    bool uns = from == IR_PRED || ir_type_is_unsigned(from);
    if (to == IR_F64 || to == IR_F32)
      return uns ? LLVMBuildUIToFP(b, x, ty, "") : LLVMBuildSIToFP(b, x, ty, "");
    if (from == IR_S32 || int_bits(from) <= 16) {
      LLVMValueRef f = uns ? LLVMBuildUIToFP(b, x, e->t_f32, "") : LLVMBuildSIToFP(b, x, e->t_f32, "");
      /* The vector unit rounds s32 -> bf16 twice (vcvtif, then vrndbf). */
      if (from == IR_S32 && !vec_unit(e, to)) f = round_odd_fixup(e, x, f);
      return llvm_round(e, to, f);
    }
    return llvm_round(e, to, int_to_f32_odd(e, from, x));
  }
  if (ff) return f2i(e, to, x);
  if (from == IR_PRED || ir_type_is_unsigned(from)) {
    if (int_bits(from) < int_bits(to)) return LLVMBuildZExt(b, x, ty, "");
  } else if (int_bits(from) < int_bits(to)) {
    return LLVMBuildSExt(b, x, ty, "");
  }
  if (int_bits(from) == int_bits(to)) return x;
  return LLVMBuildTrunc(b, x, ty, "");
}

LLVMValueRef llvm_bitcast_convert(emitter *e, ir_type from, ir_type to, LLVMValueRef x) {
  LLVMValueRef bits = llvm_to_bits(e, from, x);
  LLVMTypeRef st = llvm_stype(e, to);
  if (LLVMTypeOf(bits) != st) bits = LLVMBuildBitCast(e->b, bits, st, "");
  return llvm_from_bits(e, to, bits);
}

/* ---- the MXU's operands (TPU numerics) ------------------------------- */

const int llvm_mxu_pair[2][6] = {{0, 0, 1, 0, 1, 2}, {0, 1, 0, 2, 1, 0}};

/* As the evaluator's ev_tpu_passes: one pass at DEFAULT or when both
 * operands are bf16, else 3 (HIGH) or 6 (HIGHEST) by the larger
 * operand_precision. */
int llvm_mxu_passes(const ir_inst *in, ir_type lt, ir_type rt) {
  ir_precision p = in->a->precision[0] > in->a->precision[1] ? in->a->precision[0] : in->a->precision[1];
  if (lt == IR_BF16 && rt == IR_BF16) return 1;
  return p == IR_PREC_HIGHEST ? 6 : p == IR_PREC_HIGH ? 3 : 1;
}

/* Part p of v: x0 = v, x(i+1) = canon(x(i) - bf16(x(i))) (f32), part p =
 * bf16(x(p)) with a bf16 subnormal read as a zero of its sign (the MXU's
 * rule 1; ir/eval_tpu.c: ev_tpu_parts). */
LLVMValueRef llvm_mxu_part(emitter *e, LLVMValueRef v, int p) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef h = llvm_round(e, IR_BF16, v);
  for (int i = 0; i < p; i++) {
    v = llvm_canon_nan(e, LLVMBuildFSub(b, v, h, ""));
    h = llvm_round(e, IR_BF16, v);
  }
  LLVMValueRef u = LLVMBuildBitCast(b, h, e->t_i32, "");
  LLVMValueRef ex = LLVMBuildAnd(b, u, ci(e->t_i32, 0x7f800000), "");
  LLVMValueRef sub = LLVMBuildICmp(b, LLVMIntEQ, ex, ci(e->t_i32, 0), "");
  LLVMValueRef z = LLVMBuildAnd(b, u, ci(e->t_i32, INT32_MIN), "");
  return LLVMBuildBitCast(b, LLVMBuildSelect(b, sub, z, u, ""), e->t_f32, "");
}

/* acc + x * y with one rounding (the MXU's fused add of an exact product). */
LLVMValueRef llvm_mxu_mac(emitter *e, LLVMValueRef acc, LLVMValueRef x, LLVMValueRef y) {
  LLVMValueRef args[3] = {x, y, acc};
  return llvm_call_intrinsic(e, "llvm.fma", e->t_f32, args, 3);
}
