/* plan.c: what is materialised where, and the entry function.
 *
 * Scratch: every intermediate gets a slice of one caller-provided scratch
 * area; slices of buffers that are never live at the same time overlap
 * (assign_offsets), so the scratch is about the peak live size.
 *
 * Entry computation: parameters are the input buffers, constants are
 * globals, tuple / get-tuple-element / reshape / copy alias their operand's
 * buffers, every other instruction gets a scratch buffer (64-byte aligned)
 * and a kernel. Root leaves computed by a kernel are redirected to the
 * caller's output buffers (no final copy); others are copied at the end.
 *
 * Fused computations (fusion instructions): parameters are bound to the
 * fusion's operands, the root is computed by one loop nest into the
 * fusion's buffers, and each dot and convolution inside is materialised
 * (with its operands) so it runs on the matrix kernels, not elementally. */
#include "backend/llvm/lower.h"

#include "backend/llvm/lk.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Inline generation recurses once per chained instruction (gen.c); longer
 * chains in a fusion are cut by materialising, in reducers refused. */
enum { MAX_INLINE_DEPTH = 2000, FUSION_CUT_DEPTH = 256, CPU_MAX_CALL_DEPTH = 16 };

bool llvm_fail(emitter *e, base_status st, const char *fmt, ...) {
  if (e->st != ST_OK) return false;
  e->st = st;
  va_list ap;
  va_start(ap, fmt);
  if (e->err && e->errlen) vsnprintf(e->err, e->errlen, fmt, ap);
  va_end(ap);
  return false;
}

int llvm_leaf_count(const ir_shape *s) {
  if (s->type != IR_TUPLE) return 1;
  int n = 0;
  for (int i = 0; i < s->ntuple; i++) n += llvm_leaf_count(&s->tuple[i]);
  return n;
}

const ir_shape *llvm_leaf_shape(const ir_shape *s, int leaf) {
  if (s->type != IR_TUPLE) return s;
  for (int i = 0; i < s->ntuple; i++) {
    int n = llvm_leaf_count(&s->tuple[i]);
    if (leaf < n) return llvm_leaf_shape(&s->tuple[i], leaf);
    leaf -= n;
  }
  base_die("leaf out of range");
}

int llvm_leaf_offset(const ir_shape *s, int k) {
  int n = 0;
  for (int i = 0; i < k && i < s->ntuple; i++) n += llvm_leaf_count(&s->tuple[i]);
  return n;
}

cbuf *llvm_new_buf(emitter *e, cbuf_kind k, ir_type t, int64_t count) {
  cbuf *b = arena_alloc(e->a, sizeof *b);
  b->kind = k;
  b->type = t;
  b->count = count;
  b->id = e->bufs.n;
  b->first_use = b->last_use = -1;
  VEC_PUSH(e->a, e->bufs, b);
  return b;
}

cbuf *llvm_scratch_buf(emitter *e, const ir_shape *leaf) {
  cbuf *b = llvm_new_buf(e, CB_SCRATCH, leaf->type, ir_shape_count(leaf));
  b->index = -1; /* assigned by assign_offsets */
  return b;
}

LLVMValueRef llvm_scratch_off(emitter *e, cbuf *b) {
  BASE_ASSERT(b->kind == CB_SCRATCH);
  /* a kernel's use is its number; a use by the entry function itself
   * (copies, a loop's or branch's test) comes before the next kernel */
  int32_t k = e->nkernels;
  if (b->first_use < 0 || k < b->first_use) b->first_use = k;
  if (k > b->last_use) b->last_use = k;
  if (!b->off_global) {
    b->off_global = LLVMAddGlobal(e->mod, e->t_i64, "scratch.off");
    LLVMSetInitializer(b->off_global, llvm_i64(e, 0));
    LLVMSetGlobalConstant(b->off_global, 1);
    LLVMSetLinkage(b->off_global, LLVMPrivateLinkage);
  }
  return LLVMBuildLoad2(e->b, e->t_i64, b->off_global, "");
}

static int by_size_desc(const void *x, const void *y) {
  const cbuf *a = *(cbuf *const *)x, *b = *(cbuf *const *)y;
  int64_t sa = a->count * ir_type_size(a->type), sb = b->count * ir_type_size(b->type);
  if (sa != sb) return sa > sb ? -1 : 1;
  return a->id - b->id;
}

/* Scratch buffers whose lifetimes (first to last kernel touching them) do
 * not overlap share memory: largest first, each at the lowest 64-byte
 * aligned offset clear of every placed buffer that is live at the same
 * time. Kernels run one after another (parfor returns when all ranges are
 * done), so that is the whole condition. */
