/* test_ar_combine.c: the all-reduce combiner (passes/ar_combine.c).
 *
 * Random modules: 300 seeded modules of up to six all-reduces (tuple
 * operands, f32 and s32, add / multiply / maximum, two add computations
 * that are equal in structure, groups listed in a shuffled order or none,
 * all-reduces that read earlier ones' results) evaluated by the reference
 * evaluator as N replicas, each on its own random inputs, before and after
 * the pass at a random byte limit: every replica's results are bitwise
 * equal (the fold order is kept), the module verifies, no all-reduce with
 * several operands is left, and across the modules the pass did combine.
 * Then the decisions on small hand-written modules: dependent all-reduces
 * stay apart, the byte limit splits groups, an unknown group size and a
 * target with the combiner off leave the module alone, --explain says so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "frontend/frontend.h"
#include "passes/passes.h"

static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int pick(uint64_t *s, int n) { return (int)(next(s) % (uint64_t)n); }

static ir_module *parse(const char *text) {
  diag *d = diag_create();
  diag_add_source(d, "t.hlo", text, strlen(text));
  ir_module *m = fe_parse_hlo("t.hlo", text, strlen(text), d);
  if (!m || diag_error_count(d)) fprintf(stderr, "%s\n%s", diag_text(d), text);
  assert_true(m && diag_error_count(d) == 0);
  diag_destroy(d);
  return m;
}

/* Runs the combiner with limit bytes (0: off); the explain text (caller frees). */
static char *combine(ir_module *m, int64_t limit) {
  diag *d = diag_create();
  strbuf ex;
  sb_init(&ex);
  pass_target t;
  memset(&t, 0, sizeof t);
  t.all_reduce_combine_bytes = limit;
  pass_ctx ctx = {d, 2, true, &ex, &t};
  pass_ar_combine(m, &ctx);
  pass_dce(m, &ctx);
  assert_int_equal(ir_verify(m, d), 0);
  diag_destroy(d);
  return ex.s ? ex.s : strdup("");
}

/* The all-reduces of m's entry: how many, and how many with several operands. */
static int count_ar(const ir_module *m, int *multi) {
  const ir_comp *c = &m->comps.v[m->entry];
  int n = 0;
  *multi = 0;
  for (int i = 0; i < c->insts.n; i++)
    if (!c->insts.v[i].dead && c->insts.v[i].op == IR_OP_ALL_REDUCE) {
      n++;
      *multi += c->insts.v[i].nops > 1;
    }
  return n;
}

/* ---- random modules ------------------------------------------------------- */

typedef struct val {
  char name[16];
  int t; /* 0 f32, 1 s32 */
  char shape[40];
} val;

static const char *const tname[] = {"f32", "s32"};

static void random_shape(uint64_t *s, char *out, size_t n) {
  int r = pick(s, 4), len = snprintf(out, n, "[");
  for (int d = 0; d < r; d++)
    len += snprintf(out + len, n - (size_t)len, "%s%d", d ? "," : "", pick(s, 12) == 0 ? 0 : 1 + pick(s, 6));
  snprintf(out + len, n - (size_t)len, "]");
}

