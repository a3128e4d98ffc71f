/* mpi_run.c: the tpucc command under mpirun (contracts in mpi_run.h). */
#include "tools/mpi_run.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "tools/tools.h"

uint64_t tool_mpi_hash(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

void tool_mpi_share(int n, int *first, int *count) {
  int R = tool_mpi_size();
  *count = n % R ? n : n / R;
  *first = n % R ? 0 : tool_mpi_rank() * *count;
}

/* The rank an MPI launcher gave this process, -1 when none did. */
static int launch_rank(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
    const char *v = getenv(vars[i]);
    if (v && *v) return atoi(v);
  }
  return -1;
}

void tool_mpi_hush(bool on) {
  static int saved[2] = {-1, -1};
  fflush(stdout);
  fflush(stderr);
  if (on && saved[0] < 0 && launch_rank() > 0) {
    int null = open("/dev/null", O_WRONLY);
    for (int k = 0; null >= 0 && k < 2; k++) {
      saved[k] = dup(k + 1);
      if (saved[k] >= 0) dup2(null, k + 1);
    }
    if (null >= 0) close(null);
  } else if (!on) {
    for (int k = 0; k < 2; k++) {
      if (saved[k] < 0) continue;
      dup2(saved[k], k + 1);
      close(saved[k]);
      saved[k] = -1;
    }
  }
}

#ifdef TPUCC_HAVE_MPI
#ifdef TPUCC_HAVE_LLVM
#include "backend/llvm/cpu.h"
#endif
#include <mpi.h>

#include "runtime/mpi/mpi_replicas.h"

static rt_mpi *world;
static tpurt_peers_t world_peers;
static bool spreading;
/* Where the cpu replicas' results go: every rank (tool_mpi_spread),
 * rank 0 (tool_mpi_spread_gather), nowhere (tool_mpi_spread_own). */
static enum { TO_EVERY, TO_RANK0, TO_NONE } results_to;

/* The work this rank was started with: its arguments and the contents of
 * the files it reads itself. */
static uint64_t fingerprint(const char *cmd, int argc, char **argv, const char *const *files, int nfiles) {
  uint64_t h = tool_mpi_hash(0xcbf29ce484222325ull, cmd, strlen(cmd) + 1);
  for (int i = 0; i < argc; i++) h = tool_mpi_hash(h, argv[i], strlen(argv[i]) + 1);
  for (int i = 0; i < nfiles; i++) {
    FILE *fp = files[i] ? fopen(files[i], "rb") : NULL;
    h = tool_mpi_hash(h, fp ? "+" : "-", 1);
    if (!fp) continue;
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0) h = tool_mpi_hash(h, buf, n);
    fclose(fp);
  }
  return h;
}

bool tool_mpi_begin(const char *cmd, int argc, char **argv, const char *const *files, int nfiles) {
  if (!rt_mpi_launched() || world) return true;
  const char *t = getenv("TPUCC_MPI_TIMEOUT");
  double timeout = t && atof(t) > 0 ? atof(t) : 60;
  char err[768];
  if (rt_mpi_open(fingerprint(cmd, argc, argv, files, nfiles), timeout, &world, err, sizeof err)) {
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    fprintf(stderr, "tpucc %s: rank %s: %s\n", cmd, r ? r : "?", err);
    return false;
  }
  return true;
}

int tool_mpi_rank(void) { return world ? rt_mpi_rank(world) : 0; }

/* One exchange of the world under a key no collective of a program uses
 * (the top bit set). */
static bool world_exchange(const void *mine, size_t bytes, const void **all, char *err, size_t errlen) {
  static uint64_t round;
  coll_comm *w = rt_mpi_comm(world);
  char msg[512];
  if (!w->ops->exchange(w, rt_mpi_rank(world), 1ull << 63 | round++, mine, bytes, all, msg, sizeof msg))
    return true;
  snprintf(err, errlen, "%s", msg);
  return false;
}

