/* fusion.c: XLA-style instruction fusion of the computations that run as
 * control flow: the entry, and the bodies, conditions, branches and
 * callees of its whiles, conditionals and calls, transitively.
 * require: a verified module, operands before users (simplify, cse and dce
 * before it give better groups).  provide: groups of instructions replaced
 * by `fusion` instructions calling new fused computations (is_fusion set,
 * parameters = the group's outside operands in first-use order, root = the
 * group's root), values unchanged bit for bit (the fused computation holds
 * the very same instructions). Kinds:
 *   kLoop    elementwise and data-movement instructions (one loop nest);
 *   kInput   a reduce with its elementwise producers (the reduce is the root);
 *   kOutput  a dot or convolution with its elementwise epilogue (bias add,
 *            activation, residual add): every instruction between the
 *            dot and the root is elementwise over the dot's dims;
 *   kCustom  attention: dot(Q, K) [* scalar], a softmax over the last dim
 *            (reduce, subtract, exp, reduce, divide) and dot(P, V), with
 *            the reshapes/transposes that feed Q, K, V and follow the
 *            result (split/merge heads) when only the pattern uses them;
 *            the TPU backend runs it as one kernel with the scores in VMEM
 *            (backend/tpu/attention.c). Formed first, before the rules
 *            below, when the target runs it as one kernel
 *            (pass_target.attention_refusal).
 *
 * Rules (consumers are visited before producers, root first):
 *   - a producer joins its users' fusion when all of its users are in that
 *     one fusion (it is then computed once, inside);
 *   - a cheap producer (scalar constant, iota, broadcast of a scalar) joins
 *     every fusion that uses it, duplicated; other producers with users in
 *     several fusions, or used outside any fusion (by the root, a tuple, a
 *     dot operand...), are not fused: their value goes through memory;
 *   - reductions are only fusion roots: a reduce never joins its consumer;
 *   - dot/convolution join their consumer as the head of a kOutput fusion
 *     only when that fusion is elementwise over their dims and has no other
 *     dot, convolution or reduce; their own operands are never fused (they
 *     stream into the MXU from memory);
 *   - parameters, non-scalar constants (they stay in HBM), tuples,
 *     get-tuple-element, reduce-window, all-reduce and existing fusions are
 *     never fused;
 *   - a fusion holds at most MAX_MEMBERS instructions;
 *   - a group is materialised only when it has two or more instructions
 *     other than scalar constants, or when its root is a reduce (a reduce
 *     alone becomes a kInput fusion, so multi-output fusion can merge it).
 * Each decision and refusal is recorded with pass_explain:
 *   fusion: %x: fused into %root (kLoop)
 *   fusion: %x: not fused: producer %x has 3 users and is not cheap
 * and each fusion made is listed with its kind and members. */
#include "passes/rewrite.h"

#define PASS "fusion"

enum { MAX_MEMBERS = 64 };

typedef struct group {
  ir_id root;
  ir_fusion_kind kind;
  bool heavy; /* holds a dot, convolution or reduce */
  bool rows;  /* a row fusion: reduces over the trailing dims of its root's
                 dims with their producers and consumers */
  int nmembers, cap;
  ir_id *members; /* in the order they joined: root first, then producers
                     in decreasing id order; cap entries in the arena */
} group;

typedef VEC(int32_t) ivec;

typedef struct fctx {
  ir_module *m;
  ir_comp_id c;
  pass_ctx *ctx;
  int n;
  int32_t *ustart, *users; /* CSR use lists */
  bool *outside;           /* used by the root (a use from outside) */
  bool *stays;             /* fused as a cheap duplicate but also used
                              outside: the original instruction survives */
  ivec *mem;               /* groups each instruction belongs to */
  ir_id *clone, *param;    /* materialise() scratch, IR_NONE between uses */
  uint8_t *dep;            /* epilogue_refusal() scratch, 0 between uses */
  VEC(group) groups;
  int32_t *attn;        /* attention pattern of each member, or -1 */
  VEC(ir_id) attn_root; /* per pattern: its root (the group's root) */
  VEC(int) attn_group;  /* per pattern: its group once made, or -1 */
} fctx;

