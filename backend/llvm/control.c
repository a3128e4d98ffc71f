/* control.c: call, while and conditional on the cpu, as real control flow
 * in the entry function around the kernels of the called computations.
 *
 * A called computation is lowered as the entry is (llvm_lower_called):
 * its parameters are bound to the caller's buffers, each instruction is a
 * kernel (or nested control flow) into scratch buffers, at the entry
 * function's current block. Then
 *   call         its kernels, then the root's leaves copied into the
 *                call's buffers;
 *   conditional  the selector loaded in the entry function, a switch to
 *                one block per branch (an s32 out of range goes to the
 *                last, a pred true to branch 0), each branch's kernels and
 *                the copy of its root into the conditional's buffers, one
 *                join block;
 *   while        the initial state copied into the while's buffers (the
 *                state), a header block running the condition's kernels
 *                and testing its pred[], a body block running the body's
 *                kernels, copying the new state over the old (through
 *                temporaries where a leaf of the new state is another leaf
 *                of the old) and branching back, an exit block.
 * Scratch lifetimes (plan.c's assign_offsets) are kernel numbers; every
 * scratch buffer live when a loop starts and used inside it is kept live
 * to the loop's end, since the next trip reads it again. */
#include "backend/llvm/lower.h"

static int64_t leaf_bytes(const cbuf *b) { return b->count * ir_type_size(b->type); }

/* dst[l] = src[l] for every leaf of sh, in the entry function (buffers
 * that are the same need no copy). */
static void copy_leaves(emitter *e, const ir_shape *sh, cbuf *const *dst, cbuf *const *src) {
  LLVMPositionBuilderAtEnd(e->b, e->entry_bb_cur);
  int n = llvm_leaf_count(sh);
  for (int l = 0; l < n; l++) {
    int64_t bytes = leaf_bytes(dst[l]);
    if (dst[l] == src[l] || bytes == 0) continue;
    LLVMBuildMemMove(e->b, llvm_entry_buf(e, dst[l]), 1, llvm_entry_buf(e, src[l]), 1,
                     llvm_i64(e, bytes));
  }
}

/* Lowers computation c with parameter p bound to args[p] (leaves);
 * returns its root's leaves, or NULL after a failure. */
static cbuf **lower_callee(emitter *e, ir_comp_id c, cbuf **const *args, int nargs) {
  scope *ns = llvm_scope_new(e, c, NULL);
  const ir_comp *cp = ns->c;
  for (int p = 0; p < cp->nparams && p < nargs; p++)
    if (cp->params[p] >= 0) ns->mat[cp->params[p]] = args[p];
  if (!llvm_lower_called(e, ns)) return NULL;
  return ns->mat[cp->root];
}

/* A new block of the entry function, made current. */
static LLVMBasicBlockRef enter(emitter *e, LLVMBasicBlockRef bb) {
  e->entry_bb_cur = bb;
  LLVMPositionBuilderAtEnd(e->b, bb);
  return bb;
}

static LLVMBasicBlockRef block(emitter *e, const char *name) {
  return LLVMAppendBasicBlockInContext(e->ctx, e->entry, name);
}

static bool emit_call(emitter *e, scope *s, ir_id id) {
  const ir_inst *in = llvm_inst(s, id);
  cbuf ***args = arena_array(e->a, (size_t)in->nops + 1, sizeof(cbuf **));
  for (int k = 0; k < in->nops; k++)
    args[k] = s->mat[in->ops[k]];
  cbuf **r = lower_callee(e, in->calls[0], args, in->nops);
  if (!r) return false;
  copy_leaves(e, in->shape, s->mat[id], r);
  return true;
}

