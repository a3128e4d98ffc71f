/* print.c: the HLO text printer, in XLA's own printed form.
 *
 * Long form (XLA's HloModule::ToString()): "%" before names, operand
 * shapes, computation signatures "(p: f32[2]) -> f32[2]". Short form (XLA's
 * HloPrintOptions::ShortParsable()): bare names, no operand shapes, no
 * signatures; metadata and opaque attributes are still printed (XLA drops
 * them there) so that nothing is lost. Both read back with fe_parse_hlo.
 *
 *   HloModule name[, is_scheduled=true][, raw...], entry_computation_layout={(...)->...}
 *
 *   FileNames                               stack-frame tables, when the
 *   1 "a.py"                                module has them, rows verbatim
 *
 *   %callee (p: f32[]) -> f32[] {           computations callees first,
 *     %p = f32[] parameter(0)               instructions in XLA's post order
 *     ROOT %r = f32[] negate(f32[] %p)      (depth first from each
 *   }                                        instruction without users;
 *                                            scheduled modules: as stored)
 *   ENTRY %main ... { ... }                  the entry last
 *
 * As XLA does, tuple shapes, the entry layout's parameters and (long form)
 * operand lists mark every fifth element with an index comment, as in
 * "(f32[], f32[], f32[], f32[], f32[], /\*index=5*\/f32[])".
 *
 * Attributes follow XLA's order: the op's own (interpreted, then those kept
 * verbatim, in stored order; an OPF_DECLARED op's called computations sit
 * among them where they were written), then to_apply/calls, the generic
 * ones kept verbatim (sharding, frontend_attributes, ...), metadata,
 * backend_config. Literals print as XLA's
 * one-line form ("{ { 1, 2 }, { 3, 4 } }", /\*i0=0*\/ comments above rank
 * 3) with XLA's float spelling: %.6g for f32 when it reads back exactly,
 * else %.9g; bf16 %.4g; f16 %.5g; inf, -inf, nan, nan(0xPAYLOAD) when the
 * payload is not the default quiet one. Every value reads back bit-exact. */
#include "ir/ir.h"

#include <math.h>
#include <stdlib.h>

/* ---- shapes ---- */

static void put_shape(strbuf *b, const ir_shape *s, bool layout) {
  ir_shape_print_indexed(b, s, layout);
}

/* ---- literals ---- */

static void put_nan(strbuf *b, uint32_t bits, uint32_t sign, uint32_t mask, uint32_t quiet) {
  sb_puts(b, (bits & sign) ? "-nan" : "nan");
  if ((bits & mask) != quiet) sb_printf(b, "(0x%x)", (unsigned)(bits & mask));
}

/* XLA's round-trip spelling: %.6g (f32) or %.15g (f64) when that reads
 * back exactly, else %.9g or %.17g. */
static void put_f32(strbuf *b, float f) {
  char buf[64];
  uint32_t u;
  memcpy(&u, &f, 4);
  if (isnan(f)) {
    put_nan(b, u, 0x80000000u, 0x7fffffu, 0x400000u);
    return;
  }
  if (isinf(f)) {
    sb_puts(b, f < 0 ? "-inf" : "inf");
    return;
  }
  snprintf(buf, sizeof buf, "%.6g", (double)f);
  if (strtof(buf, NULL) != f) snprintf(buf, sizeof buf, "%.9g", (double)f);
  sb_puts(b, buf);
}

static void put_f64(strbuf *b, double d) {
  char buf[64];
  uint64_t u;
  memcpy(&u, &d, 8);
  if (isnan(d)) {
    sb_puts(b, (u >> 63) ? "-nan" : "nan");
    uint64_t payload = u & ((UINT64_C(1) << 52) - 1);
    if (payload != (UINT64_C(1) << 51)) sb_printf(b, "(0x%llx)", (unsigned long long)payload);
    return;
  }
  if (isinf(d)) {
    sb_puts(b, d < 0 ? "-inf" : "inf");
    return;
  }
  snprintf(buf, sizeof buf, "%.15g", d);
  if (strtod(buf, NULL) != d) snprintf(buf, sizeof buf, "%.17g", d);
  sb_puts(b, buf);
}

