/* test_api_custom_call.c: custom-calls through libtpucc's public header:
 * host functions registered on a session run on interp and cpu with
 * hand-computed results (array and tuple operands and results, the
 * backend_config string, replacement, failure messages); the identity
 * targets run on every target; unknown targets and host functions on the
 * TPU are located errors naming the target. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tpucc.h"

/* out = scale * a + b, scale from backend_config "scale=K" (default 1). */
static const char axpy_hlo[] =
    "HloModule axpy\n"
    "ENTRY %main (a: f32[4], b: f32[4]) -> f32[4] {\n"
    "  %a = f32[4] parameter(0)\n"
    "  %b = f32[4] parameter(1)\n"
    "  ROOT %r = f32[4] custom-call(f32[4] %a, f32[4] %b), custom_call_target=\"my_axpy\", "
    "backend_config=\"scale=3\"\n"
    "}\n";

/* A tuple operand in, a tuple out: (sum of the f32 leaf, count of s32 > 0). */
static const char tuple_hlo[] =
    "HloModule tup\n"
    "ENTRY %main (x: f32[3], k: s32[2]) -> (f32[], s32[]) {\n"
    "  %x = f32[3] parameter(0)\n"
    "  %k = s32[2] parameter(1)\n"
    "  %t = (f32[3], s32[2]) tuple(f32[3] %x, s32[2] %k)\n"
    "  %c = (f32[], s32[]) custom-call((f32[3], s32[2]) %t), custom_call_target=\"stats\"\n"
    "  %s = f32[] get-tuple-element((f32[], s32[]) %c), index=0\n"
    "  %n = s32[] get-tuple-element((f32[], s32[]) %c), index=1\n"
    "  %s2 = f32[] add(f32[] %s, f32[] %s)\n"
    "  ROOT %o = (f32[], s32[]) tuple(f32[] %s2, s32[] %n)\n"
    "}\n";

/* After a "HloModule NAME[, attributes]" line. */
static const char sharding_body[] =
    "ENTRY %main (a: f32[2,2]) -> f32[2,2] {\n"
    "  %a = f32[2,2] parameter(0)\n"
    "  %s = f32[2,2] custom-call(f32[2,2] %a), custom_call_target=\"Sharding\", "
    "sharding={replicated}\n"
    "  ROOT %r = f32[2,2] multiply(f32[2,2] %s, f32[2,2] %s)\n"
    "}\n";

static int calls;

static tpucc_status_t my_axpy(void *user, const tpucc_tensor_t *ops, int32_t nops,
                              tpucc_tensor_t *res, int32_t nres, const char *config, char *err,
                              size_t errlen) {
  calls++;
  float bias = user ? *(const float *)user : 0.0f;
  if (nops != 2 || nres != 1 || ops[0].dtype != TPUCC_F32 || ops[0].dims[0] != 4) {
    snprintf(err, errlen, "unexpected signature");
    return TPUCC_INVALID_ARGUMENT;
  }
  float scale = 1;
  if (strncmp(config, "scale=", 6) == 0) scale = strtof(config + 6, NULL);
  const float *a = ops[0].data, *b = ops[1].data;
  float *o = res[0].data;
  for (int i = 0; i < 4; i++) o[i] = scale * a[i] + b[i] + bias;
  return TPUCC_OK;
}

static tpucc_status_t stats(void *user, const tpucc_tensor_t *ops, int32_t nops,
                            tpucc_tensor_t *res, int32_t nres, const char *config, char *err,
                            size_t errlen) {
  (void)user, (void)config;
  if (nops != 2 || nres != 2 || res[0].rank != 0 || res[1].dtype != TPUCC_S32) {
    snprintf(err, errlen, "unexpected signature");
    return TPUCC_INVALID_ARGUMENT;
  }
  const float *x = ops[0].data;
  const int32_t *k = ops[1].data;
  float s = 0;
  for (int i = 0; i < 3; i++) s += x[i];
  int32_t n = 0;
  for (int i = 0; i < 2; i++) n += k[i] > 0;
  memcpy(res[0].data, &s, 4);
  memcpy(res[1].data, &n, 4);
  return TPUCC_OK;
}

static tpucc_status_t refuse(void *user, const tpucc_tensor_t *ops, int32_t nops,
                             tpucc_tensor_t *res, int32_t nres, const char *config, char *err,
                             size_t errlen) {
  (void)user, (void)ops, (void)nops, (void)res, (void)nres, (void)config;
  snprintf(err, errlen, "the device is on fire");
  return TPUCC_INTERNAL;
}

