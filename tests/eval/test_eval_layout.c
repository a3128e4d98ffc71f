/* test_eval_layout.c: data movement ops (iota, broadcast, reshape,
 * transpose, slice, concatenate, pad, reverse, copy) and structure (tuple,
 * get-tuple-element, fusion) on the reference evaluator. */
#include "eval_test.h"

static ir_attrs attrs(void) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  return a;
}

/* 0, 1, 2, ... n-1 as an argument. */
static ir_literal *seq(tb *t, ir_shape s) {
  int64_t n = ir_shape_count(&s);
  double *v = arena_array(t->out, (size_t)(n ? n : 1), sizeof(double));
  for (int64_t i = 0; i < n; i++)
    v[i] = (double)i;
  return tb_lit(t, s, v, n);
}

static void iota_along_each_dimension(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_attrs a = attrs();
  a.index = 1;
  ir_id r = tb_op(&t, IR_OP_IOTA, SH(IR_S32, 2, 3), &a, 0, NULL, 0, NULL);
  expect_i(tb_run(&t, r, NULL, 0), IVALS(0, 1, 2, 0, 1, 2));
  tb_free(&t);
  tb_init(&t);
  a.index = 0;
  r = tb_op(&t, IR_OP_IOTA, SH(IR_F32, 2, 3), &a, 0, NULL, 0, NULL);
  expect_f(tb_run(&t, r, NULL, 0), VALS(0, 0, 0, 1, 1, 1));
  tb_free(&t);
  tb_init(&t); /* bf16 iota past 256 rounds: 257 -> 256, 259 -> 260 */
  r = tb_op(&t, IR_OP_IOTA, SH(IR_BF16, 260), &a, 0, NULL, 0, NULL);
  ir_literal *out = tb_run(&t, r, NULL, 0);
  assert_true(ir_literal_get_f64(out, 255) == 255);
  assert_true(ir_literal_get_f64(out, 257) == 256);
  assert_true(ir_literal_get_f64(out, 259) == 260);
  tb_free(&t);
}

static void broadcast_scalar_vector_and_size1_dims(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_attrs a = attrs();
  a.dimensions = INTS(1);
  ir_id p = tb_param(&t, 0, SH(IR_S32, 3));
  ir_id r = OP1(&t, IR_OP_BROADCAST, SH(IR_S32, 2, 3, 2), &a, p);
  ir_literal *arg = seq(&t, SH(IR_S32, 3));
  expect_i(tb_run(&t, r, &arg, 1), IVALS(0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2));
  tb_free(&t);
  tb_init(&t);
  a.dimensions = NO_INTS;
  ir_id s = tb_scalar(&t, IR_F32, 7);
  r = OP1(&t, IR_OP_BROADCAST, SH(IR_F32, 2, 2), &a, s);
  expect_f(tb_run(&t, r, NULL, 0), VALS(7, 7, 7, 7));
  tb_free(&t);
  tb_init(&t); /* [2,1] -> [2,3] via dims {0,1}: the size-1 dim stretches */
  a.dimensions = INTS(0, 1);
  p = tb_param(&t, 0, SH(IR_S32, 2, 1));
  r = OP1(&t, IR_OP_BROADCAST, SH(IR_S32, 2, 3), &a, p);
  arg = tb_lit(&t, SH(IR_S32, 2, 1), VALS(4, 9));
  expect_i(tb_run(&t, r, &arg, 1), IVALS(4, 4, 4, 9, 9, 9));
  tb_free(&t);
  tb_init(&t); /* into an empty dimension */
  a.dimensions = INTS(0);
  p = tb_param(&t, 0, SH(IR_S32, 2));
  r = OP1(&t, IR_OP_BROADCAST, SH(IR_S32, 2, 0), &a, p);
  arg = seq(&t, SH(IR_S32, 2));
  assert_int_equal(tb_run(&t, r, &arg, 1)->nbytes, 0);
  tb_free(&t);
}

