/* values.c: lowering .tg expressions: literals and their typing,
 * numpy broadcasting, infix operators, indexing, reductions, compile-time
 * arguments, and argument binding for builtins (builtins.def).
 *
 * Typing rules (docs/language.md, "Types"): operands of an operator must
 * have the same element type (no implicit promotion; cast() converts).
 * Numbers written in the source are weak: they take the element type of
 * the other operand (an integer type only accepts integral values, pred
 * only true/false). Operations on two weak scalars fold at compile time. */
#include "frontend/tg/lower.h"

#include <math.h>
#include <stdlib.h>

/* ---- values ----------------------------------------------------------- */

tv tv_err(void) {
  tv v;
  memset(&v, 0, sizeof v);
  v.k = TV_ERR;
  v.id = IR_NONE;
  return v;
}

tv tv_tensor(ir_id id) {
  if (id == IR_NONE) return tv_err();
  tv v = tv_err();
  v.k = TV_TENSOR;
  v.id = id;
  return v;
}

static tv tv_lit_scalar(lctx *L, double x, bool is_int, bool is_bool) {
  tv v = tv_err();
  v.k = TV_LIT;
  v.n = 1;
  v.vals = arena_alloc(L->m->arena, sizeof(double));
  v.vals[0] = x;
  v.all_int = is_int;
  v.is_bool = is_bool;
  return v;
}

static double lit_at(const tv *v, int64_t i) { return v->vals[i]; }

static const char *lit_str(lctx *L, double x) {
  if (x == floor(x) && fabs(x) < 1e15) return arena_printf(L->m->arena, "%lld", (long long)x);
  return arena_printf(L->m->arena, "%g", x);
}

tv tv_to_type(lctx *L, tv v, ir_type t, src_loc loc) {
  if (v.k != TV_LIT) return v;
  if (t == IR_PRED && !v.is_bool) {
    lerr(L, loc, "a number cannot be used as pred (use true or false)");
    return tv_err();
  }
  if (t != IR_PRED && v.is_bool) {
    lerr(L, loc, "a boolean cannot be used as %s", ir_type_name(t));
    return tv_err();
  }
  if (ir_type_is_int(t)) {
    double lo = t == IR_S8 ? -128.0 : -2147483648.0, hi = t == IR_S8 ? 127.0 : 2147483647.0;
    for (int64_t i = 0; i < v.n; i++) {
      double x = lit_at(&v, i);
      if (x != floor(x) || isnan(x)) {
        lerr(L, loc, "literal %s is not an integer, but the value is %s", lit_str(L, x), ir_type_name(t));
        return tv_err();
      }
      if (x < lo || x > hi) {
        lerr(L, loc, "literal %s does not fit in %s", lit_str(L, x), ir_type_name(t));
        return tv_err();
      }
    }
  }
  ir_shape s = ir_shape_array(t, v.rank, v.dims);
  if (v.rank == 0) s = ir_shape_scalar(t);
  ir_literal *lit = ir_literal_create(L->m->arena, &s);
  if (!lit) {
    lerr(L, loc, "literal too large");
    return tv_err();
  }
  for (int64_t i = 0; i < v.n; i++) ir_literal_set_f64(lit, i, lit_at(&v, i));
  return tv_tensor(lconst(L, lit, loc));
}

static ir_type lit_default_type(const tv *v) {
  return v->is_bool ? IR_PRED : v->all_int ? IR_S32 : IR_F32;
}

ir_id tv_id(lctx *L, tv v, src_loc loc) {
  switch (v.k) {
  case TV_ERR: return IR_NONE;
  case TV_TENSOR: return v.id;
  case TV_LIT: return tv_to_type(L, v, lit_default_type(&v), loc).id;
  case TV_MULTI:
    lerr(L, loc, "a call returning %d values used as one value", v.nmulti);
    return IR_NONE;
  }
  return IR_NONE;
}

ir_id lower_tensor(lctx *L, const tg_node *n) {
  return tv_id(L, lower_expr(L, n), n->loc);
}

/* ---- building helpers -------------------------------------------------- */

static bool dims_equal(const ir_shape *s, int rank, const int64_t *dims) {
  if (s->rank != rank) return false;
  for (int i = 0; i < rank; i++)
    if (s->dims[i] != dims[i]) return false;
  return true;
}

ir_id lreshape(lctx *L, ir_id x, int rank, const int64_t *dims, src_loc loc) {
  if (x == IR_NONE) return IR_NONE;
  const ir_shape *s = lshape(L, x);
  if (dims_equal(s, rank, dims)) return x;
  ir_shape out = ir_shape_array(s->type, rank, dims);
  return lemit(L, IR_OP_RESHAPE, &x, 1, NULL, NULL, 0, &out, loc, "reshape");
}

