/* lower_prologue.c: converts between f32 and bf16 that only feed the MXU
 * are not materialised (MXU prologues).
 *
 * A one-pass dot rounds every float operand to bf16 (RNE) as its tiles
 * reach VMEM, and reads a bf16 operand as it lies. So a convert f32 ->
 * bf16 whose every use is such a dot (directly, or as a parameter of a
 * loop/input/output fusion used there only by such dots) gives the same
 * bits when the dot reads the convert's f32 operand instead: the
 * mixed-precision `matmul(cast(x, bf16), cast(w, bf16))` with f32 inputs
 * or master weights reads x and w once (4 bytes per element) instead of
 * converting through HBM (4 read + 2 written + 2 read). A convert bf16 ->
 * f32 feeding one-pass dots is exact to undo (bf16 -> f32 -> bf16 is the
 * identity), so the dot reads the bf16 buffer. The convert's value is
 * then its operand's buffer (an alias of the operand's type, which differs
 * from the convert's IR type); the dots take their passes from the IR
 * types (lower_mxu_passes), so nothing else changes. */
#include "backend/tpu/lower.h"

#include <stdio.h>

const char lower_prologue_fused[] = "fused";

/* Whether dot in of computation c rounds its operands to bf16 once: a
 * float result and one MXU pass; else why not (in arena a). */
static const char *dot_refusal(const lctx *x, const ir_comp *c, const ir_inst *in, arena *a) {
  if (!ir_type_is_float(in->shape->type))
    return arena_printf(a, "dot '%s' has a %s result: it runs on the vector unit, not the MXU",
                        in->info->name, ir_type_name(in->shape->type));
  int p = lower_mxu_passes(x, c, in);
  if (p != 1)
    return arena_printf(a,
                        "dot '%s' takes %d bf16 passes (precision above DEFAULT): they split the "
                        "converted value, not its operand, into bf16 parts",
                        in->info->name, p);
  return NULL;
}

static const char *conv_refusal(const ir_inst *u, arena *a) {
  return arena_printf(a,
                      "convolution '%s' gathers its patches from a bf16 buffer by DMA (it "
                      "converts nothing in VMEM)",
                      u->info->name);
}

/* Why parameter k of fusion instruction u cannot stand for the f32 (or
 * bf16) operand of a convert, or NULL when every use inside is a one-pass
 * dot; *dots counts those uses. */
static const char *fusion_refusal(const lctx *x, const ir_inst *u, int k, int *dots, arena *a) {
  if (u->ncalls != 1 || u->a->fusion_kind == IR_FUSION_CUSTOM)
    return arena_printf(a, "fusion '%s' is %s: it reads its operands itself", u->info->name,
                        u->ncalls != 1 ? "not one computation" : "the attention kernel");
  const ir_comp *fc = &x->m->comps.v[u->calls[0]];
  for (int q = 0; q < fc->insts.n; q++) {
    const ir_inst *pq = &fc->insts.v[q];
    if (pq->dead || pq->op != IR_OP_PARAMETER || pq->a->parameter_number != k) continue;
    if (q == fc->root) return arena_printf(a, "fusion '%s' returns it", u->info->name);
    for (int r = 0; r < fc->insts.n; r++) {
      const ir_inst *ur = &fc->insts.v[r];
      if (ur->dead) continue;
      for (int o = 0; o < ur->nops; o++) {
        if (ur->ops[o] != q) continue;
        if (ur->op == IR_OP_CONVOLUTION) return conv_refusal(ur, a);
        if (ur->op != IR_OP_DOT)
          return arena_printf(a, "'%s' (%s) in fusion '%s' also uses it, so it is materialised",
                              ur->info->name, ir_op_name(ur->op), u->info->name);
        const char *why = dot_refusal(x, fc, ur, a);
        if (why) return why;
        (*dots)++;
      }
    }
  }
  return NULL;
}

static bool is_contraction(const ir_inst *u) {
  return u->op == IR_OP_DOT || u->op == IR_OP_CONVOLUTION;
}

/* Whether instruction u reaches the MXU: a dot or convolution, or a
 * fusion whose computation holds one. */
static bool mxu_user(const lctx *x, const ir_inst *u) {
  if (is_contraction(u)) return true;
  if (u->op != IR_OP_FUSION || u->ncalls != 1) return false;
  const ir_comp *fc = &x->m->comps.v[u->calls[0]];
  for (int q = 0; q < fc->insts.n; q++)
    if (!fc->insts.v[q].dead && is_contraction(&fc->insts.v[q])) return true;
  return false;
}

