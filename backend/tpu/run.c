/* run.c: executing compiled images on libtpurt's emulator, and the
 * execution targets "v3"/"v2" of the tool target table (compile, run,
 * results as literals) with optional statistics (--stats, --stats-json)
 * and memory report. Statistics keys: docs/tpu-backend.md. */
#include "backend/tpu/tpu.h"

#include <stdlib.h>
#include <time.h>

#include "asm.h"
#include "tpurt.h"
#include "mxu.h" /* the emulator's host kernels */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef VEC(ir_shape) shape_vec;

static void leaves(arena *a, const ir_shape *s, shape_vec *out) {
  if (s->type == IR_TUPLE) {
    for (int k = 0; k < s->ntuple; k++) leaves(a, &s->tuple[k], out);
    return;
  }
  VEC_PUSH(a, *out, *s);
}

typedef VEC(const ir_literal *) literal_vec;

/* The array leaves of l, depth first: the program's parameters for a
 * tuple argument (backend/tpu/compile.c flattens tuple parameters so). */
static void literal_leaves(arena *a, const ir_literal *l, literal_vec *out) {
  if (l->shape.type == IR_TUPLE) {
    for (int k = 0; k < l->shape.ntuple; k++) literal_leaves(a, l->elems[k], out);
    return;
  }
  VEC_PUSH(a, *out, l);
}

/* Rebuilds the root's (possibly nested tuple) literal from flat leaves. */
static ir_literal *rebuild(arena *a, const ir_shape *s, ir_literal **flat, int *k) {
  if (s->type != IR_TUPLE) return flat[(*k)++];
  ir_literal *l = arena_alloc(a, sizeof *l);
  l->shape = ir_shape_clone(a, s);
  l->elems = arena_array(a, (size_t)(s->ntuple ? s->ntuple : 1), sizeof(ir_literal *));
  for (int i = 0; i < s->ntuple; i++) l->elems[i] = rebuild(a, &s->tuple[i], flat, k);
  return l;
}

base_status tpu_execute(const tpub_image *img, const char *target, const ir_module *m,
                        ir_literal *const *args, int nargs, arena *a, ir_literal **out,
                        struct tpurt_stats *stats, double *host_seconds, char *err,
                        size_t errlen) {
  return tpu_execute_profiled(img, target, 0, m, args, nargs, a, out, stats, host_seconds, NULL,
                              err, errlen);
}

/* The base status of a failed tpurt call (other: the caller's choice). */
static base_status status_of(tpurt_status_t s, base_status other) {
  switch (s) {
  case TPURT_OUT_OF_MEMORY: return ST_OUT_OF_MEMORY;
  case TPURT_RESOURCE_EXHAUSTED: return ST_RESOURCE_EXHAUSTED;
  case TPURT_IO_ERROR: return ST_IO_ERROR;
  default: return other;
  }
}

/* A device for target (cycle_limit: its limit, 0 the default) with img
 * loaded on it; ST_OK, or a status with err set. *dev and *prog are for
 * the caller to destroy either way. */
static base_status load_on_device(const tpub_image *img, const char *target, uint64_t cycle_limit,
                                  const tpurt_peers_t *peers, const char *trace,
                                  int trace_per_rank, tpurt_device_t **dev, tpurt_program_t **prog, char *err,
                                  size_t errlen) {
  uint8_t *bytes = NULL;
  size_t nbytes = 0;
  char why[512];
  int wr = tpub_write(img, NULL, &bytes, &nbytes, why, sizeof why);
  if (wr) {
    snprintf(err, errlen, "tpu: cannot serialise the program: %s", why);
    return wr == -2 ? ST_OUT_OF_MEMORY : ST_INTERNAL;
  }
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = target;
  o.cycle_limit = cycle_limit;
  o.peers = peers;
  o.trace_path = trace;
  o.trace_per_rank = trace_per_rank;
  base_status rc = ST_OK;
  tpurt_status_t ts;
  if ((ts = tpurt_device_create(&o, dev)) == TPURT_OUT_OF_MEMORY) {
    snprintf(err, errlen, "tpu: out of memory creating the device");
    rc = ST_OUT_OF_MEMORY;
  } else if (ts != TPURT_OK) {
    tpurt_target_check(target, why, sizeof why);
    snprintf(err, errlen,
             "tpu: a compiled program runs only on a TPU target (v2, v3, v2-8, v3-8, or one "
             "with overrides such as v3,mxu=64x64), not '%s'%s%.300s",
             target, why[0] ? ": " : "", why);
    rc = ST_INVALID_ARGUMENT;
  } else if ((ts = tpurt_program_load(*dev, bytes, nbytes, prog)) != TPURT_OK) {
    snprintf(err, errlen, "tpu: program rejected: %s", tpurt_device_message(*dev));
    rc = status_of(ts, ST_INTERNAL);
  }
  free(bytes);
  return rc;
}

