/* test_tg_docs.c: runs every example of docs/language.md.
 *
 * Fenced blocks marked ```tg must compile. Lines of the form
 *   // input: v v v ...    values of the next entry parameter (row-major;
 *                          one value fills the whole tensor)
 *   // expect: v v v ...   values of the next result (row-major)
 * give concrete inputs and the expected results (relative tolerance 1e-5;
 * "nan" and "inf" allowed); without `input` lines, parameters get
 * pseudo-random values and the example must merely evaluate.
 * Blocks marked ```tg-error must be rejected, and each line
 *   // error: TEXT
 * must occur in the diagnostics. Examples are compiled as "model.tg",
 * with lines counted from the start of the block. */
#include <string.h>

#include "tests/tg/tg_util.h"

static const char *after(const char *line, const char *tag) {
  const char *p = strstr(line, tag);
  return p ? p + strlen(tag) : NULL;
}

static void set_all(ir_literal *l, const double *v, int n) {
  int64_t cnt = ir_shape_count(&l->shape);
  for (int64_t i = 0; i < cnt; i++) ir_literal_set_f64(l, i, v[n == 1 ? 0 : i]);
}

static int check_result(const char *where, const ir_literal *l, const double *v, int n) {
  int64_t cnt = ir_shape_count(&l->shape);
  if (cnt != n) {
    printf("%s: result has %lld elements, the example expects %d\n", where, (long long)cnt, n);
    return 1;
  }
  for (int64_t i = 0; i < cnt; i++) {
    double got = ir_literal_get_f64(l, i);
    if (!((isnan(got) && isnan(v[i])) || got == v[i] || fabs(got - v[i]) <= 1e-5 * (1 + fabs(v[i])))) {
      printf("%s: element %lld is %.9g, the example says %.9g\n", where, (long long)i, got, v[i]);
      return 1;
    }
  }
  return 0;
}

enum { MAXV = 4096 };

static int run_block(const char *where, const char *src, size_t len, bool want_error) {
  diag *d = diag_create();
  ir_module *m = fe_parse_tg("model.tg", src, len, NULL, d);
  int bad = 0;
  if (want_error) {
    if (m) {
      printf("%s: example should be rejected but compiles\n", where);
      bad = 1;
    }
    for (const char *l = src; l && l < src + len; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
      const char *e = after(l, "// error: ");
      const char *nl = strchr(l, '\n');
      if (!e || (nl && e > nl)) continue;
      size_t el = nl ? (size_t)(nl - e) : strlen(e);
      char *want = strndup(e, el);
      if (!strstr(diag_text(d), want)) {
        printf("%s: diagnostics lack \"%s\":\n%s", where, want, diag_text(d));
        bad = 1;
      }
      free(want);
    }
    ir_module_destroy(m);
    diag_destroy(d);
    return bad;
  }
  if (!m) {
    printf("%s: example does not compile:\n%s", where, diag_text(d));
    diag_destroy(d);
    return 1;
  }
  arena *a = arena_create();
  int nargs;
  ir_literal **args = tgu_random_args(m, a, 3, &nargs);
  double *v = malloc(sizeof(double) * MAXV);
  int ni = 0, ne = 0;
  /* inputs first */
  for (const char *l = src; l && l < src + len; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
    const char *s = after(l, "// input: ");
    const char *nl = strchr(l, '\n');
    if (!s || (nl && s > nl)) continue;
    if (ni >= nargs) {
      printf("%s: more input lines than parameters\n", where);
      bad = 1;
      break;
    }
    int n = tgu_values(s, v, MAXV);
    if (n != 1 && n != ir_shape_count(&args[ni]->shape)) {
      printf("%s: input %d has %d values for %lld elements\n", where, ni + 1, n,
             (long long)ir_shape_count(&args[ni]->shape));
      bad = 1;
      break;
    }
    set_all(args[ni++], v, n);
  }
  ir_eval_options o;
  ir_eval_options_init(&o);
  ir_literal *out;
  char err[256];
  if (!bad && ir_eval(m, &o, args, nargs, a, &out, err, sizeof err) != ST_OK) {
    printf("%s: evaluation failed: %s\n", where, err);
    bad = 1;
  }
  for (const char *l = src; !bad && l && l < src + len; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
    const char *s = after(l, "// expect: ");
    const char *nl = strchr(l, '\n');
    if (!s || (nl && s > nl)) continue;
    const ir_literal *r = out->shape.type == IR_TUPLE ? (ne < out->shape.ntuple ? out->elems[ne] : NULL) : (ne == 0 ? out : NULL);
    if (!r) {
      printf("%s: more expect lines than results\n", where);
      bad = 1;
      break;
    }
    ne++;
    bad |= check_result(where, r, v, tgu_values(s, v, MAXV));
  }
  free(v);
  arena_destroy(a);
  ir_module_destroy(m);
  diag_destroy(d);
  return bad;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  size_t len;
  char *doc = tgu_read_file(argv[1], &len);
  if (!doc) return 2;
  int bad = 0, blocks = 0, line = 1;
  const char *p = doc;
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t ll = nl ? (size_t)(nl - p) : strlen(p);
    bool start = ll >= 5 && strncmp(p, "```tg", 5) == 0;
    bool err = ll >= 11 && strncmp(p, "```tg-error", 11) == 0;
    if (start && (ll == 5 || err)) {
      int start_line = line;
      const char *body = nl ? nl + 1 : p + ll;
      const char *q = body;
      line++;
      while (*q && strncmp(q, "```", 3) != 0) {
        const char *n2 = strchr(q, '\n');
        line++;
        q = n2 ? n2 + 1 : q + strlen(q);
      }
      char where[64];
      snprintf(where, sizeof where, "language.md:%d", start_line);
      bad |= run_block(where, body, (size_t)(q - body), err);
      blocks++;
      p = q;
      continue;
    }
    if (!nl) break;
    p = nl + 1;
    line++;
  }
  printf("%d examples checked\n", blocks);
  free(doc);
  return bad || blocks == 0;
}