static bool emit_conditional(emitter *e, scope *s, ir_id id) {
  const ir_inst *in = llvm_inst(s, id);
  const cbuf *sel = s->mat[in->ops[0]][0];
  int nb = in->ncalls;
  LLVMPositionBuilderAtEnd(e->b, e->entry_bb_cur);
  LLVMValueRef k;
  if (sel->type == IR_PRED) {
    LLVMValueRef v = LLVMBuildLoad2(e->b, e->t_i8, llvm_entry_buf(e, sel), "pred");
    k = LLVMBuildZExt(e->b, LLVMBuildICmp(e->b, LLVMIntEQ, v, LLVMConstInt(e->t_i8, 0, 0), ""),
                      e->t_i32, "branch");
  } else {
    LLVMValueRef p = LLVMBuildPointerCast(e->b, llvm_entry_buf(e, sel), LLVMPointerType(e->t_i32, 0), "");
    k = LLVMBuildLoad2(e->b, e->t_i32, p, "index"); /* typed pointers (LLVM 14): an i32* */
  }
  LLVMBasicBlockRef join = block(e, "cond.join");
  LLVMBasicBlockRef *bb = arena_array(e->a, (size_t)nb, sizeof *bb);
  for (int b = 0; b < nb; b++)
    bb[b] = block(e, "cond.branch");
  /* out of range (negative included): the last branch */
  LLVMValueRef sw = LLVMBuildSwitch(e->b, k, bb[nb - 1], (unsigned)nb);
  for (int b = 0; b + 1 < nb; b++)
    LLVMAddCase(sw, LLVMConstInt(e->t_i32, (unsigned)b, 0), bb[b]);
  for (int b = 0; b < nb; b++) {
    enter(e, bb[b]);
    cbuf **arg = s->mat[in->ops[b + 1]];
    cbuf **r = lower_callee(e, in->calls[b], &arg, 1);
    if (!r) return false;
    copy_leaves(e, in->shape, s->mat[id], r);
    LLVMBuildBr(e->b, join);
  }
  enter(e, join);
  return true;
}

/* state = next, leaf by leaf, where a leaf of next may be another leaf of
 * state (a body that swaps or passes elements on): those go through
 * temporaries first. */
static void copy_state(emitter *e, const ir_shape *sh, cbuf **state, cbuf **next) {
  int n = llvm_leaf_count(sh);
  cbuf **src = arena_array(e->a, (size_t)n + 1, sizeof(cbuf *));
  for (int l = 0; l < n; l++) {
    src[l] = next[l];
    bool crossed = false;
    for (int j = 0; j < n; j++)
      crossed |= j != l && next[l] == state[j];
    if (!crossed) continue;
    src[l] = llvm_scratch_leaves(e, llvm_leaf_shape(sh, l))[0];
    copy_leaves(e, llvm_leaf_shape(sh, l), &src[l], &next[l]);
  }
  copy_leaves(e, sh, state, src);
}

/* Every scratch buffer live at kernel number l0 stays live to l1. */
static void keep_live(emitter *e, int32_t l0, int32_t l1) {
  for (int i = 0; i < e->bufs.n; i++) {
    cbuf *b = e->bufs.v[i];
    if (b->kind == CB_SCRATCH && b->first_use >= 0 && b->first_use <= l0 && b->last_use >= l0 &&
        b->last_use < l1)
      b->last_use = l1;
  }
}

/* Trips beyond the budget (JIT only: an AOT entry has no way to report).
 * The work a run may use (cpu_options.budget, ir_budget's default) is
 * shared by every loop of the entry: each trip adds ir_while_trip_work, and
 * the trip that would pass the limit fails the replica with the loop's
 * location and trip count, as the evaluator stops such a loop. */
int cpu_while_over(const char *where, int64_t trips, double limit, cpu_rep *rep) {
  cpu_rep_fail(rep, true,
               "%s: stopped after %lld trips: over the limit of %.3g steps of work (does the "
               "condition ever become false?)",
               where, (long long)trips, limit);
  return 1;
}

/* An i64 or double in the entry's allocas, zeroed there. */
static LLVMValueRef entry_counter(emitter *e, LLVMTypeRef t) {
  LLVMValueRef a = llvm_alloca(e, t);
  LLVMBuilderRef tb = LLVMCreateBuilderInContext(e->ctx);
  LLVMPositionBuilderAtEnd(tb, e->alloca_bb);
  LLVMBuildStore(tb, LLVMConstNull(t), a);
  LLVMDisposeBuilder(tb);
  return a;
}

/* At the top of a trip: counts it against the budget; the trip that would
 * pass it calls cpu_while_over and returns from the entry. */
