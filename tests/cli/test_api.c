/* test_api.c: libtpucc through its public header only: sessions, compile
 * from memory and file, signature, HLO emission, execution on interp with
 * hand-computed results, and every error path's status and message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tpucc.h"

static const char add_hlo[] = "HloModule add_two\n"
                              "\n"
                              "ENTRY %main (x: f32[2,3], y: f32[2,3]) -> f32[2,3] {\n"
                              "  %x = f32[2,3] parameter(0)\n"
                              "  %y = f32[2,3] parameter(1)\n"
                              "  ROOT %sum = f32[2,3] add(f32[2,3] %x, f32[2,3] %y)\n"
                              "}\n";

static const char tuple_hlo[] = "HloModule two\n"
                                "ENTRY %main (v: s32[3]) -> (s32[3], s32[3]) {\n"
                                "  %v = s32[3] parameter(0)\n"
                                "  %n = s32[3] negate(s32[3] %v)\n"
                                "  %m = s32[3] multiply(s32[3] %v, s32[3] %v)\n"
                                "  ROOT %t = (s32[3], s32[3]) tuple(s32[3] %n, s32[3] %m)\n"
                                "}\n";

static tpucc_tensor_t f32_2x3(float *data) {
  tpucc_tensor_t t;
  memset(&t, 0, sizeof t);
  t.dtype = TPUCC_F32;
  t.rank = 2;
  t.dims[0] = 2;
  t.dims[1] = 3;
  t.data = data;
  t.nbytes = 6 * sizeof(float);
  return t;
}

static void compile_signature_execute(void **state) {
  (void)state;
  tpucc_session_t *s;
  assert_int_equal(tpucc_session_create(NULL, &s), TPUCC_OK);
  tpucc_module_t *m;
  assert_int_equal(tpucc_compile_memory(s, NULL, "add.hlo", add_hlo, strlen(add_hlo), &m),
                   TPUCC_OK);
  assert_string_equal(tpucc_session_message(s), "");
  assert_int_equal(tpucc_module_parameter_count(m), 2);
  assert_int_equal(tpucc_module_result_count(m), 1);
  tpucc_tensor_t d;
  assert_int_equal(tpucc_module_parameter(m, 1, &d), TPUCC_OK);
  assert_string_equal(d.name, "y");
  assert_int_equal(d.dtype, TPUCC_F32);
  assert_int_equal(d.rank, 2);
  assert_int_equal(d.dims[1], 3);
  assert_null(d.data);
  assert_int_equal(d.nbytes, 24);
  assert_int_equal(tpucc_module_parameter(m, 2, &d), TPUCC_INVALID_ARGUMENT);
  assert_non_null(strstr(tpucc_session_message(s), "out of range"));

  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0.5f, 0.25f, -3, 10, 0, -6};
  tpucc_tensor_t in[2] = {f32_2x3(x), f32_2x3(y)};
  tpucc_execute_options_t eo;
  tpucc_execute_options_init(&eo);
  eo.target = "interp";
  tpucc_result_t *r;
  assert_int_equal(tpucc_execute(m, &eo, in, 2, &r), TPUCC_OK);
  assert_int_equal(tpucc_result_count(r), 1);
  const tpucc_tensor_t *o = tpucc_result_tensor(r, 0);
  assert_int_equal(o->dtype, TPUCC_F32);
  assert_int_equal(o->nbytes, 24);
  const float want[6] = {1.5f, 2.25f, 0, 14, 5, 0};
  assert_memory_equal(o->data, want, sizeof want);
  assert_null(tpucc_result_tensor(r, 1));
  tpucc_result_destroy(r);
  /* inputs are not written */
  assert_true(x[0] == 1 && y[5] == -6);
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
}

