/* lower_control.c: call, while, conditional and map on the TPU.
 *
 * call: the callee is lowered in place (its code inlined, parameters bound
 * to the operands' values). map: to_apply becomes one elementwise program
 * over the operands (lower_scalar_comp, tk_elementwise), as a reducer does.
 *
 * while and conditional run on the scalar unit. A value that decides
 * control (the condition's pred[], the selector) is an HBM word: a DMA
 * brings it into VMEM, vld into v0, vtos into s31, and a branch reads s31.
 * Every block boundary is a tb_barrier (all units drained, every DMA token
 * taken, the scalar register cache forgotten), so each block's code is
 * straight-line code for the builder however often it runs:
 *
 *   copy init -> state; barrier
 *   head:  <condition on state>; p -> s31; barrier; beq s31, s0, exit
 *          <body on state>; copy new -> state; barrier; jmp head
 *   exit:
 *
 *   sel -> s31; barrier; beq s31, k, L_k ... (pred: bne s31, s0, L_0);
 *   jmp L_last
 *   L_k:   <branch k on operand k+1>; copy root -> result; barrier; jmp join
 *   join:
 *
 * The state lives in HBM buffers allocated before the loop and held to its
 * end; values made inside a trip are freed inside it, so their addresses
 * serve every trip. Each trip copies the body's new state over the old
 * (through temporaries where the body moves one element of the state to
 * another's place). */
#include "backend/tpu/lower.h"

enum { CTRL_REG = 31, CTRL_MAX_BRANCHES = 24 };

static const ir_inst *inst_of(lctx *x, ir_id i) { return &x->comp->insts.v[i]; }

/* A value of v's shape with fresh buffers. */
static tval *fresh_like(tb *b, const tval *v) {
  if (!v->tuple) return tv_new(b, v->type, v->rank, v->dims);
  tval *t = arena_alloc(b->a, sizeof *t);
  *t = *v;
  t->elems = arena_array(b->a, (size_t)(v->n ? v->n : 1), sizeof(tval *));
  for (int k = 0; k < v->n; k++)
    t->elems[k] = fresh_like(b, v->elems[k]);
  return t;
}

/* A value of shape s with fresh buffers. */
static tval *fresh_shaped(tb *b, const ir_shape *s) {
  if (s->type != IR_TUPLE) return tv_new(b, s->type, s->rank, s->dims);
  tval *t = arena_alloc(b->a, sizeof *t);
  memset(t, 0, sizeof *t);
  t->tuple = true;
  t->n = s->ntuple;
  t->elems = arena_array(b->a, (size_t)(s->ntuple ? s->ntuple : 1), sizeof(tval *));
  for (int k = 0; k < s->ntuple; k++)
    t->elems[k] = fresh_shaped(b, &s->tuple[k]);
  return t;
}

/* The leaves of v, in order, into out (n counted). */
static void leaves(const tval *v, tval **out, int *n) {
  if (!v->tuple) {
    out[(*n)++] = (tval *)v;
    return;
  }
  for (int k = 0; k < v->n; k++)
    leaves(v->elems[k], out, n);
}

static int leaf_count(const tval *v) {
  if (!v->tuple) return 1;
  int n = 0;
  for (int k = 0; k < v->n; k++)
    n += leaf_count(v->elems[k]);
  return n;
}

static void copy_leaf(tb *b, const tval *dst, const tval *src) {
  if (dst->buf == src->buf || dst->count == 0) return;
  int64_t n = dst->count, one = 1;
  tk_copy(b, tv_addr(dst), &one, tv_addr(src), &one, 1, &n, tv_esize(dst->type));
}

/* dst = src leaf by leaf; where a leaf of src is another leaf of dst's
 * buffer (a body that swaps or moves state elements), through a temporary. */
static void copy_value(tb *b, const tval *dst, const tval *src) {
  int n = leaf_count(dst), nd = 0, ns = 0;
  tval **d = arena_array(b->a, (size_t)n + 1, sizeof(tval *));
  tval **s = arena_array(b->a, (size_t)n + 1, sizeof(tval *));
  tval **tmp = arena_array(b->a, (size_t)n + 1, sizeof(tval *));
  leaves(dst, d, &nd);
  leaves(src, s, &ns);
  for (int l = 0; l < n; l++) {
    for (int j = 0; j < n && !tmp[l]; j++)
      if (j != l && s[l]->buf == d[j]->buf) tmp[l] = tv_new(b, s[l]->type, s[l]->rank, s[l]->dims);
    if (tmp[l]) copy_leaf(b, tmp[l], s[l]);
  }
  for (int l = 0; l < n; l++) {
    copy_leaf(b, d[l], tmp[l] ? tmp[l] : s[l]);
    tv_release(b, tmp[l]);
  }
}