static void assign_offsets(emitter *e) {
  int n = 0;
  cbuf **v = arena_array(e->a, (size_t)e->bufs.n + 1, sizeof(cbuf *));
  for (int i = 0; i < e->bufs.n; i++) {
    cbuf *b = e->bufs.v[i];
    if (b->kind == CB_SCRATCH && b->off_global) v[n++] = b;
  }
  qsort(v, (size_t)n, sizeof *v, by_size_desc);
  int64_t top = 0;
  for (int i = 0; i < n; i++) {
    cbuf *b = v[i];
    int64_t size = (b->count * ir_type_size(b->type) + 63) & ~(int64_t)63, off = 0;
    for (bool moved = true; moved;) {
      moved = false;
      for (int j = 0; j < i; j++) {
        cbuf *c = v[j];
        int64_t cs = (c->count * ir_type_size(c->type) + 63) & ~(int64_t)63;
        bool live = b->first_use <= c->last_use && c->first_use <= b->last_use;
        if (live && off < c->index + cs && c->index < off + size) {
          off = c->index + cs;
          moved = true;
        }
      }
    }
    b->index = off;
    LLVMSetInitializer(b->off_global, llvm_i64(e, off));
    if (off + size > top) top = off + size;
  }
  e->scratch_bytes = top;
}

cbuf *llvm_const_buf(emitter *e, const ir_literal *l) {
  for (int i = 0; i < e->bufs.n; i++) {
    cbuf *b = e->bufs.v[i];
    if (b->kind == CB_CONST && b->index == (int64_t)(intptr_t)l) return b;
  }
  cbuf *b = llvm_new_buf(e, CB_CONST, l->shape.type, ir_shape_count(&l->shape));
  b->index = (int64_t)(intptr_t)l;
  LLVMValueRef init = LLVMConstStringInContext(e->ctx, (const char *)l->data, (unsigned)l->nbytes, 1);
  b->global = LLVMAddGlobal(e->mod, LLVMTypeOf(init), "const");
  LLVMSetInitializer(b->global, init);
  LLVMSetGlobalConstant(b->global, 1);
  LLVMSetLinkage(b->global, LLVMPrivateLinkage);
  LLVMSetAlignment(b->global, 64);
  return b;
}

const ir_inst *llvm_inst(const scope *s, ir_id id) { return &s->c->insts.v[id]; }

scope *llvm_scope_new(emitter *e, ir_comp_id c, scope *parent) {
  scope *s = arena_alloc(e->a, sizeof *s);
  s->comp = c;
  s->c = &e->m->comps.v[c];
  s->parent = parent;
  size_t n = (size_t)s->c->insts.n + 1;
  s->mat = arena_array(e->a, n, sizeof(cbuf **));
  s->sub = arena_array(e->a, n, sizeof(scope *));
  s->visit = arena_array(e->a, n, sizeof(uint32_t));
  return s;
}

cbuf **llvm_scratch_leaves(emitter *e, const ir_shape *sh) {
  int n = llvm_leaf_count(sh);
  cbuf **l = arena_array(e->a, (size_t)n + 1, sizeof(cbuf *));
  for (int i = 0; i < n; i++) l[i] = llvm_scratch_buf(e, llvm_leaf_shape(sh, i));
  return l;
}

/* Operands before users, from the root (dead code is never visited). */
static ir_id *post_order(emitter *e, const ir_comp *c, int *out_n) {
  int n = c->insts.n;
  ir_id *order = arena_array(e->a, (size_t)n + 1, sizeof(ir_id));
  ir_id *stack = arena_array(e->a, (size_t)n + 1, sizeof(ir_id));
  int32_t *next = arena_array(e->a, (size_t)n + 1, sizeof(int32_t));
  uint8_t *state = arena_alloc(e->a, (size_t)n + 1);
  int no = 0, sp = 0;
  if (c->root < 0 || c->root >= n) {
    *out_n = 0;
    return order;
  }
  stack[sp++] = c->root;
  state[c->root] = 1;
  while (sp) {
    ir_id x = stack[sp - 1];
    const ir_inst *in = &c->insts.v[x];
    if (next[x] < in->nops) {
      ir_id o = in->ops[next[x]++];
      if (o >= 0 && o < n && !state[o]) {
        state[o] = 1;
        stack[sp++] = o;
      }
      continue;
    }
    state[x] = 2;
    order[no++] = x;
    sp--;
  }
  *out_n = no;
  return order;
}

