/* train_engine.c: where `tpucc train` runs its two programs (train.h,
 * "engine"): a runtime device (cpu, v2, v3, boards) whose buffers hold the
 * trainables, optimizer state and step counter from step to step, donated
 * to the step program; or the reference evaluator (interp), which keeps
 * them as host literals. Each program is compiled once, at open.
 *
 * With R data-parallel replicas the device has R cores (cpu,replicas=R, or
 * a TPU board of R cores); each holds its own copy of the state, which the
 * step's all-reduce keeps identical. A step's global batch is split into R
 * consecutive slices, replica r taking slice r; evaluation splits its batch
 * the same way and puts the logits back in order.
 *
 * Under mpirun with a TPU board or pod (tool_mpi_tpu_peers), each rank
 * emulates its block of the cores; rank 0 holds every replica's state and
 * results, gives the others their cores' parameters at every execution,
 * and sends them each step's loss, so that every rank takes the same
 * path. The other ranks' copies of the state are not kept: only rank 0
 * reads it back. They give no batches (x and y may be NULL there) and
 * read no logits (logits may be NULL): their cores get rank 0's
 * values, and rank 0 gets the cores' results. */
#include "tools/train.h"

#include <stdlib.h>
#include <string.h>

#include "driver/driver.h"
#include "tools/mpi_run.h"
#include "tpurt.h"

struct train_engine {
  const train_model *tm;
  int nstate; /* trainables, optimizer state, step counter */
  int64_t *state_bytes;
  /* runtime devices */
  tpurt_device_t *dev;
  tpurt_program_t *step, *eval;
  int nrep;             /* replicas: the device's cores */
  tpurt_buffer_t **buf; /* per replica r at r * (nstate + 3): nstate, then x, labels, eval x */
  double mxu_macs, mxu_peak; /* TPU: the steps' MACs and peak MACs so far, every core */
  bool shared;               /* the cores split across MPI ranks */
  bool follower;             /* shared, on a rank other than 0: gives no values, reads no results */
  /* interp */
  ir_module *step_m, *eval_m;
  arena *keep;
  ir_literal **lit; /* nstate, then x, labels, eval x */
};

static tpurt_dtype_t dtype_of(ir_type t) { return (tpurt_dtype_t)ir_type_tpurt_code(t); }

/* The shape of step parameter k. */
static const ir_shape *state_shape(const train_model *tm, const ir_module *step, int k) {
  (void)tm;
  const ir_comp *e = &step->comps.v[step->entry];
  return e->insts.v[e->params[k]].shape;
}

/* Step inputs: x and labels go to the step's data parameters in the
 * loss's order. */
static int x_slot(const train_engine *e) { return e->nstate + (e->tm->x > e->tm->labels); }
static int y_slot(const train_engine *e) { return e->nstate + (e->tm->labels > e->tm->x); }

static bool rt_fail(train_engine *e, const char *what, char *err, size_t errlen) {
  snprintf(err, errlen, "%s: %s", what, e->dev ? tpurt_device_message(e->dev) : "no device");
  return false;
}

/* The device spec of a target, --threads and the replicas (the cpu runs
 * them as cores of one device; a TPU target names its cores itself). */
static void device_spec(const char *target, int threads, int replicas, char *out, size_t n) {
  int len = snprintf(out, n, "%s", target);
  bool cpu = drv_is_cpu_spec(target);
  if (cpu && threads > 0 && !strstr(target, "threads=") && len > 0 && (size_t)len < n)
    len += snprintf(out + len, n - (size_t)len, ",threads=%d", threads);
  if (cpu && replicas > 1 && !strstr(target, "replicas=") && len > 0 && (size_t)len < n)
    snprintf(out + len, n - (size_t)len, ",replicas=%d", replicas);
}

static int nbuf(const train_engine *e) { return e->nstate + 3; }
static tpurt_buffer_t **rbuf(train_engine *e, int r) { return e->buf + (size_t)r * (size_t)nbuf(e); }

