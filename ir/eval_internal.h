/* eval_internal.h: private interface between the files of the reference
 * evaluator (ir/eval*.c). Not for use outside ir/eval*.c.
 *
 * Values: every evaluated instruction yields an ir_literal (row-major,
 * logical order, see ir.h). Values are immutable once produced, so ops that
 * do not change data (copy, reshape, get-tuple-element, tuple) share the
 * operand's storage instead of copying it.
 *
 * Memory: all values and temporaries live in the context's scratch arena;
 * every allocation goes through ev_alloc, which checks the running total
 * against the byte limit first and fails with ST_RESOURCE_EXHAUSTED naming
 * the instruction. Per-element calls of to_apply computations run between an
 * arena mark and reset, so they use constant memory.
 *
 * Numerics (the contract every backend is checked against):
 *  - bf16 and f16 elementwise ops load exactly into f32, compute in f32 and
 *    round the result to nearest even, once per op (as XLA's evaluator).
 *  - f32 ops are single IEEE f32 operations (the build is ISO C11, so
 *    floating-point contraction into FMA is off).
 *  - integers are two's complement and wrap; arithmetic is done in uint64
 *    and truncated to the type's width (no signed overflow in C). pred is an
 *    unsigned 1-bit integer: add = or, subtract = xor, multiply = and,
 *    maximum = or, minimum = and, power(x, y) = x | !y.
 *
 * Work: ev_work counts steps against opts.max_steps before each op's loops
 * (one per element produced, plus the products of dot and convolution and
 * the fold steps of reductions), so runaway work is a status, not a hang. */
#ifndef TPUCC_IR_EVAL_INTERNAL_H
#define TPUCC_IR_EVAL_INTERNAL_H

#include "ir/ir.h"

#include <math.h>

enum { EV_MAX_DEPTH = 64 }; /* nesting of called computations */

typedef struct ev_ctx {
  const ir_module *m;
  ir_eval_options opts;
  arena *scratch;    /* all values and temporaries */
  int64_t max_bytes; /* limit on arena_bytes(scratch) + bytes copied out */
  int64_t out_bytes; /* bytes of the result copied into the caller's arena */
  int64_t held_bytes; /* bytes of while-loop states held outside scratch */
  double steps;      /* work done so far (see ev_work) */
  double max_steps;  /* limit on steps */
  int depth;         /* current nesting of called computations */
  struct coll_rdv *rdv; /* the replicas' rendezvous (ir_eval_replicated); NULL: one replica */
  uint64_t ncoll;     /* collectives this replica has run (their keys) */
  bool rdv_failed;    /* an exchange failed because another replica did */
  bool shapes_checked; /* ev_check_shapes passed: the handlers need not re-infer */
  char *err;
  size_t errlen;
} ev_ctx;

/* ---- errors and memory (eval.c) ---- */

/* Writes "<loc>: <name> (<op>): <message>" into the context's error buffer
 * and returns st. inst may be NULL for errors that belong to no instruction. */
base_status ev_fail(ev_ctx *cx, const ir_inst *inst, base_status st, const char *fmt, ...)
    BASE_PRINTF(4, 5);
/* Allocates n zeroed bytes (n may be 0) in the scratch arena after checking
 * the byte limit; fails with ST_RESOURCE_EXHAUSTED naming inst. */
base_status ev_alloc(ev_ctx *cx, const ir_inst *inst, int64_t n, void **out);
/* Accounts for n steps of work (elements produced, products summed, fold
 * steps, instructions evaluated) before doing them; fails with
 * ST_RESOURCE_EXHAUSTED naming inst past the limit, so that no module can
 * keep the evaluator busy for hours. n is a double: products of sizes may
 * exceed int64. */
base_status ev_work(ev_ctx *cx, const ir_inst *inst, double n);
/* As ev_alloc, for count * size bytes with overflow checked. */
base_status ev_alloc_array(ev_ctx *cx, const ir_inst *inst, int64_t count, int64_t size,
                           void **out);
/* The n elements of type t at p, widened into a new scratch array (*out):
 * double for f64, f32 for the other float types, int64_t otherwise. Fails as ev_alloc_array. */
base_status ev_widen(ev_ctx *cx, const ir_inst *in, ir_type t, const void *p, int64_t n, void **out);
/* A new zero-filled array literal of shape s (its type and dims). */
base_status ev_new_array(ev_ctx *cx, const ir_inst *inst, const ir_shape *s, ir_literal **out);
/* A tuple literal whose elements are the given literals (shared). */
base_status ev_new_tuple(ev_ctx *cx, const ir_inst *inst, ir_literal **elems, int n,
                         ir_literal **out);
/* Evaluates computation c on args (one per parameter, shapes checked) and
 * returns its root value. */
