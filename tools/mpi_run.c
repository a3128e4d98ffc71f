/* mpi_run.c: the tpucc command under mpirun (contracts in mpi_run.h). */
#include "tools/mpi_run.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tools.h"

#ifdef TPUCC_HAVE_MPI
#include <sys/stat.h>

#ifdef TPUCC_HAVE_LLVM
#include "backend/llvm/cpu.h"
#endif
#include "runtime/mpi/mpi_replicas.h"

static rt_mpi *world;

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* The file an argument names: "PATH", "@PATH", "--flag=PATH" or
 * "--flag=@PATH"; NULL when none is a regular file. */
static const char *named_file(const char *arg) {
  const char *cands[2] = {arg, strchr(arg, '=') ? strchr(arg, '=') + 1 : NULL};
  for (int i = 0; i < 2; i++) {
    const char *c = cands[i];
    if (!c) continue;
    if (c[0] == '@') c++;
    struct stat sb;
    if (c[0] && stat(c, &sb) == 0 && S_ISREG(sb.st_mode)) return c;
  }
  return NULL;
}

/* The work this rank was started with: its arguments and the contents of
 * the files they name. */
static uint64_t fingerprint(const char *cmd, int argc, char **argv) {
  uint64_t h = fnv(0xcbf29ce484222325ull, cmd, strlen(cmd) + 1);
  for (int i = 0; i < argc; i++) {
    h = fnv(h, argv[i], strlen(argv[i]) + 1);
    const char *f = named_file(argv[i]);
    FILE *fp = f ? fopen(f, "rb") : NULL;
    if (!fp) continue;
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0) h = fnv(h, buf, n);
    fclose(fp);
  }
  return h;
}

bool tool_mpi_begin(const char *cmd, int argc, char **argv) {
  if (!rt_mpi_launched() || world) return true;
  const char *t = getenv("TPUCC_MPI_TIMEOUT");
  double timeout = t && atof(t) > 0 ? atof(t) : 60;
  char err[768];
  if (rt_mpi_open(fingerprint(cmd, argc, argv), timeout, &world, err, sizeof err)) {
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    fprintf(stderr, "tpucc %s: rank %s: %s\n", cmd, r ? r : "?", err);
    return false;
  }
  return true;
}

int tool_mpi_rank(void) { return world ? rt_mpi_rank(world) : 0; }
int tool_mpi_size(void) { return world ? rt_mpi_size(world) : 1; }

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

/* Every rank gets every replica's result: each sends its own replicas'
 * results, back to back. */
static base_status share_results(int nrep, int first, int nl, ir_literal *const *outs, char *err,
                                 size_t errlen) {
  size_t rb = literal_bytes(outs[0]);
  unsigned char *mine = malloc(rb * (size_t)nl + 1);
  const void **all = calloc((size_t)rt_mpi_size(world), sizeof *all);
  base_status st = mine && all ? ST_OK : ST_OUT_OF_MEMORY;
  if (st != ST_OK) snprintf(err, errlen, "out of memory");
  for (int j = 0; j < nl && st == ST_OK; j++) literal_copy(outs[first + j], mine + (size_t)j * rb, true);
  coll_comm *w = rt_mpi_comm(world);
  static uint64_t round;
  char msg[512];
  if (st == ST_OK &&
      w->ops->exchange(w, rt_mpi_rank(world), 1ull << 63 | round++, mine, rb * (size_t)nl, all, msg, sizeof msg)) {
    snprintf(err, errlen, "sharing the results: %s", msg);
    st = ST_INTERNAL;
  }
  for (int i = 0; i < nrep && st == ST_OK; i++)
    if (i < first || i >= first + nl)
      literal_copy(outs[i], (unsigned char *)all[i / nl] + (size_t)(i % nl) * rb, false);
  free(mine);
  free(all);
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
  return share_results(nrep, first, nl, outs, err, errlen);
}

void tool_mpi_spread(bool on) { cpu_replicas_hook = on && world ? spread_cpu : NULL; }
#else
void tool_mpi_spread(bool on) { (void)on; }
#endif

const char *tool_mpi_build_note(void) { return "this tpucc has MPI."; }

void tool_mpi_end(void) {
  rt_mpi_close(world);
  world = NULL;
#ifdef TPUCC_HAVE_LLVM
  cpu_replicas_hook = NULL;
#endif
}

#else /* built without MPI */

const char *tool_mpi_build_note(void) {
  return "this tpucc was built without MPI: install libopenmpi-dev and\n"
         "openmpi-bin (setup.sh does) and configure with meson -Dmpi=enabled.";
}

bool tool_mpi_begin(const char *cmd, int argc, char **argv) {
  (void)argc;
  (void)argv;
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE") && !getenv("PMIX_RANK")) return true;
  fprintf(stderr, "tpucc %s: started by mpirun, but %s\n", cmd, tool_mpi_build_note());
  return false;
}
int tool_mpi_rank(void) { return 0; }
int tool_mpi_size(void) { return 1; }
void tool_mpi_spread(bool on) { (void)on; }
void tool_mpi_end(void) {}

#endif
