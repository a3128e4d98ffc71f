/* gen.c: the elemental generator: the LLVM value of an instruction's
 * element at an index, computed from its operands' elements (recursively for
 * inline operands, by a load for materialised ones). Index-mapping ops
 * (broadcast, reshape, transpose, slice, pad, concatenate, reverse, iota)
 * only rewrite the index; reduce, reduce-window, dot and convolution emit
 * their inner loops in place, inlining the reducer computation.
 *
 * Values are memoised per (scope, instruction, leaf, index) within the loop
 * level that computed them, so a DAG is generated once per element rather
 * than once per path. Padding, window edges and concatenation pick operand
 * elements at clamped indices and select, so the inner loops stay
 * branch-free except in reduce-window and convolution, which skip
 * out-of-bounds window positions like the evaluator. */
#include "backend/llvm/lower.h"

/* ---- indices ---------------------------------------------------------- */

static void idx_init(idx *ix, const ir_shape *s) {
  memset(ix, 0, sizeof *ix);
  ix->rank = s->rank;
  ix->dims = s->dims;
}

void llvm_idx_scalar(emitter *e, idx *ix) {
  memset(ix, 0, sizeof *ix);
  ix->have_multi = true;
  ix->lin = llvm_i64(e, 0);
}

LLVMValueRef llvm_idx_lin(emitter *e, idx *ix) {
  if (ix->lin) return ix->lin;
  if (ix->rank == 0) return ix->lin = llvm_i64(e, 0);
  LLVMValueRef l = ix->v[0];
  for (int i = 1; i < ix->rank; i++)
    l = LLVMBuildNUWAdd(e->b, LLVMBuildNUWMul(e->b, l, llvm_i64(e, ix->dims[i]), ""), ix->v[i], "");
  return ix->lin = l;
}

void llvm_idx_multi(emitter *e, idx *ix) {
  if (ix->have_multi) return;
  LLVMValueRef rem = ix->lin;
  for (int i = ix->rank - 1; i > 0; i--) {
    LLVMValueRef d = llvm_i64(e, ix->dims[i] > 0 ? ix->dims[i] : 1);
    ix->v[i] = LLVMBuildURem(e->b, rem, d, "");
    rem = LLVMBuildUDiv(e->b, rem, d, "");
  }
  if (ix->rank > 0) ix->v[0] = rem;
  ix->have_multi = true;
}

/* ---- memo ------------------------------------------------------------- */

static void memo_key(memo_ent *m, idx *ix) {
  m->rank = ix->rank;
  m->multi = ix->have_multi && ix->rank > 0;
  if (m->multi)
    for (int i = 0; i < ix->rank; i++) m->key[i] = ix->v[i];
  else
    m->key[0] = ix->lin;
}

static LLVMValueRef memo_get(emitter *e, const scope *s, ir_id id, int leaf, idx *ix) {
  memo_ent k;
  memo_key(&k, ix);
  for (int i = e->memo.n - 1; i >= 0; i--) {
    memo_ent *m = &e->memo.v[i];
    if (m->s != s || m->id != id || m->leaf != leaf || m->rank != k.rank) continue;
    if (m->multi != k.multi) continue;
    int n = k.multi ? k.rank : 1;
    bool eq = true;
    for (int j = 0; j < n && eq; j++) eq = m->key[j] == k.key[j];
    if (eq) return m->val;
  }
  return NULL;
}

static void memo_put(emitter *e, const scope *s, ir_id id, int leaf, idx *ix, LLVMValueRef v) {
  memo_ent m;
  memset(&m, 0, sizeof m);
  memo_key(&m, ix);
  m.s = s;
  m.id = id;
  m.leaf = leaf;
  m.level = e->level;
  m.val = v;
  VEC_PUSH(e->a, e->memo, m);
}

/* ---- helpers ---------------------------------------------------------- */

static const ir_shape *op_shape(const scope *s, const ir_inst *in, int k) {
  return llvm_inst(s, in->ops[k])->shape;
}

static LLVMValueRef i64c(emitter *e, int64_t v) { return llvm_i64(e, v); }

/* Operand index for an elementwise op: rank-0 operands broadcast. */
static idx *ew_idx(emitter *e, idx *ix, const ir_shape *os, idx *tmp) {
  if (os->rank == 0 && ix->rank > 0) {
    llvm_idx_scalar(e, tmp);
    return tmp;
  }
  return ix;
}

static LLVMValueRef clamp_i64(emitter *e, LLVMValueRef v, int64_t lo, int64_t hi) {
  LLVMBuilderRef b = e->b;
  v = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, v, i64c(e, lo), ""), i64c(e, lo), v, "");
  return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, v, i64c(e, hi), ""), i64c(e, hi), v, "");
}

/* Position p in a dilated, padded axis maps to element p/dil of an axis of
 * size n when p >= 0, p % dil == 0 and p/dil < n. Sets *valid (i1) and
 * returns the clamped element index. */
static LLVMValueRef dilated_pos(emitter *e, LLVMValueRef p, int64_t dil, int64_t n, LLVMValueRef *valid) {
  LLVMBuilderRef b = e->b;
  LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntSGE, p, i64c(e, 0), "");
  LLVMValueRef q = p;
  if (dil > 1) {
    LLVMValueRef pp = LLVMBuildSelect(b, ok, p, i64c(e, 0), "");
    q = LLVMBuildUDiv(b, pp, i64c(e, dil), "");
    ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildURem(b, pp, i64c(e, dil), ""), i64c(e, 0), ""), "");
  }
  ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntSLT, q, i64c(e, n), ""), "");
  *valid = *valid ? LLVMBuildAnd(b, *valid, ok, "") : ok;
  return clamp_i64(e, q, 0, n > 0 ? n - 1 : 0);
}

const ir_literal *llvm_literal_leaf(const ir_literal *l, int leaf) {
  if (l->shape.type != IR_TUPLE) return l;
  for (int k = 0; k < l->shape.ntuple; k++) {
    int n = llvm_leaf_count(&l->shape.tuple[k]);
    if (leaf < n) return llvm_literal_leaf(l->elems[k], leaf);
    leaf -= n;
  }
  base_die("literal leaf out of range");
}

/* The sub-scope of nested fusion id (parameters bound to its operands). */
static scope *sub_scope(emitter *e, scope *s, ir_id id) {
  if (!s->sub[id]) {
    const ir_inst *in = llvm_inst(s, id);
    scope *ns = llvm_scope_new(e, in->calls[0], s);
    ns->param_src = in->ops;
    s->sub[id] = ns;
  }
  return s->sub[id];
}

/* An alloca'd accumulator per leaf, initialised. */
static LLVMValueRef acc_new(emitter *e, LLVMTypeRef t, LLVMValueRef init) {
  LLVMValueRef a = llvm_alloca(e, t);
  LLVMBuildStore(e->b, init, a);
  return a;
}

