/* build.c: from the HLO syntax tree to a verified ir_module.
 *
 * Steps: module header; computations (names, the entry: the one marked
 * ENTRY, else the last); instruction names (unique per computation; a name
 * reused in another computation is renamed "name.N" since IR names are
 * unique per module; nested anonymous instructions are named
 * "<opcode>.anon[.N]" as XLA does); operand resolution (forward references
 * allowed, cycles reported); then, in operand order, each instruction's op,
 * operands, attributes and shape (the written shape is authoritative; a
 * missing one is inferred); parameters numbered 0..n-1 without gaps;
 * signature checks; finally ir_verify. Computations are built callees
 * first so that inference can see the shapes they return.
 *
 * Errors are collected (many per run); an instruction whose own errors
 * were reported is marked bad and its users skip checks that would only
 * repeat them. */
#include "frontend/hlo/hlo.h"

#include "hlo_parse.h"

#include <stdlib.h>

/* Opcodes of older XLA versions outside ops.def: "unsupported" rather than
 * "unknown" (every opcode of XLA's current parser is an ops.def row). */
static const char *const xla_only_ops[] = {"tuple-select", "trace"};

enum { ST_NEW, ST_ACTIVE, ST_DONE, ST_FAILED };

typedef struct builder {
  hlo_parser *p;
  ir_module *m;
  strmap *comp_ids;   /* computation name -> index into p->comps */
  strmap *used;       /* every instruction name given out */
  strmap *next;       /* base name -> the next suffix fresh_name tries */
  strmap *owner;      /* written instruction name -> first computation index */
  hlo_comp **by_id;   /* computation id -> its tree */
  ir_shape *os;       /* build_inst's operand shapes and ids, reused: */
  ir_id *ids;         /* cap entries each, grown in the scratch arena */
  int cap;
} builder;

/* A free name among base, base.1, base.2, ...: the suffixes tried for a
 * base only grow (b->next), so renaming a name that n computations reuse
 * costs O(n) in all, not O(n^2). */
static const char *fresh_name(builder *b, const char *base) {
  size_t bl = strlen(base);
  if (strmap_get(b->used, base, bl) < 0) {
    strmap_put(b->used, base, bl, 1);
    return arena_strdup(b->m->arena, base);
  }
  int32_t k = strmap_get(b->next, base, bl);
  if (k < 1) k = 1;
  strbuf sb;
  sb_init(&sb);
  for (;; k++) {
    sb.len = 0;
    sb_printf(&sb, "%s.%d", base, (int)k);
    if (strmap_get(b->used, sb_str(&sb), sb.len) < 0) break;
  }
  const char *n = arena_strdup(b->m->arena, sb_str(&sb));
  sb_free(&sb);
  strmap_put(b->used, n, strlen(n), 1);
  strmap_put(b->next, base, bl, k + 1);
  return n;
}

/* ---- computation order: callees first ---- */

typedef VEC(int) intvec;

/* The index of a computation that hi calls and that is not yet placed
 * (state ST_NEW), or -1. Names are read as written: one name, or a braced
 * list of names. */
static int new_callee(builder *b, const hlo_inst *hi) {
  hlo_parser *p = b->p;
  for (int i = 0; i < hi->attrs.n; i++) {
    const hlo_tok *v = hi->attrs.v[i].value;
    if (!fe_hlo_is_comp_attr(hi->attrs.v[i].name->text)) continue;
    int n = v->kind == HLO_GROUP ? v->n : 1;
    for (int j = 0; j < n; j++) {
      const hlo_tok *t = v->kind == HLO_GROUP ? v->kids[j] : v;
      if (t->kind != NAME) continue;
      int32_t x = strmap_get(b->comp_ids, t->text, (size_t)t->len);
      if (x >= 0 && p->comps.v[x]->state == ST_NEW) return x;
    }
  }
  return -1;
}

