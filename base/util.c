/* util.c: internal-error exit, checked allocation and size arithmetic,
 * status strings and the string builder. */
#include "base.h"

#include <stdlib.h>
#include <unistd.h>

void base_die_at(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s:%d: internal error: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}

void base_out_of_memory(size_t n) {
  if (n && n != SIZE_MAX)
    fprintf(stderr, "error: out of memory (host): could not allocate %zu bytes\n", n);
  else
    fprintf(stderr, "error: out of memory (host)\n");
  fflush(NULL);
  _exit(1); /* not exit(): exit handlers (OpenBLAS joins its threads) may need memory or hang */
}

void *base_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) base_out_of_memory(n);
  return p;
}

void *base_xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) base_out_of_memory(n * size);
  return p;
}

void *base_xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) base_out_of_memory(n);
  return q;
}

bool base_mul_overflow(size_t a, size_t b, size_t *out) {
  size_t r;
  if (__builtin_mul_overflow(a, b, &r)) return true;
  *out = r;
  return false;
}

bool base_add_overflow(size_t a, size_t b, size_t *out) {
  size_t r;
  if (__builtin_add_overflow(a, b, &r)) return true;
  *out = r;
  return false;
}

base_status base_fail(char *err, size_t errlen, base_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (errlen) vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return st;
}

const char *base_status_str(base_status s) {
  static const char *const text[ST__COUNT] = {
#define X(name, t) [ST_##name] = t,
      TPURT_STATUS_LIST(X)
#undef X
  };
  return (unsigned)s < ST__COUNT ? text[s] : "unknown status";
}

void sb_init(strbuf *b) {
  b->s = NULL;
  b->len = b->cap = 0;
}

void sb_free(strbuf *b) {
  free(b->s);
  sb_init(b);
}

static void sb_reserve(strbuf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  size_t nc = b->cap ? b->cap : 64;
  while (nc < b->len + extra + 1) nc *= 2;
  b->s = base_xrealloc(b->s, nc);
  b->cap = nc;
}

void sb_putn(strbuf *b, const char *s, size_t n) {
  sb_reserve(b, n);
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}

void sb_putc(strbuf *b, char c) { sb_putn(b, &c, 1); }
void sb_puts(strbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

void sb_vprintf(strbuf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  /* fmt ? fmt : "": GCC's -Wformat-truncation misfires under -fsanitize */
  int n = vsnprintf(NULL, 0, fmt ? fmt : "", ap2);
  va_end(ap2);
  if (n < 0) return;
  sb_reserve(b, (size_t)n);
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
}

void sb_printf(strbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(b, fmt, ap);
  va_end(ap);
}

const char *sb_str(strbuf *b) {
  if (!b->s) sb_reserve(b, 0), b->s[0] = 0;
  return b->s;
}

size_t base_c_unescape(const char *in, size_t n, char *out) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = in[i];
    if (ch != '\\' || i + 1 >= n) {
      out[o++] = ch;
      continue;
    }
    ch = in[++i];
    switch (ch) {
    case 'n': out[o++] = '\n'; break;
    case 't': out[o++] = '\t'; break;
    case 'r': out[o++] = '\r'; break;
    case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
      int v = ch - '0', k = 0;
      while (k < 2 && i + 1 < n && in[i + 1] >= '0' && in[i + 1] <= '7') {
        v = v * 8 + (in[++i] - '0');
        k++;
      }
      out[o++] = (char)v;
      break;
    }
    default: out[o++] = ch; break;
    }
  }
  out[o] = 0;
  return o;
}
