/* coll.c: the collectives of the IR (docs/collectives.md): which group a
 * replica belongs to, the shape rules (XLA's ShapeInference), and the
 * checks of groups and pairs for the verifier and for a run of N replicas.
 *
 * Shape rules, with n the group size (the first group's size; with no
 * groups the module's written replica_count; with neither, the written
 * result decides n, and a run checks it against the replicas it runs):
 *   all-reduce, all-reduce-start   the operands (a tuple when several)
 *   reduce-scatter                 the operands with dimensions[0] / n
 *   all-gather                     the operands with dimensions[0] * n
 *   all-gather-start               (operands, all-gather of them)
 *   all-to-all                     dimensions={d}: the operand (d divisible
 *                                  by n); none: n operands of one shape,
 *                                  the tuple of them
 *   collective-permute, collective-broadcast   the operands
 *   collective-permute-start       (operand, operand, u32[], u32[]) or as
 *                                  written with more context scalars
 *   *-done                         element 1 of the start's value
 *                                  (all-reduce-done: its operand)
 *   replica-id, partition-id       u32[] */
#include "ir/ir.h"

#include <stdlib.h>

ir_op ir_coll_sync_op(ir_op op) {
  switch (op) {
  case IR_OP_ALL_REDUCE_START: return IR_OP_ALL_REDUCE;
  case IR_OP_ALL_GATHER_START: return IR_OP_ALL_GATHER;
  case IR_OP_COLLECTIVE_PERMUTE_START: return IR_OP_COLLECTIVE_PERMUTE;
  default: return op;
  }
}

bool ir_is_collective(ir_op op) {
  switch (op) {
  case IR_OP_ALL_REDUCE: case IR_OP_ALL_GATHER: case IR_OP_REDUCE_SCATTER: case IR_OP_ALL_TO_ALL:
  case IR_OP_COLLECTIVE_PERMUTE: case IR_OP_COLLECTIVE_BROADCAST: case IR_OP_ALL_REDUCE_START:
  case IR_OP_ALL_GATHER_START: case IR_OP_COLLECTIVE_PERMUTE_START:
    return true;
  default: return false;
  }
}

bool ir_coll_target_runs(ir_op op, const char *target) {
  bool coll = ir_is_collective(op) || op == IR_OP_ALL_REDUCE_DONE || op == IR_OP_ALL_GATHER_DONE ||
              op == IR_OP_COLLECTIVE_PERMUTE_DONE || op == IR_OP_REPLICA_ID ||
              op == IR_OP_PARTITION_ID;
  bool tpu = op == IR_OP_ALL_REDUCE || op == IR_OP_REDUCE_SCATTER || op == IR_OP_ALL_GATHER ||
             op == IR_OP_COLLECTIVE_PERMUTE || op == IR_OP_ALL_TO_ALL ||
             op == IR_OP_COLLECTIVE_BROADCAST || op == IR_OP_REPLICA_ID || op == IR_OP_PARTITION_ID ||
             op == IR_OP_ALL_REDUCE_START || op == IR_OP_ALL_REDUCE_DONE ||
             op == IR_OP_ALL_GATHER_START || op == IR_OP_ALL_GATHER_DONE ||
             op == IR_OP_COLLECTIVE_PERMUTE_START || op == IR_OP_COLLECTIVE_PERMUTE_DONE;
  return !coll || tpu || strcmp(target, "interp") == 0 || strcmp(target, "cpu") == 0;
}

int ir_coll_group(const ir_inst *in, int nrep, int replica, int64_t *g, int *pos) {
  const ir_replica_groups *rg = &in->a->replica_groups;
  bool permute = in->op == IR_OP_COLLECTIVE_PERMUTE || in->op == IR_OP_COLLECTIVE_PERMUTE_START;
  if (permute || rg->ngroups == 0) {
    for (int i = 0; i < nrep; i++) g[i] = i;
    *pos = replica;
    return replica >= 0 && replica < nrep ? nrep : 0;
  }
  for (int k = 0; k < rg->ngroups; k++)
    for (int j = 0; j < rg->groups[k].n; j++)
      if (rg->groups[k].v[j] == replica) {
        if (rg->groups[k].n > nrep) return 0;
        for (int i = 0; i < rg->groups[k].n; i++) g[i] = rg->groups[k].v[i];
        *pos = j;
        return rg->groups[k].n;
      }
  return 0;
}