static void order_comps(builder *b, int ci, intvec *out) {
  hlo_parser *p = b->p;
  /* iterative DFS over to_apply= / calls= references */
  intvec stack = {0}, next = {0};
  VEC_PUSH(p->scratch, stack, ci);
  VEC_PUSH(p->scratch, next, 0);
  p->comps.v[ci]->state = ST_ACTIVE;
  while (stack.n) {
    hlo_comp *c = p->comps.v[stack.v[stack.n - 1]];
    int *k = &next.v[next.n - 1];
    int callee = -1;
    while (*k < c->insts.n && callee < 0) {
      callee = new_callee(b, c->insts.v[*k]);
      if (callee < 0) (*k)++; /* all of this instruction's callees are placed */
    }
    if (callee >= 0) {
      p->comps.v[callee]->state = ST_ACTIVE;
      VEC_PUSH(p->scratch, stack, callee);
      VEC_PUSH(p->scratch, next, 0);
    } else {
      c->state = ST_DONE;
      VEC_PUSH(p->scratch, *out, stack.v[stack.n - 1]);
      stack.n--;
      next.n--;
    }
  }
}

/* ---- one computation ---- */

typedef struct comp_ctx {
  builder *b;
  hlo_comp *c;
  strmap *names;      /* written name -> instruction index */
  ir_comp_id id;
} comp_ctx;

static bool known_xla_op(const char *s) {
  for (size_t i = 0; i < COUNTOF(xla_only_ops); i++)
    if (strcmp(s, xla_only_ops[i]) == 0) return true;
  return false;
}

static const char *shape_str(hlo_parser *p, const ir_shape *s) {
  strbuf sb;
  sb_init(&sb);
  ir_shape_print(&sb, s, false);
  const char *r = arena_strdup(p->scratch, sb_str(&sb));
  sb_free(&sb);
  return r;
}

/* Resolves operand o of hi to an instruction index, or -1 (reported). */
static int resolve(comp_ctx *cc, const hlo_operand *o) {
  hlo_parser *p = cc->b->p;
  if (o->kind == HLO_OPND_NESTED) return o->nested->index;
  if (o->kind == HLO_OPND_INT) return -1;
  int32_t x = strmap_get(cc->names, o->tok->text, (size_t)o->tok->len);
  if (x >= 0) return x;
  /* a name from another computation gets a hint */
  int32_t k = strmap_get(cc->b->owner, o->tok->text, (size_t)o->tok->len);
  if (k >= 0 && p->comps.v[k] != cc->c) {
    fe_hlo_error(p, o->tok->loc,
                 "use of undefined instruction '%s' (it is defined in computation "
                 "'%s'; operands must come from the same computation)",
                 o->tok->text, p->comps.v[k]->name->text);
    return -1;
  }
  fe_hlo_error(p, o->tok->loc, "use of undefined instruction '%s'", o->tok->text);
  return -1;
}

/* Orders instructions so that operands come first (text order where it
 * already is so); reports cycles. Returns the order (indices). */
static int *topo(comp_ctx *cc, int **opidx) {
  hlo_parser *p = cc->b->p;
  hlo_comp *c = cc->c;
  int n = c->insts.n;
  int *order = arena_array(p->scratch, (size_t)n + 1, sizeof(int));
  int *stack = arena_array(p->scratch, (size_t)n + 1, sizeof(int));
  int *next = arena_array(p->scratch, (size_t)n + 1, sizeof(int));
  int no = 0;
  for (int s = 0; s < n; s++) {
    if (c->insts.v[s]->state != ST_NEW) continue;
    int sp = 0;
    stack[sp] = s;
    next[sp++] = 0;
    c->insts.v[s]->state = ST_ACTIVE;
    while (sp) {
      int x = stack[sp - 1];
      hlo_inst *hi = c->insts.v[x];
      if (next[sp - 1] < hi->ops.n) {
        int o = opidx[x][next[sp - 1]++];
        if (o < 0) continue;
        hlo_inst *oi = c->insts.v[o];
        if (oi->state == ST_ACTIVE) {
          fe_hlo_error(p, hi->loc, "instruction '%s' depends on itself (a cycle through '%s')",
                       hi->final_name, oi->final_name);
          hi->bad = true;
          opidx[x][next[sp - 1] - 1] = -1;
        } else if (oi->state == ST_NEW) {
          oi->state = ST_ACTIVE;
          stack[sp] = o;
          next[sp++] = 0;
        }
      } else {
        hi->state = ST_DONE;
        order[no++] = x;
        sp--;
      }
    }
  }
  return order;
}

