/* test_eval_reduce.c: reduce (any dims, variadic argmax, empty dims, fast
 * path against slow path), reduce-window (padding, strides, base and window
 * dilation, 2-D, variadic) and all-reduce on one replica. */
#include "eval_test.h"

static ir_attrs attrs(void) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  return a;
}

/* f32 -> the nearest value of type t (nearest even), via ir's conversions. */
static float round_to(ir_type t, float f) {
  return t == IR_BF16  ? ir_bf16_to_f32(ir_f32_to_bf16(f))
         : t == IR_F16 ? ir_f16_to_f32(ir_f32_to_f16(f))
                       : f;
}

static ir_literal *reduce1(tb *t, ir_literal *x, double init, ir_ints dims, ir_shape out,
                           ir_comp_id f) {
  ir_attrs a = attrs();
  a.dimensions = dims;
  ir_id p = tb_param(t, 0, x->shape);
  ir_id i = tb_scalar(t, x->shape.type, init);
  ir_id r = tb_op(t, IR_OP_REDUCE, out, &a, 2, (ir_id[]){p, i}, 1, &f);
  return tb_run(t, r, &x, 1);
}

static void reduce_sum_over_rows_columns_all_and_none(void **state) {
  (void)state;
  struct {
    ir_ints dims;
    int rank;
    int64_t d0;
    double want[6];
    int n;
  } cases[] = {
      {INTS(1), 1, 2, {6, 15}, 2},
      {INTS(0), 1, 3, {5, 7, 9}, 3},
      {INTS(0, 1), 0, 0, {21}, 1},
      {NO_INTS, 2, 2, {1, 2, 3, 4, 5, 6}, 6},
  };
  for (unsigned k = 0; k < COUNTOF(cases); k++) {
    tb t;
    tb_init(&t);
    ir_literal *x = tb_lit(&t, SH(IR_F32, 2, 3), VALS(1, 2, 3, 4, 5, 6));
    ir_shape out = cases[k].rank == 0   ? SCALAR(IR_F32)
                   : cases[k].rank == 1 ? SH(IR_F32, cases[k].d0)
                                        : SH(IR_F32, 2, 3);
    expect_f(reduce1(&t, x, 0, cases[k].dims, out, tb_binary_comp(&t, IR_OP_ADD, IR_F32)),
             cases[k].want, cases[k].n);
    tb_free(&t);
  }
}

static void reduce_non_adjacent_dims_in_row_major_order(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* x[i][j][k] = 12 i + 4 j + k over [2,3,4]; summing i and k leaves
   * 32 j + 60 */
  double v[24];
  for (int i = 0; i < 24; i++)
    v[i] = i;
  ir_literal *x = tb_lit(&t, SH(IR_S32, 2, 3, 4), v, 24);
  expect_i(reduce1(&t, x, 0, INTS(0, 2), SH(IR_S32, 3), tb_binary_comp(&t, IR_OP_ADD, IR_S32)),
           IVALS(60, 92, 124));
  tb_free(&t);
  /* f32 order: row-major over the reduced dims, whatever order they are
   * listed in: 0 + 1e8 + 1 - 1e8 + 1 = 1 (column-major would give 2) */
  for (int k = 0; k < 2; k++) {
    tb_init(&t);
    x = tb_lit(&t, SH(IR_F32, 2, 2), VALS(1e8, 1, -1e8, 1));
    ir_ints dims = k == 0 ? INTS(0, 1) : INTS(1, 0);
    expect_f(reduce1(&t, x, 0, dims, SCALAR(IR_F32), tb_binary_comp(&t, IR_OP_ADD, IR_F32)),
             VALS(1));
    tb_free(&t);
  }
}

static void reduce_over_empty_dimension_gives_init(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_literal *x = tb_lit(&t, SH(IR_F32, 2, 0), NULL, 0);
  expect_f(reduce1(&t, x, 5, INTS(1), SH(IR_F32, 2), tb_binary_comp(&t, IR_OP_ADD, IR_F32)),
           VALS(5, 5));
  tb_free(&t);
  tb_init(&t); /* reducing the non-empty dim of an empty array: empty result */
  x = tb_lit(&t, SH(IR_F32, 2, 0), NULL, 0);
  expect_dims(reduce1(&t, x, 5, INTS(0), SH(IR_F32, 0), tb_binary_comp(&t, IR_OP_ADD, IR_F32)),
              IR_F32, 1, (int64_t[]){0});
  tb_free(&t);
}

