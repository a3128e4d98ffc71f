/* infer.c: result shapes of instructions, with the semantics of XLA's
 * ShapeInference, and the one-line reasons why an instruction is ill-typed.
 *
 * Contract (see ir_infer_shape in ir.h):
 *  - Ops whose result follows from operands and attributes ignore *out on
 *    input and overwrite it.
 *  - Ops whose result does not (parameter, constant, iota, broadcast,
 *    reshape, and the element type of convert and bitcast-convert) take the
 *    target from *out:
 *    the caller pre-fills out->type/rank/dims (and ntuple/tuple for a tuple
 *    parameter). The target is validated against operands and attributes
 *    and returned with the default layout.
 *  - dot and convolution: the result element type is a->preferred_type when
 *    that is an array type (IR_PRED counts as unset unless the operands are
 *    pred, since zero-filled attributes read as IR_PRED); otherwise the
 *    operands' type (the wider one when they differ). The verifier passes
 *    the declared result type as preferred_type, as XLA's verifier does.
 *  - Tuple results (tuple, variadic reduce, reduce-window, all-reduce)
 *    allocate their element array in m's arena; get-tuple-element and
 *    fusion return shallow copies that share tuple arrays with the operand
 *    or the called computation's root.
 * Every failure writes one line starting with the op's spelling. */
#include "ir/ir.h"

#include <stdlib.h>

typedef struct ctx {
  const ir_module *m;
  ir_op op;
  char *err;
  size_t errlen;
} ctx;

static bool fail(ctx *c, const char *fmt, ...) BASE_PRINTF(2, 3);
static bool fail(ctx *c, const char *fmt, ...) {
  if (!c->err || c->errlen == 0) return false;
  int n = snprintf(c->err, c->errlen, "%s: ", ir_op_name(c->op));
  if (n < 0) n = 0;
  if ((size_t)n < c->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return false;
}

/* Spelling of a shape for messages, in a caller buffer. */
static const char *shp(char *buf, size_t n, const ir_shape *s) {
  strbuf b;
  sb_init(&b);
  if (s->type == IR_TUPLE || (unsigned)s->type < IR_TUPLE) {
    if (s->rank < 0 || s->rank > IR_MAX_RANK) sb_puts(&b, "<bad rank>");
    else ir_shape_print(&b, s, false);
  } else {
    sb_puts(&b, "<invalid>");
  }
  snprintf(buf, n, "%s", sb_str(&b));
  sb_free(&b);
  return buf;
}
#define SHP(s) shp((char[128]){0}, 128, (s))

/* Validates a caller-supplied shape (pre-filled targets, called
 * computations' parameters): known type, rank and dims in range. */
static bool valid_shape(ctx *c, const ir_shape *s, const char *what, int depth) {
  if (s->type == IR_TUPLE) {
    if (depth > 16) return fail(c, "%s: tuple nesting too deep", what);
    if (s->ntuple < 0 || (s->ntuple > 0 && !s->tuple))
      return fail(c, "%s: malformed tuple shape", what);
    for (int i = 0; i < s->ntuple; i++)
      if (!valid_shape(c, &s->tuple[i], what, depth + 1)) return false;
    return true;
  }
  if ((unsigned)s->type >= IR_TUPLE) return fail(c, "%s: invalid element type", what);
  if (s->rank < 0 || s->rank > IR_MAX_RANK)
    return fail(c, "%s: rank %d out of range 0..%d", what, s->rank, IR_MAX_RANK);
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i] < 0)
      return fail(c, "%s: negative dimension %lld", what, (long long)s->dims[i]);
  int64_t n;
  if (!ir_shape_elements(s, &n))
    return fail(c, "%s: %s has too many elements", what, SHP(s));
  return true;
}

static bool need_array(ctx *c, const ir_shape *s, int i) {
  if (s->type == IR_TUPLE) return fail(c, "operand %d is a tuple %s, expected an array", i, SHP(s));
  if ((unsigned)s->type >= IR_TUPLE) return fail(c, "operand %d has an invalid element type", i);
  if (s->rank < 0 || s->rank > IR_MAX_RANK) return fail(c, "operand %d has rank %d", i, s->rank);
  for (int k = 0; k < s->rank; k++)
    if (s->dims[k] < 0) return fail(c, "operand %d has a negative dimension", i);
  return true;
}

