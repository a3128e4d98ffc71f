/* cpu_check.c: see cpu_check.h. */
#include "tests/llvm/cpu_check.h"

#include <math.h>
#include <stdio.h>

static const src_loc noloc = {0};

tmod tm_new(const char *name) {
  tmod t;
  t.m = ir_module_create(name);
  t.c = ir_comp_add(t.m, "main");
  t.m->entry = t.c;
  return t;
}

ir_id tm_param_shape(tmod *t, int n, const ir_shape *s) {
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_PARAMETER;
  in.shape = *s;
  in.a.parameter_number = n;
  return ir_inst_add(t->m, t->c, &in);
}

ir_id tm_param(tmod *t, int n, ir_type ty, int rank, const int64_t *dims) {
  ir_shape s = ir_shape_array(ty, rank, dims);
  return tm_param_shape(t, n, &s);
}

ir_id tm_const_scalar(tmod *t, ir_type ty, double v) {
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_CONSTANT;
  in.shape = ir_shape_scalar(ty);
  in.a.literal = ir_literal_create(t->m->arena, &in.shape);
  ir_literal_set_f64(in.a.literal, 0, v);
  return ir_inst_add(t->m, t->c, &in);
}

ir_id tm_const_f32(tmod *t, float v) { return tm_const_scalar(t, IR_F32, v); }

ir_id tm_op(tmod *t, ir_op op, const ir_id *ops, int nops, const ir_attrs *a) {
  return ir_build(t->m, t->c, op, ops, nops, a, NULL, 0, noloc);
}

ir_id tm_call(tmod *t, ir_op op, const ir_id *ops, int nops, const ir_attrs *a, ir_comp_id callee) {
  return ir_build(t->m, t->c, op, ops, nops, a, &callee, 1, noloc);
}

ir_comp_id tm_binary_comp(tmod *t, ir_op op, ir_type ty) {
  ir_comp_id saved = t->c;
  ir_comp_id c = ir_comp_add(t->m, ir_unique_name(t->m, "reducer"));
  t->c = c;
  ir_id p0 = tm_param(t, 0, ty, 0, NULL), p1 = tm_param(t, 1, ty, 0, NULL);
  ir_id ops[2] = {p0, p1};
  ir_id r = tm_op(t, op, ops, 2, NULL);
  ir_comp_get(t->m, c)->root = r;
  ir_comp_finish(t->m, c);
  t->c = saved;
  return c;
}

void tm_finish(tmod *t, ir_id root) {
  ir_comp_get(t->m, t->c)->root = root;
  for (int i = 0; i < t->m->comps.n; i++) ir_comp_finish(t->m, i);
}

ir_ints tm_ints(arena *a, int n, const int64_t *v) {
  ir_ints r;
  r.n = n;
  r.v = n ? arena_dup(a, v, sizeof(int64_t) * (size_t)n) : NULL;
  return r;
}

static uint64_t next(uint64_t *s) {
  *s += 0x9e3779b97f4a7c15ull;
  uint64_t z = *s;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void tm_fill(ir_literal *l, uint64_t seed, bool specials) {
  if (l->shape.type == IR_TUPLE) {
    for (int i = 0; i < l->shape.ntuple; i++) tm_fill(l->elems[i], seed * 31 + (uint64_t)i, specials);
    return;
  }
  uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;
  int64_t n = ir_shape_count(&l->shape);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = next(&s);
    switch (l->shape.type) {
    case IR_PRED: ir_literal_set_i64(l, i, (int64_t)(r & 1)); break;
    case IR_S8: ir_literal_set_i64(l, i, (int64_t)(int8_t)r); break;
    case IR_S32: {
      int64_t v = (r >> 8) % 7 == 0 ? (int64_t)(int32_t)r : (int64_t)(r % 41) - 20;
      if (specials && r % 53 == 0) v = INT32_MIN;
      if (specials && r % 59 == 0) v = -1;
      ir_literal_set_i64(l, i, v);
      break;
    }
    case IR_S16: case IR_S64: case IR_U8: case IR_U16: case IR_U32: case IR_U64:
      /* small values of either sign (wrapped into unsigned types), and
       * every seventh a full bit pattern */
      ir_literal_set_i64(l, i, (r >> 8) % 7 == 0 ? (int64_t)r : (int64_t)(r % 41) - 20);
      break;
    default: {
      double v = ((double)(r >> 11) / 9007199254740992.0) * 8.0 - 4.0;
      if (specials) {
        int k = (int)((r >> 3) % 40);
        if (k == 0) v = 0.0;
        if (k == 1) v = -0.0;
        if (k == 2) v = INFINITY;
        if (k == 3) v = -INFINITY;
        if (k == 4) v = NAN;
        if (k == 5) v = 1.5;
        if (k == 6) v = -2.5;
      }
      ir_literal_set_f64(l, i, v);
      break;
    }
    }
  }
}

