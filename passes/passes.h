/* passes.h: the one interface of passes/: IR-to-IR transformations and
 * the ordered pipeline that runs them.
 *
 * Each pass lives in its own file and exports one entry point
 *     bool pass_<name>(ir_module *m, pass_ctx *ctx);
 * that returns true when it changed the module. A pass leaves the module
 * verified (the pipeline re-verifies after every pass when ctx->verify, and
 * once at its end otherwise).
 * Decisions worth explaining (fusion, tiling) are recorded with
 * pass_explain; `--explain` prints them. */
#ifndef TPUCC_PASSES_H
#define TPUCC_PASSES_H

#include "ir/ir.h"

struct tgt_target;

/* The target a module is compiled for, as the target-independent passes
 * see it: its description and its answers to the questions a pass asks
 * about what the target's kernels can run. A backend fills it in from the
 * code that lowers (backend/tpu: tpu_pass_target), so a pass decides with
 * the same rules. Every member may be NULL: the pass then takes its
 * default, stated with each question. Reasons returned are static strings
 * or allocated in the arena given. */
typedef struct pass_target pass_target;
struct pass_target {
  /* A TPU's description (runtime/isa/target.h): its vector-register tiles
   * (layout) and TPU numerics (constfold). NULL: no TPU; layouts take the
   * 8 x 128 default tiles, constant folding the default numerics. */
  const struct tgt_target *tpu;
  const void *self; /* the backend's state for its answers */
  /* Why an f32 reduce with the one-op reducer `op` (add, maximum or
   * minimum) over the R trailing elements of each of O rows cannot join
   * a row fusion (the target running it with its elementwise producers
   * and consumers as one row kernel); NULL when it can. Default (NULL
   * hook): it can. */
  const char *(*row_reduce_refusal)(const pass_target *t, ir_op op, int64_t R, int64_t O, arena *a);
  /* Whether the attention pattern of passes/fusion.c with `rows` query
   * rows of sk keys each runs as one fused kernel (kCustom): NULL when it
   * does, with *out_plan saying what it keeps in on-chip memory; else the
   * reason. Default (NULL hook): it does, with no plan to tell. */
  const char *(*attention_refusal)(const pass_target *t, int64_t rows, int64_t sk, arena *a,
                                   const char **out_plan);
  /* The all-reduce combiner's limit on the bytes of one combined
   * all-reduce; 0 (the default): the combiner is off. A TPU target sets
   * PASS_AR_COMBINE_DEFAULT (its lowering reduces one array per
   * all-reduce); drv_opt.all_reduce_combine overrides it. */
  int64_t all_reduce_combine_bytes;
};

/* The all-reduce combiner's limit on a TPU target: XLA's default combine
 * threshold, 30 MiB. */
#define PASS_AR_COMBINE_DEFAULT ((int64_t)30 << 20)

typedef struct pass_ctx {
  diag *d;            /* user-facing diagnostics (located errors) */
  int opt_level;      /* 0..3 */
  bool verify;        /* run ir_verify after each pass; when false, pass_run
                         verifies once after the last pass */
  strbuf *explain;    /* when non-NULL, passes append their reasons */
  const pass_target *target; /* the target compiled for, or NULL: every
                                pass's defaults */
} pass_ctx;

typedef bool (*pass_fn)(ir_module *m, pass_ctx *ctx);

typedef struct pass_info {
  const char *name; /* as in --passes= and dump file names */
  pass_fn run;
  int min_opt_level; /* runs in the pipeline from this -O level */
  const char *doc;   /* one line for --list-passes */
} pass_info;

/* The pipeline in order (pipeline.c); terminated by a NULL name. */
extern const pass_info pass_pipeline[];
/* Looks a pass up by name; NULL when unknown. */
const pass_info *pass_find(const char *name);

/* Appends "pass: instruction: reason\n" to ctx->explain when enabled. */
void pass_explain(pass_ctx *ctx, const char *pass, const char *inst, const char *fmt, ...)
    BASE_PRINTF(4, 5);

typedef struct pass_run_options {
  const char *dump_dir;   /* write HLO after each pass here, or NULL */
  const char *dump_after; /* POSIX extended regex over pass names, or NULL = all */
  bool time_passes;       /* print per-pass wall time to `report` */
  FILE *report;           /* where --time-passes goes (stderr if NULL) */
} pass_run_options;

/* Runs `passes` (NULL: the pipeline for ctx->opt_level; else a comma-
 * separated list of names run in that order regardless of level).
 * Dump files are named <module>.<NNNN>.after_<pass>.hlo (NNNN counts from
 * 0000 = the input) so they sort in pipeline order. Returns ST_OK, or an
 * error status with the reason in ctx->d (unknown pass name, verifier
 * failure after a pass, dump directory not writable). */
base_status pass_run(ir_module *m, pass_ctx *ctx, const char *passes, const pass_run_options *opts);

/* ---- the passes (each file's first comment is its contract) ----------- */
bool pass_simplify(ir_module *m, pass_ctx *ctx);  /* simplify.c */
bool pass_constfold(ir_module *m, pass_ctx *ctx); /* constfold.c */
bool pass_cse(ir_module *m, pass_ctx *ctx);       /* cse.c */
bool pass_dce(ir_module *m, pass_ctx *ctx);       /* dce.c */
bool pass_fusion(ir_module *m, pass_ctx *ctx);    /* fusion.c */
bool pass_mof(ir_module *m, pass_ctx *ctx);       /* mof.c */
bool pass_layout(ir_module *m, pass_ctx *ctx);    /* layout.c */
bool pass_transpose_fold(ir_module *m, pass_ctx *ctx); /* transpose_fold.c */
bool pass_ar_combine(ir_module *m, pass_ctx *ctx);     /* ar_combine.c */
/* Not in the pipeline: drv_parse runs it on every parsed module. */
bool pass_expand(ir_module *m, pass_ctx *ctx); /* expand.c: batch norm, rng */

#endif
