/* emu_allreduce: an all-reduce of f32[count] over every core of a board or
 * pod, compiled by the TPU backend and run on the emulator's interconnect
 * (runtime/emu/ici.c), against the ring bound (docs/performance.md,
 * "All-reduce").
 *
 *   bench/emu_allreduce TARGET BYTES [ring|ps|direct|auto] [THREADS] [-v]
 *
 * BYTES is rounded down to whole f32 elements. Replica r's element i is
 * (r + 1) * (i % 7 + 1), a small integer, so the sum is exact in f32 in any
 * order: every core's result is checked against N(N+1)/2 * (i % 7 + 1)
 * before a figure is printed (a fast wrong lowering cannot report one).
 *
 * One line: target, cores, bytes, algorithm, host threads, emulated cycles
 * (the slowest core), microseconds, achieved bus bandwidth
 * 2(N-1)/N x bytes / time (GB/s), the ring bound in microseconds
 *   bound = 2(N-1)/N x bytes / ici_bw + 2(N-1) x ici_latency / clock
 * (every step of the ring crossing one hop), bound / time, the busiest
 * link's utilisation, and host seconds for the emulated run alone. -v adds
 * per core (cycles, vector and DMA busy cycles, ICI send and wait cycles)
 * and per used link (transfers, bytes, busy cycles, utilisation). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/tpu/tpu.h"
#include "emu.h"
#include "frontend/frontend.h"
#include "ici.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static tpub_image *compile(const char *target, int n, int64_t count, tpu_all_reduce alg) {
  char text[1024];
  snprintf(text, sizeof text,
           "HloModule ar, replica_count=%d\n"
           "red {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
           "  ROOT s = f32[] add(a, b)\n}\n"
           "ENTRY e {\n  x = f32[%lld] parameter(0)\n"
           "  ROOT r = f32[%lld] all-reduce(x), replica_groups={}, to_apply=red\n}\n",
           n, (long long)count, (long long)count);
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("allreduce", text, strlen(text), d);
  tpub_image *img = NULL;
  if (m) {
    tpu_options o;
    tpu_options_init(&o);
    o.target = target;
    o.all_reduce = alg;
    if (tpu_compile(m, &o, d, &img, NULL) != ST_OK) img = NULL;
  }
  if (!img) fprintf(stderr, "emu_allreduce: %s", diag_text(d));
  ir_module_destroy(m);
  diag_destroy(d);
  return img;
}

/* Prints per-core and per-link figures of a run of `cycles` cycles. */
static void verbose(const tgt_target *t, const emu_ici *ici, emu_machine **mc, const emu_stats *es,
                    int n, uint64_t cycles) {
  printf("  core  cycles  vector_busy  dma_busy  ici_send  ici_wait  sent_bytes\n");
  for (int c = 0; c < n; c++) {
    uint64_t dma = 0;
    for (int u = ISA_UNIT_DMA0; u < ISA_UNIT_COUNT; u++) dma += es[c].units[u].busy_cycles;
    printf("  %4d %7llu %12llu %9llu %9llu %9llu %11llu\n", c, (unsigned long long)es[c].cycles,
           (unsigned long long)es[c].units[ISA_UNIT_VECTOR].busy_cycles, (unsigned long long)dma,
           (unsigned long long)mc[c]->ist.send_cycles, (unsigned long long)mc[c]->ist.wait_cycles,
           (unsigned long long)mc[c]->ist.sent_bytes);
  }
  printf("  link                      transfers        bytes  busy_cycles  utilisation\n");
  for (int k = 0; k < emu_ici_nlinks(ici); k++) {
    const emu_ici_link_stats *l = emu_ici_link(ici, k);
    if (!l->transfers) continue;
    char name[64];
    emu_ici_link_name(t, k, name, sizeof name);
    printf("  %-24s %10llu %12llu %12llu %12.3f\n", name, (unsigned long long)l->transfers,
           (unsigned long long)l->bytes, (unsigned long long)l->busy_cycles,
           (double)l->busy_cycles / (double)cycles);
  }
}

