/* test_ici.c: many cores and the interconnect: coreid and dmaput through
 * the assembler, disassembler and verifier; hand-written programs on the
 * 8 cores of a v3-8 with cycle counts derived by hand (docs/isa.md, "Many
 * cores", has the same derivations); the same values and cycles on 1 and on
 * several host threads; faults for bad cores and addresses and for a
 * deadlock across cores; and the driver running one replica per core.
 *
 * Every program uses `v3-8,clock=1GHz,ici_bw=64GB/s,ici_latency=100`:
 * 64 bytes a cycle on a link, so 4096 bytes take 64 link cycles; HBM at
 * 450 GB/s reads 4096 bytes in ceil(4096 x 1024 / 460800) = 10 cycles;
 * a hop takes 100 cycles. Core c sits on chip c / 2; chip k at column
 * k % 2, row k / 2 of the 2x2 torus. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "asm.h"
#include "emu.h"
#include "ici.h"
#include "isa.h"
#include "runtime/device.h"
#include "tpub.h"
#include "tpurt.h"

#define TARGET "v3-8,clock=1GHz,ici_bw=64GB/s,ici_latency=100"
enum { NC = 8 };

/* One run of a program on the 8 cores. */
typedef struct run {
  tgt_target t;
  tpub_image *img;
  emu_machine *m[NC];
  uint8_t *hbm[NC];
  emu_stats st[NC];
  emu_fault f[NC];
  emu_ici_stats ist[NC];
  emu_ici_link_stats links[64];
  int nlinks;
  int rc, who;
} run;

/* Assembles src, verifies it on TARGET, and runs it on threads host
 * threads; core c's parameter 0 (when there is one) holds floats
 * 1000 c + i. */
static void run_program(const char *src, int threads, run *r) {
  memset(r, 0, sizeof *r);
  char msg[1024];
  assert_int_equal(tgt_parse(TARGET, &r->t, msg, sizeof msg), 0);
  int rc = isa_assemble(src, strlen(src), "t.s", NULL, &r->img, msg, sizeof msg);
  if (rc) fprintf(stderr, "%s\n", msg);
  assert_int_equal(rc, 0);
  rc = tpub_verify(r->img, &r->t, msg, sizeof msg);
  if (rc) fprintf(stderr, "%s\n", msg);
  assert_int_equal(rc, 0);
  for (int c = 0; c < NC; c++) {
    assert_non_null(r->m[c] = emu_create(&r->t, NULL));
    assert_non_null(r->hbm[c] = calloc(1, (size_t)r->img->hbm_bytes));
    for (uint32_t i = 0; i < r->img->nconsts; i++)
      memcpy(r->hbm[c] + r->img->consts[i].hbm_offset, r->img->consts[i].data,
             (size_t)r->img->consts[i].size);
    if (r->img->nparams) {
      float *x = (float *)(void *)(r->hbm[c] + r->img->params[0].hbm_offset);
      for (uint64_t i = 0; i < r->img->params[0].bytes / 4; i++) x[i] = (float)(1000 * c + (int)i);
    }
  }
  emu_ici *x = emu_ici_create(&r->t, r->m, NC, threads, NULL);
  assert_non_null(x);
  r->rc = emu_ici_run(x, r->img, r->hbm, 1000000, r->st, r->f, &r->who);
  r->nlinks = emu_ici_nlinks(x);
  assert_true(r->nlinks <= 64);
  for (int k = 0; k < r->nlinks; k++) r->links[k] = *emu_ici_link(x, k);
  emu_ici_destroy(x);
  for (int c = 0; c < NC; c++) {
    r->ist[c] = r->m[c]->ist;
    emu_destroy(r->m[c]);
  }
}

static void run_free(run *r) {
  for (int c = 0; c < NC; c++) free(r->hbm[c]);
  tpub_free(r->img);
}

/* The link id of chip k's link in direction dir (0 x+, 1 x-, 2 y+, 3 y-). */
static int link_of(int chip, int dir) { return chip * (TGT_ICI_LINKS + 2) + dir; }

/* Two runs agree in every value and counter. */
static void assert_same(const run *a, const run *b) {
  assert_int_equal(a->rc, b->rc);
  assert_int_equal(a->who, b->who);
  for (int c = 0; c < NC; c++) {
    assert_memory_equal(&a->st[c], &b->st[c], sizeof a->st[c]);
    assert_memory_equal(&a->ist[c], &b->ist[c], sizeof a->ist[c]);
    assert_memory_equal(a->hbm[c], b->hbm[c], (size_t)a->img->hbm_bytes);
  }
  assert_memory_equal(a->links, b->links, sizeof a->links);
}

