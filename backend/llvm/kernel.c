/* kernel.c: loop nests and kernel functions, and how the entry function
 * calls them.
 *
 * A kernel is two functions: body(bufs..., lo, hi), whose buffer pointers
 * are noalias parameters (inlined, the alias facts become scoped metadata
 * that LLVM's vectoriser uses), and wrapper(env, lo, hi), the cpu_kernel_fn
 * the entry passes to the parallel-for callback. Rows [lo, hi) partition
 * the kernel's iteration space; the entry runs a kernel through parfor only
 * when its estimated work is large enough to pay for the fork. */
#include "backend/llvm/lower.h"

enum { PAR_MIN_WORK = 1 << 15 };

LLVMValueRef llvm_alloca(emitter *e, LLVMTypeRef t) {
  LLVMBuilderRef tb = LLVMCreateBuilderInContext(e->ctx);
  LLVMPositionBuilderAtEnd(tb, e->alloca_bb);
  LLVMValueRef a = LLVMBuildAlloca(tb, t, "");
  LLVMDisposeBuilder(tb);
  return a;
}

void llvm_level_push(emitter *e) { e->level++; }

void llvm_level_pop(emitter *e) {
  while (e->memo.n > 0 && e->memo.v[e->memo.n - 1].level >= e->level) e->memo.n--;
  e->level--;
}

LLVMValueRef llvm_loop_begin(emitter *e, loop *l, LLVMValueRef lo, LLVMValueRef hi) {
  LLVMBuilderRef b = e->b;
  l->var = llvm_alloca(e, e->t_i64);
  l->hi = hi;
  LLVMBuildStore(b, lo, l->var);
  l->header = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "loop");
  l->body = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "body");
  l->exit = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "exit");
  LLVMBuildBr(b, l->header);
  LLVMPositionBuilderAtEnd(b, l->header);
  l->i = LLVMBuildLoad2(b, e->t_i64, l->var, "i");
  LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, l->i, hi, ""), l->body, l->exit);
  LLVMPositionBuilderAtEnd(b, l->body);
  llvm_level_push(e);
  return l->i;
}

void llvm_loop_end(emitter *e, loop *l) {
  LLVMBuilderRef b = e->b;
  llvm_level_pop(e);
  LLVMBuildStore(b, LLVMBuildNSWAdd(b, l->i, llvm_i64(e, 1), ""), l->var);
  LLVMBuildBr(b, l->header);
  LLVMPositionBuilderAtEnd(b, l->exit);
}

LLVMValueRef llvm_buf_ptr(emitter *e, const cbuf *cb) {
  if (cb->kind == CB_CONST) return LLVMBuildPointerCast(e->b, cb->global, e->t_ptr, "");
  BASE_ASSERT(e->buf_ptr && e->buf_ptr[cb->id]);
  return e->buf_ptr[cb->id];
}

static void add_attr(emitter *e, LLVMValueRef fn, unsigned at, const char *name) {
  unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, at, LLVMCreateEnumAttribute(e->ctx, k, 0));
}

void llvm_kernel_begin(emitter *e, kfn *k, cbuf **bufs, int nbufs, const char *name) {
  memset(k, 0, sizeof *k);
  k->bufs = bufs;
  k->nbufs = nbufs;
  k->saved_fn = e->fn;
  k->saved_alloca = e->alloca_bb;
  LLVMTypeRef *ps = arena_array(e->a, (size_t)nbufs + 2, sizeof *ps);
  for (int i = 0; i < nbufs; i++) ps[i] = e->t_ptr;
  ps[nbufs] = ps[nbufs + 1] = e->t_i64;
  char *bn = arena_printf(e->a, "%s.body", name);
  k->body = LLVMAddFunction(e->mod, bn, LLVMFunctionType(e->t_void, ps, (unsigned)nbufs + 2, 0));
  LLVMSetLinkage(k->body, LLVMInternalLinkage);
  add_attr(e, k->body, LLVMAttributeFunctionIndex, "alwaysinline");
  add_attr(e, k->body, LLVMAttributeFunctionIndex, "nounwind");
  k->wrapper = LLVMAddFunction(e->mod, name, e->t_kernel);
  LLVMSetLinkage(k->wrapper, LLVMInternalLinkage);
  add_attr(e, k->wrapper, LLVMAttributeFunctionIndex, "nounwind");
  e->buf_ptr = arena_array(e->a, (size_t)e->bufs.n + 1, sizeof(LLVMValueRef));
  for (int i = 0; i < nbufs; i++) {
    LLVMValueRef p = LLVMGetParam(k->body, (unsigned)i);
    add_attr(e, k->body, (unsigned)i + 1, "noalias");
    e->buf_ptr[bufs[i]->id] = p;
  }
  k->lo = LLVMGetParam(k->body, (unsigned)nbufs);
  k->hi = LLVMGetParam(k->body, (unsigned)nbufs + 1);
  e->fn = k->body;
  e->alloca_bb = LLVMAppendBasicBlockInContext(e->ctx, k->body, "allocas");
  LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(e->ctx, k->body, "start");
  LLVMPositionBuilderAtEnd(e->b, start);
  e->memo.n = 0;
  e->level = 0;
}

