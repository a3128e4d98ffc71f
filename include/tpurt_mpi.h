/* tpurt_mpi.h: libtpurt-mpi, a libtpurt device whose cores are split
 * across the ranks of an MPI communicator (docs/distributed.md, "Pods
 * across processes"; docs/runtime.md, "A device over MPI").
 *
 * An emulated board or pod of n cores ("v3-8", "v3-32", ...) is created
 * collectively by the R ranks of a communicator; rank k runs the cores
 * [k n/R, (k+1) n/R). The device is then an ordinary tpurt_device_t: load
 * the same program on every rank and call tpurt_program_execute_replicas
 * on every rank in the same order. Rank 0's parameters are the ones used
 * (the other ranks pass buffers of the right shapes, whose contents are
 * ignored); rank 0 gets every core's results and statistics and writes the
 * trace, and on the other ranks the result buffers and statistics are
 * zeros. The values, cycles and counters are those of the same device in
 * one process. Link with `pkg-config --cflags --libs tpurt-mpi` (it brings
 * libtpurt and MPI's flags).
 *
 *   MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
 *   tpurt_device_options_t o;  tpurt_device_options_init(&o);
 *   o.target = "v3-8";
 *   char err[512];
 *   tpurt_device_t *dev;
 *   if (tpurt_mpi_device_create(&o, MPI_COMM_WORLD, 60, &dev, err, sizeof err))
 *     ... err says what went wrong, naming the rank ...
 *   ... tpurt_program_load_file, tpurt_program_execute_replicas ...
 *   tpurt_device_destroy(dev);
 *   MPI_Finalize();
 *
 * MPI. The caller owns MPI: it calls MPI_Init_thread (or MPI_Init) before
 * and MPI_Finalize after, and may pass any intracommunicator
 * (MPI_COMM_WORLD, or one made by MPI_Comm_split to run several devices
 * side by side). The library duplicates it, so its messages never match
 * the caller's, and frees the duplicate in tpurt_device_destroy, which
 * does not wait for the other ranks. The device calls MPI from the thread
 * that calls into it: MPI must give MPI_THREAD_SERIALIZED, or
 * MPI_THREAD_FUNNELED when that is the thread that initialised MPI (the
 * emulator's own host threads never call MPI).
 *
 * Bounded waits. Every wait for another rank ends after timeout_seconds:
 * a rank that does not answer is named in the message (an execution then
 * fails with TPURT_IO_ERROR, "rank 0: no answer within 60 s from rank 1").
 * After such a failure the ranks are out of step: destroy the device; the
 * usual next step is MPI_Abort. Ranks whose options differ (target,
 * cycle_limit, mxu_systolic, whether a trace is written) are refused at
 * creation, naming the first rank that differs from rank 0; ranks that
 * loaded different programs (code, constants or signature) fail their
 * execution on every rank with TPURT_FAILED_PRECONDITION, "rank 1 loaded
 * another program than rank 0".
 *
 * Threads and ownership as libtpurt (tpurt.h): the device is
 * thread-compatible; the library keeps no global state. */
#ifndef TPURT_MPI_H
#define TPURT_MPI_H

#include <mpi.h>

#include "tpurt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over comm: every rank calls it with the same options. opts
 * as tpurt_device_create (NULL: the defaults), with a TPU target whose
 * core count the communicator's size divides and peers NULL (the
 * communicator gives them). timeout_seconds bounds every wait for another
 * rank, now and in every execution (<= 0: 60).
 *
 * On success *out_device is this rank's device (destroy it with
 * tpurt_device_destroy) and err is "". On failure *out_device is NULL and
 * err holds one line saying why (truncated to errlen):
 *   TPURT_FAILED_PRECONDITION  MPI is not initialised (or already
 *       finalised), gives too low a thread level, or a rank was created
 *       with other options than rank 0 ("rank 1 runs other work than
 *       rank 0 ...");
 *   TPURT_INVALID_ARGUMENT     a bad target, comm MPI_COMM_NULL or an
 *       intercommunicator, opts->peers set, or cores that do not split
 *       evenly across the ranks;
 *   TPURT_UNSUPPORTED          a target that is not a TPU ("cpu");
 *   TPURT_IO_ERROR             a rank did not answer in time (named,
 *       except while duplicating the communicator, where MPI cannot tell
 *       which rank is missing) or an MPI call failed;
 *   TPURT_OUT_OF_MEMORY.
 * A rank that fails after the options were checked (out of memory) makes
 * every rank fail, naming it. */
TPURT_API tpurt_status_t tpurt_mpi_device_create(const tpurt_device_options_t *opts,
                                                 MPI_Comm comm, double timeout_seconds,
                                                 tpurt_device_t **out_device, char *err,
                                                 size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