ir_id lconvert(lctx *L, ir_id x, ir_type t, src_loc loc) {
  if (x == IR_NONE) return IR_NONE;
  const ir_shape *s = lshape(L, x);
  if (s->type == t) return x;
  ir_shape out = ir_shape_array(t, s->rank, s->dims);
  return lemit(L, IR_OP_CONVERT, &x, 1, NULL, NULL, 0, &out, loc, "cast");
}

ir_id lbroadcast_to(lctx *L, ir_id x, int rank, const int64_t *dims, src_loc loc) {
  if (x == IR_NONE) return IR_NONE;
  ir_shape s = *lshape(L, x);
  if (dims_equal(&s, rank, dims)) return x;
  BASE_ASSERT(s.rank <= rank);
  int64_t kept[IR_MAX_RANK], map[IR_MAX_RANK];
  int nk = 0, off = rank - s.rank;
  for (int i = 0; i < s.rank; i++) {
    if (s.dims[i] == dims[off + i]) {
      kept[nk] = s.dims[i];
      map[nk++] = off + i;
    } else {
      BASE_ASSERT(s.dims[i] == 1);
    }
  }
  if (nk != s.rank) x = lreshape(L, x, nk, kept, loc);
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.dimensions.n = nk;
  a.dimensions.v = map;
  ir_shape out = ir_shape_array(s.type, rank, dims);
  return lemit(L, IR_OP_BROADCAST, &x, 1, &a, NULL, 0, &out, loc, "broadcast");
}

ir_id lfill(lctx *L, ir_type t, double v, int rank, const int64_t *dims, src_loc loc) {
  ir_id c = lscalar(L, t, v, loc);
  return rank == 0 ? c : lbroadcast_to(L, c, rank, dims, loc);
}

ir_id lunary(lctx *L, ir_op op, ir_id x, src_loc loc) {
  if (x == IR_NONE) return IR_NONE;
  return lemit(L, op, &x, 1, NULL, NULL, 0, NULL, loc, L->cur_op ? L->cur_op : ir_op_name(op));
}

ir_id ltranspose(lctx *L, ir_id x, const int64_t *perm, src_loc loc) {
  if (x == IR_NONE) return IR_NONE;
  const ir_shape *s = lshape(L, x);
  bool id = true;
  int64_t dims[IR_MAX_RANK];
  for (int i = 0; i < s->rank; i++) {
    if (perm[i] != i) id = false;
    dims[i] = s->dims[perm[i]];
  }
  if (id) return x;
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.dimensions.n = s->rank;
  a.dimensions.v = (int64_t *)perm;
  ir_shape out = ir_shape_array(s->type, s->rank, dims);
  return lemit(L, IR_OP_TRANSPOSE, &x, 1, &a, NULL, 0, &out, loc, "transpose");
}

bool lbroadcast_shape(lctx *L, const ir_shape *a, const ir_shape *b, int *rank,
                      int64_t *dims, src_loc loc, const char *what) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  for (int i = 0; i < r; i++) {
    int ia = a->rank - r + i, ib = b->rank - r + i;
    int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
    if (da == db || db == 1) dims[i] = da;
    else if (da == 1) dims[i] = db;
    else {
      lerr(L, loc, "%s: shapes %s and %s are not broadcastable (%lld vs %lld in dimension %d of the result)",
           what, lshape_str(L, a), lshape_str(L, b), (long long)da, (long long)db, i);
      return false;
    }
  }
  *rank = r;
  return true;
}

bool lcheck_type(lctx *L, ir_op op, ir_type t, src_loc loc, const char *what) {
  unsigned f = ir_op_flags(op);
  if ((f & OPF_FLOAT) && !ir_type_is_float(t)) {
    lerr(L, loc, "%s: needs floating-point operands, got %s", what, ir_type_name(t));
    return false;
  }
  if ((f & OPF_INT) && ir_type_is_float(t)) {
    lerr(L, loc, "%s: needs integer or pred operands, got %s", what, ir_type_name(t));
    return false;
  }
  if (t == IR_PRED && op != IR_OP_COMPARE && op != IR_OP_SELECT && !(f & OPF_INT) &&
      op != IR_OP_MAXIMUM && op != IR_OP_MINIMUM && op != IR_OP_COPY) {
    lerr(L, loc, "%s: not defined on pred operands", what);
    return false;
  }
  return true;
}

