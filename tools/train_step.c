/* train_step.c: the training step as one module (train.h): the optimizer's
 * update written as .tg text over the library graphs of
 * lib/train/optim.tg, and the composition of the loss's value and
 * gradient with that update into one entry whose parameters and optimizer
 * state are donated to its results. */
#include "tools/train.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void train_hparams_init(train_hparams *h) {
  memset(h, 0, sizeof *h);
  h->opt = TRAIN_ADAM;
  h->lr = 1e-3;
  h->momentum = 0.9;
  h->beta1 = 0.9;
  h->beta2 = 0.999;
  h->eps = 1e-8;
  h->sched = TRAIN_CONSTANT;
  h->step_gamma = 0.1;
}

static const char *const opt_names[] = {"sgd", "momentum", "nesterov", "adam", "adamw"};
static const char *const sched_names[] = {"constant", "step", "cosine"};

/* The index of name in names[0..n), or -1. */
static int find_name(const char *const *names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(name, names[i]) == 0) return i;
  return -1;
}

bool train_opt_parse(const char *name, train_opt_kind *out) {
  int i = find_name(opt_names, (int)(sizeof opt_names / sizeof *opt_names), name);
  if (i >= 0) *out = (train_opt_kind)i;
  return i >= 0;
}

const char *train_opt_name(train_opt_kind k) { return opt_names[k]; }

bool train_sched_parse(const char *name, train_sched_kind *out) {
  int i = find_name(sched_names, (int)(sizeof sched_names / sizeof *sched_names), name);
  if (i >= 0) *out = (train_sched_kind)i;
  return i >= 0;
}

const char *train_sched_name(train_sched_kind k) { return sched_names[k]; }

int train_state_per_param(train_opt_kind k) {
  return k == TRAIN_SGD ? 0 : k == TRAIN_MOMENTUM || k == TRAIN_NESTEROV ? 1 : 2;
}

const char *train_state_name(train_opt_kind k, int j) {
  if (k == TRAIN_MOMENTUM || k == TRAIN_NESTEROV) return "velocity";
  return j == 0 ? "m" : "v";
}

/* ---- the update as .tg text ------------------------------------------------ */

