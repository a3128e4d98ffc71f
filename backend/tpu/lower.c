/* lower.c: the lowering's dispatch: lower_comp walks a computation in
 * order (after deciding which elementwise instructions are deferred into
 * their consumer's program and, in a kOutput fusion, which dot takes the
 * root's program as its epilogue) and lower_inst sends each instruction
 * to its op's lowering (lower_move.c, lower_elem.c, lower_ops.c, rows.c,
 * attention.c), inlines fusion computations, and releases operands after
 * their last use. Every value is an HBM buffer (value.h) freed after its
 * last use. */
#include "backend/tpu/lower.h"

static const ir_inst *inst_of(lctx *x, ir_id i) { return &x->comp->insts.v[i]; }

static void consume(lctx *x, ir_id i) {
  if (--x->rem[i] == 0) {
    tv_release(x->b, x->val[i]);
    x->val[i] = NULL;
  }
}

/* Fusion instruction i: a kernel of its own (attention, row kernel) when
 * one takes it, else its computation inlined. */
static void lower_fusion(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tb *b = x->b;
  if (in->a->fusion_kind == IR_FUSION_CUSTOM && lower_attention(x, i, lower_bf16_store(x, i)))
    return;
  bool bf = lower_bf16_store(x, i);
  if (in->a->fusion_kind == IR_FUSION_INPUT && lower_rows_fusion(x, i, bf)) return;
  if (in->a->fusion_kind == IR_FUSION_INPUT)
    tb_explain(b, "not a row kernel (its reduces are not over trailing dims with rows that "
                  "fit VMEM, or it holds an op the row kernel lacks): lowered instruction by "
                  "instruction");
  tval **ps = arena_array(b->a, (size_t)(in->nops ? in->nops : 1), sizeof(tval *));
  for (int k = 0; k < in->nops; k++)
    ps[k] = x->val[in->ops[k]];
  x->val[i] = lower_comp_ex(b, x->m, in->calls[0], ps, x->precision, bf);
  b->loc = in->info->loc;
  b->opname = ir_op_name(in->op);
}

