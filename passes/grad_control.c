/* grad_control.c: the VJP rules of while and conditional (grad_internal.h).
 *
 * Both differentiate their called computations through a flat copy: a
 * computation whose parameters are the leaves of the called computation's
 * parameter (an array, or a tuple of arrays) and whose result is its
 * result's leaves; ir_grad_computation turns it into
 *   (leaves..., one cotangent per result leaf...) -> (gradient per float leaf)
 * which the rules call by inlining it.
 *
 * while. A counted loop (lax.fori_loop and scan lower to one): a scalar
 * integer leaf starts at a constant c0, the body adds 1 to it and the
 * condition is `leaf < n` for a constant n, so the trip count
 * N = max(0, n - c0) is known. Its gradient saves: a recording loop runs
 * the body again and keeps every leaf of the state before each trip in a
 * stack [N, ...]; the reverse loop walks j = N-1 .. 0, reads state j from
 * the stacks and applies the body's VJP to the cotangent. Any other loop,
 * and every loop under remat, saves nothing: a counting loop finds N, and
 * the reverse loop recomputes state j from the initial state by an inner
 * loop of j trips (N^2 / 2 body evaluations, memory of one state).
 *
 * conditional. A backward conditional on the same predicate or index: its
 * branch b applies branch b's VJP to (operand b, the result's cotangent)
 * and returns zeros for the other branches' operands. */
#include "passes/grad_internal.h"

#include <string.h>

/* The leaves of a state shape: the array itself, or a flat tuple's
 * elements. False for a nested tuple. */
enum { MAX_LEAVES = 128, MAX_BRANCHES = 16 };
typedef struct leaves {
  int n;
  const ir_shape *s[MAX_LEAVES];
} leaves;

static bool leaves_of(const ir_shape *s, leaves *l) {
  if (s->type != IR_TUPLE) {
    l->n = 1;
    l->s[0] = s;
    return true;
  }
  if (s->ntuple > MAX_LEAVES) return false;
  l->n = s->ntuple;
  for (int k = 0; k < s->ntuple; k++) {
    if (s->tuple[k].type == IR_TUPLE) return false;
    l->s[k] = &s->tuple[k];
  }
  return true;
}

/* Switches the builders to computation c; returns the one they built in. */
static ir_comp_id enter(gr_ctx *g, ir_comp_id c) {
  ir_comp_id old = g->c;
  g->c = c;
  return old;
}

static ir_id tuple(gr_ctx *g, const ir_id *v, int n) { return gr_build(g, IR_OP_TUPLE, v, n, NULL); }

/* Leaf k of value v (v itself for an array). */
static ir_id leaf(gr_ctx *g, ir_id v, bool is_tuple, int k) { return is_tuple ? gr_gte(g, v, k) : v; }

/* The value with leaves v (a tuple, or v[0] for an array state). */
static ir_id pack(gr_ctx *g, const ir_id *v, const leaves *l, bool is_tuple) {
  return is_tuple ? tuple(g, v, l->n) : v[0];
}

static ir_id s32(gr_ctx *g, int64_t v) {
  ir_shape s = ir_shape_scalar(IR_S32);
  return gr_splat(g, &s, (double)v);
}

/* A new computation (the builders stay where they were). */
static ir_comp_id new_comp(gr_ctx *g, const char *name) {
  ir_comp_id c = ir_comp_add(g->m, ir_unique_name(g->m, name));
  ir_comp_get(g->m, c)->loc = g->loc;
  return c;
}

static void finish(gr_ctx *g, ir_comp_id c, ir_id root) {
  ir_comp_get(g->m, c)->root = root;
  ir_comp_finish(g->m, c);
}

/* Appends callee applied to the value with leaves args to the current
 * computation; returns its result's leaves in out (rl: their shapes). */
static void apply_flat(gr_ctx *g, ir_comp_id callee, const ir_id *args, const leaves *pl,
                       bool ptuple, const leaves *rl, bool rtuple, ir_id *out) {
  ir_id arg = pack(g, args, pl, ptuple);
  ir_id r = ir_grad_inline(g->m, g->c, callee, &arg);
  for (int k = 0; k < rl->n; k++) out[k] = rtuple ? gr_gte(g, r, k) : r;
}

/* The VJP of callee (parameter leaves pl, result leaves rl) through its
 * flat copy: (pl leaves, rl cotangents) -> tuple(gradient per float leaf
 * of pl). IR_NONE after gr_fail. */
