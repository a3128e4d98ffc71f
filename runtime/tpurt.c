/* tpurt.c: libtpurt's public API (include/tpurt.h) over the ISA tools
 * (runtime/isa) and the emulator (runtime/emu).
 *
 * Built twice: as libtpurt (TPU devices, .tpub programs; C library only)
 * and, with TPURT_HAVE_CPU, as libtpurt-cpu, which adds the "cpu" device
 * and module text (HLO, .tg) as programs on every device through the
 * compiler (backend/llvm/rtdev.h). docs/runtime.md describes both. */
#include "tpurt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "asm.h"
#include "emu.h"
#include "isa.h"
#include "target.h"
#include "tpub.h"
#include "profile.h"
#ifdef TPURT_HAVE_CPU
#include "backend/llvm/rtdev.h"
#endif

_Static_assert(TPURT_MAX_UNITS == ISA_UNIT_COUNT, "unit numbering");
_Static_assert(TPURT_MAX_RANK == TPUB_MAX_RANK, "rank limit");

enum { MSG_BYTES = 4096 };
#define DEFAULT_CYCLE_LIMIT 1000000000ull

struct tpurt_device {
  rt_allocator alloc;
  tgt_target target;
  char target_text[512];
  uint64_t cycle_limit;
  int mxu_systolic;
  char *trace_path; /* NULL: no trace */
  emu_machine *emu; /* created at the first execution */
  int is_cpu;       /* the cpu device: target_text is its canonical spec */
#ifdef TPURT_HAVE_CPU
  cpu_rt_spec cpu;
#endif
  char msg[MSG_BYTES];
};

struct tpurt_program {
  tpurt_device_t *dev;
  tpub_image *img; /* TPU programs; NULL on the cpu device */
#ifdef TPURT_HAVE_CPU
  cpu_rt_program *cpu; /* cpu programs */
#endif
  /* The signature (the image's, or the cpu program's). */
  uint32_t nparams, nresults;
  const tpub_tensor *params, *results;
  double compile_seconds; /* < 0: loaded as a .tpub or assembled, not compiled */
  double host_seconds;    /* wall time of the last successful execute */
  uint64_t executions;
  uint64_t flops; /* per execution; valid when has_flops */
  int has_flops;
};

struct tpurt_buffer {
  tpurt_device_t *dev;
  tpurt_dtype_t dtype;
  int rank;
  int64_t dims[TPURT_MAX_RANK];
  size_t bytes;
  uint8_t *data;
};

int tpurt_version(void) { return TPURT_VERSION_NUMBER; }
const char *tpurt_version_string(void) { return TPURT_VERSION_STRING; }

const char *tpurt_status_string(tpurt_status_t s) {
  static const char *const text[] = {
#define X(name, t) [TPURT_##name] = t,
      TPURT_STATUS_LIST(X)
#undef X
  };
  return (unsigned)s < sizeof text / sizeof *text ? text[s] : "unknown status";
}

size_t tpurt_dtype_size(tpurt_dtype_t d) { return (size_t)tpub_dtype_size((int)d); }
const char *tpurt_dtype_name(tpurt_dtype_t d) { return tpub_dtype_name((int)d); }

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static tpurt_status_t
fail(tpurt_device_t *dev, tpurt_status_t st, const char *fmt, ...) {
  if (dev) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dev->msg, sizeof dev->msg, fmt, ap);
    va_end(ap);
  }
  return st;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- device --------------------------------------------------------------- */

/* What "auto" stands for: the spec in the environment variable TPURT_TARGET
 * when set (a configured device), else the cpu device when this library has
 * it (the host CPU is always present; the emulator is a simulator, used
 * when named), else the emulated v3. Other specs stand for themselves. */
static const char *resolve_target(const char *spec) {
  if (!spec) return "v3";
  if (strcmp(spec, "auto") != 0) return spec;
  const char *env = getenv("TPURT_TARGET");
  if (env && *env && strcmp(env, "auto") != 0) return env;
#ifdef TPURT_HAVE_CPU
  return "cpu";
#else
  return "v3";
#endif
}

static int is_cpu_spec(const char *s) { return strncmp(s, "cpu", 3) == 0 && (!s[3] || s[3] == ','); }

/* Checks a (resolved) spec. The cpu device fills d->cpu, a TPU one *t. */
static tpurt_status_t check_spec(const char *spec, tgt_target *t, tpurt_device_t *d, char *err,
                                 size_t errlen) {
  if (is_cpu_spec(spec)) {
#ifdef TPURT_HAVE_CPU
    cpu_rt_spec cs;
    tpurt_status_t st = cpu_rt_parse_spec(spec, &cs, err, errlen);
    if (st == TPURT_OK && d) d->cpu = cs;
    return st;
#else
    (void)d;
    if (err && errlen)
      snprintf(err, errlen, "this libtpurt has no cpu device: link libtpurt-cpu (pkg-config tpurt-cpu)");
    return TPURT_UNSUPPORTED;
#endif
  }
  return tgt_parse(spec, t, err, errlen) ? TPURT_INVALID_ARGUMENT : TPURT_OK;
}

