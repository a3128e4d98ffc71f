/* test_cpu_device.c: libtpurt-cpu through the public API only: the same
 * HLO text loaded on device "v3" (compiled to a .tpub at load) and on
 * device "cpu" (JIT-compiled), results checked bit for bit against the
 * reference evaluator (ir_eval: TPU numerics for v3 and cpu,numerics=tpu,
 * default numerics for cpu,numerics=strict); signatures, metrics, "auto",
 * and the error cases (bad device specs, wrong shapes, NULL program,
 * programs of the other device kind, parse errors), and a bitcast-convert
 * of a computed value as the result. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "frontend/frontend.h"
#include "rt_test.h"

/* relu(x @ w + b) and its row sums: a tuple of two results. */
static const char mlp_hlo[] =
    "HloModule mlp\n"
    "add_f {\n"
    "  p0 = f32[] parameter(0)\n"
    "  p1 = f32[] parameter(1)\n"
    "  ROOT c = f32[] add(p0, p1)\n"
    "}\n"
    "ENTRY e {\n"
    "  x = f32[4,8] parameter(0)\n"
    "  w = f32[8,16] parameter(1)\n"
    "  b = f32[16] parameter(2)\n"
    "  d = f32[4,16] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  bb = f32[4,16] broadcast(b), dimensions={1}\n"
    "  s = f32[4,16] add(d, bb)\n"
    "  z = f32[] constant(0)\n"
    "  zb = f32[4,16] broadcast(z), dimensions={}\n"
    "  r = f32[4,16] maximum(s, zb)\n"
    "  rs = f32[4] reduce(r, z), dimensions={1}, to_apply=add_f\n"
    "  ROOT t = (f32[4,16], f32[4]) tuple(r, rs)\n"
    "}\n";

enum { NX = 4 * 8, NW = 8 * 16, NB = 16, NR = 4 * 16, NS = 4 };

typedef struct inputs {
  float x[NX], w[NW], b[NB];
} inputs;

static void make_inputs(inputs *in, uint64_t seed) {
  for (int i = 0; i < NX; i++) in->x[i] = rt_randf(&seed, -1, 1);
  for (int i = 0; i < NW; i++) in->w[i] = rt_randf(&seed, -1, 1);
  for (int i = 0; i < NB; i++) in->b[i] = rt_randf(&seed, -0.5f, 0.5f);
}

/* The oracle: ir_eval on the parsed (unoptimised) module. */
static void reference(const inputs *in, bool tpu_numerics, float r[NR], float s[NS]) {
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo("mlp.hlo", mlp_hlo, sizeof mlp_hlo - 1, d);
  assert_non_null(m);
  arena *a = arena_create();
  const ir_comp *c = &m->comps.v[m->entry];
  const float *src[3] = {in->x, in->w, in->b};
  ir_literal *args[3];
  for (int p = 0; p < 3; p++) {
    args[p] = ir_literal_create(a, c->insts.v[c->params[p]].shape);
    memcpy(args[p]->data, src[p], args[p]->nbytes);
  }
  ir_eval_options o;
  ir_eval_options_init(&o);
  o.tpu_numerics = tpu_numerics;
  ir_literal *out;
  char err[256];
  assert_int_equal(ir_eval(m, &o, args, 3, a, &out, err, sizeof err), ST_OK);
  memcpy(r, out->elems[0]->data, sizeof(float) * NR);
  memcpy(s, out->elems[1]->data, sizeof(float) * NS);
  arena_destroy(a);
  ir_module_destroy(m);
  diag_destroy(d);
}

static tpurt_device_t *device(const char *spec) {
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = spec;
  tpurt_device_t *dev = NULL;
  char err[256] = "";
  if (tpurt_device_create(&o, &dev) != TPURT_OK) {
    tpurt_target_check(spec, err, sizeof err);
    fail_msg("device %s: %s", spec, err);
  }
  return dev;
}

