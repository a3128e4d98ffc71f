/* api.c: libtpucc, the compile API of include/tpucc.h, over the driver
 * (driver/driver.h: parsing, the passes for a target), the IR printer and
 * the target table (targets.c). Contracts are in the
 * header; this file only adds how: a session keeps a diag sink per
 * compilation and a message buffer; a module wraps an ir_module plus its
 * flattened result shapes; a result owns an arena with the literals. */
#include "tpucc.h"

#include <stdlib.h>

#include "driver/driver.h"
#include "passes/grad.h"
#include "tools/tools.h"

/* A base_status is a tpucc_status_t of the same number (base.h), and
 * ir_type's first values are tpucc_dtype_t's (ir.h): both lists are
 * generated from the lists of tpucc.h, and the status list of tpurt.h
 * that base_status comes from agrees with tpucc.h's on every code. */
#define X(name, text) _Static_assert((int)TPUCC_##name == (int)ST_##name, "TPUCC_" #name);
TPUCC_STATUS_LIST(X)
#undef X

enum {
#define X(name, text) STATUS_##name,
  TPUCC_STATUS_LIST(X)
#undef X
  STATUS_COUNT
};
enum {
#define X(name, spelling, bytes) DTYPE_##name,
  TPUCC_DTYPE_LIST(X)
#undef X
  DTYPE_COUNT
};

enum { MAX_SOURCE = 256 << 20 };

/* One registered host function; its ir_ffi_entry's user points here. */
typedef struct host_fn {
  char *target;
  tpucc_custom_call_fn fn;
  void *user;
} host_fn;

struct tpucc_session {
  int32_t max_errors;
  strbuf msg;
  diag *last; /* diagnostics of the last compilation */
  host_fn **hosts;      /* registered custom-call functions */
  ir_ffi_entry *ffi;    /* their table, one entry per host */
  int32_t nhosts;
};

struct tpucc_module {
  tpucc_session_t *s;
  ir_module *m;
  strbuf hlo;
  int32_t nparams, nresults;
  ir_id *params;     /* entry parameter instructions by number */
  ir_shape *results; /* leaves of the root shape, depth first */
};

struct tpucc_result {
  arena *a;
  int32_t n;
  tpucc_tensor_t *t;
};

/* ---- versions, statuses, dtypes --------------------------------------- */

const char *tpucc_version_string(void) { return TPUCC_VERSION_STRING; }

const char *tpucc_status_string(tpucc_status_t s) {
  return (unsigned)s < STATUS_COUNT ? base_status_str((base_status)s) : "unknown status";
}

const char *tpucc_dtype_name(tpucc_dtype_t t) {
  return (unsigned)t < DTYPE_COUNT ? ir_type_name((ir_type)t) : "invalid";
}

int tpucc_dtype_size(tpucc_dtype_t t) {
  return (unsigned)t < DTYPE_COUNT ? ir_type_size((ir_type)t) : 0;
}

/* ---- sessions ---------------------------------------------------------- */

static tpucc_status_t set_msg(tpucc_session_t *s, base_status st, const char *fmt, ...)
    BASE_PRINTF(3, 4);
static tpucc_status_t set_msg(tpucc_session_t *s, base_status st, const char *fmt, ...) {
  va_list ap;
  s->msg.len = 0;
  va_start(ap, fmt);
  sb_vprintf(&s->msg, fmt, ap);
  va_end(ap);
  return (tpucc_status_t)st;
}

static void clear_msg(tpucc_session_t *s) {
  s->msg.len = 0;
  sb_puts(&s->msg, "");
}

void tpucc_session_options_init(tpucc_session_options_t *o) {
  memset(o, 0, sizeof *o);
  o->max_errors = 50;
}