static void reduce_max_propagates_nan_and_sum_wraps(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_literal *x = tb_lit(&t, SH(IR_F32, 2, 3), VALS(1, NAN, 3, -INFINITY, -5, -7));
  expect_f(
      reduce1(&t, x, -INFINITY, INTS(1), SH(IR_F32, 2), tb_binary_comp(&t, IR_OP_MAXIMUM, IR_F32)),
      VALS(NAN, -5));
  tb_free(&t);
  tb_init(&t);
  x = tb_lit(&t, SH(IR_S32, 3), VALS(2147483647, 1, 1));
  expect_i(reduce1(&t, x, 0, INTS(0), SCALAR(IR_S32), tb_binary_comp(&t, IR_OP_ADD, IR_S32)),
           IVALS(-2147483647));
  tb_free(&t);
  tb_init(&t);
  x = tb_lit(&t, SH(IR_PRED, 2, 2), VALS(0, 1, 0, 0));
  expect_i(reduce1(&t, x, 0, INTS(1), SH(IR_PRED, 2), tb_binary_comp(&t, IR_OP_OR, IR_PRED)),
           IVALS(1, 0));
  tb_free(&t);
}

static void reduce_bf16_rounds_each_step_fast_and_slow_agree(void **state) {
  (void)state;
  /* Summing 300 ones in bf16 from 0: exact up to 256, then 256 + 1 ties
   * back to 256 at every step. The fast path (to_apply = add) and the
   * slow path (to_apply = copy(add)) must both give 256. */
  double ones[300];
  for (int i = 0; i < 300; i++)
    ones[i] = 1;
  ir_literal *res[2];
  tb t[2];
  for (int k = 0; k < 2; k++) {
    tb_init(&t[k]);
    ir_literal *x = tb_lit(&t[k], SH(IR_BF16, 300), ones, 300);
    ir_comp_id f =
        k == 0 ? tb_binary_comp(&t[k], IR_OP_ADD, IR_BF16) : tb_slow_add_comp(&t[k], IR_BF16);
    res[k] = reduce1(&t[k], x, 0, INTS(0), SCALAR(IR_BF16), f);
    expect_f(res[k], VALS(256));
  }
  tb_free(&t[0]);
  tb_free(&t[1]);
  /* and for irregular values, bit for bit, in f16, bf16 and f32 */
  ir_type types[] = {IR_BF16, IR_F16, IR_F32};
  double v[97];
  for (int i = 0; i < 97; i++)
    v[i] = ((i * 7919) % 1000 - 500) / 64.0 + ldexp(1, -(i % 12));
  for (unsigned ty = 0; ty < 3; ty++) {
    for (int k = 0; k < 2; k++) {
      tb_init(&t[k]);
      ir_literal *x = tb_lit(&t[k], SH(types[ty], 97), v, 97);
      ir_comp_id f =
          k == 0 ? tb_binary_comp(&t[k], IR_OP_ADD, types[ty]) : tb_slow_add_comp(&t[k], types[ty]);
      res[k] = reduce1(&t[k], x, 0.25, INTS(0), SCALAR(types[ty]), f);
    }
    assert_true(ir_literal_equal(res[0], res[1]));
    /* the order is ascending from the init, rounding after each add */
    ir_literal *x = tb_lit(&t[0], SH(types[ty], 97), v, 97);
    float acc = round_to(types[ty], 0.25f);
    for (int i = 0; i < 97; i++)
      acc = round_to(types[ty], acc + (float)ir_literal_get_f64(x, i));
    assert_true(ir_literal_get_f64(res[0], 0) == acc);
    tb_free(&t[0]);
    tb_free(&t[1]);
  }
}

/* (p0, p1) -> op(p_first, p_second), wrapped in a copy when slow (so the
 * reducer cannot take its fast path). */
static ir_comp_id ordered_comp(tb *t, ir_op op, ir_type ty, int first, bool slow) {
  ir_comp_id saved = t->c;
  t->c = ir_comp_add(t->m, "ordered");
  ir_id p[2] = {tb_param(t, 0, SCALAR(ty)), tb_param(t, 1, SCALAR(ty))};
  ir_id r = OP2(t, op, SCALAR(ty), NULL, p[first], p[1 - first]);
  if (slow) r = OP1(t, IR_OP_COPY, SCALAR(ty), NULL, r);
  ir_comp_get(t->m, t->c)->root = r;
  ir_comp_id c = t->c;
  t->c = saved;
  return c;
}

