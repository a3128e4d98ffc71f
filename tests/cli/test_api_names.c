/* test_api_names.c: libtpucc's lists (include/tpucc.h) and what is
 * generated from them, and the deprecated names of the first release.
 *
 * Every status and element type goes name -> value -> name through the
 * library's lookups; the compiler's own vocabularies agree with them
 * (base_status has the number and text of each status, ir_type the number,
 * spelling and size of each element type, and the ir_type <-> .tpub number
 * conversion inverts on every core type). The one place the old names are
 * used: they must still compile and mean what their replacements mean. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ir/ir.h"
#include "tpucc.h"

/* The status whose text is s, by the library's own strings; -1 if none. */
static int status_of_text(const char *s) {
  for (int v = 0; v < 64; v++)
    if (strcmp(tpucc_status_string((tpucc_status_t)v), s) == 0) return v;
  return -1;
}

static void status_round_trip(void **state) {
  (void)state;
  int n = 0;
#define X(name, text)                                                                              \
  assert_int_equal(TPUCC_##name, n);                                                               \
  assert_int_equal(status_of_text(text), TPUCC_##name);                                            \
  assert_string_equal(tpucc_status_string(TPUCC_##name), text);                                    \
  assert_int_equal(ST_##name, TPUCC_##name);                                                       \
  assert_string_equal(base_status_str(ST_##name), text);                                           \
  assert_int_equal(TPURT_##name, TPUCC_##name);                                                    \
  n++;
  TPUCC_STATUS_LIST(X)
#undef X
  assert_int_equal(n, 11);
  assert_string_equal(tpucc_status_string((tpucc_status_t)n), "unknown status");
  assert_string_equal(tpucc_status_string((tpucc_status_t)-1), "unknown status");
}

static void dtype_round_trip(void **state) {
  (void)state;
  int n = 0;
#define X(name, spelling, bytes)                                                                   \
  assert_int_equal(TPUCC_##name, n);                                                               \
  assert_int_equal(ir_type_from_name(spelling, strlen(spelling)), TPUCC_##name);                   \
  assert_string_equal(tpucc_dtype_name(TPUCC_##name), spelling);                                   \
  assert_string_equal(ir_type_name(IR_##name), spelling);                                          \
  assert_int_equal(tpucc_dtype_size(TPUCC_##name), bytes);                                         \
  assert_int_equal(ir_type_size(IR_##name), bytes);                                                \
  assert_true(ir_type_is_core(IR_##name));                                                         \
  assert_int_equal(ir_type_tpurt_code(IR_##name), TPURT_##name);                                   \
  assert_int_equal(ir_type_of_tpurt_code(TPURT_##name), IR_##name);                                \
  n++;
  TPUCC_DTYPE_LIST(X)
#undef X
  assert_int_equal(n, 13);
  assert_int_equal(TPUCC_F32, 5); /* the first six keep their numbers */
  assert_int_equal(TPUCC_F64, 12);
  assert_string_equal(tpucc_dtype_name((tpucc_dtype_t)n), "invalid");
  assert_int_equal(tpucc_dtype_size((tpucc_dtype_t)n), 0);
  /* Past the core list: no tpucc dtype, no .tpub number. */
  assert_false(ir_type_is_core((ir_type)n));
  assert_int_equal(ir_type_tpurt_code(IR_S4), 0);
  assert_int_equal(ir_type_tpurt_code(IR_TUPLE), 0);
  assert_int_equal(ir_type_of_tpurt_code(TPURT_F64 + 1), IR_TYPE_INVALID);
  assert_int_equal(ir_type_of_tpurt_code(0), IR_TYPE_INVALID);
}

/* Deprecated names. The pointer assignments below compile without a cast
 * (warnings are errors) only when the old and new types are the same. */
static void deprecated_names_alias_the_new(void **state) {
  (void)state;
  tpucc_status old_status = TPUCC_PARSE_ERROR;
  tpucc_status_t *status = &old_status;
  assert_int_equal(*status, TPUCC_PARSE_ERROR);
  tpucc_dtype old_dtype = TPUCC_DTYPE_BF16;
  tpucc_dtype_t *dtype = &old_dtype;
  assert_int_equal(*dtype, TPUCC_BF16);
  tpucc_tensor old_tensor = {TPUCC_DTYPE_F32, 1, {4}, NULL, 16, NULL};
  tpucc_tensor_t *tensor = &old_tensor;
  assert_int_equal(tensor->dtype, TPUCC_F32);
  tpucc_session_options old_sopts;
  tpucc_session_options_t *sopts = &old_sopts;
  tpucc_session_options_init(sopts);
  tpucc_compile_options old_copts;
  tpucc_compile_options_t *copts = &old_copts;
  tpucc_compile_options_init(copts);
  tpucc_language old_language = TPUCC_LANGUAGE_HLO;
  tpucc_language_t *language = &old_language;
  assert_int_equal(*language, TPUCC_LANGUAGE_HLO);
  tpucc_execute_options old_eopts;
  tpucc_execute_options_t *eopts = &old_eopts;
  tpucc_execute_options_init(eopts);
  tpucc_session *old_session = NULL;
  tpucc_session_t **session = &old_session;
  tpucc_module *old_module = NULL;
  tpucc_module_t **module = &old_module;
  tpucc_result *old_result = NULL;
  tpucc_result_t **result = &old_result;
  assert_null(*session);
  assert_null(*module);
  assert_null(*result);

  assert_int_equal(TPUCC_DTYPE_PRED, TPUCC_PRED);
  assert_int_equal(TPUCC_DTYPE_S8, TPUCC_S8);
  assert_int_equal(TPUCC_DTYPE_S32, TPUCC_S32);
  assert_int_equal(TPUCC_DTYPE_BF16, TPUCC_BF16);
  assert_int_equal(TPUCC_DTYPE_F16, TPUCC_F16);
  assert_int_equal(TPUCC_DTYPE_F32, TPUCC_F32);
  const char *(*status_str)(tpucc_status_t) = tpucc_status_str;
  assert_ptr_equal(status_str, tpucc_status_string);
  assert_string_equal(tpucc_status_str(TPUCC_NOT_FOUND), "not found");
  const char *(*version)(void) = tpucc_version;
  assert_ptr_equal(version, tpucc_version_string);
  assert_string_equal(tpucc_version(), TPUCC_VERSION_STRING);
  int major, minor, patch;
  assert_int_equal(sscanf(tpucc_version_string(), "%d.%d.%d", &major, &minor, &patch), 3);
  assert_int_equal(TPUCC_VERSION_NUMBER, major * 10000 + minor * 100 + patch);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(status_round_trip),
      cmocka_unit_test(dtype_round_trip),
      cmocka_unit_test(deprecated_names_alias_the_new),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
