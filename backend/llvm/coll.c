/* coll.c: collectives across replicas on the cpu target
 * (docs/cpu-backend.md, "Replicas").
 *
 * A program compiled for N > 1 replicas runs as N copies of the entry
 * function on N host threads (jit.c, cpu_execute_replicas), each passing
 * its own context (cpu_rep) as the entry's sixth argument. A collective is
 * a call from the entry function, between kernels:
 *
 *   rc = cpu_coll_run(rep, coll, ops, res, fold)
 *
 * coll is the instruction's descriptor (groups resolved for N, leaf sizes,
 * its location), made here and owned by the executable, its address a
 * constant of the JIT-compiled code; ops and res the pointers of its
 * operand and result leaves; fold one generated function per leaf for the
 * reducing collectives, fold(acc, x, lo, hi): acc[i] = to_apply(acc[i],
 * x[i]), the to_apply inlined as a reducer's is (gen.c), so its numerics
 * are the cpu's (bit for bit with the evaluator under strict numerics). A
 * nonzero rc (the replica failed; rep says why and the replica has left
 * the rendezvous) returns from the entry at once.
 *
 * The replicas meet through one coll_rdv of N members (base/coll.h): every
 * replica runs every collective, exchanging under a key made of the
 * collective's number in the program and how many collectives the replica
 * has run, so replicas that reach different collectives fail, naming both.
 *
 * all-reduce, for a group g of n members with this replica at position p:
 * exchange operand pointers; fold chunk p (coll_chunk over each leaf's
 * elements) in coll.h's order into this replica's result (x[g[p+1]] first,
 * ..., x[g[p]] last); release; exchange result pointers; copy the other
 * chunks from the results of the members that folded them; release. Each
 * chunk is folded by one replica in the fixed order, so the bits depend on
 * neither timing nor threads. With one replica (cpu_options.replicas <= 1)
 * an all-reduce is the identity and plan.c aliases it instead. */
#include "backend/llvm/lower.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

enum { MAX_LEAVES = 64 };

struct cpu_coll {
  ir_op op;
  uint32_t uid;       /* its number in the program (part of the key) */
  char *where;        /* "file:line:col: all-reduce %name" */
  int32_t nleaves;    /* result leaves (all-reduce: operand leaves too) */
  int64_t *count;     /* per result leaf: elements */
  int32_t *esize;     /* per result leaf: bytes per element */
  int32_t *group;     /* per replica: its group */
  int32_t *pos;       /* per replica: its position in its group */
  int32_t **members;  /* per group: replica ids in group order */
  int32_t *gsize;     /* per group: member count */
  cpu_coll *next;
};

void cpu_coll_free(cpu_coll *list) {
  while (list) {
    cpu_coll *n = list->next;
    free(list->where);
    free(list->count);
    free(list->esize);
    free(list->group);
    free(list->pos);
    free(list->members); /* the member arrays live in one block after it */
    free(list->gsize);
    free(list);
    list = n;
  }
}

void cpu_rep_fail(cpu_rep *r, bool own, const char *fmt, ...) {
  if (r->failed) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->msg, sizeof r->msg, fmt, ap);
  va_end(ap);
  r->failed = true;
  r->own = own;
  if (r->rdv) coll_rdv_leave(r->rdv, r->id, r->msg);
}

bool llvm_is_collective(ir_op op) { return op == IR_OP_ALL_REDUCE; }

/* ---- run time ------------------------------------------------------------- */

/* Exchange (phase 0, 2) or release (phase 1, 3) of collective c; false
 * after recording the failure. */
static bool meet(cpu_rep *r, const cpu_coll *c, int phase, const void *mine) {
  char msg[512];
  uint64_t key = (uint64_t)c->uid << 40 | (r->seq & ((1ull << 38) - 1)) << 2 | (uint64_t)(phase / 2);
  int rc = phase % 2 == 0 ? coll_rdv_exchange(r->rdv, r->id, key, mine, r->all, msg, sizeof msg)
                          : coll_rdv_release(r->rdv, r->id, msg, sizeof msg);
  if (rc == 0) return true;
  cpu_rep_fail(r, false, "%s: %s", c->where, msg);
  return false;
}

static const uint8_t *leaf_of(const cpu_rep *r, int replica, int leaf) {
  return ((void *const *)r->all[replica])[leaf];
}

