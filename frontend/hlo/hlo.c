/* hlo.c: fe_parse_hlo, the entry point of the HLO importer, plus the
 * pieces the grammar calls while parsing: locations, errors, integers and
 * shapes (element type, dims, layout with tiles, tuples). */
#include "frontend/hlo/hlo.h"

#include "hlo_parse.h"
#define YYSTYPE HLO_YYSTYPE
#define YYLTYPE HLO_YYLTYPE
#include "hlo_lex.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

src_loc fe_hlo_loc(hlo_parser *p, const hlo_loc *l) {
  src_loc s = {p->file, l->first_line, l->first_column};
  return s;
}

/* At most this many diagnostics are held (the sink stops at 50 errors). */
enum { MAX_HELD = 4096 };

static void hold(hlo_parser *p, diag_level lvl, src_loc loc, const char *fmt, va_list ap) {
  if (lvl == DIAG_ERROR) p->errors++;
  if (p->diags.n >= MAX_HELD) return;
  strbuf b;
  sb_init(&b);
  sb_vprintf(&b, fmt, ap);
  const char *msg = arena_strdup(p->scratch, sb_str(&b));
  sb_free(&b);
  hlo_diag hd;
  memset(&hd, 0, sizeof hd);
  hd.loc = loc;
  hd.level = lvl;
  hd.msg = msg;
  hd.seq = p->diags.n;
  if (lvl == DIAG_NOTE && p->diags.n) {
    hd.group = p->diags.v[p->diags.n - 1].group;
    hd.anchor = p->diags.v[p->diags.n - 1].anchor;
  } else {
    hd.group = p->diags.n;
    hd.anchor = loc;
  }
  VEC_PUSH(p->scratch, p->diags, hd);
}

void fe_hlo_verror(hlo_parser *p, src_loc loc, const char *fmt, va_list ap) {
  hold(p, DIAG_ERROR, loc, fmt, ap);
}

void fe_hlo_error(hlo_parser *p, src_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hold(p, DIAG_ERROR, loc, fmt, ap);
  va_end(ap);
}

void fe_hlo_warning(hlo_parser *p, src_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hold(p, DIAG_WARNING, loc, fmt, ap);
  va_end(ap);
}

void fe_hlo_note(hlo_parser *p, src_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hold(p, DIAG_NOTE, loc, fmt, ap);
  va_end(ap);
}

