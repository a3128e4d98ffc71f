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
 *   pass_check [--max-steps=N] [--seed=S] [--random=N] [--no-skip] PATH...
 *
 * --random=N also checks N random modules (random_module below) made from
 * seed S (default 1); a failing one is printed; --write=DIR (before
 * --random) saves them as DIR/random_K.hlo, e.g. to run them on targets.
 *
 * Modules the evaluator refuses (tuple parameters, more work than
 * --max-steps) are reported as skipped; --no-skip (the project's own
 * modules) makes a skip a failure. Exit status: 0 when every check
 * passed, 1 otherwise (each failure named on stderr). */
#include <stdlib.h>

#include "frontend/frontend.h"
#include "tests/passes/hlo_files.h"
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
      case 0:
        v = 0.0;
        break;
      case 2:
        v = -0.0;
        break;
      case 3:
        v = __builtin_nan("");
        break;
      case 4:
        v = 1.0;
        break;
      default:
        break;
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
    if (!ir_shape_is_array(p->shape)) {
      if (!special) printf("skipped %s: tuple parameter\n", path), skipped++;
      goto out;
    }
    args[i] = ir_literal_create(a, p->shape);
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
    for (int k = 0; k < nseen; k++)
      dup |= !strcmp(seen[k], p->name);
    if (dup || nseen == 64) continue;
    seen[nseen++] = p->name;
    check_variant(path, m0, arena_printf(a, "%s%s", p->name, tag), p->name, 2, 1, args, e->nparams,
                  ref);
  }
  check_variant(path, m0, arena_printf(a, "-O1%s", tag), NULL, 1, 1, args, e->nparams, ref);
  check_variant(path, m0, arena_printf(a, "-O2%s", tag), NULL, 2, 1, args, e->nparams, ref);
  check_variant(path, m0, arena_printf(a, "-O2 twice%s", tag), NULL, 2, 2, args, e->nparams, ref);
out:
  arena_destroy(a);
}

/* Parses text (named path in messages) and checks it. */
static void check_text(const char *path, const char *text, size_t len) {
  diag *d;
  ir_module *m0 = parse(path, text, len, &d);
  if (!m0) {
    fail(path, "parse", "%s", diag_text(d));
    diag_destroy(d);
    return;
  }
  diag_destroy(d);
  for (int special = 0; special < 2; special++)
    check_inputs(path, m0, special);
  ir_module_destroy(m0);
}

static void check_file(const char *path) {
  size_t len;
  char *text = slurp(path, &len);
  if (!text) {
    fail(path, "read", "cannot read");
    return;
  }
  check_text(path, text, len);
  free(text);
}

/* ---- random graphs ------------------------------------------------------ */

/* Writes a random module: values of one shape f32[R,C] built from
 * elementwise ops, broadcasts of scalar constants and of a bias, splat
 * constants, reductions broadcast back, dots with a [C,C] weight (some
 * through a transpose of either operand, for transpose-folding),
 * transposes (square shapes), compare+select, reshape round trips, iota,
 * slice+concatenate, slice+pad and identities for simplify to find; values are reused at random so
 * producers get several users in different would-be fusions, and the root is a tuple of some of
 * them. Every fusion and multi-output-fusion rule gets exercised. */
