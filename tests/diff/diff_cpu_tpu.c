/* diff_cpu_tpu.c: the CPU's TPU numerics (backend/llvm, CPU_NUMERICS_TPU)
 * against ir_eval in TPU-numerics mode, bit for bit, NaN payloads
 * included (docs/numerics.md sections 4 and 5), and the emulator
 * (backend/tpu on v3) against the same oracle.
 *
 *  - elementwise: every float op of ops.def (unary, binary over all pairs,
 *    clamp over triples, compare in every direction and comparison type,
 *    select, is-finite) on f32, bf16 and f16 (computed in f32 and
 *    rounded to f16 per op), and the converts between f32, bf16, f16,
 *    s32, s8 and pred, on a fixed set of special values: +-0, +-inf, quiet
 *    and signalling NaNs with payloads of both signs, f32 and bf16
 *    subnormals, bf16 rounding ties, values at the 2^23 / 2^24 / 2^31
 *    thresholds, halves, overflow and underflow arguments of exp;
 *  - dots: random shapes (batch dims, transposed operands, M, N, K up to
 *    130, large enough for the tiled GEMM), f32 / bf16 / mixed operands,
 *    f32 and bf16 results, operand_precision DEFAULT, HIGH and HIGHEST;
 *  - convolutions: 1-D and 2-D, NHWC and NCHW, strides, padding (also
 *    negative), lhs (base) and rhs (window) dilation, reversal, feature
 *    and batch groups, at the three precisions.
 *  - reductions: add (row order, tree order over one, two and three dims,
 *    two tree levels, sequential), f32 and bf16, max, min, multiply.
 * Float arguments are random full-precision values with about one in
 * eight replaced by a special (inf, -0, NaN payloads, subnormals, ties,
 * huge values whose products overflow). Every elementwise and convert
 * module, and every reduction and contraction so marked, also runs on the
 * emulator (v3) against the same oracle, and every module under
 * CPU_NUMERICS_STRICT against the default evaluator (NaN payloads aside),
 * which must be unchanged.
 *
 *   diff_cpu_tpu [cases [seed]]   (dot and convolution cases; default 60) */
#include "backend/llvm/cpu.h"
#include "backend/tpu/tpu.h"
#include "frontend/frontend.h"
#include "tests/diff/diff_same.h"

#include <stdio.h>
#include <stdlib.h>

static int nfail, nchecks, nemu;

static uint64_t rng;
static uint32_t rnd(uint32_t n) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 11) % n;
}

/* ---- values -------------------------------------------------------------- */

static const uint32_t specials[] = {
    0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x3F000000, 0xBF000000, 0x3FC00000,
    0x40200000, 0xC0200000, 0x40400000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7FC12345,
    0xFFC00001, 0x7F800001, 0xFF812345, 0x7FA00000, 0x00000001, 0x807FFFFF, 0x00400000,
    0x80200000, 0x00800000, 0x3F808000, 0x3F818000, 0xBF808000, 0x3F80C000, 0x7F7FFFFF,
    0x7F7F8000, 0x4AFFFFFF, 0x4B000000, 0xCAFFFFFF, 0x4B7FFFFF, 0x4B800001, 0x4EFFFFFF,
    0x4F000000, 0xCF000000, 0xCF000001, 0x501502F9, 0x3EFFFFFF, 0x42C90000, 0xC2C90000,
    0x42FF0000, 0xC3008000, 0x437FE666, 0x40490FDB, 0x402DF854, 0xC0E9999A, 0x3A83126F,
    0x0DA24260, 0x42A00000, 0x42B20000, 0xC2D00000, 0x3F7FFFFF, 0x33800000, 0x4CBEBC20,
};
enum { NSPEC = sizeof specials / sizeof specials[0] };

static float f32_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Element i of a float literal of type t from the f32 bits u: bf16 takes
 * the top half (payloads and signalling NaNs kept), f16 the rounded value. */
static void put_float(ir_literal *l, int64_t i, uint32_t u) {
  switch (l->shape.type) {
  case IR_F32: memcpy((uint8_t *)l->data + 4 * i, &u, 4); break;
  case IR_BF16: ((uint16_t *)l->data)[i] = (uint16_t)(u >> 16); break;
  default: ir_literal_set_f64(l, i, f32_of(u)); break;
  }
}

