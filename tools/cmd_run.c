/* cmd_run.c: `tpucc run`: compile a module, feed it tensors, execute it on
 * a target, print or write the results, and optionally check them against
 * expected tensors. The help text below is the reference for its flags. */
#include "tools/tools.h"
#include "tools/run_mpi_tpu.h"
#include "driver/driver.h" /* cpu specs */
#include "tools/mpi_run.h"
#include "backend/tpu/tpu.h" /* --all-reduce names */
#include "tools/report.h" /* the per-core and per-link figures of replicas */
#include "tools/rank_outputs.h"

#include <regex.h>

#include <math.h>
#include <stdlib.h>

void tool_help_run(FILE *f) {
  fputs("usage: tpucc run FILE [options]\n"
        "\n"
        "Compiles FILE (.hlo: XLA HLO text; .tg: tpucc graph) and runs its entry\n"
        "computation on a target.\n"
        "\n"
        "options:\n"
        "  --target=NAME          where to run (default: v3 when built with the TPU\n"
        "                         backend, else the first listed below); TPU targets\n"
        "                         take overrides: --target=v3,mxu=64x64,vmem=8MiB,\n"
        "                         cpu options: --target=cpu,threads=4,numerics=strict\n"
        "  --entry=NAME           .tg only: the graph to run (default: the last)\n"
        "  --language=hlo|tg      override the choice by file extension\n"
        "  --input=TENSOR         one per parameter, in the entry's parameter order\n"
        "                         (an .npz file supplies one per array, bound by\n"
        "                         name when its names are the parameters'). TENSOR is:\n"
        "                           2x3xf32=1 2 3 4 5 6   values, row-major; spaces,\n"
        "                                                 commas and [ ] separate;\n"
        "                                                 one value fills all\n"
        "                           f32=3.5               a scalar (f32[2,3]=... too)\n"
        "                           64x128xbf16=@a.bin    raw little-endian data\n"
        "                           2x3xf32=@x.npy        .npy checked against the shape;\n"
        "                                                 other numpy dtypes (float64,\n"
        "                                                 int64, ...) convert to the type\n"
        "                                                 named (floats round to nearest\n"
        "                                                 even, integers must fit)\n"
        "                           @x.npy  @x.npz  @x.npz:NAME   numpy files\n"
        "                         types: pred s8 s32 bf16 f16 f32 (also i1 i8 i32);\n"
        "                         values: integers, floats, nan, inf, true/false\n"
        "  --random-inputs        generate the parameters not given by --input\n"
        "  --seed=N               seed of --random-inputs (default 1): one splitmix64\n"
        "                         stream over the parameters in order, row-major;\n"
        "                         floats uniform in [-1,1), s8/s32 in [-8,8), pred 0/1\n"
        "  --output=@FILE         one per result, in order (a tuple root has one per\n"
        "                         element): @f.npy, @f.npz or @f.bin writes the result\n"
        "                         (bf16 goes to .npy as f32, exactly) through a\n"
        "                         temporary file renamed into place when complete;\n"
        "                         every FILE is checked writable before running;\n"
        "                         --output=- prints it; --output= discards it.\n"
        "                         Results after the last --output are printed, one\n"
        "                         per line:\n"
        "                           2x3xf32=[1 2 3][4 5 6]\n"
        "  --print-max-elements=N print at most N elements per result (default 1024,\n"
        "                         0: all), then '...'\n"
        "  --expected-output=TENSOR  one per result (same syntax as --input, e.g.\n"
        "                         @y.npy): compare, print the first mismatch (index,\n"
        "                         got, expected) and exit 1. Floats match when both\n"
        "                         are NaN, equal, or |got - expected| <= atol +\n"
        "                         rtol * |expected|; float results may be compared\n"
        "                         with any float type (bf16 with an f32 .npy)\n"
        "  --atol=X               absolute tolerance (default 1e-5)\n"
        "  --rtol=X               relative tolerance (default 1e-5)\n"
        "  --reference=NAME       also run on target NAME with the same inputs and\n"
        "                         compare every result as --expected-output does\n",
        f);
  fputs("  --stats                TPU targets: print cycles, time, MXU utilisation,\n"
        "                         FLOP/s, HBM bytes, roofline bound and precision;\n"
        "                         cpu: run time, FLOP/s, compile time, threads;\n"
        "                         TPU replicas: a line per core (cycles, ...)\n"
        "  --stats-json=FILE      TPU targets and cpu: the same as JSON (docs/cli.md)\n"
        "  --precision=P          TPU targets: default|high|highest bf16 passes of\n"
        "                         f32 dots and convolutions (1, 3 or 6); modules\n"
        "                         only, as is --memory-report (a .tpub is compiled)\n"
        "  --memory-report        TPU targets: peak VMEM/HBM and the largest buffers\n"
        "  --report=FILE.csv      TPU targets: one row per HLO op or fusion (cycles,\n"
        "                         stalls, MACs, HBM bytes, roofline); --report=- a table\n"
        "  --trace=FILE.json      TPU targets: Chrome trace (Perfetto), spans named\n"
        "                         after ops, HBM bandwidth counter; TPU replicas:\n"
        "                         every core's instructions, a process row per core\n"
        "  --roofline=FILE.svg    TPU targets: every op on the target's roofline\n"
        "                         (docs/profiling.md)\n"
        "  --max-cycles=N         TPU targets: stop the emulated run after N cycles\n"
        "                         (default 1000000000) with an error naming the\n"
        "                         limit and the cycle reached; exit status 1\n",
        f);
  fputs("  --replicas=N           run N replicas (docs/collectives.md; default: the\n"
        "                         module's replica_count on targets that run replicas,\n"
        "                         interp and TPU boards and pods such as v3-8 (one\n"
        "                         per core); else 1): an input of the parameter's shape\n"
        "                         goes to every replica, one with an extra leading\n"
        "                         dimension N gives replica r its slice r; with N > 1\n"
        "                         every result is stacked the same way; under\n"
        "                         mpirun -np R, --target=cpu runs N / R replicas on\n"
        "                         each rank (N a multiple of R) and rank 0 prints\n"
        "                         the results (docs/distributed.md)\n"
        "  --rank-outputs         under mpirun: each rank prints or writes its own\n"
        "                         replicas' results (files get .rankK before the\n"
        "                         extension, printed lines and --stats lines a\n"
        "                         \"rank K: \" prefix; a board's or pod's --trace,\n"
        "                         its own cores'); without it rank 0 writes every\n"
        "                         replica's (one trace holding every core)\n"
        "  --all-reduce=A         TPU boards and pods: lower all-reduces by the cost\n"
        "                         model's choice (auto, the default), as a ring, by\n"
        "                         direct exchange or a parameter server (ps).\n"
        "                         Under `mpirun -np R`\n"
        "                         (tpucc built with MPI: libopenmpi-dev) the cores\n"
        "                         split across the R ranks (docs/distributed.md)\n"
        "  --threads=N            cpu target: worker threads, 1..1024 (default: the\n"
        "                         environment's TPUCC_CPU_THREADS, else one per CPU)\n"
        "  --cpu-numerics=MODE    cpu target: native (default; FMA, fastest), strict\n"
        "                         (bit-exact with interp) or tpu (bf16 dot operands,\n"
        "                         f32 sums in the emulator's order: the v3 bits);\n"
        "                         default: TPUCC_CPU_NUMERICS, else native\n"
        "  --cache-dir=DIR        cpu target: keep compiled code in DIR (default:\n"
        "                         TPUCC_CACHE_DIR, else $XDG_CACHE_HOME/tpucc, else\n"
        "                         ~/.cache/tpucc); a run of the same module, flags\n"
        "                         and host loads it instead of compiling\n"
        "  --no-cache             cpu target: neither read nor write the cache (also\n"
        "                         TPUCC_NO_CACHE=1)\n"
        "  -h, --help             this text\n",
        f);
  tool_help_opt_flags(f);
  fputs("  (the module runs on the target after the pipeline of the -O level;\n"
        "  every pass keeps the reference evaluator's values bit for bit, so\n"
        "  --target=interp gives the same results at -O0 and -O2)\n"
        "\n"
        "targets:\n",
        f);
  for (int i = 0; i < tpucc_target_count(); i++)
    fprintf(f, "  %-22s %s\n", tpucc_target_name(i), tpucc_target_description(i));
  fputs("\n"
        "exit status: 0 success; 1 mismatch against --expected-output, or an error\n"
        "while executing or writing outputs; 2 usage error, unreadable or malformed\n"
        "input, or a compile error (reported as file:line:col: error: ...).\n",
        f);
}

