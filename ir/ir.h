/* ir.h: the one interface of ir/: HLO-style modules, computations,
 * instructions, shapes, literals, and the facilities over them (printer,
 * verifier, shape inference, reference evaluator, tensor I/O).
 *
 * Representation (QBE/SQLite style): a module owns an arena; computations
 * live in an array indexed by ir_comp_id; each computation holds its
 * instructions in an array indexed by ir_id, in definition order (operands
 * always precede users after ir_comp_topo_sort). Operands and called
 * computations are small integer ids, never pointers, so passes can copy
 * and rewrite freely. Everything a module points to lives in its arena.
 * Nothing here is thread-safe; distinct modules may be used by distinct
 * threads. */
#ifndef TPUCC_IR_H
#define TPUCC_IR_H

#include "base/base.h"
#include "tpucc.h" /* the core element types */

/* ---- element types --------------------------------------------------- */

/* X(NAME, "spelling", bytes). The first thirteen are libtpucc's element
 * types (TPUCC_DTYPE_LIST, include/tpucc.h), with the same values: the
 * types interp and cpu run (the TPU targets run a subset, see
 * backend/tpu). The rest import, print and verify (complex, sub-byte
 * integers stored one per byte, and the token of side-effect ordering,
 * which has no bytes), and a target that cannot run one reports a located
 * error. New types are appended. */
#define IR_ELEM_TYPES(X)                                                     \
  TPUCC_DTYPE_LIST(X)                                                        \
  X(S4, "s4", 1) X(U4, "u4", 1) X(C64, "c64", 8) X(C128, "c128", 16)          \
  X(TOKEN, "token", 0)

typedef enum ir_type {
#define X(e, s, n) IR_##e,
  IR_ELEM_TYPES(X)
#undef X
  IR_TUPLE, /* shape is a tuple of shapes */
  IR_TYPE_INVALID
} ir_type;

const char *ir_type_name(ir_type t);           /* "f32"; "tuple" */
int ir_type_size(ir_type t);                   /* bytes per element */
bool ir_type_is_float(ir_type t);              /* bf16, f16, f32, f64 */
bool ir_type_is_int(ir_type t);                /* s4..s64, u4..u64 */
bool ir_type_is_unsigned(ir_type t);           /* u4..u64 */
bool ir_type_is_complex(ir_type t);            /* c64, c128 */
/* The element types of libtpucc's list (pred, s8, s32, bf16, f16, f32,
 * s16, s64, u8, u16, u32, u64, f64), which interp and cpu run; tuples are
 * not element types. */
bool ir_type_is_core(ir_type t);
/* Looks up a spelling; returns IR_TYPE_INVALID when unknown. */
ir_type ir_type_from_name(const char *s, size_t len);
/* The libtpurt and .tpub number of a core type (TPURT_F32 for IR_F32), 0
 * for any other type; and back, IR_TYPE_INVALID for a number of no core
 * type. */
int ir_type_tpurt_code(ir_type t);
ir_type ir_type_of_tpurt_code(int code);

/* Exact conversions: f32 -> bf16/f16 round to nearest even (NaN stays NaN,
 * overflow goes to infinity); widening is exact. */
uint16_t ir_f32_to_bf16(float f);
float ir_bf16_to_f32(uint16_t h);
uint16_t ir_f32_to_f16(float f);
float ir_f16_to_f32(uint16_t h);

/* ---- shapes ---------------------------------------------------------- */

/* IR_MAX_RANK bounds every shape (XLA's tests use rank 9); a tile's rank is
 * bounded apart, by IR_MAX_TILE_RANK, to keep layouts small. */
enum { IR_MAX_RANK = 12, IR_MAX_TILES = 4, IR_MAX_TILE_RANK = 8 };
#define IR_TILE_COMBINE (-1) /* a '*' tile dimension */

typedef struct ir_tile {
  int8_t rank;
  int64_t dims[IR_MAX_TILE_RANK];
} ir_tile;

/* The physical layout: minor_to_major is a permutation of 0..rank-1;
 * tiles as in XLA's tiled layout ("{1,0:T(8,128)(2,1)}"); memory_space as
 * S(n); element_bits as E(n) (0 = natural). */
typedef struct ir_layout {
  int8_t minor_to_major[IR_MAX_RANK];
  int8_t ntiles;
  ir_tile tiles[IR_MAX_TILES];
  int32_t memory_space;
  int32_t element_bits;
} ir_layout;

typedef struct ir_shape ir_shape;
struct ir_shape {
  ir_type type;
  int8_t rank;         /* arrays only */
  int32_t ntuple;      /* IR_TUPLE only: element count */
  int64_t dims[IR_MAX_RANK];
  const ir_layout *layout; /* arrays: NULL is the default layout (row-major,
                              untiled, natural bits, memory space 0); else
                              immutable, owned by an arena or static */
  ir_shape *tuple;     /* IR_TUPLE only: elements, in the module's arena */
};

/* The default layout of a rank-r array: minor_to_major r-1..0, no tiles. */
const ir_layout *ir_layout_default(int rank);
/* The layout of array shape s, the default one when s->layout is NULL. */
static inline const ir_layout *ir_shape_layout(const ir_shape *s) {
  return s->layout ? s->layout : ir_layout_default(s->rank);
}
/* Sets s->layout to a copy of l in arena a, or to NULL when l is the
 * default layout for s's rank (so equal layouts compare equal by value). */
void ir_shape_set_layout(arena *a, ir_shape *s, const ir_layout *l);

/* Makes an array shape with the default (row-major, untiled) layout. */
ir_shape ir_shape_array(ir_type t, int rank, const int64_t *dims);
ir_shape ir_shape_scalar(ir_type t);
/* Gives s the default layout (layout = NULL). */
void ir_shape_default_layout(ir_shape *s);
bool ir_shape_is_array(const ir_shape *s);
/* Element count; false when it overflows int64 or exceeds IR_MAX_ELEMENTS. */
#define IR_MAX_ELEMENTS ((int64_t)1 << 40)
bool ir_shape_elements(const ir_shape *s, int64_t *out);
/* Element count of an array shape known to be valid. */
int64_t ir_shape_count(const ir_shape *s);
/* Same type and dims (and same tuple structure); layouts ignored. */
bool ir_shape_equal(const ir_shape *a, const ir_shape *b);
/* Same as ir_shape_equal and also same layout. */
bool ir_shape_equal_with_layout(const ir_shape *a, const ir_shape *b);
/* Deep copy of tuple elements and layouts into arena a. */
ir_shape ir_shape_clone(arena *a, const ir_shape *s);
/* Appends the HLO spelling ("f32[2,3]{1,0}" or "(f32[], s32[4])"). */
void ir_shape_print(strbuf *b, const ir_shape *s, bool with_layout);
/* The same without layout into buf (n bytes, truncated); returns buf. */
const char *ir_shape_str(char *buf, size_t n, const ir_shape *s);
/* The same as XLA's printer writes it in a module: before every fifth
 * element of a tuple, a comment giving its index ("index=5" in a C
 * comment). */
