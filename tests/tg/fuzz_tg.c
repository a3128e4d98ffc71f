/* fuzz_tg.c: fuzz target for the .tg lexer, parser and lowering.
 *
 * LLVMFuzzerTestOneInput compiles the bytes as a .tg file: anything may be
 * rejected, nothing may crash, hang, leak or trip the sanitizers, and a
 * module that comes out must verify (fe_parse_tg runs ir_verify).
 *
 * Built with -DTG_FUZZ_LIBFUZZER and -fsanitize=fuzzer it is a libFuzzer
 * target. Otherwise main() is a deterministic driver for CI: for every file
 * named on the command line it runs the file itself and `rounds` mutations
 * of it (byte flips, deletions, insertions of bytes and of .tg tokens,
 * truncations, duplicated spans), seeded from the file's content. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tg/tg_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  diag *d = diag_create();
  diag_set_max_errors(d, 20);
  ir_module *m = fe_parse_tg("fuzz.tg", (const char *)data, size, NULL, d);
  if (m && diag_error_count(d) != 0) abort(); /* a module means no errors */
  if (!m && diag_error_count(d) == 0) abort(); /* no module means an error */
  ir_module_destroy(m);
  diag_destroy(d);
  return 0;
}

#ifndef TG_FUZZ_LIBFUZZER
static const char *const tokens[] = {
    "graph ", "let ", "return ", "(", ")", "[", "]", "{", "}", ",", ";", ":", "=", "->", "**", "@",
    "==", "&&", "||", "!", "-", "/*", "*/", "//", "\"", "f32", "s32[2,3]", "pred", "bf16[4]", "1e999",
    "99999999999999999999", "0", "-1", "x", "matmul(", "conv2d(", "softmax(", "reduce_sum(", "axes=",
    "[1:2, ::2]", "inf", "nan", "true", "\n", "\t", "\xff", "\0",
};

static void run(const char *buf, size_t n) { LLVMFuzzerTestOneInput((const uint8_t *)buf, n); }

int main(int argc, char **argv) {
  int rounds = 150, runs = 0;
  for (int f = 1; f < argc; f++) {
    if (strncmp(argv[f], "--rounds=", 9) == 0) {
      rounds = atoi(argv[f] + 9);
      continue;
    }
    size_t len;
    char *text = tgu_read_file(argv[f], &len);
    if (!text) {
      fprintf(stderr, "cannot read %s\n", argv[f]);
      return 2;
    }
    run(text, len);
    runs++;
    uint64_t seed = 88172645463325252ULL ^ len;
    for (size_t i = 0; i < len; i++) seed = (seed ^ (uint8_t)text[i]) * 1099511628211ULL;
    char *buf = malloc(2 * len + 256);
    for (int r = 0; r < rounds; r++) {
      memcpy(buf, text, len);
      size_t n = len;
      int edits = 1 + (int)(tgu_rand(&seed) % 4);
      for (int e = 0; e < edits; e++) {
        size_t at = n ? (size_t)(tgu_rand(&seed) % n) : 0;
        switch (tgu_rand(&seed) % 6) {
        case 0: if (n) buf[at] = (char)tgu_rand(&seed); break;
        case 1: if (n) { memmove(buf + at, buf + at + 1, n - at - 1); n--; } break;
        case 2: {
          const char *t = tokens[tgu_rand(&seed) % COUNTOF(tokens)];
          size_t tl = t[0] ? strlen(t) : 1;
          if (n + tl > 2 * len + 200) break;
          memmove(buf + at + tl, buf + at, n - at);
          memcpy(buf + at, t, tl);
          n += tl;
          break;
        }
        case 3: n = at; break;
        case 4: {
          size_t span = n ? (size_t)(tgu_rand(&seed) % (n - at + 1)) : 0;
          if (span > 64) span = 64;
          if (n + span > 2 * len + 200) break;
          memmove(buf + at + span, buf + at, n - at);
          n += span;
          break;
        }
        default: if (n) buf[at] ^= (char)(1 << (tgu_rand(&seed) % 8)); break;
        }
      }
      run(buf, n);
      runs++;
    }
    free(buf);
    free(text);
  }
  printf("%d inputs, no crash\n", runs);
  return 0;
}
#endif
