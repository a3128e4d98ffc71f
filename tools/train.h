/* train.h: the internals of `tpucc train` (docs/training.md): the training
 * step built as one module (train_step.c), the model file's conventions
 * and the run (cmd_train.c, train_run.c). Prefix train_. Not installed.
 *
 * The step is one compiled program: the model's loss, its value and
 * gradient (passes/grad.h), then the optimizer's update from the library
 * graphs of lib/train/optim.tg, with the parameters, the optimizer state
 * and the step counter donated (input_output_alias), so the runtime keeps
 * them in device buffers from step to step. */
#ifndef TPUCC_TOOLS_TRAIN_H
#define TPUCC_TOOLS_TRAIN_H

#include <stdio.h>

#include "ir/ir.h"

typedef enum train_opt_kind {
  TRAIN_SGD,
  TRAIN_MOMENTUM,
  TRAIN_NESTEROV,
  TRAIN_ADAM,
  TRAIN_ADAMW,
} train_opt_kind;

typedef enum train_sched_kind {
  TRAIN_CONSTANT,
  TRAIN_STEP,   /* lr gamma^floor(step / every) */
  TRAIN_COSINE, /* cosine decay to 0 over total steps */
} train_sched_kind;

/* The optimizer and its hyperparameters (train_hparams_init: Adam's and
 * PyTorch's defaults, constant schedule, no decay, no clipping). */
typedef struct train_hparams {
  train_opt_kind opt;
  double lr, momentum, beta1, beta2, eps;
  double weight_decay; /* L2 for sgd, momentum, adam; decoupled for adamw */
  double clip_norm;    /* > 0: clip gradients to this global norm */
  train_sched_kind sched;
  double step_every, step_gamma; /* TRAIN_STEP: in steps */
  double total_steps;            /* TRAIN_COSINE: the decay length */
  double warmup_steps;           /* > 0: linear warm-up over these steps */
} train_hparams;

void train_hparams_init(train_hparams *h);
/* "sgd", "momentum", "nesterov", "adam", "adamw" -> kind; false if unknown. */
bool train_opt_parse(const char *name, train_opt_kind *out);
const char *train_opt_name(train_opt_kind k);
/* "constant", "step", "cosine" -> kind; false if unknown. */
bool train_sched_parse(const char *name, train_sched_kind *out);
const char *train_sched_name(train_sched_kind k);
/* Tensors of optimizer state per parameter: 0 (sgd), 1 (momentum,
 * nesterov: velocity), 2 (adam, adamw: first and second moments). */
int train_state_per_param(train_opt_kind k);
/* The name of state tensor j of a parameter ("velocity", "m", "v"). */
const char *train_state_name(train_opt_kind k, int j);

/* The optimizer library's text (lib/train/optim.tg, built into tpucc). */
extern const char train_optim_tg[];

/* The update as .tg text: library instances for the n parameter shapes,
 * then graph `apply(w0.., g0.., s0.., step: f32) -> (w0'.., s0'.., f32)`
 * with the state tensors of parameter i at train_state_per_param(h->opt)
 * x i + j and step the number of steps done (0-based). The caller frees
 * the text. */
char *train_update_text(const train_hparams *h, int n, const ir_shape *const *shapes);

/* Composes the step module from vg, the value and gradient of the loss
 * (entry: the loss's parameters -> (loss, grad of each of wrt[0..nwrt))),
 * and upd, the update module (entry `apply` above):
 *
 *   step(w0.., s0.., step: f32[], data params of the loss in order)
 *     -> (loss, w0'.., s0'.., step')
 *
 * with result 1 + k replacing parameter k (input_output_alias in the
 * header). With replicas > 1 the step is one replica's of a data-parallel
 * run (header replica_count): each gradient and the loss are summed over
 * every replica by an all-reduce before the update, so every replica
 * applies the same update (the loss divides by the global batch). *out is
 * a new module; ST_INVALID_ARGUMENT with a message when the shapes do not
 * fit together. */
base_status train_step_compose(const ir_module *vg, const int *wrt, int nwrt,
                               const ir_module *upd, int replicas, ir_module **out, char *err,
                               size_t errlen);

/* Builders the step and the loop share: parameter k of computation c
 * (shape s), get-tuple-element k of t, the shape of parameter k of m's
 * entry. */
ir_id train_param(ir_module *m, ir_comp_id c, int k, const ir_shape *s, const char *name);
ir_id train_gte(ir_module *m, ir_comp_id c, ir_id t, int k);
const ir_shape *train_entry_param_shape(const ir_module *m, int k);

/* Copies the live instructions of src's entry into dst's computation dc,
 * parameter i becoming args[i], and the computations they call (named
 * prefix.NAME); the copy of the root. */