void tpurt_device_options_init(tpurt_device_options_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->target = "v3";
}

tpurt_status_t tpurt_target_check(const char *target, char *err, size_t errlen) {
  tgt_target t;
  if (!target) {
    if (err && errlen) snprintf(err, errlen, "no target given");
    return TPURT_INVALID_ARGUMENT;
  }
  const char *spec = resolve_target(target);
  char why[256] = "";
  tpurt_status_t st = check_spec(spec, &t, NULL, why, sizeof why);
  if (st && err && errlen) {
    if (spec != target) snprintf(err, errlen, "auto is TPURT_TARGET='%s': %s", spec, why);
    else snprintf(err, errlen, "%s", why);
  }
  return st;
}

tpurt_status_t tpurt_device_create(const tpurt_device_options_t *opts,
                                   tpurt_device_t **out_device) {
  if (!out_device) return TPURT_INVALID_ARGUMENT;
  *out_device = NULL;
  tpurt_device_options_t def;
  tpurt_device_options_init(&def);
  if (!opts) opts = &def;
  rt_allocator a = {NULL, NULL, NULL};
  if (opts->allocator) {
    a.alloc = opts->allocator->alloc;
    a.free = opts->allocator->free;
    a.user = opts->allocator->user;
    if (!a.alloc || !a.free) return TPURT_INVALID_ARGUMENT;
  }
  tgt_target t;
  const char *spec = resolve_target(opts->target);
  tpurt_device_t *d = rt_calloc(&a, 1, sizeof *d);
  if (!d) return TPURT_OUT_OF_MEMORY;
  tpurt_status_t st = check_spec(spec, &t, d, NULL, 0);
  if (st) {
    rt_free(&a, d);
    return st;
  }
  d->alloc = a;
  d->is_cpu = is_cpu_spec(spec);
#ifdef TPURT_HAVE_CPU
  if (d->is_cpu) snprintf(d->target_text, sizeof d->target_text, "%s", d->cpu.canonical);
#endif
  if (!d->is_cpu) {
    d->target = t;
    tgt_format(&t, d->target_text, sizeof d->target_text);
  }
  d->cycle_limit = opts->cycle_limit ? opts->cycle_limit : DEFAULT_CYCLE_LIMIT;
  d->mxu_systolic = opts->mxu_systolic;
  if (opts->trace_path) {
    size_t n = strlen(opts->trace_path);
    d->trace_path = rt_alloc(&a, n + 1);
    if (!d->trace_path) {
      rt_free(&a, d);
      return TPURT_OUT_OF_MEMORY;
    }
    memcpy(d->trace_path, opts->trace_path, n + 1);
  }
  *out_device = d;
  return TPURT_OK;
}

void tpurt_device_destroy(tpurt_device_t *dev) {
  if (!dev) return;
  rt_allocator a = dev->alloc;
  emu_destroy(dev->emu);
  rt_free(&a, dev->trace_path);
  rt_free(&a, dev);
}

const char *tpurt_device_message(const tpurt_device_t *dev) { return dev ? dev->msg : "no device"; }

const char *tpurt_device_target(const tpurt_device_t *dev) { return dev ? dev->target_text : ""; }

const char *tpurt_device_platform(const tpurt_device_t *dev) {
  return !dev ? "" : dev->is_cpu ? "cpu" : "tpu";
}

void tpurt_free(tpurt_device_t *dev, void *ptr) {
  if (dev) rt_free(&dev->alloc, ptr);
}

/* ---- program -------------------------------------------------------------- */

/* Takes ownership of img: verifies it and wraps it. */
static tpurt_status_t adopt(tpurt_device_t *dev, tpub_image *img, tpurt_program_t **out) {
  char why[512];
  tgt_target pt;
  if (tgt_parse(img->target, &pt, why, sizeof why)) {
    tpub_free(img);
    return fail(dev, TPURT_INVALID_PROGRAM, "invalid program: %s", why);
  }
  if (pt.mxu_rows != dev->target.mxu_rows || pt.mxu_cols != dev->target.mxu_cols) {
    tpub_free(img);
    return fail(dev, TPURT_UNSUPPORTED, "program was compiled for %dx%d MXUs, the device has %dx%d",
                pt.mxu_rows, pt.mxu_cols, dev->target.mxu_rows, dev->target.mxu_cols);
  }
  int rc = tpub_verify(img, &dev->target, why, sizeof why);
  if (rc) {
    tpub_free(img);
    if (rc == -2) return fail(dev, TPURT_OUT_OF_MEMORY, "out of memory");
    return fail(dev, TPURT_INVALID_PROGRAM, "invalid program: %s", why);
  }
  tpurt_program_t *p = rt_calloc(&dev->alloc, 1, sizeof *p);
  if (!p) {
    tpub_free(img);
    return fail(dev, TPURT_OUT_OF_MEMORY, "out of memory");
  }
  p->dev = dev;
  p->img = img;
  p->nparams = img->nparams;
  p->nresults = img->nresults;
  p->params = img->params;
  p->results = img->results;
  p->compile_seconds = -1;
  p->has_flops = img->nops > 0;
  for (uint32_t i = 0; i < img->nops; i++) p->flops += img->ops[i].flops;
  *out = p;
  return TPURT_OK;
}

