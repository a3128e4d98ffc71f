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
  tpurt_peers_t peers; /* nranks 0: this process runs every core */
  /* the interconnect's link counters of the last execution (zero after
   * one that ran no interconnect); nlinks 0 on a single-core target */
  emu_ici_link_stats *links;
  int nlinks;
  int trace_per_rank;  /* with peers: each rank traces its own cores */
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
  if (c->peers && c->peers->nranks > 1) d->peers = *c->peers;
  d->trace_per_rank = c->trace_per_rank;
  if (c->trace_path) {
    size_t n = strlen(c->trace_path);
    d->trace_path = rt_alloc(&d->alloc, n + 1);
    if (!d->trace_path) {
      rt_free(&d->alloc, d);
      return TPURT_OUT_OF_MEMORY;
    }
    memcpy(d->trace_path, c->trace_path, n + 1);
  }
  if (t.ncores > 1) {
    d->nlinks = t.chips * (TGT_ICI_LINKS + t.cores_per_chip);
    d->links = rt_calloc(&d->alloc, (size_t)d->nlinks, sizeof *d->links);
    if (!d->links) {
      rt_free(&d->alloc, d->trace_path);
      rt_free(&d->alloc, d);
      return TPURT_OUT_OF_MEMORY;
    }
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
  rt_free(&a, d->links);
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

/* A trace file whose header names the process row of cores lo .. hi - 1
 * of n (pid c + 1: "tpucc core" for a single core, else "core c") and
 * their units' rows. */
static FILE *trace_open(const char *path, int lo, int hi, int n) {
  FILE *f = fopen(path, "w");
  if (!f) return NULL;
  for (int c = lo; c < hi; c++) {
    fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"",
            c > lo ? ",\n" : "[", c + 1);
    if (n == 1) fputs("tpucc core\"}}", f);
    else fprintf(f, "core %d\"}}", c);
    for (int u = 0; u < TPURT_MAX_UNITS; u++)
      fprintf(f,
              ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,"
              "\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
              c + 1, u, isa_unit_name(u));
  }
  return f;
}

/* The interconnect's rows of a trace of n cores: process n + 1, "ICI
 * links", a thread per link that carried data (tid: the link id, named by
 * emu_ici_link_name), and one span per transfer on each link it crossed,
 * from its start for the cycles it held the link. */
static void trace_links(FILE *f, const tgt_target *t, int n, const emu_ici_event *ev,
                        size_t nev, const emu_ici_link_stats *links, int nlinks) {
  fprintf(f, ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,"
             "\"args\":{\"name\":\"ICI links\"}}", n + 1);
  for (int k = 0; k < nlinks; k++) {
    if (!links[k].transfers) continue;
    char name[64];
    emu_ici_link_name(t, k, name, sizeof name);
    fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
               "\"args\":{\"name\":\"%s\"}}", n + 1, k, name);
  }
  for (size_t i = 0; i < nev; i++)
    fprintf(f,
            ",\n{\"name\":\"core %d -> core %d\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
            "\"ts\":%llu,\"dur\":%llu,\"args\":{\"bytes\":%llu}}",
            ev[i].src, ev[i].dst, n + 1, ev[i].link, (unsigned long long)ev[i].start,
            (unsigned long long)ev[i].occ, (unsigned long long)ev[i].bytes);
}

/* Keeps the link counters of a run of x (NULL: one without the
 * interconnect) as the device's last. */
static void keep_links(rt_device *d, const emu_ici *x) {
  for (int k = 0; k < d->nlinks; k++) {
    if (x && k < emu_ici_nlinks(x)) d->links[k] = *emu_ici_link(x, k);
    else memset(&d->links[k], 0, sizeof d->links[k]);
  }
}

int rt_tpu_link_count(const rt_device *d) { return d->nlinks; }

