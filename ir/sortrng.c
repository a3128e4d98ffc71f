/* sortrng.c: sort, top-k (the topk op and the TopK custom-call) and
 * random numbers (rng, rng-bit-generator): their attributes, read from the
 * verbatim text the HLO parser keeps for these OPF_DECLARED ops, and the
 * verifier's checks of their operands, called comparator and written
 * result. Contract: ir.h, "sort, top-k and random numbers". */
#include "ir/ir.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

const char *ir_raw_attr_text(const ir_inst *in, const char *name) {
  for (int k = 0; k < in->info->nraw; k++)
    if (in->info->raw[k].text && strcmp(in->info->raw[k].name, name) == 0)
      return in->info->raw[k].text;
  return NULL;
}

/* An integer written as text, alone; false otherwise. */
static bool parse_int(const char *t, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(t, &end, 10);
  if (end == t || *end || errno) return false;
  *out = v;
  return true;
}

/* "true" / "false"; absent: def. */
static bool parse_bool(const char *t, bool def, bool *out) {
  *out = def;
  if (!t) return true;
  if (strcmp(t, "true") == 0) return (*out = true);
  return strcmp(t, "false") == 0 && !(*out = false);
}

bool ir_sort_attrs_of(const ir_inst *in, int64_t *dim, bool *stable) {
  const char *d = ir_raw_attr_text(in, "dimensions");
  char buf[32];
  size_t n = d ? strlen(d) : 0;
  if (n < 3 || n >= sizeof buf || d[0] != '{' || d[n - 1] != '}') return false;
  memcpy(buf, d + 1, n - 2);
  buf[n - 2] = 0;
  return parse_int(buf, dim) && parse_bool(ir_raw_attr_text(in, "is_stable"), false, stable);
}

bool ir_is_topk_custom_call(const ir_inst *in) {
  const char *t = in->op == IR_OP_CUSTOM_CALL ? ir_raw_attr_text(in, "custom_call_target") : NULL;
  return t && strcmp(t, "\"TopK\"") == 0;
}

bool ir_topk_attrs_of(const ir_inst *in, int64_t *k, bool *largest) {
  if (ir_is_topk_custom_call(in)) {
    const ir_shape *s = in->shape;
    if (s->type != IR_TUPLE || s->ntuple != 2 || s->tuple[0].rank < 1) return false;
    *k = s->tuple[0].dims[s->tuple[0].rank - 1];
    *largest = true;
    return true;
  }
  const char *t = ir_raw_attr_text(in, "k");
  return in->op == IR_OP_TOPK && t && parse_int(t, k) &&
         parse_bool(ir_raw_attr_text(in, "largest"), true, largest);
}

bool ir_rng_alg_of(const ir_inst *in, ir_rng_alg *out) {
  static const char *const names[] = {"rng_default", "rng_three_fry", "rng_philox"};
  const char *t = ir_raw_attr_text(in, "algorithm");
  for (int i = 0; t && i < 3; i++)
    if (strcmp(t, names[i]) == 0) {
      *out = (ir_rng_alg)i;
      return true;
    }
  return false;
}

bool ir_rng_dist_of(const ir_inst *in, ir_rng_dist *out) {
  const char *t = ir_raw_attr_text(in, "distribution");
  if (!t) return false;
  if (strcmp(t, "rng_uniform") == 0) *out = IR_RNG_UNIFORM;
  else if (strcmp(t, "rng_normal") == 0) *out = IR_RNG_NORMAL;
  else return false;
  return true;
}

bool ir_declared_runs(const ir_inst *in, const char *target) {
  bool interp = target && strcmp(target, "interp") == 0;
  switch (in->op) {
  case IR_OP_SORT:
  case IR_OP_TOPK:
    return true; /* every target: interp, cpu, the TPU (backend/tpu/lower_sort.c) */
  case IR_OP_RNG:
  case IR_OP_RNG_BIT_GENERATOR:
    return interp;
  default:
    return ir_is_topk_custom_call(in);
  }
}

/* ---- checks ------------------------------------------------------------ */

typedef struct chk {
  const ir_module *m;
  const ir_comp *cp;
  const ir_inst *in;
  char *msg;
  size_t n;
} chk;

static bool bad(chk *c, const char *fmt, ...) BASE_PRINTF(2, 3);
static bool bad(chk *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->msg, c->n, fmt, ap);
  va_end(ap);
  return false;
}

static const ir_shape *opnd(chk *c, int k) { return c->cp->insts.v[c->in->ops[k]].shape; }

