/* gsdims.c: random gather/scatter dimension numbers (gsdims.h). */
#include "tests/common/gsdims.h"
#include "tests/common/testgen.h"

static int pick(uint64_t *rs, int n) { return n > 0 ? (int)(tc_splitmix(rs) % (uint64_t)n) : 0; }

static bool listed(const int64_t *v, int n, int64_t d) {
  for (int i = 0; i < n; i++)
    if (v[i] == d) return true;
  return false;
}

void tc_rand_gsdims(uint64_t *rs, arena *ar, const ir_shape *x, ir_type index_type, tc_gsdims *o) {
  memset(o, 0, sizeof *o);
  o->a.preferred_type = IR_TYPE_INVALID;
  int r = x->rank;
  int64_t map[IR_MAX_RANK], col[IR_MAX_RANK], ob = -1;
  int nm = 0, nc = 0;
  for (int d = 0; d < r; d++) {
    o->win[d] = pick(rs, 6) ? 1 + pick(rs, (int)x->dims[d]) : pick(rs, (int)x->dims[d] + 1);
    if (pick(rs, 2) || (d == r - 1 && nm == 0)) map[nm++] = d;
  }
  for (int i = nm - 1; i > 0; i--) { /* the index vector's order is free */
    int j = pick(rs, i + 1);
    int64_t t = map[i];
    map[i] = map[j], map[j] = t;
  }
  o->nb = pick(rs, 3);
  for (int b = 0; b < o->nb; b++) o->bd[b] = 1 + pick(rs, 5);
  for (int d = 0; d < r; d++) {
    if (!listed(map, nm, d) && ob < 0 && o->nb > 0 && pick(rs, 3) == 0) {
      ob = d, o->win[d] = 1, o->bd[0] = x->dims[d]; /* batching: indices dim 0 */
    } else if (o->win[d] <= 1 && pick(rs, 2)) {
      col[nc++] = d;
    }
  }
  for (int d = 0; d < r; d++)
    if (!listed(col, nc, d) && d != ob) o->wsz[o->nw++] = o->win[d];
  o->a.index_map = tc_ints(ar, nm, map);
  o->a.collapsed_dims = tc_ints(ar, nc, col);
  if (ob >= 0) {
    int64_t zero = 0;
    o->a.operand_batching = tc_ints(ar, 1, &ob);
    o->a.index_batching = tc_ints(ar, 1, &zero);
  }
  int64_t id[IR_MAX_RANK];
  for (int b = 0; b < o->nb; b++) id[b] = o->bd[b];
  bool implicit = nm == 1 && pick(rs, 2);
  if (!implicit) id[o->nb] = nm;
  o->a.index_vector_dim = o->nb;
  o->ix = ir_shape_array(index_type, o->nb + !implicit, id);
  /* the window's positions among the result's dims */
  int rank = o->nw + o->nb;
  int64_t p[IR_MAX_RANK];
  int n = 0;
  for (int i = 0; i < rank && n < o->nw; i++)
    if (rank - i == o->nw - n || pick(rs, 2)) p[n++] = i;
  o->a.window_dims = tc_ints(ar, n, p);
  for (int i = 0, j = 0, b = 0; i < rank; i++)
    o->out[i] = j < n && p[j] == i ? o->wsz[j++] : o->bd[b++];
}

void tc_rand_sas_window(uint64_t *rs, const ir_shape *x, ir_window *w, int64_t *src_dims) {
  memset(w, 0, sizeof *w);
  w->rank = x->rank;
  for (int d = 0; d < x->rank; d++) {
    ir_window_dim *wd = &w->dims[d];
    wd->size = 1 + pick(rs, (int)(x->dims[d] < 3 ? x->dims[d] : 3));
    wd->stride = 1 + pick(rs, 3);
    wd->lhs_dilate = wd->rhs_dilate = 1;
    wd->pad_lo = pick(rs, 2), wd->pad_hi = pick(rs, 2);
    src_dims[d] = (x->dims[d] + wd->pad_lo + wd->pad_hi - wd->size) / wd->stride + 1;
  }
}
