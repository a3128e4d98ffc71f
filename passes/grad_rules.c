/* grad_rules.c: the table of VJP rules, one row per op of ir/ops.def, and
 * the rules of elementwise, data-movement and tuple ops.
 *
 * A row is RULE (a function below or in grad_dot.c, grad_conv.c,
 * grad_reduce.c), ZERO (no gradient mathematically: the op's value is
 * piecewise constant in its floating-point operands, or not floating
 * point at all) or NONE (a gradient asked through it is a located error
 * naming the reason). tests/passes/test_grad.c checks that every op has a
 * row. Conventions where the derivative is not defined: abs'(0) = 0;
 * maximum/minimum split the adjoint evenly between equal operands (as
 * jax); clamp, as minimum(maximum(x, min), max), passes it to x when
 * min <= x and maximum(x, min) <= max, to min when x < min <= max, to max
 * when max < maximum(x, min); power's exponent gradient treats
 * log(0) as 0. */
#include "passes/grad_internal.h"

/* Forward value v of the backward pass, fetched on first use (so that
 * under remat nothing is recomputed that the rule does not read). */
static ir_id lazy(gr_ctx *g, ir_id *v, ir_id fwd) {
  if (*v == IR_NONE) *v = gr_fwd(g, fwd);
  return *v;
}

/* The adjoint of unary op's operand xi, given its adjoint ct (yi: the
 * result). */
