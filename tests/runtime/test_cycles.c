/* test_cycles.c: golden cycle counts and runtime faults.
 *
 * Every expected count below is derived by hand in docs/isa.md ("Worked
 * timing examples") from the timing rules; if a rule changes, the
 * derivation and these numbers change together. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "rt_test.h"

static tpurt_device_t *open_dev(const char *target, uint64_t limit) {
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = target;
  o.cycle_limit = limit;
  tpurt_device_t *d = NULL;
  assert_int_equal(tpurt_device_create(&o, &d), TPURT_OK);
  return d;
}

/* Assembles and runs a program without parameters or results. */
static tpurt_status_t run_text(tpurt_device_t *d, const char *src, tpurt_stats_t *st) {
  tpurt_program_t *p = NULL;
  tpurt_status_t s = tpurt_program_assemble(d, src, strlen(src), "t.s", &p);
  if (s) {
    fprintf(stderr, "%s\n", tpurt_device_message(d));
    return s;
  }
  s = tpurt_program_execute(p, NULL, 0, NULL, 0, st);
  tpurt_program_destroy(p);
  return s;
}

static void cycles_mxu_fill_and_drain(void **state) {
  (void)state;
  tpurt_device_t *d = open_dev("v2", 0);
  tpurt_stats_t st;
  const char *src = "  sli s1, 0\n"
                    "  sli s2, 256\n"
                    "  mwt mxu0, s1, s2\n"
                    "  mswap mxu0\n"
                    "  mpush mxu0, s1, s2, s0, 8\n"
                    "  mpop mxu0, v0, s0, 0\n"
                    "  halt\n";
  assert_int_equal(run_text(d, src, &st), TPURT_OK);
  assert_int_equal(st.cycles, 396);
  assert_int_equal(st.units[2].stall_weight_load, 127);
  assert_int_equal(st.units[2].stall_dependency, 256);
  assert_int_equal(st.mxu_macs, 8 * 128 * 128);
  assert_int_equal(st.mxu_busy_cycles, 8);
  assert_int_equal(st.mxu_peak_macs, 396ull * 128 * 128);
  tpurt_device_destroy(d);
}

static void cycles_weight_load_exposed(void **state) {
  (void)state;
  tpurt_device_t *d = open_dev("v2", 0);
  tpurt_stats_t st;
  const char *src = "  sli s1, 0\n"
                    "  sli s2, 256\n"
                    "  mwt mxu0, s1, s2\n"
                    "  mswap mxu0\n"
                    "  mpush mxu0, s1, s2, s0, 128\n"
                    "  mwt mxu0, s1, s2\n"
                    "  mswap mxu0\n"
                    "  mpush mxu0, s1, s2, s0, 128\n"
                    "  halt\n";
  assert_int_equal(run_text(d, src, &st), TPURT_OK);
  assert_int_equal(st.cycles, 772);
  assert_int_equal(st.units[2].stall_weight_load, 127 + 127);
  tpurt_device_destroy(d);
}

static void cycles_weight_load_hidden(void **state) {
  (void)state;
  tpurt_device_t *d = open_dev("v2", 0);
  tpurt_stats_t st;
  const char *src = "  sli s1, 0\n"
                    "  sli s2, 256\n"
                    "  mwt mxu0, s1, s2\n"
                    "  mswap mxu0\n"
                    "  mwt mxu0, s1, s2\n"
                    "  mpush mxu0, s1, s2, s0, 128\n"
                    "  mswap mxu0\n"
                    "  mpush mxu0, s1, s2, s0, 128\n"
                    "  halt\n";
  assert_int_equal(run_text(d, src, &st), TPURT_OK);
  assert_int_equal(st.cycles, 645);
  assert_int_equal(st.units[2].stall_weight_load, 127);
  tpurt_device_destroy(d);
}

