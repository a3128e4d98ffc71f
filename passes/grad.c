/* grad.c: reverse-mode differentiation of a module's entry computation
 * (ir_grad_module, ir_value_and_grad_module; contract in grad.h).
 *
 * require: a verified module whose entry reaches its root through arrays
 * and one level of tuples. Fusions and calls in the entry are inlined
 * first (the called computations stay, unused). provide: a verified module whose entry is the
 * original entry (renamed NAME_vjp or NAME_value_and_grad) with the
 * cotangents appended as parameters and a backward section appended after
 * the forward one: instructions in reverse order of the forward section,
 * each active instruction with a nonzero adjoint running its rule from the
 * table (grad_rules.c), contributions to one value summed in the order
 * they arrive. Under remat the backward section reads no forward value
 * but parameters and constants: each forward value a rule reads is
 * recomputed (once) just before its first use there. Instructions the
 * result does not reach are removed. The module is marked scheduled
 * (is_scheduled=true), so its text keeps that order. */
#include "passes/grad_internal.h"

#include <stdarg.h>
#include <stdlib.h>

void ir_grad_options_init(ir_grad_options *o) { memset(o, 0, sizeof *o); }

/* ---- context helpers -------------------------------------------------- */

const ir_inst *gr_inst(const gr_ctx *g, ir_id x) {
  return &g->m->comps.v[g->c].insts.v[x];
}

const ir_shape *gr_shape(const gr_ctx *g, ir_id x) { return gr_inst(g, x)->shape; }

bool gr_fail(gr_ctx *g, const char *fmt, ...) {
  const ir_inst *in = gr_inst(g, g->cur);
  strbuf s;
  sb_init(&s);
  sb_printf(&s, "'%s' (%s): ", in->info->name ? in->info->name : "?", ir_op_name(in->op));
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&s, fmt, ap);
  va_end(ap);
  src_loc l = in->info->loc;
  if (!l.file) l.file = g->m->source_file;
  if (l.file && l.line > 0)
    base_fail(g->err, g->errlen, ST_UNSUPPORTED, "%s:%d:%d: error: %s", l.file, (int)l.line, (int)l.col, sb_str(&s));
  else
    base_fail(g->err, g->errlen, ST_UNSUPPORTED, "error: %s", sb_str(&s));
  sb_free(&s);
  g->st = ST_UNSUPPORTED;
  return false;
}

bool gr_wants(const gr_ctx *g, ir_id x) { return x < g->nfwd && g->active[x]; }

void gr_accum(gr_ctx *g, ir_id x, ir_id v) {
  if (!gr_wants(g, x) || v == IR_NONE) return;
  if (!ir_shape_equal(gr_shape(g, x), gr_shape(g, v)))
    base_die("grad: the %s rule made an adjoint of the wrong shape", ir_op_name(gr_inst(g, g->cur)->op));
  g->adj[x] = g->adj[x] == IR_NONE ? v : gr_bin(g, IR_OP_ADD, g->adj[x], v);
}

/* Under remat: the copy of forward value x the backward pass reads, made
 * with the copies of its operands first (an explicit stack, so long
 * chains do not recurse). */
static ir_id recompute(gr_ctx *g, ir_id x) {
  VEC(ir_id) stack = {0};
  VEC_PUSH(g->m->arena, stack, x);
  while (stack.n) {
    ir_id y = stack.v[stack.n - 1];
    const ir_inst *in = gr_inst(g, y);
    if (g->recomp[y] != IR_NONE) {
      stack.n--;
      continue;
    }
    if (in->op == IR_OP_PARAMETER || in->op == IR_OP_CONSTANT) {
      g->recomp[y] = y;
      stack.n--;
      continue;
    }
    bool ready = true;
    for (int k = 0; k < in->nops; k++)
      if (g->recomp[in->ops[k]] == IR_NONE) {
        VEC_PUSH(g->m->arena, stack, in->ops[k]);
        ready = false;
      }
    if (!ready) continue;
    ir_inst_proto p = ir_inst_proto_of(in);
    p.name = ir_unique_name(g->m, arena_printf(g->m->arena, "%s.remat", in->info->name ? in->info->name : "v"));
    p.ops = arena_array(g->m->arena, (size_t)(in->nops ? in->nops : 1), sizeof(ir_id));
    for (int k = 0; k < in->nops; k++) p.ops[k] = g->recomp[in->ops[k]];
    g->recomp[y] = ir_inst_add(g->m, g->c, &p);
    stack.n--;
  }
  return g->recomp[x];
}