static int is_tpub(const void *bytes, size_t size) {
  return size >= 4 && memcmp(bytes, "TPUB", 4) == 0;
}

#ifdef TPURT_HAVE_CPU
/* Module text on the cpu device: compile it to native code. */
static tpurt_status_t load_cpu(tpurt_device_t *dev, const char *name, const void *bytes,
                               size_t size, tpurt_program_t **out) {
  if (is_tpub(bytes, size))
    return fail(dev, TPURT_UNSUPPORTED,
                "%s: a .tpub is a TPU program; the cpu device loads HLO or .tg module text", name);
  cpu_rt_program *cp;
  tpurt_status_t st = cpu_rt_compile(name, bytes, size, &dev->cpu, &cp, dev->msg, sizeof dev->msg);
  if (st) return st;
  tpurt_program_t *p = rt_calloc(&dev->alloc, 1, sizeof *p);
  if (!p) {
    cpu_rt_destroy(cp);
    return fail(dev, TPURT_OUT_OF_MEMORY, "out of memory");
  }
  cpu_rt_info in;
  cpu_rt_get_info(cp, &in);
  p->dev = dev;
  p->cpu = cp;
  p->nparams = in.nparams;
  p->nresults = in.nresults;
  p->params = in.params;
  p->results = in.results;
  p->compile_seconds = in.compile_seconds;
  p->flops = in.flops;
  p->has_flops = 1;
  *out = p;
  return TPURT_OK;
}
#endif

/* Loads a program from bytes named `name` (a path, or "<memory>"). */
static tpurt_status_t load_named(tpurt_device_t *dev, const char *name, const void *bytes,
                                 size_t size, tpurt_program_t **out) {
#ifdef TPURT_HAVE_CPU
  if (dev->is_cpu) return load_cpu(dev, name, bytes, size, out);
  if (!is_tpub(bytes, size)) { /* module text: compile it for this TPU */
    tpub_image *ti;
    double secs;
    tpurt_status_t st = cpu_rt_compile_tpu(name, bytes, size, dev->target_text, &ti, &secs,
                                           dev->msg, sizeof dev->msg);
    if (st) return st;
    st = adopt(dev, ti, out);
    if (st == TPURT_OK) (*out)->compile_seconds = secs;
    return st;
  }
#endif
  char why[512];
  tpub_image *img;
  int rc = tpub_read(bytes, size, &dev->alloc, &img, why, sizeof why);
  if (rc == -2) return fail(dev, TPURT_OUT_OF_MEMORY, "out of memory");
  if (rc) {
    const char *hint = "";
#ifndef TPURT_HAVE_CPU
    if (!is_tpub(bytes, size) && size >= 9 && memchr(bytes, 0, size) == NULL)
      hint = " (module text: compile it with `tpucc compile`, or link libtpurt-cpu to load text)";
#endif
    return fail(dev, TPURT_INVALID_PROGRAM, "invalid program: %s%s", why, hint);
  }
  return adopt(dev, img, out);
}

tpurt_status_t tpurt_program_load(tpurt_device_t *dev, const void *bytes, size_t size,
                                  tpurt_program_t **out) {
  if (out) *out = NULL;
  if (!dev || !out || (!bytes && size))
    return fail(dev, TPURT_INVALID_ARGUMENT, "tpurt_program_load: NULL argument");
  return load_named(dev, "<memory>", bytes ? bytes : "", size, out);
}

tpurt_status_t tpurt_program_load_file(tpurt_device_t *dev, const char *path,
                                       tpurt_program_t **out) {
  if (out) *out = NULL;
  if (!dev || !path || !out)
    return fail(dev, TPURT_INVALID_ARGUMENT, "tpurt_program_load_file: NULL argument");
#ifdef TPURT_HAVE_CPU
  int need_magic = 0; /* module text loads too */
#else
  int need_magic = 1;
#endif
  uint8_t *buf;
  size_t n;
  char why[MSG_BYTES - 16];
  switch (tpub_read_file(path, &dev->alloc, need_magic, &buf, &n, why, sizeof why)) {
  case TPUB_FILE_OK: break;
  case TPUB_FILE_NOT_FOUND: return fail(dev, TPURT_NOT_FOUND, "%s", why);
  case TPUB_FILE_TOO_LARGE: return fail(dev, TPURT_RESOURCE_EXHAUSTED, "%s", why);
  case TPUB_FILE_NOT_TPUB: return fail(dev, TPURT_INVALID_PROGRAM, "%s", why);
  case TPUB_FILE_NO_MEMORY: return fail(dev, TPURT_OUT_OF_MEMORY, "%s", why);
  default: return fail(dev, TPURT_IO_ERROR, "%s", why);
  }
  tpurt_status_t st = load_named(dev, path, buf, n, out);
  rt_free(&dev->alloc, buf);
  if (st == TPURT_INVALID_PROGRAM) {
    char tmp[MSG_BYTES];
    snprintf(tmp, sizeof tmp, "%.500s: %.3000s", path, dev->msg);
    memcpy(dev->msg, tmp, sizeof tmp);
  }
  return st;
}

