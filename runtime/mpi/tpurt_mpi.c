/* tpurt_mpi.c: libtpurt-mpi, a device over an MPI communicator (contracts
 * in include/tpurt_mpi.h). Creation runs in four steps, every rank taking
 * part in each so that none waits for a rank that gave up:
 *   1. local checks of MPI (initialised, thread level, communicator);
 *   2. a probe device without peers: the canonical target, its platform
 *      and core count, or the reason the options are refused;
 *   3. rt_mpi_open_comm: the communicator duplicated and a fingerprint of
 *      the options (and of the probe's outcome) compared with rank 0's;
 *   4. the device with the duplicate as its peers, and one exchange in
 *      which every rank says whether that worked.
 * The device owns the rt_mpi through tpurt_peers_t.release. */
#include "tpurt_mpi.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/mpi/mpi_comm.h"

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static tpurt_status_t
fail(char *err, size_t errlen, tpurt_status_t st, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return st;
}

/* MPI usable from this thread on comm: TPURT_OK or the reason. */
static tpurt_status_t check_mpi(MPI_Comm comm, char *err, size_t errlen) {
  int inited = 0, finalized = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&finalized);
  if (!inited || finalized)
    return fail(err, errlen, TPURT_FAILED_PRECONDITION,
                "MPI is %s: the caller initialises MPI (MPI_Init_thread) before "
                "tpurt_mpi_device_create and finalises it after tpurt_device_destroy",
                finalized ? "already finalised" : "not initialised");
  if (comm == MPI_COMM_NULL)
    return fail(err, errlen, TPURT_INVALID_ARGUMENT, "the communicator is MPI_COMM_NULL");
  int inter = 0;
  MPI_Comm_test_inter(comm, &inter);
  if (inter)
    return fail(err, errlen, TPURT_INVALID_ARGUMENT,
                "an intercommunicator: give an intracommunicator (MPI_COMM_WORLD or one "
                "from MPI_Comm_split)");
  int provided = 0, is_main = 0;
  MPI_Query_thread(&provided);
  MPI_Is_thread_main(&is_main);
  if (provided < MPI_THREAD_SERIALIZED && !(provided >= MPI_THREAD_FUNNELED && is_main))
    return fail(err, errlen, TPURT_FAILED_PRECONDITION,
                "MPI gives thread level %s%s: the device runs its cores on host threads; "
                "initialise MPI with MPI_Init_thread and MPI_THREAD_FUNNELED (calls from the "
                "main thread) or MPI_THREAD_SERIALIZED",
                provided == MPI_THREAD_SINGLE ? "MPI_THREAD_SINGLE" : "MPI_THREAD_FUNNELED",
                provided == MPI_THREAD_SINGLE ? "" : " and this is not the main thread");
  return TPURT_OK;
}

/* The probe of step 2: TPURT_OK and the canonical target into spec, or
 * the reason the options are refused on `size` ranks. */
static tpurt_status_t probe(const tpurt_device_options_t *opts, int size, char *spec,
                            size_t speclen, char *err, size_t errlen) {
  if (opts->peers)
    return fail(err, errlen, TPURT_INVALID_ARGUMENT,
                "opts->peers is set: the communicator gives the peers, leave it NULL");
  tpurt_device_options_t o = *opts;
  o.trace_path = NULL;
  tpurt_device_t *d = NULL;
  tpurt_status_t st = tpurt_device_create(&o, &d);
  if (st != TPURT_OK) {
    char why[400] = "";
    if (tpurt_target_check(opts->target ? opts->target : "v3", why, sizeof why) == TPURT_OK)
      snprintf(why, sizeof why, "%s", tpurt_status_string(st));
    const char *t = opts->target ? opts->target : "v3";
    if (st == TPURT_UNSUPPORTED)
      return fail(err, errlen, st,
                  "target '%s': the cpu device does not span processes; give a TPU board or "
                  "pod (%s)",
                  t, why);
    return fail(err, errlen, st, "target '%s': %s", t, why);
  }
  snprintf(spec, speclen, "%s", tpurt_device_target(d));
  int n = tpurt_device_core_count(d);
  int tpu = !strcmp(tpurt_device_platform(d), "tpu");
  tpurt_device_destroy(d);
  if (!tpu)
    return fail(err, errlen, TPURT_UNSUPPORTED,
                "target '%s': the cpu device does not span processes; give a TPU board or pod "
                "(\"v3-8\", \"v3-32\", ...)",
                spec);
  if (n % size)
    return fail(err, errlen, TPURT_INVALID_ARGUMENT,
                "%d cores do not split evenly across the communicator's %d ranks: use a "
                "communicator whose size divides %d",
                n, size, n);
  return TPURT_OK;
}