ir_id train_splice_entry(ir_module *dst, ir_comp_id dc, const ir_module *src, const char *prefix,
                         const ir_id *args);

/* Steps per execution (train_loop.c): K trips of the step module (the
 * form train_step_compose writes) as one program,
 *
 *   steps(w0.., s0.., step: f32[], xs, ys) -> (losses: f32[K], w0'.., s0'.., step')
 *
 * xs and ys the step's data parameters with a leading dimension K (K
 * batches stacked). A while loop carries (i, w.., s.., step, xs, ys,
 * losses); its body takes batch i by dynamic-slice, runs the step's
 * computation as it is, and writes the step's loss into losses[i] by
 * dynamic-update-slice. The step's header (donations, replica count)
 * holds unchanged. *out is a new module; ST_INVALID_ARGUMENT with a
 * message when step has another form or k < 1. */
base_status train_loop_compose(const ir_module *step, int k, ir_module **out, char *err,
                               size_t errlen);

/* Replaces the template words of a model file in place: BATCH (each
 * replica's batch, right-aligned in its 5 columns), GLOBAL_BATCH (the
 * global batch, right-aligned in 12) and COMPUTE (the compute type, "f32"
 * or "bf16", padded to 7 columns), so diagnostics keep their columns.
 * False when a number has more digits than its word has columns. */
bool train_template(char *text, size_t len, long batch, long global_batch, const char *compute);

/* ---- the model file (train_model.c) ----------------------------------------- */

enum { TRAIN_ROLE_WEIGHT, TRAIN_ROLE_X, TRAIN_ROLE_LABELS };

/* A model file compiled for one batch and compute type. The loss's
 * parameters are x, labels and the trainables (every other one, f32);
 * the step program's parameters are the nw trainables, their optimizer
 * state, the step counter, then x and labels in the loss's order. */
typedef struct train_model {
  ir_module *loss, *logits;
  int nparams;          /* of graph loss */
  int *role;            /* per loss parameter: TRAIN_ROLE_* */
  int nw, *wrt;         /* trainables: loss parameter numbers */
  const char **names;   /* per trainable (owned by loss) */
  const ir_shape **shapes;
  int x, labels;        /* loss parameter numbers */
  int64_t batch, example_elems; /* batch: each replica's */
  int64_t global_batch;          /* batch x replicas: what each step takes */
  int replicas;                  /* data-parallel replicas of the step */
  int classes;
  int eval_n, *eval_src; /* per logits parameter: trainable index, or -1 for x */
  char *step_text, *eval_text; /* HLO of the step and of graph logits */
  int k;                /* steps per execution (1: the step alone) */
  char *loop_text;      /* k > 1: HLO of k steps in one program (train_loop_compose) */
  bool model_error;     /* the failure was the model's (exit 2), not the run's */
} train_model;

/* Reads, templates, parses and checks the model, and writes its programs,
 * for a global batch split into replicas equal per-replica batches
 * (replicas > 1 needs a loss that divides by GLOBAL_BATCH) and k steps per
 * execution (k > 1: loop_text too). False with a message (located
 * diagnostics for the model's errors). */
bool train_model_load(train_model *tm, const char *path, long batch, int replicas, int k,
                      const char *compute, const train_hparams *h, char *err, size_t errlen);
void train_model_free(train_model *tm);

/* ---- where the programs run (train_engine.c) -------------------------------- */

/* A device (or the evaluator, target "interp") with the model's step and
 * logits programs compiled once and the step's state in its buffers:
 * state k is trainable k (k < nw), then the optimizer state, then the step
 * counter (f32[]), as the step program's parameters. Zeros until written. */
typedef struct train_engine train_engine;
/* Opens the target (threads > 0: --threads for the cpu) and compiles the
 * step program (tm->k > 1: the loop program instead) and graph logits;
 * *out is set even on failure (close it). */
bool train_engine_open(const train_model *tm, const char *target, int threads, train_engine **out,
                       double *compile_seconds, char *err, size_t errlen);
void train_engine_close(train_engine *e); /* accepts NULL */
int train_engine_nstate(const train_engine *e);
int64_t train_engine_state_bytes(const train_engine *e, int k);
bool train_engine_read(train_engine *e, int k, void *data, char *err, size_t errlen);
bool train_engine_write(train_engine *e, int k, const void *data, char *err, size_t errlen);
/* One step on a full batch (x: batch x example_elems floats): updates the
 * state in place and gives the batch's loss and, on TPU devices, the
 * modelled seconds of the step. On a rank other than 0 of a pod shared
 * across MPI ranks, x and y are not read (may be NULL) and the loss is
 * rank 0's; train_engine_logits there runs the evaluation on its cores
 * without reading x or writing logits (both may be NULL). */
