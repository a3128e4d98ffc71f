/* test_tpu_coll_seq.c: sequences of collectives in one module on the
 * emulated v3-8 (2, 4 or 8 cores, one replica each), against the
 * evaluator's replicated run (ir_eval_replicated), bit for bit. What it
 * checks is that the collectives of one program never take each other's
 * signals (docs/tpu-backend.md, "Collectives", the synchronisation
 * contract): all-reduces over different groups one after the other
 * (listed groups, then every replica, then listed again), the
 * one-program ring next to code specialised per core, reduce-scatter and
 * all-gather, the moves (collective-permute, all-to-all,
 * collective-broadcast), the -start/-done forms, each on the ring and with
 * the parameter server,
 * with and without a data dependence between consecutive collectives.
 * Cores are put out of step on purpose: before a collective, a while loop
 * whose trip count is a per-replica input (one replica may loop hundreds
 * of times, the others not at all) holds some cores back while the others
 * run ahead into later collectives. Sums of small integers are exact in
 * any order, so every bit is decided by which values meet, not by the
 * fold order (test_tpu_coll checks that).
 *
 * Fixed cases first (each names the sequence it covers), then random
 * sequences (seeded; a failure prints its seed and module).
 *
 *   test_tpu_coll_seq [TRIALS [SEED]]   random sequences (default 24) */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/tpu/tpu.h"
#include "tests/common/testgen.h"
#include "tests/tpu/tpu_check.h"

enum { MAXK = 6, MAXN = 8 };

static int failures;

/* The kinds of collective a sequence is made of; each maps f32[C] to
 * f32[C] (reduce-scatter is followed by an all-gather back). */
typedef enum kind {
  K_AR_ALL,    /* all-reduce over every replica in order */
  K_AR_GROUPS, /* all-reduce over listed groups (the group text) */
  K_RS_AG,     /* reduce-scatter then all-gather, every replica in order */
  K_PERMUTE,   /* collective-permute over the pairs (the group text) */
  K_A2A,       /* all-to-all over listed groups, dimensions={0} */
  K_BCAST,     /* collective-broadcast over listed groups */
  K_AR_START,  /* all-reduce-start and -done over listed groups */
  K_CP_START,  /* collective-permute-start and -done over the pairs */
  NKINDS
} kind;

/* A sequence: n replicas, values of f32[c]; collective k of kind[k] over
 * groups[k] reads the previous one's result (dep[k]) or the parameter,
 * after a loop of lim[r][k] trips on replica r. */
typedef struct plan {
  const char *name;
  int n, c, k;
  bool ps;
  kind kinds[MAXK];
  const char *groups[MAXK];
  bool dep[MAXK];
  int lim[MAXN][MAXK];
} plan;

/* Collective k of p on operand `in`, named rK (and its half sK). */
static void collective(strbuf *t, const plan *p, int k, const char *in) {
  int c = p->c, n = p->n;
  switch (p->kinds[k]) {
  case K_AR_ALL:
    sb_printf(t, "  r%d = f32[%d] all-reduce(%s), replica_groups={}, to_apply=sum\n", k, c, in);
    break;
  case K_AR_GROUPS:
    sb_printf(t, "  r%d = f32[%d] all-reduce(%s), replica_groups=%s, to_apply=sum\n", k, c, in,
        p->groups[k]);
    break;
  case K_RS_AG:
    sb_printf(t, "  s%d = f32[%d] reduce-scatter(%s), replica_groups={}, dimensions={0}, to_apply=sum\n",
        k, c / n, in);
    sb_printf(t, "  r%d = f32[%d] all-gather(s%d), replica_groups={}, dimensions={0}\n", k, c, k);
    break;
  case K_PERMUTE:
    sb_printf(t, "  r%d = f32[%d] collective-permute(%s), source_target_pairs=%s\n", k, c, in,
        p->groups[k]);
    break;
  case K_A2A:
    sb_printf(t, "  r%d = f32[%d] all-to-all(%s), replica_groups=%s, dimensions={0}\n", k, c, in,
        p->groups[k]);
    break;
  case K_BCAST:
    sb_printf(t, "  r%d = f32[%d] collective-broadcast(%s), replica_groups=%s\n", k, c, in, p->groups[k]);
    break;
  case K_AR_START:
    sb_printf(t, "  q%d = f32[%d] all-reduce-start(%s), replica_groups=%s, to_apply=sum\n"
                 "  r%d = f32[%d] all-reduce-done(q%d)\n", k, c, in, p->groups[k], k, c, k);
    break;
  case K_CP_START:
    sb_printf(t, "  q%d = (f32[%d], f32[%d], u32[], u32[]) collective-permute-start(%s), "
                 "source_target_pairs=%s\n  r%d = f32[%d] collective-permute-done(q%d)\n",
              k, c, c, in, p->groups[k], k, c, k);
    break;
  default:
    break;
  }
}

