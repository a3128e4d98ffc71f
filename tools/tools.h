/* tools.h: the one internal interface of tools/: the target table shared
 * by libtpucc and the CLI, the CLI's subcommands and their helpers.
 * Prefix tool_. Not installed; the public surface is include/tpucc.h. */
#ifndef TPUCC_TOOLS_H
#define TPUCC_TOOLS_H

#include "ir/ir.h"
#include "tools/replicas.h"
#include "tpucc.h"

/* ---- targets (targets.c) --------------------------------------------- */

/* Executes the entry of m on args (already checked against the entry's
 * parameters) on the target spec names (its row's name, or for cpu the
 * name with options: driver.h), with the host functions of ffi (NULL:
 * none) for custom-calls. On success *out is the entry's result
 * literal (a tuple for tuple roots) allocated in a. On failure returns a
 * status and writes one line into err. */
typedef base_status (*tool_target_run_fn)(const ir_module *m, const char *spec, int64_t max_bytes,
                                          const ir_ffi_table *ffi, ir_literal *const *args, int nargs, arena *a,
                                          ir_literal **out, char *err, size_t errlen);

typedef struct tool_target {
  const char *name;        /* --target=NAME */
  const char *description; /* one line for --help */
  tool_target_run_fn run;
  /* N replicas (replicas.h); NULL: the target runs one. It refuses more
   * replicas than its device has cores. */
  tool_replicas_fn run_replicas;
} tool_target;

/* The table, in order; entry 0 is the default target. */
extern const tool_target tool_targets[];
extern const int tool_ntargets;
/* Finds the row of a target spec ("v3", "cpu,threads=2"), or NULL. */
const tool_target *tool_target_find(const char *spec);

/* The TPU backend's CLI hooks (targets.c; ST_UNSUPPORTED when tpucc was
 * built without backend/tpu). target: a spec ("v3,mxu=64x64"); precision:
 * "default", "high" or "highest" (NULL: default). */
typedef struct tool_tpu_opts {
  const char *target, *precision, *stats_json;
  bool stats, memory_report;
  bool explain; /* the lowering's tiling decisions, after the passes' */
  int all_reduce; /* --all-reduce: tpu_all_reduce (0: the cost model chooses) */
  const char *report, *trace, *roofline; /* per-op reports (tools/report.h) */
  uint64_t max_cycles; /* --max-cycles: the emulator's cycle limit (0: 10^9) */
  /* The backend's steps (tpu-lower, ...): --dump-dir / --dump-after dumps,
   * numbered from dump_seq, and --time-passes lines (tool_tpu_opts_steps). */
  const char *dump_dir, *dump_after;
  int dump_seq;
  bool time_steps;
  /* tool_tpu_run_replicas: the cores shared with other processes
   * (include/tpurt.h), or NULL; and NULL or nrep entries for each core's
   * statistics */
  const struct tpurt_peers *peers;
  struct tpurt_stats *replica_stats;
  struct tool_links *links; /* NULL, or the run's per-link figures */
  bool trace_per_rank; /* with peers: each rank traces its own cores (tpurt.h) */
} tool_tpu_opts;
/* The ICI links of a replicated run (include/tpurt.h, tpurt_link_stats_t;
 * in the run's arena). */
typedef struct tool_links {
  struct tpurt_link_stats *v;
  size_t n;
} tool_links;
/* Writes the compiled program (emit "tpub" or "asm") to out. */
base_status tool_tpu_emit(const ir_module *m, const tool_tpu_opts *o, const char *emit,
                          const char *out, char *err, size_t errlen);
/* Compiles and runs on the emulator, printing --stats / writing
 * --stats-json / the memory report as asked. */
base_status tool_tpu_run(const ir_module *m, const tool_tpu_opts *o, ir_literal *const *args,
                         int nargs, arena *a, ir_literal **out, char *err, size_t errlen);
/* tool_tpu_run for nrep replicas, one per core of o->target (a board or
 * pod: "v3-8"): compiles m once and runs it with args[r] as replica r's
 * arguments, outs[r] its result. Of the report flags only o->trace
 * applies: a Chrome trace of every core's instructions, one process row
 * per core. */
