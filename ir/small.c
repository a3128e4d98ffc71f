/* small.c: the small ops that keep their written shape (OPF_DECLARED |
 * OPF_RUNS in ops.def) yet run on every target: bitcast, reduce-precision,
 * opt-barrier, domain, after-all, add-dependency, copy-start/copy-done,
 * async-start/async-update/async-done and get-dimension-size. Their
 * attributes stay verbatim (ir_raw_attr); this file reads the ones that
 * carry meaning and checks each written shape against the operands, for
 * the verifier. The semantics:
 *
 *   bitcast              the operand's bytes (row-major, little endian) as
 *                        the result's shape; equal byte sizes
 *   reduce-precision     each float rounded to exponent_bits/mantissa_bits
 *                        as XLA does (ir_reduce_precision)
 *   opt-barrier, domain  the operand
 *   add-dependency       operand 0 (operand 1 is a token)
 *   after-all            a token (no bytes)
 *   copy-start           (operand, operand, context...); copy-done: element 0
 *   async-start          ((operands...), to_apply(operands), context...);
 *                        async-update: the operand; async-done: element 1
 *   get-dimension-size   s32: the static size of operand dimension
 *                        dimensions={d}
 * Context elements (u32/s32 scalars) are zero. */
#include "ir/ir.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

bool ir_raw_int(const ir_inst *in, const char *name, int64_t *out) {
  for (int i = 0; i < in->info->nraw; i++) {
    const ir_raw_attr *r = &in->info->raw[i];
    if (!r->name || !r->text || strcmp(r->name, name) != 0) continue;
    const char *t = r->text;
    bool braced = *t == '{';
    if (braced) t++;
    char *end;
    errno = 0;
    long long v = strtoll(t, &end, 10);
    if (end == t || errno) return false;
    if (braced && strcmp(end, "}") != 0) return false;
    if (!braced && *end) return false;
    *out = v;
    return true;
  }
  return false;
}

static bool fail(char *err, size_t n, const char *fmt, const char *what) {
  snprintf(err, n, fmt, what);
  return false;
}

/* The shape of operand k of in. */
static const ir_shape *opnd(const ir_comp *c, const ir_inst *in, int k) {
  return c->insts.v[in->ops[k]].shape;
}

static bool check_reduce_precision(const ir_comp *c, const ir_inst *in, char *err, size_t n) {
  const ir_shape *o = opnd(c, in, 0);
  int64_t e, m;
  if (!ir_type_is_float(o->type)) return fail(err, n, "operand must be a float array, not %s", ir_type_name(o->type));
  if (!ir_shape_equal(o, in->shape)) return fail(err, n, "%s", "result shape differs from the operand's");
  if (!ir_raw_int(in, "exponent_bits", &e) || e < 1 || e > 30)
    return fail(err, n, "%s", "needs exponent_bits=N with 1 <= N <= 30");
  if (!ir_raw_int(in, "mantissa_bits", &m) || m < 0 || m > 62)
    return fail(err, n, "%s", "needs mantissa_bits=N with 0 <= N <= 62");
  return true;
}

static bool check_bitcast(const ir_comp *c, const ir_inst *in, char *err, size_t n) {
  const ir_shape *o = opnd(c, in, 0), *r = in->shape;
  if (o->type == IR_TUPLE || r->type == IR_TUPLE)
    return fail(err, n, "%s", "operand and result must be arrays");
  int64_t no, nr;
  if (!ir_shape_elements(o, &no) || !ir_shape_elements(r, &nr)) return fail(err, n, "%s", "too large");
  if ((double)no * ir_type_size(o->type) != (double)nr * ir_type_size(r->type)) {
    snprintf(err, n, "%lld bytes of %s cannot be %lld bytes of %s", (long long)no * ir_type_size(o->type),
             ir_type_name(o->type), (long long)nr * ir_type_size(r->type), ir_type_name(r->type));
    return false;
  }
  return true;
}

/* A tuple shape with at least two elements whose first two are a and b. */
static bool start_tuple(const ir_shape *s, const ir_shape *a, const ir_shape *b) {
  return s->type == IR_TUPLE && s->ntuple >= 2 && (!a || ir_shape_equal(&s->tuple[0], a)) &&
         ir_shape_equal(&s->tuple[1], b);
}

static bool check_async_start(const ir_module *m, const ir_comp *c, const ir_inst *in, char *err,
                              size_t n) {
  if (in->ncalls != 1 || in->calls[0] < 0 || in->calls[0] >= m->comps.n)
    return fail(err, n, "%s", "needs one called computation (calls=)");
  const ir_comp *cc = &m->comps.v[in->calls[0]];
  if (cc->root < 0 || cc->nparams != in->nops)
    return fail(err, n, "%s", "the called computation's parameters do not match the operands");
  for (int k = 0; k < in->nops; k++)
    if (cc->params[k] < 0 || !ir_shape_equal(cc->insts.v[cc->params[k]].shape, opnd(c, in, k)))
      return fail(err, n, "%s", "the called computation's parameters do not match the operands");
  const ir_shape *s = in->shape;
  if (!start_tuple(s, NULL, cc->insts.v[cc->root].shape))
    return fail(err, n, "%s", "result must be ((operands...), the computation's result, context...)");
  const ir_shape *ops = &s->tuple[0];
  if (ops->type != IR_TUPLE || ops->ntuple != in->nops)
    return fail(err, n, "%s", "result element 0 must be the tuple of the operands");
  for (int k = 0; k < in->nops; k++)
    if (!ir_shape_equal(&ops->tuple[k], opnd(c, in, k)))
      return fail(err, n, "%s", "result element 0 must be the tuple of the operands");
  return true;
}

