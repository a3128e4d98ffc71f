/* opgen.c: one-op modules with every kind of operand and use (opgen.h). */
#include "tests/common/opgen.h"
#include "tests/common/testgen.h"
#include "tests/common/gsdims.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

/* Every op of ops.def with its flags; the covered ones are those without
 * OPF_DECLARED (which import and print only), except the collectives other
 * than all-reduce, replica-id and partition-id, whose values depend on the
 * replicas of a run (tests/eval/test_eval_coll.c, tests/eval/coll_numpy.py
 * test them over N replicas). */
static const struct {
  ir_op op;
  unsigned flags;
} op_table[] = {
#define OP(e, s, n, f, d) {IR_OP_##e, (f)},
#include "ir/ops.def"
#undef OP
};

/* The ops whose values depend on the replicas of a run. */
static bool replica_dependent(ir_op op) {
  return (ir_is_collective(op) && op != IR_OP_ALL_REDUCE) || op == IR_OP_ALL_REDUCE_DONE ||
         op == IR_OP_ALL_GATHER_DONE || op == IR_OP_COLLECTIVE_PERMUTE_DONE ||
         op == IR_OP_REPLICA_ID || op == IR_OP_PARTITION_ID;
}

static bool covered(size_t i) {
  ir_op op = op_table[i].op;
  return !(op_table[i].flags & OPF_DECLARED) && !replica_dependent(op);
}

int og_nops(void) {
  int n = 0;
  for (size_t i = 0; i < COUNTOF(op_table); i++) n += covered(i);
  return n;
}

ir_op og_op(int i) {
  for (size_t j = 0; j < COUNTOF(op_table); j++)
    if (covered(j) && i-- == 0) return op_table[j].op;
  base_die("opgen: op %d out of range", i);
}

const char *og_source_name(og_source s) {
  static const char *const n[] = {"param", "const", "splat", "computed"};
  return (unsigned)s < OG_NSOURCES ? n[s] : "?";
}

const char *og_use_name(og_use u) {
  static const char *const n[] = {"root", "in-tuple", "feeds"};
  return (unsigned)u < OG_NUSES ? n[u] : "?";
}

typedef struct gen {
  uint64_t rs;
  ir_module *m;
  ir_comp_id c;   /* the computation being built (the entry, or a body) */
  int nparams;    /* entry parameters so far */
  og_case *k;
  int slot;       /* the next operand slot of the op under test */
  bool bad;       /* an instruction did not infer: the attempt is redone */
} gen;

static uint64_t rnd(gen *g) { return tc_splitmix(&g->rs); }
static int pick(gen *g, int n) { return n > 0 ? (int)(rnd(g) % (uint64_t)n) : 0; }

static void note(gen *g, const char *fmt, ...) {
  size_t len = strlen(g->k->desc);
  if (len + 1 >= sizeof g->k->desc) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g->k->desc + len, sizeof g->k->desc - len, fmt, ap);
  va_end(ap);
}

static const ir_shape *shp(gen *g, ir_id v) { return ir_inst_get(g->m, g->c,
								 v)->shape; }

static ir_ints ints(gen *g, int n, const int64_t *v) { return tc_ints(g->m->arena, n, v); }

static ir_attrs noattrs(void) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  return a;
}

/* op(ops) in the current computation when it infers (target: the result
 * shape of ops that need one); else marks the attempt bad and returns
 * IR_NONE. Any IR_NONE operand propagates. */
static ir_id emit(gen *g, ir_op op, const ir_id *ops, int nops, const ir_attrs *at,
                  const ir_comp_id *calls, int ncalls, const ir_shape *target) {
  if (g->bad) return IR_NONE;
  ir_shape os[OG_MAX_SLOTS * 2], out;
  for (int i = 0; i < nops; i++) {
    if (ops[i] == IR_NONE) return g->bad = true, IR_NONE;
    os[i] = *shp(g, ops[i]);
  }
  ir_attrs a = at ? *at : noattrs();
  memset(&out, 0, sizeof out);
  if (target) out = *target;
  char err[256];
  if (!ir_infer_shape(g->m, op, os, nops, &a, calls, ncalls, &out, err, sizeof err))
    return g->bad = true, IR_NONE;
  src_loc loc;
  memset(&loc, 0, sizeof loc);
  return ir_build_shaped(g->m, g->c, op, ops, nops, &a, calls, ncalls, &out, loc);
}

static ir_id emit1(gen *g, ir_op op, ir_id x) { return emit(g, op, &x, 1, NULL, NULL, 0, NULL); }
static ir_id emit2(gen *g, ir_op op, ir_id x, ir_id y) {
  ir_id ops[2] = {x, y};
  return emit(g, op, ops, 2, NULL, NULL, 0, NULL);
}
static ir_id emit_to(gen *g, ir_op op, ir_id x, const ir_attrs *a, const ir_shape *s) {
  return emit(g, op, &x, 1, a, NULL, 0, s);
}

/* ---- values ---------------------------------------------------------- */

static const uint32_t float_specials[] = {
    0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
    0x7FC12345u, 0x7F800001u, 0xFF812345u, 0x00000001u, 0x807FFFFFu, 0x00400000u,
    0x3F808000u, 0x3F818000u, 0x7F7FFFFFu, 0x4B000000u, 0x4F000000u, 0xCF000001u,
    0x3F000000u, 0xBFC00000u, 0x42B20000u, 0x477FF000u, 0x38800000u};
static const int32_t int_specials[] = {INT32_MIN, INT32_MAX, -1, 0, 1, 31, 32, -128, 127, 255};

static void put_random(gen *g, ir_literal *l, int64_t i) {
  ir_type t = l->shape.type;
  if (ir_type_is_float(t)) {
    uint32_t u;
    if (pick(g, 8) == 0) {
      u = float_specials[pick(g, (int)COUNTOF(float_specials))];
    } else {
      float f = (float)((double)pick(g, 1 << 24) / (double)(1 << 21) - 4.0);
      memcpy(&u, &f, 4);
    }
    float f;
    memcpy(&f, &u, 4);
    if (t == IR_F32) memcpy((uint8_t *)l->data + 4 * i, &u, 4);
    else if (t == IR_BF16) ((uint16_t *)l->data)[i] = (uint16_t)(u >> 16);
    else ir_literal_set_f64(l, i, f);
  } else if (t == IR_PRED) {
    ir_literal_set_i64(l, i, pick(g, 2));
  } else {
    int64_t v;
    switch (pick(g, 5)) {
    case 0: v = pick(g, 21) - 10; break;
    case 1: v = pick(g, 2001) - 1000; break;
    case 2: v = pick(g, 40) - 4; break;
    case 3: v = int_specials[pick(g, (int)COUNTOF(int_specials))]; break;
    default: v = (int32_t)(uint32_t)rnd(g); break;
    }
    ir_literal_set_i64(l, i, v); /* wraps to s8 */
  }
}

/* A literal of shape s (a tuple: of its elements) with random values, or
 * with one value repeated when splat. */
static ir_literal *random_literal(gen *g, arena *a, const ir_shape *s, bool splat) {
  ir_literal *l = ir_literal_create(a, s);
  if (s->type == IR_TUPLE) {
    for (int i = 0; i < s->ntuple; i++) l->elems[i] = random_literal(g, a, &s->tuple[i], splat);
    return l;
  }
  int64_t n = ir_shape_count(s), es = ir_type_size(s->type);
  for (int64_t i = 0; i < n; i++) {
    if (splat && i > 0) memcpy((uint8_t *)l->data + i * es, l->data, (size_t)es);
    else put_random(g, l, i);
  }
  return l;
}

/* ---- shapes and types ------------------------------------------------ */

