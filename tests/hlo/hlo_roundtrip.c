/* hlo_roundtrip.c: the corpus round-trip test.
 *
 *   hlo_roundtrip [--printed] DIR...
 *                            every .hlo file in each DIR must import; for
 *                            both print styles print -> import -> print
 *                            must be a fixed point; XLA's own printed forms
 *                            (hlo_parser_test__*, except the inputs listed
 *                            below) must come out exactly as written.
 *                            With --printed, so must every file that
 *                            starts with an `HloModule` header (in the long
 *                            or the short style; tests/modules/).
 *                            A clone of each module must print the same.
 *                            When DIR/NAME.expected exists beside
 *                            DIR/NAME.hlo, the long form must equal it.
 *   hlo_roundtrip --print [--short] FILE   prints the imported module.
 *
 * Exit status 0 when everything holds; each failure is described on
 * stderr. */
#include "frontend/frontend.h"

#include <dirent.h>
#include <stdlib.h>

/* hlo_parser_test__ files that are parser inputs, not XLA's printed form
 * (XLA's non-round-trip tables and HloParserTest cases); docs/hlo.md. */
static const char *const not_printed_form[] = {
    "hlo_parser_test__AmbiguousNames.hlo",
    "hlo_parser_test__BroadcastOfScalarDoesntNeedDimensionsAttr.hlo",
    "hlo_parser_test__MixAnonAndNonAnonOperands.hlo",
    "hlo_parser_test__ConfigurationField.hlo",
};

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  size_t r;
  while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += r;
    if (n + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  if (buf) buf[n] = 0;
  fclose(f);
  if (!buf) return NULL;
  *len = n;
  return buf;
}

static char *print(const ir_module *m, ir_print_style st) {
  strbuf b;
  sb_init(&b);
  ir_print_module_style(&b, m, st);
  size_t n = strlen(sb_str(&b));
  char *s = malloc(n + 1);
  memcpy(s, sb_str(&b), n + 1);
  sb_free(&b);
  return s;
}

/* Shows the first differing line of a and b. */
static void show_diff(const char *what, const char *a, const char *b) {
  int line = 1;
  const char *la = a, *lb = b;
  while (*a && *a == *b) {
    if (*a == '\n') {
      line++;
      la = a + 1;
      lb = b + 1;
    }
    a++;
    b++;
  }
  const char *ea = strchr(la, '\n'), *eb = strchr(lb, '\n');
  fprintf(stderr, "  %s: first difference on line %d:\n    - %.*s\n    + %.*s\n", what, line,
          (int)(ea ? ea - la : (long)strlen(la)), la, (int)(eb ? eb - lb : (long)strlen(lb)), lb);
}

