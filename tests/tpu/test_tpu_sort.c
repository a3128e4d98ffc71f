/* test_tpu_sort.c: sort, topk and the TopK custom-call on the TPU targets
 * against the reference evaluator, bit for bit (the evaluator's merge
 * sort order: ir/eval_sort.c; the lowering: backend/tpu/lower_sort.c).
 *
 * Inputs are drawn per case from small pools so that ties are many (keys
 * from a handful of values, payloads distinct so that any move of a tied
 * element shows), and the float pools hold NaN of both signs, +-inf, -0
 * and +0, a subnormal and the largest finite value, so that NaN and -0
 * meet every comparator: LT/GT under FLOAT (no strict weak order with
 * NaN: only the evaluator's exact merge sequence gives its answer),
 * TOTALORDER, the integer-key comparator older jax emitted, two keys,
 * LE (not irreflexive). Shapes: 1-D, 2-D and 3-D along every dimension,
 * lengths not multiples of 8 or 128, one row through several VMEM blocks
 * on a small-VMEM target, a sort inside a while loop. Each case runs on v3, v2 and a small override.
 * Then: unsupported comparators, rows too long for VMEM and f64 operands
 * are located compile errors naming the reason. */
#include <stdlib.h>

#include "frontend/frontend.h"
#include "tests/tpu/tpu_check.h"

#define COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* f32 bit patterns of the key pools: special values, then small numbers. */
static const uint32_t special[] = {
    0x7fc00000u, /* NaN */
    0xffc00001u, /* -NaN with a payload */
    0x7f800000u, /* inf */
    0xff800000u, /* -inf */
    0x80000000u, /* -0 */
    0x00000000u, /* +0 */
    0x00010000u, /* subnormal (bf16-representable) */
    0x7f7f0000u, /* a large finite value (bf16-representable) */
    0x3f800000u, /* 1 */
    0xbf800000u, /* -1 */
    0x3f000000u, /* 0.5 */
    0x40000000u, /* 2 */
};

typedef enum pool { P_SPECIAL, P_TIES, P_WIDE } pool;

/* Fills l's array leaves: floats from the pool (P_SPECIAL: the table;
 * P_TIES: -2..2; P_WIDE: bf16 values of [-1, 1)), integers 0..3 (P_TIES,
 * P_SPECIAL) or distinct-ish values (P_WIDE), pred 0/1. */
static void fill(ir_literal *l, pool p, uint64_t *s) {
  if (l->shape.type == IR_TUPLE) {
    for (int k = 0; k < l->shape.ntuple; k++) fill(l->elems[k], p, s);
    return;
  }
  int64_t n = ir_shape_count(&l->shape);
  ir_type t = l->shape.type;
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = next(s);
    uint32_t bits;
    if (p == P_SPECIAL) bits = special[r % COUNTOF(special)];
    else if (p == P_TIES) bits = (uint32_t)0x40000000u ^ ((r % 5) << 23); /* 2, 4, 8, 16 or 32 */
    else {
      float f = (float)((double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0);
      memcpy(&bits, &f, 4);
      bits &= 0xffff0000u;
    }
    if (t == IR_F32) memcpy((uint8_t *)l->data + 4 * i, &bits, 4);
    else if (t == IR_BF16) {
      uint16_t h = (uint16_t)(bits >> 16);
      memcpy((uint8_t *)l->data + 2 * i, &h, 2);
    } else if (t == IR_PRED) ir_literal_set_i64(l, i, (int64_t)(r & 1));
    else if (p == P_WIDE) ir_literal_set_i64(l, i, (int64_t)(r % 100000) - 50000);
    else ir_literal_set_i64(l, i, (int64_t)(r % 4) - 1);
  }
}

/* Whether a and b hold the same bits (tuples leaf by leaf). */
static bool same_bits(const ir_literal *a, const ir_literal *b) {
  if (a->shape.type != b->shape.type) return false;
  if (a->shape.type == IR_TUPLE) {
    if (a->shape.ntuple != b->shape.ntuple) return false;
    for (int k = 0; k < a->shape.ntuple; k++)
      if (!same_bits(a->elems[k], b->elems[k])) return false;
    return true;
  }
  int64_t n = ir_shape_count(&a->shape);
  return n == ir_shape_count(&b->shape) &&
         memcmp(a->data, b->data, (size_t)n * (size_t)ir_type_size(a->shape.type)) == 0;
}

