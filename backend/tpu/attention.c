/* attention.c: fused attention, one kernel for the kCustom fusion that
 * passes/fusion.c makes of
 *
 *   T = dot(Q, K) [* c];  m = reduce(T, init_m, last dim, r_m);
 *   E = exp(T - broadcast(m));  z = reduce(E, init_z, last dim, r_z);
 *   O = dot(E / broadcast(z), V)   [-> transposes/reshapes]
 *
 * with Q [batch.., Sq, D], K [batch.., Sk, D], V [batch.., Sk, Dv] strided
 * views of the fusion's parameters: split-heads reshapes and transposes
 * (and batch dims anywhere, as in HLO from JAX) are folded into the DMA
 * addressing, and so are the result's (merge heads writes each head's
 * columns straight into [B, S, H*Dv]). Nothing of size Sq x Sk goes
 * through HBM. Per group of 8 slots of 128 queries (one or more MXU
 * panels of mxu_cols queries, of any batch entries), in VMEM:
 *   1. S^T = K Q^T on the MXUs: Q's tile is the stationary operand, loaded
 *      transposed (`mwtt`, no transpose of Q or K anywhere), and the Sk
 *      key rows stream through the array, so the long dimension is the
 *      streamed one. mpopm writes key row k of slot s at ST + k*4096 +
 *      s*512: one 8x128 vector tile per key holds that key's score for the
 *      group's 1024 queries, so a row reduction is a fold across tiles.
 *   2. softmax on the vector unit with the unfused lowering's element
 *      kernels (tk_eval_dag on one-op programs, the reducers' programs)
 *      and its orders, so every value has the same bits: T = S * c; m
 *      folded from init_m (a maximum is order-free; with c finite and
 *      positive m = max(S) * c, as x -> x * c is monotone); E = exp(T - m)
 *      stored in place; z an f32 add in the row order of docs/numerics.md
 *      (lane-major: keys l, l+128, ... into partials, then the partials in
 *      ascending l, then init + that), other reducers in ascending keys;
 *      P^T = E / z rounded to bf16 (RNE, what the MXU operand conversion
 *      does) into [keys][8 slots][128].
 *   3. O^T = V^T P^T on the MXUs: P^T tiles are the weights as they lie,
 *      V^T (each batch entry's V through the transpose unit, vtpush/vtpop)
 *      the streamed rows; the products and their ascending-key f32
 *      accumulation in K tiles of mxu_rows (zero padding) are the unfused
 *      P.V's.
 *   4. O^T back through the transpose unit; one strided DMA per panel.
 * Groups are software-pipelined (lower_attention: loads two groups ahead,
 * operands and S^T one ahead, O^T one behind) and the MXU instructions are
 * spread over the softmax's key loop (drip), so the in-order front end
 * keeps the vector unit fed. Needs mxu_cols a multiple of 128 (at most
 * 1024) and the group buffers (two sets of Sk x 6 KiB of scores and P^T,
 * staging and O^T, three of MXU tiles) in 7/8 of VMEM, fewer panels per
 * group when they do not fit; otherwise lower_attention returns false and
 * the fused computation is lowered instruction by instruction. */
#include "backend/tpu/lower.h"

#include <string.h>

enum { SLOTS = 8, LANES = TGT_LANES }; /* slots of LANES queries in a group */

typedef struct aview { /* element (batch b.., row, col) at base + sum b_k*bst[k] + row*rs + col */
  const tval *v;
  int es; /* bytes per element in HBM: 4 (f32) or 2 (bf16) */
  int64_t bst[IR_MAX_RANK], rs;
} aview;

typedef struct attn {
  int nb;
  int64_t bd[IR_MAX_RANK]; /* batch dims */
  int64_t G, Sq, Sk, D, Dv;
  aview q, k, vv, o;
  const ir_literal *scale; /* NULL: no multiply */
  bool scale_first;        /* the constant is the multiply's first operand */
  const ir_literal *init_m, *init_z;
  ir_comp_id red_m, red_z;
  const char *why; /* the condition the pattern failed (match) */
} attn;

/* Records why the pattern is not the kernel's; false. */
static bool refuse(attn *a, const char *why) {
  a->why = why;
  return false;
}

static const ir_inst *ci(const ir_comp *c, ir_id i) { return &c->insts.v[i]; }

static const ir_literal *scalar_lit(const ir_comp *c, ir_id i) {
  const ir_inst *in = ci(c, i);
  if (in->op == IR_OP_BROADCAST) in = ci(c, in->ops[0]);
  if (in->op == IR_OP_CONSTANT && in->shape->rank == 0 && in->shape->type == IR_F32)
    return in->a->literal;
  return NULL;
}

static void row_major(int rank, const int64_t *dims, int64_t *st) {
  int64_t s = 1;
  for (int k = rank - 1; k >= 0; k--) {
    st[k] = s;
    s *= dims[k];
  }
}

static bool is_row_major(int rank, const int64_t *dims, const int64_t *st) {
  int64_t rm[IR_MAX_RANK];
  row_major(rank, dims, rm);
  for (int k = 0; k < rank; k++)
    if (dims[k] > 1 && st[k] != rm[k]) return false;
  return true;
}

/* Strides of value i (a parameter seen through reshapes and transposes)
 * over the parameter's buffer; the parameter number in *pn. */
static bool view_strides(const ir_comp *c, ir_id i, int64_t *st, int64_t *pn, int depth) {
  const ir_inst *in = ci(c, i);
  if (depth > 8 || !ir_shape_is_array(in->shape)) return false;
  if (in->op == IR_OP_PARAMETER) {
    row_major(in->shape->rank, in->shape->dims, st);
    *pn = in->a->parameter_number;
    return true;
  }
  const ir_inst *o = in->nops == 1 ? ci(c, in->ops[0]) : NULL;
  int64_t os[IR_MAX_RANK];
  if (!o || !view_strides(c, in->ops[0], os, pn, depth + 1)) return false;
  if (in->op == IR_OP_TRANSPOSE) {
    for (int k = 0; k < in->shape->rank; k++)
      st[k] = os[in->a->dimensions.v[k]];
    return true;
  }
  if (in->op == IR_OP_RESHAPE && is_row_major(o->shape->rank, o->shape->dims, os)) {
    row_major(in->shape->rank, in->shape->dims, st);
    return true;
  }
  return false;
}

/* The reduce of the last dim of a rank-r value behind a broadcast that
 * repeats it along that dim. */