base_status tpu_execute_profiled(const tpub_image *img, const char *target, uint64_t cycle_limit,
                                 const ir_module *m, ir_literal *const *args, int nargs, arena *a,
                                 ir_literal **out, struct tpurt_stats *stats, double *host_seconds,
                                 tpu_profile *prof, char *err, size_t errlen) {
  base_status rc = ST_OK;
  tpurt_device_t *dev = NULL;
  tpurt_program_t *prog = NULL;
  literal_vec flat_args = {0};
  for (int i = 0; i < nargs; i++) literal_leaves(a, args[i], &flat_args);
  tpurt_buffer_t **in = calloc((size_t)flat_args.n + 1, sizeof *in);
  tpurt_buffer_t **res = calloc((size_t)img->nresults + 1, sizeof *res);
  tpurt_status_t ts;
  if (!in || !res) {
    snprintf(err, errlen, "tpu: out of memory");
    rc = ST_OUT_OF_MEMORY;
    goto done;
  }
  if ((rc = load_on_device(img, target, cycle_limit, NULL, NULL, 0, &dev, &prog, err, errlen)) != ST_OK)
    goto done;
  if ((uint32_t)flat_args.n != img->nparams) {
    snprintf(err, errlen, "tpu: %d arguments (array leaves) for %u parameters", flat_args.n,
             img->nparams);
    rc = ST_INVALID_ARGUMENT;
    goto done;
  }
  for (int i = 0; i < flat_args.n; i++) {
    const ir_literal *l = flat_args.v[i];
    if ((ts = tpurt_buffer_create(dev, (tpurt_dtype_t)img->params[i].dtype, l->shape.rank,
                                  l->shape.dims, l->data, l->nbytes, &in[i])) != TPURT_OK) {
      snprintf(err, errlen, "tpu: parameter %d: %s", i, tpurt_device_message(dev));
      rc = status_of(ts, ST_INVALID_ARGUMENT);
      goto done;
    }
  }
  tpurt_stats_t st;
  double t0 = now_s();
  tpurt_status_t es;
  if (prof) {
    prof->target = arena_strdup(a, target);
    prof->nops = tpurt_program_op_count(prog);
    prof->info = calloc(prof->nops + 1, sizeof *prof->info);
    prof->ops = calloc(prof->nops + 1, sizeof *prof->ops);
    if (!prof->info || !prof->ops) {
      snprintf(err, errlen, "tpu: out of memory");
      rc = ST_OUT_OF_MEMORY;
      goto done;
    }
    for (size_t i = 0; i < prof->nops; i++) { /* strings outlive the program: copy to a */
      tpurt_program_op_info(prog, i, &prof->info[i]);
      prof->info[i].name = arena_strdup(a, prof->info[i].name ? prof->info[i].name : "");
      prof->info[i].kind = arena_strdup(a, prof->info[i].kind ? prof->info[i].kind : "");
      prof->info[i].file = arena_strdup(a, prof->info[i].file ? prof->info[i].file : "");
    }
    es = tpurt_program_execute_profile(prog, in, (size_t)flat_args.n, res, img->nresults, &st,
                                       prof->options, prof->ops);
  } else {
    es = tpurt_program_execute(prog, in, (size_t)flat_args.n, res, img->nresults, &st);
  }
  double t1 = now_s();
  if (host_seconds) *host_seconds = t1 - t0;
  if (stats) *stats = st;
  if (es != TPURT_OK) {
    snprintf(err, errlen, "tpu: execution %s: %s",
             es == TPURT_RESOURCE_EXHAUSTED ? "stopped at its cycle limit" : "failed",
             tpurt_device_message(dev));
    rc = status_of(es, ST_RUNTIME_FAULT); /* IO_ERROR: the profile's trace file */
    goto done;
  }
  if (!m) { /* results described by the image's signature */
    ir_literal **flat = arena_array(a, (size_t)img->nresults + 1, sizeof(ir_literal *));
    for (uint32_t k = 0; k < img->nresults; k++) {
      ir_shape sh = ir_shape_array(ir_type_of_tpurt_code(img->results[k].dtype),
                                   img->results[k].rank, img->results[k].dims);
      flat[k] = ir_literal_try_create(a, &sh);
      if (!flat[k]) {
        snprintf(err, errlen, "tpu: out of memory for result %u", k);
        rc = ST_OUT_OF_MEMORY;
        goto done;
      }
      if (tpurt_buffer_read(res[k], flat[k]->data, flat[k]->nbytes) != TPURT_OK) {
        snprintf(err, errlen, "tpu: result %u: %s", k, tpurt_device_message(dev));
        rc = ST_INTERNAL;
        goto done;
      }
    }
    *out = (ir_literal *)flat; /* the caller asked for the flat array */
    goto done;
  }
  {
    const ir_shape *rs = m->comps.v[m->entry].insts.v[m->comps.v[m->entry].root].shape;
    shape_vec ls = {0};
    leaves(a, rs, &ls);
    ir_literal **flat = arena_array(a, (size_t)ls.n + 1, sizeof(ir_literal *));
    for (int k = 0; k < ls.n; k++) {
      flat[k] = ir_literal_try_create(a, &ls.v[k]);
      if (!flat[k]) {
        snprintf(err, errlen, "tpu: out of memory for result %d", k);
        rc = ST_OUT_OF_MEMORY;
        goto done;
      }
      if (tpurt_buffer_read(res[k], flat[k]->data, flat[k]->nbytes) != TPURT_OK) {
        snprintf(err, errlen, "tpu: result %d: %s", k, tpurt_device_message(dev));
        rc = ST_INTERNAL;
        goto done;
      }
    }
    int k = 0;
    *out = rebuild(a, rs, flat, &k);
  }
done:
  for (uint32_t k = 0; res && k < img->nresults; k++) tpurt_buffer_destroy(res[k]);
  for (int i = 0; in && i < flat_args.n; i++) tpurt_buffer_destroy(in[i]);
  free(in);
  free(res);
  tpurt_program_destroy(prog);
  tpurt_device_destroy(dev);
  return rc;
}

