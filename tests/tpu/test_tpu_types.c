/* test_tpu_types.c: the element types the TPU runs beyond f32/bf16/s32/
 * s8/pred, bit for bit against the reference evaluator in its TPU-numerics
 * mode (docs/numerics.md) on v3 and v2: u32 (unsigned compare, max/min,
 * clamp, divide/remainder, shifts, converts to and from floats and other
 * integers, reductions, integer dots, indices). Inputs mix random 32-bit
 * patterns with the edge values 0, 1, 2^31 - 1, 2^31, 2^31 + 1,
 * UINT32_MAX - 1, UINT32_MAX and integers just above 2^24 (where a
 * conversion to f32 rounds); a few elements are also checked against
 * hand-derived values, so the oracle itself is tested. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backend/tpu/tpu.h"
#include "frontend/frontend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const targets[] = {"v3", "v2"};

static ir_module *parse(const char *text) {
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("types.hlo", text, strlen(text), d);
  if (!m) fprintf(stderr, "%s", diag_text(d));
  diag_destroy(d);
  assert_non_null(m);
  return m;
}

static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Leaf k of a result (depth first over one level of tuple). */
static const ir_literal *leaf(const ir_literal *l, int k) {
  return l->shape.type == IR_TUPLE ? l->elems[k] : l;
}

/* Every leaf of got has the bytes of ref's; the first difference is
 * printed with its leaf and element. */
static void same_bits(const ir_literal *got, const ir_literal *ref, const char *target) {
  int nl = ref->shape.type == IR_TUPLE ? ref->shape.ntuple : 1;
  assert_int_equal(got->shape.type == IR_TUPLE ? got->shape.ntuple : 1, nl);
  for (int k = 0; k < nl; k++) {
    const ir_literal *g = leaf(got, k), *r = leaf(ref, k);
    assert_int_equal(g->shape.type, r->shape.type);
    int es = ir_type_size(r->shape.type);
    int64_t n = ir_shape_count(&r->shape);
    for (int64_t i = 0; i < n; i++) {
      const uint8_t *a = (const uint8_t *)g->data + i * es, *b = (const uint8_t *)r->data + i * es;
      if (memcmp(a, b, (size_t)es)) {
        uint64_t ga = 0, rb = 0;
        memcpy(&ga, a, (size_t)es);
        memcpy(&rb, b, (size_t)es);
        fprintf(stderr, "%s: result %d (%s) element %lld: got 0x%llx, evaluator 0x%llx\n", target,
                k, ir_type_name(r->shape.type), (long long)i, (unsigned long long)ga,
                (unsigned long long)rb);
        fail();
      }
    }
  }
}

/* Runs m on args with the TPU-numerics evaluator and on every target;
 * every result bit must match. Returns the evaluator's result (in a). */
static ir_literal *check(const ir_module *m, ir_literal **args, int nargs, arena *a) {
  char err[512];
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  eo.tpu_numerics = true;
  ir_literal *ref = NULL;
  base_status st = ir_eval(m, &eo, args, nargs, a, &ref, err, sizeof err);
  if (st != ST_OK) fprintf(stderr, "evaluator: %s\n", err);
  assert_int_equal(st, ST_OK);
  for (size_t t = 0; t < COUNTOF(targets); t++) {
    tpu_options o;
    tpu_options_init(&o);
    o.target = targets[t];
    diag *d = diag_create();
    tpub_image *img = NULL;
    st = tpu_compile(m, &o, d, &img, NULL);
    if (st != ST_OK) fprintf(stderr, "%s: %s\n", targets[t], diag_text(d));
    diag_destroy(d);
    assert_int_equal(st, ST_OK);
    ir_literal *got = NULL;
    st = tpu_execute(img, targets[t], m, args, nargs, a, &got, NULL, NULL, err, sizeof err);
    tpub_free(img);
    if (st != ST_OK) fprintf(stderr, "%s: %s\n", targets[t], err);
    assert_int_equal(st, ST_OK);
    same_bits(got, ref, targets[t]);
  }
  return ref;
}

static const uint32_t u32_edges[] = {0u,          1u,          2u,          0x7fffffffu, 0x80000000u,
                                     0x80000001u, 0xfffffffeu, 0xffffffffu, 0x01000001u, 0x01010001u,
                                     0xffffff7fu, 0xffffff80u, 0xffffff81u, 0x80000080u, 0x800000c0u};

/* A u32 array of n elements: the edge values first (rotated by rot), then
 * random patterns; every fourth random element is a small amount (0..39,
 * for shifts) when small is set. */
