/* lower_ops.c: dot, convolution, reduce and reduce-window.
 *
 * dot: operands are split into bf16 parts (1 for DEFAULT, 2 for HIGH =
 * bf16x3, 3 for HIGHEST = bf16x6), permuted to [batch, M, K] and
 * [batch, K, N], and the part products are laid side by side along K
 * (A' = [a0 | a0 | a1], B' = [b0 ; b1 ; b0] for bf16x3) so one MXU matmul
 * with K' = passes x K accumulates every pass in f32.
 * convolution: the input is zero-padded (edge padding and base dilation),
 * patches are gathered by strided DMA into [group, batch*out_spatial,
 * window*Cg] (column = window position major, input feature minor: the
 * evaluator's accumulation order), the kernel into [group, window*Cg,
 * Cout/group], one batched matmul, and a strided copy into the output
 * layout. Integer and pred dots/convolutions run exactly on the vector
 * unit: broadcast, multiply and a sequential fold over K.
 * reduce: inputs are permuted so the reduced dims lead ([R, O]) and folded
 * in the evaluator's order. reduce-window: the padded input's windows are
 * stacked into [window, out] and folded (padding and base-dilation holes
 * hold the init value; see docs/tpu-backend.md). */
#include "backend/tpu/lower.h"

static const ir_inst *inst_of(lctx *x, ir_id i) { return &x->comp->insts.v[i]; }


/* A scalar constant v of type t from the pool; u32 and f16 take the word
 * of their held type (s32, f32: the pool's zeros), aliased as t. */
static tval *scalar_const(lctx *x, ir_type t, double v) {
  ir_type held = t == IR_U32 ? IR_S32 : t == IR_F16 ? IR_F32 : t;
  ir_shape s = ir_shape_scalar(held);
  ir_literal *l = ir_literal_create(x->b->a, &s);
  ir_literal_set_f64(l, 0, v);
  tval *c = tv_const(x->b, l);
  return held == t ? c : tv_alias(x->b, c, t, 0, NULL);
}


int lower_mxu_passes(const lctx *x, const ir_comp *c, const ir_inst *in) {
  ir_type lt = c->insts.v[in->ops[0]].shape->type, rt = c->insts.v[in->ops[1]].shape->type;
  ir_precision p = x->precision;
  if (in->a->precision[0] > p) p = in->a->precision[0];
  if (in->a->precision[1] > p) p = in->a->precision[1];
  if (lt == IR_BF16 && rt == IR_BF16) return 1;
  return p == IR_PREC_HIGHEST ? 6 : p == IR_PREC_HIGH ? 3 : 1;
}

static const int pair_a[6] = {0, 0, 1, 0, 1, 2}, pair_b[6] = {0, 1, 0, 2, 1, 0};

/* bf16 parts of v, or v itself when it already is bf16 and one part. */
static void parts_of(lctx *x, tval *v, int nparts, tval **parts) {
  if (v->type == IR_BF16 && nparts == 1) {
    parts[0] = tv_alias(x->b, v, v->type, v->rank, v->dims);
    return;
  }
  tv_split_bf16(x->b, v, nparts, parts);
}

/* Integer/pred contraction on the vector unit: out[g][m][n] = fold_k
 * (a[g][m][k] * b[g][k][n]) from 0, with a and b given as [G,M,K] and
 * [G,K,N] (types t). Exact (wrapping) like the evaluator. */
static tval *int_matmul(lctx *x, tval *a, tval *bm, int64_t G, int64_t M, int64_t N, int64_t K,
                        ir_type t) {
  int64_t d4[4] = {K, G, M, N};
  if ((double)K * (double)G * (double)M * (double)N > (double)((int64_t)1 << 27)) {
    tb_error(x->b, ST_UNSUPPORTED,
             "integer/pred contraction of %lld x %lld x %lld (x %lld) is too large for the "
             "vector-unit path (at most 2^27 products)",
             (long long)M, (long long)N, (long long)K, (long long)G);
    int64_t d3[3] = {G, M, N};
    return tv_new(x->b, t, 3, d3);
  }
  /* ea[k][g][m][n] = a[g][m][k], eb[k][g][m][n] = b[g][k][n] */
  tval *ea = tv_new(x->b, t, 4, d4), *eb = tv_new(x->b, t, 4, d4);
  int64_t ds[4], sa[4] = {1, M * K, K, 0}, sb[4] = {N, K * N, 0, 1};
  tv_strides(ea, ds);
  tk_copy(x->b, tv_addr(ea), ds, tv_addr(a), sa, 4, d4, 4);
  tk_copy(x->b, tv_addr(eb), ds, tv_addr(bm), sb, 4, d4, 4);
  int64_t d3[3] = {G, M, N};
  tval *out = tv_new(x->b, t, 3, d3);
  tval *zero = scalar_const(x, t, 0);
  /* reducer over (acc0, acc1, a, b): acc0 + a*b (pred: acc0 | (a & b));
   * acc1 only passes through (tk_fold folds as many values as
   * accumulators). */
  tk_node rn[6] = {{TK_IN, t, 0, 0, 0, 0, 0, 0, {0, 0, 0}},
                   {TK_IN, t, 2, 0, 0, 0, 0, 0, {0, 0, 0}},
                   {TK_IN, t, 3, 0, 0, 0, 0, 0, {0, 0, 0}},
                   {TK_OP, t, 0, 0, IR_OP_MULTIPLY, 0, 0, 2, {1, 2, 0}},
                   {TK_OP, t, 0, 0, IR_OP_ADD, 0, 0, 2, {0, 3, 0}},
                   {TK_IN, t, 1, 0, 0, 0, 0, 0, {0, 0, 0}}};
  int outs[2] = {4, 5};
  ir_type types[4] = {t, t, t, t};
  tk_elem red = {6, rn, 4, NULL, types, 2, outs, NULL, 0};
  tval *dummy = tv_new(x->b, t, 3, d3);
  uint64_t xs[2] = {tv_addr(ea), tv_addr(eb)}, in[2] = {tv_addr(zero), tv_addr(zero)},
           os[2] = {tv_addr(out), tv_addr(dummy)};
  tk_fold(x->b, &red, 2, xs, in, os, K, G * M * N);
  tv_release(x->b, ea);
  tv_release(x->b, eb);
  tv_release(x->b, dummy);
  return out;
}

/* An f32 right operand (a weight) of a one-pass dot with more rows M
 * than WEIGHT_HBM_BLOCKS accumulator blocks: the matmul would read and
 * convert each of its panels again for every block of rows, so it is
 * converted to bf16 in HBM once here (the same RNE rounding as the
 * conversion in VMEM, so the same bits). With fewer blocks the matmul
 * converts in VMEM: the repeated reads and conversions run under the MXU
 * work, while the separate conversion (6 bytes of HBM traffic per
 * element) runs alone (v3 transformer block, M = 2 blocks: 3.03M -> 2.93M
 * cycles). Returns rv itself (a new reference) otherwise. */
enum { WEIGHT_HBM_BLOCKS = 4 };
static tval *weight_bf16(lctx *x, tval *rv, int64_t M) {
  if (rv->type == IR_F32 && M > WEIGHT_HBM_BLOCKS * x->b->t.acc_rows)
    return tv_convert(x->b, rv, IR_BF16);
  return tv_alias(x->b, rv, rv->type, rv->rank, rv->dims);
}

/* A dot of computation c that rounds both operands to bf16 on their way
 * to the MXU: one pass (DEFAULT precision, here and in the options) and a
 * float result. */
/* The matmul of G dense problems a [M, K] x b [K, N] (b [N, K] when bt)
 * into f32 C [G, M, N] at c, row-major; f32 operands are converted in
 * VMEM (tk_mm's a32, b32). */
static tk_mm dense_mm(int64_t G, int64_t M, int64_t N, int64_t K, const tval *a, const tval *b,
                      bool bt, uint64_t c) {
  bool a32 = a->type == IR_F32, b32 = b->type == IR_F32;
  tk_mm mm = {G, M, N, K, tv_addr(a), (uint64_t)(M * K * (a32 ? 4 : 2)), tv_addr(b),
              (uint64_t)(K * N * (b32 ? 4 : 2)), c, (uint64_t)(M * N * 4), a32, b32, bt, false};
  return mm;
}

