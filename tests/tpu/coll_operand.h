/* coll_operand.h: replica r's operand element i for all-reduce tests:
 * large values of both signs (1e8) and small ones, so that a fold in
 * another order than base/coll.h's changes the f32 bits. Shared by
 * tests/tpu/test_tpu_coll.c and tests/mpi/emu_mpi_prog.c. */
#ifndef TPUCC_TESTS_COLL_OPERAND_H
#define TPUCC_TESTS_COLL_OPERAND_H

#include <stdint.h>

/* Replica r's operand element i. */
static float operand(int r, int64_t i) {
  uint32_t h = (uint32_t)r * 7919u + (uint32_t)i * 104729u + 17u; /* wraps, mod 2^32 */
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  h ^= h >> 15;
  float small = (float)(h % 2000) / 64.0f - 15.0f;
  return (h >> 20) % 3 == 0 ? small * 1e8f : small;
}

#endif
