/* ops_random.c: sorting (sort, top_k) and random numbers with explicit
 * keys (rng_key, split, random_bits, uniform, normal, bernoulli, dropout)
 * of the .tg language. docs/language.md, "Sorting" and "Random numbers".
 *
 * A key is an s32[2] tensor. Random bits are ThreeFry-2x32 (20 rounds, as
 * ir_threefry2x32) built from core s32 ops (add, xor, shifts: the bits of
 * u32 arithmetic), so every target runs them and gives the same bits:
 * random_bits(key, n) pads n to an even m, takes counters iota(m), and
 * block i < m/2 of counters (i, i + m/2) gives bits i (word 0) and
 * i + m/2 (word 1). split(key, n) is random_bits(key, 2n) as n keys. */
#include "frontend/tg/lower.h"

#include <math.h>

#define HANDLER(fn)                                                            \
  tv fn(lctx *L, const tg_node *call, tg_node **arg, const tg_nodes *rest,     \
        const tg_builtin *b)

static ir_id slice1(lctx *L, ir_id x, int64_t lo, int64_t hi, src_loc l) {
  ir_attrs a = ir_attrs_none;
  int64_t st = 1;
  a.slice_start = (ir_ints){1, &lo};
  a.slice_limit = (ir_ints){1, &hi};
  a.slice_stride = (ir_ints){1, &st};
  return lemit(L, IR_OP_SLICE, &x, 1, &a, NULL, 0, NULL, l, "random");
}

static ir_id concat1(lctx *L, ir_id x, ir_id y, src_loc l) {
  ir_attrs a = ir_attrs_none;
  int64_t ax = 0;
  a.dimensions = (ir_ints){1, &ax};
  return lemit(L, IR_OP_CONCATENATE, (ir_id[]){x, y}, 2, &a, NULL, 0, NULL, l, "random");
}

/* Word w of key as an s32[n] tensor. */
static ir_id key_word(lctx *L, ir_id key, int w, int64_t n, src_loc l) {
  ir_id s = lreshape(L, slice1(L, key, w, w + 1, l), 0, NULL, l);
  return lbroadcast_to(L, s, 1, &n, l);
}

static ir_id rotl(lctx *L, ir_id x, int d, src_loc l) {
  return lbin(L, IR_OP_OR, lbinc(L, IR_OP_SHL, x, d, l), lbinc(L, IR_OP_SHR_L, x, 32 - d, l), l);
}

/* ThreeFry-2x32 (20 rounds) of counters (x0, x1), s32[n] each. */
static void threefry(lctx *L, ir_id key, ir_id *x0, ir_id *x1, int64_t n, src_loc l) {
  static const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  ir_id ks[3] = {key_word(L, key, 0, n, l), key_word(L, key, 1, n, l), IR_NONE};
  ks[2] = lbin(L, IR_OP_XOR, lbin(L, IR_OP_XOR, ks[0], ks[1], l),
               lfill(L, IR_S32, 0x1BD11BDA, 1, &n, l), l);
  ir_id a = lbin(L, IR_OP_ADD, *x0, ks[0], l), c = lbin(L, IR_OP_ADD, *x1, ks[1], l);
  for (int g = 0; g < 5; g++) {
    for (int r = 0; r < 4; r++) {
      a = lbin(L, IR_OP_ADD, a, c, l);
      c = lbin(L, IR_OP_XOR, rotl(L, c, rot[(g & 1) * 4 + r], l), a, l);
    }
    a = lbin(L, IR_OP_ADD, a, ks[(g + 1) % 3], l);
    c = lbinc(L, IR_OP_ADD, lbin(L, IR_OP_ADD, c, ks[(g + 2) % 3], l), g + 1, l);
  }
  *x0 = a;
  *x1 = c;
}

/* n random s32 words of key (the layout in the file comment). */
static ir_id random_bits(lctx *L, ir_id key, int64_t n, src_loc l) {
  int64_t m = n + (n & 1), h = m / 2;
  ir_shape is = ir_shape_array(IR_S32, 1, &h);
  ir_attrs a = ir_attrs_none;
  ir_id c0 = lemit(L, IR_OP_IOTA, NULL, 0, &a, NULL, 0, &is, l, "random");
  ir_id c1 = lbinc(L, IR_OP_ADD, c0, (double)h, l);
  threefry(L, key, &c0, &c1, h, l);
  ir_id all = concat1(L, c0, c1, l);
  return n == m ? all : slice1(L, all, 0, n, l);
}

