/* eval_dot.c: dot with general dimension numbers.
 *
 * Result dims: the batch dims (in lhs_batch order), then lhs's free dims,
 * then rhs's free dims (free = neither batch nor contracting, ascending).
 *
 * Numerics (fixed; backends are compared against this):
 *  - The result element type is the instruction's shape type (which is the
 *    preferred_element_type when one is given). Both operands are first
 *    converted to it, as XLA's evaluator does (so f32 operands of a bf16
 *    dot are rounded to bf16 before multiplying).
 *  - Float results: each product is an f32 multiply of the (exactly
 *    widened) operands and is added to an f32 accumulator that starts at
 *    +0, in ascending contraction index order: row-major over the
 *    contracting dims taken in lhs_contracting_dimensions order. The sum is
 *    rounded to the result type once at the end (nearest even).
 *  - Integer and pred results: products and sums in int64 with two's
 *    complement wraparound (computed in uint64), wrapped to the result type
 *    at the end; pred results are "any product nonzero".
 *  - operand_precision is ignored: the oracle always computes as above.
 *
 * Implementation: both operands are permuted to [batch, free, contracting]
 * row-major, so each output element is one contiguous inner product. */
#include "ir/eval_internal.h"

/* Checks one operand's batch and contracting lists and builds its
 * permutation [batch..., free..., contracting...]; nfree gets the count. */
static base_status operand_perm(ev_ctx *cx, const ir_inst *in, const char *side, const ir_shape *s,
                                const ir_ints *batch, const ir_ints *contr, int64_t *perm,
                                int *nfree) {
  bool used[IR_MAX_RANK] = {false};
  int np = 0;
  for (int pass = 0; pass < 2; pass++) {
    const ir_ints *l = pass == 0 ? batch : contr;
    for (int i = 0; i < l->n; i++) {
      int64_t d = l->v[i];
      if (d < 0 || d >= s->rank || used[d])
        return ev_fail(cx, in, ST_INVALID_ARGUMENT, "%s dimension %lld invalid or repeated", side,
                       (long long)d);
      used[d] = true;
    }
  }
  for (int i = 0; i < batch->n; i++)
    perm[np++] = batch->v[i];
  *nfree = 0;
  for (int d = 0; d < s->rank; d++)
    if (!used[d]) {
      perm[np++] = d;
      (*nfree)++;
    }
  for (int i = 0; i < contr->n; i++)
    perm[np++] = contr->v[i];
  return ST_OK;
}

/* A float dot under TPU numerics (eval_tpu.c): the operands' bf16 parts
 * permuted to [B, M, K] and [B, N, K]; per output, from +0, the passes in
 * order, each over k ascending, one fused multiply-add per product. */
static base_status dot_tpu(ev_ctx *cx, const ir_inst *in, const ir_literal *lhs,
                           const ir_literal *rhs, const int64_t *lp, const int64_t *rp, int64_t B,
                           int64_t M, int64_t N, int64_t K, ir_literal **out) {
  ir_type rt = in->shape->type;
  int P = ev_tpu_passes(in, lhs->shape.type, rhs->shape.type), np = P == 6 ? 3 : P == 3 ? 2 : 1;
  base_status st = ev_work(cx, in, (double)B * (double)M * (double)N * (double)K * P);
  ir_literal *lparts[3], *rparts[3], *r;
  if (st == ST_OK) st = ev_tpu_parts(cx, in, lhs, np, lparts);
  if (st == ST_OK) st = ev_tpu_parts(cx, in, rhs, np, rparts);
  for (int p = 0; p < np && st == ST_OK; p++) {
    if ((st = ev_permute(cx, in, lparts[p], lp, &lparts[p])) != ST_OK) break;
    st = ev_permute(cx, in, rparts[p], rp, &rparts[p]);
  }
  if (st == ST_OK) st = ev_new_array(cx, in, in->shape, &r);
  if (st != ST_OK) return st;
  size_t es = (size_t)ir_type_size(rt);
  uint8_t *po = r->data;
  for (int64_t bi = 0; bi < B; bi++)
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        float acc = 0.0f;
        for (int p = 0; p < P; p++) {
          const float *x = (const float *)lparts[ev_tpu_pair_a[p]]->data + (bi * M + m) * K;
          const float *y = (const float *)rparts[ev_tpu_pair_b[p]]->data + (bi * N + n) * K;
          for (int64_t k = 0; k < K; k++) acc = ev_tpu_mac(acc, x[k], y[k]);
        }
        ev_tpu_store(rt, po + (size_t)((bi * M + m) * N + n) * es, acc);
      }
  *out = r;
  return ST_OK;
}

/* f64 results: the f32 rule in double (a double accumulator from +0,
 * ascending k, one IEEE multiply and add per product). */
static void dot_f64(const double *a, const double *b, double *o, int64_t B, int64_t M, int64_t N,
                    int64_t K) {
  for (int64_t bi = 0; bi < B; bi++)
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        const double *x = a + (bi * M + m) * K, *y = b + (bi * N + n) * K;
        double acc = 0.0;
        for (int64_t k = 0; k < K; k++) acc += x[k] * y[k];
        o[(bi * M + m) * N + n] = acc;
      }
}

