/* types.c: the element types the TPU targets run. The vector unit holds
 * 32-bit words: pred, s8, s32, u32, f16, bf16 and f32 run natively (pred
 * and s8 widened to s32 words at the entry, f16 to f32 words holding its
 * values, u32 with unsigned sequences where its ops differ from s32's,
 * docs/tpu-backend.md). Before any lowering, every instruction whose
 * value holds another type gets one located error naming the type, the
 * instruction and its op: f64 has no unit to compute it ("f64 is not
 * supported on the TPU: ..."); the other integer widths (s16, s64, u8,
 * u16, u64) run on interp and cpu. */
#include "backend/tpu/steps.h"

/* The first element type of s (tuples depth first) the TPU does not run,
 * or IR_TYPE_INVALID. A token has no bytes and is no problem. */
static ir_type refused(const ir_shape *s, int depth) {
  if (s->type == IR_TUPLE) {
    for (int i = 0; i < s->ntuple && depth < 64; i++) {
      ir_type t = refused(&s->tuple[i], depth + 1);
      if (t != IR_TYPE_INVALID) return t;
    }
    return IR_TYPE_INVALID;
  }
  if (s->type == IR_TOKEN || tk_itype(s->type) != IR_TYPE_INVALID) return IR_TYPE_INVALID;
  return s->type;
}

int tpu_check_types(const ir_module *m, diag *d) {
  int problems = 0;
  for (int c = 0; c < m->comps.n; c++) {
    const ir_comp *cp = &m->comps.v[c];
    for (int i = 0; i < cp->insts.n; i++) {
      const ir_inst *in = &cp->insts.v[i];
      if (in->dead) continue;
      ir_type t = refused(in->shape, 0);
      if (t == IR_TYPE_INVALID) continue;
      const char *name = in->info->name ? in->info->name : "?";
      if (t == IR_F64)
        diag_error(d, in->info->loc, "f64 is not supported on the TPU: '%s' (%s) computes in f64",
                   name, ir_op_name(in->op));
      else
        diag_error(d, in->info->loc,
                   "%s is not supported on the TPU: '%s' (%s) holds %s values (they run on interp "
                   "and cpu)",
                   ir_type_name(t), name, ir_op_name(in->op), ir_type_name(t));
      problems++;
    }
  }
  return problems;
}