/* f32 -> bf16 converts read by more one-pass dots than this are
 * materialised: converting once costs 6 bytes of HBM traffic per element
 * and each dot then reads 2, against 4 per dot reading f32 (equal at 3). */
enum { MAX_F32_READERS = 2 };

/* The decision for convert i (uses: ulist[uoff[i] .. uoff[i + 1])):
 * lower_prologue_fused, a reason it is materialised, or NULL when no dot
 * reads it (nothing to say). */
static const char *decide(lctx *x, const int32_t *uoff, const int32_t *ulist, ir_id i) {
  const ir_comp *c = x->comp;
  const ir_inst *in = &c->insts.v[i];
  arena *a = x->b->a;
  bool any = false;
  for (int q = uoff[i]; q < uoff[i + 1] && !any; q++)
    any = mxu_user(x, &c->insts.v[ulist[q]]);
  if (!any) return NULL;
  ir_type st = c->insts.v[in->ops[0]].shape->type, dt = in->shape->type;
  if (!((st == IR_F32 && dt == IR_BF16) || (st == IR_BF16 && dt == IR_F32)))
    return arena_printf(a,
                        "a convert from %s to %s: the MXU rounds f32 tiles to bf16 and reads "
                        "bf16 as it lies, it takes no other type",
                        ir_type_name(st), ir_type_name(dt));
  if (i == c->root) return "it is the computation's result";
  if (x->deferred[in->ops[0]] || lower_splat(x, in->ops[0]))
    return "its operand is computed in the convert's own elementwise program (no buffer to "
           "read)";
  int dots = 0;
  for (int q = uoff[i]; q < uoff[i + 1]; q++) {
    const ir_inst *u = &c->insts.v[ulist[q]];
    const char *why = NULL;
    if (u->op == IR_OP_FUSION && q > uoff[i] && ulist[q - 1] == ulist[q]) continue; /* seen */
    if (u->op == IR_OP_DOT) {
      why = dot_refusal(x, c, u, a);
      dots++;
    } else if (u->op == IR_OP_CONVOLUTION) {
      why = conv_refusal(u, a);
    } else if (u->op == IR_OP_FUSION) {
      for (int k = 0; k < u->nops && !why; k++)
        if (u->ops[k] == i) why = fusion_refusal(x, u, k, &dots, a);
    } else {
      why = arena_printf(a, "'%s' (%s) also uses it, so it is materialised", u->info->name,
                         ir_op_name(u->op));
    }
    if (why) return why;
  }
  if (st == IR_F32 && dots > MAX_F32_READERS)
    return arena_printf(a,
                        "%d dots read it: one conversion through HBM (6 bytes per element, then "
                        "2 per dot) costs less than %d f32 reads (4 bytes each)",
                        dots, dots);
  return lower_prologue_fused;
}

void lower_plan_prologues(lctx *x, const int32_t *uoff, const int32_t *ulist) {
  const ir_comp *c = x->comp;
  for (int i = 0; i < c->insts.n; i++) {
    const ir_inst *in = &c->insts.v[i];
    if (in->dead || in->op != IR_OP_CONVERT || x->deferred[i]) continue;
    const char *d = decide(x, uoff, ulist, i);
    if (!d) continue;
    if (!x->prologue) x->prologue = arena_array(x->b->a, (size_t)c->insts.n + 1, sizeof(char *));
    x->prologue[i] = d;
  }
}

bool lower_prologue(lctx *x, ir_id i) {
  const char *d = x->prologue ? x->prologue[i] : NULL;
  if (!d) return false;
  const ir_inst *in = &x->comp->insts.v[i];
  const tval *v = x->val[in->ops[0]];
  if (d != lower_prologue_fused) {
    tb_explain(x->b, "convert not fused as an MXU prologue: %s", d);
    return false;
  }
  tb_explain(x->b,
             "convert %s -> %s fused as the MXU prologue of its dots: not materialised, the "
             "matmul reads the %s buffer %s",
             ir_type_name(v->type), ir_type_name(in->shape->type), ir_type_name(v->type),
             v->type == IR_F32 ? "and rounds its tiles to bf16 in VMEM"
                               : "as it lies (bf16 -> f32 -> bf16 is exact)");
  x->val[i] = tv_alias(x->b, v, v->type, v->rank, v->dims);
  return true;
}
