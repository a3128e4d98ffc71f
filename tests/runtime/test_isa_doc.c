/* test_isa_doc.c: docs/isa.md documents every instruction of isa.def: a
 * table row "| `mnemonic` | `operands` | ... | semantics |" whose operand
 * letters and semantics text match the table, and the encoding example of
 * section 3 matches the encoder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "isa.h"
#include "rt_test.h"

static char *doc;

static void every_mnemonic_documented(void **state) {
  (void)state;
  int missing = 0;
  for (int op = 0; op < OP__COUNT; op++) {
    const isa_info *f = isa_info_of((isa_op)op);
    char head[128];
    snprintf(head, sizeof head, "\n| `%s` | `%s` |", f->mnemonic,
             f->operands[0] ? f->operands : "-");
    const char *row = strstr(doc, head);
    if (!row) {
      fprintf(stderr, "docs/isa.md: no row for %s (%s)\n", f->mnemonic, head + 1);
      missing++;
      continue;
    }
    /* The semantics, with '|' escaped as in markdown, on the same line. */
    char sem[512];
    size_t k = 0;
    for (const char *p = f->semantics; *p && k < sizeof sem - 2; p++) {
      if (*p == '|') sem[k++] = '\\';
      sem[k++] = *p;
    }
    sem[k] = 0;
    const char *eol = strchr(row + 1, '\n');
    const char *hit = strstr(row, sem);
    if (!hit || (eol && hit > eol)) {
      fprintf(stderr, "docs/isa.md: row of %s does not state: %s\n", f->mnemonic, sem);
      missing++;
    }
  }
  assert_int_equal(missing, 0);
}

static void encoding_example_matches(void **state) {
  (void)state;
  isa_inst in = {OP_VADDF, 1, 2, 3, 0, 0, 0};
  char want[64];
  snprintf(want, sizeof want, "`0x%016llx`", (unsigned long long)isa_encode(&in));
  assert_non_null(strstr(doc, "Example: `vaddf v1, v2, v3`"));
  assert_non_null(strstr(doc, want));
}

int main(void) {
  doc = rt_read_file(SOURCE_ROOT "/docs/isa.md", NULL);
  if (!doc) {
    fprintf(stderr, "cannot read docs/isa.md\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_mnemonic_documented),
      cmocka_unit_test(encoding_example_matches),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  free(doc);
  return rc;
}
