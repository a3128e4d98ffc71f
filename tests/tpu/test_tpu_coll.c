/* test_tpu_coll.c: all-reduce over the 8 replicas of a v3-8 and the 32 of
 * a v3-32 pod, one per core, lowered as a ring (reduce-scatter +
 * all-gather; over all replicas in order, one program for every core) and
 * as a parameter server, against the evaluator's replicated run (ir_eval_replicated) and
 * an oracle that folds in base/coll.h's order (chunk c: members c+1, ...,
 * c) written here from the contract, bit for bit. Operands mix
 * magnitudes (1e8 and small values) so that another order changes the
 * bits; the test checks that one does (the order of group members 0..n-1),
 * so it could fail. Groups: all replicas; {0,2,4,6},{1,3,5,7} listed in a
 * rotated order; element counts that do not divide into the group. The
 * ring's program for 32 replicas is hardly larger than for 8 (code and
 * SMEM do not grow with the replica count).
 *
 *   test_tpu_coll        exit 0 when every case passed (and main's
 *                        measurement form) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/tpu/tpu.h"
#include "base/coll.h"
#include "emu.h"
#include "ici.h"
#include "tests/tpu/coll_operand.h"
#include "tests/tpu/tpu_check.h"

enum { NC = 32 }; /* the most replicas of a case */
static int nc = 8;  /* replicas (and cores) of the target */
static const char *target = "v3-8";
static uint32_t last_code, last_smem; /* words of the last case's program */

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

static float fmax_nan(float a, float b) { return a > b ? a : b; }

/* The group of replica r (room for NC), its size; position into *pos. */
static int group(const int *groups, int ngroups, int gsize, int r, int *g, int *pos) {
  if (!ngroups) {
    for (int i = 0; i < nc; i++) g[i] = i;
    *pos = r;
    return nc;
  }
  for (int k = 0; k < ngroups; k++)
    for (int j = 0; j < gsize; j++)
      if (groups[k * gsize + j] == r) {
        memcpy(g, groups + k * gsize, (size_t)gsize * sizeof *g);
        *pos = j;
        return gsize;
      }
  return 0;
}

/* The evaluator's replicated run (ir_eval_replicated) of m, replica r's
 * parameter holding operand(r, .): eargs and eargv filled, results in
 * eouts. */
static base_status eval_replicas(const char *name, const ir_module *m, arena *ea, int64_t count,
                                 ir_literal *eargs[][1], ir_literal *const **eargv,
                                 ir_literal **eouts) {
  const ir_comp *entry = &m->comps.v[m->entry];
  for (int r = 0; r < nc; r++) {
    eargs[r][0] = ir_literal_create(ea, entry->insts.v[entry->params[0]].shape);
    for (int64_t i = 0; i < count; i++) ((float *)eargs[r][0]->data)[i] = operand(r, i);
    eargv[r] = eargs[r];
  }
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  char eerr[512];
  base_status est = ir_eval_replicated(m, &eo, nc, eargv, 1, ea, eouts, eerr, sizeof eerr);
  CHECK(est == ST_OK, "%s: evaluator: %s", name, eerr);
  return est;
}

/* Compiles text for target, runs it on its nc cores (replica r's parameter
 * from operand(r, .)) and compares every replica's result with the
 * oracle. `max`: the reduction is maximum, else sum. */
