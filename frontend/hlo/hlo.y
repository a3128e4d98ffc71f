/* hlo.y: the HLO text grammar (bison, pure, with locations).
 *
 *   module      : [ "HloModule" name { "," attr } { table } ] computation { computation }
 *   table       : heading { integer value }     (heading: FileNames, FunctionNames,
 *                                                FileLocations or StackFrames on its own line)
 *   (module attr: "entry_computation_layout" "=" "{" "(" [ shape { "," shape } ] ")" "->" shape "}"
 *                 is read as shapes; other attributes as token trees)
 *   computation : [ "ENTRY" ] name [ "(" [ param { "," param } ] ")" "->" shape ]
 *                 "{" instruction { instruction } "}" { "," attr }
 *   param       : name ":" shape
 *   instruction : [ "ROOT" ] name "=" [ shape ] rhs { "," attr }
 *   rhs         : opcode "(" [ operand { "," operand } ] ")"
 *               | "constant" "(" literal ")"
 *   operand     : [ shape ] name                 (a reference)
 *               | [ shape ] opcode "(" ... ")"   (a nested instruction)
 *               | [ shape ] "constant" "(" literal ")"
 *               | integer                        (parameter's number)
 *   attr        : name "=" value
 *   value       : token | group | group "<=" group [ "T" group ]   (iota list)
 *   group       : "{" tokens "}" | "[" tokens "]" | "(" tokens ")"
 *   shape       : type "[" [ dim { "," dim } ] "]" [ layout ] | "(" [ shape { "," shape } ] ")"
 *   layout      : "{" [ int { "," int } ] [ ":" { name "(" tiledims ")" { "(" tiledims ")" } } ] "}"
 *
 * Attribute values and literals are kept as token trees (hlo.h); their
 * meaning is read by attrs.c and literal.c. The only ambiguity, a layout
 * on a signature's result shape versus the computation body (both start
 * with "{"), is resolved by spelling the body rules out: a layout starts
 * with an integer, ':' or '}', a body with an instruction.
 *
 * The first syntax error ends the parse (HLO has no statement separator
 * to resynchronise on); semantic errors are collected by build.c, many per
 * run. */
%define api.pure full
%define api.prefix {hlo_yy}
%define parse.error verbose
%define api.location.type {hlo_loc}
%locations
%lex-param {void *scanner}
%parse-param {void *scanner} {hlo_parser *p}
%expect 0

%code requires {
#include "frontend/hlo/hlo.h"
}

%code provides {
int hlo_yylex(HLO_YYSTYPE *lval, HLO_YYLTYPE *lloc, void *scanner);
void hlo_yyerror(HLO_YYLTYPE *lloc, void *scanner, hlo_parser *p, const char *msg);
}

