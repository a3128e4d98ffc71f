/* ops_core.c: handlers for the core builtins of builtins.def: elementwise
 * ops, type conversion, data movement, constants, reductions, dot/matmul,
 * convolution and pooling. Each checks its operands and attributes with
 * messages that name the .tg operation, then emits IR through lemit. */
#include "frontend/tg/lower.h"

#include <ctype.h>
#include <math.h>
#include <strings.h>

#define HANDLER(fn)                                                            \
  tv fn(lctx *L, const tg_node *call, tg_node **arg, const tg_nodes *rest,     \
        const tg_builtin *b)

static ir_attrs attrs0(void) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  return a;
}

/* ---- elementwise ------------------------------------------------------- */

HANDLER(h_unary) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  if (x == IR_NONE) return tv_err();
  if (!lcheck_type(L, b->op, lshape(L, x)->type, call->loc, b->name)) {
    lnote_origin(L, arg[0]);
    return tv_err();
  }
  return tv_tensor(lunary(L, b->op, x, call->loc));
}

HANDLER(h_binary) {
  (void)rest;
  tv x = lower_expr(L, arg[0]), y = lower_expr(L, arg[1]);
  return lbinary(L, b->op, (ir_cmp_dir)b->aux, x, y, call->loc, b->name, arg[0], arg[1]);
}

HANDLER(h_compare) {
  (void)rest;
  static const char *const dirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  const char *d;
  if (!st_str(L, arg[2], "compare direction", &d)) return tv_err();
  for (int i = 0; i < 6; i++)
    if (strcasecmp(d, dirs[i]) == 0) {
      tv x = lower_expr(L, arg[0]), y = lower_expr(L, arg[1]);
      return lbinary(L, IR_OP_COMPARE, (ir_cmp_dir)i, x, y, call->loc, b->name, arg[0], arg[1]);
    }
  lerr(L, arg[2]->loc, "compare: direction must be one of EQ, NE, LT, LE, GT, GE");
  return tv_err();
}

/* Gives weak literals among vs[] the type of the first tensor; false when
 * an operand failed or the types disagree. */
static bool unify_types(lctx *L, tv *vs, tg_node **ns, int n, const char *what) {
  ir_type t = IR_TYPE_INVALID;
  for (int i = 0; i < n; i++) {
    if (vs[i].k == TV_ERR) return false;
    if (vs[i].k == TV_MULTI) {
      lerr(L, ns[i]->loc, "%s: a call returning several values used as an operand", what);
      return false;
    }
    if (vs[i].k == TV_TENSOR && t == IR_TYPE_INVALID) t = lshape(L, vs[i].id)->type;
  }
  for (int i = 0; i < n; i++) {
    if (vs[i].k == TV_LIT) {
      vs[i] = t == IR_TYPE_INVALID ? tv_tensor(tv_id(L, vs[i], ns[i]->loc)) : tv_to_type(L, vs[i], t, ns[i]->loc);
      if (vs[i].k == TV_ERR) return false;
    }
    if (lshape(L, vs[i].id)->type != lshape(L, vs[0].id)->type) {
      lerr(L, ns[i]->loc, "%s: operand types differ (%s vs %s)", what, ir_type_name(lshape(L, vs[0].id)->type),
           ir_type_name(lshape(L, vs[i].id)->type));
      return false;
    }
  }
  return true;
}

/* Broadcasts n tensors to their common shape (numpy rules). */
static bool broadcast_all(lctx *L, ir_id *ids, tg_node **ns, int n, src_loc loc, const char *what) {
  ir_shape common = *lshape(L, ids[0]);
  for (int i = 1; i < n; i++) {
    int rank;
    int64_t dims[IR_MAX_RANK];
    if (!lbroadcast_shape(L, &common, lshape(L, ids[i]), &rank, dims, loc, what)) {
      lnote_origin(L, ns[i]);
      return false;
    }
    common = ir_shape_array(common.type, rank, dims);
  }
  for (int i = 0; i < n; i++) {
    ids[i] = lbroadcast_to(L, ids[i], common.rank, common.dims, loc);
    if (ids[i] == IR_NONE) return false;
  }
  return true;
}

HANDLER(h_select) {
  (void)rest;
  tv c = lower_expr(L, arg[0]);
  if (c.k == TV_LIT) c = tv_to_type(L, c, IR_PRED, arg[0]->loc);
  ir_id cid = tv_id(L, c, arg[0]->loc);
  tv vs[2] = {lower_expr(L, arg[1]), lower_expr(L, arg[2])};
  if (cid == IR_NONE || !unify_types(L, vs, arg + 1, 2, b->name)) return tv_err();
  if (lshape(L, cid)->type != IR_PRED) {
    lerr(L, arg[0]->loc, "%s: the condition must be pred, got %s", b->name, ir_type_name(lshape(L, cid)->type));
    lnote_origin(L, arg[0]);
    return tv_err();
  }
  ir_id ids[3] = {cid, vs[0].id, vs[1].id};
  ir_shape s0 = *lshape(L, ids[1]);
  /* the condition's type differs; broadcast shapes only */
  tg_node *ns[3] = {arg[0], arg[1], arg[2]};
  ir_shape sc = *lshape(L, cid);
  int rank;
  int64_t dims[IR_MAX_RANK];
  if (!lbroadcast_shape(L, &s0, lshape(L, ids[2]), &rank, dims, call->loc, b->name)) return tv_err();
  ir_shape t = ir_shape_array(s0.type, rank, dims);
  if (!lbroadcast_shape(L, &t, &sc, &rank, dims, call->loc, b->name)) {
    lnote_origin(L, ns[0]);
    return tv_err();
  }
  for (int i = 0; i < 3; i++) ids[i] = lbroadcast_to(L, ids[i], rank, dims, call->loc);
  return tv_tensor(lemit(L, IR_OP_SELECT, ids, 3, NULL, NULL, 0, NULL, call->loc, b->name));
}

