/* mof.c: multi-output fusion of the entry computation.
 * require: the fusion pass's output (fusion instructions of kind kLoop or
 * kInput with array-shaped roots), operands before users.  provide: pairs
 * of such fusions merged into one fusion whose fused computation has a
 * tuple root, read back with get-tuple-element; values unchanged. Two
 * merges, both only between fusions of the same iteration space (the
 * root's dims for kLoop, the reduced operand's dims for kInput), and
 * each fusion merged at most once per run:
 *   sibling   F1 and F2 read a common operand of more than one element and
 *             neither depends on the other: the operand is read once
 *             (saves its size in HBM reads);
 *   producer-consumer  F2 reads F1, F1 (kLoop) has other users too (so the
 *             fusion pass had to keep it), and no other path leads from F1
 *             to F2: F2 computes F1's value itself and also returns it
 *             (saves reading F1's result back).
 * A merge whose result would exceed MAX_OPERANDS operands is refused.
 * Decisions are recorded with pass_explain. */
#include "passes/rewrite.h"

#define PASS "multi-output-fusion"

enum { MAX_OPERANDS = 32 };

typedef struct mctx {
  ir_module *m;
  ir_comp_id c;
  pass_ctx *ctx;
  bool explain_refusals; /* only in the final scan, so each is said once */
} mctx;

static ir_inst *I(mctx *x, ir_id i) { return ir_inst_get(x->m, x->c, i); }

/* The iteration space of a candidate fusion, or NULL when it is none. */
static const ir_shape *space(mctx *x, ir_id id) {
  const ir_inst *in = I(x, id);
  if (in->op != IR_OP_FUSION || in->ncalls != 1 || !ir_shape_is_array(&in->shape)) return NULL;
  const ir_comp *fc = ir_comp_get(x->m, in->calls[0]);
  const ir_inst *r = &fc->insts.v[fc->root];
  if (in->a.fusion_kind == IR_FUSION_LOOP) return &in->shape;
  if (in->a.fusion_kind == IR_FUSION_INPUT && r->op == IR_OP_REDUCE && r->nops >= 1)
    return &fc->insts.v[r->ops[0]].shape;
  return NULL;
}

