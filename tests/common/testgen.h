/* testgen.h: small pieces shared by the test-module generators
 * (randgraph.c, opgen.c). */
#ifndef TPUCC_TESTS_COMMON_TESTGEN_H
#define TPUCC_TESTS_COMMON_TESTGEN_H

#include "ir/ir.h"

/* The next value of the splitmix64 stream whose state is *s. */
static inline uint64_t tc_splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* An int list attribute holding v[0..n), copied into arena a. */
static inline ir_ints tc_ints(arena *a, int n, const int64_t *v) {
  ir_ints r = {n, arena_array(a, (size_t)(n > 0 ? n : 1), sizeof(int64_t))};
  if (n > 0) memcpy(r.v, v, (size_t)n * sizeof *v);
  return r;
}

/* Appends parameter(number) of shape s to computation c. */
static inline ir_id tc_param(ir_module *m, ir_comp_id c, const ir_shape *s, int64_t number) {
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_PARAMETER;
  in.shape = *s;
  in.a.parameter_number = number;
  return ir_inst_add(m, c, &in);
}

/* Appends a constant holding literal l (kept, not copied) to c. */
static inline ir_id tc_constant(ir_module *m, ir_comp_id c, ir_literal *l) {
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_CONSTANT;
  in.shape = l->shape;
  in.a.literal = l;
  return ir_inst_add(m, c, &in);
}

/* Sets c's root, finishes c and verifies m; a module that does not verify
 * is a bug of the generator `who` (dies naming module `index`). */
static inline void tc_finish(ir_module *m, ir_comp_id c, ir_id root, const char *who,
                             uint64_t index) {
  ir_comp_get(m, c)->root = root;
  ir_comp_finish(m, c);
  diag *d = diag_create();
  if (ir_verify(m, d))
    base_die("%s: module %llu does not verify: %s", who, (unsigned long long)index, diag_text(d));
  diag_destroy(d);
}

#endif