/* ---- checks ------------------------------------------------------------- */

/* The longest operand chain below the root (instructions on the path). */
static int chain_depth(emitter *e, const ir_comp *c) {
  int n;
  ir_id *order = post_order(e, c, &n);
  int32_t *d = arena_array(e->a, (size_t)c->insts.n + 1, sizeof(int32_t));
  int best = 0;
  for (int i = 0; i < n; i++) {
    const ir_inst *in = &c->insts.v[order[i]];
    int x = 0;
    for (int k = 0; k < in->nops; k++)
      if (in->ops[k] >= 0 && in->ops[k] < c->insts.n && d[in->ops[k]] > x) x = d[in->ops[k]];
    d[order[i]] = x + 1;
    if (x + 1 > best) best = x + 1;
  }
  return best;
}

/* depth: call nesting (0 = entry). kernels: each instruction of cid is its
 * own kernel (the entry, the computations of call, while and conditional).
 * Computations generated inline (reducers, map's to_apply, nested fusions)
 * recurse once per chained instruction in gen.c, so their chains are
 * bounded; fused ones (called by a fusion from a kernels computation)
 * materialise long chains instead (emit_fusion). */
static bool check_comp(emitter *e, ir_comp_id cid, int depth, bool kernels, bool fused) {
  const ir_comp *c = &e->m->comps.v[cid];
  if (depth > CPU_MAX_CALL_DEPTH) /* the budget reports it first, located */
    return llvm_fail(e, ST_UNSUPPORTED, "%s: calls nest too deeply", c->name);
  if (c->root < 0 || c->root >= c->insts.n) return llvm_fail(e, ST_INVALID_ARGUMENT, "%s: no root", c->name);
  if (depth >= 1 && !kernels && !fused && chain_depth(e, c) > MAX_INLINE_DEPTH)
    return llvm_fail(e, ST_UNSUPPORTED, "%s: a called computation with a chain of more than %d instructions",
                     c->name, MAX_INLINE_DEPTH);
  for (int i = 0; i < c->insts.n; i++) {
    const ir_inst *in = &c->insts.v[i];
    if (in->dead) continue;
    int64_t cnt;
    int nl = llvm_leaf_count(in->shape);
    for (int l = 0; l < nl; l++) {
      const ir_shape *ls = llvm_leaf_shape(in->shape, l);
      if (!ir_shape_elements(ls, &cnt) || ls->type >= IR_TUPLE)
        return llvm_fail(e, ST_UNSUPPORTED, "%s: unsupported shape",
                         in->info->name);
    }
    if (in->op == IR_OP_CONSTANT && in->a->literal && in->a->literal->nbytes > ((size_t)1 << 31))
      return llvm_fail(e, ST_UNSUPPORTED, "%s: constants above 2 GiB are not supported",
                       in->info->name);
    if ((in->op == IR_OP_REDUCE || in->op == IR_OP_REDUCE_WINDOW) && in->nops / 2 > IR_MAX_RANK * 2)
      return llvm_fail(e, ST_UNSUPPORTED, "%s: too many reduce operands",
                       in->info->name);
    if (depth >= 1 && (in->op == IR_OP_SCATTER || in->op == IR_OP_SELECT_AND_SCATTER))
      return llvm_fail(e, ST_UNSUPPORTED, "%s:%d:%d: the cpu target runs '%s' only in the entry computation",
                       in->info->loc.file ? in->info->loc.file : "?", (int)in->info->loc.line,
                       (int)in->info->loc.col, ir_op_name(in->op));
    if (in->op == IR_OP_ALL_REDUCE && e->m->comps.n && in->nops > 1 && in->shape->type != IR_TUPLE)
      return llvm_fail(e, ST_UNSUPPORTED, "%s: all-reduce form",
                       in->info->name);
    if (depth >= 1 && (in->op == IR_OP_SORT || in->op == IR_OP_TOPK || ir_is_topk_custom_call(in)))
      return llvm_fail(e, ST_UNSUPPORTED, "%s: %s inside a called computation", in->info->name,
                       ir_op_name(in->op));
    if ((llvm_coll_call(e, in->op) || llvm_coll_alias(e, in->op)) && (fused || !kernels))
      return llvm_fail(e, ST_UNSUPPORTED, "%s:%d:%d: the cpu target runs '%s' only outside fusions and "
                       "per-element computations", in->info->loc.file ? in->info->loc.file : "?",
                       (int)in->info->loc.line, (int)in->info->loc.col, ir_op_name(in->op));
    bool control = llvm_is_control(in->op);
    if (control && !kernels)
      return llvm_fail(e, ST_UNSUPPORTED,
                       "%s: %s inside a computation generated per element is not supported",
                       in->info->name, ir_op_name(in->op));
    if (!llvm_small_supported(e, c, in)) return false;
    for (int k = 0; k < in->ncalls; k++)
      if (!check_comp(e, in->calls[k], depth + 1, control, kernels && in->op == IR_OP_FUSION))
        return false;
  }
  return true;
}