static void reshape_keeps_row_major_order(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_id p = tb_param(&t, 0, SH(IR_S32, 2, 3));
  ir_id r = OP1(&t, IR_OP_RESHAPE, SH(IR_S32, 3, 1, 2), NULL, p);
  ir_literal *arg = seq(&t, SH(IR_S32, 2, 3));
  ir_literal *out = tb_run(&t, r, &arg, 1);
  expect_dims(out, IR_S32, 3, (int64_t[]){3, 1, 2});
  expect_i(out, IVALS(0, 1, 2, 3, 4, 5));
  tb_free(&t);
}

static void transpose_rank3_and_rank4(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_attrs a = attrs();
  a.dimensions = INTS(2, 0, 1);
  ir_id p = tb_param(&t, 0, SH(IR_S32, 2, 3, 4));
  ir_id r = OP1(&t, IR_OP_TRANSPOSE, SH(IR_S32, 4, 2, 3), &a, p);
  ir_literal *arg = seq(&t, SH(IR_S32, 2, 3, 4));
  ir_literal *out = tb_run(&t, r, &arg, 1);
  /* out[i][j][k] = in[j][k][i] = 12 j + 4 k + i */
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 2; j++)
      for (int k = 0; k < 3; k++)
        assert_int_equal(ir_literal_get_i64(out, (i * 2 + j) * 3 + k), 12 * j + 4 * k + i);
  expect_i(out, IVALS(0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15,
                      19, 23));
  tb_free(&t);
  tb_init(&t);
  a.dimensions = INTS(3, 1, 0, 2);
  p = tb_param(&t, 0, SH(IR_F32, 2, 1, 3, 2));
  r = OP1(&t, IR_OP_TRANSPOSE, SH(IR_F32, 2, 1, 2, 3), &a, p);
  arg = seq(&t, SH(IR_F32, 2, 1, 3, 2));
  out = tb_run(&t, r, &arg, 1);
  /* out[a][0][c][d] = in[c][0][d][a] = 6 c + 2 d + a */
  expect_f(out, VALS(0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11));
  tb_free(&t);
}

static ir_literal *slice(tb *t, ir_shape in, ir_shape out, ir_ints lo, ir_ints hi, ir_ints st) {
  ir_attrs a = attrs();
  a.slice_start = lo;
  a.slice_limit = hi;
  a.slice_stride = st;
  ir_id p = tb_param(t, 0, in);
  ir_id r = OP1(t, IR_OP_SLICE, out, &a, p);
  ir_literal *arg = seq(t, in);
  return tb_run(t, r, &arg, 1);
}

static void slice_with_strides_and_empty_results(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  expect_i(slice(&t, SH(IR_S32, 10), SH(IR_S32, 3), INTS(1), INTS(8), INTS(3)), IVALS(1, 4, 7));
  tb_free(&t);
  tb_init(&t); /* [4,5]: rows 0:4:2, cols 1:5:3 -> rows 0,2 cols 1,4 */
  expect_i(slice(&t, SH(IR_S32, 4, 5), SH(IR_S32, 2, 2), INTS(0, 1), INTS(4, 5), INTS(2, 3)),
           IVALS(1, 4, 11, 14));
  tb_free(&t);
  tb_init(&t); /* start == limit: an empty dimension */
  ir_literal *out =
      slice(&t, SH(IR_S32, 4, 5), SH(IR_S32, 0, 5), INTS(2, 0), INTS(2, 5), INTS(1, 1));
  expect_dims(out, IR_S32, 2, (int64_t[]){0, 5});
  tb_free(&t);
  tb_init(&t); /* size-1 dims and stride larger than the extent */
  expect_i(slice(&t, SH(IR_S32, 1, 6), SH(IR_S32, 1, 1), INTS(0, 5), INTS(1, 6), INTS(1, 10)),
           IVALS(5));
  tb_free(&t);
}

