/* test_vocabulary.c: libtpurt's lists (include/tpurt.h) and what is
 * generated from them: every status and element type goes name -> value
 * -> name through the library's lookups, the .tpub numbers are the ones
 * files on disk hold, emu_stats_export carries every counter of an
 * emu_stats into tpurt_stats_t under the field of the same name, and the
 * profiler attributes every UNIT and RUN counter of TPURT_OP_COUNTERS in
 * full (the ops' sums are the run's totals). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <string.h>

#include "emu.h"
#include "isa.h"
#include "rt_test.h"
#include "target.h"
#include "tpub.h"
#include "tpurt.h"

/* The status whose text is s, by the library's own strings; -1 if none. */
static int status_of_text(const char *s) {
  for (int v = 0; v < 64; v++)
    if (strcmp(tpurt_status_string((tpurt_status_t)v), s) == 0) return v;
  return -1;
}

static void status_round_trip(void **state) {
  (void)state;
  int n = 0;
#define X(name, text)                                                                              \
  assert_int_equal(TPURT_##name, n);                                                               \
  assert_int_equal(status_of_text(text), TPURT_##name);                                            \
  assert_string_equal(tpurt_status_string(TPURT_##name), text);                                    \
  n++;
  TPURT_STATUS_LIST(X)
#undef X
  assert_int_equal(n, 12);
  assert_string_equal(tpurt_status_string((tpurt_status_t)n), "unknown status");
  assert_string_equal(tpurt_status_string((tpurt_status_t)-1), "unknown status");
}

static void dtype_round_trip(void **state) {
  (void)state;
  int n = 0;
#define X(name, code, spelling, bytes)                                                             \
  assert_int_equal(TPURT_##name, code);                                                            \
  assert_int_equal(TPUB_##name, code);                                                             \
  assert_int_equal(tpub_dtype_lookup(spelling, strlen(spelling)), TPURT_##name);                   \
  assert_string_equal(tpurt_dtype_name(TPURT_##name), spelling);                                   \
  assert_int_equal(tpurt_dtype_size(TPURT_##name), bytes);                                         \
  n++;
  TPURT_DTYPE_LIST(X)
#undef X
  assert_int_equal(n, TPUB_DTYPE_END - 1);
  /* The numbers .tpub files hold. */
  assert_int_equal(TPURT_PRED, 1);
  assert_int_equal(TPURT_S8, 2);
  assert_int_equal(TPURT_S32, 3);
  assert_int_equal(TPURT_BF16, 4);
  assert_int_equal(TPURT_F16, 5);
  assert_int_equal(TPURT_F32, 6);
  assert_int_equal(TPURT_U8, 7);
  assert_int_equal(TPURT_S16, 8);
  assert_int_equal(TPURT_S64, 9);
  assert_int_equal(TPURT_U16, 10);
  assert_int_equal(TPURT_U32, 11);
  assert_int_equal(TPURT_U64, 12);
  assert_int_equal(TPURT_F64, 13);
  assert_int_equal(tpurt_dtype_size((tpurt_dtype_t)0), 0);
  assert_int_equal(tpurt_dtype_size((tpurt_dtype_t)TPUB_DTYPE_END), 0);
  assert_int_equal(tpub_dtype_lookup("c64", 3), -1);
}

/* Every field of tpurt_stats_t, named by hand (not from the lists), with
 * the value export must give for an emu_stats e on target t. */
static void check_exported(const emu_stats *e, const tgt_target *t, const tpurt_stats_t *o) {
  assert_int_equal(o->cycles, e->cycles);
  assert_true(o->seconds == (double)e->cycles / (double)t->clock_hz);
  assert_int_equal(o->instructions, e->instructions);
  assert_int_equal(o->mxu_macs, e->mxu_macs);
  assert_int_equal(o->mxu_busy_cycles, e->mxu_busy_cycles);
  assert_int_equal(o->mxu_peak_macs, e->cycles * tgt_peak_macs_per_cycle(t));
  assert_int_equal(o->mxu_weight_loads, e->mxu_weight_loads);
  assert_int_equal(o->hbm_read_bytes, e->hbm_read_bytes);
  assert_int_equal(o->hbm_write_bytes, e->hbm_write_bytes);
  assert_int_equal(o->hbm_busy_cycles, e->hbm_busy_cycles);
  assert_int_equal(o->dma_transfers, e->dma_transfers);
  assert_int_equal(o->mxu_array_cycles, e->mxu_array_cycles);
  for (int u = 0; u < TPURT_MAX_UNITS; u++) {
    const emu_unit_stats *s = &e->units[u];
    const tpurt_unit_stats_t *d = &o->units[u];
    assert_string_equal(d->name, isa_unit_name(u));
    assert_int_equal(d->instructions, s->instructions);
    assert_int_equal(d->busy_cycles, s->busy_cycles);
    assert_int_equal(d->stall_dependency, s->stall_dependency);
    assert_int_equal(d->stall_sync, s->stall_sync);
    assert_int_equal(d->stall_dma, s->stall_dma);
    assert_int_equal(d->stall_weight_load, s->stall_weight_load);
    assert_int_equal(d->stall_hbm, s->stall_hbm);
    assert_int_equal(d->stall_queue_full, s->stall_queue_full);
    assert_int_equal(d->last_cycle, s->last_cycle);
  }
}

/* Whether v is one of the 64-bit words of o. */
static int holds_word(const tpurt_stats_t *o, uint64_t v) {
  const unsigned char *b = (const unsigned char *)o;
  for (size_t k = 0; k + sizeof v <= sizeof *o; k += sizeof v) {
    uint64_t w;
    memcpy(&w, b + k, sizeof w);
    if (w == v) return 1;
  }
  return 0;
}

static void stats_export_copies_every_counter(void **state) {
  (void)state;
  tgt_target t;
  char err[128];
  assert_int_equal(tgt_parse("v3", &t, err, sizeof err), 0);
  /* emu_stats is counters only: give each 64-bit word its own value. */
  _Static_assert(sizeof(emu_stats) % sizeof(uint64_t) == 0, "emu_stats holds counters only");
  uint64_t words[sizeof(emu_stats) / sizeof(uint64_t)];
  for (size_t k = 0; k < sizeof words / sizeof *words; k++)
    words[k] = 0x1000 + 7 * (uint64_t)k;
  emu_stats e;
  memcpy(&e, words, sizeof e);
  tpurt_stats_t o;
  memset(&o, 0xAB, sizeof o);
  emu_stats_export(&e, &t, &o);
  check_exported(&e, &t, &o);
  /* A counter emu_stats gains reaches tpurt_stats_t (under some field),
   * even before the checks above name it. */
  for (size_t k = 0; k < sizeof words / sizeof *words; k++)
    if (!holds_word(&o, words[k])) fail_msg("emu_stats word %zu is not exported", k);
}

/* A run's op counters, summed over its ops, against the run's own figures
 * (which come through emu_stats_export, not through the profiler). */
static void op_counters_sum_to_the_run(void **state) {
  (void)state;
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = "v3";
  tpurt_device_t *dev;
  assert_int_equal(tpurt_device_create(&o, &dev), TPURT_OK);
  size_t len = 0;
  char *src = rt_read_file(KERNEL_DIR "/matmul256.s", &len);
  assert_non_null(src);
  tpurt_program_t *p;
  assert_int_equal(tpurt_program_assemble(dev, src, len, "matmul256.s", &p), TPURT_OK);
  free(src);
  int64_t dims[2] = {256, 256};
  tpurt_buffer_t *in[2], *out[1];
  assert_int_equal(tpurt_buffer_create(dev, TPURT_BF16, 2, dims, NULL, 256 * 256 * 2, &in[0]), 0);
  assert_int_equal(tpurt_buffer_create(dev, TPURT_BF16, 2, dims, NULL, 256 * 256 * 2, &in[1]), 0);
  size_t nops = tpurt_program_op_count(p);
  tpurt_op_stats_t *ops = calloc(nops, sizeof *ops);
  assert_non_null(ops);
  tpurt_stats_t st;
  assert_int_equal(tpurt_program_execute_profile(p, in, 2, out, 1, &st, NULL, ops), TPURT_OK);
  int checked = 0;
#define SUM_OPS(field)                                                                             \
  uint64_t ops_##field = 0;                                                                        \
  for (size_t i = 0; i < nops; i++)                                                                \
    ops_##field += ops[i].field;
#define CHECK_UNIT(field)                                                                          \
  {                                                                                                \
    SUM_OPS(field)                                                                                 \
    uint64_t run = 0;                                                                              \
    for (int u = 0; u < TPURT_MAX_UNITS; u++)                                                      \
      run += st.units[u].field;                                                                    \
    assert_int_equal(ops_##field, run);                                                            \
    checked++;                                                                                     \
  }
#define CHECK_RUN(field)                                                                           \
  {                                                                                                \
    SUM_OPS(field)                                                                                 \
    assert_int_equal(ops_##field, st.field);                                                       \
    checked++;                                                                                     \
  }
#define CHECK_OP(field)
#define CHECK(field, source) CHECK_##source(field)
  TPURT_OP_COUNTERS(CHECK)
#undef CHECK
#undef CHECK_OP
#undef CHECK_RUN
#undef CHECK_UNIT
#undef SUM_OPS
  assert_int_equal(checked, 13);
  /* The kernel's work shows in the counters checked. */
  assert_int_equal(st.mxu_macs, 256ull * 256 * 256);
  assert_true(st.mxu_weight_loads > 0 && st.dma_transfers > 0 && st.hbm_busy_cycles > 0);
  free(ops);
  tpurt_buffer_destroy(out[0]);
  tpurt_buffer_destroy(in[0]);
  tpurt_buffer_destroy(in[1]);
  tpurt_program_destroy(p);
  tpurt_device_destroy(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(status_round_trip),
      cmocka_unit_test(dtype_round_trip),
      cmocka_unit_test(stats_export_copies_every_counter),
      cmocka_unit_test(op_counters_sum_to_the_run),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