tpucc_status_t tpucc_session_create(const tpucc_session_options_t *opts,
                                    tpucc_session_t **out_session) {
  if (!out_session) return TPUCC_INVALID_ARGUMENT;
  tpucc_session_options_t def;
  tpucc_session_options_init(&def);
  if (!opts) opts = &def;
  tpucc_session_t *s = calloc(1, sizeof *s);
  if (!s) return TPUCC_OUT_OF_MEMORY;
  s->max_errors = opts->max_errors > 0 ? opts->max_errors : 50;
  sb_init(&s->msg);
  clear_msg(s);
  *out_session = s;
  return TPUCC_OK;
}

void tpucc_session_destroy(tpucc_session_t *s) {
  if (!s) return;
  for (int32_t i = 0; i < s->nhosts; i++) {
    free(s->hosts[i]->target);
    free(s->hosts[i]);
  }
  free(s->hosts);
  free(s->ffi);
  diag_destroy(s->last);
  sb_free(&s->msg);
  free(s);
}

const char *tpucc_session_message(const tpucc_session_t *s) {
  return s && s->msg.s ? s->msg.s : "";
}

const char *tpucc_session_diagnostics(const tpucc_session_t *s) {
  return s && s->last ? diag_text(s->last) : "";
}

/* ---- host functions for custom-calls ----------------------------------- */

