/* diff_coll_targets.c: every collective on interp, cpu and the TPU, bit
 * for bit. Random modules (seeded; a failure prints the seed and the
 * module) of each generator of the table below, with random replica
 * counts 1..8, groups in list, iota and empty form, shapes, element types
 * and reduction computations (add, multiply, maximum, minimum and the
 * non-commutative subtract and 2a + b), run as N replicas by the
 * evaluator (ir_eval_replicated, the oracle), by the cpu (cpu_compile
 * with replicas = N, cpu_execute_replicas; strict numerics) and by the
 * emulated v3-8 board with N cores (one replica each; ncores=N below 8),
 * the TPU's module through the -O2 pipeline on odd trials. No dots, so
 * every result is exact and the order of base/coll.h decides every bit.
 * Values are small (floats on a 1/16 grid) so that no product of eight
 * overflows. Dimensions are 1..5, the last one up to 300 in a quarter of
 * the modules. Then fixed cases of every move on the v2-8 board and on a
 * v3-32 pod (32 replicas).
 *
 * A generator whose op the TPU does not run yet (ir_coll_target_runs) is
 * checked on the TPU for its located refusal instead; a row may also name
 * the refusal its form gets (tpu_refusal) while the lowering lacks it. A
 * TPU that runs either must agree with the evaluator like any other row,
 * so rows need no change when the lowering grows.
 *
 *   diff_coll_targets [TRIALS [SEED]] [--emit=DIR]
 *                                   TRIALS per generator (default 10);
 *                                   --emit also writes every case to DIR */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/tpu/tpu.h"
#include "frontend/frontend.h"
#include "tests/common/testgen.h"
#include "tests/diff/diff_run.h"

#define TPU_BOARD "v3-8"

static int failures;
static int ran_cpu, ran_tpu, refused_tpu; /* what the summary line reports */
static const char *emit_dir;               /* --emit=DIR, else NULL */

/* A draw in [0, n) from the splitmix64 stream *r. */
static uint32_t draw(uint64_t *r, uint32_t n) { return (uint32_t)(tc_splitmix(r) % n); }

typedef struct text {
  char s[8192];
  size_t n;
} text;

static void put(text *t, const char *fmt, ...) BASE_PRINTF(2, 3);
static void put(text *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(t->s + t->n, sizeof t->s - t->n, fmt, ap);
  va_end(ap);
  if (k < 0 || (size_t)k >= sizeof t->s - t->n) {
    fprintf(stderr, "diff_coll_targets: module text too long\n");
    exit(2);
  }
  t->n += (size_t)k;
}

/* ---- the generators ------------------------------------------------- */

/* What a generator writes with: the module so far, the draw, the replica
 * count, the group size g (a divisor of nrep), the element type, the
 * operand shape and a dimension d of it. */
typedef struct gctx {
  text *t;
  uint64_t *r;
  int nrep, g;
  const char *ty;
  int rank, d;
  int64_t dims[3];
  char shape[64]; /* "ty[dims]" */
} gctx;

/* "ty[dims]" with dimension k multiplied by mul and divided by div. */
static void shape_of(const gctx *c, int k, int64_t mul, int64_t div, char *out, size_t n) {
  size_t at = (size_t)snprintf(out, n, "%s[", c->ty);
  for (int i = 0; i < c->rank; i++)
    at += (size_t)snprintf(out + at, n - at, "%s%lld", i ? "," : "",
                           (long long)(i == k ? c->dims[i] * mul / div : c->dims[i]));
  snprintf(out + at, n - at, "]");
}

/* replica_groups of size g: empty (when g == nrep), iota or a shuffled list. */
static void groups(gctx *c) {
  int n = c->nrep, g = c->g, form = (int)draw(c->r, 3);
  if (g == n && form == 0) {
    put(c->t, "replica_groups={}");
    return;
  }
  if (form == 1) {
    if (draw(c->r, 2)) put(c->t, "replica_groups=[%d,%d]<=[%d]", n / g, g, n);
    else put(c->t, "replica_groups=[%d,%d]<=[%d,%d]T(1,0)", n / g, g, g, n / g);
    return;
  }
  int perm[8];
  for (int i = 0; i < n; i++) perm[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)draw(c->r, (uint32_t)i + 1), x = perm[i];
    perm[i] = perm[j], perm[j] = x;
  }
  put(c->t, "replica_groups={");
  for (int k = 0; k < n / g; k++) {
    put(c->t, "%s{", k ? "," : "");
    for (int j = 0; j < g; j++) put(c->t, "%s%d", j ? "," : "", perm[k * g + j]);
    put(c->t, "}");
  }
  put(c->t, "}");
}