ir_id gr_fwd(gr_ctx *g, ir_id x) {
  if (!g->remat || x >= g->nfwd) return x;
  return recompute(g, x);
}

ir_id gr_operand(gr_ctx *g, ir_id i, int k) { return gr_fwd(g, gr_inst(g, i)->ops[k]); }

/* ---- builders --------------------------------------------------------- */

ir_id gr_build(gr_ctx *g, ir_op op, const ir_id *ops, int nops, const ir_attrs *a) {
  return ir_build(g->m, g->c, op, ops, nops, a, NULL, 0, g->loc);
}

ir_id gr_param(gr_ctx *g, const ir_shape *s, int k, const char *name) {
  ir_inst_proto p;
  memset(&p, 0, sizeof p);
  p.op = IR_OP_PARAMETER;
  p.shape = *s;
  ir_shape_default_layout(&p.shape);
  p.name = ir_unique_name(g->m, name);
  p.loc = g->loc;
  p.a = ir_attrs_none;
  p.a.parameter_number = k;
  return ir_inst_add(g->m, g->c, &p);
}

ir_id gr_gte(gr_ctx *g, ir_id t, int k) {
  ir_attrs a = ir_attrs_none;
  a.index = k;
  return gr_build(g, IR_OP_GET_TUPLE_ELEMENT, &t, 1, &a);
}

ir_id gr_un(gr_ctx *g, ir_op op, ir_id x) { return gr_build(g, op, &x, 1, NULL); }

ir_id gr_bin(gr_ctx *g, ir_op op, ir_id x, ir_id y) { return gr_build(g, op, (ir_id[]){x, y}, 2, NULL); }

ir_id gr_select(gr_ctx *g, ir_id p, ir_id x, ir_id y) {
  return gr_build(g, IR_OP_SELECT, (ir_id[]){p, x, y}, 3, NULL);
}

ir_id gr_cmp(gr_ctx *g, ir_cmp_dir dir, ir_id x, ir_id y) {
  ir_attrs a = ir_attrs_none;
  a.cmp_dir = dir;
  return gr_build(g, IR_OP_COMPARE, (ir_id[]){x, y}, 2, &a);
}

ir_id gr_constant(gr_ctx *g, ir_literal *lit) {
  ir_inst_proto p;
  memset(&p, 0, sizeof p);
  p.op = IR_OP_CONSTANT;
  p.shape = lit->shape;
  p.loc = g->loc;
  p.a = ir_attrs_none;
  p.a.literal = lit;
  return ir_inst_add(g->m, g->c, &p);
}

ir_id gr_splat(gr_ctx *g, const ir_shape *s, double v) {
  ir_shape sc = ir_shape_scalar(s->type);
  ir_literal *lit = ir_literal_create(g->m->arena, &sc);
  ir_literal_set_f64(lit, 0, v);
  ir_id k = gr_constant(g, lit);
  if (s->rank == 0) return k;
  return gr_broadcast(g, k, s, NULL);
}

ir_id gr_like(gr_ctx *g, ir_id x, double v) { return gr_splat(g, gr_shape(g, x), v); }

ir_id gr_convert(gr_ctx *g, ir_id x, ir_type t) {
  const ir_shape *s = gr_shape(g, x);
  if (s->type == t) return x;
  ir_shape r = ir_shape_array(t, s->rank, s->dims);
  return ir_build_shaped(g->m, g->c, IR_OP_CONVERT, &x, 1, NULL, NULL, 0, &r, g->loc);
}

ir_id gr_reshape(gr_ctx *g, ir_id x, const ir_shape *s) {
  const ir_shape *xs = gr_shape(g, x);
  ir_shape r = ir_shape_array(xs->type, s->rank, s->dims);
  if (ir_shape_equal(xs, &r)) return x;
  return ir_build_shaped(g->m, g->c, IR_OP_RESHAPE, &x, 1, NULL, NULL, 0, &r, g->loc);
}

