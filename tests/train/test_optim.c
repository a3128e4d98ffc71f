/* test_optim.c: the optimizer library (lib/train/optim.tg) as tpucc train
 * instantiates it: the update graph for two parameters of different
 * shapes, run step after step on the reference evaluator, against the
 * same updates written out by hand in double from PyTorch's torch.optim
 * formulas (SGD with and without L2 decay, momentum, Nesterov, Adam, AdamW,
 * clipping by global norm, the step, cosine and warm-up schedules); and
 * the model templates BATCH, GLOBAL_BATCH and COMPUTE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "driver/driver.h"
#include "tools/train.h"

enum { N0 = 5, N1 = 6, STEPS = 4 };

typedef struct ref_state {
  double w[N0 + N1], s[2][N0 + N1];
} ref_state;

static double grad_at(int step, int i) { return sin(1.7 * i + 0.9 * step) * (1 + 0.3 * i); }

static double lr_at(const train_hparams *h, int step) {
  double lr = h->lr;
  if (h->sched == TRAIN_STEP) lr *= pow(h->step_gamma, floor(step / h->step_every));
  if (h->sched == TRAIN_COSINE)
    lr *= 0.5 * (1 + cos(M_PI * fmin(step, h->total_steps) / h->total_steps));
  if (h->warmup_steps > 0) lr *= fmin((step + 1) / h->warmup_steps, 1);
  return lr;
}

/* One step of the hand-written reference on every element. */
static void ref_step(const train_hparams *h, ref_state *r, int step) {
  double g[N0 + N1], sq = 0, lr = lr_at(h, step);
  for (int i = 0; i < N0 + N1; i++) {
    g[i] = grad_at(step, i);
    sq += g[i] * g[i];
  }
  double c = h->clip_norm > 0 ? fmin(h->clip_norm / (sqrt(sq) + 1e-6), 1) : 1;
  for (int i = 0; i < N0 + N1; i++) {
    double gi = g[i] * c, *w = &r->w[i], *m = &r->s[0][i], *v = &r->s[1][i];
    if (h->weight_decay > 0 && h->opt != TRAIN_ADAMW) gi += h->weight_decay * *w;
    if (h->opt == TRAIN_SGD) {
      *w -= lr * gi;
    } else if (h->opt == TRAIN_MOMENTUM || h->opt == TRAIN_NESTEROV) {
      *m = h->momentum * *m + gi;
      *w -= lr * (h->opt == TRAIN_NESTEROV ? gi + h->momentum * *m : *m);
    } else {
      if (h->opt == TRAIN_ADAMW) *w *= 1 - lr * h->weight_decay;
      int t = step + 1;
      *m = h->beta1 * *m + (1 - h->beta1) * gi;
      *v = h->beta2 * *v + (1 - h->beta2) * gi * gi;
      *w -= lr / (1 - pow(h->beta1, t)) * (*m / (sqrt(*v) / sqrt(1 - pow(h->beta2, t)) + h->eps));
    }
  }
}

/* Runs STEPS steps of the library's update on the evaluator and compares
 * every weight and state element with the reference after each; with
 * dump, prints the weights after each step instead (for optim_torch.py). */
