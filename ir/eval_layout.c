/* eval_layout.c: data movement: iota, broadcast, reshape, transpose,
 * slice, concatenate, pad, reverse.
 *
 * All of them are one primitive, a strided copy: walk an index box in
 * row-major order and copy element k of the source at base + sum(idx[d] *
 * sstride[d]) to the destination at base + sum(idx[d] * dstride[d])
 * (strides in elements, any sign, 0 for broadcast). Each op only computes
 * the box and the strides, and first checks that the result dims it derives
 * from the attributes equal the instruction's. */
#include "ir/eval_internal.h"

static void strided_copy(size_t es, int rank, const int64_t *dims, const uint8_t *src, int64_t soff,
                         const int64_t *ss, uint8_t *dst, int64_t doff, const int64_t *ds) {
  for (int d = 0; d < rank; d++)
    if (dims[d] <= 0) return;
  int64_t idx[IR_MAX_RANK] = {0};
  for (;;) {
    memcpy(dst + doff * (int64_t)es, src + soff * (int64_t)es, es);
    int d = rank - 1;
    for (; d >= 0; d--) {
      if (++idx[d] < dims[d]) {
        soff += ss[d];
        doff += ds[d];
        break;
      }
      idx[d] = 0;
      soff -= ss[d] * (dims[d] - 1);
      doff -= ds[d] * (dims[d] - 1);
    }
    if (d < 0) return;
  }
}

static base_status dims_mismatch(ev_ctx *cx, const ir_inst *in, int d, int64_t want) {
  return ev_fail(cx, in, ST_INVALID_ARGUMENT,
                 "result dimension %d is %lld, but the operands and attributes give %lld", d,
                 (long long) in->shape->dims[d], (long long)want);
}

static base_status same_type(ev_ctx *cx, const ir_inst *in, const ir_literal *a) {
  if (a->shape.type == in->shape->type) return ST_OK;
  return ev_fail(cx, in, ST_INVALID_ARGUMENT, "operand type %s differs from result type %s",
                 ir_type_name(a->shape.type), ir_type_name(in->shape->type));
}

base_status ev_iota(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  (void)ops;
  int64_t dim = in->a->index;
  if (dim < 0 || dim >= in->shape->rank)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "iota_dimension %lld out of range for rank %d",
                   (long long)dim, (int) in->shape->rank);
  ir_literal *r;
  base_status st = ev_new_array(cx, in, in->shape, &r);
  if (st != ST_OK) return st;
  int64_t n = ir_shape_count(in->shape), idx[IR_MAX_RANK] = {0};
  size_t es = (size_t)ir_type_size(in->shape->type);
  for (int64_t i = 0; i < n; i++) {
    ev_store_from_i64(in->shape->type, (uint8_t *)r->data + (size_t)i * es,
                      idx[dim]);
    ev_next_index(in->shape->rank, in->shape->dims, idx);
  }
  *out = r;
  return ST_OK;
}

base_status ev_broadcast(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  const ir_literal *a = ops[0];
  const ir_ints *dm = &in->a->dimensions;
  base_status st = same_type(cx, in, a);
  if (st != ST_OK) return st;
  if (dm->n != a->shape.rank)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "%d broadcast dimensions for an operand of rank %d",
                   (int)dm->n, (int)a->shape.rank);
  int64_t as[IR_MAX_RANK], ss[IR_MAX_RANK] = {0}, os[IR_MAX_RANK];
  bool used[IR_MAX_RANK] = {false};
  ev_strides(&a->shape, as);
  for (int i = 0; i < dm->n; i++) {
    int64_t d = dm->v[i];
    if (d < 0 || d >= in->shape->rank || used[d])
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "broadcast dimension %lld invalid or repeated",
                     (long long)d);
    used[d] = true;
    /* A size-1 operand dimension may stretch to any size (stride 0). */
    if (a->shape.dims[i] == in->shape->dims[d])
      ss[d] = as[i];
    else if (a->shape.dims[i] != 1)
      return dims_mismatch(cx, in, (int)d, a->shape.dims[i]);
  }
  ir_literal *r;
  if ((st = ev_new_array(cx, in, in->shape, &r)) != ST_OK) return st;
  ev_strides(in->shape, os);
  strided_copy((size_t)ir_type_size(a->shape.type), in->shape->rank,
               in->shape->dims, a->data, 0, ss,
               r->data, 0, os);
  *out = r;
  return ST_OK;
}

base_status ev_reshape(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  const ir_literal *a = ops[0];
  base_status st = same_type(cx, in, a);
  if (st != ST_OK) return st;
  int64_t n;
  if (!ir_shape_elements(in->shape, &n) || n != ir_shape_count(&a->shape))
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "reshape changes the element count");
  ir_literal *r;
  if ((st = ev_alloc(cx, in, (int64_t)sizeof *r, (void **)&r)) != ST_OK) return st;
  r->shape = ir_shape_array(in->shape->type, in->shape->rank, in->shape->dims);
  r->data = a->data; /* row-major order is unchanged: share the immutable data */
  r->nbytes = a->nbytes;
  *out = r;
  return ST_OK;
}

