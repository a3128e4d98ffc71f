/* lower_coll.c: all-reduce, and reduce-scatter and all-gather (the
 * ring's halves), across replicas, one replica per core of a board or
 * pod, over the interconnect (docs/tpu-backend.md, "Collectives";
 * the ISA's dmaput and iwait, docs/isa.md).
 *
 * Every core runs the same program and learns which replica it is from
 * `coreid`. A ring over all replicas in order (the data-parallel case, on
 * boards and pods) is one program for every core (ring_generic: positions,
 * neighbours and chunk addresses computed on the scalar unit, each phase a
 * run-time loop), so code and SMEM do not grow with the replica count;
 * so is a ring over listed groups of one size, whose position and next
 * member each core reads from an SMEM table (group_table). Otherwise
 * (unequal groups, the parameter server, fewer elements than members)
 * the lowering branches on `coreid` into code specialised for each core
 * (its group, its position p in it, its neighbours), so every address is
 * static. Every put shares one SMEM descriptor whose bytes and
 * destination the code writes before it. Buffers are allocated before the
 * branches and loops and so lie at the same HBM addresses on every core:
 * a core puts data straight into its neighbour's buffers. Each chunk travels into a slot of its own, aligned
 * to the 512-byte granule of the emulator's ordering check.
 *
 * The combining order is base/coll.h's: chunk c (coll_chunk over the
 * flattened elements) folds members c+1, c+2, ..., c of the group, as
 * acc = f(acc, x). Ring (the default): reduce-scatter in n-1 steps, step s
 * sending chunk (p-1-s) mod n to the next member, which folds its own
 * elements into it (so chunk c starts at member c+1 and ends at member c),
 * then an all-gather of the finished chunks in n-1 steps. Parameter server
 * (tpu_options.all_reduce = TPU_AR_PS): every member sends its operand to member 0
 * of its group, which folds each chunk in the same order and sends the
 * result back to each member. Both give the evaluator's bits.
 *
 * Nothing is put into a core before it is inside this collective, its
 * units drained (coll_sync.h): the one-program ring starts with its
 * readiness handshake (core p puts its readiness word into core p - 1,
 * signalling COLL_SEM_READY, and waits for p + 1's), the specialised code
 * with the barrier of all cores (coll_barrier); so the buffers a core
 * receives into are no longer in use by it, and no signal of another
 * collective is taken for one of this one.
 *
 * Per step of the specialised code (the one-program ring's steps are
 * rs_step and ag_step): a barrier (every unit drained, the builder's DMA
 * tokens taken); dmaput on DMA queue 0 whose sender semaphore is TB_SEM_Q1, taken
 * at once by the front end (nothing else is pending on it after a
 * barrier); iwait on the step's ICI semaphore for the incoming chunk
 * (arrivals are counted apart from the core's own signals, so they never
 * meet the builder's tokens); then the fold, an elementwise program of the
 * reduction computation. */
#include "backend/tpu/lower_coll.h"

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

/* The put descriptor: the program's one (coll_setup) whose bytes (word
 * 0) and destination core (word 10) the code writes before a dmaput, so
 * SMEM does not grow with the puts. */
void desc_set(coll *k, int rbytes, int rdst) { coll_desc_set(k->b, rbytes, rdst); }

/* Puts from HBM at register rs into HBM at register rt of the core and
 * bytes the descriptor holds, signalling its ICI semaphore sem; the front
 * end takes the sender's token at once. */
void put_go(coll *k, int rs, int rt, int sem) {
  tb *b = k->b;
  tb_raw(b, OP_DMAPUT, rs, rt, tb_sreg(b, k->desc), TB_SEM_Q1, 0, sem & ISA_PUT_SEM_MASK);
  tb_raw(b, OP_WAIT, TB_SEM_Q1, 0, 0, 0, ISA_UNIT_SCALAR, 1);
}

/* Puts bytes from HBM src into core dst's HBM at to, signalling its ICI
 * semaphore sem. */
static void put(coll *k, uint64_t src, int dst, uint64_t to, uint64_t bytes, int sem) {
  tb *b = k->b;
  if (!bytes || b->failed) return;
  desc_set(k, tb_sreg(b, (uint32_t)bytes), tb_sreg(b, (uint32_t)dst));
  put_go(k, tb_sreg(b, (uint32_t)src), tb_sreg(b, (uint32_t)to), sem);
}

