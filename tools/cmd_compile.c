/* cmd_compile.c: `tpucc compile`: compile a module and emit it: HLO text
 * (the IR's own text form), and, through the backends in the target table,
 * TPU programs (.tpub), TPU assembly or a CPU object file and header. */
#include "tools/tools.h"

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
        "  --target=SPEC      TPU target of tpub/asm (default v3; v2, overrides\n"
        "                     such as v3,mxu=64x64,vmem=8MiB)\n"
        "  --precision=P      default|high|highest: bf16 passes of f32 dots (1, 3, 6)\n"
        "  --memory-report    print peak VMEM/HBM and the largest buffers\n"
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

int tool_cmd_compile(int argc, char **argv) {
  tool_args ar = {argc, 0, argv, CMD, false};
  const char *file = NULL, *out = NULL, *emit = NULL, *name, *v;
  tool_tpu_opts tpo = {0};
  tpucc_compile_options co;
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
      else if (!strcmp(v, "hlo"))
        co.language = TPUCC_LANGUAGE_HLO;
      else if (!strcmp(v, "tg"))
        co.language = TPUCC_LANGUAGE_TG;
      else {
        tool_error(CMD, "--language: '%s' is not hlo or tg", v);
        return TOOL_EXIT_USAGE;
      }
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
  if (!emit) {
    size_t ol = out ? strlen(out) : 0;
    emit = ol > 5 && !strcmp(out + ol - 5, ".tpub") ? "tpub" : "hlo";
  }
  if (strcmp(emit, "hlo") != 0 && strcmp(emit, "tpub") != 0 && strcmp(emit, "asm") != 0) {
    tool_error(CMD, "--emit: unknown kind '%s' (known: hlo, tpub, asm)", emit);
    return TOOL_EXIT_USAGE;
  }
  tpucc_session *s;
  if (tpucc_session_create(NULL, &s) != TPUCC_OK) {
    tool_error(CMD, "out of memory");
    return TOOL_EXIT_FAIL;
  }
  int rc = TOOL_EXIT_OK;
  tpucc_module *m = NULL;
  const char *text;
  size_t len;
  if (tpucc_compile_file(s, &co, file, &m) != TPUCC_OK) {
    const char *d = tpucc_session_diagnostics(s);
    fputs(d, stderr);
    if (!strstr(d, "error:")) tool_error(CMD, "%s", tpucc_session_message(s));
    rc = TOOL_EXIT_USAGE;
  } else if (tool_module_optimize(m, &oo) != TPUCC_OK) { /* the -O pipeline */
    tool_error(CMD, "%s: %s", file, tpucc_session_message(s));
    rc = TOOL_EXIT_FAIL;
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
  } else if (!out || !strcmp(out, "-")) {
    if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
      tool_error(CMD, "error writing standard output");
      rc = TOOL_EXIT_FAIL;
    }
  } else {
    char err[512];
    if (ir_file_write(out, text, len, err, sizeof err) != ST_OK) {
      tool_error(CMD, "-o: %s", err);
      rc = TOOL_EXIT_FAIL;
    }
  }
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
  return rc;
}
