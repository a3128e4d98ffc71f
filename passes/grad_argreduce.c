/* grad_argreduce.c: the VJP of a reduce whose reducer selects
 * (argmax-style; grad_internal.h).
 *
 * A reduce of n operands x_k with inits i_k folds with a reducer of 2n
 * scalars (a_0..a_{n-1}, b_0..b_{n-1}). When the reducer's result k is
 * select(p, a_k, b_k) (or select(p, b_k, a_k)), each result element k is
 * one of the elements of x_k it folded (or i_k), whatever p computes
 * from all the operands: the adjoint of result k goes to that one
 * element. Which element is found by reducing again with one more s32
 * operand per such k, the position of each element among the reduced
 * dimensions (row-major), with init -1, under the reducer extended to
 * select that position with the same predicate as result k: the fold and
 * its comparisons are the forward one's, so the position is that of the
 * element the forward result came from, ties included (jax's argmax
 * reducer prefers the lower index on equal values, and a NaN over any
 * number: the whole adjoint goes to that element, not split among equal
 * ones as for a maximum reduce). Position -1 means the init: its adjoint
 * gets those. A floating-point result asked for a gradient that is not
 * such a select is a located error naming the reducer. */
#include "passes/grad_internal.h"

#include <string.h>

enum { MAX_REDUCE_OPERANDS = 32 };

/* Whether inst r of computation cp is select(p, a_k, b_k) (*swap false)
 * or select(p, b_k, a_k) (*swap true), a_k and b_k the parameters k and
 * n + k. */
static bool selects(const ir_comp *cp, ir_id r, int k, int n, bool *swap) {
  const ir_inst *s = &cp->insts.v[r];
  if (s->op != IR_OP_SELECT) return false;
  const ir_inst *t = &cp->insts.v[s->ops[1]], *f = &cp->insts.v[s->ops[2]];
  if (t->op != IR_OP_PARAMETER || f->op != IR_OP_PARAMETER) return false;
  int64_t pt = t->a->parameter_number, pf = f->a->parameter_number;
  *swap = pt == n + k;
  return (pt == k && pf == n + k) || (pt == n + k && pf == k);
}

/* Result k of reducer cp of n operands (the root, or its tuple element k). */
static ir_id result_of(const ir_comp *cp, int k, int n) {
  const ir_inst *r = &cp->insts.v[cp->root];
  if (r->op == IR_OP_TUPLE) return r->nops == n ? r->ops[k] : IR_NONE;
  return n == 1 ? cp->root : IR_NONE;
}

/* The reducer red extended with positions: parameters (a_0..a_{n-1},
 * apos_0..apos_{m-1}, b_0..b_{n-1}, bpos_0..bpos_{m-1}), results (red's n
 * results, pos_j = the position chosen with result which[j]). */
static ir_comp_id tracked(gr_ctx *g, ir_comp_id red, const ir_type *ts, int n, const int *which,
                          int m) {
  ir_comp_id c = ir_comp_add(g->m, ir_unique_name(g->m, "reduce_with_position")), back = g->c;
  ir_comp_get(g->m, c)->loc = g->loc;
  g->c = c;
  ir_id ps[2 * MAX_REDUCE_OPERANDS], pos[2][MAX_REDUCE_OPERANDS], outs[2 * MAX_REDUCE_OPERANDS];
  ir_shape is = ir_shape_scalar(IR_S32);
  for (int side = 0; side < 2; side++) {
    for (int k = 0; k < n; k++) {
      ir_shape s = ir_shape_scalar(ts[k]);
      ps[side * n + k] = gr_param(g, &s, side * (n + m) + k, "p");
    }
    for (int j = 0; j < m; j++)
      pos[side][j] = gr_param(g, &is, side * (n + m) + n + j, "pos");
  }
  ir_id root = ir_grad_inline(g->m, c, red, ps);
  const ir_comp *cp = &g->m->comps.v[c];
  for (int k = 0; k < n; k++)
    outs[k] = n == 1 && cp->insts.v[root].op != IR_OP_TUPLE ? root : cp->insts.v[root].ops[k];
  for (int j = 0; j < m; j++) {
    const ir_inst *s = gr_inst(g, outs[which[j]]);
    bool swap = s->ops[1] != ps[which[j]];
    outs[n + j] = gr_select(g, s->ops[0], pos[swap][j], pos[!swap][j]);
  }
  ir_comp_get(g->m, c)->root = gr_build(g, IR_OP_TUPLE, outs, n + m, NULL);
  ir_comp_finish(g->m, c);
  g->c = back;
  return c;
}

/* The row-major position of each element of shape xs among the dims
 * (sorted ascending) of one reduction: s32, shape xs. */
static ir_id positions(gr_ctx *g, const ir_shape *xs, const int64_t *dims, int nd) {
  ir_shape is = ir_shape_array(IR_S32, xs->rank, xs->dims);
  ir_id p = IR_NONE;
  int64_t stride = 1;
  for (int k = nd - 1; k >= 0; k--) {
    ir_attrs a = ir_attrs_none;
    a.index = dims[k];
    ir_id t = ir_build_shaped(g->m, g->c, IR_OP_IOTA, NULL, 0, &a, NULL, 0, &is, g->loc);
    if (stride != 1) t = gr_bin(g, IR_OP_MULTIPLY, t, gr_splat(g, &is, (double)stride));
    p = p == IR_NONE ? t : gr_bin(g, IR_OP_ADD, p, t);
    stride *= xs->dims[dims[k]];
  }
  return p != IR_NONE ? p : gr_splat(g, &is, 0);
}