/* ---- fusions ------------------------------------------------------------ */

/* The buffer of an f32 operand of an epilogue: a parameter of the fusion
 * (bound to the fusion's operand) or a constant; else NULL. */
static cbuf *epi_operand(emitter *e, scope *ns, ir_id y) {
  const ir_inst *yi = llvm_inst(ns, y);
  if (yi->shape->type != IR_F32) return NULL;
  if (yi->op == IR_OP_PARAMETER && ns->mat[y]) return ns->mat[y][0];
  if (yi->op == IR_OP_CONSTANT && yi->a->literal) return llvm_const_buf(e,
                                                                        yi->a->literal);
  return NULL;
}

/* A dense or convolution layer's tail: the fusion's root is a chain of f32
 * add, subtract, multiply, divide, maximum or minimum over one dot or
 * convolution, each link used once, whose other operand is a broadcast of
 * an f32 scalar or of an f32 vector along the last dim (bias, relu's zero,
 * a scale). Fills epi (first op nearest the dot) and returns the dot or
 * convolution, or -1. Only under NATIVE numerics, where the GEMM and the
 * direct convolution apply it in registers (llvm_emit_dot_epi,
 * llvm_emit_conv_epi). */
static ir_id epilogue_dot(emitter *e, scope *ns, gemm_epi *epi) {
  const ir_comp *c = ns->c;
  epi->n = 0;
  if (e->opt.numerics != CPU_NUMERICS_NATIVE) return -1;
  int32_t *uses = arena_array(e->a, (size_t)c->insts.n + 1, sizeof(int32_t));
  for (int i = 0; i < c->insts.n; i++)
    if (!c->insts.v[i].dead)
      for (int k = 0; k < c->insts.v[i].nops; k++)
        if (c->insts.v[i].ops[k] >= 0 && c->insts.v[i].ops[k] < c->insts.n) uses[c->insts.v[i].ops[k]]++;
  gemm_epi_op rev[GEMM_EPI_MAX];
  int n = 0;
  ir_id x = c->root;
  for (;;) {
    const ir_inst *xi = llvm_inst(ns, x);
    if (x != c->root && uses[x] != 1) return -1;
    if (xi->op == IR_OP_DOT || xi->op == IR_OP_CONVOLUTION) break;
    bool ew = xi->op == IR_OP_ADD || xi->op == IR_OP_SUBTRACT || xi->op == IR_OP_MULTIPLY ||
              xi->op == IR_OP_DIVIDE || xi->op == IR_OP_MAXIMUM || xi->op == IR_OP_MINIMUM;
    if (!ew || xi->nops != 2 || xi->shape->type != IR_F32 || xi->shape->rank < 1 || n == GEMM_EPI_MAX) return -1;
    gemm_epi_op op = {.op = xi->op};
    int other = -1;
    for (int k = 0; k < 2 && other < 0; k++) {
      const ir_inst *bi = llvm_inst(ns, xi->ops[k]);
      if (bi->op != IR_OP_BROADCAST || bi->nops != 1) continue;
      const ir_inst *yi = llvm_inst(ns, bi->ops[0]);
      bool scalar = yi->shape->rank == 0;
      bool col = yi->shape->rank == 1 && bi->a->dimensions.n == 1 && bi->a->dimensions.v[0] == xi->shape->rank - 1;
      cbuf *buf = scalar || col ? epi_operand(e, ns, bi->ops[0]) : NULL;
      if (!buf) continue;
      op.x = buf, op.col = col, op.swap = k == 0;
      other = k;
    }
    if (other < 0) return -1;
    rev[n++] = op;
    x = xi->ops[1 - other];
  }
  if (n == 0 || llvm_inst(ns, x)->shape->type != IR_F32) return -1;
  for (int i = 0; i < n; i++) epi->ops[i] = rev[n - 1 - i];
  epi->n = n;
  return x;
}

