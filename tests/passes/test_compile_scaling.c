/* test_compile_scaling.c: compile work grows linearly with graph size.
 *
 * Time is measured in bench/ (bench/suite.py, compile group), never here:
 * this test counts work that does not depend on the machine or its load,
 * the bytes each phase allocates from its arena (parse, the -O2 pipeline
 * with verification, v3 lowering). Every phase of tpucc allocates as it
 * goes, so an allocation per instruction that is proportional to the graph
 * (an array of the whole computation made for every instruction, say) is
 * quadratic here: 8 times the instructions cost 64 times the bytes. The
 * graphs are the bench's: a random DAG of elementwise ops on f32[8,128],
 * each reading values defined at most 8 and 64 instructions earlier. */
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

typedef struct phase_bytes {
  uint64_t parse, opt, lower;
  uint64_t code; /* TPU instruction words */
} phase_bytes;

/* HLO text of an n-instruction graph (as bench/suite.py gen_graph). */
static void gen_graph(strbuf *b, int n) {
  static const char *const ops[] = {"add", "multiply", "subtract", "maximum"};
  uint64_t r = 0x9E3779B97F4A7C15ull * (uint64_t)n + 1;
#define RND(k) ((r = r * 6364136223846793005ull + 1442695040888963407ull), (int)((r >> 33) % (uint64_t)(k)))
  sb_printf(b, "HloModule gen%d\n\nENTRY main {\n", n);
  sb_puts(b, "  p0 = f32[8,128]{1,0} parameter(0)\n  p1 = f32[8,128]{1,0} parameter(1)\n");
  for (int i = 0; i < n - 2; i++) {
    int have = i + 2; /* values defined so far: p0, p1, v0 .. v(i-1) */
    int a = have - 1 - RND(have < 8 ? have : 8);
    const char *root = i == n - 3 ? "ROOT " : "";
    char an[16];
    snprintf(an, sizeof an, a < 2 ? "p%d" : "v%d", a < 2 ? a : a - 2);
    if (RND(5) == 0) {
      sb_printf(b, "  %sv%d = f32[8,128]{1,0} tanh(%s)\n", root, i, an);
    } else {
      int c = have - 1 - RND(have < 64 ? have : 64);
      char cn[16];
      snprintf(cn, sizeof cn, c < 2 ? "p%d" : "v%d", c < 2 ? c : c - 2);
      sb_printf(b, "  %sv%d = f32[8,128]{1,0} %s(%s, %s)\n", root, i, ops[RND(4)], an, cn);
    }
  }
#undef RND
  sb_puts(b, "}\n");
}

static phase_bytes compile_bytes(int n) {
  strbuf text;
  sb_init(&text);
  gen_graph(&text, n);
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("gen.hlo", sb_str(&text), text.len, d);
  assert_non_null(m);
  phase_bytes pb = {0};
  pb.parse = arena_bytes(m->arena);
  pass_ctx ctx = {d, 2, true, NULL, NULL};
  assert_int_equal(pass_run(m, &ctx, NULL, NULL), ST_OK);
  pb.opt = arena_bytes(m->arena) - pb.parse;
  tpu_options o;
  tpu_options_init(&o);
  o.target = "v3";
  tpub_image *img = NULL;
  tpu_compile_info info = {0};
  assert_int_equal(tpu_compile(m, &o, d, &img, &info), ST_OK);
  pb.lower = info.arena_bytes;
  pb.code = info.instructions;
  tpub_free(img);
  tpu_info_free(&info);
  ir_module_destroy(m);
  diag_destroy(d);
  sb_free(&text);
  return pb;
}

/* 1k and 8k instructions: each phase's bytes grow at most 10x (8x is
 * linear; the slack covers vectors that double). A quadratic phase would
 * grow 64x. */
static void test_bytes_grow_linearly(void **state) {
  (void)state;
  phase_bytes s = compile_bytes(1000), l = compile_bytes(8000);
  const char *names[] = {"parse", "-O2 passes", "v3 lowering", "code words"};
  uint64_t sv[] = {s.parse, s.opt, s.lower, s.code}, lv[] = {l.parse, l.opt, l.lower, l.code};
  for (int k = 0; k < 4; k++) {
    double g = (double)lv[k] / (double)sv[k];
    print_message("%-12s 1k: %10llu  8k: %10llu  growth %.2f\n", names[k],
                  (unsigned long long)sv[k], (unsigned long long)lv[k], g);
    assert_true(sv[k] > 0);
    assert_true(g > 4.0);  /* the phase did work in proportion to the graph */
    assert_true(g < 10.0); /* and no more */
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_bytes_grow_linearly)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
