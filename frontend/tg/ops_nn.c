/* ops_nn.c: composite builtins, expanded into core IR ops.
 *
 * Precision: composites that need exp/log/rsqrt (erf, gelu, softmax,
 * log_softmax, layer_norm, rms_norm, cross_entropy, attention's softmax)
 * compute in f32 when the input is bf16 or f16 and convert the result back
 * (as mixed-precision frameworks do); f32 inputs stay f32.
 *
 * erf has no IR op: it expands to Abramowitz & Stegun formula 7.1.26,
 *   erf(|x|) = 1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) exp(-x^2),
 *   t = 1 / (1 + p |x|),  erf(x) = sign(x) erf(|x|),
 * whose absolute error is below 1.5e-7 (plus f32 rounding: ~3e-7 in all). */
#include "frontend/tg/lower.h"

#include <math.h>
#include <strings.h>

#define HANDLER(fn)                                                            \
  tv fn(lctx *L, const tg_node *call, tg_node **arg, const tg_nodes *rest,     \
        const tg_builtin *b)

/* A float tensor operand of a composite; reports otherwise. */
static ir_id float_arg(lctx *L, const tg_node *n, const char *what) {
  ir_id x = lower_tensor(L, n);
  if (x == IR_NONE) return IR_NONE;
  if (!ir_type_is_float(lshape(L, x)->type)) {
    lerr(L, n->loc, "%s: needs a floating-point tensor, got %s", what, lshape_str(L, lshape(L, x)));
    lnote_origin(L, n);
    return IR_NONE;
  }
  return x;
}

static ir_id widen(lctx *L, ir_id x, src_loc loc) {
  if (x == IR_NONE) return x;
  ir_type t = lshape(L, x)->type;
  return t == IR_BF16 || t == IR_F16 ? lconvert(L, x, IR_F32, loc) : x;
}

HANDLER(h_relu) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  if (x == IR_NONE) return tv_err();
  if (lshape(L, x)->type == IR_PRED) {
    lerr(L, call->loc, "%s: not defined on pred operands", b->name);
    return tv_err();
  }
  return tv_tensor(lbinc(L, IR_OP_MAXIMUM, x, 0, call->loc));
}

HANDLER(h_leaky_relu) {
  (void)rest;
  double alpha = 0.01;
  ir_id x = float_arg(L, arg[0], b->name);
  if (x == IR_NONE || (arg[1] && !st_float(L, arg[1], "alpha", &alpha))) return tv_err();
  src_loc l = call->loc;
  ir_id zero = lscalar(L, lshape(L, x)->type, 0, l);
  ir_id pos = lcmp(L, IR_CMP_GT, x, lbroadcast_to(L, zero, lshape(L, x)->rank, lshape(L, x)->dims, l), l);
  ir_id ops[3] = {pos, x, lbinc(L, IR_OP_MULTIPLY, x, alpha, l)};
  return tv_tensor(lemit(L, IR_OP_SELECT, ops, 3, NULL, NULL, 0, NULL, l, b->name));
}

HANDLER(h_silu) {
  (void)rest;
  ir_id x = float_arg(L, arg[0], b->name);
  return tv_tensor(lbin(L, IR_OP_MULTIPLY, x, lunary(L, IR_OP_LOGISTIC, x, call->loc), call->loc));
}

