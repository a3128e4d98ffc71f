/* train_loop.c: K training steps in one program (train.h, "steps per
 * execution"): the step module of train_step_compose run K times by an
 * HLO while loop on the device, each trip on batch i of K stacked batches,
 * its loss written into row i of a vector of K losses. The loop's body is
 * the step itself, spliced unchanged, so a trip computes what one
 * execution of the step computes. */
#include "tools/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct loop_ctx {
  ir_module *m;
  const ir_module *step;
  int nstate;      /* donated state: step parameters [0, nstate) */
  int k;           /* trips */
  ir_shape state;  /* (i, state..., data 0, data 1, losses) */
} loop_ctx;

static const src_loc no_loc = {0};

static ir_id tuple(ir_module *m, ir_comp_id c, ir_id *v, int n) {
  return ir_build(m, c, IR_OP_TUPLE, v, n, NULL, NULL, 0, no_loc);
}

static ir_id reshape(ir_module *m, ir_comp_id c, ir_id x, const ir_shape *to) {
  return ir_build_shaped(m, c, IR_OP_RESHAPE, &x, 1, NULL, NULL, 0, to, no_loc);
}

/* A scalar constant of type t. */
static ir_id constant(ir_module *m, ir_comp_id c, ir_type t, int64_t v) {
  ir_shape s = ir_shape_scalar(t);
  ir_literal *lit = ir_literal_create(m->arena, &s);
  ir_literal_set_i64(lit, 0, v);
  ir_inst_proto p;
  memset(&p, 0, sizeof p);
  p.op = IR_OP_CONSTANT;
  p.shape = s;
  p.a = ir_attrs_none;
  p.a.literal = lit;
  return ir_inst_add(m, c, &p);
}

/* s with a leading dimension of n. */
static ir_shape stacked(const ir_shape *s, int64_t n) {
  int64_t dims[IR_MAX_RANK + 1];
  dims[0] = n;
  for (int d = 0; d < s->rank; d++) dims[d + 1] = s->dims[d];
  return ir_shape_array(s->type, s->rank + 1, dims);
}

/* Row i of xs (shape s stacked), as shape s. */
static ir_id row(ir_module *m, ir_comp_id c, ir_id xs, ir_id i, const ir_shape *s) {
  ir_shape one = stacked(s, 1);
  ir_id ops[IR_MAX_RANK + 2];
  ops[0] = xs;
  ops[1] = i;
  for (int d = 0; d < s->rank; d++) ops[2 + d] = constant(m, c, IR_S32, 0);
  ir_attrs a = ir_attrs_none;
  a.slice_sizes = (ir_ints){one.rank, one.dims};
  ir_id r = ir_build(m, c, IR_OP_DYNAMIC_SLICE, ops, s->rank + 2, &a, NULL, 0, no_loc);
  return reshape(m, c, r, s);
}

/* The condition: i < k. */
static ir_comp_id cond_comp(loop_ctx *x) {
  ir_module *m = x->m;
  ir_comp_id c = ir_comp_add(m, ir_unique_name(m, "steps_cond"));
  ir_id t = train_param(m, c, 0, &x->state, "state");
  ir_attrs a = ir_attrs_none;
  a.cmp_dir = IR_CMP_LT;
  ir_id ops[2] = {train_gte(m, c, t, 0), constant(m, c, IR_S32, x->k)};
  ir_comp_get(m, c)->root = ir_build(m, c, IR_OP_COMPARE, ops, 2, &a, NULL, 0, no_loc);
  ir_comp_finish(m, c);
  return c;
}

/* The body: one step on batch i, its loss into losses[i], i + 1. */
static ir_comp_id body_comp(loop_ctx *x) {
  ir_module *m = x->m;
  int n = x->nstate, nt = n + 4;
  ir_comp_id c = ir_comp_add(m, ir_unique_name(m, "steps_body"));
  ir_id t = train_param(m, c, 0, &x->state, "state");
  ir_id *v = calloc((size_t)nt, sizeof *v), *args = calloc((size_t)n + 2, sizeof *args);
  if (!v || !args) base_out_of_memory(0);
  for (int j = 0; j < nt; j++) v[j] = train_gte(m, c, t, j);
  ir_id i = v[0];
  for (int j = 0; j < n; j++) args[j] = v[1 + j];
  for (int d = 0; d < 2; d++) args[n + d] = row(m, c, v[1 + n + d], i, train_entry_param_shape(x->step, n + d));
  ir_id r = train_splice_entry(m, c, x->step, "step", args);
  for (int j = 0; j < n; j++) v[1 + j] = train_gte(m, c, r, 1 + j);
  ir_shape l1 = ir_shape_array(IR_F32, 1, (int64_t[]){1});
  ir_id ops[3] = {v[nt - 1], reshape(m, c, train_gte(m, c, r, 0), &l1), i};
  v[nt - 1] = ir_build(m, c, IR_OP_DYNAMIC_UPDATE_SLICE, ops, 3, NULL, NULL, 0, no_loc);
  ir_id one = constant(m, c, IR_S32, 1);
  v[0] = ir_build(m, c, IR_OP_ADD, (ir_id[]){i, one}, 2, NULL, NULL, 0, no_loc);
  ir_comp_get(m, c)->root = tuple(m, c, v, nt);
  ir_comp_finish(m, c);
  free(v);
  free(args);
  return c;
}