/* The module of p: parameters f32[c] and s32[k] (the trip counts); the
 * result the tuple of every collective's result. */
static void module_of(const plan *p, strbuf *t) {
  int c = p->c;
  sb_printf(t, "HloModule seq, replica_count=%d\n", p->n);
  sb_printf(t, "sum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] add(a, b)\n}\n");
  sb_printf(t, "cond {\n  s = (s32[], s32[], f32[%d]) parameter(0)\n  i = s32[] get-tuple-element(s), "
         "index=0\n  l = s32[] get-tuple-element(s), index=1\n  ROOT lt = pred[] compare(i, l), "
         "direction=LT\n}\n", c);
  sb_printf(t, "body {\n  s = (s32[], s32[], f32[%d]) parameter(0)\n  i = s32[] get-tuple-element(s), "
         "index=0\n  l = s32[] get-tuple-element(s), index=1\n  x = f32[%d] get-tuple-element(s), "
         "index=2\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n  y = f32[%d] negate(x)\n"
         "  ROOT t = (s32[], s32[], f32[%d]) tuple(j, l, y)\n}\n", c, c, c, c);
  sb_printf(t, "ENTRY e {\n  p = f32[%d] parameter(0)\n  lim = s32[%d] parameter(1)\n"
         "  z = s32[] constant(0)\n  v = f32[%d] negate(p)\n", c, p->k, c);
  char cur[16] = "v";
  for (int k = 0; k < p->k; k++) {
    const char *x = p->dep[k] ? cur : "v";
    sb_printf(t, "  l%d = s32[1] slice(lim), slice={[%d:%d]}\n  m%d = s32[] reshape(l%d)\n"
           "  i%d = (s32[], s32[], f32[%d]) tuple(z, m%d, %s)\n"
           "  w%d = (s32[], s32[], f32[%d]) while(i%d), condition=cond, body=body\n"
           "  x%d = f32[%d] get-tuple-element(w%d), index=2\n",
        k, k, k + 1, k, k, k, c, k, x, k, c, k, k, c, k);
    char in[16];
    snprintf(in, sizeof in, "x%d", k);
    collective(t, p, k, in);
    snprintf(cur, sizeof cur, "r%d", k);
  }
  sb_printf(t, "  ROOT t = (");
  for (int k = 0; k < p->k; k++) sb_printf(t, "%sf32[%d]", k ? ", " : "", c);
  sb_printf(t, ") tuple(");
  for (int k = 0; k < p->k; k++) sb_printf(t, "%sr%d", k ? ", " : "", k);
  sb_printf(t, ")\n}\n");
}

static void fail(const plan *p, uint64_t seed, const char *src, const char *fmt, ...)
    BASE_PRINTF(4, 5);
static void fail(const plan *p, uint64_t seed, const char *src, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL %s (seed %llu, %d cores, %s): ", p->name, (unsigned long long)seed, p->n,
          p->ps ? "parameter server" : "ring");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n%s", src);
  failures++;
}

/* Whether two results hold the same bits: the first difference into why. */
static bool same_tuple(const ir_literal *a, const ir_literal *b, char *why, size_t n) {
  for (int k = 0; k < a->shape.ntuple; k++) {
    const ir_literal *x = a->elems[k], *y = b->elems[k];
    if (x->nbytes != y->nbytes) {
      snprintf(why, n, "element %d: sizes differ", k);
      return false;
    }
    for (size_t i = 0; i < x->nbytes / 4; i++)
      if (memcmp((const char *)x->data + 4 * i, (const char *)y->data + 4 * i, 4)) {
        snprintf(why, n, "collective %d, element %zu: %g, want %g", k, i,
                 ir_literal_get_f64(y, (int64_t)i), ir_literal_get_f64(x, (int64_t)i));
        return false;
      }
  }
  return true;
}

