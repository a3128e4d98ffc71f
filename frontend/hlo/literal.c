/* literal.c: constant literals, read from the token tree of constant(...)
 * against the instruction's shape.
 *
 *   scalar  : integer | number | true | false | inf | nan | -inf | -nan
 *             | nan(0xPAYLOAD) | -nan(0xPAYLOAD)
 *   array   : "{" items "}" nested rank deep, each level holding exactly
 *             the dimension's count of items
 *   tuple   : "(" literal { "," literal } ")"
 *   elided  : "{...}"  (XLA's printer elides big constants): zeros, with a
 *             warning
 *   a scalar written for an array shape (XLA's quirk, f32[8] constant(0)):
 *             every element gets the scalar, with a warning.
 * The structure is checked completely before anything is allocated, so a
 * literal can never make us allocate more than its text holds; the two
 * fill forms above are capped at HLO_MAX_SPLAT values plus brace groups
 * (so that printing them back is bounded too). */
#include "frontend/hlo/hlo.h"

#include "hlo_parse.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

typedef struct lctx {
  hlo_parser *p;
  const ir_shape *s;
  ir_literal *lit;
  int64_t next; /* next element index while filling */
} lctx;

static bool lfail(lctx *c, const hlo_tok *t, const char *fmt, ...) BASE_PRINTF(3, 4);
static bool lfail(lctx *c, const hlo_tok *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fe_hlo_verror(c->p, t->loc, fmt, ap);
  va_end(ap);
  return false;
}

/* Items of a group split at ','. */
typedef struct litems {
  int n;
  int *start, *len;
} litems;

static bool lsplit(lctx *c, const hlo_tok *g, litems *it) {
  it->n = 0;
  it->start = arena_array(c->p->scratch, (size_t)g->n + 1, sizeof(int));
  it->len = arena_array(c->p->scratch, (size_t)g->n + 1, sizeof(int));
  if (g->n == 0) return true;
  int s = 0;
  for (int i = 0; i <= g->n; i++) {
    if (i == g->n || g->kids[i]->kind == ',') {
      if (i == s) return lfail(c, i < g->n ? g->kids[i] : g, "empty element in a literal");
      it->start[it->n] = s;
      it->len[it->n++] = i - s;
      s = i + 1;
    }
  }
  return true;
}

/* A scalar item: one token, or nan/-nan followed by a (0x...) group; a
 * complex value is one (re, im) group. */
static bool is_scalar(const hlo_tok *const *t, int n, ir_type ty) {
  if (ir_type_is_complex(ty)) return n == 1 && t[0]->kind == HLO_GROUP && t[0]->open == '(';
  if (n == 1) return t[0]->kind != HLO_GROUP;
  return n == 2 && t[1]->kind == HLO_GROUP && t[1]->open == '(' &&
         (strcmp(t[0]->text, "nan") == 0 || strcmp(t[0]->text, "-nan") == 0);
}

/* Payload bits and exponent of each float type, for NaNs. */
static void nan_bits(ir_type t, uint32_t *payload_mask, uint32_t *quiet, uint32_t *expo,
                     uint32_t *sign) {
  if (t == IR_F32) {
    *payload_mask = 0x7fffffu, *quiet = 0x400000u, *expo = 0x7f800000u, *sign = 0x80000000u;
  } else if (t == IR_BF16) {
    *payload_mask = 0x7fu, *quiet = 0x40u, *expo = 0x7f80u, *sign = 0x8000u;
  } else {
    *payload_mask = 0x3ffu, *quiet = 0x200u, *expo = 0x7c00u, *sign = 0x8000u;
  }
}

static void store_bits(ir_literal *l, int64_t i, uint32_t bits) {
  if (l->shape.type == IR_F32) memcpy((char *)l->data + 4 * i, &bits, 4);
  else ((uint16_t *)l->data)[i] = (uint16_t)bits;
}

/* The payload group of nan(0xPAYLOAD): nonzero, within mask. */
static bool nan_payload(lctx *c, const hlo_tok *g, uint64_t mask, ir_type t, uint64_t *out) {
  if (g->n != 1 || (g->kids[0]->kind != HEX && g->kids[0]->kind != DXD))
    return lfail(c, g, "expected a NaN payload such as nan(0x1)");
  errno = 0;
  unsigned long long pv = strtoull(g->kids[0]->text, NULL, 16);
  if (errno == ERANGE || pv == 0 || (pv & ~mask) != 0)
    return lfail(c, g->kids[0], "NaN payload %s is out of range for %s", g->kids[0]->text,
                 ir_type_name(t));
  *out = pv;
  return true;
}

