/* diag.c: the diagnostics sink.
 * Each diagnostic is formatted once into the sink's text as
 *   file:line:col: level: message\n  <source line>\n  <spaces>^\n
 * (the source lines only when the file's text was registered and the
 * location has a line). Tabs in the source line are kept so the caret
 * lines up under a terminal's tab stops. */
#include "base.h"

#include <stdlib.h>

typedef struct source {
  char *file;
  char *text;
  size_t len;
} source;

struct diag {
  strbuf text;
  strbuf first;
  source *srcs;
  int nsrcs;
  int errors, max_errors;
  bool too_many;
  FILE *stream;
};

diag *diag_create(void) {
  diag *d = base_xcalloc(1, sizeof *d);
  sb_init(&d->text);
  sb_init(&d->first);
  d->max_errors = 50;
  return d;
}

void diag_destroy(diag *d) {
  if (!d) return;
  for (int i = 0; i < d->nsrcs; i++) {
    free(d->srcs[i].file);
    free(d->srcs[i].text);
  }
  free(d->srcs);
  sb_free(&d->text);
  sb_free(&d->first);
  free(d);
}

void diag_add_source(diag *d, const char *file, const char *text, size_t len) {
  d->srcs = base_xrealloc(d->srcs, sizeof(source) * (size_t)(d->nsrcs + 1));
  source *s = &d->srcs[d->nsrcs++];
  size_t fl = strlen(file);
  s->file = base_xmalloc(fl + 1);
  memcpy(s->file, file, fl + 1);
  s->text = base_xmalloc(len + 1);
  memcpy(s->text, text, len);
  s->text[len] = 0;
  s->len = len;
}

void diag_set_stream(diag *d, FILE *f) { d->stream = f; }
void diag_set_max_errors(diag *d, int n) { d->max_errors = n; }

/* Finds line `line` (1-based) of the registered source for file. */
static bool source_line(const diag *d, const char *file, int line,
                        const char **out, size_t *out_len) {
  if (!file) return false;
  for (int i = d->nsrcs - 1; i >= 0; i--) {
    if (strcmp(d->srcs[i].file, file) != 0) continue;
    const char *p = d->srcs[i].text, *end = p + d->srcs[i].len;
    int l = 1;
    for (; l < line && p < end; l++) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      if (!nl) return false;
      p = nl + 1;
    }
    if (l < line) return false; /* past the end of the text */
    const char *e = p;
    while (e < end && *e != '\n' && *e != '\r') e++;
    *out = p;
    *out_len = (size_t)(e - p);
    return true;
  }
  return false;
}

void diag_vreport(diag *d, diag_level lvl, src_loc loc, const char *fmt,
                  va_list ap) {
  if (d->too_many) return;
  if (lvl == DIAG_ERROR && d->errors >= d->max_errors) {
    d->too_many = true;
    sb_printf(&d->text, "error: too many errors (%d), stopping\n", d->errors);
    if (d->stream) fprintf(d->stream, "error: too many errors (%d), stopping\n", d->errors);
    return;
  }
  static const char *const names[] = {"error", "warning", "note"};
  size_t start = d->text.len;
  if (loc.file && loc.line > 0)
    sb_printf(&d->text, "%s:%d:%d: ", loc.file, loc.line, loc.col);
  else if (loc.file)
    sb_printf(&d->text, "%s: ", loc.file);
  sb_printf(&d->text, "%s: ", names[lvl]);
  strbuf msg; /* user text quoted in messages may hold control bytes */
  sb_init(&msg);
  sb_vprintf(&msg, fmt, ap);
  sb_put_escaped(&d->text, msg.s ? msg.s : "", msg.len);
  sb_putc(&d->text, '\n');
  if (lvl == DIAG_ERROR && d->errors == 0) sb_put_escaped(&d->first, msg.s ? msg.s : "", msg.len);
  sb_free(&msg);
  const char *ln;
  size_t ll;
  if (loc.line > 0 && source_line(d, loc.file, loc.line, &ln, &ll)) {
    /* Long lines are cut to keep reports readable. */
    size_t show = ll > 240 ? 240 : ll;
    sb_puts(&d->text, "  ");
    for (size_t i = 0; i < show; i++)
      sb_putc(&d->text, (ln[i] == '\t' || ((unsigned char)ln[i] >= 32 && ln[i] != 127)) ? ln[i] : '?');
    sb_putc(&d->text, '\n');
    sb_puts(&d->text, "  ");
    for (int i = 1; i < loc.col && (size_t)i <= show; i++)
      sb_putc(&d->text, ln[i - 1] == '\t' ? '\t' : ' ');
    sb_puts(&d->text, "^\n");
  }
  if (d->stream) fputs(d->text.s + start, d->stream);
  if (lvl == DIAG_ERROR) d->errors++;
}

void sb_put_escaped(strbuf *b, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
      sb_printf(b, "\\x%02x", c);
    else
      sb_putc(b, (char)c);
  }
}

void diag_report(diag *d, diag_level lvl, src_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_vreport(d, lvl, loc, fmt, ap);
  va_end(ap);
}

int diag_error_count(const diag *d) { return d->errors; }
bool diag_too_many(const diag *d) { return d->too_many; }
const char *diag_text(const diag *d) { return d->text.s ? d->text.s : ""; }
const char *diag_first_message(const diag *d) {
  return d->first.s ? d->first.s : "";
}