void ir_shape_print_indexed(strbuf *b, const ir_shape *s, bool with_layout);
/* Appends the layout of array shape s as XLA spells it ("{1,0:T(8,128)(2,1)}");
 * nothing for a scalar without tiles, memory space or element bits. */
void ir_layout_print(strbuf *b, const ir_shape *s);

/* ---- literals -------------------------------------------------------- */

/* A dense value: array elements in row-major (logical) order, whatever
 * the shape's layout; pred as uint8 0/1, s8 int8, s32 int32, bf16 and f16
 * as uint16 bits, f32 float. A tuple literal holds element literals. */
typedef struct ir_literal ir_literal;
struct ir_literal {
  ir_shape shape;
  void *data;          /* arrays: ir_shape_count * ir_type_size bytes */
  size_t nbytes;
  ir_literal **elems;  /* tuples: shape.ntuple elements */
};

/* Allocates a zero-filled literal of shape s in arena a, or NULL (with
 * ST_RESOURCE_EXHAUSTED semantics) when the byte size exceeds limit. */
ir_literal *ir_literal_create(arena *a, const ir_shape *s);
/* The same, but NULL also when the host has no memory for it, so that
 * callers report an allocation failure instead of dying (ir/tensor_io.c).
 * What was allocated before a failure stays in a. */
ir_literal *ir_literal_try_create(arena *a, const ir_shape *s);
/* Element access as double / int64 (for tests, printing and the evaluator's
 * slow paths); idx is the row-major linear index. */
double ir_literal_get_f64(const ir_literal *l, int64_t idx);
int64_t ir_literal_get_i64(const ir_literal *l, int64_t idx);
/* Stores with conversion to the literal's type (RNE for floats, wrap for
 * ints, nonzero -> 1 for pred). */
void ir_literal_set_f64(ir_literal *l, int64_t idx, double v);
void ir_literal_set_i64(ir_literal *l, int64_t idx, int64_t v);
/* Bitwise equality of shape (ignoring layout) and data. */
bool ir_literal_equal(const ir_literal *a, const ir_literal *b);
/* Prints in HLO constant syntax: "{ {1, 2}, {3, 4} }", scalars bare,
 * tuples "( ... )". Floats print shortest round-trip; inf, -inf, nan. */
void ir_literal_print(strbuf *b, const ir_literal *l);

/* ---- instructions ---------------------------------------------------- */

typedef enum ir_op {
#define OP(e, s, n, f, doc) IR_OP_##e,
#include "ir/ops.def"
#undef OP
  IR_OP__COUNT
} ir_op;

enum {
  OPF_ELEMWISE = 1 << 0,
  OPF_UNARY = 1 << 1,
  OPF_BINARY = 1 << 2,
  OPF_TERNARY = 1 << 3,
  OPF_FLOAT = 1 << 4,
  OPF_INT = 1 << 5,
  OPF_CALLS = 1 << 6,
  OPF_DECLARED = 1 << 7, /* result shape as written; attributes kept verbatim */
  OPF_EFFECT = 1 << 8,   /* an effect beyond the result: never merged */
  OPF_CONTROL = 1 << 9,  /* call, while, conditional, map: see ir_control_role */
  OPF_RUNS = 1 << 10,     /* an OPF_DECLARED op the targets run (ir/small.c) */
};

const char *ir_op_name(ir_op op);      /* HLO spelling */
int ir_op_arity(ir_op op);             /* -1 variadic (or not an opcode) */
/* 0 for a value that is not an opcode. */
unsigned ir_op_flags(ir_op op);
/* Looks up an HLO spelling; returns IR_OP__COUNT when unknown. */
ir_op ir_op_from_name(const char *s, size_t len);

typedef int32_t ir_id;      /* instruction index within its computation */
typedef int32_t ir_comp_id; /* computation index within its module */
#define IR_NONE (-1)

typedef enum ir_cmp_dir { IR_CMP_EQ, IR_CMP_NE, IR_CMP_LT, IR_CMP_LE, IR_CMP_GT, IR_CMP_GE } ir_cmp_dir;
/* Comparison type attribute ("type=TOTALORDER"); DEFAULT means by element type. */
typedef enum ir_cmp_type { IR_CMPT_DEFAULT, IR_CMPT_FLOAT, IR_CMPT_TOTALORDER, IR_CMPT_SIGNED, IR_CMPT_UNSIGNED } ir_cmp_type;

typedef enum ir_precision { IR_PREC_DEFAULT, IR_PREC_HIGH, IR_PREC_HIGHEST } ir_precision;

typedef enum ir_fusion_kind { IR_FUSION_LOOP, IR_FUSION_INPUT, IR_FUSION_OUTPUT, IR_FUSION_CUSTOM } ir_fusion_kind;

/* An int64 list attribute ("dimensions={1,0}"). */
typedef struct ir_ints {
  int32_t n;
  int64_t *v;
} ir_ints;

/* One window dimension (convolution, reduce-window). Defaults: size 1,
 * stride 1, pads 0, dilations 1, no reversal. */
typedef struct ir_window_dim {
  int64_t size, stride, pad_lo, pad_hi, lhs_dilate, rhs_dilate;
  bool reversal;
} ir_window_dim;

typedef struct ir_window {
  int32_t rank;
  ir_window_dim dims[IR_MAX_RANK];
} ir_window;

/* Convolution dimension labels, e.g. "b01f_01io->b01f": dimension indices
 * of batch/feature/spatial for input and output, and of input-feature,
 * output-feature and spatial for the kernel. nspatial <= IR_MAX_RANK - 2. */
typedef struct ir_conv_dims {
  int32_t nspatial;
  int8_t in_batch, in_feature, in_spatial[IR_MAX_RANK];
  int8_t k_in, k_out, k_spatial[IR_MAX_RANK];
  int8_t out_batch, out_feature, out_spatial[IR_MAX_RANK];
} ir_conv_dims;

typedef struct ir_padding_dim {
  int64_t lo, hi, interior; /* lo and hi may be negative */
} ir_padding_dim;

/* A replica group list ("replica_groups={{0,1},{2,3}}"). XLA's iota form
 * ("[2,2]<=[4]", "[2,2]<=[2,2]T(1,0)") is expanded into groups and its
 * text kept in iota, which the printer writes instead of the list. */