/* 8 DMAs of 64 KiB at exactly 512 bytes per cycle. */
static const char *dma_loop = ".hbm 65536\n"
                              ".smem 0 65536, 1, 1, 1, 0, 0, 0, 0, 0, 0\n"
                              "  sli s1, 8\n"
                              "  sli s2, 0\n"
                              "L: dmald dma0, s2, s2, s0, sem0\n"
                              "  loop s1, L\n"
                              "  wait scalar, sem0, 8\n"
                              "  halt\n";

static void cycles_dma_bound_loop(void **state) {
  (void)state;
  tpurt_device_t *d = open_dev("v2,clock=1GHz,hbm_bw=512GB/s,dma_latency=100", 0);
  tpurt_stats_t st;
  assert_int_equal(run_text(d, dma_loop, &st), TPURT_OK);
  assert_int_equal(st.cycles, 1128);
  assert_int_equal(st.hbm_busy_cycles, 1024);
  assert_int_equal(st.hbm_read_bytes, 8 * 65536);
  assert_int_equal(st.dma_transfers, 8);
  assert_int_equal(st.units[0].stall_dma, 1108);
  assert_int_equal(st.units[6].busy_cycles, 1024);
  tpurt_device_destroy(d);
}

/* Two queues share one HBM: alternating them does not go faster. */
static void cycles_dma_two_queues_share_bandwidth(void **state) {
  (void)state;
  tpurt_device_t *d = open_dev("v2,clock=1GHz,hbm_bw=512GB/s,dma_latency=100", 0);
  tpurt_stats_t st;
  const char *src = ".hbm 65536\n"
                    ".smem 0 65536, 1, 1, 1, 0, 0, 0, 0, 0, 0\n"
                    "  sli s1, 4\n"
                    "  sli s2, 65536\n"
                    "L: dmald dma0, s0, s0, s0, sem0\n"
                    "  dmald dma1, s2, s0, s0, sem0\n"
                    "  loop s1, L\n"
                    "  wait scalar, sem0, 8\n"
                    "  halt\n";
  assert_int_equal(run_text(d, src, &st), TPURT_OK);
  /* As for one queue: the 8 transfers hold HBM back to back from cycle 2
   * (each queue's next transfer waits for HBM, not for its own queue); the
   * last token is at 2 + 1024 + 100 = 1126, halt issues at 1127. */
  assert_int_equal(st.cycles, 1128);
  assert_int_equal(st.hbm_busy_cycles, 1024);
  assert_true(st.units[7].stall_hbm > 0);
  tpurt_device_destroy(d);
}

/* The same with both queues writing the same VMEM buffer: their writes
 * overlap in time, which the emulator refuses (docs/isa.md, section 1). */