/* "x0, x1, ..., x(n-1)" */
static void operands(gctx *c, int n) {
  for (int p = 0; p < n; p++) put(c->t, "%sx%d", p ? ", " : "", p);
}

/* "(s, s, ...)" of n copies of s */
static void tuple_of(gctx *c, const char *s, int n) {
  put(c->t, "(");
  for (int p = 0; p < n; p++) put(c->t, "%s%s", p ? ", " : "", s);
  put(c->t, ")");
}

/* "  ROOT c = RESULT op(x0, ...), " of n operands of the operand shape:
 * the result a tuple of n of them, or the shape itself when n is 1 and
 * not tuple. */
static void root_of(gctx *c, int n, bool tuple, const char *op) {
  put(c->t, "  ROOT c = ");
  if (n == 1 && !tuple) put(c->t, "%s", c->shape);
  else tuple_of(c, c->shape, n);
  put(c->t, " %s(", op);
  operands(c, n);
  put(c->t, "), ");
}

static void gen_all_reduce(gctx *c) {
  put(c->t, "  ROOT c = %s all-reduce(x0), ", c->shape);
  groups(c);
  put(c->t, ", to_apply=f\n");
}

static void gen_all_reduce_tuple(gctx *c) {
  root_of(c, 2, true, "all-reduce");
  groups(c);
  put(c->t, ", to_apply=f\n");
}

static void gen_reduce_scatter(gctx *c) {
  char rs[64];
  shape_of(c, c->d, 1, c->g, rs, sizeof rs);
  put(c->t, "  ROOT c = %s reduce-scatter(x0), ", rs);
  groups(c);
  put(c->t, ", dimensions={%d}, to_apply=f\n", c->d);
}

static void gen_all_gather(gctx *c) {
  char rs[64];
  shape_of(c, c->d, c->g, 1, rs, sizeof rs);
  put(c->t, "  ROOT c = %s all-gather(x0), ", rs);
  groups(c);
  put(c->t, ", dimensions={%d}\n", c->d);
}

static void gen_all_to_all(gctx *c) {
  put(c->t, "  ROOT c = %s all-to-all(x0), ", c->shape);
  groups(c);
  put(c->t, ", dimensions={%d}\n", c->d);
}

static void gen_all_to_all_tuple(gctx *c) {
  root_of(c, c->g, true, "all-to-all");
  groups(c);
  put(c->t, "\n");
}

/* source_target_pairs of a random partial permutation, self pairs
 * included. */
static void pairs(gctx *c) {
  int perm[8];
  put(c->t, "source_target_pairs={");
  for (int i = 0; i < c->nrep; i++) perm[i] = i;
  for (int i = c->nrep - 1; i > 0; i--) {
    int j = (int)draw(c->r, (uint32_t)i + 1), x = perm[i];
    perm[i] = perm[j], perm[j] = x;
  }
  int written = 0;
  for (int i = 0; i < c->nrep; i++)
    if (draw(c->r, 4)) put(c->t, "%s{%d,%d}", written++ ? "," : "", i, perm[i]);
  put(c->t, "}");
}

/* A random partial permutation of one or two operands. */
static void gen_permute(gctx *c) {
  root_of(c, 1 + (int)draw(c->r, 2), false, "collective-permute");
  pairs(c);
  put(c->t, "\n");
}

static void gen_broadcast(gctx *c) {
  root_of(c, 1 + (int)draw(c->r, 2), false, "collective-broadcast");
  groups(c);
  put(c->t, "\n");
}

/* The -start/-done forms: the done at the root, or (one time in two) the
 * done and the whole start tuple. */
static void gen_all_reduce_start(gctx *c) {
  put(c->t, "  s = %s all-reduce-start(x0), ", c->shape);
  groups(c);
  put(c->t, ", to_apply=f\n  ROOT c = %s all-reduce-done(s)\n", c->shape);
}

static void gen_all_gather_start(gctx *c) {
  char rs[64];
  shape_of(c, c->d, c->g, 1, rs, sizeof rs);
  put(c->t, "  s = (%s, %s) all-gather-start(x0), ", c->shape, rs);
  groups(c);
  put(c->t, ", dimensions={%d}\n", c->d);
  if (draw(c->r, 2))
    put(c->t, "  d = %s all-gather-done(s)\n  ROOT c = (%s, (%s, %s)) tuple(d, s)\n", rs, rs,
        c->shape, rs);
  else put(c->t, "  ROOT c = %s all-gather-done(s)\n", rs);
}

