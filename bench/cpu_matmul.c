/* cpu_matmul: the CPU backend's f32 matrix multiply against OpenBLAS sgemm.
 *
 *   bench/cpu_matmul [size [runs [threads]]]      (defaults: 1024 7 1)
 *
 * One process, same data: the module  dot(f32[n,n], f32[n,n])  compiled by
 * backend/llvm (NATIVE numerics, BLAS disabled, so the LLVM-emitted packed
 * register-tiled kernel of gemm.c runs, on `threads` pool threads) and
 * cblas_sgemm (row major, beta = 0) with openblas_set_num_threads(threads).
 * Runs alternate; the median of each is reported in GFLOP/s (2 n^3 per
 * call), with their ratio. Before timing, 64 sampled output elements of the
 * JIT are checked against a double-precision dot product (relative error
 * below 1e-4), so a fast wrong kernel cannot report a number. Run with
 * OPENBLAS_CORETYPE unset so OpenBLAS picks its own kernel (bench/cpu.sh). */
#include "backend/llvm/cpu.h"
#include "bench/cpu_bench.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1024;
  int runs = argc > 2 ? atoi(argv[2]) : 7;
  int threads = argc > 3 ? atoi(argv[3]) : 1;
  if (n < 1 || n > 8192 || runs < 1 || runs > 100 || threads < 1 || threads > 256) {
    fprintf(stderr, "usage: cpu_matmul [size 1..8192 [runs 1..100 [threads]]]\n");
    return 2;
  }
  ir_module *m = ir_module_create("matmul");
  ir_comp_id c = ir_comp_add(m, "main");
  m->entry = c;
  int64_t dims[2] = {n, n};
  ir_inst_proto p;
  memset(&p, 0, sizeof p);
  p.op = IR_OP_PARAMETER;
  p.shape = ir_shape_array(IR_F32, 2, dims);
  ir_id ops[2];
  ops[0] = ir_inst_add(m, c, &p);
  p.a.parameter_number = 1;
  ops[1] = ir_inst_add(m, c, &p);
  ir_attrs a;
  memset(&a, 0, sizeof a);
  int64_t one = 1, zero = 0;
  a.lhs_contracting = (ir_ints){1, &one};
  a.rhs_contracting = (ir_ints){1, &zero};
  a.preferred_type = IR_TYPE_INVALID;
  ir_comp_get(m, c)->root = ir_build(m, c, IR_OP_DOT, ops, 2, &a, NULL, 0, (src_loc){0});
  ir_comp_finish(m, c);

  cpu_options o;
  cpu_options_init(&o);
  o.lib_kernels = getenv("TPUCC_CPU_KERNELS"); /* NULL: the best for this CPU */
  o.threads = threads;
  o.use_blas = false;
  cpu_exe *x = NULL;
  char err[512];
  double t0 = bench_now();
  if (cpu_compile(m, &o, &x, err, sizeof err) != ST_OK) {
    fprintf(stderr, "cpu_matmul: %s\n", err);
    return 1;
  }
  double tjit = bench_now() - t0;
  openblas_set_num_threads(threads);

  arena *ar = arena_create();
  ir_literal *args[2];
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (int k = 0; k < 2; k++) {
    args[k] = ir_literal_create(ar, &p.shape);
    float *d = args[k]->data;
    for (int64_t i = 0; i < (int64_t)n * n; i++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      d[i] = (float)((double)(s >> 40) / (double)(1 << 24) * 2.0 - 1.0);
    }
  }
  float *cb = aligned_alloc(64, (size_t)n * (size_t)n * 4);
  ir_literal *out = NULL;
  if (!cb || cpu_execute(x, args, 2, ar, &out, err, sizeof err) != ST_OK) {
    fprintf(stderr, "cpu_matmul: %s\n", cb ? err : "out of memory");
    return 1;
  }
  const float *A = args[0]->data, *B = args[1]->data, *C = out->data;
  for (int t = 0; t < 64; t++) {
    int i = (int)((uint64_t)t * 7919 % (uint64_t)n), j = (int)((uint64_t)t * 104729 % (uint64_t)n);
    double ref = 0, mag = 0;
    for (int k = 0; k < n; k++) {
      ref += (double)A[(size_t)i * n + k] * B[(size_t)k * n + j];
      mag += fabs((double)A[(size_t)i * n + k] * B[(size_t)k * n + j]);
    }
    if (fabs(C[(size_t)i * n + j] - ref) > 1e-4 * (mag + 1)) {
      fprintf(stderr, "cpu_matmul: C[%d][%d] = %g, expected %g\n", i, j, C[(size_t)i * n + j], ref);
      return 1;
    }
  }
  double *tj = calloc((size_t)runs, sizeof(double)), *tb = calloc((size_t)runs, sizeof(double));
  for (int r = 0; r < runs; r++) {
    double a0 = bench_now();
    if (cpu_execute_to(x, args, 2, out, err, sizeof err) != ST_OK) return 1;
    double a1 = bench_now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, A, n, B, n, 0.0f, cb, n);
    double a2 = bench_now();
    tj[r] = a1 - a0;
    tb[r] = a2 - a1;
  }
  double flop = 2.0 * n * (double)n * n;
  double gj = flop / bench_median(tj, runs) / 1e9, gb = flop / bench_median(tb, runs) / 1e9;
  printf("cpu_matmul n=%d threads=%d runs=%d: tpucc cpu %.1f GFLOP/s, OpenBLAS sgemm %.1f GFLOP/s, "
         "ratio %.3f (JIT compile %.0f ms)\n",
         n, threads, runs, gj, gb, gj / gb, tjit * 1e3);
  free(tj);
  free(tb);
  free(cb);
  cpu_exe_destroy(x);
  arena_destroy(ar);
  ir_module_destroy(m);
  return 0;
}