/* FNV-1a over bytes. */
static uint64_t hash(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* What every rank must agree on: the library, the options that shape the
 * run and the outcome of the probe. */
static uint64_t fingerprint(const tpurt_device_options_t *opts, const char *spec,
                            tpurt_status_t probed) {
  int v = tpurt_version(), systolic = opts->mxu_systolic != 0, trace = opts->trace_path != NULL;
  int st = (int)probed;
  uint64_t limit = opts->cycle_limit;
  const char *t = probed == TPURT_OK ? spec : opts->target ? opts->target : "";
  uint64_t h = hash(0xcbf29ce484222325ull, t, strlen(t) + 1);
  h = hash(h, &v, sizeof v);
  h = hash(h, &st, sizeof st);
  h = hash(h, &limit, sizeof limit);
  h = hash(h, &systolic, sizeof systolic);
  return hash(h, &trace, sizeof trace);
}

static void release_peers(void *user) { rt_mpi_release(user); }

/* Step 4's agreement: every rank tells the others whether its device was
 * made. TPURT_OK when all were; else the failure, naming the first rank
 * that failed (this rank's own reason when it is the one). */
static tpurt_status_t agree(rt_mpi *p, tpurt_status_t mine, const char *why, char *err,
                            size_t errlen) {
  int R = rt_mpi_size(p), me = rt_mpi_rank(p);
  int32_t st = (int32_t)mine;
  const void **send = calloc((size_t)R, sizeof *send), **recv = calloc((size_t)R, sizeof *recv);
  size_t *len = calloc((size_t)R, sizeof *len), *rlen = calloc((size_t)R, sizeof *rlen);
  tpurt_status_t rc = TPURT_OK;
  char msg[512];
  if (!send || !recv || !len || !rlen) {
    rc = fail(err, errlen, TPURT_OUT_OF_MEMORY, "out of memory");
  } else {
    for (int r = 0; r < R; r++) {
      send[r] = &st;
      len[r] = sizeof st;
    }
    if (rt_mpi_exchange_v(p, send, len, recv, rlen, msg, sizeof msg))
      rc = fail(err, errlen, TPURT_IO_ERROR, "rank %d: %s", me, msg);
  }
  for (int r = 0; rc == TPURT_OK && r < R; r++) {
    int32_t theirs = st;
    if (r != me && rlen[r] == sizeof theirs) memcpy(&theirs, recv[r], sizeof theirs);
    if (r != me && rlen[r] != sizeof theirs) theirs = TPURT_INTERNAL;
    if (theirs == TPURT_OK) continue;
    if (r == me)
      rc = fail(err, errlen, mine, "rank %d could not create its share of the device: %s", r, why);
    else
      rc = fail(err, errlen, (tpurt_status_t)theirs,
                "rank %d could not create its share of the device (%s)", r,
                tpurt_status_string((tpurt_status_t)theirs));
  }
  free((void *)send);
  free((void *)recv);
  free(len);
  free(rlen);
  return rc;
}

tpurt_status_t tpurt_mpi_device_create(const tpurt_device_options_t *opts, MPI_Comm comm,
                                       double timeout_seconds, tpurt_device_t **out_device,
                                       char *err, size_t errlen) {
  if (err && errlen) err[0] = 0;
  if (!out_device) return fail(err, errlen, TPURT_INVALID_ARGUMENT, "out_device is NULL");
  *out_device = NULL;
  tpurt_status_t st = check_mpi(comm, err, errlen);
  if (st != TPURT_OK) return st;
  tpurt_device_options_t def;
  tpurt_device_options_init(&def);
  if (!opts) opts = &def;
  int size = 0;
  MPI_Comm_size(comm, &size);
  char spec[256] = "", why[512] = "";
  tpurt_status_t probed = probe(opts, size, spec, sizeof spec, why, sizeof why);
  rt_mpi *p = NULL;
  char msg[1024];
  int rc = rt_mpi_open_comm(comm, fingerprint(opts, spec, probed), timeout_seconds,
                            "create the device with the same target and options on every rank",
                            &p, msg, sizeof msg);
  if (rc) return fail(err, errlen, rc == -2 ? TPURT_FAILED_PRECONDITION : TPURT_IO_ERROR, "%s", msg);
  if (probed != TPURT_OK) {
    rt_mpi_release(p);
    return fail(err, errlen, probed, "%s", why);
  }
  tpurt_peers_t peers;
  rt_mpi_peers(p, &peers);
  peers.release = release_peers;
  tpurt_device_options_t o = *opts;
  o.peers = &peers;
  tpurt_device_t *dev = NULL;
  st = tpurt_device_create(&o, &dev);
  st = agree(p, st, tpurt_status_string(st), err, errlen);
  if (st != TPURT_OK) {
    if (dev)
      tpurt_device_destroy(dev); /* releases p */
    else
      rt_mpi_release(p);
    return st;
  }
  *out_device = dev;
  return TPURT_OK;
}