static ir_id unary(gr_ctx *g, ir_op op, ir_id ct, ir_id xi, ir_id yi) {
  ir_id xv = IR_NONE, yv = IR_NONE;
#define x lazy(g, &xv, xi)
#define y lazy(g, &yv, yi)
  switch (op) {
  case IR_OP_NEGATE: return gr_un(g, IR_OP_NEGATE, ct);
  case IR_OP_ABS: return gr_bin(g, IR_OP_MULTIPLY, ct, gr_un(g, IR_OP_SIGN, x));
  case IR_OP_EXP: return gr_bin(g, IR_OP_MULTIPLY, ct, y);
  case IR_OP_EXPM1: return gr_bin(g, IR_OP_MULTIPLY, ct, gr_bin(g, IR_OP_ADD, y, gr_like(g, y, 1)));
  case IR_OP_LOG: return gr_bin(g, IR_OP_DIVIDE, ct, x);
  case IR_OP_LOG1P: return gr_bin(g, IR_OP_DIVIDE, ct, gr_bin(g, IR_OP_ADD, x, gr_like(g, x, 1)));
  case IR_OP_SQRT: return gr_bin(g, IR_OP_DIVIDE, gr_bin(g, IR_OP_MULTIPLY, ct, gr_like(g, y, 0.5)), y);
  case IR_OP_RSQRT: /* -y / (2x) */
    return gr_bin(g, IR_OP_MULTIPLY, ct,
                  gr_bin(g, IR_OP_DIVIDE, gr_bin(g, IR_OP_MULTIPLY, y, gr_like(g, y, -0.5)), x));
  case IR_OP_CBRT: /* 1 / (3 y^2) */
    return gr_bin(g, IR_OP_DIVIDE, ct,
                  gr_bin(g, IR_OP_MULTIPLY, gr_like(g, y, 3), gr_bin(g, IR_OP_MULTIPLY, y, y)));
  case IR_OP_TANH: /* 1 - y^2 */
    return gr_bin(g, IR_OP_MULTIPLY, ct, gr_bin(g, IR_OP_SUBTRACT, gr_like(g, y, 1), gr_bin(g, IR_OP_MULTIPLY, y, y)));
  case IR_OP_LOGISTIC: /* y (1 - y) */
    return gr_bin(g, IR_OP_MULTIPLY, ct,
                  gr_bin(g, IR_OP_MULTIPLY, y, gr_bin(g, IR_OP_SUBTRACT, gr_like(g, y, 1), y)));
  case IR_OP_SINE: return gr_bin(g, IR_OP_MULTIPLY, ct, gr_un(g, IR_OP_COSINE, x));
  case IR_OP_COSINE: return gr_bin(g, IR_OP_MULTIPLY, ct, gr_un(g, IR_OP_NEGATE, gr_un(g, IR_OP_SINE, x)));
  case IR_OP_TAN: /* 1 + y^2 */
    return gr_bin(g, IR_OP_MULTIPLY, ct, gr_bin(g, IR_OP_ADD, gr_like(g, y, 1), gr_bin(g, IR_OP_MULTIPLY, y, y)));
  default: break;
  }
  /* The inverse and hyperbolic functions, from x alone. */
  ir_id xx = gr_bin(g, IR_OP_MULTIPLY, x, x), one = gr_like(g, x, 1);
  switch (op) {
  case IR_OP_ASIN: return gr_bin(g, IR_OP_MULTIPLY, ct, gr_un(g, IR_OP_RSQRT, gr_bin(g, IR_OP_SUBTRACT, one, xx)));
  case IR_OP_ACOS:
    return gr_un(g, IR_OP_NEGATE,
                 gr_bin(g, IR_OP_MULTIPLY, ct, gr_un(g, IR_OP_RSQRT, gr_bin(g, IR_OP_SUBTRACT, one, xx))));
  case IR_OP_ATAN: return gr_bin(g, IR_OP_DIVIDE, ct, gr_bin(g, IR_OP_ADD, one, xx));
  case IR_OP_ASINH: return gr_bin(g, IR_OP_MULTIPLY, ct, gr_un(g, IR_OP_RSQRT, gr_bin(g, IR_OP_ADD, xx, one)));
  case IR_OP_ACOSH: return gr_bin(g, IR_OP_MULTIPLY, ct, gr_un(g, IR_OP_RSQRT, gr_bin(g, IR_OP_SUBTRACT, xx, one)));
  case IR_OP_ATANH: return gr_bin(g, IR_OP_DIVIDE, ct, gr_bin(g, IR_OP_SUBTRACT, one, xx));
  case IR_OP_SINH:
  case IR_OP_COSH: { /* (e^x +- e^-x) / 2 */
    ir_id e = gr_un(g, IR_OP_EXP, x), f = gr_un(g, IR_OP_EXP, gr_un(g, IR_OP_NEGATE, x));
    ir_id d = gr_bin(g, op == IR_OP_SINH ? IR_OP_ADD : IR_OP_SUBTRACT, e, f);
    return gr_bin(g, IR_OP_MULTIPLY, ct, gr_bin(g, IR_OP_MULTIPLY, d, gr_like(g, x, 0.5)));
  }
  case IR_OP_ERF: /* 2/sqrt(pi) e^(-x^2) */
    return gr_bin(g, IR_OP_MULTIPLY, ct,
                  gr_bin(g, IR_OP_MULTIPLY, gr_like(g, x, 1.1283791670955126),
                         gr_un(g, IR_OP_EXP, gr_un(g, IR_OP_NEGATE, xx))));
  default: base_die("grad: no unary rule for %s", ir_op_name(op));
  }
#undef x
#undef y
}

/* g where p holds, else 0. */
static ir_id mask(gr_ctx *g, ir_id p, ir_id ct) { return gr_select(g, p, ct, gr_like(g, ct, 0)); }

/* maximum (gt) or minimum (lt): the adjoint to x where x wins, half of it
 * where x and y are equal. */
static ir_id choose(gr_ctx *g, ir_cmp_dir win, ir_id ct, ir_id x, ir_id y) {
  ir_id half = gr_bin(g, IR_OP_MULTIPLY, ct, gr_like(g, ct, 0.5));
  return gr_bin(g, IR_OP_ADD, mask(g, gr_cmp(g, win, x, y), ct), mask(g, gr_cmp(g, IR_CMP_EQ, x, y), half));
}

