/* test_cpu_kernels.c: the CPU backend's fast kernels at awkward sizes,
 * bit for bit against the evaluator: the tiled GEMM (edge tiles in M and
 * N, one-vector panels for narrow N, uneven K blocks, batches, one and two
 * threads), its in-register epilogues (dot + bias + relu fusions, swapped
 * operands, scalar operands; and fusions it must decline), and the direct
 * convolution's register tiles (row widths that do and do not divide the
 * tile, 1 to 8 vectors of output channels, strides, asymmetric padding)
 * and its bias + relu epilogue.
 *
 * These kernels run only under NATIVE (and, for dots, TPU) numerics, where
 * sums are reassociated into fused multiply-adds. The data are small
 * integers in [-3, 3]: every product and partial sum is then exact in f32,
 * so any order and FMA give the evaluator's result exactly, and a tile
 * that drops, repeats or misplaces one product shows up as a mismatch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "tests/llvm/cpu_check.h"

#define D(...) ((const int64_t[]){__VA_ARGS__})

/* Finishes t with root, checks it under numerics n on 1 and 2 threads. */
static bool check(tmod *t, ir_id root, cpu_numerics n, const char *what) {
  tm_finish(t, root);
  arena *a = arena_create();
  ir_literal **args = tm_int_args(t, a, 99);
  bool ok = tm_check(t, args, n, 1, 0, what) && tm_check(t, args, n, 2, 0, what);
  arena_destroy(a);
  ir_module_destroy(t->m);
  return ok;
}

static ir_attrs dot_attrs(tmod *t, int nbatch) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  int64_t lc = nbatch + 1, rc = nbatch, bd[1] = {0};
  a.lhs_contracting = tm_ints(t->m->arena, 1, &lc);
  a.rhs_contracting = tm_ints(t->m->arena, 1, &rc);
  a.lhs_batch = tm_ints(t->m->arena, nbatch, bd);
  a.rhs_batch = tm_ints(t->m->arena, nbatch, bd);
  a.preferred_type = IR_TYPE_INVALID;
  return a;
}

/* dot([nb,] M x K, [nb,] K x N) on the tiled kernel (M * N * K >= 2^15). */
static void gemm_edges(void **state) {
  (void)state;
  static const int64_t shapes[][4] = {
      /* nb, M, K, N */
      {0, 256, 784, 10}, /* one-vector panels, 8-row tiles */
      {0, 7, 300, 17},   /* one partial tile of rows, second vector 1 lane */
      {0, 13, 385, 33},  /* 2 panels, the last with 1 column */
      {0, 100, 1000, 47},/* 3 K blocks of 334 */
      {0, 61, 769, 1},   /* a single output column */
      {0, 120, 64, 16},  /* exactly one vector, 12-row tiles */
      {3, 11, 130, 40},  /* batches with partial tiles */
      {2, 36, 400, 64},  /* batches, whole tiles, 2 K blocks */
  };
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const int64_t *s = shapes[i];
    for (int num = 0; num < 2; num++) {
      tmod t = tm_new("gemm");
      int nb = s[0] ? 1 : 0;
      ir_id l = nb ? tm_param(&t, 0, IR_F32, 3, D(s[0], s[1], s[2])) : tm_param(&t, 0, IR_F32, 2, D(s[1], s[2]));
      ir_id r = nb ? tm_param(&t, 1, IR_F32, 3, D(s[0], s[2], s[3])) : tm_param(&t, 1, IR_F32, 2, D(s[2], s[3]));
      ir_attrs a = dot_attrs(&t, nb);
      char what[96];
      snprintf(what, sizeof what, "gemm nb=%lld %lldx%lldx%lld %s", (long long)s[0], (long long)s[1],
               (long long)s[2], (long long)s[3], num ? "tpu" : "native");
      assert_true(check(&t, tm_op(&t, IR_OP_DOT, (ir_id[]){l, r}, 2, &a),
                        num ? CPU_NUMERICS_TPU : CPU_NUMERICS_NATIVE, what));
    }
  }
}

static ir_id bcast(tmod *t, ir_id x, const ir_shape *s, int ndims, const int64_t *dims) {
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_BROADCAST;
  in.shape = *s;
  in.nops = 1;
  in.ops = &x;
  in.a.dimensions = tm_ints(t->m->arena, ndims, dims);
  return ir_inst_add(t->m, t->c, &in);
}

static ir_id bin(tmod *t, ir_op op, ir_id x, ir_id y) { return tm_op(t, op, (ir_id[]){x, y}, 2, NULL); }