static void put_elem(strbuf *b, const ir_literal *l, int64_t i, bool in_array) {
  char buf[64];
  switch (l->shape.type) {
  case IR_PRED: {
    bool v = ((const uint8_t *)l->data)[i] != 0;
    sb_puts(b, in_array ? (v ? "1" : "0") : (v ? "true" : "false"));
    return;
  }
  case IR_S8: sb_printf(b, "%d", ((const int8_t *)l->data)[i]); return;
  case IR_S32: sb_printf(b, "%d", ((const int32_t *)l->data)[i]); return;
  case IR_S4: case IR_S16: case IR_S64:
    sb_printf(b, "%lld", (long long)ir_literal_get_i64(l, i));
    return;
  case IR_U4: case IR_U8: case IR_U16: case IR_U32: case IR_U64:
    sb_printf(b, "%llu", (unsigned long long)ir_literal_get_i64(l, i));
    return;
  case IR_F64: put_f64(b, ((const double *)l->data)[i]); return;
  case IR_C64: case IR_C128: {
    bool wide = l->shape.type == IR_C128;
    double re = wide ? ((const double *)l->data)[2 * i] : ((const float *)l->data)[2 * i];
    double im = wide ? ((const double *)l->data)[2 * i + 1] : ((const float *)l->data)[2 * i + 1];
    sb_putc(b, '(');
    if (wide) put_f64(b, re);
    else put_f32(b, (float)re);
    sb_puts(b, ", ");
    if (wide) put_f64(b, im);
    else put_f32(b, (float)im);
    sb_putc(b, ')');
    return;
  }
  case IR_F32: {
    float f;
    memcpy(&f, (const char *)l->data + 4 * i, 4);
    put_f32(b, f);
    return;
  }
  case IR_BF16:
  case IR_F16: {
    uint16_t h = ((const uint16_t *)l->data)[i];
    bool bf = l->shape.type == IR_BF16;
    float f = bf ? ir_bf16_to_f32(h) : ir_f16_to_f32(h);
    if (isnan(f)) {
      put_nan(b, h, 0x8000u, bf ? 0x7fu : 0x3ffu, bf ? 0x40u : 0x200u);
      return;
    }
    if (isinf(f)) {
      sb_puts(b, f < 0 ? "-inf" : "inf");
      return;
    }
    snprintf(buf, sizeof buf, bf ? "%.4g" : "%.5g", (double)f);
    sb_puts(b, buf);
    return;
  }
  default: base_die("put_elem on %s", ir_type_name(l->shape.type));
  }
}

/* XLA's multi-line literal layout; the caller collapses whitespace. */
static void lit_rec(strbuf *t, const ir_literal *l, int depth, int64_t *accum, int64_t *next) {
  const ir_shape *s = &l->shape;
  int rank = s->rank, left = rank - depth;
  if (left == 0) {
    put_elem(t, l, (*next)++, rank > 0);
    return;
  }
  int64_t n = s->dims[depth];
  if (rank == 1) sb_putc(t, '{');
  else if (left == 1) sb_puts(t, n <= 1 ? "  {" : "  { ");
  else if (rank > 3 && depth > 0)
    sb_printf(t, "{ /*i%d=%lld*/\n", depth - 1, (long long)accum[depth - 1]);
  else sb_puts(t, "{\n");
  for (int64_t i = 0; i < n; i++) {
    accum[depth] = i;
    lit_rec(t, l, depth + 1, accum, next);
    if (i < n - 1) sb_puts(t, left > 1 ? ",\n" : ", ");
  }
  if (rank == 1) sb_putc(t, '}');
  else if (left == 1) sb_puts(t, n <= 1 ? "}" : " }");
  else sb_puts(t, "\n}");
}