static bool one_pass_dot(const lctx *x, const ir_inst *in) {
  return in->op == IR_OP_DOT && ir_type_is_float(in->shape->type) &&
         x->precision == IR_PREC_DEFAULT && in->a->precision[0] == IR_PREC_DEFAULT &&
         in->a->precision[1] == IR_PREC_DEFAULT;
}

bool lower_bf16_store(const lctx *x, ir_id i) {
  const ir_comp *cp = x->comp;
  const ir_inst *in = &cp->insts.v[i];
  if (x->c != x->m->entry || i == cp->root || in->shape->type != IR_F32) return false;
  int users = 0;
  for (int j = i + 1; j < cp->insts.n; j++) {
    const ir_inst *u = &cp->insts.v[j];
    if (u->dead) continue;
    for (int k = 0; k < u->nops; k++) {
      if (u->ops[k] != i) continue;
      users++;
      if (one_pass_dot(x, u)) continue;
      if (u->op == IR_OP_FUSION && u->a->fusion_kind == IR_FUSION_CUSTOM) {
        if (!lower_attention_takes(x, j)) return false; /* the kernel reads bf16 Q, K, V */
        continue;
      }
      if (u->op != IR_OP_FUSION || u->ncalls != 1) return false;
      /* inside the fusion, parameter k feeds one-pass dots only */
      const ir_comp *fc = &x->m->comps.v[u->calls[0]];
      for (int q = 0; q < fc->insts.n; q++) {
        const ir_inst *pq = &fc->insts.v[q];
        if (pq->dead || pq->op != IR_OP_PARAMETER || pq->a->parameter_number != k) continue;
        if (q == fc->root) return false;
        for (int r = 0; r < fc->insts.n; r++) {
          const ir_inst *ur = &fc->insts.v[r];
          if (ur->dead) continue;
          for (int a = 0; a < ur->nops; a++)
            if (ur->ops[a] == q && !one_pass_dot(x, ur)) return false;
        }
      }
    }
  }
  return users > 0;
}

/* How a dot's operands reach the matmul: the permutations that make A
 * [batch, M free, K] (lp) and B [batch, K, N free] (rp), whether each is
 * the identity, and bt: B is not [batch, K, N] but already [batch, N free,
 * K], which the matmul takes as it lies (transposed weight loads). */
typedef struct dot_plan {
  int64_t Bn, M, N, K;
  int64_t lp[IR_MAX_RANK], rp[IR_MAX_RANK];
  bool ident_l, ident_r, bt;
  bool at; /* lhs stored [batch, K, M]: the matmul reads it transposed */
} dot_plan;

static void dot_plan_of(const ir_attrs *at, const tval *l, const tval *r, dot_plan *p) {
  bool lu[IR_MAX_RANK] = {0}, ru[IR_MAX_RANK] = {0};
  int64_t rq[IR_MAX_RANK]; /* [batch, N free, K] */
  int nl = 0, nr = 0, nq = 0;
  p->Bn = p->M = p->N = p->K = 1;
  for (int k = 0; k < at->lhs_batch.n; k++) {
    p->lp[nl++] = at->lhs_batch.v[k];
    lu[at->lhs_batch.v[k]] = true;
    p->Bn *= l->dims[at->lhs_batch.v[k]];
  }
  for (int k = 0; k < at->lhs_contracting.n; k++) lu[at->lhs_contracting.v[k]] = true;
  for (int d = 0; d < l->rank; d++)
    if (!lu[d]) {
      p->lp[nl++] = d;
      p->M *= l->dims[d];
    }
  for (int k = 0; k < at->lhs_contracting.n; k++) {
    p->lp[nl++] = at->lhs_contracting.v[k];
    p->K *= l->dims[at->lhs_contracting.v[k]];
  }
  for (int k = 0; k < at->rhs_batch.n; k++) {
    p->rp[nr++] = rq[nq++] = at->rhs_batch.v[k];
    ru[at->rhs_batch.v[k]] = true;
  }
  for (int k = 0; k < at->rhs_contracting.n; k++) {
    p->rp[nr++] = at->rhs_contracting.v[k];
    ru[at->rhs_contracting.v[k]] = true;
  }
  for (int d = 0; d < r->rank; d++)
    if (!ru[d]) {
      p->rp[nr++] = rq[nq++] = d;
      p->N *= r->dims[d];
    }
  for (int k = 0; k < at->rhs_contracting.n; k++) rq[nq++] = at->rhs_contracting.v[k];
  bool ident_q = true;
  p->ident_l = p->ident_r = true;
  for (int k = 0; k < l->rank; k++) p->ident_l &= p->lp[k] == k;
  /* [batch, K, M] as stored: batch dims, then contracting, then free */
  int64_t lq[IR_MAX_RANK];
  int nlq = 0;
  for (int k = 0; k < at->lhs_batch.n; k++) lq[nlq++] = at->lhs_batch.v[k];
  for (int k = 0; k < at->lhs_contracting.n; k++) lq[nlq++] = at->lhs_contracting.v[k];
  for (int d = at->lhs_batch.n + at->lhs_contracting.n; d < l->rank; d++)
    lq[nlq++] = p->lp[d - at->lhs_contracting.n];
  p->at = !p->ident_l && nlq == l->rank;
  for (int k = 0; k < nlq && p->at; k++) p->at = lq[k] == k;
  for (int k = 0; k < r->rank; k++) {
    p->ident_r &= p->rp[k] == k;
    ident_q &= rq[k] == k;
  }
  p->bt = !p->ident_r && ident_q;
}

/* --explain: how the dot's operands reach the matmul (d), and whether an
 * f32 weight (w32) was converted to bf16 in HBM first. */
static void explain_operands(lctx *x, const dot_plan *d, const char *what, bool w32, bool at) {
  tb_explain(x->b, "%s: lhs %s; rhs %s%s", what,
             d->ident_l ? "read as it lies ([batch, M, K])"
             : at       ? "read as it lies ([batch, K, M]): its tiles cross the transpose buffer "
                          "in VMEM"
                        : "permuted to [batch, M, K] by a copy through HBM (the MXU streams "
                          "rows of A with K contiguous)",
             d->ident_r ? "read as it lies ([batch, K, N])"
             : d->bt    ? "read as it lies ([batch, N, K]): weight tiles loaded transposed"
                        : "permuted to [batch, K, N] by a copy through HBM (neither [.., K, N] "
                          "nor [.., N, K])",
             w32 ? "; f32 weight converted to bf16 in HBM once (more than 4 accumulator "
                   "blocks of rows would each convert it again)"
                 : "");
}

/* Why the elementwise program e (input dot_in: the contraction's f32
 * result of `count` elements) cannot run on a matmul's result tiles
 * (tk_epilogue's contract), or NULL; `what` names the contraction. */
static const char *epilogue_refusal(lctx *x, const ir_inst *in, const tk_elem *e, int dot_in,
                                    int64_t count, const char *what) {
  const ir_comp *c = x->comp;
  if (in->shape->type != IR_F32 || !ir_type_is_float(c->insts.v[in->ops[0]].shape->type) ||
      !ir_type_is_float(c->insts.v[in->ops[1]].shape->type) ||
      lower_mxu_passes(x, c, in) != 1)
    return arena_printf(x->b->a, "the %s is not one bf16 pass of float operands into f32", what);
  for (int k = 0; k < e->ninputs; k++)
    if (k != dot_in && e->in_type[k] != IR_F32)
      return arena_printf(x->b->a, "input %d is %s, not f32", k, ir_type_name(e->in_type[k]));
  ir_type ot = e->noutputs == 1 ? e->nodes[e->out_node[0]].type : IR_TYPE_INVALID;
  if (ot != IR_F32 && ot != IR_BF16) return "its result is not one f32 or bf16 value";
  if (e->count != count)
    return arena_printf(x->b->a, "it is not elementwise over the %s's result", what);
  return NULL;
}