static tpucc_tensor_t vec(tpucc_dtype_t t, int64_t n, void *data) {
  tpucc_tensor_t v;
  memset(&v, 0, sizeof v);
  v.dtype = t;
  v.rank = 1;
  v.dims[0] = n;
  v.data = data;
  v.nbytes = (size_t)n * (size_t)tpucc_dtype_size(t);
  return v;
}

static bool has_target(const char *name) {
  for (int32_t i = 0; i < tpucc_target_count(); i++)
    if (strcmp(tpucc_target_name(i), name) == 0) return true;
  return false;
}

static tpucc_module_t *compile(tpucc_session_t *s, const char *name, const char *text) {
  tpucc_module_t *m = NULL;
  if (tpucc_compile_memory(s, NULL, name, text, strlen(text), &m) != TPUCC_OK)
    fail_msg("compile %s: %s", name, tpucc_session_message(s));
  return m;
}

static tpucc_status_t run(tpucc_module_t *m, const char *target, const tpucc_tensor_t *in,
                          int32_t n, tpucc_result_t **r) {
  tpucc_execute_options_t o;
  tpucc_execute_options_init(&o);
  o.target = target;
  return tpucc_execute(m, &o, in, n, r);
}

static const char *const host_targets[] = {"interp", "cpu"};

static void host_function_array(void **state) {
  (void)state;
  tpucc_session_t *s;
  assert_int_equal(tpucc_session_create(NULL, &s), TPUCC_OK);
  float bias = 0.5f;
  assert_int_equal(tpucc_session_register_custom_call(s, "my_axpy", my_axpy, &bias), TPUCC_OK);
  tpucc_module_t *m = compile(s, "axpy.hlo", axpy_hlo);
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
  tpucc_tensor_t in[2] = {vec(TPUCC_F32, 4, a), vec(TPUCC_F32, 4, b)};
  for (size_t t = 0; t < 2; t++) {
    if (!has_target(host_targets[t])) continue;
    calls = 0;
    tpucc_result_t *r = NULL;
    assert_int_equal(run(m, host_targets[t], in, 2, &r), TPUCC_OK);
    assert_int_equal(calls, 1);
    const float *o = tpucc_result_tensor(r, 0)->data;
    /* 3 * a + b + 0.5 */
    float want[4] = {13.5f, 26.5f, 39.5f, 52.5f};
    for (int i = 0; i < 4; i++) assert_true(o[i] == want[i]);
    tpucc_result_destroy(r);
  }
  /* Registering again replaces the function (and its user data). */
  float bias2 = -1.0f;
  assert_int_equal(tpucc_session_register_custom_call(s, "my_axpy", my_axpy, &bias2), TPUCC_OK);
  tpucc_result_t *r = NULL;
  assert_int_equal(run(m, "interp", in, 2, &r), TPUCC_OK);
  assert_true(((const float *)tpucc_result_tensor(r, 0)->data)[0] == 12.0f); /* 3 + 10 - 1 */
  tpucc_result_destroy(r);
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
}

static void host_function_tuples(void **state) {
  (void)state;
  tpucc_session_t *s;
  assert_int_equal(tpucc_session_create(NULL, &s), TPUCC_OK);
  assert_int_equal(tpucc_session_register_custom_call(s, "stats", stats, NULL), TPUCC_OK);
  tpucc_module_t *m = compile(s, "tup.hlo", tuple_hlo);
  float x[3] = {1.5f, 2.0f, -0.25f};
  int32_t k[2] = {-3, 7};
  tpucc_tensor_t in[2] = {vec(TPUCC_F32, 3, x), vec(TPUCC_S32, 2, k)};
  for (size_t t = 0; t < 2; t++) {
    if (!has_target(host_targets[t])) continue;
    tpucc_result_t *r = NULL;
    assert_int_equal(run(m, host_targets[t], in, 2, &r), TPUCC_OK);
    assert_int_equal(tpucc_result_count(r), 2);
    assert_true(*(const float *)tpucc_result_tensor(r, 0)->data == 6.5f); /* 2 * 3.25 */
    assert_int_equal(*(const int32_t *)tpucc_result_tensor(r, 1)->data, 1);
    tpucc_result_destroy(r);
  }
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
}

