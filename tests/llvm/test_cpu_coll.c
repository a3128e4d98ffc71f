/* test_cpu_coll.c: collectives across replicas on the cpu (backend/llvm/
 * coll.c) against the reference evaluator's replicated run
 * (ir_eval_replicated), bit for bit under strict numerics: random modules
 * of every collective (all-reduce with groups in list, iota and empty form
 * and tuple operands, reduce-scatter, all-gather, all-to-all in both
 * forms, collective-permute, collective-broadcast, the -start/-done forms)
 * with replica-id and partition-id beside them, random replica counts,
 * groups, shapes, element types and reductions, a non-commutative one
 * included; then the errors: a group naming a missing replica, a replica
 * count the module does not ask for, an AOT object with collectives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/frontend.h"
#include "tests/llvm/cpu_check.h"

typedef struct rng {
  uint64_t s;
} rng;

static uint32_t draw(rng *r, uint32_t n) {
  r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(r->s >> 33) % n;
}

typedef struct text {
  char s[8192];
  size_t n;
} text;

static void put(text *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(t->s + t->n, sizeof t->s - t->n, fmt, ap);
  va_end(ap);
  assert_true(k >= 0 && (size_t)k < sizeof t->s - t->n);
  t->n += (size_t)k;
}

static ir_module *parse(const char *src) {
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("coll.hlo", src, strlen(src), d);
  if (!m) fail_msg("parse:\n%s\n%s", diag_text(d), src);
  diag_destroy(d);
  return m;
}

/* "T[d0,d1]" with dimension k multiplied by mul (k < 0: none). */
static void shape_text(text *t, const char *ty, int rank, const int64_t *dims, int k, int64_t mul) {
  put(t, "%s[", ty);
  for (int i = 0; i < rank; i++) put(t, "%s%lld", i ? "," : "", (long long)(dims[i] * (i == k ? mul : 1)));
  put(t, "]");
}

/* replica_groups for n replicas in groups of size g (g divides n): empty
 * (only when g == n), a shuffled list, or the iota form. */
static void groups_text(text *t, rng *r, int n, int g) {
  int form = draw(r, 3);
  if (g == n && form == 0) {
    put(t, "replica_groups={}");
    return;
  }
  if (form == 1) { /* [n/g, g]<=[n] or transposed */
    if (draw(r, 2)) put(t, "replica_groups=[%d,%d]<=[%d]", n / g, g, n);
    else put(t, "replica_groups=[%d,%d]<=[%d,%d]T(1,0)", n / g, g, g, n / g);
    return;
  }
  int perm[16];
  for (int i = 0; i < n; i++) perm[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)draw(r, (uint32_t)i + 1), x = perm[i];
    perm[i] = perm[j], perm[j] = x;
  }
  put(t, "replica_groups={");
  for (int k = 0; k < n / g; k++) {
    put(t, "%s{", k ? "," : "");
    for (int j = 0; j < g; j++) put(t, "%s%d", j ? "," : "", perm[k * g + j]);
    put(t, "}");
  }
  put(t, "}");
}

static const char *const types[] = {"f32", "s32", "bf16", "f16", "f64", "u8"};
/* reductions: the root of (a, b); the last two do not commute */
static const char *const reductions[] = {"add(a, b)", "multiply(a, b)", "maximum(a, b)", "minimum(a, b)",
                                         "subtract(a, b)", "add(m, b)"};

enum op_kind { ALL_REDUCE, ALL_REDUCE_TUPLE, REDUCE_SCATTER, ALL_GATHER, ALL_TO_ALL, ALL_TO_ALL_TUPLE,
               PERMUTE, BROADCAST, ALL_REDUCE_START, ALL_GATHER_START, PERMUTE_START, NKINDS };

