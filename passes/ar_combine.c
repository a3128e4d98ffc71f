/* ar_combine.c: the all-reduce combiner (XLA's AllReduceCombiner, Horovod's
 * tensor fusion): independent all-reduces of one kind become one
 * all-reduce of one flat array, so a board pays one collective's set-up,
 * handshakes and per-step latencies instead of one per gradient.
 *
 * require: a verified module.  provide: the same values bit for bit; no
 * all-reduce with more than one operand (a tuple all-reduce is flattened
 * even when it is alone) whose group size is known, when the combiner is
 * on: ctx->target's all_reduce_combine_bytes > 0 (a TPU target's default,
 * PASS_AR_COMBINE_DEFAULT; off elsewhere unless asked for) is the limit.
 *
 * Kind: the same element type, replica_groups (as lists of replica ids),
 * use_global_device_ids and reduction (one computation, or two of one
 * scalar binary op on (parameter 0, parameter 1)). Independent: neither
 * reaches the other through operands. Groups form greedily in instruction
 * order: an all-reduce joins the first one's group while the group's
 * combined bytes stay within the threshold (its first member always fits).
 *
 * The fold order is base/coll.h's, which depends on where an element sits:
 * element i of an operand of C elements belongs to chunk c of coll_chunk(C,
 * n, c) and folds the members g[c+1], ..., g[c]. A plain concatenation
 * would move elements into other chunks, so the combined array is laid out
 * chunk-major: combined chunk c holds chunk c of every operand in order,
 * padded with zeros to the largest combined chunk Q; the array has n x Q
 * elements, so its chunk c is exactly [c Q, (c+1) Q) and every element
 * folds in the order it did before. The group size n is the groups' size
 * (all groups of one size), else, with no groups, the module's written
 * replica_count; an all-reduce whose n is unknown stays as it is.
 *
 * Around the new all-reduce: reshape of each operand to one dimension,
 * slices of its chunks, broadcast zeros for the padding, one concatenate;
 * after it: slices back, one concatenate and a reshape per operand, and a
 * tuple for each all-reduce that returned one. --explain names every
 * combined all-reduce, what it left alone and why, and a count:
 *   all-reduce-combiner: all-reduce.9: combined %a (f32[784,256]), ...
 *   all-reduce-combiner: -: 7 all-reduces (7 operands) became 1 */
#include "passes/rewrite.h"

#include "base/coll.h"

#define PASS "all-reduce-combiner"

/* One all-reduce that may take part. */
typedef struct cand {
  ir_id id;
  int n;         /* group size */
  int64_t bytes; /* its operands' bytes */
} cand;

typedef struct comb {
  ir_module *m;
  ir_comp_id c;
  pass_ctx *ctx;
  arena *s;         /* scratch, per computation */
  int64_t limit;    /* bytes */
  long long nrep;   /* the written replica_count, 0 when none */
  const char **made; /* names of the all-reduces this pass built */
  int nmade, cap;
  int combined, operands, became; /* counts for the summary */
} comb;

static const ir_inst *at(comb *k, ir_id i) { return ir_inst_get(k->m, k->c, i); }

static bool made_here(const comb *k, const char *name) {
  for (int i = 0; i < k->nmade; i++)
    if (k->made[i] == name) return true;
  return false;
}

/* The module's written replica_count, 0 when its header has none. */
static long long written_replicas(const ir_module *m) {
  for (int i = 0; i < m->nraw; i++)
    if (m->raw[i].name && strcmp(m->raw[i].name, "replica_count") == 0)
      return ir_module_count_attr(m, "replica_count");
  return 0;
}

/* The group size of in (see the contract), 0 when unknown or unequal. */
static int group_size(const comb *k, const ir_inst *in) {
  const ir_replica_groups *rg = &in->a->replica_groups;
  if (rg->ngroups == 0) return k->nrep > 0 && k->nrep <= (1 << 20) ? (int)k->nrep : 0;
  for (int g = 1; g < rg->ngroups; g++)
    if (rg->groups[g].n != rg->groups[0].n) return 0;
  return rg->groups[0].n;
}

static bool groups_equal(const ir_replica_groups *p, const ir_replica_groups *q) {
  if (p->ngroups != q->ngroups) return false;
  for (int g = 0; g < p->ngroups; g++) {
    if (p->groups[g].n != q->groups[g].n) return false;
    for (int j = 0; j < p->groups[g].n; j++)
      if (p->groups[g].v[j] != q->groups[g].v[j]) return false;
  }
  return true;
}

/* The scalar binary op a reduction computes on (parameter 0, parameter 1),
 * IR_OP_INVALID-like -1 when it is anything else. */