/* A random argument value: full-precision in [-4, 4), sometimes a special. */
static uint32_t random_bits(void) {
  if (rnd(8) == 0) return specials[rnd(NSPEC)];
  float f = (float)((double)rnd(1u << 24) / (double)(1u << 21) - 4.0);
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static ir_literal *random_literal(arena *a, const ir_shape *s) {
  ir_literal *l = ir_literal_create(a, s);
  int64_t n = ir_shape_count(s);
  for (int64_t i = 0; i < n; i++) {
    if (ir_type_is_float(s->type)) put_float(l, i, random_bits());
    else if (s->type == IR_PRED) ir_literal_set_i64(l, i, rnd(2));
    else ir_literal_set_i64(l, i, (int32_t)random_bits() >> rnd(32));
  }
  return l;
}

/* ---- running one module ------------------------------------------------ */

static ir_literal *run_cpu(const ir_module *m, cpu_numerics num, ir_literal **args, int nargs,
                           arena *a, const char *name) {
  cpu_options o;
  cpu_options_init(&o);
  o.numerics = num;
  o.threads = 1;
  cpu_exe *x = NULL;
  char err[512];
  ir_literal *got = NULL;
  if (cpu_compile(m, &o, &x, err, sizeof err) != ST_OK ||
      cpu_execute(x, args, nargs, a, &got, err, sizeof err) != ST_OK) {
    fprintf(stderr, "%s: cpu: %s\n", name, err);
    got = NULL;
  }
  cpu_exe_destroy(x);
  return got;
}

static ir_literal *run_eval(const ir_module *m, bool tpu, ir_literal **args, int nargs, arena *a,
                            const char *name) {
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  eo.tpu_numerics = tpu;
  char err[512];
  ir_literal *r = NULL;
  if (ir_eval(m, &eo, args, nargs, a, &r, err, sizeof err) != ST_OK) {
    fprintf(stderr, "%s: ir_eval: %s\n", name, err);
    return NULL;
  }
  return r;
}

static ir_literal *run_emu(const ir_module *m, ir_literal **args, int nargs, arena *a,
                           const char *name) {
  tpu_options o;
  tpu_options_init(&o);
  o.target = "v3";
  diag *d = diag_create();
  tpub_image *img = NULL;
  ir_literal *got = NULL;
  char err[512];
  if (tpu_compile(m, &o, d, &img, NULL) != ST_OK)
    fprintf(stderr, "%s: v3 compile: %s\n", name, diag_text(d));
  else if (tpu_execute(img, "v3", m, args, nargs, a, &got, NULL, NULL, err, sizeof err) != ST_OK)
    fprintf(stderr, "%s: v3: %s\n", name, err);
  tpub_free(img);
  diag_destroy(d);
  return got;
}

static void expect(const char *name, const char *what, const ir_literal *ref, const ir_literal *got,
                   bool nan_any, const char *hlo) {
  char why[256];
  nchecks++;
  if (ref && got && diff_same(ref, got, nan_any, why, sizeof why)) return;
  nfail++;
  fprintf(stderr, "FAIL %s (%s): %s\n%s\n", name, what, ref && got ? why : "did not run", hlo);
}

/* Runs the HLO text on args: CPU TPU numerics vs the evaluator's TPU mode
 * bit for bit, CPU strict vs the default evaluator; with emu, the emulator
 * vs the evaluator's TPU mode too. */
static void check(const char *name, const char *hlo, ir_literal **args, int nargs, bool emu) {
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo(name, hlo, strlen(hlo), d);
  if (!m) {
    fprintf(stderr, "FAIL %s: parse: %s\n%s\n", name, diag_text(d), hlo);
    diag_destroy(d);
    nfail++;
    return;
  }
  diag_destroy(d);
  arena *a = arena_create();
  ir_literal *ref = run_eval(m, true, args, nargs, a, name);
  expect(name, "cpu tpu numerics vs ir_eval tpu", ref, run_cpu(m, CPU_NUMERICS_TPU, args, nargs, a, name),
         false, hlo);
  expect(name, "cpu strict vs ir_eval default", run_eval(m, false, args, nargs, a, name),
         run_cpu(m, CPU_NUMERICS_STRICT, args, nargs, a, name), true, hlo);
  if (emu) {
    nemu++;
    expect(name, "emulator v3 vs ir_eval tpu", ref, run_emu(m, args, nargs, a, name), false, hlo);
  }
  arena_destroy(a);
  ir_module_destroy(m);
}

/* ---- elementwise ----------------------------------------------------------- */

static const char *const unary_ops[] = {
    "abs", "negate", "exponential", "exponential-minus-one", "log", "log-plus-one", "sqrt",
    "rsqrt", "cbrt", "tanh", "logistic", "sine", "cosine", "floor", "ceil",
    "round-nearest-afz", "round-nearest-even", "sign"};
static const char *const binary_ops[] = {"add", "subtract", "multiply", "divide", "remainder",
                                         "maximum", "minimum", "power", "atan2"};
static const char *const dirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};