static const int64_t sizes[] = {1, 2, 3, 5, 7, 8, 9, 17, 129, 130};
enum { MAX_ELEMS = 3000 };

static int64_t rand_dim(gen *g) { return pick(g, 4) ? sizes[pick(g, 8)] : sizes[pick(g, 10)]; }

static ir_shape rand_shape_rank(gen *g, ir_type t, int rank) {
  int64_t d[IR_MAX_RANK];
  for (int tries = 0;; tries++) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= (d[i] = tries > 20 ? 1 + pick(g, 3) : rand_dim(g));
    if (n <= MAX_ELEMS) break;
  }
  return ir_shape_array(t, rank, d);
}

static ir_shape rand_shape(gen *g, ir_type t) {
  static const int ranks[] = {0, 1, 1, 2, 2, 2, 3, 3};
  return rand_shape_rank(g, t, ranks[pick(g, 8)]);
}

static const ir_type floats[] = {IR_F32, IR_F32, IR_BF16, IR_F16};
static const ir_type numbers[] = {IR_F32, IR_BF16, IR_F16, IR_S32, IR_S8};
static const ir_type ints_only[] = {IR_S32, IR_S32, IR_S8};
static const ir_type logical[] = {IR_S32, IR_S8, IR_PRED};
static const ir_type every[] = {IR_F32, IR_BF16, IR_F16, IR_S32, IR_S8, IR_PRED};

#define PICK_TYPE(g, list) ((list)[pick(g, (int)COUNTOF(list))])

/* The element types op takes as its main operand. */
static ir_type type_for(gen *g, ir_op op) {
  unsigned f = ir_op_flags(op);
  if (f & OPF_FLOAT) return PICK_TYPE(g, floats);
  if (op == IR_OP_NOT || op == IR_OP_AND || op == IR_OP_OR || op == IR_OP_XOR)
    return PICK_TYPE(g, logical);
  if (f & OPF_INT) return PICK_TYPE(g, ints_only);
  if (op == IR_OP_ABS || op == IR_OP_NEGATE || op == IR_OP_SIGN || op == IR_OP_CLAMP ||
      op == IR_OP_IOTA)
    return PICK_TYPE(g, numbers);
  if (op == IR_OP_CONVOLUTION) return pick(g, 4) ? PICK_TYPE(g, floats) : IR_S32;
  return PICK_TYPE(g, every);
}

/* ---- operand sources -------------------------------------------------- */

static ir_comp_id reducer(gen *g, ir_op op, const ir_type *types, int n);

static ir_id param(gen *g, const ir_shape *s) {
  return tc_param(g->m, g->m->entry, s, g->nparams++);
}

static ir_id constant(gen *g, const ir_shape *s, bool splat) {
  return tc_constant(g->m, g->c, random_literal(g, g->m->arena, s, splat));
}

static ir_id broadcast_dims(gen *g, ir_id x, const int64_t *dims, int n, const ir_shape *s) {
  ir_attrs a = noattrs();
  a.dimensions = ints(g, n, dims);
  return emit_to(g, IR_OP_BROADCAST, x, &a, s);
}

static ir_id splat(gen *g, const ir_shape *s) {
  if (s->rank == 0 || pick(g, 2)) {
    note(g, "(literal)");
    return constant(g, s, true);
  }
  ir_shape one = ir_shape_scalar(s->type);
  note(g, "(broadcast)");
  return broadcast_dims(g, constant(g, &one, false), NULL, 0, s);
}

static ir_type other_type(gen *g, ir_type t) {
  ir_type o;
  do o = PICK_TYPE(g, every);
  while (o == t);
  return o;
}

/* The result of some op on fresh parameters, of shape s (an array). */
static ir_id computed(gen *g, const ir_shape *s) {
  ir_type t = s->type;
  int r = s->rank;
  int64_t n = ir_shape_count(s);
  for (;;) {
    switch (pick(g, 9)) {
    case 0: /* negate or not */
      note(g, "(%s)", t == IR_PRED ? "not" : "negate");
      return emit1(g, t == IR_PRED ? IR_OP_NOT : IR_OP_NEGATE, param(g, s));
    case 1: { /* convert from another type */
      ir_shape p = ir_shape_array(other_type(g, t), r, s->dims);
      note(g, "(convert from %s)", ir_type_name(p.type));
      return emit_to(g, IR_OP_CONVERT, param(g, &p), NULL, s);
    }
    case 2: { /* broadcast of a lower-rank parameter (or a scalar) */
      if (r == 0) break;
      int64_t keep[IR_MAX_RANK], pd[IR_MAX_RANK];
      int nk = 0;
      for (int i = 0; i < r; i++)
        if (pick(g, 2)) pd[nk] = s->dims[i], keep[nk++] = i;
      ir_shape p = ir_shape_array(t, nk, pd);
      note(g, "(broadcast of rank %d)", nk);
      return broadcast_dims(g, param(g, &p), keep, nk, s);
    }
    case 3: { /* slice of a larger parameter */
      if (r == 0) break;
      int64_t pd[IR_MAX_RANK], st[IR_MAX_RANK], li[IR_MAX_RANK], sd[IR_MAX_RANK];
      for (int i = 0; i < r; i++) {
        sd[i] = 1 + (pick(g, 4) == 0);
        int64_t extra = pick(g, 4);
        st[i] = pick(g, (int)extra + 1);
        pd[i] = (s->dims[i] - 1) * sd[i] + 1 + extra;
        li[i] = st[i] + (s->dims[i] - 1) * sd[i] + 1;
      }
      ir_shape p = ir_shape_array(t, r, pd);
      ir_attrs a = noattrs();
      a.slice_start = ints(g, r, st);
      a.slice_limit = ints(g, r, li);
      a.slice_stride = ints(g, r, sd);
      note(g, "(slice)");
      return emit(g, IR_OP_SLICE, (ir_id[]){param(g, &p)}, 1, &a, NULL, 0, NULL);
    }
    case 4: { /* reverse */
      if (r == 0) break;
      int64_t d[IR_MAX_RANK];
      int nd = 0;
      for (int i = 0; i < r; i++)
        if (pick(g, 2) || (i == r - 1 && nd == 0)) d[nd++] = i;
      ir_attrs a = noattrs();
      a.dimensions = ints(g, nd, d);
      note(g, "(reverse)");
      return emit(g, IR_OP_REVERSE, (ir_id[]){param(g, s)}, 1, &a, NULL, 0, NULL);
    }
    case 5: { /* transpose of the transposed parameter */
      if (r < 2) break;
      int64_t perm[IR_MAX_RANK], pd[IR_MAX_RANK];
      for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
      for (int i = 0; i < r; i++) pd[i] = s->dims[perm[i]];
      ir_shape p = ir_shape_array(t, r, pd);
      ir_attrs a = noattrs();
      a.dimensions = ints(g, r, perm);
      note(g, "(transpose)");
      return emit(g, IR_OP_TRANSPOSE, (ir_id[]){param(g, &p)}, 1, &a, NULL, 0, NULL);
    }
    case 6: { /* reshape of a flat (or rank-2) parameter */
      ir_shape p = ir_shape_array(t, 1, &n);
      if (r == 1) {
        int64_t d2[2] = {1, n};
        p = ir_shape_array(t, 2, d2);
      }
      note(g, "(reshape)");
      return emit_to(g, IR_OP_RESHAPE, param(g, &p), NULL, s);
    }
    case 7: /* add (pred: and) of two parameters */
      note(g, "(%s)", t == IR_PRED ? "and" : "add");
      return emit2(g, t == IR_PRED ? IR_OP_AND : IR_OP_ADD, param(g, s), param(g, s));
    default: { /* a scalar: reduce of a vector */
      if (r != 0) break;
      int64_t len = sizes[pick(g, 10)], zero = 0;
      ir_shape p = ir_shape_array(t, 1, &len);
      ir_op rop = t == IR_PRED ? IR_OP_OR : IR_OP_MAXIMUM;
      ir_comp_id rc = reducer(g, rop, &t, 1);
      ir_attrs a = noattrs();
      a.dimensions = ints(g, 1, &zero);
      ir_id ops[2] = {param(g, &p), param(g, s)};
      note(g, "(reduce %s)", ir_op_name(rop));
      return emit(g, IR_OP_REDUCE, ops, 2, &a, &rc, 1, NULL);
    }
    }
  }
}

