/* eval_reduce.c: reduce, reduce-window and all-reduce: everything that
 * folds values with a to_apply computation.
 *
 * A reducer folds N values at a time (variadic reduce: N inputs, N
 * accumulators): acc[0..N) = to_apply(acc[0..N), x[0..N)), evaluating the
 * computation on scalar literals. Order (the contract backends are checked
 * against):
 *  - reduce: for each output element, the accumulators start as the init
 *    values and take the input elements in row-major order of the reduced
 *    dimensions (ascending dimension numbers);
 *  - reduce-window: for each output element, the accumulators start as the
 *    init values and take the window's elements in row-major order of the
 *    window; positions in the padding or in the holes of base dilation are
 *    skipped (to_apply is not called for them), as XLA's evaluator does;
 *    window reversal is not part of reduce-window and is ignored;
 *  - all-reduce: the contributions of the replicas of a group, folded in
 *    group order starting from the first (no init value).
 * The accumulator argument comes first: to_apply(acc..., x...).
 *
 * Fast path: when to_apply is exactly one add, multiply, maximum, minimum,
 * and, or of its two scalar parameters (in either order), the reducer
 * applies that op with ev_binary_elem instead of evaluating the
 * computation. It is the same function the elementwise op uses, with the
 * same operand order and the same per-step rounding, so both paths give
 * the same bits.
 *
 * TPU numerics (opts.tpu_numerics): a single-input reduce whose to_apply is
 * one such op folds as backend/tpu does when there are many rows and few
 * outputs (R >= 4096 reduced elements per output, O < 1024 outputs): see
 * reduce_tree. Otherwise, an f32 add over the trailing dimensions (R >= 1)
 * folds in the vector unit's row order: see reduce_row. Otherwise the
 * order above. */
#include "ir/eval_internal.h"

typedef ev_reducer reducer;

static bool is_scalar_of(const ir_shape *s, ir_type t) { return s->type == t && s->rank == 0; }

base_status ev_reducer_init(ev_ctx *cx, const ir_inst *in, ir_comp_id c, int n,
                            const ir_type *types, reducer *r) {
  memset(r, 0, sizeof *r);
  r->in = in;
  r->comp = c;
  r->n = n;
  if (c < 0 || c >= cx->m->comps.n)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "to_apply computation %d does not exist", (int)c);
  const ir_comp *cp = &cx->m->comps.v[c];
  base_status st;
  if ((st = ev_alloc_array(cx, in, n, (int64_t)sizeof *r->types, (void **)&r->types)) != ST_OK ||
      (st = ev_alloc_array(cx, in, n, (int64_t)sizeof *r->es, (void **)&r->es)) != ST_OK ||
      (st = ev_alloc_array(cx, in, 2 * (int64_t)n, (int64_t)sizeof *r->args, (void **)&r->args)) !=
          ST_OK ||
      /* staging: one scalar per result, up to 16 bytes (c128) each */
      (st = ev_alloc_array(cx, in, n, 16, (void **)&r->tmp)) != ST_OK)
    return st;
  for (int k = 0; k < n; k++) {
    r->types[k] = types[k];
    r->es[k] = (size_t)ir_type_size(types[k]);
    ir_shape s = ir_shape_scalar(types[k]);
    if ((st = ev_new_array(cx, in, &s, &r->args[k])) != ST_OK) return st;
    if ((st = ev_new_array(cx, in, &s, &r->args[n + k])) != ST_OK) return st;
  }
  /* Signature: 2n scalar parameters, a scalar (n = 1) or n-tuple root. */
  const ir_shape *rs =
      cp->root >= 0 && cp->root < cp->insts.n ? cp->insts.v[cp->root].shape : NULL;
  bool ok = rs != NULL;
  if (ok && n == 1)
    ok = is_scalar_of(rs, types[0]);
  else if (ok) {
    ok = rs->type == IR_TUPLE && rs->ntuple == n;
    for (int k = 0; ok && k < n; k++)
      ok = is_scalar_of(&rs->tuple[k], types[k]);
  }
  if (!ok)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT,
                   "to_apply %s must return %d scalar%s of the init types", cp->name, n,
                   n == 1 ? "" : "s");

  /* The fast path: params 0 and 1 and one binary op at the root. */
  if (n != 1) return ST_OK;
  int live = 0;
  for (int i = 0; i < cp->insts.n; i++)
    live += !cp->insts.v[i].dead;
  const ir_inst *root = &cp->insts.v[cp->root];
  if (live != 3 || root->nops != 2) return ST_OK;
  switch (root->op) {
  case IR_OP_ADD:
  case IR_OP_MULTIPLY:
  case IR_OP_MAXIMUM:
  case IR_OP_MINIMUM:
  case IR_OP_AND:
  case IR_OP_OR:
    break;
  default:
    return ST_OK;
  }
  int64_t pn[2];
  for (int k = 0; k < 2; k++) {
    ir_id o = root->ops[k];
    if (o < 0 || o >= cp->insts.n) return ST_OK;
    const ir_inst *p = &cp->insts.v[o];
    if (p->dead || p->op != IR_OP_PARAMETER || !is_scalar_of(p->shape, types[0])) return ST_OK;
    pn[k] = p->a->parameter_number;
  }
  if (!((pn[0] == 0 && pn[1] == 1) || (pn[0] == 1 && pn[1] == 0))) return ST_OK;
  r->fast = true;
  r->swapped = pn[0] == 1;
  r->fast_op = root->op;
  return ST_OK;
}

