/* mpi_comm.h: collectives across MPI processes, one member per rank
 * (docs/distributed.md). Built when meson finds MPI (-Dmpi=auto);
 * TPUCC_HAVE_MPI is then defined for the code that links it.
 *
 * rt_mpi_open initialises MPI (thread level MPI_THREAD_MULTIPLE, since a
 * replica may run on a worker thread), duplicates MPI_COMM_WORLD and checks
 * that every rank runs the same work: each rank gives a fingerprint (of its
 * program, target and flags) and a rank whose fingerprint differs from
 * rank 0's is named in the error. Its coll_comm (base/coll.h) exchanges
 * operands by point-to-point messages to every other rank, each wait
 * bounded by the timeout: a rank that does not answer in time is named in
 * the error. A member that leaves with a reason aborts the whole job
 * (MPI_Abort) after printing "rank R: reason", so no rank hangs. */
#ifndef TPUCC_RUNTIME_MPI_COMM_H
#define TPUCC_RUNTIME_MPI_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "base/coll.h"
#include "tpurt.h"

typedef struct rt_mpi rt_mpi;

/* Whether this process was started by an MPI launcher (mpirun sets
 * OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK). */
bool rt_mpi_launched(void);

/* Opens the world: *out on success (0); -1 with one line in err. The
 * fingerprint check happens here. timeout_seconds > 0 bounds every wait. */
int rt_mpi_open(uint64_t fingerprint, double timeout_seconds, rt_mpi **out, char *err,
                size_t errlen);
/* rt_mpi_open over a communicator the caller owns (libtpurt-mpi): MPI
 * must be initialised and is never finalised here. comm is duplicated
 * (every message goes over the duplicate), the duplication itself bounded
 * by the timeout; rank 0 of comm is rank 0. A rank whose fingerprint
 * differs is named, the message ending with hint. 0 and *out; -1 with
 * one line in err when a rank did not answer or MPI failed, -2 when the
 * fingerprints differ. Free *out with rt_mpi_release. */
int rt_mpi_open_comm(MPI_Comm comm, uint64_t fingerprint, double timeout_seconds,
                     const char *hint, rt_mpi **out, char *err, size_t errlen);
/* Frees p and its duplicate communicator without waiting for the other
 * ranks; requests a failed exchange left pending are cancelled first.
 * Accepts NULL. */
void rt_mpi_release(rt_mpi *p);
int rt_mpi_rank(const rt_mpi *p);
int rt_mpi_size(const rt_mpi *p);
/* The world as a communicator: member m is rank m; first = rank, local 1. */
coll_comm *rt_mpi_comm(rt_mpi *p);
/* Grows *buf (capacity *cap) to hold need bytes: 0, or -1 with one line
 * in msg when memory runs out. */
int rt_mpi_grow(unsigned char **buf, size_t *cap, size_t need, char *msg, size_t msglen);
/* Prints "tpucc: rank R: msg" to stderr and ends every rank (MPI_Abort). */
void rt_mpi_abort(rt_mpi *p, const char *msg);
/* Waits for every rank (bounded by the timeout, else aborts naming the
 * ranks that did not arrive), then finalises MPI if rt_mpi_open
 * initialised it. Accepts NULL. */
void rt_mpi_close(rt_mpi *p);

/* Every rank sends send[r] (len[r] bytes) to each other rank r and gets
 * rank r's message into recv[r], rlen[r] (valid until the next call;
 * recv[rank] untouched). 0, or -1 with one line in msg naming the ranks
 * that did not answer within the timeout. */
int rt_mpi_exchange_v(rt_mpi *p, const void *const *send, const size_t *len, const void **recv,
                      size_t *rlen, char *msg, size_t msglen);
/* out[i] = the least of every rank's mine[i] (k values); failures as
 * rt_mpi_exchange_v. */
int rt_mpi_min_u64(rt_mpi *p, const uint64_t *mine, uint64_t *out, int k, char *msg,
                   size_t msglen);
/* The world as the peers of an emulated pod shared across the ranks
 * (include/tpurt.h): rank r of size runs its share of the cores. */
void rt_mpi_peers(rt_mpi *p, tpurt_peers_t *out);
/* Wall seconds spent in rt_mpi_exchange_v and rt_mpi_min_u64 so far
 * (waiting for the other ranks included), and in *calls (may be NULL)
 * how many calls. */
double rt_mpi_peer_seconds(const rt_mpi *p, uint64_t *calls);

#endif