static ir_literal *u32_array(arena *a, int64_t n, uint64_t seed, int rot, bool small) {
  ir_shape s = ir_shape_array(IR_U32, 1, &n);
  ir_literal *l = ir_literal_create(a, &s);
  uint32_t *v = l->data;
  int ne = (int)COUNTOF(u32_edges);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = next(&seed);
    if (i < ne) v[i] = u32_edges[(i + rot) % ne];
    else if (small && i % 4 == 0) v[i] = (uint32_t)(r % 40);
    else if (i % 7 == 0) v[i] = (uint32_t)(r % 1000);
    else v[i] = (uint32_t)r;
  }
  return l;
}

/* f32 values whose conversion to u32 hits every rule: NaN, +-inf,
 * negatives, -0.5, 2^31 and its neighbours, 2^32, beyond; then random
 * magnitudes up to 2^33. */
static ir_literal *f32_for_u32(arena *a, int64_t n, uint64_t seed) {
  static const float edges[] = {NAN,         INFINITY,      -INFINITY,     -1.0f,       -0.5f,
                                -0.0f,       0.0f,          0.99f,         1.5f,        2147483520.0f,
                                2147483648.0f, 2147483904.0f, 4294967040.0f, 4294967296.0f, 1e20f,
                                16777217.0f, 3e9f,          -3e9f};
  ir_shape s = ir_shape_array(IR_F32, 1, &n);
  ir_literal *l = ir_literal_create(a, &s);
  float *v = l->data;
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = next(&seed);
    if (i < (int64_t)COUNTOF(edges)) v[i] = edges[i];
    else v[i] = (float)ldexp((double)(r >> 11) / 9007199254740992.0 * 2.0 - 0.25, (int)(r % 34));
  }
  return l;
}

#define N "1100"

/* Every elementwise op of s32 on u32, with the unsigned rules. */
static void u32_elementwise(void **state) {
  (void)state;
  ir_module *m = parse(
      "HloModule u32ew\nENTRY e {\n"
      " x = u32[" N "] parameter(0)\n y = u32[" N "] parameter(1)\n"
      " ad = u32[" N "] add(x, y)\n sb = u32[" N "] subtract(x, y)\n mu = u32[" N "] multiply(x, y)\n"
      " dv = u32[" N "] divide(x, y)\n rm = u32[" N "] remainder(x, y)\n"
      " mx = u32[" N "] maximum(x, y)\n mn = u32[" N "] minimum(x, y)\n"
      " lt = pred[" N "] compare(x, y), direction=LT\n le = pred[" N "] compare(x, y), direction=LE\n"
      " gt = pred[" N "] compare(x, y), direction=GT\n ge = pred[" N "] compare(x, y), direction=GE\n"
      " eq = pred[" N "] compare(x, y), direction=EQ\n ne = pred[" N "] compare(x, y), direction=NE\n"
      " sl = u32[" N "] shift-left(x, y)\n sr = u32[" N "] shift-right-logical(x, y)\n"
      " sa = u32[" N "] shift-right-arithmetic(x, y)\n"
      " ab = u32[" N "] abs(x)\n sg = u32[" N "] sign(x)\n ng = u32[" N "] negate(x)\n"
      " nt = u32[" N "] not(x)\n pc = u32[" N "] popcnt(x)\n cz = u32[" N "] count-leading-zeros(x)\n"
      " an = u32[" N "] and(x, y)\n or = u32[" N "] or(x, y)\n xr = u32[" N "] xor(x, y)\n"
      " c0 = u32[] constant(2147483648)\n c1 = u32[] constant(4294967040)\n"
      " lo = u32[" N "] broadcast(c0), dimensions={}\n hi = u32[" N "] broadcast(c1), dimensions={}\n"
      " cl = u32[" N "] clamp(lo, y, hi)\n se = u32[" N "] select(lt, x, y)\n"
      " ROOT r = (u32[" N "], u32[" N "], u32[" N "], u32[" N "], u32[" N "], u32[" N "], u32[" N "],"
      " pred[" N "], pred[" N "], pred[" N "], pred[" N "], pred[" N "], pred[" N "],"
      " u32[" N "], u32[" N "], u32[" N "], u32[" N "], u32[" N "], u32[" N "], u32[" N "], u32[" N "],"
      " u32[" N "], u32[" N "], u32[" N "], u32[" N "], u32[" N "], u32[" N "])"
      " tuple(ad, sb, mu, dv, rm, mx, mn, lt, le, gt, ge, eq, ne, sl, sr, sa, ab, sg, ng, nt, pc,"
      " cz, an, or, xr, cl, se)\n}\n");
  arena *a = arena_create();
  for (int rot = 0; rot < 3; rot++) {
    ir_literal *args[2] = {u32_array(a, 1100, 11 + (uint64_t)rot, rot, false),
                           u32_array(a, 1100, 97 + (uint64_t)rot, rot * 5 + 3, true)};
    ir_literal *ref = check(m, args, 2, a);
    if (rot == 0) { /* x[3] = 2^31 - 1, y[3] = UINT32_MAX - 1: hand-derived */
      const uint32_t *x = args[0]->data, *y = args[1]->data;
      assert_int_equal(x[3], 0x7fffffffu);
      assert_int_equal(y[3], 0xfffffffeu);
      assert_int_equal(((uint32_t *)leaf(ref, 3)->data)[3], 0u);          /* 2^31-1 / big */
      assert_int_equal(((uint32_t *)leaf(ref, 4)->data)[3], 0x7fffffffu); /* remainder */
      assert_int_equal(((uint32_t *)leaf(ref, 5)->data)[3], 0xfffffffeu); /* max unsigned */
      assert_int_equal(((uint8_t *)leaf(ref, 7)->data)[3], 1);            /* lt unsigned */
      assert_int_equal(((uint32_t *)leaf(ref, 25)->data)[3], 0xffffff00u); /* clamp to hi */
    }
  }
  arena_destroy(a);
  ir_module_destroy(m);
}

