/* tpu.h: the one interface of backend/tpu/: lowering of a verified IR
 * module onto the tpucc TensorCore ISA (docs/isa.md) as a .tpub program
 * that libtpurt loads and its emulator runs. Prefix tpu_.
 *
 * What a compiled program looks like (docs/tpu-backend.md): parameters and
 * results live in HBM as dense row-major tensors of their own dtype; every
 * intermediate value is an HBM buffer (f32, bf16 or s32 words: pred and s8
 * are widened to s32 inside the program); each IR instruction becomes one
 * or more kernels (strided DMA copies, fused elementwise loops on 8x128
 * vector tiles, MXU matmuls tiled from the target description, folds for
 * reductions). Units are synchronised by semaphores inserted from a record
 * of which VMEM ranges each unit touched (emit.c).
 *
 * Not thread-safe per call; distinct calls are independent. */
#ifndef TPUCC_BACKEND_TPU_H
#define TPUCC_BACKEND_TPU_H

#include "ir/ir.h"
#include "target.h"
#include "tpub.h"

/* The backend's named steps, in order: tpu-lower (parameters and constants
 * placed in HBM, the entry lowered into kernels, each planning its tiles),
 * tpu-buffers (results placed; the HBM buffer assignment) and tpu-emit
 * (the image assembled and verified). With dump_dir (created when
 * missing), a text dump after each step whose name matches dump_after
 * (POSIX ERE; NULL: every step) goes to DIR/<module>.<NNNN>.after_<step>.txt,
 * NNNN counting on from first_seq (the passes' dumps use 0 .. passes run);
 * with time, each step's wall time and their total go to report (NULL:
 * stderr) as --time-passes lines. docs/passes.md describes the dumps. */
typedef struct tpu_step_options {
  const char *dump_dir, *dump_after;
  int first_seq;
  bool time;
  FILE *report;
} tpu_step_options;

/* The name of step k (0, 1, ...) and its one-line description into *doc
 * (when doc is non-NULL); NULL past the last step. */
const char *tpu_step_info(int k, const char **doc);

/* The all-reduce algorithm: AUTO (0) lets the compiler choose between
 * ring and direct from its cost model (tpu_all_reduce_choose); the
 * parameter server only when asked for. */
typedef enum tpu_all_reduce {
  TPU_AR_AUTO,
  TPU_AR_RING,   /* ring reduce-scatter then all-gather */
  TPU_AR_PS,     /* member 0 of each group folds and broadcasts */
  TPU_AR_DIRECT, /* every core puts each chunk straight to its owner and back */
} tpu_all_reduce;
/* The name of a, and the algorithm named s (-1 when none is). */
const char *tpu_all_reduce_name(tpu_all_reduce a);
int tpu_all_reduce_parse(const char *s);
/* The algorithm the cost model picks for an all-reduce of bytes over all
 * n cores of target t, one group in order: ring or direct; est gets the
 * modelled cycles of each (coll_choose.c says how). */
tpu_all_reduce tpu_all_reduce_choose(const tgt_target *t, int n, uint64_t bytes, double est[2]);

typedef struct tpu_options {
  const char *target;      /* target spec ("v3", "v2,mxu=64x64"); NULL: v3 */
  ir_precision precision;  /* floor for every dot/convolution's precision:
                              DEFAULT one bf16 pass, HIGH bf16x3,
                              HIGHEST bf16x6 */
  bool memory_report;      /* fill tpu_compile_info.memory_report */
  bool explain;            /* fill tpu_compile_info.explain */
  tpu_all_reduce all_reduce; /* how all-reduces over replicas are lowered
                              (docs/tpu-backend.md, "Collectives") */
  const tpu_step_options *steps; /* dumps and times of the steps, or NULL */
  int replicas;            /* replicas the program runs as, one per core; 0:
                              the module's replica_count (1 when absent) */
} tpu_options;

void tpu_options_init(tpu_options *o);

/* Fills *out (passes/passes.h) with target t's description and answers
 * for the passes; t is kept by pointer and must outlive *out. */