static base_status compile_or_fail(const ir_module *m, const tpu_options *o, tpub_image **img,
                                   tpu_compile_info *info, char *err, size_t errlen) {
  diag *d = diag_create();
  base_status st = tpu_compile(m, o, d, img, info);
  if (st != ST_OK) {
    const char *t = diag_text(d);
    snprintf(err, errlen, "%s", t[0] ? t : "tpu: compilation failed");
    size_t n = strlen(err);
    while (n > 0 && err[n - 1] == '\n') err[--n] = 0;
  }
  diag_destroy(d);
  return st;
}

static base_status run_preset(const char *target, const ir_module *m, ir_literal *const *args,
                              int nargs, arena *a, ir_literal **out, char *err, size_t errlen) {
  tpu_options o;
  tpu_options_init(&o);
  o.target = target;
  tpub_image *img = NULL;
  base_status st = compile_or_fail(m, &o, &img, NULL, err, errlen);
  if (st != ST_OK) return st;
  st = tpu_execute(img, target, m, args, nargs, a, out, NULL, NULL, err, errlen);
  tpub_free(img);
  return st;
}

base_status tpu_run_v3(const ir_module *m, int64_t max_bytes, ir_literal *const *args, int nargs,
                       arena *a, ir_literal **out, char *err, size_t errlen) {
  (void)max_bytes;
  return run_preset("v3", m, args, nargs, a, out, err, errlen);
}

base_status tpu_run_v2(const ir_module *m, int64_t max_bytes, ir_literal *const *args, int nargs,
                       arena *a, ir_literal **out, char *err, size_t errlen) {
  (void)max_bytes;
  return run_preset("v2", m, args, nargs, a, out, err, errlen);
}

/* What --stats and --stats-json show of one run: the run's counters, its
 * target, and what is known of the program. info is NULL for a .tpub file:
 * its FLOPs then come from the OPS section (none without one), and the
 * compile-time figures are unknown (printed "n/a", left out of the JSON). */