tpurt_status_t tpurt_program_assemble(tpurt_device_t *dev, const char *text, size_t len,
                                      const char *name, tpurt_program_t **out) {
  if (out) *out = NULL;
  if (!dev || !out || (!text && len))
    return fail(dev, TPURT_INVALID_ARGUMENT, "tpurt_program_assemble: NULL argument");
  if (dev->is_cpu)
    return fail(dev, TPURT_UNSUPPORTED, "the cpu device runs module text (HLO, .tg), not TPU assembly");
  tpub_image *img;
  int rc = isa_assemble(text ? text : "", len, name, &dev->alloc, &img, dev->msg, sizeof dev->msg);
  if (rc == -2) return fail(dev, TPURT_OUT_OF_MEMORY, "out of memory");
  if (rc) return TPURT_PARSE_ERROR;
  return adopt(dev, img, out);
}

void tpurt_program_destroy(tpurt_program_t *p) {
  if (!p) return;
  tpurt_device_t *dev = p->dev;
  tpub_free(p->img);
#ifdef TPURT_HAVE_CPU
  cpu_rt_destroy(p->cpu);
#endif
  rt_free(&dev->alloc, p);
}

tpurt_status_t tpurt_program_save_file(tpurt_program_t *p, const char *path) {
  if (!p || !path) return TPURT_INVALID_ARGUMENT;
  tpurt_device_t *dev = p->dev;
  if (!p->img) return fail(dev, TPURT_UNSUPPORTED, "a cpu program has no file form: keep its module text");
  uint8_t *bytes;
  size_t n;
  char why[256];
  int wr = tpub_write(p->img, &dev->alloc, &bytes, &n, why, sizeof why);
  if (wr)
    return fail(dev, wr == -2 ? TPURT_OUT_OF_MEMORY : TPURT_INTERNAL, "cannot serialise: %s", why);
  FILE *f = fopen(path, "wb");
  if (!f) {
    rt_free(&dev->alloc, bytes);
    return fail(dev, TPURT_IO_ERROR, "%s: cannot create", path);
  }
  size_t put = fwrite(bytes, 1, n, f);
  int cl = fclose(f);
  rt_free(&dev->alloc, bytes);
  if (put != n || cl) return fail(dev, TPURT_IO_ERROR, "%s: write error", path);
  return TPURT_OK;
}

tpurt_status_t tpurt_program_disassemble(tpurt_program_t *p, char **out_text) {
  if (out_text) *out_text = NULL;
  if (!p || !out_text) return TPURT_INVALID_ARGUMENT;
  if (!p->img) return fail(p->dev, TPURT_UNSUPPORTED, "a cpu program has no TPU assembly");
  size_t n;
  if (isa_disassemble(p->img, &p->dev->alloc, out_text, &n))
    return fail(p->dev, TPURT_OUT_OF_MEMORY, "out of memory");
  return TPURT_OK;
}

size_t tpurt_program_param_count(const tpurt_program_t *p) { return p ? p->nparams : 0; }
size_t tpurt_program_result_count(const tpurt_program_t *p) { return p ? p->nresults : 0; }

static void info_of(const tpub_tensor *t, tpurt_tensor_info_t *o) {
  memset(o, 0, sizeof *o);
  o->name = t->name;
  o->dtype = (tpurt_dtype_t)t->dtype;
  o->rank = t->rank;
  for (int i = 0; i < t->rank; i++)
    o->dims[i] = t->dims[i];
  o->bytes = (size_t)t->bytes;
}

tpurt_status_t tpurt_program_param_info(const tpurt_program_t *p, size_t i,
                                        tpurt_tensor_info_t *o) {
  if (!p || !o || i >= p->nparams) return TPURT_INVALID_ARGUMENT;
  info_of(&p->params[i], o);
  return TPURT_OK;
}

tpurt_status_t tpurt_program_result_info(const tpurt_program_t *p, size_t i,
                                         tpurt_tensor_info_t *o) {
  if (!p || !o || i >= p->nresults) return TPURT_INVALID_ARGUMENT;
  info_of(&p->results[i], o);
  return TPURT_OK;
}

/* ---- buffers -------------------------------------------------------------- */