/* Folds an operator over two weak scalars; false when it does not fold. */
static bool fold(ir_op op, ir_cmp_dir dir, double x, double y, bool ints, double *out, bool *is_bool) {
  *is_bool = false;
  *out = 0;
  switch (op) {
  case IR_OP_ADD: *out = x + y; break;
  case IR_OP_SUBTRACT: *out = x - y; break;
  case IR_OP_MULTIPLY: *out = x * y; break;
  case IR_OP_DIVIDE:
    if (ints) {
      if (y == 0) return false;
      *out = trunc(x / y);
    } else {
      *out = x / y;
    }
    break;
  case IR_OP_POWER: *out = pow(x, y); break;
  case IR_OP_COMPARE:
    *is_bool = true;
    switch (dir) {
    case IR_CMP_EQ: *out = x == y; break;
    case IR_CMP_NE: *out = x != y; break;
    case IR_CMP_LT: *out = x < y; break;
    case IR_CMP_LE: *out = x <= y; break;
    case IR_CMP_GT: *out = x > y; break;
    case IR_CMP_GE: *out = x >= y; break;
    }
    break;
  default: return false;
  }
  return !ints || fabs(*out) < 9e15;
}

tv lbinary(lctx *L, ir_op op, ir_cmp_dir dir, tv a, tv b, src_loc loc,
           const char *what, const tg_node *na, const tg_node *nb) {
  if (a.k == TV_ERR || b.k == TV_ERR) return tv_err();
  if (a.k == TV_MULTI || b.k == TV_MULTI) {
    lerr(L, loc, "%s: a call returning several values used as an operand", what);
    return tv_err();
  }
  if (a.k == TV_LIT && b.k == TV_LIT) {
    if (a.rank == 0 && b.rank == 0 && !a.is_bool && !b.is_bool) {
      double r;
      bool is_bool, ints = a.all_int && b.all_int;
      if (fold(op, dir, lit_at(&a, 0), lit_at(&b, 0), ints, &r, &is_bool))
        return tv_lit_scalar(L, r, ints && !is_bool && r == floor(r), is_bool); /* 2 ** -1 is 0.5 */
    }
    ir_type t = lit_default_type(&a);
    if (!a.is_bool && !b.is_bool && !(a.all_int && b.all_int)) t = IR_F32;
    a = tv_to_type(L, a, t, na ? na->loc : loc);
    b = tv_to_type(L, b, t, nb ? nb->loc : loc);
  } else if (a.k == TV_LIT) {
    a = tv_to_type(L, a, lshape(L, b.id)->type, na ? na->loc : loc);
  } else if (b.k == TV_LIT) {
    b = tv_to_type(L, b, lshape(L, a.id)->type, nb ? nb->loc : loc);
  }
  if (a.k == TV_ERR || b.k == TV_ERR) return tv_err();
  const ir_shape *sa = lshape(L, a.id), *sb = lshape(L, b.id);
  if (sa->type != sb->type) {
    lerr(L, loc, "%s: operand types differ (%s vs %s); convert one with cast(x, %s)", what,
         ir_type_name(sa->type), ir_type_name(sb->type), ir_type_name(sa->type));
    lnote_origin(L, na);
    lnote_origin(L, nb);
    return tv_err();
  }
  if (!lcheck_type(L, op, sa->type, loc, what)) return tv_err();
  int rank;
  int64_t dims[IR_MAX_RANK];
  if (!lbroadcast_shape(L, sa, sb, &rank, dims, loc, what)) {
    lnote_origin(L, na);
    lnote_origin(L, nb);
    return tv_err();
  }
  ir_id ops[2] = {lbroadcast_to(L, a.id, rank, dims, loc), lbroadcast_to(L, b.id, rank, dims, loc)};
  ir_attrs at;
  memset(&at, 0, sizeof at);
  at.preferred_type = IR_TYPE_INVALID;
  at.cmp_dir = dir;
  return tv_tensor(lemit(L, op, ops, 2, &at, NULL, 0, NULL, loc, what));
}

ir_id lbin(lctx *L, ir_op op, ir_id a, ir_id b, src_loc loc) {
  if (a == IR_NONE || b == IR_NONE) return IR_NONE;
  return lbinary(L, op, IR_CMP_EQ, tv_tensor(a), tv_tensor(b), loc, L->cur_op ? L->cur_op : ir_op_name(op), NULL, NULL).id;
}

ir_id lbinc(lctx *L, ir_op op, ir_id a, double c, src_loc loc) {
  if (a == IR_NONE) return IR_NONE;
  return lbin(L, op, a, lscalar(L, lshape(L, a)->type, c, loc), loc);
}

ir_id lcmp(lctx *L, ir_cmp_dir dir, ir_id a, ir_id b, src_loc loc) {
  if (a == IR_NONE || b == IR_NONE) return IR_NONE;
  return lbinary(L, IR_OP_COMPARE, dir, tv_tensor(a), tv_tensor(b), loc, L->cur_op ? L->cur_op : "compare", NULL, NULL).id;
}

/* ---- reductions ------------------------------------------------------- */