static void lit_multiline(strbuf *t, const ir_literal *l) {
  if (l->shape.type == IR_TUPLE) {
    sb_puts(t, "(\n");
    for (int i = 0; i < l->shape.ntuple; i++) {
      if (i) sb_puts(t, ",\n");
      lit_multiline(t, l->elems[i]);
    }
    sb_puts(t, "\n)");
    return;
  }
  int64_t accum[IR_MAX_RANK] = {0}, next = 0;
  lit_rec(t, l, 0, accum, &next);
}

void ir_literal_print(strbuf *b, const ir_literal *l) {
  strbuf t;
  sb_init(&t);
  lit_multiline(&t, l);
  /* one line: every run of spaces and newlines becomes one space */
  const char *s = sb_str(&t);
  bool space = false;
  for (size_t i = 0; i < t.len; i++) {
    if (s[i] == ' ' || s[i] == '\n') {
      space = true;
      continue;
    }
    if (space) sb_putc(b, ' ');
    space = false;
    sb_putc(b, s[i]);
  }
  sb_free(&t);
}

/* ---- instructions ---- */

typedef struct pctx {
  strbuf *b;
  const ir_module *m;
  bool shrt;
} pctx;

static void put_name(pctx *x, const char *name) {
  if (!x->shrt) sb_putc(x->b, '%');
  sb_puts(x->b, name);
}

static void put_ints(strbuf *b, const ir_ints *v) {
  sb_putc(b, '{');
  for (int i = 0; i < v->n; i++) sb_printf(b, "%s%lld", i ? "," : "", (long long)v->v[i]);
  sb_putc(b, '}');
}

static void put_escaped(strbuf *b, const char *s) {
  sb_putc(b, '"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    switch (c) {
    case '\n': sb_puts(b, "\\n"); break;
    case '\r': sb_puts(b, "\\r"); break;
    case '\t': sb_puts(b, "\\t"); break;
    case '"': sb_puts(b, "\\\""); break;
    case '\'': sb_puts(b, "\\'"); break;
    case '\\': sb_puts(b, "\\\\"); break;
    default:
      if (c < 32 || c >= 127) sb_printf(b, "\\%03o", c);
      else sb_putc(b, (char)c);
    }
  }
  sb_putc(b, '"');
}

static void put_window(strbuf *b, const ir_window *w) {
  sb_puts(b, "{size=");
  for (int i = 0; i < w->rank; i++) sb_printf(b, "%s%lld", i ? "x" : "", (long long)w->dims[i].size);
  bool stride = false, pad = false, ld = false, rd = false, rev = false;
  for (int i = 0; i < w->rank; i++) {
    const ir_window_dim *d = &w->dims[i];
    stride |= d->stride != 1;
    pad |= d->pad_lo != 0 || d->pad_hi != 0;
    ld |= d->lhs_dilate != 1;
    rd |= d->rhs_dilate != 1;
    rev |= d->reversal;
  }
  if (stride) {
    sb_puts(b, " stride=");
    for (int i = 0; i < w->rank; i++) sb_printf(b, "%s%lld", i ? "x" : "", (long long)w->dims[i].stride);
  }
  if (pad) {
    sb_puts(b, " pad=");
    for (int i = 0; i < w->rank; i++)
      sb_printf(b, "%s%lld_%lld", i ? "x" : "", (long long)w->dims[i].pad_lo,
                (long long)w->dims[i].pad_hi);
  }
  if (ld) {
    sb_puts(b, " lhs_dilate=");
    for (int i = 0; i < w->rank; i++) sb_printf(b, "%s%lld", i ? "x" : "", (long long)w->dims[i].lhs_dilate);
  }
  if (rd) {
    sb_puts(b, " rhs_dilate=");
    for (int i = 0; i < w->rank; i++) sb_printf(b, "%s%lld", i ? "x" : "", (long long)w->dims[i].rhs_dilate);
  }
  if (rev) {
    sb_puts(b, " rhs_reversal=");
    for (int i = 0; i < w->rank; i++) sb_printf(b, "%s%d", i ? "x" : "", w->dims[i].reversal ? 1 : 0);
  }
  sb_putc(b, '}');
}

