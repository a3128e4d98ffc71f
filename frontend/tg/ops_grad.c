/* ops_grad.c: the builtins grad and value_and_grad (passes/grad.h).
 *
 *   grad(f, a1, ..., an, wrt=["p", ...])            -> df/dp, ...
 *   value_and_grad(f, a1, ..., an, wrt=["p", ...])  -> f(a...), df/dp, ...
 *
 * f names a graph with one floating-point scalar result; a1..an are its
 * arguments by position (checked as a call's are); wrt names parameters
 * of f (default: every floating-point one, in order). The graph is lowered
 * as a computation of its own, differentiated by ir_grad_computation, and
 * the result inlined here; one gradient is a tensor, several (or any with
 * the value) are bound with `let a, b = ...;`. */
#include "frontend/tg/lower.h"

#include "passes/grad.h"

#define HANDLER(fn)                                                            \
  tv fn(lctx *L, const tg_node *call, tg_node **arg, const tg_nodes *rest,     \
        const tg_builtin *b)

/* The parameter numbers wrt names (a string or a list of strings). */
static bool wrt_numbers(lctx *L, const tg_node *w, const tg_graph *g, const char *what, int *out, int *nout) {
  int n = w->kind == TG_LIST ? w->args.n : 1;
  for (int k = 0; k < n; k++) {
    const tg_node *s = w->kind == TG_LIST ? w->args.v[k] : w;
    if (s->kind != TG_STR) {
      lerr(L, s->loc, "%s: wrt takes parameter names as strings (wrt=[\"w\", \"b\"])", what);
      return false;
    }
    int found = -1;
    for (int i = 0; i < g->params.n; i++)
      if (!strcmp(g->params.v[i].name, s->name)) found = i;
    if (found < 0) {
      lerr(L, s->loc, "%s: graph '%s' has no parameter '%s'", what, g->name, s->name);
      lnote(L, g->loc, "'%s' defined here", g->name);
      return false;
    }
    out[k] = found;
  }
  *nout = n;
  return true;
}

HANDLER(h_grad) {
  bool with_value = b->aux != 0;
  if (rest->n < 1 || rest->v[0]->kind != TG_NAME) {
    lerr(L, call->loc, "%s: the first argument must name a graph (%s(loss, x, w, wrt=[\"w\"]))", b->name, b->name);
    return tv_err();
  }
  int gi = fe_tg_graph_index(L, rest->v[0]->name);
  if (gi < 0) {
    lerr(L, rest->v[0]->loc, "%s: no graph named '%s'", b->name, rest->v[0]->name);
    return tv_err();
  }
  const tg_graph *g = fe_tg_graph(L, gi);
  if (rest->n - 1 != g->params.n) {
    lerr(L, call->loc, "%s: graph '%s' takes %d argument%s but %d %s given", b->name, g->name, g->params.n,
         g->params.n == 1 ? "" : "s", rest->n - 1, rest->n == 2 ? "was" : "were");
    lnote(L, g->loc, "'%s' defined here", g->name);
    return tv_err();
  }
  int *wrt = arena_array(L->m->arena, (size_t)g->params.n + 1, sizeof(int)), nwrt = 0;
  if (arg[1] && !wrt_numbers(L, arg[1], g, b->name, wrt, &nwrt)) return tv_err();
  ir_comp_id c = fe_tg_graph_comp(L, call, gi);
  if (c == IR_NONE) return tv_err();
  tv *args = arena_array(L->m->arena, (size_t)g->params.n + 1, sizeof(tv));
  if (!fe_tg_graph_args(L, g, (const tg_node *const *)rest->v + 1, args)) return tv_err();
  ir_id *ids = arena_array(L->m->arena, (size_t)g->params.n + 1, sizeof(ir_id));
  for (int i = 0; i < g->params.n; i++) ids[i] = args[i].id;
  ir_grad_options o;
  ir_grad_options_init(&o);
  if (arg[1]) {
    o.wrt = wrt;
    o.nwrt = nwrt;
  }
  ir_comp_id vg;
  char err[1024];
  if (ir_grad_computation(L->m, c, &o, true, &vg, err, sizeof err) != ST_OK) {
    lerr(L, call->loc, "%s of '%s': %s", b->name, g->name, err);
    return tv_err();
  }
  ir_id root = ir_grad_inline(L->m, L->comp, vg, ids);
  int n = L->m->comps.v[L->comp].insts.v[root].shape->ntuple, first = with_value ? 0 : 1;
  ir_id *outs = arena_array(L->m->arena, (size_t)n, sizeof(ir_id));
  for (int k = first; k < n; k++) {
    ir_attrs a = ir_attrs_none;
    a.index = k;
    outs[k - first] = lemit(L, IR_OP_GET_TUPLE_ELEMENT, &root, 1, &a, NULL, 0, NULL, call->loc, b->name);
    if (outs[k - first] == IR_NONE) return tv_err();
  }
  if (n - first == 1) return tv_tensor(outs[0]);
  tv r = tv_err();
  r.k = TV_MULTI;
  r.nmulti = n - first;
  r.multi = outs;
  return r;
}
