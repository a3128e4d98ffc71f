/* diff_ops.c: every op of ir/ops.def, with parameters, constants, splats
 * and computed values as its operands and as the root, in a tuple root or
 * feeding another op, on interp, cpu and v3 (tests/common/opgen.h).
 *
 * For each case the oracle is ir_eval, in default numerics and in TPU
 * numerics. The module is also run through the -O2 pipeline, and the
 * optimised module under the oracle must give the same results (default
 * numerics NaN payloads aside, TPU numerics bit for bit except where
 * constfold, which folds with the default evaluator, makes the difference:
 * counted). Then, at -O0 and at -O2 (against the oracle of that module):
 *  - cpu, strict numerics: equal to the default evaluator bit for bit,
 *    NaN payloads aside (docs/cpu-backend.md, "strict");
 *  - cpu, TPU numerics: equal to the evaluator's TPU mode bit for bit, NaN
 *    payloads included (docs/numerics.md section 5);
 *  - v3 (emulator): equal to the evaluator's TPU mode bit for bit, dots
 *    and convolutions included (docs/numerics.md section 4: against the
 *    TPU mode no tolerance is needed; the one documented difference,
 *    reduce-window's init folded at padding positions, is avoided by
 *    opgen, which pads only with the reducer's identity).
 * A target may refuse a module only with a clean error and for a reason
 * in `refusals` (documented limits); anything else, an execution failure
 * or a difference fails the case and prints its module as HLO. Known bugs
 * not yet fixed are in `bugs`, each naming the reproducer filed with its
 * report: a difference
 * they explain is counted against them instead; the summary counts every
 * refusal and known-bug difference by reason.
 *
 *   diff_ops [cases [seed]] [--from=N] [--only=N] [--fork] [--list]
 *            [--no-cpu] [--no-cpu-tpu] [--no-v3] [--no-known-bugs]
 *
 * Defaults: 4 x og_nops() cases (rounds 0 to 3: every op, each operand
 * slot from each of the four sources, every use), seed 1. A longer run:
 * `diff_ops 3000 7 --fork` (--fork runs each case in a child process, so
 * a crash is reported with its module and the run goes on; --list prints
 * what each case tests without running it; --no-known-bugs fails the
 * known bugs' refusals and differences too, to check a fix). */
#include "tests/common/opgen.h"
#include "tests/diff/diff_run.h"
#include "tests/diff/diff_same.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- what a module holds ------------------------------------------------- */

/* Whether an instruction of any computation of m satisfies want. */
static bool any_inst(const ir_module *m, bool (*want)(const ir_comp *, const ir_inst *)) {
  for (int c = 0; c < m->comps.n; c++) {
    const ir_comp *cp = &m->comps.v[c];
    for (int i = 0; i < cp->insts.n; i++)
      if (!cp->insts.v[i].dead && want(cp, &cp->insts.v[i])) return true;
  }
  return false;
}

static bool is_int_power(const ir_comp *c, const ir_inst *in) {
  (void)c;
  return in->op == IR_OP_POWER && !ir_type_is_float(in->shape->type);
}
static bool is_trig_hyp(const ir_comp *c, const ir_inst *in) {
  (void)c;
  return in->op >= IR_OP_TAN && in->op <= IR_OP_ERF;
}
static bool has_trig_hyp(const ir_module *m, const og_case *k) {
  (void)k;
  return any_inst(m, is_trig_hyp);
}
static bool has_int_power(const ir_module *m, const og_case *k) {
  (void)k;
  return any_inst(m, is_int_power);
}

/* ---- the targets ------------------------------------------------------- */

/* The targets run, and T_PASSES for known bugs of the -O2 pipeline (its
 * module under the TPU oracle differs from the original's). */
typedef enum tgt { T_CPU_STRICT, T_CPU_TPU, T_V3, NTGT, T_PASSES = NTGT } tgt;
static const char *const tgt_name[NTGT + 1] = {"cpu strict", "cpu tpu", "v3", "-O2 passes"};

/* A refusal the test accepts: target t may refuse a module for which
 * applies holds, with needle in its message. Documented limits have no
 * bug; the others are known bugs (an undocumented refusal of a module the
 * evaluator runs), each naming its reproducer, until fixed or documented. */
