/* cpu_random.c: the random-graph differential test: random well-typed
 * modules (elementwise ops, broadcasts, transposes, reshapes, slices,
 * reverses, pads, concatenations, converts, compare/select, reductions and
 * dots over f32, bf16 and s32 values of random small shapes), each run by
 * the reference evaluator and by the CPU JIT under strict numerics, before
 * and (when built with passes/) after the -O2 pass pipeline, bit for bit.
 *
 *   cpu_random [graphs [seed]]       (defaults: 200 1)
 *
 * Every candidate instruction is checked with ir_infer_shape first, so the
 * generator only needs to propose; a failing graph is printed as HLO text. */
#include "tests/llvm/cpu_check.h"
#ifdef HAVE_PASSES
#include "passes/passes.h"
#endif

#include <stdio.h>
#include <stdlib.h>

static uint64_t rs;
static uint64_t rnd(void) {
  rs += 0x9e3779b97f4a7c15ull;
  uint64_t z = rs;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static int pick(int n) { return n > 0 ? (int)(rnd() % (uint64_t)n) : 0; }

typedef struct gen {
  tmod t;
  ir_id vals[64];
  int nv;
  int nparams;
} gen;

static const ir_shape *shp(gen *g, ir_id v) { return ir_inst_get(g->t.m, g->t.c, v)->shape; }

/* Adds inst if its shape infers (for ops that infer) and pushes it. */
static bool try_add(gen *g, ir_inst_proto *in, bool infer) {
  ir_shape ops[4], out;
  for (int i = 0; i < in->nops; i++) ops[i] = *shp(g, in->ops[i]);
  char err[200];
  if (infer) {
    if (!ir_infer_shape(g->t.m, in->op, ops, in->nops, &in->a, in->calls, in->ncalls, &out, err, sizeof err))
      return false;
    in->shape = out;
  } else if (!ir_infer_shape(g->t.m, in->op, ops, in->nops, &in->a, in->calls, in->ncalls, &out, err,
                             sizeof err) ||
             !ir_shape_equal(&out, &in->shape)) {
    return false;
  }
  int64_t n;
  if (!ir_shape_elements(&in->shape, &n) || n > 4096) return false;
  if (g->nv < 64) g->vals[g->nv++] = ir_inst_add(g->t.m, g->t.c, in);
  return true;
}

static ir_shape rand_shape(ir_type t) {
  int64_t d[3];
  int r = pick(4);
  for (int i = 0; i < r; i++) d[i] = 1 + pick(6);
  return ir_shape_array(t, r, d);
}

static void step(gen *g) {
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  arena *a = g->t.m->arena;
  ir_id x = g->vals[pick(g->nv)], y = g->vals[pick(g->nv)];
  const ir_shape *xs = shp(g, x);
  ir_id ops[3] = {x, y, x};
  in.ops = ops;
  static const ir_op un[] = {IR_OP_ABS, IR_OP_NEGATE, IR_OP_EXP, IR_OP_LOG, IR_OP_SQRT, IR_OP_TANH,
                             IR_OP_LOGISTIC, IR_OP_FLOOR, IR_OP_ROUND_EVEN, IR_OP_SIGN, IR_OP_NOT,
                             IR_OP_POPCNT, IR_OP_CLZ, IR_OP_COSINE};
  static const ir_op bin[] = {IR_OP_ADD, IR_OP_SUBTRACT, IR_OP_MULTIPLY, IR_OP_DIVIDE, IR_OP_REMAINDER,
                              IR_OP_MAXIMUM, IR_OP_MINIMUM, IR_OP_POWER, IR_OP_AND, IR_OP_SHL,
                              IR_OP_ATAN2};
  static const ir_type types[] = {IR_F32, IR_BF16, IR_S32, IR_F16, IR_S8};
  switch (pick(13)) {
  case 0: /* unary */
    in.op = un[pick(COUNTOF(un))];
    in.nops = 1;
    try_add(g, &in, true);
    break;
  case 1: case 2: /* binary, same shape */
    in.op = bin[pick(COUNTOF(bin))];
    in.nops = 2;
    try_add(g, &in, true);
    break;
  case 3: { /* broadcast with a new leading dim */
    if (xs->rank >= 3) break;
    in.op = IR_OP_BROADCAST;
    in.nops = 1;
    int64_t d[4], dm[3];
    d[0] = 1 + pick(4);
    for (int i = 0; i < xs->rank; i++) d[i + 1] = xs->dims[i], dm[i] = i + 1;
    in.shape = ir_shape_array(xs->type, xs->rank + 1, d);
    in.a.dimensions = tm_ints(a, xs->rank, dm);
    try_add(g, &in, false);
    break;
  }
  case 4: { /* transpose */
    if (xs->rank < 2) break;
    int64_t p[3] = {0, 1, 2};
    for (int i = xs->rank - 1; i > 0; i--) {
      int j = pick(i + 1);
      int64_t tmp = p[i];
      p[i] = p[j];
      p[j] = tmp;
    }
    in.op = IR_OP_TRANSPOSE;
    in.nops = 1;
    in.a.dimensions = tm_ints(a, xs->rank, p);
    try_add(g, &in, true);
    break;
  }
  case 5: { /* reshape to 1-d */
    in.op = IR_OP_RESHAPE;
    in.nops = 1;
    int64_t n = ir_shape_count(xs);
    in.shape = ir_shape_array(xs->type, 1, &n);
    try_add(g, &in, false);
    break;
  }
  case 6: { /* slice or reverse */
    if (xs->rank == 0) break;
    in.nops = 1;
    int64_t st[3], li[3], sd[3];
    for (int i = 0; i < xs->rank; i++) {
      st[i] = pick((int)xs->dims[i]);
      li[i] = st[i] + 1 + pick((int)(xs->dims[i] - st[i]));
      sd[i] = 1 + pick(2);
    }
    if (pick(2)) {
      in.op = IR_OP_SLICE;
      in.a.slice_start = tm_ints(a, xs->rank, st);
      in.a.slice_limit = tm_ints(a, xs->rank, li);
      in.a.slice_stride = tm_ints(a, xs->rank, sd);
    } else {
      in.op = IR_OP_REVERSE;
      int64_t d = pick(xs->rank);
      in.a.dimensions = tm_ints(a, 1, &d);
    }
    try_add(g, &in, true);
    break;
  }
  case 7: { /* pad with a scalar constant of the type */
    in.op = IR_OP_PAD;
    in.nops = 2;
    ir_id pv = tm_const_scalar(&g->t, xs->type, 1.5);
    ops[1] = pv;
    ir_padding_dim *pd = arena_array(a, (size_t)xs->rank + 1, sizeof *pd);
    for (int i = 0; i < xs->rank; i++) pd[i] = (ir_padding_dim){pick(3) - 1, pick(3), pick(2)};
    in.a.npad = xs->rank;
    in.a.padding = pd;
    try_add(g, &in, true);
    break;
  }
  case 8: { /* concatenate with itself */
    if (xs->rank == 0) break;
    in.op = IR_OP_CONCATENATE;
    in.nops = 2;
    ops[1] = x;
    int64_t d = pick(xs->rank);
    in.a.dimensions = tm_ints(a, 1, &d);
    try_add(g, &in, true);
    break;
  }
  case 9: { /* convert */
    in.op = IR_OP_CONVERT;
    in.nops = 1;
    in.shape = *xs;
    in.shape.type = types[pick(COUNTOF(types))];
    try_add(g, &in, false);
    break;
  }
  case 10: { /* compare then select */
    in.op = IR_OP_COMPARE;
    in.nops = 2;
    in.a.cmp_dir = (ir_cmp_dir)pick(6);
    if (!try_add(g, &in, true)) break;
    ir_inst_proto sel;
    memset(&sel, 0, sizeof sel);
    ir_id sops[3] = {g->vals[g->nv - 1], x, y};
    sel.op = IR_OP_SELECT;
    sel.nops = 3;
    sel.ops = sops;
    try_add(g, &sel, true);
    break;
  }
  case 11: { /* reduce over one dim with add, max or min */
    if (xs->rank == 0 || xs->type == IR_PRED) break;
    static const ir_op rops[] = {IR_OP_ADD, IR_OP_MAXIMUM, IR_OP_MINIMUM};
    ir_comp_id rc = tm_binary_comp(&g->t, rops[pick(3)], xs->type);
    in.op = IR_OP_REDUCE;
    in.nops = 2;
    ops[1] = tm_const_scalar(&g->t, xs->type, 0);
    int64_t d = pick(xs->rank);
    in.a.dimensions = tm_ints(a, 1, &d);
    in.ncalls = 1;
    in.calls = &rc;
    try_add(g, &in, true);
    break;
  }
  default: { /* dot(x, x) contracting the last dims */
    if (xs->rank != 2 || xs->type == IR_PRED) break;
    in.op = IR_OP_DOT;
    in.nops = 2;
    ops[1] = x;
    int64_t one = 1;
    in.a.lhs_contracting = tm_ints(a, 1, &one);
    in.a.rhs_contracting = tm_ints(a, 1, &one);
    in.a.preferred_type = IR_TYPE_INVALID;
    try_add(g, &in, true);
    break;
  }
  }
}

static bool one_graph(int gi, bool optimise) {
  gen g;
  memset(&g, 0, sizeof g);
  g.t = tm_new("random");
  static const ir_type ptypes[] = {IR_F32, IR_BF16, IR_S32};
  int np = 1 + pick(3);
  for (int p = 0; p < np; p++) {
    ir_shape s = rand_shape(ptypes[pick(3)]);
    if (p > 0 && pick(2)) s = *shp(&g, g.vals[0]); /* same shape: more binary ops apply */
    g.vals[g.nv++] = tm_param_shape(&g.t, p, &s);
  }
  int steps = 6 + pick(14);
  for (int i = 0; i < steps; i++) step(&g);
  ir_id r[2] = {g.vals[g.nv - 1], g.vals[pick(g.nv)]};
  tm_finish(&g.t, pick(2) ? r[0] : tm_op(&g.t, IR_OP_TUPLE, r, 2, NULL));
  arena *ar = arena_create();
  ir_literal **args = tm_args(&g.t, ar, (uint64_t)gi * 977 + 13, false);
  bool ok = true;
#ifdef HAVE_PASSES
  if (optimise) {
    diag *d = diag_create();
    pass_ctx pc;
    memset(&pc, 0, sizeof pc);
    pc.d = d;
    pc.opt_level = 2;
    pc.verify = true;
    if (pass_run(g.t.m, &pc, NULL, NULL) != ST_OK) {
      fprintf(stderr, "graph %d: pass pipeline failed: %s\n", gi, diag_first_message(d));
      ok = false;
    }
    diag_destroy(d);
  }
#else
  (void)optimise;
#endif
  char what[64];
  snprintf(what, sizeof what, "random graph %d%s", gi, optimise ? " (-O2)" : "");
  if (ok) ok = tm_check(&g.t, args, CPU_NUMERICS_STRICT, 1 + gi % 2, 0, what);
  if (!ok) {
    strbuf b;
    sb_init(&b);
    ir_print_module(&b, g.t.m);
    fprintf(stderr, "%s\n", sb_str(&b));
    sb_free(&b);
  }
  arena_destroy(ar);
  ir_module_destroy(g.t.m);
  return ok;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200;
  rs = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
  int bad = 0;
  for (int i = 0; i < n; i++) {
    uint64_t save = rs;
    if (!one_graph(i, false)) bad++;
#ifdef HAVE_PASSES
    rs = save; /* the same graph again, optimised */
    if (!one_graph(i, true)) bad++;
#else
    (void)save;
#endif
  }
  printf("cpu_random: %d graphs, %d failures\n", n, bad);
  return bad ? 1 : 0;
}