ir_id gr_broadcast(gr_ctx *g, ir_id x, const ir_shape *s, const int64_t *dims) {
  const ir_shape *xs = gr_shape(g, x);
  ir_shape r = ir_shape_array(xs->type, s->rank, s->dims);
  ir_attrs a = ir_attrs_none;
  a.dimensions.n = xs->rank;
  a.dimensions.v = (int64_t *)dims;
  return ir_build_shaped(g->m, g->c, IR_OP_BROADCAST, &x, 1, &a, NULL, 0, &r, g->loc);
}

ir_id gr_transpose(gr_ctx *g, ir_id x, const int64_t *perm) {
  int r = gr_shape(g, x)->rank;
  bool id = true;
  for (int k = 0; k < r; k++) id = id && perm[k] == k;
  if (id) return x;
  ir_attrs a = ir_attrs_none;
  a.dimensions.n = r;
  a.dimensions.v = (int64_t *)perm;
  return gr_build(g, IR_OP_TRANSPOSE, &x, 1, &a);
}

ir_comp_id gr_add_comp(gr_ctx *g, ir_type t) {
  if (g->add_comp[t] != IR_NONE) return g->add_comp[t];
  ir_module *m = g->m;
  ir_comp_id c = ir_comp_add(m, ir_unique_name(m, arena_printf(m->arena, "grad_add_%s", ir_type_name(t))));
  ir_inst_proto p;
  memset(&p, 0, sizeof p);
  p.op = IR_OP_PARAMETER;
  p.shape = ir_shape_scalar(t);
  p.loc = g->loc;
  p.a = ir_attrs_none;
  p.name = ir_unique_name(m, "x");
  ir_id x = ir_inst_add(m, c, &p);
  p.a.parameter_number = 1;
  p.name = ir_unique_name(m, "y");
  ir_id y = ir_inst_add(m, c, &p);
  ir_comp_get(m, c)->root = ir_build(m, c, IR_OP_ADD, (ir_id[]){x, y}, 2, NULL, NULL, 0, g->loc);
  ir_comp_get(m, c)->loc = g->loc;
  ir_comp_finish(m, c);
  return g->add_comp[t] = c;
}

ir_id gr_sum(gr_ctx *g, ir_id x, const int64_t *dims, int n) {
  if (n == 0) return x;
  ir_type t = gr_shape(g, x)->type;
  ir_id zero = gr_splat(g, &(ir_shape){.type = t}, 0.0);
  ir_attrs a = ir_attrs_none;
  a.dimensions.n = n;
  a.dimensions.v = (int64_t *)dims;
  ir_comp_id add = gr_add_comp(g, t);
  return ir_build(g->m, g->c, IR_OP_REDUCE, (ir_id[]){x, zero}, 2, &a, &add, 1, g->loc);
}

ir_id gr_sum_all(gr_ctx *g, ir_id x) {
  int64_t dims[IR_MAX_RANK];
  int r = gr_shape(g, x)->rank;
  for (int k = 0; k < r; k++) dims[k] = k;
  return gr_sum(g, x, dims, r);
}

ir_id gr_pad(gr_ctx *g, ir_id x, ir_id v, const ir_padding_dim *p) {
  int r = gr_shape(g, x)->rank;
  bool none = true;
  for (int k = 0; k < r; k++) none = none && !p[k].lo && !p[k].hi && !p[k].interior;
  if (none) return x;
  ir_attrs a = ir_attrs_none;
  a.npad = r;
  a.padding = (ir_padding_dim *)p;
  return gr_build(g, IR_OP_PAD, (ir_id[]){x, v}, 2, &a);
}

ir_id gr_slice(gr_ctx *g, ir_id x, const int64_t *start, const int64_t *limit, const int64_t *stride) {
  const ir_shape *s = gr_shape(g, x);
  bool whole = true;
  for (int k = 0; k < s->rank; k++) whole = whole && start[k] == 0 && limit[k] == s->dims[k] && stride[k] == 1;
  if (whole) return x;
  ir_attrs a = ir_attrs_none;
  a.slice_start = (ir_ints){s->rank, (int64_t *)start};
  a.slice_limit = (ir_ints){s->rank, (int64_t *)limit};
  a.slice_stride = (ir_ints){s->rank, (int64_t *)stride};
  return gr_build(g, IR_OP_SLICE, &x, 1, &a);
}

