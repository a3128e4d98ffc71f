/* test_donate.c: donation through the public API of libtpurt-cpu (the
 * state a training step keeps on the device): the aliases an HLO header's
 * input_output_alias declares, execute_donated writing the result into the
 * donated buffer step after step (values against plain C), results that
 * are not aliased still new, the program compiled once (compile_seconds
 * unchanged, executions counted), tpurt_program_set_alias's checks, a
 * donated buffer passed twice, tpurt_buffer_write; on the cpu and v3
 * devices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tpurt.h"

/* One SGD step: w' = w - 0.5 g, and w' + g, with w' replacing w. */
static const char step_hlo[] =
    "HloModule sgd, input_output_alias={ {0}: (0, {}, may-alias) }\n"
    "ENTRY e {\n"
    "  w = f32[4] parameter(0)\n"
    "  g = f32[4] parameter(1)\n"
    "  h = f32[] constant(0.5)\n"
    "  hb = f32[4] broadcast(h), dimensions={}\n"
    "  d = f32[4] multiply(hb, g)\n"
    "  w2 = f32[4] subtract(w, d)\n"
    "  s = f32[4] add(w2, g)\n"
    "  ROOT t = (f32[4], f32[4]) tuple(w2, s)\n"
    "}\n";

static tpurt_device_t *open_device(const char *spec) {
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = spec;
  tpurt_device_t *d = NULL;
  assert_int_equal(tpurt_device_create(&o, &d), TPURT_OK);
  return d;
}

static void steps_on(const char *spec) {
  tpurt_device_t *dev = open_device(spec);
  tpurt_program_t *p = NULL;
  assert_int_equal(tpurt_program_load(dev, step_hlo, strlen(step_hlo), &p), TPURT_OK);
  assert_int_equal(tpurt_program_result_alias(p, 0), 0);
  assert_int_equal(tpurt_program_result_alias(p, 1), -1);
  float w[4] = {1, 2, 3, 4}, g[4] = {0.5f, -1, 2, 0.25f}, got[4], s[4];
  int64_t dims[1] = {4};
  tpurt_buffer_t *in[2] = {0}, *out[2] = {0};
  assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 1, dims, w, sizeof w, &in[0]), TPURT_OK);
  assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 1, dims, g, sizeof g, &in[1]), TPURT_OK);
  double compiled = -1, again = -2, runs = 0;
  tpurt_program_metric(p, "compile_seconds", &compiled);
  for (int step = 1; step <= 3; step++) {
    assert_int_equal(tpurt_program_execute_donated(p, in, 2, out, 2, NULL), TPURT_OK);
    assert_null(out[0]); /* written into in[0] */
    assert_non_null(out[1]);
    for (int i = 0; i < 4; i++) w[i] -= 0.5f * g[i];
    assert_int_equal(tpurt_buffer_read(in[0], got, sizeof got), TPURT_OK);
    assert_int_equal(tpurt_buffer_read(out[1], s, sizeof s), TPURT_OK);
    for (int i = 0; i < 4; i++) {
      assert_true(got[i] == w[i]);
      assert_true(s[i] == w[i] + g[i]);
    }
    tpurt_buffer_destroy(out[1]);
    out[1] = NULL;
  }
  tpurt_program_metric(p, "compile_seconds", &again);
  tpurt_program_metric(p, "executions", &runs);
  assert_true(compiled == again);
  assert_true(runs == 3);
  /* Plain execute leaves the parameter alone and makes every result. */
  assert_int_equal(tpurt_program_execute(p, in, 2, out, 2, NULL), TPURT_OK);
  assert_non_null(out[0]);
  assert_int_equal(tpurt_buffer_read(in[0], got, sizeof got), TPURT_OK);
  for (int i = 0; i < 4; i++) assert_true(got[i] == w[i]);
  tpurt_buffer_destroy(out[0]);
  tpurt_buffer_destroy(out[1]);
  /* A donated buffer may not also be another parameter. */
  tpurt_buffer_t *twice[2] = {in[0], in[0]};
  assert_int_equal(tpurt_program_execute_donated(p, twice, 2, out, 2, NULL), TPURT_INVALID_ARGUMENT);
  assert_non_null(strstr(tpurt_device_message(dev), "is donated to result 0 and also passed"));
  /* tpurt_buffer_write replaces the contents, of the exact size only. */
  float z[4] = {0};
  assert_int_equal(tpurt_buffer_write(in[0], z, sizeof z), TPURT_OK);
  assert_int_equal(tpurt_buffer_read(in[0], got, sizeof got), TPURT_OK);
  assert_true(got[0] == 0 && got[3] == 0);
  assert_int_equal(tpurt_buffer_write(in[0], z, 8), TPURT_INVALID_ARGUMENT);
  tpurt_buffer_destroy(in[0]);
  tpurt_buffer_destroy(in[1]);
  tpurt_program_destroy(p);
  tpurt_device_destroy(dev);
}

