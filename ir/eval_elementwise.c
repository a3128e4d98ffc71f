/* eval_elementwise.c: elementwise ops (unary, binary, compare, select,
 * clamp) and element type changes (convert, bitcast-convert).
 *
 * Operands have the result's dims, or are scalars (rank 0) that stand for
 * every element (select's predicate and clamp's bounds may be scalars in
 * XLA; the evaluator accepts a scalar for any operand). The per-element
 * semantics are those of eval_scalar.c. */
#include "ir/eval_internal.h"

/* Checks operand k: same dims as the result, or a scalar. */
static base_status check_operand(ev_ctx *cx, const ir_inst *in, const ir_literal *v, int k) {
  if (v->shape.rank == 0 || ev_dims_equal(&v->shape, in->shape)) return ST_OK;
  strbuf a, b;
  sb_init(&a);
  sb_init(&b);
  ir_shape_print(&a, &v->shape, false);
  ir_shape_print(&b, in->shape, false);
  base_status st = ev_fail(cx, in, ST_INVALID_ARGUMENT,
                           "operand %d is %s, which is neither a scalar nor the result's dims (%s)",
                           k, sb_str(&a), sb_str(&b));
  sb_free(&a);
  sb_free(&b);
  return st;
}

static base_status check_type(ev_ctx *cx, const ir_inst *in, const ir_literal *v, int k,
                              ir_type t) {
  if (v->shape.type == t) return ST_OK;
  return ev_fail(cx, in, ST_INVALID_ARGUMENT, "operand %d has type %s, expected %s", k,
                 ir_type_name(v->shape.type), ir_type_name(t));
}

static base_status undefined_on(ev_ctx *cx, const ir_inst *in, ir_type t) {
  return ev_fail(cx, in, ST_INVALID_ARGUMENT, "%s is not defined on %s", ir_op_name(in->op),
                 ir_type_name(t));
}

/* Clamp of one element: NaN bounds or value propagate (lower bound first,
 * then value, then upper bound, as XLA); else min(hi, max(x, lo)) with the
 * first operand winning ties. */
static void clamp_elem(ir_type t, const void *lo, const void *x, const void *hi, void *out) {
  if (ir_type_is_float(t)) { /* every float type widens exactly to double */
    double l = ev_load_d(t, lo), v = ev_load_d(t, x), h = ev_load_d(t, hi);
    const void *r; /* one of the inputs */
    if (isnan(l))
      r = lo;
    else if (isnan(v))
      r = x;
    else if (isnan(h))
      r = hi;
    else {
      const void *m = v < l ? lo : x;
      r = h < (v < l ? l : v) ? hi : m;
    }
    if (t == IR_F32 || t == IR_F64)
      memcpy(out, r, (size_t)ir_type_size(t));
    else /* bf16, f16: stored through f32 as every op's result (a NaN quieted) */
      ev_store_f(t, out, ev_load_f(t, r));
    return;
  }
  int64_t l = ev_load_i(t, lo), v = ev_load_i(t, x), h = ev_load_i(t, hi);
  int64_t m = ev_int_lt(t, v, l) ? l : v;
  ev_store_i(t, out, ev_int_lt(t, h, m) ? h : m);
}

