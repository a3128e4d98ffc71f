/* hlo.h: private interface of the HLO text importer (frontend/hlo/).
 *
 * Pipeline: hlo.l (flex) turns text into tokens; hlo.y (bison) checks the
 * module structure and builds the syntax tree below; build.c turns the tree
 * into an ir_module (names, operands, shapes, computations), attrs.c reads
 * attribute values and literal.c constant literals. The grammar keeps every
 * attribute value and every constant literal as a token tree (a token, or a
 * bracket group of token trees), because what a value means depends on the
 * attribute's name; attrs.c and literal.c read those trees with the shape
 * and op at hand and report errors at the offending token.
 *
 * Memory: the tree lives in the parser's scratch arena and dies with the
 * parse; shapes and literals that end up in the module are copied into (or
 * built in) the module's arena. */
#ifndef TPUCC_FRONTEND_HLO_H
#define TPUCC_FRONTEND_HLO_H

#include "frontend/frontend.h"

/* Bison location: lines/columns 1-based (bytes), plus byte offsets so that
 * raw attribute text can be cut from the source. */
typedef struct hlo_loc {
  int first_line, first_column, last_line, last_column;
  size_t first_off, last_off; /* [first_off, last_off) */
} hlo_loc;

/* A token, or a bracket group ({...}, [...], (...)) of token trees. */
typedef struct hlo_tok hlo_tok;
struct hlo_tok {
  const char *text;  /* tokens: their text, NUL-terminated ('%' removed) */
  src_loc loc;       /* first character */
  size_t off, end;   /* byte span in the source, end exclusive */
  hlo_tok **kids;
  int32_t kind;      /* bison token kind; HLO_GROUP for a group */
  int32_t len;
  int32_t n;         /* groups: number of children */
  char open;         /* groups: '{', '[' or '('; '<' for an iota list */
};
enum { HLO_GROUP = -2 };

typedef VEC(hlo_tok *) hlo_tokvec;
typedef VEC(ir_shape *) hlo_shapevec;

/* name=value (instruction or module attribute). */
typedef struct hlo_attr {
  hlo_tok *name;
  hlo_tok *value;
} hlo_attr;
typedef VEC(hlo_attr) hlo_attrvec;

typedef struct hlo_inst hlo_inst;

/* One operand as written. */
typedef struct hlo_operand {
  enum { HLO_OPND_REF, HLO_OPND_NESTED, HLO_OPND_INT } kind;
  ir_shape *shape;   /* written shape, or NULL */
  src_loc shape_loc;
  hlo_tok *tok;      /* the name (REF), the integer (INT) */
  hlo_inst *nested;  /* NESTED: the anonymous instruction */
} hlo_operand;
typedef VEC(hlo_operand) hlo_opndvec;

struct hlo_inst {
  hlo_tok *name;       /* NULL for a nested (anonymous) instruction */
  hlo_tok *opcode;
  bool root;
  ir_shape *shape;     /* written result shape, or NULL */
  src_loc shape_loc;
  hlo_opndvec ops;
  hlo_tok *literal;    /* constant: the '(' group holding the literal */
  hlo_attrvec attrs;
  /* filled by build.c */
  const char *final_name;
  src_loc loc;
  int32_t index;       /* position in its computation's list */
  ir_id id;            /* id in the module computation */
  int state;
  bool bad;            /* errors already reported: skip dependent checks */
};
typedef VEC(hlo_inst *) hlo_instvec;

typedef struct hlo_param {
  hlo_tok *name;
  ir_shape *shape;
} hlo_param;
typedef VEC(hlo_param) hlo_paramvec;

typedef struct hlo_comp {
  hlo_tok *name;
  bool entry;
  bool has_sig;
  hlo_paramvec params;
  ir_shape *result;
  src_loc result_loc;
  hlo_tok *rtype;      /* array result: its type and dims (grammar only) */
  hlo_tokvec *rdims;
  ir_comp_id id;       /* filled by build.c */
  int state;
  hlo_instvec insts;   /* in text order, nested instructions before users */
  hlo_attrvec attrs;   /* after the body (execution_thread=) */
} hlo_comp;

/* A diagnostic held back until the parse ends, so that they come out in
 * source order (parse, resolution and build find them in different
 * orders). A note belongs to the error before it. */
typedef struct hlo_diag {
  src_loc loc;
  diag_level level;
  const char *msg;
  int32_t group, seq;
  src_loc anchor; /* the group's error location: the sort key */
} hlo_diag;