struct pass_target;
void tpu_pass_target(const tgt_target *t, struct pass_target *out);
/* tpu_pass_target for the target spec `spec` (parsed into *t) when it
 * names a TPU; otherwise (NULL, "cpu", a bad spec) v3's answers with no
 * TPU description (out->tpu NULL: no tiled layouts, the default
 * constant-folding numerics): what the passes decide for a module not
 * compiled for a TPU, whose fusions stay the ones v3 runs. */
void tpu_pass_target_for(const char *spec, tgt_target *t, struct pass_target *out);

/* What the compiler found out about a program (for --stats and
 * --memory-report). Strings are owned by the info (tpu_info_free). */
typedef struct tpu_compile_info {
  uint64_t flops;          /* 2 x MACs of every dot/convolution, useful only */
  uint64_t mxu_passes;     /* bf16 passes of the widest dot (1, 3 or 6) */
  const char *precision;   /* "bf16 (1 pass)", "bf16x3", "bf16x6", or "none" */
  uint64_t hbm_peak;       /* bytes of HBM the program uses */
  uint64_t vmem_peak;      /* largest VMEM footprint of a kernel */
  uint64_t instructions;   /* code words */
  double compile_seconds;
  uint64_t arena_bytes;    /* bytes the compilation allocated (a measure of
                              its work that does not depend on the machine) */
  char *memory_report;     /* NULL unless asked for; malloc'ed */
  char *explain;           /* NULL unless asked for; malloc'ed: the lowering's
                              tiling decisions, one "tiling: OP: why" line
                              each (docs/tpu-backend.md, "Explain") */
} tpu_compile_info;

void tpu_info_free(tpu_compile_info *info);

/* Compiles the entry computation of m for the target. On success returns
 * ST_OK and *out (free with tpub_free). On failure returns ST_UNSUPPORTED
 * (an op or shape the backend does not lower), ST_RESOURCE_EXHAUSTED (the
 * model does not fit: VMEM, HBM, code or SMEM) or ST_INVALID_ARGUMENT (bad
 * target), with located errors in d ("file:line:col: error: tpu: ..."). */
base_status tpu_compile(const ir_module *m, const tpu_options *o, diag *d,
                        tpub_image **out, tpu_compile_info *info);

/* Runs a compiled image on a fresh emulated device for its target with
 * literals as parameters (types and shapes checked); results as one
 * literal (a tuple for tuple roots) allocated in a; with m NULL, *out is
 * instead an array of the flat results (ir_literal **, cast). stats may be NULL;
 * host_seconds gets the wall time of the execution alone. */
struct tpurt_stats;
base_status tpu_execute(const tpub_image *img, const char *target,
                        const ir_module *m, ir_literal *const *args, int nargs,
                        arena *a, ir_literal **out, struct tpurt_stats *stats,
                        double *host_seconds, char *err, size_t errlen);

/* Runs a compiled image as nrep replicas, one per core of a device for
 * target (which must have nrep cores: "v3-8" for 8): args[r] holds replica
 * r's nargs literals, outs[r] gets its result (as tpu_execute with m). */
base_status tpu_execute_replicas(const tpub_image *img, const char *target, const ir_module *m,
                                 int nrep, ir_literal *const *const *args, int nargs, arena *a,
                                 ir_literal **outs, char *err, size_t errlen);
/* tpu_execute_replicas with the cores shared across processes (peers
 * NULL: all in this one; include/tpurt.h): rank 0 passes every replica's
 * arguments and gets every replica's result; the other ranks' args are
 * not read (may be NULL) and their outs hold their own cores' results
 * (n / R from rank x n / R), the others NULL. stats: NULL, or nrep
 * entries for every core's statistics (rank 0's complete, the other
 * ranks' their own cores'); trace:
 * NULL, or the path of a Chrome trace of every core's instructions (one
 * process row per core and one for the ICI links; written by rank 0, or
 * with trace_per_rank by each rank, of its own cores:
 * tpurt_device_options_t.trace_per_rank);
 * links: NULL, or on success *links gets the device's per-link figures of
 * the run (tpurt_device_link_stats; allocated in a, *nlinks of them). */
struct tpurt_peers;
struct tpurt_link_stats;
base_status tpu_execute_replicas_shared(const tpub_image *img, const char *target,
                                        const ir_module *m, int nrep,
                                        ir_literal *const *const *args, int nargs, arena *a,
                                        ir_literal **outs, const struct tpurt_peers *peers,
                                        struct tpurt_stats *stats, const char *trace,
                                        struct tpurt_link_stats **links, size_t *nlinks,
                                        int trace_per_rank, char *err, size_t errlen);