#define CMP_LT(T)                                                                                  \
  "cmp {\n  a = " T "[] parameter(0)\n  b = " T "[] parameter(1)\n"                                \
  "  ROOT lt = pred[] compare(a, b), direction=LT\n}\n"

typedef struct scase {
  const char *name, *text;
  pool p;
  const char *only; /* NULL: every target; else only this one */
} scase;

static const scase cases[] = {
    {"sort_1d_f32_lt_special_37",
     "HloModule m\n" CMP_LT("f32") "ENTRY e {\n  x = f32[37] parameter(0)\n"
     "  ROOT s = f32[37] sort(x), dimensions={0}, to_apply=cmp\n}\n",
     P_SPECIAL, NULL},
    {"sort_1d_f32_lt_stable_1000",
     "HloModule m\n" CMP_LT("f32") "ENTRY e {\n  x = f32[1000] parameter(0)\n"
     "  ROOT s = f32[1000] sort(x), dimensions={0}, is_stable=true, to_apply=cmp\n}\n",
     P_WIDE, NULL},
    {"sort_kv_stable_ties_300",
     "HloModule m\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
     "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
     "  ROOT lt = pred[] compare(a, b), direction=LT\n}\n"
     "ENTRY e {\n  k = f32[300] parameter(0)\n  v = s32[300] parameter(1)\n"
     "  ROOT s = (f32[300], s32[300]) sort(k, v), dimensions={0}, is_stable=true, to_apply=cmp\n}\n",
     P_TIES, NULL},
    {"sort_kv_unstable_special_129",
     "HloModule m\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
     "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
     "  ROOT gt = pred[] compare(a, b), direction=GT\n}\n"
     "ENTRY e {\n  k = f32[129] parameter(0)\n  v = s32[129] parameter(1)\n"
     "  ROOT s = (f32[129], s32[129]) sort(k, v), dimensions={0}, to_apply=cmp\n}\n",
     P_SPECIAL, NULL},
    {"sort_totalorder_jax_special_3x45",
     "HloModule m\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
     "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
     "  ROOT lt = pred[] compare(a, b), direction=LT, type=TOTALORDER\n}\n"
     "ENTRY e {\n  k = f32[3,45] parameter(0)\n  v = s32[3,45] parameter(1)\n"
     "  ROOT s = (f32[3,45], s32[3,45]) sort(k, v), dimensions={1}, is_stable=true, "
     "to_apply=cmp\n}\n",
     P_SPECIAL, NULL},
    {"sort_intkey_comparator_special_50",
     /* the comparator older jax emitted: an s32 key from the f32 bits */
     "HloModule m\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
     "  ia = s32[] bitcast-convert(a)\n  ib = s32[] bitcast-convert(b)\n"
     "  z = s32[] constant(0)\n  m = s32[] constant(2147483647)\n"
     "  na = pred[] compare(ia, z), direction=LT\n  nb = pred[] compare(ib, z), direction=LT\n"
     "  xa = s32[] xor(ia, m)\n  xb = s32[] xor(ib, m)\n"
     "  ka = s32[] select(na, xa, ia)\n  kb = s32[] select(nb, xb, ib)\n"
     "  ROOT lt = pred[] compare(ka, kb), direction=LT\n}\n"
     "ENTRY e {\n  x = f32[50] parameter(0)\n"
     "  ROOT s = f32[50] sort(x), dimensions={0}, is_stable=true, to_apply=cmp\n}\n",
     P_SPECIAL, NULL},
    {"sort_two_keys_payload_6x50",
     "HloModule m\ncmp {\n  a0 = s32[] parameter(0)\n  b0 = s32[] parameter(1)\n"
     "  a1 = f32[] parameter(2)\n  b1 = f32[] parameter(3)\n"
     "  a2 = s32[] parameter(4)\n  b2 = s32[] parameter(5)\n"
     "  lt0 = pred[] compare(a0, b0), direction=LT\n  eq0 = pred[] compare(a0, b0), direction=EQ\n"
     "  lt1 = pred[] compare(a1, b1), direction=GT, type=TOTALORDER\n"
     "  t = pred[] and(eq0, lt1)\n  ROOT r = pred[] or(lt0, t)\n}\n"
     "ENTRY e {\n  k0 = s32[6,50] parameter(0)\n  k1 = f32[6,50] parameter(1)\n"
     "  io = s32[6,50] iota(), iota_dimension=1\n"
     "  ROOT s = (s32[6,50], f32[6,50], s32[6,50]) sort(k0, k1, io), dimensions={1}, "
     "to_apply=cmp\n}\n",
     P_SPECIAL, NULL},
    {"sort_3d_dim0_gt_5x7x9",
     "HloModule m\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
     "  ROOT gt = pred[] compare(a, b), direction=GT\n}\n"
     "ENTRY e {\n  x = f32[5,7,9] parameter(0)\n"
     "  ROOT s = f32[5,7,9] sort(x), dimensions={0}, to_apply=cmp\n}\n",
     P_SPECIAL, NULL},
    {"sort_3d_dim1_kv_5x7x9",
     "HloModule m\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
     "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
     "  ROOT lt = pred[] compare(a, b), direction=LT\n}\n"
     "ENTRY e {\n  x = f32[5,7,9] parameter(0)\n  v = s32[5,7,9] iota(), iota_dimension=1\n"
     "  ROOT s = (f32[5,7,9], s32[5,7,9]) sort(x, v), dimensions={1}, is_stable=true, "
     "to_apply=cmp\n}\n",
     P_TIES, NULL},
    {"sort_3d_dim2_le_5x7x9",
     "HloModule m\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
     "  ROOT le = pred[] compare(a, b), direction=LE\n}\n"
     "ENTRY e {\n  x = f32[5,7,9] parameter(0)\n"
     "  ROOT s = f32[5,7,9] sort(x), dimensions={2}, to_apply=cmp\n}\n",
     P_SPECIAL, NULL},
    {"sort_2d_dim0_bf16_s8_130x3",
     "HloModule m\ncmp {\n  a = bf16[] parameter(0)\n  b = bf16[] parameter(1)\n"
     "  c = s8[] parameter(2)\n  d = s8[] parameter(3)\n"
     "  ROOT lt = pred[] compare(a, b), direction=LT\n}\n"
     "ENTRY e {\n  x = bf16[130,3] parameter(0)\n  y = s8[130,3] parameter(1)\n"
     "  ROOT s = (bf16[130,3], s8[130,3]) sort(x, y), dimensions={0}, is_stable=true, "
     "to_apply=cmp\n}\n",
     P_SPECIAL, NULL},
    {"sort_pred_s32_keys_2x33",
     "HloModule m\ncmp {\n  a = pred[] parameter(0)\n  b = pred[] parameter(1)\n"
     "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
     "  ROOT gt = pred[] compare(a, b), direction=GT\n}\n"
     "ENTRY e {\n  x = pred[2,33] parameter(0)\n  y = s32[2,33] parameter(1)\n"
     "  ROOT s = (pred[2,33], s32[2,33]) sort(x, y), dimensions={1}, is_stable=true, "
     "to_apply=cmp\n}\n",
     P_WIDE, NULL},
    {"sort_blocks_small_vmem_300x100",
     "HloModule m\n" CMP_LT("f32") "ENTRY e {\n  x = f32[300,100] parameter(0)\n"
     "  ROOT s = f32[300,100] sort(x), dimensions={1}, to_apply=cmp\n}\n",
     P_SPECIAL, "v3,vmem=256KiB"},
    {"sort_len1_and_len2",
     "HloModule m\n" CMP_LT("f32") "ENTRY e {\n  x = f32[4,1] parameter(0)\n"
     "  y = f32[3,2] parameter(1)\n"
     "  a = f32[4,1] sort(x), dimensions={1}, to_apply=cmp\n"
     "  b = f32[3,2] sort(y), dimensions={1}, to_apply=cmp\n  ROOT t = (f32[4,1], f32[3,2]) tuple(a, b)\n}\n",
     P_SPECIAL, NULL},
    {"sort_in_while_body_7x5",
     /* run-time loops of the merge inside a while's trip */
     "HloModule w\n"
     "cmp {\n"
     "  a = f32[] parameter(0)\n"
     "  b = f32[] parameter(1)\n"
     "  c = s32[] parameter(2)\n"
     "  d = s32[] parameter(3)\n"
     "  ROOT gt = pred[] compare(a, b), direction=GT\n"
     "}\n"
     "cond {\n"
     "  p = (s32[], f32[7,5], s32[7,5]) parameter(0)\n"
     "  i = s32[] get-tuple-element(p), index=0\n"
     "  n = s32[] constant(3)\n"
     "  ROOT lt = pred[] compare(i, n), direction=LT\n"
     "}\n"
     "body {\n"
     "  p = (s32[], f32[7,5], s32[7,5]) parameter(0)\n"
     "  i = s32[] get-tuple-element(p), index=0\n"
     "  x = f32[7,5] get-tuple-element(p), index=1\n"
     "  v = s32[7,5] get-tuple-element(p), index=2\n"
     "  one = s32[] constant(1)\n"
     "  i1 = s32[] add(i, one)\n"
     "  s = (f32[7,5], s32[7,5]) sort(x, v), dimensions={0}, to_apply=cmp\n"
     "  sx = f32[7,5] get-tuple-element(s), index=0\n"
     "  sv = s32[7,5] get-tuple-element(s), index=1\n"
     "  h = f32[] constant(0.5)\n"
     "  hb = f32[7,5] broadcast(h), dimensions={}\n"
     "  y = f32[7,5] subtract(hb, sx)\n"
     "  ROOT t = (s32[], f32[7,5], s32[7,5]) tuple(i1, y, sv)\n"
     "}\n"
     "ENTRY e {\n"
     "  x = f32[7,5] parameter(0)\n"
     "  v = s32[7,5] iota(), iota_dimension=0\n"
     "  z = s32[] constant(0)\n"
     "  t = (s32[], f32[7,5], s32[7,5]) tuple(z, x, v)\n"
     "  ROOT w = (s32[], f32[7,5], s32[7,5]) while(t), condition=cond, body=body\n"
     "}\n",
     P_WIDE, NULL},
    {"topk_largest_ties_special_3x9_k1",
     "HloModule m\nENTRY e {\n  x = f32[3,9] parameter(0)\n"
     "  ROOT t = (f32[3,1], s32[3,1]) topk(x), k=1, largest=true\n}\n",
     P_SPECIAL, NULL},
    {"topk_largest_ties_3x9_k4",
     "HloModule m\nENTRY e {\n  x = f32[3,9] parameter(0)\n"
     "  ROOT t = (f32[3,4], s32[3,4]) topk(x), k=4, largest=true\n}\n",
     P_TIES, NULL},
    {"topk_largest_special_3x9_k9",
     "HloModule m\nENTRY e {\n  x = f32[3,9] parameter(0)\n"
     "  ROOT t = (f32[3,9], s32[3,9]) topk(x), k=9\n}\n",
     P_SPECIAL, NULL},
    {"topk_smallest_special_2x3x20_k7",
     "HloModule m\nENTRY e {\n  x = f32[2,3,20] parameter(0)\n"
     "  ROOT t = (f32[2,3,7], s32[2,3,7]) topk(x), k=7, largest=false\n}\n",
     P_SPECIAL, NULL},
    {"topk_s32_ties_200_k13",
     "HloModule m\nENTRY e {\n  x = s32[200] parameter(0)\n"
     "  ROOT t = (s32[13], s32[13]) topk(x), k=13\n}\n",
     P_TIES, NULL},
    {"topk_bf16_special_4x17_k5",
     "HloModule m\nENTRY e {\n  x = bf16[4,17] parameter(0)\n"
     "  ROOT t = (bf16[4,5], s32[4,5]) topk(x), k=5\n}\n",
     P_SPECIAL, NULL},
    {"topk_custom_call_special_5x11",
     "HloModule m\nENTRY e {\n  x = f32[5,11] parameter(0)\n"
     "  ROOT t = (f32[5,3], s32[5,3]) custom-call(x), custom_call_target=\"TopK\"\n}\n",
     P_SPECIAL, NULL},
    {"topk_custom_call_comparator_special_5x11",
     "HloModule m\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
     "  ROOT gt = pred[] compare(a, b), direction=GT\n}\n"
     "ENTRY e {\n  x = f32[5,11] parameter(0)\n"
     "  ROOT t = (f32[5,3], s32[5,3]) custom-call(x), custom_call_target=\"TopK\", "
     "to_apply=cmp\n}\n",
     P_SPECIAL, NULL},
};