typedef struct run_figures {
  const char *target;
  tgt_target t;
  const tpurt_stats_t *s;
  const tpu_compile_info *info; /* NULL: a .tpub file */
  uint64_t flops;
  bool have_flops;
  uint64_t code_words;
  double host;
  /* derived */
  double peak_flops, busy_frac, useful, achieved, intensity, roof_s;
  uint64_t hbm;
  const char *bound;
} run_figures;

static void figures_derive(run_figures *g) {
  const tpurt_stats_t *s = g->s;
  const tgt_target *t = &g->t;
  g->peak_flops = 2.0 * (double)tgt_peak_macs_per_cycle(t) * (double)t->clock_hz;
  g->busy_frac =
      s->cycles && t->mxus ? (double)s->mxu_busy_cycles / ((double)s->cycles * t->mxus) : 0;
  g->useful = s->mxu_peak_macs ? (double)s->mxu_macs / (double)s->mxu_peak_macs : 0;
  g->hbm = s->hbm_read_bytes + s->hbm_write_bytes;
  double flops = (double)g->flops;
  g->achieved = s->seconds > 0 ? flops / s->seconds : 0;
  g->intensity = g->hbm ? flops / (double)g->hbm : 0;
  double roof = (double)t->hbm_bw * g->intensity;
  g->bound = roof < g->peak_flops ? "memory" : "compute";
  g->roof_s = g->flops ? (roof < g->peak_flops ? (double)g->hbm / (double)t->hbm_bw
                                                : flops / g->peak_flops)
                       : (double)g->hbm / (double)t->hbm_bw;
}

static void figures_print(const run_figures *g, FILE *f) {
  const tpurt_stats_t *s = g->s;
  const tgt_target *t = &g->t;
  const tpu_compile_info *info = g->info;
  fprintf(f, "stats (target %s):\n", g->target);
  fprintf(f, "  cycles            %llu\n", (unsigned long long)s->cycles);
  fprintf(f, "  time              %.6g s at %.0f MHz\n", s->seconds, (double)t->clock_hz / 1e6);
  fprintf(f, "  precision         %s\n", info ? info->precision : "n/a (compiled program)");
  fprintf(f, "  MXU busy          %.1f%% (array cycles streaming rows)\n", 100 * g->busy_frac);
  fprintf(f, "  MXU useful        %.1f%% (useful MACs / peak MACs)\n", 100 * g->useful);
  if (g->have_flops)
    fprintf(f, "  FLOP/s            %.4g achieved of %.4g peak (%llu flops)\n", g->achieved,
            g->peak_flops, (unsigned long long)g->flops);
  else
    fprintf(f, "  FLOP/s            n/a (the program has no OPS section) of %.4g peak\n",
            g->peak_flops);
  fprintf(f, "  HBM               %llu bytes (%llu read, %llu written), busy %.1f%%\n",
          (unsigned long long)g->hbm, (unsigned long long)s->hbm_read_bytes,
          (unsigned long long)s->hbm_write_bytes,
          s->cycles ? 100.0 * (double)s->hbm_busy_cycles / (double)s->cycles : 0);
  if (g->have_flops)
    fprintf(f, "  roofline          %s-bound: %.3g FLOP/byte, bound %.4g s (%.1f%% achieved)\n",
            g->bound, g->intensity, g->roof_s, s->seconds > 0 ? 100 * g->roof_s / s->seconds : 0);
  fprintf(f, "  instructions      %llu issued, %llu in the program\n",
          (unsigned long long)s->instructions, (unsigned long long)g->code_words);
  if (info)
    fprintf(f, "  compile           %.3f s; emulation %.3f s host (%.3g cycles/s)\n",
            info->compile_seconds, g->host, g->host > 0 ? (double)s->cycles / g->host : 0);
  else
    fprintf(f, "  emulation         %.3f s host (%.3g cycles/s)\n", g->host,
            g->host > 0 ? (double)s->cycles / g->host : 0);
  fprintf(f, "  host MXU kernel   %s (the emulator's fast path on this host; every kernel gives the "
          "same bits and cycles)\n", emu_mxu_impl_name(emu_mxu_impl_selected(0)));
  fprintf(f, "  %-8s", "unit");
#define HEAD(field, label)                                                                         \
  if (*label) fprintf(f, " %10s", label);
  TPURT_UNIT_COUNTERS(HEAD)
#undef HEAD
  fputc('\n', f);
  for (int u = 0; u < TPURT_MAX_UNITS; u++) {
    const tpurt_unit_stats_t *us = &s->units[u];
    if (!us->instructions) continue;
    fprintf(f, "  %-8s", us->name ? us->name : "?");
#define CELL(field, label)                                                                         \
  if (*label) fprintf(f, " %10llu", (unsigned long long)us->field);
    TPURT_UNIT_COUNTERS(CELL)
#undef CELL
    fputc('\n', f);
  }
  /* The TPU v1 paper's Table 3 (docs/profiling.md). */
  tpurt_breakdown_t b;
  tpurt_stats_breakdown(s, t->mxus, &b);
  double k = b.total ? 100.0 / (double)b.total : 0;
  fprintf(f, "  cycle breakdown (TPU v1 Table 3 style, %% of %llu MXU cycles = cycles x %d MXUs)\n",
          (unsigned long long)b.total, t->mxus);
  fprintf(f, "    array active      %6.1f%%  rows streaming through the array\n",
          k * (double)b.array_active);
  fprintf(f, "    weight stall      %6.1f%%  mswap waiting for its weight tile\n",
          k * (double)b.weight_stall);
  fprintf(f, "    weight shift      %6.1f%%  MXU slot: weight loads, swaps, result pops\n",
          k * (double)b.weight_shift);
  fprintf(f, "    non-matrix        %6.1f%%  MXU idle while other units work\n",
          k * (double)b.non_matrix);
  fprintf(f, "    dependency stall  %6.1f%%  waiting for registers, accumulators, fences\n",
          k * (double)b.dependency_stall);
  fprintf(f, "    input/DMA stall   %6.1f%%  waiting on semaphores (DMA'd inputs, other units)\n",
          k * (double)b.input_stall);
}

