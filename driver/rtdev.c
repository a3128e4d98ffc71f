/* rtdev.c: the compiler's side of libtpurt-cpu (docs/runtime.md, "The cpu
 * device"): the drivers this library links (runtime/device.h), which are
 * the "cpu" driver, whose programs are module text (HLO or .tg) compiled at
 * load time to native code by backend/llvm's JIT, then the emulated TPU,
 * whose devices load module text too, compiled at load time to a .tpub
 * image by backend/tpu. Both go through the driver (driver.h): parse, the
 * -O2 pipeline for the device's target (verified after every pass), then
 * the backend, as `tpucc run` does.
 *
 * Memory: the compiler, LLVM and the JIT allocate with malloc (the
 * compiler stops the process when malloc fails), not with the device's
 * allocator; only the runtime's own objects (buffers, handles) use that.
 * Thread-compatible: one call on a program at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/llvm/lower.h"
#include "backend/tpu/tpu.h"
#include "driver/driver.h"
#include "runtime/device.h"

_Static_assert(IR_MAX_RANK >= TPUB_MAX_RANK, "rank limits");

/* A cpu device: its options and its host functions (a copy of the
 * options' table; each ir_ffi_entry's user points at its host_call). */
typedef struct host_call {
  tpurt_custom_call_fn fn;
  void *user;
} host_call;

struct rt_device {
  rt_allocator alloc;
  drv_cpu_spec spec;
  host_call *hosts;
  ir_ffi_entry *ffi;
  int nffi;
};

