/* run_mpi_tpu.c: `mpirun -np R tpucc run FILE --target=<board or pod>`:
 * the emulated cores split across the R ranks (docs/distributed.md,
 * "Pods across processes"). Every rank compiles the module; the ranks
 * check that they run the same work (a fingerprint of the module, target
 * and flags), run the replicas with their cores shared through MPI
 * (runtime/mpi/mpi_comm.h, rt_mpi_peers), and rank 0 gets every result.
 * Without MPI, or when not started by mpirun, the run is the one-process
 * one. */
#include "tools/run_mpi_tpu.h"
#include "tools/mpi_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TPUCC_HAVE_MPI
#include <mpi.h>

#include "runtime/mpi/mpi_comm.h"

static uint64_t fnv_str(uint64_t h, const char *s) {
  return tool_mpi_hash(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

/* What every rank must agree on: the module as printed, the target, the
 * replica count and the flags that change the program. */
static uint64_t fingerprint(const ir_module *m, const tool_tpu_opts *o, int nrep) {
  strbuf b;
  sb_init(&b);
  ir_print_module(&b, m);
  uint64_t h = tool_mpi_hash(0xcbf29ce484222325ull, sb_str(&b), b.len);
  sb_free(&b);
  h = fnv_str(h, o->target);
  h = fnv_str(h, o->precision);
  h = tool_mpi_hash(h, &o->all_reduce, sizeof o->all_reduce);
  return tool_mpi_hash(h, &nrep, sizeof nrep);
}

/* The bound on every wait for another rank: TPUCC_MPI_TIMEOUT seconds,
 * else 60. */
static double mpi_timeout(void) {
  const char *e = getenv("TPUCC_MPI_TIMEOUT");
  double t = e && *e ? strtod(e, NULL) : 0;
  return t > 0 ? t : 60;
}
#endif

base_status tool_tpu_run_replicas_mpi(const ir_module *m, const tool_tpu_opts *o, int nrep,
                                      ir_literal *const *const *args, int nargs, arena *a,
                                      ir_literal **outs, int *rank, char *err, size_t errlen) {
  *rank = 0;
#ifdef TPUCC_HAVE_MPI
  if (rt_mpi_launched()) {
    rt_mpi *p = NULL;
    char why[1024];
    if (rt_mpi_open(fingerprint(m, o, nrep), mpi_timeout(), &p, why, sizeof why)) {
      snprintf(err, errlen, "MPI: %s", why);
      return ST_FAILED_PRECONDITION;
    }
    *rank = rt_mpi_rank(p);
    tpurt_peers_t peers;
    rt_mpi_peers(p, &peers);
    tool_tpu_opts so = *o;
    so.peers = &peers;
    double t0 = MPI_Wtime();
    base_status st = tool_tpu_run_replicas(m, &so, nrep, args, nargs, a, outs, err, errlen);
    if (getenv("TPUCC_MPI_TIMES")) { /* bench/emu_mpi.sh */
      uint64_t calls = 0;
      double in = rt_mpi_peer_seconds(p, &calls), all = MPI_Wtime() - t0;
      fprintf(stderr, "tpucc: rank %d: compile and run %.3f s, %.3f s (%.0f%%) in %llu MPI exchanges\n",
              *rank, all, in, all > 0 ? 100 * in / all : 0, (unsigned long long)calls);
    }
    /* the peers failed (a rank silent or gone): end every rank, naming it */
    if (st == ST_IO_ERROR) rt_mpi_abort(p, err);
    rt_mpi_close(p);
    return st;
  }
#endif
  return tool_tpu_run_replicas(m, o, nrep, args, nargs, a, outs, err, errlen);
}