typedef struct ir_replica_groups {
  int32_t ngroups;
  ir_ints *groups;
  const char *iota;
} ir_replica_groups;

/* An attribute kept verbatim so that it round-trips (backend_config,
 * frontend_attributes, sharding, ...): never interpreted by tpucc. With
 * text NULL it stands for a called-computation attribute of an
 * OPF_DECLARED op ("condition=%c", "branch_computations={%a, %b}"): the
 * computations are calls[first_call .. first_call + ncalls), written as a
 * braced list when list is set. Raw attributes are compared by CSE and
 * copied by clones; the printer writes them in stored order. */
typedef struct ir_raw_attr {
  const char *name;
  const char *text; /* everything after '=' as written */
  int32_t first_call, ncalls;
  bool list;
} ir_raw_attr;

/* A module-level table XLA prints after the header (FileNames,
 * FunctionNames, FileLocations, StackFrames): rows "ID TEXT", each TEXT
 * kept verbatim. */
typedef struct ir_table_row {
  int64_t id;
  const char *text;
} ir_table_row;
typedef struct ir_table {
  const char *name;
  int32_t nrows;
  ir_table_row *rows;
} ir_table;

/* Source metadata (metadata={op_name="..." source_file="..." source_line=N}). */
typedef struct ir_metadata {
  const char *op_name, *op_type, *source_file;
  int32_t source_line;
} ir_metadata;

/* Attributes, one struct for all ops, generated from ir/attrs.def (its
 * IR_FIELD rows); each op uses the fields its IR_ATTR rows name and leaves
 * the others zero. */
typedef struct ir_attrs {
#define IR_FIELD(type, name, doc) type name;
#include "ir/attrs.def"
#undef IR_FIELD
} ir_attrs;

/* How an attribute's value is stored, printed, parsed, compared and copied
 * (one implementation per kind in each of those). See ir/attrs.def. */
typedef enum ir_attr_kind {
  IR_AK_INT, IR_AK_INTS, IR_AK_SLICE, IR_AK_PADS, IR_AK_ENUM, IR_AK_PREC,
  IR_AK_WINDOW, IR_AK_CONV, IR_AK_GROUPS, IR_AK_TYPE, IR_AK_LITERAL
} ir_attr_kind;

enum {
  IR_AF_OMIT = 1 << 0,    /* not printed at its default */
  IR_AF_INIT = 1 << 1,    /* the parser starts an INT at min on its ops */
  IR_AF_CSE_OPS = 1 << 2, /* CSE compares it only on its ops */
  IR_AF_NOT_HLO = 1 << 3, /* no HLO attribute (written as the operand) */
};

/* A set of ops: op's bit in word op / 64. */
typedef struct ir_opset {
  uint64_t w[(IR_OP__COUNT + 63) / 64];
} ir_opset;

/* One IR_ATTR row of ir/attrs.def. ops: the ops that carry it; required:
 * those on which the parser requires it; names (ENUM, PREC) ends at NULL. f, g, h: byte offsets in ir_attrs of
 * the fields the kind uses (SLICE: start, limit, stride; PADS: entries,
 * count). */
typedef struct ir_attr_desc {
  ir_attr_kind kind;
  const char *name;
  size_t f, g, h;
  ir_opset ops, required;
  unsigned flags;
  int64_t min;
  const char *const *names;
  const char *noun;
} ir_attr_desc;

/* The IR_ATTR rows in table order, and their count. */
extern const ir_attr_desc ir_attr_table[];
extern const int ir_attr_count;
/* The ops that carry some attribute of the table (a fast path: most ops
 * carry none). A row's REQUIRED ops are among its OPS. */
extern const ir_opset ir_attr_ops_any;

/* Whether op is in the set s. */
static inline bool ir_attr_on(const ir_opset *s, ir_op op) {
  return (unsigned)op < IR_OP__COUNT && (s->w[(unsigned)op >> 6] >> ((unsigned)op & 63) & 1);
}

/* Whether a and b are equal attributes of an op: every row compared by
 * its kind (IR_AF_CSE_OPS rows only on their ops). */
bool ir_attrs_equal(ir_op op, const ir_attrs *a, const ir_attrs *b);
/* A hash of a's attributes, mixed into h, consistent with ir_attrs_equal. */
uint64_t ir_attrs_hash(ir_op op, const ir_attrs *a, uint64_t h);

/* Typed views of an attribute's fields (off: a byte offset from the
 * table). ENUM and PREC fields are enums of int size. */
#define IR_ATTR_FIELD(a, off, type) ((type *)(void *)((char *)(a) + (off)))
#define IR_ATTR_CFIELD(a, off, type) ((const type *)(const void *)((const char *)(a) + (off)))

/* An empty window (rank 0), and a's window or that empty one. */
extern const ir_window ir_window_none;
static inline const ir_window *ir_window_of(const ir_attrs *a) {
  return a->window ? a->window : &ir_window_none;
}

/* The attributes of an instruction that has none (preferred_type
 * IR_TYPE_INVALID, every other field zero). */
extern const ir_attrs ir_attrs_none;

/* What an instruction carries that passes rarely read: kept beside the
 * instruction, one per instruction. */
typedef struct ir_inst_info {
  const char *name;          /* unique within the module */
  src_loc loc;               /* where it was written (HLO or .tg line) */
  ir_metadata meta;
  int32_t nraw;
  ir_raw_attr *raw;
} ir_inst_info;

/* An instruction: 56 bytes (tests/ir/test_module.c checks <= 64). Its
 * shape is interned in the module (ir_shape_intern: equal shapes share one
 * pointer); its attributes belong to it alone (ir_attrs_none when it has
 * none) and change only through ir_inst_attrs_mut. */
typedef struct ir_inst {
  ir_op op;
  bool dead;                 /* removed by a pass; skipped by printers */
  int32_t nops, ncalls;
  const ir_shape *shape;
  ir_id *ops;                /* operand instruction ids (same computation) */
  ir_comp_id *calls;         /* to_apply= (reduce, reduce-window, all-reduce)
                                or calls= (fusion) */
  const ir_attrs *a;         /* never NULL */
  ir_inst_info *info;        /* never NULL */
} ir_inst;

/* An instruction being built: every field by value. ir_inst_add copies it
 * into the module (interning the shape, copying attributes, operands,
 * calls and raw attributes into the arena). */
typedef struct ir_inst_proto {
  ir_op op;
  const char *name;          /* NULL: a unique name from the op spelling */
  ir_shape shape;
  int32_t nops;
  ir_id *ops;
  int32_t ncalls;
  ir_comp_id *calls;
  ir_attrs a;
  int32_t nraw;
  ir_raw_attr *raw;
  ir_metadata meta;
  src_loc loc;
} ir_inst_proto;

