/* randgraph.c: the random-graph generator (see randgraph.h). */
#include "tests/common/randgraph.h"
#include "tests/common/testgen.h"

#include <math.h>

enum { MAXV = 96 };

typedef struct gen {
  uint64_t rs;
  const rg_options *o;
  ir_module *m;
  ir_comp_id c;
  ir_id vals[MAXV];
  int nv;
  int nparams;
  ir_id ixv[6]; /* RG_INDEX results, all kept live by the root */
  int nix;
} gen;

static uint64_t rnd(gen *g) { return tc_splitmix(&g->rs); }
static int pick(gen *g, int n) { return n > 0 ? (int)(rnd(g) % (uint64_t)n) : 0; }
static bool on(gen *g, unsigned fam) { return (g->o->ops & fam) != 0; }

static const ir_shape *shp(gen *g, ir_id v) { return ir_inst_get(g->m, g->c, v)->shape; }

static ir_ints ints(gen *g, int n, const int64_t *v) { return tc_ints(g->m->arena, n, v); }

/* Adds op(ops) when its shape infers (target: the shape for ops that need
 * one, else NULL) and the result is within the element bound; pushes it
 * into the pool when `push`. Returns the id or IR_NONE. */
static ir_id add(gen *g, ir_op op, const ir_id *ops, int nops, const ir_attrs *at,
                 const ir_comp_id *calls, int ncalls, const ir_shape *target, bool push) {
  ir_shape os[8], out;
  for (int i = 0; i < nops; i++) os[i] = *shp(g, ops[i]);
  ir_attrs a;
  if (at) a = *at;
  else memset(&a, 0, sizeof a);
  if (op == IR_OP_DOT || op == IR_OP_CONVOLUTION)
    if (!at || a.preferred_type == 0) a.preferred_type = IR_TYPE_INVALID;
  memset(&out, 0, sizeof out);
  if (target) out = *target;
  char err[256];
  if (!ir_infer_shape(g->m, op, os, nops, &a, calls, ncalls, &out, err, sizeof err)) return IR_NONE;
  int64_t n;
  if (out.type != IR_TUPLE &&
      (!ir_shape_elements(&out, &n) || n > g->o->max_elems))
    return IR_NONE;
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = op;
  in.shape = out;
  in.nops = nops;
  in.ops = (ir_id *)ops;
  in.ncalls = ncalls;
  in.calls = (ir_comp_id *)calls;
  in.a = a;
  ir_id id = ir_inst_add(g->m, g->c, &in);
  if (push && g->nv < MAXV) g->vals[g->nv++] = id;
  return id;
}

static ir_id param(gen *g, const ir_shape *s, bool push) {
  ir_id id = tc_param(g->m, g->c, s, g->nparams++);
  if (push && g->nv < MAXV) g->vals[g->nv++] = id;
  return id;
}

static ir_id scalar(gen *g, ir_type t, double v) {
  ir_shape s = ir_shape_scalar(t);
  ir_literal *l = ir_literal_create(g->m->arena, &s);
  if (ir_type_is_float(t)) ir_literal_set_f64(l, 0, v);
  else ir_literal_set_i64(l, 0, (int64_t)v);
  return tc_constant(g->m, g->c, l);
}

/* broadcast of a scalar constant to s */
static ir_id splat(gen *g, const ir_shape *s, double v) {
  ir_id k = scalar(g, s->type, v);
  ir_shape t = ir_shape_array(s->type, s->rank, s->dims);
  return add(g, IR_OP_BROADCAST, &k, 1, NULL, NULL, 0, &t, false);
}

static const int64_t awkward[] = {1, 2, 3, 7, 8, 127, 129, 300};

static int64_t dim(gen *g) {
  /* small sizes more often, the awkward large ones now and then */
  return pick(g, 3) ? awkward[pick(g, 5)] : awkward[5 + pick(g, 3)];
}

static ir_shape rand_shape(gen *g, ir_type t, int rank) {
  int64_t d[4];
  for (;;) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= (d[i] = dim(g));
    if (n <= g->o->max_elems) break;
  }
  return ir_shape_array(t, rank, d);
}

static ir_type rand_type(gen *g) {
  static const ir_type f[] = {IR_F32, IR_F32, IR_BF16}, all[] = {IR_F32, IR_F32, IR_BF16, IR_S32};
  return g->o->float_only ? f[pick(g, 3)] : all[pick(g, 4)];
}

/* A pool value with the dims and type of s, else (usually) a new parameter. */
static ir_id partner(gen *g, const ir_shape *s) {
  int start = pick(g, g->nv);
  for (int i = 0; i < g->nv; i++) {
    ir_id v = g->vals[(start + i) % g->nv];
    if (pick(g, 4) && ir_shape_equal(shp(g, v), s)) return v;
  }
  ir_shape t = ir_shape_array(s->type, s->rank, s->dims);
  return param(g, &t, true);
}

/* A pool value satisfying want (tries a few), or IR_NONE. */
static ir_id find(gen *g, bool (*want)(const ir_shape *)) {
  for (int tries = 0; tries < 12; tries++) {
    ir_id v = g->vals[pick(g, g->nv)];
    if (want(shp(g, v))) return v;
  }
  return IR_NONE;
}
static bool is_float(const ir_shape *s) { return s->type == IR_F32 || s->type == IR_BF16; }
static bool is_int(const ir_shape *s) { return s->type == IR_S32; }
static bool is_float_r2(const ir_shape *s) { return is_float(s) && s->rank == 2; }
static bool is_float_r3(const ir_shape *s) { return is_float(s) && s->rank == 3; }
static bool is_float_r4(const ir_shape *s) { return is_float(s) && s->rank == 4; }
static bool ranked(const ir_shape *s) { return s->rank > 0; }

static ir_comp_id reducer(gen *g, ir_op op, ir_type t) {
  ir_comp_id rc = ir_comp_add(g->m, ir_unique_name(g->m, "reducer"));
  ir_shape s = ir_shape_scalar(t);
  ir_id p[2] = {tc_param(g->m, rc, &s, 0), tc_param(g->m, rc, &s, 1)};
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = op;
  in.shape = s;
  in.nops = 2;
  in.ops = p;
  ir_comp_get(g->m, rc)->root = ir_inst_add(g->m, rc, &in);
  ir_comp_finish(g->m, rc);
  return rc;
}

/* Elementwise epilogue of a contraction: + bias (broadcast along the last
 * dim) and, with RG_MINMAX, relu. */
