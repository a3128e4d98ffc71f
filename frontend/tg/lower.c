/* lower.c: semantic analysis and lowering of .tg graphs to IR, graph level.
 *
 * Every graph is checked once, standalone, in a scratch module (so errors
 * in graphs that nobody calls are found too, and each is reported once).
 * A call to another graph inlines its body; a call to a graph that is
 * being checked is recursion and is reported with the call chain. When the
 * whole file checks, the entry graph is lowered again into the module that
 * is returned, and that module is verified.
 *
 * Limits (so that no input can exhaust memory or time): at most
 * TG_MAX_INSTS instructions per computation, and TG_MAX_TOTAL made while
 * checking all graphs (inlining can grow a program exponentially, and a
 * file may hold many graphs). */
#include "frontend/tg/lower.h"

#include <stdarg.h>
#include <stdlib.h>

enum { TG_MAX_INSTS = 100000, TG_MAX_TOTAL = 1000000 };

enum { GS_NEW, GS_CHECKING, GS_OK, GS_FAILED };

struct tg_glob {
  tg_parser *p;
  strmap *graphs;        /* name -> index in p->graphs */
  int8_t *state;         /* GS_* per graph */
  VEC(int) stack;        /* graphs being checked, outermost first */
  int64_t total;         /* instructions made so far */
  bool too_big;          /* the instruction limit was reported */
  bool limit_hit;        /* a nesting limit was reported */
  bool final;            /* lowering the entry again: checks already reported */
};

enum { MAX_CALL_DEPTH = 64 }; /* graphs being checked inside each other */

/* ---- diagnostics ------------------------------------------------------ */

void lerr(lctx *L, src_loc loc, const char *fmt, ...) {
  L->errors++;
  if (L->quiet) return;
  va_list ap;
  va_start(ap, fmt);
  diag_vreport(L->p->d, DIAG_ERROR, loc, fmt, ap);
  va_end(ap);
}

void lnote(lctx *L, src_loc loc, const char *fmt, ...) {
  if (L->quiet) return;
  va_list ap;
  va_start(ap, fmt);
  diag_vreport(L->p->d, DIAG_NOTE, loc, fmt, ap);
  va_end(ap);
}

void llimit(lctx *L, src_loc loc, const char *fmt, ...) {
  L->errors++;
  L->g->limit_hit = true;
  va_list ap;
  va_start(ap, fmt);
  diag_vreport(L->p->d, DIAG_ERROR, loc, fmt, ap);
  va_end(ap);
}

const char *lshape_str(lctx *L, const ir_shape *s) {
  strbuf b;
  sb_init(&b);
  ir_shape_print(&b, s, false);
  const char *r = arena_strdup(L->m->arena, sb_str(&b));
  sb_free(&b);
  return r;
}

void lnote_origin(lctx *L, const tg_node *n) {
  if (!n || n->kind != TG_NAME || L->quiet) return;
  int32_t i = fe_tg_visible(L, n->name, true);
  if (i < 0) return;
  binding *b = &L->binds.v[i];
  if (b->v.k != TV_TENSOR) return;
  lnote(L, b->loc, "'%s' is %s", b->name, lshape_str(L, lshape(L, b->v.id)));
}

/* ---- building --------------------------------------------------------- */

const ir_shape *lshape(lctx *L, ir_id id) {
  return ir_inst_get(L->m, L->comp, id)->shape;
}

/* Counts one instruction against the limits; false (reported once) when
 * a limit is reached. */
static bool budget(lctx *L, src_loc loc) {
  tg_glob *g = L->g;
  if (g->too_big) {
    L->errors++;
    return false;
  }
  if (ir_comp_get(L->m, L->comp)->insts.n >= TG_MAX_INSTS || g->total >= TG_MAX_TOTAL) {
    g->too_big = true;
    L->errors++;
    src_loc l = loc;
    diag_error(L->p->d, l, "program too large: more than %d instructions after inlining",
               ir_comp_get(L->m, L->comp)->insts.n >= TG_MAX_INSTS ? TG_MAX_INSTS : TG_MAX_TOTAL);
    return false;
  }
  g->total++;
  return true;
}