bool lower_dot_epilogue(lctx *x, ir_id i, const tk_elem *e, int dot_in, uint64_t out,
                        const bool *row) {
  const ir_inst *in = inst_of(x, i);
  tval *l = x->val[in->ops[0]], *r = x->val[in->ops[1]];
  const ir_attrs *at = in->a;
  dot_plan d;
  dot_plan_of(at, l, r, &d);
  int64_t Bn = d.Bn, M = d.M, N = d.N, K = d.K;
  const char *why = epilogue_refusal(x, in, e, dot_in, Bn * M * N, "dot");
  if (why) {
    tb_explain(x->b, "epilogue not applied in the matmul: %s", why);
    return false;
  }
  bool lat = d.at && tk_matmul_at_ok(x->b);
  tval *lt = d.ident_l || lat ? tv_alias(x->b, l, l->type, l->rank, l->dims)
                             : tv_transpose(x->b, l, d.lp);
  tval *rtv0 = d.ident_r || d.bt ? tv_alias(x->b, r, r->type, r->rank, r->dims)
                                 : tv_transpose(x->b, r, d.rp);
  tval *rtv = weight_bf16(x, rtv0, M);
  explain_operands(x, &d, "dot with epilogue", rtv->type != rtv0->type, lat);
  tv_release(x->b, rtv0);
  bool a32 = lt->type == IR_F32, b32 = rtv->type == IR_F32;
  /* an f32 weight whose panels do not fit VMEM: the matmul's first row
   * block converts it into this bf16 copy under its MXU work */
  int64_t bd[3] = {Bn, K, N};
  tval *once = b32 && !a32 ? tv_new(x->b, IR_BF16, 3, bd) : NULL;
  tk_mm mm = dense_mm(Bn, M, N, K, lt, rtv, d.bt, out);
  mm.at = lat;
  tk_epilogue ep = {e, dot_in, row, once ? tv_addr(once) : TK_NO_ONCE};
  bool ok = tk_matmul_epi(x->b, &mm, &ep);
  if (once) tv_release(x->b, once);
  if (!ok && (a32 || b32)) {
    /* f32 operands too long for the in-VMEM conversion: convert them in
     * HBM first (the same RNE rounding), then the bf16 plan. */
    tb_explain(x->b, "f32 operands converted to bf16 in HBM first, then the bf16 plan");
    tval *lc = a32 ? tv_convert(x->b, lt, IR_BF16) : lt;
    tval *rc = b32 ? tv_convert(x->b, rtv, IR_BF16) : rtv;
    mm = dense_mm(Bn, M, N, K, lc, rc, d.bt, out);
    mm.at = lat;
    ep.b_once = TK_NO_ONCE;
    ok = tk_matmul_epi(x->b, &mm, &ep);
    if (a32) tv_release(x->b, lc);
    if (b32) tv_release(x->b, rc);
  }
  tv_release(x->b, lt);
  tv_release(x->b, rtv);
  if (!ok) return false;
  x->b->flops += (uint64_t)(2 * Bn * M * N * K);
  return true;
}

void lower_dot(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tval *l = x->val[in->ops[0]], *r = x->val[in->ops[1]];
  dot_plan d;
  dot_plan_of(in->a, l, r, &d);
  int64_t Bn = d.Bn, M = d.M, N = d.N, K = d.K;
  const int64_t *lp = d.lp, *rp = d.rp;
  bool ident_l = d.ident_l, ident_r = d.ident_r, bt = d.bt;
  ir_type rt = in->shape->type;
  if (!ir_type_is_float(rt)) {
    /* Exact integer/pred path: convert operands to the result type. */
    tval *lc = l->type == rt ? tv_alias(x->b, l, rt, l->rank, l->dims) : tv_convert(x->b, l, rt);
    tval *rc = r->type == rt ? tv_alias(x->b, r, rt, r->rank, r->dims) : tv_convert(x->b, r, rt);
    tval *lt = ident_l ? lc : tv_transpose(x->b, lc, lp);
    tval *rtv = ident_r ? rc : tv_transpose(x->b, rc, rp);
    tval *o = int_matmul(x, lt, rtv, Bn, M, N, K, rt);
    if (lt != lc) tv_release(x->b, lt);
    if (rtv != rc) tv_release(x->b, rtv);
    tv_release(x->b, lc);
    tv_release(x->b, rc);
    x->val[i] = tv_alias(x->b, o, rt, in->shape->rank, in->shape->dims);
    tv_release(x->b, o);
    return;
  }
  if (!ir_type_is_float(l->type) || !ir_type_is_float(r->type)) {
    tb_error(x->b, ST_UNSUPPORTED, "dot of %s and %s into %s", ir_type_name(l->type),
             ir_type_name(r->type), ir_type_name(rt));
    return;
  }
  int P = lower_mxu_passes(x, x->comp, in);
  int np = P == 6 ? 3 : P == 3 ? 2 : 1;
  if (P > x->b->max_passes) x->b->max_passes = P;
  tval *la[3], *ra[3];
  if (P == 1) {
    /* One pass: f32 operands go to the matmul as they are (converted in
     * VMEM as their tiles arrive); only the permutation moves data. */
    bool at = d.at && tk_matmul_at_ok(x->b);
    tval *lt = ident_l || at ? tv_alias(x->b, l, l->type, l->rank, l->dims)
                             : tv_transpose(x->b, l, lp);
    tval *rtv0 =
        ident_r || bt ? tv_alias(x->b, r, r->type, r->rank, r->dims) : tv_transpose(x->b, r, rp);
    tval *rtv = weight_bf16(x, rtv0, M);
    explain_operands(x, &d, "dot, one bf16 pass", rtv->type != rtv0->type, at);
    tv_release(x->b, rtv0);
    int64_t cd1[3] = {Bn, M, N};
    tval *C1 = tv_new(x->b, IR_F32, 3, cd1);
    tk_mm mm = dense_mm(Bn, M, N, K, lt, rtv, bt, tv_addr(C1));
    mm.at = at;
    bool ok = (lt->type == IR_F32 || lt->type == IR_BF16) &&
              (rtv->type == IR_F32 || rtv->type == IR_BF16) && tk_matmul(x->b, &mm);
    if (ok) {
      x->b->flops += (uint64_t)(2 * Bn * M * N * K);
      tv_release(x->b, lt);
      tv_release(x->b, rtv);
      if (rt == IR_F32) {
        x->val[i] = tv_alias(x->b, C1, rt, in->shape->rank, in->shape->dims);
      } else {
        tval *cv = tv_convert(x->b, C1, rt);
        x->val[i] = tv_alias(x->b, cv, rt, in->shape->rank, in->shape->dims);
        tv_release(x->b, cv);
      }
      tv_release(x->b, C1);
      return;
    }
    tv_release(x->b, C1);
    tv_release(x->b, lt);
    tv_release(x->b, rtv);
  }
  if (P > 1) {
    tb_explain(x->b, "dot at %s: %d bf16 passes, the operands' bf16 parts side by side along K "
                     "(K' = %lld), one matmul",
               P == 6 ? "HIGHEST" : "HIGH", P, (long long)(P * K));
    explain_operands(x, &d, "dot", false, false);
  } else { /* the one-pass attempt above said how its operands arrive */
    tb_explain(x->b, "no resident plan for f32 operands: converted to bf16 in HBM first");
  }
  parts_of(x, l, np, la);
  parts_of(x, r, np, ra);
  for (int p = 0; p < np; p++) {
    if (!ident_l) {
      tval *t = tv_transpose(x->b, la[p], lp);
      tv_release(x->b, la[p]);
      la[p] = t;
    }
    if (!ident_r && !bt) {
      tval *t = tv_transpose(x->b, ra[p], rp);
      tv_release(x->b, ra[p]);
      ra[p] = t;
    }
  }
  int64_t Kp = (int64_t)P * K;
  tval *A = la[0], *Bm = ra[0];
  if (P > 1) {
    int64_t ad[3] = {Bn, M, Kp}, bd[3] = {Bn, bt ? N : Kp, bt ? Kp : N};
    A = tv_new(x->b, IR_BF16, 3, ad);
    Bm = tv_new(x->b, IR_BF16, 3, bd);
    for (int p = 0; p < P; p++) {
      int64_t d3a[3] = {Bn, M, K}, sa[3] = {M * K, K, 1}, dsa[3] = {M * Kp, Kp, 1};
      tk_copy(x->b, tv_addr(A) + (uint64_t)(p * K * 2), dsa, tv_addr(la[pair_a[p]]), sa, 3, d3a, 2);
      /* B's part p: rows p*K.. of [Kp, N], or columns p*K.. of [N, Kp] (bt) */
      int64_t d3b[3] = {Bn, bt ? N : K, bt ? K : N}, sb[3] = {K * N, d3b[2], 1};
      int64_t dsb[3] = {Kp * N, bt ? Kp : N, 1};
      tk_copy(x->b, tv_addr(Bm) + (uint64_t)(p * (bt ? K : K * N) * 2), dsb,
              tv_addr(ra[pair_b[p]]), sb, 3, d3b, 2);
    }
    for (int p = 0; p < np; p++) {
      tv_release(x->b, la[p]);
      tv_release(x->b, ra[p]);
    }
  }
  int64_t cd[3] = {Bn, M, N};
  tval *C = tv_new(x->b, IR_F32, 3, cd);
  tk_mm mm = dense_mm(Bn, M, N, Kp, A, Bm, bt, tv_addr(C));
  tk_matmul(x->b, &mm);
  x->b->flops += (uint64_t)(2 * Bn * M * N * K);
  tv_release(x->b, A);
  tv_release(x->b, Bm);
  if (rt == IR_F32) {
    x->val[i] = tv_alias(x->b, C, rt, in->shape->rank, in->shape->dims);
  } else {
    tval *cv = tv_convert(x->b, C, rt);
    x->val[i] = tv_alias(x->b, cv, rt, in->shape->rank, in->shape->dims);
    tv_release(x->b, cv);
  }
  tv_release(x->b, C);
}

