/* sort.c: sort, topk and the TopK custom-call on the cpu: one kernel over
 * the rows along the sorted dimension, each row sorted by the evaluator's
 * merge sort (ir/eval_sort.c: bottom-up, runs of width 1, 2, 4, ...; a
 * merge takes the right run's head only when comparator(right, left)), on
 * a permutation of i64 positions kept in scratch (two arrays of the row's
 * length per row, so rows run in parallel). The comparator computation is
 * generated inline (llvm_gen_call) with parameters 2i and 2i + 1 the
 * right and left elements of operand i; topk compares by TOTALORDER. The
 * elements are then moved as raw storage bits, so every result is the
 * evaluator's bit for bit. */
#include "backend/llvm/lower.h"

typedef struct srt {
  emitter *e;
  scope *s;
  const ir_inst *in;
  int n;                 /* operands */
  cbuf *ops[64];
  ir_type types[64];
  ir_comp_id comp;       /* IR_NONE: TOTALORDER on operand 0, dir */
  ir_cmp_dir dir;
  int64_t len, inner;    /* row length; stride of the sorted dimension */
  LLVMValueRef base;     /* linear index of the row's first element */
} srt;

static LLVMValueRef ld_i64(emitter *e, LLVMValueRef p) { return LLVMBuildLoad2(e->b, e->t_i64, p, ""); }
static void st_i64(emitter *e, LLVMValueRef p, LLVMValueRef v) { LLVMBuildStore(e->b, v, p); }
static LLVMValueRef add(emitter *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(e->b, a, b, ""); }
static LLVMValueRef mul(emitter *e, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildMul(e->b, a, b, ""); }
static LLVMValueRef slt(emitter *e, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildICmp(e->b, LLVMIntSLT, a, b, "");
}
static LLVMValueRef min64(emitter *e, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(e->b, slt(e, a, b), a, b, "");
}

static LLVMTypeRef p64(emitter *e) { return LLVMPointerType(e->t_i64, 0); }

/* &arr[i] of an i64 array (arr: i64*). */
static LLVMValueRef at(emitter *e, LLVMValueRef arr, LLVMValueRef i) {
  return LLVMBuildInBoundsGEP2(e->b, e->t_i64, arr, &i, 1, "");
}

/* The linear index of row position p. */
static LLVMValueRef lin_of(srt *x, LLVMValueRef p) {
  return add(x->e, x->base, mul(x->e, p, llvm_i64(x->e, x->inner)));
}

/* comparator(position r's elements, position l's elements) as i1. */
static LLVMValueRef before(srt *x, LLVMValueRef r, LLVMValueRef l) {
  emitter *e = x->e;
  LLVMValueRef lr = lin_of(x, r), ll = lin_of(x, l);
  if (x->comp == IR_NONE) {
    ir_attrs a = ir_attrs_none;
    a.cmp_dir = x->dir;
    a.cmp_type = IR_CMPT_TOTALORDER;
    ir_type t = x->types[0];
    LLVMValueRef p = llvm_buf_ptr(e, x->ops[0]);
    return llvm_compare(e, &a, t, llvm_load(e, t, p, lr), llvm_load(e, t, p, ll));
  }
  LLVMValueRef args[128], res;
  for (int k = 0; k < x->n; k++) {
    LLVMValueRef p = llvm_buf_ptr(e, x->ops[k]);
    args[2 * k] = llvm_load(e, x->types[k], p, lr);
    args[2 * k + 1] = llvm_load(e, x->types[k], p, ll);
  }
  llvm_level_push(e);
  llvm_gen_call(e, x->comp, args, &res);
  llvm_level_pop(e);
  if (LLVMGetIntTypeWidth(LLVMTypeOf(res)) == 1) return res;
  return LLVMBuildICmp(e->b, LLVMIntNE, res, LLVMConstInt(LLVMTypeOf(res), 0, 0), "");
}

/* A while loop: header evaluates cond (built by the caller after
 * while_begin returns the header), body until while_end. */
typedef struct wloop {
  LLVMBasicBlockRef header, body, exit;
} wloop;

static void while_begin(emitter *e, wloop *w) {
  w->header = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "wh");
  w->body = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "wb");
  w->exit = LLVMAppendBasicBlockInContext(e->ctx, e->fn, "wx");
  LLVMBuildBr(e->b, w->header);
  LLVMPositionBuilderAtEnd(e->b, w->header);
}

static void while_cond(emitter *e, wloop *w, LLVMValueRef c) {
  LLVMBuildCondBr(e->b, c, w->body, w->exit);
  LLVMPositionBuilderAtEnd(e->b, w->body);
  llvm_level_push(e);
}

static void while_end(emitter *e, wloop *w) {
  llvm_level_pop(e);
  LLVMBuildBr(e->b, w->header);
  LLVMPositionBuilderAtEnd(e->b, w->exit);
}

