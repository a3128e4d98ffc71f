/* eval_coll.c: the collectives across N replicas (docs/collectives.md) and
 * ir_eval_replicated, which runs each replica on its own host thread.
 *
 * Every collective is one exchange through the replicas' coll_rdv
 * (base/coll.h): each replica deposits its operand values under a key
 * naming the instruction and how many collectives the replica has run,
 * reads what it needs of the others' values into new arrays of its own,
 * and releases, so that no value is read after its owner moved on. With
 * one replica (no rendezvous) the exchange is the replica's own values.
 *
 * Semantics, for a replica at position p of its group g[0..n-1]:
 *   all-reduce       every element folded over the group in the order of
 *                    base/coll.h (chunk c of coll_chunk over the flattened
 *                    elements starts at g[(c+1)%n] and ends with g[c])
 *   reduce-scatter   slice p (of n along dimensions[0]) of the operands,
 *                    folded as chunk p of that order
 *   all-gather       the group's operands in group order, concatenated
 *                    along dimensions[0]
 *   all-to-all       dimensions={d}: block j along d is block p of g[j]'s
 *                    operand; tuple form: element j is g[j]'s operand p
 *   collective-permute   the operand of the source paired with this
 *                    replica as target; zeros when there is none
 *   collective-broadcast the operand of g[0]
 *   replica-id       the replica's number (u32); partition-id 0
 * The -start forms compute their synchronous op; the -done forms take
 * element 1 of the start's value (all-reduce-done: the value). */
#include "base/coll.h"
#include "ir/eval_internal.h"

#include <pthread.h>
#include <stdlib.h>

/* The key of this replica's next collective: the instruction (the same
 * object in every replica, the module being shared) and the count. */
static uint64_t coll_key(const ir_inst *in, uint64_t count) {
  uint64_t k = (uint64_t)(uintptr_t)in * UINT64_C(0x9E3779B97F4A7C15);
  return k ^ (count + 1) * UINT64_C(0xC2B2AE3D27D4EB4F);
}

/* The exchange: *all[r] is replica r's operand array (ops of nops). */
static base_status exchange(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops,
                            ir_literal *const *const **all) {
  if (!cx->rdv) {
    if (cx->opts.replica_count != 1)
      return ev_fail(cx, in, ST_UNSUPPORTED,
                     "%s over %d replicas needs ir_eval_replicated (ir_eval runs one replica)",
                     ir_op_name(in->op), (int)cx->opts.replica_count);
    ir_literal *const **one;
    base_status st = ev_alloc(cx, in, (int64_t)sizeof *one, (void **)&one);
    if (st != ST_OK) return st;
    one[0] = ops;
    *all = (ir_literal *const *const *)one;
    return ST_OK;
  }
  const void **ptrs;
  int n = cx->opts.replica_count;
  base_status st = ev_alloc_array(cx, in, n, (int64_t)sizeof *ptrs, (void **)&ptrs);
  if (st != ST_OK) return st;
  char msg[256];
  if (coll_rdv_exchange(cx->rdv, cx->opts.replica_id, coll_key(in, cx->ncoll++), ops, ptrs, msg,
                        sizeof msg)) {
    cx->rdv_failed = true;
    return ev_fail(cx, in, ST_FAILED_PRECONDITION, "%s", msg);
  }
  *all = (ir_literal *const *const *)ptrs;
  return ST_OK;
}

static base_status release(ev_ctx *cx, const ir_inst *in) {
  char msg[256];
  if (!cx->rdv || !coll_rdv_release(cx->rdv, cx->opts.replica_id, msg, sizeof msg)) return ST_OK;
  cx->rdv_failed = true;
  return ev_fail(cx, in, ST_FAILED_PRECONDITION, "%s", msg);
}

/* What a collective's computation needs. */
typedef struct coll {
  ev_ctx *cx;
  const ir_inst *in;
  ir_literal *const *const *all; /* all[r][k]: replica r's operand k */
  int64_t *g;                    /* the group, in group order */
  int n, p;                      /* group size, this replica's position */
} coll;

/* Element k of in's result shape (the array itself when it is one; the
 * start ops' element 1). */
static const ir_shape *result_elem(const ir_shape *s, int k) {
  return s->type == IR_TUPLE ? &s->tuple[k] : s;
}

/* A copy of v (another replica's) in this replica's scratch. */
static base_status copy_of(ev_ctx *cx, const ir_inst *in, const ir_literal *v, ir_literal **out) {
  base_status st = ev_new_array(cx, in, &v->shape, out);
  if (st == ST_OK && v->nbytes) memcpy((*out)->data, v->data, v->nbytes);
  return st;
}