static int all_reduce(cpu_rep *r, const cpu_coll *c, void *const *ops, void *const *res,
                      const cpu_fold_fn *fold) {
  int g = c->group[r->id], p = c->pos[r->id], n = c->gsize[g];
  const int32_t *mem = c->members[g];
  if (!meet(r, c, 0, ops)) return 1;
  for (int l = 0; l < c->nleaves; l++) {
    int64_t lo, hi;
    coll_chunk(c->count[l], n, p, &lo, &hi);
    if (hi <= lo) continue;
    size_t es = (size_t)c->esize[l];
    uint8_t *acc = res[l];
    memcpy(acc + (size_t)lo * es, leaf_of(r, mem[coll_term(n, p, 0)], l) + (size_t)lo * es,
           (size_t)(hi - lo) * es);
    for (int k = 1; k < n; k++) fold[l](acc, leaf_of(r, mem[coll_term(n, p, k)], l), lo, hi);
  }
  if (!meet(r, c, 1, NULL) || !meet(r, c, 2, res)) return 1;
  for (int l = 0; l < c->nleaves; l++) {
    size_t es = (size_t)c->esize[l];
    for (int q = 0; q < n; q++) {
      int64_t lo, hi;
      coll_chunk(c->count[l], n, q, &lo, &hi);
      if (q == p || hi <= lo) continue;
      memcpy((uint8_t *)res[l] + (size_t)lo * es, leaf_of(r, mem[q], l) + (size_t)lo * es,
             (size_t)(hi - lo) * es);
    }
  }
  return meet(r, c, 3, NULL) ? 0 : 1;
}

int cpu_coll_run(cpu_rep *r, const cpu_coll *c, void *const *ops, void *const *res,
                 const cpu_fold_fn *fold) {
  if (r->failed) return 1;
  if (!r->rdv) {
    cpu_rep_fail(r, true, "%s: a collective of a program compiled for several replicas, run as one",
                 c->where);
    return 1;
  }
  int rc = 1;
  switch (c->op) {
  case IR_OP_ALL_REDUCE: rc = all_reduce(r, c, ops, res, fold); break;
  default: cpu_rep_fail(r, true, "%s: not a collective the cpu runs", c->where); break;
  }
  r->seq++;
  return rc;
}

/* ---- compile time --------------------------------------------------------- */

static bool fail_at(emitter *e, const ir_inst *in, const char *fmt, ...) BASE_PRINTF(3, 4);
static bool fail_at(emitter *e, const ir_inst *in, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return llvm_fail(e, ST_UNSUPPORTED, "%s:%d:%d: %s", in->info->loc.file ? in->info->loc.file : "?",
                   (int)in->info->loc.line, (int)in->info->loc.col, msg);
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(base_xmalloc(n), s, n);
}

/* Fills c's groups from in's replica_groups for e->opt.replicas replicas
 * (none listed: one group of every replica in order; a replica in no
 * listed group: a group of its own). */
static bool resolve_groups(emitter *e, const ir_inst *in, cpu_coll *c) {
  int N = e->opt.replicas;
  const ir_replica_groups *rg = &in->a->replica_groups;
  int listed = 0;
  for (int g = 0; g < rg->ngroups; g++) listed += rg->groups[g].n;
  int ng = rg->ngroups ? rg->ngroups : 1;
  c->group = base_xmalloc(sizeof(int32_t) * (size_t)N);
  c->pos = base_xmalloc(sizeof(int32_t) * (size_t)N);
  c->gsize = base_xmalloc(sizeof(int32_t) * (size_t)(ng + N));
  /* the pointer table, then every member id (at most N + listed) */
  c->members = base_xmalloc(sizeof(int32_t *) * (size_t)(ng + N) + sizeof(int32_t) * (size_t)(N + listed));
  int32_t *ids = (int32_t *)(c->members + ng + N);
  for (int r = 0; r < N; r++) c->group[r] = -1;
  if (!rg->ngroups) {
    c->members[0] = ids;
    c->gsize[0] = N;
    for (int r = 0; r < N; r++) ids[r] = r, c->group[r] = 0, c->pos[r] = r;
    return true;
  }
  int k = 0;
  for (int g = 0; g < rg->ngroups; g++) {
    c->members[g] = ids + k;
    c->gsize[g] = (int32_t)rg->groups[g].n;
    for (int j = 0; j < rg->groups[g].n; j++) {
      int64_t id = rg->groups[g].v[j];
      if (id < 0 || id >= N)
        return fail_at(e, in, "%s %%%s: replica_groups names replica %lld; the program runs %d replicas",
                       ir_op_name(in->op), in->info->name, (long long)id, N);
      if (c->group[id] >= 0)
        return fail_at(e, in, "%s %%%s: replica_groups lists replica %lld twice", ir_op_name(in->op),
                       in->info->name, (long long)id);
      c->group[id] = g;
      c->pos[id] = j;
      ids[k++] = (int32_t)id;
    }
  }
  for (int r = 0; r < N; r++) {
    if (c->group[r] >= 0) continue;
    c->members[ng] = ids + k;
    c->gsize[ng] = 1;
    ids[k++] = r;
    c->group[r] = ng++;
    c->pos[r] = 0;
  }
  return true;
}

