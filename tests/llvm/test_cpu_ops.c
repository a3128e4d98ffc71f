/* test_cpu_ops.c: every op of ops.def for every element type it accepts,
 * lowered through the LLVM-C API, JIT-compiled and run, against the
 * reference evaluator (bit for bit under STRICT numerics: both sides call
 * the same libm, so even exp and tanh agree). Modules are built
 * programmatically; shapes come from ir_infer_shape, and a combination the
 * shape inference rejects (e.g. exp on s32) is skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/llvm/cpu_check.h"

static const ir_type all_types[] = {IR_PRED, IR_S8, IR_S32, IR_BF16, IR_F16, IR_F32, IR_S16,
                                    IR_S64, IR_U8,   IR_U16, IR_U32, IR_U64, IR_F64};

static bool accepts(ir_module *m, ir_op op, const ir_shape *ops, int n, const ir_attrs *a) {
  ir_shape out;
  char err[200];
  return ir_infer_shape(m, op, ops, n, a, NULL, 0, &out, err, sizeof err);
}

/* op applied to 1..3 parameters of type t, shape [13, 37] (or given). */
static bool check_ew(ir_op op, ir_type t, const ir_attrs *a, int rank, const int64_t *dims, int threads) {
  int n = ir_op_arity(op);
  tmod m = tm_new("ew");
  ir_shape s = ir_shape_array(t, rank, dims);
  ir_shape ss[3] = {s, s, s};
  if (op == IR_OP_SELECT) ss[0].type = IR_PRED;
  if (!accepts(m.m, op, ss, n, a)) {
    ir_module_destroy(m.m);
    return true;
  }
  ir_id ps[3];
  for (int i = 0; i < n; i++) ps[i] = tm_param_shape(&m, i, &ss[i]);
  tm_finish(&m, tm_op(&m, op, ps, n, a));
  arena *ar = arena_create();
  char what[128];
  snprintf(what, sizeof what, "%s %s", ir_op_name(op), ir_type_name(t));
  bool ok = tm_check(&m, tm_args(&m, ar, (uint64_t)op * 7 + (uint64_t)t, true), CPU_NUMERICS_STRICT,
                     threads, 0, what);
  arena_destroy(ar);
  ir_module_destroy(m.m);
  return ok;
}

static void elementwise_all_types(void **state) {
  (void)state;
  int64_t dims[2] = {13, 37};
  int bad = 0, tried = 0;
  for (int op = 0; op < IR_OP__COUNT; op++) {
    if (!(ir_op_flags((ir_op)op) & OPF_ELEMWISE) || op == IR_OP_COMPARE) continue;
    for (size_t t = 0; t < COUNTOF(all_types); t++) {
      tried++;
      if (!check_ew((ir_op)op, all_types[t], NULL, 2, dims, 1)) bad++;
    }
  }
  assert_true(tried > 100);
  assert_int_equal(bad, 0);
}

static void compare_all_directions(void **state) {
  (void)state;
  int64_t dims[1] = {301};
  int bad = 0;
  for (size_t t = 0; t < COUNTOF(all_types); t++)
    for (int d = IR_CMP_EQ; d <= IR_CMP_GE; d++)
      for (int ct = IR_CMPT_DEFAULT; ct <= IR_CMPT_UNSIGNED; ct++) {
        ir_attrs a;
        memset(&a, 0, sizeof a);
        a.cmp_dir = (ir_cmp_dir)d;
        a.cmp_type = (ir_cmp_type)ct;
        if (!check_ew(IR_OP_COMPARE, all_types[t], &a, 1, dims, 1)) bad++;
      }
  assert_int_equal(bad, 0);
}

/* Large enough to run through the thread pool. */
static void elementwise_parallel(void **state) {
  (void)state;
  int64_t dims[2] = {300, 257};
  assert_true(check_ew(IR_OP_ADD, IR_F32, NULL, 2, dims, 2));
  assert_true(check_ew(IR_OP_MULTIPLY, IR_BF16, NULL, 2, dims, 2));
  assert_true(check_ew(IR_OP_DIVIDE, IR_S32, NULL, 2, dims, 3));
  int64_t d1[1] = {100003};
  assert_true(check_ew(IR_OP_MAXIMUM, IR_F16, NULL, 1, d1, 2));
}

static void convert_all_pairs(void **state) {
  (void)state;
  int64_t dims[1] = {517};
  int bad = 0;
  for (size_t f = 0; f < COUNTOF(all_types); f++)
    for (size_t t = 0; t < COUNTOF(all_types); t++) {
      for (int bc = 0; bc < 2; bc++) {
        tmod m = tm_new("convert");
        ir_id p = tm_param(&m, 0, all_types[f], 1, dims);
        ir_inst_proto in;
        memset(&in, 0, sizeof in);
        in.op = bc ? IR_OP_BITCAST_CONVERT : IR_OP_CONVERT;
        in.shape = ir_shape_array(all_types[t], 1, dims);
        in.nops = 1;
        in.ops = &p;
        ir_shape ps = ir_shape_array(all_types[f], 1, dims), out;
        char err[200];
        if (!ir_infer_shape(m.m, in.op, &ps, 1, &in.a, NULL, 0, &out, err, sizeof err) ||
            !ir_shape_equal(&out, &in.shape)) {
          ir_module_destroy(m.m);
          continue;
        }
        tm_finish(&m, ir_inst_add(m.m, m.c, &in));
        arena *a = arena_create();
        char what[64];
        snprintf(what, sizeof what, "%s %s->%s", ir_op_name(in.op), ir_type_name(all_types[f]),
                 ir_type_name(all_types[t]));
        /* Large s32 values exercise the single rounding to bf16/f16. */
        ir_literal **args = tm_args(&m, a, 11 + f * 6 + t, true);
        if (all_types[f] == IR_S32)
          for (int64_t i = 0; i < dims[0]; i += 3) ir_literal_set_i64(args[0], i, 16777217 + i * 4099);
        if (!tm_check(&m, args, CPU_NUMERICS_STRICT, 1, 0, what)) bad++;
        arena_destroy(a);
        ir_module_destroy(m.m);
      }
    }
  assert_int_equal(bad, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(elementwise_all_types),
      cmocka_unit_test(compare_all_directions),
      cmocka_unit_test(elementwise_parallel),
      cmocka_unit_test(convert_all_pairs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