double lreduce_init(int kind, ir_type t) {
  switch (kind) {
  case R_SUM: case R_OR: return 0;
  case R_PROD: case R_AND: return 1;
  case R_MAX:
    return ir_type_is_float(t) ? -INFINITY : t == IR_S8 ? -128 : t == IR_S32 ? -2147483648.0 : 0;
  case R_MIN:
    return ir_type_is_float(t) ? INFINITY : t == IR_S8 ? 127 : t == IR_S32 ? 2147483647.0 : 1;
  }
  return 0;
}

ir_id lreduce(lctx *L, ir_id x, int kind, const int64_t *axes, int naxes,
              bool keepdims, src_loc loc, const char *what) {
  if (x == IR_NONE) return IR_NONE;
  ir_shape s = *lshape(L, x);
  if ((kind == R_AND || kind == R_OR) && s.type != IR_PRED) {
    lerr(L, loc, "%s: needs a pred operand, got %s", what, ir_type_name(s.type));
    return IR_NONE;
  }
  if ((kind == R_SUM || kind == R_PROD) && s.type == IR_PRED) {
    lerr(L, loc, "%s: not defined on pred operands", what);
    return IR_NONE;
  }
  ir_id init = lscalar(L, s.type, lreduce_init(kind, s.type), loc);
  ir_comp_id c = lreducer(L, kind, s.type, loc);
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.dimensions.n = naxes;
  a.dimensions.v = (int64_t *)axes;
  ir_id ops[2] = {x, init};
  ir_id r = lemit(L, IR_OP_REDUCE, ops, 2, &a, &c, 1, NULL, loc, what);
  if (!keepdims || r == IR_NONE) return r;
  int64_t dims[IR_MAX_RANK];
  for (int i = 0, k = 0; i < s.rank; i++) {
    dims[i] = s.dims[i];
    if (k < naxes && axes[k] == i) {
      dims[i] = 1;
      k++;
    }
  }
  return lreshape(L, r, s.rank, dims, loc);
}

/* ---- compile-time arguments --------------------------------------------- */

static bool num_value(const tg_node *n, double *out, bool *is_int) {
  if (n->kind == TG_NUM) {
    *out = n->num;
    *is_int = n->is_int;
    return true;
  }
  if (n->kind == TG_UNARY && n->op == '-' && n->a->kind == TG_NUM) {
    *out = -n->a->num;
    *is_int = n->a->is_int;
    return true;
  }
  return false;
}

bool st_int(lctx *L, const tg_node *n, const char *what, int64_t *out) {
  double v;
  bool is_int;
  if (num_value(n, &v, &is_int) && is_int) {
    *out = n->kind == TG_NUM ? n->ival : -n->a->ival;
    return true;
  }
  lerr(L, n->loc, "%s: expected an integer constant", what);
  return false;
}

bool st_ints(lctx *L, const tg_node *n, const char *what, int64_t *out, int *nout, int max) {
  if (n->kind != TG_LIST) {
    *nout = 1;
    return st_int(L, n, what, out);
  }
  if (n->args.n > max) {
    lerr(L, n->loc, "%s: at most %d values expected, got %d", what, max, n->args.n);
    return false;
  }
  for (int i = 0; i < n->args.n; i++)
    if (!st_int(L, n->args.v[i], what, &out[i])) return false;
  *nout = n->args.n;
  return true;
}

bool st_float(lctx *L, const tg_node *n, const char *what, double *out) {
  bool is_int;
  if (num_value(n, out, &is_int)) return true;
  lerr(L, n->loc, "%s: expected a number", what);
  return false;
}

bool st_bool(lctx *L, const tg_node *n, const char *what, bool *out) {
  if (n->kind == TG_BOOL) {
    *out = n->ival != 0;
    return true;
  }
  lerr(L, n->loc, "%s: expected true or false", what);
  return false;
}

bool st_str(lctx *L, const tg_node *n, const char *what, const char **out) {
  if (n->kind == TG_STR) {
    *out = n->name;
    return true;
  }
  lerr(L, n->loc, "%s: expected a string", what);
  return false;
}

bool st_type(lctx *L, const tg_node *n, const char *what, ir_type *out) {
  if (n->kind == TG_TYPE && n->rank < 0) {
    *out = n->type;
    return true;
  }
  lerr(L, n->loc, "%s: expected an element type (pred, s8, s32, bf16, f16, f32)", what);
  return false;
}

bool st_shape(lctx *L, const tg_node *n, const char *what, ir_shape *out) {
  if (n->kind == TG_TYPE) {
    *out = ir_shape_array(n->type, n->rank < 0 ? 0 : n->rank, n->dims);
    int64_t c;
    if (!ir_shape_elements(out, &c)) {
      lerr(L, n->loc, "%s: shape is too large", what);
      return false;
    }
    return true;
  }
  lerr(L, n->loc, "%s: expected a shape such as f32[2,3]", what);
  return false;
}