static void run_case(const char *name, const char *text, int64_t count, const int *groups,
                     int ngroups, int gsize, bool max, tpu_all_reduce alg) {
  bool ps = alg == TPU_AR_PS;
  ir_module *m = tc_parse(name, text);
  diag *d = diag_create();
  tpu_options o;
  tpu_options_init(&o);
  o.target = target;
  o.explain = true;
  o.all_reduce = alg;
  tpub_image *img = NULL;
  tpu_compile_info info;
  memset(&info, 0, sizeof info);
  base_status st = tpu_compile(m, &o, d, &img, &info);
  CHECK(st == ST_OK, "%s: compile: %s", name, diag_text(d));
  if (st != ST_OK) {
    diag_destroy(d);
    ir_module_destroy(m);
    return;
  }
  static const char *const how[] = {[TPU_AR_RING] = "ring reduce-scatter",
                                    [TPU_AR_PS] = "parameter server",
                                    [TPU_AR_DIRECT] = "direct exchange"};
  CHECK(info.explain && strstr(info.explain, how[alg]),
        "%s: --explain does not name the algorithm: %s", name, info.explain ? info.explain : "");
  tgt_target t;
  last_code = img->ncode;
  last_smem = img->nsmem;
  tgt_parse(target, &t, NULL, 0);
  emu_machine *mc[NC];
  uint8_t *hbm[NC];
  emu_stats es[NC];
  emu_fault ef[NC];
  for (int r = 0; r < nc; r++) {
    mc[r] = emu_create(&t, NULL);
    hbm[r] = calloc(1, (size_t)img->hbm_bytes);
    for (uint32_t i = 0; i < img->nconsts; i++)
      memcpy(hbm[r] + img->consts[i].hbm_offset, img->consts[i].data, (size_t)img->consts[i].size);
    float *x = (float *)(void *)(hbm[r] + img->params[0].hbm_offset);
    for (int64_t i = 0; i < count; i++) x[i] = operand(r, i);
  }
  emu_ici *ici = emu_ici_create(&t, mc, nc, 2, NULL);
  int who = 0;
  int rc = emu_ici_run(ici, img, hbm, 100000000, es, ef, &who);
  CHECK(rc == 0, "%s: core %d faulted at pc %u: %s", name, who, ef[who].pc, ef[who].reason);
  /* The evaluator's replicated run (ir_eval_replicated) on the same inputs. */
  arena *ea = arena_create();
  ir_literal *eargs[NC][1], *const *eargv[NC], *eouts[NC];
  base_status est = eval_replicas(name, m, ea, count, eargs, eargv, eouts);
  for (int r = 0; rc == 0 && est == ST_OK && r < nc; r++)
    CHECK(!memcmp(eouts[r]->data, hbm[r] + img->results[0].hbm_offset, (size_t)count * 4),
          "%s: replica %d differs from the evaluator", name, r);
  /* The same through libtpurt's public API (tpu_execute_replicas ->
   * tpurt_program_execute_replicas), on the ring programs. */
  if (!ps && est == ST_OK) {
    ir_literal *touts[NC];
    char terr[512];
    base_status tst = tpu_execute_replicas(img, target, m, nc, eargv, 1, ea, touts, terr,
                                           sizeof terr);
    CHECK(tst == ST_OK, "%s: tpu_execute_replicas: %s", name, terr);
    for (int r = 0; tst == ST_OK && r < nc; r++)
      CHECK(!memcmp(touts[r]->data, eouts[r]->data, (size_t)count * 4),
            "%s: replica %d through libtpurt differs from the evaluator", name, r);
    tst = tpu_execute_replicas(img, "v3", m, nc, eargv, 1, ea, touts, terr, sizeof terr);
    char want[64];
    snprintf(want, sizeof want, "%d replicas asked for; target v3 runs 1 cores", nc);
    CHECK(tst == ST_INVALID_ARGUMENT && strstr(terr, want), "%s: %d replicas on v3: %s", name, nc,
          terr);
  }
  arena_destroy(ea);
  int differs = 0;
  for (int r = 0; rc == 0 && r < nc; r++) {
    int g[NC], pos, n = group(groups, ngroups, gsize, r, g, &pos);
    const float *y = (const float *)(const void *)(hbm[r] + img->results[0].hbm_offset);
    int bad = 0;
    for (int c = 0; c < n; c++) {
      int64_t lo, hi;
      coll_chunk(count, n, c, &lo, &hi);
      for (int64_t i = lo; i < hi; i++) {
        float acc = operand(g[coll_term(n, c, 0)], i), naive = operand(g[0], i);
        for (int k = 1; k < n; k++) {
          float v = operand(g[coll_term(n, c, k)], i), w = operand(g[k], i);
          acc = max ? fmax_nan(acc, v) : acc + v;
          naive = max ? fmax_nan(naive, w) : naive + w;
        }
        if (memcmp(&acc, &y[i], 4) && bad++ < 3)
          CHECK(0, "%s: replica %d element %lld: got %a, want %a", name, r, (long long)i,
                (double)y[i], (double)acc);
        differs |= memcmp(&acc, &naive, 4) != 0;
      }
    }
  }
  /* (two terms of a sum give the same bits in either order) */
  CHECK(max || count < 100 || nc < 3 || differs, "%s: the operands do not tell the fold orders "
        "apart", name);
  if (rc == 0)
    printf("%s: %s, %llu cycles on core 0\n%s", name, tpu_all_reduce_name(alg),
           (unsigned long long)es[0].cycles, info.explain);
  emu_ici_destroy(ici);
  for (int r = 0; r < nc; r++) {
    emu_destroy(mc[r]);
    free(hbm[r]);
  }
  tpub_free(img);
  tpu_info_free(&info);
  diag_destroy(d);
  ir_module_destroy(m);
}

