/* test_ici_links.c: the interconnect's per-link figures through the public
 * API (tpurt_device_link_count, tpurt_device_link_stats) and the link rows
 * of a device's trace, on the hand-derived ring of tests/runtime/ici_ring.h
 * (core c puts 4096 bytes into core c + 1 mod 8 on a
 * `v3-8,clock=1GHz,ici_bw=64GB/s,ici_latency=100`).
 *
 * The derivation (tests/runtime/test_ici.c has the cycles): a v3-8 is 4
 * chips of 2 cores on a 2x2 torus, 6 links per chip (x+, x-, y+, y-, then
 * the on-chip link of each core), 24 in all. Every transfer holds each
 * link of its route for 4096 / 64 = 64 cycles from its start, 6 (the
 * dmaput's issue; core 7 issues at 7). Routes: 0->1, 2->3, 4->5, 6->7 on
 * their chip's on-chip link of the sender (ids 4, 10, 16, 22); 1->2 chip 0
 * x+ (0); 5->6 chip 2 x+ (12); 3->4 chip 1 x+ then chip 0 y+ (6, 2); 7->0
 * chip 3 x+ then chip 2 y+ (18, 14). So ten links carry one transfer of
 * 4096 bytes and 64 busy cycles each, the other fourteen nothing, and the
 * trace has ten link spans of 64 cycles, 640 in all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tpurt.h"

#define TARGET "v3-8,clock=1GHz,ici_bw=64GB/s,ici_latency=100"
#include "tests/runtime/ici_ring.h"

enum { NC = 8, NLINKS = 24 };

/* The used links (id, name, to_chip, core, start of the span). */
static const struct {
  int id;
  const char *name, *dir;
  int chip, to_chip, core, start, src, dst;
} used[] = {
    {0, "chip0(0,0) x+", "x+", 0, 1, -1, 6, 1, 2},
    {2, "chip0(0,0) y+", "y+", 0, 2, -1, 6, 3, 4},
    {4, "chip0 core0 on-chip", "on-chip", 0, 0, 0, 6, 0, 1},
    {6, "chip1(1,0) x+", "x+", 1, 0, -1, 6, 3, 4},
    {10, "chip1 core2 on-chip", "on-chip", 1, 1, 2, 6, 2, 3},
    {12, "chip2(0,1) x+", "x+", 2, 3, -1, 6, 5, 6},
    {14, "chip2(0,1) y+", "y+", 2, 0, -1, 7, 7, 0},
    {16, "chip2 core4 on-chip", "on-chip", 2, 2, 4, 6, 4, 5},
    {18, "chip3(1,1) x+", "x+", 3, 2, -1, 7, 7, 0},
    {22, "chip3 core6 on-chip", "on-chip", 3, 3, 6, 6, 6, 7},
};
enum { NUSED = sizeof used / sizeof used[0] };

static int used_index(int id) {
  for (int i = 0; i < NUSED; i++)
    if (used[i].id == id) return i;
  return -1;
}

/* A device of TARGET (tracing to trace when not NULL) with the ring. */
static void open_ring(const char *trace, tpurt_device_t **d, tpurt_program_t **p) {
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = TARGET;
  o.trace_path = trace;
  assert_int_equal(tpurt_device_create(&o, d), TPURT_OK);
  assert_int_equal(tpurt_program_assemble(*d, ring_src, strlen(ring_src), "ring.s", p), TPURT_OK);
}

/* Runs the ring on every core (replicated) or on core 0 alone. */
static void run_ring(tpurt_device_t *d, tpurt_program_t *p, int replicated) {
  static float x[NC][1024];
  tpurt_buffer_t *in[NC], *out[NC];
  int64_t dims[1] = {1024};
  for (int c = 0; c < NC; c++)
    assert_int_equal(tpurt_buffer_create(d, TPURT_F32, 1, dims, x[c], sizeof x[c], &in[c]),
                     TPURT_OK);
  if (replicated) {
    assert_int_equal(tpurt_program_execute_replicas(p, NC, in, 1, out, 1, NULL), TPURT_OK);
    for (int c = 0; c < NC; c++) tpurt_buffer_destroy(out[c]);
  }
  for (int c = 0; c < NC; c++) tpurt_buffer_destroy(in[c]);
}

static void assert_ring_links(tpurt_device_t *d) {
  assert_int_equal(tpurt_device_link_count(d), NLINKS);
  for (int k = 0; k < NLINKS; k++) {
    tpurt_link_stats_t l;
    assert_int_equal(tpurt_device_link_stats(d, (size_t)k, &l), TPURT_OK);
    int i = used_index(k);
    assert_int_equal(l.chip, k / 6);
    if (i < 0) {
      assert_int_equal(l.transfers, 0);
      assert_int_equal(l.bytes, 0);
      assert_int_equal(l.busy_cycles, 0);
      continue;
    }
    assert_string_equal(l.name, used[i].name);
    assert_string_equal(l.direction, used[i].dir);
    assert_int_equal(l.chip, used[i].chip);
    assert_int_equal(l.to_chip, used[i].to_chip);
    assert_int_equal(l.core, used[i].core);
    assert_int_equal(l.transfers, 1);
    assert_int_equal(l.bytes, 4096);
    assert_int_equal(l.busy_cycles, 64);
  }
}