HANDLER(h_clamp) {
  (void)rest;
  tv vs[3] = {lower_expr(L, arg[0]), lower_expr(L, arg[1]), lower_expr(L, arg[2])};
  if (!unify_types(L, vs, arg, 3, b->name)) return tv_err();
  if (!lcheck_type(L, IR_OP_CLAMP, lshape(L, vs[0].id)->type, call->loc, b->name)) return tv_err();
  ir_id ids[3] = {vs[0].id, vs[1].id, vs[2].id};
  if (!broadcast_all(L, ids, arg, 3, call->loc, b->name)) return tv_err();
  ir_id ops[3] = {ids[1], ids[0], ids[2]}; /* HLO order: clamp(lo, x, hi) */
  return tv_tensor(lemit(L, IR_OP_CLAMP, ops, 3, NULL, NULL, 0, NULL, call->loc, b->name));
}

HANDLER(h_convert) {
  (void)rest;
  ir_type t;
  if (!st_type(L, arg[1], b->name, &t)) return tv_err();
  tv v = lower_expr(L, arg[0]);
  if (v.k == TV_LIT && b->op == IR_OP_CONVERT && !v.is_bool && (ir_type_is_float(t) || v.all_int))
    return tv_to_type(L, v, t, arg[0]->loc);
  ir_id x = tv_id(L, v, arg[0]->loc);
  if (x == IR_NONE) return tv_err();
  const ir_shape *s = lshape(L, x);
  if (b->op == IR_OP_CONVERT) return tv_tensor(lconvert(L, x, t, call->loc));
  if (ir_type_size(t) != ir_type_size(s->type)) {
    lerr(L, call->loc, "bitcast_convert: %s and %s have different widths", ir_type_name(s->type), ir_type_name(t));
    return tv_err();
  }
  ir_shape out = ir_shape_array(t, s->rank, s->dims);
  return tv_tensor(lemit(L, IR_OP_BITCAST_CONVERT, &x, 1, NULL, NULL, 0, &out, call->loc, b->name));
}

/* ---- data movement ------------------------------------------------------ */

static const char *dims_str(lctx *L, const int64_t *d, int n) {
  strbuf sb;
  sb_init(&sb);
  sb_putc(&sb, '[');
  for (int i = 0; i < n; i++) sb_printf(&sb, "%s%lld", i ? "," : "", (long long)d[i]);
  sb_putc(&sb, ']');
  const char *r = arena_strdup(L->m->arena, sb_str(&sb));
  sb_free(&sb);
  return r;
}

HANDLER(h_reshape) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  int64_t dims[IR_MAX_RANK];
  int n;
  if (x == IR_NONE || !st_ints(L, arg[1], "reshape shape", dims, &n, IR_MAX_RANK)) return tv_err();
  const ir_shape *s = lshape(L, x);
  int64_t total = ir_shape_count(s), known = 1;
  int infer = -1;
  for (int i = 0; i < n; i++) {
    if (dims[i] == -1 && infer < 0) {
      infer = i;
      continue;
    }
    if (dims[i] < 0 || __builtin_mul_overflow(known, dims[i], &known) || known > IR_MAX_ELEMENTS) {
      lerr(L, arg[1]->loc, "reshape: invalid shape %s", dims_str(L, dims, n));
      return tv_err();
    }
  }
  if (infer >= 0) {
    if (known == 0 || total % known != 0) {
      lerr(L, arg[1]->loc, "reshape: cannot infer the -1 dimension of %s from %s", dims_str(L, dims, n),
           lshape_str(L, s));
      return tv_err();
    }
    dims[infer] = total / known;
    known = total;
  }
  if (known != total) {
    lerr(L, call->loc, "reshape: cannot reshape %s (%lld elements) into %s (%lld elements)", lshape_str(L, s),
         (long long)total, dims_str(L, dims, n), (long long)known);
    lnote_origin(L, arg[0]);
    return tv_err();
  }
  return tv_tensor(lreshape(L, x, n, dims, call->loc));
}

HANDLER(h_transpose) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  if (x == IR_NONE) return tv_err();
  int r = lshape(L, x)->rank;
  int64_t perm[IR_MAX_RANK];
  int n = r;
  if (!arg[1]) {
    for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
  } else if (!st_ints(L, arg[1], "transpose perm", perm, &n, IR_MAX_RANK)) {
    return tv_err();
  }
  bool seen[IR_MAX_RANK] = {false}, ok = n == r;
  for (int i = 0; i < n && ok; i++) {
    if (perm[i] < 0) perm[i] += r;
    if (perm[i] < 0 || perm[i] >= r || seen[perm[i]]) ok = false;
    else seen[perm[i]] = true;
  }
  if (!ok) {
    lerr(L, arg[1]->loc, "transpose: perm must be a permutation of 0..%d for a rank-%d tensor", r - 1, r);
    return tv_err();
  }
  return tv_tensor(ltranspose(L, x, perm, call->loc));
}

HANDLER(h_broadcast) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  int64_t dims[IR_MAX_RANK], map[IR_MAX_RANK];
  int n, nm;
  if (x == IR_NONE || !st_ints(L, arg[1], "broadcast shape", dims, &n, IR_MAX_RANK) ||
      !st_ints(L, arg[2], "broadcast dimensions", map, &nm, IR_MAX_RANK))
    return tv_err();
  if (arg[2]->kind != TG_LIST || arg[1]->kind != TG_LIST) {
    lerr(L, call->loc, "broadcast: shape and dimensions must be lists");
    return tv_err();
  }
  const ir_shape *s = lshape(L, x);
  if (nm != s->rank) {
    lerr(L, arg[2]->loc, "broadcast: dimensions has %d entries but the operand has rank %d", nm, s->rank);
    return tv_err();
  }
  for (int i = 0; i < n; i++)
    if (dims[i] < 0) {
      lerr(L, arg[1]->loc, "broadcast: negative dimension");
      return tv_err();
    }
  for (int i = 0; i < nm; i++)
    if (map[i] < 0 || map[i] >= n || (i && map[i] <= map[i - 1]) || s->dims[i] != dims[map[i]]) {
      lerr(L, arg[2]->loc, "broadcast: dimensions %s do not map %s into %s", dims_str(L, map, nm),
           lshape_str(L, s), dims_str(L, dims, n));
      return tv_err();
    }
  ir_attrs a = attrs0();
  a.dimensions = (ir_ints){nm, map};
  ir_shape out = ir_shape_array(s->type, n, dims);
  return tv_tensor(lemit(L, IR_OP_BROADCAST, &x, 1, &a, NULL, 0, &out, call->loc, b->name));
}