typedef struct ir_comp {
  const char *name;
  VEC(ir_inst) insts;
  ir_id root;                /* IR_NONE until set */
  int32_t nparams;
  ir_id *params;             /* params[i] = id of parameter(i), set by ir_comp_finish */
  bool is_fusion;            /* called by a fusion instruction */
  src_loc loc;
  int32_t nraw;
  ir_raw_attr *raw;          /* attributes after the body (execution_thread) */
} ir_comp;

typedef struct ir_module {
  arena *arena;
  const char *name;
  VEC(ir_comp) comps;
  ir_comp_id entry;          /* IR_NONE until set */
  bool is_scheduled;         /* header flag, kept for round trips */
  int32_t nraw;
  ir_raw_attr *raw;          /* other header attributes kept verbatim */
  int32_t ntables;
  ir_table *tables;          /* stack-frame tables, in written order */
  const char *source_file;   /* interned; for diagnostics */
} ir_module;

/* ---- building -------------------------------------------------------- */

/* Creates an empty module with its own arena. Destroy with ir_module_destroy. */
ir_module *ir_module_create(const char *name);
void ir_module_destroy(ir_module *m); /* accepts NULL */
/* Adds an empty computation and returns its id. */
ir_comp_id ir_comp_add(ir_module *m, const char *name);
ir_comp *ir_comp_get(ir_module *m, ir_comp_id c);
/* Appends an instruction (copied; operands/calls arrays copied into the
 * arena) and returns its id. name may be NULL: a unique name is made from
 * the op spelling ("add.3"). */
ir_id ir_inst_add(ir_module *m, ir_comp_id c, const ir_inst_proto *proto);
ir_inst *ir_inst_get(ir_module *m, ir_comp_id c, ir_id i);
/* Makes *in the instruction proto describes (as ir_inst_add would add
 * it): an instruction rewritten in place keeps its id. */
void ir_inst_assign(ir_module *m, ir_inst *in, const ir_inst_proto *proto);
/* A proto with every field of in (pointers shared: copy before changing
 * the arrays they point to). */
ir_inst_proto ir_inst_proto_of(const ir_inst *in);
/* The one shape of m equal to s (type, dims, layout, tuple elements),
 * copied into m's arena the first time it is asked for. */
const ir_shape *ir_shape_intern(ir_module *m, const ir_shape *s);
/* Sets in's shape to the interned copy of s. */
void ir_inst_set_shape(ir_module *m, ir_inst *in, const ir_shape *s);
/* in's attributes, writable: a copy of its own in m's arena when it had
 * none. */
ir_attrs *ir_inst_attrs_mut(ir_module *m, ir_inst *in);
/* Replaces in's attributes with a copy of *a (deep: lists copied). */
void ir_inst_set_attrs(ir_module *m, ir_inst *in, const ir_attrs *a);
/* A fresh module-unique name derived from base ("add" -> "add.7"). */
const char *ir_unique_name(ir_module *m, const char *base);
/* Recomputes params[] from parameter instructions (after building). */
void ir_comp_finish(ir_module *m, ir_comp_id c);
/* Reorders instructions so that operands precede users (stable for
 * already-ordered input); false when there is a cycle. */
bool ir_comp_topo_sort(ir_module *m, ir_comp_id c);
/* Removes instructions marked dead and renumbers operands and the root;
 * a live instruction must not use a dead one (dies otherwise). */
void ir_comp_compact(ir_module *m, ir_comp_id c);
/* Computes users: out_counts[i] = number of uses of instruction i in c
 * (the root counts as a use). Arrays allocated in the module's arena. */
int32_t *ir_comp_use_counts(ir_module *m, ir_comp_id c);
/* Deep-copies a module (new arena). */
ir_module *ir_module_clone(const ir_module *m);

/* ---- budget (budget.c) ------------------------------------------------ */

/* What running a module may cost, checked before it runs with the same
 * accounting on every target (the evaluator, cpu, v2/v3), so that a module
 * asking for runaway work or memory is a located error at once, never a
 * hang or an out-of-memory kill:
 *   work   one step per element an instruction produces (1 for a tuple),
 *          plus a dot's and a convolution's multiply-adds, plus a reduce's
 *          and a reduce-window's folds, each fold costing one call of its
 *          to_apply (at least 1 step); a fusion adds one call of its body.
 *          Parameters cost nothing. Summed over the entry computation.
 *   bytes  every array an instruction of the entry computation makes
 *          (constants included; parameters, tuple and get-tuple-element
 *          excluded; a fusion counts its result), summed; and each result
 *          anywhere, alone.
 *   size   each result at most IR_MAX_ELEMENTS elements.
 * Defaults: IR_BUDGET_WORK steps (2^40: about a minute of dots or an hour
 * of elementwise loops on the cpu target) and IR_BUDGET_BYTES (16 GiB).
 * The evaluator checks with its own ir_eval_options (2^36 steps). */
typedef struct ir_budget {
  double max_work;   /* steps in total (0: IR_BUDGET_WORK) */
  int64_t max_bytes; /* bytes in total and per result (0: IR_BUDGET_BYTES) */
  int max_depth;     /* nesting of called computations (0: IR_BUDGET_MAX_DEPTH) */
} ir_budget;
#define IR_BUDGET_WORK 1099511627776.0 /* 2^40 */
#define IR_BUDGET_BYTES ((int64_t)16 << 30)
enum { IR_BUDGET_MAX_DEPTH = 64 }; /* nesting of called computations */
void ir_budget_init(ir_budget *b);
/* Checks m's entry computation against b (NULL: the defaults). Over the
 * budget: ST_RESOURCE_EXHAUSTED, reported at the instruction where the
 * total crosses the limit into d (may be NULL: "NAME (op): needs N steps of
 * work with M before it, over the limit of L") and the same prefixed
 * "file:line:col: " into err (may be NULL). Never crashes on a malformed
 * module (what it cannot measure costs nothing). */
base_status ir_budget_check(const ir_module *m, const ir_budget *b, diag *d, char *err,
                            size_t errlen);

/* ---- cost (cost.c) ---------------------------------------------------- */

/* Multiply-adds of one dot or convolution with operand shapes lhs and rhs:
 * result elements x contracted elements (a convolution's kernel window x
 * its input features per group); 0 for any other op. */
uint64_t ir_inst_macs(const ir_inst *in, const ir_shape *lhs, const ir_shape *rhs);
/* The MACs of every dot and convolution the entry computation runs, fused
 * ones included (FLOPs = 2 x MACs, as in XLA's cost analysis). */
uint64_t ir_module_macs(const ir_module *m);