/* ---- the instructions through the tools ---- */

static void coreid_and_dmaput_encode_and_verify(void **state) {
  (void)state;
  tgt_target t;
  assert_int_equal(tgt_parse("v3-8", &t, NULL, 0), 0);
  static const char *const texts[] = {"coreid s5, 0", "coreid s31, 1",
                                      "dmaput dma1, s1, s2, s3, sem4, 101", "iwait sem7, 3"};
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
    char src[128], msg[512], back[128];
    snprintf(src, sizeof src, "%s\nhalt\n", texts[i]);
    tpub_image *img = NULL;
    assert_int_equal(isa_assemble(src, strlen(src), "t.s", NULL, &img, msg, sizeof msg), 0);
    isa_inst in;
    assert_int_equal(isa_decode(img->code[0], &in, msg, sizeof msg), 0);
    assert_int_equal(isa_encode(&in), img->code[0]);
    isa_format(&in, back, sizeof back);
    assert_string_equal(back, texts[i]);
    assert_int_equal(tpub_verify(img, &t, msg, sizeof msg), 0);
    tpub_free(img);
  }
  /* dmaput dma1, s1, s2, s3, sem4, 101: opcode 114, a=1 b=2 c=3 d=4, x=1,
   * imm 101 (remote sem5, source VMEM, destination VMEM). */
  isa_inst p = {OP_DMAPUT, 1, 2, 3, 4, 1, 101};
  assert_int_equal(OP_DMAPUT, 114);
  assert_int_equal(isa_encode(&p), 0x7208864100000065ull);
  static const char *const bad[][2] = {
      {"coreid s1, 2\nhalt\n", "coreid: selector 2 must be 0 (core id) or 1 (core count)"},
      {"dmaput dma0, s1, s2, s3, sem0, 128\nhalt\n", "dmaput: flags 0x80"},
      {"dmaput dma2, s1, s2, s3, sem0, 0\nhalt\n", "dma2 does not exist"},
      {"iwait sem1, 0\nhalt\n", "iwait: count 0 outside 1..65535"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char msg[512];
    tpub_image *img = NULL;
    assert_int_equal(isa_assemble(bad[i][0], strlen(bad[i][0]), "t.s", NULL, &img, msg, sizeof msg),
                     0);
    assert_int_not_equal(tpub_verify(img, &t, msg, sizeof msg), 0);
    if (!strstr(msg, bad[i][1])) fail_msg("%s: got '%s'", bad[i][0], msg);
    tpub_free(img);
  }
}

/* ---- hand-derived runs ---- */

/* Every core sends its x (4096 bytes, HBM) to the next core's y and waits
 * for both of its semaphores. Core c != 7 issues dmaput at T = 6 (core 7,
 * one instruction more, at 7): the source streams out at the link rate,
 * 64 cycles, so sem0 arrives at 70 (71). Arrivals, at start + 64 + 100 x
 * hops: an on-chip hop (0->1, 2->3, 4->5, 6->7) or one torus hop (1->2:
 * chip 0 x+, 5->6: chip 2 x+) arrive at 170; 3->4 crosses chip 1 x+ and
 * chip 0 y+ (two hops): 270; 7->0 crosses chip 3 x+ and chip 2 y+ from 7:
 * 7 + 64 + 200 = 271. No two transfers share a link. The wait for sem1
 * issues at T = 71 (72 on core 7) and moves T to the arrival; halt follows
 * and the run ends one cycle after it: arrival + 2. */
#include "tests/runtime/ici_ring.h"