/* The reduction computation of n inputs of the given types: op over one
 * input; over two (value, index), a max-with-index (argmax) that keeps
 * the first operand's pair on ties. */
static ir_comp_id reducer(gen *g, ir_op op, const ir_type *types, int n) {
  ir_comp_id rc = ir_comp_add(g->m, ir_unique_name(g->m, n == 1 ? ir_op_name(op) : "argmax"));
  ir_comp_id save = g->c;
  g->c = rc;
  ir_id p[4];
  for (int i = 0; i < 2 * n; i++) {
    ir_shape si = ir_shape_scalar(types[i % n]);
    p[i] = tc_param(g->m, rc, &si, i);
  }
  ir_id root;
  if (n == 1) {
    root = emit2(g, op, p[0], p[1]);
  } else {
    ir_attrs a = noattrs();
    a.cmp_dir = IR_CMP_GE;
    ir_id ge = emit(g, IR_OP_COMPARE, (ir_id[]){p[0], p[2]}, 2, &a, NULL, 0, NULL);
    ir_id v = emit(g, IR_OP_SELECT, (ir_id[]){ge, p[0], p[2]}, 3, NULL, NULL, 0, NULL);
    ir_id i = emit(g, IR_OP_SELECT, (ir_id[]){ge, p[1], p[3]}, 3, NULL, NULL, 0, NULL);
    root = emit2(g, IR_OP_TUPLE, v, i);
  }
  g->c = save;
  if (root == IR_NONE) return IR_NONE;
  ir_comp_get(g->m, rc)->root = root;
  ir_comp_finish(g->m, rc);
  return rc;
}

/* A reducer op for type t. */
static ir_op reduce_op_for(gen *g, ir_type t) {
  static const ir_op fl[] = {IR_OP_ADD, IR_OP_ADD, IR_OP_MAXIMUM, IR_OP_MINIMUM, IR_OP_MULTIPLY};
  static const ir_op in[] = {IR_OP_ADD, IR_OP_MAXIMUM, IR_OP_MINIMUM, IR_OP_MULTIPLY, IR_OP_AND,
                             IR_OP_OR};
  static const ir_op pr[] = {IR_OP_AND, IR_OP_OR};
  if (ir_type_is_float(t)) return fl[pick(g, (int)COUNTOF(fl))];
  if (t == IR_PRED) return pr[pick(g, 2)];
  return in[pick(g, (int)COUNTOF(in))];
}

/* The next operand slot of the op under test, of shape s, from its
 * source. */
static ir_id operand(gen *g, const ir_shape *s) {
  int j = g->slot++;
  og_source src = j < OG_MAX_SLOTS ? g->k->src[j] : OG_PARAM;
  if (j < OG_MAX_SLOTS) g->k->nslots = j + 1;
  note(g, " %s", og_source_name(src));
  if (s->type == IR_TUPLE) {
    if (src == OG_PARAM) return param(g, s);
    if (src != OG_COMPUTED) return constant(g, s, src == OG_SPLAT);
    ir_id el[4];
    for (int i = 0; i < s->ntuple && i < 4; i++) el[i] = computed(g, &s->tuple[i]);
    return emit(g, IR_OP_TUPLE, el, s->ntuple, NULL, NULL, 0, NULL);
  }
  switch (src) {
  case OG_PARAM: return param(g, s);
  case OG_CONST: return constant(g, s, false);
  case OG_SPLAT: return splat(g, s);
  default: return computed(g, s);
  }
}

/* ---- the op under test ------------------------------------------------ */

static ir_precision rand_precision(gen *g) {
  int r = pick(g, 6);
  return r < 3 ? IR_PREC_DEFAULT : r < 5 ? IR_PREC_HIGH : IR_PREC_HIGHEST;
}

static ir_id build_reshape(gen *g, ir_type t) {
  ir_shape o = rand_shape(g, t);
  int64_t d[IR_MAX_RANK + 1], n = ir_shape_count(&o);
  int r = o.rank;
  memcpy(d, o.dims, sizeof(int64_t) * (size_t)r);
  switch (pick(g, 4)) {
  case 0: /* flatten */
    r = n == 1 && pick(g, 2) ? 0 : 1;
    d[0] = n;
    break;
  case 1: /* insert a 1 */
    if (r < IR_MAX_RANK) {
      int at = pick(g, r + 1);
      memmove(d + at + 1, d + at, sizeof(int64_t) * (size_t)(r - at));
      d[at] = 1;
      r++;
    }
    break;
  case 2: /* merge two neighbours */
    if (r >= 2) {
      int at = pick(g, r - 1);
      d[at] *= d[at + 1];
      memmove(d + at + 1, d + at + 2, sizeof(int64_t) * (size_t)(r - at - 2));
      r--;
    }
    break;
  default: /* split the first even (or divisible by 3) dim */
    for (int i = 0; i < r; i++) {
      int64_t f = d[i] % 2 == 0 ? 2 : d[i] % 3 == 0 ? 3 : 0;
      if (!f || d[i] == f || r >= IR_MAX_RANK) continue;
      memmove(d + i + 1, d + i, sizeof(int64_t) * (size_t)(r - i));
      d[i] = f;
      d[i + 1] /= f;
      r++;
      break;
    }
  }
  ir_shape s = ir_shape_array(t, r, d);
  return emit_to(g, IR_OP_RESHAPE, operand(g, &o), NULL, &s);
}

static ir_id build_movement(gen *g, ir_op op, ir_type t) {
  ir_shape o = rand_shape(g, t);
  int r = o.rank;
  ir_attrs a = noattrs();
  int64_t v1[IR_MAX_RANK], v2[IR_MAX_RANK], v3[IR_MAX_RANK];
  switch (op) {
  case IR_OP_BROADCAST: {
    int64_t keep[IR_MAX_RANK], od[IR_MAX_RANK];
    int nk = 0;
    if (r == 0) o = rand_shape_rank(g, t, 1 + pick(g, 3)), r = o.rank;
    for (int i = 0; i < r; i++)
      if (pick(g, 2)) od[nk] = o.dims[i], keep[nk++] = i;
    ir_shape x = ir_shape_array(t, nk, od);
    note(g, " rank %d->%d", nk, r);
    return broadcast_dims(g, operand(g, &x), keep, nk, &o);
  }
  case IR_OP_TRANSPOSE:
    for (int i = 0; i < r; i++) v1[i] = i;
    for (int i = r - 1; i > 0; i--) {
      int j = pick(g, i + 1);
      int64_t tmp = v1[i];
      v1[i] = v1[j];
      v1[j] = tmp;
    }
    a.dimensions = ints(g, r, v1);
    break;
  case IR_OP_SLICE:
    for (int i = 0; i < r; i++) {
      v1[i] = pick(g, (int)o.dims[i]);
      v2[i] = v1[i] + 1 + pick(g, (int)(o.dims[i] - v1[i]));
      v3[i] = pick(g, 3) ? 1 : 1 + pick(g, 3);
    }
    a.slice_start = ints(g, r, v1);
    a.slice_limit = ints(g, r, v2);
    a.slice_stride = ints(g, r, v3);
    break;
  case IR_OP_REVERSE: {
    int nd = 0;
    for (int i = 0; i < r; i++)
      if (pick(g, 2)) v1[nd++] = i;
    a.dimensions = ints(g, nd, v1);
    break;
  }
  case IR_OP_CONCATENATE: {
    if (r == 0) o = rand_shape_rank(g, t, 1 + pick(g, 2)), r = o.rank;
    int dim = pick(g, r), n = 1 + pick(g, 3);
    int64_t d = dim;
    a.dimensions = ints(g, 1, &d);
    ir_id ops[3];
    for (int i = 0; i < n; i++) {
      ir_shape p = o;
      p.dims[dim] = sizes[pick(g, 6)];
      ops[i] = operand(g, &p);
    }
    note(g, " %d along %d", n, dim);
    return emit(g, IR_OP_CONCATENATE, ops, n, &a, NULL, 0, NULL);
  }
  case IR_OP_PAD: {
    ir_padding_dim *pd = arena_array(g->m->arena, (size_t)(r ? r : 1), sizeof *pd);
    for (int i = 0; i < r; i++) {
      pd[i].lo = pick(g, 4) - (o.dims[i] > 2 ? pick(g, 2) : 0);
      pd[i].hi = pick(g, 4) - (o.dims[i] > 2 ? pick(g, 2) : 0);
      pd[i].interior = pick(g, 3) ? 0 : 1 + pick(g, 2);
    }
    a.npad = r;
    a.padding = pd;
    ir_shape one = ir_shape_scalar(t);
    ir_id x = operand(g, &o);
    ir_id v = operand(g, &one);
    return emit(g, IR_OP_PAD, (ir_id[]){x, v}, 2, &a, NULL, 0, NULL);
  }
  default: break;
  }
  return emit(g, op, (ir_id[]){operand(g, &o)}, 1, &a, NULL, 0, NULL);
}