bool st_axis(lctx *L, const tg_node *n, const char *what, int64_t ax, int rank, int64_t *out) {
  if (ax < -rank || ax >= rank || (rank == 0)) {
    lerr(L, n->loc, "%s: axis %lld is out of range for a rank-%d tensor", what, (long long)ax, rank);
    return false;
  }
  *out = ax < 0 ? ax + rank : ax;
  return true;
}

bool st_axes(lctx *L, const tg_node *n, const char *what, int rank, int64_t *out, int *nout) {
  if (!n) {
    for (int i = 0; i < rank; i++) out[i] = i;
    *nout = rank;
    return true;
  }
  int64_t raw[IR_MAX_RANK];
  int nr;
  if (!st_ints(L, n, what, raw, &nr, IR_MAX_RANK)) return false;
  bool seen[IR_MAX_RANK] = {false};
  for (int i = 0; i < nr; i++) {
    int64_t ax;
    if (!st_axis(L, n, what, raw[i], rank, &ax)) return false;
    if (seen[ax]) {
      lerr(L, n->loc, "%s: axis %lld listed twice", what, (long long)ax);
      return false;
    }
    seen[ax] = true;
  }
  *nout = 0;
  for (int i = 0; i < rank; i++)
    if (seen[i]) out[(*nout)++] = i;
  return true;
}

/* ---- literals ------------------------------------------------------------ */

/* Collects a nested list of numbers into out; v->rank and v->dims were
 * read along the first element at each level, and every sibling must
 * agree with them. */
typedef struct dvec {
  double *v;
  int n, cap;
} dvec;

static bool lit_collect(lctx *L, const tg_node *n, int level, tv *v, dvec *out) {
  if (n->kind == TG_LIST) {
    if (level >= IR_MAX_RANK) {
      lerr(L, n->loc, "tensor literal has more than %d dimensions", IR_MAX_RANK);
      return false;
    }
    if (level >= v->rank) {
      lerr(L, n->loc, "tensor literal is not rectangular: expected a number here, found a list");
      return false;
    }
    if (v->dims[level] != n->args.n) {
      lerr(L, n->loc, "tensor literal is not rectangular: expected %lld elements here, found %d",
           (long long)v->dims[level], n->args.n);
      return false;
    }
    for (int i = 0; i < n->args.n; i++)
      if (!lit_collect(L, n->args.v[i], level + 1, v, out)) return false;
    return true;
  }
  if (level != v->rank) {
    lerr(L, n->loc, "tensor literal is not rectangular: expected a list here, found a number");
    return false;
  }
  double x;
  bool is_int;
  if (n->kind == TG_BOOL) {
    if (out->n && !v->is_bool) goto mixed;
    v->is_bool = true;
    x = (double)n->ival;
  } else if (num_value(n, &x, &is_int)) {
    if (v->is_bool) goto mixed;
    if (!is_int) v->all_int = false;
  } else {
    lerr(L, n->loc, "tensor literal elements must be numbers (use concat to join tensors)");
    return false;
  }
  VEC_PUSH(L->m->arena, *out, x);
  return true;
mixed:
  lerr(L, n->loc, "tensor literal mixes booleans and numbers");
  return false;
}

static tv lower_list(lctx *L, const tg_node *n) {
  tv v = tv_err();
  v.k = TV_LIT;
  v.all_int = true;
  dvec vals = {0};
  /* rank is fixed by the first path to a leaf */
  const tg_node *p = n;
  int r = 0;
  while (p->kind == TG_LIST && r < IR_MAX_RANK + 1) {
    v.dims[r < IR_MAX_RANK ? r : 0] = p->args.n;
    r++;
    if (p->args.n == 0) break;
    p = p->args.v[0];
  }
  if (r > IR_MAX_RANK) {
    lerr(L, n->loc, "tensor literal has more than %d dimensions", IR_MAX_RANK);
    return tv_err();
  }
  v.rank = r;
  if (!lit_collect(L, n, 0, &v, &vals)) return tv_err();
  v.n = vals.n;
  v.vals = vals.v ? vals.v : arena_alloc(L->m->arena, sizeof(double));
  return v;
}

/* ---- indexing ------------------------------------------------------------ */