/* One tensor argument as given, and where it came from (for messages). */
typedef struct given {
  ir_literal *lit;
  int arg;          /* 1-based index of the --input / --expected-output flag */
  const char *text; /* the flag's text */
  const char *name; /* an array of a whole .npz (@x.npz): its entry name; else NULL */
} given;

typedef struct run_cfg {
  const char *file, *target, *entry, *reference;
  tpucc_language_t lang;
  const char **inputs, **outputs, **expected;
  int ninputs, noutputs, nexpected;
  bool random;
  uint64_t seed;
  double atol, rtol;
  int64_t print_max;
  tool_opt_options opt; /* -O level and pass tooling (cmd_opt.c) */
  bool listed;          /* --list-passes printed the pipeline */
  tool_tpu_opts tpu; /* --stats, --stats-json, --precision, --memory-report */
  const char *cpu_threads, *cpu_numerics; /* --threads, --cpu-numerics (checked) */
  int64_t replicas;                        /* --replicas; 0: the default */
  const char *cpu_cache;                  /* --cache-dir=DIR, or "off" for --no-cache */
  bool rank_outputs; /* --rank-outputs: each MPI rank writes its own replicas' */
} run_cfg;

static const char *const CMD = "tpucc run";

/* Shortens an argument for messages. */
static const char *shown(arena *a, const char *s) {
  return strlen(s) <= 60 ? s : arena_printf(a, "%.57s...", s);
}

/* --rank-outputs refuses the flags that describe or check the whole run
 * at once; false after the error. */
static bool rank_outputs_apply(const run_cfg *c) {
  if (c->rank_outputs && (c->tpu.stats_json || c->tpu.report)) {
    tool_error(CMD, "--rank-outputs: %s describes the whole run, which rank 0 writes without "
               "--rank-outputs: give one or the other", c->tpu.stats_json ? "--stats-json" : "--report");
    return false;
  }
  if (c->rank_outputs && (c->nexpected || c->reference)) {
    tool_error(CMD, "--rank-outputs: each rank writes its own replicas' results, which %s checks "
               "all together: give one or the other", c->reference ? "--reference" : "--expected-output");
    return false;
  }
  return true;
}

static bool parse_cmdline(int argc, char **argv, run_cfg *c, arena *a, bool *help) {
  tool_args ar = {argc, 0, argv, CMD, false};
  c->inputs = arena_array(a, (size_t)argc + 1, sizeof(char *));
  c->outputs = arena_array(a, (size_t)argc + 1, sizeof(char *));
  c->expected = arena_array(a, (size_t)argc + 1, sizeof(char *));
  const char *name, *v;
  while (tool_args_next(&ar, &name, &v)) {
    int r = name ? tool_opt_parse(&ar, name, v, &c->opt) : 0;
    if (r < 0) return false;
    if (r == 2) {
      *help = c->listed = true;
      return true;
    }
    if (r == 1) continue;
    if (!name) {
      if (c->file) {
        tool_error(CMD, "more than one FILE ('%s' and '%s')", c->file, v);
        return false;
      }
      c->file = v;
      continue;
    }
#define VALUE()                                                                                    \
  do {                                                                                             \
    if (!(v = tool_args_value(&ar, name, v))) return false;                                        \
  } while (0)
    if (!strcmp(name, "h") || !strcmp(name, "help")) {
      *help = true;
      return true;
    } else if (!strcmp(name, "input")) {
      VALUE();
      c->inputs[c->ninputs++] = v;
    } else if (!strcmp(name, "output")) {
      VALUE();
      c->outputs[c->noutputs++] = v;
    } else if (!strcmp(name, "expected-output")) {
      VALUE();
      c->expected[c->nexpected++] = v;
    } else if (!strcmp(name, "target")) {
      VALUE();
      c->target = v;
    } else if (!strcmp(name, "entry")) {
      VALUE();
      c->entry = v;
    } else if (!strcmp(name, "reference")) {
      VALUE();
      c->reference = v;
    } else if (!strcmp(name, "language")) {
      VALUE();
      if (!tool_parse_language(CMD, v, &c->lang)) return false;
    } else if (!strcmp(name, "stats") || !strcmp(name, "memory-report")) {
      if (name[0] == 's') c->tpu.stats = true;
      else c->tpu.memory_report = true;
    } else if (!strcmp(name, "report") || !strcmp(name, "trace") || !strcmp(name, "roofline")) {
      VALUE(); /* per-op reports (tools/report.h) */
      if (name[0] == 'r' && name[1] == 'e') c->tpu.report = v;
      else if (name[0] == 't') c->tpu.trace = v;
      else c->tpu.roofline = v;
    } else if (!strcmp(name, "stats-json") || !strcmp(name, "precision")) {
      VALUE();
      if (name[1] == 't') c->tpu.stats_json = v;
      else c->tpu.precision = v;
    } else if (!strcmp(name, "max-cycles")) {
      VALUE();
      int64_t n;
      if (!tool_parse_int(CMD, name, v, 1, INT64_MAX, &n)) return false;
      c->tpu.max_cycles = (uint64_t)n;
    } else if (!strcmp(name, "threads")) {
      VALUE();
      int64_t t;
      if (!tool_parse_int(CMD, name, v, 1, 1024, &t)) return false;
      c->cpu_threads = v;
    } else if (!strcmp(name, "replicas")) {
      VALUE();
      if (!tool_parse_int(CMD, name, v, 1, 4096, &c->replicas)) return false;
    } else if (!strcmp(name, "all-reduce")) {
      VALUE();
      if ((c->tpu.all_reduce = tpu_all_reduce_parse(v)) < 0) {
        tool_error(CMD, "--all-reduce: '%s' is not auto, ring, direct or ps", v);
        return false;
      }
    } else if (!strcmp(name, "cpu-numerics")) {
      VALUE();
      if (strcmp(v, "native") != 0 && strcmp(v, "strict") != 0 && strcmp(v, "tpu") != 0) {
        tool_error(CMD, "--cpu-numerics: '%s' is not native, strict or tpu", v);
        return false;
      }
      c->cpu_numerics = v;
    } else if (!strcmp(name, "cache-dir")) {
      VALUE();
      if (!v[0] || strchr(v, ',') || !strcmp(v, "off")) {
        tool_error(CMD, "--cache-dir: '%s' is not a directory name a cpu spec can carry (no commas)",
                   v);
        return false;
      }
      c->cpu_cache = v;
    } else if (!strcmp(name, "no-cache")) {
      if (v) {
        tool_error(CMD, "--no-cache takes no value");
        return false;
      }
      c->cpu_cache = "off";
    } else if (!strcmp(name, "random-inputs") || !strcmp(name, "rank-outputs")) {
      if (v) {
        tool_error(CMD, "--%s takes no value", name);
        return false;
      }
      *(!strcmp(name, "rank-outputs") ? &c->rank_outputs : &c->random) = true;
    } else if (!strcmp(name, "seed")) {
      VALUE();
      int64_t s;
      if (!tool_parse_int(CMD, name, v, 0, INT64_MAX, &s)) return false;
      c->seed = (uint64_t)s;
    } else if (!strcmp(name, "atol") || !strcmp(name, "rtol")) {
      VALUE();
      if (!tool_parse_double(CMD, name, v, name[0] == 'a' ? &c->atol : &c->rtol)) return false;
    } else if (!strcmp(name, "print-max-elements")) {
      VALUE();
      if (!tool_parse_int(CMD, name, v, 0, INT64_MAX, &c->print_max)) return false;
    } else {
      tool_error(CMD, "unknown option '%s%s' (see tpucc run --help)",
                 strlen(name) == 1 ? "-" : "--", name);
      return false;
    }
#undef VALUE
  }
  if (!c->file) {
    tool_error(CMD, "no FILE given (see tpucc run --help)");
    return false;
  }
  if (!rank_outputs_apply(c)) return false;
  for (int i = 0; i < c->noutputs; i++) {
    const char *o = c->outputs[i];
    if (strcmp(o, "-") != 0 && o[0] != 0 && (o[0] != '@' || o[1] == 0)) {
      tool_error(CMD, "--output '%s': expected @FILE, - (print) or nothing (discard)", o);
      return false;
    }
    char err[512]; /* every output file writable before anything runs */
    if (o[0] == '@' && ir_file_check_writable(o + 1, err, sizeof err) != ST_OK) {
      tool_error(CMD, "--output %d: %s", i + 1, err);
      return false;
    }
  }
  return true;
}