static void gen_permute_start(gctx *c) {
  put(c->t, "  s = (%s, %s, u32[], u32[]) collective-permute-start(x0), ", c->shape, c->shape);
  pairs(c);
  put(c->t, "\n");
  if (draw(c->r, 2))
    put(c->t, "  d = %s collective-permute-done(s)\n"
              "  ROOT c = (%s, (%s, %s, u32[], u32[])) tuple(d, s)\n", c->shape, c->shape, c->shape, c->shape);
  else put(c->t, "  ROOT c = %s collective-permute-done(s)\n", c->shape);
}

/* replica-id and partition-id as results, converted, and added to x0. */
static void gen_ids(gctx *c) {
  char f32s[64];
  gctx fc = *c;
  fc.ty = "f32";
  shape_of(&fc, -1, 1, 1, f32s, sizeof f32s);
  put(c->t, "  rid = u32[] replica-id()\n  pid = u32[] partition-id()\n"
            "  ri = s32[] convert(rid)\n  rf = f32[] convert(rid)\n  pf = f32[] convert(pid)\n"
            "  s = f32[] add(rf, pf)\n  sb = %s broadcast(s), dimensions={}\n"
            "  xf = %s convert(x0)\n  y = %s add(xf, sb)\n"
            "  ROOT c = (u32[], u32[], s32[], %s) tuple(rid, pid, ri, y)\n",
      f32s, f32s, f32s, f32s);
}

/* Whether the TPU runs the reduce-scatter or all-gather (-start) at the
 * root of m (or under it, a start under its done) over nrep replicas: the documented subset of docs/tpu-backend.md
 * ("Reduce-scatter and all-gather"): every replica in order, along a
 * dimension with only size-1 dimensions before it, at least one element
 * per replica of the whole value. Outside it the row expects the TPU's
 * located refusal. */
static bool tpu_runs_halves(const ir_module *m, int nrep) {
  const ir_comp *e = &m->comps.v[m->entry];
  const ir_inst *in = &e->insts.v[e->root];
  if (nrep < 2) return true;
  while (in->op != IR_OP_REDUCE_SCATTER && in->op != IR_OP_ALL_GATHER &&
         in->op != IR_OP_ALL_GATHER_START)
    in = &e->insts.v[in->ops[0]]; /* the start under its done (and a tuple) */
  const ir_shape *whole = in->op == IR_OP_REDUCE_SCATTER ? e->insts.v[in->ops[0]].shape
                          : in->op == IR_OP_ALL_GATHER_START ? &in->shape->tuple[1]
                                                             : in->shape;
  int64_t d = in->a->dimensions.v[0], before = 1;
  for (int64_t j = 0; j < d; j++) before *= whole->dims[j];
  const ir_replica_groups *rg = &in->a->replica_groups;
  bool in_order = rg->ngroups == 0 || (rg->ngroups == 1 && rg->groups[0].n == nrep);
  for (int j = 0; in_order && rg->ngroups == 1 && j < nrep; j++)
    in_order = rg->groups[0].v[j] == j;
  return before == 1 && in_order && ir_shape_count(whole) >= nrep;
}

typedef struct coll_gen {
  const char *name;
  ir_op op;                 /* asked of ir_coll_target_runs */
  void (*make)(gctx *c);
  int nparams;              /* operands x0.. it reads: 0 = the group size */
  bool reduces;             /* its element types can be added */
  bool reshard;             /* dimension d must divide into the group */
  const char *tpu_refusal;  /* NULL, or the TPU's refusal while its lowering lacks this form */
  int min_group;            /* groups of fewer members are not drawn (nrep > 1) */
  bool (*tpu_runs)(const ir_module *m, int nrep); /* NULL, or the subset the TPU runs */
} coll_gen;

