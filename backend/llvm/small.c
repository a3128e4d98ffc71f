/* small.c: the small declared ops on the cpu (ir/small.c gives their
 * semantics): which of them the cpu runs, and reduce-precision as integer
 * arithmetic on the float's bits. The rest are aliases (plan.c) or
 * per-element forms (gen.c). */
#include "backend/llvm/lower.h"

bool llvm_small_supported(emitter *e, const ir_comp *c, const ir_inst *in) {
  const char *why = NULL;
  if (in->op == IR_OP_ASYNC_START || in->op == IR_OP_ASYNC_DONE)
    why = "is not supported by the cpu target yet";
  if (in->op == IR_OP_BITCAST) {
    ir_type f = c->insts.v[in->ops[0]].shape->type, t = in->shape->type;
    if (f != t && ir_type_size(f) != ir_type_size(t))
      why = "between element types of different widths is not supported by the cpu target";
  }
  if (!why) return true;
  src_loc l = in->info->loc;
  return llvm_fail(e, ST_UNSUPPORTED, "%s:%d:%d: '%s' %s", l.file ? l.file : "?", (int)l.line,
                   (int)l.col, ir_op_name(in->op), why);
}

LLVMValueRef llvm_reduce_precision(emitter *e, ir_type t, LLVMValueRef x, int ebits, int mbits) {
  LLVMBuilderRef b = e->b;
  bool f64 = t == IR_F64;
  int mb = f64 ? 52 : 23, eb = f64 ? 11 : 8;
  LLVMTypeRef it = f64 ? e->t_i64 : e->t_i32, ft = LLVMTypeOf(x);
#define K(v) LLVMConstInt(it, (unsigned long long)(v), 0)
  LLVMValueRef u = LLVMBuildBitCast(b, x, it, "");
  uint64_t sign = (uint64_t)1 << (mb + eb);
  if (mbits < mb) {
    int drop = mb - mbits;
    uint64_t last = (uint64_t)1 << drop;
    LLVMValueRef lsb = LLVMBuildAnd(b, LLVMBuildLShr(b, u, K(drop), ""), K(1), "");
    LLVMValueRef bias = LLVMBuildAdd(b, lsb, K((last >> 1) - 1), "");
    u = LLVMBuildAnd(b, LLVMBuildAdd(b, u, bias, ""), K(~(last - 1)), "");
  }
  if (ebits < eb) {
    uint64_t exp_mask = (((uint64_t)1 << eb) - 1) << mb;
    uint64_t bias = ((uint64_t)1 << (eb - 1)) - 1, rbias = ((uint64_t)1 << (ebits - 1)) - 1;
    LLVMValueRef ex = LLVMBuildAnd(b, u, K(exp_mask), "");
    LLVMValueRef sg = LLVMBuildAnd(b, u, K(sign), "");
    LLVMValueRef over = LLVMBuildICmp(b, LLVMIntUGT, ex, K((bias + rbias) << mb), "");
    LLVMValueRef under = LLVMBuildICmp(b, LLVMIntULE, ex, K((bias - rbias) << mb), "");
    u = LLVMBuildSelect(b, over, LLVMBuildOr(b, sg, K(exp_mask), ""), u, "");
    u = LLVMBuildSelect(b, under, sg, u, "");
  }
#undef K
  LLVMValueRef r = LLVMBuildBitCast(b, u, ft, "");
  /* NaN stays NaN (quieted, as the evaluator's widening does); with no
   * mantissa bits it becomes +infinity, as XLA */
  LLVMValueRef nan = mbits > 0 ? LLVMBuildFAdd(b, x, x, "") : LLVMConstReal(ft, 1.0 / 0.0);
  r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), nan, r, "");
  return llvm_round(e, t, r);
}