base_status ev_call(ev_ctx *cx, const ir_inst *caller, ir_comp_id c, ir_literal *const *args,
                    int nargs, ir_literal **out);
/* ir_eval in three steps, which ir_eval_replicated runs per replica:
 * ev_prepare checks m (runnable for opts->replica_count replicas, within
 * the budget) and sets cx up with a new scratch arena (destroy it after
 * ev_copy_out); ev_run_entry evaluates the entry computation; ev_copy_out
 * deep-copies a value into the caller's arena. */
base_status ev_prepare(ev_ctx *cx, const ir_module *m, const ir_eval_options *opts, char *err,
                       size_t errlen);
base_status ev_run_entry(ev_ctx *cx, ir_literal *const *args, int nargs, ir_literal **out);
base_status ev_copy_out(ev_ctx *cx, const ir_literal *v, arena *a, ir_literal **out);
/* True when a and b are arrays of the same rank and dims (types ignored). */
bool ev_dims_equal(const ir_shape *a, const ir_shape *b);

/* ---- element access (inline: used in every loop) ---- */

/* Bits of the integer types: pred 1, then 8, 16, 32 or 64. */
static inline int ev_int_bits(ir_type t) {
  switch (t) {
  case IR_PRED: return 1;
  case IR_S8: case IR_U8: case IR_S4: case IR_U4: return 8;
  case IR_S16: case IR_U16: return 16;
  case IR_S64: case IR_U64: return 64;
  default: return 32;
  }
}

static inline bool ev_is_unsigned(ir_type t) {
  return t == IR_U8 || t == IR_U16 || t == IR_U32 || t == IR_U64 || t == IR_U4;
}

/* All ones in the type's width. */
static inline uint64_t ev_int_mask(ir_type t) {
  int b = ev_int_bits(t);
  return b == 64 ? ~(uint64_t)0 : ((uint64_t)1 << b) - 1;
}

/* The canonical int64 of the low bits of v in integer type t: signed types
 * sign-extend, unsigned types zero-extend (u64: the bit pattern), pred is
 * v != 0. */
static inline int64_t ev_wrap(ir_type t, uint64_t v) {
  if (t == IR_PRED) return v != 0;
  int bits = ev_int_bits(t);
  if (bits == 64) return (int64_t)v;
  uint64_t x = v & (((uint64_t)1 << bits) - 1), sign = (uint64_t)1 << (bits - 1);
  if (ev_is_unsigned(t) || x < sign) return (int64_t)x;
  return (int64_t)x - (int64_t)(sign << 1);
}

/* a < b in t's order (u64 unsigned; every other type's canonical int64
 * already orders correctly). */
static inline bool ev_int_lt(ir_type t, int64_t a, int64_t b) {
  return t == IR_U64 ? (uint64_t)a < (uint64_t)b : a < b;
}

/* Integer elements as their canonical int64 (see ev_wrap). */
static inline int64_t ev_load_i(ir_type t, const void *p) {
  switch (t) {
  case IR_PRED: return *(const uint8_t *)p != 0;
  case IR_S8: case IR_S4: return *(const int8_t *)p;
  case IR_U8: case IR_U4: return *(const uint8_t *)p;
  case IR_S16: { int16_t v; memcpy(&v, p, 2); return v; }
  case IR_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
  case IR_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
  case IR_S64: case IR_U64: { int64_t v; memcpy(&v, p, 8); return v; }
  default: { int32_t v; memcpy(&v, p, 4); return v; }
  }
}

/* Any element as a double: floats exactly, integers rounded to nearest
 * (u64 as unsigned). */
static inline double ev_load_d(ir_type t, const void *p) {
  switch (t) {
  case IR_F64: { double d; memcpy(&d, p, 8); return d; }
  case IR_F32: { float f; memcpy(&f, p, 4); return f; }
  case IR_BF16: { uint16_t h; memcpy(&h, p, 2); return ir_bf16_to_f32(h); }
  case IR_F16: { uint16_t h; memcpy(&h, p, 2); return ir_f16_to_f32(h); }
  case IR_U64: return (double)(uint64_t)ev_load_i(t, p);
  default: return (double)ev_load_i(t, p);
  }
}

/* Any element as an f32 (f64 rounded to nearest even; the f32 paths of
 * the evaluator never see f64, which has its own double paths). */
static inline float ev_load_f(ir_type t, const void *p) {
  switch (t) {
  case IR_F32: { float f; memcpy(&f, p, 4); return f; }
  case IR_BF16: { uint16_t h; memcpy(&h, p, 2); return ir_bf16_to_f32(h); }
  case IR_F16: { uint16_t h; memcpy(&h, p, 2); return ir_f16_to_f32(h); }
  case IR_PRED: case IR_S8: case IR_S32: return (float)ev_load_i(t, p);
  default: return (float)ev_load_d(t, p);
  }
}

