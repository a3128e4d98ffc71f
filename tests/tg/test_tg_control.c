/* test_tg_control.c: the .tg statement forms (var, while, for, if) on
 * every target. Each file given holds one program and its cases:
 * `// input: v v ...` lines, one per entry parameter (row-major; a single
 * value fills the tensor), then `// expect: v v ...` lines, one per
 * result, with values derived by hand; an input line after an expect
 * line starts the next case. Every case runs through libtpucc on interp,
 * on "cpu,numerics=strict" and on v3 (a target this build lacks is
 * skipped, named): each result must equal the expected values within
 * 1e-6 relative, and the cpu's and v3's results must equal interp's bit
 * for bit (the programs use no dot and no transcendental function).
 *
 *   test_tg_control FILE.tg...   exit 0 when every comparison holds */
#include <string.h>

#include "tests/tg/tg_util.h"
#include "tpucc.h"

enum { MAXV = 256, MAXT = 16, MAXCASES = 8 };

typedef struct tcase {
  int nin, nout;
  int nv_in[MAXT], nv_out[MAXT];
  double in[MAXT][MAXV], out[MAXT][MAXV];
} tcase;

static int failures;

/* The cases of text; their count, or -1 when malformed. */
static int read_cases(const char *text, tcase *cs) {
  int nc = 0;
  bool in_expect = false;
  for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
    const char *nl = strchr(l, '\n');
    const char *in = strstr(l, "// input: "), *ex = strstr(l, "// expect: ");
    if (in && (!nl || in < nl)) {
      if (nc == 0 || in_expect) {
        if (nc == MAXCASES) return -1;
        memset(&cs[nc++], 0, sizeof *cs);
      }
      in_expect = false;
      tcase *c = &cs[nc - 1];
      if (c->nin == MAXT) return -1;
      c->nv_in[c->nin] = tgu_values(in + 10, c->in[c->nin], MAXV);
      c->nin++;
    } else if (ex && (!nl || ex < nl)) {
      if (nc == 0) return -1;
      in_expect = true;
      tcase *c = &cs[nc - 1];
      if (c->nout == MAXT) return -1;
      c->nv_out[c->nout] = tgu_values(ex + 11, c->out[c->nout], MAXV);
      c->nout++;
    }
  }
  return nc;
}

static double get(const tpucc_tensor_t *t, size_t i) {
  switch (t->dtype) {
  case TPUCC_PRED: return ((const uint8_t *)t->data)[i];
  case TPUCC_S8: return ((const int8_t *)t->data)[i];
  case TPUCC_S32: return ((const int32_t *)t->data)[i];
  case TPUCC_F32: return ((const float *)t->data)[i];
  case TPUCC_BF16: return ir_bf16_to_f32(((const uint16_t *)t->data)[i]);
  default: return NAN; /* the programs use no other type */
  }
}

static void set(tpucc_tensor_t *t, size_t i, double v) {
  switch (t->dtype) {
  case TPUCC_PRED: ((uint8_t *)t->data)[i] = v != 0; break;
  case TPUCC_S8: ((int8_t *)t->data)[i] = (int8_t)v; break;
  case TPUCC_S32: ((int32_t *)t->data)[i] = (int32_t)v; break;
  case TPUCC_F32: ((float *)t->data)[i] = (float)v; break;
  case TPUCC_BF16: ((uint16_t *)t->data)[i] = ir_f32_to_bf16((float)v); break;
  default: break;
  }
}

static size_t count(const tpucc_tensor_t *t) { return t->nbytes / (size_t)tpucc_dtype_size(t->dtype); }

static bool has_target(const char *name) {
  for (int32_t i = 0; i < tpucc_target_count(); i++)
    if (!strcmp(tpucc_target_name(i), name)) return true;
  return false;
}

/* Checks result set r of case c on target `where` against the expected
 * values and, when ref is given, against ref bit for bit. */