%code {
#define YYLLOC_DEFAULT(Cur, Rhs, N)                                       \
  do {                                                                    \
    if (N) {                                                              \
      (Cur).first_line = YYRHSLOC(Rhs, 1).first_line;                    \
      (Cur).first_column = YYRHSLOC(Rhs, 1).first_column;                \
      (Cur).first_off = YYRHSLOC(Rhs, 1).first_off;                      \
      (Cur).last_line = YYRHSLOC(Rhs, N).last_line;                      \
      (Cur).last_column = YYRHSLOC(Rhs, N).last_column;                  \
      (Cur).last_off = YYRHSLOC(Rhs, N).last_off;                        \
    } else {                                                              \
      (Cur).first_line = (Cur).last_line = YYRHSLOC(Rhs, 0).last_line;    \
      (Cur).first_column = (Cur).last_column = YYRHSLOC(Rhs, 0).last_column; \
      (Cur).first_off = (Cur).last_off = YYRHSLOC(Rhs, 0).last_off;      \
    }                                                                     \
  } while (0)

#define YYMAXDEPTH 2000
#define YY_STR1(x) #x
#define YY_STR(x) YY_STR1(x)

static hlo_tok *group(hlo_parser *p, hlo_tok *open, hlo_tokvec *kids, hlo_tok *close) {
  hlo_tok *g = arena_alloc(p->scratch, sizeof *g);
  g->kind = HLO_GROUP;
  g->open = open->text[0];
  g->loc = open->loc;
  g->off = open->off;
  g->end = close->end;
  g->n = kids ? kids->n : 0;
  g->kids = kids ? kids->v : NULL;
  return g;
}

static hlo_tok *iota_list(hlo_parser *p, hlo_tok *a, hlo_tok *b, hlo_tok *t, hlo_tok *perm) {
  hlo_tok *g = arena_alloc(p->scratch, sizeof *g);
  g->kind = HLO_GROUP;
  g->open = '<';
  g->loc = a->loc;
  g->off = a->off;
  g->end = perm ? perm->end : b->end;
  g->n = perm ? 4 : 2;
  g->kids = arena_array(p->scratch, 4, sizeof(hlo_tok *));
  g->kids[0] = a;
  g->kids[1] = b;
  g->kids[2] = t;
  g->kids[3] = perm;
  return g;
}

static hlo_inst *new_inst(hlo_parser *p) {
  return arena_alloc(p->scratch, sizeof(hlo_inst));
}

static hlo_comp *new_comp(hlo_parser *p, hlo_tok *entry, hlo_tok *name) {
  hlo_comp *c = arena_alloc(p->scratch, sizeof *c);
  c->entry = entry != NULL;
  c->name = name;
  return c;
}

/* Closes a computation: takes the pending instructions. */
static void end_comp(hlo_parser *p, hlo_comp *c) {
  c->insts = p->pending;
  memset(&p->pending, 0, sizeof p->pending);
  VEC_PUSH(p->scratch, p->comps, c);
}

static hlo_tokvec *tv_new(hlo_parser *p) {
  return arena_alloc(p->scratch, sizeof(hlo_tokvec));
}

/* A layout as fe_hlo_array_shape reads it: the minor-to-major integers,
 * then (when there is a ':' part) a ':' marker and the items. */
static hlo_tokvec *layout_join(hlo_parser *p, hlo_tokvec *ints, hlo_tokvec *tail) {
  hlo_tokvec *lay = ints ? ints : tv_new(p);
  if (tail) {
    hlo_tok *sep = arena_alloc(p->scratch, sizeof *sep);
    sep->kind = ':';
    sep->text = ":";
    sep->len = 1;
    VEC_PUSH(p->scratch, *lay, sep);
    for (int i = 0; i < tail->n; i++) VEC_PUSH(p->scratch, *lay, tail->v[i]);
  }
  return lay;
}
}

%union {
  hlo_tok *tok;
  hlo_tokvec *toks;
  ir_shape *shape;
  hlo_shapevec *shapes;
  hlo_inst *inst;
  hlo_operand opnd;
  hlo_opndvec *opnds;
  hlo_attrvec *attrs;
  hlo_comp *comp;
  hlo_paramvec *params;
}

%token <tok> KW_HLOMODULE "HloModule" KW_ENTRY "ENTRY" KW_ROOT "ROOT"
%token <tok> KW_CONSTANT "constant" KW_ECL "entry_computation_layout"
%token <tok> NAME "name" TYPE "element type" INT "integer" FLOAT "number"
%token <tok> STRING "string" DXD "dimension list" PAD "padding"
%token <tok> DIMLABELS "dim_labels" HEX "hex number"
%token <tok> ARROW "->" ELLIPSIS "..." LE "<=" TILE "T" KW_TABLE "table heading"
%token <tok> '{' '}' '[' ']' '(' ')' '=' ',' ':' '*' '?' '<'

%type <tok> name root_opt entry_opt value atom group soup_item tiledim
%type <toks> soup soup_opt dims dims_opt layout_ints layout_ints_opt layout_tail layout_items tiledims paren_groups
%type <shape> shape array_base
%type <shapes> shapes shapes_opt
%type <inst> inst rhs
%type <opnd> operand
%type <opnds> operands operands_opt
%type <attrs> attrs comp_attrs
%type <comp> comp_head comp_head_arr
%type <params> params params_opt

%%

module
  : header tables comps
  | comps
  ;

tables
  : %empty
  | tables table_head table_rows
  ;

