/* ops_index.c: indexing with run-time (tensor) indices in the .tg
 * language: take (numpy's take along one axis, as an XLA gather),
 * scatter_add (its transpose: updates added at the indices, as an XLA
 * scatter with an add) and x[t] for an integer tensor t (take along axis
 * 0). Indices may have any integer type and shape. Out-of-range indices
 * follow XLA, not numpy: take clamps each index into the axis; scatter_add
 * drops the updates of an index outside it. docs/language.md, "Indexing
 * with tensors". */
#include "frontend/tg/lower.h"

#define HANDLER(fn)                                                            \
  tv fn(lctx *L, const tg_node *call, tg_node **arg, const tg_nodes *rest,     \
        const tg_builtin *b)

/* An integer tensor of indices; reports otherwise. */
static ir_id index_arg(lctx *L, const tg_node *n, const char *what) {
  ir_id ix = lower_tensor(L, n);
  if (ix == IR_NONE) return IR_NONE;
  ir_type t = lshape(L, ix)->type;
  if (!ir_type_is_int(t)) {
    lerr(L, n->loc, "%s: indices must be integers, got %s", what, lshape_str(L, lshape(L, ix)));
    lnote_origin(L, n);
    return IR_NONE;
  }
  return ix;
}

/* The dimension numbers shared by take and scatter_add along axis of an
 * operand of rank r with indices of rank q: the indices' dims take the
 * axis's place in the result; the other dims form the window. */
static ir_attrs along_axis(lctx *L, int r, int q, int64_t axis) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  int64_t *win = arena_array(L->m->arena, (size_t)r + 1, sizeof(int64_t));
  int n = 0;
  for (int d = 0; d < r; d++)
    if (d != axis) win[n++] = d < axis ? d : d - 1 + q;
  int64_t *ax = arena_array(L->m->arena, 1, sizeof(int64_t));
  ax[0] = axis;
  a.window_dims = (ir_ints){n, win};
  a.collapsed_dims = (ir_ints){1, ax};
  a.index_map = (ir_ints){1, ax};
  a.index_vector_dim = q;
  return a;
}

/* take(x, indices, axis=0) = x[..., indices, ...] on axis. */
tv fe_tg_take(lctx *L, const tg_node *where, ir_id x, const tg_node *nidx, int64_t axis, const char *what) {
  ir_id ix = index_arg(L, nidx, what);
  if (ix == IR_NONE) return tv_err();
  const ir_shape xs = *lshape(L, x), is = *lshape(L, ix);
  if (xs.rank + is.rank - 1 > IR_MAX_RANK) {
    lerr(L, where->loc, "%s: the result would have rank %d (at most %d)", what, xs.rank + is.rank - 1,
         IR_MAX_RANK);
    return tv_err();
  }
  ir_attrs a = along_axis(L, xs.rank, is.rank, axis);
  int64_t *sz = arena_array(L->m->arena, (size_t)xs.rank + 1, sizeof(int64_t));
  for (int d = 0; d < xs.rank; d++) sz[d] = d == axis ? 1 : xs.dims[d];
  a.slice_sizes = (ir_ints){xs.rank, sz};
  ir_id ops[2] = {x, ix};
  return tv_tensor(lemit(L, IR_OP_GATHER, ops, 2, &a, NULL, 0, NULL, where->loc, what));
}

/* The axis argument (default 0) of a rank-r operand. */
static bool axis_arg(lctx *L, const tg_node *n, const tg_node *at, const char *what, int r, int64_t *axis) {
  *axis = 0;
  if (n && !st_int(L, n, "axis", axis)) return false;
  if (r == 0) {
    lerr(L, at->loc, "%s: the operand is a scalar (it needs an axis to index)", what);
    return false;
  }
  return st_axis(L, n ? n : at, what, *axis, r, axis);
}

HANDLER(h_take) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  int64_t axis;
  if (x == IR_NONE || !axis_arg(L, arg[2], arg[0], b->name, lshape(L, x)->rank, &axis)) return tv_err();
  return fe_tg_take(L, call, x, arg[1], axis, b->name);
}

HANDLER(h_scatter_add) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]), ix = index_arg(L, arg[1], b->name);
  if (x == IR_NONE || ix == IR_NONE) return tv_err();
  const ir_shape xs = *lshape(L, x);
  int64_t axis;
  if (!axis_arg(L, arg[3], arg[0], b->name, xs.rank, &axis)) return tv_err();
  tv u = tv_to_type(L, lower_expr(L, arg[2]), xs.type, arg[2]->loc);
  ir_id upd = tv_id(L, u, arg[2]->loc);
  if (upd == IR_NONE) return tv_err();
  ir_attrs a = along_axis(L, xs.rank, lshape(L, ix)->rank, axis);
  ir_comp_id add = lreducer(L, R_SUM, xs.type, call->loc);
  ir_id ops[3] = {x, ix, upd};
  return tv_tensor(lemit(L, IR_OP_SCATTER, ops, 3, &a, &add, 1, NULL, call->loc, b->name));
}