static ir_id build_convert(gen *g, ir_op op, ir_type t) {
  ir_shape o = rand_shape(g, t);
  ir_type to;
  if (op == IR_OP_CONVERT) {
    to = pick(g, 6) ? other_type(g, t) : t;
  } else {
    /* same-width pairs; s8 -> pred is left out (a byte that is not 0 or 1
       is not a pred value) */
    static const ir_type w4[] = {IR_F32, IR_S32}, w2[] = {IR_BF16, IR_F16};
    int sz = ir_type_size(t);
    to = sz == 4 ? w4[pick(g, 2)] : sz == 2 ? w2[pick(g, 2)] : pick(g, 2) ? IR_S8 : t;
  }
  note(g, " to %s", ir_type_name(to));
  ir_shape s = ir_shape_array(to, o.rank, o.dims);
  return emit_to(g, op, operand(g, &o), NULL, &s);
}

static ir_id build_elementwise(gen *g, ir_op op, ir_type t) {
  ir_shape s = rand_shape(g, t), one = ir_shape_scalar(t);
  ir_attrs a = noattrs();
  if (op == IR_OP_SELECT) {
    ir_shape ps = pick(g, 4) ? ir_shape_array(IR_PRED, s.rank, s.dims) : ir_shape_scalar(IR_PRED);
    ir_id p = operand(g, &ps), x = operand(g, &s), y = operand(g, &s);
    return emit(g, op, (ir_id[]){p, x, y}, 3, NULL, NULL, 0, NULL);
  }
  if (op == IR_OP_CLAMP) {
    ir_id lo = operand(g, pick(g, 3) ? &one : &s), x = operand(g, &s);
    ir_id hi = operand(g, pick(g, 3) ? &one : &s);
    return emit(g, op, (ir_id[]){lo, x, hi}, 3, NULL, NULL, 0, NULL);
  }
  if (op == IR_OP_COMPARE) {
    a.cmp_dir = (ir_cmp_dir)pick(g, 6);
    if (ir_type_is_float(t)) a.cmp_type = pick(g, 3) ? IR_CMPT_DEFAULT : IR_CMPT_TOTALORDER;
    else a.cmp_type = pick(g, 3) ? IR_CMPT_DEFAULT : IR_CMPT_UNSIGNED;
    note(g, " dir %d type %d", (int)a.cmp_dir, (int)a.cmp_type);
  }
  int n = (ir_op_flags(op) & OPF_UNARY) ? 1 : 2;
  ir_id ops[2];
  for (int i = 0; i < n; i++) ops[i] = operand(g, &s);
  return emit(g, op, ops, n, &a, NULL, 0, NULL);
}

static ir_id build_dot(gen *g, ir_type t) {
  int64_t B = sizes[pick(g, 4)], M = sizes[pick(g, 9)], K = sizes[pick(g, 10)],
          N = sizes[pick(g, 9)], zero = 0, one = 1, two = 2;
  while (B * M * K > MAX_ELEMS || B * K * N > MAX_ELEMS || B * M * N > MAX_ELEMS)
    K = K > 1 ? K / 2 : K, M = M > 1 ? M / 2 : M, N = N > 1 ? N / 2 : N;
  ir_type rt = t;
  if (ir_type_is_float(t) && pick(g, 4) == 0) rt = PICK_TYPE(g, floats);
  ir_attrs a = noattrs();
  a.precision[0] = a.precision[1] = rand_precision(g);
  if (pick(g, 5) == 0) a.preferred_type = ir_type_is_float(t) ? PICK_TYPE(g, floats) : IR_S32;
  int form = pick(g, 5);
  ir_shape ls, rs;
  switch (form) {
  case 0: /* [K] . [K] */
    ls = ir_shape_array(t, 1, &K);
    rs = ir_shape_array(rt, 1, &K);
    a.lhs_contracting = ints(g, 1, &zero);
    a.rhs_contracting = ints(g, 1, &zero);
    break;
  case 1: /* [M, K] . [K] */
    ls = ir_shape_array(t, 2, (int64_t[]){M, K});
    rs = ir_shape_array(rt, 1, &K);
    a.lhs_contracting = ints(g, 1, &one);
    a.rhs_contracting = ints(g, 1, &zero);
    break;
  case 2: /* [M, K] . [K, N] */
    ls = ir_shape_array(t, 2, (int64_t[]){M, K});
    rs = ir_shape_array(rt, 2, (int64_t[]){K, N});
    a.lhs_contracting = ints(g, 1, &one);
    a.rhs_contracting = ints(g, 1, &zero);
    break;
  case 3: /* [B, M, K] . [B, K, N] */
    ls = ir_shape_array(t, 3, (int64_t[]){B, M, K});
    rs = ir_shape_array(rt, 3, (int64_t[]){B, K, N});
    a.lhs_batch = ints(g, 1, &zero);
    a.rhs_batch = ints(g, 1, &zero);
    a.lhs_contracting = ints(g, 1, &two);
    a.rhs_contracting = ints(g, 1, &one);
    break;
  default: /* [K, M] . [N, K] */
    ls = ir_shape_array(t, 2, (int64_t[]){K, M});
    rs = ir_shape_array(rt, 2, (int64_t[]){N, K});
    a.lhs_contracting = ints(g, 1, &zero);
    a.rhs_contracting = ints(g, 1, &one);
    break;
  }
  note(g, " form %d B%lld M%lld K%lld N%lld rhs %s prec %d", form, (long long)B, (long long)M,
       (long long)K, (long long)N, ir_type_name(rt), (int)a.precision[0]);
  ir_id x = operand(g, &ls), y = operand(g, &rs);
  return emit(g, IR_OP_DOT, (ir_id[]){x, y}, 2, &a, NULL, 0, NULL);
}