/* A dot of the entry whose result only feeds one-pass dots (the fused
 * attention's Q, K, V: lower_bf16_store) stores it rounded to bf16 from
 * its matmul's epilogue: the bits those dots would round it to, half the
 * bytes. false (nothing emitted) otherwise. */
bool lower_dot_bf16(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  if (!lower_bf16_store(x, i)) return false;
  tval *out = tv_new(x->b, IR_BF16, in->shape->rank, in->shape->dims);
  tk_node nodes[2] = {{TK_IN, IR_F32, 0, 0, 0, 0, 0, 0, {0, 0, 0}},
                      {TK_OP, IR_BF16, 0, 0, IR_OP_CONVERT, 0, 0, 1, {0, 0, 0}}};
  int root = 1;
  uint64_t ia = 0, oa = tv_addr(out);
  ir_type it = IR_F32;
  tk_elem e = {2, nodes, 1, &ia, &it, 1, &root, &oa, out->count};
  if (!lower_dot_epilogue(x, i, &e, 0, oa, NULL)) {
    tv_release(x->b, out);
    return false;
  }
  x->val[i] = out;
  return true;
}

/* ---- convolution ------------------------------------------------------------------ */

/* Index idx of a row-major box with dims n[0..rank) as per-dim indices. */
static void unravel(int64_t idx, int rank, const int64_t *n, int64_t *out) {
  for (int k = rank - 1; k >= 0; k--) {
    out[k] = idx % n[k];
    idx /= n[k];
  }
}

/* Row-major strides st[0..rank) of a box with dims n whose innermost
 * element is `inner` elements apart. */
static void packed_strides(int rank, const int64_t *n, int64_t inner, int64_t *st) {
  for (int k = rank - 1; k >= 0; k--) {
    st[k] = inner;
    inner *= n[k];
  }
}

/* A convolution as G batched matmuls [Mrows, Kt] x [Kt, Coutg]: row m =
 * (batch, output position), column = (pass, window position, input
 * feature) (Kw columns per pass), in operands of type et (bf16 parts of
 * floats, or the result's integer type). */
typedef struct conv_geom {
  bool fl;       /* a float convolution (MXU); else integer (vector unit) */
  int ns, P, np; /* spatial dims; MXU passes; bf16 parts per operand */
  ir_type et;
  int es;
  int64_t fgc, bgc, G, Bo, Cg, Coutg, O, Wn, Kw, Kt, Mrows;
  int64_t Od[IR_MAX_RANK], Wd[IR_MAX_RANK]; /* output and window dims */
} conv_geom;

/* The patch matrix of a convolution as a matmul A view: row m = (batch,
 * output position), column = (pass, window position, input feature), read
 * straight from the padded input: one DMA per run of output positions
 * along the innermost spatial dimension and per window position. */
typedef struct conv_view {
  tk_aview av;
  uint64_t src[6];      /* padded input of each pass's lhs part */
  int64_t Kw, Cg, Bo, ps_b, ps_f, bgc, fgc;
  int ns, es;
  int64_t Od[IR_MAX_RANK], Wd[IR_MAX_RANK], ws[IR_MAX_RANK], wd[IR_MAX_RANK], ps_sp[IR_MAX_RANK];
} conv_view;

static void conv_view_load(tb *b, const tk_aview *av, int64_t g, int64_t m0, int64_t rows,
                           int64_t k0, int64_t kc, uint64_t dst, int64_t rs) {
  const conv_view *c = av->ctx;
  int es = c->es, ns = c->ns;
  int64_t goff = (c->bgc > 1 ? g * c->Bo * c->ps_b : 0) + (c->fgc > 1 ? g * c->Cg * c->ps_f : 0);
  int64_t O = 1;
  for (int k = 0; k < ns; k++) O *= c->Od[k];
  for (int64_t kk = k0; kk < k0 + kc && !b->failed;) {
    int64_t p = kk / c->Kw, rem = kk % c->Kw, w = rem / c->Cg, z = rem % c->Cg;
    int64_t end = p * c->Kw + (w + 1) * c->Cg;
    if (end > k0 + kc) end = k0 + kc;
    int64_t zc = end - kk, woff = 0, wi[IR_MAX_RANK];
    unravel(w, ns, c->Wd, wi);
    for (int k = 0; k < ns; k++)
      woff += wi[k] * c->wd[k] * c->ps_sp[k];
    uint64_t base = c->src[p] + (uint64_t)((goff + woff + z * c->ps_f) * es);
    int64_t lstride = c->ws[ns - 1] * c->ps_sp[ns - 1];
    for (int64_t m = m0; m < m0 + rows;) {
      int64_t bb = m / O, o = m % O, line, roff = bb * c->ps_b, oi[IR_MAX_RANK];
      int64_t olast = o % c->Od[ns - 1];
      line = c->Od[ns - 1] - olast;
      if (line > m0 + rows - m) line = m0 + rows - m;
      unravel(o, ns, c->Od, oi);
      for (int k = 0; k < ns; k++)
        roff += oi[k] * c->ws[k] * c->ps_sp[k];
      int64_t d1[10] = {zc * es, line, 1, 1, lstride * es, 0, 0, rs, 0, 0};
      int64_t d2[10] = {es, zc, line, 1, c->ps_f * es, lstride * es, 0, es, rs, 0};
      tb_dma(b, true, dst + (uint64_t)((m - m0) * rs + (kk - k0) * es), base + (uint64_t)(roff * es),
             c->ps_f == 1 ? d1 : d2);
      m += line;
    }
    kk = end;
  }
}

/* The matmul shape of convolution in with input v and kernel kv; false
 * with an error for a float result of integer operands. */