static ir_comp_id flat_vjp(gr_ctx *g, ir_comp_id callee, const leaves *pl, bool ptuple, const leaves *rl,
                           bool rtuple) {
  ir_comp_id f = new_comp(g, "flat"), back = enter(g, f);
  ir_id a[MAX_LEAVES], r[MAX_LEAVES];
  for (int k = 0; k < pl->n; k++) a[k] = gr_param(g, pl->s[k], k, "leaf");
  apply_flat(g, callee, a, pl, ptuple, rl, rtuple, r);
  finish(g, f, tuple(g, r, rl->n));
  enter(g, back);
  int wrt[MAX_LEAVES], nw = 0;
  for (int k = 0; k < pl->n; k++)
    if (ir_type_is_float(pl->s[k]->type)) wrt[nw++] = k;
  ir_grad_options o;
  ir_grad_options_init(&o);
  o.wrt = wrt;
  o.nwrt = nw;
  o.remat = g->remat;
  ir_comp_id v;
  char err[1024];
  if (ir_grad_computation(g->m, f, &o, false, &v, err, sizeof err) != ST_OK) {
    g->st = ST_UNSUPPORTED;
    snprintf(g->err, g->errlen, "%s", err);
    return IR_NONE;
  }
  return v;
}

/* Appends the call of vjp (flat_vjp) on state leaves st and cotangents ct
 * (float leaves of rl in order; IR_NONE: zero) to the current computation;
 * the gradient of float leaf q of pl in grad[q]. */
static void apply_vjp(gr_ctx *g, ir_comp_id vjp, const ir_id *st, const leaves *pl, const ir_id *ct,
                      const leaves *rl, ir_id *grad) {
  ir_id args[2 * MAX_LEAVES];
  for (int k = 0; k < pl->n; k++) args[k] = st[k];
  for (int k = 0, q = 0; k < rl->n; k++) {
    bool fl = ir_type_is_float(rl->s[k]->type);
    ir_id c = fl ? ct[q++] : IR_NONE;
    args[pl->n + k] = c != IR_NONE ? c : gr_splat(g, rl->s[k], 0.0);
  }
  ir_id r = ir_grad_inline(g->m, g->c, vjp, args);
  int nf = 0;
  for (int k = 0; k < pl->n; k++) nf += ir_type_is_float(pl->s[k]->type);
  for (int q = 0; q < nf; q++) grad[q] = gr_gte(g, r, q);
}

/* ---- while ------------------------------------------------------------ */

/* The scalar integer value of constant x of computation c, or false. */
static bool const_int(const ir_module *m, ir_comp_id c, ir_id x, int64_t *v) {
  const ir_inst *in = &m->comps.v[c].insts.v[x];
  if (in->op != IR_OP_CONSTANT || in->shape->rank != 0 || !ir_type_is_int(in->shape->type)) return false;
  *v = ir_literal_get_i64(in->a->literal, 0);
  return true;
}

/* Whether x (in c) is get-tuple-element k of c's parameter. */
static bool is_leaf_of_param(const ir_module *m, ir_comp_id c, ir_id x, int k) {
  const ir_inst *in = &m->comps.v[c].insts.v[x];
  return in->op == IR_OP_GET_TUPLE_ELEMENT && in->a->index == k &&
         m->comps.v[c].insts.v[in->ops[0]].op == IR_OP_PARAMETER;
}

/* The static trip count of while w (a counted loop, above), or -1. */
static int64_t trip_count(gr_ctx *g, ir_id w) {
  const ir_module *m = g->m;
  const ir_inst *in = gr_inst(g, w);
  ir_comp_id cond = in->calls[0], body = in->calls[1];
  const ir_inst *init = gr_inst(g, in->ops[0]);
  const ir_comp *bc = &m->comps.v[body], *cc = &m->comps.v[cond];
  const ir_inst *br = &bc->insts.v[bc->root], *cr = &cc->insts.v[cc->root];
  if (init->op != IR_OP_TUPLE || br->op != IR_OP_TUPLE || cr->op != IR_OP_COMPARE) return -1;
  bool lt = cr->a->cmp_dir == IR_CMP_LT, gt = cr->a->cmp_dir == IR_CMP_GT;
  if (!lt && !gt) return -1;
  ir_id iv = cr->ops[lt ? 0 : 1], bound = cr->ops[lt ? 1 : 0];
  int64_t n, c0, one;
  if (!const_int(m, cond, bound, &n)) return -1;
  const ir_inst *ivi = &cc->insts.v[iv];
  if (ivi->op != IR_OP_GET_TUPLE_ELEMENT || !is_leaf_of_param(m, cond, iv, (int)ivi->a->index)) return -1;
  int k = (int)ivi->a->index;
  if (k >= init->nops || !const_int(m, g->c, init->ops[k], &c0)) return -1;
  const ir_inst *step = &bc->insts.v[br->ops[k]];
  if (step->op != IR_OP_ADD) return -1;
  for (int s = 0; s < 2; s++)
    if (is_leaf_of_param(m, body, step->ops[s], k) && const_int(m, body, step->ops[1 - s], &one) && one == 1)
      return n > c0 ? n - c0 : 0;
  return -1;
}