static ir_id build_conv(gen *g, ir_type t) {
  static const int64_t sp[] = {1, 2, 3, 5, 7, 9, 17};
  int ns = 1 + pick(g, 2);
  int64_t fgc = pick(g, 4) ? 1 : 2, bgc = fgc == 1 && pick(g, 5) == 0 ? 2 : 1;
  int64_t batch = (1 + pick(g, 2)) * bgc, cin = (1 + pick(g, 3)) * fgc;
  int64_t cout = (1 + pick(g, 3)) * fgc * bgc;
  ir_attrs a = noattrs();
  a.precision[0] = a.precision[1] = rand_precision(g);
  a.feature_group_count = fgc;
  a.batch_group_count = bgc;
  ir_window win_a;
  memset(&win_a, 0, sizeof win_a);
  a.window = &win_a;
  win_a.rank = ns;
  a.conv.nspatial = ns;
  a.conv.in_batch = a.conv.out_batch = 0;
  a.conv.in_feature = a.conv.out_feature = (int8_t)(ns + 1);
  a.conv.k_in = (int8_t)ns;
  a.conv.k_out = (int8_t)(ns + 1);
  int64_t xd[4] = {batch}, kd[4];
  for (int i = 0; i < ns; i++) {
    a.conv.in_spatial[i] = a.conv.out_spatial[i] = (int8_t)(1 + i);
    a.conv.k_spatial[i] = (int8_t)i;
    xd[1 + i] = sp[pick(g, ns == 1 ? 7 : 5)];
    ir_window_dim *w = &win_a.dims[i];
    w->size = kd[i] = 1 + pick(g, 3);
    w->stride = 1 + (pick(g, 3) == 0);
    w->pad_lo = pick(g, 3) - (pick(g, 6) == 0);
    w->pad_hi = pick(g, 3);
    w->lhs_dilate = pick(g, 5) ? 1 : 2;
    w->rhs_dilate = pick(g, 4) ? 1 : 2;
    w->reversal = pick(g, 6) == 0;
  }
  xd[1 + ns] = cin;
  kd[ns] = cin / fgc;
  kd[ns + 1] = cout;
  ir_type kt = ir_type_is_float(t) && pick(g, 4) == 0 ? PICK_TYPE(g, floats) : t;
  note(g, " %d-d fgc %lld bgc %lld", ns, (long long)fgc, (long long)bgc);
  ir_shape xs = ir_shape_array(t, ns + 2, xd), ks = ir_shape_array(kt, ns + 2, kd);
  ir_id x = operand(g, &xs), k = operand(g, &ks);
  return emit(g, IR_OP_CONVOLUTION, (ir_id[]){x, k}, 2, &a, NULL, 0, NULL);
}

/* The identity of op over t (-0 for a float add: x + -0 is x, -0 too). */
static double identity(ir_op op, ir_type t) {
  bool f = ir_type_is_float(t);
  double big = f ? INFINITY : t == IR_S8 ? 127 : t == IR_PRED ? 1 : 2147483647.0;
  double small = f ? -INFINITY : t == IR_S8 ? -128 : t == IR_PRED ? 0 : -2147483648.0;
  switch (op) {
  case IR_OP_ADD: return f ? -0.0 : 0;
  case IR_OP_MULTIPLY: return 1;
  case IR_OP_MAXIMUM: return small;
  case IR_OP_MINIMUM: return big;
  case IR_OP_AND: return t == IR_PRED ? 1 : -1;
  default: return 0; /* or, xor */
  }
}

static ir_id scalar_const(gen *g, ir_type t, double v) {
  ir_shape s = ir_shape_scalar(t);
  ir_id k = constant(g, &s, false);
  ir_literal *l = ir_inst_get(g->m, g->c, k)->a->literal;
  if (ir_type_is_float(t)) ir_literal_set_f64(l, 0, v);
  else ir_literal_set_i64(l, 0, (int64_t)v);
  return k;
}

static ir_id build_reduce(gen *g, ir_op op, ir_type t) {
  ir_shape s = rand_shape_rank(g, t, 1 + pick(g, 3)), one = ir_shape_scalar(t);
  bool argmax = op == IR_OP_REDUCE && t != IR_PRED && pick(g, 4) == 0;
  ir_op rop = argmax ? IR_OP_COMPARE : reduce_op_for(g, t);
  ir_type types[2] = {t, IR_S32};
  int n = argmax ? 2 : 1;
  ir_comp_id rc = reducer(g, rop, types, n);
  ir_attrs a = noattrs();
  note(g, " %s", argmax ? "argmax" : ir_op_name(rop));
  ir_id ops[4];
  for (int i = 0; i < n; i++) {
    ir_shape si = ir_shape_array(types[i], s.rank, s.dims);
    ops[i] = operand(g, &si);
  }
  if (op == IR_OP_REDUCE) {
    int64_t d[IR_MAX_RANK];
    int nd = 0;
    for (int i = 0; i < s.rank; i++)
      if (pick(g, 2) || (i == s.rank - 1 && nd == 0 && pick(g, 4))) d[nd++] = i;
    a.dimensions = ints(g, nd, d);
    note(g, " over %d dims", nd);
    for (int i = 0; i < n; i++) ops[n + i] = operand(g, &one), one = ir_shape_scalar(IR_S32);
    return emit(g, op, ops, 2 * n, &a, &rc, 1, NULL);
  }
  /* reduce-window: padding and base dilation only with the reducer's
     identity as the init (the TPU folds the init there, the evaluator
     skips those positions: docs/numerics.md section 4) */
  og_source isrc = g->k->src[1];
  bool ident = isrc == OG_CONST || isrc == OG_SPLAT;
  ir_window win_a;
  memset(&win_a, 0, sizeof win_a);
  a.window = &win_a;
  win_a.rank = s.rank;
  for (int i = 0; i < s.rank; i++) {
    ir_window_dim *w = &win_a.dims[i];
    w->size = 1 + pick(g, (int)(s.dims[i] < 3 ? s.dims[i] : 3));
    w->stride = 1 + (pick(g, 3) == 0);
    w->rhs_dilate = 1 + (pick(g, 5) == 0);
    w->lhs_dilate = ident && pick(g, 6) == 0 ? 2 : 1;
    w->pad_lo = ident ? pick(g, 3) : 0;
    w->pad_hi = ident ? pick(g, 3) : 0;
  }
  if (ident) {
    g->slot++;
    g->k->nslots = 2;
    note(g, " identity");
    ops[1] = scalar_const(g, t, identity(rop, t));
  } else {
    ops[1] = operand(g, &one);
  }
  return emit(g, op, ops, 2, &a, &rc, 1, NULL);
}

/* ---- indexing ---------------------------------------------------------- */

/* The element type of start indices: s32 mostly, s8 sometimes. */
static ir_type index_type(gen *g) { return pick(g, 4) ? IR_S32 : IR_S8; }

static ir_id build_dynamic_slice(gen *g, ir_op op, ir_type t) {
  ir_shape s = rand_shape_rank(g, t, 1 + pick(g, 3)), one = ir_shape_scalar(index_type(g));
  ir_attrs a = noattrs();
  int64_t sz[IR_MAX_RANK];
  for (int d = 0; d < s.rank; d++) sz[d] = pick(g, 5) ? 1 + pick(g, (int)s.dims[d]) : pick(g, (int)s.dims[d] + 1);
  ir_id ops[2 + IR_MAX_RANK];
  int n = 0;
  ops[n++] = operand(g, &s);
  if (op == IR_OP_DYNAMIC_SLICE) {
    a.slice_sizes = ints(g, s.rank, sz);
  } else {
    ir_shape u = ir_shape_array(t, s.rank, sz);
    ops[n++] = operand(g, &u);
  }
  bool vec = pick(g, 4) == 0;
  note(g, vec ? " vector starts" : " scalar starts");
  if (vec) {
    ir_shape v = ir_shape_array(one.type, 1, (int64_t[]){s.rank});
    ops[n++] = operand(g, &v);
  } else {
    for (int d = 0; d < s.rank; d++) ops[n++] = operand(g, &one);
  }
  return emit(g, op, ops, n, &a, NULL, 0, NULL);
}

