/* attrs.c: the attribute table of ir/attrs.def as descriptors, and the
 * kind-generic equality and hash of attribute sets that CSE uses. */
#include "ir/ir.h"

/* IR_OPS(a, b, ...): the set of up to 8 ops as a constant ir_opset. */
#define IR_OPBIT(w, op) | ((unsigned)(op) >> 6 == (w) ? UINT64_C(1) << ((unsigned)(op) & 63) : 0)
#define IR_FE1(w, a) IR_OPBIT(w, a)
#define IR_FE2(w, a, ...) IR_OPBIT(w, a) IR_FE1(w, __VA_ARGS__)
#define IR_FE3(w, a, ...) IR_OPBIT(w, a) IR_FE2(w, __VA_ARGS__)
#define IR_FE4(w, a, ...) IR_OPBIT(w, a) IR_FE3(w, __VA_ARGS__)
#define IR_FE5(w, a, ...) IR_OPBIT(w, a) IR_FE4(w, __VA_ARGS__)
#define IR_FE6(w, a, ...) IR_OPBIT(w, a) IR_FE5(w, __VA_ARGS__)
#define IR_FE7(w, a, ...) IR_OPBIT(w, a) IR_FE6(w, __VA_ARGS__)
#define IR_FE8(w, a, ...) IR_OPBIT(w, a) IR_FE7(w, __VA_ARGS__)
#define IR_FE_PICK(_1, _2, _3, _4, _5, _6, _7, _8, n, ...) n
#define IR_OPW(w, ...)                                                                           \
  (0 IR_FE_PICK(__VA_ARGS__, IR_FE8, IR_FE7, IR_FE6, IR_FE5, IR_FE4, IR_FE3, IR_FE2, IR_FE1,     \
                _)(w, __VA_ARGS__))
#define IR_OPS(...) {{IR_OPW(0, __VA_ARGS__), IR_OPW(1, __VA_ARGS__), IR_OPW(2, __VA_ARGS__)}}
#define IR_NO_OPS {{0}}
_Static_assert(IR_OP__COUNT <= 3 * 64, "IR_OPS fills three words");
#define IR_NAMES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define IR_ATTR(kind, spelling, f, g, h, ops, req, flags, min, names, noun)                     \
  {IR_AK_##kind, spelling, offsetof(ir_attrs, f), offsetof(ir_attrs, g), offsetof(ir_attrs, h), \
   ops, req, flags, min, names, noun},
const ir_attr_desc ir_attr_table[] = {
#include "ir/attrs.def"
};
#undef IR_ATTR
const int ir_attr_count = (int)COUNTOF(ir_attr_table);

/* The union of the rows' OPS, word by word. */
#undef IR_OPS
#undef IR_NO_OPS
#define IR_OPS(...) IR_OPW(IR_W, __VA_ARGS__)
#define IR_NO_OPS 0
#define IR_ATTR(kind, spelling, f, g, h, ops, req, ...) | ops
#define IR_W 0
const ir_opset ir_attr_ops_any = {{0
#include "ir/attrs.def"
#undef IR_W
#define IR_W 1
, 0
#include "ir/attrs.def"
#undef IR_W
#define IR_W 2
, 0
#include "ir/attrs.def"
}};
#undef IR_ATTR
#undef IR_W

/* ENUM and PREC fields are read and written as int. */
_Static_assert(sizeof(ir_cmp_dir) == sizeof(int) && sizeof(ir_cmp_type) == sizeof(int) &&
                   sizeof(ir_fusion_kind) == sizeof(int) && sizeof(ir_precision) == sizeof(int),
               "enum attributes are int-sized");

static bool ints_eq(const ir_ints *a, const ir_ints *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++)
    if (a->v[i] != b->v[i]) return false;
  return true;
}

static bool pads_eq(const ir_padding_dim *p, const ir_padding_dim *q, int32_t n) {
  for (int i = 0; i < n; i++)
    if (p[i].lo != q[i].lo || p[i].hi != q[i].hi || p[i].interior != q[i].interior) return false;
  return true;
}

/* Two windows are equal when both or neither are given, with equal dims. */
static bool window_eq(const ir_window *p, const ir_window *q) {
  if ((p != NULL) != (q != NULL)) return false;
  if (!p) return true;
  if (p->rank != q->rank) return false;
  for (int i = 0; i < p->rank; i++) {
    const ir_window_dim *x = &p->dims[i], *y = &q->dims[i];
    if (x->size != y->size || x->stride != y->stride || x->pad_lo != y->pad_lo ||
        x->pad_hi != y->pad_hi || x->lhs_dilate != y->lhs_dilate ||
        x->rhs_dilate != y->rhs_dilate || x->reversal != y->reversal)
      return false;
  }
  return true;
}

static bool groups_eq(const ir_replica_groups *p, const ir_replica_groups *q) {
  if (p->ngroups != q->ngroups || (p->iota != NULL) != (q->iota != NULL)) return false;
  if (p->iota && strcmp(p->iota, q->iota) != 0) return false;
  for (int g = 0; g < p->ngroups; g++)
    if (!ints_eq(&p->groups[g], &q->groups[g])) return false;
  return true;
}

/* Whether row d counts for op (IR_AF_CSE_OPS: only on its ops). */
static bool counts(const ir_attr_desc *d, ir_op op) {
  return !(d->flags & IR_AF_CSE_OPS) || ir_attr_on(&d->ops, op);
}

