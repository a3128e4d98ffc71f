/* eval_conv.c: N-d convolution with dim_labels, window strides, padding,
 * lhs (base) and rhs (window) dilation, window reversal, feature groups
 * and batch groups.
 *
 * Semantics follow XLA's HloEvaluator. For output element (b, f, o[]):
 *   for each kernel window position k[] (row-major over the spatial dims in
 *   dim_labels order), for each spatial dim i:
 *     u = o[i] * stride - pad_lo + k[i] * rhs_dilation
 *     skip the position if u % lhs_dilation != 0 (a hole of the dilated
 *     input) or u / lhs_dilation is outside the input;
 *     the kernel index is k[i], or size - 1 - k[i] under window reversal;
 *   then for each input feature z of the group (ascending):
 *     acc += lhs[batch, g_f * Cg + z, in[]] * rhs[z, f, k[]]
 *   where Cg = kernel input features, g_f = f / (out_features /
 *   feature_group_count) and batch = g_b * (in_batch / batch_group_count) + b
 *   with g_b = f / (out_features / batch_group_count).
 * That batch-group rule is StableHLO's (split the lhs batch and the output
 * features into batch_group_count contiguous groups); XLA's evaluator agrees
 * whenever in_batch == batch_group_count, the form it supports.
 *
 * Numerics as dot (eval_dot.c): operands converted to the result type first,
 * f32 accumulation from +0 in the order above for float results, int64
 * wraparound for integer results, one final rounding. */
#include "ir/eval_internal.h"

/* Checks that a, b and sp[0..n) are a permutation of 0..n+1. */
static bool is_perm(int a, int b, const int8_t *sp, int n) {
  bool used[IR_MAX_RANK] = {false};
  int all[IR_MAX_RANK];
  all[0] = a;
  all[1] = b;
  for (int i = 0; i < n; i++)
    all[2 + i] = sp[i];
  for (int i = 0; i < n + 2; i++) {
    if (all[i] < 0 || all[i] >= n + 2 || used[all[i]]) return false;
    used[all[i]] = true;
  }
  return true;
}

/* A float convolution under TPU numerics (eval_tpu.c), as backend/tpu
 * lowers it: im2col over the zero-padded, zero-dilated input; per output,
 * from +0, the passes in order, each over window positions (row-major, all
 * of them: padding and holes read +0) then input features ascending, one
 * fused multiply-add per product. Operands are validated by the caller. */
/* The window positions of output spatial position o, in row-major order,
 * as offsets in the lhs (lsp) and the kernel (rsp). Positions on a hole of
 * the lhs dilation or in the padding are dropped, or with keep_pad kept
 * with lsp -1. Returns how many are listed. */
static int64_t window_positions(const ir_inst *in, const ir_literal *lhs, const ir_window_dim *win,
                                const int64_t *ksz, int64_t nwin, const int64_t *o, const int64_t *ls,
                                const int64_t *rs, bool keep_pad, int64_t *lsp, int64_t *rsp) {
  const ir_conv_dims *cd = &in->a->conv;
  int ns = cd->nspatial;
  int64_t nv = 0, k[IR_MAX_RANK] = {0};
  for (int64_t wi = 0; wi < nwin; wi++, ev_next_index(ns, ksz, k)) {
    int64_t loff = 0, roff = 0;
    bool pad = false;
    for (int i = 0; i < ns; i++) {
      const ir_window_dim *w = &win[i];
      int64_t u = o[i] * w->stride - w->pad_lo + k[i] * w->rhs_dilate;
      int64_t x = u / w->lhs_dilate;
      if (u % w->lhs_dilate != 0 || x < 0 || x >= lhs->shape.dims[cd->in_spatial[i]]) {
        pad = true; /* a hole of the lhs dilation, or padding */
        if (!keep_pad) break;
      }
      loff += x * ls[cd->in_spatial[i]];
      roff += (w->reversal ? ksz[i] - 1 - k[i] : k[i]) * rs[cd->k_spatial[i]];
    }
    if (pad && !keep_pad) continue;
    lsp[nv] = pad ? -1 : loff;
    rsp[nv++] = roff;
  }
  return nv;
}