static ir_id row_bcast_src(const ir_comp *c, ir_id i, int r) {
  const ir_inst *b = ci(c, i);
  if (b->op != IR_OP_BROADCAST || b->a->dimensions.n != r - 1) return IR_NONE;
  for (int k = 0; k < r - 1; k++)
    if (b->a->dimensions.v[k] != k) return IR_NONE;
  const ir_inst *red = ci(c, b->ops[0]);
  if (red->op != IR_OP_REDUCE || red->nops != 2 || red->a->dimensions.n != 1 ||
      red->a->dimensions.v[0] != r - 1 || red->shape->rank != r - 1)
    return IR_NONE;
  return b->ops[0];
}

/* A reducer usable as one elementwise op: (p0, p1) -> f32 op(p0, p1). */
static bool simple_reducer(const ir_module *m, ir_comp_id rc) {
  const ir_comp *c = &m->comps.v[rc];
  if (c->nparams != 2 || c->root < 0) return false;
  const ir_inst *r = ci(c, c->root);
  if (r->shape->rank != 0 || r->shape->type != IR_F32 || !(ir_op_flags(r->op) & OPF_ELEMWISE) ||
      r->nops != 2)
    return false;
  for (int k = 0; k < 2; k++)
    if (ci(c, r->ops[k])->op != IR_OP_PARAMETER) return false;
  return true;
}

/* Fills an operand view for dot operand `op` with batch dims bdims, row
 * dim `row` and column dim `col` (which must be contiguous). */
static bool operand_view(const lctx *x, const ir_comp *c, const ir_inst *fu, ir_id op, int nb,
                         const int64_t *bdims, int64_t row, int64_t col, bool dry, aview *v) {
  int64_t st[IR_MAX_RANK], pn = -1;
  if (!view_strides(c, op, st, &pn, 0) || pn < 0 || pn >= fu->nops) return false;
  if (st[col] != 1 && ci(c, op)->shape->dims[col] > 1) return false;
  if (dry) { /* not lowered yet: its IR type, 4 bytes (the larger plan) */
    ir_type t = ci(x->comp, fu->ops[pn])->shape->type;
    if (t != IR_F32 && t != IR_BF16) return false;
    v->v = NULL;
    v->es = 4;
  } else {
    const tval *p = x->val[fu->ops[pn]];
    if (!p || p->tuple || (p->type != IR_F32 && p->type != IR_BF16)) return false;
    v->v = p;
    v->es = p->type == IR_F32 ? 4 : 2;
  }
  for (int k = 0; k < nb; k++)
    v->bst[k] = st[bdims[k]];
  v->rs = st[row];
  return true;
}

static int64_t free_dim(const ir_shape *s, const ir_ints *batch, const ir_ints *contr) {
  int64_t f = -1;
  for (int d = 0; d < s->rank; d++) {
    bool used = false;
    for (int k = 0; k < batch->n; k++)
      used |= batch->v[k] == d;
    for (int k = 0; k < contr->n; k++)
      used |= contr->v[k] == d;
    if (!used) {
      if (f >= 0) return -2;
      f = d;
    }
  }
  return f;
}

static bool one_pass(const lctx *x, const ir_inst *d, ir_type lt, ir_type rt) {
  if (lt == IR_BF16 && rt == IR_BF16) return true;
  return x->precision == IR_PREC_DEFAULT && d->a->precision[0] == IR_PREC_DEFAULT &&
         d->a->precision[1] == IR_PREC_DEFAULT;
}

/* Recognises the pattern in fusion instruction fu's computation (dry:
 * before its operands are lowered, assuming f32 ones). */