/* ---- reductions ------------------------------------------------------- */

/* The reducer's op when it is op(param0, param1) of an associative kind
 * (add, multiply, max, min) and reassociating it is allowed: always for
 * integers (wrapping arithmetic is associative), for floats only under
 * NATIVE numerics. Else IR_OP__COUNT. */
static ir_op assoc_reducer(emitter *e, const ir_inst *in, ir_type t) {
  if (in->nops != 2 || in->ncalls != 1 || t == IR_PRED) return IR_OP__COUNT;
  if (ir_type_is_float(t) && e->opt.numerics != CPU_NUMERICS_NATIVE) return IR_OP__COUNT;
  const ir_comp *c = &e->m->comps.v[in->calls[0]];
  if (c->nparams != 2 || c->root < 0) return IR_OP__COUNT;
  const ir_inst *r = &c->insts.v[c->root];
  if (r->op != IR_OP_ADD && r->op != IR_OP_MULTIPLY && r->op != IR_OP_MAXIMUM && r->op != IR_OP_MINIMUM)
    return IR_OP__COUNT;
  if (r->nops != 2 || r->shape->type != t) return IR_OP__COUNT;
  bool p01 = r->ops[0] == c->params[0] && r->ops[1] == c->params[1];
  bool p10 = r->ops[0] == c->params[1] && r->ops[1] == c->params[0];
  return p01 || p10 ? r->op : IR_OP__COUNT;
}

/* The identity of an associative op in compute type. */
static LLVMValueRef op_identity(emitter *e, ir_op op, ir_type t) {
  LLVMTypeRef ty = llvm_ctype(e, t);
  if (ir_type_is_float(t)) {
    double v = op == IR_OP_ADD ? -0.0 : op == IR_OP_MULTIPLY ? 1.0 : op == IR_OP_MAXIMUM ? -1.0 / 0.0 : 1.0 / 0.0;
    return LLVMConstReal(ty, v);
  }
  int64_t lo = t == IR_S8 ? INT8_MIN : INT32_MIN, hi = t == IR_S8 ? INT8_MAX : INT32_MAX;
  int64_t v = op == IR_OP_ADD ? 0 : op == IR_OP_MULTIPLY ? 1 : op == IR_OP_MAXIMUM ? lo : hi;
  return LLVMConstInt(ty, (unsigned long long)v, 1);
}

enum { RED_LANES = 8 };

/* A single-input reduce whose innermost input dim is reduced, with an
 * associative reducer: the innermost loop keeps RED_LANES partial
 * accumulators (unrolled, so the SLP vectoriser turns them into one vector
 * chain), combined at the end. */
static bool gen_reduce_lanes(emitter *e, scope *s, ir_id id, idx *ix, LLVMValueRef *out) {
  const ir_inst *in = llvm_inst(s, id);
  const ir_shape *is = op_shape(s, in, 0);
  ir_type t = is->type;
  int last = is->rank - 1;
  bool red[IR_MAX_RANK] = {0};
  for (int i = 0; i < in->a->dimensions.n; i++) red[in->a->dimensions.v[i]] = true;
  ir_op op = assoc_reducer(e, in, t);
  if (op == IR_OP__COUNT || last < 0 || !red[last] || is->dims[last] < 2 * RED_LANES) return false;
  LLVMTypeRef ct = llvm_ctype(e, t);
  idx sc;
  llvm_idx_scalar(e, &sc);
  LLVMValueRef lane[RED_LANES];
  lane[0] = acc_new(e, ct, llvm_gen(e, s, in->ops[1], 0, &sc));
  for (int u = 1; u < RED_LANES; u++) lane[u] = acc_new(e, ct, op_identity(e, op, t));
  llvm_idx_multi(e, ix);
  loop lp[IR_MAX_RANK], lj, lr;
  int nl = 0;
  LLVMValueRef base[IR_MAX_RANK];
  for (int d = 0, k = 0; d < last; d++) {
    if (red[d]) base[d] = llvm_loop_begin(e, &lp[nl++], i64c(e, 0), i64c(e, is->dims[d]));
    else base[d] = ix->v[k++];
  }
  int64_t L = is->dims[last], nfull = L / RED_LANES;
  LLVMValueRef jj = llvm_loop_begin(e, &lj, i64c(e, 0), i64c(e, nfull));
  LLVMValueRef j0 = LLVMBuildMul(e->b, jj, i64c(e, RED_LANES), "");
  for (int u = 0; u < RED_LANES; u++) {
    idx x;
    idx_init(&x, is);
    x.have_multi = true;
    for (int d = 0; d < last; d++) x.v[d] = base[d];
    x.v[last] = LLVMBuildAdd(e->b, j0, i64c(e, u), "");
    LLVMValueRef v = llvm_gen(e, s, in->ops[0], 0, &x);
    LLVMValueRef cur = LLVMBuildLoad2(e->b, ct, lane[u], "");
    LLVMBuildStore(e->b, llvm_binary(e, op, t, cur, v), lane[u]);
  }
  llvm_loop_end(e, &lj);
  LLVMValueRef j = llvm_loop_begin(e, &lr, i64c(e, nfull * RED_LANES), i64c(e, L));
  {
    idx x;
    idx_init(&x, is);
    x.have_multi = true;
    for (int d = 0; d < last; d++) x.v[d] = base[d];
    x.v[last] = j;
    LLVMValueRef v = llvm_gen(e, s, in->ops[0], 0, &x);
    LLVMValueRef cur = LLVMBuildLoad2(e->b, ct, lane[0], "");
    LLVMBuildStore(e->b, llvm_binary(e, op, t, cur, v), lane[0]);
  }
  llvm_loop_end(e, &lr);
  while (nl > 0) llvm_loop_end(e, &lp[--nl]);
  LLVMValueRef r = LLVMBuildLoad2(e->b, ct, lane[0], "");
  for (int u = 1; u < RED_LANES; u++) r = llvm_binary(e, op, t, r, LLVMBuildLoad2(e->b, ct, lane[u], ""));
  out[0] = r;
  return true;
}

/* TPU numerics: the reducer's op when the evaluator folds it in the TPU's
 * orders (ir/eval_reduce.c, reducer_init's fast path): to_apply is three
 * live instructions, one add, multiply, maximum, minimum, and or or of its
 * two scalar parameters (either order). Else IR_OP__COUNT. */