static const ir_inst *I(fctx *f, ir_id i) { return &ir_comp_get(f->m, f->c)->insts.v[i]; }
static const char *kind_name(ir_fusion_kind k) {
  static const char *const names[] = {"kLoop", "kInput", "kOutput", "kCustom"};
  return names[k];
}

static void build_users(fctx *f) {
  const ir_comp *cp = ir_comp_get(f->m, f->c);
  int n = f->n;
  arena *a = f->m->arena;
  f->ustart = arena_array(a, (size_t)n + 1, sizeof(int32_t));
  int32_t *cnt = arena_array(a, (size_t)n + 1, sizeof(int32_t));
  for (int i = 0; i < n; i++)
    for (int k = 0; k < cp->insts.v[i].nops; k++)
      cnt[cp->insts.v[i].ops[k]]++;
  for (int i = 0; i < n; i++)
    f->ustart[i + 1] = f->ustart[i] + cnt[i];
  f->users = arena_array(a, (size_t)f->ustart[n] + 1, sizeof(int32_t));
  memset(cnt, 0, sizeof(int32_t) * (size_t)n);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < cp->insts.v[i].nops; k++) {
      ir_id o = cp->insts.v[i].ops[k];
      /* one entry per distinct user: i's entries are the latest ones */
      if (cnt[o] && f->users[f->ustart[o] + cnt[o] - 1] == i) continue;
      f->users[f->ustart[o] + cnt[o]++] = i;
    }
  /* compress: distinct users only */
  int32_t *s2 = arena_array(a, (size_t)n + 1, sizeof(int32_t));
  int w = 0;
  for (int i = 0; i < n; i++) {
    s2[i] = w;
    for (int j = 0; j < cnt[i]; j++)
      f->users[w++] = f->users[f->ustart[i] + j];
  }
  s2[n] = w;
  f->ustart = s2;
  f->outside = arena_array(a, (size_t)n + 1, sizeof(bool));
  f->stays = arena_array(a, (size_t)n + 1, sizeof(bool));
  if (cp->root != IR_NONE) f->outside[cp->root] = true;
}

static bool in_group(fctx *f, ir_id i, int g) {
  for (int k = 0; k < f->mem[i].n; k++)
    if (f->mem[i].v[k] == g) return true;
  return false;
}

static void join(fctx *f, ir_id i, int g) {
  VEC_PUSH(f->m->arena, f->mem[i], g);
  group *gr = &f->groups.v[g];
  if (gr->nmembers == gr->cap) {
    int nc = gr->cap ? 2 * gr->cap : 4;
    ir_id *nm = arena_array(f->m->arena, (size_t)nc, sizeof(ir_id));
    if (gr->nmembers) memcpy(nm, gr->members, sizeof(ir_id) * (size_t)gr->nmembers);
    gr->members = nm;
    gr->cap = nc;
  }
  gr->members[gr->nmembers++] = i;
}

static bool is_elemwise(const ir_inst *in) { return (ir_op_flags(in->op) & OPF_ELEMWISE) != 0; }

/* Instructions that can sit inside a loop/input/output fusion as producers. */
static bool loop_fusible(const ir_inst *in) {
  if (is_elemwise(in)) return true;
  switch (in->op) {
  case IR_OP_BROADCAST:
  case IR_OP_RESHAPE:
  case IR_OP_TRANSPOSE:
  case IR_OP_SLICE:
  case IR_OP_CONCATENATE:
  case IR_OP_PAD:
  case IR_OP_REVERSE:
  case IR_OP_CONVERT:
  case IR_OP_BITCAST_CONVERT:
  case IR_OP_IOTA:
  case IR_OP_COPY:
    return true;
  case IR_OP_CONSTANT:
    return ir_shape_is_array(in->shape) && in->shape->rank == 0;
  default:
    return false;
  }
}