/* Profiling for tpu_execute_profiled: the run goes through
 * tpurt_program_execute_profile with `options`, and on success the op
 * table and per-op counters come back in info/ops (nops entries, malloc'd:
 * the caller frees both, also after a failure; the info strings are copied
 * into the arena a). */
struct tpurt_profile_options;
struct tpurt_op_info;
struct tpurt_op_stats;
typedef struct tpu_profile {
  const struct tpurt_profile_options *options;
  size_t nops;
  struct tpurt_op_info *info;
  struct tpurt_op_stats *ops;
  const char *target; /* out: the target the run used (in the arena) */
} tpu_profile;
/* tpu_execute with optional profiling (prof may be NULL) and a cycle
 * limit (0: the device's default, 10^9): a run that reaches it stops with
 * ST_RESOURCE_EXHAUSTED and an error naming the limit and the cycle. */
base_status tpu_execute_profiled(const tpub_image *img, const char *target,
                                 uint64_t cycle_limit,
                                 const ir_module *m, ir_literal *const *args,
                                 int nargs, arena *a, ir_literal **out,
                                 struct tpurt_stats *stats, double *host_seconds,
                                 tpu_profile *prof, char *err, size_t errlen);

/* The tool_target_run_fn contract of tools/tools.h for the presets: compile
 * for "v3" / "v2" and execute on the emulator. */
base_status tpu_run_v3(const ir_module *m, int64_t max_bytes,
                       ir_literal *const *args, int nargs, arena *a,
                       ir_literal **out, char *err, size_t errlen);
base_status tpu_run_v2(const ir_module *m, int64_t max_bytes,
                       ir_literal *const *args, int nargs, arena *a,
                       ir_literal **out, char *err, size_t errlen);

/* Compile + execute with a full report (the CLI's --stats, --stats-json,
 * --precision, --memory-report, and the per-op profile behind --report,
 * --trace and --roofline). Every field may be zero: then nothing is
 * reported. */
typedef struct tpu_run_report {
  const char *target;      /* NULL: v3 (tpu_run_file: the file's target) */
  ir_precision precision;  /* tpu_run_report_exec only */
  bool stats;              /* print the statistics to `out` */
  const char *json_path;   /* write the --stats-json keys of docs/tpu-backend.md */
  bool memory_report;      /* print the memory report to `out` (compiling only) */
  bool explain;            /* print the tiling decisions to `out` (compiling only) */
  FILE *out;               /* NULL: stderr */
  tpu_profile *profile;    /* non-NULL: run profiled (tpu_execute_profiled) */
  struct tpurt_stats *stats_out; /* non-NULL: receives the run's counters */
  uint64_t max_cycles;     /* the emulator's cycle limit (0: 10^9) */
  const tpu_step_options *steps; /* compiling: the steps' dumps and times, or NULL */
} tpu_run_report;
base_status tpu_run_report_exec(const ir_module *m, const tpu_run_report *r,
                                ir_literal *const *args, int nargs, arena *a,
                                ir_literal **out, char *err, size_t errlen);

/* Parameter shapes of a .tpub file (for generating inputs). */
base_status tpu_file_params(const char *path, arena *a, ir_shape **out, int *n, char *err,
                            size_t errlen);
/* Runs a .tpub file on its recorded target (or r->target) with args; the
 * results, flat in signature order, go to *out (*nout of them). r may be
 * NULL; its precision and memory_report do not apply (the program is
 * compiled), and the statistics show what the file records: FLOPs from its
 * OPS section, no compile-time figures. */
base_status tpu_run_file(const char *path, const tpu_run_report *r, ir_literal *const *args,
                         int nargs, arena *a, ir_literal ***out, int *nout, char *err,
                         size_t errlen);

/* Compiles m and writes the program to path ("-" or NULL: stdout) as a
 * .tpub file (emit "tpub") or assembler text (emit "asm"); the memory
 * report, when asked for, goes to report. */
base_status tpu_emit_file(const ir_module *m, const tpu_options *o, const char *emit,
                          const char *path, FILE *report, char *err, size_t errlen);

#endif
