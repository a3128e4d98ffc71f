/* gsdims.h: random gather/scatter dimension numbers, shared by the test
 * generators (opgen.c's one-op modules, randgraph_index.c's graphs). */
#ifndef TPUCC_TESTS_COMMON_GSDIMS_H
#define TPUCC_TESTS_COMMON_GSDIMS_H

#include "ir/ir.h"

/* For an operand x: which dims the index vector starts (index_map, in a
 * random order), which are collapsed, at most one batching dim (paired
 * with the indices' dim 0), the indices' shape (batch dims, then the index
 * vector, or an implicit one when it has one entry), the window size of
 * each operand dim (1 for collapsed and batching ones) and the window's
 * position in the gather result / scatter updates (window_dims, sorted).
 * a's lists live in arena ar. */
typedef struct tc_gsdims {
  ir_attrs a;
  ir_shape ix;
  int nb, nw;
  int64_t win[IR_MAX_RANK];  /* window size per operand dim */
  int64_t wsz[IR_MAX_RANK];  /* window sizes of the window dims, in order */
  int64_t bd[IR_MAX_RANK];   /* batch dims */
  int64_t out[IR_MAX_RANK];  /* dims of the gather result / scatter updates */
} tc_gsdims;

void tc_rand_gsdims(uint64_t *rs, arena *ar, const ir_shape *x, ir_type index_type, tc_gsdims *o);

/* A random select-and-scatter window over x (sizes up to 3, strides 1 to
 * 3, padding 0 or 1, no dilation) and the source dims it implies. */
void tc_rand_sas_window(uint64_t *rs, const ir_shape *x, ir_window *w, int64_t *src_dims);

#endif
