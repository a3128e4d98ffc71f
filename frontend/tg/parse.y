/* parse.y: the .tg grammar (bison, pure, with locations).
 *
 *   file     := graph*
 *   graph    := "graph" IDENT "(" [param ("," param)*] ")" ["->" results] "{" stmt* "}"
 *   param    := IDENT ":" type
 *   results  := type | "(" type ("," type)* ")"
 *   type     := TYPE | TYPE "[" [INT ("," INT)*] "]"
 *   stmt     := "let" IDENT ("," IDENT)* "=" expr ";"
 *             | "var" IDENT [":" type] "=" expr ";"
 *             | IDENT ("=" | "+=" | "-=" | "*=" | "/=") expr ";"
 *             | "return" expr ("," expr)* ";"
 *             | "while" expr block
 *             | "for" IDENT "in" expr ".." expr ["step" expr] block
 *             | ifstmt
 *             | ("break" | "continue") ";"          (an error: not supported)
 *   ifstmt   := "if" expr block ["else" (block | ifstmt)]
 *   block    := "{" stmt* "}"
 *   expr     := expr binop expr | "-" expr | "!" expr | postfix | type
 *             | "if" expr "then" expr "else" expr
 *   postfix  := atom | postfix "[" index ("," index)* "]"
 *   index    := expr | [expr] ":" [expr] [":" [expr]]
 *   atom     := NUMBER | "true" | "false" | STRING | IDENT
 *             | IDENT "(" [arg ("," arg)*] ")" | "(" expr ")"
 *             | "[" [expr ("," expr)*] "]"
 *   arg      := expr | (IDENT | "if" | "then" | "else" | "while") "=" expr
 * Precedence, loosest first: if-then-else (its else part extends as far
 * as it can); || ; && ; == != < <= > >= (non-associative); + - ;
 * * / % @ ; unary - ! ; ** (right-associative). "in" and "step" are
 * identifiers that the for statement expects in those places; the other
 * words are reserved. An expression never continues with "{", so a
 * condition ends where its block begins.
 *
 * Recovery: a bad statement is skipped up to its ';' or past the block
 * that follows (a loop or branch with a bad header), or the graph's '}';
 * a bad graph header up to the next '}', so one run reports several
 * syntax errors. The tree lives in the parser's arena. */
%define api.pure full
%define api.prefix {tg_yy}
%define parse.error custom
%define parse.lac full
%locations
%lex-param {void *scanner}
%parse-param {void *scanner} {tg_parser *p}

%code requires {
#include "frontend/tg/tg.h"
}

%code provides {
int tg_yylex(TG_YYSTYPE *lval, TG_YYLTYPE *lloc, void *scanner);
void tg_yyerror(TG_YYLTYPE *lloc, void *scanner, tg_parser *p, const char *msg);
}