static bool emit_fusion(emitter *e, scope *s, ir_id id) {
  const ir_inst *in = llvm_inst(s, id);
  scope *ns = llvm_scope_new(e, in->calls[0], s);
  s->sub[id] = ns;
  ns->param_src = in->ops;
  const ir_comp *c = ns->c;
  for (int p = 0; p < c->nparams; p++) {
    ir_id pid = c->params[p];
    if (pid >= 0 && p < in->nops) ns->mat[pid] = s->mat[in->ops[p]];
  }
  gemm_epi epi;
  ir_id epi_dot = epilogue_dot(e, ns, &epi);
  int n;
  ir_id *order = post_order(e, c, &n);
  int32_t *depth = arena_array(e->a, (size_t)c->insts.n + 1, sizeof(int32_t));
  for (int i = 0; i < n; i++) {
    ir_id x = order[i];
    const ir_inst *xi = &c->insts.v[x];
    int dx = 0;
    for (int k = 0; k < xi->nops; k++)
      if (depth[xi->ops[k]] > dx) dx = depth[xi->ops[k]];
    depth[x] = ns->mat[x] ? 0 : dx + 1;
    if (depth[x] > FUSION_CUT_DEPTH && x != c->root && xi->op != IR_OP_PARAMETER) {
      /* A long inline chain: materialise here so generation stays shallow. */
      cbuf **l = llvm_scratch_leaves(e, xi->shape);
      if (!llvm_emit_kernel_to(e, ns, x, l)) return false;
      ns->mat[x] = l;
      depth[x] = 0;
    }
    if ((xi->op != IR_OP_DOT && xi->op != IR_OP_CONVOLUTION) || ns->mat[x]) continue;
    for (int k = 0; k < 2; k++) {
      ir_id o = xi->ops[k];
      if (ns->mat[o]) continue;
      cbuf **l = llvm_scratch_leaves(e, c->insts.v[o].shape);
      if (!llvm_emit_kernel_to(e, ns, o, l)) return false;
      ns->mat[o] = l;
    }
    if (x == epi_dot) {
      /* The dot (convolution) computes the root: its tiles leave the
       * kernel through the epilogue straight into the fusion's output. */
      ns->mat[x] = s->mat[id];
      if (xi->op == IR_OP_DOT ? llvm_emit_dot_epi(e, ns, x, &epi) : llvm_emit_conv_epi(e, ns, x, &epi)) {
        ns->mat[c->root] = s->mat[id];
        depth[x] = 0;
        continue;
      }
      if (e->st != ST_OK) return false;
    }
    ns->mat[x] = x == c->root ? s->mat[id] : llvm_scratch_leaves(e, xi->shape);
    if (!(xi->op == IR_OP_DOT ? llvm_emit_dot(e, ns, x) : llvm_emit_conv(e, ns, x))) return false;
    depth[x] = 0;
  }
  if (ns->mat[c->root] == s->mat[id]) return true;
  return llvm_emit_kernel_to(e, ns, c->root, s->mat[id]);
}

/* ---- the entry ------------------------------------------------------------ */

static void entry_begin(emitter *e) {
  const char *name = e->opt.entry_name ? e->opt.entry_name : "tpucc_entry";
  /* AOT: the five arguments of the documented entry; JIT: and the replica */
  LLVMTypeRef ps[6] = {e->t_ptr, e->t_ptr, e->t_ptr, LLVMPointerType(e->t_parfor, 0), e->t_ptr, e->t_ptr};
  e->entry = LLVMAddFunction(e->mod, name, LLVMFunctionType(e->t_void, ps, e->aot ? 5 : 6, 0));
  e->fn = e->entry;
  e->alloca_bb = LLVMAppendBasicBlockInContext(e->ctx, e->entry, "allocas");
  LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(e->ctx, e->entry, "start");
  LLVMPositionBuilderAtEnd(e->b, start);
  LLVMTypeRef envt = LLVMArrayType(e->t_ptr, 3);
  LLVMValueRef env = llvm_alloca(e, envt);
  for (int i = 0; i < 3; i++) {
    LLVMValueRef idxs[2] = {llvm_i64(e, 0), llvm_i64(e, i)};
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(e->b, envt, env, idxs, 2, "");
    LLVMBuildStore(e->b, LLVMBuildPointerCast(e->b, LLVMGetParam(e->entry, (unsigned)i), e->t_ptr, ""), slot);
  }
  e->entry_env = LLVMBuildPointerCast(e->b, env, e->t_ptr, "env");
  e->entry_parfor = LLVMGetParam(e->entry, 3);
  e->entry_parctx = LLVMGetParam(e->entry, 4);
  e->entry_rep = e->aot ? LLVMConstNull(e->t_ptr) : LLVMGetParam(e->entry, 5);
  e->entry_bb_cur = start;
}

