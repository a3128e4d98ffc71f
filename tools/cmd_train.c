/* cmd_train.c: `tpucc train MODEL.tg`: the options, from the model file's
 * `// train:` lines and then the command line (which wins). The run is
 * train_run.c; the conventions of a model file are docs/training.md. */
#include "tools/tools.h"
#include "tools/train.h"
#include "tools/mpi_run.h"
#include "driver/driver.h" /* cpu specs */

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void tool_help_train(FILE *f) {
  fputs("usage: tpucc train MODEL.tg [options]\n"
        "\n"
        "Trains the model of MODEL.tg (graphs `loss` and `logits`, docs/training.md)\n"
        "on a labelled image data set: one compiled step (loss, its gradient, the\n"
        "optimizer's update) run once per batch with the weights and optimizer state\n"
        "kept in device buffers; the test set is evaluated after each epoch.\n"
        "Defaults come from the model's `// train: key=value ...` lines, then these\n"
        "built-in ones; flags override both.\n"
        "\n"
        "options:\n"
        "  --data=D               fashion-mnist (default; /usr/share/datasets/\n"
        "                         fashion-mnist), a directory holding the four IDX\n"
        "                         files under those names (gzip or not), or an .npz\n"
        "                         with x_train, y_train, x_test, y_test\n"
        "  --epochs=N             epochs (default 1)\n"
        "  --batch=N              global batch (default 32); the model's GLOBAL_BATCH,\n"
        "                         and BATCH is each replica's share\n"
        "  --steps-per-epoch=N    batches per epoch (default: every full batch)\n"
        "  --test-examples=N      evaluate the first N test examples (default all)\n"
        "  --optimizer=O          sgd, momentum, nesterov, adam (default), adamw\n"
        "  --lr=X                 learning rate (default 0.001)\n"
        "  --momentum=X           momentum, nesterov (default 0.9)\n"
        "  --beta1=X --beta2=X --eps=X   adam, adamw (0.9, 0.999, 1e-8)\n"
        "  --weight-decay=X       L2 (sgd, momentum, adam) or decoupled (adamw)\n"
        "  --clip-norm=X          clip gradients to global norm X\n"
        "  --schedule=S           constant (default), step, cosine\n"
        "  --decay-steps=N        cosine: decay over N steps (default: every step of\n"
        "                         the run, --epochs x steps per epoch)\n"
        "  --step-every=N --step-gamma=X  step schedule: lr x gamma every N steps\n"
        "  --warmup=N             linear warm-up over the first N steps\n"
        "  --seed=N               initial weights and data order (default 0)\n"
        "  --target=T             cpu (default; cpu,threads=N,numerics=...), interp,\n"
        "                         v2, v3 (the emulated TPU, overrides as for run)\n"
        "  --threads=N            cpu threads (default: one per online CPU)\n"
        "  --replicas=N           data-parallel replicas (default 1): each takes\n"
        "                         1/N of the global batch, gradients are summed by\n"
        "                         all-reduce; cpu (N host threads) or a TPU board or\n"
        "                         pod of N cores (--target=v3-8 --replicas=8); under\n"
        "                         mpirun -np R: N / R replicas or cores on each\n"
        "                         rank (cpu: default N = R, one per rank), rank 0\n"
        "                         prints and writes every file\n"
        "  --steps-per-execution=K  K training steps per device call (default 1):\n"
        "                         one program runs them as a while loop on K\n"
        "                         stacked batches (1..1024; an epoch's last group of\n"
        "                         fewer than K steps runs step by step)\n"
        "  --precision=P          f32 (default) or bf16: the model's COMPUTE type;\n"
        "                         weights and optimizer state stay f32\n"
        "  --checkpoint=FILE.npz  weights, optimizer state and counters after each\n"
        "                         epoch (written to a temporary file, then renamed)\n"
        "  --resume=FILE.npz      continue from a checkpoint: with the same options\n"
        "                         the result equals an uninterrupted run bit for bit\n"
        "  --metrics-json=FILE    per-epoch records and final figures as JSON\n"
        "  --plot=FILE.svg        loss and accuracy per epoch\n"
        "  --quiet                no per-class F1 and confusion matrix at the end\n"
        "  --emit-step=FILE.hlo   also write the step program (loss, gradients, update,\n"
        "                         donated state) as HLO; with K > 1 steps per\n"
        "                         execution, the program of K steps\n"
        "  --loss-log=FILE        every step's loss, one per line (%.9g)\n"
        "\n"
        "exit status: 0 trained; 1 a run-time error (bad data, NaN loss); 2 usage\n"
        "or model errors.\n",
        f);
}