static void fault_race_between_dma_queues(void **state) {
  (void)state;
  tpurt_device_t *d = open_dev("v2,clock=1GHz,hbm_bw=512GB/s,dma_latency=100", 0);
  tpurt_stats_t st;
  const char *src = ".hbm 65536\n"
                    ".smem 0 65536, 1, 1, 1, 0, 0, 0, 0, 0, 0\n"
                    "  sli s1, 4\n"
                    "L: dmald dma0, s0, s0, s0, sem0\n"
                    "  dmald dma1, s0, s0, s0, sem0\n"
                    "  loop s1, L\n"
                    "  wait scalar, sem0, 8\n"
                    "  halt\n";
  /* dma0 starts at 1 and writes until 1 + 128 + 100 = 229; dma1 gets HBM
   * at 129 and would write the same bytes then. */
  assert_int_equal(run_text(d, src, &st), TPURT_RUNTIME_FAULT);
  assert_non_null(strstr(tpurt_device_message(d),
                         "fault at pc 2 (dmald dma1, s0, s0, s0, sem0) at cycle 129: "
                         "VMEM bytes [0, 512) written by dma1 at cycle 129 while "
                         "dma0 still writes them until cycle 229: a semaphore is "
                         "missing"));
  /* A vector load of a DMA's destination without waiting for it. */
  const char *nowait = ".hbm 4096\n"
                       ".smem 0 4096, 1, 1, 1, 0, 0, 0, 0, 0, 0\n"
                       "  dmald dma0, s0, s0, s0, sem0\n"
                       "  sli s1, 512\n"
                       "  vld v0, s0, 0, s1\n"
                       "  wait scalar, sem0, 1\n"
                       "  halt\n";
  assert_int_equal(run_text(d, nowait, &st), TPURT_RUNTIME_FAULT);
  assert_non_null(
      strstr(tpurt_device_message(d), "read by vector at cycle 2 while dma0 still writes them"));
  /* A DMA store of what the vector unit is still storing. */
  const char *nosignal = ".hbm 4096\n"
                         ".smem 0 4096, 1, 1, 1, 0, 0, 0, 0, 0, 0\n"
                         "  sli s1, 512\n"
                         "  vimm v0, 3\n"
                         "  vexp v0, v0\n"
                         "  vst v0, s0, 0, s1, m0\n"
                         "  dmast dma0, s0, s0, s0, sem0\n"
                         "  wait scalar, sem0, 1\n"
                         "  halt\n";
  assert_int_equal(run_text(d, nosignal, &st), TPURT_RUNTIME_FAULT);
  assert_non_null(strstr(tpurt_device_message(d),
                         "VMEM bytes [0, 512) read by dma0 at cycle 4 while "
                         "vector still writes them until cycle 14"));
  /* With the wait it runs. */
  const char *withwait = ".hbm 4096\n"
                         ".smem 0 4096, 1, 1, 1, 0, 0, 0, 0, 0, 0\n"
                         "  dmald dma0, s0, s0, s0, sem0\n"
                         "  sli s1, 512\n"
                         "  wait vector, sem0, 1\n"
                         "  vld v0, s0, 0, s1\n"
                         "  halt\n";
  assert_int_equal(run_text(d, withwait, &st), TPURT_OK);
  tpurt_device_destroy(d);
}

static void cycles_vector_dependency_chain(void **state) {
  (void)state;
  tpurt_device_t *d = open_dev("v3", 0);
  tpurt_stats_t st;
  /* vimm at 0 (ready 2); vaddf issued 1 starts 2 (ready 4); vexp issued 2,
   * slot free at 3, starts 4 (ready 14); vmulf issued 3, slot free at 5,
   * starts 14 (ready 17); halt at 4: end = 17. Stalls: 1 + 1 + 9. */
  const char *src = "  vimm v1, 1.0f\n"
                    "  vaddf v2, v1, v1\n"
                    "  vexp v3, v2\n"
                    "  vmulf v4, v3, v3\n"
                    "  halt\n";
  assert_int_equal(run_text(d, src, &st), TPURT_OK);
  assert_int_equal(st.cycles, 17);
  assert_int_equal(st.units[1].stall_dependency, 11);
  assert_int_equal(st.units[1].instructions, 4);
  tpurt_device_destroy(d);
}

/* vtos: a loop whose trip count the vector unit computed. */
static void cycles_data_dependent_loop(void **state) {
  (void)state;
  tpurt_device_t *d = open_dev("v3", 0);
  tpurt_stats_t st;
  /* vimm at 0 (ready 2); vtos issued at 1 waits to 2 (stall 1), T = 3;
   * 5 iterations of saddi+loop at 3..12; halt at 13; end 14. */
  const char *src = "  vimm v1, 5\n"
                    "  vtos s1, v1, 1000\n"
                    "L: saddi s2, s2, 3\n"
                    "  loop s1, L\n"
                    "  halt\n";
  assert_int_equal(run_text(d, src, &st), TPURT_OK);
  assert_int_equal(st.cycles, 14);
  assert_int_equal(st.units[0].stall_dependency, 1);
  assert_int_equal(st.instructions, 2 + 10 + 1);
  tpurt_device_destroy(d);
}

