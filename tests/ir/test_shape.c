/* test_shape.c: shape construction, equality, element counts and the HLO
 * spelling of shapes with layouts and tiles. */
#include "ir_test_util.h"

static const char *print(const ir_shape *s, bool with_layout) {
  static char buf[256];
  strbuf b;
  sb_init(&b);
  ir_shape_print(&b, s, with_layout);
  snprintf(buf, sizeof buf, "%s", sb_str(&b));
  sb_free(&b);
  return buf;
}

static void array_prints_with_default_layout(void **st) {
  (void)st;
  ir_shape s = ir_shape_array(IR_F32, 2, (int64_t[]){2, 3});
  assert_string_equal(print(&s, true), "f32[2,3]{1,0}");
  assert_string_equal(print(&s, false), "f32[2,3]");
  s = ir_shape_array(IR_S8, 3, (int64_t[]){4, 0, 1});
  assert_string_equal(print(&s, true), "s8[4,0,1]{2,1,0}");
}

static void scalar_prints_without_braces(void **st) {
  (void)st;
  ir_shape s = ir_shape_scalar(IR_PRED);
  assert_string_equal(print(&s, true), "pred[]");
}

static void default_layout_is_null_and_printed(void **st) {
  (void)st;
  arena *a = arena_create();
  ir_shape s = ir_shape_array(IR_BF16, 2, (int64_t[]){7, 3});
  assert_null(s.layout);
  assert_string_equal(print(&s, true), "bf16[7,3]{1,0}");
  ir_layout l = *ir_layout_default(2);
  ir_shape_set_layout(a, &s, &l); /* the default: stored as NULL */
  assert_null(s.layout);
  l.minor_to_major[0] = 0;
  l.minor_to_major[1] = 1;
  ir_shape_set_layout(a, &s, &l);
  assert_non_null(s.layout);
  assert_ptr_not_equal(s.layout, &l);
  assert_string_equal(print(&s, true), "bf16[7,3]{0,1}");
  arena_destroy(a);
}

static void column_major_layout(void **st) {
  (void)st;
  ir_shape s = ir_shape_array(IR_F32, 2, (int64_t[]){2, 3});
  ir_layout l = *ir_layout_default(2);
  s.layout = &l;
  l.minor_to_major[0] = 0;
  l.minor_to_major[1] = 1;
  assert_string_equal(print(&s, true), "f32[2,3]{0,1}");
}

static void tiled_layouts(void **st) {
  (void)st;
  ir_shape s = ir_shape_array(IR_F32, 2, (int64_t[]){16, 256});
  ir_layout l = *ir_layout_default(2);
  s.layout = &l;
  l.ntiles = 1;
  l.tiles[0] = (ir_tile){2, {8, 128}};
  assert_string_equal(print(&s, true), "f32[16,256]{1,0:T(8,128)}");
  /* several tiles share one T, as XLA spells them */
  l.ntiles = 2;
  l.tiles[1] = (ir_tile){2, {2, 1}};
  assert_string_equal(print(&s, true), "f32[16,256]{1,0:T(8,128)(2,1)}");
  l.tiles[1] = (ir_tile){3, {IR_TILE_COMBINE, 2, 1}};
  assert_string_equal(print(&s, true), "f32[16,256]{1,0:T(8,128)(*,2,1)}");
  l.element_bits = 16;
  l.memory_space = 1;
  assert_string_equal(print(&s, true), "f32[16,256]{1,0:T(8,128)(*,2,1)E(16)S(1)}");
  l.ntiles = 0;
  l.element_bits = 0;
  assert_string_equal(print(&s, true), "f32[16,256]{1,0:S(1)}");
}

static void tuple_prints_elements(void **st) {
  (void)st;
  arena *a = arena_create();
  ir_shape s = tu_shape(a, "(f32[2], (s32[], pred[1,2]), ())");
  assert_string_equal(print(&s, true), "(f32[2]{0}, (s32[], pred[1,2]{1,0}), ())");
  assert_string_equal(print(&s, false), "(f32[2], (s32[], pred[1,2]), ())");
  arena_destroy(a);
}

