/* test_cpu_conv_train.c: the convolutions a training step of a
 * channels-last model runs (passes/grad_conv.c writes the last two), bit
 * for bit against the evaluator under NATIVE numerics, on 1 and 2 threads:
 *   - forward, b01f_01io->b01f (the direct kernel, conv.c);
 *   - the input gradient, b01f_01oi->b01f with the padding "full" (the
 *     direct kernel with its weights packed from the 01oi layout);
 *   - the kernel gradient, f01b_i01o->01bf, contracting over the batch
 *     (conv_wgrad.c: the GEMM gathering x in vector runs when the tile rows
 *     divide the features and no window position leaves x, element by
 *     element with bounds checks otherwise), including 1 feature, features
 *     no tile divides, padding and a strided forward (window dilation);
 *   - a forward convolution with a 3 x 3 output (the implicit GEMM).
 * The data are small integers in [-3, 3], so every product and partial sum
 * is exact in f32: any order gives the evaluator's result exactly, and a
 * dropped, repeated or misplaced product shows as a mismatch. Each case
 * also runs compiled for AVX2 without AVX-512 (8-lane vectors, other tile
 * shapes), which this host executes as well. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "tests/llvm/cpu_check.h"

#define D(...) ((const int64_t[]){__VA_ARGS__})

/* Dim labels from strings such as "b01f", "01io", "f01b": b/f (or i/o)
 * mark the batch and feature dims, digits the spatial ones. */
static void labels(ir_conv_dims *cd, const char *lhs, const char *rhs, const char *out) {
  cd->nspatial = 2;
  for (int d = 0; d < 4; d++) {
    char l = lhs[d], k = rhs[d], o = out[d];
    if (l == 'b') cd->in_batch = (int8_t)d;
    else if (l == 'f') cd->in_feature = (int8_t)d;
    else cd->in_spatial[l - '0'] = (int8_t)d;
    if (k == 'i') cd->k_in = (int8_t)d;
    else if (k == 'o') cd->k_out = (int8_t)d;
    else cd->k_spatial[k - '0'] = (int8_t)d;
    if (o == 'b') cd->out_batch = (int8_t)d;
    else if (o == 'f') cd->out_feature = (int8_t)d;
    else cd->out_spatial[o - '0'] = (int8_t)d;
  }
}

/* conv(x: xd, k: kd) with the labels and window (size, stride, padding,
 * window dilation per spatial dim), checked on 1 and 2 threads. */
static bool conv_case(const char *lhs, const char *rhs, const char *out, const int64_t *xd, const int64_t *kd,
                      const ir_window_dim *w) {
  tmod t = tm_new("conv_train");
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.feature_group_count = a.batch_group_count = 1;
  ir_window win;
  memset(&win, 0, sizeof win);
  win.rank = 2;
  for (int d = 0; d < 2; d++) {
    win.dims[d] = w[d];
    win.dims[d].lhs_dilate = 1;
  }
  a.window = &win;
  labels(&a.conv, lhs, rhs, out);
  ir_id x = tm_param(&t, 0, IR_F32, 4, xd), k = tm_param(&t, 1, IR_F32, 4, kd);
  char what[160];
  snprintf(what, sizeof what, "conv %s_%s->%s x %lldx%lldx%lldx%lld k %lldx%lldx%lldx%lld", lhs, rhs, out,
           (long long)xd[0], (long long)xd[1], (long long)xd[2], (long long)xd[3], (long long)kd[0],
           (long long)kd[1], (long long)kd[2], (long long)kd[3]);
  tm_finish(&t, tm_op(&t, IR_OP_CONVOLUTION, (ir_id[]){x, k}, 2, &a));
  arena *ar = arena_create();
  ir_literal **args = tm_int_args(&t, ar, 17);
  bool ok = tm_check(&t, args, CPU_NUMERICS_NATIVE, 1, 0, what) && tm_check(&t, args, CPU_NUMERICS_NATIVE, 2, 0, what);
  /* AVX2 without AVX-512: 8-lane vectors, 6- and 8-row tiles */
  cpu_options o;
  cpu_options_init(&o);
  o.threads = 2;
  o.numerics = CPU_NUMERICS_NATIVE;
  o.cpu_name = "haswell";
  o.cpu_features = "+avx,+avx2,+fma,+sse4.2,+popcnt,+f16c,+bmi,+bmi2";
  ok = ok && tm_check_opts(&t, args, &o, 0, what);
  arena_destroy(ar);
  ir_module_destroy(t.m);
  return ok;
}

