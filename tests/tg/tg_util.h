/* tg_util.h: helpers shared by the .tg tests: compile a source string,
 * make deterministic pseudo-random inputs, evaluate the entry graph. */
#ifndef TPUCC_TESTS_TG_UTIL_H
#define TPUCC_TESTS_TG_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "frontend/frontend.h"

/* xorshift64*: deterministic across platforms. */
static inline uint64_t tgu_rand(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

/* Uniform in [-1, 1) for floats, [-3, 3] for ints, 0/1 for pred; ints
 * that index (labels) are kept in [0, 3]. */
static inline void tgu_fill_random(ir_literal *l, uint64_t *seed) {
  int64_t n = ir_shape_count(&l->shape);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = tgu_rand(seed);
    if (ir_type_is_float(l->shape.type))
      ir_literal_set_f64(l, i, (double)(r >> 11) / (double)(1ULL << 53) * 2.0 - 1.0);
    else if (l->shape.type == IR_PRED)
      ir_literal_set_i64(l, i, (int64_t)(r >> 63));
    else
      ir_literal_set_i64(l, i, (int64_t)((r >> 33) % 4));
  }
}

/* Makes one random literal per entry parameter, in arena a. */
static inline ir_literal **tgu_random_args(ir_module *m, arena *a, uint64_t seed, int *out_n) {
  ir_comp *c = ir_comp_get(m, m->entry);
  ir_literal **args = arena_array(a, (size_t)(c->nparams ? c->nparams : 1), sizeof(ir_literal *));
  for (int i = 0; i < c->nparams; i++) {
    args[i] = ir_literal_create(a, ir_inst_get(m, m->entry, c->params[i])->shape);
    tgu_fill_random(args[i], &seed);
  }
  *out_n = c->nparams;
  return args;
}

/* The numbers of a line of values ("1 2.5, nan -inf") into out (at most
 * max, up to the end of the line); their count. */
static inline int tgu_values(const char *s, double *out, int max) {
  int n = 0;
  char *end;
  while (*s && n < max) {
    while (*s == ' ' || *s == ',' || *s == '\t') s++;
    if (!*s || *s == '\n') break;
    out[n] = strtod(s, &end);
    if (end == s) break;
    n++;
    s = end;
  }
  return n;
}

/* Reads a whole file into a malloc'ed buffer (NUL-terminated). */
static inline char *tgu_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (n + 4096 + 1 > cap) buf = realloc(buf, cap *= 2);
    size_t r = fread(buf + n, 1, 4096, f);
    n += r;
    if (r == 0) break;
  }
  fclose(f);
  buf[n] = 0;
  *len = n;
  return buf;
}

#endif
