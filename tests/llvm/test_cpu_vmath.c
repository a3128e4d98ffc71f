/* test_cpu_vmath.c: TPU numerics on the CPU compute the vector unit's
 * transcendentals bit for bit: exp, log, tanh, logistic, rsqrt, sin, cos,
 * expm1, log1p, cbrt, pow and atan2 are the double libm function of the
 * widened input rounded once (base/vmath.c, used by the emulator and by
 * ir_eval's TPU numerics), not the float libm function that native and
 * strict numerics call. Oracle: ir_eval with tpu_numerics. glibc's expf
 * differs from (float)exp((double)x) on about one input in ten, so 4096
 * random inputs per op catch a lowering that calls the float function. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>

#include "tests/llvm/cpu_check.h"

enum { N = 4096 };

/* op over t[N] parameters, on the CPU with numerics n, against ir_eval
 * with tpu_numerics (or default numerics when !tpu). */
static bool check_op(ir_op op, ir_type t, cpu_numerics n, bool tpu) {
  int arity = ir_op_arity(op);
  tmod m = tm_new("vmath");
  int64_t dims[1] = {N};
  ir_id ps[2];
  for (int i = 0; i < arity; i++) ps[i] = tm_param(&m, i, t, 1, dims);
  tm_finish(&m, tm_op(&m, op, ps, arity, NULL));
  arena *a = arena_create();
  ir_literal **args = tm_args(&m, a, 1000 + (uint64_t)op, true);
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  eo.tpu_numerics = tpu;
  char err[256], what[64];
  ir_literal *ref = NULL, *got = NULL;
  assert_int_equal(ir_eval(m.m, &eo, args, arity, a, &ref, err, sizeof err), ST_OK);
  cpu_options o;
  cpu_options_init(&o);
  o.numerics = n;
  o.threads = 1;
  cpu_exe *x = NULL;
  assert_int_equal(cpu_compile(m.m, &o, &x, err, sizeof err), ST_OK);
  assert_int_equal(cpu_execute(x, args, arity, a, &got, err, sizeof err), ST_OK);
  snprintf(what, sizeof what, "%s %s (%s)", ir_op_name(op), ir_type_name(t), tpu ? "tpu" : "strict");
  bool ok = tm_agree(ref, got, 0, what);
  cpu_exe_destroy(x);
  arena_destroy(a);
  ir_module_destroy(m.m);
  return ok;
}

static const ir_op vector_ops[] = {
    IR_OP_EXP,   IR_OP_LOG,  IR_OP_TANH,  IR_OP_LOGISTIC, IR_OP_SQRT, IR_OP_RSQRT, IR_OP_SINE,
    IR_OP_COSINE, IR_OP_EXPM1, IR_OP_LOG1P, IR_OP_CBRT, IR_OP_POWER, IR_OP_ATAN2, IR_OP_REMAINDER};

static void tpu_numerics_equal_vector_unit(void **state) {
  (void)state;
  int bad = 0;
  for (size_t i = 0; i < sizeof vector_ops / sizeof vector_ops[0]; i++) {
    bad += !check_op(vector_ops[i], IR_F32, CPU_NUMERICS_TPU, true);
    bad += !check_op(vector_ops[i], IR_BF16, CPU_NUMERICS_TPU, true); /* f32 kernel, then RNE */
  }
  assert_int_equal(bad, 0);
}

/* Strict numerics still call the float functions, as ir_eval does. */
static void strict_numerics_equal_evaluator(void **state) {
  (void)state;
  int bad = 0;
  for (size_t i = 0; i < sizeof vector_ops / sizeof vector_ops[0]; i++)
    bad += !check_op(vector_ops[i], IR_F32, CPU_NUMERICS_STRICT, false);
  assert_int_equal(bad, 0);
}

/* The oracle's two modes really differ on exp here (else the first test
 * could not fail): the input glibc rounds differently. */
static void the_oracles_differ(void **state) {
  (void)state;
  volatile float x = 0x1.2969fap-2f;
  float f = expf(x), d = (float)exp((double)x);
  if (f == d) skip(); /* a libm whose expf is correctly rounded here */
  assert_true(f != d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(the_oracles_differ),
      cmocka_unit_test(tpu_numerics_equal_vector_unit),
      cmocka_unit_test(strict_numerics_equal_evaluator),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