/* Converts between u32 and f32, bf16, s32, s8, pred, both ways. */
static void u32_converts(void **state) {
  (void)state;
  ir_module *m = parse(
      "HloModule u32cv\nENTRY e {\n"
      " x = u32[" N "] parameter(0)\n f = f32[" N "] parameter(1)\n"
      " xf = f32[" N "] convert(x)\n xh = bf16[" N "] convert(x)\n xs = s32[" N "] convert(x)\n"
      " x8 = s8[" N "] convert(x)\n xp = pred[" N "] convert(x)\n"
      " fu = u32[" N "] convert(f)\n fb = bf16[" N "] convert(f)\n bu = u32[" N "] convert(fb)\n"
      " su = u32[" N "] convert(xs)\n s8u = u32[" N "] convert(x8)\n pu = u32[" N "] convert(xp)\n"
      " ROOT r = (f32[" N "], bf16[" N "], s32[" N "], s8[" N "], pred[" N "], u32[" N "], u32[" N "],"
      " u32[" N "], u32[" N "], u32[" N "]) tuple(xf, xh, xs, x8, xp, fu, bu, su, s8u, pu)\n}\n");
  arena *a = arena_create();
  ir_literal *args[2] = {u32_array(a, 1100, 5, 0, false), f32_for_u32(a, 1100, 6)};
  ir_literal *ref = check(m, args, 2, a);
  /* 0xffffffff -> 2^32 (f32, RNE); 2^24 + 1 -> 2^24; NaN -> 0; 3e9 -> 3000000000 */
  const float *xf = leaf(ref, 0)->data;
  assert_true(xf[7] == 4294967296.0f);
  assert_true(xf[8] == 16777216.0f);
  /* 2^24 + 2^16 + 1 -> bf16 2^24 + 2^17 (0x4b81), one rounding; rounding
   * to f32 first would give 2^24 */
  assert_int_equal(((const uint16_t *)leaf(ref, 1)->data)[9], 0x4b81);
  const uint32_t *fu = leaf(ref, 5)->data;
  assert_int_equal(fu[0], 0u);
  assert_int_equal(fu[1], 0xffffffffu);
  assert_int_equal(fu[4], 0u);
  assert_int_equal(fu[10], 0x80000000u);
  assert_int_equal(fu[16], 3000000000u);
  arena_destroy(a);
  ir_module_destroy(m);
}

