/* tg.h: private interface of the .tg frontend (frontend/tg/).
 *
 * Pipeline: lex.l (flex, reentrant) -> parse.y (bison, pure, locations)
 * builds the syntax tree defined here in the parse arena (ast.c); lower.c
 * checks and lowers graphs (inlining calls), stmts.c statements (var,
 * while, for, if and the blocks they lower to), values.c expressions, and
 * the builtin table (builtins.def) dispatches to ops_core.c and ops_nn.c;
 * lower.h is their shared interface. fe_tg.c is the entry point
 * (fe_parse_tg in frontend.h). Nothing here is thread-safe; distinct parses
 * share no state. */
#ifndef TPUCC_FE_TG_H
#define TPUCC_FE_TG_H

#include "frontend/frontend.h"

/* ---- syntax tree ------------------------------------------------------ */

typedef enum tg_kind {
  TG_NUM,    /* number literal: num (and ival when is_int) */
  TG_NAME,   /* identifier reference: name */
  TG_STR,    /* "string": name holds the text without quotes */
  TG_BOOL,   /* true / false: ival */
  TG_TYPE,   /* f32 or f32[2,3]: type, rank (-1 when no brackets), dims */
  TG_LIST,   /* [a, b, ...]: args */
  TG_UNARY,  /* op a: op is '-' or '!' */
  TG_BINARY, /* a op b: op is a tg_binop */
  TG_CALL,   /* name(args, kw=...): name, args, kws */
  TG_INDEX,  /* a[items]: a, args (each TG_SLICE or an expression) */
  TG_SLICE,  /* lo:hi:step inside an index; parts may be NULL */
  TG_IF,     /* if a then b else c: the branch expression */
} tg_kind;

typedef enum tg_binop {
  TG_ADD, TG_SUB, TG_MUL, TG_DIV, TG_MOD, TG_POW, TG_MATMUL,
  TG_EQ, TG_NE, TG_LT, TG_LE, TG_GT, TG_GE, TG_AND, TG_OR,
} tg_binop;

typedef struct tg_node tg_node;
typedef struct tg_kwarg tg_kwarg;

typedef struct tg_nodes {
  tg_node **v;
  int n, cap;
} tg_nodes;

struct tg_kwarg {
  const char *name;
  src_loc loc;
  tg_node *value;
};

typedef struct tg_kwargs {
  tg_kwarg *v;
  int n, cap;
} tg_kwargs;

struct tg_node {
  tg_kind kind;
  src_loc loc; /* the token that names the construct (operator, callee) */
  int op;
  double num;
  int64_t ival;
  bool is_int;
  const char *name;
  ir_type type;
  int rank;
  int64_t dims[IR_MAX_RANK];
  tg_node *a, *b, *c; /* operands; for TG_SLICE lo, hi, step */
  tg_nodes args;
  tg_kwargs kws;
};

typedef struct tg_param {
  const char *name;
  src_loc loc;
  tg_node *type; /* a TG_TYPE node */
} tg_param;

/* Statements (docs/language.md, "Statements" and "Loops and branches"). */
typedef enum tg_stmt_kind {
  TS_LET,    /* let a, b = values[0]; */
  TS_VAR,    /* var a [: type] = values[0]; */
  TS_ASSIGN, /* a = values[0]; (a += e is a = a + e) */
  TS_RETURN, /* return values...; */
  TS_WHILE,  /* while cond { body } */
  TS_FOR,    /* for names[0] in cond..limit [step step] { body } */
  TS_IF,     /* if cond { body } [else { orelse }] */
} tg_stmt_kind;

typedef struct tg_stmts tg_stmts;

typedef struct tg_stmt {
  tg_stmt_kind kind;
  src_loc loc;          /* the leading keyword (the name of an assignment) */
  int nnames;           /* let: names bound (>= 1); var, assign, for: 1 */
  const char **names;
  src_loc *name_locs;
  tg_nodes values;      /* let, var, assign: one expression; return: the results */
  tg_node *type;        /* var: the declared type (a TG_TYPE), or NULL */
  tg_node *cond;        /* while, if: the condition; for: the first value */
  tg_node *limit, *step; /* for: the bound (excluded) and the step (NULL: 1) */
  tg_stmts *body, *orelse; /* while, for, if: the blocks (orelse may be NULL) */
} tg_stmt;

typedef struct tg_params {
  tg_param *v;
  int n, cap;
} tg_params;

struct tg_stmts {
  tg_stmt *v;
  int n, cap;
};

typedef struct tg_graph {
  const char *name;
  src_loc loc;
  tg_params params;
  tg_nodes results;     /* declared result types (TG_TYPE nodes) */
  bool has_results;     /* "-> ..." given */
  src_loc results_loc;
  tg_stmts body;
  src_loc end_loc;      /* the closing brace */
} tg_graph;

/* Call arguments while parsing: positional then keyword. */
typedef struct tg_args {
  tg_nodes pos;
  tg_kwargs kw;
} tg_args;

/* Parser state shared by the lexer (through yyextra) and the grammar. */
typedef struct tg_parser {
  arena *a;
  diag *d;
  const char *file;     /* interned in a */
  int line, col;        /* lexer position of the next character */
  int last_line, last_col; /* just past the most recent token */
  int prev_line, prev_col; /* just past the token before it */
  VEC(tg_graph *) graphs;
  int syntax_errors;
  bool lex_fatal;       /* input ended inside a comment: no more syntax errors */
} tg_parser;

/* ---- tree construction (ast.c) ---------------------------------------- */

tg_node *fe_tg_node(tg_parser *p, tg_kind k, src_loc loc);
tg_node *fe_tg_binary(tg_parser *p, int op, src_loc loc, tg_node *a, tg_node *b);
void fe_tg_push(tg_parser *p, tg_nodes *l, tg_node *n);
void fe_tg_push_kw(tg_parser *p, tg_kwargs *l, const char *name, src_loc loc, tg_node *v);
/* Spells a tree back as text (error messages and tests). */
void fe_tg_print_node(strbuf *b, const tg_node *n);

/* ---- parsing and lowering --------------------------------------------- */

/* Runs the grammar over text; fills p->graphs. Reports syntax errors into
 * p->d and returns their count. */
int fe_tg_parse_text(tg_parser *p, const char *text, size_t len);

/* Checks every graph of p and lowers the entry graph (NULL: the last) into
 * a new module; NULL after reporting errors. */
ir_module *fe_tg_lower(tg_parser *p, const char *entry);

#endif