/* Loads buffer pointer b from the wrapper's env. */
static LLVMValueRef env_ptr(emitter *e, LLVMValueRef env, const cbuf *cb) {
  LLVMBuilderRef b = e->b;
  LLVMTypeRef pp = LLVMPointerType(e->t_ptr, 0);
  LLVMValueRef slots = LLVMBuildPointerCast(b, env, pp, "");
  int slot = cb->kind == CB_INPUT ? 0 : cb->kind == CB_OUTPUT ? 1 : 2;
  LLVMValueRef sv = llvm_i64(e, slot);
  LLVMValueRef base = LLVMBuildLoad2(b, e->t_ptr, LLVMBuildInBoundsGEP2(b, e->t_ptr, slots, &sv, 1, ""), "");
  if (cb->kind == CB_SCRATCH) {
    LLVMValueRef off = llvm_scratch_off(e, (cbuf *)cb);
    return LLVMBuildInBoundsGEP2(b, e->t_i8, base, &off, 1, "");
  }
  LLVMValueRef arr = LLVMBuildPointerCast(b, base, pp, "");
  LLVMValueRef iv = llvm_i64(e, cb->index);
  return LLVMBuildLoad2(b, e->t_ptr, LLVMBuildInBoundsGEP2(b, e->t_ptr, arr, &iv, 1, ""), "");
}

void llvm_kernel_end(emitter *e, kfn *k, int64_t n, double work) {
  LLVMBuilderRef b = e->b;
  e->work += work;
  LLVMBuildRetVoid(b);
  /* allocas -> start */
  LLVMBasicBlockRef start = LLVMGetNextBasicBlock(e->alloca_bb);
  LLVMPositionBuilderAtEnd(b, e->alloca_bb);
  LLVMBuildBr(b, start);
  /* wrapper */
  LLVMBasicBlockRef wb = LLVMAppendBasicBlockInContext(e->ctx, k->wrapper, "entry");
  LLVMPositionBuilderAtEnd(b, wb);
  LLVMValueRef env = LLVMGetParam(k->wrapper, 0);
  LLVMValueRef *args = arena_array(e->a, (size_t)k->nbufs + 2, sizeof *args);
  for (int i = 0; i < k->nbufs; i++) args[i] = env_ptr(e, env, k->bufs[i]);
  args[k->nbufs] = LLVMGetParam(k->wrapper, 1);
  args[k->nbufs + 1] = LLVMGetParam(k->wrapper, 2);
  LLVMBuildCall2(b, LLVMGlobalGetValueType(k->body), k->body, args, (unsigned)k->nbufs + 2, "");
  LLVMBuildRetVoid(b);
  /* back to the entry: call it */
  e->fn = k->saved_fn;
  e->alloca_bb = k->saved_alloca;
  e->buf_ptr = NULL;
  e->memo.n = 0;
  e->level = 0;
  e->nkernels++;
  LLVMPositionBuilderAtEnd(b, e->entry_bb_cur);
  if (n <= 0) return;
  LLVMValueRef cargs[3] = {e->entry_env, llvm_i64(e, 0), llvm_i64(e, n)};
  if (n > 1 && work >= PAR_MIN_WORK) {
    LLVMValueRef isnull = LLVMBuildIsNull(b, e->entry_parfor, "");
    LLVMBasicBlockRef par = LLVMAppendBasicBlockInContext(e->ctx, e->entry, "par");
    LLVMBasicBlockRef ser = LLVMAppendBasicBlockInContext(e->ctx, e->entry, "ser");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(e->ctx, e->entry, "join");
    LLVMBuildCondBr(b, isnull, ser, par);
    LLVMPositionBuilderAtEnd(b, par);
    LLVMValueRef pargs[4] = {e->entry_parctx, k->wrapper, e->entry_env, llvm_i64(e, n)};
    LLVMBuildCall2(b, e->t_parfor, e->entry_parfor, pargs, 4, "");
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, ser);
    LLVMBuildCall2(b, e->t_kernel, k->wrapper, cargs, 3, "");
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, join);
    e->entry_bb_cur = join;
  } else {
    LLVMBuildCall2(b, e->t_kernel, k->wrapper, cargs, 3, "");
  }
}