static void ring_pass_on_v3_8(void **state) {
  (void)state;
  run r;
  run_program(ring_src, 1, &r);
  assert_int_equal(r.rc, 0);
  static const uint64_t cycles[NC] = {273, 172, 172, 172, 272, 172, 172, 172};
  for (int c = 0; c < NC; c++) {
    assert_int_equal(r.st[c].cycles, cycles[c]);
    const float *y = (const float *)(const void *)(r.hbm[c] + 4096);
    int from = (c + NC - 1) % NC;
    for (int i = 0; i < 1024; i++) assert_true(y[i] == (float)(1000 * from + i));
    assert_int_equal(r.ist[c].puts, 1);
    assert_int_equal(r.ist[c].sent_bytes, 4096);
    assert_int_equal(r.ist[c].received_bytes, 4096);
    assert_int_equal(r.ist[c].send_cycles, 64);
    /* waiting on the arrival from T = 71 (72 on core 7) */
    assert_int_equal(r.ist[c].wait_cycles, cycles[c] - 2 - (c == 7 ? 72 : 71));
    /* the same counters reach the run's statistics (tpurt_stats_t's ici_*) */
    assert_int_equal(r.st[c].ici_puts, 1);
    assert_int_equal(r.st[c].ici_sent_bytes, 4096);
    assert_int_equal(r.st[c].ici_received_bytes, 4096);
    assert_int_equal(r.st[c].ici_send_cycles, 64);
    assert_int_equal(r.st[c].ici_wait_cycles, cycles[c] - 2 - (c == 7 ? 72 : 71));
    assert_int_equal(r.st[c].units[ISA_UNIT_SCALAR].stall_dma, c == 7 ? 71 - 8 : 70 - 7);
  }
  /* 1 -> 2 crosses chip 0 x+; 3 -> 4 chip 1 x+ then chip 0 y+; 7 -> 0
   * chip 3 x+ then chip 2 y+; nothing uses chip 0 x-. */
  assert_int_equal(r.links[link_of(0, 0)].transfers, 1);
  assert_int_equal(r.links[link_of(1, 0)].transfers, 1);
  assert_int_equal(r.links[link_of(0, 2)].transfers, 1);
  assert_int_equal(r.links[link_of(2, 2)].transfers, 1);
  assert_int_equal(r.links[link_of(0, 1)].transfers, 0);
  assert_int_equal(r.links[link_of(0, 2)].busy_cycles, 64);
  assert_int_equal(r.links[link_of(0, 2)].bytes, 4096);
  run r4;
  run_program(ring_src, 4, &r4);
  assert_same(&r, &r4);
  run_free(&r4);
  run r2;
  run_program(ring_src, 2, &r2);
  assert_same(&r, &r2);
  run_free(&r2);
  run_free(&r);
}

/* Cores 0 and 1 (chip 0) both send 4096 bytes to core 2 (chip 1) at T = 6:
 * both routes are the one link chip 0 x+. Granted in (issue, core) order,
 * core 0's takes it during [6, 70) and arrives at 170; core 1's waits for
 * it, [70, 134), and arrives at 234. The senders' semaphores come at 70
 * either way (the source has been read; the interconnect holds the data).
 * Core 2 waits for both from T = 4: T = 234, halt at 235, end 236. Cores
 * 0, 1: wait at T = 7 -> 70, halt at 71, end 72. The others halt at T = 4:
 * end 5. */
static const char *contend_src = ".target " TARGET "\n"
                                 ".hbm 12288\n"
                                 ".param x f32[1024] @0\n"
                                 ".result y f32[2048] @4096\n"
                                 ".smem 0 4096, 1, 1, 1, 0, 0, 0, 0, 0, 0, 2\n"
                                 "  coreid s1, 0\n"
                                 "  sli s2, 2\n"
                                 "  blt s1, s2, send\n"
                                 "  beq s1, s2, recv\n"
                                 "  halt\n"
                                 "send:\n"
                                 "  sli s3, 4096\n"
                                 "  sshli s4, s1, 12\n"
                                 "  sadd s3, s3, s4\n"
                                 "  dmaput dma0, s0, s3, s0, sem0, 1\n"
                                 "  wait scalar, sem0, 1\n"
                                 "  halt\n"
                                 "recv:\n"
                                 "  iwait sem1, 2\n"
                                 "  halt\n";

static void two_cores_share_a_link(void **state) {
  (void)state;
  run r;
  run_program(contend_src, 1, &r);
  assert_int_equal(r.rc, 0);
  static const uint64_t cycles[NC] = {72, 72, 236, 5, 5, 5, 5, 5};
  for (int c = 0; c < NC; c++) assert_int_equal(r.st[c].cycles, cycles[c]);
  const float *y = (const float *)(const void *)(r.hbm[2] + 4096);
  for (int i = 0; i < 1024; i++) {
    assert_true(y[i] == (float)i);
    assert_true(y[1024 + i] == (float)(1000 + i));
  }
  const emu_ici_link_stats *l = &r.links[link_of(0, 0)];
  assert_int_equal(l->transfers, 2);
  assert_int_equal(l->bytes, 8192);
  assert_int_equal(l->busy_cycles, 128);
  assert_int_equal(r.ist[2].wait_cycles, 234 - 4);
  assert_int_equal(r.ist[2].received_bytes, 8192);
  run r3;
  run_program(contend_src, 3, &r3);
  assert_same(&r, &r3);
  run_free(&r3);
  run_free(&r);
}

/* ---- faults ---- */

