/* eval.c: the reference evaluator (like XLA's HloEvaluator): the oracle
 * every backend is checked against. Straightforward by design: each
 * instruction of a computation is evaluated in order into a dense row-major
 * literal; called computations (fusion's calls, reduce's and reduce-window's
 * to_apply, all-reduce's to_apply) are evaluated by the same walker.
 *
 * Requires: a verified module whose computations are topologically ordered
 * (ir_comp_topo_sort's contract: operands precede users). Even so, every
 * fact the evaluator relies on for memory safety (operand order, shapes,
 * attribute ranges, byte limits) is re-checked here and turned into a
 * status with a message naming the instruction, never a crash.
 *
 * This file: the entry point, the computation walker, the op dispatch, the
 * structural ops (parameter, constant, tuple, get-tuple-element, fusion,
 * copy) and memory accounting. The op families live in eval_*.c; the shared
 * contract (value model, numerics) is in eval_internal.h. */
#include "ir/ir.h"

#include "ir/eval_internal.h"

#include <stdarg.h>

/* ---- errors and memory ---------------------------------------------- */

base_status ev_fail(ev_ctx *cx, const ir_inst *inst, base_status st, const char *fmt, ...) {
  if (!cx->err || cx->errlen == 0) return st;
  size_t n = 0;
  int k;
  if (inst && inst->info->loc.line > 0 && inst->info->loc.file) {
    k = snprintf(cx->err, cx->errlen, "%s:%d:%d: ", inst->info->loc.file,
                 (int) inst->info->loc.line,
                 (int) inst->info->loc.col);
    if (k > 0) n = (size_t)k < cx->errlen ? (size_t)k : cx->errlen - 1;
  }
  if (inst) {
    k = snprintf(cx->err + n, cx->errlen - n, "eval: %s (%s): ",
                 inst->info->name ? inst->info->name : "?",
                 ir_op_name(inst->op));
  } else {
    k = snprintf(cx->err + n, cx->errlen - n, "eval: ");
  }
  if (k > 0) n += (size_t)k < cx->errlen - n ? (size_t)k : cx->errlen - n - 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cx->err + n, cx->errlen - n, fmt, ap);
  va_end(ap);
  return st;
}

base_status ev_alloc(ev_ctx *cx, const ir_inst *inst, int64_t n, void **out) {
  int64_t used = (int64_t)arena_bytes(cx->scratch) + cx->out_bytes + cx->held_bytes;
  if (n < 0 || n > cx->max_bytes || used > cx->max_bytes - n)
    return ev_fail(cx, inst, ST_RESOURCE_EXHAUSTED,
                   "needs %lld more bytes with %lld in use, over the limit of %lld bytes",
                   (long long)n, (long long)used, (long long)cx->max_bytes);
  if (!(*out = arena_try_alloc(cx->scratch, (size_t)n)))
    return ev_fail(cx, inst, ST_OUT_OF_MEMORY, "the host has no memory for %lld more bytes",
                   (long long)n);
  return ST_OK;
}

base_status ev_work(ev_ctx *cx, const ir_inst *inst, double n) {
  if (!(n >= 0) || n > cx->max_steps - cx->steps)
    return ev_fail(cx, inst, ST_RESOURCE_EXHAUSTED,
                   "needs %.3g more steps of work with %.3g done, over the limit of %.3g", n,
                   cx->steps, cx->max_steps);
  cx->steps += n;
  return ST_OK;
}

base_status ev_alloc_array(ev_ctx *cx, const ir_inst *inst, int64_t count, int64_t size,
                           void **out) {
  int64_t n;
  if (count < 0 || size < 0 || __builtin_mul_overflow(count, size, &n))
    return ev_fail(cx, inst, ST_RESOURCE_EXHAUSTED, "size of %lld x %lld bytes overflows",
                   (long long)count, (long long)size);
  return ev_alloc(cx, inst, n, out);
}