/* Sizes around dimension d of s: outer (before), D (d itself), inner (after). */
static void around(const ir_shape *s, int64_t d, int64_t *outer, int64_t *D, int64_t *inner) {
  *outer = *inner = 1;
  for (int i = 0; i < s->rank; i++) {
    if (i < d) *outer *= s->dims[i];
    if (i > d) *inner *= s->dims[i];
  }
  *D = s->dims[d];
}

/* Folds element i of the group's operand k as chunk c does into dst. */
static base_status fold_elem(coll *c, ev_reducer *r, int k, int chunk, int64_t src_i, void *dst) {
  size_t es = r->es[0];
  const ir_literal *x = c->all[c->g[coll_term(c->n, chunk, 0)]][k];
  memcpy(r->args[0]->data, (const uint8_t *)x->data + (size_t)src_i * es, es);
  for (int t = 1; t < c->n; t++) {
    x = c->all[c->g[coll_term(c->n, chunk, t)]][k];
    memcpy(r->args[1]->data, (const uint8_t *)x->data + (size_t)src_i * es, es);
    base_status st = ev_reducer_step(c->cx, r);
    if (st != ST_OK) return st;
  }
  memcpy(dst, r->args[0]->data, es);
  return ST_OK;
}

/* all-reduce (scatter false) and reduce-scatter of operand k into *out. */
static base_status reduce_one(coll *c, int k, bool scatter, ir_literal **out) {
  ev_ctx *cx = c->cx;
  const ir_literal *mine = c->all[c->g[c->p]][k];
  ir_type t = mine->shape.type;
  ev_reducer r;
  base_status st = ev_reducer_init(cx, c->in, c->in->calls[0], 1, &t, &r);
  if (st != ST_OK) return st;
  if (c->n == 1 && !scatter) {
    *out = c->all[c->g[0]][k];
    return ST_OK;
  }
  const ir_shape *rs = result_elem(c->in->shape, k);
  if ((st = ev_new_array(cx, c->in, rs, out)) != ST_OK) return st;
  int64_t cnt = ir_shape_count(&mine->shape);
  if ((st = ev_work(cx, c->in, (double)cnt * c->n)) != ST_OK) return st;
  uint8_t *dst = (*out)->data;
  size_t es = r.es[0];
  if (!scatter) {
    for (int ch = 0; ch < c->n; ch++) {
      int64_t lo, hi;
      coll_chunk(cnt, c->n, ch, &lo, &hi);
      for (int64_t i = lo; i < hi; i++)
        if ((st = fold_elem(c, &r, k, ch, i, dst + (size_t)i * es)) != ST_OK) return st;
    }
    return ST_OK;
  }
  int64_t outer, D, inner, d = c->in->a->dimensions.v[0];
  around(&mine->shape, d, &outer, &D, &inner);
  int64_t S = D / c->n, o_i = 0;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < S; j++)
      for (int64_t i = 0; i < inner; i++, o_i++) {
        int64_t src = (o * D + (int64_t)c->p * S + j) * inner + i;
        if ((st = fold_elem(c, &r, k, c->p, src, dst + (size_t)o_i * es)) != ST_OK) return st;
      }
  return ST_OK;
}

/* all-gather of operand k: the group's operands in order along d. */
static base_status gather_one(coll *c, int k, const ir_shape *rs, ir_literal **out) {
  base_status st = ev_new_array(c->cx, c->in, rs, out);
  if (st != ST_OK) return st;
  const ir_literal *mine = c->all[c->g[c->p]][k];
  int64_t outer, D, inner;
  around(&mine->shape, c->in->a->dimensions.v[0], &outer, &D, &inner);
  size_t es = (size_t)ir_type_size(mine->shape.type), blk = (size_t)(D * inner) * es;
  uint8_t *dst = (*out)->data;
  for (int64_t o = 0; o < outer; o++)
    for (int j = 0; j < c->n; j++, dst += blk)
      memcpy(dst, (const uint8_t *)c->all[c->g[j]][k]->data + (size_t)o * blk, blk);
  return ST_OK;
}