static bool conv_geom_of(lctx *x, const ir_inst *in, const tval *v, const tval *kv, conv_geom *g) {
  const ir_conv_dims *cd = &in->a->conv;
  ir_type rt = in->shape->type;
  memset(g, 0, sizeof *g);
  g->fl = ir_type_is_float(rt);
  if (g->fl && (!ir_type_is_float(v->type) || !ir_type_is_float(kv->type))) {
    tb_error(x->b, ST_UNSUPPORTED, "convolution of %s and %s into %s", ir_type_name(v->type),
             ir_type_name(kv->type), ir_type_name(rt));
    return false;
  }
  g->ns = cd->nspatial;
  g->fgc = in->a->feature_group_count > 0 ? in->a->feature_group_count : 1;
  g->bgc = in->a->batch_group_count > 0 ? in->a->batch_group_count : 1;
  g->G = g->fgc * g->bgc;
  g->Cg = kv->dims[cd->k_in];
  g->Bo = v->dims[cd->in_batch] / g->bgc;
  g->Coutg = kv->dims[cd->k_out] / g->G;
  g->O = g->Wn = 1;
  for (int k = 0; k < g->ns; k++) {
    g->Od[k] = in->shape->dims[cd->out_spatial[k]];
    g->Wd[k] = ir_window_of(in->a)->dims[k].size;
    g->O *= g->Od[k];
    g->Wn *= g->Wd[k];
  }
  g->P = g->fl ? lower_mxu_passes(x, x->comp, in) : 1;
  g->np = g->P == 6 ? 3 : g->P == 3 ? 2 : 1;
  g->et = g->fl ? IR_BF16 : rt;
  g->es = tv_esize(g->et);
  g->Kw = g->Wn * g->Cg;
  g->Kt = (int64_t)g->P * g->Kw;
  g->Mrows = g->Bo * g->O;
  return true;
}

/* The operands in type g->et (bf16 parts of floats), the input's parts
 * zero-padded and base-dilated: ip[0..np), kp[0..np), new references. */
static void conv_operands(lctx *x, const ir_inst *in, const conv_geom *g, tval *v, tval *kv,
                          tval **ip, tval **kp) {
  const ir_conv_dims *cd = &in->a->conv;
  const ir_window *w = ir_window_of(in->a);
  ir_type rt = in->shape->type;
  if (g->fl) {
    parts_of(x, v, g->np, ip);
    parts_of(x, kv, g->np, kp);
  } else {
    ip[0] = v->type == rt ? tv_alias(x->b, v, rt, v->rank, v->dims) : tv_convert(x->b, v, rt);
    kp[0] = kv->type == rt ? tv_alias(x->b, kv, rt, kv->rank, kv->dims) : tv_convert(x->b, kv, rt);
  }
  ir_padding_dim pd[IR_MAX_RANK];
  memset(pd, 0, sizeof pd);
  bool need_pad = false;
  for (int k = 0; k < g->ns; k++) {
    pd[cd->in_spatial[k]].lo = w->dims[k].pad_lo;
    pd[cd->in_spatial[k]].hi = w->dims[k].pad_hi;
    pd[cd->in_spatial[k]].interior = w->dims[k].lhs_dilate - 1;
    need_pad |= w->dims[k].pad_lo || w->dims[k].pad_hi || w->dims[k].lhs_dilate != 1;
  }
  if (!need_pad) return;
  tval *zero = scalar_const(x, g->et, 0);
  for (int p = 0; p < g->np; p++) {
    tval *t = tv_pad(x->b, ip[p], zero, pd, g->et);
    tv_release(x->b, ip[p]);
    ip[p] = t;
  }
}

/* The weight matrix [G, Kt, Coutg] of the kernel's parts kp: one strided
 * copy per window position, group and pass (reversed windows read
 * backwards). */
static tval *conv_weights(lctx *x, const ir_inst *in, const conv_geom *g, tval **kp) {
  const ir_conv_dims *cd = &in->a->conv;
  int64_t bd[3] = {g->G, g->Kt, g->Coutg}, ks[IR_MAX_RANK], wi[IR_MAX_RANK] = {0};
  int es = g->es;
  tval *Bm = tv_new(x->b, g->et, 3, bd);
  tv_strides(kp[0], ks);
  for (int64_t wpos = 0; wpos < g->Wn && !x->b->failed; wpos++) {
    unravel(wpos, g->ns, g->Wd, wi);
    for (int64_t gi = 0; gi < g->G; gi++)
      for (int p = 0; p < g->P; p++) {
        int64_t kdims[2] = {g->Cg, g->Coutg}, kss[2] = {ks[cd->k_in], ks[cd->k_out]},
                kds[2] = {g->Coutg, 1};
        int64_t koff = gi * g->Coutg * ks[cd->k_out];
        for (int k = 0; k < g->ns; k++) {
          int64_t wk = ir_window_of(in->a)->dims[k].reversal ? g->Wd[k] - 1 - wi[k] : wi[k];
          koff += wk * ks[cd->k_spatial[k]];
        }
        uint64_t kdst =
            tv_addr(Bm) +
            (uint64_t)((gi * g->Kt * g->Coutg + (p * g->Kw + wpos * g->Cg) * g->Coutg) * es);
        tk_copy(x->b, kdst, kds, tv_addr(kp[pair_b[p]]) + (uint64_t)(koff * es), kss, 2, kdims, es);
      }
  }
  return Bm;
}

/* Float convolutions stream their patches straight from the padded input
 * ip into the matmul's VMEM panels (conv_view): the result [G, Mrows,
 * Coutg] at c (f32, or with ep the epilogue's output), true; false
 * (nothing emitted) when that plan does not fit. */
static bool conv_view_run(lctx *x, const ir_inst *in, const conv_geom *g, tval **ip,
                          const tval *Bm, const tk_epilogue *ep, uint64_t c) {
  const ir_conv_dims *cd = &in->a->conv;
  int64_t ps[IR_MAX_RANK];
  tv_strides(ip[0], ps);
  conv_view cv;
  memset(&cv, 0, sizeof cv);
  cv.av.load = conv_view_load;
  cv.av.ctx = &cv;
  for (int p = 0; p < g->P; p++)
    cv.src[p] = tv_addr(ip[pair_a[p]]);
  cv.Kw = g->Kw;
  cv.Cg = g->Cg;
  cv.Bo = g->Bo;
  cv.ns = g->ns;
  cv.ps_b = ps[cd->in_batch];
  cv.ps_f = ps[cd->in_feature];
  cv.bgc = g->bgc;
  cv.fgc = g->fgc;
  cv.es = g->es;
  for (int k = 0; k < g->ns; k++) {
    cv.Od[k] = g->Od[k];
    cv.Wd[k] = g->Wd[k];
    cv.ws[k] = ir_window_of(in->a)->dims[k].stride;
    cv.wd[k] = ir_window_of(in->a)->dims[k].rhs_dilate;
    cv.ps_sp[k] = ps[cd->in_spatial[k]];
  }
  tk_mm mm = {.G = g->G,
              .M = g->Mrows,
              .N = g->Coutg,
              .K = g->Kt,
              .B = tv_addr(Bm),
              .B_g = (uint64_t)(g->Kt * g->Coutg * 2),
              .C = c,
              .C_g = (uint64_t)(g->Mrows * g->Coutg * 4)};
  return tk_matmul_view_epi(x->b, &mm, &cv.av, ep);
}

static tval *conv_view_matmul(lctx *x, const ir_inst *in, const conv_geom *g, tval **ip,
                              const tval *Bm) {
  int64_t cdm[3] = {g->G, g->Mrows, g->Coutg};
  tval *C = tv_new(x->b, IR_F32, 3, cdm);
  if (conv_view_run(x, in, g, ip, Bm, NULL, tv_addr(C))) return C;
  tv_release(x->b, C);
  return NULL;
}

/* The patch matrix A [G, Mrows, Kt] materialised in HBM from the padded
 * input ip: per window position, group and pass, one strided copy of the
 * sampled positions [Bo, O..., Cg]. */