static void random_module(strbuf *b, uint64_t *st, int k) {
  static const int sizes[] = {1, 2, 3, 5, 8, 16, 33};
  int R = sizes[next(st) % 7], C = sizes[next(st) % 7];
  int n = 4 + (int)(next(st) % 28);
  sb_printf(b, "HloModule random_%d\n\n", k);
  sb_puts(b, "add_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
             "  ROOT s = f32[] add(a, b)\n}\n\n"
             "max_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
             "  ROOT m = f32[] maximum(a, b)\n}\n\nENTRY main {\n");
  sb_printf(b, "  v0 = f32[%d,%d] parameter(0)\n  v1 = f32[%d,%d] parameter(1)\n", R, C, R, C);
  sb_printf(b, "  bias = f32[%d] parameter(2)\n  w = f32[%d,%d] parameter(3)\n", C, C, C);
  static const char *const consts[] = {"0", "1", "-0", "2", "0.5", "-1"};
  static const char *const un[] = {"negate", "exponential", "tanh", "abs",
                                   "sqrt",   "log",         "copy", "convert"};
  static const char *const bin[] = {"add", "multiply", "subtract", "maximum", "minimum", "divide"};
  int nv = 2;
  for (int i = 0; i < n; i++) {
    int a = (int)(next(st) % (uint64_t)nv), c2 = (int)(next(st) % (uint64_t)nv);
    /* prefer recent values: chains fuse */
    if (next(st) % 2) a = nv - 1 - (int)(next(st) % (uint64_t)(nv < 3 ? nv : 3));
    int v = nv++;
    switch (next(st) % 15) {
    case 0:
    case 1:
      sb_printf(b, "  v%d = f32[%d,%d] %s(v%d)\n", v, R, C, un[next(st) % 8], a);
      break;
    case 2:
    case 3:
    case 4:
      sb_printf(b, "  v%d = f32[%d,%d] %s(v%d, v%d)\n", v, R, C, bin[next(st) % 6], a, c2);
      break;
    case 5:
      sb_printf(b, "  c%d = f32[] constant(%s)\n  v%d = f32[%d,%d] broadcast(c%d), dimensions={}\n",
                v, consts[next(st) % 6], v, R, C, v);
      break;
    case 6:
      sb_printf(b, "  v%d = f32[%d,%d] broadcast(bias), dimensions={1}\n", v, R, C);
      break;
    case 7: {
      bool mx = next(st) % 2;
      sb_printf(b, "  z%d = f32[] constant(%s)\n", v, mx ? "-inf" : "0");
      sb_printf(b, "  r%d = f32[%d] reduce(v%d, z%d), dimensions={1}, to_apply=%s\n", v, R, a, v,
                mx ? "max_f32" : "add_f32");
      sb_printf(b, "  v%d = f32[%d,%d] broadcast(r%d), dimensions={0}\n", v, R, C, v);
      break;
    }
    case 8: /* by v % 3 (no extra draw: the stream stays): x @ w; x @ transpose(w)
               with contracting dim 0 (transpose-folding: w's dim 1); for square x,
               transpose(x) with contracting dim 0 (folds on the lhs) */
      if (v % 3 == 1) {
        sb_printf(b, "  t%d = f32[%d,%d] transpose(w), dimensions={1,0}\n", v, C, C);
        sb_printf(b,
                  "  v%d = f32[%d,%d] dot(v%d, t%d), lhs_contracting_dims={1}, "
                  "rhs_contracting_dims={0}\n",
                  v, R, C, a, v);
      } else if (v % 3 == 2 && R == C) {
        sb_printf(b, "  t%d = f32[%d,%d] transpose(v%d), dimensions={1,0}\n", v, C, R, a);
        sb_printf(b,
                  "  v%d = f32[%d,%d] dot(t%d, w), lhs_contracting_dims={0}, "
                  "rhs_contracting_dims={0}\n",
                  v, R, C, v);
      } else {
        sb_printf(
            b,
            "  v%d = f32[%d,%d] dot(v%d, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n",
            v, R, C, a);
      }
      break;
    case 9:
      if (R == C) {
        sb_printf(b, "  v%d = f32[%d,%d] transpose(v%d), dimensions={1,0}\n", v, R, C, a);
      } else {
        sb_printf(b, "  v%d = f32[%d,%d] constant({", v, R, C);
        for (int r = 0; r < R; r++) {
          sb_puts(b, r ? ", {" : "{");
          for (int q = 0; q < C; q++)
            sb_printf(b, "%s%s", q ? ", " : "", consts[(size_t)k % 6]);
          sb_putc(b, '}');
        }
        sb_puts(b, "})\n");
      }
      break;
    case 11:
      sb_printf(b, "  f%d = f32[%d] reshape(v%d)\n  v%d = f32[%d,%d] reshape(f%d)\n", v, R * C, a,
                v, R, C, v);
      break;
    case 12:
      sb_printf(b, "  v%d = f32[%d,%d] iota(), iota_dimension=%d\n", v, R, C, (int)(next(st) % 2));
      break;
    case 13:
      if (C >= 2) {
        sb_printf(b, "  sa%d = f32[%d,1] slice(v%d), slice={[0:%d], [0:1]}\n", v, R, a, R);
        sb_printf(b, "  sb%d = f32[%d,%d] slice(v%d), slice={[0:%d], [1:%d]}\n", v, R, C - 1, c2, R,
                  C);
        sb_printf(b, "  v%d = f32[%d,%d] concatenate(sb%d, sa%d), dimensions={1}\n", v, R, C, v, v);
      } else {
        sb_printf(b, "  v%d = f32[%d,%d] reverse(v%d), dimensions={0,1}\n", v, R, C, a);
      }
      break;
    case 14:
      if (R >= 2) {
        sb_printf(b, "  sp%d = f32[%d,%d] slice(v%d), slice={[1:%d], [0:%d]}\n", v, R - 1, C, a, R,
                  C);
        sb_printf(b, "  zp%d = f32[] constant(0)\n", v);
        sb_printf(b, "  v%d = f32[%d,%d] pad(sp%d, zp%d), padding=0_1x0_0\n", v, R, C, v, v);
      } else {
        sb_printf(b, "  v%d = f32[%d,%d] add(v%d, v%d)\n", v, R, C, a, a);
      }
      break;
    default:
      sb_printf(b, "  p%d = pred[%d,%d] compare(v%d, v%d), direction=LT\n", v, R, C, a, c2);
      sb_printf(b, "  v%d = f32[%d,%d] select(p%d, v%d, v%d)\n", v, R, C, v, a, c2);
      break;
    }
  }
  int nr = 1 + (int)(next(st) % 3);
  sb_puts(b, "  ROOT root = (");
  for (int i = 0; i < nr; i++)
    sb_printf(b, "%sf32[%d,%d]", i ? ", " : "", R, C);
  sb_puts(b, ") tuple(");
  for (int i = 0; i < nr; i++)
    sb_printf(b, "%sv%d", i ? ", " : "", i == 0 ? nv - 1 : (int)(next(st) % (uint64_t)nv));
  sb_puts(b, ")\n}\n");
}