static tpurt_program_t *load_mlp(tpurt_device_t *dev) {
  tpurt_program_t *p = NULL;
  tpurt_status_t st = tpurt_program_load(dev, mlp_hlo, sizeof mlp_hlo - 1, &p);
  if (st != TPURT_OK) fail_msg("load on %s: %s", tpurt_device_target(dev), tpurt_device_message(dev));
  return p;
}

/* Runs the MLP on dev; results into r, s. */
static void run_mlp(tpurt_device_t *dev, tpurt_program_t *p, const inputs *in, float r[NR],
                    float s[NS], tpurt_stats_t *st) {
  int64_t dx[2] = {4, 8}, dw[2] = {8, 16}, db[1] = {16};
  tpurt_buffer_t *args[3] = {0}, *res[2] = {0};
  assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 2, dx, in->x, sizeof in->x, &args[0]), TPURT_OK);
  assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 2, dw, in->w, sizeof in->w, &args[1]), TPURT_OK);
  assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 1, db, in->b, sizeof in->b, &args[2]), TPURT_OK);
  tpurt_status_t rc = tpurt_program_execute(p, args, 3, res, 2, st);
  if (rc != TPURT_OK) fail_msg("execute on %s: %s", tpurt_device_target(dev), tpurt_device_message(dev));
  assert_int_equal(tpurt_buffer_read(res[0], r, sizeof(float) * NR), TPURT_OK);
  assert_int_equal(tpurt_buffer_read(res[1], s, sizeof(float) * NS), TPURT_OK);
  for (int i = 0; i < 3; i++) tpurt_buffer_destroy(args[i]);
  for (int i = 0; i < 2; i++) tpurt_buffer_destroy(res[i]);
}

static void assert_bits_equal(const float *a, const float *b, int n, const char *what) {
  for (int i = 0; i < n; i++)
    if (memcmp(&a[i], &b[i], sizeof(float)) != 0)
      fail_msg("%s[%d]: %.9g vs reference %.9g", what, i, (double)a[i], (double)b[i]);
}

/* The same text on every device kind, each against its numerics' oracle. */
static void same_program_v3_and_cpu(void **state) {
  (void)state;
  static const struct {
    const char *spec;
    bool tpu_numerics;
  } cases[] = {{"v3", true}, {"cpu,threads=1,numerics=strict", false},
               {"cpu,threads=2,numerics=strict", false}, {"cpu,numerics=tpu", true},
               {"v2", true}};
  inputs in;
  make_inputs(&in, 7);
  float want[2][NR], wants[2][NS];
  reference(&in, false, want[0], wants[0]);
  reference(&in, true, want[1], wants[1]);
  /* The two oracles differ (bf16 MXU operands), so each check can fail. */
  assert_true(memcmp(want[0], want[1], sizeof want[0]) != 0);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    tpurt_device_t *dev = device(cases[k].spec);
    tpurt_program_t *p = load_mlp(dev);
    float r[NR], s[NS];
    tpurt_stats_t st;
    for (int rep = 0; rep < 2; rep++) { /* programs run any number of times */
      run_mlp(dev, p, &in, r, s, &st);
      assert_bits_equal(r, want[cases[k].tpu_numerics], NR, cases[k].spec);
      assert_bits_equal(s, wants[cases[k].tpu_numerics], NS, cases[k].spec);
    }
    int cpu = strncmp(cases[k].spec, "cpu", 3) == 0;
    assert_string_equal(tpurt_device_platform(dev), cpu ? "cpu" : "tpu");
    if (cpu) { /* host seconds, no cycles */
      assert_int_equal(st.cycles, 0);
      assert_int_equal(st.mxu_macs, 0);
      assert_true(st.seconds > 0 && st.seconds < 10);
    } else {
      assert_true(st.cycles > 0);
      assert_int_equal(st.mxu_macs % (4 * 8 * 16), 0); /* padding included */
      assert_true(st.mxu_macs >= 4 * 8 * 16);
    }
    double v;
    assert_int_equal(tpurt_program_metric(p, "flops", &v), TPURT_OK);
    assert_true(v == 2.0 * 4 * 8 * 16); /* 2 x M x K x N, on both kinds */
    assert_int_equal(tpurt_program_metric(p, "executions", &v), TPURT_OK);
    assert_true(v == 2);
    assert_int_equal(tpurt_program_metric(p, "compile_seconds", &v), TPURT_OK);
    assert_true(v > 0 && v < 60);
    assert_int_equal(tpurt_program_metric(p, "host_seconds", &v), TPURT_OK);
    assert_true(v > 0 && v < 60);
    assert_int_equal(tpurt_program_metric(p, "cycles", &v), TPURT_NOT_FOUND);
    assert_non_null(strstr(tpurt_device_message(dev), "unknown metric 'cycles'"));
    tpurt_program_destroy(p);
    tpurt_device_destroy(dev);
  }
}

