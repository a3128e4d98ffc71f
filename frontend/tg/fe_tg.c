/* fe_tg.c: fe_parse_tg, the entry point of the .tg frontend: runs the
 * reentrant scanner and pure parser over the text, then lowers the tree
 * (lower.c). Syntax errors stop before semantic analysis, so a missing
 * token never cascades into "unknown name" errors. */
#include "frontend/tg/tg.h"

#include <limits.h>

#include "parse.h"
#define YYSTYPE TG_YYSTYPE
#define YYLTYPE TG_YYLTYPE
#include "lex.h"

int fe_tg_parse_text(tg_parser *p, const char *text, size_t len) {
  if (len > (size_t)INT_MAX - 2) {
    src_loc l = {p->file, 0, 0};
    diag_error(p->d, l, "input too large (%zu bytes)", len);
    return ++p->syntax_errors;
  }
  yyscan_t sc;
  if (tg_yylex_init_extra(p, &sc) != 0) base_die("tg: cannot create scanner");
  YY_BUFFER_STATE buf = tg_yy_scan_bytes(text, (int)len, sc);
  tg_yyparse(sc, p);
  tg_yy_delete_buffer(buf, sc);
  tg_yylex_destroy(sc);
  return p->syntax_errors;
}

ir_module *fe_parse_tg(const char *file, const char *text, size_t len,
                       const char *entry, diag *d) {
  if (!file) file = "<input>";
  diag_add_source(d, file, text, len);
  tg_parser p;
  memset(&p, 0, sizeof p);
  p.a = arena_create();
  p.d = d;
  p.file = arena_strdup(p.a, file);
  p.line = p.col = 1;
  ir_module *m = NULL;
  if (fe_tg_parse_text(&p, text, len) == 0) m = fe_tg_lower(&p, entry);
  arena_destroy(p.a);
  return m;
}
