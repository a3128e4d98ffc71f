/* train_model.c: a model file for `tpucc train` (docs/training.md, "The
 * model file"): its templates filled, its graphs `loss` and `logits`
 * parsed and checked, the trainable parameters found, and the step and
 * evaluation programs written as HLO text. */
#include "tools/train.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "driver/driver.h"
#include "frontend/frontend.h"
#include "passes/grad.h"

/* The line and column of `graph NAME` in text (1-based), for messages
 * about a graph as a whole; line 0 when absent. */
static src_loc graph_loc(const char *file, const char *text, const char *name) {
  src_loc l = {file, 0, 0};
  size_t n = strlen(name);
  int line = 1;
  for (const char *s = text, *bol = text; *s; s++) {
    if (*s == '\n') {
      line++;
      bol = s + 1;
      continue;
    }
    if (s == bol || s[-1] == ' ' || s[-1] == '\n') {
      if (strncmp(s, "graph ", 6) == 0 && strncmp(s + 6, name, n) == 0 &&
          (s[6 + n] == '(' || s[6 + n] == ' ')) {
        l.line = line;
        l.col = (int32_t)(s - bol) + 1;
        return l;
      }
    }
  }
  return l;
}

static const ir_inst *param_inst(const ir_module *m, int k) {
  const ir_comp *e = &m->comps.v[m->entry];
  return &e->insts.v[e->params[k]];
}

static bool is_float(ir_type t) {
  return t == IR_F32 || t == IR_BF16 || t == IR_F16;
}

/* Finds x, labels and the trainables of the loss graph; false after a
 * located error in d. */
static bool classify(train_model *tm, diag *d, src_loc at) {
  const ir_module *m = tm->loss;
  const ir_comp *e = &m->comps.v[m->entry];
  tm->nparams = e->nparams;
  tm->wrt = calloc((size_t)e->nparams + 1, sizeof *tm->wrt);
  tm->role = calloc((size_t)e->nparams + 1, sizeof *tm->role);
  if (!tm->wrt || !tm->role) base_out_of_memory(0);
  tm->x = tm->labels = -1;
  for (int k = 0; k < e->nparams; k++) {
    const ir_inst *p = param_inst(m, k);
    const char *n = p->info->name;
    if (strcmp(n, "x") == 0) {
      tm->x = k;
      tm->role[k] = TRAIN_ROLE_X;
    } else if (strcmp(n, "labels") == 0) {
      tm->labels = k;
      tm->role[k] = TRAIN_ROLE_LABELS;
    } else if (!is_float(p->shape->type) || p->shape->type != IR_F32) {
      diag_error(d, p->info->loc,
                 "trainable parameter '%s' of graph 'loss' must be f32 (the master weights; "
                 "cast to COMPUTE inside the model)",
                 n);
      return false;
    } else {
      tm->role[k] = TRAIN_ROLE_WEIGHT;
      tm->wrt[tm->nw++] = k;
    }
  }
  if (tm->x < 0 || tm->labels < 0) {
    diag_error(d, at, "graph 'loss' needs parameters named 'x' (a batch of images) and 'labels' (s32[BATCH])");
    return false;
  }
  const ir_shape *xs = param_inst(m, tm->x)->shape, *ys = param_inst(m, tm->labels)->shape;
  if (xs->type != IR_F32 || xs->rank < 2 || ys->type != IR_S32 || ys->rank != 1 ||
      ys->dims[0] != xs->dims[0]) {
    diag_error(d, at, "graph 'loss': x must be f32[BATCH,...] and labels s32[BATCH]");
    return false;
  }
  tm->batch = xs->dims[0];
  tm->example_elems = 1;
  for (int i = 1; i < xs->rank; i++) tm->example_elems *= xs->dims[i];
  if (tm->nw == 0) {
    diag_error(d, at, "graph 'loss' has no trainable parameter (every parameter but x and labels is one)");
    return false;
  }
  const ir_shape *r = e->insts.v[e->root].shape;
  if (r->type == IR_TUPLE || r->rank != 0 || !is_float(r->type)) {
    strbuf b;
    sb_init(&b);
    ir_shape_print(&b, r, false);
    diag_error(d, at, "graph 'loss' must return one float scalar, the batch's loss; it returns %s",
               sb_str(&b));
    sb_free(&b);
    return false;
  }
  return true;
}