static ir_op tpu_fold_op(emitter *e, const ir_inst *in, ir_type t) {
  if (in->nops != 2 || in->ncalls != 1) return IR_OP__COUNT;
  const ir_comp *c = &e->m->comps.v[in->calls[0]];
  int live = 0;
  for (int i = 0; i < c->insts.n; i++) live += !c->insts.v[i].dead;
  if (c->nparams != 2 || c->root < 0 || live != 3) return IR_OP__COUNT;
  const ir_inst *r = &c->insts.v[c->root];
  if (r->nops != 2 || (r->op != IR_OP_ADD && r->op != IR_OP_MULTIPLY && r->op != IR_OP_MAXIMUM &&
                       r->op != IR_OP_MINIMUM && r->op != IR_OP_AND && r->op != IR_OP_OR))
    return IR_OP__COUNT;
  for (int k = 0; k < 2; k++) {
    const ir_inst *p = &c->insts.v[r->ops[k]];
    if (p->op != IR_OP_PARAMETER || p->shape->rank != 0 || p->shape->type != t) return IR_OP__COUNT;
  }
  return r->ops[0] != r->ops[1] ? r->op : IR_OP__COUNT;
}

/* The reducer of a single-input reduce applied to (a, x). */
static LLVMValueRef fold1(emitter *e, const ir_inst *in, LLVMValueRef a, LLVMValueRef x) {
  LLVMValueRef args[2] = {a, x}, res[1];
  llvm_gen_call(e, in->calls[0], args, res);
  return res[0];
}

/* Element j (a linear index over the reduced dims, row-major) of the
 * input of reduce `in` at output index ix. */
static LLVMValueRef red_elem(emitter *e, scope *s, const ir_inst *in, const bool *red, idx *ix,
                             LLVMValueRef j) {
  const ir_shape *is = op_shape(s, in, 0);
  idx x;
  idx_init(&x, is);
  x.have_multi = true;
  for (int d = 0, k = 0; d < is->rank; d++)
    if (!red[d]) x.v[d] = ix->v[k++];
  for (int d = is->rank - 1; d >= 0; d--) {
    if (!red[d]) continue;
    x.v[d] = LLVMBuildURem(e->b, j, i64c(e, is->dims[d] ? is->dims[d] : 1), "");
    j = LLVMBuildUDiv(e->b, j, i64c(e, is->dims[d] ? is->dims[d] : 1), "");
  }
  return llvm_gen(e, s, in->ops[0], 0, &x);
}

/* Element j of the current level: the input (buf NULL) or buf[j]. */
static LLVMValueRef level_elem(emitter *e, scope *s, const ir_inst *in, const bool *red, idx *ix,
                               LLVMValueRef buf, LLVMTypeRef ct, LLVMValueRef j) {
  if (!buf) return red_elem(e, s, in, red, ix, j);
  return LLVMBuildLoad2(e->b, ct, LLVMBuildInBoundsGEP2(e->b, ct, buf, &j, 1, ""), "");
}

/* TPU numerics, a float single-input reduce with a tpu_fold_op reducer, in
 * the orders the evaluator's TPU mode defines (docs/numerics.md section 4):
 * the tree when R >= 4096 reduced elements and O < 1024 outputs, else for
 * an f32 add over the trailing dims the vector unit's row order; false
 * (nothing emitted) otherwise: the sequential fold. */
static bool gen_reduce_tpu(emitter *e, scope *s, ir_id id, idx *ix, LLVMValueRef *out) {
  const ir_inst *in = llvm_inst(s, id);
  const ir_shape *is = op_shape(s, in, 0);
  ir_type t = is->type;
  if (e->opt.numerics != CPU_NUMERICS_TPU || !ir_type_is_float(t)) return false;
  ir_op op = tpu_fold_op(e, in, t);
  if (op == IR_OP__COUNT) return false;
  bool red[IR_MAX_RANK] = {0};
  for (int i = 0; i < in->a->dimensions.n; i++) red[in->a->dimensions.v[i]] = true;
  int64_t R = 1, O = ir_shape_count(in->shape);
  int nr = 0;
  for (int d = 0; d < is->rank; d++)
    if (red[d]) R *= is->dims[d], nr++;
  bool trailing = nr >= 1;
  for (int d = 0; d < is->rank; d++) trailing &= red[d] == (d >= is->rank - nr);
  bool tree = R >= 4096 && O < 1024;
  if (!tree && !(op == IR_OP_ADD && t == IR_F32 && trailing && R >= 1)) return false;
  LLVMBuilderRef b = e->b;
  LLVMTypeRef ct = llvm_ctype(e, t);
  idx sc;
  llvm_idx_scalar(e, &sc);
  LLVMValueRef init = llvm_gen(e, s, in->ops[1], 0, &sc);
  llvm_idx_multi(e, ix);
  LLVMValueRef acc = acc_new(e, ct, init), part = llvm_alloca(e, ct);
  loop l1, l2;
  if (!tree) { /* lane l < 128 folds l, l + 128, ...; the lanes fold in order */
    int64_t L = R < 128 ? R : 128;
    LLVMValueRef sum = acc_new(e, ct, init); /* set from lane 0 */
    LLVMValueRef l = llvm_loop_begin(e, &l1, i64c(e, 0), i64c(e, L));
    LLVMBuildStore(b, red_elem(e, s, in, red, ix, l), part);
    LLVMValueRef hi = LLVMBuildAdd(b, LLVMBuildUDiv(b, LLVMBuildSub(b, i64c(e, R - 1), l, ""), i64c(e, 128), ""),
                                   i64c(e, 1), "");
    LLVMValueRef k = llvm_loop_begin(e, &l2, i64c(e, 1), hi);
    LLVMValueRef j = LLVMBuildAdd(b, l, LLVMBuildMul(b, k, i64c(e, 128), ""), "");
    LLVMBuildStore(b, fold1(e, in, LLVMBuildLoad2(b, ct, part, ""), red_elem(e, s, in, red, ix, j)), part);
    llvm_loop_end(e, &l2);
    LLVMValueRef p = LLVMBuildLoad2(b, ct, part, "");
    LLVMValueRef first = LLVMBuildICmp(b, LLVMIntEQ, l, i64c(e, 0), "");
    LLVMBuildStore(b, LLVMBuildSelect(b, first, p, fold1(e, in, LLVMBuildLoad2(b, ct, sum, ""), p), ""), sum);
    llvm_loop_end(e, &l1);
    out[0] = fold1(e, in, init, LLVMBuildLoad2(b, ct, sum, ""));
    return true;
  }
  /* The tree: per level, partial q < R2 folds elements q, q + R2, ... of
   * the first R1 x R2 from element q; the next level is the R2 partials
   * then the R - R1 x R2 leftovers; the last level folds in order from init. */
  LLVMValueRef buf = NULL;
  int64_t Rk = R;
  for (;;) {
    int64_t R2 = 8192 / O;
    if (R2 > Rk / 8) R2 = Rk / 8;
    if (Rk < 4096 || R2 < 2) break;
    int64_t R1 = Rk / R2, rem = Rk - R1 * R2;
    LLVMValueRef dst = buf ? buf : llvm_alloca(e, LLVMArrayType(ct, (unsigned)(R2 + rem)));
    dst = LLVMBuildPointerCast(b, dst, LLVMPointerType(ct, 0), "");
    LLVMValueRef q = llvm_loop_begin(e, &l1, i64c(e, 0), i64c(e, R2));
    LLVMBuildStore(b, level_elem(e, s, in, red, ix, buf, ct, q), part);
    LLVMValueRef i = llvm_loop_begin(e, &l2, i64c(e, 1), i64c(e, R1));
    LLVMValueRef j = LLVMBuildAdd(b, LLVMBuildMul(b, i, i64c(e, R2), ""), q, "");
    LLVMBuildStore(b, fold1(e, in, LLVMBuildLoad2(b, ct, part, ""), level_elem(e, s, in, red, ix, buf, ct, j)), part);
    llvm_loop_end(e, &l2);
    LLVMBuildStore(b, LLVMBuildLoad2(b, ct, part, ""), LLVMBuildInBoundsGEP2(b, ct, dst, &q, 1, ""));
    llvm_loop_end(e, &l1);
    LLVMValueRef r = llvm_loop_begin(e, &l1, i64c(e, 0), i64c(e, rem));
    LLVMValueRef from = LLVMBuildAdd(b, r, i64c(e, R1 * R2), ""), to = LLVMBuildAdd(b, r, i64c(e, R2), "");
    LLVMBuildStore(b, level_elem(e, s, in, red, ix, buf, ct, from), LLVMBuildInBoundsGEP2(b, ct, dst, &to, 1, ""));
    llvm_loop_end(e, &l1);
    buf = dst;
    Rk = R2 + rem;
  }
  LLVMValueRef i = llvm_loop_begin(e, &l1, i64c(e, 0), i64c(e, Rk));
  LLVMBuildStore(b, fold1(e, in, LLVMBuildLoad2(b, ct, acc, ""), level_elem(e, s, in, red, ix, buf, ct, i)), acc);
  llvm_loop_end(e, &l1);
  out[0] = LLVMBuildLoad2(b, ct, acc, "");
  return true;
}

