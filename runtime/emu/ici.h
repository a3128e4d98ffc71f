/* ici.h: running a program on many emulated cores joined by the
 * interconnect (ici.c has the model and why it is deterministic; docs/isa.md
 * "Many cores" the rules). Private to runtime/. */
#ifndef TPUCC_EMU_ICI_H
#define TPUCC_EMU_ICI_H

#include "emu.h"
#include "tpurt.h"

enum {
  EMU_ICI_MAX_HOPS = 4100,  /* a route crosses at most columns/2 + rows/2 links */
  EMU_ICI_MAX_THREADS = 256, /* host threads of one run */
  EMU_ICI_MAX_RANKS = 1024   /* processes one machine is shared across */
};

/* Per link of the torus (and each on-chip link), over a run. */
typedef struct emu_ici_link_stats {
  uint64_t transfers;   /* transfers that crossed it */
  uint64_t bytes;       /* their bytes */
  uint64_t busy_cycles; /* cycles it carried data */
} emu_ici_link_stats;

/* One transfer on one link (emu_ici_log_links): the link is busy with it
 * during [start, start + occ). A transfer of h hops gives h of these, all
 * with the same start (the route is held end to end). */
typedef struct emu_ici_event {
  uint64_t start, occ, bytes;
  int link, src, dst; /* link id, sending and receiving core */
  int hop;            /* the link's place on the route, 0 first */
} emu_ici_event;

/* Joins n cores (created for target t, n <= t->ncores is the caller's
 * business) into one machine; they get ids 0..n-1. threads: host threads
 * a run uses (clamped to 1..n). NULL when memory runs out. destroy gives
 * the cores back as single cores (accepts NULL). */
emu_ici *emu_ici_create(const tgt_target *t, emu_machine **cores, int n, int threads,
                        const rt_allocator *a);
void emu_ici_destroy(emu_ici *x);
/* Rank `rank` of `nranks`'s share of an n-core machine: cores [*lo, *hi).
 * -1 when nranks does not divide n. */
int emu_ici_share(int n, int nranks, int rank, int *lo, int *hi);
/* emu_ici_create for this process's share of an n-core machine whose
 * other cores run on the other ranks of peers (include/tpurt.h, copied):
 * cores[c] for c in the share (emu_ici_share), the others unused. Every
 * rank routes every transfer in the one-process order over its own copy
 * of the links, so link statistics, values and cycles are the
 * one-process run's. NULL when memory runs out or the ranks do not
 * divide the cores. */
emu_ici *emu_ici_create_shared(const tgt_target *t, emu_machine **cores, int n, int threads,
                               const rt_allocator *a, const tpurt_peers_t *peers);

/* Runs a verified program on every core: core c with HBM hbm[c] (the
 * program's size, constants and parameters in place), statistics st[c]
 * and fault record f[c]. 0 when every core halted; -1 when a core faulted
 * (*fault_core says which; f[that] describes it), and the others stop
 * where they are. Link statistics accumulate over runs. Shared across
 * ranks: only this rank's cores' entries are used, every rank gets the
 * same result and *fault_core (f[that] on its rank), and -2 means the
 * peers failed (emu_ici_peer_error says how). */
int emu_ici_run(emu_ici *x, const tpub_image *img, uint8_t *const *hbm, uint64_t cycle_limit,
                emu_stats *st, emu_fault *f, int *fault_core);

/* The links: chip k owns 4 + cores_per_chip ids from k x that: column+,
 * column-, row+, row-, then the on-chip link out of each of its cores. */
const char *emu_ici_peer_error(const emu_ici *x);
int emu_ici_nlinks(const emu_ici *x);
const emu_ici_link_stats *emu_ici_link(const emu_ici *x, int link);
void emu_ici_link_name(const tgt_target *t, int link, char *buf, size_t n);
/* Link `link`'s ends: the chip it leaves, the chip it reaches (the same
 * for an on-chip link) and, for an on-chip link, the core it leaves (-1
 * for a torus link). */
void emu_ici_link_ends(const tgt_target *t, int link, int *chip, int *to_chip, int *core);
/* From now on every delivered transfer also records one event per link it
 * crosses, in delivery order (the same order on every rank of a shared
 * run). emu_ici_take_events hands them over: an array of *n events from
 * the allocator x was created with (the caller frees it), NULL when there
 * are none; recording starts afresh. A run whose recording ran out of
 * memory faults like any host allocation failure. */
void emu_ici_log_links(emu_ici *x);
emu_ici_event *emu_ici_take_events(emu_ici *x, size_t *n);
/* The links a transfer from core src to core dst crosses, in order (at
 * most max); 0 for src == dst (a loopback of one hop's latency). */
int emu_ici_route(const tgt_target *t, int src, int dst, int *links, int max);

#endif
