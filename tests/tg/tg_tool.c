/* tg_tool: a small driver for the .tg tests.
 *   tg_tool check FILE [GOLDEN]  compile FILE; print the diagnostics (with
 *                                paths shortened to the file's base name);
 *                                with GOLDEN, exit 1 unless they match it
 *   tg_tool run FILE [ENTRY]     compile and evaluate with pseudo-random
 *                                inputs; print the results
 * The diagnostics of `check` are what the golden files hold. */
#include <string.h>

#include "tests/tg/tg_util.h"

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

static void print_lit(const ir_literal *l) {
  if (l->shape.type == IR_TUPLE) {
    for (int i = 0; i < l->shape.ntuple; i++) print_lit(l->elems[i]);
    return;
  }
  strbuf b;
  sb_init(&b);
  ir_shape_print(&b, &l->shape, false);
  printf("%s:", sb_str(&b));
  sb_free(&b);
  int64_t n = ir_shape_count(&l->shape);
  for (int64_t i = 0; i < n && i < 64; i++) printf(" %.6g", ir_literal_get_f64(l, i));
  printf("%s\n", n > 64 ? " ..." : "");
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: tg_tool check|run FILE [GOLDEN|ENTRY]\n");
    return 2;
  }
  size_t len;
  char *text = tgu_read_file(argv[2], &len);
  if (!text) {
    fprintf(stderr, "cannot read %s\n", argv[2]);
    return 2;
  }
  diag *d = diag_create();
  bool run = strcmp(argv[1], "run") == 0;
  ir_module *m = fe_parse_tg(base_name(argv[2]), text, len, run && argc > 3 ? argv[3] : NULL, d);
  int rc = 0;
  if (!run) {
    const char *got = diag_text(d);
    if (argc > 3) {
      size_t glen;
      char *want = tgu_read_file(argv[3], &glen);
      if (!want || strcmp(want, got) != 0) {
        printf("diagnostics differ from %s\n--- got:\n%s--- want:\n%s", argv[3], got, want ? want : "(missing)\n");
        rc = 1;
      }
      free(want);
    } else {
      fputs(got, stdout);
    }
  } else if (!m) {
    fputs(diag_text(d), stdout);
    rc = 1;
  } else {
    arena *a = arena_create();
    int n;
    ir_literal **args = tgu_random_args(m, a, 42, &n);
    ir_eval_options o;
    ir_eval_options_init(&o);
    ir_literal *out;
    char err[256];
    if (ir_eval(m, &o, args, n, a, &out, err, sizeof err) != ST_OK) {
      printf("eval failed: %s\n", err);
      rc = 1;
    } else {
      print_lit(out);
    }
    arena_destroy(a);
  }
  ir_module_destroy(m);
  diag_destroy(d);
  free(text);
  return rc;
}