/* fold(acc, x, lo, hi) for to_apply comp over element type t: a kernel body
 * that the entry does not call, whose address the helper gets. */
static LLVMValueRef fold_fn(emitter *e, ir_comp_id comp, ir_type t, const char *name) {
  cbuf *bufs[2] = {llvm_new_buf(e, CB_INPUT, t, 0), llvm_new_buf(e, CB_INPUT, t, 0)};
  kfn k;
  llvm_kernel_begin(e, &k, bufs, 2, name);
  loop l;
  LLVMValueRef i = llvm_loop_begin(e, &l, k.lo, k.hi);
  LLVMValueRef acc = llvm_buf_ptr(e, bufs[0]);
  LLVMValueRef args[2] = {llvm_load(e, t, acc, i), llvm_load(e, t, llvm_buf_ptr(e, bufs[1]), i)}, out[1];
  llvm_gen_call(e, comp, args, out);
  llvm_store(e, t, acc, i, out[0]);
  llvm_loop_end(e, &l);
  llvm_kernel_end(e, &k, 0, 0);
  return k.body;
}

int llvm_operand_leaves(emitter *e, scope *s, const ir_inst *in, cbuf ***out) {
  int n = 0;
  for (int o = 0; o < in->nops; o++) n += llvm_leaf_count(llvm_inst(s, in->ops[o])->shape);
  cbuf **v = arena_array(e->a, (size_t)n + 1, sizeof(cbuf *));
  int k = 0;
  for (int o = 0; o < in->nops; o++)
    for (int j = 0; j < llvm_leaf_count(llvm_inst(s, in->ops[o])->shape); j++) v[k++] = s->mat[in->ops[o]][j];
  *out = v;
  return n;
}

/* The folds of a reducing collective, one per result leaf (the to_apply
 * takes two scalars of the leaf's type). */
static LLVMValueRef fold_array(emitter *e, const ir_inst *in, const cpu_coll *c) {
  const ir_comp *ta = in->ncalls == 1 ? &e->m->comps.v[in->calls[0]] : NULL;
  LLVMTypeRef at = LLVMArrayType(e->t_ptr, (unsigned)(c->nleaves ? c->nleaves : 1));
  LLVMValueRef fns[MAX_LEAVES];
  for (int l = 0; l < c->nleaves; l++) {
    ir_type t = llvm_leaf_shape(in->shape, l)->type;
    if (!ta || ta->nparams != 2 || ta->params[0] < 0 || ta->insts.v[ta->params[0]].shape->type != t ||
        ta->insts.v[ta->params[0]].shape->rank != 0) {
      fail_at(e, in, "%s %%%s: to_apply does not reduce two %s scalars", ir_op_name(in->op),
              in->info->name, ir_type_name(t));
      return NULL;
    }
    fns[l] = fold_fn(e, in->calls[0], t, arena_printf(e->a, "fold%d.%d", (int)c->uid, l));
  }
  LLVMPositionBuilderAtEnd(e->b, e->entry_bb_cur);
  LLVMValueRef arr = llvm_alloca(e, at);
  for (int l = 0; l < c->nleaves; l++) {
    LLVMValueRef ix[2] = {llvm_i64(e, 0), llvm_i64(e, l)};
    LLVMBuildStore(e->b, LLVMBuildPointerCast(e->b, fns[l], e->t_ptr, ""),
                   LLVMBuildInBoundsGEP2(e->b, at, arr, ix, 2, ""));
  }
  return LLVMBuildPointerCast(e->b, arr, e->t_ptr, "");
}

