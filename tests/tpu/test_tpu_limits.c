/* test_tpu_limits.c: what bounds the TPU backend's own work on hostile
 * modules. Each case runs on a thread with a 2 MiB stack, so that a
 * recursion the size of the module overflows it (a crash, which fails the
 * test) while a bounded one fits even under AddressSanitizer:
 *  - computations nested deeper than 64 are a located error at the caller
 *    (the evaluator's and the cpu target's limit), and 5,000 of them are
 *    an error, not a crash;
 *  - a convolution whose stride (2^30 elements of 2 bytes) makes a DMA
 *    stride that does not fit the descriptor's signed 32-bit word is a
 *    located compile error (it wrapped, and the run faulted after minutes);
 *  - a chain of elementwise ops reading 40 parameters, each op the one
 *    operand of the next (one program would read more buffers than a
 *    fused loop takes: it was a compile error);
 *  - a chain of 25,000 elementwise ops, each the one operand of the next
 *    (computed in registers by its user), and the same chain inside a row
 *    kernel's fusion, compile and match the evaluator.
 *
 *   test_tpu_limits [--only=NAME]      exit 0 when every case passed */
#include <pthread.h>
#include <stdlib.h>

#include "frontend/frontend.h"
#include "tests/tpu/tpu_check.h"

/* N fusions, each calling the next, below the entry; the innermost
 * negates. The entry's fusion is on the last line but two. */
static char *nested_fusions(int n) {
  strbuf s;
  sb_init(&s);
  sb_printf(&s, "HloModule nest\nf0 {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] negate(p)\n}\n");
  for (int k = 1; k < n; k++)
    sb_printf(&s, "f%d {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] fusion(p), kind=kLoop, calls=f%d\n}\n",
              k, k - 1);
  sb_printf(&s, "ENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] fusion(p), kind=kLoop, calls=f%d\n}\n",
            n - 1);
  char *t = strdup(sb_str(&s));
  sb_free(&s);
  return t;
}

/* x_k = add(x_{k-1}, y) for k < n: as the entry (reduced to rows when
 * `rows`, inside an input fusion: a row kernel's program). */
