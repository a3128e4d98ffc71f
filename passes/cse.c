/* cse.c: common subexpression elimination.
 * require: a verified module, operands before users.  provide: in every
 * computation, no two live instructions have the same op, operands (in
 * order), attributes, called computations and shape (element type, dims and
 * layout); the later one's users use the earlier one. Never merged:
 * parameters (distinct inputs), all-reduce (a collective with a channel),
 * ops with effects (OPF_EFFECT: custom-call, rng, collectives, I/O).
 * Constants merge when their literals are bitwise equal. Metadata and
 * source locations do not count. */
#include "passes/rewrite.h"

#define PASS "cse"

/* Same name and text; a called-computation attribute (text NULL) names
 * the same slice of calls (which same() compares). */
static bool raw_eq(const ir_raw_attr *p, const ir_raw_attr *q) {
  if (strcmp(p->name, q->name) != 0) return false;
  if (!p->text || !q->text)
    return !p->text && !q->text && p->first_call == q->first_call && p->ncalls == q->ncalls &&
           p->list == q->list;
  return strcmp(p->text, q->text) == 0;
}

static bool attrs_eq(const ir_inst *x, const ir_inst *y) {
  const ir_attrs *a = x->a, *b = y->a;
  /* exception: constants compare their literals only, and merge only
   * when both have one */
  if (x->op == IR_OP_CONSTANT)
    return a->literal && b->literal && ir_literal_equal(a->literal, b->literal);
  if (!ir_attrs_equal(x->op, a, b)) return false;
  /* Attributes kept verbatim (backend_config, sharding, ...) must agree,
   * except metadata. */
  int nx = 0, ny = 0;
  for (int i = 0; i < x->info->nraw; i++)
    nx += strcmp(x->info->raw[i].name, "metadata") != 0;
  for (int i = 0; i < y->info->nraw; i++)
    ny += strcmp(y->info->raw[i].name, "metadata") != 0;
  if (nx != ny) return false;
  for (int i = 0; i < x->info->nraw; i++) {
    if (!strcmp(x->info->raw[i].name, "metadata")) continue;
    bool found = false;
    for (int j = 0; j < y->info->nraw && !found; j++)
      found = raw_eq(&x->info->raw[i], &y->info->raw[j]);
    if (!found) return false;
  }
  return true;
}

static bool same(const ir_inst *x, const ir_inst *y) {
  if (x->op != y->op || x->nops != y->nops || x->ncalls != y->ncalls) return false;
  if (!ir_shape_equal_with_layout(x->shape, y->shape)) return false;
  for (int k = 0; k < x->nops; k++)
    if (x->ops[k] != y->ops[k]) return false;
  for (int k = 0; k < x->ncalls; k++)
    if (x->calls[k] != y->calls[k]) return false;
  return attrs_eq(x, y);
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static uint64_t hash(const ir_inst *in) {
  uint64_t h = mix(0, (uint64_t)in->op);
  h = mix(h, (uint64_t) in->shape->type);
  if (in->shape->type != IR_TUPLE)
    for (int i = 0; i < in->shape->rank; i++)
      h = mix(h, (uint64_t) in->shape->dims[i]);
  for (int k = 0; k < in->nops; k++)
    h = mix(h, (uint64_t)in->ops[k]);
  for (int k = 0; k < in->ncalls; k++)
    h = mix(h, (uint64_t)in->calls[k] + 77);
  /* a constant's literal is all that counts (attrs_eq) */
  if (in->op == IR_OP_CONSTANT) {
    ir_attrs lit = ir_attrs_none;
    lit.literal = in->a->literal;
    return ir_attrs_hash(in->op, &lit, h);
  }
  return ir_attrs_hash(in->op, in->a, h);
}

static bool cse_comp(ir_module *m, ir_comp_id c, pass_ctx *ctx) {
  ir_comp *cp = ir_comp_get(m, c);
  int n = cp->insts.n;
  if (n == 0) return false;
  int cap = 16;
  while (cap < 2 * n)
    cap *= 2;
  ir_id *table = arena_array(m->arena, (size_t)cap, sizeof(ir_id));
  for (int i = 0; i < cap; i++)
    table[i] = IR_NONE;
  pr_map mp = pr_map_make(m->arena, n);
  bool any = false;
  for (ir_id i = 0; i < n; i++) {
    ir_inst *in = &cp->insts.v[i];
    if (in->dead) continue;
    for (int k = 0; k < in->nops; k++)
      in->ops[k] = pr_find(&mp, in->ops[k]);
    if (in->op == IR_OP_PARAMETER || in->op == IR_OP_ALL_REDUCE ||
        (ir_op_flags(in->op) & OPF_EFFECT))
      continue;
    size_t slot = (size_t)(hash(in) & (uint64_t)(cap - 1));
    for (;; slot = (slot + 1) & (size_t)(cap - 1)) {
      ir_id j = table[slot];
      if (j == IR_NONE) {
        table[slot] = i;
        break;
      }
      if (same(&cp->insts.v[j], in)) {
        pass_explain(ctx, PASS, in->info->name, "same as %%%s",
                     cp->insts.v[j].info->name);
        mp.v[i] = j;
        any = true;
        break;
      }
    }
  }
  if (!any) return false;
  pr_apply(m, c, &mp);
  pr_sweep(m, c);
  return true;
}

bool pass_cse(ir_module *m, pass_ctx *ctx) {
  bool changed = false;
  for (ir_comp_id c = 0; c < m->comps.n; c++)
    changed |= cse_comp(m, c, ctx);
  return changed;
}