static tv lower_index(lctx *L, const tg_node *n) {
  ir_id x = lower_tensor(L, n->a);
  if (x == IR_NONE) return tv_err();
  ir_shape s = *lshape(L, x);
  /* x[t] with a tensor t: take along axis 0 */
  double num;
  bool is_int;
  if (n->args.n == 1 && n->args.v[0]->kind != TG_SLICE && !num_value(n->args.v[0], &num, &is_int) &&
      s.rank > 0)
    return fe_tg_take(L, n, x, n->args.v[0], 0, "index");
  if (n->args.n > s.rank) {
    lerr(L, n->loc, "too many indices (%d) for a %s tensor", n->args.n, lshape_str(L, &s));
    return tv_err();
  }
  int64_t start[IR_MAX_RANK], limit[IR_MAX_RANK], stride[IR_MAX_RANK], keep[IR_MAX_RANK];
  int nkeep = 0;
  bool ok = true;
  for (int i = 0; i < s.rank; i++) {
    int64_t d = s.dims[i];
    start[i] = 0;
    limit[i] = d;
    stride[i] = 1;
    const tg_node *it = i < n->args.n ? n->args.v[i] : NULL;
    if (!it) {
      keep[nkeep++] = d;
      continue;
    }
    if (it->kind == TG_SLICE) {
      int64_t lo = 0, hi = d, st = 1;
      if (it->c && !st_int(L, it->c, "slice step", &st)) { ok = false; continue; }
      if (st <= 0) {
        lerr(L, it->c->loc, "slice step must be positive (use reverse() to flip a dimension)");
        ok = false;
        continue;
      }
      if (it->a && !st_int(L, it->a, "slice start", &lo)) { ok = false; continue; }
      if (it->b && !st_int(L, it->b, "slice end", &hi)) { ok = false; continue; }
      if (lo < 0) lo = lo < -d ? 0 : lo + d;
      if (hi < 0) hi = hi < -d ? 0 : hi + d;
      if (lo > d) lo = d;
      if (hi > d) hi = d;
      if (hi < lo) hi = lo;
      start[i] = lo;
      limit[i] = hi;
      stride[i] = st;
      keep[nkeep++] = (hi - lo + st - 1) / st;
    } else {
      int64_t ix;
      if (!st_int(L, it, "index", &ix)) { ok = false; continue; }
      if (ix < -d || ix >= d) {
        lerr(L, it->loc, "index %lld is out of range for dimension %d of size %lld", (long long)ix, i,
             (long long)d);
        ok = false;
        continue;
      }
      start[i] = ix < 0 ? ix + d : ix;
      limit[i] = start[i] + 1;
    }
  }
  if (!ok) return tv_err();
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.slice_start = (ir_ints){s.rank, start};
  a.slice_limit = (ir_ints){s.rank, limit};
  a.slice_stride = (ir_ints){s.rank, stride};
  const char *saved = L->cur_op;
  L->cur_op = "index";
  ir_id r = lemit(L, IR_OP_SLICE, &x, 1, &a, NULL, 0, NULL, n->loc, "index");
  r = lreshape(L, r, nkeep, keep, n->loc);
  L->cur_op = saved;
  return tv_tensor(r);
}

/* ---- expressions --------------------------------------------------------- */

/* Infix operators: the IR op, the metadata name (op_type) and the name
 * used in messages. */
static const struct {
  ir_op op;
  ir_cmp_dir dir;
  const char *name, *what;
} binops[] = {
    [TG_ADD] = {IR_OP_ADD, IR_CMP_EQ, "add", "add"},
    [TG_SUB] = {IR_OP_SUBTRACT, IR_CMP_EQ, "subtract", "subtract"},
    [TG_MUL] = {IR_OP_MULTIPLY, IR_CMP_EQ, "multiply", "multiply"},
    [TG_DIV] = {IR_OP_DIVIDE, IR_CMP_EQ, "divide", "divide"},
    [TG_MOD] = {IR_OP_REMAINDER, IR_CMP_EQ, "remainder", "remainder"},
    [TG_POW] = {IR_OP_POWER, IR_CMP_EQ, "power", "power"},
    [TG_MATMUL] = {IR_OP_DOT, IR_CMP_EQ, "matmul", "matmul"},
    [TG_EQ] = {IR_OP_COMPARE, IR_CMP_EQ, "eq", "'=='"},
    [TG_NE] = {IR_OP_COMPARE, IR_CMP_NE, "ne", "'!='"},
    [TG_LT] = {IR_OP_COMPARE, IR_CMP_LT, "lt", "'<'"},
    [TG_LE] = {IR_OP_COMPARE, IR_CMP_LE, "le", "'<='"},
    [TG_GT] = {IR_OP_COMPARE, IR_CMP_GT, "gt", "'>'"},
    [TG_GE] = {IR_OP_COMPARE, IR_CMP_GE, "ge", "'>='"},
    [TG_AND] = {IR_OP_AND, IR_CMP_EQ, "and", "'&&'"},
    [TG_OR] = {IR_OP_OR, IR_CMP_EQ, "or", "'||'"},
};

