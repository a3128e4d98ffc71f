/* rt_test.h: helpers shared by the runtime tests (header-only, static). */
#ifndef TPUCC_RT_TEST_H
#define TPUCC_RT_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpurt.h"

/* Reads a whole file (NUL-terminated); NULL on failure. Free with free(). */
static inline char *rt_read_file(const char *path, size_t *out_len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  fclose(f);
  if (s) s[n] = 0;
  if (out_len) *out_len = (size_t)n;
  return s;
}

/* splitmix64 */
static inline uint64_t rt_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* Uniform in [lo, hi). */
static inline float rt_randf(uint64_t *s, float lo, float hi) {
  return lo + (hi - lo) * (float)(rt_rand(s) >> 40) / (float)(1 << 24);
}

static inline uint32_t rt_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static inline float rt_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
/* f32 -> bf16, round to nearest even; NaN stays a quiet NaN. */
static inline uint16_t rt_bf16(float f) {
  uint32_t u = rt_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
static inline float rt_bf16_f32(uint16_t h) { return rt_float((uint32_t)h << 16); }

#endif