static void check(const char *path, int ci, const char *where, const tcase *c, const tpucc_result_t *r,
                  const tpucc_result_t *ref) {
  if (tpucc_result_count(r) != c->nout) {
    printf("FAIL %s case %d on %s: %d results, %d expected\n", path, ci, where, tpucc_result_count(r), c->nout);
    failures++;
    return;
  }
  for (int k = 0; k < c->nout; k++) {
    const tpucc_tensor_t *t = tpucc_result_tensor(r, k);
    size_t n = count(t);
    if ((int)n != c->nv_out[k]) {
      printf("FAIL %s case %d on %s: result %d has %zu elements, %d expected\n", path, ci, where, k, n,
             c->nv_out[k]);
      failures++;
      continue;
    }
    for (size_t i = 0; i < n; i++) {
      double got = get(t, i), want = c->out[k][i];
      if (fabs(got - want) > 1e-6 * (1 + fabs(want))) {
        printf("FAIL %s case %d on %s: result %d element %zu is %.9g, expected %.9g\n", path, ci, where, k, i,
               got, want);
        failures++;
        break;
      }
    }
    const tpucc_tensor_t *rt = ref ? tpucc_result_tensor(ref, k) : NULL;
    if (rt && (rt->nbytes != t->nbytes || memcmp(t->data, rt->data, t->nbytes) != 0)) {
      printf("FAIL %s case %d on %s: result %d differs from interp's\n", path, ci, where, k);
      failures++;
    }
  }
}

/* Runs case c of module m on every target. */
static void run_case(const char *path, int ci, tpucc_module_t *m, const tcase *c) {
  int32_t np = tpucc_module_parameter_count(m);
  if (np != c->nin) {
    printf("FAIL %s case %d: %d input lines for %d parameters\n", path, ci, c->nin, np);
    failures++;
    return;
  }
  tpucc_tensor_t in[MAXT];
  for (int32_t i = 0; i < np; i++) {
    tpucc_module_parameter(m, i, &in[i]);
    size_t n = 1;
    for (int32_t d = 0; d < in[i].rank; d++) n *= (size_t)in[i].dims[d];
    in[i].nbytes = n * (size_t)tpucc_dtype_size(in[i].dtype);
    in[i].data = calloc(n ? n : 1, (size_t)tpucc_dtype_size(in[i].dtype));
    in[i].name = NULL;
    if (c->nv_in[i] != 1 && (size_t)c->nv_in[i] != n) {
      printf("FAIL %s case %d: input %d has %d values for %zu elements\n", path, ci, i, c->nv_in[i], n);
      failures++;
    }
    for (size_t e = 0; e < n; e++) set(&in[i], e, c->in[i][c->nv_in[i] == 1 ? 0 : e]);
  }
  static const char *const targets[] = {"interp", "cpu,numerics=strict", "v3"};
  tpucc_result_t *ref = NULL;
  for (int t = 0; t < 3; t++) {
    char name[16];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(targets[t], ","), targets[t]);
    if (!has_target(name)) {
      if (ci == 0) printf("%s: no target %s in this build, skipped\n", path, name);
      continue;
    }
    tpucc_execute_options_t eo;
    tpucc_execute_options_init(&eo);
    eo.target = targets[t];
    tpucc_result_t *r = NULL;
    if (tpucc_execute(m, &eo, in, np, &r) != TPUCC_OK) {
      printf("FAIL %s case %d on %s: execution failed\n", path, ci, targets[t]);
      failures++;
      continue;
    }
    check(path, ci, targets[t], c, r, ref);
    if (t == 0) ref = r;
    else tpucc_result_destroy(r);
  }
  tpucc_result_destroy(ref);
  for (int32_t i = 0; i < np; i++) free(in[i].data);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_tg_control FILE.tg...\n");
    return 2;
  }
  tpucc_session_t *s;
  if (tpucc_session_create(NULL, &s) != TPUCC_OK) return 2;
  static tcase cs[MAXCASES];
  int cases = 0;
  for (int f = 1; f < argc; f++) {
    tpucc_module_t *m;
    if (tpucc_compile_file(s, NULL, argv[f], &m) != TPUCC_OK) {
      printf("FAIL %s does not compile:\n%s", argv[f], tpucc_session_diagnostics(s));
      failures++;
      continue;
    }
    size_t len;
    char *text = tgu_read_file(argv[f], &len);
    int nc = text ? read_cases(text, cs) : -1;
    free(text);
    if (nc <= 0) {
      printf("FAIL %s: no well-formed cases\n", argv[f]);
      failures++;
    }
    for (int c = 0; c < nc; c++) run_case(argv[f], c, m, &cs[c]);
    cases += nc > 0 ? nc : 0;
    tpucc_module_destroy(m);
  }
  tpucc_session_destroy(s);
  printf("%d files, %d cases, %d failures\n", argc - 1, cases, failures);
  return failures != 0;
}