/* dst[*k++] = src[*i++] while *i < lim. */
static void drain(emitter *e, LLVMValueRef src, LLVMValueRef dst, LLVMValueRef i, LLVMValueRef k,
                  LLVMValueRef lim) {
  wloop w;
  while_begin(e, &w);
  while_cond(e, &w, slt(e, ld_i64(e, i), lim));
  LLVMValueRef iv = ld_i64(e, i), kv = ld_i64(e, k);
  st_i64(e, at(e, dst, kv), ld_i64(e, at(e, src, iv)));
  st_i64(e, i, add(e, iv, llvm_i64(e, 1)));
  st_i64(e, k, add(e, kv, llvm_i64(e, 1)));
  while_end(e, &w);
}

/* Merges runs [lo, mid) and [mid, hi) of src into dst. */
static void merge(srt *x, LLVMValueRef src, LLVMValueRef dst, LLVMValueRef lo, LLVMValueRef mid,
                  LLVMValueRef hi) {
  emitter *e = x->e;
  LLVMBuilderRef b = e->b;
  LLVMValueRef i = llvm_alloca(e, e->t_i64), j = llvm_alloca(e, e->t_i64),
               k = llvm_alloca(e, e->t_i64);
  st_i64(e, i, lo);
  st_i64(e, j, mid);
  st_i64(e, k, lo);
  wloop w;
  while_begin(e, &w);
  LLVMValueRef c = LLVMBuildAnd(b, slt(e, ld_i64(e, i), mid), slt(e, ld_i64(e, j), hi), "");
  while_cond(e, &w, c);
  LLVMValueRef iv = ld_i64(e, i), jv = ld_i64(e, j), kv = ld_i64(e, k);
  LLVMValueRef pi = ld_i64(e, at(e, src, iv)), pj = ld_i64(e, at(e, src, jv));
  LLVMValueRef right = before(x, pj, pi);
  st_i64(e, at(e, dst, kv), LLVMBuildSelect(b, right, pj, pi, ""));
  LLVMValueRef one = llvm_i64(e, 1), zero = llvm_i64(e, 0);
  st_i64(e, j, add(e, jv, LLVMBuildSelect(b, right, one, zero, "")));
  st_i64(e, i, add(e, iv, LLVMBuildSelect(b, right, zero, one, "")));
  st_i64(e, k, add(e, kv, one));
  while_end(e, &w);
  drain(e, src, dst, i, k, mid);
  drain(e, src, dst, j, k, hi);
}

/* Sorts the current row's positions; returns the i64 array holding them. */
static LLVMValueRef sort_row(srt *x, LLVMValueRef a, LLVMValueRef bb) {
  emitter *e = x->e;
  LLVMBuilderRef b = e->b;
  LLVMValueRef len = llvm_i64(e, x->len);
  loop li;
  LLVMValueRef i = llvm_loop_begin(e, &li, llvm_i64(e, 0), len);
  st_i64(e, at(e, a, i), i);
  llvm_loop_end(e, &li);
  LLVMValueRef src = llvm_alloca(e, p64(e)), dst = llvm_alloca(e, p64(e)),
               wv = llvm_alloca(e, e->t_i64), lov = llvm_alloca(e, e->t_i64);
  LLVMBuildStore(b, a, src);
  LLVMBuildStore(b, bb, dst);
  st_i64(e, wv, llvm_i64(e, 1));
  wloop ww;
  while_begin(e, &ww);
  while_cond(e, &ww, slt(e, ld_i64(e, wv), len));
  LLVMValueRef w = ld_i64(e, wv);
  LLVMValueRef s = LLVMBuildLoad2(b, p64(e), src, ""), d = LLVMBuildLoad2(b, p64(e), dst, "");
  st_i64(e, lov, llvm_i64(e, 0));
  wloop wl;
  while_begin(e, &wl);
  while_cond(e, &wl, slt(e, ld_i64(e, lov), len));
  LLVMValueRef lo = ld_i64(e, lov);
  LLVMValueRef mid = min64(e, add(e, lo, w), len), hi = min64(e, add(e, lo, add(e, w, w)), len);
  merge(x, s, d, lo, mid, hi);
  st_i64(e, lov, add(e, lo, add(e, w, w)));
  while_end(e, &wl);
  LLVMBuildStore(b, d, src);
  LLVMBuildStore(b, s, dst);
  st_i64(e, wv, add(e, w, w));
  while_end(e, &ww);
  return LLVMBuildLoad2(b, p64(e), src, "");
}

/* Copies element src_lin of buffer from into element dst_lin of to, as
 * storage bits. */
