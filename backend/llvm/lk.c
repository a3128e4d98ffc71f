/* lk.c: choosing a library GEMM variant (lk.h) and its geometry. */
#include "backend/llvm/lk.h"

#include <string.h>

bool cpu_lk_runs_avx512(void);
bool cpu_lk_runs_avx2(void);
bool cpu_lk_runs_portable(void);

/* Each variant's check of this CPU (cpuid, with the OS's saving of the
 * vector state, through the compiler's builtin); compiled for the baseline. */
bool cpu_lk_runs_avx512(void) {
#if defined(TPUCC_LK_X86)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

bool cpu_lk_runs_avx2(void) {
#if defined(TPUCC_LK_X86)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

bool cpu_lk_runs_portable(void) { return true; }

const lk_variant *const cpu_lk_variants[] = {
#if defined(TPUCC_LK_X86)
    &cpu_lk_avx512, &cpu_lk_avx2,
#endif
    &cpu_lk_portable, NULL};

const lk_variant *cpu_lk_find(const char *name) {
  for (int i = 0; cpu_lk_variants[i]; i++) {
    const lk_variant *v = cpu_lk_variants[i];
    if ((!name || !strcmp(name, v->name)) && v->runs()) return v;
  }
  return NULL;
}

/* gemm.c's choice (plan_geom), so a library GEMM and an emitted one of the
 * same ISA tile alike: 2 vectors of columns per panel, 1 when N fits one;
 * 16 lanes: 12 rows unless that pads more than 1% of M, then 8 (and 8
 * with one vector); 8 lanes: 6 rows with two vectors, 8 with one. K: the
 * fewest equal blocks of at most 384. */
void cpu_lk_plan(const lk_variant *v, int64_t M, int64_t N, int64_t K, lk_geom *g) {
  g->VL = v->VL;
  g->NV = N <= g->VL ? 1 : 2;
  if (g->VL == 16)
    g->MR = g->NV == 2 && (M + 11) / 12 * 12 * 100 <= M * 101 ? 12 : 8;
  else
    g->MR = g->NV == 2 ? 6 : 8;
  g->NR = g->NV * g->VL;
  g->M = M, g->N = N, g->K = K;
  g->Mt = (M + g->MR - 1) / g->MR;
  g->Nt = (N + g->NR - 1) / g->NR;
  g->nkb = K > 0 ? (K + 383) / 384 : 1;
  g->KC = K > 0 ? (K + g->nkb - 1) / g->nkb : 1;
}
