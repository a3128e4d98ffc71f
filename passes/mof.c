/* mof.c: multi-output fusion of the computations that run as control
 * flow (the entry, and the bodies, conditions, branches and callees of
 * its whiles, conditionals and calls: pr_control_comps).
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
 * Both also need every other user of the earlier fusion to come after the
 * later one (the merged fusion takes the later one's place, so positions
 * stay topological and the cycle check is a local search).
 * A merge whose result would exceed MAX_OPERANDS operands is refused.
 * Decisions are recorded with pass_explain. Cost: one scan; each
 * candidate pair costs one search of b's ancestors and each merge one
 * rewrite of the operands, so O(n) per merge. */
#include "passes/rewrite.h"

#define PASS "multi-output-fusion"

enum { MAX_OPERANDS = 32 };

typedef struct mctx {
  ir_module *m;
  ir_comp_id c;
  pass_ctx *ctx;
  uint8_t *done;                          /* fusions merged in this run (their slots die) */
  ir_id *repl;                            /* done fusion -> the merged fusion that took its place */
  int32_t *pos;                           /* a topological position of every instruction */
  const int32_t *ustart, *ucount, *users; /* original distinct users */
  uint32_t *seen;                         /* depends(): visit stamps */
  ir_id *stack;                           /* depends(): work stack */
  uint32_t stamp;
  int cap; /* size of seen/stack/done: instructions incl. new ones */
} mctx;

static ir_inst *I(mctx *x, ir_id i) { return ir_inst_get(x->m, x->c, i); }

/* The iteration space of a candidate fusion, or NULL when it is none. */
static const ir_shape *space(mctx *x, ir_id id) {
  const ir_inst *in = I(x, id);
  if (in->op != IR_OP_FUSION || in->ncalls != 1 || !ir_shape_is_array(in->shape)) return NULL;
  const ir_comp *fc = ir_comp_get(x->m, in->calls[0]);
  const ir_inst *r = &fc->insts.v[fc->root];
  if (in->a->fusion_kind == IR_FUSION_LOOP) return in->shape;
  if (in->a->fusion_kind == IR_FUSION_INPUT && r->op == IR_OP_REDUCE && r->nops >= 1)
    return fc->insts.v[r->ops[0]].shape;
  return NULL;
}