/* One random module for nrep replicas; *nparams its parameter count. */
static void random_module(text *t, rng *r, int nrep, int kind, int *nparams) {
  const char *ty = types[draw(r, 6)];
  int rank = 1 + (int)draw(r, 3);
  int64_t dims[3] = {1, 1, 1};
  for (int i = 0; i < rank; i++) dims[i] = 1 + draw(r, 5);
  int d = (int)draw(r, (uint32_t)rank);
  int g = nrep; /* group size: a divisor of nrep */
  for (int k = 0; k < 3; k++) {
    int c = 1 + (int)draw(r, (uint32_t)nrep);
    if (nrep % c == 0) g = c;
  }
  bool reshard = kind == REDUCE_SCATTER || kind == ALL_TO_ALL;
  if (reshard) dims[d] *= g; /* divisible by the group size */
  if (draw(r, 2)) put(t, "HloModule coll, replica_count=%d\n", nrep);
  else put(t, "HloModule coll\n");
  put(t, "f {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n  two = %s[] constant(2)\n"
         "  m = %s[] multiply(a, two)\n  ROOT r = %s[] %s\n}\n",
      ty, ty, ty, ty, ty, reductions[draw(r, 6)]);
  put(t, "ENTRY e {\n");
  int np = kind == ALL_TO_ALL_TUPLE ? g : kind == ALL_REDUCE_TUPLE ? 2 : 1;
  *nparams = np;
  for (int p = 0; p < np; p++) {
    put(t, "  p%d = ", p);
    shape_text(t, ty, rank, dims, -1, 1);
    put(t, " parameter(%d)\n  x%d = ", p, p);
    shape_text(t, ty, rank, dims, -1, 1);
    put(t, " add(p%d, p%d)\n", p, p);
  }
  text res = {.n = 0}, one = {.n = 0};
  shape_text(&one, ty, rank, dims, -1, 1);
  switch (kind) {
  case REDUCE_SCATTER: {
    int64_t rd[3] = {dims[0], dims[1], dims[2]};
    rd[d] /= g;
    shape_text(&res, ty, rank, rd, -1, 1);
    break;
  }
  case ALL_GATHER: case ALL_GATHER_START: shape_text(&res, ty, rank, dims, d, g); break;
  case ALL_REDUCE_TUPLE: case ALL_TO_ALL_TUPLE:
    put(&res, "(");
    for (int p = 0; p < np; p++) put(&res, "%s%s", p ? ", " : "", one.s);
    put(&res, ")");
    break;
  default: put(&res, "%s", one.s); break;
  }
  char ops[256] = "x0";
  if (np > 1) {
    size_t k = 0;
    for (int p = 0; p < np; p++) k += (size_t)snprintf(ops + k, sizeof ops - k, "%sx%d", p ? ", " : "", p);
  }
  text attrs = {.n = 0};
  if (kind == PERMUTE || kind == PERMUTE_START) { /* a random partial permutation */
    int perm[16];
    for (int i = 0; i < nrep; i++) perm[i] = i;
    for (int i = nrep - 1; i > 0; i--) {
      int j = (int)draw(r, (uint32_t)i + 1), x = perm[i];
      perm[i] = perm[j], perm[j] = x;
    }
    put(&attrs, "source_target_pairs={");
    int written = 0;
    for (int i = 0; i < nrep; i++)
      if (draw(r, 4)) put(&attrs, "%s{%d,%d}", written++ ? "," : "", i, perm[i]);
    put(&attrs, "}");
  } else {
    groups_text(&attrs, r, nrep, g);
  }
  if (kind == REDUCE_SCATTER || kind == ALL_GATHER || kind == ALL_TO_ALL || kind == ALL_GATHER_START)
    put(&attrs, ", dimensions={%d}", d);
  if (kind == ALL_REDUCE || kind == ALL_REDUCE_TUPLE || kind == REDUCE_SCATTER || kind == ALL_REDUCE_START)
    put(&attrs, ", to_apply=f");
  static const char *const names[NKINDS] = {
      "all-reduce", "all-reduce", "reduce-scatter", "all-gather", "all-to-all", "all-to-all",
      "collective-permute", "collective-broadcast", "all-reduce-start", "all-gather-start",
      "collective-permute-start"};
  if (kind == ALL_GATHER_START || kind == PERMUTE_START) {
    const char *ctx = kind == PERMUTE_START ? ", u32[], u32[]" : "";
    put(t, "  s = (%s, %s%s) %s(%s), %s\n", one.s, res.s, ctx, names[kind], ops, attrs.s);
    put(t, "  c = %s %s-done(s)\n", res.s, kind == PERMUTE_START ? "collective-permute" : "all-gather");
  } else if (kind == ALL_REDUCE_START) {
    put(t, "  s = %s all-reduce-start(%s), %s\n  c = %s all-reduce-done(s)\n", res.s, ops, attrs.s, res.s);
  } else {
    put(t, "  c = %s %s(%s), %s\n", res.s, names[kind], ops, attrs.s);
  }
  put(t, "  rid = u32[] replica-id()\n  pid = u32[] partition-id()\n");
  put(t, "  ROOT t = (%s, u32[], u32[]) tuple(c, rid, pid)\n}\n", res.s);
}