static base_status conv_tpu(ev_ctx *cx, const ir_inst *in, const ir_literal *lhs,
                            const ir_literal *rhs, const ir_window_dim *win, const int64_t *ksz,
                            ir_literal **out) {
  const ir_conv_dims *cd = &in->a->conv;
  ir_type rt = in->shape->type;
  int ns = cd->nspatial;
  int64_t fgc = in->a->feature_group_count > 0 ? in->a->feature_group_count : 1;
  int64_t bgc = in->a->batch_group_count > 0 ? in->a->batch_group_count : 1;
  int64_t in_b = lhs->shape.dims[cd->in_batch];
  int64_t k_i = rhs->shape.dims[cd->k_in], k_o = rhs->shape.dims[cd->k_out];
  int P = ev_tpu_passes(in, lhs->shape.type, rhs->shape.type), np = P == 6 ? 3 : P == 3 ? 2 : 1;
  ir_literal *lp[3], *rp[3], *r;
  base_status st = ev_new_array(cx, in, in->shape, &r);
  if (st != ST_OK) return st;
  int64_t nout = ir_shape_count(in->shape), nwin = 1, nsp = 1;
  int64_t ls[IR_MAX_RANK], rs[IR_MAX_RANK], os[IR_MAX_RANK], osd[IR_MAX_RANK];
  for (int i = 0; i < ns; i++) {
    nwin *= ksz[i];
    osd[i] = in->shape->dims[cd->out_spatial[i]];
    nsp *= osd[i];
  }
  *out = r;
  if (nout == 0 || k_i == 0 || nwin == 0) return ST_OK; /* empty sums: +0 */
  if ((st = ev_work(cx, in, (double)nout * (double)k_i * (double)nwin * P)) != ST_OK) return st;
  if ((st = ev_tpu_parts(cx, in, lhs, np, lp)) != ST_OK) return st;
  if ((st = ev_tpu_parts(cx, in, rhs, np, rp)) != ST_OK) return st;
  ev_strides(&lhs->shape, ls);
  ev_strides(&rhs->shape, rs);
  ev_strides(in->shape, os);
  int64_t *lsp, *rsp;
  if ((st = ev_alloc_array(cx, in, nwin, 8, (void **)&lsp)) != ST_OK) return st;
  if ((st = ev_alloc_array(cx, in, nwin, 8, (void **)&rsp)) != ST_OK) return st;
  int64_t out_fg = k_o / fgc, out_bg = k_o / bgc, nb = in_b / bgc;
  int64_t lz = ls[cd->in_feature], rz = rs[cd->k_in], rf = rs[cd->k_out];
  int64_t o[IR_MAX_RANK] = {0};
  size_t es = (size_t)ir_type_size(rt);
  for (int64_t sp = 0; sp < nsp; sp++, ev_next_index(ns, osd, o)) {
    int64_t obase = 0;
    for (int i = 0; i < ns; i++) obase += o[i] * os[cd->out_spatial[i]];
    window_positions(in, lhs, win, ksz, nwin, o, ls, rs, true, lsp, rsp);
    for (int64_t b = 0; b < nb; b++)
      for (int64_t f = 0; f < k_o; f++) {
        int64_t gf = f / out_fg, gb = f / out_bg;
        int64_t lbase = (gb * nb + b) * ls[cd->in_batch] + gf * k_i * lz, rbase = f * rf;
        float acc = 0.0f;
        for (int p = 0; p < P; p++) {
          const float *L = lp[ev_tpu_pair_a[p]]->data, *R = rp[ev_tpu_pair_b[p]]->data;
          for (int64_t wi = 0; wi < nwin; wi++)
            for (int64_t z = 0; z < k_i; z++) {
              float xv = lsp[wi] < 0 ? 0.0f : L[lbase + lsp[wi] + z * lz];
              acc = ev_tpu_mac(acc, xv, R[rbase + rsp[wi] + z * rz]);
            }
        }
        ev_tpu_store(rt, (uint8_t *)r->data +
                             (size_t)(obase + b * os[cd->out_batch] + f * os[cd->out_feature]) * es,
                     acc);
      }
  }
  return ST_OK;
}

/* Checks the operands, dim_labels, groups and window of convolution in
 * against its result shape; fills win (defaulted to the kernel's size when
 * absent) and ksz, the kernel's spatial sizes. */
