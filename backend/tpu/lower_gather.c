/* lower_gather.c: the indexing ops on the TPU, with the values of
 * ir/eval_gather.c under TPU numerics.
 *
 * select-and-scatter (the max-pool gradient) has static addresses only:
 * it runs as K passes over the window positions w (K = the window's size,
 * row-major), each a strided copy and one elementwise program over the
 * source's shape, so its addressing is the copy kernel's and its compute
 * the vector unit's:
 *  - the operand padded (pad values are never selected) and a 0/1
 *    validity array padded with 0 give, per w, Xw[p] = operand at
 *    p * stride + w - pad_lo and Vw[p] (that position is inside);
 *  - selection, w ascending: take = Vw & (!have | !select(kept, Xw));
 *    kept = take ? Xw : kept, index = take ? w : index, have |= Vw: the
 *    evaluator's protocol (the first position inside, replaced whenever
 *    select(kept, current) is false);
 *  - scatter, w descending, into the padded result R (init everywhere):
 *    Rw = R at p * stride + w - pad_lo; Rw = (have & index == w) ?
 *    scatter(source, Rw) : Rw, copied back. Within a pass the positions
 *    are distinct; across passes a position receives its contributions
 *    from sources in ascending row-major order (w descending is p
 *    ascending for a fixed position), the evaluator's order, so the
 *    combined values have the evaluator's bits even where windows
 *    overlap.
 * The result is R's interior. */
#include "backend/tpu/lower.h"

/* Appends program sub's nodes to nodes (n used, room for sub->nnodes
 * more), its inputs bound to nodes in_node[]; returns the node of its
 * output k. */
static int embed(arena *a, tk_node *nodes, int *n, const tk_elem *sub, const int *in_node, int k) {
  int *map = arena_array(a, (size_t)sub->nnodes + 1, sizeof(int));
  for (int j = 0; j < sub->nnodes; j++) {
    tk_node nd = sub->nodes[j];
    if (nd.kind == TK_IN) {
      map[j] = in_node[nd.input];
      continue;
    }
    for (int j2 = 0; j2 < nd.nargs; j2++) nd.args[j2] = map[nd.args[j2]];
    nodes[*n] = nd;
    map[j] = (*n)++;
  }
  return map[sub->out_node[k]];
}

static int node_in(tk_node *nodes, int *n, ir_type t, int input) {
  nodes[*n] = (tk_node){.kind = TK_IN, .type = t, .input = input};
  return (*n)++;
}

static int node_const(tk_node *nodes, int *n, ir_type t, uint32_t bits) {
  nodes[*n] = (tk_node){.kind = TK_CONST, .type = t, .bits = bits};
  return (*n)++;
}

static int node_op(tk_node *nodes, int *n, ir_type t, ir_op op, int nargs, int a0, int a1, int a2) {
  nodes[*n] = (tk_node){.kind = TK_OP, .type = t, .op = op, .nargs = nargs, .args = {a0, a1, a2}};
  return (*n)++;
}

/* Runs program (nodes, n) over count elements of the given inputs into
 * new buffers of the outputs' types (dims rank/dims). */
static void run_program(tb *b, tk_node *nodes, int n, int nin, tval **ins, int nout, const int *out_node,
                        tval **outs, int rank, const int64_t *dims) {
  tk_elem e = {0};
  e.nnodes = n;
  e.nodes = nodes;
  e.ninputs = nin;
  e.in_addr = arena_array(b->a, (size_t)nin, sizeof(uint64_t));
  e.in_type = arena_array(b->a, (size_t)nin, sizeof(ir_type));
  for (int k = 0; k < nin; k++) e.in_addr[k] = tv_addr(ins[k]), e.in_type[k] = ins[k]->type;
  e.noutputs = nout;
  e.out_node = (int *)out_node;
  e.out_addr = arena_array(b->a, (size_t)nout, sizeof(uint64_t));
  for (int k = 0; k < nout; k++) {
    outs[k] = tv_new(b, nodes[out_node[k]].type, rank, dims);
    e.out_addr[k] = tv_addr(outs[k]);
  }
  e.count = outs[0]->count;
  tk_elementwise(b, &e);
}

/* The strided view of v at p * stride + w (p over dims m) as a new dense
 * value. */
