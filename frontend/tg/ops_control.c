/* ops_control.c: the .tg language's control flow, lowered to HLO while and
 * conditional (docs/language.md, "Loops and branches"). The loop's
 * condition and body and the branches are graphs of the file, named by
 * keyword, each lowered into a computation of its own
 * (fe_tg_graph_comp) rather than inlined:
 *
 *   loop(s1, s2, ..., while=COND, do=BODY)    COND(s...) -> pred,
 *                                             BODY(s...) -> (s'...)
 *   branch(a1, ..., if=P, then=T, else=E)     T(a...) and E(a...) return
 *                                             the same types
 */
#include "frontend/tg/lower.h"

/* The graph a keyword argument names, or -1 after reporting. */
static int graph_arg(lctx *L, const tg_node *call, const tg_node *n, const char *what) {
  if (!n) {
    lerr(L, call->loc, "%s needs a graph", what);
    return -1;
  }
  int gi = n->kind == TG_NAME ? fe_tg_graph_index(L, n->name) : -1;
  if (gi < 0) lerr(L, n->loc, "%s must name a graph of this file", what);
  return gi;
}

/* The values of the variadic arguments as tensors with their shapes;
 * false after reporting. */
static bool state_of(lctx *L, const tg_nodes *rest, ir_id *ids, ir_shape *st) {
  bool ok = true;
  for (int i = 0; i < rest->n; i++) {
    tv v = lower_expr(L, rest->v[i]);
    if (v.k == TV_MULTI) {
      lerr(L, rest->v[i]->loc, "a call returning %d values used as one value", v.nmulti);
      v = tv_err();
    }
    ids[i] = v.k == TV_ERR ? IR_NONE : tv_id(L, v, rest->v[i]->loc);
    if (ids[i] == IR_NONE)
      ok = false;
    else
      st[i] = *lshape(L, ids[i]);
  }
  return ok;
}

/* The n results of instruction w (a tuple) as the call's value. */
static tv results(lctx *L, ir_id w, int n, src_loc loc, const char *what) {
  if (n == 1) {
    ir_attrs a;
    memset(&a, 0, sizeof a);
    return tv_tensor(lemit(L, IR_OP_GET_TUPLE_ELEMENT, &w, 1, &a, NULL, 0, NULL, loc, what));
  }
  tv r = tv_err();
  r.k = TV_MULTI;
  r.nmulti = n;
  r.multi = arena_array(L->m->arena, (size_t)n, sizeof(ir_id));
  for (int i = 0; i < n; i++) {
    ir_attrs a;
    memset(&a, 0, sizeof a);
    a.index = i;
    r.multi[i] = lemit(L, IR_OP_GET_TUPLE_ELEMENT, &w, 1, &a, NULL, 0, NULL, loc, what);
  }
  return r;
}

static const ir_shape *root_shape(lctx *L, ir_comp_id c) {
  const ir_comp *cp = ir_comp_get(L->m, c);
  return cp->insts.v[cp->root].shape;
}

tv h_loop(lctx *L, const tg_node *call, tg_node **arg, const tg_nodes *rest, const tg_builtin *b) {
  int n = rest->n;
  if (n == 0) {
    lerr(L, call->loc, "loop needs at least one value to carry");
    return tv_err();
  }
  ir_id *ids = arena_array(L->m->arena, (size_t)n, sizeof(ir_id));
  ir_shape *st = arena_array(L->m->arena, (size_t)n, sizeof(ir_shape));
  int gc = graph_arg(L, call, arg[1], "loop's 'while'"),
      gb = graph_arg(L, call, arg[2], "loop's 'do'");
  if (!state_of(L, rest, ids, st) || gc < 0 || gb < 0) return tv_err();
  ir_comp_id cc[2] = {fe_tg_graph_comp(L, arg[1], gc, st, n, false),
                      fe_tg_graph_comp(L, arg[2], gb, st, n, true)};
  if (cc[0] == IR_NONE || cc[1] == IR_NONE) return tv_err();
  const ir_shape *p = root_shape(L, cc[0]);
  if (p->type != IR_PRED || p->rank != 0) {
    lerr(L, arg[1]->loc, "loop's 'while' graph returns %s; it must return one pred",
         lshape_str(L, p));
    return tv_err();
  }
  ir_id init = lemit(L, IR_OP_TUPLE, ids, n, NULL, NULL, 0, NULL, call->loc, b->name);
  if (!ir_shape_equal(root_shape(L, cc[1]), lshape(L, init))) {
    lerr(L, arg[2]->loc, "loop's 'do' graph returns %s but the loop carries %s",
         lshape_str(L, root_shape(L, cc[1])), lshape_str(L, lshape(L, init)));
    return tv_err();
  }
  ir_id w = lemit(L, IR_OP_WHILE, &init, 1, NULL, cc, 2, NULL, call->loc, b->name);
  return w == IR_NONE ? tv_err() : results(L, w, n, call->loc, b->name);
}

tv h_branch(lctx *L, const tg_node *call, tg_node **arg, const tg_nodes *rest,
            const tg_builtin *b) {
  int n = rest->n;
  ir_id *ids = arena_array(L->m->arena, (size_t)(n ? n : 1), sizeof(ir_id));
  ir_shape *st = arena_array(L->m->arena, (size_t)(n ? n : 1), sizeof(ir_shape));
  if (!arg[1]) {
    lerr(L, call->loc, "branch needs 'if', a pred");
    return tv_err();
  }
  ir_id p = lower_tensor(L, arg[1]);
  int gt = graph_arg(L, call, arg[2], "branch's 'then'"),
      ge = graph_arg(L, call, arg[3], "branch's 'else'");
  if (!state_of(L, rest, ids, st) || p == IR_NONE || gt < 0 || ge < 0) return tv_err();
  if (lshape(L, p)->type != IR_PRED || lshape(L, p)->rank != 0) {
    lerr(L, arg[1]->loc, "branch's 'if' is %s; it must be one pred", lshape_str(L, lshape(L, p)));
    return tv_err();
  }
  ir_comp_id cc[2] = {fe_tg_graph_comp(L, arg[2], gt, st, n, true),
                      fe_tg_graph_comp(L, arg[3], ge, st, n, true)};
  if (cc[0] == IR_NONE || cc[1] == IR_NONE) return tv_err();
  const ir_shape *rt = root_shape(L, cc[0]), *re = root_shape(L, cc[1]);
  if (!ir_shape_equal(rt, re)) {
    lerr(L, arg[3]->loc, "branch's 'else' graph returns %s but 'then' returns %s",
         lshape_str(L, re), lshape_str(L, rt));
    return tv_err();
  }
  ir_id a = lemit(L, IR_OP_TUPLE, ids, n, NULL, NULL, 0, NULL, call->loc, b->name);
  ir_id ops[3] = {p, a, a};
  ir_id c = lemit(L, IR_OP_CONDITIONAL, ops, 3, NULL, cc, 2, NULL, call->loc, b->name);
  return c == IR_NONE ? tv_err() : results(L, c, rt->ntuple, call->loc, b->name);
}