static base_status conv_check(ev_ctx *cx, const ir_inst *in, const ir_literal *lhs, const ir_literal *rhs,
                              ir_window_dim *win, int64_t *ksz) {
  const ir_conv_dims *cd = &in->a->conv;
  int ns = cd->nspatial;
  if (ns < 0 || ns > IR_MAX_RANK - 2 || lhs->shape.rank != ns + 2 || rhs->shape.rank != ns + 2 ||
      in->shape->rank != ns + 2)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "operand and result ranks must be %d", ns + 2);
  if (!is_perm(cd->in_batch, cd->in_feature, cd->in_spatial, ns) ||
      !is_perm(cd->k_in, cd->k_out, cd->k_spatial, ns) ||
      !is_perm(cd->out_batch, cd->out_feature, cd->out_spatial, ns))
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "dim_labels are not permutations");
  if ((in->a->window != NULL) && ir_window_of(in->a)->rank != ns)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "window has %d dimensions, expected %d",
                   (int) ir_window_of(in->a)->rank, ns);
  int64_t fgc = in->a->feature_group_count > 0 ? in->a->feature_group_count : 1;
  int64_t bgc = in->a->batch_group_count > 0 ? in->a->batch_group_count : 1;
  int64_t in_b = lhs->shape.dims[cd->in_batch], in_f = lhs->shape.dims[cd->in_feature];
  int64_t k_i = rhs->shape.dims[cd->k_in], k_o = rhs->shape.dims[cd->k_out];
  if (in_f % fgc != 0 || k_i != in_f / fgc || k_o % fgc != 0 || k_o % bgc != 0 || in_b % bgc != 0)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT,
                   "groups do not divide the features: input features %lld, kernel %lld in / %lld "
                   "out, feature_group_count %lld, batch_group_count %lld, batch %lld",
                   (long long)in_f, (long long)k_i, (long long)k_o, (long long)fgc, (long long)bgc,
                   (long long)in_b);

  int64_t want[IR_MAX_RANK];
  want[cd->out_batch] = in_b / bgc;
  want[cd->out_feature] = k_o;
  for (int i = 0; i < ns; i++) {
    ksz[i] = rhs->shape.dims[cd->k_spatial[i]];
    ir_window_dim w = {ksz[i], 1, 0, 0, 1, 1, false};
    if ((in->a->window != NULL)) w = ir_window_of(in->a)->dims[i];
    if (w.size != ksz[i] || w.stride < 1 || w.lhs_dilate < 1 || w.rhs_dilate < 1 ||
        w.stride > IR_MAX_ELEMENTS || w.lhs_dilate > IR_MAX_ELEMENTS ||
        w.rhs_dilate > IR_MAX_ELEMENTS || w.pad_lo < -IR_MAX_ELEMENTS ||
        w.pad_lo > IR_MAX_ELEMENTS || w.pad_hi < -IR_MAX_ELEMENTS || w.pad_hi > IR_MAX_ELEMENTS)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT,
                     "window dimension %d invalid for kernel size %lld", i, (long long)ksz[i]);
    win[i] = w;
    int64_t n = lhs->shape.dims[cd->in_spatial[i]];
    /* sizes <= 2^40 and factors <= 2^40 could overflow int64: use double
     * only to reject, then exact arithmetic */
    if ((double)n * (double)w.lhs_dilate > 4e15 || (double)ksz[i] * (double)w.rhs_dilate > 4e15)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "dilated sizes too large in dimension %d", i);
    int64_t padded = (n > 0 ? (n - 1) * w.lhs_dilate + 1 : 0) + w.pad_lo + w.pad_hi;
    int64_t eff = ksz[i] > 0 ? (ksz[i] - 1) * w.rhs_dilate + 1 : 0;
    want[cd->out_spatial[i]] = padded < eff || padded <= 0 ? 0 : (padded - eff) / w.stride + 1;
  }
  for (int d = 0; d < ns + 2; d++)
    if (want[d] != in->shape->dims[d])
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "result dimension %d is %lld, expected %lld", d,
                     (long long) in->shape->dims[d], (long long)want[d]);
  return ST_OK;
}

/* The operands widened (f32, f64 or int64 by the result type rt) with the
 * element strides of the feature loop: lz along the input features, rz
 * along the kernel's input features, rf along its output features. */
typedef struct conv_sums {
  ir_type rt;
  bool is_float, is_f64;
  size_t es;
  const float *fl, *fr;
  const double *dl, *dr; /* f64: the f32 rule in double */
  const int64_t *il, *ir;
  int64_t k_i, lz, rz, rf;
} conv_sums;

/* nf (<= 4) output features side by side: the sums over the nv window
 * positions (lsp/rsp offsets from lbase/rbase) and the k_i input
 * features, stored at ob, ob + ostep, ... in the result type. */