/* One fold step: args[0..n) = to_apply(args[0..n), args[n..2n)). */
base_status ev_reducer_step(ev_ctx *cx, reducer *r) {
  if (r->fast) {
    void *acc = r->args[0]->data, *x = r->args[1]->data;
    const void *ab[2] = {r->swapped ? x : acc, r->swapped ? acc : x};
    if (!(cx->opts.tpu_numerics && ev_tpu_elem(r->fast_op, r->types[0], 2, ab, r->tmp)) &&
        !ev_binary_elem(r->fast_op, r->types[0], r->swapped ? x : acc, r->swapped ? acc : x,
                        r->tmp))
      return ev_fail(cx, r->in, ST_INVALID_ARGUMENT, "to_apply's %s is not defined on %s",
                     ir_op_name(r->fast_op), ir_type_name(r->types[0]));
    memcpy(acc, r->tmp, r->es[0]);
    return ST_OK;
  }
  arena_mark mk = arena_get_mark(cx->scratch);
  ir_literal *res;
  base_status st = ev_call(cx, r->in, r->comp, r->args, 2 * r->n, &res);
  if (st == ST_OK) {
    /* Results may alias the arguments: stage them, then store. */
    size_t off = 0;
    for (int k = 0; k < r->n; k++) {
      const ir_literal *v = r->n == 1 ? res : res->elems[k];
      memcpy(r->tmp + off, v->data, r->es[k]);
      off += r->es[k];
    }
    off = 0;
    for (int k = 0; k < r->n; k++) {
      memcpy(r->args[k]->data, r->tmp + off, r->es[k]);
      off += r->es[k];
    }
  }
  arena_reset(cx->scratch, mk);
  return st;
}

/* Checks the 2n operands: n arrays of equal dims, n scalar inits of the
 * same element types; fills types[]. */
static base_status check_inputs(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, int n,
                                ir_type *types) {
  if (in->nops < 2 || in->nops % 2 != 0 || in->ncalls != 1)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT,
                   "needs N inputs, N init values and one to_apply (has %d operands, %d calls)",
                   (int)in->nops, (int)in->ncalls);
  for (int k = 0; k < n; k++) {
    const ir_literal *a = ops[k], *init = ops[n + k];
    if (!ev_dims_equal(&a->shape, &ops[0]->shape))
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "input %d dims differ from input 0's", k);
    if (!is_scalar_of(&init->shape, a->shape.type))
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "init value %d is not a %s scalar", k,
                     ir_type_name(a->shape.type));
    types[k] = a->shape.type;
  }
  return ST_OK;
}

/* Allocates the n results with dims `dims` and checks them against the
 * instruction's shape (an array for n = 1, else an n-tuple). */
static base_status new_results(ev_ctx *cx, const ir_inst *in, int n, const ir_type *types, int rank,
                               const int64_t *dims, ir_literal **res) {
  for (int k = 0; k < n; k++) {
    ir_shape s = ir_shape_array(types[k], rank, dims);
    const ir_shape *want = n == 1 ? in->shape
                           : in->shape->type == IR_TUPLE && in->shape->ntuple == n
                               ? &in->shape->tuple[k]
                               : NULL;
    if (!want || !ir_shape_equal(want, &s)) {
      strbuf b;
      sb_init(&b);
      ir_shape_print(&b, &s, false);
      base_status st =
          ev_fail(cx, in, ST_INVALID_ARGUMENT, "result %d should be %s", k, sb_str(&b));
      sb_free(&b);
      return st;
    }
    base_status st = ev_new_array(cx, in, &s, &res[k]);
    if (st != ST_OK) return st;
  }
  return ST_OK;
}