static void reduce_fast_path_keeps_operand_order_and_nan_payloads(void **state) {
  (void)state;
  /* NaNs with different payloads and signs: which operand max/min return
   * is visible in the bits, so fast and slow must apply the op with the
   * same operand order. */
  uint32_t bits[6] = {0x3f800000u, 0x7fc00001u, 0xffc00002u, 0x40000000u, 0x7fc00003u, 0x80000000u};
  ir_op ops[] = {IR_OP_MAXIMUM, IR_OP_MINIMUM, IR_OP_ADD};
  for (unsigned o = 0; o < COUNTOF(ops); o++)
    for (int first = 0; first < 2; first++) {
      ir_literal *res[2];
      tb t[2];
      for (int slow = 0; slow < 2; slow++) {
        tb_init(&t[slow]);
        ir_literal *x = tb_lit_bits32(&t[slow], SH(IR_F32, 2, 3), bits, 6);
        ir_comp_id f = ordered_comp(&t[slow], ops[o], IR_F32, first, slow != 0);
        res[slow] = reduce1(&t[slow], x, 0, INTS(1), SH(IR_F32, 2), f);
      }
      assert_true(ir_literal_equal(res[0], res[1]));
      if (ops[o] == IR_OP_MAXIMUM) /* row 0: max(acc, x) keeps the first NaN seen */
        assert_int_equal(f32_bits(res[0], 0), first == 0 ? 0x7fc00001u : 0xffc00002u);
      tb_free(&t[0]);
      tb_free(&t[1]);
    }
}

/* n operands (value, companions..., index; types ty): (acc_0..acc_{n-1},
 * x_0..x_{n-1}) -> every operand of the maximum value's first occurrence
 * (the lowest index among equal values). */
static ir_comp_id argmax_comp_n(tb *t, const ir_type *ty, int n) {
  ir_comp_id saved = t->c;
  t->c = ir_comp_add(t->m, "argmax");
  ir_id a[4], x[4], out[4];
  for (int k = 0; k < n; k++) a[k] = tb_param(t, k, SCALAR(ty[k]));
  for (int k = 0; k < n; k++) x[k] = tb_param(t, n + k, SCALAR(ty[k]));
  ir_attrs gt = attrs(), eq = attrs(), lt = attrs();
  gt.cmp_dir = IR_CMP_GT;
  eq.cmp_dir = IR_CMP_EQ;
  lt.cmp_dir = IR_CMP_LT;
  ir_id g = OP2(t, IR_OP_COMPARE, SCALAR(IR_PRED), &gt, x[0], a[0]);
  ir_id e = OP2(t, IR_OP_COMPARE, SCALAR(IR_PRED), &eq, x[0], a[0]);
  ir_id l = OP2(t, IR_OP_COMPARE, SCALAR(IR_PRED), &lt, x[n - 1], a[n - 1]);
  ir_id el = OP2(t, IR_OP_AND, SCALAR(IR_PRED), NULL, e, l);
  ir_id take = OP2(t, IR_OP_OR, SCALAR(IR_PRED), NULL, g, el);
  ir_shape es[4];
  for (int k = 0; k < n; k++) {
    out[k] = OP3(t, IR_OP_SELECT, SCALAR(ty[k]), NULL, take, x[k], a[k]);
    es[k] = SCALAR(ty[k]);
  }
  ir_comp_get(t->m, t->c)->root = tb_op(t, IR_OP_TUPLE, tuple_shape(t, n, es), NULL, n, out, 0, NULL);
  ir_comp_id c = t->c;
  t->c = saved;
  return c;
}

/* (acc_v, acc_i, x_v, x_i) -> (max value, index of its first occurrence) */
static ir_comp_id argmax_comp(tb *t) { return argmax_comp_n(t, (ir_type[]){IR_F32, IR_S32}, 2); }