static void init_inst(ir_inst_proto *in) {
  memset(in, 0, sizeof *in);
  in->a.preferred_type = IR_TYPE_INVALID;
}

/* Builds instruction hi into *in; false when it has errors. */
static bool build_inst(comp_ctx *cc, hlo_inst *hi, int *ops, ir_inst_proto *in) {
  builder *b = cc->b;
  hlo_parser *p = b->p;
  init_inst(in);
  in->name = hi->final_name;
  in->loc = hi->loc;
  ir_op op = ir_op_from_name(hi->opcode->text, (size_t)hi->opcode->len);
  if (op == IR_OP__COUNT) {
    if (known_xla_op(hi->opcode->text))
      fe_hlo_error(p, hi->opcode->loc, "unsupported op '%s' (not in tpucc's op set)",
                   hi->opcode->text);
    else
      fe_hlo_error(p, hi->opcode->loc, "unknown op '%s'", hi->opcode->text);
    return false;
  }
  in->op = op;
  bool ok = true;
  if (hi->shape && hi->shape->type == IR_TYPE_INVALID) ok = false;

  /* operands */
  int nops = hi->ops.n;
  if (nops + 1 > b->cap) {
    b->cap = nops + 1 > 2 * b->cap ? nops + 1 : 2 * b->cap;
    b->os = arena_array(p->scratch, (size_t)b->cap, sizeof(ir_shape));
    b->ids = arena_array(p->scratch, (size_t)b->cap, sizeof(ir_id));
  }
  ir_shape *os = b->os;
  ir_id *ids = b->ids;
  if (op == IR_OP_PARAMETER) {
    if (nops != 1 || hi->ops.v[0].kind != HLO_OPND_INT) {
      fe_hlo_error(p, hi->opcode->loc, "parameter takes its number, as in parameter(0)");
      return false;
    }
    int64_t v;
    if (!fe_hlo_int(p, hi->ops.v[0].tok, &v)) return false;
    if (v < 0 || v >= cc->c->insts.n) {
      fe_hlo_error(p, hi->ops.v[0].tok->loc,
                   "parameter number %lld is out of range (the computation has %d "
                   "instructions)", (long long)v, cc->c->insts.n);
      return false;
    }
    in->a.parameter_number = v;
    nops = 0;
  } else {
    for (int i = 0; i < nops; i++) {
      const hlo_operand *o = &hi->ops.v[i];
      if (o->kind == HLO_OPND_INT) {
        fe_hlo_error(p, o->tok->loc, "operand %d of %s is a number; expected an instruction",
                     i, hi->opcode->text);
        ok = false;
        continue;
      }
      if (ops[i] < 0) {
        ok = false;
        continue;
      }
      hlo_inst *oi = cc->c->insts.v[ops[i]];
      if (oi->bad) {
        ok = false;
        continue;
      }
      ir_inst *src = ir_inst_get(b->m, cc->id, oi->id);
      os[i] = *src->shape;
      ids[i] = oi->id;
      if (o->shape && o->shape->type != IR_TYPE_INVALID && !ir_shape_equal(o->shape, src->shape)) {
        fe_hlo_error(p, o->shape_loc, "operand %d of '%s' is written as %s but '%s' is %s", i,
                     hi->final_name, shape_str(p, o->shape), oi->final_name,
                     shape_str(p, src->shape));
        ok = false;
      }
    }
  }
  if (!ok) return false;
  int arity = ir_op_arity(op);
  if (arity >= 0 && nops != arity) {
    fe_hlo_error(p, hi->opcode->loc, "%s takes %d operand%s, got %d", ir_op_name(op), arity,
                 arity == 1 ? "" : "s", nops);
    return false;
  }
  in->nops = nops;
  in->ops = ids;

  /* attributes */
  hlo_attr_ctx ac = {p, b->comp_ids, in, os, nops};
  if (!fe_hlo_attrs(&ac, hi)) ok = false;
  for (int i = 0; i < in->ncalls; i++) {
    /* called computations are built first; a callee that failed is bad */
    hlo_comp *callee = b->by_id[in->calls[i]];
    if (!callee || callee->state == ST_FAILED) {
      ok = false;
    } else if (callee->state != ST_DONE) {
      fe_hlo_error(p, hi->loc, "'%s' calls computation '%s', which is still being built: "
                   "computations may not call themselves, directly or indirectly",
                   hi->final_name, callee->name->text);
      ok = false;
    }
  }

  /* constant literal (the grammar gives one to constant, and only to it) */
  if (op == IR_OP_CONSTANT) {
    if (!hi->shape) {
      fe_hlo_error(p, hi->opcode->loc, "constant needs a shape, as in f32[] constant(1)");
      return false;
    }
    if (ok) {
      in->a.literal = fe_hlo_literal(p, hi->literal, hi->shape);
      if (!in->a.literal) ok = false;
    }
  }
  if (!ok) return false;

  /* shape */
  if (hi->shape) {
    in->shape = *hi->shape;
  } else if (op == IR_OP_PARAMETER) {
    fe_hlo_error(p, hi->opcode->loc, "parameter needs a shape, as in f32[2] parameter(0)");
    return false;
  } else if (ir_op_flags(op) & OPF_DECLARED) {
    fe_hlo_error(p, hi->opcode->loc, "%s needs its result shape written, as in "
                 "f32[2] %s(...)", ir_op_name(op), ir_op_name(op));
    return false;
  } else {
    char err[256];
    if (!ir_infer_shape(b->m, op, os, nops, &in->a, in->calls, in->ncalls, &in->shape, err,
                        sizeof err)) {
      fe_hlo_error(p, hi->loc, "cannot infer the shape of '%s': %s", hi->final_name, err);
      return false;
    }
  }
  return true;
}