ir_literal **tm_args(tmod *t, arena *a, uint64_t seed, bool specials) {
  const ir_comp *c = ir_comp_get(t->m, t->m->entry);
  ir_literal **args = arena_array(a, (size_t)c->nparams + 1, sizeof *args);
  for (int p = 0; p < c->nparams; p++) {
    args[p] = ir_literal_create(a, c->insts.v[c->params[p]].shape);
    tm_fill(args[p], seed + (uint64_t)p * 1000003u, specials);
  }
  return args;
}

ir_literal **tm_int_args(tmod *t, arena *a, uint64_t seed) {
  ir_literal **args = tm_args(t, a, seed, false);
  const ir_comp *c = ir_comp_get(t->m, t->m->entry);
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 7;
  for (int p = 0; p < c->nparams; p++) {
    if (!ir_type_is_float(args[p]->shape.type)) continue;
    int64_t n = ir_shape_count(&args[p]->shape);
    for (int64_t i = 0; i < n; i++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      ir_literal_set_f64(args[p], i, (double)(int64_t)(s % 7) - 3.0);
    }
  }
  return args;
}

static bool leaf_agree(const ir_literal *a, const ir_literal *b, double tol, const char *what) {
  if (!ir_shape_equal(&a->shape, &b->shape)) {
    fprintf(stderr, "%s: shapes differ\n", what);
    return false;
  }
  int64_t n = ir_shape_count(&a->shape);
  bool fl = ir_type_is_float(a->shape.type);
  int es = ir_type_size(a->shape.type);
  for (int64_t i = 0; i < n; i++) {
    if (memcmp((const char *)a->data + i * es, (const char *)b->data + i * es, (size_t)es) == 0) continue;
    if (fl) {
      double x = ir_literal_get_f64(a, i), y = ir_literal_get_f64(b, i);
      if (isnan(x) && isnan(y)) continue;
      if (tol > 0 && fabs(x - y) <= tol * (1 + fabs(x))) continue;
      fprintf(stderr, "%s: element %lld: expected %.9g, got %.9g (%s)\n", what, (long long)i, x, y,
              ir_type_name(a->shape.type));
    } else {
      fprintf(stderr, "%s: element %lld: expected %lld, got %lld (%s)\n", what, (long long)i,
              (long long)ir_literal_get_i64(a, i), (long long)ir_literal_get_i64(b, i),
              ir_type_name(a->shape.type));
    }
    return false;
  }
  return true;
}

bool tm_agree(const ir_literal *a, const ir_literal *b, double tol, const char *what) {
  if (a->shape.type == IR_TUPLE || b->shape.type == IR_TUPLE) {
    if (a->shape.type != b->shape.type || a->shape.ntuple != b->shape.ntuple) {
      fprintf(stderr, "%s: tuple shapes differ\n", what);
      return false;
    }
    for (int i = 0; i < a->shape.ntuple; i++)
      if (!tm_agree(a->elems[i], b->elems[i], tol, what)) return false;
    return true;
  }
  return leaf_agree(a, b, tol, what);
}

bool tm_check(tmod *t, ir_literal **args, cpu_numerics n, int threads, double tol, const char *what) {
  cpu_options o;
  cpu_options_init(&o);
  o.numerics = n;
  o.threads = threads;
  return tm_check_opts(t, args, &o, tol, what);
}

bool tm_check_opts(tmod *t, ir_literal **args, const cpu_options *o, double tol, const char *what) {
  diag *d = diag_create();
  int nerr = ir_verify(t->m, d);
  if (nerr) {
    fprintf(stderr, "%s: module does not verify:\n%s", what, diag_text(d));
    diag_destroy(d);
    return false;
  }
  diag_destroy(d);
  const ir_comp *c = ir_comp_get(t->m, t->m->entry);
  arena *a = arena_create();
  char err[512];
  ir_literal *ref = NULL, *got = NULL;
  base_status st = ir_eval(t->m, NULL, args, c->nparams, a, &ref, err, sizeof err);
  if (st != ST_OK) {
    fprintf(stderr, "%s: ir_eval: %s\n", what, err);
    arena_destroy(a);
    return false;
  }
  cpu_exe *x = NULL;
  st = cpu_compile(t->m, o, &x, err, sizeof err);
  if (st != ST_OK) {
    fprintf(stderr, "%s: cpu_compile: %s\n", what, err);
    arena_destroy(a);
    return false;
  }
  st = cpu_execute(x, args, c->nparams, a, &got, err, sizeof err);
  bool ok = st == ST_OK;
  if (!ok) fprintf(stderr, "%s: cpu_execute: %s\n", what, err);
  /* Run twice: buffers are reused across runs and must give the same result. */
  for (int rep = 0; ok && rep < 2; rep++) {
    if (rep == 1) {
      ir_literal *again = NULL;
      ok = cpu_execute(x, args, c->nparams, a, &again, err, sizeof err) == ST_OK &&
           tm_agree(got, again, 0, what);
      if (!ok) fprintf(stderr, "%s: second run differs\n", what);
    } else {
      ok = tm_agree(ref, got, tol, what);
    }
  }
  cpu_exe_destroy(x);
  arena_destroy(a);
  return ok;
}
