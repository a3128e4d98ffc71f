/* test_api.c: libtpurt's public API: versions, status strings, argument and
 * signature checks with their messages, file round trips, and the
 * fail-the-Nth-allocation test: every out-of-memory path returns an error
 * and leaks nothing (SQLite/Lua style fault injection); loading a file
 * checks what it is before reading it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <unistd.h>

#include "rt_test.h"

static void versions_and_status_strings(void **state) {
  (void)state;
  assert_int_equal(tpurt_version(), TPURT_VERSION_NUMBER);
  assert_string_equal(tpurt_version_string(), TPURT_VERSION_STRING);
  assert_string_equal(tpurt_status_string(TPURT_OK), "ok");
  assert_string_equal(tpurt_status_string(TPURT_INVALID_PROGRAM), "invalid program");
  assert_string_equal(tpurt_status_string((tpurt_status_t)999), "unknown status");
  assert_int_equal(tpurt_dtype_size(TPURT_BF16), 2);
  assert_string_equal(tpurt_dtype_name(TPURT_F32), "f32");
  assert_int_equal(tpurt_dtype_size((tpurt_dtype_t)0), 0);
}

static void device_targets(void **state) {
  (void)state;
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  assert_string_equal(o.target, "v3");
  tpurt_device_t *d = NULL;
  o.target = "v9";
  assert_int_equal(tpurt_device_create(&o, &d), TPURT_INVALID_ARGUMENT);
  assert_null(d);
  char err[256];
  assert_int_equal(tpurt_target_check("v3,vmem=1KiB", err, sizeof err), TPURT_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "vmem must be"));
  o.target = "v2-8,mxu=64x64";
  assert_int_equal(tpurt_device_create(&o, &d), TPURT_OK);
  assert_non_null(strstr(tpurt_device_target(d), "v2,chips=4,cores=2,mxus=1,mxu=64x64"));
  assert_string_equal(tpurt_device_message(d), "");
  tpurt_device_destroy(d);
  tpurt_device_destroy(NULL);
  assert_int_equal(tpurt_device_create(NULL, &d), TPURT_OK); /* defaults */
  tpurt_device_destroy(d);
}

static const char *addone = "; y = x + 1 for x f32[8,128]\n"
                            ".target v3\n.hbm 8192\n"
                            ".param x f32[8,128] @0\n.result y f32[8,128] @4096\n"
                            ".smem 0 4096, 1, 1, 1, 0, 0, 0, 0, 0, 0\n"
                            "  dmald dma0, s0, s0, s0, sem0\n"
                            "  wait vector, sem0, 1\n"
                            "  sli s1, 512\n"
                            "  vld v0, s0, 0, s1\n"
                            "  vimm v1, 1.0f\n"
                            "  vaddf v0, v0, v1\n"
                            "  vst v0, s0, 4096, s1, m0\n"
                            "  signal vector, sem1, 1\n"
                            "  wait dma0, sem1, 1\n"
                            "  sli s2, 4096\n"
                            "  dmast dma0, s2, s2, s0, sem2\n"
                            "  wait scalar, sem2, 1\n"
                            "  halt\n";

