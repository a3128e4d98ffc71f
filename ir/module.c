/* module.c: creating modules, computations and instructions; unique
 * names; topological order; deep copies. */
#include "ir/ir.h"

#include <stdlib.h>

/* Per-module bookkeeping for unique names lives beside the module. */
typedef struct module_impl {
  ir_module m;
  strmap *names; /* every instruction name in use -> 1 */
  int64_t counter;
  strmap *shape_keys;             /* a shape's key (shape_key) -> index */
  VEC(const ir_shape *) shapes;   /* interned shapes */
} module_impl;

const ir_attrs ir_attrs_none = {.preferred_type = IR_TYPE_INVALID};
const ir_window ir_window_none;

ir_module *ir_module_create(const char *name) {
  arena *a = arena_create();
  module_impl *mi = arena_alloc(a, sizeof *mi);
  mi->m.arena = a;
  mi->m.name = arena_strdup(a, name ? name : "module");
  mi->m.entry = IR_NONE;
  mi->names = strmap_create(a);
  mi->shape_keys = strmap_create(a);
  return &mi->m;
}

void ir_module_destroy(ir_module *m) {
  if (m) arena_destroy(m->arena);
}

ir_comp_id ir_comp_add(ir_module *m, const char *name) {
  ir_comp c;
  memset(&c, 0, sizeof c);
  c.name = arena_strdup(m->arena, name ? name : "computation");
  c.root = IR_NONE;
  VEC_PUSH(m->arena, m->comps, c);
  return m->comps.n - 1;
}

ir_comp *ir_comp_get(ir_module *m, ir_comp_id c) {
  BASE_ASSERT(c >= 0 && c < m->comps.n);
  return &m->comps.v[c];
}

ir_inst *ir_inst_get(ir_module *m, ir_comp_id c, ir_id i) {
  ir_comp *cp = ir_comp_get(m, c);
  BASE_ASSERT(i >= 0 && i < cp->insts.n);
  return &cp->insts.v[i];
}

const char *ir_unique_name(ir_module *m, const char *base) {
  module_impl *mi = (module_impl *)m;
  size_t bl = strlen(base);
  if (strmap_get(mi->names, base, bl) < 0) {
    strmap_put(mi->names, base, bl, 1);
    return arena_strdup(m->arena, base);
  }
  for (;;) {
    char *n = arena_printf(m->arena, "%s.%lld", base, (long long)++mi->counter);
    size_t nl = strlen(n);
    if (strmap_get(mi->names, n, nl) < 0) {
      strmap_put(mi->names, n, nl, 1);
      return n;
    }
  }
}

static ir_ints dup_ints(arena *a, ir_ints v) {
  ir_ints r = v;
  r.v = v.n ? arena_dup(a, v.v, sizeof(int64_t) * (size_t)v.n) : NULL;
  return r;
}

/* Deep-copies every pointer field of an attribute set into arena a
 * (each kind's pointers; a LITERAL is shared, never written). */
static void dup_attrs(arena *a, ir_attrs *at) {
  for (int r = 0; r < ir_attr_count; r++) {
    const ir_attr_desc *d = &ir_attr_table[r];
    switch (d->kind) {
    case IR_AK_SLICE:
      *IR_ATTR_FIELD(at, d->g, ir_ints) = dup_ints(a, *IR_ATTR_FIELD(at, d->g, ir_ints));
      *IR_ATTR_FIELD(at, d->h, ir_ints) = dup_ints(a, *IR_ATTR_FIELD(at, d->h, ir_ints));
      /* fall through */
    case IR_AK_INTS: *IR_ATTR_FIELD(at, d->f, ir_ints) = dup_ints(a, *IR_ATTR_FIELD(at, d->f, ir_ints)); break;
    case IR_AK_PADS: {
      ir_padding_dim **p = IR_ATTR_FIELD(at, d->f, ir_padding_dim *);
      int32_t n = *IR_ATTR_FIELD(at, d->g, int32_t);
      if (n) *p = arena_dup(a, *p, sizeof(ir_padding_dim) * (size_t)n);
      break;
    }
    case IR_AK_GROUPS: {
      ir_replica_groups *rg = IR_ATTR_FIELD(at, d->f, ir_replica_groups);
      if (rg->ngroups) {
        ir_ints *g = arena_array(a, (size_t)rg->ngroups, sizeof(ir_ints));
        for (int i = 0; i < rg->ngroups; i++) g[i] = dup_ints(a, rg->groups[i]);
        rg->groups = g;
      }
      if (rg->iota) rg->iota = arena_strdup(a, rg->iota);
      break;
    }
    case IR_AK_WINDOW: {
      const ir_window **w = IR_ATTR_FIELD(at, d->f, const ir_window *);
      if (*w) *w = arena_dup(a, *w, sizeof **w);
      break;
    }
    case IR_AK_INT: case IR_AK_ENUM: case IR_AK_PREC: case IR_AK_CONV: case IR_AK_TYPE:
    case IR_AK_LITERAL: break;
    }
  }
}