/* Replica groups of nrep: none, or a shuffled split into equal groups. */
static void random_groups(uint64_t *s, int nrep, char *out, size_t n) {
  int perm[8], sizes[4], ns = 0;
  for (int k = 1; k <= nrep; k++)
    if (nrep % k == 0) sizes[ns++] = k;
  int gs = sizes[pick(s, ns)], len = 0;
  if (pick(s, 3) == 0) {
    snprintf(out, n, "{}");
    return;
  }
  for (int i = 0; i < nrep; i++) perm[i] = i;
  for (int i = nrep - 1; i > 0; i--) {
    int j = pick(s, i + 1), t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  len += snprintf(out, n, "{");
  for (int i = 0; i < nrep; i++)
    len += snprintf(out + len, n - (size_t)len, "%s%s%d%s", i && i % gs == 0 ? "," : "", i % gs ? "," : "{",
                    perm[i], i % gs == gs - 1 ? "}" : "");
  snprintf(out + len, n - (size_t)len, "}");
}

static int random_module(uint64_t *s, strbuf *b) {
  static const int reps[] = {2, 3, 4, 6, 8};
  int nrep = reps[pick(s, 5)];
  char groups[2][128];
  random_groups(s, nrep, groups[0], sizeof groups[0]);
  random_groups(s, nrep, groups[1], sizeof groups[1]);
  sb_printf(b, "HloModule r, replica_count=%d\n\n", nrep);
  static const char *const comps[] = {"add_f32", "add2_f32", "mul_f32", "max_f32", "add_s32", "max_s32"};
  static const char *const ops[] = {"add", "add", "multiply", "maximum", "add", "maximum"};
  for (int k = 0; k < 6; k++)
    sb_printf(b, "%s {\n  x = %s[] parameter(0)\n  y = %s[] parameter(1)\n  ROOT r = %s[] %s(x, y)\n}\n\n",
              comps[k], tname[k >= 4], tname[k >= 4], tname[k >= 4], ops[k]);
  val pool[64];
  int np = 0;
  sb_puts(b, "ENTRY e {\n");
  for (int i = 0; i < 6; i++, np++) {
    pool[np].t = i % 2;
    snprintf(pool[np].name, sizeof pool[np].name, "p%d", i);
    random_shape(s, pool[np].shape, sizeof pool[np].shape);
    sb_printf(b, "  p%d = %s%s parameter(%d)\n", i, tname[pool[np].t], pool[np].shape, i);
  }
  int nar = 1 + pick(s, 6);
  char root[1024] = "";
  for (int a = 0; a < nar; a++) {
    int t = pick(s, 2), nops = 1 + (pick(s, 3) == 0) * (1 + pick(s, 2)), idx[3];
    for (int k = 0; k < nops; k++)
      do idx[k] = pick(s, np);
      while (pool[idx[k]].t != t);
    const char *comp = t ? comps[4 + pick(s, 2)] : comps[pick(s, 4)];
    sb_printf(b, "  a%d = ", a);
    if (nops > 1) sb_putc(b, '(');
    for (int k = 0; k < nops; k++) sb_printf(b, "%s%s%s", k ? ", " : "", tname[t], pool[idx[k]].shape);
    sb_printf(b, "%s all-reduce(", nops > 1 ? ")" : "");
    for (int k = 0; k < nops; k++) sb_printf(b, "%s%s", k ? ", " : "", pool[idx[k]].name);
    sb_printf(b, "), replica_groups=%s, to_apply=%s\n", groups[pick(s, 2)], comp);
    snprintf(root + strlen(root), sizeof root - strlen(root), "%sa%d", a ? ", " : "", a);
    for (int k = 0; k < nops && np < 60; k++) { /* later all-reduces may read this one */
      val *v = &pool[np++];
      *v = pool[idx[k]];
      if (nops > 1) {
        snprintf(v->name, sizeof v->name, "g%d_%d", a, k);
        sb_printf(b, "  %s = %s%s get-tuple-element(a%d), index=%d\n", v->name, tname[t], v->shape, a, k);
      } else {
        snprintf(v->name, sizeof v->name, "a%d", a);
      }
      if (pick(s, 2)) {
        sb_printf(b, "  n%d_%d = %s%s negate(%s)\n", a, k, tname[t], v->shape, v->name);
        snprintf(v->name, sizeof v->name, "n%d_%d", a, k);
      }
    }
  }
  sb_printf(b, "  ROOT t = tuple(%s)\n}\n", root);
  return nrep;
}

static void fill(ir_literal *l, uint64_t *s) {
  int64_t n = ir_shape_count(&l->shape);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = next(s);
    if (l->shape.type == IR_F32)
      ir_literal_set_f64(l, i, (double)(r >> 11) / (double)(1ull << 53) * 4.0 - 2.0);
    else
      ir_literal_set_i64(l, i, (int64_t)(r % 16) - 8);
  }
}

static void random_modules_keep_their_bits(void **state) {
  (void)state;
  uint64_t s = 16;
  int before_total = 0, after_total = 0;
  for (int iter = 0; iter < 300; iter++) {
    strbuf b;
    sb_init(&b);
    int nrep = random_module(&s, &b);
    ir_module *m0 = parse(b.s), *m1 = parse(b.s);
    static const int64_t limits[] = {16, 256, (int64_t)1 << 20};
    int64_t limit = limits[pick(&s, 3)];
    free(combine(m1, limit));
    int multi, n0 = count_ar(m0, &multi), n1 = count_ar(m1, &multi);
    before_total += n0;
    after_total += n1;
    if (multi) fprintf(stderr, "%s", b.s);
    assert_int_equal(multi, 0);
    assert_true(n1 <= n0);
    arena *a = arena_create();
    const ir_comp *e = &m0->comps.v[m0->entry];
    ir_literal ***args = arena_array(a, (size_t)nrep, sizeof *args);
    for (int r = 0; r < nrep; r++) {
      args[r] = arena_array(a, (size_t)e->nparams, sizeof **args);
      for (int k = 0; k < e->nparams; k++) {
        args[r][k] = ir_literal_create(a, e->insts.v[e->params[k]].shape);
        fill(args[r][k], &s);
      }
    }
    ir_eval_options o;
    ir_eval_options_init(&o);
    ir_literal **out0 = arena_array(a, (size_t)nrep, sizeof *out0);
    ir_literal **out1 = arena_array(a, (size_t)nrep, sizeof *out1);
    char err[256];
    assert_int_equal(ir_eval_replicated(m0, &o, nrep, (ir_literal *const *const *)args, e->nparams, a,
                                        out0, err, sizeof err), ST_OK);
    assert_int_equal(ir_eval_replicated(m1, &o, nrep, (ir_literal *const *const *)args, e->nparams, a,
                                        out1, err, sizeof err), ST_OK);
    for (int r = 0; r < nrep; r++) {
      if (!ir_literal_equal(out0[r], out1[r])) fprintf(stderr, "module %d, replica %d:\n%s", iter, r, b.s);
      assert_true(ir_literal_equal(out0[r], out1[r]));
    }
    arena_destroy(a);
    ir_module_destroy(m0);
    ir_module_destroy(m1);
    sb_free(&b);
  }
  fprintf(stderr, "%d all-reduces became %d\n", before_total, after_total);
  assert_true(after_total < before_total);
}

