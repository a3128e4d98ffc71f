/* test_tpu_ar_tuple.c: tuple all-reduces on the 8 cores of a v3-8, bit for
 * bit with the evaluator's replicated run of the module as written. The
 * TPU lowering reduces one array per all-reduce; the -O2 pipeline for a
 * TPU target runs the all-reduce combiner (passes/ar_combine.c), which
 * turns the tuple all-reduces and the independent single ones of one kind
 * into one all-reduce per kind, laid out so that every element keeps its
 * fold order (base/coll.h). Operands mix magnitudes (1e8 and small values)
 * so that another order would change the bits; the test checks that the
 * combiner ran (the explain line, one all-reduce per kind left) and that
 * without it the backend refuses the tuple all-reduce with a message. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/tpu/tpu.h"
#include "passes/passes.h"
#include "tests/tpu/tpu_check.h"

enum { NC = 8 };
static int failures;

/* Counts and prints a failed check. */
static void check(bool ok, const char *fmt, ...) BASE_PRINTF(2, 3);
static void check(bool ok, const char *fmt, ...) {
  if (ok) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("FAIL: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  failures++;
}

static const char text[] =
    "HloModule tuple_ar, replica_count=8\n\n"
    "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\n"
    "sum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n"
    "mx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT mm = f32[] maximum(a, b)\n}\n\n"
    "ENTRY e {\n"
    "  p0 = f32[3,5] parameter(0)\n  p1 = f32[7] parameter(1)\n  p2 = f32[130] parameter(2)\n"
    "  p3 = f32[2,2] parameter(3)\n"
    "  t = (f32[3,5], f32[7], f32[130]) all-reduce(p0, p1, p2), to_apply=add\n"
    "  a3 = f32[2,2] all-reduce(p3), to_apply=sum\n"
    "  m = (f32[7], f32[2,2]) all-reduce(p1, p3), replica_groups={{5,1,3,7},{6,0,2,4}}, to_apply=mx\n"
    "  ROOT r = ((f32[3,5], f32[7], f32[130]), f32[2,2], (f32[7], f32[2,2])) tuple(t, a3, m)\n"
    "}\n";

/* Replica r's element i of parameter k. */
static float operand(int r, int k, int64_t i) {
  uint32_t h = (uint32_t)(r * 7919 + k * 31337 + (int)i * 104729 + 17);
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  float small = (float)(h % 2000) / 64.0f - 15.0f;
  return (h >> 20) % 3 == 0 ? small * 1e8f : small;
}

/* The -O2 pipeline for v3-8 (the combiner on); the explain text. */
static char *optimize(ir_module *m) {
  diag *d = diag_create();
  strbuf ex;
  sb_init(&ex);
  tgt_target tt;
  pass_target pt;
  tpu_pass_target_for("v3-8", &tt, &pt);
  pass_ctx ctx = {d, 2, true, &ex, &pt};
  check(pass_run(m, &ctx, NULL, NULL) == ST_OK, "passes: %s", diag_text(d));
  diag_destroy(d);
  return ex.s ? ex.s : calloc(1, 1);
}

static int all_reduces(const ir_module *m) {
  const ir_comp *c = &m->comps.v[m->entry];
  int n = 0;
  for (int i = 0; i < c->insts.n; i++) n += !c->insts.v[i].dead && c->insts.v[i].op == IR_OP_ALL_REDUCE;
  return n;
}

static tpub_image *compile(ir_module *m, diag *d) {
  tpu_options o;
  tpu_options_init(&o);
  o.target = "v3-8";
  tpub_image *img = NULL;
  tpu_compile_info info;
  memset(&info, 0, sizeof info);
  return tpu_compile(m, &o, d, &img, &info) == ST_OK ? img : NULL;
}

int main(void) {
  ir_module *m0 = tc_parse("tuple_ar.hlo", text), *m = tc_parse("tuple_ar.hlo", text);
  /* Without the combiner the backend says what it cannot do. */
  diag *d = diag_create();
  tpub_image *img = compile(m0, d);
  check(!img && strstr(diag_text(d), "an all-reduce of 3 operands over 8 replicas"),
        "the tuple all-reduce compiled without the combiner: %s", diag_text(d));
  diag_destroy(d);
  char *ex = optimize(m);
  check(strstr(ex, "combined %t ((f32[3,5], f32[7], f32[130])), %a3 (f32[2,2]): 168 elements in "
                   "one all-reduce over groups of 8 (chunk-major, 12 of them padding"),
        "explain: %s", ex);
  check(strstr(ex, "combined %m ((f32[7], f32[2,2])): 12 elements in one all-reduce over groups of 4"),
        "explain: %s", ex);
  check(all_reduces(m) == 2, "%d all-reduces after the combiner, expected 2", all_reduces(m));
  free(ex);
  d = diag_create();
  img = compile(m, d);
  check(img != NULL, "compile: %s", diag_text(d));
  diag_destroy(d);
  arena *a = arena_create();
  const ir_comp *e = &m0->comps.v[m0->entry];
  ir_literal *args[NC][4], *const *argv[NC], *eo[NC], *to[NC];
  for (int r = 0; r < NC; r++) {
    for (int k = 0; k < 4; k++) {
      args[r][k] = ir_literal_create(a, e->insts.v[e->params[k]].shape);
      for (int64_t i = 0; i < ir_shape_count(&args[r][k]->shape); i++)
        ((float *)args[r][k]->data)[i] = operand(r, k, i);
    }
    argv[r] = args[r];
  }
  ir_eval_options o;
  ir_eval_options_init(&o);
  char err[512];
  check(ir_eval_replicated(m0, &o, NC, argv, 4, a, eo, err, sizeof err) == ST_OK, "evaluator: %s", err);
  if (img) {
    base_status st = tpu_execute_replicas(img, "v3-8", m, NC, argv, 4, a, to, err, sizeof err);
    check(st == ST_OK, "v3-8: %s", err);
    for (int r = 0; st == ST_OK && r < NC; r++)
      check(ir_literal_equal(eo[r], to[r]), "replica %d on v3-8 differs from the evaluator", r);
  }
  /* The order matters for these operands: folding members 0..7 in order
   * (not base/coll.h's rotation) changes some element of t's p2. */
  bool differs = false;
  for (int64_t i = 0; i < 130; i++) {
    float s = operand(0, 2, i);
    for (int r = 1; r < NC; r++) s += operand(r, 2, i);
    const ir_literal *t0 = eo[0]->elems[0]->elems[2];
    differs |= memcmp(&s, (const float *)t0->data + i, 4) != 0;
  }
  check(differs, "no element depends on the fold order: the test could not fail");
  tpub_free(img);
  arena_destroy(a);
  ir_module_destroy(m0);
  ir_module_destroy(m);
  if (failures) return 1;
  printf("tuple all-reduces on v3-8 match the evaluator bit for bit\n");
  return 0;
}