static ir_id add_inst(lctx *L, ir_inst_proto *in, src_loc loc) {
  loc.file = L->file;
  in->loc = loc;
  in->meta.source_file = L->file;
  in->meta.source_line = loc.line;
  in->meta.op_type = L->cur_op;
  in->meta.op_name = L->cur_op ? arena_printf(L->m->arena, "%s/%s", L->path, L->cur_op) : L->path;
  return ir_inst_add(L->m, L->comp, in);
}

ir_id lemit(lctx *L, ir_op op, const ir_id *ops, int nops, const ir_attrs *a,
            const ir_comp_id *calls, int ncalls, const ir_shape *prefill,
            src_loc loc, const char *what) {
  for (int i = 0; i < nops; i++)
    if (ops[i] == IR_NONE) return IR_NONE;
  if (!budget(L, loc)) return IR_NONE;
  ir_shape shapes[8];
  BASE_ASSERT(nops <= 8 || op == IR_OP_CONCATENATE || op == IR_OP_TUPLE);
  ir_shape *sh = nops <= 8 ? shapes : arena_array(L->m->arena, (size_t)nops, sizeof(ir_shape));
  for (int i = 0; i < nops; i++) sh[i] = *lshape(L, ops[i]);
  ir_attrs none;
  memset(&none, 0, sizeof none);
  none.preferred_type = IR_TYPE_INVALID;
  if (!a) a = &none;
  ir_shape out;
  memset(&out, 0, sizeof out);
  if (prefill) out = *prefill;
  char err[256] = "";
  if (!ir_infer_shape(L->m, op, sh, nops, a, calls, ncalls, &out, err, sizeof err)) {
    const char *msg = err;
    size_t hl = strlen(ir_op_name(op));
    if (strncmp(msg, ir_op_name(op), hl) == 0 && msg[hl] == ':' && msg[hl + 1] == ' ') msg += hl + 2;
    lerr(L, loc, "%s: %s", what, msg[0] ? msg : "invalid operands");
    return IR_NONE;
  }
  int64_t count;
  if (out.type != IR_TUPLE && !ir_shape_elements(&out, &count)) {
    lerr(L, loc, "%s: result %s is too large", what, lshape_str(L, &out));
    return IR_NONE;
  }
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = op;
  in.shape = out;
  in.nops = nops;
  in.ops = (ir_id *)ops;
  in.ncalls = ncalls;
  in.calls = (ir_comp_id *)calls;
  in.a = *a;
  return add_inst(L, &in, loc);
}

ir_id lconst(lctx *L, ir_literal *lit, src_loc loc) {
  if (!lit || !budget(L, loc)) return IR_NONE;
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_CONSTANT;
  in.shape = lit->shape;
  in.a.literal = lit;
  in.a.preferred_type = IR_TYPE_INVALID;
  return add_inst(L, &in, loc);
}

ir_id lscalar(lctx *L, ir_type t, double v, src_loc loc) {
  ir_shape s = ir_shape_scalar(t);
  ir_literal *lit = ir_literal_create(L->m->arena, &s);
  ir_literal_set_f64(lit, 0, v);
  return lconst(L, lit, loc);
}

static ir_id lparam(lctx *L, int index, const ir_shape *s, const char *name, src_loc loc) {
  if (!budget(L, loc)) return IR_NONE;
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = IR_OP_PARAMETER;
  in.shape = *s;
  in.name = ir_unique_name(L->m, name);
  in.a.parameter_number = index;
  in.a.preferred_type = IR_TYPE_INVALID;
  return add_inst(L, &in, loc);
}

/* ---- scalar reducer computations --------------------------------------- */