/* erf in f32 (see the file comment). */
static ir_id erf_f32(lctx *L, ir_id x, src_loc l) {
  static const double p = 0.3275911, a[5] = {0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429};
  ir_id ax = lunary(L, IR_OP_ABS, x, l);
  ir_id t = lbin(L, IR_OP_DIVIDE, lscalar(L, IR_F32, 1, l),
                 lbinc(L, IR_OP_ADD, lbinc(L, IR_OP_MULTIPLY, ax, p, l), 1, l), l);
  /* Horner: t*(a1 + t*(a2 + t*(a3 + t*(a4 + t*a5)))) */
  ir_id h = lbinc(L, IR_OP_MULTIPLY, t, a[4], l);
  for (int i = 3; i >= 0; i--) h = lbin(L, IR_OP_MULTIPLY, lbinc(L, IR_OP_ADD, h, a[i], l), t, l);
  ir_id e = lunary(L, IR_OP_EXP, lunary(L, IR_OP_NEGATE, lbin(L, IR_OP_MULTIPLY, x, x, l), l), l);
  ir_id y = lbin(L, IR_OP_SUBTRACT, lscalar(L, IR_F32, 1, l), lbin(L, IR_OP_MULTIPLY, h, e, l), l);
  return lbin(L, IR_OP_MULTIPLY, lunary(L, IR_OP_SIGN, x, l), y, l);
}

HANDLER(h_erf) {
  (void)rest;
  (void)b;
  ir_id x = float_arg(L, arg[0], "erf");
  if (x == IR_NONE) return tv_err();
  ir_type t = lshape(L, x)->type;
  return tv_tensor(lconvert(L, erf_f32(L, widen(L, x, call->loc), call->loc), t, call->loc));
}

HANDLER(h_gelu) {
  (void)rest;
  ir_id x0 = float_arg(L, arg[0], b->name);
  if (x0 == IR_NONE) return tv_err();
  bool approx = false;
  if (arg[1]) {
    if (arg[1]->kind == TG_STR) {
      if (strcasecmp(arg[1]->name, "tanh") == 0) approx = true;
      else if (strcasecmp(arg[1]->name, "none") != 0 && strcasecmp(arg[1]->name, "erf") != 0) {
        lerr(L, arg[1]->loc, "gelu: approximate must be true, false, \"tanh\", \"erf\" or \"none\"");
        return tv_err();
      }
    } else if (!st_bool(L, arg[1], "gelu approximate", &approx)) {
      return tv_err();
    }
  }
  src_loc l = call->loc;
  ir_type t = lshape(L, x0)->type;
  ir_id x = widen(L, x0, l), inner;
  if (approx) {
    /* tanh(sqrt(2/pi) * (x + 0.044715 x^3)) */
    ir_id x3 = lbin(L, IR_OP_MULTIPLY, lbin(L, IR_OP_MULTIPLY, x, x, l), x, l);
    ir_id u = lbin(L, IR_OP_ADD, x, lbinc(L, IR_OP_MULTIPLY, x3, 0.044715, l), l);
    inner = lunary(L, IR_OP_TANH, lbinc(L, IR_OP_MULTIPLY, u, sqrt(2.0 / M_PI), l), l);
  } else {
    inner = erf_f32(L, lbinc(L, IR_OP_MULTIPLY, x, M_SQRT1_2, l), l);
  }
  ir_id y = lbin(L, IR_OP_MULTIPLY, lbinc(L, IR_OP_MULTIPLY, x, 0.5, l), lbinc(L, IR_OP_ADD, inner, 1, l), l);
  return tv_tensor(lconvert(L, y, t, l));
}

/* softmax (log = false) or log_softmax over one axis, stable: x - max(x). */
static ir_id softmax_axis(lctx *L, ir_id x, int64_t ax, bool log_form, src_loc l) {
  if (x == IR_NONE) return IR_NONE;
  ir_type t = lshape(L, x)->type;
  x = widen(L, x, l);
  ir_id m = lreduce(L, x, R_MAX, &ax, 1, true, l, L->cur_op);
  ir_id s = lbin(L, IR_OP_SUBTRACT, x, m, l);
  ir_id e = lunary(L, IR_OP_EXP, s, l);
  ir_id z = lreduce(L, e, R_SUM, &ax, 1, true, l, L->cur_op);
  ir_id r = log_form ? lbin(L, IR_OP_SUBTRACT, s, lunary(L, IR_OP_LOG, z, l), l) : lbin(L, IR_OP_DIVIDE, e, z, l);
  return lconvert(L, r, t, l);
}

