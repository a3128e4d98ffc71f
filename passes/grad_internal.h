/* grad_internal.h: what the VJP rules share (private to passes/grad*.c;
 * prefix gr_). The transformation (grad.c) appends a backward pass to a
 * copy of the entry computation; each rule reads forward values through
 * gr_fwd (which recomputes them under remat) and adds its contributions to
 * its operands' adjoints with gr_accum. Builders make well-typed
 * instructions at the location of the instruction whose rule runs. */
#ifndef TPUCC_PASSES_GRAD_INTERNAL_H
#define TPUCC_PASSES_GRAD_INTERNAL_H

#include "passes/grad.h"
#include "passes/rewrite.h"

typedef struct gr_ctx {
  ir_module *m;
  ir_comp_id c;
  int nfwd;        /* instructions [0, nfwd) are the forward section */
  uint8_t *active; /* per forward instruction: depends on a wrt parameter */
  ir_id *adj;      /* per forward array instruction: its adjoint, or IR_NONE (zero) */
  ir_id **adjt;    /* per forward tuple instruction: element adjoints (IR_NONE: zero) */
  bool remat;
  ir_id *recomp;   /* remat: the backward pass's copy of a forward value */
  ir_comp_id add_comp[IR_TYPE_INVALID]; /* scalar add computations by type (IR_NONE: not yet made) */
  src_loc loc;     /* of the instruction whose rule runs */
  ir_id cur;       /* that instruction */
  char *err;
  size_t errlen;
  base_status st;
} gr_ctx;

/* A rule: adds the contributions of instruction i, whose adjoint is ct
 * (IR_NONE for a tuple-shaped i: read g->adjt[i]), to its operands.
 * Returns false after gr_fail. */
typedef bool (*gr_rule_fn)(gr_ctx *g, ir_id i, ir_id ct);
gr_rule_fn gr_rule_of(ir_op op);

/* The rule groups (one file each). */
bool gr_elementwise(gr_ctx *g, ir_id i, ir_id ct);  /* grad_rules.c */
bool gr_dot(gr_ctx *g, ir_id i, ir_id ct);          /* grad_dot.c */
bool gr_convolution(gr_ctx *g, ir_id i, ir_id ct);  /* grad_conv.c */
bool gr_reduce(gr_ctx *g, ir_id i, ir_id ct);       /* grad_reduce.c */
/* A reduce (any number of operands) whose reducer selects: each
 * floating-point result asked for is select(p, a_k, b_k) of its inputs
 * (grad_argreduce.c); gr_reducer_selects tells whether all n results of
 * reducer c are. */
bool gr_reduce_select(gr_ctx *g, ir_id i, ir_id ct);
bool gr_reducer_selects(const ir_module *m, ir_comp_id c, int n);
bool gr_dynamic_slice(gr_ctx *g, ir_id i, ir_id ct);        /* grad_index.c */
bool gr_dynamic_update_slice(gr_ctx *g, ir_id i, ir_id ct); /* grad_index.c */
bool gr_gather(gr_ctx *g, ir_id i, ir_id ct);               /* grad_index.c */
bool gr_reduce_window(gr_ctx *g, ir_id i, ir_id ct); /* grad_reduce.c */
bool gr_while(gr_ctx *g, ir_id i, ir_id ct);       /* grad_control.c */
bool gr_conditional(gr_ctx *g, ir_id i, ir_id ct); /* grad_control.c */
bool gr_sort(gr_ctx *g, ir_id i, ir_id ct);        /* grad_sort.c */
/* topk, and the TopK custom-call (dispatched by grad.c) */
bool gr_topk(gr_ctx *g, ir_id i, ir_id ct);        /* grad_topk.c */

/* The one binary op (add, maximum, minimum, multiply) a reducer
 * computation applies to its two parameters, or IR_OP__COUNT when it is
 * anything else (grad_reduce.c). */
ir_op gr_reducer_op(const ir_module *m, ir_comp_id c);
bool gr_scatter(gr_ctx *g, ir_id i, ir_id ct); /* grad_index.c */
bool gr_select_and_scatter(gr_ctx *g, ir_id i, ir_id ct); /* grad_select.c */
/* Window offset o (row-major over the window's sizes) of a rank-r window
 * w whose results have dims ydims over an operand padded to lengths plen:
 * the strided slice start/limit/stride of the padded operand holding the
 * element at that offset of every window, and the padding back that puts
 * a result-shaped value there (grad_reduce.c). */