base_status tool_tpu_run_replicas(const ir_module *m, const tool_tpu_opts *o, int nrep,
                                  ir_literal *const *const *args, int nargs, arena *a,
                                  ir_literal **outs, char *err, size_t errlen);
/* .tpub programs: tool_tpu_file_params gives the parameter shapes of the
 * signature; tool_tpu_run_file runs the program (on target, or the one it
 * records) and returns its flat results. */
base_status tool_tpu_file_params(const char *path, arena *a, ir_shape **out, int *np, char *err,
                                 size_t errlen);
base_status tool_tpu_run_file(const char *path, const tool_tpu_opts *o, const char *target,
                              ir_literal *const *args, int nargs, arena *a, ir_literal ***out,
                              int *nout, char *err, size_t errlen);
/* Lists the TPU backend's steps (--list-passes); nothing without it. */
void tool_tpu_list_steps(FILE *f);
/* True when name is a TPU target spec (v2, v3, v3-8, with overrides). */
bool tool_tpu_target(const char *name);

/* The cpu target (backend/llvm; ST_UNSUPPORTED when built without LLVM)
 * with the options of spec ("cpu,threads=2,numerics=strict"; those left
 * out from TPUCC_CPU_THREADS / TPUCC_CPU_NUMERICS, driver.h); stats prints,
 * and stats_json writes, the figures that apply to a CPU run
 * (docs/cli.md); dump_llvm: a file for the LLVM IR (--dump-dir). */
typedef struct tool_cpu_opts {
  const char *spec, *stats_json;
  bool stats;
  const char *dump_llvm; /* when set: the optimised LLVM IR is written here */
} tool_cpu_opts;
base_status tool_cpu_run(const ir_module *m, const tool_cpu_opts *o, ir_literal *const *args,
                         int nargs, arena *a, ir_literal **out, char *err, size_t errlen);

/* ---- random inputs (random.c) ---------------------------------------- */

/* splitmix64: the generator behind --random-inputs. */
uint64_t tool_random_next(uint64_t *state);
/* Fills an array literal in row-major order from *state: floats uniform in
 * [-1, 1) (rounded to the type), s8/s32 uniform in [-8, 8), pred 0/1. */
void tool_random_fill(ir_literal *l, uint64_t *state);
/* --random-inputs: makes and fills args[i] for i in [from, n), of shapes
 * ps[i] (names[i] for messages), continuing the stream in *state. Each is
 * at most IR_TENSOR_MAX_FILE bytes and all together at most
 * TOOL_RANDOM_MAX_TOTAL, checked before anything is made. Over a cap:
 * ST_RESOURCE_EXHAUSTED; the host has no memory: ST_OUT_OF_MEMORY; either
 * with a message naming the parameter in err. */
#define TOOL_RANDOM_MAX_TOTAL ((size_t)8 << 30)
base_status tool_random_inputs(arena *a, const ir_shape *ps, const char *const *names, int from,
                               int n, uint64_t *state, ir_literal **args, char *err,
                               size_t errlen);

/* ---- command line (args.c) -------------------------------------------- */

/* A tiny option scanner: "--name=value", "--name value", "-o value",
 * "-ovalue" and bare positional arguments; "--" ends options. */
typedef struct tool_args {
  int argc, i;
  char **argv;
  const char *cmd; /* "tpucc run", for messages */
  bool only_positional;
} tool_args;

/* Advances to the next argument. Returns false at the end. On return:
 * *name is the option's name without dashes ("input", "o") or NULL for a
 * positional argument; *value its value: after '=' when written inline,
 * else NULL (call tool_args_value to take the next argument). */
bool tool_args_next(tool_args *a, const char **name, const char **value);
/* Returns the option's value: inline, or the next argument; NULL (after
 * printing an error) when missing. */
const char *tool_args_value(tool_args *a, const char *name, const char *inline_value);
/* Prints "CMD: error: ..." to stderr. */
void tool_error(const char *cmd, const char *fmt, ...) BASE_PRINTF(2, 3);
/* Parses --language's value ("hlo" or "tg"); false after printing an error. */
bool tool_parse_language(const char *cmd, const char *v, tpucc_language_t *out);
/* Parses a number option; false after printing an error. */
bool tool_parse_double(const char *cmd, const char *name, const char *v, double *out);
bool tool_parse_int(const char *cmd, const char *name, const char *v, int64_t min, int64_t max,
                    int64_t *out);