/* The table: a row per form. */
static const coll_gen gens[] = {
    {"all-reduce", IR_OP_ALL_REDUCE, gen_all_reduce, 1, true, false, NULL, 1, NULL},
    {"all-reduce (tuple)", IR_OP_ALL_REDUCE, gen_all_reduce_tuple, 2, true, false, "reduces one array", 1, NULL},
    {"reduce-scatter", IR_OP_REDUCE_SCATTER, gen_reduce_scatter, 1, true, true, NULL, 1,
     tpu_runs_halves},
    {"all-gather", IR_OP_ALL_GATHER, gen_all_gather, 1, false, false, NULL, 1, tpu_runs_halves},
    {"all-to-all", IR_OP_ALL_TO_ALL, gen_all_to_all, 1, false, true, NULL, 1, NULL},
    {"all-to-all (tuple)", IR_OP_ALL_TO_ALL, gen_all_to_all_tuple, 0, false, false, NULL, 1, NULL},
    {"collective-permute", IR_OP_COLLECTIVE_PERMUTE, gen_permute, 2, false, false, NULL, 1, NULL},
    {"collective-broadcast", IR_OP_COLLECTIVE_BROADCAST, gen_broadcast, 2, false, false, NULL, 1, NULL},
    {"replica-id", IR_OP_REPLICA_ID, gen_ids, 1, false, false, NULL, 1, NULL},
    {"all-reduce-start/-done", IR_OP_ALL_REDUCE_START, gen_all_reduce_start, 1, true, false, NULL, 1,
     NULL},
    {"all-gather-start/-done", IR_OP_ALL_GATHER_START, gen_all_gather_start, 1, false, false, NULL,
     1, tpu_runs_halves},
    {"collective-permute-start/-done", IR_OP_COLLECTIVE_PERMUTE_START, gen_permute_start, 1, false,
     false, NULL, 1, NULL},
};
enum { NGENS = sizeof gens / sizeof gens[0] };

/* Element types the three targets share; the first three reduce. */
static const char *const types[] = {"f32", "s32", "bf16", "s8", "pred"};
static const char *const reductions[] = {"add(a, b)", "multiply(a, b)", "maximum(a, b)",
                                         "minimum(a, b)", "subtract(a, b)", "add(m, b)"};

/* A random module of generator k for nrep replicas; its parameter count. */
static int random_module(text *t, uint64_t *r, int nrep, int k) {
  const coll_gen *gn = &gens[k];
  gctx c = {t, r, nrep, nrep, NULL, 1 + (int)draw(r, 3), 0, {1, 1, 1}, ""};
  c.ty = types[draw(r, gn->reduces ? 3 : 5)];
  for (int i = 0; i < c.rank; i++) c.dims[i] = 1 + draw(r, 5);
  if (!draw(r, 4)) c.dims[c.rank - 1] = 1 + draw(r, 300); /* several tiles and granules */
  c.d = (int)draw(r, (uint32_t)c.rank);
  for (int i = 0; i < 3; i++) { /* a divisor of nrep */
    int g = 1 + (int)draw(r, (uint32_t)nrep);
    if (nrep % g == 0 && g >= gn->min_group) c.g = g;
  }
  if (gn->reshard) c.dims[c.d] *= c.g;
  shape_of(&c, -1, 1, 1, c.shape, sizeof c.shape);
  if (draw(r, 2)) put(t, "HloModule coll, replica_count=%d\n", nrep);
  else put(t, "HloModule coll\n");
  if (gn->reduces)
    put(t, "f {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n  two = %s[] constant(2)\n"
           "  m = %s[] multiply(a, two)\n  ROOT r = %s[] %s\n}\n",
        c.ty, c.ty, c.ty, c.ty, c.ty, reductions[draw(r, 6)]);
  put(t, "ENTRY e {\n");
  int np = gn->nparams ? gn->nparams : c.g;
  bool pred = !strcmp(c.ty, "pred");
  for (int p = 0; p < np; p++)
    put(t, "  p%d = %s parameter(%d)\n  x%d = %s %s(p%d)\n", p, c.shape, p, p, c.shape,
        pred ? "not" : "negate", p);
  gn->make(&c);
  put(t, "}\n");
  return np;
}

/* ---- running -------------------------------------------------------- */

/* Deterministic small values for l: floats on a grid exact in bf16. */
static void fill(ir_literal *l, uint64_t *r) {
  int64_t n = ir_shape_count(&l->shape);
  for (int64_t i = 0; i < n; i++) {
    switch (l->shape.type) {
    case IR_F32: ir_literal_set_f64(l, i, ((double)draw(r, 129) - 64.0) / 16.0); break;
    case IR_BF16: ir_literal_set_f64(l, i, ((double)draw(r, 33) - 16.0) / 4.0); break;
    case IR_S32: ir_literal_set_i64(l, i, (int64_t)draw(r, 2001) - 1000); break;
    case IR_S8: ir_literal_set_i64(l, i, (int64_t)draw(r, 201) - 100); break;
    default: ir_literal_set_i64(l, i, draw(r, 2)); break;
    }
  }
}

