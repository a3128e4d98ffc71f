/* test_eval_random.c: random but valid convolutions, reduce-windows, dots,
 * pads and slices (random dim labels, sizes including 0 and 1, strides,
 * negative and interior padding, both dilations, reversal, feature and
 * batch groups) compared with each op's definition written out directly
 * with multi-indices. Integer data keeps every sum exact, so the
 * comparison is exact. Fixed seed; runs under ASan and UBSan in CI. */
#include "eval_test.h"

static uint64_t rng_state;

static uint64_t rnd(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}

static int64_t pick(int64_t lo, int64_t hi) {
  return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static ir_attrs attrs(void) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  return a;
}

/* Row-major linear index. */
static int64_t lin(int rank, const int64_t *dims, const int64_t *idx) {
  int64_t l = 0;
  for (int i = 0; i < rank; i++)
    l = l * dims[i] + idx[i];
  return l;
}

static bool next_index(int rank, const int64_t *dims, int64_t *idx) {
  for (int i = rank - 1; i >= 0; i--) {
    if (++idx[i] < dims[i]) return true;
    idx[i] = 0;
  }
  return false;
}

static int64_t count(int rank, const int64_t *dims) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++)
    n *= dims[i];
  return n;
}

static void shuffle(int8_t *p, int n) {
  for (int i = 0; i < n; i++)
    p[i] = (int8_t)i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)pick(0, i);
    int8_t t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
}

/* An s32 argument with small random values (also returned as int64s). */
static ir_literal *rand_arg(tb *t, int rank, const int64_t *dims, int64_t **vals) {
  ir_shape s = ir_shape_array(IR_S32, rank, dims);
  ir_literal *l = ir_literal_create(t->out, &s);
  int64_t n = count(rank, dims);
  *vals = arena_array(t->out, (size_t)(n ? n : 1), sizeof(int64_t));
  for (int64_t i = 0; i < n; i++) {
    (*vals)[i] = pick(-3, 3);
    ir_literal_set_i64(l, i, (*vals)[i]);
  }
  return l;
}

static int64_t out_size(int64_t n, int64_t size, int64_t stride, int64_t lo, int64_t hi,
                        int64_t ldil, int64_t rdil) {
  int64_t padded = (n > 0 ? (n - 1) * ldil + 1 : 0) + lo + hi;
  int64_t eff = (size - 1) * rdil + 1;
  return padded < eff ? 0 : (padded - eff) / stride + 1;
}

