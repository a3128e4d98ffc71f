/* stmts.c: the statements of a graph body, and loops and branches written
 * inline (docs/language.md, "Statements" and "Loops and branches"):
 *
 *   let a, b = e;                    binds names (a later let shadows)
 *   var x [: T] = e;                 a variable; its type is fixed here
 *   x = e;   x += e; -= *= /=        gives a variable a new value
 *   while c { ... }                  HLO while
 *   for i in a..b [step s] { ... }   HLO while over an s32 counter
 *   if c { ... } [else { ... }]      HLO conditional
 *   if c then x else y               HLO conditional (an expression)
 *
 * Each block of a loop or a branch (and each part of an if expression)
 * is lowered into a computation of its own whose one parameter is a
 * tuple, the slots of the construct's frame. A slot is made the first
 * time a block names a tensor bound outside it (a capture): the outer
 * value becomes an element of the tuple operand of the while or the
 * conditional, and the block reads it with a get-tuple-element. A slot
 * whose variable a block assigns is a result: a while body returns
 * every slot (the assigned ones with their new values, the others as
 * they came), a conditional's branches return the slots either of them
 * assigns, and after the construct the results replace the variables'
 * values outside. Slots appear while the blocks are lowered, so every
 * computation of a frame gets the parameter's new tuple shape with each
 * one (the shapes of get-tuple-elements already made do not change). */
#include "frontend/tg/lower.h"

#include <stdint.h>

enum { MAX_FRAME_COMPS = 2 }; /* cond and body; then and else */

typedef struct fslot {
  const char *name; /* NULL: a for loop's counter or bound */
  int outer;        /* the binding outside the frame (-1 when hidden) */
  ir_id init;       /* its value, in the enclosing computation */
  ir_shape shape;
  bool assigned;
} fslot;

typedef struct fcomp {
  ir_comp_id comp;
  ir_id param;
  VEC(int) bind; /* slot -> its binding in this computation, or -1 */
} fcomp;

struct tg_frame {
  VEC(fslot) slots;
  fcomp c[MAX_FRAME_COMPS];
  int nc;
  ir_comp_id outer;  /* the enclosing computation */
  const char *what;  /* "while", "for", "if": messages and metadata */
};

/* ---- names ---------------------------------------------------------------- */

static const ir_shape *shape_in(lctx *L, ir_comp_id c, ir_id id) {
  return ir_inst_get(L->m, c, id)->shape;
}

static ir_id gte(lctx *L, ir_id t, int k, src_loc loc, const char *what) {
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.index = k;
  return lemit(L, IR_OP_GET_TUPLE_ELEMENT, &t, 1, &a, NULL, 0, NULL, loc, what);
}

static ir_shape slots_shape(lctx *L, const tg_frame *f) {
  ir_shape t;
  memset(&t, 0, sizeof t);
  t.type = IR_TUPLE;
  t.ntuple = f->slots.n;
  t.tuple = arena_array(L->m->arena, (size_t)(f->slots.n ? f->slots.n : 1), sizeof(ir_shape));
  for (int k = 0; k < f->slots.n; k++) t.tuple[k] = f->slots.v[k].shape;
  return t;
}

/* Appends a slot; every computation of f gets the new parameter shape. */
static int add_slot(lctx *L, tg_frame *f, const char *name, int outer, ir_id init) {
  fslot s = {name, outer, init, *shape_in(L, f->outer, init), false};
  VEC_PUSH(L->m->arena, f->slots, s);
  ir_shape t = slots_shape(L, f);
  for (int i = 0; i < f->nc; i++) {
    VEC_PUSH(L->m->arena, f->c[i].bind, -1);
    if (f->c[i].param != IR_NONE) ir_inst_set_shape(L->m, ir_inst_get(L->m, f->c[i].comp, f->c[i].param), &t);
  }
  return f->slots.n - 1;
}

static int resolve(lctx *L, tg_scope *s, const char *name);

/* Name, not bound in the top block s of one of f's computations: found
 * outside, a tensor becomes a slot of f, read here from the parameter.
 * Anything else (a literal, a poisoned value) needs no slot. */