static void binary(gr_ctx *g, ir_id i, ir_op op, ir_id ct) {
  ir_id xi = gr_inst(g, i)->ops[0], yi = gr_inst(g, i)->ops[1];
  ir_id xv = IR_NONE, yv = IR_NONE;
#define x lazy(g, &xv, xi)
#define y lazy(g, &yv, yi)
  ir_id gx = IR_NONE, gy = IR_NONE;
  switch (op) {
  case IR_OP_ADD: gx = gy = ct; break;
  case IR_OP_SUBTRACT:
    gx = ct;
    if (gr_wants(g, yi)) gy = gr_un(g, IR_OP_NEGATE, ct);
    break;
  case IR_OP_MULTIPLY:
    if (gr_wants(g, xi)) gx = gr_bin(g, IR_OP_MULTIPLY, ct, y);
    if (gr_wants(g, yi)) gy = gr_bin(g, IR_OP_MULTIPLY, ct, x);
    break;
  case IR_OP_DIVIDE:
    if (gr_wants(g, xi)) gx = gr_bin(g, IR_OP_DIVIDE, ct, y);
    if (gr_wants(g, yi)) /* -g z / y */
      gy = gr_un(g, IR_OP_NEGATE, gr_bin(g, IR_OP_DIVIDE, gr_bin(g, IR_OP_MULTIPLY, ct, gr_fwd(g, i)), y));
    break;
  case IR_OP_REMAINDER: /* x - trunc(x/y) y */
    gx = ct;
    if (gr_wants(g, yi)) {
      ir_id q = gr_bin(g, IR_OP_DIVIDE, x, y);
      ir_id t = gr_bin(g, IR_OP_MULTIPLY, gr_un(g, IR_OP_SIGN, q), gr_un(g, IR_OP_FLOOR, gr_un(g, IR_OP_ABS, q)));
      gy = gr_un(g, IR_OP_NEGATE, gr_bin(g, IR_OP_MULTIPLY, ct, t));
    }
    break;
  case IR_OP_MAXIMUM:
  case IR_OP_MINIMUM: {
    ir_cmp_dir w = op == IR_OP_MAXIMUM ? IR_CMP_GT : IR_CMP_LT;
    if (gr_wants(g, xi)) gx = choose(g, w, ct, x, y);
    if (gr_wants(g, yi)) gy = choose(g, w, ct, y, x);
    break;
  }
  case IR_OP_POWER: {
    ir_id z = gr_fwd(g, i);
    if (gr_wants(g, xi)) /* y x^(y-1) */
      gx = gr_bin(g, IR_OP_MULTIPLY, ct,
                  gr_bin(g, IR_OP_MULTIPLY, y, gr_bin(g, IR_OP_POWER, x, gr_bin(g, IR_OP_SUBTRACT, y, gr_like(g, y, 1)))));
    if (gr_wants(g, yi)) { /* z log(x), log(0) taken as 0 */
      ir_id safe = gr_select(g, gr_cmp(g, IR_CMP_EQ, x, gr_like(g, x, 0)), gr_like(g, x, 1), x);
      gy = gr_bin(g, IR_OP_MULTIPLY, ct, gr_bin(g, IR_OP_MULTIPLY, z, gr_un(g, IR_OP_LOG, safe)));
    }
    break;
  }
  case IR_OP_ATAN2: { /* atan2(x, y): (y, -x) / (x^2 + y^2) */
    ir_id r = gr_bin(g, IR_OP_ADD, gr_bin(g, IR_OP_MULTIPLY, x, x), gr_bin(g, IR_OP_MULTIPLY, y, y));
    ir_id q = gr_bin(g, IR_OP_DIVIDE, ct, r);
    if (gr_wants(g, xi)) gx = gr_bin(g, IR_OP_MULTIPLY, q, y);
    if (gr_wants(g, yi)) gy = gr_un(g, IR_OP_NEGATE, gr_bin(g, IR_OP_MULTIPLY, q, x));
    break;
  }
  default: base_die("grad: no binary rule for %s", ir_op_name(op));
  }
#undef x
#undef y
  gr_accum(g, xi, gx);
  gr_accum(g, yi, gy);
}