/* An f64 scalar: a number, inf, nan or nan(0xPAYLOAD), signed. */
static bool scalar_f64(lctx *c, const hlo_tok *const *tk, int n, ir_literal *l, int64_t i) {
  const hlo_tok *x = tk[0];
  const char *s = x->text, *w = s[0] == '-' ? s + 1 : s;
  double d;
  if ((x->kind == NAME || x->kind == FLOAT) && strcmp(w, "nan") == 0) {
    uint64_t payload = UINT64_C(1) << 51, mask = (UINT64_C(1) << 52) - 1;
    if (n == 2 && !nan_payload(c, tk[1], mask, IR_F64, &payload)) return false;
    uint64_t bits = (s[0] == '-' ? UINT64_C(1) << 63 : 0) | (UINT64_C(0x7ff) << 52) | payload;
    memcpy(&d, &bits, 8);
  } else if ((x->kind == NAME || x->kind == FLOAT) && strcmp(w, "inf") == 0 && n == 1) {
    d = s[0] == '-' ? -INFINITY : INFINITY;
  } else if ((x->kind == INT || x->kind == FLOAT) && n == 1) {
    errno = 0;
    d = strtod(s, NULL);
    if (isinf(d)) return lfail(c, x, "value %s is out of range for f64", s);
  } else {
    return lfail(c, x, "expected a number for f64, got '%s'", s);
  }
  if (l) memcpy((char *)l->data + 8 * i, &d, 8);
  return true;
}

/* Parses one scalar for element type t; stores it at index i when l is set. */
static bool scalar(lctx *c, const hlo_tok *const *tk, int n, ir_type t, ir_literal *l,
                   int64_t i) {
  const hlo_tok *x = tk[0];
  const char *s = x->text;
  if (x->kind == HLO_GROUP && !ir_type_is_complex(t))
    return lfail(c, x, "expected a %s value", ir_type_name(t));
  if (t == IR_PRED) {
    int v = -1;
    if (x->kind == NAME && strcmp(s, "true") == 0) v = 1;
    else if (x->kind == NAME && strcmp(s, "false") == 0) v = 0;
    else if (x->kind == INT && (strcmp(s, "0") == 0 || strcmp(s, "1") == 0)) v = s[0] - '0';
    if (v < 0 || n != 1) return lfail(c, x, "expected a pred value (true, false, 0 or 1), got '%s'", s);
    if (l) ((uint8_t *)l->data)[i] = (uint8_t)v;
    return true;
  }
  if (ir_type_is_int(t)) {
    if (x->kind != INT || n != 1) return lfail(c, x, "expected an integer for %s, got '%s'", ir_type_name(t), s);
    int bits = t == IR_S4 || t == IR_U4 ? 4 : 8 * ir_type_size(t);
    errno = 0;
    if (ir_type_is_unsigned(t)) {
      unsigned long long v = strtoull(s, NULL, 10);
      unsigned long long hi = bits == 64 ? ~0ull : (1ull << bits) - 1;
      if (errno == ERANGE || s[0] == '-' || v > hi)
        return lfail(c, x, "value %s is out of range for %s", s, ir_type_name(t));
      if (l) ir_literal_set_i64(l, i, (int64_t)v);
      return true;
    }
    long long v = strtoll(s, NULL, 10);
    long long hi = bits == 64 ? LLONG_MAX : (1ll << (bits - 1)) - 1, lo = -hi - 1;
    if (errno == ERANGE || v < lo || v > hi)
      return lfail(c, x, "value %s is out of range for %s", s, ir_type_name(t));
    if (l) ir_literal_set_i64(l, i, v);
    return true;
  }
  if (t == IR_TOKEN) return lfail(c, x, "a token has no constant value");
  if (ir_type_is_complex(t)) {
    /* (re, im): two floats of the part type */
    ir_type part = t == IR_C64 ? IR_F32 : IR_F64;
    litems it;
    if (!lsplit(c, x, &it)) return false;
    if (it.n != 2) return lfail(c, x, "expected a complex value (re, im), got %d parts", it.n);
    ir_literal tmp;
    double v[2];
    for (int k = 0; k < 2; k++) {
      memset(&tmp, 0, sizeof tmp);
      tmp.shape.type = part;
      tmp.data = &v[k];
      float fv;
      if (part == IR_F32) tmp.data = &fv;
      if (!scalar(c, (const hlo_tok *const *)&x->kids[it.start[k]], it.len[k], part, &tmp, 0))
        return false;
      if (part == IR_F32) v[k] = fv;
    }
    if (l && t == IR_C64) {
      float f2[2] = {(float)v[0], (float)v[1]};
      memcpy((char *)l->data + 8 * i, f2, 8);
    } else if (l) {
      memcpy((char *)l->data + 16 * i, v, 16);
    }
    return true;
  }
  if (t == IR_F64) return scalar_f64(c, tk, n, l, i);
  /* floats */
  bool neg = s[0] == '-';
  if (x->kind == NAME || x->kind == FLOAT) {
    const char *w = neg ? s + 1 : s;
    if (strcmp(w, "nan") == 0) {
      uint32_t pm, q, e, sg;
      nan_bits(t, &pm, &q, &e, &sg);
      uint64_t payload = q;
      if (n == 2 && !nan_payload(c, tk[1], pm, t, &payload)) return false;
      if (l) store_bits(l, i, (neg ? sg : 0) | e | (uint32_t)payload);
      return true;
    }
    if (strcmp(w, "inf") == 0 && n == 1) {
      if (l) ir_literal_set_f64(l, i, neg ? -INFINITY : INFINITY);
      return true;
    }
  }
  if ((x->kind != INT && x->kind != FLOAT) || n != 1)
    return lfail(c, x, "expected a number for %s, got '%s'", ir_type_name(t), s);
  errno = 0;
  double d = strtod(s, NULL);
  float f = (float)d;
  bool overflow = isinf(d) || (isfinite(d) && isinf(f));
  if (!overflow && t == IR_BF16) overflow = isinf(ir_bf16_to_f32(ir_f32_to_bf16(f)));
  if (!overflow && t == IR_F16) overflow = isinf(ir_f16_to_f32(ir_f32_to_f16(f)));
  if (overflow) return lfail(c, x, "value %s is out of range for %s", s, ir_type_name(t));
  if (l) {
    if (t == IR_F32) ((float *)l->data)[i] = f;
    else ir_literal_set_f64(l, i, (double)f); /* float -> bf16/f16, round to nearest even */
  }
  return true;
}

