/* coll.h: what every target shares about collectives across replicas
 * (docs/collectives.md): the chunks a ring splits a value into, the fixed
 * order in which a reduction combines the members of a group, and a
 * rendezvous for replicas that run on host threads of one process.
 *
 * The combining order. A reducing collective (all-reduce, reduce-scatter)
 * over a group of n members, listed in group order as g[0..n-1], splits
 * the value into n chunks (coll_chunk over the flattened elements for
 * all-reduce; chunk c is member c's slice for reduce-scatter) and folds
 * chunk c as a ring that ends at member c does:
 *
 *   acc = x[g[(c+1) % n]];  acc = f(acc, x[g[(c+1+k) % n]]) for k = 1..n-1
 *
 * coll_term gives the group position of the k-th term. The evaluator, the
 * CPU and the emulator's lowerings (ring and parameter server) all fold in
 * this order, so they agree bit for bit, and nothing depends on timing or
 * on the number of host threads. */
#ifndef TPUCC_BASE_COLL_H
#define TPUCC_BASE_COLL_H

#include <stddef.h>
#include <stdint.h>

/* Chunk c (0 <= c < n) of count elements: [*lo, *hi) with
 * lo = floor(c * count / n), hi = floor((c + 1) * count / n). Chunks may be
 * empty when count < n. */
void coll_chunk(int64_t count, int n, int c, int64_t *lo, int64_t *hi);

/* The group position of the k-th term (0 <= k < n) that chunk c of a group
 * of n folds: (c + 1 + k) mod n. */
static inline int coll_term(int n, int c, int k) { return (c + 1 + k) % n; }

/* A rendezvous of n members (replicas on host threads). Each collective is
 * an exchange: every member deposits a pointer to its operand and a key
 * naming the collective (its instruction and how many collectives the
 * member has run), then reads every member's pointer; a release follows
 * once the member has read what it needs, so no operand is freed while
 * another member reads it. Members that run different collectives at the
 * same point (different keys), a member that leaves while others wait,
 * and a member that fails, end every wait with an error: nothing hangs. */
typedef struct coll_rdv coll_rdv;

/* NULL when memory runs out or n < 1. */
coll_rdv *coll_rdv_create(int n);
void coll_rdv_destroy(coll_rdv *r); /* accepts NULL */
int coll_rdv_members(const coll_rdv *r);

/* Member m deposits mine under key and waits for all members; then
 * all[i] is member i's pointer. 0, or -1 with one line in msg (another
 * member left or failed, or deposited another key). */
int coll_rdv_exchange(coll_rdv *r, int m, uint64_t key, const void *mine, const void **all,
                      char *msg, size_t msglen);

/* Member m has read what the last exchange gave; waits until every member
 * has. 0, or -1 with msg as coll_rdv_exchange. */
int coll_rdv_release(coll_rdv *r, int m, char *msg, size_t msglen);

/* Member m will take part in no more exchanges: finished (why NULL) or
 * failed (why says how). A member waiting now or later gets an error
 * naming m and why, unless the members it waits for all arrived first. */
void coll_rdv_leave(coll_rdv *r, int m, const char *why);

/* A communicator: how the members of collectives exchange operands,
 * whether they are threads of one process (coll_rdv_comm) or processes
 * (an MPI communicator, runtime/mpi). The operations have coll_rdv's
 * contracts; exchange also takes the size of mine in bytes (every member
 * gives the same size for one key: a difference is an error), and all[i]
 * stays valid until the member's release. */
typedef struct coll_comm coll_comm;
typedef struct coll_comm_ops {
  int (*exchange)(coll_comm *c, int m, uint64_t key, const void *mine, size_t bytes,
                  const void **all, char *msg, size_t msglen);
  int (*release)(coll_comm *c, int m, char *msg, size_t msglen);
  void (*leave)(coll_comm *c, int m, const char *why);
} coll_comm_ops;
struct coll_comm {
  const coll_comm_ops *ops;
  int n;     /* members in all */
  int first; /* the first member this process runs ... */
  int local; /* ... and how many, consecutively */
};

/* r as a communicator whose members all run in this process; valid while
 * r lives. */
coll_comm *coll_rdv_comm(coll_rdv *r);

#endif
