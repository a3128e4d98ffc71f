/* simplify.c: algebraic simplification.
 * require: a verified module.  provide: the same values bit for bit (every
 * rewrite is exact for every input, NaN payloads and signed zeros
 * included), with these patterns removed (x stands for any operand, c for a
 * splat constant or a broadcast scalar constant):
 *   x + c  -> x   ints and pred with c = 0; floats only with c = -0.0
 *                 (x + +0.0 turns -0.0 into +0.0, so it stays)
 *   x - c  -> x   ints with c = 0; floats with c = +0.0
 *   x * 1, 1 * x, x / 1 -> x (all types);  x * 0 -> 0 (ints and pred only:
 *                 for floats NaN * 0 and -1 * 0 differ from +0)
 *   and(x, all ones) / or(x, 0) -> x;  and(x, 0) / or(x, all ones) -> c
 *   max(x, x), min(x, x) -> x;  negate(negate x), not(not x) -> x
 *   select(c, a, b) -> a or b;  select(p, a, a) -> a
 *   convert to the same type, copy -> the operand
 *   transpose by the identity, reshape to the same dims, slice of the full
 *   range, concatenate of one operand, pad by nothing, reverse of size-1
 *   dimensions, broadcast to the same shape -> the operand
 *   transpose(transpose x), reshape(reshape x), broadcast(broadcast x)
 *                 -> one instruction
 *   reshape/transpose/slice/reverse/broadcast of a broadcast scalar
 *                 -> a broadcast of that scalar
 *   a splat constant of more than one element -> broadcast(scalar constant)
 * The float identities (x + -0.0, x - 0.0, x * 1, x / 1, max(x, x)) are
 * exact except for a signalling NaN, which arithmetic quiets: they apply
 * only when x cannot be one (it is computed by arithmetic, or a constant
 * without one), so parameters and bitcasts keep their multiply by one. On
 * bf16 and f16, whose every result the evaluator rounds (quieting a
 * signalling NaN), negate(negate x), convert to the same type and select
 * follow the same rule.
 * Every rewrite is recorded with pass_explain. Instructions left unused are
 * removed (parameters stay). */
#include "passes/rewrite.h"

#define PASS "simplify"

typedef struct sctx {
  ir_module *m;
  ir_comp_id c;
  pass_ctx *ctx;
  ir_id fresh; /* instructions from this id on were built by this rewrite */
} sctx;

static ir_inst *I(sctx *s, ir_id id) { return ir_inst_get(s->m, s->c, id); }
static const ir_comp *C(sctx *s) { return ir_comp_get(s->m, s->c); }

/* Records rewrite `what` of id into `to`. An instruction built for the
 * rewrite (id >= fresh) takes id's name: id dies, nothing else uses it. */
static ir_id note(sctx *s, ir_id id, ir_id to, const char *what) {
  if (to >= s->fresh) {
    I(s, to)->info->name = I(s, id)->info->name;
    pass_explain(s->ctx, PASS, I(s, id)->info->name, "%s -> new %s", what,
                 ir_op_name(I(s, to)->op));
  } else {
    pass_explain(s->ctx, PASS, I(s, id)->info->name, "%s -> %%%s", what,
                 I(s, to)->info->name);
  }
  return to;
}

/* A broadcast of scalar `scalar` to the shape of instruction id. */
static ir_id bcast_scalar(sctx *s, ir_id id, ir_id scalar) {
  ir_shape target = *I(s, id)->shape;
  src_loc loc = I(s, id)->info->loc;
  ir_attrs at;
  memset(&at, 0, sizeof at);
  return ir_build_shaped(s->m, s->c, IR_OP_BROADCAST, &scalar, 1, &at, NULL, 0, &target, loc);
}

static bool is_int_like(ir_type t) { return ir_type_is_int(t) || t == IR_PRED; }

/* The scalar operand when id is a broadcast of a rank-0 array. */
static ir_id bcast_scalar_src(sctx *s, ir_id id) {
  const ir_inst *in = I(s, id);
  if (in->op != IR_OP_BROADCAST) return IR_NONE;
  const ir_inst *o = I(s, in->ops[0]);
  return ir_shape_is_array(o->shape) && o->shape->rank == 0 ? in->ops[0] : IR_NONE;
}