void iwait(tb *b, int sem, int count) {
  if (count > 0) tb_raw(b, OP_IWAIT, sem, 0, 0, 0, 0, count);
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
  for (int s = 0; s + 1 < n; s++) { /* reduce-scatter */
    int cs = ((p - 1 - s) % n + n) % n, cr = ((p - 2 - s) % n + n) % n;
    tb_barrier(b);
    uint64_t src = s == 0 ? k->X + chunk_lo(k, n, cs) * es : k->ACC + (uint64_t)cs * S;
    put(k, src, next, k->RECV + (uint64_t)cs * S, chunk_n(k, n, cs) * es, s % SEM_STEPS);
    iwait(b, s % SEM_STEPS, chunk_n(k, n, cr) ? 1 : 0);
    fold(k, k->ACC + (uint64_t)cr * S, k->RECV + (uint64_t)cr * S, k->X + chunk_lo(k, n, cr) * es,
         chunk_n(k, n, cr));
  }
  for (int s = 0; s + 1 < n; s++) { /* all-gather */
    int cs = ((p - s) % n + n) % n, cr = ((p - 1 - s) % n + n) % n;
    tb_barrier(b);
    uint64_t src = s == 0 ? k->ACC + (uint64_t)p * S : k->GATH + (uint64_t)cs * S;
    put(k, src, next, k->GATH + (uint64_t)cs * S, chunk_n(k, n, cs) * es, (n - 1 + s) % SEM_STEPS);
    iwait(b, (n - 1 + s) % SEM_STEPS, chunk_n(k, n, cr) ? 1 : 0);
  }
  tb_barrier(b);
  for (int c = 0; c < n; c++)
    copy(k, k->OUT + chunk_lo(k, n, c) * es, (c == p ? k->ACC : k->GATH) + (uint64_t)c * S,
         chunk_n(k, n, c));
}

/* ---- the core-generic ring -------------------------------------------
 * One program for every core of a group of all n replicas in order: the
 * core's position p is its `coreid`, its neighbours and the chunk of each
 * step are computed on the scalar unit, and each phase is a run-time loop,
 * so code and SMEM do not grow with n. Chunk c = [lo, lo + size) with
 * lo = floor(c x count / n) and size q or q + 1 (q = count / n, r = count
 * mod n): a chunk travels and folds as ceil(count / n) elements in its
 * slot (a size-q chunk's extra element is the next chunk's first, or
 * padding of the slot; it never reaches the result), and only the copy into
 * the result uses the exact size. The fold order is the specialised ring's,
 * base/coll.h's. */



/* d = base + reg x mult. */
void s_addr(tb *b, int d, int reg, uint64_t mult, uint64_t base) {
  si(b, OP_SMULI, d, reg, (int64_t)mult);
  s3(b, OP_SADD, d, d, tb_sreg(b, (uint32_t)base));
}

/* s = chunk p (register rp): lo = p x q + floor(p x r / n) by a binary
 * long division (p x r < n^2 <= 2^24: no scalar divide in the ISA). */
void chunk_at(coll *k, int n, int rp, rchunk *s) {
  tb *b = k->b;
  int64_t q = k->count / n, r = k->count % n;
  s3(b, OP_SADD, s->c, rp, 0);
  si(b, OP_SLI, s->rem, 0, 0);
  int quo = tb_sreg_take(b), x = tb_sreg_take(b), t = tb_sreg_take(b), lt = tb_sreg_take(b);
  si(b, OP_SLI, quo, 0, 0);
  si(b, OP_SMULI, x, rp, r);
  int bits = 0;
  while (((int64_t)(n - 1) * r) >> bits) bits++;
  for (int i = bits - 1; i >= 0; i--) {
    si(b, OP_SSHRI, t, x, i);
    si(b, OP_SANDI, t, t, 1);
    si(b, OP_SSHLI, s->rem, s->rem, 1);
    s3(b, OP_SOR, s->rem, s->rem, t);
    si(b, OP_SSLTI, lt, s->rem, n); /* lt: the bit is 0 */
    si(b, OP_SADDI, s->rem, s->rem, -n);
    si(b, OP_SMULI, t, lt, n);
    s3(b, OP_SADD, s->rem, s->rem, t);
    si(b, OP_SSHLI, quo, quo, 1);
    si(b, OP_SADDI, quo, quo, 1);
    s3(b, OP_SSUB, quo, quo, lt);
  }
  si(b, OP_SMULI, s->lo, rp, q);
  s3(b, OP_SADD, s->lo, s->lo, quo);
  tb_sreg_give(b, quo);
  tb_sreg_give(b, x);
  tb_sreg_give(b, t);
  tb_sreg_give(b, lt);
}