void rt_tpu_link_stats(const rt_device *d, int link, tpurt_link_stats_t *out) {
  static const char *const dirs[] = {"x+", "x-", "y+", "y-"};
  memset(out, 0, sizeof *out);
  emu_ici_link_name(&d->target, link, out->name, sizeof out->name);
  emu_ici_link_ends(&d->target, link, &out->chip, &out->to_chip, &out->core);
  int k = link % (TGT_ICI_LINKS + d->target.cores_per_chip);
  out->direction = k < TGT_ICI_LINKS ? dirs[k] : "on-chip";
  out->transfers = d->links[link].transfers;
  out->bytes = d->links[link].bytes;
  out->busy_cycles = d->links[link].busy_cycles;
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

/* The status and message of a fault. When img attributes code to the
 * module's instructions (its OPS section), the message starts with the
 * faulting instruction's "file:line:col: name (kind): ". */
static tpurt_status_t fault_status(const tpub_image *img, const emu_fault *ef, char *msg,
                                   size_t msglen) {
  char text[160] = "", where[400] = "";
  isa_inst in;
  if (!isa_decode(ef->word, &in, NULL, 0)) isa_format(&in, text, sizeof text);
  if (img && img->nops && ef->pc < img->ncode) {
    const tpub_op *o = &img->ops[img->op_of_pc[ef->pc]];
    if (o->file && o->file[0] && o->line)
      snprintf(where, sizeof where, "%s:%u:%u: %s (%s): ", o->file, o->line, o->col, o->name,
               o->kind);
  }
  tpurt_status_t st = ef->kind == EMU_FAULT_CYCLES ? TPURT_RESOURCE_EXHAUSTED
                      : ef->kind == EMU_FAULT_OOM  ? TPURT_OUT_OF_MEMORY
                                                   : TPURT_RUNTIME_FAULT;
  return fail(msg, msglen, st, "%sfault at pc %u (%s) at cycle %llu: %s", where, ef->pc, text,
              (unsigned long long)ef->cycle, ef->reason);
}

/* Results and status of a run; frees hbm. */
static tpurt_status_t finish_run(rt_program *p, uint8_t *hbm, int rc, const emu_stats *es,
                                 const emu_fault *ef, const rt_replica *r, char *msg,
                                 size_t msglen) {
  const tpub_image *img = p->img;
  if (r->stats) emu_stats_export(es, &p->dev->target, r->stats);
  if (rc) {
    rt_free(&p->dev->alloc, hbm);
    return fault_status(img, ef, msg, msglen);
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
  if (st == TPURT_OK && d->trace_path && !(tf = trace_open(d->trace_path, 0, n, n)))
    st = fail(msg, msglen, TPURT_IO_ERROR, "%s: cannot create the trace", d->trace_path);
  if (tf) emu_ici_log_links(x);
  for (int c = 0; tf && c < n; c++) {
    tc[c] = (trace_core){tf, &mu, c};
    emu_set_trace(mc[c], trace_event_core, &tc[c]);
  }
  int who = 0, rc = 0;
  if (st == TPURT_OK) rc = emu_ici_run(x, p->img, hbm, d->cycle_limit, es, ef, &who);
  for (int c = 0; tf && c < n; c++) emu_set_trace(mc[c], NULL, NULL);
  if (x) keep_links(d, x);
  if (tf) {
    size_t nev = 0;
    emu_ici_event *ev = emu_ici_take_events(x, &nev);
    trace_links(tf, &d->target, n, ev, nev, d->links, d->nlinks);
    rt_free(&d->alloc, ev);
  }
  if (tf && (st = trace_close(tf, d->trace_path, msg, msglen)) == TPURT_OK) tf = NULL;
  emu_ici_destroy(x);
  /* every core's statistics, also those after the faulting core */
  tpurt_status_t ran = st;
  for (int c = 0; c < n; c++) {
    if (ran != TPURT_OK || (rc && c != who)) {
      if (ran == TPURT_OK && r[c].stats) emu_stats_export(&es[c], &d->target, r[c].stats);
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

/* ---- cores shared across processes (tpurt_peers_t) -------------------------
 * Rank k runs its share of the cores (emu_ici_share). Rank 0 sends each
 * rank its cores' parameters; the ranks run together (emu_ici_run with
 * the peers); each rank sends rank 0 its cores' statistics, fault
 * records, results and trace events, and rank 0 writes the trace with
 * every core's events, core by core. */

/* A growing message to one rank; oom once memory ran out. */
typedef struct peer_msg {
  uint8_t *b;
  size_t n, cap;
  int oom;
} peer_msg;

static void msg_put(rt_device *d, peer_msg *m, const void *p, size_t n) {
  if (m->oom || !n) return;
  if (m->n + n > m->cap) {
    size_t nc = m->cap ? 2 * m->cap : 4096;
    while (nc < m->n + n)
      nc *= 2;
    uint8_t *b = rt_alloc(&d->alloc, nc);
    if (!b) {
      m->oom = 1;
      return;
    }
    if (m->n) memcpy(b, m->b, m->n);
    rt_free(&d->alloc, m->b);
    m->b = b;
    m->cap = nc;
  }
  memcpy(m->b + m->n, p, n);
  m->n += n;
}

/* One exchange of the peers: out[k] goes to rank k (out NULL: nothing
 * sent); rank k's message into recv[k], rlen[k]. */
static tpurt_status_t peers_exchange(rt_device *d, const peer_msg *out, const void **recv,
                                     size_t *rlen, char *msg, size_t msglen) {
  const tpurt_peers_t *pr = &d->peers;
  int R = pr->nranks;
  const void **send = rt_calloc(&d->alloc, (size_t)R, sizeof *send);
  size_t *len = rt_calloc(&d->alloc, (size_t)R, sizeof *len);
  tpurt_status_t st = TPURT_OK;
  char why[256] = "";
  if (!send || !len) {
    st = fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory");
  } else {
    for (int k = 0; out && k < R; k++) {
      send[k] = out[k].b;
      len[k] = out[k].n;
      if (out[k].oom) st = fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory for a message");
    }
    /* every rank takes part, also one that ran out of memory */
    if (pr->exchange(pr->user, send, len, recv, rlen, why, sizeof why))
      st = fail(msg, msglen, TPURT_IO_ERROR, "rank %d: %s", pr->rank, why);
  }
  rt_free(&d->alloc, (void *)send);
  rt_free(&d->alloc, len);
  return st;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

/* A hash of what a program computes: its code, SMEM, constants and
 * signature (not its names or op table). */
static uint64_t program_hash(const tpub_image *img) {
  uint64_t h = fnv(0xcbf29ce484222325ull, img->code, (size_t)img->ncode * sizeof *img->code);
  h = fnv(h, img->smem, (size_t)img->nsmem * sizeof *img->smem);
  h = fnv(h, &img->hbm_bytes, sizeof img->hbm_bytes);
  for (uint32_t i = 0; i < img->nconsts; i++) {
    const tpub_const *k = &img->consts[i];
    h = fnv(h, &k->hbm_offset, sizeof k->hbm_offset);
    h = fnv(h, k->data, (size_t)k->size);
  }
  for (uint32_t i = 0; i < img->nparams + img->nresults; i++) {
    const tpub_tensor *t = i < img->nparams ? &img->params[i] : &img->results[i - img->nparams];
    h = fnv(h, &t->dtype, sizeof t->dtype);
    h = fnv(h, t->dims, (size_t)t->rank * sizeof *t->dims);
    h = fnv(h, &t->hbm_offset, sizeof t->hbm_offset);
  }
  return h;
}

/* Every rank's program hash (the first 8 bytes of its message) against
 * rank 0's, the same check and message on every rank. */
static tpurt_status_t same_program(rt_device *d, uint64_t mine, const void **recv, char *msg,
                                   size_t msglen) {
  int R = d->peers.nranks, me = d->peers.rank;
  uint64_t h0 = mine;
  if (me != 0) memcpy(&h0, recv[0], sizeof h0);
  for (int k = 1; k < R; k++) {
    uint64_t hk = mine;
    if (k != me) memcpy(&hk, recv[k], sizeof hk);
    if (hk != h0)
      return fail(msg, msglen, TPURT_FAILED_PRECONDITION,
                  "rank %d loaded another program than rank 0: load the same program on every "
                  "rank",
                  k);
  }
  return TPURT_OK;
}

/* This rank's replicas of cores [lo, hi) (lr[c - lo]): rank 0's own, the
 * others with parameters rank 0 sent (in *block, freed by the caller).
 * Every rank's message starts with its program's hash (same_program). */
static tpurt_status_t scatter_params(rt_program *p, const rt_replica *r, int n, rt_replica *lr,
                                     void **pp, uint8_t **block, char *msg, size_t msglen) {
  rt_device *d = p->dev;
  const tpub_image *img = p->img;
  int R = d->peers.nranks, me = d->peers.rank, lo, hi;
  emu_ici_share(n, R, me, &lo, &hi);
  peer_msg *out = NULL;
  tpurt_status_t st = TPURT_OK;
  uint64_t mine = program_hash(img);
  if (!(out = rt_calloc(&d->alloc, (size_t)R, sizeof *out)))
    return fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory");
  for (int k = 0; k < R; k++) {
    if (k != me) msg_put(d, &out[k], &mine, sizeof mine);
    if (me != 0 || k == 0) continue;
    int a, b;
    emu_ici_share(n, R, k, &a, &b);
    for (int c = a; c < b; c++)
      for (uint32_t i = 0; i < img->nparams; i++)
        msg_put(d, &out[k], r[c].params[i], (size_t)img->params[i].bytes);
  }
  const void **recv = rt_calloc(&d->alloc, (size_t)R, sizeof *recv);
  size_t *rlen = rt_calloc(&d->alloc, (size_t)R, sizeof *rlen);
  if (!recv || !rlen) st = fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory");
  if (st == TPURT_OK) st = peers_exchange(d, out, recv, rlen, msg, msglen);
  size_t need = 0;
  for (uint32_t i = 0; i < img->nparams; i++) need += (size_t)img->params[i].bytes;
  need *= (size_t)(hi - lo);
  for (int k = 0; st == TPURT_OK && k < R; k++)
    if (k != me && rlen[k] < sizeof mine)
      st = fail(msg, msglen, TPURT_INTERNAL, "rank %d sent a malformed parameter message", k);
  if (st == TPURT_OK) st = same_program(d, mine, recv, msg, msglen);
  if (st == TPURT_OK && me != 0 && rlen[0] != sizeof mine + need)
    st = fail(msg, msglen, TPURT_INTERNAL, "rank 0 sent %zu bytes of parameters, %zu expected",
              rlen[0] - sizeof mine, need);
  if (st == TPURT_OK && me != 0 && need && !(*block = rt_alloc(&d->alloc, need)))
    st = fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory for the parameters");
  if (st == TPURT_OK && me != 0 && need)
    memcpy(*block, (const uint8_t *)recv[0] + sizeof mine, need);
  size_t at = 0;
  for (int c = lo; st == TPURT_OK && c < hi; c++) {
    lr[c - lo] = r[c];
    if (me == 0) continue;
    void **q = pp + (size_t)(c - lo) * img->nparams;
    for (uint32_t i = 0; i < img->nparams; i++) {
      q[i] = *block + at;
      at += (size_t)img->params[i].bytes;
    }
    lr[c - lo].params = q;
  }
  for (int k = 0; out && k < R; k++) rt_free(&d->alloc, out[k].b);
  rt_free(&d->alloc, out);
  rt_free(&d->alloc, (void *)recv);
  rt_free(&d->alloc, rlen);
  return st;
}

/* The state of one shared run on this rank (arrays indexed by core). */
typedef struct shared_run {
  int n, lo, hi, rc, who;
  emu_machine **mc;
  uint8_t **hbm;
  emu_stats *es;
  emu_fault *ef;
  trace_core *tc;
  char **tbuf; /* per core: its trace events (open_memstream) */
  size_t *tlen;
  emu_ici_event *lev; /* with a trace: the link events (every rank routes all) */
  size_t nlev;
} shared_run;

/* What rank k sends rank 0 about each of its cores: statistics, fault
 * record, results (when the run succeeded), trace bytes. */
static void gather_message(rt_program *p, shared_run *s, peer_msg *m) {
  rt_device *d = p->dev;
  const tpub_image *img = p->img;
  for (int c = s->lo; c < s->hi; c++) {
    tpurt_stats_t ts;
    memset(&ts, 0, sizeof ts);
    emu_stats_export(&s->es[c], &d->target, &ts);
    msg_put(d, m, &ts, sizeof ts);
    msg_put(d, m, &s->ef[c], sizeof s->ef[c]);
    for (uint32_t i = 0; !s->rc && i < img->nresults; i++)
      msg_put(d, m, s->hbm[c] + img->results[i].hbm_offset, (size_t)img->results[i].bytes);
    uint64_t tl = s->tbuf && !d->trace_per_rank ? s->tlen[c] : 0;
    msg_put(d, m, &tl, sizeof tl);
    msg_put(d, m, s->tbuf ? s->tbuf[c] : NULL, (size_t)tl);
  }
}

/* Rank 0: reads rank k's message into r (statistics, results), the fault
 * record of core who, and the trace events into s. */
static tpurt_status_t gather_read(rt_program *p, shared_run *s, const rt_replica *r, int k,
                                  const uint8_t *b, size_t len, emu_fault *wf, char *msg,
                                  size_t msglen) {
  rt_device *d = p->dev;
  const tpub_image *img = p->img;
  int a, e;
  size_t at = 0;
  emu_ici_share(s->n, d->peers.nranks, k, &a, &e);
  for (int c = a; c < e; c++) {
    size_t need = sizeof(tpurt_stats_t) + sizeof(emu_fault);
    for (uint32_t i = 0; !s->rc && i < img->nresults; i++) need += (size_t)img->results[i].bytes;
    if (len - at < need + sizeof(uint64_t)) break;
    if (r[c].stats) {
      memcpy(r[c].stats, b + at, sizeof(tpurt_stats_t));
      for (int u = 0; u < TPURT_MAX_UNITS; u++) r[c].stats->units[u].name = isa_unit_name(u);
    }
    at += sizeof(tpurt_stats_t);
    if (c == s->who) memcpy(wf, b + at, sizeof *wf);
    at += sizeof(emu_fault);
    for (uint32_t i = 0; !s->rc && i < img->nresults; i++) {
      memcpy(r[c].results[i], b + at, (size_t)img->results[i].bytes);
      at += (size_t)img->results[i].bytes;
    }
    uint64_t tl;
    memcpy(&tl, b + at, sizeof tl);
    at += sizeof tl;
    if (tl > len - at) break;
    if (s->tbuf && tl && (s->tbuf[c] = rt_alloc(&d->alloc, (size_t)tl))) {
      memcpy(s->tbuf[c], b + at, (size_t)tl);
      s->tlen[c] = (size_t)tl;
    }
    at += (size_t)tl;
    if (c == e - 1 && at == len) return TPURT_OK;
  }
  return fail(msg, msglen, TPURT_INTERNAL, "rank %d sent a malformed result message", k);
}

/* Rank 0: the trace of every core, core by core, and of the links
 * (trace_per_rank: each rank, of its own cores, without the links). */
static tpurt_status_t shared_trace(rt_device *d, const shared_run *s, char *msg, size_t msglen) {
  int own = d->trace_per_rank;
  FILE *f = trace_open(d->trace_path, own ? s->lo : 0, own ? s->hi : s->n, s->n);
  if (!f) return fail(msg, msglen, TPURT_IO_ERROR, "%s: cannot create the trace", d->trace_path);
  for (int c = 0; c < s->n; c++)
    if (s->tbuf[c]) fwrite(s->tbuf[c], 1, s->tlen[c], f);
  /* the links belong to the whole run: in rank 0's trace of every core */
  if (!own) trace_links(f, &d->target, s->n, s->lev, s->nlev, d->links, d->nlinks);
  return trace_close(f, d->trace_path, msg, msglen);
}

/* Runs this rank's cores with the peers into s (s->rc, s->who as
 * emu_ici_run; -2 sets msg). */
static tpurt_status_t shared_emulate(rt_program *p, const rt_replica *lr, shared_run *s,
                                     pthread_mutex_t *mu, char *msg, size_t msglen) {
  rt_device *d = p->dev;
  tpurt_status_t st = TPURT_OK;
  for (int c = s->lo; c < s->hi && st == TPURT_OK; c++)
    if (!(s->mc[c] = core_machine(d, c, msg, msglen)) ||
        !(s->hbm[c] = hbm_image(p, &lr[c - s->lo], msg, msglen)))
      st = TPURT_OUT_OF_MEMORY;
  emu_ici *x = NULL;
  if (st == TPURT_OK && !(x = emu_ici_create_shared(&d->target, s->mc, s->n,
                                                    host_threads(s->hi - s->lo), &d->alloc,
                                                    &d->peers)))
    st = fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory");
  if (st == TPURT_OK && s->tbuf) emu_ici_log_links(x);
  for (int c = s->lo; st == TPURT_OK && s->tbuf && c < s->hi; c++) {
    FILE *f = open_memstream(&s->tbuf[c], &s->tlen[c]);
    if (!f) st = fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory for the trace");
    s->tc[c] = (trace_core){f, mu, c};
    if (f) emu_set_trace(s->mc[c], trace_event_core, &s->tc[c]);
  }
  /* a rank that failed here does not take part: the others' waits for it
   * end at the peers' timeout, naming it */
  s->rc = -2;
  if (st == TPURT_OK) s->rc = emu_ici_run(x, p->img, s->hbm, d->cycle_limit, s->es, s->ef, &s->who);
  if (st == TPURT_OK && s->rc == -2)
    st = fail(msg, msglen, TPURT_IO_ERROR, "%s", emu_ici_peer_error(x));
  for (int c = s->lo; s->tbuf && c < s->hi; c++) {
    if (s->mc[c]) emu_set_trace(s->mc[c], NULL, NULL);
    if (!s->tc[c].f) continue;
    fclose(s->tc[c].f);
    /* from malloc: copied to the device's allocator for one way of freeing */
    char *t = s->tlen[c] ? rt_alloc(&d->alloc, s->tlen[c]) : NULL;
    if (t) memcpy(t, s->tbuf[c], s->tlen[c]);
    free(s->tbuf[c]);
    s->tbuf[c] = t;
    if (!t) s->tlen[c] = 0;
  }
  if (x) keep_links(d, x);
  if (x && s->tbuf) s->lev = emu_ici_take_events(x, &s->nlev);
  emu_ici_destroy(x);
  return st;
}

/* Rank 0's results, statistics and status from every rank's message;
 * every rank's own cores' results and statistics from its own run. */
static tpurt_status_t shared_collect(rt_program *p, const rt_replica *r, shared_run *s,
                                     char *msg, size_t msglen) {
  rt_device *d = p->dev;
  const tpub_image *img = p->img;
  int R = d->peers.nranks, me = d->peers.rank;
  peer_msg *out = rt_calloc(&d->alloc, (size_t)R, sizeof *out);
  const void **recv = rt_calloc(&d->alloc, (size_t)R, sizeof *recv);
  size_t *rlen = rt_calloc(&d->alloc, (size_t)R, sizeof *rlen);
  tpurt_status_t st = TPURT_OK;
  emu_fault wf = {0};
  if (!out || !recv || !rlen) st = fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory");
  if (st == TPURT_OK && me != 0) gather_message(p, s, &out[0]);
  if (st == TPURT_OK) st = peers_exchange(d, out, recv, rlen, msg, msglen);
  for (int k = 1; st == TPURT_OK && me == 0 && k < R; k++)
    st = gather_read(p, s, r, k, recv[k], rlen[k], &wf, msg, msglen);
  for (int c = s->lo; st == TPURT_OK && c < s->hi; c++) {
    if (s->who == c) wf = s->ef[c];
    if (r[c].stats) emu_stats_export(&s->es[c], &d->target, r[c].stats);
    for (uint32_t i = 0; !s->rc && i < img->nresults; i++)
      memcpy(r[c].results[i], s->hbm[c] + img->results[i].hbm_offset,
             (size_t)img->results[i].bytes);
  }
  if (st == TPURT_OK && (me == 0 || d->trace_per_rank) && s->tbuf) st = shared_trace(d, s, msg, msglen);
  if (st == TPURT_OK && s->rc) {
    int mine = s->who >= s->lo && s->who < s->hi;
    if (me == 0 || mine) {
      fault_status(img, &wf, msg, msglen);
      char inner[400];
      snprintf(inner, sizeof inner, "%s", msg);
      st = wf.kind == EMU_FAULT_CYCLES ? TPURT_RESOURCE_EXHAUSTED
           : wf.kind == EMU_FAULT_OOM  ? TPURT_OUT_OF_MEMORY
                                       : TPURT_RUNTIME_FAULT;
      snprintf(msg, msglen, "core %d: %s", s->who, inner);
    } else {
      st = fail(msg, msglen, TPURT_RUNTIME_FAULT, "core %d faulted (rank 0 reports it)", s->who);
    }
  }
  for (int k = 0; out && k < R; k++) rt_free(&d->alloc, out[k].b);
  rt_free(&d->alloc, out);
  rt_free(&d->alloc, (void *)recv);
  rt_free(&d->alloc, rlen);
  return st;
}

/* n cores, one replica each, this rank running its share. */
static tpurt_status_t execute_shared(rt_program *p, const rt_replica *r, int n, char *msg,
                                     size_t msglen) {
  rt_device *d = p->dev;
  shared_run s = {n, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0};
  if (emu_ici_share(n, d->peers.nranks, d->peers.rank, &s.lo, &s.hi))
    return fail(msg, msglen, TPURT_INVALID_ARGUMENT,
                "%d cores do not split evenly across %d ranks: run a number of ranks that "
                "divides %d",
                n, d->peers.nranks, n);
  int local = s.hi - s.lo;
  size_t per = sizeof(emu_machine *) + sizeof(uint8_t *) + sizeof(emu_stats) + sizeof(emu_fault) +
               sizeof(trace_core) + sizeof(char *) + sizeof(size_t);
  uint8_t *mem = rt_calloc(&d->alloc, (size_t)n, per);
  rt_replica *lr = rt_calloc(&d->alloc, (size_t)local, sizeof *lr);
  void **pp = rt_calloc(&d->alloc, (size_t)local * p->img->nparams + 1, sizeof *pp);
  uint8_t *block = NULL;
  tpurt_status_t st = TPURT_OK;
  if (!mem || !lr || !pp) st = fail(msg, msglen, TPURT_OUT_OF_MEMORY, "out of memory");
  if (mem) {
    s.es = (emu_stats *)(void *)mem;
    s.ef = (emu_fault *)(void *)(s.es + n);
    s.tc = (trace_core *)(void *)(s.ef + n);
    s.mc = (emu_machine **)(void *)(s.tc + n);
    s.hbm = (uint8_t **)(void *)(s.mc + n);
    s.tlen = (size_t *)(void *)(s.hbm + n);
    if (d->trace_path) s.tbuf = (char **)(void *)(s.tlen + n);
  }
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  if (st == TPURT_OK) st = scatter_params(p, r, n, lr, pp, &block, msg, msglen);
  if (st == TPURT_OK) st = shared_emulate(p, lr, &s, &mu, msg, msglen);
  if (st == TPURT_OK) st = shared_collect(p, r, &s, msg, msglen);
  for (int c = 0; mem && c < n; c++) {
    rt_free(&d->alloc, s.hbm[c]);
    if (s.tbuf) rt_free(&d->alloc, s.tbuf[c]);
  }
  pthread_mutex_destroy(&mu);
  rt_free(&d->alloc, s.lev);
  rt_free(&d->alloc, block);
  rt_free(&d->alloc, pp);
  rt_free(&d->alloc, lr);
  rt_free(&d->alloc, mem);
  return st;
}

static tpurt_status_t tpu_execute(rt_program *p, const rt_replica *r, int n, char *msg,
                                  size_t msglen) {
  rt_device *d = p->dev;
  if (n != 1 && n != d->target.ncores)
    return fail(msg, msglen, TPURT_INVALID_ARGUMENT, "%d replicas for %d cores", n,
                d->target.ncores);
  if (d->peers.nranks > 1 && n > 1) return execute_shared(p, r, n, msg, msglen);
  if (n > 1 || uses_ici(p->img)) return execute_many(p, r, n, msg, msglen);
  keep_links(d, NULL);
  uint8_t *hbm = prepare(p, r, msg, msglen);
  if (!hbm) return TPURT_OUT_OF_MEMORY;
  emu_stats es;
  emu_fault ef;
  trace_out tr = {NULL, 0};
  if (d->trace_path) {
    tr.f = trace_open(d->trace_path, 0, 1, 1);
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
  keep_links(d, NULL);
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