/* Every run starts from zeroed VMEM and accumulators, however much of them
 * the previous run on the device dirtied (only the touched prefix is
 * cleared, so this guards that bookkeeping). */
static void state_is_fresh_each_run(void **state) {
  (void)state;
  tpurt_device_t *d = open_dev("v3", 0);
  tpurt_stats_t st;
  const char *dirty = "  vimm v1, 7\n"
                      "  sli s1, 4194304\n"
                      "  vst v1, s1, 0, s0, m0\n"
                      "  sli s2, 2000\n"
                      "  mpushv mxu1, v1, s2\n"
                      "  halt\n";
  assert_int_equal(run_text(d, dirty, &st), TPURT_OK);
  const char *check = ".hbm 1024\n.result y s32[256] @0\n"
                      ".smem 0 512, 1, 1, 1, 0, 0, 0, 0, 0, 0\n"
                      "  sli s1, 4194304\n"
                      "  vld v1, s1, 0, s0\n" /* VMEM written by the last run */
                      "  sli s2, 2000\n"
                      "  mpop mxu1, v2, s2, 0\n" /* accumulators of the last run */
                      "  vst v1, s0, 0, s0, m0\n"
                      "  vst v2, s0, 512, s0, m0\n"
                      "  signal vector, sem0, 1\n"
                      "  wait dma0, sem0, 1\n"
                      "  dmast dma0, s0, s0, s0, sem1\n"
                      "  sli s3, 512\n"
                      "  dmast dma0, s3, s3, s0, sem1\n"
                      "  wait scalar, sem1, 2\n"
                      "  halt\n";
  tpurt_program_t *p = NULL;
  assert_int_equal(tpurt_program_assemble(d, check, strlen(check), "c.s", &p), TPURT_OK);
  tpurt_buffer_t *out;
  assert_int_equal(tpurt_program_execute(p, NULL, 0, &out, 1, &st), TPURT_OK);
  int32_t y[256];
  assert_int_equal(tpurt_buffer_read(out, y, sizeof y), TPURT_OK);
  for (int i = 0; i < 256; i++)
    assert_int_equal(y[i], 0);
  tpurt_buffer_destroy(out);
  tpurt_program_destroy(p);
  tpurt_device_destroy(d);
}

static void fault_runaway_loop_stops_at_cycle_limit(void **state) {
  (void)state;
  tpurt_device_t *d = open_dev("v3", 100000);
  tpurt_stats_t st;
  assert_int_equal(run_text(d, "top: saddi s1, s1, 1\n  jmp top\n", &st), TPURT_RESOURCE_EXHAUSTED);
  const char *msg = tpurt_device_message(d);
  assert_non_null(strstr(msg, "cycle limit of 100000 reached"));
  assert_non_null(strstr(msg, "fault at pc 0 (saddi s1, s1, 1)"));
  assert_int_equal(st.cycles, 100000);
  tpurt_device_destroy(d);
}