static ir_literal *vec(arena *a, ir_type t, int64_t n) {
  ir_shape s = ir_shape_array(t, 1, &n);
  return ir_literal_create(a, &s);
}

/* with emu, every module also runs on the emulator (f32, bf16 and f16) */
static void elementwise(ir_type t, bool emu) {
  const char *tn = ir_type_name(t);
  int64_t n = NSPEC, n2 = n * n, n3 = 20 * 20 * 20;
  char hlo[1024], name[96];
  arena *a = arena_create();
  ir_literal *x1 = vec(a, t, n), *x2 = vec(a, t, n2), *y2 = vec(a, t, n2), *p2 = vec(a, IR_PRED, n2);
  ir_literal *c[3] = {vec(a, t, n3), vec(a, t, n3), vec(a, t, n3)};
  for (int64_t i = 0; i < n; i++) put_float(x1, i, specials[i]);
  for (int64_t i = 0; i < n2; i++) {
    put_float(x2, i, specials[i / n]);
    put_float(y2, i, specials[i % n]);
    ir_literal_set_i64(p2, i, (i / 3) & 1);
  }
  /* clamp(lo, x, hi) over every triple of 20 values (zeros, NaNs, infs) */
  static const int pick[20] = {0, 1, 2, 3, 10, 11, 12, 13, 15, 16, 4, 5, 9, 20, 22, 27, 28, 8, 19, 6};
  for (int64_t i = 0; i < n3; i++)
    for (int k = 0; k < 3; k++) put_float(c[k], i, specials[pick[(i / (k == 0 ? 400 : k == 1 ? 20 : 1)) % 20]]);
  for (size_t o = 0; o < COUNTOF(unary_ops); o++) {
    snprintf(name, sizeof name, "%s %s", tn, unary_ops[o]);
    snprintf(hlo, sizeof hlo, "HloModule u\nENTRY e {\n x = %s[%lld] parameter(0)\n ROOT r = %s[%lld] %s(x)\n}\n",
             tn, (long long)n, tn, (long long)n, unary_ops[o]);
    check(name, hlo, &x1, 1, emu);
  }
  snprintf(name, sizeof name, "%s is-finite", tn);
  snprintf(hlo, sizeof hlo, "HloModule u\nENTRY e {\n x = %s[%lld] parameter(0)\n ROOT r = pred[%lld] is-finite(x)\n}\n",
           tn, (long long)n, (long long)n);
  check(name, hlo, &x1, 1, emu);
  ir_literal *xy[3] = {x2, y2, NULL}, *pxy[3] = {p2, x2, y2};
  for (size_t o = 0; o < COUNTOF(binary_ops); o++) {
    snprintf(name, sizeof name, "%s %s", tn, binary_ops[o]);
    snprintf(hlo, sizeof hlo,
             "HloModule b\nENTRY e {\n x = %s[%lld] parameter(0)\n y = %s[%lld] parameter(1)\n"
             " ROOT r = %s[%lld] %s(x, y)\n}\n",
             tn, (long long)n2, tn, (long long)n2, tn, (long long)n2, binary_ops[o]);
    check(name, hlo, xy, 2, emu);
  }
  for (int d = 0; d < 6; d++)
    for (int total = 0; total < 2; total++) {
      snprintf(name, sizeof name, "%s compare %s%s", tn, dirs[d], total ? " TOTALORDER" : "");
      snprintf(hlo, sizeof hlo,
               "HloModule c\nENTRY e {\n x = %s[%lld] parameter(0)\n y = %s[%lld] parameter(1)\n"
               " ROOT r = pred[%lld] compare(x, y), direction=%s%s\n}\n",
               tn, (long long)n2, tn, (long long)n2, (long long)n2, dirs[d],
               total ? ", type=TOTALORDER" : "");
      check(name, hlo, xy, 2, emu);
    }
  snprintf(name, sizeof name, "%s select", tn);
  snprintf(hlo, sizeof hlo,
           "HloModule s\nENTRY e {\n p = pred[%lld] parameter(0)\n x = %s[%lld] parameter(1)\n"
           " y = %s[%lld] parameter(2)\n ROOT r = %s[%lld] select(p, x, y)\n}\n",
           (long long)n2, tn, (long long)n2, tn, (long long)n2, tn, (long long)n2);
  /* bf16: a signalling NaN leaves the vector unit quiet (vrndbf/vsth), in
   * all three: emulator, ir_eval's TPU mode and the CPU */
  check(name, hlo, pxy, 3, emu);
  /* data movement keeps every bit, signalling NaNs included */
  snprintf(name, sizeof name, "%s reverse, concatenate", tn);
  snprintf(hlo, sizeof hlo,
           "HloModule m\nENTRY e {\n x = %s[%lld] parameter(0)\n y = %s[%lld] reverse(x), dimensions={0}\n"
           " ROOT r = %s[%lld] concatenate(y, x), dimensions={0}\n}\n",
           tn, (long long)n, tn, (long long)n, tn, (long long)(2 * n));
  check(name, hlo, &x1, 1, emu);
  /* ... also inside a loop fusion with an elementwise op beside them
   * (the fusion's broadcast, reverse and transpose are data movement) */
  snprintf(name, sizeof name, "%s loop fusion of movement", tn);
  char v1[32], v2[32], v3[32]; /* T[n], T[2,n], T[n,2] */
  snprintf(v1, sizeof v1, "%s[%lld]", tn, (long long)n);
  snprintf(v2, sizeof v2, "%s[2,%lld]", tn, (long long)n);
  snprintf(v3, sizeof v3, "%s[%lld,2]", tn, (long long)n);
  snprintf(hlo, sizeof hlo,
           "HloModule lf\n%%fc (p: %s) -> (%s, %s, %s) {\n p = %s parameter(0)\n"
           " b = %s broadcast(p), dimensions={1}\n v = %s reverse(b), dimensions={1}\n"
           " t = %s transpose(b), dimensions={1,0}\n n = %s negate(p)\n"
           " ROOT r = (%s, %s, %s) tuple(v, t, n)\n}\n"
           "ENTRY e {\n x = %s parameter(0)\n ROOT f = (%s, %s, %s) fusion(x), kind=kLoop, "
           "calls=%%fc\n}\n",
           v1, v2, v3, v1, v1, v2, v2, v3, v1, v2, v3, v1, v1, v2, v3, v1);
  check(name, hlo, &x1, 1, emu);
  snprintf(name, sizeof name, "%s clamp", tn);
  snprintf(hlo, sizeof hlo,
           "HloModule c\nENTRY e {\n lo = %s[%lld] parameter(0)\n x = %s[%lld] parameter(1)\n"
           " hi = %s[%lld] parameter(2)\n ROOT r = %s[%lld] clamp(lo, x, hi)\n}\n",
           tn, (long long)n3, tn, (long long)n3, tn, (long long)n3, tn, (long long)n3);
  check(name, hlo, c, 3, emu);
  /* a chain of elementwise ops (one loop on the CPU) */
  snprintf(name, sizeof name, "%s chain", tn);
  snprintf(hlo, sizeof hlo,
           "HloModule ch\nENTRY e {\n x = %s[%lld] parameter(0)\n y = %s[%lld] parameter(1)\n"
           " m = %s[%lld] multiply(x, y)\n s = %s[%lld] subtract(m, x)\n"
           " mx = %s[%lld] maximum(s, y)\n ROOT r = %s[%lld] divide(mx, x)\n}\n",
           tn, (long long)n2, tn, (long long)n2, tn, (long long)n2, tn, (long long)n2, tn,
           (long long)n2, tn, (long long)n2);
  check(name, hlo, xy, 2, emu);
  arena_destroy(a);
}

