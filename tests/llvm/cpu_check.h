/* cpu_check.h: shared helpers of the CPU-backend tests: building modules
 * programmatically, deterministic random arguments, and comparing the JIT's
 * results with the reference evaluator (ir_eval), the oracle. */
#ifndef TPUCC_TESTS_LLVM_CPU_CHECK_H
#define TPUCC_TESTS_LLVM_CPU_CHECK_H

#include "backend/llvm/cpu.h"

/* A module under construction: m with the entry computation c. */
typedef struct tmod {
  ir_module *m;
  ir_comp_id c;
} tmod;

tmod tm_new(const char *name);
ir_id tm_param(tmod *t, int n, ir_type ty, int rank, const int64_t *dims);
ir_id tm_param_shape(tmod *t, int n, const ir_shape *s);
ir_id tm_const_f32(tmod *t, float v);
ir_id tm_const_scalar(tmod *t, ir_type ty, double v);
/* ir_build in t's current computation. */
ir_id tm_op(tmod *t, ir_op op, const ir_id *ops, int nops, const ir_attrs *a);
ir_id tm_call(tmod *t, ir_op op, const ir_id *ops, int nops, const ir_attrs *a, ir_comp_id callee);
/* A scalar computation (p0, p1) -> op(p0, p1) of type ty. */
ir_comp_id tm_binary_comp(tmod *t, ir_op op, ir_type ty);
/* Sets the root of the current computation and finishes every computation. */
void tm_finish(tmod *t, ir_id root);

ir_ints tm_ints(arena *a, int n, const int64_t *v);

/* Fills l with deterministic values for seed: floats mostly in [-4, 4]
 * with some 0, -0, inf and NaN when specials; ints over the type's range. */
void tm_fill(ir_literal *l, uint64_t seed, bool specials);
/* Random arguments for every parameter of the entry. */
ir_literal **tm_args(tmod *t, arena *a, uint64_t seed, bool specials);
/* tm_args with every float element a small integer in [-3, 3]: products
 * and partial sums of small dots and convolutions are then exact in f32,
 * so any summation order and FMA give the evaluator's bits. */
ir_literal **tm_int_args(tmod *t, arena *a, uint64_t seed);

/* Compares a and b: equal shapes; elements bit-equal, or both NaN, or
 * (floats, when tol > 0) |a-b| <= tol * (1 + |a|). Prints the first
 * difference to stderr with context. Returns true when they agree. */
bool tm_agree(const ir_literal *a, const ir_literal *b, double tol, const char *what);

/* Evaluates t with ir_eval and with the CPU JIT (numerics n, threads);
 * returns whether they agree within tol (0: bit-exact). */
bool tm_check(tmod *t, ir_literal **args, cpu_numerics n, int threads, double tol, const char *what);
/* The same with full options. */
bool tm_check_opts(tmod *t, ir_literal **args, const cpu_options *o, double tol, const char *what);

#endif
