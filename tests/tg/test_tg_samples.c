/* test_tg_samples.c: each .tg file named on the command line lowers to a
 * module whose HLO text imports again (fe_parse_hlo) and prints back
 * identically, and the original and the re-imported module give bitwise
 * equal results on the same pseudo-random inputs (which are also checked
 * to be finite, so the sample computes something). */
#include <string.h>

#include "tests/tg/tg_util.h"

static bool all_finite(const ir_literal *l) {
  if (l->shape.type == IR_TUPLE) {
    for (int i = 0; i < l->shape.ntuple; i++)
      if (!all_finite(l->elems[i])) return false;
    return true;
  }
  int64_t n = ir_shape_count(&l->shape);
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(ir_literal_get_f64(l, i))) return false;
  return true;
}

static int check(const char *path) {
  size_t len;
  char *text = tgu_read_file(path, &len);
  if (!text) {
    printf("%s: cannot read\n", path);
    return 1;
  }
  diag *d = diag_create();
  int bad = 0;
  ir_module *m = fe_parse_tg(path, text, len, NULL, d);
  ir_module *m2 = NULL;
  strbuf h1, h2;
  sb_init(&h1);
  sb_init(&h2);
  arena *a = arena_create();
  if (!m) {
    printf("%s: does not compile:\n%s", path, diag_text(d));
    bad = 1;
    goto out;
  }
  ir_print_module(&h1, m);
  m2 = fe_parse_hlo("roundtrip.hlo", sb_str(&h1), h1.len, d);
  if (!m2) {
    printf("%s: its HLO does not import:\n%s", path, diag_text(d));
    bad = 1;
    goto out;
  }
  ir_print_module(&h2, m2);
  if (strcmp(sb_str(&h1), sb_str(&h2)) != 0) {
    printf("%s: HLO round trip differs\n--- first:\n%s--- second:\n%s", path, sb_str(&h1), sb_str(&h2));
    bad = 1;
    goto out;
  }
  int n;
  ir_literal **args = tgu_random_args(m, a, 7, &n);
  ir_eval_options o;
  ir_eval_options_init(&o);
  ir_literal *r1, *r2;
  char err[256];
  if (ir_eval(m, &o, args, n, a, &r1, err, sizeof err) != ST_OK ||
      ir_eval(m2, &o, args, n, a, &r2, err, sizeof err) != ST_OK) {
    printf("%s: evaluation failed: %s\n", path, err);
    bad = 1;
    goto out;
  }
  if (!ir_literal_equal(r1, r2)) {
    printf("%s: results differ after the HLO round trip\n", path);
    bad = 1;
  } else if (!all_finite(r1)) {
    printf("%s: non-finite results on random inputs\n", path);
    bad = 1;
  } else {
    printf("%s: ok (%d instructions in the entry)\n", path, ir_comp_get(m, m->entry)->insts.n);
  }
out:
  arena_destroy(a);
  sb_free(&h1);
  sb_free(&h2);
  ir_module_destroy(m);
  ir_module_destroy(m2);
  diag_destroy(d);
  free(text);
  return bad;
}

int main(int argc, char **argv) {
  int bad = 0;
  for (int i = 1; i < argc; i++) bad |= check(argv[i]);
  return bad;
}
