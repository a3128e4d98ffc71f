/* test_cpu_replicas.c: a cpu device of N cores ("cpu,replicas=N"), one
 * host thread per replica, through the public API only: the core count,
 * per-replica buffers and one execution over all replicas; all-reduce with
 * a sum, a tuple and a non-commutative reduction whose digits show the
 * combining order of docs/runtime.md ("Replicas"), groups in iota form,
 * values derived by hand; a module asking for more replicas than cores;
 * a failing replica and replicas that reach different collectives end the
 * execution with an error naming the replica, not a hang. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "rt_test.h"

static tpurt_device_t *device(const char *spec, const tpurt_custom_call_t *cc, size_t ncc) {
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = spec;
  o.custom_calls = cc;
  o.ncustom_calls = ncc;
  tpurt_device_t *dev = NULL;
  if (tpurt_device_create(&o, &dev) != TPURT_OK) fail_msg("device %s", spec);
  return dev;
}

static tpurt_program_t *load(tpurt_device_t *dev, const char *text) {
  tpurt_program_t *p = NULL;
  if (tpurt_program_load(dev, text, strlen(text), &p) != TPURT_OK)
    fail_msg("load: %s", tpurt_device_message(dev));
  return p;
}

static void core_counts(void **state) {
  (void)state;
  tpurt_device_t *one = device("cpu,threads=1", NULL, 0);
  assert_int_equal(tpurt_device_core_count(one), 1);
  tpurt_device_destroy(one);
  tpurt_device_t *four = device("cpu,threads=2,replicas=4", NULL, 0);
  assert_int_equal(tpurt_device_core_count(four), 4);
  assert_string_equal(tpurt_device_target(four), "cpu,threads=2,numerics=native,replicas=4");
  tpurt_device_destroy(four);
  assert_int_equal(tpurt_device_core_count(NULL), 0);
  char err[256];
  assert_int_equal(tpurt_target_check("cpu,replicas=0", err, sizeof err), TPURT_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "replicas=0"));
  assert_int_equal(tpurt_target_check("cpu,replicas=257", err, sizeof err), TPURT_INVALID_ARGUMENT);
}

/* Runs p on n replicas, replica r's one parameter of dims[0] elements of
 * dtype dt from data + r * bytes; returns the results (n * nres). */
static void run(tpurt_device_t *dev, tpurt_program_t *p, int n, tpurt_dtype_t dt, int64_t count,
                const void *data, size_t bytes, tpurt_buffer_t **res, size_t nres) {
  tpurt_buffer_t *in[8];
  for (int r = 0; r < n; r++)
    assert_int_equal(tpurt_buffer_create(dev, dt, 1, &count, (const char *)data + (size_t)r * bytes,
                                         bytes, &in[r]),
                     TPURT_OK);
  tpurt_stats_t stats[8];
  if (tpurt_program_execute_replicas(p, (size_t)n, in, 1, res, nres, stats) != TPURT_OK)
    fail_msg("execute: %s", tpurt_device_message(dev));
  for (int r = 0; r < n; r++) {
    assert_true(stats[r].seconds > 0);
    tpurt_buffer_destroy(in[r]);
  }
}

static const char sum_hlo[] =
    "HloModule sum\n"
    "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
    "ENTRY e {\n"
    "  x = f32[5] parameter(0)\n"
    "  ROOT r = f32[5] all-reduce(x), replica_groups={}, to_apply=add\n"
    "}\n";

