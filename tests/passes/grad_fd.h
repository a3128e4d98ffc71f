/* grad_fd.h: checks a VJP module against central finite differences on
 * the reference evaluator (shared by test_grad.c and grad_check.c).
 *
 * For seeded inputs (floats uniform in [lo, hi), integers in [0, 4),
 * pred 0/1) and cotangents (uniform in [-1, 1)), every element (or, past
 * max_elems, an evenly spaced sample) of every chosen floating-point
 * parameter is stepped by +-h (h = 1e-2 * max(1, |x|), and when that
 * misses, steps 4, 16 and 64 times smaller, each also through the
 * Richardson extrapolation with the step before; the step actually taken being the difference
 * of the rounded values); the difference of
 * S = sum over the results of cotangent * result, in double, divided by
 * the step, must match the VJP's element within
 *     tol = 2e-3 (1 + |grad|) + 16 eps A / step
 * where eps is the unit roundoff of the narrowest floating-point type the
 * module computes in (2^-24 for f32, 2^-8 when a bf16 value is involved)
 * and A = sum |cotangent * result| (the rounding of S, amplified by the
 * division). Where the function has a kink within the step (relu,
 * maximum, clamp), the one-sided differences disagree by more than 2 tol:
 * the gradient must then match one of them within 2 tol (the side without
 * the kink), and at most a quarter of the elements may be such points.
 * Elements whose differences are not finite (overflow near the point)
 * are not compared; a module with none left is GFD_SKIP. Checked in f64
 * (gfd_check_f64), eps is 2^-53 unless a narrower type stays. */
#ifndef TPUCC_TESTS_GRAD_FD_H
#define TPUCC_TESTS_GRAD_FD_H

#include "passes/grad.h"

typedef struct gfd_options {
  double lo, hi;     /* input range (default -1, 1) */
  uint64_t seed;
  int max_elems;     /* per parameter; 0: every element */
  bool remat;
  const int *wrt;    /* as ir_grad_options */
  int nwrt;
} gfd_options;
void gfd_options_init(gfd_options *o);

typedef enum gfd_outcome { GFD_PASS, GFD_FAIL, GFD_SKIP } gfd_outcome;

/* Transforms m (ir_grad_module) and checks the result in float64: m with
 * every f32 value made f64 (other types stay as they are), when the
 * transformation and the evaluator take that; else m as it is. GFD_SKIP
 * when the transformation or the evaluator refuses the module (msg says
 * why), GFD_FAIL with the first mismatch in msg. *out_checked counts the
 * elements compared (may be NULL); *out_f64 tells whether the check ran
 * in f64 (may be NULL). */
gfd_outcome gfd_check_f64(const ir_module *m, const gfd_options *o, char *msg, size_t msglen,
                          int *out_checked, bool *out_f64);
gfd_outcome gfd_check(const ir_module *m, const gfd_options *o, char *msg, size_t msglen, int *out_checked);

/* The seeded inputs of gfd_check for m's entry (arena a), for other
 * comparisons (NULL when a parameter is a tuple). */
ir_literal **gfd_inputs(arena *a, const ir_module *m, const gfd_options *o);

#endif