static void epilogue(gen *g, ir_id x) {
  const ir_shape *xs = shp(g, x);
  if (xs->rank == 0) return;
  ir_id v = x;
  if (pick(g, 2)) {
    ir_shape bs = ir_shape_array(xs->type, 1, &xs->dims[xs->rank - 1]);
    ir_id b = param(g, &bs, false);
    int64_t last = xs->rank - 1;
    ir_attrs a;
    memset(&a, 0, sizeof a);
    a.dimensions = ints(g, 1, &last);
    ir_shape full = ir_shape_array(xs->type, xs->rank, xs->dims);
    ir_id bb = add(g, IR_OP_BROADCAST, &b, 1, &a, NULL, 0, &full, false);
    ir_id ops[2] = {v, bb};
    if (bb != IR_NONE) v = add(g, IR_OP_ADD, ops, 2, NULL, NULL, 0, NULL, true);
  }
  if (on(g, RG_MINMAX) && pick(g, 2) && v != IR_NONE) {
    ir_id ops[2] = {v, splat(g, shp(g, v), 0)};
    add(g, IR_OP_MAXIMUM, ops, 2, NULL, NULL, 0, NULL, true);
  }
}

static int64_t precision_pick(gen *g) {
  int r = pick(g, 8);
  if (g->o->default_precision) return IR_PREC_DEFAULT;
  return r < 5 ? IR_PREC_DEFAULT : r < 7 ? IR_PREC_HIGH : IR_PREC_HIGHEST;
}

static void gen_dot(gen *g) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.precision[0] = a.precision[1] = (ir_precision)precision_pick(g);
  ir_id x = pick(g, 3) ? find(g, is_float_r2) : find(g, is_float_r3);
  const ir_shape *xs;
  if (x == IR_NONE) {
    ir_shape s = rand_shape(g, pick(g, 3) ? IR_F32 : IR_BF16, 2);
    x = param(g, &s, true);
  }
  xs = shp(g, x);
  int64_t B = xs->rank == 3 ? xs->dims[0] : 1, M = xs->dims[xs->rank - 2],
          K = xs->dims[xs->rank - 1], N = dim(g);
  if (B * M * K * N > g->o->max_macs) N = 1 + g->o->max_macs / (B * M * K);
  if (N > 300) N = 300;
  if (B * M * K * N > g->o->max_macs) return;
  int64_t rd[3] = {B, K, N};
  ir_type rt = pick(g, 3) ? xs->type : (xs->type == IR_F32 ? IR_BF16 : IR_F32);
  int r3 = xs->rank == 3;
  /* 0: y [B,] K, N; 1: [B,] N, K; 2: transpose of a [B,] N, K parameter;
   * 3 (batched only): N, K, B */
  int lay = g->o->dot_layouts ? pick(g, r3 ? 4 : 3) : 0;
  int64_t rc = r3 ? 1 : 0, rb = 0;
  if (lay == 1 || lay == 2) { /* the parameter holds [B,] N, K */
    rd[1] = N;
    rd[2] = K;
  } else if (lay == 3) {
    rd[0] = N;
    rd[1] = K;
    rd[2] = B;
  }
  ir_shape ys = r3 ? ir_shape_array(rt, 3, rd) : ir_shape_array(rt, 2, rd + 1);
  ir_id y = param(g, &ys, false);
  if (lay == 1) rc = r3 ? 2 : 1;
  if (lay == 2) {
    ir_attrs ta;
    memset(&ta, 0, sizeof ta);
    int64_t perm[3] = {0, 2, 1}, perm2[2] = {1, 0};
    ta.dimensions = r3 ? ints(g, 3, perm) : ints(g, 2, perm2);
    y = add(g, IR_OP_TRANSPOSE, &y, 1, &ta, NULL, 0, NULL, false);
    if (y == IR_NONE) return;
  }
  if (lay == 3) {
    rc = 1;
    rb = 2;
  }
  int64_t lc = xs->rank - 1, zero = 0;
  a.lhs_contracting = ints(g, 1, &lc);
  a.rhs_contracting = ints(g, 1, &rc);
  if (r3) {
    a.lhs_batch = ints(g, 1, &zero);
    a.rhs_batch = ints(g, 1, &rb);
  }
  ir_id ops[2] = {x, y};
  ir_id d = add(g, IR_OP_DOT, ops, 2, &a, NULL, 0, NULL, true);
  if (d != IR_NONE) epilogue(g, d);
}

static void gen_conv(gen *g) {
  int ns = 1 + pick(g, 2);
  ir_id x = ns == 2 ? find(g, is_float_r4) : find(g, is_float_r3);
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.precision[0] = a.precision[1] = (ir_precision)precision_pick(g);
  int64_t fgc = pick(g, 4) ? 1 : 2;
  if (x == IR_NONE || pick(g, 3) == 0) {
    static const int64_t sp1[] = {1, 3, 7, 16, 129}, sp2[] = {1, 3, 7, 9};
    int64_t d[4];
    d[0] = 1 + pick(g, 2);
    for (int i = 0; i < ns; i++) d[1 + i] = ns == 1 ? sp1[pick(g, 5)] : sp2[pick(g, 4)];
    d[1 + ns] = (1 + pick(g, 4)) * fgc;
    ir_shape s = ir_shape_array(pick(g, 3) ? IR_F32 : IR_BF16, ns + 2, d);
    x = param(g, &s, true);
  }
  const ir_shape *xs = shp(g, x);
  int64_t cin = xs->dims[ns + 1];
  if (cin % fgc) fgc = 1;
  int64_t kd[4];
  for (int i = 0; i < ns; i++) kd[i] = 1 + pick(g, 3);
  kd[ns] = cin / fgc;
  kd[ns + 1] = fgc * (1 + pick(g, 8));
  ir_shape ks = ir_shape_array(pick(g, 3) ? xs->type : IR_F32, ns + 2, kd);
  ir_id k = param(g, &ks, false);
  a.conv.nspatial = ns;
  a.conv.in_batch = a.conv.out_batch = 0;
  a.conv.in_feature = a.conv.out_feature = (int8_t)(ns + 1);
  a.conv.k_in = (int8_t)ns;
  a.conv.k_out = (int8_t)(ns + 1);
  ir_window win_a;
  memset(&win_a, 0, sizeof win_a);
  a.window = &win_a;
  win_a.rank = ns;
  for (int i = 0; i < ns; i++) {
    a.conv.in_spatial[i] = a.conv.out_spatial[i] = (int8_t)(1 + i);
    a.conv.k_spatial[i] = (int8_t)i;
    ir_window_dim *w = &win_a.dims[i];
    w->size = kd[i];
    w->stride = 1 + pick(g, 2);
    w->pad_lo = pick(g, 3);
    w->pad_hi = pick(g, 3);
    w->lhs_dilate = pick(g, 5) ? 1 : 2;
    w->rhs_dilate = pick(g, 4) ? 1 : 2;
    w->reversal = pick(g, 6) == 0;
  }
  a.feature_group_count = fgc;
  a.batch_group_count = 1;
  double macs = (double)ir_shape_count(xs) * (double)kd[ns + 1] / (double)fgc;
  for (int i = 0; i < ns; i++) macs *= (double)kd[i];
  if (macs > (double)g->o->max_macs) return;
  ir_id ops[2] = {x, k};
  ir_id c = add(g, IR_OP_CONVOLUTION, ops, 2, &a, NULL, 0, NULL, true);
  if (c != IR_NONE) epilogue(g, c);
}

