/* cmd_compile.c: `tpucc compile`: compile a module and emit it: HLO text
 * (the IR's own text form), and, through the backends in the target table,
 * TPU programs (.tpub), TPU assembly or a CPU object file and header. */
#include "tools/tools.h"
#include "driver/driver.h" /* --target=cpu: the spec; with LLVM, cpu_compile_aot */
#include "backend/tpu/tpu.h" /* --all-reduce names */

#include <ctype.h>

void tool_help_compile(FILE *f) {
  fputs("usage: tpucc compile FILE [options]\n"
        "\n"
        "Compiles FILE (.hlo: XLA HLO text; .tg: tpucc graph) and writes the result.\n"
        "\n"
        "options:\n"
        "  --emit=KIND        what to write (default hlo):\n"
        "                       hlo   the verified module as HLO text, readable\n"
        "                             again by tpucc\n"
        "                       tpub  a TPU program for --target (backend/tpu),\n"
        "                             the default when -o names a .tpub file\n"
        "                       asm   the TPU program as assembler text\n"
        "                       obj   with --target=cpu (the default there): an\n"
        "                             object file for the host CPU (backend/llvm)\n"
        "                       llvm  with --target=cpu: the optimised LLVM IR of\n"
        "                             that object, as text (llvm-as reads it); the\n"
        "                             entry is tpucc_entry unless --symbol is given\n"
        "  --target=SPEC      TPU target of tpub/asm (default v3; v2, overrides\n"
        "                     such as v3,mxu=64x64,vmem=8MiB)\n"
        "  --target=cpu       ahead of time for this CPU: -o FILE.o gets an object\n"
        "                     defining void SYM_run(inputs..., outputs..., scratch)\n"
        "                     (SYM: the stem of -o, or --symbol); needs only libm\n"
        "  --emit-header=FILE with --target=cpu: a C header declaring SYM_run with\n"
        "                     the shapes and types of its inputs and outputs and\n"
        "                     SYM_SCRATCH_BYTES (upper case), the scratch needed\n"
        "  --symbol=NAME      with --target=cpu: the C name of the entry (default:\n"
        "                     the stem of -o, non-identifier characters as _)\n"
        "  --cpu-numerics=M   with --target=cpu: native (default), strict or tpu\n"
        "                     (docs/cpu-backend.md)\n"
        "  --precision=P      default|high|highest: bf16 passes of f32 dots (1, 3, 6)\n"
        "  --memory-report    print peak VMEM/HBM and the largest buffers\n"
        "  --all-reduce=A     TPU, replica_count > 1: auto (default: the cost model picks\n"
        "                     ring or direct), ring, direct or ps (parameter server);\n"
        "                     --explain shows the choice\n"
        "  -o FILE            write to FILE instead of standard output (- is stdout)\n"
        "  --entry=NAME       .tg only: the graph to compile (default: the last)\n"
        "  --language=hlo|tg  override the choice by file extension\n"
        "  -h, --help         this text\n",
        f);
  tool_help_opt_flags(f);
  fputs("\n"
        "exit status: 0 success; 1 the output could not be written; 2 usage error,\n"
        "unreadable input or a compile error (file:line:col: error: ...).\n",
        f);
}

static const char *const CMD = "tpucc compile";

/* --target=cpu: the object (and header) through backend/llvm's
 * cpu_compile_aot. sym: the entry's C name (NULL: from the stem of out). */
