/* opgen.h: one-op modules for the operand-shape differential test
 * (tests/diff/diff_ops.c).
 *
 * Where randgraph (randgraph.h) builds long random graphs of a few op
 * families, opgen builds many small modules around ONE op of ir/ops.def
 * under test (og_op), so that every op meets every kind of operand and every
 * kind of use:
 *
 *  - each operand slot of the op is a parameter, a constant literal, a
 *    splat (a literal of one repeated value, or a broadcast of a scalar
 *    constant), or the result of another op (negate/not, convert,
 *    broadcast, slice, reverse, transpose, reshape, add/and, or a reduce
 *    for scalars), chosen per slot (og_case.src);
 *  - the op's result is the ROOT, an element of a tuple ROOT, or the
 *    operand of a consumer (negate/not, convert, reshape, slice, add,
 *    reduce, broadcast, bitcast-convert, get-tuple-element) that is the
 *    ROOT (og_case.use);
 *  - element types f32, bf16, f16, s32, s8 and pred where the op accepts
 *    them; shapes of rank 0 to 3 with dims from {1, 2, 3, 5, 7, 8, 9, 17,
 *    129, 130} (scalars, size-1 dims, sizes that are not multiples of the
 *    8 x 128 tile), at most a few thousand elements.
 *
 * Case `index` of a stream is a function of (seed, index) alone. The op is
 * og_op(index % og_nops()); its round r = index / og_nops() fixes the
 * sources and the use for the first 12 rounds: slot j takes source
 * (r + j) % 4 and the use is r % 3, so rounds 0 to 3 give every slot
 * every source, and rounds 0 to 11 every source of the first slot with
 * every use; later rounds draw them at random. Everything else (types,
 * shapes, attributes, what computes an operand) is drawn from the case's
 * own stream. Every
 * instruction is checked with ir_infer_shape as it is built and the module
 * verifies (the generator dies otherwise: a bug here). */
#ifndef TPUCC_TESTS_COMMON_OPGEN_H
#define TPUCC_TESTS_COMMON_OPGEN_H

#include "ir/ir.h"

typedef enum og_source {
  OG_PARAM,    /* an entry parameter */
  OG_CONST,    /* a constant literal of random values */
  OG_SPLAT,    /* a literal of one value, or broadcast(scalar constant) */
  OG_COMPUTED, /* the result of another op on fresh parameters */
  OG_NSOURCES
} og_source;

typedef enum og_use {
  OG_ROOT,     /* the op is the entry's root */
  OG_IN_TUPLE, /* the op is an element of the root tuple */
  OG_FEEDS,    /* the op feeds a consumer that is the root */
  OG_NUSES
} og_use;

enum { OG_MAX_SLOTS = 6 };

/* What one generated module tests. */
typedef struct og_case {
  ir_op op;                     /* the op under test */
  ir_type type;                 /* its main operand (or result) element type */
  int nslots;                   /* operand slots the op has in this module */
  og_source src[OG_MAX_SLOTS];  /* the source of each slot */
  og_use use;
  char desc[200];               /* one line: op, type, slots, use, details */
} og_case;

/* The ops covered: every op of ops.def that the targets run (all but the
 * OPF_DECLARED ones, which only import and print), in ops.def order. */
int og_nops(void);
ir_op og_op(int i); /* 0 <= i < og_nops() */

/* Case `index` of the stream `seed`: a new module (destroy with
 * ir_module_destroy) and, when k is not NULL, its description. */
ir_module *og_generate(uint64_t seed, uint64_t index, og_case *k);

/* Arguments for m's entry parameters in arena a (tuple parameters get
 * tuple literals): floats random in [-4, 4) at full precision with about
 * one in eight a special (+-0, +-inf, quiet and signalling NaNs with
 * payloads, subnormals, huge values, rounding ties); s32 and s8 small,
 * shift-sized, extreme (INT_MIN, INT_MAX, -1) or any bits; pred 0 or 1. */
ir_literal **og_args(const ir_module *m, arena *a, uint64_t seed);

/* Number of entry parameters of m. */
int og_nparams(const ir_module *m);

const char *og_source_name(og_source s);
const char *og_use_name(og_use u);

#endif