HANDLER(h_broadcast_to) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  int64_t dims[IR_MAX_RANK];
  int n;
  if (x == IR_NONE || !st_ints(L, arg[1], "broadcast_to shape", dims, &n, IR_MAX_RANK)) return tv_err();
  const ir_shape *s = lshape(L, x);
  bool ok = s->rank <= n;
  for (int i = 0; i < s->rank && ok; i++) {
    int64_t want = dims[n - s->rank + i];
    if (s->dims[i] != want && s->dims[i] != 1) ok = false;
  }
  for (int i = 0; i < n; i++)
    if (dims[i] < 0) ok = false;
  if (!ok) {
    lerr(L, call->loc, "broadcast_to: cannot broadcast %s to %s", lshape_str(L, s), dims_str(L, dims, n));
    lnote_origin(L, arg[0]);
    return tv_err();
  }
  return tv_tensor(lbroadcast_to(L, x, n, dims, call->loc));
}

HANDLER(h_slice) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  if (x == IR_NONE) return tv_err();
  const ir_shape *s = lshape(L, x);
  int64_t st[IR_MAX_RANK], li[IR_MAX_RANK], sd[IR_MAX_RANK];
  int ns, nl, nd = s->rank;
  if (!st_ints(L, arg[1], "slice start", st, &ns, IR_MAX_RANK) ||
      !st_ints(L, arg[2], "slice limit", li, &nl, IR_MAX_RANK))
    return tv_err();
  for (int i = 0; i < s->rank; i++) sd[i] = 1;
  if (arg[3] && !st_ints(L, arg[3], "slice stride", sd, &nd, IR_MAX_RANK)) return tv_err();
  if (ns != s->rank || nl != s->rank || nd != s->rank) {
    lerr(L, call->loc, "slice: start, limit and stride need %d entries for %s", s->rank, lshape_str(L, s));
    return tv_err();
  }
  for (int i = 0; i < s->rank; i++)
    if (st[i] < 0 || st[i] > li[i] || li[i] > s->dims[i] || sd[i] < 1) {
      lerr(L, call->loc, "slice: dimension %d: need 0 <= start (%lld) <= limit (%lld) <= %lld and stride (%lld) >= 1",
           i, (long long)st[i], (long long)li[i], (long long)s->dims[i], (long long)sd[i]);
      return tv_err();
    }
  ir_attrs a = attrs0();
  a.slice_start = (ir_ints){s->rank, st};
  a.slice_limit = (ir_ints){s->rank, li};
  a.slice_stride = (ir_ints){s->rank, sd};
  return tv_tensor(lemit(L, IR_OP_SLICE, &x, 1, &a, NULL, 0, NULL, call->loc, b->name));
}

HANDLER(h_concat) {
  int n = rest->n;
  tv *vs = arena_array(L->m->arena, (size_t)n, sizeof(tv));
  for (int i = 0; i < n; i++) vs[i] = lower_expr(L, rest->v[i]);
  if (!unify_types(L, vs, rest->v, n, b->name)) return tv_err();
  ir_id *ids = arena_array(L->m->arena, (size_t)n, sizeof(ir_id));
  for (int i = 0; i < n; i++) ids[i] = vs[i].id;
  const ir_shape *s0 = lshape(L, ids[0]);
  int64_t ax = 0;
  if (arg[1] && !st_int(L, arg[1], "concat axis", &ax)) return tv_err();
  if (!st_axis(L, arg[1] ? arg[1] : call, b->name, ax, s0->rank, &ax)) return tv_err();
  for (int i = 1; i < n; i++) {
    const ir_shape *si = lshape(L, ids[i]);
    bool ok = si->rank == s0->rank;
    for (int d = 0; d < s0->rank && ok; d++)
      if (d != ax && si->dims[d] != s0->dims[d]) ok = false;
    if (!ok) {
      lerr(L, rest->v[i]->loc, "%s: operand %d is %s but operand 1 is %s; all dimensions except axis %lld must agree",
           b->name, i + 1, lshape_str(L, si), lshape_str(L, s0), (long long)ax);
      return tv_err();
    }
  }
  ir_attrs a = attrs0();
  a.dimensions = (ir_ints){1, &ax};
  return tv_tensor(lemit(L, IR_OP_CONCATENATE, ids, n, &a, NULL, 0, NULL, call->loc, b->name));
}

HANDLER(h_pad) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  if (x == IR_NONE) return tv_err();
  const ir_shape *s = lshape(L, x);
  int r = s->rank;
  int64_t v[3][IR_MAX_RANK] = {{0}};
  static const char *const what[3] = {"pad low", "pad high", "pad interior"};
  for (int k = 0; k < 3; k++) {
    if (!arg[1 + k]) continue;
    int n;
    if (!st_ints(L, arg[1 + k], what[k], v[k], &n, IR_MAX_RANK)) return tv_err();
    if (n != r) {
      lerr(L, arg[1 + k]->loc, "%s: needs %d entries for %s", what[k], r, lshape_str(L, s));
      return tv_err();
    }
    for (int i = 0; i < r; i++)
      if (v[k][i] < -IR_MAX_ELEMENTS || v[k][i] > IR_MAX_ELEMENTS || (k == 2 && v[k][i] < 0)) {
        lerr(L, arg[1 + k]->loc, "%s: value %lld out of range", what[k], (long long)v[k][i]);
        return tv_err();
      }
  }
  tv pv = arg[4] ? lower_expr(L, arg[4]) : tv_tensor(lscalar(L, s->type, 0, call->loc));
  pv = tv_to_type(L, pv, s->type, arg[4] ? arg[4]->loc : call->loc);
  ir_id p = tv_id(L, pv, call->loc);
  if (p == IR_NONE) return tv_err();
  if (lshape(L, p)->rank != 0 || lshape(L, p)->type != s->type) {
    lerr(L, arg[4]->loc, "pad: value must be a %s scalar, got %s", ir_type_name(s->type), lshape_str(L, lshape(L, p)));
    return tv_err();
  }
  ir_padding_dim pd[IR_MAX_RANK];
  for (int i = 0; i < r; i++) pd[i] = (ir_padding_dim){v[0][i], v[1][i], v[2][i]};
  ir_attrs a = attrs0();
  a.npad = r;
  a.padding = pd;
  ir_id ops[2] = {x, p};
  return tv_tensor(lemit(L, IR_OP_PAD, ops, 2, &a, NULL, 0, NULL, call->loc, b->name));
}

