/* cpu_elementwise: a fused elementwise chain on the CPU backend against a
 * STREAM-like triad, in one process.
 *
 *   bench/cpu_elementwise [millions [runs [threads]]]   (defaults: 16 9 1)
 *
 * The module is one loop fusion, as the fusion pass makes it:
 *   y = relu(x * a + b) * c    x: f32[n], a, b, c: f32[] (broadcast)
 * compiled by backend/llvm and run with cpu_execute_to into the same output
 * literal every time (buffers reused: no fresh pages per run). The anchor is
 * the triad A[i] = B[i] + s * C[i] over n floats, compiled -O3 here and run
 * on the same number of threads. Bandwidth is counted as STREAM does (the
 * chain moves 8 bytes per element, the triad 12, write-allocate traffic not
 * counted); the ratio compares bandwidths. The chain's output is checked
 * element by element against a C loop first. */
#include "backend/llvm/cpu.h"
#include "bench/cpu_bench.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct triad_job {
  float *restrict A;
  const float *restrict B, *restrict C;
  float s;
  int64_t lo, hi;
} triad_job;

static void *triad(void *arg) {
  triad_job *j = arg;
  float *restrict A = j->A;
  const float *restrict B = j->B, *restrict C = j->C;
  for (int64_t i = j->lo; i < j->hi; i++) A[i] = B[i] + j->s * C[i];
  return NULL;
}

static void run_triad(float *A, const float *B, const float *C, int64_t n, int threads) {
  pthread_t t[64];
  triad_job jobs[64];
  for (int k = 0; k < threads; k++) {
    jobs[k] = (triad_job){A, B, C, 3.0f, n * k / threads, n * (k + 1) / threads};
    if (k) pthread_create(&t[k], NULL, triad, &jobs[k]);
  }
  triad(&jobs[0]);
  for (int k = 1; k < threads; k++) pthread_join(t[k], NULL);
}

static ir_id param(ir_module *m, ir_comp_id c, int n, const ir_shape *s) {
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_PARAMETER;
  in.shape = *s;
  in.a.parameter_number = n;
  return ir_inst_add(m, c, &in);
}

static ir_id bcast(ir_module *m, ir_comp_id c, ir_id x, const ir_shape *s) {
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_BROADCAST;
  in.shape = *s;
  in.nops = 1;
  in.ops = &x;
  return ir_inst_add(m, c, &in);
}

static ir_id bin(ir_module *m, ir_comp_id c, ir_op op, ir_id x, ir_id y) {
  ir_id ops[2] = {x, y};
  return ir_build(m, c, op, ops, 2, NULL, NULL, 0, (src_loc){0});
}

