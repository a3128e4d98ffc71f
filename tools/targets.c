/* targets.c: the table of execution targets, shared by libtpucc
 * (tpucc_execute, tpucc_target_*) and the CLI (--target, --help).
 *
 * Adding a target is one row in tool_targets: its name, a one-line
 * description, and a run function with the tool_target_run_fn contract
 * (tools.h). `tpucc run` defaults to "v3" when built (else "interp"). Rows: the TPU emulator
 * presets (when backend/tpu is built), "cpu" (backend/llvm's JIT, when LLVM
 * is found; its options come in the spec, driver.h) and "interp" (the
 * reference evaluator). */
#include "tools/tools.h"
#include <time.h>
#include "driver/driver.h" /* cpu specs; with LLVM, backend/llvm/cpu.h */
#ifdef TPUCC_HAVE_TPU
#include "backend/tpu/tpu.h" /* v3, v2: backend/tpu on libtpurt's emulator */
#include "tools/report.h"    /* --report, --trace, --roofline */
#endif

/* interp: the reference evaluator, the oracle every backend is checked
 * against. */
static base_status run_interp(const ir_module *m, const char *spec, int64_t max_bytes,
                              const ir_ffi_table *ffi, ir_literal *const *args, int nargs, arena *a, ir_literal **out,
                              char *err, size_t errlen) {
  (void)spec;
  ir_eval_options o;
  ir_eval_options_init(&o);
  if (max_bytes > 0) o.max_bytes = max_bytes;
  o.ffi = ffi;
  return ir_eval(m, &o, args, nargs, a, out, err, errlen);
}

/* A run of nrep replicas, more than the `most` target runs: the located
 * message of ir_check_runnable_replicas when the module's replica_count
 * asks for them, else a plain one. */
static base_status too_many_replicas(const ir_module *m, const char *target, int nrep, int most,
                                     char *err, size_t errlen) {
  if (ir_module_count_attr(m, "replica_count") != nrep ||
      !ir_check_runnable_replicas(m, target, NULL, most, NULL, err, errlen))
    snprintf(err, errlen, "%d replicas asked for; target %s runs at most %d", nrep, target, most);
  return ST_UNSUPPORTED;
}

/* interp, N replicas: each on a host thread (ir_eval_replicated). */
static base_status run_interp_replicas(const ir_module *m, const char *spec, int64_t max_bytes,
                                       const ir_ffi_table *ffi, int nrep,
                                       ir_literal *const *const *args, int nargs, arena *a,
                                       ir_literal **outs, char *err, size_t errlen) {
  (void)spec;
  if (nrep > IR_EVAL_MAX_REPLICAS)
    return too_many_replicas(m, "interp", nrep, IR_EVAL_MAX_REPLICAS, err, errlen);
  ir_eval_options o;
  ir_eval_options_init(&o);
  if (max_bytes > 0) o.max_bytes = max_bytes;
  o.ffi = ffi;
  return ir_eval_replicated(m, &o, nrep, args, nargs, a, outs, err, errlen);
}

#ifdef TPUCC_HAVE_TPU
static base_status run_tpu(const ir_module *m, const char *spec, int64_t max_bytes,
                           const ir_ffi_table *ffi, ir_literal *const *args, int nargs, arena *a,
                           ir_literal **out, char *err, size_t errlen) {
  (void)ffi; /* the TPU cannot call the host: its compile refuses such custom-calls */
  return (strcmp(spec, "v2") == 0 ? tpu_run_v2 : tpu_run_v3)(m, max_bytes, args, nargs, a, out,
                                                            err, errlen);
}
#endif

#ifdef TPUCC_HAVE_LLVM
/* cpu options for a run of nrep (at most CPU_MAX_REPLICAS) replicas from the spec, TPUCC_CPU_THREADS
 * and TPUCC_CPU_NUMERICS supplying the options it leaves out (driver.h).
 * A spec that names another replica count than the run's is an error. The
 * options point into *cs (the cache directory): it must outlive them. */