/* Whether step has the form the loop takes: parameters (state..., two
 * data), root a tuple (f32[] loss, one result per state parameter of its
 * shape). */
static bool step_form(const ir_module *step, int *nstate, char *err, size_t errlen) {
  const ir_comp *e = &step->comps.v[step->entry];
  const ir_shape *rs = e->insts.v[e->root].shape;
  int n = e->nparams - 2;
  bool ok = n >= 0 && rs->type == IR_TUPLE && rs->ntuple == n + 1 && rs->tuple[0].type == IR_F32 &&
            rs->tuple[0].rank == 0;
  for (int j = 0; ok && j < n; j++) ok = ir_shape_equal(&rs->tuple[1 + j], train_entry_param_shape(step, j));
  if (!ok) snprintf(err, errlen, "the step does not return (loss, its donated state)");
  *nstate = n;
  return ok;
}

base_status train_loop_compose(const ir_module *step, int k, ir_module **out, char *err,
                               size_t errlen) {
  *out = NULL;
  int n;
  if (k < 1) {
    snprintf(err, errlen, "%d steps per execution", k);
    return ST_INVALID_ARGUMENT;
  }
  if (!step_form(step, &n, err, errlen)) return ST_INVALID_ARGUMENT;
  loop_ctx x = {ir_module_create("train_steps"), step, n, k, {0}};
  ir_module *m = x.m;
  ir_comp_id c = ir_comp_add(m, "steps");
  m->entry = c;
  int nt = n + 4;
  ir_id *v = calloc((size_t)nt, sizeof *v), *res = calloc((size_t)n + 1, sizeof *res);
  ir_shape *el = arena_array(m->arena, (size_t)nt, sizeof *el);
  if (!v || !res) base_out_of_memory(0);
  v[0] = constant(m, c, IR_S32, 0);
  el[0] = ir_shape_scalar(IR_S32);
  for (int j = 0; j < n + 2; j++) { /* state, then the stacked data */
    const ir_shape *s = train_entry_param_shape(step, j);
    el[1 + j] = j < n ? *s : stacked(s, k);
    v[1 + j] = train_param(m, c, j, &el[1 + j], j < n ? "state" : "batches");
  }
  el[nt - 1] = ir_shape_array(IR_F32, 1, (int64_t[]){k});
  ir_id z = constant(m, c, IR_F32, 0);
  v[nt - 1] = ir_build_shaped(m, c, IR_OP_BROADCAST, &z, 1, NULL, NULL, 0, &el[nt - 1], no_loc);
  memset(&x.state, 0, sizeof x.state);
  x.state.type = IR_TUPLE;
  x.state.ntuple = nt;
  x.state.tuple = el;
  ir_comp_id calls[2] = {cond_comp(&x), body_comp(&x)};
  ir_id init = tuple(m, c, v, nt);
  ir_id w = ir_build(m, c, IR_OP_WHILE, &init, 1, NULL, calls, 2, no_loc);
  res[0] = train_gte(m, c, w, nt - 1);
  for (int j = 0; j < n; j++) res[1 + j] = train_gte(m, c, w, 1 + j);
  ir_comp_get(m, c)->root = tuple(m, c, res, n + 1);
  ir_comp_finish(m, c);
  /* the step's header: its donations (result 1 + j replaces parameter j)
   * and replica count hold for the loop as they are */
  m->nraw = step->nraw;
  m->raw = arena_alloc(m->arena, (size_t)(step->nraw + 1) * sizeof *m->raw);
  for (int j = 0; j < step->nraw; j++) {
    m->raw[j] = step->raw[j];
    m->raw[j].name = arena_strndup(m->arena, step->raw[j].name, strlen(step->raw[j].name));
    m->raw[j].text = step->raw[j].text
                         ? arena_strndup(m->arena, step->raw[j].text, strlen(step->raw[j].text))
                         : NULL;
  }
  free(v);
  free(res);
  *out = m;
  return ST_OK;
}
