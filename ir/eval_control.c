/* eval_control.c: the evaluator's control flow: call, while, conditional
 * and map (calls[] in the order of ir/ir.h's control-flow contract).
 *
 * while: each trip evaluates the condition on the state, then the body;
 * the new state is copied into one of two hold arenas (ping-pong) and the
 * scratch arena is reset to where it stood before the trip, so a loop runs
 * in memory of two states however many trips it makes. Bytes held count
 * against the byte limit (ev_ctx.held_bytes). Every trip costs
 * IR_WHILE_TRIP_STEPS steps (ev_work), so a loop that never ends stops at
 * the step limit (by default after about 16 million trips) with
 * ST_RESOURCE_EXHAUSTED naming the while and the trips it made; a limit hit
 * inside the condition or body is reported the same way.
 * conditional: the selector picks one branch (ir_conditional_branch: an
 * s32 out of range runs the last); only that branch is evaluated.
 * map: to_apply on scalars that share the operands' elements, one call per
 * element between an arena mark and reset (constant memory). */
#include "ir/ir.h"

#include "ir/eval_internal.h"

base_status ev_call_op(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  if (in->ncalls != 1)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "calls %d computations, expected 1", in->ncalls);
  return ev_call(cx, in, in->calls[0], ops, in->nops, out);
}

base_status ev_conditional(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops,
                           ir_literal **out) {
  const ir_literal *sel = ops[0];
  if (in->ncalls < 1 || in->nops != in->ncalls + 1 || sel->shape.type == IR_TUPLE ||
      sel->shape.rank != 0 || (sel->shape.type != IR_PRED && sel->shape.type != IR_S32))
    return ev_fail(cx, in, ST_INVALID_ARGUMENT,
                   "needs a pred[] or s32[] selector and one operand per branch");
  int b = ir_conditional_branch(in->ncalls, sel->shape.type, ev_load_i(sel->shape.type, sel->data));
  return ev_call(cx, in, in->calls[b], &ops[b + 1], 1, out);
}

/* ---- while ------------------------------------------------------------ */

/* Deep-copies v into arena a (not the scratch arena), counted in
 * cx->held_bytes against the byte limit. */
static base_status hold(ev_ctx *cx, const ir_inst *in, const ir_literal *v, arena *a,
                        ir_literal **out) {
  int64_t need = (int64_t)sizeof(ir_literal) + (v->shape.type == IR_TUPLE ? 0 : (int64_t)v->nbytes);
  int64_t used = (int64_t)arena_bytes(cx->scratch) + cx->out_bytes + cx->held_bytes;
  if (need > cx->max_bytes - used)
    return ev_fail(cx, in, ST_RESOURCE_EXHAUSTED,
                   "holding the loop state needs %lld more bytes with %lld in use, over the "
                   "limit of %lld bytes",
                   (long long)need, (long long)used, (long long)cx->max_bytes);
  ir_literal *l = arena_try_alloc(a, sizeof *l);
  if (!l) return ev_fail(cx, in, ST_OUT_OF_MEMORY, "the host has no memory for the loop state");
  cx->held_bytes += need;
  memset(l, 0, sizeof *l);
  l->shape = ir_shape_clone(a, &v->shape);
  if (v->shape.type == IR_TUPLE) {
    int n = v->shape.ntuple;
    l->elems = arena_try_alloc(a, sizeof(ir_literal *) * (size_t)(n ? n : 1));
    if (!l->elems)
      return ev_fail(cx, in, ST_OUT_OF_MEMORY, "the host has no memory for the loop state");
    for (int i = 0; i < n; i++) {
      base_status st = hold(cx, in, v->elems[i], a, &l->elems[i]);
      if (st != ST_OK) return st;
    }
  } else {
    l->nbytes = v->nbytes;
    if (!(l->data = arena_try_alloc(a, v->nbytes ? v->nbytes : 1)))
      return ev_fail(cx, in, ST_OUT_OF_MEMORY, "the host has no memory for the loop state");
    if (v->nbytes) memcpy(l->data, v->data, v->nbytes);
  }
  *out = l;
  return ST_OK;
}

/* A limit reached inside the loop, reported at the while with its trips. */
static base_status at_while(ev_ctx *cx, const ir_inst *in, base_status st, int64_t trips) {
  if (st != ST_RESOURCE_EXHAUSTED || !cx->err || !cx->errlen) return st;
  char inner[512];
  snprintf(inner, sizeof inner, "%s", cx->err);
  return ev_fail(cx, in, st, "stopped after %lld trips: %s", (long long)trips, inner);
}

/* A copy of held value v in the scratch arena, where every value lives. */
static base_status to_scratch(ev_ctx *cx, const ir_inst *in, const ir_literal *v,
                              ir_literal **out) {
  if (v->shape.type == IR_TUPLE) {
    int n = v->shape.ntuple;
    ir_literal **el;
    base_status st = ev_alloc_array(cx, in, n ? n : 1, (int64_t)sizeof *el, (void **)&el);
    for (int i = 0; i < n && st == ST_OK; i++)
      st = to_scratch(cx, in, v->elems[i], &el[i]);
    return st == ST_OK ? ev_new_tuple(cx, in, el, n, out) : st;
  }
  base_status st = ev_new_array(cx, in, &v->shape, out);
  if (st == ST_OK && v->nbytes) memcpy((*out)->data, v->data, v->nbytes);
  return st;
}

