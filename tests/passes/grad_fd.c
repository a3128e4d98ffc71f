/* grad_fd.c: the finite-difference check of grad_fd.h. */
#include "tests/passes/grad_fd.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"

void gfd_options_init(gfd_options *o) {
  memset(o, 0, sizeof *o);
  o->lo = -1;
  o->hi = 1;
  o->seed = 1;
  o->max_elems = 48;
}

static double unit(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) / (double)(1ull << 53);
}

static void fill(ir_literal *l, uint64_t *s, double lo, double hi) {
  int64_t n = ir_shape_count(&l->shape);
  for (int64_t i = 0; i < n; i++) {
    double u = unit(s);
    if (ir_type_is_float(l->shape.type)) ir_literal_set_f64(l, i, lo + (hi - lo) * u);
    else if (l->shape.type == IR_PRED) ir_literal_set_i64(l, i, u < 0.5);
    else ir_literal_set_i64(l, i, (int64_t)(u * 4));
  }
}

ir_literal **gfd_inputs(arena *a, const ir_module *m, const gfd_options *o) {
  const ir_comp *e = &m->comps.v[m->entry];
  ir_literal **in = arena_array(a, (size_t)e->nparams + 1, sizeof *in);
  uint64_t s = o->seed;
  for (int p = 0; p < e->nparams; p++) {
    const ir_shape *sh = e->insts.v[e->params[p]].shape;
    if (sh->type == IR_TUPLE) return NULL;
    in[p] = ir_literal_create(a, sh);
    fill(in[p], &s, o->lo, o->hi);
  }
  return in;
}

/* The array leaves of literal l (or of shape s), depth first, appended. */
static void leaves(const ir_literal *l, const ir_literal **out, int *n) {
  if (l->shape.type != IR_TUPLE) {
    out[(*n)++] = l;
    return;
  }
  for (int k = 0; k < l->shape.ntuple; k++) leaves(l->elems[k], out, n);
}

static int shape_leaves(const ir_shape *s, const ir_shape **out, int n) {
  if (s->type != IR_TUPLE) {
    if (out) out[n] = s;
    return n + 1;
  }
  for (int k = 0; k < s->ntuple; k++) n = shape_leaves(&s->tuple[k], out, n);
  return n;
}

/* S = sum of ct * out over the floating-point results (leaves, depth
 * first), and A = sum of |ct * out|. */
static void dot_results(const ir_literal *out, ir_literal *const *ct, int nres, double *S, double *A) {
  *S = *A = 0;
  const ir_literal *lv[256];
  int n = 0;
  leaves(out, lv, &n);
  for (int k = 0; k < nres && k < n; k++) {
    const ir_literal *r = lv[k];
    if (!ir_type_is_float(r->shape.type)) continue;
    int64_t ne = ir_shape_count(&r->shape);
    for (int64_t i = 0; i < ne; i++) {
      double v = ir_literal_get_f64(r, i) * ir_literal_get_f64(ct[k], i);
      *S += v;
      *A += fabs(v);
    }
  }
}

static double unit_roundoff(ir_type t) {
  return t == IR_F64 ? 0x1p-53 : t == IR_F32 ? 0x1p-24 : t == IR_F16 ? 0x1p-11 : 0x1p-8;
}

/* The unit roundoff of the narrowest floating-point type any instruction
 * of m computes: the precision finite differences can resolve. */
static double module_roundoff(const ir_module *m) {
  double u = 0x1p-53;
  for (int c = 0; c < m->comps.n; c++)
    for (int i = 0; i < m->comps.v[c].insts.n; i++) {
      ir_type t = m->comps.v[c].insts.v[i].shape->type;
      if (ir_type_is_float(t)) u = fmax(u, unit_roundoff(t));
    }
  return u;
}

typedef struct fd {
  const ir_module *m;
  ir_literal **in, **ct;
  int nparams, nres;
  arena *a;
  double s0; /* S at the unperturbed inputs */
  double eps; /* module_roundoff */
  int nonfinite; /* elements whose differences were not finite */
  int kinks;
  char *msg;
  size_t msglen;
} fd;

static bool eval_s(fd *f, double *S, double *A) {
  char err[512];
  ir_literal *out;
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  if (ir_eval(f->m, &eo, f->in, f->nparams, f->a, &out, err, sizeof err) != ST_OK) {
    snprintf(f->msg, f->msglen, "evaluator: %s", err);
    return false;
  }
  dot_results(out, f->ct, f->nres, S, A);
  return true;
}