%code {
static src_loc mkloc(tg_parser *p, TG_YYLTYPE l) {
  src_loc s = {p->file, l.first_line, l.first_column};
  return s;
}
#define LOC(l) mkloc(p, (l))

static tg_stmt mkstmt(tg_stmt_kind kind, src_loc loc) {
  tg_stmt s;
  memset(&s, 0, sizeof s);
  s.kind = kind;
  s.loc = loc;
  return s;
}

/* A statement naming one variable (var, assignment, for). */
static tg_stmt mkstmt1(tg_parser *p, tg_stmt_kind kind, src_loc loc, const char *name, src_loc nloc) {
  tg_stmt s = mkstmt(kind, loc);
  s.nnames = 1;
  s.names = arena_array(p->a, 1, sizeof(char *));
  s.name_locs = arena_array(p->a, 1, sizeof(src_loc));
  s.names[0] = name;
  s.name_locs[0] = nloc;
  return s;
}

static tg_stmts *mkblock(tg_parser *p, tg_stmts b) {
  tg_stmts *r = arena_alloc(p->a, sizeof *r);
  *r = b;
  return r;
}

/* A contextual word ("in", "step") where the grammar has an identifier. */
static void expect_word(tg_parser *p, const char *got, src_loc at, const char *want, const char *where) {
  if (strcmp(got, want) == 0) return;
  diag_error(p->d, at, "expected '%s' %s, got '%s'", want, where, got);
  p->syntax_errors++;
}

/* Appends keyword argument name=v, reporting a repeated name. */
static void push_kw(tg_parser *p, tg_args *a, const char *name, src_loc at, tg_node *v) {
  for (int i = 0; i < a->kw.n; i++)
    if (strcmp(a->kw.v[i].name, name) == 0) {
      diag_error(p->d, at, "keyword argument '%s' given twice", name);
      p->syntax_errors++;
    }
  fe_tg_push_kw(p, &a->kw, name, at, v);
}

/* break and continue: a loop ends only when its condition is false. */
static void no_jump(tg_parser *p, src_loc at, const char *what) {
  diag_error(p->d, at, "'%s' is not supported: a loop runs until its condition is false "
             "(put the exit test into the condition)", what);
  p->syntax_errors++;
}

static tg_node *mktype(tg_parser *p, src_loc loc, int type) {
  tg_node *n = fe_tg_node(p, TG_TYPE, loc);
  n->type = (ir_type)type;
  n->rank = -1;
  return n;
}

/* Checks the dimension list of a type and copies it into n. */
static void set_dims(tg_parser *p, tg_node *n, const tg_nodes *dims) {
  if (dims->n > IR_MAX_RANK) {
    diag_error(p->d, n->loc, "type has %d dimensions; at most %d are supported",
               dims->n, IR_MAX_RANK);
    p->syntax_errors++;
    n->rank = 0;
    return;
  }
  n->rank = dims->n;
  for (int i = 0; i < dims->n; i++) {
    tg_node *d = dims->v[i];
    if (!d->is_int) {
      diag_error(p->d, d->loc, "dimension must be a non-negative integer");
      p->syntax_errors++;
      n->dims[i] = 1;
    } else {
      n->dims[i] = d->ival;
    }
  }
}
}

%union {
  tg_node *node;
  const char *str;
  int type;
  tg_nodes nodes;
  tg_args args;
  tg_param param;
  tg_params params;
  tg_stmt stmt;
  tg_stmts stmts;
  tg_stmts *block;
  tg_graph *graph;
}

%token GRAPH "'graph'" LET "'let'" RETURN "'return'" VAR "'var'" WHILE "'while'" FOR "'for'"
%token IF "'if'" THEN "'then'" ELSE "'else'" BREAK "'break'" CONTINUE "'continue'"
%token DOTDOT "'..'" ADDEQ "'+='" SUBEQ "'-='" MULEQ "'*='" DIVEQ "'/='"
%token <node> NUMBER "number" BOOLEAN "boolean"
%token <str> IDENT "identifier" STRING "string"
%token <type> TYPE "element type"
%token ARROW "'->'" POW "'**'" EQ "'=='" NE "'!='" LE "'<='" GE "'>='" ANDAND "'&&'" OROR "'||'"

%type <graph> graph
%type <params> params param_list
%type <param> param
%type <node> type expr postfix atom index opt_expr
%type <nodes> results dims type_list expr_list list_items index_list names
%type <args> args arg_list
%type <stmt> stmt ifstmt
%type <stmts> stmts
%type <block> block
%type <node> opt_vartype
%type <str> kwword
%type <type> assignop

%precedence ELSE
%left OROR
%left ANDAND
%nonassoc EQ NE '<' LE '>' GE
%left '+' '-'
%left '*' '/' '%' '@'
%precedence UNARY
%right POW

%%

file:
    %empty
  | file graph       { if ($2) VEC_PUSH(p->a, p->graphs, $2); }
  | file error '}'   { yyerrok; }
  ;