static int capture(lctx *L, tg_scope *s, const char *name) {
  tg_frame *f = s->frame;
  int j = resolve(L, s->up, name);
  if (j < 0) return -1;
  L->binds.v[j].used = true;
  binding outer = L->binds.v[j];
  if (outer.v.k != TV_TENSOR) return j;
  int k = -1;
  for (int i = 0; i < f->slots.n && k < 0; i++)
    if (f->slots.v[i].name && strcmp(f->slots.v[i].name, name) == 0) k = i;
  if (k < 0) k = add_slot(L, f, name, j, outer.v.id);
  fcomp *fc = &f->c[s->fc];
  ir_comp_id saved = L->comp;
  tg_scope *inner = L->scope;
  L->comp = fc->comp;
  L->scope = s;
  int i = fe_tg_bind(L, name, outer.loc, tv_tensor(gte(L, fc->param, k, outer.loc, f->what)));
  L->comp = saved;
  L->scope = inner;
  binding *b = &L->binds.v[i];
  b->is_var = outer.is_var;
  b->is_param = outer.is_param;
  b->is_counter = outer.is_counter;
  b->frame = f;
  b->slot = k;
  fc->bind.v[k] = i;
  return i;
}

static int resolve(lctx *L, tg_scope *s, const char *name) {
  for (; s; s = s->up) {
    int32_t i = strmap_get(s->env, name, strlen(name));
    if (i >= 0) return i;
    if (s->frame) return capture(L, s, name);
  }
  return -1;
}

int fe_tg_lookup(lctx *L, const char *name) { return resolve(L, L->scope, name); }

int fe_tg_visible(lctx *L, const char *name, bool stop) {
  for (tg_scope *s = L->scope; s; s = s->up) {
    int32_t i = strmap_get(s->env, name, strlen(name));
    if (i >= 0) return i;
    if (s->frame && stop) return -1;
  }
  return -1;
}

/* Names the instruction that computes v after the binding, when this
 * statement made it (instructions from id `before` on). */
static void name_value(lctx *L, tv v, int before, const char *name) {
  if (v.k != TV_TENSOR || v.id < before) return;
  ir_inst *in = ir_inst_get(L->m, L->comp, v.id);
  if (in->op != IR_OP_PARAMETER) in->info->name = ir_unique_name(L->m, name);
}

/* Variable i takes value v (of its type); a capture's slot becomes a
 * result of its frame. */
static void set_var(lctx *L, int i, tv v) {
  binding *b = &L->binds.v[i];
  b->v = v;
  if (b->frame && v.k == TV_TENSOR) b->frame->slots.v[b->slot].assigned = true;
}

/* ---- let, var, assignment ---------------------------------------------- */

static void lower_let(lctx *L, const tg_stmt *st) {
  if (st->nnames == 0) return; /* break or continue, reported by the parser */
  int before = ir_comp_get(L->m, L->comp)->insts.n;
  tv v = lower_expr(L, st->values.v[0]);
  if (st->nnames == 1) {
    if (v.k == TV_MULTI) {
      lerr(L, st->name_locs[0], "the call returns %d values; bind them with 'let a, b = ...'", v.nmulti);
      v = tv_err();
    }
    name_value(L, v, before, st->names[0]);
    fe_tg_bind(L, st->names[0], st->name_locs[0], v);
    return;
  }
  if (v.k == TV_MULTI && v.nmulti != st->nnames) {
    lerr(L, st->name_locs[0], "%d names bound to a call that returns %d values", st->nnames, v.nmulti);
    v = tv_err();
  } else if (v.k != TV_MULTI && v.k != TV_ERR) {
    lerr(L, st->name_locs[0], "%d names bound to a single value", st->nnames);
    v = tv_err();
  }
  for (int i = 0; i < st->nnames; i++)
    fe_tg_bind(L, st->names[i], st->name_locs[i], v.k == TV_MULTI ? tv_tensor(v.multi[i]) : tv_err());
}

