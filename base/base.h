/* base.h: the one interface of base/, shared by the compiler and the runtime.
 *
 * What lives here: the per-compilation arena, source locations and the
 * diagnostics sink, status codes, growable vectors and a string map, the
 * vector unit's scalar kernels and the bf16 conversion.
 *
 * Memory contract: the compiler side allocates from arenas and treats host
 * allocation failure as fatal (base_out_of_memory: an error, exit status 1;
 * sizes that come from the input are checked first); the runtime (libtpurt)
 * never calls base_die for a condition a caller can cause, and uses its own
 * caller-provided allocator. */
#ifndef TPUCC_BASE_H
#define TPUCC_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tpurt.h" /* the status list */

#if defined(__GNUC__)
#define BASE_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define BASE_NORETURN __attribute__((noreturn))
#else
#define BASE_PRINTF(f, a)
#define BASE_NORETURN
#endif

#define COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- internal errors ------------------------------------------------- */

/* Aborts with "file:line: internal error: msg". For bugs only, never for
 * anything a user's input can cause. */
BASE_NORETURN void base_die_at(const char *file, int line, const char *fmt, ...)
    BASE_PRINTF(3, 4);
#define base_die(...) base_die_at(__FILE__, __LINE__, __VA_ARGS__)
#define BASE_ASSERT(c) ((c) ? (void)0 : base_die("assertion failed: %s", #c))

/* The host could not give N bytes to a compiler-side allocation that has no
 * error path (arena blocks, vectors, x-allocations): prints "error: out of
 * memory (host): could not allocate N bytes" (N unknown: 0 or SIZE_MAX) and
 * exits with status 1, so a
 * user sees an error, never an abort. Allocations whose size comes from the
 * input are checked by their callers (arena_try_alloc, budgets) first. */
BASE_NORETURN void base_out_of_memory(size_t n);

/* malloc/realloc/calloc that die on failure (compiler side only). */
void *base_xmalloc(size_t n);
void *base_xcalloc(size_t n, size_t size);
void *base_xrealloc(void *p, size_t n);

/* Checked size arithmetic: false on overflow, *out unchanged then. */
bool base_mul_overflow(size_t a, size_t b, size_t *out);
bool base_add_overflow(size_t a, size_t b, size_t *out);

/* ---- status codes ---------------------------------------------------- */

/* The one list of status codes is libtpurt's (TPURT_STATUS_LIST in
 * include/tpurt.h, a header of the C library alone): ST_NAME has the value
 * of TPURT_NAME, and of TPUCC_NAME for the codes libtpucc has (all but
 * INVALID_PROGRAM), so a status crosses either API unconverted. */
typedef enum base_status {
#define BASE_STATUS_ENUM_(name, text) ST_##name,
  TPURT_STATUS_LIST(BASE_STATUS_ENUM_)
#undef BASE_STATUS_ENUM_
  ST__COUNT
} base_status;

/* A short constant description ("invalid argument"). Never NULL. */
const char *base_status_str(base_status s);
/* Decodes the C escapes (\n \t \r, up to three octal digits, \x for any
 * other x) of the n bytes at in into out, which has room for n + 1 bytes;
 * returns the decoded length (out is NUL-terminated). */
size_t base_c_unescape(const char *in, size_t n, char *out);
/* Writes the message to err (at most errlen bytes, NUL-terminated; nothing
 * when errlen is 0) and returns st: the error return of calls that report
 * into a caller's buffer. */
base_status base_fail(char *err, size_t errlen, base_status st, const char *fmt, ...)
    BASE_PRINTF(4, 5);

/* ---- arena ----------------------------------------------------------- */

/* A bump allocator: everything allocated dies together with arena_destroy.
 * A mark/reset pair frees scratch memory in LIFO order. Not thread-safe. */
typedef struct arena arena;
typedef struct arena_mark {
  void *block;
  size_t used;
} arena_mark;