/* Appends the bytes that identify s (type, dims, layout, tuple
 * elements) to b. */
static void shape_key(strbuf *b, const ir_shape *s) {
  sb_putn(b, (const char *)(&s->type), sizeof s->type);
  if (s->type == IR_TUPLE) {
    sb_putn(b, (const char *)(&s->ntuple), sizeof s->ntuple);
    for (int i = 0; i < s->ntuple; i++) shape_key(b, &s->tuple[i]);
    return;
  }
  /* a malformed rank (the verifier reports it) keys its first dims */
  size_t rank = s->rank < 0 ? 0 : s->rank > IR_MAX_RANK ? IR_MAX_RANK : (size_t)s->rank;
  sb_putn(b, (const char *)(&s->rank), sizeof s->rank);
  sb_putn(b, (const char *)(s->dims), sizeof(int64_t) * rank);
  const ir_layout *l = s->layout;
  sb_putc(b, l ? 'L' : 'D');
  if (!l) return;
  sb_putn(b, (const char *)(l->minor_to_major), rank);
  sb_putn(b, (const char *)(&l->ntiles), sizeof l->ntiles);
  for (int t = 0; t < l->ntiles && t < IR_MAX_TILES; t++) {
    int tr = l->tiles[t].rank < 0 ? 0 : l->tiles[t].rank > IR_MAX_TILE_RANK ? IR_MAX_TILE_RANK
                                                                           : l->tiles[t].rank;
    sb_putn(b, (const char *)(&l->tiles[t].rank), sizeof l->tiles[t].rank);
    sb_putn(b, (const char *)(l->tiles[t].dims), sizeof(int64_t) * (size_t)tr);
  }
  sb_putn(b, (const char *)(&l->memory_space), sizeof l->memory_space);
  sb_putn(b, (const char *)(&l->element_bits), sizeof l->element_bits);
}

const ir_shape *ir_shape_intern(ir_module *m, const ir_shape *s) {
  module_impl *mi = (module_impl *)m;
  strbuf key;
  sb_init(&key);
  shape_key(&key, s);
  int32_t at = strmap_get(mi->shape_keys, key.s, key.len);
  if (at < 0) {
    ir_shape *copy = arena_alloc(m->arena, sizeof *copy);
    *copy = ir_shape_clone(m->arena, s);
    at = mi->shapes.n;
    VEC_PUSH(m->arena, mi->shapes, copy);
    strmap_put(mi->shape_keys, key.s, key.len, at);
  }
  sb_free(&key);
  return mi->shapes.v[at];
}

void ir_inst_set_shape(ir_module *m, ir_inst *in, const ir_shape *s) {
  in->shape = ir_shape_intern(m, s);
}

/* Whether a holds nothing: equal to ir_attrs_none, a TYPE attribute
 * aside on the ops that do not carry it (zero-filled attributes read it as
 * pred there). */
static bool attrs_empty(ir_op op, const ir_attrs *a) {
  if (memcmp(a, &ir_attrs_none, sizeof *a) == 0) return true;
  ir_attrs t = *a;
  for (int r = 0; r < ir_attr_count; r++) {
    const ir_attr_desc *d = &ir_attr_table[r];
    if (d->kind == IR_AK_TYPE && !ir_attr_on(&d->ops, op))
      *IR_ATTR_FIELD(&t, d->f, ir_type) = IR_TYPE_INVALID;
  }
  return memcmp(&t, &ir_attrs_none, sizeof t) == 0;
}

void ir_inst_set_attrs(ir_module *m, ir_inst *in, const ir_attrs *a) {
  if (attrs_empty(in->op, a)) {
    in->a = &ir_attrs_none;
    return;
  }
  ir_attrs *c = arena_alloc(m->arena, sizeof *c);
  *c = *a;
  dup_attrs(m->arena, c);
  in->a = c;
}

ir_attrs *ir_inst_attrs_mut(ir_module *m, ir_inst *in) {
  if (in->a == &ir_attrs_none) {
    ir_attrs *c = arena_alloc(m->arena, sizeof *c);
    *c = ir_attrs_none;
    in->a = c;
  }
  return (ir_attrs *)in->a;
}