static int check_file(const char *dir, const char *name, bool printed) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t len;
  char *text = read_file(path, &len);
  if (!text) {
    fprintf(stderr, "FAIL %s: cannot read\n", path);
    return 1;
  }
  int fails = 0;
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo(path, text, len, d);
  if (!m) {
    fprintf(stderr, "FAIL %s: does not import:\n%s", name, diag_text(d));
    fails++;
  }
  bool matched = false;
  for (int st = 0; m && st < 2; st++) {
    char *p1 = print(m, (ir_print_style)st);
    diag *d2 = diag_create();
    ir_module *m2 = fe_parse_hlo("printed", p1, strlen(p1), d2);
    if (!m2) {
      fprintf(stderr, "FAIL %s: printed %s form does not import:\n%s", name,
              st ? "short" : "long", diag_text(d2));
      fails++;
    } else {
      char *p2 = print(m2, (ir_print_style)st);
      if (strcmp(p1, p2) != 0) {
        fprintf(stderr, "FAIL %s: %s form is not a fixed point\n", name, st ? "short" : "long");
        show_diff("print vs reprint", p1, p2);
        fails++;
      }
      free(p2);
    }
    if (strcmp(p1, text) == 0) matched = true;
    ir_module_destroy(m2);
    diag_destroy(d2);
    free(p1);
  }
  /* a clone prints the same (kept attributes, called-computation
   * placeholders, tables and computation attributes are copied) */
  if (m) {
    ir_module *mc = ir_module_clone(m);
    char *pm = print(m, IR_PRINT_LONG), *pc = print(mc, IR_PRINT_LONG);
    if (strcmp(pm, pc) != 0) {
      fprintf(stderr, "FAIL %s: the clone prints differently\n", name);
      show_diff("module vs clone", pm, pc);
      fails++;
    }
    free(pm);
    free(pc);
    ir_module_destroy(mc);
  }
  /* a NAME.expected beside NAME.hlo is the expected long form */
  char gold[4096];
  snprintf(gold, sizeof gold, "%s/%.*s.expected", dir, (int)strlen(name) - 4, name);
  size_t glen;
  char *want = m ? read_file(gold, &glen) : NULL;
  if (want) {
    char *pl = print(m, IR_PRINT_LONG);
    if (strcmp(pl, want) != 0) {
      fprintf(stderr, "FAIL %s: printed form differs from %s\n", name, gold);
      show_diff("expected vs printed", want, pl);
      fails++;
    }
    free(pl);
    free(want);
  }
  bool printed_form = printed && strncmp(text, "HloModule ", 10) == 0;
  if (m && (printed_form || strncmp(name, "hlo_parser_test__", 17) == 0)) {
    bool expect = true;
    for (size_t i = 0; i < COUNTOF(not_printed_form); i++)
      if (strcmp(name, not_printed_form[i]) == 0) expect = false;
    if (expect && !matched) {
      char *pl = print(m, IR_PRINT_LONG), *ps = print(m, IR_PRINT_SHORT);
      fprintf(stderr, "FAIL %s: printed form differs from %s\n", name,
              printed_form ? "the file" : "XLA's");
      show_diff("long form", text, pl);
      show_diff("short form", text, ps);
      free(pl);
      free(ps);
      fails++;
    }
  }
  ir_module_destroy(m);
  diag_destroy(d);
  free(text);
  return fails;
}

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "--print") == 0) {
    bool shrt = argc >= 4 && strcmp(argv[2], "--short") == 0;
    const char *path = argv[argc - 1];
    size_t len;
    char *text = read_file(path, &len);
    if (!text) return 2;
    diag *d = diag_create();
    ir_module *m = fe_parse_hlo(path, text, len, d);
    fputs(diag_text(d), stderr);
    if (m) {
      char *s = print(m, shrt ? IR_PRINT_SHORT : IR_PRINT_LONG);
      fputs(s, stdout);
      free(s);
    }
    int rc = m ? 0 : 1;
    ir_module_destroy(m);
    diag_destroy(d);
    free(text);
    return rc;
  }
  bool printed = argc >= 2 && strcmp(argv[1], "--printed") == 0;
  if (argc < 2 + printed) {
    fprintf(stderr, "usage: hlo_roundtrip [--printed] DIR... | --print [--short] FILE\n");
    return 2;
  }
  int n = 0, fails = 0;
  for (int a = 1 + printed; a < argc; a++) {
    DIR *dir = opendir(argv[a]);
    if (!dir) {
      fprintf(stderr, "cannot open %s\n", argv[a]);
      return 2;
    }
    char **names = NULL;
    int nd = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
      size_t l = strlen(e->d_name);
      if (l < 5 || strcmp(e->d_name + l - 4, ".hlo") != 0) continue;
      names = realloc(names, sizeof(char *) * (size_t)(nd + 1));
      names[nd++] = strdup(e->d_name);
    }
    closedir(dir);
    qsort(names, (size_t)nd, sizeof(char *), cmp);
    for (int i = 0; i < nd; i++) {
      fails += check_file(argv[a], names[i], printed) ? 1 : 0;
      free(names[i]);
    }
    free(names);
    n += nd;
  }
  printf("%d files, %d failed\n", n, fails);
  return fails ? 1 : (n ? 0 : 1);
}