static void concatenate_along_inner_dim_with_empty_operand(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_attrs a = attrs();
  a.dimensions = INTS(1);
  ir_id x = tb_param(&t, 0, SH(IR_S32, 2, 2));
  ir_id e = tb_param(&t, 1, SH(IR_S32, 2, 0));
  ir_id y = tb_param(&t, 2, SH(IR_S32, 2, 1));
  ir_id r = tb_op(&t, IR_OP_CONCATENATE, SH(IR_S32, 2, 3), &a, 3, (ir_id[]){x, e, y}, 0, NULL);
  ir_literal *args[3] = {tb_lit(&t, SH(IR_S32, 2, 2), VALS(1, 2, 3, 4)), seq(&t, SH(IR_S32, 2, 0)),
                         tb_lit(&t, SH(IR_S32, 2, 1), VALS(9, 8))};
  expect_i(tb_run(&t, r, args, 3), IVALS(1, 2, 9, 3, 4, 8));
  tb_free(&t);
  tb_init(&t);
  a.dimensions = INTS(0);
  x = tb_param(&t, 0, SH(IR_F32, 1));
  y = tb_param(&t, 1, SH(IR_F32, 2));
  r = tb_op(&t, IR_OP_CONCATENATE, SH(IR_F32, 3), &a, 2, (ir_id[]){x, y}, 0, NULL);
  ir_literal *args2[2] = {tb_lit(&t, SH(IR_F32, 1), VALS(5)),
                          tb_lit(&t, SH(IR_F32, 2), VALS(6, 7))};
  expect_f(tb_run(&t, r, args2, 2), VALS(5, 6, 7));
  tb_free(&t);
}

static ir_literal *pad(tb *t, ir_literal *arg, ir_shape out, const ir_padding_dim *p,
                       double value) {
  ir_attrs a = attrs();
  a.npad = arg->shape.rank;
  a.padding = (ir_padding_dim *)p;
  ir_id x = tb_param(t, 0, arg->shape);
  ir_id v = tb_scalar(t, arg->shape.type, value);
  ir_id r = OP2(t, IR_OP_PAD, out, &a, x, v);
  return tb_run(t, r, &arg, 1);
}

static void pad_negative_edges_and_interior(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* [1,2,3], interior 1: 1 p 2 p 3; lo -1 drops the 1, hi 2 adds p p:
   * p 2 p 3 p p */
  ir_literal *arg = tb_lit(&t, SH(IR_F32, 3), VALS(1, 2, 3));
  expect_f(pad(&t, arg, SH(IR_F32, 6), (ir_padding_dim[]){{-1, 2, 1}}, 0.5),
           VALS(0.5, 2, 0.5, 3, 0.5, 0.5));
  tb_free(&t);
  tb_init(&t); /* lo 2, hi -3 with interior 2: p p 1 p p 2 [p p 3 cut] */
  arg = tb_lit(&t, SH(IR_S32, 3), VALS(1, 2, 3));
  expect_i(pad(&t, arg, SH(IR_S32, 6), (ir_padding_dim[]){{2, -3, 2}}, -1),
           IVALS(-1, -1, 1, -1, -1, 2));
  tb_free(&t);
  tb_init(&t); /* rank 2: rows lo 1; cols interior 1 and hi -1 */
  arg = tb_lit(&t, SH(IR_S32, 2, 2), VALS(1, 2, 3, 4));
  expect_i(pad(&t, arg, SH(IR_S32, 3, 2), (ir_padding_dim[]){{1, 0, 0}, {0, -1, 1}}, 0),
           IVALS(0, 0, 1, 0, 3, 0));
  tb_free(&t);
  tb_init(&t); /* negative padding removes everything */
  arg = tb_lit(&t, SH(IR_S32, 2), VALS(1, 2));
  ir_literal *out = pad(&t, arg, SH(IR_S32, 0), (ir_padding_dim[]){{-1, -1, 0}}, 0);
  expect_dims(out, IR_S32, 1, (int64_t[]){0});
  tb_free(&t);
  tb_init(&t); /* padding an empty operand gives only padding */
  arg = tb_lit(&t, SH(IR_S32, 0), NULL, 0);
  expect_i(pad(&t, arg, SH(IR_S32, 3), (ir_padding_dim[]){{1, 2, 5}}, 7), IVALS(7, 7, 7));
  tb_free(&t);
}