static base_status cpu_opts(const char *spec, int64_t max_bytes, const ir_ffi_table *ffi, int nrep,
                            drv_cpu_spec *cs, cpu_options *o, char *err, size_t errlen) {
  base_status st = drv_cpu_spec_parse(spec, true, cs, err, errlen);
  if (st != ST_OK) return st;
  if (cs->replicas != 1 && cs->replicas != nrep) {
    snprintf(err, errlen, "%s asks for %d replicas, the run has %d (--replicas)", spec, cs->replicas, nrep);
    return ST_INVALID_ARGUMENT;
  }
  cpu_options_init(o);
  drv_cpu_options(cs, o);
  o->replicas = nrep;
  if (max_bytes > 0) o->budget.max_bytes = max_bytes;
  o->ffi = ffi;
  return ST_OK;
}

static base_status run_cpu(const ir_module *m, const char *spec, int64_t max_bytes,
                           const ir_ffi_table *ffi, ir_literal *const *args, int nargs, arena *a, ir_literal **out,
                           char *err, size_t errlen) {
  cpu_options o;
  drv_cpu_spec cs;
  base_status st = cpu_opts(spec, max_bytes, ffi, 1, &cs, &o, err, errlen);
  return st != ST_OK ? st : cpu_run_once(m, &o, args, nargs, a, out, err, errlen);
}

/* cpu, N replicas: one host thread each (cpu_execute_replicas). */
static base_status run_cpu_replicas(const ir_module *m, const char *spec, int64_t max_bytes,
                                    const ir_ffi_table *ffi, int nrep, ir_literal *const *const *args,
                                    int nargs, arena *a, ir_literal **outs, char *err, size_t errlen) {
  if (nrep > CPU_MAX_REPLICAS) return too_many_replicas(m, "cpu", nrep, CPU_MAX_REPLICAS, err, errlen);
  cpu_options o;
  drv_cpu_spec cs;
  base_status st = cpu_opts(spec, max_bytes, ffi, nrep, &cs, &o, err, errlen);
  cpu_exe *x = NULL;
  if (st == ST_OK) st = cpu_compile(m, &o, &x, err, errlen);
  if (st != ST_OK) return st;
  const ir_comp *ec = &m->comps.v[m->entry];
  ir_literal **flat = arena_array(a, (size_t)nrep * (size_t)(nargs ? nargs : 1), sizeof *flat);
  for (int r = 0; r < nrep && st == ST_OK; r++) {
    for (int k = 0; k < nargs; k++) flat[r * nargs + k] = args[r][k];
    if (!(outs[r] = ir_literal_try_create(a, ec->insts.v[ec->root].shape))) {
      snprintf(err, errlen, "the host has no memory for the result");
      st = ST_OUT_OF_MEMORY;
    }
  }
  if (st == ST_OK) st = cpu_execute_replicas(x, nrep, flat, nargs, outs, err, errlen);
  cpu_exe_destroy(x);
  return st;
}
#endif

const tool_target tool_targets[] = {
    {"interp", "the reference evaluator (ir/eval.c): exact and slow, the oracle", run_interp,
     run_interp_replicas},
#ifdef TPUCC_HAVE_TPU
    {"v3", "TPU v3 core on the emulator (backend/tpu): 2 MXUs 128x128, 940 MHz", run_tpu, NULL},
    {"v2", "TPU v2 core on the emulator (backend/tpu): 1 MXU 128x128, 700 MHz", run_tpu, NULL},
#endif
#ifdef TPUCC_HAVE_LLVM
    {"cpu", "native code through LLVM (ORC JIT), vectorised and threaded", run_cpu,
     run_cpu_replicas},
#endif
};
const int tool_ntargets = (int)COUNTOF(tool_targets);

const tool_target *tool_target_find(const char *spec) {
  const char *name = drv_is_cpu_spec(spec) ? "cpu" : spec;
  for (int i = 0; i < tool_ntargets; i++)
    if (strcmp(tool_targets[i].name, name) == 0) return &tool_targets[i];
  return NULL;
}