HANDLER(h_reverse) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  int64_t axes[IR_MAX_RANK];
  int n;
  if (x == IR_NONE || !st_axes(L, arg[1], b->name, lshape(L, x)->rank, axes, &n)) return tv_err();
  ir_attrs a = attrs0();
  a.dimensions = (ir_ints){n, axes};
  return tv_tensor(lemit(L, IR_OP_REVERSE, &x, 1, &a, NULL, 0, NULL, call->loc, b->name));
}

/* ---- constants -------------------------------------------------------- */

HANDLER(h_iota) {
  (void)rest;
  ir_shape s;
  int64_t ax = 0;
  if (!st_shape(L, arg[0], b->name, &s)) return tv_err();
  if (arg[1] && !st_int(L, arg[1], "iota axis", &ax)) return tv_err();
  if (!st_axis(L, arg[1] ? arg[1] : arg[0], b->name, ax, s.rank, &ax)) return tv_err();
  if (s.type == IR_PRED) {
    lerr(L, arg[0]->loc, "iota: pred is not a numeric type");
    return tv_err();
  }
  ir_attrs a = attrs0();
  a.index = ax;
  return tv_tensor(lemit(L, IR_OP_IOTA, NULL, 0, &a, NULL, 0, &s, call->loc, b->name));
}

HANDLER(h_constant) {
  (void)rest;
  tv v = lower_expr(L, arg[0]);
  if (v.k == TV_ERR) return v;
  if (v.k != TV_LIT) {
    lerr(L, arg[0]->loc, "constant: expected numbers or a tensor literal");
    return tv_err();
  }
  if (!arg[1]) return tv_tensor(tv_id(L, v, arg[0]->loc));
  ir_type t;
  if (!st_type(L, arg[1], b->name, &t)) return tv_err();
  return tv_to_type(L, v, t, arg[0]->loc);
}

HANDLER(h_fill) {
  (void)rest;
  ir_shape s;
  if (!st_shape(L, arg[0], b->name, &s)) return tv_err();
  double v = b->aux;
  if (b->aux == 2) {
    if (arg[1]->kind == TG_BOOL) v = (double)arg[1]->ival;
    else if (!st_float(L, arg[1], "full value", &v)) return tv_err();
    tv t = tv_to_type(L, lower_expr(L, arg[1]), s.type, arg[1]->loc); /* checks integrality */
    if (t.k == TV_ERR) return t;
  } else if (s.type == IR_PRED) {
    v = b->aux;
  }
  return tv_tensor(lfill(L, s.type, v, s.rank, s.dims, call->loc));
}

HANDLER(h_fill_like) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  if (x == IR_NONE) return tv_err();
  const ir_shape *s = lshape(L, x);
  return tv_tensor(lfill(L, s->type, b->aux, s->rank, s->dims, call->loc));
}

/* ---- reductions --------------------------------------------------------- */

HANDLER(h_reduce) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  if (x == IR_NONE) return tv_err();
  ir_shape s = *lshape(L, x);
  int64_t axes[IR_MAX_RANK];
  int n;
  bool keep = false;
  if (!st_axes(L, arg[1], b->name, s.rank, axes, &n)) return tv_err();
  if (arg[2] && !st_bool(L, arg[2], "keepdims", &keep)) return tv_err();
  if (b->aux >= 0) return tv_tensor(lreduce(L, x, b->aux, axes, n, keep, call->loc, b->name));
  if (!ir_type_is_float(s.type)) {
    lerr(L, call->loc, "%s: needs a floating-point operand, got %s", b->name, ir_type_name(s.type));
    return tv_err();
  }
  double count = 1;
  for (int i = 0; i < n; i++) count *= (double)s.dims[axes[i]];
  ir_id sum = lreduce(L, x, R_SUM, axes, n, keep, call->loc, b->name);
  return tv_tensor(lbinc(L, IR_OP_DIVIDE, sum, count, call->loc));
}

static int reduce_kind(lctx *L, const tg_node *n, const char *what) {
  static const char *const kinds[] = {"sum", "prod", "max", "min", "and", "or"};
  const char *k;
  if (!st_str(L, n, what, &k)) return -1;
  for (int i = 0; i < 6; i++)
    if (strcmp(k, kinds[i]) == 0) return i;
  lerr(L, n->loc, "%s: kind must be sum, prod, max, min, and or or", what);
  return -1;
}

HANDLER(h_all_reduce) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  int kind = arg[1] ? reduce_kind(L, arg[1], b->name) : R_SUM;
  if (x == IR_NONE || kind < 0) return tv_err();
  ir_type t = lshape(L, x)->type;
  if ((kind == R_AND || kind == R_OR) && ir_type_is_float(t)) {
    lerr(L, arg[1]->loc, "%s: kind \"%s\" needs integer or pred operands, got %s", b->name, arg[1]->name,
         ir_type_name(t));
    return tv_err();
  }
  if ((kind == R_SUM || kind == R_PROD) && t == IR_PRED) {
    lerr(L, call->loc, "%s: kind \"%s\" is not defined on pred operands", b->name, arg[1] ? arg[1]->name : "sum");
    return tv_err();
  }
  ir_comp_id c = lreducer(L, kind, t, call->loc);
  return tv_tensor(lemit(L, IR_OP_ALL_REDUCE, &x, 1, NULL, &c, 1, NULL, call->loc, b->name));
}

/* ---- dot and matmul ------------------------------------------------------ */