bool llvm_emit_collective(emitter *e, scope *s, ir_id id) {
  const ir_inst *in = llvm_inst(s, id);
  if (e->aot)
    return fail_at(e, in, "%s %%%s: an AOT object runs one replica; %d replicas need the JIT",
                   ir_op_name(in->op), in->info->name, e->opt.replicas);
  cbuf **ops;
  int nops = llvm_operand_leaves(e, s, in, &ops);
  int nres = llvm_leaf_count(in->shape);
  if (nres > MAX_LEAVES)
    return fail_at(e, in, "%s %%%s: more than %d leaves", ir_op_name(in->op), in->info->name, MAX_LEAVES);
  cpu_coll *c = base_xmalloc(sizeof *c);
  memset(c, 0, sizeof *c);
  c->next = e->colls;
  e->colls = c;
  c->op = in->op;
  c->uid = (uint32_t)e->ncolls++;
  char where[512];
  snprintf(where, sizeof where, "%s:%d:%d: %s %%%s", in->info->loc.file ? in->info->loc.file : "?",
           (int)in->info->loc.line, (int)in->info->loc.col, ir_op_name(in->op), in->info->name);
  c->where = dup_str(where);
  c->nleaves = nres;
  c->count = base_xmalloc(sizeof(int64_t) * (size_t)(nres + 1));
  c->esize = base_xmalloc(sizeof(int32_t) * (size_t)(nres + 1));
  for (int l = 0; l < nres; l++) {
    const ir_shape *ls = llvm_leaf_shape(in->shape, l);
    c->count[l] = ir_shape_count(ls);
    c->esize[l] = (int32_t)ir_type_size(ls->type);
  }
  if (!resolve_groups(e, in, c)) return false;
  if (in->op == IR_OP_ALL_REDUCE && nops != nres)
    return fail_at(e, in, "all-reduce %%%s: %d operand leaves for %d results", in->info->name, nops, nres);
  LLVMValueRef fold = in->op == IR_OP_ALL_REDUCE ? fold_array(e, in, c) : LLVMConstNull(e->t_ptr);
  if (!fold) return false;
  LLVMPositionBuilderAtEnd(e->b, e->entry_bb_cur);
  LLVMValueRef args[5] = {e->entry_rep,
                          LLVMConstIntToPtr(LLVMConstInt(e->t_i64, (unsigned long long)(uintptr_t)c, 0), e->t_ptr),
                          llvm_entry_ptrs(e, ops, nops), llvm_entry_ptrs(e, s->mat[id], nres), fold};
  llvm_entry_call_checked(e, "cpu_coll_run", args, 5);
  return e->st == ST_OK;
}

LLVMValueRef llvm_entry_ptrs(emitter *e, cbuf *const *v, int n) {
  LLVMTypeRef at = LLVMArrayType(e->t_ptr, (unsigned)(n ? n : 1));
  LLVMValueRef arr = llvm_alloca(e, at);
  for (int i = 0; i < n; i++) {
    LLVMValueRef ix[2] = {llvm_i64(e, 0), llvm_i64(e, i)};
    LLVMBuildStore(e->b, llvm_entry_buf(e, v[i]), LLVMBuildInBoundsGEP2(e->b, at, arr, ix, 2, ""));
  }
  return LLVMBuildPointerCast(e->b, arr, e->t_ptr, "");
}

void llvm_entry_call_checked(emitter *e, const char *name, LLVMValueRef *args, int nargs) {
  LLVMTypeRef ps[8];
  BASE_ASSERT(nargs <= 8);
  for (int i = 0; i < nargs; i++) ps[i] = e->t_ptr;
  LLVMTypeRef ft = LLVMFunctionType(e->t_i32, ps, (unsigned)nargs, 0);
  LLVMValueRef fn = LLVMGetNamedFunction(e->mod, name);
  if (!fn) fn = LLVMAddFunction(e->mod, name, ft);
  LLVMValueRef rc = LLVMBuildCall2(e->b, ft, fn, args, (unsigned)nargs, "");
  e->nkernels++; /* what it read and wrote was used by one kernel number */
  LLVMBasicBlockRef stop = LLVMAppendBasicBlockInContext(e->ctx, e->entry, "failed");
  LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(e->ctx, e->entry, "ok");
  LLVMBuildCondBr(e->b, LLVMBuildICmp(e->b, LLVMIntNE, rc, LLVMConstInt(e->t_i32, 0, 0), ""), stop, go);
  LLVMPositionBuilderAtEnd(e->b, stop);
  LLVMBuildRetVoid(e->b);
  LLVMPositionBuilderAtEnd(e->b, go);
  e->entry_bb_cur = go;
}
