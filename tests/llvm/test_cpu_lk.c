/* test_cpu_lk.c: the precompiled GEMM variants (backend/llvm/lk.h), each
 * one this CPU runs.
 *
 * lk_contract: each variant's packb + tiles, called directly on odd shapes
 * (1x1x1, 7x13x5, 130x129x257, batches, K over one block, N of one and
 * of two vectors plus a lane) with random f32 data and signed zeros, equal
 * bit for bit an independent scalar oracle of the contract: every output
 * is fmaf over k ascending from +0, then the epilogue operations with
 * elem.c's f32 semantics (max/min: first NaN, first operand on ties).
 *
 * lk_against_evaluator: dots compiled with the variant forced (cpu_options.lib_kernels) against
 * ir_eval, bit for bit: under strict numerics on random data (where dots keep the row kernel
 * whatever the variant), under native numerics on small integers (every product and partial sum
 * exact, so the library's FMAs give the evaluator's values), on 1 and 2 threads. The epilogues
 * through the compiler are cpu_kernels' gemm_epilogues (on the variant cpuid picks). An unknown
 * variant is an error, not a crash.
 *
 * level_rule: the optimisation level a JIT compile picks from the work
 * of its emitted kernels (docs/cpu-backend.md, "Compile levels"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "backend/llvm/lk.h"
#include "tests/llvm/cpu_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define D(...) ((const int64_t[]){__VA_ARGS__})

static uint64_t rng = 0x9e3779b97f4a7c15u;

static float rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  uint64_t r = rng >> 40;
  if (r % 61 == 0) return r % 2 ? -0.0f : 0.0f;
  return (float)((double)(r & 0xffffff) / 16777216.0 * 4.0 - 2.0);
}

static float oracle_op(int64_t op, float x, float y) {
  float r;
  switch (op) {
  case LK_ADD:
    return x + y;
  case LK_SUB:
    return x - y;
  case LK_MUL:
    return x * y;
  case LK_DIV:
    return x / y;
  default:
    r = (op == LK_MAX ? x < y : y < x) ? y : x;
    if (isnan(y)) r = y;
    return isnan(x) ? x : r;
  }
}

/* One GEMM on v against the oracle; false (with a message) on a mismatch. */
static bool run_one(const lk_variant *v, int64_t NB, int64_t M, int64_t N, int64_t K,
                    const lk_epi *epi, int nepi) {
  lk_geom g;
  cpu_lk_plan(v, M, N, K, &g);
  float *A = malloc(sizeof(float) * (size_t)(NB * M * K)),
        *B = malloc(sizeof(float) * (size_t)(NB * K * N));
  float *C = malloc(sizeof(float) * (size_t)(NB * M * N));
  float *Bp = malloc(sizeof(float) * (size_t)(NB * K * g.Nt * g.NR));
  for (int64_t i = 0; i < NB * M * K; i++)
    A[i] = rnd();
  for (int64_t i = 0; i < NB * K * N; i++)
    B[i] = rnd();
  for (int64_t i = 0; i < NB * M * N; i++)
    C[i] = NAN; /* every element must be written */
  lk_gemm a = {A, B, Bp, C, NB, M, N, K, nepi, {{0}}};
  for (int i = 0; i < nepi; i++)
    a.epi[i] = epi[i];
  /* rows in two calls, as parfor would split them */
  v->packb(&a, 0, NB * K / 2);
  v->packb(&a, NB * K / 2, NB * K);
  v->tiles(&a, 0, NB * g.Mt / 3);
  v->tiles(&a, NB * g.Mt / 3, NB * g.Mt);
  bool ok = true;
  for (int64_t b = 0; b < NB && ok; b++)
    for (int64_t i = 0; i < M && ok; i++)
      for (int64_t j = 0; j < N && ok; j++) {
        float acc = 0.0f;
        for (int64_t k = 0; k < K; k++)
          acc = fmaf(A[(b * M + i) * K + k], B[(b * K + k) * N + j], acc);
        for (int e = 0; e < nepi; e++) {
          float x = epi[e].flags & LK_EPI_COL ? epi[e].x[j] : epi[e].x[0];
          acc = epi[e].flags & LK_EPI_SWAP ? oracle_op(epi[e].op, x, acc)
                                           : oracle_op(epi[e].op, acc, x);
        }
        float got = C[(b * M + i) * N + j];
        if (memcmp(&acc, &got, sizeof acc) != 0) {
          print_error("%s %lldx%lldx%lldx%lld: C[%lld][%lld][%lld] = %a, want %a\n", v->name,
                      (long long)NB, (long long)M, (long long)N, (long long)K, (long long)b,
                      (long long)i, (long long)j, (double)got, (double)acc);
          ok = false;
        }
      }
  free(A), free(B), free(C), free(Bp);
  return ok;
}

