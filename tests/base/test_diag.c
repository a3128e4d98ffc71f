/* test_diag.c: the diagnostics sink: "file:line:col: level: message", the
 * source line with a caret, tabs, counting, the error limit, streaming. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "base/base.h"

static src_loc at(const char *file, int line, int col) {
  src_loc l = {file, line, col};
  return l;
}

static const char SRC[] = "HloModule m\n"
                          "ENTRY e {\n"
                          "  x = f32[2] add(a, b)\n"
                          "}";

static void error_with_location_shows_line_and_caret(void **st) {
  (void)st;
  diag *d = diag_create();
  diag_add_source(d, "m.hlo", SRC, strlen(SRC));
  diag_error(d, at("m.hlo", 3, 7), "unknown type '%s'", "f32[2]");
  assert_string_equal(diag_text(d), "m.hlo:3:7: error: unknown type 'f32[2]'\n"
                                    "    x = f32[2] add(a, b)\n"
                                    "        ^\n");
  assert_int_equal(diag_error_count(d), 1);
  assert_string_equal(diag_first_message(d), "unknown type 'f32[2]'");
  diag_destroy(d);
}

static void last_line_without_newline_and_column_one(void **st) {
  (void)st;
  diag *d = diag_create();
  diag_add_source(d, "m.hlo", SRC, strlen(SRC));
  diag_error(d, at("m.hlo", 4, 1), "unexpected '}'");
  assert_string_equal(diag_text(d), "m.hlo:4:1: error: unexpected '}'\n"
                                    "  }\n"
                                    "  ^\n");
  diag_destroy(d);
}

static void tabs_are_kept_under_the_caret(void **st) {
  (void)st;
  diag *d = diag_create();
  const char *src = "\tx\t= 1\n";
  diag_add_source(d, "t.tg", src, strlen(src));
  diag_error(d, at("t.tg", 1, 4), "bad");
  assert_string_equal(diag_text(d), "t.tg:1:4: error: bad\n"
                                    "  \tx\t= 1\n"
                                    "  \t \t^\n");
  diag_destroy(d);
}

static void crlf_and_control_characters(void **st) {
  (void)st;
  diag *d = diag_create();
  const char *src = "a\x01" "b\r\nnext\r\n";
  diag_add_source(d, "w.hlo", src, strlen(src));
  diag_error(d, at("w.hlo", 1, 3), "odd byte");
  diag_error(d, at("w.hlo", 2, 2), "second");
  assert_string_equal(diag_text(d), "w.hlo:1:3: error: odd byte\n"
                                    "  a?b\n"
                                    "    ^\n"
                                    "w.hlo:2:2: error: second\n"
                                    "  next\n"
                                    "   ^\n");
  diag_destroy(d);
}

static void no_source_or_no_line(void **st) {
  (void)st;
  diag *d = diag_create();
  diag_error(d, at("gone.hlo", 5, 2), "no text registered");
  diag_error(d, at("gone.hlo", 0, 0), "file only");
  diag_error(d, at(NULL, 0, 0), "nowhere");
  diag_add_source(d, "short.hlo", "one\n", 4);
  diag_error(d, at("short.hlo", 9, 1), "past the end");
  assert_string_equal(diag_text(d), "gone.hlo:5:2: error: no text registered\n"
                                    "gone.hlo: error: file only\n"
                                    "error: nowhere\n"
                                    "short.hlo:9:1: error: past the end\n");
  assert_int_equal(diag_error_count(d), 4);
  assert_string_equal(diag_first_message(d), "no text registered");
  diag_destroy(d);
}

static void warnings_and_notes_are_not_counted(void **st) {
  (void)st;
  diag *d = diag_create();
  assert_string_equal(diag_first_message(d), "");
  assert_string_equal(diag_text(d), "");
  diag_report(d, DIAG_WARNING, at("a", 1, 1), "w");
  diag_note(d, at("a", 2, 1), "n");
  assert_int_equal(diag_error_count(d), 0);
  assert_string_equal(diag_first_message(d), "");
  diag_error(d, at("a", 3, 1), "e%d", 1);
  diag_error(d, at("a", 4, 1), "e%d", 2);
  assert_int_equal(diag_error_count(d), 2);
  assert_string_equal(diag_first_message(d), "e1");
  assert_string_equal(diag_text(d), "a:1:1: warning: w\na:2:1: note: n\na:3:1: error: e1\na:4:1: error: e2\n");
  diag_destroy(d);
}

static void error_limit_stops_with_one_line(void **st) {
  (void)st;
  diag *d = diag_create();
  diag_set_max_errors(d, 2);
  for (int i = 1; i <= 5; i++) diag_error(d, at("f", i, 1), "e%d", i);
  assert_int_equal(diag_error_count(d), 2);
  assert_true(diag_too_many(d));
  assert_string_equal(diag_text(d), "f:1:1: error: e1\nf:2:1: error: e2\n"
                                    "error: too many errors (2), stopping\n");
  diag_destroy(d);
}

static void default_limit_is_fifty(void **st) {
  (void)st;
  diag *d = diag_create();
  for (int i = 0; i < 50; i++) diag_error(d, at(NULL, 0, 0), "x");
  assert_false(diag_too_many(d));
  diag_error(d, at(NULL, 0, 0), "x");
  assert_true(diag_too_many(d));
  assert_int_equal(diag_error_count(d), 50);
  diag_destroy(d);
}

static void stream_receives_each_diagnostic(void **st) {
  (void)st;
  FILE *f = tmpfile();
  assert_non_null(f);
  diag *d = diag_create();
  diag_set_stream(d, f);
  diag_add_source(d, "s", "abc\n", 4);
  diag_error(d, at("s", 1, 2), "one");
  diag_error(d, at(NULL, 0, 0), "two");
  rewind(f);
  char buf[256] = {0};
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  assert_string_equal(buf, "s:1:2: error: one\n  abc\n   ^\nerror: two\n");
  assert_string_equal(buf, diag_text(d));
  fclose(f);
  diag_destroy(d);
}

static void long_source_lines_are_cut(void **st) {
  (void)st;
  char line[400];
  memset(line, 'x', sizeof line - 1);
  line[sizeof line - 1] = 0;
  diag *d = diag_create();
  diag_add_source(d, "l", line, strlen(line));
  diag_error(d, at("l", 1, 300), "far");
  const char *t = diag_text(d);
  const char *src = strchr(t, '\n') + 1;
  const char *end = strchr(src, '\n');
  assert_int_equal(end - src, 2 + 240);
  diag_destroy(d);
}

static void destroy_accepts_null(void **st) {
  (void)st;
  diag_destroy(NULL);
}

static void status_strings(void **st) {
  (void)st;
  assert_string_equal(base_status_str(ST_OK), "ok");
  assert_string_equal(base_status_str(ST_INVALID_ARGUMENT), "invalid argument");
  assert_string_equal(base_status_str(ST_RESOURCE_EXHAUSTED), "resource exhausted");
  for (int s = 0; s < ST__COUNT; s++) assert_non_null(base_status_str((base_status)s));
  assert_string_equal(base_status_str(ST__COUNT), "unknown status");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(error_with_location_shows_line_and_caret),
      cmocka_unit_test(last_line_without_newline_and_column_one),
      cmocka_unit_test(tabs_are_kept_under_the_caret),
      cmocka_unit_test(crlf_and_control_characters),
      cmocka_unit_test(no_source_or_no_line),
      cmocka_unit_test(warnings_and_notes_are_not_counted),
      cmocka_unit_test(error_limit_stops_with_one_line),
      cmocka_unit_test(default_limit_is_fifty),
      cmocka_unit_test(stream_receives_each_diagnostic),
      cmocka_unit_test(long_source_lines_are_cut),
      cmocka_unit_test(destroy_accepts_null),
      cmocka_unit_test(status_strings),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