ir_id ldot(lctx *L, ir_id a, ir_id b, int nbatch, int lc, int rc, ir_type preferred, src_loc loc) {
  if (a == IR_NONE || b == IR_NONE) return IR_NONE;
  int64_t batch[IR_MAX_RANK], lcv = lc, rcv = rc;
  for (int i = 0; i < nbatch; i++) batch[i] = i;
  ir_attrs at = attrs0();
  at.lhs_batch = (ir_ints){nbatch, batch};
  at.rhs_batch = (ir_ints){nbatch, batch};
  at.lhs_contracting = (ir_ints){1, &lcv};
  at.rhs_contracting = (ir_ints){1, &rcv};
  at.preferred_type = preferred;
  ir_id ops[2] = {a, b};
  return lemit(L, IR_OP_DOT, ops, 2, &at, NULL, 0, NULL, loc, L->cur_op ? L->cur_op : "dot");
}

static bool preferred_arg(lctx *L, const tg_node *n, ir_type *out) {
  *out = IR_TYPE_INVALID;
  return !n || st_type(L, n, "preferred_type", out);
}

tv fe_tg_matmul(lctx *L, const tg_node *where, tv a, tv b, const tg_node *na,
                const tg_node *nb, ir_type preferred) {
  const char *what = "matmul";
  if (a.k == TV_ERR || b.k == TV_ERR) return tv_err();
  if (a.k == TV_LIT && b.k == TV_TENSOR) a = tv_to_type(L, a, lshape(L, b.id)->type, na->loc);
  if (b.k == TV_LIT && a.k == TV_TENSOR) b = tv_to_type(L, b, lshape(L, a.id)->type, nb->loc);
  ir_id x = tv_id(L, a, na->loc), y = tv_id(L, b, nb->loc);
  if (x == IR_NONE || y == IR_NONE) return tv_err();
  ir_shape sx = *lshape(L, x), sy = *lshape(L, y);
  if (sx.type != sy.type) {
    lerr(L, where->loc, "%s: operand types differ (%s vs %s); convert one with cast(x, %s)", what,
         ir_type_name(sx.type), ir_type_name(sy.type), ir_type_name(sx.type));
    lnote_origin(L, na);
    lnote_origin(L, nb);
    return tv_err();
  }
  if (sx.type == IR_PRED) {
    lerr(L, where->loc, "%s: not defined on pred operands", what);
    return tv_err();
  }
  if (sx.rank == 0 || sy.rank == 0) {
    lerr(L, where->loc, "%s: operands must have rank >= 1 (got %s and %s); use * for scalars", what,
         lshape_str(L, &sx), lshape_str(L, &sy));
    return tv_err();
  }
  bool vec_x = sx.rank == 1, vec_y = sy.rank == 1;
  if (vec_x) {
    int64_t d[2] = {1, sx.dims[0]};
    x = lreshape(L, x, 2, d, where->loc);
    sx = *lshape(L, x);
  }
  if (vec_y) {
    int64_t d[2] = {sy.dims[0], 1};
    y = lreshape(L, y, 2, d, where->loc);
    sy = *lshape(L, y);
  }
  int64_t kx = sx.dims[sx.rank - 1], ky = sy.dims[sy.rank - 2];
  if (kx != ky) {
    lerr(L, where->loc, "%s: contracting dimensions differ (%lld vs %lld)", what, (long long)kx, (long long)ky);
    lnote_origin(L, na);
    lnote_origin(L, nb);
    return tv_err();
  }
  ir_id r;
  int64_t out[IR_MAX_RANK];
  int orank;
  if (sy.rank == 2) {
    r = ldot(L, x, y, 0, sx.rank - 1, 0, preferred, where->loc);
    orank = sx.rank;
    for (int i = 0; i < sx.rank - 1; i++) out[i] = sx.dims[i];
    out[orank - 1] = sy.dims[1];
  } else {
    ir_shape bx = ir_shape_array(sx.type, sx.rank - 2, sx.dims);
    ir_shape by = ir_shape_array(sy.type, sy.rank - 2, sy.dims);
    int nb_;
    int64_t bd[IR_MAX_RANK];
    if (!lbroadcast_shape(L, &bx, &by, &nb_, bd, where->loc, "matmul batch dimensions")) {
      lnote_origin(L, na);
      lnote_origin(L, nb);
      return tv_err();
    }
    int64_t dx[IR_MAX_RANK], dy[IR_MAX_RANK];
    memcpy(dx, bd, sizeof(int64_t) * (size_t)nb_);
    memcpy(dy, bd, sizeof(int64_t) * (size_t)nb_);
    dx[nb_] = sx.dims[sx.rank - 2];
    dx[nb_ + 1] = kx;
    dy[nb_] = ky;
    dy[nb_ + 1] = sy.dims[sy.rank - 1];
    if (nb_ + 2 > IR_MAX_RANK) return tv_err();
    x = lbroadcast_to(L, x, nb_ + 2, dx, where->loc);
    y = lbroadcast_to(L, y, nb_ + 2, dy, where->loc);
    r = ldot(L, x, y, nb_, nb_ + 1, nb_, preferred, where->loc);
    orank = nb_ + 2;
    memcpy(out, bd, sizeof(int64_t) * (size_t)nb_);
    out[nb_] = dx[nb_];
    out[nb_ + 1] = dy[nb_ + 1];
  }
  if (r == IR_NONE) return tv_err();
  if (vec_x || vec_y) {
    int64_t d[IR_MAX_RANK];
    int k = 0;
    for (int i = 0; i < orank; i++) {
      if (vec_x && i == orank - 2) continue;
      if (vec_y && i == orank - 1) continue;
      d[k++] = out[i];
    }
    r = lreshape(L, r, k, d, where->loc);
  }
  return tv_tensor(r);
}

HANDLER(h_matmul) {
  (void)rest;
  (void)b;
  ir_type pt;
  if (!preferred_arg(L, arg[2], &pt)) return tv_err();
  tv x = lower_expr(L, arg[0]), y = lower_expr(L, arg[1]);
  return fe_tg_matmul(L, call, x, y, arg[0], arg[1], pt);
}