/* Closes fused computation fc (root), returns to computation main, calls
 * fc on fresh entry parameters shaped like its own and checks the module
 * under native numerics. */
static bool check_fusion(tmod *t, ir_comp_id fc, ir_comp_id main, ir_id root, const char *what) {
  ir_comp_get(t->m, fc)->root = root;
  ir_comp_finish(t->m, fc);
  t->c = main;
  const ir_comp *fcp = ir_comp_get(t->m, fc);
  int np = fcp->nparams;
  ir_id ps[8];
  for (int i = 0; i < np && i < 8; i++) ps[i] = tm_param_shape(t, i, fcp->insts.v[fcp->params[i]].shape);
  ir_attrs fa;
  memset(&fa, 0, sizeof fa);
  return check(t, tm_call(t, IR_OP_FUSION, ps, np, &fa, fc), CPU_NUMERICS_NATIVE, what);
}

/* NHWC input, HWIO kernel, NHWC output. */
static void nhwc_labels(ir_conv_dims *cd) {
  cd->nspatial = 2;
  cd->in_batch = 0, cd->in_spatial[0] = 1, cd->in_spatial[1] = 2, cd->in_feature = 3;
  cd->k_spatial[0] = 0, cd->k_spatial[1] = 1, cd->k_in = 2, cd->k_out = 3;
  cd->out_batch = 0, cd->out_spatial[0] = 1, cd->out_spatial[1] = 2, cd->out_feature = 3;
}

/* fusion(h, W, b, s) for a dense layer tail; variants:
 *   0  max(dot + b, 0)                      bias + relu
 *   1  max(0, b + dot)                      operands swapped
 *   2  min((s - dot) * 0.5, b) / 2          scalar parameter and constants
 *   3  dot [M, 4, N/4] + b along the last dim: two free dims, declined
 *   4  dot + dot * s                        dot used twice: declined
 *   5  max(dot + b, 0), dot batched [3, M, N] (bias per column of every batch) */
static bool epilogue_case(int variant, int64_t M, int64_t K, int64_t N) {
  tmod t = tm_new("dense");
  ir_comp_id fc = ir_comp_add(t.m, "fused");
  ir_comp_get(t.m, fc)->is_fusion = true;
  ir_comp_id main = t.c;
  t.c = fc;
  int64_t N2 = variant == 3 ? N / 4 : N;
  ir_id h = variant == 5 ? tm_param(&t, 0, IR_F32, 3, D(3, M, K)) : tm_param(&t, 0, IR_F32, 2, D(M, K));
  ir_id w = variant == 3   ? tm_param(&t, 1, IR_F32, 3, D(K, 4, N2))
            : variant == 5 ? tm_param(&t, 1, IR_F32, 3, D(3, K, N))
                           : tm_param(&t, 1, IR_F32, 2, D(K, N));
  ir_id b = tm_param(&t, 2, IR_F32, 1, D(N2));
  ir_id sc = tm_param(&t, 3, IR_F32, 0, NULL);
  ir_attrs a = dot_attrs(&t, variant == 5 ? 1 : 0);
  ir_id d = tm_op(&t, IR_OP_DOT, (ir_id[]){h, w}, 2, &a);
  ir_shape os = *ir_inst_get(t.m, t.c, d)->shape;
  int64_t last = os.rank - 1;
  ir_id bb = bcast(&t, b, &os, 1, &last), sb = bcast(&t, sc, &os, 0, NULL);
  ir_id zero = bcast(&t, tm_const_f32(&t, 0.0f), &os, 0, NULL);
  ir_id root;
  switch (variant) {
  case 0: case 5: root = bin(&t, IR_OP_MAXIMUM, bin(&t, IR_OP_ADD, d, bb), zero); break;
  case 1: root = bin(&t, IR_OP_MAXIMUM, zero, bin(&t, IR_OP_ADD, bb, d)); break;
  case 2: {
    ir_id half = bcast(&t, tm_const_f32(&t, 0.5f), &os, 0, NULL);
    ir_id two = bcast(&t, tm_const_f32(&t, 2.0f), &os, 0, NULL);
    root = bin(&t, IR_OP_SUBTRACT, sb, d);
    root = bin(&t, IR_OP_MINIMUM, bin(&t, IR_OP_MULTIPLY, root, half), bb);
    root = bin(&t, IR_OP_DIVIDE, root, two);
    break;
  }
  case 3: root = bin(&t, IR_OP_ADD, d, bb); break;
  default: root = bin(&t, IR_OP_ADD, d, bin(&t, IR_OP_MULTIPLY, d, sb)); break;
  }
  char what[96];
  snprintf(what, sizeof what, "epilogue v%d %lldx%lldx%lld", variant, (long long)M, (long long)K, (long long)N);
  return check_fusion(&t, fc, main, root, what);
}