/* Maps the logits graph's parameters onto the loss's; false after an error. */
static bool map_logits(train_model *tm, diag *d, src_loc at) {
  const ir_module *m = tm->logits;
  const ir_comp *e = &m->comps.v[m->entry];
  tm->eval_n = e->nparams;
  tm->eval_src = calloc((size_t)e->nparams + 1, sizeof *tm->eval_src);
  if (!tm->eval_src) base_out_of_memory(0);
  for (int k = 0; k < e->nparams; k++) {
    const ir_inst *p = param_inst(m, k);
    tm->eval_src[k] = -2;
    if (strcmp(p->info->name, "x") == 0 && ir_shape_equal(p->shape, param_inst(tm->loss, tm->x)->shape))
      tm->eval_src[k] = -1;
    for (int i = 0; i < tm->nw; i++) {
      const ir_inst *w = param_inst(tm->loss, tm->wrt[i]);
      if (strcmp(p->info->name, w->info->name) == 0 && ir_shape_equal(p->shape, w->shape))
        tm->eval_src[k] = i;
    }
    if (tm->eval_src[k] == -2) {
      diag_error(d, p->info->loc,
                 "parameter '%s' of graph 'logits' is neither x nor a parameter of graph 'loss' of the same type",
                 p->info->name);
      return false;
    }
  }
  const ir_shape *r = e->insts.v[e->root].shape;
  if (r->type != IR_F32 || r->rank != 2 || r->dims[0] != tm->batch) {
    diag_error(d, at, "graph 'logits' must return f32[BATCH,CLASSES]");
    return false;
  }
  tm->classes = (int)r->dims[1];
  return true;
}

/* Parses graph `entry` of the templated text; NULL after errors in d.
 * Afterwards d shows the lines of the file as written (orig), which the
 * templates keep column for column; the frontend's own errors show the
 * templated line. */
static ir_module *parse_graph(const char *path, const char *text, size_t len, const char *entry,
                              const char *orig, diag *d) {
  src_loc at = graph_loc(path, text, entry);
  if (at.line == 0) {
    src_loc top = {path, 1, 1};
    diag_error(d, top, "no graph '%s' (a training model has graphs 'loss' and 'logits': docs/training.md)",
               entry);
    return NULL;
  }
  ir_module *m = fe_parse_tg(path, text, len, entry, d);
  diag_add_source(d, path, orig, len);
  if (m && diag_error_count(d) > 0) {
    ir_module_destroy(m);
    m = NULL;
  }
  return m;
}

static char *print_text(const ir_module *m) {
  strbuf b;
  sb_init(&b);
  ir_print_module(&b, m);
  return b.s;
}

/* tm->loop_text: tm->k steps of step in one program (train_loop.c). */
static bool loop_text(train_model *tm, const ir_module *step, char *err, size_t errlen) {
  ir_module *loop = NULL;
  if (train_loop_compose(step, tm->k, &loop, err, errlen) != ST_OK) return false;
  tm->loop_text = print_text(loop);
  ir_module_destroy(loop);
  return true;
}

/* The step module's HLO text from the loss's value and gradient and the
 * update graph; NULL with a message in err. */
static char *step_text(train_model *tm, const train_hparams *h, char *err, size_t errlen) {
  ir_grad_options go;
  ir_grad_options_init(&go);
  go.wrt = tm->wrt;
  go.nwrt = tm->nw;
  ir_module *vg = NULL, *upd = NULL, *step = NULL;
  char *text = NULL;
  if (ir_value_and_grad_module(tm->loss, &go, &vg, err, errlen) != ST_OK) return NULL;
  const ir_shape **shapes = calloc((size_t)tm->nw + 1, sizeof *shapes);
  if (!shapes) base_out_of_memory(0);
  for (int i = 0; i < tm->nw; i++) shapes[i] = param_inst(tm->loss, tm->wrt[i])->shape;
  char *ut = train_update_text(h, tm->nw, shapes);
  free(shapes);
  diag *d = diag_create();
  if (drv_parse("lib/train/optim.tg", ut, strlen(ut), TPUCC_LANGUAGE_TG, "apply", d, &upd) != ST_OK) {
    drv_diag_message(d, "the optimizer library did not compile", err, errlen);
  } else if (train_step_compose(vg, tm->wrt, tm->nw, upd, tm->replicas, &step, err, errlen) ==
             ST_OK) {
    text = print_text(step); /* before vg and upd go: step may share their constants */
    if (tm->k > 1 && !loop_text(tm, step, err, errlen)) {
      free(text);
      text = NULL;
    }
  }
  diag_destroy(d);
  free(ut);
  ir_module_destroy(step);
  ir_module_destroy(upd);
  ir_module_destroy(vg);
  return text;
}