/* Reduce and reduce-window keep one accumulator per reduced operand
 * (in->nops / 2 of them): initialised from the init values, folded with
 * the reducer at operand index x, read out at the end. */
static void accs_init(emitter *e, scope *s, const ir_inst *in, LLVMValueRef *acc) {
  int n = in->nops / 2;
  idx sc;
  llvm_idx_scalar(e, &sc);
  for (int j = 0; j < n; j++) {
    ir_type t = op_shape(s, in, j)->type;
    acc[j] = acc_new(e, llvm_ctype(e, t), llvm_gen(e, s, in->ops[n + j], 0, &sc));
  }
}

static void accs_fold(emitter *e, scope *s, const ir_inst *in, LLVMValueRef *acc, idx *x) {
  int n = in->nops / 2;
  LLVMValueRef args[IR_MAX_RANK * 4], res[IR_MAX_RANK * 2];
  for (int j = 0; j < n; j++) {
    ir_type t = op_shape(s, in, j)->type;
    args[j] = LLVMBuildLoad2(e->b, llvm_ctype(e, t), acc[j], "");
    args[n + j] = llvm_gen(e, s, in->ops[j], 0, x);
  }
  llvm_gen_call(e, in->calls[0], args, res);
  for (int j = 0; j < n; j++) LLVMBuildStore(e->b, res[j], acc[j]);
}

static void accs_load(emitter *e, scope *s, const ir_inst *in, LLVMValueRef *acc, LLVMValueRef *out) {
  for (int j = 0; j < in->nops / 2; j++)
    out[j] = LLVMBuildLoad2(e->b, llvm_ctype(e, op_shape(s, in, j)->type), acc[j], "");
}

static void gen_reduce(emitter *e, scope *s, ir_id id, idx *ix, LLVMValueRef *out) {
  const ir_inst *in = llvm_inst(s, id);
  int n = in->nops / 2;
  const ir_shape *is = op_shape(s, in, 0);
  if (n == 1 && gen_reduce_tpu(e, s, id, ix, out)) return;
  if (n == 1 && gen_reduce_lanes(e, s, id, ix, out)) return;
  LLVMValueRef acc[IR_MAX_RANK * 2];
  accs_init(e, s, in, acc);
  llvm_idx_multi(e, ix);
  bool red[IR_MAX_RANK] = {0};
  for (int i = 0; i < in->a->dimensions.n; i++) red[in->a->dimensions.v[i]] = true;
  loop lp[IR_MAX_RANK];
  int nl = 0;
  idx x;
  idx_init(&x, is);
  x.have_multi = true;
  for (int d = 0, k = 0; d < is->rank; d++) {
    if (red[d]) x.v[d] = llvm_loop_begin(e, &lp[nl++], i64c(e, 0), i64c(e, is->dims[d]));
    else x.v[d] = ix->v[k++];
  }
  accs_fold(e, s, in, acc, &x);
  while (nl > 0) llvm_loop_end(e, &lp[--nl]);
  accs_load(e, s, in, acc, out);
}

static void gen_reduce_window(emitter *e, scope *s, ir_id id, idx *ix, LLVMValueRef *out) {
  const ir_inst *in = llvm_inst(s, id);
  LLVMBuilderRef b = e->b;
  const ir_shape *is = op_shape(s, in, 0);
  LLVMValueRef acc[IR_MAX_RANK * 2];
  accs_init(e, s, in, acc);
  llvm_idx_multi(e, ix);
  loop lp[IR_MAX_RANK];
  idx x;
  idx_init(&x, is);
  x.have_multi = true;
  LLVMValueRef valid = NULL;
  for (int d = 0; d < is->rank; d++) {
    const ir_window_dim *w = &ir_window_of(in->a)->dims[d];
    LLVMValueRef wv = llvm_loop_begin(e, &lp[d], i64c(e, 0), i64c(e, w->size));
    LLVMValueRef p = LLVMBuildAdd(b, LLVMBuildMul(b, ix->v[d], i64c(e, w->stride), ""),
                                  LLVMBuildMul(b, wv, i64c(e, w->rhs_dilate), ""), "");
    p = LLVMBuildSub(b, p, i64c(e, w->pad_lo), "");
    x.v[d] = dilated_pos(e, p, w->lhs_dilate, is->dims[d], &valid);
  }
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "rw.in");
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "rw.join");
  LLVMBuildCondBr(b, valid ? valid : LLVMConstInt(e->t_i1, 1, 0), body, join);
  LLVMPositionBuilderAtEnd(b, body);
  llvm_level_push(e);
  accs_fold(e, s, in, acc, &x);
  llvm_level_pop(e);
  LLVMBuildBr(b, join);
  LLVMPositionBuilderAtEnd(b, join);
  for (int d = is->rank - 1; d >= 0; d--) llvm_loop_end(e, &lp[d]);
  accs_load(e, s, in, acc, out);
}

/* One multiply-accumulate step of a dot or convolution (the evaluator's
 * default; TPU numerics use mxu_step below): operands converted to the
 * result type, products in f32, sums in f32 in loop order;
 * integer results multiply-add with wraparound in the result type. */