static void equality_ignores_layout(void **st) {
  (void)st;
  ir_shape a = ir_shape_array(IR_F32, 2, (int64_t[]){2, 3}), b = a;
  ir_layout l = *ir_layout_default(2);
  b.layout = &l;
  l.minor_to_major[0] = 0;
  l.minor_to_major[1] = 1;
  assert_true(ir_shape_equal(&a, &b));
  assert_false(ir_shape_equal_with_layout(&a, &b));
  ir_shape c = ir_shape_array(IR_F32, 2, (int64_t[]){3, 2});
  assert_false(ir_shape_equal(&a, &c));
  ir_shape d = ir_shape_array(IR_S32, 2, (int64_t[]){2, 3});
  assert_false(ir_shape_equal(&a, &d));
  b = a;
  l = *ir_layout_default(2);
  b.layout = &l;
  l.ntiles = 1;
  l.tiles[0] = (ir_tile){1, {128}};
  assert_false(ir_shape_equal_with_layout(&a, &b));
  l.ntiles = 0; /* the default layout spelled out equals NULL */
  assert_true(ir_shape_equal_with_layout(&a, &b));
}

static void tuple_equality_and_clone(void **st) {
  (void)st;
  arena *a = arena_create(), *b = arena_create();
  ir_shape x = tu_shape(a, "(f32[2], (s32[], pred[3]))");
  ir_shape y = tu_shape(a, "(f32[2], (s32[], pred[4]))");
  assert_false(ir_shape_equal(&x, &y));
  ir_shape z = ir_shape_clone(b, &x);
  assert_ptr_not_equal(z.tuple, x.tuple);
  assert_ptr_not_equal(z.tuple[1].tuple, x.tuple[1].tuple);
  assert_true(ir_shape_equal(&x, &z));
  arena_destroy(a); /* the clone does not depend on a */
  assert_string_equal(print(&z, false), "(f32[2], (s32[], pred[3]))");
  arena_destroy(b);
}

static void element_counts_and_overflow(void **st) {
  (void)st;
  int64_t n = -1;
  ir_shape s = ir_shape_array(IR_F32, 3, (int64_t[]){2, 3, 4});
  assert_true(ir_shape_elements(&s, &n));
  assert_int_equal(n, 24);
  assert_int_equal(ir_shape_count(&s), 24);
  s = ir_shape_scalar(IR_F32);
  assert_true(ir_shape_elements(&s, &n));
  assert_int_equal(n, 1);
  s = ir_shape_array(IR_F32, 2, (int64_t[]){0, 1000});
  assert_true(ir_shape_elements(&s, &n));
  assert_int_equal(n, 0);
  s = ir_shape_array(IR_F32, 2, (int64_t[]){(int64_t)1 << 20, (int64_t)1 << 20});
  assert_true(ir_shape_elements(&s, &n)); /* exactly IR_MAX_ELEMENTS */
  s.dims[1]++;
  assert_false(ir_shape_elements(&s, &n));
  s = ir_shape_array(IR_F32, 3, (int64_t[]){(int64_t)1 << 40, (int64_t)1 << 40, 0});
  assert_false(ir_shape_elements(&s, &n)); /* partial product overflows */
  s = ir_shape_array(IR_F32, 1, (int64_t[]){-1});
  assert_false(ir_shape_elements(&s, &n));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(array_prints_with_default_layout),
      cmocka_unit_test(scalar_prints_without_braces),
      cmocka_unit_test(default_layout_is_null_and_printed),
      cmocka_unit_test(column_major_layout),
      cmocka_unit_test(tiled_layouts),
      cmocka_unit_test(tuple_prints_elements),
      cmocka_unit_test(equality_ignores_layout),
      cmocka_unit_test(tuple_equality_and_clone),
      cmocka_unit_test(element_counts_and_overflow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