/* Reductions, a reduce-window, an integer dot and u32 indices. */
static void u32_reduce_dot_index(void **state) {
  (void)state;
  ir_module *m = parse(
      "HloModule u32rd\n"
      "addu { a = u32[] parameter(0)\n b = u32[] parameter(1)\n ROOT s = u32[] add(a, b) }\n"
      "maxu { a = u32[] parameter(0)\n b = u32[] parameter(1)\n ROOT s = u32[] maximum(a, b) }\n"
      "ENTRY e {\n x = u32[" N "] parameter(0)\n i = u32[] parameter(1)\n j = u32[] parameter(2)\n"
      " z = u32[] constant(0)\n x2 = u32[100,11] reshape(x)\n"
      " s = u32[11] reduce(x2, z), dimensions={0}, to_apply=addu\n"
      " m = u32[100] reduce(x2, z), dimensions={1}, to_apply=maxu\n"
      " w = u32[98,11] reduce-window(x2, z), window={size=3x1}, to_apply=maxu\n"
      " k = u32[11,7] slice(x2), slice={[0:11], [0:7]}\n"
      " d = u32[100,7] dot(x2, k), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      " ds = u32[5,3] dynamic-slice(x2, i, j), dynamic_slice_sizes={5,3}\n"
      " ROOT r = (u32[11], u32[100], u32[98,11], u32[100,7], u32[5,3]) tuple(s, m, w, d, ds)\n}\n");
  arena *a = arena_create();
  /* indices: in range, and 2^31 / UINT32_MAX (clamped to the last start) */
  static const uint32_t ix[][2] = {{3, 4}, {0x80000000u, 1}, {2, 0xffffffffu}};
  for (size_t k = 0; k < COUNTOF(ix); k++) {
    ir_shape ss = ir_shape_scalar(IR_U32);
    ir_literal *li = ir_literal_create(a, &ss), *lj = ir_literal_create(a, &ss);
    *(uint32_t *)li->data = ix[k][0];
    *(uint32_t *)lj->data = ix[k][1];
    ir_literal *args[3] = {u32_array(a, 1100, 21 + k, (int)k, false), li, lj};
    ir_literal *ref = check(m, args, 3, a);
    if (k == 1) { /* start (95, 1): element [0][0] is x2[95][1] */
      const uint32_t *x = args[0]->data, *ds = leaf(ref, 4)->data;
      assert_int_equal(ds[0], x[95 * 11 + 1]);
    }
  }
  arena_destroy(a);
  ir_module_destroy(m);
}

/* f16 operands: every 16-bit pattern class (zeros, subnormals, normals,
 * the largest finite 65504, infinities, quiet and signalling NaNs of both
 * signs) first, then random bit patterns; rot < 0: random finite values
 * below 2 in magnitude only (bit 14 clear), subnormals included. */
static ir_literal *f16_array(arena *a, int64_t n, uint64_t seed, int rot) {
  static const uint16_t edges[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff,
                                   0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x7c01, 0x3c00, 0xbc00, 0x3555,
                                   0x0200, 0x5bff, 0x7bfe, 0x0003};
  ir_shape s = ir_shape_array(IR_F16, 1, &n);
  ir_literal *l = ir_literal_create(a, &s);
  uint16_t *v = l->data;
  int ne = (int)COUNTOF(edges);
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = next(&seed);
    if (rot < 0) v[i] = (uint16_t)(r & 0xbfff);
    else v[i] = i < ne ? edges[(i + rot) % ne] : (uint16_t)r;
  }
  return l;
}

/* f32 values whose rounding to f16 hits every rule: ties to even in the
 * normal and subnormal ranges, the overflow threshold 65520 and its
 * neighbours, below 2^-25, NaN payloads; then random magnitudes 2^-30 ..
 * 2^17. */
static ir_literal *f32_for_f16(arena *a, int64_t n, uint64_t seed) {
  static const uint32_t edges[] = {0x477fefffu, 0x477ff000u, 0x477fe000u, 0x3f801000u, 0x3f803000u,
                                   0x33000000u, 0x33000001u, 0x32ffffffu, 0x33c00000u, 0x387fe000u,
                                   0x387ff000u, 0x38800000u, 0x7fa00001u, 0xffc12345u, 0x7f800000u,
                                   0x80000000u, 0x3f7ff000u, 0xc77ff000u};
  ir_shape s = ir_shape_array(IR_F32, 1, &n);
  ir_literal *l = ir_literal_create(a, &s);
  uint32_t *v = l->data;
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = next(&seed);
    if (i < (int64_t)COUNTOF(edges)) {
      v[i] = edges[i];
    } else {
      float f = ldexpf((float)(r >> 40) / 16777216.0f, (int)(r % 48) - 30);
      memcpy(&v[i], &f, 4);
      v[i] |= (uint32_t)(r >> 63) << 31;
    }
  }
  return l;
}