/* Random dimension numbers for operand x (gsdims.h), noted. */
static void rand_gsdims(gen *g, const ir_shape *x, tc_gsdims *o) {
  tc_rand_gsdims(&g->rs, g->m->arena, x, index_type(g), o);
  note(g, " map %d collapsed %d batching %d batch rank %d", o->a.index_map.n, o->a.collapsed_dims.n,
       o->a.operand_batching.n, o->nb);
}

static ir_id build_gather(gen *g, ir_type t) {
  ir_shape x = rand_shape_rank(g, t, 1 + pick(g, 3));
  tc_gsdims o;
  rand_gsdims(g, &x, &o);
  o.a.slice_sizes = ints(g, x.rank, o.win);
  o.a.indices_are_sorted = pick(g, 4) == 0;
  ir_id xs = operand(g, &x), ix = operand(g, &o.ix);
  return emit(g, IR_OP_GATHER, (ir_id[]){xs, ix}, 2, &o.a, NULL, 0, NULL);
}

static ir_id build_scatter(gen *g, ir_type t) {
  ir_shape x = rand_shape_rank(g, t, 1 + pick(g, 3));
  tc_gsdims o;
  rand_gsdims(g, &x, &o);
  o.a.unique_indices = pick(g, 4) == 0;
  bool two = pick(g, 4) == 0 && t != IR_PRED;
  ir_type types[2] = {t, IR_S32};
  int n = two ? 2 : 1;
  ir_op rop = two ? IR_OP_COMPARE : reduce_op_for(g, t);
  ir_comp_id rc = reducer(g, rop, types, n);
  note(g, " %s", two ? "argmax" : ir_op_name(rop));
  ir_id ops[5];
  for (int k = 0; k < n; k++) {
    ir_shape xk = ir_shape_array(types[k], x.rank, x.dims);
    ops[k] = operand(g, &xk);
  }
  ops[n] = operand(g, &o.ix);
  for (int k = 0; k < n; k++) {
    ir_shape uk = ir_shape_array(types[k], o.nw + o.nb, o.out);
    ops[n + 1 + k] = operand(g, &uk);
  }
  return emit(g, IR_OP_SCATTER, ops, 2 * n + 1, &o.a, &rc, 1, NULL);
}

static ir_id build_select_and_scatter(gen *g, ir_type t) {
  if (t == IR_PRED) t = IR_S32;
  ir_shape x = rand_shape_rank(g, t, 1 + pick(g, 3)), one = ir_shape_scalar(t);
  ir_window w;
  int64_t sd[IR_MAX_RANK];
  tc_rand_sas_window(&g->rs, &x, &w, sd);
  ir_attrs a = noattrs();
  a.window = &w;
  /* select: a compare (GE or GT: ties to the first or the last) */
  ir_comp_id sel = ir_comp_add(g->m, ir_unique_name(g->m, "select"));
  ir_comp_id save = g->c;
  g->c = sel;
  ir_id p0 = tc_param(g->m, sel, &one, 0), p1 = tc_param(g->m, sel, &one, 1);
  ir_attrs ca = noattrs();
  ca.cmp_dir = pick(g, 2) ? IR_CMP_GE : IR_CMP_GT;
  ir_id root = emit(g, IR_OP_COMPARE, (ir_id[]){p0, p1}, 2, &ca, NULL, 0, NULL);
  g->c = save;
  if (root == IR_NONE) return IR_NONE;
  ir_comp_get(g->m, sel)->root = root;
  ir_comp_finish(g->m, sel);
  ir_op rop = ir_type_is_float(t) ? IR_OP_ADD : reduce_op_for(g, t);
  ir_comp_id sc = reducer(g, rop, &t, 1);
  note(g, " %s/%s", ca.cmp_dir == IR_CMP_GE ? "ge" : "gt", ir_op_name(rop));
  ir_shape src = ir_shape_array(t, x.rank, sd);
  ir_id ops[3] = {operand(g, &x), operand(g, &src), operand(g, &one)};
  return emit(g, IR_OP_SELECT_AND_SCATTER, ops, 3, &a, (ir_comp_id[]){sel, sc}, 2, NULL);
}

static ir_id build_all_reduce(gen *g, ir_type t) {
  ir_op rop = reduce_op_for(g, t);
  ir_comp_id rc = reducer(g, rop, &t, 1);
  int n = 1 + (pick(g, 4) == 0);
  ir_id ops[2];
  for (int i = 0; i < n; i++) {
    ir_shape s = rand_shape(g, t);
    ops[i] = operand(g, &s);
  }
  note(g, " %s x%d", ir_op_name(rop), n);
  return emit(g, IR_OP_ALL_REDUCE, ops, n, NULL, &rc, 1, NULL);
}

static ir_shape rand_tuple_shape(gen *g) {
  int n = 1 + pick(g, 3);
  ir_shape *el = arena_array(g->m->arena, (size_t)n, sizeof *el);
  for (int i = 0; i < n; i++) {
    el[i] = rand_shape(g, PICK_TYPE(g, every));
  }
  ir_shape s;
  memset(&s, 0, sizeof s);
  s.type = IR_TUPLE;
  s.ntuple = n;
  s.tuple = el;
  return s;
}

/* A kLoop fusion whose body is one elementwise op of its parameters. */
static ir_id build_fusion(gen *g, ir_type t) {
  static const ir_op num[] = {IR_OP_ADD, IR_OP_MULTIPLY, IR_OP_MAXIMUM, IR_OP_SUBTRACT,
                              IR_OP_NEGATE, IR_OP_ABS, IR_OP_SELECT};
  static const ir_op lg[] = {IR_OP_AND, IR_OP_OR, IR_OP_NOT, IR_OP_SELECT};
  ir_op bop = t == IR_PRED ? lg[pick(g, 4)] : num[pick(g, (int)COUNTOF(num))];
  int n = bop == IR_OP_SELECT ? 3 : (ir_op_flags(bop) & OPF_UNARY) ? 1 : 2;
  ir_shape s = rand_shape(g, t), ps = ir_shape_array(IR_PRED, s.rank, s.dims);
  ir_id ops[3];
  for (int i = 0; i < n; i++) ops[i] = operand(g, bop == IR_OP_SELECT && i == 0 ? &ps : &s);
  if (g->bad) return IR_NONE;
  ir_comp_id fc = ir_comp_add(g->m, ir_unique_name(g->m, "fused"));
  ir_comp_id save = g->c;
  g->c = fc;
  ir_id p[3];
  for (int i = 0; i < n; i++) p[i] = tc_param(g->m, fc, bop == IR_OP_SELECT && i == 0 ? &ps : &s, i);
  ir_id root = emit(g, bop, p, n, NULL, NULL, 0, NULL);
  g->c = save;
  if (root == IR_NONE) return IR_NONE;
  ir_comp *cp = ir_comp_get(g->m, fc);
  cp->root = root;
  cp->is_fusion = true;
  ir_comp_finish(g->m, fc);
  ir_attrs a = noattrs();
  a.fusion_kind = IR_FUSION_LOOP;
  note(g, " body %s", ir_op_name(bop));
  return emit(g, IR_OP_FUSION, ops, n, &a, &fc, 1, NULL);
}

/* ---- control flow ------------------------------------------------------ */

/* A computation of nparams parameters of shapes ps whose root is made by
 * body(g, params); IR_NONE when an instruction did not infer. */
