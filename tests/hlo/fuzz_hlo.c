/* fuzz_hlo.c: libFuzzer-style target for the HLO importer and printer.
 *
 * For any input: fe_parse_hlo must return (no crash, no hang, bounded
 * memory); when it accepts the input, the printed module must import
 * again and print identically (print -> import -> print is a fixed point).
 * A violation aborts, which libFuzzer and the plain driver (fuzz_driver.c)
 * report as a failure. Build for libFuzzer with, for example:
 *   clang -fsanitize=fuzzer,address -I. -Iinclude tests/hlo/fuzz_hlo.c \
 *     <the fe_hlo, tpuir and tpubase libraries> -lm */
#include "frontend/frontend.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Printed modules larger than this are not re-imported, and modules whose
 * constants hold more bytes than this are not printed (time, not safety:
 * a 4M-element splat prints 8 MB). */
enum { REPARSE_LIMIT = 1 << 18 };

static size_t literal_bytes(const ir_literal *l) {
  if (!l) return 0;
  if (l->shape.type != IR_TUPLE) return l->nbytes;
  size_t n = 0;
  for (int i = 0; i < l->shape.ntuple; i++) n += literal_bytes(l->elems[i]);
  return n;
}

static size_t constant_bytes(const ir_module *m) {
  size_t n = 0;
  for (int c = 0; c < m->comps.n; c++)
    for (int i = 0; i < m->comps.v[c].insts.n; i++)
      n += literal_bytes(m->comps.v[c].insts.v[i].a->literal);
  return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("fuzz.hlo", (const char *)data, size, d);
  if (m) {
    if (diag_error_count(d) != 0) base_die("module returned with %d errors", diag_error_count(d));
    for (int st = 0; st < 2 && constant_bytes(m) <= REPARSE_LIMIT; st++) {
      strbuf p1;
      sb_init(&p1);
      ir_print_module_style(&p1, m, (ir_print_style)st);
      if (p1.len <= REPARSE_LIMIT) {
        diag *d2 = diag_create();
        ir_module *m2 = fe_parse_hlo("printed.hlo", sb_str(&p1), p1.len, d2);
        if (!m2) base_die("printed module does not import:\n%s\n%s", sb_str(&p1), diag_text(d2));
        strbuf p2;
        sb_init(&p2);
        ir_print_module_style(&p2, m2, (ir_print_style)st);
        if (strcmp(sb_str(&p1), sb_str(&p2)) != 0)
          base_die("print is not a fixed point:\n%s\n---\n%s", sb_str(&p1), sb_str(&p2));
        sb_free(&p2);
        ir_module_destroy(m2);
        diag_destroy(d2);
      }
      sb_free(&p1);
    }
  } else if (diag_error_count(d) == 0) {
    base_die("input rejected without an error");
  }
  ir_module_destroy(m);
  diag_destroy(d);
  return 0;
}