static bool open_runtime(train_engine *e, const ir_module *step, const char *target, int threads,
                         double *compile_seconds, char *err, size_t errlen) {
  const train_model *tm = e->tm;
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  char spec[256];
  device_spec(target, threads, tm->replicas, spec, sizeof spec);
  o.target = spec;
  o.peers = drv_is_cpu_spec(target) ? NULL : tool_mpi_tpu_peers();
  e->shared = o.peers != NULL;
  e->follower = e->shared && tool_mpi_rank() != 0;
  if (tpurt_device_create(&o, &e->dev) != TPURT_OK) {
    char why[400];
    tpurt_target_check(spec, why, sizeof why);
    snprintf(err, errlen, "--target=%s: %s", target, why);
    return false;
  }
  e->nrep = tpurt_device_core_count(e->dev);
  if (e->nrep != tm->replicas) {
    snprintf(err, errlen, "--target=%s runs %d replicas (one per core), not --replicas=%d", target,
             e->nrep, tm->replicas);
    return false;
  }
  if (tpurt_program_load(e->dev, tm->step_text, strlen(tm->step_text), &e->step) != TPURT_OK)
    return rt_fail(e, "compiling the training step", err, errlen);
  if (tpurt_program_load(e->dev, tm->eval_text, strlen(tm->eval_text), &e->eval) != TPURT_OK)
    return rt_fail(e, "compiling graph logits", err, errlen);
  double s1 = 0, s2 = 0;
  tpurt_program_metric(e->step, "compile_seconds", &s1);
  tpurt_program_metric(e->eval, "compile_seconds", &s2);
  *compile_seconds = s1 + s2;
  for (int k = 0; k < e->nstate; k++)
    if (tpurt_program_result_alias(e->step, (size_t)k + 1) != k) {
      snprintf(err, errlen, "the step program does not donate parameter %d to result %d", k, k + 1);
      return false;
    }
  int nb = nbuf(e);
  e->buf = calloc((size_t)nb * (size_t)e->nrep, sizeof *e->buf);
  if (!e->buf) base_out_of_memory(0);
  const ir_comp *sc = &step->comps.v[step->entry];
  const ir_shape *xs = state_shape(tm, step, x_slot(e));
  for (int r = 0; r < e->nrep; r++) {
    tpurt_buffer_t **b = rbuf(e, r);
    for (int k = 0; k < sc->nparams; k++) {
      const ir_shape *s = state_shape(tm, step, k);
      if (tpurt_buffer_create(e->dev, dtype_of(s->type), s->rank, s->dims, NULL, 0, &b[k]))
        return rt_fail(e, "device buffer", err, errlen);
    }
    if (tpurt_buffer_create(e->dev, TPURT_F32, xs->rank, xs->dims, NULL, 0, &b[nb - 1]))
      return rt_fail(e, "device buffer", err, errlen);
  }
  return true;
}

static bool open_interp(train_engine *e, char *err, size_t errlen) {
  const train_model *tm = e->tm;
  if (tm->eval_n > 256) {
    snprintf(err, errlen, "graph logits has more than 256 parameters");
    return false;
  }
  diag *d = diag_create();
  drv_parse("step.hlo", tm->step_text, strlen(tm->step_text), TPUCC_LANGUAGE_HLO, NULL, d, &e->step_m);
  drv_parse("logits.hlo", tm->eval_text, strlen(tm->eval_text), TPUCC_LANGUAGE_HLO, NULL, d, &e->eval_m);
  bool ok = e->step_m && e->eval_m;
  if (!ok) drv_diag_message(d, "the step did not parse", err, errlen);
  diag_destroy(d);
  if (!ok) return false;
  e->keep = arena_create();
  const ir_comp *sc = &e->step_m->comps.v[e->step_m->entry];
  e->lit = calloc((size_t)sc->nparams + 1, sizeof *e->lit);
  if (!e->lit) base_out_of_memory(0);
  for (int k = 0; k < sc->nparams; k++)
    e->lit[k] = ir_literal_create(e->keep, sc->insts.v[sc->params[k]].shape);
  e->lit[sc->nparams] = ir_literal_create(e->keep, &e->lit[x_slot(e)]->shape);
  return true;
}