static void converts(void) {
  static const ir_type ts[] = {IR_F32, IR_BF16, IR_F16, IR_S32, IR_S8, IR_PRED};
  /* integers: around 2^24 (f32 ties), 2^31, bf16 ties, small */
  static const int32_t ints[] = {0, 1, -1, 7, -128, 127, 255, 256, 257, 16777216, 16777217,
                                 16777219, -16777219, 33554435, 2147483647, INT32_MIN,
                                 2147483520, 2139095041, 8421376, 8454144, -8421377, 1000000001,
                                 16842753, -16842753, 33685505}; /* double rounding to bf16 */
  char hlo[512], name[96];
  arena *a = arena_create();
  for (size_t f = 0; f < COUNTOF(ts); f++)
    for (size_t t = 0; t < COUNTOF(ts); t++) {
      if (f == t) continue;
      bool fl = ir_type_is_float(ts[f]);
      int64_t n = fl ? NSPEC : (int64_t)COUNTOF(ints);
      ir_literal *x = vec(a, ts[f], n);
      for (int64_t i = 0; i < n; i++) {
        if (fl) put_float(x, i, specials[i]);
        else ir_literal_set_i64(x, i, ints[i]);
      }
      const char *fn = ir_type_name(ts[f]), *tn = ir_type_name(ts[t]);
      snprintf(name, sizeof name, "convert %s -> %s", fn, tn);
      snprintf(hlo, sizeof hlo, "HloModule cv\nENTRY e {\n x = %s[%lld] parameter(0)\n ROOT r = %s[%lld] convert(x)\n}\n",
               fn, (long long)n, tn, (long long)n);
      check(name, hlo, &x, 1, true);
    }
  arena_destroy(a);
}