/* ---- optimisation (options: cmd_opt.c; running passes/: api.c) -------- */

/* What `-O`, `--passes`, `--dump-*`, `--time-passes` and `--explain` ask. */
typedef struct tool_opt_options {
  int opt_level;          /* pipeline level 0..2 when passes is NULL (0: nothing) */
  const char *passes;     /* "a,b,c": run these instead, in order */
  const char *dump_dir;   /* HLO after each pass into DIR, or NULL */
  const char *dump_after; /* regex over pass names for the dumps, or NULL */
  bool time_passes;       /* per-pass times to stderr */
  bool explain;           /* pass decisions to stderr */
  bool verify_each;       /* ir_verify after every pass (else once at the end) */
  int64_t all_reduce_combine; /* --all-reduce-combine: bytes, < 0 off, 0 the target's */
  const char *target;     /* the TPU target spec the module is compiled for: passes
                             size their decisions (VMEM) by it; NULL or a non-TPU
                             target: v3's figures */
} tool_opt_options;
void tool_opt_options_init(tool_opt_options *o); /* -O2, nothing else */
/* Parses one of the options above (name without dashes, as tool_args_next
 * gives it; value may be NULL); returns 1 when it was one (0 when not, -1
 * after printing a usage error). Used by compile, run and opt. */
int tool_opt_parse(tool_args *ar, const char *name, const char *value, tool_opt_options *o);
/* Gives the TPU backend's steps the dump and timing options of o: their
 * dumps are numbered on after the passes o runs. */
void tool_tpu_opts_steps(tool_tpu_opts *t, const tool_opt_options *o);
/* Runs the passes on a compiled module (verifying after each with
 * o->verify_each, else once after the last) and
 * refreshes its signature. On failure the session message holds the
 * reason and the diagnostics the details. */
tpucc_status_t tool_module_optimize(tpucc_module_t *m, const tool_opt_options *o);
/* The module's IR (owned by m). */
ir_module *tool_module_ir(tpucc_module_t *m);

/* ---- subcommands (cmd_*.c) -------------------------------------------- */

/* Exit codes of the CLI. */
enum { TOOL_EXIT_OK = 0, TOOL_EXIT_FAIL = 1, TOOL_EXIT_USAGE = 2 };

/* Writes len bytes of text to the file out (NULL or "-": standard
 * output). Returns TOOL_EXIT_OK, or TOOL_EXIT_FAIL after reporting the
 * error as cmd's (cmd_opt.c). */
int tool_write_output(const char *cmd, const char *out, const char *text, size_t len);
int tool_cmd_run(int argc, char **argv);
int tool_cmd_compile(int argc, char **argv);
int tool_cmd_opt(int argc, char **argv); /* cmd_opt.c */
/* Creates a session and compiles file into *out_m. TOOL_EXIT_OK; or
 * TOOL_EXIT_USAGE after printing the diagnostics (*out_s to destroy);
 * or TOOL_EXIT_FAIL when no session could be made (cmd_opt.c). */
int tool_open_module(const char *cmd, const char *file, const tpucc_compile_options_t *co, tpucc_session_t **out_s,
                     tpucc_module_t **out_m);
int tool_cmd_grad(int argc, char **argv); /* cmd_grad.c */
void tool_help_grad(FILE *f);
void tool_help_opt(FILE *f);
/* The help lines of the options tool_opt_parse reads (cmd_opt.c). */
void tool_help_opt_flags(FILE *f);
void tool_help_run(FILE *f);
void tool_help_compile(FILE *f);
int tpucc_cmd_asm(int argc, char **argv);
void tpucc_help_asm(FILE *f); /* cmd_asm.c (runtime) */
int tpucc_cmd_dump_module(int argc, char **argv);
void tpucc_help_dump_module(FILE *f); /* cmd_dump_module.c */
int tool_cmd_train(int argc, char **argv);
void tool_help_train(FILE *f); /* cmd_train.c */

#endif