static tval *conv_patches(lctx *x, const ir_inst *in, const conv_geom *g, tval **ip) {
  const ir_conv_dims *cd = &in->a->conv;
  int ns = g->ns, es = g->es;
  int64_t ad[3] = {g->G, g->Mrows, g->Kt}, ps[IR_MAX_RANK], wi[IR_MAX_RANK] = {0};
  int64_t odst[IR_MAX_RANK]; /* destination stride of output spatial dim k */
  tval *A = tv_new(x->b, g->et, 3, ad);
  tv_strides(ip[0], ps);
  packed_strides(ns, g->Od, g->Kt, odst);
  for (int64_t wpos = 0; wpos < g->Wn && !x->b->failed; wpos++) {
    unravel(wpos, ns, g->Wd, wi);
    for (int64_t gi = 0; gi < g->G; gi++)
      for (int p = 0; p < g->P; p++) {
        int64_t dims[IR_MAX_RANK], ss[IR_MAX_RANK], dss[IR_MAX_RANK], soff = 0;
        int r = 0;
        dims[r] = g->Bo;
        ss[r] = ps[cd->in_batch];
        dss[r] = g->O * g->Kt;
        r++;
        for (int k = 0; k < ns; k++) {
          dims[r] = g->Od[k];
          ss[r] = ps[cd->in_spatial[k]] * ir_window_of(in->a)->dims[k].stride;
          dss[r] = odst[k];
          soff += wi[k] * ir_window_of(in->a)->dims[k].rhs_dilate * ps[cd->in_spatial[k]];
          r++;
        }
        dims[r] = g->Cg;
        ss[r] = ps[cd->in_feature];
        dss[r] = 1;
        r++;
        if (g->bgc > 1) soff += gi * g->Bo * ps[cd->in_batch];
        if (g->fgc > 1) soff += gi * g->Cg * ps[cd->in_feature];
        uint64_t dst =
            tv_addr(A) + (uint64_t)((gi * g->Mrows * g->Kt + p * g->Kw + wpos * g->Cg) * es);
        tk_copy(x->b, dst, dss, tv_addr(ip[pair_a[p]]) + (uint64_t)(soff * es), ss, r, dims, es);
      }
  }
  return A;
}

/* x->val[i] = the matmul result C [G, Bo, O..., Coutg] in the output's
 * layout: C itself when that is the same row-major order, else a strided
 * copy. Releases C. */
static void conv_scatter(lctx *x, ir_id i, const conv_geom *g, tval *C) {
  const ir_inst *in = inst_of(x, i);
  const ir_conv_dims *cd = &in->a->conv;
  ir_type rt = in->shape->type;
  int ns = g->ns;
  tval shp;
  memset(&shp, 0, sizeof shp);
  shp.rank = in->shape->rank;
  for (int k = 0; k < shp.rank; k++) shp.dims[k] = in->shape->dims[k];
  int64_t os[IR_MAX_RANK];
  tv_strides(&shp, os);
  int64_t dims[IR_MAX_RANK], ss[IR_MAX_RANK], dss[IR_MAX_RANK], osrc[IR_MAX_RANK];
  int r = 0;
  dims[r] = g->G;
  ss[r] = g->Mrows * g->Coutg;
  dss[r] = g->Coutg * os[cd->out_feature];
  r++;
  dims[r] = g->Bo;
  ss[r] = g->O * g->Coutg;
  dss[r] = os[cd->out_batch];
  r++;
  packed_strides(ns, g->Od, g->Coutg, osrc);
  for (int k = 0; k < ns; k++) {
    dims[r] = g->Od[k];
    ss[r] = osrc[k];
    dss[r] = os[cd->out_spatial[k]];
    r++;
  }
  dims[r] = g->Coutg;
  ss[r] = 1;
  dss[r] = os[cd->out_feature];
  r++;
  if (r > IR_MAX_RANK) {
    tb_error(x->b, ST_UNSUPPORTED, "convolution with %d spatial dimensions (at most 5)", ns);
    return;
  }
  /* One group and the output layout already [Bo, O..., Coutg] row-major
   * (every dim longer than 1 has the same strides on both sides): the
   * result is C as it is, no copy through HBM. */
  bool same = true;
  for (int k = 0; k < r; k++) same &= dims[k] == 1 || ss[k] == dss[k];
  if (same) {
    x->val[i] = tv_alias(x->b, C, rt, in->shape->rank, in->shape->dims);
    tv_release(x->b, C);
    return;
  }
  tval *out = tv_new(x->b, rt, in->shape->rank, in->shape->dims);
  tk_copy(x->b, tv_addr(out), dss, tv_addr(C), ss, r, dims, tv_esize(rt));
  tv_release(x->b, C);
  x->val[i] = out;
}

/* Why convolution in (geometry g) cannot apply an epilogue of nx inputs
 * besides its result to its matmul's tiles, beyond epilogue_refusal: its
 * matmul's C must be the output as it lies, and the gathered view must
 * find its resident plan. NULL when it can. */
enum { EPI_MIN_COLS = 16 };
static const char *conv_epilogue_refusal(lctx *x, const ir_inst *in, const conv_geom *g, int nx) {
  const ir_conv_dims *cd = &in->a->conv;
  int r = in->shape->rank;
  if (g->G != 1) return "feature or batch groups (one matmul per group)";
  if (g->Coutg < EPI_MIN_COLS)
    return arena_printf(x->b->a,
                        "%lld output features fill %lld of each result tile's 128 lanes (fewer "
                        "than %d): a separate pass over the flat result runs on fewer tiles",
                        (long long)g->Coutg, (long long)g->Coutg, EPI_MIN_COLS);
  if (g->ns < 1) return "no spatial dimensions";
  bool lay = cd->out_batch == 0 && cd->out_feature == r - 1;
  for (int k = 0; k < g->ns; k++) lay &= cd->out_spatial[k] == k + 1;
  if (!lay)
    return "its output layout is not [batch, spatial..., feature] (the matmul's rows are "
           "scattered into it by a copy)";
  tk_mm mm = {.G = 1, .M = g->Mrows, .N = g->Coutg, .K = g->Kt};
  if (!tk_matmul_view_fits(x->b, &mm, nx))
    return arena_printf(x->b->a,
                        "no resident plan for the gathered patches with the epilogue's %d "
                        "input(s) (K = %lld does not fit VMEM whole)",
                        nx, (long long)g->Kt);
  return NULL;
}

bool lower_conv_epilogue(lctx *x, ir_id i, const tk_elem *e, int conv_in, uint64_t out,
                         const bool *row) {
  const ir_inst *in = inst_of(x, i);
  tval *v = x->val[in->ops[0]], *kv = x->val[in->ops[1]];
  const char *why = epilogue_refusal(x, in, e, conv_in, ir_shape_count(in->shape), "convolution");
  conv_geom g;
  if (!why && !conv_geom_of(x, in, v, kv, &g)) return false;
  if (!why) why = conv_epilogue_refusal(x, in, &g, e->ninputs - 1);
  if (why) {
    tb_explain(x->b, "epilogue not applied in the convolution's matmul: %s", why);
    return false;
  }
  if (g.P > x->b->max_passes) x->b->max_passes = g.P;
  tval *ip[3], *kp[3];
  conv_operands(x, in, &g, v, kv, ip, kp);
  tval *Bm = conv_weights(x, in, &g, kp);
  tb_explain(x->b,
             "convolution with epilogue as 1 matmul [%lld, %lld] x [%lld, %lld] (K = %lld window "
             "positions x %lld features): patches gathered into VMEM by DMA, the epilogue "
             "applied to the result tiles before their one store",
             (long long)g.Mrows, (long long)g.Kt, (long long)g.Kt, (long long)g.Coutg,
             (long long)g.Wn, (long long)g.Cg);
  tk_epilogue ep = {e, conv_in, row, TK_NO_ONCE};
  bool ok = conv_view_run(x, in, &g, ip, Bm, &ep, out);
  for (int p = 0; p < g.np; p++) {
    tv_release(x->b, ip[p]);
    tv_release(x->b, kp[p]);
  }
  tv_release(x->b, Bm);
  if (!ok) base_die("convolution epilogue: the plan tk_matmul_view_fits accepted did not fit");
  x->b->flops += (uint64_t)(2 * g.Mrows * g.Coutg * g.Kw);
  return ok;
}