/* The ir_ffi_fn of every registered function: ir buffers as tensors. */
static int host_trampoline(void *user, const ir_ffi_buffer *ops, int32_t nops, ir_ffi_buffer *res,
                           int32_t nres, const char *config, char *err, size_t errlen) {
  const host_fn *h = user;
  tpucc_tensor_t *t = calloc((size_t)(nops + nres) + 1, sizeof *t);
  if (!t) {
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  for (int32_t i = 0; i < nops + nres; i++) {
    const ir_ffi_buffer *b = i < nops ? &ops[i] : &res[i - nops];
    if ((unsigned)b->type >= DTYPE_COUNT || b->rank > TPUCC_MAX_RANK) {
      snprintf(err, errlen, "%s %d has type %s or rank %d, which a tpucc_tensor_t cannot hold",
               i < nops ? "operand" : "result", (int)(i < nops ? i : i - nops),
               ir_type_name(b->type), (int)b->rank);
      free(t);
      return 1;
    }
    t[i].dtype = (tpucc_dtype_t)b->type;
    t[i].rank = b->rank;
    for (int d = 0; d < b->rank; d++) t[i].dims[d] = b->dims[d];
    t[i].data = b->data;
    t[i].nbytes = b->nbytes;
  }
  tpucc_status_t st = h->fn(h->user, t, nops, t + nops, nres, config, err, errlen);
  free(t);
  return st != TPUCC_OK;
}

tpucc_status_t tpucc_session_register_custom_call(tpucc_session_t *s, const char *target,
                                                  tpucc_custom_call_fn fn, void *user_data) {
  if (!s) return TPUCC_INVALID_ARGUMENT;
  clear_msg(s);
  if (!target || !target[0] || !fn)
    return set_msg(s, ST_INVALID_ARGUMENT,
                   "tpucc_session_register_custom_call: a target name and a function are needed");
  for (int32_t i = 0; i < s->nhosts; i++)
    if (strcmp(s->hosts[i]->target, target) == 0) {
      s->hosts[i]->fn = fn;
      s->hosts[i]->user = user_data;
      return TPUCC_OK;
    }
  host_fn *h = calloc(1, sizeof *h);
  host_fn **hv = realloc(s->hosts, sizeof *hv * (size_t)(s->nhosts + 1));
  if (hv) s->hosts = hv;
  ir_ffi_entry *fv = hv ? realloc(s->ffi, sizeof *fv * (size_t)(s->nhosts + 1)) : NULL;
  if (fv) s->ffi = fv;
  char *name = h && fv ? strdup(target) : NULL;
  if (!name) {
    free(h);
    return set_msg(s, ST_OUT_OF_MEMORY, "out of memory");
  }
  *h = (host_fn){name, fn, user_data};
  s->hosts[s->nhosts] = h;
  s->ffi[s->nhosts] = (ir_ffi_entry){name, host_trampoline, h};
  s->nhosts++;
  return TPUCC_OK;
}

/* ---- compiling --------------------------------------------------------- */

void tpucc_compile_options_init(tpucc_compile_options_t *o) {
  memset(o, 0, sizeof *o);
  o->language = TPUCC_LANGUAGE_AUTO;
}

typedef VEC(ir_shape) shape_vec;
typedef VEC(ir_literal *) literal_vec;

static void collect_results(arena *a, const ir_shape *s, shape_vec *out) {
  if (s->type == IR_TUPLE) {
    for (int i = 0; i < s->ntuple; i++)
      collect_results(a, &s->tuple[i], out);
    return;
  }
  VEC_PUSH(a, *out, *s);
}

/* The first line of the diagnostics, for the one-line message. */
static void first_line(strbuf *b, const char *text) {
  const char *nl = strchr(text, '\n');
  sb_putn(b, text, nl ? (size_t)(nl - text) : strlen(text));
}

/* Wraps verified module m (owned from now on) as a session's module:
 * parameters by number and the flattened results. */
static tpucc_status_t wrap_module(tpucc_session_t *s, ir_module *m, tpucc_module_t **out_module) {
  tpucc_module_t *tm = calloc(1, sizeof *tm);
  if (!tm) {
    ir_module_destroy(m);
    return set_msg(s, ST_OUT_OF_MEMORY, "out of memory");
  }
  tm->s = s;
  tm->m = m;
  sb_init(&tm->hlo);
  ir_comp *c = ir_comp_get(m, m->entry);
  /* Parameters by number (the verifier made them 0..n-1, each once). */
  int32_t np = 0;
  for (int i = 0; i < c->insts.n; i++) {
    const ir_inst *p = &c->insts.v[i];
    if (p->op == IR_OP_PARAMETER && !p->dead && p->a->parameter_number >= 0 &&
        p->a->parameter_number < c->insts.n && p->a->parameter_number + 1 > np)
      np = (int32_t) p->a->parameter_number + 1;
  }
  tm->params = arena_array(m->arena, (size_t)(np ? np : 1), sizeof(ir_id));
  for (int i = 0; i < np; i++)
    tm->params[i] = IR_NONE;
  for (int i = 0; i < c->insts.n; i++) {
    const ir_inst *p = &c->insts.v[i];
    if (p->op == IR_OP_PARAMETER && !p->dead && p->a->parameter_number >= 0 &&
        p->a->parameter_number < np)
      tm->params[p->a->parameter_number] = i;
  }
  tm->nparams = np;
  shape_vec res = {0};
  if (c->root != IR_NONE) collect_results(m->arena, c->insts.v[c->root].shape, &res);
  tm->results = res.v;
  tm->nresults = res.n;
  *out_module = tm;
  return TPUCC_OK;
}

tpucc_status_t tpucc_compile_memory(tpucc_session_t *s, const tpucc_compile_options_t *opts,
                                    const char *name, const char *text, size_t len,
                                    tpucc_module_t **out_module) {
  if (!s) return TPUCC_INVALID_ARGUMENT;
  if (!out_module || (!text && len) || !name)
    return set_msg(s, ST_INVALID_ARGUMENT, "tpucc_compile_memory: NULL argument");
  clear_msg(s);
  tpucc_compile_options_t def;
  tpucc_compile_options_init(&def);
  if (!opts) opts = &def;
  tpucc_language_t lang = opts->language;
  if (lang == TPUCC_LANGUAGE_AUTO)
    lang = drv_language_of(name, text ? text : "", len, TPUCC_LANGUAGE_AUTO);
  if (lang == TPUCC_LANGUAGE_AUTO)
    return set_msg(s, ST_INVALID_ARGUMENT,
                   "%s: cannot tell the language (name it .hlo or .tg, or choose one)", name);
  diag_destroy(s->last);
  s->last = diag_create();
  diag_set_max_errors(s->last, s->max_errors);
  ir_module *m = NULL;
  if (drv_parse(name, text ? text : "", len, lang, opts->entry, s->last, &m) == ST_UNSUPPORTED)
    return set_msg(s, ST_UNSUPPORTED, "%s: this tpucc was built without the %s frontend", name,
                   lang == TPUCC_LANGUAGE_HLO ? "HLO" : ".tg");
  if (!m) {
    s->msg.len = 0;
    if (diag_error_count(s->last) > 0)
      first_line(&s->msg, diag_text(s->last));
    else
      sb_printf(&s->msg, "%s: the frontend rejected the input", name);
    if (diag_error_count(s->last) > 1)
      sb_printf(&s->msg, " (and %d more errors)", diag_error_count(s->last) - 1);
    return TPUCC_PARSE_ERROR;
  }
  if (m->entry == IR_NONE) {
    ir_module_destroy(m);
    return set_msg(s, ST_INVALID_ARGUMENT, "%s: the module has no entry computation", name);
  }
  return wrap_module(s, m, out_module);
}

tpucc_status_t tpucc_compile_file(tpucc_session_t *s, const tpucc_compile_options_t *opts,
                                  const char *path, tpucc_module_t **out_module) {
  if (!s) return TPUCC_INVALID_ARGUMENT;
  if (!path || !out_module)
    return set_msg(s, ST_INVALID_ARGUMENT, "tpucc_compile_file: NULL argument");
  char *text;
  size_t len;
  char err[512];
  base_status st = ir_file_read(path, MAX_SOURCE, &text, &len, err, sizeof err);
  if (st != ST_OK) return set_msg(s, st, "%s", err);
  tpucc_status_t r = tpucc_compile_memory(s, opts, path, text, len, out_module);
  free(text);
  return r;
}

void tpucc_module_destroy(tpucc_module_t *m) {
  if (!m) return;
  ir_module_destroy(m->m);
  sb_free(&m->hlo);
  free(m);
}

tpucc_status_t tpucc_module_emit_hlo(tpucc_module_t *m, const char **out_text, size_t *out_len) {
  if (!m) return TPUCC_INVALID_ARGUMENT;
  if (!out_text) return set_msg(m->s, ST_INVALID_ARGUMENT, "emit_hlo: NULL out_text");
  clear_msg(m->s);
  m->hlo.len = 0;
  sb_puts(&m->hlo, "");
  ir_print_module(&m->hlo, m->m);
  *out_text = sb_str(&m->hlo);
  if (out_len) *out_len = m->hlo.len;
  return TPUCC_OK;
}

/* ---- signature -------------------------------------------------------- */

/* Whether an array shape fits a tpucc_tensor_t (at most TPUCC_MAX_RANK dims,
 * an element type of tpucc_dtype_t); else sets the session's message about
 * WHAT (e.g. "parameter 0 'x'") and returns false. */
static bool fits_tensor(tpucc_session_t *ss, const ir_shape *s, const char *what) {
  if (s->rank > TPUCC_MAX_RANK) {
    set_msg(ss, ST_UNSUPPORTED, "%s has rank %d; a tpucc_tensor holds at most %d dimensions", what,
            s->rank, TPUCC_MAX_RANK);
    return false;
  }
  if (!ir_type_is_core(s->type)) {
    set_msg(ss, ST_UNSUPPORTED, "%s has element type %s, which a tpucc_tensor cannot hold", what,
            ir_type_name(s->type));
    return false;
  }
  return true;
}

static void describe(const ir_shape *s, const char *name, tpucc_tensor_t *t) {
  memset(t, 0, sizeof *t);
  t->dtype = (tpucc_dtype_t)s->type;
  t->rank = s->rank;
  for (int i = 0; i < s->rank; i++)
    t->dims[i] = s->dims[i];
  t->nbytes = (size_t)ir_shape_count(s) * (size_t)ir_type_size(s->type);
  t->name = name;
}

int32_t tpucc_module_parameter_count(const tpucc_module_t *m) { return m ? m->nparams : 0; }
int32_t tpucc_module_result_count(const tpucc_module_t *m) { return m ? m->nresults : 0; }

tpucc_status_t tpucc_module_parameter(const tpucc_module_t *m, int32_t i,
                                      tpucc_tensor_t *out_desc) {
  if (!m) return TPUCC_INVALID_ARGUMENT;
  if (i < 0 || i >= m->nparams || !out_desc)
    return set_msg(m->s, ST_INVALID_ARGUMENT, "parameter index %d out of range (%d parameters)",
                   (int)i, (int)m->nparams);
  if (m->params[i] == IR_NONE)
    return set_msg(m->s, ST_INVALID_ARGUMENT, "the entry has no parameter(%d)", (int)i);
  const ir_inst *p = &ir_comp_get(m->m, m->m->entry)->insts.v[m->params[i]];
  if (p->shape->type == IR_TUPLE)
    return set_msg(m->s, ST_UNSUPPORTED,
                   "parameter %d '%s' is a tuple; tuple parameters cannot be passed as tensors",
                   (int)i, p->info->name);
  char what[160];
  snprintf(what, sizeof what, "parameter %d '%s'", (int)i, p->info->name);
  if (!fits_tensor(m->s, p->shape, what)) return TPUCC_UNSUPPORTED;
  clear_msg(m->s);
  describe(p->shape, p->info->name, out_desc);
  return TPUCC_OK;
}

tpucc_status_t tpucc_module_result(const tpucc_module_t *m, int32_t i, tpucc_tensor_t *out_desc) {
  if (!m) return TPUCC_INVALID_ARGUMENT;
  if (i < 0 || i >= m->nresults || !out_desc)
    return set_msg(m->s, ST_INVALID_ARGUMENT, "result index %d out of range (%d results)", (int)i,
                   (int)m->nresults);
  char what[64];
  snprintf(what, sizeof what, "result %d", (int)i);
  if (!fits_tensor(m->s, &m->results[i], what)) return TPUCC_UNSUPPORTED;
  clear_msg(m->s);
  describe(&m->results[i], NULL, out_desc);
  return TPUCC_OK;
}

/* ---- executing -------------------------------------------------------- */

int32_t tpucc_target_count(void) { return tool_ntargets; }
const char *tpucc_target_name(int32_t i) {
  return i >= 0 && i < tool_ntargets ? tool_targets[i].name : NULL;
}
const char *tpucc_target_description(int32_t i) {
  return i >= 0 && i < tool_ntargets ? tool_targets[i].description : NULL;
}

void tpucc_execute_options_init(tpucc_execute_options_t *o) { memset(o, 0, sizeof *o); }

static void spec(strbuf *b, const ir_shape *s) {
  b->len = 0;
  ir_tensor_print_spec(b, s);
}

static void collect_literals(arena *a, ir_literal *l, literal_vec *out) {
  if (l->shape.type == IR_TUPLE) {
    for (int i = 0; i < l->shape.ntuple; i++)
      collect_literals(a, l->elems[i], out);
    return;
  }
  VEC_PUSH(a, *out, l);
}

/* Runs nrep replicas on t (one: its plain run) with args split and the
 * results stacked as tools/replicas.h says. */
static base_status run_replicas(const tool_target *t, const ir_module *m,
                                const tpucc_execute_options_t *opts, const ir_ffi_table *ffi,
                                int nrep, const ir_shape *pshapes, ir_literal *const *args,
                                int nargs, arena *a, ir_literal **out, char *err, size_t errlen) {
  const char *spec = opts->target ? opts->target : t->name;
  ir_literal ***per = tool_replica_split(pshapes, args, nargs, nrep, a);
  if (nrep == 1) return t->run(m, spec, opts->max_bytes, ffi, per[0], nargs, a, out, err, errlen);
  ir_literal **outs = arena_array(a, (size_t)nrep, sizeof *outs);
  base_status st = t->run_replicas(m, spec, opts->max_bytes, ffi, nrep,
                                   (ir_literal *const *const *)per, nargs, a, outs, err, errlen);
  if (st != ST_OK) return st;
  if (!(*out = tool_replica_stack(outs, nrep, a))) {
    snprintf(err, errlen, "a result of rank %d cannot be stacked over %d replicas", IR_MAX_RANK,
             nrep);
    return ST_UNSUPPORTED;
  }
  return ST_OK;
}

tpucc_status_t tpucc_execute(tpucc_module_t *m, const tpucc_execute_options_t *opts,
                             const tpucc_tensor_t *inputs, int32_t ninputs,
                             tpucc_result_t **out_result) {
  if (!m) return TPUCC_INVALID_ARGUMENT;
  tpucc_session_t *s = m->s;
  if (!out_result || (ninputs && !inputs) || ninputs < 0)
    return set_msg(s, ST_INVALID_ARGUMENT, "tpucc_execute: NULL argument");
  clear_msg(s);
  tpucc_execute_options_t def;
  tpucc_execute_options_init(&def);
  if (!opts) opts = &def;
  const tool_target *t = opts->target ? tool_target_find(opts->target) : &tool_targets[0];
  if (!t) {
    strbuf known;
    sb_init(&known);
    for (int i = 0; i < tool_ntargets; i++)
      sb_printf(&known, "%s%s", i ? ", " : "", tool_targets[i].name);
    set_msg(s, ST_NOT_FOUND, "unknown target '%s' (known: %s)", opts->target, sb_str(&known));
    sb_free(&known);
    return TPUCC_NOT_FOUND;
  }
  const char *entry = ir_comp_get(m->m, m->m->entry)->name;
  int nrep = opts->replicas > 0 ? opts->replicas : t->run_replicas ? tool_replicas_default(m->m) : 1;
  if (opts->replicas < 0)
    return set_msg(s, ST_INVALID_ARGUMENT, "%d replicas: at least 1 runs", (int)opts->replicas);
  if (nrep > 1 && !t->run_replicas)
    return set_msg(s, ST_UNSUPPORTED, "target %s runs 1 replica, %d asked for", t->name, nrep);
  if (ninputs != m->nparams)
    return set_msg(s, ST_INVALID_ARGUMENT, "entry '%s' takes %d parameter%s, %d given", entry,
                   (int)m->nparams, m->nparams == 1 ? "" : "s", (int)ninputs);
  /* A result too wide for a tpucc_tensor_t is refused before running; its
   * element type after (the target's located error comes first). */
  for (int32_t i = 0; i < m->nresults; i++) {
    char what[64];
    snprintf(what, sizeof what, "result %d", (int)i);
    if (m->results[i].rank > TPUCC_MAX_RANK && !fits_tensor(s, &m->results[i], what))
      return TPUCC_UNSUPPORTED;
  }
  arena *a = arena_create();
  ir_literal **args = arena_array(a, (size_t)(ninputs ? ninputs : 1), sizeof *args);
  ir_shape *pshapes = arena_array(a, (size_t)(ninputs ? ninputs : 1), sizeof *pshapes);
  strbuf x, y;
  sb_init(&x);
  sb_init(&y);
  tpucc_status_t st = TPUCC_OK;
  for (int32_t i = 0; i < ninputs && st == TPUCC_OK; i++) {
    tpucc_tensor_t want;
    st = tpucc_module_parameter(m, i, &want);
    if (st != TPUCC_OK) break;
    const tpucc_tensor_t *g = &inputs[i];
    const ir_inst *p = &ir_comp_get(m->m, m->m->entry)->insts.v[m->params[i]];
    if ((unsigned)g->dtype >= DTYPE_COUNT || g->rank < 0 || g->rank > TPUCC_MAX_RANK) {
      st = set_msg(s, ST_INVALID_ARGUMENT, "parameter %d '%s': invalid tensor (dtype %d, rank %d)",
                   (int)i, p->info->name, (int)g->dtype, (int)g->rank);
      break;
    }
    ir_shape gs = ir_shape_array((ir_type)g->dtype, (int)g->rank, g->dims);
    int64_t n;
    pshapes[i] = *p->shape;
    bool stacked = !ir_shape_equal(&gs, p->shape);
    if (!tool_replica_input_fits(&gs, p->shape, nrep)) {
      spec(&x, p->shape);
      if (ir_shape_elements(&gs, &n))
        spec(&y, &gs);
      else
        sb_puts(&y, "an invalid shape");
      st = set_msg(s, ST_INVALID_ARGUMENT, "parameter %d '%s': expected %s%s, given %s", (int)i,
                   p->info->name, sb_str(&x),
                   nrep > 1 ? arena_printf(a, " (or %d stacked, one per replica)", nrep) : "",
                   sb_str(&y));
      break;
    }
    size_t want_bytes = want.nbytes * (stacked ? (size_t)nrep : 1);
    if (!g->data || g->nbytes != want_bytes) {
      st = set_msg(s, ST_INVALID_ARGUMENT, "parameter %d '%s': %zu data bytes, expected %zu",
                   (int)i, p->info->name, g->data ? g->nbytes : 0, want_bytes);
      break;
    }
    ir_literal *l = arena_alloc(a, sizeof *l);
    l->shape = gs;
    l->data = g->data; /* read only: targets never write their arguments */
    l->nbytes = g->nbytes;
    args[i] = l;
  }
  sb_free(&x);
  sb_free(&y);
  if (st != TPUCC_OK) {
    arena_destroy(a);
    return st;
  }
  ir_literal *out = NULL;
  char err[512] = "";
  ir_ffi_table ffi = {s->ffi, s->nhosts};
  base_status bs = run_replicas(t, m->m, opts, &ffi, nrep, pshapes, args, ninputs, a, &out, err,
                                sizeof err);
  if (bs != ST_OK || !out) {
    arena_destroy(a);
    return set_msg(s, bs != ST_OK ? bs : ST_INTERNAL, "%s: %s", t->name,
                   err[0] ? err : "execution failed");
  }
  literal_vec leaves = {0};
  collect_literals(a, out, &leaves);
  for (int i = 0; i < leaves.n; i++) {
    char what[64];
    snprintf(what, sizeof what, "result %d", i);
    if (!fits_tensor(s, &leaves.v[i]->shape, what)) {
      arena_destroy(a);
      return TPUCC_UNSUPPORTED;
    }
  }
  tpucc_result_t *r = calloc(1, sizeof *r);
  if (!r) {
    arena_destroy(a);
    return set_msg(s, ST_OUT_OF_MEMORY, "out of memory");
  }
  r->a = a;
  r->n = leaves.n;
  r->t = arena_array(a, (size_t)(leaves.n ? leaves.n : 1), sizeof(tpucc_tensor_t));
  for (int i = 0; i < leaves.n; i++) {
    describe(&leaves.v[i]->shape, NULL, &r->t[i]);
    r->t[i].data = leaves.v[i]->data;
    r->t[i].nbytes = leaves.v[i]->nbytes;
  }
  *out_result = r;
  return TPUCC_OK;
}

int32_t tpucc_result_count(const tpucc_result_t *r) { return r ? r->n : 0; }

const tpucc_tensor_t *tpucc_result_tensor(const tpucc_result_t *r, int32_t i) {
  return r && i >= 0 && i < r->n ? &r->t[i] : NULL;
}

void tpucc_result_destroy(tpucc_result_t *r) {
  if (!r) return;
  arena_destroy(r->a);
  free(r);
}

/* ---- optimisation (tools.h: tool_module_optimize) ---------------------- */

ir_module *tool_module_ir(tpucc_module_t *m) { return m ? m->m : NULL; }

tpucc_status_t tool_module_optimize(tpucc_module_t *tm, const tool_opt_options *o) {
  if (!tm || !o) return TPUCC_INVALID_ARGUMENT;
  tpucc_session_t *s = tm->s;
  clear_msg(s);
  if (!o->passes && o->opt_level <= 0) return TPUCC_OK;
  if (!s->last) s->last = diag_create();
  strbuf explain;
  sb_init(&explain);
  drv_opt dro = {o->opt_level, o->passes,    o->verify_each, o->explain ? &explain : NULL,
                 o->dump_dir,  o->dump_after, o->time_passes, o->all_reduce_combine};
  int before = diag_error_count(s->last);
  base_status st = drv_optimize(tm->m, &dro, o->target, s->last);
  if (explain.len) fwrite(explain.s, 1, explain.len, stderr);
  sb_free(&explain);
  if (st != ST_OK) {
    s->msg.len = 0;
    if (diag_error_count(s->last) > before)
      sb_puts(&s->msg, diag_first_message(s->last));
    else
      sb_printf(&s->msg, "optimisation failed (%s)", base_status_str(st));
    return (tpucc_status_t)st;
  }
  /* Passes renumber instructions: find the parameters and results again. */
  ir_comp *c = ir_comp_get(tm->m, tm->m->entry);
  for (int i = 0; i < tm->nparams; i++)
    tm->params[i] = IR_NONE;
  for (int i = 0; i < c->insts.n; i++) {
    const ir_inst *p = &c->insts.v[i];
    if (p->op == IR_OP_PARAMETER && !p->dead && p->a->parameter_number >= 0 &&
        p->a->parameter_number < tm->nparams)
      tm->params[p->a->parameter_number] = i;
  }
  shape_vec res = {0};
  if (c->root != IR_NONE) collect_results(tm->m->arena, c->insts.v[c->root].shape, &res);
  tm->results = res.v;
  tm->nresults = res.n;
  return TPUCC_OK;
}

void tpucc_grad_options_init(tpucc_grad_options_t *o) { memset(o, 0, sizeof *o); }

tpucc_status_t tpucc_grad(tpucc_module_t *m, const tpucc_grad_options_t *opts, tpucc_module_t **out_module) {
  if (!m) return TPUCC_INVALID_ARGUMENT;
  if (!out_module) return set_msg(m->s, ST_INVALID_ARGUMENT, "tpucc_grad: NULL argument");
  clear_msg(m->s);
  tpucc_grad_options_t def;
  tpucc_grad_options_init(&def);
  if (!opts) opts = &def;
  ir_grad_options o;
  ir_grad_options_init(&o);
  int *wrt = NULL;
  if (opts->wrt) {
    wrt = arena_array(m->m->arena, (size_t)(opts->nwrt > 0 ? opts->nwrt : 1), sizeof(int));
    for (int32_t k = 0; k < opts->nwrt; k++) wrt[k] = opts->wrt[k];
    o.wrt = wrt;
    o.nwrt = opts->nwrt;
  }
  o.remat = opts->remat != 0;
  ir_module *g = NULL;
  char err[1024];
  base_status st = opts->value_and_grad ? ir_value_and_grad_module(m->m, &o, &g, err, sizeof err)
                                        : ir_grad_module(m->m, &o, &g, err, sizeof err);
  if (st != ST_OK) return set_msg(m->s, st, "%s", err);
  return wrap_module(m->s, g, out_module);
}