/* Writes the --stats-json object (keys: docs/tpu-backend.md). */
static base_status figures_json(const run_figures *g, const char *path, char *err,
                                size_t errlen) {
  FILE *j = fopen(path, "w");
  if (!j) {
    snprintf(err, errlen, "--stats-json: cannot write %s", path);
    return ST_IO_ERROR;
  }
  const tpurt_stats_t *s = g->s;
  fprintf(j,
          "{\"target\": \"%s\", \"cycles\": %llu, \"seconds\": %.9g, \"peak_flops\": %.6g, "
          "\"mxu_busy_fraction\": %.6f, \"mxu_useful_fraction\": %.6f, \"hbm_bytes\": %llu, "
          "\"host_seconds\": %.6f, \"mxu_host_kernel\": \"%s\"",
          g->target, (unsigned long long)s->cycles, s->seconds, g->peak_flops, g->busy_frac,
          g->useful, (unsigned long long)g->hbm, g->host,
          emu_mxu_impl_name(emu_mxu_impl_selected(0)));
#define KEY(field, kind) fprintf(j, ", \"" #field "\": %llu", (unsigned long long)s->field);
  TPURT_RUN_COUNTERS(KEY)
#undef KEY
  if (g->have_flops)
    fprintf(j,
            ", \"flops\": %llu, \"achieved_flops\": %.6g, \"roofline_bound\": \"%s\", "
            "\"roofline_seconds\": %.9g",
            (unsigned long long)g->flops, g->achieved, g->bound, g->roof_s);
  if (g->info)
    fprintf(j,
            ", \"precision\": \"%s\", \"compile_seconds\": %.6f, \"hbm_peak_bytes\": %llu, "
            "\"vmem_peak_bytes\": %llu",
            g->info->precision, g->info->compile_seconds, (unsigned long long)g->info->hbm_peak,
            (unsigned long long)g->info->vmem_peak);
  fputs("}\n", j);
  if (ferror(j) | fclose(j)) {
    snprintf(err, errlen, "--stats-json: error writing %s", path);
    return ST_IO_ERROR;
  }
  return ST_OK;
}