static bool same_dims(const ir_shape *a, const ir_shape *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* Could instruction id hold a signalling NaN? The float identities below
 * (x * 1, x + -0.0, ...) are exact for every value except a signalling
 * NaN, which arithmetic quiets and the identity would not. Arithmetic
 * results never are one; parameters, bitcasts and selections may be, data
 * movement passes them through; constants are looked at. */
static bool snan_bits(const ir_literal *l) {
  int64_t n = ir_shape_count(&l->shape);
  for (int64_t i = 0; i < n; i++) {
    if (l->shape.type == IR_F32) {
      uint32_t u;
      memcpy(&u, (const uint8_t *)l->data + 4 * i, 4);
      if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu) && !(u & 0x400000u)) return true;
    } else {
      uint16_t h;
      memcpy(&h, (const uint8_t *)l->data + 2 * i, 2);
      bool bf = l->shape.type == IR_BF16;
      uint16_t exp = bf ? 0x7f80 : 0x7c00, man = bf ? 0x7f : 0x3ff, quiet = bf ? 0x40 : 0x200;
      if ((h & exp) == exp && (h & man) && !(h & quiet)) return true;
    }
  }
  return false;
}

static bool may_be_snan(sctx *s, ir_id id, int depth) {
  const ir_inst *in = I(s, id);
  if (!ir_type_is_float(in->shape->type)) return false;
  if (depth > 8) return true;
  switch (in->op) {
  case IR_OP_CONSTANT:
    return !in->a->literal || snan_bits(in->a->literal);
  case IR_OP_BROADCAST:
  case IR_OP_RESHAPE:
  case IR_OP_TRANSPOSE:
  case IR_OP_SLICE:
  case IR_OP_REVERSE:
  case IR_OP_COPY:
  case IR_OP_NEGATE:
  case IR_OP_ABS:
    return may_be_snan(s, in->ops[0], depth + 1);
  case IR_OP_DOT:
  case IR_OP_CONVOLUTION:
    return false;
  default:
    break;
  }
  unsigned fl = ir_op_flags(in->op);
  bool selects = in->op == IR_OP_SELECT || in->op == IR_OP_CLAMP || in->op == IR_OP_MAXIMUM ||
                 in->op == IR_OP_MINIMUM || in->op == IR_OP_SIGN;
  return !(fl & OPF_ELEMWISE) || selects;
}

/* Whether passing x through a bf16 or f16 op could quiet a signalling
 * NaN: the evaluator computes 16-bit floats in f32 and rounds every
 * result (convert to the same type, negate, select's result in TPU
 * numerics), so negate(negate x), convert and select of such an x are not
 * identities. */
static bool quiets_16(sctx *s, ir_id x) {
  ir_type t = I(s, x)->shape->type;
  return (t == IR_BF16 || t == IR_F16) && may_be_snan(s, x, 0);
}

/* "all ones" of an integer type: true for pred, -1 for ints. */
static bool all_ones(const ir_literal *l) {
  if (!l) return false;
  return pr_splat_is(l, l->shape.type == IR_PRED ? 1 : -1);
}

static ir_id binary(sctx *s, ir_id id) {
  const ir_inst *in = I(s, id);
  ir_type t = in->shape->type;
  ir_id x = in->ops[0], y = in->ops[1];
  const ir_literal *lx = pr_splat(C(s), x), *ly = pr_splat(C(s), y);
  bool fl = ir_type_is_float(t);
  /* float identities need an operand that cannot be a signalling NaN */
  bool qx = !fl || !may_be_snan(s, x, 0), qy = !fl || !may_be_snan(s, y, 0);
  switch (in->op) {
  case IR_OP_ADD:
    if (!fl && pr_splat_is(ly, 0)) return note(s, id, x, "x + 0");
    if (!fl && pr_splat_is(lx, 0)) return note(s, id, y, "0 + x");
    if (fl && qx && pr_splat_is(ly, -0.0)) return note(s, id, x, "x + -0.0");
    if (fl && qy && pr_splat_is(lx, -0.0)) return note(s, id, y, "-0.0 + x");
    break;
  case IR_OP_SUBTRACT:
    if (!fl && t != IR_PRED && pr_splat_is(ly, 0)) return note(s, id, x, "x - 0");
    if (fl && qx && pr_splat_is(ly, 0.0)) return note(s, id, x, "x - +0.0");
    break;
  case IR_OP_MULTIPLY:
    if (qx && pr_splat_is(ly, 1)) return note(s, id, x, "x * 1");
    if (qy && pr_splat_is(lx, 1)) return note(s, id, y, "1 * x");
    if (is_int_like(t) && pr_splat_is(ly, 0)) return note(s, id, y, "x * 0 (integer)");
    if (is_int_like(t) && pr_splat_is(lx, 0)) return note(s, id, x, "0 * x (integer)");
    break;
  case IR_OP_DIVIDE:
    if (t != IR_PRED && qx && pr_splat_is(ly, 1)) return note(s, id, x, "x / 1");
    break;
  case IR_OP_AND:
    if (all_ones(ly)) return note(s, id, x, "and(x, all ones)");
    if (all_ones(lx)) return note(s, id, y, "and(all ones, x)");
    if (pr_splat_is(ly, 0)) return note(s, id, y, "and(x, 0)");
    if (pr_splat_is(lx, 0)) return note(s, id, x, "and(0, x)");
    break;
  case IR_OP_OR:
    if (pr_splat_is(ly, 0)) return note(s, id, x, "or(x, 0)");
    if (pr_splat_is(lx, 0)) return note(s, id, y, "or(0, x)");
    if (all_ones(ly)) return note(s, id, y, "or(x, all ones)");
    if (all_ones(lx)) return note(s, id, x, "or(all ones, x)");
    break;
  case IR_OP_MAXIMUM:
  case IR_OP_MINIMUM:
    if (x == y && qx) return note(s, id, x, in->op == IR_OP_MAXIMUM ? "max(x, x)" : "min(x, x)");
    break;
  default:
    break;
  }
  return IR_NONE;
}