typedef struct loop {
  ir_comp_id cond, body, vjp;
  leaves l;
  bool is_tuple;
  int nf; /* float leaves */
} loop;

/* Condition computation: param t (state leaves at [0, n) of a tuple of
 * shape ts); cond applied to them, or `t[at] < t[lim]` when lim >= 0. */
static ir_comp_id cond_comp(gr_ctx *g, const loop *lp, const ir_shape *ts, int at, int lim) {
  ir_comp_id c = new_comp(g, "grad_cond"), back = enter(g, c);
  ir_id t = gr_param(g, ts, 0, "state");
  ir_id root;
  if (lim >= 0) {
    root = gr_cmp(g, IR_CMP_LT, gr_gte(g, t, at), gr_gte(g, t, lim));
  } else {
    ir_id v[MAX_LEAVES];
    for (int k = 0; k < lp->l.n; k++) v[k] = gr_gte(g, t, k);
    ir_id arg = pack(g, v, &lp->l, lp->is_tuple);
    root = ir_grad_inline(g->m, c, lp->cond, &arg);
  }
  finish(g, c, root);
  enter(g, back);
  return c;
}

static ir_id run_while(gr_ctx *g, ir_comp_id cond, ir_comp_id body, ir_id init) {
  ir_comp_id calls[2] = {cond, body};
  return ir_build(g->m, g->c, IR_OP_WHILE, &init, 1, NULL, calls, 2, g->loc);
}

static ir_shape tuple_shape(gr_ctx *g, const ir_id *v, int n) {
  ir_shape *el = arena_array(g->m->arena, (size_t)n + 1, sizeof *el);
  for (int k = 0; k < n; k++) el[k] = *gr_shape(g, v[k]);
  ir_shape t;
  memset(&t, 0, sizeof t);
  t.type = IR_TUPLE;
  t.ntuple = n;
  t.tuple = el;
  return t;
}

/* The body of a loop whose state is (leaves, extra...): leaves stepped by
 * the loop's body, extras by `extra` (NULL: kept), counter at `at` + 1. */
typedef void (*extra_fn)(gr_ctx *g, const loop *lp, ir_id t, const ir_id *lv, ir_id *out, void *cx);

static ir_comp_id step_comp(gr_ctx *g, const loop *lp, const ir_shape *ts, int at, extra_fn fn, void *cx) {
  ir_comp_id c = new_comp(g, "grad_body"), back = enter(g, c);
  ir_id t = gr_param(g, ts, 0, "state");
  ir_id v[2 * MAX_LEAVES + 2], nv[2 * MAX_LEAVES + 2];
  for (int k = 0; k < ts->ntuple; k++) v[k] = nv[k] = gr_gte(g, t, k);
  if (fn) fn(g, lp, t, v, nv, cx);
  apply_flat(g, lp->body, v, &lp->l, lp->is_tuple, &lp->l, lp->is_tuple, nv);
  nv[at] = gr_bin(g, IR_OP_ADD, v[at], s32(g, 1));
  finish(g, c, tuple(g, nv, ts->ntuple));
  enter(g, back);
  return c;
}

