/* report.h: the CLI's per-op reports of a TPU run (helper R): the CSV and
 * table of --report, the roofline SVG of --roofline, and the run that
 * produces them (report_run.c: compile, execute with a per-op profile,
 * write the trace of --trace). Every column and figure is documented in
 * docs/profiling.md. Prefix tool_report_. */
#ifndef TPUCC_TOOLS_REPORT_H
#define TPUCC_TOOLS_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "ir/ir.h"
#include "tpurt.h"

/* The target figures a report needs. */
typedef struct tool_report_target {
  const char *spec;
  double clock_hz, hbm_bw; /* Hz, bytes/s */
  int mxus, mxu_rows, mxu_cols;
} tool_report_target;

/* A run: totals, and per op its info and statistics (nops entries). */
typedef struct tool_report {
  tool_report_target t;
  const tpurt_stats_t *stats;
  size_t nops;
  const tpurt_op_info_t *info;
  const tpurt_op_stats_t *ops;
} tool_report;

/* The derived figures of one op (one CSV row). */
typedef struct tool_report_row {
  uint64_t cycles;          /* end_cycle - first_cycle */
  double share;             /* exclusive_cycles / run cycles */
  uint64_t stall_other;     /* sync + hbm + queue-full stalls */
  uint64_t useful_macs;     /* info.flops / 2 */
  double flops;             /* info.flops + vpu_element_ops */
  double intensity;         /* flops / HBM bytes; -1 when no HBM bytes */
  double achieved;          /* flops / (cycles / clock) */
  double peak;              /* the op's compute ceiling (MXU or vector) */
  double attainable;        /* min(peak, hbm_bw x intensity) */
  double roofline_fraction; /* achieved / attainable */
  const char *bound;        /* "compute", "memory" or "-" (no flops) */
} tool_report_row;

void tool_report_row_of(const tool_report *r, size_t i, tool_report_row *out);
/* Peak FLOP/s of the MXUs and of the vector unit (1024 element ops per
 * cycle). */
double tool_report_mxu_peak(const tool_report_target *t);
double tool_report_vpu_peak(const tool_report_target *t);

/* Writers; each returns 0, or -1 when the stream reports an error. Rows:
 * ops that executed at least one instruction, in program order. */
int tool_report_csv(const tool_report *r, FILE *f);
int tool_report_table(const tool_report *r, FILE *f);
int tool_report_svg(const tool_report *r, FILE *f);

/* What --report/--trace/--roofline asked for (NULL: not asked). */
typedef struct tool_report_opts {
  const char *report;   /* CSV path, or "-" for a table on stdout */
  const char *trace;    /* Chrome trace JSON path */
  const char *roofline; /* SVG path */
} tool_report_opts;

/* ---- many cores (report_ici.c) ------------------------------------------
 * A module run as one replica per core of a board or pod. Definitions
 * (docs/cli.md, "TPU statistics and reports"): the run's cycles are its
 * slowest core's; a core's compute cycles are its cycles less
 * ici_wait_cycles (its front end not blocked on ICI signals; the sends,
 * ici_send_cycles, run on DMA queues beside it); a link's utilisation is
 * busy_cycles / the run's cycles. */
typedef struct tool_ici_run {
  const char *target;
  double clock_hz, ici_bw, ici_latency; /* Hz, bytes/s per link, cycles per hop */
  int ncores;
  const tpurt_stats_t *cores; /* ncores */
  const tpurt_link_stats_t *links;
  size_t nlinks;
  int64_t allreduce_bytes; /* the module's one all-reduce over every core, or -1 */
} tool_ici_run;

/* An all-reduce against the ring bound
 *   bound = 2(N-1)/N x bytes / ici_bw + 2(N-1) x ici_latency / clock. */
typedef struct tool_ici_allreduce {
  int64_t bytes;
  double seconds;        /* the run's cycles / clock */
  double bus_bandwidth;  /* 2(N-1)/N x bytes / seconds, bytes/s */
  double bound_seconds, bound_fraction; /* bound, bound / seconds */
} tool_ici_allreduce_t;

/* Fills r; false when target is not a TPU spec (or no TPU backend). */
bool tool_ici_init(tool_ici_run *r, const char *target, int ncores, const tpurt_stats_t *cores,
                   const tpurt_link_stats_t *links, size_t nlinks, int64_t allreduce_bytes);
/* The bytes of m's all-reduce when m has exactly one (of any form) and it
 * groups all ncores replicas in one group of an array; else -1. */
int64_t tool_ici_allreduce_bytes(const ir_module *m, int ncores);
uint64_t tool_ici_cycles(const tool_ici_run *r);
uint64_t tool_ici_compute_cycles(const tpurt_stats_t *s);
double tool_ici_utilisation(const tool_ici_run *r, const tpurt_link_stats_t *l);
/* False (out zeroed) without an all-reduce over every core. */
bool tool_ici_allreduce(const tool_ici_run *r, tool_ici_allreduce_t *out);
/* Writers; 0, or -1 when the stream reports an error. Links: those that
 * carried data. stats_text: --stats (a line per core, per link, and the
 * all-reduce's); stats_json: --stats-json; report_table / report_csv:
 * --report=- and --report=FILE.csv. */
int tool_ici_stats_text(const tool_ici_run *r, FILE *f);
/* The --stats header line and the lines of cores lo .. hi - 1, each after
 * prefix (stats_text's; --rank-outputs prints a rank's own). */
void tool_ici_core_lines(const tool_ici_run *r, int lo, int hi, const char *prefix, FILE *f);
int tool_ici_stats_json(const tool_ici_run *r, FILE *f);
int tool_ici_report_table(const tool_ici_run *r, FILE *f);
int tool_ici_report_csv(const tool_ici_run *r, FILE *f);

#ifdef TPUCC_HAVE_TPU
#include "backend/tpu/tpu.h"
/* Compiles m as rr says (target, precision, statistics: tpu_run_report),
 * runs it on the emulator with a per-op profile and writes what ro asks
 * for. Results: as tool_tpu_run (a tuple literal for a tuple root),
 * allocated in a. rr's profile and stats_out are set here. */
base_status tool_report_run(const ir_module *m, const tpu_run_report *rr,
                            const tool_report_opts *ro, ir_literal *const *args, int nargs,
                            arena *a, ir_literal **out, char *err, size_t errlen);
/* The same for a .tpub file (run on rr->target, or the one it records);
 * the flat results in signature order go to *out (*nout of them). */
base_status tool_report_run_file(const char *path, const tpu_run_report *rr,
                                 const tool_report_opts *ro, ir_literal *const *args, int nargs,
                                 arena *a, ir_literal ***out, int *nout, char *err,
                                 size_t errlen);
#endif

#endif /* TPUCC_TOOLS_REPORT_H */