static void all_reduce_sums(void **state) {
  (void)state;
  tpurt_device_t *dev = device("cpu,threads=2,replicas=4", NULL, 0);
  tpurt_program_t *p = load(dev, sum_hlo);
  float x[4][5];
  for (int r = 0; r < 4; r++)
    for (int i = 0; i < 5; i++) x[r][i] = (float)((r + 1) * (i + 1));
  for (int rep = 0; rep < 3; rep++) {
    tpurt_buffer_t *res[4];
    run(dev, p, 4, TPURT_F32, 5, x, sizeof x[0], res, 1);
    for (int r = 0; r < 4; r++) {
      float y[5];
      assert_int_equal(tpurt_buffer_read(res[r], y, sizeof y), TPURT_OK);
      for (int i = 0; i < 5; i++) assert_true(y[i] == (float)(10 * (i + 1))); /* (1+2+3+4)(i+1) */
      tpurt_buffer_destroy(res[r]);
    }
  }
  /* one execute over all replicas only */
  tpurt_buffer_t *in = NULL, *out = NULL;
  int64_t five = 5;
  assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 1, &five, NULL, 0, &in), TPURT_OK);
  assert_int_equal(tpurt_program_execute(p, &in, 1, &out, 1, NULL), TPURT_INVALID_ARGUMENT);
  assert_non_null(strstr(tpurt_device_message(dev), "4 cores"));
  tpurt_buffer_t *ins[3] = {in, in, in}, *outs[3];
  assert_int_equal(tpurt_program_execute_replicas(p, 3, ins, 1, outs, 1, NULL), TPURT_INVALID_ARGUMENT);
  tpurt_buffer_destroy(in);
  tpurt_program_destroy(p);
  tpurt_device_destroy(dev);
}

/* f(acc, x) = 10 acc + x appends x's digit: each element shows the order
 * its chunk was folded in. 4 replicas, 5 elements: chunks [0,1) [1,2)
 * [2,3) [3,5); chunk c starts at replica c+1 and ends at replica c. */
static const char digits_hlo[] =
    "HloModule digits\n"
    "f { a = s32[] parameter(0)\n b = s32[] parameter(1)\n ten = s32[] constant(10)\n"
    "    m = s32[] multiply(a, ten)\n ROOT s = s32[] add(m, b) }\n"
    "ENTRY e {\n"
    "  x = s32[5] parameter(0)\n"
    "  ROOT r = s32[5] all-reduce(x), replica_groups={}, to_apply=f\n"
    "}\n";

static void all_reduce_order(void **state) {
  (void)state;
  tpurt_device_t *dev = device("cpu,threads=3,replicas=4", NULL, 0);
  tpurt_program_t *p = load(dev, digits_hlo);
  int32_t x[4][5];
  for (int r = 0; r < 4; r++)
    for (int i = 0; i < 5; i++) x[r][i] = r + 1;
  const int32_t want[5] = {2341, 3412, 4123, 1234, 1234};
  for (int rep = 0; rep < 3; rep++) {
    tpurt_buffer_t *res[4];
    run(dev, p, 4, TPURT_S32, 5, x, sizeof x[0], res, 1);
    for (int r = 0; r < 4; r++) {
      int32_t y[5];
      assert_int_equal(tpurt_buffer_read(res[r], y, sizeof y), TPURT_OK);
      assert_memory_equal(y, want, sizeof want);
      tpurt_buffer_destroy(res[r]);
    }
  }
  tpurt_program_destroy(p);
  tpurt_device_destroy(dev);
}

/* Two groups in iota form, {0,2} and {1,3}, and a module asking for more
 * replicas than the device has cores. */
static const char pairs_hlo[] =
    "HloModule pairs, replica_count=4\n"
    "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
    "ENTRY e {\n"
    "  x = f32[2] parameter(0)\n"
    "  ROOT r = f32[2] all-reduce(x), replica_groups=[2,2]<=[2,2]T(1,0), to_apply=add\n"
    "}\n";