/* The axis argument n (default -1); errors point at n or at the call. */
static bool one_axis(lctx *L, const tg_node *n, const tg_node *call, const char *what, int rank, int64_t *ax) {
  int64_t v = -1;
  if (n && !st_int(L, n, what, &v)) return false;
  return st_axis(L, n ? n : call, what, v, rank, ax);
}

HANDLER(h_softmax) {
  (void)rest;
  ir_id x = float_arg(L, arg[0], b->name);
  int64_t ax;
  if (x == IR_NONE) return tv_err();
  if (!one_axis(L, arg[1], call, b->name, lshape(L, x)->rank, &ax)) return tv_err();
  return tv_tensor(softmax_axis(L, x, ax, b->aux == 1, call->loc));
}

HANDLER(h_norm) {
  (void)rest;
  bool rms = b->aux == 1;
  const tg_node *gamma = arg[1], *beta = rms ? NULL : arg[2];
  const tg_node *axn = rms ? arg[2] : arg[3], *epsn = rms ? arg[3] : arg[4];
  ir_id x0 = float_arg(L, arg[0], b->name);
  if (x0 == IR_NONE) return tv_err();
  const ir_shape s = *lshape(L, x0);
  double eps = rms ? 1e-6 : 1e-5;
  int64_t axes[IR_MAX_RANK];
  int n = 1;
  if (axn) {
    if (!st_axes(L, axn, b->name, s.rank, axes, &n)) return tv_err();
  } else if (!st_axis(L, call, b->name, -1, s.rank, &axes[0])) {
    return tv_err();
  }
  if (epsn && !st_float(L, epsn, "eps", &eps)) return tv_err();
  src_loc l = call->loc;
  double count = 1;
  for (int i = 0; i < n; i++) count *= (double)s.dims[axes[i]];
  ir_id x = widen(L, x0, l), y;
  if (rms) {
    ir_id ms = lbinc(L, IR_OP_DIVIDE, lreduce(L, lbin(L, IR_OP_MULTIPLY, x, x, l), R_SUM, axes, n, true, l, b->name),
                     count, l);
    y = lbin(L, IR_OP_MULTIPLY, x, lunary(L, IR_OP_RSQRT, lbinc(L, IR_OP_ADD, ms, eps, l), l), l);
  } else {
    ir_id mean = lbinc(L, IR_OP_DIVIDE, lreduce(L, x, R_SUM, axes, n, true, l, b->name), count, l);
    ir_id d = lbin(L, IR_OP_SUBTRACT, x, mean, l);
    ir_id var = lbinc(L, IR_OP_DIVIDE, lreduce(L, lbin(L, IR_OP_MULTIPLY, d, d, l), R_SUM, axes, n, true, l, b->name),
                      count, l);
    y = lbin(L, IR_OP_MULTIPLY, d, lunary(L, IR_OP_RSQRT, lbinc(L, IR_OP_ADD, var, eps, l), l), l);
  }
  y = lconvert(L, y, s.type, l);
  if (y == IR_NONE) return tv_err();
  tv r = tv_tensor(y);
  if (gamma) r = lbinary(L, IR_OP_MULTIPLY, IR_CMP_EQ, r, lower_expr(L, gamma), l, b->name, arg[0], gamma);
  if (beta) r = lbinary(L, IR_OP_ADD, IR_CMP_EQ, r, lower_expr(L, beta), l, b->name, arg[0], beta);
  if (r.k == TV_TENSOR && !ir_shape_equal(lshape(L, r.id), &s)) {
    lerr(L, l, "%s: gamma and beta must broadcast to the input shape %s, got %s", b->name, lshape_str(L, &s),
         lshape_str(L, lshape(L, r.id)));
    return tv_err();
  }
  return r;
}

