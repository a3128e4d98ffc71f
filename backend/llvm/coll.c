/* coll.c: collectives across replicas on the cpu target
 * (docs/cpu-backend.md, "Replicas").
 *
 * A program compiled for N replicas runs as N copies of the entry function
 * on N host threads (jit.c, cpu_execute_replicas), each passing its own
 * context (cpu_rep) as the entry's sixth argument. A collective is a call
 * from the entry function, between kernels:
 *
 *   rc = cpu_coll_run(rep, coll, ops, res, fold)
 *
 * coll is the instruction's descriptor (groups resolved for N, leaf sizes,
 * its location), made here and owned by the executable, its address a
 * constant of the JIT-compiled code; ops and res the pointers of its
 * operand and computed result leaves; fold one generated function per leaf
 * for the reducing collectives, fold(acc, x, lo, hi): acc[i] =
 * to_apply(acc[i], x[i]), the to_apply inlined as a reducer's is (gen.c),
 * so its numerics are the cpu's (bit for bit with the evaluator under
 * strict numerics). A nonzero rc (the replica failed; rep says why and the
 * replica has left the rendezvous) returns from the entry at once.
 *
 * The replicas meet through a communicator of N members (coll_comm,
 * base/coll.h): a coll_rdv when all run on threads of this process
 * (cpu_execute_replicas), or one spanning processes (cpu_execute_comm with
 * runtime/mpi/mpi_replicas.h), whose exchanges then carry each replica's
 * leaves packed as bytes (meet, at the offsets off[]) instead of pointers.
 * The folds read the same values in the same order either way, so the
 * results are bit for bit those of one process. Every replica runs every
 * collective, exchanging under a key made of the collective's number in
 * the program and how many collectives the replica has run, so replicas
 * that reach different collectives fail, naming both.
 *
 * What each computes, for a replica at position p of its group g[0..n-1]
 * (ir/eval_coll.c's semantics):
 *   all-reduce      exchange operand pointers; fold chunk p (coll_chunk over
 *                   each leaf's elements) in coll.h's order into this
 *                   replica's result (x[g[p+1]] first ... x[g[p]] last);
 *                   release; exchange result pointers; copy the other
 *                   chunks from the members that folded them; release. Each
 *                   chunk is folded by one replica, in the fixed order.
 *   reduce-scatter  slice p (of n along dimensions[0]) folded as chunk p
 *   all-gather      the members' operands in group order along dimensions[0]
 *   all-to-all      block j along dimensions[0] is block p of g[j]'s operand;
 *                   with no dimension, result j is g[j]'s operand p
 *   collective-permute  the operand of the replica paired with this one as
 *                   target (source_target_pairs), else zeros
 *   collective-broadcast  g[0]'s operand
 *   replica-id      this replica's number (no exchange)
 * Those after all-reduce exchange once, copy or fold, and release. The
 * -start forms compute their synchronous op into element 1 of their value
 * (element 0 aliases the operands, the context is zeros); the -done forms,
 * partition-id (0) and replica-id of one replica are aliases (plan.c with
 * llvm_coll_plan). With one replica (cpu_options.replicas <= 1) an
 * all-reduce is the identity and plan.c aliases it; the other collectives
 * run through the same calls, the exchange then being the replica's own
 * pointers. AOT objects run no collective (they cannot hold the
 * descriptors' addresses). */
#include "backend/llvm/lower.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

enum { MAX_LEAVES = 64 };

struct cpu_coll {
  ir_op op;           /* what it computes (a -start form: its synchronous op) */
  uint32_t uid;       /* its number in the program (part of the key) */
  char *where;        /* "file:line:col: all-reduce %name" */
  int32_t nleaves;    /* operand leaves; computed result leaves */
  bool tuple;         /* all-to-all: the tuple form (one operand per member) */
  /* per operand leaf: elements, bytes per element, and the sizes around
   * dimensions[0] (all-gather, reduce-scatter, all-to-all) */
  int64_t *count, *outer, *dim, *inner;
  int64_t *off; /* per leaf: its offset in a packed exchange; off[nleaves]: the size */
  int32_t *esize;
  /* per replica r: its group's size, its position, its group in order
   * (g + r * nrep), and the replica that sends to it (collective-permute;
   * -1: none) */
  int32_t *n, *p, *g, *src;
  int32_t nrep;
  cpu_coll *next;
};