/* Stores an f32 value into a float type, rounding to nearest even. */
static inline void ev_store_f(ir_type t, void *p, float v) {
  if (t == IR_F32) {
    memcpy(p, &v, 4);
  } else if (t == IR_F64) {
    double d = v;
    memcpy(p, &d, 8);
  } else {
    uint16_t h = t == IR_BF16 ? ir_f32_to_bf16(v) : ir_f32_to_f16(v);
    memcpy(p, &h, 2);
  }
}

/* Stores a double into a float type with one rounding to nearest even
 * (bf16/f16 through f32 rounded to odd: no double rounding). */
void ev_store_d(ir_type t, void *p, double v);

/* Stores an integer value into an integer type, wrapping. */
static inline void ev_store_i(ir_type t, void *p, int64_t v) {
  uint64_t w = (uint64_t)ev_wrap(t, (uint64_t)v);
  switch (ir_type_size(t)) {
  case 1: *(uint8_t *)p = (uint8_t)w; break;
  case 2: { uint16_t x = (uint16_t)w; memcpy(p, &x, 2); break; }
  case 4: { uint32_t x = (uint32_t)w; memcpy(p, &x, 4); break; }
  default: memcpy(p, &w, 8); break;
  }
}

/* Row-major strides of dims (strides[rank-1] = 1). */
static inline void ev_strides(const ir_shape *s, int64_t *strides) {
  int64_t st = 1;
  for (int i = s->rank - 1; i >= 0; i--) {
    strides[i] = st;
    st *= s->dims[i];
  }
}

/* Advances a row-major multi-index over dims; false after the last one. */
static inline bool ev_next_index(int rank, const int64_t *dims, int64_t *idx) {
  for (int i = rank - 1; i >= 0; i--) {
    if (++idx[i] < dims[i]) return true;
    idx[i] = 0;
  }
  return false;
}

/* ---- scalar semantics (eval_scalar.c) ---- */

/* Each takes pointers to single elements of type t (compare and is-finite
 * write a pred). They return false when the op is not defined on t. */
bool ev_unary_elem(ir_op op, ir_type t, const void *a, void *out);
bool ev_binary_elem(ir_op op, ir_type t, const void *a, const void *b, void *out);
bool ev_compare_elem(ir_cmp_dir dir, ir_cmp_type ct, ir_type t, const void *a, const void *b);
/* Converts one element from type `from` to type `to` (XLA's convert). */
void ev_convert_elem(ir_type from, const void *a, ir_type to, void *out);
/* Stores an int64 into any element type (ints wrap, floats round once to
 * nearest even, pred = nonzero); used by convert and iota. */
void ev_store_from_i64(ir_type t, void *p, int64_t v);

/* ---- TPU numerics (eval_tpu.c; opts.tpu_numerics, docs/numerics.md) ---- */

/* One elementwise float op (f32 or bf16; nops operands, clamp as lo, x,
 * hi) as the vector unit computes it; false when t is not f32/bf16 or the
 * op keeps the default semantics. */
bool ev_tpu_elem(ir_op op, ir_type t, int nops, const void *const *ops, void *out);
/* A convert as the vector unit does it; false: use ev_convert_elem. */
bool ev_tpu_convert(ir_type from, const void *a, ir_type to, void *out);
/* MXU passes of a float dot/convolution: 1, 3 (HIGH) or 6 (HIGHEST). */
int ev_tpu_passes(const ir_inst *in, ir_type lt, ir_type rt);
/* Pass p multiplies lhs part ev_tpu_pair_a[p] by rhs part ev_tpu_pair_b[p]. */
extern const int ev_tpu_pair_a[6], ev_tpu_pair_b[6];
/* The nparts bf16 parts of a float array as f32 literals of its dims, each
 * value as the MXU reads it (bf16 subnormals are signed zeros). */
base_status ev_tpu_parts(ev_ctx *cx, const ir_inst *inst, const ir_literal *v, int nparts,
                         ir_literal **parts);
/* One MXU step: acc + a * b with a single rounding (fused). */
float ev_tpu_mac(float acc, float a, float b);
/* Stores an MXU sum into the result type: NaN canonical, then RNE. */
void ev_tpu_store(ir_type rt, void *out, float acc);

/* ---- op handlers (one file per family) ---- */

/* Each evaluates inst with operand values ops[] into *out. */
typedef base_status ev_handler(ev_ctx *cx, const ir_inst *inst, ir_literal *const *ops,
                               ir_literal **out);