void lower_inst(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tb *b = x->b;
  b->loc = in->info->loc;
  b->opname = ir_op_name(in->op);
  if (x->comp == b->attr_comp) tb_set_op(b, in->info->name,
                                         ir_op_name(in->op), in->info->loc);
  if (in->shape->type != IR_TUPLE && in->shape->type != IR_TOKEN &&
      tk_itype(in->shape->type) == IR_TYPE_INVALID) {
    tb_error(b, ST_UNSUPPORTED, "element type %s is not supported",
             ir_type_name(in->shape->type));
    return;
  }
  x->pending.n = 0;
  tval *ov = in->nops > 0 ? x->val[in->ops[0]] : NULL;
  /* false: the lowering consumed the operand edges it read (x->pending) */
  bool consume_ops = true;
  switch (in->op) {
  case IR_OP_PARAMETER:
    x->val[i] = tv_ref(b, x->params[in->a->parameter_number]);
    break;
  /* Constants become CONST entries of the image: see compile.c's pool. */
  case IR_OP_CONSTANT:
    x->val[i] = tv_const(x->b, in->a->literal);
    break;
  case IR_OP_IOTA:
    lower_iota(x, i);
    break;
  case IR_OP_BROADCAST:
    lower_broadcast(x, i);
    break;
  case IR_OP_RESHAPE:
  case IR_OP_COPY:
    x->val[i] = tv_alias(b, ov, in->shape->type, in->shape->rank, in->shape->dims);
    break;
  case IR_OP_CUSTOM_CALL: /* ir_check_runnable admits the identity targets and TopK only */
    if (!ir_is_topk_custom_call(in)) {
      if (ir_custom_call_kind(in, NULL) != IR_CC_IDENTITY) {
        tb_error(b, ST_UNSUPPORTED, "custom-call has no implementation on the TPU");
        return;
      }
      x->val[i] = tv_alias(b, ov, in->shape->type, in->shape->rank, in->shape->dims);
      break;
    }
    /* fall through - the TopK custom-call is the topk op */
  case IR_OP_TOPK:
    lower_topk(x, i);
    break;
  case IR_OP_BITCAST_CONVERT:
    consume_ops = lower_bitcast(x, i);
    break;
  case IR_OP_TRANSPOSE:
    x->val[i] = tv_transpose(b, ov, in->a->dimensions.v);
    break;
  case IR_OP_SLICE:
    lower_slice(x, i);
    break;
  case IR_OP_REVERSE:
    lower_reverse(x, i);
    break;
  case IR_OP_CONCATENATE:
    lower_concatenate(x, i);
    break;
  case IR_OP_PAD:
    x->val[i] = tv_pad(b, ov, x->val[in->ops[1]], in->a->padding,
                       in->shape->type);
    break;
  case IR_OP_DOT:
    if (!lower_dot_bf16(x, i)) lower_dot(x, i);
    break;
  case IR_OP_CONVOLUTION:
    if (!lower_pointwise_conv(x, i)) lower_conv(x, i);
    break;
  case IR_OP_REDUCE:
    lower_reduce(x, i);
    break;
  case IR_OP_REDUCE_WINDOW:
    lower_reduce_window(x, i);
    break;
  case IR_OP_ALL_REDUCE:
    if (!lower_all_reduce(x, i)) lower_tuple(x, i);
    break;
  case IR_OP_COLLECTIVE_PERMUTE:
  case IR_OP_ALL_TO_ALL:
  case IR_OP_COLLECTIVE_BROADCAST:
  case IR_OP_REPLICA_ID:
  case IR_OP_PARTITION_ID:
    lower_coll_move(x, i);
    break;
  case IR_OP_REDUCE_SCATTER:
  case IR_OP_ALL_GATHER:
    lower_coll_halves(x, i);
    break;
  case IR_OP_ALL_REDUCE_START: case IR_OP_ALL_REDUCE_DONE: case IR_OP_ALL_GATHER_START:
  case IR_OP_ALL_GATHER_DONE: case IR_OP_COLLECTIVE_PERMUTE_START: case IR_OP_COLLECTIVE_PERMUTE_DONE:
    lower_coll_async(x, i);
    break;
  case IR_OP_TUPLE:
    lower_tuple(x, i);
    break;
  case IR_OP_GET_TUPLE_ELEMENT:
    x->val[i] = tv_ref(b, ov->elems[in->a->index]);
    break;
  case IR_OP_FUSION:
    lower_fusion(x, i);
    break;
  case IR_OP_CONVERT:
    if (lower_prologue(x, i)) break;
    lower_elementwise(x, i);
    consume_ops = false;
    break;
  case IR_OP_SELECT_AND_SCATTER:
    lower_select_and_scatter(x, i);
    break;
  case IR_OP_DYNAMIC_SLICE:
    lower_dynamic_slice(x, i);
    break;
  case IR_OP_DYNAMIC_UPDATE_SLICE:
    lower_dynamic_update_slice(x, i);
    break;
  case IR_OP_GATHER:
    lower_gather(x, i);
    break;
  case IR_OP_SCATTER:
    lower_scatter(x, i);
    break;
  case IR_OP_SORT:
    lower_sort(x, i);
    break;
  default:
    if (ir_op_flags(in->op) & OPF_RUNS) {
      lower_small(x, i);
    break;
    }
    if (lower_is_elem(in)) {
      lower_elementwise(x, i);
      consume_ops = false;
    break;
    }
    if (lower_control(x, i)) break;
    tb_error(b, ST_UNSUPPORTED, "op '%s' is not supported by the TPU backend", ir_op_name(in->op));
    return;
  }
  if (consume_ops)
    for (int k = 0; k < in->nops; k++)
      consume(x, in->ops[k]);
  else
    for (int k = 0; k < x->pending.n; k++)
      consume(x, x->pending.v[k]);
}

/* ---- computations ------------------------------------------------------------ */

tval *lower_comp(tb *b, const ir_module *m, ir_comp_id c, tval **params, ir_precision prec) {
  return lower_comp_ex(b, m, c, params, prec, false);
}

static tval *lower_comp_body(tb *b, const ir_module *m, ir_comp_id c, tval **params,
                             ir_precision prec, bool root_bf16);