static void random_convolutions_match_definition(void **state) {
  (void)state;
  rng_state = 12345;
  for (int iter = 0; iter < 400; iter++) {
    int ns = (int)pick(0, 2), rank = ns + 2;
    int8_t lp[IR_MAX_RANK], kp[IR_MAX_RANK], op[IR_MAX_RANK];
    shuffle(lp, rank);
    shuffle(kp, rank);
    shuffle(op, rank);
    int64_t fgc = 1, bgc = 1;
    if (pick(0, 1))
      fgc = pick(1, 3);
    else
      bgc = pick(1, 3);
    int64_t cg = pick(1, 2), in_f = fgc * cg, in_b = bgc * pick(0, 2);
    int64_t k_o = fgc * bgc * pick(1, 2);
    int64_t ld[IR_MAX_RANK], kd[IR_MAX_RANK], od[IR_MAX_RANK];
    ir_attrs a = attrs();
    a.conv.nspatial = ns;
    a.conv.in_batch = lp[0], a.conv.in_feature = lp[1];
    a.conv.k_out = kp[0], a.conv.k_in = kp[1];
    a.conv.out_batch = op[0], a.conv.out_feature = op[1];
    ld[lp[0]] = in_b, ld[lp[1]] = in_f;
    kd[kp[0]] = k_o, kd[kp[1]] = cg;
    od[op[0]] = in_b / bgc, od[op[1]] = k_o;
    ir_window win_a;
    memset(&win_a, 0, sizeof win_a);
    a.window = &win_a;
    win_a.rank = ns;
    a.feature_group_count = fgc;
    a.batch_group_count = bgc;
    for (int i = 0; i < ns; i++) {
      a.conv.in_spatial[i] = lp[2 + i];
      a.conv.k_spatial[i] = kp[2 + i];
      a.conv.out_spatial[i] = op[2 + i];
      ir_window_dim w = {pick(1, 3), pick(1, 3), pick(-1, 2),    pick(-1, 2),
                         pick(1, 3), pick(1, 2), pick(0, 1) != 0};
      win_a.dims[i] = w;
      ld[lp[2 + i]] = pick(0, 4);
      kd[kp[2 + i]] = w.size;
      od[op[2 + i]] =
          out_size(ld[lp[2 + i]], w.size, w.stride, w.pad_lo, w.pad_hi, w.lhs_dilate, w.rhs_dilate);
      if (od[op[2 + i]] < 0) od[op[2 + i]] = 0;
    }
    tb t;
    tb_init(&t);
    int64_t *lv, *kv;
    ir_literal *args[2] = {rand_arg(&t, rank, ld, &lv), rand_arg(&t, rank, kd, &kv)};
    ir_id x = tb_param(&t, 0, args[0]->shape), y = tb_param(&t, 1, args[1]->shape);
    ir_id c = OP2(&t, IR_OP_CONVOLUTION, ir_shape_array(IR_S32, rank, od), &a, x, y);
    ir_literal *res = tb_run(&t, c, args, 2);

    /* the definition, one output element at a time */
    int64_t oi[IR_MAX_RANK] = {0}, nout = count(rank, od);
    for (int64_t e = 0; e < nout; e++, next_index(rank, od, oi)) {
      int64_t b = oi[op[0]], f = oi[op[1]];
      int64_t gf = f / (k_o / fgc), gb = f / (k_o / bgc);
      int64_t sum = 0;
      int64_t wsz[IR_MAX_RANK], k[IR_MAX_RANK] = {0};
      for (int i = 0; i < ns; i++)
        wsz[i] = win_a.dims[i].size;
      do {
        int64_t li[IR_MAX_RANK], ki[IR_MAX_RANK];
        bool inside = true;
        for (int i = 0; i < ns && inside; i++) {
          const ir_window_dim *w = &win_a.dims[i];
          int64_t p = oi[op[2 + i]] * w->stride + k[i] * w->rhs_dilate - w->pad_lo;
          inside = p >= 0 && p % w->lhs_dilate == 0 && p / w->lhs_dilate < ld[lp[2 + i]];
          li[lp[2 + i]] = inside ? p / w->lhs_dilate : 0;
          ki[kp[2 + i]] = w->reversal ? w->size - 1 - k[i] : k[i];
        }
        if (!inside) continue;
        for (int64_t z = 0; z < cg; z++) {
          li[lp[0]] = gb * (in_b / bgc) + b;
          li[lp[1]] = gf * cg + z;
          ki[kp[0]] = f;
          ki[kp[1]] = z;
          sum += lv[lin(rank, ld, li)] * kv[lin(rank, kd, ki)];
        }
      } while (next_index(ns, wsz, k));
      if (ir_literal_get_i64(res, e) != sum)
        fail_msg("case %d element %lld: got %lld, expected %lld", iter, (long long)e,
                 (long long)ir_literal_get_i64(res, e), (long long)sum);
    }
    tb_free(&t);
  }
}

static void random_reduce_windows_match_definition(void **state) {
  (void)state;
  rng_state = 777;
  for (int iter = 0; iter < 400; iter++) {
    int rank = (int)pick(1, 3);
    int64_t dims[IR_MAX_RANK], od[IR_MAX_RANK];
    ir_attrs a = attrs();
    ir_window win_a;
    memset(&win_a, 0, sizeof win_a);
    a.window = &win_a;
    win_a.rank = rank;
    for (int d = 0; d < rank; d++) {
      ir_window_dim w = {pick(1, 3), pick(1, 3), pick(-2, 2), pick(-2, 2),
                         pick(1, 3), pick(1, 3), false};
      win_a.dims[d] = w;
      dims[d] = pick(0, 4);
      od[d] = out_size(dims[d], w.size, w.stride, w.pad_lo, w.pad_hi, w.lhs_dilate, w.rhs_dilate);
      if (od[d] < 0) od[d] = 0;
    }
    tb t;
    tb_init(&t);
    ir_comp_id f =
        pick(0, 1) ? tb_binary_comp(&t, IR_OP_ADD, IR_S32) : tb_slow_add_comp(&t, IR_S32);
    int64_t *v, init = pick(-5, 5);
    ir_literal *arg = rand_arg(&t, rank, dims, &v);
    ir_id x = tb_param(&t, 0, arg->shape), i0 = tb_scalar(&t, IR_S32, (double)init);
    ir_id r = tb_op(&t, IR_OP_REDUCE_WINDOW, ir_shape_array(IR_S32, rank, od), &a, 2,
                    (ir_id[]){x, i0}, 1, &f);
    ir_literal *res = tb_run(&t, r, &arg, 1);
    int64_t oi[IR_MAX_RANK] = {0}, nout = count(rank, od);
    for (int64_t e = 0; e < nout; e++, next_index(rank, od, oi)) {
      int64_t sum = init, wsz[IR_MAX_RANK], k[IR_MAX_RANK] = {0}, xi[IR_MAX_RANK];
      for (int d = 0; d < rank; d++)
        wsz[d] = win_a.dims[d].size;
      do {
        bool inside = true;
        for (int d = 0; d < rank && inside; d++) {
          const ir_window_dim *w = &win_a.dims[d];
          int64_t p = oi[d] * w->stride + k[d] * w->rhs_dilate - w->pad_lo;
          inside = p >= 0 && p % w->lhs_dilate == 0 && p / w->lhs_dilate < dims[d];
          xi[d] = inside ? p / w->lhs_dilate : 0;
        }
        if (inside) sum += v[lin(rank, dims, xi)];
      } while (next_index(rank, wsz, k));
      assert_int_equal(ir_literal_get_i64(res, e), sum);
    }
    tb_free(&t);
  }
}