static int simple_op(const ir_module *m, ir_comp_id f) {
  const ir_comp *cp = &m->comps.v[f];
  if (cp->nparams != 2 || cp->root == IR_NONE) return -1;
  const ir_inst *r = &cp->insts.v[cp->root];
  if (r->nops != 2 || r->ncalls || r->shape->rank != 0) return -1;
  const ir_inst *x = &cp->insts.v[r->ops[0]], *y = &cp->insts.v[r->ops[1]];
  if (x->op != IR_OP_PARAMETER || y->op != IR_OP_PARAMETER || x->a->parameter_number != 0 ||
      y->a->parameter_number != 1 || !ir_shape_equal(x->shape, y->shape) ||
      !ir_shape_equal(x->shape, r->shape))
    return -1;
  return (int)r->op;
}

static bool same_kind(comb *k, const ir_inst *a, const ir_inst *b) {
  if (a->a->use_global_device_ids != b->a->use_global_device_ids ||
      !groups_equal(&a->a->replica_groups, &b->a->replica_groups))
    return false;
  if (at(k, a->ops[0])->shape->type != at(k, b->ops[0])->shape->type) return false;
  if (a->calls[0] == b->calls[0]) return true;
  int x = simple_op(k->m, a->calls[0]);
  return x >= 0 && x == simple_op(k->m, b->calls[0]);
}

/* The all-reduces of computation c that may take part, in instruction
 * order; explains the live ones left out. */
static int candidates(comb *k, const uint8_t *live, cand *out) {
  const ir_comp *cp = ir_comp_get(k->m, k->c);
  int nc = 0;
  for (ir_id i = 0; i < cp->insts.n; i++) {
    const ir_inst *in = &cp->insts.v[i];
    if (in->dead || !live[i] || in->op != IR_OP_ALL_REDUCE || made_here(k, in->info->name))
      continue;
    const char *why = NULL;
    int n = group_size(k, in);
    int64_t bytes = 0;
    if (in->ncalls != 1 || in->nops < 1)
      why = "not one reduction over operands";
    else if (n == 0)
      why = in->a->replica_groups.ngroups ? "replica groups of different sizes: no one chunking"
                                          : "no replica_groups and no replica_count: the group "
                                            "size, which fixes the fold order, is unknown";
    for (int j = 0; !why && j < in->nops; j++) {
      const ir_shape *s = at(k, in->ops[j])->shape;
      if (s->type == IR_TUPLE || s->type != at(k, in->ops[0])->shape->type)
        why = "operands of different element types";
      else
        bytes += ir_shape_count(s) * ir_type_size(s->type);
    }
    if (why) {
      pass_explain(k->ctx, PASS, in->info->name, "left alone: %s", why);
      continue;
    }
    out[nc++] = (cand){i, n, bytes};
  }
  return nc;
}

/* anc[i * w .. ] (w words): the candidates instruction i reaches through
 * operands (idx[i]: i's candidate number or -1). */
static uint64_t *ancestors(comb *k, const int *idx, int w) {
  const ir_comp *cp = ir_comp_get(k->m, k->c);
  uint64_t *anc = arena_array(k->s, (size_t)cp->insts.n * (size_t)w, sizeof(uint64_t));
  for (ir_id i = 0; i < cp->insts.n; i++) {
    const ir_inst *in = &cp->insts.v[i];
    uint64_t *a = anc + (size_t)i * (size_t)w;
    for (int j = 0; j < in->nops; j++) {
      ir_id o = in->ops[j];
      const uint64_t *b = anc + (size_t)o * (size_t)w;
      for (int q = 0; q < w; q++) a[q] |= b[q];
      if (idx[o] >= 0) a[idx[o] / 64] |= UINT64_C(1) << (idx[o] % 64);
    }
  }
  return anc;
}

/* The first group worth rewriting (two or more all-reduces, or one with
 * several operands) into grp; its size, 0 when there is none. */
static int first_group(comb *k, const cand *cs, int nc, int *grp) {
  const ir_comp *cp = ir_comp_get(k->m, k->c);
  int *idx = arena_array(k->s, (size_t)cp->insts.n, sizeof(int));
  for (int i = 0; i < cp->insts.n; i++) idx[i] = -1;
  for (int j = 0; j < nc; j++) idx[cs[j].id] = j;
  int w = (nc + 63) / 64;
  uint64_t *anc = ancestors(k, idx, w);
  uint8_t *taken = arena_alloc(k->s, (size_t)nc);
  uint64_t *in_grp = arena_array(k->s, (size_t)w, sizeof(uint64_t));
  for (int j = 0; j < nc; j++) {
    if (taken[j]) continue;
    memset(in_grp, 0, (size_t)w * sizeof(uint64_t));
    int g = 0;
    int64_t bytes = 0;
    const ir_inst *first = at(k, cs[j].id);
    for (int l = j; l < nc; l++) {
      const ir_inst *in = at(k, cs[l].id);
      const uint64_t *a = anc + (size_t)cs[l].id * (size_t)w;
      bool dep = false;
      for (int q = 0; q < w; q++) dep |= (a[q] & in_grp[q]) != 0;
      if (taken[l] || dep || (g && (bytes + cs[l].bytes > k->limit || !same_kind(k, first, in))))
        continue;
      taken[l] = 1;
      in_grp[l / 64] |= UINT64_C(1) << (l % 64);
      grp[g++] = l;
      bytes += cs[l].bytes;
    }
    if (g > 1 || first->nops > 1) return g;
  }
  return 0;
}

