/* lower.h: private interface between the .tg lowering core (lower.c,
 * values.c) and the builtin handlers (ops_core.c, ops_nn.c).
 *
 * A lowering context owns one computation being built. Expressions lower
 * to values (tv): a tensor (an instruction id), a weak literal (numbers
 * written in the source that take their element type from the other
 * operand), several results of an inlined graph call, or an error that
 * has already been reported (errors never cascade: every helper passes
 * TV_ERR through silently). */
#ifndef TPUCC_FE_TG_LOWER_H
#define TPUCC_FE_TG_LOWER_H

#include "frontend/tg/tg.h"

typedef enum tv_kind { TV_ERR, TV_TENSOR, TV_LIT, TV_MULTI } tv_kind;

typedef struct tv {
  tv_kind k;
  ir_id id;          /* TV_TENSOR */
  /* TV_LIT: row-major values; rank 0 is a scalar */
  int rank;
  int64_t dims[IR_MAX_RANK];
  int64_t n;
  double *vals;
  bool all_int, is_bool;
  /* TV_MULTI */
  int nmulti;
  ir_id *multi;
} tv;

typedef struct tg_glob tg_glob;
typedef struct tg_frame tg_frame;

typedef struct binding {
  const char *name;
  src_loc loc;       /* where it was bound (a capture: where the original was) */
  tv v;
  bool used, is_param;
  bool is_var;       /* declared by var: assignments may replace v */
  bool is_counter;   /* a for loop's variable */
  tg_frame *frame;   /* a capture: the outer value as slot `slot` of frame */
  int slot;
} binding;

/* A block of statements: the names bound in it, the enclosing block, and
 * the computation its values live in. The top block of a computation
 * made for a loop or a branch has a frame: a name found only above it is
 * captured (stmts.c). Each graph body starts with a block of its own
 * (up NULL): an inlined graph sees only its parameters. */
typedef struct tg_scope tg_scope;
struct tg_scope {
  strmap *env;       /* name -> index into lctx.binds */
  tg_scope *up;
  tg_frame *frame;
  int fc;            /* with frame: which of its computations */
  ir_comp_id comp;
};

typedef struct lctx {
  tg_parser *p;
  tg_glob *g;
  ir_module *m;
  ir_comp_id comp;
  const char *file;        /* interned in m's arena */
  bool quiet;              /* inlining a graph already checked: no reports */
  int errors;              /* errors met in this context (reported or not) */
  const char *path;        /* metadata op_name prefix: "mlp" or "mlp/block" */
  const char *cur_op;      /* builtin being lowered, for metadata */
  int depth;               /* expression nesting */
  tg_scope *scope;         /* innermost block */
  VEC(binding) binds;
  ir_comp_id reducers[8][IR_TYPE_INVALID]; /* scalar to_apply computations, +1 */
} lctx;

/* ---- diagnostics ------------------------------------------------------ */
void lerr(lctx *L, src_loc loc, const char *fmt, ...) BASE_PRINTF(3, 4);
void lnote(lctx *L, src_loc loc, const char *fmt, ...) BASE_PRINTF(3, 4);
/* A nesting limit: reported even while inlining (the depth counts the
 * inlined graphs, so a graph that checked alone can hit it there). */
void llimit(lctx *L, src_loc loc, const char *fmt, ...) BASE_PRINTF(3, 4);
/* A note saying where a named operand came from and its shape. */
void lnote_origin(lctx *L, const tg_node *operand);
/* Shape spelling for messages ("f32[64,784]"), in m's arena. */
const char *lshape_str(lctx *L, const ir_shape *s);

/* ---- building instructions ------------------------------------------- */
/* Infers the shape (prefill: the result shape for broadcast, reshape,
 * iota, convert, ...) and appends the instruction; reports "what: reason"
 * at loc and returns IR_NONE when the shape does not check. */
ir_id lemit(lctx *L, ir_op op, const ir_id *ops, int nops, const ir_attrs *a,
            const ir_comp_id *calls, int ncalls, const ir_shape *prefill,
            src_loc loc, const char *what);