HANDLER(h_dot) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]), y = lower_tensor(L, arg[1]);
  ir_type pt;
  if (x == IR_NONE || y == IR_NONE || !preferred_arg(L, arg[6], &pt)) return tv_err();
  const ir_shape *sx = lshape(L, x), *sy = lshape(L, y);
  int64_t v[4][IR_MAX_RANK];
  int n[4] = {0, 0, 0, 0};
  static const char *const what[4] = {"lhs_contracting", "rhs_contracting", "lhs_batch", "rhs_batch"};
  for (int k = 0; k < 4; k++) {
    const tg_node *an = arg[2 + k];
    if (!an) continue;
    if (!st_ints(L, an, what[k], v[k], &n[k], IR_MAX_RANK)) return tv_err();
    int r = (k % 2 == 0) ? sx->rank : sy->rank;
    for (int i = 0; i < n[k]; i++)
      if (!st_axis(L, an, what[k], v[k][i], r, &v[k][i])) return tv_err();
  }
  if (!arg[2]) {
    n[0] = 1;
    v[0][0] = sx->rank - 1;
  }
  if (!arg[3]) {
    n[1] = 1;
    v[1][0] = n[3];
  }
  if ((!arg[2] && v[0][0] < 0) || (!arg[3] && v[1][0] >= sy->rank)) {
    lerr(L, call->loc, "dot: operands %s and %s have no dimensions to contract by default; give lhs_contracting "
         "and rhs_contracting", lshape_str(L, sx), lshape_str(L, sy));
    return tv_err();
  }
  if (n[0] != n[1] || n[2] != n[3]) {
    lerr(L, call->loc, "dot: lhs and rhs need as many contracting (%d vs %d) and batch (%d vs %d) dimensions",
         n[0], n[1], n[2], n[3]);
    return tv_err();
  }
  if (sx->type != sy->type) {
    lerr(L, call->loc, "dot: operand types differ (%s vs %s)", ir_type_name(sx->type), ir_type_name(sy->type));
    return tv_err();
  }
  for (int i = 0; i < n[0]; i++)
    if (sx->dims[v[0][i]] != sy->dims[v[1][i]]) {
      lerr(L, call->loc, "dot: contracting dimensions differ (%lld vs %lld)", (long long)sx->dims[v[0][i]],
           (long long)sy->dims[v[1][i]]);
      lnote_origin(L, arg[0]);
      lnote_origin(L, arg[1]);
      return tv_err();
    }
  ir_attrs at = attrs0();
  at.lhs_contracting = (ir_ints){n[0], v[0]};
  at.rhs_contracting = (ir_ints){n[1], v[1]};
  at.lhs_batch = (ir_ints){n[2], v[2]};
  at.rhs_batch = (ir_ints){n[3], v[3]};
  at.preferred_type = pt;
  ir_id ops[2] = {x, y};
  return tv_tensor(lemit(L, IR_OP_DOT, ops, 2, &at, NULL, 0, NULL, call->loc, b->name));
}

/* ---- windows: layouts and padding ---------------------------------------- */

/* Parses a layout string for a rank-r tensor: `a` and `b` are the two
 * non-spatial letters ('N','C' or 'I','O'); every other letter is a
 * spatial dimension. pos[0], pos[1] get a's and b's positions; spatial
 * letters are returned in order. */
static bool parse_layout(lctx *L, const tg_node *n, const char *s, int r, char a, char b, int *pa,
                         int *pb, char *sp, int *nsp) {
  int len = (int)strlen(s);
  *pa = *pb = -1;
  *nsp = 0;
  bool ok = len == r;
  for (int i = 0; i < len && ok; i++) {
    char c = (char)toupper((unsigned char)s[i]);
    if (c == a && *pa < 0) *pa = i;
    else if (c == b && *pb < 0) *pb = i;
    else if (c == a || c == b || memchr(sp, c, (size_t)*nsp)) ok = false;
    else sp[(*nsp)++] = c;
  }
  if (!ok || *pa < 0 || *pb < 0) {
    lerr(L, n->loc, "layout \"%s\" is not valid for a rank-%d tensor (need %c, %c and %d spatial letters, each once)",
         s, r, a, b, r - 2);
    return false;
  }
  return true;
}

static void default_layout(char *buf, int r, bool kernel) {
  static const char *const sp[] = {"", "W", "HW", "DHW"};
  char spatial[IR_MAX_RANK + 1];
  int nsp = r - 2;
  if (nsp <= 3) strcpy(spatial, sp[nsp]);
  else {
    for (int i = 0; i < nsp; i++) spatial[i] = (char)('0' + i);
    spatial[nsp] = 0;
  }
  if (kernel) sprintf(buf, "%sIO", spatial);
  else sprintf(buf, "N%sC", spatial);
}

/* Reads an int list of nsp entries (a single int is repeated) in [lo, hi]. */
static bool spatial_ints(lctx *L, const tg_node *n, const char *what, int nsp, int64_t def, int64_t lo, int64_t hi,
                         int64_t *out) {
  for (int i = 0; i < nsp; i++) out[i] = def;
  if (!n) return true;
  int64_t v[IR_MAX_RANK];
  int k;
  if (!st_ints(L, n, what, v, &k, IR_MAX_RANK)) return false;
  if (k != nsp && k != 1) {
    lerr(L, n->loc, "%s: needs %d value%s (one per spatial dimension), got %d", what, nsp, nsp == 1 ? "" : "s", k);
    return false;
  }
  for (int i = 0; i < nsp; i++) {
    out[i] = v[k == 1 ? 0 : i];
    if (out[i] < lo || out[i] > hi) {
      lerr(L, n->loc, "%s: value %lld is out of range [%lld, %lld]", what, (long long)out[i], (long long)lo,
           (long long)hi);
      return false;
    }
  }
  return true;
}

enum { MAX_WIN = 1 << 24 };

/* Fills pad_lo/pad_hi of nsp window dims from "SAME", "VALID", [p, ...]
 * or [[lo, hi], ...]; in[] are the spatial input sizes. */