/* Whether a and b are the same shape and bits; the first difference into why. */
static bool same(const ir_literal *a, const ir_literal *b, char *why, size_t n) {
  if (!ir_shape_equal(&a->shape, &b->shape)) {
    snprintf(why, n, "shapes differ");
    return false;
  }
  if (a->shape.type == IR_TUPLE) {
    for (int i = 0; i < a->shape.ntuple; i++)
      if (!same(a->elems[i], b->elems[i], why, n)) return false;
    return true;
  }
  int64_t cnt = ir_shape_count(&a->shape);
  size_t es = cnt ? a->nbytes / (size_t)cnt : 1;
  for (int64_t i = 0; i < cnt; i++)
    if (memcmp((const char *)a->data + (size_t)i * es, (const char *)b->data + (size_t)i * es, es)) {
      snprintf(why, n, "element %lld: %g, want %g", (long long)i, ir_literal_get_f64(b, i),
               ir_literal_get_f64(a, i));
      return false;
    }
  return true;
}

static ir_module *parse(const char *src) {
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("coll.hlo", src, strlen(src), d);
  if (!m) fprintf(stderr, "parse: %s\n%s", diag_text(d), src);
  diag_destroy(d);
  return m;
}

/* One case's inputs and the evaluator's results. */
typedef struct run {
  const ir_module *m;
  int nrep, np;
  ir_literal *const **per; /* per[r][p] */
  ir_literal **want;
  arena *a;
} run;

static void fail(const char *what, const char *name, uint64_t seed, const char *msg, const char *src) {
  fprintf(stderr, "FAIL %s: %s (seed %llu): %s\n%s\n", what, name, (unsigned long long)seed, msg, src);
  failures++;
}

static void compare(const run *u, ir_literal **got, const char *target, const char *name,
                    uint64_t seed, const char *src) {
  for (int r = 0; r < u->nrep; r++) {
    char why[200], msg[300];
    if (same(u->want[r], got[r], why, sizeof why)) continue;
    snprintf(msg, sizeof msg, "replica %d of %d differs from the evaluator: %s", r, u->nrep, why);
    fail(target, name, seed, msg, src);
    return;
  }
}

#ifdef HAVE_LLVM
static void run_cpu(const run *u, const char *name, uint64_t seed, const char *src) {
  cpu_options o;
  cpu_options_init(&o);
  o.numerics = CPU_NUMERICS_STRICT;
  o.threads = 1;
  o.replicas = u->nrep;
  cpu_exe *x = NULL;
  char err[1024];
  if (cpu_compile(u->m, &o, &x, err, sizeof err) != ST_OK) {
    fail("cpu", name, seed, err, src);
    return;
  }
  ir_literal **got = arena_array(u->a, (size_t)u->nrep, sizeof *got);
  ir_literal **args = arena_array(u->a, (size_t)(u->nrep * u->np) + 1, sizeof *args);
  for (int r = 0; r < u->nrep; r++) {
    got[r] = ir_literal_create(u->a, &u->want[r]->shape);
    for (int p = 0; p < u->np; p++) args[r * u->np + p] = u->per[r][p];
  }
  base_status st = u->nrep == 1 ? cpu_execute_to(x, args, u->np, got[0], err, sizeof err)
                                : cpu_execute_replicas(x, u->nrep, args, u->np, got, err, sizeof err);
  if (st != ST_OK) fail("cpu", name, seed, err, src);
  else compare(u, got, "cpu", name, seed, src);
  ran_cpu++;
  cpu_exe_destroy(x);
}
#endif

/* Compiles m for target (at -O opt) and runs it as u->nrep replicas. A
 * refusal containing `refusal` (when not NULL) is what the row expects. */