static void gen_unary(gen *g) {
  static const ir_op fa[] = {IR_OP_ABS, IR_OP_NEGATE, IR_OP_SQRT, IR_OP_FLOOR, IR_OP_CEIL,
                             IR_OP_ROUND_AFZ, IR_OP_ROUND_EVEN, IR_OP_SIGN};
  static const ir_op ft[] = {IR_OP_EXP, IR_OP_LOG, IR_OP_TANH, IR_OP_LOGISTIC, IR_OP_RSQRT};
  static const ir_op in_[] = {IR_OP_NOT, IR_OP_POPCNT, IR_OP_CLZ, IR_OP_ABS, IR_OP_NEGATE};
  ir_id x = g->vals[pick(g, g->nv)];
  const ir_shape *xs = shp(g, x);
  ir_op op;
  if (is_float(xs)) {
    bool t = on(g, RG_TRANSC) && (!on(g, RG_ARITH) || pick(g, 2));
    if (!t && !on(g, RG_ARITH)) return;
    op = t ? ft[pick(g, (int)COUNTOF(ft))] : fa[pick(g, (int)COUNTOF(fa))];
  } else if (is_int(xs) && on(g, RG_INT)) {
    op = in_[pick(g, (int)COUNTOF(in_))];
  } else {
    return;
  }
  add(g, op, &x, 1, NULL, NULL, 0, NULL, true);
}

static void gen_binary(gen *g) {
  static const ir_op fa[] = {IR_OP_ADD, IR_OP_SUBTRACT, IR_OP_MULTIPLY, IR_OP_DIVIDE};
  static const ir_op fm[] = {IR_OP_MAXIMUM, IR_OP_MINIMUM};
  static const ir_op ia[] = {IR_OP_ADD, IR_OP_SUBTRACT, IR_OP_MULTIPLY, IR_OP_AND, IR_OP_OR,
                             IR_OP_XOR, IR_OP_SHL, IR_OP_SHR_A, IR_OP_SHR_L, IR_OP_MAXIMUM,
                             IR_OP_MINIMUM};
  ir_id x = g->vals[pick(g, g->nv)];
  const ir_shape *xs = shp(g, x);
  ir_op op;
  if (is_float(xs)) {
    bool m = on(g, RG_MINMAX) && (!on(g, RG_ARITH) || pick(g, 4) == 0);
    if (!m && !on(g, RG_ARITH)) return;
    op = m ? fm[pick(g, 2)] : fa[pick(g, 4)];
  } else if (is_int(xs) && on(g, RG_INT)) {
    op = ia[pick(g, (int)COUNTOF(ia))];
  } else {
    return;
  }
  ir_id ops[2] = {x, partner(g, xs)};
  if (pick(g, 2)) { /* swap operands */
    ir_id t = ops[0];
    ops[0] = ops[1];
    ops[1] = t;
  }
  add(g, op, ops, 2, NULL, NULL, 0, NULL, true);
}

static void gen_clamp(gen *g) {
  ir_id x = find(g, is_float);
  if (x == IR_NONE) return;
  const ir_shape *xs = shp(g, x);
  double lo = -1.0 - pick(g, 3), hi = 0.5 + pick(g, 3);
  ir_id ops[3] = {scalar(g, xs->type, lo), x, scalar(g, xs->type, hi)};
  if (pick(g, 2)) {
    ops[0] = splat(g, xs, lo);
    ops[2] = splat(g, xs, hi);
  }
  add(g, IR_OP_CLAMP, ops, 3, NULL, NULL, 0, NULL, true);
}

