/* test_tpu_only.c: what libtpurt (the TPU-only build, no LLVM, no
 * compiler) says about the cpu device and module text, "auto", and the
 * program metrics of an assembled program. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "rt_test.h"

static void no_cpu_device(void **state) {
  (void)state;
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = "cpu,threads=2";
  tpurt_device_t *d = (tpurt_device_t *)1;
  assert_int_equal(tpurt_device_create(&o, &d), TPURT_UNSUPPORTED);
  assert_null(d);
  char err[256] = "";
  assert_int_equal(tpurt_target_check("cpu", err, sizeof err), TPURT_UNSUPPORTED);
  assert_string_equal(err, "this libtpurt has no cpu device: link libtpurt-cpu (pkg-config tpurt-cpu)");
}

/* "auto" is the emulated v3 here, or TPURT_TARGET. */
static void auto_is_v3(void **state) {
  (void)state;
  unsetenv("TPURT_TARGET");
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = "auto";
  tpurt_device_t *d = NULL;
  assert_int_equal(tpurt_device_create(&o, &d), TPURT_OK);
  assert_string_equal(tpurt_device_platform(d), "tpu");
  assert_non_null(strstr(tpurt_device_target(d), "v3,"));
  tpurt_device_destroy(d);
  setenv("TPURT_TARGET", "cpu", 1);
  assert_int_equal(tpurt_device_create(&o, &d), TPURT_UNSUPPORTED);
  char err[256] = "";
  assert_int_equal(tpurt_target_check("auto", err, sizeof err), TPURT_UNSUPPORTED);
  assert_non_null(strstr(err, "auto is TPURT_TARGET='cpu': this libtpurt has no cpu device"));
  unsetenv("TPURT_TARGET");
}

static void text_needs_libtpurt_cpu(void **state) {
  (void)state;
  tpurt_device_t *d = NULL;
  assert_int_equal(tpurt_device_create(NULL, &d), TPURT_OK);
  static const char hlo[] = "HloModule m\nENTRY e {\n  ROOT x = f32[4] parameter(0)\n}\n";
  tpurt_program_t *p = (tpurt_program_t *)1;
  assert_int_equal(tpurt_program_load(d, hlo, sizeof hlo - 1, &p), TPURT_INVALID_PROGRAM);
  assert_null(p);
  assert_non_null(strstr(tpurt_device_message(d), "invalid program: "));
  assert_non_null(strstr(tpurt_device_message(d), "link libtpurt-cpu to load text"));
  /* An assembled program: metrics that apply, and those that do not. */
  static const char s[] = ".target v3\n.hbm 4096\n  halt\n";
  assert_int_equal(tpurt_program_assemble(d, s, sizeof s - 1, "h.s", &p), TPURT_OK);
  double v = -1;
  assert_int_equal(tpurt_program_metric(p, "executions", &v), TPURT_OK);
  assert_true(v == 0);
  assert_int_equal(tpurt_program_execute(p, NULL, 0, NULL, 0, NULL), TPURT_OK);
  assert_int_equal(tpurt_program_metric(p, "executions", &v), TPURT_OK);
  assert_true(v == 1);
  assert_int_equal(tpurt_program_metric(p, "host_seconds", &v), TPURT_OK);
  assert_true(v > 0);
  assert_int_equal(tpurt_program_metric(p, "compile_seconds", &v), TPURT_NOT_FOUND);
  assert_non_null(strstr(tpurt_device_message(d), "not compiled by this library"));
  assert_int_equal(tpurt_program_metric(p, "flops", &v), TPURT_NOT_FOUND); /* no op table */
  assert_int_equal(tpurt_program_metric(p, NULL, &v), TPURT_INVALID_ARGUMENT);
  tpurt_program_destroy(p);
  tpurt_device_destroy(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(no_cpu_device),
      cmocka_unit_test(auto_is_v3),
      cmocka_unit_test(text_needs_libtpurt_cpu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