static void execute_errors(void **state) {
  (void)state;
  tpucc_session_t *s;
  assert_int_equal(tpucc_session_create(NULL, &s), TPUCC_OK);
  tpucc_module_t *m;
  assert_int_equal(tpucc_compile_memory(s, NULL, "add.hlo", add_hlo, strlen(add_hlo), &m),
                   TPUCC_OK);
  float x[6] = {0}, z[6] = {0};
  tpucc_tensor_t in[2] = {f32_2x3(x), f32_2x3(z)};
  tpucc_result_t *r = NULL;
  assert_int_equal(tpucc_execute(m, NULL, in, 1, &r), TPUCC_INVALID_ARGUMENT);
  assert_string_equal(tpucc_session_message(s), "entry 'main' takes 2 parameters, 1 given");
  in[1].dims[0] = 3;
  in[1].dims[1] = 2;
  assert_int_equal(tpucc_execute(m, NULL, in, 2, &r), TPUCC_INVALID_ARGUMENT);
  assert_string_equal(tpucc_session_message(s), "parameter 1 'y': expected 2x3xf32, given 3x2xf32");
  in[1] = f32_2x3(z);
  in[1].dtype = TPUCC_BF16;
  assert_int_equal(tpucc_execute(m, NULL, in, 2, &r), TPUCC_INVALID_ARGUMENT);
  assert_string_equal(tpucc_session_message(s),
                      "parameter 1 'y': expected 2x3xf32, given 2x3xbf16");
  in[1] = f32_2x3(z);
  in[1].nbytes = 8;
  assert_int_equal(tpucc_execute(m, NULL, in, 2, &r), TPUCC_INVALID_ARGUMENT);
  assert_non_null(strstr(tpucc_session_message(s), "8 data bytes, expected 24"));
  in[1] = f32_2x3(z);
  tpucc_execute_options_t eo;
  tpucc_execute_options_init(&eo);
  eo.target = "zz";
  assert_int_equal(tpucc_execute(m, &eo, in, 2, &r), TPUCC_NOT_FOUND);
  /* interp first; other targets (cpu, ...) follow when built */
  assert_non_null(strstr(tpucc_session_message(s), "unknown target 'zz' (known: interp"));
  assert_null(r);
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
}

/* The cpu target takes its options in the spec (when built with LLVM). */
static void cpu_spec_target(void **state) {
  (void)state;
  bool has_cpu = false;
  for (int32_t i = 0; i < tpucc_target_count(); i++)
    has_cpu |= strcmp(tpucc_target_name(i), "cpu") == 0;
  if (!has_cpu) skip();
  tpucc_session *s;
  assert_int_equal(tpucc_session_create(NULL, &s), TPUCC_OK);
  tpucc_module *m;
  assert_int_equal(tpucc_compile_memory(s, NULL, "add.hlo", add_hlo, strlen(add_hlo), &m),
                   TPUCC_OK);
  float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0.5f, 0.25f, -3, 10, 0, -6};
  tpucc_tensor in[2] = {f32_2x3(x), f32_2x3(y)};
  tpucc_execute_options eo;
  tpucc_execute_options_init(&eo);
  eo.target = "cpu,threads=1,numerics=strict";
  tpucc_result *r = NULL;
  assert_int_equal(tpucc_execute(m, &eo, in, 2, &r), TPUCC_OK);
  const float want[6] = {1.5f, 2.25f, 0, 14, 5, 0};
  assert_memory_equal(tpucc_result_tensor(r, 0)->data, want, sizeof want);
  tpucc_result_destroy(r);
  r = NULL;
  eo.target = "cpu,threads=0";
  assert_int_equal(tpucc_execute(m, &eo, in, 2, &r), TPUCC_INVALID_ARGUMENT);
  assert_non_null(strstr(tpucc_session_message(s), "threads=0: expected a count in 1..1024"));
  assert_null(r);
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
}

