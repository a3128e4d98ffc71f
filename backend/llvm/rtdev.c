/* rtdev.c: the compiler side of libtpurt-cpu (rtdev.h): module text to a
 * JIT-compiled cpu program or to a .tpub image for a TPU device. */
#include "backend/llvm/rtdev.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/llvm/lower.h"
#include "backend/tpu/tpu.h"
#include "frontend/frontend.h"
#include "passes/passes.h"

_Static_assert(IR_MAX_RANK >= TPUB_MAX_RANK, "rank limits");

struct cpu_rt_program {
  arena *a; /* shapes, literal wrappers, signature */
  cpu_exe *exe;
  int nargs;
  ir_literal **args, *res;           /* wrappers whose leaf data pointers execute sets */
  ir_literal **in_leaves, **out_leaves;
  tpub_tensor *params, *results;
  cpu_rt_info info;
};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

tpurt_status_t cpu_rt_parse_spec(const char *spec, cpu_rt_spec *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  out->threads = cpu_default_threads();
  out->numerics = CPU_NUMERICS_NATIVE;
  if (strncmp(spec, "cpu", 3) != 0 || (spec[3] && spec[3] != ',')) {
    snprintf(err, errlen, "'%s' is not a cpu device spec", spec);
    return TPURT_INVALID_ARGUMENT;
  }
  for (const char *p = spec + 3; *p == ',';) {
    const char *key = p + 1, *eq = strchr(key, '='), *end = strchr(key, ',');
    if (!end) end = key + strlen(key);
    if (!eq || eq > end) {
      snprintf(err, errlen, "cpu: '%.*s' is not key=value", (int)(end - key), key);
      return TPURT_INVALID_ARGUMENT;
    }
    char val[32];
    size_t vn = (size_t)(end - eq - 1);
    if (vn >= sizeof val) vn = sizeof val - 1;
    memcpy(val, eq + 1, vn);
    val[vn] = 0;
    size_t kn = (size_t)(eq - key);
    if (kn == 7 && memcmp(key, "threads", 7) == 0) {
      char *e;
      long v = strtol(val, &e, 10);
      if (!val[0] || *e || v < 1 || v > 1024) {
        snprintf(err, errlen, "cpu: threads=%s: expected a count in 1..1024", val);
        return TPURT_INVALID_ARGUMENT;
      }
      out->threads = (int)v;
    } else if (kn == 8 && memcmp(key, "numerics", 8) == 0) {
      cpu_numerics n;
      if (!cpu_numerics_from_name(val, &n)) {
        snprintf(err, errlen, "cpu: numerics=%s: expected native, strict or tpu", val);
        return TPURT_INVALID_ARGUMENT;
      }
      out->numerics = (int)n;
    } else {
      snprintf(err, errlen, "cpu: unknown option '%.*s' (threads, numerics)", (int)kn, key);
      return TPURT_INVALID_ARGUMENT;
    }
    p = end;
  }
  static const char *names[] = {"native", "strict", "tpu"};
  snprintf(out->canonical, sizeof out->canonical, "cpu,threads=%d,numerics=%s", out->threads,
           names[out->numerics]);
  return TPURT_OK;
}

/* Parses and optimises (-O2, verified after every pass) module text. NULL
 * with the diagnostics (or the reason) in err. */