#define SHP(s) ir_shape_str((char[160]){0}, 160, (s))

/* The written result equals want (layouts aside). */
static bool result_is(chk *c, const ir_shape *want) {
  if (ir_shape_equal(c->in->shape, want)) return true;
  return bad(c, "%s result is written as %s, expected %s", ir_op_name(c->in->op),
             SHP(c->in->shape), SHP(want));
}

/* A tuple shape of n elements in the module's arena. */
static ir_shape tuple_of(chk *c, const ir_shape *el, int n) {
  ir_shape t;
  memset(&t, 0, sizeof t);
  t.type = IR_TUPLE;
  t.ntuple = n;
  t.tuple = arena_array(c->m->arena, (size_t)n, sizeof(ir_shape));
  for (int i = 0; i < n; i++) t.tuple[i] = ir_shape_array(el[i].type, el[i].rank, el[i].dims);
  return t;
}

/* Comparator `comp` takes 2n scalars (parameters 2i, 2i + 1 of types[i])
 * and returns pred[]. */
static bool check_comparator(chk *c, ir_comp_id comp, const ir_type *types, int n) {
  if (comp < 0 || comp >= c->m->comps.n)
    return bad(c, "%s has no comparator computation (to_apply)", ir_op_name(c->in->op));
  const ir_comp *k = &c->m->comps.v[comp];
  int np = 0;
  for (int i = 0; i < k->insts.n; i++) {
    const ir_inst *p = &k->insts.v[i];
    if (p->dead || p->op != IR_OP_PARAMETER) continue;
    np++;
    int64_t pn = p->a->parameter_number;
    if (pn < 0 || pn >= 2 * (int64_t)n) continue; /* counted below */
    ir_shape want = ir_shape_scalar(types[pn / 2]);
    if (!ir_shape_equal(p->shape, &want))
      return bad(c, "comparator %s takes %s as parameter %lld, expected %s", k->name,
                 SHP(p->shape), (long long)pn, SHP(&want));
  }
  if (np != 2 * n)
    return bad(c, "comparator %s takes %d parameters, expected %d (two per operand)", k->name,
               np, 2 * n);
  ir_shape pred = ir_shape_scalar(IR_PRED);
  if (k->root >= 0 && k->root < k->insts.n && !ir_shape_equal(k->insts.v[k->root].shape, &pred))
    return bad(c, "comparator %s returns %s, expected pred[]", k->name,
               SHP(k->insts.v[k->root].shape));
  return true;
}

static bool check_sort(chk *c) {
  const ir_inst *in = c->in;
  int64_t dim;
  bool stable;
  if (in->nops < 1) return bad(c, "sort needs at least one operand");
  if (!ir_sort_attrs_of(in, &dim, &stable))
    return bad(c, "sort needs dimensions={d} (one dimension) and is_stable=true|false");
  const ir_shape *s0 = opnd(c, 0);
  ir_type types[64];
  if (in->nops > 64) return bad(c, "sort of %d operands (at most 64)", (int)in->nops);
  for (int k = 0; k < in->nops; k++) {
    const ir_shape *s = opnd(c, k);
    if (s->type == IR_TUPLE || s->rank != s0->rank ||
        memcmp(s->dims, s0->dims, sizeof(int64_t) * (size_t)s0->rank) != 0)
      return bad(c, "sort operand %d is %s, not an array of the dimensions of operand 0 (%s)", k,
                 SHP(s), SHP(s0));
    types[k] = s->type;
  }
  if (dim < 0 || dim >= s0->rank)
    return bad(c, "sort dimension %lld out of range for rank %d", (long long)dim, s0->rank);
  ir_shape want[64];
  for (int k = 0; k < in->nops; k++) want[k] = *opnd(c, k);
  ir_shape t = in->nops == 1 ? ir_shape_array(want[0].type, want[0].rank, want[0].dims)
                             : tuple_of(c, want, in->nops);
  if (!result_is(c, &t)) return false;
  return check_comparator(c, in->ncalls == 1 ? in->calls[0] : IR_NONE, types, in->nops);
}

