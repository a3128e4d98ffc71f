/* test_containers.c: the string map, the string builder and the checked
 * size arithmetic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/base.h"

static void strmap_put_get_replace(void **st) {
  (void)st;
  arena *a = arena_create();
  strmap *m = strmap_create(a);
  assert_int_equal(strmap_get(m, "x", 1), -1);
  strmap_put(m, "add.1", 5, 7);
  strmap_put(m, "add", 3, 8);
  assert_int_equal(strmap_get(m, "add.1", 5), 7);
  assert_int_equal(strmap_get(m, "add", 3), 8);
  assert_int_equal(strmap_get(m, "ad", 2), -1);
  strmap_put(m, "add", 3, 0);
  assert_int_equal(strmap_get(m, "add", 3), 0);
  assert_int_equal(strmap_count(m), 2);
  /* keys are (pointer, length): a prefix of a longer buffer is its own key */
  assert_int_equal(strmap_get(m, "add.17", 5), 7);
  strmap_put(m, "", 0, 3);
  assert_int_equal(strmap_get(m, "", 0), 3);
  arena_destroy(a);
}

static void strmap_copies_keys(void **st) {
  (void)st;
  arena *a = arena_create();
  strmap *m = strmap_create(a);
  char key[8] = "temp";
  strmap_put(m, key, 4, 1);
  memcpy(key, "zzzz", 4);
  assert_int_equal(strmap_get(m, "temp", 4), 1);
  assert_int_equal(strmap_get(m, "zzzz", 4), -1);
  arena_destroy(a);
}

static void strmap_grows_past_many_keys(void **st) {
  (void)st;
  arena *a = arena_create();
  strmap *m = strmap_create(a);
  char k[32];
  for (int i = 0; i < 5000; i++) {
    int n = snprintf(k, sizeof k, "k%d", i);
    strmap_put(m, k, (size_t)n, i);
  }
  assert_int_equal(strmap_count(m), 5000);
  for (int i = 0; i < 5000; i++) {
    int n = snprintf(k, sizeof k, "k%d", i);
    assert_int_equal(strmap_get(m, k, (size_t)n), i);
  }
  assert_int_equal(strmap_get(m, "k5000", 5), -1);
  arena_destroy(a);
}

static void strbuf_builds_text(void **st) {
  (void)st;
  strbuf b;
  sb_init(&b);
  assert_string_equal(sb_str(&b), "");
  sb_putc(&b, '[');
  sb_puts(&b, "f32");
  sb_putn(&b, "[2,3]xyz", 5);
  sb_printf(&b, "{%d,%d}", 1, 0);
  sb_putc(&b, ']');
  assert_string_equal(sb_str(&b), "[f32[2,3]{1,0}]");
  assert_int_equal(b.len, strlen("[f32[2,3]{1,0}]"));
  sb_free(&b);
  assert_int_equal(b.len, 0);
  assert_string_equal(sb_str(&b), "");
  sb_free(&b);
}

static void strbuf_grows_for_long_text(void **st) {
  (void)st;
  strbuf b;
  sb_init(&b);
  for (int i = 0; i < 1000; i++) sb_printf(&b, "%04d,", i);
  assert_int_equal(b.len, 5000);
  assert_memory_equal(b.s + 4995, "0999,", 5);
  assert_int_equal(b.s[5000], 0);
  char big[3000];
  memset(big, 'q', sizeof big - 1);
  big[sizeof big - 1] = 0;
  sb_printf(&b, "%s", big);
  assert_int_equal(b.len, 5000 + 2999);
  sb_free(&b);
}

static void overflow_helpers(void **st) {
  (void)st;
  size_t out = 123;
  assert_false(base_mul_overflow(6, 7, &out));
  assert_int_equal(out, 42);
  out = 123;
  assert_true(base_mul_overflow(SIZE_MAX / 2 + 1, 2, &out));
  assert_int_equal(out, 123); /* unchanged on overflow */
  assert_false(base_mul_overflow(SIZE_MAX, 1, &out));
  assert_true(out == SIZE_MAX);
  assert_false(base_mul_overflow(0, SIZE_MAX, &out));
  assert_int_equal(out, 0);
  out = 5;
  assert_true(base_add_overflow(SIZE_MAX, 1, &out));
  assert_int_equal(out, 5);
  assert_false(base_add_overflow(SIZE_MAX - 1, 1, &out));
  assert_true(out == SIZE_MAX);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(strmap_put_get_replace),
      cmocka_unit_test(strmap_copies_keys),
      cmocka_unit_test(strmap_grows_past_many_keys),
      cmocka_unit_test(strbuf_builds_text),
      cmocka_unit_test(strbuf_grows_for_long_text),
      cmocka_unit_test(overflow_helpers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
