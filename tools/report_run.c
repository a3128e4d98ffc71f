/* report_run.c: `tpucc run --report/--trace/--roofline` on TPU targets:
 * compile (or load a .tpub), execute once with a per-op profile
 * (tpu_execute_profiled, backend/tpu/run.c), then write the reports
 * (report.c). Contract: report.h. */
#include "tools/report.h"

#ifdef TPUCC_HAVE_TPU
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "target.h"
#include "tpub.h"

static int open_write(const char *path, FILE **f, char *err, size_t errlen, const char *flag) {
  *f = !strcmp(path, "-") ? stdout : fopen(path, "w");
  if (!*f) {
    snprintf(err, errlen, "--%s: cannot write %s", flag, path);
    return -1;
  }
  return 0;
}

static int close_write(FILE *f, int wrc, const char *path, char *err, size_t errlen,
                       const char *flag) {
  int bad = wrc || ferror(f);
  if (f == stdout)
    fflush(f);
  else if (fclose(f))
    bad = 1;
  if (bad) snprintf(err, errlen, "--%s: error writing %s", flag, path);
  return bad ? -1 : 0;
}

/* Writes the per-op reports of one profiled run (--stats is printed by the
 * backend's run, backend/tpu/run.c). */
static base_status write_reports(const tool_report *r, const tool_report_opts *ro, char *err,
                                 size_t errlen) {
  FILE *f;
  if (ro->report) {
    if (open_write(ro->report, &f, err, errlen, "report")) return ST_IO_ERROR;
    int wrc = !strcmp(ro->report, "-") ? tool_report_table(r, f) : tool_report_csv(r, f);
    if (close_write(f, wrc, ro->report, err, errlen, "report")) return ST_IO_ERROR;
  }
  if (ro->roofline) {
    if (open_write(ro->roofline, &f, err, errlen, "roofline")) return ST_IO_ERROR;
    if (close_write(f, tool_report_svg(r, f), ro->roofline, err, errlen, "roofline"))
      return ST_IO_ERROR;
  }
  return ST_OK;
}

/* A run with a per-op profile: m (compiled here) or the .tpub at path.
 * rr carries the statistics flags; the reports of ro follow the run. */
static base_status profiled_run(const ir_module *m, const char *path, const tpu_run_report *rr,
                                const tool_report_opts *ro, ir_literal *const *args, int nargs,
                                arena *a, void *out, int *nout, char *err, size_t errlen) {
  tpurt_profile_options_t po;
  tpurt_profile_options_init(&po);
  po.trace_path = ro->trace;
  po.trace_instructions = 1;
  tpu_profile prof = {&po, 0, NULL, NULL, NULL};
  tpurt_stats_t st;
  tpu_run_report r = *rr;
  r.profile = &prof;
  r.stats_out = &st;
  base_status rc = m ? tpu_run_report_exec(m, &r, args, nargs, a, out, err, errlen)
                     : tpu_run_file(path, &r, args, nargs, a, out, nout, err, errlen);
  if (rc == ST_OK) {
    const char *target = prof.target; /* given, or the one a .tpub records */
    char why[512];
    tgt_target tg;
    if (tgt_parse(target, &tg, why, sizeof why)) {
      snprintf(err, errlen, "target '%s': %s", target, why);
      rc = ST_INVALID_ARGUMENT;
    } else {
      tool_report rep = {
          {target, (double)tg.clock_hz, (double)tg.hbm_bw, tg.mxus, tg.mxu_rows, tg.mxu_cols},
          &st,
          prof.nops,
          prof.info,
          prof.ops};
      rc = write_reports(&rep, ro, err, errlen);
    }
  }
  free(prof.info);
  free(prof.ops);
  return rc;
}

base_status tool_report_run(const ir_module *m, const tpu_run_report *rr,
                            const tool_report_opts *ro, ir_literal *const *args, int nargs,
                            arena *a, ir_literal **out, char *err, size_t errlen) {
  return profiled_run(m, NULL, rr, ro, args, nargs, a, out, NULL, err, errlen);
}

base_status tool_report_run_file(const char *path, const tpu_run_report *rr,
                                 const tool_report_opts *ro, ir_literal *const *args, int nargs,
                                 arena *a, ir_literal ***out, int *nout, char *err,
                                 size_t errlen) {
  return profiled_run(NULL, path, rr, ro, args, nargs, a, out, nout, err, errlen);
}
#endif
