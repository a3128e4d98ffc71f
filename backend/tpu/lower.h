/* lower.h: private to backend/tpu: values of the lowering (HBM buffers
 * with reference counts) and the per-op lowerings split over lower*.c. */
#ifndef TPUCC_BACKEND_TPU_LOWER_H
#define TPUCC_BACKEND_TPU_LOWER_H

#include "backend/tpu/tb.h"

/* An HBM buffer shared by the values that alias it (reshape, copy,
 * get-tuple-element); freed when the last reference goes. Parameters and
 * constants are not owned (never freed). */
typedef struct hbuf {
  uint64_t addr, bytes;
  int refs;
  bool owned;
} hbuf;

typedef struct tval tval;
struct tval {
  bool tuple;
  int n;          /* tuple: elements */
  tval **elems;
  hbuf *buf;      /* array: its storage (row-major, internal element type) */
  ir_type type;   /* IR element type */
  int rank;
  int64_t dims[IR_MAX_RANK];
  int64_t count;
};

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
  ir_id epi_dot;      /* kOutput fusion: the dot lowered with the root's
                         elementwise program as its epilogue, or IR_NONE */
  bool *row_bcast;    /* broadcasts of an [N] vector read as rows there */
  bool root_bf16;     /* an f32 elementwise root is stored as bf16 */
};

int tv_esize(ir_type t);   /* bytes per element in HBM inside the program */
tval *tv_new(lctx *x, ir_type t, int rank, const int64_t *dims);
tval *tv_alias(lctx *x, const tval *v, ir_type t, int rank, const int64_t *dims);
void tv_release(lctx *x, tval *v);
void tv_strides(const tval *v, int64_t *st); /* row-major strides, elements */
uint64_t tv_addr(const tval *v);

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
/* Internal 32-bit register bits of element idx of a literal. */
uint32_t lit_bits(const ir_literal *l, int64_t idx);

/* A constant's value (placed in the image's CONST section by compile.c). */
tval *tpu_const_value(lctx *x, const ir_literal *l);

/* lower_ops.c */
void lower_dot(lctx *x, ir_id i);
/* Dot i with the elementwise program e applied to its result tiles in
 * VMEM (e's input dot_in is the dot; tk_matmul_epi's contract), storing
 * e's output at out; false, emitting nothing, when that plan does not
 * apply (the caller lowers the dot and e separately). */
bool lower_dot_epilogue(lctx *x, ir_id i, const tk_elem *e, int dot_in, uint64_t out,
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
/* rows.c: row kernels (reductions over the trailing dims with their
 * elementwise producers and consumers, row blocks in VMEM). Whether reduce
 * red of an operand of shape os takes the row kernel (f32 add, maximum or
 * minimum over exactly the trailing dims; an add of R >= 4096 elements into
 * O < 1024 outputs folds as a tree instead); reduce i by the row kernel,
 * false (nothing emitted) when it does not apply; fusion instruction i as
 * one row kernel, false (nothing emitted) when its computation is not a
 * row program or 8 rows do not fit VMEM. */
bool lower_rows_applies(const ir_module *m, const ir_inst *red, const ir_shape *os);
/* pass_target.row_reduce_refusal for target t (passes/passes.h). */
const char *tpu_row_reduce_refusal(const tgt_target *t, ir_op op, int64_t R, int64_t O,
                                   arena *a);
bool lower_row_reduce(lctx *x, ir_id i);
bool lower_rows_fusion(lctx *x, ir_id i, bool out_bf16);
/* Casts f32/bf16 to bf16 parts for the MXU: parts[p] (count elements each). */
void lower_split_bf16(lctx *x, const tval *v, int nparts, tval **parts);
/* Converts (elementwise) v to type t; a new value. */
tval *lower_convert(lctx *x, const tval *v, ir_type t);
/* out = copy of v padded: lo/hi/interior per dim, value from scalar pv. */
tval *lower_pad(lctx *x, const tval *v, const tval *pv, const ir_padding_dim *pd, ir_type t);
/* Permutes dims: result dim k = v dim perm[k]. */
tval *lower_transpose(lctx *x, const tval *v, const int64_t *perm);

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
const char *tpu_attention_refusal(const tgt_target *t, int64_t rows, int64_t sk, arena *a,
                                  const char **out_plan);

#endif