/* ---- decisions ------------------------------------------------------------ */

static const char head[] =
    "HloModule h%s\n\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
    "  ROOT s = f32[] add(x, y)\n}\n\nENTRY e {\n  p0 = f32[100] parameter(0)\n"
    "  p1 = f32[100] parameter(1)\n  p2 = f32[100] parameter(2)\n";

static ir_module *module(const char *header, const char *body) {
  strbuf b;
  sb_init(&b);
  sb_printf(&b, head, header);
  sb_puts(&b, body);
  ir_module *m = parse(b.s);
  sb_free(&b);
  return m;
}

static const char three[] =
    "  a0 = f32[100] all-reduce(p0), to_apply=add\n  a1 = f32[100] all-reduce(p1), to_apply=add\n"
    "  a2 = f32[100] all-reduce(p2), to_apply=add\n  ROOT t = tuple(a0, a1, a2)\n}\n";

static void byte_limit_splits(void **state) {
  (void)state;
  ir_module *m = module(", replica_count=4", three);
  char *ex = combine(m, 800); /* two of 400 bytes fit, not three */
  int multi;
  assert_int_equal(count_ar(m, &multi), 2);
  assert_non_null(strstr(ex, "combined %a0 (f32[100]), %a1 (f32[100]): 200 elements in one all-reduce "
                             "over groups of 4 (chunk-major, 0 of them padding"));
  assert_non_null(strstr(ex, "all-reduce-combiner: -: 2 all-reduces (2 operands) became 1\n"));
  free(ex);
  ir_module_destroy(m);
  m = module(", replica_count=4", three);
  free(combine(m, 1200));
  assert_int_equal(count_ar(m, &multi), 1);
  ir_module_destroy(m);
}

static void dependent_stay_apart(void **state) {
  (void)state;
  ir_module *m = module(", replica_count=3",
                        "  a0 = f32[100] all-reduce(p0), to_apply=add\n  n = f32[100] negate(a0)\n"
                        "  a1 = f32[100] all-reduce(n), to_apply=add\n"
                        "  a2 = f32[100] all-reduce(p2), to_apply=add\n  ROOT t = tuple(a0, a1, a2)\n}\n");
  char *ex = combine(m, 1 << 20);
  int multi;
  assert_int_equal(count_ar(m, &multi), 2); /* a0 with a2; a1 reads a0 */
  assert_non_null(strstr(ex, "combined %a0 (f32[100]), %a2 (f32[100]): 204 elements in one "
                             "all-reduce over groups of 3 (chunk-major, 4 of them padding"));
  free(ex);
  ir_module_destroy(m);
}

static void unknown_group_size_or_off(void **state) {
  (void)state;
  ir_module *m = module("", three); /* no replica_count, no groups */
  char *ex = combine(m, 1 << 20);
  int multi;
  assert_int_equal(count_ar(m, &multi), 3);
  assert_non_null(strstr(ex, "all-reduce-combiner: a0: left alone: no replica_groups and no "
                             "replica_count: the group size, which fixes the fold order, is unknown\n"));
  free(ex);
  ir_module_destroy(m);
  m = module(", replica_count=2", three);
  ex = combine(m, 0); /* the combiner is off (a target that does not ask for it) */
  assert_int_equal(count_ar(m, &multi), 3);
  assert_string_equal(ex, "");
  free(ex);
  ir_module_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_modules_keep_their_bits),
      cmocka_unit_test(byte_limit_splits),
      cmocka_unit_test(dependent_stay_apart),
      cmocka_unit_test(unknown_group_size_or_off),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