static void all_reduce_groups(void **state) {
  (void)state;
  tpurt_device_t *dev = device("cpu,threads=2,replicas=4", NULL, 0);
  tpurt_program_t *p = load(dev, pairs_hlo);
  float x[4][2] = {{1, 10}, {2, 20}, {3, 30}, {4, 40}};
  tpurt_buffer_t *res[4];
  run(dev, p, 4, TPURT_F32, 2, x, sizeof x[0], res, 1);
  const float want[4][2] = {{4, 40}, {6, 60}, {4, 40}, {6, 60}};
  for (int r = 0; r < 4; r++) {
    float y[2];
    assert_int_equal(tpurt_buffer_read(res[r], y, sizeof y), TPURT_OK);
    assert_memory_equal(y, want[r], sizeof y);
    tpurt_buffer_destroy(res[r]);
  }
  tpurt_program_destroy(p);
  tpurt_device_destroy(dev);
  tpurt_device_t *two = device("cpu,threads=1,replicas=2", NULL, 0);
  tpurt_program_t *q = NULL;
  assert_int_not_equal(tpurt_program_load(two, pairs_hlo, strlen(pairs_hlo), &q), TPURT_OK);
  assert_null(q);
  if (!strstr(tpurt_device_message(two), "<memory>:") ||
      !strstr(tpurt_device_message(two), "module asks for 4 replicas"))
    fail_msg("%s", tpurt_device_message(two));
  tpurt_device_destroy(two);
}

static const char tuple_hlo[] =
    "HloModule tuple\n"
    "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
    "ENTRY e {\n"
    "  x = f32[3] parameter(0)\n"
    "  y = f32[3] multiply(x, x)\n"
    "  ROOT r = (f32[3], f32[3]) all-reduce(x, y), replica_groups={}, to_apply=add\n"
    "}\n";

static void all_reduce_tuple(void **state) {
  (void)state;
  tpurt_device_t *dev = device("cpu,threads=1,replicas=2", NULL, 0);
  tpurt_program_t *p = load(dev, tuple_hlo);
  float x[2][3] = {{1, 2, 3}, {4, 5, 6}};
  tpurt_buffer_t *res[4];
  run(dev, p, 2, TPURT_F32, 3, x, sizeof x[0], res, 2);
  const float want[2][3] = {{5, 7, 9}, {17, 29, 45}};
  for (int r = 0; r < 2; r++)
    for (int k = 0; k < 2; k++) {
      float y[3];
      assert_int_equal(tpurt_buffer_read(res[r * 2 + k], y, sizeof y), TPURT_OK);
      assert_memory_equal(y, want[k], sizeof y);
      tpurt_buffer_destroy(res[r * 2 + k]);
    }
  tpurt_program_destroy(p);
  tpurt_device_destroy(dev);
}

/* Fails when the first element is negative; else copies. */
static tpurt_status_t check(void *user, const tpurt_host_tensor_t *ops, int nops,
                            tpurt_host_tensor_t *res, int nres, const char *config, char *err,
                            size_t errlen) {
  (void)user, (void)config, (void)nops, (void)nres;
  const float *x = ops[0].data;
  if (x[0] < 0) {
    snprintf(err, errlen, "negative input %g", (double)x[0]);
    return TPURT_INVALID_ARGUMENT;
  }
  memcpy(res[0].data, x, res[0].bytes);
  return TPURT_OK;
}

static const char check_hlo[] =
    "HloModule checked\n"
    "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
    "ENTRY e {\n"
    "  x = f32[4] parameter(0)\n"
    "  c = f32[4] custom-call(x), custom_call_target=\"check\"\n"
    "  s = f32[4] all-reduce(c), replica_groups={}, to_apply=add\n"
    "  ROOT t = f32[4] all-reduce(s), replica_groups={}, to_apply=add\n"
    "}\n";