/* The one *.tjo entry of a cache directory: its inode and size; the
 * entry count in *n. */
static void cache_entry(const char *dir, int *n, struct stat *st) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  *n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l < 5 || strcmp(de->d_name + l - 4, ".tjo") != 0) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    assert_int_equal(stat(path, st), 0);
    ++*n;
  }
  closedir(d);
}

/* One load and two runs on a fresh device of spec; bits against want. */
static void cached_load(const char *spec, const inputs *in, const float *want, const float *wants) {
  tpurt_device_t *dev = device(spec);
  tpurt_program_t *p = load_mlp(dev);
  float r[NR], s[NS];
  tpurt_stats_t st;
  run_mlp(dev, p, in, r, s, &st);
  assert_bits_equal(r, want, NR, spec);
  assert_bits_equal(s, wants, NS, spec);
  tpurt_program_destroy(p);
  tpurt_device_destroy(dev);
}

/* libtpurt-cpu's devices take the compile cache in their spec (cache=DIR,
 * cache=off): the first load stores one entry, the next device loads it
 * (the entry is left as it was: same inode), a truncated entry is
 * recompiled and replaced; every run gives the evaluator's bits. */
static void cpu_compile_cache(void **state) {
  (void)state;
  char dir[] = "/tmp/tpucc-rt-cache-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char spec[128];
  snprintf(spec, sizeof spec, "cpu,threads=1,numerics=strict,cache=%s", dir);
  inputs in;
  make_inputs(&in, 11);
  float want[NR], wants[NS];
  reference(&in, false, want, wants);
  int n;
  struct stat a, b;
  cached_load(spec, &in, want, wants);
  cache_entry(dir, &n, &a);
  assert_int_equal(n, 1);
  cached_load(spec, &in, want, wants);
  cache_entry(dir, &n, &b);
  assert_int_equal(n, 1);
  assert_true(a.st_ino == b.st_ino && a.st_size == b.st_size); /* a hit: not rewritten */
  char path[512];
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *de;
  while ((de = readdir(d)))
    if (de->d_name[0] != '.') snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
  closedir(d);
  assert_int_equal(truncate(path, a.st_size / 2), 0);
  cached_load(spec, &in, want, wants);
  cache_entry(dir, &n, &b);
  assert_int_equal(n, 1);
  assert_true(b.st_size == a.st_size); /* replaced by a whole entry */
  cached_load("cpu,threads=1,numerics=strict,cache=off", &in, want, wants);
  cache_entry(dir, &n, &b);
  assert_int_equal(n, 1);
  assert_int_equal(unlink(path), 0);
  assert_int_equal(rmdir(dir), 0);
}