graph:
    GRAPH IDENT '(' params ')' results '{' stmts '}' {
      tg_graph *g = arena_alloc(p->a, sizeof *g);
      g->name = $2;
      g->loc = LOC(@2);
      g->params = $4;
      g->results = $6;
      g->has_results = $6.n > 0;
      if ($6.n) g->results_loc = $6.v[0]->loc;
      g->body = $8;
      g->end_loc = LOC(@9);
      $$ = g;
    }
  ;

params:
    %empty           { memset(&$$, 0, sizeof $$); }
  | param_list
  ;

param_list:
    param                 { memset(&$$, 0, sizeof $$); VEC_PUSH(p->a, $$, $1); }
  | param_list ',' param  { $$ = $1; VEC_PUSH(p->a, $$, $3); }
  ;

param:
    IDENT ':' type   { $$.name = $1; $$.loc = LOC(@1); $$.type = $3; }
  ;

results:
    %empty                  { memset(&$$, 0, sizeof $$); }
  | ARROW type               { memset(&$$, 0, sizeof $$); fe_tg_push(p, &$$, $2); }
  | ARROW '(' type_list ')'  { $$ = $3; }
  ;

type_list:
    type                 { memset(&$$, 0, sizeof $$); fe_tg_push(p, &$$, $1); }
  | type_list ',' type   { $$ = $1; fe_tg_push(p, &$$, $3); }
  ;

type:
    TYPE                 { $$ = mktype(p, LOC(@1), $1); }
  | TYPE '[' ']'         { $$ = mktype(p, LOC(@1), $1); $$->rank = 0; }
  | TYPE '[' dims ']'    { $$ = mktype(p, LOC(@1), $1); set_dims(p, $$, &$3); }
  ;

dims:
    NUMBER               { memset(&$$, 0, sizeof $$); fe_tg_push(p, &$$, $1); }
  | dims ',' NUMBER      { $$ = $1; fe_tg_push(p, &$$, $3); }
  ;

stmts:
    %empty               { memset(&$$, 0, sizeof $$); }
  | stmts stmt           { $$ = $1; VEC_PUSH(p->a, $$, $2); }
  | stmts error ';'      { $$ = $1; yyerrok; }
  | stmts error block    { $$ = $1; yyerrok; }
  ;

stmt:
    LET names '=' expr ';' {
      $$ = mkstmt(TS_LET, LOC(@1));
      $$.nnames = $2.n;
      $$.names = arena_array(p->a, (size_t)$2.n, sizeof(char *));
      $$.name_locs = arena_array(p->a, (size_t)$2.n, sizeof(src_loc));
      for (int i = 0; i < $2.n; i++) {
        $$.names[i] = $2.v[i]->name;
        $$.name_locs[i] = $2.v[i]->loc;
      }
      fe_tg_push(p, &$$.values, $4);
    }
  | VAR IDENT opt_vartype '=' expr ';' {
      $$ = mkstmt1(p, TS_VAR, LOC(@1), $2, LOC(@2));
      $$.type = $3;
      fe_tg_push(p, &$$.values, $5);
    }
  | IDENT '=' expr ';' {
      $$ = mkstmt1(p, TS_ASSIGN, LOC(@1), $1, LOC(@1));
      fe_tg_push(p, &$$.values, $3);
    }
  | IDENT assignop expr ';' {
      $$ = mkstmt1(p, TS_ASSIGN, LOC(@1), $1, LOC(@1));
      tg_node *x = fe_tg_node(p, TG_NAME, LOC(@1));
      x->name = $1;
      fe_tg_push(p, &$$.values, fe_tg_binary(p, $2, LOC(@2), x, $3));
    }
  | RETURN expr_list ';' { $$ = mkstmt(TS_RETURN, LOC(@1)); $$.values = $2; }
  | WHILE expr block     { $$ = mkstmt(TS_WHILE, LOC(@1)); $$.cond = $2; $$.body = $3; }
  | FOR IDENT IDENT expr DOTDOT expr block {
      expect_word(p, $3, LOC(@3), "in", "after the loop variable");
      $$ = mkstmt1(p, TS_FOR, LOC(@1), $2, LOC(@2));
      $$.cond = $4;
      $$.limit = $6;
      $$.body = $7;
    }
  | FOR IDENT IDENT expr DOTDOT expr IDENT expr block {
      expect_word(p, $3, LOC(@3), "in", "after the loop variable");
      expect_word(p, $7, LOC(@7), "step", "or '{' after the range");
      $$ = mkstmt1(p, TS_FOR, LOC(@1), $2, LOC(@2));
      $$.cond = $4;
      $$.limit = $6;
      $$.step = $8;
      $$.body = $9;
    }
  | ifstmt
  | BREAK ';'            { no_jump(p, LOC(@1), "break"); $$ = mkstmt(TS_LET, LOC(@1)); }
  | CONTINUE ';'         { no_jump(p, LOC(@1), "continue"); $$ = mkstmt(TS_LET, LOC(@1)); }
  ;

