/* lower_coll.c: all-reduce across replicas, one replica per core of a
 * board or pod, over the interconnect (docs/tpu-backend.md, "Collectives";
 * the ISA's dmaput and iwait, docs/isa.md).
 *
 * Every core runs the same program and learns which replica it is from
 * `coreid`; the lowering branches on it into code specialised for each
 * core (its group, its position p in it, its neighbours), so every address
 * is static. Buffers are allocated before the branches and so lie at the
 * same HBM addresses on every core: a core puts data straight into its
 * neighbour's buffers. Each chunk travels into a slot of its own, aligned
 * to the 512-byte granule of the emulator's ordering check.
 *
 * The combining order is base/coll.h's: chunk c (coll_chunk over the
 * flattened elements) folds members c+1, c+2, ..., c of the group, as
 * acc = f(acc, x). Ring (the default): reduce-scatter in n-1 steps, step s
 * sending chunk (p-1-s) mod n to the next member, which folds its own
 * elements into it (so chunk c starts at member c+1 and ends at member c),
 * then an all-gather of the finished chunks in n-1 steps. Parameter server
 * (tpu_options.all_reduce_ps): every member sends its operand to member 0
 * of its group, which folds each chunk in the same order and sends the
 * result back to each member. Both give the evaluator's bits.
 *
 * Nothing is put into a core before it says it is ready: at the start
 * each core, its units drained, puts a word (from the first of two
 * granules allocated before anything else, b->coll_flag, never freed nor
 * otherwise touched) into the second granule of every core that will
 * send to it, and each sender
 * waits for that signal (ICI semaphore SEM_READY) from the cores it sends
 * to; so the buffers a core receives into are no longer in use by it.
 *
 * Per step: a barrier (every unit drained, the builder's DMA tokens
 * taken); dmaput on DMA queue 0 whose sender semaphore is TB_SEM_Q1, taken
 * at once by the front end (nothing else is pending on it after a
 * barrier); iwait on the step's ICI semaphore for the incoming chunk
 * (arrivals are counted apart from the core's own signals, so they never
 * meet the builder's tokens); then the fold, an elementwise program of the
 * reduction computation. */
#include "backend/tpu/lower.h"
#include "base/coll.h"

/* ICI semaphores: step s of a collective uses s % SEM_STEPS, the
 * readiness handshake SEM_READY. */
enum { SEM_STEPS = 31, SEM_READY = 31 };

static const ir_inst *inst_of(lctx *x, ir_id i) { return &x->comp->insts.v[i]; }

/* The group of replica r of nrep: members into g (room for nrep), r's
 * position into *pos; the size, 0 when no group lists r. */
static int group_of(const ir_inst *in, int nrep, int r, int *g, int *pos) {
  const ir_replica_groups *rg = &in->a->replica_groups;
  if (rg->ngroups == 0) {
    for (int i = 0; i < nrep; i++) g[i] = i;
    *pos = r;
    return nrep;
  }
  for (int k = 0; k < rg->ngroups; k++)
    for (int j = 0; j < rg->groups[k].n; j++)
      if (rg->groups[k].v[j] == r) {
        int n = (int)rg->groups[k].n;
        for (int i = 0; i < n && i < nrep; i++) g[i] = (int)rg->groups[k].v[i];
        *pos = j;
        return n <= nrep ? n : 0;
      }
  return 0;
}

typedef struct coll {
  tb *b;
  tk_elem e;      /* the reduction: inputs (acc, x), one output */
  int es;         /* bytes per element */
  int64_t count;  /* elements */
  uint64_t X;     /* the operand */
  uint64_t OUT;   /* the result */
  uint64_t slot;  /* bytes per slot: the largest chunk (ring) or the value (ps), aligned */
  uint64_t RECV, ACC, GATH; /* n slots each */
} coll;

static uint64_t chunk_lo(const coll *k, int n, int c) {
  int64_t lo, hi;
  coll_chunk(k->count, n, c, &lo, &hi);
  return (uint64_t)lo;
}

static uint64_t chunk_n(const coll *k, int n, int c) {
  int64_t lo, hi;
  coll_chunk(k->count, n, c, &lo, &hi);
  return (uint64_t)(hi - lo);
}

/* Puts bytes from HBM src into core dst's HBM at to, signalling its ICI
 * semaphore sem; the front end takes the sender's token at once. */
static void put(tb *b, uint64_t src, int dst, uint64_t to, uint64_t bytes, int sem) {
  if (!bytes || b->failed) return;
  uint32_t w[ISA_PUT_DESC_WORDS] = {(uint32_t)bytes, 1, 1, 1, 0, 0, 0, 0, 0, 0, (uint32_t)dst};
  uint32_t da = tb_smem_words(b, w, ISA_PUT_DESC_WORDS);
  int rs = tb_sreg(b, (uint32_t)src);
  int rt = tb_sreg(b, (uint32_t)to);
  int rd = tb_sreg(b, da);
  tb_raw(b, OP_DMAPUT, rs, rt, rd, TB_SEM_Q1, 0, sem & ISA_PUT_SEM_MASK);
  tb_raw(b, OP_WAIT, TB_SEM_Q1, 0, 0, 0, ISA_UNIT_SCALAR, 1);
}

