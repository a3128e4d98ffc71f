/* diff_random.c: the random-graph differential test of the TPU numerics.
 *
 * Each graph of tests/common/randgraph (fixed seed) is evaluated by ir_eval
 * in TPU-numerics mode (the oracle, docs/numerics.md), then compiled at -O0
 * and at -O2 (the passes/ pipeline) for each target and run on the emulator
 * (backend/tpu + runtime/emu). Every result must equal the oracle bit for
 * bit: floats included (dots, convolutions, elementwise, reductions) and
 * integers and data movement exactly. The -O2 module is also re-evaluated
 * in TPU-numerics mode and must equal the oracle (the passes keep meaning).
 * Further families: attention blocks, row programs (layer norms,
 * softmaxes) feeding dots, and dots with their right operand in every
 * layout (stored [batch, N, K], transposed, batch dim last).
 * With LLVM built, a second family of graphs (every op family, dots and
 * convolutions at DEFAULT, HIGH and HIGHEST) runs on the CPU JIT under
 * CPU_NUMERICS_TPU at -O0 and -O2 and must equal the same oracle bit for
 * bit, NaN payloads included, once on the ordinary arguments and once with
 * specials (inf, -0, NaN payloads, subnormals). The sort family (sorts
 * of several operands with one- and two-level comparators, topk, the TopK
 * custom-call, keys with many ties) runs on the TPU targets and the CPU.
 *
 *   diff_random [graphs [seed]] [--targets=v3;v2;...] [--no-cpu] [--only=N]
 *               [--specials]   (arguments include inf, -0, NaN, subnormals)
 *
 * Defaults: 24 graphs, seed 1, targets v3, v2 and v3,mxu=64x64. A failing
 * graph is printed as HLO text with the first differing element.
 * DIFF_DEFAULT_ORACLE=1 in the environment uses the evaluator's default
 * numerics instead: most float graphs then fail, which shows that the
 * agreement is not vacuous. */
#include "tests/common/randgraph.h"
#include "tests/diff/diff_run.h"
#include "tests/diff/diff_same.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static base_status eval_tpu(const ir_module *m, ir_literal **args, arena *a, ir_literal **out,
                            char *err, size_t n) {
  return diff_eval(m, getenv("DIFF_DEFAULT_ORACLE") == NULL, args, rg_nparams(m), a, out, err, n);
}

/* m optimised at -O2 (a clone), or NULL with the reason printed. */
static ir_module *optimised(const ir_module *m, const char *what) {
  char err[512];
  ir_module *o = diff_optimise(m, 2, NULL, err, sizeof err);
  if (!o) fprintf(stderr, "%s: %s\n", what, err);
  return o;
}

/* A target's result against the oracle's; false with the reason printed. */
static bool matches(diff_outcome r, const char *err, const ir_literal *ref, const ir_literal *got,
                    const char *what, const char *target) {
  char why[256];
  if (r != DIFF_RAN) {
    fprintf(stderr, "%s on %s: %s failed: %s\n", what, target,
            r == DIFF_REFUSED ? "compile" : "execution", err);
    return false;
  }
  if (!diff_same(ref, got, false, why, sizeof why)) {
    fprintf(stderr, "%s on %s: %s\n", what, target, why);
    return false;
  }
  return true;
}

static bool run_tpu(const ir_module *m, const char *target, ir_literal **args, arena *a,
                    const ir_literal *ref, const char *what) {
  char err[1024];
  ir_literal *got = NULL;
  diff_outcome r = diff_run_tpu(m, target, args, rg_nparams(m), a, &got, err, sizeof err);
  return matches(r, err, ref, got, what, target);
}

#ifdef HAVE_LLVM
static bool run_cpu(const ir_module *m, ir_literal **args, arena *a, const ir_literal *ref,
                    const char *what) {
  char err[1024];
  ir_literal *got = NULL;
  diff_outcome r = diff_run_cpu(m, CPU_NUMERICS_TPU, args, rg_nparams(m), a, &got, err, sizeof err);
  return matches(r, err, ref, got, what, "cpu (tpu numerics)");
}
#endif

/* One graph: the oracle, then every target at -O0 and -O2 (cpu: the CPU
 * JIT instead of the emulator). */
