/* test_coll.c: chunk bounds, the combining order and the rendezvous of
 * replicas on threads (base/coll.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <string.h>

#include "base/coll.h"

static void chunks_cover_in_order(void **st) {
  (void)st;
  int64_t lo, hi;
  /* 10 over 4: floor(c*10/4) = 0, 2, 5, 7, 10 */
  const int64_t want[] = {0, 2, 5, 7, 10};
  for (int c = 0; c < 4; c++) {
    coll_chunk(10, 4, c, &lo, &hi);
    assert_int_equal(lo, want[c]);
    assert_int_equal(hi, want[c + 1]);
  }
  coll_chunk(2, 3, 0, &lo, &hi); /* fewer elements than chunks: empty ones */
  assert_int_equal(hi - lo, 0);
  coll_chunk(2, 3, 2, &lo, &hi);
  assert_int_equal(lo, 1);
  assert_int_equal(hi, 2);
  for (int64_t count = 0; count < 40; count++)
    for (int n = 1; n < 9; n++) {
      int64_t prev = 0;
      for (int c = 0; c < n; c++) {
        coll_chunk(count, n, c, &lo, &hi);
        assert_int_equal(lo, prev);
        assert_true(hi >= lo);
        prev = hi;
      }
      assert_int_equal(prev, count);
    }
}

static void order_is_a_ring_ending_at_the_chunk(void **st) {
  (void)st;
  /* group of 4, chunk 1: members 2, 3, 0, 1 */
  const int want[] = {2, 3, 0, 1};
  for (int k = 0; k < 4; k++) assert_int_equal(coll_term(4, 1, k), want[k]);
  assert_int_equal(coll_term(1, 0, 0), 0);
  assert_int_equal(coll_term(3, 2, 0), 0);
}

typedef struct member {
  coll_rdv *r;
  int m;
  uint64_t key;
  float value;
  float sum; /* chunk 0's fold, read from every member's deposit */
  int rc;
  int leave_early;
  char msg[256];
} member;

static void *member_main(void *p) {
  member *x = p;
  if (x->leave_early) {
    coll_rdv_leave(x->r, x->m, "test stop");
    return NULL;
  }
  const void *all[4];
  x->rc = coll_rdv_exchange(x->r, x->m, x->key, &x->value, all, x->msg, sizeof x->msg);
  if (x->rc == 0) {
    int n = coll_rdv_members(x->r);
    x->sum = *(const float *)all[coll_term(n, 0, 0)];
    for (int k = 1; k < n; k++) x->sum += *(const float *)all[coll_term(n, 0, k)];
    x->rc = coll_rdv_release(x->r, x->m, x->msg, sizeof x->msg);
  }
  coll_rdv_leave(x->r, x->m, NULL);
  return NULL;
}

static void run_members(member *ms, int n) {
  pthread_t t[4];
  for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, member_main, &ms[i]);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
}

static void exchange_folds_in_ring_order(void **st) {
  (void)st;
  coll_rdv *r = coll_rdv_create(4);
  member ms[4];
  /* In ring order for chunk 0 (members 1, 2, 3, 0) the sum is
   * ((1e8 + 1) + 1) + -1e8 = 0 in f32; group order would give 2. */
  const float v[] = {-1e8f, 1e8f, 1.0f, 1.0f};
  for (int i = 0; i < 4; i++)
    ms[i] = (member){.r = r, .m = i, .key = 7, .value = v[i]};
  run_members(ms, 4);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(ms[i].rc, 0);
    assert_true(ms[i].sum == 0.0f);
  }
  coll_rdv_destroy(r);
}

static void different_keys_fail_everyone(void **st) {
  (void)st;
  coll_rdv *r = coll_rdv_create(2);
  member ms[2] = {{.r = r, .m = 0, .key = 1}, {.r = r, .m = 1, .key = 2}};
  run_members(ms, 2);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(ms[i].rc, -1);
    assert_non_null(strstr(ms[i].msg, "disagree"));
  }
  coll_rdv_destroy(r);
}

static void a_member_that_leaves_ends_the_wait(void **st) {
  (void)st;
  coll_rdv *r = coll_rdv_create(3);
  member ms[3] = {{.r = r, .m = 0, .key = 5},
                  {.r = r, .m = 1, .key = 5},
                  {.r = r, .m = 2, .key = 5, .leave_early = 1}};
  run_members(ms, 3);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(ms[i].rc, -1);
    assert_non_null(strstr(ms[i].msg, "replica 2 stopped (test stop)"));
  }
  coll_rdv_destroy(r);
}

typedef struct sized {
  coll_comm *c;
  int m;
  size_t bytes;
  int rc;
  char msg[256];
} sized;

static void *sized_main(void *p) {
  sized *x = p;
  const void *all[2];
  int v = x->m;
  x->rc = x->c->ops->exchange(x->c, x->m, 9, &v, x->bytes, all, x->msg, sizeof x->msg);
  if (x->rc == 0) x->rc = x->c->ops->release(x->c, x->m, x->msg, sizeof x->msg);
  x->c->ops->leave(x->c, x->m, NULL);
  return NULL;
}

static void run_sized(coll_comm *c, sized *xs) {
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, sized_main, &xs[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
}

static void comm_view_checks_sizes(void **st) {
  (void)st;
  coll_rdv *r = coll_rdv_create(2);
  coll_comm *c = coll_rdv_comm(r);
  assert_int_equal(c->n, 2);
  assert_int_equal(c->local, 2);
  sized ok[2] = {{.c = c, .m = 0, .bytes = 4}, {.c = c, .m = 1, .bytes = 4}};
  run_sized(c, ok);
  assert_int_equal(ok[0].rc, 0);
  assert_int_equal(ok[1].rc, 0);
  coll_rdv_destroy(r);
  r = coll_rdv_create(2);
  c = coll_rdv_comm(r);
  sized bad[2] = {{.c = c, .m = 0, .bytes = 4}, {.c = c, .m = 1, .bytes = 8}};
  run_sized(c, bad);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(bad[i].rc, -1);
    assert_non_null(strstr(bad[i].msg, "disagree on the size"));
  }
  coll_rdv_destroy(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(chunks_cover_in_order),
      cmocka_unit_test(order_is_a_ring_ending_at_the_chunk),
      cmocka_unit_test(exchange_folds_in_ring_order),
      cmocka_unit_test(different_keys_fail_everyone),
      cmocka_unit_test(a_member_that_leaves_ends_the_wait),
      cmocka_unit_test(comm_view_checks_sizes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
