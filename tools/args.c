/* args.c: the CLI's option scanner and number parsing (see tools.h). */
#include "tools/tools.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

void tool_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  strbuf m, e;
  sb_init(&m);
  sb_init(&e);
  va_start(ap, fmt);
  sb_vprintf(&m, fmt, ap);
  va_end(ap);
  sb_put_escaped(&e, m.s ? m.s : "", m.len); /* quoted user text: no raw control bytes */
  fprintf(stderr, "%s: error: %s\n", cmd, sb_str(&e));
  sb_free(&m);
  sb_free(&e);
}

bool tool_args_next(tool_args *a, const char **name, const char **value) {
  if (a->i >= a->argc) return false;
  char *s = a->argv[a->i++];
  *value = NULL;
  if (a->only_positional || s[0] != '-' || s[1] == 0) { /* "-" is positional */
    *name = NULL;
    *value = s;
    return true;
  }
  if (s[1] == '-' && s[2] == 0) { /* "--" */
    a->only_positional = true;
    return tool_args_next(a, name, value);
  }
  if (s[1] != '-') { /* short option: -o FILE or -oFILE */
    *name = s[1] == 'o' ? "o" : s + 1;
    if (s[1] == 'o' && s[2]) *value = s + 2;
    return true;
  }
  char *eq = strchr(s, '=');
  if (eq) {
    *eq = 0; /* argv is ours to edit */
    *value = eq + 1;
  }
  *name = s + 2;
  return true;
}

const char *tool_args_value(tool_args *a, const char *name, const char *inline_value) {
  if (inline_value) return inline_value;
  if (a->i >= a->argc) {
    tool_error(a->cmd, "option %s%s needs a value", strlen(name) == 1 ? "-" : "--", name);
    return NULL;
  }
  return a->argv[a->i++];
}

bool tool_parse_language(const char *cmd, const char *v, tpucc_language_t *out) {
  if (!strcmp(v, "hlo")) *out = TPUCC_LANGUAGE_HLO;
  else if (!strcmp(v, "tg")) *out = TPUCC_LANGUAGE_TG;
  else {
    tool_error(cmd, "--language: '%s' is not hlo or tg", v);
    return false;
  }
  return true;
}

bool tool_parse_double(const char *cmd, const char *name, const char *v, double *out) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  if (end == v || *end || errno == ERANGE || isnan(d) || d < 0) {
    tool_error(cmd, "--%s: '%s' is not a non-negative number", name, v);
    return false;
  }
  *out = d;
  return true;
}

bool tool_parse_int(const char *cmd, const char *name, const char *v, int64_t min, int64_t max,
                    int64_t *out) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (end == v || *end || errno == ERANGE || x < min || x > max) {
    tool_error(cmd, "--%s: '%s' is not an integer in [%lld, %lld]", name, v, (long long)min,
               (long long)max);
    return false;
  }
  *out = x;
  return true;
}