ifstmt:
    IF expr block             { $$ = mkstmt(TS_IF, LOC(@1)); $$.cond = $2; $$.body = $3; }
  | IF expr block ELSE block  { $$ = mkstmt(TS_IF, LOC(@1)); $$.cond = $2; $$.body = $3; $$.orelse = $5; }
  | IF expr block ELSE ifstmt {
      $$ = mkstmt(TS_IF, LOC(@1));
      $$.cond = $2;
      $$.body = $3;
      tg_stmts e;
      memset(&e, 0, sizeof e);
      VEC_PUSH(p->a, e, $5);
      $$.orelse = mkblock(p, e);
    }
  ;

block:
    '{' stmts '}'        { $$ = mkblock(p, $2); }
  ;

opt_vartype:
    %empty               { $$ = NULL; }
  | ':' type             { $$ = $2; }
  ;

assignop:
    ADDEQ                { $$ = TG_ADD; }
  | SUBEQ                { $$ = TG_SUB; }
  | MULEQ                { $$ = TG_MUL; }
  | DIVEQ                { $$ = TG_DIV; }
  ;

names:
    IDENT                { memset(&$$, 0, sizeof $$);
                           tg_node *n = fe_tg_node(p, TG_NAME, LOC(@1)); n->name = $1;
                           fe_tg_push(p, &$$, n); }
  | names ',' IDENT      { $$ = $1;
                           tg_node *n = fe_tg_node(p, TG_NAME, LOC(@3)); n->name = $3;
                           fe_tg_push(p, &$$, n); }
  ;

expr_list:
    expr                 { memset(&$$, 0, sizeof $$); fe_tg_push(p, &$$, $1); }
  | expr_list ',' expr   { $$ = $1; fe_tg_push(p, &$$, $3); }
  ;