static const char *const targets[] = {"v3", "v2", "v3,mxu=64x64,vmem=8MiB"};

/* One case on one target: 0 on a bitwise match with the evaluator. */
static int run_case(const scase *c, ir_module *m, const char *target, uint64_t seed) {
  arena *a = arena_create();
  const ir_comp *e = &m->comps.v[m->entry];
  ir_literal **args = arena_array(a, (size_t)e->nparams + 1, sizeof(ir_literal *));
  uint64_t s = seed;
  for (int p = 0; p < e->nparams; p++) {
    args[p] = ir_literal_create(a, e->insts.v[e->params[p]].shape);
    /* keys from the case's pool, further operands distinct */
    fill(args[p], p == 0 || c->p != P_TIES ? c->p : P_WIDE, &s);
  }
  ir_literal *ref = NULL, *got = NULL;
  char err[4096];
  int rc = 1;
  tpu_run_report r = {0};
  r.target = target;
  if (ir_eval(m, NULL, args, e->nparams, a, &ref, err, sizeof err) != ST_OK)
    printf("FAIL %s: the evaluator: %s\n", c->name, err);
  else if (tpu_run_report_exec(m, &r, args, e->nparams, a, &got, err, sizeof err) != ST_OK)
    printf("FAIL %s@%s: %s\n", c->name, target, err);
  else if (!same_bits(got, ref))
    printf("FAIL %s@%s: results differ from the evaluator's bits\n", c->name, target);
  else {
    printf("PASS %s@%s\n", c->name, target);
    rc = 0;
  }
  arena_destroy(a);
  return rc;
}

