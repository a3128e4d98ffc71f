/* cmd_opt.c: `tpucc opt`: runs chosen passes (or the pipeline of an -O
 * level) on a module and prints the resulting HLO: the harness of the pass
 * tests. Also the optimisation options shared by compile, run and opt
 * (tool_opt_parse: -O0..-O2, --passes, --dump-dir, --dump-after,
 * --time-passes, --explain, --list-passes). */
#include "tools/tools.h"

#include <stdlib.h>

#include "passes/passes.h"

void tool_opt_options_init(tool_opt_options *o) {
  memset(o, 0, sizeof *o);
  o->opt_level = 2;
}

void tool_help_opt_flags(FILE *f) {
  fputs("  -O0, -O1, -O2      optimisation level (default -O2): -O0 runs no pass,\n"
        "                     -O1 simplifies, folds constants, CSE, folds transposes\n"
        "                     into dots, DCE and assigns layouts, -O2 also fuses\n"
        "                     (see --list-passes)\n"
        "  --passes=a,b,c     run exactly these passes, in this order\n"
        "  --list-passes      print the pipeline (name, level, what it does) and exit\n"
        "  --dump-dir=DIR     write the HLO after each pass to DIR/MODULE.NNNN.after_PASS.hlo\n"
        "                     (NNNN counts from 0000 = the input, so files sort in order);\n"
        "                     compiling for a TPU, then a text dump after each backend\n"
        "                     step (DIR/MODULE.NNNN.after_tpu-lower.txt, ...)\n"
        "  --dump-after=REGEX only dump after passes and steps whose name matches (POSIX ERE)\n"
        "  --time-passes      print each pass's (and backend step's) wall time to stderr\n"
        "  --verify-each      verify the module after every pass (default for opt;\n"
        "                     compile and run verify once, after the last pass)\n"
        "  --explain          print the passes' decisions (fusions made and refused,\n"
        "                     rewrites) to standard error; run and compile on a TPU\n"
        "                     target add the lowering's tiling decisions (tiling: ...)\n"
        "  --all-reduce-combine=BYTES|off  combine independent all-reduces into one of\n"
        "                     at most BYTES (pass all-reduce-combiner; default: 31457280\n"
        "                     on TPU targets, off elsewhere)\n",
        f);
}

static void list_passes(FILE *f) {
  fputs("the pipeline, in order (a pass runs at -O<level> and above):\n", f);
  for (const pass_info *p = pass_pipeline; p->name; p++)
    fprintf(f, "  %-22s -O%d  %s\n", p->name, p->min_opt_level, p->doc);
  tool_tpu_list_steps(f);
}

int tool_write_output(const char *cmd, const char *out, const char *text, size_t len) {
  if (!out || !strcmp(out, "-")) {
    if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
      tool_error(cmd, "error writing standard output");
      return TOOL_EXIT_FAIL;
    }
    return TOOL_EXIT_OK;
  }
  char err[512];
  if (ir_file_write(out, text, len, err, sizeof err) != ST_OK) {
    tool_error(cmd, "-o: %s", err);
    return TOOL_EXIT_FAIL;
  }
  return TOOL_EXIT_OK;
}

int tool_opt_parse(tool_args *ar, const char *name, const char *v, tool_opt_options *o) {
  if (name[0] == 'O' && name[1] >= '0' && name[1] <= '9' && !name[2]) {
    if (name[1] > '2') {
      tool_error(ar->cmd, "-%s: optimisation levels are -O0, -O1 and -O2", name);
      return -1;
    }
    o->opt_level = name[1] - '0';
    return 1;
  }
  if (!strcmp(name, "time-passes") || !strcmp(name, "explain") || !strcmp(name, "list-passes") ||
      !strcmp(name, "verify-each")) {
    if (v) {
      tool_error(ar->cmd, "--%s takes no value", name);
      return -1;
    }
    if (name[0] == 't')
      o->time_passes = true;
    else if (name[0] == 'v')
      o->verify_each = true;
    else if (name[0] == 'e')
      o->explain = true;
    else {
      list_passes(stdout);
      return 2;
    }
    return 1;
  }
  if (!strcmp(name, "all-reduce-combine")) {
    if (!(v = tool_args_value(ar, name, v))) return -1;
    char *e = NULL;
    long long b = strcmp(v, "off") == 0 ? -1 : strtoll(v, &e, 10);
    if (e && (v[0] < '0' || v[0] > '9' || *e || b <= 0)) {
      tool_error(ar->cmd, "--all-reduce-combine: expected a number of bytes or off, not '%s'", v);
      return -1;
    }
    o->all_reduce_combine = b;
    return 1;
  }
  if (!strcmp(name, "passes") || !strcmp(name, "dump-dir") || !strcmp(name, "dump-after")) {
    if (!(v = tool_args_value(ar, name, v))) return -1;
    if (name[0] == 'p')
      o->passes = v;
    else if (!strcmp(name, "dump-dir"))
      o->dump_dir = v;
    else
      o->dump_after = v;
    return 1;
  }
  return 0;
}

/* The number of passes tool_module_optimize runs for o. */
static int passes_run(const tool_opt_options *o) {
  int n = 0;
  if (o->passes) {
    if (!o->passes[0]) return 0;
    n = 1;
    for (const char *p = o->passes; *p; p++) n += *p == ',';
    return n;
  }
  for (const pass_info *p = pass_pipeline; p->name && o->opt_level > 0; p++)
    n += o->opt_level >= p->min_opt_level;
  return n;
}