ir_id lconst(lctx *L, ir_literal *lit, src_loc loc);
ir_id lscalar(lctx *L, ir_type t, double v, src_loc loc);
const ir_shape *lshape(lctx *L, ir_id id);
ir_id lreshape(lctx *L, ir_id x, int rank, const int64_t *dims, src_loc loc);
ir_id lconvert(lctx *L, ir_id x, ir_type t, src_loc loc);
ir_id lbroadcast_to(lctx *L, ir_id x, int rank, const int64_t *dims, src_loc loc);
/* A scalar of type t broadcast to dims (zeros, ones, full, masks). */
ir_id lfill(lctx *L, ir_type t, double v, int rank, const int64_t *dims, src_loc loc);
ir_id lunary(lctx *L, ir_op op, ir_id x, src_loc loc);
ir_id ltranspose(lctx *L, ir_id x, const int64_t *perm, src_loc loc);

/* ---- values ----------------------------------------------------------- */
tv tv_err(void);
tv tv_tensor(ir_id id);
/* Gives a weak literal the element type t (checks integrality for ints and
 * 0/1 for pred); tensors pass through. */
tv tv_to_type(lctx *L, tv v, ir_type t, src_loc loc);
/* A value as one tensor: literals get their default type (s32 for
 * integers, f32 otherwise, pred for booleans); IR_NONE on error. */
ir_id tv_id(lctx *L, tv v, src_loc loc);
tv lower_expr(lctx *L, const tg_node *n);
ir_id lower_tensor(lctx *L, const tg_node *n);

/* Elementwise binary op with numpy broadcasting; literals adopt the other
 * operand's type; operand types must agree. dir is used by compare. */
tv lbinary(lctx *L, ir_op op, ir_cmp_dir dir, tv a, tv b, src_loc loc,
           const char *what, const tg_node *na, const tg_node *nb);
/* Shorthands for composites: id op id, id op constant. */
ir_id lbin(lctx *L, ir_op op, ir_id a, ir_id b, src_loc loc);
ir_id lbinc(lctx *L, ir_op op, ir_id a, double c, src_loc loc);
ir_id lcmp(lctx *L, ir_cmp_dir dir, ir_id a, ir_id b, src_loc loc);
/* Checks that element type t suits op (float-only, int-only, pred). */
bool lcheck_type(lctx *L, ir_op op, ir_type t, src_loc loc, const char *what);
/* dot with batch dimensions 0..nbatch-1 on both sides, contracting lhs
 * dimension lc with rhs dimension rc. */
ir_id ldot(lctx *L, ir_id a, ir_id b, int nbatch, int lc, int rc, ir_type preferred, src_loc loc);
/* Broadcast shape of two dims lists (numpy rules); false after reporting. */
bool lbroadcast_shape(lctx *L, const ir_shape *a, const ir_shape *b, int *rank,
                      int64_t *dims, src_loc loc, const char *what);

/* Reductions: kind is one of the R_* below; axes already normalised. */
enum { R_SUM, R_PROD, R_MAX, R_MIN, R_AND, R_OR };
ir_id lreduce(lctx *L, ir_id x, int kind, const int64_t *axes, int naxes,
              bool keepdims, src_loc loc, const char *what);
/* The scalar computation (lhs, rhs) -> combine, made once per kind and
 * type in the module; loc is the first reduction that needs it. */
ir_comp_id lreducer(lctx *L, int kind, ir_type t, src_loc loc);
/* The identity of a reduction for type t (-inf for max on floats, ...). */
double lreduce_init(int kind, ir_type t);

/* ---- static (compile-time) arguments ---------------------------------- */
bool st_int(lctx *L, const tg_node *n, const char *what, int64_t *out);
/* A list of ints ([1, 2]); a single int is a one-element list. */
bool st_ints(lctx *L, const tg_node *n, const char *what, int64_t *out, int *nout, int max);
bool st_float(lctx *L, const tg_node *n, const char *what, double *out);
bool st_bool(lctx *L, const tg_node *n, const char *what, bool *out);
bool st_str(lctx *L, const tg_node *n, const char *what, const char **out);
bool st_type(lctx *L, const tg_node *n, const char *what, ir_type *out);
/* A type with dimensions (f32[2,3]; a bare f32 is a scalar). */
bool st_shape(lctx *L, const tg_node *n, const char *what, ir_shape *out);
/* Normalises an axis (negative counts from the end); reports at n. */
bool st_axis(lctx *L, const tg_node *n, const char *what, int64_t ax, int rank, int64_t *out);
/* Axes list (default: all when n is NULL), normalised, sorted, unique. */
bool st_axes(lctx *L, const tg_node *n, const char *what, int rank, int64_t *out, int *nout);