/* x broadcast to the shape of like when x is a scalar and like is not. */
static ir_id widen(gr_ctx *g, ir_id x, ir_id like) {
  if (gr_shape(g, x)->rank == gr_shape(g, like)->rank) return x;
  return gr_broadcast(g, x, gr_shape(g, like), NULL);
}

/* A contribution v to operand o, summed to a scalar when o is one. */
static void accum_narrow(gr_ctx *g, ir_id o, ir_id v) {
  if (gr_wants(g, o)) gr_accum(g, o, gr_shape(g, o)->rank == gr_shape(g, v)->rank ? v : gr_sum_all(g, v));
}

static void ternary(gr_ctx *g, ir_id i, ir_op op, ir_id ct) {
  const ir_inst *in = gr_inst(g, i);
  ir_id a = in->ops[0], b = in->ops[1], c = in->ops[2];
  if (op == IR_OP_SELECT) {
    ir_id p = gr_fwd(g, a);
    if (gr_wants(g, b)) gr_accum(g, b, mask(g, p, ct));
    if (gr_wants(g, c)) gr_accum(g, c, gr_select(g, p, gr_like(g, ct, 0), ct));
    return;
  }
  /* clamp(lo, x, hi) = minimum(maximum(x, lo), hi) */
  ir_id x = gr_fwd(g, b), lo = widen(g, gr_fwd(g, a), x), hi = widen(g, gr_fwd(g, c), x);
  ir_id below = gr_cmp(g, IR_CMP_LE, gr_bin(g, IR_OP_MAXIMUM, x, lo), hi);
  if (gr_wants(g, b)) gr_accum(g, b, mask(g, gr_bin(g, IR_OP_AND, below, gr_cmp(g, IR_CMP_GE, x, lo)), ct));
  if (gr_wants(g, a)) accum_narrow(g, a, mask(g, gr_bin(g, IR_OP_AND, below, gr_cmp(g, IR_CMP_LT, x, lo)), ct));
  if (gr_wants(g, c)) accum_narrow(g, c, mask(g, gr_un(g, IR_OP_NOT, below), ct));
}

bool gr_elementwise(gr_ctx *g, ir_id i, ir_id ct) {
  ir_op op = gr_inst(g, i)->op;
  switch (gr_inst(g, i)->nops) {
  case 1: {
    ir_id xi = gr_inst(g, i)->ops[0];
    gr_accum(g, xi, unary(g, op, ct, xi, i));
    return true;
  }
  case 2: binary(g, i, op, ct); return true;
  default: ternary(g, i, op, ct); return true;
  }
}

/* ---- data movement ---------------------------------------------------- */

static bool rule_broadcast(gr_ctx *g, ir_id i, ir_id ct) {
  const ir_inst *in = gr_inst(g, i);
  ir_id x = in->ops[0];
  const ir_ints d = in->a->dimensions;
  int R = in->shape->rank;
  bool kept[IR_MAX_RANK] = {false};
  for (int k = 0; k < d.n; k++) kept[d.v[k]] = true;
  int64_t sum[IR_MAX_RANK], perm[IR_MAX_RANK];
  int ns = 0;
  for (int r = 0; r < R; r++)
    if (!kept[r]) sum[ns++] = r;
  for (int k = 0; k < d.n; k++) { /* x dim k is the rank of d[k] among d */
    perm[k] = 0;
    for (int j = 0; j < d.n; j++) perm[k] += d.v[j] < d.v[k];
  }
  gr_accum(g, x, gr_transpose(g, gr_sum(g, ct, sum, ns), perm));
  return true;
}

