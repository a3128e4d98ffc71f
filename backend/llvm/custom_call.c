/* custom_call.c: custom-calls that call a host function (ir.h, "custom-call")
 * on the cpu target. Identity targets alias their operand (plan.c); a host
 * function is called from the entry function, between kernels, with the
 * operand and result leaves and its binding (a cpu_ffi_call the executable
 * owns, whose address the JIT-compiled code holds as a constant). A failing
 * host function fails its replica (cpu_rep): the entry returns at once and
 * the execution reports the message. Replicas running at once share the
 * binding, which they only read. AOT objects cannot hold such addresses:
 * refused. */
#include "backend/llvm/lower.h"

#include <stdio.h>
#include <stdlib.h>

struct cpu_ffi_call {
  ir_ffi_fn fn;
  void *user;
  char *target, *config, *where;
  int32_t nops, nres;
  ir_ffi_buffer *bufs; /* nops operands then nres results; dims owned; data set per call */
  cpu_ffi_call *next;
};

int cpu_ffi_invoke(cpu_ffi_call *c, void *const *ops, void *const *res, cpu_rep *rep) {
  /* The template is shared by replicas running at once: fill a copy. */
  int32_t nb = c->nops + c->nres;
  ir_ffi_buffer stack[16], *b = nb <= 16 ? stack : malloc(sizeof *b * (size_t)nb);
  if (!b) {
    cpu_rep_fail(rep, true, "%s: custom-call target '%s': out of memory", c->where, c->target);
    return 1;
  }
  memcpy(b, c->bufs, sizeof *b * (size_t)nb);
  for (int32_t i = 0; i < c->nops; i++) b[i].data = ops[i];
  for (int32_t i = 0; i < c->nres; i++) b[c->nops + i].data = res[i];
  char msg[400] = "";
  int rc = c->fn(c->user, b, c->nops, b + c->nops, c->nres, c->config, msg, sizeof msg) != 0;
  if (b != stack) free(b);
  if (rc)
    cpu_rep_fail(rep, true, "%s: custom-call target '%s' failed: %s", c->where, c->target,
                 msg[0] ? msg : "(no message)");
  return rc;
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
  cbuf **ops;
  int nops = llvm_operand_leaves(e, s, in, &ops), nres = llvm_leaf_count(in->shape);
  cbuf **res = s->mat[id];
  cpu_ffi_call *c = new_binding(e, s, in, fe, nops, nres);
  LLVMPositionBuilderAtEnd(e->b, e->entry_bb_cur);
  LLVMValueRef args[4] = {
      LLVMConstIntToPtr(LLVMConstInt(e->t_i64, (unsigned long long)(uintptr_t)c, 0), e->t_ptr),
      llvm_entry_ptrs(e, ops, nops), llvm_entry_ptrs(e, res, nres), e->entry_rep};
  llvm_entry_call_checked(e, "cpu_ffi_invoke", args, 4);
  return e->st == ST_OK;
}
