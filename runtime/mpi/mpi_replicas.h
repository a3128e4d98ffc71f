/* mpi_replicas.h: a communicator of N replicas spread over the ranks of an
 * MPI world, N / R on each of the R ranks in rank order (rank k runs
 * replicas k * N / R .. (k + 1) * N / R - 1 on host threads). Built with
 * runtime/mpi (TPUCC_HAVE_MPI).
 *
 * The replicas of one rank meet through a coll_rdv (base/coll.h); at each
 * exchange the rank's first replica sends the bytes of every local
 * replica's operand to the other ranks over the world's communicator
 * (mpi_comm.h) and receives theirs, so every member reads every member's
 * operand as bytes, in member order. The operands therefore must be bytes
 * (no pointers inside): coll_comm users pack them when first/local do not
 * cover all members. A member that leaves with a reason ends the job
 * (rt_mpi_abort) naming this rank and the reason; errors of the world's
 * exchange (a rank that does not answer in time, ranks at different
 * collectives) come back from exchange, naming the rank. */
#ifndef TPUCC_RUNTIME_MPI_REPLICAS_H
#define TPUCC_RUNTIME_MPI_REPLICAS_H

#include "runtime/mpi/mpi_comm.h"

typedef struct rt_mpi_replicas rt_mpi_replicas;

/* 0 and *out, or -1 with one line in err (n not a multiple of the ranks,
 * out of memory). p must outlive *out. */
int rt_mpi_replicas_create(rt_mpi *p, int n, rt_mpi_replicas **out, char *err, size_t errlen);
coll_comm *rt_mpi_replicas_comm(rt_mpi_replicas *x);
void rt_mpi_replicas_destroy(rt_mpi_replicas *x); /* accepts NULL */

#endif