static void gen_move(gen *g) {
  ir_id x = g->vals[pick(g, g->nv)];
  const ir_shape *xs = shp(g, x);
  ir_attrs a;
  memset(&a, 0, sizeof a);
  switch (pick(g, 7)) {
  case 0: { /* broadcast: a new dim at a random place */
    if (xs->rank >= 3) return;
    int at = pick(g, xs->rank + 1);
    int64_t d[4], dm[3];
    for (int i = 0, j = 0; i <= xs->rank; i++) {
      if (i == at) {
        d[i] = dim(g);
        continue;
      }
      dm[j] = i;
      d[i] = xs->dims[j++];
    }
    ir_shape s = ir_shape_array(xs->type, xs->rank + 1, d);
    a.dimensions = ints(g, xs->rank, dm);
    add(g, IR_OP_BROADCAST, &x, 1, &a, NULL, 0, &s, true);
    return;
  }
  case 1: { /* transpose */
    if (xs->rank < 2) return;
    int64_t p[4] = {0, 1, 2, 3};
    for (int i = xs->rank - 1; i > 0; i--) {
      int j = pick(g, i + 1);
      int64_t t = p[i];
      p[i] = p[j];
      p[j] = t;
    }
    a.dimensions = ints(g, xs->rank, p);
    add(g, IR_OP_TRANSPOSE, &x, 1, &a, NULL, 0, NULL, true);
    return;
  }
  case 2: { /* reshape: flatten, or split the element count */
    int64_t n = ir_shape_count(xs), d[2] = {n, 1};
    int r = 1;
    static const int64_t f[] = {2, 3, 7, 8};
    int64_t k = f[pick(g, 4)];
    if (n % k == 0 && pick(g, 2)) {
      d[0] = n / k;
      d[1] = k;
      r = 2;
    }
    ir_shape s = ir_shape_array(xs->type, r, d);
    add(g, IR_OP_RESHAPE, &x, 1, NULL, NULL, 0, &s, true);
    return;
  }
  case 3: { /* slice (strided) or reverse */
    if (xs->rank == 0) return;
    int64_t st[4], li[4], sd[4];
    for (int i = 0; i < xs->rank; i++) {
      st[i] = pick(g, (int)xs->dims[i]);
      li[i] = st[i] + 1 + pick(g, (int)(xs->dims[i] - st[i]));
      sd[i] = 1 + pick(g, 3);
    }
    if (pick(g, 3)) {
      a.slice_start = ints(g, xs->rank, st);
      a.slice_limit = ints(g, xs->rank, li);
      a.slice_stride = ints(g, xs->rank, sd);
      add(g, IR_OP_SLICE, &x, 1, &a, NULL, 0, NULL, true);
    } else {
      int64_t d = pick(g, xs->rank);
      a.dimensions = ints(g, 1, &d);
      add(g, IR_OP_REVERSE, &x, 1, &a, NULL, 0, NULL, true);
    }
    return;
  }
  case 4: { /* pad: negative, positive and interior */
    if (xs->rank == 0) return;
    ir_padding_dim *pd = arena_array(g->m->arena, (size_t)xs->rank, sizeof *pd);
    for (int i = 0; i < xs->rank; i++)
      pd[i] = (ir_padding_dim){pick(g, 4) - 1, pick(g, 4) - 1, pick(g, 4) ? 0 : 1};
    a.npad = xs->rank;
    a.padding = pd;
    ir_id ops[2] = {x, scalar(g, xs->type, 1.5)};
    add(g, IR_OP_PAD, ops, 2, &a, NULL, 0, NULL, true);
    return;
  }
  default: { /* concatenate with a partner of the same shape, or itself */
    if (xs->rank == 0) return;
    int64_t d = pick(g, xs->rank);
    a.dimensions = ints(g, 1, &d);
    ir_id ops[3] = {x, pick(g, 2) ? x : partner(g, xs), x};
    add(g, IR_OP_CONCATENATE, ops, 2 + pick(g, 2), &a, NULL, 0, NULL, true);
    return;
  }
  }
}

static void gen_reduce(gen *g) {
  ir_id x = find(g, ranked);
  if (x == IR_NONE) return;
  const ir_shape *xs = shp(g, x);
  if (xs->type == IR_PRED) return;
  bool fl = is_float(xs);
  ir_op op = fl ? (ir_op[]){IR_OP_ADD, IR_OP_MAXIMUM, IR_OP_MINIMUM}[pick(g, on(g, RG_MINMAX) ? 3 : 1)]
                : IR_OP_ADD;
  if (!fl && !on(g, RG_INT)) return;
  double init = op == IR_OP_ADD ? 0 : op == IR_OP_MAXIMUM ? -INFINITY : INFINITY;
  ir_comp_id rc = reducer(g, op, xs->type);
  ir_attrs a;
  memset(&a, 0, sizeof a);
  int64_t dims[4];
  int nd = 1;
  dims[0] = pick(g, xs->rank);
  if (ir_shape_count(xs) >= 4096 && pick(g, 3) == 0) { /* many rows into few outputs */
    nd = xs->rank - (xs->rank > 1 && pick(g, 2));
    for (int i = 0; i < nd; i++) dims[i] = i;
  } else if (xs->rank > 1 && pick(g, 3) == 0) {
    dims[1] = (dims[0] + 1 + pick(g, xs->rank - 1)) % xs->rank;
    nd = 2;
    if (dims[1] < dims[0]) {
      int64_t t = dims[0];
      dims[0] = dims[1];
      dims[1] = t;
    }
  }
  a.dimensions = ints(g, nd, dims);
  ir_id ops[2] = {x, scalar(g, xs->type, init)};
  add(g, IR_OP_REDUCE, ops, 2, &a, &rc, 1, NULL, true);
}

static void gen_cmpsel(gen *g) {
  ir_id x = g->vals[pick(g, g->nv)];
  const ir_shape *xs = shp(g, x);
  if (xs->type == IR_PRED) return;
  if (is_float(xs) && pick(g, 6) == 0) {
    ir_id f = add(g, IR_OP_IS_FINITE, &x, 1, NULL, NULL, 0, NULL, false);
    if (f == IR_NONE) return;
    ir_id ops[3] = {f, x, splat(g, xs, 0)};
    add(g, IR_OP_SELECT, ops, 3, NULL, NULL, 0, NULL, true);
    return;
  }
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.cmp_dir = (ir_cmp_dir)pick(g, 6);
  if (is_float(xs) && pick(g, 4) == 0) a.cmp_type = IR_CMPT_TOTALORDER;
  ir_id y = partner(g, xs);
  ir_id ops[2] = {x, y};
  ir_id c = add(g, IR_OP_COMPARE, ops, 2, &a, NULL, 0, NULL, false);
  if (c == IR_NONE) return;
  ir_id sops[3] = {c, pick(g, 2) ? x : y, pick(g, 2) ? y : x};
  add(g, IR_OP_SELECT, sops, 3, NULL, NULL, 0, NULL, true);
}

static void gen_convert(gen *g) {
  ir_id x = g->vals[pick(g, g->nv)];
  const ir_shape *xs = shp(g, x);
  ir_type to;
  if (xs->type == IR_F32) to = pick(g, 3) ? IR_BF16 : IR_S32;
  else if (xs->type == IR_BF16) to = pick(g, 3) ? IR_F32 : IR_S32;
  else if (xs->type == IR_S32) to = pick(g, 2) ? IR_F32 : IR_BF16;
  else to = IR_F32; /* pred */
  if (g->o->float_only && to == IR_S32) to = xs->type == IR_F32 ? IR_BF16 : IR_F32;
  ir_shape s = ir_shape_array(to, xs->rank, xs->dims);
  add(g, IR_OP_CONVERT, &x, 1, NULL, NULL, 0, &s, true);
}

/* Q, K or V [B, H, S, W]: a parameter, or split heads of [B, S, H*W]. */
static ir_id heads(gen *g, int64_t B, int64_t H, int64_t S, int64_t W, bool split) {
  int64_t d4[4] = {B, H, S, W};
  if (!split) {
    ir_shape s = ir_shape_array(IR_F32, 4, d4);
    return param(g, &s, false);
  }
  int64_t d3[3] = {B, S, H * W}, r4[4] = {B, S, H, W}, perm[4] = {0, 2, 1, 3};
  ir_shape s3 = ir_shape_array(IR_F32, 3, d3), sr = ir_shape_array(IR_F32, 4, r4);
  ir_id x = param(g, &s3, false);
  ir_id r = add(g, IR_OP_RESHAPE, &x, 1, NULL, NULL, 0, &sr, false);
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.dimensions = ints(g, 4, perm);
  return r == IR_NONE ? IR_NONE : add(g, IR_OP_TRANSPOSE, &r, 1, &a, NULL, 0, NULL, false);
}