static base_status finish(ev_ctx *cx, const ir_inst *in, int n, ir_literal **res,
                          ir_literal **out) {
  if (n == 1) {
    *out = res[0];
    return ST_OK;
  }
  return ev_new_tuple(cx, in, res, n, out);
}

/* acc = to_apply(acc, x) on single elements of a one-value reducer. */
static base_status step1(ev_ctx *cx, reducer *r, void *acc, const void *x) {
  memcpy(r->args[0]->data, acc, r->es[0]);
  memcpy(r->args[1]->data, x, r->es[0]);
  base_status st = ev_reducer_step(cx, r);
  memcpy(acc, r->args[0]->data, r->es[0]);
  return st;
}

/* The tree fold of backend/tpu (lower_ops.c, fold_tree) over v = [R, O]
 * (row r = the r-th reduced element in row-major order), for a reducer the
 * backend treats as associative: when R >= 4096 and O < 1024, with
 * R2 = min(8192 / O, R / 8) >= 2 and R1 = R / R2, partial j < R2*O folds
 * v viewed as [R1, R2*O] down its column j starting from row 0 (no init);
 * the R2 partial rows, followed by the R - R1*R2 leftover rows of v, are
 * folded again the same way; the last level folds its rows in order from
 * init. v is overwritten. */
static base_status reduce_tree(ev_ctx *cx, reducer *r, uint8_t *v, int64_t R, int64_t O,
                               const void *init, uint8_t *out) {
  size_t es = r->es[0];
  int64_t R2 = O < 1024 ? 8192 / O : 0;
  if (R2 > R / 8) R2 = R / 8;
  base_status st;
  if (R < 4096 || O >= 1024 || R2 < 2) {
    for (int64_t o = 0; o < O; o++) {
      memcpy(out + (size_t)o * es, init, es);
      for (int64_t i = 0; i < R; i++)
        if ((st = step1(cx, r, out + (size_t)o * es, v + (size_t)(i * O + o) * es)) != ST_OK)
          return st;
    }
    return ST_OK;
  }
  int64_t R1 = R / R2, W = R2 * O;
  /* partials into rows 0..R2-1 of v (row 0 of the [R1, W] view) */
  for (int64_t j = 0; j < W; j++)
    for (int64_t i = 1; i < R1; i++)
      if ((st = step1(cx, r, v + (size_t)j * es, v + (size_t)(i * W + j) * es)) != ST_OK)
        return st;
  int64_t rem = R - R1 * R2;
  memmove(v + (size_t)W * es, v + (size_t)(R1 * W) * es, (size_t)(rem * O) * es);
  return reduce_tree(cx, r, v, R2 + rem, O, init, out);
}

/* The row order of backend/tpu (rows.c) for the R >= 1 contiguous
 * elements x of one output: lane l < 128 folds x[l], x[l + 128], x[l +
 * 256], ... in ascending order starting from x[l] (the row's 128-wide
 * chunks added tile by tile); then the lane partials fold in ascending
 * lane order starting from lane 0 (vrlsum), lanes without elements being
 * absent; the result is to_apply(init, that sum). */
static base_status reduce_row(ev_ctx *cx, reducer *r, const uint8_t *x, int64_t R,
                              const void *init, uint8_t *out) {
  size_t es = r->es[0];
  int64_t L = R < 128 ? R : 128;
  uint8_t p[128 * 8], t[8];
  base_status st;
  for (int64_t l = 0; l < L; l++) {
    memcpy(p + (size_t)l * es, x + (size_t)l * es, es);
    for (int64_t j = l + 128; j < R; j += 128)
      if ((st = step1(cx, r, p + (size_t)l * es, x + (size_t)j * es)) != ST_OK) return st;
  }
  memcpy(t, p, es);
  for (int64_t l = 1; l < L; l++)
    if ((st = step1(cx, r, t, p + (size_t)l * es)) != ST_OK) return st;
  memcpy(out, init, es);
  return step1(cx, r, out, t);
}

/* The n result types (*types, checked by check_inputs) and room for the
 * n result literals (*res) of a reduce or reduce-window. */
static base_status begin_reduce(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, int n, ir_type **types,
                                ir_literal ***res) {
  base_status st = ev_alloc_array(cx, in, n ? n : 1, (int64_t)sizeof **types, (void **)types);
  if (st == ST_OK) st = ev_alloc_array(cx, in, n ? n : 1, (int64_t)sizeof **res, (void **)res);
  if (st == ST_OK) st = check_inputs(cx, in, ops, n, *types);
  return st;
}