/* Bounds on the programs deferral builds. Deferred instructions are
 * compiled by recursion from their consumer (dag_inst), one level per
 * instruction of a deferred chain, and a program reads at most
 * TK_MAX_INPUTS buffers (tk_elementwise). Walking the computation in
 * order, an elementwise instruction whose program would read more
 * materialises its deferred operand with the most inputs until it fits
 * (n counts an input once per use: an upper bound), and a chain longer
 * than MAX_CHAIN is cut by materialising its MAX_CHAIN-th link; so
 * neither depends on the computation's size. */
enum { MAX_CHAIN = 256 };

static void cut_programs(lctx *x) {
  const ir_comp *comp = x->comp;
  int32_t *len = arena_array(x->b->a, (size_t)comp->insts.n + 1, sizeof(int32_t));
  int32_t *nin = arena_array(x->b->a, (size_t)comp->insts.n + 1, sizeof(int32_t));
  for (int i = 0; i < comp->insts.n; i++) {
    const ir_inst *in = &comp->insts.v[i];
    if (in->dead || !lower_is_elem(in)) continue;
    for (;;) {
      int32_t l = 0, n = 0;
      ir_id big = IR_NONE;
      for (int k = 0; k < in->nops; k++) {
        ir_id o = in->ops[k];
        if (!x->deferred[o]) {
          n += lower_splat(x, o) ? 0 : 1;
          continue;
        }
        n += nin[o];
        if (len[o] > l) l = len[o];
        if (big == IR_NONE || nin[o] > nin[big]) big = o;
      }
      if (n > TK_MAX_INPUTS && big != IR_NONE) {
        x->deferred[big] = false;
        continue;
      }
      len[i] = l + 1;
      nin[i] = n;
    break;
    }
    if (x->deferred[i] && len[i] >= MAX_CHAIN) x->deferred[i] = false;
  }
}

tval *lower_comp_ex(tb *b, const ir_module *m, ir_comp_id c, tval **params, ir_precision prec,
                    bool root_bf16) {
  if (b->depth >= TB_MAX_DEPTH) {
    tb_error(b, ST_RESOURCE_EXHAUSTED, "computations nested deeper than %d (calling %s)",
             TB_MAX_DEPTH, m->comps.v[c].name);
    return NULL;
  }
  b->depth++;
  tval *r = lower_comp_body(b, m, c, params, prec, root_bf16);
  b->depth--;
  return r;
}

/* The uses of a computation's instructions: users[i] the last user of
 * i, and every user of i, once per operand edge, in increasing order:
 * ulist[uoff[i] .. uoff[i + 1]). x->rem counts them (the root one more). */
typedef struct uses {
  int32_t *users, *uoff, *ulist;
} uses;

static void count_uses(lctx *x, uses *u) {
  const ir_comp *comp = x->comp;
  arena *a = x->b->a;
  int n = comp->insts.n;
  u->users = arena_array(a, (size_t)n + 1, sizeof(int32_t));
  for (int i = 0; i < n; i++) {
    const ir_inst *in = &comp->insts.v[i];
    if (in->dead) continue;
    for (int k = 0; k < in->nops; k++) {
      x->rem[in->ops[k]]++;
      u->users[in->ops[k]] = i;
    }
  }
  u->uoff = arena_array(a, (size_t)n + 2, sizeof(int32_t));
  for (int i = 0; i < n; i++)
    u->uoff[i + 1] = u->uoff[i] + x->rem[i];
  u->ulist = arena_array(a, (size_t)u->uoff[n] + 1, sizeof(int32_t));
  int32_t *ufill = arena_array(a, (size_t)n + 1, sizeof(int32_t));
  for (int j = 0; j < n; j++) {
    const ir_inst *in = &comp->insts.v[j];
    if (in->dead) continue;
    for (int k = 0; k < in->nops; k++)
      u->ulist[u->uoff[in->ops[k]] + ufill[in->ops[k]]++] = j;
  }
  x->rem[comp->root]++;
}

/* Whether j is a bitcast-convert from f16 to bf16: its operand must be
 * in a buffer, as lower_bitcast keeps every bit pattern only from there. */