/* A window dim: size, stride, padding low/high, window (rhs) dilation. */
static ir_window_dim wd(int64_t size, int64_t stride, int64_t lo, int64_t hi, int64_t rdil) {
  ir_window_dim d;
  memset(&d, 0, sizeof d);
  d.size = size, d.stride = stride, d.pad_lo = lo, d.pad_hi = hi, d.rhs_dilate = rdil;
  return d;
}

static void forward_and_input_gradient(void **state) {
  (void)state;
  ir_window_dim v3[2] = {wd(3, 1, 0, 0, 1), wd(3, 1, 0, 0, 1)}, f3[2] = {wd(3, 1, 2, 2, 1), wd(3, 1, 2, 2, 1)};
  /* fashion_cnn's layers at batch 4 */
  assert_true(conv_case("b01f", "01io", "b01f", D(4, 28, 28, 1), D(3, 3, 1, 32), v3));
  assert_true(conv_case("b01f", "01io", "b01f", D(4, 13, 13, 32), D(3, 3, 32, 64), v3));
  assert_true(conv_case("b01f", "01oi", "b01f", D(4, 11, 11, 64), D(3, 3, 32, 64), f3));
  assert_true(conv_case("b01f", "01oi", "b01f", D(2, 6, 9, 16), D(3, 3, 48, 16), f3)); /* 3 output blocks */
  /* a 3 x 3 output: the implicit GEMM */
  ir_window_dim big[2] = {wd(9, 1, 0, 0, 1), wd(9, 1, 0, 0, 1)};
  assert_true(conv_case("b01f", "01io", "b01f", D(5, 11, 11, 128), D(9, 9, 128, 32), big));
}

static void kernel_gradient(void **state) {
  (void)state;
  /* fashion_cnn's layers at batch 4: dk [3,3,1,32] and [3,3,32,64] */
  ir_window_dim w26[2] = {wd(26, 1, 0, 0, 1), wd(26, 1, 0, 0, 1)};
  assert_true(conv_case("f01b", "i01o", "01bf", D(4, 28, 28, 1), D(4, 26, 26, 32), w26));
  ir_window_dim w11[2] = {wd(11, 1, 0, 0, 1), wd(11, 1, 0, 0, 1)};
  assert_true(conv_case("f01b", "i01o", "01bf", D(4, 13, 13, 32), D(4, 11, 11, 64), w11));
  /* 24 and 12 features (rows of 12), 5 (element by element), 10 outputs */
  ir_window_dim w6[2] = {wd(6, 1, 0, 0, 1), wd(5, 1, 0, 0, 1)};
  assert_true(conv_case("f01b", "i01o", "01bf", D(3, 8, 7, 24), D(3, 6, 5, 10), w6));
  assert_true(conv_case("f01b", "i01o", "01bf", D(3, 8, 7, 12), D(3, 6, 5, 40), w6));
  assert_true(conv_case("f01b", "i01o", "01bf", D(3, 8, 7, 5), D(3, 6, 5, 16), w6));
  /* "same" padding of the forward: window positions outside x */
  ir_window_dim p1[2] = {wd(7, 1, 1, 1, 1), wd(6, 1, 1, 1, 1)};
  assert_true(conv_case("f01b", "i01o", "01bf", D(2, 7, 6, 16), D(2, 7, 6, 32), p1));
  /* a forward stride of 2: window dilation 2 */
  ir_window_dim s2[2] = {wd(4, 1, 0, 0, 2), wd(3, 1, 0, 1, 2)};
  assert_true(conv_case("f01b", "i01o", "01bf", D(2, 9, 7, 8), D(2, 4, 3, 16), s2));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(forward_and_input_gradient),
      cmocka_unit_test(kernel_gradient),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