static bool same_dims(const ir_shape *a, const ir_shape *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* An array result with the default layout. */
static void set_array(ir_shape *out, ir_type t, int rank, const int64_t *dims) {
  int64_t d[IR_MAX_RANK];
  for (int i = 0; i < rank; i++) d[i] = dims[i];
  *out = ir_shape_array(t, rank, d);
}

static bool want_arity(ctx *c, int nops, int n) {
  if (nops != n) return fail(c, "expected %d operand%s, got %d", n, n == 1 ? "" : "s", nops);
  return true;
}

/* A list of dimension indices of an operand of rank `rank`: each in range
 * and, when `unique`, no repeats. */
static bool check_dim_list(ctx *c, const ir_ints *l, int rank, const char *what, bool unique) {
  if (l->n < 0 || (l->n > 0 && !l->v)) return fail(c, "malformed %s", what);
  for (int i = 0; i < l->n; i++) {
    if (l->v[i] < 0 || l->v[i] >= rank)
      return fail(c, "%s[%d] = %lld out of range for rank %d", what, i, (long long)l->v[i], rank);
    if (unique)
      for (int j = 0; j < i; j++)
        if (l->v[j] == l->v[i]) return fail(c, "%s repeats dimension %lld", what, (long long)l->v[i]);
  }
  return true;
}

/* ---- called computations -------------------------------------------- */

static const ir_comp *called(ctx *c, const ir_comp_id *calls, int ncalls, const char *kw) {
  if (ncalls != 1 || !calls) {
    fail(c, "expected one called computation (%s=), got %d", kw, ncalls);
    return NULL;
  }
  if (!c->m) {
    fail(c, "no module to look up computation %d", calls[0]);
    return NULL;
  }
  if (calls[0] < 0 || calls[0] >= c->m->comps.n) {
    fail(c, "%s computation %d does not exist", kw, calls[0]);
    return NULL;
  }
  return &c->m->comps.v[calls[0]];
}

/* Finds parameter k of cp (by scanning, so ir_comp_finish is not needed). */
static const ir_shape *comp_param(const ir_comp *cp, int64_t k) {
  for (int i = 0; i < cp->insts.n; i++) {
    const ir_inst *in = &cp->insts.v[i];
    if (!in->dead && in->op == IR_OP_PARAMETER && in->a->parameter_number == k) return in->shape;
  }
  return NULL;
}

static int comp_nparams(const ir_comp *cp) {
  int n = 0;
  for (int i = 0; i < cp->insts.n; i++)
    if (!cp->insts.v[i].dead && cp->insts.v[i].op == IR_OP_PARAMETER) n++;
  return n;
}

static const ir_shape *comp_root(ctx *c, const ir_comp *cp) {
  if (cp->root < 0 || cp->root >= cp->insts.n) {
    fail(c, "computation %s has no root", cp->name);
    return NULL;
  }
  return cp->insts.v[cp->root].shape;
}

/* Checks that cp is a reducer over element types t[0..n-1]:
 * (t0[], ..., tn-1[], t0[], ..., tn-1[]) -> t0[] or (t0[], ..., tn-1[]). */
static bool check_reducer(ctx *c, const ir_comp *cp, const ir_type *t, int n) {
  int np = comp_nparams(cp);
  if (np != 2 * n)
    return fail(c, "to_apply %s takes %d parameters, expected %d", cp->name, np, 2 * n);
  for (int k = 0; k < 2 * n; k++) {
    const ir_shape *p = comp_param(cp, k);
    ir_shape want = ir_shape_scalar(t[k % n]);
    if (!p) return fail(c, "to_apply %s has no parameter %d", cp->name, k);
    if (!ir_shape_equal(p, &want))
      return fail(c, "to_apply %s parameter %d is %s, expected %s", cp->name, k, SHP(p), SHP(&want));
  }
  const ir_shape *r = comp_root(c, cp);
  if (!r) return false;
  if (n == 1) {
    ir_shape want = ir_shape_scalar(t[0]);
    if (!ir_shape_equal(r, &want))
      return fail(c, "to_apply %s returns %s, expected %s", cp->name, SHP(r), SHP(&want));
    return true;
  }
  bool ok = r->type == IR_TUPLE && r->ntuple == n;
  for (int k = 0; ok && k < n; k++) {
    ir_shape want = ir_shape_scalar(t[k]);
    ok = ir_shape_equal(&r->tuple[k], &want);
  }
  if (!ok) {
    char buf[160];
    size_t len = 0;
    buf[len++] = '(';
    for (int k = 0; k < n && len < sizeof buf - 16; k++)
      len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s[]", k ? ", " : "", ir_type_name(t[k]));
    snprintf(buf + len, sizeof buf - len, ")");
    return fail(c, "to_apply %s returns %s, expected %s", cp->name, SHP(r), buf);
  }
  return true;
}

static ir_shape *tuple_elems(ctx *c, int n) {
  if (!c->m) return NULL;
  return arena_array(c->m->arena, (size_t)(n ? n : 1), sizeof(ir_shape));
}

/* ---- windows --------------------------------------------------------- */

/* Output size of a window dimension over an input of size `in`:
 * floor((padded - dilated_window) / stride) + 1, or 0 when the window does
 * not fit. */
static bool window_out(ctx *c, const ir_window_dim *w, int i, int64_t in, int64_t *out) {
  if (w->size < 1) return fail(c, "window dimension %d has size %lld (must be >= 1)", i, (long long)w->size);
  if (w->stride < 1) return fail(c, "window dimension %d has stride %lld (must be >= 1)", i, (long long)w->stride);
  if (w->lhs_dilate < 1 || w->rhs_dilate < 1)
    return fail(c, "window dimension %d has dilation %lld/%lld (must be >= 1)", i,
                (long long)w->lhs_dilate, (long long)w->rhs_dilate);
  const int64_t big = (int64_t)1 << 48;
  if (w->size > big || w->stride > big || w->lhs_dilate > big || w->rhs_dilate > big ||
      w->pad_lo > big || w->pad_lo < -big || w->pad_hi > big || w->pad_hi < -big)
    return fail(c, "window dimension %d has out-of-range values", i);
  /* Every term is bounded by 2^48 (inputs by 2^40), so the products are
   * checked and the sums below cannot overflow. */
  int64_t dil_in;
  if (in == 0) dil_in = 0;
  else if (__builtin_mul_overflow(in - 1, w->lhs_dilate, &dil_in) || dil_in > big)
    return fail(c, "window dimension %d: dilated size overflows", i);
  else dil_in += 1;
  int64_t padded = dil_in + w->pad_lo + w->pad_hi;
  int64_t dil_w;
  if (__builtin_mul_overflow(w->size - 1, w->rhs_dilate, &dil_w) || dil_w > big)
    return fail(c, "window dimension %d: dilated window overflows", i);
  dil_w += 1;
  *out = padded < dil_w ? 0 : (padded - dil_w) / w->stride + 1;
  return true;
}

/* ---- op families ----------------------------------------------------- */

static bool type_ok_for(ctx *c, unsigned flags, ir_type t, int i) {
  ir_op op = c->op;
  if (t == IR_TOKEN) return fail(c, "operand %d is a token, expected a number", i);
  /* complex numbers take the float ops that XLA defines on them */
  bool real_only = op == IR_OP_FLOOR || op == IR_OP_CEIL || op == IR_OP_ROUND_AFZ ||
                   op == IR_OP_ROUND_EVEN || op == IR_OP_IS_FINITE || op == IR_OP_ATAN2 ||
                   op == IR_OP_CBRT || op == IR_OP_MAXIMUM || op == IR_OP_MINIMUM ||
                   op == IR_OP_REMAINDER || op == IR_OP_CLAMP;
  if (ir_type_is_complex(t) && real_only)
    return fail(c, "operand %d has type %s, expected a real type", i, ir_type_name(t));
  if ((flags & OPF_FLOAT) && !ir_type_is_float(t) && !ir_type_is_complex(t))
    return fail(c, "operand %d has type %s, expected a floating-point type", i, ir_type_name(t));
  if ((flags & OPF_INT) && !ir_type_is_int(t)) {
    bool pred_ok = op == IR_OP_AND || op == IR_OP_OR || op == IR_OP_XOR || op == IR_OP_NOT;
    if (!(pred_ok && t == IR_PRED))
      return fail(c, "operand %d has type %s, expected %s", i, ir_type_name(t),
                  pred_ok ? "an integer type or pred" : "an integer type");
  }
  if (t == IR_PRED && (op == IR_OP_ABS || op == IR_OP_NEGATE || op == IR_OP_SIGN))
    return fail(c, "operand %d has type pred, expected a number type", i);
  return true;
}

static bool infer_elementwise(ctx *c, unsigned flags, const ir_shape *ops, int nops,
                              const ir_attrs *a, ir_shape *out) {
  int n = (flags & OPF_UNARY) ? 1 : (flags & OPF_BINARY) ? 2 : 3;
  if (!want_arity(c, nops, n)) return false;
  for (int i = 0; i < nops; i++)
    if (!need_array(c, &ops[i], i)) return false;
  if (c->op == IR_OP_SELECT) {
    const ir_shape *p = &ops[0], *t = &ops[1], *f = &ops[2];
    if (p->type != IR_PRED) return fail(c, "predicate has type %s, expected pred", ir_type_name(p->type));
    if (!ir_shape_equal(t, f))
      return fail(c, "on_true %s and on_false %s differ", SHP(t), SHP(f));
    if (p->rank != 0 && !same_dims(p, t))
      return fail(c, "predicate %s does not match %s", SHP(p), SHP(t));
    set_array(out, t->type, t->rank, t->dims);
    return true;
  }
  if (c->op == IR_OP_CLAMP) {
    const ir_shape *lo = &ops[0], *x = &ops[1], *hi = &ops[2];
    if (lo->type != x->type || hi->type != x->type)
      return fail(c, "element types differ (%s, %s, %s)", ir_type_name(lo->type),
                  ir_type_name(x->type), ir_type_name(hi->type));
    if (lo->rank != 0 && !same_dims(lo, x)) return fail(c, "min %s does not match operand %s", SHP(lo), SHP(x));
    if (hi->rank != 0 && !same_dims(hi, x)) return fail(c, "max %s does not match operand %s", SHP(hi), SHP(x));
    if (x->type == IR_PRED) return fail(c, "operand has type pred, expected a number type");
    set_array(out, x->type, x->rank, x->dims);
    return true;
  }
  for (int i = 0; i < nops; i++) {
    if (!type_ok_for(c, flags, ops[i].type, i)) return false;
    if (i > 0 && !ir_shape_equal(&ops[i], &ops[0]))
      return fail(c, "operand %d shape %s does not match %s", i, SHP(&ops[i]), SHP(&ops[0]));
  }
  if (c->op == IR_OP_COMPARE) {
    if ((unsigned)a->cmp_dir > IR_CMP_GE) return fail(c, "invalid comparison direction %d", (int)a->cmp_dir);
    if ((unsigned)a->cmp_type > IR_CMPT_UNSIGNED) return fail(c, "invalid comparison type %d", (int)a->cmp_type);
  }
  ir_type rt = (c->op == IR_OP_COMPARE || c->op == IR_OP_IS_FINITE) ? IR_PRED : ops[0].type;
  if (c->op == IR_OP_ABS && ir_type_is_complex(rt)) rt = rt == IR_C64 ? IR_F32 : IR_F64;
  set_array(out, rt, ops[0].rank, ops[0].dims);
  return true;
}

static bool infer_broadcast(ctx *c, const ir_shape *x, const ir_attrs *a, ir_shape *out) {
  if (!valid_shape(c, out, "result", 0)) return false;
  if (out->type == IR_TUPLE) return fail(c, "result must be an array, got %s", SHP(out));
  if (out->type != x->type)
    return fail(c, "result type %s differs from operand type %s", ir_type_name(out->type), ir_type_name(x->type));
  const ir_ints *d = &a->dimensions;
  if (d->n != x->rank)
    return fail(c, "dimensions has %d entries, operand %s has rank %d", d->n, SHP(x), x->rank);
  if (!check_dim_list(c, d, out->rank, "dimensions", true)) return false;
  for (int i = 0; i < d->n; i++) {
    if (x->dims[i] != out->dims[d->v[i]])
      return fail(c, "operand dimension %d (size %lld) does not match result dimension %lld (size %lld)",
                  i, (long long)x->dims[i], (long long)d->v[i], (long long)out->dims[d->v[i]]);
  }
  set_array(out, out->type, out->rank, out->dims);
  return true;
}

static bool infer_reshape(ctx *c, const ir_shape *x, ir_shape *out) {
  if (!valid_shape(c, out, "result", 0)) return false;
  if (out->type == IR_TUPLE) return fail(c, "result must be an array, got %s", SHP(out));
  if (out->type != x->type)
    return fail(c, "result type %s differs from operand type %s", ir_type_name(out->type), ir_type_name(x->type));
  if (ir_shape_count(out) != ir_shape_count(x))
    return fail(c, "%s has %lld elements, operand %s has %lld", SHP(out), (long long)ir_shape_count(out),
                SHP(x), (long long)ir_shape_count(x));
  set_array(out, out->type, out->rank, out->dims);
  return true;
}

static bool infer_transpose(ctx *c, const ir_shape *x, const ir_attrs *a, ir_shape *out) {
  const ir_ints *d = &a->dimensions;
  if (d->n != x->rank)
    return fail(c, "dimensions has %d entries, operand %s has rank %d", d->n, SHP(x), x->rank);
  if (!check_dim_list(c, d, x->rank, "dimensions", true)) return false;
  int64_t dims[IR_MAX_RANK];
  for (int i = 0; i < x->rank; i++) dims[i] = x->dims[d->v[i]];
  set_array(out, x->type, x->rank, dims);
  return true;
}

static bool infer_slice(ctx *c, const ir_shape *x, const ir_attrs *a, ir_shape *out) {
  const ir_ints *s = &a->slice_start, *l = &a->slice_limit, *st = &a->slice_stride;
  if (s->n != x->rank || l->n != x->rank || (st->n != x->rank && st->n != 0))
    return fail(c, "slice has %d starts, %d limits and %d strides for operand %s of rank %d",
                s->n, l->n, st->n, SHP(x), x->rank);
  int64_t dims[IR_MAX_RANK];
  for (int i = 0; i < x->rank; i++) {
    int64_t b = s->v[i], e = l->v[i], k = st->n ? st->v[i] : 1;
    if (k < 1) return fail(c, "stride %lld in dimension %d must be >= 1", (long long)k, i);
    if (b < 0 || b > e || e > x->dims[i])
      return fail(c, "slice [%lld:%lld] out of bounds for dimension %d of size %lld",
                  (long long)b, (long long)e, i, (long long)x->dims[i]);
    dims[i] = (e - b + k - 1) / k;
  }
  set_array(out, x->type, x->rank, dims);
  return true;
}

static bool infer_concatenate(ctx *c, const ir_shape *ops, int nops, const ir_attrs *a, ir_shape *out) {
  if (nops < 1) return fail(c, "expected at least one operand");
  for (int i = 0; i < nops; i++)
    if (!need_array(c, &ops[i], i)) return false;
  if (a->dimensions.n != 1) return fail(c, "expected one dimension, got %d", a->dimensions.n);
  int64_t d = a->dimensions.v[0];
  const ir_shape *x = &ops[0];
  if (d < 0 || d >= x->rank)
    return fail(c, "dimension %lld out of range for rank %d", (long long)d, x->rank);
  int64_t dims[IR_MAX_RANK];
  for (int i = 0; i < x->rank; i++) dims[i] = x->dims[i];
  for (int k = 1; k < nops; k++) {
    const ir_shape *y = &ops[k];
    if (y->type != x->type)
      return fail(c, "operand %d type %s differs from %s", k, ir_type_name(y->type), ir_type_name(x->type));
    if (y->rank != x->rank) return fail(c, "operand %d %s has rank %d, expected %d", k, SHP(y), y->rank, x->rank);
    for (int i = 0; i < x->rank; i++)
      if (i != d && y->dims[i] != x->dims[i])
        return fail(c, "operand %d %s differs from %s in dimension %d", k, SHP(y), SHP(x), i);
    dims[d] += y->dims[d];
  }
  if (dims[d] > IR_MAX_ELEMENTS) return fail(c, "result dimension too large");
  set_array(out, x->type, x->rank, dims);
  return true;
}

static bool infer_pad(ctx *c, const ir_shape *x, const ir_shape *v, const ir_attrs *a, ir_shape *out) {
  if (v->rank != 0) return fail(c, "padding value %s must be a scalar", SHP(v));
  if (v->type != x->type)
    return fail(c, "padding value type %s differs from operand type %s", ir_type_name(v->type), ir_type_name(x->type));
  if (a->npad != x->rank || (a->npad > 0 && !a->padding))
    return fail(c, "padding has %d dimensions, operand %s has rank %d", a->npad, SHP(x), x->rank);
  int64_t dims[IR_MAX_RANK];
  const int64_t big = (int64_t)1 << 48;
  for (int i = 0; i < x->rank; i++) {
    const ir_padding_dim *p = &a->padding[i];
    if (p->interior < 0)
      return fail(c, "interior padding %lld in dimension %d must be >= 0", (long long)p->interior, i);
    if (p->interior > big || p->lo > big || p->lo < -big || p->hi > big || p->hi < -big)
      return fail(c, "padding in dimension %d out of range", i);
    int64_t inner;
    if (__builtin_mul_overflow(x->dims[i] > 0 ? x->dims[i] - 1 : 0, p->interior, &inner) || inner > big)
      return fail(c, "interior padding in dimension %d too large", i);
    int64_t r = p->lo + p->hi + x->dims[i] + inner;
    if (r < 0)
      return fail(c, "dimension %d would have negative size %lld (lo %lld, hi %lld, interior %lld, size %lld)", i,
                  (long long)r, (long long)p->lo, (long long)p->hi, (long long)p->interior, (long long)x->dims[i]);
    dims[i] = r;
  }
  set_array(out, x->type, x->rank, dims);
  int64_t n;
  if (!ir_shape_elements(out, &n)) return fail(c, "result %s has too many elements", SHP(out));
  return true;
}

/* dot_general: result = batch dims, lhs free dims, rhs free dims. */
static ir_type result_type(ctx *c, ir_type l, ir_type r, ir_type pref) {
  (void)c;
  bool pref_set = (unsigned)pref < IR_TUPLE && !(pref == IR_PRED && l != IR_PRED);
  if (pref_set) return pref;
  if (l == r) return l;
  return ir_type_size(r) > ir_type_size(l) ? r : l;
}

/* XLA's rules: operands of one type, or floats of different precision;
 * the result (preferred) type is a float iff the operands are, and an
 * integer result is no narrower than the operands (pred only from pred). */
static bool compatible_types(ctx *c, ir_type l, ir_type r, ir_type res) {
  bool lf = ir_type_is_float(l), rf = ir_type_is_float(r);
  if (l != r && !(lf && rf))
    return fail(c, "operand types %s and %s are incompatible", ir_type_name(l), ir_type_name(r));
  bool narrower = !lf && (res == IR_PRED ? l != IR_PRED : ir_type_size(res) < ir_type_size(l));
  if (ir_type_is_float(res) != lf || narrower)
    return fail(c, "result type %s is incompatible with operand type %s", ir_type_name(res), ir_type_name(l));
  return true;
}

static bool infer_dot(ctx *c, const ir_shape *l, const ir_shape *r, const ir_attrs *a, ir_shape *out) {
  const ir_ints *lb = &a->lhs_batch, *rb = &a->rhs_batch, *lc = &a->lhs_contracting, *rc = &a->rhs_contracting;
  if (lb->n != rb->n)
    return fail(c, "lhs has %d batch dimensions, rhs has %d", lb->n, rb->n);
  if (lc->n != rc->n)
    return fail(c, "lhs has %d contracting dimensions, rhs has %d", lc->n, rc->n);
  if (!check_dim_list(c, lb, l->rank, "lhs_batch_dims", true) ||
      !check_dim_list(c, rb, r->rank, "rhs_batch_dims", true) ||
      !check_dim_list(c, lc, l->rank, "lhs_contracting_dims", true) ||
      !check_dim_list(c, rc, r->rank, "rhs_contracting_dims", true))
    return false;
  bool lused[IR_MAX_RANK] = {0}, rused[IR_MAX_RANK] = {0};
  for (int i = 0; i < lb->n; i++) {
    lused[lb->v[i]] = rused[rb->v[i]] = true;
    if (l->dims[lb->v[i]] != r->dims[rb->v[i]])
      return fail(c, "batch dimensions differ (%lld vs %lld)", (long long)l->dims[lb->v[i]],
                  (long long)r->dims[rb->v[i]]);
  }
  for (int i = 0; i < lc->n; i++) {
    if (lused[lc->v[i]]) return fail(c, "lhs dimension %lld is both batch and contracting", (long long)lc->v[i]);
    if (rused[rc->v[i]]) return fail(c, "rhs dimension %lld is both batch and contracting", (long long)rc->v[i]);
    lused[lc->v[i]] = rused[rc->v[i]] = true;
    if (l->dims[lc->v[i]] != r->dims[rc->v[i]])
      return fail(c, "contracting dimensions differ (%lld vs %lld)", (long long)l->dims[lc->v[i]],
                  (long long)r->dims[rc->v[i]]);
  }
  int64_t dims[2 * IR_MAX_RANK];
  int n = 0;
  for (int i = 0; i < lb->n; i++) dims[n++] = l->dims[lb->v[i]];
  for (int i = 0; i < l->rank; i++)
    if (!lused[i]) dims[n++] = l->dims[i];
  for (int i = 0; i < r->rank; i++)
    if (!rused[i]) dims[n++] = r->dims[i];
  if (n > IR_MAX_RANK) return fail(c, "result rank %d exceeds %d", n, IR_MAX_RANK);
  ir_type t = result_type(c, l->type, r->type, a->preferred_type);
  if (!compatible_types(c, l->type, r->type, t)) return false;
  if ((unsigned)a->precision[0] > IR_PREC_HIGHEST || (unsigned)a->precision[1] > IR_PREC_HIGHEST)
    return fail(c, "invalid operand precision");
  set_array(out, t, n, dims);
  int64_t cnt;
  if (!ir_shape_elements(out, &cnt)) return fail(c, "result %s has too many elements", SHP(out));
  return true;
}

static bool distinct_labels(int n, const int8_t *v) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      if (v[i] == v[j]) return false;
  return true;
}