static int by_location(const void *a, const void *b) {
  const hlo_diag *x = a, *y = b;
  if (x->anchor.line != y->anchor.line) return x->anchor.line < y->anchor.line ? -1 : 1;
  if (x->anchor.col != y->anchor.col) return x->anchor.col < y->anchor.col ? -1 : 1;
  if (x->group != y->group) return x->group < y->group ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void fe_hlo_flush(hlo_parser *p) {
  if (p->diags.n > 1)
    qsort(p->diags.v, (size_t)p->diags.n, sizeof(hlo_diag), by_location);
  for (int i = 0; i < p->diags.n; i++)
    diag_report(p->d, p->diags.v[i].level, p->diags.v[i].loc, "%s", p->diags.v[i].msg);
  p->diags.n = 0;
}

bool fe_hlo_int(hlo_parser *p, const hlo_tok *t, int64_t *out) {
  errno = 0;
  char *end;
  long long v = strtoll(t->text, &end, 10);
  if (errno == ERANGE || *end != 0 || end == t->text) {
    fe_hlo_error(p, t->loc, "integer '%s' is out of range", t->text);
    return false;
  }
  *out = v;
  return true;
}

const char *fe_hlo_tok_text(hlo_parser *p, const hlo_tok *t) {
  return arena_strndup(p->m->arena, p->text + t->off, t->end - t->off);
}

/* XLA element types that tpucc does not implement: named in errors. */
static const char *const xla_only_types[] = {
    "s1", "s2", "u1", "u2", "f8e5m2", "f8e4m3", "f8e4m3fn", "f8e4m3b11fnuz",
    "f8e5m2fnuz", "f8e4m3fnuz", "f8e3m4", "f4e2m1fn", "f8e8m0fnu", "opaque",
};

static ir_shape *bad_shape(hlo_parser *p) {
  ir_shape *s = arena_alloc(p->scratch, sizeof *s);
  s->type = IR_TYPE_INVALID;
  return s;
}

/* Reads "1,0:T(8,128)(2,1)E(16)S(1)" (as the grammar flattened it) into
 * *l for shape s. Returns false after reporting. */
static bool read_layout(hlo_parser *p, const ir_shape *s, hlo_tokvec *lay, src_loc at,
                        ir_layout *l) {
  memset(l, 0, sizeof *l);
  int i = 0, nminor = 0;
  bool seen[IR_MAX_RANK] = {false};
  for (; i < lay->n && lay->v[i]->kind == INT; i++, nminor++) {
    int64_t v;
    if (!fe_hlo_int(p, lay->v[i], &v)) return false;
    if (nminor >= s->rank || v < 0 || v >= s->rank) {
      fe_hlo_error(p, lay->v[i]->loc,
                   "layout dimension %lld is out of range for a rank-%d shape",
                   (long long)v, s->rank);
      return false;
    }
    if (seen[v]) {
      fe_hlo_error(p, lay->v[i]->loc, "layout lists dimension %lld twice", (long long)v);
      return false;
    }
    seen[v] = true;
    l->minor_to_major[nminor] = (int8_t)v;
  }
  if (nminor != s->rank) {
    fe_hlo_error(p, at, "layout has %d dimensions but the shape has rank %d",
                 nminor, s->rank);
    return false;
  }
  if (i < lay->n) i++; /* the ':' marker */
  while (i < lay->n) {
    hlo_tok *name = lay->v[i++];
    int ngroups = 0;
    while (i + ngroups < lay->n && lay->v[i + ngroups]->kind == HLO_GROUP) ngroups++;
    hlo_tok **g = &lay->v[i];
    i += ngroups;
    if (strcmp(name->text, "T") == 0) {
      for (int k = 0; k < ngroups; k++) {
        if (l->ntiles >= IR_MAX_TILES) {
          fe_hlo_error(p, g[k]->loc, "more than %d tiles in a layout", IR_MAX_TILES);
          return false;
        }
        ir_tile *t = &l->tiles[l->ntiles++];
        if (g[k]->n > IR_MAX_TILE_RANK) {
          fe_hlo_error(p, g[k]->loc, "tile of rank %d exceeds the maximum of %d",
                       g[k]->n, IR_MAX_TILE_RANK);
          return false;
        }
        t->rank = (int8_t)g[k]->n;
        for (int d = 0; d < g[k]->n; d++) {
          hlo_tok *x = g[k]->kids[d];
          if (x->kind == '*') {
            t->dims[d] = IR_TILE_COMBINE;
            continue;
          }
          int64_t v;
          if (!fe_hlo_int(p, x, &v)) return false;
          if (v <= 0) {
            fe_hlo_error(p, x->loc, "tile dimension must be positive, got %lld", (long long)v);
            return false;
          }
          t->dims[d] = v;
        }
      }
    } else if (strcmp(name->text, "E") == 0 || strcmp(name->text, "S") == 0) {
      int64_t v;
      if (ngroups != 1 || g[0]->n != 1 || g[0]->kids[0]->kind != INT) {
        fe_hlo_error(p, name->loc, "layout item %s takes one integer, as in %s(1)",
                     name->text, name->text);
        return false;
      }
      if (!fe_hlo_int(p, g[0]->kids[0], &v)) return false;
      if (v < 0 || v > INT32_MAX) {
        fe_hlo_error(p, g[0]->kids[0]->loc, "layout item %s(%lld) is out of range",
                     name->text, (long long)v);
        return false;
      }
      if (name->text[0] == 'E') l->element_bits = (int32_t)v;
      else l->memory_space = (int32_t)v;
    } else {
      fe_hlo_error(p, name->loc, "unsupported layout item '%s' (tpucc reads T, E and S)",
                   name->text);
      return false;
    }
  }
  return true;
}

ir_shape *fe_hlo_array_shape(hlo_parser *p, hlo_tok *type, hlo_tokvec *dims,
                             hlo_tokvec *layout) {
  ir_type t = ir_type_from_name(type->text, (size_t)type->len);
  if (t == IR_TYPE_INVALID) {
    bool xla = false;
    for (size_t i = 0; i < COUNTOF(xla_only_types); i++)
      if (strcmp(type->text, xla_only_types[i]) == 0) xla = true;
    if (xla)
      fe_hlo_error(p, type->loc,
                   "unsupported element type '%s' (tpucc reads pred, s4, s8, s16, s32, s64, "
                   "u4, u8, u16, u32, u64, bf16, f16, f32, f64, c64, c128 and token)",
                   type->text);
    else
      fe_hlo_error(p, type->loc, "unknown element type '%s'", type->text);
    return bad_shape(p);
  }
  ir_shape *s = arena_alloc(p->scratch, sizeof *s);
  s->type = t;
  if (dims->n > IR_MAX_RANK) {
    fe_hlo_error(p, type->loc, "rank %d exceeds the maximum of %d", dims->n, IR_MAX_RANK);
    return bad_shape(p);
  }
  s->rank = (int8_t)dims->n;
  for (int i = 0; i < dims->n; i++) {
    hlo_tok *d = dims->v[i];
    if (d->kind != INT) {
      fe_hlo_error(p, d->loc, "dynamic dimensions ('%s') are not supported", d->text);
      return bad_shape(p);
    }
    if (!fe_hlo_int(p, d, &s->dims[i])) return bad_shape(p);
    if (s->dims[i] < 0) {
      fe_hlo_error(p, d->loc, "dimension %d is negative (%lld)", i, (long long)s->dims[i]);
      return bad_shape(p);
    }
  }
  int64_t n;
  if (!ir_shape_elements(s, &n)) {
    fe_hlo_error(p, type->loc,
                 "shape has too many elements (the limit is 2^40)");
    return bad_shape(p);
  }
  ir_shape_default_layout(s);
  ir_layout l;
  if (layout) {
    if (!read_layout(p, s, layout, type->loc, &l)) return bad_shape(p);
    ir_shape_set_layout(p->m->arena, s, &l);
  }
  return s;
}

ir_shape *fe_hlo_tuple_shape(hlo_parser *p, hlo_shapevec *elems) {
  ir_shape *s = arena_alloc(p->scratch, sizeof *s);
  s->type = IR_TUPLE;
  s->ntuple = elems->n;
  s->tuple = arena_array(p->scratch, (size_t)(elems->n ? elems->n : 1), sizeof(ir_shape));
  for (int i = 0; i < elems->n; i++) {
    if (elems->v[i]->type == IR_TYPE_INVALID) return bad_shape(p);
    s->tuple[i] = *elems->v[i];
  }
  return s;
}

ir_module *fe_parse_hlo(const char *file, const char *text, size_t len, diag *d) {
  if (!file) file = "<hlo>";
  diag_add_source(d, file, text, len);
  hlo_parser p;
  memset(&p, 0, sizeof p);
  p.scratch = arena_create();
  p.m = ir_module_create("module");
  p.file = arena_strdup(p.m->arena, file);
  p.m->source_file = p.file;
  p.d = d;
  p.text = text;
  p.len = len;
  p.line = 1;
  p.col = 1;
  ir_module *m = NULL;
  if (len > INT_MAX / 2) {
    src_loc at = {p.file, 0, 0};
    fe_hlo_error(&p, at, "input is too large (%zu bytes)", len);
  } else {
    yyscan_t sc;
    if (hlo_yylex_init_extra(&p, &sc) != 0) base_die("hlo_yylex_init_extra failed");
    YY_BUFFER_STATE b = hlo_yy_scan_bytes(text, (int)len, sc);
    int rc = hlo_yyparse(sc, &p);
    hlo_yy_delete_buffer(b, sc);
    hlo_yylex_destroy(sc);
    if (rc != 0 && p.errors == 0) {
      src_loc at = {p.file, p.line, p.col};
      fe_hlo_error(&p, at, "cannot parse the module");
    }
    if (rc == 0) m = fe_hlo_build(&p);
  }
  fe_hlo_flush(&p);
  arena_destroy(p.scratch);
  if (!m) ir_module_destroy(p.m);
  return m;
}