static bool is_ident(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Appends the library with PARAM replaced by type and each graph name G
 * (a word followed by '(' that a `graph G(` line defines) by G__k. */
static void put_instance(strbuf *b, const char *type, int k) {
  const char *names[64];
  size_t lens[64];
  int nn = 0;
  for (const char *s = train_optim_tg; (s = strstr(s, "graph ")) && nn < 64; s += 6) {
    if (s != train_optim_tg && s[-1] != '\n') continue;
    const char *n = s + 6, *e = n;
    while (is_ident(*e)) e++;
    names[nn] = n;
    lens[nn++] = (size_t)(e - n);
  }
  for (const char *s = train_optim_tg; *s;) {
    if (s[0] == '/' && s[1] == '/') { /* comments stay as they are */
      const char *e = strchr(s, '\n');
      size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
      sb_putn(b, s, n);
      s += n;
      continue;
    }
    if (!is_ident(*s) || (s != train_optim_tg && is_ident(s[-1]))) {
      sb_putc(b, *s++);
      continue;
    }
    const char *e = s;
    while (is_ident(*e)) e++;
    size_t n = (size_t)(e - s);
    if (n == 5 && memcmp(s, "PARAM", 5) == 0) {
      sb_puts(b, type);
    } else {
      sb_putn(b, s, n);
      for (int i = 0; i < nn && *e == '('; i++)
        if (lens[i] == n && memcmp(names[i], s, n) == 0) sb_printf(b, "__%d", k);
    }
    s = e;
  }
}

static void type_text(strbuf *b, const ir_shape *s) {
  sb_printf(b, "%s[", ir_type_name(s->type));
  for (int d = 0; d < s->rank; d++) sb_printf(b, "%s%lld", d ? "," : "", (long long)s->dims[d]);
  sb_putc(b, ']');
}

/* A float as a .tg literal that reads back to the same f32. */
static void put_num(strbuf *b, double v) {
  char t[40];
  snprintf(t, sizeof t, "%.9g", (double)(float)v);
  if (!strpbrk(t, ".eEn")) strcat(t, ".0");
  sb_puts(b, t);
}

/* The learning rate at `step` into `lr`, from the schedule's graphs of
 * instance 0. */
static void put_schedule(strbuf *b, const train_hparams *h) {
  sb_puts(b, "  let lr = ");
  if (h->sched == TRAIN_STEP) {
    sb_puts(b, "lr_step__0(");
    put_num(b, h->lr);
    sb_puts(b, ", step, ");
    put_num(b, h->step_every > 0 ? h->step_every : 1);
    sb_puts(b, ", ");
    put_num(b, h->step_gamma);
    sb_puts(b, ");\n");
  } else if (h->sched == TRAIN_COSINE) {
    sb_puts(b, "lr_cosine__0(");
    put_num(b, h->lr);
    sb_puts(b, ", step, ");
    put_num(b, h->total_steps > 0 ? h->total_steps : 1);
    sb_puts(b, ");\n");
  } else {
    put_num(b, h->lr);
    sb_puts(b, " + 0 * step;\n");
  }
  if (h->warmup_steps > 0) {
    sb_puts(b, "  let lr = lr_warmup__0(lr, step, ");
    put_num(b, h->warmup_steps);
    sb_puts(b, ");\n");
  }
}

/* The update of parameter i (instance k) into w<i> and its state. */
static void put_update(strbuf *b, const train_hparams *h, int i, int k) {
  if (h->weight_decay > 0 && h->opt != TRAIN_ADAMW) {
    sb_printf(b, "  let g%d = decay_l2__%d(g%d, w%d, ", i, k, i, i);
    put_num(b, h->weight_decay);
    sb_puts(b, ");\n");
  }
  switch (h->opt) {
  case TRAIN_SGD:
    sb_printf(b, "  let w%d = sgd__%d(w%d, g%d, lr);\n", i, k, i, i);
    break;
  case TRAIN_MOMENTUM:
  case TRAIN_NESTEROV:
    sb_printf(b, "  let w%d, s%d_0 = %s__%d(w%d, g%d, s%d_0, lr, ", i, i,
              h->opt == TRAIN_MOMENTUM ? "momentum" : "nesterov", k, i, i, i);
    put_num(b, h->momentum);
    sb_puts(b, ");\n");
    break;
  case TRAIN_ADAM:
  case TRAIN_ADAMW:
    sb_printf(b, "  let w%d, s%d_0, s%d_1 = %s__%d(w%d, g%d, s%d_0, s%d_1, lr, ", i, i, i,
              h->opt == TRAIN_ADAM ? "adam" : "adamw", k, i, i, i, i);
    for (int j = 0; j < 2; j++) { /* b, 1 - b, log(b) in double */
      double beta = j ? h->beta2 : h->beta1;
      put_num(b, beta);
      sb_puts(b, ", ");
      put_num(b, 1 - beta);
      sb_puts(b, ", ");
      put_num(b, log(beta));
      sb_puts(b, ", ");
    }
    put_num(b, h->eps);
    sb_puts(b, ", step + 1");
    if (h->opt == TRAIN_ADAMW) {
      sb_puts(b, ", ");
      put_num(b, h->weight_decay);
    }
    sb_puts(b, ");\n");
    break;
  }
}

char *train_update_text(const train_hparams *h, int n, const ir_shape *const *shapes) {
  strbuf b, t;
  sb_init(&b);
  sb_init(&t);
  int *inst = calloc((size_t)n + 1, sizeof *inst), ninst = 0;
  const ir_shape **types = calloc((size_t)n + 1, sizeof *types);
  if (!inst || !types) base_out_of_memory(0);
  for (int i = 0; i < n; i++) { /* one library instance per distinct type */
    int k = 0;
    while (k < ninst && !ir_shape_equal(types[k], shapes[i])) k++;
    if (k == ninst) {
      types[ninst++] = shapes[i];
      t.len = 0;
      type_text(&t, shapes[i]);
      put_instance(&b, sb_str(&t), k);
    }
    inst[i] = k;
  }
  int ns = train_state_per_param(h->opt);
  sb_puts(&b, "\ngraph apply(");
  for (int pass = 0; pass < 3; pass++)
    for (int i = 0; i < n; i++)
      for (int j = 0; j < (pass == 2 ? ns : 1); j++) {
        t.len = 0;
        type_text(&t, shapes[i]);
        if (pass == 2)
          sb_printf(&b, "s%d_%d: %s, ", i, j, sb_str(&t));
        else
          sb_printf(&b, "%c%d: %s, ", pass ? 'g' : 'w', i, sb_str(&t));
      }
  sb_puts(&b, "step: f32) {\n");
  put_schedule(&b, h);
  if (h->clip_norm > 0) {
    sb_puts(&b, "  let sq = 0.0");
    for (int i = 0; i < n; i++) sb_printf(&b, " + sq_norm__%d(g%d)", inst[i], i);
    sb_puts(&b, ";\n  let c = clip_factor__0(sq, ");
    put_num(&b, h->clip_norm);
    sb_puts(&b, ");\n");
    for (int i = 0; i < n; i++) sb_printf(&b, "  let g%d = scale__%d(g%d, c);\n", i, inst[i], i);
  }
  for (int i = 0; i < n; i++) put_update(&b, h, i, inst[i]);
  sb_puts(&b, "  return ");
  for (int i = 0; i < n; i++) sb_printf(&b, "w%d, ", i);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < ns; j++) sb_printf(&b, "s%d_%d, ", i, j);
  sb_puts(&b, "step + 1;\n}\n");
  free(inst);
  free(types);
  sb_free(&t);
  return b.s; /* owned by the caller now */
}