int main(int argc, char **argv) {
  int64_t n = (argc > 1 ? atoll(argv[1]) : 16) << 20;
  int runs = argc > 2 ? atoi(argv[2]) : 9;
  int threads = argc > 3 ? atoi(argv[3]) : 1;
  if (n < 1 || n > ((int64_t)1 << 32) || runs < 1 || runs > 100 || threads < 1 || threads > 64) {
    fprintf(stderr, "usage: cpu_elementwise [millions [runs [threads 1..64]]]\n");
    return 2;
  }
  ir_module *m = ir_module_create("chain");
  ir_shape vs = ir_shape_array(IR_F32, 1, &n), ss = ir_shape_scalar(IR_F32);
  ir_comp_id f = ir_comp_add(m, "fused_chain");
  ir_comp_get(m, f)->is_fusion = true;
  ir_id x = param(m, f, 0, &vs), a = param(m, f, 1, &ss), b = param(m, f, 2, &ss), c = param(m, f, 3, &ss);
  ir_inst_proto z;
  memset(&z, 0, sizeof z);
  z.op = IR_OP_CONSTANT;
  z.shape = ss;
  z.a.literal = ir_literal_create(m->arena, &ss);
  ir_id zero = ir_inst_add(m, f, &z);
  ir_id t = bin(m, f, IR_OP_MULTIPLY, x, bcast(m, f, a, &vs));
  t = bin(m, f, IR_OP_ADD, t, bcast(m, f, b, &vs));
  t = bin(m, f, IR_OP_MAXIMUM, t, bcast(m, f, zero, &vs));
  ir_comp_get(m, f)->root = bin(m, f, IR_OP_MULTIPLY, t, bcast(m, f, c, &vs));
  ir_comp_finish(m, f);
  ir_comp_id e = ir_comp_add(m, "main");
  m->entry = e;
  ir_id ps[4] = {param(m, e, 0, &vs), param(m, e, 1, &ss), param(m, e, 2, &ss), param(m, e, 3, &ss)};
  ir_comp_get(m, e)->root = ir_build(m, e, IR_OP_FUSION, ps, 4, NULL, &f, 1, (src_loc){0});
  ir_comp_finish(m, e);

  cpu_options o;
  cpu_options_init(&o);
  o.lib_kernels = getenv("TPUCC_CPU_KERNELS"); /* NULL: the best for this CPU */
  o.threads = threads;
  cpu_exe *exe = NULL;
  char err[512];
  double t0 = bench_now();
  if (cpu_compile(m, &o, &exe, err, sizeof err) != ST_OK) {
    fprintf(stderr, "cpu_elementwise: %s\n", err);
    return 1;
  }
  double tjit = bench_now() - t0;
  arena *ar = arena_create();
  ir_literal *args[4];
  args[0] = ir_literal_create(ar, &vs);
  float *xd = args[0]->data;
  for (int64_t i = 0; i < n; i++) xd[i] = (float)((i * 7919) % 2001 - 1000) / 100.0f;
  float sv[3] = {1.5f, -0.25f, 2.0f};
  for (int k = 0; k < 3; k++) {
    args[k + 1] = ir_literal_create(ar, &ss);
    *(float *)args[k + 1]->data = sv[k];
  }
  ir_literal *out = ir_literal_create(ar, &vs);
  if (cpu_execute_to(exe, args, 4, out, err, sizeof err) != ST_OK) {
    fprintf(stderr, "cpu_elementwise: %s\n", err);
    return 1;
  }
  const float *yd = out->data;
  for (int64_t i = 0; i < n; i++) {
    float r = xd[i] * sv[0] + sv[1];
    r = (r < 0.0f ? 0.0f : r) * sv[2];
    if (yd[i] != r) {
      fprintf(stderr, "cpu_elementwise: y[%lld] = %g, expected %g\n", (long long)i, yd[i], r);
      return 1;
    }
  }
  float *A = aligned_alloc(64, (size_t)n * 4), *B = aligned_alloc(64, (size_t)n * 4),
        *C = aligned_alloc(64, (size_t)n * 4);
  if (!A || !B || !C) return 1;
  for (int64_t i = 0; i < n; i++) A[i] = 0, B[i] = 1, C[i] = 2;
  run_triad(A, B, C, n, threads);
  double *tc = calloc((size_t)runs, sizeof(double)), *tt = calloc((size_t)runs, sizeof(double));
  for (int r = 0; r < runs; r++) {
    double a0 = bench_now();
    if (cpu_execute_to(exe, args, 4, out, err, sizeof err) != ST_OK) return 1;
    double a1 = bench_now();
    run_triad(A, B, C, n, threads);
    double a2 = bench_now();
    tc[r] = a1 - a0;
    tt[r] = a2 - a1;
  }
  double mc = bench_median(tc, runs), mt = bench_median(tt, runs);
  double gc = 8.0 * (double)n / mc / 1e9, gt = 12.0 * (double)n / mt / 1e9;
  printf("cpu_elementwise n=%lldM threads=%d runs=%d: chain relu(x*a+b)*c %.2f ms = %.1f GB/s, "
         "triad %.2f ms = %.1f GB/s, bandwidth ratio %.3f (JIT compile %.0f ms)\n",
         (long long)(n >> 20), threads, runs, mc * 1e3, gc, mt * 1e3, gt, gc / gt, tjit * 1e3);
  free(tc);
  free(tt);
  free(A);
  free(B);
  free(C);
  cpu_exe_destroy(exe);
  arena_destroy(ar);
  ir_module_destroy(m);
  return 0;
}
