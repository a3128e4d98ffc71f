/* eval_custom_call.c: the evaluator's custom-call (ir.h, "custom-call"). A
 * host function receives the array leaves of the operands, depth-first, and
 * fills fresh zeroed arrays for the leaves of the declared result shape;
 * the result is those arrays (a tuple when the shape is one). */
#include "ir/eval_internal.h"

/* Appends the array leaves of l to v (room for max); false past max. */
static bool leaves(ir_literal *l, ir_literal **v, int *n, int max) {
  if (l->shape.type != IR_TUPLE) {
    if (*n >= max) return false;
    v[(*n)++] = l;
    return true;
  }
  for (int i = 0; i < l->shape.ntuple; i++)
    if (!leaves(l->elems[i], v, n, max)) return false;
  return true;
}

static int leaf_count(const ir_shape *s) {
  if (s->type != IR_TUPLE) return 1;
  int n = 0;
  for (int i = 0; i < s->ntuple; i++) n += leaf_count(&s->tuple[i]);
  return n;
}

/* A zeroed literal of shape s (tuples built of fresh arrays). */
static base_status new_value(ev_ctx *cx, const ir_inst *in, const ir_shape *s, ir_literal **out) {
  if (s->type != IR_TUPLE) return ev_new_array(cx, in, s, out);
  ir_literal **el = NULL;
  base_status st = ev_alloc_array(cx, in, s->ntuple ? s->ntuple : 1, (int64_t)sizeof *el, (void **)&el);
  for (int i = 0; st == ST_OK && i < s->ntuple; i++) st = new_value(cx, in, &s->tuple[i], &el[i]);
  return st == ST_OK ? ev_new_tuple(cx, in, el, s->ntuple, out) : st;
}

static void to_buffer(ir_literal *l, ir_ffi_buffer *b) {
  b->type = l->shape.type;
  b->rank = l->shape.rank;
  b->dims = l->shape.dims;
  b->data = l->data;
  b->nbytes = l->nbytes;
}

static base_status call_host(ev_ctx *cx, const ir_inst *in, const ir_ffi_entry *fe,
                             ir_literal **ops, ir_literal **out) {
  int nin = 0, nres = leaf_count(in->shape);
  for (int k = 0; k < in->nops; k++) nin += leaf_count(&ops[k]->shape);
  ir_literal **inl = NULL, **resl = NULL, *res = NULL;
  ir_ffi_buffer *inb = NULL, *resb = NULL;
  base_status st = ev_alloc_array(cx, in, nin + 1, (int64_t)sizeof *inl, (void **)&inl);
  if (st == ST_OK) st = ev_alloc_array(cx, in, nres + 1, (int64_t)sizeof *resl, (void **)&resl);
  if (st == ST_OK) st = ev_alloc_array(cx, in, nin + 1, (int64_t)sizeof *inb, (void **)&inb);
  if (st == ST_OK) st = ev_alloc_array(cx, in, nres + 1, (int64_t)sizeof *resb, (void **)&resb);
  if (st == ST_OK) st = new_value(cx, in, in->shape, &res);
  if (st != ST_OK) return st;
  int n = 0;
  for (int k = 0; k < in->nops; k++) leaves(ops[k], inl, &n, nin);
  n = 0;
  leaves(res, resl, &n, nres);
  for (int i = 0; i < nin; i++) to_buffer(inl[i], &inb[i]);
  for (int i = 0; i < nres; i++) to_buffer(resl[i], &resb[i]);
  char msg[512] = "";
  const char *config = ir_custom_call_config(in, cx->scratch);
  if (fe->fn(fe->user, inb, nin, resb, nres, config, msg, sizeof msg) != 0)
    return ev_fail(cx, in, ST_INTERNAL, "custom-call target '%s' failed: %s", fe->target,
                   msg[0] ? msg : "(no message)");
  *out = res;
  return ST_OK;
}

base_status ev_custom_call(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  char name[256];
  if (!ir_custom_call_target(in, name, sizeof name)) name[0] = 0;
  switch (ir_custom_call_kind(in, cx->opts.ffi)) {
  case IR_CC_IDENTITY:
    if (in->nops != 1 || !ir_shape_equal(&ops[0]->shape, in->shape))
      return ev_fail(cx, in, ST_INVALID_ARGUMENT,
                     "custom-call '%s' is the identity: it takes one operand of its result's shape",
                     name);
    *out = ops[0];
    return ST_OK;
  case IR_CC_HOST:
    return call_host(cx, in, ir_ffi_find(cx->opts.ffi, name), (ir_literal **)ops, out);
  default:
    return ev_fail(cx, in, ST_UNSUPPORTED, "custom-call target '%s' has no evaluator", name);
  }
}