/* Checks (l == NULL) or fills an array literal level by level. */
static bool array(lctx *c, const hlo_tok *g, int depth, ir_literal *l) {
  const ir_shape *s = c->s;
  if (g->kind != HLO_GROUP || g->open != '{')
    return lfail(c, g, "expected '{' for dimension %d of %s literal", depth,
                 ir_type_name(s->type));
  litems it;
  if (!lsplit(c, g, &it)) return false;
  if (it.n != s->dims[depth])
    return lfail(c, g, "dimension %d of the literal has %d elements but the shape says %lld",
                 depth, it.n, (long long)s->dims[depth]);
  for (int i = 0; i < it.n; i++) {
    hlo_tok *const *tk = &g->kids[it.start[i]];
    if (depth + 1 == s->rank) {
      if (!is_scalar((const hlo_tok *const *)tk, it.len[i], s->type))
        return lfail(c, tk[0], "expected a scalar at depth %d of the literal", depth + 1);
      if (!scalar(c, (const hlo_tok *const *)tk, it.len[i], s->type, l, c->next)) return false;
      c->next++;
    } else {
      if (it.len[i] != 1) return lfail(c, tk[0], "expected '{' at depth %d of the literal", depth + 1);
      if (!array(c, tk[0], depth + 1, l)) return false;
    }
  }
  return true;
}

static const char *shape_text(hlo_parser *p, const ir_shape *s) {
  strbuf b;
  sb_init(&b);
  ir_shape_print(&b, s, false);
  const char *r = arena_strdup(p->scratch, sb_str(&b));
  sb_free(&b);
  return r;
}

/* How many values and brace groups the printed form of shape s holds
 * (saturating): a scalar or {...} must not stand for more than
 * HLO_MAX_SPLAT of them, even when a zero dimension makes the element
 * count small (f32[1000000000,0] prints a billion "{}"). */
static int64_t print_cells(const ir_shape *s) {
  int64_t groups = 1, total = 1;
  for (int k = 0; k < s->rank; k++) {
    if (s->dims[k] != 0 && groups > INT64_MAX / s->dims[k]) return INT64_MAX;
    groups *= s->dims[k];
    if (total > INT64_MAX - groups) return INT64_MAX;
    total += groups;
  }
  return total;
}

/* Counts the count elements a scalar or {...} constant fills against
 * HLO_MAX_FILLED for the whole module; false (reported at the constant)
 * when this one would take the total over it. */
