/* budget.c: what running a module may cost, checked before it runs, with
 * the same accounting on every target (the evaluator, backend/llvm's cpu,
 * backend/tpu's v2/v3). Contract and defaults: ir.h, ir_budget.
 *
 * The walk trusts nothing about the module beyond its arrays being
 * readable: the evaluator calls it before it re-checks operand order and
 * shapes, so an operand, called computation or dimension index out of
 * range costs nothing here (the evaluator reports it), and called
 * computations nested deeper than IR_BUDGET_MAX_DEPTH are an error. */
#include "ir/ir.h"

#include <stdarg.h>
#include <stdlib.h>

typedef struct bctx {
  const ir_module *m;
  double max_work, max_bytes;
  int max_depth;
  double work, bytes; /* running totals */
  double *memo;       /* per computation: the work of one call, or -1 */
  diag *d;
  char *err;
  size_t errlen;
} bctx;

/* Reports "NAME (op): message" at the instruction into the diagnostics
 * (when given) and, prefixed "file:line:col: ", into the error buffer. */
static base_status fail(bctx *b, const ir_inst *in, const char *fmt, ...) BASE_PRINTF(3, 4);
static base_status fail(bctx *b, const ir_inst *in, const char *fmt, ...) {
  strbuf s;
  sb_init(&s);
  sb_printf(&s, "%s (%s): ", in->info->name ? in->info->name : "?",
            (unsigned)in->op < IR_OP__COUNT ? ir_op_name(in->op) : "?");
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(&s, fmt, ap);
  va_end(ap);
  if (b->d) diag_error(b->d, in->info->loc, "%s", sb_str(&s));
  if (b->err && b->errlen) {
    if (in->info->loc.file && in->info->loc.line > 0)
      snprintf(b->err, b->errlen, "%s:%d:%d: %s", in->info->loc.file,
               (int) in->info->loc.line,
               (int) in->info->loc.col, sb_str(&s));
    else
      snprintf(b->err, b->errlen, "%s", sb_str(&s));
  }
  sb_free(&s);
  return ST_RESOURCE_EXHAUSTED;
}

/* Elements of an array shape as a double (1 for tuples: the evaluator's
 * step for making one); -1 when the dims are malformed. */
static double elements(const ir_shape *s) {
  if (s->type == IR_TUPLE) return 1;
  if (s->rank < 0 || s->rank > IR_MAX_RANK) return -1;
  double n = 1;
  for (int d = 0; d < s->rank; d++) {
    if (s->dims[d] < 0) return -1;
    n *= (double)s->dims[d];
  }
  return n;
}

/* Bytes of the arrays a shape holds (tuple elements summed); -1 when
 * malformed. */
static double shape_bytes(const ir_shape *s, int depth) {
  if (s->type != IR_TUPLE) {
    double n = elements(s);
    int es = (unsigned)s->type < IR_TUPLE ? ir_type_size(s->type) : 0;
    return n < 0 ? -1 : n * es;
  }
  if (depth > IR_BUDGET_MAX_DEPTH || s->ntuple < 0 || (s->ntuple && !s->tuple)) return -1;
  double n = 0;
  for (int i = 0; i < s->ntuple; i++) {
    double e = shape_bytes(&s->tuple[i], depth + 1);
    if (e < 0) return -1;
    n += e;
  }
  return n;
}

/* The shape of operand k of in, or NULL when out of range. */
static const ir_shape *operand(const ir_comp *cp, const ir_inst *in, int k) {
  if (k >= in->nops || !in->ops || in->ops[k] < 0 || in->ops[k] >= cp->insts.n) return NULL;
  return cp->insts.v[in->ops[k]].shape;
}

static bool dim_ok(const ir_shape *s, int64_t d) {
  return s && s->type != IR_TUPLE && d >= 0 && d < s->rank && s->rank <= IR_MAX_RANK;
}

/* The inner work of one instruction beyond the elements it produces: a
 * dot's and a convolution's multiply-adds, a reduction's fold steps. */