/* Runs img and reports what r asks for; info NULL: a .tpub file. */
static base_status run_and_report(const tpub_image *img, const char *target, const ir_module *m,
                                  const tpu_run_report *r, const tpu_compile_info *info,
                                  ir_literal *const *args, int nargs, arena *a, ir_literal **out,
                                  char *err, size_t errlen) {
  tpurt_stats_t s;
  run_figures g;
  memset(&g, 0, sizeof g);
  base_status st = tpu_execute_profiled(img, target, r->max_cycles, m, args, nargs, a, out, &s,
                                        &g.host, r->profile, err, errlen);
  if (st != ST_OK) return st;
  if (r->stats_out) *r->stats_out = s;
  if (!r->stats && !r->json_path) return ST_OK;
  g.target = target;
  g.s = &s;
  g.info = info;
  char terr[128];
  if (tgt_parse(target, &g.t, terr, sizeof terr)) memset(&g.t, 0, sizeof g.t);
  if (info) {
    g.flops = info->flops;
    g.have_flops = true;
    g.code_words = info->instructions;
  } else {
    for (uint32_t k = 0; k < img->nops; k++) g.flops += img->ops[k].flops;
    g.have_flops = img->nops > 0;
    g.code_words = img->ncode;
  }
  figures_derive(&g);
  if (r->stats) figures_print(&g, r->out ? r->out : stderr);
  return r->json_path ? figures_json(&g, r->json_path, err, errlen) : ST_OK;
}

base_status tpu_run_report_exec(const ir_module *m, const tpu_run_report *r,
                                ir_literal *const *args, int nargs, arena *a, ir_literal **out,
                                char *err, size_t errlen) {
  tpu_options o;
  tpu_options_init(&o);
  o.target = r->target ? r->target : "v3";
  o.precision = r->precision;
  o.memory_report = r->memory_report;
  o.explain = r->explain;
  o.steps = r->steps;
  tpub_image *img = NULL;
  tpu_compile_info info;
  memset(&info, 0, sizeof info);
  base_status st = compile_or_fail(m, &o, &img, &info, err, errlen);
  if (r->memory_report && info.memory_report) fputs(info.memory_report, r->out ? r->out : stderr);
  if (info.explain) fputs(info.explain, r->out ? r->out : stderr);
  if (st == ST_OK) st = run_and_report(img, o.target, m, r, &info, args, nargs, a, out, err, errlen);
  tpub_free(img);
  tpu_info_free(&info);
  return st;
}

base_status tpu_emit_file(const ir_module *m, const tpu_options *o, const char *emit,
                          const char *path, FILE *report, char *err, size_t errlen) {
  tpub_image *img = NULL;
  tpu_compile_info info;
  memset(&info, 0, sizeof info);
  base_status st = compile_or_fail(m, o, &img, &info, err, errlen);
  if (o->memory_report && info.memory_report) fputs(info.memory_report, report ? report : stderr);
  if (info.explain) fputs(info.explain, report ? report : stderr);
  tpu_info_free(&info);
  if (st != ST_OK) return st;
  uint8_t *bytes = NULL;
  size_t n = 0;
  char why[512];
  int rc;
  if (!strcmp(emit, "asm")) rc = isa_disassemble(img, NULL, (char **)&bytes, &n);
  else rc = tpub_write(img, NULL, &bytes, &n, why, sizeof why);
  tpub_free(img);
  if (rc) {
    snprintf(err, errlen, "tpu: cannot write the program: %s",
             rc == -2 || !strcmp(emit, "asm") ? "out of memory" : why);
    return rc == -2 || !strcmp(emit, "asm") ? ST_OUT_OF_MEMORY : ST_INTERNAL;
  }
  if (!path || !strcmp(path, "-")) {
    if (fwrite(bytes, 1, n, stdout) != n) st = ST_IO_ERROR;
  } else {
    st = ir_file_write(path, bytes, n, err, errlen);
  }
  rt_free(NULL, bytes);
  return st;
}

/* ---- running .tpub files ------------------------------------------------------ */