static ir_comp_id sub_comp(gen *g, const char *name, const ir_shape *ps, int nparams,
                           ir_id (*body)(gen *, const ir_id *, int), int arg) {
  ir_comp_id cc = ir_comp_add(g->m, ir_unique_name(g->m, name));
  ir_comp_id save = g->c;
  g->c = cc;
  ir_id p[4];
  for (int i = 0; i < nparams; i++) p[i] = tc_param(g->m, cc, &ps[i], i);
  ir_id root = body(g, p, arg);
  g->c = save;
  if (root == IR_NONE) return IR_NONE;
  ir_comp_get(g->m, cc)->root = root;
  ir_comp_finish(g->m, cc);
  return cc;
}

/* An exact unary step on x (every target computes the same bits): negate,
 * not for pred, or (arg 1) abs; (arg 2) x itself. */
static ir_id step_of(gen *g, ir_id x, int arg) {
  ir_type t = shp(g, x)->type;
  if (arg == 2) return x;
  if (t == IR_PRED) return emit1(g, IR_OP_NOT, x);
  return emit1(g, arg == 1 && t != IR_S8 ? IR_OP_ABS : IR_OP_NEGATE, x);
}

static ir_id branch_body(gen *g, const ir_id *p, int arg) { return step_of(g, p[0], arg); }

static ir_id call_body(gen *g, const ir_id *p, int arg) {
  (void)arg;
  ir_type t = shp(g, p[0])->type;
  return emit2(g, t == IR_PRED ? IR_OP_XOR : IR_OP_MAXIMUM, p[0], step_of(g, p[1], 0));
}

/* while state (i, x): i < 3, then (i + 1, step(x)). */
static ir_id while_cond(gen *g, const ir_id *p, int arg) {
  (void)arg;
  ir_attrs a = noattrs();
  a.index = 0;
  ir_id i = emit(g, IR_OP_GET_TUPLE_ELEMENT, p, 1, &a, NULL, 0, NULL);
  ir_attrs c = noattrs();
  c.cmp_dir = IR_CMP_LT;
  ir_id three = scalar_const(g, IR_S32, 3);
  return emit(g, IR_OP_COMPARE, (ir_id[]){i, three}, 2, &c, NULL, 0, NULL);
}

static ir_id while_body(gen *g, const ir_id *p, int arg) {
  ir_attrs a0 = noattrs(), a1 = noattrs();
  a1.index = 1;
  ir_id i = emit(g, IR_OP_GET_TUPLE_ELEMENT, p, 1, &a0, NULL, 0, NULL);
  ir_id x = emit(g, IR_OP_GET_TUPLE_ELEMENT, p, 1, &a1, NULL, 0, NULL);
  ir_id n = emit2(g, IR_OP_ADD, i, scalar_const(g, IR_S32, 1));
  return emit2(g, IR_OP_TUPLE, n, step_of(g, x, arg));
}

/* call of a binary array computation; map of a scalar one; conditional
 * by a pred or an s32 selector (any value: out of range runs the last
 * branch) over 1-3 branches; while over (s32, x) from i = (n & 7), so
 * 0 to 3 trips that the data decides. */
static ir_id build_control(gen *g, ir_op op, ir_type t) {
  ir_shape s = rand_shape(g, t);
  switch (op) {
  case IR_OP_CALL: {
    ir_shape ps[2] = {s, s};
    ir_comp_id f = sub_comp(g, "called", ps, 2, call_body, 0);
    ir_id ops[2] = {operand(g, &s), operand(g, &s)};
    return f == IR_NONE ? (g->bad = true, IR_NONE) : emit(g, op, ops, 2, NULL, &f, 1, NULL);
  }
  case IR_OP_MAP: {
    ir_comp_id f = reducer(g, reduce_op_for(g, t), &t, 1);
    ir_id ops[2] = {operand(g, &s), operand(g, &s)};
    ir_attrs a = noattrs();
    return f == IR_NONE ? (g->bad = true, IR_NONE) : emit(g, op, ops, 2, &a, &f, 1, NULL);
  }
  case IR_OP_CONDITIONAL: {
    bool pred = pick(g, 3) == 0;
    int nb = pred ? 2 : 1 + pick(g, 3);
    ir_shape sel = ir_shape_scalar(pred ? IR_PRED : IR_S32);
    ir_id ops[4];
    ir_comp_id br[3];
    ops[0] = operand(g, &sel);
    for (int k = 0; k < nb; k++) {
      br[k] = sub_comp(g, "branch", &s, 1, branch_body, k);
      if (br[k] == IR_NONE) return g->bad = true, IR_NONE;
      ops[k + 1] = operand(g, &s);
    }
    note(g, " %d branches", nb);
    return emit(g, op, ops, nb + 1, NULL, br, nb, NULL);
  }
  default: { /* while */
    ir_shape one = ir_shape_scalar(IR_S32);
    ir_id n = operand(g, &one), x = operand(g, &s);
    ir_id i = emit2(g, IR_OP_AND, n, scalar_const(g, IR_S32, 7));
    ir_id st = emit2(g, IR_OP_TUPLE, i, x);
    if (st == IR_NONE) return IR_NONE;
    const ir_shape *ss = shp(g, st);
    ir_comp_id cc[2] = {sub_comp(g, "cond", ss, 1, while_cond, 0),
                        sub_comp(g, "body", ss, 1, while_body, pick(g, 3))};
    if (cc[0] == IR_NONE || cc[1] == IR_NONE) return g->bad = true, IR_NONE;
    return emit(g, op, &st, 1, NULL, cc, 2, NULL);
  }
  }
}

static ir_id build(gen *g) {
  ir_op op = g->k->op;
  ir_type t = type_for(g, op);
  g->k->type = t;
  note(g, " %s:", ir_type_name(t));
  switch (op) {
  case IR_OP_PARAMETER: {
    ir_shape s = rand_shape(g, t);
    return param(g, &s);
  }
  case IR_OP_CONSTANT: {
    ir_shape s = rand_shape(g, t);
    return constant(g, &s, pick(g, 3) == 0);
  }
  case IR_OP_IOTA: {
    ir_shape s = rand_shape_rank(g, t, 1 + pick(g, 3));
    ir_attrs a = noattrs();
    a.index = pick(g, s.rank);
    return emit(g, op, NULL, 0, &a, NULL, 0, &s);
  }
  case IR_OP_RESHAPE: return build_reshape(g, t);
  case IR_OP_CONVERT:
  case IR_OP_BITCAST_CONVERT: return build_convert(g, op, t);
  case IR_OP_COPY:
  case IR_OP_BROADCAST:
  case IR_OP_TRANSPOSE:
  case IR_OP_SLICE:
  case IR_OP_CONCATENATE:
  case IR_OP_PAD:
  case IR_OP_REVERSE: return build_movement(g, op, t);
  case IR_OP_DOT: return build_dot(g, t);
  case IR_OP_CONVOLUTION: return build_conv(g, t);
  case IR_OP_REDUCE:
  case IR_OP_REDUCE_WINDOW: return build_reduce(g, op, t);
  case IR_OP_ALL_REDUCE: return build_all_reduce(g, t);
  case IR_OP_TUPLE: {
    ir_shape ts = rand_tuple_shape(g);
    ir_id ops[3];
    for (int i = 0; i < ts.ntuple; i++) ops[i] = operand(g, &ts.tuple[i]);
    return emit(g, op, ops, ts.ntuple, NULL, NULL, 0, NULL);
  }
  case IR_OP_GET_TUPLE_ELEMENT: {
    ir_shape ts = rand_tuple_shape(g);
    ir_attrs a = noattrs();
    a.index = pick(g, ts.ntuple);
    return emit(g, op, (ir_id[]){operand(g, &ts)}, 1, &a, NULL, 0, NULL);
  }
  case IR_OP_FUSION: return build_fusion(g, t);
  case IR_OP_DYNAMIC_SLICE:
  case IR_OP_DYNAMIC_UPDATE_SLICE: return build_dynamic_slice(g, op, t);
  case IR_OP_GATHER: return build_gather(g, t);
  case IR_OP_SCATTER: return build_scatter(g, t);
  case IR_OP_SELECT_AND_SCATTER: return build_select_and_scatter(g, t);
  case IR_OP_CALL:
  case IR_OP_WHILE:
  case IR_OP_CONDITIONAL:
  case IR_OP_MAP: return build_control(g, op, t);
  default: return build_elementwise(g, op, t);
  }
}

