/* value.c: the values of the lowering (value.h): HBM buffers shared by
 * reference count, the constant pool, and the value-to-value operations
 * the op lowerings share (convert, bf16 parts, broadcast, transpose,
 * pad), each one kernel. Calls the builder and the kernels only. */
#include "backend/tpu/value.h"

int tv_esize(ir_type t) { return tk_itype(t) == IR_BF16 ? 2 : 4; }

/* A value of type t and dims without storage. */
static tval *tv_shaped(tb *b, ir_type t, int rank, const int64_t *dims) {
  tval *v = arena_alloc(b->a, sizeof *v);
  v->type = t;
  v->rank = rank;
  v->count = 1;
  for (int k = 0; k < rank; k++) {
    v->dims[k] = dims[k];
    v->count *= dims[k];
  }
  return v;
}

tval *tv_new(tb *b, ir_type t, int rank, const int64_t *dims) {
  tval *v = tv_shaped(b, t, rank, dims);
  v->buf = arena_alloc(b->a, sizeof *v->buf);
  v->buf->bytes = (uint64_t)v->count * (uint64_t)tv_esize(t);
  v->buf->addr = tb_hbm_alloc(b, v->buf->bytes);
  v->buf->refs = 1;
  v->buf->owned = true;
  return v;
}

tval *tv_alias(tb *b, const tval *v, ir_type t, int rank, const int64_t *dims) {
  tval *r = tv_shaped(b, t, rank, dims);
  r->buf = v->buf;
  r->buf->refs++;
  return r;
}

tval *tv_ref(tb *b, tval *v) {
  if (v->tuple) {
    tval *t = arena_alloc(b->a, sizeof *t);
    *t = *v;
    t->elems = arena_array(b->a, (size_t)(v->n ? v->n : 1), sizeof(tval *));
    for (int k = 0; k < v->n; k++)
      t->elems[k] = tv_ref(b, v->elems[k]);
    return t;
  }
  return tv_alias(b, v, v->type, v->rank, v->dims);
}

void tv_release(tb *b, tval *v) {
  if (!v) return;
  if (v->tuple) {
    for (int k = 0; k < v->n; k++)
      tv_release(b, v->elems[k]);
    return;
  }
  if (--v->buf->refs == 0 && v->buf->owned) tb_hbm_free(b, v->buf->addr, v->buf->bytes);
}

void tv_strides(const tval *v, int64_t *st) {
  int64_t s = 1;
  for (int k = v->rank - 1; k >= 0; k--) {
    st[k] = s;
    s *= v->dims[k];
  }
}

uint64_t tv_addr(const tval *v) { return v->buf->addr; }

uint32_t lit_bits(const ir_literal *l, int64_t idx) {
  switch (l->shape.type) {
  case IR_F32: {
    uint32_t u;
    memcpy(&u, (const char *)l->data + idx * 4, 4);
    return u;
  }
  case IR_BF16: {
    uint16_t h;
    memcpy(&h, (const char *)l->data + idx * 2, 2);
    return (uint32_t)h << 16;
  }
  case IR_F16: {
    uint16_t h;
    memcpy(&h, (const char *)l->data + idx * 2, 2);
    float f = ir_f16_to_f32(h);
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
  }
  default:
    return (uint32_t)(int32_t)ir_literal_get_i64(l, idx);
  }
}

tval *tv_convert(tb *b, const tval *v, ir_type t) {
  tval *out = tv_new(b, t, v->rank, v->dims);
  tk_node nodes[2] = {{TK_IN, v->type, 0, 0, 0, 0, 0, 0, {0, 0, 0}},
                      {TK_OP, t, 0, 0, IR_OP_CONVERT, 0, 0, 1, {0, 0, 0}}};
  int root = 1;
  uint64_t ia = tv_addr(v), oa = tv_addr(out);
  ir_type it = v->type;
  tk_elem e = {2, nodes, 1, &ia, &it, 1, &root, &oa, v->count};
  tk_elementwise(b, &e);
  return out;
}

