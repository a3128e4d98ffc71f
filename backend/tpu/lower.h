/* lower.h: private to backend/tpu: the lowering of IR instructions onto
 * kernels: its context (lctx), the dispatch (lower.c) and the per-op
 * lowerings it calls (lower_*.c, rows.c, attention.c). Below it: values
 * (value.h), kernels and the builder (tb.h). */
#ifndef TPUCC_BACKEND_TPU_LOWER_H
#define TPUCC_BACKEND_TPU_LOWER_H

#include "backend/tpu/value.h"

typedef struct lctx lctx;
struct lctx {
  tb *b;
  const ir_module *m;
  ir_comp_id c;
  const ir_comp *comp;
  tval **val;       /* per instruction; NULL until lowered (or deferred) */
  int32_t *rem;     /* remaining uses */
  bool *deferred;   /* elementwise, folded into its single consumer's loop */
  tval **params;    /* bound parameters (fusion computations) */
  ir_precision precision;
  VEC(ir_id) pending; /* operand edges to consume after the current kernel */
  ir_id epi_dot;      /* kOutput fusion: the dot or convolution lowered
                         with the root's elementwise program as its
                         epilogue, or IR_NONE */
  bool *row_bcast;    /* broadcasts of an [N] vector read as rows there */
  bool root_bf16;     /* an f32 elementwise root is stored as bf16 */
  const char **prologue; /* per convert read by dots (NULL: none or not
                            planned): lower_prologue_fused, or why it is
                            materialised (lower_prologue.c) */
};

/* Lowers one instruction; its value goes to x->val[i]. */
void lower_inst(lctx *x, ir_id i);
/* Lowers computation c with parameters bound to params; returns the root's
 * value (a reference the caller owns), or NULL with a located error (at
 * the caller's instruction when c would nest deeper than TB_MAX_DEPTH). */
tval *lower_comp(tb *b, const ir_module *m, ir_comp_id c, tval **params, ir_precision prec);
/* lower_comp where an f32 elementwise root may be stored as bf16
 * (root_bf16: lower_bf16_store said so); the root value's type says
 * whether it was. */
tval *lower_comp_ex(tb *b, const ir_module *m, ir_comp_id c, tval **params, ir_precision prec,
                    bool root_bf16);

/* Elementwise program of a scalar computation (reducers): inputs are its
 * parameters in order; outputs its root (or the root tuple's elements). */
bool lower_scalar_comp(lctx *x, ir_comp_id c, tk_elem *out);
/* The same, its errors naming the computation's role ("comparator"). */
bool lower_scalar_comp_as(lctx *x, ir_comp_id c, tk_elem *out, const char *role);

/* lower_coll.c: an all-reduce over more than one replica (false: not
 * one; the single-replica identity is lower_tuple's). */
bool lower_all_reduce(lctx *x, ir_id i);
/* lower_coll_move.c: collective-permute, all-to-all, collective-broadcast
 * over the program's replicas (one per core), replica-id, partition-id. */
void lower_coll_move(lctx *x, ir_id i);
/* lower_coll.c: a reduce-scatter or all-gather (false: neither). */
bool lower_coll_halves(lctx *x, ir_id i);
/* The values of the collectives in of result shape `shape` (a start op's:
 * its collective's), NULL after an error: reduce-scatter or all-gather
 * (lower_coll.c), collective-permute, all-to-all or collective-broadcast
 * (lower_coll_move.c). */
tval *coll_halves_value(lctx *x, const ir_inst *in, const ir_shape *shape);
tval *coll_move_value(lctx *x, const ir_inst *in, const ir_shape *shape);
/* lower_coll_async.c: the -start/-done forms, run synchronously. */
void lower_coll_async(lctx *x, ir_id i);

/* lower_control.c: call, while, conditional and map (false: not one). */
bool lower_control(lctx *x, ir_id i);