static void gemm_epilogues(void **state) {
  (void)state;
  static const int64_t shapes[][3] = {{37, 300, 44}, {256, 200, 12}, {9, 129, 100}, {24, 64, 32}};
  for (int v = 0; v < 6; v++)
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
      assert_true(epilogue_case(v, shapes[i][0], shapes[i][1], shapes[i][2]));
}

/* NHWC x HWIO -> NHWC, f32, native: the direct kernel. */
static bool conv_case(int64_t n, int64_t h, int64_t w, int64_t c, int64_t o, int64_t kh, int64_t kw,
                      ir_window_dim wy, ir_window_dim wx) {
  tmod t = tm_new("conv");
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.feature_group_count = a.batch_group_count = 1;
  ir_window win_a;
  memset(&win_a, 0, sizeof win_a);
  a.window = &win_a;
  win_a.rank = 2;
  wy.size = kh, wx.size = kw;
  wy.lhs_dilate = wy.rhs_dilate = wx.lhs_dilate = wx.rhs_dilate = 1;
  win_a.dims[0] = wy, win_a.dims[1] = wx;
  nhwc_labels(&a.conv);
  ir_id x = tm_param(&t, 0, IR_F32, 4, D(n, h, w, c)), k = tm_param(&t, 1, IR_F32, 4, D(kh, kw, c, o));
  char what[128];
  snprintf(what, sizeof what, "direct conv %lldx%lldx%lldx%lld -> %lld, %lldx%lld, stride %lld/%lld, pad %lld-%lld/%lld-%lld",
           (long long)n, (long long)h, (long long)w, (long long)c, (long long)o, (long long)kh, (long long)kw,
           (long long)wy.stride, (long long)wx.stride, (long long)wy.pad_lo, (long long)wy.pad_hi,
           (long long)wx.pad_lo, (long long)wx.pad_hi);
  return check(&t, tm_op(&t, IR_OP_CONVOLUTION, (ir_id[]){x, k}, 2, &a), CPU_NUMERICS_NATIVE, what);
}

static void conv_tiles(void **state) {
  (void)state;
  ir_window_dim p1 = {.stride = 1, .pad_lo = 1, .pad_hi = 1};
  assert_true(conv_case(1, 4, 56, 64, 64, 3, 3, p1, p1));  /* 14 x 2 tiles, 4 per row */
  assert_true(conv_case(2, 5, 13, 3, 16, 3, 3, p1, p1));   /* one vector, a partial last tile */
  assert_true(conv_case(1, 3, 1, 4, 32, 3, 3, p1, p1));    /* one pixel per row */
  assert_true(conv_case(1, 6, 29, 8, 128, 3, 3, p1, p1));  /* 8 vectors of outputs */
  ir_window_dim s2 = {.stride = 2, .pad_lo = 0, .pad_hi = 2}, s3 = {.stride = 3, .pad_lo = 2, .pad_hi = 0};
  assert_true(conv_case(1, 7, 17, 5, 48, 3, 2, s2, s3));   /* strides, asymmetric padding */
  ir_window_dim none = {.stride = 1};
  assert_true(conv_case(1, 2, 30, 7, 64, 1, 1, none, none)); /* 1 x 1 */
  assert_true(conv_case(1, 9, 9, 6, 32, 5, 5, p1, s2));     /* window wider than the padding */
}

/* fusion(x, k, b) = max(conv(x, k) + b, 0) with the bias along the last
 * output dim: NHWC/HWIO f32 is the direct kernel with the epilogue applied
 * in registers; NCHW/OIHW (bias along W) must decline to the unfused path. */
