/* ir_test_util.h: small builders shared by the ir/ unit tests.
 * Shapes are written in HLO spelling ("f32[2,3]", "(f32[2], s32[])") and
 * parsed here by a tiny reader that accepts only that, so tests read like
 * the IR they build. Everything is allocated in the module's arena. */
#ifndef TPUCC_TESTS_IR_UTIL_H
#define TPUCC_TESTS_IR_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "ir/ir.h"

static inline ir_shape tu_shape_at(arena *a, const char **p) {
  ir_shape s;
  memset(&s, 0, sizeof s);
  while (**p == ' ') (*p)++;
  if (**p == '(') {
    ir_shape el[16];
    int n = 0;
    (*p)++;
    while (**p == ' ') (*p)++;
    while (**p != ')') {
      assert_true(n < 16);
      el[n++] = tu_shape_at(a, p);
      while (**p == ' ' || **p == ',') (*p)++;
    }
    (*p)++;
    s.type = IR_TUPLE;
    s.ntuple = n;
    s.tuple = arena_dup(a, el, sizeof(ir_shape) * (size_t)(n ? n : 1));
    return s;
  }
  const char *t = *p;
  while (**p && **p != '[') (*p)++;
  ir_type ty = ir_type_from_name(t, (size_t)(*p - t));
  assert_int_not_equal(ty, IR_TYPE_INVALID);
  assert_int_equal(**p, '[');
  (*p)++;
  int64_t dims[IR_MAX_RANK];
  int r = 0;
  while (**p != ']') {
    char *end;
    assert_true(r < IR_MAX_RANK);
    dims[r++] = strtoll(*p, &end, 10);
    *p = end;
    if (**p == ',') (*p)++;
  }
  (*p)++;
  return ir_shape_array(ty, r, dims);
}

/* "f32[2,3]" -> shape (tuple element arrays in a). */
static inline ir_shape tu_shape(arena *a, const char *spec) {
  const char *p = spec;
  ir_shape s = tu_shape_at(a, &p);
  assert_int_equal(*p, 0);
  return s;
}

/* Spelling of a shape without layout, in a static buffer per call site
 * rotation (up to 4 live at once). */
static inline const char *tu_str(const ir_shape *s) {
  static char bufs[4][256];
  static int k;
  char *b = bufs[k++ & 3];
  strbuf sb;
  sb_init(&sb);
  ir_shape_print(&sb, s, false);
  snprintf(b, 256, "%s", sb_str(&sb));
  sb_free(&sb);
  return b;
}

/* A list attribute from literal values: INTS(1, 0). Empty: (ir_ints){0}. */
#define INTS(...)                                                              \
  ((ir_ints){(int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),   \
             (int64_t[]){__VA_ARGS__}})

/* Appends an instruction with an explicit (possibly wrong) shape. */
static inline ir_id tu_inst(ir_module *m, ir_comp_id c, ir_op op, const char *name, const char *shape,
                            int nops, const ir_id *ops, const ir_attrs *a) {
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = op;
  in.name = name;
  in.shape = tu_shape(m->arena, shape);
  in.nops = nops;
  in.ops = (ir_id *)ops;
  if (a) in.a = *a;
  return ir_inst_add(m, c, &in);
}

static inline ir_id tu_param(ir_module *m, ir_comp_id c, int64_t num, const char *name, const char *shape) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.parameter_number = num;
  return tu_inst(m, c, IR_OP_PARAMETER, name, shape, 0, NULL, &a);
}

/* A scalar binary reducer computation: (t[], t[]) -> t[] with `op`. */
static inline ir_comp_id tu_reducer(ir_module *m, const char *name, ir_type t, ir_op op) {
  ir_comp_id c = ir_comp_add(m, name);
  char sp[16];
  snprintf(sp, sizeof sp, "%s[]", ir_type_name(t));
  char n0[64], n1[64], n2[64];
  snprintf(n0, sizeof n0, "%s.x", name);
  snprintf(n1, sizeof n1, "%s.y", name);
  snprintf(n2, sizeof n2, "%s.r", name);
  ir_id ops[2];
  ops[0] = tu_param(m, c, 0, n0, sp);
  ops[1] = tu_param(m, c, 1, n1, sp);
  ir_comp_get(m, c)->root = tu_inst(m, c, op, n2, sp, 2, ops, NULL);
  ir_comp_finish(m, c);
  return c;
}

#endif