void train_options_init(train_options *o) {
  memset(o, 0, sizeof *o);
  o->data = "fashion-mnist";
  o->target = "cpu";
  o->precision = "f32";
  o->epochs = 1;
  o->batch = 32;
  o->replicas = 1;
  o->steps_per_execution = 1;
  train_hparams_init(&o->h);
}

static int num(const char *cmd, const char *name, const char *v, double lo, double hi, double *out) {
  if (!tool_parse_double(cmd, name, v, out)) return -1;
  if (!(*out >= lo && *out <= hi)) {
    tool_error(cmd, "--%s=%s: outside %g..%g", name, v, lo, hi);
    return -1;
  }
  return 1;
}

/* The numeric settings: name, field, range. */
static double *num_field(train_options *o, const char *name, double *lo, double *hi) {
  static const struct {
    const char *name;
    size_t off;
    double lo, hi;
  } t[] = {
      {"lr", offsetof(train_hparams, lr), 0, 1e6},
      {"momentum", offsetof(train_hparams, momentum), 0, 1},
      {"beta1", offsetof(train_hparams, beta1), 0, 1},
      {"beta2", offsetof(train_hparams, beta2), 0, 1},
      {"eps", offsetof(train_hparams, eps), 0, 1},
      {"weight-decay", offsetof(train_hparams, weight_decay), 0, 1e6},
      {"clip-norm", offsetof(train_hparams, clip_norm), 0, 1e30},
      {"step-every", offsetof(train_hparams, step_every), 1, 1e12},
      {"step-gamma", offsetof(train_hparams, step_gamma), 0, 1e6},
      {"warmup", offsetof(train_hparams, warmup_steps), 0, 1e12},
      {"decay-steps", offsetof(train_hparams, total_steps), 1, 1e12},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (strcmp(name, t[i].name) == 0) {
      *lo = t[i].lo;
      *hi = t[i].hi;
      return (double *)((char *)&o->h + t[i].off);
    }
  return NULL;
}

int train_option_set(train_options *o, const char *cmd, const char *name, const char *v) {
  double lo, hi, *d = num_field(o, name, &lo, &hi);
  int64_t n;
  if (d) return num(cmd, name, v, lo, hi, d);
  if (strcmp(name, "data") == 0) {
    o->data = v;
  } else if (strcmp(name, "target") == 0) {
    o->target = v;
  } else if (strcmp(name, "precision") == 0) {
    if (strcmp(v, "f32") != 0 && strcmp(v, "bf16") != 0) {
      tool_error(cmd, "--precision=%s: expected f32 or bf16", v);
      return -1;
    }
    o->precision = v;
  } else if (strcmp(name, "optimizer") == 0) {
    if (!train_opt_parse(v, &o->h.opt)) {
      tool_error(cmd, "--optimizer=%s: expected sgd, momentum, nesterov, adam or adamw", v);
      return -1;
    }
  } else if (strcmp(name, "schedule") == 0) {
    if (!train_sched_parse(v, &o->h.sched)) {
      tool_error(cmd, "--schedule=%s: expected constant, step or cosine", v);
      return -1;
    }
  } else if (strcmp(name, "epochs") == 0) {
    if (!tool_parse_int(cmd, name, v, 1, 100000, &n)) return -1;
    o->epochs = (int)n;
  } else if (strcmp(name, "batch") == 0) {
    if (!tool_parse_int(cmd, name, v, 1, 99999, &n)) return -1;
    o->batch = (long)n;
  } else if (strcmp(name, "steps-per-epoch") == 0) {
    if (!tool_parse_int(cmd, name, v, 1, INT32_MAX, &n)) return -1;
    o->steps_per_epoch = (long)n;
  } else if (strcmp(name, "test-examples") == 0) {
    if (!tool_parse_int(cmd, name, v, 1, INT32_MAX, &n)) return -1;
    o->test_examples = (long)n;
  } else if (strcmp(name, "seed") == 0) {
    if (!tool_parse_int(cmd, name, v, 0, INT64_MAX, &n)) return -1;
    o->seed = (uint64_t)n;
  } else if (strcmp(name, "threads") == 0) {
    if (!tool_parse_int(cmd, name, v, 1, 1024, &n)) return -1;
    o->threads = (int)n;
  } else if (strcmp(name, "steps-per-execution") == 0) {
    if (!tool_parse_int(cmd, name, v, 1, TRAIN_MAX_STEPS_PER_EXECUTION, &n)) return -1;
    o->steps_per_execution = (int)n;
  } else if (strcmp(name, "replicas") == 0) {
    if (!tool_parse_int(cmd, name, v, 1, 4096, &n)) return -1;
    o->replicas = (int)n;
  } else {
    return 0;
  }
  return 1;
}

/* Applies the `// train: k=v k=v` lines of the model text. */
static int file_defaults(train_options *o, char *text, const char *path) {
  int line = 1;
  for (char *s = text; *s; line++) {
    char *e = strchr(s, '\n');
    if (e) *e = 0;
    char *t = s;
    while (*t == ' ' || *t == '\t') t++;
    if (strncmp(t, "// train:", 9) == 0) {
      for (char *tok = strtok(t + 9, " \t"); tok; tok = strtok(NULL, " \t")) {
        char *eq = strchr(tok, '=');
        char where[512];
        snprintf(where, sizeof where, "%s:%d: train", path, line);
        if (!eq) {
          tool_error(where, "'%s': expected key=value", tok);
          return -1;
        }
        *eq = 0;
        int r = train_option_set(o, where, tok, eq + 1);
        if (r == 0) tool_error(where, "unknown setting '%s'", tok);
        if (r <= 0) return -1;
      }
    }
    if (!e) break;
    s = e + 1;
  }
  return 0;
}

/* train_run, under mpirun across the ranks (docs/distributed.md, "MPI"):
 * the cpu's N replicas (default, or 1: one per rank), or the N cores of a
 * TPU board or pod (--replicas=N), split N / R per rank, every rank
 * stepping the same global batches in the same order; rank 0 alone prints
 * and writes the checkpoints, logs and reports. */
static int train_ranks(train_options *o, int argc, char **argv) {
  const char *cmd = "tpucc train";
  tool_mpi_hush(false);
  if (!tool_mpi_begin("train", argc, argv, (const char *const[]){o->model, o->resume}, 2))
    return TOOL_EXIT_FAIL;
  int R = tool_mpi_size(), rc = TOOL_EXIT_USAGE;
  tool_mpi_hush(true); /* the usage errors below: every rank finds them, rank 0 prints */
  bool cpu = drv_is_cpu_spec(o->target);
  if (R > 1 && cpu && o->replicas == 1) o->replicas = R;
  if (R > 1 && strcmp(o->target, "interp") == 0) {
    tool_error(cmd, "under mpirun, tpucc train splits the replicas of --target=cpu or the cores of a "
               "TPU board or pod (--target=v3-8 --replicas=8) over the ranks; target interp");
  } else if (R > 1 && !cpu && o->replicas == 1) {
    tool_error(cmd, "under mpirun, --target=%s splits the cores of a TPU board or pod over the "
               "ranks: give one with --replicas=<its cores> (--target=v3-8 --replicas=8)", o->target);
  } else if (o->replicas % R) {
    tool_error(cmd, "--replicas=%d do not split evenly over %d MPI ranks: give a multiple of %d",
               o->replicas, R, R);
  } else {
    tool_mpi_hush(false);
    if (tool_mpi_rank() != 0) {
      o->checkpoint = o->loss_log = o->metrics_json = o->plot = o->emit_step = NULL;
      if (!freopen("/dev/null", "w", stdout)) {
        tool_error(cmd, "rank %d: cannot silence its output", tool_mpi_rank());
        tool_mpi_end();
        return TOOL_EXIT_FAIL;
      }
    }
    tool_mpi_spread(true);
    double t0 = tool_mpi_wtime();
    rc = train_run(o);
    tool_mpi_times("compile and train", t0);
    tool_mpi_spread(false);
  }
  tool_mpi_hush(false);
  tool_mpi_end();
  return rc;
}

int tool_cmd_train(int argc, char **argv) {
  const char *cmd = "tpucc train";
  tool_args ar = {argc, 0, argv, cmd, false};
  const char *name, *value;
  train_options o;
  train_options_init(&o);
  /* The flags are read first and applied after the model's defaults. */
  const char **fn = calloc((size_t)argc + 1, sizeof *fn), **fv = calloc((size_t)argc + 1, sizeof *fv);
  if (!fn || !fv) base_out_of_memory(0);
  int nf = 0, rc = TOOL_EXIT_USAGE;
  char *text = NULL, err[512];
  tool_mpi_hush(true); /* under mpirun, rank 0 alone prints usage errors and help */
  while (tool_args_next(&ar, &name, &value)) {
    if (!name) {
      if (o.model) {
        tool_error(cmd, "one model file only ('%s' and '%s')", o.model, value);
        goto done;
      }
      o.model = value;
      continue;
    }
    if (strcmp(name, "help") == 0 || strcmp(name, "h") == 0) {
      tool_help_train(stdout);
      rc = TOOL_EXIT_OK;
      goto done;
    }
    if (strcmp(name, "quiet") == 0) {
      o.quiet = true;
      continue;
    }
    const char *v = tool_args_value(&ar, name, value);
    if (!v) goto done;
    fn[nf] = name;
    fv[nf++] = v;
  }
  if (!o.model) {
    tool_error(cmd, "no model file (tpucc train MODEL.tg; tpucc train --help)");
    goto done;
  }
  size_t len;
  if (ir_file_read(o.model, (size_t)64 << 20, &text, &len, err, sizeof err) != ST_OK) {
    tool_error(cmd, "%s", err);
    goto done;
  }
  /* Settings from the file keep pointers into text, which lives to the end. */
  if (file_defaults(&o, text, o.model) < 0) goto done;
  for (int i = 0; i < nf; i++) {
    int r = 1;
    if (strcmp(fn[i], "checkpoint") == 0) o.checkpoint = fv[i];
    else if (strcmp(fn[i], "resume") == 0) o.resume = fv[i];
    else if (strcmp(fn[i], "metrics-json") == 0) o.metrics_json = fv[i];
    else if (strcmp(fn[i], "plot") == 0) o.plot = fv[i];
    else if (strcmp(fn[i], "emit-step") == 0) o.emit_step = fv[i];
    else if (strcmp(fn[i], "loss-log") == 0) o.loss_log = fv[i];
    else r = train_option_set(&o, cmd, fn[i], fv[i]);
    if (r == 0) tool_error(cmd, "unknown option --%s (tpucc train --help)", fn[i]);
    if (r <= 0) goto done;
  }
  rc = train_ranks(&o, argc, argv);
done:
  tool_mpi_hush(false);
  free(text);
  free(fn);
  free(fv);
  return rc;
}
