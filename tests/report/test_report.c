/* test_report.c: per-op attribution (the .tpub OPS section, the profiler
 * of libtpurt, tpurt_stats_breakdown) against numbers derived by hand
 * from docs/isa.md's timing rules, and the report writers (CSV columns,
 * rows summing to the run, one SVG marker per computing op). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "asm.h"
#include "tools/report.h"
#include "tpub.h"
#include "tpurt.h"

static char *read_text(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)len + 1);
  assert_non_null(s);
  assert_int_equal(fread(s, 1, (size_t)len, f), (size_t)len);
  s[len] = 0;
  fclose(f);
  *n = (size_t)len;
  return s;
}

/* The add kernel's three ops and the .tpub image that carries them. */
static const tpub_op add_ops[3] = {{"load", "parameter", "add.tg", 1, 1, 0},
                                   {"add", "add", "add.tg", 2, 5, 0},
                                   {"store", "", "", 0, 0, 0}};

static uint8_t *add_image(size_t *n) {
  size_t len;
  char *text = read_text(SRC_DIR "/add8x128.s", &len);
  tpub_image *img = NULL;
  char err[2048];
  int rc = isa_assemble(text, len, "add8x128.s", NULL, &img, err, sizeof err);
  if (rc) fprintf(stderr, "%s\n", err);
  assert_int_equal(rc, 0);
  free(text);
  assert_int_equal(img->ncode, 15);
  uint32_t map[15];
  for (uint32_t pc = 0; pc < 15; pc++)
    map[pc] = pc < 4 ? 0 : pc < 10 ? 1 : 2;
  assert_int_equal(tpub_set_ops(img, add_ops, 3, map, err, sizeof err), 0);
  uint8_t *bytes;
  assert_int_equal(tpub_write(img, NULL, &bytes, n, err, sizeof err), 0);
  tpub_free(img);
  return bytes;
}

typedef struct run {
  tpurt_device_t *dev;
  tpurt_program_t *prog;
  tpurt_stats_t st;
  tpurt_op_stats_t ops[3];
} run;

static void run_add(run *r, const char *trace) {
  size_t n;
  uint8_t *bytes = add_image(&n);
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = "v3";
  assert_int_equal(tpurt_device_create(&o, &r->dev), TPURT_OK);
  assert_int_equal(tpurt_program_load(r->dev, bytes, n, &r->prog), TPURT_OK);
  free(bytes);
  assert_int_equal(tpurt_program_op_count(r->prog), 3);
  float x[1024], y[1024], z[1024];
  for (int i = 0; i < 1024; i++) {
    x[i] = (float)i;
    y[i] = 0.5f * (float)i;
  }
  int64_t dims[2] = {8, 128};
  tpurt_buffer_t *in[2], *out[1];
  assert_int_equal(tpurt_buffer_create(r->dev, TPURT_F32, 2, dims, x, sizeof x, &in[0]), 0);
  assert_int_equal(tpurt_buffer_create(r->dev, TPURT_F32, 2, dims, y, sizeof y, &in[1]), 0);
  tpurt_profile_options_t po;
  tpurt_profile_options_init(&po);
  po.trace_path = trace;
  po.trace_instructions = 1;
  tpurt_status_t s = tpurt_program_execute_profile(r->prog, in, 2, out, 1, &r->st, &po, r->ops);
  if (s) fprintf(stderr, "%s\n", tpurt_device_message(r->dev));
  assert_int_equal(s, TPURT_OK);
  assert_int_equal(tpurt_buffer_read(out[0], z, sizeof z), 0);
  for (int i = 0; i < 1024; i++)
    assert_true(z[i] == 1.5f * (float)i);
  tpurt_buffer_destroy(in[0]);
  tpurt_buffer_destroy(in[1]);
  tpurt_buffer_destroy(out[0]);
}

static void run_free(run *r) {
  tpurt_program_destroy(r->prog);
  tpurt_device_destroy(r->dev);
}