static void links_of_the_ring(void **state) {
  (void)state;
  tpurt_device_t *d = NULL;
  tpurt_program_t *p = NULL;
  open_ring(NULL, &d, &p);
  /* before any execution: the links, all zero */
  tpurt_link_stats_t l;
  assert_int_equal(tpurt_device_link_count(d), NLINKS);
  assert_int_equal(tpurt_device_link_stats(d, 5, &l), TPURT_OK);
  assert_int_equal(l.transfers, 0);
  run_ring(d, p, 1);
  assert_ring_links(d);
  /* the last execution's figures, not a sum over executions */
  run_ring(d, p, 1);
  assert_ring_links(d);
  assert_int_equal(tpurt_device_link_stats(d, NLINKS, &l), TPURT_INVALID_ARGUMENT);
  assert_string_equal(tpurt_device_message(d), "link 24 of a device with 24 links");
  assert_int_equal(l.transfers, 0);
  tpurt_program_destroy(p);
  tpurt_device_destroy(d);
  /* a single-core device: no links */
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = "v3";
  assert_int_equal(tpurt_device_create(&o, &d), TPURT_OK);
  assert_int_equal(tpurt_device_link_count(d), 0);
  assert_int_equal(tpurt_device_link_stats(d, 0, &l), TPURT_INVALID_ARGUMENT);
  tpurt_device_destroy(d);
  assert_int_equal(tpurt_device_link_count(NULL), 0);
}

/* An execution on core 0 alone uses no interconnect: the counters of the
 * ring's run give way to zeros. */
static const char *alone_src = ".target " TARGET "\n"
                               ".hbm 8192\n"
                               ".param x f32[1024] @0\n"
                               ".result y f32[1024] @4096\n"
                               "  halt\n";

static void single_core_run_zeroes_links(void **state) {
  (void)state;
  tpurt_device_t *d = NULL;
  tpurt_program_t *p = NULL, *q = NULL;
  open_ring(NULL, &d, &p);
  run_ring(d, p, 1);
  assert_int_equal(tpurt_program_assemble(d, alone_src, strlen(alone_src), "alone.s", &q),
                   TPURT_OK);
  static float x[1024];
  int64_t dims[1] = {1024};
  tpurt_buffer_t *in = NULL, *out = NULL;
  assert_int_equal(tpurt_buffer_create(d, TPURT_F32, 1, dims, x, sizeof x, &in), TPURT_OK);
  assert_int_equal(tpurt_program_execute(q, &in, 1, &out, 1, NULL), TPURT_OK);
  for (int k = 0; k < NLINKS; k++) {
    tpurt_link_stats_t l;
    assert_int_equal(tpurt_device_link_stats(d, (size_t)k, &l), TPURT_OK);
    assert_int_equal(l.transfers + l.bytes + l.busy_cycles, 0);
  }
  tpurt_buffer_destroy(out);
  tpurt_buffer_destroy(in);
  tpurt_program_destroy(q);
  tpurt_program_destroy(p);
  tpurt_device_destroy(d);
}

/* The trace: a process row per core ("core c", pid c + 1), and pid 9,
 * "ICI links", with a named thread per used link and one span per
 * transfer and link. */
static void trace_has_link_tracks(void **state) {
  (void)state;
  char path[64];
  snprintf(path, sizeof path, "/tmp/tpucc_links_%d.json", (int)getpid());
  tpurt_device_t *d = NULL;
  tpurt_program_t *p = NULL;
  open_ring(path, &d, &p);
  run_ring(d, p, 1);
  tpurt_program_destroy(p);
  tpurt_device_destroy(d);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  int spans = 0, names = 0, procs = 0;
  unsigned long long busy = 0;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strstr(line, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":8,\"args\":{\"name\":\"core 7\"}}") ||
        strstr(line, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":9,\"args\":{\"name\":\"ICI links\"}}"))
      procs++;
    if (!strstr(line, "\"pid\":9,") || strstr(line, "process_name")) continue;
    int tid = -1;
    const char *t = strstr(line, "\"tid\":");
    if (t) tid = atoi(t + 6);
    int i = used_index(tid);
    assert_true(i >= 0);
    if (strstr(line, "\"thread_name\"")) {
      char want[128];
      snprintf(want, sizeof want, "\"args\":{\"name\":\"%s\"}}", used[i].name);
      assert_non_null(strstr(line, want));
      names++;
    } else {
      char want[200];
      snprintf(want, sizeof want,
               "{\"name\":\"core %d -> core %d\",\"ph\":\"X\",\"pid\":9,\"tid\":%d,\"ts\":%d,"
               "\"dur\":64,\"args\":{\"bytes\":4096}}",
               used[i].src, used[i].dst, used[i].id, used[i].start);
      assert_non_null(strstr(line, want));
      busy += strtoull(strstr(line, "\"dur\":") + 6, NULL, 10);
      spans++;
    }
  }
  fclose(f);
  remove(path);
  assert_int_equal(procs, 2);
  assert_int_equal(names, NUSED);
  assert_int_equal(spans, NUSED);
  assert_int_equal(busy, 640);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(links_of_the_ring),
      cmocka_unit_test(single_core_run_zeroes_links),
      cmocka_unit_test(trace_has_link_tracks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