static void fault_out_of_range_and_misuse(void **state) {
  (void)state;
  tpurt_device_t *d = open_dev("v3", 0);
  tpurt_stats_t st;
  assert_int_equal(run_text(d, "  sli s1, 16777216\n  vld v0, s1, 0, s0\n  halt\n", &st),
                   TPURT_RUNTIME_FAULT);
  assert_non_null(strstr(tpurt_device_message(d),
                         "fault at pc 1 (vld v0, s1, 0, s0) at cycle 1: vld VMEM range "
                         "[16777216, 16777728) is outside [0, 16777216)"));
  assert_int_equal(run_text(d, "  sli s1, 2\n  vld v0, s1, 0, s0\n  halt\n", &st),
                   TPURT_RUNTIME_FAULT);
  assert_non_null(strstr(tpurt_device_message(d), "not 4-aligned"));
  assert_int_equal(run_text(d, "  wait vector, sem3, 2\n  halt\n", &st), TPURT_RUNTIME_FAULT);
  assert_non_null(strstr(tpurt_device_message(d), "can never complete"));
  assert_int_equal(run_text(d, "  sli s1, -4\n  sld s2, s1, 0\n  halt\n", &st),
                   TPURT_RUNTIME_FAULT);
  assert_non_null(strstr(tpurt_device_message(d), "SMEM word"));
  /* A DMA past the program's HBM. */
  assert_int_equal(run_text(d,
                            ".hbm 4096\n.smem 0 4096, 1, 1, 1, 0, 0, 0, 0, 0, 0\n"
                            "  sli s1, 8\n  dmald dma0, s0, s1, s0, sem0\n  halt\n",
                            &st),
                   TPURT_RUNTIME_FAULT);
  assert_non_null(
      strstr(tpurt_device_message(d), "dmald HBM source [8, 4104) is outside [0, 4096)"));
  /* A descriptor with a zero count. */
  assert_int_equal(run_text(d,
                            ".hbm 4096\n.smem 0 4096, 0, 1, 1, 0, 0, 0, 0, 0, 0\n"
                            "  dmald dma0, s0, s0, s0, sem0\n  halt\n",
                            &st),
                   TPURT_RUNTIME_FAULT);
  assert_non_null(strstr(tpurt_device_message(d), "zero or huge size"));
  /* Transfers whose host work would not be proportional to real data. */
  assert_int_equal(run_text(d, ".hbm 4096\n.smem 0 1, 65536, 512, 1, 0, 0, 0, 0, 0, 0\n"
                               "  dmald dma0, s0, s0, s0, sem0\n  halt\n", &st),
                   TPURT_RUNTIME_FAULT);
  assert_non_null(strstr(tpurt_device_message(d), "33554432 runs exceed 16777216"));
  assert_int_equal(run_text(d, ".hbm 4096\n.smem 0 4096, 8192, 1, 1, 0, 0, 0, 0, 0, 0\n"
                               "  dmald dma0, s0, s0, s0, sem0\n  halt\n", &st),
                   TPURT_RUNTIME_FAULT);
  assert_non_null(strstr(tpurt_device_message(d),
                         "33554432 bytes exceed the 16777216 bytes of its destination"));
  /* Accumulator rows past the end. */
  assert_int_equal(run_text(d, "  sli s1, 2044\n  mpop mxu0, v1, s1, 0\n  halt\n", &st),
                   TPURT_RUNTIME_FAULT);
  assert_non_null(strstr(tpurt_device_message(d), "accumulator rows [2044, 2052)"));
  /* Semaphore overflow. */
  assert_int_equal(
      run_text(d, "  sli s1, 70000\nL: signal vector, sem1, 1\n  loop s1, L\n  halt\n", &st),
      TPURT_RUNTIME_FAULT);
  assert_non_null(strstr(tpurt_device_message(d), "semaphore 1 overflows"));
  /* The device still works after faults. */
  assert_int_equal(run_text(d, "  sli s1, 1\n  halt\n", &st), TPURT_OK);
  assert_int_equal(st.cycles, 2);
  tpurt_device_destroy(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(cycles_mxu_fill_and_drain),
      cmocka_unit_test(cycles_weight_load_exposed),
      cmocka_unit_test(cycles_weight_load_hidden),
      cmocka_unit_test(cycles_dma_bound_loop),
      cmocka_unit_test(cycles_dma_two_queues_share_bandwidth),
      cmocka_unit_test(fault_race_between_dma_queues),
      cmocka_unit_test(cycles_vector_dependency_chain),
      cmocka_unit_test(cycles_data_dependent_loop),
      cmocka_unit_test(state_is_fresh_each_run),
      cmocka_unit_test(fault_runaway_loop_stops_at_cycle_limit),
      cmocka_unit_test(fault_out_of_range_and_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