base_status ev_elementwise(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops,
                           ir_literal **out) {
  unsigned fl = ir_op_flags(in->op);
  int nops = fl & OPF_UNARY ? 1 : fl & OPF_BINARY ? 2 : 3;
  base_status st;
  for (int k = 0; k < nops; k++)
    if ((st = check_operand(cx, in, ops[k], k)) != ST_OK) return st;

  ir_type rt = in->shape->type;
  /* The type the op computes in: the data operand's. */
  ir_type t = in->op == IR_OP_SELECT ? ops[1]->shape.type : ops[0]->shape.type;
  ir_type want_rt = in->op == IR_OP_COMPARE || in->op == IR_OP_IS_FINITE ? IR_PRED : t;
  if (rt != want_rt)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "result type %s, expected %s", ir_type_name(rt),
                   ir_type_name(want_rt));
  if (in->op == IR_OP_SELECT) {
    if ((st = check_type(cx, in, ops[0], 0, IR_PRED)) != ST_OK) return st;
    if ((st = check_type(cx, in, ops[2], 2, t)) != ST_OK) return st;
  } else {
    for (int k = 1; k < nops; k++)
      if ((st = check_type(cx, in, ops[k], k, t)) != ST_OK) return st;
  }

  ir_literal *r;
  if ((st = ev_new_array(cx, in, in->shape, &r)) != ST_OK) return st;
  int64_t n = ir_shape_count(in->shape);
  size_t es = (size_t)ir_type_size(t), rs = (size_t)ir_type_size(rt);
  /* Byte step per element of each operand: 0 for a broadcast scalar. */
  size_t step[3];
  const uint8_t *p[3];
  for (int k = 0; k < nops; k++) {
    step[k] = ops[k]->shape.rank == 0 ? 0 : (size_t)ir_type_size(ops[k]->shape.type);
    p[k] = ops[k]->data;
  }
  uint8_t *o = r->data;
  for (int64_t i = 0; i < n; i++, o += rs) {
    const uint8_t *a = p[0] + (size_t)i * step[0];
    const uint8_t *b = nops > 1 ? p[1] + (size_t)i * step[1] : NULL;
    const uint8_t *c = nops > 2 ? p[2] + (size_t)i * step[2] : NULL;
    switch (in->op) {
    case IR_OP_COMPARE:
      *o = ev_compare_elem(in->a->cmp_dir, in->a->cmp_type, t, a, b);
      break;
    case IR_OP_SELECT:
      memcpy(o, *a ? b : c, es);
      if (cx->opts.tpu_numerics && t == IR_BF16) { /* the vector unit's vrndbf/vsth */
        uint16_t h;
        memcpy(&h, o, 2);
        if ((h & 0x7F80) == 0x7F80 && (h & 0x7F)) h |= 0x40; /* a NaN leaves quiet */
        memcpy(o, &h, 2);
      }
      break;
    case IR_OP_CLAMP:
      if (cx->opts.tpu_numerics) {
        const void *abc[3] = {a, b, c};
        if (ev_tpu_elem(in->op, t, 3, abc, o)) break;
      }
      clamp_elem(t, a, b, c, o);
      break;
    default:
      if (cx->opts.tpu_numerics) {
        const void *abc[3] = {a, b, c};
        if (ev_tpu_elem(in->op, t, nops, abc, o)) break;
      }
      if (nops == 1 ? !ev_unary_elem(in->op, t, a, o) : !ev_binary_elem(in->op, t, a, b, o))
        return undefined_on(cx, in, t);
      break;
    }
  }
  if (n == 0 && in->op != IR_OP_COMPARE && in->op != IR_OP_SELECT && in->op != IR_OP_CLAMP) {
    /* still reject ops undefined on the type when there are no elements */
    uint8_t z[8] = {0}, zo[8];
    if (nops == 1 ? !ev_unary_elem(in->op, t, z, zo) : !ev_binary_elem(in->op, t, z, z, zo))
      return undefined_on(cx, in, t);
  }
  *out = r;
  return ST_OK;
}

base_status ev_convert_to(ev_ctx *cx, const ir_inst *in, const ir_literal *a, ir_type t,
                          ir_literal **out) {
  ir_shape s = ir_shape_array(t, a->shape.rank, a->shape.dims);
  ir_literal *r;
  base_status st = ev_new_array(cx, in, &s, &r);
  if (st != ST_OK) return st;
  int64_t n = ir_shape_count(&s);
  size_t ie = (size_t)ir_type_size(a->shape.type), oe = (size_t)ir_type_size(t);
  const uint8_t *p = a->data;
  uint8_t *o = r->data;
  for (int64_t i = 0; i < n; i++)
    if (!cx->opts.tpu_numerics ||
        !ev_tpu_convert(a->shape.type, p + (size_t)i * ie, t, o + (size_t)i * oe))
      ev_convert_elem(a->shape.type, p + (size_t)i * ie, t, o + (size_t)i * oe);
  *out = r;
  return ST_OK;
}

base_status ev_convert(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  if (!ev_dims_equal(&ops[0]->shape, in->shape))
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "operand dims differ from the result's");
  return ev_convert_to(cx, in, ops[0], in->shape->type, out);
}

/* bitcast-convert: the same bytes reinterpreted. Between types of equal
 * width the dims are equal; between different widths XLA adds or drops a
 * minor dimension, which in row-major little-endian order is again the
 * same bytes, so the only requirement is equal byte size. A pred result is
 * normalised to 0/1 (nonzero bytes are true). */
base_status ev_bitcast_convert(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops,
                               ir_literal **out) {
  ir_literal *r;
  base_status st = ev_new_array(cx, in, in->shape, &r);
  if (st != ST_OK) return st;
  if (r->nbytes != ops[0]->nbytes)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "operand has %zu bytes, result %zu", ops[0]->nbytes,
                   r->nbytes);
  if (r->nbytes) memcpy(r->data, ops[0]->data, r->nbytes);
  if (in->shape->type == IR_PRED)
    for (size_t i = 0; i < r->nbytes; i++)
      ((uint8_t *)r->data)[i] = ((uint8_t *)r->data)[i] != 0;
  *out = r;
  return ST_OK;
}