static base_status load_image(const char *path, tpub_image **img, char *err, size_t errlen) {
  uint8_t *data = NULL;
  size_t len = 0;
  switch (tpub_read_file(path, NULL, 1, &data, &len, err, errlen)) {
  case TPUB_FILE_OK: break;
  case TPUB_FILE_NOT_FOUND: return ST_NOT_FOUND;
  case TPUB_FILE_TOO_LARGE: return ST_RESOURCE_EXHAUSTED;
  case TPUB_FILE_NOT_TPUB: return ST_INVALID_ARGUMENT;
  case TPUB_FILE_NO_MEMORY: return ST_OUT_OF_MEMORY;
  default: return ST_IO_ERROR;
  }
  char why[512];
  int rc = tpub_read(data, len, NULL, img, why, sizeof why);
  rt_free(NULL, data);
  if (rc == -2) {
    snprintf(err, errlen, "%s: out of memory", path);
    return ST_OUT_OF_MEMORY;
  }
  if (rc) {
    snprintf(err, errlen, "%s: not a valid .tpub program: %s", path, why);
    return ST_INVALID_ARGUMENT;
  }
  return ST_OK;
}

base_status tpu_file_params(const char *path, arena *a, ir_shape **out, int *n, char *err,
                            size_t errlen) {
  tpub_image *img = NULL;
  base_status st = load_image(path, &img, err, errlen);
  if (st != ST_OK) return st;
  *n = (int)img->nparams;
  *out = arena_array(a, (size_t)img->nparams + 1, sizeof(ir_shape));
  for (uint32_t k = 0; k < img->nparams; k++) {
    ir_type t = ir_type_of_tpurt_code(img->params[k].dtype);
    if (t == IR_TYPE_INVALID) {
      snprintf(err, errlen, "%s: parameter %u has dtype %s, which tpucc cannot feed", path, k,
               tpub_dtype_name(img->params[k].dtype));
      tpub_free(img);
      return ST_UNSUPPORTED;
    }
    (*out)[k] = ir_shape_array(t, img->params[k].rank, img->params[k].dims);
  }
  tpub_free(img);
  return ST_OK;
}

base_status tpu_run_file(const char *path, const tpu_run_report *r, ir_literal *const *args,
                         int nargs, arena *a, ir_literal ***out, int *nout, char *err,
                         size_t errlen) {
  tpub_image *img = NULL;
  base_status st = load_image(path, &img, err, errlen);
  if (st != ST_OK) return st;
  tpu_run_report none = {0};
  if (!r) r = &none;
  const char *target = r->target ? r->target : img->target;
  ir_literal *flat = NULL;
  st = run_and_report(img, target, NULL, r, NULL, args, nargs, a, &flat, err, errlen);
  *nout = (int)img->nresults;
  tpub_free(img);
  if (st == ST_OK) *out = (ir_literal **)flat;
  return st;
}

base_status tpu_execute_replicas(const tpub_image *img, const char *target, const ir_module *m,
                                 int nrep, ir_literal *const *const *args, int nargs, arena *a,
                                 ir_literal **outs, char *err, size_t errlen) {
  return tpu_execute_replicas_shared(img, target, m, nrep, args, nargs, a, outs, NULL, NULL, NULL,
                                     NULL, NULL, 0, err, errlen);
}