static tpurt_status_t make_buffer(tpurt_device_t *dev, tpurt_dtype_t dtype, int rank,
                                  const int64_t *dims, tpurt_buffer_t **out) {
  size_t esz = tpurt_dtype_size(dtype);
  if (!esz) return fail(dev, TPURT_INVALID_ARGUMENT, "unknown dtype %d", (int)dtype);
  if (rank < 0 || rank > TPURT_MAX_RANK || (rank && !dims))
    return fail(dev, TPURT_INVALID_ARGUMENT, "rank %d outside 0..%d", rank, TPURT_MAX_RANK);
  size_t bytes = esz;
  for (int i = 0; i < rank; i++) {
    if (dims[i] < 0 || (uint64_t)dims[i] > ((uint64_t)1 << 40))
      return fail(dev, TPURT_INVALID_ARGUMENT, "dimension %d is %lld", i, (long long)dims[i]);
    if (dims[i] && bytes > SIZE_MAX / (size_t)dims[i])
      return fail(dev, TPURT_INVALID_ARGUMENT, "tensor too large");
    bytes *= (size_t)dims[i];
  }
  tpurt_buffer_t *b = rt_calloc(&dev->alloc, 1, sizeof *b);
  if (!b) return fail(dev, TPURT_OUT_OF_MEMORY, "out of memory");
  b->data = rt_calloc(&dev->alloc, 1, bytes);
  if (!b->data) {
    rt_free(&dev->alloc, b);
    return fail(dev, TPURT_OUT_OF_MEMORY, "out of memory (%zu bytes)", bytes);
  }
  b->dev = dev;
  b->dtype = dtype;
  b->rank = rank;
  for (int i = 0; i < rank; i++)
    b->dims[i] = dims[i];
  b->bytes = bytes;
  *out = b;
  return TPURT_OK;
}

tpurt_status_t tpurt_buffer_create(tpurt_device_t *dev, tpurt_dtype_t dtype, int rank,
                                   const int64_t *dims, const void *data, size_t bytes,
                                   tpurt_buffer_t **out) {
  if (out) *out = NULL;
  if (!dev || !out) return fail(dev, TPURT_INVALID_ARGUMENT, "tpurt_buffer_create: NULL argument");
  tpurt_buffer_t *b;
  tpurt_status_t st = make_buffer(dev, dtype, rank, dims, &b);
  if (st) return st;
  if (data) {
    if (bytes != b->bytes) {
      size_t want = b->bytes;
      tpurt_buffer_destroy(b);
      return fail(dev, TPURT_INVALID_ARGUMENT, "buffer of %zu bytes given %zu bytes of data", want,
                  bytes);
    }
    memcpy(b->data, data, bytes);
  }
  *out = b;
  return TPURT_OK;
}

void tpurt_buffer_destroy(tpurt_buffer_t *b) {
  if (!b) return;
  tpurt_device_t *dev = b->dev;
  rt_free(&dev->alloc, b->data);
  rt_free(&dev->alloc, b);
}

tpurt_status_t tpurt_buffer_read(const tpurt_buffer_t *b, void *data, size_t bytes) {
  if (!b || (!data && bytes)) return TPURT_INVALID_ARGUMENT;
  if (bytes != b->bytes)
    return fail(b->dev, TPURT_INVALID_ARGUMENT, "buffer holds %zu bytes, %zu requested", b->bytes,
                bytes);
  if (bytes) memcpy(data, b->data, bytes);
  return TPURT_OK;
}

void tpurt_buffer_info(const tpurt_buffer_t *b, tpurt_tensor_info_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  if (!b) return;
  o->dtype = b->dtype;
  o->rank = b->rank;
  for (int i = 0; i < b->rank; i++)
    o->dims[i] = b->dims[i];
  o->bytes = b->bytes;
}

/* ---- execution ------------------------------------------------------------ */

/* Chrome trace-event output (tpurt_device_options_t.trace_path). */
typedef struct trace_out {
  FILE *f;
  int n;
} trace_out;

static void trace_event(void *user, int unit, uint32_t pc, uint64_t word, uint64_t start,
                        uint64_t occ, uint64_t lat) {
  trace_out *t = user;
  char text[160] = "?";
  isa_inst in;
  if (!isa_decode(word, &in, NULL, 0)) isa_format(&in, text, sizeof text);
  fprintf(t->f,
          ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,"
          "\"ts\":%llu,\"dur\":%llu,\"args\":{\"pc\":%u,\"lat\":%llu}}",
          text, unit, (unsigned long long)start, (unsigned long long)occ, pc,
          (unsigned long long)lat);
  t->n++;
}

static FILE *trace_open(tpurt_device_t *dev) {
  FILE *f = fopen(dev->trace_path, "w");
  if (!f) return NULL;
  fputs("[{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,"
        "\"args\":{\"name\":\"tpucc core\"}}",
        f);
  for (int u = 0; u < TPURT_MAX_UNITS; u++)
    fprintf(f,
            ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,"
            "\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
            u, isa_unit_name(u));
  return f;
}

static int shape_matches(const tpurt_buffer_t *b, const tpub_tensor *t) {
  if ((int)b->dtype != t->dtype || b->rank != t->rank) return 0;
  for (int i = 0; i < t->rank; i++)
    if (b->dims[i] != t->dims[i]) return 0;
  return 1;
}