arena *arena_create(void);
void arena_destroy(arena *a); /* accepts NULL */
void *arena_alloc(arena *a, size_t n); /* 16-byte aligned, zeroed */
/* The same, but NULL when the host has no memory for it (for the callers
 * that report an allocation failure as an error instead of dying). */
void *arena_try_alloc(arena *a, size_t n);
void *arena_array(arena *a, size_t count, size_t size); /* overflow-checked */
void *arena_dup(arena *a, const void *p, size_t n);
char *arena_strdup(arena *a, const char *s);
char *arena_strndup(arena *a, const char *s, size_t n);
char *arena_printf(arena *a, const char *fmt, ...) BASE_PRINTF(2, 3);
arena_mark arena_get_mark(arena *a);
void arena_reset(arena *a, arena_mark m);
size_t arena_bytes(const arena *a); /* bytes handed out so far */

/* ---- growable vectors ------------------------------------------------ */

/* VEC(T) is a struct { T *v; int n, cap; } grown in an arena. The old
 * storage is abandoned in the arena on growth (fine for compile-time data).
 *   VEC(int) xs = {0}; VEC_PUSH(a, xs, 3); for (i=0;i<xs.n;i++) xs.v[i]... */
#define VEC(T) struct { T *v; int n, cap; }
#define VEC_PUSH(ar, vec, x)                                                  \
  do {                                                                        \
    if ((vec).n == (vec).cap) {                                               \
      int nc_ = (vec).cap ? (vec).cap * 2 : 8;                                \
      void *nv_ = arena_array((ar), (size_t)nc_, sizeof(*(vec).v));           \
      if ((vec).n)                                                            \
        memcpy(nv_, (vec).v, (size_t)(vec).n * sizeof(*(vec).v));             \
      (vec).v = nv_;                                                          \
      (vec).cap = nc_;                                                        \
    }                                                                         \
    (vec).v[(vec).n++] = (x);                                                 \
  } while (0)

/* A heap-backed byte buffer for building text; die on OOM. */
typedef struct strbuf {
  char *s;
  size_t len, cap;
} strbuf;
void sb_init(strbuf *b);
void sb_free(strbuf *b);
void sb_putc(strbuf *b, char c);
void sb_puts(strbuf *b, const char *s);
void sb_putn(strbuf *b, const char *s, size_t n);
void sb_printf(strbuf *b, const char *fmt, ...) BASE_PRINTF(2, 3);
void sb_vprintf(strbuf *b, const char *fmt, va_list ap);
/* Returns the text (NUL-terminated, owned by b) */
const char *sb_str(strbuf *b);
/* Appends s[0, n) with every control byte but newline and tab (0x00-0x1f,
 * 0x7f) written as \xNN, so that text quoted from a user's file cannot
 * drive the terminal. Every message printer (diag, the CLI's errors) goes
 * through it. */
void sb_put_escaped(strbuf *b, const char *s, size_t n);

/* ---- string map ------------------------------------------------------ */

/* Maps strings to int32 values; keys are copied into the arena given at
 * creation. Open addressing; not thread-safe. */
typedef struct strmap strmap;
strmap *strmap_create(arena *a);
/* The same, sized for n keys without growing (keys must be < 4 GiB). */
strmap *strmap_create_sized(arena *a, int n);
/* Returns the value or -1 when absent. */
int32_t strmap_get(const strmap *m, const char *key, size_t len);
/* Inserts or replaces. Values must be >= 0. */
void strmap_put(strmap *m, const char *key, size_t len, int32_t value);
int strmap_count(const strmap *m);

/* ---- source locations and diagnostics -------------------------------- */

/* A position in a user's source text. line and col are 1-based; line 0
 * means "no location". file is interned and outlives the compilation. */
typedef struct src_loc {
  const char *file;
  int32_t line, col;
} src_loc;

typedef enum diag_level { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } diag_level;