base_status ev_widen(ev_ctx *cx, const ir_inst *in, ir_type t, const void *p, int64_t n, void **out) {
  size_t es = (size_t)ir_type_size(t);
  bool f = ir_type_is_float(t) && t != IR_F64;
  base_status st = ev_alloc_array(cx, in, n, f ? 4 : 8, out);
  if (st != ST_OK) return st;
  for (int64_t i = 0; i < n; i++) {
    const uint8_t *e = (const uint8_t *)p + (size_t)i * es;
    if (f) ((float *)*out)[i] = ev_load_f(t, e);
    else if (t == IR_F64) ((double *)*out)[i] = ev_load_d(t, e);
    else ((int64_t *)*out)[i] = ev_load_i(t, e);
  }
  return ST_OK;
}

base_status ev_new_array(ev_ctx *cx, const ir_inst *inst, const ir_shape *s, ir_literal **out) {
  int64_t n;
  if (s->type == IR_TUPLE || ir_type_size(s->type) <= 0)
    return ev_fail(cx, inst, ST_INTERNAL, "array value of type %s", ir_type_name(s->type));
  if (s->rank < 0 || s->rank > IR_MAX_RANK || !ir_shape_elements(s, &n))
    return ev_fail(cx, inst, ST_RESOURCE_EXHAUSTED, "invalid or too many elements in result");
  ir_literal *l = NULL;
  void *data;
  base_status st = ev_alloc(cx, inst, (int64_t)sizeof *l, (void **)&l);
  if (st == ST_OK) st = ev_alloc_array(cx, inst, n, ir_type_size(s->type), &data);
  if (st != ST_OK) return st;
  l->shape = ir_shape_array(s->type, s->rank, s->dims);
  l->data = data;
  l->nbytes = (size_t)n * (size_t)ir_type_size(s->type);
  *out = l;
  return ST_OK;
}

base_status ev_new_tuple(ev_ctx *cx, const ir_inst *inst, ir_literal **elems, int n,
                         ir_literal **out) {
  ir_literal *l = NULL;
  ir_shape *shapes = NULL;
  ir_literal **es = NULL;
  base_status st = ev_alloc(cx, inst, (int64_t)sizeof *l, (void **)&l);
  if (st == ST_OK)
    st = ev_alloc_array(cx, inst, n ? n : 1, (int64_t)sizeof *shapes, (void **)&shapes);
  if (st == ST_OK) st = ev_alloc_array(cx, inst, n ? n : 1, (int64_t)sizeof *es, (void **)&es);
  if (st != ST_OK) return st;
  for (int i = 0; i < n; i++) {
    shapes[i] = elems[i]->shape;
    es[i] = elems[i];
  }
  memset(&l->shape, 0, sizeof l->shape);
  l->shape.type = IR_TUPLE;
  l->shape.ntuple = n;
  l->shape.tuple = shapes;
  l->elems = es;
  *out = l;
  return ST_OK;
}

bool ev_dims_equal(const ir_shape *a, const ir_shape *b) {
  if (a->type == IR_TUPLE || b->type == IR_TUPLE || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* A value is well-formed when its buffers have the sizes its shape says:
 * checked for everything that enters from outside (arguments, constants). */
static bool literal_ok(const ir_literal *l, int depth) {
  if (!l || depth > 64) return false;
  if (l->shape.type == IR_TUPLE) {
    if (l->shape.ntuple < 0 || (l->shape.ntuple > 0 && (!l->elems || !l->shape.tuple)))
      return false;
    for (int i = 0; i < l->shape.ntuple; i++) {
      if (!literal_ok(l->elems[i], depth + 1)) return false;
      if (!ir_shape_equal(&l->shape.tuple[i], &l->elems[i]->shape)) return false;
    }
    return true;
  }
  int64_t n;
  if (ir_type_size(l->shape.type) <= 0 || l->shape.rank < 0 || l->shape.rank > IR_MAX_RANK ||
      !ir_shape_elements(&l->shape, &n))
    return false;
  return l->nbytes == (size_t)n * (size_t)ir_type_size(l->shape.type) && (l->data || n == 0);
}

/* ---- structural ops --------------------------------------------------- */

static base_status eval_gte(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops,
                            ir_literal **out) {
  const ir_literal *t = ops[0];
  if (t->shape.type != IR_TUPLE)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "operand is not a tuple");
  if (in->a->index < 0 || in->a->index >= t->shape.ntuple)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "index %lld out of range for a %d-tuple",
                   (long long) in->a->index, (int)t->shape.ntuple);
  *out = t->elems[in->a->index];
  return ST_OK;
}