static char *add_chain(int n, bool rows) {
  strbuf s;
  sb_init(&s);
  sb_printf(&s, "HloModule chain\n");
  if (rows)
    sb_printf(&s, "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                  "  ROOT s = f32[] add(a, b)\n}\nf {\n");
  else
    sb_printf(&s, "ENTRY e {\n");
  sb_printf(&s, "  x0 = f32[8,130] parameter(0)\n  y = f32[8,130] parameter(1)\n");
  for (int k = 1; k < n; k++) sb_printf(&s, "  x%d = f32[8,130] add(x%d, y)\n", k, k - 1);
  if (rows)
    sb_printf(&s, "  z = f32[] constant(0)\n  ROOT r = f32[8] reduce(x%d, z), dimensions={1}, "
                  "to_apply=add\n}\nENTRY e {\n  a = f32[8,130] parameter(0)\n"
                  "  b = f32[8,130] parameter(1)\n  ROOT r = f32[8] fusion(a, b), kind=kInput, calls=f\n}\n",
              n - 1);
  else
    sb_printf(&s, "  ROOT r = f32[8,130] negate(x%d)\n}\n", n - 1);
  char *t = strdup(sb_str(&s));
  sb_free(&s);
  return t;
}

/* x_k = add(x_{k-1}, p_k) over n parameters. */
static char *wide_chain(int n) {
  strbuf s;
  sb_init(&s);
  sb_printf(&s, "HloModule wide\nENTRY e {\n  x0 = f32[8,130] parameter(0)\n");
  for (int k = 1; k < n; k++)
    sb_printf(&s, "  p%d = f32[8,130] parameter(%d)\n  x%d = f32[8,130] add(x%d, p%d)\n", k, k, k,
              k - 1, k);
  sb_printf(&s, "  ROOT r = f32[8,130] negate(x%d)\n}\n", n - 1);
  char *t = strdup(sb_str(&s));
  sb_free(&s);
  return t;
}

/* Compiling `text` for v3 fails with status st and a diagnostic holding
 * each of at[] (NULL-terminated). */
static int expect_error(const char *name, const char *text, base_status st, const char *const *at) {
  ir_module *m = tc_parse(name, text);
  diag *d = diag_create();
  tpu_options o;
  tpu_options_init(&o);
  o.target = "v3";
  tpub_image *img = NULL;
  base_status got = tpu_compile(m, &o, d, &img, NULL);
  const char *t = diag_text(d);
  int bad = got != st || img != NULL;
  for (int k = 0; at[k] && !bad; k++) bad = !strstr(t, at[k]);
  if (bad) printf("FAIL %s: status %d, diagnostics:\n%s\n", name, (int)got, t);
  else printf("PASS %s\n", name);
  tpub_free(img);
  diag_destroy(d);
  ir_module_destroy(m);
  return bad;
}

static int case_nest_64(void) {
  char *t = nested_fusions(64);
  /* f1's fusion calls f0, the 65th computation down from the entry. */
  static const char *const at[] = {"nest_64.hlo:8:", "tpu: fusion: computations nested deeper than 64",
                                   "(calling f0)", NULL};
  int r = expect_error("nest_64.hlo", t, ST_RESOURCE_EXHAUSTED, at);
  free(t);
  return r;
}

static int case_nest_5000(void) {
  char *t = nested_fusions(5000);
  static const char *const at[] = {"nest_5000.hlo:", "nested deeper than 64", NULL};
  int r = expect_error("nest_5000.hlo", t, ST_RESOURCE_EXHAUSTED, at);
  free(t);
  return r;
}

static int case_conv_stride_2e30(void) {
  static const char text[] =
      "HloModule m\nENTRY e {\n  x = f32[1,4,1] parameter(0)\n  k = f32[2,1,1] parameter(1)\n"
      "  ROOT c = f32[1,2,1] convolution(x, k), window={size=2 stride=1073741824 pad=0_1073741824}, "
      "dim_labels=b0f_0io->b0f\n}\n";
  static const char *const at[] = {"conv_stride.hlo:5:", "tpu: convolution: a DMA HBM stride of "
                                   "2147483648 bytes does not fit the target's 32-bit DMA descriptors",
                                   NULL};
  return expect_error("conv_stride.hlo", text, ST_RESOURCE_EXHAUSTED, at);
}

static int check_text(const char *name, char *text) {
  ir_module *m = tc_parse(name, text);
  int r = tc_check(m, "v3", IR_PREC_DEFAULT, 7, 0, name);
  if (r == 0) printf("PASS %s\n", name);
  ir_module_destroy(m);
  free(text);
  return r != 0;
}

static int case_wide_chain(void) { return check_text("elementwise_inputs_40", wide_chain(40)); }
static int case_chain(void) { return check_text("elementwise_chain_25000", add_chain(25000, false)); }
static int case_rows_chain(void) { return check_text("row_kernel_chain_25000", add_chain(25000, true)); }

static const struct {
  const char *name;
  int (*run)(void);
} cases[] = {
    {"nest_64", case_nest_64},
    {"nest_5000", case_nest_5000},
    {"conv_stride_2e30", case_conv_stride_2e30},
    {"elementwise_inputs_40", case_wide_chain},
    {"elementwise_chain_25000", case_chain},
    {"row_kernel_chain_25000", case_rows_chain},
};

typedef struct job {
  const char *only;
  int fails;
} job;

static void *run_cases(void *p) {
  job *j = p;
  for (size_t k = 0; k < COUNTOF(cases); k++)
    if (!j->only || strstr(cases[k].name, j->only)) j->fails += cases[k].run();
  return NULL;
}

int main(int argc, char **argv) {
  job j = {argc > 1 && !strncmp(argv[1], "--only=", 7) ? argv[1] + 7 : NULL, 0};
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, (size_t)2 << 20);
  pthread_t th;
  if (pthread_create(&th, &at, run_cases, &j) != 0) base_die("cannot start the test thread");
  pthread_join(th, NULL);
  pthread_attr_destroy(&at);
  printf("test_tpu_limits: %d failed\n", j.fails);
  return j.fails ? 1 : 0;
}
