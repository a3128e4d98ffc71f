/* eval_gather.c: the indexing ops: dynamic-slice, dynamic-update-slice,
 * gather, scatter and select-and-scatter, with XLA's semantics (the
 * contract backends are checked against):
 *  - start indices are read as int64 whatever their integer type;
 *  - dynamic-slice, dynamic-update-slice and gather clamp each start into
 *    [0, operand dim - slice (update) dim], so the slice is always inside;
 *  - scatter skips an update window whose start puts any part of it
 *    outside the operand (the whole window, as XLA's evaluator); the
 *    windows are applied in row-major order of the updates' scatter
 *    dimensions, each window's elements in row-major order, and to_apply
 *    is called as to_apply(current..., update...);
 *  - select-and-scatter: the result starts as init everywhere; for each
 *    source element in row-major order, the window's positions inside the
 *    operand are visited in row-major order and the first is kept until
 *    select(kept, current) is false, when current is kept instead; the
 *    source value is then combined as scatter(source, result[kept]). A
 *    window entirely in the padding scatters nothing.
 * Attributes and shapes are re-checked by shape inference before any
 * index arithmetic (memory safety does not rest on the verifier). */
#include "ir/eval_internal.h"

/* Re-checks in's operands and attributes by shape inference. */
static base_status recheck(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops) {
  if (cx->shapes_checked) return ST_OK; /* ev_check_shapes did, before the replicas started */
  ir_shape *s;
  base_status st = ev_alloc_array(cx, in, in->nops, (int64_t)sizeof *s, (void **)&s);
  if (st != ST_OK) return st;
  for (int k = 0; k < in->nops; k++) s[k] = ops[k]->shape;
  ir_shape out = *in->shape;
  char err[256];
  if (!ir_infer_shape(cx->m, in->op, s, in->nops, in->a, in->calls, in->ncalls, &out, err, sizeof err))
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "%s", err);
  return ST_OK;
}

/* Start index k of an op whose start indices begin at operand `first`
 * (scalars, or one vector of rank 1 for an operand of rank >= 1). */
static int64_t start_at(ir_literal *const *ops, int nops, int first, int xrank, int k) {
  const ir_literal *v = ops[first];
  int64_t off = 0;
  if (nops - first == 1 && v->shape.rank == 1 && xrank != 0) off = k;
  else v = ops[first + k];
  return ev_load_i(v->shape.type, (const uint8_t *)v->data + off * ir_type_size(v->shape.type));
}

static int64_t clamp_start(int64_t s, int64_t hi) { return s < 0 ? 0 : s > hi ? hi : s; }

/* Copies a box of dims box[] from src (dims sd[], corner s0[]) to dst
 * (dims dd[], corner d0[]), row by row; elements of es bytes. */
static void copy_box(uint8_t *dst, const int64_t *dd, const int64_t *d0, const uint8_t *src,
                     const int64_t *sd, const int64_t *s0, const int64_t *box, int rank, size_t es) {
  for (int d = 0; d < rank; d++)
    if (box[d] == 0) return;
  int64_t ds[IR_MAX_RANK], ss[IR_MAX_RANK], idx[IR_MAX_RANK] = {0};
  int64_t t = 1, u = 1;
  for (int d = rank - 1; d >= 0; d--) {
    ds[d] = t, ss[d] = u;
    t *= dd[d], u *= sd[d];
  }
  size_t row = rank ? (size_t)box[rank - 1] * es : es;
  do {
    int64_t od = 0, os = 0;
    for (int d = 0; d < rank; d++) {
      int64_t i = d == rank - 1 ? 0 : idx[d];
      od += (d0[d] + i) * ds[d];
      os += (s0[d] + i) * ss[d];
    }
    memcpy(dst + (size_t)od * es, src + (size_t)os * es, row);
  } while (rank > 1 && ev_next_index(rank - 1, box, idx));
}