void tv_split_bf16(tb *b, const tval *v, int nparts, tval **parts) {
  tk_node nodes[6] = {
      {TK_IN, v->type, 0, 0, 0, 0, 0, 0, {0, 0, 0}},
      {TK_OP, IR_BF16, 0, 0, IR_OP_CONVERT, 0, 0, 1, {0, 0, 0}},
      {TK_OP, IR_F32, 0, 0, IR_OP_SUBTRACT, 0, 0, 2, {0, 1, 0}},
      {TK_OP, IR_BF16, 0, 0, IR_OP_CONVERT, 0, 0, 1, {2, 0, 0}},
      {TK_OP, IR_F32, 0, 0, IR_OP_SUBTRACT, 0, 0, 2, {2, 3, 0}},
      {TK_OP, IR_BF16, 0, 0, IR_OP_CONVERT, 0, 0, 1, {4, 0, 0}},
  };
  int outs[3] = {1, 3, 5};
  uint64_t oa[3];
  for (int p = 0; p < nparts; p++) {
    parts[p] = tv_new(b, IR_BF16, v->rank, v->dims);
    oa[p] = tv_addr(parts[p]);
  }
  uint64_t ia = tv_addr(v);
  ir_type it = v->type;
  tk_elem e = {2 * nparts, nodes, 1, &ia, &it, nparts, outs, oa, v->count};
  tk_elementwise(b, &e);
}

tval *tv_broadcast(tb *b, const tval *v, int rank, const int64_t *dims) {
  tval *out = tv_new(b, v->type, rank, dims);
  int64_t ds[IR_MAX_RANK], ss[IR_MAX_RANK] = {0};
  tv_strides(out, ds);
  tk_copy(b, tv_addr(out), ds, tv_addr(v), ss, rank, dims, tv_esize(v->type));
  return out;
}

tval *tv_transpose(tb *b, const tval *v, const int64_t *perm) {
  int64_t dims[IR_MAX_RANK], vs[IR_MAX_RANK], ss[IR_MAX_RANK], ds[IR_MAX_RANK];
  tv_strides(v, vs);
  for (int k = 0; k < v->rank; k++) {
    dims[k] = v->dims[perm[k]];
    ss[k] = vs[perm[k]];
  }
  tval *out = tv_new(b, v->type, v->rank, dims);
  tv_strides(out, ds);
  tk_copy(b, tv_addr(out), ds, tv_addr(v), ss, v->rank, dims, tv_esize(v->type));
  return out;
}

tval *tv_pad(tb *b, const tval *v, const tval *pv, const ir_padding_dim *pd, ir_type t) {
  int64_t dims[IR_MAX_RANK];
  for (int k = 0; k < v->rank; k++) {
    int64_t in = v->dims[k];
    dims[k] = pd[k].lo + pd[k].hi + in + (in > 0 ? (in - 1) * pd[k].interior : 0);
    if (dims[k] < 0) dims[k] = 0;
  }
  tval *out = tv_new(b, t, v->rank, dims);
  int es = tv_esize(t);
  /* Fill with the pad value (broadcast from its one-element buffer). */
  int64_t ds[IR_MAX_RANK], zs[IR_MAX_RANK] = {0}, vs[IR_MAX_RANK];
  tv_strides(out, ds);
  tv_strides(v, vs);
  tk_copy(b, tv_addr(out), ds, tv_addr(pv), zs, out->rank, dims, es);
  /* Interior: operand index i lands at lo + i*(interior+1). */
  int64_t n[IR_MAX_RANK], so[IR_MAX_RANK], dstr[IR_MAX_RANK];
  int64_t src = 0, dst = 0;
  for (int k = 0; k < v->rank; k++) {
    int64_t s = pd[k].interior + 1, lo = pd[k].lo, first = 0;
    if (lo < 0) first = (-lo + s - 1) / s;
    int64_t last = v->dims[k] - 1; /* largest i with lo + i*s < dims[k] */
    if (lo + last * s >= dims[k]) last = dims[k] - 1 - lo < 0 ? -1 : (dims[k] - 1 - lo) / s;
    n[k] = last >= first ? last - first + 1 : 0;
    if (n[k] <= 0) return out;
    src += first * vs[k];
    dst += (lo + first * s) * ds[k];
    so[k] = vs[k];
    dstr[k] = ds[k] * s;
  }
  tk_copy(b, tv_addr(out) + (uint64_t)(dst * es), dstr, tv_addr(v) + (uint64_t)(src * es), so,
          v->rank, n, es);
  return out;
}