/* Convenience builders used by frontends and passes (operands already in
 * computation c; shapes inferred with ir_infer_shape, which must succeed:
 * a builder never creates an ill-typed instruction, it dies instead; a
 * frontend checks with ir_infer_shape first to report user errors). */
ir_id ir_build(ir_module *m, ir_comp_id c, ir_op op, const ir_id *ops,
               int nops, const ir_attrs *attrs, const ir_comp_id *calls,
               int ncalls, src_loc loc);
/* As ir_build, for ops whose result is not inferable from operands
 * (broadcast, reshape, iota, convert, bitcast-convert): `target` gives the
 * result shape, which ir_infer_shape checks. */
ir_id ir_build_shaped(ir_module *m, ir_comp_id c, ir_op op, const ir_id *ops,
                      int nops, const ir_attrs *attrs, const ir_comp_id *calls,
                      int ncalls, const ir_shape *target, src_loc loc);

/* ---- shape inference and verification -------------------------------- */

/* Infers the result shape of `op` with operands of shapes `ops` and
 * attributes `a` (called computations as `calls`). On failure returns false
 * and writes a one-line reason ("dot: contracting dimensions differ (784 vs
 * 768)") into err (size errlen). Layout of the result: default.
 * Where operands and attributes do not determine the result (parameter,
 * constant, iota, broadcast, reshape, convert's and bitcast-convert's
 * element type), the caller pre-fills *out with the target shape, which is
 * validated and kept; see ir/infer.c for dot/convolution result types. */
bool ir_infer_shape(const ir_module *m, ir_op op, const ir_shape *ops,
                    int nops, const ir_attrs *a, const ir_comp_id *calls,
                    int ncalls, ir_shape *out, char *err, size_t errlen);

/* Control flow (OPF_CONTROL). The called computations sit in calls[] in
 * a fixed order, whatever order the HLO text named them in: call and map
 * [to_apply]; while [condition, body]; conditional its branches by index
 * (for a pred selector [true_computation, false_computation]). Raw
 * called-computation attributes (ir_raw_attr with text NULL) only record
 * how they print. ir/control.c. */
enum { IR_WHILE_COND = 0, IR_WHILE_BODY = 1 };
/* The steps of work (ir_budget, ir_eval_options.max_steps) one trip of a
 * while costs beyond its computations' work: its calls and the copy of its
 * state, so that the default limit stops a loop that never ends after
 * about 16 million trips (seconds), on every target that counts. */
#define IR_WHILE_TRIP_STEPS 4096.0
/* The steps of work one trip of while w costs as ir_budget counts it:
 * IR_WHILE_TRIP_STEPS plus one call of its condition and of its body (a
 * loop inside them counted by its first trip). Targets that cannot count
 * work as they run (the cpu) stop a loop whose trips have used up the
 * budget with this figure per trip. At least IR_WHILE_TRIP_STEPS. */
double ir_while_trip_work(const ir_module *m, const ir_inst *w);
/* The branch a conditional of nbranches runs for selector value v: a pred
 * picks 0 when true, 1 when false; an s32 picks v, and any v out of range
 * the last branch (XLA's definition). */
int ir_conditional_branch(int nbranches, ir_type selector, int64_t v);
/* The result shape of a control op as its computations give it (call:
 * to_apply's root; while: the carried operand; conditional: branch 0's
 * root; map: the operands' dims with to_apply's scalar root type), after
 * checking the structure (computation count, selector, operand dims);
 * false with a one-line reason otherwise. ir_infer_shape calls it. */
bool ir_control_infer(const ir_module *m, ir_op op, const ir_shape *ops, int nops,
                      const ir_comp_id *calls, int ncalls, ir_shape *out, char *err,
                      size_t errlen);

/* Checks every invariant of m (operand ids in range and defined before use,
 * arity, shapes agree with ir_infer_shape, attributes in range, called
 * computations exist with the right signatures, no cycles in calls, a root
 * in every computation, an entry, unique names). Reports each problem at the
 * instruction's location into d; returns the number of problems. */
int ir_verify(const ir_module *m, diag *d);

/* ---- custom-call (ir/custom_call.c) ---------------------------------- */

/* One array handed to or filled by a host function: dense row-major
 * elements with the storage of ir_literal. */
typedef struct ir_ffi_buffer {
  ir_type type;
  int32_t rank;
  const int64_t *dims;
  void *data;
  size_t nbytes;
} ir_ffi_buffer;
/* A host function bound to a custom_call_target. operands: the array leaves
 * of the custom-call's operands (tuples flattened depth-first), read-only;
 * results: the array leaves of its declared result shape, allocated by the
 * caller and to be filled completely. backend_config: the attribute's text
 * (unquoted), "" when absent. Returns 0 on success; otherwise a nonzero
 * value with a message in err. May be called from any thread, one call at a
 * time per executable. */
typedef int (*ir_ffi_fn)(void *user, const ir_ffi_buffer *operands, int32_t noperands,
                         ir_ffi_buffer *results, int32_t nresults, const char *backend_config,
                         char *err, size_t errlen);
typedef struct ir_ffi_entry {
  const char *target;
  ir_ffi_fn fn;
  void *user;
} ir_ffi_entry;
/* The host functions an embedder registered, by target name. */
typedef struct ir_ffi_table {
  const ir_ffi_entry *v;
  int32_t n;
} ir_ffi_table;
/* The entry registered for target (exact name), or NULL. t may be NULL. */
const ir_ffi_entry *ir_ffi_find(const ir_ffi_table *t, const char *target);

/* What a custom-call does on every target:
 *   IDENTITY  Sharding, SPMDFullToShardShape, SPMDShardToFullShape: its one
 *             operand, in a module of one partition;
 *   HOST      a function registered in the ffi table (interp and cpu);
 *   TOPK      XLA's "TopK" custom-call (values and indices of the k largest);
 *   UNKNOWN   anything else: a located error naming the target. */
typedef enum ir_custom_kind { IR_CC_UNKNOWN, IR_CC_IDENTITY, IR_CC_HOST, IR_CC_TOPK } ir_custom_kind;
/* The custom_call_target of in (quotes removed, escapes resolved) written
 * into buf (truncated to n - 1 bytes); false when in has none. */
bool ir_custom_call_target(const ir_inst *in, char *buf, size_t n);
/* Its backend_config as a string (quotes removed when quoted; "" when
 * absent), allocated in arena a. */
const char *ir_custom_call_config(const ir_inst *in, arena *a);
ir_custom_kind ir_custom_call_kind(const ir_inst *in, const ir_ffi_table *ffi);
/* A module header count such as replica_count or num_partitions: 1 when
 * absent, 0 when not a positive integer. */
long long ir_module_count_attr(const ir_module *m, const char *name);

