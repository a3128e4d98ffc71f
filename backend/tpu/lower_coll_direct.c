/* lower_coll_direct.c: the direct-exchange all-reduce, one program for
 * every core of a group of all n replicas in order (docs/tpu-backend.md,
 * "Collectives").
 *
 * Core p owns chunk p (coll_chunk's). Reduce-scatter: p puts its chunk d
 * of the operand into core d's RECV slot (p - d) mod n, for every d != p;
 * so slot t of core d holds member d + t's chunk d, and base/coll.h's
 * order for chunk d (members d+1, d+2, ..., d) is slots 1, 2, ..., n - 1,
 * then the core's own operand. The folds run in that order, FOLD_TERMS
 * terms to an elementwise program, into slots 0 and 1 in turn (both free
 * by then). All-gather: p puts its finished chunk into every core's
 * result (its own too, through the loopback), exactly its elements. Every put goes straight to its
 * destination over the torus, so the algorithm pays one hop latency per
 * phase instead of the ring's n - 1, and each link carries the transfers
 * routed over it (about the mean route length times the ring's bytes):
 * the choice for small values on many cores (tpu_all_reduce_choose).
 *
 * Before anything is put into a core it says it is ready: it puts the
 * readiness word into every other core (COLL_SEM_READY) and waits for theirs.
 * Puts of a phase go one after another on DMA queue k->queue, each issued
 * once the previous one has read its source; arrivals count on one ICI
 * semaphore per phase. Slots carry ceil(count / n) elements (a chunk one
 * shorter carries the next chunk's first element along; it never reaches
 * the result). */
#include "backend/tpu/lower_coll.h"

/* Terms per fold program: the accumulator and FOLD_TERMS - 1 slots (each
 * input needs a scalar register for its run-time address; tb_sreg_take
 * allows eight at once). */
enum { FOLD_TERMS = 4 };

/* A run-time loop of iters > 0 iterations: the body runs between
 * barriers (so the builder's DMA tokens are the same at every entry). */
typedef struct rloop {
  int cnt;
  uint64_t top;
} rloop;

static void loop_begin(tb *b, rloop *l, int iters) {
  l->cnt = tb_sreg_take(b);
  si(b, OP_SLI, l->cnt, 0, iters);
  tb_barrier(b);
  l->top = tb_label(b);
}

static void loop_end(tb *b, rloop *l) {
  tb_barrier(b);
  si(b, OP_SADDI, l->cnt, l->cnt, -1);
  tb_branch(b, OP_BNE, l->cnt, 0, l->top);
  tb_sreg_give(b, l->cnt);
}

/* d = d - 1 mod n. */
static void dec_mod(tb *b, int d, int n) {
  int t = tb_sreg_take(b);
  si(b, OP_SADDI, d, d, -1);
  si(b, OP_SSLTI, t, d, 0);
  si(b, OP_SMULI, t, t, n);
  s3(b, OP_SADD, d, d, t);
  tb_sreg_give(b, t);
}

/* A put from register rs to register rt of the core the descriptor names
 * (word 10 = register dst), after the previous one has read its source. */
static void put_async(coll *k, int rs, int rt, int dst, int sem) {
  tb *b = k->b;
  tb_raw(b, OP_SST, dst, 0, 0, 0, 0, (int32_t)(k->desc + 40));
  put_drain(k);
  tb_raw(b, OP_DMAPUT, rs, rt, tb_sreg(b, k->desc), TB_SEM_Q1, k->queue, sem);
  k->busy = true;
}

/* Puts to every other core in turn: body(k, n, arg) moves to the next
 * destination (p - 1, p - 2, ... mod n) and issues its put (put_async);
 * the first runs outside the loop, so the builder's state at the loop's
 * entry is the same each time. */
static void each_other(coll *k, int n, void (*body)(coll *, int, void *), void *arg) {
  tb *b = k->b;
  body(k, n, arg);
  if (n > 2) {
    rloop l;
    loop_begin(b, &l, n - 2);
    body(k, n, arg);
    loop_end(b, &l);
  }
  put_drain(k);
}

/* Readiness: the word at coll_flag into the next core's second granule
 * (*arg: the register of the destination). */
static void ready_body(coll *k, int n, void *arg) {
  tb *b = k->b;
  int d = *(int *)arg;
  dec_mod(b, d, n);
  put_async(k, tb_sreg(b, (uint32_t)b->coll_flag), tb_sreg(b, (uint32_t)(b->coll_flag + TB_GRANULE)),
            d, COLL_SEM_READY);
}

/* Reduce-scatter: chunk d of the operand into d's slot t (register *rt,
 * advanced by a slot each time); s follows d's chunk. */
typedef struct rs_arg {
  rchunk *s;
  int rt;
} rs_arg;