base_status ev_dynamic_slice(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  base_status st = recheck(cx, in, ops);
  if (st != ST_OK) return st;
  const ir_literal *x = ops[0];
  int r = x->shape.rank;
  int64_t start[IR_MAX_RANK], zero[IR_MAX_RANK] = {0};
  for (int d = 0; d < r; d++)
    start[d] = clamp_start(start_at(ops, in->nops, 1, r, d), x->shape.dims[d] - in->shape->dims[d]);
  if ((st = ev_new_array(cx, in, in->shape, out)) != ST_OK) return st;
  copy_box((*out)->data, in->shape->dims, zero, x->data, x->shape.dims, start, in->shape->dims, r,
           (size_t)ir_type_size(x->shape.type));
  return ST_OK;
}

base_status ev_dynamic_update_slice(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops,
                                    ir_literal **out) {
  base_status st = recheck(cx, in, ops);
  if (st != ST_OK) return st;
  const ir_literal *x = ops[0], *u = ops[1];
  int r = x->shape.rank;
  int64_t start[IR_MAX_RANK], zero[IR_MAX_RANK] = {0};
  for (int d = 0; d < r; d++)
    start[d] = clamp_start(start_at(ops, in->nops, 2, r, d), x->shape.dims[d] - u->shape.dims[d]);
  if ((st = ev_new_array(cx, in, in->shape, out)) != ST_OK) return st;
  if (x->nbytes) memcpy((*out)->data, x->data, x->nbytes);
  copy_box((*out)->data, x->shape.dims, start, u->data, u->shape.dims, zero, u->shape.dims, r,
           (size_t)ir_type_size(x->shape.type));
  return ST_OK;
}

/* ---- gather and scatter ------------------------------------------------ */

/* The index arithmetic gather and scatter share. The "batch" is the
 * indices without index_vector_dim; the "window" the operand dims that
 * are neither collapsed (inserted) nor batching, in order. */
typedef struct gs_map {
  const ir_attrs *a;
  const ir_literal *ix;
  int xrank, brank, wrank;
  int64_t bdims[IR_MAX_RANK]; /* batch dims */
  int64_t wdim[IR_MAX_RANK];  /* operand dim of window dim j */
  int64_t ixs[IR_MAX_RANK];   /* the indices' strides */
} gs_map;

static void gs_init(gs_map *g, const ir_attrs *a, const ir_literal *ix, int xrank) {
  memset(g, 0, sizeof *g);
  g->a = a, g->ix = ix, g->xrank = xrank;
  for (int d = 0; d < ix->shape.rank; d++)
    if (d != a->index_vector_dim) g->bdims[g->brank++] = ix->shape.dims[d];
  for (int d = 0; d < xrank; d++) {
    bool out = false;
    for (int i = 0; i < a->collapsed_dims.n; i++) out |= a->collapsed_dims.v[i] == d;
    for (int i = 0; i < a->operand_batching.n; i++) out |= a->operand_batching.v[i] == d;
    if (!out) g->wdim[g->wrank++] = d;
  }
  ev_strides(&ix->shape, g->ixs);
}

/* The operand start S[] of batch position G[] (not clamped). */
static void gs_start(const gs_map *g, const int64_t *G, int64_t *S) {
  const ir_attrs *a = g->a;
  const ir_shape *is = &g->ix->shape;
  int64_t pos[IR_MAX_RANK];
  for (int d = 0, b = 0; d < is->rank; d++) pos[d] = d == a->index_vector_dim ? 0 : G[b++];
  for (int d = 0; d < g->xrank; d++) S[d] = 0;
  size_t es = (size_t)ir_type_size(is->type);
  for (int k = 0; k < a->index_map.n; k++) {
    if (a->index_vector_dim < is->rank) pos[a->index_vector_dim] = k;
    int64_t off = 0;
    for (int d = 0; d < is->rank; d++) off += pos[d] * g->ixs[d];
    S[a->index_map.v[k]] = ev_load_i(is->type, (const uint8_t *)g->ix->data + (size_t)off * es);
  }
  for (int i = 0; i < a->operand_batching.n; i++) S[a->operand_batching.v[i]] = pos[a->index_batching.v[i]];
}