static bool rule_transpose(gr_ctx *g, ir_id i, ir_id ct) {
  const ir_inst *in = gr_inst(g, i);
  int64_t inv[IR_MAX_RANK];
  for (int k = 0; k < in->a->dimensions.n; k++) inv[in->a->dimensions.v[k]] = k;
  gr_accum(g, in->ops[0], gr_transpose(g, ct, inv));
  return true;
}

/* reshape, copy, convert: the adjoint reshaped / converted back. */
static bool rule_identity(gr_ctx *g, ir_id i, ir_id ct) {
  ir_id x = gr_inst(g, i)->ops[0];
  const ir_shape *xs = gr_shape(g, x);
  gr_accum(g, x, gr_reshape(g, gr_convert(g, ct, xs->type), xs));
  return true;
}

static bool rule_slice(gr_ctx *g, ir_id i, ir_id ct) {
  const ir_inst *in = gr_inst(g, i);
  ir_id x = in->ops[0];
  const ir_shape *xs = gr_shape(g, x), *rs = in->shape;
  ir_padding_dim p[IR_MAX_RANK];
  for (int k = 0; k < rs->rank; k++) {
    int64_t n = rs->dims[k], st = in->a->slice_start.v[k], sd = in->a->slice_stride.v[k];
    if (n == 0) return true; /* an empty slice passes nothing back */
    p[k].lo = st;
    p[k].interior = sd - 1;
    p[k].hi = xs->dims[k] - (st + (n - 1) * sd + 1);
  }
  gr_accum(g, x, gr_pad(g, ct, gr_splat(g, &(ir_shape){.type = rs->type}, 0), p));
  return true;
}

/* pad(x, v): x's adjoint is g with the edges undone and every
 * (interior+1)-th element kept; v's is what is left: sum(g) - sum(x's). */
static bool rule_pad(gr_ctx *g, ir_id i, ir_id ct) {
  const ir_inst *in = gr_inst(g, i);
  ir_id x = in->ops[0], v = in->ops[1];
  int r = in->shape->rank;
  ir_padding_dim un[IR_MAX_RANK];
  int64_t start[IR_MAX_RANK], limit[IR_MAX_RANK], stride[IR_MAX_RANK];
  for (int k = 0; k < r; k++) {
    un[k] = (ir_padding_dim){-in->a->padding[k].lo, -in->a->padding[k].hi, 0};
    start[k] = 0;
    stride[k] = in->a->padding[k].interior + 1;
  }
  ir_id u = gr_pad(g, ct, gr_splat(g, &(ir_shape){.type = in->shape->type}, 0), un);
  for (int k = 0; k < r; k++) limit[k] = gr_shape(g, u)->dims[k];
  ir_id gx = gr_slice(g, u, start, limit, stride);
  gr_accum(g, x, gx);
  if (gr_wants(g, v)) gr_accum(g, v, gr_bin(g, IR_OP_SUBTRACT, gr_sum_all(g, ct), gr_sum_all(g, gx)));
  return true;
}

static bool rule_concatenate(gr_ctx *g, ir_id i, ir_id ct) {
  int nops = gr_inst(g, i)->nops, r = gr_shape(g, i)->rank;
  int64_t d = gr_inst(g, i)->a->dimensions.v[0], off = 0;
  for (int k = 0; k < nops; k++) {
    ir_id o = gr_inst(g, i)->ops[k];
    const ir_shape *os = gr_shape(g, o);
    int64_t start[IR_MAX_RANK], limit[IR_MAX_RANK], stride[IR_MAX_RANK];
    for (int j = 0; j < r; j++) {
      start[j] = j == d ? off : 0;
      limit[j] = j == d ? off + os->dims[j] : os->dims[j];
      stride[j] = 1;
    }
    off += os->dims[d];
    if (gr_wants(g, o)) gr_accum(g, o, gr_slice(g, ct, start, limit, stride));
  }
  return true;
}

static bool rule_reverse(gr_ctx *g, ir_id i, ir_id ct) {
  ir_attrs a = *gr_inst(g, i)->a;
  ir_id x = gr_inst(g, i)->ops[0];
  gr_accum(g, x, gr_build(g, IR_OP_REVERSE, &ct, 1, &a));
  return true;
}