/* A reduce-scatter or all-gather (text) of f32[in_count] per replica into
 * f32[out_count], on target's nc cores, against the evaluator's replicated
 * run bit for bit (its fold order is base/coll.h's: tests/eval). */
static void run_half(const char *name, const char *text, int64_t in_count, int64_t out_count) {
  ir_module *m = tc_parse(name, text);
  diag *d = diag_create();
  tpu_options o;
  tpu_options_init(&o);
  o.target = target;
  tpub_image *img = NULL;
  base_status st = tpu_compile(m, &o, d, &img, NULL);
  CHECK(st == ST_OK, "%s: compile: %s", name, diag_text(d));
  arena *ea = arena_create();
  ir_literal *eargs[NC][1], *const *eargv[NC], *eouts[NC], *touts[NC];
  base_status est = eval_replicas(name, m, ea, in_count, eargs, eargv, eouts);
  char err[512];
  if (st == ST_OK && est == ST_OK) {
    base_status tst = tpu_execute_replicas(img, target, m, nc, eargv, 1, ea, touts, err, sizeof err);
    CHECK(tst == ST_OK, "%s: tpu_execute_replicas: %s", name, err);
    for (int r = 0; tst == ST_OK && r < nc; r++)
      CHECK(!memcmp(touts[r]->data, eouts[r]->data, (size_t)out_count * 4),
            "%s: replica %d differs from the evaluator", name, r);
  }
  arena_destroy(ea);
  tpub_free(img);
  diag_destroy(d);
  ir_module_destroy(m);
}

/* reduce-scatter (rs) or all-gather of f32[rows, cols] along dimension
 * dim; rows or cols is the per-replica (all-gather) or whole
 * (reduce-scatter) extent. */
static char *half_module(bool rs, int rows, int cols, int dim, const char *groups) {
  static char buf[1024];
  int orows = dim == 0 ? (rs ? rows / nc : rows * nc) : rows;
  int ocols = dim == 1 ? (rs ? cols / nc : cols * nc) : cols;
  snprintf(buf, sizeof buf,
           "HloModule h, replica_count=%d\n"
           "red {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
           "  ROOT s = f32[] add(a, b)\n}\n"
           "ENTRY e {\n  x = f32[%d,%d] parameter(0)\n"
           "  ROOT r = f32[%d,%d] %s(x), replica_groups=%s, dimensions={%d}%s\n}\n",
           nc, rows, cols, orows, ocols, rs ? "reduce-scatter" : "all-gather", groups, dim,
           rs ? ", to_apply=red" : "");
  return buf;
}

static char *module(int64_t count, const char *groups, bool max) {
  static char buf[1024];
  snprintf(buf, sizeof buf,
           "HloModule ar, replica_count=%d\n"
           "red {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
           "  ROOT s = f32[] %s(a, b)\n}\n"
           "ENTRY e {\n  x = f32[%lld] parameter(0)\n"
           "  ROOT r = f32[%lld] all-reduce(x), replica_groups=%s, to_apply=red\n}\n",
           nc, max ? "maximum" : "add", (long long)count, (long long)count, groups);
  return buf;
}

/*   test_tpu_coll COUNT    only a sum over all 8 replicas of f32[COUNT],
 *                          both schemes (a measurement) */