/* The offset of the element at (batch G, window W) of an array whose
 * dims in window_dims take W in order and the others G in order. */
static int64_t gs_outer_offset(const gs_map *g, const ir_shape *s, const int64_t *G, const int64_t *W) {
  int64_t off = 0;
  for (int i = 0, j = 0, b = 0; i < s->rank; i++) {
    bool w = j < g->a->window_dims.n && g->a->window_dims.v[j] == i;
    off = off * s->dims[i] + (w ? W[j++] : G[b++]);
  }
  return off;
}

/* The offset in the operand (dims xd) of start S plus window W. */
static int64_t gs_operand_offset(const gs_map *g, const int64_t *xd, const int64_t *S, const int64_t *W) {
  int64_t p[IR_MAX_RANK];
  for (int d = 0; d < g->xrank; d++) p[d] = S[d];
  for (int j = 0; j < g->wrank; j++) p[g->wdim[j]] += W[j];
  int64_t off = 0;
  for (int d = 0; d < g->xrank; d++) off = off * xd[d] + p[d];
  return off;
}

static bool any_zero(int n, const int64_t *d) {
  for (int i = 0; i < n; i++)
    if (d[i] == 0) return true;
  return false;
}

base_status ev_gather(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  base_status st = recheck(cx, in, ops);
  if (st != ST_OK) return st;
  const ir_literal *x = ops[0];
  gs_map g;
  gs_init(&g, in->a, ops[1], x->shape.rank);
  if ((st = ev_new_array(cx, in, in->shape, out)) != ST_OK) return st;
  int64_t wsize[IR_MAX_RANK], G[IR_MAX_RANK] = {0}, S[IR_MAX_RANK];
  for (int j = 0; j < g.wrank; j++) wsize[j] = in->a->slice_sizes.v[g.wdim[j]];
  if (any_zero(g.brank, g.bdims) || any_zero(g.wrank, wsize)) return ST_OK;
  size_t es = (size_t)ir_type_size(x->shape.type);
  uint8_t *o = (*out)->data;
  const uint8_t *xs = x->data;
  do {
    gs_start(&g, G, S);
    for (int d = 0; d < g.xrank; d++)
      S[d] = clamp_start(S[d], x->shape.dims[d] - in->a->slice_sizes.v[d]);
    int64_t W[IR_MAX_RANK] = {0};
    do {
      memcpy(o + (size_t)gs_outer_offset(&g, in->shape, G, W) * es,
             xs + (size_t)gs_operand_offset(&g, x->shape.dims, S, W) * es, es);
    } while (ev_next_index(g.wrank, wsize, W));
  } while (ev_next_index(g.brank, g.bdims, G));
  return ST_OK;
}

/* Whether the window of sizes wsize at start S lies inside the operand. */
static bool window_inside(const gs_map *g, const int64_t *xd, const int64_t *S, const int64_t *wsize) {
  for (int d = 0; d < g->xrank; d++) {
    int64_t size = 1;
    for (int j = 0; j < g->wrank; j++)
      if (g->wdim[j] == d) size = wsize[j];
    if (S[d] < 0 || S[d] > xd[d] - size) return false;
  }
  return true;
}