static tv_pool *g_pool_of(tb *b) { return (tv_pool *)b->pool; }

/* Constants live in the CONST section (compile.c copies the pool into
 * the image), written to HBM before the run, so
 * their regions must never have held scratch: compile.c creates every
 * constant before lowering starts (pool->frozen afterwards), and later
 * requests are answered from the cache (same literal, or a scalar with the
 * same type and bits). */
struct tv_cconst {
  const ir_literal *lit;
  ir_type type;
  uint32_t bits;
  bool scalar;
  tval *v;
};

static tval *const_lookup(tv_pool *p, const ir_literal *l) {
  bool scalar = l->shape.type != IR_TUPLE && ir_shape_count(&l->shape) == 1 && l->shape.rank == 0;
  for (int k = 0; k < p->cache.n; k++) {
    const tv_cconst *c = &p->cache.v[k];
    if (c->lit == l) return c->v;
    if (scalar && c->scalar && c->type == l->shape.type && c->bits == lit_bits(l, 0)) return c->v;
  }
  return NULL;
}

static tval *const_new(tb *b, const ir_literal *l);

tval *tv_const(tb *b, const ir_literal *l) {
  tv_pool *p = g_pool_of(b);
  tval *v = const_lookup(p, l);
  if (v) return v;
  if (p->frozen) base_die("tpu: constant created after lowering started");
  v = const_new(b, l);
  bool scalar = l->shape.type != IR_TUPLE && l->shape.rank == 0;
  tv_cconst c = {l, l->shape.type, scalar ? lit_bits(l, 0) : 0, scalar, v};
  VEC_PUSH(b->a, p->cache, c);
  return v;
}

static tval *const_new(tb *b, const ir_literal *l) {
  if (l->shape.type == IR_TUPLE) {
    tval *t = arena_alloc(b->a, sizeof *t);
    t->tuple = true;
    t->n = l->shape.ntuple;
    t->elems = arena_array(b->a, (size_t)(t->n ? t->n : 1), sizeof(tval *));
    for (int k = 0; k < t->n; k++)
      t->elems[k] = const_new(b, l->elems[k]);
    return t;
  }
  int64_t n = ir_shape_count(&l->shape);
  tval *v = arena_alloc(b->a, sizeof *v);
  v->type = l->shape.type;
  v->rank = l->shape.rank;
  v->count = n;
  for (int k = 0; k < v->rank; k++)
    v->dims[k] = l->shape.dims[k];
  int es = tv_esize(v->type);
  uint64_t bytes = (uint64_t)n * (uint64_t)es;
  v->buf = arena_alloc(b->a, sizeof *v->buf);
  v->buf->bytes = bytes;
  v->buf->refs = 1;
  v->buf->owned = false;
  v->buf->addr = tb_hbm_alloc(b, bytes);
  if (b->failed) return v;
  uint8_t *data = arena_try_alloc(b->a, bytes ? bytes : 1);
  if (!data) {
    tb_error(b, ST_OUT_OF_MEMORY, "out of memory for a constant of %llu bytes",
             (unsigned long long)bytes);
    return v;
  }
  for (int64_t k = 0; k < n; k++) {
    uint32_t bits = lit_bits(l, k);
    if (es == 2) {
      uint16_t h = (uint16_t)(bits >> 16);
      memcpy(data + k * 2, &h, 2);
    } else {
      memcpy(data + k * 4, &bits, 4);
    }
  }
  tpub_const c = {v->buf->addr, bytes, data};
  if (bytes) VEC_PUSH(b->a, g_pool_of(b)->v, c);
  return v;
}
