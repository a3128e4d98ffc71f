/* lower_coll_async.c: the -start/-done forms of all-reduce, all-gather and
 * collective-permute on the TPU, run synchronously (docs/collectives.md:
 * the start does the exchange, the done only unpacks it), as XLA's
 * convert-async-collectives-to-sync does:
 *
 *   all-reduce-start          the all-reduce (lower_coll.c)
 *   all-reduce-done           its operand
 *   all-gather-start          (operands, the all-gather of them)
 *   collective-permute-start  (operands, the permute of them, zero contexts)
 *   all-gather-done, collective-permute-done   element 1 of the start's tuple
 *
 * The collective runs where the start is, with every check and located
 * refusal of its synchronous form; operands are passed on without a copy
 * (values are immutable once computed). */
#include "backend/tpu/lower.h"

static const ir_inst *inst_of(lctx *x, ir_id i) { return &x->comp->insts.v[i]; }

/* The start tuple of in: its operands (one array, or a tuple of them),
 * sync, then zeros for the remaining (context) elements. */
static tval *start_tuple(lctx *x, const ir_inst *in, tval *sync) {
  tb *b = x->b;
  const ir_shape *s = in->shape;
  tval *t = arena_alloc(b->a, sizeof *t);
  t->tuple = true;
  t->n = s->ntuple;
  t->elems = arena_array(b->a, (size_t)s->ntuple, sizeof(tval *));
  if (s->tuple[0].type == IR_TUPLE) {
    tval *o = arena_alloc(b->a, sizeof *o);
    o->tuple = true;
    o->n = in->nops;
    o->elems = arena_array(b->a, (size_t)in->nops, sizeof(tval *));
    for (int k = 0; k < in->nops; k++) o->elems[k] = tv_ref(b, x->val[in->ops[k]]);
    t->elems[0] = o;
  } else {
    t->elems[0] = tv_ref(b, x->val[in->ops[0]]);
  }
  t->elems[1] = sync;
  for (int k = 2; k < s->ntuple && !b->failed; k++) t->elems[k] = lower_zero_scalar(b, &s->tuple[k]);
  return t;
}

void lower_coll_async(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tb *b = x->b;
  tval *v = NULL;
  switch (in->op) {
  case IR_OP_ALL_REDUCE_START:
    if (lower_all_reduce(x, i)) return;
    /* one replica: the identity */
    if (in->nops == 1 && in->shape->type != IR_TUPLE) {
      x->val[i] = tv_ref(b, x->val[in->ops[0]]);
      return;
    }
    lower_tuple(x, i);
    return;
  case IR_OP_ALL_REDUCE_DONE:
    x->val[i] = tv_ref(b, x->val[in->ops[0]]);
    return;
  case IR_OP_ALL_GATHER_DONE:
  case IR_OP_COLLECTIVE_PERMUTE_DONE:
    x->val[i] = tv_ref(b, x->val[in->ops[0]]->elems[1]);
    return;
  case IR_OP_ALL_GATHER_START:
    v = coll_halves_value(x, in, &in->shape->tuple[1]);
    break;
  case IR_OP_COLLECTIVE_PERMUTE_START:
    v = coll_move_value(x, in, &in->shape->tuple[1]);
    break;
  default:
    tb_error(b, ST_INTERNAL, "%s is not a -start/-done collective", ir_op_name(in->op));
    return;
  }
  if (v) x->val[i] = start_tuple(x, in, v);
}