/* f16 computed in f32 and rounded once per op, as the evaluator. */
static void f16_elementwise(void **state) {
  (void)state;
  ir_module *m = parse(
      "HloModule f16ew\nENTRY e {\n"
      " x = f16[" N "] parameter(0)\n y = f16[" N "] parameter(1)\n"
      " ad = f16[" N "] add(x, y)\n sb = f16[" N "] subtract(x, y)\n mu = f16[" N "] multiply(x, y)\n"
      " dv = f16[" N "] divide(x, y)\n ab = f16[" N "] abs(x)\n sq = f16[" N "] sqrt(ab)\n"
      " ng = f16[" N "] negate(y)\n mx = f16[" N "] maximum(x, y)\n mn = f16[" N "] minimum(x, y)\n"
      " lt = pred[" N "] compare(x, y), direction=LT\n to = pred[" N "] compare(x, y), direction=LT, type=TOTALORDER\n"
      " se = f16[" N "] select(lt, x, y)\n fl = f16[" N "] floor(x)\n rn = f16[" N "] round-nearest-even(y)\n"
      " sg = f16[" N "] sign(x)\n fi = pred[" N "] is-finite(x)\n"
      " ex = f16[" N "] exponential(y)\n lg = f16[" N "] log(ab)\n th = f16[" N "] tanh(x)\n"
      " rm = f16[" N "] remainder(x, y)\n cl = f16[" N "] clamp(y, x, ab)\n"
      " ROOT r = (f16[" N "], f16[" N "], f16[" N "], f16[" N "], f16[" N "], f16[" N "], f16[" N "],"
      " f16[" N "], f16[" N "], pred[" N "], pred[" N "], f16[" N "], f16[" N "], f16[" N "], f16[" N "],"
      " pred[" N "], f16[" N "], f16[" N "], f16[" N "], f16[" N "], f16[" N "])"
      " tuple(ad, sb, mu, dv, ab, sq, ng, mx, mn, lt, to, se, fl, rn, sg, fi, ex, lg, th, rm, cl)\n}\n");
  arena *a = arena_create();
  for (int rot = 0; rot < 3; rot++) {
    ir_literal *args[2] = {f16_array(a, 1100, 31 + (uint64_t)rot, rot),
                           f16_array(a, 1100, 71 + (uint64_t)rot, rot * 7 + 1)};
    ir_literal *ref = check(m, args, 2, a);
    if (rot == 0) { /* hand-derived: x[i] = edges[i], y[i] = edges[i + 1] */
      const uint16_t *x = args[0]->data, *y = args[1]->data;
      assert_int_equal(x[6], 0x7bff);
      assert_int_equal(y[6], 0xfbff);
      assert_int_equal(((const uint16_t *)leaf(ref, 0)->data)[6], 0x0000); /* 65504 + -65504 */
      assert_int_equal(((const uint16_t *)leaf(ref, 1)->data)[7], 0xfc00); /* -65504 - inf */
      assert_int_equal(((const uint16_t *)leaf(ref, 2)->data)[2], 0x8000); /* 2^-24 * -2^-24 */
      assert_int_equal(((const uint16_t *)leaf(ref, 3)->data)[0], 0x7e00); /* 0 / -0: canonical NaN */
      assert_int_equal(y[4], 0x0400); /* (1023 * 2^-24) / 2^-14 = 1 - 2^-10 */
      assert_int_equal(((const uint16_t *)leaf(ref, 3)->data)[4], 0x3bfe);
    }
  }
  arena_destroy(a);
  ir_module_destroy(m);
}

/* f16 to and from f32, bf16, s32, u32, s8 and pred; data movement;
 * bitcast-convert between f16 and bf16 (bits kept, signalling NaNs too). */