ir_comp_id lreducer(lctx *L, int kind, ir_type t, src_loc loc) {
  if (L->reducers[kind][t]) return L->reducers[kind][t] - 1;
  static const char *const names[] = {"add", "multiply", "max", "min", "and", "or"};
  static const ir_op ops[] = {IR_OP_ADD, IR_OP_MULTIPLY, IR_OP_MAXIMUM, IR_OP_MINIMUM, IR_OP_AND, IR_OP_OR};
  /* computation names share the instruction namespace: unique in m */
  const char *cn = ir_unique_name(L->m, arena_printf(L->m->arena, "%s_%s", names[kind], ir_type_name(t)));
  ir_comp_id c = ir_comp_add(L->m, cn);
  ir_shape s = ir_shape_scalar(t);
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  loc.file = L->file;
  in.op = IR_OP_PARAMETER;
  in.shape = s;
  in.loc = loc;
  in.a.preferred_type = IR_TYPE_INVALID;
  in.name = ir_unique_name(L->m, "lhs");
  ir_id p0 = ir_inst_add(L->m, c, &in);
  in.name = ir_unique_name(L->m, "rhs");
  in.a.parameter_number = 1;
  ir_id p1 = ir_inst_add(L->m, c, &in);
  memset(&in, 0, sizeof in);
  in.op = ops[kind];
  in.loc = loc;
  in.shape = s;
  in.nops = 2;
  in.ops = (ir_id[]){p0, p1};
  in.a.preferred_type = IR_TYPE_INVALID;
  ir_comp_get(L->m, c)->root = ir_inst_add(L->m, c, &in);
  ir_comp_get(L->m, c)->loc = loc;
  ir_comp_finish(L->m, c);
  L->reducers[kind][t] = c + 1;
  return c;
}

/* ---- graphs ----------------------------------------------------------- */

bool fe_tg_type_shape(const tg_node *t, ir_shape *out) {
  *out = ir_shape_array(t->type, t->rank < 0 ? 0 : t->rank, t->dims);
  int64_t n;
  return ir_shape_elements(out, &n);
}

int fe_tg_bind(lctx *L, const char *name, src_loc loc, tv v) {
  binding b;
  memset(&b, 0, sizeof b);
  b.name = name;
  b.loc = loc;
  b.v = v;
  b.slot = -1;
  VEC_PUSH(L->m->arena, L->binds, b);
  strmap_put(L->scope->env, name, strlen(name), L->binds.n - 1);
  return L->binds.n - 1;
}

/* A new innermost block for the graph body being lowered into L->comp. */
static tg_scope *graph_scope(lctx *L) {
  tg_scope *s = arena_alloc(L->m->arena, sizeof *s);
  s->env = strmap_create(L->m->arena);
  s->comp = L->comp;
  return s;
}

static void check_graph(tg_glob *G, int gi, int depth);

/* Lowers the statements of g with its parameters bound to args; returns
 * the result (TV_MULTI for several) or TV_ERR. */
static tv lower_body(lctx *L, const tg_graph *g, const tv *args) {
  tg_scope *saved_scope = L->scope;
  int saved_n = L->binds.n;
  L->scope = graph_scope(L);
  for (int i = 0; i < g->params.n; i++) {
    int b = fe_tg_bind(L, g->params.v[i].name, g->params.v[i].loc, args[i]);
    L->binds.v[b].is_param = true;
  }
  int errors0 = L->errors;
  tv result = tv_err();
  bool returned = false, failed = false;
  for (int s = 0; s < g->body.n; s++) {
    const tg_stmt *st = &g->body.v[s];
    if (returned) {
      lerr(L, st->loc, "statement after 'return'");
      failed = true;
      break;
    }
    if (st->kind != TS_RETURN) {
      L->cur_op = NULL;
      fe_tg_stmt(L, st);
      continue;
    }
    returned = true;
    int n = st->values.n;
    if (g->has_results && n != g->results.n) {
      lerr(L, st->loc, "graph '%s' returns %d value%s but declares %d", g->name, n, n == 1 ? "" : "s",
           g->results.n);
      lnote(L, g->results_loc, "results declared here");
      failed = true;
      continue;
    }
    ir_id *ids = arena_array(L->m->arena, (size_t)n, sizeof(ir_id));
    for (int i = 0; i < n; i++) {
      const tg_node *e = st->values.v[i];
      L->cur_op = NULL;
      tv v = lower_expr(L, e);
      ir_shape want;
      bool have_want = g->has_results && fe_tg_type_shape(g->results.v[i], &want);
      if (v.k == TV_LIT && have_want) v = tv_to_type(L, v, want.type, e->loc);
      if (v.k == TV_MULTI) {
        lerr(L, e->loc, "a call returning %d values cannot be returned as one value", v.nmulti);
        v = tv_err();
      }
      ids[i] = tv_id(L, v, e->loc);
      if (ids[i] == IR_NONE) {
        failed = true;
        continue;
      }
      if (have_want && !ir_shape_equal(&want, lshape(L, ids[i]))) {
        lerr(L, e->loc, "graph '%s' result %d is %s but the declared type is %s", g->name, i + 1,
             lshape_str(L, lshape(L, ids[i])), lshape_str(L, &want));
        lnote(L, g->results.v[i]->loc, "declared here");
        failed = true;
      }
    }
    if (failed) continue;
    if (n == 1) {
      result = tv_tensor(ids[0]);
    } else {
      result.k = TV_MULTI;
      result.nmulti = n;
      result.multi = ids;
    }
  }
  if (!returned && !failed) lerr(L, g->end_loc, "graph '%s' ends without a 'return'", g->name);
  /* a clean body warns about values computed for nothing ("_x" is exempt) */
  if (!L->quiet && !L->g->final && L->errors == errors0)
    for (int i = saved_n; i < L->binds.n; i++) {
      const binding *b = &L->binds.v[i];
      if (!b->used && !b->is_param && !b->is_counter && !b->frame && b->name[0] != '_')
        diag_report(L->p->d, DIAG_WARNING, b->loc, "'%s' is never used", b->name);
    }
  L->scope = saved_scope;
  L->binds.n = saved_n;
  if (!returned || failed) return tv_err();
  return result;
}

