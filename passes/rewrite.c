/* rewrite.c: helpers shared by the passes (see rewrite.h). */
#include "passes/rewrite.h"

void pr_mark_live(arena *a, const ir_comp *cp, uint8_t *live) {
  ir_id *stack = arena_array(a, (size_t)cp->insts.n, sizeof(ir_id));
  int sp = 0;
  live[cp->root] = 1;
  stack[sp++] = cp->root;
  while (sp) {
    const ir_inst *in = &cp->insts.v[stack[--sp]];
    for (int j = 0; j < in->nops; j++)
      if (!live[in->ops[j]]) live[in->ops[j]] = 1, stack[sp++] = in->ops[j];
  }
}

bool pr_sweep(ir_module *m, ir_comp_id c) {
  ir_comp *cp = ir_comp_get(m, c);
  int n = cp->insts.n;
  if (n == 0 || cp->root == IR_NONE) return false;
  uint8_t *live = arena_alloc(m->arena, (size_t)n);
  pr_mark_live(m->arena, cp, live);
  bool removed = false;
  for (int i = 0; i < n; i++) {
    ir_inst *in = &cp->insts.v[i];
    if (in->op == IR_OP_PARAMETER) continue;
    if (!live[i] && !in->dead) in->dead = true, removed = true;
  }
  bool any_dead = removed;
  for (int i = 0; i < n && !any_dead; i++)
    any_dead = cp->insts.v[i].dead;
  if (any_dead) ir_comp_compact(m, c);
  /* ir_comp_topo_sort copies the instruction array: only when needed */
  cp = ir_comp_get(m, c);
  bool ordered = true;
  for (int i = 0; i < cp->insts.n && ordered; i++)
    for (int k = 0; k < cp->insts.v[i].nops; k++)
      if (cp->insts.v[i].ops[k] >= i) ordered = false;
  if (!ordered && !ir_comp_topo_sort(m, c))
    base_die("pass produced a cycle in computation %s", cp->name);
  return removed;
}

pr_map pr_map_make(arena *a, int n) {
  pr_map mp = {arena_array(a, (size_t)(n ? n : 1), sizeof(ir_id)), n};
  for (int i = 0; i < n; i++)
    mp.v[i] = i;
  return mp;
}

ir_id pr_find(const pr_map *mp, ir_id x) {
  while (x >= 0 && x < mp->n && mp->v[x] != x)
    x = mp->v[x];
  return x;
}

void pr_apply(ir_module *m, ir_comp_id c, const pr_map *mp) {
  ir_comp *cp = ir_comp_get(m, c);
  for (int i = 0; i < cp->insts.n; i++) {
    ir_inst *in = &cp->insts.v[i];
    if (in->dead) continue;
    for (int k = 0; k < in->nops; k++)
      in->ops[k] = pr_find(mp, in->ops[k]);
  }
  if (cp->root != IR_NONE) cp->root = pr_find(mp, cp->root);
}

const ir_literal *pr_splat(const ir_comp *cp, ir_id id) {
  const ir_inst *in = &cp->insts.v[id];
  if (in->op == IR_OP_BROADCAST && in->nops == 1) {
    const ir_inst *o = &cp->insts.v[in->ops[0]];
    if (o->op != IR_OP_CONSTANT || !ir_shape_is_array(o->shape) || o->shape->rank != 0) return NULL;
    in = o;
  }
  if (in->op != IR_OP_CONSTANT || !in->a->literal || !ir_shape_is_array(in->shape)) return NULL;
  const ir_literal *l = in->a->literal;
  size_t es = (size_t)ir_type_size(l->shape.type);
  if (l->nbytes < es || !l->data) return NULL;
  const uint8_t *d = l->data;
  for (size_t off = es; off + es <= l->nbytes; off += es)
    if (memcmp(d, d + off, es) != 0) return NULL;
  return l;
}

bool pr_splat_is(const ir_literal *l, double v) {
  if (!l) return false;
  if (ir_type_is_float(l->shape.type)) {
    double x = ir_literal_get_f64(l, 0);
    return x == v && (x != 0 || __builtin_signbit(x) == __builtin_signbit(v));
  }
  return ir_literal_get_i64(l, 0) == (int64_t)v;
}

bool pr_is_cheap(const ir_comp *cp, ir_id id) {
  const ir_inst *in = &cp->insts.v[id];
  switch (in->op) {
  case IR_OP_CONSTANT:
    return ir_shape_is_array(in->shape) && in->shape->rank == 0;
  case IR_OP_IOTA:
    return true;
  case IR_OP_BROADCAST: {
    const ir_inst *o = &cp->insts.v[in->ops[0]];
    return ir_shape_is_array(o->shape) && o->shape->rank == 0;
  }
  default:
    return false;
  }
}

int pr_control_comps(const ir_module *m, ir_comp_id *out) {
  int n = 0;
  out[n++] = m->entry;
  for (int k = 0; k < n; k++) {
    const ir_comp *c = &m->comps.v[out[k]];
    for (int i = 0; i < c->insts.n; i++) {
      const ir_inst *in = &c->insts.v[i];
      if (in->dead || (in->op != IR_OP_WHILE && in->op != IR_OP_CONDITIONAL && in->op != IR_OP_CALL))
        continue;
      for (int j = 0; j < in->ncalls; j++) {
        bool seen = false;
        for (int s = 0; s < n && !seen; s++) seen = out[s] == in->calls[j];
        if (!seen) out[n++] = in->calls[j];
      }
    }
  }
  return n;
}