static double inner_work(const ir_comp *cp, const ir_inst *in, double out) {
  const ir_shape *lhs = operand(cp, in, 0), *rhs = operand(cp, in, 1);
  double k = 1, inner = 0;
  switch (in->op) {
  case IR_OP_DOT:
    for (int i = 0; i < in->a->lhs_contracting.n; i++)
      if (dim_ok(lhs, in->a->lhs_contracting.v[i]))
        k *= (double)lhs->dims[in->a->lhs_contracting.v[i]];
    return out * k;
  case IR_OP_CONVOLUTION:
    if (dim_ok(rhs, in->a->conv.k_in)) k = (double)rhs->dims[in->a->conv.k_in];
    for (int i = 0; i < in->a->conv.nspatial && i < IR_MAX_RANK; i++)
      if (dim_ok(rhs, in->a->conv.k_spatial[i])) k *= (double)rhs->dims[in->a->conv.k_spatial[i]];
    return out * k;
  case IR_OP_REDUCE: /* one fold per input element */
    return lhs && lhs->type != IR_TUPLE && elements(lhs) > 0 ? elements(lhs) : 0;
  case IR_OP_SORT:
  case IR_OP_TOPK:
  case IR_OP_CUSTOM_CALL: { /* a merge sort's comparisons (the TopK custom-call) */
    double n = lhs && lhs->type != IR_TUPLE && elements(lhs) > 0 ? elements(lhs) : 0;
    while (k < n) k *= 2, inner += n;
    return inner;
  }
  case IR_OP_REDUCE_WINDOW: {
    double nout = in->shape->type == IR_TUPLE
                      ? (in->shape->ntuple > 0 && in->shape->tuple ? elements(&in->shape->tuple[0]) : 0)
                      : out;
    for (int d = 0; d < ir_window_of(in->a)->rank && d < IR_MAX_RANK; d++)
      k *= (double)(ir_window_of(in->a)->dims[d].size > 0 ? ir_window_of(in->a)->dims[d].size : 0);
    return nout > 0 ? nout * k : 0;
  }
  case IR_OP_SCATTER: { /* one to_apply per update element */
    const ir_shape *u = in->nops >= 3 ? operand(cp, in, in->nops - 1) : NULL;
    double nu = u ? elements(u) : 0;
    return nu > 0 ? nu : 0;
  }
  case IR_OP_SELECT_AND_SCATTER: /* a window of selects per source element */
    for (int d = 0; d < ir_window_of(in->a)->rank && d < IR_MAX_RANK; d++)
      k *= (double)(ir_window_of(in->a)->dims[d].size > 0 ? ir_window_of(in->a)->dims[d].size : 0);
    return rhs && rhs->type != IR_TUPLE && elements(rhs) > 0 ? elements(rhs) * (k + 1) : 0;
  default:
    return 0;
  }
}

static base_status comp_work(bctx *b, const ir_inst *caller, ir_comp_id c, int depth,
                             double *out);

/* The work of one instruction, its called computations included. */
static base_status inst_work(bctx *b, const ir_comp *cp, const ir_inst *in, int depth,
                             double *out) {
  *out = 0;
  if (in->dead || in->op == IR_OP_PARAMETER) return ST_OK; /* bound, not produced */
  double n = elements(in->shape);
  if (n < 0) return ST_OK; /* malformed: the evaluator says so */
  double w = n > 1 ? n : 1, inner = inner_work(cp, in, n), branch = 0;
  for (int k = 0; k < in->ncalls && in->calls; k++) {
    if (in->op == IR_OP_ALL_REDUCE) break; /* one replica: to_apply is not called */
    double cw;
    base_status st = comp_work(b, in, in->calls[k], depth + 1, &cw);
    if (st != ST_OK) return st;
    if (in->op == IR_OP_REDUCE || in->op == IR_OP_REDUCE_WINDOW || in->op == IR_OP_SCATTER ||
        in->op == IR_OP_SELECT_AND_SCATTER || in->op == IR_OP_SORT || in->op == IR_OP_CUSTOM_CALL)
      inner *= cw > 1 ? cw : 1; /* each fold or comparison calls to_apply */
    else if (in->op == IR_OP_MAP)
      inner = (n > 0 ? n : 0) * (cw > 1 ? cw : 1); /* to_apply per element */
    else if (in->op == IR_OP_CONDITIONAL)
      branch = cw > branch ? cw : branch; /* one branch runs */
    else
      w += cw; /* a while's trips beyond the first are counted as they run */
  }
  w += branch;
  if (in->op == IR_OP_WHILE) w += IR_WHILE_TRIP_STEPS; /* its first trip */
  *out = w + inner;
  return ST_OK;
}

/* The work of one call of computation c (memoised). */
static base_status comp_work(bctx *b, const ir_inst *caller, ir_comp_id c, int depth,
                             double *out) {
  *out = 0;
  if (c < 0 || c >= b->m->comps.n) return ST_OK;
  if (b->memo[c] >= 0) {
    *out = b->memo[c];
    return ST_OK;
  }
  const ir_comp *cp = &b->m->comps.v[c];
  if (depth > b->max_depth)
    return fail(b, caller, "computations nested deeper than %d (calling %s)", b->max_depth,
                cp->name ? cp->name : "?");
  double w = 0;
  for (int i = 0; i < cp->insts.n; i++) {
    double iw;
    base_status st = inst_work(b, cp, &cp->insts.v[i], depth, &iw);
    if (st != ST_OK) return st;
    w += iw;
  }
  b->memo[c] = w;
  *out = w;
  return ST_OK;
}

static base_status check_comp(bctx *b, ir_comp_id c, int depth, bool *seen);

/* Checks one instruction against the per-instruction limits (elements and
 * bytes of its result), then every instruction of what it calls. */