/* A sink that collects diagnostics, counts them and prints them as
 *   file:line:col: error: message
 *     source line
 *         ^
 * Sources registered with diag_add_source are used to show the line.
 * The sink keeps the formatted text so tests can compare it (diag_text).
 * Not thread-safe. */
typedef struct diag diag;

diag *diag_create(void);
void diag_destroy(diag *d); /* accepts NULL */
/* Registers source text for file (copied). Used to print the source line. */
void diag_add_source(diag *d, const char *file, const char *text, size_t len);
/* When set, each diagnostic is also written to f as it arrives. */
void diag_set_stream(diag *d, FILE *f);
/* Stop recording after this many errors (default 50); one final line says so. */
void diag_set_max_errors(diag *d, int n);
void diag_report(diag *d, diag_level lvl, src_loc loc, const char *fmt, ...)
    BASE_PRINTF(4, 5);
void diag_vreport(diag *d, diag_level lvl, src_loc loc, const char *fmt,
                  va_list ap);
#define diag_error(d, loc, ...) diag_report((d), DIAG_ERROR, (loc), __VA_ARGS__)
#define diag_note(d, loc, ...) diag_report((d), DIAG_NOTE, (loc), __VA_ARGS__)
int diag_error_count(const diag *d);
bool diag_too_many(const diag *d); /* the error limit was reached */
/* All diagnostics so far, formatted, NUL-terminated; owned by d. */
const char *diag_text(const diag *d);
/* The first error's message alone (without location), or "" */
const char *diag_first_message(const diag *d);

/* ---- vector-unit scalar kernels (vmath.c) ----------------------------- */
/* The f32 kernels of the emulated vector unit, one definition shared by the
 * emulator and the evaluator's TPU-numerics mode (docs/numerics.md):
 * transcendentals are the double libm function of the widened input,
 * rounded once; max/min return the canonical NaN when either input is NaN
 * and prefer +0 (max) / -0 (min) between zeros; cvtfi truncates and
 * saturates (NaN -> 0); cvtif converts an s32 (given as its bits). */
#define VMATH_CANON_NAN 0x7FC00000u
uint32_t vmath_bits(float f); /* the bits of f, a NaN as VMATH_CANON_NAN */
float vmath_float(uint32_t u); /* the f32 with these bits */
float vmath_exp(float x);
float vmath_log(float x);
float vmath_tanh(float x);
float vmath_logistic(float x);
float vmath_sqrt(float x);
float vmath_rsqrt(float x);
float vmath_floor(float x);
float vmath_ceil(float x);
float vmath_rne(float x);
float vmath_sin(float x);
float vmath_cos(float x);
float vmath_expm1(float x);
float vmath_log1p(float x);
float vmath_erf(float x);
float vmath_pow(float x, float y);
float vmath_atan2(float y, float x);
float vmath_cbrt(float x);
float vmath_fmod(float x, float y); /* C fmod: exact, sign of x */
uint32_t vmath_fmax(uint32_t a, uint32_t b);
uint32_t vmath_fmin(uint32_t a, uint32_t b);
int32_t vmath_cvtfi(uint32_t u);
float vmath_cvtif(uint32_t u);

/* ---- bf16 ------------------------------------------------------------- */
/* The one bf16 conversion of the project: the evaluator and the passes
 * (through ir_f32_to_bf16), the emulator's MXU and vector unit and the
 * assembler's constants all round with it. Inline: it sits in the
 * emulator's hot loops. */

/* bf16 bits -> f32, exact (subnormals kept; the MXU flushes them itself). */
static inline float base_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* f32 -> bf16 bits: the top 16 bits, the dropped 16 rounded to nearest,
 * ties to even. Infinities stay infinities and overflow rounds to them; a
 * NaN becomes a quiet NaN with the same sign and the upper payload bits
 * (never an infinity). f32 subnormals round like any value. */
static inline uint16_t base_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

#endif