/* Levenshtein distance, capped: for "did you mean". */
static int edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 40 || lb > 40) return 99;
  int row[41];
  for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int prev = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int cur = row[j];
      int best = prev + (a[i - 1] != b[j - 1]);
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      prev = cur;
    }
  }
  return row[lb];
}

static const char *suggest_name(lctx *L, const char *name) {
  const char *best = NULL;
  int bd = 3;
  for (int i = 0; i < L->binds.n; i++) {
    int d = edit_distance(name, L->binds.v[i].name);
    if (d >= (int)strlen(name) || d >= (int)strlen(L->binds.v[i].name)) continue;
    if (d < bd && fe_tg_visible(L, L->binds.v[i].name, false) == i) {
      bd = d;
      best = L->binds.v[i].name;
    }
  }
  return best;
}

static tv lower_call(lctx *L, const tg_node *n) {
  int gi = fe_tg_graph_index(L, n->name);
  if (gi >= 0) return fe_tg_call_graph(L, n, gi);
  const tg_builtin *b = fe_tg_builtin(n->name);
  if (b) return lower_builtin(L, n, b);
  lerr(L, n->loc, "unknown operation '%s'", n->name);
  const char *s = fe_tg_builtin_suggest(n->name);
  if (s) lnote(L, n->loc, "did you mean '%s'?", s);
  return tv_err();
}

tv lower_expr(lctx *L, const tg_node *n) {
  if (L->depth >= TG_MAX_DEPTH) {
    llimit(L, n->loc, "expression nested too deeply (more than %d levels, counting inlined graphs)", TG_MAX_DEPTH);
    return tv_err();
  }
  L->depth++;
  tv r = tv_err();
  const char *saved_op = L->cur_op;
  switch (n->kind) {
  case TG_NUM: r = tv_lit_scalar(L, n->num, n->is_int, false); break;
  case TG_BOOL: r = tv_lit_scalar(L, (double)n->ival, false, true); break;
  case TG_NAME: {
    int32_t i = fe_tg_lookup(L, n->name);
    if (i >= 0) {
      L->binds.v[i].used = true;
      r = L->binds.v[i].v;
      break;
    }
    if (fe_tg_builtin(n->name) || fe_tg_graph_index(L, n->name) >= 0) {
      lerr(L, n->loc, "'%s' is an operation; call it as %s(...)", n->name, n->name);
      break;
    }
    lerr(L, n->loc, "unknown name '%s'", n->name);
    const char *s = suggest_name(L, n->name);
    if (s) lnote(L, n->loc, "did you mean '%s'?", s);
    break;
  }
  case TG_STR: lerr(L, n->loc, "a string is not a tensor (strings are attribute values)"); break;
  case TG_TYPE: lerr(L, n->loc, "a type is not a tensor (types are attribute values)"); break;
  case TG_LIST: r = lower_list(L, n); break;
  case TG_SLICE: lerr(L, n->loc, "a slice is only allowed inside [ ]"); break;
  case TG_UNARY: {
    tv a = lower_expr(L, n->a);
    if (a.k == TV_LIT) {
      if (n->op == '-' && a.is_bool) {
        lerr(L, n->loc, "unary '-' on a boolean");
        break;
      }
      if (n->op == '!' && !a.is_bool) {
        lerr(L, n->loc, "'!' needs a pred operand, got a number");
        break;
      }
      double *vals = arena_array(L->m->arena, (size_t)(a.n ? a.n : 1), sizeof(double));
      for (int64_t i = 0; i < a.n; i++) vals[i] = n->op == '-' ? -lit_at(&a, i) : !lit_at(&a, i);
      a.vals = vals;
      r = a;
      break;
    }
    ir_id x = tv_id(L, a, n->a->loc);
    if (x == IR_NONE) break;
    L->cur_op = n->op == '-' ? "negate" : "not";
    ir_op op = n->op == '-' ? IR_OP_NEGATE : IR_OP_NOT;
    ir_type t = lshape(L, x)->type;
    if (n->op == '!' && t != IR_PRED) {
      lerr(L, n->loc, "'!' needs a pred operand, got %s", ir_type_name(t));
      lnote_origin(L, n->a);
      break;
    }
    if (n->op == '-' && t == IR_PRED) {
      lerr(L, n->loc, "unary '-' on a pred operand");
      break;
    }
    r = tv_tensor(lunary(L, op, x, n->loc));
    break;
  }
  case TG_BINARY: {
    tv a = lower_expr(L, n->a);
    tv b = lower_expr(L, n->b);
    L->cur_op = binops[n->op].name;
    if (n->op == TG_MATMUL) {
      r = fe_tg_matmul(L, n, a, b, n->a, n->b, IR_TYPE_INVALID);
      break;
    }
    if ((n->op == TG_AND || n->op == TG_OR) && a.k != TV_ERR && b.k != TV_ERR) {
      tv *chk[2] = {&a, &b};
      bool bad = false;
      for (int i = 0; i < 2 && !bad; i++) {
        tv *v = chk[i];
        ir_type t = v->k == TV_LIT ? (v->is_bool ? IR_PRED : IR_F32) : v->k == TV_TENSOR ? lshape(L, v->id)->type : IR_PRED;
        if (t != IR_PRED) {
          lerr(L, n->loc, "%s needs pred operands, got %s", binops[n->op].what, ir_type_name(t));
          lnote_origin(L, i ? n->b : n->a);
          bad = true;
        }
      }
      if (bad) break;
    }
    r = lbinary(L, binops[n->op].op, binops[n->op].dir, a, b, n->loc, binops[n->op].what, n->a, n->b);
    break;
  }
  case TG_CALL: r = lower_call(L, n); break;
  case TG_INDEX: r = lower_index(L, n); break;
  case TG_IF: r = fe_tg_if_expr(L, n); break;
  }
  L->cur_op = saved_op;
  L->depth--;
  return r;
}

