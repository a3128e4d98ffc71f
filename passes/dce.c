/* dce.c: dead code elimination.
 * require: a verified module.  provide: every instruction of every
 * computation is reachable from that computation's root (parameters are
 * kept: they define the signature), and every computation is reachable
 * from the entry through calls. */
#include "passes/passes.h"
#include "passes/rewrite.h"

static bool dce_comp(ir_module *m, ir_comp_id c) {
  ir_comp *cp = ir_comp_get(m, c);
  int n = cp->insts.n;
  if (n == 0 || cp->root == IR_NONE) return false;
  arena_mark mk = arena_get_mark(m->arena);
  uint8_t *live = arena_alloc(m->arena, (size_t)n);
  pr_mark_live(m->arena, cp, live);
  bool changed = false;
  for (int i = 0; i < n; i++) {
    ir_inst *in = &cp->insts.v[i];
    if (!live[i] && in->op != IR_OP_PARAMETER && !in->dead) in->dead = true, changed = true;
  }
  arena_reset(m->arena, mk);
  if (changed) ir_comp_compact(m, c);
  return changed;
}

/* Drops computations not reachable from the entry; renumbers calls. */
static bool dce_comps(ir_module *m) {
  int nc = m->comps.n;
  if (m->entry == IR_NONE) return false;
  uint8_t *live = arena_alloc(m->arena, (size_t)nc);
  ir_comp_id *stack = arena_array(m->arena, (size_t)nc, sizeof(ir_comp_id));
  int sp = 0;
  live[m->entry] = 1;
  stack[sp++] = m->entry;
  while (sp) {
    ir_comp *cp = &m->comps.v[stack[--sp]];
    for (int i = 0; i < cp->insts.n; i++)
      for (int k = 0; k < cp->insts.v[i].ncalls; k++) {
        ir_comp_id t = cp->insts.v[i].calls[k];
        if (!live[t]) live[t] = 1, stack[sp++] = t;
      }
  }
  ir_comp_id *remap = arena_array(m->arena, (size_t)nc, sizeof(ir_comp_id));
  int k = 0;
  for (int c = 0; c < nc; c++)
    remap[c] = live[c] ? k++ : IR_NONE;
  if (k == nc) return false;
  for (int c = 0; c < nc; c++) {
    if (!live[c]) continue;
    ir_comp *cp = &m->comps.v[c];
    for (int i = 0; i < cp->insts.n; i++)
      for (int j = 0; j < cp->insts.v[i].ncalls; j++)
        cp->insts.v[i].calls[j] = remap[cp->insts.v[i].calls[j]];
    m->comps.v[remap[c]] = *cp;
  }
  m->comps.n = k;
  m->entry = remap[m->entry];
  return true;
}

bool pass_dce(ir_module *m, pass_ctx *ctx) {
  (void)ctx;
  bool changed = false;
  for (int c = 0; c < m->comps.n; c++)
    changed |= dce_comp(m, c);
  changed |= dce_comps(m);
  return changed;
}