static LLVMValueRef mac(emitter *e, ir_type rt, ir_type lt, ir_type kt, LLVMValueRef acc,
                        LLVMValueRef x, LLVMValueRef y) {
  LLVMBuilderRef b = e->b;
  /* Operands are first converted to the result type (the evaluator's rule). */
  x = llvm_convert(e, lt, rt, x);
  y = llvm_convert(e, kt, rt, y);
  if (ir_type_is_float(rt)) return LLVMBuildFAdd(b, acc, LLVMBuildFMul(b, x, y, ""), "");
  if (rt == IR_PRED) return LLVMBuildOr(b, acc, LLVMBuildAnd(b, x, y, ""), "");
  return LLVMBuildAdd(b, acc, LLVMBuildMul(b, x, y, ""), "");
}

static LLVMTypeRef acc_type(emitter *e, ir_type rt) {
  return ir_type_is_float(rt) ? e->t_f32 : llvm_ctype(e, rt);
}

/* TPU numerics, float dot/convolution: the MXU's passes (docs/numerics.md
 * section 2). The passes run one after another into one f32 sum from +0,
 * each over the whole contraction in order; pass p multiplies the bf16
 * parts of the f32 operands (not converted to the result type, as the
 * evaluator) with one fused add per product; the sum is stored
 * NaN-canonicalised and rounded once to the result type. */
static int mxu_passes(emitter *e, const ir_inst *in, ir_type rt, ir_type lt, ir_type kt) {
  if (e->opt.numerics != CPU_NUMERICS_TPU || !ir_type_is_float(rt) || !ir_type_is_float(lt) ||
      !ir_type_is_float(kt))
    return 0;
  return llvm_mxu_passes(in, lt, kt);
}

/* One product of pass p into acc (x of type lt, y of kt, in compute type). */
static LLVMValueRef mxu_step(emitter *e, int p, ir_type lt, ir_type kt, LLVMValueRef acc,
                             LLVMValueRef x, LLVMValueRef y) {
  x = llvm_mxu_part(e, llvm_convert(e, lt, IR_F32, x), llvm_mxu_pair[0][p]);
  y = llvm_mxu_part(e, llvm_convert(e, kt, IR_F32, y), llvm_mxu_pair[1][p]);
  return llvm_mxu_mac(e, acc, x, y);
}

/* The stored value of a float dot/convolution sum r. */
static LLVMValueRef mxu_result(emitter *e, bool mxu, ir_type rt, LLVMValueRef r) {
  return llvm_round(e, rt, mxu ? llvm_canon_nan(e, r) : r);
}

static LLVMValueRef gen_dot(emitter *e, scope *s, ir_id id, idx *ix) {
  const ir_inst *in = llvm_inst(s, id);
  const ir_attrs *a = in->a;
  const ir_shape *ls = op_shape(s, in, 0), *rs = op_shape(s, in, 1);
  ir_type rt = in->shape->type;
  llvm_idx_multi(e, ix);
  idx li, ri;
  idx_init(&li, ls);
  idx_init(&ri, rs);
  li.have_multi = ri.have_multi = true;
  bool lused[IR_MAX_RANK] = {0}, rused[IR_MAX_RANK] = {0};
  int o = 0;
  for (int i = 0; i < a->lhs_batch.n; i++, o++) {
    li.v[a->lhs_batch.v[i]] = ix->v[o];
    ri.v[a->rhs_batch.v[i]] = ix->v[o];
    lused[a->lhs_batch.v[i]] = rused[a->rhs_batch.v[i]] = true;
  }
  for (int i = 0; i < a->lhs_contracting.n; i++) lused[a->lhs_contracting.v[i]] = true;
  for (int i = 0; i < a->rhs_contracting.n; i++) rused[a->rhs_contracting.v[i]] = true;
  for (int d = 0; d < ls->rank; d++)
    if (!lused[d]) li.v[d] = ix->v[o++];
  for (int d = 0; d < rs->rank; d++)
    if (!rused[d]) ri.v[d] = ix->v[o++];
  LLVMTypeRef at = acc_type(e, rt);
  LLVMValueRef acc = acc_new(e, at, LLVMConstNull(at));
  loop lp[IR_MAX_RANK];
  int nc = a->lhs_contracting.n, P = mxu_passes(e, in, rt, ls->type, rs->type);
  for (int p = 0; p < (P ? P : 1); p++) {
    li.lin = ri.lin = NULL; /* the linear indices of the last pass's loops */
    for (int c = 0; c < nc; c++) {
      LLVMValueRef v = llvm_loop_begin(e, &lp[c], i64c(e, 0), i64c(e, ls->dims[a->lhs_contracting.v[c]]));
      li.v[a->lhs_contracting.v[c]] = v;
      ri.v[a->rhs_contracting.v[c]] = v;
    }
    LLVMValueRef x = llvm_gen(e, s, in->ops[0], 0, &li);
    LLVMValueRef y = llvm_gen(e, s, in->ops[1], 0, &ri);
    LLVMValueRef cur = LLVMBuildLoad2(e->b, at, acc, "");
    LLVMBuildStore(e->b, P ? mxu_step(e, p, ls->type, rs->type, cur, x, y)
                           : mac(e, rt, ls->type, rs->type, cur, x, y), acc);
    for (int c = nc - 1; c >= 0; c--) llvm_loop_end(e, &lp[c]);
  }
  LLVMValueRef r = LLVMBuildLoad2(e->b, at, acc, "");
  return ir_type_is_float(rt) ? mxu_result(e, P > 0, rt, r) : r;
}

/* Convolution at one output element: for each kernel spatial position
 * (row-major), for each input feature of the group, acc += in * kernel;
 * positions falling in padding or between dilated elements are skipped,
 * except under the MXU's passes, where they read a +0 operand (the TPU's
 * zero-filled patches: 0 x inf is NaN there). */
