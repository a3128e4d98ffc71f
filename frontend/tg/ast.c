/* ast.c: building and printing the .tg syntax tree. Every node lives in
 * the parser's arena. */
#include "frontend/tg/tg.h"

#include <math.h>

tg_node *fe_tg_node(tg_parser *p, tg_kind k, src_loc loc) {
  tg_node *n = arena_alloc(p->a, sizeof *n);
  n->kind = k;
  n->loc = loc;
  n->type = IR_TYPE_INVALID;
  n->rank = -1;
  return n;
}

tg_node *fe_tg_binary(tg_parser *p, int op, src_loc loc, tg_node *a, tg_node *b) {
  tg_node *n = fe_tg_node(p, TG_BINARY, loc);
  n->op = op;
  n->a = a;
  n->b = b;
  return n;
}

void fe_tg_push(tg_parser *p, tg_nodes *l, tg_node *n) { VEC_PUSH(p->a, *l, n); }

void fe_tg_push_kw(tg_parser *p, tg_kwargs *l, const char *name, src_loc loc, tg_node *v) {
  tg_kwarg k = {name, loc, v};
  VEC_PUSH(p->a, *l, k);
}

static const char *const binop_spelling[] = {
    [TG_ADD] = "+", [TG_SUB] = "-", [TG_MUL] = "*", [TG_DIV] = "/", [TG_MOD] = "%",
    [TG_POW] = "**", [TG_MATMUL] = "@", [TG_EQ] = "==", [TG_NE] = "!=",
    [TG_LT] = "<", [TG_LE] = "<=", [TG_GT] = ">", [TG_GE] = ">=",
    [TG_AND] = "&&", [TG_OR] = "||",
};

static void print_list(strbuf *b, const tg_nodes *l) {
  for (int i = 0; i < l->n; i++) {
    if (i) sb_puts(b, ", ");
    fe_tg_print_node(b, l->v[i]);
  }
}

void fe_tg_print_node(strbuf *b, const tg_node *n) {
  if (!n) return;
  switch (n->kind) {
  case TG_NUM:
    if (n->is_int) sb_printf(b, "%lld", (long long)n->ival);
    else if (isnan(n->num)) sb_puts(b, "nan");
    else if (isinf(n->num)) sb_puts(b, n->num < 0 ? "-inf" : "inf");
    else sb_printf(b, "%.9g", n->num);
    break;
  case TG_NAME: sb_puts(b, n->name); break;
  case TG_STR: sb_printf(b, "\"%s\"", n->name); break;
  case TG_BOOL: sb_puts(b, n->ival ? "true" : "false"); break;
  case TG_TYPE:
    sb_puts(b, ir_type_name(n->type));
    if (n->rank >= 0) {
      sb_putc(b, '[');
      for (int i = 0; i < n->rank; i++) sb_printf(b, "%s%lld", i ? "," : "", (long long)n->dims[i]);
      sb_putc(b, ']');
    }
    break;
  case TG_LIST:
    sb_putc(b, '[');
    print_list(b, &n->args);
    sb_putc(b, ']');
    break;
  case TG_UNARY:
    sb_putc(b, (char)n->op);
    fe_tg_print_node(b, n->a);
    break;
  case TG_BINARY:
    sb_putc(b, '(');
    fe_tg_print_node(b, n->a);
    sb_printf(b, " %s ", binop_spelling[n->op]);
    fe_tg_print_node(b, n->b);
    sb_putc(b, ')');
    break;
  case TG_CALL:
    sb_printf(b, "%s(", n->name);
    print_list(b, &n->args);
    for (int i = 0; i < n->kws.n; i++) {
      if (i || n->args.n) sb_puts(b, ", ");
      sb_printf(b, "%s=", n->kws.v[i].name);
      fe_tg_print_node(b, n->kws.v[i].value);
    }
    sb_putc(b, ')');
    break;
  case TG_INDEX:
    fe_tg_print_node(b, n->a);
    sb_putc(b, '[');
    print_list(b, &n->args);
    sb_putc(b, ']');
    break;
  case TG_IF:
    sb_puts(b, "(if ");
    fe_tg_print_node(b, n->a);
    sb_puts(b, " then ");
    fe_tg_print_node(b, n->b);
    sb_puts(b, " else ");
    fe_tg_print_node(b, n->c);
    sb_putc(b, ')');
    break;
  case TG_SLICE:
    fe_tg_print_node(b, n->a);
    sb_putc(b, ':');
    fe_tg_print_node(b, n->b);
    if (n->c) {
      sb_putc(b, ':');
      fe_tg_print_node(b, n->c);
    }
    break;
  }
}