/* ---- the transformation ----------------------------------------------- */

static bool shape_has_float(const ir_shape *s) {
  if (s->type != IR_TUPLE) return ir_type_is_float(s->type);
  for (int k = 0; k < s->ntuple; k++)
    if (shape_has_float(&s->tuple[k])) return true;
  return false;
}

static base_status bad_arg(char *err, size_t errlen, const char *fmt, int v) {
  return base_fail(err, errlen, ST_INVALID_ARGUMENT, fmt, v);
}

/* Checks the wrt list against the entry's parameters and writes the
 * chosen parameter numbers into *out_wrt (arena a). */
static base_status choose_wrt(arena *a, const ir_comp *e, const ir_grad_options *o, int **out_wrt,
                              int *out_n, char *err, size_t errlen) {
  int *w = arena_array(a, (size_t)(e->nparams ? e->nparams : 1) + (size_t)(o->nwrt > 0 ? o->nwrt : 0),
                       sizeof(int));
  int n = 0;
  if (!o->wrt) {
    for (int p = 0; p < e->nparams; p++)
      if (ir_type_is_float(e->insts.v[e->params[p]].shape->type)) w[n++] = p;
  } else {
    for (int k = 0; k < o->nwrt; k++) {
      int p = o->wrt[k];
      if (p < 0 || p >= e->nparams)
        return bad_arg(err, errlen, "wrt: the entry has no parameter %d", p);
      for (int j = 0; j < k; j++)
        if (o->wrt[j] == p) return bad_arg(err, errlen, "wrt: parameter %d is named twice", p);
      if (!ir_type_is_float(e->insts.v[e->params[p]].shape->type))
        return bad_arg(err, errlen, "wrt: parameter %d is not floating point", p);
      w[n++] = p;
    }
  }
  *out_wrt = w;
  *out_n = n;
  return ST_OK;
}

static ir_id add_param(ir_module *m, ir_comp_id c, const ir_shape *s, int number, src_loc loc) {
  ir_inst_proto p;
  memset(&p, 0, sizeof p);
  p.op = IR_OP_PARAMETER;
  p.shape = *s;
  ir_shape_default_layout(&p.shape);
  p.name = ir_unique_name(m, "cotangent");
  p.loc = loc;
  p.a = ir_attrs_none;
  p.a.parameter_number = number;
  return ir_inst_add(m, c, &p);
}

/* Forward activity: an instruction is active when it has floating-point
 * values and an operand is active (or it is a chosen parameter). */
static void mark_active(gr_ctx *g, const int *wrt, int nwrt) {
  const ir_comp *cp = &g->m->comps.v[g->c];
  for (int k = 0; k < nwrt; k++) g->active[cp->params[wrt[k]]] = 1;
  for (ir_id i = 0; i < g->nfwd; i++) {
    const ir_inst *in = &cp->insts.v[i];
    if (in->op == IR_OP_PARAMETER || !shape_has_float(in->shape)) continue;
    for (int k = 0; k < in->nops; k++)
      if (g->active[in->ops[k]]) g->active[i] = 1;
  }
}

/* Cotangent parameters (numbered from *next on) for the leaves of tuple
 * value t, depth first. When t is made by a tuple instruction its
 * operands take them directly (so nested tuples work); otherwise its
 * elements must be arrays, whose adjoints t carries. */
static bool seed_tuple(gr_ctx *g, ir_id t, int *next, char *err, size_t errlen) {
  const ir_shape *s = gr_shape(g, t);
  bool direct = gr_inst(g, t)->op == IR_OP_TUPLE;
  if (!direct) {
    g->adjt[t] = arena_array(g->m->arena, (size_t)(s->ntuple ? s->ntuple : 1), sizeof(ir_id));
    for (int k = 0; k < s->ntuple; k++) g->adjt[t][k] = IR_NONE;
  }
  for (int k = 0; k < s->ntuple; k++) {
    ir_id o = direct ? gr_inst(g, t)->ops[k] : IR_NONE;
    if (s->tuple[k].type == IR_TUPLE) {
      if (!direct) {
        g->st = base_fail(err, errlen, ST_INVALID_ARGUMENT,
                          "grad: result %d of the entry is a nested tuple not made by a tuple instruction", *next);
        return false;
      }
      if (!seed_tuple(g, o, next, err, errlen)) return false;
      continue;
    }
    ir_id p = add_param(g->m, g->c, &s->tuple[k], (*next)++, g->m->comps.v[g->c].loc);
    if (direct)
      gr_accum(g, o, p);
    else
      g->adjt[t][k] = p;
  }
  return true;
}