bool tool_mpi_bcast(void **buf, size_t *len, char *err, size_t errlen) {
  if (!world) return true;
  const void **all = calloc((size_t)rt_mpi_size(world), sizeof *all);
  uint64_t n = rt_mpi_rank(world) == 0 ? (uint64_t)*len : 0;
  bool ok = all && world_exchange(&n, sizeof n, all, err, errlen);
  if (ok) memcpy(&n, all[0], sizeof n);
  /* every rank gives rank 0's size; only rank 0's bytes are read */
  unsigned char *mine = rt_mpi_rank(world) == 0 ? NULL : calloc((size_t)n + 1, 1);
  ok = ok && (rt_mpi_rank(world) == 0 || mine) &&
       world_exchange(rt_mpi_rank(world) == 0 ? *buf : mine, (size_t)n, all, err, errlen);
  if (ok && rt_mpi_rank(world) != 0) {
    if (n) memcpy(mine, all[0], (size_t)n);
    *buf = mine;
    *len = (size_t)n;
    mine = NULL;
  }
  if (!all) snprintf(err, errlen, "out of memory");
  free(mine);
  free(all);
  return ok;
}
int tool_mpi_size(void) { return world ? rt_mpi_size(world) : 1; }

bool tool_mpi_agree(int *code, char *err, size_t errlen) {
  if (!world) return true;
  int32_t c = *code;
  const void **all = calloc((size_t)rt_mpi_size(world), sizeof *all);
  bool ok = all && world_exchange(&c, sizeof c, all, err, errlen);
  if (ok) memcpy(&c, all[0], sizeof c);
  if (!all) snprintf(err, errlen, "out of memory");
  free(all);
  *code = c;
  return ok;
}

#ifdef TPUCC_HAVE_LLVM
/* The bytes of l's leaves. */
static size_t literal_bytes(const ir_literal *l) {
  if (l->shape.type != IR_TUPLE) return l->nbytes;
  size_t n = 0;
  for (int i = 0; i < l->shape.ntuple; i++) n += literal_bytes(l->elems[i]);
  return n;
}

/* Copies l's leaves to (to_bytes) or from buf, in leaf order; the bytes
 * moved. */
static size_t literal_copy(ir_literal *l, unsigned char *buf, bool to_bytes) {
  if (l->shape.type != IR_TUPLE) {
    if (to_bytes) memcpy(buf, l->data, l->nbytes);
    else memcpy(l->data, buf, l->nbytes);
    return l->nbytes;
  }
  size_t n = 0;
  for (int i = 0; i < l->shape.ntuple; i++) n += literal_copy(l->elems[i], buf + n, to_bytes);
  return n;
}

/* Every rank (gather: rank 0 alone) gets every replica's result: each
 * rank sends its own replicas' results, back to back, to every rank
 * (gather: to rank 0). */
static base_status share_results(int nrep, int first, int nl, ir_literal *const *outs, bool gather,
                                 char *err, size_t errlen) {
  if (results_to == TO_NONE) return ST_OK;
  int R = rt_mpi_size(world), me = rt_mpi_rank(world);
  size_t rb = literal_bytes(outs[0]), mb = rb * (size_t)nl;
  unsigned char *mine = malloc(mb + 1);
  const void **all = calloc((size_t)R, sizeof *all), **send = calloc((size_t)R, sizeof *send);
  size_t *len = calloc((size_t)R, sizeof *len), *rlen = calloc((size_t)R, sizeof *rlen);
  base_status st = mine && all && send && len && rlen ? ST_OK : ST_OUT_OF_MEMORY;
  if (st != ST_OK) snprintf(err, errlen, "out of memory");
  for (int j = 0; j < nl && st == ST_OK; j++) literal_copy(outs[first + j], mine + (size_t)j * rb, true);
  if (st == ST_OK && !gather && !world_exchange(mine, mb, all, err, errlen)) st = ST_INTERNAL;
  if (st == ST_OK && gather) {
    send[0] = mine;
    len[0] = me ? mb : 0;
    if (rt_mpi_exchange_v(world, send, len, all, rlen, err, errlen)) st = ST_INTERNAL;
    for (int k = 1; st == ST_OK && me == 0 && k < R; k++)
      if (rlen[k] != mb) {
        snprintf(err, errlen, "rank %d sent %zu bytes of results, %zu expected", k, rlen[k], mb);
        st = ST_INTERNAL;
      }
  }
  for (int i = 0; i < nrep && st == ST_OK && (!gather || me == 0); i++)
    if (i < first || i >= first + nl)
      literal_copy(outs[i], (unsigned char *)all[i / nl] + (size_t)(i % nl) * rb, false);
  free(mine);
  free(all);
  free((void *)send);
  free(len);
  free(rlen);
  return st;
}