static int emit_cpu(const ir_module *m, const char *out, const char *header, const char *sym,
                    const char *numerics, bool llvm_ir) {
#ifdef TPUCC_HAVE_LLVM
  if (llvm_ir && !sym) sym = "tpucc_entry"; /* the JIT's name; --symbol renames */
  if (!llvm_ir && (!out || !strcmp(out, "-"))) {
    tool_error(CMD, "--target=cpu writes an object file: give -o FILE.o");
    return TOOL_EXIT_USAGE;
  }
  char spec[64], err[1024];
  drv_cpu_spec cs;
  snprintf(spec, sizeof spec, "cpu,numerics=%.20s", numerics ? numerics : "native");
  if ((numerics && strchr(numerics, ',')) ||
      drv_cpu_spec_parse(spec, false, &cs, err, sizeof err) != ST_OK) {
    tool_error(CMD, "--cpu-numerics: '%s' is not native, strict or tpu", numerics);
    return TOOL_EXIT_USAGE;
  }
  cpu_options o;
  cpu_options_init(&o);
  drv_cpu_options(&cs, &o);
  char name[128];
  if (!sym) { /* the stem of -o as a C identifier */
    const char *b = strrchr(out, '/');
    b = b ? b + 1 : out;
    size_t n = 0;
    for (; b[n] && b[n] != '.' && n + 1 < sizeof name; n++)
      name[n] = isalnum((unsigned char)b[n]) ? b[n] : '_';
    name[n] = 0;
    if (!n || isdigit((unsigned char)name[0])) {
      tool_error(CMD, "-o '%s': no C name in the file name; give --symbol=NAME", out);
      return TOOL_EXIT_USAGE;
    }
    sym = name;
  } else {
    bool ok = sym[0] && !isdigit((unsigned char)sym[0]) && strlen(sym) < sizeof name;
    for (const char *p = sym; ok && *p; p++) ok = isalnum((unsigned char)*p) || *p == '_';
    if (!ok) {
      tool_error(CMD, "--symbol: '%s' is not a C identifier", sym);
      return TOOL_EXIT_USAGE;
    }
  }
  o.entry_name = sym;
  if (llvm_ir) o.dump_llvm = out ? out : "-";
  base_status st = cpu_compile_aot(m, &o, llvm_ir ? NULL : out, header, err, sizeof err);
  if (st != ST_OK) {
    tool_error(CMD, "%s", err);
    return st == ST_IO_ERROR ? TOOL_EXIT_FAIL : TOOL_EXIT_USAGE;
  }
  return TOOL_EXIT_OK;
#else
  (void)m, (void)out, (void)header, (void)sym, (void)numerics, (void)llvm_ir;
  tool_error(CMD, "--target=cpu: built without the CPU backend (LLVM not found)");
  return TOOL_EXIT_USAGE;
#endif
}

