/* eval_test.h: helpers shared by the evaluator's unit tests: build a small
 * module by hand (no parser), run ir_eval, compare with expected values.
 * The shapes of instructions are written out by the tests themselves, so
 * the tests do not depend on shape inference. */
#ifndef TPUCC_TESTS_EVAL_TEST_H
#define TPUCC_TESTS_EVAL_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ir/ir.h"

#include <math.h>

typedef struct tb {
  ir_module *m;
  ir_comp_id entry;
  ir_comp_id c; /* the computation instructions go to */
  arena *out;   /* results and argument literals */
  ir_eval_options opts;
  char err[512];
} tb;

/* Array shape from a dims list: SH(IR_F32, 2, 3) is f32[2,3]. */
#define SH(t, ...) sh_((t), (int64_t[]){__VA_ARGS__}, (int)(sizeof((int64_t[]){__VA_ARGS__}) / 8))
#define SCALAR(t) ir_shape_scalar(t)
/* An int64 list attribute: INTS(1, 0). */
#define INTS(...)                                                                                  \
  ((ir_ints){(int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / 8), (int64_t[]){__VA_ARGS__}})
#define NO_INTS ((ir_ints){0, NULL})
/* A plain double array: A(1, 2, 3). */
#define A(...) ((double[]){__VA_ARGS__})
/* Value lists with their count, for literals and expectations. */
#define VALS(...)                                                                                  \
  (double[]){__VA_ARGS__}, (int64_t)(sizeof((double[]){__VA_ARGS__}) / sizeof(double))
#define IVALS(...) (int64_t[]){__VA_ARGS__}, (int64_t)(sizeof((int64_t[]){__VA_ARGS__}) / 8)

ir_shape sh_(ir_type t, const int64_t *dims, int rank);
ir_shape tuple_shape(tb *t, int n, const ir_shape *elems);

void tb_init(tb *t);
void tb_free(tb *t);

/* Instructions in t->c. */
ir_id tb_param(tb *t, int num, ir_shape s);
/* A constant from doubles (converted like ir_literal_set_f64 / _i64). */
ir_id tb_const(tb *t, ir_shape s, const double *v, int64_t n);
ir_id tb_scalar(tb *t, ir_type ty, double v);
/* Any op: a may be NULL; calls may be NULL. */
ir_id tb_op(tb *t, ir_op op, ir_shape s, const ir_attrs *a, int nops, const ir_id *ops, int ncalls,
            const ir_comp_id *calls);
#define OP1(t, op, s, a, x) tb_op((t), (op), (s), (a), 1, (ir_id[]){x}, 0, NULL)
#define OP2(t, op, s, a, x, y) tb_op((t), (op), (s), (a), 2, (ir_id[]){x, y}, 0, NULL)
#define OP3(t, op, s, a, x, y, z) tb_op((t), (op), (s), (a), 3, (ir_id[]){x, y, z}, 0, NULL)

/* A computation (p0, p1) -> op(p0, p1) on scalars of type ty. */
ir_comp_id tb_binary_comp(tb *t, ir_op op, ir_type ty);
/* The same sum, but as copy(add(p0, p1)): not the reducer's fast path. */
ir_comp_id tb_slow_add_comp(tb *t, ir_type ty);

/* An argument literal in t->out. */
ir_literal *tb_lit(tb *t, ir_shape s, const double *v, int64_t n);
ir_literal *tb_lit_bits32(tb *t, ir_shape s, const uint32_t *bits, int64_t n);

/* Sets the entry root, evaluates; the message (if any) is in t->err. */
base_status tb_eval(tb *t, ir_id root, ir_literal **args, int nargs, ir_literal **out);
/* As tb_eval, asserting success. */
ir_literal *tb_run(tb *t, ir_id root, ir_literal **args, int nargs);

/* Exact comparisons: floats by value (NaN matches NaN; use expect_bits32
 * for the sign of zero), ints by value. Also check the element count. */
void expect_f(const ir_literal *l, const double *v, int64_t n);
void expect_i(const ir_literal *l, const int64_t *v, int64_t n);
void expect_dims(const ir_literal *l, ir_type ty, int rank, const int64_t *dims);
uint32_t f32_bits(const ir_literal *l, int64_t i);
uint16_t u16_at(const ir_literal *l, int64_t i);

#endif