/* Parses tensor flags (inputs or expected outputs) into a list. */
static bool parse_tensors(arena *a, const char *flag, const char **texts, int n, given **out,
                          int *out_n) {
  VEC(given) v = {0};
  for (int i = 0; i < n; i++) {
    ir_named_literal *r;
    int k;
    char err[512];
    if (ir_tensor_parse(a, texts[i], &r, &k, err, sizeof err) != ST_OK) {
      tool_error(CMD, "%s %d ('%s'): %s", flag, i + 1, shown(a, texts[i]), err);
      return false;
    }
    for (int j = 0; j < k; j++) {
      const char *t = texts[i] + strspn(texts[i], " \t"), *e = t + strlen(t);
      bool whole_npz = t[0] == '@' && e - t > 4 && !strcmp(e - 4, ".npz");
      given g = {r[j].lit, i + 1, texts[i], whole_npz ? r[j].name : NULL};
      VEC_PUSH(a, v, g);
    }
  }
  *out = v.v;
  *out_n = v.n;
  return true;
}

/* Under mpirun: rank 0's parsed tensors as bytes (ok flag, count, then
 * per tensor its flag number, type, rank, dims, data size, data and
 * entry name; the flag's text is the same argument on every rank). */
static void pack_given(strbuf *b, bool ok, const given *v, int n) {
  sb_putc(b, ok ? 1 : 0);
  int32_t cnt = ok ? n : 0;
  sb_putn(b, (const char *)&cnt, sizeof cnt);
  for (int i = 0; i < cnt; i++) {
    const ir_literal *l = v[i].lit;
    int32_t head[3] = {v[i].arg, (int32_t)l->shape.type, l->shape.rank};
    uint64_t nb = l->nbytes;
    int32_t nl = v[i].name ? (int32_t)strlen(v[i].name) : -1;
    sb_putn(b, (const char *)head, sizeof head);
    sb_putn(b, (const char *)l->shape.dims, sizeof(int64_t) * (size_t)l->shape.rank);
    sb_putn(b, (const char *)&nb, sizeof nb);
    sb_putn(b, l->data, l->nbytes);
    sb_putn(b, (const char *)&nl, sizeof nl);
    if (nl > 0) sb_putn(b, v[i].name, (size_t)nl);
  }
}

/* Takes n bytes at *at of [*at, end) into dst; false past the end. */
static bool take(const unsigned char **at, const unsigned char *end, void *dst, size_t n) {
  if ((size_t)(end - *at) < n) return false;
  memcpy(dst, *at, n);
  *at += n;
  return true;
}

/* pack_given's bytes back into tensors; false when rank 0 failed (it
 * printed why) or the bytes are malformed. */
static bool unpack_given(arena *a, const char **texts, int ntexts, const unsigned char *at,
                         const unsigned char *end, given **out, int *out_n) {
  uint8_t ok = 0;
  int32_t cnt = 0;
  if (!take(&at, end, &ok, 1) || !ok || !take(&at, end, &cnt, sizeof cnt) || cnt < 0) return false;
  given *v = arena_array(a, (size_t)cnt + 1, sizeof *v);
  for (int i = 0; i < cnt; i++) {
    int32_t head[3], nl;
    int64_t dims[IR_MAX_RANK];
    uint64_t nb;
    if (!take(&at, end, head, sizeof head) || head[0] < 1 || head[0] > ntexts || head[2] < 0 ||
        head[2] > IR_MAX_RANK || !take(&at, end, dims, sizeof(int64_t) * (size_t)head[2]) ||
        !take(&at, end, &nb, sizeof nb))
      return false;
    ir_shape sh = ir_shape_array((ir_type)head[1], head[2], dims);
    ir_literal *l = ir_literal_try_create(a, &sh);
    if (!l || l->nbytes != nb || !take(&at, end, l->data, (size_t)nb) || !take(&at, end, &nl, sizeof nl))
      return false;
    char *name = NULL;
    if (nl >= 0) {
      name = arena_alloc(a, (size_t)nl + 1);
      if (!take(&at, end, name, (size_t)nl)) return false;
      name[nl] = 0;
    }
    v[i] = (given){l, head[0], texts[head[0] - 1], name};
  }
  *out = v;
  *out_n = cnt;
  return true;
}

/* parse_tensors; under mpirun with several ranks rank 0 alone reads them
 * (its files) and sends them to the others. */
static bool read_tensors(arena *a, const char *flag, const char **texts, int n, given **out,
                         int *out_n) {
  if (tool_mpi_size() == 1) return parse_tensors(a, flag, texts, n, out, out_n);
  bool ok = true;
  strbuf b;
  sb_init(&b);
  if (tool_mpi_rank() == 0) {
    ok = parse_tensors(a, flag, texts, n, out, out_n);
    pack_given(&b, ok, *out, ok ? *out_n : 0);
  }
  void *buf = b.s;
  size_t len = b.len;
  char err[512];
  if (!tool_mpi_bcast(&buf, &len, err, sizeof err)) {
    tool_error(CMD, "%s: rank %d: %s", flag, tool_mpi_rank(), err);
    ok = false;
  } else if (tool_mpi_rank() != 0) {
    ok = unpack_given(a, texts, n, buf, (const unsigned char *)buf + len, out, out_n);
    free(buf);
  }
  sb_free(&b);
  return ok;
}

static void tensor_view(const ir_literal *l, tpucc_tensor_t *t) {
  memset(t, 0, sizeof *t);
  t->dtype = (tpucc_dtype_t)l->shape.type;
  t->rank = l->shape.rank;
  for (int i = 0; i < l->shape.rank; i++)
    t->dims[i] = l->shape.dims[i];
  t->data = l->data;
  t->nbytes = l->nbytes;
}

static ir_shape desc_shape(const tpucc_tensor_t *t) {
  return ir_shape_array((ir_type)t->dtype, (int)t->rank, t->dims);
}

static ir_literal *literal_of(arena *a, const tpucc_tensor_t *t) {
  ir_literal *l = arena_alloc(a, sizeof *l);
  l->shape = desc_shape(t);
  l->data = t->data;
  l->nbytes = t->nbytes;
  return l;
}

static const char *spec_of(arena *a, const ir_shape *s) {
  strbuf b;
  sb_init(&b);
  ir_tensor_print_spec(&b, s);
  char *r = arena_strdup(a, sb_str(&b));
  sb_free(&b);
  return r;
}

static void print_signature(tpucc_module_t *m, arena *a) {
  int np = tpucc_module_parameter_count(m);
  for (int i = 0; i < np; i++) {
    tpucc_tensor_t d;
    if (tpucc_module_parameter(m, i, &d) != TPUCC_OK) continue;
    ir_shape s = desc_shape(&d);
    fprintf(stderr, "  parameter %d '%s': %s\n", i, d.name, spec_of(a, &s));
  }
}