static void build_comp(builder *b, hlo_comp *c) {
  hlo_parser *p = b->p;
  comp_ctx cc = {b, c, strmap_create_sized(p->scratch, c->insts.n), c->id};
  int n = c->insts.n;
  ir_comp *irc = ir_comp_get(b->m, c->id);
  /* names were assigned; index them by the written names */
  for (int i = 0; i < n; i++) {
    hlo_inst *hi = c->insts.v[i];
    hi->index = i;
    hi->state = ST_NEW;
    if (hi->name) strmap_put(cc.names, hi->name->text, (size_t)hi->name->len, i);
  }
  int **opidx = arena_array(p->scratch, (size_t)n + 1, sizeof(int *));
  for (int i = 0; i < n; i++) {
    hlo_inst *hi = c->insts.v[i];
    opidx[i] = arena_array(p->scratch, (size_t)hi->ops.n + 1, sizeof(int));
    for (int k = 0; k < hi->ops.n; k++) {
      opidx[i][k] = resolve(&cc, &hi->ops.v[k]);
      if (opidx[i][k] < 0 && hi->ops.v[k].kind != HLO_OPND_INT) hi->bad = true;
    }
  }
  int *order = topo(&cc, opidx);
  bool comp_ok = true;
  for (int k = 0; k < n; k++) {
    hlo_inst *hi = c->insts.v[order[k]];
    ir_inst_proto in;
    if (hi->bad) {
      /* errors already reported (undefined operand, cycle) */
      comp_ok = false;
      continue;
    }
    if (!build_inst(&cc, hi, opidx[order[k]], &in)) {
      hi->bad = true;
      comp_ok = false;
      continue;
    }
    hi->id = ir_inst_add(b->m, c->id, &in);
  }
  /* any user of a bad instruction is bad too (already skipped above) */
  if (!comp_ok) {
    c->state = ST_FAILED; /* callers skip checks */
    return;
  }

  /* root */
  hlo_inst *root = NULL;
  for (int i = 0; i < n; i++) {
    hlo_inst *hi = c->insts.v[i];
    if (!hi->root) continue;
    if (root) {
      fe_hlo_error(p, hi->loc, "computation '%s' has more than one ROOT ('%s' and '%s')",
                   c->name->text, root->final_name, hi->final_name);
      comp_ok = false;
    } else {
      root = hi;
    }
  }
  if (!root) root = c->insts.v[n - 1];
  irc->root = root->id;

  /* parameters: numbers 0..k-1, each once */
  int nparams = 0;
  for (int i = 0; i < n; i++)
    if (ir_inst_get(b->m, c->id, c->insts.v[i]->id)->op == IR_OP_PARAMETER) nparams++;
  hlo_inst **byno = arena_array(p->scratch, (size_t)nparams + 1, sizeof(hlo_inst *));
  for (int i = 0; i < n; i++) {
    hlo_inst *hi = c->insts.v[i];
    ir_inst *in = ir_inst_get(b->m, c->id, hi->id);
    if (in->op != IR_OP_PARAMETER) continue;
    int64_t k = in->a->parameter_number;
    if (k >= nparams) {
      fe_hlo_error(p, hi->loc,
                   "parameter number %lld of '%s' is out of range: computation '%s' has %d "
                   "parameters, numbered from 0", (long long)k, hi->final_name, c->name->text,
                   nparams);
      comp_ok = false;
    } else if (byno[k]) {
      fe_hlo_error(p, hi->loc, "parameter number %lld is used twice ('%s' and '%s')",
                   (long long)k, byno[k]->final_name, hi->final_name);
      comp_ok = false;
    } else {
      byno[k] = hi;
    }
  }
  if (!comp_ok) {
    c->state = ST_FAILED;
    return;
  }
  ir_comp_finish(b->m, c->id);

  /* the signature, when written, must agree */
  if (c->has_sig) {
    if (c->params.n != nparams) {
      fe_hlo_error(p, c->name->loc,
                   "signature of '%s' lists %d parameters but the body has %d",
                   c->name->text, c->params.n, nparams);
      comp_ok = false;
    } else {
      for (int i = 0; i < nparams; i++) {
        const ir_shape *want = c->params.v[i].shape;
        const ir_shape *got = ir_inst_get(b->m, c->id, byno[i]->id)->shape;
        if (want->type != IR_TYPE_INVALID && !ir_shape_equal(want, got)) {
          fe_hlo_error(p, c->params.v[i].name->loc,
                       "signature gives parameter %d as %s but '%s' is %s", i,
                       shape_str(p, want), byno[i]->final_name, shape_str(p, got));
          comp_ok = false;
        }
      }
    }
    const ir_shape *rs = ir_inst_get(b->m, c->id, root->id)->shape;
    if (c->result && c->result->type != IR_TYPE_INVALID && !ir_shape_equal(c->result, rs)) {
      fe_hlo_error(p, c->result_loc, "signature gives the result as %s but ROOT '%s' is %s",
                   shape_str(p, c->result), root->final_name, shape_str(p, rs));
      comp_ok = false;
    }
  }
  c->state = comp_ok ? ST_DONE : ST_FAILED;
}