int main(int argc, char **argv) {
  static const int halves[] = {6, 0, 2, 4, 3, 5, 7, 1};
  if (argc > 1) {
    int64_t n = atoll(argv[1]);
    for (int a = TPU_AR_RING; a <= TPU_AR_DIRECT && n > 0; a++)
      run_case("sum_all", module(n, "{}", false), n, NULL, 0, 0, false, (tpu_all_reduce)a);
    return failures ? 1 : 0;
  }
  for (int a = TPU_AR_RING; a <= TPU_AR_PS; a++) {
    tpu_all_reduce ps = (tpu_all_reduce)a;
    run_case("sum_all_1000", module(1000, "{}", false), 1000, NULL, 0, 0, false, ps);
    run_case("sum_all_5", module(5, "{}", false), 5, NULL, 0, 0, false, ps);
    run_case("sum_halves_4099", module(4099, "{{6,0,2,4},{3,5,7,1}}", false), 4099, halves, 2, 4,
             false, ps);
    run_case("max_halves_300", module(300, "{{6,0,2,4},{3,5,7,1}}", true), 300, halves, 2, 4, true,
             ps);
  }
  /* One program for every core: chunks of ceil(count / n) elements, the
   * last element of a short chunk copied again (counts 4099 and 1001 do
   * not divide by 8 or 32). */
  run_case("sum_all_4099", module(4099, "{}", false), 4099, NULL, 0, 0, false, TPU_AR_RING);
  uint32_t code8 = last_code, smem8 = last_smem;
  run_case("max_all_1001", module(1001, "{}", true), 1001, NULL, 0, 0, true, TPU_AR_RING);
  /* Direct exchange: every fold tail (n - 2 mod 3 slots after the
   * four-term folds), the fewest elements (one per core), sums and
   * maxima. */
  run_case("direct_sum_all_4099", module(4099, "{}", false), 4099, NULL, 0, 0, false, TPU_AR_DIRECT);
  run_case("direct_max_all_1001", module(1001, "{}", true), 1001, NULL, 0, 0, true, TPU_AR_DIRECT);
  run_case("direct_sum_all_8", module(8, "{}", false), 8, NULL, 0, 0, false, TPU_AR_DIRECT);
  for (nc = 2; nc < 8; nc++) {
    char spec[32];
    snprintf(spec, sizeof spec, "v3-8,ncores=%d", nc);
    target = spec;
    run_case("direct_sum_all_1001", module(1001, "{}", false), 1001, NULL, 0, 0, false,
             TPU_AR_DIRECT);
  }
  nc = 32;
  target = "v3-32";
  run_case("pod_sum_all_4099", module(4099, "{}", false), 4099, NULL, 0, 0, false, TPU_AR_RING);
  CHECK(last_code <= code8 + code8 / 10 && last_smem <= smem8 + 40,
        "the ring's program grows with the replicas: %u code and %u SMEM words for 8, %u and %u "
        "for 32", code8, smem8, last_code, last_smem);
  static int iota[32], halves32[32];
  char listed[256] = "{{", *w = listed + 2;
  for (int r = 0; r < 32; r++) {
    iota[r] = r;
    halves32[r] = (r + 16) % 32; /* {16..31}, {0..15} */
    w += sprintf(w, r ? ",%d" : "%d", r);
  }
  strcpy(w, "}}");
  uint32_t code32 = last_code;
  run_case("pod_sum_listed_1000", module(1000, listed, false), 1000, iota, 1, 32, false, TPU_AR_RING);
  run_case("pod_sum_halves_777", module(777, "{{16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31},"
                                               "{0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15}}", false),
           777, halves32, 2, 16, false, TPU_AR_RING);
  /* Listed groups of one size are one program too (the groups in an SMEM
   * table), not code per core. */
  CHECK(last_code <= code32 + code32 / 10, "the ring over listed groups grows with the replicas: %u "
        "code words for 32 replicas in two groups, %u in one", last_code, code32);
  run_case("pod_sum_all_4099", module(4099, "{}", false), 4099, NULL, 0, 0, false, TPU_AR_PS);
  run_case("pod_direct_sum_all_4099", module(4099, "{}", false), 4099, NULL, 0, 0, false,
           TPU_AR_DIRECT);
  run_case("pod_direct_max_all_333", module(333, "{}", true), 333, NULL, 0, 0, true, TPU_AR_DIRECT);
  /* The ring's halves: slices of 125 x 3 and 1 x 7 elements per member. */
  run_half("pod_reduce_scatter", half_module(true, 32 * 125, 3, 0, "{}"), 32 * 125 * 3, 125 * 3);
  run_half("pod_all_gather", half_module(false, 1, 7, 1, listed), 7, 32 * 7);
  nc = 8;
  target = "v3-8";
  run_half("reduce_scatter", half_module(true, 1, 8 * 9001, 1, "{}"), 8 * 9001, 9001);
  run_half("all_gather", half_module(false, 333, 2, 0, "{}"), 666, 8 * 666);
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures ? 1 : 0;
}
