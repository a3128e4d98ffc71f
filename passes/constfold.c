/* constfold.c: constant folding.
 * require: a verified module.  provide: every instruction whose operands
 * are all constants, whose result is an array of at most FOLD_MAX_ELEMS
 * elements, and which the evaluator computes within FOLD_MAX_STEPS steps
 * becomes a constant holding exactly what the reference evaluator computes
 * in the numerics of the target the module is compiled for: the TPU mode
 * (docs/numerics.md section 4) when ctx->target describes a TPU, so
 * that -O2 and -O0 give the same bits there; the default numerics
 * otherwise (so folding never changes a value the interp target reports).
 * Not folded: leaves (parameter, constant, iota: an iota is cheaper than
 * its literal), broadcasts of scalars (the canonical cheap splat form that
 * simplify produces and fusion duplicates), tuples, get-tuple-element,
 * fusion and all-reduce (a collective is never folded). Operands left
 * unused are removed.
 *
 * How: the instruction is copied, with its constant operands, into a
 * temporary computation appended to the module and made the entry for one
 * ir_eval call; the computation is popped afterwards. Called computations
 * (a reduce's to_apply) are the module's own. */
#include "passes/rewrite.h"

#define PASS "constfold"

enum { FOLD_MAX_ELEMS = 1 << 16 };
#define FOLD_MAX_STEPS ((int64_t)1 << 26)

enum { NO, YES, TOO_BIG };

static int foldable(const ir_comp *cp, const ir_inst *in) {
  switch (in->op) {
  case IR_OP_PARAMETER:
  case IR_OP_CONSTANT:
  case IR_OP_IOTA:
  case IR_OP_TUPLE:
  case IR_OP_GET_TUPLE_ELEMENT:
  case IR_OP_FUSION:
  case IR_OP_ALL_REDUCE:
    return NO;
  case IR_OP_BROADCAST:
    if (in->nops != 1 || cp->insts.v[in->ops[0]].shape->rank == 0) return NO;
    break;
  default:
    break;
  }
  /* collectives and other effects: their value depends on the replica */
  if (ir_op_flags(in->op) & OPF_EFFECT) return NO;
  if (in->dead || in->nops == 0 || !ir_shape_is_array(in->shape)) return NO;
  for (int k = 0; k < in->nops; k++) {
    const ir_inst *o = &cp->insts.v[in->ops[k]];
    if (o->op != IR_OP_CONSTANT || !ir_shape_is_array(o->shape)) return NO;
  }
  int64_t n;
  if (!ir_shape_elements(in->shape, &n) || n > FOLD_MAX_ELEMS) return TOO_BIG;
  return YES;
}

/* Evaluates instruction id of computation c (in the evaluator's TPU mode
 * when tpu_numerics); returns its value in the module's arena, or NULL
 * (with the reason in why) when it cannot. */
static ir_literal *evaluate(ir_module *m, ir_comp_id c, ir_id id, bool tpu_numerics, char *why,
                            size_t whylen) {
  ir_comp_id t = ir_comp_add(m, "__constfold");
  ir_inst_proto in = ir_inst_proto_of(ir_inst_get(m, c, id));
  ir_id ops[64];
  if (in.nops > (int)COUNTOF(ops)) {
    m->comps.n--;
    snprintf(why, whylen, "more than %d operands", (int)COUNTOF(ops));
    return NULL;
  }
  for (int k = 0; k < in.nops; k++) {
    ir_inst_proto o = ir_inst_proto_of(ir_inst_get(m, c, in.ops[k]));
    o.name = "__constfold_operand";
    o.nraw = 0;
    ops[k] = ir_inst_add(m, t, &o);
  }
  in.ops = ops;
  in.name = "__constfold_result";
  in.nraw = 0;
  ir_comp *tc = ir_comp_get(m, t);
  tc->root = ir_inst_add(m, t, &in);
  ir_comp_finish(m, t);
  ir_comp_id entry = m->entry;
  m->entry = t;
  ir_eval_options o;
  ir_eval_options_init(&o);
  o.max_steps = FOLD_MAX_STEPS;
  o.tpu_numerics = tpu_numerics;
  o.max_bytes = (int64_t)64 << 20;
  arena *a = arena_create();
  ir_literal *out = NULL;
  base_status st = ir_eval(m, &o, NULL, 0, a, &out, why, whylen);
  m->entry = entry;
  m->comps.n--; /* pop the temporary computation */
  ir_literal *r = NULL;
  if (st == ST_OK && out && ir_shape_is_array(&out->shape)) {
    ir_shape s = *ir_inst_get(m, c, id)->shape;
    r = ir_literal_create(m->arena, &s);
    if (r && r->nbytes == out->nbytes)
      memcpy(r->data, out->data, out->nbytes);
    else
      r = NULL;
  }
  arena_destroy(a);
  return r;
}

bool pass_constfold(ir_module *m, pass_ctx *ctx) {
  bool changed = false;
  int ncomps = m->comps.n;
  for (ir_comp_id c = 0; c < ncomps; c++) {
    bool any = false;
    for (ir_id i = 0; i < ir_comp_get(m, c)->insts.n; i++) {
      const ir_comp *cp = ir_comp_get(m, c);
      int fo = foldable(cp, &cp->insts.v[i]);
      if (fo == TOO_BIG)
        pass_explain(ctx, PASS, cp->insts.v[i].info->name, "not folded: %lld elements (limit %d)",
                     (long long)ir_shape_count(cp->insts.v[i].shape), FOLD_MAX_ELEMS);
      if (fo != YES) continue;
      char why[256] = "";
      ir_literal *l = evaluate(m, c, i, ctx->target && ctx->target->tpu, why, sizeof why);
      ir_inst *in = ir_inst_get(m, c, i);
      if (!l) {
        pass_explain(ctx, PASS, in->info->name, "not folded: %s",
                     why[0] ? why : "no value");
        continue;
      }
      pass_explain(ctx, PASS, in->info->name,
                   "%s of constants folded (%lld element%s)",
                   ir_op_name(in->op), (long long)ir_shape_count(in->shape),
                   ir_shape_count(in->shape) == 1 ? "" : "s");
      ir_inst_proto k;
      memset(&k, 0, sizeof k);
      k.op = IR_OP_CONSTANT;
      k.name = in->info->name;
      k.shape = *in->shape;
      k.a.literal = l;
      k.meta = in->info->meta;
      k.loc = in->info->loc;
      ir_inst_assign(m, in, &k);
      any = true;
    }
    if (any) pr_sweep(m, c);
    changed |= any;
  }
  return changed;
}