/* broadcast of reduce(x, init, last dim, op) back over x's last dim. */
static ir_id row_reduce(gen *g, ir_id x, ir_op op, double init) {
  const ir_shape xs = *shp(g, x);
  ir_comp_id rc = reducer(g, op, IR_F32);
  ir_attrs a;
  memset(&a, 0, sizeof a);
  int64_t last = xs.rank - 1, dims[4] = {0, 1, 2, 3};
  a.dimensions = ints(g, 1, &last);
  ir_id ops[2] = {x, scalar(g, IR_F32, init)};
  ir_id r = add(g, IR_OP_REDUCE, ops, 2, &a, &rc, 1, NULL, false);
  memset(&a, 0, sizeof a);
  a.dimensions = ints(g, xs.rank - 1, dims);
  return r == IR_NONE ? r : add(g, IR_OP_BROADCAST, &r, 1, &a, NULL, 0, &xs, false);
}

static void gen_attn(gen *g) {
  static const int64_t seqs[] = {1, 7, 129, 300}, widths[] = {1, 64, 100};
  int64_t B = 1 + pick(g, 2), H = 1 + pick(g, 3), Sq = seqs[pick(g, 4)], Sk = seqs[pick(g, 4)];
  int64_t D = widths[pick(g, 3)], Dv = widths[pick(g, 3)];
  while (B * H * Sq * Sk > 100000)
    H > 1 ? H-- : B > 1 ? B-- : (Sq = 129);
  bool split = pick(g, 2);
  ir_id q = heads(g, B, H, Sq, D, split), k = heads(g, B, H, Sk, D, split);
  ir_id v = heads(g, B, H, Sk, Dv, split);
  if (q == IR_NONE || k == IR_NONE || v == IR_NONE) return;
  ir_attrs a;
  memset(&a, 0, sizeof a);
  int64_t bd[2] = {0, 1}, c3 = 3, c2 = 2;
  a.lhs_batch = a.rhs_batch = ints(g, 2, bd);
  a.lhs_contracting = a.rhs_contracting = ints(g, 1, &c3);
  ir_id qk[2] = {q, k}, s = add(g, IR_OP_DOT, qk, 2, &a, NULL, 0, NULL, false);
  if (s == IR_NONE) return;
  if (pick(g, 3)) { /* the scale, on either side */
    ir_id c = splat(g, shp(g, s), pick(g, 2) ? 0.125 : 1.0 / sqrt((double)D));
    bool first = pick(g, 2);
    ir_id ops[2] = {first ? c : s, first ? s : c};
    s = add(g, IR_OP_MULTIPLY, ops, 2, NULL, NULL, 0, NULL, false);
  }
  ir_id m = s == IR_NONE ? IR_NONE : row_reduce(g, s, IR_OP_MAXIMUM, -INFINITY);
  if (m == IR_NONE) return;
  ir_id sm[2] = {s, m}, u = add(g, IR_OP_SUBTRACT, sm, 2, NULL, NULL, 0, NULL, false);
  ir_id e = u == IR_NONE ? u : add(g, IR_OP_EXP, &u, 1, NULL, NULL, 0, NULL, false);
  ir_id z = e == IR_NONE ? e : row_reduce(g, e, IR_OP_ADD, 0);
  if (z == IR_NONE) return;
  ir_id ez[2] = {e, z}, p = add(g, IR_OP_DIVIDE, ez, 2, NULL, NULL, 0, NULL, false);
  a.rhs_contracting = ints(g, 1, &c2);
  ir_id pv[2] = {p, v};
  ir_id o = p == IR_NONE ? p : add(g, IR_OP_DOT, pv, 2, &a, NULL, 0, NULL, false);
  if (o != IR_NONE && split) {
    int64_t perm[4] = {0, 2, 1, 3}, d3[3] = {B, Sq, H * Dv};
    memset(&a, 0, sizeof a);
    a.dimensions = ints(g, 4, perm);
    ir_id t = add(g, IR_OP_TRANSPOSE, &o, 1, &a, NULL, 0, NULL, false);
    ir_shape s3 = ir_shape_array(IR_F32, 3, d3);
    o = t == IR_NONE ? t : add(g, IR_OP_RESHAPE, &t, 1, NULL, NULL, 0, &s3, false);
  }
  if (o == IR_NONE) return;
  if (pick(g, 2)) { /* an output projection: the result may be stored as bf16 */
    const ir_shape *os = shp(g, o);
    int64_t wd[2] = {os->dims[os->rank - 1], 7}, lc = os->rank - 1, zero = 0;
    ir_shape ws = ir_shape_array(IR_F32, 2, wd);
    ir_id w = param(g, &ws, false);
    memset(&a, 0, sizeof a);
    a.lhs_contracting = ints(g, 1, &lc);
    a.rhs_contracting = ints(g, 1, &zero);
    ir_id ow[2] = {o, w};
    o = add(g, IR_OP_DOT, ow, 2, &a, NULL, 0, NULL, false);
  }
  if (o != IR_NONE && g->nv < MAXV) g->vals[g->nv++] = o;
}

/* reduce(x, init) with op over x's last nr dims, broadcast back to x's
 * shape (through a keepdims reshape when keep). */
