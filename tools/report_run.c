/* report_run.c: `tpucc run --report/--trace/--roofline` on TPU targets:
 * compile (or load a .tpub), execute once through libtpurt with a per-op
 * profile (tpurt_program_execute_profile), then write the reports
 * (report.c). Contract: report.h. */
#include "tools/report.h"

#ifdef TPUCC_HAVE_TPU
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "target.h"
#include "tpub.h"

static ir_type type_of(int dtype) {
  switch (dtype) {
  case TPUB_PRED:
    return IR_PRED;
  case TPUB_S8:
    return IR_S8;
  case TPUB_S32:
    return IR_S32;
  case TPUB_BF16:
    return IR_BF16;
  case TPUB_F16:
    return IR_F16;
  case TPUB_F32:
    return IR_F32;
  default:
    return IR_TYPE_INVALID;
  }
}

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
  base_status rc = ST_OK;
  uint8_t *bytes = NULL;
  size_t nbytes = 0;
  char why[512];
  tgt_target tg;
  if (tgt_parse(target, &tg, why, sizeof why)) {
    snprintf(err, errlen, "target '%s': %s", target, why);
    return ST_INVALID_ARGUMENT;
  }
  if (tpub_write(img, NULL, &bytes, &nbytes, why, sizeof why)) {
    snprintf(err, errlen, "tpu: cannot serialise the program: %s", why);
    return ST_INTERNAL;
  }
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = target;
  tpurt_device_t *dev = NULL;
  tpurt_program_t *prog = NULL;
  tpurt_buffer_t **in = calloc((size_t)nargs + 1, sizeof *in);
  tpurt_buffer_t **res = calloc((size_t)img->nresults + 1, sizeof *res);
  tpurt_op_stats_t *ops = NULL;
  tpurt_op_info_t *info = NULL;
  if (!in || !res) base_die("out of memory");
  if (tpurt_device_create(&o, &dev) != TPURT_OK) {
    snprintf(err, errlen, "tpu: cannot create a device for target '%s'", target);
    rc = ST_INVALID_ARGUMENT;
    goto done;
  }
  if (tpurt_program_load(dev, bytes, nbytes, &prog) != TPURT_OK) {
    snprintf(err, errlen, "tpu: program rejected: %s", tpurt_device_message(dev));
    rc = ST_INVALID_ARGUMENT;
    goto done;
  }
  if ((uint32_t)nargs != img->nparams) {
    snprintf(err, errlen, "tpu: %d arguments for %u parameters", nargs, img->nparams);
    rc = ST_INVALID_ARGUMENT;
    goto done;
  }
  for (int i = 0; i < nargs; i++) {
    const ir_literal *l = args[i];
    if (tpurt_buffer_create(dev, (tpurt_dtype_t)img->params[i].dtype, l->shape.rank, l->shape.dims,
                            l->data, l->nbytes, &in[i]) != TPURT_OK) {
      snprintf(err, errlen, "tpu: parameter %d: %s", i, tpurt_device_message(dev));
      rc = ST_INVALID_ARGUMENT;
      goto done;
    }
  }
  size_t nops = tpurt_program_op_count(prog);
  ops = calloc(nops, sizeof *ops);
  info = calloc(nops, sizeof *info);
  if (!ops || !info) base_die("out of memory");
  for (size_t i = 0; i < nops; i++)
    tpurt_program_op_info(prog, i, &info[i]);
  tpurt_profile_options_t po;
  tpurt_profile_options_init(&po);
  po.trace_path = ro->trace;
  po.trace_instructions = 1;
  tpurt_stats_t st;
  tpurt_status_t es =
      tpurt_program_execute_profile(prog, in, (size_t)nargs, res, img->nresults, &st, &po, ops);
  if (es != TPURT_OK) {
    snprintf(err, errlen, "tpu: execution failed: %s", tpurt_device_message(dev));
    rc = es == TPURT_RESOURCE_EXHAUSTED ? ST_RESOURCE_EXHAUSTED
         : es == TPURT_IO_ERROR         ? ST_IO_ERROR
                                        : ST_RUNTIME_FAULT;
    goto done;
  }
  tool_report r = {
      {target, (double)tg.clock_hz, (double)tg.hbm_bw, tg.mxus, tg.mxu_rows, tg.mxu_cols},
      &st,
      nops,
      info,
      ops};
  rc = write_reports(&r, ro, err, errlen);
  if (rc != ST_OK) goto done;
  ir_literal **fl = arena_array(a, (size_t)img->nresults + 1, sizeof(ir_literal *));
  for (uint32_t k = 0; k < img->nresults; k++) {
    ir_shape sh =
        ir_shape_array(type_of(img->results[k].dtype), img->results[k].rank, img->results[k].dims);
    fl[k] = ir_literal_create(a, &sh);
    if (tpurt_buffer_read(res[k], fl[k]->data, fl[k]->nbytes) != TPURT_OK) {
      snprintf(err, errlen, "tpu: result %u: %s", k, tpurt_device_message(dev));
      rc = ST_INTERNAL;
      goto done;
    }
  }
  *flat = fl;
done:
  for (uint32_t k = 0; k < img->nresults; k++)
    tpurt_buffer_destroy(res[k]);
  for (int i = 0; i < nargs; i++)
    tpurt_buffer_destroy(in[i]);
  free(in);
  free(res);
  free(ops);
  free(info);
  tpurt_program_destroy(prog);
  tpurt_device_destroy(dev);
  free(bytes);
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