/* Both kinds describe the program alike. */
static void signatures_agree(void **state) {
  (void)state;
  tpurt_device_t *dv = device("v3"), *dc = device("cpu");
  tpurt_program_t *pv = load_mlp(dv), *pc = load_mlp(dc);
  assert_int_equal(tpurt_program_param_count(pc), 3);
  assert_int_equal(tpurt_program_result_count(pc), 2);
  assert_int_equal(tpurt_program_param_count(pv), 3);
  assert_int_equal(tpurt_program_result_count(pv), 2);
  static const char *pn[] = {"x", "w", "b"};
  for (size_t i = 0; i < 3; i++) {
    tpurt_tensor_info_t a, b;
    assert_int_equal(tpurt_program_param_info(pv, i, &a), TPURT_OK);
    assert_int_equal(tpurt_program_param_info(pc, i, &b), TPURT_OK);
    assert_string_equal(a.name, pn[i]);
    assert_string_equal(b.name, pn[i]);
    assert_int_equal(a.dtype, b.dtype);
    assert_int_equal(a.rank, b.rank);
    assert_memory_equal(a.dims, b.dims, sizeof a.dims);
    assert_int_equal(a.bytes, b.bytes);
  }
  tpurt_tensor_info_t r;
  assert_int_equal(tpurt_program_result_info(pc, 1, &r), TPURT_OK);
  assert_string_equal(r.name, "result.1");
  assert_int_equal(r.rank, 1);
  assert_int_equal(r.dims[0], 4);
  assert_int_equal(r.bytes, 16);
  assert_int_equal(tpurt_program_result_info(pc, 2, &r), TPURT_INVALID_ARGUMENT);
  assert_int_equal(tpurt_program_op_count(pc), 1);
  tpurt_op_info_t oi;
  assert_int_equal(tpurt_program_op_info(pc, 0, &oi), TPURT_OK);
  assert_string_equal(oi.name, "(program)");
  assert_int_equal(oi.flops, 2 * 4 * 8 * 16);
  tpurt_program_destroy(pv);
  tpurt_program_destroy(pc);
  tpurt_device_destroy(dv);
  tpurt_device_destroy(dc);
}

/* Text compiled on a TPU device saves as a .tpub that loads again; the cpu
 * device refuses that .tpub, assembly and per-op profiles. */
static void program_kinds(void **state) {
  (void)state;
  tpurt_device_t *dv = device("v3"), *dc = device("cpu,threads=1");
  tpurt_program_t *pv = load_mlp(dv), *pc = load_mlp(dc), *p2 = NULL;
  const char *path = "test_cpu_device_mlp.tpub";
  assert_int_equal(tpurt_program_save_file(pv, path), TPURT_OK);
  assert_int_equal(tpurt_program_load_file(dv, path, &p2), TPURT_OK);
  double v;
  assert_int_equal(tpurt_program_metric(p2, "compile_seconds", &v), TPURT_NOT_FOUND);
  assert_int_equal(tpurt_program_metric(p2, "flops", &v), TPURT_OK); /* from the op table */
  assert_true(v == 2.0 * 4 * 8 * 16);
  inputs in;
  make_inputs(&in, 11);
  float r1[NR], s1[NS], r2[NR], s2[NS];
  run_mlp(dv, pv, &in, r1, s1, NULL);
  run_mlp(dv, p2, &in, r2, s2, NULL);
  assert_bits_equal(r2, r1, NR, "reloaded .tpub");
  tpurt_program_destroy(p2);

  p2 = (tpurt_program_t *)1;
  assert_int_equal(tpurt_program_load_file(dc, path, &p2), TPURT_UNSUPPORTED);
  assert_null(p2);
  assert_non_null(strstr(tpurt_device_message(dc), "a .tpub is a TPU program"));
  assert_int_equal(tpurt_program_assemble(dc, "halt\n", 5, "a.s", &p2), TPURT_UNSUPPORTED);
  assert_non_null(strstr(tpurt_device_message(dc), "not TPU assembly"));
  assert_int_equal(tpurt_program_save_file(pc, path), TPURT_UNSUPPORTED);
  char *text = NULL;
  assert_int_equal(tpurt_program_disassemble(pc, &text), TPURT_UNSUPPORTED);
  assert_null(text);
  remove(path);

  int64_t dx[2] = {4, 8}, dw[2] = {8, 16}, db[1] = {16};
  tpurt_buffer_t *args[3] = {0}, *res[2] = {(tpurt_buffer_t *)1, (tpurt_buffer_t *)1};
  assert_int_equal(tpurt_buffer_create(dc, TPURT_F32, 2, dx, in.x, sizeof in.x, &args[0]), TPURT_OK);
  assert_int_equal(tpurt_buffer_create(dc, TPURT_F32, 2, dw, in.w, sizeof in.w, &args[1]), TPURT_OK);
  assert_int_equal(tpurt_buffer_create(dc, TPURT_F32, 1, db, in.b, sizeof in.b, &args[2]), TPURT_OK);
  tpurt_op_stats_t ops[1];
  assert_int_equal(tpurt_program_execute_profile(pc, args, 3, res, 2, NULL, NULL, ops),
                   TPURT_UNSUPPORTED);
  assert_null(res[0]);
  assert_non_null(strstr(tpurt_device_message(dc), "per-op profiles need a TPU device"));
  for (int i = 0; i < 3; i++) tpurt_buffer_destroy(args[i]);
  tpurt_program_destroy(pv);
  tpurt_program_destroy(pc);
  tpurt_device_destroy(dv);
  tpurt_device_destroy(dc);
}