static bool window_padding(lctx *L, const tg_node *n, const char *what, int nsp, const int64_t *in,
                           ir_window_dim *w) {
  if (!n) return true;
  if (n->kind == TG_STR) {
    if (strcasecmp(n->name, "VALID") == 0) return true;
    if (strcasecmp(n->name, "SAME") != 0) {
      lerr(L, n->loc, "%s: padding must be \"SAME\", \"VALID\" or a list", what);
      return false;
    }
    for (int i = 0; i < nsp; i++) {
      int64_t eff_in = (in[i] - 1) * w[i].lhs_dilate + 1;
      int64_t eff_k = (w[i].size - 1) * w[i].rhs_dilate + 1;
      int64_t out = (eff_in + w[i].stride - 1) / w[i].stride;
      int64_t total = (out - 1) * w[i].stride + eff_k - eff_in;
      if (total < 0) total = 0;
      w[i].pad_lo = total / 2;
      w[i].pad_hi = total - total / 2;
    }
    return true;
  }
  if (n->kind == TG_LIST && n->args.n > 0 && n->args.v[0]->kind == TG_LIST) {
    if (n->args.n != nsp) {
      lerr(L, n->loc, "%s: padding needs %d [lo, hi] pairs, got %d", what, nsp, n->args.n);
      return false;
    }
    for (int i = 0; i < nsp; i++) {
      int64_t v[2];
      int k;
      if (!st_ints(L, n->args.v[i], "padding", v, &k, 2)) return false;
      if (k != 2 || v[0] < 0 || v[1] < 0 || v[0] > MAX_WIN || v[1] > MAX_WIN) {
        lerr(L, n->args.v[i]->loc, "%s: each padding pair is [lo, hi] with 0 <= lo, hi <= %d", what, MAX_WIN);
        return false;
      }
      w[i].pad_lo = v[0];
      w[i].pad_hi = v[1];
    }
    return true;
  }
  int64_t p[IR_MAX_RANK];
  if (!spatial_ints(L, n, what, nsp, 0, 0, MAX_WIN, p)) return false;
  for (int i = 0; i < nsp; i++) w[i].pad_lo = w[i].pad_hi = p[i];
  return true;
}

HANDLER(h_conv) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]), k = lower_tensor(L, arg[1]);
  if (x == IR_NONE || k == IR_NONE) return tv_err();
  ir_shape sx = *lshape(L, x), sk = *lshape(L, k);
  const char *what = b->name;
  int r = sx.rank;
  if (r < 3 || (b->aux && r != b->aux + 2)) {
    lerr(L, arg[0]->loc, "%s: input must have rank %s (batch, spatial..., feature), got %s", what,
         b->aux ? "4" : ">= 3", lshape_str(L, &sx));
    return tv_err();
  }
  if (sk.rank != r) {
    lerr(L, arg[1]->loc, "%s: kernel must have rank %d like the input, got %s", what, r, lshape_str(L, &sk));
    return tv_err();
  }
  if (sx.type != sk.type) {
    lerr(L, call->loc, "%s: operand types differ (%s vs %s)", what, ir_type_name(sx.type), ir_type_name(sk.type));
    return tv_err();
  }
  if (sx.type == IR_PRED) {
    lerr(L, call->loc, "%s: not defined on pred operands", what);
    return tv_err();
  }
  char dl[3][IR_MAX_RANK + 1];
  const char *ls[3];
  default_layout(dl[0], r, false);
  default_layout(dl[1], r, true);
  ls[0] = dl[0];
  ls[1] = dl[1];
  if (arg[7] && !st_str(L, arg[7], "layout", &ls[0])) return tv_err();
  if (arg[8] && !st_str(L, arg[8], "kernel_layout", &ls[1])) return tv_err();
  ls[2] = ls[0];
  if (arg[9] && !st_str(L, arg[9], "out_layout", &ls[2])) return tv_err();
  int pin[2], pk[2], pout[2], nsp[3];
  char sp[3][IR_MAX_RANK];
  const tg_node *where[3] = {arg[7] ? arg[7] : call, arg[8] ? arg[8] : call, arg[9] ? arg[9] : call};
  if (!parse_layout(L, where[0], ls[0], r, 'N', 'C', &pin[0], &pin[1], sp[0], &nsp[0]) ||
      !parse_layout(L, where[1], ls[1], r, 'I', 'O', &pk[0], &pk[1], sp[1], &nsp[1]) ||
      !parse_layout(L, where[2], ls[2], r, 'N', 'C', &pout[0], &pout[1], sp[2], &nsp[2]))
    return tv_err();
  int n = r - 2;
  ir_conv_dims cd;
  memset(&cd, 0, sizeof cd);
  cd.nspatial = n;
  cd.in_batch = (int8_t)pin[0];
  cd.in_feature = (int8_t)pin[1];
  cd.k_in = (int8_t)pk[0];
  cd.k_out = (int8_t)pk[1];
  cd.out_batch = (int8_t)pout[0];
  cd.out_feature = (int8_t)pout[1];
  for (int i = 0; i < n; i++) {
    const char *lsp[3] = {ls[0], ls[1], ls[2]};
    int pos[3];
    for (int t = 0; t < 3; t++) {
      pos[t] = -1;
      for (int j = 0; j < r; j++)
        if (toupper((unsigned char)lsp[t][j]) == sp[0][i]) pos[t] = j;
      if (pos[t] < 0) {
        lerr(L, where[t]->loc, "%s: layout \"%s\" has no spatial dimension '%c' (input layout \"%s\")", what,
             lsp[t], sp[0][i], ls[0]);
        return tv_err();
      }
    }
    cd.in_spatial[i] = (int8_t)pos[0];
    cd.k_spatial[i] = (int8_t)pos[1];
    cd.out_spatial[i] = (int8_t)pos[2];
  }
  int64_t strides[IR_MAX_RANK], dil[IR_MAX_RANK], ldil[IR_MAX_RANK], groups = 1;
  if (!spatial_ints(L, arg[2], "strides", n, 1, 1, MAX_WIN, strides) ||
      !spatial_ints(L, arg[4], "dilation", n, 1, 1, MAX_WIN, dil) ||
      !spatial_ints(L, arg[5], "lhs_dilation", n, 1, 1, MAX_WIN, ldil))
    return tv_err();
  if (arg[6] && (!st_int(L, arg[6], "groups", &groups))) return tv_err();
  int64_t cin = sx.dims[cd.in_feature], kin = sk.dims[cd.k_in], kout = sk.dims[cd.k_out];
  if (groups < 1 || groups > cin || cin % groups != 0) {
    lerr(L, arg[6] ? arg[6]->loc : call->loc, "%s: groups (%lld) must divide the %lld input features", what,
         (long long)groups, (long long)cin);
    return tv_err();
  }
  if (kin * groups != cin) {
    lerr(L, call->loc, "%s: the input has %lld features but the kernel expects %lld (I=%lld x groups=%lld)", what,
         (long long)cin, (long long)(kin * groups), (long long)kin, (long long)groups);
    lnote_origin(L, arg[0]);
    lnote_origin(L, arg[1]);
    return tv_err();
  }
  if (kout % groups != 0) {
    lerr(L, call->loc, "%s: kernel output features (%lld) must be a multiple of groups (%lld)", what,
         (long long)kout, (long long)groups);
    return tv_err();
  }
  ir_attrs a = attrs0();
  ir_window win_a;
  memset(&win_a, 0, sizeof win_a);
  a.window = &win_a;
  win_a.rank = n;
  int64_t in[IR_MAX_RANK];
  for (int i = 0; i < n; i++) {
    ir_window_dim *w = &win_a.dims[i];
    w->size = sk.dims[cd.k_spatial[i]];
    w->stride = strides[i];
    w->lhs_dilate = ldil[i];
    w->rhs_dilate = dil[i];
    in[i] = sx.dims[cd.in_spatial[i]];
    if (w->size > MAX_WIN || in[i] > MAX_WIN * 64) {
      lerr(L, call->loc, "%s: window or input too large", what);
      return tv_err();
    }
  }
  if (!window_padding(L, arg[3], what, n, in, win_a.dims)) return tv_err();
  a.conv = cd;
  a.feature_group_count = groups;
  a.batch_group_count = 1;
  if (!preferred_arg(L, arg[10], &a.preferred_type)) return tv_err();
  ir_id ops[2] = {x, k};
  return tv_tensor(lemit(L, IR_OP_CONVOLUTION, ops, 2, &a, NULL, 0, NULL, call->loc, what));
}