/* s = chunk c - 1 mod n: lo -= q and rem -= r with a borrow; from chunk 0,
 * chunk n - 1 (selected by multiplying with the flag c == 0). */
void chunk_prev(coll *k, int n, rchunk *s) {
  tb *b = k->b;
  int64_t q = k->count / n, r = k->count % n, llo, lhi;
  coll_chunk(k->count, n, n - 1, &llo, &lhi);
  uint32_t lrem = (uint32_t)(((int64_t)(n - 1) * r) % n);
  int w = tb_sreg_take(b), t = tb_sreg_take(b), u = tb_sreg_take(b);
  s3(b, OP_SSEQ, w, s->c, 0);
  si(b, OP_SADDI, s->c, s->c, -1);
  si(b, OP_SMULI, t, w, n);
  s3(b, OP_SADD, s->c, s->c, t);
  si(b, OP_SADDI, s->rem, s->rem, -r);
  si(b, OP_SSLTI, u, s->rem, 0);
  si(b, OP_SMULI, t, u, n);
  s3(b, OP_SADD, s->rem, s->rem, t);
  si(b, OP_SADDI, s->lo, s->lo, -q);
  s3(b, OP_SSUB, s->lo, s->lo, u);
  s3(b, OP_SSUB, t, tb_sreg(b, (uint32_t)llo), s->lo);
  s3(b, OP_SMUL, t, t, w);
  s3(b, OP_SADD, s->lo, s->lo, t);
  s3(b, OP_SSUB, t, tb_sreg(b, lrem), s->rem);
  s3(b, OP_SMUL, t, t, w);
  s3(b, OP_SADD, s->rem, s->rem, t);
  tb_sreg_give(b, w);
  tb_sreg_give(b, t);
  tb_sreg_give(b, u);
}

/* The elements of one slot: ceil(count / n). */
uint64_t slot_elems(const coll *k, int n) { return (uint64_t)((k->count + n - 1) / n); }

/* The HBM span a run-time address of the ring may take past its base. */
uint64_t ring_span(const coll *k, int n) {
  uint64_t a = k->slot * (uint64_t)(n - 1), c = (uint64_t)k->count * (uint64_t)k->es;
  return a > c ? a : c;
}

/* Piece j of a slot: its first element and its elements. */
static int64_t piece_lo(const coll *k, int j) { return (int64_t)j * k->pe; }
static int64_t piece_n(const coll *k, int n, int j) {
  int64_t left = (int64_t)slot_elems(k, n) - piece_lo(k, j);
  return left < k->pe ? left : k->pe;
}

/* Piece j of ACC slot c = f(piece j of RECV slot c, X at chunk c). */
static void fold_at(coll *k, int n, const rchunk *s, int j) {
  tb *b = k->b;
  int in[2] = {tb_sreg_take(b), tb_sreg_take(b)}, out = tb_sreg_take(b);
  uint64_t off = (uint64_t)(piece_lo(k, j) * k->es);
  s_addr(b, in[0], s->c, k->slot, k->RECV + off);
  s_addr(b, in[1], s->lo, (uint64_t)k->es, k->X + off);
  s_addr(b, out, s->c, k->slot, k->ACC + off);
  uint64_t ia[2] = {k->RECV + off, k->X + off}, oa = k->ACC + off;
  k->e.in_addr = ia;
  k->e.out_addr = &oa;
  k->e.count = piece_n(k, n, j);
  tk_elementwise_at(b, &k->e, in, &out, ring_span(k, n));
  tb_sreg_give(b, in[0]);
  tb_sreg_give(b, in[1]);
  tb_sreg_give(b, out);
}

/* The last asynchronous put has read its source. */
void put_drain(coll *k) {
  if (k->busy) tb_raw(k->b, OP_WAIT, TB_SEM_Q1, 0, 0, 0, ISA_UNIT_SCALAR, 1);
  k->busy = false;
}