/* The key argument: an s32[2] tensor. */
static ir_id key_arg(lctx *L, const tg_node *n, const char *what) {
  ir_id k = lower_tensor(L, n);
  if (k == IR_NONE) return IR_NONE;
  const ir_shape *s = lshape(L, k);
  if (s->type != IR_S32 || s->rank != 1 || s->dims[0] != 2) {
    lerr(L, n->loc, "%s: a key is s32[2] (from rng_key or split), got %s", what, lshape_str(L, s));
    return IR_NONE;
  }
  return k;
}

/* A static shape list ([2, 3]) and its element count. */
static bool shape_arg(lctx *L, const tg_node *n, const char *what, int *rank, int64_t *dims,
                      int64_t *count) {
  if (!st_ints(L, n, what, dims, rank, IR_MAX_RANK)) return false;
  *count = 1;
  for (int i = 0; i < *rank; i++) {
    if (dims[i] < 0 || dims[i] > ((int64_t)1 << 30)) {
      lerr(L, n->loc, "%s: dimension %lld out of range", what, (long long)dims[i]);
      return false;
    }
    *count *= dims[i];
  }
  if (*count > ((int64_t)1 << 30)) {
    lerr(L, n->loc, "%s: %lld elements are too many", what, (long long)*count);
    return false;
  }
  return true;
}

HANDLER(h_rng_key) {
  (void)rest, (void)b;
  ir_id s = lconvert(L, lower_tensor(L, arg[0]), IR_S32, call->loc);
  if (s == IR_NONE) return tv_err();
  if (lshape(L, s)->rank != 0) {
    lerr(L, arg[0]->loc, "rng_key: the seed is a scalar, got %s", lshape_str(L, lshape(L, s)));
    return tv_err();
  }
  int64_t one = 1;
  ir_id zero = lfill(L, IR_S32, 0, 1, &one, call->loc);
  return tv_tensor(concat1(L, zero, lreshape(L, s, 1, &one, call->loc), call->loc));
}

HANDLER(h_split) {
  (void)rest;
  ir_id key = key_arg(L, arg[0], b->name);
  int64_t n = 2;
  if (key == IR_NONE || (arg[1] && !st_int(L, arg[1], "split count", &n))) return tv_err();
  if (n < 1 || n > 64) {
    lerr(L, arg[1]->loc, "split: count %lld outside 1..64", (long long)n);
    return tv_err();
  }
  ir_id bits = random_bits(L, key, 2 * n, call->loc);
  tv r;
  memset(&r, 0, sizeof r);
  r.k = TV_MULTI;
  r.nmulti = (int)n;
  r.multi = arena_array(L->m->arena, (size_t)n, sizeof(ir_id));
  for (int64_t i = 0; i < n; i++) r.multi[i] = slice1(L, bits, 2 * i, 2 * i + 2, call->loc);
  if (n == 1) return tv_tensor(r.multi[0]);
  return r;
}

HANDLER(h_random_bits) {
  (void)rest;
  ir_id key = key_arg(L, arg[0], b->name);
  int rank;
  int64_t dims[IR_MAX_RANK], n;
  if (key == IR_NONE || !shape_arg(L, arg[1], b->name, &rank, dims, &n)) return tv_err();
  return tv_tensor(lreshape(L, random_bits(L, key, n, call->loc), rank, dims, call->loc));
}

/* f32 uniform in [lo, hi) of dims: the top 23 bits as the mantissa of a
 * number in [1, 2), minus 1, times (hi - lo), plus lo, at least lo (as
 * jax.random.uniform). */
static ir_id uniform(lctx *L, ir_id key, int rank, const int64_t *dims, int64_t n, double lo,
                     double hi, src_loc l) {
  ir_id w = lbinc(L, IR_OP_SHR_L, random_bits(L, key, n, l), 9, l);
  w = lbinc(L, IR_OP_OR, w, 0x3f800000, l);
  ir_shape fs = ir_shape_array(IR_F32, 1, &n);
  ir_attrs a = ir_attrs_none;
  ir_id f = lemit(L, IR_OP_BITCAST_CONVERT, &w, 1, &a, NULL, 0, &fs, l, "uniform");
  f = lbinc(L, IR_OP_SUBTRACT, f, 1.0, l);
  f = lbinc(L, IR_OP_ADD, lbinc(L, IR_OP_MULTIPLY, f, hi - lo, l), lo, l);
  f = lbinc(L, IR_OP_MAXIMUM, f, lo, l);
  return lreshape(L, f, rank, dims, l);
}

