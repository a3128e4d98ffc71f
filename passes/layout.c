/* layout.c: layout assignment (TPU tiled layouts).
 * require: a verified module.  provide: every array shape of every
 * instruction (tuple elements included) carries a layout: the
 * minor_to_major it already had (else row-major), plus, when it had no
 * tiles, the tiling of the vector registers the TPU moves it with:
 *   rank >= 2, 32-bit   T(R,L)           R = rows, L = lanes
 *   rank >= 2, 16-bit   T(R,L)(2,1)      two rows packed per 32-bit sublane
 *   rank >= 2, 8-bit    T(R,L)(4,1)      s8 and pred: four rows packed
 *   rank 1              T(S*L) and, for 16/8-bit, (L)(2,1) / (L)(4,1)
 *   rank 0              no tiles
 * R is the sublane count S (8) unless the second-minor dimension is
 * smaller: then the smallest of 1, 2, 4 that holds it (f32[2,N] gets
 * T(2,128), f32[3,N] T(4,128)), so a small matrix does not pad to 8 rows.
 * S and L come from the target description (ctx->target->tpu: a tgt_target of
 * runtime/isa/target.h, whose vector registers are TGT_SUBLANES x
 * TGT_LANES); without one the defaults are the same 8 x 128.
 * Values never change: literals are logical (row-major) whatever the
 * layout, and the verifier ignores layouts when it compares shapes. */
#include "passes/rewrite.h"
#include "runtime/isa/target.h"

#define PASS "layout"

static void tile2(ir_tile *t, int64_t a, int64_t b) {
  memset(t, 0, sizeof *t);
  t->rank = 2;
  t->dims[0] = a;
  t->dims[1] = b;
}

static void tile1(ir_tile *t, int64_t a) {
  memset(t, 0, sizeof *t);
  t->rank = 1;
  t->dims[0] = a;
}

/* Gives l (the layout of array shape s, rank >= 1) the TPU's tiles. */
static void tile_layout(const ir_shape *s, ir_layout *l, int sublanes, int lanes) {
  int bytes = ir_type_size(s->type);
  int pack = bytes >= 4 ? 1 : 4 / bytes;
  if (s->rank == 1) {
    tile1(&l->tiles[0], (int64_t)sublanes * lanes);
    l->ntiles = 1;
    if (pack > 1) {
      tile1(&l->tiles[1], lanes);
      tile2(&l->tiles[2], pack, 1);
      l->ntiles = 3;
    }
    return;
  }
  int64_t second = s->dims[l->minor_to_major[1]];
  int64_t rows = sublanes;
  if (second < sublanes) {
    rows = 1;
    while (rows < second)
      rows *= 2;
    if (rows > sublanes) rows = sublanes;
  }
  tile2(&l->tiles[0], rows, lanes);
  l->ntiles = 1;
  if (pack > 1) {
    tile2(&l->tiles[1], pack, 1);
    l->ntiles = 2;
  }
}

/* Assigns the layout of one shape (tuple elements in arena a), into
 * *tiled for an array; returns true when it changed. */
static bool assign(arena *a, ir_shape *s, ir_layout *tiled, int sublanes, int lanes) {
  if (s->type == IR_TUPLE) {
    bool ch = false;
    for (int i = 0; i < s->ntuple; i++) {
      ir_layout l;
      if (!assign(a, &s->tuple[i], &l, sublanes, lanes)) continue;
      /* a nested tuple's leaves were set by the call; a tuple has no layout */
      if (s->tuple[i].type != IR_TUPLE) ir_shape_set_layout(a, &s->tuple[i], &l);
      ch = true;
    }
    return ch;
  }
  if (ir_shape_layout(s)->ntiles > 0 || s->rank == 0) return false;
  *tiled = *ir_shape_layout(s);
  tile_layout(s, tiled, sublanes, lanes);
  s->layout = tiled;
  return true;
}

bool pass_layout(ir_module *m, pass_ctx *ctx) {
  int sublanes = TGT_SUBLANES, lanes = TGT_LANES;
  if (ctx->target && ctx->target->tpu) {
    const tgt_target *t = ctx->target->tpu;
    pass_explain(ctx, PASS, NULL, "target %s: vector registers %d x %d", t->preset, sublanes,
                 lanes);
  }
  bool changed = false;
  for (ir_comp_id c = 0; c < m->comps.n; c++) {
    ir_comp *cp = ir_comp_get(m, c);
    for (int i = 0; i < cp->insts.n; i++) {
      ir_inst *in = &cp->insts.v[i];
      if (in->dead) continue;
      ir_shape sh = in->shape->type == IR_TUPLE ? ir_shape_clone(m->arena, in->shape) : *in->shape;
      ir_layout tiled;
      if (assign(m->arena, &sh, &tiled, sublanes, lanes)) {
        ir_inst_set_shape(m, in, &sh);
        changed = true;
      }
    }
  }
  return changed;
}