/* all-to-all, array form: block j along d is block p of g[j]'s operand. */
static base_status all_to_all_array(coll *c, ir_literal **out) {
  const ir_literal *mine = c->all[c->g[c->p]][0];
  base_status st = ev_new_array(c->cx, c->in, &mine->shape, out);
  if (st != ST_OK) return st;
  int64_t outer, D, inner;
  around(&mine->shape, c->in->a->dimensions.v[0], &outer, &D, &inner);
  size_t es = (size_t)ir_type_size(mine->shape.type), blk = (size_t)(D / c->n * inner) * es;
  uint8_t *dst = (*out)->data;
  for (int64_t o = 0; o < outer; o++)
    for (int j = 0; j < c->n; j++, dst += blk)
      memcpy(dst, (const uint8_t *)c->all[c->g[j]][0]->data + (size_t)o * c->n * blk + (size_t)c->p * blk,
             blk);
  return ST_OK;
}

/* Operand k of the replica that sends to this one (collective-permute),
 * or zeros. */
static base_status permute_one(coll *c, int k, ir_literal **out) {
  const ir_replica_groups *pairs = &c->in->a->source_target_pairs;
  for (int i = 0; i < pairs->ngroups; i++)
    if (pairs->groups[i].n == 2 && pairs->groups[i].v[1] == c->cx->opts.replica_id)
      return copy_of(c->cx, c->in, c->all[pairs->groups[i].v[0]][k], out);
  return ev_new_array(c->cx, c->in, &c->all[c->cx->opts.replica_id][k]->shape, out);
}

/* The synchronous op's value (op: what in computes; start ops pass
 * their synchronous op) of every operand into res[0..nres). */
static base_status compute(coll *c, ir_op op, ir_literal **res, int *nres) {
  const ir_inst *in = c->in;
  base_status st = ST_OK;
  *nres = in->nops;
  for (int k = 0; k < in->nops && st == ST_OK; k++) {
    switch (op) {
    case IR_OP_ALL_REDUCE: st = reduce_one(c, k, false, &res[k]); break;
    case IR_OP_REDUCE_SCATTER: st = reduce_one(c, k, true, &res[k]); break;
    case IR_OP_ALL_GATHER: {
      const ir_shape *rs = in->shape;
      if (in->op == IR_OP_ALL_GATHER_START) rs = &rs->tuple[1];
      st = gather_one(c, k, result_elem(rs, k), &res[k]);
      break;
    }
    case IR_OP_ALL_TO_ALL:
      if (in->a->dimensions.n == 1) st = all_to_all_array(c, &res[k]);
      else st = copy_of(c->cx, in, c->all[c->g[k]][c->p], &res[k]);
      break;
    case IR_OP_COLLECTIVE_PERMUTE: st = permute_one(c, k, &res[k]); break;
    case IR_OP_COLLECTIVE_BROADCAST: st = copy_of(c->cx, in, c->all[c->g[0]][k], &res[k]); break;
    default: return ev_fail(c->cx, in, ST_INTERNAL, "not a collective");
    }
  }
  return st;
}

/* The value of in from the synchronous results res[0..n): one array, a
 * tuple of them, or a start op's tuple. */
static base_status assemble(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **res,
                            int n, ir_literal **out) {
  base_status st = ST_OK;
  bool start = in->op == IR_OP_ALL_GATHER_START || in->op == IR_OP_COLLECTIVE_PERMUTE_START;
  const ir_shape *ss = start ? &in->shape->tuple[1] : in->shape;
  ir_literal *sync = res[0], *opnd = ops[0];
  if (ss->type == IR_TUPLE && (st = ev_new_tuple(cx, in, res, n, &sync)) != ST_OK) return st;
  if (!start) {
    *out = sync;
    return ST_OK;
  }
  if (in->shape->tuple[0].type == IR_TUPLE &&
      (st = ev_new_tuple(cx, in, (ir_literal **)ops, in->nops, &opnd)) != ST_OK)
    return st;
  int ne = in->shape->ntuple;
  ir_literal **el;
  if ((st = ev_alloc_array(cx, in, ne, (int64_t)sizeof *el, (void **)&el)) != ST_OK) return st;
  el[0] = opnd;
  el[1] = sync;
  for (int i = 2; i < ne && st == ST_OK; i++) st = ev_new_array(cx, in, &in->shape->tuple[i], &el[i]);
  if (st != ST_OK) return st;
  return ev_new_tuple(cx, in, el, ne, out);
}

