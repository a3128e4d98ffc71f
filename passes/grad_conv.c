/* grad_conv.c: the VJP of convolution, as jax transposes
 * conv_general_dilated: both adjoints are convolutions.
 *   input:  g convolved with the kernel reversed in its spatial dims and
 *           its feature roles swapped (in <-> out), the strides becoming
 *           base dilation, the padding chosen so the result has the
 *           input's spatial size; with feature groups the group axis of
 *           the kernel's output features moves into its input features.
 *   kernel: the input (batch and feature roles swapped) convolved with g
 *           as the kernel, the strides becoming window dilation; feature
 *           groups become batch groups and batch groups feature groups.
 *           Forward batch groups make the input adjoint a feature-grouped
 *           convolution whose group axis moves back into the batch.
 * Each runs in g's element type (the other operand converted up) and is
 * converted to its operand's type. Window reversal is the kernel
 * reversed. */
#include "passes/grad_internal.h"

static int64_t dilate(int64_t n, int64_t d) { return n == 0 ? 0 : 1 + d * (n - 1); }

/* Axis src of x (size n) split into [size1, n / size1] at src, src + 1. */
static ir_id axis_out_of(gr_ctx *g, int src, int64_t size1, ir_id x) {
  const ir_shape *s = gr_shape(g, x);
  ir_shape r = *s;
  r.rank = (int8_t)(s->rank + 1);
  for (int k = 0; k < s->rank; k++) r.dims[k < src ? k : k + 1] = s->dims[k];
  r.dims[src] = size1;
  r.dims[src + 1] = s->dims[src] / size1;
  return gr_reshape(g, x, &r);
}

/* Axis src of x moved in front of axis dst (numbered with src removed)
 * and merged with it, src the major part. */
static ir_id axis_into(gr_ctx *g, int src, int dst, ir_id x) {
  const ir_shape *s = gr_shape(g, x);
  int64_t perm[IR_MAX_RANK];
  int n = 0;
  for (int k = 0; k < s->rank; k++)
    if (k != src) perm[n++] = k;
  for (int k = n; k > dst; k--) perm[k] = perm[k - 1];
  perm[dst] = src;
  ir_id t = gr_transpose(g, x, perm);
  const ir_shape *ts = gr_shape(g, t);
  ir_shape r = *ts;
  r.rank = (int8_t)(ts->rank - 1);
  for (int k = 0; k < r.rank; k++) r.dims[k] = k < dst ? ts->dims[k] : k == dst ? ts->dims[k] * ts->dims[k + 1] : ts->dims[k + 1];
  return gr_reshape(g, t, &r);
}

static ir_id conv(gr_ctx *g, ir_id lhs, ir_id rhs, const ir_conv_dims *d, const ir_window *w, int64_t fgc,
                  int64_t bgc, const ir_attrs *fa) {
  ir_attrs a = ir_attrs_none;
  a.conv = *d;
  a.window = w;
  a.feature_group_count = fgc;
  a.batch_group_count = bgc;
  a.precision[0] = fa->precision[0];
  a.precision[1] = fa->precision[1];
  return gr_build(g, IR_OP_CONVOLUTION, (ir_id[]){lhs, rhs}, 2, &a);
}

static ir_id input_adjoint(gr_ctx *g, ir_id ct, ir_id x, ir_id k, const ir_attrs *fa) {
  const ir_conv_dims *d = &fa->conv;
  const ir_window *w = ir_window_of(fa);
  int64_t G = fa->feature_group_count > 1 ? fa->feature_group_count : fa->batch_group_count;
  k = gr_convert(g, k, gr_shape(g, ct)->type);
  if (G > 1) k = axis_into(g, d->k_out, d->k_in, axis_out_of(g, d->k_out, G, k));
  const ir_shape *xs = gr_shape(g, x), *ks = gr_shape(g, k), *gs = gr_shape(g, ct);
  ir_conv_dims t = *d;
  t.in_batch = d->out_batch;
  t.in_feature = d->out_feature;
  t.k_in = d->k_out;
  t.k_out = d->k_in;
  t.out_batch = d->in_batch;
  t.out_feature = d->in_feature;
  ir_window *tw = arena_alloc(g->m->arena, sizeof *tw);
  tw->rank = d->nspatial;
  int64_t rev[IR_MAX_RANK];
  for (int s = 0; s < d->nspatial; s++) {
    ir_window_dim wd = w->dims[s];
    t.in_spatial[s] = d->out_spatial[s];
    t.out_spatial[s] = d->in_spatial[s];
    rev[s] = d->k_spatial[s];
    int64_t ld = dilate(xs->dims[d->in_spatial[s]], wd.lhs_dilate);
    int64_t rd = dilate(ks->dims[d->k_spatial[s]], wd.rhs_dilate);
    int64_t od = dilate(gs->dims[d->out_spatial[s]], wd.stride);
    int64_t before = rd - wd.pad_lo - 1;
    tw->dims[s] = (ir_window_dim){wd.size, wd.lhs_dilate, before, ld + rd - 1 - od - before, wd.stride, wd.rhs_dilate,
                                  false};
  }
  ir_attrs ra = ir_attrs_none;
  ra.dimensions = (ir_ints){d->nspatial, rev};
  ir_id kr = d->nspatial ? gr_build(g, IR_OP_REVERSE, &k, 1, &ra) : k;
  ir_id out = conv(g, ct, kr, &t, tw, G, 1, fa);
  if (fa->batch_group_count > 1) /* the groups were batch slices: back into the batch */
    out = axis_into(g, d->in_feature, d->in_batch, axis_out_of(g, d->in_feature, fa->batch_group_count, out));
  return gr_convert(g, out, xs->type);
}