/* ---- dots and convolutions ------------------------------------------------- */

static const char *const precs[] = {"default", "high", "highest"};

static void shape_text(char *buf, size_t n, ir_type t, const int64_t *d, int r) {
  int k = snprintf(buf, n, "%s[", ir_type_name(t));
  for (int i = 0; i < r; i++) k += snprintf(buf + k, n - (size_t)k, "%s%lld", i ? "," : "", (long long)d[i]);
  snprintf(buf + k, n - (size_t)k, "]");
}

static void types3(ir_type *lt, ir_type *rt, ir_type *ot) {
  static const ir_type combos[][3] = {{IR_F32, IR_F32, IR_F32}, {IR_BF16, IR_BF16, IR_F32},
                                      {IR_BF16, IR_BF16, IR_BF16}, {IR_F32, IR_F32, IR_BF16},
                                      {IR_F32, IR_BF16, IR_F32}, {IR_BF16, IR_F32, IR_BF16}};
  int c = (int)rnd(COUNTOF(combos));
  *lt = combos[c][0];
  *rt = combos[c][1];
  *ot = combos[c][2];
}

static void one_dot(int i) {
  static const int64_t sizes[] = {1, 2, 3, 5, 8, 17, 33, 64, 130};
  int64_t B = rnd(3) == 0 ? 1 + rnd(3) : 0, M = sizes[rnd(9)], N = sizes[rnd(9)], K = sizes[rnd(9)];
  if (rnd(2)) { /* large enough for the tiled kernel */
    M = 64 + rnd(70);
    N = 17 + rnd(50);
    K = 8 + rnd(60);
  }
  bool lt_k = rnd(2), rt_k = rnd(2); /* K first in lhs / K last in rhs */
  ir_type lt, rt, ot;
  types3(&lt, &rt, &ot);
  int pl = (int)rnd(3), pr = (int)rnd(3);
  int64_t ld[3], rd[3], od[3];
  int lr = 0, rr = 0, orank = 0;
  if (B) ld[lr++] = rd[rr++] = od[orank++] = B;
  int lk = lr, rk = rr;
  if (lt_k) { ld[lr++] = K; ld[lr++] = M; } else { ld[lr++] = M; lk = lr; ld[lr++] = K; }
  if (rt_k) { rd[rr++] = N; rk = rr; rd[rr++] = K; } else { rd[rr++] = K; rd[rr++] = N; }
  od[orank++] = M;
  od[orank++] = N;
  char ls[64], rs[64], os[64], hlo[1024], name[64], batch[96] = "";
  shape_text(ls, sizeof ls, lt, ld, lr);
  shape_text(rs, sizeof rs, rt, rd, rr);
  shape_text(os, sizeof os, ot, od, orank);
  if (B) snprintf(batch, sizeof batch, ", lhs_batch_dims={0}, rhs_batch_dims={0}");
  snprintf(hlo, sizeof hlo,
           "HloModule d\nENTRY e {\n a = %s parameter(0)\n b = %s parameter(1)\n"
           " ROOT r = %s dot(a, b)%s, lhs_contracting_dims={%d}, rhs_contracting_dims={%d},"
           " operand_precision={%s,%s}\n}\n",
           ls, rs, os, batch, lk, rk, precs[pl], precs[pr]);
  snprintf(name, sizeof name, "dot %d", i);
  arena *a = arena_create();
  ir_shape s0 = ir_shape_array(lt, lr, ld), s1 = ir_shape_array(rt, rr, rd);
  ir_literal *args[2] = {random_literal(a, &s0), random_literal(a, &s1)};
  check(name, hlo, args, 2, true);
  arena_destroy(a);
}