base_status ev_collective(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  ir_op op = ir_coll_sync_op(in->op);
  if (in->nops < 1) return ev_fail(cx, in, ST_INVALID_ARGUMENT, "needs operands");
  for (int k = 0; k < in->nops; k++)
    if (ops[k]->shape.type == IR_TUPLE)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "operand %d is a tuple, expected an array", k);
  if ((op == IR_OP_ALL_REDUCE || op == IR_OP_REDUCE_SCATTER) && in->ncalls != 1)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "needs one to_apply");
  int nrep = cx->rdv ? cx->opts.replica_count : 1;
  coll c = {cx, in, NULL, NULL, 0, 0};
  ir_literal **res;
  base_status st = ev_alloc_array(cx, in, nrep, (int64_t)sizeof *c.g, (void **)&c.g);
  if (st == ST_OK) st = ev_alloc_array(cx, in, in->nops, (int64_t)sizeof *res, (void **)&res);
  if (st != ST_OK) return st;
  c.n = ir_coll_group(in, nrep, cx->rdv ? cx->opts.replica_id : 0, c.g, &c.p);
  if (c.n == 0)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "replica %d is in no replica group of %d replicas",
                   (int)cx->opts.replica_id, nrep);
  if ((st = exchange(cx, in, ops, &c.all)) != ST_OK) return st;
  /* the module is the same in every replica, so the operands' shapes are
   * too; checked all the same, as a bad exchange would read out of range */
  for (int r = 0; r < nrep && st == ST_OK; r++)
    for (int k = 0; k < in->nops; k++)
      if (!ir_shape_equal(&c.all[r][k]->shape, &ops[k]->shape)) {
        st = ev_fail(cx, in, ST_INVALID_ARGUMENT, "operand %d of replica %d has another shape", k, r);
        break;
      }
  int nres = 0;
  if (st == ST_OK) st = compute(&c, op, res, &nres);
  if (st == ST_OK) st = release(cx, in);
  if (st != ST_OK) return st;
  return assemble(cx, in, ops, res, nres, out);
}

base_status ev_all_reduce(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  return ev_collective(cx, in, ops, out);
}

/* replica-id, partition-id and the -done forms. */
base_status ev_coll_local(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  switch (in->op) {
  case IR_OP_REPLICA_ID:
  case IR_OP_PARTITION_ID: {
    base_status st = ev_new_array(cx, in, in->shape, out);
    if (st != ST_OK) return st;
    uint32_t v = in->op == IR_OP_REPLICA_ID ? (uint32_t)cx->opts.replica_id : 0;
    memcpy((*out)->data, &v, 4);
    return ST_OK;
  }
  case IR_OP_ALL_REDUCE_DONE: *out = ops[0]; return ST_OK;
  default:
    if (ops[0]->shape.type != IR_TUPLE || ops[0]->shape.ntuple < 2)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "operand is not its start op's tuple");
    *out = ops[0]->elems[1];
    return ST_OK;
  }
}

/* Whether ev_collective or ev_coll_local evaluates op. */
static bool coll_op(ir_op op) {
  return ir_is_collective(op) || op == IR_OP_REPLICA_ID || op == IR_OP_PARTITION_ID ||
         op == IR_OP_ALL_REDUCE_DONE || op == IR_OP_ALL_GATHER_DONE ||
         op == IR_OP_COLLECTIVE_PERMUTE_DONE;
}

/* The ops of eval_gather.c, which re-infer their shapes. */
static bool reinfers(ir_op op) {
  return op == IR_OP_DYNAMIC_SLICE || op == IR_OP_DYNAMIC_UPDATE_SLICE || op == IR_OP_GATHER ||
         op == IR_OP_SCATTER || op == IR_OP_SELECT_AND_SCATTER;
}

base_status ev_check_shapes(ev_ctx *cx, bool shape_ops) {
  const ir_module *m = cx->m;
  base_status st = ST_OK;
  for (int c = 0; c < m->comps.n && st == ST_OK; c++) {
    const ir_comp *cp = &m->comps.v[c];
    for (int i = 0; i < cp->insts.n && st == ST_OK; i++) {
      const ir_inst *in = &cp->insts.v[i];
      bool again = shape_ops && reinfers(in->op);
      if (in->dead || (!coll_op(in->op) && !again)) continue;
      arena_mark mk = arena_get_mark(m->arena);
      ir_shape *os = arena_array(m->arena, (size_t)in->nops + 1, sizeof(ir_shape));
      bool ok = in->nops >= 0 && (in->nops == 0 || in->ops);
      for (int k = 0; ok && k < in->nops; k++) {
        ok = in->ops[k] >= 0 && in->ops[k] < i;
        if (ok) os[k] = *cp->insts.v[in->ops[k]].shape;
      }
      ir_shape out = *in->shape;
      char why[300] = "malformed operands";
      if (!ok || !ir_infer_shape(m, in->op, os, in->nops, in->a, in->calls, in->ncalls, &out, why,
                                 sizeof why))
        st = ev_fail(cx, in, ST_INVALID_ARGUMENT, "%s", why);
      else if (!again && !ir_shape_equal(&out, in->shape))
        st = ev_fail(cx, in, ST_INVALID_ARGUMENT, "result shape does not follow from the operands");
      arena_reset(m->arena, mk);
    }
  }
  cx->shapes_checked = st == ST_OK && shape_ops;
  return st;
}