/* Checks that a target that runs the core set can run m: no OPF_DECLARED
 * op (while, custom-call, gather, ...) other than the OPF_RUNS ones and
 * those ir_declared_runs accepts, and no element type outside the core
 * list (ir_type_is_core) but token, anywhere in the module (the TPU refuses
 * more types on its own, backend/tpu/types.c); one replica asked for
 * (header replica_count absent or 1, reported at the entry computation)
 * and no all-reduce whose replica_groups name a replica other than 0.
 * Custom-calls: as ir_check_runnable_ffi with no host functions.
 * Reports each problem at
 * the instruction ("'while' is not supported by the cpu target yet") into
 * d (may be NULL) and the first, prefixed "file:line:col: ", into err (may
 * be NULL); returns the number of problems. */
int ir_check_runnable(const ir_module *m, const char *target, diag *d, char *err, size_t errlen);
/* As ir_check_runnable, with the custom-calls checked against what target
 * runs (ir_custom_call_kind): host functions of ffi (NULL: none), identity
 * targets with one operand of the result's shape in a module of one
 * partition; any other target is reported by name. TopK is checked by the
 * targets that run it. */
int ir_check_runnable_ffi(const ir_module *m, const char *target, const ir_ffi_table *ffi, diag *d,
                          char *err, size_t errlen);
/* As ir_check_runnable_ffi for a run of nrep replicas (the two above run
 * one): a written replica_count must equal nrep (absent: any nrep),
 * num_partitions must be 1, collectives are checked against nrep
 * (ir_coll_check_replicas) and must be ones target runs
 * (ir_coll_target_runs). The caller refuses more replicas than the target
 * has cores. */
int ir_check_runnable_replicas(const ir_module *m, const char *target, const ir_ffi_table *ffi,
                               int nrep, diag *d, char *err, size_t errlen);

/* ---- collectives (ir/coll.c; docs/collectives.md, base/coll.h) ------- */

/* all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute,
 * collective-broadcast and the -start forms: the ops that exchange values
 * between replicas (replica-id, partition-id and the -done forms do not). */
bool ir_is_collective(ir_op op);
/* The synchronous op a collective computes: a -start form's op
 * (all-reduce-start -> all-reduce, ...), any other op itself. */
ir_op ir_coll_sync_op(ir_op op);
/* The group of replica `replica` (of nrep) for collective in: its
 * replica_groups, or all replicas 0..nrep-1 when it lists none
 * (collective-permute: always all). Writes the members in group order into
 * g (room for nrep) and the replica's position into *pos; returns the group
 * size, or 0 when no group lists the replica. */
int ir_coll_group(const ir_inst *in, int nrep, int replica, int64_t *g, int *pos);
/* The shape rules of the collectives, the -done forms, replica-id and
 * partition-id (all-reduce's is in ir/infer.c); ir_infer_shape calls it.
 * With no replica_groups and no written replica_count, the group size of
 * all-gather and reduce-scatter comes from the pre-filled *out. */
bool ir_coll_infer(const ir_module *m, ir_op op, const ir_shape *ops, int nops, const ir_attrs *a,
                   const ir_comp_id *calls, int ncalls, ir_shape *out, char *err, size_t errlen);
/* The verifier's checks of a collective's groups and pairs: groups of one
 * size where the shape depends on it (all-gather, reduce-scatter,
 * all-to-all), no empty group, ids below the module's written
 * replica_count, source_target_pairs of two with no source or target
 * twice. False with a one-line reason in msg. */
bool ir_coll_check(const ir_module *m, const ir_inst *in, char *msg, size_t n);
/* The checks of a run of nrep replicas: as ir_coll_check against nrep,
 * every replica in exactly one group, shapes that depend on the group
 * size agree with nrep when the op lists no groups, the tuple all-to-all's
 * operand count. False with "'name': reason" in msg. */
bool ir_coll_check_replicas(const ir_module *m, const ir_comp *cp, const ir_inst *in, int nrep,
                            char *msg, size_t n);
/* Whether target ("interp", "cpu", a TPU spec) runs op, for the ops of
 * this section: interp and cpu all of them; the others (TPU boards and
 * pods) all-reduce, reduce-scatter, all-gather, collective-permute,
 * all-to-all, collective-broadcast, replica-id, partition-id, and the
 * -start/-done forms of all-reduce, all-gather and collective-permute. */
bool ir_coll_target_runs(ir_op op, const char *target);

/* ---- sort, top-k and random numbers (ir/sortrng.c, ir/prng.c) -------- */

/* The text of in's verbatim attribute `name` (as written after '='), or
 * NULL: how the attributes of OPF_DECLARED ops are read. */
const char *ir_raw_attr_text(const ir_inst *in, const char *name);
/* sort: dimensions={d} and is_stable (default false); false when absent
 * or malformed (the verifier reports it). */
bool ir_sort_attrs_of(const ir_inst *in, int64_t *dim, bool *stable);
/* Whether in is a custom-call of custom_call_target="TopK". */
bool ir_is_topk_custom_call(const ir_inst *in);
/* topk: k and largest (default true); the TopK custom-call: k from its
 * result, largest. False when absent or malformed. */
bool ir_topk_attrs_of(const ir_inst *in, int64_t *k, bool *largest);
typedef enum ir_rng_alg { IR_RNG_DEFAULT, IR_RNG_THREE_FRY, IR_RNG_PHILOX } ir_rng_alg;
typedef enum ir_rng_dist { IR_RNG_UNIFORM, IR_RNG_NORMAL } ir_rng_dist;
/* rng-bit-generator's algorithm, rng's distribution; false when absent. */
bool ir_rng_alg_of(const ir_inst *in, ir_rng_alg *out);
bool ir_rng_dist_of(const ir_inst *in, ir_rng_dist *out);
/* Checks a sort, topk, TopK custom-call, rng or rng-bit-generator: its
 * operands, attributes, comparator (2N scalar parameters of the operand
 * types, a pred[] root) and written result. False with a one-line reason
 * in msg (size n); true for any other instruction. */
bool ir_check_sortrng(const ir_module *m, const ir_comp *cp, const ir_inst *in, char *msg,
                      size_t n);
/* Whether target ("interp", "cpu", a TPU spec) runs the OPF_DECLARED
 * instruction in: rng and rng-bit-generator on interp; sort, topk and
 * the TopK custom-call on every target (interp, cpu, the TPU). */
bool ir_declared_runs(const ir_inst *in, const char *target);

/* Random123's ThreeFry-2x32 (20 rounds) and Philox-4x32 (10 rounds) of a
 * counter block under a key. */
