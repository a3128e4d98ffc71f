/* test_eval_coll.c: the evaluator's collectives over N replicas
 * (ir_eval_replicated, ir/eval_coll.c) against values worked out by hand
 * from docs/collectives.md: the combining order of base/coll.h, proven
 * with the non-commutative a*2+b; groups in list and iota form;
 * all-gather, reduce-scatter, all-to-all (array and tuple forms),
 * collective-permute, collective-broadcast, replica-id, the start/done
 * pairs; collectives inside while and call; replicas that disagree on how
 * many collectives they run end with an error, not a hang. Modules are
 * HLO text; replica r's argument is given per test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "frontend/frontend.h"

enum { MAXR = 8, MAXN = 16 };

typedef struct run {
  ir_module *m;
  arena *out;
  ir_literal *v[MAXR];
  base_status st;
  char err[700];
} run;

/* Parses text and runs nrep replicas; replica r's one argument is the
 * f32 (or s32 when is_int) array of shape `shape` with values x[r]. */
static run eval_rep(const char *text, int nrep, const char *shape, double x[][MAXN]) {
  run r;
  memset(&r, 0, sizeof r);
  diag *d = diag_create();
  r.m = fe_parse_hlo("t.hlo", text, strlen(text), d);
  if (!r.m) fail_msg("%s", diag_first_message(d));
  if (ir_verify(r.m, d)) fail_msg("verify: %s", diag_first_message(d));
  diag_destroy(d);
  r.out = arena_create();
  ir_literal *lits[MAXR];
  ir_literal *const *args[MAXR];
  const ir_comp *e = &r.m->comps.v[r.m->entry];
  int nargs = shape ? 1 : 0;
  for (int i = 0; i < nrep; i++) {
    if (shape) {
      const ir_shape *ps = e->insts.v[e->params[0]].shape;
      lits[i] = ir_literal_create(r.out, ps);
      for (int64_t k = 0; k < ir_shape_count(ps); k++) ir_literal_set_f64(lits[i], k, x[i][k]);
    }
    args[i] = &lits[i];
  }
  r.st = ir_eval_replicated(r.m, NULL, nrep, args, nargs, r.out, r.v, r.err, sizeof r.err);
  return r;
}

static void run_free(run *r) {
  arena_destroy(r->out);
  ir_module_destroy(r->m);
}

static void expect(const ir_literal *l, const double *v, int n) {
  assert_non_null(l);
  assert_int_equal(ir_shape_count(&l->shape), n);
  for (int i = 0; i < n; i++) {
    double got = ir_literal_get_f64(l, i);
    if (got != v[i]) fail_msg("element %d: got %.9g, expected %.9g", i, got, v[i]);
  }
}

#define VALS(...) (double[]){__VA_ARGS__}, (int)(sizeof((double[]){__VA_ARGS__}) / sizeof(double))

static const char *const add_comp = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                                    "  ROOT c = f32[] add(a, b)\n}\n";
/* a*2+b: not commutative, so the result shows the order of the terms */
static const char *const lin_comp = "lin {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                                    "  two = f32[] constant(2)\n  m = f32[] multiply(a, two)\n"
                                    "  ROOT c = f32[] add(m, b)\n}\n";

static char *module(const char *header, const char *comp, const char *entry) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "HloModule %s\n\n%s\nENTRY e {\n%s}\n", header, comp ? comp : "", entry);
  return buf;
}

static void all_reduce_of_issue_16(void **state) {
  (void)state;
  double x[MAXR][MAXN];
  for (int i = 0; i < 8; i++)
    for (int k = 0; k < 4; k++) x[i][k] = k + 1;
  run r = eval_rep(module("m, replica_count=8", add_comp,
                          "  p = f32[4] parameter(0)\n"
                          "  ROOT r = f32[4] all-reduce(p), replica_groups={{0,1,2,3,4,5,6,7}}, "
                          "to_apply=add\n"),
                   8, "f32[4]", x);
  assert_int_equal(r.st, ST_OK);
  for (int i = 0; i < 8; i++) expect(r.v[i], VALS(8, 16, 24, 32));
  run_free(&r);
}

