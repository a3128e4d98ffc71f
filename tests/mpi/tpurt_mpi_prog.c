/* tpurt_mpi_prog.c: how tpurt_mpi_device_create (include/tpurt_mpi.h)
 * fails, through the public API only; run by meson directly (noinit) or
 * under mpirun by run_mpi.py.
 *
 *   tpurt_mpi_prog noinit     MPI never initialised: TPURT_FAILED_PRECONDITION
 *                             saying so, and the same after MPI_Finalize
 *   tpurt_mpi_prog target T   every rank creates a device of target T (an
 *                             MPMD run gives ranks different targets) and
 *                             runs the ICI ring of tests/runtime/ici_ring.h
 *                             on it; a failure prints "rank R: message"
 *   tpurt_mpi_prog single     the v3 target (1 core) on a world of 1: the
 *                             device is the one-process one
 *   tpurt_mpi_prog silent     rank 1 creates its device and then stops
 *                             answering: rank 0's execution fails within
 *                             the 3 s timeout, naming rank 1
 *   tpurt_mpi_prog absent     rank 1 does not call tpurt_mpi_device_create
 *                             within the 3 s timeout: rank 0 fails saying
 *                             the duplication was not joined
 *   tpurt_mpi_prog thread     MPI_Init (MPI_THREAD_SINGLE): refused, naming
 *                             MPI_Init_thread
 *   tpurt_mpi_prog otherprog  rank 1 loads another program of the same
 *                             signature (ICI_DEADLOCK_SRC): every rank's
 *                             execution fails naming rank 1
 *
 * Prints "rank R: ok" when every check of the mode holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>
#include <tpurt.h>
#include <tpurt_mpi.h>

#define TARGET "v3-8"
#include "tests/runtime/ici_ring.h"

static int failures;

static void check(int ok, const char *what, const char *detail) {
  if (ok) return;
  fprintf(stderr, "FAIL %s: %s\n", what, detail);
  failures++;
}

static int noinit(void) {
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = "v3-8";
  tpurt_device_t *d = (tpurt_device_t *)&o; /* must come back NULL */
  char err[512];
  tpurt_status_t st = tpurt_mpi_device_create(&o, MPI_COMM_WORLD, 3, &d, err, sizeof err);
  check(st == TPURT_FAILED_PRECONDITION && d == NULL, "before MPI_Init", err);
  check(strstr(err, "MPI is not initialised") && strstr(err, "MPI_Init_thread"),
        "before MPI_Init: message", err);
  int provided = 0;
  MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
  MPI_Finalize();
  st = tpurt_mpi_device_create(&o, MPI_COMM_WORLD, 3, &d, err, sizeof err);
  check(st == TPURT_FAILED_PRECONDITION && d == NULL && strstr(err, "already finalised"),
        "after MPI_Finalize", err);
  if (!failures) printf("rank 0: ok\n");
  return failures != 0;
}

/* Creates the device of target on the world and runs the ring on every
 * core; 0, or 1 after printing "rank R: message". */
static int ring(const char *target, double timeout, int silent_rank, int other_rank) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = target;
  tpurt_device_t *d = NULL;
  char err[1024];
  tpurt_status_t st = tpurt_mpi_device_create(&o, MPI_COMM_WORLD, timeout, &d, err, sizeof err);
  if (st != TPURT_OK) {
    fprintf(stderr, "rank %d: %s (%s)\n", rank, err, tpurt_status_string(st));
    return 1;
  }
  if (rank == silent_rank) {
    sleep((unsigned)(3 * timeout));
    tpurt_device_destroy(d);
    return 1;
  }
  tpurt_program_t *p = NULL;
  int n = tpurt_device_core_count(d);
  tpurt_buffer_t *in[8] = {0}, *out[8] = {0};
  const char *src = rank == other_rank ? ICI_DEADLOCK_SRC : ring_src;
  st = tpurt_program_assemble(d, src, strlen(src), "ring.s", &p);
  static float x[1024];
  for (int c = 0; c < n && c < 8 && st == TPURT_OK; c++) {
    int64_t dims[1] = {1024};
    for (int i = 0; i < 1024; i++) x[i] = (float)(c * 10 + i % 7);
    st = tpurt_buffer_create(d, TPURT_F32, 1, dims, x, sizeof x, &in[c]);
  }
  if (st == TPURT_OK) st = tpurt_program_execute_replicas(p, (size_t)n, in, 1, out, 1, NULL);
  /* core c receives core c - 1's x */
  for (int c = 0; c < n && c < 8 && st == TPURT_OK && rank == 0; c++) {
    tpurt_buffer_read(out[c], x, sizeof x);
    int from = (c + n - 1) % n, bad = 0;
    for (int i = 0; i < 1024; i++) bad |= x[i] != (float)(from * 10 + i % 7);
    check(!bad, "ring", "a core's result is not its predecessor's x");
  }
  if (st != TPURT_OK) fprintf(stderr, "rank %d: execute: %s\n", rank, tpurt_device_message(d));
  for (int c = 0; c < 8; c++) {
    tpurt_buffer_destroy(in[c]);
    tpurt_buffer_destroy(out[c]);
  }
  tpurt_program_destroy(p);
  tpurt_device_destroy(d);
  return st != TPURT_OK || failures;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "noinit")) return noinit();
  int provided = 0, rank = 0, rc = 1;
  if (!strcmp(mode, "thread"))
    MPI_Init(&argc, &argv);
  else
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (!strcmp(mode, "target") && argc > 2) {
    rc = ring(argv[2], 10, -1, -1);
  } else if (!strcmp(mode, "single")) {
    rc = ring("v3", 10, -1, -1);
  } else if (!strcmp(mode, "silent")) {
    rc = ring("v3-8", 3, 1, -1);
  } else if (!strcmp(mode, "absent")) {
    if (rank == 1) sleep(9);
    rc = ring("v3-8", 3, -1, -1);
  } else if (!strcmp(mode, "thread")) {
    rc = ring("v3-8", 3, -1, -1);
  } else if (!strcmp(mode, "otherprog")) {
    rc = ring("v3-8", 10, -1, 1);
  } else {
    fprintf(stderr, "usage: tpurt_mpi_prog noinit|target T|single|silent|absent|thread|otherprog\n");
  }
  if (rc) {
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  printf("rank %d: ok\n", rank);
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
