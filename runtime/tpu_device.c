/* tpu_device.c: the emulated TPU driver (device.h): .tpub programs (or
 * assembly, or module text when the library has a text compiler) run on
 * runtime/emu with the device's target, cycle limit, MXU model and trace. */
#include "runtime/device.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "emu.h"
#include "ici.h"
#include "isa.h"
#include "profile.h"
#include "target.h"

_Static_assert(TPURT_MAX_UNITS == ISA_UNIT_COUNT, "unit numbering");

struct rt_device {
  rt_allocator alloc;
  tgt_target target;
  uint64_t cycle_limit;
  int mxu_systolic;
  char *trace_path; /* NULL: no trace */
  emu_machine *emu; /* created at the first execution */
  emu_machine **cores; /* all cores (cores[0] == emu), at the first execution on all */
};

struct rt_program {
  rt_device *dev;
  tpub_image *img;
};

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static tpurt_status_t
fail(char *msg, size_t msglen, tpurt_status_t st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, msglen, fmt, ap);
  va_end(ap);
  return st;
}

/* ---- device --------------------------------------------------------------- */

static int tpu_claims(const char *spec) {
  return !(strncmp(spec, "cpu", 3) == 0 && (!spec[3] || spec[3] == ','));
}

static tpurt_status_t tpu_create(const char *spec, const rt_device_config *c, rt_device **out,
                                 rt_device_info *info, char *err, size_t errlen) {
  tgt_target t;
  if (tgt_parse(spec, &t, err, errlen)) return TPURT_INVALID_ARGUMENT;
  if (!out) return TPURT_OK;
  rt_device *d = rt_calloc(c->alloc, 1, sizeof *d);
  if (!d) return TPURT_OUT_OF_MEMORY;
  d->alloc = *c->alloc;
  d->target = t;
  d->cycle_limit = c->cycle_limit;
  d->mxu_systolic = c->mxu_systolic;
  if (c->trace_path) {
    size_t n = strlen(c->trace_path);
    d->trace_path = rt_alloc(&d->alloc, n + 1);
    if (!d->trace_path) {
      rt_free(&d->alloc, d);
      return TPURT_OUT_OF_MEMORY;
    }
    memcpy(d->trace_path, c->trace_path, n + 1);
  }
  info->platform = "tpu";
  tgt_format(&t, info->target, sizeof info->target);
  info->ncores = t.ncores;
  *out = d;
  return TPURT_OK;
}

static void tpu_destroy(rt_device *d) {
  if (!d) return;
  rt_allocator a = d->alloc;
  for (int c = 1; d->cores && c < d->target.ncores; c++) emu_destroy(d->cores[c]);
  rt_free(&a, d->cores);
  emu_destroy(d->emu);
  rt_free(&a, d->trace_path);
  rt_free(&a, d);
}

static void *tpu_buffer_alloc(rt_device *d, size_t bytes) { return rt_calloc(&d->alloc, 1, bytes); }
static void tpu_buffer_free(rt_device *d, void *p) { rt_free(&d->alloc, p); }

/* ---- programs ------------------------------------------------------------- */

static void describe(const tpub_image *img, rt_program_info *info) {
  memset(info, 0, sizeof *info);
  info->nparams = img->nparams;
  info->nresults = img->nresults;
  info->params = img->params;
  info->results = img->results;
  info->compile_seconds = -1;
  info->has_flops = img->nops > 0;
  for (uint32_t i = 0; i < img->nops; i++) info->flops += img->ops[i].flops;
}

