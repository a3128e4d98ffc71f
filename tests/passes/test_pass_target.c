/* test_pass_target.c: the fusion pass decides row fusions and attention
 * through the target's answers (pass_ctx.target, passes/passes.h): a
 * target's hooks are asked and their reasons reported; without hooks the
 * pass takes its default; the TPU's answers (tpu_pass_target) are those
 * of its planners (the tree-fold rule, VMEM). Inputs: the golden
 * fusion_rows.hlo and fusion_attention.hlo (argv[1]: their directory). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "backend/tpu/tpu.h"
#include "frontend/frontend.h"
#include "passes/passes.h"

static const char *golden_dir;

typedef struct stub {
  int row_calls, attn_calls;
  bool refuse;
} stub;

static const char *stub_rows(const pass_target *t, ir_op op, int64_t R, int64_t O, arena *a) {
  stub *s = (stub *)t->self;
  s->row_calls++;
  return s->refuse ? arena_printf(a, "stub refuses %s of %lld into %lld", ir_op_name(op),
                                  (long long)R, (long long)O)
                   : NULL;
}

static const char *stub_attention(const pass_target *t, int64_t rows, int64_t sk, arena *a,
                                  const char **out_plan) {
  stub *s = (stub *)t->self;
  s->attn_calls++;
  if (s->refuse) return arena_printf(a, "stub refuses %lld x %lld", (long long)rows, (long long)sk);
  *out_plan = "stub plan";
  return NULL;
}

/* The --explain text of the fusion pass on golden NAME for target t. */
static char *fusion_explain(const char *name, const pass_target *t) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", golden_dir, name);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  strbuf text;
  sb_init(&text);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    sb_putn(&text, buf, n);
  fclose(f);
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo(path, sb_str(&text), text.len, d);
  assert_non_null(m);
  strbuf explain;
  sb_init(&explain);
  pass_ctx ctx = {d, 2, true, &explain, t};
  assert_int_equal(pass_run(m, &ctx, "fusion", NULL), ST_OK);
  char *out = strdup(sb_str(&explain));
  sb_free(&explain);
  ir_module_destroy(m);
  diag_destroy(d);
  sb_free(&text);
  return out;
}

static void rows_asks_the_target(void **state) {
  (void)state;
  stub s = {0, 0, true};
  pass_target t = {NULL, &s, stub_rows, stub_attention, 0};
  char *e = fusion_explain("fusion_rows.hlo", &t);
  assert_true(s.row_calls > 0);
  assert_non_null(strstr(e, "fusion: ts: not fused: stub refuses add of 5000 into 3\n"));
  assert_non_null(strstr(e, "fusion: ws: not fused: stub refuses maximum of 40000 into 2\n"));
  assert_null(strstr(e, "row fusion"));
  free(e);
  s.refuse = false;
  e = fusion_explain("fusion_rows.hlo", &t);
  assert_non_null(strstr(e, "fusion: ts: fused into"));
  assert_non_null(strstr(e, "fusion: ws: fused into"));
  free(e);
}

static void rows_default_takes_every_row_fusion(void **state) {
  (void)state;
  char *e = fusion_explain("fusion_rows.hlo", NULL);
  assert_non_null(strstr(e, "fusion: ts: fused into"));
  assert_non_null(strstr(e, "fusion: ws: fused into"));
  assert_null(strstr(e, "folds as a tree"));
  free(e);
}

static void rows_tpu_answers_from_its_planners(void **state) {
  (void)state;
  tgt_target tg;
  pass_target t;
  assert_int_equal(tgt_parse("v3", &tg, NULL, 0), 0);
  tpu_pass_target(&tg, &t);
  char *e = fusion_explain("fusion_rows.hlo", &t);
  assert_non_null(strstr(e, "fusion: ts: not fused: an f32 sum of 4096 or more elements into "
                            "fewer than 1024 outputs folds as a tree"));
  assert_non_null(strstr(e, "fusion: ws: not fused: 8 rows of 40000 f32 elements take more than "
                            "1/16 of VMEM"));
  free(e);
  /* 1/16 of 32 MiB holds 8 rows of 40000 f32 */
  assert_int_equal(tgt_parse("v3,vmem=32MiB", &tg, NULL, 0), 0);
  tpu_pass_target(&tg, &t);
  e = fusion_explain("fusion_rows.hlo", &t);
  assert_null(strstr(e, "1/16 of VMEM"));
  assert_non_null(strstr(e, "fusion: ws: fused into"));
  free(e);
}

static void attention_asks_the_target(void **state) {
  (void)state;
  stub s = {0, 0, false};
  pass_target t = {NULL, &s, NULL, stub_attention, 0};
  char *e = fusion_explain("fusion_attention.hlo", &t);
  assert_int_equal(s.attn_calls, 2);
  assert_non_null(strstr(e, "keys fused (kCustom): stub plan\n"));
  assert_null(strstr(e, "attention not fused"));
  free(e);
  s.refuse = true;
  e = fusion_explain("fusion_attention.hlo", &t);
  assert_non_null(strstr(e, "attention not fused: stub refuses 28 x 7\n"));
  assert_null(strstr(e, "(kCustom): "));
  free(e);
  /* no hook: fused, with no plan to tell */
  e = fusion_explain("fusion_attention.hlo", NULL);
  assert_non_null(strstr(e, "attention of 28 query rows x 7 keys fused (kCustom)\n"));
  assert_null(strstr(e, "attention not fused"));
  free(e);
}

int main(int argc, char **argv) {
  golden_dir = argc > 1 ? argv[1] : "tests/passes/golden";
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rows_asks_the_target),
      cmocka_unit_test(rows_default_takes_every_row_fusion),
      cmocka_unit_test(rows_tpu_answers_from_its_planners),
      cmocka_unit_test(attention_asks_the_target),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
