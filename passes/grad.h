/* grad.h: gradients as a module-to-module transformation (reverse mode).
 * Not a pass of the optimisation pipeline: the CLI (`tpucc grad`),
 * libtpucc (tpucc_grad) and the .tg builtins grad/value_and_grad call it,
 * then compile what it returns like any other module.
 *
 * Every op of ir/ops.def has a row in one table (grad_rules.c): a rule
 * (its vector-Jacobian product as IR), ZERO (no gradient mathematically:
 * compare, floor, sign, integer ops; nothing flows back through it) or
 * NONE (asking for a gradient through it is a located error). */
#ifndef TPUCC_PASSES_GRAD_H
#define TPUCC_PASSES_GRAD_H

#include "ir/ir.h"

typedef struct ir_grad_options {
  const int *wrt; /* parameter numbers of the entry to differentiate; NULL = every floating-point parameter */
  int nwrt;
  bool remat;     /* recompute forward values in the backward pass instead of saving them */
} ir_grad_options;

/* wrt NULL, nwrt 0, remat false. */
void ir_grad_options_init(ir_grad_options *o);

/* The VJP module of m's entry, as jax.vjp defines it: entry params = m's
 * params, then one cotangent per result of m's entry (same shape/type,
 * result order: a tuple root has one per leaf, depth first, as libtpucc
 * lists results); result = tuple
 * of gradients w.r.t. the chosen params, in the order given (default:
 * parameter order). m is not changed; *out is a new module (destroy with
 * ir_module_destroy), verified. Errors (nothing in *out): ST_INVALID_ARGUMENT
 * for a bad wrt list (out of range, repeated, not floating point) or a
 * nested tuple result not made by tuple instructions; ST_UNSUPPORTED, located at the instruction
 * ("file:line:col: error: 'NAME' (op): ..."), when a gradient is asked through an
 * op whose table row is NONE or a form of an op the rule does not cover. o
 * may be NULL (the defaults). */
base_status ir_grad_module(const ir_module *m, const ir_grad_options *o, ir_module **out, char *err,
                           size_t errlen);

/* value_and_grad: as ir_grad_module for an entry with ONE scalar floating
 * result, taking no cotangent (seed 1) and returning the tuple (value,
 * grads...). A result that is not a floating-point scalar is
 * ST_INVALID_ARGUMENT. */
base_status ir_value_and_grad_module(const ir_module *m, const ir_grad_options *o, ir_module **out,
                                     char *err, size_t errlen);

/* The in-module form, for frontends (.tg grad/value_and_grad): copies
 * computation c of m (which stays) into a new computation *out_c of m and
 * differentiates the copy: its signature is that of ir_grad_module's
 * entry, or with value_and_grad that of ir_value_and_grad_module's. The
 * errors are ir_grad_module's; after one, *out_c is a computation nothing
 * uses (it still verifies). */
base_status ir_grad_computation(ir_module *m, ir_comp_id c, const ir_grad_options *o, bool value_and_grad,
                                ir_comp_id *out_c, char *err, size_t errlen);

/* Appends to computation into a copy of computation callee whose
 * parameters are args (ids in into); returns the copy of callee's root. */
ir_id ir_grad_inline(ir_module *m, ir_comp_id into, ir_comp_id callee, const ir_id *args);

/* What remat changes, measured on a module ir_grad_module wrote, in its
 * instruction order: the number of values of the entry computed before the
 * backward pass starts (before the first instruction that depends on a
 * parameter numbered nprimal or above, a cotangent) and read after that
 * point; parameters and constants are not counted. With remat the backward
 * pass recomputes what it reads, so only parameters and constants are live
 * across. (The optimiser's CSE may merge the recomputed copies with the
 * forward values again: the choice is the written module's.) */
int ir_grad_saved_values(const ir_module *vjp, int nprimal);

/* ---- the rule table (grad_rules.c) ------------------------------------ */

typedef enum pass_grad_kind {
  PASS_GRAD_UNSET, /* no row: a bug the table test reports */
  PASS_GRAD_RULE,  /* has a VJP rule */
  PASS_GRAD_ZERO,  /* no gradient mathematically: contributes nothing */
  PASS_GRAD_NONE,  /* no gradient defined here: a located error when asked */
} pass_grad_kind;

/* The table row of op: its kind, and for NONE the reason named in the
 * error (a static string). */
pass_grad_kind pass_grad_kind_of(ir_op op);
const char *pass_grad_why_none(ir_op op);

#endif