bool train_engine_open(const train_model *tm, const char *target, int threads,
                       train_engine **out, double *compile_seconds, char *err, size_t errlen) {
  train_engine *e = calloc(1, sizeof *e);
  if (!e) base_out_of_memory(0);
  e->tm = tm;
  *out = e;
  *compile_seconds = 0;
  diag *d = diag_create();
  ir_module *step = NULL;
  drv_parse("step.hlo", tm->step_text, strlen(tm->step_text), TPUCC_LANGUAGE_HLO, NULL, d, &step);
  if (!step) {
    drv_diag_message(d, "the training step did not parse", err, errlen);
    diag_destroy(d);
    return false;
  }
  diag_destroy(d);
  e->nstate = step->comps.v[step->entry].nparams - 2;
  e->state_bytes = calloc((size_t)e->nstate + 1, sizeof *e->state_bytes);
  if (!e->state_bytes) base_out_of_memory(0);
  for (int k = 0; k < e->nstate; k++) {
    const ir_shape *s = state_shape(tm, step, k);
    e->state_bytes[k] = ir_shape_count(s) * (int64_t)ir_type_size(s->type);
  }
  bool ok;
  e->nrep = 1;
  if (strcmp(target, "interp") == 0 && tm->replicas > 1) {
    snprintf(err, errlen, "--replicas=%d: data-parallel training runs on the cpu and on TPU boards "
             "(--target=cpu, v2-8, v3-8, pods), not on interp", tm->replicas);
    ok = false;
  } else if (strcmp(target, "interp") == 0) {
    ok = open_interp(e, err, errlen);
  } else {
    ok = open_runtime(e, step, target, threads, compile_seconds, err, errlen);
  }
  ir_module_destroy(step);
  return ok;
}

int train_engine_nstate(const train_engine *e) { return e->nstate; }
int64_t train_engine_state_bytes(const train_engine *e, int k) { return e->state_bytes[k]; }

bool train_engine_read(train_engine *e, int k, void *data, char *err, size_t errlen) {
  if (e->lit) {
    memcpy(data, e->lit[k]->data, (size_t)e->state_bytes[k]);
    return true;
  }
  if (tpurt_buffer_read(e->buf[k], data, (size_t)e->state_bytes[k]) != TPURT_OK)
    return rt_fail(e, "reading back state", err, errlen);
  /* Every replica holds the same state: the step's all-reduce keeps it so. */
  void *other = e->nrep > 1 ? malloc((size_t)e->state_bytes[k] + 1) : NULL;
  bool ok = true;
  for (int r = 1; r < e->nrep && ok; r++) {
    if (!other) base_out_of_memory(0);
    if (tpurt_buffer_read(rbuf(e, r)[k], other, (size_t)e->state_bytes[k]) != TPURT_OK)
      ok = rt_fail(e, "reading back state", err, errlen);
    else if (memcmp(other, data, (size_t)e->state_bytes[k]) != 0) {
      snprintf(err, errlen, "state tensor %d of replica %d differs from replica 0's: the replicas "
               "no longer hold the same weights", k, r);
      ok = false;
    }
  }
  free(other);
  return ok;
}

bool train_engine_write(train_engine *e, int k, const void *data, char *err, size_t errlen) {
  if (e->lit) {
    memcpy(e->lit[k]->data, data, (size_t)e->state_bytes[k]);
    return true;
  }
  for (int r = 0; r < e->nrep; r++)
    if (tpurt_buffer_write(rbuf(e, r)[k], data, (size_t)e->state_bytes[k]) != TPURT_OK)
      return rt_fail(e, "writing state", err, errlen);
  return true;
}

static bool interp_step(train_engine *e, const float *x, const int32_t *y, double *loss, char *err,
                        size_t errlen) {
  memcpy(e->lit[x_slot(e)]->data, x, e->lit[x_slot(e)]->nbytes);
  memcpy(e->lit[y_slot(e)]->data, y, e->lit[y_slot(e)]->nbytes);
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  arena *a = arena_create();
  ir_literal *r;
  base_status st = ir_eval(e->step_m, &eo, e->lit, e->nstate + 2, a, &r, err, errlen);
  if (st == ST_OK) {
    *loss = ir_literal_get_f64(r->elems[0], 0);
    for (int k = 0; k < e->nstate; k++) memcpy(e->lit[k]->data, r->elems[1 + k]->data, (size_t)e->state_bytes[k]);
  }
  arena_destroy(a);
  return st == ST_OK;
}

/* Writes slice r of the global batch (x, y; NULL y: none) into replica
 * r's input buffers at slots xs and ys. */
static bool write_slices(train_engine *e, const float *x, const int32_t *y, int xs, int ys, char *err,
                         size_t errlen) {
  size_t rows = (size_t)e->tm->batch, xb = rows * (size_t)e->tm->example_elems * sizeof(float);
  for (int r = 0; r < e->nrep; r++) {
    tpurt_buffer_t **b = rbuf(e, r);
    if (tpurt_buffer_write(b[xs], (const char *)x + (size_t)r * xb, xb) != TPURT_OK ||
        (y && tpurt_buffer_write(b[ys], y + (size_t)r * rows, rows * sizeof(int32_t)) != TPURT_OK))
      return rt_fail(e, "batch", err, errlen);
  }
  return true;
}