/* What to run: the emulator targets, and the argument kind. */
typedef struct cfg {
  const char *targets[8];
  int ntargets;
  bool specials; /* --specials: inf, -0, NaN, subnormal arguments */
} cfg;

static bool one_graph(uint64_t seed, int i, const rg_options *ro, const cfg *cf, bool cpu) {
  ir_module *m = rg_generate(seed, (uint64_t)i, ro);
  arena *a = arena_create();
  ir_literal **args = rg_args_ex(m, a, seed * 100003u + (uint64_t)i, cf->specials);
  char what[80], err[512], why[256];
  snprintf(what, sizeof what, "%sgraph %d (seed %llu)", cpu ? "cpu " : "", i,
           (unsigned long long)seed);
  ir_literal *ref = NULL, *ref2 = NULL;
  bool ok = true;
  ir_module *o2 = NULL;
  if (eval_tpu(m, args, a, &ref, err, sizeof err) != ST_OK) {
    fprintf(stderr, "%s: oracle failed: %s\n", what, err);
    ok = false;
  }
  if (ok && !(o2 = optimised(m, what))) ok = false;
  if (ok) {
    if (eval_tpu(o2, args, a, &ref2, err, sizeof err) != ST_OK) {
      fprintf(stderr, "%s: oracle on the -O2 module failed: %s\n", what, err);
      ok = false;
    } else if (!diff_same(ref, ref2, false, why, sizeof why)) {
      fprintf(stderr, "%s: -O2 module under the oracle: %s\n", what, why);
      ok = false;
    }
  }
  for (int lvl = 0; ok && lvl < 2; lvl++) {
    const ir_module *mm = lvl ? o2 : m;
    char w2[96];
    snprintf(w2, sizeof w2, "%s at -O%d", what, lvl ? 2 : 0);
#ifdef HAVE_LLVM
    if (cpu) {
      ok = run_cpu(mm, args, a, ref, w2);
      continue;
    }
#endif
    for (int t = 0; ok && t < cf->ntargets; t++) ok = run_tpu(mm, cf->targets[t], args, a, ref, w2);
  }
  if (!ok) {
    fprintf(stderr, "---- %s as HLO:\n", what);
    diff_print_module(m);
  }
  ir_module_destroy(o2);
  ir_module_destroy(m);
  arena_destroy(a);
  return ok;
}

