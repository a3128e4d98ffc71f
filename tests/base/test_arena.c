/* test_arena.c: the bump allocator: alignment, zeroing, big requests,
 * marks and resets across blocks, string helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/base.h"

static void allocations_are_16_byte_aligned_and_zeroed(void **st) {
  (void)st;
  arena *a = arena_create();
  for (size_t n = 0; n < 100; n++) {
    unsigned char *p = arena_alloc(a, n);
    assert_int_equal((uintptr_t)p % 16, 0);
    for (size_t i = 0; i < n; i++) assert_int_equal(p[i], 0);
    memset(p, 0xAB, n); /* the next allocation must still come back zeroed */
  }
  arena_destroy(a);
}

static void distinct_allocations_do_not_overlap(void **st) {
  (void)st;
  arena *a = arena_create();
  char *x = arena_alloc(a, 10), *y = arena_alloc(a, 10);
  assert_true(y >= x + 10 || x >= y + 10);
  assert_int_equal(arena_bytes(a), 32); /* two requests rounded up to 16 */
  arena_destroy(a);
}

static void big_allocation_gets_its_own_block(void **st) {
  (void)st;
  arena *a = arena_create();
  char *small = arena_alloc(a, 16);
  size_t big = (size_t)3 << 20;
  unsigned char *p = arena_alloc(a, big);
  assert_non_null(p);
  assert_int_equal((uintptr_t)p % 16, 0);
  assert_int_equal(p[0], 0);
  assert_int_equal(p[big - 1], 0);
  memset(p, 1, big);
  small[0] = 'x'; /* still valid */
  char *after = arena_alloc(a, 32);
  assert_int_equal(after[0], 0);
  assert_true(arena_bytes(a) >= big + 48);
  arena_destroy(a);
}

static void reset_to_mark_rewinds_and_reuses(void **st) {
  (void)st;
  arena *a = arena_create();
  arena_alloc(a, 100);
  size_t before = arena_bytes(a);
  arena_mark m = arena_get_mark(a);
  char *p = arena_alloc(a, 64);
  arena_alloc(a, 1000);
  arena_reset(a, m);
  assert_int_equal(arena_bytes(a), before);
  char *q = arena_alloc(a, 64);
  assert_ptr_equal(p, q);
  assert_int_equal(q[0], 0);
  arena_destroy(a);
}

static void reset_frees_newer_blocks(void **st) {
  (void)st;
  arena *a = arena_create();
  arena_alloc(a, 8);
  size_t before = arena_bytes(a);
  arena_mark m = arena_get_mark(a);
  for (int i = 0; i < 5; i++) arena_alloc(a, (size_t)200 * 1024); /* several blocks */
  assert_true(arena_bytes(a) >= before + 5 * 200 * 1024);
  arena_reset(a, m);
  assert_int_equal(arena_bytes(a), before);
  arena_alloc(a, 8);
  arena_destroy(a);
}

static void mark_on_empty_arena(void **st) {
  (void)st;
  arena *a = arena_create();
  arena_mark m = arena_get_mark(a);
  arena_alloc(a, 70 * 1024);
  arena_alloc(a, 10);
  arena_reset(a, m);
  assert_int_equal(arena_bytes(a), 0);
  assert_non_null(arena_alloc(a, 1));
  arena_destroy(a);
}

static void string_helpers_copy(void **st) {
  (void)st;
  arena *a = arena_create();
  char src[] = "hello world";
  char *s = arena_strdup(a, src);
  src[0] = 'j';
  assert_string_equal(s, "hello world");
  assert_string_equal(arena_strndup(a, "abcdef", 3), "abc");
  assert_string_equal(arena_printf(a, "%s-%d-%05.1f", "x", 42, 2.25), "x-42-002.2");
  assert_string_equal(arena_printf(a, "%s", ""), "");
  int v[3] = {1, 2, 3};
  int *d = arena_dup(a, v, sizeof v);
  assert_int_equal(d[2], 3);
  assert_non_null(arena_dup(a, NULL, 0));
  int64_t *arr = arena_array(a, 1000, sizeof(int64_t));
  assert_int_equal(arr[999], 0);
  arena_destroy(a);
}

static void destroy_accepts_null(void **st) {
  (void)st;
  arena_destroy(NULL);
}

static void vec_push_grows(void **st) {
  (void)st;
  arena *a = arena_create();
  VEC(int) xs = {0};
  for (int i = 0; i < 1000; i++) VEC_PUSH(a, xs, i * 3);
  assert_int_equal(xs.n, 1000);
  assert_true(xs.cap >= 1000);
  for (int i = 0; i < 1000; i++) assert_int_equal(xs.v[i], i * 3);
  arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(allocations_are_16_byte_aligned_and_zeroed),
      cmocka_unit_test(distinct_allocations_do_not_overlap),
      cmocka_unit_test(big_allocation_gets_its_own_block),
      cmocka_unit_test(reset_to_mark_rewinds_and_reuses),
      cmocka_unit_test(reset_frees_newer_blocks),
      cmocka_unit_test(mark_on_empty_arena),
      cmocka_unit_test(string_helpers_copy),
      cmocka_unit_test(destroy_accepts_null),
      cmocka_unit_test(vec_push_grows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