void tool_tpu_opts_steps(tool_tpu_opts *t, const tool_opt_options *o) {
  t->dump_dir = o->dump_dir;
  t->dump_after = o->dump_after;
  t->dump_seq = passes_run(o) + 1;
  t->time_steps = o->time_passes;
}

void tool_help_opt(FILE *f) {
  fputs("usage: tpucc opt FILE [options]\n"
        "\n"
        "Runs passes on FILE (.hlo or .tg) and prints the resulting module as HLO\n"
        "text (readable again by tpucc). Without --passes it runs the pipeline of\n"
        "the -O level. The module is verified after every pass.\n"
        "\n"
        "options:\n",
        f);
  tool_help_opt_flags(f);
  fputs("  -o FILE            write to FILE instead of standard output\n"
        "  --target=SPEC      size the passes' decisions (VMEM) for this TPU target\n"
        "                     (default: v3's figures)\n"
        "  --entry=NAME       .tg only: the graph to compile (default: the last)\n"
        "  --language=hlo|tg  override the choice by file extension\n"
        "  -h, --help         this text\n"
        "\n"
        "exit status: 0 success; 1 the output could not be written, or a pass\n"
        "failed; 2 usage error, unreadable input or a compile error.\n",
        f);
}

int tool_open_module(const char *cmd, const char *file, const tpucc_compile_options_t *co, tpucc_session_t **out_s,
                     tpucc_module_t **out_m) {
  *out_m = NULL;
  if (tpucc_session_create(NULL, out_s) != TPUCC_OK) {
    tool_error(cmd, "out of memory");
    return TOOL_EXIT_FAIL;
  }
  if (tpucc_compile_file(*out_s, co, file, out_m) == TPUCC_OK) return TOOL_EXIT_OK;
  const char *d = tpucc_session_diagnostics(*out_s);
  if (d[0])
    fputs(d, stderr);
  else
    tool_error(cmd, "%s", tpucc_session_message(*out_s));
  return TOOL_EXIT_USAGE;
}

static const char *const CMD = "tpucc opt";

int tool_cmd_opt(int argc, char **argv) {
  tool_args ar = {argc, 0, argv, CMD, false};
  const char *file = NULL, *out = NULL, *name, *v;
  tool_opt_options oo;
  tool_opt_options_init(&oo);
  oo.verify_each = true; /* the pass tests' harness: find the pass that breaks */
  tpucc_compile_options_t co;
  tpucc_compile_options_init(&co);
  while (tool_args_next(&ar, &name, &v)) {
    if (!name) {
      if (file) {
        tool_error(CMD, "more than one FILE ('%s' and '%s')", file, v);
        return TOOL_EXIT_USAGE;
      }
      file = v;
      continue;
    }
    int r = tool_opt_parse(&ar, name, v, &oo);
    if (r < 0) return TOOL_EXIT_USAGE;
    if (r == 2) return TOOL_EXIT_OK;
    if (r == 1) continue;
    if (!strcmp(name, "h") || !strcmp(name, "help")) {
      tool_help_opt(stdout);
      return TOOL_EXIT_OK;
    } else if (!strcmp(name, "o") || !strcmp(name, "entry") || !strcmp(name, "language") ||
               !strcmp(name, "target")) {
      if (!(v = tool_args_value(&ar, name, v))) return TOOL_EXIT_USAGE;
      if (!strcmp(name, "o"))
        out = v;
      else if (!strcmp(name, "target")) {
        if (!tool_tpu_target(v)) {
          tool_error(CMD, "--target: '%s' is not a TPU target spec (v2, v3, overrides)", v);
          return TOOL_EXIT_USAGE;
        }
        oo.target = v;
      }
      else if (!strcmp(name, "entry"))
        co.entry = v;
      else if (!tool_parse_language(CMD, v, &co.language))
        return TOOL_EXIT_USAGE;
    } else {
      tool_error(CMD, "unknown option '%s%s' (see tpucc opt --help)",
                 strlen(name) == 1 ? "-" : "--", name);
      return TOOL_EXIT_USAGE;
    }
  }
  if (!file) {
    tool_error(CMD, "no FILE given (see tpucc opt --help)");
    return TOOL_EXIT_USAGE;
  }
  tpucc_session_t *s;
  tpucc_module_t *m = NULL;
  int rc = tool_open_module(CMD, file, &co, &s, &m);
  if (rc == TOOL_EXIT_FAIL) return rc;
  const char *text;
  size_t len;
  if (rc != TOOL_EXIT_OK) {
    /* reported by tool_open_module */
  } else if (tool_module_optimize(m, &oo) != TPUCC_OK) {
    const char *d = tpucc_session_diagnostics(s);
    if (d[0]) fputs(d, stderr);
    tool_error(CMD, "%s: %s", file, tpucc_session_message(s));
    rc = oo.passes && strstr(tpucc_session_message(s), "--passes") ? TOOL_EXIT_USAGE
                                                                   : TOOL_EXIT_FAIL;
  } else if (tpucc_module_emit_hlo(m, &text, &len) != TPUCC_OK) {
    tool_error(CMD, "%s: %s", file, tpucc_session_message(s));
    rc = TOOL_EXIT_FAIL;
  } else {
    rc = tool_write_output(CMD, out, text, len);
  }
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
  return rc;
}