/* ---- where the result goes -------------------------------------------- */

static ir_id consumer(gen *g, ir_id x) {
  const ir_shape *xs = shp(g, x);
  if (xs->type == IR_TUPLE) {
    ir_attrs a = noattrs();
    a.index = pick(g, xs->ntuple);
    note(g, "(get-tuple-element %lld)", (long long)a.index);
    return emit(g, IR_OP_GET_TUPLE_ELEMENT, &x, 1, &a, NULL, 0, NULL);
  }
  ir_shape s = *xs;
  ir_type t = s.type;
  int64_t n = ir_shape_count(&s);
  for (;;) {
    switch (pick(g, 9)) {
    case 0:
      note(g, "(%s)", t == IR_PRED ? "not" : "negate");
      return emit1(g, t == IR_PRED ? IR_OP_NOT : IR_OP_NEGATE, x);
    case 1: {
      ir_type to = other_type(g, t);
      note(g, "(convert to %s)", ir_type_name(to));
      ir_shape c = ir_shape_array(to, s.rank, s.dims);
      return emit_to(g, IR_OP_CONVERT, x, NULL, &c);
    }
    case 2: {
      ir_shape f = ir_shape_array(t, 1, &n);
      note(g, "(reshape)");
      return emit_to(g, IR_OP_RESHAPE, x, NULL, &f);
    }
    case 3: {
      if (s.rank == 0) break;
      int64_t st[IR_MAX_RANK], li[IR_MAX_RANK], sd[IR_MAX_RANK];
      for (int i = 0; i < s.rank; i++) st[i] = s.dims[i] / 2, li[i] = s.dims[i], sd[i] = 1;
      ir_attrs a = noattrs();
      a.slice_start = ints(g, s.rank, st);
      a.slice_limit = ints(g, s.rank, li);
      a.slice_stride = ints(g, s.rank, sd);
      note(g, "(slice)");
      return emit(g, IR_OP_SLICE, &x, 1, &a, NULL, 0, NULL);
    }
    case 4:
      note(g, "(%s with itself)", t == IR_PRED ? "or" : "add");
      return emit2(g, t == IR_PRED ? IR_OP_OR : IR_OP_ADD, x, x);
    case 5: {
      if (s.rank == 0) break;
      ir_op rop = reduce_op_for(g, t);
      ir_comp_id rc = reducer(g, rop, &t, 1);
      int64_t d[IR_MAX_RANK];
      for (int i = 0; i < s.rank; i++) d[i] = i;
      ir_attrs a = noattrs();
      a.dimensions = ints(g, s.rank, d);
      note(g, "(reduce %s)", ir_op_name(rop));
      ir_id ops[2] = {x, scalar_const(g, t, identity(rop, t))};
      return emit(g, IR_OP_REDUCE, ops, 2, &a, &rc, 1, NULL);
    }
    case 6: {
      if (s.rank >= IR_MAX_RANK) break;
      int64_t d[IR_MAX_RANK + 1], map[IR_MAX_RANK];
      d[0] = 2;
      for (int i = 0; i < s.rank; i++) d[i + 1] = s.dims[i], map[i] = i + 1;
      ir_shape b = ir_shape_array(t, s.rank + 1, d);
      note(g, "(broadcast)");
      return broadcast_dims(g, x, map, s.rank, &b);
    }
    case 7: {
      ir_type to = t == IR_F32 ? IR_S32 : t == IR_S32 ? IR_F32 : t == IR_BF16 ? IR_F16
                 : t == IR_F16 ? IR_BF16 : IR_S8;
      note(g, "(bitcast-convert to %s)", ir_type_name(to));
      ir_shape c = ir_shape_array(to, s.rank, s.dims);
      return emit_to(g, IR_OP_BITCAST_CONVERT, x, NULL, &c);
    }
    default: {
      if (t == IR_PRED) break;
      note(g, "(multiply by a parameter)");
      return emit2(g, IR_OP_MULTIPLY, x, param(g, &s));
    }
    }
  }
}

static ir_id place(gen *g, ir_id x) {
  if (g->bad) return IR_NONE;
  switch (g->k->use) {
  case OG_ROOT: return x;
  case OG_IN_TUPLE: {
    int n = 1 + pick(g, 3), at = pick(g, n);
    ir_id el[3];
    for (int i = 0; i < n; i++) {
      if (i == at) {
        el[i] = x;
      } else if (pick(g, 2)) {
        el[i] = x;
      } else {
        ir_shape s = rand_shape(g, PICK_TYPE(g, every));
        el[i] = param(g, &s);
      }
    }
    note(g, " (%d elements, at %d)", n, at);
    return emit(g, IR_OP_TUPLE, el, n, NULL, NULL, 0, NULL);
  }
  default: return consumer(g, x);
  }
}

ir_module *og_generate(uint64_t seed, uint64_t index, og_case *k) {
  og_case local;
  if (!k) k = &local;
  uint64_t nop = (uint64_t)og_nops(), round = index / nop;
  for (uint64_t attempt = 0;; attempt++) {
    memset(k, 0, sizeof *k);
    k->op = og_op((int)(index % nop));
    gen g;
    memset(&g, 0, sizeof g);
    g.rs = seed * 0x2545F4914F6CDD1Dull + index * 0x9E3779B97F4A7C15ull + attempt * 0xD1B54A32D192ED03ull + 1;
    g.k = k;
    for (int j = 0; j < OG_MAX_SLOTS; j++)
      k->src[j] = round < 12 ? (og_source)((round + (uint64_t)j) % OG_NSOURCES)
                             : (og_source)pick(&g, OG_NSOURCES);
    k->use = round < 12 ? (og_use)(round % OG_NUSES) : (og_use)pick(&g, OG_NUSES);
    char name[48];
    snprintf(name, sizeof name, "opgen_%llu_%llu", (unsigned long long)seed,
             (unsigned long long)index);
    g.m = ir_module_create(name);
    g.c = ir_comp_add(g.m, "main");
    g.m->entry = g.c;
    note(&g, "%s", ir_op_name(k->op));
    ir_id x = build(&g);
    note(&g, "; %s", og_use_name(k->use));
    ir_id root = place(&g, x);
    if (!g.bad && root != IR_NONE) {
      tc_finish(g.m, g.c, root, "opgen", index);
      return g.m;
    }
    ir_module_destroy(g.m);
    if (attempt > 500)
      base_die("opgen: case %llu (%s) found no well-typed module", (unsigned long long)index,
               ir_op_name(k->op));
  }
}

int og_nparams(const ir_module *m) { return ir_comp_get((ir_module *)m, m->entry)->nparams; }

ir_literal **og_args(const ir_module *m, arena *a, uint64_t seed) {
  const ir_comp *c = ir_comp_get((ir_module *)m, m->entry);
  ir_literal **args = arena_array(a, (size_t)(c->nparams > 0 ? c->nparams : 1), sizeof *args);
  gen g;
  memset(&g, 0, sizeof g);
  g.rs = seed * 0x9E3779B97F4A7C15ull + 11;
  for (int p = 0; p < c->nparams; p++)
    args[p] = random_literal(&g, a, c->insts.v[c->params[p]].shape, false);
  return args;
}