static void reduce_variadic_argmax_keeps_first_maximum(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_comp_id f = argmax_comp(&t);
  ir_id x = tb_param(&t, 0, SH(IR_F32, 2, 4));
  ir_attrs io = attrs();
  io.index = 1;
  ir_id idx = tb_op(&t, IR_OP_IOTA, SH(IR_S32, 2, 4), &io, 0, NULL, 0, NULL);
  ir_id iv = tb_scalar(&t, IR_F32, -INFINITY), ii = tb_scalar(&t, IR_S32, -1);
  ir_attrs a = attrs();
  a.dimensions = INTS(1);
  ir_shape ts = tuple_shape(&t, 2, (ir_shape[]){SH(IR_F32, 2), SH(IR_S32, 2)});
  ir_id r = tb_op(&t, IR_OP_REDUCE, ts, &a, 4, (ir_id[]){x, idx, iv, ii}, 1, &f);
  ir_literal *arg = tb_lit(&t, SH(IR_F32, 2, 4), VALS(3, 7, 7, 1, -1, -5, -1, -2));
  ir_literal *out = tb_run(&t, r, &arg, 1);
  assert_int_equal(out->shape.type, IR_TUPLE);
  expect_f(out->elems[0], VALS(7, -1));
  expect_i(out->elems[1], IVALS(1, 0));
  tb_free(&t);
}

/* Scalars wider than 4 bytes in a three-operand fold: (f64 value, f64
 * companion, s32 index); every result is the first maximum's. */
static void reduce_variadic_f64_operands(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_comp_id f = argmax_comp_n(&t, (ir_type[]){IR_F64, IR_F64, IR_S32}, 3);
  ir_id x = tb_param(&t, 0, SH(IR_F64, 2, 4)), y = tb_param(&t, 1, SH(IR_F64, 2, 4));
  ir_attrs io = attrs();
  io.index = 1;
  ir_id idx = tb_op(&t, IR_OP_IOTA, SH(IR_S32, 2, 4), &io, 0, NULL, 0, NULL);
  ir_id iv = tb_scalar(&t, IR_F64, -INFINITY), iy = tb_scalar(&t, IR_F64, 0), ii = tb_scalar(&t, IR_S32, -1);
  ir_attrs a = attrs();
  a.dimensions = INTS(1);
  ir_shape ts = tuple_shape(&t, 3, (ir_shape[]){SH(IR_F64, 2), SH(IR_F64, 2), SH(IR_S32, 2)});
  ir_id r = tb_op(&t, IR_OP_REDUCE, ts, &a, 6, (ir_id[]){x, y, idx, iv, iy, ii}, 1, &f);
  ir_literal *args[2] = {tb_lit(&t, SH(IR_F64, 2, 4), VALS(3, 7, 7, 1, -1, -5, -1, -2)),
                         tb_lit(&t, SH(IR_F64, 2, 4), VALS(10, 11, 12, 13, 14, 15, 16, 17))};
  ir_literal *out = tb_run(&t, r, args, 2);
  assert_int_equal(out->shape.type, IR_TUPLE);
  expect_f(out->elems[0], VALS(7, -1));
  expect_f(out->elems[1], VALS(11, 14));
  expect_i(out->elems[2], IVALS(1, 0));
  tb_free(&t);
}

static ir_literal *reduce_window1(tb *t, ir_literal *x, double init, const ir_window_dim *w,
                                  ir_shape out, ir_comp_id f) {
  ir_attrs a = attrs();
  ir_window win_a;
  memset(&win_a, 0, sizeof win_a);
  a.window = &win_a;
  win_a.rank = x->shape.rank;
  for (int d = 0; d < x->shape.rank; d++)
    win_a.dims[d] = w[d];
  ir_id p = tb_param(t, 0, x->shape);
  ir_id i = tb_scalar(t, x->shape.type, init);
  ir_id r = tb_op(t, IR_OP_REDUCE_WINDOW, out, &a, 2, (ir_id[]){p, i}, 1, &f);
  return tb_run(t, r, &x, 1);
}