static tval *strided(tb *b, const tval *v, const int64_t *w, const int64_t *stride, const int64_t *m) {
  int64_t vs[IR_MAX_RANK], ss[IR_MAX_RANK], ds[IR_MAX_RANK];
  tv_strides(v, vs);
  tval *o = tv_new(b, v->type, v->rank, m);
  tv_strides(o, ds);
  uint64_t src = tv_addr(v);
  for (int d = 0; d < v->rank; d++) {
    src += (uint64_t)(w[d] * vs[d] * tv_esize(v->type));
    ss[d] = stride[d] * vs[d];
  }
  tk_copy(b, tv_addr(o), ds, src, ss, v->rank, m, tv_esize(v->type));
  return o;
}

/* Selection pass w > 0 over (kept, Xw, have, Vw, index): the new kept,
 * have and index replace st[0], st[1], st[2]. */
static void select_pass(tb *b, const tk_elem *sel, int64_t w, tval **st, tval *xw, tval *vw) {
  int nmax = sel->nnodes + 16, n = 0;
  tk_node *nodes = arena_array(b->a, (size_t)nmax, sizeof(tk_node));
  ir_type t = xw->type;
  int kept = node_in(nodes, &n, t, 0), cur = node_in(nodes, &n, t, 1);
  int have = node_in(nodes, &n, IR_PRED, 2), valid = node_in(nodes, &n, IR_PRED, 3);
  int idx = node_in(nodes, &n, IR_S32, 4);
  int keep = embed(b->a, nodes, &n, sel, (int[]){kept, cur}, 0);
  int any = node_op(nodes, &n, IR_PRED, IR_OP_OR, 2, node_op(nodes, &n, IR_PRED, IR_OP_NOT, 1, have, 0, 0),
                    node_op(nodes, &n, IR_PRED, IR_OP_NOT, 1, keep, 0, 0), 0);
  int take = node_op(nodes, &n, IR_PRED, IR_OP_AND, 2, valid, any, 0);
  int outs[3] = {node_op(nodes, &n, t, IR_OP_SELECT, 3, take, cur, kept),
                 node_op(nodes, &n, IR_PRED, IR_OP_OR, 2, have, valid, 0),
                 node_op(nodes, &n, IR_S32, IR_OP_SELECT, 3, take, node_const(nodes, &n, IR_S32, (uint32_t)w), idx)};
  tval *ins[5] = {st[0], xw, st[1], vw, st[2]}, *res[3];
  run_program(b, nodes, n, 5, ins, 3, outs, res, xw->rank, xw->dims);
  for (int k = 0; k < 3; k++) {
    tv_release(b, st[k]);
    st[k] = res[k];
  }
}

/* Scatter pass w: Rw = (have & index == w) ? scatter(source, Rw) : Rw. */
static tval *scatter_pass(tb *b, const tk_elem *sc, int64_t w, tval *src, tval *rw, tval *have, tval *idx) {
  int nmax = sc->nnodes + 16, n = 0;
  tk_node *nodes = arena_array(b->a, (size_t)nmax, sizeof(tk_node));
  ir_type t = rw->type;
  int s = node_in(nodes, &n, t, 0), r = node_in(nodes, &n, t, 1);
  int h = node_in(nodes, &n, IR_PRED, 2), ix = node_in(nodes, &n, IR_S32, 3);
  int v = embed(b->a, nodes, &n, sc, (int[]){s, r}, 0);
  int eq = node_op(nodes, &n, IR_PRED, IR_OP_COMPARE, 2, ix, node_const(nodes, &n, IR_S32, (uint32_t)w), 0);
  nodes[eq].cmp_dir = IR_CMP_EQ;
  int mask = node_op(nodes, &n, IR_PRED, IR_OP_AND, 2, h, eq, 0);
  int out = node_op(nodes, &n, t, IR_OP_SELECT, 3, mask, v, r);
  tval *ins[4] = {src, rw, have, idx}, *res;
  run_program(b, nodes, n, 4, ins, 1, &out, &res, rw->rank, rw->dims);
  return res;
}

/* The operand padded by the window (with init), and the 0/1 validity
 * array of the same padded dims. */