int fe_tg_graph_index(lctx *L, const char *name) {
  return strmap_get(L->g->graphs, name, strlen(name));
}

bool fe_tg_graph_args(lctx *L, const tg_graph *g, const tg_node *const *an, tv *args) {
  bool ok = true;
  for (int i = 0; i < g->params.n; i++) {
    const tg_param *pp = &g->params.v[i];
    ir_shape want;
    fe_tg_type_shape(pp->type, &want);
    tv v = lower_expr(L, an[i]);
    if (v.k == TV_LIT) v = tv_to_type(L, v, want.type, an[i]->loc);
    if (v.k == TV_MULTI) {
      lerr(L, an[i]->loc, "a call returning %d values used as one argument", v.nmulti);
      v = tv_err();
    }
    if (v.k == TV_ERR) {
      ok = false;
      continue;
    }
    if (!ir_shape_equal(&want, lshape(L, v.id))) {
      lerr(L, an[i]->loc, "argument %d of '%s' is %s but parameter '%s' is %s", i + 1, g->name,
           lshape_str(L, lshape(L, v.id)), pp->name, lshape_str(L, &want));
      lnote(L, pp->loc, "parameter declared here");
      ok = false;
    }
    args[i] = v;
  }
  return ok;
}

/* A call from L to graph gi: checks the callee first, then inlines it. */
tv fe_tg_call_graph(lctx *L, const tg_node *call, int gi) {
  tg_glob *G = L->g;
  const tg_graph *g = G->p->graphs.v[gi];
  if (G->state[gi] == GS_CHECKING) {
    lerr(L, call->loc, "recursive call to graph '%s' (graphs are inlined, so they cannot recurse)", g->name);
    strbuf b;
    sb_init(&b);
    int from = 0;
    for (int i = 0; i < G->stack.n; i++)
      if (G->stack.v[i] == gi) from = i;
    for (int i = from; i < G->stack.n; i++) sb_printf(&b, "%s -> ", G->p->graphs.v[G->stack.v[i]]->name);
    sb_puts(&b, g->name);
    lnote(L, g->loc, "call chain: %s", sb_str(&b));
    sb_free(&b);
    return tv_err();
  }
  if (G->state[gi] == GS_NEW && G->stack.n >= MAX_CALL_DEPTH) {
    llimit(L, call->loc, "graphs call each other too deeply (more than %d levels)", MAX_CALL_DEPTH);
    return tv_err();
  }
  /* arguments by position, then by parameter name */
  const tg_node **an = arena_array(L->m->arena, (size_t)(g->params.n ? g->params.n : 1), sizeof(tg_node *));
  int given = call->args.n + call->kws.n;
  if (given != g->params.n) {
    lerr(L, call->loc, "graph '%s' takes %d argument%s but %d %s given", g->name, g->params.n,
         g->params.n == 1 ? "" : "s", given, given == 1 ? "was" : "were");
    lnote(L, g->loc, "'%s' defined here", g->name);
    return tv_err();
  }
  for (int i = 0; i < call->args.n; i++) an[i] = call->args.v[i];
  for (int k = 0; k < call->kws.n; k++) {
    const tg_kwarg *kw = &call->kws.v[k];
    int found = -1;
    for (int i = 0; i < g->params.n; i++)
      if (strcmp(g->params.v[i].name, kw->name) == 0) found = i;
    if (found < 0 || an[found]) {
      lerr(L, kw->loc, found < 0 ? "graph '%s' has no parameter '%s'" : "graph '%s': argument '%s' given twice",
           g->name, kw->name);
      lnote(L, g->loc, "'%s' defined here", g->name);
      return tv_err();
    }
    an[found] = kw->value;
  }
  if (G->state[gi] == GS_NEW) check_graph(G, gi, L->depth);
  tv *args = arena_array(L->m->arena, (size_t)(g->params.n ? g->params.n : 1), sizeof(tv));
  bool ok = fe_tg_graph_args(L, g, an, args);
  if (G->state[gi] != GS_OK) {
    L->errors++; /* reported where the callee is defined */
    return tv_err();
  }
  if (!ok) return tv_err();
  const char *saved_path = L->path, *saved_op = L->cur_op;
  bool saved_quiet = L->quiet;
  L->path = arena_printf(L->m->arena, "%s/%s", L->path, g->name);
  L->quiet = true;
  int errs = L->errors;
  tv r = lower_body(L, g, args);
  if (L->errors != errs && !G->too_big && !G->limit_hit)
    diag_error(L->p->d, call->loc, "internal error: graph '%s' checked but failed when inlined", g->name);
  L->quiet = saved_quiet;
  L->path = saved_path;
  L->cur_op = saved_op;
  return r;
}

