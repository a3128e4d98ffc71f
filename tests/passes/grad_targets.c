/* grad_targets.c: gradients run on every target and agree. For each
 * module given: tpucc_grad (libtpucc), then the VJP executed on interp,
 * on "cpu,numerics=strict" (the evaluator's order and roundings: equal to
 * interp bit for bit, NaN payloads aside) and on v3, with the same seeded
 * inputs (f32 and bf16 uniform in [-1, 1), s32 in [0, 4), cotangents
 * included); v3 within the documented dot tolerance of numerics.md
 * section 6, |got - ref| <= 2^-7 (1 + sqrt(K)) (1 + |ref|), K the largest
 * contraction of the VJP (multiply-adds per result element of any dot or
 * convolution). Targets this build lacks are skipped, named. Modules
 * after --refused-on=TARGET are ones whose forward that target does not
 * run: there the execution must fail with a located error.
 *
 *   grad_targets [--refused-on=TARGET] MODULE.hlo...   exit 0 when every comparison holds */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "tpucc.h"

static int failures;

static double unit(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) / (double)(1ull << 53);
}

static bool has_target(const char *name) {
  for (int32_t i = 0; i < tpucc_target_count(); i++)
    if (!strcmp(tpucc_target_name(i), name)) return true;
  return false;
}

/* The largest contraction of the VJP text: MACs per result element. */
static double largest_k(const char *text, size_t len) {
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("vjp.hlo", text, len, d);
  diag_destroy(d);
  double k = 1;
  const ir_comp *e = &m->comps.v[m->entry];
  for (int i = 0; i < e->insts.n; i++) {
    const ir_inst *in = &e->insts.v[i];
    if (in->op != IR_OP_DOT && in->op != IR_OP_CONVOLUTION) continue;
    double macs = (double)ir_inst_macs(in, e->insts.v[in->ops[0]].shape, e->insts.v[in->ops[1]].shape);
    double n = (double)ir_shape_count(in->shape);
    if (n > 0 && macs / n > k) k = macs / n;
  }
  ir_module_destroy(m);
  return k;
}

static float elem(const tpucc_tensor_t *t, size_t i) {
  switch (t->dtype) {
  case TPUCC_F32: return ((const float *)t->data)[i];
  case TPUCC_BF16: return ir_bf16_to_f32(((const uint16_t *)t->data)[i]);
  case TPUCC_F16: return ir_f16_to_f32(((const uint16_t *)t->data)[i]);
  default: return 0; /* gradients are floating point */
  }
}

static void compare(const char *path, const char *target, const tpucc_result_t *ref, const tpucc_result_t *got,
                    double tol) {
  for (int32_t r = 0; r < tpucc_result_count(ref); r++) {
    const tpucc_tensor_t *a = tpucc_result_tensor(ref, r), *b = tpucc_result_tensor(got, r);
    size_t n = a->nbytes / 4;
    for (size_t i = 0; i < n; i++) {
      float x = elem(a, i), y = elem(b, i);
      bool ok = (isnan(x) && isnan(y)) || (tol == 0 ? x == y : fabs((double)y - x) <= tol * (1 + fabs(x)));
      if (!ok) {
        fprintf(stderr, "FAIL %s on %s: gradient %d element %zu: %.9g, interp %.9g (tolerance %.3g)\n", path, target,
                r, i, y, x, tol);
        failures++;
        return;
      }
    }
  }
}

static void check(const char *path, const char *refused) {
  tpucc_session_t *s;
  tpucc_module_t *m = NULL, *v = NULL;
  if (tpucc_session_create(NULL, &s) != TPUCC_OK) abort();
  if (tpucc_compile_file(s, NULL, path, &m) != TPUCC_OK || tpucc_grad(m, NULL, &v) != TPUCC_OK) {
    fprintf(stderr, "FAIL %s: %s\n", path, tpucc_session_message(s));
    failures++;
    goto done;
  }
  const char *text;
  size_t len;
  if (tpucc_module_emit_hlo(v, &text, &len) != TPUCC_OK) abort();
  double k = largest_k(text, len);
  int32_t np = tpucc_module_parameter_count(v);
  tpucc_tensor_t *in = calloc((size_t)np + 1, sizeof *in);
  uint64_t seed = 7;
  for (int32_t p = 0; p < np; p++) {
    tpucc_module_parameter(v, p, &in[p]);
    size_t n = 1;
    for (int d = 0; d < in[p].rank; d++) n *= (size_t)in[p].dims[d];
    in[p].nbytes = n * (size_t)tpucc_dtype_size(in[p].dtype);
    in[p].data = calloc(n + 1, (size_t)tpucc_dtype_size(in[p].dtype));
    for (size_t i = 0; i < n; i++) {
      double u = unit(&seed);
      if (in[p].dtype == TPUCC_F32) ((float *)in[p].data)[i] = (float)(2 * u - 1);
      else if (in[p].dtype == TPUCC_BF16) ((uint16_t *)in[p].data)[i] = ir_f32_to_bf16((float)(2 * u - 1));
      else if (in[p].dtype == TPUCC_S32) ((int32_t *)in[p].data)[i] = (int32_t)(u * 4);
    }
    in[p].name = NULL;
  }
  static const char *const targets[] = {"interp", "cpu,numerics=strict", "v3"};
  tpucc_result_t *ref = NULL;
  for (int t = 0; t < 3; t++) {
    char base[16];
    snprintf(base, sizeof base, "%.*s", (int)strcspn(targets[t], ","), targets[t]);
    if (!has_target(base)) {
      printf("SKIP %s on %s: not in this build\n", path, base);
      continue;
    }
    tpucc_execute_options_t eo;
    tpucc_execute_options_init(&eo);
    eo.target = targets[t];
    tpucc_result_t *r;
    if (refused && !strcmp(refused, base)) {
      bool ran = tpucc_execute(v, &eo, in, np, &r) == TPUCC_OK;
      if (ran) tpucc_result_destroy(r);
      bool located = !ran && strstr(tpucc_session_message(s), "error:");
      printf("%s %s on %s: refused: %s\n", located ? "ok  " : "FAIL", path, base,
             ran ? "(it ran; a located error was expected)" : tpucc_session_message(s));
      failures += !located;
      continue;
    }
    if (tpucc_execute(v, &eo, in, np, &r) != TPUCC_OK) {
      fprintf(stderr, "FAIL %s on %s: %s\n", path, targets[t], tpucc_session_message(s));
      failures++;
      continue;
    }
    if (!ref) {
      ref = r;
      continue;
    }
    double tol = t == 1 ? 0 : 0x1p-7 * (1 + sqrt(k));
    compare(path, targets[t], ref, r, tol);
    printf("ok   %s on %s (K %.0f, tolerance %.3g)\n", path, targets[t], k, tol);
    tpucc_result_destroy(r);
  }
  tpucc_result_destroy(ref);
  for (int32_t p = 0; p < np; p++) free(in[p].data);
  free(in);
done:
  tpucc_module_destroy(v);
  tpucc_module_destroy(m);
  tpucc_session_destroy(s);
}

int main(int argc, char **argv) {
  const char *refused = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--refused-on=", 13)) refused = argv[i] + 13;
    else check(argv[i], refused);
  }
  return failures ? 1 : 0;
}