/* Shape ops of a broadcast scalar become one broadcast of the scalar. */
static ir_id movement_of_splat(sctx *s, ir_id id) {
  const ir_inst *in = I(s, id);
  ir_id sc = bcast_scalar_src(s, in->ops[0]);
  if (sc == IR_NONE) return IR_NONE;
  const char *what = arena_printf(s->m->arena, "%s of a broadcast scalar", ir_op_name(in->op));
  return note(s, id, bcast_scalar(s, id, sc), what);
}

static ir_id simplify_one(sctx *s, ir_id id) {
  const ir_inst *in = I(s, id);
  if (in->dead || !ir_shape_is_array(in->shape)) return IR_NONE;
  unsigned fl = ir_op_flags(in->op);
  if ((fl & OPF_BINARY) && in->op != IR_OP_COMPARE) return binary(s, id);
  const ir_inst *o = in->nops >= 1 ? I(s, in->ops[0]) : NULL;
  ir_id x = in->nops >= 1 ? in->ops[0] : IR_NONE;
  switch (in->op) {
  case IR_OP_CONSTANT: {
    const ir_literal *l = pr_splat(C(s), id);
    if (!l || in->shape->rank == 0 || ir_shape_count(in->shape) < 2) return IR_NONE;
    ir_inst_proto proto;
    memset(&proto, 0, sizeof proto);
    proto.op = IR_OP_CONSTANT;
    proto.shape = ir_shape_scalar(in->shape->type);
    proto.loc = in->info->loc;
    proto.name = ir_unique_name(s->m,
                                arena_printf(s->m->arena, "%s.scalar", in->info->name));
    ir_literal *sl = ir_literal_create(s->m->arena, &proto.shape);
    memcpy(sl->data, l->data, (size_t)ir_type_size(in->shape->type));
    proto.a.literal = sl;
    ir_id sc = ir_inst_add(s->m, s->c, &proto);
    return note(s, id, bcast_scalar(s, id, sc), "splat constant");
  }
  case IR_OP_NEGATE:
    if (o->op == IR_OP_NEGATE && !quiets_16(s, o->ops[0]))
      return note(s, id, o->ops[0], "negate(negate x)");
    return IR_NONE;
  case IR_OP_NOT:
    if (o->op == IR_OP_NOT) return note(s, id, o->ops[0], "not(not x)");
    return IR_NONE;
  case IR_OP_SELECT: {
    const ir_literal *p = pr_splat(C(s), in->ops[0]);
    ir_id pick = p ? in->ops[ir_literal_get_i64(p, 0) ? 1 : 2] : in->ops[1];
    if (quiets_16(s, pick)) return IR_NONE;
    if (p) return note(s, id, pick, "select(constant, a, b)");
    if (in->ops[1] == in->ops[2]) return note(s, id, pick, "select(p, a, a)");
    return IR_NONE;
  }
  case IR_OP_CONVERT:
    if (o->shape->type == in->shape->type && !quiets_16(s, x))
      return note(s, id, x, "convert to the same type");
    return IR_NONE;
  case IR_OP_COPY:
    if (ir_shape_is_array(o->shape)) return note(s, id, x, "copy");
    return IR_NONE;
  case IR_OP_CONCATENATE:
    if (in->nops == 1) return note(s, id, x, "concatenate of one operand");
    return IR_NONE;
  case IR_OP_PAD: {
    for (int d = 0; d < in->a->npad; d++)
      if (in->a->padding[d].lo || in->a->padding[d].hi || in->a->padding[d].interior) return IR_NONE;
    return note(s, id, x, "pad by nothing");
  }
  case IR_OP_SLICE: {
    bool full = true;
    for (int d = 0; d < in->shape->rank && full; d++)
      full = in->a->slice_start.v[d] == 0 && in->a->slice_limit.v[d] == o->shape->dims[d] &&
             (in->a->slice_stride.n == 0 || in->a->slice_stride.v[d] == 1);
    if (full) return note(s, id, x, "slice of the full range");
    return movement_of_splat(s, id);
  }
  case IR_OP_REVERSE: {
    bool trivial = true;
    for (int k = 0; k < in->a->dimensions.n; k++)
      if (in->shape->dims[in->a->dimensions.v[k]] > 1) trivial = false;
    if (trivial) return note(s, id, x, "reverse of size-1 dimensions");
    return movement_of_splat(s, id);
  }
  case IR_OP_RESHAPE:
    if (same_dims(o->shape, in->shape)) return note(s, id, x, "reshape to the same dims");
    if (o->op == IR_OP_RESHAPE) {
      ir_shape target = *in->shape;
      ir_id r = ir_build_shaped(s->m, s->c, IR_OP_RESHAPE, &o->ops[0], 1, NULL, NULL, 0, &target,
                                in->info->loc);
      return note(s, id, r, "reshape(reshape x)");
    }
    return movement_of_splat(s, id);
  case IR_OP_TRANSPOSE: {
    bool ident = true;
    for (int k = 0; k < in->a->dimensions.n; k++)
      ident &= in->a->dimensions.v[k] == k;
    if (ident) return note(s, id, x, "transpose by the identity");
    if (o->op == IR_OP_TRANSPOSE) {
      int r = in->shape->rank;
      int64_t q[IR_MAX_RANK];
      bool qid = true;
      for (int k = 0; k < r; k++) {
        q[k] = o->a->dimensions.v[in->a->dimensions.v[k]];
        qid &= q[k] == k;
      }
      if (qid) return note(s, id, o->ops[0], "transpose(transpose x) by the identity");
      ir_attrs at;
      memset(&at, 0, sizeof at);
      at.dimensions.n = r;
      at.dimensions.v = q;
      ir_id t = ir_build(s->m, s->c, IR_OP_TRANSPOSE, &o->ops[0], 1, &at, NULL, 0,
                         in->info->loc);
      return note(s, id, t, "transpose(transpose x)");
    }
    return movement_of_splat(s, id);
  }
  case IR_OP_BROADCAST: {
    if (same_dims(o->shape, in->shape)) {
      bool ident = true;
      for (int k = 0; k < in->a->dimensions.n; k++)
        ident &= in->a->dimensions.v[k] == k;
      if (ident) return note(s, id, x, "broadcast to the same shape");
    }
    if (o->op == IR_OP_BROADCAST) {
      int64_t q[IR_MAX_RANK];
      for (int k = 0; k < o->a->dimensions.n; k++)
        q[k] = in->a->dimensions.v[o->a->dimensions.v[k]];
      ir_attrs at;
      memset(&at, 0, sizeof at);
      at.dimensions.n = o->a->dimensions.n;
      at.dimensions.v = q;
      ir_shape target = *in->shape;
      ir_id b = ir_build_shaped(s->m, s->c, IR_OP_BROADCAST, &o->ops[0], 1, &at, NULL, 0, &target,
                                in->info->loc);
      return note(s, id, b, "broadcast(broadcast x)");
    }
    return IR_NONE;
  }
  default:
    return IR_NONE;
  }
}

static bool simplify_comp(ir_module *m, ir_comp_id c, pass_ctx *ctx) {
  sctx s = {m, c, ctx, 0};
  bool changed = false;
  for (int round = 0; round < 4; round++) {
    int n = ir_comp_get(m, c)->insts.n;
    pr_map mp = pr_map_make(m->arena, n);
    bool any = false;
    for (ir_id i = 0; i < n; i++) {
      ir_inst *in = I(&s, i);
      if (in->dead) continue;
      for (int k = 0; k < in->nops; k++)
        in->ops[k] = pr_find(&mp, in->ops[k]);
      s.fresh = ir_comp_get(m, c)->insts.n;
      ir_id r = simplify_one(&s, i);
      if (r != IR_NONE && r != i) {
        mp.v[i] = r;
        any = true;
      }
    }
    if (!any) break;
    pr_apply(m, c, &mp);
    pr_sweep(m, c);
    changed = true;
  }
  return changed;
}

bool pass_simplify(ir_module *m, pass_ctx *ctx) {
  bool changed = false;
  for (ir_comp_id c = 0; c < m->comps.n; c++)
    changed |= simplify_comp(m, c, ctx);
  return changed;
}