/* ---- building ------------------------------------------------------------ */

static ir_id build(comb *k, ir_op op, const ir_id *ops, int nops, const ir_attrs *a) {
  return ir_build(k->m, k->c, op, ops, nops, a, NULL, 0, (src_loc){0});
}

static ir_id reshape(comb *k, ir_id x, const ir_shape *s) {
  if (ir_shape_equal(at(k, x)->shape, s)) return x;
  return ir_build_shaped(k->m, k->c, IR_OP_RESHAPE, &x, 1, NULL, NULL, 0, s, (src_loc){0});
}

/* x[lo, hi) of a one-dimensional x. */
static ir_id slice1(comb *k, ir_id x, int64_t lo, int64_t hi) {
  if (lo == 0 && hi == at(k, x)->shape->dims[0]) return x;
  int64_t st = 1;
  ir_attrs a = ir_attrs_none;
  a.slice_start = (ir_ints){1, &lo};
  a.slice_limit = (ir_ints){1, &hi};
  a.slice_stride = (ir_ints){1, &st};
  return build(k, IR_OP_SLICE, &x, 1, &a);
}

/* Zeros of shape s. */
static ir_id zeros(comb *k, const ir_shape *s) {
  ir_inst_proto p;
  memset(&p, 0, sizeof p);
  p.op = IR_OP_CONSTANT;
  p.shape = ir_shape_scalar(s->type);
  p.a = ir_attrs_none;
  p.a.literal = ir_literal_create(k->m->arena, &p.shape);
  ir_id z = ir_inst_add(k->m, k->c, &p);
  ir_attrs a = ir_attrs_none;
  return ir_build_shaped(k->m, k->c, IR_OP_BROADCAST, &z, 1, &a, NULL, 0, s, (src_loc){0});
}

/* One dimensional concatenation of parts[0..n) (n >= 1). */
static ir_id concat1(comb *k, const ir_id *parts, int n) {
  if (n == 1) return parts[0];
  ir_attrs a = ir_attrs_none;
  int64_t d = 0;
  a.dimensions = (ir_ints){1, &d};
  return build(k, IR_OP_CONCATENATE, parts, n, &a);
}

