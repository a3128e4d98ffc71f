/* train_run.c: the training run of `tpucc train` (docs/training.md): the
 * data sets, initial weights or a checkpoint, the epochs of steps, the
 * evaluation after each, checkpoints, and the final report. */
#include "tools/tools.h"
#include "tools/train.h"
#include "driver/driver.h"
#include "tools/mpi_run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tpurt_data.h"

#define FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

static double clock_seconds(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now(void) { return clock_seconds(CLOCK_MONOTONIC); }

/* ---- data ------------------------------------------------------------------- */

/* dir/name or dir/name.gz, whichever exists (the .gz first). */
static void idx_path(char *out, size_t n, const char *dir, const char *name) {
  snprintf(out, n, "%s/%s.gz", dir, name);
  if (access(out, R_OK) == 0) return;
  snprintf(out, n, "%s/%s", dir, name);
}

/* Opens the training (test false) or test set named by --data. */
static bool open_set(const char *data, bool test, tpurt_dataset_t **out, char *err, size_t errlen) {
  tpurt_data_options_t o;
  tpurt_data_options_init(&o);
  char img[4096], lab[4096];
  const char *dir = strcmp(data, "fashion-mnist") == 0 ? FASHION_MNIST_DIR : data;
  size_t dl = strlen(data);
  if (dl > 4 && strcmp(data + dl - 4, ".npz") == 0) {
    o.images = data;
    o.images_key = test ? "x_test" : "x_train";
    o.labels_key = test ? "y_test" : "y_train";
  } else {
    if (access(dir, R_OK) != 0) {
      snprintf(err, errlen, "--data=%s: no such directory%s", data,
               dir == data ? "" : " (install Debian's dataset-fashion-mnist, or pass --data=DIR)");
      return false;
    }
    idx_path(img, sizeof img, dir, test ? "t10k-images-idx3-ubyte" : "train-images-idx3-ubyte");
    idx_path(lab, sizeof lab, dir, test ? "t10k-labels-idx1-ubyte" : "train-labels-idx1-ubyte");
    o.images = img;
    o.labels = lab;
  }
  tpurt_data_status_t st = tpurt_dataset_open(&o, out);
  if (st != TPURT_DATA_OK) {
    snprintf(err, errlen, "%s", *out ? tpurt_dataset_message(*out) : "cannot open the data set");
    tpurt_dataset_destroy(*out);
    *out = NULL;
    return false;
  }
  return true;
}

/* ---- state: initial values and checkpoints ------------------------------------ */

/* SplitMix64's output for state x (tool_random_next's step). */
static uint64_t mix(uint64_t x) { return tool_random_next(&x); }

/* Glorot-uniform weights (rank >= 2: limit sqrt(6 / (fan_in + fan_out)),
 * fan_in = receptive field x dims[r-2], fan_out = receptive x dims[r-1]),
 * zero biases (rank < 2), zero optimizer state and step counter. Element
 * i of trainable k is (2u - 1) limit, u the top 24 bits of
 * mix(seed ^ mix(k) ^ mix(mix(i))) / 2^24. */
static bool init_state(train_engine *e, const train_model *tm, uint64_t seed, char *err,
                       size_t errlen) {
  int ns = train_engine_nstate(e);
  for (int k = 0; k < ns; k++) {
    int64_t bytes = train_engine_state_bytes(e, k);
    float *v = calloc((size_t)bytes + 4, 1);
    if (!v) base_out_of_memory(0);
    const ir_shape *s = k < tm->nw ? tm->shapes[k] : NULL;
    if (s && s->rank >= 2) {
      double rf = 1;
      for (int d = 0; d < s->rank - 2; d++) rf *= (double)s->dims[d];
      double limit = sqrt(6.0 / (rf * (double)s->dims[s->rank - 2] + rf * (double)s->dims[s->rank - 1]));
      for (int64_t i = 0; i < bytes / 4; i++) {
        uint64_t r = mix(seed ^ mix((uint64_t)k) ^ mix(mix((uint64_t)i)));
        double u = (double)(r >> 40) / 16777216.0;
        v[i] = (float)((2 * u - 1) * limit);
      }
    }
    bool ok = train_engine_write(e, k, v, err, errlen);
    free(v);
    if (!ok) return false;
  }
  return true;
}

/* The name of state tensor k in a checkpoint: the trainable's name,
 * "NAME/STATE" for optimizer state, "step" for the counter. */
static void state_name(const train_model *tm, const train_options *o, int k, char *out, size_t n) {
  int per = train_state_per_param(o->h.opt);
  if (k < tm->nw)
    snprintf(out, n, "%s", tm->names[k]);
  else if (k < tm->nw * (1 + per))
    snprintf(out, n, "%s/%s", tm->names[(k - tm->nw) / per],
             train_state_name(o->h.opt, (k - tm->nw) % per));
  else
    snprintf(out, n, "step");
}

/* Writes every state tensor and the epochs done to path (.npz, through a
 * temporary file renamed into place). */
static bool save_checkpoint(train_engine *e, const train_model *tm, const train_options *o,
                            int epochs_done, char *err, size_t errlen) {
  int ns = train_engine_nstate(e);
  arena *a = arena_create();
  ir_named_literal *v = arena_alloc(a, sizeof *v * (size_t)(ns + 1));
  bool ok = true;
  for (int k = 0; k < ns && ok; k++) {
    char name[256];
    state_name(tm, o, k, name, sizeof name);
    const ir_shape *s = k < tm->nw ? tm->shapes[k] : NULL;
    ir_shape sh = s ? *s : ir_shape_scalar(IR_F32);
    if (!s && k < ns - 1) sh = *tm->shapes[(k - tm->nw) / train_state_per_param(o->h.opt)];
    v[k].name = arena_strndup(a, name, strlen(name));
    v[k].lit = ir_literal_create(a, &sh);
    ok = train_engine_read(e, k, v[k].lit->data, err, errlen);
  }
  ir_shape es = ir_shape_scalar(IR_S32);
  v[ns].name = "epoch";
  v[ns].lit = ir_literal_create(a, &es);
  ir_literal_set_i64(v[ns].lit, 0, epochs_done);
  strbuf b;
  sb_init(&b);
  if (ok) ok = ir_npz_encode(&b, v, ns + 1, err, errlen) == ST_OK;
  if (ok) ok = ir_file_write(o->checkpoint, b.s, b.len, err, errlen) == ST_OK;
  sb_free(&b);
  arena_destroy(a);
  return ok;
}

/* Loads a checkpoint; *epochs_done from it. */
static bool load_checkpoint(train_engine *e, const train_model *tm, const train_options *o,
                            int *epochs_done, char *err, size_t errlen) {
  char *data;
  size_t len;
  if (ir_file_read(o->resume, IR_TENSOR_MAX_FILE, &data, &len, err, errlen) != ST_OK) return false;
  arena *a = arena_create();
  ir_named_literal *v;
  int n;
  bool ok = ir_npz_decode(a, o->resume, data, len, NULL, NULL, &v, &n, err, errlen) == ST_OK;
  int ns = train_engine_nstate(e);
  *epochs_done = -1;
  for (int k = 0; k <= ns && ok; k++) {
    char name[256];
    if (k < ns)
      state_name(tm, o, k, name, sizeof name);
    else
      snprintf(name, sizeof name, "epoch");
    int j = 0;
    while (j < n && strcmp(v[j].name, name) != 0) j++;
    if (j == n) {
      snprintf(err, errlen, "%s: no array '%s' (a checkpoint of this model with --optimizer=%s?)",
               o->resume, name, train_opt_name(o->h.opt));
      ok = false;
    } else if (k == ns) {
      *epochs_done = (int)ir_literal_get_f64(v[j].lit, 0);
    } else if ((int64_t)v[j].lit->nbytes != train_engine_state_bytes(e, k) ||
               v[j].lit->shape.type != IR_F32) {
      snprintf(err, errlen, "%s: array '%s' has another shape or type than the model's", o->resume,
               name);
      ok = false;
    } else {
      ok = train_engine_write(e, k, v[j].lit->data, err, errlen);
    }
  }
  arena_destroy(a);
  free(data);
  return ok;
}

/* ---- epochs ------------------------------------------------------------------ */

typedef struct run_ctx {
  const train_options *o;
  const train_model *tm;
  train_engine *e;
  tpurt_dataset_t *train, *test;
  float *xpad;    /* one padded batch for evaluation */
  float *logits;  /* batch x classes */
  float *group_x;   /* --steps-per-execution=k > 1: k batches stacked */
  int32_t *group_y;
  long step;      /* steps done in this run, for messages */
  long global_step; /* steps done since the start (checkpoint included) */
  double last_finite;
  bool tty;
  FILE *loss_log; /* --loss-log, or NULL */
  /* under mpirun with a TPU board or pod, a rank other than 0: it opens no
   * data set (rank 0's batches reach its cores, train_engine_step), only
   * the sets' sizes come from rank 0 */
  bool follower;
  size_t ntrain, ntest; /* the data sets' examples */
} run_ctx;

/* A follower's part of evaluate: the evaluation on its cores, as many
 * batches as rank 0 evaluates, without data or results. */
static bool evaluate_follower(run_ctx *x, char *err, size_t errlen) {
  size_t n = x->ntest, gb = (size_t)x->tm->global_batch;
  if (x->o->test_examples > 0 && (size_t)x->o->test_examples < n) n = (size_t)x->o->test_examples;
  bool ok = true;
  for (size_t i = 0; ok && i < (n + gb - 1) / gb; i++) ok = train_engine_logits(x->e, NULL, NULL, err, errlen);
  return ok;
}

/* Evaluates the test set: mean loss, and the confusion matrix into c
 * (a follower: nothing but its cores' part, evaluate_follower). */
static bool evaluate(run_ctx *x, double *test_loss, train_confusion *c, char *err, size_t errlen) {
  const train_model *tm = x->tm;
  *test_loss = 0;
  if (x->follower) return evaluate_follower(x, err, errlen);
  tpurt_loader_options_t lo;
  tpurt_loader_options_init(&lo);
  lo.batch = (size_t)tm->global_batch;
  lo.shuffle = 0;
  lo.prefetch = 2;
  tpurt_loader_t *ld;
  if (tpurt_loader_create(x->test, &lo, &ld) != TPURT_DATA_OK) {
    snprintf(err, errlen, "test set: %s", tpurt_dataset_message(x->test));
    return false;
  }
  memset(c->counts, 0, sizeof(int64_t) * (size_t)c->classes * (size_t)c->classes);
  double loss = 0;
  long seen = 0, limit = x->o->test_examples;
  tpurt_batch_t b;
  bool ok = true;
  while (ok && (limit == 0 || seen < limit) && tpurt_loader_next(ld, &b) == TPURT_DATA_OK) {
    size_t rows = b.count;
    if (limit && (long)rows > limit - seen) rows = (size_t)(limit - seen);
    memset(x->xpad, 0, sizeof(float) * (size_t)(tm->global_batch * tm->example_elems));
    memcpy(x->xpad, b.images, sizeof(float) * rows * b.elems);
    ok = train_engine_logits(x->e, x->xpad, x->logits, err, errlen);
    for (size_t r = 0; ok && r < rows; r++) {
      const float *z = x->logits + r * (size_t)tm->classes;
      int best = 0;
      double mx = z[0], s = 0;
      for (int j = 1; j < tm->classes; j++)
        if (z[j] > z[best]) best = j, mx = z[j];
      for (int j = 0; j < tm->classes; j++) s += exp((double)z[j] - mx);
      int y = b.labels[r];
      loss += log(s) + mx - (y >= 0 && y < tm->classes ? (double)z[y] : 0);
      if (y >= 0 && y < tm->classes) c->counts[(size_t)y * (size_t)tm->classes + (size_t)best]++;
    }
    seen += (long)rows;
  }
  tpurt_loader_destroy(ld);
  *test_loss = seen ? loss / (double)seen : 0;
  return ok;
}

static void progress(run_ctx *x, int epoch, long s, long steps, double t0, double loss) {
  if (!x->tty) return;
  double dt = now() - t0;
  fprintf(stderr, "\r\033[Kepoch %d/%d  step %ld/%ld  %.0f images/s  loss %.4f", epoch + 1,
          x->o->epochs, s, steps, dt > 0 ? (double)s * (double)x->tm->global_batch / dt : 0, loss);
  fflush(stderr);
}

/* The bookkeeping after step s (0-based, of the epoch) gave loss: the
 * NaN stop, --loss-log, the sum for the epoch's mean, the progress line.
 * Returns 0, or a tool exit status after printing the error. */
static int account_step(run_ctx *x, int epoch, long s, long steps, double t0, double loss,
                        double *sum) {
  x->global_step++;
  if (!isfinite(loss)) {
    if (x->tty) fputc('\n', stderr);
    char last[128] = "no earlier step";
    if (x->global_step > 1)
      snprintf(last, sizeof last, "the last finite loss was %.6g at step %ld", x->last_finite,
               x->global_step - 1);
    tool_error("tpucc train",
               "the loss is %s at step %ld (epoch %d, batch %ld); %s: lower --lr or clip with "
               "--clip-norm",
               isnan(loss) ? "NaN" : "infinite", x->global_step, epoch + 1, s + 1, last);
    return TOOL_EXIT_FAIL;
  }
  x->last_finite = loss;
  if (x->loss_log) fprintf(x->loss_log, "%.9g\n", loss);
  *sum += loss;
  if ((s & 15) == 15) progress(x, epoch, s + 1, steps, t0, *sum / (double)(s + 1));
  return 0;
}

/* Up to k batches of the loader stacked into x->group_x, x->group_y; the
 * number taken (fewer at the end of the data). */
static int take_group(run_ctx *x, tpurt_loader_t *ld, int k) {
  size_t gx = (size_t)(x->tm->global_batch * x->tm->example_elems), gy = (size_t)x->tm->global_batch;
  tpurt_batch_t b;
  int n = 0;
  for (; n < k && tpurt_loader_next(ld, &b) == TPURT_DATA_OK; n++) {
    memcpy(x->group_x + (size_t)n * gx, b.images, sizeof(float) * gx);
    memcpy(x->group_y + (size_t)n * gy, b.labels, sizeof(int32_t) * gy);
  }
  return n;
}

/* The steps of an epoch in groups of k = --steps-per-execution (k > 1):
 * each full group in one execution of the loop program, a shorter last
 * group (the epoch's steps not a multiple of k) in single steps. */
static int grouped_steps(run_ctx *x, tpurt_loader_t *ld, int epoch, long steps, double t0,
                         double *sum, double *dev, long *done) {
  int k = x->tm->k, rc = 0;
  size_t gx = (size_t)(x->tm->global_batch * x->tm->example_elems), gy = (size_t)x->tm->global_batch;
  double losses[TRAIN_MAX_STEPS_PER_EXECUTION];
  char err[2048];
  long s = 0;
  while (s < steps && rc == 0) {
    int want = steps - s >= k ? k : (int)(steps - s), n = take_group(x, ld, want);
    if (n == 0) break;
    double ds = 0;
    bool ok = true;
    if (n == k) {
      ok = train_engine_steps(x->e, x->group_x, x->group_y, losses, &ds, err, sizeof err);
      *dev += ds;
    }
    for (int j = 0; ok && n < k && j < n; j++) {
      ok = train_engine_step(x->e, x->group_x + (size_t)j * gx, x->group_y + (size_t)j * gy,
                             &losses[j], &ds, err, sizeof err);
      *dev += ds;
    }
    if (!ok) {
      tool_error("tpucc train", "steps %ld-%ld: %s", x->global_step + 1, x->global_step + n, err);
      return TOOL_EXIT_FAIL;
    }
    for (int j = 0; j < n && rc == 0; j++) rc = account_step(x, epoch, s + j, steps, t0, losses[j], sum);
    s += n;
    if (n < want) break;
  }
  *done = s;
  return rc;
}

/* One epoch of steps; ep gets the train loss and timings. Returns 0, or a
 * tool exit status after printing the error. */
static int train_epoch_run(run_ctx *x, int epoch, train_epoch *ep) {
  const train_options *o = x->o;
  char err[2048];
  tpurt_loader_options_t lo;
  tpurt_loader_options_init(&lo);
  lo.batch = (size_t)x->tm->global_batch;
  lo.drop_remainder = 1;
  lo.seed = o->seed ^ mix((uint64_t)epoch);
  lo.prefetch = 4;
  tpurt_loader_t *ld = NULL;
  if (!x->follower && tpurt_loader_create(x->train, &lo, &ld) != TPURT_DATA_OK) {
    tool_error("tpucc train", "training set: %s", tpurt_dataset_message(x->train));
    return TOOL_EXIT_FAIL;
  }
  /* a follower steps as often as rank 0's loader gives whole batches */
  long steps = x->follower ? (long)(x->ntrain / (size_t)x->tm->global_batch)
                           : (long)tpurt_loader_batches_per_epoch(ld);
  if (o->steps_per_epoch && o->steps_per_epoch < steps) steps = o->steps_per_epoch;
  double t0 = now(), c0 = clock_seconds(CLOCK_PROCESS_CPUTIME_ID), sum = 0, dev = 0, m0, p0, m1, p1;
  train_engine_mxu(x->e, &m0, &p0);
  tpurt_batch_t b;
  int rc = 0;
  long s = 0;
  if (x->tm->k > 1) rc = grouped_steps(x, ld, epoch, steps, t0, &sum, &dev, &s);
  for (; x->tm->k == 1 && s < steps && (x->follower || tpurt_loader_next(ld, &b) == TPURT_DATA_OK); s++) {
    double loss, ds;
    if (!train_engine_step(x->e, x->follower ? NULL : b.images, x->follower ? NULL : b.labels, &loss,
                           &ds, err, sizeof err)) {
      tool_error("tpucc train", "step %ld: %s", x->global_step + 1, err);
      rc = TOOL_EXIT_FAIL;
      break;
    }
    dev += ds;
    rc = account_step(x, epoch, s, steps, t0, loss, &sum);
    if (rc) break;
  }
  if (ld) tpurt_loader_destroy(ld);
  if (x->tty) fputs("\r\033[K", stderr);
  ep->seconds = now() - t0;
  ep->cpu_seconds = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
  ep->train_loss = s ? sum / (double)s : 0;
  ep->images_per_second = ep->seconds > 0 ? (double)s * (double)x->tm->global_batch / ep->seconds : 0;
  ep->device_seconds = dev;
  train_engine_mxu(x->e, &m1, &p1);
  ep->mxu_utilization = p1 > p0 ? (m1 - m0) / (p1 - p0) : 0;
  return rc;
}

static void print_epoch(const run_ctx *x, int epoch, const train_epoch *ep) {
  printf("epoch %d/%d  train loss %.4f  test loss %.4f  test accuracy %.4f  macro-F1 %.4f  "
         "%.0f images/s  %.1f s",
         epoch + 1, x->o->epochs, ep->train_loss, ep->test_loss, ep->test_accuracy, ep->macro_f1,
         ep->images_per_second, ep->seconds);
  if (ep->device_seconds > 0) printf("  device %.4f s (modelled)", ep->device_seconds);
  putchar('\n');
  fflush(stdout);
}

/* Under mpirun with a TPU board or pod (pod): rank 0's exit code so far
 * and its data sets' sizes to every rank; elsewhere the sets' sizes. False
 * when the run stops (rank 0 printed why, or a rank did not answer: this
 * rank prints it). */
static bool share_sets(run_ctx *x, bool pod, int code) {
  uint64_t m[3] = {(uint64_t)code, x->train ? tpurt_dataset_count(x->train) : 0,
                   x->test ? tpurt_dataset_count(x->test) : 0};
  char err[512];
  void *p = m;
  size_t n = sizeof m;
  if (pod && !tool_mpi_bcast(&p, &n, err, sizeof err)) {
    tool_error("tpucc train", "rank %d: %s", tool_mpi_rank(), err);
    return false;
  }
  if (p != m) {
    if (n == sizeof m) memcpy(m, p, sizeof m);
    else m[0] = TOOL_EXIT_FAIL;
    free(p);
  }
  x->ntrain = (size_t)m[1];
  x->ntest = (size_t)m[2];
  return m[0] == TOOL_EXIT_OK && code == TOOL_EXIT_OK;
}

/* The steps of an epoch: every full batch, or --steps-per-epoch. */
static long steps_per_epoch(const run_ctx *x) {
  long per = (long)(x->ntrain / (size_t)x->tm->global_batch);
  return x->o->steps_per_epoch && x->o->steps_per_epoch < per ? x->o->steps_per_epoch : per;
}

/* Checks the data sets against the model. */
static bool check_data(run_ctx *x, char *err, size_t errlen) {
  size_t elems = tpurt_dataset_example_elems(x->train);
  if ((int64_t)elems != x->tm->example_elems) {
    snprintf(err, errlen,
             "--data=%s: examples have %zu elements, the model's x takes %lld per example",
             x->o->data, elems, (long long)x->tm->example_elems);
    return false;
  }
  if (tpurt_dataset_count(x->train) < (size_t)x->tm->global_batch) {
    snprintf(err, errlen, "--data=%s: %zu training examples, fewer than one batch of %lld",
             x->o->data, tpurt_dataset_count(x->train), (long long)x->tm->global_batch);
    return false;
  }
  return true;
}

/* Epochs from `first`; the report at the end. */
static int run_epochs(run_ctx *x, int first, double compile_seconds) {
  const train_options *o = x->o;
  char err[2048];
  int classes = x->tm->classes, nep = 0;
  train_epoch *eps = calloc((size_t)o->epochs + 1, sizeof *eps);
  train_confusion c = {classes, calloc((size_t)classes * (size_t)classes + 1, sizeof(int64_t))};
  if (!eps || !c.counts) base_out_of_memory(0);
  double t_train = 0, images = 0;
  int rc = 0;
  for (int epoch = first; epoch < o->epochs && rc == 0; epoch++) {
    train_epoch *ep = &eps[nep];
    rc = train_epoch_run(x, epoch, ep);
    if (rc) break;
    t_train += ep->seconds;
    images += ep->images_per_second * ep->seconds;
    if (!evaluate(x, &ep->test_loss, &c, err, sizeof err)) {
      tool_error("tpucc train", "%s", err);
      rc = TOOL_EXIT_FAIL;
      break;
    }
    ep->test_accuracy = train_accuracy(&c);
    ep->macro_f1 = train_macro_f1(&c, NULL);
    nep++;
    print_epoch(x, epoch, ep);
    if (o->checkpoint && !save_checkpoint(x->e, x->tm, o, epoch + 1, err, sizeof err)) {
      tool_error("tpucc train", "checkpoint: %s", err);
      rc = TOOL_EXIT_FAIL;
    }
  }
  if (rc == 0 && nep > 0) {
    const train_epoch *last = &eps[nep - 1];
    printf("test accuracy %.4f  macro-F1 %.4f  after %d epochs, %ld steps, %.1f s training "
           "(%.0f images/s), compile %.2f s\n",
           last->test_accuracy, last->macro_f1, o->epochs, x->global_step, t_train,
           t_train > 0 ? images / t_train : 0, compile_seconds);
    if (!o->quiet) train_print_confusion(stdout, &c);
    if (o->metrics_json &&
        !train_write_metrics(o->metrics_json, o, eps, nep, &c, t_train,
                             t_train > 0 ? images / t_train : 0, compile_seconds, x->global_step,
                             err, sizeof err)) {
      tool_error("tpucc train", "%s", err);
      rc = TOOL_EXIT_FAIL;
    }
    if (rc == 0 && o->plot && !train_write_plot(o->plot, o->model, eps, nep, err, sizeof err)) {
      tool_error("tpucc train", "%s", err);
      rc = TOOL_EXIT_FAIL;
    }
  } else if (rc == 0) {
    printf("nothing to do: the checkpoint has %d epochs done, --epochs=%d\n", first, o->epochs);
  }
  free(eps);
  free(c.counts);
  return rc;
}

int train_run(const train_options *o) {
  const char *cmd = "tpucc train";
  char err[8192];
  run_ctx x = {.o = o, .tty = isatty(fileno(stderr)) != 0};
  train_model tm;
  memset(&tm, 0, sizeof tm);
  x.tm = &tm;
  int rc = TOOL_EXIT_FAIL, first = 0;
  double compile_seconds = 0;
  train_options oo = *o; /* with the cosine schedule's length filled in */
  /* under mpirun with a TPU board or pod, rank 0 alone reads the data */
  bool pod = tool_mpi_size() > 1 && !drv_is_cpu_spec(o->target);
  x.follower = pod && tool_mpi_rank() != 0;
  bool sets = x.follower || (open_set(o->data, false, &x.train, err, sizeof err) &&
                             open_set(o->data, true, &x.test, err, sizeof err));
  if (!sets) tool_error(cmd, "%s", err);
  if (!share_sets(&x, pod, sets ? TOOL_EXIT_OK : TOOL_EXIT_FAIL)) goto done;
  if (oo.h.total_steps <= 0) {
    long per = (long)(x.ntrain / (size_t)o->batch);
    if (o->steps_per_epoch && o->steps_per_epoch < per) per = o->steps_per_epoch;
    oo.h.total_steps = (double)per * o->epochs;
  }
  if (o->steps_per_execution > 1 && tool_mpi_size() > 1) {
    tool_error(cmd, "--steps-per-execution=%d: under mpirun each call runs one step (give 1, the "
               "default)", o->steps_per_execution);
    rc = TOOL_EXIT_USAGE;
    goto done;
  }
  if (!train_model_load(&tm, o->model, o->batch, o->replicas, o->steps_per_execution,
                        strcmp(o->precision, "bf16") == 0 ? "bf16" : "f32", &oo.h, err, sizeof err)) {
    if (tm.model_error)
      fprintf(stderr, "%s\n", err);
    else
      tool_error(cmd, "%s", err);
    rc = TOOL_EXIT_USAGE;
    goto done;
  }
  const char *emit = tm.k > 1 ? tm.loop_text : tm.step_text;
  if (o->emit_step && ir_file_write(o->emit_step, emit, strlen(emit), err, sizeof err) != ST_OK) {
    tool_error(cmd, "--emit-step: %s", err);
    goto done;
  }
  x.xpad = calloc((size_t)(tm.global_batch * tm.example_elems) + 1, sizeof(float));
  x.logits = calloc((size_t)tm.global_batch * (size_t)tm.classes + 1, sizeof(float));
  if (!x.xpad || !x.logits) base_out_of_memory(0);
  if (tm.k > 1) {
    x.group_x = malloc(sizeof(float) * (size_t)(tm.k * tm.global_batch * tm.example_elems));
    x.group_y = malloc(sizeof(int32_t) * (size_t)(tm.k * tm.global_batch));
    if (!x.group_x || !x.group_y) base_out_of_memory(0);
  }
  int checked = x.follower || check_data(&x, err, sizeof err) ? TOOL_EXIT_OK : TOOL_EXIT_FAIL;
  if (checked != TOOL_EXIT_OK) tool_error(cmd, "%s", err);
  if (pod && !tool_mpi_agree(&checked, err, sizeof err)) {
    tool_error(cmd, "rank %d: %s", tool_mpi_rank(), err);
  } else if (checked != TOOL_EXIT_OK) {
    /* rank 0 said why */
  } else if (!train_engine_open(&tm, o->target, o->threads, &x.e, &compile_seconds, err,
                                sizeof err)) {
    tool_error(cmd, "%s", err);
  } else if (tm.k > 1 && steps_per_epoch(&x) % tm.k &&
             !train_engine_load_step(x.e, &compile_seconds, err, sizeof err)) {
    tool_error(cmd, "%s", err);
  } else if (o->resume ? !load_checkpoint(x.e, &tm, o, &first, err, sizeof err)
                       : !init_state(x.e, &tm, o->seed, err, sizeof err)) {
    tool_error(cmd, "%s", err);
  } else {
    if (o->resume) {
      float st = 0;
      train_engine_read(x.e, train_engine_nstate(x.e) - 1, &st, err, sizeof err);
      x.global_step = (long)st;
    }
    if (o->checkpoint && ir_file_check_writable(o->checkpoint, err, sizeof err) != ST_OK)
      tool_error(cmd, "--checkpoint: %s", err);
    else if (o->loss_log && !(x.loss_log = fopen(o->loss_log, "w")))
      tool_error(cmd, "--loss-log=%s: cannot write it", o->loss_log);
    else
      rc = run_epochs(&x, first, compile_seconds);
    if (x.loss_log && fclose(x.loss_log) != 0 && rc == 0) {
      tool_error(cmd, "--loss-log=%s: write failed", o->loss_log);
      rc = TOOL_EXIT_FAIL;
    }
  }
done:
  train_engine_close(x.e);
  tpurt_dataset_destroy(x.train);
  tpurt_dataset_destroy(x.test);
  free(x.xpad);
  free(x.logits);
  free(x.group_x);
  free(x.group_y);
  train_model_free(&tm);
  return rc;
}
