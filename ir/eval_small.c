/* eval_small.c: the small declared ops (OPF_RUNS in ops.def; semantics in
 * ir/small.c): bitcast, reduce-precision, the pass-through ops
 * (opt-barrier, domain, add-dependency, async-update), tokens
 * (after-all), copy-start/copy-done, async-start/async-done and
 * get-dimension-size. The verifier has checked each written shape; the
 * facts memory safety needs are checked again here. Values are shared
 * where the op moves no data. */
#include "ir/eval_internal.h"

static base_status reduce_precision(ev_ctx *cx, const ir_inst *in, const ir_literal *a,
                                    ir_literal **out) {
  int64_t e, m;
  if (!ir_raw_int(in, "exponent_bits", &e) || !ir_raw_int(in, "mantissa_bits", &m) || e < 1 ||
      e > 30 || m < 0 || m > 62 || !ir_type_is_float(a->shape.type) ||
      !ev_dims_equal(&a->shape, in->shape) || a->shape.type != in->shape->type)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "malformed reduce-precision");
  ir_literal *r;
  base_status st = ev_new_array(cx, in, in->shape, &r);
  if (st != ST_OK) return st;
  ir_type t = a->shape.type;
  size_t es = (size_t)ir_type_size(t);
  int64_t n = ir_shape_count(in->shape);
  for (int64_t i = 0; i < n; i++) {
    const uint8_t *p = (const uint8_t *)a->data + (size_t)i * es;
    ev_store_d(t, (uint8_t *)r->data + (size_t)i * es,
               ir_reduce_precision(ev_load_d(t, p), (int)e, (int)m, t));
  }
  *out = r;
  return ST_OK;
}

/* A value of the written shape s: arrays zero, tuples elementwise, with
 * element k of a tuple result taken from fill[k] when given. */
static base_status zeros(ev_ctx *cx, const ir_inst *in, const ir_shape *s, ir_literal **out) {
  if (s->type == IR_TOKEN) {
    ir_literal *t;
    base_status st = ev_alloc(cx, in, (int64_t)sizeof *t, (void **)&t);
    if (st != ST_OK) return st;
    t->shape = *s;
    t->data = t; /* no bytes; any non-NULL pointer */
    t->nbytes = 0;
    *out = t;
    return ST_OK;
  }
  if (s->type != IR_TUPLE) return ev_new_array(cx, in, s, out);
  ir_literal **el;
  base_status st = ev_alloc_array(cx, in, s->ntuple ? s->ntuple : 1, (int64_t)sizeof *el, (void **)&el);
  for (int k = 0; st == ST_OK && k < s->ntuple; k++) st = zeros(cx, in, &s->tuple[k], &el[k]);
  if (st != ST_OK) return st;
  return ev_new_tuple(cx, in, el, s->ntuple, out);
}

/* The start tuple of copy-start/async-start: the written shape with
 * element 0 and 1 replaced by e0 and e1. */
static base_status start_value(ev_ctx *cx, const ir_inst *in, ir_literal *e0, ir_literal *e1,
                               ir_literal **out) {
  const ir_shape *s = in->shape;
  if (s->type != IR_TUPLE || s->ntuple < 2)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "result must be a tuple of two or more");
  ir_literal *z;
  base_status st = zeros(cx, in, s, &z);
  if (st != ST_OK) return st;
  z->elems[0] = e0;
  z->elems[1] = e1;
  *out = z;
  return ST_OK;
}

/* Element k of a tuple value. */
static base_status element(ev_ctx *cx, const ir_inst *in, const ir_literal *t, int k,
                           ir_literal **out) {
  if (t->shape.type != IR_TUPLE || t->shape.ntuple <= k)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "operand is not a tuple of %d or more", k + 1);
  *out = t->elems[k];
  return ST_OK;
}

static base_status async_start(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops,
                               ir_literal **out) {
  if (in->ncalls != 1) return ev_fail(cx, in, ST_INVALID_ARGUMENT, "needs one called computation");
  ir_literal *res, *args;
  base_status st = ev_call(cx, in, in->calls[0], ops, in->nops, &res);
  if (st == ST_OK) st = ev_new_tuple(cx, in, (ir_literal **)ops, in->nops, &args);
  if (st != ST_OK) return st;
  return start_value(cx, in, args, res, out);
}

base_status ev_small(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  /* The variadic ones but after-all and async-start read operand 0. */
  if (in->nops < 1 && in->op != IR_OP_AFTER_ALL && in->op != IR_OP_ASYNC_START)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "needs an operand");
  switch (in->op) {
  case IR_OP_BITCAST:
    return ev_bitcast_convert(cx, in, ops, out);
  case IR_OP_REDUCE_PRECISION:
    return reduce_precision(cx, in, ops[0], out);
  case IR_OP_OPT_BARRIER:
  case IR_OP_DOMAIN:
  case IR_OP_ADD_DEPENDENCY:
  case IR_OP_ASYNC_UPDATE:
    *out = ops[0];
    return ST_OK;
  case IR_OP_AFTER_ALL:
    return zeros(cx, in, in->shape, out);
  case IR_OP_COPY_START:
    return start_value(cx, in, ops[0], ops[0], out);
  case IR_OP_COPY_DONE:
    return element(cx, in, ops[0], 0, out);
  case IR_OP_ASYNC_START:
    return async_start(cx, in, ops, out);
  case IR_OP_ASYNC_DONE:
    return element(cx, in, ops[0], 1, out);
  case IR_OP_GET_DIMENSION_SIZE: {
    int64_t d;
    if (!ir_raw_int(in, "dimensions", &d) || d < 0 || d >= ops[0]->shape.rank ||
        in->shape->type != IR_S32 || in->shape->rank != 0)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "malformed get-dimension-size");
    ir_literal *r;
    base_status st = ev_new_array(cx, in, in->shape, &r);
    if (st != ST_OK) return st;
    ev_store_i(IR_S32, r->data, ops[0]->shape.dims[d]);
    *out = r;
    return ST_OK;
  }
  default:
    return ev_fail(cx, in, ST_UNSUPPORTED, "no semantics");
  }
}