int tool_cmd_compile(int argc, char **argv) {
  tool_args ar = {argc, 0, argv, CMD, false};
  const char *file = NULL, *out = NULL, *emit = NULL, *name, *v;
  const char *header = NULL, *sym = NULL, *numerics = NULL; /* --target=cpu */
  tool_tpu_opts tpo = {0};
  tpucc_compile_options_t co;
  tpucc_compile_options_init(&co);
  tool_opt_options oo;
  tool_opt_options_init(&oo);
  while (tool_args_next(&ar, &name, &v)) {
    int r = name ? tool_opt_parse(&ar, name, v, &oo) : 0;
    if (r < 0) return TOOL_EXIT_USAGE;
    if (r == 2) return TOOL_EXIT_OK;
    if (r == 1) continue;
    if (!name) {
      if (file) {
        tool_error(CMD, "more than one FILE ('%s' and '%s')", file, v);
        return TOOL_EXIT_USAGE;
      }
      file = v;
    } else if (!strcmp(name, "h") || !strcmp(name, "help")) {
      tool_help_compile(stdout);
      return TOOL_EXIT_OK;
    } else if (!strcmp(name, "memory-report")) {
      tpo.memory_report = true;
    } else if (!strcmp(name, "all-reduce")) {
      if (!(v = tool_args_value(&ar, name, v))) return TOOL_EXIT_USAGE;
      int a = tpu_all_reduce_parse(v);
      if (a < 0) {
        fprintf(stderr, "tpucc compile: --all-reduce: '%s' is not auto, ring, direct or ps\n", v);
        return TOOL_EXIT_USAGE;
      }
      tpo.all_reduce = a;
    } else if (!strcmp(name, "emit-header") || !strcmp(name, "symbol") ||
               !strcmp(name, "cpu-numerics")) {
      if (!(v = tool_args_value(&ar, name, v))) return TOOL_EXIT_USAGE;
      if (name[0] == 'e') header = v;
      else if (name[0] == 's') sym = v;
      else numerics = v;
    } else if (!strcmp(name, "target") || !strcmp(name, "precision")) {
      if (!(v = tool_args_value(&ar, name, v))) return TOOL_EXIT_USAGE;
      if (name[0] == 't') tpo.target = v;
      else tpo.precision = v;
    } else if (!strcmp(name, "emit") || !strcmp(name, "o") || !strcmp(name, "entry") ||
               !strcmp(name, "language")) {
      if (!(v = tool_args_value(&ar, name, v))) return TOOL_EXIT_USAGE;
      if (!strcmp(name, "emit"))
        emit = v;
      else if (!strcmp(name, "o"))
        out = v;
      else if (!strcmp(name, "entry"))
        co.entry = v;
      else if (!tool_parse_language(CMD, v, &co.language))
        return TOOL_EXIT_USAGE;
    } else {
      tool_error(CMD, "unknown option '%s%s' (see tpucc compile --help)",
                 strlen(name) == 1 ? "-" : "--", name);
      return TOOL_EXIT_USAGE;
    }
  }
  if (!file) {
    tool_error(CMD, "no FILE given (see tpucc compile --help)");
    return TOOL_EXIT_USAGE;
  }
  bool cpu = tpo.target && !strcmp(tpo.target, "cpu");
  if ((header || sym || numerics) && !cpu) {
    tool_error(CMD, "--emit-header, --symbol and --cpu-numerics need --target=cpu");
    return TOOL_EXIT_USAGE;
  }
  if (cpu && emit && strcmp(emit, "obj") != 0 && strcmp(emit, "llvm") != 0) {
    tool_error(CMD, "--target=cpu emits an object file (--emit=obj) or LLVM IR (--emit=llvm), "
               "not '%s'", emit);
    return TOOL_EXIT_USAGE;
  }
  if (cpu && !emit) emit = "obj";
  if (!emit) {
    size_t ol = out ? strlen(out) : 0;
    emit = ol > 5 && !strcmp(out + ol - 5, ".tpub") ? "tpub" : "hlo";
  }
  if (strcmp(emit, "hlo") != 0 && strcmp(emit, "tpub") != 0 && strcmp(emit, "asm") != 0 &&
      strcmp(emit, "obj") != 0 && strcmp(emit, "llvm") != 0) {
    tool_error(CMD, "--emit: unknown kind '%s' (known: hlo, tpub, asm, obj, llvm)", emit);
    return TOOL_EXIT_USAGE;
  }
  if ((!strcmp(emit, "obj") || !strcmp(emit, "llvm")) && !cpu) {
    tool_error(CMD, "--emit=%s needs --target=cpu", emit);
    return TOOL_EXIT_USAGE;
  }
  tpucc_session_t *s;
  if (tpucc_session_create(NULL, &s) != TPUCC_OK) {
    tool_error(CMD, "out of memory");
    return TOOL_EXIT_FAIL;
  }
  int rc = TOOL_EXIT_OK;
  tpucc_module_t *m = NULL;
  const char *text;
  size_t len;
  oo.target = tpo.target; /* passes size their decisions by a TPU target */
  tpo.explain = oo.explain;
  tool_tpu_opts_steps(&tpo, &oo);
  if (tpucc_compile_file(s, &co, file, &m) != TPUCC_OK) {
    const char *d = tpucc_session_diagnostics(s);
    fputs(d, stderr);
    if (!strstr(d, "error:")) tool_error(CMD, "%s", tpucc_session_message(s));
    rc = TOOL_EXIT_USAGE;
  } else if (tool_module_optimize(m, &oo) != TPUCC_OK) { /* the -O pipeline */
    tool_error(CMD, "%s: %s", file, tpucc_session_message(s));
    rc = TOOL_EXIT_FAIL;
  } else if (cpu) { /* an object file for this CPU */
    rc = emit_cpu(tool_module_ir(m), out, header, sym, numerics, !strcmp(emit, "llvm"));
  } else if (strcmp(emit, "hlo") != 0) { /* a TPU program */
    char err[8192];
    base_status st = tool_tpu_emit(tool_module_ir(m), &tpo, emit, out, err, sizeof err);
    if (st != ST_OK) {
      fprintf(stderr, "%s\n", err);
      rc = st == ST_IO_ERROR ? TOOL_EXIT_FAIL : TOOL_EXIT_USAGE;
    }
  } else if (fputs(tpucc_session_diagnostics(s), stderr) < 0 ||
             tpucc_module_emit_hlo(m, &text, &len) != TPUCC_OK) {
    tool_error(CMD, "%s: %s", file, tpucc_session_message(s));
    rc = TOOL_EXIT_FAIL;
  } else {
    rc = tool_write_output(CMD, out, text, len);
  }
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
  return rc;
}