/* Malformed device specs, each with its reason. */
static void bad_device_specs(void **state) {
  (void)state;
  static const struct {
    const char *spec, *why;
  } cases[] = {{"v9", "v9"},
               {"cpu,threads=0", "threads=0: expected a count in 1..1024"},
               {"cpu,threads=x", "threads=x"},
               {"cpu,numerics=fast", "numerics=fast: expected native, strict or tpu"},
               {"cpu,color=red", "unknown option 'color'"},
               {"cpu,threads", "'threads' is not key=value"},
               {"cpux", "cpux"},
               {"", ""}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    tpurt_device_options_t o;
    tpurt_device_options_init(&o);
    o.target = cases[k].spec;
    tpurt_device_t *d = (tpurt_device_t *)1;
    assert_int_equal(tpurt_device_create(&o, &d), TPURT_INVALID_ARGUMENT);
    assert_null(d);
    char err[256] = "";
    assert_int_equal(tpurt_target_check(cases[k].spec, err, sizeof err), TPURT_INVALID_ARGUMENT);
    if (!strstr(err, cases[k].why)) fail_msg("%s: reason '%s'", cases[k].spec, err);
  }
  char err[256];
  assert_int_equal(tpurt_target_check("cpu,threads=3,numerics=tpu", err, sizeof err), TPURT_OK);
  tpurt_device_t *d = device("cpu,numerics=strict,threads=3");
  assert_string_equal(tpurt_device_target(d), "cpu,threads=3,numerics=strict");
  tpurt_device_destroy(d);
}

/* "auto": TPURT_TARGET when set, else the cpu device. */
static void auto_device(void **state) {
  (void)state;
  unsetenv("TPURT_TARGET");
  tpurt_device_t *d = device("auto");
  assert_string_equal(tpurt_device_platform(d), "cpu");
  tpurt_device_destroy(d);
  setenv("TPURT_TARGET", "v2,mxu=64x64", 1);
  d = device("auto");
  assert_string_equal(tpurt_device_platform(d), "tpu");
  assert_non_null(strstr(tpurt_device_target(d), "mxu=64x64"));
  tpurt_device_destroy(d);
  setenv("TPURT_TARGET", "v7", 1);
  char err[256] = "";
  assert_int_equal(tpurt_target_check("auto", err, sizeof err), TPURT_INVALID_ARGUMENT);
  assert_non_null(strstr(err, "auto is TPURT_TARGET='v7'"));
  unsetenv("TPURT_TARGET");
}

/* Wrong shapes, counts, foreign buffers and a NULL program: the same
 * statuses and messages on both kinds. */
