/* shape.c: array and tuple shapes, their equality and HLO spelling. */
#include "ir/ir.h"

ir_shape ir_shape_array(ir_type t, int rank, const int64_t *dims) {
  ir_shape s;
  memset(&s, 0, sizeof s);
  BASE_ASSERT(rank >= 0 && rank <= IR_MAX_RANK);
  s.type = t;
  s.rank = (int8_t)rank;
  for (int i = 0; i < rank; i++) s.dims[i] = dims[i];
  ir_shape_default_layout(&s);
  return s;
}

ir_shape ir_shape_scalar(ir_type t) { return ir_shape_array(t, 0, NULL); }

static const ir_layout default_layouts[IR_MAX_RANK + 1] = {
    {.minor_to_major = {0}},
    {.minor_to_major = {0}},
    {.minor_to_major = {1, 0}},
    {.minor_to_major = {2, 1, 0}},
    {.minor_to_major = {3, 2, 1, 0}},
    {.minor_to_major = {4, 3, 2, 1, 0}},
    {.minor_to_major = {5, 4, 3, 2, 1, 0}},
    {.minor_to_major = {6, 5, 4, 3, 2, 1, 0}},
    {.minor_to_major = {7, 6, 5, 4, 3, 2, 1, 0}},
    {.minor_to_major = {8, 7, 6, 5, 4, 3, 2, 1, 0}},
    {.minor_to_major = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
    {.minor_to_major = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
    {.minor_to_major = {11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
};
_Static_assert(IR_MAX_RANK == 12, "default_layouts lists ranks 0..12");

const ir_layout *ir_layout_default(int rank) {
  BASE_ASSERT(rank >= 0 && rank <= IR_MAX_RANK);
  return &default_layouts[rank];
}

static bool is_static_default(const ir_layout *l) {
  uintptr_t p = (uintptr_t)l, lo = (uintptr_t)default_layouts;
  return p >= lo && p < lo + sizeof default_layouts;
}

void ir_shape_default_layout(ir_shape *s) { s->layout = NULL; }

static bool layout_same(int rank, const ir_layout *x, const ir_layout *y) {
  if (memcmp(x->minor_to_major, y->minor_to_major, (size_t)rank) != 0) return false;
  if (x->ntiles != y->ntiles || x->memory_space != y->memory_space ||
      x->element_bits != y->element_bits)
    return false;
  for (int t = 0; t < x->ntiles; t++) {
    if (x->tiles[t].rank != y->tiles[t].rank) return false;
    for (int i = 0; i < x->tiles[t].rank; i++)
      if (x->tiles[t].dims[i] != y->tiles[t].dims[i]) return false;
  }
  return true;
}

void ir_shape_set_layout(arena *a, ir_shape *s, const ir_layout *l) {
  if (!l || layout_same(s->rank, l, ir_layout_default(s->rank))) {
    s->layout = NULL;
    return;
  }
  s->layout = arena_dup(a, l, sizeof *l);
}

bool ir_shape_is_array(const ir_shape *s) { return s->type != IR_TUPLE; }

bool ir_shape_elements(const ir_shape *s, int64_t *out) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) {
    if (s->dims[i] < 0) return false;
    if (__builtin_mul_overflow(n, s->dims[i], &n)) return false;
  }
  if (n > IR_MAX_ELEMENTS) return false;
  *out = n;
  return true;
}

int64_t ir_shape_count(const ir_shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) n *= s->dims[i];
  return n;
}

bool ir_shape_equal(const ir_shape *a, const ir_shape *b) {
  if (a->type != b->type) return false;
  if (a->type == IR_TUPLE) {
    if (a->ntuple != b->ntuple) return false;
    for (int i = 0; i < a->ntuple; i++)
      if (!ir_shape_equal(&a->tuple[i], &b->tuple[i])) return false;
    return true;
  }
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

static bool layout_equal(const ir_shape *a, const ir_shape *b) {
  if (a->layout == b->layout) return true;
  return layout_same(a->rank, ir_shape_layout(a), ir_shape_layout(b));
}

bool ir_shape_equal_with_layout(const ir_shape *a, const ir_shape *b) {
  if (!ir_shape_equal(a, b)) return false;
  if (a->type == IR_TUPLE) {
    for (int i = 0; i < a->ntuple; i++)
      if (!ir_shape_equal_with_layout(&a->tuple[i], &b->tuple[i])) return false;
    return true;
  }
  return layout_equal(a, b);
}

ir_shape ir_shape_clone(arena *a, const ir_shape *s) {
  ir_shape r = *s;
  if (s->layout && !is_static_default(s->layout)) r.layout = arena_dup(a, s->layout, sizeof *s->layout);
  if (s->type == IR_TUPLE && s->ntuple > 0) {
    r.tuple = arena_array(a, (size_t)s->ntuple, sizeof(ir_shape));
    for (int i = 0; i < s->ntuple; i++) r.tuple[i] = ir_shape_clone(a, &s->tuple[i]);
  }
  return r;
}

static void print_shape(strbuf *b, const ir_shape *s, bool with_layout, bool indexed) {
  if (s->type == IR_TUPLE) {
    sb_putc(b, '(');
    for (int i = 0; i < s->ntuple; i++) {
      if (i) sb_puts(b, ", ");
      if (indexed && i && i % 5 == 0) sb_printf(b, "/*index=%d*/", i);
      print_shape(b, &s->tuple[i], with_layout, indexed);
    }
    sb_putc(b, ')');
    return;
  }
  sb_puts(b, ir_type_name(s->type));
  sb_putc(b, '[');
  for (int i = 0; i < s->rank; i++) sb_printf(b, "%s%lld", i ? "," : "", (long long)s->dims[i]);
  sb_putc(b, ']');
  if (with_layout) ir_layout_print(b, s);
}

void ir_shape_print(strbuf *b, const ir_shape *s, bool with_layout) {
  print_shape(b, s, with_layout, false);
}

const char *ir_shape_str(char *buf, size_t n, const ir_shape *s) {
  strbuf b;
  sb_init(&b);
  ir_shape_print(&b, s, false);
  snprintf(buf, n, "%s", sb_str(&b));
  sb_free(&b);
  return buf;
}

void ir_shape_print_indexed(strbuf *b, const ir_shape *s, bool with_layout) {
  print_shape(b, s, with_layout, true);
}

void ir_layout_print(strbuf *b, const ir_shape *s) {
  const ir_layout *l = ir_shape_layout(s);
  bool extra = l->ntiles || l->element_bits || l->memory_space;
  if (s->rank == 0 && !extra) return;
  sb_putc(b, '{');
  for (int i = 0; i < s->rank; i++) sb_printf(b, "%s%d", i ? "," : "", l->minor_to_major[i]);
  if (extra) {
    sb_putc(b, ':');
    /* XLA spells several tiles with one T: "T(8,128)(2,1)". */
    if (l->ntiles) sb_putc(b, 'T');
    for (int t = 0; t < l->ntiles; t++) {
      sb_putc(b, '(');
      for (int i = 0; i < l->tiles[t].rank; i++) {
        if (i) sb_putc(b, ',');
        if (l->tiles[t].dims[i] == IR_TILE_COMBINE) sb_putc(b, '*');
        else sb_printf(b, "%lld", (long long)l->tiles[t].dims[i]);
      }
      sb_putc(b, ')');
    }
    if (l->element_bits) sb_printf(b, "E(%d)", l->element_bits);
    if (l->memory_space) sb_printf(b, "S(%d)", l->memory_space);
  }
  sb_putc(b, '}');
}