static bool lower_graph(tg_glob *G, const tg_graph *g, ir_module *m, lctx *L, int depth, bool quiet);
static void check_graph(tg_glob *G, int gi, int depth);

const tg_graph *fe_tg_graph(lctx *L, int gi) { return L->g->p->graphs.v[gi]; }

ir_comp_id fe_tg_graph_own_comp(lctx *L, const tg_node *at, int gi) {
  tg_glob *G = L->g;
  const tg_graph *g = G->p->graphs.v[gi];
  if (G->state[gi] == GS_CHECKING) {
    lerr(L, at->loc, "graph '%s' differentiates itself (graphs are inlined, so they cannot recurse)", g->name);
    return IR_NONE;
  }
  if (G->state[gi] == GS_NEW) check_graph(G, gi, L->depth);
  if (G->state[gi] != GS_OK) {
    L->errors++; /* reported where the graph is defined */
    return IR_NONE;
  }
  lctx L2;
  ir_comp_id entry = L->m->entry;
  bool ok = lower_graph(G, g, L->m, &L2, L->depth, true);
  L->m->entry = entry;
  if (!ok) {
    L->errors++;
    return IR_NONE;
  }
  return L2.comp;
}

ir_comp_id fe_tg_graph_comp(lctx *L, const tg_node *where, int gi, const ir_shape *st, int n,
                            bool as_tuple) {
  tg_glob *G = L->g;
  const tg_graph *g = G->p->graphs.v[gi];
  if (g->params.n != n) {
    lerr(L, where->loc, "graph '%s' takes %d parameter%s but is given %d value%s", g->name,
         g->params.n, g->params.n == 1 ? "" : "s", n, n == 1 ? "" : "s");
    lnote(L, g->loc, "'%s' defined here", g->name);
    return IR_NONE;
  }
  for (int i = 0; i < n; i++) {
    ir_shape want;
    if (fe_tg_type_shape(g->params.v[i].type, &want) && !ir_shape_equal(&want, &st[i])) {
      lerr(L, where->loc, "parameter '%s' of '%s' is %s but is given %s", g->params.v[i].name,
           g->name, lshape_str(L, &want), lshape_str(L, &st[i]));
      lnote(L, g->params.v[i].loc, "parameter declared here");
      return IR_NONE;
    }
  }
  if (G->state[gi] == GS_NEW) check_graph(G, gi, L->depth);
  if (G->state[gi] != GS_OK) {
    L->errors++; /* reported where the graph is defined */
    return IR_NONE;
  }
  ir_comp_id saved = L->comp, c = ir_comp_add(L->m, ir_unique_name(L->m, g->name));
  L->comp = c;
  ir_shape ts;
  memset(&ts, 0, sizeof ts);
  ts.type = IR_TUPLE;
  ts.ntuple = n;
  ts.tuple = (ir_shape *)st;
  ir_attrs pa;
  memset(&pa, 0, sizeof pa);
  ir_id p = lemit(L, IR_OP_PARAMETER, NULL, 0, &pa, NULL, 0, &ts, where->loc, g->name);
  tv *args = arena_array(L->m->arena, (size_t)(n ? n : 1), sizeof(tv));
  for (int i = 0; i < n; i++) {
    ir_attrs ga;
    memset(&ga, 0, sizeof ga);
    ga.index = i;
    args[i] = tv_tensor(lemit(L, IR_OP_GET_TUPLE_ELEMENT, &p, 1, &ga, NULL, 0, NULL, where->loc,
                              g->name));
  }
  const char *saved_path = L->path;
  bool saved_quiet = L->quiet;
  L->path = arena_printf(L->m->arena, "%s/%s", L->path, g->name);
  L->quiet = true;
  tv r = lower_body(L, g, args);
  L->quiet = saved_quiet;
  L->path = saved_path;
  ir_id root = IR_NONE;
  if (r.k == TV_MULTI || (r.k == TV_TENSOR && as_tuple)) {
    bool multi = r.k == TV_MULTI;
    root = lemit(L, IR_OP_TUPLE, multi ? r.multi : &r.id, multi ? r.nmulti : 1, NULL, NULL, 0,
                 NULL, where->loc, g->name);
  } else if (r.k == TV_TENSOR) {
    root = r.id;
  }
  L->comp = saved;
  if (root == IR_NONE) return IR_NONE;
  ir_comp_get(L->m, c)->root = root;
  ir_comp_finish(L->m, c);
  return c;
}