static void declare_var(lctx *L, const tg_stmt *st) {
  const char *name = st->names[0];
  const tg_node *e = st->values.v[0];
  int before = ir_comp_get(L->m, L->comp)->insts.n;
  tv v = lower_expr(L, e);
  ir_shape want;
  bool typed = st->type != NULL;
  if (typed && !fe_tg_type_shape(st->type, &want)) {
    lerr(L, st->type->loc, "'%s': shape is too large (more than 2^40 elements)", name);
    v = tv_err();
  }
  if (v.k == TV_LIT && typed) v = tv_to_type(L, v, want.type, e->loc);
  if (v.k == TV_MULTI) {
    lerr(L, st->name_locs[0], "the call returns %d values; a var holds one", v.nmulti);
    v = tv_err();
  }
  v = tv_tensor(tv_id(L, v, e->loc));
  if (v.k == TV_TENSOR && typed && !ir_shape_equal(&want, lshape(L, v.id))) {
    lerr(L, e->loc, "'%s' is declared %s but its value is %s", name, lshape_str(L, &want),
         lshape_str(L, lshape(L, v.id)));
    v = tv_err();
  }
  name_value(L, v, before, name);
  int i = fe_tg_bind(L, name, st->name_locs[0], v);
  L->binds.v[i].is_var = true;
}

static void assign(lctx *L, const tg_stmt *st) {
  const char *name = st->names[0];
  src_loc at = st->name_locs[0];
  const tg_node *e = st->values.v[0];
  int before = ir_comp_get(L->m, L->comp)->insts.n;
  tv v = lower_expr(L, e);
  int i = fe_tg_lookup(L, name);
  if (i < 0) {
    if (!L->scope->frame)
      lerr(L, at, "a binding needs 'let': write 'let %s = ...'", name);
    else
      lerr(L, at, "'%s' is not defined; a block assigns only variables declared before it "
           "(var %s = ...)", name, name);
    fe_tg_bind(L, name, at, tv_err());
    return;
  }
  binding b = L->binds.v[i];
  if (b.v.k == TV_ERR) {
    L->errors++; /* poisoned by an error reported before */
    return;
  }
  if (!b.is_var) {
    if (b.is_param)
      lerr(L, at, "'%s' is a parameter and cannot be assigned; copy it into a variable first "
           "(var %s = %s;)", name, name, name);
    else if (b.is_counter)
      lerr(L, at, "'%s' is the variable of a for loop and cannot be assigned", name);
    else
      lerr(L, at, "'%s' is bound by 'let' and cannot be assigned; declare it with 'var %s = ...'",
           name, name);
    lnote(L, b.loc, "'%s' bound here", name);
    return;
  }
  const ir_shape *want = lshape(L, b.v.id);
  if (v.k == TV_LIT) v = tv_to_type(L, v, want->type, e->loc);
  if (v.k == TV_MULTI) {
    lerr(L, e->loc, "a call returning %d values assigned to one variable", v.nmulti);
    v = tv_err();
  }
  if (v.k == TV_TENSOR && !ir_shape_equal(want, lshape(L, v.id))) {
    lerr(L, at, "assignment changes the type of '%s' from %s to %s (a var keeps the type it is "
         "declared with)", name, lshape_str(L, want), lshape_str(L, lshape(L, v.id)));
    lnote(L, b.loc, "'%s' declared here", name);
    v = tv_err();
  }
  name_value(L, v, before, name);
  set_var(L, i, v);
}

/* ---- frames ------------------------------------------------------------------ */

static tg_frame *frame_new(lctx *L, const char *what) {
  tg_frame *f = arena_alloc(L->m->arena, sizeof *f);
  f->outer = L->comp;
  f->what = what;
  return f;
}

/* Starts the next computation of f: its parameter is the tuple of the
 * slots so far; a new block on top of it becomes the innermost. */
static void frame_enter(lctx *L, tg_frame *f, const char *name, src_loc loc) {
  BASE_ASSERT(f->nc < MAX_FRAME_COMPS);
  fcomp *fc = &f->c[f->nc];
  fc->comp = ir_comp_add(L->m, ir_unique_name(L->m, name));
  ir_comp_get(L->m, fc->comp)->loc = (src_loc){L->file, loc.line, loc.col};
  L->comp = fc->comp;
  ir_shape t = slots_shape(L, f);
  ir_attrs pa;
  memset(&pa, 0, sizeof pa);
  pa.preferred_type = IR_TYPE_INVALID;
  fc->param = lemit(L, IR_OP_PARAMETER, NULL, 0, &pa, NULL, 0, &t, loc, f->what);
  for (int k = 0; k < f->slots.n; k++) VEC_PUSH(L->m->arena, fc->bind, -1);
  tg_scope *s = arena_alloc(L->m->arena, sizeof *s);
  s->env = strmap_create(L->m->arena);
  s->up = L->scope;
  s->frame = f;
  s->fc = f->nc++;
  s->comp = fc->comp;
  L->scope = s;
}