/* ---- tuples ----------------------------------------------------------- */

ir_id *gr_tuple_adj(gr_ctx *g, ir_id t) {
  if (!g->adjt[t]) {
    int n = gr_shape(g, t)->ntuple;
    g->adjt[t] = arena_array(g->m->arena, (size_t)(n ? n : 1), sizeof(ir_id));
    for (int k = 0; k < n; k++) g->adjt[t][k] = IR_NONE;
  }
  return g->adjt[t];
}

static bool rule_tuple(gr_ctx *g, ir_id i, ir_id ct) {
  (void)ct;
  for (int k = 0; k < gr_inst(g, i)->nops; k++) {
    ir_id o = gr_inst(g, i)->ops[k], a = g->adjt[i][k];
    if (a == IR_NONE || !gr_wants(g, o)) continue;
    if (gr_shape(g, o)->type == IR_TUPLE) return gr_fail(g, "a gradient through nested tuples is not supported");
    gr_accum(g, o, a);
  }
  return true;
}

static bool rule_gte(gr_ctx *g, ir_id i, ir_id ct) {
  ir_id t = gr_inst(g, i)->ops[0];
  if (gr_shape(g, i)->type == IR_TUPLE) return gr_fail(g, "a gradient through nested tuples is not supported");
  if (!gr_wants(g, t)) return true;
  ir_id *a = gr_tuple_adj(g, t);
  int64_t k = gr_inst(g, i)->a->index;
  a[k] = a[k] == IR_NONE ? ct : gr_bin(g, IR_OP_ADD, a[k], ct);
  return true;
}

/* An op that passes its operand through (opt-barrier, domain,
 * add-dependency's operand 0): the adjoint goes back as it is, element by
 * element for a tuple. */
static bool rule_pass_through(gr_ctx *g, ir_id i, ir_id ct) {
  ir_id x = gr_inst(g, i)->ops[0];
  if (gr_shape(g, x)->type != IR_TUPLE) {
    gr_accum(g, x, ct);
    return true;
  }
  if (!g->adjt[i] || !gr_wants(g, x)) return true;
  ir_id *a = gr_tuple_adj(g, x);
  for (int k = 0; k < gr_shape(g, x)->ntuple; k++) {
    ir_id c = g->adjt[i][k];
    if (c == IR_NONE) continue;
    if (gr_shape(g, x)->tuple[k].type == IR_TUPLE) return gr_fail(g, "a gradient through nested tuples is not supported");
    a[k] = a[k] == IR_NONE ? c : gr_bin(g, IR_OP_ADD, a[k], c);
  }
  return true;
}

/* The same op, with the same attributes, applied to the adjoint:
 * reduce-precision to 7 or more mantissa bits (as jax: the rounding of the
 * cotangent, the straight-through gradient that precision emulation wants,
 * as convert gives) and an all-reduce that sums (its transpose is itself). */
static bool rule_same_op(gr_ctx *g, ir_id i, ir_id ct) {
  const ir_inst *in = gr_inst(g, i);
  if (in->nops != 1 || in->shape->type == IR_TUPLE)
    return gr_fail(g, "a gradient through a tuple-shaped %s is not supported", ir_op_name(in->op));
  if (in->op == IR_OP_ALL_REDUCE && gr_reducer_op(g->m, in->calls[0]) != IR_OP_ADD)
    return gr_fail(g, "a gradient through an all-reduce that does not add is not supported");
  int64_t mb = 0;
  if (in->op == IR_OP_REDUCE_PRECISION && (!ir_raw_int(in, "mantissa_bits", &mb) || mb < 7))
    return gr_fail(g, "rounding to %lld mantissa bits has steps wider than a gradient can pass through: "
                      "the straight-through gradient is given from 7 bits (bfloat16) up",
                   (long long)mb);
  ir_id x = in->ops[0];
  ir_inst_proto p = ir_inst_proto_of(in);
  p.name = ir_unique_name(g->m, in->info->name ? in->info->name : ir_op_name(in->op));
  p.ops = &ct;
  p.loc = g->loc;
  gr_accum(g, x, ir_inst_add(g->m, g->c, &p));
  return true;
}

