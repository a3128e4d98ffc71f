/* tpu_check.c: see tpu_check.h. */
#include "tests/tpu/tpu_check.h"

#include <math.h>
#include <stdlib.h>

#include "frontend/frontend.h"

static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Fills the array leaves of l (a tuple's depth first) from the stream s. */
static void fill(ir_literal *l, uint64_t *s) {
  const ir_shape *sh = &l->shape;
  if (sh->type == IR_TUPLE) {
    for (int k = 0; k < sh->ntuple; k++) fill(l->elems[k], s);
    return;
  }
  int64_t n = ir_shape_count(sh);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = next(s);
    if (ir_type_is_float(sh->type)) {
      float f = (float)((double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0);
      ir_literal_set_f64(l, i, (double)ir_bf16_to_f32(ir_f32_to_bf16(f)));
    } else if (sh->type == IR_PRED) {
      ir_literal_set_i64(l, i, (int64_t)(r & 1));
    } else {
      ir_literal_set_i64(l, i, (int64_t)(r % 16) - 8);
    }
  }
}

ir_literal **tc_args(const ir_module *m, arena *a, uint64_t seed) {
  const ir_comp *c = &m->comps.v[m->entry];
  ir_literal **args = arena_array(a, (size_t)c->nparams + 1, sizeof(ir_literal *));
  uint64_t s = seed;
  for (int p = 0; p < c->nparams; p++) {
    args[p] = ir_literal_create(a, c->insts.v[c->params[p]].shape);
    fill(args[p], &s);
  }
  return args;
}

ir_module *tc_parse(const char *name, const char *text) {
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo(name, text, strlen(text), d);
  if (!m) {
    fprintf(stderr, "%s", diag_text(d));
    base_die("test module %s does not parse", name);
  }
  diag_destroy(d);
  return m;
}

/* Largest contraction length of a dot or convolution (0: none); *rmax:
 * the most elements an f32 reduce folds into one output. */
static int64_t scan_ops(const ir_module *m, bool *mxu, bool *trans, int64_t *rmax) {
  int64_t kmax = 0;
  for (int c = 0; c < m->comps.n; c++)
    for (int i = 0; i < m->comps.v[c].insts.n; i++) {
      const ir_inst *in = &m->comps.v[c].insts.v[i];
      ir_op op = in->op;
      if (op == IR_OP_DOT || op == IR_OP_CONVOLUTION) {
        *mxu = true;
        const ir_shape *l = m->comps.v[c].insts.v[in->ops[0]].shape;
        const ir_shape *r = m->comps.v[c].insts.v[in->ops[1]].shape;
        int64_t k = 1;
        if (op == IR_OP_DOT)
          for (int j = 0; j < in->a->lhs_contracting.n; j++) k *= l->dims[in->a->lhs_contracting.v[j]];
        else {
          k = r->dims[in->a->conv.k_in];
          for (int j = 0; j < in->a->conv.nspatial; j++) k *= r->dims[in->a->conv.k_spatial[j]];
        }
        if (k > kmax) kmax = k;
      }
      if (op == IR_OP_REDUCE && in->shape->type == IR_F32) {
        int64_t r = ir_shape_count(m->comps.v[c].insts.v[in->ops[0]].shape) /
                    (ir_shape_count(in->shape) ? ir_shape_count(in->shape) : 1);
        if (r > *rmax) *rmax = r;
      }
      /* the vmath kernels (docs/numerics.md): double functions rounded once */
      if (op == IR_OP_EXP || op == IR_OP_LOG || op == IR_OP_TANH || op == IR_OP_LOGISTIC ||
          op == IR_OP_RSQRT || op == IR_OP_EXPM1 || op == IR_OP_LOG1P || op == IR_OP_SINE ||
          op == IR_OP_COSINE || op == IR_OP_CBRT || op == IR_OP_POWER || op == IR_OP_ATAN2)
        *trans = true;
    }
  return kmax;
}

static int compare(const ir_literal *got, const ir_literal *ref, double tol, double rel,
                   const char *name, int leaf) {
  if (ref->shape.type == IR_TUPLE) {
    for (int k = 0; k < ref->shape.ntuple; k++)
      if (compare(got->elems[k], ref->elems[k], tol, rel, name, leaf * 10 + k)) return 1;
    return 0;
  }
  int64_t n = ir_shape_count(&ref->shape);
  bool fl = ir_type_is_float(ref->shape.type);
  for (int64_t i = 0; i < n; i++) {
    if (fl) {
      double g = ir_literal_get_f64(got, i), e = ir_literal_get_f64(ref, i);
      if ((isnan(g) && isnan(e)) || g == e) continue;
      if (fabs(g - e) <= tol * (1 + fabs(e)) || fabs(g - e) <= rel * fabs(e)) continue;
      printf("MISMATCH %s result %d index %lld: got %.9g expected %.9g\n", name, leaf,
             (long long)i, g, e);
      return 1;
    }
    if (ir_literal_get_i64(got, i) != ir_literal_get_i64(ref, i)) {
      printf("MISMATCH %s result %d index %lld: got %lld expected %lld\n", name, leaf,
             (long long)i, (long long)ir_literal_get_i64(got, i),
             (long long)ir_literal_get_i64(ref, i));
      return 1;
    }
  }
  return 0;
}

int tc_check(const ir_module *m, const char *target, ir_precision prec, uint64_t seed,
             double tol, const char *name) {
  arena *a = arena_create();
  ir_literal **args = tc_args(m, a, seed);
  const ir_comp *c = &m->comps.v[m->entry];
  ir_literal *ref = NULL, *got = NULL;
  char err[4096];
  int rc = 0;
  if (ir_eval(m, NULL, args, c->nparams, a, &ref, err, sizeof err) != ST_OK) {
    printf("SKIP %s (evaluator: %s)\n", name, err);
    arena_destroy(a);
    return 2;
  }
  tpu_run_report r = {0};
  r.target = target;
  r.precision = prec;
  if (tpu_run_report_exec(m, &r, args, c->nparams, a, &got, err, sizeof err) != ST_OK) {
    printf("FAIL %s on %s: %s\n", name, target, err);
    arena_destroy(a);
    return 1;
  }
  bool mxu = false, trans = false;
  int64_t rmax = 0, kmax = scan_ops(m, &mxu, &trans, &rmax);
  double rel = trans ? 4.8e-7 : 0;
  if (tol < 0)
    tol = mxu ? (prec == IR_PREC_DEFAULT ? 1.0 / 128 : 1e-5) * (1 + sqrt((double)kmax)) : 0;
  /* f32 sums fold in the backend's row or tree order, not sequentially */
  if (rmax > 1 && tol < 0x1p-20 * (1 + sqrt((double)rmax))) tol = 0x1p-20 * (1 + sqrt((double)rmax));
  rc = compare(got, ref, tol, rel, name, 0);
  arena_destroy(a);
  return rc;
}