/* The coordinates of linear index idx in shape s: "[1, 2]". */
static const char *coords(arena *a, const ir_shape *s, int64_t idx) {
  int64_t c[IR_MAX_RANK];
  for (int k = s->rank - 1; k >= 0; k--) {
    c[k] = s->dims[k] ? idx % s->dims[k] : 0;
    idx = s->dims[k] ? idx / s->dims[k] : 0;
  }
  strbuf b;
  sb_init(&b);
  sb_putc(&b, '[');
  for (int k = 0; k < s->rank; k++)
    sb_printf(&b, "%s%lld", k ? ", " : "", (long long)c[k]);
  sb_putc(&b, ']');
  char *r = arena_strdup(a, sb_str(&b));
  sb_free(&b);
  return r;
}

static const char *elem_text(arena *a, const ir_literal *l, int64_t i) {
  strbuf b;
  sb_init(&b);
  ir_tensor_print_elem(&b, l, i);
  char *r = arena_strdup(a, sb_str(&b));
  sb_free(&b);
  return r;
}

/* Compares result k with its expected tensor; true when they match. */
static bool check_result(arena *a, const run_cfg *c, int k, const ir_literal *got,
                         const ir_literal *e, const char *from) {
  ir_shape es = e->shape;
  es.type = got->shape.type;
  bool types_ok = e->shape.type == got->shape.type ||
                  (ir_type_is_float(e->shape.type) && ir_type_is_float(got->shape.type));
  if (!ir_shape_equal(&es, &got->shape) || !types_ok) {
    fprintf(stderr, "%s: result %d: got %s, expected %s (%s)\n", CMD, k, spec_of(a, &got->shape),
            spec_of(a, &e->shape), from);
    return false;
  }
  int64_t n = ir_shape_count(&got->shape), bad = 0, first = -1;
  bool fl = ir_type_is_float(got->shape.type);
  for (int64_t i = 0; i < n; i++) {
    bool ok;
    if (fl) {
      double g = ir_literal_get_f64(got, i), x = ir_literal_get_f64(e, i);
      ok = (isnan(g) && isnan(x)) || g == x || fabs(g - x) <= c->atol + c->rtol * fabs(x);
    } else {
      int64_t g = ir_literal_get_i64(got, i), x = ir_literal_get_i64(e, i);
      ok = g == x || fabs((double)g - (double)x) <= c->atol + c->rtol * fabs((double)x);
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (!bad) return true;
  fprintf(stderr,
          "%s: result %d (%s): mismatch at index %lld %s: got %s, expected %s "
          "(%s; %lld of %lld elements differ; atol=%g rtol=%g)\n",
          CMD, k, spec_of(a, &got->shape), (long long)first, coords(a, &got->shape, first),
          elem_text(a, got, first), elem_text(a, e, first), from, (long long)bad, (long long)n,
          c->atol, c->rtol);
  return false;
}

typedef VEC(ir_literal *) lit_vec;

/* Appends the array leaves of l to out, depth first. */
static void push_leaves(arena *a, ir_literal *l, lit_vec *out) {
  if (l->shape.type != IR_TUPLE) {
    VEC_PUSH(a, *out, l);
    return;
  }
  for (int k = 0; k < l->shape.ntuple; k++) push_leaves(a, l->elems[k], out);
}

/* .npz arrays bind to parameters by name when the inputs are all arrays of
 * whole archives (@x.npz) whose entry names are exactly the parameters'
 * names: ins is then reordered into parameter order. Otherwise they bind
 * by position, and when an archive supplied any, a note says so. */
static void bind_npz_by_name(given *ins, int nins, const char *const *pnames, int np, arena *a) {
  bool any = false, all = nins == np;
  for (int i = 0; i < nins; i++) {
    if (ins[i].name) any = true;
    else all = false;
  }
  if (!any) return;
  given *byname = arena_array(a, (size_t)(np ? np : 1), sizeof *byname);
  for (int p = 0; all && p < np; p++) {
    int hit = -1;
    for (int i = 0; i < nins; i++)
      if (!strcmp(ins[i].name, pnames[p])) hit = hit < 0 ? i : -2;
    if (hit < 0) all = false;
    else byname[p] = ins[hit];
  }
  if (all) {
    memcpy(ins, byname, (size_t)np * sizeof *ins);
    return;
  }
  strbuf b;
  sb_init(&b);
  for (int i = 0; i < nins; i++)
    sb_printf(&b, "%s%s", i ? ", " : "", ins[i].name ? ins[i].name : "(not from an .npz)");
  sb_puts(&b, "; the parameters: ");
  for (int p = 0; p < np; p++) sb_printf(&b, "%s%s", p ? ", " : "", pnames[p]);
  strbuf e; /* entry names are the archive's text */
  sb_init(&e);
  sb_put_escaped(&e, sb_str(&b), b.len);
  fprintf(stderr,
          "%s: note: .npz arrays bound to parameters by position (the inputs: %s); they bind by "
          "name when their names are exactly the parameters'\n",
          CMD, sb_str(&e));
  sb_free(&e);
  sb_free(&b);
}

/* `tpucc run FILE.tpub`: a compiled TPU program (backend/tpu), on its
 * recorded target or --target; results printed or written as below. */
static int run_tpub(const run_cfg *c, const char *target, arena *a, const given *ins, int nins,
                    const given *exps, int nexps) {
  ir_literal **got = NULL;
  int ngot = 0;
  char err[4096];
  if (c->reference) {
    tool_error(CMD, "--reference needs a module, not a .tpub program");
    return TOOL_EXIT_USAGE;
  }
  if (target && !tool_tpu_target(target)) {
    tool_error(CMD, "%s is a compiled TPU program: it runs only on a TPU target (v2, v3, v2-8, "
               "v3-8, or one with overrides such as v3,mxu=64x64), not '%s'", c->file, target);
    return TOOL_EXIT_USAGE;
  }
  if (c->tpu.precision || c->tpu.memory_report) { /* compile-time choices */
    tool_error(CMD, "--%s applies when compiling; %s is already compiled",
               c->tpu.precision ? "precision" : "memory-report", c->file);
    return TOOL_EXIT_USAGE;
  }
  ir_shape *ps = NULL;
  int np = 0;
  if (tool_tpu_file_params(c->file, a, &ps, &np, err, sizeof err) != ST_OK) {
    tool_error(CMD, "%s", err);
    return TOOL_EXIT_USAGE;
  }
  if (nins > np || (nins < np && !c->random)) {
    tool_error(CMD, "%s: the program takes %d parameter%s, %d input%s given", c->file, np,
               np == 1 ? "" : "s", nins, nins == 1 ? "" : "s");
    return TOOL_EXIT_USAGE;
  }
  ir_literal **args = arena_array(a, (size_t)(np ? np : 1), sizeof(ir_literal *));
  const char **names = arena_array(a, (size_t)(np ? np : 1), sizeof(char *));
  uint64_t state = c->seed;
  for (int i = 0; i < np; i++) {
    names[i] = arena_printf(a, "p%d", i);
    if (i >= nins) continue;
    if (!ir_shape_equal(&ins[i].lit->shape, &ps[i])) {
      tool_error(CMD, "--input %d does not match parameter %d of %s", ins[i].arg, i, c->file);
      return TOOL_EXIT_USAGE;
    }
    args[i] = ins[i].lit;
  }
  base_status rst = tool_random_inputs(a, ps, names, nins, np, &state, args, err, sizeof err);
  if (rst != ST_OK) {
    tool_error(CMD, "%s: %s", c->file, err);
    return rst == ST_OUT_OF_MEMORY ? TOOL_EXIT_FAIL : TOOL_EXIT_USAGE;
  }
  if (tool_tpu_run_file(c->file, &c->tpu, target, args, np, a, &got, &ngot, err,
                        sizeof err) != ST_OK) {
    tool_error(CMD, "%s", err);
    return TOOL_EXIT_FAIL;
  }
  int rc = TOOL_EXIT_OK;
  strbuf out;
  sb_init(&out);
  for (int k = 0; k < ngot; k++) {
    const char *o = c->noutputs > k ? c->outputs[k] : "-";
    if (!strcmp(o, "-")) {
      out.len = 0;
      ir_tensor_print(&out, got[k], c->print_max);
      sb_putc(&out, '\n');
      fwrite(out.s, 1, out.len, stdout);
    } else if (o[0] == '@' && ir_tensor_write_file(o + 1, got[k], err, sizeof err) != ST_OK) {
      tool_error(CMD, "--output %d: %s", k + 1, err);
      rc = TOOL_EXIT_FAIL;
    }
  }
  sb_free(&out);
  fflush(stdout);
  for (int k = 0; k < nexps && k < ngot; k++)
    if (!check_result(a, c, k, got[k], exps[k].lit,
                      arena_printf(a, "--expected-output %d", exps[k].arg)))
      rc = TOOL_EXIT_FAIL;
  return rc;
}

/* One `tpucc run` of a module, step by step (tool_cmd_run). */
typedef struct run_state {
  run_cfg c;
  arena *a;
  const char *given_target; /* --target as given (a .tpub runs on its own unless given) */
  const char *cpu_target, *cpu_reference; /* the cpu specs with --threads, --cpu-numerics */
  given *ins, *exps;
  int nins, nexps;
  tpucc_session_t *s;
  tpucc_module_t *m;
  int np, nr;
  tpucc_tensor_t *args; /* one per parameter */
  lit_vec got;        /* the results' array leaves */
  tpucc_result_t *res, *ref;
  int rank; /* MPI rank of a run across processes: only rank 0 reports */
} run_state;

/* t with the cpu flags appended when t is a cpu spec (the later key wins),
 * else t; NULL after a usage error for a bad cpu spec. */
static const char *cpu_spec(run_state *r, const char *flag, const char *t) {
  if (!t || !drv_is_cpu_spec(t)) return t;
  const run_cfg *c = &r->c;
  const char *spec = arena_printf(r->a, "%s%s%s%s%s%s%s", t, c->cpu_threads ? ",threads=" : "",
                                  c->cpu_threads ? c->cpu_threads : "",
                                  c->cpu_numerics ? ",numerics=" : "",
                                  c->cpu_numerics ? c->cpu_numerics : "",
                                  c->cpu_cache ? ",cache=" : "", c->cpu_cache ? c->cpu_cache : "");
  drv_cpu_spec cs;
  char err[256];
  if (drv_cpu_spec_parse(spec, false, &cs, err, sizeof err) != ST_OK) {
    tool_error(CMD, "%s %s: %s", flag, t, err);
    return NULL;
  }
  return spec;
}

/* The target and reference: the default, known names, and the flags that
 * only some targets honour (refused elsewhere, never ignored). */
static bool check_targets(run_state *r) {
  run_cfg *c = &r->c;
  r->given_target = c->target;
  if (!c->target && tool_target_find("v3")) c->target = "v3"; /* the TPU emulator */
  for (int k = 0; k < 2; k++) {
    const char *t = k ? c->reference : c->target;
    if (!t || tool_target_find(t) || (!k && tool_tpu_target(t))) continue;
    strbuf known;
    sb_init(&known);
    for (int i = 0; i < tpucc_target_count(); i++)
      sb_printf(&known, "%s%s", i ? ", " : "", tpucc_target_name(i));
    tool_error(CMD, "unknown %s '%s' (known: %s)", k ? "reference target" : "target", t,
               sb_str(&known));
    sb_free(&known);
    return false;
  }
  if ((c->target && !(r->cpu_target = cpu_spec(r, "--target", c->target))) ||
      (c->reference && !(r->cpu_reference = cpu_spec(r, "--reference", c->reference))))
    return false;
  bool is_tpub = strlen(c->file) > 5 && !strcmp(c->file + strlen(c->file) - 5, ".tpub");
  bool tpu = is_tpub ? !r->given_target || tool_tpu_target(r->given_target)
                     : tool_tpu_target(c->target);
  const char *tpu_only = c->tpu.report          ? "--report"
                         : c->tpu.trace         ? "--trace"
                         : c->tpu.roofline      ? "--roofline"
                         : c->tpu.precision     ? "--precision"
                         : c->tpu.memory_report ? "--memory-report"
                         : c->tpu.max_cycles    ? "--max-cycles"
                                                : NULL;
  const char *stats = c->tpu.stats ? "--stats" : c->tpu.stats_json ? "--stats-json" : NULL;
  const char *t = is_tpub ? r->given_target : c->target;
  if (!t) t = tool_targets[0].name; /* built without the TPU backend: the default target */
  if (!tpu && tpu_only) {
    tool_error(CMD, "%s applies to TPU targets (v2, v3, ...), not '%s'", tpu_only, t);
    return false;
  }
  if (c->cpu_cache && !drv_is_cpu_spec(t) && !(c->reference && drv_is_cpu_spec(c->reference))) {
    tool_error(CMD, "%s applies to the cpu target, not '%s'",
               strcmp(c->cpu_cache, "off") ? "--cache-dir" : "--no-cache", t);
    return false;
  }
  if (!tpu && stats && !drv_is_cpu_spec(t)) {
    tool_error(CMD, "%s applies to TPU targets and cpu, not '%s'", stats, t);
    return false;
  }
  return true;
}

/* Compiles and optimises the module; an exit code. */
static int compile_module(run_state *r) {
  run_cfg *c = &r->c;
  if (tpucc_session_create(NULL, &r->s) != TPUCC_OK) {
    tool_error(CMD, "out of memory");
    return TOOL_EXIT_USAGE;
  }
  tpucc_compile_options_t co;
  tpucc_compile_options_init(&co);
  co.language = c->lang;
  co.entry = c->entry;
  if (tpucc_compile_file(r->s, &co, c->file, &r->m) != TPUCC_OK) {
    const char *d = tpucc_session_diagnostics(r->s);
    fputs(d, stderr);
    if (!strstr(d, "error:")) tool_error(CMD, "%s", tpucc_session_message(r->s));
    return TOOL_EXIT_USAGE;
  }
  c->opt.target = c->target; /* passes size their decisions by a TPU target */
  if (tool_module_optimize(r->m, &c->opt) != TPUCC_OK) { /* the -O pipeline */
    tool_error(CMD, "%s: %s", c->file, tpucc_session_message(r->s));
    return TOOL_EXIT_FAIL;
  }
  fputs(tpucc_session_diagnostics(r->s), stderr); /* warnings */
  r->np = tpucc_module_parameter_count(r->m);
  r->nr = tpucc_module_result_count(r->m);
  return TOOL_EXIT_OK;
}

/* The replicas of the run: --replicas, else the module's replica_count on
 * a target that runs replicas (interp, the TPU boards and pods), else 1. */
static int replica_count(run_state *r) {
  if (r->c.replicas) return (int)r->c.replicas;
  const char *spec = r->c.target ? r->c.target : tool_targets[0].name;
  const tool_target *t = tool_target_find(spec);
  return (t && t->run_replicas) || tool_tpu_target(spec) ? tool_replicas_default(tool_module_ir(r->m))
                                                         : 1;
}

/* Matches the inputs to the parameters, makes the random ones, and checks
 * the result flags against the signature before running; an exit code. */
static int bind_inputs(run_state *r) {
  run_cfg *c = &r->c;
  arena *a = r->a;
  int np = r->np, nr = r->nr, nins = r->nins;
  if (nins > np || (nins < np && !c->random)) {
    tool_error(CMD, "%s: the entry takes %d parameter%s, %d input%s given%s", c->file, np,
               np == 1 ? "" : "s", nins, nins == 1 ? "" : "s",
               nins < np ? " (give one --input per parameter, or --random-inputs)" : "");
    print_signature(r->m, a);
    return TOOL_EXIT_USAGE;
  }
  r->args = arena_array(a, (size_t)(np ? np : 1), sizeof *r->args);
  int nrep = replica_count(r);
  ir_shape *pshapes = arena_array(a, (size_t)(np ? np : 1), sizeof *pshapes);
  const char **pnames = arena_array(a, (size_t)(np ? np : 1), sizeof(char *));
  ir_literal **made = arena_array(a, (size_t)(np ? np : 1), sizeof(ir_literal *));
  uint64_t state = c->seed;
  for (int i = 0; i < np; i++) {
    tpucc_tensor_t want;
    if (tpucc_module_parameter(r->m, i, &want) != TPUCC_OK) {
      tool_error(CMD, "%s: %s", c->file, tpucc_session_message(r->s));
      return TOOL_EXIT_USAGE;
    }
    pshapes[i] = desc_shape(&want);
    pnames[i] = arena_strdup(a, want.name);
  }
  bind_npz_by_name(r->ins, nins, pnames, np, a);
  for (int i = 0; i < nins; i++) {
    const ir_literal *g = r->ins[i].lit;
    if (!tool_replica_input_fits(&g->shape, &pshapes[i], nrep)) {
      tool_error(CMD, "--input %d ('%s') for parameter %d '%s': expected %s%s, given %s",
                 r->ins[i].arg, shown(a, r->ins[i].text), i, pnames[i], spec_of(a, &pshapes[i]),
                 nrep > 1 ? arena_printf(a, " (or %d of them stacked, one per replica)", nrep) : "",
                 spec_of(a, &g->shape));
      return TOOL_EXIT_USAGE;
    }
    tensor_view(g, &r->args[i]);
  }
  /* with N replicas, random inputs differ per replica: N stacked */
  for (int i = nins; i < np && nrep > 1; i++) {
    int64_t d[IR_MAX_RANK];
    d[0] = nrep;
    for (int k = 0; k < pshapes[i].rank && k + 1 < IR_MAX_RANK; k++) d[k + 1] = pshapes[i].dims[k];
    if (pshapes[i].rank + 1 <= IR_MAX_RANK)
      pshapes[i] = ir_shape_array(pshapes[i].type, pshapes[i].rank + 1, d);
  }
  char rerr[512];
  base_status rst = tool_random_inputs(a, pshapes, pnames, nins, np, &state, made, rerr, sizeof rerr);
  if (rst != ST_OK) {
    tool_error(CMD, "%s: %s", c->file, rerr);
    return rst == ST_OUT_OF_MEMORY ? TOOL_EXIT_FAIL : TOOL_EXIT_USAGE;
  }
  for (int i = nins; i < np; i++) tensor_view(made[i], &r->args[i]);
  if (c->noutputs > nr) { /* fewer are fine: the other results are printed */
    tool_error(CMD, "%s: the entry has %d result%s, %d --output given", c->file, nr,
               nr == 1 ? "" : "s", c->noutputs);
    return TOOL_EXIT_USAGE;
  }
  if (r->nexps && r->nexps != nr) {
    tool_error(CMD, "%s: the entry has %d result%s, %d expected output%s given", c->file, nr,
               nr == 1 ? "" : "s", r->nexps, r->nexps == 1 ? "" : "s");
    return TOOL_EXIT_USAGE;
  }
  return TOOL_EXIT_OK;
}

/* The arguments as literals, for the backends called directly. */
static ir_literal **arg_literals(run_state *r) {
  ir_literal **la = arena_array(r->a, (size_t)(r->np ? r->np : 1), sizeof(ir_literal *));
  for (int i = 0; i < r->np; i++) la[i] = literal_of(r->a, &r->args[i]);
  return la;
}

/* --dump-dir on the cpu: the LLVM IR goes to DIR/MODULE.NNNN.after_cpu_llvm.ll
 * (NNNN following the passes' dumps) unless --dump-after does not match
 * "cpu_llvm"; *path NULL when nothing is dumped. False after a usage error. */
static bool cpu_dump_path(run_state *r, const char **path) {
  run_cfg *c = &r->c;
  *path = NULL;
  if (!c->opt.dump_dir) return true;
  if (c->opt.dump_after) {
    regex_t re;
    if (regcomp(&re, c->opt.dump_after, REG_EXTENDED | REG_NOSUB) != 0) {
      tool_error(CMD, "--dump-after: '%s' is not a valid regular expression", c->opt.dump_after);
      return false;
    }
    bool match = regexec(&re, "cpu_llvm", 0, NULL, 0) == 0;
    regfree(&re);
    if (!match) return true;
  }
  tool_tpu_opts steps = {0};
  tool_tpu_opts_steps(&steps, &c->opt);
  const ir_module *m = tool_module_ir(r->m);
  *path = arena_printf(r->a, "%s/%s.%04d.after_cpu_llvm.ll", c->opt.dump_dir,
                       m->name ? m->name : "module", steps.dump_seq);
  return true;
}

/* Writes stream f (stdout for "-") with w; false after an error naming
 * flag and path. */
static bool write_ici(const char *flag, const char *path, const tool_ici_run *ir,
                      int (*w)(const tool_ici_run *, FILE *)) {
  FILE *f = !strcmp(path, "-") ? stdout : fopen(path, "w");
  int bad = !f || w(ir, f);
  if (f == stdout) fflush(f);
  else if (f && fclose(f)) bad = 1;
  if (bad) tool_error(CMD, "%s: cannot write %s", flag, path);
  return !bad;
}

/* --stats, --stats-json and --report of TPU replicas (tools/report.h):
 * per core, per link, the all-reduce against its bound. */
static bool replica_reports(run_state *r, const tpurt_stats_t *rs, const tool_links *links,
                            int nrep) {
  const run_cfg *c = &r->c;
  tool_ici_run ir;
  if (!tool_ici_init(&ir, c->target, nrep, rs, links->v, links->n,
                     tool_ici_allreduce_bytes(tool_module_ir(r->m), nrep))) {
    tool_error(CMD, "%s: no figures for target %s", c->file, c->target);
    return false;
  }
  if (c->tpu.stats) tool_ici_stats_text(&ir, stderr);
  bool ok = !c->tpu.stats_json || write_ici("--stats-json", c->tpu.stats_json, &ir,
                                            tool_ici_stats_json);
  if (ok && c->tpu.report)
    ok = write_ici("--report", c->tpu.report, &ir,
                   strcmp(c->tpu.report, "-") ? tool_ici_report_csv : tool_ici_report_table);
  return ok;
}

/* --stats of TPU replicas under --rank-outputs: this rank's cores lo ..
 * hi - 1 of n, each line after prefix (the one-process lines of those
 * cores). */
static void replica_stats_print(const char *target, const tpurt_stats_t *s, int lo, int hi, int n,
                                const char *prefix, FILE *f) {
  tool_ici_run ir;
  if (!tool_ici_init(&ir, target, n, s, NULL, 0, -1)) return;
  fprintf(f, "%sstats (target %s, %d cores):\n", prefix, target, n);
  tool_ici_core_lines(&ir, lo, hi, prefix, f);
}

/* "rank K: " with --rank-outputs, else "". */
static const char *rank_prefix(run_state *r) {
  return r->c.rank_outputs ? arena_printf(r->a, "rank %d: ", tool_mpi_rank()) : "";
}

/* N replicas on a TPU board or pod (one per core): the inputs split and
 * the results stacked as for every target (tools/replicas.h); an exit
 * code. */
static int run_tpu_replicas(run_state *r, int nrep) {
  run_cfg *c = &r->c;
  const ir_module *m = tool_module_ir(r->m);
  const ir_comp *e = &m->comps.v[m->entry];
  ir_shape *ps = arena_array(r->a, (size_t)e->nparams + 1, sizeof *ps);
  for (int k = 0; k < e->nparams; k++) ps[k] = *e->insts.v[e->params[k]].shape;
  /* under mpirun the ranks other than 0 give no values (run_pod_steps) */
  bool lead = tool_mpi_rank() == 0;
  ir_literal **args = lead ? arg_literals(r) : NULL;
  for (int k = 0; lead && k < r->np; k++)
    if (!tool_replica_input_fits(&args[k]->shape, &ps[k], nrep)) {
      tool_error(CMD, "%s: input %d fits neither parameter %d nor %d stacked replicas of it", c->file,
                 k + 1, k, nrep);
      return TOOL_EXIT_USAGE;
    }
  ir_literal ***per = lead ? tool_replica_split(ps, args, r->np, nrep, r->a) : NULL;
  ir_literal **outs = arena_array(r->a, (size_t)nrep, sizeof *outs);
  tool_tpu_opts to = c->tpu;
  to.target = c->target;
  to.explain = c->opt.explain;
  tool_tpu_opts_steps(&to, &c->opt);
  if (c->rank_outputs && to.trace) to.trace = tool_rank_path(r->a, to.trace, tool_mpi_rank());
  to.trace_per_rank = c->rank_outputs;
  bool figures = c->tpu.stats || c->tpu.stats_json || c->tpu.report;
  tpurt_stats_t *rs = figures ? arena_array(r->a, (size_t)nrep, sizeof *rs) : NULL;
  tool_links links = {NULL, 0};
  to.replica_stats = rs;
  to.links = figures ? &links : NULL;
  char terr[8192];
  if (tool_tpu_run_replicas_mpi(m, &to, nrep, (ir_literal *const *const *)per, r->np, r->a, outs,
                                &r->rank, terr, sizeof terr) != ST_OK) {
    if (r->rank == 0) tool_error(CMD, "%s: %s: %s", c->file, c->target, terr);
    return TOOL_EXIT_FAIL;
  }
  if (r->rank > 0 && !c->rank_outputs) return TOOL_EXIT_OK; /* rank 0 reports */
  int first = 0, nl = nrep; /* the replicas this rank reports */
  if (c->rank_outputs) tool_mpi_share(nrep, &first, &nl);
  if (c->rank_outputs && c->tpu.stats)
    replica_stats_print(c->target, rs, first, first + nl, nrep, rank_prefix(r), stderr);
  else if (!c->rank_outputs && figures && !replica_reports(r, rs, &links, nrep))
    return TOOL_EXIT_FAIL;
  ir_literal *st = tool_replica_stack(outs + first, nl, r->a);
  if (!st) {
    tool_error(CMD, "%s: a result of rank %d cannot be stacked over %d replicas", c->file, IR_MAX_RANK,
               nrep);
    return TOOL_EXIT_FAIL;
  }
  push_leaves(r->a, st, &r->got);
  return TOOL_EXIT_OK;
}

/* Whether nrep replicas run on a TPU board or pod, one per core
 * (run_tpu_replicas): --stats and --trace give a line per core and every
 * core's instructions; the other reports are one core's. */
static bool tpu_replicated(const run_state *r, int nrep) {
  const run_cfg *c = &r->c;
  /* --stats, --stats-json, --report and --trace: the replicas give their
   * per-core and per-link figures and trace every core and link */
  bool reports = c->tpu.roofline || c->tpu.memory_report || c->tpu.max_cycles;
  return c->target && tool_tpu_target(c->target) && nrep > 1 && !reports;
}

/* Runs through tpucc_execute (replicas: 0 for the module's default) into
 * r->got; an exit code. */
static int execute_api(run_state *r, int32_t replicas) {
  tpucc_execute_options_t eo;
  tpucc_execute_options_init(&eo);
  eo.target = r->cpu_target;
  eo.replicas = replicas;
  tpucc_status_t st = tpucc_execute(r->m, &eo, r->args, r->np, &r->res);
  if (st != TPUCC_OK) {
    tool_error(CMD, "%s: %s", r->c.file, tpucc_session_message(r->s));
    return st == TPUCC_INVALID_ARGUMENT ? TOOL_EXIT_USAGE : TOOL_EXIT_FAIL;
  }
  for (int k = 0; k < tpucc_result_count(r->res); k++)
    VEC_PUSH(r->a, r->got, literal_of(r->a, tpucc_result_tensor(r->res, k)));
  return TOOL_EXIT_OK;
}

/* Under mpirun with R > 1 ranks: the cpu target's N replicas split over
 * the ranks (tool_mpi_spread), N / R on each; an exit code. */
static int execute_spread(run_state *r) {
  run_cfg *c = &r->c;
  int nrep = replica_count(r), R = tool_mpi_size();
  if (!c->target || !drv_is_cpu_spec(c->target) || c->tpu.stats || c->tpu.stats_json || c->opt.dump_dir) {
    tool_error(CMD, "%s: under mpirun, tpucc run splits the replicas of --target=cpu over the ranks "
               "(without --stats, --stats-json, --dump-dir); target %s", c->file, c->target ? c->target : "interp");
    return TOOL_EXIT_USAGE;
  }
  if (nrep % R) {
    tool_error(CMD, "%s: %d replica%s do not split evenly over %d MPI ranks: give --replicas=N with N a "
               "multiple of %d", c->file, nrep, nrep == 1 ? "" : "s", R, R);
    return TOOL_EXIT_USAGE;
  }
  /* rank 0 alone reports, or each rank its own replicas */
  if (c->rank_outputs) tool_mpi_spread_own(true);
  else tool_mpi_spread_gather(true);
  int rc = execute_api(r, nrep);
  tool_mpi_spread(false);
  int first, nl;
  tool_mpi_share(nrep, &first, &nl);
  for (int k = 0; rc == TOOL_EXIT_OK && c->rank_outputs && nrep > 1 && k < r->got.n; k++)
    r->got.v[k] = tool_rank_rows(r->a, r->got.v[k], first, nl);
  return rc;
}

/* Runs on the target into r->got; an exit code. A TPU target with a
 * report, a precision, --explain or overrides, and the cpu with
 * statistics, call their backend directly (tools.h); the others run
 * through tpucc_execute. */
static int execute_on_target(run_state *r) {
  run_cfg *c = &r->c;
  ir_literal *tr = NULL;
  /* under mpirun: the cpu's replicas split over the ranks here; a board's
   * or pod's cores split in run_tpu_replicas (tools/run_mpi_tpu.c) */
  if (tool_mpi_size() > 1 && !(c->target && tool_tpu_target(c->target))) return execute_spread(r);
  bool direct = (c->target && tool_tpu_target(c->target) &&
                 (c->tpu.stats || c->tpu.stats_json || c->tpu.precision || c->tpu.memory_report ||
                  c->tpu.report || c->tpu.trace || c->tpu.roofline || c->opt.explain ||
                  c->tpu.max_cycles || c->opt.dump_dir || c->opt.time_passes ||
                  !tool_target_find(c->target))) ||
                ((c->tpu.stats || c->tpu.stats_json) && c->target && drv_is_cpu_spec(c->target));
  int nrep = replica_count(r);
  /* one core has nothing to split across ranks (each would run it whole
   * and print its --stats); rank 0 says so */
  if (tool_mpi_size() > 1 && nrep == 1) {
    if (tool_mpi_rank() == 0)
      tool_error(CMD, "%s: target %s: one replica runs in one process, not across %d MPI ranks (a board "
                 "or pod splits its cores across ranks with --replicas=N, N its cores)",
                 c->file, c->target, tool_mpi_size());
    return TOOL_EXIT_USAGE;
  }
  if (tpu_replicated(r, nrep)) return run_tpu_replicas(r, nrep);
  if (direct && nrep > 1) {
    tool_error(CMD, "%s: target %s runs 1 replica with these flags, %d asked for", c->file,
               c->target, nrep);
    return TOOL_EXIT_FAIL;
  }
  if (c->target && tool_tpu_target(c->target) &&
      (c->tpu.stats || c->tpu.stats_json || c->tpu.precision || c->tpu.memory_report ||
       c->tpu.report || c->tpu.trace || c->tpu.roofline || c->opt.explain || c->tpu.max_cycles ||
       c->opt.dump_dir || c->opt.time_passes || !tool_target_find(c->target))) {
    tool_tpu_opts to = c->tpu;
    to.target = c->target;
    to.explain = c->opt.explain;
    tool_tpu_opts_steps(&to, &c->opt);
    char terr[8192];
    if (tool_tpu_run(tool_module_ir(r->m), &to, arg_literals(r), r->np, r->a, &tr, terr,
                     sizeof terr) != ST_OK) {
      strbuf e;
      sb_init(&e);
      sb_put_escaped(&e, terr, strlen(terr));
      fprintf(stderr, "%s\n", sb_str(&e));
      sb_free(&e);
      return TOOL_EXIT_FAIL;
    }
  } else if ((c->tpu.stats || c->tpu.stats_json || c->opt.dump_dir) && c->target &&
             drv_is_cpu_spec(c->target)) {
    tool_cpu_opts cpo = {r->cpu_target, c->tpu.stats_json, c->tpu.stats, NULL};
    if (!cpu_dump_path(r, &cpo.dump_llvm)) return TOOL_EXIT_USAGE;
    char cerr[4096];
    if (tool_cpu_run(tool_module_ir(r->m), &cpo, arg_literals(r), r->np, r->a, &tr, cerr,
                     sizeof cerr) != ST_OK) {
      tool_error(CMD, "%s: %s", c->file, cerr);
      return TOOL_EXIT_FAIL;
    }
  } else {
    return execute_api(r, (int32_t)c->replicas);
  }
  push_leaves(r->a, tr, &r->got);
  return TOOL_EXIT_OK;
}

/* Prints or writes the results (--output), checks --expected-output and
 * the reference target; an exit code. */
static int finish_results(run_state *r) {
  run_cfg *c = &r->c;
  arena *a = r->a;
  int rc = TOOL_EXIT_OK;
  if (tool_mpi_rank() != 0 && !c->rank_outputs) return rc; /* rank 0 speaks for the run */
  strbuf out;
  sb_init(&out);
  for (int k = 0; k < r->got.n; k++) {
    ir_literal *l = r->got.v[k];
    const char *o = k < c->noutputs ? c->outputs[k] : "-";
    if (o[0] == '@' && c->rank_outputs) o = arena_printf(a, "@%s", tool_rank_path(a, o + 1, tool_mpi_rank()));
    if (!strcmp(o, "-")) {
      out.len = 0;
      sb_printf(&out, "%s", rank_prefix(r));
      ir_tensor_print(&out, l, c->print_max);
      sb_putc(&out, '\n');
      fwrite(out.s, 1, out.len, stdout);
    } else if (o[0] == '@') {
      char err[512];
      if (ir_tensor_write_file(o + 1, l, err, sizeof err) != ST_OK) {
        tool_error(CMD, "--output %d: %s", k + 1, err);
        rc = TOOL_EXIT_FAIL;
      }
    }
  }
  sb_free(&out);
  fflush(stdout);
  for (int k = 0; k < r->nexps && k < r->got.n; k++)
    if (!check_result(a, c, k, r->got.v[k], r->exps[k].lit,
                      arena_printf(a, "--expected-output %d", r->exps[k].arg)))
      rc = TOOL_EXIT_FAIL;
  if (!c->reference) return rc;
  tpucc_execute_options_t eo; /* the same inputs on the reference target */
  tpucc_execute_options_init(&eo);
  eo.target = r->cpu_reference;
  eo.replicas = (int32_t)c->replicas;
  if (tpucc_execute(r->m, &eo, r->args, r->np, &r->ref) != TPUCC_OK) {
    tool_error(CMD, "%s: reference: %s", c->file, tpucc_session_message(r->s));
    return TOOL_EXIT_FAIL;
  }
  const char *from = arena_printf(a, "reference %s", c->reference);
  for (int k = 0; k < r->got.n && k < tpucc_result_count(r->ref); k++)
    if (!check_result(a, c, k, r->got.v[k], literal_of(a, tpucc_result_tensor(r->ref, k)), from))
      rc = TOOL_EXIT_FAIL;
  return rc;
}

/* run_steps under mpirun on a TPU target: every rank compiles the module.
 * When the replicas split the cores across the ranks (tpu_replicated),
 * rank 0 alone reads the inputs, binds them and tells the others whether
 * the run goes on (they then exit with its code, silently): their cores'
 * parameters come from rank 0 (include/tpurt.h, tpurt_peers_t). Else
 * every rank runs the whole module with rank 0's inputs, as in one
 * process. An exit code. */
static int run_pod_steps(run_state *r) {
  run_cfg *c = &r->c;
  int rc = compile_module(r);
  if (rc != TOOL_EXIT_OK) return rc;
  int nrep = replica_count(r);
  if (!tpu_replicated(r, nrep)) {
    if (!read_tensors(r->a, "--input", c->inputs, c->ninputs, &r->ins, &r->nins) ||
        !read_tensors(r->a, "--expected-output", c->expected, c->nexpected, &r->exps, &r->nexps))
      return TOOL_EXIT_USAGE;
    rc = bind_inputs(r);
    if (rc == TOOL_EXIT_OK) rc = execute_on_target(r);
    if (rc == TOOL_EXIT_OK && (r->rank == 0 || c->rank_outputs)) rc = finish_results(r);
    return rc;
  }
  if (tool_mpi_rank() == 0) {
    if (!parse_tensors(r->a, "--input", c->inputs, c->ninputs, &r->ins, &r->nins) ||
        !parse_tensors(r->a, "--expected-output", c->expected, c->nexpected, &r->exps, &r->nexps))
      rc = TOOL_EXIT_USAGE;
    if (rc == TOOL_EXIT_OK) rc = bind_inputs(r);
  }
  char err[512];
  if (!tool_mpi_agree(&rc, err, sizeof err)) {
    tool_error(CMD, "%s: rank %d: %s", c->file, tool_mpi_rank(), err);
    return TOOL_EXIT_FAIL;
  }
  if (rc == TOOL_EXIT_OK) rc = run_tpu_replicas(r, nrep);
  if (rc == TOOL_EXIT_OK && (r->rank == 0 || c->rank_outputs)) rc = finish_results(r);
  return rc;
}

/* The steps of a run after the command line: an exit code. */
static int run_steps(run_state *r) {
  run_cfg *c = &r->c;
  if (!check_targets(r)) return TOOL_EXIT_USAGE;
  bool tpub = strlen(c->file) > 5 && !strcmp(c->file + strlen(c->file) - 5, ".tpub");
  if (!tpub && tool_mpi_size() > 1 && c->target && tool_tpu_target(c->target))
    return run_pod_steps(r);
  if (!read_tensors(r->a, "--input", c->inputs, c->ninputs, &r->ins, &r->nins) ||
      !read_tensors(r->a, "--expected-output", c->expected, c->nexpected, &r->exps, &r->nexps))
    return TOOL_EXIT_USAGE;
  if (tpub) {
    if (c->replicas > 1) {
      tool_error(CMD, "%s: a .tpub runs 1 replica, %lld asked for", c->file, (long long)c->replicas);
      return TOOL_EXIT_USAGE;
    }
    if (tool_mpi_size() > 1) {
      tool_error(CMD, "%s: a .tpub runs in one process, not across %d MPI ranks", c->file, tool_mpi_size());
      return TOOL_EXIT_USAGE;
    }
    return run_tpub(c, r->given_target, r->a, r->ins, r->nins, r->exps, r->nexps);
  }
  int rc = compile_module(r);
  if (rc == TOOL_EXIT_OK) rc = bind_inputs(r);
  if (rc == TOOL_EXIT_OK) rc = execute_on_target(r);
  if (rc == TOOL_EXIT_OK && (r->rank == 0 || c->rank_outputs)) rc = finish_results(r);
  return rc;
}

int tool_cmd_run(int argc, char **argv) {
  run_state r = {0};
  r.a = arena_create();
  r.c.seed = 1;
  r.c.atol = 1e-5;
  r.c.rtol = 1e-5;
  r.c.print_max = 1024;
  tool_opt_options_init(&r.c.opt);
  bool help = false;
  int rc = TOOL_EXIT_USAGE;
  tool_mpi_hush(true); /* under mpirun, rank 0 alone prints usage errors and help */
  if (!parse_cmdline(argc, argv, &r.c, r.a, &help)) {
    rc = TOOL_EXIT_USAGE;
  } else if (help) {
    if (!r.c.listed) tool_help_run(stdout);
    rc = TOOL_EXIT_OK;
  } else if (tool_mpi_hush(false), !tool_mpi_begin("run", argc, argv, (const char *const[]){r.c.file}, 1)) {
    rc = TOOL_EXIT_FAIL;
  } else {
    rc = run_steps(&r);
    tool_mpi_end();
  }
  tool_mpi_hush(false);
  tpucc_result_destroy(r.ref);
  tpucc_result_destroy(r.res);
  tpucc_module_destroy(r.m);
  tpucc_session_destroy(r.s);
  arena_destroy(r.a);
  return rc;
}