static LLVMValueRef gen_conv(emitter *e, scope *s, ir_id id, idx *ix) {
  const ir_inst *in = llvm_inst(s, id);
  const ir_attrs *a = in->a;
  const ir_conv_dims *cd = &a->conv;
  LLVMBuilderRef b = e->b;
  const ir_shape *is = op_shape(s, in, 0), *ks = op_shape(s, in, 1);
  ir_type rt = in->shape->type;
  int64_t G = a->feature_group_count > 0 ? a->feature_group_count : 1;
  int64_t BG = a->batch_group_count > 0 ? a->batch_group_count : 1;
  int64_t cg = ks->dims[cd->k_in];           /* input features per group */
  int64_t O = ks->dims[cd->k_out];
  int64_t nb_out = in->shape->dims[cd->out_batch];
  llvm_idx_multi(e, ix);
  LLVMValueRef ob = ix->v[cd->out_batch], of = ix->v[cd->out_feature];
  idx xi, ki;
  idx_init(&xi, is);
  idx_init(&ki, ks);
  xi.have_multi = ki.have_multi = true;
  ki.v[cd->k_out] = of;
  /* Feature groups: output feature f reads input features of group f/(O/G). */
  LLVMValueRef fbase = i64c(e, 0);
  if (G > 1) fbase = LLVMBuildMul(b, LLVMBuildUDiv(b, of, i64c(e, O / G), ""), i64c(e, cg), "");
  /* Batch groups: output feature f reads the batch slice of group f/(O/BG). */
  LLVMValueRef bidx = ob;
  if (BG > 1)
    bidx = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildUDiv(b, of, i64c(e, O / BG), ""), i64c(e, nb_out), ""), ob, "");
  xi.v[cd->in_batch] = bidx;
  LLVMTypeRef at = acc_type(e, rt);
  LLVMValueRef acc = acc_new(e, at, LLVMConstNull(at));
  loop lp[IR_MAX_RANK + 1];
  int P = mxu_passes(e, in, rt, is->type, ks->type);
  for (int p = 0; p < (P ? P : 1); p++) {
    LLVMValueRef valid = NULL;
    xi.lin = ki.lin = NULL; /* the linear indices of the last pass's loops */
    for (int d = 0; d < cd->nspatial; d++) {
      const ir_window_dim *w = &ir_window_of(a)->dims[d];
      int64_t ksz = ks->dims[cd->k_spatial[d]];
      LLVMValueRef kv = llvm_loop_begin(e, &lp[d], i64c(e, 0), i64c(e, ksz));
      LLVMValueRef pos = LLVMBuildAdd(b, LLVMBuildMul(b, ix->v[cd->out_spatial[d]], i64c(e, w->stride), ""),
                                      LLVMBuildMul(b, kv, i64c(e, w->rhs_dilate), ""), "");
      pos = LLVMBuildSub(b, pos, i64c(e, w->pad_lo), "");
      xi.v[cd->in_spatial[d]] = dilated_pos(e, pos, w->lhs_dilate, is->dims[cd->in_spatial[d]], &valid);
      ki.v[cd->k_spatial[d]] = w->reversal ? LLVMBuildSub(b, i64c(e, ksz - 1), kv, "") : kv;
    }
    LLVMValueRef ok = valid ? valid : LLVMConstInt(e->t_i1, 1, 0);
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "cv.in");
    LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "cv.join");
    LLVMBuildCondBr(b, P ? LLVMConstInt(e->t_i1, 1, 0) : ok, body, join);
    LLVMPositionBuilderAtEnd(b, body);
    llvm_level_push(e);
    LLVMValueRef ci = llvm_loop_begin(e, &lp[cd->nspatial], i64c(e, 0), i64c(e, cg));
    xi.v[cd->in_feature] = G > 1 ? LLVMBuildAdd(b, fbase, ci, "") : ci;
    ki.v[cd->k_in] = ci;
    LLVMValueRef x = llvm_gen(e, s, in->ops[0], 0, &xi); /* clamped index: in bounds */
    LLVMValueRef y = llvm_gen(e, s, in->ops[1], 0, &ki);
    LLVMValueRef cur = LLVMBuildLoad2(b, at, acc, "");
    if (P) x = LLVMBuildSelect(b, ok, x, llvm_zero(e, is->type), "");
    LLVMBuildStore(b, P ? mxu_step(e, p, is->type, ks->type, cur, x, y)
                        : mac(e, rt, is->type, ks->type, cur, x, y), acc);
    llvm_loop_end(e, &lp[cd->nspatial]);
    llvm_level_pop(e);
    LLVMBuildBr(b, join);
    LLVMPositionBuilderAtEnd(b, join);
    for (int d = cd->nspatial - 1; d >= 0; d--) llvm_loop_end(e, &lp[d]);
  }
  LLVMValueRef r = LLVMBuildLoad2(b, at, acc, "");
  return ir_type_is_float(rt) ? mxu_result(e, P > 0, rt, r) : r;
}

/* ---- the generator ---------------------------------------------------- */

void llvm_gen_call(emitter *e, ir_comp_id c, LLVMValueRef *args, LLVMValueRef *out) {
  scope *cs = llvm_scope_new(e, c, NULL);
  const ir_comp *cp = cs->c;
  cs->param_off = arena_array(e->a, (size_t)cp->nparams + 1, sizeof(int32_t));
  int off = 0;
  for (int p = 0; p < cp->nparams; p++) {
    cs->param_off[p] = off;
    off += llvm_leaf_count(cp->insts.v[cp->params[p]].shape);
  }
  cs->param_vals = args;
  idx sc;
  llvm_idx_scalar(e, &sc);
  int nr = llvm_leaf_count(cp->insts.v[cp->root].shape);
  for (int j = 0; j < nr; j++) out[j] = llvm_gen(e, cs, cp->root, j, &sc);
}

LLVMValueRef llvm_gen(emitter *e, scope *s, ir_id id, int leaf, idx *ix) {
  if (s->mat[id]) {
    const cbuf *cb = s->mat[id][leaf];
    return llvm_load(e, cb->type, llvm_buf_ptr(e, cb), llvm_idx_lin(e, ix));
  }
  return llvm_gen_self(e, s, id, leaf, ix);
}

/* ---- per-op value generators ------------------------------------------ */

/* Index oi into an operand of shape sh addressed by multi-index: ix gets
 * its multi-index first, oi is left for the caller to fill. */
static void operand_multi(emitter *e, idx *ix, const ir_shape *sh, idx *oi) {
  llvm_idx_multi(e, ix);
  idx_init(oi, sh);
  oi->have_multi = true;
}

static LLVMValueRef gen_elemwise(emitter *e, scope *s, const ir_inst *in, idx *ix) {
  unsigned fl = ir_op_flags(in->op);
  ir_type t = in->shape->type;
  idx tmp[3];
  LLVMValueRef x[3];
  for (int k = 0; k < in->nops; k++)
    x[k] = llvm_gen(e, s, in->ops[k], 0, ew_idx(e, ix, op_shape(s, in, k), &tmp[k]));
  ir_type ot = op_shape(s, in, 0)->type;
  if (fl & OPF_UNARY) return llvm_unary(e, in->op, t, x[0]);
  if (in->op == IR_OP_COMPARE) return llvm_compare(e, in->a, ot, x[0], x[1]);
  if (fl & OPF_BINARY) return llvm_binary(e, in->op, t, x[0], x[1]);
  if (in->op == IR_OP_SELECT) {
    LLVMValueRef v = LLVMBuildSelect(e->b, x[0], x[1], x[2], "");
    /* TPU: a bf16 select leaves the vector unit rounded (vrndbf, vsth),
     * which quiets a signalling NaN; other bf16 values are unchanged */
    if (e->opt.numerics == CPU_NUMERICS_TPU && t == IR_BF16) v = llvm_round(e, t, v);
    return v;
  }
  return llvm_clamp(e, t, x[0], x[1], x[2]);
}

