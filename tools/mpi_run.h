/* mpi_run.h: the tpucc command under mpirun (docs/distributed.md, "MPI").
 * Prefix tool_mpi_. */
#ifndef TPUCC_TOOLS_MPI_RUN_H
#define TPUCC_TOOLS_MPI_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* FNV-1a of n bytes at p, continuing from h (start: 0xcbf29ce484222325):
 * the fingerprints the ranks compare. */
uint64_t tool_mpi_hash(uint64_t h, const void *p, size_t n);

/* While on, in a process an MPI launcher started as a rank other than 0
 * (OMPI_COMM_WORLD_RANK, PMIX_RANK or PMI_RANK > 0): stdout and stderr go
 * to /dev/null, so that what every rank would print alike (usage errors,
 * --help) comes once, from rank 0; the exit codes stay each rank's. Else
 * nothing. Off restores them. */
void tool_mpi_hush(bool on);

/* At the start of `tpucc run` and `tpucc train`, with the command's
 * arguments and the files every rank reads itself (the program, a
 * checkpoint to resume). Not under mpirun: nothing, true. Under mpirun:
 * opens the MPI world, checking that every rank was started with the same
 * arguments and the same contents of those files (a rank that differs is
 * named), with every wait bounded by TPUCC_MPI_TIMEOUT seconds (default
 * 60); false after printing the error (also when tpucc was built without
 * MPI: then rank 0 alone prints it). */
bool tool_mpi_begin(const char *cmd, int argc, char **argv, const char *const *files, int nfiles);
/* Rank 0's bytes to every rank: on rank 0 *buf and *len are its own and
 * stay; on the others they become a malloc'd copy of rank 0's (the
 * caller frees it). False with one line in err (a rank did not answer). */
bool tool_mpi_bcast(void **buf, size_t *len, char *err, size_t errlen);
/* Rank 0's *code to every rank (an exit code: whether rank 0, which alone
 * read the inputs, goes on). False with one line in err (a rank did not
 * answer); true and nothing else when not under mpirun. */
bool tool_mpi_agree(int *code, char *err, size_t errlen);
/* This process's rank and the number of ranks (0 and 1 when not under
 * mpirun). */
int tool_mpi_rank(void);
int tool_mpi_size(void);
/* While on, the cpu target's replicated runs (tpucc_execute, libtpurt's
 * cpu devices) split their N replicas over the ranks, N / R on each
 * (cpu_replicas_hook), every rank getting every replica's results; the
 * rank's threads run its own replicas. */
void tool_mpi_spread(bool on);
/* tool_mpi_spread, with the results going to rank 0 alone: rank 0 gets
 * every replica's, each other rank its own replicas' (the others' results
 * stay as the caller made them). */
void tool_mpi_spread_gather(bool on);
/* tool_mpi_spread, each rank keeping its own replicas' results (rank k's
 * replicas: tool_mpi_share). */
void tool_mpi_spread_own(bool on);
/* This rank's replicas of n split over the R ranks: *first and *count
 * (n / R from rank x n / R; all n when R does not divide n). */
void tool_mpi_share(int n, int *first, int *count);
/* While spreading (tool_mpi_spread) over R > 1 ranks: this rank's share
 * of an emulated TPU device's cores, over the world tool_mpi_begin
 * opened (tpurt_device_options_t.peers; rank 0 gets every core's
 * results). Else NULL. Valid until tool_mpi_end. */
const struct tpurt_peers *tool_mpi_tpu_peers(void);
/* With TPUCC_MPI_TIMES set, under mpirun: prints to stderr "tpucc: rank
 * R: WHAT W s, P s (S%) in N MPI exchanges", W the wall seconds since
 * t0 (MPI_Wtime), P those spent in the emulated cores' exchanges with the
 * other ranks (tpurt_peers_t, waiting included), N their count. */
void tool_mpi_times(const char *what, double t0);
/* MPI_Wtime(), or 0 without MPI. */
double tool_mpi_wtime(void);
/* One sentence for --help: whether this tpucc has MPI, and if not, how to
 * get it. */
const char *tool_mpi_build_note(void);
/* Waits for every rank (bounded) and finalises MPI; nothing when
 * tool_mpi_begin opened nothing. */
void tool_mpi_end(void);

#endif
