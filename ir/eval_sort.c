/* eval_sort.c: sort, topk and the TopK custom-call.
 *
 * The order (the contract every backend is checked against, bit for bit):
 * each row along the sorted dimension is sorted by a bottom-up merge sort
 * of its positions: runs of width 1, 2, 4, ... are merged pairwise from
 * the left; a merge takes the right run's head only when
 * comparator(right, left) is true, else the left run's head. That is a
 * stable sort for any comparator that is a strict weak order, and a fixed
 * answer for any other (NaN under LT, a comparator that is not
 * transitive). is_stable=false sorts the same way, so ties keep their
 * input order on every target.
 *
 * The comparator gets 2N scalars, parameters 2i and 2i + 1 being operand
 * i's elements at the left and right positions. topk (and the TopK
 * custom-call without to_apply) compares values by TOTALORDER, GT when
 * largest, else LT, as XLA's TopkDecomposer does; ties keep the lower
 * index first. Work: ev_work counts one step per comparison (rows x len x
 * ceil(log2 len)) before sorting, plus the comparator's own steps. */
#include "ir/eval_internal.h"

typedef struct sorter {
  ev_ctx *cx;
  const ir_inst *in;
  int n;                         /* operands */
  ir_literal *const *vals;       /* operand arrays */
  size_t es[64];                 /* element sizes */
  int64_t stride, base, len;     /* of the sorted dim; the row's first element; its length */
  ir_comp_id comp;               /* IR_NONE: TOTALORDER (dir) on operand 0 */
  ir_cmp_dir dir;
  ir_literal **args;             /* 2n scalar arguments of comp */
  /* fast path: comp is one compare of parameters fa, fb */
  bool fast;
  int fa, fb;
  ir_cmp_dir fdir;
  ir_cmp_type ftype;
} sorter;

static const uint8_t *elem(const sorter *s, int k, int64_t pos) {
  return (const uint8_t *)s->vals[k]->data + (size_t)(s->base + pos * s->stride) * s->es[k];
}

/* Whether the comparator is exactly compare(parameter a, parameter b). */
static void find_fast(sorter *s) {
  const ir_comp *cp = &s->cx->m->comps.v[s->comp];
  int live = 0;
  for (int i = 0; i < cp->insts.n; i++) live += !cp->insts.v[i].dead;
  const ir_inst *r = &cp->insts.v[cp->root];
  if (r->op != IR_OP_COMPARE || r->nops != 2 || live != 2 * s->n + 1) return;
  int pn[2];
  for (int k = 0; k < 2; k++) {
    const ir_inst *p = &cp->insts.v[r->ops[k]];
    if (p->op != IR_OP_PARAMETER) return;
    pn[k] = (int)p->a->parameter_number;
  }
  if (pn[0] / 2 != pn[1] / 2) return;
  s->fast = true;
  s->fa = pn[0];
  s->fb = pn[1];
  s->fdir = r->a->cmp_dir;
  s->ftype = r->a->cmp_type;
}

/* *out = comparator(elements at position l, elements at position r). */
static base_status before(sorter *s, int64_t l, int64_t r, bool *out) {
  if (s->comp == IR_NONE) {
    ir_type t = s->vals[0]->shape.type;
    *out = ev_compare_elem(s->dir, IR_CMPT_TOTALORDER, t, elem(s, 0, l), elem(s, 0, r));
    return ST_OK;
  }
  if (s->fast) {
    int k = s->fa / 2;
    const void *a = elem(s, k, s->fa % 2 ? r : l), *b = elem(s, k, s->fb % 2 ? r : l);
    *out = ev_compare_elem(s->fdir, s->ftype, s->vals[k]->shape.type, a, b);
    return ST_OK;
  }
  for (int k = 0; k < s->n; k++) {
    memcpy(s->args[2 * k]->data, elem(s, k, l), s->es[k]);
    memcpy(s->args[2 * k + 1]->data, elem(s, k, r), s->es[k]);
  }
  arena_mark mk = arena_get_mark(s->cx->scratch);
  ir_literal *res;
  base_status st = ev_call(s->cx, s->in, s->comp, s->args, 2 * s->n, &res);
  if (st == ST_OK) *out = *(const uint8_t *)res->data != 0;
  arena_reset(s->cx->scratch, mk);
  return st;
}

/* Sorts positions 0..len) of the current row into *perm (the contract's
 * merge sort); a and b are scratch of len entries each. */
static base_status merge_sort(sorter *s, int64_t len, int64_t *a, int64_t *b, int64_t **perm) {
  for (int64_t i = 0; i < len; i++) a[i] = i;
  for (int64_t w = 1; w < len; w *= 2) {
    for (int64_t lo = 0; lo < len; lo += 2 * w) {
      int64_t mid = lo + w < len ? lo + w : len, hi = lo + 2 * w < len ? lo + 2 * w : len;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        bool right;
        base_status st = before(s, a[j], a[i], &right);
        if (st != ST_OK) return st;
        b[k++] = right ? a[j++] : a[i++];
      }
      while (i < mid) b[k++] = a[i++];
      while (j < hi) b[k++] = a[j++];
    }
    int64_t *t = a;
    a = b;
    b = t;
  }
  *perm = a;
  return ST_OK;
}

static int ceil_log2(int64_t n) {
  int p = 0;
  while (((int64_t)1 << p) < n) p++;
  return p;
}