bool gr_reducer_selects(const ir_module *m, ir_comp_id c, int n) {
  const ir_comp *cp = &m->comps.v[c];
  bool swap;
  for (int k = 0; k < n; k++) {
    ir_id r = cp->root == IR_NONE ? IR_NONE : result_of(cp, k, n);
    if (r == IR_NONE || !selects(cp, r, k, n, &swap)) return false;
  }
  return true;
}

bool gr_reduce_select(gr_ctx *g, ir_id i, ir_id ct) {
  const ir_inst *in = gr_inst(g, i);
  int n = in->nops / 2, m = 0, which[MAX_REDUCE_OPERANDS];
  if (n > MAX_REDUCE_OPERANDS)
    return gr_fail(g, "a gradient through a reduce of more than %d operands is not supported",
                   MAX_REDUCE_OPERANDS);
  /* in is not read after instructions are added (they may move it) */
  ir_id src[2 * MAX_REDUCE_OPERANDS];
  memcpy(src, in->ops, sizeof src[0] * (size_t)(2 * n));
  const ir_shape *ys = in->shape;
  const ir_attrs *ra = in->a;
  ir_comp_id reducer = in->calls[0];
  const ir_comp *rc = &g->m->comps.v[reducer];
  ir_id adj[MAX_REDUCE_OPERANDS];
  ir_type ts[MAX_REDUCE_OPERANDS];
  for (int k = 0; k < n; k++) {
    ts[k] = gr_shape(g, src[k])->type;
    adj[k] = n == 1 ? ct : g->adjt[i] ? g->adjt[i][k] : IR_NONE;
    if (adj[k] == IR_NONE || !ir_type_is_float(ts[k]) ||
        !(gr_wants(g, src[k]) || gr_wants(g, src[n + k])))
      continue;
    ir_id r = result_of(rc, k, n);
    bool swap;
    if (r == IR_NONE || !selects(rc, r, k, n, &swap))
      return gr_fail(
          g,
          "a gradient through result %d of a reduce needs its reducer '%s' to give it as a select "
          "between its two inputs %d and %d (argmax-style); it computes something else, so no "
          "single "
          "element it came from is defined",
          k, rc->name, k, n + k);
    which[m++] = k;
  }
  if (m == 0) return true;
  const ir_shape *xs = gr_shape(g, src[0]);
  int64_t dims[IR_MAX_RANK], kept[IR_MAX_RANK];
  int nd = 0, nk = 0;
  for (int d = 0; d < xs->rank; d++) {
    bool red = false;
    for (int k = 0; k < ra->dimensions.n; k++)
      red = red || ra->dimensions.v[k] == d;
    if (red)
      dims[nd++] = d;
    else
      kept[nk++] = d;
  }
  ir_id ops[4 * MAX_REDUCE_OPERANDS];
  ir_shape rs[2 * MAX_REDUCE_OPERANDS];
  ir_id lin = positions(g, xs, dims, nd), none = gr_splat(g, &(ir_shape){.type = IR_S32}, -1);
  for (int k = 0; k < n; k++) {
    ops[k] = gr_fwd(g, src[k]);
    ops[n + m + k] = gr_fwd(g, src[n + k]);
    rs[k] = n == 1 ? *ys : ys->tuple[k];
  }
  for (int j = 0; j < m; j++) {
    ops[n + j] = lin;
    ops[2 * n + m + j] = none;
    rs[n + j] = rs[0];
    rs[n + j].type = IR_S32;
  }
  ir_shape tup = {.type = IR_TUPLE,
                  .ntuple = n + m,
                  .tuple = arena_dup(g->m->arena, rs, sizeof rs[0] * (size_t)(n + m))};
  ir_comp_id ext = tracked(g, reducer, ts, n, which, m);
  ir_id red =
      ir_build_shaped(g->m, g->c, IR_OP_REDUCE, ops, 2 * (n + m), ra, &ext, 1, &tup, g->loc);
  for (int j = 0; j < m; j++) {
    int k = which[j];
    ir_id pos = gr_gte(g, red, n + j), a = adj[k];
    ir_id x = src[k], init = src[n + k];
    if (gr_wants(g, x)) {
      ir_id hit = gr_cmp(g, IR_CMP_EQ, lin, gr_broadcast(g, pos, xs, kept));
      ir_id ab = gr_broadcast(g, a, xs, kept);
      gr_accum(g, x, gr_select(g, hit, ab, gr_like(g, ab, 0)));
    }
    if (gr_wants(g, init)) {
      ir_id from_init = gr_cmp(g, IR_CMP_EQ, pos, gr_like(g, pos, -1));
      gr_accum(g, init, gr_sum_all(g, gr_select(g, from_init, a, gr_like(g, a, 0))));
    }
  }
  return true;
}