/* Seeds the adjoint of the root: with one cotangent parameter per result
 * (first numbered `first`), or with 1 (seed_one). */
static bool seed(gr_ctx *g, int first, bool seed_one, char *err, size_t errlen) {
  ir_comp *cp = &g->m->comps.v[g->c];
  ir_id root = cp->root;
  const ir_shape *rs = cp->insts.v[root].shape;
  src_loc loc = cp->loc;
  if (seed_one) {
    if (rs->type == IR_TUPLE || rs->rank != 0 || !ir_type_is_float(rs->type)) {
      g->st = base_fail(err, errlen, ST_INVALID_ARGUMENT,
                        "value_and_grad: the entry's result must be a floating-point scalar");
      return false;
    }
    g->adj[root] = gr_splat(g, rs, 1.0);
    return true;
  }
  if (rs->type != IR_TUPLE) {
    g->adj[root] = add_param(g->m, g->c, rs, first, loc);
    return true;
  }
  int next = first;
  return seed_tuple(g, root, &next, err, errlen);
}

static bool has_adjoint(const gr_ctx *g, ir_id i) {
  if (g->adj[i] != IR_NONE) return true;
  if (!g->adjt[i]) return false;
  const ir_shape *s = gr_shape(g, i);
  for (int k = 0; k < s->ntuple; k++)
    if (g->adjt[i][k] != IR_NONE) return true;
  return false;
}

/* The backward section: every active instruction with an adjoint, last
 * first, runs its rule. */
static bool backward(gr_ctx *g) {
  for (ir_id i = g->nfwd - 1; i >= 0; i--) {
    if (!g->active[i] || !has_adjoint(g, i)) continue;
    const ir_inst *in = gr_inst(g, i);
    if (in->op == IR_OP_PARAMETER) continue;
    g->cur = i;
    g->loc = in->info->loc;
    if (ir_is_topk_custom_call(in)) { /* the one custom call with a rule */
      if (!gr_topk(g, i, g->adj[i])) return false;
      continue;
    }
    switch (pass_grad_kind_of(in->op)) {
    case PASS_GRAD_ZERO:
      continue;
    case PASS_GRAD_RULE:
      if (!gr_rule_of(in->op)(g, i, g->adj[i])) return false;
      continue;
    default:
      return gr_fail(g, "has no gradient: %s", pass_grad_why_none(in->op));
    }
  }
  return true;
}

/* The root: (value?, grads...) with zeros for parameters nothing reached. */
static void finish_root(gr_ctx *g, const int *wrt, int nwrt, bool with_value) {
  ir_comp *cp = &g->m->comps.v[g->c];
  ir_id value = cp->root;
  g->loc = cp->loc;
  ir_id *outs = arena_array(g->m->arena, (size_t)nwrt + 1, sizeof(ir_id));
  int n = 0;
  if (with_value) outs[n++] = value;
  for (int k = 0; k < nwrt; k++) {
    ir_id p = g->m->comps.v[g->c].params[wrt[k]];
    outs[n++] = g->adj[p] != IR_NONE ? g->adj[p] : gr_like(g, p, 0.0);
  }
  ir_id t = gr_build(g, IR_OP_TUPLE, outs, n, NULL);
  g->m->comps.v[g->c].root = t;
}

/* Replaces every fusion and call of computation c by a copy of the
 * computation it calls (nested ones too), so that the rules see only
 * plain ops; the called computations stay in the module unused. */
