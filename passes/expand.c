/* expand.c: the ops no target runs as written, expanded into core ops.
 * require: a verified module.  provide: no batch-norm instruction with a
 * well-formed epsilon and feature_index, no rng of a float type or of s32
 * with constant bounds (the others are left for the target's located
 * error). Not a pipeline row: drv_parse runs it on every module it
 * parses, so every target sees the same core ops at every -O level.
 *
 * batch-norm-training, batch-norm-inference and batch-norm-grad, as XLA's
 * BatchNormExpander.
 *
 * With x the operand, C its feature dimension (feature_index), N the
 * elements per feature, every step in x's element type and every [C]
 * value broadcast along C:
 *   training:  mean = sum(x) / N, var = sum(x * x) / N - mean * mean,
 *              y = (x - mean) * rsqrt(var + eps) * scale + offset;
 *              result (y, mean, var)
 *   inference: y = (x - mean) * rsqrt(var + eps) * scale + offset
 *   grad:      (x, scale, mean, var, dy) -> (dx, dscale, doffset):
 *              r = rsqrt(var + eps), xm = x - mean,
 *              doffset = sum(dy), s = sum(dy * xm), dscale = s * r,
 *              dx = (scale * r / N) * (dy * N - doffset - xm * s / (var + eps))
 * where sum reduces every dimension but C (XLA's reduce order).
 *
 * rng (ir/eval_rng.c's definition, bit for bit): its standard values
 * (ir_rng_standard under the instruction's key) become an f32 constant u
 * (uniform) or z (normal); then in f32 u * (b - a) + a or a + b * z,
 * converted to the result type. An s32 rng with constant bounds becomes
 * the constant of its values. */
#include "passes/rewrite.h"

#include <stdlib.h>

typedef struct bn {
  ir_module *m;
  ir_comp_id c;
  src_loc loc;
  ir_type t;
  ir_shape xs, fs; /* the operand's shape, the [C] shape */
  int64_t fi;      /* feature_index */
  ir_comp_id add;  /* (a, b) -> a + b on t */
} bn;

static ir_id emit(bn *b, ir_op op, const ir_shape *s, int nops, const ir_id *ops,
                  const ir_attrs *a, ir_comp_id call) {
  ir_inst_proto p;
  memset(&p, 0, sizeof p);
  p.op = op;
  p.shape = *s;
  p.nops = nops;
  p.ops = (ir_id *)ops;
  p.a = a ? *a : ir_attrs_none;
  p.ncalls = call != IR_NONE;
  p.calls = call != IR_NONE ? &call : NULL;
  p.loc = b->loc;
  return ir_inst_add(b->m, b->c, &p);
}

static ir_id bin(bn *b, ir_op op, bool full, ir_id x, ir_id y) {
  return emit(b, op, full ? &b->xs : &b->fs, 2, (ir_id[]){x, y}, NULL, IR_NONE);
}

/* A constant instruction of literal l. */
static ir_id constant(bn *b, ir_literal *l) {
  ir_inst_proto p;
  memset(&p, 0, sizeof p);
  p.op = IR_OP_CONSTANT;
  p.shape = l->shape;
  p.a = ir_attrs_none;
  p.a.literal = l;
  p.loc = b->loc;
  return ir_inst_add(b->m, b->c, &p);
}

/* A scalar constant v of type t. */
static ir_id scalar(bn *b, double v) {
  ir_shape s = ir_shape_scalar(b->t);
  ir_literal *l = ir_literal_create(b->m->arena, &s);
  ir_literal_set_f64(l, 0, v);
  return constant(b, l);
}

/* v broadcast to the full or [C] shape. */
static ir_id splat(bn *b, double v, bool full) {
  ir_id k = scalar(b, v);
  ir_attrs a = ir_attrs_none;
  return emit(b, IR_OP_BROADCAST, full ? &b->xs : &b->fs, 1, &k, &a, IR_NONE);
}

/* A [C] value broadcast along the feature dimension. */
static ir_id along(bn *b, ir_id f) {
  ir_attrs a = ir_attrs_none;
  a.dimensions = (ir_ints){1, &b->fi};
  return emit(b, IR_OP_BROADCAST, &b->xs, 1, &f, &a, IR_NONE);
}

/* sum over every dimension but the feature dimension: [C]. */
static ir_id sum(bn *b, ir_id x) {
  int64_t dims[IR_MAX_RANK];
  int n = 0;
  for (int d = 0; d < b->xs.rank; d++)
    if (d != b->fi) dims[n++] = d;
  ir_attrs a = ir_attrs_none;
  a.dimensions = (ir_ints){n, dims};
  ir_id zero = scalar(b, 0);
  return emit(b, IR_OP_REDUCE, &b->fs, 2, (ir_id[]){x, zero}, &a, b->add);
}

