/* targets.c: the table of execution targets, shared by libtpucc
 * (tpucc_execute, tpucc_target_*) and the CLI (--target, --help).
 *
 * Adding a target is one row in tool_targets: its name, a one-line
 * description, and a run function with the tool_target_run_fn contract
 * (tools.h). The first row is the default target. Planned rows: "cpu" (the
 * LLVM JIT of backend/llvm), "v2" and "v3" (the TPU emulator presets). */
#include "tools/tools.h"
#ifdef TPUCC_HAVE_LLVM
#include "backend/llvm/cpu.h" /* cpu: backend/llvm's JIT */
#endif

/* interp: the reference evaluator, the oracle every backend is checked
 * against. */
static base_status run_interp(const ir_module *m, int64_t max_bytes, ir_literal *const *args,
                              int nargs, arena *a, ir_literal **out, char *err, size_t errlen) {
  ir_eval_options o;
  ir_eval_options_init(&o);
  if (max_bytes > 0) o.max_bytes = max_bytes;
  return ir_eval(m, &o, args, nargs, a, out, err, errlen);
}

const tool_target tool_targets[] = {
    {"interp", "the reference evaluator (ir/eval.c): exact and slow, the oracle", run_interp},
#ifdef TPUCC_HAVE_LLVM
    {"cpu", "native code through LLVM (ORC JIT), vectorised and threaded", cpu_run_target},
#endif
};
const int tool_ntargets = (int)COUNTOF(tool_targets);

const tool_target *tool_target_find(const char *name) {
  for (int i = 0; i < tool_ntargets; i++)
    if (strcmp(tool_targets[i].name, name) == 0) return &tool_targets[i];
  return NULL;
}