/* group {2,0,1}, replica r holds r+1 everywhere; element c is chunk c,
 * folded from g[(c+1)%3] on: chunk 0 = r0, r1, r2 -> (1*2+2)*2+3 = 11;
 * chunk 1 = r1, r2, r0 -> (2*2+3)*2+1 = 15; chunk 2 = r2, r0, r1 -> 16 */
static void all_reduce_folds_in_ring_order(void **state) {
  (void)state;
  double x[MAXR][MAXN] = {{1, 1, 1}, {2, 2, 2}, {3, 3, 3}};
  run r = eval_rep(module("m", lin_comp,
                          "  p = f32[3] parameter(0)\n"
                          "  ROOT r = f32[3] all-reduce(p), replica_groups={{2,0,1}}, to_apply=lin\n"),
                   3, "f32[3]", x);
  assert_int_equal(r.st, ST_OK);
  for (int i = 0; i < 3; i++) expect(r.v[i], VALS(11, 15, 16));
  run_free(&r);
}

/* groups {0,2} and {1,3} from the iota form; tuple operands reduce apart */
static void all_reduce_iota_groups_and_tuples(void **state) {
  (void)state;
  double x[MAXR][MAXN] = {{1, 2}, {10, 20}, {100, 200}, {1000, 2000}};
  run r = eval_rep(module("m, replica_count=4", add_comp,
                          "  p = f32[2] parameter(0)\n  n = f32[2] negate(p)\n"
                          "  ROOT r = (f32[2], f32[2]) all-reduce(p, n), channel_id=1, "
                          "replica_groups=[2,2]<=[2,2]T(1,0), use_global_device_ids=true, "
                          "to_apply=add\n"),
                   4, "f32[2]", x);
  assert_int_equal(r.st, ST_OK);
  for (int i = 0; i < 4; i += 2) {
    expect(r.v[i]->elems[0], VALS(101, 202));
    expect(r.v[i]->elems[1], VALS(-101, -202));
    expect(r.v[i + 1]->elems[0], VALS(1010, 2020));
  }
  run_free(&r);
}

/* group {1,0}: replica 1 is position 0 and keeps slice 0, folded r0 then
 * r1 (1*2+10, 2*2+20); replica 0 keeps slice 1, folded r1 then r0 */
static void reduce_scatter_keeps_its_slice_in_order(void **state) {
  (void)state;
  double x[MAXR][MAXN] = {{1, 2, 3, 4}, {10, 20, 30, 40}};
  run r = eval_rep(module("m", lin_comp,
                          "  p = f32[4] parameter(0)\n"
                          "  ROOT r = f32[2] reduce-scatter(p), replica_groups={{1,0}}, "
                          "dimensions={0}, to_apply=lin\n"),
                   2, "f32[4]", x);
  assert_int_equal(r.st, ST_OK);
  expect(r.v[0], VALS(63, 84));
  expect(r.v[1], VALS(12, 24));
  run_free(&r);
  /* a middle dimension: f32[1,4,2] scattered along 1 over all replicas */
  double y[MAXR][MAXN] = {{0, 1, 2, 3, 4, 5, 6, 7}, {10, 11, 12, 13, 14, 15, 16, 17}};
  r = eval_rep(module("m", add_comp,
                      "  p = f32[1,4,2] parameter(0)\n"
                      "  ROOT r = f32[1,2,2] reduce-scatter(p), replica_groups={}, "
                      "dimensions={1}, to_apply=add\n"),
               2, "f32[1,4,2]", y);
  assert_int_equal(r.st, ST_OK);
  expect(r.v[0], VALS(10, 12, 14, 16));
  expect(r.v[1], VALS(18, 20, 22, 24));
  run_free(&r);
}

