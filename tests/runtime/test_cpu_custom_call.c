/* test_cpu_custom_call.c: host functions for custom-calls on libtpurt-cpu
 * devices, through the public API only: a function given in the device
 * options runs when a program loaded as HLO text calls its target (values
 * by hand), its failure fails the execution with the custom-call's
 * location, a v3 device refuses the program naming the target, and
 * malformed tables are refused at device creation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "rt_test.h"

static const char clip_hlo[] =
    "HloModule clip\n"
    "ENTRY e {\n"
    "  x = f32[5] parameter(0)\n"
    "  two = f32[5] add(x, x)\n"
    "  ROOT c = f32[5] custom-call(two), custom_call_target=\"clip\", backend_config=\"1.5\"\n"
    "}\n";

/* results[0] = clamp(operand, -limit, limit), limit from backend_config;
 * *user counts calls; a limit of 0 fails. */
static tpurt_status_t clip(void *user, const tpurt_host_tensor_t *ops, int nops,
                           tpurt_host_tensor_t *res, int nres, const char *config, char *err,
                           size_t errlen) {
  int *calls = user;
  (*calls)++;
  float lim = strtof(config, NULL);
  if (nops != 1 || nres != 1 || ops[0].dtype != TPURT_F32 || ops[0].rank != 1 ||
      ops[0].dims[0] != 5 || res[0].bytes != 20 || lim == 0) {
    snprintf(err, errlen, "clip: bad call (limit %s)", config);
    return TPURT_INVALID_ARGUMENT;
  }
  const float *x = ops[0].data;
  float *y = res[0].data;
  for (int i = 0; i < 5; i++) y[i] = x[i] < -lim ? -lim : x[i] > lim ? lim : x[i];
  return TPURT_OK;
}

static tpurt_device_t *device_with(const char *spec, const tpurt_custom_call_t *cc, size_t n,
                                   tpurt_status_t *st) {
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = spec;
  o.custom_calls = cc;
  o.ncustom_calls = n;
  tpurt_device_t *dev = NULL;
  *st = tpurt_device_create(&o, &dev);
  return dev;
}

static void host_function_runs_on_cpu(void **state) {
  (void)state;
  int calls = 0;
  tpurt_custom_call_t cc = {"clip", clip, &calls};
  tpurt_status_t st;
  tpurt_device_t *dev = device_with("cpu,threads=2", &cc, 1, &st);
  assert_int_equal(st, TPURT_OK);
  tpurt_program_t *p = NULL;
  if (tpurt_program_load(dev, clip_hlo, sizeof clip_hlo - 1, &p) != TPURT_OK)
    fail_msg("load: %s", tpurt_device_message(dev));
  float x[5] = {-2, -0.5f, 0.25f, 0.7f, 3};
  int64_t dims[1] = {5};
  tpurt_buffer_t *in = NULL, *out = NULL;
  assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 1, dims, x, sizeof x, &in), TPURT_OK);
  for (int run = 1; run <= 2; run++) {
    assert_int_equal(tpurt_program_execute(p, &in, 1, &out, 1, NULL), TPURT_OK);
    float y[5];
    assert_int_equal(tpurt_buffer_read(out, y, sizeof y), TPURT_OK);
    /* clamp(2x, -1.5, 1.5) */
    const float want[5] = {-1.5f, -1.0f, 0.5f, 1.4f, 1.5f};
    for (int i = 0; i < 5; i++) assert_true(y[i] == want[i]);
    assert_int_equal(calls, run);
    tpurt_buffer_destroy(out);
  }
  tpurt_buffer_destroy(in);
  tpurt_program_destroy(p);
  tpurt_device_destroy(dev);
}

static void host_function_failure_and_tpu_refusal(void **state) {
  (void)state;
  int calls = 0;
  tpurt_custom_call_t cc = {"clip", clip, &calls};
  tpurt_status_t st;
  tpurt_device_t *dev = device_with("cpu", &cc, 1, &st);
  assert_int_equal(st, TPURT_OK);
  /* backend_config 0: the function refuses. */
  char text[sizeof clip_hlo];
  memcpy(text, clip_hlo, sizeof clip_hlo);
  char *cfg = strstr(text, "\"1.5\"");
  memcpy(cfg, "\"0.0\"", 5);
  tpurt_program_t *p = NULL;
  assert_int_equal(tpurt_program_load(dev, text, sizeof text - 1, &p), TPURT_OK);
  float x[5] = {0};
  int64_t dims[1] = {5};
  tpurt_buffer_t *in = NULL, *out = NULL;
  assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 1, dims, x, sizeof x, &in), TPURT_OK);
  assert_int_not_equal(tpurt_program_execute(p, &in, 1, &out, 1, NULL), TPURT_OK);
  assert_non_null(strstr(tpurt_device_message(dev),
                         "custom-call target 'clip' failed: clip: bad call (limit 0.0)"));
  tpurt_buffer_destroy(in);
  tpurt_program_destroy(p);
  tpurt_device_destroy(dev);
  /* The TPU cannot call the host. */
  dev = device_with("v3", &cc, 1, &st);
  assert_int_equal(st, TPURT_OK);
  p = NULL;
  assert_int_not_equal(tpurt_program_load(dev, clip_hlo, sizeof clip_hlo - 1, &p), TPURT_OK);
  assert_null(p);
  assert_non_null(strstr(tpurt_device_message(dev), "custom-call target 'clip' is unknown to the v3"));
  tpurt_device_destroy(dev);
  /* Without the function, the cpu refuses too. */
  dev = device_with("cpu", NULL, 0, &st);
  assert_int_equal(tpurt_program_load(dev, clip_hlo, sizeof clip_hlo - 1, &p), TPURT_UNSUPPORTED);
  assert_non_null(strstr(tpurt_device_message(dev), "custom-call target 'clip' is unknown to the cpu"));
  tpurt_device_destroy(dev);
  assert_int_equal(calls, 1);
}

static void malformed_tables_are_refused(void **state) {
  (void)state;
  tpurt_custom_call_t bad[2] = {{"clip", clip, NULL}, {"", clip, NULL}};
  tpurt_status_t st;
  assert_null(device_with("cpu", bad, 2, &st));
  assert_int_equal(st, TPURT_INVALID_ARGUMENT);
  bad[1] = (tpurt_custom_call_t){"x", NULL, NULL};
  assert_null(device_with("cpu", bad, 2, &st));
  assert_int_equal(st, TPURT_INVALID_ARGUMENT);
  assert_null(device_with("cpu", NULL, 3, &st));
  assert_int_equal(st, TPURT_INVALID_ARGUMENT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(host_function_runs_on_cpu),
      cmocka_unit_test(host_function_failure_and_tpu_refusal),
      cmocka_unit_test(malformed_tables_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