static ir_module *parse_optimise(const char *name, const void *text, size_t len, char *err,
                                 size_t errlen) {
  diag *d = diag_create();
  char *copy = base_xmalloc(len + 1);
  if (len) memcpy(copy, text, len);
  copy[len] = 0;
  diag_add_source(d, name, copy, len);
  /* The language: by extension, else HLO when the text names a module
   * or an entry computation, else .tg. */
  size_t nl = strlen(name);
  bool tg = nl >= 3 && strcmp(name + nl - 3, ".tg") == 0;
  if (!tg && !(nl >= 4 && strcmp(name + nl - 4, ".hlo") == 0))
    tg = !strstr(copy, "HloModule") && !strstr(copy, "ENTRY");
  ir_module *m = tg ? fe_parse_tg(name, copy, len, NULL, d) : fe_parse_hlo(name, copy, len, d);
  free(copy);
  if (m && diag_error_count(d) == 0 && m->entry == IR_NONE)
    diag_error(d, (src_loc){0}, "%s: the module has no entry computation", name);
  if (m && diag_error_count(d) == 0) {
    tgt_target tt;
    pass_target pt;
    tpu_pass_target_for(NULL, &tt, &pt);
    pass_ctx ctx = {d, 2, true, NULL, &pt};
    if (pass_run(m, &ctx, NULL, NULL) != ST_OK && diag_error_count(d) == 0)
      diag_error(d, (src_loc){0}, "%s: the optimisation pipeline failed", name);
  }
  if (!m || diag_error_count(d) > 0) {
    snprintf(err, errlen, "%s", diag_error_count(d) ? diag_text(d) : "the frontend rejected the input");
    size_t n = strlen(err); /* one message: no trailing newline */
    while (n && err[n - 1] == '\n') err[--n] = 0;
    ir_module_destroy(m);
    m = NULL;
  }
  diag_destroy(d);
  return m;
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
      const ir_shape *l = &c->insts.v[in->ops[0]].shape;
      uint64_t k = 1;
      for (int j = 0; j < in->a.lhs_contracting.n; j++) k *= (uint64_t)l->dims[in->a.lhs_contracting.v[j]];
      f += 2 * (uint64_t)ir_shape_count(&in->shape) * k;
    } else if (in->op == IR_OP_CONVOLUTION) {
      const ir_shape *kr = &c->insts.v[in->ops[1]].shape;
      uint64_t k = (uint64_t)kr->dims[in->a.conv.k_in];
      for (int j = 0; j < in->a.conv.nspatial; j++) k *= (uint64_t)kr->dims[in->a.conv.k_spatial[j]];
      f += 2 * (uint64_t)ir_shape_count(&in->shape) * k;
    }
  }
  return f;
}

static int dtype_of(ir_type t) {
  switch (t) {
  case IR_PRED: return TPURT_PRED;
  case IR_S8: return TPURT_S8;
  case IR_S32: return TPURT_S32;
  case IR_BF16: return TPURT_BF16;
  case IR_F16: return TPURT_F16;
  case IR_F32: return TPURT_F32;
  default: return 0;
  }
}