expr:
    postfix
  | type
  | expr OROR expr       { $$ = fe_tg_binary(p, TG_OR, LOC(@2), $1, $3); }
  | expr ANDAND expr     { $$ = fe_tg_binary(p, TG_AND, LOC(@2), $1, $3); }
  | expr EQ expr         { $$ = fe_tg_binary(p, TG_EQ, LOC(@2), $1, $3); }
  | expr NE expr         { $$ = fe_tg_binary(p, TG_NE, LOC(@2), $1, $3); }
  | expr '<' expr        { $$ = fe_tg_binary(p, TG_LT, LOC(@2), $1, $3); }
  | expr LE expr         { $$ = fe_tg_binary(p, TG_LE, LOC(@2), $1, $3); }
  | expr '>' expr        { $$ = fe_tg_binary(p, TG_GT, LOC(@2), $1, $3); }
  | expr GE expr         { $$ = fe_tg_binary(p, TG_GE, LOC(@2), $1, $3); }
  | expr '+' expr        { $$ = fe_tg_binary(p, TG_ADD, LOC(@2), $1, $3); }
  | expr '-' expr        { $$ = fe_tg_binary(p, TG_SUB, LOC(@2), $1, $3); }
  | expr '*' expr        { $$ = fe_tg_binary(p, TG_MUL, LOC(@2), $1, $3); }
  | expr '/' expr        { $$ = fe_tg_binary(p, TG_DIV, LOC(@2), $1, $3); }
  | expr '%' expr        { $$ = fe_tg_binary(p, TG_MOD, LOC(@2), $1, $3); }
  | expr '@' expr        { $$ = fe_tg_binary(p, TG_MATMUL, LOC(@2), $1, $3); }
  | expr POW expr        { $$ = fe_tg_binary(p, TG_POW, LOC(@2), $1, $3); }
  | '-' expr %prec UNARY { $$ = fe_tg_node(p, TG_UNARY, LOC(@1)); $$->op = '-'; $$->a = $2; }
  | '!' expr %prec UNARY { $$ = fe_tg_node(p, TG_UNARY, LOC(@1)); $$->op = '!'; $$->a = $2; }
  | IF expr THEN expr ELSE expr {
      $$ = fe_tg_node(p, TG_IF, LOC(@1)); $$->a = $2; $$->b = $4; $$->c = $6;
    }
  ;

postfix:
    atom
  | postfix '[' index_list ']' {
      $$ = fe_tg_node(p, TG_INDEX, LOC(@2)); $$->a = $1; $$->args = $3;
    }
  ;

index_list:
    index                  { memset(&$$, 0, sizeof $$); fe_tg_push(p, &$$, $1); }
  | index_list ',' index   { $$ = $1; fe_tg_push(p, &$$, $3); }
  ;

index:
    expr
  | opt_expr ':' opt_expr {
      $$ = fe_tg_node(p, TG_SLICE, LOC(@2)); $$->a = $1; $$->b = $3;
    }
  | opt_expr ':' opt_expr ':' opt_expr {
      $$ = fe_tg_node(p, TG_SLICE, LOC(@2)); $$->a = $1; $$->b = $3; $$->c = $5;
    }
  ;

opt_expr:
    %empty  { $$ = NULL; }
  | expr
  ;

atom:
    NUMBER
  | BOOLEAN
  | STRING               { $$ = fe_tg_node(p, TG_STR, LOC(@1)); $$->name = $1; }
  | IDENT                { $$ = fe_tg_node(p, TG_NAME, LOC(@1)); $$->name = $1; }
  | IDENT '(' args ')'   {
      $$ = fe_tg_node(p, TG_CALL, LOC(@1)); $$->name = $1;
      $$->args = $3.pos; $$->kws = $3.kw;
    }
  | '(' expr ')'         { $$ = $2; }
  | '[' list_items ']'   { $$ = fe_tg_node(p, TG_LIST, LOC(@1)); $$->args = $2; }
  ;

list_items:
    %empty               { memset(&$$, 0, sizeof $$); }
  | expr_list
  ;

args:
    %empty               { memset(&$$, 0, sizeof $$); }
  | arg_list
  ;

arg_list:
    expr                 { memset(&$$, 0, sizeof $$); fe_tg_push(p, &$$.pos, $1); }
  | IDENT '=' expr       { memset(&$$, 0, sizeof $$); fe_tg_push_kw(p, &$$.kw, $1, LOC(@1), $3); }
  | kwword '=' expr      { memset(&$$, 0, sizeof $$); fe_tg_push_kw(p, &$$.kw, $1, LOC(@1), $3); }
  | arg_list ',' expr    {
      $$ = $1;
      if ($$.kw.n) {
        diag_error(p->d, LOC(@3), "positional argument after a keyword argument");
        p->syntax_errors++;
      }
      fe_tg_push(p, &$$.pos, $3);
    }
  | arg_list ',' IDENT '=' expr  { $$ = $1; push_kw(p, &$$, $3, LOC(@3), $5); }
  | arg_list ',' kwword '=' expr { $$ = $1; push_kw(p, &$$, $3, LOC(@3), $5); }
  ;