static void shape_text(char *out, size_t n, int dtype, int rank, const int64_t *dims) {
  size_t k = (size_t)snprintf(out, n, "%s[", tpub_dtype_name(dtype));
  for (int i = 0; i < rank && k < n; i++)
    k += (size_t)snprintf(out + k, n - k, "%s%lld", i ? "," : "", (long long)dims[i]);
  if (k < n) snprintf(out + k, n - k, "]");
}

static tpurt_status_t finish_run(tpurt_device_t *dev, const tpub_image *img, uint8_t *hbm, int rc,
                                 const emu_stats *es, const emu_fault *fp, tpurt_buffer_t **results,
                                 size_t nresults, tpurt_stats_t *out_stats);

#ifdef TPURT_HAVE_CPU
/* A cpu program's run on checked parameters: result buffers are made
 * first and the native code writes into them. The statistics are the
 * seconds of the native run alone; every counter is zero. */
static tpurt_status_t execute_cpu(tpurt_program_t *p, tpurt_buffer_t *const *params,
                                  tpurt_buffer_t **results, tpurt_stats_t *out_stats) {
  tpurt_device_t *dev = p->dev;
  void **in = rt_calloc(&dev->alloc, (size_t)p->nparams + p->nresults + 1, sizeof(void *));
  if (!in) return fail(dev, TPURT_OUT_OF_MEMORY, "out of memory");
  void **outs = in + p->nparams;
  tpurt_status_t st = TPURT_OK;
  for (uint32_t i = 0; i < p->nresults && st == TPURT_OK; i++) {
    const tpub_tensor *t = &p->results[i];
    st = make_buffer(dev, (tpurt_dtype_t)t->dtype, t->rank, t->dims, &results[i]);
    if (st == TPURT_OK) outs[i] = results[i]->data;
  }
  for (uint32_t i = 0; i < p->nparams; i++) in[i] = params[i]->data;
  double t0 = now_seconds();
  if (st == TPURT_OK) st = cpu_rt_execute(p->cpu, in, outs, dev->msg, sizeof dev->msg);
  double secs = now_seconds() - t0;
  rt_free(&dev->alloc, in);
  if (st) {
    for (uint32_t i = 0; i < p->nresults; i++) {
      tpurt_buffer_destroy(results[i]);
      results[i] = NULL;
    }
    return st;
  }
  if (out_stats) {
    out_stats->seconds = secs;
    for (int u = 0; u < TPURT_MAX_UNITS; u++) out_stats->units[u].name = isa_unit_name(u);
  }
  return TPURT_OK;
}
#endif

/* One execution; with profile options (popts non-NULL) the run is profiled
 * per op into out_ops (runtime/prof/profile.c). */