typedef struct loop {
  arena *hold[2];
  arena_mark empty[2];
  int64_t held[2]; /* bytes counted for each hold arena */
} loop;

static void loop_release(ev_ctx *cx, loop *lp, int k) {
  cx->held_bytes -= lp->held[k];
  lp->held[k] = 0;
  arena_reset(lp->hold[k], lp->empty[k]);
}

/* Runs the trips of in from state *s; on success *s is the final state,
 * in one of lp's hold arenas (or the operand when no trip ran). */
static base_status run_trips(ev_ctx *cx, const ir_inst *in, loop *lp, ir_literal **s,
                             int64_t *trips) {
  for (int cur = 0;; cur ^= 1) {
    if (ev_work(cx, in, IR_WHILE_TRIP_STEPS) != ST_OK)
      return ev_fail(cx, in, ST_RESOURCE_EXHAUSTED,
                     "stopped after %lld trips: over the limit of %.3g steps of work (does the "
                     "condition ever become false?)",
                     (long long)*trips, cx->max_steps);
    arena_mark mk = arena_get_mark(cx->scratch);
    ir_literal *p = NULL, *next = NULL;
    base_status st = ev_call(cx, in, in->calls[IR_WHILE_COND], s, 1, &p);
    if (st != ST_OK) return at_while(cx, in, st, *trips);
    if (p->shape.type != IR_PRED || p->shape.rank != 0)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "condition returned something other than pred[]");
    bool go = *(const uint8_t *)p->data != 0;
    arena_reset(cx->scratch, mk);
    if (!go) return ST_OK;
    st = ev_call(cx, in, in->calls[IR_WHILE_BODY], s, 1, &next);
    if (st != ST_OK) return at_while(cx, in, st, *trips);
    loop_release(cx, lp, cur); /* it held the state of two trips ago */
    int64_t before = cx->held_bytes;
    st = hold(cx, in, next, lp->hold[cur], s);
    lp->held[cur] = cx->held_bytes - before;
    arena_reset(cx->scratch, mk);
    if (st != ST_OK) return st;
    ++*trips;
  }
}

base_status ev_while(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  if (in->ncalls != 2)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "calls %d computations, expected 2", in->ncalls);
  loop lp;
  memset(&lp, 0, sizeof lp);
  for (int k = 0; k < 2; k++) {
    lp.hold[k] = arena_create();
    lp.empty[k] = arena_get_mark(lp.hold[k]);
  }
  ir_literal *s = ops[0];
  int64_t trips = 0;
  base_status st = run_trips(cx, in, &lp, &s, &trips);
  if (st == ST_OK && s != ops[0]) st = to_scratch(cx, in, s, &s);
  for (int k = 0; k < 2; k++) {
    cx->held_bytes -= lp.held[k];
    arena_destroy(lp.hold[k]);
  }
  if (st == ST_OK) *out = s;
  return st;
}

/* ---- map -------------------------------------------------------------- */

base_status ev_map(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  int n = in->nops;
  if (in->ncalls != 1 || n < 1)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "needs operands and one to_apply computation");
  for (int k = 0; k < n; k++)
    if (!ev_dims_equal(&ops[k]->shape, in->shape))
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "operand %d has other dimensions than the result",
                     k);
  ir_literal *res, *args, **argv;
  base_status st = ev_new_array(cx, in, in->shape, &res);
  if (st == ST_OK) st = ev_alloc_array(cx, in, n, (int64_t)sizeof *args, (void **)&args);
  if (st == ST_OK) st = ev_alloc_array(cx, in, n, (int64_t)sizeof *argv, (void **)&argv);
  if (st != ST_OK) return st;
  int64_t count = ir_shape_count(in->shape);
  size_t rs = (size_t)ir_type_size(in->shape->type);
  for (int k = 0; k < n; k++) {
    args[k].shape = ir_shape_scalar(ops[k]->shape.type);
    args[k].nbytes = (size_t)ir_type_size(ops[k]->shape.type);
    argv[k] = &args[k];
  }
  for (int64_t i = 0; i < count; i++) {
    for (int k = 0; k < n; k++)
      args[k].data = (uint8_t *)ops[k]->data + (size_t)i * args[k].nbytes;
    arena_mark mk = arena_get_mark(cx->scratch);
    ir_literal *v = NULL;
    st = ev_call(cx, in, in->calls[0], argv, n, &v);
    if (st == ST_OK && (v->shape.type != in->shape->type || v->shape.rank != 0))
      st = ev_fail(cx, in, ST_INVALID_ARGUMENT, "to_apply returned something other than a scalar");
    if (st == ST_OK) memcpy((uint8_t *)res->data + (size_t)i * rs, v->data, rs);
    arena_reset(cx->scratch, mk);
    if (st != ST_OK) return st;
  }
  *out = res;
  return ST_OK;
}