table_head
  : KW_TABLE {
      hlo_table *t = arena_alloc(p->scratch, sizeof *t);
      t->name = $1;
      VEC_PUSH(p->scratch, p->tables, t);
    }
  ;

table_rows
  : %empty
  | table_rows INT value {
      hlo_table *t = p->tables.v[p->tables.n - 1];
      VEC_PUSH(p->scratch, t->ids, $2);
      VEC_PUSH(p->scratch, t->texts, $3);
    }
  ;

header
  : KW_HLOMODULE name header_attrs { p->module_name = $2; }
  ;

header_attrs
  : %empty
  | header_attrs ',' name '=' value {
      hlo_attr a = {$3, $5};
      VEC_PUSH(p->scratch, p->header, a);
    }
  | header_attrs ',' KW_ECL '=' '{' '(' shapes_opt ')' ARROW shape '}' {
      if (p->ecl_params) {
        fe_hlo_error(p, $3->loc, "module attribute 'entry_computation_layout' is given twice");
      } else {
        p->ecl_params = $7;
        p->ecl_result = $10;
        p->ecl_loc = $3->loc;
      }
    }
  ;

comps
  : comp
  | comps comp
  ;

comp
  : comp_head '{' insts '}' comp_attrs {
      if ($5) $1->attrs = *$5;
      end_comp(p, $1);
    }
  | comp_head_arr '{' insts '}' comp_attrs {
      $1->result = fe_hlo_array_shape(p, $1->rtype, $1->rdims, NULL);
      if ($5) $1->attrs = *$5;
      end_comp(p, $1);
    }
  | comp_head_arr '{' layout_ints_opt layout_tail '}' '{' insts '}' comp_attrs {
      $1->result = fe_hlo_array_shape(p, $1->rtype, $1->rdims, layout_join(p, $3, $4));
      if ($9) $1->attrs = *$9;
      end_comp(p, $1);
    }
  ;

/* after a computation's body: ", execution_thread=\"host\"" */
comp_attrs
  : %empty { $$ = NULL; }
  | comp_attrs ',' name '=' value {
      $$ = $1 ? $1 : arena_alloc(p->scratch, sizeof(hlo_attrvec));
      hlo_attr a = {$3, $5};
      VEC_PUSH(p->scratch, *$$, a);
    }
  ;

entry_opt
  : %empty     { $$ = NULL; }
  | KW_ENTRY   { $$ = $1; }
  ;

comp_head
  : entry_opt name                                   { $$ = new_comp(p, $1, $2); }
  | entry_opt name '(' params_opt ')' ARROW '(' shapes_opt ')' {
      $$ = new_comp(p, $1, $2);
      $$->has_sig = true;
      $$->params = *$4;
      $$->result = fe_hlo_tuple_shape(p, $8);
      $$->result_loc = $7->loc;
    }
  ;

comp_head_arr
  : entry_opt name '(' params_opt ')' ARROW TYPE '[' dims_opt ']' {
      $$ = new_comp(p, $1, $2);
      $$->has_sig = true;
      $$->params = *$4;
      $$->rtype = $7;
      $$->rdims = $9;
      $$->result_loc = $7->loc;
    }
  ;

params_opt
  : %empty   { $$ = arena_alloc(p->scratch, sizeof(hlo_paramvec)); }
  | params   { $$ = $1; }
  ;

params
  : name ':' shape {
      $$ = arena_alloc(p->scratch, sizeof(hlo_paramvec));
      hlo_param q = {$1, $3};
      VEC_PUSH(p->scratch, *$$, q);
    }
  | params ',' name ':' shape {
      $$ = $1;
      hlo_param q = {$3, $5};
      VEC_PUSH(p->scratch, *$$, q);
    }
  ;

insts
  : inst
  | insts inst
  ;

inst
  : root_opt name '=' rhs attrs {
      $$ = $4;
      $$->root = $1 != NULL;
      $$->name = $2;
      if ($5) $$->attrs = *$5;
      VEC_PUSH(p->scratch, p->pending, $$);
    }
  | root_opt name '=' shape rhs attrs {
      $$ = $5;
      $$->root = $1 != NULL;
      $$->name = $2;
      $$->shape = $4;
      $$->shape_loc = fe_hlo_loc(p, &@4);
      if ($6) $$->attrs = *$6;
      VEC_PUSH(p->scratch, p->pending, $$);
    }
  ;

