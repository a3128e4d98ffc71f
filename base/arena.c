/* arena.c: the per-compilation bump allocator.
 * Blocks form a singly linked list, newest first; a mark remembers the
 * newest block and its fill, reset frees newer blocks and rewinds. */
#include "base.h"

#include <stdlib.h>

typedef struct block {
  struct block *prev;
  size_t size, used;
  max_align_t data[]; /* size bytes */
} block;

struct arena {
  block *top;
  size_t total;
};

enum { BLOCK_MIN = 64 * 1024 };

arena *arena_create(void) { return base_xcalloc(1, sizeof(arena)); }

void arena_destroy(arena *a) {
  if (!a) return;
  for (block *b = a->top, *p; b; b = p) {
    p = b->prev;
    free(b);
  }
  free(a);
}

void *arena_try_alloc(arena *a, size_t n) {
  size_t need;
  if (base_add_overflow(n, 15, &need)) return NULL;
  need &= ~(size_t)15;
  block *b = a->top;
  if (!b || b->size - b->used < need) {
    size_t sz = need > BLOCK_MIN ? need : BLOCK_MIN;
    size_t bytes;
    if (base_add_overflow(sz, sizeof(block), &bytes)) return NULL;
    b = malloc(bytes);
    if (!b) return NULL;
    b->prev = a->top;
    b->size = sz;
    b->used = 0;
    a->top = b;
  }
  void *p = (char *)b->data + b->used;
  b->used += need;
  a->total += need;
  memset(p, 0, n);
  return p;
}

void *arena_alloc(arena *a, size_t n) {
  void *p = arena_try_alloc(a, n);
  if (!p) base_out_of_memory(n);
  return p;
}

void *arena_array(arena *a, size_t count, size_t size) {
  size_t n;
  if (base_mul_overflow(count, size, &n)) base_out_of_memory(SIZE_MAX);
  return arena_alloc(a, n);
}

void *arena_dup(arena *a, const void *p, size_t n) {
  void *q = arena_alloc(a, n);
  if (n) memcpy(q, p, n);
  return q;
}

char *arena_strndup(arena *a, const char *s, size_t n) {
  char *q = arena_alloc(a, n + 1);
  memcpy(q, s, n);
  q[n] = 0;
  return q;
}

char *arena_strdup(arena *a, const char *s) {
  return arena_strndup(a, s, strlen(s));
}

char *arena_printf(arena *a, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  /* fmt ? fmt : "": GCC's -Wformat-truncation misfires under -fsanitize */
  int n = vsnprintf(NULL, 0, fmt ? fmt : "", ap);
  va_end(ap);
  char *s = arena_alloc(a, (size_t)(n < 0 ? 0 : n) + 1);
  if (n > 0) vsnprintf(s, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return s;
}

arena_mark arena_get_mark(arena *a) {
  arena_mark m = {a->top, a->top ? a->top->used : 0};
  return m;
}

void arena_reset(arena *a, arena_mark m) {
  while (a->top && a->top != (block *)m.block) {
    block *p = a->top->prev;
    a->total -= a->top->used;
    free(a->top);
    a->top = p;
  }
  if (a->top) {
    a->total -= a->top->used - m.used;
    a->top->used = m.used;
  }
}

size_t arena_bytes(const arena *a) { return a->total; }
