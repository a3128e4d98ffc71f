/* test_cpu_mxu.c: `--cpu-numerics=tpu` against the emulator's MXU
 * arithmetic itself (runtime/emu/mxu.h, emu_mxu_matmul_bf16), bit for bit:
 * dot(bf16[M,K], bf16[K,N]) -> f32 on the CPU JIT under TPU numerics must
 * equal acc = 0; acc += lhs x w on the MXU contract, including bf16
 * subnormal inputs (read as zero), infinities, NaN (canonical 0x7FC00000
 * results), f32 underflow, and both the tiled kernel (large) and the row
 * kernel (small). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>

#include "mxu.h"
#include "tests/llvm/cpu_check.h"

static uint64_t rs = 12345;
static uint64_t rnd(void) {
  rs += 0x9e3779b97f4a7c15ull;
  uint64_t z = rs;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* bf16 bits: mostly moderate normals, some subnormals, zeros, inf, NaN and
 * tiny values whose products underflow f32. */
static uint16_t rand_bf16(bool specials) {
  uint64_t r = rnd();
  uint16_t sign = (uint16_t)((r & 1) << 15), mant = (uint16_t)((r >> 1) & 0x7f);
  int k = (int)((r >> 8) % 100);
  if (specials) {
    if (k == 0) return (uint16_t)(sign | mant | 1);            /* subnormal */
    if (k == 1) return sign;                                   /* zero */
    if (k == 2) return (uint16_t)(sign | 0x7f80);              /* inf */
    if (k == 3) return (uint16_t)(0x7fc0 | mant);              /* NaN */
    if (k == 4) return (uint16_t)(sign | (3 << 7) | mant);     /* tiny: 2^-124 */
  }
  int e = 127 - 6 + (int)((r >> 16) % 12);                      /* 2^-6 .. 2^5 */
  return (uint16_t)(sign | (e << 7) | mant);
}

static void check(int64_t M, int64_t K, int64_t N, bool specials, int threads) {
  tmod t = tm_new("mxu");
  ir_attrs a;
  memset(&a, 0, sizeof a);
  int64_t one = 1, zero = 0;
  a.lhs_contracting = tm_ints(t.m->arena, 1, &one);
  a.rhs_contracting = tm_ints(t.m->arena, 1, &zero);
  a.preferred_type = IR_F32;
  ir_id l = tm_param(&t, 0, IR_BF16, 2, (int64_t[]){M, K}), r = tm_param(&t, 1, IR_BF16, 2, (int64_t[]){K, N});
  tm_finish(&t, tm_op(&t, IR_OP_DOT, (ir_id[]){l, r}, 2, &a));
  arena *ar = arena_create();
  ir_literal *args[2];
  for (int i = 0; i < 2; i++) {
    args[i] = ir_literal_create(ar,
                                ir_inst_get(t.m, t.c, i == 0 ? l : r)->shape);
    uint16_t *d = args[i]->data;
    for (int64_t j = 0; j < ir_shape_count(&args[i]->shape); j++) d[j] = rand_bf16(specials);
  }
  float *acc = calloc((size_t)(M * N > 0 ? M * N : 1), sizeof(float));
  assert_non_null(acc);
  emu_mxu_matmul_bf16(args[0]->data, args[1]->data, acc, (int)M, (int)K, (int)N, (int)K, (int)N, (int)N);
  cpu_options o;
  cpu_options_init(&o);
  o.numerics = CPU_NUMERICS_TPU;
  o.threads = threads;
  cpu_exe *x = NULL;
  char err[256];
  ir_literal *got = NULL;
  assert_int_equal(cpu_compile(t.m, &o, &x, err, sizeof err), ST_OK);
  assert_int_equal(cpu_execute(x, args, 2, ar, &got, err, sizeof err), ST_OK);
  int bad = 0;
  for (int64_t i = 0; i < M * N && bad < 5; i++) {
    uint32_t u, v;
    memcpy(&u, &acc[i], 4);
    memcpy(&v, (const float *)got->data + i, 4);
    if (u != v) {
      fprintf(stderr, "mxu %lldx%lldx%lld: element %lld: MXU %08x (%g), CPU %08x (%g)\n", (long long)M,
              (long long)K, (long long)N, (long long)i, u, acc[i], v, ((const float *)got->data)[i]);
      bad++;
    }
  }
  assert_int_equal(bad, 0);
  cpu_exe_destroy(x);
  free(acc);
  arena_destroy(ar);
  ir_module_destroy(t.m);
}

static void tpu_numerics_equal_mxu(void **state) {
  (void)state;
  check(5, 7, 3, true, 1);        /* row kernel */
  check(37, 300, 45, false, 2);   /* tiled, padded edges */
  check(37, 300, 45, true, 2);    /* tiled, with specials */
  check(130, 600, 70, true, 2);   /* three K blocks */
  check(4, 0, 6, false, 1);       /* empty contraction: zeros */
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(tpu_numerics_equal_mxu)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