static bool is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Whether text has the word w (not as part of a longer identifier). */
static bool has_word(const char *text, size_t len, const char *w) {
  size_t n = strlen(w);
  for (const char *p = text; (p = memmem(p, len - (size_t)(p - text), w, n)) != NULL; p += n)
    if ((p == text || !is_ident_char(p[-1])) && (p + n == text + len || !is_ident_char(p[n])))
      return true;
  return false;
}

bool train_model_load(train_model *tm, const char *path, long batch, int replicas, int k,
                      const char *compute, const train_hparams *h, char *err, size_t errlen) {
  memset(tm, 0, sizeof *tm);
  tm->replicas = replicas;
  tm->k = k > 1 ? k : 1;
  if (replicas < 1 || batch % replicas) {
    snprintf(err, errlen, "--batch=%ld does not split into %d replicas of equal batches", batch,
             replicas);
    return false;
  }
  char *text;
  size_t len;
  if (ir_file_read(path, (size_t)64 << 20, &text, &len, err, errlen) != ST_OK) return false;
  char *orig = malloc(len + 1);
  if (!orig) base_out_of_memory(0);
  memcpy(orig, text, len + 1);
  if (replicas > 1 && !has_word(text, len, "GLOBAL_BATCH")) {
    snprintf(err, errlen,
             "%s: with --replicas=%d, graph loss must divide by GLOBAL_BATCH (the global batch; "
             "BATCH is each replica's)",
             path, replicas);
    free(orig);
    free(text);
    return false;
  }
  if (!train_template(text, len, batch / replicas, batch, compute)) {
    snprintf(err, errlen, "batch %ld has more than 5 digits", batch / replicas);
    free(orig);
    free(text);
    return false;
  }
  diag *d = diag_create();
  bool ok = false;
  tm->loss = parse_graph(path, text, len, "loss", orig, d);
  if (tm->loss && classify(tm, d, graph_loc(path, text, "loss"))) {
    tm->logits = parse_graph(path, text, len, "logits", orig, d);
    ok = tm->logits && map_logits(tm, d, graph_loc(path, text, "logits"));
  }
  if (!ok) {
    drv_diag_message(d, "the model did not compile", err, errlen);
    tm->model_error = true;
  }
  diag_destroy(d);
  free(text);
  free(orig);
  if (ok) {
    tm->names = calloc((size_t)tm->nw + 1, sizeof *tm->names);
    tm->shapes = calloc((size_t)tm->nw + 1, sizeof *tm->shapes);
    if (!tm->names || !tm->shapes) base_out_of_memory(0);
    for (int i = 0; i < tm->nw; i++) {
      const ir_inst *p = param_inst(tm->loss, tm->wrt[i]);
      tm->names[i] = p->info->name;
      tm->shapes[i] = p->shape;
    }
    tm->global_batch = tm->batch * replicas;
    tm->eval_text = print_text(tm->logits);
    tm->step_text = step_text(tm, h, err, errlen);
    if (!tm->step_text) {
      tm->model_error = true;
      ok = false;
    }
  }
  return ok;
}

void train_model_free(train_model *tm) {
  free(tm->wrt);
  free(tm->role);
  free(tm->eval_src);
  free(tm->names);
  free(tm->shapes);
  free(tm->step_text);
  free(tm->loop_text);
  free(tm->eval_text);
  ir_module_destroy(tm->loss);
  ir_module_destroy(tm->logits);
  memset(tm, 0, sizeof *tm);
}