HANDLER(h_pool) {
  (void)rest;
  const char *what = b->name;
  ir_id x = lower_tensor(L, arg[0]);
  if (x == IR_NONE) return tv_err();
  ir_shape s = *lshape(L, x);
  int r = s.rank;
  if (r < 3) {
    lerr(L, arg[0]->loc, "%s: input must have rank >= 3 (batch, spatial..., feature), got %s", what,
         lshape_str(L, &s));
    return tv_err();
  }
  char dl[IR_MAX_RANK + 1];
  const char *layout = dl;
  default_layout(dl, r, false);
  if (arg[4] && !st_str(L, arg[4], "layout", &layout)) return tv_err();
  int pn, pc, nsp;
  char sp[IR_MAX_RANK];
  if (!parse_layout(L, arg[4] ? arg[4] : call, layout, r, 'N', 'C', &pn, &pc, sp, &nsp)) return tv_err();
  int n = r - 2, spos[IR_MAX_RANK];
  for (int i = 0, k = 0; i < r; i++)
    if (i != pn && i != pc) spos[k++] = i;
  int64_t win[IR_MAX_RANK], str[IR_MAX_RANK], in[IR_MAX_RANK];
  if (!spatial_ints(L, arg[1], "window", n, 1, 1, MAX_WIN, win)) return tv_err();
  if (!spatial_ints(L, arg[2] ? arg[2] : arg[1], "strides", n, 1, 1, MAX_WIN, str)) return tv_err();
  ir_window_dim wd[IR_MAX_RANK];
  memset(wd, 0, sizeof wd);
  for (int i = 0; i < n; i++) {
    wd[i].size = win[i];
    wd[i].stride = str[i];
    wd[i].lhs_dilate = wd[i].rhs_dilate = 1;
    in[i] = s.dims[spos[i]];
  }
  if (!window_padding(L, arg[3], what, n, in, wd)) return tv_err();
  ir_attrs a = attrs0();
  ir_window win_a;
  memset(&win_a, 0, sizeof win_a);
  a.window = &win_a;
  win_a.rank = r;
  for (int i = 0; i < r; i++) {
    win_a.dims[i] = (ir_window_dim){1, 1, 0, 0, 1, 1, false};
  }
  bool padded = false;
  for (int i = 0; i < n; i++) {
    win_a.dims[spos[i]] = wd[i];
    if (wd[i].pad_lo || wd[i].pad_hi) padded = true;
  }
  int kind = b->aux < 0 ? R_SUM : b->aux;
  if (b->aux < 0 && !ir_type_is_float(s.type)) {
    lerr(L, call->loc, "%s: needs a floating-point operand, got %s", what, ir_type_name(s.type));
    return tv_err();
  }
  if (s.type == IR_PRED) {
    lerr(L, call->loc, "%s: not defined on pred operands", what);
    return tv_err();
  }
  ir_comp_id c = lreducer(L, kind, s.type, call->loc);
  ir_id ops[2] = {x, lscalar(L, s.type, lreduce_init(kind, s.type), call->loc)};
  ir_id r0 = lemit(L, IR_OP_REDUCE_WINDOW, ops, 2, &a, &c, 1, NULL, call->loc, what);
  if (b->aux >= 0 || r0 == IR_NONE) return tv_tensor(r0);
  if (!padded) {
    double cnt = 1;
    for (int i = 0; i < n; i++) cnt *= (double)win[i];
    return tv_tensor(lbinc(L, IR_OP_DIVIDE, r0, cnt, call->loc));
  }
  /* padding does not count: divide by the number of real elements */
  ir_id ones = lfill(L, s.type, 1, s.rank, s.dims, call->loc);
  ir_id ops2[2] = {ones, lscalar(L, s.type, 0, call->loc)};
  ir_id cnt = lemit(L, IR_OP_REDUCE_WINDOW, ops2, 2, &a, &c, 1, NULL, call->loc, what);
  return tv_tensor(lbin(L, IR_OP_DIVIDE, r0, cnt, call->loc));
}