/* Recording step: before the body, leaf k goes to row idx of stack k. */
static void record(gr_ctx *g, const loop *lp, ir_id t, const ir_id *lv, ir_id *out, void *cx) {
  int n = lp->l.n;
  ir_id idx = lv[2 * n];
  for (int k = 0; k < n; k++) {
    const ir_shape *s = lp->l.s[k];
    int64_t dims[IR_MAX_RANK + 1];
    dims[0] = 1;
    for (int d = 0; d < s->rank; d++) dims[d + 1] = s->dims[d];
    ir_shape row = ir_shape_array(s->type, s->rank + 1, dims);
    ir_id ops[IR_MAX_RANK + 3];
    ops[0] = lv[n + k];
    ops[1] = gr_reshape(g, lv[k], &row);
    ops[2] = idx;
    for (int d = 0; d < s->rank; d++) ops[3 + d] = s32(g, 0);
    out[n + k] = gr_build(g, IR_OP_DYNAMIC_UPDATE_SLICE, ops, s->rank + 3, NULL);
  }
}

/* State j of the loop (saving): row j of every stack. */
static void read_rows(gr_ctx *g, const loop *lp, const ir_id *stacks, ir_id j, ir_id *st) {
  for (int k = 0; k < lp->l.n; k++) {
    const ir_shape *s = lp->l.s[k];
    int64_t sizes[IR_MAX_RANK + 1];
    sizes[0] = 1;
    for (int d = 0; d < s->rank; d++) sizes[d + 1] = s->dims[d];
    ir_id ops[IR_MAX_RANK + 2];
    ops[0] = stacks[k];
    ops[1] = j;
    for (int d = 0; d < s->rank; d++) ops[2 + d] = s32(g, 0);
    ir_attrs a = ir_attrs_none;
    a.slice_sizes = (ir_ints){s->rank + 1, sizes};
    st[k] = gr_reshape(g, gr_build(g, IR_OP_DYNAMIC_SLICE, ops, s->rank + 2, &a), s);
  }
}

/* State j of the loop (recomputing): j trips of the body from init. */
static void recompute_state(gr_ctx *g, const loop *lp, const ir_id *init, ir_id j, ir_id *st) {
  int n = lp->l.n;
  ir_id v[MAX_LEAVES + 2];
  for (int k = 0; k < n; k++) v[k] = init[k];
  v[n] = s32(g, 0);
  v[n + 1] = j;
  ir_shape ts = tuple_shape(g, v, n + 2);
  ir_comp_id cond = cond_comp(g, lp, &ts, n, n + 1), body = step_comp(g, lp, &ts, n, NULL, NULL);
  ir_id w = run_while(g, cond, body, tuple(g, v, n + 2));
  for (int k = 0; k < n; k++) st[k] = gr_gte(g, w, k);
}

/* The reverse loop's body; its state is (j, float cotangents, stacks or
 * initial leaves): it reads state j, applies the VJP and counts down. */
static ir_comp_id reverse_body(gr_ctx *g, const loop *lp, const ir_shape *ts, bool saved) {
  ir_comp_id c = new_comp(g, "grad_reverse"), back = enter(g, c);
  ir_id t = gr_param(g, ts, 0, "state");
  int n = lp->l.n, nf = lp->nf;
  ir_id v[2 * MAX_LEAVES + 2], st[MAX_LEAVES], gr[MAX_LEAVES];
  for (int k = 0; k < ts->ntuple; k++) v[k] = gr_gte(g, t, k);
  if (saved)
    read_rows(g, lp, v + 1 + nf, v[0], st);
  else
    recompute_state(g, lp, v + 1 + nf, v[0], st);
  apply_vjp(g, lp->vjp, st, &lp->l, v + 1, &lp->l, gr);
  v[0] = gr_bin(g, IR_OP_SUBTRACT, v[0], s32(g, 1));
  for (int q = 0; q < nf; q++) v[1 + q] = gr[q];
  finish(g, c, tuple(g, v, 1 + nf + n));
  enter(g, back);
  return c;
}

static ir_comp_id nonnegative(gr_ctx *g, const ir_shape *ts) {
  ir_comp_id c = new_comp(g, "grad_reverse_cond"), back = enter(g, c);
  ir_id t = gr_param(g, ts, 0, "state");
  finish(g, c, gr_cmp(g, IR_CMP_GE, gr_gte(g, t, 0), s32(g, 0)));
  enter(g, back);
  return c;
}

/* The forward state's leaves before the first trip (read in the backward
 * pass) and N, the trip count: static, or from a counting loop. With
 * saving (trips >= 0, no remat) also the stacks. */