static ir_id rows_back(gen *g, ir_id x, int nr, ir_op op, double init, bool keep) {
  const ir_shape xs = *shp(g, x);
  int nk = xs.rank - nr;
  ir_attrs a;
  memset(&a, 0, sizeof a);
  int64_t dims[4] = {0, 1, 2, 3}, rd[4];
  for (int k = 0; k < nr; k++) rd[k] = nk + k;
  a.dimensions = ints(g, nr, rd);
  ir_comp_id rc = reducer(g, op, IR_F32);
  ir_id ops[2] = {x, scalar(g, IR_F32, init)};
  ir_id r = add(g, IR_OP_REDUCE, ops, 2, &a, &rc, 1, NULL, false);
  if (r == IR_NONE) return r;
  int nd = nk;
  if (keep) { /* [rows..., 1, ...] then broadcast over all dims */
    int64_t kd[4];
    for (int k = 0; k < xs.rank; k++) kd[k] = k < nk ? xs.dims[k] : 1;
    ir_shape ks = ir_shape_array(IR_F32, xs.rank, kd);
    r = add(g, IR_OP_RESHAPE, &r, 1, NULL, NULL, 0, &ks, false);
    if (r == IR_NONE) return r;
    /* size-1 dims broadcast: reshape back to the kept dims first */
    ir_shape ns = ir_shape_array(IR_F32, nk, xs.dims);
    r = add(g, IR_OP_RESHAPE, &r, 1, NULL, NULL, 0, &ns, false);
  }
  memset(&a, 0, sizeof a);
  a.dimensions = ints(g, nd, dims);
  return r == IR_NONE ? r : add(g, IR_OP_BROADCAST, &r, 1, &a, NULL, 0, &xs, false);
}

static ir_id binop(gen *g, ir_op op, ir_id x, ir_id y) {
  if (x == IR_NONE || y == IR_NONE) return IR_NONE;
  ir_id ops[2] = {x, y};
  return add(g, op, ops, 2, NULL, NULL, 0, NULL, false);
}

/* x op splat(v) */
static ir_id binc(gen *g, ir_op op, ir_id x, double v) {
  return x == IR_NONE ? x : binop(g, op, x, splat(g, shp(g, x), v));
}

static void gen_norm(gen *g) {
  static const int64_t sizes[] = {1, 7, 127, 129, 300};
  int rank = 2 + pick(g, 2), nr = rank == 3 && pick(g, 3) == 0 ? 2 : 1;
  int64_t d[4], R = 1;
  for (;;) {
    int64_t n = 1;
    R = 1;
    for (int k = 0; k < rank; k++) {
      d[k] = sizes[pick(g, 5)];
      n *= d[k];
      if (k >= rank - nr) R *= d[k];
    }
    if (n <= g->o->max_elems) break;
  }
  ir_shape xs = ir_shape_array(IR_F32, rank, d);
  ir_id x = param(g, &xs, false), y = IR_NONE;
  bool keep = pick(g, 3) == 0;
  int kind = pick(g, 4);
  if (kind <= 1) { /* layer norm */
    ir_id mean = binc(g, IR_OP_DIVIDE, rows_back(g, x, nr, IR_OP_ADD, 0, keep), (double)R);
    ir_id dv = binop(g, IR_OP_SUBTRACT, x, mean);
    ir_id var = binc(g, IR_OP_DIVIDE, rows_back(g, binop(g, IR_OP_MULTIPLY, dv, dv), nr, IR_OP_ADD, 0, keep),
                     (double)R);
    ir_id rs = var == IR_NONE ? var : add(g, IR_OP_RSQRT, (ir_id[]){binc(g, IR_OP_ADD, var, 1e-5)}, 1, NULL, NULL, 0, NULL, false);
    y = binop(g, IR_OP_MULTIPLY, dv, rs);
  } else if (kind == 2) { /* RMS norm */
    ir_id ms = binc(g, IR_OP_DIVIDE, rows_back(g, binop(g, IR_OP_MULTIPLY, x, x), nr, IR_OP_ADD, 0, keep), (double)R);
    ir_id rs = ms == IR_NONE ? ms : add(g, IR_OP_RSQRT, (ir_id[]){binc(g, IR_OP_ADD, ms, 1e-6)}, 1, NULL, NULL, 0, NULL, false);
    y = binop(g, IR_OP_MULTIPLY, x, rs);
  } else { /* softmax */
    ir_id u = binop(g, IR_OP_SUBTRACT, x, rows_back(g, x, nr, IR_OP_MAXIMUM, -INFINITY, keep));
    ir_id e = u == IR_NONE ? u : add(g, IR_OP_EXP, &u, 1, NULL, NULL, 0, NULL, false);
    y = binop(g, IR_OP_DIVIDE, e, e == IR_NONE ? e : rows_back(g, e, nr, IR_OP_ADD, 0, keep));
  }
  if (y == IR_NONE) return;
  if (kind == 0 || pick(g, 4) == 0) { /* * gamma + beta, broadcast along the rows */
    ir_shape cs = ir_shape_array(IR_F32, nr, d + rank - nr);
    int64_t cd[4];
    for (int k = 0; k < nr; k++) cd[k] = rank - nr + k;
    ir_attrs a;
    memset(&a, 0, sizeof a);
    a.dimensions = ints(g, nr, cd);
    ir_id gm = param(g, &cs, false), bt = param(g, &cs, false);
    y = binop(g, IR_OP_MULTIPLY, y, add(g, IR_OP_BROADCAST, &gm, 1, &a, NULL, 0, &xs, false));
    y = binop(g, IR_OP_ADD, y, add(g, IR_OP_BROADCAST, &bt, 1, &a, NULL, 0, &xs, false));
    if (y == IR_NONE) return;
  }
  if (g->nv < MAXV) g->vals[g->nv++] = y;
  /* a dot with an f32 weight [row, N] (and now and then a second one) */
  for (int c = 0; c < 2 && nr == 1 && pick(g, 3); c++) {
    const ir_shape *ys = shp(g, y);
    int64_t K = ys->dims[ys->rank - 1], M = ir_shape_count(ys) / K, N = sizes[pick(g, 5)];
    if (M * K * N > g->o->max_macs || M * N > g->o->max_elems) return;
    int64_t wd[2] = {K, N}, lc = ys->rank - 1, zero = 0;
    ir_shape ws = ir_shape_array(IR_F32, 2, wd);
    ir_attrs a;
    memset(&a, 0, sizeof a);
    a.preferred_type = IR_TYPE_INVALID;
    a.lhs_contracting = ints(g, 1, &lc);
    a.rhs_contracting = ints(g, 1, &zero);
    ir_id ops[2] = {y, param(g, &ws, false)};
    y = add(g, IR_OP_DOT, ops, 2, &a, NULL, 0, NULL, true);
    if (y != IR_NONE && pick(g, 2)) { /* + bias: a matmul epilogue, maybe feeding the next dot */
      const ir_shape ds = *shp(g, y);
      ir_shape bs = ir_shape_array(IR_F32, 1, &ds.dims[ds.rank - 1]);
      int64_t last = ds.rank - 1;
      ir_attrs ba;
      memset(&ba, 0, sizeof ba);
      ba.dimensions = ints(g, 1, &last);
      ir_id bv = param(g, &bs, false);
      y = binop(g, IR_OP_ADD, y, add(g, IR_OP_BROADCAST, &bv, 1, &ba, NULL, 0, &ds, false));
      if (y != IR_NONE && g->nv < MAXV) g->vals[g->nv++] = y;
    }
    if (y == IR_NONE || pick(g, 2)) return;
  }
}