ir_id ir_grad_inline(ir_module *m, ir_comp_id into, ir_comp_id callee, const ir_id *args) {
  const ir_comp *cc = &m->comps.v[callee];
  ir_id *map = arena_array(m->arena, (size_t)cc->insts.n + 1, sizeof(ir_id));
  for (ir_id j = 0; j < cc->insts.n; j++) {
    const ir_inst *cj = &m->comps.v[callee].insts.v[j];
    if (cj->dead) continue;
    if (cj->op == IR_OP_PARAMETER) {
      map[j] = args[cj->a->parameter_number];
      continue;
    }
    ir_inst_proto p = ir_inst_proto_of(cj);
    p.name = ir_unique_name(m, cj->info->name ? cj->info->name : ir_op_name(cj->op));
    p.ops = arena_array(m->arena, (size_t)(cj->nops ? cj->nops : 1), sizeof(ir_id));
    for (int k = 0; k < cj->nops; k++) p.ops[k] = map[cj->ops[k]];
    map[j] = ir_inst_add(m, into, &p);
  }
  return map[m->comps.v[callee].root];
}

static void inline_calls(ir_module *m, ir_comp_id c) {
  bool any = false;
  for (ir_id i = 0; i < m->comps.v[c].insts.n; i++) {
    const ir_inst *in = &m->comps.v[c].insts.v[i];
    if (in->dead || (in->op != IR_OP_FUSION && in->op != IR_OP_CALL) || in->ncalls != 1) continue;
    ir_id *args = arena_dup(m->arena, in->ops, sizeof(ir_id) * (size_t)(in->nops ? in->nops : 1));
    ir_id root = ir_grad_inline(m, c, in->calls[0], args);
    ir_comp *cp = ir_comp_get(m, c);
    for (ir_id u = 0; u < cp->insts.n; u++)
      for (int k = 0; k < cp->insts.v[u].nops; k++)
        if (cp->insts.v[u].ops[k] == i) cp->insts.v[u].ops[k] = root;
    if (cp->root == i) cp->root = root;
    cp->insts.v[i].dead = true;
    any = true;
  }
  if (!any) return;
  ir_comp_compact(m, c);
  if (!ir_comp_topo_sort(m, c)) base_die("grad: inlining made a cycle");
}

/* Removes what the root does not reach (parameters stay), keeping the
 * order: forward section, then backward section. */
static void sweep(ir_module *m, ir_comp_id c) {
  ir_comp *cp = ir_comp_get(m, c);
  uint8_t *live = arena_alloc(m->arena, (size_t)cp->insts.n + 1);
  pr_mark_live(m->arena, cp, live);
  for (ir_id i = 0; i < cp->insts.n; i++)
    if (!live[i] && cp->insts.v[i].op != IR_OP_PARAMETER) cp->insts.v[i].dead = true;
  ir_comp_compact(m, c);
  ir_comp_finish(m, c);
}

/* Differentiates computation c of m in place (the entry's contract of
 * ir_grad_module / ir_value_and_grad_module). On failure c may hold dead
 * additions and, without vg, cotangent parameters. */
static base_status grad_comp(ir_module *m, ir_comp_id c, const ir_grad_options *o, bool vg, char *err,
                             size_t errlen) {
  gr_ctx g;
  memset(&g, 0, sizeof g);
  g.m = m;
  g.c = c;
  g.err = err;
  g.errlen = errlen;
  g.remat = o->remat;
  for (int t = 0; t < IR_TYPE_INVALID; t++) g.add_comp[t] = IR_NONE;
  inline_calls(m, g.c);
  if (!ir_comp_topo_sort(m, g.c)) base_die("grad: the computation has a cycle");
  ir_comp_finish(m, g.c);
  ir_comp *cp = ir_comp_get(m, g.c);
  g.nfwd = cp->insts.n;
  int nparams = cp->nparams;
  int *wrt = NULL, nwrt = 0;
  base_status st = choose_wrt(m->arena, cp, o, &wrt, &nwrt, err, errlen);
  if (st != ST_OK) return st;
  g.active = arena_alloc(m->arena, (size_t)g.nfwd + 1);
  g.adj = arena_array(m->arena, (size_t)g.nfwd + 1, sizeof(ir_id));
  g.adjt = arena_array(m->arena, (size_t)g.nfwd + 1, sizeof(ir_id *));
  g.recomp = arena_array(m->arena, (size_t)g.nfwd + 1, sizeof(ir_id));
  for (int i = 0; i < g.nfwd; i++) g.adj[i] = g.recomp[i] = IR_NONE;
  mark_active(&g, wrt, nwrt);
  g.cur = cp->root;
  g.loc = cp->loc;
  if (!seed(&g, nparams, vg, err, errlen) || !backward(&g)) return g.st;
  finish_root(&g, wrt, nwrt, vg);
  cp = ir_comp_get(m, g.c);
  cp->name = ir_unique_name(m, arena_printf(m->arena, "%s_%s", cp->name, vg ? "value_and_grad" : "vjp"));
  sweep(m, g.c);
  return ST_OK;
}

