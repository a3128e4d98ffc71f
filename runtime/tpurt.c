/* tpurt.c: libtpurt's public API (include/tpurt.h) over the device
 * drivers (device.h): the handles, every argument check, messages and
 * program metrics. The drivers a library links come from
 * rt_linked_drivers: the emulated TPU (tpu_device.c) in libtpurt, plus the
 * cpu device and module text in libtpurt-cpu (driver/rtdev.c).
 * docs/runtime.md describes both. */
#include "tpurt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "asm.h"
#include "isa.h"
#include "runtime/device.h"
#include "target.h"
#include "tpub.h"

_Static_assert(TPURT_MAX_RANK == TPUB_MAX_RANK, "rank limit");

enum { MSG_BYTES = 4096 };
#define DEFAULT_CYCLE_LIMIT 1000000000ull

struct tpurt_device {
  rt_allocator alloc;
  const rt_driver *drv;
  rt_device *d;
  rt_device_info info;
  tpurt_peers_t peers; /* its release, called by tpurt_device_destroy */
  char msg[MSG_BYTES];
};

struct tpurt_program {
  tpurt_device_t *dev;
  rt_program *p;
  tpub_image *img; /* a TPU program's image; NULL on other devices */
  rt_program_info info;
  double host_seconds; /* wall time of the last successful execute */
  uint64_t executions;
  int32_t *alias; /* per result: the donated parameter, or -1; NULL: none yet */
};