static void reduce_window_padding_and_stride(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* 1..5 padded 1/1: p 1 2 3 4 5 p; size 2 stride 2: (p,1) (2,3) (4,5) */
  ir_window_dim w = {2, 2, 1, 1, 1, 1, false};
  ir_literal *x = tb_lit(&t, SH(IR_F32, 5), VALS(1, 2, 3, 4, 5));
  expect_f(reduce_window1(&t, x, 0, &w, SH(IR_F32, 3), tb_binary_comp(&t, IR_OP_ADD, IR_F32)),
           VALS(1, 5, 9));
  tb_free(&t);
  tb_init(&t);
  x = tb_lit(&t, SH(IR_F32, 5), VALS(1, 2, 3, 4, 5));
  expect_f(reduce_window1(&t, x, -INFINITY, &w, SH(IR_F32, 3),
                          tb_binary_comp(&t, IR_OP_MAXIMUM, IR_F32)),
           VALS(1, 3, 5));
  tb_free(&t);
  tb_init(&t); /* negative padding, size 3 stride 1: windows of 2 3 4 */
  w = (ir_window_dim){2, 1, -1, -2, 1, 1, false};
  x = tb_lit(&t, SH(IR_S32, 6), VALS(1, 2, 3, 4, 5, 6));
  expect_i(reduce_window1(&t, x, 0, &w, SH(IR_S32, 2), tb_binary_comp(&t, IR_OP_ADD, IR_S32)),
           IVALS(5, 7));
  tb_free(&t);
}

static void reduce_window_base_and_window_dilation(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* base dilation 2: 1 h 2 h 3; holes are skipped, so with init 100
   * each window adds its one real element to 100 */
  ir_window_dim w = {2, 1, 0, 0, 2, 1, false};
  ir_literal *x = tb_lit(&t, SH(IR_F32, 3), VALS(1, 2, 3));
  expect_f(reduce_window1(&t, x, 100, &w, SH(IR_F32, 4), tb_binary_comp(&t, IR_OP_ADD, IR_F32)),
           VALS(101, 102, 102, 103));
  tb_free(&t);
  tb_init(&t); /* window dilation 2: x[i] + x[i+2] */
  w = (ir_window_dim){2, 1, 0, 0, 1, 2, false};
  x = tb_lit(&t, SH(IR_F32, 4), VALS(1, 2, 3, 4));
  expect_f(reduce_window1(&t, x, 0, &w, SH(IR_F32, 2), tb_binary_comp(&t, IR_OP_ADD, IR_F32)),
           VALS(4, 6));
  tb_free(&t);
}

static void reduce_window_2d_max_pool(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_window_dim w[2] = {{2, 2, 0, 0, 1, 1, false}, {2, 2, 0, 0, 1, 1, false}};
  double v[16];
  for (int i = 0; i < 16; i++)
    v[i] = i;
  ir_literal *x = tb_lit(&t, SH(IR_F32, 4, 4), v, 16);
  expect_f(reduce_window1(&t, x, -INFINITY, w, SH(IR_F32, 2, 2),
                          tb_binary_comp(&t, IR_OP_MAXIMUM, IR_F32)),
           VALS(5, 7, 13, 15));
  tb_free(&t);
}

static void reduce_window_variadic_sums_two_inputs(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* to_apply (a0, a1, x0, x1) -> (a0 + x0, a1 * x1) */
  t.c = ir_comp_add(t.m, "pair");
  ir_id a0 = tb_param(&t, 0, SCALAR(IR_F32)), a1 = tb_param(&t, 1, SCALAR(IR_S32));
  ir_id x0 = tb_param(&t, 2, SCALAR(IR_F32)), x1 = tb_param(&t, 3, SCALAR(IR_S32));
  ir_id s = OP2(&t, IR_OP_ADD, SCALAR(IR_F32), NULL, a0, x0);
  ir_id m = OP2(&t, IR_OP_MULTIPLY, SCALAR(IR_S32), NULL, a1, x1);
  ir_shape ts = tuple_shape(&t, 2, (ir_shape[]){SCALAR(IR_F32), SCALAR(IR_S32)});
  ir_comp_get(t.m, t.c)->root = OP2(&t, IR_OP_TUPLE, ts, NULL, s, m);
  ir_comp_id f = t.c;
  t.c = t.entry;
  ir_id p0 = tb_param(&t, 0, SH(IR_F32, 3)), p1 = tb_param(&t, 1, SH(IR_S32, 3));
  ir_id i0 = tb_scalar(&t, IR_F32, 0), i1 = tb_scalar(&t, IR_S32, 1);
  ir_attrs a = attrs();
  ir_window win_a;
  memset(&win_a, 0, sizeof win_a);
  a.window = &win_a;
  win_a.rank = 1;
  win_a.dims[0] = (ir_window_dim){2, 1, 0, 0, 1, 1, false};
  ir_shape os = tuple_shape(&t, 2, (ir_shape[]){SH(IR_F32, 2), SH(IR_S32, 2)});
  ir_id r = tb_op(&t, IR_OP_REDUCE_WINDOW, os, &a, 4, (ir_id[]){p0, p1, i0, i1}, 1, &f);
  ir_literal *args[2] = {tb_lit(&t, SH(IR_F32, 3), VALS(1, 2, 3)),
                         tb_lit(&t, SH(IR_S32, 3), VALS(10, 20, 30))};
  ir_literal *out = tb_run(&t, r, args, 2);
  expect_f(out->elems[0], VALS(3, 5));
  expect_i(out->elems[1], IVALS(200, 600));
  tb_free(&t);
}