static void all_gather_concatenates_in_group_order(void **state) {
  (void)state;
  double x[MAXR][MAXN] = {{0, 0}, {1, 10}, {2, 20}, {3, 30}};
  run r = eval_rep(module("m, replica_count=4", NULL,
                          "  p = f32[1,2] parameter(0)\n"
                          "  a = f32[2,2] all-gather(p), replica_groups=[2,2]<=[2,2]T(1,0), "
                          "dimensions={0}\n"
                          "  b = f32[1,4] all-gather(p), replica_groups={{3,1},{2,0}}, "
                          "dimensions={1}\n"
                          "  ROOT t = (f32[2,2], f32[1,4]) tuple(a, b)\n"),
                   4, "f32[1,2]", x);
  assert_int_equal(r.st, ST_OK);
  expect(r.v[0]->elems[0], VALS(0, 0, 2, 20));
  expect(r.v[1]->elems[0], VALS(1, 10, 3, 30));
  expect(r.v[2]->elems[0], VALS(0, 0, 2, 20));
  expect(r.v[0]->elems[1], VALS(2, 20, 0, 0));
  expect(r.v[3]->elems[1], VALS(3, 30, 1, 10));
  run_free(&r);
}

static void all_to_all_array_and_tuple_forms(void **state) {
  (void)state;
  double x[MAXR][MAXN] = {{1, 2, 3, 4}, {5, 6, 7, 8}};
  run r = eval_rep(module("m", NULL,
                          "  p = f32[4] parameter(0)\n"
                          "  ROOT r = f32[4] all-to-all(p), replica_groups={{0,1}}, dimensions={0}\n"),
                   2, "f32[4]", x);
  assert_int_equal(r.st, ST_OK);
  expect(r.v[0], VALS(1, 2, 5, 6));
  expect(r.v[1], VALS(3, 4, 7, 8));
  run_free(&r);
  /* tuple form: element j of replica p is operand p of replica j */
  double y[MAXR][MAXN] = {{1, 2}, {3, 4}};
  r = eval_rep(module("m", NULL,
                      "  p = f32[2] parameter(0)\n"
                      "  a = f32[1] slice(p), slice={[0:1]}\n  b = f32[1] slice(p), slice={[1:2]}\n"
                      "  ROOT r = (f32[1], f32[1]) all-to-all(a, b), replica_groups={{0,1}}\n"),
               2, "f32[2]", y);
  assert_int_equal(r.st, ST_OK);
  expect(r.v[0]->elems[0], VALS(1));
  expect(r.v[0]->elems[1], VALS(3));
  expect(r.v[1]->elems[0], VALS(2));
  expect(r.v[1]->elems[1], VALS(4));
  run_free(&r);
}

static void permute_broadcast_and_replica_id(void **state) {
  (void)state;
  double x[MAXR][MAXN] = {{1, 2}, {3, 4}, {5, 6}};
  run r = eval_rep(module("m, replica_count=3", NULL,
                          "  p = f32[2] parameter(0)\n"
                          "  a = f32[2] collective-permute(p), channel_id=2, "
                          "source_target_pairs={{0,1},{1,2}}\n"
                          "  b = f32[2] collective-broadcast(p), replica_groups={{1,0,2}}\n"
                          "  i = u32[] replica-id()\n  j = u32[] partition-id()\n"
                          "  ROOT t = (f32[2], f32[2], u32[], u32[]) tuple(a, b, i, j)\n"),
                   3, "f32[2]", x);
  assert_int_equal(r.st, ST_OK);
  expect(r.v[0]->elems[0], VALS(0, 0));
  expect(r.v[1]->elems[0], VALS(1, 2));
  expect(r.v[2]->elems[0], VALS(3, 4));
  for (int i = 0; i < 3; i++) {
    expect(r.v[i]->elems[1], VALS(3, 4));
    expect(r.v[i]->elems[2], (double[]){i}, 1);
    expect(r.v[i]->elems[3], VALS(0));
  }
  run_free(&r);
}