/* The module's written replica_count, or 0 when the header has none. */
static long long written_replicas(const ir_module *m) {
  if (!m) return 0;
  for (int i = 0; i < m->nraw; i++)
    if (m->raw[i].name && strcmp(m->raw[i].name, "replica_count") == 0)
      return ir_module_count_attr(m, "replica_count");
  return 0;
}

typedef struct cctx {
  const ir_module *m;
  ir_op op;
  char *err;
  size_t errlen;
} cctx;

static bool fail(cctx *c, const char *fmt, ...) BASE_PRINTF(2, 3);
static bool fail(cctx *c, const char *fmt, ...) {
  if (!c->err || !c->errlen) return false;
  int n = snprintf(c->err, c->errlen, "%s: ", ir_op_name(c->op));
  if (n >= 0 && (size_t)n < c->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return false;
}

static bool arrays(cctx *c, const ir_shape *ops, int nops) {
  if (nops < 1) return fail(c, "expected at least one operand");
  for (int i = 0; i < nops; i++)
    if (ops[i].type == IR_TUPLE || (unsigned)ops[i].type >= IR_TUPLE || ops[i].rank < 0 ||
        ops[i].rank > IR_MAX_RANK)
      return fail(c, "operand %d must be an array", i);
  return true;
}

static ir_shape *elems(cctx *c, int n) {
  return c->m ? arena_array(c->m->arena, (size_t)(n ? n : 1), sizeof(ir_shape)) : NULL;
}

/* The array s, or the tuple of the n shapes el (el's storage kept). */
static bool one_or_tuple(cctx *c, ir_shape *el, int n, ir_shape *out) {
  if (n == 1) {
    *out = el[0];
    return true;
  }
  memset(out, 0, sizeof *out);
  out->type = IR_TUPLE;
  out->ntuple = n;
  out->tuple = el;
  return el != NULL || fail(c, "a tuple result needs a module");
}

/* The shard count of in's shape rule: groups first, then the written
 * replica_count; 0 when neither says. */
static int64_t shard_count(const cctx *c, const ir_attrs *a) {
  if (a->replica_groups.ngroups > 0)
    return a->replica_groups.groups[0].n > 0 ? a->replica_groups.groups[0].n : 1;
  return written_replicas(c->m);
}

/* n from the written result when nothing else gives it: dimension d of
 * the (first) result array over the operand's (gather) or the operand's
 * over the result's (scatter); 1 when the written result does not say. */
static int64_t written_n(const ir_shape *out, const ir_shape *op0, int64_t d, bool gather) {
  const ir_shape *r = out->type == IR_TUPLE && out->ntuple > 0 && out->tuple ? &out->tuple[0] : out;
  if (r->type != op0->type || r->rank != op0->rank || d < 0 || d >= r->rank) return 1;
  int64_t big = gather ? r->dims[d] : op0->dims[d], small = gather ? op0->dims[d] : r->dims[d];
  if (small <= 0 || big % small) return 1;
  return big / small;
}

/* all-gather (gather) and reduce-scatter: dimension d of every operand
 * multiplied or divided by n. */
static bool infer_resharded(cctx *c, const ir_shape *ops, int nops, const ir_attrs *a, bool gather,
                            ir_shape *out) {
  if (!arrays(c, ops, nops)) return false;
  if (a->dimensions.n != 1) return fail(c, "dimensions must name one dimension");
  int64_t d = a->dimensions.v[0];
  int64_t n = shard_count(c, a);
  if (n <= 0) n = written_n(out, &ops[0], d, gather);
  ir_shape one;
  ir_shape *el = nops == 1 ? &one : elems(c, nops);
  if (!el) return fail(c, "a tuple result needs a module");
  for (int i = 0; i < nops; i++) {
    if (d < 0 || d >= ops[i].rank)
      return fail(c, "dimension %lld out of range for operand %d of rank %d", (long long)d, i,
                  ops[i].rank);
    int64_t dims[IR_MAX_RANK];
    memcpy(dims, ops[i].dims, sizeof(int64_t) * (size_t)ops[i].rank);
    if (gather) {
      dims[d] *= n;
    } else {
      if (dims[d] % n)
        return fail(c, "dimension %lld of operand %d (size %lld) is not divisible by the group "
                    "size %lld", (long long)d, i, (long long)dims[d], (long long)n);
      dims[d] /= n;
    }
    el[i] = ir_shape_array(ops[i].type, ops[i].rank, dims);
  }
  if (nops == 1) {
    *out = el[0];
    return true;
  }
  return one_or_tuple(c, el, nops, out);
}

/* The operands themselves (one, or a tuple of them). */
static bool same_as_operands(cctx *c, const ir_shape *ops, int nops, ir_shape *out) {
  if (!arrays(c, ops, nops)) return false;
  if (nops == 1) {
    *out = ir_shape_array(ops[0].type, ops[0].rank, ops[0].dims);
    return true;
  }
  ir_shape *el = elems(c, nops);
  if (!el) return fail(c, "a tuple result needs a module");
  for (int i = 0; i < nops; i++) el[i] = ir_shape_array(ops[i].type, ops[i].rank, ops[i].dims);
  return one_or_tuple(c, el, nops, out);
}

static bool infer_all_to_all(cctx *c, const ir_shape *ops, int nops, const ir_attrs *a,
                             ir_shape *out) {
  if (!arrays(c, ops, nops)) return false;
  if (a->dimensions.n == 0) {
    for (int i = 1; i < nops; i++)
      if (ops[i].type != ops[0].type || ops[i].rank != ops[0].rank ||
          memcmp(ops[i].dims, ops[0].dims, sizeof(int64_t) * (size_t)ops[0].rank))
        return fail(c, "operands of the tuple form must have one shape (operand %d differs)", i);
    int64_t n = shard_count(c, a);
    if (n > 0 && n != nops)
      return fail(c, "the tuple form takes one operand per group member (%lld), given %d",
                  (long long)n, nops);
    ir_shape *el = elems(c, nops);
    if (!el) return fail(c, "a tuple result needs a module");
    for (int i = 0; i < nops; i++) el[i] = ir_shape_array(ops[i].type, ops[i].rank, ops[i].dims);
    memset(out, 0, sizeof *out);
    out->type = IR_TUPLE;
    out->ntuple = nops;
    out->tuple = el;
    return true;
  }
  if (a->dimensions.n != 1 || nops != 1)
    return fail(c, "the array form takes one operand and dimensions={split_dimension}");
  int64_t d = a->dimensions.v[0];
  if (d < 0 || d >= ops[0].rank)
    return fail(c, "dimension %lld out of range for rank %d", (long long)d, ops[0].rank);
  int64_t n = shard_count(c, a);
  if (n > 0 && ops[0].dims[d] % n)
    return fail(c, "dimension %lld (size %lld) is not divisible by the group size %lld",
                (long long)d, (long long)ops[0].dims[d], (long long)n);
  *out = ir_shape_array(ops[0].type, ops[0].rank, ops[0].dims);
  return true;
}

/* (operands, result) of a start op whose synchronous op is sync. */
static bool infer_start_pair(cctx *c, ir_op sync, const ir_shape *ops, int nops, const ir_attrs *a,
                             ir_shape *out) {
  ir_shape res = {0}, want = {0};
  if (out->type == IR_TUPLE && out->ntuple >= 2 && out->tuple) want = out->tuple[1];
  res = want;
  cctx s = *c;
  s.op = sync;
  bool ok = sync == IR_OP_ALL_GATHER ? infer_resharded(&s, ops, nops, a, true, &res)
                                     : same_as_operands(&s, ops, nops, &res);
  if (!ok) return false;
  ir_shape opnd;
  if (!same_as_operands(c, ops, nops, &opnd)) return false;
  bool ctx_ok = sync == IR_OP_COLLECTIVE_PERMUTE && out->type == IR_TUPLE && out->ntuple >= 2;
  for (int i = 2; ctx_ok && i < out->ntuple; i++) {
    const ir_shape *e = &out->tuple[i];
    ctx_ok = (e->type == IR_U32 || e->type == IR_S32) && e->rank == 0;
  }
  int n = ctx_ok ? out->ntuple : sync == IR_OP_COLLECTIVE_PERMUTE ? 4 : 2;
  ir_shape *el = elems(c, n);
  if (!el) return fail(c, "a tuple result needs a module");
  el[0] = opnd;
  el[1] = res;
  for (int i = 2; i < n; i++) el[i] = ctx_ok ? out->tuple[i] : ir_shape_array(IR_U32, 0, NULL);
  memset(out, 0, sizeof *out);
  out->type = IR_TUPLE;
  out->ntuple = n;
  out->tuple = el;
  return true;
}

bool ir_coll_infer(const ir_module *m, ir_op op, const ir_shape *ops, int nops, const ir_attrs *a,
                   const ir_comp_id *calls, int ncalls, ir_shape *out, char *err, size_t errlen) {
  cctx c = {m, op, err, errlen};
  switch (op) {
  case IR_OP_ALL_REDUCE_START:
    if (!ir_infer_shape(m, IR_OP_ALL_REDUCE, ops, nops, a, calls, ncalls, out, err, errlen))
      return false;
    return true;
  case IR_OP_REDUCE_SCATTER: {
    ir_shape tmp;
    if (!ir_infer_shape(m, IR_OP_ALL_REDUCE, ops, nops, a, calls, ncalls, &tmp, err, errlen))
      return false;
    return infer_resharded(&c, ops, nops, a, false, out);
  }
  case IR_OP_ALL_GATHER: return infer_resharded(&c, ops, nops, a, true, out);
  case IR_OP_ALL_TO_ALL: return infer_all_to_all(&c, ops, nops, a, out);
  case IR_OP_COLLECTIVE_PERMUTE:
  case IR_OP_COLLECTIVE_BROADCAST: return same_as_operands(&c, ops, nops, out);
  case IR_OP_ALL_GATHER_START: return infer_start_pair(&c, IR_OP_ALL_GATHER, ops, nops, a, out);
  case IR_OP_COLLECTIVE_PERMUTE_START:
    return infer_start_pair(&c, IR_OP_COLLECTIVE_PERMUTE, ops, nops, a, out);
  case IR_OP_ALL_REDUCE_DONE:
    if (nops != 1) return fail(&c, "expected 1 operand");
    *out = ops[0];
    return true;
  case IR_OP_ALL_GATHER_DONE:
  case IR_OP_COLLECTIVE_PERMUTE_DONE:
    if (nops != 1 || ops[0].type != IR_TUPLE || ops[0].ntuple < 2)
      return fail(&c, "the operand must be its start op's tuple");
    *out = ops[0].tuple[1];
    return true;
  case IR_OP_REPLICA_ID:
  case IR_OP_PARTITION_ID:
    *out = ir_shape_array(IR_U32, 0, NULL);
    return true;
  default: return fail(&c, "not a collective");
  }
}

/* ---- checks ----------------------------------------------------------- */

/* Groups of in that the op's shape depends on must have one size. */
static bool needs_equal_groups(ir_op op) {
  return op == IR_OP_ALL_GATHER || op == IR_OP_ALL_GATHER_START || op == IR_OP_REDUCE_SCATTER ||
         op == IR_OP_ALL_TO_ALL;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The first id listed twice among the k-th entries of pairs (0 sources,
 * 1 targets), or -1. */
static int64_t pair_dup(const ir_replica_groups *p, int k, int64_t *scratch) {
  for (int i = 0; i < p->ngroups; i++) scratch[i] = p->groups[i].v[k];
  qsort(scratch, (size_t)p->ngroups, sizeof(int64_t), cmp_i64);
  for (int i = 1; i < p->ngroups; i++)
    if (scratch[i] == scratch[i - 1]) return scratch[i];
  return -1;
}

/* Pairs and groups of in against nrep replicas (nrep 0: unknown). */
/* The bound nrep of replica ids, in words: a run's or the module's. */
static const char *bound_words(int64_t nrep, bool run, char *buf, size_t n) {
  if (run) snprintf(buf, n, "the run has %lld replica%s", (long long)nrep, nrep == 1 ? "" : "s");
  else snprintf(buf, n, "the module's replica_count is %lld", (long long)nrep);
  return buf;
}

static bool check_ids(const ir_inst *in, int64_t nrep, bool run, int64_t *scratch, char *msg,
                      size_t n) {
  char bw[80];
  const ir_replica_groups *p = &in->a->source_target_pairs;
  if (in->op == IR_OP_COLLECTIVE_PERMUTE || in->op == IR_OP_COLLECTIVE_PERMUTE_START) {
    if (p->iota) {
      snprintf(msg, n, "source_target_pairs must be a list of {source,target} pairs");
      return false;
    }
    for (int i = 0; i < p->ngroups; i++) {
      if (p->groups[i].n != 2) {
        snprintf(msg, n, "source_target_pairs entry %d is not a {source,target} pair", i);
        return false;
      }
      for (int k = 0; k < 2; k++)
        if (p->groups[i].v[k] < 0 || (nrep > 0 && p->groups[i].v[k] >= nrep)) {
          snprintf(msg, n, "source_target_pairs names replica %lld; %s", (long long)p->groups[i].v[k],
                   bound_words(nrep, run, bw, sizeof bw));
          return false;
        }
    }
    for (int k = 0; k < 2; k++) {
      int64_t d = pair_dup(p, k, scratch);
      if (d >= 0) {
        snprintf(msg, n, "source_target_pairs lists replica %lld as a %s twice", (long long)d,
                 k ? "target" : "source");
        return false;
      }
    }
    return true;
  }
  const ir_replica_groups *g = &in->a->replica_groups;
  for (int i = 0; i < g->ngroups; i++) {
    if (g->groups[i].n == 0) {
      snprintf(msg, n, "replica group %d is empty", i);
      return false;
    }
    if (needs_equal_groups(in->op) && g->groups[i].n != g->groups[0].n) {
      snprintf(msg, n, "replica groups have unequal sizes (%d and %d)", g->groups[0].n,
               g->groups[i].n);
      return false;
    }
    for (int j = 0; j < g->groups[i].n; j++)
      if (nrep > 0 && g->groups[i].v[j] >= nrep) {
        snprintf(msg, n, "replica_groups names replica %lld; %s", (long long)g->groups[i].v[j],
                 bound_words(nrep, run, bw, sizeof bw));
        return false;
      }
  }
  return true;
}

bool ir_coll_check(const ir_module *m, const ir_inst *in, char *msg, size_t n) {
  if (!ir_is_collective(in->op)) return true;
  const ir_replica_groups *p = &in->a->source_target_pairs;
  arena_mark mk = arena_get_mark(m->arena);
  int64_t *scratch = arena_array(m->arena, (size_t)p->ngroups + 1, sizeof(int64_t));
  bool ok = check_ids(in, written_replicas(m), false, scratch, msg, n);
  arena_reset(m->arena, mk);
  return ok;
}

/* The shape of operand k of in, or NULL when the id is out of range (the
 * verifier reports it). */
static const ir_shape *opnd_shape(const ir_comp *cp, const ir_inst *in, int k) {
  if (k >= in->nops || !in->ops || in->ops[k] < 0 || in->ops[k] >= cp->insts.n) return NULL;
  return cp->insts.v[in->ops[k]].shape;
}

/* Dimension d of the first result array of in (all-gather, reduce-scatter)
 * against n replicas; false with msg when it does not match. */
static bool check_shard_shape(const ir_comp *cp, const ir_inst *in, int64_t n, char *msg, size_t len) {
  bool gather = in->op == IR_OP_ALL_GATHER || in->op == IR_OP_ALL_GATHER_START;
  if (!gather && in->op != IR_OP_REDUCE_SCATTER) return true;
  if (in->nops < 1 || in->a->dimensions.n != 1) return true;
  const ir_shape *r = in->shape;
  if (in->op == IR_OP_ALL_GATHER_START && r->type == IR_TUPLE && r->ntuple >= 2) r = &r->tuple[1];
  if (r->type == IR_TUPLE && r->ntuple > 0) r = &r->tuple[0];
  const ir_shape *o = opnd_shape(cp, in, 0);
  int64_t d = in->a->dimensions.v[0];
  if (!o || o->type == IR_TUPLE || r->type == IR_TUPLE || d < 0 || d >= o->rank || d >= r->rank)
    return true;
  int64_t want = gather ? o->dims[d] * n : (o->dims[d] % n ? -1 : o->dims[d] / n);
  if (r->dims[d] == want) return true;
  snprintf(msg, len, "'%s' over %lld replicas makes dimension %lld of size %lld, the module says %lld",
           in->info->name ? in->info->name : "?", (long long)n, (long long)d, (long long)want,
           (long long)r->dims[d]);
  return false;
}

bool ir_coll_check_replicas(const ir_module *m, const ir_comp *cp, const ir_inst *in, int nrep,
                            char *msg, size_t n) {
  if (!ir_is_collective(in->op)) return true;
  const char *nm = in->info->name ? in->info->name : "?";
  char why[200];
  arena_mark mk = arena_get_mark(m->arena);
  const ir_replica_groups *g = &in->a->replica_groups, *p = &in->a->source_target_pairs;
  int64_t *scratch = arena_array(m->arena, (size_t)p->ngroups + (size_t)nrep + 1, sizeof(int64_t));
  bool ok = check_ids(in, nrep, true, scratch, why, sizeof why);
  if (!ok) snprintf(msg, n, "'%s': %s", nm, why);
  bool permute = in->op == IR_OP_COLLECTIVE_PERMUTE || in->op == IR_OP_COLLECTIVE_PERMUTE_START;
  if (ok && !permute && g->ngroups > 0) {
    /* every replica in exactly one group */
    int64_t *seen = scratch + p->ngroups;
    memset(seen, 0, sizeof(int64_t) * (size_t)nrep);
    for (int i = 0; i < g->ngroups && ok; i++)
      for (int j = 0; j < g->groups[i].n && ok; j++) {
        int64_t r = g->groups[i].v[j];
        if (r >= 0 && r < nrep && seen[r]++) {
          snprintf(msg, n, "'%s': replica_groups lists replica %lld twice", nm, (long long)r);
          ok = false;
        }
      }
    for (int r = 0; r < nrep && ok; r++)
      if (!seen[r]) {
        snprintf(msg, n, "'%s': replica %d of %d is in no replica group", nm, r, nrep);
        ok = false;
      }
  }
  int64_t size = g->ngroups > 0 ? g->groups[0].n : nrep;
  if (ok && !permute && g->ngroups == 0) ok = check_shard_shape(cp, in, size, msg, n);
  if (ok && in->op == IR_OP_ALL_TO_ALL && in->a->dimensions.n == 0 && in->nops != size) {
    snprintf(msg, n, "'%s': the tuple all-to-all takes one operand per group member (%lld), has %d",
             nm, (long long)size, in->nops);
    ok = false;
  }
  if (ok && in->op == IR_OP_ALL_TO_ALL && in->a->dimensions.n == 1 && in->nops == 1) {
    const ir_shape *o = opnd_shape(cp, in, 0);
    int64_t d = in->a->dimensions.v[0];
    if (o && o->type != IR_TUPLE && d >= 0 && d < o->rank && o->dims[d] % size) {
      snprintf(msg, n, "'%s': dimension %lld (size %lld) is not divisible by the group size %lld", nm,
               (long long)d, (long long)o->dims[d], (long long)size);
      ok = false;
    }
  }
  arena_reset(m->arena, mk);
  return ok;
}
