/* mpi_run.h: the tpucc command under mpirun (docs/distributed.md, "MPI").
 * Prefix tool_mpi_. */
#ifndef TPUCC_TOOLS_MPI_RUN_H
#define TPUCC_TOOLS_MPI_RUN_H

#include <stdbool.h>

/* At the start of `tpucc run` and `tpucc train`, with the command's
 * arguments. Not under mpirun: nothing, true. Under mpirun: opens the MPI
 * world, checking that every rank was started with the same arguments
 * and the same contents of the files they name (a rank that differs is
 * named), with every wait bounded by TPUCC_MPI_TIMEOUT seconds (default
 * 60); false after printing the error (also when tpucc was built without
 * MPI). */
bool tool_mpi_begin(const char *cmd, int argc, char **argv);
/* This process's rank and the number of ranks (0 and 1 when not under
 * mpirun). */
int tool_mpi_rank(void);
int tool_mpi_size(void);
/* While on, the cpu target's replicated runs (tpucc_execute, libtpurt's
 * cpu devices) split their N replicas over the ranks, N / R on each
 * (cpu_replicas_hook), every rank getting every replica's results; the
 * rank's threads run its own replicas. */
void tool_mpi_spread(bool on);
/* One sentence for --help: whether this tpucc has MPI, and if not, how to
 * get it. */
const char *tool_mpi_build_note(void);
/* Waits for every rank (bounded) and finalises MPI; nothing when
 * tool_mpi_begin opened nothing. */
void tool_mpi_end(void);

#endif