static void donated_steps_cpu(void **state) {
  (void)state;
  steps_on("cpu,threads=1");
}

static void donated_steps_v3(void **state) {
  (void)state;
  steps_on("v3");
}

/* set_alias: declared by the caller, checked against the signature. */
static void set_alias_checks(void **state) {
  (void)state;
  static const char hlo[] = "HloModule m\n"
                            "ENTRY e {\n"
                            "  a = f32[4] parameter(0)\n"
                            "  b = f32[2] parameter(1)\n"
                            "  n = f32[4] negate(a)\n"
                            "  ROOT t = (f32[4], f32[4]) tuple(n, n)\n"
                            "}\n";
  tpurt_device_t *dev = open_device("cpu,threads=1");
  tpurt_program_t *p = NULL;
  assert_int_equal(tpurt_program_load(dev, hlo, strlen(hlo), &p), TPURT_OK);
  assert_int_equal(tpurt_program_result_alias(p, 0), -1);
  assert_int_equal(tpurt_program_set_alias(p, 0, 1), TPURT_INVALID_ARGUMENT);
  assert_non_null(strstr(tpurt_device_message(dev), "shapes differ"));
  assert_int_equal(tpurt_program_set_alias(p, 2, 0), TPURT_INVALID_ARGUMENT);
  assert_int_equal(tpurt_program_set_alias(p, 0, 0), TPURT_OK);
  assert_int_equal(tpurt_program_set_alias(p, 1, 0), TPURT_INVALID_ARGUMENT);
  assert_non_null(strstr(tpurt_device_message(dev), "already donated to result 0"));
  float a[4] = {1, -2, 3, -4}, b[2] = {0}, got[4];
  int64_t d4[1] = {4}, d2[1] = {2};
  tpurt_buffer_t *in[2] = {0}, *out[2] = {0};
  assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 1, d4, a, sizeof a, &in[0]), TPURT_OK);
  assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 1, d2, b, sizeof b, &in[1]), TPURT_OK);
  assert_int_equal(tpurt_program_execute_donated(p, in, 2, out, 2, NULL), TPURT_OK);
  assert_null(out[0]);
  assert_int_equal(tpurt_buffer_read(in[0], got, sizeof got), TPURT_OK);
  assert_true(got[0] == -1 && got[1] == 2 && got[3] == 4);
  assert_int_equal(tpurt_buffer_read(out[1], got, sizeof got), TPURT_OK);
  assert_true(got[0] == -1 && got[3] == 4);
  assert_int_equal(tpurt_program_set_alias(p, 0, -1), TPURT_OK);
  assert_int_equal(tpurt_program_result_alias(p, 0), -1);
  tpurt_buffer_destroy(out[1]);
  tpurt_buffer_destroy(in[0]);
  tpurt_buffer_destroy(in[1]);
  tpurt_program_destroy(p);
  tpurt_device_destroy(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(donated_steps_cpu),
      cmocka_unit_test(donated_steps_v3),
      cmocka_unit_test(set_alias_checks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