static ir_id forward_pass(gr_ctx *g, const loop *lp, const ir_id *init, int64_t trips, ir_id *stacks) {
  int n = lp->l.n;
  ir_id v[2 * MAX_LEAVES + 2];
  for (int k = 0; k < n; k++) v[k] = init[k];
  if (stacks) {
    for (int k = 0; k < n; k++) {
      const ir_shape *s = lp->l.s[k];
      int64_t dims[IR_MAX_RANK + 1];
      dims[0] = trips;
      for (int d = 0; d < s->rank; d++) dims[d + 1] = s->dims[d];
      ir_shape ss = ir_shape_array(s->type, s->rank + 1, dims);
      v[n + k] = gr_splat(g, &ss, 0.0);
    }
    v[2 * n] = s32(g, 0);
    ir_shape ts = tuple_shape(g, v, 2 * n + 1);
    ir_comp_id cond = cond_comp(g, lp, &ts, 0, -1), body = step_comp(g, lp, &ts, 2 * n, record, NULL);
    ir_id w = run_while(g, cond, body, tuple(g, v, 2 * n + 1));
    for (int k = 0; k < n; k++) stacks[k] = gr_gte(g, w, n + k);
    return s32(g, trips);
  }
  v[n] = s32(g, 0);
  ir_shape ts = tuple_shape(g, v, n + 1);
  ir_comp_id cond = cond_comp(g, lp, &ts, 0, -1), body = step_comp(g, lp, &ts, n, NULL, NULL);
  return gr_gte(g, run_while(g, cond, body, tuple(g, v, n + 1)), n);
}

bool gr_while(gr_ctx *g, ir_id i, ir_id ct) {
  const ir_inst *in = gr_inst(g, i);
  ir_id init_id = in->ops[0];
  loop lp;
  memset(&lp, 0, sizeof lp);
  lp.cond = in->calls[0];
  lp.body = in->calls[1];
  lp.is_tuple = in->shape->type == IR_TUPLE;
  if (!leaves_of(in->shape, &lp.l)) return gr_fail(g, "a gradient through a loop with nested tuple state is not supported");
  for (int k = 0; k < lp.l.n; k++) lp.nf += ir_type_is_float(lp.l.s[k]->type);
  int64_t trips = g->remat ? -1 : trip_count(g, i);
  lp.vjp = flat_vjp(g, lp.body, &lp.l, lp.is_tuple, &lp.l, lp.is_tuple);
  if (lp.vjp == IR_NONE) return false;
  ir_id init_v = gr_fwd(g, init_id), init[MAX_LEAVES], stacks[MAX_LEAVES], v[2 * MAX_LEAVES + 2];
  for (int k = 0; k < lp.l.n; k++) init[k] = leaf(g, init_v, lp.is_tuple, k);
  bool saved = trips >= 0;
  if (trips == 0) saved = false; /* no trip: nothing to save, the reverse loop does not run */
  ir_id nt = forward_pass(g, &lp, init, trips, saved ? stacks : NULL);
  int n = lp.l.n, nf = lp.nf;
  v[0] = gr_bin(g, IR_OP_SUBTRACT, nt, s32(g, 1));
  for (int k = 0, q = 0; k < n; k++) {
    if (!ir_type_is_float(lp.l.s[k]->type)) continue;
    ir_id a = lp.is_tuple ? (g->adjt[i] ? g->adjt[i][k] : IR_NONE) : ct;
    v[1 + q++] = a != IR_NONE ? a : gr_splat(g, lp.l.s[k], 0.0);
  }
  for (int k = 0; k < n; k++) v[1 + nf + k] = saved ? stacks[k] : init[k];
  ir_shape ts = tuple_shape(g, v, 1 + nf + n);
  ir_comp_id rc = nonnegative(g, &ts), rb = reverse_body(g, &lp, &ts, saved);
  ir_id r = run_while(g, rc, rb, tuple(g, v, 1 + nf + n));
  for (int k = 0, q = 0; k < n; k++) {
    if (!ir_type_is_float(lp.l.s[k]->type)) continue;
    ir_id gk = gr_gte(g, r, 1 + q++);
    if (!lp.is_tuple) {
      gr_accum(g, init_id, gk);
    } else if (gr_wants(g, init_id)) {
      ir_id *a = gr_tuple_adj(g, init_id);
      a[k] = a[k] == IR_NONE ? gk : gr_bin(g, IR_OP_ADD, a[k], gk);
    }
  }
  return true;
}

/* ---- conditional ------------------------------------------------------- */

