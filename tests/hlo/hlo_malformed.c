/* hlo_malformed.c: golden test of the importer's diagnostics.
 *
 *   hlo_malformed DIR [--update]
 *
 * Every DIR/NAME.hlo must be rejected (fe_parse_hlo returns NULL with at
 * least one error) and the diagnostics text (diag_text, file named NAME.hlo)
 * must equal DIR/NAME.expected byte for byte. --update rewrites the
 * .expected files instead (review them before committing). */
#include "frontend/frontend.h"

#include <dirent.h>
#include <stdlib.h>

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0, r;
  char *buf = malloc(cap);
  while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += r;
    if (n + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  if (!buf) return NULL;
  buf[n] = 0;
  *len = n;
  return buf;
}

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: hlo_malformed DIR [--update]\n");
    return 2;
  }
  bool update = argc > 2 && strcmp(argv[2], "--update") == 0;
  DIR *dir = opendir(argv[1]);
  if (!dir) {
    fprintf(stderr, "cannot open %s\n", argv[1]);
    return 2;
  }
  char **names = NULL;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dir))) {
    size_t l = strlen(e->d_name);
    if (l < 5 || strcmp(e->d_name + l - 4, ".hlo") != 0) continue;
    names = realloc(names, sizeof(char *) * (size_t)(n + 1));
    names[n++] = strdup(e->d_name);
  }
  closedir(dir);
  qsort(names, (size_t)n, sizeof(char *), cmp);
  int fails = 0;
  for (int i = 0; i < n; i++) {
    char path[4096], gold[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], names[i]);
    snprintf(gold, sizeof gold, "%s/%.*s.expected", argv[1], (int)strlen(names[i]) - 4, names[i]);
    size_t len, glen;
    char *text = slurp(path, &len);
    if (!text) {
      fprintf(stderr, "FAIL %s: cannot read\n", path);
      fails++;
      continue;
    }
    diag *d = diag_create();
    ir_module *m = fe_parse_hlo(names[i], text, len, d);
    const char *got = diag_text(d);
    if (m || diag_error_count(d) == 0) {
      fprintf(stderr, "FAIL %s: accepted (%d errors)\n", names[i], diag_error_count(d));
      fails++;
    } else if (update) {
      FILE *f = fopen(gold, "wb");
      if (!f || fwrite(got, 1, strlen(got), f) != strlen(got)) {
        fprintf(stderr, "FAIL %s: cannot write\n", gold);
        fails++;
      }
      if (f) fclose(f);
    } else {
      char *want = slurp(gold, &glen);
      if (!want) {
        fprintf(stderr, "FAIL %s: no golden %s\n", names[i], gold);
        fails++;
      } else if (strcmp(want, got) != 0) {
        fprintf(stderr, "FAIL %s: diagnostics differ\n--- expected\n%s--- got\n%s", names[i],
                want, got);
        fails++;
      }
      free(want);
    }
    ir_module_destroy(m);
    diag_destroy(d);
    free(text);
    free(names[i]);
  }
  free(names);
  printf("%d malformed files, %d failed\n", n, fails);
  return fails || n < 40 ? 1 : 0;
}