/* Puts piece j from HBM at register rs + its offset to the next core's HBM
 * at register rt + its offset, signalling its ICI semaphore sem + j mod
 * PIECE_SEMS; it
 * proceeds while the code goes on (the previous one has been read first:
 * one queue, one token outstanding). */
static void put_piece(coll *k, int n, int rs, int rt, int j, int sem) {
  tb *b = k->b;
  int32_t off = (int32_t)(piece_lo(k, j) * k->es);
  int a = tb_sreg_take(b), c = tb_sreg_take(b);
  si(b, OP_SADDI, a, rs, off);
  si(b, OP_SADDI, c, rt, off);
  put_drain(k);
  tb_raw(b, OP_SST, tb_sreg(b, (uint32_t)(piece_n(k, n, j) * k->es)), 0, 0, 0, 0, (int32_t)k->desc);
  tb_raw(b, OP_DMAPUT, a, c, tb_sreg(b, k->desc), TB_SEM_Q1, k->queue, sem + j % PIECE_SEMS);
  k->busy = true;
  if (k->queue == 0) put_drain(k);
  tb_sreg_give(b, a);
  tb_sreg_give(b, c);
}

/* count elements from the slot at register rs (in [base, base + span])
 * to OUT at register rd, by an elementwise identity. */
static void copy_at(coll *k, int n, int rs, uint64_t base, int rd, int64_t count) {
  tk_node nd;
  memset(&nd, 0, sizeof nd);
  nd.kind = TK_IN;
  nd.type = k->ty;
  ir_type it = nd.type;
  int root = 0;
  uint64_t ia = base, oa = k->OUT;
  tk_elem e = {1, &nd, 1, &ia, &it, 1, &root, &oa, count};
  tk_elementwise_at(k->b, &e, &rs, &rd, ring_span(k, n));
}

/* OUT at chunk s = the slot at register rs: its first q elements, then
 * its last element (q or q + 1: the same element again when q). */
void copy_exact(coll *k, int n, const rchunk *s, int rs, uint64_t base) {
  tb *b = k->b;
  int64_t q = k->count / n, r = k->count % n;
  int rd = tb_sreg_take(b);
  s_addr(b, rd, s->lo, (uint64_t)k->es, k->OUT);
  copy_at(k, n, rs, base, rd, q);
  if (r) {
    int t = tb_sreg_take(b), a = tb_sreg_take(b);
    s3(b, OP_SADD, t, s->rem, tb_sreg(b, (uint32_t)r));
    si(b, OP_SSLTI, t, t, n); /* 1: the chunk has q elements */
    si(b, OP_SMULI, t, t, -(int64_t)k->es);
    si(b, OP_SADDI, t, t, q * k->es); /* bytes to its last element, (size - 1) x es */
    s3(b, OP_SADD, a, rs, t);
    s3(b, OP_SADD, rd, rd, t);
    tb_sreg_give(b, t);
    copy_at(k, n, a, base, rd, 1);
    tb_sreg_give(b, a);
  }
  tb_sreg_give(b, rd);
}

/* A reduce-scatter step: the previous chunk arrives piece by piece, each
 * folded as it comes and (forward) put on to the next core while the next
 * piece folds. */
static void rs_step(coll *k, int n, rchunk *s, bool forward) {
  tb *b = k->b;
  chunk_prev(k, n, s);
  for (int j = 0; j < k->np; j++) {
    iwait(b, SEM_RS + j % PIECE_SEMS, 1);
    fold_at(k, n, s, j);
    tb_barrier(b);
    if (!forward) continue;
    int ra = tb_sreg_take(b), rb = tb_sreg_take(b);
    s_addr(b, ra, s->c, k->slot, k->ACC);
    s_addr(b, rb, s->c, k->slot, k->RECV);
    put_piece(k, n, ra, rb, j, SEM_RS);
    tb_sreg_give(b, ra);
    tb_sreg_give(b, rb);
  }
}

/* An all-gather step: the previous chunk arrives in its GATH slot piece by
 * piece, each put on to the next core (forward) as it comes; then the
 * chunk goes into OUT. */
static void ag_step(coll *k, int n, rchunk *s, bool forward) {
  tb *b = k->b;
  chunk_prev(k, n, s);
  int ra = tb_sreg_take(b);
  s_addr(b, ra, s->c, k->slot, k->GATH);
  for (int j = 0; j < k->np; j++) {
    iwait(b, SEM_AG + j % PIECE_SEMS, 1);
    if (forward) put_piece(k, n, ra, ra, j, SEM_AG);
  }
  copy_exact(k, n, s, ra, k->GATH);
  tb_sreg_give(b, ra);
  tb_barrier(b);
}