static void run_tpu(const run *u, const char *target, int opt, const char *refusal,
                    const char *name, uint64_t seed, const char *src) {
  char err[1024];
  ir_module *om = diff_optimise(u->m, opt, NULL, err, sizeof err);
  if (!om) {
    fail(target, name, seed, err, src);
    return;
  }
  tpu_options o;
  tpu_options_init(&o);
  o.target = target;
  o.replicas = u->nrep;
  diag *d = diag_create();
  tpub_image *img = NULL;
  if (tpu_compile(om, &o, d, &img, NULL) != ST_OK) {
    const char *msg = diag_text(d);
    /* a located refusal: "coll.hlo:LINE:COL: error: ..." */
    bool located = strstr(msg, "coll.hlo:") && strstr(msg, ": error: ");
    if (!refusal || !located || !strstr(msg, refusal)) fail(target, name, seed, msg, src);
    refused_tpu++;
  } else if (refusal && !strcmp(refusal, "is not supported by the")) {
    fail(target, name, seed, "compiled an op that ir_coll_target_runs says the TPU does not run", src);
  } else {
    ir_literal **got = arena_array(u->a, (size_t)u->nrep, sizeof *got);
    if (tpu_execute_replicas(img, target, om, u->nrep, u->per, u->np, u->a, got, err, sizeof err) !=
        ST_OK)
      fail(target, name, seed, err, src);
    else
      compare(u, got, target, name, seed, src);
    ran_tpu++;
  }
  tpub_free(img);
  diag_destroy(d);
  ir_module_destroy(om);
}

/* --emit=DIR: each case the evaluator ran is also written to DIR for
 * `tpucc run` (tests/mpi/mpi_cov.py reads them), without changing what is
 * checked: cNNN.hlo (src), cNNN_pP.bin per parameter (raw, as the --input
 * form SPEC=@FILE reads: the inputs of every replica, stacked along a
 * leading dimension nrep when nrep > 1) and a line of DIR/cases.tsv:
 *   cNNN TAB GENERATOR TAB NREP TAB TPU-TARGET TAB EXPECT TAB INPUTS
 * EXPECT is "-" when the TPU runs the case, else the text of the located
 * refusal the TPU may give instead (a TPU that runs it must still give
 * the evaluator's results); INPUTS is one --input=SPEC=@cNNN_pP.bin per
 * parameter, separated by spaces. */
static void emit_case(const char *src, const char *gen, int nrep, int np, ir_literal *const **per,
                      const char *target, const char *refusal) {
  static int emitted;
  char path[4096], err[512];
  arena *a = arena_create();
  strbuf line;
  sb_init(&line);
  sb_printf(&line, "c%03d\t%s\t%d\t%s\t%s\t", emitted, gen, nrep, target, refusal ? refusal : "-");
  snprintf(path, sizeof path, "%s/c%03d.hlo", emit_dir, emitted);
  base_status st = ir_file_write(path, src, strlen(src), err, sizeof err);
  for (int p = 0; st == ST_OK && p < np; p++) {
    const ir_shape *s = &per[0][p]->shape;
    int64_t dims[IR_MAX_RANK + 1] = {nrep};
    memcpy(dims + 1, s->dims, (size_t)s->rank * sizeof *dims);
    ir_shape ss = nrep > 1 ? ir_shape_array(s->type, s->rank + 1, dims) : *s;
    ir_literal *l = ir_literal_create(a, &ss);
    for (int r = 0; r < nrep; r++)
      memcpy((char *)l->data + (size_t)r * per[r][p]->nbytes, per[r][p]->data, per[r][p]->nbytes);
    snprintf(path, sizeof path, "%s/c%03d_p%d.bin", emit_dir, emitted, p);
    st = ir_tensor_write_file(path, l, err, sizeof err);
    sb_printf(&line, "%s--input=", p ? " " : "");
    ir_tensor_print_spec(&line, &ss);
    sb_printf(&line, "=@c%03d_p%d.bin", emitted, p);
  }
  sb_putc(&line, '\n');
  snprintf(path, sizeof path, "%s/cases.tsv", emit_dir);
  FILE *f = st == ST_OK ? fopen(path, emitted ? "a" : "w") : NULL;
  if (st == ST_OK && (!f || fputs(line.s, f) < 0))
    st = base_fail(err, sizeof err, ST_IO_ERROR, "%s: cannot write", path);
  if (f && fclose(f)) st = base_fail(err, sizeof err, ST_IO_ERROR, "%s: cannot write", path);
  sb_free(&line);
  arena_destroy(a);
  if (st != ST_OK) {
    fprintf(stderr, "diff_coll_targets: --emit: %s\n", err);
    exit(2);
  }
  emitted++;
}

/* src on the evaluator, then the cpu (when built) and the TPU target
 * (NULL: the v3-8 board with nrep cores), all bit for bit. */