/* ---- control flow (RG_CONTROL) ---------------------------------------- */

static ir_id gte(gen *g, ir_id t, int k) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.index = k;
  return add(g, IR_OP_GET_TUPLE_ELEMENT, &t, 1, &a, NULL, 0, NULL, false);
}

static ir_id cmpc(gen *g, ir_cmp_dir dir, ir_id x, ir_id y) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.cmp_dir = dir;
  return add(g, IR_OP_COMPARE, (ir_id[]){x, y}, 2, &a, NULL, 0, NULL, false);
}

/* A computation of one parameter of shape s: op(p) (copy: p * p). */
static ir_comp_id unary_comp(gen *g, ir_op op, const ir_shape *s) {
  ir_comp_id cc = ir_comp_add(g->m, ir_unique_name(g->m, "branch")), save = g->c;
  g->c = cc;
  ir_id p = tc_param(g->m, cc, s, 0);
  ir_id r = op == IR_OP_COPY ? binop(g, IR_OP_MULTIPLY, p, p)
                             : add(g, op, &p, 1, NULL, NULL, 0, NULL, false);
  g->c = save;
  ir_comp_get(g->m, cc)->root = r;
  ir_comp_finish(g->m, cc);
  return cc;
}

/* The loop's condition on (i, x): i < 6 and max(x) > -2; its body:
 * (i + 1, x * 0.5 + 0.25). */
static ir_comp_id loop_comp(gen *g, const ir_shape *ss, bool body) {
  ir_comp_id cc = ir_comp_add(g->m, ir_unique_name(g->m, body ? "body" : "cond")), save = g->c;
  g->c = cc;
  ir_id p = tc_param(g->m, cc, ss, 0), i = gte(g, p, 0), x = gte(g, p, 1), r;
  const ir_shape *xs = shp(g, x);
  if (body) {
    ir_id y = binc(g, IR_OP_ADD, binc(g, IR_OP_MULTIPLY, x, 0.5), 0.25);
    r = add(g, IR_OP_TUPLE, (ir_id[]){binop(g, IR_OP_ADD, i, scalar(g, IR_S32, 1)), y}, 2, NULL,
            NULL, 0, NULL, false);
  } else {
    r = cmpc(g, IR_CMP_LT, i, scalar(g, IR_S32, 6));
    if (xs->rank > 0) {
      ir_comp_id rc = reducer(g, IR_OP_MAXIMUM, xs->type);
      ir_attrs a;
      memset(&a, 0, sizeof a);
      int64_t d[IR_MAX_RANK];
      for (int k = 0; k < xs->rank; k++) d[k] = k;
      a.dimensions = ints(g, xs->rank, d);
      ir_id m = add(g, IR_OP_REDUCE, (ir_id[]){x, scalar(g, xs->type, -INFINITY)}, 2, &a, &rc, 1,
                    NULL, false);
      r = binop(g, IR_OP_AND, r, cmpc(g, IR_CMP_GT, m, scalar(g, xs->type, -2)));
    }
  }
  g->c = save;
  ir_comp_get(g->m, cc)->root = r;
  ir_comp_finish(g->m, cc);
  return cc;
}

/* A while whose trip count (0 to 6) the data decides (a fresh s32
 * parameter n and the values of x), a conditional by an s32 index from n
 * (-1 to 2 over three branches: -1 runs the last), one by a pred, a call
 * and a map, each pushed into the pool. */
static void gen_control(gen *g) {
  ir_id x = find(g, is_float);
  if (x == IR_NONE) {
    ir_shape s = rand_shape(g, IR_F32, pick(g, 3));
    x = param(g, &s, true);
  }
  ir_shape xs = *shp(g, x), ns = ir_shape_scalar(IR_S32);
  ir_id n = param(g, &ns, false);
  ir_id init = add(g, IR_OP_TUPLE, (ir_id[]){binop(g, IR_OP_AND, n, scalar(g, IR_S32, 7)), x}, 2,
                   NULL, NULL, 0, NULL, false);
  const ir_shape *ss = shp(g, init);
  ir_comp_id wc[2] = {loop_comp(g, ss, false), loop_comp(g, ss, true)};
  ir_id w = add(g, IR_OP_WHILE, &init, 1, NULL, wc, 2, NULL, false);
  ir_id y = gte(g, w, 1);
  if (g->nv < MAXV) g->vals[g->nv++] = y;
  ir_id sel = binc(g, IR_OP_SUBTRACT, binop(g, IR_OP_AND, n, scalar(g, IR_S32, 3)), 1);
  ir_comp_id br[3] = {unary_comp(g, IR_OP_NEGATE, &xs), unary_comp(g, IR_OP_COPY, &xs),
                      unary_comp(g, IR_OP_ABS, &xs)};
  ir_id r = add(g, IR_OP_CONDITIONAL, (ir_id[]){sel, y, x, y}, 4, NULL, br, 3, NULL, true);
  ir_id p = cmpc(g, IR_CMP_GT, n, scalar(g, IR_S32, 0));
  ir_comp_id pb[2] = {br[2], br[0]};
  ir_id r2 = add(g, IR_OP_CONDITIONAL, (ir_id[]){p, r, x}, 3, NULL, pb, 2, NULL, true);
  ir_comp_id mc = reducer(g, IR_OP_MAXIMUM, xs.type);
  add(g, IR_OP_MAP, (ir_id[]){r2, y}, 2, NULL, &mc, 1, NULL, true);
  ir_comp_id fc = ir_comp_add(g->m, ir_unique_name(g->m, "called")), save = g->c;
  g->c = fc;
  ir_id a = tc_param(g->m, fc, &xs, 0), b = tc_param(g->m, fc, &xs, 1);
  ir_id s = binop(g, IR_OP_SUBTRACT, a, b);
  g->c = save;
  ir_comp_get(g->m, fc)->root = s;
  ir_comp_finish(g->m, fc);
  add(g, IR_OP_CALL, (ir_id[]){r2, x}, 2, NULL, &fc, 1, NULL, true);
}