void ir_threefry2x32(const uint32_t key[2], const uint32_t ctr[2], uint32_t out[2]);
void ir_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4]);
/* XLA's rng-bit-generator: nstate (2 or 3) u64 words of state, an output
 * of dims[rank] elements of `bits` bits (8, 16, 32, 64; narrower than 32
 * keeps each 32-bit word's low bits) written little-endian into out, and
 * the next state (nstate words) into new_state. IR_RNG_DEFAULT is Philox,
 * as on XLA's CPU and GPU. */
void ir_rng_bit_generator(ir_rng_alg alg, const uint64_t *state, int nstate, int rank,
                          const int64_t *dims, int bits, void *out, uint64_t *new_state);

/* rng's key: FNV-1a (64-bit) of the instruction's name, so that an rng
 * gives the same numbers on every run and target whatever else the module
 * holds. */
uint64_t ir_rng_key_of(const char *name);
/* rng's standard values for dims[rank] elements, into out (4 bytes each):
 * Philox (XLA's PhiloxBitGenerator) under key with counter 0; uniform:
 * f32 u in [0, 1) (the top 23 bits of each word over 2^23) or, is_int,
 * the u32 words; normal: f32 Box-Muller pairs as XLA's
 * NormalFloatingPointDistribution (host sinf, cosf, logf, sqrtf). */
void ir_rng_standard(ir_rng_dist dist, bool is_int, uint64_t key, int rank, const int64_t *dims,
                     void *out);
/* rng_uniform of s32 from one word, as XLA's ConvertRandomBitsToUniformInt:
 * range = u32(b) - u32(a), d = w % range (w when range is 0),
 * a + d / 2 + (d - d / 2), wrapping. */
int32_t ir_rng_uniform_s32(uint32_t w, int32_t a, int32_t b);

/* ---- the small declared ops (ir/small.c) ------------------------------- */

/* The integer value of in's raw attribute `name` ("exponent_bits=8",
 * "dimensions={1}"); false when absent or not one integer. */
bool ir_raw_int(const ir_inst *in, const char *name, int64_t *out);
/* For an OPF_RUNS op of computation c: checks the written shape against the
 * operands and the attributes the op needs; false with a message in err. */
bool ir_small_check(const ir_module *m, const ir_comp *c, const ir_inst *in, char *err, size_t n);
/* reduce-precision of one value of float type t (bf16/f16/f32 through its
 * f32 bits, f64 through its own), exactly as XLA: mantissa rounded to
 * nearest even, exponents out of the reduced range to signed 0 or
 * infinity, NaN kept (infinity when mantissa_bits is 0). */
double ir_reduce_precision(double x, int exponent_bits, int mantissa_bits, ir_type t);

/* ---- text ------------------------------------------------------------ */

/* Prints m as HLO text that ir_parse_hlo reads back to an equal module. */
void ir_print_module(strbuf *b, const ir_module *m);
/* Prints one instruction line (without indentation or newline). */
void ir_print_inst(strbuf *b, const ir_module *m, ir_comp_id c, ir_id i);
/* Print styles: LONG is XLA's default ToString() form (what ir_print_module
 * writes: '%' names, operand shapes, computation signatures); SHORT is XLA's
 * ShortParsable form (bare names, no operand shapes, no signatures). Both
 * read back to the same module. */
typedef enum ir_print_style { IR_PRINT_LONG, IR_PRINT_SHORT } ir_print_style;
void ir_print_module_style(strbuf *b, const ir_module *m, ir_print_style style);

/* (Parsing HLO text is the frontend's job: see frontend/frontend.h.) */

/* ---- reference evaluator --------------------------------------------- */

typedef struct ir_eval_options {
  int32_t replica_count;   /* replicas of the run: 1 (ir_eval runs one;
                              ir_eval_replicated sets it) */
  int32_t replica_id;      /* this replica (replica-id's value) */
  int64_t max_bytes;       /* refuse to materialise more than this (0 = 16 GiB) */
  int64_t max_steps;       /* refuse more work than this many inner-loop steps
                              (elements produced, products, fold steps; 0 = 2^36) */
  bool tpu_numerics;       /* compute what the emulated TPU computes (bf16 MXU
                              operands, fused f32 accumulation, the vector
                              unit's kernels): docs/numerics.md; false */
  const ir_ffi_table *ffi; /* host functions for custom-calls; NULL: none */
} ir_eval_options;
void ir_eval_options_init(ir_eval_options *o);

/* Evaluates the entry computation of m on args (one per parameter, shapes
 * must match). On success *out is a literal in arena `out_arena`. On
 * failure returns a status and writes a message into err. The numerics
 * (rounding, accumulation order of dot/convolution/reduce) are the
 * contract backends are checked against: see ir/eval_internal.h and the
 * header comment of each ir/eval_*.c. */
base_status ir_eval(const ir_module *m, const ir_eval_options *opts,
                    ir_literal *const *args, int nargs, arena *out_arena,
                    ir_literal **out, char *err, size_t errlen);

/* The most replicas ir_eval_replicated runs. */
enum { IR_EVAL_MAX_REPLICAS = 4096 };
/* Evaluates nrep (1..IR_EVAL_MAX_REPLICAS) replicas of m's entry
 * computation, each on its own host
 * thread (one replica: ir_eval, no thread), meeting at every collective
 * (ir/eval_coll.c, docs/collectives.md). args[r] holds replica r's nargs
 * arguments; on success outs[r] (nrep of them) is replica r's result in
 * out_arena. opts->replica_count and replica_id are set per replica. A
 * replica that fails ends the others' waits; err names the replica whose
 * failure caused it ("... (replica 3 of 8)"). */
base_status ir_eval_replicated(const ir_module *m, const ir_eval_options *opts, int nrep,
                               ir_literal *const *const *args, int nargs, arena *out_arena,
                               ir_literal **outs, char *err, size_t errlen);

/* ---- tensor I/O (ir/tensor_io.c) ------------------------------------ */
/* Owned by the tensor-I/O work: .npy/.npz read and write (little and big
 * endian, C and Fortran order on read), raw .bin with an explicit shape and
 * type, and IREE-style literals ("2x3xf32=1 2 3 4 5 6").
 *
 * Error contract for everything below: a function returns ST_OK, or a
 * status and one line in err (errlen bytes, always NUL-terminated) that
 * names the file or argument (`what`) and says what is wrong. Nothing a
 * file or argument contains crashes these functions: every size is checked
 * against the data length before anything is allocated. Literals are
 * allocated in the arena given; file buffers are malloc'ed (free them). */

/* A tensor with a name (an .npz entry without ".npy", or the argument). */
typedef struct ir_named_literal {
  const char *name;
  ir_literal *lit;
} ir_named_literal;

/* Largest tensor file read (4 GiB): a bound on what a file can make us
 * allocate. */