static void signature_checks_and_messages(void **state) {
  (void)state;
  tpurt_device_t *d;
  assert_int_equal(tpurt_device_create(NULL, &d), TPURT_OK);
  tpurt_program_t *p;
  assert_int_equal(tpurt_program_assemble(d, addone, strlen(addone), "addone.s", &p), TPURT_OK);
  assert_int_equal(tpurt_program_param_count(p), 1);
  assert_int_equal(tpurt_program_result_count(p), 1);
  tpurt_tensor_info_t info;
  assert_int_equal(tpurt_program_param_info(p, 0, &info), TPURT_OK);
  assert_string_equal(info.name, "x");
  assert_int_equal(info.dtype, TPURT_F32);
  assert_int_equal(info.bytes, 4096);
  assert_int_equal(tpurt_program_param_info(p, 1, &info), TPURT_INVALID_ARGUMENT);
  assert_int_equal(tpurt_program_result_info(p, 0, &info), TPURT_OK);
  assert_string_equal(info.name, "y");

  float x[8][128], y[8][128];
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 128; j++)
      x[i][j] = (float)(i * 128 + j);
  int64_t good[2] = {8, 128}, bad[2] = {8, 127};
  tpurt_buffer_t *bx = NULL, *by = NULL, *bb = NULL;
  assert_int_equal(tpurt_buffer_create(d, TPURT_F32, 2, good, x, 100, &bx), TPURT_INVALID_ARGUMENT);
  assert_non_null(strstr(tpurt_device_message(d), "given 100 bytes"));
  assert_int_equal(tpurt_buffer_create(d, TPURT_F32, 2, good, x, sizeof x, &bx), TPURT_OK);
  assert_int_equal(tpurt_buffer_create(d, TPURT_F32, 2, bad, NULL, 0, &bb), TPURT_OK);
  assert_int_equal(tpurt_program_execute(p, &bb, 1, &by, 1, NULL), TPURT_INVALID_ARGUMENT);
  assert_string_equal(tpurt_device_message(d),
                      "parameter 0 (x): expected f32[8,128], got f32[8,127]");
  assert_null(by);
  assert_int_equal(tpurt_program_execute(p, &bx, 1, &by, 0, NULL), TPURT_INVALID_ARGUMENT);
  assert_non_null(strstr(tpurt_device_message(d), "takes 1 parameters and 1 results"));
  tpurt_stats_t st;
  assert_int_equal(tpurt_program_execute(p, &bx, 1, &by, 1, &st), TPURT_OK);
  assert_int_equal(tpurt_buffer_read(by, y, 12), TPURT_INVALID_ARGUMENT);
  assert_int_equal(tpurt_buffer_read(by, y, sizeof y), TPURT_OK);
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 128; j++)
      assert_true(y[i][j] == x[i][j] + 1.0f);
  assert_int_equal(st.hbm_read_bytes, 4096);
  assert_int_equal(st.hbm_write_bytes, 4096);
  assert_string_equal(st.units[6].name, "dma0");
  assert_true(st.seconds > 0);

  /* Save, reload from the file, and run again: same results. */
  char path[] = "/tmp/tpurt_api_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(tpurt_program_save_file(p, path), TPURT_OK);
  tpurt_program_t *p2;
  assert_int_equal(tpurt_program_load_file(d, path, &p2), TPURT_OK);
  tpurt_buffer_t *by2;
  assert_int_equal(tpurt_program_execute(p2, &bx, 1, &by2, 1, NULL), TPURT_OK);
  float y2[8][128];
  assert_int_equal(tpurt_buffer_read(by2, y2, sizeof y2), TPURT_OK);
  assert_memory_equal(y, y2, sizeof y);
  char *text;
  assert_int_equal(tpurt_program_disassemble(p2, &text), TPURT_OK);
  assert_non_null(strstr(text, "  vaddf v0, v0, v1\n"));
  assert_non_null(strstr(text, ".param x f32[8,128] @0\n"));
  tpurt_free(d, text);
  tpurt_program_destroy(p2);
  remove(path);
  assert_int_equal(tpurt_program_load_file(d, "/nonexistent/x.tpub", &p2), TPURT_NOT_FOUND);
  assert_null(p2);
  assert_int_equal(tpurt_program_load(d, "TPUB", 4, &p2), TPURT_INVALID_PROGRAM);
  assert_non_null(strstr(tpurt_device_message(d), "too short"));
  assert_int_equal(tpurt_program_assemble(d, "halt\nfoo\n", 9, "x.s", &p2), TPURT_PARSE_ERROR);
  assert_non_null(strstr(tpurt_device_message(d), "x.s:2:1: error: unknown instruction 'foo'"));

  tpurt_buffer_destroy(by2);
  tpurt_buffer_destroy(bx);
  tpurt_buffer_destroy(by);
  tpurt_buffer_destroy(bb);
  tpurt_program_destroy(p);
  tpurt_program_destroy(NULL);
  tpurt_device_destroy(d);
}

/* A trace has one event per executed instruction, on its unit's row. */
static void trace_file_has_every_instruction(void **state) {
  (void)state;
  char path[] = "/tmp/tpurt_trace_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.trace_path = path;
  tpurt_device_t *d;
  assert_int_equal(tpurt_device_create(&o, &d), TPURT_OK);
  tpurt_program_t *p;
  assert_int_equal(tpurt_program_assemble(d, addone, strlen(addone), "a.s", &p), TPURT_OK);
  float x[8][128] = {{0}};
  int64_t dims[2] = {8, 128};
  tpurt_buffer_t *bx, *by;
  assert_int_equal(tpurt_buffer_create(d, TPURT_F32, 2, dims, x, sizeof x, &bx), TPURT_OK);
  tpurt_stats_t st;
  assert_int_equal(tpurt_program_execute(p, &bx, 1, &by, 1, &st), TPURT_OK);
  size_t n = 0;
  char *json = rt_read_file(path, &n);
  assert_non_null(json);
  int events = 0;
  for (char *q = json; (q = strstr(q, "\"ph\":\"X\"")); q++)
    events++;
  assert_int_equal(events, (int)st.instructions);
  assert_non_null(strstr(json, "{\"name\":\"vaddf v0, v0, v1\",\"ph\":\"X\",\"pid\":1,\"tid\":1,"));
  assert_non_null(strstr(json, "\"args\":{\"name\":\"dma0\"}"));
  assert_int_equal(json[0], '[');
  assert_int_equal(json[n - 2], ']');
  free(json);
  remove(path);
  tpurt_buffer_destroy(bx);
  tpurt_buffer_destroy(by);
  tpurt_program_destroy(p);
  tpurt_device_destroy(d);
}

/* ---- fail-the-Nth allocation ------------------------------------------ */