static void padded_inputs(tb *b, const ir_window *w, tval *x, tval *init, tval **xp, tval **vp) {
  int r = x->rank;
  ir_padding_dim pd[IR_MAX_RANK];
  int64_t np[IR_MAX_RANK], vs[IR_MAX_RANK], os[IR_MAX_RANK];
  for (int d = 0; d < r; d++) {
    pd[d] = (ir_padding_dim){w->dims[d].pad_lo, w->dims[d].pad_hi, 0};
    np[d] = x->dims[d] + w->dims[d].pad_lo + w->dims[d].pad_hi;
  }
  *xp = tv_pad(b, x, init, pd, x->type);
  *vp = tv_new(b, IR_PRED, r, np);
  tk_fill(b, tv_addr(*vp), (*vp)->count, 4, 0);
  tval *ones = tv_new(b, IR_PRED, r, x->dims);
  tk_fill(b, tv_addr(ones), ones->count, 4, 1);
  tv_strides(*vp, vs);
  tv_strides(ones, os);
  uint64_t at = tv_addr(*vp);
  for (int d = 0; d < r; d++) at += (uint64_t)(w->dims[d].pad_lo * vs[d] * 4);
  tk_copy(b, at, vs, tv_addr(ones), os, r, x->dims, 4);
  tv_release(b, ones);
}

/* Window position k (row-major) as a multi-index. */
static void window_pos(const ir_window *w, int r, int64_t k, int64_t *pos) {
  for (int d = r - 1; d >= 0; d--) {
    pos[d] = k % w->dims[d].size;
    k /= w->dims[d].size;
  }
}

void lower_select_and_scatter(lctx *x, ir_id i) {
  const ir_inst *in = &x->comp->insts.v[i];
  tb *b = x->b;
  tval *X = x->val[in->ops[0]], *S = x->val[in->ops[1]], *I = x->val[in->ops[2]];
  const ir_window *w = ir_window_of(in->a);
  int r = X->rank;
  tk_elem sel, sc;
  if (!lower_scalar_comp(x, in->calls[0], &sel) || !lower_scalar_comp(x, in->calls[1], &sc)) return;
  b->loc = in->info->loc;
  int64_t stride[IR_MAX_RANK], np[IR_MAX_RANK], K = 1, pos[IR_MAX_RANK];
  for (int d = 0; d < r; d++) {
    stride[d] = w->dims[d].stride;
    np[d] = X->dims[d] + w->dims[d].pad_lo + w->dims[d].pad_hi;
    K *= w->dims[d].size;
  }
  tval *R = tv_broadcast(b, I, r, np);
  if (S->count > 0) {
    tval *xp, *vp, *st[3] = {NULL, NULL, NULL};
    padded_inputs(b, w, X, I, &xp, &vp);
    for (int64_t k = 0; k < K; k++) {
      window_pos(w, r, k, pos);
      tval *xw = strided(b, xp, pos, stride, S->dims), *vw = strided(b, vp, pos, stride, S->dims);
      if (k == 0) {
        st[0] = xw, st[1] = vw;
        st[2] = tv_new(b, IR_S32, r, S->dims);
        tk_fill(b, tv_addr(st[2]), st[2]->count, 4, 0);
        continue;
      }
      select_pass(b, &sel, k, st, xw, vw);
      tv_release(b, xw);
      tv_release(b, vw);
    }
    tv_release(b, xp);
    tv_release(b, vp);
    int64_t rs[IR_MAX_RANK], ds[IR_MAX_RANK];
    tv_strides(R, rs);
    for (int64_t k = K - 1; k >= 0; k--) {
      window_pos(w, r, k, pos);
      tval *rw = strided(b, R, pos, stride, S->dims);
      tval *nw = scatter_pass(b, &sc, k, S, rw, st[1], st[2]);
      uint64_t at = tv_addr(R);
      for (int d = 0; d < r; d++) ds[d] = stride[d] * rs[d], at += (uint64_t)(pos[d] * rs[d] * tv_esize(R->type));
      int64_t ns[IR_MAX_RANK];
      tv_strides(nw, ns);
      tk_copy(b, at, ds, tv_addr(nw), ns, r, S->dims, tv_esize(R->type));
      tv_release(b, rw);
      tv_release(b, nw);
    }
    for (int k = 0; k < 3; k++) tv_release(b, st[k]);
  }
  int64_t lo[IR_MAX_RANK];
  for (int d = 0; d < r; d++) lo[d] = w->dims[d].pad_lo, stride[d] = 1;
  x->val[i] = strided(b, R, lo, stride, X->dims);
  tv_release(b, R);
}