static void set_tensor(tpub_tensor *t, const char *name, const ir_shape *s) {
  snprintf(t->name, sizeof t->name, "%s", name);
  t->dtype = dtype_of(s->type);
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

tpurt_status_t cpu_rt_compile(const char *name, const void *text, size_t len,
                              const cpu_rt_spec *spec, cpu_rt_program **out, char *err,
                              size_t errlen) {
  *out = NULL;
  double t0 = now();
  ir_module *m = parse_optimise(name, text, len, err, errlen);
  if (!m) return TPURT_PARSE_ERROR;
  const ir_comp *c = &m->comps.v[m->entry];
  const ir_shape *rs = &c->insts.v[c->root].shape;
  int nin = 0, nout = llvm_leaf_count(rs);
  for (int p = 0; p < c->nparams; p++) nin += llvm_leaf_count(&c->insts.v[c->params[p]].shape);
  /* Every leaf must be an element type libtpurt buffers hold. */
  for (int p = 0; p <= c->nparams; p++) {
    const ir_inst *in = &c->insts.v[p < c->nparams ? c->params[p] : c->root];
    for (int l = 0; l < llvm_leaf_count(&in->shape); l++)
      if (!dtype_of(llvm_leaf_shape(&in->shape, l)->type)) {
        snprintf(err, errlen, "%s: %s %s has element type %s, which libtpurt buffers cannot hold",
                 name, p < c->nparams ? "parameter" : "result", in->name,
                 ir_type_name(llvm_leaf_shape(&in->shape, l)->type));
        ir_module_destroy(m);
        return TPURT_UNSUPPORTED;
      }
    for (int l = 0; l < llvm_leaf_count(&in->shape); l++)
      if (llvm_leaf_shape(&in->shape, l)->rank > TPURT_MAX_RANK) {
        snprintf(err, errlen, "%s: %s %s has rank %d; libtpurt buffers have at most %d dimensions",
                 name, p < c->nparams ? "parameter" : "result", in->name,
                 llvm_leaf_shape(&in->shape, l)->rank, TPURT_MAX_RANK);
        ir_module_destroy(m);
        return TPURT_UNSUPPORTED;
      }
  }
  cpu_options o;
  cpu_options_init(&o);
  o.threads = spec->threads;
  o.numerics = (cpu_numerics)spec->numerics;
  cpu_exe *x;
  base_status st = cpu_compile(m, &o, &x, err, errlen);
  if (st != ST_OK) {
    ir_module_destroy(m);
    return st == ST_UNSUPPORTED || st == ST_OUT_OF_MEMORY ? (tpurt_status_t)st : TPURT_INTERNAL;
  }
  cpu_rt_program *p = calloc(1, sizeof *p);
  if (!p) base_out_of_memory(0);
  p->a = arena_create();
  p->exe = x;
  p->nargs = c->nparams;
  p->args = arena_array(p->a, (size_t)c->nparams + 1, sizeof *p->args);
  p->in_leaves = arena_array(p->a, (size_t)nin + 1, sizeof *p->in_leaves);
  p->out_leaves = arena_array(p->a, (size_t)nout + 1, sizeof *p->out_leaves);
  p->params = arena_array(p->a, (size_t)nin + 1, sizeof *p->params);
  p->results = arena_array(p->a, (size_t)nout + 1, sizeof *p->results);
  int n = 0;
  for (int i = 0; i < c->nparams; i++) {
    const ir_inst *pi = &c->insts.v[c->params[i]];
    int first = n;
    p->args[i] = wrapper(p->a, &pi->shape, &p->in_leaves, &n);
    for (int l = first; l < n; l++) {
      char nm[TPUB_MAX_NAME + 1];
      if (pi->shape.type == IR_TUPLE) snprintf(nm, sizeof nm, "%.50s.%d", pi->name, l - first);
      else snprintf(nm, sizeof nm, "%s", pi->name);
      set_tensor(&p->params[l], nm, &p->in_leaves[l]->shape);
    }
  }
  n = 0;
  p->res = wrapper(p->a, rs, &p->out_leaves, &n);
  for (int l = 0; l < n; l++) {
    char nm[32];
    snprintf(nm, sizeof nm, "result.%d", l);
    set_tensor(&p->results[l], nm, &p->out_leaves[l]->shape);
  }
  p->info.nparams = (uint32_t)nin;
  p->info.nresults = (uint32_t)nout;
  p->info.params = p->params;
  p->info.results = p->results;
  p->info.flops = flops_of(m, c);
  p->info.threads = spec->threads;
  ir_module_destroy(m);
  p->info.compile_seconds = now() - t0;
  *out = p;
  return TPURT_OK;
}

void cpu_rt_get_info(const cpu_rt_program *p, cpu_rt_info *out) { *out = p->info; }

tpurt_status_t cpu_rt_execute(cpu_rt_program *p, void *const *in, void *const *out, char *err,
                              size_t errlen) {
  for (uint32_t i = 0; i < p->info.nparams; i++) p->in_leaves[i]->data = in[i];
  for (uint32_t i = 0; i < p->info.nresults; i++) p->out_leaves[i]->data = out[i];
  base_status st = cpu_execute_to(p->exe, p->args, p->nargs, p->res, err, errlen);
  return st == ST_OK ? TPURT_OK : TPURT_INTERNAL;
}

void cpu_rt_destroy(cpu_rt_program *p) {
  if (!p) return;
  cpu_exe_destroy(p->exe);
  arena_destroy(p->a);
  free(p);
}

tpurt_status_t cpu_rt_compile_tpu(const char *name, const void *text, size_t len,
                                  const char *target, tpub_image **out, double *out_seconds,
                                  char *err, size_t errlen) {
  *out = NULL;
  double t0 = now();
  ir_module *m = parse_optimise(name, text, len, err, errlen);
  if (!m) return TPURT_PARSE_ERROR;
  tpu_options o;
  tpu_options_init(&o);
  o.target = target;
  diag *d = diag_create();
  base_status st = tpu_compile(m, &o, d, out, NULL);
  if (st != ST_OK) {
    snprintf(err, errlen, "%s", diag_error_count(d) ? diag_text(d) : base_status_str(st));
    size_t n = strlen(err);
    while (n && err[n - 1] == '\n') err[--n] = 0;
  }
  diag_destroy(d);
  ir_module_destroy(m);
  *out_seconds = now() - t0;
  return st == ST_OK ? TPURT_OK : (tpurt_status_t)st;
}