/* The header's entry_computation_layout must describe the entry: shapes
 * must agree (error); a different layout is reported as a warning, since
 * tpucc keeps the instructions' layouts and prints the layout from them. */
static void check_entry_layout(builder *b) {
  hlo_parser *p = b->p;
  ir_module *m = b->m;
  if (!p->ecl_params) return;
  ir_comp *e = ir_comp_get(m, m->entry);
  if (p->ecl_params->n != e->nparams) {
    fe_hlo_error(p, p->ecl_loc,
                 "entry_computation_layout lists %d parameters but the entry computation '%s' "
                 "has %d", p->ecl_params->n, e->name, e->nparams);
    return;
  }
  for (int i = 0; i <= e->nparams; i++) {
    const ir_shape *want = i < e->nparams ? p->ecl_params->v[i] : p->ecl_result;
    ir_id id = i < e->nparams ? e->params[i] : e->root;
    const ir_inst *in = ir_inst_get(m, m->entry, id);
    char what[64];
    if (i < e->nparams) snprintf(what, sizeof what, "parameter %d", i);
    else snprintf(what, sizeof what, "the result");
    if (want->type == IR_TYPE_INVALID) continue;
    if (!ir_shape_equal(want, in->shape)) {
      fe_hlo_error(p, p->ecl_loc, "entry_computation_layout gives %s as %s but '%s' is %s", what,
                   shape_str(p, want), in->info->name,
                   shape_str(p, in->shape));
    } else if (!ir_shape_equal_with_layout(want, in->shape)) {
      strbuf x, y;
      sb_init(&x);
      sb_init(&y);
      ir_shape_print(&x, want, true);
      ir_shape_print(&y, in->shape, true);
      fe_hlo_warning(p, p->ecl_loc,
                     "entry_computation_layout gives %s the layout %s but '%s' has %s; tpucc "
                     "keeps the instruction's layout", what, sb_str(&x),
                     in->info->name, sb_str(&y));
      sb_free(&x);
      sb_free(&y);
    }
  }
}

