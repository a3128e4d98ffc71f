/* lower_coll.h: private to the all-reduce lowerings (lower_coll.c: ring
 * and parameter server; lower_coll_direct.c: direct exchange): the state
 * of one collective and the scalar-unit helpers they share. Every
 * algorithm folds in base/coll.h's order. */
#ifndef TPUCC_BACKEND_TPU_LOWER_COLL_H
#define TPUCC_BACKEND_TPU_LOWER_COLL_H

#include "backend/tpu/coll_sync.h"
#include "backend/tpu/lower.h"
#include "base/coll.h"

/* ICI semaphores: step s of the specialised code uses s % SEM_STEPS. */
enum { SEM_STEPS = COLL_SEM_DATA };

/* ring_start's table argument of a ring over every replica in order; the
 * most SMEM words a group table may take. */
#define NO_TABLE UINT32_MAX
enum { MAX_TABLE_WORDS = 512 };

/* ICI semaphores of the one-program ring's pieces: reduce-scatter
 * SEM_RS + j mod PIECE_SEMS, all-gather SEM_AG + j mod PIECE_SEMS (pieces
 * from one core arrive in the order they were put: one queue, one
 * route). Two pieces measured best (bench/emu_allreduce on v3-8: 0.96 of the ring
 * bound at 64 MiB against 0.85 with 8 and 0.77 with 1): each piece pays a
 * barrier and a fold's start, and two already keep the link busy while
 * the other folds. */
enum { MAX_PIECES = 2, PIECE_SEMS = 8, SEM_RS = 0, SEM_AG = PIECE_SEMS };

typedef struct coll {
  tb *b;
  tk_elem e;      /* the reduction: inputs (acc, x), one output */
  ir_type ty;     /* the element type */
  int es;         /* bytes per element */
  int64_t count;  /* elements */
  uint64_t X;     /* the operand */
  uint64_t OUT;   /* the result */
  uint64_t slot;  /* bytes per slot: the largest chunk (ring) or the value (ps), aligned */
  uint64_t RECV, ACC, GATH; /* n slots each */
  uint32_t desc;  /* SMEM byte address of the put descriptor (b->coll_desc) */
  /* The core-generic ring: a slot travels as np pieces of pe elements
   * (granule multiples; the last one shorter), put asynchronously on DMA
   * queue `queue`, at most one of them not yet read (busy). */
  int64_t pe;
  int np, queue;
  bool busy;
} coll;

/* The registers of chunk c: its index, lo, and rem = c x count mod n. */
typedef struct rchunk {
  int c, lo, rem;
} rchunk;

/* Scalar instructions: d = a op c (registers), d = a op imm. */
static inline void s3(tb *b, isa_op op, int d, int a, int c) { tb_raw(b, op, d, a, c, 0, 0, 0); }
static inline void si(tb *b, isa_op op, int d, int a, int64_t imm) {
  tb_raw(b, op, d, a, 0, 0, 0, (int32_t)imm);
}
/* d = base + reg x mult. */
void s_addr(tb *b, int d, int reg, uint64_t mult, uint64_t base);

/* The put descriptor's bytes (word 0) and destination core (word 10)
 * from registers. */
void desc_set(coll *k, int rbytes, int rdst);
/* Puts from HBM at register rs into HBM at register rt of the core and
 * bytes the descriptor holds, signalling its ICI semaphore sem; the front
 * end takes the sender's token at once. */
void put_go(coll *k, int rs, int rt, int sem);
/* The last asynchronous put (k->busy) has read its source. */
void put_drain(coll *k);
/* Waits for count ICI signals on sem (nothing when count is 0). */
void iwait(tb *b, int sem, int count);

/* Chunks of the core-generic algorithms (coll_chunk's, computed on the
 * scalar unit): s = chunk of register rp; s = the chunk before s, mod n. */
void chunk_at(coll *k, int n, int rp, rchunk *s);
void chunk_prev(coll *k, int n, rchunk *s);
/* The elements of one slot: ceil(count / n). */
uint64_t slot_elems(const coll *k, int n);
/* The HBM span a run-time address may take past its base: n - 1 slots, or
 * the whole value. */
uint64_t ring_span(const coll *k, int n);
/* OUT at chunk s = the slot at register rs (within [base, base + span]),
 * exactly the chunk's elements. */
void copy_exact(coll *k, int n, const rchunk *s, int rs, uint64_t base);

/* One group of every replica in order, at least one element per chunk. */
bool generic(const ir_inst *in, int nrep, int64_t count);

/* lower_coll_direct.c: the all-reduce of every core over all n replicas
 * in order by direct exchange (docs/tpu-backend.md, "Collectives"). RECV
 * holds n slots; ACC and GATH are not used. */
void direct_all_reduce(coll *k, int n);

#endif