static void compile_errors(void **state) {
  (void)state;
  tpucc_session_t *s;
  assert_int_equal(tpucc_session_create(NULL, &s), TPUCC_OK);
  tpucc_module_t *m = NULL;
  const char bad[] = "HloModule b\nENTRY %e () -> f32[] {\n  ROOT %c = f32[] frob()\n}\n";
  assert_int_equal(tpucc_compile_memory(s, NULL, "bad.hlo", bad, strlen(bad), &m),
                   TPUCC_PARSE_ERROR);
  assert_null(m);
  assert_non_null(strstr(tpucc_session_message(s), "bad.hlo:3:"));
  assert_non_null(strstr(tpucc_session_diagnostics(s), "bad.hlo:3:"));
  assert_non_null(strstr(tpucc_session_diagnostics(s), "^"));
  assert_int_equal(tpucc_compile_memory(s, NULL, "model", "abc", 3, &m), TPUCC_INVALID_ARGUMENT);
  assert_non_null(strstr(tpucc_session_message(s), "cannot tell the language"));
  assert_int_equal(tpucc_compile_file(s, NULL, "/nonexistent/m.hlo", &m), TPUCC_NOT_FOUND);
  assert_non_null(strstr(tpucc_session_message(s), "/nonexistent/m.hlo"));
  /* the session works again after errors */
  assert_int_equal(tpucc_compile_memory(s, NULL, "t.hlo", tuple_hlo, strlen(tuple_hlo), &m),
                   TPUCC_OK);
  assert_string_equal(tpucc_session_message(s), "");
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
  tpucc_session_destroy(NULL);
  tpucc_module_destroy(NULL);
  tpucc_result_destroy(NULL);
}

static void tuple_results_and_emit(void **state) {
  (void)state;
  tpucc_session_t *s;
  assert_int_equal(tpucc_session_create(NULL, &s), TPUCC_OK);
  tpucc_module_t *m;
  assert_int_equal(tpucc_compile_memory(s, NULL, "t.hlo", tuple_hlo, strlen(tuple_hlo), &m),
                   TPUCC_OK);
  assert_int_equal(tpucc_module_result_count(m), 2);
  const char *text;
  size_t len;
  assert_int_equal(tpucc_module_emit_hlo(m, &text, &len), TPUCC_OK);
  assert_int_equal(strlen(text), len);
  assert_non_null(strstr(text, "HloModule"));
  assert_non_null(strstr(text, "multiply("));
  /* the emitted text compiles to a module that computes the same */
  tpucc_module_t *m2;
  assert_int_equal(tpucc_compile_memory(s, NULL, "re.hlo", text, len, &m2), TPUCC_OK);
  int32_t v[3] = {2, -3, 7};
  tpucc_tensor_t in;
  memset(&in, 0, sizeof in);
  in.dtype = TPUCC_S32;
  in.rank = 1;
  in.dims[0] = 3;
  in.data = v;
  in.nbytes = sizeof v;
  tpucc_module_t *both[2] = {m, m2};
  for (int k = 0; k < 2; k++) {
    tpucc_result_t *r;
    assert_int_equal(tpucc_execute(both[k], NULL, &in, 1, &r), TPUCC_OK);
    assert_int_equal(tpucc_result_count(r), 2);
    const int32_t neg[3] = {-2, 3, -7}, sq[3] = {4, 9, 49};
    assert_memory_equal(tpucc_result_tensor(r, 0)->data, neg, sizeof neg);
    assert_memory_equal(tpucc_result_tensor(r, 1)->data, sq, sizeof sq);
    tpucc_result_destroy(r);
  }
  tpucc_module_destroy(m2);
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
}

static void versions_and_names(void **state) {
  (void)state;
  assert_string_equal(tpucc_version_string(), TPUCC_VERSION_STRING);
  assert_string_equal(tpucc_status_string(TPUCC_PARSE_ERROR), "parse error");
  assert_string_equal(tpucc_dtype_name(TPUCC_BF16), "bf16");
  assert_int_equal(tpucc_dtype_size(TPUCC_S8), 1);
  assert_true(tpucc_target_count() >= 1);
  assert_string_equal(tpucc_target_name(0), "interp");
  assert_null(tpucc_target_name(tpucc_target_count()));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(compile_signature_execute),
      cmocka_unit_test(execute_errors),
      cmocka_unit_test(cpu_spec_target),
      cmocka_unit_test(compile_errors),
      cmocka_unit_test(tuple_results_and_emit),
      cmocka_unit_test(versions_and_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