/* pred[..., depth]: iota(last axis) == labels[..., None]. */
static ir_id one_hot_mask(lctx *L, ir_id labels, int64_t depth, src_loc l) {
  const ir_shape s = *lshape(L, labels);
  int64_t dims[IR_MAX_RANK];
  if (s.rank + 1 > IR_MAX_RANK) {
    lerr(L, l, "%s: labels have too many dimensions", L->cur_op);
    return IR_NONE;
  }
  memcpy(dims, s.dims, sizeof(int64_t) * (size_t)s.rank);
  dims[s.rank] = depth;
  ir_shape is = ir_shape_array(IR_S32, s.rank + 1, dims);
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.index = s.rank;
  ir_id iota = lemit(L, IR_OP_IOTA, NULL, 0, &a, NULL, 0, &is, l, L->cur_op);
  ir_id lab = lconvert(L, labels, IR_S32, l);
  dims[s.rank] = 1;
  lab = lreshape(L, lab, s.rank + 1, dims, l);
  return lcmp(L, IR_CMP_EQ, iota, lab, l);
}

static ir_id int_labels(lctx *L, const tg_node *n, const char *what) {
  ir_id x = lower_tensor(L, n);
  if (x == IR_NONE) return x;
  if (!ir_type_is_int(lshape(L, x)->type)) {
    lerr(L, n->loc, "%s: labels must be an integer tensor (s8 or s32), got %s", what, lshape_str(L, lshape(L, x)));
    lnote_origin(L, n);
    return IR_NONE;
  }
  return x;
}

HANDLER(h_one_hot) {
  (void)rest;
  ir_id lab = int_labels(L, arg[0], b->name);
  int64_t depth;
  ir_type t = IR_F32;
  if (lab == IR_NONE || !st_int(L, arg[1], "one_hot depth", &depth)) return tv_err();
  if (depth < 1 || depth > (1 << 24)) {
    lerr(L, arg[1]->loc, "one_hot: depth must be in [1, %d]", 1 << 24);
    return tv_err();
  }
  if (arg[2] && !st_type(L, arg[2], b->name, &t)) return tv_err();
  ir_id m = one_hot_mask(L, lab, depth, call->loc);
  return tv_tensor(t == IR_PRED ? m : lconvert(L, m, t, call->loc));
}

HANDLER(h_cross_entropy) {
  (void)rest;
  ir_id logits = float_arg(L, arg[0], b->name);
  ir_id lab = int_labels(L, arg[1], b->name);
  if (logits == IR_NONE || lab == IR_NONE) return tv_err();
  const char *red = "mean";
  if (arg[2] && !st_str(L, arg[2], "reduction", &red)) return tv_err();
  if (strcmp(red, "mean") != 0 && strcmp(red, "sum") != 0 && strcmp(red, "none") != 0) {
    lerr(L, arg[2]->loc, "cross_entropy: reduction must be \"mean\", \"sum\" or \"none\"");
    return tv_err();
  }
  const ir_shape sl = *lshape(L, logits), sb = *lshape(L, lab);
  bool ok = sl.rank >= 1 && sb.rank == sl.rank - 1;
  for (int i = 0; ok && i < sb.rank; i++) ok = sb.dims[i] == sl.dims[i];
  if (!ok) {
    lerr(L, call->loc, "cross_entropy: labels %s must have the shape of logits %s without its last (class) dimension",
         lshape_str(L, &sb), lshape_str(L, &sl));
    lnote_origin(L, arg[0]);
    lnote_origin(L, arg[1]);
    return tv_err();
  }
  src_loc l = call->loc;
  int64_t last = sl.rank - 1;
  ir_id lsm = softmax_axis(L, widen(L, logits, l), last, true, l);
  ir_id mask = one_hot_mask(L, lab, sl.dims[last], l);
  ir_id zero = lfill(L, IR_F32, 0, sl.rank, sl.dims, l);
  ir_id ops[3] = {mask, lsm, zero};
  ir_id picked = lemit(L, IR_OP_SELECT, ops, 3, NULL, NULL, 0, NULL, l, b->name);
  ir_id loss = lunary(L, IR_OP_NEGATE, lreduce(L, picked, R_SUM, &last, 1, false, l, b->name), l);
  if (strcmp(red, "none") != 0) {
    int64_t axes[IR_MAX_RANK];
    for (int i = 0; i < sb.rank; i++) axes[i] = i;
    loss = lreduce(L, loss, R_SUM, axes, sb.rank, false, l, b->name);
    if (strcmp(red, "mean") == 0) loss = lbinc(L, IR_OP_DIVIDE, loss, (double)(sb.rank ? ir_shape_count(&sb) : 1), l);
  }
  return tv_tensor(lconvert(L, loss, sl.type, l));
}