/* v3: 940 MHz, 450 GB/s, dma_latency 64. bpc = round(450e9 x 1024 /
 * 940e6) = 490213, so a 4096-byte transfer holds HBM ceil(4096 x 1024 /
 * 490213) = 9 cycles and signals 9 + 64 = 73 cycles after it starts.
 *   T0 sli, T1 sli                                  ends 1, 2
 *   T2 dmald x:  HBM [2,11), signal 75              ends 75
 *   T3 dmald y:  queue free at 11: HBM [11,20), signal 84
 *   T4 wait vector, sem0, 2: tokens 75, 84 -> starts 84 (stall_dma 80)
 *   T5 sli s3                                       (front end)
 *   T6 vld v1: slot free 85 -> starts 85, ready 89
 *   T7 vld v2: starts 86, ready 90
 *   T8 vaddf: slot 87, v2 ready 90 -> starts 90 (stall_dependency 3), ready 92
 *   T9 vst: slot 91, v3 ready 92 -> starts 92 (stall_dependency 1), done 93
 *   T10 signal vector: fence after 93 -> starts 93, token 94
 *   T11 wait dma0: queue free 20, token 94 -> starts 94 (stall_sync 74)
 *   T12 dmast: starts 95, HBM [95,104), signal 168
 *   T13 wait scalar: T = 168 (stall_dma 155); T14 halt at 169
 *   end = max(169 + 1, 168) = 170.
 * Exclusive cycles (how far each instruction pushed the furthest
 * completion): load 1 + 1 + 73 + 9 = 84; add (85, 89, 90, 92, 93) 9;
 * store 170 - 93 = 77. */
static void add8x128_cycles(void **state) {
  (void)state;
  run r;
  run_add(&r, NULL);
  assert_int_equal(r.st.cycles, 170);
  const tpurt_op_stats_t *ld = &r.ops[0], *ad = &r.ops[1], *stv = &r.ops[2];
  assert_int_equal(ld->instructions, 4);
  assert_int_equal(ld->first_cycle, 0);
  assert_int_equal(ld->end_cycle, 84);
  assert_int_equal(ld->exclusive_cycles, 84);
  assert_int_equal(ld->hbm_read_bytes, 8192);
  assert_int_equal(ld->hbm_write_bytes, 0);
  assert_int_equal(ld->hbm_busy_cycles, 18);
  assert_int_equal(ld->dma_transfers, 2);
  assert_int_equal(ld->unit_busy[6], 18);
  assert_int_equal(ld->stall_dma + ld->stall_sync + ld->stall_dependency + ld->stall_hbm, 0);

  assert_int_equal(ad->instructions, 6);
  assert_int_equal(ad->first_cycle, 5); /* sli s3 on the front end */
  assert_int_equal(ad->end_cycle, 93);
  assert_int_equal(ad->exclusive_cycles, 9);
  assert_int_equal(ad->stall_dma, 80);
  assert_int_equal(ad->stall_dependency, 4);
  assert_int_equal(ad->vpu_instructions, 5);
  assert_int_equal(ad->vpu_element_ops, 1024);
  assert_int_equal(ad->unit_busy[1], 5);
  assert_int_equal(ad->hbm_read_bytes + ad->hbm_write_bytes, 0);

  assert_int_equal(stv->instructions, 5);
  assert_int_equal(stv->first_cycle, 93);
  assert_int_equal(stv->end_cycle, 170);
  assert_int_equal(stv->exclusive_cycles, 77);
  assert_int_equal(stv->stall_sync, 74);
  assert_int_equal(stv->stall_dma, 155);
  assert_int_equal(stv->hbm_write_bytes, 4096);

  /* Sums over ops equal the run's totals. */
  uint64_t ex = 0, dma = 0, dep = 0, sync = 0, ins = 0;
  for (int i = 0; i < 3; i++) {
    ex += r.ops[i].exclusive_cycles;
    dma += r.ops[i].stall_dma;
    dep += r.ops[i].stall_dependency;
    sync += r.ops[i].stall_sync;
    ins += r.ops[i].instructions;
  }
  uint64_t tdma = 0, tdep = 0, tsync = 0;
  for (int u = 0; u < TPURT_MAX_UNITS; u++) {
    tdma += r.st.units[u].stall_dma;
    tdep += r.st.units[u].stall_dependency;
    tsync += r.st.units[u].stall_sync;
  }
  assert_int_equal(ex, r.st.cycles);
  assert_int_equal(dma, tdma);
  assert_int_equal(dep, tdep);
  assert_int_equal(sync, tsync);
  assert_int_equal(ins, r.st.instructions);

  /* No MXU work: the whole MXU time is non-matrix. */
  tpurt_breakdown_t b;
  tpurt_stats_breakdown(&r.st, 2, &b);
  assert_int_equal(b.total, 340);
  assert_int_equal(b.non_matrix, 340);
  assert_int_equal(
      b.array_active + b.weight_stall + b.weight_shift + b.dependency_stall + b.input_stall, 0);
  tpurt_op_info_t oi;
  assert_int_equal(tpurt_program_op_info(r.prog, 1, &oi), TPURT_OK);
  assert_string_equal(oi.name, "add");
  assert_string_equal(oi.file, "add.tg");
  assert_int_equal(oi.line, 2);
  assert_int_equal(tpurt_program_op_info(r.prog, 3, &oi), TPURT_INVALID_ARGUMENT);
  run_free(&r);
}