static base_status eval_fusion(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops,
                               ir_literal **out) {
  if (in->ncalls != 1)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "fusion calls %d computations, expected 1",
                   (int)in->ncalls);
  return ev_call(cx, in, in->calls[0], ops, in->nops, out);
}

/* Ops whose operands must all be arrays (everything but the structural
 * ops that pass tuples through). */
static bool takes_arrays(ir_op op) {
  return op != IR_OP_TUPLE && op != IR_OP_GET_TUPLE_ELEMENT && op != IR_OP_FUSION &&
         op != IR_OP_ALL_GATHER_DONE && op != IR_OP_COLLECTIVE_PERMUTE_DONE &&
         op != IR_OP_ALL_REDUCE_DONE &&
         op != IR_OP_ALL_REDUCE && op != IR_OP_COPY && op != IR_OP_CUSTOM_CALL && op != IR_OP_CALL &&
         op != IR_OP_WHILE && op != IR_OP_CONDITIONAL && !(ir_op_flags(op) & OPF_RUNS);
}

/* Evaluates one instruction of a computation whose earlier values are in
 * vals[]; args are the computation's arguments. */
static base_status eval_inst(ev_ctx *cx, const ir_comp *cp, ir_id id, ir_literal **vals,
                             ir_literal *const *args, int nargs, ir_literal **out) {
  const ir_inst *in = &cp->insts.v[id];
  if ((unsigned)in->op >= IR_OP__COUNT)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "unknown opcode %d", (int)in->op);
  int arity = ir_op_arity(in->op);
  if (arity >= 0 && in->nops != arity)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "has %d operands, expected %d", (int)in->nops,
                   arity);
  if (in->nops < 0 || (in->nops > 0 && !in->ops))
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "malformed operand list");
  ir_literal *one[3];
  ir_literal **ops = one;
  if (in->nops > 3) {
    base_status st = ev_alloc_array(cx, in, in->nops, (int64_t)sizeof *ops, (void **)&ops);
    if (st != ST_OK) return st;
  }
  for (int k = 0; k < in->nops; k++) {
    ir_id o = in->ops[k];
    if (o < 0 || o >= id || !vals[o])
      return ev_fail(cx, in, ST_INVALID_ARGUMENT,
                     "operand %d (id %d) is not evaluated before its use", k, (int)o);
    ops[k] = vals[o];
    if (takes_arrays(in->op) && ops[k]->shape.type == IR_TUPLE)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "operand %d is a tuple, expected an array", k);
  }
  int64_t nelem;
  if (in->shape->type != IR_TUPLE &&
      ((ir_type_size(in->shape->type) <= 0 && in->shape->type != IR_TOKEN) || in->shape->rank < 0 ||
       in->shape->rank > IR_MAX_RANK))
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "malformed result shape");
  /* From here on, index arithmetic on the result's dims cannot overflow. */
  if (in->shape->type != IR_TUPLE && !ir_shape_elements(in->shape, &nelem))
    return ev_fail(cx, in, ST_RESOURCE_EXHAUSTED,
                   "result has negative dims or more than 2^40 elements");

  if (ir_op_flags(in->op) & OPF_ELEMWISE) return ev_elementwise(cx, in, ops, out);
  if (ir_op_flags(in->op) & OPF_RUNS) return ev_small(cx, in, ops, out);
  switch (in->op) {
  case IR_OP_PARAMETER:
    if (in->a->parameter_number < 0 || in->a->parameter_number >= nargs)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "parameter number %lld without an argument",
                     (long long) in->a->parameter_number);
    *out = args[in->a->parameter_number];
    return ST_OK;
  case IR_OP_CONSTANT:
    if (!literal_ok(in->a->literal, 0))
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "missing or malformed literal");
    *out = in->a->literal;
    return ST_OK;
  case IR_OP_TUPLE:
    return ev_new_tuple(cx, in, ops, in->nops, out);
  case IR_OP_GET_TUPLE_ELEMENT:
    return eval_gte(cx, in, ops, out);
  case IR_OP_FUSION:
    return eval_fusion(cx, in, ops, out);
  case IR_OP_COPY:
    *out = ops[0];
    return ST_OK; /* values are immutable: share */
  case IR_OP_IOTA:
    return ev_iota(cx, in, ops, out);
  case IR_OP_BROADCAST:
    return ev_broadcast(cx, in, ops, out);
  case IR_OP_RESHAPE:
    return ev_reshape(cx, in, ops, out);
  case IR_OP_TRANSPOSE:
    return ev_transpose(cx, in, ops, out);
  case IR_OP_SLICE:
    return ev_slice(cx, in, ops, out);
  case IR_OP_CONCATENATE:
    return ev_concatenate(cx, in, ops, out);
  case IR_OP_PAD:
    return ev_pad(cx, in, ops, out);
  case IR_OP_REVERSE:
    return ev_reverse(cx, in, ops, out);
  case IR_OP_CONVERT:
    return ev_convert(cx, in, ops, out);
  case IR_OP_BITCAST_CONVERT:
    return ev_bitcast_convert(cx, in, ops, out);
  case IR_OP_DOT:
    return ev_dot(cx, in, ops, out);
  case IR_OP_CONVOLUTION:
    return ev_convolution(cx, in, ops, out);
  case IR_OP_REDUCE:
    return ev_reduce(cx, in, ops, out);
  case IR_OP_REDUCE_WINDOW:
    return ev_reduce_window(cx, in, ops, out);
  case IR_OP_ALL_REDUCE:
    return ev_all_reduce(cx, in, ops, out);
  case IR_OP_ALL_GATHER:
  case IR_OP_REDUCE_SCATTER:
  case IR_OP_ALL_TO_ALL:
  case IR_OP_COLLECTIVE_PERMUTE:
  case IR_OP_COLLECTIVE_BROADCAST:
  case IR_OP_ALL_REDUCE_START:
  case IR_OP_ALL_GATHER_START:
  case IR_OP_COLLECTIVE_PERMUTE_START:
    return ev_collective(cx, in, ops, out);
  case IR_OP_REPLICA_ID:
  case IR_OP_PARTITION_ID:
  case IR_OP_ALL_REDUCE_DONE:
  case IR_OP_ALL_GATHER_DONE:
  case IR_OP_COLLECTIVE_PERMUTE_DONE:
    return ev_coll_local(cx, in, ops, out);
  case IR_OP_CUSTOM_CALL:
    if (ir_is_topk_custom_call(in)) return ev_topk(cx, in, ops, out);
    return ev_custom_call(cx, in, ops, out);
  case IR_OP_DYNAMIC_SLICE:
    return ev_dynamic_slice(cx, in, ops, out);
  case IR_OP_DYNAMIC_UPDATE_SLICE:
    return ev_dynamic_update_slice(cx, in, ops, out);
  case IR_OP_GATHER:
    return ev_gather(cx, in, ops, out);
  case IR_OP_SCATTER:
    return ev_scatter(cx, in, ops, out);
  case IR_OP_SELECT_AND_SCATTER:
    return ev_select_and_scatter(cx, in, ops, out);
  case IR_OP_SORT:
    return ev_sort(cx, in, ops, out);
  case IR_OP_TOPK:
    return ev_topk(cx, in, ops, out);
  case IR_OP_RNG_BIT_GENERATOR:
    return ev_rng_bit_generator(cx, in, ops, out);
  case IR_OP_RNG:
    return ev_rng(cx, in, ops, out);
  case IR_OP_CALL:
    return ev_call_op(cx, in, ops, out);
  case IR_OP_WHILE:
    return ev_while(cx, in, ops, out);
  case IR_OP_CONDITIONAL:
    return ev_conditional(cx, in, ops, out);
  case IR_OP_MAP:
    return ev_map(cx, in, ops, out);
  default:
    break; /* the elementwise ops, dispatched above */
  }
  return ev_fail(cx, in, ST_UNSUPPORTED, "no evaluator for this op");
}

