/* cpu_mlp: MLP inference 784-1024-1024-10, batch 256, f32, on the CPU
 * backend against the same network written with OpenBLAS, in one process.
 *
 *   bench/cpu_mlp [runs [threads]]      (defaults: 9 1)
 *
 * The module is what fusion makes of the network: three fusions, each
 * dot(h, W) + broadcast(b), the first two followed by relu, with the
 * weights as parameters. The anchor does the same with cblas_sgemm and one
 * bias(+relu) pass per layer (openblas_set_num_threads(threads)). The
 * JIT's logits are compared with the anchor's (relative 1e-4) first; the
 * median wall time of each is reported, and the median process CPU time
 * of the JIT's runs (bench/cpu_bench.h: steadier on a loaded machine). */
#include "backend/llvm/cpu.h"
#include "bench/cpu_bench.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { BATCH = 256, L0 = 784, L1 = 1024, L2 = 1024, L3 = 10 };

static ir_id param(ir_module *m, ir_comp_id c, int n, ir_shape s) {
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_PARAMETER;
  in.shape = s;
  in.a.parameter_number = n;
  return ir_inst_add(m, c, &in);
}

/* fused(h[B,k], W[k,n], b[n]) = dot(h, W) + broadcast(b), relu'd. */
static ir_comp_id layer(ir_module *m, int64_t k, int64_t n, bool relu) {
  ir_comp_id c = ir_comp_add(m, relu ? "dense_relu" : "dense");
  ir_comp_get(m, c)->is_fusion = true;
  ir_id h = param(m, c, 0, ir_shape_array(IR_F32, 2, (int64_t[]){BATCH, k}));
  ir_id w = param(m, c, 1, ir_shape_array(IR_F32, 2, (int64_t[]){k, n}));
  ir_id b = param(m, c, 2, ir_shape_array(IR_F32, 1, &n));
  ir_attrs a;
  memset(&a, 0, sizeof a);
  int64_t one = 1, zero = 0;
  a.lhs_contracting = (ir_ints){1, &one};
  a.rhs_contracting = (ir_ints){1, &zero};
  a.preferred_type = IR_TYPE_INVALID;
  ir_id d = ir_build(m, c, IR_OP_DOT, (ir_id[]){h, w}, 2, &a, NULL, 0, (src_loc){0});
  ir_inst_proto bc;
  memset(&bc, 0, sizeof bc);
  bc.op = IR_OP_BROADCAST;
  bc.shape = ir_shape_array(IR_F32, 2, (int64_t[]){BATCH, n});
  bc.nops = 1;
  bc.ops = &b;
  bc.a.dimensions = (ir_ints){1, &one};
  ir_id bb = ir_inst_add(m, c, &bc);
  ir_id r = ir_build(m, c, IR_OP_ADD, (ir_id[]){d, bb}, 2, NULL, NULL, 0, (src_loc){0});
  if (relu) {
    ir_inst_proto z;
    memset(&z, 0, sizeof z);
    z.op = IR_OP_CONSTANT;
    z.shape = ir_shape_scalar(IR_F32);
    z.a.literal = ir_literal_create(m->arena, &z.shape);
    ir_id zc = ir_inst_add(m, c, &z);
    bc.ops = &zc;
    bc.a.dimensions = (ir_ints){0, NULL};
    ir_id zb = ir_inst_add(m, c, &bc);
    r = ir_build(m, c, IR_OP_MAXIMUM, (ir_id[]){r, zb}, 2, NULL, NULL, 0, (src_loc){0});
  }
  ir_comp_get(m, c)->root = r;
  ir_comp_finish(m, c);
  return c;
}