ir_inst_proto ir_inst_proto_of(const ir_inst *in) {
  ir_inst_proto p;
  memset(&p, 0, sizeof p);
  p.op = in->op;
  p.name = in->info->name;
  p.shape = *in->shape;
  p.nops = in->nops;
  p.ops = in->ops;
  p.ncalls = in->ncalls;
  p.calls = in->calls;
  p.a = *in->a;
  p.nraw = in->info->nraw;
  p.raw = in->info->raw;
  p.meta = in->info->meta;
  p.loc = in->info->loc;
  return p;
}

ir_id ir_inst_add(ir_module *m, ir_comp_id c, const ir_inst_proto *proto) {
  ir_comp *cp = ir_comp_get(m, c);
  ir_inst in;
  ir_inst_assign(m, &in, proto);
  VEC_PUSH(m->arena, cp->insts, in);
  return cp->insts.n - 1;
}

void ir_inst_assign(ir_module *m, ir_inst *out, const ir_inst_proto *proto) {
  module_impl *mi = (module_impl *)m;
  arena *a = m->arena;
  ir_inst in;
  memset(&in, 0, sizeof in);
  ir_inst_info *info = arena_alloc(a, sizeof *info);
  if (proto->name) {
    size_t nl = strlen(proto->name);
    info->name = arena_strndup(a, proto->name, nl);
    strmap_put(mi->names, info->name, nl, 1);
  } else {
    info->name = ir_unique_name(m, ir_op_name(proto->op));
  }
  info->loc = proto->loc;
  info->meta = proto->meta;
  info->nraw = proto->nraw;
  if (proto->nraw) info->raw = arena_dup(a, proto->raw, sizeof(ir_raw_attr) * (size_t)proto->nraw);
  in.op = proto->op;
  in.info = info;
  in.shape = ir_shape_intern(m, &proto->shape);
  in.nops = proto->nops;
  in.ncalls = proto->ncalls;
  if (in.nops) in.ops = arena_dup(a, proto->ops, sizeof(ir_id) * (size_t)in.nops);
  if (in.ncalls) in.calls = arena_dup(a, proto->calls, sizeof(ir_comp_id) * (size_t)in.ncalls);
  ir_inst_set_attrs(m, &in, &proto->a);
  *out = in;
}

/* nparams is the number of live parameter instructions; a parameter whose
 * number is outside 0..nparams-1 (negative, huge, or leaving a gap) gets no
 * slot, so user-written numbers never size an allocation; the verifier
 * reports it. */
void ir_comp_finish(ir_module *m, ir_comp_id c) {
  ir_comp *cp = ir_comp_get(m, c);
  int32_t n = 0;
  for (int i = 0; i < cp->insts.n; i++)
    if (!cp->insts.v[i].dead && cp->insts.v[i].op == IR_OP_PARAMETER) n++;
  cp->nparams = n;
  cp->params = arena_array(m->arena, (size_t)(n ? n : 1), sizeof(ir_id));
  for (int32_t i = 0; i < n; i++) cp->params[i] = IR_NONE;
  for (int i = 0; i < cp->insts.n; i++) {
    const ir_inst *in = &cp->insts.v[i];
    if (!in->dead && in->op == IR_OP_PARAMETER && in->a->parameter_number >= 0 &&
        in->a->parameter_number < n)
      cp->params[in->a->parameter_number] = i;
  }
}

