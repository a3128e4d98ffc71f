/* run_mpi_tpu.h: TPU replicas of `tpucc run` across MPI ranks
 * (run_mpi_tpu.c). */
#ifndef TPUCC_TOOLS_RUN_MPI_TPU_H
#define TPUCC_TOOLS_RUN_MPI_TPU_H

#include "tools/tools.h"

/* tool_tpu_run_replicas, with the emulated cores split across the ranks
 * when mpirun started this process and tpucc has MPI: *rank is this
 * process's rank (0 otherwise); rank 0 gives every replica's arguments
 * and its outs hold every result, the other ranks give none (args may be
 * NULL) and their outs hold their own cores' (tpu_execute_replicas_shared). A
 * rank that does not answer ends every rank with its number named; ranks
 * running other work fail with ST_FAILED_PRECONDITION. */
base_status tool_tpu_run_replicas_mpi(const ir_module *m, const tool_tpu_opts *o, int nrep,
                                      ir_literal *const *const *args, int nargs, arena *a,
                                      ir_literal **outs, int *rank, char *err, size_t errlen);

#endif