static tpurt_status_t execute(tpurt_program_t *p, tpurt_buffer_t *const *params, size_t nparams,
                              tpurt_buffer_t **results, size_t nresults, tpurt_stats_t *out_stats,
                              const tpurt_profile_options_t *popts, tpurt_op_stats_t *out_ops) {
  if (!p) return TPURT_INVALID_ARGUMENT;
  tpurt_device_t *dev = p->dev;
  const tpub_image *img = p->img;
  if (out_stats) memset(out_stats, 0, sizeof *out_stats);
  if ((nresults && !results) || (nparams && !params))
    return fail(dev, TPURT_INVALID_ARGUMENT, "tpurt_program_execute: NULL array");
  for (size_t i = 0; i < nresults; i++)
    results[i] = NULL;
  if (popts && !img)
    return fail(dev, TPURT_UNSUPPORTED, "per-op profiles need a TPU device; this program runs on the cpu");
  if (nparams != p->nparams || nresults != p->nresults)
    return fail(dev, TPURT_INVALID_ARGUMENT,
                "program takes %u parameters and %u results, given %zu and %zu", p->nparams,
                p->nresults, nparams, nresults);
  for (size_t i = 0; i < nparams; i++) {
    const tpub_tensor *t = &p->params[i];
    if (!params[i] || params[i]->dev != dev)
      return fail(dev, TPURT_INVALID_ARGUMENT, "parameter %zu (%s): missing or from another device",
                  i, t->name);
    if (!shape_matches(params[i], t)) {
      char want[160], got[160];
      shape_text(want, sizeof want, t->dtype, t->rank, t->dims);
      shape_text(got, sizeof got, (int)params[i]->dtype, params[i]->rank, params[i]->dims);
      return fail(dev, TPURT_INVALID_ARGUMENT, "parameter %zu (%s): expected %s, got %s", i,
                  t->name, want, got);
    }
  }
#ifdef TPURT_HAVE_CPU
  if (p->cpu) return execute_cpu(p, params, results, out_stats);
#endif
  if (!dev->emu) {
    dev->emu = emu_create(&dev->target, &dev->alloc);
    if (!dev->emu) return fail(dev, TPURT_OUT_OF_MEMORY, "out of memory creating the core");
    emu_set_systolic(dev->emu, dev->mxu_systolic);
  }
  uint8_t *hbm = rt_calloc(&dev->alloc, 1, (size_t)img->hbm_bytes);
  if (!hbm)
    return fail(dev, TPURT_OUT_OF_MEMORY, "out of memory for %llu bytes of HBM",
                (unsigned long long)img->hbm_bytes);
  for (uint32_t i = 0; i < img->nconsts; i++)
    memcpy(hbm + img->consts[i].hbm_offset, img->consts[i].data, (size_t)img->consts[i].size);
  for (size_t i = 0; i < nparams; i++)
    memcpy(hbm + img->params[i].hbm_offset, params[i]->data, params[i]->bytes);
  emu_stats es;
  emu_fault ef;
  trace_out tr = {NULL, 0};
  prof *pf = NULL;
  if (popts) {
    const char *tp = popts->trace_path ? popts->trace_path : dev->trace_path;
    FILE *tf = NULL;
    if (tp && !(tf = fopen(tp, "w"))) {
      rt_free(&dev->alloc, hbm);
      return fail(dev, TPURT_IO_ERROR, "%s: cannot create the trace", tp);
    }
    size_t nops = img->nops ? img->nops : 1;
    tpurt_op_stats_t *ops = out_ops;
    if (!ops) ops = rt_calloc(&dev->alloc, nops, sizeof *ops);
    if (ops) pf = prof_create(&dev->alloc, img, &dev->target, ops, tf, popts->trace_instructions);
    if (!pf) {
      if (ops != out_ops) rt_free(&dev->alloc, ops);
      if (tf) fclose(tf);
      rt_free(&dev->alloc, hbm);
      return fail(dev, TPURT_OUT_OF_MEMORY, "out of memory for the profile");
    }
    prof_attach(pf, dev->emu);
    int rc = emu_run(dev->emu, img, hbm, dev->cycle_limit, &es, &ef);
    emu_set_trace(dev->emu, NULL, NULL);
    int prc = prof_finish(pf, &es);
    prof_destroy(pf);
    if (ops != out_ops) rt_free(&dev->alloc, ops);
    if (tf) {
      int bad = ferror(tf);
      if (fclose(tf) || bad || prc) {
        rt_free(&dev->alloc, hbm);
        return fail(dev, prc ? TPURT_OUT_OF_MEMORY : TPURT_IO_ERROR, "%s: error writing the trace",
                    tp);
      }
    }
    return finish_run(dev, img, hbm, rc, &es, &ef, results, nresults, out_stats);
  }
  if (dev->trace_path) {
    tr.f = trace_open(dev);
    if (!tr.f) {
      rt_free(&dev->alloc, hbm);
      return fail(dev, TPURT_IO_ERROR, "%s: cannot create the trace", dev->trace_path);
    }
    emu_set_trace(dev->emu, trace_event, &tr);
  }
  int rc = emu_run(dev->emu, img, hbm, dev->cycle_limit, &es, &ef);
  if (tr.f) {
    emu_set_trace(dev->emu, NULL, NULL);
    fputs("\n]\n", tr.f);
    int bad = ferror(tr.f);
    if (fclose(tr.f) || bad) {
      rt_free(&dev->alloc, hbm);
      return fail(dev, TPURT_IO_ERROR, "%s: error writing the trace", dev->trace_path);
    }
  }
  return finish_run(dev, img, hbm, rc, &es, &ef, results, nresults, out_stats);
}

/* Results and status of a run; frees hbm. */
static tpurt_status_t finish_run(tpurt_device_t *dev, const tpub_image *img, uint8_t *hbm, int rc,
                                 const emu_stats *es, const emu_fault *fp, tpurt_buffer_t **results,
                                 size_t nresults, tpurt_stats_t *out_stats) {
  emu_fault ef = *fp;
  if (out_stats) emu_stats_export(es, &dev->target, out_stats);
  if (rc) {
    rt_free(&dev->alloc, hbm);
    char text[160] = "";
    isa_inst in;
    if (!isa_decode(ef.word, &in, NULL, 0)) isa_format(&in, text, sizeof text);
    tpurt_status_t st = ef.kind == EMU_FAULT_CYCLES ? TPURT_RESOURCE_EXHAUSTED
                        : ef.kind == EMU_FAULT_OOM  ? TPURT_OUT_OF_MEMORY
                                                    : TPURT_RUNTIME_FAULT;
    return fail(dev, st, "fault at pc %u (%s) at cycle %llu: %s", ef.pc, text,
                (unsigned long long)ef.cycle, ef.reason);
  }
  tpurt_status_t st = TPURT_OK;
  for (size_t i = 0; i < nresults && st == TPURT_OK; i++) {
    const tpub_tensor *t = &img->results[i];
    st = make_buffer(dev, (tpurt_dtype_t)t->dtype, t->rank, t->dims, &results[i]);
    if (st == TPURT_OK) memcpy(results[i]->data, hbm + t->hbm_offset, results[i]->bytes);
  }
  rt_free(&dev->alloc, hbm);
  if (st) {
    for (size_t i = 0; i < nresults; i++) {
      tpurt_buffer_destroy(results[i]);
      results[i] = NULL;
    }
  }
  return st;
}