/* Depth-first post-order; state 0 unvisited, 1 on stack, 2 done. */
bool ir_comp_topo_sort(ir_module *m, ir_comp_id c) {
  ir_comp *cp = ir_comp_get(m, c);
  int n = cp->insts.n;
  if (n == 0) return true;
  arena_mark mk = arena_get_mark(m->arena);
  int8_t *state = arena_alloc(m->arena, (size_t)n);
  ir_id *order = arena_array(m->arena, (size_t)n, sizeof(ir_id));
  ir_id *remap = arena_array(m->arena, (size_t)n, sizeof(ir_id));
  ir_id *stack = arena_array(m->arena, (size_t)n, sizeof(ir_id));
  int32_t *next = arena_array(m->arena, (size_t)n, sizeof(int32_t));
  int no = 0;
  bool ok = true;
  for (int s = 0; s < n && ok; s++) {
    if (state[s]) continue;
    int sp = 0;
    stack[sp++] = s;
    state[s] = 1;
    next[s] = 0;
    while (sp && ok) {
      ir_id x = stack[sp - 1];
      ir_inst *in = &cp->insts.v[x];
      if (next[x] < in->nops) {
        ir_id o = in->ops[next[x]++];
        if (o < 0 || o >= n) continue; /* the verifier reports it */
        if (state[o] == 1) ok = false;
        else if (state[o] == 0) {
          state[o] = 1;
          next[o] = 0;
          stack[sp++] = o;
        }
      } else {
        state[x] = 2;
        order[no++] = x;
        sp--;
      }
    }
  }
  if (ok) {
    ir_inst *copy = arena_dup(m->arena, cp->insts.v, sizeof(ir_inst) * (size_t)n);
    for (int i = 0; i < n; i++) remap[order[i]] = i;
    for (int i = 0; i < n; i++) {
      ir_inst in = copy[order[i]];
      /* operand arrays are arena-owned and may be shared by copies: rewrite in place once */
      for (int k = 0; k < in.nops; k++)
        if (in.ops[k] >= 0 && in.ops[k] < n) in.ops[k] = remap[in.ops[k]];
      cp->insts.v[i] = in;
    }
    if (cp->root >= 0 && cp->root < n) cp->root = remap[cp->root];
  }
  /* scratch cannot be released: copies of ops[] arrays live before the mark */
  (void)mk;
  if (ok) ir_comp_finish(m, c);
  return ok;
}

static const char *dup_str(arena *a, const char *s) { return s ? arena_strdup(a, s) : NULL; }

static ir_literal *clone_literal(arena *a, const ir_literal *l) {
  ir_literal *r = arena_alloc(a, sizeof *r);
  r->shape = ir_shape_clone(a, &l->shape);
  if (l->shape.type == IR_TUPLE) {
    int n = l->shape.ntuple;
    r->elems = arena_array(a, (size_t)(n ? n : 1), sizeof(ir_literal *));
    for (int i = 0; i < n; i++) r->elems[i] = l->elems[i] ? clone_literal(a, l->elems[i]) : NULL;
    return r;
  }
  r->nbytes = l->nbytes;
  r->data = l->data ? arena_dup(a, l->data, l->nbytes ? l->nbytes : 1) : NULL;
  return r;
}

static ir_raw_attr *clone_raw(arena *a, const ir_raw_attr *raw, int32_t n) {
  ir_raw_attr *r = arena_array(a, (size_t)(n ? n : 1), sizeof(ir_raw_attr));
  for (int32_t i = 0; i < n; i++) {
    r[i] = raw[i];
    r[i].name = dup_str(a, raw[i].name);
    r[i].text = dup_str(a, raw[i].text);
  }
  return r;
}

/* Everything the copy points to lives in its own arena (literals, raw
 * attributes and metadata strings included), except src_loc.file, which
 * is interned for the whole compilation. */
ir_module *ir_module_clone(const ir_module *src) {
  ir_module *m = ir_module_create(src->name);
  m->entry = src->entry;
  m->is_scheduled = src->is_scheduled;
  if (src->source_file) m->source_file = arena_strdup(m->arena, src->source_file);
  if (src->nraw) {
    m->nraw = src->nraw;
    m->raw = clone_raw(m->arena, src->raw, src->nraw);
  }
  if (src->ntables) {
    m->ntables = src->ntables;
    m->tables = arena_array(m->arena, (size_t)src->ntables, sizeof(ir_table));
    for (int t = 0; t < src->ntables; t++) {
      const ir_table *st = &src->tables[t];
      ir_table *dt = &m->tables[t];
      dt->name = dup_str(m->arena, st->name);
      dt->nrows = st->nrows;
      dt->rows = arena_array(m->arena, (size_t)(st->nrows ? st->nrows : 1), sizeof(ir_table_row));
      for (int r = 0; r < st->nrows; r++) {
        dt->rows[r].id = st->rows[r].id;
        dt->rows[r].text = dup_str(m->arena, st->rows[r].text);
      }
    }
  }
  for (int c = 0; c < src->comps.n; c++) {
    const ir_comp *sc = &src->comps.v[c];
    ir_comp_id nc = ir_comp_add(m, sc->name);
    ir_comp *dc = ir_comp_get(m, nc);
    dc->root = sc->root;
    dc->is_fusion = sc->is_fusion;
    dc->loc = sc->loc;
    if (sc->nraw) {
      dc->nraw = sc->nraw;
      dc->raw = clone_raw(m->arena, sc->raw, sc->nraw);
    }
    for (int i = 0; i < sc->insts.n; i++) {
      const ir_inst *si = &sc->insts.v[i];
      ir_inst_proto p = ir_inst_proto_of(si);
      if (p.a.literal) p.a.literal = clone_literal(m->arena, p.a.literal);
      if (p.nraw) p.raw = clone_raw(m->arena, p.raw, p.nraw);
      p.meta.op_name = dup_str(m->arena, p.meta.op_name);
      p.meta.op_type = dup_str(m->arena, p.meta.op_type);
      p.meta.source_file = dup_str(m->arena, p.meta.source_file);
      ir_id ni = ir_inst_add(m, nc, &p);
      ir_inst_get(m, nc, ni)->dead = si->dead;
    }
    ir_comp_finish(m, nc);
  }
  return m;
}