/* The CSV: documented header, one row per op that ran, exclusive cycles
 * summing to the run; the SVG: one marker per op with FLOPs. */
static void writers(void **state) {
  (void)state;
  run r;
  run_add(&r, NULL);
  tpurt_op_info_t info[3];
  for (size_t i = 0; i < 3; i++)
    tpurt_program_op_info(r.prog, i, &info[i]);
  tool_report rep = {{"v3", 940e6, 450e9, 2, 128, 128}, &r.st, 3, info, r.ops};
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_int_equal(tool_report_csv(&rep, f), 0);
  fclose(f);
  const char *hdr =
      "op,name,kind,source,instructions,first_cycle,end_cycle,cycles,exclusive_cycles,share,"
      "stall_weight_load,stall_dma_wait,stall_dependency,stall_other,mxu_busy_cycles,mxu_macs,"
      "useful_macs,vpu_instructions,vpu_element_ops,hbm_read_bytes,hbm_write_bytes,"
      "hbm_busy_cycles,flops,intensity,achieved_flops,attainable_flops,roofline_fraction,bound\n";
  assert_memory_equal(buf, hdr, strlen(hdr));
  /* Row of the add: 1024 FLOPs, no HBM bytes -> infinite intensity, compute-bound. */
  assert_non_null(strstr(buf, "\n1,add,add,add.tg:2:5,6,5,93,88,9,0.052941,0,80,4,0,0,0,0,5,1024,"
                              "0,0,0,1024,inf,"));
  assert_non_null(strstr(buf, ",compute\n"));
  /* Rows: 3, exclusive cycles sum to 170. */
  int rows = 0;
  uint64_t ex = 0;
  for (char *l = strchr(buf, '\n') + 1; *l; l = strchr(l, '\n') + 1) {
    rows++;
    char *c = l;
    for (int k = 0; k < 8; k++)
      c = strchr(c, ',') + 1;
    ex += strtoull(c, NULL, 10);
  }
  assert_int_equal(rows, 3);
  assert_int_equal(ex, 170);
  free(buf);
  tool_report_row w;
  tool_report_row_of(&rep, 1, &w);
  assert_int_equal(w.cycles, 88);
  assert_true(w.flops == 1024.0);
  /* 1024 FLOPs in 88 cycles at 940 MHz */
  assert_true(w.achieved > 1024.0 / (88 / 940e6) * 0.999 &&
              w.achieved < 1024.0 / (88 / 940e6) * 1.001);
  f = open_memstream(&buf, &len);
  assert_int_equal(tool_report_svg(&rep, f), 0);
  fclose(f);
  int marks = 0;
  for (char *p = buf; (p = strstr(p, "<circle class=\"op\"")); p++)
    marks++;
  assert_int_equal(marks, 1); /* only the add computes */
  assert_non_null(strstr(buf, "</svg>"));
  free(buf);
  run_free(&r);
}

/* The OPS section survives a write/read round trip, and the loader
 * refuses op indices out of range. */
static void ops_section_checked(void **state) {
  (void)state;
  size_t n;
  uint8_t *bytes = add_image(&n);
  tpub_image *img = NULL;
  char err[512];
  assert_int_equal(tpub_read(bytes, n, NULL, &img, err, sizeof err), 0);
  assert_int_equal(img->nops, 3);
  assert_string_equal(img->ops[2].name, "store");
  assert_int_equal(img->op_of_pc[9], 1);
  assert_int_equal(img->op_of_pc[10], 2);
  /* Find the run table: the OPS section starts with version 1, 3 runs. */
  size_t at = 0;
  for (size_t i = 64; i + 16 <= n; i += 8)
    if (!memcmp(bytes + i, "\1\0\0\0\3\0\0\0\0\0\0\0\0\0\0\0", 16)) at = i;
  assert_true(at > 0);
  bytes[at + 8 + 8 + 4] = 7; /* run 1 names op 7 */
  memset(bytes + 24, 0, 4);
  uint32_t crc = tpub_crc32(bytes, n);
  for (int i = 0; i < 4; i++)
    bytes[24 + i] = (uint8_t)(crc >> (8 * i));
  tpub_free(img);
  img = NULL;
  assert_int_equal(tpub_read(bytes, n, NULL, &img, err, sizeof err), -1);
  assert_non_null(strstr(err, "names op 7 of 3"));
  free(bytes);
}

/* tpub_set_ops_take adopts the op map on success (no copy: the image
 * holds the caller's array, freed with it) and leaves it to the caller on
 * an error; the written file equals tpub_set_ops's. */