/* Runs step n - 2 times in a run-time loop (a body between barriers). */
static void ring_loop(coll *k, int n, rchunk *s, void (*step)(coll *, int, rchunk *, bool)) {
  tb *b = k->b;
  if (n <= 2) return;
  int cnt = tb_sreg_take(b);
  si(b, OP_SLI, cnt, 0, n - 2);
  tb_barrier(b);
  uint64_t top = tb_label(b);
  step(k, n, s, true);
  tb_barrier(b);
  si(b, OP_SADDI, cnt, cnt, -1);
  tb_branch(b, OP_BNE, cnt, 0, top);
  tb_sreg_give(b, cnt);
}

/* The pieces of a slot: up to MAX_PIECES of at least 64 KiB, whole
 * granules. */
static void ring_pieces(coll *k, int n) {
  int64_t se = (int64_t)slot_elems(k, n), g = TB_GRANULE / k->es;
  int64_t p = (se * k->es + 65535) / 65536;
  if (p > MAX_PIECES) p = MAX_PIECES;
  if (p < 1) p = 1;
  k->pe = ((se + p - 1) / p + g - 1) / g * g;
  k->np = (int)((se + k->pe - 1) / k->pe);
  k->queue = k->b->t.dma_queues > 1 ? 1 : 0;
  k->busy = false;
}

/* The start of every one-program ring, s = chunk p (p the core's
 * position in its group). Over every replica in order (table NO_TABLE):
 * this core ready for the previous, the descriptor aimed at the next once
 * that one is ready. Over listed groups of n: the barrier of all cores,
 * then p and the next member from the SMEM table (group_table). */
static void ring_start(coll *k, int n, rchunk *s, uint32_t table) {
  tb *b = k->b;
  ring_pieces(k, n);
  if (table != NO_TABLE) coll_barrier(b);
  tb_barrier(b);
  s->c = tb_sreg_take(b);
  s->lo = tb_sreg_take(b);
  s->rem = tb_sreg_take(b);
  int p = tb_sreg_take(b), t = tb_sreg_take(b);
  tb_raw(b, OP_COREID, p, 0, 0, 0, 0, 0);
  if (table != NO_TABLE) {
    si(b, OP_SSHLI, t, p, 3);
    si(b, OP_SLD, p, t, (int32_t)table);
    si(b, OP_SLD, t, t, (int32_t)table + 4);
    desc_set(k, tb_sreg(b, 4), t);
    tb_sreg_give(b, t);
    chunk_at(k, n, p, s);
    tb_sreg_give(b, p);
    return;
  }
  /* Ready for the previous core, (p + n - 1) mod n ... */
  s3(b, OP_SSEQ, t, p, 0);
  si(b, OP_SMULI, t, t, n);
  s3(b, OP_SADD, t, t, p);
  si(b, OP_SADDI, t, t, -1);
  desc_set(k, tb_sreg(b, 4), t);
  put_go(k, tb_sreg(b, (uint32_t)b->coll_flag), tb_sreg(b, (uint32_t)(b->coll_flag + TB_GRANULE)),
         COLL_SEM_READY);
  /* ... then every put goes to the next, (p + 1) mod n, once it is ready. */
  s3(b, OP_SSEQ, t, p, tb_sreg(b, (uint32_t)(n - 1)));
  si(b, OP_SMULI, t, t, -n);
  s3(b, OP_SADD, t, t, p);
  si(b, OP_SADDI, t, t, 1);
  desc_set(k, tb_sreg(b, 4), t);
  iwait(b, COLL_SEM_READY, 1);
  tb_sreg_give(b, t);
  chunk_at(k, n, p, s);
  tb_sreg_give(b, p);
}

/* Reduce-scatter: chunk p - 1 of X starts the ring at the next core;
 * after n - 1 steps chunk p is complete in ACC slot p (s = chunk p). */