root_opt
  : %empty    { $$ = NULL; }
  | KW_ROOT   { $$ = $1; }
  ;

name
  : NAME
  | KW_CONSTANT
  ;

rhs
  : NAME '(' operands_opt ')' {
      $$ = new_inst(p);
      $$->opcode = $1;
      if ($3) $$->ops = *$3;
    }
  | KW_CONSTANT group {
      $$ = new_inst(p);
      $$->opcode = $1;
      $$->literal = $2;
    }
  ;

attrs
  : %empty { $$ = NULL; }
  | attrs ',' name '=' value {
      $$ = $1 ? $1 : arena_alloc(p->scratch, sizeof(hlo_attrvec));
      hlo_attr a = {$3, $5};
      VEC_PUSH(p->scratch, *$$, a);
    }
  ;

operands_opt
  : %empty     { $$ = NULL; }
  | operands   { $$ = $1; }
  ;

operands
  : operand {
      $$ = arena_alloc(p->scratch, sizeof(hlo_opndvec));
      $$->v = arena_array(p->scratch, 2, sizeof *$$->v); /* most ops take 1 or 2 */
      $$->cap = 2;
      VEC_PUSH(p->scratch, *$$, $1);
    }
  | operands ',' operand { $$ = $1; VEC_PUSH(p->scratch, *$$, $3); }
  ;

operand
  : name {
      memset(&$$, 0, sizeof $$);
      $$.kind = HLO_OPND_REF;
      $$.tok = $1;
    }
  | shape name {
      memset(&$$, 0, sizeof $$);
      $$.kind = HLO_OPND_REF;
      $$.tok = $2;
      $$.shape = $1;
      $$.shape_loc = fe_hlo_loc(p, &@1);
    }
  | rhs {
      memset(&$$, 0, sizeof $$);
      $$.kind = HLO_OPND_NESTED;
      $$.nested = $1;
      VEC_PUSH(p->scratch, p->pending, $1);
    }
  | shape rhs {
      memset(&$$, 0, sizeof $$);
      $$.kind = HLO_OPND_NESTED;
      $$.nested = $2;
      $2->shape = $1;
      $2->shape_loc = fe_hlo_loc(p, &@1);
      VEC_PUSH(p->scratch, p->pending, $2);
    }
  | INT {
      memset(&$$, 0, sizeof $$);
      $$.kind = HLO_OPND_INT;
      $$.tok = $1;
    }
  ;

/* ---- shapes ---- */

shape
  : array_base                          { $$ = $1; }
  | TYPE '[' dims_opt ']' '{' layout_ints_opt layout_tail '}' {
      $$ = fe_hlo_array_shape(p, $1, $3, layout_join(p, $6, $7));
    }
  | '(' shapes_opt ')'                  { $$ = fe_hlo_tuple_shape(p, $2); }
  ;

array_base
  : TYPE '[' dims_opt ']'   { $$ = fe_hlo_array_shape(p, $1, $3, NULL); }
  ;

shapes_opt
  : %empty   { $$ = arena_alloc(p->scratch, sizeof(hlo_shapevec)); }
  | shapes   { $$ = $1; }
  ;

shapes
  : shape {
      $$ = arena_alloc(p->scratch, sizeof(hlo_shapevec));
      VEC_PUSH(p->scratch, *$$, $1);
    }
  | shapes ',' shape { $$ = $1; VEC_PUSH(p->scratch, *$$, $3); }
  ;

dims_opt
  : %empty  { $$ = tv_new(p); }
  | dims    { $$ = $1; }
  ;

dims
  : INT              { $$ = tv_new(p); VEC_PUSH(p->scratch, *$$, $1); }
  | '?'              { $$ = tv_new(p); VEC_PUSH(p->scratch, *$$, $1); }
  | LE INT           { $$ = tv_new(p); VEC_PUSH(p->scratch, *$$, $1); }
  | dims ',' INT     { $$ = $1; VEC_PUSH(p->scratch, *$$, $3); }
  | dims ',' '?'     { $$ = $1; VEC_PUSH(p->scratch, *$$, $3); }
  | dims ',' LE INT  { $$ = $1; VEC_PUSH(p->scratch, *$$, $3); }
  ;