base_status ev_reduce(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  int n = in->nops / 2;
  ir_type *types;
  ir_literal **res;
  base_status st = begin_reduce(cx, in, ops, n, &types, &res);
  if (st != ST_OK) return st;
  const ir_shape *is = &ops[0]->shape;
  bool red[IR_MAX_RANK] = {false};
  for (int i = 0; i < in->a->dimensions.n; i++) {
    int64_t d = in->a->dimensions.v[i];
    if (d < 0 || d >= is->rank || red[d])
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "reduce dimension %lld invalid or repeated",
                     (long long)d);
    red[d] = true;
  }
  int64_t strides[IR_MAX_RANK], kdims[IR_MAX_RANK], kstr[IR_MAX_RANK], rdims[IR_MAX_RANK],
      rstr[IR_MAX_RANK];
  int nk = 0, nr = 0;
  ev_strides(is, strides);
  for (int d = 0; d < is->rank; d++) {
    if (red[d]) {
      rdims[nr] = is->dims[d];
      rstr[nr++] = strides[d];
    } else {
      kdims[nk] = is->dims[d];
      kstr[nk++] = strides[d];
    }
  }
  if ((st = new_results(cx, in, n, types, nk, kdims, res)) != ST_OK) return st;
  reducer r;
  if ((st = ev_reducer_init(cx, in, in->calls[0], n, types, &r)) != ST_OK) return st;

  int64_t nred = 1, nout = ir_shape_count(&res[0]->shape);
  for (int i = 0; i < nr; i++)
    nred *= rdims[i];
  if ((st = ev_work(cx, in, (double)nout * (double)nred)) != ST_OK) return st;
  if (cx->opts.tpu_numerics && n == 1 && r.fast && nred >= 4096 && nout < 1024) {
    /* gather [nred, nout] in the evaluator's order, then fold as the TPU */
    uint8_t *v;
    if ((st = ev_alloc_array(cx, in, nred * nout, (int64_t)r.es[0], (void **)&v)) != ST_OK)
      return st;
    int64_t kidx[IR_MAX_RANK] = {0};
    for (int64_t o = 0; o < nout; o++, ev_next_index(nk, kdims, kidx)) {
      int64_t base = 0, ridx[IR_MAX_RANK] = {0};
      for (int i = 0; i < nk; i++) base += kidx[i] * kstr[i];
      for (int64_t j = 0; j < nred; j++, ev_next_index(nr, rdims, ridx)) {
        int64_t off = base;
        for (int i = 0; i < nr; i++) off += ridx[i] * rstr[i];
        memcpy(v + (size_t)(j * nout + o) * r.es[0],
               (uint8_t *)ops[0]->data + (size_t)off * r.es[0], r.es[0]);
      }
    }
    if ((st = reduce_tree(cx, &r, v, nred, nout, ops[1]->data, res[0]->data)) != ST_OK) return st;
    return finish(cx, in, n, res, out);
  }
  bool trailing = nr >= 1;
  for (int d = 0; d < is->rank; d++) trailing &= red[d] == (d >= is->rank - nr);
  if (cx->opts.tpu_numerics && n == 1 && r.fast && r.fast_op == IR_OP_ADD &&
      types[0] == IR_F32 && trailing && nred >= 1 && !(nred >= 4096 && nout < 1024)) {
    /* rows are contiguous: output o folds elements o*nred .. o*nred+nred-1 */
    for (int64_t o = 0; o < nout; o++)
      if ((st = reduce_row(cx, &r, (const uint8_t *)ops[0]->data + (size_t)(o * nred) * r.es[0],
                           nred, ops[1]->data, (uint8_t *)res[0]->data + (size_t)o * r.es[0])) !=
          ST_OK)
        return st;
    return finish(cx, in, n, res, out);
  }
  int64_t kidx[IR_MAX_RANK] = {0};
  for (int64_t o = 0; o < nout; o++, ev_next_index(nk, kdims, kidx)) {
    int64_t base = 0;
    for (int i = 0; i < nk; i++)
      base += kidx[i] * kstr[i];
    for (int k = 0; k < n; k++)
      memcpy(r.args[k]->data, ops[n + k]->data, r.es[k]);
    /* the reduced index space in row-major order, offset kept incrementally */
    int64_t ridx[IR_MAX_RANK] = {0}, off = 0;
    for (int64_t j = 0; j < nred; j++) {
      for (int k = 0; k < n; k++)
        memcpy(r.args[n + k]->data, (uint8_t *)ops[k]->data + (size_t)(base + off) * r.es[k],
               r.es[k]);
      if ((st = ev_reducer_step(cx, &r)) != ST_OK) return st;
      for (int i = nr - 1; i >= 0; i--) {
        if (++ridx[i] < rdims[i]) {
          off += rstr[i];
          break;
        }
        off -= rstr[i] * (rdims[i] - 1);
        ridx[i] = 0;
      }
    }
    for (int k = 0; k < n; k++)
      memcpy((uint8_t *)res[k]->data + (size_t)o * r.es[k], r.args[k]->data, r.es[k]);
  }
  return finish(cx, in, n, res, out);
}

