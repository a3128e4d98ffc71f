/* lower_small.c: the small declared ops (OPF_RUNS; semantics in
 * ir/small.c) on the TPU. None moves data: bitcast of one element type is
 * an alias of its operand's buffer (row-major, as reshape), the
 * pass-through ops are their operand, a token is an empty tuple value,
 * copy-start is the tuple (x, x, zero context) and copy-done its first
 * element, get-dimension-size a constant; reduce-precision is one
 * elementwise program of integer operations on the f32 bits. The async
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
tval *lower_zero_scalar(tb *b, const ir_shape *s) {
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

/* Node helpers for the reduce-precision program. */
static int node(tk_node *ns, int *n, tk_node v) {
  ns[*n] = v;
  return (*n)++;
}
#define CONST(v) node(ns, &n, (tk_node){TK_CONST, IR_S32, 0, (uint32_t)(v), 0, 0, 0, 0, {0, 0, 0}})
#define OP(t, o, a, b) node(ns, &n, (tk_node){TK_OP, t, 0, 0, o, 0, 0, 2, {a, b, 0}})
#define CMP(d, ct, a, b) node(ns, &n, (tk_node){TK_OP, IR_PRED, 0, 0, IR_OP_COMPARE, d, ct, 2, {a, b, 0}})
#define SEL(t, p, a, b) node(ns, &n, (tk_node){TK_OP, t, 0, 0, IR_OP_SELECT, 0, 0, 3, {p, a, b}})
#define MOV(t, a) node(ns, &n, (tk_node){TK_OP, t, 0, 0, IR_OP_COPY, 0, 0, 1, {a, 0, 0}})

/* reduce-precision of an f32 or bf16 value (ir_reduce_precision) as one
 * elementwise program of integer operations on the f32 bits. */
static tval *reduce_precision(tb *b, const tval *v, int ebits, int mbits) {
  tk_node ns[32];
  int n = 0;
  int in = node(ns, &n, (tk_node){TK_IN, v->type, 0, 0, 0, 0, 0, 0, {0, 0, 0}});
  int u = MOV(IR_S32, in);
  if (mbits < 23) {
    uint32_t last = 1u << (23 - mbits);
    int lsb = OP(IR_S32, IR_OP_AND, OP(IR_S32, IR_OP_SHR_L, u, CONST(23 - mbits)), CONST(1));
    int bias = OP(IR_S32, IR_OP_ADD, lsb, CONST((last >> 1) - 1));
    u = OP(IR_S32, IR_OP_AND, OP(IR_S32, IR_OP_ADD, u, bias), CONST(~(last - 1)));
  }
  if (ebits < 8) {
    uint32_t rbias = (1u << (ebits - 1)) - 1;
    int ex = OP(IR_S32, IR_OP_AND, u, CONST(0x7f800000u));
    int sg = OP(IR_S32, IR_OP_AND, u, CONST(0x80000000u));
    int over = CMP(IR_CMP_GT, IR_CMPT_SIGNED, ex, CONST((127 + rbias) << 23));
    u = SEL(IR_S32, over, OP(IR_S32, IR_OP_OR, sg, CONST(0x7f800000u)), u);
    int under = CMP(IR_CMP_LE, IR_CMPT_SIGNED, ex, CONST((127 - rbias) << 23));
    u = SEL(IR_S32, under, sg, u);
  }
  int f = MOV(IR_F32, u);
  /* NaN stays NaN; with no mantissa bits it becomes +infinity */
  int nan = CMP(IR_CMP_NE, IR_CMPT_FLOAT, in, in);
  int keep = mbits > 0 ? in : MOV(IR_F32, CONST(0x7f800000u));
  int root = SEL(IR_F32, nan, keep, f);
  if (v->type == IR_BF16)
    root = node(ns, &n, (tk_node){TK_OP, IR_BF16, 0, 0, IR_OP_CONVERT, 0, 0, 1, {root, 0, 0}});
  tval *out = tv_new(b, v->type, v->rank, v->dims);
  uint64_t ia = tv_addr(v), oa = tv_addr(out);
  ir_type it = v->type;
  tk_elem e = {n, ns, 1, &ia, &it, 1, &root, &oa, v->count};
  tk_elementwise(b, &e);
  return out;
}
#undef CONST
#undef OP
#undef CMP
#undef SEL
#undef MOV

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
      t->elems[k] = k < 2 ? tv_ref(b, ov) : lower_zero_scalar(b, &in->shape->tuple[k]);
    x->val[i] = t;
    return;
  }
  case IR_OP_REDUCE_PRECISION: {
    int64_t eb = 8, mb = 23; /* present and in range: the verifier */
    ir_raw_int(in, "exponent_bits", &eb);
    ir_raw_int(in, "mantissa_bits", &mb);
    if (ov->type != IR_F32 && ov->type != IR_BF16) {
      tb_error(b, ST_UNSUPPORTED, "reduce-precision of %s", ir_type_name(ov->type));
      return;
    }
    x->val[i] = reduce_precision(b, ov, (int)eb, (int)mb);
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