HANDLER(h_uniform) {
  (void)rest;
  ir_id key = key_arg(L, arg[0], b->name);
  int rank;
  int64_t dims[IR_MAX_RANK], n;
  double lo = 0, hi = 1;
  if (key == IR_NONE || !shape_arg(L, arg[1], b->name, &rank, dims, &n) ||
      (arg[2] && !st_float(L, arg[2], "minval", &lo)) || (arg[3] && !st_float(L, arg[3], "maxval", &hi)))
    return tv_err();
  return tv_tensor(uniform(L, key, rank, dims, n, lo, hi, call->loc));
}

/* Box-Muller over the two keys of split(key): sqrt(-2 log(1 - u1)) *
 * cos(2 pi u2). */
HANDLER(h_normal) {
  (void)rest;
  ir_id key = key_arg(L, arg[0], b->name);
  int rank;
  int64_t dims[IR_MAX_RANK], n;
  if (key == IR_NONE || !shape_arg(L, arg[1], b->name, &rank, dims, &n)) return tv_err();
  src_loc l = call->loc;
  ir_id bits = random_bits(L, key, 4, l);
  ir_id u1 = uniform(L, slice1(L, bits, 0, 2, l), rank, dims, n, 0, 1, l);
  ir_id u2 = uniform(L, slice1(L, bits, 2, 4, l), rank, dims, n, 0, 1, l);
  ir_id one = lfill(L, IR_F32, 1, rank, dims, l);
  ir_id r = lunary(L, IR_OP_SQRT, lbinc(L, IR_OP_MULTIPLY, lunary(L, IR_OP_LOG, lbin(L, IR_OP_SUBTRACT, one, u1, l), l), -2, l), l);
  ir_id c = lunary(L, IR_OP_COSINE, lbinc(L, IR_OP_MULTIPLY, u2, 2 * M_PI, l), l);
  return tv_tensor(lbin(L, IR_OP_MULTIPLY, r, c, l));
}

HANDLER(h_bernoulli) {
  (void)rest;
  ir_id key = key_arg(L, arg[0], b->name);
  int rank;
  int64_t dims[IR_MAX_RANK], n;
  double p;
  if (key == IR_NONE || !st_float(L, arg[1], "p", &p) ||
      !shape_arg(L, arg[2], b->name, &rank, dims, &n))
    return tv_err();
  ir_id u = uniform(L, key, rank, dims, n, 0, 1, call->loc);
  return tv_tensor(lcmp(L, IR_CMP_LT, u, lfill(L, IR_F32, p, rank, dims, call->loc), call->loc));
}

/* dropout(x, rate, key): x / (1 - rate) where bernoulli(key, 1 - rate)
 * keeps it, else 0. */
HANDLER(h_dropout) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  double rate;
  if (x == IR_NONE || !st_float(L, arg[1], "rate", &rate)) return tv_err();
  ir_id key = key_arg(L, arg[2], b->name);
  const ir_shape s = *lshape(L, x);
  if (key == IR_NONE) return tv_err();
  if (!ir_type_is_float(s.type) || !(rate >= 0 && rate < 1)) {
    lerr(L, call->loc, "dropout: needs a float x and 0 <= rate < 1, got %s and %g",
         lshape_str(L, &s), rate);
    return tv_err();
  }
  src_loc l = call->loc;
  int64_t n = ir_shape_count(&s);
  ir_id u = uniform(L, key, s.rank, s.dims, n, 0, 1, l);
  ir_id keep = lcmp(L, IR_CMP_LT, u, lfill(L, IR_F32, 1 - rate, s.rank, s.dims, l), l);
  ir_id ops[3] = {keep, lbinc(L, IR_OP_DIVIDE, x, 1 - rate, l), lfill(L, s.type, 0, s.rank, s.dims, l)};
  return tv_tensor(lemit(L, IR_OP_SELECT, ops, 3, NULL, NULL, 0, NULL, l, b->name));
}

/* ---- sorting ------------------------------------------------------------ */