static void faults(void **state) {
  (void)state;
  static const struct {
    const char *body;
    int who;
    emu_fault_kind kind;
    const char *reason;
  } cases[] = {
      /* Every core waits for a signal nobody sends. */
      {"  iwait sem3, 1\n  halt\n", 0, EMU_FAULT_SEMAPHORE,
       "iwait for 1 on semaphore 3 can never complete: 0 signals are pending and no core can "
       "send more (deadlock across cores)"},
      /* Core 5 waits for two signals, core 4 sends it one; the rest halt. */
      {"  coreid s1, 0\n  sli s2, 5\n  beq s1, s2, w\n  sli s2, 4\n  bne s1, s2, e\n"
       "  sli s3, 5\n  sst s3, s0, 40\n  dmaput dma0, s0, s0, s0, sem0, 2\n  wait scalar, sem0, 1\n"
       "e:\n  halt\nw:\n  iwait sem2, 2\n  halt\n",
       5, EMU_FAULT_SEMAPHORE, "iwait for 2 on semaphore 2 can never complete: 1 signals are pending"},
      {"  sli s3, 8\n  sst s3, s0, 40\n  dmaput dma0, s0, s0, s0, sem0, 0\n  halt\n", 0,
       EMU_FAULT_CORE, "dmaput: destination core 8 does not exist (8 running)"},
      {"  sli s3, 1\n  sst s3, s0, 40\n  sli s4, 8000\n  dmaput dma0, s0, s4, s0, sem0, 0\n"
       "  halt\n",
       0, EMU_FAULT_MEMORY, "dmaput remote HBM destination [8000, 8256) is outside [0, 8192)"},
      /* Core 1 reads its HBM at 4096 during [5, 6) without waiting for the
       * data core 0 puts there during [5, 109). */
      {"  coreid s1, 0\n  bne s1, s0, r\n  sli s3, 1\n  sst s3, s0, 40\n  sli s4, 4096\n"
       "  dmaput dma0, s0, s4, s0, sem0, 0\n  wait scalar, sem0, 1\n  halt\n"
       "r:\n  sli s4, 4096\n  sli s5, 1\n  beq s1, s5, rd\n  halt\nrd:\n"
       "  dmald dma0, s0, s4, s0, sem2\n  wait scalar, sem2, 1\n  halt\n",
       1, EMU_FAULT_RACE, "written by ici"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char src[2048];
    snprintf(src, sizeof src,
             ".target " TARGET "\n.hbm 8192\n.smem 0 256, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1\n%s",
             cases[i].body);
    run r;
    run_program(src, 2, &r);
    assert_int_equal(r.rc, -1);
    assert_int_equal(r.who, cases[i].who);
    assert_int_equal(r.f[r.who].kind, cases[i].kind);
    if (!strstr(r.f[r.who].reason, cases[i].reason))
      fail_msg("case %zu: got '%s'", i, r.f[r.who].reason);
    run_free(&r);
  }
}

/* ---- the driver: one replica per core ---- */

static void driver_runs_every_core(void **state) {
  (void)state;
  rt_allocator a = {0};
  rt_device_config cfg = {&a, 1000000, 0, NULL, NULL, 0, NULL, 0};
  rt_device *d = NULL;
  rt_device_info info;
  char msg[1024];
  assert_int_equal(rt_tpu_driver.create(TARGET, &cfg, &d, &info, msg, sizeof msg), TPURT_OK);
  assert_int_equal(info.ncores, NC);
  rt_program *p = NULL;
  rt_program_info pi;
  tpurt_status_t s = rt_tpu_assemble(d, ring_src, strlen(ring_src), "ring.s", &p, &pi, msg, sizeof msg);
  if (s) fprintf(stderr, "%s\n", msg);
  assert_int_equal(s, TPURT_OK);
  float x[NC][1024], y[NC][1024];
  void *pin[NC][1], *pout[NC][1];
  tpurt_stats_t st[NC];
  rt_replica r[NC];
  for (int c = 0; c < NC; c++) {
    for (int i = 0; i < 1024; i++) x[c][i] = (float)(c * 10 + i % 7);
    pin[c][0] = x[c];
    pout[c][0] = y[c];
    r[c] = (rt_replica){pin[c], pout[c], &st[c]};
  }
  assert_int_equal(rt_tpu_driver.ops->execute(p, r, NC, msg, sizeof msg), TPURT_OK);
  for (int c = 0; c < NC; c++) {
    assert_memory_equal(y[c], x[(c + NC - 1) % NC], sizeof y[c]);
    assert_int_equal(st[c].cycles, c == 0 ? 273 : c == 4 ? 272 : 172);
  }
  /* Replica counts other than 1 or every core are refused. */
  assert_int_equal(rt_tpu_driver.ops->execute(p, r, 3, msg, sizeof msg), TPURT_INVALID_ARGUMENT);
  assert_string_equal(msg, "3 replicas for 8 cores");
  /* One replica on a board runs one core, whose ring is itself: the put
   * loops back (no link, one hop of latency). dmaput issues at T = 7
   * (core 7's path), sem0 at 71, arrival 7 + 64 + 100 = 171; waits at
   * T = 8 and 72; halt at 172, end 173. */
  memset(y[0], 0, sizeof y[0]);
  assert_int_equal(rt_tpu_driver.ops->execute(p, r, 1, msg, sizeof msg), TPURT_OK);
  assert_memory_equal(y[0], x[0], sizeof y[0]);
  assert_int_equal(st[0].cycles, 173);
  rt_tpu_driver.ops->program_destroy(p);
  rt_tpu_driver.ops->destroy(d);
  /* A trace of many cores: one process row per core. */
  char path[] = "/tmp/test_ici_trace_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  cfg.trace_path = path;
  assert_int_equal(rt_tpu_driver.create(TARGET, &cfg, &d, &info, msg, sizeof msg), TPURT_OK);
  assert_int_equal(rt_tpu_assemble(d, ring_src, strlen(ring_src), "ring.s", &p, &pi, msg, sizeof msg),
                   TPURT_OK);
  assert_int_equal(rt_tpu_driver.ops->execute(p, r, NC, msg, sizeof msg), TPURT_OK);
  rt_tpu_driver.ops->program_destroy(p);
  rt_tpu_driver.ops->destroy(d);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char text[1 << 16];
  size_t len = fread(text, 1, sizeof text - 1, f);
  text[len] = 0;
  fclose(f);
  remove(path);
  /* core 7 (pid 8) issued its dmaput at 7 and core 0 its iwait at 71 */
  assert_non_null(strstr(text, "{\"name\":\"dmaput dma0, s0, s4, s0, sem0, 1\",\"ph\":\"X\",\"pid\":8,\"tid\":6,\"ts\":7,\"dur\":64"));
  assert_non_null(strstr(text, "{\"name\":\"iwait sem1, 1\",\"ph\":\"X\",\"pid\":1,\"tid\":0,\"ts\":271"));
  assert_int_equal(text[len - 2], ']');
}

/* ---- the public API: tpurt_program_execute_replicas ---- */

static void public_api_runs_replicas(void **state) {
  (void)state;
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = TARGET;
  tpurt_device_t *d = NULL;
  assert_int_equal(tpurt_device_create(&o, &d), TPURT_OK);
  assert_int_equal(tpurt_device_core_count(d), NC);
  tpurt_program_t *p = NULL;
  assert_int_equal(tpurt_program_assemble(d, ring_src, strlen(ring_src), "ring.s", &p), TPURT_OK);
  static float x[NC][1024], y[NC][1024];
  tpurt_buffer_t *in[NC], *out[NC];
  tpurt_stats_t st[NC];
  int64_t dims[1] = {1024};
  for (int c = 0; c < NC; c++) {
    for (int i = 0; i < 1024; i++) x[c][i] = (float)(3 * c - i);
    assert_int_equal(tpurt_buffer_create(d, TPURT_F32, 1, dims, x[c], sizeof x[c], &in[c]),
                     TPURT_OK);
  }
  assert_int_equal(tpurt_program_execute_replicas(p, NC, in, 1, out, 1, st), TPURT_OK);
  for (int c = 0; c < NC; c++) {
    assert_int_equal(tpurt_buffer_read(out[c], y[c], sizeof y[c]), TPURT_OK);
    assert_memory_equal(y[c], x[(c + NC - 1) % NC], sizeof y[c]);
    assert_int_equal(st[c].cycles, c == 0 ? 273 : c == 4 ? 272 : 172);
    assert_string_equal(st[c].units[ISA_UNIT_DMA0].name, "dma0");
    tpurt_buffer_destroy(out[c]);
  }
  assert_int_equal(tpurt_program_execute_replicas(p, 3, in, 1, out, 1, NULL),
                   TPURT_INVALID_ARGUMENT);
  assert_string_equal(tpurt_device_message(d), "the device has 8 cores, given 3 replicas");
  for (int c = 0; c < NC; c++) tpurt_buffer_destroy(in[c]);
  tpurt_program_destroy(p);
  tpurt_device_destroy(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(coreid_and_dmaput_encode_and_verify),
      cmocka_unit_test(ring_pass_on_v3_8),
      cmocka_unit_test(two_cores_share_a_link),
      cmocka_unit_test(faults),
      cmocka_unit_test(driver_runs_every_core),
      cmocka_unit_test(public_api_runs_replicas),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
