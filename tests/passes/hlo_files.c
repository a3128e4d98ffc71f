/* hlo_files.c: see hlo_files.h. */
#include "tests/passes/hlo_files.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void tp_for_each_hlo(const char *path, void (*fn)(const char *file)) {
  DIR *dir = opendir(path);
  if (!dir) {
    fn(path);
    return;
  }
  char **names = NULL;
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(dir))) {
    size_t l = strlen(de->d_name);
    if (l < 5 || strcmp(de->d_name + l - 4, ".hlo") != 0) continue;
    names = base_xrealloc(names, (n + 1) * sizeof *names);
    size_t pl = strlen(path) + l + 2;
    names[n] = base_xmalloc(pl);
    snprintf(names[n], pl, "%s/%s", path, de->d_name);
    n++;
  }
  closedir(dir);
  if (n) qsort(names, n, sizeof *names, cmp);
  for (size_t i = 0; i < n; i++) {
    fn(names[i]);
    free(names[i]);
  }
  free(names);
}