/* Runs m on nrep replicas on the cpu (strict) and on the evaluator;
 * asserts that every replica's result agrees bit for bit. */
static void check_module(const char *src, int nrep, int nparams, uint64_t seed, int threads) {
  ir_module *m = parse(src);
  arena *a = arena_create();
  ir_literal **args = arena_array(a, (size_t)(nrep * nparams) + 1, sizeof *args);
  ir_literal *const **per = arena_array(a, (size_t)nrep, sizeof *per);
  const ir_comp *ec = &m->comps.v[m->entry];
  for (int r = 0; r < nrep; r++) {
    for (int p = 0; p < nparams; p++) {
      ir_literal *l = ir_literal_create(a, ec->insts.v[ec->params[p]].shape);
      tm_fill(l, seed * 131 + (uint64_t)(r * 8 + p), true);
      args[r * nparams + p] = l;
    }
    per[r] = args + r * nparams;
  }
  char err[1024];
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  ir_literal **want = arena_array(a, (size_t)nrep, sizeof *want);
  if (ir_eval_replicated(m, &eo, nrep, per, nparams, a, want, err, sizeof err) != ST_OK)
    fail_msg("eval: %s\n%s", err, src);
  cpu_options o;
  cpu_options_init(&o);
  o.numerics = CPU_NUMERICS_STRICT;
  o.threads = threads;
  o.replicas = nrep;
  cpu_exe *x = NULL;
  if (cpu_compile(m, &o, &x, err, sizeof err) != ST_OK) fail_msg("compile: %s\n%s", err, src);
  ir_literal **got = arena_array(a, (size_t)nrep, sizeof *got);
  for (int r = 0; r < nrep; r++) got[r] = ir_literal_create(a, &want[r]->shape);
  for (int run = 0; run < 2; run++) { /* twice: scratch and rendezvous reused */
    base_status st = nrep == 1 ? cpu_execute_to(x, args, nparams, got[0], err, sizeof err)
                               : cpu_execute_replicas(x, nrep, args, nparams, got, err, sizeof err);
    if (st != ST_OK) fail_msg("run: %s\n%s", err, src);
    for (int r = 0; r < nrep; r++) {
      char what[64];
      snprintf(what, sizeof what, "replica %d of %d", r, nrep);
      if (!tm_agree(want[r], got[r], 0, what)) fail_msg("differs from ir_eval:\n%s", src);
    }
  }
  cpu_exe_destroy(x);
  arena_destroy(a);
  ir_module_destroy(m);
}

static void random_collectives(void **state) {
  (void)state;
  const char *env = getenv("TPUCC_COLL_TRIALS");
  int trials = env ? atoi(env) : 3 * NKINDS;
  static const int counts[] = {1, 2, 3, 4, 6, 8};
  for (int i = 0; i < trials; i++) {
    rng r = {0x9e3779b9ull * (uint64_t)(i + 1)};
    int nrep = counts[draw(&r, 6)], kind = i % NKINDS, np;
    text t = {.n = 0};
    random_module(&t, &r, nrep, kind, &np);
    check_module(t.s, nrep, np, (uint64_t)i, 1 + (int)draw(&r, 3));
  }
}