static bool conv_epilogue_case(bool nchw, int64_t w, int64_t c, int64_t o) {
  tmod t = tm_new("conv_layer");
  ir_comp_id fc = ir_comp_add(t.m, "fused");
  ir_comp_get(t.m, fc)->is_fusion = true;
  ir_comp_id main = t.c;
  t.c = fc;
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.feature_group_count = a.batch_group_count = 1;
  ir_window win_a;
  memset(&win_a, 0, sizeof win_a);
  a.window = &win_a;
  win_a.rank = 2;
  for (int d = 0; d < 2; d++) win_a.dims[d] = (ir_window_dim){3, 1, 1, 1, 1, 1, false};
  ir_conv_dims *cd = &a.conv;
  cd->nspatial = 2;
  ir_id x, k;
  if (nchw) {
    cd->in_batch = 0, cd->in_feature = 1, cd->in_spatial[0] = 2, cd->in_spatial[1] = 3;
    cd->k_out = 0, cd->k_in = 1, cd->k_spatial[0] = 2, cd->k_spatial[1] = 3;
    cd->out_batch = 0, cd->out_feature = 1, cd->out_spatial[0] = 2, cd->out_spatial[1] = 3;
    x = tm_param(&t, 0, IR_F32, 4, D(2, c, 5, w));
    k = tm_param(&t, 1, IR_F32, 4, D(o, c, 3, 3));
  } else {
    nhwc_labels(cd);
    x = tm_param(&t, 0, IR_F32, 4, D(2, 5, w, c));
    k = tm_param(&t, 1, IR_F32, 4, D(3, 3, c, o));
  }
  ir_id cv = tm_op(&t, IR_OP_CONVOLUTION, (ir_id[]){x, k}, 2, &a);
  ir_shape os = *ir_inst_get(t.m, t.c, cv)->shape;
  int64_t last = os.rank - 1;
  ir_id b = tm_param(&t, 2, IR_F32, 1, D(os.dims[last]));
  ir_id zero = bcast(&t, tm_const_f32(&t, 0.0f), &os, 0, NULL);
  ir_id root = bin(&t, IR_OP_MAXIMUM, bin(&t, IR_OP_ADD, cv, bcast(&t, b, &os, 1, &last)), zero);
  char what[96];
  snprintf(what, sizeof what, "conv epilogue %s w=%lld c=%lld o=%lld", nchw ? "nchw" : "nhwc", (long long)w,
           (long long)c, (long long)o);
  return check_fusion(&t, fc, main, root, what);
}

static void conv_epilogues(void **state) {
  (void)state;
  assert_true(conv_epilogue_case(false, 56, 16, 64));
  assert_true(conv_epilogue_case(false, 13, 3, 48));
  assert_true(conv_epilogue_case(true, 13, 8, 32));
}

/* The kernels' ISA that --stats names (cpu_exe_info.isa): the CPU and
 * features a program is compiled for decide the vector width and tiles. */
static void kernel_isa_named(void **state) {
  (void)state;
  static const struct {
    const char *cpu, *features, *want;
  } c[] = {
      {"haswell", "+avx,+avx2,+fma,+sse4.2", "haswell: f32 GEMM and convolution micro-kernels on 8-lane "
                                             "vectors (avx2 and fma; 6x16 and 8x8 register tiles)"},
      {"skylake-avx512", "+avx,+avx2,+fma,+avx512f,+avx512bw,+avx512dq,+avx512vl",
       "skylake-avx512: f32 GEMM and convolution micro-kernels on 16-lane vectors (avx512f; 12x32, "
       "8x32 and 8x16 register tiles)"},
      {"x86-64", "+sse2", "x86-64: f32 GEMM and convolution micro-kernels on 8-lane vectors (no avx2: "
                          "LLVM splits them; 6x16 and 8x8 register tiles)"},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    tmod t = tm_new("isa");
    ir_id l = tm_param(&t, 0, IR_F32, 2, D(8, 64)), r = tm_param(&t, 1, IR_F32, 2, D(64, 32));
    ir_attrs a = dot_attrs(&t, 0);
    tm_finish(&t, tm_op(&t, IR_OP_DOT, (ir_id[]){l, r}, 2, &a));
    cpu_options o;
    cpu_options_init(&o);
    o.cpu_name = c[i].cpu;
    o.cpu_features = c[i].features;
    cpu_exe *x = NULL;
    char err[256];
    assert_int_equal(cpu_compile(t.m, &o, &x, err, sizeof err), ST_OK);
    cpu_exe_info info;
    cpu_exe_get_info(x, &info);
    assert_string_equal(info.isa, c[i].want);
    cpu_exe_destroy(x);
    ir_module_destroy(t.m);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gemm_edges),
      cmocka_unit_test(gemm_epilogues),
      cmocka_unit_test(conv_tiles),
      cmocka_unit_test(conv_epilogues),
      cmocka_unit_test(kernel_isa_named),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