static bool fill_fits(lctx *c, const hlo_tok *at, const ir_shape *s, int64_t count) {
  if (count <= HLO_MAX_FILLED - c->p->filled) {
    c->p->filled += count;
    return true;
  }
  lfail(c, at, "constant %s would fill %lld elements after %lld filled by the scalar and {...} "
        "constants before it, over the limit of %d for a module", shape_text(c->p, s),
        (long long)count, (long long)c->p->filled, HLO_MAX_FILLED);
  return false;
}

static ir_literal *read(hlo_parser *p, hlo_tok *const *tk, int n, const ir_shape *s,
                        const hlo_tok *where, int depth) {
  lctx c = {p, s, NULL, 0};
  if (depth > HLO_MAX_DEPTH) {
    lfail(&c, where, "literal is nested too deeply");
    return NULL;
  }
  if (n == 0) {
    lfail(&c, where, "missing literal");
    return NULL;
  }
  if (s->type == IR_TUPLE) {
    if (n != 1 || tk[0]->kind != HLO_GROUP || tk[0]->open != '(') {
      lfail(&c, tk[0], "expected a tuple literal '( ... )' for a tuple shape");
      return NULL;
    }
    litems it;
    if (!lsplit(&c, tk[0], &it)) return NULL;
    if (it.n != s->ntuple) {
      lfail(&c, tk[0], "tuple literal has %d elements but the shape has %d", it.n, s->ntuple);
      return NULL;
    }
    ir_literal *l = ir_literal_create(p->m->arena, s);
    for (int i = 0; i < it.n; i++) {
      ir_literal *e = read(p, &tk[0]->kids[it.start[i]], it.len[i], &s->tuple[i],
                           tk[0]->kids[it.start[i]], depth + 1);
      if (!e) return NULL;
      l->elems[i] = e;
    }
    return l;
  }
  int64_t count = ir_shape_count(s);
  if (is_scalar((const hlo_tok *const *)tk, n, s->type)) {
    if (!scalar(&c, (const hlo_tok *const *)tk, n, s->type, NULL, 0)) return NULL;
    if (s->rank > 0) {
      if (print_cells(s) > HLO_MAX_SPLAT) {
        lfail(&c, tk[0], "a scalar for constant %s, which is too large to fill (tpucc fills at "
              "most %d values and brace groups)", shape_text(p, s), HLO_MAX_SPLAT);
        return NULL;
      }
      if (!fill_fits(&c, tk[0], s, count)) return NULL;
      fe_hlo_warning(p, tk[0]->loc,
                  "scalar literal for an array constant: every element is set to %s "
                  "(XLA sets only the first)", tk[0]->text);
    }
    ir_literal *l = ir_literal_create(p->m->arena, s);
    if (count > 0) {
      scalar(&c, (const hlo_tok *const *)tk, n, s->type, l, 0);
      size_t es = (size_t)ir_type_size(s->type);
      for (int64_t i = 1; i < count; i++) memcpy((char *)l->data + (size_t)i * es, l->data, es);
    }
    return l;
  }
  if (n != 1 || tk[0]->kind != HLO_GROUP || tk[0]->open != '{') {
    lfail(&c, tk[0], "expected a literal for %s", ir_type_name(s->type));
    return NULL;
  }
  if (tk[0]->n == 1 && tk[0]->kids[0]->kind == ELLIPSIS) {
    if (print_cells(s) > HLO_MAX_SPLAT) {
      lfail(&c, tk[0], "elided constant {...} for %s, which is too large to fill (tpucc fills "
            "at most %d values and brace groups)", shape_text(p, s), HLO_MAX_SPLAT);
      return NULL;
    }
    if (!fill_fits(&c, tk[0], s, count)) return NULL;
    fe_hlo_warning(p, tk[0]->loc, "elided constant {...}: filled with zeros");
    return ir_literal_create(p->m->arena, s);
  }
  if (s->rank == 0) {
    lfail(&c, tk[0], "expected a scalar for a rank-0 constant");
    return NULL;
  }
  if (!array(&c, tk[0], 0, NULL)) return NULL; /* check first, allocate after */
  ir_literal *l = ir_literal_create(p->m->arena, s);
  c.next = 0;
  array(&c, tk[0], 0, l);
  return l;
}

ir_literal *fe_hlo_literal(hlo_parser *p, const hlo_tok *lit, const ir_shape *s) {
  if (lit->kind != HLO_GROUP || lit->open != '(') {
    lctx c = {p, s, NULL, 0};
    lfail(&c, lit, "expected '(' after constant");
    return NULL;
  }
  return read(p, lit->kids, lit->n, s, lit, 0);
}
