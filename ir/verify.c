/* verify.c: the IR verifier. Checks every structural invariant of a module
 * and reports each violation at the offending instruction's location:
 *   verify: %add.3: operand 1 shape f32[3] does not match f32[2]
 *
 * Checked: an entry computation exists; computation and instruction names
 * are unique; every computation has a live root; parameters are numbered
 * 0..n-1 without gaps or repeats and params[] agrees (ir_comp_finish);
 * operand ids are in range, live, and defined before their users (a cycle
 * is reported as such); op arity and attributes; the declared shape equals
 * ir_infer_shape's (layouts aside) and its layout is well formed;
 * constants carry a literal of their shape; called computations exist with
 * the right signatures (checked by inference) and never recurse; replica
 * groups name distinct non-negative replicas.
 * Requires nothing; modifies nothing (scratch lives above an arena mark). */
#include "ir/ir.h"

#include <errno.h>
#include <stdlib.h>

typedef struct vctx {
  const ir_module *m;
  diag *d;
  int count;
} vctx;

static void report(vctx *v, src_loc loc, const char *fmt, ...) BASE_PRINTF(3, 4);
static void report(vctx *v, src_loc loc, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!loc.file && v->m->source_file && loc.line > 0) loc.file = v->m->source_file;
  diag_error(v->d, loc, "verify: %s", msg);
  v->count++;
}

#define shape_str ir_shape_str
#define SHP(s) shape_str((char[128]){0}, 128, (s))

/* ---- shapes and layouts ----------------------------------------------- */

/* Structure of a shape: a known type, rank within limits, no negative
 * dims, an element count that fits, a tuple array when there are elements. */
static bool shape_wellformed(const ir_shape *s, int depth, char *why, size_t n) {
  if (s->type == IR_TUPLE) {
    if (depth > 16) {
      snprintf(why, n, "tuple shape nested too deeply");
      return false;
    }
    if (s->ntuple < 0 || (s->ntuple > 0 && !s->tuple)) {
      snprintf(why, n, "malformed tuple shape");
      return false;
    }
    for (int i = 0; i < s->ntuple; i++)
      if (!shape_wellformed(&s->tuple[i], depth + 1, why, n)) return false;
    return true;
  }
  if ((unsigned)s->type >= IR_TUPLE) {
    snprintf(why, n, "shape has an invalid element type");
    return false;
  }
  if (s->rank < 0 || s->rank > IR_MAX_RANK) {
    snprintf(why, n, "shape has rank %d, outside 0..%d", s->rank, IR_MAX_RANK);
    return false;
  }
  int64_t cnt;
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i] < 0) {
      snprintf(why, n, "shape has negative dimension %lld", (long long)s->dims[i]);
      return false;
    }
  if (!ir_shape_elements(s, &cnt)) {
    snprintf(why, n, "shape has more than 2^40 elements");
    return false;
  }
  return true;
}


static bool layout_ok(const ir_shape *s, char *why, size_t n) {
  if (s->type == IR_TUPLE) {
    for (int i = 0; i < s->ntuple; i++)
      if (!layout_ok(&s->tuple[i], why, n)) return false;
    return true;
  }
  if (!s->layout || s->rank < 0 || s->rank > IR_MAX_RANK) return true;
  const ir_layout *l = s->layout;
  bool seen[IR_MAX_RANK] = {0};
  for (int i = 0; i < s->rank; i++) {
    int d = l->minor_to_major[i];
    if (d < 0 || d >= s->rank || seen[d]) {
      snprintf(why, n, "layout minor_to_major is not a permutation of 0..%d", s->rank - 1);
      return false;
    }
    seen[d] = true;
  }
  if (l->ntiles < 0 || l->ntiles > IR_MAX_TILES) {
    snprintf(why, n, "layout has %d tiles", l->ntiles);
    return false;
  }
  for (int t = 0; t < l->ntiles; t++) {
    if (l->tiles[t].rank < 1 || l->tiles[t].rank > IR_MAX_TILE_RANK) {
      snprintf(why, n, "layout tile %d has rank %d", t, l->tiles[t].rank);
      return false;
    }
    for (int i = 0; i < l->tiles[t].rank; i++)
      if (l->tiles[t].dims[i] < 1 && l->tiles[t].dims[i] != IR_TILE_COMBINE) {
        snprintf(why, n, "layout tile %d has dimension %lld", t, (long long)l->tiles[t].dims[i]);
        return false;
      }
  }
  if (l->element_bits < 0 || l->memory_space < 0) {
    snprintf(why, n, "layout has a negative E() or S()");
    return false;
  }
  return true;
}

/* ---- per computation -------------------------------------------------- */