/* Takes ownership of img: verifies it against the device and wraps it. */
static tpurt_status_t adopt(rt_device *d, tpub_image *img, rt_program **out, rt_program_info *info,
                            char *msg, size_t msglen) {
  char why[512];
  tgt_target pt;
  if (tgt_parse(img->target, &pt, why, sizeof why)) {
    tpub_free(img);
    return fail(msg, msglen, TPURT_INVALID_PROGRAM, "invalid program: %s", why);
  }
  if (pt.mxu_rows != d->target.mxu_rows || pt.mxu_cols != d->target.mxu_cols) {
    tpub_free(img);
    return fail(msg, msglen, TPURT_UNSUPPORTED,
                "program was compiled for %dx%d MXUs, the device has %dx%d", pt.mxu_rows,
                pt.mxu_cols, d->target.mxu_rows, d->target.mxu_cols);
  }
  int rc = tpub_verify(img, &d->target, why, sizeof why);
  if (rc) {
    tpub_free(img);
    if (rc == -2) return fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory");
    return fail(msg, msglen, TPURT_INVALID_PROGRAM, "invalid program: %s", why);
  }
  rt_program *p = rt_calloc(&d->alloc, 1, sizeof *p);
  if (!p) {
    tpub_free(img);
    return fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory");
  }
  p->dev = d;
  p->img = img;
  describe(img, info);
  *out = p;
  return TPURT_OK;
}

static int is_tpub(const void *bytes, size_t size) {
  return size >= 4 && memcmp(bytes, "TPUB", 4) == 0;
}

static tpurt_status_t tpu_load(rt_device *d, const char *name, const void *bytes, size_t size,
                               rt_program **out, rt_program_info *info, char *msg, size_t msglen) {
  rt_text_compiler compile = rt_linked_drivers()->compile_text;
  if (compile && !is_tpub(bytes, size)) { /* module text: compile it for this TPU */
    tpub_image *ti;
    double secs;
    char target[512];
    tgt_format(&d->target, target, sizeof target);
    tpurt_status_t st = compile(name, bytes, size, target, &ti, &secs, msg, msglen);
    if (st) return st;
    st = adopt(d, ti, out, info, msg, msglen);
    if (st == TPURT_OK) info->compile_seconds = secs;
    return st;
  }
  char why[512];
  tpub_image *img;
  int rc = tpub_read(bytes, size, &d->alloc, &img, why, sizeof why);
  if (rc == -2) return fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory");
  if (rc) {
    const char *hint = "";
    if (!compile && !is_tpub(bytes, size) && size >= 9 && memchr(bytes, 0, size) == NULL)
      hint = " (module text: compile it with `tpucc compile`, or link libtpurt-cpu to load text)";
    return fail(msg, msglen, TPURT_INVALID_PROGRAM, "invalid program: %s%s", why, hint);
  }
  return adopt(d, img, out, info, msg, msglen);
}

tpurt_status_t rt_tpu_assemble(rt_device *d, const char *text, size_t len, const char *name,
                               rt_program **out, rt_program_info *info, char *msg, size_t msglen) {
  tpub_image *img;
  int rc = isa_assemble(text, len, name, &d->alloc, &img, msg, msglen);
  if (rc == -2) return fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory");
  if (rc) return TPURT_PARSE_ERROR;
  return adopt(d, img, out, info, msg, msglen);
}

static void tpu_program_destroy(rt_program *p) {
  if (!p) return;
  tpub_free(p->img);
  rt_free(&p->dev->alloc, p);
}

tpub_image *rt_tpu_program_image(rt_program *p) { return p->img; }

/* ---- execution ------------------------------------------------------------ */

/* Chrome trace-event output (tpurt_device_options_t.trace_path). */
typedef struct trace_out {
  FILE *f;
  int n;
} trace_out;

/* One instruction's event on process row pid. */
static void trace_write(FILE *f, int pid, int unit, uint32_t pc, uint64_t word, uint64_t start,
                        uint64_t occ, uint64_t lat) {
  char text[160] = "?";
  isa_inst in;
  if (!isa_decode(word, &in, NULL, 0)) isa_format(&in, text, sizeof text);
  fprintf(f,
          ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
          "\"ts\":%llu,\"dur\":%llu,\"args\":{\"pc\":%u,\"lat\":%llu}}",
          text, pid, unit, (unsigned long long)start, (unsigned long long)occ, pc,
          (unsigned long long)lat);
}