static bool same_dims(const ir_shape *a, const ir_shape *b) {
  if (!a || !b || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* Does `to` depend on `from` (through any path, optionally ignoring the
 * direct operand edge to->from)? */
static bool depends(mctx *x, ir_id to, ir_id from, bool skip_direct) {
  if (to <= from) return false;
  arena_mark mk = arena_get_mark(x->m->arena);
  uint8_t *seen = arena_alloc(x->m->arena, (size_t)to + 1);
  ir_id *stack = arena_array(x->m->arena, (size_t)to + 1, sizeof(ir_id));
  int sp = 0;
  bool found = false;
  const ir_inst *t = I(x, to);
  for (int k = 0; k < t->nops; k++) {
    ir_id o = t->ops[k];
    if (skip_direct && o == from) continue;
    if (!seen[o]) seen[o] = 1, stack[sp++] = o;
  }
  while (sp && !found) {
    ir_id i = stack[--sp];
    if (i == from) {
      found = true;
      break;
    }
    if (i < from) continue;
    const ir_inst *in = I(x, i);
    for (int k = 0; k < in->nops; k++)
      if (!seen[in->ops[k]]) seen[in->ops[k]] = 1, stack[sp++] = in->ops[k];
  }
  arena_reset(x->m->arena, mk);
  return found;
}

/* Clones fused computation `src` (called with operands `ops`) into fc;
 * parameters map through pmap (entry id -> fc parameter) and, when
 * `subst_from` is an operand, that operand maps to `subst_to` in fc.
 * Returns the clone of the root. */
static ir_id clone_body(mctx *x, ir_comp_id fc, ir_comp_id src, const ir_id *ops,
                        const ir_id *srcs, const ir_id *params, int np, ir_id subst_from,
                        ir_id subst_to) {
  ir_module *m = x->m;
  int n = ir_comp_get(m, src)->insts.n;
  ir_id *map = arena_array(m->arena, (size_t)n, sizeof(ir_id));
  for (int i = 0; i < n; i++) {
    ir_inst proto = *ir_inst_get(m, src, i);
    if (proto.op == IR_OP_PARAMETER) {
      ir_id from = ops[proto.a.parameter_number];
      map[i] = IR_NONE;
      if (from == subst_from) map[i] = subst_to;
      for (int k = 0; k < np && map[i] == IR_NONE; k++)
        if (srcs[k] == from) map[i] = params[k];
      BASE_ASSERT(map[i] != IR_NONE);
      continue;
    }
    ir_id tmp[64];
    ir_id *o = proto.nops <= 64 ? tmp : arena_array(m->arena, (size_t)proto.nops, sizeof(ir_id));
    for (int k = 0; k < proto.nops; k++) o[k] = map[proto.ops[k]];
    proto.ops = o;
    proto.name = ir_unique_name(m, proto.name);
    map[i] = ir_inst_add(m, fc, &proto);
  }
  return map[ir_comp_get(m, src)->root];
}

/* Merges fusions a < b; when consumer, b reads a. Returns true on success. */
static bool merge(mctx *x, ir_id a, ir_id b, bool consumer, const char *why) {
  ir_module *m = x->m;
  ir_id srcs[MAX_OPERANDS];
  int np = 0;
  for (int pass = 0; pass < 2; pass++) {
    const ir_inst *f = I(x, pass ? b : a);
    for (int k = 0; k < f->nops; k++) {
      ir_id o = f->ops[k];
      if (consumer && o == a) continue;
      bool dup = false;
      for (int q = 0; q < np; q++) dup |= srcs[q] == o;
      if (dup) continue;
      if (np == MAX_OPERANDS) {
        if (x->explain_refusals)
          pass_explain(x->ctx, PASS, I(x, b)->name, "not merged with %%%s: more than %d operands",
                       I(x, a)->name, MAX_OPERANDS);
        return false;
      }
      srcs[np++] = o;
    }
  }
  const char *an = I(x, a)->name, *bn = I(x, b)->name;
  ir_comp_id fc = ir_comp_add(m, arena_printf(m->arena, "fused_multi_%s_%s", an, bn));
  ir_comp_get(m, fc)->is_fusion = true;
  ir_id params[MAX_OPERANDS];
  for (int k = 0; k < np; k++) {
    ir_inst p;
    memset(&p, 0, sizeof p);
    p.op = IR_OP_PARAMETER;
    p.shape = I(x, srcs[k])->shape;
    p.a.parameter_number = k;
    p.name = ir_unique_name(m, arena_printf(m->arena, "param_%d", k));
    params[k] = ir_inst_add(m, fc, &p);
  }
  ir_inst fa = *I(x, a), fb = *I(x, b);
  ir_id ra = clone_body(x, fc, fa.calls[0], fa.ops, srcs, params, np, IR_NONE, IR_NONE);
  ir_id rb = clone_body(x, fc, fb.calls[0], fb.ops, srcs, params, np, consumer ? a : IR_NONE, ra);
  ir_id roots[2] = {ra, rb};
  src_loc nl = {0};
  ir_id t = ir_build(m, fc, IR_OP_TUPLE, roots, 2, NULL, NULL, 0, nl);
  ir_comp *fcp = ir_comp_get(m, fc);
  fcp->root = t;
  ir_comp_finish(m, fc);
  ir_inst fu;
  memset(&fu, 0, sizeof fu);
  fu.op = IR_OP_FUSION;
  fu.name = ir_unique_name(m, "fusion");
  fu.shape = ir_shape_clone(m->arena, &fcp->insts.v[t].shape);
  fu.nops = np;
  fu.ops = srcs;
  fu.ncalls = 1;
  fu.calls = &fc;
  fu.a.fusion_kind = (fa.a.fusion_kind == IR_FUSION_INPUT || fb.a.fusion_kind == IR_FUSION_INPUT)
                         ? IR_FUSION_INPUT
                         : IR_FUSION_LOOP;
  fu.a.preferred_type = IR_TYPE_INVALID;
  fu.loc = fb.loc;
  ir_id mf = ir_inst_add(m, x->c, &fu);
  ir_attrs g0, g1;
  memset(&g0, 0, sizeof g0);
  memset(&g1, 0, sizeof g1);
  g1.index = 1;
  ir_id e0 = ir_build(m, x->c, IR_OP_GET_TUPLE_ELEMENT, &mf, 1, &g0, NULL, 0, fa.loc);
  ir_id e1 = ir_build(m, x->c, IR_OP_GET_TUPLE_ELEMENT, &mf, 1, &g1, NULL, 0, fb.loc);
  pass_explain(x->ctx, PASS, I(x, mf)->name, "%s fusion of %%%s and %%%s: %s",
               consumer ? "producer-consumer" : "sibling", an, bn, why);
  pr_map mp = pr_map_make(m->arena, ir_comp_get(m, x->c)->insts.n);
  mp.v[a] = e0;
  mp.v[b] = e1;
  pr_apply(m, x->c, &mp);
  return true;
}

static int64_t bytes_of(const ir_shape *s) {
  return ir_shape_is_array(s) ? ir_shape_count(s) * ir_type_size(s->type) : 0;
}

/* Finds and performs one merge; false when there is none left. */
static bool merge_one(mctx *x) {
  ir_module *m = x->m;
  pass_ctx *ctx = x->ctx;
  int n = ir_comp_get(m, x->c)->insts.n;
  int32_t *uses = ir_comp_use_counts(m, x->c);
  for (ir_id b = 0; b < n; b++) {
    const ir_shape *sb = space(x, b);
    if (!sb) continue;
    /* producer-consumer first: b reads a fusion a with other users */
    for (int k = 0; k < I(x, b)->nops; k++) {
      ir_id a = I(x, b)->ops[k];
      const ir_shape *sa = space(x, a);
      if (!sa || I(x, a)->a.fusion_kind != IR_FUSION_LOOP || uses[a] < 2) continue;
      if (!same_dims(&I(x, a)->shape, sb)) {
        if (x->explain_refusals)
          pass_explain(ctx, PASS, I(x, b)->name, "not merged with its producer %%%s: other iteration space",
                     I(x, a)->name);
        continue;
      }
      if (depends(x, b, a, true)) {
        if (x->explain_refusals)
          pass_explain(ctx, PASS, I(x, b)->name,
                       "not merged with its producer %%%s: another path leads from it (a cycle)",
                     I(x, a)->name);
        continue;
      }
      const char *why = arena_printf(m->arena, "%lld bytes of %%%s not read back",
                                     (long long)bytes_of(&I(x, a)->shape), I(x, a)->name);
      if (merge(x, a, b, true, why)) return true;
    }
    /* siblings: an earlier fusion with a common operand */
    for (ir_id a = 0; a < b; a++) {
      const ir_shape *sa = space(x, a);
      if (!sa) continue;
      ir_id shared = IR_NONE;
      for (int i = 0; i < I(x, a)->nops && shared == IR_NONE; i++)
        for (int j = 0; j < I(x, b)->nops; j++) {
          ir_id o = I(x, a)->ops[i];
          if (o == I(x, b)->ops[j] && bytes_of(&I(x, o)->shape) > ir_type_size(I(x, o)->shape.type)) {
            shared = o;
            break;
          }
        }
      if (shared == IR_NONE) continue;
      if (!same_dims(sa, sb)) {
        if (x->explain_refusals)
          pass_explain(ctx, PASS, I(x, b)->name, "not merged with sibling %%%s: other iteration space",
                     I(x, a)->name);
        continue;
      }
      if (depends(x, b, a, false)) {
        if (x->explain_refusals)
          pass_explain(ctx, PASS, I(x, b)->name, "not merged with sibling %%%s: depends on it",
                     I(x, a)->name);
        continue;
      }
      const char *why = arena_printf(m->arena, "%%%s (%lld bytes) read once",
                                     I(x, shared)->name, (long long)bytes_of(&I(x, shared)->shape));
      if (merge(x, a, b, false, why)) return true;
    }
  }
  return false;
}

bool pass_mof(ir_module *m, pass_ctx *ctx) {
  if (m->entry == IR_NONE) return false;
  mctx x = {m, m->entry, ctx, false};
  bool changed = false;
  /* One merge at a time, each followed by a sweep that restores operand
   * order; a merged fusion has a tuple root and is no candidate again. */
  for (int round = 0; round < 4096 && merge_one(&x); round++) {
    pr_sweep(m, x.c);
    changed = true;
  }
  x.explain_refusals = true;
  merge_one(&x); /* finds nothing again; now says why */
  return changed;
}
