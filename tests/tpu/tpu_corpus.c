/* tpu_corpus.c: every module of the HLO corpus compiled for a TPU target,
 * run on the emulator and compared with the reference evaluator on the
 * same deterministic inputs (tolerances: tpu_check.h).
 *
 *   tpu_corpus DIR [--target=SPEC] [--precision=default|high|highest] [--no-skip]
 *
 * A module the evaluator rejects is skipped; a module the backend rejects
 * or gets wrong is a failure. Exit 0 when nothing failed; with --no-skip
 * (the project's own modules), when nothing failed or was skipped. */
#include <dirent.h>
#include <stdlib.h>

#include "frontend/frontend.h"
#include "tests/tpu/tpu_check.h"

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr,
            "usage: tpu_corpus DIR [--target=SPEC] [--precision=...] [--only=NAME] [--no-skip]\n");
    return 2;
  }
  const char *target = "v3", *only = NULL;
  ir_precision prec = IR_PREC_DEFAULT;
  bool no_skip = false;
  for (int i = 2; i < argc; i++) {
    if (!strncmp(argv[i], "--target=", 9)) target = argv[i] + 9;
    else if (!strcmp(argv[i], "--precision=high")) prec = IR_PREC_HIGH;
    else if (!strcmp(argv[i], "--precision=highest")) prec = IR_PREC_HIGHEST;
    else if (!strncmp(argv[i], "--only=", 7)) only = argv[i] + 7;
    else if (!strcmp(argv[i], "--no-skip")) no_skip = true;
  }
  DIR *d = opendir(argv[1]);
  if (!d) {
    fprintf(stderr, "tpu_corpus: cannot open %s\n", argv[1]);
    return 2;
  }
  char **names = NULL;
  int nn = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l < 5 || strcmp(de->d_name + l - 4, ".hlo") != 0) continue;
    if (only && !strstr(de->d_name, only)) continue;
    names = realloc(names, sizeof(char *) * (size_t)(nn + 1));
    names[nn++] = strdup(de->d_name);
  }
  closedir(d);
  qsort(names, (size_t)nn, sizeof(char *), cmp);
  int pass = 0, fail = 0, skip = 0;
  for (int i = 0; i < nn; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], names[i]);
    char *text = NULL;
    size_t len = 0;
    char err[512];
    if (ir_file_read(path, (size_t)1 << 28, &text, &len, err, sizeof err) != ST_OK) {
      printf("SKIP %s (%s)\n", names[i], err);
      skip++;
      free(names[i]);
      continue;
    }
    diag *dg = diag_create();
    ir_module *m = fe_parse_hlo(path, text, len, dg);
    if (!m) {
      printf("SKIP %s (does not parse)\n", names[i]);
      skip++;
    } else {
      uint64_t seed = 42; /* from the name, so --only reproduces a run */
      for (const char *q = names[i]; *q; q++) seed = seed * 131 + (unsigned char)*q;
      int r = tc_check(m, target, prec, seed, -1, names[i]);
      if (r == 0) {
        printf("PASS %s\n", names[i]);
        pass++;
      } else if (r == 2) {
        skip++;
      } else {
        fail++;
      }
      fflush(stdout);
      ir_module_destroy(m);
    }
    diag_destroy(dg);
    free(text);
    free(names[i]);
  }
  free(names);
  printf("tpu_corpus (%s): %d passed, %d failed, %d skipped of %d\n", target, pass, fail, skip, nn);
  return fail == 0 && (!no_skip || (skip == 0 && nn > 0)) ? 0 : 1;
}