struct tpurt_buffer {
  tpurt_device_t *dev;
  tpurt_dtype_t dtype;
  int rank;
  int64_t dims[TPURT_MAX_RANK];
  size_t bytes;
  uint8_t *data;  /* from the device's buffer_alloc */
  uint8_t *spare; /* donated executions write here, then swap with data; lazily made */
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
 * when set (a configured device), else the first linked driver's device:
 * the cpu in libtpurt-cpu (the host CPU is always present; the emulator is
 * a simulator, used when named), the emulated v3 in libtpurt. Other specs
 * stand for themselves. */
static const char *resolve_target(const char *spec) {
  if (!spec) return "v3";
  if (strcmp(spec, "auto") != 0) return spec;
  const char *env = getenv("TPURT_TARGET");
  if (env && *env && strcmp(env, "auto") != 0) return env;
  return rt_linked_drivers()->v[0]->default_spec;
}

/* The first linked driver that claims spec, or NULL with the reason: the
 * TPU driver claims every spec but the cpu's, so only "cpu" goes unclaimed,
 * in libtpurt. */
static const rt_driver *driver_for(const char *spec, char *err, size_t errlen) {
  for (const rt_driver *const *d = rt_linked_drivers()->v; *d; d++)
    if ((*d)->claims(spec)) return *d;
  if (err && errlen)
    snprintf(err, errlen, "this libtpurt has no cpu device: link libtpurt-cpu (pkg-config tpurt-cpu)");
  return NULL;
}

/* Checks a (resolved) spec: TPURT_OK, or the driver's reason in err. */
static tpurt_status_t check_spec(const char *spec, char *err, size_t errlen) {
  const rt_driver *drv = driver_for(spec, err, errlen);
  if (!drv) return TPURT_UNSUPPORTED;
  char why[512] = "";
  tpurt_status_t st = drv->create(spec, NULL, NULL, NULL, why, sizeof why);
  if (st && err && errlen) snprintf(err, errlen, "%s", why);
  return st;
}

void tpurt_device_options_init(tpurt_device_options_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->target = "v3";
}

tpurt_status_t tpurt_target_check(const char *target, char *err, size_t errlen) {
  if (!target) {
    if (err && errlen) snprintf(err, errlen, "no target given");
    return TPURT_INVALID_ARGUMENT;
  }
  const char *spec = resolve_target(target);
  char why[256] = "";
  tpurt_status_t st = check_spec(spec, why, sizeof why);
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
  const char *spec = resolve_target(opts->target);
  const rt_driver *drv = driver_for(spec, NULL, 0);
  if (!drv) return TPURT_UNSUPPORTED;
  tpurt_device_t *d = rt_calloc(&a, 1, sizeof *d);
  if (!d) return TPURT_OUT_OF_MEMORY;
  d->alloc = a;
  d->drv = drv;
  rt_device_config c = {&d->alloc, opts->cycle_limit ? opts->cycle_limit : DEFAULT_CYCLE_LIMIT,
                        opts->mxu_systolic, opts->trace_path, opts->custom_calls,
                        opts->ncustom_calls, opts->peers, opts->trace_per_rank};
  tpurt_status_t st = drv->create(spec, &c, &d->d, &d->info, d->msg, sizeof d->msg);
  if (st) {
    rt_free(&a, d);
    return st;
  }
  if (opts->peers) d->peers = *opts->peers;
  *out_device = d;
  return TPURT_OK;
}

void tpurt_device_destroy(tpurt_device_t *dev) {
  if (!dev) return;
  rt_allocator a = dev->alloc;
  tpurt_peers_t peers = dev->peers;
  dev->drv->ops->destroy(dev->d);
  rt_free(&a, dev);
  if (peers.release) peers.release(peers.user);
}

const char *tpurt_device_message(const tpurt_device_t *dev) { return dev ? dev->msg : "no device"; }

const char *tpurt_device_target(const tpurt_device_t *dev) { return dev ? dev->info.target : ""; }

int tpurt_device_core_count(const tpurt_device_t *dev) { return dev ? dev->info.ncores : 0; }

const char *tpurt_device_platform(const tpurt_device_t *dev) {
  return dev ? dev->info.platform : "";
}

size_t tpurt_device_link_count(const tpurt_device_t *dev) {
  return dev && dev->drv == &rt_tpu_driver ? (size_t)rt_tpu_link_count(dev->d) : 0;
}

tpurt_status_t tpurt_device_link_stats(tpurt_device_t *dev, size_t link,
                                       tpurt_link_stats_t *out_stats) {
  if (!out_stats) return fail(dev, TPURT_INVALID_ARGUMENT, "tpurt_device_link_stats: NULL out");
  memset(out_stats, 0, sizeof *out_stats);
  out_stats->direction = "";
  size_t n = tpurt_device_link_count(dev);
  if (link >= n)
    return fail(dev, TPURT_INVALID_ARGUMENT, "link %zu of a device with %zu links", link, n);
  rt_tpu_link_stats(dev->d, (int)link, out_stats);
  return TPURT_OK;
}


void tpurt_free(tpurt_device_t *dev, void *ptr) {
  if (dev) rt_free(&dev->alloc, ptr);
}

/* ---- donation (input_output_alias) --------------------------------------- */

static int same_tensor(const tpub_tensor *a, const tpub_tensor *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return 0;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

/* Records result r as written into parameter q's buffer (q -1: none). */
static tpurt_status_t set_alias(tpurt_program_t *p, size_t r, int q) {
  tpurt_device_t *dev = p->dev;
  if (r >= p->info.nresults || q < -1 || q >= (int)p->info.nparams)
    return fail(dev, TPURT_INVALID_ARGUMENT, "alias of result %zu to parameter %d: out of range", r,
                q);
  if (q >= 0 && !same_tensor(&p->info.results[r], &p->info.params[q]))
    return fail(dev, TPURT_INVALID_ARGUMENT,
                "result %zu (%s) cannot be written into parameter %d (%s): shapes differ", r,
                p->info.results[r].name, q, p->info.params[q].name);
  if (!p->alias) {
    p->alias = rt_calloc(&dev->alloc, p->info.nresults ? p->info.nresults : 1, sizeof(int32_t));
    if (!p->alias) return fail(dev, TPURT_OUT_OF_MEMORY, "out of memory");
    for (uint32_t i = 0; i < p->info.nresults; i++) p->alias[i] = -1;
  }
  for (uint32_t i = 0; i < p->info.nresults && q >= 0; i++)
    if (i != r && p->alias[i] == q)
      return fail(dev, TPURT_INVALID_ARGUMENT,
                  "parameter %d is already donated to result %u", q, (unsigned)i);
  p->alias[r] = q;
  return TPURT_OK;
}

static const char *skip_ws(const char *s, const char *e) {
  while (s < e && (*s == ' ' || *s == '\t')) s++;
  return s;
}

/* Reads a decimal number at *s (advancing it); -1 when there is none. */
static long read_num(const char **s, const char *e) {
  const char *t = skip_ws(*s, e);
  long v = -1;
  while (t < e && *t >= '0' && *t <= '9' && v < 100000000) v = (v < 0 ? 0 : v * 10) + (*t++ - '0');
  *s = t;
  return v;
}

/* Module text whose first line is an HLO header with
 * input_output_alias={ {R}: (P, {}, may-alias), ... } donates parameter P
 * to result leaf R: the flattened leaf R is the root tuple's element R when
 * that tuple holds arrays only, the form tpucc writes. Entries of another
 * form (nested output or parameter indices), or whose shapes differ, are
 * left out: an alias permits reuse and never changes values. */
static tpurt_status_t alias_from_text(tpurt_program_t *p, const void *bytes, size_t size) {
  const char *s = bytes, *e = s + size;
  if (size < 9 || memcmp(s, "HloModule", 9) != 0) return TPURT_OK;
  const char *nl = memchr(s, '\n', size);
  if (nl) e = nl;
  static const char key[] = "input_output_alias={";
  const char *k = NULL;
  for (const char *t = s; t + sizeof key - 1 <= e && !k; t++)
    if (memcmp(t, key, sizeof key - 1) == 0) k = t + sizeof key - 1;
  if (!k) return TPURT_OK;
  for (;;) {
    k = skip_ws(k, e);
    if (k >= e || *k != '{') break;
    k++;
    long r = read_num(&k, e);
    k = skip_ws(k, e);
    int simple = k < e && *k == '}';
    while (k < e && *k != '}') k++;
    if (r < 0) r = 0; /* {}: the whole result, leaf 0 when it is an array */
    k = skip_ws(k + 1, e);
    if (k < e && *k == ':') k = skip_ws(k + 1, e);
    if (k >= e || *k != '(') break;
    k++;
    long q = read_num(&k, e);
    k = skip_ws(k, e);
    if (k < e && *k == ',') k = skip_ws(k + 1, e);
    int whole = k + 1 < e && k[0] == '{' && skip_ws(k + 1, e) < e && *skip_ws(k + 1, e) == '}';
    while (k < e && *k != ')') k++;
    k = skip_ws(k + 1, e);
    if (simple && whole && q >= 0 && (size_t)r < p->info.nresults && q < (long)p->info.nparams &&
        same_tensor(&p->info.results[r], &p->info.params[q])) {
      tpurt_status_t st = set_alias(p, (size_t)r, (int)q);
      if (st == TPURT_OUT_OF_MEMORY) return st;
    }
    if (k < e && *k == ',') k++;
  }
  return TPURT_OK;
}

/* ---- program -------------------------------------------------------------- */

/* Wraps a driver's program p (destroyed on failure). */
static tpurt_status_t wrap(tpurt_device_t *dev, rt_program *p, const rt_program_info *info,
                           tpurt_program_t **out) {
  tpurt_program_t *w = rt_calloc(&dev->alloc, 1, sizeof *w);
  if (!w) {
    dev->drv->ops->program_destroy(p);
    return fail(dev, TPURT_OUT_OF_MEMORY, "out of memory");
  }
  w->dev = dev;
  w->p = p;
  w->img = dev->drv == &rt_tpu_driver ? rt_tpu_program_image(p) : NULL;
  w->info = *info;
  *out = w;
  return TPURT_OK;
}

/* Loads a program from bytes named `name` (a path, or "<memory>"). */
static tpurt_status_t load_named(tpurt_device_t *dev, const char *name, const void *bytes,
                                 size_t size, tpurt_program_t **out) {
  rt_program *p;
  rt_program_info info;
  tpurt_status_t st = dev->drv->ops->load(dev->d, name, bytes, size, &p, &info, dev->msg,
                                          sizeof dev->msg);
  if (st == TPURT_OK) st = wrap(dev, p, &info, out);
  if (st == TPURT_OK) st = alias_from_text(*out, bytes, size);
  if (st) {
    tpurt_program_destroy(*out);
    *out = NULL;
  }
  return st;
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
  /* Module text loads too when the library has a compiler or a device
   * that takes it. */
  int need_magic = dev->drv == &rt_tpu_driver && !rt_linked_drivers()->compile_text;
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
  if (dev->drv != &rt_tpu_driver)
    return fail(dev, TPURT_UNSUPPORTED, "the cpu device runs module text (HLO, .tg), not TPU assembly");
  rt_program *p;
  rt_program_info info;
  tpurt_status_t st = rt_tpu_assemble(dev->d, text ? text : "", len, name, &p, &info, dev->msg,
                                      sizeof dev->msg);
  return st ? st : wrap(dev, p, &info, out);
}

void tpurt_program_destroy(tpurt_program_t *p) {
  if (!p) return;
  tpurt_device_t *dev = p->dev;
  dev->drv->ops->program_destroy(p->p);
  rt_free(&dev->alloc, p->alias);
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

size_t tpurt_program_param_count(const tpurt_program_t *p) { return p ? p->info.nparams : 0; }
size_t tpurt_program_result_count(const tpurt_program_t *p) { return p ? p->info.nresults : 0; }

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
  if (!p || !o || i >= p->info.nparams) return TPURT_INVALID_ARGUMENT;
  info_of(&p->info.params[i], o);
  return TPURT_OK;
}

tpurt_status_t tpurt_program_result_info(const tpurt_program_t *p, size_t i,
                                         tpurt_tensor_info_t *o) {
  if (!p || !o || i >= p->info.nresults) return TPURT_INVALID_ARGUMENT;
  info_of(&p->info.results[i], o);
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
  b->data = dev->drv->ops->buffer_alloc(dev->d, bytes);
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
  dev->drv->ops->buffer_free(dev->d, b->data);
  dev->drv->ops->buffer_free(dev->d, b->spare);
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
/* ---- execution ------------------------------------------------------------ */

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
/* Checks an execution's arguments against p's signature. */
static tpurt_status_t check_args(tpurt_program_t *p, tpurt_buffer_t *const *params,
                                 size_t nparams, size_t nresults) {
  tpurt_device_t *dev = p->dev;
  if (nparams != p->info.nparams || nresults != p->info.nresults)
    return fail(dev, TPURT_INVALID_ARGUMENT,
                "program takes %u parameters and %u results, given %zu and %zu", p->info.nparams,
                p->info.nresults, nparams, nresults);
  for (size_t i = 0; i < nparams; i++) {
    const tpub_tensor *t = &p->info.params[i];
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
  return TPURT_OK;
}

/* One execution on checked arguments: the result buffers are made first
 * and the driver writes into them; with profile options (popts non-NULL)
 * the run is profiled per op into out_ops. */
static tpurt_status_t run(tpurt_program_t *p, tpurt_buffer_t *const *params,
                          tpurt_buffer_t **results, tpurt_stats_t *out_stats,
                          const tpurt_profile_options_t *popts, tpurt_op_stats_t *out_ops,
                          const int32_t *alias) {
  tpurt_device_t *dev = p->dev;
  uint32_t np = p->info.nparams, nr = p->info.nresults;
  void **in = rt_calloc(&dev->alloc, (size_t)np + nr + 1, sizeof(void *));
  if (!in) return fail(dev, TPURT_OUT_OF_MEMORY, "out of memory");
  void **outs = in + np;
  tpurt_status_t st = TPURT_OK;
  for (uint32_t i = 0; i < nr && st == TPURT_OK; i++) {
    const tpub_tensor *t = &p->info.results[i];
    if (alias && alias[i] >= 0) { /* donated: written beside the parameter's data */
      tpurt_buffer_t *b = params[alias[i]];
      if (!b->spare && !(b->spare = dev->drv->ops->buffer_alloc(dev->d, b->bytes)))
        st = fail(dev, TPURT_OUT_OF_MEMORY, "out of memory (%zu bytes)", b->bytes);
      outs[i] = b->spare;
      continue;
    }
    st = make_buffer(dev, (tpurt_dtype_t)t->dtype, t->rank, t->dims, &results[i]);
    if (st == TPURT_OK) outs[i] = results[i]->data;
  }
  for (uint32_t i = 0; i < np; i++) in[i] = params[i]->data;
  if (out_stats)
    for (int u = 0; u < TPURT_MAX_UNITS; u++) out_stats->units[u].name = isa_unit_name(u);
  rt_replica r = {in, outs, out_stats};
  if (st == TPURT_OK && popts)
    st = rt_tpu_execute_profile(p->p, &r, popts, out_ops, dev->msg, sizeof dev->msg);
  else if (st == TPURT_OK)
    st = dev->drv->ops->execute(p->p, &r, 1, dev->msg, sizeof dev->msg);
  rt_free(&dev->alloc, in);
  if (st) {
    for (uint32_t i = 0; i < nr; i++) {
      tpurt_buffer_destroy(results[i]);
      results[i] = NULL;
    }
    return st;
  }
  for (uint32_t i = 0; alias && i < nr; i++) {
    if (alias[i] < 0) continue;
    tpurt_buffer_t *b = params[alias[i]];
    uint8_t *t = b->data;
    b->data = b->spare;
    b->spare = t;
  }
  return st;
}

/* Checks and runs one execution, timed for the program's metrics. */
static tpurt_status_t execute(tpurt_program_t *p, tpurt_buffer_t *const *params, size_t nparams,
                              tpurt_buffer_t **results, size_t nresults, tpurt_stats_t *out_stats,
                              const tpurt_profile_options_t *popts, tpurt_op_stats_t *out_ops,
                              int donate) {
  if (!p) return TPURT_INVALID_ARGUMENT;
  tpurt_device_t *dev = p->dev;
  if (out_stats) memset(out_stats, 0, sizeof *out_stats);
  if ((nresults && !results) || (nparams && !params))
    return fail(dev, TPURT_INVALID_ARGUMENT, "tpurt_program_execute: NULL array");
  for (size_t i = 0; i < nresults; i++)
    results[i] = NULL;
  if (popts && !p->img)
    return fail(dev, TPURT_UNSUPPORTED, "per-op profiles need a TPU device; this program runs on the cpu");
  if (dev->info.ncores != 1 && !p->img)
    return fail(dev, TPURT_INVALID_ARGUMENT,
                "the device has %d cores: run its programs with tpurt_program_execute_replicas",
                dev->info.ncores);
  tpurt_status_t st = check_args(p, params, nparams, nresults);
  if (st) return st;
  for (size_t i = 0; donate && p->alias && i < nresults; i++) {
    int q = p->alias[i];
    for (size_t j = 0; q >= 0 && j < nparams; j++)
      if ((int)j != q && params[j] == params[q])
        return fail(dev, TPURT_INVALID_ARGUMENT,
                    "parameter %d (%s) is donated to result %zu and also passed as parameter %zu",
                    q, p->info.params[q].name, i, j);
  }
  double t0 = now_seconds();
  st = run(p, params, results, out_stats, popts, out_ops, donate ? p->alias : NULL);
  if (st == TPURT_OK) {
    p->host_seconds = now_seconds() - t0;
    p->executions++;
  }
  return st;
}

tpurt_status_t tpurt_program_execute(tpurt_program_t *p, tpurt_buffer_t *const *params,
                                     size_t nparams, tpurt_buffer_t **results, size_t nresults,
                                     tpurt_stats_t *out_stats) {
  return execute(p, params, nparams, results, nresults, out_stats, NULL, NULL, 0);
}

tpurt_status_t tpurt_program_execute_donated(tpurt_program_t *p, tpurt_buffer_t *const *params,
                                             size_t nparams, tpurt_buffer_t **results,
                                             size_t nresults, tpurt_stats_t *out_stats) {
  return execute(p, params, nparams, results, nresults, out_stats, NULL, NULL, 1);
}

/* One execution on every core, arguments checked: replica r's result
 * buffers are made first and the driver writes into them. */
static tpurt_status_t run_replicas(tpurt_program_t *p, int n, tpurt_buffer_t *const *params,
                                   tpurt_buffer_t **results, tpurt_stats_t *out_stats) {
  tpurt_device_t *dev = p->dev;
  uint32_t np = p->info.nparams, nr = p->info.nresults;
  size_t per = (size_t)np + nr;
  void **ptrs = rt_calloc(&dev->alloc, (size_t)n * per + 1, sizeof(void *));
  rt_replica *reps = rt_calloc(&dev->alloc, (size_t)n, sizeof *reps);
  tpurt_status_t st = ptrs && reps ? TPURT_OK : fail(dev, TPURT_OUT_OF_MEMORY, "out of memory");
  for (int r = 0; r < n && st == TPURT_OK; r++) {
    void **in = ptrs + (size_t)r * per, **outs = in + np;
    for (uint32_t i = 0; i < np; i++) in[i] = params[(size_t)r * np + i]->data;
    for (uint32_t i = 0; i < nr && st == TPURT_OK; i++) {
      const tpub_tensor *t = &p->info.results[i];
      tpurt_buffer_t **b = &results[(size_t)r * nr + i];
      st = make_buffer(dev, (tpurt_dtype_t)t->dtype, t->rank, t->dims, b);
      if (st == TPURT_OK) outs[i] = (*b)->data;
    }
    tpurt_stats_t *rs = out_stats ? &out_stats[r] : NULL;
    for (int u = 0; rs && u < TPURT_MAX_UNITS; u++) rs->units[u].name = isa_unit_name(u);
    reps[r] = (rt_replica){in, outs, rs};
  }
  if (st == TPURT_OK) st = dev->drv->ops->execute(p->p, reps, n, dev->msg, sizeof dev->msg);
  rt_free(&dev->alloc, ptrs);
  rt_free(&dev->alloc, reps);
  if (st)
    for (size_t i = 0; i < (size_t)n * nr; i++) {
      tpurt_buffer_destroy(results[i]);
      results[i] = NULL;
    }
  return st;
}

tpurt_status_t tpurt_program_execute_replicas(tpurt_program_t *p, size_t ncores,
                                              tpurt_buffer_t *const *params, size_t nparams,
                                              tpurt_buffer_t **results, size_t nresults,
                                              tpurt_stats_t *out_stats) {
  if (!p) return TPURT_INVALID_ARGUMENT;
  tpurt_device_t *dev = p->dev;
  int n = dev->info.ncores;
  if (out_stats) memset(out_stats, 0, sizeof *out_stats * (ncores == (size_t)n ? ncores : 1));
  if (ncores != (size_t)n)
    return fail(dev, TPURT_INVALID_ARGUMENT, "the device has %d cores, given %zu replicas", n, ncores);
  if ((nresults && !results) || (nparams && !params))
    return fail(dev, TPURT_INVALID_ARGUMENT, "tpurt_program_execute_replicas: NULL array");
  for (size_t i = 0; i < ncores * nresults; i++)
    results[i] = NULL;
  for (size_t r = 0; r < ncores; r++) {
    tpurt_status_t st = check_args(p, params + r * nparams, nparams, nresults);
    if (st) {
      char m[MSG_BYTES];
      snprintf(m, sizeof m, "%s", dev->msg);
      return fail(dev, st, "replica %zu: %s", r, m);
    }
  }
  double t0 = now_seconds();
  tpurt_status_t st = run_replicas(p, n, params, results, out_stats);
  if (st == TPURT_OK) {
    p->host_seconds = now_seconds() - t0;
    p->executions++;
  }
  return st;
}

tpurt_status_t tpurt_program_set_alias(tpurt_program_t *p, size_t result, int param) {
  if (!p) return TPURT_INVALID_ARGUMENT;
  return set_alias(p, result, param);
}

int tpurt_program_result_alias(const tpurt_program_t *p, size_t result) {
  if (!p || !p->alias || result >= p->info.nresults) return -1;
  return p->alias[result];
}

tpurt_status_t tpurt_buffer_write(tpurt_buffer_t *b, const void *data, size_t bytes) {
  if (!b || (!data && bytes)) return TPURT_INVALID_ARGUMENT;
  if (bytes != b->bytes)
    return fail(b->dev, TPURT_INVALID_ARGUMENT, "buffer holds %zu bytes, %zu given", b->bytes,
                bytes);
  if (bytes) memcpy(b->data, data, bytes);
  return TPURT_OK;
}

tpurt_status_t tpurt_program_metric(const tpurt_program_t *p, const char *key, double *out) {
  if (out) *out = 0;
  if (!p || !key || !out) return TPURT_INVALID_ARGUMENT;
  if (strcmp(key, "host_seconds") == 0) {
    *out = p->host_seconds;
  } else if (strcmp(key, "executions") == 0) {
    *out = (double)p->executions;
  } else if (strcmp(key, "compile_seconds") == 0) {
    if (p->info.compile_seconds < 0)
      return fail(p->dev, TPURT_NOT_FOUND, "compile_seconds: the program was not compiled by this library");
    *out = p->info.compile_seconds;
  } else if (strcmp(key, "flops") == 0) {
    if (!p->info.has_flops)
      return fail(p->dev, TPURT_NOT_FOUND, "flops: the program has no op table to count them");
    *out = (double)p->info.flops;
  } else {
    return fail(p->dev, TPURT_NOT_FOUND,
                "unknown metric '%.100s' (host_seconds, executions, compile_seconds, flops)", key);
  }
  return TPURT_OK;
}

/* ---- per-op profiles (runtime/prof/profile.c) ----------------------------- */

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
  return execute(p, params, nparams, results, nresults, out_stats, opts ? opts : &def, out_ops, 0);
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
    o->flops = p->info.flops;
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
