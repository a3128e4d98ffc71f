/* cmd_grad.c: `tpucc grad`: writes the vector-Jacobian product of a
 * module's entry (libtpucc's tpucc_grad) as HLO text. */
#include "tools/tools.h"

#include <stdlib.h>

void tool_help_grad(FILE *f) {
  fputs("usage: tpucc grad FILE [options] [-o OUT.hlo]\n"
        "\n"
        "Writes the vector-Jacobian product of FILE's entry (.hlo or .tg), as\n"
        "jax.vjp defines it: OUT's entry takes FILE's parameters, then one\n"
        "cotangent per result of FILE's entry (same shape and type, in result\n"
        "order), and returns the tuple of the gradients with respect to the chosen\n"
        "parameters. A gradient asked through an op that has none is a located\n"
        "error (file:line:col).\n"
        "\n"
        "options:\n"
        "  --wrt=I,J,...      the parameter numbers to differentiate, in the order\n"
        "                     the gradients are returned (default: every\n"
        "                     floating-point parameter, in order)\n"
        "  --remat            recompute the forward values the backward pass reads\n"
        "                     there, instead of keeping them from the forward pass\n"
        "  --value-and-grad   FILE's entry has one floating-point scalar result: take\n"
        "                     no cotangent and return (value, gradients...)\n"
        "  -o FILE            write to FILE instead of standard output\n"
        "  --entry=NAME       .tg only: the graph to differentiate (default: the last)\n"
        "  --language=hlo|tg  override the choice by file extension\n"
        "  -h, --help         this text\n"
        "\n"
        "exit status: 0 success; 1 no gradient (an op without one, a bad --wrt\n"
        "entry) or the output could not be written; 2 usage error, unreadable input\n"
        "or a compile error.\n",
        f);
}

static const char *const CMD = "tpucc grad";

/* Parses "I,J,..." into wrt (at most max entries). */
static bool parse_wrt(const char *v, int32_t *wrt, int32_t max, int32_t *out_n) {
  int32_t n = 0;
  const char *p = v;
  for (;;) {
    int64_t x;
    char *end;
    char buf[32];
    size_t len = strcspn(p, ",");
    if (len == 0 || len >= sizeof buf || n == max) return false;
    memcpy(buf, p, len);
    buf[len] = 0;
    x = strtoll(buf, &end, 10);
    if (*end || x < 0 || x > INT32_MAX) return false;
    wrt[n++] = (int32_t)x;
    if (!p[len]) break;
    p += len + 1;
  }
  *out_n = n;
  return true;
}

int tool_cmd_grad(int argc, char **argv) {
  tool_args ar = {argc, 0, argv, CMD, false};
  const char *file = NULL, *out = NULL, *name, *v;
  tpucc_compile_options_t co;
  tpucc_compile_options_init(&co);
  tpucc_grad_options_t go;
  tpucc_grad_options_init(&go);
  static int32_t wrt[4096];
  while (tool_args_next(&ar, &name, &v)) {
    if (!name) {
      if (file) {
        tool_error(CMD, "more than one FILE ('%s' and '%s')", file, v);
        return TOOL_EXIT_USAGE;
      }
      file = v;
    } else if (!strcmp(name, "h") || !strcmp(name, "help")) {
      tool_help_grad(stdout);
      return TOOL_EXIT_OK;
    } else if (!strcmp(name, "remat") || !strcmp(name, "value-and-grad")) {
      if (v) {
        tool_error(CMD, "--%s takes no value", name);
        return TOOL_EXIT_USAGE;
      }
      if (name[0] == 'r')
        go.remat = 1;
      else
        go.value_and_grad = 1;
    } else if (!strcmp(name, "o") || !strcmp(name, "entry") || !strcmp(name, "language") ||
               !strcmp(name, "wrt")) {
      if (!(v = tool_args_value(&ar, name, v))) return TOOL_EXIT_USAGE;
      if (!strcmp(name, "o"))
        out = v;
      else if (!strcmp(name, "entry"))
        co.entry = v;
      else if (!strcmp(name, "wrt")) {
        if (!parse_wrt(v, wrt, (int32_t)COUNTOF(wrt), &go.nwrt)) {
          tool_error(CMD, "--wrt: '%s' is not a list of parameter numbers (I,J,...)", v);
          return TOOL_EXIT_USAGE;
        }
        go.wrt = wrt;
      } else if (!tool_parse_language(CMD, v, &co.language))
        return TOOL_EXIT_USAGE;
    } else {
      tool_error(CMD, "unknown option '%s%s' (see tpucc grad --help)", strlen(name) == 1 ? "-" : "--", name);
      return TOOL_EXIT_USAGE;
    }
  }
  if (!file) {
    tool_error(CMD, "no FILE given (see tpucc grad --help)");
    return TOOL_EXIT_USAGE;
  }
  tpucc_session_t *s;
  tpucc_module_t *m = NULL, *g = NULL;
  int rc = tool_open_module(CMD, file, &co, &s, &m);
  if (rc == TOOL_EXIT_FAIL) return rc;
  const char *text;
  size_t len;
  if (rc != TOOL_EXIT_OK) {
    /* reported by tool_open_module */
  } else if (tpucc_grad(m, &go, &g) != TPUCC_OK) {
    const char *msg = tpucc_session_message(s);
    if (strstr(msg, ": error: ")) /* located at the op */
      fprintf(stderr, "%s\n", msg);
    else
      tool_error(CMD, "%s: %s", file, msg);
    rc = TOOL_EXIT_FAIL;
  } else if (tpucc_module_emit_hlo(g, &text, &len) != TPUCC_OK) {
    tool_error(CMD, "%s: %s", file, tpucc_session_message(s));
    rc = TOOL_EXIT_FAIL;
  } else {
    rc = tool_write_output(CMD, out, text, len);
  }
  tpucc_module_destroy(g);
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
  return rc;
}