/* Applies the update windows of scatter to res[0..n) in place. */
static base_status scatter_windows(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, int n,
                                   ir_literal **res, ev_reducer *r) {
  const ir_shape *xs = &ops[0]->shape, *us = &ops[n + 1]->shape;
  gs_map g;
  gs_init(&g, in->a, ops[n], xs->rank);
  int64_t wsize[IR_MAX_RANK], G[IR_MAX_RANK] = {0}, S[IR_MAX_RANK];
  for (int j = 0; j < g.wrank; j++) wsize[j] = us->dims[in->a->window_dims.v[j]];
  if (any_zero(g.brank, g.bdims) || any_zero(g.wrank, wsize)) return ST_OK;
  do {
    gs_start(&g, G, S);
    if (!window_inside(&g, xs->dims, S, wsize)) continue;
    int64_t W[IR_MAX_RANK] = {0};
    do {
      size_t io = (size_t)gs_operand_offset(&g, xs->dims, S, W);
      size_t uo = (size_t)gs_outer_offset(&g, us, G, W);
      for (int k = 0; k < n; k++) {
        memcpy(r->args[k]->data, (uint8_t *)res[k]->data + io * r->es[k], r->es[k]);
        memcpy(r->args[n + k]->data, (const uint8_t *)ops[n + 1 + k]->data + uo * r->es[k], r->es[k]);
      }
      base_status st = ev_reducer_step(cx, r);
      if (st != ST_OK) return st;
      for (int k = 0; k < n; k++)
        memcpy((uint8_t *)res[k]->data + io * r->es[k], r->args[k]->data, r->es[k]);
    } while (ev_next_index(g.wrank, wsize, W));
  } while (ev_next_index(g.brank, g.bdims, G));
  return ST_OK;
}

base_status ev_scatter(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  base_status st = recheck(cx, in, ops);
  if (st != ST_OK) return st;
  int n = (in->nops - 1) / 2;
  ir_literal **res;
  ir_type *types;
  if ((st = ev_alloc_array(cx, in, n, (int64_t)sizeof *res, (void **)&res)) != ST_OK ||
      (st = ev_alloc_array(cx, in, n, (int64_t)sizeof *types, (void **)&types)) != ST_OK)
    return st;
  for (int k = 0; k < n; k++) {
    types[k] = ops[k]->shape.type;
    if ((st = ev_new_array(cx, in, &ops[k]->shape, &res[k])) != ST_OK) return st;
    if (ops[k]->nbytes) memcpy(res[k]->data, ops[k]->data, ops[k]->nbytes);
  }
  ev_reducer r;
  if ((st = ev_reducer_init(cx, in, in->calls[0], n, types, &r)) != ST_OK) return st;
  if ((st = scatter_windows(cx, in, ops, n, res, &r)) != ST_OK) return st;
  if (n == 1) {
    *out = res[0];
    return ST_OK;
  }
  return ev_new_tuple(cx, in, res, n, out);
}

/* ---- select-and-scatter -------------------------------------------------- */

/* The select computation: (kept, current) -> pred. A root compare of the
 * two parameters is applied directly (the elementwise compare's function),
 * anything else is evaluated. */
typedef struct selector {
  const ir_inst *in;
  ir_comp_id comp;
  ir_type t;
  ir_literal *args[2];
  bool fast, swapped;
  ir_cmp_dir dir;
  ir_cmp_type ct;
} selector;

static base_status selector_init(ev_ctx *cx, const ir_inst *in, ir_type t, selector *s) {
  memset(s, 0, sizeof *s);
  s->in = in, s->comp = in->calls[0], s->t = t;
  ir_shape sc = ir_shape_scalar(t);
  base_status st;
  if ((st = ev_new_array(cx, in, &sc, &s->args[0])) != ST_OK ||
      (st = ev_new_array(cx, in, &sc, &s->args[1])) != ST_OK)
    return st;
  const ir_comp *cp = &cx->m->comps.v[s->comp];
  const ir_inst *root = &cp->insts.v[cp->root];
  int live = 0;
  for (int i = 0; i < cp->insts.n; i++) live += !cp->insts.v[i].dead;
  if (live != 3 || root->op != IR_OP_COMPARE) return ST_OK;
  int64_t pn[2];
  for (int k = 0; k < 2; k++) {
    const ir_inst *p = &cp->insts.v[root->ops[k]];
    if (p->op != IR_OP_PARAMETER) return ST_OK;
    pn[k] = p->a->parameter_number;
  }
  s->fast = pn[0] != pn[1];
  s->swapped = pn[0] == 1;
  s->dir = root->a->cmp_dir, s->ct = root->a->cmp_type;
  return ST_OK;
}

