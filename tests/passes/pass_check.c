/* pass_check.c: the semantic check of the passes. For every .hlo file
 * given (directories are scanned, files sorted), the module is evaluated by
 * the reference evaluator on seeded random inputs (twice: plain values,
 * then with zeros, -0.0, 1.0, quiet and signalling NaNs mixed in); then
 * each pass alone, the -O1 and -O2 pipelines, and -O2 run twice are
 * applied to a copy; the
 * result must verify after every pass, print as HLO that the importer
 * reads back and verifies, and that re-read module must evaluate to
 * bitwise the same values (NaN payloads and signed zeros included).
 *
 *   pass_check [--max-steps=N] PATH...
 *
 * Modules the evaluator refuses (tuple parameters, more work than
 * --max-steps) are reported as skipped. Exit status: 0 when every check
 * passed, 1 otherwise (each failure named on stderr). */
#include <dirent.h>
#include <stdlib.h>

#include "frontend/frontend.h"
#include "passes/passes.h"

static int failures, checked, skipped;

static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Floats uniform in [-2, 2); ints in [-8, 8); pred 0/1. With `special`,
 * floats also hold exact zeros, -0.0, 1.0, quiet NaN and signalling NaN
 * (raw bits, with a payload): elements 1..3 always, then one in eight, so
 * that even small tensors exercise the exactness of rewrites. */
static void fill(ir_literal *l, uint64_t *st, bool special) {
  int64_t n = ir_shape_count(&l->shape);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = next(st);
    if (ir_type_is_float(l->shape.type)) {
      double v = (double)(r >> 11) / (double)(1ull << 53) * 4.0 - 2.0;
      int kind = !special ? -1 : i >= 1 && i <= 3 ? (int)i : (r & 7) == 0 ? (int)(r >> 3) % 5 : -1;
      switch (kind) {
      case 0: v = 0.0; break;
      case 2: v = -0.0; break;
      case 3: v = __builtin_nan(""); break;
      case 4: v = 1.0; break;
      default: break;
      }
      ir_literal_set_f64(l, i, v);
      if (kind == 1) { /* a signalling NaN with a payload */
        if (l->shape.type == IR_F32) {
          uint32_t u = 0x7fa00001u;
          memcpy((uint8_t *)l->data + 4 * i, &u, 4);
        } else {
          uint16_t h = l->shape.type == IR_BF16 ? 0x7f81 : 0x7d01;
          memcpy((uint8_t *)l->data + 2 * i, &h, 2);
        }
      }
    } else if (l->shape.type == IR_PRED) {
      ir_literal_set_i64(l, i, (int64_t)(r & 1));
    } else {
      ir_literal_set_i64(l, i, (int64_t)(r % 16) - 8);
    }
  }
}

static bool lit_same(const ir_literal *a, const ir_literal *b) {
  if (a->shape.type != b->shape.type) return false;
  if (a->shape.type == IR_TUPLE) {
    if (a->shape.ntuple != b->shape.ntuple) return false;
    for (int i = 0; i < a->shape.ntuple; i++)
      if (!lit_same(a->elems[i], b->elems[i])) return false;
    return true;
  }
  if (!ir_shape_equal(&a->shape, &b->shape) || a->nbytes != b->nbytes) return false;
  return a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0;
}

static char *slurp(const char *path, size_t *len) {
  char *t;
  char err[256];
  if (ir_file_read(path, (size_t)64 << 20, &t, len, err, sizeof err) != ST_OK) return NULL;
  return t;
}

static ir_module *parse(const char *name, const char *text, size_t len, diag **out_d) {
  diag *d = diag_create();
  diag_add_source(d, name, text, len);
  ir_module *m = fe_parse_hlo(name, text, len, d);
  if (!m || diag_error_count(d)) {
    ir_module_destroy(m);
    m = NULL;
  }
  *out_d = d;
  return m;
}

static void fail(const char *file, const char *variant, const char *fmt, ...) BASE_PRINTF(3, 4);
static void fail(const char *file, const char *variant, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "FAIL %s [%s]: ", file, variant);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  failures++;
}

static int64_t max_steps = (int64_t)1 << 27;

static base_status eval(const ir_module *m, ir_literal **args, int n, arena *a, ir_literal **out,
                        char *err, size_t errlen) {
  ir_eval_options o;
  ir_eval_options_init(&o);
  o.max_steps = max_steps;
  o.max_bytes = (int64_t)1 << 30;
  return ir_eval(m, &o, args, n, a, out, err, errlen);
}