static void execute_errors(void **state) {
  (void)state;
  const char *specs[] = {"v3", "cpu,threads=1"};
  tpurt_device_t *other = device("cpu,threads=1");
  for (int k = 0; k < 2; k++) {
    tpurt_device_t *dev = device(specs[k]);
    tpurt_program_t *p = load_mlp(dev);
    inputs in;
    make_inputs(&in, 3);
    int64_t dxt[2] = {8, 4}, dw[2] = {8, 16}, db[1] = {16};
    tpurt_buffer_t *args[3] = {0}, *res[2] = {0}, *foreign = NULL;
    assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 2, dxt, in.x, sizeof in.x, &args[0]), TPURT_OK);
    assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 2, dw, in.w, sizeof in.w, &args[1]), TPURT_OK);
    assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 1, db, in.b, sizeof in.b, &args[2]), TPURT_OK);
    tpurt_stats_t st;
    assert_int_equal(tpurt_program_execute(p, args, 3, res, 2, &st), TPURT_INVALID_ARGUMENT);
    assert_string_equal(tpurt_device_message(dev), "parameter 0 (x): expected f32[4,8], got f32[8,4]");
    assert_null(res[0]);
    assert_int_equal(tpurt_program_execute(p, args, 2, res, 2, &st), TPURT_INVALID_ARGUMENT);
    assert_string_equal(tpurt_device_message(dev),
                        "program takes 3 parameters and 2 results, given 2 and 2");
    int64_t dx[2] = {4, 8};
    assert_int_equal(tpurt_buffer_create(other, TPURT_F32, 2, dx, in.x, sizeof in.x, &foreign), TPURT_OK);
    tpurt_buffer_t *mixed[3] = {foreign, args[1], args[2]};
    assert_int_equal(tpurt_program_execute(p, mixed, 3, res, 2, &st), TPURT_INVALID_ARGUMENT);
    assert_non_null(strstr(tpurt_device_message(dev), "from another device"));
    /* Executing before a program was loaded. */
    tpurt_program_t *none = NULL;
    assert_int_equal(tpurt_program_load(dev, "", 0, &none), TPURT_PARSE_ERROR);
    assert_null(none);
    assert_int_equal(tpurt_program_execute(none, args, 3, res, 2, &st), TPURT_INVALID_ARGUMENT);
    double v;
    assert_int_equal(tpurt_program_metric(none, "flops", &v), TPURT_INVALID_ARGUMENT);
    assert_int_equal(tpurt_program_param_count(none), 0);
    assert_int_equal(tpurt_program_metric(p, "host_seconds", &v), TPURT_OK);
    assert_true(v == 0); /* nothing ran successfully yet */
    tpurt_buffer_destroy(foreign);
    for (int i = 0; i < 3; i++) tpurt_buffer_destroy(args[i]);
    tpurt_program_destroy(p);
    tpurt_device_destroy(dev);
  }
  tpurt_device_destroy(other);
}

/* Bad text: located diagnostics as the message, on both kinds. */
static void parse_errors(void **state) {
  (void)state;
  static const char bad[] = "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n"
                            "  ROOT y = f32[4] frobnicate(x)\n}\n";
  const char *specs[] = {"v3", "cpu"};
  for (int k = 0; k < 2; k++) {
    tpurt_device_t *dev = device(specs[k]);
    tpurt_program_t *p = (tpurt_program_t *)1;
    assert_int_equal(tpurt_program_load(dev, bad, sizeof bad - 1, &p), TPURT_PARSE_ERROR);
    assert_null(p);
    if (!strstr(tpurt_device_message(dev), "<memory>:4:"))
      fail_msg("%s: message '%s'", specs[k], tpurt_device_message(dev));
    assert_non_null(strstr(tpurt_device_message(dev), "frobnicate"));
    /* Binary junk that is not a .tpub is text to the parser, and rejected. */
    static const unsigned char junk[] = {0x7f, 'E', 'L', 'F', 0, 1, 2, 3};
    assert_int_equal(tpurt_program_load(dev, junk, sizeof junk, &p), TPURT_PARSE_ERROR);
    assert_int_equal(tpurt_program_load_file(dev, "/nonexistent/m.hlo", &p), TPURT_NOT_FOUND);
    tpurt_device_destroy(dev);
  }
}

/* A program's parameters and results cross tpurt buffers of up to
 * TPURT_MAX_RANK (12, the IR's limit) dims: a rank-12 signature loads on
 * both kinds of device; rank 13 is refused by the parser, with its
 * location, before any signature is built. */