static void sum_features(const conv_sums *c, const int64_t *lsp, const int64_t *rsp, int64_t nv,
                         int64_t lbase, int64_t rbase, int64_t nf, uint8_t *ob, size_t ostep) {
  ir_type rt = c->rt;
  int64_t k_i = c->k_i, lz = c->lz, rz = c->rz, rf = c->rf;
  if (c->is_f64) {
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    for (int64_t p = 0; p < nv; p++)
      for (int64_t z = 0; z < k_i; z++)
        for (int64_t j = 0; j < nf; j++)
          acc[j] += c->dl[lbase + lsp[p] + z * lz] * c->dr[rbase + rsp[p] + z * rz + j * rf];
    for (int64_t j = 0; j < nf; j++)
      memcpy(ob + (size_t)j * ostep, &acc[j], 8);
  } else if (c->is_float && nf == 4) { /* the common case, with the accumulators in registers */
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    for (int64_t p = 0; p < nv; p++) {
      const float *xl = c->fl + lbase + lsp[p], *xr = c->fr + rbase + rsp[p];
      for (int64_t z = 0; z < k_i; z++) {
        float xv = xl[z * lz];
        const float *wr = xr + z * rz;
        float p0 = xv * wr[0], p1 = xv * wr[rf], p2 = xv * wr[2 * rf], p3 = xv * wr[3 * rf];
        a0 += p0;
        a1 += p1;
        a2 += p2;
        a3 += p3;
      }
    }
    ev_store_f(rt, ob, a0);
    ev_store_f(rt, ob + ostep, a1);
    ev_store_f(rt, ob + 2 * ostep, a2);
    ev_store_f(rt, ob + 3 * ostep, a3);
  } else if (c->is_float) {
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t p = 0; p < nv; p++) {
      const float *xl = c->fl + lbase + lsp[p], *xr = c->fr + rbase + rsp[p];
      for (int64_t z = 0; z < k_i; z++) {
        float xv = xl[z * lz];
        const float *wr = xr + z * rz;
        for (int64_t j = 0; j < nf; j++) {
          float prod = xv * wr[j * rf];
          acc[j] += prod;
        }
      }
    }
    for (int64_t j = 0; j < nf; j++)
      ev_store_f(rt, ob + (size_t)j * ostep, acc[j]);
  } else {
    uint64_t acc[4] = {0, 0, 0, 0};
    bool any[4] = {false, false, false, false};
    for (int64_t p = 0; p < nv; p++) {
      const int64_t *xl = c->il + lbase + lsp[p], *xr = c->ir + rbase + rsp[p];
      for (int64_t z = 0; z < k_i; z++) {
        uint64_t xv = (uint64_t)xl[z * lz];
        const int64_t *wr = xr + z * rz;
        for (int64_t j = 0; j < nf; j++) {
          uint64_t prod = xv * (uint64_t)wr[j * rf];
          acc[j] += prod;
          any[j] |= prod != 0;
        }
      }
    }
    for (int64_t j = 0; j < nf; j++)
      ev_store_i(rt, ob + (size_t)j * ostep,
                 rt == IR_PRED ? (int64_t)any[j] : ev_wrap(rt, acc[j]));
  }
}