static void ring_rs(coll *k, int n, rchunk *s) {
  tb *b = k->b;
  chunk_prev(k, n, s);
  int ra = tb_sreg_take(b), rb = tb_sreg_take(b);
  s_addr(b, ra, s->lo, (uint64_t)k->es, k->X);
  s_addr(b, rb, s->c, k->slot, k->RECV);
  for (int j = 0; j < k->np; j++) put_piece(k, n, ra, rb, j, SEM_RS);
  tb_sreg_give(b, ra);
  tb_sreg_give(b, rb);
  ring_loop(k, n, s, rs_step);
  rs_step(k, n, s, false);
}

/* All-gather: chunk p (at base + c x mult: ACC slot p, or X) to the next
 * core and into OUT, then the others as they come round. */
static void ring_ag(coll *k, int n, rchunk *s, uint64_t base, uint64_t mult) {
  tb *b = k->b;
  int ra = tb_sreg_take(b), rb = tb_sreg_take(b);
  s_addr(b, ra, s->c, mult, base);
  s_addr(b, rb, s->c, k->slot, k->GATH);
  for (int j = 0; j < k->np; j++) put_piece(k, n, ra, rb, j, SEM_AG);
  copy_exact(k, n, s, ra, base);
  tb_sreg_give(b, ra);
  tb_sreg_give(b, rb);
  tb_barrier(b);
  ring_loop(k, n, s, ag_step);
  ag_step(k, n, s, false);
}

static void ring_end(coll *k, rchunk *s) {
  tb *b = k->b;
  put_drain(k);
  tb_barrier(b);
  tb_sreg_give(b, s->c);
  tb_sreg_give(b, s->lo);
  tb_sreg_give(b, s->rem);
}

/* The ring all-reduce of every core over groups of n (all replicas in
 * order, or listed groups through table). */
static void ring_generic(coll *k, int n, uint32_t table) {
  rchunk s;
  ring_start(k, n, &s, table);
  ring_rs(k, n, &s);
  ring_ag(k, n, &s, k->ACC, k->slot);
  ring_end(k, &s);
}