/* Central and one-sided differences of S at element i of x, step h
 * relative to max(1, |x|), and the tolerance for gradient an. */
typedef struct diffs {
  double central, fw, bw, tol;
} diffs;

static bool differences(fd *f, ir_literal *x, int64_t i, double rel, double an, diffs *out) {
  double x0 = ir_literal_get_f64(x, i), h = rel * fmax(1, fabs(x0));
  double sp, sm, ap, am;
  ir_literal_set_f64(x, i, x0 + h);
  double xp = ir_literal_get_f64(x, i);
  bool ok = eval_s(f, &sp, &ap);
  ir_literal_set_f64(x, i, x0 - h);
  double xm = ir_literal_get_f64(x, i);
  ok = ok && eval_s(f, &sm, &am);
  ir_literal_set_f64(x, i, x0);
  out->central = (sp - sm) / (xp - xm);
  out->fw = (sp - f->s0) / (xp - x0);
  out->bw = (f->s0 - sm) / (x0 - xm);
  out->tol = 2e-3 * (1 + fabs(an)) + 16 * f->eps * fmax(ap, am) / (xp - xm);
  return ok;
}

/* Compares parameter p's gradient literal gl element by element: with
 * steps 1e-2, then (while that misses) 4, 16 and 64 times smaller, relative
 * to max(1, |x|), the central difference D_t, or the Richardson
 * extrapolation (16 D_t - D_t-1) / 15 of the last two, must match. A point where the function has a kink within the
 * step (the one-sided differences disagree by more than 4 tol) passes
 * when the gradient matches one of them within 2 tol (the side without
 * the kink), and is counted in f->kinks. */
static gfd_outcome check_param(fd *f, int p, const ir_literal *gl, int max_elems, int *checked) {
  ir_literal *x = f->in[p];
  int64_t n = ir_shape_count(&x->shape);
  int64_t step = max_elems > 0 && n > max_elems ? (n + max_elems - 1) / max_elems : 1;
  for (int64_t i = 0; i < n; i += step) {
    double an = ir_literal_get_f64(gl, i);
    bool ok = false, kink = false;
    diffs d = {0, 0, 0, 0};
    double first = 0;
    for (int t = 0; t < 4 && !ok; t++) {
      if (!differences(f, x, i, 1e-2 / (1 << (2 * t)), an, &d)) return GFD_SKIP;
      if (!isfinite(d.central) || !isfinite(d.tol)) break;
      ok = fabs(d.central - an) <= d.tol;
      /* Richardson: the h^2 terms of the two steps (ratio 4) cancel */
      if (t > 0 && !ok) ok = fabs((16 * d.central - first) / 15 - an) <= d.tol;
      first = d.central;
      kink = kink || (fabs(d.fw - d.bw) > 2 * d.tol && (fabs(d.fw - an) <= 2 * d.tol || fabs(d.bw - an) <= 2 * d.tol));
    }
    if (!isfinite(d.central) || !isfinite(d.tol)) { /* overflow near x: nothing to compare */
      f->nonfinite++;
      continue;
    }
    if (!ok && kink) {
      ok = true;
      f->kinks++;
    }
    if (!ok) {
      snprintf(f->msg, f->msglen,
               "parameter %d element %lld: vjp %.9g, finite difference %.9g (tolerance %.3g; one-sided %.9g, %.9g)",
               p, (long long)i, an, d.central, d.tol, d.fw, d.bw);
      return GFD_FAIL;
    }
    (*checked)++;
  }
  return GFD_PASS;
}

/* m with every f32 value made f64 (its HLO text with f32[ read as f64[),
 * or NULL when that does not read back as a module. Other types stay. */
static ir_module *widen_f64(const ir_module *m) {
  strbuf b;
  sb_init(&b);
  ir_print_module(&b, m);
  for (size_t i = 0; i + 4 <= b.len; i++)
    if (!memcmp(b.s + i, "f32[", 4) && (i == 0 || !isalnum((unsigned char)b.s[i - 1]))) {
      b.s[i + 1] = '6';
      b.s[i + 2] = '4';
    }
  bool any = strstr(sb_str(&b), "f64[") != NULL;
  diag *d = diag_create();
  ir_module *w = any ? fe_parse_hlo("widened.hlo", sb_str(&b), b.len, d) : NULL;
  diag_destroy(d);
  sb_free(&b);
  return w;
}