base_status ev_reduce_window(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops,
                             ir_literal **out) {
  int n = in->nops / 2;
  ir_type *types;
  ir_literal **res;
  base_status st = begin_reduce(cx, in, ops, n, &types, &res);
  if (st != ST_OK) return st;
  const ir_shape *is = &ops[0]->shape;
  int rank = is->rank;
  if (((in->a->window != NULL) ? ir_window_of(in->a)->rank : 0) != rank)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "window has %d dimensions, the input %d",
                   (in->a->window != NULL) ? (int) ir_window_of(in->a)->rank : 0,
                   rank);
  int64_t odims[IR_MAX_RANK], wsz[IR_MAX_RANK], strides[IR_MAX_RANK];
  const ir_window_dim *win = ir_window_of(in->a)->dims;
  for (int d = 0; d < rank; d++) {
    const ir_window_dim *w = &win[d];
    if (w->size < 0 || w->size > IR_MAX_ELEMENTS || w->stride < 1 || w->stride > IR_MAX_ELEMENTS ||
        w->lhs_dilate < 1 || w->lhs_dilate > IR_MAX_ELEMENTS || w->rhs_dilate < 1 ||
        w->rhs_dilate > IR_MAX_ELEMENTS || w->pad_lo < -IR_MAX_ELEMENTS ||
        w->pad_lo > IR_MAX_ELEMENTS || w->pad_hi < -IR_MAX_ELEMENTS ||
        w->pad_hi > IR_MAX_ELEMENTS || (double)is->dims[d] * (double)w->lhs_dilate > 4e15 ||
        (double)w->size * (double)w->rhs_dilate > 4e15)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "window dimension %d invalid", d);
    int64_t nd = is->dims[d];
    int64_t padded = (nd > 0 ? (nd - 1) * w->lhs_dilate + 1 : 0) + w->pad_lo + w->pad_hi;
    int64_t eff = w->size > 0 ? (w->size - 1) * w->rhs_dilate + 1 : 0;
    odims[d] = padded < eff || padded < 0 ? 0 : (padded - eff) / w->stride + 1;
    wsz[d] = w->size;
  }
  if ((st = new_results(cx, in, n, types, rank, odims, res)) != ST_OK) return st;
  reducer r;
  if ((st = ev_reducer_init(cx, in, in->calls[0], n, types, &r)) != ST_OK) return st;
  ev_strides(is, strides);
  int64_t nout = ir_shape_count(&res[0]->shape);
  double nwin_d = 1;
  for (int d = 0; d < rank; d++)
    nwin_d *= (double)wsz[d];
  if ((st = ev_work(cx, in, (double)nout * nwin_d)) != ST_OK) return st;
  int64_t nwin = nout == 0 ? 0 : (int64_t)nwin_d; /* else bounded by the work limit */
  int64_t oidx[IR_MAX_RANK] = {0};
  for (int64_t o = 0; o < nout; o++, ev_next_index(rank, odims, oidx)) {
    for (int k = 0; k < n; k++)
      memcpy(r.args[k]->data, ops[n + k]->data, r.es[k]);
    int64_t widx[IR_MAX_RANK] = {0};
    for (int64_t j = 0; j < nwin; j++, ev_next_index(rank, wsz, widx)) {
      int64_t off = 0;
      bool ok = true;
      for (int d = 0; d < rank && ok; d++) {
        const ir_window_dim *w = &win[d];
        int64_t u = oidx[d] * w->stride + widx[d] * w->rhs_dilate - w->pad_lo;
        int64_t x = u / w->lhs_dilate;
        if (u % w->lhs_dilate != 0 || x < 0 || x >= is->dims[d]) {
          ok = false; /* a hole of the base dilation, or padding */
          break;
        }
        off += x * strides[d];
      }
      if (!ok) continue;
      for (int k = 0; k < n; k++)
        memcpy(r.args[n + k]->data, (uint8_t *)ops[k]->data + (size_t)off * r.es[k], r.es[k]);
      if ((st = ev_reducer_step(cx, &r)) != ST_OK) return st;
    }
    for (int k = 0; k < n; k++)
      memcpy((uint8_t *)res[k]->data + (size_t)o * r.es[k], r.args[k]->data, r.es[k]);
  }
  return finish(cx, in, n, res, out);
}
