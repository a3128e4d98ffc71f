/* test_tpu_oom.c: a host allocation failure while compiling for or running
 * on the TPU emulator is an error (ST_OUT_OF_MEMORY), never an abort or a
 * crash. A module with a 4 MiB constant and a 4 MiB result is compiled and
 * run with the N-th large allocation (1 MiB or more: the constant's data,
 * the image, the serialised program, the loaded copy, HBM, the results)
 * failing, for N = 0, 1, ... until a run succeeds; each failing run must
 * return ST_OUT_OF_MEMORY with "out of memory" in its message, and the
 * run that succeeds must give the evaluator's values. Linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc.
 *
 *   test_tpu_oom      exit 0 when every failure was reported */
#include <stdlib.h>

#include "frontend/frontend.h"
#include "tests/tpu/tpu_check.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t c, size_t n);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t c, size_t n);
void *__wrap_realloc(void *p, size_t n);

/* Armed: large allocations are counted, and the fail_at-th one fails. */
static int armed;
static long large_seen, fail_at = -1;

static int refuse(size_t n) {
  if (!armed || n < ((size_t)1 << 20)) return 0;
  return large_seen++ == fail_at;
}
void *__wrap_malloc(size_t n) { return refuse(n) ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t c, size_t n) {
  return c && n && refuse(c * n) ? NULL : __real_calloc(c, n);
}
void *__wrap_realloc(void *p, size_t n) { return refuse(n) ? NULL : __real_realloc(p, n); }

static const char text[] =
    "HloModule oom\nENTRY e {\n  x = f32[1024,1024] parameter(0)\n"
    "  c = f32[1024,1024] constant(0.5)\n  ROOT r = f32[1024,1024] add(x, c)\n}\n";

/* Compiles and runs m with the fail_at-th large allocation failing: 0 ran,
 * 1 failed as it should, -1 failed wrongly (printed). */
static int attempt(const ir_module *m, ir_literal **args, long n, ir_literal **out, arena *a) {
  diag *d = diag_create();
  tpub_image *img = NULL;
  char err[1024] = "";
  large_seen = 0;
  fail_at = n;
  armed = 1;
  base_status st = tpu_compile(m, NULL, d, &img, NULL);
  if (st == ST_OK) st = tpu_execute(img, "v3", m, args, 1, a, out, NULL, NULL, err, sizeof err);
  else snprintf(err, sizeof err, "%s", diag_text(d));
  armed = 0;
  tpub_free(img);
  diag_destroy(d);
  if (st == ST_OK) return 0;
  if (st == ST_OUT_OF_MEMORY && strstr(err, "out of memory")) return 1;
  printf("FAIL large allocation %ld refused: status %d, message: %s\n", n, (int)st, err);
  return -1;
}

int main(void) {
  ir_module *m = tc_parse("oom.hlo", text);
  arena *a = arena_create();
  ir_literal **args = tc_args(m, a, 5);
  ir_literal *ref = NULL, *got = NULL;
  char err[512];
  if (ir_eval(m, NULL, args, 1, a, &ref, err, sizeof err) != ST_OK) base_die("eval: %s", err);
  int fails = 0;
  long n = 0;
  for (;; n++) {
    int r = attempt(m, args, n, &got, a);
    if (r == 0) break;
    fails += r < 0;
    if (n > 100) base_die("no run succeeded");
  }
  if (n < 4) { /* the constant, the image, the program bytes, HBM at least */
    printf("FAIL only %ld large allocations were refused before a run succeeded\n", n);
    fails++;
  }
  if (memcmp(got->data, ref->data, ref->nbytes) != 0) {
    printf("FAIL the successful run differs from the evaluator\n");
    fails++;
  }
  printf("test_tpu_oom: %ld refused allocations, %d reported wrongly\n", n, fails);
  arena_destroy(a);
  ir_module_destroy(m);
  return fails ? 1 : 0;
}