static gfd_outcome check_typed(const ir_module *m, const gfd_options *o, char *msg, size_t msglen,
                               int *out_checked);

gfd_outcome gfd_check_f64(const ir_module *m, const gfd_options *o, char *msg, size_t msglen,
                          int *out_checked, bool *out_f64) {
  if (out_f64) *out_f64 = false;
  ir_module *w = widen_f64(m);
  if (w) {
    gfd_outcome r = check_typed(w, o, msg, msglen, out_checked);
    ir_module_destroy(w);
    /* A module the f64 evaluator or transformation refuses is checked as
     * it is; a failure in f64 is a failure. */
    if (r != GFD_SKIP) {
      if (out_f64) *out_f64 = true;
      return r;
    }
  }
  return check_typed(m, o, msg, msglen, out_checked);
}

gfd_outcome gfd_check(const ir_module *m, const gfd_options *o, char *msg, size_t msglen, int *out_checked) {
  return gfd_check_f64(m, o, msg, msglen, out_checked, NULL);
}

static gfd_outcome check_typed(const ir_module *m, const gfd_options *o, char *msg, size_t msglen,
                               int *out_checked) {
  int checked = 0;
  if (out_checked) *out_checked = 0;
  ir_grad_options go;
  ir_grad_options_init(&go);
  go.remat = o->remat;
  go.wrt = o->wrt;
  go.nwrt = o->nwrt;
  ir_module *v = NULL;
  char err[512];
  if (ir_grad_module(m, &go, &v, err, sizeof err) != ST_OK) {
    snprintf(msg, msglen, "grad: %s", err);
    return GFD_SKIP;
  }
  arena *a = arena_create();
  fd f = {m, gfd_inputs(a, m, o), NULL, m->comps.v[m->entry].nparams, 0, a, 0, module_roundoff(m), 0, 0, msg, msglen};
  gfd_outcome res = GFD_SKIP;
  if (!f.in) {
    snprintf(msg, msglen, "a tuple parameter");
    goto done;
  }
  const ir_comp *e = &m->comps.v[m->entry];
  const ir_shape *rs = e->insts.v[e->root].shape;
  f.nres = shape_leaves(rs, NULL, 0);
  if (f.nres > 256) {
    snprintf(msg, msglen, "more than 256 results");
    goto done;
  }
  const ir_shape **ls = arena_array(a, (size_t)f.nres, sizeof *ls);
  shape_leaves(rs, ls, 0);
  f.ct = arena_array(a, (size_t)f.nres + 1, sizeof *f.ct);
  ir_literal **vin = arena_array(a, (size_t)(f.nparams + f.nres) + 1, sizeof *vin);
  uint64_t s = o->seed ^ 0x5eedull;
  for (int p = 0; p < f.nparams; p++) vin[p] = f.in[p];
  for (int k = 0; k < f.nres; k++) {
    f.ct[k] = vin[f.nparams + k] = ir_literal_create(a, ls[k]);
    if (ir_type_is_float(ls[k]->type)) fill(f.ct[k], &s, -1, 1);
  }
  ir_literal *grads;
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  if (ir_eval(v, &eo, vin, f.nparams + f.nres, a, &grads, err, sizeof err) != ST_OK) {
    snprintf(msg, msglen, "evaluator on the vjp: %s", err);
    goto done;
  }
  int nw = 0, *wrt = arena_array(a, (size_t)f.nparams + 1, sizeof(int));
  for (int p = 0; p < f.nparams && !o->wrt; p++)
    if (ir_type_is_float(f.in[p]->shape.type)) wrt[nw++] = p;
  for (int k = 0; o->wrt && k < o->nwrt; k++) wrt[nw++] = o->wrt[k];
  double a0;
  if (!eval_s(&f, &f.s0, &a0)) goto done;
  res = GFD_PASS;
  for (int k = 0; k < nw && res == GFD_PASS; k++) res = check_param(&f, wrt[k], grads->elems[k], o->max_elems, &checked);
  if (res == GFD_PASS && checked == 0) {
    snprintf(msg, msglen, "no element with finite differences (%d not finite)", f.nonfinite);
    res = GFD_SKIP;
  }
  if (res == GFD_PASS && f.kinks * 4 > checked) {
    snprintf(msg, msglen, "%d of %d elements sit at kinks: too few smooth points to check", f.kinks, checked);
    res = GFD_FAIL;
  }
done:
  if (out_checked) *out_checked = checked;
  arena_destroy(a);
  ir_module_destroy(v);
  return res;
}