static bool f16_bits_user(const ir_comp *comp, ir_id j) {
  const ir_inst *us = &comp->insts.v[j];
  return us->op == IR_OP_BITCAST_CONVERT && us->shape->type == IR_BF16 &&
         comp->insts.v[us->ops[0]].shape->type == IR_F16;
}

/* Whether every use of instruction i is elementwise and in the root's
 * program (the root, or deferred). */
static bool used_in_root_program(const lctx *x, const uses *u, ir_id i) {
  const ir_comp *comp = x->comp;
  for (int q = u->uoff[i]; q < u->uoff[i + 1]; q++) {
    ir_id j = u->ulist[q];
    if (!lower_is_elem(&comp->insts.v[j]) || !(j == comp->root || x->deferred[j]) ||
        f16_bits_user(comp, j))
      return false;
  }
  return true;
}

/* Deferral: an elementwise instruction with a single use by an
 * elementwise op of the same element count is computed in its user's
 * program (x->deferred), within cut_programs' bounds. */
static void plan_deferral(lctx *x, const uses *u) {
  const ir_comp *comp = x->comp;
  for (int i = 0; i < comp->insts.n; i++) {
    const ir_inst *in = &comp->insts.v[i];
    if (in->dead || !lower_is_elem(in) || x->rem[i] != 1 || i == comp->root) continue;
    const ir_inst *us = &comp->insts.v[u->users[i]];
    if (!lower_is_elem(us) || us->shape->type == IR_TUPLE || f16_bits_user(comp, u->users[i]))
      continue;
    int64_t a = 1, bb = 1;
    for (int k = 0; k < in->shape->rank; k++)
      a *= in->shape->dims[k];
    for (int k = 0; k < us->shape->rank; k++)
      bb *= us->shape->dims[k];
    if (a == bb) x->deferred[i] = true;
  }
  cut_programs(x);
}

/* The trailing dims of contraction dt's result that are its matmul's N
 * (a row of the result tiles): a dot's rhs free dims; a convolution's
 * output feature when it is the last dim, else none (0). */
static int epi_row_dims(const lctx *x, const ir_inst *dt) {
  if (dt->op == IR_OP_CONVOLUTION)
    return dt->a->conv.out_feature == dt->shape->rank - 1 ? 1 : 0;
  return x->comp->insts.v[dt->ops[1]].shape->rank - dt->a->rhs_batch.n -
         dt->a->rhs_contracting.n;
}

/* Broadcasts of an f32 vector over the N dims of x->epi_dot (a bias)
 * used only inside the root's program: the epilogue reads the vector as
 * a row (x->row_bcast). */
static void plan_row_broadcasts(lctx *x, const uses *u) {
  const ir_comp *comp = x->comp;
  int n = comp->insts.n;
  const ir_inst *dt = &comp->insts.v[x->epi_dot];
  int nN = epi_row_dims(x, dt);
  x->row_bcast = arena_array(x->b->a, (size_t)n + 1, sizeof(bool));
  for (int i = 0; i < n; i++) {
    const ir_inst *in = &comp->insts.v[i];
    const ir_inst *o = in->nops ? &comp->insts.v[in->ops[0]] : NULL;
    if (in->dead || in->op != IR_OP_BROADCAST || !o || o->shape->type != IR_F32 ||
        o->shape->rank != nN || nN < 1 || in->shape->rank != dt->shape->rank ||
        in->a->dimensions.n != nN || lower_splat(x, i))
      continue;
    bool ok = true;
    for (int k = 0; k < nN; k++)
      ok &= in->a->dimensions.v[k] == in->shape->rank - nN + k;
    x->row_bcast[i] = ok && used_in_root_program(x, u, i) && i != comp->root;
  }
}

static bool epi_candidate(const lctx *x, ir_id i) {
  const ir_inst *in = &x->comp->insts.v[i];
  return !in->dead && (in->op == IR_OP_DOT || in->op == IR_OP_CONVOLUTION) && x->rem[i] == 1 &&
         in->shape->type == IR_F32;
}

/* A fusion computation whose f32 or bf16 elementwise root (the mixed-
 * precision cast(relu(dot + b), bf16), a convolution's bias and ReLU)
 * reaches a dot or convolution through deferred elementwise ops (a
 * kOutput fusion) lowers it with the root's program as its epilogue
 * (lower_elementwise): x->epi_dot, and the ops that join the root's
 * program for it. */