base_status tpu_execute_replicas_shared(const tpub_image *img, const char *target,
                                        const ir_module *m, int nrep,
                                        ir_literal *const *const *args, int nargs, arena *a,
                                        ir_literal **outs, const tpurt_peers_t *peers,
                                        tpurt_stats_t *stats, const char *trace,
                                        tpurt_link_stats_t **links, size_t *nlinks,
                                        int trace_per_rank, char *err, size_t errlen) {
  base_status rc = ST_OK;
  tpurt_device_t *dev = NULL;
  tpurt_program_t *prog = NULL;
  uint32_t np = img->nparams, nr = img->nresults;
  bool follower = peers && peers->nranks > 1 && peers->rank != 0;
  tpurt_buffer_t **in = calloc((size_t)nrep * np + 1, sizeof *in);
  tpurt_buffer_t **res = calloc((size_t)nrep * nr + 1, sizeof *res);
  tpurt_status_t ts;
  if (!in || !res) {
    snprintf(err, errlen, "tpu: out of memory");
    rc = ST_OUT_OF_MEMORY;
    goto done;
  }
  if ((rc = load_on_device(img, target, 0, peers, trace, trace_per_rank, &dev, &prog, err, errlen)) != ST_OK) goto done;
  if (tpurt_device_core_count(dev) != nrep) {
    snprintf(err, errlen, "tpu: %d replicas asked for; target %s runs %d cores", nrep, target,
             tpurt_device_core_count(dev));
    rc = ST_INVALID_ARGUMENT;
    goto done;
  }
  /* a rank other than 0 of a shared pod: its parameters' values are not
   * read, one zeroed buffer of each parameter's shape serves every
   * replica */
  for (uint32_t i = 0; follower && i < np; i++) {
    const tpub_tensor *t = &img->params[i];
    if ((ts = tpurt_buffer_create(dev, (tpurt_dtype_t)t->dtype, t->rank, t->dims, NULL, 0,
                                  &in[i])) != TPURT_OK) {
      snprintf(err, errlen, "tpu: parameter %u: %s", i, tpurt_device_message(dev));
      rc = status_of(ts, ST_OUT_OF_MEMORY);
      goto done;
    }
    for (int r = 1; r < nrep; r++) in[(size_t)r * np + i] = in[i];
  }
  for (int r = 0; r < nrep && !follower; r++) {
    literal_vec flat = {0};
    for (int i = 0; i < nargs; i++) literal_leaves(a, args[r][i], &flat);
    if ((uint32_t)flat.n != np) {
      snprintf(err, errlen, "tpu: %d arguments (array leaves) for %u parameters", flat.n, np);
      rc = ST_INVALID_ARGUMENT;
      goto done;
    }
    for (int i = 0; i < flat.n; i++) {
      const ir_literal *l = flat.v[i];
      if ((ts = tpurt_buffer_create(dev, (tpurt_dtype_t)img->params[i].dtype, l->shape.rank,
                                    l->shape.dims, l->data, l->nbytes,
                                    &in[(size_t)r * np + (size_t)i])) != TPURT_OK) {
        snprintf(err, errlen, "tpu: replica %d, parameter %d: %s", r, i, tpurt_device_message(dev));
        rc = status_of(ts, ST_INVALID_ARGUMENT);
        goto done;
      }
    }
  }
  if ((ts = tpurt_program_execute_replicas(prog, nrep, in, np, res, nr, stats)) != TPURT_OK) {
    snprintf(err, errlen, "tpu: execution %s: %s",
             ts == TPURT_RESOURCE_EXHAUSTED ? "stopped at its cycle limit" : "failed",
             tpurt_device_message(dev));
    rc = status_of(ts, ST_RUNTIME_FAULT);
    goto done;
  }
  if (links) { /* every rank's device has every link's figures */
    *nlinks = tpurt_device_link_count(dev);
    *links = arena_array(a, *nlinks + 1, sizeof **links);
    for (size_t k = 0; k < *nlinks; k++) tpurt_device_link_stats(dev, k, &(*links)[k]);
  }
  const ir_shape *rs = m->comps.v[m->entry].insts.v[m->comps.v[m->entry].root].shape;
  shape_vec ls = {0};
  leaves(a, rs, &ls);
  /* the replicas whose results this rank holds: every one on rank 0 */
  int lo = follower ? peers->rank * (nrep / peers->nranks) : 0;
  int hi = follower ? lo + nrep / peers->nranks : nrep;
  for (int r = 0; r < nrep; r++) outs[r] = NULL;
  for (int r = lo; r < hi && rc == ST_OK; r++) {
    ir_literal **flat = arena_array(a, (size_t)ls.n + 1, sizeof(ir_literal *));
    for (int k = 0; k < ls.n && rc == ST_OK; k++) {
      flat[k] = ir_literal_try_create(a, &ls.v[k]);
      if (!flat[k] || tpurt_buffer_read(res[(size_t)r * nr + (size_t)k], flat[k]->data,
                                        flat[k]->nbytes) != TPURT_OK) {
        snprintf(err, errlen, "tpu: replica %d, result %d: %s", r, k,
                 flat[k] ? tpurt_device_message(dev) : "out of memory");
        rc = flat[k] ? ST_INTERNAL : ST_OUT_OF_MEMORY;
      }
    }
    int k = 0;
    if (rc == ST_OK) outs[r] = rebuild(a, rs, flat, &k);
  }
done:
  for (size_t k = 0; res && k < (size_t)nrep * nr; k++) tpurt_buffer_destroy(res[k]);
  for (size_t i = 0; in && i < (follower ? np : (size_t)nrep * np); i++) tpurt_buffer_destroy(in[i]);
  free(in);
  free(res);
  tpurt_program_destroy(prog);
  tpurt_device_destroy(dev);
  return rc;
}