static void put_labels(strbuf *b, int n, int8_t a, int8_t c, const int8_t *sp, const char *ac) {
  char s[IR_MAX_RANK + 1];
  memset(s, '?', sizeof s);
  s[n + 2] = 0;
  if (a >= 0 && a < n + 2) s[a] = ac[0];
  if (c >= 0 && c < n + 2) s[c] = ac[1];
  for (int i = 0; i < n; i++)
    if (sp[i] >= 0 && sp[i] < n + 2) s[sp[i]] = (char)('0' + i);
  sb_puts(b, s);
}

/* preferred_element_type is not XLA syntax: XLA's result type is the
 * preferred type. Exception to the TYPE kind's printing: it is elided when
 * unset (zero-filled attributes read as pred, which counts as unset unless
 * the result is pred, as in ir_infer_shape) or equal to the result's
 * element type. */
static bool preferred_elided(const ir_inst *in, ir_type t) {
  if ((unsigned)t >= IR_TUPLE || !ir_shape_is_array(in->shape)) return true;
  if (t == IR_PRED && in->shape->type != IR_PRED) return true;
  return t == in->shape->type;
}

static int enum_at(const ir_attrs *a, size_t off) { return *IR_ATTR_CFIELD(a, off, int); }

static const char *enum_name(const ir_attr_desc *d, int v) {
  for (int i = 0; d->names[i]; i++)
    if (i == v) return d->names[i];
  return "<bad>";
}

/* Whether the printer leaves row d out of in (IR_AF_OMIT: at its default). */
static bool attr_elided(const ir_attr_desc *d, const ir_inst *in) {
  const ir_attrs *a = in->a;
  if (d->kind == IR_AK_TYPE) return preferred_elided(in, *IR_ATTR_CFIELD(a, d->f, ir_type));
  if (!(d->flags & IR_AF_OMIT)) return false;
  switch (d->kind) {
  case IR_AK_INT: return *IR_ATTR_CFIELD(a, d->f, int64_t) <= d->min;
  case IR_AK_INTS: return IR_ATTR_CFIELD(a, d->f, ir_ints)->n == 0;
  case IR_AK_ENUM: return enum_at(a, d->f) == 0;
  case IR_AK_PREC: return enum_at(a, d->f) == 0 && enum_at(a, d->f + sizeof(int)) == 0;
  case IR_AK_WINDOW: return ir_window_of(a)->rank == 0;
  default: return false;
  }
}

