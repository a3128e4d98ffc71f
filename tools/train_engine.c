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
 * values, and rank 0 gets the cores' results.
 *
 * With k > 1 steps per execution the loop program (train_loop_compose)
 * runs k steps in one call on k stacked batches; the step program alone
 * is compiled the first time a shorter group of steps needs it. */
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
  tpurt_program_t *step, *eval, *loop; /* step: NULL until needed when k > 1 */
  int nrep;             /* replicas: the device's cores */
  /* per replica r at r * (nstate + 5): nstate, then x, labels, eval x,
   * then the loop's stacked x and labels (k > 1) */
  tpurt_buffer_t **buf;
  float *stage_x;       /* k > 1, several replicas: one replica's k slices */
  int32_t *stage_y;
  double mxu_macs, mxu_peak; /* TPU: the steps' MACs and peak MACs so far, every core */
  bool shared;               /* the cores split across MPI ranks */
  bool follower;             /* shared, on a rank other than 0: gives no values, reads no results */
  /* interp */
  ir_module *step_m, *eval_m, *loop_m;
  arena *keep;
  ir_literal **lit; /* nstate, then x, labels, eval x, the loop's x and labels */
};

static tpurt_dtype_t dtype_of(ir_type t) { return (tpurt_dtype_t)ir_type_tpurt_code(t); }

/* The shape of step parameter k. */
static const ir_shape *state_shape(const train_model *tm, const ir_module *step, int k) {
  (void)tm;
  const ir_comp *e = &step->comps.v[step->entry];
  return e->insts.v[e->params[k]].shape;
}

/* Step inputs: x and labels go to the step's data parameters in the
 * loss's order; the slot of x (labels) among the two data slots at base. */
static int x_in(const train_engine *e, int base) { return base + (e->tm->x > e->tm->labels); }
static int y_in(const train_engine *e, int base) { return base + (e->tm->labels > e->tm->x); }
static int eval_slot(const train_engine *e) { return e->nstate + 2; }
/* The loop's stacked data: at loop_slot, x and labels in the loss's order. */
static int loop_slot(const train_engine *e) { return e->nstate + 3; }

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

static int nbuf(const train_engine *e) { return e->nstate + 5; }
static tpurt_buffer_t **rbuf(train_engine *e, int r) { return e->buf + (size_t)r * (size_t)nbuf(e); }

/* Compiles the step or loop program text into *out and checks that it
 * donates the state to its results. */