static void one_conv(int i) {
  int ns = 1 + (int)rnd(2);
  bool nchw = rnd(2);
  int64_t G = rnd(3) == 0 ? 2 : 1, BG = G == 1 && rnd(4) == 0 ? 2 : 1;
  int64_t nb = 1 + rnd(2), cin = (1 + rnd(3)) * G, cout = (1 + rnd(4)) * G * BG;
  int64_t isz[2], ksz[2], osz[2];
  char win[256] = "window={size=", pads[64] = "", str[64] = "", ldil[64] = "", rdil[64] = "", rev[64] = "";
  for (int d = 0; d < ns; d++) {
    isz[d] = 1 + rnd(9);
    ksz[d] = 1 + rnd(3);
    int64_t st = 1 + rnd(2), lo = (int64_t)rnd(4) - 1, hi = (int64_t)rnd(3), ld = 1 + rnd(2) * (rnd(3) == 0),
            rd = 1 + rnd(2) * (rnd(3) == 0);
    int64_t span = (isz[d] - 1) * ld + 1 + lo + hi, kd = (ksz[d] - 1) * rd + 1;
    if (span < kd) { hi += kd - span; span = kd; }
    osz[d] = (span - kd) / st + 1;
    const char *sep = d ? "x" : "";
    snprintf(win + strlen(win), sizeof win - strlen(win), "%s%lld", sep, (long long)ksz[d]);
    snprintf(pads + strlen(pads), sizeof pads - strlen(pads), "%s%lld_%lld", sep, (long long)lo, (long long)hi);
    snprintf(str + strlen(str), sizeof str - strlen(str), "%s%lld", sep, (long long)st);
    snprintf(ldil + strlen(ldil), sizeof ldil - strlen(ldil), "%s%lld", sep, (long long)ld);
    snprintf(rdil + strlen(rdil), sizeof rdil - strlen(rdil), "%s%lld", sep, (long long)rd);
    snprintf(rev + strlen(rev), sizeof rev - strlen(rev), "%s%d", sep, rnd(4) == 0);
  }
  snprintf(win + strlen(win), sizeof win - strlen(win), " pad=%s stride=%s lhs_dilate=%s rhs_dilate=%s rhs_reversal=%s}",
           pads, str, ldil, rdil, rev);
  int64_t id[4], kd[4], od[4];
  const char *labels;
  if (nchw) { /* bf01_oi01->bf01 */
    id[0] = nb * BG; id[1] = cin; kd[0] = cout; kd[1] = cin / G; od[0] = nb; od[1] = cout;
    for (int d = 0; d < ns; d++) { id[2 + d] = isz[d]; kd[2 + d] = ksz[d]; od[2 + d] = osz[d]; }
    labels = ns == 1 ? "bf0_oi0->bf0" : "bf01_oi01->bf01";
  } else { /* b01f_01io->b01f */
    id[0] = nb * BG; od[0] = nb;
    for (int d = 0; d < ns; d++) { id[1 + d] = isz[d]; kd[d] = ksz[d]; od[1 + d] = osz[d]; }
    id[ns + 1] = cin; kd[ns] = cin / G; kd[ns + 1] = cout; od[ns + 1] = cout;
    labels = ns == 1 ? "b0f_0io->b0f" : "b01f_01io->b01f";
  }
  ir_type lt, rt, ot;
  types3(&lt, &rt, &ot);
  int pl = (int)rnd(3);
  char ls[64], ks[64], os[64], hlo[1024], name[64];
  shape_text(ls, sizeof ls, lt, id, ns + 2);
  shape_text(ks, sizeof ks, rt, kd, ns + 2);
  shape_text(os, sizeof os, ot, od, ns + 2);
  snprintf(hlo, sizeof hlo,
           "HloModule c\nENTRY e {\n x = %s parameter(0)\n k = %s parameter(1)\n"
           " ROOT r = %s convolution(x, k), %s, dim_labels=%s, feature_group_count=%lld,"
           " batch_group_count=%lld, operand_precision={%s,%s}\n}\n",
           ls, ks, os, win, labels, (long long)G, (long long)BG, precs[pl], precs[pl]);
  snprintf(name, sizeof name, "conv %d", i);
  arena *a = arena_create();
  ir_shape s0 = ir_shape_array(lt, ns + 2, id), s1 = ir_shape_array(rt, ns + 2, kd);
  ir_literal *args[2] = {random_literal(a, &s0), random_literal(a, &s1)};
  check(name, hlo, args, 2, true);
  arena_destroy(a);
}