static void frame_leave(lctx *L, tg_frame *f) {
  L->scope = L->scope->up;
  L->comp = f->outer;
}

/* The value of slot k at the end of computation c of f. */
static ir_id slot_value(lctx *L, tg_frame *f, int c, int k, src_loc loc) {
  int b = f->c[c].bind.v[k];
  if (b >= 0) return L->binds.v[b].v.k == TV_TENSOR ? L->binds.v[b].v.id : IR_NONE;
  L->comp = f->c[c].comp;
  ir_id v = gte(L, f->c[c].param, k, loc, f->what);
  L->comp = f->outer;
  return v;
}

/* Ends computation c of f with root v, or the tuple of the n values v. */
static bool frame_root(lctx *L, tg_frame *f, int c, const ir_id *v, int n, bool tuple, src_loc loc) {
  ir_id r = v[0];
  if (tuple) {
    L->comp = f->c[c].comp;
    r = lemit(L, IR_OP_TUPLE, v, n, NULL, NULL, 0, NULL, loc, f->what);
    L->comp = f->outer;
  }
  if (r == IR_NONE) return false;
  ir_comp_get(L->m, f->c[c].comp)->root = r;
  ir_comp_finish(L->m, f->c[c].comp);
  return true;
}

/* The tuple of the slots' outer values, in the enclosing computation. */
static ir_id frame_operand(lctx *L, tg_frame *f, src_loc loc) {
  ir_id *v = arena_array(L->m->arena, (size_t)(f->slots.n ? f->slots.n : 1), sizeof(ir_id));
  for (int k = 0; k < f->slots.n; k++) v[k] = f->slots.v[k].init;
  return lemit(L, IR_OP_TUPLE, v, f->slots.n, NULL, NULL, 0, NULL, loc, f->what);
}

/* The variables f's blocks assign: their slots, in slot order. */
static int frame_results(const tg_frame *f, int *out) {
  int n = 0;
  for (int k = 0; k < f->slots.n; k++)
    if (f->slots.v[k].assigned && f->slots.v[k].name) out[n++] = k;
  return n;
}

/* After the construct: result r of instruction w replaces the variable
 * of slot out[r]; with w IR_NONE (an error) the variables are poisoned
 * so that their uses do not report again. */
static void frame_assign(lctx *L, tg_frame *f, ir_id w, const int *out, int n, bool whole, src_loc loc) {
  for (int r = 0; r < n; r++) {
    const fslot *s = &f->slots.v[out[r]];
    tv v = tv_err();
    if (w != IR_NONE) {
      v = tv_tensor(gte(L, w, whole ? out[r] : r, loc, f->what));
      name_value(L, v, 0, s->name);
    }
    set_var(L, s->outer, v);
  }
}

/* The variables f's construct assigns (slots) into *out, and their
 * count; -1 when the construct is not to be built: after an error (its
 * variables are poisoned) or when it assigns nothing (reported). */
static int frame_outputs(lctx *L, tg_frame *f, int errors0, bool whole, src_loc loc, int **out) {
  *out = arena_array(L->m->arena, (size_t)(f->slots.n ? f->slots.n : 1), sizeof(int));
  int n = frame_results(f, *out);
  if (L->errors != errors0) {
    frame_assign(L, f, IR_NONE, *out, n, whole, loc);
    return -1;
  }
  if (n == 0) {
    lerr(L, loc, "this '%s'%s assigns no variable declared before it, so it computes nothing", f->what,
         strcmp(f->what, "if") ? " loop" : "");
    return -1;
  }
  return n;
}

/* A condition: one pred, in the computation being built. */
static ir_id cond_pred(lctx *L, const tg_node *n, const char *what) {
  int errors0 = L->errors;
  ir_id p = lower_tensor(L, n);
  if (p == IR_NONE) {
    if (L->errors == errors0) L->errors++; /* a poisoned value: reported before */
    return IR_NONE;
  }
  const ir_shape *s = lshape(L, p);
  if (s->type != IR_PRED || s->rank != 0) {
    lerr(L, n->loc, "the condition of '%s' is %s; it must be one pred (reduce_any or reduce_all "
         "make one; where() selects element by element)", what, lshape_str(L, s));
    return IR_NONE;
  }
  return p;
}