base_status ev_dot(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  const ir_literal *lhs = ops[0], *rhs = ops[1];
  const ir_attrs *at = in->a;
  ir_type rt = in->shape->type;
  if (at->lhs_batch.n != at->rhs_batch.n || at->lhs_contracting.n != at->rhs_contracting.n)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT,
                   "lhs and rhs have different numbers of batch or contracting dimensions");
  int64_t lp[IR_MAX_RANK], rp[IR_MAX_RANK];
  int lfree, rfree;
  base_status st =
      operand_perm(cx, in, "lhs", &lhs->shape, &at->lhs_batch, &at->lhs_contracting, lp, &lfree);
  if (st == ST_OK)
    st = operand_perm(cx, in, "rhs", &rhs->shape, &at->rhs_batch, &at->rhs_contracting, rp, &rfree);
  if (st != ST_OK) return st;

  int nb = at->lhs_batch.n, nc = at->lhs_contracting.n;
  int64_t B = 1, M = 1, N = 1, K = 1;
  int64_t want[IR_MAX_RANK * 2];
  int nw = 0;
  for (int i = 0; i < nb; i++) {
    int64_t a = lhs->shape.dims[at->lhs_batch.v[i]], b = rhs->shape.dims[at->rhs_batch.v[i]];
    if (a != b)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "batch dimension %d sizes differ (%lld vs %lld)",
                     i, (long long)a, (long long)b);
    want[nw++] = a;
    B *= a;
  }
  for (int i = 0; i < lfree; i++)
    M *= (want[nw++] = lhs->shape.dims[lp[nb + i]]);
  for (int i = 0; i < rfree; i++)
    N *= (want[nw++] = rhs->shape.dims[rp[nb + i]]);
  for (int i = 0; i < nc; i++) {
    int64_t a = lhs->shape.dims[at->lhs_contracting.v[i]],
            b = rhs->shape.dims[at->rhs_contracting.v[i]];
    if (a != b)
      return ev_fail(cx, in, ST_INVALID_ARGUMENT,
                     "contracting dimension %d sizes differ (%lld vs %lld)", i, (long long)a,
                     (long long)b);
    K *= a;
  }
  if (nw != in->shape->rank)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "result rank %d, expected %d",
                   (int) in->shape->rank,
                   nw);
  for (int i = 0; i < nw; i++)
    if (want[i] != in->shape->dims[i])
      return ev_fail(cx, in, ST_INVALID_ARGUMENT, "result dimension %d is %lld, expected %lld", i,
                     (long long) in->shape->dims[i], (long long)want[i]);

  if (cx->opts.tpu_numerics && ir_type_is_float(rt) && ir_type_is_float(lhs->shape.type) &&
      ir_type_is_float(rhs->shape.type))
    return dot_tpu(cx, in, lhs, rhs, lp, rp, B, M, N, K, out);
  if ((st = ev_work(cx, in, (double)B * (double)M * (double)N * (double)K)) != ST_OK) return st;

  /* Convert to the result type, then pack as [B, M, K] and [B, N, K]. */
  ir_literal *lc = (ir_literal *)lhs, *rc = (ir_literal *)rhs, *a, *b, *r;
  if (lhs->shape.type != rt && (st = ev_convert_to(cx, in, lhs, rt, &lc)) != ST_OK) return st;
  if (rhs->shape.type != rt && (st = ev_convert_to(cx, in, rhs, rt, &rc)) != ST_OK) return st;
  if ((st = ev_permute(cx, in, lc, lp, &a)) != ST_OK) return st;
  if ((st = ev_permute(cx, in, rc, rp, &b)) != ST_OK) return st;
  if ((st = ev_new_array(cx, in, in->shape, &r)) != ST_OK) return st;
  int64_t na = ir_shape_count(&a->shape), nbv = ir_shape_count(&b->shape);
  size_t es = (size_t)ir_type_size(rt);
  const uint8_t *pa = a->data, *pb = b->data;
  uint8_t *po = r->data;

  if (rt == IR_F64) {
    double *da, *db;
    if ((st = ev_widen(cx, in, rt, pa, na, (void **)&da)) != ST_OK) return st;
    if ((st = ev_widen(cx, in, rt, pb, nbv, (void **)&db)) != ST_OK) return st;
    dot_f64(da, db, (double *)r->data, B, M, N, K);
  } else if (ir_type_is_float(rt)) {
    float *fa, *fb;
    if ((st = ev_widen(cx, in, rt, pa, na, (void **)&fa)) != ST_OK) return st;
    if ((st = ev_widen(cx, in, rt, pb, nbv, (void **)&fb)) != ST_OK) return st;
    for (int64_t bi = 0; bi < B; bi++)
      for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
          const float *x = fa + (bi * M + m) * K, *y = fb + (bi * N + n) * K;
          float acc = 0.0f;
          for (int64_t k = 0; k < K; k++) {
            float p = x[k] * y[k];
            acc += p;
          }
          ev_store_f(rt, po + (size_t)((bi * M + m) * N + n) * es, acc);
        }
  } else {
    int64_t *ia, *ib;
    if ((st = ev_widen(cx, in, rt, pa, na, (void **)&ia)) != ST_OK) return st;
    if ((st = ev_widen(cx, in, rt, pb, nbv, (void **)&ib)) != ST_OK) return st;
    for (int64_t bi = 0; bi < B; bi++)
      for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
          const int64_t *x = ia + (bi * M + m) * K, *y = ib + (bi * N + n) * K;
          uint64_t acc = 0;
          bool any = false;
          for (int64_t k = 0; k < K; k++) {
            uint64_t p = (uint64_t)x[k] * (uint64_t)y[k];
            acc += p;
            any |= p != 0;
          }
          ev_store_i(rt, po + (size_t)((bi * M + m) * N + n) * es,
                     rt == IR_PRED ? (int64_t)any : ev_wrap(rt, acc));
        }
  }
  *out = r;
  return ST_OK;
}