static void iwait(tb *b, int sem, int count) {
  if (count > 0) tb_raw(b, OP_IWAIT, sem, 0, 0, 0, 0, count);
}

/* This core is ready to receive from each of the n cores `from`; then
 * waits until the `nto` cores it sends to are ready. */
static void ready(tb *b, const int *from, int n, int nto) {
  tb_barrier(b);
  for (int q = 0; q < n; q++)
    put(b, b->coll_flag, from[q], b->coll_flag + TB_GRANULE, 4, SEM_READY);
  iwait(b, SEM_READY, nto);
}

/* out[0..n) = f(acc[0..n), x[0..n)), element counts n. */
static void fold(coll *k, uint64_t out, uint64_t acc, uint64_t xs, uint64_t n) {
  if (!n) return;
  uint64_t in[2] = {acc, xs};
  k->e.in_addr = in;
  k->e.out_addr = &out;
  k->e.count = (int64_t)n;
  tk_elementwise(k->b, &k->e);
}

static void copy(coll *k, uint64_t dst, uint64_t src, uint64_t n) {
  if (!n) return;
  int64_t one = 1, dims = (int64_t)n;
  tk_copy(k->b, dst, &one, src, &one, 1, &dims, k->es);
}

/* Ring all-reduce of core at position p of group g (n members). */
static void ring(coll *k, const int *g, int n, int p) {
  tb *b = k->b;
  int next = g[(p + 1) % n];
  uint64_t S = k->slot, es = (uint64_t)k->es;
  int prev = g[(p + n - 1) % n];
  ready(b, &prev, 1, 1);
  for (int s = 0; s + 1 < n; s++) { /* reduce-scatter */
    int cs = ((p - 1 - s) % n + n) % n, cr = ((p - 2 - s) % n + n) % n;
    tb_barrier(b);
    uint64_t src = s == 0 ? k->X + chunk_lo(k, n, cs) * es : k->ACC + (uint64_t)cs * S;
    put(b, src, next, k->RECV + (uint64_t)cs * S, chunk_n(k, n, cs) * es, s % SEM_STEPS);
    iwait(b, s % SEM_STEPS, chunk_n(k, n, cr) ? 1 : 0);
    fold(k, k->ACC + (uint64_t)cr * S, k->RECV + (uint64_t)cr * S, k->X + chunk_lo(k, n, cr) * es,
         chunk_n(k, n, cr));
  }
  for (int s = 0; s + 1 < n; s++) { /* all-gather */
    int cs = ((p - s) % n + n) % n, cr = ((p - 1 - s) % n + n) % n;
    tb_barrier(b);
    uint64_t src = s == 0 ? k->ACC + (uint64_t)p * S : k->GATH + (uint64_t)cs * S;
    put(b, src, next, k->GATH + (uint64_t)cs * S, chunk_n(k, n, cs) * es, (n - 1 + s) % SEM_STEPS);
    iwait(b, (n - 1 + s) % SEM_STEPS, chunk_n(k, n, cr) ? 1 : 0);
  }
  tb_barrier(b);
  for (int c = 0; c < n; c++)
    copy(k, k->OUT + chunk_lo(k, n, c) * es, (c == p ? k->ACC : k->GATH) + (uint64_t)c * S,
         chunk_n(k, n, c));
}

/* Parameter-server all-reduce: member 0 gathers, folds, and sends back. */
static void server(coll *k, const int *g, int n, int p) {
  tb *b = k->b;
  uint64_t S = k->slot, es = (uint64_t)k->es, bytes = (uint64_t)k->count * es;
  if (p != 0)
    ready(b, g, 1, 1);
  else
    ready(b, g + 1, n - 1, n - 1);
  if (p != 0) {
    put(b, k->X, g[0], k->RECV + (uint64_t)p * S, bytes, 0);
    iwait(b, 1, bytes ? 1 : 0); /* the result, straight into OUT */
    return;
  }
  iwait(b, 0, bytes ? n - 1 : 0);
  for (int c = 0; c < n; c++) {
    uint64_t lo = chunk_lo(k, n, c) * es, m = chunk_n(k, n, c);
    /* Terms c+1, ..., c; slot 0 is this core's own operand. Partial sums
     * alternate between ACC and GATH; the last fold writes OUT. */
    uint64_t acc = 0;
    for (int t = 0; t < n; t++) {
      int q = coll_term(n, c, t);
      uint64_t xq = (q == 0 ? k->X : k->RECV + (uint64_t)q * S) + lo;
      uint64_t to = t == n - 1 ? k->OUT + lo : (t % 2 ? k->GATH : k->ACC) + lo;
      if (t == 0)
        acc = xq;
      else
        fold(k, to, acc, xq, m);
      acc = t == 0 ? acc : to;
    }
  }
  tb_barrier(b);
  for (int q = 1; q < n; q++) put(b, k->OUT, g[q], k->OUT, bytes, 1);
}