/* ---- the table -------------------------------------------------------- */

typedef struct row {
  pass_grad_kind kind;
  gr_rule_fn fn;
  const char *why;
} row;

#define RULE(op, f) [IR_OP_##op] = {PASS_GRAD_RULE, f, NULL}
#define ZERO(op) [IR_OP_##op] = {PASS_GRAD_ZERO, NULL, NULL}
#define NONE(op, why) [IR_OP_##op] = {PASS_GRAD_NONE, NULL, why}
#define EFFECT "a collective, I/O or side effect has no gradient here"
#define LATER "no rule in the gradient table yet"
#define INLINED "only a fusion or call of one computation is differentiated (inlined first)"

static const row rows[IR_OP__COUNT] = {
    ZERO(PARAMETER), ZERO(CONSTANT), ZERO(IOTA),
    RULE(BROADCAST, rule_broadcast), RULE(RESHAPE, rule_identity), RULE(TRANSPOSE, rule_transpose),
    RULE(SLICE, rule_slice), RULE(CONCATENATE, rule_concatenate), RULE(PAD, rule_pad),
    RULE(REVERSE, rule_reverse), RULE(CONVERT, rule_identity),
    NONE(BITCAST_CONVERT, "reinterpreting bits is not differentiable"), RULE(COPY, rule_identity),
    RULE(ABS, gr_elementwise), RULE(NEGATE, gr_elementwise), RULE(EXP, gr_elementwise),
    RULE(EXPM1, gr_elementwise), RULE(LOG, gr_elementwise), RULE(LOG1P, gr_elementwise),
    RULE(SQRT, gr_elementwise), RULE(RSQRT, gr_elementwise), RULE(CBRT, gr_elementwise),
    RULE(TANH, gr_elementwise), RULE(LOGISTIC, gr_elementwise), RULE(SINE, gr_elementwise),
    RULE(COSINE, gr_elementwise), ZERO(FLOOR), ZERO(CEIL), ZERO(ROUND_AFZ), ZERO(ROUND_EVEN),
    ZERO(SIGN), ZERO(IS_FINITE), ZERO(NOT), ZERO(POPCNT), ZERO(CLZ),
    RULE(ADD, gr_elementwise), RULE(SUBTRACT, gr_elementwise), RULE(MULTIPLY, gr_elementwise),
    RULE(DIVIDE, gr_elementwise), RULE(REMAINDER, gr_elementwise), RULE(MAXIMUM, gr_elementwise),
    RULE(MINIMUM, gr_elementwise), RULE(POWER, gr_elementwise), RULE(ATAN2, gr_elementwise),
    ZERO(AND), ZERO(OR), ZERO(XOR), ZERO(SHL), ZERO(SHR_A), ZERO(SHR_L), ZERO(COMPARE),
    RULE(SELECT, gr_elementwise), RULE(CLAMP, gr_elementwise),
    RULE(DOT, gr_dot), RULE(CONVOLUTION, gr_convolution),
    RULE(REDUCE, gr_reduce), RULE(REDUCE_WINDOW, gr_reduce_window),
    RULE(ALL_REDUCE, rule_same_op),
    RULE(TUPLE, rule_tuple), RULE(GET_TUPLE_ELEMENT, rule_gte), NONE(FUSION, INLINED),
    NONE(CALL, INLINED), RULE(WHILE, gr_while), RULE(CONDITIONAL, gr_conditional), NONE(MAP, LATER),
    RULE(SORT, gr_sort), NONE(SCAN, LATER), RULE(TOPK, gr_topk), RULE(GATHER, gr_gather), RULE(SCATTER, gr_scatter),
    RULE(SELECT_AND_SCATTER, gr_select_and_scatter), RULE(DYNAMIC_SLICE, gr_dynamic_slice), RULE(DYNAMIC_UPDATE_SLICE, gr_dynamic_update_slice),
    NONE(DYNAMIC_RESHAPE, LATER), NONE(BITCAST, "reinterpreting bytes is not differentiable"),
    RULE(REDUCE_PRECISION, rule_same_op), NONE(STOCHASTIC_CONVERT, "random rounding has no gradient"),
    RULE(TAN, gr_elementwise), RULE(ACOS, gr_elementwise), RULE(ACOSH, gr_elementwise),
    RULE(ASIN, gr_elementwise), RULE(ASINH, gr_elementwise), RULE(ATAN, gr_elementwise),
    RULE(ATANH, gr_elementwise), RULE(SINH, gr_elementwise), RULE(COSH, gr_elementwise),
    RULE(ERF, gr_elementwise),
    NONE(REAL, "complex numbers are not differentiated"), NONE(IMAG, "complex numbers are not differentiated"),
    NONE(COMPLEX, "complex numbers are not differentiated"), ZERO(MULHI), NONE(SHUFFLE, LATER),
    NONE(RAGGED_DOT, LATER), NONE(SCALED_DOT, LATER), NONE(CUSTOM_CALL, "an opaque custom call has no gradient"),
    NONE(ALL_GATHER, EFFECT), NONE(ALL_TO_ALL, EFFECT), NONE(RAGGED_ALL_TO_ALL, EFFECT),
    NONE(REDUCE_SCATTER, EFFECT), NONE(COLLECTIVE_PERMUTE, EFFECT), NONE(COLLECTIVE_BROADCAST, EFFECT),
    NONE(ALL_REDUCE_START, EFFECT), NONE(ALL_REDUCE_DONE, EFFECT), NONE(ALL_GATHER_START, EFFECT),
    NONE(ALL_GATHER_DONE, EFFECT), NONE(COLLECTIVE_PERMUTE_START, EFFECT),
    NONE(COLLECTIVE_PERMUTE_DONE, EFFECT), NONE(ASYNC_START, EFFECT), NONE(ASYNC_UPDATE, EFFECT),
    NONE(ASYNC_DONE, EFFECT), NONE(COPY_START, EFFECT), NONE(COPY_DONE, EFFECT), NONE(SEND, EFFECT),
    NONE(SEND_DONE, EFFECT), NONE(RECV, EFFECT), NONE(RECV_DONE, EFFECT), NONE(INFEED, EFFECT),
    NONE(OUTFEED, EFFECT), ZERO(AFTER_ALL), RULE(ADD_DEPENDENCY, rule_pass_through), RULE(OPT_BARRIER, rule_pass_through),
    RULE(DOMAIN, rule_pass_through), ZERO(REPLICA_ID), ZERO(PARTITION_ID), ZERO(RNG),
    ZERO(RNG_BIT_GENERATOR), ZERO(RNG_GET_AND_UPDATE_STATE), ZERO(GET_DIMENSION_SIZE),
    NONE(SET_DIMENSION_SIZE, LATER), NONE(BATCH_NORM_TRAINING, LATER),
    NONE(BATCH_NORM_INFERENCE, LATER), NONE(BATCH_NORM_GRAD, LATER), NONE(CHOLESKY, LATER),
    NONE(TRIANGULAR_SOLVE, LATER), NONE(FFT, LATER),
};

pass_grad_kind pass_grad_kind_of(ir_op op) {
  return (unsigned)op < IR_OP__COUNT ? rows[op].kind : PASS_GRAD_UNSET;
}

const char *pass_grad_why_none(ir_op op) {
  return (unsigned)op < IR_OP__COUNT && rows[op].why ? rows[op].why : "no rule";
}

gr_rule_fn gr_rule_of(ir_op op) { return rows[op].fn; }