static void lk_contract(void **state) {
  (void)state;
  static const int64_t shapes[][4] = {
      /* NB, M, N, K */
      {1, 1, 1, 1},     {1, 7, 13, 5},   {1, 130, 129, 257}, {2, 3, 17, 400},  {3, 25, 33, 1},
      {1, 12, 32, 769}, {1, 256, 10, 9}, {2, 9, 16, 3},      {1, 5, 40, 1100},
  };
  float bias[129], scale = 0.5f, zero = 0.0f;
  for (int i = 0; i < 129; i++)
    bias[i] = rnd();
  const lk_epi epis[][3] = {
      {{LK_ADD, LK_EPI_COL, bias}, {LK_MAX, 0, &zero}},
      {{LK_SUB, LK_EPI_COL | LK_EPI_SWAP, bias}, {LK_MIN, LK_EPI_SWAP, &zero}, {LK_MUL, 0, &scale}},
      {{LK_DIV, LK_EPI_SWAP, &scale}},
  };
  const int nepis[] = {2, 3, 1};
  int variants = 0;
  for (int vi = 0; cpu_lk_variants[vi]; vi++) {
    const lk_variant *v = cpu_lk_variants[vi];
    if (!v->runs()) continue;
    variants++;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      const int64_t *sh = shapes[s];
      assert_true(run_one(v, sh[0], sh[1], sh[2], sh[3], NULL, 0));
      if (sh[2] <= 129)
        assert_true(run_one(v, sh[0], sh[1], sh[2], sh[3], epis[s % 3], nepis[s % 3]));
    }
  }
  assert_true(variants >= 1); /* the portable one runs everywhere */
  assert_non_null(cpu_lk_find(NULL));
  assert_null(cpu_lk_find("no-such-isa"));
}

static ir_attrs dot_attrs(tmod *t, int nbatch) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  int64_t lc = nbatch + 1, rc = nbatch, bd[1] = {0};
  a.lhs_contracting = tm_ints(t->m->arena, 1, &lc);
  a.rhs_contracting = tm_ints(t->m->arena, 1, &rc);
  a.lhs_batch = tm_ints(t->m->arena, nbatch, bd);
  a.rhs_batch = tm_ints(t->m->arena, nbatch, bd);
  a.preferred_type = IR_TYPE_INVALID;
  return a;
}

