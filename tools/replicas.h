/* replicas.h: replicated execution's input and result contract
 * (docs/collectives.md, "Running N replicas"), shared by every target.
 *
 * With N replicas, an input whose shape is its parameter's goes to every
 * replica; an input with one extra leading dimension of size N gives
 * replica r its slice r. With N > 1 every result comes back stacked along
 * a new leading dimension of size N (tuples element by element); with
 * N = 1 results are as the entry gives them. */
#ifndef TPUCC_TOOLS_REPLICAS_H
#define TPUCC_TOOLS_REPLICAS_H

#include "ir/ir.h"

/* Runs nrep replicas of m's entry: args[r][k] is replica r's argument k;
 * on success outs[r] is replica r's result, in a. A target that runs
 * replicas gives one (ir_eval_replicated for interp). */
typedef base_status (*tool_replicas_fn)(const ir_module *m, const char *spec, int64_t max_bytes,
                                        const ir_ffi_table *ffi, int nrep,
                                        ir_literal *const *const *args, int nargs, arena *a,
                                        ir_literal **outs, char *err, size_t errlen);

/* Whether an input of shape given fits parameter shape param with nrep
 * replicas: equal (every replica), or [nrep] + param (sliced; also with
 * one replica). */
bool tool_replica_input_fits(const ir_shape *given, const ir_shape *param, int nrep);

/* The per-replica arguments of nrep replicas from args (each fitting its
 * parameter of params, as tool_replica_input_fits): out[r][k] a view of
 * args[k] (its slice r when stacked; no copy), allocated in a. */
ir_literal ***tool_replica_split(const ir_shape *params, ir_literal *const *args, int nargs,
                                 int nrep, arena *a);

/* The results of nrep replicas stacked into one value in a: each array
 * leaf gains a leading dimension nrep (outs[r] at index r). NULL when a
 * leaf already has the most dimensions a shape holds. */
ir_literal *tool_replica_stack(ir_literal *const *outs, int nrep, arena *a);

/* The replicas a run of m asks for when none are given: the module's
 * replica_count (1 when it writes none or an invalid one). */
int tool_replicas_default(const ir_module *m);

#endif