void gr_window_offset(const ir_window *w, int r, int64_t o, const int64_t *ydims, const int64_t *plen,
                      int64_t *start, int64_t *limit, int64_t *stride, ir_padding_dim *back);

/* Reports ST_UNSUPPORTED at the current instruction: "file:line:col:
 * 'NAME' (op): <message>". Returns false. */
bool gr_fail(gr_ctx *g, const char *fmt, ...) BASE_PRINTF(2, 3);

/* The current computation's instruction id's shape and op (stable: shapes
 * are interned). */
const ir_shape *gr_shape(const gr_ctx *g, ir_id x);
const ir_inst *gr_inst(const gr_ctx *g, ir_id x);
/* Operand k of forward instruction i, as the backward pass reads it. */
ir_id gr_operand(gr_ctx *g, ir_id i, int k);
/* Forward value x as the backward pass reads it: x itself, or under remat
 * its recomputed copy (parameters and constants are read as they are). */
ir_id gr_fwd(gr_ctx *g, ir_id x);
/* Whether forward instruction x wants an adjoint (it is active). */
bool gr_wants(const gr_ctx *g, ir_id x);
/* The element adjoints of tuple-shaped forward instruction t (made on
 * first use, every element IR_NONE: zero). */
ir_id *gr_tuple_adj(gr_ctx *g, ir_id t);
/* Adds contribution v (x's shape) to the adjoint of forward instruction
 * x; nothing when x is not active. */
void gr_accum(gr_ctx *g, ir_id x, ir_id v);

/* ---- builders (shapes inferred; dies on an ill-typed request) ---------- */
ir_id gr_build(gr_ctx *g, ir_op op, const ir_id *ops, int nops, const ir_attrs *a);
/* Parameter k of shape s (default layout) named from name. */
ir_id gr_param(gr_ctx *g, const ir_shape *s, int k, const char *name);
/* Element k of tuple value t. */
ir_id gr_gte(gr_ctx *g, ir_id t, int k);
ir_id gr_un(gr_ctx *g, ir_op op, ir_id x);
ir_id gr_bin(gr_ctx *g, ir_op op, ir_id x, ir_id y);
ir_id gr_select(gr_ctx *g, ir_id p, ir_id x, ir_id y);
ir_id gr_cmp(gr_ctx *g, ir_cmp_dir dir, ir_id x, ir_id y);
/* A constant holding lit (in the module's arena). */
ir_id gr_constant(gr_ctx *g, ir_literal *lit);
/* A constant of shape s (type and dims) with every element v. */
ir_id gr_splat(gr_ctx *g, const ir_shape *s, double v);
/* gr_splat with x's shape. */
ir_id gr_like(gr_ctx *g, ir_id x, double v);
ir_id gr_convert(gr_ctx *g, ir_id x, ir_type t);
ir_id gr_reshape(gr_ctx *g, ir_id x, const ir_shape *s);
/* Broadcast x to shape s (s's type is replaced by x's), x dim k to s dim dims[k]. */
ir_id gr_broadcast(gr_ctx *g, ir_id x, const ir_shape *s, const int64_t *dims);
/* Transpose (result dim k = x dim perm[k]); x itself for the identity. */
ir_id gr_transpose(gr_ctx *g, ir_id x, const int64_t *perm);
/* The sum of x over dims (any order); x itself when n is 0. */
ir_id gr_sum(gr_ctx *g, ir_id x, const int64_t *dims, int n);
/* The sum of every element of x (a scalar). */
ir_id gr_sum_all(gr_ctx *g, ir_id x);
ir_id gr_pad(gr_ctx *g, ir_id x, ir_id v, const ir_padding_dim *p);
ir_id gr_slice(gr_ctx *g, ir_id x, const int64_t *start, const int64_t *limit, const int64_t *stride);
/* The scalar add computation of type t (made once per module). */
ir_comp_id gr_add_comp(gr_ctx *g, ir_type t);

#endif