/* The ir_ffi_fn of every host function: ir buffers as host tensors. */
static int host_trampoline(void *user, const ir_ffi_buffer *ops, int32_t nops, ir_ffi_buffer *res,
                           int32_t nres, const char *config, char *err, size_t errlen) {
  const host_call *h = user;
  tpurt_host_tensor_t *t = calloc((size_t)(nops + nres) + 1, sizeof *t);
  if (!t) {
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  for (int32_t i = 0; i < nops + nres; i++) {
    const ir_ffi_buffer *b = i < nops ? &ops[i] : &res[i - nops];
    t[i].dtype = (tpurt_dtype_t)ir_type_tpurt_code(b->type);
    if (!t[i].dtype || b->rank > TPURT_MAX_RANK) {
      snprintf(err, errlen, "%s %d has type %s, which the runtime's tensors cannot hold",
               i < nops ? "operand" : "result", (int)(i < nops ? i : i - nops),
               ir_type_name(b->type));
      free(t);
      return 1;
    }
    t[i].rank = b->rank;
    for (int k = 0; k < b->rank; k++) t[i].dims[k] = b->dims[k];
    t[i].data = b->data;
    t[i].bytes = b->nbytes;
  }
  tpurt_status_t st = h->fn(h->user, t, nops, t + nops, nres, config, err, errlen);
  free(t);
  return st != TPURT_OK;
}

static void cpu_destroy(rt_device *d);

/* Copies the options' host functions into d; false when out of memory or
 * an entry has no target or function (err says which). */
static bool copy_hosts(rt_device *d, const rt_device_config *c, char *err, size_t errlen) {
  size_t n = c->ncustom_calls;
  if (n == 0) return true;
  d->hosts = rt_calloc(&d->alloc, n, sizeof *d->hosts);
  d->ffi = rt_calloc(&d->alloc, n, sizeof *d->ffi);
  if (!d->hosts || !d->ffi) {
    snprintf(err, errlen, "out of memory");
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    const tpurt_custom_call_t *cc = &c->custom_calls[i];
    if (!cc->target || !cc->target[0] || !cc->fn) {
      snprintf(err, errlen, "custom_calls[%zu]: a target name and a function are needed", i);
      return false;
    }
    size_t len = strlen(cc->target) + 1;
    char *name = rt_calloc(&d->alloc, 1, len);
    if (!name) {
      snprintf(err, errlen, "out of memory");
      return false;
    }
    memcpy(name, cc->target, len);
    d->hosts[i] = (host_call){cc->fn, cc->user_data};
    d->ffi[i] = (ir_ffi_entry){name, host_trampoline, &d->hosts[i]};
    d->nffi++;
  }
  return true;
}

/* A compiled cpu program and its flat signature: one tensor per array leaf
 * of the entry's parameters (tuple parameters flattened depth-first, named
 * "param.0", ...), one per leaf of the root ("result.0", ...). */
struct rt_program {
  arena *a; /* shapes, literal wrappers, signature */
  cpu_exe *exe;
  int nargs, replicas;
  /* per replica r: wrappers whose leaf data pointers execute sets, at
   * args[r * nargs ..], res[r], in_leaves[r * nparams ..],
   * out_leaves[r * nresults ..] */
  ir_literal **args, **res;
  ir_literal **in_leaves, **out_leaves;
  tpub_tensor *params, *results;
  rt_program_info info;
};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 2 x multiply-accumulates of every dot and convolution reachable from c
 * through fusions (convolution window positions in padding included). */
static uint64_t flops_of(const ir_module *m, const ir_comp *c) {
  uint64_t f = 0;
  for (int i = 0; i < c->insts.n; i++) {
    const ir_inst *in = &c->insts.v[i];
    if (in->dead) continue;
    if (in->op == IR_OP_FUSION && in->ncalls > 0) {
      f += flops_of(m, &m->comps.v[in->calls[0]]);
    } else if (in->op == IR_OP_DOT) {
      const ir_shape *l = c->insts.v[in->ops[0]].shape;
      uint64_t k = 1;
      for (int j = 0; j < in->a->lhs_contracting.n; j++) k *= (uint64_t)l->dims[in->a->lhs_contracting.v[j]];
      f += 2 * (uint64_t)ir_shape_count(in->shape) * k;
    } else if (in->op == IR_OP_CONVOLUTION) {
      const ir_shape *kr = c->insts.v[in->ops[1]].shape;
      uint64_t k = (uint64_t)kr->dims[in->a->conv.k_in];
      for (int j = 0; j < in->a->conv.nspatial; j++) k *= (uint64_t)kr->dims[in->a->conv.k_spatial[j]];
      f += 2 * (uint64_t)ir_shape_count(in->shape) * k;
    }
  }
  return f;
}

static void set_tensor(tpub_tensor *t, const char *name, const ir_shape *s) {
  snprintf(t->name, sizeof t->name, "%s", name);
  t->dtype = ir_type_tpurt_code(s->type);
  t->rank = s->rank;
  for (int d = 0; d < s->rank; d++) t->dims[d] = s->dims[d];
  t->bytes = (uint64_t)ir_shape_count(s) * (uint64_t)ir_type_size(s->type);
}

/* A literal of shape s whose array leaves (appended to *leaves in
 * depth-first order) get their data pointer at execution. */
static ir_literal *wrapper(arena *a, const ir_shape *s, ir_literal ***leaves, int *n) {
  ir_literal *l = arena_alloc(a, sizeof *l);
  l->shape = ir_shape_clone(a, s);
  if (s->type == IR_TUPLE) {
    l->elems = arena_array(a, (size_t)s->ntuple + 1, sizeof *l->elems);
    for (int i = 0; i < s->ntuple; i++) l->elems[i] = wrapper(a, &s->tuple[i], leaves, n);
  } else {
    l->nbytes = (size_t)ir_shape_count(s) * (size_t)ir_type_size(s->type);
    (*leaves)[(*n)++] = l;
  }
  return l;
}

/* ---- the cpu driver ------------------------------------------------------- */

static int cpu_claims(const char *spec) { return drv_is_cpu_spec(spec); }

static tpurt_status_t cpu_create(const char *spec, const rt_device_config *c, rt_device **out,
                                 rt_device_info *info, char *err, size_t errlen) {
  drv_cpu_spec cs;
  if (drv_cpu_spec_parse(spec, false, &cs, err, errlen) != ST_OK) return TPURT_INVALID_ARGUMENT;
  if (!out) return TPURT_OK;
  rt_device *d = rt_calloc(c->alloc, 1, sizeof *d);
  if (!d) return TPURT_OUT_OF_MEMORY;
  d->alloc = *c->alloc;
  d->spec = cs;
  if (c->ncustom_calls && !c->custom_calls) {
    snprintf(err, errlen, "ncustom_calls is %zu but custom_calls is NULL", c->ncustom_calls);
    cpu_destroy(d);
    return TPURT_INVALID_ARGUMENT;
  }
  if (!copy_hosts(d, c, err, errlen)) {
    cpu_destroy(d);
    return TPURT_INVALID_ARGUMENT;
  }
  info->platform = "cpu";
  snprintf(info->target, sizeof info->target, "%s", cs.canonical);
  info->ncores = cs.replicas;
  *out = d;
  return TPURT_OK;
}

static void cpu_destroy(rt_device *d) {
  if (!d) return;
  rt_allocator a = d->alloc;
  for (int i = 0; i < d->nffi; i++) rt_free(&a, (void *)d->ffi[i].target);
  rt_free(&a, d->ffi);
  rt_free(&a, d->hosts);
  rt_free(&a, d);
}

static void *cpu_buffer_alloc(rt_device *d, size_t bytes) { return rt_calloc(&d->alloc, 1, bytes); }
static void cpu_buffer_free(rt_device *d, void *p) { rt_free(&d->alloc, p); }

/* TPURT_OK when every leaf of the entry's parameters and root is an
 * element type and rank libtpurt buffers hold; else the reason in err. */
static tpurt_status_t check_leaves(const char *name, const ir_comp *c, char *err, size_t errlen) {
  for (int p = 0; p <= c->nparams; p++) {
    const ir_inst *in = &c->insts.v[p < c->nparams ? c->params[p] : c->root];
    const char *what = p < c->nparams ? "parameter" : "result";
    for (int l = 0; l < llvm_leaf_count(in->shape); l++)
      if (!ir_type_tpurt_code(llvm_leaf_shape(in->shape, l)->type)) {
        snprintf(err, errlen, "%s: %s %s has element type %s, which libtpurt buffers cannot hold",
                 name, what, in->info->name, ir_type_name(llvm_leaf_shape(in->shape, l)->type));
        return TPURT_UNSUPPORTED;
      }
    for (int l = 0; l < llvm_leaf_count(in->shape); l++)
      if (llvm_leaf_shape(in->shape, l)->rank > TPURT_MAX_RANK) {
        snprintf(err, errlen, "%s: %s %s has rank %d; libtpurt buffers have at most %d dimensions",
                 name, what, in->info->name, llvm_leaf_shape(in->shape, l)->rank, TPURT_MAX_RANK);
        return TPURT_UNSUPPORTED;
      }
  }
  return TPURT_OK;
}

/* A program around x for the entry c: literal wrappers (one set per
 * replica) and the flat signature. */
static rt_program *program_of(const ir_module *m, const ir_comp *c, cpu_exe *x, int replicas) {
  const ir_shape *rs = c->insts.v[c->root].shape;
  int nin = 0, nout = llvm_leaf_count(rs);
  for (int p = 0; p < c->nparams; p++) nin += llvm_leaf_count(c->insts.v[c->params[p]].shape);
  rt_program *p = calloc(1, sizeof *p);
  if (!p) base_out_of_memory(0);
  size_t R = (size_t)replicas;
  p->a = arena_create();
  p->exe = x;
  p->nargs = c->nparams;
  p->replicas = replicas;
  p->args = arena_array(p->a, R * (size_t)c->nparams + 1, sizeof *p->args);
  p->res = arena_array(p->a, R, sizeof *p->res);
  p->in_leaves = arena_array(p->a, R * (size_t)nin + 1, sizeof *p->in_leaves);
  p->out_leaves = arena_array(p->a, R * (size_t)nout + 1, sizeof *p->out_leaves);
  p->params = arena_array(p->a, (size_t)nin + 1, sizeof *p->params);
  p->results = arena_array(p->a, (size_t)nout + 1, sizeof *p->results);
  for (int r = 0; r < replicas; r++) {
    int n = 0;
    ir_literal **leaves = p->in_leaves + (size_t)r * (size_t)nin;
    for (int i = 0; i < c->nparams; i++) {
      const ir_inst *pi = &c->insts.v[c->params[i]];
      int first = n;
      p->args[(size_t)r * (size_t)c->nparams + (size_t)i] = wrapper(p->a, pi->shape, &leaves, &n);
      for (int l = first; l < n && r == 0; l++) {
        char nm[TPUB_MAX_NAME + 1];
        if (pi->shape->type == IR_TUPLE) snprintf(nm, sizeof nm, "%.50s.%d", pi->info->name, l - first);
        else snprintf(nm, sizeof nm, "%s", pi->info->name);
        set_tensor(&p->params[l], nm, &leaves[l]->shape);
      }
    }
    n = 0;
    leaves = p->out_leaves + (size_t)r * (size_t)nout;
    p->res[r] = wrapper(p->a, rs, &leaves, &n);
    for (int l = 0; l < n && r == 0; l++) {
      char nm[32];
      snprintf(nm, sizeof nm, "result.%d", l);
      set_tensor(&p->results[l], nm, &leaves[l]->shape);
    }
  }
  p->info.nparams = (uint32_t)nin;
  p->info.nresults = (uint32_t)nout;
  p->info.params = p->params;
  p->info.results = p->results;
  p->info.flops = flops_of(m, c);
  p->info.has_flops = 1;
  return p;
}

static int is_tpub(const void *bytes, size_t size) {
  return size >= 4 && memcmp(bytes, "TPUB", 4) == 0;
}

/* Module text: compiled to native code for the device's options. */
static tpurt_status_t cpu_load(rt_device *d, const char *name, const void *text, size_t len,
                               rt_program **out, rt_program_info *info, char *err,
                               size_t errlen) {
  if (is_tpub(text, len)) {
    snprintf(err, errlen,
             "%s: a .tpub is a TPU program; the cpu device loads HLO or .tg module text", name);
    return TPURT_UNSUPPORTED;
  }
  double t0 = now();
  ir_module *m = drv_load(name, text, len, d->spec.canonical, err, errlen);
  if (!m) return TPURT_PARSE_ERROR;
  const ir_comp *c = &m->comps.v[m->entry];
  tpurt_status_t ts = check_leaves(name, c, err, errlen);
  if (ts) {
    ir_module_destroy(m);
    return ts;
  }
  cpu_options o;
  cpu_options_init(&o);
  drv_cpu_options(&d->spec, &o);
  ir_ffi_table ffi = {d->ffi, d->nffi};
  o.ffi = &ffi;
  cpu_exe *x;
  base_status st = cpu_compile(m, &o, &x, err, errlen);
  if (st != ST_OK) {
    ir_module_destroy(m);
    return st == ST_UNSUPPORTED || st == ST_OUT_OF_MEMORY ? (tpurt_status_t)st : TPURT_INTERNAL;
  }
  rt_program *p = program_of(m, c, x, d->spec.replicas);
  ir_module_destroy(m);
  p->info.compile_seconds = now() - t0;
  *info = p->info;
  *out = p;
  return TPURT_OK;
}

/* One run: one replica per core, each on its own host thread when there
 * are several; each replica's statistics are the seconds of the native run
 * of all of them, every counter zero. */
static tpurt_status_t cpu_run(rt_program *p, const rt_replica *r, int n, char *err,
                              size_t errlen) {
  if (n != p->replicas) {
    snprintf(err, errlen, "%d replicas for %d cores", n, p->replicas);
    return TPURT_INVALID_ARGUMENT;
  }
  uint32_t np = p->info.nparams, nr = p->info.nresults;
  for (int k = 0; k < n; k++) {
    for (uint32_t i = 0; i < np; i++) p->in_leaves[(size_t)k * np + i]->data = r[k].params[i];
    for (uint32_t i = 0; i < nr; i++) p->out_leaves[(size_t)k * nr + i]->data = r[k].results[i];
  }
  double t0 = now();
  base_status st = n == 1 ? cpu_execute_to(p->exe, p->args, p->nargs, p->res[0], err, errlen)
                          : cpu_execute_replicas(p->exe, n, p->args, p->nargs, p->res, err, errlen);
  double t = now() - t0;
  for (int k = 0; k < n; k++)
    if (r[k].stats) r[k].stats->seconds = t;
  return st == ST_OK ? TPURT_OK : TPURT_INTERNAL;
}

static void cpu_program_destroy(rt_program *p) {
  if (!p) return;
  cpu_exe_destroy(p->exe);
  arena_destroy(p->a);
  free(p);
}

static const rt_device_ops cpu_ops = {
    cpu_load, cpu_program_destroy, cpu_buffer_alloc, cpu_buffer_free, cpu_run, cpu_destroy,
};

static const rt_driver cpu_driver = {"cpu", "cpu", cpu_claims, cpu_create, &cpu_ops};

/* ---- module text on TPU devices ------------------------------------------ */

/* rt_text_compiler: parse, the passes for target, backend/tpu. */
static tpurt_status_t compile_tpu(const char *name, const void *text, size_t len,
                                  const char *target, tpub_image **out, double *out_seconds,
                                  char *err, size_t errlen) {
  *out = NULL;
  double t0 = now();
  ir_module *m = drv_load(name, text, len, target, err, errlen);
  if (!m) return TPURT_PARSE_ERROR;
  tpu_options o;
  tpu_options_init(&o);
  o.target = target;
  diag *d = diag_create();
  base_status st = tpu_compile(m, &o, d, out, NULL);
  if (st != ST_OK) drv_diag_message(d, base_status_str(st), err, errlen);
  diag_destroy(d);
  ir_module_destroy(m);
  *out_seconds = now() - t0;
  return st == ST_OK ? TPURT_OK : (tpurt_status_t)st;
}

/* libtpurt-cpu's drivers: "auto" prefers the cpu. */
static const rt_driver *const linked[] = {&cpu_driver, &rt_tpu_driver, NULL};
static const rt_drivers drivers = {linked, compile_tpu};

const rt_drivers *rt_linked_drivers(void) { return &drivers; }