static void rs_body(coll *k, int n, void *arg) {
  rs_arg *a = arg;
  tb *b = k->b;
  chunk_prev(k, n, a->s);
  int rs = tb_sreg_take(b);
  s_addr(b, rs, a->s->lo, (uint64_t)k->es, k->X);
  si(b, OP_SADDI, a->rt, a->rt, (int64_t)k->slot);
  put_async(k, rs, a->rt, a->s->c, SEM_RS);
  tb_sreg_give(b, rs);
}

/* All-gather: the finished chunk (register rf) into the next core d's
 * result at ro. */
typedef struct ag_arg {
  int rf, ro, d;
} ag_arg;

static void ag_body(coll *k, int n, void *arg) {
  ag_arg *a = arg;
  dec_mod(k->b, a->d, n);
  put_async(k, a->rf, a->ro, a->d, SEM_AG);
}

/* The fold program of terms inputs: ((x0 f x1) f x2) ... with the
 * reduction k->e (inputs acc, x). */
static tk_elem fold_chain(coll *k, int terms, int64_t count, uint64_t *in_addr,
                          uint64_t *out_addr) {
  tb *b = k->b;
  const tk_elem *e = &k->e;
  tk_node *nd = arena_array(b->a, (size_t)(terms + (terms - 1) * e->nnodes), sizeof *nd);
  ir_type *ty = arena_array(b->a, (size_t)terms, sizeof *ty);
  int *map = arena_array(b->a, (size_t)e->nnodes, sizeof *map);
  int *root = arena_array(b->a, 1, sizeof *root);
  int nn = 0;
  for (int i = 0; i < terms; i++) {
    memset(&nd[nn], 0, sizeof nd[nn]);
    nd[nn].kind = TK_IN;
    nd[nn].type = k->ty;
    nd[nn].input = i;
    ty[i] = k->ty;
    nn++;
  }
  int acc = 0;
  for (int t = 1; t < terms; t++) {
    for (int j = 0; j < e->nnodes; j++) {
      const tk_node *o = &e->nodes[j];
      if (o->kind == TK_IN) {
        map[j] = o->input == 0 ? acc : t;
        continue;
      }
      nd[nn] = *o;
      for (int a = 0; a < o->nargs; a++) nd[nn].args[a] = map[o->args[a]];
      map[j] = nn++;
    }
    acc = map[e->out_node[0]];
  }
  *root = acc;
  tk_elem c = {nn, nd, terms, in_addr, ty, 1, root, out_addr, count};
  return c;
}

/* out (register ro) = fold of the accumulator (register ra) and the terms
 * - 2 slots from register rt on, then, when rx > 0, the operand's chunk at
 * register rx. */
static void fold_terms(coll *k, int n, int terms, int ra, int rt, int rx, int ro) {
  tb *b = k->b;
  uint64_t in_addr[FOLD_TERMS + 1], out_addr = k->RECV;
  int in_reg[FOLD_TERMS + 1], own[FOLD_TERMS + 1];
  int nslots = rx > 0 ? terms - 2 : terms - 1;
  in_reg[0] = ra;
  in_addr[0] = k->RECV;
  for (int i = 0; i < nslots; i++) {
    own[i] = 0;
    in_reg[1 + i] = rt;
    if (i > 0) {
      in_reg[1 + i] = own[i] = tb_sreg_take(b);
      si(b, OP_SADDI, own[i], rt, (int64_t)(k->slot * (uint64_t)i));
    }
    in_addr[1 + i] = k->RECV;
  }
  if (rx > 0) {
    in_reg[terms - 1] = rx;
    in_addr[terms - 1] = k->X;
  }
  tk_elem c = fold_chain(k, terms, (int64_t)slot_elems(k, n), in_addr, &out_addr);
  tk_elementwise_at(b, &c, in_reg, &ro, ring_span(k, n));
  for (int i = 1; i < nslots; i++) tb_sreg_give(b, own[i]);
}

/* ro = the other of slots 0 and 1; ra = the old ro. */
static void swap_out(coll *k, int ra, int ro) {
  tb *b = k->b;
  s3(b, OP_SADD, ra, ro, 0);
  s3(b, OP_SSUB, ro, tb_sreg(b, (uint32_t)(2 * k->RECV + k->slot)), ro);
}

/* Folds chunk p: slots 1, ..., n - 1, then the operand's chunk p at
 * register rx; returns the slot (0 or 1) the result is in. */