base_status ev_convolution(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops,
                           ir_literal **out) {
  const ir_literal *lhs = ops[0], *rhs = ops[1];
  const ir_conv_dims *cd = &in->a->conv;
  ir_type rt = in->shape->type;
  int ns = cd->nspatial;
  ir_window_dim win[IR_MAX_RANK];
  int64_t ksz[IR_MAX_RANK];
  base_status st = conv_check(cx, in, lhs, rhs, win, ksz);
  if (st != ST_OK) return st;
  int64_t fgc = in->a->feature_group_count > 0 ? in->a->feature_group_count : 1;
  int64_t bgc = in->a->batch_group_count > 0 ? in->a->batch_group_count : 1;
  int64_t in_b = lhs->shape.dims[cd->in_batch];
  int64_t k_i = rhs->shape.dims[cd->k_in], k_o = rhs->shape.dims[cd->k_out];

  if (cx->opts.tpu_numerics && ir_type_is_float(rt) && ir_type_is_float(lhs->shape.type) &&
      ir_type_is_float(rhs->shape.type))
    return conv_tpu(cx, in, lhs, rhs, win, ksz, out);
  ir_literal *lc = (ir_literal *)lhs, *rc = (ir_literal *)rhs, *r;
  if (lhs->shape.type != rt && (st = ev_convert_to(cx, in, lhs, rt, &lc)) != ST_OK) return st;
  if (rhs->shape.type != rt && (st = ev_convert_to(cx, in, rhs, rt, &rc)) != ST_OK) return st;
  if ((st = ev_new_array(cx, in, in->shape, &r)) != ST_OK) return st;
  int64_t nout = ir_shape_count(in->shape);
  if (nout == 0) {
    *out = r;
    return ST_OK;
  }
  double work = (double)nout * (double)k_i;
  for (int i = 0; i < ns; i++)
    work *= (double)ksz[i];
  if ((st = ev_work(cx, in, work)) != ST_OK) return st;
  conv_sums c = {.rt = rt, .is_float = ir_type_is_float(rt), .is_f64 = rt == IR_F64,
                 .es = (size_t)ir_type_size(rt), .k_i = k_i};
  void *wl, *wr;
  if ((st = ev_widen(cx, in, rt, lc->data, ir_shape_count(&lhs->shape), &wl)) != ST_OK) return st;
  if ((st = ev_widen(cx, in, rt, rc->data, ir_shape_count(&rhs->shape), &wr)) != ST_OK) return st;
  if (c.is_f64) c.dl = wl, c.dr = wr;
  else if (c.is_float) c.fl = wl, c.fr = wr;
  else c.il = wl, c.ir = wr;

  if (k_i == 0) { /* no input features: every sum is empty, the result stays 0 */
    *out = r;
    return ST_OK;
  }

  /* Loop order: for each output spatial position, the valid window
   * positions (in row-major order, holes and padding dropped) are listed
   * once; then for each batch and each run of up to 4 output features of
   * the same groups, the sums are accumulated side by side. Each output's
   * own order is the documented one: window positions in row-major order,
   * then input features ascending. */
  int64_t ls[IR_MAX_RANK], rs[IR_MAX_RANK], os[IR_MAX_RANK], osd[IR_MAX_RANK];
  ev_strides(&lhs->shape, ls);
  ev_strides(&rhs->shape, rs);
  ev_strides(in->shape, os);
  int64_t nwin = 1, nsp = 1;
  for (int i = 0; i < ns; i++) {
    nwin *= ksz[i]; /* <= rhs elements: k_i and k_o are > 0 here */
    osd[i] = in->shape->dims[cd->out_spatial[i]];
    nsp *= osd[i];
  }
  int64_t *lsp, *rsp;
  if ((st = ev_alloc_array(cx, in, nwin, 8, (void **)&lsp)) != ST_OK) return st;
  if ((st = ev_alloc_array(cx, in, nwin, 8, (void **)&rsp)) != ST_OK) return st;
  int64_t out_fg = k_o / fgc, out_bg = k_o / bgc, bgs = in_b / bgc, nb = in_b / bgc;
  c.lz = ls[cd->in_feature], c.rz = rs[cd->k_in], c.rf = rs[cd->k_out];
  int64_t o[IR_MAX_RANK] = {0};
  uint8_t *po = r->data;
  for (int64_t sp = 0; sp < nsp; sp++, ev_next_index(ns, osd, o)) {
    int64_t obase = 0;
    for (int i = 0; i < ns; i++)
      obase += o[i] * os[cd->out_spatial[i]];
    int64_t nv = window_positions(in, lhs, win, ksz, nwin, o, ls, rs, false, lsp, rsp);
    for (int64_t b = 0; b < nb; b++) {
      for (int64_t f0 = 0, nf; f0 < k_o; f0 += nf) {
        int64_t gf = f0 / out_fg, gb = f0 / out_bg;
        nf = 4;
        if (nf > k_o - f0) nf = k_o - f0;
        if (nf > out_fg - f0 % out_fg) nf = out_fg - f0 % out_fg;
        if (nf > out_bg - f0 % out_bg) nf = out_bg - f0 % out_bg;
        int64_t lbase = (gb * bgs + b) * ls[cd->in_batch] + gf * k_i * c.lz, rbase = f0 * c.rf;
        uint8_t *ob = po + (size_t)(obase + b * os[cd->out_batch] + f0 * os[cd->out_feature]) * c.es;
        sum_features(&c, lsp, rsp, nv, lbase, rbase, nf, ob, (size_t)os[cd->out_feature] * c.es);
      }
    }
  }
  *out = r;
  return ST_OK;
}