static void trace_event(void *user, int unit, uint32_t pc, uint64_t word, uint64_t start,
                        uint64_t occ, uint64_t lat) {
  trace_out *t = user;
  trace_write(t->f, 1, unit, pc, word, start, occ, lat);
  t->n++;
}

static FILE *trace_open(const char *path) {
  FILE *f = fopen(path, "w");
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

/* Core c's machine (created at its first run); NULL after setting msg. */
static emu_machine *core_machine(rt_device *d, int c, char *msg, size_t msglen) {
  emu_machine **slot = &d->emu;
  if (c > 0) {
    if (!d->cores) d->cores = rt_calloc(&d->alloc, (size_t)d->target.ncores, sizeof *d->cores);
    if (!d->cores) {
      fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory creating the cores");
      return NULL;
    }
    slot = &d->cores[c];
  }
  if (!*slot) {
    *slot = emu_create(&d->target, &d->alloc);
    if (!*slot) {
      fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory creating core %d", c);
      return NULL;
    }
    emu_set_systolic(*slot, d->mxu_systolic);
  }
  return *slot;
}

/* The HBM image of a run with the constants and r's parameters in place;
 * NULL after setting msg. */
static uint8_t *hbm_image(rt_program *p, const rt_replica *r, char *msg, size_t msglen) {
  rt_device *d = p->dev;
  const tpub_image *img = p->img;
  uint8_t *hbm = rt_calloc(&d->alloc, 1, (size_t)img->hbm_bytes);
  if (!hbm) {
    fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory for %llu bytes of HBM",
         (unsigned long long)img->hbm_bytes);
    return NULL;
  }
  for (uint32_t i = 0; i < img->nconsts; i++)
    memcpy(hbm + img->consts[i].hbm_offset, img->consts[i].data, (size_t)img->consts[i].size);
  for (uint32_t i = 0; i < img->nparams; i++)
    memcpy(hbm + img->params[i].hbm_offset, r->params[i], (size_t)img->params[i].bytes);
  return hbm;
}

/* The single core (created at the first run) and the HBM image of a run
 * with r's parameters; NULL after setting msg. */
static uint8_t *prepare(rt_program *p, const rt_replica *r, char *msg, size_t msglen) {
  if (!core_machine(p->dev, 0, msg, msglen)) return NULL;
  return hbm_image(p, r, msg, msglen);
}

/* Results and status of a run; frees hbm. */
static tpurt_status_t finish_run(rt_program *p, uint8_t *hbm, int rc, const emu_stats *es,
                                 const emu_fault *ef, const rt_replica *r, char *msg,
                                 size_t msglen) {
  const tpub_image *img = p->img;
  if (r->stats) emu_stats_export(es, &p->dev->target, r->stats);
  if (rc) {
    rt_free(&p->dev->alloc, hbm);
    char text[160] = "";
    isa_inst in;
    if (!isa_decode(ef->word, &in, NULL, 0)) isa_format(&in, text, sizeof text);
    tpurt_status_t st = ef->kind == EMU_FAULT_CYCLES ? TPURT_RESOURCE_EXHAUSTED
                        : ef->kind == EMU_FAULT_OOM  ? TPURT_OUT_OF_MEMORY
                                                     : TPURT_RUNTIME_FAULT;
    return fail(msg, msglen, st, "fault at pc %u (%s) at cycle %llu: %s", ef->pc, text,
                (unsigned long long)ef->cycle, ef->reason);
  }
  for (uint32_t i = 0; i < img->nresults; i++)
    memcpy(r->results[i], hbm + img->results[i].hbm_offset, (size_t)img->results[i].bytes);
  rt_free(&p->dev->alloc, hbm);
  return TPURT_OK;
}

/* Whether the program talks over the interconnect. */
static int uses_ici(const tpub_image *img) {
  for (uint32_t i = 0; i < img->ncode; i++)
    if ((img->code[i] >> 56) == OP_DMAPUT) return 1;
  return 0;
}

/* Host threads of a many-core run: TPURT_HOST_THREADS, else the host's
 * processors (results and cycles do not depend on it). */
