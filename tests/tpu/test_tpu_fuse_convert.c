/* test_tpu_fuse_convert.c DIR MODULE...: converts to and from bf16 fused
 * into the MXU's kernels (prologues of dots, docs/tpu-backend.md "MXU
 * prologues"; epilogues of convolutions) give the evaluator's bits in TPU
 * numerics (ir_eval_options.tpu_numerics), exactly: every module of DIR
 * named on the command line is optimised by the -O2 pipeline (so that
 * dots and convolutions take their epilogues in kOutput fusions) and run
 * on each target below with f32 inputs drawn with full 24-bit
 * significands (so the rounding to bf16 matters), bf16 inputs rounded
 * from those, small integers for s32. The modules that must not fuse
 * (tests/tpu/explain_tpu.sh checks the reasons) are checked the same way:
 * refusing must not change a bit either. Exit 0 when every run matches. */
#include "backend/tpu/tpu.h"
#include "frontend/frontend.h"
#include "passes/passes.h"
#include "tests/runtime/rt_test.h"


static ir_literal *random_arg(arena *a, const ir_shape *sh, uint64_t *s) {
  ir_literal *l = ir_literal_create(a, sh);
  int64_t n = ir_shape_count(sh);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = rt_rand(s);
    if (ir_type_is_float(sh->type))
      ir_literal_set_f64(l, i, (double)(float)((double)(r >> 11) / 0x1p53 * 4.0 - 2.0));
    else
      ir_literal_set_i64(l, i, (int64_t)(r % 15) - 7);
  }
  return l;
}

/* 0 when got and ref hold the same bits (floats compared as values of
 * their type with the sign of zero; NaN matches NaN). */
static int same_bits(const ir_literal *got, const ir_literal *ref, const char *what) {
  if (ref->shape.type == IR_TUPLE) {
    for (int k = 0; k < ref->shape.ntuple; k++)
      if (same_bits(got->elems[k], ref->elems[k], what)) return 1;
    return 0;
  }
  int64_t n = ir_shape_count(&ref->shape);
  for (int64_t i = 0; i < n; i++) {
    if (ir_type_is_float(ref->shape.type)) {
      double g = ir_literal_get_f64(got, i), e = ir_literal_get_f64(ref, i);
      if ((isnan(g) && isnan(e)) || (g == e && signbit(g) == signbit(e))) continue;
      printf("MISMATCH %s index %lld: got %.9g expected %.9g\n", what, (long long)i, g, e);
      return 1;
    }
    if (ir_literal_get_i64(got, i) != ir_literal_get_i64(ref, i)) {
      printf("MISMATCH %s index %lld\n", what, (long long)i);
      return 1;
    }
  }
  return 0;
}

static const char *const targets[] = {"v3", "v2", "v3,mxu=64x64,vmem=8MiB", "v2,vmem=192KiB"};

/* Runs module file path on every target against the evaluator; 0 on a
 * match everywhere. */
static int check_module(const char *path) {
  size_t len = 0;
  char *text = rt_read_file(path, &len);
  if (!text) {
    printf("FAIL %s: cannot read it\n", path);
    return 1;
  }
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo(path, text, len, d);
  free(text);
  pass_ctx pc = {d, 2, true, NULL, NULL};
  if (!m || pass_run(m, &pc, NULL, NULL) != ST_OK) {
    printf("FAIL %s: %s\n", path, diag_text(d));
    diag_destroy(d);
    if (m) ir_module_destroy(m);
    return 1;
  }
  diag_destroy(d);
  arena *a = arena_create();
  const ir_comp *c = &m->comps.v[m->entry];
  ir_literal **args = arena_array(a, (size_t)c->nparams + 1, sizeof(ir_literal *));
  uint64_t s = 7;
  for (int p = 0; p < c->nparams; p++) args[p] = random_arg(a, c->insts.v[c->params[p]].shape, &s);
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  eo.tpu_numerics = true;
  ir_literal *ref = NULL;
  char err[4096];
  int rc = 0;
  if (ir_eval(m, &eo, args, c->nparams, a, &ref, err, sizeof err) != ST_OK) {
    printf("FAIL %s: evaluator: %s\n", path, err);
    rc = 1;
  }
  for (size_t t = 0; t < sizeof targets / sizeof *targets && !rc; t++) {
    tpu_run_report r = {0};
    r.target = targets[t];
    ir_literal *got = NULL;
    if (tpu_run_report_exec(m, &r, args, c->nparams, a, &got, err, sizeof err) != ST_OK) {
      printf("FAIL %s on %s: %s\n", path, targets[t], err);
      rc = 1;
    } else if (same_bits(got, ref, path)) {
      printf("FAIL %s on %s: not the evaluator's bits\n", path, targets[t]);
      rc = 1;
    } else {
      printf("PASS %s on %s\n", path, targets[t]);
    }
  }
  arena_destroy(a);
  ir_module_destroy(m);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s DIR MODULE...\n", argv[0]);
    return 2;
  }
  int rc = 0;
  for (int k = 2; k < argc; k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], argv[k]);
    rc |= check_module(path);
  }
  return rc;
}