/* p on the evaluator and on v3-8 with p->n cores, bit for bit. */
static void run_plan(const plan *p, uint64_t seed) {
  strbuf t;
  sb_init(&t);
  module_of(p, &t);
  ir_module *m = tc_parse(p->name, sb_str(&t));
  arena *a = arena_create();
  const ir_comp *e = &m->comps.v[m->entry];
  ir_literal *const **per = arena_array(a, (size_t)p->n, sizeof *per);
  uint64_t vr = seed * 0x9E3779B97F4A7C15ull + 3;
  for (int r = 0; r < p->n; r++) {
    ir_literal **row = arena_array(a, 2, sizeof *row);
    row[0] = ir_literal_create(a, e->insts.v[e->params[0]].shape);
    row[1] = ir_literal_create(a, e->insts.v[e->params[1]].shape);
    for (int i = 0; i < p->c; i++)
      ir_literal_set_f64(row[0], i, (double)(int)(tc_splitmix(&vr) % 17) - 8.0);
    for (int k = 0; k < p->k; k++) ir_literal_set_i64(row[1], k, p->lim[r][k]);
    per[r] = row;
  }
  ir_literal **want = arena_array(a, (size_t)p->n, sizeof *want);
  ir_literal **got = arena_array(a, (size_t)p->n, sizeof *got);
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  char err[1024], target[32];
  if (ir_eval_replicated(m, &eo, p->n, per, 2, a, want, err, sizeof err) != ST_OK) {
    fail(p, seed, sb_str(&t), "evaluator: %s", err);
  } else {
    snprintf(target, sizeof target, "v3-8,ncores=%d", p->n);
    tpu_options o;
    tpu_options_init(&o);
    o.target = target;
    o.replicas = p->n;
    o.all_reduce = p->ps ? TPU_AR_PS : TPU_AR_AUTO; /* auto: the direct exchange or the ring */
    diag *d = diag_create();
    tpub_image *img = NULL;
    if (tpu_compile(m, &o, d, &img, NULL) != ST_OK) {
      fail(p, seed, sb_str(&t), "compile: %s", diag_text(d));
    } else if (tpu_execute_replicas(img, target, m, p->n, per, 2, a, got, err, sizeof err) != ST_OK) {
      fail(p, seed, sb_str(&t), "run: %s", err);
    } else {
      for (int r = 0; r < p->n; r++) {
        char why[256];
        if (!same_tuple(want[r], got[r], why, sizeof why)) {
          fail(p, seed, sb_str(&t), "replica %d differs from the evaluator: %s", r, why);
          break;
        }
      }
    }
    tpub_free(img);
    diag_destroy(d);
  }
  arena_destroy(a);
  ir_module_destroy(m);
  sb_free(&t);
}

/* ---- random sequences ------------------------------------------------ */

static uint32_t draw(uint64_t *r, uint32_t n) { return (uint32_t)(tc_splitmix(r) % n); }

/* perm[0..n) = a random permutation of 0..n-1. */
static void shuffle(uint64_t *r, int n, int *perm) {
  for (int i = 0; i < n; i++) perm[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)draw(r, (uint32_t)i + 1), x = perm[i];
    perm[i] = perm[j], perm[j] = x;
  }
}

/* Listed groups of size g (a divisor of n), members shuffled, into s. */
static void rand_groups(uint64_t *r, int n, int g, char *s, size_t len) {
  int perm[MAXN];
  shuffle(r, n, perm);
  size_t at = (size_t)snprintf(s, len, "{");
  for (int k = 0; k < n / g; k++) {
    at += (size_t)snprintf(s + at, len - at, "%s{", k ? "," : "");
    for (int j = 0; j < g; j++) at += (size_t)snprintf(s + at, len - at, "%s%d", j ? "," : "", perm[k * g + j]);
    at += (size_t)snprintf(s + at, len - at, "}");
  }
  snprintf(s + at, len - at, "}");
}

/* A random permutation's pairs, some left out, into s. */
static void rand_pairs(uint64_t *r, int n, char *s, size_t len) {
  int perm[MAXN];
  shuffle(r, n, perm);
  size_t at = (size_t)snprintf(s, len, "{");
  int w = 0;
  for (int i = 0; i < n; i++)
    if (draw(r, 4)) at += (size_t)snprintf(s + at, len - at, "%s{%d,%d}", w++ ? "," : "", i, perm[i]);
  snprintf(s + at, len - at, "}");
}

/* A random plan of seed; groups written into gbuf. */
static void random_plan(plan *p, uint64_t seed, char gbuf[][160]) {
  uint64_t r = seed * 0x2545F4914F6CDD1Dull + 11;
  static const int ns[] = {2, 4, 8};
  memset(p, 0, sizeof *p);
  p->name = "random sequence";
  p->n = ns[draw(&r, 3)];
  static const int cs[] = {3, 5, 64, 300};
  int cm = cs[draw(&r, 4)];
  p->c = cm < 8 && draw(&r, 2) ? cm : cm * p->n; /* fewer elements than replicas, or a multiple */
  p->k = 2 + (int)draw(&r, MAXK - 1);
  p->ps = draw(&r, 3) == 0;
  int slow = (int)draw(&r, (uint32_t)p->n);
  for (int k = 0; k < p->k; k++) {
    kind kd = (kind)draw(&r, NKINDS);
    if (kd == K_RS_AG && p->c % p->n) kd = K_AR_ALL;
    p->kinds[k] = kd;
    p->dep[k] = draw(&r, 3) != 0;
    int g = 1 << (1 + draw(&r, 3)); /* 2, 4 or 8, at most n */
    while (g > p->n || (kd == K_A2A && p->c % g)) g /= 2;
    if (kd == K_PERMUTE || kd == K_CP_START) rand_pairs(&r, p->n, gbuf[k], 160);
    else rand_groups(&r, p->n, g, gbuf[k], 160);
    p->groups[k] = gbuf[k];
    if (draw(&r, 2)) slow = (int)draw(&r, (uint32_t)p->n);
    for (int q = 0; q < p->n; q++) p->lim[q][k] = q == slow ? 50 + (int)draw(&r, 250) : (int)draw(&r, 3);
  }
}