/* Attributes after a computation's body: execution_thread="..." (XLA's
 * only one), kept verbatim. */
static void comp_attrs(hlo_parser *p, const hlo_comp *c, ir_comp *ic) {
  if (!c->attrs.n) return;
  ic->raw = arena_array(p->m->arena, (size_t)c->attrs.n, sizeof(ir_raw_attr));
  for (int i = 0; i < c->attrs.n; i++) {
    const hlo_tok *k = c->attrs.v[i].name, *v = c->attrs.v[i].value;
    if (strcmp(k->text, "execution_thread") != 0 || v->kind != STRING) {
      fe_hlo_error(p, k->loc, strcmp(k->text, "execution_thread") != 0
                                  ? "unsupported computation attribute '%s'"
                                  : "bad value for computation attribute '%s': expected a string",
                   k->text);
      continue;
    }
    for (int j = 0; j < ic->nraw; j++)
      if (strcmp(ic->raw[j].name, k->text) == 0) {
        fe_hlo_error(p, k->loc, "computation attribute '%s' is given twice", k->text);
        break;
      }
    ic->raw[ic->nraw].name = arena_strdup(p->m->arena, k->text);
    ic->raw[ic->nraw].text = fe_hlo_tok_text(p, v);
    ic->nraw++;
  }
}