/* lower_move.c: data movement and tuples; the result goes to x->val[i]. */
void lower_broadcast(lctx *x, ir_id i);
void lower_slice(lctx *x, ir_id i);
void lower_reverse(lctx *x, ir_id i);
void lower_concatenate(lctx *x, ir_id i);
void lower_iota(lctx *x, ir_id i);
/* A new value of type t and dims whose elements are their index along
 * dim d (iota's), or NULL after an error. */
tval *lower_iota_value(tb *b, ir_type t, int rank, const int64_t *dims, int d);
/* A tuple, or an all-reduce (one replica: its operands). */
void lower_tuple(lctx *x, ir_id i);
/* A bitcast-convert as an alias of its operand's buffer, true; false when
 * it ran as the end of its operand's elementwise program instead
 * (lower_elementwise: the operand edges consumed are x->pending). */
bool lower_bitcast(lctx *x, ir_id i);

/* lower_small.c: the OPF_RUNS ops of ops.def (ir/small.c). */
void lower_small(lctx *x, ir_id i);
/* lower_small.c: a zero of the integer scalar shape s (a start tuple's
 * context; u32 held as s32), or NULL after an error. */
tval *lower_zero_scalar(tb *b, const ir_shape *s);
/* The constant an OPF_RUNS instruction in of c lowers to (get-dimension-
 * size's s32), for the constant pool; else NULL. */
ir_literal *lower_small_constant(arena *a, const ir_comp *c, const ir_inst *in);

/* lower_elem.c */
/* Whether in is computed element by element (elementwise ops, convert,
 * bitcast-convert): what lower_elementwise takes and deferral folds. */
bool lower_is_elem(const ir_inst *in);
/* The literal of the scalar constant instruction i is, or broadcasts;
 * NULL otherwise (a splat: an immediate in elementwise programs). */
const ir_literal *lower_splat(lctx *x, ir_id i);
/* Elementwise instruction i and its deferred operands as one program;
 * the operand edges it read go to x->pending. */
void lower_elementwise(lctx *x, ir_id i);

/* lower_prologue.c: converts between f32 and bf16 read only by one-pass
 * dots, not materialised (the dots read the operand's buffer and round it
 * as the MXU does). lower_plan_prologues decides for every convert of x's
 * computation that a dot reads (uses of i: ulist[uoff[i] .. uoff[i+1])),
 * after deferral; lower_prologue lowers convert i when it was fused (its
 * value an alias of its operand's buffer, of the operand's type) and
 * returns true; false (after explaining why, when a dot reads it) when it
 * is materialised as usual. */
extern const char lower_prologue_fused[];
void lower_plan_prologues(lctx *x, const int32_t *uoff, const int32_t *ulist);
bool lower_prologue(lctx *x, ir_id i);

/* lower_ops.c */
/* The MXU passes of float dot or convolution in of computation c, from
 * its operands' IR types (not their buffers'): 1 when both are bf16 or
 * the precision (its operand_precision and the options') is DEFAULT, 3
 * at HIGH, 6 at HIGHEST. */
int lower_mxu_passes(const lctx *x, const ir_comp *c, const ir_inst *in);
void lower_dot(lctx *x, ir_id i);
/* A dot of the entry whose result only feeds one-pass dots (the fused
 * attention's Q, K, V: lower_bf16_store) stores it rounded to bf16 from
 * its matmul's epilogue: the bits those dots would round it to, half the
 * bytes. false (nothing emitted) otherwise. */
bool lower_dot_bf16(lctx *x, ir_id i);
/* A pointwise convolution as one matmul on the buffers as they lie;
 * false (nothing emitted) when it is not one (lower_conv then). */
bool lower_pointwise_conv(lctx *x, ir_id i);
/* Dot i with the elementwise program e applied to its result tiles in
 * VMEM (e's input dot_in is the dot; tk_matmul_epi's contract), storing
 * e's output at out; false, emitting nothing, when that plan does not
 * apply (the caller lowers the dot and e separately). */