/* ---- builtins: table and argument binding -------------------------------- */

static const tg_builtin builtins[] = {
#define B(name, spec, fn, op, aux) {name, spec, fn, op, aux},
#include "frontend/tg/builtins.def"
#undef B
};

const tg_builtin *fe_tg_builtin(const char *name) {
  for (size_t i = 0; i < COUNTOF(builtins); i++)
    if (strcmp(builtins[i].name, name) == 0) return &builtins[i];
  return NULL;
}

const char *fe_tg_builtin_suggest(const char *name) {
  const char *best = NULL;
  int bd = 3;
  for (size_t i = 0; i < COUNTOF(builtins); i++) {
    int d = edit_distance(name, builtins[i].name);
    if (d >= (int)strlen(name) || d >= (int)strlen(builtins[i].name)) continue;
    if (d < bd) {
      bd = d;
      best = builtins[i].name;
    }
  }
  return best;
}

enum { MAX_PARAMS = 16 };

tv lower_builtin(lctx *L, const tg_node *call, const tg_builtin *b) {
  const char *names[MAX_PARAMS];
  size_t lens[MAX_PARAMS];
  bool optional[MAX_PARAMS];
  int np = 0;
  bool variadic = false;
  for (const char *s = b->spec; *s;) {
    const char *e = strchr(s, ',');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    BASE_ASSERT(np < MAX_PARAMS);
    if (*s == '*') {
      variadic = true;
      s++;
      len--;
    }
    optional[np] = s[len - 1] == '?';
    names[np] = s;
    lens[np] = optional[np] ? len - 1 : len;
    np++;
    if (!e) break;
    s = e + 1;
  }
  tg_node *arg[MAX_PARAMS] = {NULL};
  tg_nodes rest = {0};
  int first_kw = 0; /* parameters before this one are positional */
  if (variadic) {
    rest = call->args;
    first_kw = 1;
    if (rest.n == 0) {
      lerr(L, call->loc, "%s: needs at least one tensor argument", b->name);
      return tv_err();
    }
  } else {
    if (call->args.n > np) {
      lerr(L, call->args.v[np]->loc, "%s: takes at most %d argument%s (%d given)", b->name, np,
           np == 1 ? "" : "s", call->args.n);
      return tv_err();
    }
    for (int i = 0; i < call->args.n; i++) arg[i] = call->args.v[i];
  }
  for (int k = 0; k < call->kws.n; k++) {
    const tg_kwarg *kw = &call->kws.v[k];
    int found = -1;
    for (int i = first_kw; i < np; i++)
      if (strlen(kw->name) == lens[i] && memcmp(kw->name, names[i], lens[i]) == 0) found = i;
    if (found < 0) {
      lerr(L, kw->loc, "%s: unknown keyword argument '%s'", b->name, kw->name);
      strbuf sb;
      sb_init(&sb);
      for (int i = first_kw; i < np; i++) sb_printf(&sb, "%s%.*s", i > first_kw ? ", " : "", (int)lens[i], names[i]);
      lnote(L, kw->loc, "%s accepts: %s", b->name, np > first_kw ? sb_str(&sb) : "no keywords");
      sb_free(&sb);
      return tv_err();
    }
    if (arg[found]) {
      lerr(L, kw->loc, "%s: argument '%s' given twice", b->name, kw->name);
      return tv_err();
    }
    arg[found] = kw->value;
  }
  for (int i = first_kw; i < np; i++)
    if (!arg[i] && !optional[i]) {
      lerr(L, call->loc, "%s: missing argument '%.*s'", b->name, (int)lens[i], names[i]);
      return tv_err();
    }
  L->cur_op = b->name;
  return b->fn(L, call, arg, &rest, b);
}