/* ---- fixed sequences -------------------------------------------------- */

/* The sequences that made the readiness signals of one all-reduce meet
 * another's: listed groups, then every replica (core 2 late); every
 * replica then listed groups; groups alternating; an all-reduce next to
 * the moves; the halves between specialised all-reduces. */
static const plan fixed[] = {
    {"groups {0,2},{1,3} then all", 4, 256, 2, false, {K_AR_GROUPS, K_AR_ALL},
     {"{{0,2},{1,3}}", NULL}, {true, true}, {{0, 0}, {0, 0}, {300, 0}, {0, 0}}},
    {"groups then all, independent", 4, 256, 2, false, {K_AR_GROUPS, K_AR_ALL},
     {"{{0,2},{1,3}}", NULL}, {false, false}, {{0, 0}, {0, 0}, {300, 0}, {0, 0}}},
    {"all then groups", 4, 256, 2, false, {K_AR_ALL, K_AR_GROUPS}, {NULL, "{{0,2},{1,3}}"},
     {true, true}, {{0, 0}, {0, 200}, {0, 0}, {0, 0}}},
    {"groups alternating", 8, 512, 4, false, {K_AR_GROUPS, K_AR_GROUPS, K_AR_GROUPS, K_AR_GROUPS},
     {"{{0,1},{2,3},{4,5},{6,7}}", "{{1,2},{3,4},{5,6},{7,0}}", "{{0,4},{1,5},{2,6},{3,7}}",
      "{{0,1,2,3},{4,5,6,7}}"},
     {true, true, false, true},
     {{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {300, 0, 0, 0},
      {0, 0, 0, 0}, {0, 250, 0, 0}}},
    {"parameter server, groups then all", 4, 256, 3, true, {K_AR_GROUPS, K_AR_ALL, K_AR_GROUPS},
     {"{{1,3},{2,0}}", NULL, "{{3,2,1,0}}"}, {true, true, true},
     {{0, 0, 0}, {0, 0, 0}, {300, 0, 0}, {0, 0, 200}}},
    {"all-reduce then moves", 4, 256, 4, false, {K_AR_GROUPS, K_PERMUTE, K_AR_ALL, K_A2A},
     {"{{0,2},{1,3}}", "{{0,1},{1,2},{2,3},{3,0}}", NULL, "{{0,1},{2,3}}"}, {true, true, true, true},
     {{0, 0, 0, 0}, {0, 0, 0, 0}, {300, 0, 0, 0}, {0, 0, 100, 0}}},
    {"halves between all-reduces", 4, 256, 3, false, {K_AR_GROUPS, K_RS_AG, K_AR_GROUPS},
     {"{{0,2},{1,3}}", NULL, "{{0,1},{2,3}}"}, {true, false, true},
     {{0, 0, 0}, {0, 0, 0}, {300, 0, 0}, {0, 0, 0}}},
    {"fewer elements than replicas", 8, 5, 3, false, {K_AR_ALL, K_AR_GROUPS, K_AR_ALL},
     {NULL, "{{0,2,4,6},{1,3,5,7}}", NULL}, {true, true, true},
     {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {300, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}}},
};

int main(int argc, char **argv) {
  int trials = argc > 1 ? atoi(argv[1]) : 24;
  uint64_t seed0 = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
  int nfixed = (int)(sizeof fixed / sizeof *fixed);
  for (int i = 0; i < nfixed; i++) run_plan(&fixed[i], (uint64_t)i);
  for (int i = 0; i < trials; i++) {
    plan p;
    char gbuf[MAXK][160];
    uint64_t seed = seed0 * 1000003u + (uint64_t)i;
    random_plan(&p, seed, gbuf);
    run_plan(&p, seed);
  }
  printf("test_tpu_coll_seq: %d fixed and %d random sequences; %d failure%s\n", nfixed, trials,
         failures, failures == 1 ? "" : "s");
  return failures ? 1 : 0;
}