typedef struct refusal {
  tgt t;
  bool (*applies)(const ir_module *m, const og_case *k);
  const char *needle;
  const char *why;
  const char *bug; /* NULL: documented */
} refusal;

static const refusal refusals[] = {
    {T_V3, has_int_power, "power", "v3: integer power is not lowered (docs/tpu-backend.md)",
     NULL},
    {T_V3, has_trig_hyp, "no vector-unit sequence",
     "v3: tan, acos, ..., erf are not lowered (docs/tpu-backend.md)", NULL},
};
enum { NREFUSALS = COUNTOF(refusals) };

/* A known bug not fixed yet: on target t, a module for which applies
 * holds still runs (a refusal, failure or crash still fails), but a
 * difference from the oracle is counted against the bug instead of
 * failing the case. */
typedef struct bug {
  tgt t;
  bool (*applies)(const ir_module *m, const og_case *k);
  const char *why; /* names the bug and its reproducer */
} bug;

static const bug bugs[] = {
    {NTGT, NULL, NULL},
};
enum { NBUGS = COUNTOF(bugs) - 1 };

/* The -O2 pipeline without constfold (passes/pipeline.c, less that one
 * pass): tells a difference that constant folding makes apart from any
 * other. */
static const char o2_without_constfold[] =
    "simplify,cse,simplify,transpose-folding,dce,fusion,multi-output-fusion,dce,layout";

/* ---- counts (shared with --fork children) --------------------------------- */

typedef struct counts {
  int cases, failed, crashed, runs;
  int constfold; /* -O2 differs from -O0 under TPU numerics by constant folding alone */
  int refused[NREFUSALS + 1];
  int differed[NBUGS + 1];
} counts;

typedef struct cfg {
  uint64_t seed;
  bool on[NTGT];
  bool no_known_bugs; /* known bugs' refusals and differences fail too */
} cfg;

/* Whether a difference on target t is that of a known bug (counted). */
static bool known_bug(const cfg *cf, const ir_module *m, const og_case *k, tgt t, counts *n) {
  if (cf->no_known_bugs) return false;
  for (int i = 0; i < NBUGS; i++)
    if (bugs[i].t == t && bugs[i].applies(m, k)) {
      n->differed[i]++;
      return true;
    }
  return false;
}

/* One target on one module: true when it ran and matched (or differed by
 * a known bug), or refused for a listed reason. */
static bool run_target(const cfg *cf, const ir_module *m, const og_case *k, tgt t,
                       ir_literal **args, arena *a, const ir_literal *ref, const char *what,
                       counts *n) {
  char err[1024] = "", why[256];
  ir_literal *got = NULL;
  diff_outcome r = DIFF_FAILED;
  n->runs++;
  switch (t) {
#ifdef HAVE_LLVM
  case T_CPU_STRICT:
  case T_CPU_TPU:
    r = diff_run_cpu(m, t == T_CPU_TPU ? CPU_NUMERICS_TPU : CPU_NUMERICS_STRICT, args,
                     og_nparams(m), a, &got, err, sizeof err);
    break;
#endif
  case T_V3: r = diff_run_tpu(m, "v3", args, og_nparams(m), a, &got, err, sizeof err); break;
  default: snprintf(err, sizeof err, "target not built"); break;
  }
  if (r == DIFF_REFUSED) {
    for (int i = 0; i < NREFUSALS; i++)
      if (refusals[i].t == t && !(refusals[i].bug && cf->no_known_bugs) &&
          refusals[i].applies(m, k) && strstr(err, refusals[i].needle)) {
        n->refused[i]++;
        return true;
      }
    n->refused[NREFUSALS]++;
    fprintf(stderr, "%s on %s: refused for no documented reason: %s\n", what, tgt_name[t],
            err[0] ? err : "(no message)");
    return false;
  }
  if (r == DIFF_FAILED) {
    fprintf(stderr, "%s on %s: execution failed: %s\n", what, tgt_name[t], err);
    return false;
  }
  /* NaN payloads aside: strict (docs/cpu-backend.md) */
  bool nan_any = t == T_CPU_STRICT;
  if (diff_same(ref, got, nan_any, why, sizeof why)) return true;
  if (known_bug(cf, m, k, t, n)) return true;
  fprintf(stderr, "%s on %s: %s\n", what, tgt_name[t], why);
  return false;
}