/* Parameter-server all-reduce: member 0 gathers, folds, and sends back. */
static void server(coll *k, const int *g, int n, int p) {
  tb *b = k->b;
  uint64_t S = k->slot, es = (uint64_t)k->es, bytes = (uint64_t)k->count * es;
  if (p != 0) {
    put(k, k->X, g[0], k->RECV + (uint64_t)p * S, bytes, 0);
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
  for (int q = 1; q < n; q++) put(k, k->OUT, g[q], k->OUT, bytes, 1);
}

static void specialised(coll *k, const ir_inst *in, int nrep, int *g);

/* The SMEM table of a one-program ring over listed groups of n >= 2
 * members each: per core r, two words, its position in its group and the
 * group's next member. NO_TABLE when the groups differ in size, the value
 * has fewer than n elements, or the table would take more than
 * MAX_TABLE_WORDS (then the code is specialised per core). */
static uint32_t group_table(coll *k, const ir_inst *in, int nrep, int *g, int *n) {
  tb *b = k->b;
  int pos;
  *n = group_of(in, nrep, 0, g, &pos);
  if (*n < 2 || k->count < *n || 2 * nrep > MAX_TABLE_WORDS) return NO_TABLE;
  uint32_t *w = arena_array(b->a, (size_t)(2 * nrep), sizeof *w);
  for (int r = 0; r < nrep; r++) {
    if (group_of(in, nrep, r, g, &pos) != *n) return NO_TABLE;
    w[2 * r] = (uint32_t)pos;
    w[2 * r + 1] = (uint32_t)g[(pos + 1) % *n];
  }
  return tb_smem_array(b, w, (uint32_t)(2 * nrep));
}

/* Whether the core-generic ring applies: one group of every replica in
 * order, and at least one element per chunk. */
bool generic(const ir_inst *in, int nrep, int64_t count) {
  const ir_replica_groups *rg = &in->a->replica_groups;
  if (count < nrep || rg->ngroups > 1) return false;
  if (rg->ngroups == 1) {
    if (rg->groups[0].n != nrep) return false;
    for (int j = 0; j < nrep; j++)
      if (rg->groups[0].v[j] != j) return false;
  }
  return true;
}

/* An all-reduce (or all-reduce-start) over more than one replica; false
 * when in is not one (the single-replica identity is the caller's). */
bool lower_all_reduce(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tb *b = x->b;
  int nrep = b->replicas;
  if ((in->op != IR_OP_ALL_REDUCE && in->op != IR_OP_ALL_REDUCE_START) || nrep < 2) return false;
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
  k.ty = in->shape->type;
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
  bool gen = generic(in, nrep, k.count);
  tpu_all_reduce alg = b->all_reduce;
  if (alg == TPU_AR_DIRECT && !gen) {
    tb_error(b, ST_UNSUPPORTED, "direct exchange runs over one group of every replica in order, "
             "with at least one element per replica (--all-reduce=ring or ps runs this one)");
    return true;
  }
  double est[2] = {0, 0};
  if (alg == TPU_AR_AUTO) alg = gen ? tpu_all_reduce_choose(&b->t, nrep, value, est) : TPU_AR_RING;
  char why[96] = "";
  if (est[0] > 0)
    snprintf(why, sizeof why, " (the cost model's choice: ring %.0f, direct %.0f cycles)", est[0],
             est[1]);
  bool ps = alg == TPU_AR_PS;
  /* The largest chunk is the last of the smallest group (of two or more). */
  uint64_t chunk = ps || minn < 2 ? value : chunk_n(&k, minn, minn - 1) * (uint64_t)k.es;
  k.slot = tb_align(chunk);
  uint64_t area = k.slot * (uint64_t)maxn, side = ps ? value : alg == TPU_AR_DIRECT ? 0 : area;
  k.RECV = tb_hbm_alloc(b, area);
  if (side) {
    k.ACC = tb_hbm_alloc(b, side);
    k.GATH = tb_hbm_alloc(b, side);
  }
  int gn = nrep;
  uint32_t table = gen || ps || alg == TPU_AR_DIRECT ? NO_TABLE : group_table(&k, in, nrep, g, &gn);
  static const char *const how[] = {
      [TPU_AR_RING] = "ring reduce-scatter then all-gather",
      [TPU_AR_PS] = "parameter server (member 0 of each group folds and broadcasts)",
      [TPU_AR_DIRECT] = "direct exchange (each chunk straight to its owner and back)"};
  tb_explain(b, "all-reduce over %d replicas in groups of up to %d: %s%s, %llu bytes, chunks of "
             "up to %llu bytes (fold order of base/coll.h); %s",
             nrep, maxn, how[alg], why,
             (unsigned long long)value, (unsigned long long)chunk,
             gen && !ps ? "one program for every core (run-time loops)"
             : table != NO_TABLE ? "one program for every core (run-time loops, the groups in an "
                                   "SMEM table)"
                                 : "code specialised per core");
  k.desc = b->coll_desc;
  if (alg == TPU_AR_DIRECT)
    direct_all_reduce(&k, nrep);
  else if (gen && !ps)
    ring_generic(&k, nrep, NO_TABLE);
  else if (table != NO_TABLE)
    ring_generic(&k, gn, table);
  else
    specialised(&k, in, nrep, g);
  tb_hbm_free(b, k.RECV, area);
  if (side) {
    tb_hbm_free(b, k.ACC, side);
    tb_hbm_free(b, k.GATH, side);
  }
  x->val[i] = out;
  return true;
}

/* Code specialised for each core, after the barrier of all cores:
 * coreid branches to it. */
static void specialised(coll *k, const ir_inst *in, int nrep, int *g) {
  tb *b = k->b;
  coll_barrier(b);
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
      copy(k, k->OUT, k->X, (uint64_t)k->count);
    } else if (b->all_reduce == TPU_AR_PS) {
      server(k, g, n, pos);
    } else {
      ring(k, g, n, pos);
    }
    tb_barrier(b);
    join[r] = tb_branch(b, OP_JMP, 0, 0, 0);
  }
  uint64_t end = tb_label(b);
  for (int r = 0; r < nrep; r++) tb_patch(b, join[r], end);
}

/* ---- reduce-scatter and all-gather -------------------------------------
 * The two halves of the one-program ring, over every replica in order,
 * along a dimension with only size-1 dimensions before it (member c's
 * slice is then the flattened value's chunk c, coll_chunk's, and folds in
 * base/coll.h's order). Other groups and dimensions are located errors. */

/* The value of the collective over all n members: count elements, one
 * operand; false (after an error) when the ring does not apply. */