static void reverse_selected_dimensions(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_attrs a = attrs();
  a.dimensions = INTS(1);
  ir_id p = tb_param(&t, 0, SH(IR_S32, 2, 3));
  ir_id r = OP1(&t, IR_OP_REVERSE, SH(IR_S32, 2, 3), &a, p);
  ir_literal *arg = seq(&t, SH(IR_S32, 2, 3));
  expect_i(tb_run(&t, r, &arg, 1), IVALS(2, 1, 0, 5, 4, 3));
  tb_free(&t);
  tb_init(&t);
  a.dimensions = INTS(0, 1);
  p = tb_param(&t, 0, SH(IR_S32, 2, 3));
  r = OP1(&t, IR_OP_REVERSE, SH(IR_S32, 2, 3), &a, p);
  arg = seq(&t, SH(IR_S32, 2, 3));
  expect_i(tb_run(&t, r, &arg, 1), IVALS(5, 4, 3, 2, 1, 0));
  tb_free(&t);
}

static void tuple_get_tuple_element_and_copy(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  ir_id x = tb_param(&t, 0, SH(IR_S32, 2));
  ir_id y = tb_scalar(&t, IR_F32, 2.5);
  ir_shape ts = tuple_shape(&t, 2, (ir_shape[]){SH(IR_S32, 2), SCALAR(IR_F32)});
  ir_id tu = OP2(&t, IR_OP_TUPLE, ts, NULL, x, y);
  ir_attrs a = attrs();
  a.index = 0;
  ir_id g = OP1(&t, IR_OP_GET_TUPLE_ELEMENT, SH(IR_S32, 2), &a, tu);
  ir_id c = OP1(&t, IR_OP_COPY, SH(IR_S32, 2), NULL, g);
  ir_shape ts2 = tuple_shape(&t, 2, (ir_shape[]){SH(IR_S32, 2), ts});
  ir_id root = OP2(&t, IR_OP_TUPLE, ts2, NULL, c, tu);
  ir_literal *arg = tb_lit(&t, SH(IR_S32, 2), VALS(3, 4));
  ir_literal *out = tb_run(&t, root, &arg, 1);
  assert_int_equal(out->shape.type, IR_TUPLE);
  assert_int_equal(out->shape.ntuple, 2);
  expect_i(out->elems[0], IVALS(3, 4));
  expect_i(out->elems[1]->elems[0], IVALS(3, 4));
  expect_f(out->elems[1]->elems[1], VALS(2.5));
  /* the result is a deep copy, not the argument's storage */
  assert_ptr_not_equal(out->elems[0]->data, arg->data);
  tb_free(&t);
}

static void fusion_evaluates_its_computation(void **state) {
  (void)state;
  tb t;
  tb_init(&t);
  /* fused: (a, b) -> a * b + a */
  t.c = ir_comp_add(t.m, "fused");
  ir_id a = tb_param(&t, 0, SH(IR_F32, 2)), b = tb_param(&t, 1, SH(IR_F32, 2));
  ir_id m = OP2(&t, IR_OP_MULTIPLY, SH(IR_F32, 2), NULL, a, b);
  ir_comp_get(t.m, t.c)->root = OP2(&t, IR_OP_ADD, SH(IR_F32, 2), NULL, m, a);
  ir_comp_get(t.m, t.c)->is_fusion = true;
  ir_comp_id fc = t.c;
  t.c = t.entry;
  ir_id x = tb_param(&t, 0, SH(IR_F32, 2)), y = tb_param(&t, 1, SH(IR_F32, 2));
  ir_id f = tb_op(&t, IR_OP_FUSION, SH(IR_F32, 2), NULL, 2, (ir_id[]){x, y}, 1, &fc);
  ir_literal *args[2] = {tb_lit(&t, SH(IR_F32, 2), VALS(2, 3)),
                         tb_lit(&t, SH(IR_F32, 2), VALS(10, -1))};
  expect_f(tb_run(&t, f, args, 2), VALS(22, 0));
  tb_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(iota_along_each_dimension),
      cmocka_unit_test(broadcast_scalar_vector_and_size1_dims),
      cmocka_unit_test(reshape_keeps_row_major_order),
      cmocka_unit_test(transpose_rank3_and_rank4),
      cmocka_unit_test(slice_with_strides_and_empty_results),
      cmocka_unit_test(concatenate_along_inner_dim_with_empty_operand),
      cmocka_unit_test(pad_negative_edges_and_interior),
      cmocka_unit_test(reverse_selected_dimensions),
      cmocka_unit_test(tuple_get_tuple_element_and_copy),
      cmocka_unit_test(fusion_evaluates_its_computation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