/* ---- composition ----------------------------------------------------------- */

typedef struct splice_ctx {
  ir_module *dst;
  const ir_module *src;
  const char *prefix;
  ir_comp_id *memo; /* src computation -> dst computation, IR_NONE when not yet copied */
} splice_ctx;

static ir_comp_id copy_comp(splice_ctx *x, ir_comp_id sc);

/* Copies the live instructions of src computation sc into dst computation
 * dc, parameter(i) becoming args[i] (args NULL: the parameters are copied
 * too). Returns the id of the copy of sc's root. */
static ir_id splice(splice_ctx *x, ir_comp_id dc, ir_comp_id sc, const ir_id *args) {
  const ir_comp *s = &x->src->comps.v[sc];
  ir_id *map = calloc((size_t)s->insts.n + 1, sizeof *map);
  ir_id ops[64], *big = NULL;
  ir_comp_id calls[16];
  if (!map) base_out_of_memory(0);
  for (int i = 0; i < s->insts.n; i++) {
    const ir_inst *in = &s->insts.v[i];
    if (in->dead) continue;
    if (in->op == IR_OP_PARAMETER && args) {
      map[i] = args[in->a->parameter_number];
      continue;
    }
    ir_inst_proto p = ir_inst_proto_of(in);
    ir_id *o = ops;
    if (in->nops > 64) o = big = realloc(big, sizeof(ir_id) * (size_t)in->nops);
    if (!o) base_out_of_memory(0);
    for (int k = 0; k < in->nops; k++) o[k] = map[in->ops[k]];
    BASE_ASSERT(in->ncalls <= 16);
    for (int k = 0; k < in->ncalls; k++) calls[k] = copy_comp(x, in->calls[k]);
    p.ops = o;
    p.calls = calls;
    p.name = ir_unique_name(x->dst, in->info->name);
    p.shape = *in->shape;
    map[i] = ir_inst_add(x->dst, dc, &p);
  }
  ir_id root = map[s->root];
  free(map);
  free(big);
  return root;
}

static ir_comp_id copy_comp(splice_ctx *x, ir_comp_id sc) {
  if (x->memo[sc] != IR_NONE) return x->memo[sc];
  char name[256];
  snprintf(name, sizeof name, "%s.%s", x->prefix, x->src->comps.v[sc].name);
  ir_comp_id dc = ir_comp_add(x->dst, ir_unique_name(x->dst, name));
  x->memo[sc] = dc;
  ir_id root = splice(x, dc, sc, NULL);
  ir_comp *c = ir_comp_get(x->dst, dc);
  c->root = root;
  c->is_fusion = x->src->comps.v[sc].is_fusion;
  ir_comp_finish(x->dst, dc);
  return dc;
}

ir_id train_splice_entry(ir_module *dst, ir_comp_id dc, const ir_module *src, const char *prefix,
                          const ir_id *args) {
  splice_ctx x = {dst, src, prefix, malloc(sizeof(ir_comp_id) * ((size_t)src->comps.n + 1))};
  if (!x.memo) base_out_of_memory(0);
  for (int i = 0; i < src->comps.n; i++) x.memo[i] = IR_NONE;
  ir_id r = splice(&x, dc, src->entry, args);
  free(x.memo);
  return r;
}