/* Checks every core's result; 0 when all are right. */
static int check(uint8_t *const *hbm, const tpub_image *img, int n, int64_t count) {
  float tri = (float)n * (float)(n + 1) / 2;
  for (int r = 0; r < n; r++) {
    const float *y = (const float *)(const void *)(hbm[r] + img->results[0].hbm_offset);
    for (int64_t i = 0; i < count; i++)
      if (y[i] != tri * (float)(i % 7 + 1)) {
        fprintf(stderr, "emu_allreduce: core %d element %lld is %g, want %g\n", r, (long long)i,
                (double)y[i], (double)(tri * (float)(i % 7 + 1)));
        return 1;
      }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: emu_allreduce TARGET BYTES [ring|ps|direct|auto] [THREADS] [-v]\n");
    return 2;
  }
  const char *target = argv[1];
  int64_t count = atoll(argv[2]) / 4;
  int alg = argc > 3 ? tpu_all_reduce_parse(argv[3]) : TPU_AR_RING;
  if (alg < 0) {
    fprintf(stderr, "emu_allreduce: '%s' is not ring, ps, direct or auto\n", argv[3]);
    return 2;
  }
  int threads = argc > 4 ? atoi(argv[4]) : 1;
  bool v = argc > 5 && !strcmp(argv[5], "-v");
  tgt_target t;
  char why[256];
  if (count < 1 || tgt_parse(target, &t, why, sizeof why)) {
    fprintf(stderr, "emu_allreduce: bad target or size: %s\n", count < 1 ? "size" : why);
    return 2;
  }
  int n = t.ncores;
  tpub_image *img = compile(target, n, count, (tpu_all_reduce)alg);
  if (!img) return 1;
  emu_machine **mc = calloc((size_t)n, sizeof *mc);
  uint8_t **hbm = calloc((size_t)n, sizeof *hbm);
  emu_stats *es = calloc((size_t)n, sizeof *es);
  emu_fault *ef = calloc((size_t)n, sizeof *ef);
  int rc = !mc || !hbm || !es || !ef;
  for (int r = 0; !rc && r < n; r++) {
    mc[r] = emu_create(&t, NULL);
    hbm[r] = calloc(1, (size_t)img->hbm_bytes);
    if (!mc[r] || !hbm[r]) {
      rc = 1;
      break;
    }
    for (uint32_t i = 0; i < img->nconsts; i++)
      memcpy(hbm[r] + img->consts[i].hbm_offset, img->consts[i].data, (size_t)img->consts[i].size);
    float *x = (float *)(void *)(hbm[r] + img->params[0].hbm_offset);
    for (int64_t i = 0; i < count; i++) x[i] = (float)(r + 1) * (float)(i % 7 + 1);
  }
  emu_ici *ici = rc ? NULL : emu_ici_create(&t, mc, n, threads, NULL);
  if (!rc && !ici) rc = 1;
  if (rc) fprintf(stderr, "emu_allreduce: out of memory\n");
  double host = 0;
  if (!rc) {
    int who = 0;
    double t0 = now();
    rc = emu_ici_run(ici, img, hbm, 0, es, ef, &who);
    host = now() - t0;
    if (rc) fprintf(stderr, "emu_allreduce: core %d faulted at pc %u: %s\n", who, ef[who].pc, ef[who].reason);
  }
  if (!rc) rc = check(hbm, img, n, count);
  if (!rc) {
    uint64_t cycles = 0, busiest = 0;
    for (int r = 0; r < n; r++)
      if (es[r].cycles > cycles) cycles = es[r].cycles;
    for (int k = 0; k < emu_ici_nlinks(ici); k++)
      if (emu_ici_link(ici, k)->busy_cycles > busiest) busiest = emu_ici_link(ici, k)->busy_cycles;
    double bytes = (double)count * 4, clock = (double)t.clock_hz;
    double us = (double)cycles / clock * 1e6, moved = 2.0 * (n - 1) / n * bytes;
    double bound = (moved / (double)t.ici_bw + 2.0 * (n - 1) * t.ici_latency / clock) * 1e6;
    printf("%s\t%d\t%.0f\t%s\t%d\t%llu\t%.1f\t%.2f\t%.1f\t%.3f\t%.3f\t%.2f\n", target, n, bytes,
           tpu_all_reduce_name((tpu_all_reduce)alg), threads, (unsigned long long)cycles, us, moved / us * 1e-3, bound,
           bound / us, (double)busiest / (double)cycles, host);
    if (v) verbose(&t, ici, mc, es, n, cycles);
  }
  emu_ici_destroy(ici);
  for (int r = 0; r < n && mc; r++) {
    if (mc[r]) emu_destroy(mc[r]);
    if (hbm) free(hbm[r]);
  }
  free(mc);
  free(hbm);
  free(es);
  free(ef);
  tpub_free(img);
  return rc ? 1 : 0;
}
