/* mpi_comm_prog.c: a program run under mpirun by run_mpi.py to check the
 * MPI communicator (runtime/mpi/mpi_comm.h).
 *
 *   mpi_comm_prog fold    every rank all-reduces a vector whose sum depends
 *                         on the order; each checks its result against the
 *                         fold it computes from the inputs it knows
 *   mpi_comm_prog hang    rank 1 stops answering: the others end the job
 *                         within the timeout, naming rank 1
 *   mpi_comm_prog die     rank 1 dies by a signal mid-run
 *   mpi_comm_prog other   rank 1 starts with another fingerprint
 *
 * Prints "rank R: ok" per rank on success; exits 1 on a wrong value. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/mpi/mpi_comm.h"

enum { N = 37 };

/* Rank r's element e: large values of both signs, so a mixed-up rank or a
 * different order changes the f32 sum. */
static float input(int r, int e) {
  float big = (r + e) % 3 == 0 ? 1e8f : (r + e) % 3 == 1 ? -1e8f : 1.0f;
  return big + (float)(r * 7 + e);
}

static int fold_and_check(rt_mpi *p, int round) {
  int n = rt_mpi_size(p), r = rt_mpi_rank(p);
  coll_comm *c = rt_mpi_comm(p);
  float mine[N], got[N];
  for (int e = 0; e < N; e++) mine[e] = input(r + round, e);
  const void *all[64];
  char msg[512];
  if (c->ops->exchange(c, r, 0x100u + (unsigned)round, mine, sizeof mine, all, msg, sizeof msg))
    c->ops->leave(c, r, msg);
  for (int ch = 0; ch < n; ch++) {
    int64_t lo, hi;
    coll_chunk(N, n, ch, &lo, &hi);
    for (int64_t e = lo; e < hi; e++) {
      got[e] = ((const float *)all[coll_term(n, ch, 0)])[e];
      for (int k = 1; k < n; k++) got[e] += ((const float *)all[coll_term(n, ch, k)])[e];
    }
  }
  c->ops->release(c, r, msg, sizeof msg);
  for (int ch = 0; ch < n; ch++) {
    int64_t lo, hi;
    coll_chunk(N, n, ch, &lo, &hi);
    for (int64_t e = lo; e < hi; e++) {
      float want = input(coll_term(n, ch, 0) + round, (int)e);
      for (int k = 1; k < n; k++) want += input(coll_term(n, ch, k) + round, (int)e);
      if (memcmp(&want, &got[e], sizeof want)) {
        fprintf(stderr, "rank %d: element %lld is %g, not %g\n", r, (long long)e, (double)got[e],
                (double)want);
        return 1;
      }
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "fold";
  rt_mpi *p = NULL;
  char err[512];
  const char *rank_env = getenv("OMPI_COMM_WORLD_RANK");
  int env_rank = rank_env ? atoi(rank_env) : 0;
  uint64_t fp = !strcmp(mode, "other") && env_rank == 1 ? 2 : 1;
  if (rt_mpi_open(fp, 3.0, &p, err, sizeof err)) {
    fprintf(stderr, "tpucc: rank %d: %s\n", env_rank, err);
    return 1;
  }
  int bad = 0;
  for (int round = 0; round < 3 && !bad; round++) {
    if (round == 1 && rt_mpi_rank(p) == 1) {
      if (!strcmp(mode, "hang")) sleep(60);
      if (!strcmp(mode, "die")) raise(SIGKILL);
    }
    bad = fold_and_check(p, round);
  }
  if (bad) rt_mpi_abort(p, "wrong result");
  printf("rank %d: ok\n", rt_mpi_rank(p));
  fflush(stdout);
  rt_mpi_close(p);
  return 0;
}