static void count_trip(emitter *e, const ir_inst *in, LLVMValueRef trips) {
  if (!e->while_work) e->while_work = entry_counter(e, e->t_f64);
  double limit = e->opt.budget.max_work > 0 ? e->opt.budget.max_work : IR_BUDGET_WORK;
  double per = ir_while_trip_work(e->m, in);
  LLVMBuilderRef b = e->b;
  LLVMPositionBuilderAtEnd(b, e->entry_bb_cur);
  LLVMValueRef t = LLVMBuildAdd(b, LLVMBuildLoad2(b, e->t_i64, trips, ""), llvm_i64(e, 1), "trips");
  LLVMBuildStore(b, t, trips);
  LLVMValueRef w = LLVMBuildFAdd(b, LLVMBuildLoad2(b, e->t_f64, e->while_work, ""),
                                 LLVMConstReal(e->t_f64, per), "work");
  LLVMBuildStore(b, w, e->while_work);
  LLVMBasicBlockRef over = block(e, "while.over"), go = block(e, "while.trip");
  LLVMBuildCondBr(b, LLVMBuildFCmp(b, LLVMRealOGT, w, LLVMConstReal(e->t_f64, limit), ""), over,
                  go);
  LLVMPositionBuilderAtEnd(b, over);
  char where[512];
  const src_loc *l = &in->info->loc;
  snprintf(where, sizeof where, "%s:%d:%d: %s (while)", l->file ? l->file : "?", (int)l->line,
           (int)l->col, in->info->name ? in->info->name : "?");
  LLVMTypeRef ps[4] = {e->t_ptr, e->t_i64, e->t_f64, e->t_ptr};
  LLVMTypeRef ft = LLVMFunctionType(e->t_i32, ps, 4, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(e->mod, "cpu_while_over");
  if (!fn) fn = LLVMAddFunction(e->mod, "cpu_while_over", ft);
  LLVMValueRef args[4] = {LLVMBuildGlobalStringPtr(b, where, "where"),
                          LLVMBuildSub(b, t, llvm_i64(e, 1), ""), LLVMConstReal(e->t_f64, limit),
                          e->entry_rep};
  LLVMBuildCall2(b, ft, fn, args, 4, "");
  LLVMBuildRetVoid(b);
  enter(e, go);
}

static bool emit_while(emitter *e, scope *s, ir_id id) {
  const ir_inst *in = llvm_inst(s, id);
  LLVMValueRef trips = e->aot ? NULL : entry_counter(e, e->t_i64);
  cbuf **state = s->mat[id];
  copy_leaves(e, in->shape, state, s->mat[in->ops[0]]);
  for (int l = 0; l < llvm_leaf_count(in->shape); l++)
    if (state[l]->kind == CB_SCRATCH) (void)llvm_scratch_off(e, state[l]); /* live from here */
  int32_t l0 = e->nkernels;
  LLVMBasicBlockRef head = block(e, "while.cond"), body = block(e, "while.body"),
                    done = block(e, "while.exit");
  if (trips) LLVMBuildStore(e->b, llvm_i64(e, 0), trips); /* this run of the loop */
  LLVMBuildBr(e->b, head);
  enter(e, head);
  cbuf **p = lower_callee(e, in->calls[IR_WHILE_COND], &state, 1);
  if (!p) return false;
  LLVMPositionBuilderAtEnd(e->b, e->entry_bb_cur);
  LLVMValueRef go = LLVMBuildLoad2(e->b, e->t_i8, llvm_entry_buf(e, p[0]), "go");
  LLVMBuildCondBr(e->b, LLVMBuildICmp(e->b, LLVMIntNE, go, LLVMConstInt(e->t_i8, 0, 0), ""), body,
                  done);
  enter(e, body);
  if (trips) {
    LLVMPositionBuilderAtEnd(e->b, e->entry_bb_cur);
    count_trip(e, in, trips);
  }
  cbuf **next = lower_callee(e, in->calls[IR_WHILE_BODY], &state, 1);
  if (!next) return false;
  copy_state(e, in->shape, state, next);
  for (int l = 0; l < llvm_leaf_count(in->shape); l++)
    if (state[l]->kind == CB_SCRATCH) (void)llvm_scratch_off(e, state[l]); /* live to here */
  LLVMBuildBr(e->b, head);
  enter(e, done);
  keep_live(e, l0, e->nkernels);
  return true;
}

bool llvm_emit_control(emitter *e, scope *s, ir_id id) {
  switch (llvm_inst(s, id)->op) {
  case IR_OP_CALL:
    return emit_call(e, s, id);
  case IR_OP_CONDITIONAL:
    return emit_conditional(e, s, id);
  case IR_OP_WHILE:
    return emit_while(e, s, id);
  default:
    return llvm_fail(e, ST_INTERNAL, "not a control-flow op");
  }
}