static void lower_block(lctx *L, const tg_stmts *b) {
  for (int i = 0; i < b->n; i++) {
    L->cur_op = NULL;
    fe_tg_stmt(L, &b->v[i]);
  }
}

/* ---- loops ------------------------------------------------------------------- */

/* Ends a loop whose condition (computation 0) is pred and whose body is
 * computation 1: the body returns every slot, slot `ctr` (>= 0) as next;
 * the while's results replace the variables the body assigned. */
static void finish_loop(lctx *L, tg_frame *f, ir_id pred, int ctr, ir_id next, const tg_stmt *st,
                        int errors0) {
  int *out;
  int nout = frame_outputs(L, f, errors0, true, st->loc, &out);
  if (nout < 0) return;
  ir_id *v = arena_array(L->m->arena, (size_t)f->slots.n, sizeof(ir_id));
  for (int k = 0; k < f->slots.n; k++) v[k] = k == ctr ? next : slot_value(L, f, 1, k, st->loc);
  const char *saved_op = L->cur_op;
  L->cur_op = f->what;
  ir_id w = IR_NONE;
  if (frame_root(L, f, 0, &pred, 1, false, st->loc) && frame_root(L, f, 1, v, f->slots.n, true, st->loc)) {
    ir_id init = frame_operand(L, f, st->loc);
    ir_comp_id calls[2] = {f->c[0].comp, f->c[1].comp};
    w = lemit(L, IR_OP_WHILE, &init, 1, NULL, calls, 2, NULL, st->loc, f->what);
  }
  frame_assign(L, f, w, out, nout, true, st->loc);
  L->cur_op = saved_op;
}

static void lower_while(lctx *L, const tg_stmt *st) {
  int errors0 = L->errors;
  tg_frame *f = frame_new(L, "while");
  frame_enter(L, f, "while_cond", st->loc);
  ir_id p = cond_pred(L, st->cond, "while");
  frame_leave(L, f);
  frame_enter(L, f, "while_body", st->loc);
  lower_block(L, st->body);
  frame_leave(L, f);
  finish_loop(L, f, p, -1, IR_NONE, st, errors0);
}

/* A bound of a for range: an s32 scalar (a literal becomes one, in the
 * computation being built). */
static ir_id range_bound(lctx *L, tv v, const tg_node *n, const char *which) {
  int errors0 = L->errors;
  if (v.k == TV_LIT) v = tv_to_type(L, v, IR_S32, n->loc);
  ir_id id = tv_id(L, v, n->loc);
  if (id == IR_NONE) {
    if (L->errors == errors0) L->errors++; /* a poisoned value: reported before */
    return IR_NONE;
  }
  const ir_shape *s = lshape(L, id);
  if (s->type != IR_S32 || s->rank != 0) {
    lerr(L, n->loc, "the %s of a for range is %s; it must be an s32 scalar", which, lshape_str(L, s));
    return IR_NONE;
  }
  return id;
}

/* for i in a..b step s: slot 0 is the counter (from a), slot 1 the bound
 * b unless it is a literal (then a constant of the condition, so that a
 * loop over literal bounds with step 1 is the counted loop the gradient
 * saves, docs/gradients.md). The condition is i < b (i > b for a
 * negative step); the body ends with i + s, which saturates at the s32
 * limit instead of wrapping (the loop then ends). */