static void check(const char *src, const coll_gen *gn, int nrep, int np, uint64_t seed,
                  const char *target, int opt) {
  ir_module *m = parse(src);
  if (!m) {
    fail("parse", gn->name, seed, "the generator wrote a module that does not parse", src);
    return;
  }
  run u = {m, nrep, np, NULL, NULL, arena_create()};
  uint64_t vr = seed * 0x9E3779B97F4A7C15ull + 1;
  ir_literal *const **per = arena_array(u.a, (size_t)nrep, sizeof *per);
  const ir_comp *ec = &m->comps.v[m->entry];
  for (int r = 0; r < nrep; r++) {
    ir_literal **row = arena_array(u.a, (size_t)np + 1, sizeof *row);
    for (int p = 0; p < np; p++) {
      row[p] = ir_literal_create(u.a, ec->insts.v[ec->params[p]].shape);
      fill(row[p], &vr);
    }
    per[r] = row;
  }
  u.per = per;
  u.want = arena_array(u.a, (size_t)nrep, sizeof *u.want);
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  char err[1024];
  if (ir_eval_replicated(m, &eo, nrep, per, np, u.a, u.want, err, sizeof err) != ST_OK) {
    fail("interp", gn->name, seed, err, src);
  } else {
#ifdef HAVE_LLVM
    if (!target) run_cpu(&u, gn->name, seed, src);
#endif
    char board[64];
    if (!target) {
      snprintf(board, sizeof board, nrep == 8 ? "%s" : "%s,ncores=%d", TPU_BOARD, nrep);
      target = board;
    }
    const char *refusal = !ir_coll_target_runs(gn->op, target) ? "is not supported by the"
                          : gn->tpu_runs && !gn->tpu_runs(m, nrep)
                              ? "runs it over every replica in order"
                              : gn->tpu_refusal;
    if (emit_dir) emit_case(src, gn->name, nrep, np, per, target, refusal);
    run_tpu(&u, target, opt, refusal, gn->name, seed, src);
  }
  arena_destroy(u.a);
  ir_module_destroy(m);
}

/* Fixed cases of every move on the v2-8 board and the v3-32 pod. */
static const char *const pod_cases[] = {
    "HloModule pod, replica_count=32\n"
    "ENTRY e {\n  p0 = s32[2,64] parameter(0)\n  p1 = bf16[3] parameter(1)\n"
    "  x0 = s32[2,64] negate(p0)\n  x1 = bf16[3] negate(p1)\n"
    "  a = s32[2,64] all-to-all(x0), replica_groups=[4,8]<=[8,4]T(1,0), dimensions={1}\n"
    "  p = (s32[2,64], bf16[3]) collective-permute(x0, x1), "
    "source_target_pairs={{0,31},{31,0},{5,6},{6,5},{12,20},{7,7}}\n"
    "  b = bf16[3] collective-broadcast(x1), replica_groups=[2,16]<=[32]\n"
    "  rid = u32[] replica-id()\n"
    "  ROOT t = (s32[2,64], (s32[2,64], bf16[3]), bf16[3], u32[]) tuple(a, p, b, rid)\n}\n",
};

static void fixed_cases(void) {
  for (int k = 0; k < NGENS; k++) { /* v2-8: one module per generator at 8 replicas */
    text t = {.n = 0};
    uint64_t r = 0x51ed2701ull + (uint64_t)k;
    int np = random_module(&t, &r, 8, k);
    check(t.s, &gens[k], 8, np, 1000u + (uint64_t)k, "v2-8", 0);
  }
  static const coll_gen pod = {"v3-32 pod", IR_OP_ALL_TO_ALL, NULL, 2, false, false, NULL, 1, NULL};
  for (size_t i = 0; i < sizeof pod_cases / sizeof *pod_cases; i++)
    check(pod_cases[i], &pod, 32, 2, 7 + i, "v3-32", 2);
  /* One replica: the TPU copies an all-gather along any dimension, and
   * one whose group lists a single member among several. */
  check("HloModule one\nENTRY e {\n  p0 = f32[5,4] parameter(0)\n"
        "  ROOT c = f32[5,4] all-gather(p0), replica_groups={{0}}, dimensions={1}\n}\n",
        &gens[3], 1, 1, 11, "v3-8,ncores=1", 0);
  check("HloModule solo, replica_count=5\nadd {\n  a = f32[] parameter(0)\n"
        "  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n"
        "  p0 = f32[4] parameter(0)\n"
        "  ROOT r = f32[4] all-reduce(p0), replica_groups=[5,1]<=[5], to_apply=add\n}\n",
        &gens[0], 5, 1, 12, "v3-8,ncores=5", 0);
}

