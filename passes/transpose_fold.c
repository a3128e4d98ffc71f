/* transpose_fold.c: transpose folding (XLA's TransposeFolding): a dot
 * reads a transposed operand straight from the transpose's operand.
 * require: a verified module.  provide: the same values bit for bit; in
 * every computation, each live dot whose lhs or rhs is a transpose with
 * permutation perm (result dim i = operand dim perm[i]) uses the
 * transpose's operand instead when
 *   (a) the fold keeps the value: the transposed operand's free dims
 *       (neither batch nor contracting) f0 < f1 < ... satisfy
 *       perm[f0] < perm[f1] < ... (the dot's result lists free dims in
 *       ascending order, so they must keep their relative order), and
 *   (b) the new operand is what the TPU's MXU reads without a copy:
 *       lhs dims in order = lhs_batch, free ascending, lhs_contracting
 *       (the identity: A as [batch..., M..., K...] row-major);
 *       rhs dims in order = rhs_batch, rhs_contracting, free ascending
 *       (B as [batch..., K..., N...], the normal weight load) or
 *       rhs_batch, free ascending, rhs_contracting (B as [batch..., N...,
 *       K...], the transposed weight load).
 * The side's dimension numbers are remapped in place of their list:
 * batch[i] -> perm[batch[i]], contracting[i] -> perm[contracting[i]], so
 * the contraction index order, and with it every backend's accumulation
 * order, is unchanged. A chain of transposes folds one at a time. The
 * transpose stays (DCE removes it when nothing else uses it). Every dot
 * with a transposed operand gets one explain line per side:
 *   transpose-folding: d: folded %t (rhs) into the dot: rhs contracting {1}
 *   transpose-folding: d: not folded %t (lhs): <reason> */
#include "passes/rewrite.h"

#define PASS "transpose-folding"

/* One side of a dot: its batch and contracting lists. */
typedef struct side {
  const char *name; /* "lhs" or "rhs" */
  ir_ints *batch, *contr;
} side;

static void print_ints(strbuf *b, const int64_t *v, int n) {
  sb_putc(b, '{');
  for (int i = 0; i < n; i++)
    sb_printf(b, "%s%lld", i ? "," : "", (long long)v[i]);
  sb_putc(b, '}');
}

/* Writes the free dims (neither in batch nor in contr) of a rank-r
 * operand, ascending, into free; returns their count. */
static int free_dims(int r, const int64_t *batch, int nb, const int64_t *contr, int nc,
                     int64_t *free) {
  bool used[IR_MAX_RANK] = {false};
  for (int i = 0; i < nb; i++)
    used[batch[i]] = true;
  for (int i = 0; i < nc; i++)
    used[contr[i]] = true;
  int nf = 0;
  for (int d = 0; d < r; d++)
    if (!used[d]) free[nf++] = d;
  return nf;
}

/* out = x ++ y ++ z. */
static void concat(int64_t *out, const int64_t *x, int nx, const int64_t *y, int ny,
                   const int64_t *z, int nz) {
  memcpy(out, x, (size_t)nx * sizeof *x);
  memcpy(out + nx, y, (size_t)ny * sizeof *y);
  memcpy(out + nx + ny, z, (size_t)nz * sizeof *z);
}

/* True when x ++ y ++ z is 0, 1, 2, ... */
static bool is_identity(const int64_t *x, int nx, const int64_t *y, int ny, const int64_t *z,
                        int nz) {
  int64_t v[IR_MAX_RANK];
  concat(v, x, nx, y, ny, z, nz);
  for (int i = 0; i < nx + ny + nz; i++)
    if (v[i] != i) return false;
  return true;
}

/* Tries to fold operand k (0 = lhs, 1 = rhs) of dot id, a transpose;
 * explains the decision and returns true when it folded. */
