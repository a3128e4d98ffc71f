/* train_engine.c: where `tpucc train` runs its two programs (train.h,
 * "engine"): a runtime device (cpu, v2, v3) whose buffers hold the
 * trainables, optimizer state and step counter from step to step, donated
 * to the step program; or the reference evaluator (interp), which keeps
 * them as host literals. Each program is compiled once, at open. */
#include "tools/train.h"

#include <stdlib.h>
#include <string.h>

#include "driver/driver.h"
#include "tpurt.h"

struct train_engine {
  const train_model *tm;
  int nstate; /* trainables, optimizer state, step counter */
  int64_t *state_bytes;
  /* runtime devices */
  tpurt_device_t *dev;
  tpurt_program_t *step, *eval;
  tpurt_buffer_t **buf; /* nstate, then x, labels, eval x */
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

/* The device spec of a target and --threads. */
static void device_spec(const char *target, int threads, char *out, size_t n) {
  if (drv_is_cpu_spec(target) && threads > 0 && !strstr(target, "threads="))
    snprintf(out, n, "%s,threads=%d", target, threads);
  else
    snprintf(out, n, "%s", target);
}

static bool open_runtime(train_engine *e, const ir_module *step, const char *target, int threads,
                         double *compile_seconds, char *err, size_t errlen) {
  const train_model *tm = e->tm;
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  char spec[256];
  device_spec(target, threads, spec, sizeof spec);
  o.target = spec;
  if (tpurt_device_create(&o, &e->dev) != TPURT_OK) {
    char why[400];
    tpurt_target_check(spec, why, sizeof why);
    snprintf(err, errlen, "--target=%s: %s", target, why);
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
  int nb = e->nstate + 3;
  e->buf = calloc((size_t)nb, sizeof *e->buf);
  if (!e->buf) base_out_of_memory(0);
  const ir_comp *sc = &step->comps.v[step->entry];
  for (int k = 0; k < sc->nparams; k++) {
    const ir_shape *s = state_shape(tm, step, k);
    if (tpurt_buffer_create(e->dev, dtype_of(s->type), s->rank, s->dims, NULL, 0, &e->buf[k]))
      return rt_fail(e, "device buffer", err, errlen);
  }
  const ir_shape *xs = state_shape(tm, step, x_slot(e));
  return tpurt_buffer_create(e->dev, TPURT_F32, xs->rank, xs->dims, NULL, 0, &e->buf[nb - 1]) ==
                 TPURT_OK ||
         rt_fail(e, "device buffer", err, errlen);
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
  if (strcmp(target, "interp") == 0) {
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
  return tpurt_buffer_read(e->buf[k], data, (size_t)e->state_bytes[k]) == TPURT_OK ||
         rt_fail(e, "reading back state", err, errlen);
}

bool train_engine_write(train_engine *e, int k, const void *data, char *err, size_t errlen) {
  if (e->lit) {
    memcpy(e->lit[k]->data, data, (size_t)e->state_bytes[k]);
    return true;
  }
  return tpurt_buffer_write(e->buf[k], data, (size_t)e->state_bytes[k]) == TPURT_OK ||
         rt_fail(e, "writing state", err, errlen);
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

bool train_engine_step(train_engine *e, const float *x, const int32_t *y, double *loss,
                       double *device_seconds, char *err, size_t errlen) {
  *device_seconds = 0;
  if (e->lit) return interp_step(e, x, y, loss, err, errlen);
  size_t xb = (size_t)(e->tm->batch * e->tm->example_elems) * sizeof(float);
  if (tpurt_buffer_write(e->buf[x_slot(e)], x, xb) != TPURT_OK ||
      tpurt_buffer_write(e->buf[y_slot(e)], y, (size_t)e->tm->batch * sizeof(int32_t)) != TPURT_OK)
    return rt_fail(e, "batch", err, errlen);
  int nr = e->nstate + 1;
  tpurt_buffer_t *res[1 + 4096] = {0};
  if (nr > 4096) {
    snprintf(err, errlen, "too many state tensors (%d)", nr);
    return false;
  }
  tpurt_stats_t st;
  if (tpurt_program_execute_donated(e->step, e->buf, (size_t)e->nstate + 2, res, (size_t)nr, &st))
    return rt_fail(e, "training step", err, errlen);
  float l = 0;
  tpurt_status_t s = tpurt_buffer_read(res[0], &l, sizeof l);
  tpurt_buffer_destroy(res[0]);
  if (s != TPURT_OK) return rt_fail(e, "reading the loss", err, errlen);
  *loss = l;
  *device_seconds = strcmp(tpurt_device_platform(e->dev), "tpu") == 0 ? st.seconds : 0;
  return true;
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
  tpurt_buffer_t *xbuf = e->buf[e->nstate + 2], *args[256], *out = NULL;
  if (tpurt_buffer_write(xbuf, x, xb) != TPURT_OK) return rt_fail(e, "evaluation batch", err, errlen);
  for (int k = 0; k < tm->eval_n && k < 256; k++)
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
  for (int k = 0; e->buf && k < e->nstate + 3; k++) tpurt_buffer_destroy(e->buf[k]);
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
