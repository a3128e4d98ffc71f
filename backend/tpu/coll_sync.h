/* coll_sync.h: what the collectives of one program share so that they
 * never take each other's signals or descriptors (docs/tpu-backend.md,
 * "Collectives", "Synchronisation of collectives").
 *
 * ICI semaphores (arrivals over the interconnect, counted apart from a
 * core's own signals: docs/isa.md, section 8, rule 9):
 *   0 .. COLL_SEM_DATA - 1   the data of a collective, waited for inside it
 *   COLL_SEM_ARRIVE, _LEAVE  the two phases of coll_barrier
 *   COLL_SEM_READY           the readiness words of the one-program ring and
 *                            of the direct exchange
 * The contract: a collective's data only lands on a core that is inside
 * that collective. Every collective but the one-program ring starts with
 * coll_barrier (all cores have reached it, their units drained); the
 * one-program ring (every replica in order, one pattern: core p tells
 * p - 1 it is ready and waits for p + 1) and the direct exchange (every
 * core tells every other and waits for N - 1) start with their readiness
 * handshakes on COLL_SEM_READY, which no other collective signals. No
 * core finishes either before every core has passed its readiness wait
 * (each needs data that every core sends only after its wait), so the
 * words a core takes while it waits are all of the collective it is in. */
#ifndef TPUCC_BACKEND_TPU_COLL_SYNC_H
#define TPUCC_BACKEND_TPU_COLL_SYNC_H

#include "backend/tpu/tb.h"

enum { COLL_SEM_DATA = 29, COLL_SEM_ARRIVE = 29, COLL_SEM_LEAVE = 30, COLL_SEM_READY = 31 };

/* At the start of a program of b->replicas > 1 cores, before any other
 * HBM buffer or SMEM descriptor: the readiness word's two granules
 * (b->coll_flag, never freed nor otherwise touched) and the put
 * descriptor every collective rewrites at run time (b->coll_desc, kept out
 * of descriptor interning: b->smem_static). */
void coll_setup(tb *b);

/* Writes the put descriptor's bytes (word 0, from register rbytes) and
 * destination core (word 10, from register rdst); rbytes or rdst < 0
 * leaves that word. */
void coll_desc_set(tb *b, int rbytes, int rdst);

/* The barrier of all b->replicas cores, one program for every core (a
 * run-time loop over the others from `coreid`): units drained, then each
 * core puts its readiness word into every other core signalling
 * COLL_SEM_ARRIVE and waits for all of theirs; then the same on
 * COLL_SEM_LEAVE. A core passes it once every core has reached it. No
 * core signals a barrier's first phase before every core has left the
 * previous one's first phase, so the signals of two barriers never mix,
 * whatever runs between them. */
void coll_barrier(tb *b);

#endif