static void move(emitter *e, ir_type t, cbuf *from, LLVMValueRef src_lin, cbuf *to,
                 LLVMValueRef dst_lin) {
  LLVMTypeRef st = llvm_stype(e, t), pt = LLVMPointerType(st, 0);
  LLVMValueRef bs = LLVMBuildPointerCast(e->b, llvm_buf_ptr(e, from), pt, "");
  LLVMValueRef bd = LLVMBuildPointerCast(e->b, llvm_buf_ptr(e, to), pt, "");
  LLVMValueRef ps = LLVMBuildInBoundsGEP2(e->b, st, bs, &src_lin, 1, "");
  LLVMValueRef pd = LLVMBuildInBoundsGEP2(e->b, st, bd, &dst_lin, 1, "");
  LLVMBuildStore(e->b, LLVMBuildLoad2(e->b, st, ps, ""), pd);
}

bool llvm_emit_sort(emitter *e, scope *s, ir_id id) {
  const ir_inst *in = llvm_inst(s, id);
  srt x;
  memset(&x, 0, sizeof x);
  x.e = e;
  x.s = s;
  x.in = in;
  bool topk = in->op != IR_OP_SORT;
  int64_t dim, k = 0;
  bool flag;
  const ir_shape *sh = llvm_inst(s, in->ops[0])->shape;
  if (topk ? !ir_topk_attrs_of(in, &k, &flag) : !ir_sort_attrs_of(in, &dim, &flag))
    return llvm_fail(e, ST_INVALID_ARGUMENT, "%s: malformed %s", in->info->name, ir_op_name(in->op));
  if (topk) dim = sh->rank - 1;
  x.n = topk ? 1 : in->nops;
  x.comp = in->ncalls == 1 ? in->calls[0] : IR_NONE;
  x.dir = flag ? IR_CMP_GT : IR_CMP_LT;
  for (int j = 0; j < x.n; j++) {
    x.ops[j] = s->mat[in->ops[j]][0];
    x.types[j] = llvm_inst(s, in->ops[j])->shape->type;
  }
  x.len = sh->dims[dim];
  x.inner = 1;
  for (int d = dim + 1; d < sh->rank; d++) x.inner *= sh->dims[d];
  int64_t rows = x.len ? ir_shape_count(sh) / x.len : 0;
  int nouts = topk ? 2 : x.n;
  ir_shape ps = ir_shape_array(IR_S32, 1, &(int64_t){rows * x.len * 4 + 2}); /* i64 pairs */
  cbuf *perm = llvm_scratch_buf(e, &ps);
  cbuf *kb[132];
  int nk = 0;
  for (int j = 0; j < x.n; j++) if (x.ops[j]->kind != CB_CONST) kb[nk++] = x.ops[j];
  for (int j = 0; j < nouts; j++) kb[nk++] = s->mat[id][j];
  kb[nk++] = perm;
  kfn kf;
  llvm_kernel_begin(e, &kf, kb, nk, arena_printf(e->a, "k%d.%s", e->nkernels, in->info->name));
  loop lr;
  LLVMValueRef r = llvm_loop_begin(e, &lr, kf.lo, kf.hi);
  LLVMValueRef inner = llvm_i64(e, x.inner);
  x.base = add(e, mul(e, LLVMBuildSDiv(e->b, r, inner, ""), llvm_i64(e, x.len * x.inner)),
               LLVMBuildSRem(e->b, r, inner, ""));
  LLVMValueRef pbase = LLVMBuildPointerCast(e->b, llvm_buf_ptr(e, perm), p64(e), "");
  LLVMValueRef a = at(e, pbase, mul(e, r, llvm_i64(e, 2 * x.len)));
  LLVMValueRef bb = at(e, pbase, add(e, mul(e, r, llvm_i64(e, 2 * x.len)), llvm_i64(e, x.len)));
  LLVMValueRef order = sort_row(&x, a, bb);
  loop lj;
  LLVMValueRef j = llvm_loop_begin(e, &lj, llvm_i64(e, 0), llvm_i64(e, topk ? k : x.len));
  LLVMValueRef p = ld_i64(e, at(e, order, j));
  if (topk) {
    LLVMValueRef o = add(e, mul(e, r, llvm_i64(e, k)), j);
    move(e, x.types[0], x.ops[0], lin_of(&x, p), s->mat[id][0], o);
    llvm_store(e, IR_S32, llvm_buf_ptr(e, s->mat[id][1]), o, LLVMBuildTrunc(e->b, p, e->t_i32, ""));
  } else {
    for (int q = 0; q < x.n; q++) move(e, x.types[q], x.ops[q], lin_of(&x, p), s->mat[id][q], lin_of(&x, j));
  }
  llvm_loop_end(e, &lj);
  llvm_loop_end(e, &lr);
  double work = (double)ir_shape_count(sh) * 64;
  llvm_kernel_end(e, &kf, rows, work);
  return e->st == ST_OK;
}