static bool check_topk(chk *c) {
  const ir_inst *in = c->in;
  bool cc = in->op == IR_OP_CUSTOM_CALL;
  if (in->nops != 1) return bad(c, "TopK takes one operand, has %d", (int)in->nops);
  const ir_shape *x = opnd(c, 0);
  if (x->type == IR_TUPLE || x->rank < 1 || (cc && x->rank > 2))
    return bad(c, "%s operand is %s, expected an array of rank %s", cc ? "TopK" : "topk", SHP(x),
               cc ? "1 or 2" : ">= 1");
  int64_t k;
  bool largest;
  if (!ir_topk_attrs_of(in, &k, &largest))
    return bad(c, cc ? "TopK custom-call result must be a (values, indices) tuple"
                     : "topk needs k=N and largest=true|false");
  int64_t n = x->dims[x->rank - 1];
  if (k < 0 || k > n)
    return bad(c, "%s k=%lld out of range for a last dimension of %lld", cc ? "TopK" : "topk",
               (long long)k, (long long)n);
  ir_shape el[2] = {*x, *x};
  el[0].dims[x->rank - 1] = el[1].dims[x->rank - 1] = k;
  el[1].type = IR_S32;
  ir_shape t = tuple_of(c, el, 2);
  if (!result_is(c, &t)) return false;
  if (!cc || in->ncalls == 0) return true;
  return check_comparator(c, in->ncalls == 1 ? in->calls[0] : IR_NONE, &x->type, 1);
}

static bool check_rng_bits(chk *c) {
  const ir_inst *in = c->in;
  ir_rng_alg alg;
  if (!ir_rng_alg_of(in, &alg))
    return bad(c, "rng-bit-generator needs algorithm=rng_default|rng_three_fry|rng_philox");
  const ir_shape *st = opnd(c, 0);
  int64_t ns = alg == IR_RNG_THREE_FRY ? 2 : 3;
  if (st->type != IR_U64 || st->rank != 1 || st->dims[0] < 2 || st->dims[0] > ns)
    return bad(c, "rng-bit-generator state is %s, expected u64[2]%s", SHP(st),
               alg == IR_RNG_THREE_FRY ? "" : " or u64[3]");
  const ir_shape *r = in->shape;
  if (r->type != IR_TUPLE || r->ntuple != 2 || r->tuple[1].type == IR_TUPLE)
    return bad(c, "rng-bit-generator result must be a (state, bits) tuple");
  ir_type bt = r->tuple[1].type;
  int bits = ir_type_size(bt) * 8;
  if (!ir_type_is_int(bt) || bt == IR_S4 || bt == IR_U4 || bits < 8)
    return bad(c, "rng-bit-generator bits must be an integer type of 8 to 64 bits, not %s",
               ir_type_name(bt));
  ir_shape el[2] = {*st, r->tuple[1]};
  ir_shape t = tuple_of(c, el, 2);
  return result_is(c, &t);
}

static bool check_rng(chk *c) {
  const ir_inst *in = c->in;
  ir_rng_dist d;
  if (!ir_rng_dist_of(in, &d))
    return bad(c, "rng needs distribution=rng_uniform|rng_normal");
  if (in->nops != 2) return bad(c, "rng takes two operands, has %d", (int)in->nops);
  const ir_shape *r = in->shape;
  for (int k = 0; k < 2; k++) {
    const ir_shape *s = opnd(c, k);
    if (s->type != r->type || s->rank != 0)
      return bad(c, "rng operand %d is %s, expected a scalar of the result type %s", k, SHP(s),
                 ir_type_name(r->type));
  }
  bool f = r->type == IR_F32 || r->type == IR_BF16 || r->type == IR_F16;
  if (r->type == IR_TUPLE || (!f && (d == IR_RNG_NORMAL || r->type != IR_S32)))
    return bad(c, "rng %s result must be %s, not %s",
               d == IR_RNG_NORMAL ? "rng_normal" : "rng_uniform",
               d == IR_RNG_NORMAL ? "f32, bf16 or f16" : "f32, bf16, f16 or s32", SHP(r));
  return true;
}

bool ir_check_sortrng(const ir_module *m, const ir_comp *cp, const ir_inst *in, char *msg,
                      size_t n) {
  chk c = {m, cp, in, msg, n};
  arena_mark mk = arena_get_mark(m->arena);
  bool ok = true;
  if (in->op == IR_OP_SORT) ok = check_sort(&c);
  else if (in->op == IR_OP_TOPK || ir_is_topk_custom_call(in)) ok = check_topk(&c);
  else if (in->op == IR_OP_RNG_BIT_GENERATOR) ok = check_rng_bits(&c);
  else if (in->op == IR_OP_RNG) ok = check_rng(&c);
  arena_reset(m->arena, mk);
  return ok;
}