static ir_comp_id add_comp(ir_module *m, ir_type t) {
  ir_comp_id c = ir_comp_add(m, ir_unique_name(m, "bn_add"));
  ir_shape s = ir_shape_scalar(t);
  ir_inst_proto p;
  memset(&p, 0, sizeof p);
  p.op = IR_OP_PARAMETER;
  p.shape = s;
  p.a = ir_attrs_none;
  ir_id x = ir_inst_add(m, c, &p);
  p.a.parameter_number = 1;
  ir_id y = ir_inst_add(m, c, &p);
  p.op = IR_OP_ADD;
  p.a = ir_attrs_none;
  p.nops = 2;
  p.ops = (ir_id[]){x, y};
  ir_comp_get(m, c)->root = ir_inst_add(m, c, &p);
  ir_comp_finish(m, c);
  return c;
}

/* (x - mean) * rsqrt(var + eps) * scale + offset, all [C] broadcast. */
static ir_id normalize(bn *b, ir_id x, ir_id scale, ir_id offset, ir_id mean, ir_id var,
                       double eps) {
  ir_id r = emit(b, IR_OP_RSQRT, &b->fs, 1, (ir_id[]){bin(b, IR_OP_ADD, false, var, splat(b, eps, false))},
                 NULL, IR_NONE);
  ir_id y = bin(b, IR_OP_MULTIPLY, true, bin(b, IR_OP_SUBTRACT, true, x, along(b, mean)), along(b, r));
  return bin(b, IR_OP_ADD, true, bin(b, IR_OP_MULTIPLY, true, y, along(b, scale)), along(b, offset));
}

static ir_id tuple3(bn *b, const ir_shape *s, ir_id x, ir_id y, ir_id z) {
  return emit(b, IR_OP_TUPLE, s, 3, (ir_id[]){x, y, z}, NULL, IR_NONE);
}

/* The expansion of batch-norm instruction i, or IR_NONE when its
 * attributes or shapes are malformed. */
static ir_id expand(ir_module *m, ir_comp_id c, ir_id i, ir_comp_id *add) {
  const ir_inst *in = ir_inst_get(m, c, i);
  const char *et = ir_raw_attr_text(in, "epsilon"), *ft = ir_raw_attr_text(in, "feature_index");
  char *end;
  if (!et || !ft || in->nops < 3) return IR_NONE;
  double eps = strtod(et, &end);
  if (*end) return IR_NONE;
  long long fi = strtoll(ft, &end, 10);
  const ir_shape *xs = ir_inst_get(m, c, in->ops[0])->shape;
  if (*end || xs->type == IR_TUPLE || !ir_type_is_float(xs->type) || fi < 0 || fi >= xs->rank)
    return IR_NONE;
  bn b = {m, c, in->info->loc, xs->type, *xs, ir_shape_array(xs->type, 1, &xs->dims[fi]), fi, *add};
  ir_shape_default_layout(&b.xs);
  double n = (double)ir_shape_count(xs) / (double)(xs->dims[fi] ? xs->dims[fi] : 1);
  ir_op op = in->op;
  ir_id o[5];
  ir_shape rs = *in->shape;
  for (int k = 0; k < in->nops && k < 5; k++) o[k] = in->ops[k];
  if (b.add == IR_NONE) b.add = *add = add_comp(m, b.t);
  if (op == IR_OP_BATCH_NORM_INFERENCE)
    return normalize(&b, o[0], o[1], o[2], o[3], o[4], eps);
  if (op == IR_OP_BATCH_NORM_TRAINING) {
    ir_id mean = bin(&b, IR_OP_DIVIDE, false, sum(&b, o[0]), splat(&b, n, false));
    ir_id sq = bin(&b, IR_OP_DIVIDE, false, sum(&b, bin(&b, IR_OP_MULTIPLY, true, o[0], o[0])),
                   splat(&b, n, false));
    ir_id var = bin(&b, IR_OP_SUBTRACT, false, sq, bin(&b, IR_OP_MULTIPLY, false, mean, mean));
    return tuple3(&b, &rs, normalize(&b, o[0], o[1], o[2], mean, var, eps), mean, var);
  }
  /* grad: (x, scale, mean, var, dy) */
  ir_id ve = bin(&b, IR_OP_ADD, false, o[3], splat(&b, eps, false));
  ir_id r = emit(&b, IR_OP_RSQRT, &b.fs, 1, &ve, NULL, IR_NONE);
  ir_id xm = bin(&b, IR_OP_SUBTRACT, true, o[0], along(&b, o[2]));
  ir_id doff = sum(&b, o[4]);
  ir_id s = sum(&b, bin(&b, IR_OP_MULTIPLY, true, o[4], xm));
  ir_id dscale = bin(&b, IR_OP_MULTIPLY, false, s, r);
  ir_id i5 = bin(&b, IR_OP_DIVIDE, true, bin(&b, IR_OP_MULTIPLY, true, xm, along(&b, s)), along(&b, ve));
  ir_id i6 = bin(&b, IR_OP_SUBTRACT, true,
                 bin(&b, IR_OP_SUBTRACT, true, bin(&b, IR_OP_MULTIPLY, true, o[4], splat(&b, n, true)),
                     along(&b, doff)),
                 i5);
  ir_id k = bin(&b, IR_OP_DIVIDE, false, bin(&b, IR_OP_MULTIPLY, false, o[1], r), splat(&b, n, false));
  ir_id dx = bin(&b, IR_OP_MULTIPLY, true, along(&b, k), i6);
  return tuple3(&b, &rs, dx, dscale, doff);
}