void lower_conv(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tval *v = x->val[in->ops[0]], *kv = x->val[in->ops[1]];
  ir_type rt = in->shape->type;
  conv_geom g;
  if (!conv_geom_of(x, in, v, kv, &g)) return;
  if (g.P > x->b->max_passes) x->b->max_passes = g.P;
  tval *ip[3], *kp[3];
  conv_operands(x, in, &g, v, kv, ip, kp);
  tval *Bm = conv_weights(x, in, &g, kp), *A = NULL;
  tval *C = g.fl && g.ns >= 1 ? conv_view_matmul(x, in, &g, ip, Bm) : NULL;
  if (C)
    tb_explain(x->b,
               "convolution as %lld matmul(s) [%lld, %lld] x [%lld, %lld] (K = %lld window "
               "positions x %lld features%s): patches gathered into VMEM by DMA, no patch "
               "matrix in HBM",
               (long long)g.G, (long long)g.Mrows, (long long)g.Kt, (long long)g.Kt,
               (long long)g.Coutg, (long long)g.Wn, (long long)g.Cg,
               g.P > 1 ? " x bf16 parts" : "");
  else
    tb_explain(x->b,
               "convolution as %lld matmul(s) [%lld, %lld] x [%lld, %lld]: patch matrix "
               "materialised in HBM (%s)",
               (long long)g.G, (long long)g.Mrows, (long long)g.Kt, (long long)g.Kt,
               (long long)g.Coutg,
               !g.fl      ? "integer: exact products on the vector unit"
               : g.ns < 1 ? "no spatial dims"
                          : "no resident plan with K in VMEM for the gathered view");
  bool viewed = C != NULL;
  if (!viewed) A = conv_patches(x, in, &g, ip);
  for (int p = 0; p < g.np; p++) {
    tv_release(x->b, ip[p]);
    tv_release(x->b, kp[p]);
  }
  if (g.fl) {
    if (!viewed) {
      int64_t cdm[3] = {g.G, g.Mrows, g.Coutg};
      C = tv_new(x->b, IR_F32, 3, cdm);
      tk_mm mm = dense_mm(g.G, g.Mrows, g.Coutg, g.Kt, A, Bm, false, tv_addr(C));
      tk_matmul(x->b, &mm);
    }
    x->b->flops += (uint64_t)(2 * g.G * g.Mrows * g.Coutg * g.Kw);
    if (rt != IR_F32) {
      tval *cv = tv_convert(x->b, C, rt);
      tv_release(x->b, C);
      C = cv;
    }
  } else {
    C = int_matmul(x, A, Bm, g.G, g.Mrows, g.Coutg, g.Kt, rt);
  }
  if (A) tv_release(x->b, A);
  tv_release(x->b, Bm);
  conv_scatter(x, i, &g, C);
}

/* A pointwise convolution (1x1 window, no padding or dilation, one group)
 * of bf16 operands, input and output laid out batch, spatial..., feature
 * and the kernel's input feature before its output feature, is the matmul
 * [B*S, Cin] x [Cin, Cout] on the buffers as they are (any stride: the
 * sampled positions are gathered first): no patch view, no scatter of the
 * result into the output layout (lower_conv's general path costs an extra
 * f32 pass over HBM). Same products in the same ascending-Cin order, so
 * the same bits. False when it does not apply. */
bool lower_pointwise_conv(lctx *x, ir_id i) {
  const ir_inst *in = &x->comp->insts.v[i];
  const tval *v = x->val[in->ops[0]], *kv = x->val[in->ops[1]];
  const ir_conv_dims *cd = &in->a->conv;
  ir_type rt = in->shape->type;
  int ns = cd->nspatial, r = in->shape->rank;
  if (v->type != IR_BF16 || kv->type != IR_BF16 || !ir_type_is_float(rt) ||
      in->a->feature_group_count > 1 || in->a->batch_group_count > 1 || ns < 1 ||
      ir_window_of(in->a)->rank != ns || v->rank != r || kv->rank != r || r != ns + 2)
    return false;
  if (cd->in_batch != 0 || cd->out_batch != 0 || cd->in_feature != r - 1 ||
      cd->out_feature != r - 1 || cd->k_in > cd->k_out)
    return false;
  bool strided = false;
  for (int k = 0; k < ns; k++) {
    const ir_window_dim *w = &ir_window_of(in->a)->dims[k];
    if (w->size != 1 || w->stride < 1 || w->pad_lo || w->pad_hi || w->lhs_dilate != 1 ||
        w->rhs_dilate != 1 || cd->in_spatial[k] != k + 1 || cd->out_spatial[k] != k + 1 ||
        kv->dims[cd->k_spatial[k]] != 1 ||
        in->shape->dims[k + 1] != (v->dims[k + 1] - 1) / w->stride + 1)
      return false;
    strided |= w->stride != 1;
  }
  int64_t Cin = v->dims[r - 1], Cout = kv->dims[cd->k_out];
  if (Cin != kv->dims[cd->k_in] || Cout != in->shape->dims[r - 1] || Cin == 0 ||
      in->shape->dims[0] != v->dims[0])
    return false;
  /* Strided: the sampled positions first, as a bf16 [batch, out spatial...,
   * Cin] buffer (a quarter of the input for stride 2). */
  tval *a = NULL;
  if (strided) {
    int64_t dims[IR_MAX_RANK], ss[IR_MAX_RANK], ds[IR_MAX_RANK];
    for (int k = 0; k < r; k++)
      dims[k] = in->shape->dims[k];
    dims[r - 1] = Cin;
    a = tv_new(x->b, IR_BF16, r, dims);
    tv_strides(v, ss);
    tv_strides(a, ds);
    for (int k = 0; k < ns; k++)
      ss[k + 1] *= ir_window_of(in->a)->dims[k].stride;
    tk_copy(x->b, tv_addr(a), ds, tv_addr(v), ss, r, dims, 2);
  }
  int64_t M = (a ? a->count : v->count) / Cin;
  tb_explain(x->b,
             "pointwise convolution: one matmul [%lld, %lld] x [%lld, %lld] on the "
             "buffers as they lie%s",
             (long long)M, (long long)Cin, (long long)Cin, (long long)Cout,
             strided ? " (the strided positions gathered first)" : "");
  tval *C = tv_new(x->b, IR_F32, r, in->shape->dims);
  tk_mm mm = dense_mm(1, M, Cout, Cin, a ? a : v, kv, false, tv_addr(C));
  tk_matmul(x->b, &mm);
  if (a) tv_release(x->b, a);
  if (x->b->max_passes < 1) x->b->max_passes = 1;
  x->b->flops += (uint64_t)(2 * M * Cout * Cin);
  if (rt != IR_F32) {
    tval *cv = tv_convert(x->b, C, rt);
    tv_release(x->b, C);
    C = cv;
  }
  x->val[i] = C;
  return true;
}

/* ---- reductions ------------------------------------------------------------------ */

static tk_elem *reducer_of(lctx *x, ir_comp_id c, int nv) {
  tk_elem *e = arena_alloc(x->b->a, sizeof *e);
  if (!lower_scalar_comp(x, c, e)) return NULL;
  if (e->ninputs != 2 * nv || e->noutputs != nv) {
    tb_error(x->b, ST_UNSUPPORTED, "reducer takes %d values and returns %d (expected %d and %d)",
             e->ninputs, e->noutputs, 2 * nv, nv);
    return NULL;
  }
  return e;
}

static tval *result_val(lctx *x, const ir_shape *s, int nv, tval **outs) {
  if (s->type != IR_TUPLE) return outs[0];
  tval *t = arena_alloc(x->b->a, sizeof *t);
  t->tuple = true;
  t->n = nv;
  t->elems = outs;
  return t;
}

/* A reducer that is one associative op of its two parameters. */
static bool associative(const tk_elem *red) {
  if (red->nnodes != 3 || red->ninputs != 2 || red->noutputs != 1) return false;
  const tk_node *n = &red->nodes[red->out_node[0]];
  if (n->kind != TK_OP || n->nargs != 2) return false;
  switch (n->op) {
  case IR_OP_ADD: case IR_OP_MULTIPLY: case IR_OP_MAXIMUM: case IR_OP_MINIMUM: case IR_OP_AND:
  case IR_OP_OR: break;
  default: return false;
  }
  const tk_node *a = &red->nodes[n->args[0]], *b = &red->nodes[n->args[1]];
  return a->kind == TK_IN && b->kind == TK_IN && a->input != b->input;
}

/* Folds [R, O] at xs into out[O] (init: a one-element buffer) with an
 * associative reducer when R is large and O small: R2 partial
 * accumulators per output fold R1 = R / R2 rows each ([R1, R2*O] is the
 * same row-major memory), the partials and the R - R1*R2 leftover rows
 * are folded again, recursively, and the last level starts from init. */