static void lower_for(lctx *L, const tg_stmt *st) {
  int errors0 = L->errors;
  int64_t step = 1;
  if (st->step && st_int(L, st->step, "the step of a for loop", &step) &&
      (step == 0 || step < -INT32_MAX || step > INT32_MAX)) {
    lerr(L, st->step->loc, "the step of a for loop must be a nonzero s32, got %lld", (long long)step);
    step = 1;
  }
  ir_id lo = range_bound(L, lower_expr(L, st->cond), st->cond, "start");
  tv hiv = lower_expr(L, st->limit);
  ir_id hi = hiv.k == TV_LIT ? IR_NONE : range_bound(L, hiv, st->limit, "end");
  /* after an error, stand-ins let the body be checked too */
  if (lo == IR_NONE) lo = lscalar(L, IR_S32, 0, st->loc);
  if (hi == IR_NONE && hiv.k != TV_LIT) hi = lscalar(L, IR_S32, 0, st->loc);
  if (lo == IR_NONE || (hiv.k != TV_LIT && hi == IR_NONE)) return; /* out of instructions */
  tg_frame *f = frame_new(L, "for");
  add_slot(L, f, NULL, -1, lo);
  if (hi != IR_NONE) add_slot(L, f, NULL, -1, hi);
  frame_enter(L, f, "for_cond", st->loc);
  ir_id i = gte(L, f->c[0].param, 0, st->loc, "for");
  ir_id b = hi != IR_NONE ? gte(L, f->c[0].param, 1, st->loc, "for") : range_bound(L, hiv, st->limit, "end");
  ir_id p = lcmp(L, step > 0 ? IR_CMP_LT : IR_CMP_GT, i, b, st->loc);
  frame_leave(L, f);
  frame_enter(L, f, "for_body", st->loc);
  i = gte(L, f->c[1].param, 0, st->name_locs[0], "for");
  int ib = fe_tg_bind(L, st->names[0], st->name_locs[0], tv_tensor(i));
  L->binds.v[ib].is_counter = true;
  ir_id i0 = IR_NONE;
  if (i != IR_NONE) {
    ir_inst_get(L->m, L->comp, i)->info->name = ir_unique_name(L->m, st->names[0]);
    i0 = i;
  }
  lower_block(L, st->body);
  L->comp = f->c[1].comp;
  if (step > 1) i0 = lbin(L, IR_OP_MINIMUM, i0, lscalar(L, IR_S32, (double)(INT32_MAX - step), st->loc), st->loc);
  if (step < -1) i0 = lbin(L, IR_OP_MAXIMUM, i0, lscalar(L, IR_S32, (double)(INT32_MIN - step), st->loc), st->loc);
  ir_id next = lbinc(L, IR_OP_ADD, i0, (double)step, st->loc);
  frame_leave(L, f);
  finish_loop(L, f, p, 0, next, st, errors0);
}

/* ---- branches ---------------------------------------------------------------- */

static void lower_if(lctx *L, const tg_stmt *st) {
  int errors0 = L->errors;
  ir_id p = cond_pred(L, st->cond, "if");
  tg_frame *f = frame_new(L, "if");
  frame_enter(L, f, "if_then", st->loc);
  lower_block(L, st->body);
  frame_leave(L, f);
  frame_enter(L, f, "if_else", st->loc);
  if (st->orelse) lower_block(L, st->orelse);
  frame_leave(L, f);
  int *out;
  int nout = frame_outputs(L, f, errors0, false, st->loc, &out);
  if (nout < 0) return;
  const char *saved_op = L->cur_op;
  L->cur_op = "if";
  ir_id *v = arena_array(L->m->arena, (size_t)nout, sizeof(ir_id));
  bool ok = true;
  for (int c = 0; c < 2 && ok; c++) {
    for (int r = 0; r < nout; r++) v[r] = slot_value(L, f, c, out[r], st->loc);
    ok = frame_root(L, f, c, v, nout, true, st->loc);
  }
  ir_id w = IR_NONE;
  if (ok) {
    ir_id a = frame_operand(L, f, st->loc);
    ir_id ops[3] = {p, a, a};
    ir_comp_id calls[2] = {f->c[0].comp, f->c[1].comp};
    w = lemit(L, IR_OP_CONDITIONAL, ops, 3, NULL, calls, 2, NULL, st->loc, "if");
  }
  frame_assign(L, f, w, out, nout, false, st->loc);
  L->cur_op = saved_op;
}

/* A branch of an if expression as one tensor of computation c of f. A
 * number literal takes the type of `like` (the other branch, when it is
 * a tensor), and a scalar one its shape too; with like NULL it takes
 * type t (IR_TYPE_INVALID: its default). */
