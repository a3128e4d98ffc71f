/* lower_small.c: the small declared ops (OPF_RUNS; semantics in
 * ir/small.c) on the TPU. None moves data: bitcast of one element type is
 * an alias of its operand's buffer (row-major, as reshape), the
 * pass-through ops are their operand, a token is an empty tuple value,
 * copy-start is the tuple (x, x, zero context) and copy-done its first
 * element, get-dimension-size a constant. reduce-precision and the async
 * ops report a located error. */
#include "backend/tpu/lower.h"

ir_literal *lower_small_constant(arena *a, const ir_comp *c, const ir_inst *in) {
  int64_t d = 0; /* in range: the verifier */
  if (in->op != IR_OP_GET_DIMENSION_SIZE || !ir_raw_int(in, "dimensions", &d)) return NULL;
  ir_literal *l = ir_literal_create(a, in->shape);
  ir_literal_set_i64(l, 0, c->insts.v[in->ops[0]].shape->dims[d]);
  return l;
}

/* A zero scalar as a value (context elements of a start tuple are 32-bit
 * integer scalars, held as s32 words: the pool's s32 zero). */
static tval *zero_value(tb *b, const ir_shape *s) {
  ir_shape z = *s;
  if (z.type == IR_U32) z.type = IR_S32;
  if (tk_itype(z.type) == IR_TYPE_INVALID || z.rank != 0) {
    tb_error(b, ST_UNSUPPORTED, "a start tuple element of type %s is not supported",
             ir_type_name(s->type));
    return NULL;
  }
  return tv_const(b, ir_literal_create(b->a, &z));
}

static tval *empty_tuple(tb *b) {
  tval *t = arena_alloc(b->a, sizeof *t);
  t->tuple = true;
  t->n = 0;
  t->elems = arena_array(b->a, 1, sizeof(tval *));
  return t;
}

void lower_small(lctx *x, ir_id i) {
  const ir_inst *in = &x->comp->insts.v[i];
  tb *b = x->b;
  tval *ov = in->nops > 0 ? x->val[in->ops[0]] : NULL;
  switch (in->op) {
  case IR_OP_BITCAST:
    if (ov->type != in->shape->type) {
      tb_error(b, ST_UNSUPPORTED, "bitcast between element types is not supported (use "
                                  "bitcast-convert)");
      return;
    }
    x->val[i] = tv_alias(b, ov, in->shape->type, in->shape->rank, in->shape->dims);
    return;
  case IR_OP_OPT_BARRIER: case IR_OP_DOMAIN: case IR_OP_ADD_DEPENDENCY: case IR_OP_ASYNC_UPDATE:
    x->val[i] = tv_ref(b, ov);
    return;
  case IR_OP_AFTER_ALL:
    x->val[i] = empty_tuple(b);
    return;
  case IR_OP_COPY_DONE:
    x->val[i] = tv_ref(b, ov->elems[0]);
    return;
  case IR_OP_COPY_START: {
    tval *t = empty_tuple(b);
    t->n = in->shape->ntuple;
    t->elems = arena_array(b->a, (size_t)t->n, sizeof(tval *));
    for (int k = 0; k < t->n && !b->failed; k++)
      t->elems[k] = k < 2 ? tv_ref(b, ov) : zero_value(b, &in->shape->tuple[k]);
    x->val[i] = t;
    return;
  }
  case IR_OP_GET_DIMENSION_SIZE: /* placed with the constants (compile.c) */
    x->val[i] = tv_const(b, lower_small_constant(b->a, x->comp, in));
    return;
  default:
    tb_error(b, ST_UNSUPPORTED, "op '%s' is not supported by the TPU backend yet (it runs on "
                                "interp and cpu)", ir_op_name(in->op));
    return;
  }
}