LLVMValueRef llvm_entry_buf(emitter *e, const cbuf *cb) {
  LLVMBuilderRef b = e->b;
  if (cb->kind == CB_CONST) return LLVMBuildPointerCast(b, cb->global, e->t_ptr, "");
  if (cb->kind == CB_SCRATCH) {
    LLVMValueRef off = llvm_scratch_off(e, (cbuf *)cb);
    return LLVMBuildInBoundsGEP2(b, e->t_i8, LLVMGetParam(e->entry, 2), &off, 1, "");
  }
  LLVMValueRef arr = LLVMBuildPointerCast(b, LLVMGetParam(e->entry, cb->kind == CB_INPUT ? 0 : 1),
                                          LLVMPointerType(e->t_ptr, 0), "");
  LLVMValueRef iv = llvm_i64(e, cb->index);
  return LLVMBuildLoad2(b, e->t_ptr, LLVMBuildInBoundsGEP2(b, e->t_ptr, arr, &iv, 1, ""), "");
}

static bool is_alias(const emitter *e, const scope *s, const ir_inst *in) {
  switch (in->op) {
  case IR_OP_PARAMETER: case IR_OP_CONSTANT: case IR_OP_TUPLE: case IR_OP_GET_TUPLE_ELEMENT:
    return true;
  case IR_OP_RESHAPE: case IR_OP_COPY: case IR_OP_BITCAST:
    return in->shape->type == llvm_inst(s, in->ops[0])->shape->type;
  case IR_OP_ALL_REDUCE: case IR_OP_ALL_REDUCE_START:
    return e->opt.replicas <= 1; /* one replica: the identity */
  case IR_OP_CUSTOM_CALL: return ir_custom_call_kind(in, NULL) == IR_CC_IDENTITY;
  case IR_OP_OPT_BARRIER: case IR_OP_DOMAIN: case IR_OP_ADD_DEPENDENCY: case IR_OP_ASYNC_UPDATE:
  case IR_OP_COPY_START: case IR_OP_COPY_DONE: case IR_OP_AFTER_ALL:
    return true;
  default: return false;
  }
}

static void plan_alias(emitter *e, scope *s, ir_id id) {
  const ir_inst *in = llvm_inst(s, id);
  int nl = llvm_leaf_count(in->shape);
  cbuf **l = arena_array(e->a, (size_t)nl + 1, sizeof(cbuf *));
  switch (in->op) {
  case IR_OP_PARAMETER: {
    int base = 0;
    for (int p = 0; p < in->a->parameter_number; p++)
      if (s->c->params[p] >= 0) base += llvm_leaf_count(llvm_inst(s, s->c->params[p])->shape);
    for (int j = 0; j < nl; j++) {
      const ir_shape *ls = llvm_leaf_shape(in->shape, j);
      l[j] = llvm_new_buf(e, CB_INPUT, ls->type, ir_shape_count(ls));
      l[j]->index = base + j;
    }
    break;
  }
  case IR_OP_CONSTANT:
    for (int j = 0; j < nl; j++) l[j] = llvm_const_buf(e,
                                                       llvm_literal_leaf(in->a->literal, j));
    break;
  case IR_OP_TUPLE: {
    int o = 0;
    for (int k = 0; k < in->nops; k++) {
      int n = llvm_leaf_count(llvm_inst(s, in->ops[k])->shape);
      for (int j = 0; j < n; j++) l[o++] = s->mat[in->ops[k]][j];
    }
    break;
  }
  case IR_OP_GET_TUPLE_ELEMENT: {
    int off = llvm_leaf_offset(llvm_inst(s, in->ops[0])->shape,
                               (int) in->a->index);
    for (int j = 0; j < nl; j++) l[j] = s->mat[in->ops[0]][off + j];
    break;
  }
  case IR_OP_ALL_REDUCE: case IR_OP_ALL_REDUCE_START:
    if (in->nops == 1) {
      for (int j = 0; j < nl; j++) l[j] = s->mat[in->ops[0]][j];
    } else {
      for (int j = 0; j < nl; j++) l[j] = s->mat[in->ops[j]][0];
    }
    break;
  case IR_OP_OPT_BARRIER: case IR_OP_DOMAIN: case IR_OP_ADD_DEPENDENCY: case IR_OP_ASYNC_UPDATE:
  case IR_OP_COPY_DONE: /* element 0 of the start tuple leads it */
    for (int j = 0; j < nl; j++) l[j] = s->mat[in->ops[0]][j];
    break;
  case IR_OP_COPY_START: { /* (x, x, zero context...) */
    int n = llvm_leaf_count(llvm_inst(s, in->ops[0])->shape);
    for (int j = 0; j < nl; j++) {
      const ir_shape *ls = llvm_leaf_shape(in->shape, j);
      l[j] = j < 2 * n ? s->mat[in->ops[0]][j % n] : llvm_const_buf(e, ir_literal_create(e->a, ls));
    }
    break;
  }
  case IR_OP_AFTER_ALL: /* a token: no bytes */
    l[0] = llvm_new_buf(e, CB_SCRATCH, IR_TOKEN, 1);
    break;
  default: /* reshape, copy, bitcast */
    l[0] = s->mat[in->ops[0]][0];
    break;
  }
  s->mat[id] = l;
}

