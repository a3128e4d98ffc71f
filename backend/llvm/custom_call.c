/* custom_call.c: custom-calls that call a host function (ir.h, "custom-call")
 * on the cpu target. Identity targets alias their operand (plan.c); a host
 * function is called from a one-range kernel that passes it the operand and
 * result leaves through its binding (a cpu_ffi_call the executable owns,
 * whose address the JIT-compiled code holds as a constant). A failing host
 * function marks its binding; cpu_execute reports the first failure after
 * the entry returns. AOT objects cannot hold such addresses: refused. */
#include "backend/llvm/lower.h"

#include <stdio.h>
#include <stdlib.h>

struct cpu_ffi_call {
  ir_ffi_fn fn;
  void *user;
  char *target, *config, *where;
  int32_t nops, nres;
  ir_ffi_buffer *bufs; /* nops operands then nres results; dims owned */
  bool failed;
  char msg[400];
  cpu_ffi_call *next;
};

void cpu_ffi_invoke(cpu_ffi_call *c, void *const *ops, void *const *res) {
  for (int32_t i = 0; i < c->nops; i++) c->bufs[i].data = ops[i];
  for (int32_t i = 0; i < c->nres; i++) c->bufs[c->nops + i].data = res[i];
  char msg[sizeof c->msg] = "";
  if (c->fn(c->user, c->bufs, c->nops, c->bufs + c->nops, c->nres, c->config, msg, sizeof msg) != 0 &&
      !c->failed) {
    c->failed = true;
    snprintf(c->msg, sizeof c->msg, "%s", msg[0] ? msg : "(no message)");
  }
}

base_status cpu_ffi_check(cpu_ffi_call *list, char *err, size_t errlen) {
  base_status st = ST_OK;
  for (cpu_ffi_call *c = list; c; c = c->next) {
    if (c->failed && st == ST_OK) {
      snprintf(err, errlen, "%s: custom-call target '%s' failed: %s", c->where, c->target, c->msg);
      st = ST_INTERNAL;
    }
    c->failed = false;
  }
  return st;
}

void cpu_ffi_free(cpu_ffi_call *list) {
  while (list) {
    cpu_ffi_call *n = list->next;
    for (int32_t i = 0; i < list->nops + list->nres; i++) free((void *)list->bufs[i].dims);
    free(list->bufs);
    free(list->target);
    free(list->config);
    free(list->where);
    free(list);
    list = n;
  }
}

static char *dup_or_die(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(base_xmalloc(n), s, n);
}

/* Fills the buffer template of one leaf (data comes per call). */
static void leaf_template(ir_ffi_buffer *b, const ir_shape *ls) {
  b->type = ls->type;
  b->rank = ls->rank;
  int64_t *d = base_xmalloc(sizeof(int64_t) * (size_t)(ls->rank ? ls->rank : 1));
  for (int i = 0; i < ls->rank; i++) d[i] = ls->dims[i];
  b->dims = d;
  b->nbytes = (size_t)ir_shape_count(ls) * (size_t)ir_type_size(ls->type);
}

static cpu_ffi_call *new_binding(emitter *e, scope *s, const ir_inst *in, const ir_ffi_entry *fe,
                                 int nops, int nres) {
  cpu_ffi_call *c = base_xmalloc(sizeof *c);
  memset(c, 0, sizeof *c);
  c->fn = fe->fn;
  c->user = fe->user;
  c->target = dup_or_die(fe->target);
  arena *tmp = arena_create();
  c->config = dup_or_die(ir_custom_call_config(in, tmp));
  arena_destroy(tmp);
  char where[512];
  if (in->info->loc.file && in->info->loc.line > 0)
    snprintf(where, sizeof where, "%s:%d:%d: %s", in->info->loc.file, (int)in->info->loc.line,
             (int)in->info->loc.col, in->info->name ? in->info->name : "custom-call");
  else
    snprintf(where, sizeof where, "%s", in->info->name ? in->info->name : "custom-call");
  c->where = dup_or_die(where);
  c->nops = nops;
  c->nres = nres;
  c->bufs = base_xmalloc(sizeof *c->bufs * (size_t)(nops + nres + 1));
  int k = 0;
  for (int o = 0; o < in->nops; o++) {
    const ir_shape *os = llvm_inst(s, in->ops[o])->shape;
    for (int j = 0; j < llvm_leaf_count(os); j++) leaf_template(&c->bufs[k++], llvm_leaf_shape(os, j));
  }
  for (int j = 0; j < nres; j++) leaf_template(&c->bufs[k++], llvm_leaf_shape(in->shape, j));
  c->next = e->ffi_calls;
  e->ffi_calls = c;
  return c;
}