/* select(kept, cur) into *keep. */
static base_status select_keep(ev_ctx *cx, selector *s, const void *kept, const void *cur, bool *keep) {
  size_t es = (size_t)ir_type_size(s->t);
  if (s->fast) {
    *keep = ev_compare_elem(s->dir, s->ct, s->t, s->swapped ? cur : kept, s->swapped ? kept : cur);
    return ST_OK;
  }
  memcpy(s->args[0]->data, kept, es);
  memcpy(s->args[1]->data, cur, es);
  arena_mark mk = arena_get_mark(cx->scratch);
  ir_literal *res;
  base_status st = ev_call(cx, s->in, s->comp, s->args, 2, &res);
  if (st == ST_OK) *keep = *(const uint8_t *)res->data != 0;
  arena_reset(cx->scratch, mk);
  return st;
}

/* The operand offset select picks in the window of source position P, or
 * -1 when the window has no position inside the operand. */
static base_status select_in_window(ev_ctx *cx, selector *s, const ir_literal *x, const ir_window *w,
                                    const int64_t *P, int64_t *pick) {
  int r = x->shape.rank;
  size_t es = (size_t)ir_type_size(s->t);
  int64_t wsize[IR_MAX_RANK], W[IR_MAX_RANK] = {0};
  for (int d = 0; d < r; d++) wsize[d] = w->dims[d].size;
  *pick = -1;
  do {
    int64_t off = 0;
    bool inside = true;
    for (int d = 0; d < r && inside; d++) {
      int64_t p = P[d] * w->dims[d].stride + W[d] - w->dims[d].pad_lo;
      inside = p >= 0 && p < x->shape.dims[d];
      off = off * x->shape.dims[d] + p;
    }
    if (!inside) continue;
    if (*pick < 0) {
      *pick = off;
      continue;
    }
    bool keep;
    const uint8_t *xd = x->data;
    base_status st = select_keep(cx, s, xd + (size_t)*pick * es, xd + (size_t)off * es, &keep);
    if (st != ST_OK) return st;
    if (!keep) *pick = off;
  } while (ev_next_index(r, wsize, W));
  return ST_OK;
}

base_status ev_select_and_scatter(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops,
                                  ir_literal **out) {
  base_status st = recheck(cx, in, ops);
  if (st != ST_OK) return st;
  const ir_literal *x = ops[0], *src = ops[1], *init = ops[2];
  ir_type t = x->shape.type;
  size_t es = (size_t)ir_type_size(t);
  if ((st = ev_new_array(cx, in, in->shape, out)) != ST_OK) return st;
  uint8_t *o = (*out)->data;
  for (size_t i = 0; i < x->nbytes; i += es) memcpy(o + i, init->data, es);
  selector s;
  ev_reducer r;
  if ((st = selector_init(cx, in, t, &s)) != ST_OK ||
      (st = ev_reducer_init(cx, in, in->calls[1], 1, &t, &r)) != ST_OK)
    return st;
  int rank = x->shape.rank;
  if (any_zero(rank, src->shape.dims)) return ST_OK;
  int64_t P[IR_MAX_RANK] = {0}, p = 0;
  do {
    int64_t pick;
    if ((st = select_in_window(cx, &s, x, ir_window_of(in->a), P, &pick)) != ST_OK) return st;
    if (pick >= 0) {
      memcpy(r.args[0]->data, (const uint8_t *)src->data + (size_t)p * es, es);
      memcpy(r.args[1]->data, o + (size_t)pick * es, es);
      if ((st = ev_reducer_step(cx, &r)) != ST_OK) return st;
      memcpy(o + (size_t)pick * es, r.args[0]->data, es);
    }
    p++;
  } while (ev_next_index(rank, src->shape.dims, P));
  return ST_OK;
}
