/* test_layout.c: the layout pass on nested tuple shapes: every array leaf
 * gets the target's tiles, and a tuple element that is itself a tuple
 * keeps no layout of its own (it once got a copy of an unset one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "frontend/frontend.h"
#include "passes/passes.h"

static const char nested_hlo[] =
    "HloModule nest\n"
    "ENTRY e {\n"
    "  x = f32[8,128] parameter(0)\n"
    "  y = f32[4,256] parameter(1)\n"
    "  t = (f32[8,128], f32[4,256]) tuple(x, y)\n"
    "  ROOT r = ((f32[8,128], f32[4,256]), f32[8,128]) tuple(t, x)\n"
    "}\n";

static void nested_tuple_leaves_are_tiled(void **state) {
  (void)state;
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("nest.hlo", nested_hlo, sizeof nested_hlo - 1, d);
  assert_non_null(m);
  pass_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.d = d;
  assert_true(pass_layout(m, &ctx));
  const ir_comp *c = &m->comps.v[m->entry];
  const ir_shape *r = c->insts.v[c->root].shape;
  assert_int_equal(r->type, IR_TUPLE);
  const ir_shape *inner = &r->tuple[0];
  assert_int_equal(inner->type, IR_TUPLE);
  assert_null(inner->layout);
  assert_true(ir_shape_layout(&inner->tuple[0])->ntiles > 0);
  assert_true(ir_shape_layout(&inner->tuple[1])->ntiles > 0);
  assert_true(ir_shape_layout(&r->tuple[1])->ntiles > 0);
  ir_module_destroy(m);
  diag_destroy(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(nested_tuple_leaves_are_tiled)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