/* ---- TPU backend hooks (tools.h) ----------------------------------------- */

#ifdef TPUCC_HAVE_TPU
static bool precision_of(const char *p, ir_precision *out) {
  if (!p || !strcmp(p, "default")) *out = IR_PREC_DEFAULT;
  else if (!strcmp(p, "high")) *out = IR_PREC_HIGH;
  else if (!strcmp(p, "highest")) *out = IR_PREC_HIGHEST;
  else return false;
  return true;
}

/* The backend's steps: dumps beside the passes', times on stderr. */
static tpu_step_options step_options(const tool_tpu_opts *o) {
  tpu_step_options so = {o->dump_dir, o->dump_after, o->dump_seq, o->time_steps, stderr};
  return so;
}
#endif

base_status tool_tpu_emit(const ir_module *m, const tool_tpu_opts *o, const char *emit,
                          const char *out, char *err, size_t errlen) {
#ifdef TPUCC_HAVE_TPU
  tpu_options to;
  tpu_options_init(&to);
  if (o->target) to.target = o->target;
  to.memory_report = o->memory_report;
  to.explain = o->explain;
  to.all_reduce = (tpu_all_reduce)o->all_reduce;
  tpu_step_options so = step_options(o);
  to.steps = &so;
  if (!precision_of(o->precision, &to.precision)) {
    snprintf(err, errlen, "--precision: '%s' is not default, high or highest", o->precision);
    return ST_INVALID_ARGUMENT;
  }
  return tpu_emit_file(m, &to, emit, out, stderr, err, errlen);
#else
  (void)m, (void)o, (void)emit, (void)out;
  snprintf(err, errlen, "built without the TPU backend");
  return ST_UNSUPPORTED;
#endif
}

base_status tool_tpu_run(const ir_module *m, const tool_tpu_opts *o, ir_literal *const *args,
                         int nargs, arena *a, ir_literal **out, char *err, size_t errlen) {
#ifdef TPUCC_HAVE_TPU
  tpu_run_report r = {0};
  r.target = o->target ? o->target : "v3";
  r.stats = o->stats;
  r.json_path = o->stats_json;
  r.memory_report = o->memory_report;
  r.explain = o->explain;
  r.max_cycles = o->max_cycles;
  tpu_step_options so = step_options(o);
  r.steps = &so;
  r.out = stderr;
  if (!precision_of(o->precision, &r.precision)) {
    snprintf(err, errlen, "--precision: '%s' is not default, high or highest", o->precision);
    return ST_INVALID_ARGUMENT;
  }
  if (o->report || o->trace || o->roofline) { /* per-op reports: tools/report_run.c */
    tool_report_opts ro = {o->report, o->trace, o->roofline};
    return tool_report_run(m, &r, &ro, args, nargs, a, out, err, errlen);
  }
  return tpu_run_report_exec(m, &r, args, nargs, a, out, err, errlen);
#else
  (void)m, (void)o, (void)args, (void)nargs, (void)a, (void)out;
  snprintf(err, errlen, "built without the TPU backend");
  return ST_UNSUPPORTED;
#endif
}