static bool same_dims(const ir_shape *a, const ir_shape *b) {
  if (!ir_shape_is_array(a) || !ir_shape_is_array(b) || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* An op a dot's epilogue may apply to each element of its result: the
 * elementwise ops and conversions (a bf16 result of an f32 dot is the
 * mixed-precision layer's output). */
static bool epilogue_op(const ir_inst *in) { return is_elemwise(in) || in->op == IR_OP_CONVERT; }

/* Can dot/convolution d head group g as a kOutput fusion? Every member of
 * g that depends on d must be elementwise over d's dims. */
static const char *epilogue_refusal(fctx *f, ir_id d, int g) {
  const group *gr = &f->groups.v[g];
  if (gr->heavy) return "its consumer's fusion already holds a dot, convolution or reduce";
  if (gr->kind != IR_FUSION_LOOP) return "its consumer's fusion is not a loop fusion";
  if (!same_dims(I(f, gr->root)->shape, I(f, d)->shape))
    return "the epilogue's result has other dims than the dot";
  f->dep[d] = 1;
  const char *why = NULL;
  for (int k = gr->nmembers - 1; k >= 0; k--) { /* increasing ids */
    ir_id i = gr->members[k];
    if (i <= d) continue;
    const ir_inst *in = I(f, i);
    for (int q = 0; q < in->nops; q++)
      f->dep[i] |= f->dep[in->ops[q]];
    if (f->dep[i] && !why && !epilogue_op(in))
      why = arena_printf(f->m->arena, "the epilogue's %%%s (%s) is not an elementwise op or convert",
                         in->info->name ? in->info->name : "?", ir_op_name(in->op));
    else if (f->dep[i] && !why && !same_dims(in->shape, I(f, d)->shape))
      why = arena_printf(f->m->arena, "the epilogue's %%%s has other dims than the dot",
                         in->info->name ? in->info->name : "?");
  }
  f->dep[d] = 0;
  for (int k = 0; k < gr->nmembers; k++)
    f->dep[gr->members[k]] = 0;
  return why;
}

/* Why producer i may not join group g (NULL: it may). */
static const char *refusal(fctx *f, ir_id i, int g) {
  const ir_inst *in = I(f, i);
  group *gr = &f->groups.v[g];
  if (gr->nmembers >= MAX_MEMBERS) return "the fusion already has the maximum size";
  for (int j = f->ustart[i]; j < f->ustart[i + 1]; j++) {
    const ir_inst *u = I(f, f->users[j]);
    if (in_group(f, f->users[j], g) && (u->op == IR_OP_DOT || u->op == IR_OP_CONVOLUTION))
      return arena_printf(
          f->m->arena, "feeds the MXU operand of %%%s (operands of a dot stay in memory)",
          u->info->name);
  }
  if (in->op == IR_OP_DOT || in->op == IR_OP_CONVOLUTION) return epilogue_refusal(f, i, g);
  return NULL;
}

static int new_group(fctx *f, ir_id root) {
  group g;
  memset(&g, 0, sizeof g);
  g.root = root;
  g.kind = IR_FUSION_LOOP;
  const ir_inst *in = I(f, root);
  if (in->op == IR_OP_REDUCE) g.kind = IR_FUSION_INPUT, g.heavy = true;
  VEC_PUSH(f->m->arena, f->groups, g);
  join(f, root, f->groups.n - 1);
  return f->groups.n - 1;
}

static bool root_candidate(const ir_inst *in) {
  if (in->op == IR_OP_REDUCE) return ir_shape_is_array(in->shape);
  return loop_fusible(in) && in->op != IR_OP_CONSTANT && ir_shape_is_array(in->shape);
}

/* Why reduce i may not join group g (NULL: it may) as a row reduce: one
 * add, maximum or minimum of f32 over exactly the trailing dims of an
 * operand with the dims of g's root, g a loop fusion or a row fusion
 * (kInput whose reduces all have such operands), and a reduction the
 * target runs as one row kernel (pass_target.row_reduce_refusal): the TPU
 * backend's loads a block of rows once into VMEM and runs every reduce
 * and elementwise op of the group on it there. */
static const char *row_refusal(fctx *f, ir_id i, int g) {
  const ir_inst *in = I(f, i);
  const group *gr = &f->groups.v[g];
  if (in->nops != 2 || in->shape->type != IR_F32 || in->ncalls != 1)
    return "a reduce is only the root of its own fusion (kInput) unless it is a single f32 row reduce";
  const ir_comp *rc = ir_comp_get(f->m, in->calls[0]);
  int live = 0;
  for (int k = 0; k < rc->insts.n; k++) live += !rc->insts.v[k].dead;
  const ir_inst *rr = rc->root >= 0 ? &rc->insts.v[rc->root] : NULL;
  if (!rr || live != 3 || rr->nops != 2 ||
      (rr->op != IR_OP_ADD && rr->op != IR_OP_MAXIMUM && rr->op != IR_OP_MINIMUM) ||
      rc->insts.v[rr->ops[0]].op != IR_OP_PARAMETER || rc->insts.v[rr->ops[1]].op != IR_OP_PARAMETER ||
      rr->ops[0] == rr->ops[1])
    return "a reduce is only the root of its own fusion (kInput) unless its reducer is one add, maximum or minimum";
  const ir_shape *os = I(f, in->ops[0])->shape;
  bool red[IR_MAX_RANK] = {0};
  for (int k = 0; k < in->a->dimensions.n; k++) red[in->a->dimensions.v[k]] = true;
  int64_t R = 1, O = 1;
  int nr = in->a->dimensions.n;
  for (int d = 0; d < os->rank; d++) {
    if (red[d] != (d >= os->rank - nr))
      return "a reduce is only the root of its own fusion (kInput) unless it reduces the trailing dims";
    if (red[d]) R *= os->dims[d];
    else O *= os->dims[d];
  }
  if (nr < 1 || R < 1) return "a reduce of no elements is only the root of its own fusion";
  if ((gr->heavy && !gr->rows) || (gr->kind != IR_FUSION_LOOP && !gr->rows))
    return "its users' fusion holds a dot, convolution or another kind of reduce";
  if (!same_dims(I(f, gr->root)->shape, os))
    return "its users' fusion is not over the reduce's operand dims";
  const pass_target *t = f->ctx->target;
  if (t && t->row_reduce_refusal) return t->row_reduce_refusal(t, rr->op, R, O, f->m->arena);
  return NULL;
}

static void visit(fctx *f, ir_id i) {
  const ir_inst *in = I(f, i);
  if (in->dead) return;
  if (f->attn[i] >= 0) { /* an attention pattern's member (attn_find) */
    int pat = f->attn[i];
    ir_id root = f->attn_root.v[pat];
    if (i == root) {
      int g = new_group(f, i);
      f->groups.v[g].kind = IR_FUSION_CUSTOM;
      f->groups.v[g].heavy = true;
      f->attn_group.v[pat] = g;
    } else {
      join(f, i, f->attn_group.v[pat]);
      pass_explain(f->ctx, PASS, in->info->name,
                   "fused into %%%s (attention)", I(f, root)->info->name);
    }
    return;
  }
  int nu = f->ustart[i + 1] - f->ustart[i];
  bool cheap = pr_is_cheap(ir_comp_get(f->m, f->c), i);
  /* The groups of i's users, and whether any use is outside every group. */
  int gs[MAX_MEMBERS];
  int ng = 0;
  bool outside = f->outside[i], multi_user_group = false;
  for (int j = f->ustart[i]; j < f->ustart[i + 1]; j++) {
    ir_id u = f->users[j];
    if (f->mem[u].n == 0 || f->stays[u]) outside = true; /* u survives outside */
    if (f->mem[u].n > 1) multi_user_group = true;
    for (int k = 0; k < f->mem[u].n; k++) {
      int g = f->mem[u].v[k];
      bool seen = false;
      for (int q = 0; q < ng; q++)
        seen |= gs[q] == g;
      if (!seen && ng < MAX_MEMBERS) gs[ng++] = g;
    }
  }
  bool fusible_op = loop_fusible(in) || in->op == IR_OP_DOT || in->op == IR_OP_CONVOLUTION;
  if (ng > 0) {
    const char *why = NULL;
    if (!fusible_op) {
      switch (in->op) {
      case IR_OP_PARAMETER:
        why = NULL;
        break; /* not worth a line */
      case IR_OP_CONSTANT:
        why = "a non-scalar constant stays in memory";
        break;
      case IR_OP_REDUCE:
        if (ng == 1 && !outside && !multi_user_group) {
          why = row_refusal(f, i, gs[0]);
          if (!why) {
            group *gr = &f->groups.v[gs[0]];
            join(f, i, gs[0]);
            gr->kind = IR_FUSION_INPUT;
            gr->heavy = gr->rows = true;
            pass_explain(f->ctx, PASS, in->info->name,
                         "fused into %%%s (kInput, row fusion)",
                         I(f, gr->root)->info->name);
            return;
          }
        } else {
          why = "a reduce is only the root of its own fusion (kInput)";
        }
        break;
      case IR_OP_FUSION:
        why = "already a fusion";
        break;
      default:
        why = arena_printf(f->m->arena, "%s is not fusible", ir_op_name(in->op));
        break;
      }
      if (why) pass_explain(f->ctx, PASS, in->info->name, "not fused: %s",
                            why);
    } else if (cheap) {
      bool refused = false;
      for (int q = 0; q < ng; q++) {
        const char *r = refusal(f, i, gs[q]);
        if (r) {
          pass_explain(f->ctx, PASS, in->info->name,
                       "not fused into %%%s: %s",
                       I(f, f->groups.v[gs[q]].root)->info->name, r);
          refused = true;
          continue;
        }
        join(f, i, gs[q]);
        pass_explain(f->ctx, PASS, in->info->name, "fused into %%%s (%s)%s",
                     I(f, f->groups.v[gs[q]].root)->info->name,
                     kind_name(f->groups.v[gs[q]].kind),
                     ng > 1 || outside ? ", duplicated: cheap" : "");
      }
      if (!outside && !refused) return;
      f->stays[i] = true; /* the original is still needed */
    } else if (outside || ng > 1 || multi_user_group) {
      if (nu > 1 || (f->outside[i] && nu > 0))
        pass_explain(f->ctx, PASS, in->info->name,
                     "not fused: producer %%%s has %d users and is not cheap",
                     in->info->name,
                     nu + (f->outside[i] ? 1 : 0));
      else
        pass_explain(f->ctx, PASS, in->info->name,
                     "not fused: its user is not fused");
    } else {
      int g = gs[0];
      why = refusal(f, i, g);
      if (!why) {
        join(f, i, g);
        group *gr = &f->groups.v[g];
        if (in->op == IR_OP_DOT || in->op == IR_OP_CONVOLUTION) {
          gr->kind = IR_FUSION_OUTPUT;
          gr->heavy = true;
        }
        pass_explain(f->ctx, PASS, in->info->name, "fused into %%%s (%s)",
                     I(f, gr->root)->info->name,
                     kind_name(gr->kind));
        return;
      }
      pass_explain(f->ctx, PASS, in->info->name, "not fused into %%%s: %s",
                   I(f, f->groups.v[g].root)->info->name, why);
    }
  }
  /* Not absorbed by its users: it may head a fusion of its own. */
  if (root_candidate(in) && !(cheap && ng > 0)) new_group(f, i);
}

/* Replaces group g by a fusion instruction at its root's slot. */
static void materialise(fctx *f, int g) {
  ir_module *m = f->m;
  group gr = f->groups.v[g];
  arena *a = m->arena;
  const ir_inst *root = I(f, gr.root);
  const char *fusion_name = ir_unique_name(m, "fusion");
  ir_comp_id fc = ir_comp_add(m, arena_printf(a, "fused_%s", root->info->name));
  ir_comp_get(m, fc)->is_fusion = true;
  ir_id *clone = f->clone, *param = f->param;
  VEC(ir_id) srcs = {0};
  strbuf list;
  sb_init(&list);
  for (int mi = gr.nmembers - 1; mi >= 0; mi--) { /* increasing ids */
    ir_id i = gr.members[mi];
    ir_inst_proto proto = ir_inst_proto_of(I(f, i));
    ir_id ops[64];
    ir_id *opsp = proto.nops <= 64 ? ops : arena_array(a, (size_t)proto.nops, sizeof(ir_id));
    for (int k = 0; k < proto.nops; k++) {
      ir_id o = proto.ops[k];
      if (clone[o] != IR_NONE) {
        opsp[k] = clone[o];
        continue;
      }
      if (param[o] == IR_NONE) {
        ir_inst_proto p;
        memset(&p, 0, sizeof p);
        p.op = IR_OP_PARAMETER;
        p.shape = *I(f, o)->shape;
        p.a.parameter_number = srcs.n;
        p.name = ir_unique_name(m, arena_printf(a, "param_%d", srcs.n));
        p.loc = I(f, o)->info->loc;
        param[o] = ir_inst_add(m, fc, &p);
        VEC_PUSH(a, srcs, o);
      }
      opsp[k] = param[o];
    }
    proto.ops = opsp;
    /* A member used only inside dies with the group, and the root's slot
     * becomes the fusion: their clones keep the names. A member also used
     * outside (a duplicated cheap producer) stays: its clone is renamed. */
    bool only_inside = i == gr.root || (f->mem[i].n == 1 && !f->outside[i] && !f->stays[i]);
    for (int j = f->ustart[i]; j < f->ustart[i + 1] && only_inside && i != gr.root; j++)
      only_inside = in_group(f, f->users[j], g);
    if (!only_inside) proto.name = ir_unique_name(m, proto.name);
    clone[i] = ir_inst_add(m, fc, &proto);
    sb_printf(&list, "%s%%%s", list.len ? " " : "", I(f, i)->info->name);
  }
  ir_comp *fcp = ir_comp_get(m, fc);
  fcp->root = clone[gr.root];
  for (int mi = 0; mi < gr.nmembers; mi++)
    clone[gr.members[mi]] = IR_NONE;
  for (int k = 0; k < srcs.n; k++)
    param[srcs.v[k]] = IR_NONE;
  ir_comp_finish(m, fc);
  pass_explain(f->ctx, PASS, fusion_name, "%s fusion %s of %d instructions {%s}, %d operands",
               kind_name(gr.kind), fcp->name, gr.nmembers, sb_str(&list), srcs.n);
  sb_free(&list);
  ir_inst *ri = ir_inst_get(m, f->c, gr.root);
  ir_inst_proto fu;
  memset(&fu, 0, sizeof fu);
  fu.op = IR_OP_FUSION;
  fu.name = fusion_name;
  fu.shape = *ri->shape;
  fu.nops = srcs.n;
  fu.ops = srcs.n ? arena_dup(a, srcs.v, sizeof(ir_id) * (size_t)srcs.n) : NULL;
  fu.ncalls = 1;
  fu.calls = arena_dup(a, &fc, sizeof fc);
  fu.a.fusion_kind = gr.kind;
  fu.a.preferred_type = IR_TYPE_INVALID;
  fu.loc = ri->info->loc;
  fu.meta = ri->info->meta;
  ir_inst_assign(f->m, ri, &fu);
}

static bool worth_it(fctx *f, int g) {
  if (I(f, f->groups.v[g].root)->op == IR_OP_REDUCE) return true; /* a hero: always a kernel */
  int real = 0;
  for (int k = 0; k < f->groups.v[g].nmembers; k++)
    real += I(f, f->groups.v[g].members[k])->op != IR_OP_CONSTANT;
  return real >= 2;
}

/* ---- attention -------------------------------------------------------------------- */

static int nusers(fctx *f, ir_id i) {
  return f->ustart[i + 1] - f->ustart[i] + (f->outside[i] ? 1 : 0);
}

/* The reduce over the last dim behind broadcast b, when b repeats it
 * along that dim and is its only user. */
static ir_id attn_row(fctx *f, ir_id b, int r) {
  const ir_inst *bi = I(f, b);
  if (bi->op != IR_OP_BROADCAST || nusers(f, b) != 1 || bi->a->dimensions.n != r - 1) return IR_NONE;
  for (int k = 0; k < r - 1; k++)
    if (bi->a->dimensions.v[k] != k) return IR_NONE;
  ir_id s = bi->ops[0];
  const ir_inst *red = I(f, s);
  if (red->op != IR_OP_REDUCE || red->nops != 2 || red->a->dimensions.n != 1 ||
      red->a->dimensions.v[0] != r - 1 || nusers(f, s) != 1)
    return IR_NONE;
  return s;
}

/* Adds the reshapes/transposes that only feed `user` through op. */
static void attn_chain(fctx *f, ir_id op, ir_id *mem, int *n) {
  while ((I(f, op)->op == IR_OP_RESHAPE || I(f, op)->op == IR_OP_TRANSPOSE) && nusers(f, op) == 1 &&
         *n < MAX_MEMBERS / 2) {
    mem[(*n)++] = op;
    op = I(f, op)->ops[0];
  }
}

static bool is_scalar_splat(fctx *f, ir_id i) {
  return pr_is_cheap(ir_comp_get(f->m, f->c), i) && pr_splat(ir_comp_get(f->m, f->c), i) != NULL;
}

/* dot d2 = dot(E / bcast(sum(E)), V), E = exp(T - bcast(max(T))),
 * T = dot(Q, K) [* splat]: its members (root last) in mem, or 0. A dot
 * whose left operand is a divide is taken for an attention's P x V: when
 * the rest does not match, *why names the condition that failed. */
static int attn_match(fctx *f, ir_id d2, ir_id *mem, const char **why) {
  *why = NULL;
  const ir_inst *o = I(f, d2);
  int n = 0, r = o->shape->rank, nb = r - 2;
  if (o->op != IR_OP_DOT || r < 2 || o->shape->type != IR_F32 || o->a->lhs_batch.n != nb ||
      o->a->lhs_contracting.n != 1 || o->a->lhs_contracting.v[0] != nb + 1)
    return 0;
  ir_id p = o->ops[0];
  const ir_inst *pi = I(f, p);
  if (pi->op != IR_OP_DIVIDE) return 0;
  if (nusers(f, p) != 1) return *why = "the probabilities (the divide) have other users", 0;
  ir_id e = pi->ops[0], bz = pi->ops[1], rz = attn_row(f, bz, r);
  if (rz == IR_NONE || I(f, rz)->ops[0] != e)
    return *why = "the divisor is not the broadcast row sum of the numerator, used only there", 0;
  if (I(f, e)->op != IR_OP_EXP) return *why = "the numerator is not an exp", 0;
  if (nusers(f, e) != 2) return *why = "the exp has users outside the softmax", 0;
  mem[n++] = p;
  mem[n++] = bz;
  mem[n++] = rz;
  mem[n++] = e;
  ir_id u = I(f, e)->ops[0];
  if (I(f, u)->op != IR_OP_SUBTRACT || nusers(f, u) != 1)
    return *why = "the exp's operand is not a subtract (scores - row max) used only there", 0;
  ir_id t = I(f, u)->ops[0], bm = I(f, u)->ops[1], rm = attn_row(f, bm, r);
  if (rm == IR_NONE || I(f, rm)->ops[0] != t)
    return *why = "the subtracted value is not the broadcast row max of the scores, used only there", 0;
  if (nusers(f, t) != 2) return *why = "the scores have users outside the softmax", 0;
  mem[n++] = u;
  mem[n++] = bm;
  mem[n++] = rm;
  ir_id d1 = t;
  if (I(f, t)->op == IR_OP_MULTIPLY) {
    const ir_inst *ti = I(f, t);
    bool first = is_scalar_splat(f, ti->ops[0]);
    if (!first && !is_scalar_splat(f, ti->ops[1]))
      return *why = "the scores are multiplied by something other than a scalar splat", 0;
    d1 = ti->ops[first ? 1 : 0];
    mem[n++] = t;
    if (nusers(f, d1) != 1) return *why = "the unscaled scores have other users", 0;
  }
  const ir_inst *q = I(f, d1);
  if (q->op != IR_OP_DOT || q->shape->rank != r || q->a->lhs_batch.n != nb ||
      q->a->lhs_contracting.n != 1 || q->a->rhs_contracting.n != 1)
    return *why = "the scores are not a batched dot (Q x K) of the result's rank with one contracting "
                  "dimension",
           0;
  const ir_id vals[6] = {p, e, u, t, d1, d2};
  for (int k = 0; k < 6; k++)
    if (I(f, vals[k])->shape->type != IR_F32) return *why = "the scores or the softmax are not f32", 0;
  mem[n++] = d1;
  attn_chain(f, q->ops[0], mem, &n);
  attn_chain(f, q->ops[1], mem, &n);
  attn_chain(f, o->ops[1], mem, &n);
  mem[n++] = d2;
  /* The result's reshapes/transposes (merge heads) join as its root. */
  ir_id top = d2;
  while (nusers(f, top) == 1 && !f->outside[top] && n < MAX_MEMBERS / 2) {
    ir_id u2 = f->users[f->ustart[top]];
    if (I(f, u2)->op != IR_OP_TRANSPOSE && I(f, u2)->op != IR_OP_RESHAPE) break;
    mem[n++] = top = u2;
  }
  return n;
}

/* Marks every attention pattern the target runs as one kernel (f->attn). */
static void attn_find(fctx *f) {
  f->attn = arena_array(f->m->arena, (size_t)f->n + 1, sizeof(int32_t));
  for (int i = 0; i < f->n; i++)
    f->attn[i] = -1;
  const pass_target *t = f->ctx->target;
  ir_id mem[MAX_MEMBERS];
  for (ir_id i = 0; i < f->n; i++) {
    const ir_inst *in = I(f, i);
    if (in->dead || in->op != IR_OP_DOT) continue;
    const char *miss;
    int n = attn_match(f, i, mem, &miss);
    if (miss) pass_explain(f->ctx, PASS, I(f, i)->info->name, "attention not fused: %s", miss);
    bool taken = false;
    for (int k = 0; k < n; k++)
      taken |= f->attn[mem[k]] >= 0;
    if (n == 0 || taken) continue;
    ir_id root = mem[n - 1];
    const ir_shape *s = I(f, I(f, i)->ops[0])->shape; /* the scores [.., Sq, Sk] */
    int64_t sk = s->dims[s->rank - 1], rows = 1;
    for (int k = 0; k + 1 < s->rank; k++)
      rows *= s->dims[k];
    const char *plan = NULL;
    const char *why =
        t && t->attention_refusal ? t->attention_refusal(t, rows, sk, f->m->arena, &plan) : NULL;
    if (why) {
      pass_explain(f->ctx, PASS, I(f, i)->info->name,
                   "attention not fused: %s", why);
      continue;
    }
    for (int k = 0; k < n; k++)
      f->attn[mem[k]] = f->attn_root.n;
    VEC_PUSH(f->m->arena, f->attn_root, root);
    VEC_PUSH(f->m->arena, f->attn_group, -1);
    pass_explain(f->ctx, PASS, I(f, root)->info->name,
                 "attention of %lld query rows x %lld keys fused (kCustom)%s%s", (long long)rows,
                 (long long)sk, plan ? ": " : "", plan ? plan : "");
  }
}

/* Fuses computation c. */
static bool fuse_comp(ir_module *m, pass_ctx *ctx, ir_comp_id c) {
  fctx f;
  memset(&f, 0, sizeof f);
  f.m = m;
  f.c = c;
  f.ctx = ctx;
  f.n = ir_comp_get(m, f.c)->insts.n;
  if (f.n == 0) return false;
  build_users(&f);
  f.mem = arena_array(m->arena, (size_t)f.n, sizeof(ivec));
  f.clone = arena_array(m->arena, (size_t)f.n, sizeof(ir_id));
  f.param = arena_array(m->arena, (size_t)f.n, sizeof(ir_id));
  f.dep = arena_alloc(m->arena, (size_t)f.n);
  for (int i = 0; i < f.n; i++)
    f.clone[i] = f.param[i] = IR_NONE;
  attn_find(&f);
  for (ir_id i = f.n - 1; i >= 0; i--)
    visit(&f, i);
  bool changed = false;
  for (int g = 0; g < f.groups.n; g++) {
    if (!worth_it(&f, g)) {
      if (f.groups.v[g].nmembers > 1)
        pass_explain(ctx, PASS, I(&f, f.groups.v[g].root)->info->name,
                     "no fusion made: one instruction besides scalar constants");
      continue;
    }
    materialise(&f, g);
    changed = true;
  }
  if (changed) pr_sweep(m, f.c);
  return changed;
}

bool pass_fusion(ir_module *m, pass_ctx *ctx) {
  if (m->entry == IR_NONE) return false;
  ir_comp_id *cs = arena_array(m->arena, (size_t)m->comps.n + 1, sizeof *cs);
  int n = pr_control_comps(m, cs);
  bool changed = false;
  for (int k = 0; k < n; k++) changed |= fuse_comp(m, ctx, cs[k]);
  return changed;
}
