/* diff_run.h: running one module on the oracle and on the targets, for the
 * differential tests (compiled into each test with its own HAVE_LLVM). */
#ifndef TPUCC_TESTS_DIFF_DIFF_RUN_H
#define TPUCC_TESTS_DIFF_DIFF_RUN_H

#include "ir/ir.h"

/* How a target took a module. */
typedef enum diff_outcome {
  DIFF_RAN,     /* compiled and ran: *out holds the result */
  DIFF_REFUSED, /* the compiler returned an error: err holds its message */
  DIFF_FAILED,  /* it compiled but execution failed: err says why */
} diff_outcome;

/* ir_eval of m's entry on nargs args (TPU-numerics mode when tpu), the
 * result allocated in a. */
base_status diff_eval(const ir_module *m, bool tpu, ir_literal **args, int nargs, arena *a,
                      ir_literal **out, char *err, size_t errlen);

/* A clone of m through the passes/ pipeline at opt_level (passes NULL) or
 * through the comma-separated list passes, verifying after every pass; or
 * NULL with the first diagnostic in err. */
ir_module *diff_optimise(const ir_module *m, int opt_level, const char *passes, char *err,
                         size_t errlen);

/* Prints m as HLO text on stderr (a failing case's module). */
void diff_print_module(const ir_module *m);

/* Compiles m for the emulator target ("v3", "v2,mxu=64x64", ...) and runs
 * it on args. */
diff_outcome diff_run_tpu(const ir_module *m, const char *target, ir_literal **args, int nargs,
                          arena *a, ir_literal **out, char *err, size_t errlen);

#ifdef HAVE_LLVM
#include "backend/llvm/cpu.h"
/* Compiles m for the CPU JIT (one thread) under numerics and runs it. */
diff_outcome diff_run_cpu(const ir_module *m, cpu_numerics numerics, ir_literal **args, int nargs,
                          arena *a, ir_literal **out, char *err, size_t errlen);
#endif

#endif