static bool fold_side(ir_module *m, ir_comp_id c, ir_id id, int k, pass_ctx *ctx) {
  ir_inst *dot = ir_inst_get(m, c, id);
  const ir_inst *t = ir_inst_get(m, c, dot->ops[k]);
  ir_attrs *da = ir_inst_attrs_mut(m, dot);
  side s = k == 0 ? (side){"lhs", &da->lhs_batch, &da->lhs_contracting}
                  : (side){"rhs", &da->rhs_batch, &da->rhs_contracting};
  const int64_t *perm = t->a->dimensions.v;
  const char *oname = ir_inst_get(m, c, t->ops[0])->info->name; /* the new operand's */
  int r = t->shape->rank, nb = s.batch->n, nc = s.contr->n;
  BASE_ASSERT(r <= IR_MAX_RANK && t->a->dimensions.n == r && nb + nc <= r);
  int64_t nbatch[IR_MAX_RANK], ncontr[IR_MAX_RANK], tfree[IR_MAX_RANK], ofree[IR_MAX_RANK];
  for (int i = 0; i < nb; i++)
    nbatch[i] = perm[s.batch->v[i]];
  for (int i = 0; i < nc; i++)
    ncontr[i] = perm[s.contr->v[i]];
  int nf = free_dims(r, s.batch->v, nb, s.contr->v, nc, tfree);
  free_dims(r, nbatch, nb, ncontr, nc, ofree);
  strbuf why;
  sb_init(&why);
  /* (a) the free dims keep their order: perm over them is increasing */
  for (int i = 0; i + 1 < nf; i++)
    if (perm[tfree[i]] > perm[tfree[i + 1]]) {
      int64_t from[IR_MAX_RANK];
      for (int j = 0; j < nf; j++)
        from[j] = perm[tfree[j]];
      sb_puts(&why, "free dims ");
      print_ints(&why, tfree, nf);
      sb_printf(&why, " of %%%s are dims ", t->info->name);
      print_ints(&why, from, nf);
      sb_printf(&why, " of %%%s, out of order: the fold would permute the result", oname);
      goto refuse;
    }
  /* (b) the MXU reads the new operand without a copy */
  bool direct = k == 0 ? is_identity(nbatch, nb, ofree, nf, ncontr, nc)
                       : is_identity(nbatch, nb, ncontr, nc, ofree, nf) ||
                             is_identity(nbatch, nb, ofree, nf, ncontr, nc);
  if (!direct) {
    int64_t order[IR_MAX_RANK];
    concat(order, nbatch, nb, ofree, nf, ncontr, nc);
    if (k == 0) {
      sb_printf(&why, "%%%s as [batch, M, K] would be its dims ", oname);
      print_ints(&why, order, r);
      sb_puts(&why, ", not in order: the MXU would need a copy");
    } else {
      sb_printf(&why, "%%%s as [batch, N, K] would be its dims ", oname);
      print_ints(&why, order, r);
      concat(order, nbatch, nb, ncontr, nc, ofree, nf);
      sb_puts(&why, " and as [batch, K, N] ");
      print_ints(&why, order, r);
      sb_puts(&why, ", neither in order: the MXU would need a copy");
    }
    goto refuse;
  }
  const char *tname = t->info->name;
  dot->ops[k] = t->ops[0]; /* t stays valid: no instruction is added */
  s.batch->v = nb ? arena_dup(m->arena, nbatch, (size_t)nb * sizeof(int64_t)) : NULL;
  s.contr->v = nc ? arena_dup(m->arena, ncontr, (size_t)nc * sizeof(int64_t)) : NULL;
  if (nb) {
    sb_printf(&why, "%s batch ", s.name);
    print_ints(&why, nbatch, nb);
    sb_puts(&why, ", ");
  }
  sb_printf(&why, "%s contracting ", s.name);
  print_ints(&why, ncontr, nc);
  pass_explain(ctx, PASS, dot->info->name,
               "folded %%%s (%s) into the dot: %s", tname, s.name,
               sb_str(&why));
  sb_free(&why);
  return true;
refuse:
  pass_explain(ctx, PASS, dot->info->name, "not folded %%%s (%s): %s",
               t->info->name, s.name, sb_str(&why));
  sb_free(&why);
  return false;
}

static bool fold_comp(ir_module *m, ir_comp_id c, pass_ctx *ctx) {
  bool changed = false;
  int n = ir_comp_get(m, c)->insts.n;
  for (ir_id i = 0; i < n; i++) {
    const ir_inst *in = ir_inst_get(m, c, i);
    if (in->dead || in->op != IR_OP_DOT) continue;
    for (int k = 0; k < 2; k++)
      while (ir_inst_get(m, c, ir_inst_get(m, c, i)->ops[k])->op == IR_OP_TRANSPOSE &&
             fold_side(m, c, i, k, ctx))
        changed = true;
  }
  return changed;
}

bool pass_transpose_fold(ir_module *m, pass_ctx *ctx) {
  bool changed = false;
  for (ir_comp_id c = 0; c < m->comps.n; c++)
    changed |= fold_comp(m, c, ctx);
  return changed;
}