static void start_done_pairs_are_their_synchronous_op(void **state) {
  (void)state;
  double x[MAXR][MAXN] = {{1, 2}, {3, 4}};
  run r = eval_rep(module("m, replica_count=2", add_comp,
                          "  p = f32[2] parameter(0)\n"
                          "  s = f32[2] all-reduce-start(p), replica_groups={}, to_apply=add\n"
                          "  d = f32[2] all-reduce-done(s)\n"
                          "  gs = (f32[2], f32[4]) all-gather-start(p), replica_groups={}, "
                          "dimensions={0}\n"
                          "  gd = f32[4] all-gather-done(gs)\n"
                          "  ps = (f32[2], f32[2], u32[], u32[]) collective-permute-start(p), "
                          "source_target_pairs={{0,1},{1,0}}\n"
                          "  pd = f32[2] collective-permute-done(ps)\n"
                          "  ROOT t = (f32[2], f32[4], f32[2]) tuple(d, gd, pd)\n"),
                   2, "f32[2]", x);
  assert_int_equal(r.st, ST_OK);
  for (int i = 0; i < 2; i++) {
    expect(r.v[i]->elems[0], VALS(4, 6));
    expect(r.v[i]->elems[1], VALS(1, 2, 3, 4));
  }
  expect(r.v[0]->elems[2], VALS(3, 4));
  expect(r.v[1]->elems[2], VALS(1, 2));
  run_free(&r);
}

/* three trips of a while whose body all-reduces, then a call that does */
static void collectives_inside_while_and_call(void **state) {
  (void)state;
  static const char *const text =
      "HloModule m, replica_count=2\n\n"
      "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"
      "cond {\n  s = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
      "  n = s32[] constant(3)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
      "body {\n  s = (s32[], f32[2]) parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n"
      "  v = f32[2] get-tuple-element(s), index=1\n  one = s32[] constant(1)\n"
      "  j = s32[] add(i, one)\n  w = f32[2] all-reduce(v), replica_groups={}, to_apply=add\n"
      "  ROOT t = (s32[], f32[2]) tuple(j, w)\n}\n"
      "callee {\n  x = f32[2] parameter(0)\n"
      "  ROOT g = f32[4] all-gather(x), replica_groups={{1,0}}, dimensions={0}\n}\n"
      "ENTRY e {\n  p = f32[2] parameter(0)\n  z = s32[] constant(0)\n"
      "  s = (s32[], f32[2]) tuple(z, p)\n  w = (s32[], f32[2]) while(s), condition=cond, body=body\n"
      "  v = f32[2] get-tuple-element(w), index=1\n"
      "  ROOT c = f32[4] call(v), to_apply=callee\n}\n";
  double x[MAXR][MAXN] = {{1, 2}, {3, 4}};
  run r = eval_rep(text, 2, "f32[2]", x);
  assert_int_equal(r.st, ST_OK);
  for (int i = 0; i < 2; i++) expect(r.v[i], VALS(16, 24, 16, 24));
  run_free(&r);
}

/* replica r loops r+1 times around an all-reduce: replica 0 finishes
 * while replica 1 waits at its second one, which then fails (no hang) */
static void replicas_that_diverge_fail_without_hanging(void **state) {
  (void)state;
  static const char *const text =
      "HloModule m, replica_count=2\n\n"
      "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n"
      "cond {\n  s = (u32[], f32[2]) parameter(0)\n  i = u32[] get-tuple-element(s), index=0\n"
      "  r = u32[] replica-id()\n  one = u32[] constant(1)\n  n = u32[] add(r, one)\n"
      "  ROOT lt = pred[] compare(i, n), direction=LT\n}\n"
      "body {\n  s = (u32[], f32[2]) parameter(0)\n  i = u32[] get-tuple-element(s), index=0\n"
      "  v = f32[2] get-tuple-element(s), index=1\n  one = u32[] constant(1)\n"
      "  j = u32[] add(i, one)\n  w = f32[2] all-reduce(v), replica_groups={}, to_apply=add\n"
      "  ROOT t = (u32[], f32[2]) tuple(j, w)\n}\n"
      "ENTRY e {\n  p = f32[2] parameter(0)\n  z = u32[] constant(0)\n"
      "  s = (u32[], f32[2]) tuple(z, p)\n"
      "  ROOT w = (u32[], f32[2]) while(s), condition=cond, body=body\n}\n";
  double x[MAXR][MAXN] = {{1, 2}, {3, 4}};
  run r = eval_rep(text, 2, "f32[2]", x);
  assert_int_not_equal(r.st, ST_OK);
  assert_non_null(strstr(r.err, "all-reduce"));
  assert_non_null(strstr(r.err, "replica 1 of 2"));
  assert_null(r.v[0]);
  run_free(&r);
}