/* (a, b) -> compare(a, b, dir) on scalars of t, TOTALORDER for floats. */
static ir_comp_id comparator(lctx *L, ir_type t, ir_cmp_dir dir) {
  ir_comp_id saved = L->comp;
  L->comp = ir_comp_add(L->m, ir_unique_name(L->m, dir == IR_CMP_LT ? "ascending" : "descending"));
  ir_inst_proto p;
  memset(&p, 0, sizeof p);
  p.op = IR_OP_PARAMETER;
  p.shape = ir_shape_scalar(t);
  p.a = ir_attrs_none;
  ir_id x = ir_inst_add(L->m, L->comp, &p);
  p.a.parameter_number = 1;
  ir_id y = ir_inst_add(L->m, L->comp, &p);
  p.op = IR_OP_COMPARE;
  p.shape = ir_shape_scalar(IR_PRED);
  p.a = ir_attrs_none;
  p.a.cmp_dir = dir;
  p.a.cmp_type = ir_type_is_float(t) ? IR_CMPT_TOTALORDER : IR_CMPT_DEFAULT;
  p.nops = 2;
  p.ops = (ir_id[]){x, y};
  ir_comp_get(L->m, L->comp)->root = ir_inst_add(L->m, L->comp, &p);
  ir_comp_finish(L->m, L->comp);
  ir_comp_id c = L->comp;
  L->comp = saved;
  return c;
}

/* Gives instruction id the verbatim attributes name=text (text NULL: the
 * called computation attribute). */
static void set_raw(lctx *L, ir_id id, int n, const char *const *names, const char *const *texts) {
  ir_inst *in = ir_inst_get(L->m, L->comp, id);
  ir_raw_attr *r = arena_array(L->m->arena, (size_t)n, sizeof *r);
  for (int i = 0; i < n; i++) {
    r[i].name = names[i];
    r[i].text = texts[i];
    r[i].ncalls = texts[i] ? 0 : 1;
  }
  in->info->nraw = n;
  in->info->raw = r;
}

HANDLER(h_sort) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  if (x == IR_NONE) return tv_err();
  const ir_shape s = *lshape(L, x);
  int64_t ax = -1;
  bool desc = false;
  if ((arg[1] && !st_int(L, arg[1], "sort axis", &ax)) ||
      !st_axis(L, arg[1] ? arg[1] : call, b->name, ax, s.rank, &ax) ||
      (arg[2] && !st_bool(L, arg[2], "descending", &desc)))
    return tv_err();
  ir_comp_id c = comparator(L, s.type, desc ? IR_CMP_GT : IR_CMP_LT);
  ir_id r = lemit(L, IR_OP_SORT, &x, 1, NULL, &c, 1, &s, call->loc, b->name);
  if (r == IR_NONE) return tv_err();
  const char *names[3] = {"dimensions", "is_stable", "to_apply"};
  const char *texts[3] = {arena_printf(L->m->arena, "{%lld}", (long long)ax), "true", NULL};
  set_raw(L, r, 3, names, texts);
  return tv_tensor(r);
}

HANDLER(h_top_k) {
  (void)rest;
  ir_id x = lower_tensor(L, arg[0]);
  int64_t k;
  if (x == IR_NONE || !st_int(L, arg[1], "k", &k)) return tv_err();
  const ir_shape s = *lshape(L, x);
  if (s.rank < 1 || k < 0 || k > s.dims[s.rank - 1] || s.type == IR_PRED) {
    lerr(L, call->loc, "top_k: k=%lld must be within the last dimension of %s", (long long)k,
         lshape_str(L, &s));
    return tv_err();
  }
  ir_shape el[2] = {s, s};
  el[0].dims[s.rank - 1] = el[1].dims[s.rank - 1] = k;
  el[1].type = IR_S32;
  ir_shape t;
  memset(&t, 0, sizeof t);
  t.type = IR_TUPLE;
  t.ntuple = 2;
  t.tuple = el;
  ir_id r = lemit(L, IR_OP_TOPK, &x, 1, NULL, NULL, 0, &t, call->loc, b->name);
  if (r == IR_NONE) return tv_err();
  const char *names[2] = {"k", "largest"};
  const char *texts[2] = {arena_printf(L->m->arena, "%lld", (long long)k), "true"};
  set_raw(L, r, 2, names, texts);
  tv out;
  memset(&out, 0, sizeof out);
  out.k = TV_MULTI;
  out.nmulti = 2;
  out.multi = arena_array(L->m->arena, 2, sizeof(ir_id));
  for (int i = 0; i < 2; i++) {
    ir_attrs a = ir_attrs_none;
    a.index = i;
    out.multi[i] = lemit(L, IR_OP_GET_TUPLE_ELEMENT, &r, 1, &a, NULL, 0, NULL, call->loc, b->name);
  }
  return out;
}
