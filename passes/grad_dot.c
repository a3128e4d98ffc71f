/* grad_dot.c: the VJP of dot (dot_general). Each operand's adjoint is
 * one dot of the result's adjoint g with the other operand, contracting
 * the other operand's free dimensions with g's and keeping the batch
 * dimensions; the operands are taken in the order (g, other) or (other,
 * g) whose result already has the operand's dimension order, so that for
 * the ordinary [M,K]x[K,N] case neither adjoint needs a transpose
 * (dlhs = g . rhs contracting g1 with rhs1, drhs = lhs . g contracting
 * lhs0 with g0); otherwise one transpose of the result restores the
 * order. The dot runs in g's element type (a narrower other operand is
 * converted up) and its result is converted to the operand's type. */
#include "passes/grad_internal.h"

/* The dims of a rank-r operand in neither list, ascending. */
static int free_dims(int r, ir_ints batch, ir_ints contr, int64_t *out) {
  int n = 0;
  for (int d = 0; d < r; d++) {
    bool used = false;
    for (int k = 0; k < batch.n; k++) used = used || batch.v[k] == d;
    for (int k = 0; k < contr.n; k++) used = used || contr.v[k] == d;
    if (!used) out[n++] = d;
  }
  return n;
}

/* perm[k] = the position of x dim k in R (n entries); returns whether it
 * is the identity. */
static bool perm_of(const int64_t *R, int n, int64_t *perm) {
  bool id = true;
  for (int k = 0; k < n; k++)
    for (int j = 0; j < n; j++)
      if (R[j] == k) {
        perm[k] = j;
        id = id && j == k;
      }
  return id;
}

typedef struct side {
  ir_id x, y;           /* the operand differentiated and the other (backward values) */
  ir_ints xb, xc, yb, yc; /* their batch and contracting lists */
  bool x_is_lhs;
} side;

static ir_id operand_adjoint(gr_ctx *g, ir_id ct, const side *s, const ir_attrs *fa) {
  int rx = gr_shape(g, s->x)->rank, ry = gr_shape(g, s->y)->rank, nb = s->xb.n;
  int64_t xk[IR_MAX_RANK], yk[IR_MAX_RANK], gb[IR_MAX_RANK], gyk[IR_MAX_RANK];
  int nxk = free_dims(rx, s->xb, s->xc, xk), nyk = free_dims(ry, s->yb, s->yc, yk);
  for (int k = 0; k < nb; k++) gb[k] = k;
  for (int j = 0; j < nyk; j++) gyk[j] = s->x_is_lhs ? nb + nxk + j : nb + j;
  /* x dims of the other operand's free dims in a dot result: y's
   * contracting dims ascending, each mapped to x's partner */
  int64_t ycx[IR_MAX_RANK];
  int n = 0;
  for (int d = 0; d < ry; d++)
    for (int p = 0; p < s->yc.n; p++)
      if (s->yc.v[p] == d) ycx[n++] = s->xc.v[p];
  int64_t RA[IR_MAX_RANK], RB[IR_MAX_RANK], pa[IR_MAX_RANK], pb[IR_MAX_RANK];
  int na = 0, nbb = 0;
  for (int k = 0; k < nb; k++) RA[na++] = RB[nbb++] = s->xb.v[k];
  for (int j = 0; j < nxk; j++) RA[na++] = xk[j];
  for (int j = 0; j < n; j++) RA[na++] = RB[nbb++] = ycx[j];
  for (int j = 0; j < nxk; j++) RB[nbb++] = xk[j];
  bool ida = perm_of(RA, rx, pa), idb = perm_of(RB, rx, pb);
  bool use_b = !ida && idb;
  ir_type t = gr_shape(g, ct)->type;
  ir_id y = gr_convert(g, s->y, t);
  ir_attrs a = ir_attrs_none;
  a.precision[0] = fa->precision[0];
  a.precision[1] = fa->precision[1];
  ir_ints gbl = {nb, gb}, gcl = {nyk, gyk}, ykl = {nyk, yk};
  a.lhs_batch = use_b ? s->yb : gbl;
  a.rhs_batch = use_b ? gbl : s->yb;
  a.lhs_contracting = use_b ? ykl : gcl;
  a.rhs_contracting = use_b ? gcl : ykl;
  ir_id d = use_b ? gr_build(g, IR_OP_DOT, (ir_id[]){y, ct}, 2, &a) : gr_build(g, IR_OP_DOT, (ir_id[]){ct, y}, 2, &a);
  d = gr_transpose(g, d, use_b ? pb : pa);
  return gr_convert(g, d, gr_shape(g, s->x)->type);
}

bool gr_dot(gr_ctx *g, ir_id i, ir_id ct) {
  ir_id l = gr_inst(g, i)->ops[0], r = gr_inst(g, i)->ops[1];
  const ir_attrs *fa = gr_inst(g, i)->a; /* attributes live in the arena: stable */
  if (gr_wants(g, l)) {
    side s = {l, gr_fwd(g, r), fa->lhs_batch, fa->lhs_contracting, fa->rhs_batch, fa->rhs_contracting, true};
    gr_accum(g, l, operand_adjoint(g, ct, &s, fa));
  }
  if (gr_wants(g, r)) {
    side s = {r, gr_fwd(g, l), fa->rhs_batch, fa->rhs_contracting, fa->lhs_batch, fa->lhs_contracting, false};
    gr_accum(g, r, operand_adjoint(g, ct, &s, fa));
  }
  return true;
}