static void run(const train_hparams *h, FILE *dump) {
  ir_shape s0 = ir_shape_array(IR_F32, 1, (int64_t[]){N0});
  ir_shape s1 = ir_shape_array(IR_F32, 2, (int64_t[]){2, 3});
  const ir_shape *shapes[2] = {&s0, &s1};
  char *text = train_update_text(h, 2, shapes);
  diag *d = diag_create();
  ir_module *m = NULL;
  drv_parse("optim.tg", text, strlen(text), TPUCC_LANGUAGE_TG, "apply", d, &m);
  if (!m) fprintf(stderr, "%s\n%s", diag_text(d), text);
  assert_non_null(m);
  int ns = train_state_per_param(h->opt), np = 4 + 2 * ns + 1;
  assert_int_equal(m->comps.v[m->entry].nparams, np);
  arena *a = arena_create();
  ir_literal *arg[16];
  for (int k = 0; k < np; k++) {
    const ir_comp *e = &m->comps.v[m->entry];
    arg[k] = ir_literal_create(a, e->insts.v[e->params[k]].shape);
  }
  ref_state r;
  memset(&r, 0, sizeof r);
  for (int i = 0; i < N0 + N1; i++) r.w[i] = 0.1 * i - 0.4;
  for (int i = 0; i < N0 + N1; i++) ir_literal_set_f64(arg[i < N0 ? 0 : 1], i < N0 ? i : i - N0, r.w[i]);
  for (int step = 0; step < STEPS; step++) {
    for (int i = 0; i < N0 + N1; i++)
      ir_literal_set_f64(arg[i < N0 ? 2 : 3], i < N0 ? i : i - N0, (float)grad_at(step, i));
    ir_literal_set_f64(arg[np - 1], 0, step);
    ir_eval_options eo;
    ir_eval_options_init(&eo);
    ir_literal *out;
    char err[256];
    assert_int_equal(ir_eval(m, &eo, arg, np, a, &out, err, sizeof err), ST_OK);
    ref_step(h, &r, step);
    for (int k = 0; k < 2 + 2 * ns; k++) { /* new weights and state become the next inputs */
      int slot = k < 2 ? k : 4 + (k - 2);
      memcpy(arg[slot]->data, out->elems[k]->data, arg[slot]->nbytes);
    }
    assert_true(ir_literal_get_f64(out->elems[np - 3], 0) == step + 1);
    for (int i = 0; dump && i < N0 + N1; i++)
      fprintf(dump, "%.9g%c", ir_literal_get_f64(arg[i < N0 ? 0 : 1], i < N0 ? i : i - N0),
              i + 1 < N0 + N1 ? ' ' : '\n');
    for (int i = 0; !dump && i < N0 + N1; i++) {
      int p = i < N0 ? 0 : 1, j = i < N0 ? i : i - N0;
      double got = ir_literal_get_f64(arg[p], j);
      if (fabs(got - r.w[i]) > 2e-6 * fabs(r.w[i]) + 2e-7)
        fail_msg("%s step %d w[%d]: %.9g, reference %.9g", train_opt_name(h->opt), step, i, got,
                 r.w[i]);
      for (int q = 0; q < ns; q++) {
        double st = ir_literal_get_f64(arg[4 + p * ns + q], j);
        if (fabs(st - r.s[q][i]) > 2e-6 * fabs(r.s[q][i]) + 1e-9)
          fail_msg("%s step %d state %d[%d]: %.9g, reference %.9g", train_opt_name(h->opt), step,
                   q, i, st, r.s[q][i]);
      }
    }
  }
  arena_destroy(a);
  ir_module_destroy(m);
  diag_destroy(d);
  free(text);
}

static void check(const train_hparams *h) { run(h, NULL); }

static train_hparams opt(train_opt_kind k, double lr) {
  train_hparams h;
  train_hparams_init(&h);
  h.opt = k;
  h.lr = lr;
  return h;
}

static void sgd_steps(void **state) {
  (void)state;
  train_hparams h = opt(TRAIN_SGD, 0.1);
  check(&h);
  h.weight_decay = 0.01;
  check(&h);
  h.sched = TRAIN_STEP;
  h.step_every = 2;
  h.step_gamma = 0.5;
  check(&h);
}

static void momentum_steps(void **state) {
  (void)state;
  train_hparams h = opt(TRAIN_MOMENTUM, 0.05);
  check(&h);
  h.opt = TRAIN_NESTEROV;
  h.weight_decay = 0.02;
  check(&h);
}

static void adam_steps(void **state) {
  (void)state;
  train_hparams h = opt(TRAIN_ADAM, 0.01);
  check(&h);
  h.opt = TRAIN_ADAMW;
  h.weight_decay = 0.1;
  check(&h);
}

/* Clipping active (the gradients' norm is about 4), with cosine decay
 * and warm-up. */
static void clip_and_schedules(void **state) {
  (void)state;
  train_hparams h = opt(TRAIN_ADAM, 0.02);
  h.clip_norm = 0.5;
  h.sched = TRAIN_COSINE;
  h.total_steps = 3;
  h.warmup_steps = 2;
  check(&h);
  h = opt(TRAIN_SGD, 0.3);
  h.clip_norm = 1;
  check(&h);
}

static void templates_keep_columns(void **state) {
  (void)state;
  char t[] = "x: f32[BATCH,784] cast(x, COMPUTE) BATCHES MY_BATCH / GLOBAL_BATCH;";
  assert_true(train_template(t, strlen(t), 128, 1024, "bf16"));
  assert_string_equal(t, "x: f32[  128,784] cast(x, bf16   ) BATCHES MY_BATCH /         1024;");
  char u[] = "[BATCH]";
  assert_false(train_template(u, strlen(u), 123456, 123456, "f32"));
}

/* test_train_optim --dump OPT LR WEIGHT_DECAY CLIP_NORM: the weights after
 * each step, one line per step (the gradients are grad_at's). */
static int dump_main(char **argv) {
  train_hparams h;
  train_hparams_init(&h);
  if (!train_opt_parse(argv[2], &h.opt)) return 2;
  h.lr = atof(argv[3]);
  h.weight_decay = atof(argv[4]);
  h.clip_norm = atof(argv[5]);
  run(&h, stdout);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 6 && strcmp(argv[1], "--dump") == 0) return dump_main(argv);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sgd_steps),          cmocka_unit_test(momentum_steps),
      cmocka_unit_test(adam_steps),         cmocka_unit_test(clip_and_schedules),
      cmocka_unit_test(templates_keep_columns),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