/* A module-level table ("FileNames" and its "ID TEXT" rows). */
typedef struct hlo_table {
  hlo_tok *name;
  VEC(hlo_tok *) ids;
  VEC(hlo_tok *) texts;
} hlo_table;

typedef struct hlo_parser {
  arena *scratch;
  ir_module *m;
  diag *d;
  const char *file;    /* interned in m's arena */
  const char *text;
  size_t len;
  /* lexer position */
  int line, col;
  size_t off;
  char one_byte_text[256][2]; /* the text of one-byte tokens: byte, NUL */
  /* tree */
  hlo_tok *module_name; /* NULL when there is no HloModule header */
  hlo_attrvec header;
  hlo_shapevec *ecl_params; /* entry_computation_layout, when given */
  ir_shape *ecl_result;
  src_loc ecl_loc;
  VEC(hlo_table *) tables; /* stack-frame tables after the header */
  VEC(hlo_comp *) comps;
  hlo_instvec pending;  /* instructions of the computation being parsed */
  int errors;           /* errors reported while parsing */
  int64_t filled;       /* elements filled by scalar and {...} constants (literal.c) */
  VEC(hlo_diag) diags;  /* held back; see fe_hlo_flush */
} hlo_parser;

src_loc fe_hlo_loc(hlo_parser *p, const hlo_loc *l);
/* Diagnostics of the importer: held back and sorted by location, then
 * written to the sink by fe_hlo_flush. fe_hlo_note attaches to the last
 * error; fe_hlo_verror counts errors in p->errors. */
void fe_hlo_error(hlo_parser *p, src_loc loc, const char *fmt, ...) BASE_PRINTF(3, 4);
void fe_hlo_verror(hlo_parser *p, src_loc loc, const char *fmt, va_list ap);
void fe_hlo_warning(hlo_parser *p, src_loc loc, const char *fmt, ...) BASE_PRINTF(3, 4);
void fe_hlo_note(hlo_parser *p, src_loc loc, const char *fmt, ...) BASE_PRINTF(3, 4);
void fe_hlo_flush(hlo_parser *p);

/* Builds an array shape from a type name and dims; reports errors and
 * returns a shape of type IR_TYPE_INVALID on failure. layout may be NULL. */
ir_shape *fe_hlo_array_shape(hlo_parser *p, hlo_tok *type, hlo_tokvec *dims,
                             hlo_tokvec *layout);
ir_shape *fe_hlo_tuple_shape(hlo_parser *p, hlo_shapevec *elems);
/* Integer value of an INT token; reports out-of-range values. */
bool fe_hlo_int(hlo_parser *p, const hlo_tok *t, int64_t *out);

/* Attribute interpretation (attrs.c): fills in->a/raw/meta/calls for inst
 * `in` whose operand shapes are ops (nops). Reports problems; returns false
 * on any error. comp_ids maps computation names. */
typedef struct hlo_attr_ctx {
  hlo_parser *p;
  strmap *comp_ids;
  ir_inst_proto *out;          /* attributes land here */
  const ir_shape *ops;   /* operand shapes (resolved) */
  int nops;
} hlo_attr_ctx;
bool fe_hlo_attrs(hlo_attr_ctx *c, const hlo_inst *hi);
/* Whether an attribute of this name names called computations on some op
 * (to_apply, calls, condition, body, branch_computations, ...). */
bool fe_hlo_is_comp_attr(const char *name);
/* Interprets module header attributes into m (is_scheduled, raw) and
 * copies the stack-frame tables. */
void fe_hlo_header(hlo_parser *p);

/* Constant literal (literal.c): reads the literal written in group `lit`
 * for shape s into the module's arena; NULL after reporting errors. */
ir_literal *fe_hlo_literal(hlo_parser *p, const hlo_tok *lit, const ir_shape *s);

/* Raw source text of a token tree (arena copy). */
const char *fe_hlo_tok_text(hlo_parser *p, const hlo_tok *t);
/* Builds the module from the tree (build.c). NULL on errors. */
ir_module *fe_hlo_build(hlo_parser *p);

/* Limits on what text can make the importer allocate. */
enum {
  HLO_MAX_SPLAT = 1 << 22,  /* elements a scalar or {...} constant may fill */
  HLO_MAX_FILLED = 1 << 27, /* elements all of them together may fill */
  HLO_MAX_DEPTH = 64,       /* nesting of groups read recursively */
};

#endif
