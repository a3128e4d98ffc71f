/* alloc.h: the allocator the runtime and its ISA tools allocate through.
 * Same members as the public tpurt_allocator_t (include/tpurt.h). A NULL
 * allocator pointer, or NULL functions, mean malloc and free. */
#ifndef TPUCC_RT_ALLOC_H
#define TPUCC_RT_ALLOC_H

#include <stddef.h>

typedef struct rt_allocator {
  void *(*alloc)(void *user, size_t size); /* NULL on failure */
  void (*free)(void *user, void *ptr);     /* accepts NULL */
  void *user;
} rt_allocator;

/* size 0 is treated as 1. Returns NULL on failure (or overflow). */
void *rt_alloc(const rt_allocator *a, size_t size);
void *rt_calloc(const rt_allocator *a, size_t count, size_t size);
void rt_free(const rt_allocator *a, void *p);

/* A growable byte buffer through an allocator. Errors are sticky: after a
 * failed growth `oom` is set and further writes are ignored. The contents
 * are NUL-terminated whenever len > 0 and oom is 0. */
typedef struct rt_buf {
  const rt_allocator *a;
  char *s;
  size_t len, cap;
  int oom;
} rt_buf;

void rt_buf_put(rt_buf *b, const void *p, size_t n);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void rt_buf_printf(rt_buf *b, const char *fmt, ...);
void rt_buf_free(rt_buf *b);

#endif