static base_status check_inst(bctx *b, const ir_inst *in, int depth, bool *seen) {
  if (in->dead) return ST_OK;
  double n = in->shape->type == IR_TUPLE ? 0 : elements(in->shape);
  double by = shape_bytes(in->shape, 0);
  if (n > (double)IR_MAX_ELEMENTS)
    return fail(b, in, "result has %.3g elements, over the limit of 2^40", n);
  if (by > b->max_bytes)
    return fail(b, in, "result needs %.3g bytes, over the limit of %.3g bytes", by, b->max_bytes);
  for (int k = 0; k < in->ncalls && in->calls; k++) {
    if (depth >= b->max_depth)
      return fail(b, in, "computations nested deeper than %d", b->max_depth);
    base_status st = check_comp(b, in->calls[k], depth + 1, seen);
    if (st != ST_OK) return st;
  }
  return ST_OK;
}

static base_status check_comp(bctx *b, ir_comp_id c, int depth, bool *seen) {
  if (c < 0 || c >= b->m->comps.n || seen[c]) return ST_OK;
  seen[c] = true;
  const ir_comp *cp = &b->m->comps.v[c];
  for (int i = 0; i < cp->insts.n; i++) {
    base_status st = check_inst(b, &cp->insts.v[i], depth, seen);
    if (st != ST_OK) return st;
  }
  return ST_OK;
}

/* Instructions that make no new array: their bytes are another's. */
static bool holds_new_bytes(ir_op op) {
  return op != IR_OP_PARAMETER && op != IR_OP_TUPLE && op != IR_OP_GET_TUPLE_ELEMENT;
}

double ir_while_trip_work(const ir_module *m, const ir_inst *w) {
  double total = IR_WHILE_TRIP_STEPS;
  if (!m || !w || w->op != IR_OP_WHILE || !w->calls) return total;
  bctx b = {m, 0, 0, IR_BUDGET_MAX_DEPTH, 0, 0, NULL, NULL, NULL, 0};
  b.memo = malloc((size_t)m->comps.n * sizeof *b.memo + 1);
  if (!b.memo) return total;
  for (int i = 0; i < m->comps.n; i++) b.memo[i] = -1;
  for (int k = 0; k < w->ncalls; k++) {
    double cw;
    if (comp_work(&b, w, w->calls[k], 1, &cw) == ST_OK) total += cw;
  }
  free(b.memo);
  return total;
}

void ir_budget_init(ir_budget *b) {
  b->max_work = IR_BUDGET_WORK;
  b->max_bytes = IR_BUDGET_BYTES;
  b->max_depth = IR_BUDGET_MAX_DEPTH;
}

base_status ir_budget_check(const ir_module *m, const ir_budget *bud, diag *d, char *err,
                            size_t errlen) {
  if (err && errlen) err[0] = 0;
  if (!m || m->entry < 0 || m->entry >= m->comps.n) return ST_OK; /* nothing runs */
  bctx b = {m, 0, 0, 0, 0, 0, NULL, d, err, errlen};
  b.max_work = bud && bud->max_work > 0 ? bud->max_work : IR_BUDGET_WORK;
  b.max_bytes = (double)(bud && bud->max_bytes > 0 ? bud->max_bytes : IR_BUDGET_BYTES);
  b.max_depth = bud && bud->max_depth > 0 ? bud->max_depth : IR_BUDGET_MAX_DEPTH;
  size_t nc = (size_t)m->comps.n;
  b.memo = malloc(nc * sizeof *b.memo);
  bool *seen = calloc(nc, sizeof *seen);
  if (!b.memo || !seen) {
    free(b.memo);
    free(seen);
    if (d) diag_error(d, (src_loc){0}, "out of memory checking the budget");
    if (err && errlen) snprintf(err, errlen, "out of memory checking the budget");
    return ST_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < nc; i++) b.memo[i] = -1;
  base_status st = ST_OK;
  const ir_comp *cp = &m->comps.v[m->entry];
  seen[m->entry] = true;
  /* In order, per instruction: its work (what it calls included), its own
   * size, what it calls, the running byte total: the order the evaluator
   * meets them in. */
  for (int i = 0; i < cp->insts.n && st == ST_OK; i++) {
    const ir_inst *in = &cp->insts.v[i];
    double w;
    if ((st = inst_work(&b, cp, in, 0, &w)) != ST_OK) break;
    if (w > b.max_work - b.work) {
      st = fail(&b, in, "needs %.3g steps of work with %.3g before it, over the limit of %.3g", w,
                b.work, b.max_work);
      break;
    }
    b.work += w;
    if ((st = check_inst(&b, in, 0, seen)) != ST_OK) break;
    if (in->dead || !holds_new_bytes(in->op)) continue;
    double by = shape_bytes(in->shape, 0);
    if (by > b.max_bytes - b.bytes) {
      st = fail(&b, in, "needs %.3g bytes with %.3g before it, over the limit of %.3g bytes", by,
                b.bytes, b.max_bytes);
      break;
    }
    if (by > 0) b.bytes += by;
  }
  free(b.memo);
  free(seen);
  return st;
}