/* An all-reduce over more than one replica; false when in is not one
 * (the single-replica identity is lower_tuple's). */
bool lower_all_reduce(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tb *b = x->b;
  int nrep = b->replicas;
  if (in->op != IR_OP_ALL_REDUCE || nrep < 2) return false;
  if (in->nops != 1 || in->shape->type == IR_TUPLE) {
    tb_error(b, ST_UNSUPPORTED, "an all-reduce of %d operands over %d replicas (the TPU backend "
             "reduces one array)", in->nops, nrep);
    return true;
  }
  coll k;
  memset(&k, 0, sizeof k);
  k.b = b;
  if (!lower_scalar_comp(x, in->calls[0], &k.e)) return true;
  if (k.e.ninputs != 2 || k.e.noutputs != 1) {
    tb_error(b, ST_UNSUPPORTED, "all-reduce's to_apply must take two scalars and return one");
    return true;
  }
  const tval *v = x->val[in->ops[0]];
  tval *out = tv_new(b, in->shape->type, in->shape->rank, in->shape->dims);
  k.es = tv_esize(out->type);
  k.count = out->count;
  k.X = tv_addr(v);
  k.OUT = tv_addr(out);
  int *g = arena_array(b->a, (size_t)nrep, sizeof(int));
  int maxn = 1, minn = 0;
  for (int r = 0; r < nrep; r++) {
    int pos, n = group_of(in, nrep, r, g, &pos);
    if (n == 0) {
      tb_error(b, ST_INVALID_ARGUMENT, "all-reduce: replica_groups do not list replica %d of %d",
               r, nrep);
      return true;
    }
    if (n > maxn) maxn = n;
    if (n >= 2 && (minn == 0 || n < minn)) minn = n;
  }
  uint64_t value = (uint64_t)k.count * (uint64_t)k.es;
  /* The largest chunk is the last of the smallest group (of two or more). */
  k.slot = tb_align(b->all_reduce_ps || minn < 2 ? value
                                                 : chunk_n(&k, minn, minn - 1) * (uint64_t)k.es);
  uint64_t area = k.slot * (uint64_t)maxn;
  k.RECV = tb_hbm_alloc(b, area);
  k.ACC = tb_hbm_alloc(b, b->all_reduce_ps ? value : area);
  k.GATH = tb_hbm_alloc(b, b->all_reduce_ps ? value : area);
  tb_explain(b, "all-reduce over %d replicas in groups of up to %d: %s, %llu bytes, chunks of up "
             "to %llu bytes (fold order of base/coll.h)",
             nrep, maxn,
             b->all_reduce_ps ? "parameter server (member 0 of each group folds and broadcasts)"
                              : "ring reduce-scatter then all-gather",
             (unsigned long long)value,
             (unsigned long long)(b->all_reduce_ps ? value : chunk_n(&k, minn, minn - 1) * (uint64_t)k.es));
  /* coreid -> the code of each core. */
  tb_barrier(b);
  int rc = tb_sreg_take(b);
  tb_raw(b, OP_COREID, rc, 0, 0, 0, 0, 0);
  uint64_t *to = arena_array(b->a, (size_t)nrep, sizeof(uint64_t));
  for (int r = 0; r + 1 < nrep; r++) to[r] = tb_branch(b, OP_BEQ, rc, tb_sreg(b, (uint32_t)r), 0);
  to[nrep - 1] = tb_branch(b, OP_JMP, 0, 0, 0);
  tb_sreg_give(b, rc);
  uint64_t *join = arena_array(b->a, (size_t)nrep, sizeof(uint64_t));
  for (int r = 0; r < nrep; r++) {
    tb_patch(b, to[r], tb_label(b));
    int pos, n = group_of(in, nrep, r, g, &pos);
    if (n == 1) {
      tb_barrier(b);
      copy(&k, k.OUT, k.X, (uint64_t)k.count);
    } else if (b->all_reduce_ps) {
      server(&k, g, n, pos);
    } else {
      ring(&k, g, n, pos);
    }
    tb_barrier(b);
    join[r] = tb_branch(b, OP_JMP, 0, 0, 0);
  }
  uint64_t end = tb_label(b);
  for (int r = 0; r < nrep; r++) tb_patch(b, join[r], end);
  tb_hbm_free(b, k.RECV, area);
  tb_hbm_free(b, k.ACC, b->all_reduce_ps ? value : area);
  tb_hbm_free(b, k.GATH, b->all_reduce_ps ? value : area);
  x->val[i] = out;
  return true;
}