static void ctx_init(lctx *L, tg_glob *G, ir_module *m, const tg_graph *g) {
  memset(L, 0, sizeof *L);
  L->p = G->p;
  L->g = G;
  L->m = m;
  L->file = arena_strdup(m->arena, G->p->file);
  L->path = arena_strdup(m->arena, g->name);
  L->comp = ir_comp_add(m, ir_unique_name(m, g->name));
  ir_comp_get(m, L->comp)->loc = (src_loc){L->file, g->loc.line, g->loc.col};
  L->scope = graph_scope(L);
}

/* Lowers g as the entry computation of m; returns false on errors. depth
 * is the expression depth of the caller whose call made us check g (so
 * the C stack stays bounded by the nesting limit). */
static bool lower_graph(tg_glob *G, const tg_graph *g, ir_module *m, lctx *L, int depth, bool quiet) {
  ctx_init(L, G, m, g);
  L->depth = depth;
  L->quiet = quiet;
  tv *args = arena_array(m->arena, (size_t)(g->params.n ? g->params.n : 1), sizeof(tv));
  for (int i = 0; i < g->params.n; i++) {
    ir_shape s;
    fe_tg_type_shape(g->params.v[i].type, &s);
    args[i] = tv_tensor(lparam(L, i, &s, g->params.v[i].name, g->params.v[i].loc));
    if (args[i].id == IR_NONE) return false;
  }
  tv r = lower_body(L, g, args);
  if (r.k == TV_ERR || L->errors) return false;
  ir_comp *c = ir_comp_get(m, L->comp);
  if (r.k == TV_MULTI) {
    L->cur_op = "return";
    c->root = lemit(L, IR_OP_TUPLE, r.multi, r.nmulti, NULL, NULL, 0, NULL, g->end_loc, "return");
    if (c->root == IR_NONE) return false;
  } else {
    c->root = r.id;
  }
  ir_comp_finish(m, L->comp);
  m->entry = L->comp;
  return true;
}