static bool infer_convolution(ctx *c, const ir_shape *l, const ir_shape *r, const ir_attrs *a, ir_shape *out) {
  const ir_conv_dims *d = &a->conv;
  int ns = d->nspatial;
  if (ns < 0 || ns > IR_MAX_RANK - 2) return fail(c, "%d spatial dimensions out of range", ns);
  int rank = ns + 2;
  if (l->rank != rank) return fail(c, "input %s has rank %d, dim_labels expect %d", SHP(l), l->rank, rank);
  if (r->rank != rank) return fail(c, "kernel %s has rank %d, dim_labels expect %d", SHP(r), r->rank, rank);
  int8_t in[IR_MAX_RANK], k[IR_MAX_RANK], o[IR_MAX_RANK];
  in[0] = d->in_batch, in[1] = d->in_feature;
  k[0] = d->k_in, k[1] = d->k_out;
  o[0] = d->out_batch, o[1] = d->out_feature;
  for (int i = 0; i < ns; i++) in[i + 2] = d->in_spatial[i], k[i + 2] = d->k_spatial[i], o[i + 2] = d->out_spatial[i];
  for (int i = 0; i < rank; i++)
    if (in[i] < 0 || in[i] >= rank || k[i] < 0 || k[i] >= rank || o[i] < 0 || o[i] >= rank)
      return fail(c, "dim_labels index out of range for rank %d", rank);
  if (!distinct_labels(rank, in)) return fail(c, "dim_labels repeat an input dimension");
  if (!distinct_labels(rank, k)) return fail(c, "dim_labels repeat a kernel dimension");
  if (!distinct_labels(rank, o)) return fail(c, "dim_labels repeat an output dimension");
  int64_t fgc = a->feature_group_count, bgc = a->batch_group_count;
  if (fgc < 1) return fail(c, "feature_group_count %lld must be >= 1", (long long)fgc);
  if (bgc < 1) return fail(c, "batch_group_count %lld must be >= 1", (long long)bgc);
  if (fgc > 1 && bgc > 1)
    return fail(c, "feature_group_count %lld and batch_group_count %lld cannot both exceed 1", (long long)fgc,
                (long long)bgc);
  int64_t batch = l->dims[d->in_batch], infeat = l->dims[d->in_feature];
  int64_t kin = r->dims[d->k_in], kout = r->dims[d->k_out];
  if (infeat % fgc != 0)
    return fail(c, "input features %lld not divisible by feature_group_count %lld", (long long)infeat, (long long)fgc);
  if (infeat / fgc != kin)
    return fail(c, "input features %lld / feature_group_count %lld != kernel input features %lld",
                (long long)infeat, (long long)fgc, (long long)kin);
  if (kout % fgc != 0)
    return fail(c, "kernel output features %lld not divisible by feature_group_count %lld", (long long)kout,
                (long long)fgc);
  if (batch % bgc != 0)
    return fail(c, "input batch %lld not divisible by batch_group_count %lld", (long long)batch, (long long)bgc);
  if (kout % bgc != 0)
    return fail(c, "kernel output features %lld not divisible by batch_group_count %lld", (long long)kout,
                (long long)bgc);
  ir_window_dim defw = {1, 1, 0, 0, 1, 1, false};
  if ((a->window != NULL) ? ir_window_of(a)->rank != ns : ns != 0)
    return fail(c, "window has %d dimensions, expected %d",
                (a->window != NULL) ? ir_window_of(a)->rank : 0, ns);
  int64_t dims[IR_MAX_RANK];
  dims[d->out_batch] = batch / bgc;
  dims[d->out_feature] = kout;
  for (int i = 0; i < ns; i++) {
    const ir_window_dim *w = (a->window != NULL) ? &ir_window_of(a)->dims[i] : &defw;
    if (w->size != r->dims[d->k_spatial[i]])
      return fail(c, "window size %lld in dimension %d differs from kernel size %lld", (long long)w->size, i,
                  (long long)r->dims[d->k_spatial[i]]);
    if (!window_out(c, w, i, l->dims[d->in_spatial[i]], &dims[d->out_spatial[i]])) return false;
  }
  ir_type t = result_type(c, l->type, r->type, a->preferred_type);
  if (!compatible_types(c, l->type, r->type, t)) return false;
  set_array(out, t, rank, dims);
  int64_t cnt;
  if (!ir_shape_elements(out, &cnt)) return fail(c, "result %s has too many elements", SHP(out));
  return true;
}

