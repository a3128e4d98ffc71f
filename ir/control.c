/* control.c: the IR facts of the control-flow ops (OPF_CONTROL: call,
 * while, conditional, map) that every layer shares: which called
 * computation plays which role, which branch a selector picks, and the
 * result shape that follows from the computations. The full signature
 * check (each computation against its operands) is the verifier's
 * (ir/verify.c, check_control); the semantics are ir/eval_control.c's. */
#include "ir/ir.h"

#include <stdarg.h>

int ir_conditional_branch(int nbranches, ir_type selector, int64_t v) {
  if (selector == IR_PRED) return v ? 0 : 1;
  return v < 0 || v >= nbranches ? nbranches - 1 : (int)v;
}

static bool fail(ir_op op, char *err, size_t errlen, const char *fmt, ...) BASE_PRINTF(4, 5);
static bool fail(ir_op op, char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0) return false;
  int n = snprintf(err, errlen, "%s: ", ir_op_name(op));
  if (n >= 0 && (size_t)n < errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return false;
}

/* The root shape of computation c, or NULL when c or its root is missing. */
static const ir_shape *root_shape(const ir_module *m, ir_comp_id c) {
  if (!m || c < 0 || c >= m->comps.n) return NULL;
  const ir_comp *cp = &m->comps.v[c];
  if (cp->root < 0 || cp->root >= cp->insts.n || cp->insts.v[cp->root].dead) return NULL;
  return cp->insts.v[cp->root].shape;
}

static int want_calls(ir_op op) { return op == IR_OP_WHILE ? 2 : op == IR_OP_CONDITIONAL ? -1 : 1; }

bool ir_control_infer(const ir_module *m, ir_op op, const ir_shape *ops, int nops,
                      const ir_comp_id *calls, int ncalls, ir_shape *out, char *err,
                      size_t errlen) {
  static const char *const roles[] = {"to_apply", "condition and body", "branches", "to_apply"};
  int want = want_calls(op);
  int ri = op == IR_OP_WHILE ? 1 : op == IR_OP_CONDITIONAL ? 2 : 0;
  if ((want >= 0 && ncalls != want) || ncalls < 1 || (ncalls > 0 && !calls))
    return fail(op, err, errlen, "calls %d computations, expected %s (%s)", ncalls,
                want == 2   ? "2"
                : want == 1 ? "1"
                            : "at least 1",
                roles[ri]);
  for (int k = 0; k < ncalls; k++)
    if (!root_shape(m, calls[k]))
      return fail(op, err, errlen, "called computation %d does not exist or has no root",
                  (int)calls[k]);
  const ir_shape *root = root_shape(m, calls[0]);
  switch (op) {
  case IR_OP_CALL:
    *out = *root;
    return true;
  case IR_OP_WHILE:
    if (nops != 1)
      return fail(op, err, errlen, "takes 1 operand (the initial state), has %d", nops);
    *out = ops[0];
    return true;
  case IR_OP_CONDITIONAL: {
    if (nops < 1 || ops[0].type == IR_TUPLE || ops[0].rank != 0 ||
        (ops[0].type != IR_PRED && ops[0].type != IR_S32))
      return fail(op, err, errlen, "selects by a pred[] or s32[] operand 0");
    if (ops[0].type == IR_PRED && ncalls != 2)
      return fail(op, err, errlen, "a pred[] selects between 2 branches, given %d", ncalls);
    if (nops != ncalls + 1)
      return fail(op, err, errlen, "has %d branches but %d branch operands", ncalls, nops - 1);
    *out = *root;
    return true;
  }
  case IR_OP_MAP: {
    if (nops < 1) return fail(op, err, errlen, "needs at least one operand");
    for (int k = 0; k < nops; k++)
      if (ops[k].type == IR_TUPLE || ops[k].rank != ops[0].rank ||
          memcmp(ops[k].dims, ops[0].dims, sizeof(int64_t) * (size_t)ops[0].rank) != 0)
        return fail(op, err, errlen, "operand %d has other dimensions than operand 0", k);
    if (root->type == IR_TUPLE || root->rank != 0)
      return fail(op, err, errlen, "to_apply must return a scalar");
    *out = ir_shape_array(root->type, ops[0].rank, ops[0].dims);
    return true;
  }
  default:
    return fail(op, err, errlen, "not a control-flow op");
  }
}