typedef struct counting {
  long live, calls, fail_at; /* fail_at < 0: never */
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

/* The whole flow; returns 1 when it got to the end. */
static int flow(counting *c) {
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
  tpurt_buffer_t *bx = NULL, *by = NULL;
  char *text = NULL;
  float x[8][128] = {{0}};
  int64_t dims[2] = {8, 128};
  if ((st = tpurt_program_assemble(d, addone, strlen(addone), "a.s", &p))) goto out;
  if ((st = tpurt_buffer_create(d, TPURT_F32, 2, dims, x, sizeof x, &bx))) goto out;
  if ((st = tpurt_program_execute(p, &bx, 1, &by, 1, NULL))) goto out;
  if ((st = tpurt_program_disassemble(p, &text))) goto out;
  done = 1;
out:
  if (!done) {
    assert_int_equal(st, TPURT_OUT_OF_MEMORY);
    assert_true(strlen(tpurt_device_message(d)) > 0);
  }
  tpurt_free(d, text);
  tpurt_buffer_destroy(bx);
  tpurt_buffer_destroy(by);
  tpurt_program_destroy(p);
  tpurt_device_destroy(d);
  return done;
}

static void every_allocation_failure_is_clean(void **state) {
  (void)state;
  counting c = {0, 0, -1};
  assert_int_equal(flow(&c), 1);
  assert_int_equal(c.live, 0);
  long total = c.calls;
  assert_true(total > 10);
  for (long n = 0; n < total; n++) {
    counting f = {0, 0, n};
    int done = flow(&f);
    assert_int_equal(f.live, 0); /* nothing leaked */
    assert_int_equal(done, 0);   /* every allocation is checked */
  }
}

/* An allocator that refuses anything over 1 MiB and counts the bytes it
 * was asked for: loading a file must look at it before allocating. */
typedef struct capped {
  size_t asked;
} capped;
static void *cap_alloc(void *user, size_t n) {
  capped *c = user;
  c->asked += n;
  return n > ((size_t)1 << 20) ? NULL : malloc(n);
}
static void cap_free(void *user, void *p) {
  (void)user;
  free(p);
}

/* tpurt_program_load_file checks what the path is first: a directory, a
 * file without the .tpub magic, one whose header size is not its size,
 * and one over 2 GiB (sparse) are errors that say so, before anything the
 * size of the file is allocated. */
static void load_file_checks_before_reading(void **state) {
  (void)state;
  capped c = {0};
  tpurt_allocator_t a = {cap_alloc, cap_free, &c};
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.allocator = &a;
  tpurt_device_t *d;
  assert_int_equal(tpurt_device_create(&o, &d), TPURT_OK);
  size_t base = c.asked;
  char dir[] = "/tmp/tpurt_load_XXXXXX";
  assert_non_null(mkdtemp(dir));
  tpurt_program_t *p = (tpurt_program_t *)1;
  assert_int_equal(tpurt_program_load_file(d, dir, &p), TPURT_IO_ERROR);
  assert_null(p);
  assert_non_null(strstr(tpurt_device_message(d), "is a directory"));
  char path[64];
  snprintf(path, sizeof path, "%s/m.hlo", dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs("HloModule m\n", f);
  fclose(f);
  assert_int_equal(tpurt_program_load_file(d, path, &p), TPURT_INVALID_PROGRAM);
  assert_non_null(strstr(tpurt_device_message(d), "does not start with the TPUB magic"));
  /* 1 GiB (sparse) with the magic and a header claiming 64 bytes */
  static const unsigned char head[24] = {'T', 'P', 'U', 'B', '\r', '\n', 0x1a, '\n', 1, 0, 1, 0,
                                         1, 0, 0, 0, 64};
  f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(head, 1, sizeof head, f), sizeof head);
  assert_int_equal(fseek(f, (1L << 30) - 1, SEEK_SET), 0);
  fputc(0, f);
  fclose(f);
  assert_int_equal(tpurt_program_load_file(d, path, &p), TPURT_INVALID_PROGRAM);
  assert_non_null(strstr(tpurt_device_message(d), "header says 64 bytes, the file has 1073741824"));
  /* 3 GiB (sparse): over the limit */
  assert_int_equal(truncate(path, 3L << 30), 0);
  assert_int_equal(tpurt_program_load_file(d, path, &p), TPURT_RESOURCE_EXHAUSTED);
  assert_non_null(strstr(tpurt_device_message(d), "file too large (3221225472 bytes"));
  assert_true(c.asked - base < 4096); /* nothing the size of the file was asked for */
  remove(path);
  rmdir(dir);
  tpurt_device_destroy(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(versions_and_status_strings),
      cmocka_unit_test(device_targets),
      cmocka_unit_test(signature_checks_and_messages),
      cmocka_unit_test(trace_file_has_every_instruction),
      cmocka_unit_test(every_allocation_failure_is_clean),
      cmocka_unit_test(load_file_checks_before_reading),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