/* The step on R replicas: new result buffers replace each replica's state
 * (the all-reduce keeps the replicas' states equal). */
static bool step_replicas(train_engine *e, tpurt_buffer_t **res, int nr, double *loss,
                          double *device_seconds, char *err, size_t errlen) {
  int np = e->nstate + 2;
  tpurt_buffer_t **params = calloc((size_t)np * (size_t)e->nrep, sizeof *params);
  tpurt_stats_t *st = calloc((size_t)e->nrep, sizeof *st);
  if (!params || !st) base_out_of_memory(0);
  for (int r = 0; r < e->nrep; r++)
    memcpy(params + (size_t)r * (size_t)np, rbuf(e, r), sizeof *params * (size_t)np);
  tpurt_status_t s = tpurt_program_execute_replicas(e->step, (size_t)e->nrep, params, (size_t)np, res,
                                                    (size_t)nr, st);
  free(params);
  if (s != TPURT_OK) {
    free(st);
    return rt_fail(e, "training step", err, errlen);
  }
  float l = 0;
  /* a follower's replica 0 is rank 0's core: the loss comes from rank 0 */
  if (!e->follower) s = tpurt_buffer_read(res[0], &l, sizeof l);
  *loss = l;
  for (int r = 0; r < e->nrep; r++) {
    tpurt_buffer_t **b = rbuf(e, r), **rr = res + (size_t)r * (size_t)nr;
    tpurt_buffer_destroy(rr[0]);
    for (int k = 0; k < e->nstate; k++) {
      tpurt_buffer_destroy(b[k]);
      b[k] = rr[1 + k];
    }
    if (st[r].seconds > *device_seconds) *device_seconds = st[r].seconds;
    e->mxu_macs += (double)st[r].mxu_macs;
    e->mxu_peak += (double)st[r].mxu_peak_macs;
  }
  free(st);
  return s == TPURT_OK || rt_fail(e, "reading the loss", err, errlen);
}

/* Rank 0's loss to every rank of a shared pod. */
static bool share_loss(double *loss, char *err, size_t errlen) {
  void *p = loss;
  size_t n = sizeof *loss;
  if (!tool_mpi_bcast(&p, &n, err, errlen)) return false;
  if (p == loss) return true;
  bool ok = n == sizeof *loss;
  if (ok) memcpy(loss, p, sizeof *loss);
  else snprintf(err, errlen, "rank 0 sent a loss of %zu bytes", n);
  free(p);
  return ok;
}

bool train_engine_step(train_engine *e, const float *x, const int32_t *y, double *loss,
                       double *device_seconds, char *err, size_t errlen) {
  *device_seconds = 0;
  if (e->lit) return interp_step(e, x, y, loss, err, errlen);
  if (!e->follower && !write_slices(e, x, y, x_slot(e), y_slot(e), err, errlen)) return false;
  int nr = e->nstate + 1;
  if (nr > 4096) {
    snprintf(err, errlen, "too many state tensors (%d)", nr);
    return false;
  }
  tpurt_buffer_t **res = calloc((size_t)nr * (size_t)e->nrep, sizeof *res);
  if (!res) base_out_of_memory(0);
  bool tpu = strcmp(tpurt_device_platform(e->dev), "tpu") == 0, ok;
  if (e->nrep > 1) {
    ok = step_replicas(e, res, nr, loss, device_seconds, err, errlen);
  } else {
    tpurt_stats_t st;
    memset(&st, 0, sizeof st);
    ok = tpurt_program_execute_donated(e->step, e->buf, (size_t)e->nstate + 2, res, (size_t)nr, &st) ==
             TPURT_OK ||
         rt_fail(e, "training step", err, errlen);
    float l = 0;
    if (ok) {
      tpurt_status_t s = tpurt_buffer_read(res[0], &l, sizeof l);
      tpurt_buffer_destroy(res[0]);
      ok = s == TPURT_OK || rt_fail(e, "reading the loss", err, errlen);
    }
    *loss = l;
    *device_seconds = ok ? st.seconds : 0;
    e->mxu_macs += ok ? (double)st.mxu_macs : 0;
    e->mxu_peak += ok ? (double)st.mxu_peak_macs : 0;
  }
  free(res);
  if (!tpu) *device_seconds = e->mxu_macs = e->mxu_peak = 0;
  if (ok && e->shared) ok = share_loss(loss, err, errlen);
  return ok;
}