/* The oracle's two results for m, or false with the reason printed. */
static bool oracle(const ir_module *m, ir_literal **args, arena *a, ir_literal **ref,
                   const char *what) {
  char err[512];
  for (int tpu = 0; tpu < 2; tpu++)
    if (diff_eval(m, tpu, args, og_nparams(m), a, &ref[tpu], err, sizeof err) != ST_OK) {
      fprintf(stderr, "%s: the oracle (%s numerics) failed: %s\n", what, tpu ? "TPU" : "default",
              err);
      return false;
    }
  return true;
}

/* The -O2 module's oracle results against the original's: the same in
 * default numerics (constfold folds with the default evaluator, so NaN
 * payloads aside), and the same bits in TPU numerics, unless constant
 * folding alone makes the difference (it computes what interp computes,
 * docs/passes.md: a folded transcendental or NaN then has interp's bits on
 * every target). */
static bool same_after_o2(const cfg *cf, const ir_module *m, const og_case *k, ir_literal **args, arena *a,
                          ir_literal **ref, ir_literal **ref2, const char *what, counts *n) {
  char why[256], err[512];
  if (!diff_same(ref[0], ref2[0], true, why, sizeof why)) {
    fprintf(stderr, "%s: the -O2 module under the oracle (default numerics): %s\n", what, why);
    return false;
  }
  if (diff_same(ref[1], ref2[1], false, why, sizeof why)) return true;
  ir_module *o = diff_optimise(m, 2, o2_without_constfold, err, sizeof err);
  ir_literal *r3 = NULL;
  bool folding = o && diff_eval(o, true, args, og_nparams(o), a, &r3, err, sizeof err) == ST_OK &&
                 diff_same(ref[1], r3, false, err, sizeof err);
  ir_module_destroy(o);
  if (folding) {
    n->constfold++;
    return true;
  }
  char nan_why[256];
  if (diff_same(ref[1], ref2[1], true, nan_why, sizeof nan_why) && known_bug(cf, m, k, T_PASSES, n))
    return true;
  fprintf(stderr, "%s: the -O2 module under the oracle (TPU numerics): %s\n", what, why);
  return false;
}

static bool run_case(const cfg *cf, uint64_t i, counts *n) {
  og_case k;
  ir_module *m = og_generate(cf->seed, i, &k);
  arena *a = arena_create();
  ir_literal **args = og_args(m, a, cf->seed * 1000003u + i);
  char what[300], err[512];
  snprintf(what, sizeof what, "case %llu (seed %llu) [%s]", (unsigned long long)i,
           (unsigned long long)cf->seed, k.desc);
  ir_literal *ref[2], *ref2[2];
  ir_module *o2 = NULL;
  /* have[lvl]: the oracle's results for the -O0 / -O2 module */
  bool have[2] = {oracle(m, args, a, ref, what), false};
  if (have[0] && !(o2 = diff_optimise(m, 2, NULL, err, sizeof err)))
    fprintf(stderr, "%s: %s\n", what, err);
  if (o2) {
    char w2[320];
    snprintf(w2, sizeof w2, "%s at -O2", what);
    have[1] = oracle(o2, args, a, ref2, w2);
  }
  bool ok = have[0] && have[1] && same_after_o2(cf, m, &k, args, a, ref, ref2, what, n);
  for (int lvl = 0; lvl < 2; lvl++) {
    if (!have[lvl]) continue;
    const ir_module *mm = lvl ? o2 : m;
    ir_literal **r = lvl ? ref2 : ref;
    char w2[320];
    snprintf(w2, sizeof w2, "%s at -O%d", what, lvl ? 2 : 0);
    for (int t = 0; t < NTGT; t++)
      if (cf->on[t] && !run_target(cf, mm, &k, (tgt)t, args, a, r[t != T_CPU_STRICT], w2, n))
        ok = false;
  }
  if (!ok) {
    fprintf(stderr, "---- case %llu as HLO:\n", (unsigned long long)i);
    diff_print_module(m);
  }
  ir_module_destroy(o2);
  ir_module_destroy(m);
  arena_destroy(a);
  return ok;
}