bool ir_small_check(const ir_module *m, const ir_comp *c, const ir_inst *in, char *err, size_t n) {
  const ir_shape *r = in->shape;
  switch (in->op) {
  case IR_OP_REDUCE_PRECISION: return check_reduce_precision(c, in, err, n);
  case IR_OP_BITCAST: return check_bitcast(c, in, err, n);
  case IR_OP_OPT_BARRIER:
  case IR_OP_DOMAIN:
  case IR_OP_ASYNC_UPDATE:
    return ir_shape_equal(opnd(c, in, 0), r) || fail(err, n, "%s", "result shape differs from the operand's");
  case IR_OP_ADD_DEPENDENCY:
    if (opnd(c, in, 1)->type != IR_TOKEN) return fail(err, n, "%s", "operand 1 must be a token");
    return ir_shape_equal(opnd(c, in, 0), r) || fail(err, n, "%s", "result shape differs from operand 0's");
  case IR_OP_AFTER_ALL:
    return (r->type == IR_TOKEN && r->rank == 0) || fail(err, n, "%s", "result must be token[]");
  case IR_OP_COPY_START:
    return start_tuple(r, opnd(c, in, 0), opnd(c, in, 0)) ||
           fail(err, n, "%s", "result must be (operand, operand, context...)");
  case IR_OP_COPY_DONE:
    return start_tuple(opnd(c, in, 0), r, opnd(c, in, 0)->type == IR_TUPLE &&
                                              opnd(c, in, 0)->ntuple >= 2
                                              ? &opnd(c, in, 0)->tuple[1] : r) ||
           fail(err, n, "%s", "operand must be a copy-start's (value, value, context...)");
  case IR_OP_ASYNC_START: return check_async_start(m, c, in, err, n);
  case IR_OP_ASYNC_DONE: {
    const ir_shape *o = opnd(c, in, 0);
    return (o->type == IR_TUPLE && o->ntuple >= 2 && ir_shape_equal(&o->tuple[1], r)) ||
           fail(err, n, "%s", "result must be element 1 of the async-start's value");
  }
  case IR_OP_GET_DIMENSION_SIZE: {
    int64_t d;
    const ir_shape *o = opnd(c, in, 0);
    if (!ir_raw_int(in, "dimensions", &d) || o->type == IR_TUPLE || d < 0 || d >= o->rank)
      return fail(err, n, "%s", "needs dimensions={d} naming a dimension of the operand");
    return (r->type == IR_S32 && r->rank == 0) || fail(err, n, "%s", "result must be s32[]");
  }
  default: return true;
  }
}

/* XLA's ReducePrecision on the bits u of a float with mb mantissa and eb
 * exponent bits: round the mantissa to mantissa_bits, to nearest even (the
 * carry may reach the exponent), then send exponents above the reduced
 * range to signed infinity and those at or below its smallest normal
 * exponent minus one to signed zero (no subnormals). */
static uint64_t reduce_bits(uint64_t u, int mb, int eb, int exponent_bits, int mantissa_bits) {
  uint64_t sign = (uint64_t)1 << (mb + eb);
  if (mantissa_bits < mb) {
    int drop = mb - mantissa_bits;
    uint64_t last = (uint64_t)1 << drop;
    uint64_t bias = (last >> 1) - 1 + ((u >> drop) & 1);
    u = (u + bias) & ~(last - 1);
  }
  if (exponent_bits < eb) {
    uint64_t exp_mask = (((uint64_t)1 << eb) - 1) << mb;
    uint64_t bias = ((uint64_t)1 << (eb - 1)) - 1, rbias = ((uint64_t)1 << (exponent_bits - 1)) - 1;
    uint64_t e = u & exp_mask;
    if (e > (bias + rbias) << mb) u = (u & sign) | exp_mask;
    else if (e <= (bias - rbias) << mb) u = u & sign;
  }
  return u;
}

double ir_reduce_precision(double x, int exponent_bits, int mantissa_bits, ir_type t) {
  if (isnan(x)) return mantissa_bits > 0 ? x : INFINITY; /* as XLA */
  if (t == IR_F64) {
    uint64_t u;
    memcpy(&u, &x, 8);
    u = reduce_bits(u, 52, 11, exponent_bits, mantissa_bits);
    memcpy(&x, &u, 8);
    return x;
  }
  float f = (float)x; /* bf16, f16 and f32 values are exact in f32 */
  uint32_t w;
  memcpy(&w, &f, 4);
  w = (uint32_t)reduce_bits(w, 23, 8, exponent_bits, mantissa_bits);
  memcpy(&f, &w, 4);
  return f;
}