bool gr_conditional(gr_ctx *g, ir_id i, ir_id ct) {
  const ir_inst *in = gr_inst(g, i);
  int nb = in->ncalls;
  leaves rl, pl[MAX_BRANCHES];
  bool rtuple = in->shape->type == IR_TUPLE, ptuple[MAX_BRANCHES];
  if (nb > MAX_BRANCHES) return gr_fail(g, "a gradient through more than %d branches is not supported", MAX_BRANCHES);
  if (!leaves_of(in->shape, &rl)) return gr_fail(g, "a gradient through nested tuple results is not supported");
  ir_comp_id vjp[MAX_BRANCHES], calls[MAX_BRANCHES];
  int nf[MAX_BRANCHES], total = 0;
  for (int b = 0; b < nb; b++) {
    const ir_shape *ps = gr_shape(g, gr_inst(g, i)->ops[1 + b]);
    ptuple[b] = ps->type == IR_TUPLE;
    if (!leaves_of(ps, &pl[b])) return gr_fail(g, "a gradient through nested tuple operands is not supported");
    vjp[b] = flat_vjp(g, gr_inst(g, i)->calls[b], &pl[b], ptuple[b], &rl, rtuple);
    if (vjp[b] == IR_NONE) return false;
    nf[b] = 0;
    for (int k = 0; k < pl[b].n; k++) nf[b] += ir_type_is_float(pl[b].s[k]->type);
    total += nf[b];
  }
  if (total > MAX_LEAVES)
    return gr_fail(g, "a gradient through more than %d floating-point branch operands is not supported", MAX_LEAVES);
  /* the cotangents, float leaves of the result in order */
  ir_id cts[MAX_LEAVES];
  int nct = 0;
  for (int k = 0; k < rl.n; k++)
    if (ir_type_is_float(rl.s[k]->type)) {
      ir_id a = rtuple ? (g->adjt[i] ? g->adjt[i][k] : IR_NONE) : ct;
      cts[nct++] = a != IR_NONE ? a : gr_splat(g, rl.s[k], 0.0);
    }
  ir_id ops[MAX_BRANCHES + 1];
  ops[0] = gr_operand(g, i, 0);
  for (int b = 0; b < nb; b++) {
    ir_id pair[MAX_LEAVES + 1];
    pair[0] = gr_operand(g, i, 1 + b);
    for (int q = 0; q < nct; q++) pair[1 + q] = cts[q];
    ops[1 + b] = tuple(g, pair, 1 + nct);
    ir_shape ts = *gr_shape(g, ops[1 + b]);
    ir_comp_id c = new_comp(g, "grad_branch"), back = enter(g, c);
    ir_id t = gr_param(g, &ts, 0, "operand"), st[MAX_LEAVES], gq[MAX_LEAVES], outs[MAX_LEAVES], cq[MAX_LEAVES];
    ir_id opv = gr_gte(g, t, 0);
    for (int k = 0; k < pl[b].n; k++) st[k] = ptuple[b] ? gr_gte(g, opv, k) : opv;
    for (int q = 0; q < nct; q++) cq[q] = gr_gte(g, t, 1 + q);
    apply_vjp(g, vjp[b], st, &pl[b], cq, &rl, gq);
    int o = 0;
    for (int bb = 0; bb < nb; bb++)
      for (int k = 0, q = 0; k < pl[bb].n; k++) {
        if (!ir_type_is_float(pl[bb].s[k]->type)) continue;
        outs[o++] = bb == b ? gq[q] : gr_splat(g, pl[bb].s[k], 0.0);
        q++;
      }
    finish(g, c, tuple(g, outs, total));
    enter(g, back);
    calls[b] = c;
  }
  ir_id r = ir_build(g->m, g->c, IR_OP_CONDITIONAL, ops, 1 + nb, NULL, calls, nb, g->loc);
  int o = 0;
  for (int b = 0; b < nb; b++) {
    ir_id x = gr_inst(g, i)->ops[1 + b];
    for (int k = 0; k < pl[b].n; k++) {
      if (!ir_type_is_float(pl[b].s[k]->type)) continue;
      ir_id gk = gr_gte(g, r, o++);
      if (!ptuple[b]) {
        gr_accum(g, x, gk);
      } else if (gr_wants(g, x)) {
        ir_id *a = gr_tuple_adj(g, x);
        a[k] = a[k] == IR_NONE ? gk : gr_bin(g, IR_OP_ADD, a[k], gk);
      }
    }
  }
  return true;
}