/* ---- computations ----------------------------------------------------- */

base_status ev_call(ev_ctx *cx, const ir_inst *caller, ir_comp_id c, ir_literal *const *args,
                    int nargs, ir_literal **out) {
  if (c < 0 || c >= cx->m->comps.n)
    return ev_fail(cx, caller, ST_INVALID_ARGUMENT, "calls computation %d, which does not exist",
                   (int)c);
  const ir_comp *cp = &cx->m->comps.v[c];
  if (cx->depth >= EV_MAX_DEPTH)
    return ev_fail(cx, caller, ST_RESOURCE_EXHAUSTED,
                   "computations nested deeper than %d (calling %s)", EV_MAX_DEPTH, cp->name);

  /* Parameters bind by parameter number; every number needs an argument of
   * exactly the parameter's shape, and every argument a parameter. */
  int64_t nparams = 0;
  for (int i = 0; i < cp->insts.n; i++) {
    const ir_inst *in = &cp->insts.v[i];
    if (in->dead || in->op != IR_OP_PARAMETER) continue;
    if (in->a->parameter_number < 0 || in->a->parameter_number >= nargs)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "parameter(%lld) of %s, but %d argument%s given",
                     (long long) in->a->parameter_number, cp->name, nargs,
                     nargs == 1 ? " was" : "s were");
    const ir_literal *a = args[in->a->parameter_number];
    if (!literal_ok(a, 0))
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "argument %lld is missing or malformed",
                     (long long) in->a->parameter_number);
    if (!ir_shape_equal(&a->shape, in->shape)) {
      strbuf want, got;
      sb_init(&want);
      sb_init(&got);
      ir_shape_print(&want, in->shape, false);
      ir_shape_print(&got, &a->shape, false);
      base_status st =
          ev_fail(cx, in, ST_INVALID_ARGUMENT, "argument %lld has shape %s, expected %s",
                  (long long) in->a->parameter_number, sb_str(&got),
                  sb_str(&want));
      sb_free(&want);
      sb_free(&got);
      return st;
    }
    if (in->a->parameter_number + 1 > nparams) nparams = in->a->parameter_number + 1;
  }
  if (nparams != nargs)
    return ev_fail(cx, caller, ST_INVALID_ARGUMENT, "%s takes %lld arguments, %d given", cp->name,
                   (long long)nparams, nargs);
  if (cp->root < 0 || cp->root >= cp->insts.n || cp->insts.v[cp->root].dead)
    return ev_fail(cx, caller, ST_INVALID_ARGUMENT, "computation %s has no root", cp->name);

  ir_literal **vals;
  base_status st = ev_alloc_array(cx, caller, cp->insts.n, (int64_t)sizeof *vals, (void **)&vals);
  if (st != ST_OK) return st;
  cx->depth++;
  for (int i = 0; i < cp->insts.n && st == ST_OK; i++) {
    const ir_inst *in = &cp->insts.v[i];
    if (in->dead) continue;
    ir_literal *v = NULL;
    double n = 1;
    if (in->shape->type != IR_TUPLE)
      for (int d = 0; d < in->shape->rank && d < IR_MAX_RANK; d++)
        n *= (double) in->shape->dims[d];
    st = ev_work(cx, in, n > 1 ? n : 1);
    if (st == ST_OK) st = eval_inst(cx, cp, i, vals, args, nargs, &v);
    if (st != ST_OK) break;
    if (!v || !ir_shape_equal(&v->shape, in->shape)) {
      strbuf want, got;
      sb_init(&want);
      sb_init(&got);
      ir_shape_print(&want, in->shape, false);
      if (v) ir_shape_print(&got, &v->shape, false);
      st = ev_fail(cx, in, ST_INVALID_ARGUMENT, "value has shape %s, but the instruction says %s",
                   v ? sb_str(&got) : "(none)", sb_str(&want));
      sb_free(&want);
      sb_free(&got);
      break;
    }
    vals[i] = v;
  }
  cx->depth--;
  if (st != ST_OK) return st;
  *out = vals[cp->root];
  return ST_OK;
}