static void blas_layer(const float *h, const float *w, const float *b, float *out, int k, int n, bool relu) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, BATCH, n, k, 1.0f, h, k, w, n, 0.0f, out, n);
  for (int i = 0; i < BATCH; i++)
    for (int j = 0; j < n; j++) {
      float v = out[(size_t)i * n + j] + b[j];
      out[(size_t)i * n + j] = relu && v < 0 ? 0 : v;
    }
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 9;
  int threads = argc > 2 ? atoi(argv[2]) : 1;
  if (runs < 1 || runs > 100 || threads < 1 || threads > 256) {
    fprintf(stderr, "usage: cpu_mlp [runs [threads]]\n");
    return 2;
  }
  ir_module *m = ir_module_create("mlp");
  ir_comp_id f1 = layer(m, L0, L1, true), f2 = layer(m, L1, L2, true), f3 = layer(m, L2, L3, false);
  ir_comp_id e = ir_comp_add(m, "main");
  m->entry = e;
  const int64_t dims[7][2] = {{BATCH, L0}, {L0, L1}, {L1, 0}, {L1, L2}, {L2, 0}, {L2, L3}, {L3, 0}};
  ir_id p[7];
  for (int i = 0; i < 7; i++)
    p[i] = param(m, e, i, ir_shape_array(IR_F32, dims[i][1] ? 2 : 1, dims[i]));
  ir_id h1 = ir_build(m, e, IR_OP_FUSION, (ir_id[]){p[0], p[1], p[2]}, 3, NULL, &f1, 1, (src_loc){0});
  ir_id h2 = ir_build(m, e, IR_OP_FUSION, (ir_id[]){h1, p[3], p[4]}, 3, NULL, &f2, 1, (src_loc){0});
  ir_comp_get(m, e)->root = ir_build(m, e, IR_OP_FUSION, (ir_id[]){h2, p[5], p[6]}, 3, NULL, &f3, 1, (src_loc){0});
  ir_comp_finish(m, e);

  cpu_options o;
  cpu_options_init(&o);
  o.lib_kernels = getenv("TPUCC_CPU_KERNELS"); /* NULL: the best for this CPU */
  o.threads = threads;
  cpu_exe *x = NULL;
  char err[512];
  double t0 = bench_now();
  if (cpu_compile(m, &o, &x, err, sizeof err) != ST_OK) {
    fprintf(stderr, "cpu_mlp: %s\n", err);
    return 1;
  }
  double tjit = bench_now() - t0;
  openblas_set_num_threads(threads);
  arena *ar = arena_create();
  ir_literal *args[7];
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (int k = 0; k < 7; k++) {
    args[k] = ir_literal_create(ar, ir_inst_get(m, e, p[k])->shape);
    float *d = args[k]->data;
    int64_t n = ir_shape_count(&args[k]->shape);
    for (int64_t i = 0; i < n; i++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      d[i] = (float)((double)(s >> 40) / (double)(1 << 24) * 2.0 - 1.0) * (k == 0 ? 1.0f : 0.05f);
    }
  }
  float *a1 = malloc(sizeof(float) * BATCH * L1), *a2 = malloc(sizeof(float) * BATCH * L2),
        *a3 = malloc(sizeof(float) * BATCH * L3);
  ir_literal *out = ir_literal_create(ar, ir_inst_get(m, e, ir_comp_get(m, e)->root)->shape);
  if (!a1 || !a2 || !a3 || cpu_execute_to(x, args, 7, out, err, sizeof err) != ST_OK) {
    fprintf(stderr, "cpu_mlp: %s\n", err);
    return 1;
  }
#define D(k) ((const float *)args[k]->data)
#define ANCHOR()                                    \
  do {                                              \
    blas_layer(D(0), D(1), D(2), a1, L0, L1, true); \
    blas_layer(a1, D(3), D(4), a2, L1, L2, true);   \
    blas_layer(a2, D(5), D(6), a3, L2, L3, false);  \
  } while (0)
  ANCHOR();
  const float *got = out->data;
  for (int i = 0; i < BATCH * L3; i++)
    if (fabsf(got[i] - a3[i]) > 1e-4f * (1.0f + fabsf(a3[i]))) {
      fprintf(stderr, "cpu_mlp: logit %d: %g, expected %g\n", i, got[i], a3[i]);
      return 1;
    }
  double *tj = calloc((size_t)runs, sizeof(double)), *tb = calloc((size_t)runs, sizeof(double)),
         *cj = calloc((size_t)runs, sizeof(double));
  for (int r = 0; r < runs; r++) {
    double q0 = bench_now(), c0 = bench_cpu_now();
    if (cpu_execute_to(x, args, 7, out, err, sizeof err) != ST_OK) return 1;
    double q1 = bench_now(), c1 = bench_cpu_now();
    ANCHOR();
    double q2 = bench_now();
    tj[r] = q1 - q0;
    cj[r] = c1 - c0;
    tb[r] = q2 - q1;
  }
  double mj = bench_median(tj, runs), mb = bench_median(tb, runs), mc = bench_median(cj, runs);
  printf("cpu_mlp 784-1024-1024-10 batch %d threads=%d runs=%d: tpucc cpu %.2f ms [CPU time %.2f ms], "
         "OpenBLAS+C %.2f ms, ratio %.3f (JIT compile %.0f ms)\n",
         BATCH, threads, runs, mj * 1e3, mc * 1e3, mb * 1e3, mb / mj, tjit * 1e3);
  free(cj);
  free(tj);
  free(tb);
  free(a1);
  free(a2);
  free(a3);
  cpu_exe_destroy(x);
  arena_destroy(ar);
  ir_module_destroy(m);
  return 0;
}