ev_handler ev_elementwise;     /* eval_elementwise.c: unary, binary, compare, select, clamp */
ev_handler ev_convert;         /* eval_elementwise.c */
ev_handler ev_bitcast_convert; /* eval_elementwise.c */
ev_handler ev_iota;            /* eval_layout.c */
ev_handler ev_broadcast;       /* eval_layout.c */
ev_handler ev_reshape;         /* eval_layout.c */
ev_handler ev_transpose;       /* eval_layout.c */
ev_handler ev_slice;           /* eval_layout.c */
ev_handler ev_concatenate;     /* eval_layout.c */
ev_handler ev_pad;             /* eval_layout.c */
ev_handler ev_reverse;         /* eval_layout.c */
ev_handler ev_dot;             /* eval_dot.c */
/* eval_custom_call.c: identity targets share their operand; host functions
 * (opts.ffi) get the array leaves of the operands and fill new arrays of the
 * declared result shape; anything else fails naming the target. */
ev_handler ev_custom_call;
ev_handler ev_convolution;     /* eval_conv.c */
ev_handler ev_reduce;          /* eval_reduce.c */
ev_handler ev_reduce_window;   /* eval_reduce.c */
ev_handler ev_all_reduce;      /* eval_coll.c: as ev_collective */
/* eval_coll.c: every op for which ir_is_collective holds, through the
 * rendezvous of cx (or alone, with one replica). */
ev_handler ev_collective;
ev_handler ev_coll_local;      /* eval_coll.c: replica-id, partition-id, the -done forms */
/* eval_coll.c: every collective-family instruction of cx->m has the shape
 * its operands and attributes give (ir_infer_shape), so that the handlers
 * above index within bounds; with shape_ops also the ops whose handlers
 * re-infer their shapes (the indexing ops of eval_gather.c, whose
 * inference may allocate in the module's arena), for which inference
 * must succeed; then sets cx->shapes_checked. Runs before any replica
 * starts: ir_infer_shape uses the module's arena, which replicas on
 * threads must not touch. */
base_status ev_check_shapes(ev_ctx *cx, bool shape_ops);
ev_handler ev_dynamic_slice;   /* eval_gather.c */
ev_handler ev_dynamic_update_slice; /* eval_gather.c */
ev_handler ev_gather;          /* eval_gather.c */
ev_handler ev_scatter;         /* eval_gather.c */
ev_handler ev_select_and_scatter; /* eval_gather.c */

/* A to_apply computation folding N values at a time (eval_reduce.c):
 * args[0..n) = to_apply(args[0..n), args[n..2n)), on scalar literals the
 * caller fills. When to_apply is one add, multiply, maximum, minimum, and
 * or or of its two parameters, the step applies that op directly (the
 * same function and rounding as the elementwise op, TPU numerics
 * included). */
typedef struct ev_reducer {
  const ir_inst *in;
  ir_comp_id comp;
  int n;
  ir_type *types;     /* element type of value k */
  size_t *es;         /* its size */
  ir_literal **args;  /* 2n scalar literals: accumulators, then inputs */
  uint8_t *tmp;       /* room for n results (sum of es) */
  bool fast, swapped; /* fast: acc = fast_op(acc, x), or (x, acc) when swapped */
  ir_op fast_op;
} ev_reducer;
/* Checks computation c against the signature (t..., t...) -> t or (t...)
 * and prepares r; fails naming in. */
base_status ev_reducer_init(ev_ctx *cx, const ir_inst *in, ir_comp_id c, int n, const ir_type *types,
                            ev_reducer *r);
/* One step: args[0..n) = to_apply(args[0..n), args[n..2n)), in constant
 * memory (an arena mark around the call). */
base_status ev_reducer_step(ev_ctx *cx, ev_reducer *r);
ev_handler ev_sort;            /* eval_sort.c */
ev_handler ev_topk;            /* eval_sort.c: topk and the TopK custom-call */
ev_handler ev_rng_bit_generator; /* eval_rng.c */
ev_handler ev_rng;             /* eval_rng.c */
ev_handler ev_call_op;         /* eval_control.c: call */
ev_handler ev_while;           /* eval_control.c */
ev_handler ev_conditional;     /* eval_control.c */
ev_handler ev_map;             /* eval_control.c */
ev_handler ev_small;           /* eval_small.c: the OPF_RUNS ops of ops.def */

/* Transposes an array value: result dim i = operand dim perm[i] (shared by
 * transpose and dot's operand packing). */
base_status ev_permute(ev_ctx *cx, const ir_inst *inst, const ir_literal *a, const int64_t *perm,
                       ir_literal **out);
/* Converts an array value to element type t (same dims). */
base_status ev_convert_to(ev_ctx *cx, const ir_inst *inst, const ir_literal *a, ir_type t,
                          ir_literal **out);

#endif