static void fold_tree(lctx *x, const tk_elem *red, uint64_t xs, ir_type t, uint64_t init,
                      uint64_t out, int64_t R, int64_t O) {
  if (!lower_tree_fold(R, O)) {
    tk_fold(x->b, red, 1, &xs, &init, &out, R, O);
    return;
  }
  int64_t R2 = 8192 / O;
  if (R2 > R / 8) R2 = R / 8;
  if (R2 < 2) {
    tk_fold(x->b, red, 1, &xs, &init, &out, R, O);
    return;
  }
  int64_t R1 = R / R2, rem = R - R1 * R2, es = tv_esize(t);
  int64_t nd[2] = {R2 + rem, O};
  tval *part = tv_new(x->b, t, 2, nd);
  uint64_t pa = tv_addr(part);
  tk_fold(x->b, red, 1, &xs, NULL, &pa, R1, R2 * O);
  if (rem) {
    int64_t n = rem * O, one = 1;
    tk_copy(x->b, pa + (uint64_t)(R2 * O * es), &one, xs + (uint64_t)(R1 * R2 * O * es), &one, 1,
            &n, (int)es);
  }
  fold_tree(x, red, pa, t, init, out, R2 + rem, O);
  tv_release(x->b, part);
}

void lower_reduce(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  int nv = in->nops / 2;
  if (nv == 1 && lower_row_reduce(x, i)) return;
  tk_elem *red = reducer_of(x, in->calls[0], nv);
  if (!red) return;
  tval *v0 = x->val[in->ops[0]];
  bool isred[IR_MAX_RANK] = {0};
  for (int k = 0; k < in->a->dimensions.n; k++) isred[in->a->dimensions.v[k]] = true;
  int64_t perm[IR_MAX_RANK], R = 1, O = 1;
  int np = 0;
  bool ident = true;
  for (int d = 0; d < v0->rank; d++)
    if (isred[d]) {
      perm[np++] = d;
      R *= v0->dims[d];
    }
  for (int d = 0; d < v0->rank; d++)
    if (!isred[d]) {
      perm[np++] = d;
      O *= v0->dims[d];
    }
  for (int k = 0; k < v0->rank; k++) ident &= perm[k] == k;
  /* Reduced dimensions all after the kept ones: [O, R] row-major, folded
   * with a gathering DMA instead of a transposed copy. */
  bool minor = true;
  {
    int seen_red = 0;
    for (int d = 0; d < v0->rank; d++) {
      if (isred[d]) seen_red = 1;
      else if (seen_red) minor = false;
    }
  }
  /* (not when the tree below applies: its order is the one defined) */
  bool tree = nv == 1 && associative(red) && lower_tree_fold(R, O);
  if (minor && !ident && R > 1 && O > 1 && !tree) {
    uint64_t xs[8], inits[8], os[8];
    tval **outs = arena_array(x->b->a, (size_t)nv, sizeof(tval *));
    if (nv > 8) {
      tb_error(x->b, ST_UNSUPPORTED, "reduce of %d values (at most 8)", nv);
      return;
    }
    for (int v = 0; v < nv; v++) {
      xs[v] = tv_addr(x->val[in->ops[v]]);
      inits[v] = tv_addr(x->val[in->ops[nv + v]]);
      const ir_shape *s = in->shape->type == IR_TUPLE ? &in->shape->tuple[v] : in->shape;
      outs[v] = tv_new(x->b, s->type, s->rank, s->dims);
      os[v] = tv_addr(outs[v]);
    }
    tk_fold_strided(x->b, red, nv, xs, 1, R, inits, os, R, O);
    x->val[i] = result_val(x, in->shape, nv, outs);
    return;
  }
  uint64_t xs[8], inits[8], os[8];
  tval *tv[8], **outs = arena_array(x->b->a, (size_t)nv, sizeof(tval *));
  if (nv > 8) {
    tb_error(x->b, ST_UNSUPPORTED, "reduce of %d values (at most 8)", nv);
    return;
  }
  for (int v = 0; v < nv; v++) {
    tval *src = x->val[in->ops[v]];
    tv[v] = ident ? src : tv_transpose(x->b, src, perm);
    xs[v] = tv_addr(tv[v]);
    inits[v] = tv_addr(x->val[in->ops[nv + v]]);
    const ir_shape *s = in->shape->type == IR_TUPLE ? &in->shape->tuple[v] : in->shape;
    outs[v] = tv_new(x->b, s->type, s->rank, s->dims);
    os[v] = tv_addr(outs[v]);
  }
  if (nv == 1 && associative(red)) fold_tree(x, red, xs[0], tv[0]->type, inits[0], os[0], R, O);
  else tk_fold(x->b, red, nv, xs, inits, os, R, O);
  for (int v = 0; v < nv; v++)
    if (!ident) tv_release(x->b, tv[v]);
  x->val[i] = result_val(x, in->shape, nv, outs);
}

void lower_reduce_window(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  int nv = in->nops / 2;
  tk_elem *red = reducer_of(x, in->calls[0], nv);
  if (!red || nv > 8) {
    if (red) tb_error(x->b, ST_UNSUPPORTED, "reduce-window of %d values (at most 8)", nv);
    return;
  }
  const ir_window *w = ir_window_of(in->a);
  tval *v0 = x->val[in->ops[0]];
  int rank = v0->rank;
  ir_padding_dim pd[IR_MAX_RANK];
  bool need_pad = false;
  for (int k = 0; k < rank; k++) {
    pd[k].lo = w->dims[k].pad_lo;
    pd[k].hi = w->dims[k].pad_hi;
    pd[k].interior = w->dims[k].lhs_dilate - 1;
    need_pad |= pd[k].lo || pd[k].hi || pd[k].interior;
  }
  const ir_shape *s0 = in->shape->type == IR_TUPLE ? &in->shape->tuple[0] : in->shape;
  int64_t O = 1, Wn = 1;
  for (int k = 0; k < rank; k++) {
    O *= s0->dims[k];
    Wn *= w->dims[k].size;
  }
  uint64_t xs[8], inits[8], os[8];
  tval *stk[8], **outs = arena_array(x->b->a, (size_t)nv, sizeof(tval *));
  for (int v = 0; v < nv; v++) {
    tval *src = x->val[in->ops[v]], *init = x->val[in->ops[nv + v]];
    tval *pv = need_pad ? tv_pad(x->b, src, init, pd, src->type) : src;
    int64_t sd[2] = {Wn, O};
    stk[v] = tv_new(x->b, src->type, 2, sd);
    int64_t ps[IR_MAX_RANK], ss[IR_MAX_RANK], ds[IR_MAX_RANK], wi[IR_MAX_RANK];
    tv_strides(pv, ps);
    {
      int64_t acc = 1;
      for (int k = rank - 1; k >= 0; k--) {
        ds[k] = acc;
        acc *= s0->dims[k];
      }
    }
    int es = tv_esize(src->type);
    for (int64_t wpos = 0; wpos < Wn && !x->b->failed; wpos++) {
      int64_t rem = wpos, off = 0;
      for (int k = rank - 1; k >= 0; k--) {
        wi[k] = rem % w->dims[k].size;
        rem /= w->dims[k].size;
      }
      for (int k = 0; k < rank; k++) {
        ss[k] = ps[k] * w->dims[k].stride;
        off += wi[k] * w->dims[k].rhs_dilate * ps[k];
      }
      tk_copy(x->b, tv_addr(stk[v]) + (uint64_t)(wpos * O * es), ds, tv_addr(pv) + (uint64_t)(off * es),
              ss, rank, s0->dims, es);
    }
    if (need_pad) tv_release(x->b, pv);
    xs[v] = tv_addr(stk[v]);
    inits[v] = tv_addr(init);
    const ir_shape *s = in->shape->type == IR_TUPLE ? &in->shape->tuple[v] : in->shape;
    outs[v] = tv_new(x->b, s->type, s->rank, s->dims);
    os[v] = tv_addr(outs[v]);
  }
  tk_fold(x->b, red, nv, xs, inits, os, Wn, O);
  for (int v = 0; v < nv; v++)
    tv_release(x->b, stk[v]);
  x->val[i] = result_val(x, in->shape, nv, outs);
}