base_status ev_permute(ev_ctx *cx, const ir_inst *in, const ir_literal *a, const int64_t *perm,
                       ir_literal **out) {
  int rank = a->shape.rank;
  int64_t as[IR_MAX_RANK], ss[IR_MAX_RANK], os[IR_MAX_RANK], dims[IR_MAX_RANK];
  bool used[IR_MAX_RANK] = {false};
  ev_strides(&a->shape, as);
  for (int i = 0; i < rank; i++) {
    if (perm[i] < 0 || perm[i] >= rank || used[perm[i]])
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "dimensions are not a permutation of 0..%d",
                     rank - 1);
    used[perm[i]] = true;
    dims[i] = a->shape.dims[perm[i]];
    ss[i] = as[perm[i]];
  }
  ir_shape s = ir_shape_array(a->shape.type, rank, dims);
  ir_literal *r;
  base_status st = ev_new_array(cx, in, &s, &r);
  if (st != ST_OK) return st;
  ev_strides(&s, os);
  strided_copy((size_t)ir_type_size(a->shape.type), rank, dims, a->data, 0, ss, r->data, 0, os);
  *out = r;
  return ST_OK;
}

base_status ev_transpose(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  const ir_literal *a = ops[0];
  base_status st = same_type(cx, in, a);
  if (st != ST_OK) return st;
  if (in->a->dimensions.n != a->shape.rank || in->shape->rank != a->shape.rank)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "%d dimensions for an operand of rank %d",
                   (int) in->a->dimensions.n, (int)a->shape.rank);
  if ((st = ev_permute(cx, in, a, in->a->dimensions.v, out)) != ST_OK) return st;
  for (int i = 0; i < in->shape->rank; i++)
    if ((*out)->shape.dims[i] != in->shape->dims[i])
      return dims_mismatch(cx, in, i, (*out)->shape.dims[i]);
  return ST_OK;
}

base_status ev_slice(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  const ir_literal *a = ops[0];
  const ir_attrs *at = in->a;
  int rank = a->shape.rank;
  base_status st = same_type(cx, in, a);
  if (st != ST_OK) return st;
  if (at->slice_start.n != rank || at->slice_limit.n != rank ||
      (at->slice_stride.n != rank && at->slice_stride.n != 0) || in->shape->rank != rank)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "slice attributes do not match rank %d", rank);
  int64_t as[IR_MAX_RANK], ss[IR_MAX_RANK], os[IR_MAX_RANK], base = 0;
  ev_strides(&a->shape, as);
  for (int d = 0; d < rank; d++) {
    int64_t lo = at->slice_start.v[d], hi = at->slice_limit.v[d];
    int64_t step = at->slice_stride.n ? at->slice_stride.v[d] : 1;
    if (lo < 0 || lo > hi || hi > a->shape.dims[d] || step < 1)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT,
                     "slice [%lld:%lld:%lld] invalid for dimension %d of size %lld", (long long)lo,
                     (long long)hi, (long long)step, d, (long long)a->shape.dims[d]);
    int64_t n = (hi - lo) / step + ((hi - lo) % step != 0);
    if (n != in->shape->dims[d]) return dims_mismatch(cx, in, d, n);
    base += lo * as[d];
    ss[d] = step * as[d];
  }
  ir_literal *r;
  if ((st = ev_new_array(cx, in, in->shape, &r)) != ST_OK) return st;
  ev_strides(in->shape, os);
  strided_copy((size_t)ir_type_size(a->shape.type), rank, in->shape->dims,
               a->data, base, ss,
               r->data, 0, os);
  *out = r;
  return ST_OK;
}

base_status ev_concatenate(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops,
                           ir_literal **out) {
  int rank = in->shape->rank;
  if (in->nops < 1 || in->a->dimensions.n != 1)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "needs operands and one dimension");
  int64_t cd = in->a->dimensions.v[0];
  if (cd < 0 || cd >= rank)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "dimension %lld out of range for rank %d",
                   (long long)cd, rank);
  int64_t total = 0;
  base_status st;
  for (int k = 0; k < in->nops; k++) {
    const ir_literal *a = ops[k];
    if ((st = same_type(cx, in, a)) != ST_OK) return st;
    if (a->shape.rank != rank)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "operand %d has rank %d, expected %d", k,
                     (int)a->shape.rank, rank);
    for (int d = 0; d < rank; d++)
      if (d != cd && a->shape.dims[d] != in->shape->dims[d])
        return dims_mismatch(cx, in, d, a->shape.dims[d]);
    total += a->shape.dims[cd]; /* each <= 2^40: no overflow for sane counts */
    if (total > IR_MAX_ELEMENTS) return dims_mismatch(cx, in, (int)cd, total);
  }
  if (total != in->shape->dims[cd]) return dims_mismatch(cx, in, (int)cd, total);
  ir_literal *r;
  if ((st = ev_new_array(cx, in, in->shape, &r)) != ST_OK) return st;
  int64_t os[IR_MAX_RANK], as[IR_MAX_RANK], off = 0;
  ev_strides(in->shape, os);
  for (int k = 0; k < in->nops; k++) {
    ev_strides(&ops[k]->shape, as);
    strided_copy((size_t)ir_type_size(in->shape->type), rank,
                 ops[k]->shape.dims, ops[k]->data, 0,
                 as, r->data, off * os[cd], os);
    off += ops[k]->shape.dims[cd];
  }
  *out = r;
  return ST_OK;
}