bool lower_dot_epilogue(lctx *x, ir_id i, const tk_elem *e, int dot_in, uint64_t out,
                        const bool *row);
/* Convolution i with the elementwise program e applied to its result
 * tiles in VMEM (lower_dot_epilogue's contract; e's input conv_in is the
 * convolution): one pass of float operands into f32, one group, the
 * output laid out [batch, spatial..., feature] (the matmul's C as it
 * lies), the gathered patches' resident plan; false, emitting nothing,
 * otherwise (after explaining why). */
bool lower_conv_epilogue(lctx *x, ir_id i, const tk_elem *e, int conv_in, uint64_t out,
                         const bool *row);
/* Whether instruction i of the entry computation may be stored as bf16:
 * f32, not the root, and every use a dot with one bf16 pass (DEFAULT
 * precision here and in the options), directly or as a parameter of a
 * loop/input/output fusion used there only by such dots, or of an
 * attention fusion that lower_attention_takes (its Q, K, V). Those dots
 * round the value to bf16 (RNE) anyway, so storing it rounded gives the
 * same bits and halves its HBM traffic. */
bool lower_bf16_store(const lctx *x, ir_id i);
void lower_conv(lctx *x, ir_id i);
void lower_reduce(lctx *x, ir_id i);
/* Whether a reduction of R elements into each of O outputs folds as a
 * tree of partial accumulators (lower_reduce's order for an associative
 * reducer) rather than row by row: many rows into few outputs. */
bool lower_tree_fold(int64_t R, int64_t O);
void lower_reduce_window(lctx *x, ir_id i);
/* lower_gather.c: the indexing ops. */
void lower_select_and_scatter(lctx *x, ir_id i);
void lower_dynamic_slice(lctx *x, ir_id i);
void lower_dynamic_update_slice(lctx *x, ir_id i);
void lower_gather(lctx *x, ir_id i);
void lower_scatter(lctx *x, ir_id i);
/* lower_sort.c: sort, and topk or the TopK custom-call (the evaluator's
 * merge sort per row, on the scalar and vector units). */
void lower_sort(lctx *x, ir_id i);
void lower_topk(lctx *x, ir_id i);
/* rows.c: row kernels (reductions over the trailing dims with their
 * elementwise producers and consumers, row blocks in VMEM). Whether reduce
 * red of an operand of shape os takes the row kernel (f32 add, maximum or
 * minimum over exactly the trailing dims; an add of R >= 4096 elements into
 * O < 1024 outputs folds as a tree instead); reduce i by the row kernel,
 * false (nothing emitted) when it does not apply; fusion instruction i as
 * one row kernel, false (nothing emitted) when its computation is not a
 * row program or 8 rows do not fit VMEM. */
bool lower_rows_applies(const ir_module *m, const ir_inst *red, const ir_shape *os);
bool lower_row_reduce(lctx *x, ir_id i);
bool lower_rows_fusion(lctx *x, ir_id i, bool out_bf16);
/* pass_target.row_reduce_refusal for target t (passes/passes.h). */
const char *lower_rows_refusal(const tgt_target *t, ir_op op, int64_t R, int64_t O, arena *a);

/* attention.c: fusion instruction i (kCustom) as one fused attention
 * kernel, the scores kept in VMEM, its f32 result stored rounded to bf16
 * when out_bf16 (lower_bf16_store); false, emitting nothing, when its
 * computation is not the pattern or the plan does not fit the target
 * (the caller then lowers the computation as it is). */
bool lower_attention(lctx *x, ir_id i, bool out_bf16);
/* Whether lower_attention will run fusion instruction i as the kernel,
 * whatever its operands' storage (f32, or bf16: it reads both). */
bool lower_attention_takes(const lctx *x, ir_id i);
/* pass_target.attention_refusal for target t (passes/passes.h). */
const char *lower_attention_refusal(const tgt_target *t, int64_t rows, int64_t sk, arena *a,
                                    const char **out_plan);

#endif