static void step(gen *g) {
  unsigned fam[10] = {RG_ARITH | RG_TRANSC, RG_ARITH | RG_MINMAX | RG_INT, RG_MINMAX, RG_MOVE,
                      RG_MOVE, RG_REDUCE, RG_DOT, RG_CONV, RG_CMPSEL, RG_CONVERT};
  /* RG_INDEX: one step in three is an indexing step (on a value that takes it) */
  for (int tries = 0; on(g, RG_INDEX) && tries < 8 && (tries > 0 || pick(g, 3) == 0); tries++) {
    ir_id v = rg_index_step(g->m, g->c, g->vals[pick(g, g->nv)], &g->rs, &g->nparams);
    if (v == IR_NONE) continue;
    if (g->nv < MAXV) g->vals[g->nv++] = v;
    if (g->nix < (int)COUNTOF(g->ixv)) g->ixv[g->nix++] = v;
    return;
  }
  for (int tries = 0; tries < 20; tries++) {
    /* RG_ATTN draws from 11 (other streams stay as they were) */
    int k = pick(g, on(g, RG_ATTN) ? 11 : 10);
    if (k == 10) {
      int before = g->nv;
      gen_attn(g);
      if (g->nv != before) return;
      continue;
    }
    if (!on(g, fam[k])) continue;
    int before = g->nv;
    switch (k) {
    case 0: gen_unary(g); break;
    case 1: gen_binary(g); break;
    case 2: gen_clamp(g); break;
    case 3: case 4: gen_move(g); break;
    case 5: gen_reduce(g); break;
    case 6: gen_dot(g); break;
    case 7: gen_conv(g); break;
    case 8: gen_cmpsel(g); break;
    default: gen_convert(g); break;
    }
    if (g->nv != before) return;
  }
}

void rg_options_init(rg_options *o) {
  memset(o, 0, sizeof *o);
  o->ops = RG_ALL;
}

ir_module *rg_generate(uint64_t seed, uint64_t index, const rg_options *opts) {
  if (opts && (opts->ops & RG_SORT)) return rg_generate_sort(seed, index);
  rg_options o;
  rg_options_init(&o);
  if (opts) o = *opts;
  if (!o.ops) o.ops = RG_ALL;
  if (o.max_elems <= 0) o.max_elems = 40000;
  if (o.max_macs <= 0) o.max_macs = (int64_t)1 << 21;
  gen g;
  memset(&g, 0, sizeof g);
  g.rs = seed * 0x2545F4914F6CDD1Dull + index * 0x9E3779B97F4A7C15ull + 1;
  g.o = &o;
  char name[48];
  snprintf(name, sizeof name, "random_%llu_%llu", (unsigned long long)seed,
           (unsigned long long)index);
  g.m = ir_module_create(name);
  g.c = ir_comp_add(g.m, "main");
  g.m->entry = g.c;
  int np = 1 + pick(&g, 2);
  for (int p = 0; p < np; p++) {
    ir_shape s = rand_shape(&g, rand_type(&g), pick(&g, 4));
    if (p > 0 && pick(&g, 2)) s = *shp(&g, g.vals[0]);
    param(&g, &s, true);
  }
  int steps = o.steps > 0 ? o.steps : 6 + pick(&g, 15);
  for (int k = 0; on(&g, RG_NORM) && k < 1 + (pick(&g, 3) == 0); k++) gen_norm(&g);
  if (on(&g, RG_ATTN)) gen_attn(&g);
  if (on(&g, RG_CONTROL)) gen_control(&g);
  for (int i = 0; i < steps; i++) step(&g);
  ir_id last = g.vals[g.nv - 1], root = last;
  if (g.nix > 0) { /* the indexing results and the last value */
    ir_id ops[8];
    int n = 0;
    for (int k = 0; k < g.nix; k++)
      if (g.ixv[k] != last) ops[n++] = g.ixv[k];
    ops[n++] = last;
    root = add(&g, IR_OP_TUPLE, ops, n, NULL, NULL, 0, NULL, false);
  } else if (g.nv > 1 && pick(&g, 2)) {
    ir_id ops[2] = {last, g.vals[pick(&g, g.nv - 1)]};
    root = add(&g, IR_OP_TUPLE, ops, 2, NULL, NULL, 0, NULL, false);
  }
  tc_finish(g.m, g.c, root, "randgraph", index);
  return g.m;
}

int rg_nparams(const ir_module *m) {
  return ir_comp_get((ir_module *)m, m->entry)->nparams;
}

ir_literal **rg_args(const ir_module *m, arena *a, uint64_t seed) {
  return rg_args_ex(m, a, seed, false);
}

static float special(gen *g) {
  static const uint32_t bits[] = {0x7F800000u, 0xFF800000u, 0x80000000u, 0x7FC01234u,
                                  0xFFC00000u, 0x00400000u, 0x80012345u, 0x00800000u};
  uint32_t u = bits[pick(g, (int)COUNTOF(bits))];
  float f;
  memcpy(&f, &u, 4);
  return f;
}

ir_literal **rg_args_ex(const ir_module *m, arena *a, uint64_t seed, bool specials) {
  const ir_comp *c = ir_comp_get((ir_module *)m, m->entry);
  ir_literal **args = arena_array(a, (size_t)(c->nparams > 0 ? c->nparams : 1), sizeof *args);
  gen g;
  memset(&g, 0, sizeof g);
  g.rs = seed * 0x9E3779B97F4A7C15ull + 7;
  for (int p = 0; p < c->nparams; p++) {
    const ir_shape *s = c->insts.v[c->params[p]].shape;
    ir_literal *l = ir_literal_create(a, s);
    int64_t n = ir_shape_count(s);
    for (int64_t i = 0; i < n; i++) {
      if (ir_type_is_float(s->type)) {
        int v = pick(&g, 10) == 0 ? 0 : pick(&g, 2049) - 1024;
        if (specials && pick(&g, 16) == 0) {
          float f = special(&g);
          if (s->type == IR_F32) memcpy((float *)l->data + i, &f, 4);
          else ((uint16_t *)l->data)[i] = ir_f32_to_bf16(f);
          continue;
        }
        ir_literal_set_f64(l, i, v / 256.0);
      } else if (s->type == IR_S32) {
        ir_literal_set_i64(l, i, pick(&g, 4) ? pick(&g, 2001) - 1000 : pick(&g, 40) - 4);
      } else {
        ir_literal_set_i64(l, i, pick(&g, 2));
      }
    }
    args[p] = l;
  }
  return args;
}