ir_id train_param(ir_module *m, ir_comp_id c, int k, const ir_shape *s, const char *name) {
  ir_inst_proto p;
  memset(&p, 0, sizeof p);
  p.op = IR_OP_PARAMETER;
  p.name = ir_unique_name(m, name);
  p.shape = *s;
  p.a.parameter_number = k;
  p.a.preferred_type = IR_TYPE_INVALID;
  return ir_inst_add(m, c, &p);
}

ir_id train_gte(ir_module *m, ir_comp_id c, ir_id t, int k) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.index = k;
  a.preferred_type = IR_TYPE_INVALID;
  src_loc loc = {0};
  return ir_build(m, c, IR_OP_GET_TUPLE_ELEMENT, &t, 1, &a, NULL, 0, loc);
}

const ir_shape *train_entry_param_shape(const ir_module *m, int k) {
  const ir_comp *e = &m->comps.v[m->entry];
  return e->insts.v[e->params[k]].shape;
}

/* The gradients of vg's root: elements 1.. of a flat tuple, or the
 * elements of a tuple in element 1. Fills g[0..nwrt); false if the root
 * has another form. */
static bool grads_of(ir_module *m, ir_comp_id c, ir_id root, const ir_shape *rs, int nwrt,
                     ir_id *g) {
  if (rs->type != IR_TUPLE || rs->ntuple < 2) return false;
  if (rs->ntuple == 1 + nwrt && (nwrt != 1 || rs->tuple[1].type != IR_TUPLE)) {
    for (int i = 0; i < nwrt; i++) g[i] = train_gte(m, c, root, 1 + i);
    return true;
  }
  const ir_shape *gs = &rs->tuple[1];
  if (rs->ntuple != 2 || gs->type != IR_TUPLE || gs->ntuple != nwrt) return false;
  ir_id t = train_gte(m, c, root, 1);
  for (int i = 0; i < nwrt; i++) g[i] = train_gte(m, c, t, i);
  return true;
}

/* The scalar f32 add computation an all-reduce sums with. */
static ir_comp_id add_comp(ir_module *m) {
  ir_comp_id c = ir_comp_add(m, ir_unique_name(m, "replica_sum"));
  ir_shape f = ir_shape_scalar(IR_F32);
  ir_id x = train_param(m, c, 0, &f, "x");
  ir_id y = train_param(m, c, 1, &f, "y");
  src_loc loc = {0};
  ir_comp_get(m, c)->root = ir_build(m, c, IR_OP_ADD, (ir_id[]){x, y}, 2, NULL, NULL, 0, loc);
  ir_comp_finish(m, c);
  return c;
}

/* x summed over every replica (an all-reduce over all of them). */
static ir_id replica_sum(ir_module *m, ir_comp_id c, ir_comp_id add, ir_id x) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  src_loc loc = {0};
  return ir_build(m, c, IR_OP_ALL_REDUCE, &x, 1, &a, &add, 1, loc);
}

/* The header attributes of the step: the donations, and replica_count
 * when there are several replicas. */
static void step_header(ir_module *m, int ndonated, int replicas) {
  strbuf al;
  sb_init(&al);
  sb_puts(&al, "{ ");
  for (int i = 0; i < ndonated; i++)
    sb_printf(&al, "%s{%d}: (%d, {}, may-alias)", i ? ", " : "", 1 + i, i);
  sb_puts(&al, " }");
  m->nraw = replicas > 1 ? 2 : 1;
  m->raw = arena_alloc(m->arena, (size_t)m->nraw * sizeof *m->raw);
  m->raw[0].name = "input_output_alias";
  m->raw[0].text = arena_strndup(m->arena, sb_str(&al), al.len);
  if (replicas > 1) {
    m->raw[1].name = "replica_count";
    m->raw[1].text = arena_printf(m->arena, "%d", replicas);
  }
  sb_free(&al);
}