/* One attribute's value, as the HLO parser reads it (per kind). */
static void put_attr_value(strbuf *b, const ir_attr_desc *d, const ir_inst *in) {
  const ir_attrs *a = in->a;
  switch (d->kind) {
  case IR_AK_INT: sb_printf(b, "%lld", (long long)*IR_ATTR_CFIELD(a, d->f, int64_t)); break;
  case IR_AK_INTS: put_ints(b, IR_ATTR_CFIELD(a, d->f, ir_ints)); break;
  case IR_AK_SLICE: {
    const ir_ints *st = IR_ATTR_CFIELD(a, d->f, ir_ints), *li = IR_ATTR_CFIELD(a, d->g, ir_ints),
                  *sd = IR_ATTR_CFIELD(a, d->h, ir_ints);
    /* strides are shown for every dimension when any differs from 1 */
    bool strided = false;
    for (int i = 0; i < sd->n; i++) strided |= sd->v[i] != 1;
    sb_putc(b, '{');
    for (int i = 0; i < st->n; i++) {
      sb_printf(b, "%s[%lld:%lld", i ? ", " : "", (long long)st->v[i], (long long)li->v[i]);
      if (strided) sb_printf(b, ":%lld", (long long)(i < sd->n ? sd->v[i] : 1));
      sb_putc(b, ']');
    }
    sb_putc(b, '}');
    break;
  }
  case IR_AK_PADS: {
    const ir_padding_dim *pd = *IR_ATTR_CFIELD(a, d->f, ir_padding_dim *);
    int32_t n = *IR_ATTR_CFIELD(a, d->g, int32_t);
    bool interior = false;
    for (int i = 0; i < n; i++) interior |= pd[i].interior != 0;
    for (int i = 0; i < n; i++) {
      sb_printf(b, "%s%lld_%lld", i ? "x" : "", (long long)pd[i].lo, (long long)pd[i].hi);
      if (interior) sb_printf(b, "_%lld", (long long)pd[i].interior);
    }
    break;
  }
  case IR_AK_ENUM: sb_puts(b, enum_name(d, enum_at(a, d->f))); break;
  case IR_AK_PREC:
    sb_printf(b, "{%s,%s}", enum_name(d, enum_at(a, d->f)),
              enum_name(d, enum_at(a, d->f + sizeof(int))));
    break;
  case IR_AK_WINDOW: put_window(b, ir_window_of(a)); break;
  case IR_AK_CONV: {
    const ir_conv_dims *c = IR_ATTR_CFIELD(a, d->f, ir_conv_dims);
    put_labels(b, c->nspatial, c->in_batch, c->in_feature, c->in_spatial, "bf");
    sb_putc(b, '_');
    put_labels(b, c->nspatial, c->k_in, c->k_out, c->k_spatial, "io");
    sb_puts(b, "->");
    put_labels(b, c->nspatial, c->out_batch, c->out_feature, c->out_spatial, "bf");
    break;
  }
  case IR_AK_GROUPS: {
    const ir_replica_groups *rg = IR_ATTR_CFIELD(a, d->f, ir_replica_groups);
    if (rg->iota) {
      sb_puts(b, rg->iota);
      break;
    }
    sb_putc(b, '{');
    for (int g = 0; g < rg->ngroups; g++) {
      if (g) sb_putc(b, ',');
      put_ints(b, &rg->groups[g]);
    }
    sb_putc(b, '}');
    break;
  }
  case IR_AK_TYPE: sb_puts(b, ir_type_name(*IR_ATTR_CFIELD(a, d->f, ir_type))); break;
  case IR_AK_LITERAL: ir_literal_print(b, *IR_ATTR_CFIELD(a, d->f, ir_literal *)); break;
  }
}

/* Attributes any instruction may carry, which XLA prints after the called
 * computations (metadata and backend_config come last, separately). */
static bool generic_attr(const char *name) {
  static const char *const names[] = {"sharding", "frontend_attributes", "statistics",
                                      "control-predecessors", "origin", "metadata",
                                      "backend_config"};
  for (size_t i = 0; i < COUNTOF(names); i++)
    if (strcmp(name, names[i]) == 0) return true;
  return false;
}

static void put_comp_name(pctx *x, ir_comp_id c) {
  if (c >= 0 && c < x->m->comps.n) put_name(x, x->m->comps.v[c].name);
  else sb_printf(x->b, "<bad computation %d>", c);
}

/* A called-computation attribute kept in place: "name=%c", "name={%a, %b}". */
static void put_raw_calls(pctx *x, const ir_inst *in, const ir_raw_attr *r) {
  sb_printf(x->b, ", %s=%s", r->name, r->list ? "{" : "");
  for (int j = 0; j < r->ncalls; j++) {
    int k = r->first_call + j;
    if (j) sb_puts(x->b, ", ");
    put_comp_name(x, k >= 0 && k < in->ncalls ? in->calls[k] : IR_NONE);
  }
  if (r->list) sb_putc(x->b, '}');
}