static bool halves_apply(lctx *x, const ir_inst *in, const ir_shape *whole, int nrep) {
  tb *b = x->b;
  const char *op = ir_op_name(in->op);
  if (in->nops != 1 || whole->type == IR_TUPLE) {
    tb_error(b, ST_UNSUPPORTED, "a %s of %d operands over %d replicas (the TPU backend "
             "gathers or scatters one array)", op, in->nops, nrep);
    return false;
  }
  int64_t d = in->a->dimensions.n == 1 ? in->a->dimensions.v[0] : -1, before = 1;
  for (int64_t j = 0; j < d && j < whole->rank; j++) before *= whole->dims[j];
  /* one replica: the value is copied, whatever the dimension */
  if (nrep >= 2 && (d < 0 || before != 1 || !generic(in, nrep, ir_shape_count(whole)))) {
    tb_error(b, ST_UNSUPPORTED, "the TPU backend runs it over every replica in order, along a "
             "dimension with only size-1 dimensions before it, with at least one element per "
             "replica");
    return false;
  }
  return true;
}

/* Shared set-up: the coll of a collective whose whole value (all n
 * slices) has `count` elements; operand X, result OUT. */
static void halves_init(lctx *x, const ir_inst *in, coll *k, tval *out, int64_t count, int n) {
  tb *b = x->b;
  memset(k, 0, sizeof *k);
  k->b = b;
  k->es = tv_esize(out->type);
  k->ty = out->type;
  k->count = count;
  k->X = tv_addr(x->val[in->ops[0]]);
  k->OUT = tv_addr(out);
  k->slot = tb_align(slot_elems(k, n) * (uint64_t)k->es);
  k->desc = b->coll_desc;
}

/* The value of the reduce-scatter or all-gather in (an all-gather-start:
 * its all-gather) of result shape `shape`, or NULL after an error. One
 * replica: the identity, a copy. */
tval *coll_halves_value(lctx *x, const ir_inst *in, const ir_shape *shape) {
  tb *b = x->b;
  int n = b->replicas;
  bool rs = in->op == IR_OP_REDUCE_SCATTER;
  const ir_shape *whole = rs ? x->comp->insts.v[in->ops[0]].shape : shape;
  if (!halves_apply(x, in, whole, n)) return NULL;
  tval *out = tv_new(b, shape->type, shape->rank, shape->dims);
  coll k;
  halves_init(x, in, &k, out, ir_shape_count(whole), n);
  if (rs && !lower_scalar_comp(x, in->calls[0], &k.e)) return NULL;
  if (rs && (k.e.ninputs != 2 || k.e.noutputs != 1)) {
    tb_error(b, ST_UNSUPPORTED, "reduce-scatter's to_apply must take two scalars and return one");
    return NULL;
  }
  if (n < 2) {
    tb_barrier(b);
    copy(&k, k.OUT, k.X, (uint64_t)out->count);
    return out;
  }
  uint64_t area = k.slot * (uint64_t)n;
  k.RECV = tb_hbm_alloc(b, area);
  k.ACC = tb_hbm_alloc(b, area);
  k.GATH = tb_hbm_alloc(b, area);
  tb_explain(b, "%s over %d replicas: ring %s, %llu-byte slices, one program for every core",
             ir_op_name(in->op), n, rs ? "reduce-scatter (fold order of base/coll.h)" : "all-gather",
             (unsigned long long)(slot_elems(&k, n) * (uint64_t)k.es));
  rchunk s;
  ring_start(&k, n, &s, NO_TABLE);
  if (rs) {
    ring_rs(&k, n, &s);
    int ra = tb_sreg_take(b), rd = tb_sreg_take(b);
    s_addr(b, ra, s.c, k.slot, k.ACC);
    s_addr(b, rd, s.c, 0, k.OUT);
    copy_at(&k, n, ra, k.ACC, rd, out->count);
    tb_sreg_give(b, ra);
    tb_sreg_give(b, rd);
  } else {
    ring_ag(&k, n, &s, k.X, 0);
  }
  ring_end(&k, &s);
  tb_hbm_free(b, k.RECV, area);
  tb_hbm_free(b, k.ACC, area);
  tb_hbm_free(b, k.GATH, area);
  return out;
}

/* A reduce-scatter or all-gather; false when in is neither. */
bool lower_coll_halves(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  if (in->op != IR_OP_REDUCE_SCATTER && in->op != IR_OP_ALL_GATHER) return false;
  tval *v = coll_halves_value(x, in, in->shape);
  if (v) x->val[i] = v;
  return true;
}