/* run_case in a child process: a crash is a failure of this case only. */
static bool run_case_forked(const cfg *cf, uint64_t i, counts *n) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    perror("diff_ops: fork");
    return run_case(cf, i, n);
  }
  if (pid == 0) _exit(run_case(cf, i, n) ? 0 : 1);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) continue;
  if (WIFEXITED(st)) return WEXITSTATUS(st) == 0;
  og_case k;
  ir_module *m = og_generate(cf->seed, i, &k);
  fprintf(stderr, "case %llu (seed %llu) [%s]: CRASHED (signal %d)\n---- case %llu as HLO:\n",
          (unsigned long long)i, (unsigned long long)cf->seed, k.desc,
          WIFSIGNALED(st) ? WTERMSIG(st) : -1, (unsigned long long)i);
  diff_print_module(m);
  ir_module_destroy(m);
  n->crashed++;
  return false;
}

int main(int argc, char **argv) {
  uint64_t ncases = 4 * (uint64_t)og_nops(), from = 0;
  int64_t only = -1;
  int pos = 0;
  bool fork_each = false, list = false;
  cfg cf = {1, {true, true, true}, false};
#ifndef HAVE_LLVM
  cf.on[T_CPU_STRICT] = cf.on[T_CPU_TPU] = false;
#endif
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--from=", 7)) from = strtoull(argv[i] + 7, NULL, 10);
    else if (!strncmp(argv[i], "--only=", 7)) only = strtoll(argv[i] + 7, NULL, 10);
    else if (!strcmp(argv[i], "--fork")) fork_each = true;
    else if (!strcmp(argv[i], "--list")) list = true;
    else if (!strcmp(argv[i], "--no-known-bugs")) cf.no_known_bugs = true;
    else if (!strcmp(argv[i], "--no-cpu")) cf.on[T_CPU_STRICT] = cf.on[T_CPU_TPU] = false;
    else if (!strcmp(argv[i], "--no-cpu-tpu")) cf.on[T_CPU_TPU] = false;
    else if (!strcmp(argv[i], "--no-v3")) cf.on[T_V3] = false;
    else if (argv[i][0] == '-') {
      fprintf(stderr, "diff_ops: unknown option %s\n", argv[i]);
      return 2;
    } else if (pos++ == 0) ncases = strtoull(argv[i], NULL, 10);
    else cf.seed = strtoull(argv[i], NULL, 10);
  }
  counts *n = mmap(NULL, sizeof(counts), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (n == MAP_FAILED) {
    perror("diff_ops: mmap");
    return 2;
  }
  memset(n, 0, sizeof *n);
  if (only >= 0) from = (uint64_t)only, ncases = 1;
  for (uint64_t i = from; i < from + ncases; i++) {
    if (list) {
      og_case k;
      ir_module_destroy(og_generate(cf.seed, i, &k));
      printf("%llu %s\n", (unsigned long long)i, k.desc);
      continue;
    }
    n->cases++;
    if (!(fork_each ? run_case_forked(&cf, i, n) : run_case(&cf, i, n))) n->failed++;
  }
  printf("diff_ops: %d cases (seed %llu, from %llu), %d target runs, %d failed, %d crashed\n",
         n->cases, (unsigned long long)cf.seed, (unsigned long long)from, n->runs, n->failed,
         n->crashed);
  printf("  -O2 differs from -O0 under TPU numerics by constant folding alone: %d\n",
         n->constfold);
  for (int i = 0; i < NREFUSALS; i++)
    printf("  refused (%s): %5d  %s%s%s\n", refusals[i].bug ? "known bug" : "documented",
           n->refused[i], refusals[i].why, refusals[i].bug ? ", " : "",
           refusals[i].bug ? refusals[i].bug : "");
  if (n->refused[NREFUSALS]) printf("  refused (NOT documented): %d\n", n->refused[NREFUSALS]);
  for (int i = 0; i < NBUGS; i++)
    printf("  differed (known bug): %5d  %s on %s\n", n->differed[i], bugs[i].why,
           tgt_name[bugs[i].t]);
  int bad = n->failed;
  munmap(n, sizeof *n);
  return bad ? 1 : 0;
}