static void put_attrs(pctx *x, const ir_inst *in) {
  strbuf *b = x->b;
  for (int r = 0; r < ir_attr_count && ir_attr_on(&ir_attr_ops_any, in->op); r++) {
    const ir_attr_desc *d = &ir_attr_table[r];
    if ((d->flags & IR_AF_NOT_HLO) || !ir_attr_on(&d->ops, in->op) || attr_elided(d, in)) continue;
    sb_printf(b, ", %s=", d->name);
    put_attr_value(b, d, in);
  }
  /* XLA's order: the op's own attributes (kept ones included), called
   * computations, then the generic ones */
  bool placed_calls = false;
  for (int k = 0; k < in->info->nraw; k++) {
    const ir_raw_attr *r = &in->info->raw[k];
    if (!r->text) {
      put_raw_calls(x, in, r);
      placed_calls = true;
    } else if (!generic_attr(r->name)) {
      sb_printf(b, ", %s=%s", r->name, r->text);
    }
  }
  /* the callees' spellings: select-and-scatter names its two */
  static const char *const sas_calls[] = {", select=", ", scatter="};
  for (int k = 0; k < in->ncalls && !placed_calls; k++) {
    sb_puts(b, in->op == IR_OP_FUSION                        ? ", calls="
               : in->op == IR_OP_SELECT_AND_SCATTER && k < 2 ? sas_calls[k]
                                                             : ", to_apply=");
    put_comp_name(x, in->calls[k]);
  }
  const char *raw_meta = NULL, *raw_backend = NULL;
  for (int k = 0; k < in->info->nraw; k++) {
    if (!in->info->raw[k].text) continue;
    if (strcmp(in->info->raw[k].name, "metadata") == 0) raw_meta = in->info->raw[k].text;
    else if (strcmp(in->info->raw[k].name, "backend_config") == 0) raw_backend = in->info->raw[k].text;
    else if (generic_attr(in->info->raw[k].name)) sb_printf(b, ", %s=%s",
                                                            in->info->raw[k].name,
                                                            in->info->raw[k].text);
  }
  const ir_metadata *md = &in->info->meta;
  if (raw_meta) {
    sb_printf(b, ", metadata=%s", raw_meta);
  } else if (md->op_type || md->op_name || md->source_file || md->source_line) {
    sb_puts(b, ", metadata={");
    const char *sep = "";
    if (md->op_type) {
      sb_puts(b, "op_type=");
      put_escaped(b, md->op_type);
      sep = " ";
    }
    if (md->op_name) {
      sb_printf(b, "%sop_name=", sep);
      put_escaped(b, md->op_name);
      sep = " ";
    }
    if (md->source_file) {
      sb_printf(b, "%ssource_file=", sep);
      put_escaped(b, md->source_file);
      sep = " ";
    }
    if (md->source_line) sb_printf(b, "%ssource_line=%d", sep, md->source_line);
    sb_putc(b, '}');
  }
  if (raw_backend) sb_printf(b, ", backend_config=%s", raw_backend);
}

static void put_inst(pctx *x, ir_comp_id c, ir_id i) {
  const ir_comp *cp = &x->m->comps.v[c];
  const ir_inst *in = &cp->insts.v[i];
  strbuf *b = x->b;
  if (cp->root == i) sb_puts(b, "ROOT ");
  put_name(x, in->info->name);
  sb_puts(b, " = ");
  put_shape(b, in->shape, true);
  sb_printf(b, " %s(", ir_op_name(in->op));
  if (in->op == IR_OP_PARAMETER) {
    sb_printf(b, "%lld", (long long) in->a->parameter_number);
  } else if (in->op == IR_OP_CONSTANT) {
    if (in->a->literal) ir_literal_print(b, in->a->literal);
  } else {
    for (int k = 0; k < in->nops; k++) {
      if (k) sb_puts(b, ", ");
      if (!x->shrt && k && k % 5 == 0) sb_printf(b, "/*index=%d*/", k);
      ir_id o = in->ops[k];
      if (o < 0 || o >= cp->insts.n) {
        sb_printf(b, "<bad operand %d>", o);
        continue;
      }
      if (!x->shrt) {
        put_shape(b, cp->insts.v[o].shape, true);
        sb_putc(b, ' ');
      }
      put_name(x, cp->insts.v[o].info->name);
    }
  }
  sb_putc(b, ')');
  put_attrs(x, in);
}

