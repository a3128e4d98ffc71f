/* test_api_rank.c: tensors of rank 12 (the IR's limit, TPUCC_MAX_RANK,
 * TPURT_MAX_RANK, TPUB_MAX_RANK) cross libtpucc on every target and the
 * .npy codec; rank 13 is refused with a clear message wherever a rank
 * comes in: a tpucc_tensor_t input, an .hlo parameter, an .npy header. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ir/ir.h"
#include "tpucc.h"

/* f32[2,1,2,1,1,3,1,1,2,1,1,2] (48 elements): y = reverse(x * x) over every
 * dimension, which reverses the flat row-major order. */
static const char r12_hlo[] =
    "HloModule r12\nENTRY e {\n"
    "  x = f32[2,1,2,1,1,3,1,1,2,1,1,2] parameter(0)\n"
    "  m = f32[2,1,2,1,1,3,1,1,2,1,1,2] multiply(x, x)\n"
    "  ROOT y = f32[2,1,2,1,1,3,1,1,2,1,1,2] reverse(m), dimensions={0,1,2,3,4,5,6,7,8,9,10,11}\n"
    "}\n";
static const int64_t r12_dims[12] = {2, 1, 2, 1, 1, 3, 1, 1, 2, 1, 1, 2};

static bool has_target(const char *name) {
  for (int32_t i = 0; i < tpucc_target_count(); i++)
    if (!strcmp(tpucc_target_name(i), name)) return true;
  return false;
}

static void rank12_every_target(void **state) {
  (void)state;
  tpucc_session_t *s;
  assert_int_equal(tpucc_session_create(NULL, &s), TPUCC_OK);
  tpucc_module_t *m;
  assert_int_equal(tpucc_compile_memory(s, NULL, "r12.hlo", r12_hlo, strlen(r12_hlo), &m), TPUCC_OK);
  tpucc_tensor_t d;
  assert_int_equal(tpucc_module_result(m, 0, &d), TPUCC_OK);
  assert_int_equal(d.rank, 12);
  assert_int_equal(d.dims[11], 2);
  float x[48], want[48];
  for (int i = 0; i < 48; i++) x[i] = (float)(i - 20) * 0.5f;
  for (int i = 0; i < 48; i++) want[i] = x[47 - i] * x[47 - i];
  tpucc_tensor_t in;
  memset(&in, 0, sizeof in);
  in.dtype = TPUCC_F32;
  in.rank = 12;
  memcpy(in.dims, r12_dims, sizeof r12_dims);
  in.data = x;
  in.nbytes = sizeof x;
  static const char *const targets[] = {"interp", "v3", "v2", "cpu"};
  int ran = 0;
  for (size_t t = 0; t < sizeof targets / sizeof *targets; t++) {
    if (!has_target(targets[t])) continue;
    tpucc_execute_options_t eo;
    tpucc_execute_options_init(&eo);
    eo.target = targets[t];
    tpucc_result_t *r;
    tpucc_status_t st = tpucc_execute(m, &eo, &in, 1, &r);
    if (st != TPUCC_OK) fprintf(stderr, "%s: %s\n", targets[t], tpucc_session_message(s));
    assert_int_equal(st, TPUCC_OK);
    const tpucc_tensor_t *o = tpucc_result_tensor(r, 0);
    assert_int_equal(o->rank, 12);
    assert_memory_equal(o->dims, r12_dims, sizeof r12_dims);
    assert_memory_equal(o->data, want, sizeof want);
    tpucc_result_destroy(r);
    ran++;
  }
  assert_true(ran >= 2); /* interp and v3 are always built with the HLO frontend */
  /* a 13-dimensional input is refused, naming the limit */
  in.rank = 13;
  tpucc_execute_options_t eo;
  tpucc_execute_options_init(&eo);
  eo.target = "interp";
  tpucc_result_t *r = NULL;
  assert_int_equal(tpucc_execute(m, &eo, &in, 1, &r), TPUCC_INVALID_ARGUMENT);
  assert_null(r);
  assert_non_null(strstr(tpucc_session_message(s), "13"));
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
}

static void rank13_hlo_refused(void **state) {
  (void)state;
  static const char text[] = "HloModule r13\nENTRY e {\n"
                             "  ROOT x = f32[1,1,1,1,1,1,1,1,1,1,1,1,2] parameter(0)\n}\n";
  tpucc_session_t *s;
  assert_int_equal(tpucc_session_create(NULL, &s), TPUCC_OK);
  tpucc_module_t *m = NULL;
  assert_int_equal(tpucc_compile_memory(s, NULL, "r13.hlo", text, strlen(text), &m),
                   TPUCC_PARSE_ERROR);
  assert_null(m);
  const char *dg = tpucc_session_diagnostics(s);
  if (!strstr(dg, "r13.hlo:3:")) fail_msg("diagnostics: %s", dg);
  tpucc_session_destroy(s);
}

/* .npy: a rank-12 literal encodes and decodes to itself; a header of 13
 * dimensions is refused. */
static void npy_rank12_round_trip_rank13_refused(void **state) {
  (void)state;
  arena *a = arena_create();
  ir_shape sh = ir_shape_array(IR_S32, 12, r12_dims);
  ir_literal *l = ir_literal_create(a, &sh);
  for (int i = 0; i < 48; i++) ((int32_t *)l->data)[i] = i * 7 - 100;
  strbuf b;
  sb_init(&b);
  char err[512];
  assert_int_equal(ir_npy_encode(&b, l, err, sizeof err), ST_OK);
  ir_literal *back = NULL;
  assert_int_equal(ir_npy_decode(a, "r12.npy", sb_str(&b), b.len, &back, err, sizeof err), ST_OK);
  assert_int_equal(back->shape.rank, 12);
  assert_memory_equal(back->shape.dims, r12_dims, sizeof r12_dims);
  assert_memory_equal(back->data, l->data, 48 * 4);
  sb_free(&b);
  static const char hdr[] = "{'descr': '<i4', 'fortran_order': False, "
                            "'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), }\n";
  uint8_t buf[256];
  size_t hl = strlen(hdr), n = 0;
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (uint8_t)hl;
  buf[9] = 0;
  memcpy(buf + 10, hdr, hl);
  n = 10 + hl;
  memset(buf + n, 0, 4);
  n += 4;
  ir_literal *bad = NULL;
  assert_int_not_equal(ir_npy_decode(a, "r13.npy", buf, n, &bad, err, sizeof err), ST_OK);
  if (!strstr(err, "r13.npy") || !strstr(err, "12")) fail_msg("error: %s", err);
  arena_destroy(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rank12_every_target),
      cmocka_unit_test(rank13_hlo_refused),
      cmocka_unit_test(npy_rank12_round_trip_rank13_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
