/* cpu_conv: a 3x3 convolution on the CPU backend against im2col + OpenBLAS
 * sgemm, in one process.
 *
 *   bench/cpu_conv [runs [threads [batch]]]      (defaults: 7 1 8)
 *
 * in f32[batch, 56, 56, 64] (NHWC), kernel f32[3, 3, 64, 64] (HWIO),
 * stride 1, padding 1: out f32[batch, 56, 56, 64]. The module's
 * convolution runs on the direct kernel of backend/llvm/conv.c. The anchor builds the im2col matrix [batch*56*56, 576]
 * and calls cblas_sgemm with openblas_set_num_threads(threads), as a
 * channels-last CPU framework path does; its time includes the im2col. The
 * JIT's output is compared with the anchor's (relative 1e-4) first. Median
 * wall times, and the median process CPU time of the JIT's runs. */
#include "backend/llvm/cpu.h"
#include "bench/cpu_bench.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { H = 56, W = 56, C = 64, O = 64, KH = 3, KW = 3 };

static void im2col_sgemm(const float *in, const float *k, float *col, float *out, int nb) {
  int64_t rows = (int64_t)nb * H * W;
  for (int b = 0; b < nb; b++)
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++) {
        float *dst = col + (((int64_t)b * H + y) * W + x) * (KH * KW * C);
        for (int ky = 0; ky < KH; ky++)
          for (int kx = 0; kx < KW; kx++, dst += C) {
            int iy = y + ky - 1, ix = x + kx - 1;
            if (iy < 0 || iy >= H || ix < 0 || ix >= W) {
              memset(dst, 0, C * sizeof(float));
            } else {
              memcpy(dst, in + (((int64_t)b * H + iy) * W + ix) * C, C * sizeof(float));
            }
          }
      }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, O, KH * KW * C, 1.0f, col,
              KH * KW * C, k, O, 0.0f, out, O);
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 7;
  int threads = argc > 2 ? atoi(argv[2]) : 1;
  int nb = argc > 3 ? atoi(argv[3]) : 8;
  if (runs < 1 || runs > 100 || threads < 1 || threads > 256 || nb < 1 || nb > 256) {
    fprintf(stderr, "usage: cpu_conv [runs [threads [batch]]]\n");
    return 2;
  }
  ir_module *m = ir_module_create("conv");
  ir_comp_id c = ir_comp_add(m, "main");
  m->entry = c;
  ir_inst_proto p;
  memset(&p, 0, sizeof p);
  p.op = IR_OP_PARAMETER;
  p.shape = ir_shape_array(IR_F32, 4, (int64_t[]){nb, H, W, C});
  ir_id ops[2];
  ops[0] = ir_inst_add(m, c, &p);
  p.shape = ir_shape_array(IR_F32, 4, (int64_t[]){KH, KW, C, O});
  p.a.parameter_number = 1;
  ops[1] = ir_inst_add(m, c, &p);
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
  cd->in_batch = 0, cd->in_spatial[0] = 1, cd->in_spatial[1] = 2, cd->in_feature = 3;
  cd->k_spatial[0] = 0, cd->k_spatial[1] = 1, cd->k_in = 2, cd->k_out = 3;
  cd->out_batch = 0, cd->out_spatial[0] = 1, cd->out_spatial[1] = 2, cd->out_feature = 3;
  ir_comp_get(m, c)->root = ir_build(m, c, IR_OP_CONVOLUTION, ops, 2, &a, NULL, 0, (src_loc){0});
  ir_comp_finish(m, c);

  cpu_options o;
  cpu_options_init(&o);
  o.lib_kernels = getenv("TPUCC_CPU_KERNELS"); /* NULL: the best for this CPU */
  o.threads = threads;
  cpu_exe *x = NULL;
  char err[512];
  double t0 = bench_now();
  if (cpu_compile(m, &o, &x, err, sizeof err) != ST_OK) {
    fprintf(stderr, "cpu_conv: %s\n", err);
    return 1;
  }
  double tjit = bench_now() - t0;
  openblas_set_num_threads(threads);
  arena *ar = arena_create();
  ir_literal *args[2];
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (int k = 0; k < 2; k++) {
    args[k] = ir_literal_create(ar, ir_inst_get(m, c, ops[k])->shape);
    float *d = args[k]->data;
    int64_t n = ir_shape_count(&args[k]->shape);
    for (int64_t i = 0; i < n; i++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      d[i] = (float)((double)(s >> 40) / (double)(1 << 24) * 2.0 - 1.0);
    }
  }
  int64_t rows = (int64_t)nb * H * W;
  float *col = aligned_alloc(64, (size_t)rows * KH * KW * C * 4), *ref = aligned_alloc(64, (size_t)rows * O * 4);
  ir_literal *out = ir_literal_create(ar, ir_inst_get(m, c, ir_comp_get(m, c)->root)->shape);
  if (!col || !ref || cpu_execute_to(x, args, 2, out, err, sizeof err) != ST_OK) {
    fprintf(stderr, "cpu_conv: %s\n", col && ref ? err : "out of memory");
    return 1;
  }
  im2col_sgemm(args[0]->data, args[1]->data, col, ref, nb);
  const float *got = out->data;
  for (int64_t i = 0; i < rows * O; i++)
    if (fabsf(got[i] - ref[i]) > 1e-4f * (1.0f + fabsf(ref[i]))) {
      fprintf(stderr, "cpu_conv: element %lld: %g, expected %g\n", (long long)i, got[i], ref[i]);
      return 1;
    }
  double *tj = calloc((size_t)runs, sizeof(double)), *tb = calloc((size_t)runs, sizeof(double)),
         *cj = calloc((size_t)runs, sizeof(double));
  for (int r = 0; r < runs; r++) {
    double a0 = bench_now(), c0 = bench_cpu_now();
    if (cpu_execute_to(x, args, 2, out, err, sizeof err) != ST_OK) return 1;
    double a1 = bench_now(), c1 = bench_cpu_now();
    im2col_sgemm(args[0]->data, args[1]->data, col, ref, nb);
    double a2 = bench_now();
    tj[r] = a1 - a0;
    cj[r] = c1 - c0;
    tb[r] = a2 - a1;
  }
  double mj = bench_median(tj, runs), mb = bench_median(tb, runs), mc = bench_median(cj, runs);
  double flop = 2.0 * (double)rows * O * KH * KW * C;
  printf("cpu_conv 3x3 %dx%dx%d->%d batch %d threads=%d runs=%d: tpucc cpu %.2f ms [CPU time %.2f ms] "
         "(%.1f GFLOP/s), im2col+OpenBLAS %.2f ms (%.1f GFLOP/s), ratio %.3f (JIT compile %.0f ms)\n",
         H, W, C, O, nb, threads, runs, mj * 1e3, mc * 1e3, flop / mj / 1e9, mb * 1e3, flop / mb / 1e9, mb / mj,
         tjit * 1e3);
  free(cj);
  free(tj);
  free(tb);
  free(col);
  free(ref);
  cpu_exe_destroy(x);
  arena_destroy(ar);
  ir_module_destroy(m);
  return 0;
}