/* Indexing ops in replicas (their shapes checked once, before the
 * threads start): replica r slices element r of its input at replica-id
 * and the group gathers the slices; a two-operand scatter (a tuple
 * result) adds them back. */
static void indexing_by_replica_id(void **state) {
  (void)state;
  double x[MAXR][MAXN] = {{1, 2, 3}, {10, 20, 30}, {100, 200, 300}};
  static const char *const add2 =
      "add2 {\n  a0 = f32[] parameter(0)\n  a1 = f32[] parameter(1)\n  b0 = f32[] parameter(2)\n"
      "  b1 = f32[] parameter(3)\n  s0 = f32[] add(a0, b0)\n  s1 = f32[] add(a1, b1)\n"
      "  ROOT t = (f32[], f32[]) tuple(s0, s1)\n}\n";
  run r = eval_rep(module("m, replica_count=3", add2,
                          "  p = f32[3] parameter(0)\n  i = u32[] replica-id()\n"
                          "  j = s32[] convert(i)\n"
                          "  d = f32[1] dynamic-slice(p, j), dynamic_slice_sizes={1}\n"
                          "  g = f32[3] all-gather(d), replica_groups={}, dimensions={0}\n"
                          "  k = s32[1] broadcast(j), dimensions={}\n"
                          "  s = (f32[3], f32[3]) scatter(p, p, k, d, d), update_window_dims={}, "
                          "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                          "index_vector_dim=1, to_apply=add2\n"
                          "  s0 = f32[3] get-tuple-element(s), index=0\n"
                          "  ROOT t = (f32[3], f32[3]) tuple(g, s0)\n"),
                   3, "f32[3]", x);
  assert_int_equal(r.st, ST_OK);
  for (int i = 0; i < 3; i++) expect(r.v[i]->elems[0], VALS(1, 20, 300));
  expect(r.v[0]->elems[1], VALS(2, 2, 3));
  expect(r.v[1]->elems[1], VALS(10, 40, 30));
  expect(r.v[2]->elems[1], VALS(100, 200, 600));
  run_free(&r);
}

/* One replica: no threads; the collectives see only this replica. */
static void one_replica_runs_alone(void **state) {
  (void)state;
  double x[MAXR][MAXN] = {{1, 2}};
  run r = eval_rep(module("m", lin_comp,
                          "  p = f32[2] parameter(0)\n"
                          "  a = f32[2] all-gather(p), replica_groups={{0}}, dimensions={0}\n"
                          "  b = f32[2] reduce-scatter(p), replica_groups={}, dimensions={0}, "
                          "to_apply=lin\n"
                          "  c = f32[2] all-reduce(p), replica_groups={}, to_apply=lin\n"
                          "  d = f32[2] collective-permute(p), source_target_pairs={{0,0}}\n"
                          "  e = f32[2] collective-permute(p), source_target_pairs={}\n"
                          "  ROOT t = (f32[2], f32[2], f32[2], f32[2], f32[2]) tuple(a, b, c, d, e)\n"),
                   1, "f32[2]", x);
  assert_int_equal(r.st, ST_OK);
  for (int k = 0; k < 4; k++) expect(r.v[0]->elems[k], VALS(1, 2));
  expect(r.v[0]->elems[4], VALS(0, 0));
  run_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(all_reduce_of_issue_16),
      cmocka_unit_test(all_reduce_folds_in_ring_order),
      cmocka_unit_test(all_reduce_iota_groups_and_tuples),
      cmocka_unit_test(reduce_scatter_keeps_its_slice_in_order),
      cmocka_unit_test(all_gather_concatenates_in_group_order),
      cmocka_unit_test(all_to_all_array_and_tuple_forms),
      cmocka_unit_test(permute_broadcast_and_replica_id),
      cmocka_unit_test(start_done_pairs_are_their_synchronous_op),
      cmocka_unit_test(collectives_inside_while_and_call),
      cmocka_unit_test(replicas_that_diverge_fail_without_hanging),
      cmocka_unit_test(indexing_by_replica_id),
      cmocka_unit_test(one_replica_runs_alone),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