/* Deep-copies a value into the caller's arena (counted against the limit). */
base_status ev_copy_out(ev_ctx *cx, const ir_literal *v, arena *a, ir_literal **out) {
  int64_t need = (int64_t)sizeof(ir_literal) + (int64_t)v->nbytes;
  int64_t used = (int64_t)arena_bytes(cx->scratch) + cx->out_bytes;
  if (need > cx->max_bytes - used)
    return ev_fail(cx, NULL, ST_RESOURCE_EXHAUSTED,
                   "copying the result needs %lld more bytes, over the limit of %lld",
                   (long long)need, (long long)cx->max_bytes);
  cx->out_bytes += need;
  ir_literal *l = arena_alloc(a, sizeof *l);
  l->shape = ir_shape_clone(a, &v->shape);
  if (v->shape.type == IR_TUPLE) {
    int n = v->shape.ntuple;
    l->elems = arena_array(a, (size_t)(n ? n : 1), sizeof(ir_literal *));
    for (int i = 0; i < n; i++) {
      base_status st = ev_copy_out(cx, v->elems[i], a, &l->elems[i]);
      if (st != ST_OK) return st;
    }
  } else {
    l->nbytes = v->nbytes;
    if (!(l->data = arena_try_alloc(a, v->nbytes ? v->nbytes : 1)))
      return ev_fail(cx, NULL, ST_OUT_OF_MEMORY, "the host has no memory for the %zu-byte result",
                     v->nbytes);
    if (v->nbytes) memcpy(l->data, v->data, v->nbytes);
  }
  *out = l;
  return ST_OK;
}