int main(int argc, char **argv) {
  int n = 24, only = -1, pos = 0;
  uint64_t seed = 1;
  bool cpu = true;
  cfg cf = {{"v3", "v2", "v3,mxu=64x64"}, 3, false};
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--targets=", 10)) {
      cf.ntargets = 0;
      char *s = argv[i] + 10;
      while (*s && cf.ntargets < 8) {
        cf.targets[cf.ntargets++] = s;
        char *e = strchr(s, ';');
        if (!e) break;
        *e = 0;
        s = e + 1;
      }
    } else if (!strcmp(argv[i], "--specials")) {
      cf.specials = true;
    } else if (!strcmp(argv[i], "--no-cpu")) {
      cpu = false;
    } else if (!strncmp(argv[i], "--only=", 7)) {
      only = atoi(argv[i] + 7);
    } else if (pos == 0) {
      n = atoi(argv[i]);
      pos++;
    } else {
      seed = strtoull(argv[i], NULL, 10);
    }
  }
  rg_options ro;
  rg_options_init(&ro);
  ro.ops = RG_ALL;
  int bad = 0, runs = 0;
  for (int i = 0; i < n; i++) {
    if (only >= 0 && i != only) continue;
    runs++;
    if (!one_graph(seed, i, &ro, &cf, false)) bad++;
  }
  /* The attention family: every graph starts with an attention block
   * (fused into one kernel with the scores in VMEM, backend/tpu/attention.c,
   * where the target allows) followed by a few elementwise and data-movement
   * steps; larger values for its [B, H, Sq, Sk] scores. */
  rg_options ra = ro;
  ra.ops = RG_ATTN | RG_ARITH | RG_MOVE;
  ra.steps = 2;
  ra.max_elems = 200000;
  for (int i = 0; i < (n + 2) / 3; i++) {
    if (only >= 0 && i != only) continue;
    runs++;
    if (!one_graph(seed + 2000003u, i, &ra, &cf, false)) bad++;
  }
  /* The row family: layer norms, RMS norms and softmaxes (row fusions,
   * one kernel with the rows in VMEM, backend/tpu/rows.c) and dots of
   * their results with f32 weights, then a few more steps; also on a
   * target with 64 accumulator rows, so that weights are converted to
   * bf16 once before the matmul (lower_ops.c: weight_bf16). */
  rg_options rn = ro;
  rn.ops = RG_NORM | RG_ARITH | RG_MOVE | RG_DOT;
  rn.steps = 3;
  cfg cn = cf;
  if (cn.ntargets < 8) cn.targets[cn.ntargets++] = "v3,acc_rows=64";
  for (int i = 0; i < n; i++) {
    if (only >= 0 && i != only) continue;
    runs++;
    if (!one_graph(seed + 3000017u, i, &rn, &cn, false)) bad++;
  }
  /* The weight-layout family: dots whose right operand is stored
   * [batch, N, K] (the matmul loads its tiles transposed, mwtt), is the
   * transpose of such a parameter (folded into the dot at -O2), or has
   * its batch dim last; also on a target with so little VMEM that K is
   * chunked. */
  rg_options rw = ro;
  rw.ops = RG_DOT | RG_ARITH | RG_MOVE;
  rw.steps = 4;
  rw.dot_layouts = true;
  cfg cw = cf;
  if (cw.ntargets < 8) cw.targets[cw.ntargets++] = "v2,vmem=192KiB";
  for (int i = 0; i < n; i++) {
    if (only >= 0 && i != only) continue;
    runs++;
    if (!one_graph(seed + 5000011u, i, &rw, &cw, false)) bad++;
  }
  /* The indexing family: gathers, scatters, dynamic slices and
   * select-and-scatter with random dimension numbers and out-of-range
   * indices among elementwise and data-movement steps, on every target. */
  rg_options rx = ro;
  rx.ops = RG_INDEX | RG_ARITH | RG_MOVE | RG_INT;
  for (int i = 0; i < n; i++) {
    if (only >= 0 && i != only) continue;
    runs += 1 + cpu;
    if (!one_graph(seed + 6000011u, i, &rx, &cf, false)) bad++;
#ifdef HAVE_LLVM
    if (cpu && !one_graph(seed + 6000011u, i, &rx, &cf, true)) bad++;
#endif
  }
  /* The control family: loops with data-dependent trip counts,
   * conditionals (indices out of range included), call and map
   * (tests/common/randgraph.h, RG_CONTROL), on the TPU targets and, with
   * LLVM, the CPU. */
  rg_options rk = ro;
  rk.ops = RG_CONTROL | RG_ARITH | RG_MOVE | RG_REDUCE;
  rk.steps = 4;
  for (int i = 0; i < n; i++) {
    if (only >= 0 && i != only) continue;
    runs++;
    if (!one_graph(seed + 6000023u, i, &rk, &cf, false)) bad++;
#ifdef HAVE_LLVM
    runs += cpu;
    if (cpu && !one_graph(seed + 6000023u, i, &rk, &cf, true)) bad++;
#endif
  }
#ifdef HAVE_LLVM
  /* The CPU family: every op family at every precision, on ordinary and
   * on special arguments. */
  rg_options rc = ro;
  cfg cs = cf;
  cs.specials = true;
  for (int i = 0; cpu && i < n; i++) {
    if (only >= 0 && i != only) continue;
    runs += 2;
    if (!one_graph(seed + 1000003u, i, &rc, &cf, true)) bad++;
    if (!one_graph(seed + 4000037u, i, &rc, &cs, true)) bad++;
  }
#endif
  /* The sort family on the TPU targets (and the cpu): ties everywhere. */
  rg_options rs = ro;
  rs.ops = RG_SORT;
  for (int i = 0; i < (n + 2) / 3; i++) {
    if (only >= 0 && i != only) continue;
    runs++;
    if (!one_graph(seed + 6000011u, i, &rs, &cf, false)) bad++;
#ifdef HAVE_LLVM
    runs += cpu;
    if (cpu && !one_graph(seed + 6000011u, i, &rs, &cf, true)) bad++;
#endif
  }
  printf("diff_random: %d graphs (seed %llu), %d failures\n", runs, (unsigned long long)seed,
         bad);
  return bad ? 1 : 0;
}