static void plan_epilogue(lctx *x, const uses *u) {
  const ir_comp *comp = x->comp;
  int n = comp->insts.n;
  const ir_inst *rt = comp->root >= 0 ? &comp->insts.v[comp->root] : NULL;
  if (!x->params || !rt || !lower_is_elem(rt) ||
      (rt->shape->type != IR_F32 && rt->shape->type != IR_BF16) || x->deferred[comp->root])
    return;
  int64_t rc = 1;
  for (int k = 0; k < rt->shape->rank; k++)
    rc *= rt->shape->dims[k];
  /* Elementwise ops of the root's element count whose every use is in
   * the root's program join it even when used more than once (the
   * program shares their node: dag.memo), so that the whole epilogue
   * (e.g. GELU of a biased dot) is one program. Reverse order: users
   * are decided first. */
  bool has_dot = false;
  for (int i = 0; i < n; i++) has_dot |= epi_candidate(x, i);
  for (int i = n - 1; i >= 0 && has_dot; i--) {
    const ir_inst *in = &comp->insts.v[i];
    if (in->dead || !lower_is_elem(in) || i == comp->root || x->deferred[i] || x->rem[i] < 1 ||
        in->shape->type == IR_TUPLE)
      continue;
    int64_t a = 1;
    for (int k = 0; k < in->shape->rank; k++)
      a *= in->shape->dims[k];
    if (a == rc && used_in_root_program(x, u, i)) x->deferred[i] = true;
  }
  cut_programs(x);
  for (int i = 0; i < n && x->epi_dot == IR_NONE; i++) {
    const ir_inst *in = &comp->insts.v[i];
    if (!epi_candidate(x, i)) continue;
    int64_t dc = 1;
    for (int k = 0; k < in->shape->rank; k++)
      dc *= in->shape->dims[k];
    ir_id us = u->users[i];
    if (dc == rc && (us == comp->root || x->deferred[us]) && lower_is_elem(&comp->insts.v[us]))
      x->epi_dot = i;
  }
  if (x->epi_dot != IR_NONE) plan_row_broadcasts(x, u);
}

/* The steps: uses counted, deferral and the epilogue planned, then every
 * instruction not computed inside another's program lowered in order. */
static tval *lower_comp_body(tb *b, const ir_module *m, ir_comp_id c, tval **params,
                             ir_precision prec, bool root_bf16) {
  const ir_comp *comp = &m->comps.v[c];
  lctx x = {0};
  x.root_bf16 = root_bf16;
  x.b = b;
  x.m = m;
  x.c = c;
  x.comp = comp;
  x.params = params;
  x.precision = prec;
  x.epi_dot = IR_NONE;
  int n = comp->insts.n;
  x.val = arena_array(b->a, (size_t)n + 1, sizeof(tval *));
  x.rem = arena_array(b->a, (size_t)n + 1, sizeof(int32_t));
  x.deferred = arena_array(b->a, (size_t)n + 1, sizeof(bool));
  uses u;
  count_uses(&x, &u);
  plan_deferral(&x, &u);
  plan_epilogue(&x, &u);
  lower_plan_prologues(&x, u.uoff, u.ulist);
  for (int i = 0; i < n && !b->failed; i++) {
    const ir_inst *in = &comp->insts.v[i];
    if (in->dead || x.deferred[i] || i == x.epi_dot || (x.row_bcast && x.row_bcast[i])) continue;
    /* Broadcasts of scalar constants used only by elementwise ops stay
     * immediates. */
    if (lower_splat(&x, i) && in->op == IR_OP_BROADCAST && i != comp->root) {
      bool all = true;
      for (int q = u.uoff[i]; q < u.uoff[i + 1] && all; q++)
        all = lower_is_elem(&comp->insts.v[u.ulist[q]]);
      if (all) {
        x.deferred[i] = true;
        continue;
      }
    }
    if (x.rem[i] == 0 && in->op != IR_OP_PARAMETER) continue; /* unused */
    lower_inst(&x, i);
  }
  if (b->failed) return NULL;
  return x.val[comp->root];
}