static int fold_all(coll *k, int n, int rx) {
  tb *b = k->b;
  int ra = tb_sreg_take(b), rt = tb_sreg_take(b), ro = tb_sreg_take(b);
  s3(b, OP_SADD, ra, tb_sreg(b, (uint32_t)(k->RECV + k->slot)), 0);
  s3(b, OP_SADD, ro, tb_sreg(b, (uint32_t)k->RECV), 0);
  s3(b, OP_SADD, rt, tb_sreg(b, (uint32_t)(k->RECV + 2 * k->slot)), 0);
  int per = FOLD_TERMS - 1, m = (n - 2) / per, rest = (n - 2) % per;
  if (m > 0) {
    rloop l;
    loop_begin(b, &l, m);
    fold_terms(k, n, FOLD_TERMS, ra, rt, 0, ro);
    swap_out(k, ra, ro);
    si(b, OP_SADDI, rt, rt, (int64_t)(k->slot * (uint64_t)per));
    loop_end(b, &l);
  }
  /* the tail: the remaining slots and the operand's chunk p, fold m + 1 */
  tb_barrier(b);
  fold_terms(k, n, rest + 2, ra, rt, rx, ro);
  tb_barrier(b);
  tb_sreg_give(b, ra);
  tb_sreg_give(b, rt);
  tb_sreg_give(b, ro);
  return m % 2;
}

/* The bytes of chunk s into register d: q or q + 1 elements. */
static void chunk_bytes(coll *k, int n, const rchunk *s, int d) {
  tb *b = k->b;
  int64_t q = k->count / n, r = k->count % n;
  s3(b, OP_SADD, d, s->rem, tb_sreg(b, (uint32_t)r));
  si(b, OP_SSLTI, d, d, n); /* 1: the chunk has q elements */
  si(b, OP_SMULI, d, d, -(int64_t)k->es);
  si(b, OP_SADDI, d, d, (q + 1) * k->es);
}

void direct_all_reduce(coll *k, int n) {
  tb *b = k->b;
  k->queue = b->t.dma_queues > 1 ? 1 : 0;
  k->busy = false;
  tb_barrier(b);
  rchunk s = {tb_sreg_take(b), tb_sreg_take(b), tb_sreg_take(b)};
  int p = tb_sreg_take(b), d = tb_sreg_take(b);
  tb_raw(b, OP_COREID, p, 0, 0, 0, 0, 0);
  /* readiness, both ways */
  tb_raw(b, OP_SST, tb_sreg(b, 4), 0, 0, 0, 0, (int32_t)k->desc);
  s3(b, OP_SADD, d, p, 0);
  each_other(k, n, ready_body, &d);
  iwait(b, COLL_SEM_READY, n - 1);
  /* reduce-scatter: slot t = 1, 2, ... of cores p - 1, p - 2, ... */
  tb_sreg_give(b, d);
  chunk_at(k, n, p, &s);
  tb_sreg_give(b, p);
  tb_raw(b, OP_SST, tb_sreg(b, (uint32_t)(slot_elems(k, n) * (uint64_t)k->es)), 0, 0, 0, 0,
         (int32_t)k->desc);
  rs_arg ra = {&s, tb_sreg_take(b)};
  s3(b, OP_SADD, ra.rt, tb_sreg(b, (uint32_t)k->RECV), 0);
  each_other(k, n, rs_body, &ra);
  tb_sreg_give(b, ra.rt);
  chunk_prev(k, n, &s); /* back to chunk p */
  /* the all-gather's bytes, set while s is at hand (the puts have gone) */
  int t = tb_sreg_take(b);
  chunk_bytes(k, n, &s, t);
  tb_raw(b, OP_SST, t, 0, 0, 0, 0, (int32_t)k->desc);
  s_addr(b, t, s.lo, (uint64_t)k->es, k->X);
  tb_sreg_give(b, s.c);
  tb_sreg_give(b, s.lo);
  tb_sreg_give(b, s.rem);
  iwait(b, SEM_RS, n - 1);
  tb_barrier(b);
  uint64_t F = k->RECV + (uint64_t)fold_all(k, n, t) * k->slot;
  tb_sreg_give(b, t);
  /* all-gather: exactly chunk p into every other core's result */
  p = tb_sreg_take(b);
  tb_raw(b, OP_COREID, p, 0, 0, 0, 0, 0);
  s.c = tb_sreg_take(b), s.lo = tb_sreg_take(b), s.rem = tb_sreg_take(b);
  chunk_at(k, n, p, &s);
  tb_sreg_give(b, p);
  ag_arg ga = {tb_sreg_take(b), tb_sreg_take(b), tb_sreg_take(b)};
  s3(b, OP_SADD, ga.rf, tb_sreg(b, (uint32_t)F), 0);
  s_addr(b, ga.ro, s.lo, (uint64_t)k->es, k->OUT);
  s3(b, OP_SADD, ga.d, s.c, 0);
  /* this core's own chunk comes round through the interconnect too: every
   * write into the result is then the interconnect's, and chunks that
   * share a granule of the result do not race (docs/isa.md, section 8) */
  put_async(k, ga.rf, ga.ro, ga.d, SEM_AG);
  each_other(k, n, ag_body, &ga);
  tb_sreg_give(b, ga.ro);
  tb_sreg_give(b, ga.d);
  iwait(b, SEM_AG, n);
  tb_barrier(b);
  tb_sreg_give(b, ga.rf);
  tb_sreg_give(b, s.c);
  tb_sreg_give(b, s.lo);
  tb_sreg_give(b, s.rem);
}