/* Stores the pointers of leaves v[0..n) into a new stack array. */
static LLVMValueRef pointer_array(emitter *e, cbuf **v, int n) {
  LLVMTypeRef at = LLVMArrayType(e->t_ptr, (unsigned)(n ? n : 1));
  LLVMValueRef arr = llvm_alloca(e, at);
  for (int i = 0; i < n; i++) {
    LLVMValueRef ix[2] = {llvm_i64(e, 0), llvm_i64(e, i)};
    LLVMBuildStore(e->b, llvm_buf_ptr(e, v[i]), LLVMBuildInBoundsGEP2(e->b, at, arr, ix, 2, ""));
  }
  return LLVMBuildPointerCast(e->b, arr, e->t_ptr, "");
}

bool llvm_emit_custom_call(emitter *e, scope *s, ir_id id) {
  const ir_inst *in = llvm_inst(s, id);
  char name[256];
  if (!ir_custom_call_target(in, name, sizeof name)) name[0] = 0;
  const ir_ffi_entry *fe = ir_ffi_find(e->opt.ffi, name);
  const char *why = !fe ? "has no implementation on the cpu target"
                    : e->aot ? "calls a host function, which an AOT object cannot (use the JIT)"
                    : s != e->entry_scope ? "calls a host function inside a called computation, "
                                            "which the cpu target does not support"
                                          : NULL;
  if (why)
    return llvm_fail(e, ST_UNSUPPORTED, "%s:%d:%d: custom-call target '%s' %s",
                     in->info->loc.file ? in->info->loc.file : "?", (int)in->info->loc.line,
                     (int)in->info->loc.col, name, why);
  int nops = 0, nres = llvm_leaf_count(in->shape);
  for (int o = 0; o < in->nops; o++) nops += llvm_leaf_count(llvm_inst(s, in->ops[o])->shape);
  cbuf **ops = arena_array(e->a, (size_t)nops + 1, sizeof(cbuf *));
  int k = 0;
  for (int o = 0; o < in->nops; o++)
    for (int j = 0; j < llvm_leaf_count(llvm_inst(s, in->ops[o])->shape); j++)
      ops[k++] = s->mat[in->ops[o]][j];
  cbuf **res = s->mat[id];
  cpu_ffi_call *c = new_binding(e, s, in, fe, nops, nres);
  /* The kernel's parameters: every distinct non-constant leaf. */
  bool *used = arena_array(e->a, (size_t)e->bufs.n + 1, sizeof(bool));
  for (int i = 0; i < nops; i++) used[ops[i]->id] = true;
  for (int i = 0; i < nres; i++) used[res[i]->id] = true;
  cbuf **kb = arena_array(e->a, (size_t)e->bufs.n + 1, sizeof(cbuf *));
  int nk = 0;
  for (int i = 0; i < e->bufs.n; i++)
    if (used[i] && e->bufs.v[i]->kind != CB_CONST) kb[nk++] = e->bufs.v[i];
  kfn kf;
  llvm_kernel_begin(e, &kf, kb, nk, arena_printf(e->a, "k%d.%s", e->nkernels, in->info->name));
  LLVMTypeRef ps[3] = {e->t_ptr, e->t_ptr, e->t_ptr};
  LLVMTypeRef ft = LLVMFunctionType(e->t_void, ps, 3, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(e->mod, "cpu_ffi_invoke");
  if (!fn) fn = LLVMAddFunction(e->mod, "cpu_ffi_invoke", ft);
  LLVMValueRef args[3] = {
      LLVMConstIntToPtr(LLVMConstInt(e->t_i64, (unsigned long long)(uintptr_t)c, 0), e->t_ptr),
      pointer_array(e, ops, nops), pointer_array(e, res, nres)};
  LLVMBuildCall2(e->b, ft, fn, args, 3, "");
  llvm_kernel_end(e, &kf, 1, 0);
  return e->st == ST_OK;
}