static void verify_or_die(const ir_module *m) {
  diag *d = diag_create();
  if (ir_verify(m, d)) base_die("grad: the VJP does not verify: %s", diag_text(d));
  diag_destroy(d);
}

static base_status transform(const ir_module *src, const ir_grad_options *o, bool vg, ir_module **out,
                             char *err, size_t errlen) {
  *out = NULL;
  ir_grad_options defaults;
  ir_grad_options_init(&defaults);
  if (!o) o = &defaults;
  if (src->entry == IR_NONE) return base_fail(err, errlen, ST_INVALID_ARGUMENT, "grad: the module has no entry");
  ir_module *m = ir_module_clone(src);
  base_status st = grad_comp(m, m->entry, o, vg, err, errlen);
  if (st != ST_OK) {
    ir_module_destroy(m);
    return st;
  }
  m->is_scheduled = true; /* the order grad_comp made is the schedule the text keeps */
  verify_or_die(m);
  *out = m;
  return ST_OK;
}

base_status ir_grad_computation(ir_module *m, ir_comp_id c, const ir_grad_options *o, bool value_and_grad,
                                ir_comp_id *out_c, char *err, size_t errlen) {
  ir_grad_options defaults;
  ir_grad_options_init(&defaults);
  if (!o) o = &defaults;
  ir_comp_id nc = ir_comp_add(m, ir_unique_name(m, ir_comp_get(m, c)->name));
  const ir_comp *src = &m->comps.v[c];
  ir_comp_get(m, nc)->loc = src->loc;
  for (ir_id i = 0; i < m->comps.v[c].insts.n; i++) {
    ir_inst_proto p = ir_inst_proto_of(&m->comps.v[c].insts.v[i]);
    p.name = ir_unique_name(m, p.name ? p.name : ir_op_name(p.op));
    ir_id ni = ir_inst_add(m, nc, &p);
    ir_inst_get(m, nc, ni)->dead = m->comps.v[c].insts.v[i].dead;
  }
  ir_comp_get(m, nc)->root = m->comps.v[c].root;
  ir_comp_finish(m, nc);
  *out_c = nc;
  return grad_comp(m, nc, o, value_and_grad, err, errlen);
}

base_status ir_grad_module(const ir_module *m, const ir_grad_options *o, ir_module **out, char *err,
                           size_t errlen) {
  return transform(m, o, false, out, err, errlen);
}

base_status ir_value_and_grad_module(const ir_module *m, const ir_grad_options *o, ir_module **out,
                                     char *err, size_t errlen) {
  return transform(m, o, true, out, err, errlen);
}

int ir_grad_saved_values(const ir_module *vjp, int nprimal) {
  const ir_comp *cp = &vjp->comps.v[vjp->entry];
  int n = cp->insts.n;
  uint8_t *bwd = calloc((size_t)n + 1, 1);
  if (!bwd) base_die("out of memory");
  ir_id first = n;
  for (ir_id i = 0; i < n; i++) {
    const ir_inst *in = &cp->insts.v[i];
    if (in->op == IR_OP_PARAMETER) bwd[i] = in->a->parameter_number >= nprimal;
    for (int k = 0; k < in->nops && in->op != IR_OP_PARAMETER; k++) bwd[i] |= bwd[in->ops[k]];
    if (bwd[i] && in->op != IR_OP_PARAMETER && first == n) first = i;
  }
  int saved = 0;
  for (ir_id i = 0; i < first; i++) {
    const ir_inst *in = &cp->insts.v[i];
    if (in->op == IR_OP_PARAMETER || in->op == IR_OP_CONSTANT) continue;
    bool used = false;
    for (ir_id j = first; j < n && !used; j++)
      for (int k = 0; k < cp->insts.v[j].nops; k++) used = used || cp->insts.v[j].ops[k] == i;
    saved += used;
  }
  free(bwd);
  return saved;
}