static void ops_taken(void **state) {
  (void)state;
  size_t n;
  uint8_t *want = add_image(&n);
  tpub_image *img = NULL;
  char err[512];
  assert_int_equal(tpub_read(want, n, NULL, &img, err, sizeof err), 0);
  uint32_t *map = malloc(15 * sizeof *map);
  assert_non_null(map);
  for (uint32_t pc = 0; pc < 15; pc++) map[pc] = pc < 4 ? 0 : pc < 10 ? 3 : 2;
  assert_int_equal(tpub_set_ops_take(img, add_ops, 3, map, err, sizeof err), -1);
  assert_non_null(strstr(err, "op 3 out of range"));
  assert_null(img->op_of_pc);
  for (uint32_t pc = 4; pc < 10; pc++) map[pc] = 1; /* still ours: fix it */
  assert_int_equal(tpub_set_ops_take(img, add_ops, 3, map, err, sizeof err), 0);
  assert_ptr_equal(img->op_of_pc, map);
  uint8_t *bytes;
  size_t m;
  assert_int_equal(tpub_write(img, NULL, &bytes, &m, err, sizeof err), 0);
  assert_int_equal(m, n);
  assert_memory_equal(bytes, want, n);
  free(bytes);
  free(want);
  tpub_free(img);
}

/* ---- fail-the-Nth allocation: a profiled run with a trace, and loading
 * the OPS section, either succeed or return TPURT_OUT_OF_MEMORY, leaking
 * nothing. */
typedef struct counting {
  long live, calls, fail_at;
} counting;

static void *c_alloc(void *user, size_t n) {
  counting *c = user;
  if (c->calls++ == c->fail_at) return NULL;
  void *p = malloc(n);
  if (p) c->live++;
  return p;
}
static void c_free(void *user, void *p) {
  counting *c = user;
  if (p) c->live--;
  free(p);
}

static int profiled_flow(counting *c, const uint8_t *bytes, size_t n, const char *trace) {
  tpurt_allocator_t a = {c_alloc, c_free, c};
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = "v3,vmem=256KiB,acc_rows=64";
  o.allocator = &a;
  tpurt_device_t *d = NULL;
  tpurt_status_t st = tpurt_device_create(&o, &d);
  if (st) {
    assert_int_equal(st, TPURT_OUT_OF_MEMORY);
    return 0;
  }
  int done = 0;
  tpurt_program_t *p = NULL;
  tpurt_buffer_t *in[2] = {NULL, NULL}, *out = NULL;
  int64_t dims[2] = {8, 128};
  tpurt_op_stats_t ops[3];
  tpurt_profile_options_t po;
  tpurt_profile_options_init(&po);
  po.trace_path = trace;
  if ((st = tpurt_program_load(d, bytes, n, &p))) goto out;
  if ((st = tpurt_buffer_create(d, TPURT_F32, 2, dims, NULL, 4096, &in[0]))) goto out;
  if ((st = tpurt_buffer_create(d, TPURT_F32, 2, dims, NULL, 4096, &in[1]))) goto out;
  if ((st = tpurt_program_execute_profile(p, in, 2, &out, 1, NULL, &po, ops))) goto out;
  assert_int_equal(ops[0].exclusive_cycles + ops[1].exclusive_cycles + ops[2].exclusive_cycles,
                   170);
  done = 1;
out:
  if (!done) assert_int_equal(st, TPURT_OUT_OF_MEMORY);
  tpurt_buffer_destroy(in[0]);
  tpurt_buffer_destroy(in[1]);
  tpurt_buffer_destroy(out);
  tpurt_program_destroy(p);
  tpurt_device_destroy(d);
  return done;
}

static void profile_allocation_failures(void **state) {
  (void)state;
  size_t n;
  uint8_t *bytes = add_image(&n);
  char trace[] = "/tmp/tpucc-report-XXXXXX";
  int fd = mkstemp(trace);
  assert_true(fd >= 0);
  close(fd);
  for (int t = 0; t < 2; t++) {
    int finished = 0;
    for (long k = 0; k < 100000 && !finished; k++) {
      counting c = {0, 0, k};
      finished = profiled_flow(&c, bytes, n, t ? trace : NULL);
      assert_int_equal(c.live, 0);
    }
    assert_true(finished);
  }
  remove(trace);
  free(bytes);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(add8x128_cycles),
      cmocka_unit_test(writers),
      cmocka_unit_test(ops_section_checked),
      cmocka_unit_test(ops_taken),
      cmocka_unit_test(profile_allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