ir_module *fe_hlo_build(hlo_parser *p) {
  int ninsts = 0;
  for (int i = 0; i < p->comps.n; i++) ninsts += p->comps.v[i]->insts.n;
  builder b = {p, p->m, strmap_create(p->scratch), strmap_create_sized(p->scratch, ninsts),
               strmap_create(p->scratch), NULL, NULL, NULL, NULL, 0};
  b.by_id = arena_array(p->scratch, (size_t)p->comps.n + 1, sizeof(hlo_comp *));
  ir_module *m = p->m;
  fe_hlo_header(p);

  /* computations and the entry */
  int entry = -1;
  for (int i = 0; i < p->comps.n; i++) {
    hlo_comp *c = p->comps.v[i];
    c->state = ST_NEW;
    int32_t prev = strmap_get(b.comp_ids, c->name->text, (size_t)c->name->len);
    if (prev >= 0) {
      fe_hlo_error(p, c->name->loc, "duplicate computation name '%s'", c->name->text);
      fe_hlo_note(p, p->comps.v[prev]->name->loc, "'%s' was first defined here",
                c->name->text);
      c->state = ST_DONE; /* never built */
      c->id = IR_NONE;
      continue;
    }
    strmap_put(b.comp_ids, c->name->text, (size_t)c->name->len, i);
    c->id = ir_comp_add(m, c->name->text);
    b.by_id[c->id] = c;
    ir_comp_get(m, c->id)->loc = c->name->loc;
    comp_attrs(p, c, ir_comp_get(m, c->id));
    if (c->entry) {
      if (entry >= 0) {
        fe_hlo_error(p, c->name->loc, "more than one ENTRY computation ('%s' and '%s')",
                     p->comps.v[entry]->name->text, c->name->text);
      } else {
        entry = i;
      }
    }
  }
  if (entry < 0) entry = p->comps.n - 1;
  m->entry = p->comps.v[entry]->id;
  if (!p->module_name) m->name = arena_strdup(m->arena, p->comps.v[entry]->name->text);

  /* instruction names: written names first (module-wide), then renames of
   * names reused across computations, then the anonymous ones */
  int before = p->errors;
  strmap *owner = strmap_create_sized(p->scratch, ninsts);
  b.owner = owner;
  for (int i = 0; i < p->comps.n; i++) {
    hlo_comp *c = p->comps.v[i];
    if (c->id == IR_NONE) continue;
    strmap *local = strmap_create_sized(p->scratch, c->insts.n);
    for (int k = 0; k < c->insts.n; k++) {
      hlo_inst *hi = c->insts.v[k];
      hi->loc = hi->name ? hi->name->loc : hi->opcode->loc;
      if (!hi->name) continue;
      int32_t prev = strmap_get(local, hi->name->text, (size_t)hi->name->len);
      if (prev >= 0) {
        fe_hlo_error(p, hi->name->loc, "duplicate instruction name '%s'", hi->name->text);
        fe_hlo_note(p, c->insts.v[prev]->name->loc, "'%s' was first defined here",
                  hi->name->text);
        hi->bad = true;
        continue;
      }
      strmap_put(local, hi->name->text, (size_t)hi->name->len, k);
      if (strmap_get(owner, hi->name->text, (size_t)hi->name->len) < 0) {
        strmap_put(owner, hi->name->text, (size_t)hi->name->len, i);
        strmap_put(b.used, hi->name->text, (size_t)hi->name->len, 1);
        hi->final_name = arena_strdup(m->arena, hi->name->text);
      }
    }
  }
  for (int i = 0; i < p->comps.n; i++) {
    hlo_comp *c = p->comps.v[i];
    if (c->id == IR_NONE) continue;
    for (int k = 0; k < c->insts.n; k++) {
      hlo_inst *hi = c->insts.v[k];
      if (hi->final_name) continue;
      if (hi->name) {
        hi->final_name = fresh_name(&b, hi->name->text);
      } else {
        char *base = arena_printf(p->scratch, "%s.anon", hi->opcode->text);
        hi->final_name = fresh_name(&b, base);
      }
    }
  }
  if (p->errors > before) return NULL;

  /* callees first */
  intvec order = {0};
  for (int i = 0; i < p->comps.n; i++)
    if (p->comps.v[i]->state == ST_NEW) order_comps(&b, i, &order);
  for (int i = 0; i < p->comps.n; i++)
    if (p->comps.v[i]->id != IR_NONE) p->comps.v[i]->state = ST_NEW;
  for (int k = 0; k < order.n; k++) {
    hlo_comp *c = p->comps.v[order.v[k]];
    if (c->id == IR_NONE) continue;
    build_comp(&b, c);
  }
  if (p->errors) return NULL;

  check_entry_layout(&b);
  if (p->errors) return NULL;

  /* fused computations are marked */
  for (int c = 0; c < m->comps.n; c++) {
    ir_comp *cp = &m->comps.v[c];
    for (int i = 0; i < cp->insts.n; i++) {
      ir_inst *in = &cp->insts.v[i];
      if (in->op == IR_OP_FUSION)
        for (int k = 0; k < in->ncalls; k++) ir_comp_get(m, in->calls[k])->is_fusion = true;
    }
  }
  fe_hlo_flush(p); /* warnings so far, before the verifier's reports */
  if (ir_verify(m, p->d) > 0) return NULL;
  return m;
}