static bool same_dims(const ir_shape *a, const ir_shape *b) {
  if (!a || !b || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* Does `to` depend on `from` (through any path; with skip_direct, not
 * counting the direct operand edge to->from)? Searches to's ancestors,
 * pruned by topological position: nothing before `from` can reach it. */
static bool depends(mctx *x, ir_id to, ir_id from, bool skip_direct) {
  const ir_comp *cp = ir_comp_get(x->m, x->c);
  if (++x->stamp == 0) {
    memset(x->seen, 0, sizeof(uint32_t) * (size_t)x->cap);
    x->stamp = 1;
  }
  int sp = 0;
  const ir_inst *t = &cp->insts.v[to];
  for (int k = 0; k < t->nops; k++) {
    ir_id o = t->ops[k];
    if (skip_direct && o == from) continue;
    if (x->seen[o] != x->stamp) x->seen[o] = x->stamp, x->stack[sp++] = o;
  }
  while (sp) {
    ir_id i = x->stack[--sp];
    if (i == from) return true;
    if (x->pos[i] < x->pos[from]) continue;
    const ir_inst *in = &cp->insts.v[i];
    for (int k = 0; k < in->nops; k++)
      if (x->seen[in->ops[k]] != x->stamp)
        x->seen[in->ops[k]] = x->stamp, x->stack[sp++] = in->ops[k];
  }
  return false;
}

/* Clones fused computation `src` (called with operands `ops`) into fc;
 * parameters map through pmap (entry id -> fc parameter) and, when
 * `subst_from` is an operand, that operand maps to `subst_to` in fc.
 * Returns the clone of the root. */
static ir_id clone_body(mctx *x, ir_comp_id fc, ir_comp_id src, const ir_id *ops, const ir_id *srcs,
                        const ir_id *params, int np, ir_id subst_from, ir_id subst_to) {
  ir_module *m = x->m;
  int n = ir_comp_get(m, src)->insts.n;
  ir_id *map = arena_array(m->arena, (size_t)n, sizeof(ir_id));
  for (int i = 0; i < n; i++) {
    ir_inst_proto proto = ir_inst_proto_of(ir_inst_get(m, src, i));
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
    for (int k = 0; k < proto.nops; k++)
      o[k] = map[proto.ops[k]];
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
      for (int q = 0; q < np; q++)
        dup |= srcs[q] == o;
      if (dup) continue;
      if (np == MAX_OPERANDS) {
        pass_explain(x->ctx, PASS, I(x, b)->info->name,
                     "not merged with %%%s: more than %d operands",
                     I(x, a)->info->name, MAX_OPERANDS);
        return false;
      }
      srcs[np++] = o;
    }
  }
  const char *an = I(x, a)->info->name, *bn = I(x, b)->info->name;
  ir_comp_id fc = ir_comp_add(m, arena_printf(m->arena, "fused_multi_%s_%s", an, bn));
  ir_comp_get(m, fc)->is_fusion = true;
  ir_id params[MAX_OPERANDS];
  for (int k = 0; k < np; k++) {
    ir_inst_proto p;
    memset(&p, 0, sizeof p);
    p.op = IR_OP_PARAMETER;
    p.shape = *I(x, srcs[k])->shape;
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
  ir_inst_proto fu;
  memset(&fu, 0, sizeof fu);
  fu.op = IR_OP_FUSION;
  fu.name = ir_unique_name(m, "fusion");
  fu.shape = ir_shape_clone(m->arena, fcp->insts.v[t].shape);
  fu.nops = np;
  fu.ops = srcs;
  fu.ncalls = 1;
  fu.calls = &fc;
  fu.a.fusion_kind = (fa.a->fusion_kind == IR_FUSION_INPUT || fb.a->fusion_kind == IR_FUSION_INPUT)
                         ? IR_FUSION_INPUT
                         : IR_FUSION_LOOP;
  fu.a.preferred_type = IR_TYPE_INVALID;
  fu.loc = fb.info->loc;
  ir_id mf = ir_inst_add(m, x->c, &fu);
  ir_attrs g0, g1;
  memset(&g0, 0, sizeof g0);
  memset(&g1, 0, sizeof g1);
  g1.index = 1;
  ir_id e0 = ir_build(m, x->c, IR_OP_GET_TUPLE_ELEMENT, &mf, 1, &g0, NULL, 0,
                      fa.info->loc);
  ir_id e1 = ir_build(m, x->c, IR_OP_GET_TUPLE_ELEMENT, &mf, 1, &g1, NULL, 0,
                      fb.info->loc);
  pass_explain(x->ctx, PASS, I(x, mf)->info->name,
               "%s fusion of %%%s and %%%s: %s",
               consumer ? "producer-consumer" : "sibling", an, bn, why);
  /* Users of a and b (or the merged fusions that took their place) read
   * the tuple's elements now. M, e0 and e1 sit at b's position. */
  ir_comp *cp = ir_comp_get(m, x->c);
  x->pos[mf] = x->pos[e0] = x->pos[e1] = x->pos[b];
  for (int w = 0; w < 2; w++) {
    ir_id f = w ? b : a;
    for (int j = x->ustart[f]; j < x->ustart[f] + x->ucount[f]; j++) {
      ir_id u = x->users[j];
      while (x->done[u])
        u = x->repl[u];
      ir_inst *in = &cp->insts.v[u];
      for (int k = 0; k < in->nops; k++)
        in->ops[k] = in->ops[k] == a ? e0 : in->ops[k] == b ? e1 : in->ops[k];
    }
  }
  if (cp->root == a) cp->root = e0;
  if (cp->root == b) cp->root = e1;
  x->repl[a] = x->repl[b] = mf;
  x->done[a] = x->done[b] = 1;
  return true;
}

static int64_t bytes_of(const ir_shape *s) {
  return ir_shape_is_array(s) ? ir_shape_count(s) * ir_type_size(s->type) : 0;
}

/* Do all users of a other than b come after b? Then the merged fusion
 * can take b's position and every position stays topological. */
static bool users_after(mctx *x, ir_id a, ir_id b) {
  for (int j = x->ustart[a]; j < x->ustart[a] + x->ucount[a]; j++) {
    ir_id u = x->users[j];
    while (x->done[u])
      u = x->repl[u];
    if (u != b && x->pos[u] <= x->pos[b]) return false;
  }
  return true;
}

/* Merges b with a fusion it reads (producer-consumer) or with an earlier
 * fusion reading a common operand (sibling); true when it merged. */
static bool try_merge(mctx *x, ir_id b, const int32_t *ustart, const int32_t *ucount,
                      const int32_t *users, const int32_t *uses, int n0) {
  ir_module *m = x->m;
  pass_ctx *ctx = x->ctx;
  const ir_shape *sb = space(x, b);
  /* producer-consumer first: b reads a fusion a with other users */
  for (int k = 0; k < I(x, b)->nops; k++) {
    ir_id a = I(x, b)->ops[k];
    const ir_shape *sa = a < n0 && !x->done[a] ? space(x, a) : NULL;
    if (!sa || I(x, a)->a->fusion_kind != IR_FUSION_LOOP || uses[a] < 2) continue;
    if (!same_dims(I(x, a)->shape, sb)) {
      pass_explain(ctx, PASS, I(x, b)->info->name,
                   "not merged with its producer %%%s: other iteration space",
                   I(x, a)->info->name);
      continue;
    }
    if (!users_after(x, a, b)) {
      pass_explain(ctx, PASS, I(x, b)->info->name,
                   "not merged with its producer %%%s: it has a user placed before",
                   I(x, a)->info->name);
      continue;
    }
    if (depends(x, b, a, true)) {
      pass_explain(ctx, PASS, I(x, b)->info->name,
                   "not merged with its producer %%%s: another path leads from it (a cycle)",
                   I(x, a)->info->name);
      continue;
    }
    const char *why = arena_printf(m->arena, "%lld bytes of %%%s not read back",
                                   (long long)bytes_of(I(x, a)->shape),
                                   I(x, a)->info->name);
    if (merge(x, a, b, true, why)) return true;
  }
  /* siblings: an earlier fusion reading a common operand */
  for (int k = 0; k < I(x, b)->nops; k++) {
    ir_id o = I(x, b)->ops[k];
    if (o >= n0 || bytes_of(I(x, o)->shape) <= ir_type_size(I(x, o)->shape->type)) continue;
    for (int j = ustart[o]; j < ustart[o] + ucount[o]; j++) {
      ir_id a = users[j];
      if (a >= b || x->done[a]) continue;
      const ir_shape *sa = space(x, a);
      if (!sa) continue;
      if (!same_dims(sa, sb)) {
        pass_explain(ctx, PASS, I(x, b)->info->name,
                     "not merged with sibling %%%s: other iteration space",
                     I(x, a)->info->name);
        continue;
      }
      if (!users_after(x, a, b)) {
        pass_explain(ctx, PASS, I(x, b)->info->name,
                     "not merged with sibling %%%s: it has a user placed before",
                     I(x, a)->info->name);
        continue;
      }
      if (depends(x, b, a, false)) {
        pass_explain(ctx, PASS, I(x, b)->info->name,
                     "not merged with sibling %%%s: depends on it",
                     I(x, a)->info->name);
        continue;
      }
      const char *why = arena_printf(m->arena, "%%%s (%lld bytes) read once",
                                     I(x, o)->info->name,
                                     (long long)bytes_of(I(x, o)->shape));
      if (merge(x, a, b, false, why)) return true;
    }
  }
  return false;
}

/* Merges the fusions of computation c. */
static bool mof_comp(ir_module *m, pass_ctx *ctx, ir_comp_id c) {
  int n0 = ir_comp_get(m, c)->insts.n;
  if (n0 == 0) return false;
  mctx x;
  memset(&x, 0, sizeof x);
  x.m = m;
  x.c = c;
  x.ctx = ctx;
  x.cap = 3 * n0 + 16; /* each merge adds 3 instructions; at most n0/2 merges */
  x.done = arena_alloc(m->arena, (size_t)x.cap);
  x.seen = arena_array(m->arena, (size_t)x.cap, sizeof(uint32_t));
  x.stack = arena_array(m->arena, (size_t)x.cap, sizeof(ir_id));
  x.repl = arena_array(m->arena, (size_t)x.cap, sizeof(ir_id));
  x.pos = arena_array(m->arena, (size_t)x.cap, sizeof(int32_t));
  for (int i = 0; i < n0; i++)
    x.pos[i] = i;
  /* use lists of the original instructions (distinct users, ascending) */
  const ir_comp *cp = ir_comp_get(m, x.c);
  int32_t *uses = ir_comp_use_counts(m, x.c);
  int32_t *ustart = arena_array(m->arena, (size_t)n0 + 1, sizeof(int32_t));
  int32_t *fill = arena_array(m->arena, (size_t)n0 + 1, sizeof(int32_t));
  for (int i = 0; i < n0; i++)
    ustart[i + 1] = ustart[i] + uses[i];
  int32_t *users = arena_array(m->arena, (size_t)ustart[n0] + 1, sizeof(int32_t));
  for (int i = 0; i < n0; i++)
    for (int k = 0; k < cp->insts.v[i].nops; k++) {
      ir_id o = cp->insts.v[i].ops[k];
      if (fill[o] && users[ustart[o] + fill[o] - 1] == i) continue;
      users[ustart[o] + fill[o]++] = i;
    }
  x.ustart = ustart;
  x.ucount = fill;
  x.users = users;
  /* One scan in order; a merged fusion is done and its tuple-rooted
   * replacement is no candidate, so each fusion merges at most once. */
  bool changed = false;
  for (ir_id b = 0; b < n0; b++) {
    if (x.done[b] || !space(&x, b)) continue;
    changed |= try_merge(&x, b, ustart, fill, users, uses, n0);
  }
  if (changed) pr_sweep(m, x.c);
  return changed;
}

bool pass_mof(ir_module *m, pass_ctx *ctx) {
  if (m->entry == IR_NONE) return false;
  ir_comp_id *cs = arena_array(m->arena, (size_t)m->comps.n + 1, sizeof *cs);
  int n = pr_control_comps(m, cs);
  bool changed = false;
  for (int k = 0; k < n; k++) changed |= mof_comp(m, ctx, cs[k]);
  return changed;
}