static bool match(const lctx *x, const ir_inst *fu, bool dry, attn *a) {
  const ir_comp *c = &x->m->comps.v[fu->calls[0]];
  memset(a, 0, sizeof *a);
  if (c->root < 0) return refuse(a, "the fused computation has no root");
  /* Result chain: root <- (transpose | reshape)* <- dot O. */
  ir_id chain[8];
  int nc = 0;
  ir_id o = c->root;
  while (ci(c, o)->op == IR_OP_TRANSPOSE || ci(c, o)->op == IR_OP_RESHAPE) {
    if (nc == 8) return refuse(a, "more than 8 reshapes or transposes after the second dot");
    chain[nc++] = o;
    o = ci(c, o)->ops[0];
  }
  const ir_inst *d2 = ci(c, o);
  if (d2->op != IR_OP_DOT) return refuse(a, "the result is not a dot (P x V) seen through reshapes and transposes");
  if (d2->shape->type != IR_F32 || fu->shape->type != IR_F32) return refuse(a, "the second dot's result is not f32");
  int r = d2->shape->rank, nb = r - 2;
  if (nb < 0 || d2->a->lhs_batch.n != nb || d2->a->lhs_contracting.n != 1 ||
      d2->a->lhs_contracting.v[0] != nb + 1 || d2->a->rhs_contracting.n != 1)
    return refuse(a, "the second dot's dimension numbers are not [batch..., queries, keys] x V with one contracting dimension");
  for (int k = 0; k < nb; k++)
    if (d2->a->lhs_batch.v[k] != k) return refuse(a, "the second dot's batch dimensions are not the leading ones in order");
  /* P = E / broadcast(z) */
  const ir_inst *p = ci(c, d2->ops[0]);
  if (p->op != IR_OP_DIVIDE || p->shape->type != IR_F32) return refuse(a, "the second dot's left operand is not an f32 divide (E / broadcast(sum))");
  ir_id e = p->ops[0], zr = row_bcast_src(c, p->ops[1], r);
  const ir_inst *ei = ci(c, e);
  if (zr == IR_NONE || ci(c, zr)->ops[0] != e) return refuse(a, "the divisor is not the broadcast row reduction of the numerator");
  if (ei->op != IR_OP_EXP) return refuse(a, "the numerator is not an exp");
  const ir_inst *u = ci(c, ei->ops[0]);
  if (u->op != IR_OP_SUBTRACT) return refuse(a, "the exp's operand is not a subtract (scores - row max)");
  ir_id t = u->ops[0], mr = row_bcast_src(c, u->ops[1], r);
  if (mr == IR_NONE || ci(c, mr)->ops[0] != t) return refuse(a, "the subtracted value is not the broadcast row reduction of the scores");
  const ir_inst *ti = ci(c, t);
  ir_id d1 = t;
  if (ti->op == IR_OP_MULTIPLY) {
    const ir_literal *l0 = scalar_lit(c, ti->ops[0]), *l1 = scalar_lit(c, ti->ops[1]);
    a->scale_first = l0 != NULL && ci(c, ti->ops[1])->op == IR_OP_DOT;
    a->scale = a->scale_first ? l0 : l1;
    d1 = a->scale_first ? ti->ops[1] : ti->ops[0];
    if (!a->scale) return refuse(a, "the scores are multiplied by something other than an f32 scalar constant");
  }
  const ir_inst *q = ci(c, d1);
  if (q->op != IR_OP_DOT || q->shape->type != IR_F32 || q->shape->rank != r ||
      q->a->lhs_batch.n != nb || q->a->rhs_batch.n != nb || q->a->lhs_contracting.n != 1 ||
      q->a->rhs_contracting.n != 1)
    return refuse(a, "the scores are not an f32 batched dot (Q x K) with one contracting dimension");
  if (ti->shape->type != IR_F32 || u->shape->type != IR_F32 || ei->shape->type != IR_F32)
    return refuse(a, "the softmax is not computed in f32");
  const ir_inst *rm = ci(c, mr), *rz = ci(c, zr);
  a->init_m = scalar_lit(c, rm->ops[1]);
  a->init_z = scalar_lit(c, rz->ops[1]);
  if (!a->init_m || !a->init_z || rm->ncalls != 1 || rz->ncalls != 1 ||
      ci(c, rm->ops[1])->op != IR_OP_CONSTANT || ci(c, rz->ops[1])->op != IR_OP_CONSTANT)
    return refuse(a, "a row reduction's init is not an f32 scalar constant");
  a->red_m = rm->calls[0];
  a->red_z = rz->calls[0];
  if (!simple_reducer(x->m, a->red_m) || !simple_reducer(x->m, a->red_z))
    return refuse(a, "a row reduction's computation is not one f32 elementwise op of its two parameters");
  /* Dims and operand views. */
  const ir_shape *qs = ci(c, q->ops[0])->shape, *ks = ci(c, q->ops[1])->shape;
  const ir_shape *vs = ci(c, d2->ops[1])->shape;
  if (qs->rank != r || ks->rank != r || vs->rank != r) return refuse(a, "Q, K and V do not have the result's rank");
  int64_t qf = free_dim(qs, &q->a->lhs_batch, &q->a->lhs_contracting);
  int64_t kf = free_dim(ks, &q->a->rhs_batch, &q->a->rhs_contracting);
  int64_t vf = free_dim(vs, &d2->a->rhs_batch, &d2->a->rhs_contracting);
  if (qf < 0 || kf < 0 || vf < 0 || d2->a->rhs_batch.n != nb)
    return refuse(a, "Q, K or V has more than one free (query, key or value) dimension");
  a->nb = nb;
  a->G = 1;
  for (int k = 0; k < nb; k++) {
    a->bd[k] = d2->shape->dims[k];
    a->G *= a->bd[k];
  }
  a->Sq = q->shape->dims[nb];
  a->Sk = q->shape->dims[nb + 1];
  a->D = qs->dims[q->a->lhs_contracting.v[0]];
  a->Dv = d2->shape->dims[nb + 1];
  if (vs->dims[d2->a->rhs_contracting.v[0]] != a->Sk) return refuse(a, "V's contracting dimension is not the keys");
  if (!operand_view(x, c, fu, q->ops[0], nb, q->a->lhs_batch.v, qf, q->a->lhs_contracting.v[0], dry,
                    &a->q) ||
      !operand_view(x, c, fu, q->ops[1], nb, q->a->rhs_batch.v, kf, q->a->rhs_contracting.v[0], dry,
                    &a->k) ||
      !operand_view(x, c, fu, d2->ops[1], nb, d2->a->rhs_batch.v, d2->a->rhs_contracting.v[0], vf,
                    dry, &a->vv))
    return refuse(a, "Q, K or V is not an f32 or bf16 fusion parameter seen through reshapes and "
                     "transposes with its contracting dimension contiguous");
  ir_type qt = a->q.es == 2 ? IR_BF16 : IR_F32, kt = a->k.es == 2 ? IR_BF16 : IR_F32;
  if (!one_pass(x, q, qt, kt) || !one_pass(x, d2, IR_F32, a->vv.es == 2 ? IR_BF16 : IR_F32))
    return refuse(a, "a dot asks for more than one MXU pass (f32 operands at a precision above DEFAULT)");
  /* The result: strides of O's dims inside the root's row-major buffer. */
  int64_t st[IR_MAX_RANK];
  const ir_inst *top = ci(c, c->root);
  row_major(top->shape->rank, top->shape->dims, st);
  for (int k = 0; k < nc; k++) {
    const ir_inst *n = ci(c, chain[k]), *y = ci(c, n->ops[0]);
    if (n->op == IR_OP_RESHAPE) {
      if (!is_row_major(n->shape->rank, n->shape->dims, st))
        return refuse(a, "a reshape of the result regroups dimensions that are not row-major");
      row_major(y->shape->rank, y->shape->dims, st);
    } else {
      int64_t ys[IR_MAX_RANK];
      for (int j = 0; j < n->shape->rank; j++)
        ys[n->a->dimensions.v[j]] = st[j];
      memcpy(st, ys, sizeof ys);
    }
  }
  if (st[nb + 1] != 1 && a->Dv > 1) return refuse(a, "the result's value dimension is not contiguous");
  for (int k = 0; k < nb; k++)
    a->o.bst[k] = st[k];
  a->o.rs = st[nb];
  a->o.es = 4;
  /* The unfused reduce folds sequentially except in the tree case
   * (lower_reduce: one output row, R >= 4096). */
  if (a->G * a->Sq == 1 && lower_tree_fold(a->Sk, 1))
    return refuse(a, "one query row over 4096 or more keys: the unfused reduce folds as a tree");
  if (!(a->G > 0 && a->Sq > 0 && a->Sk > 0 && a->D > 0 && a->Dv > 0)) return refuse(a, "a dimension is empty");
  return true;
}

/* ---- the kernel ---------------------------------------------------------------- */