/* Plans a buffer for every instruction of s reachable from its root (its
 * parameters bound beforehand), in post order; returns that order. */
static ir_id *plan_comp(emitter *e, scope *s, int *n) {
  ir_id *order = post_order(e, s->c, n);
  for (int i = 0; i < *n; i++) {
    ir_id id = order[i];
    const ir_inst *in = llvm_inst(s, id);
    if (s->mat[id]) continue;
    if (is_alias(e, s, in)) plan_alias(e, s, id);
    else if (!llvm_coll_plan(e, s, id)) s->mat[id] = llvm_scratch_leaves(e, in->shape);
  }
  return order;
}

/* The kernels (and control flow) of a planned computation, in order, at
 * the entry function's current block. */
static bool emit_comp(emitter *e, scope *s, const ir_id *order, int n) {
  for (int i = 0; i < n && e->st == ST_OK; i++) {
    ir_id id = order[i];
    const ir_inst *in = llvm_inst(s, id);
    if (is_alias(e, s, in) || llvm_coll_alias(e, in->op)) continue;
    if (in->op == IR_OP_FUSION) emit_fusion(e, s, id);
    else if (in->op == IR_OP_DOT) llvm_emit_dot(e, s, id);
    else if (in->op == IR_OP_CONVOLUTION) llvm_emit_conv(e, s, id);
    else if (llvm_is_control(in->op)) llvm_emit_control(e, s, id);
    else if (in->op == IR_OP_SORT || in->op == IR_OP_TOPK || ir_is_topk_custom_call(in))
      llvm_emit_sort(e, s, id);
    else if (in->op == IR_OP_CUSTOM_CALL) llvm_emit_custom_call(e, s, id);
    else if (llvm_coll_call(e, in->op)) llvm_emit_collective(e, s, id);
    else if (in->op == IR_OP_SCATTER) llvm_emit_scatter(e, s, id);
    else if (in->op == IR_OP_SELECT_AND_SCATTER) llvm_emit_select_and_scatter(e, s, id);
    else llvm_emit_kernel(e, s, id);
  }
  return e->st == ST_OK;
}

bool llvm_lower_called(emitter *e, scope *s) {
  int n;
  ir_id *order = plan_comp(e, s, &n);
  return emit_comp(e, s, order, n);
}