/* A run of mismatched_shapes failed with a message naming replica 1 and
 * both shapes. */
static void refused(const char *target, base_status st, const char *err) {
  if (st == ST_OK || !strstr(err, "replica 1") || !strstr(err, "f32[3]") || !strstr(err, "f32[4]"))
    fail(target, "mismatched shapes", 0, st == ST_OK ? "ran" : err, "");
}

/* Per-replica arguments of different shapes (possible through the C
 * entry points, which take one argument list per replica): every target
 * refuses the run with an error naming the replica and the parameter,
 * before any replica runs. */
static void mismatched_shapes(void) {
  static const char src[] = "HloModule mm\nENTRY e {\n  x = f32[4] parameter(0)\n"
                            "  ROOT p = f32[4] collective-permute(x), source_target_pairs={{0,1},{1,0}}\n}\n";
  ir_module *m = parse(src);
  arena *a = arena_create();
  int64_t four = 4, three = 3;
  ir_shape s4 = ir_shape_array(IR_F32, 1, &four), s3 = ir_shape_array(IR_F32, 1, &three);
  ir_literal *args[2] = {ir_literal_create(a, &s4), ir_literal_create(a, &s3)};
  ir_literal *const row0[1] = {args[0]}, *const row1[1] = {args[1]};
  ir_literal *const *per[2] = {row0, row1};
  ir_literal *outs[2] = {NULL, NULL};
  char err[512] = "";
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  base_status st = ir_eval_replicated(m, &eo, 2, per, 1, a, outs, err, sizeof err);
  refused("interp", st, err);
#ifdef HAVE_LLVM
  cpu_options o;
  cpu_options_init(&o);
  o.replicas = 2;
  cpu_exe *x = NULL;
  if (cpu_compile(m, &o, &x, err, sizeof err) == ST_OK) {
    ir_literal *res[2] = {ir_literal_create(a, &s4), ir_literal_create(a, &s4)};
    st = cpu_execute_replicas(x, 2, args, 1, res, err, sizeof err);
    refused("cpu", st, err);
  } else {
    fail("cpu", "mismatched shapes", 0, err, src);
  }
  cpu_exe_destroy(x);
#endif
  tpu_options to;
  tpu_options_init(&to);
  to.target = "v3-8,ncores=2";
  to.replicas = 2;
  diag *d = diag_create();
  tpub_image *img = NULL;
  if (tpu_compile(m, &to, d, &img, NULL) == ST_OK) {
    st = tpu_execute_replicas(img, to.target, m, 2, per, 1, a, outs, err, sizeof err);
    refused(to.target, st, err);
  } else {
    fail(to.target, "mismatched shapes", 0, diag_text(d), src);
  }
  tpub_free(img);
  diag_destroy(d);
  arena_destroy(a);
  ir_module_destroy(m);
}

int main(int argc, char **argv) {
  const char *pos[2] = {NULL, NULL};
  for (int i = 1, n = 0; i < argc; i++) {
    if (!strncmp(argv[i], "--emit=", 7)) emit_dir = argv[i] + 7;
    else if (n < 2) pos[n++] = argv[i];
  }
  int trials = pos[0] ? atoi(pos[0]) : 10;
  uint64_t seed0 = pos[1] ? strtoull(pos[1], NULL, 10) : 1;
  int cases = 0;
  for (int i = 0; i < trials; i++)
    for (int k = 0; k < NGENS; k++, cases++) {
      uint64_t seed = seed0 * 1000003u + (uint64_t)cases;
      uint64_t r = seed * 0x2545F4914F6CDD1Dull + 7;
      int nrep = 1 + (int)draw(&r, 8);
      text t = {.n = 0};
      int np = random_module(&t, &r, nrep, k);
      check(t.s, &gens[k], nrep, np, seed, NULL, (int)(seed % 2) * 2);
    }
  fixed_cases();
  mismatched_shapes();
  printf("diff_coll_targets: %d random cases of %d generators, %d fixed: cpu ran %d, the TPU "
         "ran %d and refused %d as its rows expect; %d failure%s\n",
         cases, NGENS, NGENS + (int)(sizeof pod_cases / sizeof *pod_cases), ran_cpu, ran_tpu,
         refused_tpu, failures, failures == 1 ? "" : "s");
  return failures ? 1 : 0;
}
