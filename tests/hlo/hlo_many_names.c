/* hlo_many_names.c: names reused by many computations import in linear
 * work. XLA dumps reuse computation-local names ("p", "r") in every
 * computation; the importer renames them module-unique ("p.1", "p.2", ...).
 * Importing 8,000 such computations must take less than 16 times the
 * module memory of 1,000 (linear: 8 times; the rename once tried every
 * suffix from 1 for each reuse, 64 times: 32 million names, 1.2 GB and
 * 26 s), and the last computation's names must be the 7,999th renames.
 * Exit status 0 when both hold. */
#include "frontend/frontend.h"

#include <stdlib.h>

/* Imports n computations c0..c{n-1}, each naming its instructions p and
 * r; returns the module (NULL after printing the diagnostics). */
static ir_module *import(int n, diag *d) {
  strbuf b;
  sb_init(&b);
  sb_puts(&b, "HloModule many\n\n");
  for (int i = 0; i < n; i++)
    sb_printf(&b, "c%d {\n  p = f32[] parameter(0)\n  ROOT r = f32[] negate(p)\n}\n\n", i);
  sb_puts(&b, "ENTRY main {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=c0\n}\n");
  ir_module *m = fe_parse_hlo("many.hlo", sb_str(&b), b.len, d);
  if (!m) fprintf(stderr, "FAIL: %d computations do not import:\n%s", n, diag_text(d));
  sb_free(&b);
  return m;
}

int main(void) {
  diag *d = diag_create();
  ir_module *small = import(1000, d), *big = import(8000, d);
  int fails = 0;
  if (!small || !big) {
    fails++;
  } else {
    size_t s = arena_bytes(small->arena), l = arena_bytes(big->arena);
    printf("module arena: 1000 computations %zu bytes, 8000 computations %zu bytes\n", s, l);
    if (l > 16 * s) {
      fprintf(stderr, "FAIL: 8 times the computations take %.1f times the memory\n",
              (double)l / (double)s);
      fails++;
    }
    const ir_comp *last = ir_comp_get(big, 7999);
    const char *p = last->insts.v[last->params[0]].info->name, *r = last->insts.v[last->root].info->name;
    if (strcmp(p, "p.7999") != 0 || strcmp(r, "r.7999") != 0) {
      fprintf(stderr, "FAIL: computation c7999 names its instructions %s and %s\n", p, r);
      fails++;
    }
  }
  ir_module_destroy(small);
  ir_module_destroy(big);
  diag_destroy(d);
  return fails ? 1 : 0;
}