/* Finds a cycle among operand edges; returns an instruction on it or
 * IR_NONE. Out-of-range operands are ignored (reported elsewhere). */
static ir_id find_cycle(const ir_comp *cp, arena *a) {
  int n = cp->insts.n;
  int8_t *state = arena_alloc(a, (size_t)n + 1);
  ir_id *stack = arena_array(a, (size_t)n + 1, sizeof(ir_id));
  int32_t *next = arena_array(a, (size_t)n + 1, sizeof(int32_t));
  for (int s = 0; s < n; s++) {
    if (state[s]) continue;
    int sp = 0;
    stack[sp++] = s;
    state[s] = 1;
    next[s] = 0;
    while (sp) {
      ir_id x = stack[sp - 1];
      const ir_inst *in = &cp->insts.v[x];
      if (next[x] < in->nops) {
        ir_id o = in->ops[next[x]++];
        if (o < 0 || o >= n) continue;
        if (state[o] == 1) return o;
        if (state[o] == 0) {
          state[o] = 1;
          next[o] = 0;
          stack[sp++] = o;
        }
      } else {
        state[x] = 2;
        sp--;
      }
    }
  }
  return IR_NONE;
}

static void check_params(vctx *v, const ir_comp *cp) {
  int n = cp->insts.n, np = 0;
  int64_t maxno = -1;
  for (int i = 0; i < n; i++) {
    const ir_inst *in = &cp->insts.v[i];
    if (in->dead || in->op != IR_OP_PARAMETER) continue;
    np++;
    if (in->a->parameter_number > maxno) maxno = in->a->parameter_number;
  }
  if (np == 0) {
    if (cp->nparams != 0)
      report(v, cp->loc, "computation %s: nparams is %d but it has no parameters (call ir_comp_finish)",
             cp->name, cp->nparams);
    return;
  }
  /* Numbers must be exactly 0..np-1. */
  arena_mark mk = arena_get_mark(v->m->arena);
  ir_id *owner = arena_array(v->m->arena, (size_t)np, sizeof(ir_id));
  for (int k = 0; k < np; k++) owner[k] = IR_NONE;
  bool ok = true;
  for (int i = 0; i < n; i++) {
    const ir_inst *in = &cp->insts.v[i];
    if (in->dead || in->op != IR_OP_PARAMETER) continue;
    int64_t k = in->a->parameter_number;
    if (k < 0 || k >= np) {
      report(v, in->info->loc,
             "%%%s: parameter number %lld out of range: computation %s has %d parameters",
             in->info->name, (long long)k, cp->name, np);
      ok = false;
    } else if (owner[k] != IR_NONE) {
      report(v, in->info->loc,
             "%%%s: parameter number %lld already used by %%%s",
             in->info->name, (long long)k,
             cp->insts.v[owner[k]].info->name);
      ok = false;
    } else {
      owner[k] = i;
    }
  }
  if (ok) {
    bool stale = cp->nparams != np || !cp->params;
    for (int k = 0; !stale && k < np; k++) stale = cp->params[k] != owner[k];
    if (stale)
      report(v, cp->loc, "computation %s: params[] is out of date (call ir_comp_finish)", cp->name);
  }
  arena_reset(v->m->arena, mk);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Every ENUM and PREC attribute of in's op (ir/attrs.def) holds one of
 * its names. */
static void check_enum_attrs(vctx *v, const ir_inst *in, const char *nm) {
  for (int r = 0; r < ir_attr_count && ir_attr_on(&ir_attr_ops_any, in->op); r++) {
    const ir_attr_desc *d = &ir_attr_table[r];
    if ((d->kind != IR_AK_ENUM && d->kind != IR_AK_PREC) || !ir_attr_on(&d->ops, in->op)) continue;
    int nnames = 0;
    while (d->names[nnames]) nnames++;
    for (int k = 0; k < (d->kind == IR_AK_PREC ? 2 : 1); k++) {
      int e = IR_ATTR_CFIELD(in->a, d->f, int)[k];
      if (e < 0 || e >= nnames)
        report(v, in->info->loc, "%%%s: invalid %s %d", nm, d->noun, e);
    }
  }
}

/* Replica ids are non-negative and listed once (sorted: O(n log n), an
 * iota list may name 2^20 devices). */
static void check_replica_groups(vctx *v, const ir_inst *in) {
  const ir_replica_groups *g = &in->a->replica_groups;
  if (g->ngroups < 0 || (g->ngroups > 0 && !g->groups)) {
    report(v, in->info->loc, "%%%s: malformed replica_groups", in->info->name);
    return;
  }
  size_t n = 0;
  for (int i = 0; i < g->ngroups; i++) n += (size_t)(g->groups[i].n > 0 ? g->groups[i].n : 0);
  if (n == 0) return;
  arena *a = v->m->arena;
  arena_mark mk = arena_get_mark(a);
  int64_t *ids = arena_array(a, n, sizeof(int64_t));
  size_t k = 0;
  for (int i = 0; i < g->ngroups; i++)
    for (int j = 0; j < g->groups[i].n; j++) ids[k++] = g->groups[i].v[j];
  qsort(ids, n, sizeof(int64_t), cmp_i64);
  if (ids[0] < 0)
    report(v, in->info->loc,
           "%%%s: replica_groups has negative replica id %lld",
           in->info->name, (long long)ids[0]);
  else
    for (size_t i = 1; i < n; i++)
      if (ids[i] == ids[i - 1]) {
        report(v, in->info->loc,
               "%%%s: replica_groups lists replica %lld twice",
               in->info->name, (long long)ids[i]);
        break;
      }
  arena_reset(a, mk);
}

static int comp_param_count(const ir_comp *cp) {
  int n = 0;
  for (int i = 0; i < cp->insts.n; i++)
    if (!cp->insts.v[i].dead && cp->insts.v[i].op == IR_OP_PARAMETER) n++;
  return n;
}

static const ir_shape *comp_param_shape(const ir_comp *cp, int64_t k) {
  for (int i = 0; i < cp->insts.n; i++) {
    const ir_inst *p = &cp->insts.v[i];
    if (!p->dead && p->op == IR_OP_PARAMETER && p->a->parameter_number == k) return p->shape;
  }
  return NULL;
}

/* Computation c (the `what` of in) takes arguments of shapes args and
 * returns `ret`; reports the first mismatch. */
static bool check_signature(vctx *v, const ir_inst *in, ir_comp_id c, const char *what,
                            const ir_shape *args, int nargs, const ir_shape *ret) {
  char b1[160], b2[160];
  if (c < 0 || c >= v->m->comps.n) {
    report(v, in->info->loc, "%%%s: %s has no %s computation", in->info->name,
           ir_op_name(in->op), what);
    return false;
  }
  const ir_comp *cp = &v->m->comps.v[c];
  if (comp_param_count(cp) != nargs) {
    report(v, in->info->loc,
           "%%%s: %s computation %s takes %d parameters, given %d",
           in->info->name, what,
           cp->name, comp_param_count(cp), nargs);
    return false;
  }
  for (int i = 0; i < nargs; i++) {
    const ir_shape *p = comp_param_shape(cp, i);
    if (p && !ir_shape_equal(p, &args[i])) {
      report(v, in->info->loc,
             "%%%s: %s computation %s takes %s as parameter %d, given %s",
             in->info->name,
             what, cp->name, shape_str(b1, sizeof b1, p), i, shape_str(b2, sizeof b2, &args[i]));
      return false;
    }
  }
  if (cp->root >= 0 && cp->root < cp->insts.n && !ir_shape_equal(cp->insts.v[cp->root].shape, ret)) {
    report(v, in->info->loc,
           "%%%s: %s computation %s returns %s, expected %s", in->info->name,
           what, cp->name,
           shape_str(b1, sizeof b1, cp->insts.v[cp->root].shape), shape_str(b2, sizeof b2, ret));
    return false;
  }
  return true;
}

/* call, while, conditional and map: their computations' signatures agree
 * with the operands and the written result (calls[] in the order of
 * ir/ir.h's control-flow contract); false after reporting. */
static bool check_control(vctx *v, const ir_comp *cp, const ir_inst *in) {
  char b1[160], b2[160];
  arena_mark mk = arena_get_mark(v->m->arena);
  int n = in->nops;
  ir_shape *os = arena_array(v->m->arena, (size_t)(n ? n : 1), sizeof(ir_shape));
  for (int k = 0; k < n; k++) os[k] = *cp->insts.v[in->ops[k]].shape;
  ir_comp_id c0 = in->ncalls > 0 ? in->calls[0] : IR_NONE;
  bool ok = true;
  if (in->op == IR_OP_CALL) {
    ok = check_signature(v, in, c0, "to_apply", os, n, in->shape);
  } else if (in->op == IR_OP_WHILE) {
    ir_shape pred = ir_shape_scalar(IR_PRED);
    if (!ir_shape_equal(&os[0], in->shape)) {
      report(v, in->info->loc, "%%%s: while carries %s but is written as %s", in->info->name,
             shape_str(b1, sizeof b1, &os[0]), shape_str(b2, sizeof b2, in->shape));
      ok = false;
    } else {
      ok = check_signature(v, in, c0, "condition", os, 1, &pred) &&
           check_signature(v, in, in->ncalls > 1 ? in->calls[1] : IR_NONE, "body", os, 1, &os[0]);
    }
  } else if (in->op == IR_OP_CONDITIONAL) {
    int nb = in->ncalls;
    if (n < 1 || os[0].type == IR_TUPLE || os[0].rank != 0 ||
        (os[0].type != IR_PRED && os[0].type != IR_S32)) {
      report(v, in->info->loc, "%%%s: conditional selects by a pred[] or s32[] operand 0",
             in->info->name);
      ok = false;
    } else if (os[0].type == IR_PRED && nb != 2) {
      report(v, in->info->loc, "%%%s: conditional on a pred[] has 2 branches, given %d",
             in->info->name, nb);
      ok = false;
    } else if (n != nb + 1) {
      report(v, in->info->loc, "%%%s: conditional has %d branches but %d branch operands",
             in->info->name, nb, n - 1);
      ok = false;
    }
    for (int b = 0; b < nb && ok; b++)
      ok = check_signature(v, in, in->calls[b], "branch", &os[b + 1], 1, in->shape);
  } else if (in->op == IR_OP_MAP) {
    for (int k = 0; k < n && ok; k++) {
      if (os[k].type == IR_TUPLE || !ir_shape_is_array(in->shape) || os[k].rank != in->shape->rank ||
          memcmp(os[k].dims, in->shape->dims, sizeof(int64_t) * (size_t)os[k].rank) != 0) {
        report(v, in->info->loc, "%%%s: map operand %d is %s, the result %s: dimensions differ",
               in->info->name, k, shape_str(b1, sizeof b1, &os[k]),
               shape_str(b2, sizeof b2, in->shape));
        ok = false;
      }
      os[k] = ir_shape_scalar(os[k].type);
    }
    ir_shape ret = ir_shape_scalar(in->shape->type);
    if (ok) ok = check_signature(v, in, c0, "to_apply", os, n, &ret);
  }
  arena_reset(v->m->arena, mk);
  return ok;
}

static void check_inst(vctx *v, ir_comp_id c, ir_id i) {
  const ir_module *m = v->m;
  const ir_comp *cp = &m->comps.v[c];
  const ir_inst *in = &cp->insts.v[i];
  const char *nm = in->info->name ? in->info->name : "?";
  if ((unsigned)in->op >= IR_OP__COUNT) {
    report(v, in->info->loc, "%%%s: unknown opcode %d", nm, (int)in->op);
    return;
  }
  const char *opn = ir_op_name(in->op);
  int arity = ir_op_arity(in->op);
  if (in->nops < 0 || (in->nops > 0 && !in->ops)) {
    report(v, in->info->loc, "%%%s: malformed operand list", nm);
    return;
  }
  if (in->ncalls < 0 || (in->ncalls > 0 && !in->calls)) {
    report(v, in->info->loc, "%%%s: malformed called-computation list", nm);
    return;
  }
  if (arity >= 0 && in->nops != arity) {
    report(v, in->info->loc, "%%%s: %s takes %d operand%s, has %d", nm, opn,
           arity, arity == 1 ? "" : "s", in->nops);
    return;
  }
  char why[160];
  if (!shape_wellformed(in->shape, 0, why, sizeof why)) {
    report(v, in->info->loc, "%%%s: %s", nm, why);
    return;
  }
  bool ops_ok = true;
  for (int k = 0; k < in->nops; k++) {
    ir_id o = in->ops[k];
    if (o < 0 || o >= cp->insts.n) {
      report(v, in->info->loc,
             "%%%s: operand %d refers to instruction %d, not in computation %s",
             nm, k, o, cp->name);
      ops_ok = false;
    } else if (cp->insts.v[o].dead) {
      report(v, in->info->loc,
             "%%%s: operand %d refers to removed instruction %%%s", nm, k,
             cp->insts.v[o].info->name);
      ops_ok = false;
    } else if (o >= i) {
      /* Reported once per computation as a cycle when there is one. */
      ops_ok = false;
    } else if (!shape_wellformed(cp->insts.v[o].shape, 0, why, sizeof why)) {
      ops_ok = false; /* reported at the operand */
    }
  }
  for (int k = 0; k < in->ncalls; k++)
    if (in->calls[k] < 0 || in->calls[k] >= m->comps.n) {
      report(v, in->info->loc, "%%%s: called computation %d does not exist",
             nm, in->calls[k]);
      ops_ok = false;
    }
  if (!(ir_op_flags(in->op) & OPF_CALLS) && in->ncalls) {
    report(v, in->info->loc, "%%%s: %s calls no computations, has %d", nm,
           opn, in->ncalls);
    ops_ok = false;
  }
  if (!layout_ok(in->shape, why, sizeof why)) report(v, in->info->loc,
                                                     "%%%s: %s", nm, why);
  check_enum_attrs(v, in, nm);
  if (in->op == IR_OP_CONSTANT) {
    const ir_literal *l = in->a->literal;
    if (!l) {
      report(v, in->info->loc, "%%%s: constant has no literal", nm);
      ops_ok = false;
    } else if (!ir_shape_equal(&l->shape, in->shape)) {
      report(v, in->info->loc,
             "%%%s: literal shape %s does not match instruction shape %s", nm,
             SHP(&l->shape),
             SHP(in->shape));
      ops_ok = false;
    } else if (ir_shape_is_array(&l->shape)) {
      int64_t cnt;
      if (ir_shape_elements(&l->shape, &cnt) &&
          (l->data == NULL || l->nbytes != (size_t)cnt * (size_t)ir_type_size(l->shape.type))) {
        report(v, in->info->loc,
               "%%%s: literal holds %zu bytes, shape %s needs %lld", nm,
               l->nbytes, SHP(&l->shape),
               (long long)(cnt * ir_type_size(l->shape.type)));
        ops_ok = false;
      }
    }
  }
  if (ir_is_collective(in->op)) {
    char cwhy[240];
    check_replica_groups(v, in);
    if (!ir_coll_check(m, in, cwhy, sizeof cwhy)) report(v, in->info->loc, "%%%s: %s", nm, cwhy);
  }
  if (!ops_ok) return;
  if ((ir_op_flags(in->op) & OPF_CONTROL) && !check_control(v, cp, in)) return;
  char why2[400];
  if (!ir_check_sortrng(m, cp, in, why2, sizeof why2))
    report(v, in->info->loc, "%%%s: %s", nm, why2);

  /* Shapes: inference with the declared shape as the pre-filled target. */
  arena_mark mk = arena_get_mark(m->arena);
  ir_shape few[4]; /* most ops: no arena scratch (this runs after every pass) */
  ir_shape *os = in->nops <= 4 ? few : arena_array(m->arena, (size_t)in->nops, sizeof(ir_shape));
  for (int k = 0; k < in->nops; k++) os[k] = *cp->insts.v[in->ops[k]].shape;
  const ir_attrs *ap = in->a;
  ir_attrs at;
  if ((in->op == IR_OP_DOT || in->op == IR_OP_CONVOLUTION) && ir_shape_is_array(in->shape)) {
    at = *in->a;
    at.preferred_type = in->shape->type;
    ap = &at;
  }
  ir_shape out = *in->shape;
  char err[400];
  if (!ir_infer_shape(m, in->op, os, in->nops, ap, in->calls, in->ncalls, &out, err, sizeof err)) {
    /* Drop inference's "op: " prefix: the instruction name says it. */
    const char *msg = err;
    size_t ol = strlen(opn);
    if (strncmp(msg, opn, ol) == 0 && msg[ol] == ':' && msg[ol + 1] == ' ') msg += ol + 2;
    report(v, in->info->loc, "%%%s: %s", nm, msg);
  } else if (!ir_shape_equal(&out, in->shape)) {
    report(v, in->info->loc, "%%%s: shape %s does not match inferred %s", nm,
           SHP(in->shape), SHP(&out));
  } else if ((ir_op_flags(in->op) & OPF_RUNS) && !ir_small_check(m, cp, in, err, sizeof err)) {
    report(v, in->info->loc, "%%%s: %s", nm, err);
  }
  arena_reset(m->arena, mk);
}

static void check_comp(vctx *v, ir_comp_id c) {
  const ir_comp *cp = &v->m->comps.v[c];
  const char *cn = cp->name ? cp->name : "?";
  if (cp->insts.n == 0) {
    report(v, cp->loc, "computation %s is empty", cn);
    return;
  }
  if (cp->root < 0 || cp->root >= cp->insts.n)
    report(v, cp->loc, "computation %s has no root", cn);
  else if (cp->insts.v[cp->root].dead)
    report(v, cp->loc, "computation %s: root %%%s was removed", cn, cp->insts.v[cp->root].info->name);
  check_params(v, cp);

  /* Order: a cycle, or uses before definitions. */
  arena_mark mk = arena_get_mark(v->m->arena);
  ir_id cyc = find_cycle(cp, v->m->arena);
  arena_reset(v->m->arena, mk);
  if (cyc != IR_NONE) {
    const ir_inst *in = &cp->insts.v[cyc];
    report(v, in->info->loc,
           "%%%s: computation %s has a cycle through this instruction",
           in->info->name, cn);
  } else {
    for (int i = 0; i < cp->insts.n; i++) {
      const ir_inst *in = &cp->insts.v[i];
      if (in->dead || in->nops < 0 || (in->nops && !in->ops)) continue;
      for (int k = 0; k < in->nops; k++)
        if (in->ops[k] >= i && in->ops[k] < cp->insts.n) {
          report(v, in->info->loc,
                 "%%%s: operand %d %%%s is used before its definition",
                 in->info->name, k,
                 cp->insts.v[in->ops[k]].info->name);
          break;
        }
    }
  }
  for (int i = 0; i < cp->insts.n; i++)
    if (!cp->insts.v[i].dead) check_inst(v, c, i);
}

/* ---- module ----------------------------------------------------------- */

/* A set of borrowed strings for check_names: open addressing over
 * (hash, pointer) slots, sized once for every name of the module, so
 * adding a name hashes it once and compares strings only on a hash match
 * (no key copies, no rehashing: the verifier runs after every pass). */
typedef struct name_set {
  uint64_t *hash;
  const char **key;
  size_t mask;
} name_set;

static name_set name_set_make(arena *a, size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  name_set s = {arena_array(a, cap, sizeof(uint64_t)), arena_array(a, cap, sizeof(char *)), cap - 1};
  return s;
}

/* Adds name; false when it was there already. */
static bool name_set_add(name_set *s, const char *name) {
  uint64_t h = 1469598103934665603ull;
  for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  for (size_t i = (size_t)(h ^ h >> 29) & s->mask;; i = (i + 1) & s->mask) {
    if (!s->key[i]) {
      s->key[i] = name;
      s->hash[i] = h;
      return true;
    }
    if (s->hash[i] == h && strcmp(s->key[i], name) == 0) return false;
  }
}

static void check_names(vctx *v) {
  const ir_module *m = v->m;
  arena_mark mk = arena_get_mark(m->arena);
  size_t ninsts = 0;
  for (int c = 0; c < m->comps.n; c++) ninsts += (size_t)m->comps.v[c].insts.n;
  name_set comps = name_set_make(m->arena, (size_t)m->comps.n);
  name_set insts = name_set_make(m->arena, ninsts);
  for (int c = 0; c < m->comps.n; c++) {
    const ir_comp *cp = &m->comps.v[c];
    if (!cp->name) report(v, cp->loc, "computation %d has no name", c);
    else if (!name_set_add(&comps, cp->name)) report(v, cp->loc, "computation name %s is used twice", cp->name);
    for (int i = 0; i < cp->insts.n; i++) {
      const ir_inst *in = &cp->insts.v[i];
      if (in->dead) continue;
      if (!in->info->name || !in->info->name[0]) {
        report(v, in->info->loc,
               "instruction %d of computation %s has no name", i,
               cp->name ? cp->name : "?");
        continue;
      }
      if (!name_set_add(&insts, in->info->name)) report(v, in->info->loc,
                                                        "%%%s: instruction name is used twice",
                                                        in->info->name);
    }
  }
  arena_reset(m->arena, mk);
}

/* Reports calls that lead back to the caller (the call graph must be a DAG). */
static void check_call_graph(vctx *v) {
  const ir_module *m = v->m;
  int n = m->comps.n;
  arena_mark mk = arena_get_mark(m->arena);
  int8_t *state = arena_alloc(m->arena, (size_t)n + 1);
  ir_comp_id *stack = arena_array(m->arena, (size_t)n + 1, sizeof(ir_comp_id));
  int32_t *ni = arena_array(m->arena, (size_t)n + 1, sizeof(int32_t)); /* next inst */
  int32_t *nc = arena_array(m->arena, (size_t)n + 1, sizeof(int32_t)); /* next call in it */
  for (int s = 0; s < n; s++) {
    if (state[s]) continue;
    int sp = 0;
    stack[sp++] = s;
    state[s] = 1;
    ni[s] = nc[s] = 0;
    while (sp) {
      ir_comp_id x = stack[sp - 1];
      const ir_comp *cp = &m->comps.v[x];
      if (ni[x] >= cp->insts.n) {
        state[x] = 2;
        sp--;
        continue;
      }
      const ir_inst *in = &cp->insts.v[ni[x]];
      if (in->dead || in->ncalls <= 0 || !in->calls || nc[x] >= in->ncalls) {
        ni[x]++;
        nc[x] = 0;
        continue;
      }
      ir_comp_id t = in->calls[nc[x]++];
      if (t < 0 || t >= n) continue;
      if (state[t] == 1) {
        report(v, in->info->loc,
               "%%%s: call to %s is recursive (computation %s calls itself)",
               in->info->name,
               m->comps.v[t].name, m->comps.v[t].name);
      } else if (state[t] == 0) {
        state[t] = 1;
        ni[t] = nc[t] = 0;
        stack[sp++] = t;
      }
    }
  }
  arena_reset(m->arena, mk);
}

/* The first element type of s (tuples: depth first) outside the core set
 * and not a token, or IR_TYPE_INVALID. */
static ir_type non_core_type(const ir_shape *s, int depth) {
  if (s->type != IR_TUPLE)
    return ir_type_is_core(s->type) || s->type == IR_TOKEN ? IR_TYPE_INVALID : s->type;
  for (int i = 0; i < s->ntuple && depth < 64; i++) {
    ir_type t = non_core_type(&s->tuple[i], depth + 1);
    if (t != IR_TYPE_INVALID) return t;
  }
  return IR_TYPE_INVALID;
}

/* Reports msg at loc into d and, for the first problem, into err. */
static void runnable_problem(diag *d, src_loc loc, const char *msg, int *problems, char *err,
                             size_t errlen) {
  if (d) diag_error(d, loc, "%s", msg);
  if ((*problems)++ == 0 && err && errlen) {
    if (loc.file && loc.line > 0)
      snprintf(err, errlen, "%s:%d:%d: %s", loc.file, (int)loc.line, (int)loc.col, msg);
    else
      snprintf(err, errlen, "%s", msg);
  }
}

/* The module's replica_count header attribute: 1 when absent, 0 when it is
 * not a positive integer. */
static long long module_replica_count(const ir_module *m) {
  return ir_module_count_attr(m, "replica_count");
}

/* The first replica other than 0 that in's replica_groups (or
 * source_target_pairs) name, or -1. */
static long long other_replica(const ir_inst *in) {
  const ir_replica_groups *rg = in->a->source_target_pairs.ngroups ? &in->a->source_target_pairs
                                                                   : &in->a->replica_groups;
  for (int g = 0; g < rg->ngroups; g++)
    for (int k = 0; k < rg->groups[g].n; k++)
      if (rg->groups[g].v[k] != 0) return rg->groups[g].v[k];
  return -1;
}

/* Why target cannot run custom-call in (into msg), or false when it can. */
static bool custom_call_problem(const ir_module *m, const ir_comp *cp, const ir_inst *in,
                                const char *target, const ir_ffi_table *ffi, char *msg, size_t n) {
  char name[128];
  if (!ir_custom_call_target(in, name, sizeof name)) name[0] = 0;
  switch (ir_custom_call_kind(in, ffi)) {
  case IR_CC_HOST:
    return false;
  case IR_CC_IDENTITY: {
    long long parts = ir_module_count_attr(m, "num_partitions");
    if (parts != 1) {
      if (parts == 0)
        snprintf(msg, n, "module attribute num_partitions is not a positive integer");
      else
        snprintf(msg, n, "custom-call '%s' needs SPMD partitioning: the module asks for %lld "
                 "partitions (num_partitions); target %s runs 1", name, parts, target);
      return true;
    }
    const ir_inst *op = in->nops == 1 && in->ops[0] >= 0 && in->ops[0] < cp->insts.n
                            ? &cp->insts.v[in->ops[0]] : NULL;
    if (!op || op->shape->type == IR_TUPLE || !ir_shape_equal(op->shape, in->shape)) {
      snprintf(msg, n, "custom-call '%s' is the identity: it takes one array operand of its "
               "result's shape", name);
      return true;
    }
    return false;
  }
  case IR_CC_TOPK:
    if (ir_declared_runs(in, target)) return false;
    snprintf(msg, n, "custom-call 'TopK' is not supported by the %s target yet", target);
    return true;
  case IR_CC_UNKNOWN:
  default:
    snprintf(msg, n,
             "custom-call target '%s' is unknown to the %s target (known: Sharding, "
             "SPMDFullToShardShape, SPMDShardToFullShape, TopK; host functions registered "
             "through the API run on interp and cpu)",
             name, target);
    return true;
  }
}

int ir_check_runnable(const ir_module *m, const char *target, diag *d, char *err, size_t errlen) {
  return ir_check_runnable_replicas(m, target, NULL, 1, d, err, errlen);
}

int ir_check_runnable_ffi(const ir_module *m, const char *target, const ir_ffi_table *ffi, diag *d,
                          char *err, size_t errlen) {
  return ir_check_runnable_replicas(m, target, ffi, 1, d, err, errlen);
}

/* Whether the module header writes name. */
static bool header_has(const ir_module *m, const char *name) {
  for (int i = 0; i < m->nraw; i++)
    if (m->raw[i].name && strcmp(m->raw[i].name, name) == 0) return true;
  return false;
}

/* The module-level problems of a run of nrep replicas (replica_count,
 * num_partitions) into msg; false when there are none. */
static bool replicas_problem(const ir_module *m, const char *target, int nrep, bool parts_too,
                             char *msg, size_t n) {
  long long replicas = module_replica_count(m);
  long long parts = ir_module_count_attr(m, "num_partitions");
  if (replicas == 0)
    snprintf(msg, n, "module attribute replica_count is not a positive integer");
  else if (replicas > nrep)
    snprintf(msg, n, "module asks for %lld replicas (replica_count); target %s runs %d", replicas,
             target, nrep);
  else if (replicas < nrep && header_has(m, "replica_count"))
    snprintf(msg, n, "module asks for %lld replica%s (replica_count); asked to run %d", replicas,
             replicas == 1 ? "" : "s", nrep);
  else if (parts_too && parts == 0)
    snprintf(msg, n, "module attribute num_partitions is not a positive integer");
  else if (parts_too && parts != 1)
    snprintf(msg, n, "module asks for %lld partitions (num_partitions); target %s runs 1 (no SPMD "
             "partitioning)", parts, target);
  else
    return false;
  return true;
}

int ir_check_runnable_replicas(const ir_module *m, const char *target, const ir_ffi_table *ffi,
                               int nrep, diag *d, char *err, size_t errlen) {
  int problems = 0;
  if (err && errlen) err[0] = 0;
  char msg[320];
  src_loc at = {m->source_file, 0, 0};
  if (m->entry >= 0 && m->entry < m->comps.n) at = m->comps.v[m->entry].loc;
  if (nrep < 1) {
    snprintf(msg, sizeof msg, "%d replicas asked for; at least 1 runs", nrep);
    runnable_problem(d, at, msg, &problems, err, errlen);
    return problems;
  }
  /* a run of the wrong count is reported once, not at every collective */
  bool count_ok = !replicas_problem(m, target, nrep, false, msg, sizeof msg);
  if (!count_ok) runnable_problem(d, at, msg, &problems, err, errlen);
  for (int c = 0; c < m->comps.n; c++) {
    const ir_comp *cp = &m->comps.v[c];
    for (int i = 0; i < cp->insts.n; i++) {
      const ir_inst *in = &cp->insts.v[i];
      if (in->dead) continue;
      ir_type t = non_core_type(in->shape, 0);
      bool coll = ir_is_collective(in->op) && count_ok;
      long long other = coll && nrep == 1 ? other_replica(in) : -1;
      bool cc = in->op == IR_OP_CUSTOM_CALL;
      if (cc && custom_call_problem(m, cp, in, target, ffi, msg, sizeof msg))
        runnable_problem(d, in->info->loc, msg, &problems, err, errlen);
      if (cc && t == IR_TYPE_INVALID) continue;
      if (((ir_op_flags(in->op) & (OPF_DECLARED | OPF_RUNS)) == OPF_DECLARED && !cc &&
           !ir_declared_runs(in, target)) ||
          !ir_coll_target_runs(in->op, target))
        snprintf(msg, sizeof msg, "'%s' is not supported by the %s target yet", ir_op_name(in->op),
                 target);
      else if (t != IR_TYPE_INVALID)
        snprintf(msg, sizeof msg, "element type '%s' (of '%s') is not supported by the %s target yet",
                 ir_type_name(t), in->info->name ? in->info->name : "?",
                 target);
      else if (other >= 0)
        snprintf(msg, sizeof msg,
                 "'%s': replica_groups name replica %lld; target %s runs one replica (0)",
                 in->info->name ? in->info->name : "?", other, target);
      else if (!coll || ir_coll_check_replicas(m, cp, in, nrep, msg, sizeof msg))
        continue;
      runnable_problem(d, in->info->loc, msg, &problems, err, errlen);
    }
  }
  /* after the instructions: a custom-call's own SPMD message comes first */
  if (!problems && replicas_problem(m, target, nrep, true, msg, sizeof msg))
    runnable_problem(d, at, msg, &problems, err, errlen);
  return problems;
}

int ir_verify(const ir_module *m, diag *d) {
  vctx v = {m, d, 0};
  src_loc none = {m->source_file, 0, 0};
  if (m->entry < 0 || m->entry >= m->comps.n)
    report(&v, none, "module %s has no entry computation", m->name ? m->name : "?");
  check_names(&v);
  check_call_graph(&v);
  for (int c = 0; c < m->comps.n; c++) check_comp(&v, c);
  return v.count;
}
