/* emu_mpi_prog.c: an emulated pod's cores shared across MPI ranks
 * (tpurt_peers_t from rt_mpi_peers), run under mpirun by run_mpi.py. Each
 * run goes through the public API (tpurt_program_execute_replicas) once
 * with the cores split across the ranks; rank 0 then runs the same
 * program in one process and checks that every core's results and
 * statistics (cycles, unit counters, ICI counters) are the same bytes.
 *
 *   emu_mpi_prog ring      a hand-written ring of dmaputs on a v3-8 whose
 *                          values and cycles are derived by hand in
 *                          tests/runtime/test_ici.c (273, 272, 172), and
 *                          the trace: the same events as the one-process
 *                          trace
 *   emu_mpi_prog ar8 | ar8ps | ar32ps
 *                          an all-reduce over every replica of a v3-8 (ring
 *                          or parameter server) or a v3-32 pod (parameter
 *                          server), operands of mixed magnitudes so that
 *                          another fold order changes the bits; checked
 *                          against the fold in base/coll.h's order
 *   emu_mpi_prog deadlock  core 5 waits for a signal no core sends: the
 *                          fault names core 5 with the one-process message
 *   emu_mpi_prog hang      rank 1 stops answering before the run: the run
 *                          ends within the timeout (3 s) naming rank 1
 *   emu_mpi_prog die       rank 1 dies by a signal before the run
 *
 * Prints "rank R: ok" per rank on success; exits 1 on a mismatch. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/tpu/tpu.h"
#include "base/coll.h"
#include "frontend/frontend.h"
#include "runtime/mpi/mpi_comm.h"
#include "tpub.h"
#include "tpurt.h"

#define TARGET "v3-8,clock=1GHz,ici_bw=64GB/s,ici_latency=100"
#include "tests/runtime/ici_ring.h"
#include "tests/tpu/coll_operand.h"

enum { MAXC = 32, COUNT = 1000 };

static int failures;

#define CHECK(c, ...)                                                                              \
  do {                                                                                             \
    if (!(c)) {                                                                                    \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                         \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

/* One execution's outcome on rank 0 (results of every core). */
typedef struct outcome {
  tpurt_status_t st;
  char msg[1024];
  float y[MAXC][COUNT > 1024 ? COUNT : 1024];
  tpurt_stats_t stats[MAXC];
} outcome;

/* Runs the program (assembly text, or a .tpub image's bytes) on target's
 * ncores cores, with peers or alone; parameter 0 of core c holds
 * operand(c, .) (count floats). */
static void execute(const char *target, const char *asm_src, const void *tpub, size_t tpub_len,
                    int ncores, int count, const tpurt_peers_t *peers, const char *trace,
                    outcome *o) {
  tpurt_device_options_t opt;
  tpurt_device_options_init(&opt);
  opt.target = target;
  opt.peers = peers;
  opt.trace_path = trace;
  tpurt_device_t *d = NULL;
  tpurt_program_t *p = NULL;
  tpurt_buffer_t *in[MAXC] = {0}, *res[MAXC] = {0};
  memset(o, 0, sizeof *o);
  if ((o->st = tpurt_device_create(&opt, &d)) != TPURT_OK) {
    snprintf(o->msg, sizeof o->msg, "device: status %d", (int)o->st);
    return;
  }
  o->st = asm_src ? tpurt_program_assemble(d, asm_src, strlen(asm_src), "t.s", &p)
                  : tpurt_program_load(d, tpub, tpub_len, &p);
  static float x[COUNT > 1024 ? COUNT : 1024];
  for (int c = 0; c < ncores && o->st == TPURT_OK; c++) {
    for (int i = 0; i < count; i++) x[i] = asm_src ? (float)(c * 10 + i % 7) : operand(c, i);
    int64_t dims[1] = {count};
    o->st = tpurt_buffer_create(d, TPURT_F32, 1, dims, x, (size_t)count * 4, &in[c]);
  }
  if (o->st == TPURT_OK)
    o->st = tpurt_program_execute_replicas(p, (size_t)ncores, in, 1, res, 1, o->stats);
  if (o->st != TPURT_OK) snprintf(o->msg, sizeof o->msg, "%s", tpurt_device_message(d));
  for (int c = 0; c < ncores && o->st == TPURT_OK; c++)
    tpurt_buffer_read(res[c], o->y[c], (size_t)count * 4);
  for (int c = 0; c < ncores; c++) {
    tpurt_buffer_destroy(in[c]);
    tpurt_buffer_destroy(res[c]);
  }
  tpurt_program_destroy(p);
  tpurt_device_destroy(d);
}