/* dot(l, r) as a module, checked with variant vname. */
static bool check_dot(const char *vname, int64_t nb, int64_t M, int64_t K, int64_t N,
                      cpu_numerics num, int threads) {
  tmod t = tm_new("lk");
  ir_id l = nb ? tm_param(&t, 0, IR_F32, 3, D(nb, M, K)) : tm_param(&t, 0, IR_F32, 2, D(M, K));
  ir_id r = nb ? tm_param(&t, 1, IR_F32, 3, D(nb, K, N)) : tm_param(&t, 1, IR_F32, 2, D(K, N));
  ir_attrs a = dot_attrs(&t, nb ? 1 : 0);
  ir_id root = tm_op(&t, IR_OP_DOT, (ir_id[]){l, r}, 2, &a);
  tm_finish(&t, root);
  arena *ar = arena_create();
  ir_literal **args =
      num == CPU_NUMERICS_STRICT ? tm_args(&t, ar, 7, false) : tm_int_args(&t, ar, 7);
  cpu_options o;
  cpu_options_init(&o);
  o.numerics = num;
  o.threads = threads;
  o.lib_kernels = vname;
  char what[128];
  snprintf(what, sizeof what, "%s %s nb=%lld %lldx%lldx%lld t=%d", vname,
           num == CPU_NUMERICS_STRICT ? "strict" : "native", (long long)nb, (long long)M,
           (long long)K, (long long)N, threads);
  bool ok = tm_check_opts(&t, args, &o, 0, what);
  arena_destroy(ar);
  ir_module_destroy(t.m);
  return ok;
}

static void lk_against_evaluator(void **state) {
  (void)state;
  static const int64_t shapes[][4] = {
      /* nb, M, K, N */
      {0, 1, 1, 1}, {0, 7, 5, 13}, {0, 130, 257, 129}, {2, 36, 400, 64}, {0, 61, 769, 1},
  };
  for (int vi = 0; cpu_lk_variants[vi]; vi++) {
    const lk_variant *v = cpu_lk_variants[vi];
    if (!v->runs()) continue;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      const int64_t *sh = shapes[s];
      for (int th = 1; th <= 2; th++) {
        assert_true(check_dot(v->name, sh[0], sh[1], sh[2], sh[3], CPU_NUMERICS_NATIVE, th));
        assert_true(check_dot(v->name, sh[0], sh[1], sh[2], sh[3], CPU_NUMERICS_STRICT, th));
      }
    }
  }
  /* a variant this build does not know */
  tmod t = tm_new("lk_bad");
  ir_id l = tm_param(&t, 0, IR_F32, 2, D(4, 4)), r = tm_param(&t, 1, IR_F32, 2, D(4, 4));
  ir_attrs a = dot_attrs(&t, 0);
  tm_finish(&t, tm_op(&t, IR_OP_DOT, (ir_id[]){l, r}, 2, &a));
  cpu_options o;
  cpu_options_init(&o);
  o.lib_kernels = "sse9";
  cpu_exe *x = NULL;
  char err[256];
  assert_int_equal(cpu_compile(t.m, &o, &x, err, sizeof err), ST_INVALID_ARGUMENT);
  assert_null(x);
  assert_non_null(strstr(err, "library kernels 'sse9'"));
  ir_module_destroy(t.m);
}

/* The level rule: a module with little emitted work compiles at O0, one
 * with 2^23 elementwise operations at O3, and fixed_level keeps O3. */
static void level_rule(void **state) {
  (void)state;
  static const int64_t rows[] = {4, 4096};
  static const int want[] = {0, 3};
  for (int i = 0; i < 4; i++) {
    tmod t = tm_new("level");
    ir_id x = tm_param(&t, 0, IR_F32, 2, D(rows[i % 2], 2048));
    ir_id y = tm_param(&t, 1, IR_F32, 2, D(rows[i % 2], 2048));
    tm_finish(&t, tm_op(&t, IR_OP_ADD, (ir_id[]){x, y}, 2, NULL));
    cpu_options o;
    cpu_options_init(&o);
    o.fixed_level = i >= 2;
    cpu_exe *e = NULL;
    char err[256];
    assert_int_equal(cpu_compile(t.m, &o, &e, err, sizeof err), ST_OK);
    cpu_exe_info info;
    cpu_exe_get_info(e, &info);
    assert_int_equal(info.opt_level, i >= 2 ? 3 : want[i]);
    cpu_exe_destroy(e);
    ir_module_destroy(t.m);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(lk_contract),
      cmocka_unit_test(lk_against_evaluator),
      cmocka_unit_test(level_rule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