/* Shared by reduce and reduce-window: N inputs of one shape, N scalar inits
 * of matching types, a reducer over the N types. */
static bool reduce_inputs(ctx *c, const ir_shape *ops, int nops, const ir_comp_id *calls, int ncalls,
                          ir_type *types) {
  if (nops < 2 || nops % 2) return fail(c, "expected N inputs and N init values, got %d operands", nops);
  int n = nops / 2;
  if (n > 64) return fail(c, "too many inputs (%d)", n);
  for (int i = 0; i < nops; i++)
    if (!need_array(c, &ops[i], i)) return false;
  for (int i = 0; i < n; i++) {
    if (!same_dims(&ops[i], &ops[0]))
      return fail(c, "input %d %s does not match input 0 %s", i, SHP(&ops[i]), SHP(&ops[0]));
    const ir_shape *init = &ops[n + i];
    if (init->rank != 0) return fail(c, "init value %d %s must be a scalar", i, SHP(init));
    if (init->type != ops[i].type)
      return fail(c, "init value %d type %s differs from input type %s", i, ir_type_name(init->type),
                  ir_type_name(ops[i].type));
    types[i] = ops[i].type;
  }
  const ir_comp *cp = called(c, calls, ncalls, "to_apply");
  if (!cp) return false;
  return check_reducer(c, cp, types, n);
}