base_status train_step_compose(const ir_module *vg, const int *wrt, int nwrt,
                               const ir_module *upd, int replicas, ir_module **out, char *err,
                               size_t errlen) {
  *out = NULL;
  const ir_comp *ve = &vg->comps.v[vg->entry], *ue = &upd->comps.v[upd->entry];
  int np = ve->nparams, nu = ue->nparams;
  int nstate = nu - 2 * nwrt - 1;
  if (nstate < 0 || nstate % (nwrt ? nwrt : 1)) {
    snprintf(err, errlen, "update takes %d parameters, not 2 x %d + state + 1", nu, nwrt);
    return ST_INVALID_ARGUMENT;
  }
  ir_module *m = ir_module_create("train_step");
  ir_comp_id c = ir_comp_add(m, "step");
  m->entry = c;
  ir_id *args = calloc((size_t)(np + nu) + 1, sizeof *args), *g = calloc((size_t)nwrt + 1, sizeof *g);
  ir_id *res = calloc((size_t)(nu - nwrt) + 1, sizeof *res);
  if (!args || !g || !res) base_out_of_memory(0);
  int k = 0;
  for (int i = 0; i < nwrt; i++) /* trainables */
    args[wrt[i]] = train_param(m, c, k++, train_entry_param_shape(vg, wrt[i]), "w");
  ir_id *uargs = args + np;
  for (int j = 0; j < nstate; j++)
    uargs[2 * nwrt + j] = train_param(m, c, k++, train_entry_param_shape(upd, 2 * nwrt + j), "state");
  uargs[nu - 1] = train_param(m, c, k++, train_entry_param_shape(upd, nu - 1), "step");
  for (int j = 0; j < np; j++) { /* data, in the loss's order */
    bool t = false;
    for (int i = 0; i < nwrt; i++) t |= wrt[i] == j;
    if (!t) args[j] = train_param(m, c, k++, train_entry_param_shape(vg, j), "data");
  }
  ir_comp_finish(m, c);
  ir_id vr = train_splice_entry(m, c, vg, "grad", args);
  base_status st = ST_OK;
  if (!grads_of(m, c, vr, ir_comp_get(m, c)->insts.v[vr].shape, nwrt, g)) {
    snprintf(err, errlen, "the gradient module's entry does not return (loss, %d gradients)", nwrt);
    st = ST_INVALID_ARGUMENT;
  }
  ir_comp_id sum = replicas > 1 && st == ST_OK ? add_comp(m) : IR_NONE;
  for (int i = 0; i < nwrt && st == ST_OK; i++) {
    uargs[i] = args[wrt[i]];
    uargs[nwrt + i] = sum != IR_NONE ? replica_sum(m, c, sum, g[i]) : g[i];
  }
  if (st == ST_OK) {
    ir_id ur = train_splice_entry(m, c, upd, "update", uargs);
    res[0] = train_gte(m, c, vr, 0);
    if (sum != IR_NONE) res[0] = replica_sum(m, c, sum, res[0]);
    for (int i = 0; i < nu - nwrt; i++) res[1 + i] = train_gte(m, c, ur, i);
    ir_attrs a;
    memset(&a, 0, sizeof a);
    a.preferred_type = IR_TYPE_INVALID;
    src_loc loc = {0};
    ir_comp_get(m, c)->root = ir_build(m, c, IR_OP_TUPLE, res, 1 + nu - nwrt, &a, NULL, 0, loc);
    step_header(m, nu - nwrt, replicas);
  }
  free(args);
  free(g);
  free(res);
  if (st != ST_OK) {
    ir_module_destroy(m);
    return st;
  }
  *out = m;
  return ST_OK;
}

/* ---- model templates ------------------------------------------------------- */

static void fill_word(char *at, size_t width, const char *text, bool right) {
  size_t n = strlen(text);
  memset(at, ' ', width);
  memcpy(right ? at + width - n : at, text, n);
}

bool train_template(char *text, size_t len, long batch, long global_batch, const char *compute) {
  char num[32], global[32];
  snprintf(num, sizeof num, "%ld", batch);
  snprintf(global, sizeof global, "%ld", global_batch);
  if (strlen(num) > 5 || strlen(global) > 12 || strlen(compute) > 7) return false;
  for (size_t i = 0; i < len; i++) {
    if (i > 0 && is_ident(text[i - 1])) continue;
    size_t e = i;
    while (e < len && is_ident(text[e])) e++;
    if (e - i == 5 && memcmp(text + i, "BATCH", 5) == 0) fill_word(text + i, 5, num, true);
    if (e - i == 12 && memcmp(text + i, "GLOBAL_BATCH", 12) == 0)
      fill_word(text + i, 12, global, true);
    if (e - i == 7 && memcmp(text + i, "COMPUTE", 7) == 0) fill_word(text + i, 7, compute, false);
    if (e > i) i = e - 1;
  }
  return true;
}
