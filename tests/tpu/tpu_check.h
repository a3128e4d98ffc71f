/* tpu_check.h: shared helpers of the TPU backend tests: deterministic
 * random inputs, running a module on the reference evaluator and on the
 * emulator, and comparing under the documented tolerances
 * (docs/tpu-backend.md, "Testing"):
 *  - integer and pred results, and modules without dot/convolution/
 *    transcendentals: exact (floats equal as values; NaN matches NaN);
 *  - modules with dot or convolution: |got - ref| <= tol_mxu * (1 + |ref|)
 *    where tol_mxu = 2^-7 (1 + sqrt(K)) for the largest contraction length
 *    K (one bf16 rounding of each operand per product, errors adding up
 *    like a random walk over K; 1e-5 (1 + sqrt(K)) at HIGH/HIGHEST);
 *    f32 parameters are drawn bf16-representable, so a dot or convolution
 *    fed directly by parameters is exact against the evaluator;
 *  - modules with an f32 reduce of at most R elements per output: at least
 *    2^-20 (1 + sqrt(R)) (1 + |ref|) (sums over the trailing dims fold in
 *    the vector unit's row order, large ones into few outputs as a tree);
 *  - transcendental vector ops (exp, log, tanh, logistic, rsqrt, expm1,
 *    log1p, sine, cosine, cbrt, power, atan2): the emulator rounds a double
 *    result once, the evaluator calls f32 libm: 4 ulps relative. */
#ifndef TPUCC_TESTS_TPU_CHECK_H
#define TPUCC_TESTS_TPU_CHECK_H

#include "backend/tpu/tpu.h"

/* Fills args for m's entry (one literal per parameter) from seed. */
ir_literal **tc_args(const ir_module *m, arena *a, uint64_t seed);

/* Compiles m for target (precision given), runs it on the emulator and on
 * the evaluator with the same args and compares. Returns 0 on a match, 1
 * on a mismatch or failure (printed to stdout with name), 2 when the
 * evaluator itself refuses the module. tol < 0 picks the tolerance from
 * the module's ops. */
int tc_check(const ir_module *m, const char *target, ir_precision prec, uint64_t seed,
             double tol, const char *name);

/* Parses HLO text (dies on a parse error: tests hold valid text). */
ir_module *tc_parse(const char *name, const char *text);

#endif
