/* rewrite.h: helpers shared by the passes of passes/ (private to this
 * folder; prefix pr_). Not a pass: no entry in the pipeline. */
#ifndef TPUCC_PASSES_REWRITE_H
#define TPUCC_PASSES_REWRITE_H

#include "passes/passes.h"

/* Sets live[i] for every instruction of cp that its root reaches through
 * operands (live: cp->insts.n bytes, zeroed by the caller; cp->root is
 * set). Scratch comes from a. */
void pr_mark_live(arena *a, const ir_comp *cp, uint8_t *live);
/* Marks every instruction of c that its root does not reach as dead
 * (parameters stay: they are the signature), then restores the
 * computation's invariants: operands before users (ir_comp_topo_sort),
 * dead instructions removed (ir_comp_compact), params[] current. Returns
 * true when something was removed. Dies on a cycle (a pass bug). */
bool pr_sweep(ir_module *m, ir_comp_id c);

/* The computations that run as the program's control flow, into out
 * (room for m->comps.n): the entry and, transitively, the bodies and
 * conditions of its whiles, the branches of its conditionals and the
 * callees of its calls (not the computations an instruction applies per
 * element: reducers, comparators, map's and all-reduce's to_apply).
 * Returns how many. */
int pr_control_comps(const ir_module *m, ir_comp_id *out);

/* A replacement map for one computation: map[i] is what instruction i now
 * stands for (itself when unchanged). pr_find follows chains. Ids at or
 * past n (instructions added after the map was made) map to themselves. */
typedef struct pr_map {
  ir_id *v;
  int n;
} pr_map;
pr_map pr_map_make(arena *a, int n);
ir_id pr_find(const pr_map *mp, ir_id x);
/* Rewrites the operands of every instruction of c and its root through
 * the map. */
void pr_apply(ir_module *m, ir_comp_id c, const pr_map *mp);

/* The literal of a constant whose elements are all bit-identical (or of a
 * scalar constant broadcast to any shape, looked through broadcast), else
 * NULL. Element 0 of the result is the value. */
const ir_literal *pr_splat(const ir_comp *cp, ir_id id);
/* True when a splat literal's value is exactly v: same value and, for
 * floats, the same sign of zero (so pr_splat_is(l, -0.0) is false for +0). */
bool pr_splat_is(const ir_literal *l, double v);

/* True when the instruction is cheap enough to recompute in every user
 * (a scalar constant, an iota, a broadcast of a scalar): fusion duplicates
 * such producers instead of refusing them. */
bool pr_is_cheap(const ir_comp *cp, ir_id id);

#endif