static ir_id kernel_adjoint(gr_ctx *g, ir_id ct, ir_id x, ir_id k, const ir_attrs *fa) {
  const ir_conv_dims *d = &fa->conv;
  const ir_window *w = ir_window_of(fa);
  x = gr_convert(g, x, gr_shape(g, ct)->type);
  const ir_shape *xs = gr_shape(g, x), *ks = gr_shape(g, k), *gs = gr_shape(g, ct);
  ir_conv_dims t = *d;
  t.in_batch = d->in_feature;
  t.in_feature = d->in_batch;
  t.k_out = d->out_feature;
  t.k_in = d->out_batch;
  t.out_batch = d->k_in;
  t.out_feature = d->k_out;
  ir_window *tw = arena_alloc(g->m->arena, sizeof *tw);
  tw->rank = d->nspatial;
  for (int s = 0; s < d->nspatial; s++) {
    ir_window_dim wd = w->dims[s];
    t.k_spatial[s] = d->out_spatial[s];
    t.out_spatial[s] = d->k_spatial[s];
    int64_t ld = dilate(xs->dims[d->in_spatial[s]], wd.lhs_dilate);
    int64_t rd = dilate(ks->dims[d->k_spatial[s]], wd.rhs_dilate);
    int64_t od = dilate(gs->dims[d->out_spatial[s]], wd.stride);
    tw->dims[s] = (ir_window_dim){gs->dims[d->out_spatial[s]], wd.rhs_dilate, wd.pad_lo,
                                  (od - ld) + (rd - wd.pad_lo - 1), wd.lhs_dilate, wd.stride, false};
  }
  int64_t fg = fa->batch_group_count > 1 ? fa->batch_group_count : 1;
  int64_t bg = fa->feature_group_count > 1 ? fa->feature_group_count : 1;
  return gr_convert(g, conv(g, x, ct, &t, tw, fg, bg, fa), ks->type);
}

bool gr_convolution(gr_ctx *g, ir_id i, ir_id ct) {
  ir_id x = gr_inst(g, i)->ops[0], k = gr_inst(g, i)->ops[1];
  ir_attrs fa = *gr_inst(g, i)->a;
  int64_t n;
  if (!ir_shape_elements(gr_shape(g, i), &n) || n == 0) return true;
  /* window reversal is the kernel reversed in those dims */
  const ir_window *w = ir_window_of(&fa);
  ir_window *nw = arena_alloc(g->m->arena, sizeof *nw);
  *nw = *w;
  int64_t rev[IR_MAX_RANK];
  int nrev = 0;
  for (int s = 0; s < w->rank; s++)
    if (w->dims[s].reversal) {
      rev[nrev++] = fa.conv.k_spatial[s];
      nw->dims[s].reversal = false;
    }
  fa.window = nw;
  ir_attrs ra = ir_attrs_none;
  ra.dimensions = (ir_ints){nrev, rev};
  if (gr_wants(g, x)) {
    ir_id kv = gr_fwd(g, k);
    if (nrev) kv = gr_build(g, IR_OP_REVERSE, &kv, 1, &ra);
    gr_accum(g, x, input_adjoint(g, ct, x, kv, &fa));
  }
  if (gr_wants(g, k)) {
    ir_id gk = kernel_adjoint(g, ct, gr_fwd(g, x), k, &fa);
    gr_accum(g, k, nrev ? gr_build(g, IR_OP_REVERSE, &gk, 1, &ra) : gk);
  }
  return true;
}