static bool finish_multi(ctx *c, int n, const ir_type *types, int rank, const int64_t *dims, ir_shape *out) {
  if (n == 1) {
    set_array(out, types[0], rank, dims);
    return true;
  }
  ir_shape *el = tuple_elems(c, n);
  if (!el) return fail(c, "a tuple result needs a module");
  for (int i = 0; i < n; i++) set_array(&el[i], types[i], rank, dims);
  memset(out, 0, sizeof *out);
  out->type = IR_TUPLE;
  out->ntuple = n;
  out->tuple = el;
  return true;
}

static bool infer_reduce(ctx *c, const ir_shape *ops, int nops, const ir_attrs *a, const ir_comp_id *calls,
                         int ncalls, ir_shape *out) {
  ir_type types[64];
  if (!reduce_inputs(c, ops, nops, calls, ncalls, types)) return false;
  const ir_shape *x = &ops[0];
  if (!check_dim_list(c, &a->dimensions, x->rank, "dimensions", true)) return false;
  bool drop[IR_MAX_RANK] = {0};
  for (int i = 0; i < a->dimensions.n; i++) drop[a->dimensions.v[i]] = true;
  int64_t dims[IR_MAX_RANK];
  int r = 0;
  for (int i = 0; i < x->rank; i++)
    if (!drop[i]) dims[r++] = x->dims[i];
  return finish_multi(c, nops / 2, types, r, dims, out);
}

static bool infer_reduce_window(ctx *c, const ir_shape *ops, int nops, const ir_attrs *a,
                                const ir_comp_id *calls, int ncalls, ir_shape *out) {
  ir_type types[64];
  if (!reduce_inputs(c, ops, nops, calls, ncalls, types)) return false;
  const ir_shape *x = &ops[0];
  int wr = (a->window != NULL) ? ir_window_of(a)->rank : 0;
  if (wr != x->rank) return fail(c, "window has %d dimensions, operand %s has rank %d", wr, SHP(x), x->rank);
  int64_t dims[IR_MAX_RANK];
  for (int i = 0; i < x->rank; i++)
    if (!window_out(c, &ir_window_of(a)->dims[i], i, x->dims[i], &dims[i])) return false;
  return finish_multi(c, nops / 2, types, x->rank, dims, out);
}

static bool infer_all_reduce(ctx *c, const ir_shape *ops, int nops, const ir_comp_id *calls, int ncalls,
                             ir_shape *out) {
  if (nops < 1) return fail(c, "expected at least one operand");
  for (int i = 0; i < nops; i++) {
    if (!need_array(c, &ops[i], i)) return false;
    if (ops[i].type != ops[0].type)
      return fail(c, "operand %d type %s differs from operand 0 type %s", i, ir_type_name(ops[i].type),
                  ir_type_name(ops[0].type));
  }
  const ir_comp *cp = called(c, calls, ncalls, "to_apply");
  if (!cp) return false;
  if (!check_reducer(c, cp, &ops[0].type, 1)) return false;
  if (nops == 1) {
    set_array(out, ops[0].type, ops[0].rank, ops[0].dims);
    return true;
  }
  ir_shape *el = tuple_elems(c, nops);
  if (!el) return fail(c, "a tuple result needs a module");
  for (int i = 0; i < nops; i++) set_array(&el[i], ops[i].type, ops[i].rank, ops[i].dims);
  memset(out, 0, sizeof *out);
  out->type = IR_TUPLE;
  out->ntuple = nops;
  out->tuple = el;
  return true;
}

static bool infer_fusion(ctx *c, const ir_shape *ops, int nops, const ir_comp_id *calls, int ncalls,
                         ir_shape *out) {
  const ir_comp *cp = called(c, calls, ncalls, "calls");
  if (!cp) return false;
  int np = comp_nparams(cp);
  if (np != nops)
    return fail(c, "computation %s takes %d parameters, given %d operands", cp->name, np, nops);
  for (int i = 0; i < nops; i++) {
    const ir_shape *p = comp_param(cp, i);
    if (!p) return fail(c, "computation %s has no parameter %d", cp->name, i);
    if (!ir_shape_equal(p, &ops[i]))
      return fail(c, "operand %d %s does not match parameter %d %s of %s", i, SHP(&ops[i]), i, SHP(p), cp->name);
  }
  const ir_shape *r = comp_root(c, cp);
  if (!r) return false;
  *out = *r;
  if (out->type != IR_TUPLE) ir_shape_default_layout(out);
  return true;
}

/* ---- indexing: dynamic-slice, dynamic-update-slice, gather, scatter,
 * select-and-scatter (XLA's ShapeInference rules) ---------------------- */

/* Start indices from operand `first` on, for an operand of rank `rank`:
 * either `rank` integer scalars of one type, or (XLA's older form) one
 * integer vector of `rank` elements. */
static bool check_starts(ctx *c, const ir_shape *ops, int nops, int first, int rank) {
  int n = nops - first;
  if (n == 1 && ops[first].rank == 1 && rank != 0) {
    if (!ir_type_is_int(ops[first].type))
      return fail(c, "start indices %s must be integers", SHP(&ops[first]));
    if (ops[first].dims[0] != rank)
      return fail(c, "start index vector %s has %lld elements, operand rank is %d", SHP(&ops[first]),
                  (long long)ops[first].dims[0], rank);
    return true;
  }
  if (n != rank) return fail(c, "expected %d start indices (the operand's rank), got %d", rank, n);
  for (int i = first; i < nops; i++) {
    if (ops[i].rank != 0 || !ir_type_is_int(ops[i].type))
      return fail(c, "start index %d is %s, expected an integer scalar", i - first, SHP(&ops[i]));
    if (ops[i].type != ops[first].type)
      return fail(c, "start index %d is %s, start index 0 is %s (one type for all)", i - first,
                  ir_type_name(ops[i].type), ir_type_name(ops[first].type));
  }
  return true;
}