static int line_order(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of a file without a trailing comma, sorted and joined (the events of a trace as a
 * set); NULL when it cannot be read. */
static char *sorted_lines(const char *path, size_t *n) {
  enum { CAP = 1 << 22, LINES = 1 << 16 };
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  static char *lines[LINES];
  char *text = calloc(1, CAP);
  size_t len = fread(text, 1, CAP - 1, f);
  fclose(f);
  *n = 0;
  /* an event line ends with the comma before the next event, but for the
   * last: compared without it */
  for (char *s = strtok(text, "\n"); s && *n < LINES; s = strtok(NULL, "\n")) {
    size_t l = strlen(s);
    if (l && s[l - 1] == ',') s[l - 1] = 0;
    lines[(*n)++] = s;
  }
  qsort(lines, *n, sizeof *lines, line_order);
  char *out = calloc(1, len + *n + 2);
  size_t at = 0;
  for (size_t i = 0; i < *n; i++) at += (size_t)sprintf(out + at, "%s\n", lines[i]);
  free(text);
  return out;
}

/* The module of an all-reduce over every replica of f32[COUNT]. */
static void *compile_ar(int nrep, const char *target, int ps, size_t *len) {
  char text[1024];
  snprintf(text, sizeof text,
           "HloModule ar, replica_count=%d\n"
           "red {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
           "  ROOT s = f32[] add(a, b)\n}\n"
           "ENTRY e {\n  x = f32[%d] parameter(0)\n"
           "  ROOT r = f32[%d] all-reduce(x), replica_groups={}, to_apply=red\n}\n",
           nrep, COUNT, COUNT);
  diag *dg = diag_create();
  ir_module *m = fe_parse_hlo("ar.hlo", text, strlen(text), dg);
  tpu_options o;
  tpu_options_init(&o);
  o.target = target;
  o.all_reduce = ps ? TPU_AR_PS : TPU_AR_RING;
  tpub_image *img = NULL;
  uint8_t *bytes = NULL;
  char why[256];
  if (!m || tpu_compile(m, &o, dg, &img, NULL) != ST_OK ||
      tpub_write(img, NULL, &bytes, len, why, sizeof why)) {
    fprintf(stderr, "compile: %s\n", diag_text(dg));
    exit(1);
  }
  tpub_free(img);
  ir_module_destroy(m);
  diag_destroy(dg);
  return bytes;
}

/* Core c's result against the fold in base/coll.h's order. */
static void check_fold(const outcome *o, int n) {
  for (int r = 0; r < n; r++) {
    int bad = 0;
    for (int c = 0; c < n && !bad; c++) {
      int64_t lo, hi;
      coll_chunk(COUNT, n, c, &lo, &hi);
      for (int64_t i = lo; i < hi && !bad; i++) {
        float acc = operand(coll_term(n, c, 0), i);
        for (int k = 1; k < n; k++) acc += operand(coll_term(n, c, k), i);
        if (memcmp(&acc, &o->y[r][i], 4)) {
          CHECK(0, "replica %d element %lld: got %a, want %a", r, (long long)i,
                (double)o->y[r][i], (double)acc);
          bad = 1;
        }
      }
    }
  }
}

static void compare(const outcome *shared, const outcome *alone, int n, int count) {
  CHECK(shared->st == alone->st, "status %d across ranks, %d alone", (int)shared->st,
        (int)alone->st);
  CHECK(!strcmp(shared->msg, alone->msg), "message across ranks '%s', alone '%s'", shared->msg,
        alone->msg);
  for (int c = 0; c < n; c++) {
    CHECK(!memcmp(shared->y[c], alone->y[c], (size_t)count * 4), "core %d: results differ", c);
    CHECK(!memcmp(&shared->stats[c], &alone->stats[c], sizeof shared->stats[c]),
          "core %d: statistics differ (cycles %llu across ranks, %llu alone)", c,
          (unsigned long long)shared->stats[c].cycles, (unsigned long long)alone->stats[c].cycles);
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "ring";
  rt_mpi *p = NULL;
  char err[512];
  /* 3 s for the hang; else room for rank 0's run alone while the others
   * wait to close */
  if (rt_mpi_open(1, !strcmp(mode, "hang") ? 3.0 : 60.0, &p, err, sizeof err)) {
    fprintf(stderr, "tpucc: %s\n", err);
    return 1;
  }
  tpurt_peers_t peers;
  rt_mpi_peers(p, &peers);
  int rank = rt_mpi_rank(p);
  static outcome shared, alone;
  const char *target = TARGET;
  int n = 8, count = 1024;
  void *tpub = NULL;
  size_t tpub_len = 0;
  const char *src = !strcmp(mode, "deadlock") ? ICI_DEADLOCK_SRC : ring_src;
  char trace[64] = "", trace1[64] = "";
  if (!strncmp(mode, "ar", 2)) {
    n = !strcmp(mode, "ar32ps") ? 32 : 8;
    target = n == 32 ? "v3-32" : "v3-8";
    count = COUNT;
    src = NULL;
    tpub = compile_ar(n, target, strstr(mode, "ps") != NULL, &tpub_len);
  }
  if (!strcmp(mode, "ring")) {
    snprintf(trace, sizeof trace, "/tmp/emu_mpi_%d.trace", (int)getpid());
    snprintf(trace1, sizeof trace1, "/tmp/emu_mpi_%d.trace1", (int)getpid());
  }
  if (!strcmp(mode, "hang") && rank == 1) sleep(30);
  if (!strcmp(mode, "die") && rank == 1) raise(SIGKILL);
  /* rank 0 names the trace file; the others write none */
  execute(target, src, tpub, tpub_len, n, count, &peers, trace[0] ? trace : NULL, &shared);
  if (shared.st == TPURT_IO_ERROR) rt_mpi_abort(p, shared.msg);
  if (rank == 0) {
    execute(target, src, tpub, tpub_len, n, count, NULL, trace1[0] ? trace1 : NULL, &alone);
    compare(&shared, &alone, n, count);
    if (!strcmp(mode, "ring")) {
      for (int c = 0; c < n; c++)
        CHECK(shared.stats[c].cycles == (c == 0 ? 273u : c == 4 ? 272u : 172u),
              "core %d: %llu cycles", c, (unsigned long long)shared.stats[c].cycles);
      size_t n1 = 0, n2 = 0;
      char *a = sorted_lines(trace, &n1), *b = sorted_lines(trace1, &n2);
      CHECK(a && b && n1 > 8 * 9 && n1 == n2 && !strcmp(a, b),
            "the trace across ranks (%zu lines) has other events than alone (%zu)", n1, n2);
      free(a);
      free(b);
      remove(trace1);
    }
    if (!strcmp(mode, "deadlock"))
      CHECK(shared.st == TPURT_RUNTIME_FAULT && strstr(shared.msg, "core 5: ") &&
                strstr(shared.msg, "deadlock across cores"),
            "deadlock: %s", shared.msg);
    else
      CHECK(shared.st == TPURT_OK, "%s", shared.msg);
    if (tpub) check_fold(&shared, n);
    printf("%s: %d cores, %llu cycles on core 0 across %d ranks\n", mode, n,
           (unsigned long long)shared.stats[0].cycles, rt_mpi_size(p));
  }
  if (trace[0] && rank == 0) remove(trace);
  free(tpub);
  if (failures) rt_mpi_abort(p, "mismatch");
  printf("rank %d: ok\n", rank);
  fflush(stdout);
  rt_mpi_close(p);
  return 0;
}