/* ---- reductions ------------------------------------------------------------ */

/* Float reduces in the TPU's fold orders: the row order (f32 add over the
 * trailing dims), the tree (R >= 4096 reduced elements, O < 1024 outputs,
 * several levels for 70000), and the sequential fold otherwise, on
 * full-precision values (inexact sums, so the order shows). */
static void reductions(void) {
  static const struct {
    const char *type, *in, *out, *dims, *op, *init;
    int64_t n;
  } rs[] = {
      {"f32", "3,300", "3", "1", "add", "0", 900},
      {"f32", "2,5,70", "2", "1,2", "add", "0.5", 700},
      {"f32", "300,3", "3", "0", "add", "0", 900},
      {"f32", "1200,5", "1200", "1", "add", "-0", 6000},
      {"f32", "5000", "", "0", "add", "0", 5000},
      {"f32", "2,4100", "2", "1", "add", "1", 8200},
      {"f32", "4,2,2100", "2", "0,2", "add", "0", 16800},
      {"f32", "70000", "", "0", "add", "0", 70000},
      {"f32", "20000", "", "0", "add", "-0", 20000},
      {"bf16", "3,5000", "3", "1", "add", "0", 15000},
      {"bf16", "3,300", "3", "1", "add", "0", 900},
      {"f32", "2,6000", "2", "1", "maximum", "-inf", 12000},
      {"f32", "6000", "", "0", "minimum", "inf", 6000},
      {"f32", "4096", "", "0", "multiply", "1", 4096},
  };
  char hlo[1024], name[96];
  for (size_t i = 0; i < COUNTOF(rs); i++) {
    snprintf(name, sizeof name, "reduce %s %s[%s] dims {%s}", rs[i].op, rs[i].type, rs[i].in, rs[i].dims);
    snprintf(hlo, sizeof hlo,
             "HloModule r\nf {\n a = %s[] parameter(0)\n b = %s[] parameter(1)\n"
             " ROOT c = %s[] %s(a, b)\n}\nENTRY e {\n x = %s[%s] parameter(0)\n"
             " z = %s[] constant(%s)\n ROOT r = %s[%s] reduce(x, z), dimensions={%s}, to_apply=f\n}\n",
             rs[i].type, rs[i].type, rs[i].type, rs[i].op, rs[i].type, rs[i].in, rs[i].type,
             rs[i].init, rs[i].type, rs[i].out, rs[i].dims);
    arena *a = arena_create();
    ir_literal *x = vec(a, strcmp(rs[i].type, "f32") ? IR_BF16 : IR_F32, rs[i].n);
    for (int64_t k = 0; k < rs[i].n; k++) {
      /* sums without specials (else most would be NaN or inf) but for the
       * first case; products of values near 1 */
      uint32_t u = random_bits();
      if (!strcmp(rs[i].op, "add") && i > 0)
        while ((u & 0x7F800000u) > 0x40800000u || (u & 0x7F800000u) < 0x30000000u) u = random_bits();
      if (!strcmp(rs[i].op, "multiply")) u = (rnd(64) ? 0x3F800000u : specials[rnd(NSPEC)]) ^ rnd(1u << 12);
      put_float(x, k, u);
    }
    /* the literal's shape is the parameter's: reshape the flat vector */
    ir_shape ps;
    ps.type = x->shape.type;
    ps.rank = 0;
    for (const char *c = rs[i].in; *c;) {
      char *end;
      ps.dims[ps.rank++] = strtoll(c, &end, 10);
      c = *end ? end + 1 : end;
    }
    ps = ir_shape_array(ps.type, ps.rank, ps.dims);
    x->shape = ps;
    check(name, hlo, &x, 1, true);
    arena_destroy(a);
  }
}