static bool load_donating(train_engine *e, const char *text, tpurt_program_t **out, char *err,
                          size_t errlen) {
  if (tpurt_program_load(e->dev, text, strlen(text), out) != TPURT_OK)
    return rt_fail(e, "compiling the training step", err, errlen);
  for (int k = 0; k < e->nstate; k++)
    if (tpurt_program_result_alias(*out, (size_t)k + 1) != k) {
      snprintf(err, errlen, "the step program does not donate parameter %d to result %d", k, k + 1);
      return false;
    }
  return true;
}

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
  if (tm->k > 1 ? !load_donating(e, tm->loop_text, &e->loop, err, errlen)
                : !load_donating(e, tm->step_text, &e->step, err, errlen))
    return false;
  if (tpurt_program_load(e->dev, tm->eval_text, strlen(tm->eval_text), &e->eval) != TPURT_OK)
    return rt_fail(e, "compiling graph logits", err, errlen);
  double s1 = 0, s2 = 0;
  tpurt_program_metric(tm->k > 1 ? e->loop : e->step, "compile_seconds", &s1);
  tpurt_program_metric(e->eval, "compile_seconds", &s2);
  *compile_seconds = s1 + s2;
  int nb = nbuf(e);
  e->buf = calloc((size_t)nb * (size_t)e->nrep, sizeof *e->buf);
  if (!e->buf) base_out_of_memory(0);
  const ir_comp *sc = &step->comps.v[step->entry];
  const ir_shape *xs = state_shape(tm, step, x_in(e, e->nstate));
  for (int r = 0; r < e->nrep; r++) {
    tpurt_buffer_t **b = rbuf(e, r);
    for (int k = 0; k < sc->nparams; k++) {
      const ir_shape *s = state_shape(tm, step, k);
      if (tpurt_buffer_create(e->dev, dtype_of(s->type), s->rank, s->dims, NULL, 0, &b[k]))
        return rt_fail(e, "device buffer", err, errlen);
    }
    if (tpurt_buffer_create(e->dev, TPURT_F32, xs->rank, xs->dims, NULL, 0, &b[eval_slot(e)]))
      return rt_fail(e, "device buffer", err, errlen);
    for (int d = 0; d < 2 && tm->k > 1; d++) {
      const ir_shape *s = state_shape(tm, step, e->nstate + d);
      int64_t dims[IR_MAX_RANK + 1];
      dims[0] = tm->k;
      memcpy(dims + 1, s->dims, sizeof(int64_t) * (size_t)s->rank);
      if (tpurt_buffer_create(e->dev, dtype_of(s->type), s->rank + 1, dims, NULL, 0,
                              &b[loop_slot(e) + d]))
        return rt_fail(e, "device buffer", err, errlen);
    }
  }
  if (tm->k > 1 && e->nrep > 1) {
    e->stage_x = malloc(sizeof(float) * (size_t)(tm->k * tm->batch * tm->example_elems) + 1);
    e->stage_y = malloc(sizeof(int32_t) * (size_t)(tm->k * tm->batch) + 1);
    if (!e->stage_x || !e->stage_y) base_out_of_memory(0);
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
  if (tm->k > 1)
    drv_parse("steps.hlo", tm->loop_text, strlen(tm->loop_text), TPUCC_LANGUAGE_HLO, NULL, d, &e->loop_m);
  bool ok = e->step_m && e->eval_m && (tm->k == 1 || e->loop_m);
  if (!ok) drv_diag_message(d, "the step did not parse", err, errlen);
  diag_destroy(d);
  if (!ok) return false;
  e->keep = arena_create();
  const ir_comp *sc = &e->step_m->comps.v[e->step_m->entry];
  e->lit = calloc((size_t)nbuf(e), sizeof *e->lit);
  if (!e->lit) base_out_of_memory(0);
  for (int k = 0; k < sc->nparams; k++)
    e->lit[k] = ir_literal_create(e->keep, sc->insts.v[sc->params[k]].shape);
  e->lit[eval_slot(e)] = ir_literal_create(e->keep, &e->lit[x_in(e, e->nstate)]->shape);
  for (int j = 0; j < 2 && e->loop_m; j++) {
    const ir_comp *lc = &e->loop_m->comps.v[e->loop_m->entry];
    e->lit[loop_slot(e) + j] = ir_literal_create(e->keep, lc->insts.v[lc->params[e->nstate + j]].shape);
  }
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


/* Runs m (the step, or the loop of k steps) on the evaluator with the data
 * of n steps (x, y: n global batches) at the slots from base: the state
 * takes its results, losses[0..n) its first result. */
static bool interp_run(train_engine *e, const ir_module *m, int base, int n, const float *x,
                       const int32_t *y, double *losses, char *err, size_t errlen) {
  memcpy(e->lit[x_in(e, base)]->data, x, e->lit[x_in(e, base)]->nbytes);
  memcpy(e->lit[y_in(e, base)]->data, y, e->lit[y_in(e, base)]->nbytes);
  ir_literal **args = calloc((size_t)e->nstate + 2, sizeof *args);
  if (!args) base_out_of_memory(0);
  for (int k = 0; k < e->nstate; k++) args[k] = e->lit[k];
  args[e->nstate] = e->lit[base];
  args[e->nstate + 1] = e->lit[base + 1];
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  arena *a = arena_create();
  ir_literal *r;
  base_status st = ir_eval(m, &eo, args, e->nstate + 2, a, &r, err, errlen);
  if (st == ST_OK) {
    for (int j = 0; j < n; j++) losses[j] = ir_literal_get_f64(r->elems[0], j);
    for (int k = 0; k < e->nstate; k++) memcpy(e->lit[k]->data, r->elems[1 + k]->data, (size_t)e->state_bytes[k]);
  }
  arena_destroy(a);
  free(args);
  return st == ST_OK;
}

/* Writes replica r's part of n global batches (x, y; NULL y: none) into
 * its buffers at slots xs and ys: slice r of each batch, the n slices
 * stacked. */
static bool write_slices(train_engine *e, const float *x, const int32_t *y, int n, int xs, int ys,
                         char *err, size_t errlen) {
  size_t rows = (size_t)e->tm->batch, xe = rows * (size_t)e->tm->example_elems;
  size_t R = (size_t)e->nrep;
  for (size_t r = 0; r < R; r++) {
    tpurt_buffer_t **b = rbuf(e, (int)r);
    const float *xr = x + r * xe;
    const int32_t *yr = y ? y + r * rows : NULL;
    if (n > 1 && R > 1) { /* gather slice r of each batch */
      for (size_t j = 0; j < (size_t)n; j++) {
        memcpy(e->stage_x + j * xe, x + (j * R + r) * xe, xe * sizeof(float));
        if (y) memcpy(e->stage_y + j * rows, y + (j * R + r) * rows, rows * sizeof(int32_t));
      }
      xr = e->stage_x;
      yr = y ? e->stage_y : NULL;
    }
    if (tpurt_buffer_write(b[xs], xr, (size_t)n * xe * sizeof(float)) != TPURT_OK ||
        (yr && tpurt_buffer_write(b[ys], yr, (size_t)n * rows * sizeof(int32_t)) != TPURT_OK))
      return rt_fail(e, "batch", err, errlen);
  }
  return true;
}

/* Runs prog (the step, or the loop of n steps) on every replica's state
 * and its data at the slots from base: the state takes the results (in
 * place when donated, else new buffers), losses[0..n) from result 0
 * (replica 0's; the all-reduce makes them equal), device_seconds the
 * slowest replica's modelled time. */
static bool run_program(train_engine *e, tpurt_program_t *prog, int base, int n, double *losses,
                        double *device_seconds, char *err, size_t errlen) {
  size_t np = (size_t)e->nstate + 2, nr = (size_t)e->nstate + 1, R = (size_t)e->nrep;
  tpurt_buffer_t **params = calloc(np * R, sizeof *params), **res = calloc(nr * R, sizeof *res);
  tpurt_stats_t *st = calloc(R, sizeof *st);
  float *l = calloc((size_t)n, sizeof *l);
  if (!params || !res || !st || !l) base_out_of_memory(0);
  for (size_t r = 0; r < R; r++) {
    tpurt_buffer_t **p = params + r * np, **b = rbuf(e, (int)r);
    memcpy(p, b, sizeof *p * (size_t)e->nstate);
    p[np - 2] = b[base];
    p[np - 1] = b[base + 1];
  }
  tpurt_status_t s = R > 1 ? tpurt_program_execute_replicas(prog, R, params, np, res, nr, st)
                           : tpurt_program_execute_donated(prog, params, np, res, nr, st);
  bool ok = s == TPURT_OK || rt_fail(e, "training step", err, errlen);
  /* a follower's replica 0 is rank 0's core: the losses come from rank 0 */
  if (ok && !e->follower && tpurt_buffer_read(res[0], l, sizeof *l * (size_t)n) != TPURT_OK)
    ok = rt_fail(e, "reading the loss", err, errlen);
  for (int j = 0; j < n; j++) losses[j] = l[j];
  for (size_t r = 0; r < R && s == TPURT_OK; r++) {
    tpurt_buffer_t **b = rbuf(e, (int)r), **rr = res + r * nr;
    tpurt_buffer_destroy(rr[0]);
    for (int k = 0; k < e->nstate && R > 1; k++) {
      tpurt_buffer_destroy(b[k]);
      b[k] = rr[1 + k];
    }
    if (st[r].seconds > *device_seconds) *device_seconds = st[r].seconds;
    e->mxu_macs += (double)st[r].mxu_macs;
    e->mxu_peak += (double)st[r].mxu_peak_macs;
  }
  free(params);
  free(res);
  free(st);
  free(l);
  return ok;
}

/* Rank 0's n losses to every rank of a shared pod. */
static bool share_losses(double *losses, int n, char *err, size_t errlen) {
  void *p = losses;
  size_t bytes = sizeof *losses * (size_t)n;
  if (!tool_mpi_bcast(&p, &bytes, err, errlen)) return false;
  if (p == losses) return true;
  bool ok = bytes == sizeof *losses * (size_t)n;
  if (ok) memcpy(losses, p, bytes);
  else snprintf(err, errlen, "rank 0 sent %zu bytes of losses", bytes);
  free(p);
  return ok;
}

/* n steps on the device: the step program (n 1) or the loop (n k). */
static bool device_steps(train_engine *e, int n, const float *x, const int32_t *y, double *losses,
                         double *device_seconds, char *err, size_t errlen) {
  int base = n > 1 ? loop_slot(e) : e->nstate;
  if (e->nstate + 1 > 4096) {
    snprintf(err, errlen, "too many state tensors (%d)", e->nstate);
    return false;
  }
  if (!e->follower && !write_slices(e, x, y, n, x_in(e, base), y_in(e, base), err, errlen)) return false;
  bool tpu = strcmp(tpurt_device_platform(e->dev), "tpu") == 0;
  bool ok = run_program(e, n > 1 ? e->loop : e->step, base, n, losses, device_seconds, err, errlen);
  if (!tpu) *device_seconds = e->mxu_macs = e->mxu_peak = 0;
  if (ok && e->shared) ok = share_losses(losses, n, err, errlen);
  return ok;
}

bool train_engine_load_step(train_engine *e, double *compile_seconds, char *err, size_t errlen) {
  double c = 0;
  if (e->lit || e->step) return true;
  if (!load_donating(e, e->tm->step_text, &e->step, err, errlen)) return false;
  tpurt_program_metric(e->step, "compile_seconds", &c);
  *compile_seconds += c;
  return true;
}

bool train_engine_step(train_engine *e, const float *x, const int32_t *y, double *loss,
                       double *device_seconds, char *err, size_t errlen) {
  *device_seconds = 0;
  if (e->lit) return interp_run(e, e->step_m, e->nstate, 1, x, y, loss, err, errlen);
  double c = 0;
  if (!train_engine_load_step(e, &c, err, errlen)) return false;
  return device_steps(e, 1, x, y, loss, device_seconds, err, errlen);
}

bool train_engine_steps(train_engine *e, const float *x, const int32_t *y, double *losses,
                        double *device_seconds, char *err, size_t errlen) {
  int k = e->tm->k;
  *device_seconds = 0;
  if (k == 1) return train_engine_step(e, x, y, losses, device_seconds, err, errlen);
  if (e->lit) return interp_run(e, e->loop_m, loop_slot(e), k, x, y, losses, err, errlen);
  return device_steps(e, k, x, y, losses, device_seconds, err, errlen);
}

void train_engine_mxu(const train_engine *e, double *macs, double *peak) {
  *macs = e->mxu_macs;
  *peak = e->mxu_peak;
}

/* The logits of the global batch x on R replicas, each its slice. */
static bool logits_replicas(train_engine *e, float *logits, char *err, size_t errlen) {
  const train_model *tm = e->tm;
  int n = tm->eval_n;
  tpurt_buffer_t **args = calloc((size_t)n * (size_t)e->nrep + 1, sizeof *args);
  tpurt_buffer_t **out = calloc((size_t)e->nrep, sizeof *out);
  if (!args || !out) base_out_of_memory(0);
  for (int r = 0; r < e->nrep; r++)
    for (int k = 0; k < n; k++)
      args[(size_t)r * (size_t)n + (size_t)k] = tm->eval_src[k] < 0 ? rbuf(e, r)[eval_slot(e)] : rbuf(e, r)[tm->eval_src[k]];
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
    ir_literal *xl = e->lit[eval_slot(e)], *args[256];
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
  if (!e->follower && !write_slices(e, x, NULL, 1, eval_slot(e), 0, err, errlen)) return false;
  if (e->nrep > 1) return logits_replicas(e, logits, err, errlen);
  tpurt_buffer_t *xbuf = e->buf[eval_slot(e)], *args[256], *out = NULL;
  for (int k = 0; k < tm->eval_n; k++)
    args[k] = tm->eval_src[k] < 0 ? xbuf : e->buf[tm->eval_src[k]];
  if (tpurt_program_execute(e->eval, args, (size_t)tm->eval_n, &out, 1, NULL) != TPURT_OK)
    return rt_fail(e, "evaluation", err, errlen);
  tpurt_status_t s = tpurt_buffer_read(out, logits, lb);
  tpurt_buffer_destroy(out);
  return s == TPURT_OK || rt_fail(e, "reading logits", err, errlen);
}

double train_engine_executions(const train_engine *e) {
  double v = 0, w = 0;
  if (e->step) tpurt_program_metric(e->step, "executions", &v);
  if (e->loop) tpurt_program_metric(e->loop, "executions", &w);
  return v + w;
}

void train_engine_close(train_engine *e) {
  if (!e) return;
  for (int k = 0; e->buf && k < nbuf(e) * e->nrep; k++) tpurt_buffer_destroy(e->buf[k]);
  free(e->buf);
  tpurt_program_destroy(e->step);
  tpurt_program_destroy(e->eval);
  tpurt_program_destroy(e->loop);
  free(e->stage_x);
  free(e->stage_y);
  tpurt_device_destroy(e->dev);
  ir_module_destroy(e->step_m);
  ir_module_destroy(e->eval_m);
  ir_module_destroy(e->loop_m);
  arena_destroy(e->keep);
  free(e->lit);
  free(e->state_bytes);
  free(e);
}
