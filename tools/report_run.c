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

static ir_literal *rebuild(arena *a, const ir_shape *s, ir_literal **flat, int n, int *k) {
  if (s->type != IR_TUPLE) return *k < n ? flat[(*k)++] : NULL;
  ir_literal *l = arena_alloc(a, sizeof *l);
  l->shape = ir_shape_clone(a, s);
  l->elems = arena_array(a, (size_t)(s->ntuple ? s->ntuple : 1), sizeof(ir_literal *));
  for (int i = 0; i < s->ntuple; i++)
    l->elems[i] = rebuild(a, &s->tuple[i], flat, n, k);
  return l;
}

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

/* Writes the reports of one profiled run. */
static base_status write_reports(const tool_report *r, const tool_report_opts *ro, char *err,
                                 size_t errlen) {
  FILE *f;
  if (ro->stats) {
    const tpurt_stats_t *s = r->stats;
    fprintf(stderr, "stats (target %s): %llu cycles, %.6g s, %llu instructions\n", r->t.spec,
            (unsigned long long)s->cycles, s->seconds, (unsigned long long)s->instructions);
    tool_report_breakdown(s, r->t.mxus, stderr);
  }
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

/* Runs img on target with args; flat results into *flat (arena a). */
static base_status run_image(const tpub_image *img, const char *target, const tool_report_opts *ro,
                             ir_literal *const *args, int nargs, arena *a, ir_literal ***flat,
                             char *err, size_t errlen) {
  char why[512];
  tgt_target tg;
  if (tgt_parse(target, &tg, why, sizeof why)) {
    snprintf(err, errlen, "target '%s': %s", target, why);
    return ST_INVALID_ARGUMENT;
  }
  tpurt_profile_options_t po;
  tpurt_profile_options_init(&po);
  po.trace_path = ro->trace;
  po.trace_instructions = 1;
  tpu_profile prof = {&po, 0, NULL, NULL};
  tpurt_stats_t st;
  ir_literal *out = NULL;
  base_status rc = tpu_execute_profiled(img, target, NULL, args, nargs, a, &out, &st, NULL, &prof,
                                        err, errlen);
  if (rc == ST_OK) {
    tool_report r = {
        {target, (double)tg.clock_hz, (double)tg.hbm_bw, tg.mxus, tg.mxu_rows, tg.mxu_cols},
        &st,
        prof.nops,
        prof.info,
        prof.ops};
    rc = write_reports(&r, ro, err, errlen);
  }
  if (rc == ST_OK) *flat = (ir_literal **)out; /* flat results: m was NULL */
  free(prof.info);
  free(prof.ops);
  return rc;
}

base_status tool_report_run(const ir_module *m, const char *target, ir_precision precision,
                            const tool_report_opts *ro, ir_literal *const *args, int nargs,
                            arena *a, ir_literal **out, char *err, size_t errlen) {
  tpu_options o;
  tpu_options_init(&o);
  o.target = target ? target : "v3";
  o.precision = precision;
  diag *d = diag_create();
  tpub_image *img = NULL;
  base_status st = tpu_compile(m, &o, d, &img, NULL);
  if (st != ST_OK) {
    const char *t = diag_text(d);
    snprintf(err, errlen, "%s", t[0] ? t : "tpu: compilation failed");
    size_t n = strlen(err);
    while (n > 0 && err[n - 1] == '\n')
      err[--n] = 0;
    diag_destroy(d);
    return st;
  }
  diag_destroy(d);
  ir_literal **flat = NULL;
  st = run_image(img, o.target, ro, args, nargs, a, &flat, err, errlen);
  if (st == ST_OK) {
    const ir_comp *e = &m->comps.v[m->entry];
    int k = 0;
    *out = rebuild(a, &e->insts.v[e->root].shape, flat, (int)img->nresults, &k);
  }
  tpub_free(img);
  return st;
}

base_status tool_report_run_file(const char *path, const char *target, const tool_report_opts *ro,
                                 ir_literal *const *args, int nargs, arena *a, ir_literal ***out,
                                 int *nout, char *err, size_t errlen) {
  size_t n = 0;
  char *bytes = NULL;
  FILE *f = fopen(path, "rb");
  if (f) {
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (len >= 0) {
      bytes = malloc((size_t)len + 1);
      if (bytes) n = fread(bytes, 1, (size_t)len, f);
    }
    fclose(f);
  }
  if (!bytes) {
    snprintf(err, errlen, "%s: cannot read the file", path);
    return ST_IO_ERROR;
  }
  tpub_image *img = NULL;
  char why[512];
  int rc = tpub_read(bytes, n, NULL, &img, why, sizeof why);
  free(bytes);
  if (rc) {
    snprintf(err, errlen, "%s: %s", path, why);
    return ST_INVALID_ARGUMENT;
  }
  ir_literal **flat = NULL;
  base_status st =
      run_image(img, target ? target : img->target, ro, args, nargs, a, &flat, err, errlen);
  *nout = (int)img->nresults;
  *out = flat;
  tpub_free(img);
  return st;
}
#endif