bool ir_attrs_equal(ir_op op, const ir_attrs *a, const ir_attrs *b) {
  for (int r = 0; r < ir_attr_count; r++) {
    const ir_attr_desc *d = &ir_attr_table[r];
    if (!counts(d, op)) continue;
    bool eq = true;
    switch (d->kind) {
    case IR_AK_INT: eq = *IR_ATTR_CFIELD(a, d->f, int64_t) == *IR_ATTR_CFIELD(b, d->f, int64_t); break;
    case IR_AK_SLICE:
      eq = ints_eq(IR_ATTR_CFIELD(a, d->g, ir_ints), IR_ATTR_CFIELD(b, d->g, ir_ints)) &&
           ints_eq(IR_ATTR_CFIELD(a, d->h, ir_ints), IR_ATTR_CFIELD(b, d->h, ir_ints));
      /* fall through */
    case IR_AK_INTS: eq = eq && ints_eq(IR_ATTR_CFIELD(a, d->f, ir_ints), IR_ATTR_CFIELD(b, d->f, ir_ints)); break;
    case IR_AK_PADS: {
      int32_t n = *IR_ATTR_CFIELD(a, d->g, int32_t);
      eq = n == *IR_ATTR_CFIELD(b, d->g, int32_t) &&
           pads_eq(*IR_ATTR_CFIELD(a, d->f, ir_padding_dim *), *IR_ATTR_CFIELD(b, d->f, ir_padding_dim *), n);
      break;
    }
    case IR_AK_PREC:
      eq = IR_ATTR_CFIELD(a, d->f, int)[1] == IR_ATTR_CFIELD(b, d->f, int)[1];
      /* fall through */
    case IR_AK_ENUM: eq = eq && *IR_ATTR_CFIELD(a, d->f, int) == *IR_ATTR_CFIELD(b, d->f, int); break;
    case IR_AK_WINDOW:
      eq = window_eq(*IR_ATTR_CFIELD(a, d->f, const ir_window *), *IR_ATTR_CFIELD(b, d->f, const ir_window *));
      break;
    case IR_AK_CONV: eq = memcmp(IR_ATTR_CFIELD(a, d->f, ir_conv_dims), IR_ATTR_CFIELD(b, d->f, ir_conv_dims), sizeof(ir_conv_dims)) == 0; break;
    case IR_AK_GROUPS:
      eq = groups_eq(IR_ATTR_CFIELD(a, d->f, ir_replica_groups), IR_ATTR_CFIELD(b, d->f, ir_replica_groups));
      break;
    case IR_AK_TYPE: eq = *IR_ATTR_CFIELD(a, d->f, ir_type) == *IR_ATTR_CFIELD(b, d->f, ir_type); break;
    case IR_AK_LITERAL: {
      const ir_literal *p = *IR_ATTR_CFIELD(a, d->f, ir_literal *), *q = *IR_ATTR_CFIELD(b, d->f, ir_literal *);
      eq = p == q || (p && q && ir_literal_equal(p, q));
      break;
    }
    }
    if (!eq) return false;
  }
  return true;
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static uint64_t mix_ints(uint64_t h, const ir_ints *v) {
  h = mix(h, (uint64_t)v->n);
  for (int i = 0; i < v->n; i++) h = mix(h, (uint64_t)v->v[i]);
  return h;
}

uint64_t ir_attrs_hash(ir_op op, const ir_attrs *a, uint64_t h) {
  for (int r = 0; r < ir_attr_count; r++) {
    const ir_attr_desc *d = &ir_attr_table[r];
    if (!counts(d, op)) continue;
    switch (d->kind) {
    case IR_AK_INT: h = mix(h, (uint64_t)*IR_ATTR_CFIELD(a, d->f, int64_t)); break;
    case IR_AK_SLICE:
      h = mix_ints(h, IR_ATTR_CFIELD(a, d->g, ir_ints));
      h = mix_ints(h, IR_ATTR_CFIELD(a, d->h, ir_ints));
      /* fall through */
    case IR_AK_INTS: h = mix_ints(h, IR_ATTR_CFIELD(a, d->f, ir_ints)); break;
    case IR_AK_PADS: h = mix(h, (uint64_t)*IR_ATTR_CFIELD(a, d->g, int32_t)); break;
    case IR_AK_PREC: h = mix(h, (uint64_t)IR_ATTR_CFIELD(a, d->f, int)[1]);
      /* fall through */
    case IR_AK_ENUM: h = mix(h, (uint64_t)*IR_ATTR_CFIELD(a, d->f, int)); break;
    case IR_AK_WINDOW: {
      const ir_window *w = *IR_ATTR_CFIELD(a, d->f, const ir_window *);
      h = mix(h, w ? (uint64_t)w->rank + 1 : 0);
      break;
    }
    case IR_AK_CONV: h = mix(h, (uint64_t)IR_ATTR_CFIELD(a, d->f, ir_conv_dims)->nspatial); break;
    case IR_AK_GROUPS: h = mix(h, (uint64_t)IR_ATTR_CFIELD(a, d->f, ir_replica_groups)->ngroups); break;
    case IR_AK_TYPE: h = mix(h, (uint64_t)*IR_ATTR_CFIELD(a, d->f, ir_type)); break;
    case IR_AK_LITERAL: {
      const ir_literal *l = *IR_ATTR_CFIELD(a, d->f, ir_literal *);
      if (l && l->data) {
        const uint8_t *p = l->data;
        size_t n = l->nbytes < 64 ? l->nbytes : 64;
        for (size_t i = 0; i < n; i++) h = mix(h, p[i]);
      }
      break;
    }
    }
  }
  return h;
}