static const char *write_dir; /* --write=DIR: also save each random module */

static void check_random(int count, uint64_t seed) {
  uint64_t st = seed;
  for (int k = 0; k < count; k++) {
    strbuf b;
    sb_init(&b);
    random_module(&b, &st, k);
    char name[64];
    snprintf(name, sizeof name, "random_%d(seed %llu)", k, (unsigned long long)seed);
    if (write_dir) {
      char path[4096], err[256];
      snprintf(path, sizeof path, "%s/random_%d.hlo", write_dir, k);
      if (ir_file_write(path, b.s, b.len, err, sizeof err) != ST_OK) fprintf(stderr, "%s\n", err);
    }
    int before = failures;
    check_text(name, b.s, b.len);
    if (failures > before) fprintf(stderr, "the module:\n%s", b.s);
    sb_free(&b);
  }
}

int main(int argc, char **argv) {
  int npaths = 0;
  uint64_t seed = 1;
  bool no_skip = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--no-skip")) {
      no_skip = true;
      continue;
    }
    if (!strncmp(argv[i], "--max-steps=", 12)) {
      max_steps = strtoll(argv[i] + 12, NULL, 10);
      continue;
    }
    if (!strncmp(argv[i], "--seed=", 7)) {
      seed = strtoull(argv[i] + 7, NULL, 10);
      continue;
    }
    if (!strncmp(argv[i], "--write=", 8)) {
      write_dir = argv[i] + 8;
      continue;
    }
    if (!strncmp(argv[i], "--random=", 9)) {
      check_random(atoi(argv[i] + 9), seed);
      npaths++;
      continue;
    }
    tp_for_each_hlo(argv[i], check_file);
    npaths++;
  }
  if (!npaths) {
    fprintf(stderr,
            "usage: pass_check [--max-steps=N] [--seed=S] [--random=N] [--no-skip] PATH...\n");
    return 2;
  }
  printf("%d checks passed, %d modules skipped, %d failures\n", checked, skipped, failures);
  return failures || checked == 0 || (no_skip && skipped) ? 1 : 0;
}