/* Applies one variant to a copy of m0 and compares. */
static void check_variant(const char *file, const ir_module *m0, const char *variant,
                          const char *passes, int level, int times, ir_literal **args, int nargs,
                          const ir_literal *ref) {
  ir_module *m = ir_module_clone(m0);
  diag *d = diag_create();
  strbuf explain;
  sb_init(&explain);
  pass_ctx ctx = {d, level, true, &explain, NULL};
  for (int t = 0; t < times; t++) {
    if (pass_run(m, &ctx, passes, NULL) != ST_OK) {
      fail(file, variant, "pass_run failed:\n%s", diag_text(d));
      goto out;
    }
  }
  strbuf text;
  sb_init(&text);
  ir_print_module(&text, m);
  diag *d2;
  ir_module *r = parse(file, text.s, text.len, &d2);
  if (!r) {
    fail(file, variant, "printed HLO does not read back:\n%s\n%s", diag_text(d2), text.s);
  } else if (ir_verify(r, d2) > 0) {
    fail(file, variant, "re-read module does not verify:\n%s", diag_text(d2));
  } else {
    arena *a = arena_create();
    ir_literal *out = NULL;
    char err[512] = "";
    if (eval(r, args, nargs, a, &out, err, sizeof err) != ST_OK)
      fail(file, variant, "evaluation after the passes fails: %s", err);
    else if (!lit_same(out, ref))
      fail(file, variant, "values differ from the unoptimised module's\n%s", text.s);
    else
      checked++;
    arena_destroy(a);
  }
  ir_module_destroy(r);
  diag_destroy(d2);
  sb_free(&text);
out:
  sb_free(&explain);
  diag_destroy(d);
  ir_module_destroy(m);
}

/* Evaluates m0 on one set of random inputs and checks every variant. */
static void check_inputs(const char *path, const ir_module *m0, bool special) {
  const ir_comp *e = &m0->comps.v[m0->entry];
  arena *a = arena_create();
  ir_literal **args = arena_array(a, (size_t)(e->nparams + 1), sizeof *args);
  uint64_t st = 12345;
  for (int i = 0; i < e->nparams; i++) {
    const ir_inst *p = &e->insts.v[e->params[i]];
    if (!ir_shape_is_array(&p->shape)) {
      if (!special) printf("skipped %s: tuple parameter\n", path), skipped++;
      goto out;
    }
    args[i] = ir_literal_create(a, &p->shape);
    fill(args[i], &st, special);
  }
  ir_literal *ref = NULL;
  char err[512] = "";
  if (eval(m0, args, e->nparams, a, &ref, err, sizeof err) != ST_OK) {
    if (!special) printf("skipped %s: %s\n", path, err), skipped++;
    goto out;
  }
  const char *seen[64];
  int nseen = 0;
  const char *tag = special ? " (NaN, -0.0 inputs)" : "";
  for (const pass_info *p = pass_pipeline; p->name; p++) {
    bool dup = false;
    for (int k = 0; k < nseen; k++) dup |= !strcmp(seen[k], p->name);
    if (dup || nseen == 64) continue;
    seen[nseen++] = p->name;
    check_variant(path, m0, arena_printf(a, "%s%s", p->name, tag), p->name, 2, 1, args,
                  e->nparams, ref);
  }
  check_variant(path, m0, arena_printf(a, "-O1%s", tag), NULL, 1, 1, args, e->nparams, ref);
  check_variant(path, m0, arena_printf(a, "-O2%s", tag), NULL, 2, 1, args, e->nparams, ref);
  check_variant(path, m0, arena_printf(a, "-O2 twice%s", tag), NULL, 2, 2, args, e->nparams, ref);
out:
  arena_destroy(a);
}

static void check_file(const char *path) {
  size_t len;
  char *text = slurp(path, &len);
  if (!text) {
    fail(path, "read", "cannot read");
    return;
  }
  diag *d;
  ir_module *m0 = parse(path, text, len, &d);
  free(text);
  if (!m0) {
    fail(path, "parse", "%s", diag_text(d));
    diag_destroy(d);
    return;
  }
  diag_destroy(d);
  for (int special = 0; special < 2; special++) check_inputs(path, m0, special);
  ir_module_destroy(m0);
}

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check_path(const char *path) {
  DIR *dir = opendir(path);
  if (!dir) {
    check_file(path);
    return;
  }
  char **names = NULL;
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(dir))) {
    size_t l = strlen(de->d_name);
    if (l < 5 || strcmp(de->d_name + l - 4, ".hlo") != 0) continue;
    names = base_xrealloc(names, (n + 1) * sizeof *names);
    size_t pl = strlen(path) + l + 2;
    names[n] = base_xmalloc(pl);
    snprintf(names[n], pl, "%s/%s", path, de->d_name);
    n++;
  }
  closedir(dir);
  if (n) qsort(names, n, sizeof *names, cmp);
  for (size_t i = 0; i < n; i++) {
    check_file(names[i]);
    free(names[i]);
  }
  free(names);
}

int main(int argc, char **argv) {
  int npaths = 0;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--max-steps=", 12)) {
      max_steps = strtoll(argv[i] + 12, NULL, 10);
      continue;
    }
    check_path(argv[i]);
    npaths++;
  }
  if (!npaths) {
    fprintf(stderr, "usage: pass_check [--max-steps=N] PATH...\n");
    return 2;
  }
  printf("%d checks passed, %d modules skipped, %d failures\n", checked, skipped, failures);
  return failures || checked == 0 ? 1 : 0;
}