/* Reserved words that name keyword arguments (loop's while=, branch's
 * if=, then=, else=). */
kwword:
    IF       { $$ = "if"; }
  | THEN     { $$ = "then"; }
  | ELSE     { $$ = "else"; }
  | WHILE    { $$ = "while"; }
  ;

%%

/* Token spellings for messages: keywords and punctuation quoted. */
static const char *token_name(yysymbol_kind_t k) {
  switch (k) {
  case YYSYMBOL_YYEOF: return "end of file";
  case YYSYMBOL_NUMBER: return "number";
  case YYSYMBOL_BOOLEAN: return "boolean";
  case YYSYMBOL_IDENT: return "identifier";
  case YYSYMBOL_STRING: return "string";
  case YYSYMBOL_TYPE: return "element type";
  default: return yysymbol_name(k);
  }
}

/* Whether token k can begin a statement (or end a block). */
static bool starts_stmt(yysymbol_kind_t k) {
  return k == YYSYMBOL_LET || k == YYSYMBOL_VAR || k == YYSYMBOL_RETURN || k == YYSYMBOL_IDENT ||
         k == YYSYMBOL_WHILE || k == YYSYMBOL_FOR || k == YYSYMBOL_IF || k == YYSYMBOL_BREAK ||
         k == YYSYMBOL_CONTINUE || strcmp(yysymbol_name(k), "'}'") == 0;
}

/* Whether the expected tokens are those that begin a statement. */
static bool expects_stmt(const yysymbol_kind_t *exp, int n) {
  for (int i = 0; i < n; i++)
    if (exp[i] == YYSYMBOL_VAR) return true;
  return false;
}

/* "unexpected X, expected A, B or C"; a statement that runs into the next
 * one is reported as a missing ';' just after its last token. */
static int yyreport_syntax_error(const yypcontext_t *ctx, void *scanner, tg_parser *p) {
  (void)scanner;
  p->syntax_errors++;
  if (p->lex_fatal) return 0;
  yysymbol_kind_t exp[YYNTOKENS];
  int n = yypcontext_expected_tokens(ctx, exp, YYNTOKENS);
  yysymbol_kind_t tok = yypcontext_token(ctx);
  src_loc loc = mkloc(p, *yypcontext_location(ctx));
  bool semi = false;
  for (int i = 0; i < n; i++)
    if (strcmp(yysymbol_name(exp[i]), "';'") == 0) semi = true;
  if (semi && p->prev_line > 0 && p->prev_line < loc.line &&
      starts_stmt(tok)) {
    src_loc at = {p->file, p->prev_line, p->prev_col};
    diag_error(p->d, at, "expected ';' at the end of the statement");
    return 0;
  }
  strbuf b;
  sb_init(&b);
  sb_printf(&b, "syntax error: unexpected %s", token_name(tok));
  if (n > 0 && n <= 4) {
    sb_puts(&b, ", expected ");
    for (int i = 0; i < n; i++)
      sb_printf(&b, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", token_name(exp[i]));
  } else if (n > 4 && expects_stmt(exp, n)) {
    sb_puts(&b, ", expected a statement or '}'");
  } else if (n > 4) {
    /* many operators could continue an expression: name the closer */
    for (int i = 0; i < n; i++) {
      const char *t = yysymbol_name(exp[i]);
      if (strcmp(t, "')'") == 0 || strcmp(t, "']'") == 0) {
        sb_printf(&b, ", expected %s or an operator", t);
        break;
      }
    }
  }
  diag_error(p->d, loc, "%s", sb_str(&b));
  sb_free(&b);
  return 0;
}

void tg_yyerror(TG_YYLTYPE *lloc, void *scanner, tg_parser *p, const char *msg) {
  (void)scanner;
  p->syntax_errors++;
  if (p->lex_fatal) return;
  diag_error(p->d, mkloc(p, *lloc), "%s", msg);
}