static bool infer_dynamic_slice(ctx *c, const ir_shape *ops, int nops, const ir_attrs *a, ir_shape *out) {
  if (nops < 2) return fail(c, "expected an operand and start indices, got %d operands", nops);
  for (int i = 0; i < nops; i++)
    if (!need_array(c, &ops[i], i)) return false;
  const ir_shape *x = &ops[0];
  if (!check_starts(c, ops, nops, 1, x->rank)) return false;
  if (a->slice_sizes.n != x->rank)
    return fail(c, "dynamic_slice_sizes has %d entries, operand %s has rank %d", a->slice_sizes.n, SHP(x),
                x->rank);
  for (int i = 0; i < x->rank; i++)
    if (a->slice_sizes.v[i] < 0 || a->slice_sizes.v[i] > x->dims[i])
      return fail(c, "dynamic_slice_sizes[%d] = %lld out of range 0..%lld", i, (long long)a->slice_sizes.v[i],
                  (long long)x->dims[i]);
  set_array(out, x->type, x->rank, a->slice_sizes.v);
  return true;
}

static bool infer_dynamic_update_slice(ctx *c, const ir_shape *ops, int nops, ir_shape *out) {
  if (nops < 3) return fail(c, "expected an operand, an update and start indices, got %d operands", nops);
  for (int i = 0; i < nops; i++)
    if (!need_array(c, &ops[i], i)) return false;
  const ir_shape *x = &ops[0], *u = &ops[1];
  if (u->type != x->type)
    return fail(c, "update type %s differs from operand type %s", ir_type_name(u->type), ir_type_name(x->type));
  if (u->rank != x->rank) return fail(c, "update %s and operand %s differ in rank", SHP(u), SHP(x));
  for (int i = 0; i < x->rank; i++)
    if (u->dims[i] > x->dims[i])
      return fail(c, "update %s is larger than operand %s in dimension %d", SHP(u), SHP(x), i);
  if (!check_starts(c, ops, nops, 2, x->rank)) return false;
  set_array(out, x->type, x->rank, x->dims);
  return true;
}

/* The spellings of the dimension numbers gather and scatter share. */
typedef struct gs_names {
  const char *window, *collapsed, *map, *obatch, *ibatch;
} gs_names;

static bool sorted_list(ctx *c, const ir_ints *l, int rank, const char *what) {
  if (!check_dim_list(c, l, rank, what, true)) return false;
  for (int i = 1; i < l->n; i++)
    if (l->v[i] < l->v[i - 1]) return fail(c, "%s must be sorted", what);
  return true;
}

/* Whether dimension d is in l. */
static bool in_list(const ir_ints *l, int64_t d) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == d) return true;
  return false;
}

/* The checks gather and scatter share, on operand x and indices ix; sets
 * *batch_rank to the rank of the indices' batch (the expanded indices
 * without index_vector_dim). */
static bool check_index_dims(ctx *c, const ir_attrs *a, const gs_names *nm, const ir_shape *x,
                             const ir_shape *ix, int *batch_rank) {
  if (!ir_type_is_int(ix->type)) return fail(c, "indices %s must be integers", SHP(ix));
  int64_t ivd = a->index_vector_dim;
  if (ivd < 0 || ivd > ix->rank)
    return fail(c, "index_vector_dim %lld out of range 0..%d", (long long)ivd, ix->rank);
  int64_t nvec = ivd == ix->rank ? 1 : ix->dims[ivd];
  *batch_rank = ivd == ix->rank ? ix->rank : ix->rank - 1;
  if (!check_dim_list(c, &a->index_map, x->rank, nm->map, true)) return false;
  if (a->index_map.n != nvec)
    return fail(c, "%s has %d entries, the index vector (dimension %lld of %s) has %lld", nm->map,
                a->index_map.n, (long long)ivd, SHP(ix), (long long)nvec);
  if (!sorted_list(c, &a->collapsed_dims, x->rank, nm->collapsed)) return false;
  if (!sorted_list(c, &a->operand_batching, x->rank, nm->obatch)) return false;
  if (!check_dim_list(c, &a->index_batching, ix->rank, nm->ibatch, true)) return false;
  if (a->operand_batching.n != a->index_batching.n)
    return fail(c, "%s has %d entries, %s %d", nm->obatch, a->operand_batching.n, nm->ibatch,
                a->index_batching.n);
  for (int i = 0; i < a->index_batching.n; i++) {
    if (a->index_batching.v[i] == ivd) return fail(c, "%s names index_vector_dim %lld", nm->ibatch, (long long)ivd);
    if (x->dims[a->operand_batching.v[i]] != ix->dims[a->index_batching.v[i]])
      return fail(c, "batching dimension %d has size %lld in the operand, %lld in the indices", i,
                  (long long)x->dims[a->operand_batching.v[i]], (long long)ix->dims[a->index_batching.v[i]]);
  }
  for (int i = 0; i < a->operand_batching.n; i++) {
    if (in_list(&a->collapsed_dims, a->operand_batching.v[i]))
      return fail(c, "dimension %lld is in both %s and %s", (long long)a->operand_batching.v[i], nm->collapsed,
                  nm->obatch);
    if (in_list(&a->index_map, a->operand_batching.v[i]))
      return fail(c, "dimension %lld is in both %s and %s", (long long)a->operand_batching.v[i], nm->map,
                  nm->obatch);
  }
  if (a->window_dims.n + a->collapsed_dims.n + a->operand_batching.n != x->rank)
    return fail(c, "%s, %s and %s have %d entries together, the operand %s has rank %d", nm->window,
                nm->collapsed, nm->obatch, a->window_dims.n + a->collapsed_dims.n + a->operand_batching.n, SHP(x),
                x->rank);
  return true;
}

/* The operand dimensions a window covers, in order: those neither
 * collapsed (inserted) nor batching; returns their count. */
static int window_operand_dims(const ir_attrs *a, int rank, int64_t *out) {
  int n = 0;
  for (int d = 0; d < rank; d++)
    if (!in_list(&a->collapsed_dims, d) && !in_list(&a->operand_batching, d)) out[n++] = d;
  return n;
}

/* The dims of the indices' batch: the indices' dims without
 * index_vector_dim (all of them when it is the rank). */
static int index_batch_dims(const ir_attrs *a, const ir_shape *ix, int64_t *out) {
  int n = 0;
  for (int d = 0; d < ix->rank; d++)
    if (d != a->index_vector_dim) out[n++] = ix->dims[d];
  return n;
}

static const gs_names gather_names = {"offset_dims", "collapsed_slice_dims", "start_index_map",
                                      "operand_batching_dims", "start_indices_batching_dims"};
static const gs_names scatter_names = {"update_window_dims", "inserted_window_dims",
                                       "scatter_dims_to_operand_dims", "input_batching_dims",
                                       "scatter_indices_batching_dims"};

static bool infer_gather(ctx *c, const ir_shape *x, const ir_shape *ix, const ir_attrs *a, ir_shape *out) {
  int brank;
  if (!check_index_dims(c, a, &gather_names, x, ix, &brank)) return false;
  if (a->slice_sizes.n != x->rank)
    return fail(c, "slice_sizes has %d entries, operand %s has rank %d", a->slice_sizes.n, SHP(x), x->rank);
  for (int i = 0; i < x->rank; i++) {
    int64_t s = a->slice_sizes.v[i];
    if (s < 0 || s > x->dims[i])
      return fail(c, "slice_sizes[%d] = %lld out of range 0..%lld", i, (long long)s, (long long)x->dims[i]);
    if (s > 1 && in_list(&a->collapsed_dims, i))
      return fail(c, "collapsed_slice_dims names dimension %d, whose slice size is %lld (must be 0 or 1)", i,
                  (long long)s);
    if (s != 1 && in_list(&a->operand_batching, i))
      return fail(c, "operand_batching_dims names dimension %d, whose slice size is %lld (must be 1)", i,
                  (long long)s);
  }
  int orank = a->window_dims.n + brank;
  if (orank > IR_MAX_RANK) return fail(c, "result rank %d exceeds %d", orank, IR_MAX_RANK);
  if (!sorted_list(c, &a->window_dims, orank, "offset_dims")) return false;
  int64_t wd[IR_MAX_RANK], bd[IR_MAX_RANK], dims[IR_MAX_RANK];
  window_operand_dims(a, x->rank, wd);
  index_batch_dims(a, ix, bd);
  for (int i = 0, w = 0, b = 0; i < orank; i++)
    dims[i] = in_list(&a->window_dims, i) ? a->slice_sizes.v[wd[w++]] : bd[b++];
  set_array(out, x->type, orank, dims);
  return true;
}