bool train_engine_step(train_engine *e, const float *x, const int32_t *y, double *loss,
                       double *device_seconds, char *err, size_t errlen);
/* tm->k steps in one execution of the loop program (k = 1: one step):
 * x and y hold k full batches one after the other, losses gets each
 * step's loss in order, device_seconds the modelled seconds of the call.
 * With k > 1, train_engine_step still runs single steps (a group shorter
 * than k): the step program is compiled the first time it is needed. */
bool train_engine_steps(train_engine *e, const float *x, const int32_t *y, double *losses,
                        double *device_seconds, char *err, size_t errlen);
/* Compiles the step program now if it is not (k > 1: for a group shorter
 * than k), adding its compile time to *compile_seconds. */
bool train_engine_load_step(train_engine *e, double *compile_seconds, char *err, size_t errlen);
/* The logits of a full batch under the current weights. */
bool train_engine_logits(train_engine *e, const float *x, float *logits, char *err, size_t errlen);
/* The MXU multiply-adds of the steps so far and the most the cores could
 * have done in their cycles, summed over the cores (TPU devices; 0
 * elsewhere): their ratio is the steps' MXU utilisation. */
void train_engine_mxu(const train_engine *e, double *macs, double *peak);
/* Executions of the step and loop programs so far (the runtime's metric;
 * a call of k steps counts once; 0 on interp). */
double train_engine_executions(const train_engine *e);

/* ---- the run (train_run.c) ------------------------------------------------- */

enum { TRAIN_MAX_STEPS_PER_EXECUTION = 1024 };

/* What `tpucc train` was asked (cmd_train.c fills it from the model's
 * `// train:` line, then the flags). */
typedef struct train_options {
  const char *model;       /* the .tg file */
  const char *data;        /* "fashion-mnist", a directory, or an .npz */
  const char *target;      /* interp, cpu[,...], v2, v3[,...] */
  const char *precision;   /* "f32" or "bf16" (bf16 compute, f32 master weights) */
  const char *checkpoint;  /* .npz written after each epoch, or NULL */
  const char *resume;      /* .npz to continue from, or NULL */
  const char *metrics_json, *plot;
  const char *emit_step;   /* write the step program's HLO here, or NULL */
  const char *loss_log;    /* each step's loss, one per line, or NULL */
  int epochs, threads;     /* threads 0: the target's default */
  int replicas;            /* data-parallel replicas (1: none) */
  int steps_per_execution; /* steps per device call, 1..TRAIN_MAX_STEPS_PER_EXECUTION */
  long batch;              /* global batch */
  long steps_per_epoch;    /* 0: every full batch of the training set */
  long test_examples;      /* 0: the whole test set */
  uint64_t seed;
  bool quiet;              /* no per-class table and confusion matrix */
  train_hparams h;
} train_options;

void train_options_init(train_options *o);
/* Sets option `name` (as the flag without dashes) to value; returns 1 when
 * it is one of the model file's settings (0 when not, -1 after printing
 * an error about the value). */
int train_option_set(train_options *o, const char *cmd, const char *name, const char *value);
/* Trains as o says, printing progress and results; a tool exit status. */
int train_run(const train_options *o);

/* ---- results (train_report.c) ------------------------------------------------ */

typedef struct train_epoch {
  double train_loss, test_loss, test_accuracy, macro_f1;
  double seconds, images_per_second, device_seconds; /* device: modelled (TPU), else 0 */
  double mxu_utilization; /* TPU: the steps' MXU MACs over the cores' peak, else 0 */
  double cpu_seconds; /* process CPU time of the epoch's steps (every thread) */
} train_epoch;

/* The test set's confusion matrix: counts[true * classes + predicted]. */
typedef struct train_confusion {
  int classes;
  int64_t *counts;
} train_confusion;

/* Accuracy, per-class F1 (f1[classes], may be NULL) and their mean. */
double train_accuracy(const train_confusion *c);
double train_macro_f1(const train_confusion *c, double *f1);
/* Prints the per-class F1 and the confusion matrix. */
void train_print_confusion(FILE *f, const train_confusion *c);
/* Writes the metrics JSON / the SVG of loss and accuracy per epoch;
 * false with a message in err. */
bool train_write_metrics(const char *path, const train_options *o, const train_epoch *ep, int nep,
                         const train_confusion *c, double train_seconds, double images_per_second,
                         double compile_seconds, long steps, char *err, size_t errlen);
bool train_write_plot(const char *path, const char *title, const train_epoch *ep, int nep,
                      char *err, size_t errlen);

#endif