HANDLER(h_linear) {
  (void)rest;
  (void)b;
  tv x = lower_expr(L, arg[0]), w = lower_expr(L, arg[1]);
  tv y = fe_tg_matmul(L, call, x, w, arg[0], arg[1], IR_TYPE_INVALID);
  if (!arg[2] || y.k == TV_ERR) return y;
  tv r = lbinary(L, IR_OP_ADD, IR_CMP_EQ, y, lower_expr(L, arg[2]), call->loc, "linear bias", NULL, arg[2]);
  if (r.k == TV_TENSOR && !ir_shape_equal(lshape(L, r.id), lshape(L, y.id))) {
    lerr(L, arg[2]->loc, "linear: bias %s does not broadcast to the output %s", lshape_str(L, lshape(L, r.id)),
         lshape_str(L, lshape(L, y.id)));
    return tv_err();
  }
  return r;
}

HANDLER(h_attention) {
  (void)rest;
  const char *what = b->name;
  ir_id q = float_arg(L, arg[0], what), k = float_arg(L, arg[1], what), v = float_arg(L, arg[2], what);
  if (q == IR_NONE || k == IR_NONE || v == IR_NONE) return tv_err();
  const ir_shape sq = *lshape(L, q), sk = *lshape(L, k), sv = *lshape(L, v);
  int r = sq.rank, nb = r - 2;
  bool ok = r >= 2 && sk.rank == r && sv.rank == r && sq.type == sk.type && sq.type == sv.type;
  for (int i = 0; ok && i < nb; i++) ok = sq.dims[i] == sk.dims[i] && sq.dims[i] == sv.dims[i];
  ok = ok && sq.dims[r - 1] == sk.dims[r - 1] && sk.dims[r - 2] == sv.dims[r - 2];
  if (!ok) {
    lerr(L, call->loc, "%s: expects q [..., Lq, D], k [..., Lk, D], v [..., Lk, Dv] of one type, got %s, %s, %s",
         what, lshape_str(L, &sq), lshape_str(L, &sk), lshape_str(L, &sv));
    return tv_err();
  }
  bool causal = false;
  double scale = 1.0 / sqrt((double)sq.dims[r - 1]);
  if (arg[3] && !st_bool(L, arg[3], "causal", &causal)) return tv_err();
  if (arg[4] && !st_float(L, arg[4], "scale", &scale)) return tv_err();
  src_loc l = call->loc;
  ir_id s = ldot(L, q, k, nb, r - 1, r - 1, IR_TYPE_INVALID, l); /* [..., Lq, Lk] */
  if (s == IR_NONE) return tv_err();
  s = lbinc(L, IR_OP_MULTIPLY, s, scale, l);
  const ir_shape ss = *lshape(L, s);
  ir_id neg = lfill(L, ss.type, -INFINITY, ss.rank, ss.dims, l);
  if (arg[5]) {
    ir_id m = lower_tensor(L, arg[5]);
    if (m == IR_NONE) return tv_err();
    int rank;
    int64_t dims[IR_MAX_RANK];
    if (lshape(L, m)->type != IR_PRED) {
      lerr(L, arg[5]->loc, "%s: mask must be pred, got %s", what, lshape_str(L, lshape(L, m)));
      return tv_err();
    }
    if (!lbroadcast_shape(L, lshape(L, m), &ss, &rank, dims, arg[5]->loc, what)) return tv_err();
    if (rank != ss.rank || memcmp(dims, ss.dims, sizeof(int64_t) * (size_t)rank) != 0) {
      lerr(L, arg[5]->loc, "%s: mask %s does not broadcast to the scores %s", what,
           lshape_str(L, lshape(L, m)), lshape_str(L, &ss));
      return tv_err();
    }
    ir_id ops[3] = {lbroadcast_to(L, m, ss.rank, ss.dims, l), s, neg};
    s = lemit(L, IR_OP_SELECT, ops, 3, NULL, NULL, 0, NULL, l, what);
  }
  if (causal) {
    int64_t d2[2] = {ss.dims[r - 2], ss.dims[r - 1]};
    ir_shape is = ir_shape_array(IR_S32, 2, d2);
    ir_attrs a;
    memset(&a, 0, sizeof a);
    a.preferred_type = IR_TYPE_INVALID;
    a.index = 0;
    ir_id row = lemit(L, IR_OP_IOTA, NULL, 0, &a, NULL, 0, &is, l, what);
    a.index = 1;
    ir_id col = lemit(L, IR_OP_IOTA, NULL, 0, &a, NULL, 0, &is, l, what);
    ir_id keep = lbroadcast_to(L, lcmp(L, IR_CMP_GE, row, col, l), ss.rank, ss.dims, l);
    ir_id ops[3] = {keep, s, neg};
    s = lemit(L, IR_OP_SELECT, ops, 3, NULL, NULL, 0, NULL, l, what);
  }
  ir_id p = softmax_axis(L, s, r - 1, false, l);
  return tv_tensor(ldot(L, p, v, nb, r - 1, r - 2, IR_TYPE_INVALID, l));
}