/* Reduce-window (pooling) with the reducer in TPU numerics: max with NaN
 * payloads and signed zeros (also on the emulator), add over padding. */
static void pooling(void) {
  static const struct {
    const char *op, *init, *win;
    bool emu;
  } ps[] = {
      {"maximum", "-inf", "size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0", true},
      {"minimum", "inf", "size=1x2x2x1 stride=1x2x2x1", true},
      {"add", "0", "size=1x3x3x1 stride=1x1x1x1 pad=0_0x1_1x1_1x0_0 rhs_dilate=1x2x1x1", false},
  };
  char hlo[1024], name[96];
  for (size_t i = 0; i < COUNTOF(ps); i++) {
    snprintf(name, sizeof name, "reduce-window %s", ps[i].op);
    arena *a = arena_create();
    int64_t d[4] = {2, 9, 8, 3};
    ir_shape xs = ir_shape_array(IR_F32, 4, d);
    ir_literal *x = random_literal(a, &xs);
    snprintf(hlo, sizeof hlo,
             "HloModule p\nf {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
             " ROOT c = f32[] %s(a, b)\n}\nENTRY e {\n x = f32[2,9,8,3] parameter(0)\n"
             " z = f32[] constant(%s)\n ROOT r = reduce-window(x, z), window={%s}, to_apply=f\n}\n",
             ps[i].op, ps[i].init, ps[i].win);
    check(name, hlo, &x, 1, ps[i].emu);
    arena_destroy(a);
  }
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 60;
  uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
  rng = seed * 0x9E3779B97F4A7C15ull + 1;
  elementwise(IR_F32, true);
  elementwise(IR_BF16, true);
  elementwise(IR_F16, true);
  int ew = nchecks;
  converts();
  int cv = nchecks;
  reductions();
  pooling();
  int rd = nchecks;
  for (int i = 0; i < n; i++) one_dot(i);
  int dt = nchecks;
  for (int i = 0; i < n; i++) one_conv(i);
  printf("diff_cpu_tpu: %d checks (elementwise %d, converts %d, reductions %d, dots %d, "
         "convolutions %d; %d also on the emulator), %d failures\n",
         nchecks, ew, cv - ew, rd - cv, dt - rd, nchecks - dt, nemu, nfail);
  return nfail ? 1 : 0;
}
