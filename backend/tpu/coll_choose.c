/* coll_choose.c: the all-reduce algorithms' names and the cost model that
 * chooses between the ring and direct exchange (docs/tpu-backend.md,
 * "Collectives"). */
#include <string.h>

#include "backend/tpu/tpu.h"
#include "ici.h" /* emu_ici_route: the interconnect's routes */

static const char *const names[] = {[TPU_AR_AUTO] = "auto", [TPU_AR_RING] = "ring",
                                    [TPU_AR_PS] = "ps", [TPU_AR_DIRECT] = "direct"};

const char *tpu_all_reduce_name(tpu_all_reduce a) {
  return (unsigned)a < sizeof names / sizeof *names ? names[a] : "?";
}

int tpu_all_reduce_parse(const char *s) {
  for (int a = 0; a < (int)(sizeof names / sizeof *names); a++)
    if (!strcmp(s, names[a])) return a;
  return -1;
}

/* Modelled cycles of the two one-program all-reduces of bytes over the n
 * cores of t, from the target's link figures and constants fitted to the
 * emulator's runs of v3-8, v3-32 and v3-128 (bench/emu_allreduce,
 * docs/performance.md "All-reduce"):
 *
 *   ring:   2(n-1) (L + STEP) + 2(n-1) c / bpc
 *   direct: PHASES L D + PER_CORE (n-1) + BASE + 2 CONTEND max(M, n-1) c / bpc
 *
 * with c = bytes / n the chunk, bpc the link's bytes per cycle, L the hop
 * latency, D the longest route from a core (hops), and M the most chunks
 * one link carries in a phase of the direct exchange (every core sends
 * one to every other; by the torus' symmetry, the routes from core 0
 * times n over the links of each direction). STEP is the ring's work per
 * step besides the hop (a barrier, the fold's start); the direct exchange
 * pays the longest route's latency in each of its PHASES (readiness,
 * reduce-scatter, all-gather), PER_CORE for its three puts and a third of
 * a fold per other core, and CONTEND for routes held whole while their
 * links are shared (1.15-1.42 in the runs). */
enum { STEP = 200, PHASES = 3, PER_CORE = 80, BASE = 270 };
#define CONTEND 1.35

static void model(const tgt_target *t, int n, uint64_t bytes, double *ring, double *direct) {
  int per = TGT_ICI_LINKS + t->cores_per_chip, chips = t->topo_x * t->topo_y;
  int route[EMU_ICI_MAX_HOPS], diameter = 0;
  double load[TGT_ICI_LINKS + 8] = {0}, most = 0;
  for (int d = 1; d < n; d++) {
    int h = emu_ici_route(t, 0, d, route, EMU_ICI_MAX_HOPS);
    if (h > diameter) diameter = h;
    for (int i = 0; i < h; i++)
      if (route[i] % per < TGT_ICI_LINKS + 8) load[route[i] % per] += 1;
  }
  for (int k = 0; k < per && k < TGT_ICI_LINKS + 8; k++) {
    /* every chip's link of direction k; on-chip: one link per core */
    double links = k < TGT_ICI_LINKS ? chips : n;
    double m = load[k] * n / links;
    if (m > most) most = m;
  }
  if (most < n - 1) most = n - 1;
  double L = t->ici_latency, bpc = (double)t->ici_bw / (double)t->clock_hz;
  double c = (double)bytes / n;
  *ring = 2.0 * (n - 1) * (L + STEP) + 2.0 * (n - 1) * c / bpc;
  *direct = PHASES * L * diameter + (double)PER_CORE * (n - 1) + BASE +
            2.0 * CONTEND * most * c / bpc;
}

tpu_all_reduce tpu_all_reduce_choose(const tgt_target *t, int n, uint64_t bytes, double est[2]) {
  est[0] = est[1] = 0;
  if (n < 2 || n > t->topo_x * t->topo_y * t->cores_per_chip) return TPU_AR_RING;
  model(t, n, bytes, &est[0], &est[1]);
  return est[1] < est[0] ? TPU_AR_DIRECT : TPU_AR_RING;
}