layout_ints_opt
  : %empty        { $$ = NULL; }
  | layout_ints   { $$ = $1; }
  ;

layout_ints
  : INT                   { $$ = tv_new(p); VEC_PUSH(p->scratch, *$$, $1); }
  | layout_ints ',' INT   { $$ = $1; VEC_PUSH(p->scratch, *$$, $3); }
  ;

layout_tail
  : %empty                { $$ = NULL; }
  | ':' layout_items      { $$ = $2; }
  ;

/* Layout items after ':' are a name and one or more parenthesised lists
 * ("T(8,128)(2,1)", "E(16)", "S(1)"), flattened as
 * name, group, group, ... for fe_hlo_array_shape. */
layout_items
  : %empty                          { $$ = tv_new(p); }
  | layout_items NAME paren_groups  {
      $$ = $1;
      VEC_PUSH(p->scratch, *$$, $2);
      for (int i = 0; i < $3->n; i++) VEC_PUSH(p->scratch, *$$, $3->v[i]);
    }
  | layout_items TILE paren_groups  {
      $$ = $1;
      VEC_PUSH(p->scratch, *$$, $2);
      for (int i = 0; i < $3->n; i++) VEC_PUSH(p->scratch, *$$, $3->v[i]);
    }
  ;

paren_groups
  : '(' tiledims ')'               { $$ = tv_new(p); VEC_PUSH(p->scratch, *$$, group(p, $1, $2, $3)); }
  | paren_groups '(' tiledims ')'  { $$ = $1; VEC_PUSH(p->scratch, *$$, group(p, $2, $3, $4)); }
  ;

tiledims
  : tiledim                { $$ = tv_new(p); VEC_PUSH(p->scratch, *$$, $1); }
  | tiledims ',' tiledim   { $$ = $1; VEC_PUSH(p->scratch, *$$, $3); }
  ;

tiledim
  : INT
  | '*'
  ;

/* ---- attribute values: token trees ---- */

/* XLA's iota tile lists ("[2,10]<=[20]", "[3,10]<=[6,5]T(1,0)") read as
 * one '<' group holding their parts, so that they can be named in errors
 * or kept verbatim. */
value
  : atom
  | group
  | group LE group                { $$ = iota_list(p, $1, $3, NULL, NULL); }
  | group LE group TILE group     { $$ = iota_list(p, $1, $3, $4, $5); }
  ;

atom
  : NAME | INT | FLOAT | STRING | DXD | PAD | DIMLABELS | HEX | KW_CONSTANT
  ;

group
  : '{' soup_opt '}'   { $$ = group(p, $1, $2, $3); }
  | '[' soup_opt ']'   { $$ = group(p, $1, $2, $3); }
  | '(' soup_opt ')'   { $$ = group(p, $1, $2, $3); }
  ;

soup_opt
  : %empty   { $$ = NULL; }
  | soup     { $$ = $1; }
  ;

soup
  : soup_item        { $$ = tv_new(p); VEC_PUSH(p->scratch, *$$, $1); }
  | soup soup_item   { $$ = $1; VEC_PUSH(p->scratch, *$$, $2); }
  ;

soup_item
  : atom | group | TYPE | ARROW | ELLIPSIS | LE | TILE | KW_HLOMODULE | KW_ENTRY | KW_ROOT | KW_ECL
  | '=' | ',' | ':' | '*' | '?' | '<'
  ;

%%

void hlo_yyerror(HLO_YYLTYPE *lloc, void *scanner, hlo_parser *p, const char *msg) {
  (void)scanner;
  if (strcmp(msg, "memory exhausted") == 0)
    msg = "nesting is too deep (more than the parser's stack of " YY_STR(YYMAXDEPTH) " levels)";
  fe_hlo_error(p, fe_hlo_loc(p, lloc), "%s", msg);
}