static void failing_replica(void **state) {
  (void)state;
  tpurt_custom_call_t cc = {"check", check, NULL};
  tpurt_device_t *dev = device("cpu,threads=2,replicas=3", &cc, 1);
  tpurt_program_t *p = load(dev, check_hlo);
  float x[3][4] = {{1, 2, 3, 4}, {1, 1, 1, 1}, {-1, 0, 0, 0}};
  int64_t four = 4;
  tpurt_buffer_t *in[3], *res[3] = {NULL, NULL, NULL};
  for (int r = 0; r < 3; r++)
    assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 1, &four, x[r], sizeof x[r], &in[r]), TPURT_OK);
  for (int rep = 0; rep < 3; rep++) {
    assert_int_equal(tpurt_program_execute_replicas(p, 3, in, 1, res, 1, NULL), TPURT_INTERNAL);
    const char *m = tpurt_device_message(dev);
    assert_non_null(strstr(m, "replica 2: "));
    assert_non_null(strstr(m, "custom-call target 'check' failed: negative input -1"));
    for (int r = 0; r < 3; r++) assert_null(res[r]);
  }
  /* without the failing replica the same program runs */
  x[2][0] = 2;
  assert_int_equal(tpurt_buffer_write(in[2], x[2], sizeof x[2]), TPURT_OK);
  assert_int_equal(tpurt_program_execute_replicas(p, 3, in, 1, res, 1, NULL), TPURT_OK);
  for (int r = 0; r < 3; r++) {
    float y[4];
    assert_int_equal(tpurt_buffer_read(res[r], y, sizeof y), TPURT_OK);
    const float want[4] = {12, 9, 12, 15}; /* 3 x (4, 3, 4, 5) */
    assert_memory_equal(y, want, sizeof y);
    tpurt_buffer_destroy(res[r]);
    tpurt_buffer_destroy(in[r]);
  }
  tpurt_program_destroy(p);
  tpurt_device_destroy(dev);
}

/* A replica whose input is negative takes the other branch: with `other`
 * an all-reduce with another reduction (different collectives), else none
 * (it finishes while the others wait). */
static const char branch_hlo[] =
    "HloModule branches\n"
    "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
    "mul { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] multiply(a, b) }\n"
    "yes { p = f32[2] parameter(0)\n ROOT r = f32[2] all-reduce(p), replica_groups={}, to_apply=add }\n"
    "no { p = f32[2] parameter(0)\n ROOT r = f32[2] %s }\n"
    "ENTRY e {\n"
    "  x = f32[2] parameter(0)\n"
    "  z = f32[] constant(0)\n"
    "  x0 = f32[1] slice(x), slice={[0:1]}\n"
    "  s = f32[] reshape(x0)\n"
    "  c = pred[] compare(s, z), direction=GE\n"
    "  ROOT r = f32[2] conditional(c, x, x), true_computation=yes, false_computation=no\n"
    "}\n";

static void mismatched_collectives(void **state) {
  (void)state;
  const char *no_branch[2] = {"negate(p)", "all-reduce(p), replica_groups={}, to_apply=mul"};
  const char *want[2] = {"replica 1 finished while replica 0 waited at a collective",
                         "replicas disagree on the collective they run"};
  tpurt_device_t *dev = device("cpu,threads=2,replicas=3", NULL, 0);
  for (int k = 0; k < 2; k++) {
    char text[2048];
    snprintf(text, sizeof text, branch_hlo, no_branch[k]);
    tpurt_program_t *p = load(dev, text);
    float x[3][2] = {{1, 2}, {-1, 5}, {3, 4}};
    int64_t two = 2;
    tpurt_buffer_t *in[3], *res[3];
    for (int r = 0; r < 3; r++)
      assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 1, &two, x[r], sizeof x[r], &in[r]), TPURT_OK);
    for (int rep = 0; rep < 3; rep++) {
      assert_int_equal(tpurt_program_execute_replicas(p, 3, in, 1, res, 1, NULL), TPURT_INTERNAL);
      const char *m = tpurt_device_message(dev);
      if (!strstr(m, "replica 0: ") || !strstr(m, want[k]) || !strstr(m, "all-reduce"))
        fail_msg("case %d: %s", k, m);
    }
    for (int r = 0; r < 3; r++) tpurt_buffer_destroy(in[r]);
    tpurt_program_destroy(p);
  }
  tpurt_device_destroy(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(core_counts),     cmocka_unit_test(all_reduce_sums),
      cmocka_unit_test(all_reduce_order), cmocka_unit_test(all_reduce_tuple),
      cmocka_unit_test(all_reduce_groups),
      cmocka_unit_test(failing_replica), cmocka_unit_test(mismatched_collectives),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
