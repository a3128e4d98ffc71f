/* cpu_corpus.c: every module of the HLO corpus (real modules from XLA's
 * tests) on the CPU JIT against the reference evaluator, with
 * deterministic random inputs. .tg graph files in DIR (the samples) are
 * read too when built with the graph frontend.
 *
 *   cpu_corpus DIR [--numerics=strict|native|tpu] [--threads=N] [-O2] [--no-skip]
 *
 * With -O2 (built with passes/) each module first goes through the -O2
 * pass pipeline (fusion, multi-output fusion, ...), so the backend is
 * checked on fused IR: the evaluator runs the same optimised module.
 * A module passes when both agree: bit for bit under strict numerics;
 * within 1e-4 relative under native (FMA, BLAS). A module the evaluator
 * itself rejects (e.g. all-reduce over several replicas) is skipped and
 * counted; a module the CPU backend rejects while the evaluator runs it is
 * a failure. Exit status 0 when nothing failed and at least half the
 * corpus ran; with --no-skip (the project's own modules), when nothing
 * failed and nothing was skipped. */
#include "frontend/frontend.h"
#ifdef HAVE_PASSES
#include "passes/passes.h"
#endif
#include "tests/llvm/cpu_check.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  strbuf b;
  sb_init(&b);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) sb_putn(&b, buf, n);
  fclose(f);
  *len = b.len;
  return b.s ? b.s : calloc(1, 1);
}

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cpu_corpus DIR [--numerics=...] [--threads=N]\n");
    return 2;
  }
  cpu_numerics num = CPU_NUMERICS_STRICT;
  int threads = 2, olevel = 0;
  bool no_skip = false;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "-O2")) {
      olevel = 2;
      continue;
    }
    if (!strcmp(argv[i], "--no-skip")) {
      no_skip = true;
      continue;
    }
    if (!strncmp(argv[i], "--numerics=", 11) && cpu_numerics_from_name(argv[i] + 11, &num)) continue;
    if (!strncmp(argv[i], "--threads=", 10)) {
      threads = atoi(argv[i] + 10);
      continue;
    }
    fprintf(stderr, "cpu_corpus: unknown argument %s\n", argv[i]);
    return 2;
  }
  DIR *d = opendir(argv[1]);
  if (!d) {
    fprintf(stderr, "cpu_corpus: cannot open %s\n", argv[1]);
    return 2;
  }
  char **names = NULL;
  int nn = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    bool hlo = l >= 5 && strcmp(de->d_name + l - 4, ".hlo") == 0;
    bool tg = l >= 4 && strcmp(de->d_name + l - 3, ".tg") == 0;
#ifndef HAVE_TG
    tg = false;
#endif
    if (!hlo && !tg) continue;
    names = realloc(names, sizeof(char *) * (size_t)(nn + 1));
    names[nn++] = strdup(de->d_name);
  }
  closedir(d);
  qsort(names, (size_t)nn, sizeof(char *), cmp);
  int pass = 0, fail = 0, skip = 0;
  double tol = num == CPU_NUMERICS_STRICT ? 0 : 1e-4;
  for (int i = 0; i < nn; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], names[i]);
    size_t len;
    char *text = slurp(path, &len);
    diag *dg = diag_create();
    size_t nl = strlen(names[i]);
    bool is_tg = nl > 3 && strcmp(names[i] + nl - 3, ".tg") == 0;
    ir_module *m = NULL;
#ifdef HAVE_TG
    if (text && is_tg) m = fe_parse_tg(path, text, len, NULL, dg);
#endif
    if (text && !is_tg) m = fe_parse_hlo(path, text, len, dg);
#ifdef HAVE_PASSES
    if (m && olevel) {
      pass_ctx pc;
      memset(&pc, 0, sizeof pc);
      pc.d = dg;
      pc.opt_level = olevel;
      pc.verify = true;
      if (pass_run(m, &pc, NULL, NULL) != ST_OK) {
        printf("FAIL %s (pass pipeline: %s)\n", names[i], diag_first_message(dg));
        fail++;
        ir_module_destroy(m);
        diag_destroy(dg);
        free(text);
        free(names[i]);
        continue;
      }
    }
#else
    if (olevel) {
      fprintf(stderr, "cpu_corpus: -O2 needs passes/\n");
      return 2;
    }
#endif
    if (!m) {
      printf("SKIP %s (does not parse)\n", names[i]);
      skip++;
    } else {
      tmod t = {m, m->entry};
      arena *a = arena_create();
      ir_literal **args = tm_args(&t, a, 42 + (uint64_t)i, false);
      const ir_comp *c = ir_comp_get(m, m->entry);
      ir_literal *ref = NULL;
      char err[512];
      if (ir_eval(m, NULL, args, c->nparams, a, &ref, err, sizeof err) != ST_OK) {
        printf("SKIP %s (evaluator: %s)\n", names[i], err);
        skip++;
      } else if (tm_check(&t, args, num, threads, tol, names[i])) {
        printf("PASS %s\n", names[i]);
        pass++;
      } else {
        printf("FAIL %s\n", names[i]);
        fail++;
      }
      arena_destroy(a);
      ir_module_destroy(m);
    }
    diag_destroy(dg);
    free(text);
    free(names[i]);
  }
  free(names);
  printf("cpu_corpus: %d passed, %d failed, %d skipped of %d\n", pass, fail, skip, nn);
  return fail == 0 && (no_skip ? skip == 0 && nn > 0 : pass * 2 >= nn) ? 0 : 1;
}