/* ---- builtins --------------------------------------------------------- */
typedef struct tg_builtin tg_builtin;
typedef tv (*tg_handler)(lctx *L, const tg_node *call, tg_node **arg,
                         const tg_nodes *rest, const tg_builtin *b);
struct tg_builtin {
  const char *name;
  const char *spec;  /* "x,axes?,keepdims?"; '*' first: variadic positionals */
  tg_handler fn;
  ir_op op;
  int aux;
};
#define B(name, spec, fn, op, aux)                                              \
  tv fn(lctx *L, const tg_node *call, tg_node **arg, const tg_nodes *rest,      \
        const tg_builtin *b);
#include "frontend/tg/builtins.def"
#undef B
const tg_builtin *fe_tg_builtin(const char *name);
/* The builtin name closest to name (for "did you mean"), or NULL. */
const char *fe_tg_builtin_suggest(const char *name);

/* ---- names and statements (lower.c, stmts.c) ---------------------------- */
enum { TG_MAX_DEPTH = 200 }; /* expressions and blocks nested in each other */
/* Binds name in the innermost block; returns the binding's index. */
int fe_tg_bind(lctx *L, const char *name, src_loc loc, tv v);
/* The binding name denotes in the innermost block, or -1; a tensor bound
 * outside the computation being built is captured into it (stmts.c). */
int fe_tg_lookup(lctx *L, const char *name);
/* The same without capturing: whether name is visible at all, for
 * messages; -1 past a computation's top block when stop is set. */
int fe_tg_visible(lctx *L, const char *name, bool stop);
/* The shape a TG_TYPE node spells; false when it is too large. */
bool fe_tg_type_shape(const tg_node *t, ir_shape *out);
/* Lowers one statement other than return (stmts.c). */
void fe_tg_stmt(lctx *L, const tg_stmt *st);
/* if P then X else Y (stmts.c). */
tv fe_tg_if_expr(lctx *L, const tg_node *n);

/* ---- graphs as values (lower.c) ---------------------------------------- */
const tg_graph *fe_tg_graph(lctx *L, int gi);
/* Lowers the arguments an[0..] of a call to g into args, checking each
 * against its parameter's type (number literals take it); false after
 * reporting. */
bool fe_tg_graph_args(lctx *L, const tg_graph *g, const tg_node *const *an, tv *args);
/* Graph gi, checked, lowered as a computation of L's module of its own
 * (not the entry, not inlined), for grad and value_and_grad; IR_NONE
 * after an error (reported at at, or where the graph is defined). */
ir_comp_id fe_tg_graph_own_comp(lctx *L, const tg_node *at, int gi);

/* Lowers a call to a builtin: binds arguments to b->spec and runs it. */
tv lower_builtin(lctx *L, const tg_node *call, const tg_builtin *b);
/* Index of the graph called name, or -1 (lower.c). */
int fe_tg_graph_index(lctx *L, const char *name);
/* Lowers graph gi into a computation of its own (not inlined: the body of
 * a loop or a branch): one tuple parameter of the n shapes st, bound to
 * the graph's parameters in order; the root is the tuple of its results,
 * or with one result that result itself unless as_tuple. IR_NONE after
 * reporting (lower.c). */
ir_comp_id fe_tg_graph_comp(lctx *L, const tg_node *where, int gi, const ir_shape *st, int n,
                            bool as_tuple);
/* Inlines a call to graph gi (lower.c). */
tv fe_tg_call_graph(lctx *L, const tg_node *call, int gi);
/* numpy take of x along axis at the integer tensor of node nidx (an XLA
 * gather; ops_index.c); what names the construct in errors. */
tv fe_tg_take(lctx *L, const tg_node *where, ir_id x, const tg_node *nidx, int64_t axis, const char *what);
/* numpy matmul of a and b (ops_core.c); preferred: accumulation type or
 * IR_TYPE_INVALID. */
tv fe_tg_matmul(lctx *L, const tg_node *where, tv a, tv b, const tg_node *na,
                const tg_node *nb, ir_type preferred);

#endif