static void random_dots_match_definition(void **state) {
  (void)state;
  rng_state = 4242;
  for (int iter = 0; iter < 300; iter++) {
    int nb = (int)pick(0, 2), nc = (int)pick(0, 2), nlf = (int)pick(0, 2), nrf = (int)pick(0, 1);
    int lrank = nb + nc + nlf, rrank = nb + nc + nrf;
    int8_t lp[IR_MAX_RANK], rp[IR_MAX_RANK];
    shuffle(lp, lrank); /* lp[role slot] = dimension number */
    shuffle(rp, rrank);
    int64_t bsz[2], csz[2], ld[IR_MAX_RANK], rd[IR_MAX_RANK];
    ir_attrs a = attrs();
    int64_t lb[2], rb[2], lc[2], rc[2];
    for (int i = 0; i < nb; i++) {
      bsz[i] = pick(0, 3);
      lb[i] = lp[i], rb[i] = rp[i];
      ld[lb[i]] = rd[rb[i]] = bsz[i];
    }
    for (int i = 0; i < nc; i++) {
      csz[i] = pick(0, 3);
      lc[i] = lp[nb + i], rc[i] = rp[nb + i];
      ld[lc[i]] = rd[rc[i]] = csz[i];
    }
    for (int i = nb + nc; i < lrank; i++)
      ld[lp[i]] = pick(1, 3);
    for (int i = nb + nc; i < rrank; i++)
      rd[rp[i]] = pick(1, 3);
    a.lhs_batch = (ir_ints){nb, lb}, a.rhs_batch = (ir_ints){nb, rb};
    a.lhs_contracting = (ir_ints){nc, lc}, a.rhs_contracting = (ir_ints){nc, rc};
    /* free dims in ascending dimension order */
    int64_t od[IR_MAX_RANK];
    int orank = 0, lfree[IR_MAX_RANK], rfree[IR_MAX_RANK], nl = 0, nr = 0;
    for (int i = 0; i < nb; i++)
      od[orank++] = bsz[i];
    for (int d = 0; d < lrank; d++) {
      bool role = false;
      for (int i = 0; i < nb + nc; i++)
        role |= lp[i] == d;
      if (!role) lfree[nl++] = d, od[orank++] = ld[d];
    }
    for (int d = 0; d < rrank; d++) {
      bool role = false;
      for (int i = 0; i < nb + nc; i++)
        role |= rp[i] == d;
      if (!role) rfree[nr++] = d, od[orank++] = rd[d];
    }
    tb t;
    tb_init(&t);
    int64_t *lv, *rv;
    ir_literal *args[2] = {rand_arg(&t, lrank, ld, &lv), rand_arg(&t, rrank, rd, &rv)};
    ir_id x = tb_param(&t, 0, args[0]->shape), y = tb_param(&t, 1, args[1]->shape);
    ir_id r = OP2(&t, IR_OP_DOT, ir_shape_array(IR_S32, orank, od), &a, x, y);
    ir_literal *res = tb_run(&t, r, args, 2);
    int64_t oi[IR_MAX_RANK] = {0}, nout = count(orank, od);
    for (int64_t e = 0; e < nout; e++, next_index(orank, od, oi)) {
      int64_t li[IR_MAX_RANK], ri[IR_MAX_RANK], ci[2] = {0, 0}, sum = 0;
      for (int i = 0; i < nb; i++)
        li[lb[i]] = ri[rb[i]] = oi[i];
      for (int i = 0; i < nl; i++)
        li[lfree[i]] = oi[nb + i];
      for (int i = 0; i < nr; i++)
        ri[rfree[i]] = oi[nb + nl + i];
      if (count(nc, csz) > 0) do {
          for (int i = 0; i < nc; i++)
            li[lc[i]] = ri[rc[i]] = ci[i];
          sum += lv[lin(lrank, ld, li)] * rv[lin(rrank, rd, ri)];
        } while (next_index(nc, csz, ci));
      assert_int_equal(ir_literal_get_i64(res, e), sum);
    }
    tb_free(&t);
  }
}