static int host_threads(int n) {
  const char *e = getenv("TPURT_HOST_THREADS");
  long k = e && *e ? strtol(e, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
  if (k < 1) k = 1;
  return k > n ? n : (int)k;
}

/* Chrome trace of many cores: one process row per core, one writer at a
 * time. */
typedef struct trace_core {
  FILE *f;
  pthread_mutex_t *mu;
  int core;
} trace_core;

static void trace_event_core(void *user, int unit, uint32_t pc, uint64_t word, uint64_t start,
                             uint64_t occ, uint64_t lat) {
  trace_core *t = user;
  pthread_mutex_lock(t->mu);
  trace_write(t->f, t->core + 1, unit, pc, word, start, occ, lat);
  pthread_mutex_unlock(t->mu);
}

static tpurt_status_t trace_close(FILE *f, const char *path, char *msg, size_t msglen) {
  fputs("\n]\n", f);
  int bad = ferror(f);
  if (fclose(f) || bad)
    return fail(msg, msglen, TPURT_IO_ERROR, "%s: error writing the trace", path);
  return TPURT_OK;
}

/* n cores joined by the interconnect, one replica each. */
static tpurt_status_t execute_many(rt_program *p, const rt_replica *r, int n, char *msg,
                                   size_t msglen) {
  rt_device *d = p->dev;
  size_t per = sizeof(emu_machine *) + sizeof(uint8_t *) + sizeof(emu_stats) + sizeof(emu_fault) +
               sizeof(trace_core);
  uint8_t *mem = rt_calloc(&d->alloc, (size_t)n, per);
  if (!mem) return fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory");
  emu_stats *es = (emu_stats *)(void *)mem;
  emu_fault *ef = (emu_fault *)(void *)(es + n);
  trace_core *tc = (trace_core *)(void *)(ef + n);
  emu_machine **mc = (emu_machine **)(void *)(tc + n);
  uint8_t **hbm = (uint8_t **)(void *)(mc + n);
  tpurt_status_t st = TPURT_OK;
  for (int c = 0; c < n && st == TPURT_OK; c++) {
    if (!(mc[c] = core_machine(d, c, msg, msglen)) || !(hbm[c] = hbm_image(p, &r[c], msg, msglen)))
      st = TPURT_OUT_OF_MEMORY;
  }
  emu_ici *x = NULL;
  if (st == TPURT_OK && !(x = emu_ici_create(&d->target, mc, n, host_threads(n), &d->alloc)))
    st = fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory");
  FILE *tf = NULL;
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  if (st == TPURT_OK && d->trace_path && !(tf = trace_open(d->trace_path)))
    st = fail(msg, msglen, TPURT_IO_ERROR, "%s: cannot create the trace", d->trace_path);
  for (int c = 0; tf && c < n; c++) {
    tc[c] = (trace_core){tf, &mu, c};
    emu_set_trace(mc[c], trace_event_core, &tc[c]);
  }
  int who = 0, rc = 0;
  if (st == TPURT_OK) rc = emu_ici_run(x, p->img, hbm, d->cycle_limit, es, ef, &who);
  for (int c = 0; tf && c < n; c++) emu_set_trace(mc[c], NULL, NULL);
  if (tf && (st = trace_close(tf, d->trace_path, msg, msglen)) == TPURT_OK) tf = NULL;
  emu_ici_destroy(x);
  for (int c = 0; c < n; c++) {
    if (st != TPURT_OK || (rc && c != who)) {
      if (st == TPURT_OK && r[c].stats) emu_stats_export(&es[c], &d->target, r[c].stats);
      rt_free(&d->alloc, hbm[c]);
      continue;
    }
    tpurt_status_t s1 = finish_run(p, hbm[c], rc, &es[c], &ef[c], &r[c], msg, msglen);
    if (s1 != TPURT_OK) {
      char inner[400];
      snprintf(inner, sizeof inner, "%s", msg);
      snprintf(msg, msglen, "core %d: %s", c, inner);
      st = s1;
    }
  }
  pthread_mutex_destroy(&mu);
  rt_free(&d->alloc, mem);
  return st;
}

static tpurt_status_t tpu_execute(rt_program *p, const rt_replica *r, int n, char *msg,
                                  size_t msglen) {
  rt_device *d = p->dev;
  if (n != 1 && n != d->target.ncores)
    return fail(msg, msglen, TPURT_INVALID_ARGUMENT, "%d replicas for %d cores", n,
                d->target.ncores);
  if (n > 1 || uses_ici(p->img)) return execute_many(p, r, n, msg, msglen);
  uint8_t *hbm = prepare(p, r, msg, msglen);
  if (!hbm) return TPURT_OUT_OF_MEMORY;
  emu_stats es;
  emu_fault ef;
  trace_out tr = {NULL, 0};
  if (d->trace_path) {
    tr.f = trace_open(d->trace_path);
    if (!tr.f) {
      rt_free(&d->alloc, hbm);
      return fail(msg, msglen, TPURT_IO_ERROR, "%s: cannot create the trace", d->trace_path);
    }
    emu_set_trace(d->emu, trace_event, &tr);
  }
  int rc = emu_run(d->emu, p->img, hbm, d->cycle_limit, &es, &ef);
  if (tr.f) {
    emu_set_trace(d->emu, NULL, NULL);
    fputs("\n]\n", tr.f);
    int bad = ferror(tr.f);
    if (fclose(tr.f) || bad) {
      rt_free(&d->alloc, hbm);
      return fail(msg, msglen, TPURT_IO_ERROR, "%s: error writing the trace", d->trace_path);
    }
  }
  return finish_run(p, hbm, rc, &es, &ef, r, msg, msglen);
}

tpurt_status_t rt_tpu_execute_profile(rt_program *p, const rt_replica *r,
                                      const tpurt_profile_options_t *o, tpurt_op_stats_t *out_ops,
                                      char *msg, size_t msglen) {
  rt_device *d = p->dev;
  const tpub_image *img = p->img;
  uint8_t *hbm = prepare(p, r, msg, msglen);
  if (!hbm) return TPURT_OUT_OF_MEMORY;
  const char *tp = o->trace_path ? o->trace_path : d->trace_path;
  FILE *tf = NULL;
  if (tp && !(tf = fopen(tp, "w"))) {
    rt_free(&d->alloc, hbm);
    return fail(msg, msglen, TPURT_IO_ERROR, "%s: cannot create the trace", tp);
  }
  size_t nops = img->nops ? img->nops : 1;
  tpurt_op_stats_t *ops = out_ops;
  if (!ops) ops = rt_calloc(&d->alloc, nops, sizeof *ops);
  prof *pf = NULL;
  if (ops) pf = prof_create(&d->alloc, img, &d->target, ops, tf, o->trace_instructions);
  if (!pf) {
    if (ops != out_ops) rt_free(&d->alloc, ops);
    if (tf) fclose(tf);
    rt_free(&d->alloc, hbm);
    return fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory for the profile");
  }
  emu_stats es;
  emu_fault ef;
  prof_attach(pf, d->emu);
  int rc = emu_run(d->emu, img, hbm, d->cycle_limit, &es, &ef);
  emu_set_trace(d->emu, NULL, NULL);
  int prc = prof_finish(pf, &es);
  prof_destroy(pf);
  if (ops != out_ops) rt_free(&d->alloc, ops);
  if (tf) {
    int bad = ferror(tf);
    if (fclose(tf) || bad || prc) {
      rt_free(&d->alloc, hbm);
      return fail(msg, msglen, prc ? TPURT_OUT_OF_MEMORY : TPURT_IO_ERROR,
                  "%s: error writing the trace", tp);
    }
  }
  return finish_run(p, hbm, rc, &es, &ef, r, msg, msglen);
}

static const rt_device_ops tpu_ops = {
    tpu_load, tpu_program_destroy, tpu_buffer_alloc, tpu_buffer_free, tpu_execute, tpu_destroy,
};

const rt_driver rt_tpu_driver = {"tpu", "v3", tpu_claims, tpu_create, &tpu_ops};