static void host_function_failure_is_located(void **state) {
  (void)state;
  tpucc_session_t *s;
  assert_int_equal(tpucc_session_create(NULL, &s), TPUCC_OK);
  assert_int_equal(tpucc_session_register_custom_call(s, "my_axpy", refuse, NULL), TPUCC_OK);
  tpucc_module_t *m = compile(s, "axpy.hlo", axpy_hlo);
  float a[4] = {0}, b[4] = {0};
  tpucc_tensor_t in[2] = {vec(TPUCC_F32, 4, a), vec(TPUCC_F32, 4, b)};
  for (size_t t = 0; t < 2; t++) {
    if (!has_target(host_targets[t])) continue;
    tpucc_result_t *r = NULL;
    assert_int_not_equal(run(m, host_targets[t], in, 2, &r), TPUCC_OK);
    assert_null(r);
    const char *msg = tpucc_session_message(s);
    assert_non_null(strstr(msg, "axpy.hlo:5:"));
    assert_non_null(strstr(msg, "custom-call target 'my_axpy' failed: the device is on fire"));
  }
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
}

static void unknown_and_tpu_targets_are_errors(void **state) {
  (void)state;
  tpucc_session_t *s;
  assert_int_equal(tpucc_session_create(NULL, &s), TPUCC_OK);
  tpucc_module_t *m = compile(s, "axpy.hlo", axpy_hlo);
  float a[4] = {0}, b[4] = {0};
  tpucc_tensor_t in[2] = {vec(TPUCC_F32, 4, a), vec(TPUCC_F32, 4, b)};
  const char *all[] = {"interp", "cpu", "v3"};
  for (size_t t = 0; t < 3; t++) {
    if (!has_target(all[t])) continue;
    tpucc_result_t *r = NULL;
    assert_int_equal(run(m, all[t], in, 2, &r), TPUCC_UNSUPPORTED);
    const char *msg = tpucc_session_message(s);
    assert_non_null(strstr(msg, "axpy.hlo:5:8: "));
    assert_non_null(strstr(msg, "custom-call target 'my_axpy' is unknown to the"));
  }
  /* Registered, the TPU still cannot call the host. */
  assert_int_equal(tpucc_session_register_custom_call(s, "my_axpy", my_axpy, NULL), TPUCC_OK);
  if (has_target("v3")) {
    tpucc_result_t *r = NULL;
    assert_int_equal(run(m, "v3", in, 2, &r), TPUCC_UNSUPPORTED);
    assert_non_null(strstr(tpucc_session_message(s), "custom-call target 'my_axpy' is unknown to the v3"));
  }
  assert_int_equal(tpucc_session_register_custom_call(s, "", my_axpy, NULL),
                   TPUCC_INVALID_ARGUMENT);
  assert_int_equal(tpucc_session_register_custom_call(s, "x", NULL, NULL), TPUCC_INVALID_ARGUMENT);
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
}

static void identity_targets_run_everywhere(void **state) {
  (void)state;
  tpucc_session_t *s;
  assert_int_equal(tpucc_session_create(NULL, &s), TPUCC_OK);
  char text[sizeof sharding_body + 64];
  snprintf(text, sizeof text, "HloModule shard\n%s", sharding_body);
  tpucc_module_t *m = compile(s, "shard.hlo", text);
  float a[4] = {1, -2, 3, 0.5f};
  tpucc_tensor_t in = vec(TPUCC_F32, 4, a);
  in.rank = 2;
  in.dims[0] = in.dims[1] = 2;
  const char *all[] = {"interp", "cpu", "v3"};
  for (size_t t = 0; t < 3; t++) {
    if (!has_target(all[t])) continue;
    tpucc_result_t *r = NULL;
    assert_int_equal(run(m, all[t], &in, 1, &r), TPUCC_OK);
    const float *o = tpucc_result_tensor(r, 0)->data;
    float want[4] = {1, 4, 9, 0.25f};
    for (int i = 0; i < 4; i++) assert_true(o[i] == want[i]);
    tpucc_result_destroy(r);
  }
  tpucc_module_destroy(m);
  /* Two partitions ask for SPMD partitioning, which no target does. */
  snprintf(text, sizeof text, "HloModule shard, num_partitions=2\n%s", sharding_body);
  m = compile(s, "shard2.hlo", text);
  tpucc_result_t *r = NULL;
  assert_int_equal(run(m, "interp", &in, 1, &r), TPUCC_UNSUPPORTED);
  assert_non_null(strstr(tpucc_session_message(s), "shard2.hlo:4:3: custom-call 'Sharding' "
                                                   "needs SPMD partitioning: the module asks "
                                                   "for 2 partitions (num_partitions)"));
  assert_non_null(strstr(tpucc_session_message(s), "target interp runs 1"));
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(host_function_array),
      cmocka_unit_test(host_function_tuples),
      cmocka_unit_test(host_function_failure_is_located),
      cmocka_unit_test(unknown_and_tpu_targets_are_errors),
      cmocka_unit_test(identity_targets_run_everywhere),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