static bool infer_scatter(ctx *c, const ir_shape *ops, int nops, const ir_attrs *a, const ir_comp_id *calls,
                          int ncalls, ir_shape *out) {
  if (nops < 3 || nops % 2 == 0)
    return fail(c, "expected N operands, indices and N updates, got %d operands", nops);
  int n = (nops - 1) / 2;
  if (n > 64) return fail(c, "too many operands (%d)", n);
  for (int i = 0; i < nops; i++)
    if (!need_array(c, &ops[i], i)) return false;
  const ir_shape *x = &ops[0], *ix = &ops[n], *u = &ops[n + 1];
  ir_type types[64];
  for (int i = 0; i < n; i++) {
    if (!same_dims(&ops[i], x)) return fail(c, "operand %d %s does not match operand 0 %s", i, SHP(&ops[i]), SHP(x));
    if (!same_dims(&ops[n + 1 + i], u))
      return fail(c, "update %d %s does not match update 0 %s", i, SHP(&ops[n + 1 + i]), SHP(u));
    if (ops[n + 1 + i].type != ops[i].type)
      return fail(c, "update %d type %s differs from operand %d type %s", i, ir_type_name(ops[n + 1 + i].type), i,
                  ir_type_name(ops[i].type));
    types[i] = ops[i].type;
  }
  int brank;
  if (!check_index_dims(c, a, &scatter_names, x, ix, &brank)) return false;
  if (!sorted_list(c, &a->window_dims, u->rank, "update_window_dims")) return false;
  if (u->rank != a->window_dims.n + brank)
    return fail(c, "updates %s have rank %d, expected %d (update_window_dims plus the indices' batch)", SHP(u),
                u->rank, a->window_dims.n + brank);
  int64_t wd[IR_MAX_RANK], bd[IR_MAX_RANK];
  window_operand_dims(a, x->rank, wd);
  index_batch_dims(a, ix, bd);
  for (int i = 0, w = 0, b = 0; i < u->rank; i++) {
    if (in_list(&a->window_dims, i)) {
      if (u->dims[i] > x->dims[wd[w]])
        return fail(c, "update window dimension %d has size %lld, larger than operand dimension %lld (%lld)", i,
                    (long long)u->dims[i], (long long)wd[w], (long long)x->dims[wd[w]]);
      w++;
    } else if (u->dims[i] != bd[b++]) {
      return fail(c, "update scatter dimension %d has size %lld, the indices' batch has %lld", i,
                  (long long)u->dims[i], (long long)bd[b - 1]);
    }
  }
  const ir_comp *cp = called(c, calls, ncalls, "to_apply");
  if (!cp || !check_reducer(c, cp, types, n)) return false;
  return finish_multi(c, n, types, x->rank, x->dims, out);
}

/* A called computation of two t[] parameters returning r[]. */
static bool check_binary_fn(ctx *c, const ir_comp *cp, const char *kw, ir_type t, ir_type r) {
  int np = comp_nparams(cp);
  if (np != 2) return fail(c, "%s %s takes %d parameters, expected 2", kw, cp->name, np);
  ir_shape want = ir_shape_scalar(t), ret = ir_shape_scalar(r);
  for (int k = 0; k < 2; k++) {
    const ir_shape *p = comp_param(cp, k);
    if (!p) return fail(c, "%s %s has no parameter %d", kw, cp->name, k);
    if (!ir_shape_equal(p, &want))
      return fail(c, "%s %s parameter %d is %s, expected %s", kw, cp->name, k, SHP(p), SHP(&want));
  }
  const ir_shape *root = comp_root(c, cp);
  if (!root) return false;
  if (!ir_shape_equal(root, &ret)) return fail(c, "%s %s returns %s, expected %s", kw, cp->name, SHP(root), SHP(&ret));
  return true;
}

static const ir_comp *callee(ctx *c, const ir_comp_id *calls, int ncalls, int k, const char *kw) {
  if (k >= ncalls || !calls || calls[k] < 0 || !c->m || calls[k] >= c->m->comps.n) {
    fail(c, "has no %s computation", kw);
    return NULL;
  }
  return &c->m->comps.v[calls[k]];
}

static bool infer_select_and_scatter(ctx *c, const ir_shape *ops, const ir_attrs *a, const ir_comp_id *calls,
                                     int ncalls, ir_shape *out) {
  const ir_shape *x = &ops[0], *src = &ops[1], *init = &ops[2];
  if (ncalls != 2) return fail(c, "expected two called computations (select=, scatter=), got %d", ncalls);
  if (init->rank != 0 || init->type != x->type)
    return fail(c, "init value %s must be a %s[] scalar", SHP(init), ir_type_name(x->type));
  if (src->type != x->type)
    return fail(c, "source type %s differs from operand type %s", ir_type_name(src->type), ir_type_name(x->type));
  const ir_window *w = ir_window_of(a);
  if (w->rank != x->rank) return fail(c, "window has %d dimensions, operand %s has rank %d", w->rank, SHP(x), x->rank);
  int64_t dims[IR_MAX_RANK];
  for (int i = 0; i < x->rank; i++) {
    const ir_window_dim *wd = &w->dims[i];
    if (wd->lhs_dilate != 1 || wd->rhs_dilate != 1 || wd->reversal)
      return fail(c, "window dimension %d is dilated or reversed, which select-and-scatter does not take", i);
    if (wd->pad_lo < 0 || wd->pad_hi < 0) return fail(c, "window dimension %d has negative padding", i);
    if (!window_out(c, wd, i, x->dims[i], &dims[i])) return false;
  }
  ir_shape want = ir_shape_array(x->type, x->rank, dims);
  if (!same_dims(src, &want))
    return fail(c, "source %s does not match the window's output %s", SHP(src), SHP(&want));
  const ir_comp *sel = callee(c, calls, ncalls, 0, "select");
  if (!sel || !check_binary_fn(c, sel, "select", x->type, IR_PRED)) return false;
  const ir_comp *sc = callee(c, calls, ncalls, 1, "scatter");
  if (!sc || !check_binary_fn(c, sc, "scatter", x->type, x->type)) return false;
  set_array(out, x->type, x->rank, x->dims);
  return true;
}

static bool infer_target_array(ctx *c, ir_shape *out) {
  if (!valid_shape(c, out, "result", 0)) return false;
  if (out->type == IR_TUPLE) return fail(c, "result must be an array, got %s", SHP(out));
  return true;
}