static LLVMValueRef gen_iota(emitter *e, const ir_inst *in, idx *ix) {
  LLVMBuilderRef b = e->b;
  ir_type t = in->shape->type;
  llvm_idx_multi(e, ix);
  LLVMValueRef i = ix->v[in->a->index];
  if (ir_type_is_float(t)) return llvm_round(e, t, LLVMBuildSIToFP(b, i, e->t_f32, ""));
  if (t == IR_PRED) return LLVMBuildICmp(b, LLVMIntNE, i, i64c(e, 0), "");
  return LLVMBuildTrunc(b, i, llvm_ctype(e, t), "");
}

static LLVMValueRef gen_broadcast(emitter *e, scope *s, const ir_inst *in, idx *ix) {
  const ir_shape *os = op_shape(s, in, 0);
  idx oi;
  idx_init(&oi, os);
  if (os->rank == 0) {
    llvm_idx_scalar(e, &oi);
  } else {
    llvm_idx_multi(e, ix);
    oi.have_multi = true;
    for (int i = 0; i < in->a->dimensions.n; i++) oi.v[i] = ix->v[in->a->dimensions.v[i]];
  }
  return llvm_gen(e, s, in->ops[0], 0, &oi);
}

/* reshape, copy, convert, bitcast-convert: one element of the operand,
 * at the same linear position, converted. */
static LLVMValueRef gen_same_pos(emitter *e, scope *s, const ir_inst *in, idx *ix) {
  const ir_shape *os = op_shape(s, in, 0);
  ir_type t = in->shape->type;
  idx oi, *pi = ix;
  if (in->op == IR_OP_RESHAPE) {
    idx_init(&oi, os);
    oi.lin = llvm_idx_lin(e, ix);
    pi = &oi;
  }
  LLVMValueRef x = llvm_gen(e, s, in->ops[0], 0, pi);
  if (in->op == IR_OP_CONVERT) return llvm_convert(e, os->type, t, x);
  if (in->op == IR_OP_BITCAST_CONVERT) return llvm_bitcast_convert(e, os->type, t, x);
  return x;
}

static LLVMValueRef gen_transpose(emitter *e, scope *s, const ir_inst *in, idx *ix) {
  idx oi;
  operand_multi(e, ix, op_shape(s, in, 0), &oi);
  for (int i = 0; i < in->a->dimensions.n; i++) oi.v[in->a->dimensions.v[i]] = ix->v[i];
  return llvm_gen(e, s, in->ops[0], 0, &oi);
}

static LLVMValueRef gen_slice(emitter *e, scope *s, const ir_inst *in, idx *ix) {
  LLVMBuilderRef b = e->b;
  const ir_attrs *a = in->a;
  idx oi;
  operand_multi(e, ix, op_shape(s, in, 0), &oi);
  for (int i = 0; i < ix->rank; i++) {
    int64_t st = a->slice_stride.n ? a->slice_stride.v[i] : 1;
    oi.v[i] = LLVMBuildAdd(b, LLVMBuildMul(b, ix->v[i], i64c(e, st), ""), i64c(e, a->slice_start.v[i]), "");
  }
  return llvm_gen(e, s, in->ops[0], 0, &oi);
}

static LLVMValueRef gen_reverse(emitter *e, scope *s, const ir_inst *in, idx *ix) {
  idx oi;
  operand_multi(e, ix, op_shape(s, in, 0), &oi);
  for (int i = 0; i < ix->rank; i++) oi.v[i] = ix->v[i];
  for (int i = 0; i < in->a->dimensions.n; i++) {
    int64_t d = in->a->dimensions.v[i];
    oi.v[d] = LLVMBuildSub(e->b, i64c(e, ix->dims[d] - 1), ix->v[d], "");
  }
  return llvm_gen(e, s, in->ops[0], 0, &oi);
}

/* Each non-empty operand read at the clamped position, then a chain of
 * selects on the concatenated coordinate, last operand innermost. */
static LLVMValueRef gen_concatenate(emitter *e, scope *s, const ir_inst *in, idx *ix) {
  LLVMBuilderRef b = e->b;
  int64_t d = in->a->dimensions.v[0], off = 0;
  LLVMValueRef vals[64];
  int64_t offs[64];
  int n = in->nops;
  LLVMValueRef *vs = n <= 64 ? vals : arena_array(e->a, (size_t)n, sizeof *vs);
  int64_t *os = n <= 64 ? offs : arena_array(e->a, (size_t)n, sizeof *os);
  for (int k = 0; k < n; k++) {
    const ir_shape *sh = op_shape(s, in, k);
    idx oi;
    operand_multi(e, ix, sh, &oi);
    for (int i = 0; i < ix->rank; i++) oi.v[i] = ix->v[i];
    os[k] = off;
    oi.v[d] = clamp_i64(e, LLVMBuildSub(b, ix->v[d], i64c(e, off), ""), 0, sh->dims[d] > 0 ? sh->dims[d] - 1 : 0);
    off += sh->dims[d];
    vs[k] = sh->dims[d] > 0 ? llvm_gen(e, s, in->ops[k], 0, &oi) : NULL;
  }
  LLVMValueRef v = NULL;
  for (int k = n - 1; k >= 0; k--) {
    if (!vs[k]) continue;
    if (!v) v = vs[k];
    else v = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, ix->v[d], i64c(e, os[k + 1 < n ? k + 1 : k]), ""), vs[k], v, "");
  }
  return v ? v : llvm_zero(e, in->shape->type);
}

static LLVMValueRef gen_pad(emitter *e, scope *s, const ir_inst *in, idx *ix) {
  LLVMBuilderRef b = e->b;
  const ir_shape *os = op_shape(s, in, 0);
  idx oi;
  operand_multi(e, ix, os, &oi);
  LLVMValueRef valid = NULL;
  for (int i = 0; i < ix->rank; i++) {
    const ir_padding_dim *p = &in->a->padding[i];
    LLVMValueRef pos = LLVMBuildSub(b, ix->v[i], i64c(e, p->lo), "");
    oi.v[i] = dilated_pos(e, pos, p->interior + 1, os->dims[i], &valid);
  }
  idx sc;
  llvm_idx_scalar(e, &sc);
  LLVMValueRef pv = llvm_gen(e, s, in->ops[1], 0, &sc);
  if (ir_shape_count(os) == 0) return pv;
  LLVMValueRef x = llvm_gen(e, s, in->ops[0], 0, &oi);
  return valid ? LLVMBuildSelect(b, valid, x, pv, "") : x;
}