void ir_print_inst(strbuf *b, const ir_module *m, ir_comp_id c, ir_id i) {
  pctx x = {b, m, false};
  put_inst(&x, c, i);
}

/* ---- computations ---- */

/* XLA's instruction post order: depth first (operands in order) from each
 * instruction without users, in stored order. */
static int post_order(const ir_comp *cp, ir_id *out) {
  int n = cp->insts.n, no = 0;
  if (n == 0) return 0;
  int *users = calloc((size_t)n, sizeof(int));
  uint8_t *state = calloc((size_t)n, 1);
  ir_id *stack = malloc(sizeof(ir_id) * (size_t)n);
  int *next = malloc(sizeof(int) * (size_t)n);
  if (!users || !state || !stack || !next) base_out_of_memory(0);
  for (int i = 0; i < n; i++) {
    const ir_inst *in = &cp->insts.v[i];
    if (in->dead) continue;
    for (int k = 0; k < in->nops; k++)
      if (in->ops[k] >= 0 && in->ops[k] < n) users[in->ops[k]]++;
  }
  for (int s = 0; s < n; s++) {
    if (cp->insts.v[s].dead || users[s] || state[s]) continue;
    int sp = 0;
    stack[sp] = s;
    next[sp++] = 0;
    state[s] = 1;
    while (sp) {
      const ir_inst *in = &cp->insts.v[stack[sp - 1]];
      if (next[sp - 1] < in->nops) {
        ir_id o = in->ops[next[sp - 1]++];
        if (o < 0 || o >= n || state[o]) continue;
        state[o] = 1;
        stack[sp] = o;
        next[sp++] = 0;
      } else {
        out[no++] = stack[--sp];
      }
    }
  }
  /* anything left is on a cycle (never in verified IR): stored order */
  for (int i = 0; i < n; i++)
    if (!cp->insts.v[i].dead && !state[i]) out[no++] = i;
  free(users);
  free(state);
  free(stack);
  free(next);
  return no;
}

static void put_comp(pctx *x, ir_comp_id c) {
  const ir_comp *cp = &x->m->comps.v[c];
  strbuf *b = x->b;
  if (c == x->m->entry) sb_puts(b, "ENTRY ");
  put_name(x, cp->name);
  if (!x->shrt) {
    sb_puts(b, " (");
    for (int k = 0; k < cp->nparams; k++) {
      if (k) sb_puts(b, ", ");
      ir_id pi = cp->params ? cp->params[k] : IR_NONE;
      if (pi < 0 || pi >= cp->insts.n) {
        sb_printf(b, "<missing parameter %d>", k);
        continue;
      }
      sb_printf(b, "%s: ", cp->insts.v[pi].info->name);
      put_shape(b, cp->insts.v[pi].shape, false);
    }
    sb_puts(b, ") -> ");
    if (cp->root >= 0 && cp->root < cp->insts.n) put_shape(b, cp->insts.v[cp->root].shape, false);
    else sb_puts(b, "()");
  }
  sb_puts(b, " {\n");
  ir_id *order = malloc(sizeof(ir_id) * (size_t)(cp->insts.n + 1));
  if (!order) base_out_of_memory(0);
  int n;
  if (x->m->is_scheduled) {
    n = 0;
    for (int i = 0; i < cp->insts.n; i++)
      if (!cp->insts.v[i].dead) order[n++] = i;
  } else {
    n = post_order(cp, order);
  }
  for (int k = 0; k < n; k++) {
    sb_puts(b, "  ");
    put_inst(x, c, order[k]);
    sb_putc(b, '\n');
  }
  free(order);
  sb_putc(b, '}');
  for (int k = 0; k < cp->nraw; k++) sb_printf(b, ", %s=%s", cp->raw[k].name, cp->raw[k].text);
}