static void rank12_parameter_rank13_refused(void **state) {
  (void)state;
  static const char ok[] = "HloModule m\nENTRY e {\n"
                           "  ROOT p = f32[1,1,1,1,1,1,1,1,1,1,1,2] parameter(0)\n}\n";
  static const char bad[] = "HloModule m\nENTRY e {\n"
                            "  ROOT p = f32[1,1,1,1,1,1,1,1,1,1,1,1,2] parameter(0)\n}\n";
  const char *specs[] = {"v3", "cpu"};
  for (int k = 0; k < 2; k++) {
    tpurt_device_t *dev = device(specs[k]);
    tpurt_program_t *p = NULL;
    assert_int_equal(tpurt_program_load(dev, ok, sizeof ok - 1, &p), TPURT_OK);
    tpurt_tensor_info_t ti;
    assert_int_equal(tpurt_program_param_info(p, 0, &ti), TPURT_OK);
    assert_int_equal(ti.rank, 12);
    assert_int_equal(ti.dims[11], 2);
    tpurt_program_destroy(p);
    p = (tpurt_program_t *)1;
    assert_int_not_equal(tpurt_program_load(dev, bad, sizeof bad - 1, &p), TPURT_OK);
    assert_null(p);
    if (!strstr(tpurt_device_message(dev), ":3:"))
      fail_msg("%s: message '%s'", specs[k], tpurt_device_message(dev));
    tpurt_device_destroy(dev);
  }
}

/* Tuple parameters flatten into one tensor per leaf on the cpu. */
static void cpu_tuple_parameter(void **state) {
  (void)state;
  static const char hlo[] = "HloModule tp\nENTRY e {\n"
                            "  p = (f32[3], s32[2]) parameter(0)\n"
                            "  a = f32[3] get-tuple-element(p), index=0\n"
                            "  i = s32[2] get-tuple-element(p), index=1\n"
                            "  two = f32[] constant(2)\n"
                            "  tb = f32[3] broadcast(two), dimensions={}\n"
                            "  ROOT r = (f32[3], s32[2]) tuple(multiply(a, tb), add(i, i))\n}\n";
  tpurt_device_t *dev = device("cpu");
  tpurt_program_t *p = NULL;
  if (tpurt_program_load(dev, hlo, sizeof hlo - 1, &p) != TPURT_OK)
    fail_msg("%s", tpurt_device_message(dev));
  assert_int_equal(tpurt_program_param_count(p), 2);
  tpurt_tensor_info_t t;
  assert_int_equal(tpurt_program_param_info(p, 1, &t), TPURT_OK);
  assert_string_equal(t.name, "p.1");
  assert_int_equal(t.dtype, TPURT_S32);
  float a[3] = {1.5f, -2, 3};
  int32_t iv[2] = {7, -40};
  int64_t d3 = 3, d2 = 2;
  tpurt_buffer_t *args[2], *res[2];
  assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 1, &d3, a, sizeof a, &args[0]), TPURT_OK);
  assert_int_equal(tpurt_buffer_create(dev, TPURT_S32, 1, &d2, iv, sizeof iv, &args[1]), TPURT_OK);
  assert_int_equal(tpurt_program_execute(p, args, 2, res, 2, NULL), TPURT_OK);
  float ra[3];
  int32_t ri[2];
  assert_int_equal(tpurt_buffer_read(res[0], ra, sizeof ra), TPURT_OK);
  assert_int_equal(tpurt_buffer_read(res[1], ri, sizeof ri), TPURT_OK);
  assert_true(ra[0] == 3.0f && ra[1] == -4.0f && ra[2] == 6.0f);
  assert_int_equal(ri[0], 14);
  assert_int_equal(ri[1], -80);
  for (int i = 0; i < 2; i++) {
    tpurt_buffer_destroy(args[i]);
    tpurt_buffer_destroy(res[i]);
  }
  tpurt_program_destroy(p);
  tpurt_device_destroy(dev);
}

/* A bitcast-convert of a computed value as the result, loaded as text on
 * both kinds (the v3 lowering computes its operand in registers and gave
 * the root no buffer): the bits of -x read as s32. */
/* Module text loaded on a TPU device goes through the pass pipeline for
 * that device: a max over rows of 20000 f32 fuses into its user (8 rows
 * take 625 KiB, within 1/16 of v2's 16 MiB of VMEM) but not within
 * vmem=8MiB, so the two programs have different op tables. */