/* execute, timed for the program's metrics. */
static tpurt_status_t timed_execute(tpurt_program_t *p, tpurt_buffer_t *const *params,
                                    size_t nparams, tpurt_buffer_t **results, size_t nresults,
                                    tpurt_stats_t *out_stats, const tpurt_profile_options_t *popts,
                                    tpurt_op_stats_t *out_ops) {
  double t0 = now_seconds();
  tpurt_status_t st = execute(p, params, nparams, results, nresults, out_stats, popts, out_ops);
  if (st == TPURT_OK) {
    p->host_seconds = now_seconds() - t0;
    p->executions++;
  }
  return st;
}

tpurt_status_t tpurt_program_execute(tpurt_program_t *p, tpurt_buffer_t *const *params,
                                     size_t nparams, tpurt_buffer_t **results, size_t nresults,
                                     tpurt_stats_t *out_stats) {
  return timed_execute(p, params, nparams, results, nresults, out_stats, NULL, NULL);
}

tpurt_status_t tpurt_program_metric(const tpurt_program_t *p, const char *key, double *out) {
  if (out) *out = 0;
  if (!p || !key || !out) return TPURT_INVALID_ARGUMENT;
  if (strcmp(key, "host_seconds") == 0) {
    *out = p->host_seconds;
  } else if (strcmp(key, "executions") == 0) {
    *out = (double)p->executions;
  } else if (strcmp(key, "compile_seconds") == 0) {
    if (p->compile_seconds < 0)
      return fail(p->dev, TPURT_NOT_FOUND, "compile_seconds: the program was not compiled by this library");
    *out = p->compile_seconds;
  } else if (strcmp(key, "flops") == 0) {
    if (!p->has_flops)
      return fail(p->dev, TPURT_NOT_FOUND, "flops: the program has no op table to count them");
    *out = (double)p->flops;
  } else {
    return fail(p->dev, TPURT_NOT_FOUND,
                "unknown metric '%.100s' (host_seconds, executions, compile_seconds, flops)", key);
  }
  return TPURT_OK;
}

/* ---- per-op profiles (helper R; runtime/prof/profile.c) ------------------ */

void tpurt_profile_options_init(tpurt_profile_options_t *o) {
  if (o) memset(o, 0, sizeof *o);
}

tpurt_status_t tpurt_program_execute_profile(tpurt_program_t *p, tpurt_buffer_t *const *params,
                                             size_t nparams, tpurt_buffer_t **results,
                                             size_t nresults, tpurt_stats_t *out_stats,
                                             const tpurt_profile_options_t *opts,
                                             tpurt_op_stats_t *out_ops) {
  tpurt_profile_options_t def;
  tpurt_profile_options_init(&def);
  return timed_execute(p, params, nparams, results, nresults, out_stats, opts ? opts : &def, out_ops);
}

size_t tpurt_program_op_count(const tpurt_program_t *p) {
  return p && p->img && p->img->nops ? p->img->nops : 1;
}

tpurt_status_t tpurt_program_op_info(const tpurt_program_t *p, size_t i, tpurt_op_info_t *o) {
  if (!p || !o || i >= tpurt_program_op_count(p)) return TPURT_INVALID_ARGUMENT;
  memset(o, 0, sizeof *o);
  if (!p->img || !p->img->nops) {
    o->name = "(program)";
    o->kind = o->file = "";
    o->flops = p->flops;
    return TPURT_OK;
  }
  const tpub_op *op = &p->img->ops[i];
  o->name = op->name;
  o->kind = op->kind;
  o->file = op->file;
  o->line = op->line;
  o->col = op->col;
  o->flops = op->flops;
  return TPURT_OK;
}

void tpurt_stats_breakdown(const tpurt_stats_t *s, int mxus, tpurt_breakdown_t *o) {
  memset(o, 0, sizeof *o);
  if (mxus <= 0) {
    mxus = 0;
    for (int u = 0; u < TGT_MAX_MXUS; u++)
      if (s->units[ISA_UNIT_MXU0 + u].instructions) mxus = u + 1;
    if (!mxus) mxus = 1;
  }
  if (mxus > TGT_MAX_MXUS) mxus = TGT_MAX_MXUS;
  o->total = s->cycles * (uint64_t)mxus;
  o->array_active = s->mxu_busy_cycles;
  uint64_t busy = 0;
  for (int u = 0; u < mxus; u++) {
    const tpurt_unit_stats_t *x = &s->units[ISA_UNIT_MXU0 + u];
    busy += x->busy_cycles;
    o->weight_stall += x->stall_weight_load;
    o->dependency_stall += x->stall_dependency;
    o->input_stall += x->stall_dma + x->stall_sync + x->stall_hbm + x->stall_queue_full;
  }
  o->weight_shift = busy > o->array_active ? busy - o->array_active : 0;
  uint64_t used = o->array_active + o->weight_shift + o->weight_stall + o->dependency_stall +
                  o->input_stall;
  o->non_matrix = o->total > used ? o->total - used : 0;
}