bool llvm_lower_entry(emitter *e) {
  const ir_module *m = e->m;
  if (m->entry < 0 || m->entry >= m->comps.n)
    return llvm_fail(e, ST_INVALID_ARGUMENT, "module has no entry computation");
  if (!check_comp(e, m->entry, 0, true, false)) return false;
  scope *s = llvm_scope_new(e, m->entry, NULL);
  e->entry_scope = s;
  const ir_comp *c = s->c;
  for (int p = 0; p < c->nparams; p++) {
    if (c->params[p] < 0) return llvm_fail(e, ST_INVALID_ARGUMENT, "parameter %d missing", p);
    e->ninputs += llvm_leaf_count(c->insts.v[c->params[p]].shape);
  }
  entry_begin(e);
  /* Parameters first, so input numbering does not depend on use order. */
  for (int p = 0; p < c->nparams; p++) plan_alias(e, s, c->params[p]);
  int n;
  ir_id *order = plan_comp(e, s, &n);
  /* Redirect root leaves to the outputs where a kernel writes them. */
  const ir_shape *rs = c->insts.v[c->root].shape;
  int nout = llvm_leaf_count(rs);
  e->noutputs = nout;
  cbuf **root = s->mat[c->root];
  bool *copy = arena_array(e->a, (size_t)nout + 1, sizeof(bool));
  for (int k = 0; k < nout; k++) {
    cbuf *b = root[k];
    if (b->kind == CB_SCRATCH) {
      b->kind = CB_OUTPUT;
      b->index = k;
    } else {
      copy[k] = true;
    }
  }
  if (!emit_comp(e, s, order, n)) return false;
  /* Copies into outputs the kernels did not write. */
  LLVMPositionBuilderAtEnd(e->b, e->entry_bb_cur);
  for (int k = 0; k < nout; k++) {
    if (!copy[k]) continue;
    const ir_shape *ls = llvm_leaf_shape(rs, k);
    int64_t bytes = ir_shape_count(ls) * ir_type_size(ls->type);
    if (bytes == 0) continue;
    cbuf ob = {.kind = CB_OUTPUT, .index = k, .type = ls->type};
    LLVMBuildMemCpy(e->b, llvm_entry_buf(e, &ob), 1, llvm_entry_buf(e, root[k]), 1, llvm_i64(e, bytes));
  }
  LLVMBuildRetVoid(e->b);
  LLVMPositionBuilderAtEnd(e->b, e->alloca_bb);
  LLVMBuildBr(e->b, LLVMGetNextBasicBlock(e->alloca_bb));
  assign_offsets(e);
  return true;
}

/* ---- module --------------------------------------------------------------- */

bool llvm_lower_module(emitter *e, const ir_module *m, const cpu_options *o,
                       bool aot, LLVMContextRef ctx, LLVMTargetMachineRef tm,
                       char *err, size_t errlen) {
  memset(e, 0, sizeof *e);
  e->m = m;
  e->opt = *o;
  e->aot = aot;
  e->lk = aot || (o->lib_kernels && !strcmp(o->lib_kernels, "off")) ? NULL : cpu_lk_find(o->lib_kernels);
  e->a = arena_create();
  e->ctx = ctx;
  e->tm = tm;
  e->err = err;
  e->errlen = errlen;
  e->mod = LLVMModuleCreateWithNameInContext(m->name ? m->name : "tpucc", ctx);
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(e->mod, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(e->mod, td);
  LLVMDisposeTargetData(td);
  e->b = LLVMCreateBuilderInContext(ctx);
  e->t_void = LLVMVoidTypeInContext(ctx);
  e->t_i1 = LLVMInt1TypeInContext(ctx);
  e->t_i8 = LLVMInt8TypeInContext(ctx);
  e->t_i16 = LLVMInt16TypeInContext(ctx);
  e->t_i32 = LLVMInt32TypeInContext(ctx);
  e->t_i64 = LLVMInt64TypeInContext(ctx);
  e->t_f32 = LLVMFloatTypeInContext(ctx);
  e->t_f16 = LLVMHalfTypeInContext(ctx);
  e->t_f64 = LLVMDoubleTypeInContext(ctx);
  e->t_ptr = LLVMPointerType(e->t_i8, 0);
  LLVMTypeRef kp[3] = {e->t_ptr, e->t_i64, e->t_i64};
  e->t_kernel = LLVMFunctionType(e->t_void, kp, 3, 0);
  LLVMTypeRef pp[4] = {e->t_ptr, LLVMPointerType(e->t_kernel, 0), e->t_ptr, e->t_i64};
  e->t_parfor = LLVMFunctionType(e->t_void, pp, 4, 0);
  if (ir_check_runnable_replicas(m, "cpu", o->ffi, o->replicas > 1 ? o->replicas : 1, NULL, err, errlen)) {
    e->st = ST_UNSUPPORTED;
    return false;
  }
  /* The cpu inlines called computations into one function each, recursing
   * per nesting level: its nesting limit is CPU_MAX_CALL_DEPTH, reported by
   * the budget at the calling instruction. */
  ir_budget bud = o->budget;
  if (bud.max_depth <= 0 || bud.max_depth > CPU_MAX_CALL_DEPTH) bud.max_depth = CPU_MAX_CALL_DEPTH;
  if ((e->st = ir_budget_check(m, &bud, NULL, err, errlen)) != ST_OK) return false;
  return llvm_lower_entry(e);
}

void llvm_emitter_free(emitter *e) {
  if (e->b) LLVMDisposeBuilder(e->b);
  e->b = NULL;
  arena_destroy(e->a);
  e->a = NULL;
}