base_status tool_tpu_run_replicas(const ir_module *m, const tool_tpu_opts *o, int nrep,
                                  ir_literal *const *const *args, int nargs, arena *a,
                                  ir_literal **outs, char *err, size_t errlen) {
#ifdef TPUCC_HAVE_TPU
  tpu_options to;
  tpu_options_init(&to);
  to.target = o->target ? o->target : "v3";
  to.explain = o->explain;
  to.all_reduce = (tpu_all_reduce)o->all_reduce;
  to.replicas = nrep;
  if (!precision_of(o->precision, &to.precision)) {
    snprintf(err, errlen, "--precision: '%s' is not default, high or highest", o->precision);
    return ST_INVALID_ARGUMENT;
  }
  tpu_step_options so = step_options(o);
  to.steps = &so;
  diag *d = diag_create();
  tpub_image *img = NULL;
  base_status st = tpu_compile(m, &to, d, &img, NULL);
  if (st != ST_OK) {
    snprintf(err, errlen, "%s", diag_text(d));
    size_t n = strlen(err);
    while (n && err[n - 1] == '\n') err[--n] = 0;
  } else {
    st = tpu_execute_replicas_shared(img, to.target, m, nrep, args, nargs, a, outs, o->peers,
                                     o->replica_stats, o->trace, o->links ? &o->links->v : NULL,
                                     o->links ? &o->links->n : NULL, o->trace_per_rank, err,
                                     errlen);
  }
  tpub_free(img);
  diag_destroy(d);
  return st;
#else
  (void)m, (void)o, (void)nrep, (void)args, (void)nargs, (void)a, (void)outs;
  snprintf(err, errlen, "built without the TPU backend");
  return ST_UNSUPPORTED;
#endif
}

void tool_tpu_list_steps(FILE *f) {
#ifdef TPUCC_HAVE_TPU
  fputs("then, compiling for a TPU target, the backend's steps:\n", f);
  const char *name, *doc;
  for (int k = 0; (name = tpu_step_info(k, &doc)); k++) fprintf(f, "  %-22s      %s\n", name, doc);
#else
  (void)f;
#endif
}

bool tool_tpu_target(const char *name) {
#ifdef TPUCC_HAVE_TPU
  tgt_target t;
  return name && tgt_parse(name, &t, NULL, 0) == 0;
#else
  (void)name;
  return false;
#endif
}

base_status tool_tpu_file_params(const char *path, arena *a, ir_shape **out, int *np, char *err,
                                 size_t errlen) {
#ifdef TPUCC_HAVE_TPU
  return tpu_file_params(path, a, out, np, err, errlen);
#else
  (void)path, (void)a, (void)out, (void)np;
  snprintf(err, errlen, "built without the TPU backend");
  return ST_UNSUPPORTED;
#endif
}

base_status tool_tpu_run_file(const char *path, const tool_tpu_opts *o, const char *target,
                              ir_literal *const *args, int nargs, arena *a, ir_literal ***out,
                              int *nout, char *err, size_t errlen) {
#ifdef TPUCC_HAVE_TPU
  tpu_run_report r = {0};
  r.target = target;
  r.stats = o->stats;
  r.json_path = o->stats_json;
  r.max_cycles = o->max_cycles;
  r.out = stderr;
  if (o->report || o->trace || o->roofline) { /* per-op reports: tools/report_run.c */
    tool_report_opts ro = {o->report, o->trace, o->roofline};
    return tool_report_run_file(path, &r, &ro, args, nargs, a, out, nout, err, errlen);
  }
  return tpu_run_file(path, &r, args, nargs, a, out, nout, err, errlen);
#else
  (void)path, (void)o, (void)target, (void)args, (void)nargs, (void)a, (void)out, (void)nout;
  snprintf(err, errlen, "built without the TPU backend");
  return ST_UNSUPPORTED;
#endif
}

#ifdef TPUCC_HAVE_LLVM
static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
#endif