#define IR_TENSOR_MAX_FILE ((size_t)1 << 32)

/* Reads a whole file (at most max_bytes) into a malloc'ed buffer with a
 * NUL appended (*out_len excludes it). Missing files, directories and
 * oversized files are errors naming the path. */
base_status ir_file_read(const char *path, size_t max_bytes, char **out_data,
                         size_t *out_len, char *err, size_t errlen);
/* Writes len bytes to path. A regular file (or a new one) is written to a
 * temporary file beside it, synced and renamed over it only when complete:
 * on any failure (disk full) the old file is left whole and no partial
 * file remains. A device or pipe (/dev/stdout) is written in place. */
base_status ir_file_write(const char *path, const void *data, size_t len,
                          char *err, size_t errlen);
/* Checks, without writing, that ir_file_write(path) can succeed as far as
 * can be known beforehand: not a directory, its directory exists and is
 * writable, an existing file is writable. */
base_status ir_file_check_writable(const char *path, char *err, size_t errlen);

/* .npy (numpy format 1.0/2.0/3.0). Reads dtypes |b1 (pred), |i1 (s8),
 * <i4 >i4 (s32), <f2 >f2 (f16), <f4 >f4 (f32), C or Fortran order, into a
 * row-major literal. numpy has no bfloat16: ir_npy_encode writes bf16 as
 * <f4 (exact widening); read bf16 from raw .bin files. Encoding writes
 * format 1.0, little endian, C order. Tuples are rejected. */
base_status ir_npy_decode(arena *a, const char *what, const void *data,
                          size_t len, ir_literal **out, char *err,
                          size_t errlen);
/* As ir_npy_decode, but the result has type `as`: then any numpy bool,
 * int8..int64, uint8..uint64 or float16/32/64 array is read, floats
 * rounding to nearest even, integers checked to fit `as` (else an error
 * naming the element); float data never becomes an integer or pred. */
base_status ir_npy_decode_as(arena *a, const char *what, const void *data,
                             size_t len, ir_type as, ir_literal **out,
                             char *err, size_t errlen);
base_status ir_npy_encode(strbuf *b, const ir_literal *l, char *err,
                          size_t errlen);
/* Reads only the header of an .npy whose first len bytes are data (a
 * prefix is enough): *out_shape gets its dims and the IR type holding its
 * dtype exactly (IR_TYPE_INVALID when none does), *out_size the whole
 * file's length the header implies (SIZE_MAX when it overflows or the
 * dtype is unknown). */
base_status ir_npy_peek(const char *what, const void *data, size_t len,
                        ir_shape *out_shape, size_t *out_size, char *err,
                        size_t errlen);

/* .npz (a zip of .npy files, as numpy.savez writes). Reads stored entries
 * and, when built with zlib, deflated ones (numpy.savez_compressed);
 * zip64 records are understood; CRCs are checked. *out is an arena array
 * of *out_n arrays in archive order, named without ".npy": every entry, or
 * only the one named `select` (not NULL). Before anything is inflated the
 * whole directory is checked (records inside the file, entries owning
 * disjoint bytes and distinct names, each at most IR_TENSOR_MAX_FILE
 * bytes) and then the .npy header of each entry read (inflating only its
 * first bytes): it must imply the entry's size and, when `expect` is
 * given, have its dims (an archive of several arrays then needs select);
 * the entries read hold at most IR_TENSOR_MAX_FILE bytes in all. Only the
 * entries read are inflated. Encoding writes stored entries "NAME.npy" (no
 * zip64: each entry under 4 GiB). */
base_status ir_npz_decode(arena *a, const char *what, const void *data,
                          size_t len, const char *select,
                          const ir_shape *expect, ir_named_literal **out,
                          int *out_n, char *err, size_t errlen);
base_status ir_npz_encode(strbuf *b, const ir_named_literal *arrays, int n,
                          char *err, size_t errlen);

/* Raw .bin: the elements of shape s, row-major, little endian, nothing
 * else (pred one byte 0/1, bf16/f16 their 16 bits). The length must match
 * exactly. */
base_status ir_bin_decode(arena *a, const char *what, const void *data,
                          size_t len, const ir_shape *s, ir_literal **out,
                          char *err, size_t errlen);
void ir_bin_encode(strbuf *b, const ir_literal *l);

/* Reads a tensor file chosen by its extension (.npy, .npz, .bin; other
 * names are sniffed by their magic). A .bin needs `shape` (else NULL). */
base_status ir_tensor_read_file(arena *a, const char *path,
                                const ir_shape *shape, ir_named_literal **out,
                                int *out_n, char *err, size_t errlen);
/* Writes an array literal to path by extension: .npy, .npz (one entry
 * "arr_0"), .bin (raw). */
base_status ir_tensor_write_file(const char *path, const ir_literal *l,
                                 char *err, size_t errlen);

/* Parses a tensor argument, IREE style:
 *   2x3xf32=1 2 3 4 5 6    values in row-major order; spaces, commas and
 *                          [ ] separate them; one value fills all (splat)
 *   f32=3.5                a scalar;   f32[2,3]=...  HLO spelling works too
 *   2x2xbf16=@a.bin        raw little-endian file of that shape and type
 *   2x2xf32=@a.npy         .npy/.npz checked against the shape; an .npy
 *                          of another numpy dtype (float64, int64, ...) is
 *                          converted (ir_npy_decode_as); an f32 .npz entry
 *                          given as bf16/f16 is rounded (RNE)
 *   @x.npy  @x.npz  @x.npz:name   whole files (.npz: every array, in order)
 * Types: pred s8 s32 bf16 f16 f32, and IREE's i1 i8 i32. Values: decimal
 * integers, floats, nan, inf, -inf, true/false for pred. */
base_status ir_tensor_parse(arena *a, const char *text, ir_named_literal **out,
                            int *out_n, char *err, size_t errlen);
/* Parses "2x3xf32" (or "f32[2,3]", "f32") into an array shape. */
base_status ir_tensor_parse_spec(const char *text, size_t len, ir_shape *out,
                                 char *err, size_t errlen);
/* Appends "2x3xf32" (scalars: "f32"). */
void ir_tensor_print_spec(strbuf *b, const ir_shape *s);
/* Appends IREE-style text: "2x3xf32=[1 2 3][4 5 6]", "3xf32=1 2 3",
 * "f32=3.5"; floats shortest round-trip, pred as 0/1. After max_elems
 * elements (0: no limit) prints "..." and stops. Tuples: one line each. */
void ir_tensor_print(strbuf *b, const ir_literal *l, int64_t max_elems);
/* Appends one element as ir_tensor_print spells it. */
void ir_tensor_print_elem(strbuf *b, const ir_literal *l, int64_t idx);

#endif
