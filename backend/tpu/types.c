/* types.c: the element types the TPU targets run. The vector unit holds
 * 32-bit words: pred, s8, s32, bf16 and f32 run natively (pred and s8
 * widened to s32 words at the entry, docs/tpu-backend.md). Before any
 * lowering, every instruction whose value holds another type gets one
 * located error naming the type, the instruction and its op: f64 has no
 * unit to compute it ("f64 is not supported on the TPU: ..."); the other
 * integer widths (s16, s64, u8, u16, u32, u64) run on interp and cpu
 * (f16 too; the lowering refuses it at its first use). One exception: the
 * u32 of replica-id and partition-id (ids below 2^31, held as s32 words)
 * runs where it is only converted or passed on (tuple, fusion operand,
 * a fusion computation's parameter that every caller binds to an id), as
 * do the zero u32 contexts of copy-start and collective-permute-start
 * (their tuples, and tuples of them). */
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
  if (s->type == IR_TOKEN || s->type == IR_F16 || tk_itype(s->type) != IR_TYPE_INVALID)
    return IR_TYPE_INVALID; /* f16: refused where it is lowered, as before */
  return s->type;
}

static bool id_op(ir_op op) { return op == IR_OP_REPLICA_ID || op == IR_OP_PARTITION_ID; }

/* The part of in's value whose types matter: the context elements (u32)
 * of copy-start and collective-permute-start (whose element 1 has element
 * 0's shape) are held as s32 words, so their element 0; else all of it. */
static const ir_shape *payload(const ir_inst *in) {
  bool start = (in->op == IR_OP_COPY_START || in->op == IR_OP_COLLECTIVE_PERMUTE_START) &&
               in->shape->type == IR_TUPLE && in->shape->ntuple >= 2;
  return start ? &in->shape->tuple[0] : in->shape;
}

/* Whether instruction i of computation c is an id: replica-id,
 * partition-id, or a parameter of a fusion computation that every fusion
 * calling it binds to an id (depth bounds the nesting followed). */
static bool is_id(const ir_module *m, ir_comp_id c, ir_id i, int depth) {
  const ir_inst *in = &m->comps.v[c].insts.v[i];
  if (id_op(in->op)) return true;
  if (in->op != IR_OP_PARAMETER || depth > 8) return false;
  int callers = 0;
  for (int k = 0; k < m->comps.n; k++)
    for (int j = 0; j < m->comps.v[k].insts.n; j++) {
      const ir_inst *f = &m->comps.v[k].insts.v[j];
      if (f->dead || f->op != IR_OP_FUSION || f->ncalls < 1 || f->calls[0] != c) continue;
      int64_t pn = in->a->parameter_number;
      if (pn < 0 || pn >= f->nops || !is_id(m, k, f->ops[pn], depth + 1)) return false;
      callers++;
    }
  return callers > 0;
}

/* Whether the u32 of in is an id's that the TPU runs (above), or a tuple
 * of such ids and start tuples. */
static bool id_value_ok(const ir_module *m, ir_comp_id c, ir_id i) {
  const ir_comp *cp = &m->comps.v[c];
  const ir_inst *in = &cp->insts.v[i];
  if (in->shape->type == IR_TUPLE) { /* a tuple whose u32 elements are ids */
    if (in->op != IR_OP_TUPLE) return false;
    for (int k = 0; k < in->nops; k++) {
      const ir_shape *e = cp->insts.v[in->ops[k]].shape;
      if (e->type == IR_TUPLE ? refused(payload(&cp->insts.v[in->ops[k]]), 0) != IR_TYPE_INVALID
                              : e->type == IR_U32 && !is_id(m, c, in->ops[k], 0))
        return false;
    }
    return true;
  }
  return in->shape->type == IR_U32 && in->shape->rank == 0 && is_id(m, c, i, 0);
}

/* An instruction of cp that uses the id i other than by convert, tuple
 * or fusion, or NULL. */
static const ir_inst *id_misuse(const ir_comp *cp, ir_id i) {
  for (int j = 0; j < cp->insts.n; j++) {
    const ir_inst *u = &cp->insts.v[j];
    if (u->dead || u->op == IR_OP_CONVERT || u->op == IR_OP_TUPLE || u->op == IR_OP_FUSION) continue;
    for (int k = 0; k < u->nops; k++)
      if (u->ops[k] == i) return u;
  }
  return NULL;
}

int tpu_check_types(const ir_module *m, diag *d) {
  int problems = 0;
  for (int c = 0; c < m->comps.n; c++) {
    const ir_comp *cp = &m->comps.v[c];
    for (int i = 0; i < cp->insts.n; i++) {
      const ir_inst *in = &cp->insts.v[i];
      if (in->dead) continue;
      ir_type t = refused(payload(in), 0);
      if (t == IR_TYPE_INVALID) continue;
      const char *name = in->info->name ? in->info->name : "?";
      if (t == IR_U32 && id_value_ok(m, c, i)) {
        const ir_inst *u = in->shape->type == IR_TUPLE ? NULL : id_misuse(cp, i);
        if (!u) continue;
        diag_error(d, u->info->loc,
                   "u32 is not supported on the TPU: '%s' (%s) uses the u32 of '%s' (%s), which "
                   "the TPU only converts or passes on (they run on interp and cpu)",
                   u->info->name ? u->info->name : "?", ir_op_name(u->op), name,
                   ir_op_name(in->op));
        problems++;
        continue;
      }
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