ir_id ir_build(ir_module *m, ir_comp_id c, ir_op op, const ir_id *ops, int nops,
               const ir_attrs *attrs, const ir_comp_id *calls, int ncalls,
               src_loc loc) {
  return ir_build_shaped(m, c, op, ops, nops, attrs, calls, ncalls, NULL, loc);
}

ir_id ir_build_shaped(ir_module *m, ir_comp_id c, ir_op op, const ir_id *ops,
                      int nops, const ir_attrs *attrs, const ir_comp_id *calls,
                      int ncalls, const ir_shape *target, src_loc loc) {
  ir_inst_proto in;
  memset(&in, 0, sizeof in);
  in.op = op;
  in.nops = nops;
  in.ops = (ir_id *)ops;
  in.a = attrs ? *attrs : ir_attrs_none;
  in.loc = loc;
  in.ncalls = ncalls;
  in.calls = (ir_comp_id *)calls;
  ir_shape opshapes[64];
  ir_shape *os = nops <= 64 ? opshapes : arena_array(m->arena, (size_t)nops, sizeof(ir_shape));
  for (int i = 0; i < nops; i++) os[i] = *ir_inst_get(m, c, ops[i])->shape;
  char err[256];
  if (target) in.shape = *target;
  else if (op == IR_OP_BROADCAST || op == IR_OP_RESHAPE || op == IR_OP_IOTA ||
           op == IR_OP_CONVERT || op == IR_OP_BITCAST_CONVERT)
    base_die("ir_build: %s needs ir_build_shaped with a target shape", ir_op_name(op));
  if (op == IR_OP_PARAMETER || op == IR_OP_CONSTANT)
    base_die("ir_build: use ir_inst_add with an explicit shape for %s", ir_op_name(op));
  if (!ir_infer_shape(m, op, os, nops, &in.a, calls, ncalls, &in.shape, err, sizeof err))
    base_die("ir_build: ill-typed %s: %s", ir_op_name(op), err);
  return ir_inst_add(m, c, &in);
}

void ir_comp_compact(ir_module *m, ir_comp_id c) {
  ir_comp *cp = ir_comp_get(m, c);
  int n = cp->insts.n, k = 0;
  ir_id *remap = arena_array(m->arena, (size_t)(n ? n : 1), sizeof(ir_id));
  for (int i = 0; i < n; i++) remap[i] = cp->insts.v[i].dead ? IR_NONE : k++;
  k = 0;
  for (int i = 0; i < n; i++) {
    ir_inst in = cp->insts.v[i];
    if (in.dead) continue;
    for (int j = 0; j < in.nops; j++) {
      if (remap[in.ops[j]] == IR_NONE)
        base_die("ir_comp_compact: %s uses dead instruction", in.info->name);
      in.ops[j] = remap[in.ops[j]];
    }
    cp->insts.v[k++] = in;
  }
  cp->insts.n = k;
  if (cp->root != IR_NONE) {
    if (remap[cp->root] == IR_NONE) base_die("ir_comp_compact: root is dead");
    cp->root = remap[cp->root];
  }
  ir_comp_finish(m, c);
}

int32_t *ir_comp_use_counts(ir_module *m, ir_comp_id c) {
  ir_comp *cp = ir_comp_get(m, c);
  int32_t *u = arena_array(m->arena, (size_t)(cp->insts.n ? cp->insts.n : 1), sizeof(int32_t));
  for (int i = 0; i < cp->insts.n; i++) {
    if (cp->insts.v[i].dead) continue;
    for (int j = 0; j < cp->insts.v[i].nops; j++) u[cp->insts.v[i].ops[j]]++;
  }
  if (cp->root != IR_NONE) u[cp->root]++;
  return u;
}