/* Rough work per output element: reduction and window trip counts. */
static double elem_work(const ir_module *m, const ir_comp *c, const ir_inst *in) {
  double w = 1;
  switch (in->op) {
  case IR_OP_REDUCE: {
    const ir_shape *is = c->insts.v[in->ops[0]].shape;
    for (int i = 0; i < in->a->dimensions.n; i++) w *= (double)is->dims[in->a->dimensions.v[i]];
    break;
  }
  case IR_OP_REDUCE_WINDOW:
    for (int i = 0; i < ir_window_of(in->a)->rank; i++) w *= (double) ir_window_of(in->a)->dims[i].size;
    break;
  case IR_OP_DOT: {
    const ir_shape *ls = c->insts.v[in->ops[0]].shape;
    for (int i = 0; i < in->a->lhs_contracting.n; i++) w *= (double)ls->dims[in->a->lhs_contracting.v[i]];
    break;
  }
  case IR_OP_CONVOLUTION: {
    const ir_shape *ks = c->insts.v[in->ops[1]].shape;
    int64_t o = ks->dims[in->a->conv.k_out];
    w = (double)ir_shape_count(ks) / (double)(o ? o : 1);
    break;
  }
  case IR_OP_FUSION: {
    const ir_comp *fc = &m->comps.v[in->calls[0]];
    for (int i = 0; i < fc->insts.n; i++)
      if (!fc->insts.v[i].dead && fc->insts.v[i].op != IR_OP_FUSION)
        w += elem_work(m, fc, &fc->insts.v[i]) - 1;
    break;
  }
  default: break;
  }
  return w;
}

static bool same_dims(const ir_shape *a, const ir_shape *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* One loop nest storing leaves [l0, l1) (all of one shape) of id into outs. */
static void kernel_leaves(emitter *e, scope *s, ir_id id, cbuf **outs, int l0, int l1, double wfac) {
  const ir_inst *in = llvm_inst(s, id);
  const ir_shape *sh = llvm_leaf_shape(in->shape, l0);
  int64_t n = ir_shape_count(sh);
  bool *used = arena_array(e->a, (size_t)e->bufs.n + 1, sizeof(bool));
  llvm_collect(e, s, id, true, used);
  for (int l = l0; l < l1; l++) used[outs[l]->id] = true;
  cbuf **kb = arena_array(e->a, (size_t)e->bufs.n + 1, sizeof(cbuf *));
  int nk = 0;
  for (int i = 0; i < e->bufs.n; i++)
    if (used[i] && e->bufs.v[i]->kind != CB_CONST) kb[nk++] = e->bufs.v[i];
  bool flat = sh->rank <= 1 || !llvm_needs_multi(e, s, id);
  int64_t inner = sh->rank ? sh->dims[sh->rank - 1] : 1;
  int64_t rows = flat ? n : (inner ? n / inner : 0);
  kfn k;
  char *name = arena_printf(e->a, "k%d.%s", e->nkernels, in->info->name);
  llvm_kernel_begin(e, &k, kb, nk, name);
  loop lr, li;
  idx ix;
  memset(&ix, 0, sizeof ix);
  ix.rank = sh->rank;
  ix.dims = sh->dims;
  LLVMValueRef r = llvm_loop_begin(e, &lr, k.lo, k.hi);
  if (flat) {
    ix.lin = r;
    if (sh->rank <= 1) {
      ix.have_multi = true;
      ix.v[0] = r;
    }
  } else {
    idx row;
    memset(&row, 0, sizeof row);
    row.rank = sh->rank - 1;
    row.dims = sh->dims;
    row.lin = r;
    llvm_idx_multi(e, &row);
    LLVMValueRef j = llvm_loop_begin(e, &li, llvm_i64(e, 0), llvm_i64(e, inner));
    ix.have_multi = true;
    for (int d = 0; d < sh->rank - 1; d++) ix.v[d] = row.v[d];
    ix.v[sh->rank - 1] = j;
    ix.lin = LLVMBuildNUWAdd(e->b, LLVMBuildNUWMul(e->b, r, llvm_i64(e, inner), ""), j, "");
  }
  for (int l = l0; l < l1; l++) {
    LLVMValueRef v = llvm_gen_self(e, s, id, l, &ix);
    llvm_store(e, outs[l]->type, llvm_buf_ptr(e, outs[l]), llvm_idx_lin(e, &ix), v);
  }
  if (!flat) llvm_loop_end(e, &li);
  llvm_loop_end(e, &lr);
  llvm_kernel_end(e, &k, rows, (double)n * wfac);
}

bool llvm_emit_kernel(emitter *e, scope *s, ir_id id) {
  return llvm_emit_kernel_to(e, s, id, s->mat[id]);
}

bool llvm_emit_kernel_to(emitter *e, scope *s, ir_id id, cbuf **outs) {
  const ir_inst *in = llvm_inst(s, id);
  int nl = llvm_leaf_count(in->shape);
  double w = elem_work(e->m, s->c, in);
  bool all_same = true;
  for (int l = 1; l < nl; l++)
    all_same = all_same && same_dims(llvm_leaf_shape(in->shape, 0),
                                     llvm_leaf_shape(in->shape, l));
  if (nl == 0) return true;
  if (all_same) {
    kernel_leaves(e, s, id, outs, 0, nl, w);
  } else {
    for (int l = 0; l < nl; l++) kernel_leaves(e, s, id, outs, l, l + 1, w);
  }
  return e->st == ST_OK;
}