/* Sorts every row along dim of the operands; for each row calls emit. */
typedef base_status row_fn(sorter *s, const int64_t *perm, int64_t row, void *arg);

static base_status sort_rows(sorter *s, int64_t dim, row_fn *emit, void *arg) {
  ev_ctx *cx = s->cx;
  const ir_shape *sh = &s->vals[0]->shape;
  int64_t total = ir_shape_count(sh), len = sh->dims[dim], strides[IR_MAX_RANK];
  ev_strides(sh, strides);
  s->stride = strides[dim];
  s->len = len;
  base_status st = ev_work(cx, s->in, (double)total * ceil_log2(len));
  int64_t *a = NULL, *b = NULL;
  if (st == ST_OK) st = ev_alloc_array(cx, s->in, len ? len : 1, 8, (void **)&a);
  if (st == ST_OK) st = ev_alloc_array(cx, s->in, len ? len : 1, 8, (void **)&b);
  if (st == ST_OK && s->comp != IR_NONE) {
    st = ev_alloc_array(cx, s->in, 2 * s->n, (int64_t)sizeof *s->args, (void **)&s->args);
    for (int k = 0; k < 2 * s->n && st == ST_OK; k++) {
      ir_shape sc = ir_shape_scalar(s->vals[k / 2]->shape.type);
      st = ev_new_array(cx, s->in, &sc, &s->args[k]);
    }
    if (st == ST_OK) find_fast(s);
  }
  int64_t row = 0;
  for (int64_t e = 0; e < total && st == ST_OK && len > 0; e++) {
    if ((e / s->stride) % len != 0) continue; /* not a row's first element */
    s->base = e;
    int64_t *perm;
    st = merge_sort(s, len, a, b, &perm);
    if (st == ST_OK) st = emit(s, perm, row++, arg);
  }
  return st;
}

/* sort: writes each operand's row in the sorted order. */
static base_status emit_sorted(sorter *s, const int64_t *perm, int64_t row, void *arg) {
  (void)row;
  ir_literal **outs = arg;
  int64_t len = s->len;
  for (int k = 0; k < s->n; k++) {
    uint8_t *o = outs[k]->data;
    for (int64_t j = 0; j < len; j++)
      memcpy(o + (size_t)(s->base + j * s->stride) * s->es[k], elem(s, k, perm[j]), s->es[k]);
  }
  return ST_OK;
}

base_status ev_sort(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  int64_t dim;
  bool stable;
  if (!ir_sort_attrs_of(in, &dim, &stable) || in->nops < 1 || in->nops > 64 || in->ncalls != 1 ||
      dim < 0 || dim >= ops[0]->shape.rank)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "malformed sort (the verifier reports why)");
  sorter s;
  memset(&s, 0, sizeof s);
  s.cx = cx;
  s.in = in;
  s.n = in->nops;
  s.vals = ops;
  s.comp = in->calls[0];
  ir_literal *outs[64];
  for (int k = 0; k < in->nops; k++) {
    if (!ev_dims_equal(&ops[k]->shape, &ops[0]->shape))
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "operand %d differs in dimensions", k);
    s.es[k] = (size_t)ir_type_size(ops[k]->shape.type);
    base_status st = ev_new_array(cx, in, &ops[k]->shape, &outs[k]);
    if (st != ST_OK) return st;
  }
  base_status st = sort_rows(&s, dim, emit_sorted, outs);
  if (st != ST_OK) return st;
  if (in->nops == 1) {
    *out = outs[0];
    return ST_OK;
  }
  return ev_new_tuple(cx, in, outs, in->nops, out);
}

/* topk: the first k of each sorted row, values and s32 indices. */
static base_status emit_topk(sorter *s, const int64_t *perm, int64_t row, void *arg) {
  ir_literal **outs = arg;
  int64_t k = outs[0]->shape.dims[outs[0]->shape.rank - 1];
  uint8_t *v = outs[0]->data, *ix = outs[1]->data;
  for (int64_t j = 0; j < k; j++) {
    memcpy(v + (size_t)(row * k + j) * s->es[0], elem(s, 0, perm[j]), s->es[0]);
    ev_store_from_i64(IR_S32, ix + (size_t)(row * k + j) * 4, perm[j]);
  }
  return ST_OK;
}

base_status ev_topk(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  int64_t k;
  bool largest;
  const ir_shape *x = &ops[0]->shape;
  if (!ir_topk_attrs_of(in, &k, &largest) || in->nops != 1 || x->rank < 1 ||
      k > x->dims[x->rank - 1] || k < 0 || in->shape->type != IR_TUPLE ||
      in->shape->ntuple != 2)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "malformed top-k (the verifier reports why)");
  sorter s;
  memset(&s, 0, sizeof s);
  s.cx = cx;
  s.in = in;
  s.n = 1;
  s.vals = ops;
  s.es[0] = (size_t)ir_type_size(x->type);
  s.comp = in->op == IR_OP_CUSTOM_CALL && in->ncalls == 1 ? in->calls[0] : IR_NONE;
  s.dir = largest ? IR_CMP_GT : IR_CMP_LT;
  ir_literal *outs[2];
  base_status st = ST_OK;
  for (int i = 0; i < 2 && st == ST_OK; i++) st = ev_new_array(cx, in, &in->shape->tuple[i], &outs[i]);
  if (st == ST_OK) st = sort_rows(&s, x->rank - 1, emit_topk, outs);
  if (st != ST_OK) return st;
  return ev_new_tuple(cx, in, outs, 2, out);
}