/* Callees first (post order over calls), from computation c. */
static void comp_order(const ir_module *m, ir_comp_id c, uint8_t *seen, ir_comp_id *out, int *n) {
  if (seen[c]) return;
  seen[c] = 1;
  const ir_comp *cp = &m->comps.v[c];
  for (int i = 0; i < cp->insts.n; i++) {
    const ir_inst *in = &cp->insts.v[i];
    if (in->dead) continue;
    for (int k = 0; k < in->ncalls; k++)
      if (in->calls[k] >= 0 && in->calls[k] < m->comps.n) comp_order(m, in->calls[k], seen, out, n);
  }
  out[(*n)++] = c;
}

static void put_entry_layout(strbuf *b, const ir_module *m) {
  if (m->entry < 0 || m->entry >= m->comps.n) return;
  const ir_comp *e = &m->comps.v[m->entry];
  if (e->root < 0 || e->root >= e->insts.n) return;
  sb_puts(b, ", entry_computation_layout={(");
  for (int k = 0; k < e->nparams; k++) {
    if (k) sb_puts(b, ", ");
    if (k && k % 5 == 0) sb_printf(b, "/*index=%d*/", k);
    ir_id pi = e->params ? e->params[k] : IR_NONE;
    if (pi >= 0 && pi < e->insts.n) put_shape(b, e->insts.v[pi].shape, true);
  }
  sb_puts(b, ")->");
  put_shape(b, e->insts.v[e->root].shape, true);
  sb_putc(b, '}');
}

static void print_module(strbuf *b, const ir_module *m, bool shrt) {
  pctx x = {b, m, shrt};
  static const char *const before[] = {"input_output_alias", "buffer_donor",
                                       "alias_passthrough_params"};
  sb_printf(b, "HloModule %s", m->name);
  if (m->is_scheduled) sb_puts(b, ", is_scheduled=true");
  for (size_t j = 0; j < COUNTOF(before); j++)
    for (int k = 0; k < m->nraw; k++)
      if (strcmp(m->raw[k].name, before[j]) == 0)
        sb_printf(b, ", %s=%s", m->raw[k].name, m->raw[k].text);
  put_entry_layout(b, m);
  for (int k = 0; k < m->nraw; k++) {
    bool early = false;
    for (size_t j = 0; j < COUNTOF(before); j++)
      if (strcmp(m->raw[k].name, before[j]) == 0) early = true;
    if (!early) sb_printf(b, ", %s=%s", m->raw[k].name, m->raw[k].text);
  }
  sb_puts(b, "\n\n");
  for (int t = 0; t < m->ntables; t++) {
    sb_printf(b, "%s\n", m->tables[t].name);
    for (int r = 0; r < m->tables[t].nrows; r++)
      sb_printf(b, "%lld %s\n", (long long)m->tables[t].rows[r].id, m->tables[t].rows[r].text);
    sb_putc(b, '\n');
  }
  int nc = m->comps.n, n = 0;
  uint8_t *seen = calloc((size_t)nc + 1, 1);
  ir_comp_id *order = malloc(sizeof(ir_comp_id) * ((size_t)nc + 1));
  if (!seen || !order) base_out_of_memory(0);
  if (m->entry >= 0 && m->entry < nc) seen[m->entry] = 1; /* entry last */
  for (int c = 0; c < nc; c++) comp_order(m, c, seen, order, &n);
  if (m->entry >= 0 && m->entry < nc) {
    seen[m->entry] = 0;
    comp_order(m, m->entry, seen, order, &n);
  }
  for (int k = 0; k < n; k++) {
    if (k) sb_puts(b, "\n\n");
    put_comp(&x, order[k]);
  }
  sb_putc(b, '\n');
  free(seen);
  free(order);
}

void ir_print_module(strbuf *b, const ir_module *m) { print_module(b, m, false); }

void ir_print_module_style(strbuf *b, const ir_module *m, ir_print_style style) {
  print_module(b, m, style == IR_PRINT_SHORT);
}