static void random_pads_and_slices_match_definition(void **state) {
  (void)state;
  rng_state = 99;
  for (int iter = 0; iter < 400; iter++) {
    int rank = (int)pick(0, 3);
    int64_t dims[IR_MAX_RANK], od[IR_MAX_RANK], sd[IR_MAX_RANK];
    ir_padding_dim pd[IR_MAX_RANK];
    int64_t st[IR_MAX_RANK], li[IR_MAX_RANK], sp[IR_MAX_RANK];
    bool valid = true;
    for (int d = 0; d < rank; d++) {
      dims[d] = pick(0, 4);
      pd[d] = (ir_padding_dim){pick(-3, 3), pick(-3, 3), pick(0, 2)};
      od[d] = pd[d].lo + pd[d].hi + dims[d] + (dims[d] > 0 ? (dims[d] - 1) * pd[d].interior : 0);
      valid &= od[d] >= 0;
      st[d] = pick(0, dims[d]);
      li[d] = pick(st[d], dims[d]);
      sp[d] = pick(1, 3);
      sd[d] = (li[d] - st[d] + sp[d] - 1) / sp[d];
    }
    if (!valid) continue;
    tb t;
    tb_init(&t);
    int64_t *v;
    ir_literal *arg = rand_arg(&t, rank, dims, &v);
    ir_attrs a = attrs();
    a.npad = rank;
    a.padding = pd;
    ir_id x = tb_param(&t, 0, arg->shape), pv = tb_scalar(&t, IR_S32, 9);
    ir_id p = OP2(&t, IR_OP_PAD, ir_shape_array(IR_S32, rank, od), &a, x, pv);
    ir_literal *res = tb_run(&t, p, &arg, 1);
    int64_t oi[IR_MAX_RANK] = {0}, xi[IR_MAX_RANK];
    for (int64_t e = 0; e < count(rank, od); e++, next_index(rank, od, oi)) {
      bool from = true; /* output o comes from operand (o - lo) / (interior + 1) */
      for (int d = 0; d < rank; d++) {
        int64_t j = oi[d] - pd[d].lo, s = pd[d].interior + 1;
        from &= j >= 0 && j % s == 0 && j / s < dims[d];
        xi[d] = from ? j / s : 0;
      }
      assert_int_equal(ir_literal_get_i64(res, e), from ? v[lin(rank, dims, xi)] : 9);
    }
    tb_free(&t);

    tb_init(&t);
    arg = rand_arg(&t, rank, dims, &v);
    a = attrs();
    a.slice_start = (ir_ints){rank, st};
    a.slice_limit = (ir_ints){rank, li};
    a.slice_stride = (ir_ints){rank, sp};
    x = tb_param(&t, 0, arg->shape);
    ir_id s = OP1(&t, IR_OP_SLICE, ir_shape_array(IR_S32, rank, sd), &a, x);
    res = tb_run(&t, s, &arg, 1);
    int64_t si[IR_MAX_RANK] = {0};
    for (int64_t e = 0; e < count(rank, sd); e++, next_index(rank, sd, si)) {
      for (int d = 0; d < rank; d++)
        xi[d] = st[d] + si[d] * sp[d];
      assert_int_equal(ir_literal_get_i64(res, e), v[lin(rank, dims, xi)]);
    }
    tb_free(&t);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_convolutions_match_definition),
      cmocka_unit_test(random_reduce_windows_match_definition),
      cmocka_unit_test(random_dots_match_definition),
      cmocka_unit_test(random_pads_and_slices_match_definition),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