/* Located compile errors: text, where, what the message says. */
static int check_errors(void) {
  static const struct {
    const char *text, *target, *at, *what;
  } u[] = {
      {"HloModule m\ncmp {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
       "  ta = f32[] tan(a)\n  tb = f32[] tan(b)\n"
       "  ROOT lt = pred[] compare(ta, tb), direction=LT\n}\n"
       "ENTRY e {\n  x = f32[8] parameter(0)\n"
       "  ROOT s = f32[8] sort(x), dimensions={0}, to_apply=cmp\n}\n",
       "v3", "sort_errors.hlo:5:", "error: tpu: sort: comparator op tan: no vector-unit sequence"},
      {"HloModule m\n" CMP_LT("f32") "ENTRY e {\n  x = f32[2,40000] parameter(0)\n"
       "  ROOT s = f32[2,40000] sort(x), dimensions={1}, to_apply=cmp\n}\n",
       "v3,vmem=256KiB", "sort_errors.hlo:9:8:", "tpu: sort: a row of 40000 elements of 1 operand(s) does not fit VMEM"},
      {"HloModule m\n" CMP_LT("f64") "ENTRY e {\n  x = f64[8] parameter(0)\n"
       "  ROOT s = f64[8] sort(x), dimensions={0}, to_apply=cmp\n}\n",
       "v3", "sort_errors.hlo:9:8:", "error: f64 is not supported on the TPU: 's' (sort)"},
      {"HloModule m\nENTRY e {\n  x = s64[3,8] parameter(0)\n"
       "  ROOT t = (s64[3,2], s32[3,2]) topk(x), k=2\n}\n",
       "v3", "sort_errors.hlo:4:8:", "error: s64 is not supported on the TPU: 't' (topk)"},
  };
  int fails = 0;
  for (size_t k = 0; k < COUNTOF(u); k++) {
    ir_module *m = tc_parse("sort_errors.hlo", u[k].text);
    diag *d = diag_create();
    tpub_image *img = NULL;
    tpu_options o;
    tpu_options_init(&o);
    o.target = u[k].target;
    base_status st = tpu_compile(m, &o, d, &img, NULL);
    const char *t = diag_text(d);
    int bad = st == ST_OK || img || !strstr(t, u[k].at) || !strstr(t, u[k].what);
    if (bad) printf("FAIL sort_error %zu: status %d, diagnostics:\n%s\n", k, (int)st, t);
    else printf("PASS sort_error %zu: %s", k, t);
    fails += bad;
    diag_destroy(d);
    tpub_free(img);
    ir_module_destroy(m);
  }
  return fails;
}

int main(int argc, char **argv) {
  const char *only = argc > 1 && !strncmp(argv[1], "--only=", 7) ? argv[1] + 7 : NULL;
  int fail = 0;
  for (size_t i = 0; i < COUNTOF(cases); i++) {
    if (only && !strstr(cases[i].name, only)) continue;
    ir_module *m = tc_parse(cases[i].name, cases[i].text);
    for (size_t t = 0; t < COUNTOF(targets); t++) {
      const char *tg = cases[i].only ? cases[i].only : targets[t];
      fail += run_case(&cases[i], m, tg, 77 + i);
      if (cases[i].only) break;
    }
    ir_module_destroy(m);
  }
  if (!only) fail += check_errors();
  printf("%d failure(s)\n", fail);
  return fail != 0;
}