static void check_graph(tg_glob *G, int gi, int depth) {
  const tg_graph *g = G->p->graphs.v[gi];
  G->state[gi] = GS_CHECKING;
  VEC_PUSH(G->p->a, G->stack, gi);
  ir_module *m = ir_module_create(g->name);
  lctx L;
  bool ok = lower_graph(G, g, m, &L, depth, false);
  if (ok && ir_verify(m, G->p->d) != 0) {
    src_loc l = {G->p->file, g->loc.line, g->loc.col};
    diag_error(G->p->d, l, "internal error: graph '%s' lowers to a module that does not verify", g->name);
    ok = false;
  }
  ir_module_destroy(m);
  G->stack.n--;
  G->state[gi] = ok ? GS_OK : GS_FAILED;
}

/* Declarations: unique graph names that do not hide builtins, parameter
 * types with valid sizes, unique parameter names. */
static bool check_decls(tg_glob *G) {
  tg_parser *p = G->p;
  bool ok = true;
  for (int i = 0; i < p->graphs.n; i++) {
    tg_graph *g = p->graphs.v[i];
    size_t nl = strlen(g->name);
    int32_t prev = strmap_get(G->graphs, g->name, nl);
    if (prev >= 0) {
      diag_error(p->d, g->loc, "graph '%s' is defined twice", g->name);
      diag_note(p->d, p->graphs.v[prev]->loc, "first definition here");
      ok = false;
    } else if (fe_tg_builtin(g->name)) {
      diag_error(p->d, g->loc, "graph '%s' has the name of a builtin operation", g->name);
      ok = false;
    } else {
      strmap_put(G->graphs, g->name, nl, i);
    }
    strmap *seen = strmap_create(p->a);
    for (int k = 0; k < g->params.n; k++) {
      tg_param *pp = &g->params.v[k];
      ir_shape s;
      if (strmap_get(seen, pp->name, strlen(pp->name)) >= 0) {
        diag_error(p->d, pp->loc, "parameter '%s' is declared twice", pp->name);
        ok = false;
      }
      strmap_put(seen, pp->name, strlen(pp->name), k);
      if (!fe_tg_type_shape(pp->type, &s)) {
        diag_error(p->d, pp->type->loc, "parameter '%s': shape is too large (more than 2^40 elements)", pp->name);
        ok = false;
      }
    }
    for (int k = 0; k < g->results.n; k++) {
      ir_shape s;
      if (!fe_tg_type_shape(g->results.v[k], &s)) {
        diag_error(p->d, g->results.v[k]->loc, "result shape is too large (more than 2^40 elements)");
        ok = false;
      }
    }
  }
  return ok;
}

ir_module *fe_tg_lower(tg_parser *p, const char *entry) {
  int errors0 = diag_error_count(p->d);
  tg_glob G;
  memset(&G, 0, sizeof G);
  G.p = p;
  G.graphs = strmap_create(p->a);
  G.state = arena_alloc(p->a, (size_t)p->graphs.n + 1);
  src_loc fileloc = {p->file, 0, 0};
  if (p->graphs.n == 0) {
    diag_error(p->d, fileloc, "no graph in file");
    return NULL;
  }
  if (!check_decls(&G)) return NULL;
  for (int i = 0; i < p->graphs.n; i++)
    if (G.state[i] == GS_NEW && !G.too_big && !G.limit_hit) check_graph(&G, i, 0);
  if (diag_error_count(p->d) != errors0) return NULL;
  int ei = p->graphs.n - 1;
  if (entry) {
    ei = strmap_get(G.graphs, entry, strlen(entry));
    if (ei < 0) {
      diag_error(p->d, fileloc, "no graph named '%s' in the file", entry);
      return NULL;
    }
  }
  const tg_graph *g = p->graphs.v[ei];
  ir_module *m = ir_module_create(g->name);
  m->source_file = arena_strdup(m->arena, p->file);
  lctx L;
  G.total = 0; /* the entry alone is bounded by TG_MAX_INSTS */
  G.final = true;
  G.stack.n = 0;
  VEC_PUSH(p->a, G.stack, ei);
  G.state[ei] = GS_CHECKING;
  bool ok = lower_graph(&G, g, m, &L, 0, false);
  G.state[ei] = GS_OK;
  if (!ok || diag_error_count(p->d) != errors0) {
    ir_module_destroy(m);
    return NULL;
  }
  if (ir_verify(m, p->d) != 0) {
    diag_error(p->d, fileloc, "internal error: the lowered module does not verify");
    ir_module_destroy(m);
    return NULL;
  }
  return m;
}