base_status tool_cpu_run(const ir_module *m, const tool_cpu_opts *o, ir_literal *const *args,
                         int nargs, arena *a, ir_literal **out, char *err, size_t errlen) {
#ifdef TPUCC_HAVE_LLVM
  drv_cpu_spec cs;
  base_status sst = drv_cpu_spec_parse(o->spec, true, &cs, err, errlen);
  if (sst != ST_OK) return sst;
  cpu_options co;
  cpu_options_init(&co);
  drv_cpu_options(&cs, &co);
  co.dump_llvm = o->dump_llvm;
  cpu_exe *x = NULL;
  double t0 = seconds_now();
  base_status st = cpu_compile(m, &co, &x, err, errlen);
  double t1 = seconds_now();
  if (st == ST_OK) st = cpu_execute(x, args, nargs, a, out, err, errlen);
  double t2 = seconds_now();
  cpu_exe_info info;
  memset(&info, 0, sizeof info);
  if (x) cpu_exe_get_info(x, &info);
  cpu_exe_destroy(x);
  if (st != ST_OK) return st;
  double run = t2 - t1, compile = t1 - t0;
  uint64_t flops = 2 * ir_module_macs(m);
  double achieved = run > 0 ? (double)flops / run : 0;
  if (o->stats) {
    fprintf(stderr, "stats (target cpu):\n");
    fprintf(stderr, "  time              %.6g s host (the run alone)\n", run);
    fprintf(stderr, "  FLOP/s            %.4g achieved (%llu flops)\n", achieved,
            (unsigned long long)flops);
    fprintf(stderr, "  compile           %.3f s (lower %.3f, optimise + machine code %.3f on %d "
            "thread%s, link %.3f, cache %.3f)\n", compile, info.lower_seconds, info.build_seconds,
            (int)info.parts, info.parts == 1 ? "" : "s", info.link_seconds, info.cache_seconds);
    fprintf(stderr, "  compile CPU       optimise %.3f s, machine code %.3f s (summed over %d "
            "part%s; the costliest %.3f s)\n", info.opt_seconds, info.codegen_seconds,
            (int)info.parts, info.parts == 1 ? "" : "s", info.part_max_seconds);
    fprintf(stderr, "  compile cache     %s%s%s\n", cpu_cache_use_name(info.cache),
            info.cache_note[0] ? ": " : "", info.cache_note);
    fprintf(stderr, "  threads           %d\n", (int)info.threads);
    fprintf(stderr, "  numerics          %s\n", drv_numerics_name(cs.numerics));
    fprintf(stderr, "  kernels           %d loop nests, %lld bytes of scratch\n",
            (int)info.kernels, (long long)info.scratch_bytes);
    fprintf(stderr, "  host ISA          %s\n", info.isa);
  }
  if (o->stats_json) {
    FILE *j = fopen(o->stats_json, "w");
    if (!j) {
      snprintf(err, errlen, "--stats-json: cannot write %s", o->stats_json);
      return ST_IO_ERROR;
    }
    fprintf(j,
            "{\"target\": \"cpu\", \"seconds\": %.9g, \"flops\": %llu, "
            "\"achieved_flops\": %.6g, \"compile_seconds\": %.6f, \"host_seconds\": %.9g, "
            "\"threads\": %d, \"numerics\": \"%s\", \"kernels\": %d, "
            "\"scratch_bytes\": %lld, \"lower_seconds\": %.6f, \"opt_seconds\": %.6f, "
            "\"codegen_seconds\": %.6f, \"link_seconds\": %.6f, \"cache_seconds\": %.6f, "
            "\"build_seconds\": %.6f, \"part_max_seconds\": %.6f, \"parts\": %d, "
            "\"opt_level\": %d, \"cache\": \"%s\", \"host_isa\": \"%s\"}\n",
            run, (unsigned long long)flops, achieved, compile, run, (int)info.threads,
            drv_numerics_name(cs.numerics), (int)info.kernels, (long long)info.scratch_bytes,
            info.lower_seconds, info.opt_seconds, info.codegen_seconds, info.link_seconds,
            info.cache_seconds, info.build_seconds, info.part_max_seconds, (int)info.parts,
            (int)info.opt_level, cpu_cache_use_name(info.cache), info.isa);
    if (ferror(j) | fclose(j)) {
      snprintf(err, errlen, "--stats-json: error writing %s", o->stats_json);
      return ST_IO_ERROR;
    }
  }
  return ST_OK;
#else
  (void)m, (void)o, (void)args, (void)nargs, (void)a, (void)out;
  snprintf(err, errlen, "built without the CPU backend (LLVM)");
  return ST_UNSUPPORTED;
#endif
}