static uint64_t r2k(uint64_t v) { return (v + 2047) / 2048 * 2048; }
static int64_t rup(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

typedef struct panel {
  int64_t g, q0, rows;
} panel;

typedef struct plan {
  int64_t Kt, Nt, ps, PG; /* slots per panel, panels per group */
  int64_t Dp, L, DvB, Dv8, ngmax;
  /* two sets of scores, staging and O^T (group g uses set g % 2), then
   * three sets of MXU tiles (set g % 3), then two output tiles */
  uint64_t st, pt, ot, qs, ks, vs, set;
  uint64_t qt, kt, vt, tset, tiles;
  uint64_t ob;
  uint64_t total;
} plan;

static void plan_sizes(const tgt_target *t, const attn *a, int64_t PG, int64_t ngmax, plan *p) {
  p->Kt = t->mxu_rows;
  p->Nt = t->mxu_cols;
  p->ps = p->Nt / LANES;
  p->PG = PG;
  p->ngmax = ngmax;
  p->Dp = rup(a->D, p->Kt);
  int64_t kb = p->Kt > LANES ? p->Kt : LANES;
  p->L = rup(a->Sk, kb);
  p->DvB = rup(a->Dv, LANES);
  p->Dv8 = rup(a->Dv, 8);
  int qes = a->q.es, kes = a->k.es, ves = a->vv.es;
  uint64_t off = 0;
#define PUT(f, bytes)                                                                              \
  do {                                                                                             \
    p->f = off;                                                                                    \
    off += r2k((uint64_t)(bytes));                                                                 \
  } while (0)
  PUT(st, a->Sk * SLOTS * LANES * 4);
  PUT(pt, p->L * SLOTS * LANES * 2);
  PUT(ot, PG * p->Dv8 * p->Nt * 4);
  PUT(qs, PG * p->Nt * p->Dp * qes);
  PUT(ks, ngmax * a->Sk * p->Dp * kes);
  PUT(vs, ngmax * p->L * p->DvB * ves);
  p->set = off;
  off = 0;
  PUT(qt, PG * p->Nt * p->Dp * 2);
  PUT(kt, ngmax * a->Sk * p->Dp * 2);
  PUT(vt, ngmax * p->Dv8 * p->L * 2);
#undef PUT
  p->tset = off;
  p->tiles = 2 * p->set;
  p->ob = p->tiles + 3 * p->tset;
  p->total = p->ob + 2 * r2k((uint64_t)(p->Nt * p->DvB * 4));
}

/* Distinct batch entries of the group's panels (in order), ngi per panel. */
static int group_gs(const panel *pn, int64_t n, int64_t *gs, int *gi) {
  int ng = 0;
  for (int64_t j = 0; j < n; j++) {
    int f = -1;
    for (int k = 0; k < ng; k++)
      if (gs[k] == pn[j].g) f = k;
    if (f < 0) {
      gs[ng] = pn[j].g;
      f = ng++;
    }
    gi[j] = f;
  }
  return ng;
}

static uint64_t boff(const attn *a, const aview *v, int64_t g) {
  int64_t off = 0;
  for (int k = a->nb - 1; k >= 0; k--) {
    off += (g % a->bd[k]) * v->bst[k];
    g /= a->bd[k];
  }
  return tv_addr(v->v) + (uint64_t)(off * v->es);
}

/* An MXU instruction queued for emission between the softmax's vector
 * instructions (drip). */
typedef enum { MQ_MWT, MQ_MWTT, MQ_MSWAP, MQ_MPUSH, MQ_MPUSHA, MQ_MPOPM } mq_kind;
typedef struct mq_op {
  mq_kind kind;
  int mx, rows;
  uint64_t addr, span;
  uint32_t rs;
} mq_op;

typedef struct kctx {
  tb *b;
  const attn *a;
  const plan *p;
  const panel *pn;
  int64_t npanels, ngroups;
  tk_elem mul, sub, ex, dv, rm, rz;
  uint32_t cbits;
  bool row_sum;        /* z is an f32 add: the row order (softmax phase B) */
  bool max_scale_late; /* m = max(S) * c (softmax phase A) */
  VEC(mq_op) mq;       /* queued MXU instructions; mq_next: first not emitted */
  int mq_next;
  int64_t pend, ticks; /* softmax: MXU instructions to spread over ticks */
} kctx;

static void mq(kctx *k, mq_kind kind, int mx, uint64_t addr, uint32_t rs, uint64_t span, int rows) {
  mq_op o = {kind, mx, rows, addr, span, rs};
  VEC_PUSH(k->b->a, k->mq, o);
}

/* Emits up to n queued MXU instructions (all with n < 0). */
static void drip(kctx *k, int n) {
  tb *b = k->b;
  for (; k->mq_next < k->mq.n && n != 0; k->mq_next++, n--) {
    const mq_op *o = &k->mq.v[k->mq_next];
    switch (o->kind) {
    case MQ_MWT:
      tb_mwt(b, o->mx, o->addr, o->rs, o->span);
      break;
    case MQ_MWTT:
      tb_mwtt(b, o->mx, o->addr, o->rs, o->span);
      break;
    case MQ_MSWAP:
      tb_mswap(b, o->mx);
      break;
    case MQ_MPUSH:
    case MQ_MPUSHA:
      tb_mpush(b, o->mx, o->kind == MQ_MPUSHA, o->addr, o->rs, 0, o->rows);
      break;
    case MQ_MPOPM:
      tb_mpopm(b, o->mx, o->addr, o->rs, 0, o->rows);
      break;
    }
  }
}

static uint64_t set_of(const kctx *k, int64_t grp) { return (uint64_t)(grp & 1) * k->p->set; }
/* The MXU tiles of group grp (three sets: see lower_attention's order). */
static uint64_t tset_of(const kctx *k, int64_t grp) {
  return k->p->tiles + (uint64_t)(grp % 3) * k->p->tset;
}

/* Group grp: its panels, their distinct batch entries, its buffer sets. */
typedef struct gview {
  const panel *pn;
  int64_t j0, n, gs[SLOTS];
  int gi[SLOTS], ng;
  uint64_t s, ts; /* set_of, tset_of */
} gview;

static void group_view(const kctx *k, int64_t grp, gview *v) {
  int64_t j0 = v->j0 = grp * k->p->PG;
  v->n = k->npanels - j0 < k->p->PG ? k->npanels - j0 : k->p->PG;
  v->pn = k->pn + j0;
  v->ng = group_gs(v->pn, v->n, v->gs, v->gi);
  v->s = set_of(k, grp);
  v->ts = tset_of(k, grp);
}

/* HBM -> staging of group grp. */
static void loads(kctx *k, const gview *v) {
  tb *b = k->b;
  const attn *a = k->a;
  const plan *p = k->p;
  const panel *pn = v->pn;
  int64_t n = v->n;
  const int64_t *gs = v->gs;
  int ng = v->ng;
  uint64_t s = v->s;
  /* bf16 Q and K go straight into their MXU tiles (zero padded once). */
  uint64_t qd = a->q.es == 2 ? v->ts + p->qt : s + p->qs;
  uint64_t kd = a->k.es == 2 ? v->ts + p->kt : s + p->ks;
  for (int64_t j = 0; j < n; j++) {
    int64_t d[10] = {a->D * a->q.es,  pn[j].rows, 1, 1, a->q.rs * a->q.es, 0, 0,
                     p->Dp * a->q.es, 0,          0};
    tb_dma(b, true, qd + (uint64_t)(j * p->Nt * p->Dp * a->q.es),
           boff(a, &a->q, pn[j].g) + (uint64_t)(pn[j].q0 * a->q.rs * a->q.es), d);
  }
  for (int g = 0; g < ng; g++) {
    int64_t dk[10] = {a->D * a->k.es, a->Sk, 1, 1, a->k.rs * a->k.es, 0, 0, p->Dp * a->k.es, 0, 0};
    tb_dma(b, true, kd + (uint64_t)(g * a->Sk * p->Dp * a->k.es), boff(a, &a->k, gs[g]), dk);
    int64_t dv[10] = {a->Dv * a->vv.es,  a->Sk, 1, 1, a->vv.rs * a->vv.es, 0, 0,
                      p->DvB * a->vv.es, 0,     0};
    tb_dma(b, true, s + p->vs + (uint64_t)(g * p->L * p->DvB * a->vv.es), boff(a, &a->vv, gs[g]),
           dv);
  }
}

/* Staging -> bf16 MXU tiles: Q and K converted (RNE), V transposed. */
static void convert(kctx *k, const gview *v) {
  tb *b = k->b;
  const attn *a = k->a;
  const plan *p = k->p;
  int64_t n = v->n;
  int ng = v->ng;
  uint64_t s = v->s, ts = v->ts;
  for (int64_t j = 0; j < n && a->q.es == 4; j++)
    tk_conv_bf16(b, s + p->qs + (uint64_t)(j * p->Nt * p->Dp * 4), false,
                 ts + p->qt + (uint64_t)(j * p->Nt * p->Dp * 2), p->Nt * p->Dp);
  for (int g = 0; g < ng && a->k.es == 4; g++)
    tk_conv_bf16(b, s + p->ks + (uint64_t)(g * a->Sk * p->Dp * 4), false,
                 ts + p->kt + (uint64_t)(g * a->Sk * p->Dp * 2), a->Sk * p->Dp);
  /* V [keys][dv] -> V^T [dv][keys]: 128 x 128 blocks through the
   * transpose buffer. */
  int ves = a->vv.es;
  for (int g = 0; g < ng; g++) {
    uint64_t src = s + p->vs + (uint64_t)(g * p->L * p->DvB * ves);
    uint64_t dst = ts + p->vt + (uint64_t)(g * p->Dv8 * p->L * 2);
    for (int64_t kb = 0; kb < p->L / LANES; kb++)
      for (int64_t db = 0; db < p->DvB / LANES; db++) {
        int64_t nd = p->Dv8 - db * LANES < LANES ? p->Dv8 - db * LANES : LANES;
        for (int j = 0; j < 16; j++)
          tb_vld(b, 16 + j, src + (uint64_t)(((kb * LANES + 8 * j) * p->DvB + db * LANES) * ves),
                 (uint32_t)(p->DvB * ves), ves == 2);
        for (int j = 0; j < 16; j++)
          tb_valu(b, OP_VTPUSH, 16 + j, j, 0);
        for (int j = 0; j < nd / 8; j++)
          tb_valu(b, OP_VTPOP, 16 + j, j, 0);
        for (int j = 0; j < nd / 8; j++)
          tb_vst(b, 16 + j, dst + (uint64_t)(((db * LANES + 8 * j) * p->L + kb * LANES) * 2),
                 (uint32_t)(p->L * 2), true, 0);
      }
  }
}

/* One MXU product of nK K tiles on MXU mx (queued): weight tile t at
 * w + t*wstep (transposed load with trans), rows rows of the streamed
 * operand at l + t*lstep with row stride lrs, accumulated in ascending t
 * (the next tile loading while this one streams), popped to dst. */
typedef struct mm_args {
  int mx, rows;
  bool trans;
  int64_t nK;
  uint64_t w, wstep, wspan, l, lstep, dst;
  uint32_t wrs, lrs, drs;
} mm_args;

static void mm_queue(kctx *k, const mm_args *m) {
  mq_kind wk = m->trans ? MQ_MWTT : MQ_MWT;
  mq(k, wk, m->mx, m->w, m->wrs, m->wspan, 0);
  mq(k, MQ_MSWAP, m->mx, 0, 0, 0, 0);
  for (int64_t t = 0; t < m->nK; t++) {
    if (t + 1 < m->nK) mq(k, wk, m->mx, m->w + (uint64_t)(t + 1) * m->wstep, m->wrs, m->wspan, 0);
    mq(k, t > 0 ? MQ_MPUSHA : MQ_MPUSH, m->mx, m->l + (uint64_t)t * m->lstep, m->lrs, 0, m->rows);
    if (t + 1 < m->nK) mq(k, MQ_MSWAP, m->mx, 0, 0, 0, 0);
  }
  mq(k, MQ_MPOPM, m->mx, m->dst, m->drs, 0, m->rows);
}

/* S^T = K Q^T per panel into the group's score tiles (Q^T: mwtt of Q's
 * tile; key chunks of acc_rows). */
static void scores(kctx *k, const gview *v) {
  const attn *a = k->a;
  const plan *p = k->p;
  int64_t kc = k->b->t.acc_rows;
  for (int64_t j = 0; j < v->n; j++)
    for (int64_t c0 = 0; c0 < a->Sk; c0 += kc) {
      mm_args m = {(int)(j % k->b->t.mxus),
                   (int)(a->Sk - c0 < kc ? a->Sk - c0 : kc),
                   true,
                   p->Dp / p->Kt,
                   v->ts + p->qt + (uint64_t)(j * p->Nt * p->Dp * 2),
                   (uint64_t)(p->Kt * 2),
                   (uint64_t)((p->Nt - 1) * p->Dp * 2 + p->Kt * 2),
                   v->ts + p->kt + (uint64_t)((v->gi[j] * a->Sk + c0) * p->Dp * 2),
                   (uint64_t)(p->Kt * 2),
                   v->s + p->st + (uint64_t)(c0 * SLOTS * LANES * 4 + j * p->ps * LANES * 4),
                   (uint32_t)(p->Dp * 2),
                   (uint32_t)(p->Dp * 2),
                   SLOTS * LANES * 4};
      mm_queue(k, &m);
    }
}

static int ralloc1(uint32_t *used) {
  for (int r = 0; r < TGT_VREGS; r++)
    if (!(*used >> r & 1)) {
      *used |= 1u << r;
      return r;
    }
  return -1;
}

/* Tick *tick of the softmax: its share of the queued MXU instructions. */
static void drip_tick(kctx *k, int64_t *tick) {
  int64_t t = (*tick)++;
  drip(k, (int)(((t + 1) * k->pend) / k->ticks - (t * k->pend) / k->ticks));
}

/* A key's score tile into a new register *r, after the tick's MXU share. */
static void key_load(kctx *k, uint32_t *used, int *r, uint64_t addr, int64_t *tick) {
  drip_tick(k, tick);
  *r = ralloc1(used);
  tb_vld(k->b, *r, addr, LANES * 4, false);
}

/* Applies one-op program e to registers r0 (r1); frees r0 (and r1 unless
 * keep1); returns the result's register. */
static int op1(tb *b, uint32_t *used, const tk_elem *e, int r0, int r1, bool keep1) {
  int in[2] = {r0, r1}, out = -1;
  if (!tk_eval_dag(b, used, e, in, &out)) return 0;
  *used &= ~(1u << r0);
  if (r1 >= 0 && !keep1) *used &= ~(1u << r1);
  return out;
}

/* The vector unit's softmax over the group's score tiles, in ascending
 * key order, software-pipelined over keys (each stage a few keys behind
 * the previous so that no instruction waits for its operand). */
static void softmax(kctx *k, const gview *v) {
  tb *b = k->b;
  const attn *a = k->a;
  const plan *p = k->p;
  uint64_t st = v->s + p->st, pt = v->s + p->pt;
  const uint32_t TS = SLOTS * LANES * 4, RS = LANES * 4;
  int64_t Sk = a->Sk;
  uint32_t used = 0;
  /* The queued MXU work (S^T of the next group, O^T of the previous one)
   * is spread over the softmax's key iterations, so that the front end
   * never blocks on a full MXU queue while the vector unit starves. */
  k->pend = k->mq.n - k->mq_next;
  k->ticks = Sk + Sk / 2 + 16;
  int64_t tick = 0;
  for (int w = 0; w < 16; w++)
    drip_tick(k, &tick);
  int reg[8];
  int c = -1;
  if (a->scale) {
    c = ralloc1(&used);
    tb_valu(b, OP_VIMM, c, (int32_t)k->cbits, 0);
  }
  /* A: m = fold_max(init, S * c). When the fold is a maximum and c a
   * finite positive constant, x -> x * c is non-decreasing (RNE is
   * monotone, signs of zero and infinities kept, NaN stays NaN), so
   * max_j(S_j * c) = max_j(S_j) * c: one multiply per row instead of per
   * key (max is order-free, so the init may come last). */
  int m = ralloc1(&used), ms = -1;
  tb_valu(b, OP_VIMM, m, (int32_t)lit_bits(a->init_m, 0), 0);
  bool late = k->max_scale_late;
  for (int64_t t = 0; t < Sk + 4 && !b->failed; t++) {
    if (t < Sk) key_load(k, &used, &reg[t % 8], st + (uint64_t)t * TS, &tick);
    int64_t j;
    j = t - 2;
    if (!late && c >= 0 && j >= 0 && j < Sk)
      reg[j % 8] = op1(b, &used, &k->mul, reg[j % 8], c, true);
    j = t - 4;
    if (j >= 0 && j < Sk) {
      if (!late)
        m = op1(b, &used, &k->rm, m, reg[j % 8], false);
      else
        ms = ms < 0 ? reg[j % 8] : op1(b, &used, &k->rm, ms, reg[j % 8], false);
    }
  }
  if (late) m = op1(b, &used, &k->rm, m, op1(b, &used, &k->mul, ms, c, true), false);
  /* B: E = exp(S * c - m) stored in place, and z. An f32 add folds in the
   * row order of the unfused reduce (docs/numerics.md): keys visited
   * lane-major, l, l+128, l+256, ... into a partial p that starts at
   * E[l]; the partials fold in ascending l into t; z = init + t. Other
   * reducers fold every key in ascending order from the init. */
  bool rows = k->row_sum;
  int64_t *seq = arena_array(b->a, (size_t)Sk, sizeof(int64_t));
  bool *first = arena_array(b->a, (size_t)Sk, sizeof(bool));
  int64_t nseq = 0;
  for (int64_t l = 0; l < (rows ? (Sk < LANES ? Sk : LANES) : 1); l++)
    for (int64_t j = l; j < Sk; j += rows ? LANES : 1) {
      first[nseq] = j == l;
      seq[nseq++] = j;
    }
  int z = ralloc1(&used), pr = -1, tr = -1;
  tb_valu(b, OP_VIMM, z, (int32_t)lit_bits(a->init_z, 0), 0);
  for (int64_t t = 0; t < Sk + 6 && !b->failed; t++) {
    if (t < Sk) key_load(k, &used, &reg[t % 8], st + (uint64_t)seq[t] * TS, &tick);
    int64_t j;
    j = t - 1;
    if (c >= 0 && j >= 0 && j < Sk) reg[j % 8] = op1(b, &used, &k->mul, reg[j % 8], c, true);
    j = t - 2;
    if (j >= 0 && j < Sk) reg[j % 8] = op1(b, &used, &k->sub, reg[j % 8], m, true);
    j = t - 3;
    if (j >= 0 && j < Sk) reg[j % 8] = op1(b, &used, &k->ex, reg[j % 8], -1, true);
    j = t - 6;
    if (j >= 0 && j < Sk) {
      tb_vst(b, reg[j % 8], st + (uint64_t)seq[j] * TS, RS, false, 0);
      if (!rows) {
        z = op1(b, &used, &k->rz, z, reg[j % 8], false);
      } else if (first[j]) { /* a new lane: the previous partial joins t */
        if (pr >= 0) tr = tr < 0 ? pr : op1(b, &used, &k->rz, tr, pr, false);
        pr = reg[j % 8];
      } else {
        pr = op1(b, &used, &k->rz, pr, reg[j % 8], false);
      }
    }
  }
  if (rows) {
    tr = tr < 0 ? pr : op1(b, &used, &k->rz, tr, pr, false);
    z = op1(b, &used, &k->rz, z, tr, false);
  }
  /* C: P^T = bf16(E / z) */
  for (int64_t t = 0; t < Sk + 6 && !b->failed; t++) {
    if (t < Sk) key_load(k, &used, &reg[t % 8], st + (uint64_t)t * TS, &tick);
    int64_t j;
    j = t - 2;
    if (j >= 0 && j < Sk) reg[j % 8] = op1(b, &used, &k->dv, reg[j % 8], z, true);
    j = t - 6;
    if (j >= 0 && j < Sk) {
      tb_vst(b, reg[j % 8], pt + (uint64_t)j * (SLOTS * LANES * 2), LANES * 2, true, 0);
      used &= ~(1u << reg[j % 8]);
    }
  }
  drip(k, -1);
}

/* O^T = V^T P^T per panel into its O^T tile (P^T tiles as weights where
 * they lie, V^T rows streamed). */
static void values(kctx *k, const gview *v) {
  const attn *a = k->a;
  const plan *p = k->p;
  uint32_t ws = SLOTS * LANES * 2;
  for (int64_t j = 0; j < v->n; j++) {
    mm_args m = {(int)(j % k->b->t.mxus),
                 (int)a->Dv,
                 false,
                 (a->Sk + p->Kt - 1) / p->Kt,
                 v->s + p->pt + (uint64_t)(j * p->ps * LANES * 2),
                 (uint64_t)(p->Kt * ws),
                 (uint64_t)((p->Kt - 1) * ws + p->Nt * 2),
                 v->ts + p->vt + (uint64_t)(v->gi[j] * p->Dv8 * p->L * 2),
                 (uint64_t)(p->Kt * 2),
                 v->s + p->ot + (uint64_t)(j * p->Dv8 * p->Nt * 4),
                 ws,
                 (uint32_t)(p->L * 2),
                 (uint32_t)(p->Nt * 4)};
    mm_queue(k, &m);
  }
}

/* O^T tiles -> O rows (transpose buffer; f32, or rounded to bf16) -> HBM. */
static void store(kctx *k, const gview *v) {
  tb *b = k->b;
  const attn *a = k->a;
  const plan *p = k->p;
  const panel *pn = v->pn;
  int es = a->o.es;
  for (int64_t j = 0; j < v->n; j++) {
    uint64_t ot = v->s + p->ot + (uint64_t)(j * p->Dv8 * p->Nt * 4);
    uint64_t ob = p->ob + (uint64_t)((v->j0 + j) & 1) * r2k((uint64_t)(p->Nt * p->DvB * 4));
    for (int64_t sl = 0; sl < p->ps; sl++) {
      if (sl * LANES >= pn[j].rows) break;
      for (int64_t db = 0; db < p->DvB / LANES; db++) {
        int64_t nd = p->Dv8 - db * LANES < LANES ? p->Dv8 - db * LANES : LANES;
        for (int r = 0; r < nd / 8; r++)
          tb_vld(b, 16 + r, ot + (uint64_t)(((db * LANES + 8 * r) * p->Nt + sl * LANES) * 4),
                 (uint32_t)(p->Nt * 4), false);
        for (int r = 0; r < nd / 8; r++)
          tb_valu(b, OP_VTPUSH, 16 + r, r, 0);
        for (int r = 0; r < 16; r++)
          tb_valu(b, OP_VTPOP, 16 + r, r, 0);
        for (int r = 0; r < 16; r++)
          tb_vst(b, 16 + r, ob + (uint64_t)(((sl * LANES + 8 * r) * p->DvB + db * LANES) * es),
                 (uint32_t)(p->DvB * es), es == 2, 0);
      }
    }
    int64_t d[10] = {a->Dv * es, pn[j].rows, 1, 1, a->o.rs * es, 0, 0, p->DvB * es, 0, 0};
    tb_dma(b, false, ob, boff(a, &a->o, pn[j].g) + (uint64_t)(pn[j].q0 * a->o.rs * es), d);
  }
}

static void one_op(tb *b, tk_elem *e, ir_op op, int nargs, bool swap) {
  tk_node *nd = arena_array(b->a, 3, sizeof(tk_node));
  nd[0].kind = nd[1].kind = TK_IN;
  nd[0].type = nd[1].type = nd[2].type = IR_F32;
  nd[0].input = 0;
  nd[1].input = 1;
  nd[2].kind = TK_OP;
  nd[2].op = op;
  nd[2].nargs = nargs;
  nd[2].args[0] = swap ? 1 : 0;
  nd[2].args[1] = swap ? 0 : 1;
  int *out = arena_array(b->a, 1, sizeof(int));
  out[0] = 2;
  memset(e, 0, sizeof *e);
  e->nnodes = 3;
  e->nodes = nd;
  e->ninputs = nargs;
  e->noutputs = 1;
  e->out_node = out;
}

/* VMEM the kernel's buffers may take on target t. */
static uint64_t vmem_budget(const tgt_target *t) { return t->vmem_bytes - t->vmem_bytes / 8; }

const char *lower_attention_refusal(const tgt_target *t, int64_t rows, int64_t sk, arena *a,
                                    const char **out_plan) {
  /* The two sets of a group's f32 scores and bf16 P^T, Sk rows of
   * SLOTS x LANES queries each (plan_sizes' st and pt): what grows with
   * the keys. */
  uint64_t need = 2 * (uint64_t)sk * (SLOTS * LANES * (4 + 2)), have = vmem_budget(t);
  if (need > have)
    return arena_printf(a,
                        "a score row of %lld keys needs %llu KiB of VMEM for two groups of %d "
                        "queries, more than %llu KiB (%s)",
                        (long long)sk, (unsigned long long)(need >> 10), SLOTS * LANES,
                        (unsigned long long)(have >> 10), t->preset);
  if (rows == 1 && lower_tree_fold(sk, rows))
    return "one row of 4096 keys or more: the backend sums it as a tree";
  *out_plan = arena_printf(
      a,
      "the scores stay in VMEM (%llu KiB for two groups of %d queries, of %llu "
      "KiB on %s)",
      (unsigned long long)(need >> 10), SLOTS * LANES, (unsigned long long)(have >> 10), t->preset);
  return NULL;
}

/* The panels (mxu_cols queries each) and the plan for target t: false
 * when the MXU shape does not suit the 8 x 128-query slot layout or the
 * buffers of even one panel per group do not fit 7/8 of VMEM. */
static bool make_plan(const tgt_target *t, arena *ar, const attn *a, panel **pnp, int64_t *np,
                      plan *p) {
  if (t->mxu_cols % LANES || t->mxu_cols > SLOTS * LANES ||
      (t->mxu_rows % LANES && LANES % t->mxu_rows) || a->Dv > t->acc_rows)
    return false;
  int64_t Nt = t->mxu_cols, npq = (a->Sq + Nt - 1) / Nt, npanels = a->G * npq;
  panel *pn = arena_array(ar, (size_t)npanels, sizeof(panel));
  for (int64_t j = 0; j < npanels; j++) {
    pn[j].g = j / npq;
    pn[j].q0 = (j % npq) * Nt;
    pn[j].rows = a->Sq - pn[j].q0 < Nt ? a->Sq - pn[j].q0 : Nt;
  }
  uint64_t budget = vmem_budget(t);
  for (int64_t PG = SLOTS / (Nt / LANES);; PG /= 2) {
    int64_t ngmax = 1, gs[SLOTS];
    int gi[SLOTS];
    for (int64_t j0 = 0; j0 < npanels; j0 += PG) {
      int64_t n = npanels - j0 < PG ? npanels - j0 : PG;
      int ng = group_gs(pn + j0, n, gs, gi);
      if (ng > ngmax) ngmax = ng;
    }
    plan_sizes(t, a, PG, ngmax, p);
    if (p->total <= budget || PG == 1) break;
  }
  *pnp = pn;
  *np = npanels;
  return p->total <= budget;
}

bool lower_attention_takes(const lctx *x, ir_id i) {
  const ir_inst *fu = &x->comp->insts.v[i];
  attn a;
  panel *pn;
  int64_t np;
  plan p;
  return fu->op == IR_OP_FUSION && fu->ncalls == 1 && fu->a->fusion_kind == IR_FUSION_CUSTOM &&
         match(x, fu, true, &a) && make_plan(&x->b->t, x->b->a, &a, &pn, &np, &p);
}

bool lower_attention(lctx *x, ir_id i, bool out_bf16) {
  const ir_inst *fu = &x->comp->insts.v[i];
  tb *b = x->b;
  attn a;
  panel *pn;
  int64_t npanels;
  plan p;
  if (!match(x, fu, false, &a)) {
    tb_explain(b, "attention kernel not used: %s", a.why ? a.why : "the pattern is not softmax(Q K) V");
    return false;
  }
  if (!make_plan(&b->t, b->a, &a, &pn, &npanels, &p)) {
    tb_explain(b, "attention kernel not used: no plan on this target (MXU columns not a "
                  "multiple of 128, or a group's buffers for %lld keys exceed 7/8 of VMEM)",
               (long long)a.Sk);
    return false;
  }
  int64_t PG = p.PG;
  kctx k = {0};
  k.b = b;
  k.a = &a;
  k.p = &p;
  k.pn = pn;
  k.npanels = npanels;
  k.ngroups = (npanels + PG - 1) / PG;
  one_op(b, &k.mul, IR_OP_MULTIPLY, 2, a.scale_first);
  one_op(b, &k.sub, IR_OP_SUBTRACT, 2, false);
  one_op(b, &k.ex, IR_OP_EXP, 1, false);
  one_op(b, &k.dv, IR_OP_DIVIDE, 2, false);
  if (!lower_scalar_comp(x, a.red_m, &k.rm) || !lower_scalar_comp(x, a.red_z, &k.rz)) return false;
  if (a.scale) k.cbits = lit_bits(a.scale, 0);
  const ir_comp *rzc = &x->m->comps.v[a.red_z];
  k.row_sum = rzc->insts.v[rzc->root].op == IR_OP_ADD;
  const ir_comp *rmc = &x->m->comps.v[a.red_m];
  if (a.scale) {
    float cf;
    memcpy(&cf, &k.cbits, 4);
    k.max_scale_late = rmc->insts.v[rmc->root].op == IR_OP_MAXIMUM && cf > 0 && cf <= 3.4e38f;
  }
  if (!tb_vmem_fits(b, p.total, "the fused attention's tiles")) return true;
  tb_explain(b, "attention kernel: %lld problems of %lld queries x %lld keys (D %lld, Dv %lld), "
                "groups of %lld panel(s) of %lld queries, the scores in VMEM (%llu of %llu KiB), "
                "Q loaded transposed (mwtt)",
             (long long)a.G, (long long)a.Sq, (long long)a.Sk, (long long)a.D, (long long)a.Dv,
             (long long)p.PG, (long long)p.Nt, (unsigned long long)(p.total >> 10),
             (unsigned long long)(b->t.vmem_bytes >> 10));
  tval *out = tv_new(x->b, out_bf16 ? IR_BF16 : fu->shape->type,
                     fu->shape->rank, fu->shape->dims);
  a.o.v = out;
  a.o.es = out_bf16 ? 2 : 4;
  /* Padding: zero staging (Q/K columns past D, V rows past Sk) and P^T
   * rows past Sk, in both sets; DMAs and the softmax never write them. */
  for (int s = 0; s < 2; s++) {
    uint64_t o = (uint64_t)s * p.set, row = SLOTS * LANES * 2; /* a P^T key row: 2 KiB */
    tk_vfill(b, o + p.qs, p.set - p.qs, 0);
    if (p.L > a.Sk) tk_vfill(b, o + p.pt + (uint64_t)a.Sk * row, (uint64_t)(p.L - a.Sk) * row, 0);
  }
  if (a.q.es == 2 || a.k.es == 2) tk_vfill(b, p.tiles, 3 * p.tset, 0); /* their pads */
  /* Order (docs/tpu-backend.md): a unit that must wait for another waits
   * for everything that unit has queued, so each group's work is emitted
   * where that tail is work needed anyway: per step g the vector unit
   * converts group g+1's operands (waiting for S^T of g, the MXUs' last
   * queued work), the MXUs compute O^T of g-1 and S^T of g+1 while the
   * vector unit runs g's softmax and g-2's output transposes. */
  int64_t ng = k.ngroups;
  gview *gv = arena_array(b->a, (size_t)ng, sizeof(gview));
  for (int64_t g = 0; g < ng; g++)
    group_view(&k, g, &gv[g]);
  loads(&k, &gv[0]);
  if (ng > 1) loads(&k, &gv[1]);
  convert(&k, &gv[0]);
  scores(&k, &gv[0]);
  drip(&k, -1);
  for (int64_t g = 0; g < ng && !b->failed; g++) {
    if (g + 2 < ng) loads(&k, &gv[g + 2]);
    if (g + 1 < ng) convert(&k, &gv[g + 1]);
    if (g >= 1) values(&k, &gv[g - 1]);
    if (g + 1 < ng) scores(&k, &gv[g + 1]);
    softmax(&k, &gv[g]);
    if (g >= 2) store(&k, &gv[g - 2]);
  }
  values(&k, &gv[ng - 1]);
  drip(&k, -1);
  if (ng >= 2) store(&k, &gv[ng - 2]);
  store(&k, &gv[ng - 1]);
  b->flops += (uint64_t)(2 * a.G * a.Sq * a.Sk * (a.D + a.Dv));
  if (b->max_passes < 1) b->max_passes = 1;
  x->val[i] = out;
  return true;
}