static void f16_converts_moves(void **state) {
  (void)state;
  ir_module *m = parse(
      "HloModule f16cv\nENTRY e {\n"
      " f = f32[" N "] parameter(0)\n h = f16[" N "] parameter(1)\n u = u32[" N "] parameter(2)\n"
      " fh = f16[" N "] convert(f)\n hf = f32[" N "] convert(h)\n hb = bf16[" N "] convert(h)\n"
      " bh = f16[" N "] convert(hb)\n hs = s32[" N "] convert(h)\n sh = f16[" N "] convert(hs)\n"
      " uh = f16[" N "] convert(u)\n hu = u32[" N "] convert(h)\n h8 = s8[" N "] convert(h)\n"
      " hp = pred[" N "] convert(h)\n ph = f16[" N "] convert(hp)\n"
      " h2 = f16[100,11] reshape(h)\n tr = f16[11,100] transpose(h2), dimensions={1,0}\n"
      " sl = f16[5,30] slice(tr), slice={[2:7], [10:70:2]}\n z = f16[] constant(-0.0001)\n"
      " pd = f16[9,33] pad(sl, z), padding=2_2x1_2\n cc = f16[2200] concatenate(fh, h), dimensions={0}\n"
      " c = f16[3] constant({65504, 6e-08, -inf})\n"
      " hc = bf16[" N "] bitcast-convert(h)\n ch = f16[" N "] bitcast-convert(hc)\n"
      " ng = f16[" N "] negate(ch)\n nc = bf16[" N "] bitcast-convert(ng)\n"
      " ROOT r = (f16[" N "], f32[" N "], bf16[" N "], f16[" N "], s32[" N "], f16[" N "], f16[" N "],"
      " u32[" N "], s8[" N "], pred[" N "], f16[" N "], f16[9,33], f16[2200], f16[3], bf16[" N "],"
      " f16[" N "], bf16[" N "])"
      " tuple(fh, hf, hb, bh, hs, sh, uh, hu, h8, hp, ph, pd, cc, c, hc, ch, nc)\n}\n");
  arena *a = arena_create();
  ir_literal *args[3] = {f32_for_f16(a, 1100, 3), f16_array(a, 1100, 4, 0),
                         u32_array(a, 1100, 5, 0, false)};
  ir_literal *ref = check(m, args, 3, a);
  const uint16_t *fh = leaf(ref, 0)->data;
  assert_int_equal(fh[0], 0x7bff); /* 65519.99... -> 65504 */
  assert_int_equal(fh[1], 0x7c00); /* 65520 -> inf */
  assert_int_equal(fh[3], 0x3c00); /* 1 + 2^-11 (a tie) -> 1 */
  assert_int_equal(fh[4], 0x3c02); /* 1 + 3 * 2^-11 (a tie) -> 1 + 2^-9 */
  assert_int_equal(fh[5], 0x0000); /* 2^-25 (a tie) -> 0 */
  assert_int_equal(fh[6], 0x0001); /* just above 2^-25 -> 2^-24 */
  assert_int_equal(fh[12], 0x7f00); /* a signalling NaN: quieted with its payload */
  assert_int_equal(fh[13], 0xfe09); /* a negative NaN keeps its sign */
  arena_destroy(a);
  ir_module_destroy(m);
}

/* f16 dots go to the MXU as the evaluator's TPU numerics say (each
 * operand read as f32 and rounded to bf16, f32 accumulation, one rounding
 * to f16); reductions and reduce-windows fold f16 adds rounded per step. */
static void f16_dot_reduce(void **state) {
  (void)state;
  ir_module *m = parse(
      "HloModule f16dot\n"
      "add { a = f16[] parameter(0)\n b = f16[] parameter(1)\n ROOT s = f16[] add(a, b) }\n"
      "ENTRY e {\n x = f16[" N "] parameter(0)\n y = f16[" N "] parameter(1)\n"
      " a = f16[20,55] reshape(x)\n b = f16[55,20] reshape(y)\n"
      " d = f16[20,20] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      " df = f32[20,20] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
      " z = f16[] constant(0)\n r = f16[20] reduce(a, z), dimensions={1}, to_apply=add\n"
      " w = f16[20,20] reduce-window(d, z), window={size=2x3 pad=1_0x1_1}, to_apply=add\n"
      " ROOT t = (f16[20,20], f32[20,20], f16[20], f16[20,20]) tuple(d, df, r, w)\n}\n");
  arena *a = arena_create();
  for (int rot = -1; rot < 1; rot++) { /* finite values, then every class */
    ir_literal *args[2] = {f16_array(a, 1100, 42 + (uint64_t)rot, rot),
                           f16_array(a, 1100, 44 + (uint64_t)rot, rot < 0 ? rot : 5)};
    ir_literal *ref = check(m, args, 2, a);
    if (rot < 0) { /* finite inputs give finite sums */
      const uint16_t *d = leaf(ref, 0)->data;
      for (int k = 0; k < 400; k++) assert_true((d[k] & 0x7c00) != 0x7c00);
    }
  }
  arena_destroy(a);
  ir_module_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(u32_elementwise),
      cmocka_unit_test(u32_converts),
      cmocka_unit_test(u32_reduce_dot_index),
      cmocka_unit_test(f16_elementwise),
      cmocka_unit_test(f16_converts_moves),
      cmocka_unit_test(f16_dot_reduce),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