/* ---- N replicas on host threads ---------------------------------------- */

typedef struct replica {
  ev_ctx cx;
  ir_literal *const *args;
  int nargs;
  ir_literal *value;
  base_status st;
  char err[600];
  pthread_t th;
  bool started;
} replica;

static void *run_replica(void *p) {
  replica *r = p;
  r->st = ev_run_entry(&r->cx, r->args, r->nargs, &r->value);
  coll_rdv_leave(r->cx.rdv, r->cx.opts.replica_id, r->st == ST_OK ? NULL : r->err);
  return NULL;
}

/* The replica whose failure is the cause: the first that failed on its
 * own rather than because another one did. */
static int cause(const replica *reps, int nrep) {
  int first = -1;
  for (int i = 0; i < nrep; i++) {
    if (reps[i].st == ST_OK) continue;
    if (!reps[i].cx.rdv_failed) return i;
    if (first < 0) first = i;
  }
  return first;
}

base_status ir_eval_replicated(const ir_module *m, const ir_eval_options *opts, int nrep,
                               ir_literal *const *const *args, int nargs, arena *out_arena,
                               ir_literal **outs, char *err, size_t errlen) {
  if (err && errlen) err[0] = 0;
  if (nrep == 1 && args) {
    ir_eval_options o;
    if (opts) o = *opts;
    else ir_eval_options_init(&o);
    o.replica_count = 1;
    o.replica_id = 0;
    return ir_eval(m, &o, args[0], nargs, out_arena, &outs[0], err, errlen);
  }
  if (nrep < 1 || nrep > IR_EVAL_MAX_REPLICAS || !args || !outs) {
    if (err && errlen)
      snprintf(err, errlen, "%d replicas: between 1 and %d run, with arguments and results", nrep,
               IR_EVAL_MAX_REPLICAS);
    return ST_INVALID_ARGUMENT;
  }
  replica *reps = calloc((size_t)nrep, sizeof *reps);
  coll_rdv *rdv = coll_rdv_create(nrep);
  base_status st = reps && rdv ? ST_OK : ST_OUT_OF_MEMORY;
  if (st != ST_OK && err && errlen) snprintf(err, errlen, "no host memory for %d replicas", nrep);
  for (int i = 0; i < nrep && st == ST_OK; i++) {
    ir_eval_options o;
    if (opts) o = *opts;
    else ir_eval_options_init(&o);
    o.replica_count = nrep;
    o.replica_id = i;
    reps[i].args = args[i];
    reps[i].nargs = nargs;
    st = ev_prepare(&reps[i].cx, m, &o, reps[i].err, sizeof reps[i].err);
    reps[i].cx.rdv = rdv;
    if (st != ST_OK) {
      snprintf(err, errlen, "%s", reps[i].err);
      break;
    }
  }
  for (int i = 0; i < nrep && st == ST_OK; i++) {
    if (pthread_create(&reps[i].th, NULL, run_replica, &reps[i])) {
      /* the ones started end when this one leaves */
      coll_rdv_leave(rdv, i, "no host thread for it");
      for (int j = i + 1; j < nrep; j++) coll_rdv_leave(rdv, j, "no host thread for it");
      snprintf(err, errlen, "no host thread for replica %d of %d", i, nrep);
      st = ST_OUT_OF_MEMORY;
      break;
    }
    reps[i].started = true;
  }
  for (int i = 0; reps && i < nrep; i++)
    if (reps[i].started) pthread_join(reps[i].th, NULL);
  if (st == ST_OK) {
    int bad = cause(reps, nrep);
    if (bad >= 0) {
      st = reps[bad].st;
      snprintf(err, errlen, "%s (replica %d of %d)", reps[bad].err, bad, nrep);
    }
  }
  for (int i = 0; i < nrep && st == ST_OK; i++) {
    ev_ctx *cx = &reps[i].cx;
    cx->err = err;
    cx->errlen = errlen;
    st = ev_copy_out(cx, reps[i].value, out_arena, &outs[i]);
  }
  for (int i = 0; reps && i < nrep; i++) {
    arena_destroy(reps[i].cx.scratch);
    if (st != ST_OK && outs) outs[i] = NULL;
  }
  free(reps);
  coll_rdv_destroy(rdv);
  return st;
}
