/* pipeline.c: the ordered list of passes (reading it shows the whole
 * compiler) and the driver that runs, verifies, times and dumps them. */
#include "passes/passes.h"

#include <errno.h>
#include <regex.h>
#include <sys/stat.h>
#include <time.h>

/* The compiler, in order. -O0 runs nothing (the frontend's verified module
 * goes to the target as written); -O1 cleans up (simplify, fold, CSE, DCE),
 * folds transposes into the dots that read them and assigns layouts; -O2
 * also fuses. A name may appear twice: the second
 * run cleans up after the first (pass_find returns the first row, which is
 * what --passes= uses). */
const pass_info pass_pipeline[] = {
    {"simplify", pass_simplify, 1, "algebraic simplification (exact rewrites only)"},
    {"constfold", pass_constfold, 1, "evaluates instructions of constants (<= 64K elements)"},
    {"cse", pass_cse, 1, "merges identical instructions"},
    {"simplify", pass_simplify, 1, "algebraic simplification (exact rewrites only)"},
    {"transpose-folding", pass_transpose_fold, 1,
     "a dot reads a transposed operand directly when the MXU can (no copy)"},
    {"dce", pass_dce, 1, "removes instructions and computations nothing uses"},
    {"all-reduce-combiner", pass_ar_combine, 1,
     "independent all-reduces of one kind -> one of a flat array, fold order kept (TPU)"},
    {"fusion", pass_fusion, 2, "loop, input (reduce) and output (dot/conv epilogue) fusion"},
    {"multi-output-fusion", pass_mof, 2, "merges sibling and producer-consumer fusions"},
    {"dce", pass_dce, 2, "removes instructions and computations nothing uses"},
    {"layout", pass_layout, 1, "assigns TPU tiled layouts (T(8,128), bf16 (2,1))"},
    {NULL, NULL, 0, NULL},
};

const pass_info *pass_find(const char *name) {
  for (const pass_info *p = pass_pipeline; p->name; p++)
    if (strcmp(p->name, name) == 0) return p;
  return NULL;
}

void pass_explain(pass_ctx *ctx, const char *pass, const char *inst, const char *fmt, ...) {
  if (!ctx->explain) return;
  sb_printf(ctx->explain, "%s: %s: ", pass, inst ? inst : "-");
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(ctx->explain, fmt, ap);
  va_end(ap);
  sb_putc(ctx->explain, '\n');
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool dump(const ir_module *m, const pass_run_options *o, int seq, const char *pass,
                 diag *d) {
  strbuf path, text;
  sb_init(&path);
  sb_init(&text);
  sb_printf(&path, "%s/%s.%04d.after_%s.hlo", o->dump_dir, m->name, seq, pass);
  ir_print_module(&text, m);
  FILE *f = fopen(sb_str(&path), "w");
  bool ok = f && fwrite(text.s, 1, text.len, f) == text.len;
  if (f && fclose(f) != 0) ok = false;
  if (!ok) {
    src_loc nl = {0};
    diag_error(d, nl, "cannot write dump file %s: %s", sb_str(&path), strerror(errno));
  }
  sb_free(&path);
  sb_free(&text);
  return ok;
}

/* Splits "a,b,c" into pass infos; reports unknown names. */
static int parse_list(const char *list, const pass_info **out, int max, diag *d) {
  int n = 0;
  const char *p = list;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char name[64];
    if (len == 0 || len >= sizeof name) {
      src_loc nl = {0};
      diag_error(d, nl, "--passes: empty or overlong pass name in '%s'", list);
      return -1;
    }
    memcpy(name, p, len);
    name[len] = 0;
    const pass_info *pi = pass_find(name);
    if (!pi) {
      src_loc nl = {0};
      diag_error(d, nl, "--passes: unknown pass '%s' (see --list-passes)", name);
      return -1;
    }
    if (n == max) {
      src_loc nl = {0};
      diag_error(d, nl, "--passes: more than %d passes", max);
      return -1;
    }
    out[n++] = pi;
    p += len;
    if (*p == ',') p++;
  }
  return n;
}

base_status pass_run(ir_module *m, pass_ctx *ctx, const char *passes,
                     const pass_run_options *opts) {
  pass_run_options none = {0};
  if (!opts) opts = &none;
  const pass_info *list[256];
  int n = 0;
  if (passes) {
    n = parse_list(passes, list, (int)COUNTOF(list), ctx->d);
    if (n < 0) return ST_INVALID_ARGUMENT;
  } else {
    for (const pass_info *p = pass_pipeline; p->name; p++)
      if (ctx->opt_level >= p->min_opt_level && n < (int)COUNTOF(list)) list[n++] = p;
  }
  regex_t re;
  bool have_re = false;
  if (opts->dump_dir) {
    if (mkdir(opts->dump_dir, 0777) != 0 && errno != EEXIST) {
      src_loc nl = {0};
      diag_error(ctx->d, nl, "--dump-dir: cannot create %s: %s", opts->dump_dir, strerror(errno));
      return ST_IO_ERROR;
    }
    if (opts->dump_after) {
      if (regcomp(&re, opts->dump_after, REG_EXTENDED | REG_NOSUB) != 0) {
        src_loc nl = {0};
        diag_error(ctx->d, nl, "--dump-after: invalid regular expression '%s'", opts->dump_after);
        return ST_INVALID_ARGUMENT;
      }
      have_re = true;
    }
    if (!have_re || regexec(&re, "input", 0, NULL, 0) == 0)
      if (!dump(m, opts, 0, "input", ctx->d)) goto io_fail;
  }
  FILE *rep = opts->report ? opts->report : stderr;
  double total = 0;
  for (int i = 0; i < n; i++) {
    double t0 = now_seconds();
    bool changed = list[i]->run(m, ctx);
    double dt = now_seconds() - t0;
    total += dt;
    if (opts->time_passes)
      fprintf(rep, "  %-24s %9.3f ms%s\n", list[i]->name, dt * 1e3, changed ? "  (changed)" : "");
    if (diag_error_count(ctx->d) > 0) goto fail;
    if (ctx->verify && ir_verify(m, ctx->d) > 0) {
      src_loc nl = {0};
      diag_error(ctx->d, nl, "internal: module does not verify after pass '%s'", list[i]->name);
      goto fail;
    }
    if (opts->dump_dir && (!have_re || regexec(&re, list[i]->name, 0, NULL, 0) == 0))
      if (!dump(m, opts, i + 1, list[i]->name, ctx->d)) goto io_fail;
  }
  if (!ctx->verify && n > 0 && ir_verify(m, ctx->d) > 0) { /* once, at the end */
    src_loc nl = {0};
    diag_error(ctx->d, nl, "internal: module does not verify after the passes (rerun with "
                           "--verify-each to find the pass)");
    goto fail;
  }
  if (opts->time_passes) fprintf(rep, "  %-24s %9.3f ms\n", "total", total * 1e3);
  if (have_re) regfree(&re);
  return ST_OK;
io_fail:
  if (have_re) regfree(&re);
  return ST_IO_ERROR;
fail:
  if (have_re) regfree(&re);
  return ST_INTERNAL;
}