/* A constant of type t (4 bytes) and the dims of rs holding the words v. */
static ir_id const_words(bn *b, const ir_shape *rs, ir_type t, const void *v) {
  ir_shape s = ir_shape_array(t, rs->rank, rs->dims);
  ir_literal *l = ir_literal_create(b->m->arena, &s);
  memcpy(l->data, v, l->nbytes);
  return constant(b, l);
}

static ir_id to_type(bn *b, ir_id x, const ir_shape *s, ir_type t) {
  ir_shape o = ir_shape_array(t, s->rank, s->dims);
  return emit(b, IR_OP_CONVERT, &o, 1, &x, NULL, IR_NONE);
}

/* The expansion of rng instruction i, or IR_NONE. */
static ir_id expand_rng(ir_module *m, ir_comp_id c, ir_id i) {
  const ir_inst *in = ir_inst_get(m, c, i);
  ir_rng_dist dist;
  ir_shape rs = *in->shape;
  ir_type t = rs.type;
  bool f = t == IR_F32 || t == IR_BF16 || t == IR_F16;
  if (!ir_rng_dist_of(in, &dist) || in->nops != 2 || rs.type == IR_TUPLE || (!f && t != IR_S32))
    return IR_NONE;
  ir_shape sc = ir_shape_scalar(IR_F32);
  bn b = {m, c, in->info->loc, IR_F32, ir_shape_array(IR_F32, rs.rank, rs.dims), sc, 0, IR_NONE};
  ir_id a = in->ops[0], hi = in->ops[1];
  const ir_inst *ai = ir_inst_get(m, c, a), *bi = ir_inst_get(m, c, hi);
  if (!f && (ai->op != IR_OP_CONSTANT || bi->op != IR_OP_CONSTANT)) return IR_NONE;
  int64_t n = ir_shape_count(&rs);
  uint32_t *w = malloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
  if (!w) base_die("out of memory for %lld random numbers", (long long)n);
  ir_rng_standard(dist, !f, ir_rng_key_of(in->info->name), rs.rank, rs.dims, w);
  ir_id r;
  if (!f) {
    int32_t lo = (int32_t)ir_literal_get_i64(ai->a->literal, 0),
            up = (int32_t)ir_literal_get_i64(bi->a->literal, 0);
    for (int64_t e = 0; e < n; e++) w[e] = (uint32_t)ir_rng_uniform_s32(w[e], lo, up);
    r = const_words(&b, &rs, IR_S32, w);
  } else {
    ir_id std = const_words(&b, &rs, IR_F32, w);
    if (t != IR_F32) a = to_type(&b, a, &sc, IR_F32), hi = to_type(&b, hi, &sc, IR_F32);
    ir_attrs none = ir_attrs_none;
    ir_id ab = emit(&b, IR_OP_BROADCAST, &b.xs, 1, &a, &none, IR_NONE);
    if (dist == IR_RNG_UNIFORM) {
      ir_id span = emit(&b, IR_OP_SUBTRACT, &sc, 2, (ir_id[]){hi, a}, NULL, IR_NONE);
      ir_id sb = emit(&b, IR_OP_BROADCAST, &b.xs, 1, &span, &none, IR_NONE);
      r = bin(&b, IR_OP_ADD, true, bin(&b, IR_OP_MULTIPLY, true, std, sb), ab);
    } else {
      ir_id bb = emit(&b, IR_OP_BROADCAST, &b.xs, 1, &hi, &none, IR_NONE);
      r = bin(&b, IR_OP_ADD, true, ab, bin(&b, IR_OP_MULTIPLY, true, bb, std));
    }
    if (t != IR_F32) r = to_type(&b, r, &rs, t);
  }
  free(w);
  return r;
}

bool pass_expand(ir_module *m, pass_ctx *ctx) {
  (void)ctx;
  bool changed = false;
  for (ir_comp_id c = 0; c < m->comps.n; c++) {
    ir_comp *cp = ir_comp_get(m, c);
    int n = cp->insts.n;
    pr_map mp = {NULL, 0};
    ir_comp_id add = IR_NONE;
    for (ir_id i = 0; i < n; i++) {
      ir_op op = ir_comp_get(m, c)->insts.v[i].op;
      if ((op != IR_OP_BATCH_NORM_TRAINING && op != IR_OP_BATCH_NORM_INFERENCE &&
           op != IR_OP_BATCH_NORM_GRAD && op != IR_OP_RNG) || ir_comp_get(m, c)->insts.v[i].dead)
        continue;
      ir_id e = op == IR_OP_RNG ? expand_rng(m, c, i) : expand(m, c, i, &add);
      if (e == IR_NONE) continue;
      if (!mp.v) mp = pr_map_make(m->arena, n);
      mp.v[i] = e;
      changed = true;
    }
    if (!mp.v) continue;
    pr_apply(m, c, &mp);
    pr_sweep(m, c);
  }
  return changed;
}