/* floor(a / b) for b > 0. */
static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

base_status ev_pad(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  const ir_literal *a = ops[0], *pv = ops[1];
  int rank = a->shape.rank;
  base_status st = same_type(cx, in, a);
  if (st == ST_OK) st = same_type(cx, in, pv);
  if (st != ST_OK) return st;
  if (pv->shape.rank != 0)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "padding value is not a scalar");
  if (in->a->npad != rank || in->shape->rank != rank || (rank > 0 && !in->a->padding))
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "%d padding entries for rank %d",
                   (int) in->a->npad,
                   rank);
  /* Operand index i lands at lo + i * (interior + 1); the box of operand
   * indices that land inside the result is [first, last]. */
  int64_t box[IR_MAX_RANK], as[IR_MAX_RANK], os[IR_MAX_RANK], ds[IR_MAX_RANK];
  int64_t sbase = 0, dbase = 0;
  bool empty = false;
  ev_strides(&a->shape, as);
  ev_strides(in->shape, os);
  for (int d = 0; d < rank; d++) {
    const ir_padding_dim *p = &in->a->padding[d];
    int64_t n = a->shape.dims[d], want, step;
    if (p->interior < 0 || p->interior > IR_MAX_ELEMENTS || p->lo < -IR_MAX_ELEMENTS * 4 ||
        p->lo > IR_MAX_ELEMENTS || p->hi < -IR_MAX_ELEMENTS * 4 || p->hi > IR_MAX_ELEMENTS)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "padding of dimension %d out of range", d);
    step = p->interior + 1;
    int64_t inner;
    if (__builtin_mul_overflow(n > 0 ? n - 1 : 0, p->interior, &inner) || inner > IR_MAX_ELEMENTS)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "interior padding of dimension %d too large", d);
    want = p->lo + p->hi + n + inner; /* each term within 2^43: no overflow */
    if (want != in->shape->dims[d]) return dims_mismatch(cx, in, d, want);
    int64_t first = p->lo >= 0 ? 0 : floor_div(-p->lo + step - 1, step);
    int64_t last = floor_div(want - 1 - p->lo, step);
    if (last > n - 1) last = n - 1;
    if (first > last) {
      empty = true;
      continue;
    }
    /* first <= last < n: every offset below lies inside the operand or
     * the result, and a stride is used only when two elements land */
    box[d] = last - first + 1;
    sbase += first * as[d];
    dbase += (p->lo + first * step) * os[d];
    ds[d] = box[d] > 1 ? step * os[d] : 0;
  }
  ir_literal *r;
  if ((st = ev_new_array(cx, in, in->shape, &r)) != ST_OK) return st;
  size_t es = (size_t)ir_type_size(in->shape->type);
  int64_t total = ir_shape_count(in->shape);
  for (int64_t i = 0; i < total; i++)
    memcpy((uint8_t *)r->data + (size_t)i * es, pv->data, es);
  if (!empty && total > 0) strided_copy(es, rank, box, a->data, sbase, as, r->data, dbase, ds);
  *out = r;
  return ST_OK;
}

base_status ev_reverse(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  const ir_literal *a = ops[0];
  int rank = a->shape.rank;
  base_status st = same_type(cx, in, a);
  if (st != ST_OK) return st;
  if (!ev_dims_equal(&a->shape, in->shape))
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "operand dims differ from the result's");
  int64_t ss[IR_MAX_RANK], os[IR_MAX_RANK], base = 0;
  bool rev[IR_MAX_RANK] = {false};
  ev_strides(&a->shape, ss);
  for (int i = 0; i < in->a->dimensions.n; i++) {
    int64_t d = in->a->dimensions.v[i];
    if (d < 0 || d >= rank || rev[d])
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "dimension %lld invalid or repeated",
                     (long long)d);
    rev[d] = true;
  }
  for (int d = 0; d < rank; d++) {
    if (!rev[d]) continue;
    base += (a->shape.dims[d] > 0 ? a->shape.dims[d] - 1 : 0) * ss[d];
    ss[d] = -ss[d];
  }
  ir_literal *r;
  if ((st = ev_new_array(cx, in, in->shape, &r)) != ST_OK) return st;
  ev_strides(in->shape, os);
  strided_copy((size_t)ir_type_size(a->shape.type), rank, a->shape.dims, a->data, base, ss, r->data,
               0, os);
  *out = r;
  return ST_OK;
}