static void all_reduce_one_replica_is_identity(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_comp_id f = tb_binary_comp(&t, IR_OP_ADD, IR_F32);
  ir_id x = tb_param(&t, 0, SH(IR_F32, 3)), y = tb_param(&t, 1, SH(IR_F32, 1));
  ir_shape ts = tuple_shape(&t, 2, (ir_shape[]){SH(IR_F32, 3), SH(IR_F32, 1)});
  ir_id r = tb_op(&t, IR_OP_ALL_REDUCE, ts, NULL, 2, (ir_id[]){x, y}, 1, &f);
  ir_literal *args[2] = {tb_lit(&t, SH(IR_F32, 3), VALS(1, -2, NAN)),
                         tb_lit(&t, SH(IR_F32, 1), VALS(4))};
  ir_literal *out = tb_run(&t, r, args, 2);
  expect_f(out->elems[0], VALS(1, -2, NAN));
  expect_f(out->elems[1], VALS(4));
  tb_free(&t);
  tb_init(&t);
  f = tb_binary_comp(&t, IR_OP_ADD, IR_F32);
  x = tb_param(&t, 0, SH(IR_F32, 2));
  r = tb_op(&t, IR_OP_ALL_REDUCE, SH(IR_F32, 2), NULL, 1, (ir_id[]){x}, 1, &f);
  ir_literal *arg = tb_lit(&t, SH(IR_F32, 2), VALS(5, 6));
  expect_f(tb_run(&t, r, &arg, 1), VALS(5, 6));
  tb_free(&t);
}

static void all_reduce_over_several_replicas_is_unsupported(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  t.opts.replica_count = 2;
  ir_comp_id f = tb_binary_comp(&t, IR_OP_ADD, IR_F32);
  ir_id x = tb_param(&t, 0, SH(IR_F32, 2));
  ir_id r = tb_op(&t, IR_OP_ALL_REDUCE, SH(IR_F32, 2), NULL, 1, (ir_id[]){x}, 1, &f);
  ir_literal *arg = tb_lit(&t, SH(IR_F32, 2), VALS(5, 6));
  ir_literal *out = NULL;
  assert_int_equal(tb_eval(&t, r, &arg, 1, &out), ST_UNSUPPORTED);
  assert_null(out);
  assert_non_null(strstr(t.err, "all-reduce"));
  tb_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reduce_sum_over_rows_columns_all_and_none),
      cmocka_unit_test(reduce_non_adjacent_dims_in_row_major_order),
      cmocka_unit_test(reduce_over_empty_dimension_gives_init),
      cmocka_unit_test(reduce_max_propagates_nan_and_sum_wraps),
      cmocka_unit_test(reduce_bf16_rounds_each_step_fast_and_slow_agree),
      cmocka_unit_test(reduce_fast_path_keeps_operand_order_and_nan_payloads),
      cmocka_unit_test(reduce_variadic_argmax_keeps_first_maximum),
      cmocka_unit_test(reduce_variadic_f64_operands),
      cmocka_unit_test(reduce_window_padding_and_stride),
      cmocka_unit_test(reduce_window_base_and_window_dilation),
      cmocka_unit_test(reduce_window_2d_max_pool),
      cmocka_unit_test(reduce_window_variadic_sums_two_inputs),
      cmocka_unit_test(all_reduce_one_replica_is_identity),
      cmocka_unit_test(all_reduce_over_several_replicas_is_unsupported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
