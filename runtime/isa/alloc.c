/* alloc.c: allocation through an optional caller allocator. */
#include "alloc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *rt_alloc(const rt_allocator *a, size_t size) {
  if (size == 0) size = 1;
  if (a && a->alloc) return a->alloc(a->user, size);
  return malloc(size);
}

void *rt_calloc(const rt_allocator *a, size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  size_t n = count * size;
  if (n == 0) n = 1;
  if (!a || !a->alloc) return calloc(n, 1); /* large blocks arrive zeroed, untouched */
  void *p = rt_alloc(a, n);
  if (p) memset(p, 0, n);
  return p;
}

void rt_free(const rt_allocator *a, void *p) {
  if (!p) return;
  if (a && a->free) {
    a->free(a->user, p);
    return;
  }
  if (a && a->alloc) return; /* alloc without free: caller owns lifetime */
  free(p);
}

void rt_buf_put(rt_buf *b, const void *p, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap || !b->s) {
    size_t nc = b->cap ? b->cap : 256;
    while (nc < b->len + n + 1) {
      if (nc > SIZE_MAX / 2) {
        b->oom = 1;
        return;
      }
      nc *= 2;
    }
    char *ns = rt_alloc(b->a, nc);
    if (!ns) {
      b->oom = 1;
      return;
    }
    if (b->len) memcpy(ns, b->s, b->len);
    rt_free(b->a, b->s);
    b->s = ns;
    b->cap = nc;
  }
  if (n) memcpy(b->s + b->len, p, n);
  b->len += n;
  b->s[b->len] = 0;
}

void rt_buf_printf(rt_buf *b, const char *fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (k < 0) return;
  if ((size_t)k < sizeof small) {
    rt_buf_put(b, small, (size_t)k);
    return;
  }
  char *big = rt_alloc(b->a, (size_t)k + 1);
  if (!big) {
    b->oom = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)k + 1, fmt, ap);
  va_end(ap);
  rt_buf_put(b, big, (size_t)k);
  rt_free(b->a, big);
}

void rt_buf_free(rt_buf *b) {
  rt_free(b->a, b->s);
  b->s = NULL;
  b->len = b->cap = 0;
}