/* cpu_replicas_hook over the world: this rank runs its N / R replicas. */
static base_status spread_cpu(cpu_exe *x, int nrep, ir_literal *const *flat, int nargs,
                              ir_literal *const *outs, char *err, size_t errlen) {
  rt_mpi_replicas *xr;
  if (rt_mpi_replicas_create(world, nrep, &xr, err, errlen)) return ST_INVALID_ARGUMENT;
  coll_comm *c = rt_mpi_replicas_comm(xr);
  int first = c->first, nl = c->local;
  base_status st = cpu_execute_comm(x, c, flat + (size_t)first * (size_t)nargs, nargs, outs + first, err, errlen);
  rt_mpi_replicas_destroy(xr);
  if (st != ST_OK) return st;
  return share_results(nrep, first, nl, outs, results_to == TO_RANK0, err, errlen);
}

void tool_mpi_spread(bool on) {
  cpu_replicas_hook = on && world ? spread_cpu : NULL;
  spreading = on;
  results_to = TO_EVERY;
}
#else
void tool_mpi_spread(bool on) {
  spreading = on;
  results_to = TO_EVERY;
}
#endif

void tool_mpi_spread_gather(bool on) {
  tool_mpi_spread(on);
  results_to = on ? TO_RANK0 : TO_EVERY;
}

void tool_mpi_spread_own(bool on) {
  tool_mpi_spread(on);
  results_to = on ? TO_NONE : TO_EVERY;
}

double tool_mpi_wtime(void) { return MPI_Wtime(); }

void tool_mpi_times(const char *what, double t0) {
  if (!world || !getenv("TPUCC_MPI_TIMES")) return;
  uint64_t calls = 0;
  double in = rt_mpi_peer_seconds(world, &calls), all = MPI_Wtime() - t0;
  fprintf(stderr, "tpucc: rank %d: %s %.3f s, %.3f s (%.0f%%) in %llu MPI exchanges\n",
          rt_mpi_rank(world), what, all, in, all > 0 ? 100 * in / all : 0, (unsigned long long)calls);
}

const tpurt_peers_t *tool_mpi_tpu_peers(void) {
  if (!spreading || !world || rt_mpi_size(world) < 2) return NULL;
  rt_mpi_peers(world, &world_peers);
  return &world_peers;
}

const char *tool_mpi_build_note(void) { return "this tpucc has MPI."; }

void tool_mpi_end(void) {
  rt_mpi_close(world);
  world = NULL;
  spreading = false;
#ifdef TPUCC_HAVE_LLVM
  cpu_replicas_hook = NULL;
#endif
}

#else /* built without MPI */

const char *tool_mpi_build_note(void) {
  return "this tpucc was built without MPI: install libopenmpi-dev and\n"
         "openmpi-bin (setup.sh does) and configure with meson -Dmpi=enabled.";
}

bool tool_mpi_begin(const char *cmd, int argc, char **argv, const char *const *files, int nfiles) {
  (void)argc;
  (void)argv;
  (void)files;
  (void)nfiles;
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE") && !getenv("PMIX_RANK")) return true;
  if (launch_rank() > 0) return false; /* rank 0 says it */
  fprintf(stderr, "tpucc %s: started by mpirun, but %s\n", cmd, tool_mpi_build_note());
  return false;
}
int tool_mpi_rank(void) { return 0; }
int tool_mpi_size(void) { return 1; }
bool tool_mpi_agree(int *code, char *err, size_t errlen) {
  (void)code;
  (void)err;
  (void)errlen;
  return true;
}
bool tool_mpi_bcast(void **buf, size_t *len, char *err, size_t errlen) {
  (void)buf;
  (void)len;
  (void)err;
  (void)errlen;
  return true;
}
void tool_mpi_spread(bool on) { (void)on; }
void tool_mpi_spread_gather(bool on) { (void)on; }
void tool_mpi_spread_own(bool on) { (void)on; }
const struct tpurt_peers *tool_mpi_tpu_peers(void) { return NULL; }
double tool_mpi_wtime(void) { return 0; }
void tool_mpi_times(const char *what, double t0) {
  (void)what;
  (void)t0;
}
void tool_mpi_end(void) {}

#endif