/* Ops whose leaves are other values' leaves: no code of their own, no memo. */
static LLVMValueRef gen_forward(emitter *e, scope *s, const ir_inst *in, ir_id id, int leaf, idx *ix) {
  switch (in->op) {
  case IR_OP_PARAMETER: {
    int p = (int)in->a->parameter_number;
    if (s->param_vals) return s->param_vals[s->param_off[p] + leaf];
    BASE_ASSERT(s->parent);
    return llvm_gen(e, s->parent, s->param_src[p], leaf, ix);
  }
  case IR_OP_ALL_REDUCE: /* one replica: the identity */
    return llvm_gen(e, s, in->ops[in->nops == 1 ? 0 : leaf], in->nops == 1 ? leaf : 0, ix);
  case IR_OP_TUPLE:
    for (int k = 0; k < in->nops; k++) {
      int n = llvm_leaf_count(op_shape(s, in, k));
      if (leaf < n) return llvm_gen(e, s, in->ops[k], leaf, ix);
      leaf -= n;
    }
    base_die("tuple leaf out of range");
  case IR_OP_GET_TUPLE_ELEMENT:
    return llvm_gen(e, s, in->ops[0], llvm_leaf_offset(op_shape(s, in, 0), (int)in->a->index) + leaf, ix);
  case IR_OP_FUSION: {
    scope *ns = sub_scope(e, s, id);
    return llvm_gen(e, ns, ns->c->root, leaf, ix);
  }
  default:
    return NULL;
  }
}

LLVMValueRef llvm_gen_self(emitter *e, scope *s, ir_id id, int leaf, idx *ix) {
  LLVMValueRef v = memo_get(e, s, id, leaf, ix);
  if (v) return v;
  const ir_inst *in = llvm_inst(s, id);
  if (ir_op_flags(in->op) & OPF_ELEMWISE) {
    v = gen_elemwise(e, s, in, ix);
    memo_put(e, s, id, leaf, ix, v);
    return v;
  }
  if ((v = gen_forward(e, s, in, id, leaf, ix))) return v;
  switch (in->op) {
  case IR_OP_CONSTANT: {
    const ir_literal *l = llvm_literal_leaf(in->a->literal, leaf);
    if (l->shape.rank == 0) return llvm_const_elem(e, l, 0);
    cbuf *cb = llvm_const_buf(e, l);
    v = llvm_load(e, cb->type, llvm_buf_ptr(e, cb), llvm_idx_lin(e, ix));
    break;
  }
  case IR_OP_IOTA: v = gen_iota(e, in, ix); break;
  case IR_OP_BROADCAST: v = gen_broadcast(e, s, in, ix); break;
  case IR_OP_RESHAPE:
  case IR_OP_COPY:
  case IR_OP_CONVERT:
  case IR_OP_BITCAST_CONVERT: v = gen_same_pos(e, s, in, ix); break;
  case IR_OP_TRANSPOSE: v = gen_transpose(e, s, in, ix); break;
  case IR_OP_SLICE: v = gen_slice(e, s, in, ix); break;
  case IR_OP_REVERSE: v = gen_reverse(e, s, in, ix); break;
  case IR_OP_CONCATENATE: v = gen_concatenate(e, s, in, ix); break;
  case IR_OP_PAD: v = gen_pad(e, s, in, ix); break;
  case IR_OP_DYNAMIC_SLICE:
  case IR_OP_DYNAMIC_UPDATE_SLICE:
  case IR_OP_GATHER: v = llvm_gen_indexing(e, s, in, ix); break;
  case IR_OP_DOT: v = gen_dot(e, s, id, ix); break;
  case IR_OP_CONVOLUTION: v = gen_conv(e, s, id, ix); break;
  case IR_OP_REDUCE:
  case IR_OP_REDUCE_WINDOW: {
    LLVMValueRef out[IR_MAX_RANK * 2];
    if (in->op == IR_OP_REDUCE) gen_reduce(e, s, id, ix, out);
    else gen_reduce_window(e, s, id, ix, out);
    int n = in->nops / 2;
    for (int j = 0; j < n; j++) memo_put(e, s, id, j, ix, out[j]);
    return out[leaf];
  }
  default:
    base_die("llvm_gen_self: %s", ir_op_name(in->op));
  }
  memo_put(e, s, id, leaf, ix, v);
  return v;
}

/* ---- walks ------------------------------------------------------------ */

static bool nm_walk(emitter *e, scope *s, ir_id id, bool self) {
  if (!self && s->mat[id]) return false;
  if (s->visit[id] == e->visit_gen) return false;
  s->visit[id] = e->visit_gen;
  const ir_inst *in = llvm_inst(s, id);
  switch (in->op) {
  case IR_OP_PARAMETER:
    return s->parent ? nm_walk(e, s->parent,
                               s->param_src[in->a->parameter_number], false) : false;
  case IR_OP_CONSTANT: return false;
  case IR_OP_BROADCAST:
    if (llvm_inst(s, in->ops[0])->shape->rank > 0) return true;
    break;
  case IR_OP_IOTA: case IR_OP_TRANSPOSE: case IR_OP_SLICE: case IR_OP_CONCATENATE:
  case IR_OP_PAD: case IR_OP_REVERSE: case IR_OP_REDUCE: case IR_OP_REDUCE_WINDOW:
  case IR_OP_DOT: case IR_OP_CONVOLUTION: case IR_OP_DYNAMIC_SLICE: case IR_OP_DYNAMIC_UPDATE_SLICE:
  case IR_OP_GATHER:
    return true;
  case IR_OP_FUSION: {
    scope *ns = sub_scope(e, s, id);
    if (nm_walk(e, ns, ns->c->root, false)) return true;
    break;
  }
  default: break;
  }
  /* Elementwise ops, reshape (which passes the linear index), convert and
   * the like need a multi-index only if an operand does. */
  for (int k = 0; k < in->nops; k++)
    if (nm_walk(e, s, in->ops[k], false)) return true;
  return false;
}

bool llvm_needs_multi(emitter *e, scope *s, ir_id id) {
  e->visit_gen++;
  return nm_walk(e, s, id, true);
}

static void co_walk(emitter *e, scope *s, ir_id id, bool self, bool *used) {
  if (!self && s->mat[id]) {
    int n = llvm_leaf_count(llvm_inst(s, id)->shape);
    for (int j = 0; j < n; j++) used[s->mat[id][j]->id] = true;
    return;
  }
  if (s->visit[id] == e->visit_gen) return;
  s->visit[id] = e->visit_gen;
  const ir_inst *in = llvm_inst(s, id);
  if (in->op == IR_OP_PARAMETER) {
    if (s->parent) co_walk(e, s->parent,
                           s->param_src[in->a->parameter_number], false, used);
    return;
  }
  if (in->op == IR_OP_FUSION) {
    scope *ns = sub_scope(e, s, id);
    co_walk(e, ns, ns->c->root, false, used);
  }
  for (int k = 0; k < in->nops; k++) co_walk(e, s, in->ops[k], false, used);
}

void llvm_collect(emitter *e, scope *s, ir_id id, bool self, bool *used) {
  e->visit_gen++;
  co_walk(e, s, id, self, used);
}
