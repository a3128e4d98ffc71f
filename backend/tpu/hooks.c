/* hooks.c: the TPU's answers to the questions the target-independent
 * passes ask (passes/passes.h, pass_target), each computed by the
 * planner of the kernel it is about, so that fusion decides with the
 * rules the lowering applies. */
#include "backend/tpu/tpu.h"

#include "backend/tpu/lower.h"
#include "passes/passes.h"

static const char *row_reduce_refusal(const pass_target *t, ir_op op, int64_t R, int64_t O,
                                      arena *a) {
  return lower_rows_refusal(t->self, op, R, O, a);
}

static const char *attention_refusal(const pass_target *t, int64_t rows, int64_t sk, arena *a,
                                     const char **out_plan) {
  return lower_attention_refusal(t->self, rows, sk, a, out_plan);
}

void tpu_pass_target(const tgt_target *t, pass_target *out) {
  memset(out, 0, sizeof *out);
  out->tpu = t;
  out->self = t;
  out->row_reduce_refusal = row_reduce_refusal;
  out->attention_refusal = attention_refusal;
  out->all_reduce_combine_bytes = PASS_AR_COMBINE_DEFAULT;
}

void tpu_pass_target_for(const char *spec, tgt_target *t, pass_target *out) {
  bool tpu = spec && tgt_parse(spec, t, NULL, 0) == 0;
  if (!tpu) tgt_preset("v3", t);
  tpu_pass_target(t, out);
  if (!tpu) out->tpu = NULL, out->all_reduce_combine_bytes = 0;
}