void cpu_coll_free(cpu_coll *list) {
  while (list) {
    cpu_coll *n = list->next;
    free(list->where);
    free(list->count);
    free(list->n);
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
  if (r->comm) r->comm->ops->leave(r->comm, r->id, r->msg);
}

/* ---- run time ------------------------------------------------------------- */

static size_t bytes_of(const cpu_coll *c, int l) { return (size_t)c->count[l] * (size_t)c->esize[l]; }

/* Whether r's members include other processes: exchanges then carry the
 * leaves' bytes (packed in leaf order at c->off) instead of pointers. */
static bool packs(const cpu_rep *r) { return r->comm->local < r->comm->n; }

/* mine's leaves (leaf pointers) packed into r->pack; NULL when memory runs
 * out (recorded). */
static const void *pack_leaves(cpu_rep *r, const cpu_coll *c, void *const *mine) {
  size_t total = (size_t)c->off[c->nleaves];
  if (total > r->packcap) {
    uint8_t *nb = realloc(r->pack, total);
    if (!nb) {
      cpu_rep_fail(r, true, "%s: no memory to pack %zu bytes for the other processes", c->where, total);
      return NULL;
    }
    r->pack = nb;
    r->packcap = total;
  }
  for (int l = 0; l < c->nleaves; l++) memcpy(r->pack + c->off[l], mine[l], bytes_of(c, l));
  return r->pack;
}

/* Exchange (phase 0, 2) or release (phase 1, 3) of collective c; mine is
 * the array of this replica's leaf pointers. false after recording the
 * failure. With one replica (no communicator) the exchange is the
 * replica's own pointers. */
static bool meet(cpu_rep *r, const cpu_coll *c, int phase, void *const *mine) {
  if (!r->comm) {
    if (phase % 2 == 0) r->all[0] = mine;
    return true;
  }
  char msg[512];
  uint64_t key = (uint64_t)c->uid << 40 | (r->seq & ((1ull << 38) - 1)) << 2 | (uint64_t)(phase / 2);
  coll_comm *cm = r->comm;
  int rc;
  if (phase % 2 == 0) {
    const void *dep = mine;
    size_t bytes = (size_t)c->nleaves * sizeof(void *);
    if (packs(r)) {
      if (!(dep = pack_leaves(r, c, mine))) return false;
      bytes = (size_t)c->off[c->nleaves];
    }
    rc = cm->ops->exchange(cm, r->id, key, dep, bytes, r->all, msg, sizeof msg);
  } else {
    rc = cm->ops->release(cm, r->id, msg, sizeof msg);
  }
  if (rc == 0) return true;
  cpu_rep_fail(r, false, "%s: %s", c->where, msg);
  return false;
}

/* Leaf l of replica `replica`'s exchange. */
static const uint8_t *leaf_of(const cpu_rep *r, const cpu_coll *c, int replica, int leaf) {
  if (r->comm && packs(r)) return (const uint8_t *)r->all[replica] + c->off[leaf];
  return ((void *const *)r->all[replica])[leaf];
}


/* acc[0..m) = fold over the group of x[i] + off (elements m, offset off in
 * bytes), in the order chunk `chunk` takes (base/coll.h). */
static void fold_chunk(const cpu_rep *r, const cpu_coll *c, int l, int chunk, cpu_fold_fn fold,
                       uint8_t *acc, size_t off, int64_t m) {
  int n = c->n[r->id];
  const int32_t *g = c->g + (size_t)r->id * (size_t)c->nrep;
  memcpy(acc, leaf_of(r, c, g[coll_term(n, chunk, 0)], l) + off, (size_t)m * (size_t)c->esize[l]);
  for (int k = 1; k < n; k++) fold(acc, leaf_of(r, c, g[coll_term(n, chunk, k)], l) + off, 0, m);
}

/* all-reduce: this replica folds its chunk of every leaf, then gathers the
 * others' chunks from the members that folded them. */
static int all_reduce(cpu_rep *r, const cpu_coll *c, void *const *ops, void *const *res,
                      const cpu_fold_fn *fold) {
  int n = c->n[r->id], p = c->p[r->id];
  const int32_t *g = c->g + (size_t)r->id * (size_t)c->nrep;
  if (!meet(r, c, 0, ops)) return 1;
  for (int l = 0; l < c->nleaves; l++) {
    int64_t lo, hi;
    coll_chunk(c->count[l], n, p, &lo, &hi);
    size_t off = (size_t)lo * (size_t)c->esize[l];
    if (hi > lo) fold_chunk(r, c, l, p, fold[l], (uint8_t *)res[l] + off, off, hi - lo);
  }
  if (!meet(r, c, 1, NULL) || !meet(r, c, 2, res)) return 1;
  for (int l = 0; l < c->nleaves; l++)
    for (int q = 0; q < n; q++) {
      int64_t lo, hi;
      coll_chunk(c->count[l], n, q, &lo, &hi);
      size_t off = (size_t)lo * (size_t)c->esize[l];
      if (q != p && hi > lo)
        memcpy((uint8_t *)res[l] + off, leaf_of(r, c, g[q], l) + off, (size_t)(hi - lo) * (size_t)c->esize[l]);
    }
  return meet(r, c, 3, NULL) ? 0 : 1;
}

/* The collectives that read the others' operands once: reduce-scatter,
 * all-gather, all-to-all, collective-permute, collective-broadcast. */
static void one_pass(const cpu_rep *r, const cpu_coll *c, void *const *res, const cpu_fold_fn *fold) {
  int n = c->n[r->id], p = c->p[r->id];
  const int32_t *g = c->g + (size_t)r->id * (size_t)c->nrep;
  for (int l = 0; l < c->nleaves; l++) {
    uint8_t *dst = res[l];
    size_t es = (size_t)c->esize[l], in = (size_t)c->inner[l], D = (size_t)c->dim[l];
    switch (c->op) {
    case IR_OP_REDUCE_SCATTER: { /* slice p of n along the dimension, folded as chunk p */
      size_t S = D / (size_t)n;
      for (int64_t o = 0; o < c->outer[l]; o++)
        fold_chunk(r, c, l, p, fold[l], dst + (size_t)o * S * in * es, ((size_t)o * D + (size_t)p * S) * in * es,
                   (int64_t)(S * in));
      break;
    }
    case IR_OP_ALL_GATHER: { /* the members' operands in group order along the dimension */
      size_t blk = D * in * es;
      for (int64_t o = 0; o < c->outer[l]; o++)
        for (int j = 0; j < n; j++) memcpy(dst + ((size_t)o * (size_t)n + (size_t)j) * blk, leaf_of(r, c, g[j], l) + (size_t)o * blk, blk);
      break;
    }
    case IR_OP_ALL_TO_ALL: /* block j along the dimension: block p of member j's operand */
      if (c->tuple) {
        memcpy(dst, leaf_of(r, c, g[l], p), bytes_of(c, l));
      } else {
        size_t blk = D / (size_t)n * in * es;
        for (int64_t o = 0; o < c->outer[l]; o++)
          for (int j = 0; j < n; j++)
            memcpy(dst + ((size_t)o * (size_t)n + (size_t)j) * blk,
                   leaf_of(r, c, g[j], l) + ((size_t)o * (size_t)n + (size_t)p) * blk, blk);
      }
      break;
    case IR_OP_COLLECTIVE_PERMUTE: /* the source's operand, or zeros */
      if (c->src[r->id] >= 0) memcpy(dst, leaf_of(r, c, c->src[r->id], l), bytes_of(c, l));
      else memset(dst, 0, bytes_of(c, l));
      break;
    default: /* collective-broadcast: member 0's operand */
      memcpy(dst, leaf_of(r, c, g[0], l), bytes_of(c, l));
      break;
    }
  }
}

int cpu_coll_run(cpu_rep *r, const cpu_coll *c, void *const *ops, void *const *res,
                 const cpu_fold_fn *fold) {
  if (r->failed) return 1;
  if (c->op == IR_OP_REPLICA_ID) { /* not an exchange */
    uint32_t id = (uint32_t)r->id;
    memcpy(res[0], &id, sizeof id);
    return 0;
  }
  if (r->n != c->nrep) {
    cpu_rep_fail(r, true, "%s: compiled for %d replicas, run as %d", c->where, (int)c->nrep, (int)r->n);
    return 1;
  }
  int rc;
  if (c->op == IR_OP_ALL_REDUCE) {
    rc = all_reduce(r, c, ops, res, fold);
  } else {
    rc = meet(r, c, 0, ops) ? 0 : 1;
    if (rc == 0) one_pass(r, c, res, fold);
    if (rc == 0 && !meet(r, c, 1, NULL)) rc = 1;
  }
  r->seq++;
  return rc;
}

/* ---- compile time --------------------------------------------------------- */

/* What the cpu does with op (docs/cpu-backend.md, "Replicas"). */
typedef enum coll_kind {
  COLL_NONE,  /* not a collective, or one plan.c handles (all-reduce of one replica) */
  COLL_ALIAS, /* planned here (llvm_coll_plan), nothing to run */
  COLL_CALL,  /* a call to cpu_coll_run (llvm_emit_collective) */
} coll_kind;

static coll_kind kind_of(const emitter *e, ir_op op) {
  bool one = e->opt.replicas <= 1;
  switch (op) {
  case IR_OP_ALL_REDUCE: case IR_OP_ALL_REDUCE_START: return one ? COLL_NONE : COLL_CALL;
  case IR_OP_ALL_GATHER: case IR_OP_REDUCE_SCATTER: case IR_OP_ALL_TO_ALL: case IR_OP_COLLECTIVE_PERMUTE:
  case IR_OP_COLLECTIVE_BROADCAST: case IR_OP_ALL_GATHER_START: case IR_OP_COLLECTIVE_PERMUTE_START:
    return COLL_CALL;
  case IR_OP_REPLICA_ID: return one ? COLL_ALIAS : COLL_CALL;
  case IR_OP_PARTITION_ID: case IR_OP_ALL_REDUCE_DONE: case IR_OP_ALL_GATHER_DONE:
  case IR_OP_COLLECTIVE_PERMUTE_DONE:
    return COLL_ALIAS;
  default: return COLL_NONE;
  }
}

bool llvm_coll_alias(const emitter *e, ir_op op) { return kind_of(e, op) == COLL_ALIAS; }
bool llvm_coll_call(const emitter *e, ir_op op) { return kind_of(e, op) == COLL_CALL; }

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

/* The -start forms whose value is (operands, result, context...). */
static bool is_pair_start(ir_op op) {
  return op == IR_OP_ALL_GATHER_START || op == IR_OP_COLLECTIVE_PERMUTE_START;
}

/* A u32 (or any leaf shape) zero constant. */
static cbuf *zero_buf(emitter *e, const ir_shape *ls) {
  return llvm_const_buf(e, ir_literal_create(e->a, ls));
}

bool llvm_coll_plan(emitter *e, scope *s, ir_id id) {
  const ir_inst *in = llvm_inst(s, id);
  coll_kind k = kind_of(e, in->op);
  if (k == COLL_NONE || (k == COLL_CALL && !is_pair_start(in->op))) return false;
  int nl = llvm_leaf_count(in->shape);
  cbuf **l = arena_array(e->a, (size_t)nl + 1, sizeof(cbuf *));
  switch (in->op) {
  case IR_OP_REPLICA_ID: /* one replica */
  case IR_OP_PARTITION_ID: /* one partition */
    l[0] = zero_buf(e, in->shape);
    break;
  case IR_OP_ALL_REDUCE_DONE:
    for (int j = 0; j < nl; j++) l[j] = s->mat[in->ops[0]][j];
    break;
  case IR_OP_ALL_GATHER_DONE: case IR_OP_COLLECTIVE_PERMUTE_DONE: {
    int off = llvm_leaf_offset(llvm_inst(s, in->ops[0])->shape, 1);
    for (int j = 0; j < nl; j++) l[j] = s->mat[in->ops[0]][off + j];
    break;
  }
  default: { /* (operands, result, zero context...) */
    cbuf **ops;
    int nops = llvm_operand_leaves(e, s, in, &ops);
    int r0 = llvm_leaf_offset(in->shape, 1), r1 = llvm_leaf_offset(in->shape, 2);
    for (int j = 0; j < nl; j++) {
      const ir_shape *ls = llvm_leaf_shape(in->shape, j);
      l[j] = j < r0 && j < nops ? ops[j] : j < r1 ? llvm_scratch_buf(e, ls) : zero_buf(e, ls);
    }
    break;
  }
  }
  s->mat[id] = l;
  return true;
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(base_xmalloc(n), s, n);
}

/* Fills c's per-replica groups (ir_coll_group) and permute sources for
 * e->opt.replicas replicas. */
static bool resolve_groups(emitter *e, const ir_inst *in, cpu_coll *c) {
  int N = e->opt.replicas < 1 ? 1 : e->opt.replicas;
  c->nrep = N;
  c->n = base_xmalloc(sizeof(int32_t) * (size_t)N * (size_t)(N + 3));
  c->p = c->n + N;
  c->src = c->p + N;
  c->g = c->src + N;
  int64_t *g = arena_array(e->a, (size_t)N, sizeof(int64_t));
  for (int r = 0; r < N; r++) {
    int pos = 0, n = ir_coll_group(in, N, r, g, &pos);
    if (n < 1)
      return fail_at(e, in, "%s %%%s: replica %d of %d is in no replica group", ir_op_name(in->op),
                     in->info->name, r, N);
    for (int j = 0; j < n; j++) {
      if (g[j] < 0 || g[j] >= N)
        return fail_at(e, in, "%s %%%s: replica_groups names replica %lld; the program runs %d replicas",
                       ir_op_name(in->op), in->info->name, (long long)g[j], N);
      c->g[(size_t)r * (size_t)N + (size_t)j] = (int32_t)g[j];
    }
    c->n[r] = n;
    c->p[r] = pos;
    c->src[r] = -1;
  }
  if (ir_coll_sync_op(in->op) != IR_OP_COLLECTIVE_PERMUTE) return true;
  const ir_replica_groups *pairs = &in->a->source_target_pairs;
  for (int i = 0; i < pairs->ngroups; i++) {
    const ir_ints *pr = &pairs->groups[i];
    if (pr->n != 2 || pr->v[0] < 0 || pr->v[0] >= N || pr->v[1] < 0 || pr->v[1] >= N)
      return fail_at(e, in, "collective-permute %%%s: source_target_pairs names a replica outside 0..%d",
                     in->info->name, N - 1);
    c->src[pr->v[1]] = (int32_t)pr->v[0];
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

/* The folds of a reducing collective, one per operand leaf (the to_apply
 * takes two scalars of the leaf's type), as a stack array of the entry. */
static LLVMValueRef fold_array(emitter *e, const ir_inst *in, const cpu_coll *c, const ir_type *types) {
  const ir_comp *ta = in->ncalls == 1 ? &e->m->comps.v[in->calls[0]] : NULL;
  LLVMTypeRef at = LLVMArrayType(e->t_ptr, (unsigned)(c->nleaves ? c->nleaves : 1));
  LLVMValueRef fns[MAX_LEAVES];
  for (int l = 0; l < c->nleaves; l++) {
    ir_type t = types[l];
    const ir_shape *p0 = ta && ta->nparams == 2 && ta->params[0] >= 0 ? ta->insts.v[ta->params[0]].shape : NULL;
    if (!p0 || p0->type != t || p0->rank != 0)
      return fail_at(e, in, "%s %%%s: to_apply does not reduce two %s scalars", ir_op_name(in->op),
                     in->info->name, ir_type_name(t)),
             NULL;
    fns[l] = fold_fn(e, in->calls[0], t, arena_printf(e->a, "fold%d.%d", (int)c->uid, l));
  }
  LLVMPositionBuilderAtEnd(e->b, e->entry_bb_cur);
  LLVMValueRef arr = llvm_alloca(e, at);
  for (int l = 0; l < c->nleaves; l++) {
    LLVMValueRef ix[2] = {llvm_i64(e, 0), llvm_i64(e, l)};
    LLVMBuildStore(e->b, LLVMBuildPointerCast(e->b, fns[l], e->t_ptr, ""), LLVMBuildInBoundsGEP2(e->b, at, arr, ix, 2, ""));
  }
  return LLVMBuildPointerCast(e->b, arr, e->t_ptr, "");
}

/* A new descriptor for in (owned by e's list, then the executable's) with
 * its operand leaves' sizes; NULL after a failure. */
static cpu_coll *new_coll(emitter *e, scope *s, const ir_inst *in, int nops, ir_type *types) {
  cpu_coll *c = base_xmalloc(sizeof *c);
  memset(c, 0, sizeof *c);
  c->next = e->colls;
  e->colls = c;
  c->op = ir_coll_sync_op(in->op);
  c->uid = (uint32_t)e->ncolls++;
  char where[512];
  snprintf(where, sizeof where, "%s:%d:%d: %s %%%s", in->info->loc.file ? in->info->loc.file : "?",
           (int)in->info->loc.line, (int)in->info->loc.col, ir_op_name(in->op), in->info->name);
  c->where = dup_str(where);
  c->nleaves = nops;
  c->count = base_xmalloc((sizeof(int64_t) * 5 + sizeof(int32_t)) * (size_t)(nops + 1));
  c->outer = c->count + nops + 1;
  c->dim = c->outer + nops + 1;
  c->inner = c->dim + nops + 1;
  c->off = c->inner + nops + 1;
  c->esize = (int32_t *)(c->off + nops + 1);
  c->off[0] = 0;
  int64_t d = in->a->dimensions.n > 0 ? in->a->dimensions.v[0] : -1;
  c->tuple = c->op == IR_OP_ALL_TO_ALL && d < 0;
  for (int o = 0, l = 0; o < in->nops; o++) {
    const ir_shape *os = llvm_inst(s, in->ops[o])->shape;
    for (int j = 0; j < llvm_leaf_count(os); j++, l++) {
      const ir_shape *ls = llvm_leaf_shape(os, j);
      types[l] = ls->type;
      c->count[l] = ir_shape_count(ls);
      c->esize[l] = (int32_t)ir_type_size(ls->type);
      c->off[l + 1] = c->off[l] + (int64_t)bytes_of(c, l);
      c->outer[l] = c->inner[l] = 1;
      c->dim[l] = d >= 0 && d < ls->rank ? ls->dims[d] : 1;
      for (int i = 0; i < ls->rank; i++) {
        if (i < d) c->outer[l] *= ls->dims[i];
        if (d >= 0 && i > d) c->inner[l] *= ls->dims[i];
      }
    }
  }
  return resolve_groups(e, in, c) ? c : NULL;
}

bool llvm_emit_collective(emitter *e, scope *s, ir_id id) {
  const ir_inst *in = llvm_inst(s, id);
  if (e->aot)
    return fail_at(e, in, "%s %%%s: an AOT object runs no collectives (the JIT does, across replicas)",
                   ir_op_name(in->op), in->info->name);
  cbuf **ops;
  int nops = llvm_operand_leaves(e, s, in, &ops);
  cbuf **res = s->mat[id];
  int nres = llvm_leaf_count(in->shape);
  if (is_pair_start(in->op)) { /* the result is element 1 */
    res += llvm_leaf_offset(in->shape, 1);
    nres = llvm_leaf_count(&in->shape->tuple[1]);
  }
  if (in->op != IR_OP_REPLICA_ID && nres != nops)
    return fail_at(e, in, "%s %%%s: %d operand leaves for %d results", ir_op_name(in->op), in->info->name,
                   nops, nres);
  if (nops > MAX_LEAVES)
    return fail_at(e, in, "%s %%%s: more than %d operands", ir_op_name(in->op), in->info->name, MAX_LEAVES);
  ir_type types[MAX_LEAVES];
  cpu_coll *c = new_coll(e, s, in, nops, types);
  if (!c) return false;
  bool reduces = c->op == IR_OP_ALL_REDUCE || c->op == IR_OP_REDUCE_SCATTER;
  LLVMValueRef fold = reduces ? fold_array(e, in, c, types) : LLVMConstNull(e->t_ptr);
  if (!fold) return false;
  LLVMPositionBuilderAtEnd(e->b, e->entry_bb_cur);
  LLVMValueRef args[5] = {e->entry_rep,
                          LLVMConstIntToPtr(LLVMConstInt(e->t_i64, (unsigned long long)(uintptr_t)c, 0), e->t_ptr),
                          llvm_entry_ptrs(e, ops, nops), llvm_entry_ptrs(e, res, in->op == IR_OP_REPLICA_ID ? 1 : nres),
                          fold};
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
