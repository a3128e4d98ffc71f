/* randgraph.h: a shared generator of random, well-typed IR modules for the
 * differential tests (tests/diff, and any backend's random-graph test).
 *
 * A graph is a function of (seed, index, options) alone: the same triple
 * gives the same module on every host, so a failing graph is reproduced by
 * its number. Every proposed instruction is checked with ir_infer_shape
 * before it is added, and the finished module verifies (the generator dies
 * otherwise: that is a bug here, not in the code under test).
 *
 * What a graph holds: parameters of f32, bf16 and s32 with shapes whose
 * dims come from {1, 2, 3, 7, 8, 127, 129, 300} (element counts bounded);
 * a random sequence of the op families enabled in rg_options.ops; dots and
 * convolutions bring fresh parameters of matching shapes and are often
 * followed by bias-add and relu epilogues and elementwise chains (fusion
 * opportunities for passes/fusion.c); the root is the last value or a
 * tuple of it and an earlier one. */
#ifndef TPUCC_TESTS_COMMON_RANDGRAPH_H
#define TPUCC_TESTS_COMMON_RANDGRAPH_H

#include "ir/ir.h"

/* Op families (rg_options.ops). */
enum {
  RG_ARITH = 1u << 0,   /* f32/bf16 add, subtract, multiply, divide, abs, negate,
                           sqrt, floor, ceil, round-*, sign */
  RG_TRANSC = 1u << 1,  /* exp, log, tanh, logistic, rsqrt */
  RG_MINMAX = 1u << 2,  /* maximum, minimum, clamp, relu epilogues */
  RG_INT = 1u << 3,     /* s32 add/subtract/multiply, and/or/xor, shifts, not,
                           popcnt, count-leading-zeros, abs, negate */
  RG_MOVE = 1u << 4,    /* broadcast, transpose, reshape, slice, reverse, pad,
                           concatenate */
  RG_REDUCE = 1u << 5,  /* reduce (add over ints; add, max, min over floats) */
  RG_DOT = 1u << 6,     /* dot, with batch dims and operand_precision */
  RG_CONV = 1u << 7,    /* 1-D and 2-D convolution: strides, padding,
                           dilations, feature groups */
  RG_CMPSEL = 1u << 8,  /* compare, select, is-finite */
  RG_CONVERT = 1u << 9, /* f32 <-> bf16, float <-> s32 */
  RG_ALL = (1u << 10) - 1,
  RG_ATTN = 1u << 10, /* attention (not in RG_ALL): dot(Q, K) [* scale],
                         softmax over the last dim (max, subtract, exp,
                         sum, divide), dot(P, V), optionally with
                         split-heads reshape+transpose operands and a
                         merge-heads result; seq lengths from {1, 7, 129,
                         300}, head widths from {1, 64, 100}; a graph with
                         it starts with one such block */
};

/* Row programs (not in RG_ALL): a graph with RG_NORM starts with one or
 * two of them on f32 [rows..., row] values, rows and row lengths from
 * {1, 7, 127, 129, 300}, reducing the last one or two dims: layer norm
 * (sum, divide, subtract the broadcast mean, sum of squares, rsqrt of
 * var + eps, optionally * gamma + beta as broadcast [row] parameters),
 * RMS norm, or a softmax (max, subtract, exp, sum, divide), broadcasts
 * direct or through a keepdims reshape; then often a dot of the result
 * with an f32 weight parameter, often + a bias vector (a chain of two now
 * and then: the first's result then only feeds the second, so it is
 * stored as bf16). */
enum { RG_NORM = 1u << 11 };

/* Indexing (not in RG_ALL): now and then a step is a gather, scatter,
 * dynamic slice, dynamic update slice or select-and-scatter on a value of
 * the graph (randgraph_index.c). */
enum { RG_INDEX = 1u << 12 };
/* That step on value x of computation c: its index (and update, source)
 * operands are new parameters numbered from *np; IR_NONE when the drawn
 * form does not apply to x. */
ir_id rg_index_step(ir_module *m, ir_comp_id c, ir_id x, uint64_t *rs, int *np);
/* Control flow (not in RG_ALL): a graph with RG_CONTROL starts with a
 * while over (s32, a float value) whose trip count (0 to 6) a fresh s32
 * parameter and the value's maximum decide, conditionals by an s32 index
 * (-1 to 2 over three branches, so one in four runs out of range) and by
 * a pred, a map and a call, all on that value's shape. */
enum { RG_CONTROL = 1u << 13 };
/* Sorting (not in RG_ALL; tests/common/randsort.c): with RG_SORT set,
 * rg_generate returns rg_generate_sort's graph: sorts of one to three
 * operands with one- and two-level comparators, topk and the TopK
 * custom-call, on keys with many ties. */
enum { RG_SORT = 1u << 14 };
ir_module *rg_generate_sort(uint64_t seed, uint64_t index);

typedef struct rg_options {
  unsigned ops;      /* RG_* families; 0 means RG_ALL */
  int steps;         /* instructions proposed; 0: 6 to 20 */
  int64_t max_elems; /* largest value; 0: 40000 elements */
  int64_t max_macs;  /* largest dot/convolution; 0: 2^21 multiply-adds */
  bool float_only;   /* no s32 parameters */
  bool default_precision; /* dots/convolutions only at operand_precision
                             DEFAULT (else also HIGH and HIGHEST) */
  bool dot_layouts; /* a dot's right operand is also stored [batch, N, K]
                       (contracting dim last), as transpose([.., N, K]) of
                       a parameter, or with its batch dim last ([N, K, B]);
                       else always [batch, K, N] */
} rg_options;

void rg_options_init(rg_options *o);

/* Graph `index` of the stream `seed`: a new module (destroy with
 * ir_module_destroy). */
ir_module *rg_generate(uint64_t seed, uint64_t index, const rg_options *o);

/* Deterministic arguments for m's entry parameters, in arena a: floats in
 * [-4, 4] on a grid of 1/256 (mostly not bf16-exact, so rounding matters;
 * finite, no -0, no values small enough to underflow a product), s32 in
 * [-1000, 1000] with some shift-sized values. */
ir_literal **rg_args(const ir_module *m, arena *a, uint64_t seed);
/* As rg_args; with specials, about one float in 16 is instead +-inf, -0,
 * a NaN with a payload, a bf16 subnormal or a tiny normal. */
ir_literal **rg_args_ex(const ir_module *m, arena *a, uint64_t seed, bool specials);

/* Number of entry parameters of m. */
int rg_nparams(const ir_module *m);

#endif