bool ir_infer_shape(const ir_module *m, ir_op op, const ir_shape *ops, int nops, const ir_attrs *a,
                    const ir_comp_id *calls, int ncalls, ir_shape *out, char *err, size_t errlen) {
  ctx c = {m, op, err, errlen};
  if (err && errlen) err[0] = 0;
  if ((unsigned)op >= IR_OP__COUNT) {
    if (err && errlen) snprintf(err, errlen, "unknown op %d", (int)op);
    return false;
  }
  if (nops < 0 || (nops > 0 && !ops)) return fail(&c, "malformed operand list");
  static const ir_attrs zero_attrs;
  if (!a) a = &zero_attrs;
  {
    const ir_ints *lists[] = {&a->dimensions, &a->slice_start, &a->slice_limit, &a->slice_stride,
                              &a->lhs_batch, &a->rhs_batch, &a->lhs_contracting, &a->rhs_contracting,
                              &a->window_dims, &a->collapsed_dims, &a->index_map, &a->operand_batching,
                              &a->index_batching, &a->slice_sizes};
    for (size_t i = 0; i < COUNTOF(lists); i++)
      if (lists[i]->n < 0 || (lists[i]->n > 0 && !lists[i]->v)) return fail(&c, "malformed attribute list");
    if (a->npad < 0 || (a->npad > 0 && !a->padding)) return fail(&c, "malformed padding");
    if ((a->window != NULL) && (ir_window_of(a)->rank < 0 || ir_window_of(a)->rank > IR_MAX_RANK))
      return fail(&c, "window rank %d out of range", ir_window_of(a)->rank);
  }
  unsigned flags = ir_op_flags(op);
  int arity = ir_op_arity(op);
  if (arity >= 0 && !want_arity(&c, nops, arity)) return false;
  if (!(flags & OPF_CALLS) && op != IR_OP_FUSION && ncalls != 0)
    return fail(&c, "takes no called computations, got %d", ncalls);
  if (ir_is_collective(op) || op == IR_OP_ALL_REDUCE_DONE || op == IR_OP_ALL_GATHER_DONE ||
      op == IR_OP_COLLECTIVE_PERMUTE_DONE || op == IR_OP_REPLICA_ID || op == IR_OP_PARTITION_ID) {
    if (op == IR_OP_ALL_REDUCE) return infer_all_reduce(&c, ops, nops, calls, ncalls, out);
    for (int i = 0; i < nops; i++)
      if (!valid_shape(&c, &ops[i], "operand", 0)) return false;
    return ir_coll_infer(m, op, ops, nops, a, calls, ncalls, out, err, errlen);
  }
  /* Fixed-arity ops other than get-tuple-element work on arrays. */
  if (arity > 0 && op != IR_OP_GET_TUPLE_ELEMENT && !(flags & (OPF_DECLARED | OPF_CONTROL)))
    for (int i = 0; i < nops; i++)
      if (!need_array(&c, &ops[i], i)) return false;
  if (flags & OPF_ELEMWISE) return infer_elementwise(&c, flags, ops, nops, a, out);
  if (flags & OPF_CONTROL) {
    for (int i = 0; i < nops; i++)
      if (!valid_shape(&c, &ops[i], "operand", 0)) return false;
    return ir_control_infer(m, op, ops, nops, calls, ncalls, out, err, errlen);
  }
  if (flags & OPF_DECLARED) {
    /* no shape rule: the written result is kept (the verifier checks the
     * called computations of call, while and conditional) */
    for (int i = 0; i < nops; i++)
      if (!valid_shape(&c, &ops[i], "operand", 0)) return false;
    return valid_shape(&c, out, "result", 0);
  }

  switch (op) {
  case IR_OP_PARAMETER:
    if (a->parameter_number < 0)
      return fail(&c, "parameter number %lld must be >= 0", (long long)a->parameter_number);
    if (!valid_shape(&c, out, "result", 0)) return false;
    if (out->type != IR_TUPLE) ir_shape_default_layout(out);
    return true;
  case IR_OP_CONSTANT:
    if (!valid_shape(&c, out, "result", 0)) return false;
    if (a->literal && !ir_shape_equal(&a->literal->shape, out))
      return fail(&c, "literal shape %s differs from result %s", SHP(&a->literal->shape), SHP(out));
    if (out->type != IR_TUPLE) ir_shape_default_layout(out);
    return true;
  case IR_OP_IOTA:
    if (!infer_target_array(&c, out)) return false;
    if (out->rank < 1) return fail(&c, "result must have rank >= 1");
    if (a->index < 0 || a->index >= out->rank)
      return fail(&c, "iota_dimension %lld out of range for rank %d", (long long)a->index, out->rank);
    if (out->type == IR_PRED) return fail(&c, "result type must not be pred");
    ir_shape_default_layout(out);
    return true;
  case IR_OP_BROADCAST: return infer_broadcast(&c, &ops[0], a, out);
  case IR_OP_RESHAPE: return infer_reshape(&c, &ops[0], out);
  case IR_OP_TRANSPOSE: return infer_transpose(&c, &ops[0], a, out);
  case IR_OP_SLICE: return infer_slice(&c, &ops[0], a, out);
  case IR_OP_CONCATENATE: return infer_concatenate(&c, ops, nops, a, out);
  case IR_OP_PAD: return infer_pad(&c, &ops[0], &ops[1], a, out);
  case IR_OP_REVERSE:
    if (!check_dim_list(&c, &a->dimensions, ops[0].rank, "dimensions", true)) return false;
    set_array(out, ops[0].type, ops[0].rank, ops[0].dims);
    return true;
  case IR_OP_CONVERT: {
    ir_type t = out->type;
    if ((unsigned)t >= IR_TUPLE) return fail(&c, "result type must be an array element type");
    set_array(out, t, ops[0].rank, ops[0].dims);
    return true;
  }
  case IR_OP_BITCAST_CONVERT: {
    ir_type t = out->type;
    if ((unsigned)t >= IR_TUPLE) return fail(&c, "result type must be an array element type");
    if (ir_type_size(t) != ir_type_size(ops[0].type))
      return fail(&c, "%s and %s differ in width (only same-width bitcasts are supported)",
                  ir_type_name(ops[0].type), ir_type_name(t));
    set_array(out, t, ops[0].rank, ops[0].dims);
    return true;
  }
  case IR_OP_COPY: set_array(out, ops[0].type, ops[0].rank, ops[0].dims); return true;
  case IR_OP_DOT: return infer_dot(&c, &ops[0], &ops[1], a, out);
  case IR_OP_CONVOLUTION: return infer_convolution(&c, &ops[0], &ops[1], a, out);
  case IR_OP_REDUCE: return infer_reduce(&c, ops, nops, a, calls, ncalls, out);
  case IR_OP_REDUCE_WINDOW: return infer_reduce_window(&c, ops, nops, a, calls, ncalls, out);
  case IR_OP_ALL_REDUCE: return infer_all_reduce(&c, ops, nops, calls, ncalls, out);
  case IR_OP_TUPLE: {
    for (int i = 0; i < nops; i++)
      if (!valid_shape(&c, &ops[i], "operand", 0)) return false;
    ir_shape *el = tuple_elems(&c, nops);
    if (!el) return fail(&c, "a tuple result needs a module");
    for (int i = 0; i < nops; i++) el[i] = ops[i];
    memset(out, 0, sizeof *out);
    out->type = IR_TUPLE;
    out->ntuple = nops;
    out->tuple = el;
    return true;
  }
  case IR_OP_GET_TUPLE_ELEMENT: {
    const ir_shape *t = &ops[0];
    if (t->type != IR_TUPLE) return fail(&c, "operand %s is not a tuple", SHP(t));
    if (a->index < 0 || a->index >= t->ntuple)
      return fail(&c, "index %lld out of range for a tuple of %d elements", (long long)a->index, t->ntuple);
    *out = t->tuple[a->index];
    if (out->type != IR_TUPLE) ir_shape_default_layout(out);
    return true;
  }
  case IR_OP_FUSION: return infer_fusion(&c, ops, nops, calls, ncalls, out);
  case IR_OP_DYNAMIC_SLICE: return infer_dynamic_slice(&c, ops, nops, a, out);
  case IR_OP_DYNAMIC_UPDATE_SLICE: return infer_dynamic_update_slice(&c, ops, nops, out);
  case IR_OP_GATHER: return infer_gather(&c, &ops[0], &ops[1], a, out);
  case IR_OP_SCATTER: return infer_scatter(&c, ops, nops, a, calls, ncalls, out);
  case IR_OP_SELECT_AND_SCATTER: return infer_select_and_scatter(&c, ops, a, calls, ncalls, out);
  default: break;
  }
  return fail(&c, "no shape rule");
}