static const char rows_hlo[] =
    "HloModule rows\n"
    "max_f {\n"
    "  p0 = f32[] parameter(0)\n"
    "  p1 = f32[] parameter(1)\n"
    "  ROOT m = f32[] maximum(p0, p1)\n"
    "}\n"
    "ENTRY e {\n"
    "  x = f32[8,20000] parameter(0)\n"
    "  lo = f32[] constant(-inf)\n"
    "  m = f32[8] reduce(x, lo), dimensions={1}, to_apply=max_f\n"
    "  mb = f32[8,20000] broadcast(m), dimensions={0}\n"
    "  ROOT y = f32[8,20000] subtract(x, mb)\n"
    "}\n";

static size_t fusions_on(const char *spec) {
  tpurt_device_t *dev = device(spec);
  tpurt_program_t *p = NULL;
  assert_int_equal(tpurt_program_load(dev, rows_hlo, sizeof rows_hlo - 1, &p), TPURT_OK);
  size_t n = 0;
  for (size_t i = 0; i < tpurt_program_op_count(p); i++) {
    tpurt_op_info_t o;
    assert_int_equal(tpurt_program_op_info(p, i, &o), TPURT_OK);
    print_message("%s: op %zu %s (%s)\n", spec, i, o.name, o.kind);
    n += strcmp(o.kind, "fusion") == 0;
  }
  tpurt_program_destroy(p);
  tpurt_device_destroy(dev);
  return n;
}

static void tpu_text_fuses_for_the_device(void **state) {
  (void)state;
  assert_int_equal(fusions_on("v2"), 1);
  assert_int_equal(fusions_on("v2,vmem=8MiB"), 2);
}

static void bitcast_root_of_computed_value(void **state) {
  (void)state;
  static const char hlo[] = "HloModule m\nENTRY e {\n  p0 = f32[4] parameter(0)\n"
                            "  n = f32[4] negate(p0)\n  ROOT r = s32[4] bitcast-convert(n)\n}\n";
  const char *specs[] = {"v3", "cpu"};
  float x[4] = {1, -2, 3, -4};
  int64_t d4 = 4;
  for (int k = 0; k < 2; k++) {
    tpurt_device_t *dev = device(specs[k]);
    tpurt_program_t *p = NULL;
    if (tpurt_program_load(dev, hlo, sizeof hlo - 1, &p) != TPURT_OK)
      fail_msg("%s: %s", specs[k], tpurt_device_message(dev));
    tpurt_buffer_t *arg, *res;
    assert_int_equal(tpurt_buffer_create(dev, TPURT_F32, 1, &d4, x, sizeof x, &arg), TPURT_OK);
    if (tpurt_program_execute(p, &arg, 1, &res, 1, NULL) != TPURT_OK)
      fail_msg("%s: %s", specs[k], tpurt_device_message(dev));
    int32_t got[4];
    assert_int_equal(tpurt_buffer_read(res, got, sizeof got), TPURT_OK);
    for (int i = 0; i < 4; i++) {
      float nx = -x[i];
      int32_t want;
      memcpy(&want, &nx, sizeof want);
      assert_int_equal(got[i], want);
    }
    tpurt_buffer_destroy(arg);
    tpurt_buffer_destroy(res);
    tpurt_program_destroy(p);
    tpurt_device_destroy(dev);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(same_program_v3_and_cpu), cmocka_unit_test(signatures_agree),
      cmocka_unit_test(program_kinds),           cmocka_unit_test(bad_device_specs),
      cmocka_unit_test(auto_device),             cmocka_unit_test(execute_errors),
      cmocka_unit_test(parse_errors), cmocka_unit_test(rank12_parameter_rank13_refused),            cmocka_unit_test(cpu_tuple_parameter),
      cmocka_unit_test(bitcast_root_of_computed_value),
      cmocka_unit_test(tpu_text_fuses_for_the_device), cmocka_unit_test(cpu_compile_cache),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