/* argmax/argmin: the first index of the extreme along one axis, as s32:
 *   m = reduce(x, axis, keepdims); hit = x == m (or both NaN: NaN wins, as
 *   in numpy); reduce_min(select(hit, iota(axis), n), axis). */
HANDLER(h_argmax) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  if (x == IR_NONE) return tv_err();
  const ir_shape s = *lshape(L, x);
  int64_t ax;
  bool keep = false;
  if (s.type == IR_PRED) {
    lerr(L, call->loc, "%s: not defined on pred operands", b->name);
    return tv_err();
  }
  if (!one_axis(L, arg[1], call, b->name, s.rank, &ax)) return tv_err();
  if (arg[2] && !st_bool(L, arg[2], "keepdims", &keep)) return tv_err();
  if (s.dims[ax] > INT32_MAX) {
    lerr(L, call->loc, "%s: axis %lld is too long for s32 indices", b->name, (long long)ax);
    return tv_err();
  }
  src_loc l = call->loc;
  ir_id m = lreduce(L, x, b->aux, &ax, 1, true, l, b->name);
  ir_id hit = lcmp(L, IR_CMP_EQ, x, m, l);
  if (ir_type_is_float(s.type)) {
    ir_id nan_x = lcmp(L, IR_CMP_NE, x, x, l), nan_m = lcmp(L, IR_CMP_NE, m, m, l);
    hit = lbin(L, IR_OP_OR, hit, lbin(L, IR_OP_AND, nan_x, nan_m, l), l);
  }
  ir_shape is = ir_shape_array(IR_S32, s.rank, s.dims);
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.index = ax;
  ir_id iota = lemit(L, IR_OP_IOTA, NULL, 0, &a, NULL, 0, &is, l, b->name);
  ir_id ops[3] = {hit, iota, lfill(L, IR_S32, (double)s.dims[ax], s.rank, s.dims, l)};
  ir_id sel = lemit(L, IR_OP_SELECT, ops, 3, NULL, NULL, 0, NULL, l, b->name);
  return tv_tensor(lreduce(L, sel, R_MIN, &ax, 1, keep, l, b->name));
}