/* The fold order shows in a non-commutative s32 reduction: 10 acc + x over
 * the group {2,0,3} of replicas whose operand is 1 + their number,
 * elements split into chunks [0,1) [1,2) [2,4): chunk c starts at member
 * c+1 and ends at member c (base/coll.h). Values by hand. */
static void fold_order_by_hand(void **state) {
  (void)state;
  const char *src =
      "HloModule order\n"
      "f { a = s32[] parameter(0)\n b = s32[] parameter(1)\n t = s32[] constant(10)\n"
      "    m = s32[] multiply(a, t)\n ROOT r = s32[] add(m, b) }\n"
      "ENTRY e {\n  x = s32[4] parameter(0)\n"
      "  ROOT r = s32[4] all-reduce(x), replica_groups={{2,0,3},{1}}, to_apply=f\n}\n";
  ir_module *m = parse(src);
  arena *a = arena_create();
  ir_shape s4 = *m->comps.v[m->entry].insts.v[m->comps.v[m->entry].params[0]].shape;
  ir_literal *args[4], *got[4];
  for (int r = 0; r < 4; r++) {
    args[r] = ir_literal_create(a, &s4);
    got[r] = ir_literal_create(a, &s4);
    for (int i = 0; i < 4; i++) ir_literal_set_i64(args[r], i, r + 1);
  }
  cpu_options o;
  cpu_options_init(&o);
  o.replicas = 4;
  o.threads = 2;
  cpu_exe *x = NULL;
  char err[512];
  if (cpu_compile(m, &o, &x, err, sizeof err) != ST_OK) fail_msg("%s", err);
  if (cpu_execute_replicas(x, 4, args, 1, got, err, sizeof err) != ST_OK) fail_msg("%s", err);
  /* members 2, 0, 3 carry 3, 1, 4: chunk 0 folds members 1,2,0 = 1 4 3;
   * chunk 1: 2,0,1 = 4 3 1; chunk 2 (two elements): 0,1,2 = 3 1 4 */
  const int64_t want[4] = {143, 431, 314, 314};
  for (int r = 0; r < 4; r++)
    for (int i = 0; i < 4; i++)
      assert_int_equal(ir_literal_get_i64(got[r], i), r == 1 ? 2 : want[i]);
  cpu_exe_destroy(x);
  arena_destroy(a);
  ir_module_destroy(m);
}

/* Compiling src for nrep replicas fails with a located message holding want. */
static void compile_fails(const char *src, int nrep, const char *want) {
  ir_module *m = parse(src);
  cpu_options o;
  cpu_options_init(&o);
  o.replicas = nrep;
  cpu_exe *x = NULL;
  char err[512] = "";
  assert_int_not_equal(cpu_compile(m, &o, &x, err, sizeof err), ST_OK);
  assert_null(x);
  if (!strstr(err, "coll.hlo:") || !strstr(err, want)) fail_msg("got: %s", err);
  ir_module_destroy(m);
}

static void errors(void **state) {
  (void)state;
  const char *missing =
      "HloModule missing\n"
      "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT r = f32[] add(a, b) }\n"
      "ENTRY e {\n  x = f32[4] parameter(0)\n"
      "  ROOT r = f32[4] all-reduce(x), replica_groups={{0,5},{1,2},{3,4}}, to_apply=add\n}\n";
  compile_fails(missing, 4, "5");
  const char *counted = "HloModule counted, replica_count=8\n"
                        "ENTRY e {\n  x = f32[4] parameter(0)\n  ROOT r = f32[4] negate(x)\n}\n";
  compile_fails(counted, 4, "replica_count");
  /* an AOT object runs one replica */
  ir_module *m = parse(missing);
  cpu_options o;
  cpu_options_init(&o);
  o.replicas = 6;
  char err[512] = "";
  assert_int_equal(cpu_compile_aot(m, &o, "/nonexistent/x.o", NULL, err, sizeof err), ST_UNSUPPORTED);
  assert_non_null(strstr(err, "AOT"));
  ir_module_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fold_order_by_hand),
      cmocka_unit_test(random_collectives),
      cmocka_unit_test(errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