static ir_id branch_value(lctx *L, tg_frame *f, int c, tv v, const ir_shape *like, ir_type t,
                          const tg_node *n) {
  if (v.k == TV_MULTI) {
    lerr(L, n->loc, "a call returning %d values as a branch of 'if'", v.nmulti);
    return IR_NONE;
  }
  L->comp = f->c[c].comp;
  bool scalar = v.k == TV_LIT && v.rank == 0;
  if (v.k == TV_LIT && like) t = like->type;
  if (v.k == TV_LIT && t != IR_TYPE_INVALID) v = tv_to_type(L, v, t, n->loc);
  ir_id id = tv_id(L, v, n->loc);
  if (scalar && like) id = lbroadcast_to(L, id, like->rank, like->dims, n->loc);
  L->comp = f->outer;
  return id;
}

tv fe_tg_if_expr(lctx *L, const tg_node *n) {
  int errors0 = L->errors;
  ir_id p = cond_pred(L, n->a, "if");
  tg_frame *f = frame_new(L, "if");
  tv x[2];
  const tg_node *part[2] = {n->b, n->c};
  for (int c = 0; c < 2; c++) {
    frame_enter(L, f, c ? "if_else" : "if_then", part[c]->loc);
    x[c] = lower_expr(L, part[c]);
    frame_leave(L, f);
  }
  /* a literal follows a tensor in the other branch; two literals take
   * one default type (f32 when either is not integral) */
  ir_type t = IR_TYPE_INVALID;
  if (x[0].k == TV_LIT && x[1].k == TV_LIT && !x[0].is_bool && !x[1].is_bool && x[0].all_int != x[1].all_int)
    t = IR_F32;
  const ir_shape *like[2] = {NULL, NULL};
  for (int c = 0; c < 2; c++)
    if (x[1 - c].k == TV_TENSOR) like[c] = shape_in(L, f->c[1 - c].comp, x[1 - c].id);
  ir_id v[2];
  for (int c = 0; c < 2; c++) v[c] = branch_value(L, f, c, x[c], like[c], t, part[c]);
  if (L->errors != errors0 || p == IR_NONE || v[0] == IR_NONE || v[1] == IR_NONE) return tv_err();
  const ir_shape *s0 = shape_in(L, f->c[0].comp, v[0]), *s1 = shape_in(L, f->c[1].comp, v[1]);
  if (!ir_shape_equal(s0, s1)) {
    lerr(L, n->loc, "the branches of 'if' differ: 'then' gives %s, 'else' gives %s", lshape_str(L, s0),
         lshape_str(L, s1));
    return tv_err();
  }
  const char *saved_op = L->cur_op;
  L->cur_op = "if";
  tv r = tv_err();
  if (frame_root(L, f, 0, &v[0], 1, true, n->loc) && frame_root(L, f, 1, &v[1], 1, true, n->loc)) {
    ir_id a = frame_operand(L, f, n->loc);
    ir_id ops[3] = {p, a, a};
    ir_comp_id calls[2] = {f->c[0].comp, f->c[1].comp};
    ir_id w = lemit(L, IR_OP_CONDITIONAL, ops, 3, NULL, calls, 2, NULL, n->loc, "if");
    r = tv_tensor(w == IR_NONE ? IR_NONE : gte(L, w, 0, n->loc, "if"));
  }
  L->cur_op = saved_op;
  return r;
}

/* ---- dispatch ------------------------------------------------------------------ */

void fe_tg_stmt(lctx *L, const tg_stmt *st) {
  switch (st->kind) {
  case TS_LET: lower_let(L, st); return;
  case TS_VAR: declare_var(L, st); return;
  case TS_ASSIGN: assign(L, st); return;
  case TS_RETURN:
    lerr(L, st->loc, "'return' inside a block: a graph returns at its end (assign a variable "
         "here and return it after the block)");
    return;
  case TS_WHILE:
  case TS_FOR:
  case TS_IF: break;
  }
  if (L->depth >= TG_MAX_DEPTH) {
    llimit(L, st->loc, "blocks nested too deeply (more than %d levels, counting expressions)", TG_MAX_DEPTH);
    return;
  }
  L->depth++;
  if (st->kind == TS_WHILE) lower_while(L, st);
  else if (st->kind == TS_FOR) lower_for(L, st);
  else lower_if(L, st);
  L->depth--;
}