void train_engine_mxu(const train_engine *e, double *macs, double *peak) {
  *macs = e->mxu_macs;
  *peak = e->mxu_peak;
}

/* The logits of the global batch x on R replicas, each its slice. */
static bool logits_replicas(train_engine *e, float *logits, char *err, size_t errlen) {
  const train_model *tm = e->tm;
  int n = tm->eval_n, nb = nbuf(e);
  tpurt_buffer_t **args = calloc((size_t)n * (size_t)e->nrep + 1, sizeof *args);
  tpurt_buffer_t **out = calloc((size_t)e->nrep, sizeof *out);
  if (!args || !out) base_out_of_memory(0);
  for (int r = 0; r < e->nrep; r++)
    for (int k = 0; k < n; k++)
      args[(size_t)r * (size_t)n + (size_t)k] = tm->eval_src[k] < 0 ? rbuf(e, r)[nb - 1] : rbuf(e, r)[tm->eval_src[k]];
  bool ok = tpurt_program_execute_replicas(e->eval, (size_t)e->nrep, args, (size_t)n, out, 1, NULL) == TPURT_OK ||
            rt_fail(e, "evaluation", err, errlen);
  size_t lb = (size_t)tm->batch * (size_t)tm->classes * sizeof(float);
  for (int r = 0; r < e->nrep; r++) {
    if (ok && !e->follower && tpurt_buffer_read(out[r], (char *)logits + (size_t)r * lb, lb) != TPURT_OK)
      ok = rt_fail(e, "reading logits", err, errlen);
    tpurt_buffer_destroy(out[r]);
  }
  free(args);
  free(out);
  return ok;
}

bool train_engine_logits(train_engine *e, const float *x, float *logits, char *err, size_t errlen) {
  const train_model *tm = e->tm;
  size_t xb = (size_t)(tm->batch * tm->example_elems) * sizeof(float);
  size_t lb = (size_t)tm->batch * (size_t)tm->classes * sizeof(float);
  if (e->lit) {
    ir_literal *xl = e->lit[e->nstate + 2], *args[256];
    memcpy(xl->data, x, xb);
    for (int k = 0; k < tm->eval_n && k < 256; k++)
      args[k] = tm->eval_src[k] < 0 ? xl : e->lit[tm->eval_src[k]];
    ir_eval_options eo;
    ir_eval_options_init(&eo);
    arena *a = arena_create();
    ir_literal *r;
    base_status st = ir_eval(e->eval_m, &eo, args, tm->eval_n, a, &r, err, errlen);
    if (st == ST_OK) memcpy(logits, r->data, lb);
    arena_destroy(a);
    return st == ST_OK;
  }
  if (tm->eval_n > 256) {
    snprintf(err, errlen, "graph logits has more than 256 parameters");
    return false;
  }
  if (!e->follower && !write_slices(e, x, NULL, nbuf(e) - 1, 0, err, errlen)) return false;
  if (e->nrep > 1) return logits_replicas(e, logits, err, errlen);
  tpurt_buffer_t *xbuf = e->buf[e->nstate + 2], *args[256], *out = NULL;
  for (int k = 0; k < tm->eval_n; k++)
    args[k] = tm->eval_src[k] < 0 ? xbuf : e->buf[tm->eval_src[k]];
  if (tpurt_program_execute(e->eval, args, (size_t)tm->eval_n, &out, 1, NULL) != TPURT_OK)
    return rt_fail(e, "evaluation", err, errlen);
  tpurt_status_t s = tpurt_buffer_read(out, logits, lb);
  tpurt_buffer_destroy(out);
  return s == TPURT_OK || rt_fail(e, "reading logits", err, errlen);
}

double train_engine_executions(const train_engine *e) {
  double v = 0;
  if (e->step) tpurt_program_metric(e->step, "executions", &v);
  return v;
}

void train_engine_close(train_engine *e) {
  if (!e) return;
  for (int k = 0; e->buf && k < nbuf(e) * e->nrep; k++) tpurt_buffer_destroy(e->buf[k]);
  free(e->buf);
  tpurt_program_destroy(e->step);
  tpurt_program_destroy(e->eval);
  tpurt_device_destroy(e->dev);
  ir_module_destroy(e->step_m);
  ir_module_destroy(e->eval_m);
  arena_destroy(e->keep);
  free(e->lit);
  free(e->state_bytes);
  free(e);
}