void ir_eval_options_init(ir_eval_options *o) {
  memset(o, 0, sizeof *o);
  o->replica_count = 1;
  o->replica_id = 0;
  o->max_bytes = 0; /* default: 16 GiB */
  o->max_steps = 0; /* default: 2^36 */
}

base_status ev_prepare(ev_ctx *cx, const ir_module *m, const ir_eval_options *opts, char *err,
                       size_t errlen) {
  memset(cx, 0, sizeof *cx);
  cx->err = err;
  cx->errlen = errlen;
  if (err && errlen) err[0] = 0;
  if (opts)
    cx->opts = *opts;
  else
    ir_eval_options_init(&cx->opts);
  cx->max_bytes = cx->opts.max_bytes > 0 ? cx->opts.max_bytes : (int64_t)16 << 30;
  cx->max_steps = cx->opts.max_steps > 0 ? (double)cx->opts.max_steps : 68719476736.0; /* 2^36 */
  if (!m) return ev_fail(cx, NULL, ST_INVALID_ARGUMENT, "missing module, arguments or output");
  cx->m = m;
  if (cx->opts.replica_count < 1 || cx->opts.replica_id < 0 ||
      cx->opts.replica_id >= cx->opts.replica_count)
    return ev_fail(cx, NULL, ST_INVALID_ARGUMENT, "replica %d of %d is not a valid replica",
                   (int)cx->opts.replica_id, (int)cx->opts.replica_count);
  if (m->entry < 0 || m->entry >= m->comps.n)
    return ev_fail(cx, NULL, ST_INVALID_ARGUMENT, "module %s has no entry computation",
                   m->name ? m->name : "?");
  if (ir_check_runnable_replicas(m, "interp", cx->opts.ffi, cx->opts.replica_count, NULL, err,
                                 errlen))
    return ST_UNSUPPORTED;
  /* The static budget first (ir_budget: the accounting every target
   * shares), so that runaway work is refused before any of it is done;
   * ev_work and ev_alloc still count what is actually done. */
  ir_budget bud = {cx->max_steps, cx->max_bytes, IR_BUDGET_MAX_DEPTH};
  base_status st = ir_budget_check(m, &bud, NULL, err, errlen);
  if (st == ST_OK) st = ev_check_shapes(cx, cx->opts.replica_count > 1);
  if (st != ST_OK) return st;
  cx->scratch = arena_create();
  return ST_OK;
}

base_status ev_run_entry(ev_ctx *cx, ir_literal *const *args, int nargs, ir_literal **out) {
  return ev_call(cx, NULL, cx->m->entry, args, nargs, out);
}

base_status ir_eval(const ir_module *m, const ir_eval_options *opts, ir_literal *const *args,
                    int nargs, arena *out_arena, ir_literal **out, char *err, size_t errlen) {
  ev_ctx cx;
  if (!m || !out || !out_arena || (nargs > 0 && !args) || nargs < 0) {
    ev_prepare(&cx, NULL, opts, err, errlen);
    return ST_INVALID_ARGUMENT;
  }
  *out = NULL;
  base_status st = ev_prepare(&cx, m, opts, err, errlen);
  if (st != ST_OK) return st;
  ir_literal *v = NULL;
  st = ev_run_entry(&cx, args, nargs, &v);
  if (st == ST_OK) st = ev_copy_out(&cx, v, out_arena, out);
  arena_destroy(cx.scratch);
  if (st != ST_OK) *out = NULL;
  return st;
}