/* Rewrites the all-reduces cs[grp[0..g)] into one (see the contract). */
static void rewrite(comb *k, const cand *cs, const int *grp, int g) {
  const ir_inst *first = at(k, cs[grp[0]].id);
  int n = cs[grp[0]].n, np = 0;
  for (int j = 0; j < g; j++) np += at(k, cs[grp[j]].id)->nops;
  ir_id *flat = arena_array(k->s, (size_t)np, sizeof(ir_id));
  int64_t *cnt = arena_array(k->s, (size_t)np, sizeof(int64_t));
  const ir_shape **shp = arena_array(k->s, (size_t)np, sizeof *shp);
  ir_type t = at(k, first->ops[0])->shape->type;
  int p = 0;
  for (int j = 0; j < g; j++)
    for (int q = 0; q < at(k, cs[grp[j]].id)->nops; q++, p++) {
      ir_id o = at(k, cs[grp[j]].id)->ops[q];
      shp[p] = at(k, o)->shape;
      cnt[p] = ir_shape_count(shp[p]);
      ir_shape f = ir_shape_array(t, 1, &cnt[p]);
      flat[p] = reshape(k, o, &f);
    }
  int64_t Q = 0, total = 0; /* the largest combined chunk; the elements */
  for (p = 0; p < np; p++) total += cnt[p];
  for (int c = 0; c < n; c++) {
    int64_t s = 0, lo, hi;
    for (p = 0; p < np; p++) coll_chunk(cnt[p], n, c, &lo, &hi), s += hi - lo;
    if (s > Q) Q = s;
  }
  ir_id *parts = arena_array(k->s, (size_t)(np + 1) * (size_t)n + 1, sizeof(ir_id));
  int npart = 0;
  for (int c = 0; c < n && Q; c++) {
    int64_t s = 0, lo, hi;
    for (p = 0; p < np; p++) {
      coll_chunk(cnt[p], n, c, &lo, &hi);
      if (hi > lo) parts[npart++] = slice1(k, flat[p], lo, hi);
      s += hi - lo;
    }
    if (s < Q) parts[npart++] = zeros(k, &(ir_shape){.type = t, .rank = 1, .dims = {Q - s}});
  }
  ir_id ar = IR_NONE;
  if (Q) {
    ir_id x = concat1(k, parts, npart);
    first = at(k, cs[grp[0]].id);
    ir_attrs a = ir_attrs_none;
    a.replica_groups = first->a->replica_groups;
    a.use_global_device_ids = first->a->use_global_device_ids;
    a.channel_id = first->a->channel_id;
    ir_comp_id f = first->calls[0];
    ar = ir_build(k->m, k->c, IR_OP_ALL_REDUCE, &x, 1, &a, &f, 1, (src_loc){0});
    if (k->nmade == k->cap) {
      k->cap = k->cap ? 2 * k->cap : 8;
      const char **v = arena_array(k->m->arena, (size_t)k->cap, sizeof *v);
      if (k->nmade) memcpy(v, k->made, (size_t)k->nmade * sizeof *v);
      k->made = v;
    }
    k->made[k->nmade++] = at(k, ar)->info->name;
  }
  /* Back: operand p's chunk c sits at c Q + (chunk c of the operands before p). */
  ir_id *back = arena_array(k->s, (size_t)np, sizeof(ir_id));
  int64_t *off = arena_array(k->s, (size_t)n, sizeof(int64_t));
  for (p = 0; p < np; p++) {
    npart = 0;
    for (int c = 0; c < n && cnt[p]; c++) {
      int64_t lo, hi;
      coll_chunk(cnt[p], n, c, &lo, &hi);
      if (hi > lo) parts[npart++] = slice1(k, ar, (int64_t)c * Q + off[c], (int64_t)c * Q + off[c] + hi - lo);
      off[c] += hi - lo;
    }
    back[p] = cnt[p] ? reshape(k, concat1(k, parts, npart), shp[p]) : zeros(k, shp[p]);
  }
  strbuf why;
  sb_init(&why);
  pr_map mp = pr_map_make(k->s, ir_comp_get(k->m, k->c)->insts.n);
  p = 0;
  for (int j = 0; j < g; j++) {
    const ir_inst *in = at(k, cs[grp[j]].id);
    int nops = in->nops;
    bool tuple = in->shape->type == IR_TUPLE;
    sb_printf(&why, "%s%%%s (", j ? ", " : "", in->info->name);
    ir_shape_print(&why, in->shape, false);
    sb_putc(&why, ')');
    mp.v[cs[grp[j]].id] = tuple ? build(k, IR_OP_TUPLE, back + p, nops, NULL) : back[p];
    p += nops;
  }
  pr_apply(k->m, k->c, &mp);
  pass_explain(k->ctx, PASS, ar != IR_NONE ? at(k, ar)->info->name : "-",
               "combined %s: %lld elements in one all-reduce over groups of %d (chunk-major, "
               "%lld of them padding, so every element keeps its chunk and its fold order)",
               sb_str(&why), (long long)Q * n, n, (long long)(Q * n - total));
  sb_free(&why);
  k->combined += g;
  k->operands += np;
  k->became += 1;
}

static bool combine_comp(comb *k) {
  bool changed = false;
  for (;;) {
    arena_mark mk = arena_get_mark(k->s);
    const ir_comp *cp = ir_comp_get(k->m, k->c);
    if (cp->root == IR_NONE) return changed;
    uint8_t *live = arena_alloc(k->s, (size_t)cp->insts.n + 1);
    pr_mark_live(k->s, cp, live);
    cand *cs = arena_array(k->s, (size_t)cp->insts.n + 1, sizeof(cand));
    int nc = candidates(k, live, cs);
    int *grp = arena_array(k->s, (size_t)nc + 1, sizeof(int));
    int g = nc ? first_group(k, cs, nc, grp) : 0;
    if (g) rewrite(k, cs, grp, g);
    arena_reset(k->s, mk);
    if (!g) return changed;
    pr_sweep(k->m, k->c);
    changed = true;
  }
}

bool pass_ar_combine(ir_module *m, pass_ctx *ctx) {
  int64_t limit = ctx->target ? ctx->target->all_reduce_combine_bytes : 0;
  if (limit <= 0) return false;
  comb k = {.m = m, .ctx = ctx, .s = arena_create(), .limit = limit, .nrep = written_replicas(m)};
  bool changed = false;
  for (ir_comp_id c = 0; c < m->comps.n; c++) {
    k.c = c;
    changed |= combine_comp(&k);
  }
  arena_destroy(k.s);
  if (k.became)
    pass_explain(ctx, PASS, NULL, "%d all-reduces (%d operands) became %d", k.combined, k.operands,
                 k.became);
  return changed;
}