/* s31 = the first element (pred or s32, held as a 32-bit word) of v. */
static void read_scalar(tb *b, const tval *v) {
  int64_t d[10] = {4, 1, 1, 1, 0, 0, 0, 0, 0, 0};
  tb_dma(b, true, 0, tv_addr(v), d);
  tb_vld(b, 0, 0, tb_row_bytes(false), false);
  tb_raw(b, OP_VTOS, CTRL_REG, 0, 0, 0, 0, 0);
}

static void lower_call(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tb *b = x->b;
  tval **ps = arena_array(b->a, (size_t)(in->nops ? in->nops : 1), sizeof(tval *));
  for (int k = 0; k < in->nops; k++)
    ps[k] = x->val[in->ops[k]];
  x->val[i] = lower_comp(b, x->m, in->calls[0], ps, x->precision);
  b->loc = in->info->loc;
  b->opname = ir_op_name(in->op);
}

static void lower_while(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tb *b = x->b;
  tval *state = fresh_like(b, x->val[in->ops[0]]);
  copy_value(b, state, x->val[in->ops[0]]);
  tb_barrier(b);
  uint64_t head = tb_label(b);
  tval *p = lower_comp(b, x->m, in->calls[IR_WHILE_COND], &state, x->precision);
  if (!p) return;
  read_scalar(b, p);
  tv_release(b, p);
  tb_barrier(b);
  uint64_t exit_at = tb_branch(b, OP_BEQ, CTRL_REG, 0, 0);
  tval *next = lower_comp(b, x->m, in->calls[IR_WHILE_BODY], &state, x->precision);
  if (!next) return;
  b->loc = in->info->loc;
  b->opname = ir_op_name(in->op);
  copy_value(b, state, next);
  tv_release(b, next);
  tb_barrier(b);
  tb_branch(b, OP_JMP, 0, 0, head);
  tb_patch(b, exit_at, tb_label(b));
  x->val[i] = state;
}

static void lower_conditional(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tb *b = x->b;
  int nb = in->ncalls;
  if (nb > CTRL_MAX_BRANCHES) {
    tb_error(b, ST_UNSUPPORTED, "a conditional of %d branches (the TPU backend takes %d)", nb,
             CTRL_MAX_BRANCHES);
    return;
  }
  const tval *sel = x->val[in->ops[0]];
  tval *res = fresh_shaped(b, in->shape);
  read_scalar(b, sel);
  tb_barrier(b);
  uint64_t *to = arena_array(b->a, (size_t)nb + 1, sizeof(uint64_t));
  if (sel->type == IR_PRED) {
    to[0] = tb_branch(b, OP_BNE, CTRL_REG, 0, 0);
  } else {
    for (int k = 0; k + 1 < nb; k++)
      to[k] = tb_branch(b, OP_BEQ, CTRL_REG, tb_sreg(b, (uint32_t)k), 0);
  }
  to[nb - 1] = tb_branch(b, OP_JMP, 0, 0, 0); /* false, or an index out of range */
  uint64_t *join = arena_array(b->a, (size_t)nb + 1, sizeof(uint64_t));
  for (int k = 0; k < nb; k++) {
    tb_patch(b, to[k], tb_label(b));
    tval *arg = x->val[in->ops[k + 1]];
    tval *r = lower_comp(b, x->m, in->calls[k], &arg, x->precision);
    if (!r) return;
    b->loc = in->info->loc;
    b->opname = ir_op_name(in->op);
    copy_value(b, res, r);
    tv_release(b, r);
    tb_barrier(b);
    join[k] = tb_branch(b, OP_JMP, 0, 0, 0);
  }
  uint64_t end = tb_label(b);
  for (int k = 0; k < nb; k++)
    tb_patch(b, join[k], end);
  x->val[i] = res;
}

static void lower_map(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tb *b = x->b;
  tk_elem e;
  memset(&e, 0, sizeof e);
  if (!lower_scalar_comp(x, in->calls[0], &e)) return;
  tval *r = tv_new(b, in->shape->type, in->shape->rank, in->shape->dims);
  e.in_addr = arena_array(b->a, (size_t)in->nops + 1, sizeof(uint64_t));
  for (int k = 0; k < in->nops; k++)
    e.in_addr[k] = tv_addr(x->val[in->ops[k]]);
  e.out_addr = arena_array(b->a, 1, sizeof(uint64_t));
  e.out_addr[0] = tv_addr(r);
  e.count = r->count;
  if (e.noutputs != 1) {
    tb_error(b, ST_UNSUPPORTED, "map's to_apply must return one scalar");
    return;
  }
  if (r->count > 0) tk_elementwise(b, &e);
  x->val[i] = r;
}

bool lower_control(lctx *x, ir_id i) {
  switch (inst_of(x, i)->op) {
  case IR_OP_CALL:
    lower_call(x, i);
    return true;
  case IR_OP_WHILE:
    lower_while(x, i);
    return true;
  case IR_OP_CONDITIONAL:
    lower_conditional(x, i);
    return true;
  case IR_OP_MAP:
    lower_map(x, i);
    return true;
  default:
    return false;
  }
}
