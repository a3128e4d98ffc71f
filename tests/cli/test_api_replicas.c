/* test_api_replicas.c: tpucc_execute_options_t.replicas through libtpucc's
 * public header, with hand-computed results on interp and cpu: the default
 * (the module's replica_count on targets that run replicas), an input given to every replica and one
 * stacked per replica, results stacked along a leading dimension (tuples
 * element by element), one replica unstacked, and the errors (an input
 * stacked for another count, a module written for more replicas, a
 * target that runs one replica asked for more). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tpucc.h"

/* (all-reduce sum over all, replica-id) for replica_count=4 */
static const char sum4_hlo[] =
    "HloModule sum4, replica_count=4\n"
    "sum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"
    "ENTRY e {\n  p = f32[2] parameter(0)\n"
    "  r = f32[2] all-reduce(p), replica_groups={}, to_apply=sum\n"
    "  i = u32[] replica-id()\n"
    "  ROOT t = (f32[2], u32[]) tuple(r, i)\n}\n";

static tpucc_tensor_t f32s(int rank, const int64_t *dims, float *data) {
  tpucc_tensor_t t;
  memset(&t, 0, sizeof t);
  t.dtype = TPUCC_F32;
  t.rank = rank;
  size_t n = 1;
  for (int i = 0; i < rank; i++) {
    t.dims[i] = dims[i];
    n *= (size_t)dims[i];
  }
  t.data = data;
  t.nbytes = n * 4;
  return t;
}

static tpucc_module_t *compile(tpucc_session_t *s) {
  tpucc_module_t *m = NULL;
  assert_int_equal(tpucc_compile_memory(s, NULL, "sum4.hlo", sum4_hlo, strlen(sum4_hlo), &m),
                   TPUCC_OK);
  return m;
}

/* The cases below on a target that runs replicas. */
static void split_and_stack_on(const char *target) {
  tpucc_session_t *s = NULL;
  assert_int_equal(tpucc_session_create(NULL, &s), TPUCC_OK);
  tpucc_module_t *m = compile(s);
  tpucc_execute_options_t o;
  tpucc_execute_options_init(&o);
  o.target = target;
  /* the same input to every replica; replicas 0 (default: replica_count) */
  float same[2] = {1.5f, -2};
  tpucc_tensor_t in = f32s(1, (int64_t[]){2}, same);
  tpucc_result_t *r = NULL;
  assert_int_equal(tpucc_execute(m, &o, &in, 1, &r), TPUCC_OK);
  assert_int_equal(tpucc_result_count(r), 2);
  const tpucc_tensor_t *sum = tpucc_result_tensor(r, 0), *ids = tpucc_result_tensor(r, 1);
  assert_int_equal(sum->rank, 2);
  assert_int_equal(sum->dims[0], 4);
  assert_int_equal(ids->rank, 1);
  assert_int_equal(ids->dtype, TPUCC_U32);
  for (int i = 0; i < 4; i++) {
    assert_true(((const float *)sum->data)[2 * i] == 6.0f);
    assert_true(((const float *)sum->data)[2 * i + 1] == -8.0f);
    assert_int_equal(((const uint32_t *)ids->data)[i], (uint32_t)i);
  }
  tpucc_result_destroy(r);
  /* one row per replica */
  float rows[8] = {1, 10, 2, 20, 3, 30, 4, 40};
  in = f32s(2, (int64_t[]){4, 2}, rows);
  o.replicas = 4;
  assert_int_equal(tpucc_execute(m, &o, &in, 1, &r), TPUCC_OK);
  sum = tpucc_result_tensor(r, 0);
  for (int i = 0; i < 4; i++) {
    assert_true(((const float *)sum->data)[2 * i] == 10.0f);
    assert_true(((const float *)sum->data)[2 * i + 1] == 100.0f);
  }
  tpucc_result_destroy(r);
  /* stacked for another count */
  o.replicas = 0;
  in = f32s(2, (int64_t[]){2, 2}, rows);
  assert_int_equal(tpucc_execute(m, &o, &in, 1, &r), TPUCC_INVALID_ARGUMENT);
  assert_non_null(strstr(tpucc_session_message(s), "or 4 stacked, one per replica"));
  /* fewer replicas than the module is written for */
  in = f32s(1, (int64_t[]){2}, same);
  o.replicas = 2;
  assert_int_equal(tpucc_execute(m, &o, &in, 1, &r), TPUCC_UNSUPPORTED);
  char want[128];
  snprintf(want, sizeof want,
           "sum4.hlo:7:7: module asks for 4 replicas (replica_count); target %s runs 2", target);
  assert_non_null(strstr(tpucc_session_message(s), want));
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
}

/* interp, and the cpu (one host thread per replica) when built. */
static void replicas_split_and_stack(void **state) {
  (void)state;
  split_and_stack_on("interp");
  for (int32_t i = 0; i < tpucc_target_count(); i++)
    if (!strcmp(tpucc_target_name(i), "cpu")) split_and_stack_on("cpu");
}

/* A target that runs one replica refuses more, whatever the module. */
static void one_replica_targets_refuse_more(void **state) {
  (void)state;
  tpucc_session_t *s = NULL;
  assert_int_equal(tpucc_session_create(NULL, &s), TPUCC_OK);
  tpucc_module_t *m = compile(s);
  float same[2] = {1, 2};
  tpucc_tensor_t in = f32s(1, (int64_t[]){2}, same);
  tpucc_execute_options_t o;
  tpucc_execute_options_init(&o);
  o.replicas = 4;
  for (int32_t i = 0; i < tpucc_target_count(); i++) {
    const char *t = tpucc_target_name(i);
    if (!strcmp(t, "interp") || !strcmp(t, "cpu")) continue; /* they run replicas */
    o.target = t;
    tpucc_result_t *r = NULL;
    assert_int_equal(tpucc_execute(m, &o, &in, 1, &r), TPUCC_UNSUPPORTED);
    char want[96];
    snprintf(want, sizeof want, "target %s runs 1 replica, 4 asked for", t);
    assert_non_null(strstr(tpucc_session_message(s), want));
  }
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(replicas_split_and_stack),
      cmocka_unit_test(one_replica_targets_refuse_more),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
