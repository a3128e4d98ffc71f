/* attrs.c: HLO attribute values (token trees) into ir_attrs.
 *
 * Each attribute is accepted only on the ops that use it; unknown names
 * are errors, except the opaque ones that tpucc keeps verbatim for round
 * trips (backend_config, frontend_attributes, sharding, statistics,
 * control-predecessors, origin). Value forms:
 *   dimensions={1,0}  lhs_batch_dims={0} ...      integer lists
 *   slice={[0:4:2], [1:3]}                         start:limit[:stride]
 *   padding=0_0_0x1_2_1                            lo_hi[_interior] per dim
 *   window={size=3x3 stride=2x2 pad=1_2x1_2 lhs_dilate=2x2 rhs_dilate=1x1
 *           rhs_reversal=0x1}
 *   dim_labels=b01f_01io->b01f  feature_group_count=N  batch_group_count=N
 *   operand_precision={default,highest}  preferred_element_type=f32
 *   direction=LT  type=TOTALORDER  iota_dimension=N  index=N
 *   replica_groups={{0,1},{2,3}} or [2,2]<=[4] or [2,2]<=[2,2]T(1,0)
 *   channel_id=N  to_apply=comp  calls=comp
 *   kind=kLoop|kInput|kOutput|kCustom
 *   metadata={op_type="..." op_name="..." source_file="..." source_line=N}
 *     (other metadata fields: the whole attribute is also kept verbatim). */
#include "frontend/hlo/hlo.h"

#include "hlo_parse.h"

#include <errno.h>
#include <stdlib.h>
#include <strings.h>


typedef struct actx {
  hlo_attr_ctx *c;
  hlo_parser *p;
  ir_inst_proto *in;
  arena *a; /* module arena */
  const hlo_tok *name;
} actx;

static bool fail(actx *x, const hlo_tok *at, const char *fmt, ...) BASE_PRINTF(3, 4);
static bool fail(actx *x, const hlo_tok *at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fe_hlo_verror(x->p, at->loc, fmt, ap);
  va_end(ap);
  return false;
}

static bool bad_value(actx *x, const hlo_tok *v, const char *expect) {
  return fail(x, v, "bad value for attribute '%s': expected %s", x->name->text, expect);
}

/* Splits a group's children at ',' into items [start[i], start[i]+len[i]). */
typedef struct items {
  int n;
  int *start, *len;
} items;

static bool split(actx *x, const hlo_tok *g, items *it) {
  it->n = 0;
  it->start = arena_array(x->p->scratch, (size_t)g->n + 1, sizeof(int));
  it->len = arena_array(x->p->scratch, (size_t)g->n + 1, sizeof(int));
  if (g->n == 0) return true;
  int s = 0;
  for (int i = 0; i <= g->n; i++) {
    if (i == g->n || g->kids[i]->kind == ',') {
      if (i == s) return fail(x, i < g->n ? g->kids[i] : g, "empty item in a list");
      it->start[it->n] = s;
      it->len[it->n++] = i - s;
      s = i + 1;
    }
  }
  return true;
}

static bool tok_int(actx *x, const hlo_tok *t, int64_t *out) {
  if (t->kind != INT) return bad_value(x, t, "an integer");
  return fe_hlo_int(x->p, t, out);
}

/* {a,b,c} */
static bool int_list(actx *x, const hlo_tok *v, ir_ints *out) {
  if (v->kind != HLO_GROUP || v->open != '{') return bad_value(x, v, "a list such as {0,1}");
  items it;
  if (!split(x, v, &it)) return false;
  out->n = it.n;
  out->v = arena_array(x->a, (size_t)it.n + 1, sizeof(int64_t));
  for (int i = 0; i < it.n; i++) {
    if (it.len[i] != 1) return bad_value(x, v->kids[it.start[i]], "an integer");
    if (!tok_int(x, v->kids[it.start[i]], &out->v[i])) return false;
  }
  return true;
}

/* "3x3" or "3": up to IR_MAX_RANK numbers. */
static int dxd(actx *x, const hlo_tok *t, int64_t *out, bool allow_neg) {
  if (t->kind != INT && t->kind != DXD) {
    bad_value(x, t, "numbers such as 3x3");
    return -1;
  }
  const char *s = t->text;
  int n = 0;
  for (;;) {
    if (n >= IR_MAX_RANK) {
      fail(x, t, "more than %d window dimensions", IR_MAX_RANK);
      return -1;
    }
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE || end == s || (!allow_neg && v < 0)) {
      bad_value(x, t, "non-negative numbers such as 3x3");
      return -1;
    }
    out[n++] = v;
    if (*end == 'x') s = end + 1;
    else break;
  }
  return n;
}

/* "lo_hi[_interior]x..." */
static int pads(actx *x, const hlo_tok *t, ir_padding_dim *out, int max, bool interior_ok) {
  if (t->kind != PAD) {
    bad_value(x, t, interior_ok ? "padding such as 0_0x1_1_0" : "padding such as 1_1x0_0");
    return -1;
  }
  const char *s = t->text;
  int n = 0;
  for (;;) {
    if (n >= max) {
      fail(x, t, "more than %d padded dimensions", max);
      return -1;
    }
    int64_t f[3] = {0, 0, 0};
    int nf = 0;
    for (;;) {
      errno = 0;
      char *end;
      long long v = strtoll(s, &end, 10);
      if (errno == ERANGE || end == s) {
        bad_value(x, t, "integers in padding");
        return -1;
      }
      f[nf++] = v;
      s = end;
      if (*s == '_' && nf < 3) s++;
      else break;
    }
    if (nf == 3 && !interior_ok) {
      bad_value(x, t, "lo_hi pairs (no interior padding in a window)");
      return -1;
    }
    if (f[2] < 0) {
      fail(x, t, "interior padding must not be negative");
      return -1;
    }
    out[n].lo = f[0];
    out[n].hi = f[1];
    out[n].interior = f[2];
    n++;
    if (*s == 'x') s++;
    else break;
  }
  return n;
}

static bool window(actx *x, const hlo_tok *v, ir_window *w) {
  if (v->kind != HLO_GROUP || v->open != '{')
    return bad_value(x, v, "a window such as {size=3x3 stride=1x1}");
  memset(w, 0, sizeof *w);
  int64_t size[IR_MAX_RANK], stride[IR_MAX_RANK], ld[IR_MAX_RANK], rd[IR_MAX_RANK],
      rev[IR_MAX_RANK];
  ir_padding_dim pd[IR_MAX_RANK];
  int nsize = -1, nstride = -1, nld = -1, nrd = -1, nrev = -1, npad = -1;
  const hlo_tok *where[6] = {NULL};
  for (int i = 0; i < v->n; i += 3) {
    const hlo_tok *k = v->kids[i];
    if (k->kind != NAME || i + 2 >= v->n || v->kids[i + 1]->kind != '=')
      return bad_value(x, k, "key=value items such as size=3x3");
    const hlo_tok *val = v->kids[i + 2];
    int *cnt;
    int slot;
    if (strcmp(k->text, "size") == 0) {
      slot = 0;
      cnt = &nsize;
      *cnt = dxd(x, val, size, false);
    } else if (strcmp(k->text, "stride") == 0) {
      slot = 1;
      cnt = &nstride;
      *cnt = dxd(x, val, stride, false);
    } else if (strcmp(k->text, "pad") == 0) {
      slot = 2;
      cnt = &npad;
      *cnt = pads(x, val, pd, IR_MAX_RANK, false);
    } else if (strcmp(k->text, "lhs_dilate") == 0) {
      slot = 3;
      cnt = &nld;
      *cnt = dxd(x, val, ld, false);
    } else if (strcmp(k->text, "rhs_dilate") == 0) {
      slot = 4;
      cnt = &nrd;
      *cnt = dxd(x, val, rd, false);
    } else if (strcmp(k->text, "rhs_reversal") == 0) {
      slot = 5;
      cnt = &nrev;
      *cnt = dxd(x, val, rev, false);
    } else {
      return fail(x, k, "unknown window field '%s'", k->text);
    }
    if (*cnt < 0) return false;
    if (where[slot]) return fail(x, k, "window field '%s' given twice", k->text);
    where[slot] = k;
  }
  if (v->n == 0) return true; /* window={}: no window dimensions */
  if (nsize < 0) return fail(x, v, "window needs size=");
  w->rank = nsize;
  int counts[6] = {nsize, nstride, npad, nld, nrd, nrev};
  for (int s = 1; s < 6; s++)
    if (counts[s] >= 0 && counts[s] != nsize)
      return fail(x, where[s], "window field '%s' has %d dimensions but size= has %d",
                  where[s]->text, counts[s], nsize);
  for (int d = 0; d < nsize; d++) {
    ir_window_dim *wd = &w->dims[d];
    wd->size = size[d];
    wd->stride = nstride >= 0 ? stride[d] : 1;
    wd->pad_lo = npad >= 0 ? pd[d].lo : 0;
    wd->pad_hi = npad >= 0 ? pd[d].hi : 0;
    wd->lhs_dilate = nld >= 0 ? ld[d] : 1;
    wd->rhs_dilate = nrd >= 0 ? rd[d] : 1;
    if (nrev >= 0 && rev[d] > 1) return fail(x, where[5], "rhs_reversal takes 0 or 1 per dimension");
    wd->reversal = nrev >= 0 && rev[d] == 1;
  }
  return true;
}

/* "b01f_01io->b01f" */
static bool dim_labels(actx *x, const hlo_tok *v, ir_conv_dims *cd) {
  if (v->kind != DIMLABELS) return bad_value(x, v, "labels such as b01f_01io->b01f");
  const char *s = v->text;
  const char *u = strchr(s, '_'), *ar = strstr(s, "->");
  size_t lin = (size_t)(u - s), lk = (size_t)(ar - u - 1), lout = strlen(ar + 2);
  if (lin != lk || lin != lout || lin < 2 || lin > IR_MAX_RANK)
    return fail(x, v, "dim_labels '%s': the three parts must have the same length (2..%d)",
                s, IR_MAX_RANK);
  memset(cd, 0, sizeof *cd);
  int ns = (int)lin - 2;
  cd->nspatial = ns;
  const char *parts[3] = {s, u + 1, ar + 2};
  const char *letters[3] = {"bf", "io", "bf"};
  for (int k = 0; k < 3; k++) {
    int8_t l0 = -1, l1 = -1, sp[IR_MAX_RANK];
    for (int d = 0; d < IR_MAX_RANK; d++) sp[d] = -1;
    for (int i = 0; i < (int)lin; i++) {
      char ch = parts[k][i];
      if (ch == letters[k][0] && l0 < 0) l0 = (int8_t)i;
      else if (ch == letters[k][1] && l1 < 0) l1 = (int8_t)i;
      else if (ch >= '0' && ch - '0' < ns && sp[ch - '0'] < 0) sp[ch - '0'] = (int8_t)i;
      else
        return fail(x, v, "dim_labels '%s': '%c' is repeated or out of place", s, ch);
    }
    if (k == 0) {
      cd->in_batch = l0;
      cd->in_feature = l1;
      memcpy(cd->in_spatial, sp, sizeof sp);
    } else if (k == 1) {
      cd->k_in = l0;
      cd->k_out = l1;
      memcpy(cd->k_spatial, sp, sizeof sp);
    } else {
      cd->out_batch = l0;
      cd->out_feature = l1;
      memcpy(cd->out_spatial, sp, sizeof sp);
    }
  }
  return true;
}

static bool slices(actx *x, const hlo_tok *v, ir_ints *st, ir_ints *li, ir_ints *sd) {
  if (v->kind != HLO_GROUP || v->open != '{')
    return bad_value(x, v, "ranges such as {[0:4:2], [1:3]}");
  items it;
  if (!split(x, v, &it)) return false;
  st->n = li->n = sd->n = it.n;
  st->v = arena_array(x->a, (size_t)it.n + 1, sizeof(int64_t));
  li->v = arena_array(x->a, (size_t)it.n + 1, sizeof(int64_t));
  sd->v = arena_array(x->a, (size_t)it.n + 1, sizeof(int64_t));
  for (int i = 0; i < it.n; i++) {
    const hlo_tok *g = v->kids[it.start[i]];
    if (it.len[i] != 1 || g->kind != HLO_GROUP || g->open != '[' ||
        (g->n != 3 && g->n != 5) || g->kids[1]->kind != ':' ||
        (g->n == 5 && g->kids[3]->kind != ':'))
      return bad_value(x, g, "a range such as [0:4] or [0:4:2]");
    if (!tok_int(x, g->kids[0], &st->v[i]) || !tok_int(x, g->kids[2], &li->v[i])) return false;
    sd->v[i] = 1;
    if (g->n == 5 && !tok_int(x, g->kids[4], &sd->v[i])) return false;
  }
  return true;
}

/* "[a,b,...]" of non-negative integers into out (at most IR_MAX_RANK). */
static int bracket_ints(actx *x, const hlo_tok *g, char open, int64_t *out) {
  if (g->kind != HLO_GROUP || g->open != open) {
    bad_value(x, g, open == '[' ? "a list such as [2,2]" : "a permutation such as (1,0)");
    return -1;
  }
  items it;
  if (!split(x, g, &it)) return -1;
  if (it.n > IR_MAX_RANK) {
    fail(x, g, "more than %d dimensions in a replica group list", IR_MAX_RANK);
    return -1;
  }
  for (int i = 0; i < it.n; i++) {
    if (it.len[i] != 1 || !tok_int(x, g->kids[it.start[i]], &out[i])) return -1;
    if (out[i] < 0 || out[i] > (1 << 20)) {
      bad_value(x, g->kids[it.start[i]], "a size between 0 and 2^20");
      return -1;
    }
  }
  return it.n;
}

/* XLA's iota replica groups "[G,S]<=[d0,d1,...]T(p0,p1,...)": the numbers
 * 0..N-1 laid out as dims d, transposed by p (when given), read in row
 * major order as G groups of S. */
static bool iota_groups(actx *x, const hlo_tok *v, ir_replica_groups *rg) {
  int64_t gs[IR_MAX_RANK], d[IR_MAX_RANK], perm[IR_MAX_RANK];
  int ngs = bracket_ints(x, v->kids[0], '[', gs);
  int nd = ngs < 0 ? -1 : bracket_ints(x, v->kids[1], '[', d);
  if (nd < 0) return false;
  if (ngs != 2) return fail(x, v->kids[0], "an iota replica group list starts [groups,size]");
  int64_t n = 1;
  for (int i = 0; i < nd; i++) {
    n *= d[i];
    if (n > (1 << 20)) return fail(x, v, "an iota replica group list of more than 2^20 devices");
  }
  if (n != gs[0] * gs[1])
    return fail(x, v, "iota replica groups: %lld groups of %lld need %lld devices, the iota has %lld",
                (long long)gs[0], (long long)gs[1], (long long)(gs[0] * gs[1]), (long long)n);
  for (int i = 0; i < nd; i++) perm[i] = i;
  if (v->n == 4) {
    int np = bracket_ints(x, v->kids[3], '(', perm);
    if (np < 0) return false;
    bool seen[IR_MAX_RANK] = {false};
    for (int i = 0; i < np; i++) {
      if (np != nd || perm[i] >= nd || seen[perm[i]])
        return fail(x, v->kids[3], "T(...) must be a permutation of the %d iota dimensions", nd);
      seen[perm[i]] = true;
    }
  }
  /* element k of the transposed array: its index in the transposed dims,
   * mapped back to the iota's row-major position */
  int64_t td[IR_MAX_RANK];
  for (int i = 0; i < nd; i++) td[i] = d[perm[i]];
  rg->ngroups = (int32_t)gs[0];
  rg->groups = arena_array(x->a, (size_t)gs[0] + 1, sizeof(ir_ints));
  for (int64_t g = 0; g < gs[0]; g++) {
    rg->groups[g].n = (int32_t)gs[1];
    rg->groups[g].v = arena_array(x->a, (size_t)gs[1] + 1, sizeof(int64_t));
    for (int64_t j = 0; j < gs[1]; j++) {
      int64_t k = g * gs[1] + j, idx[IR_MAX_RANK], src[IR_MAX_RANK], val = 0;
      for (int i = nd - 1; i >= 0; i--) {
        idx[i] = k % td[i];
        k /= td[i];
      }
      for (int i = 0; i < nd; i++) src[perm[i]] = idx[i];
      for (int i = 0; i < nd; i++) val = val * d[i] + src[i];
      rg->groups[g].v[j] = val;
    }
  }
  rg->iota = fe_hlo_tok_text(x->p, v);
  return true;
}

static bool replica_groups(actx *x, const hlo_tok *v, ir_replica_groups *rg) {
  if (v->kind == HLO_GROUP && v->open == '<') return iota_groups(x, v, rg);
  if (v->kind != HLO_GROUP || v->open != '{')
    return bad_value(x, v, "groups such as {{0,1},{2,3}}");
  items it;
  if (!split(x, v, &it)) return false;
  rg->ngroups = it.n;
  rg->groups = arena_array(x->a, (size_t)it.n + 1, sizeof(ir_ints));
  for (int i = 0; i < it.n; i++) {
    if (it.len[i] != 1) return bad_value(x, v->kids[it.start[i]], "a group such as {0,1}");
    if (!int_list(x, v->kids[it.start[i]], &rg->groups[i])) return false;
  }
  return true;
}

/* "A, B or C": the words of names from index first on, into buf. */
static const char *one_of(const char *const *names, int first, char *buf, size_t cap) {
  int n = 0;
  while (names[first + n]) n++;
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < n; i++)
    len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%s",
                            i == 0 ? "" : i == n - 1 ? " or " : ", ", names[first + i]);
  return buf;
}

/* A word of names (from index first on) into *out; case-insensitive when
 * nocase. */
static bool enum_word(actx *x, const hlo_tok *t, const char *const *names, int first, bool nocase,
                      int *out) {
  for (int i = first; t->kind == NAME && names[i]; i++)
    if ((nocase ? strcasecmp(t->text, names[i]) : strcmp(t->text, names[i])) == 0) {
      *out = i;
      return true;
    }
  char buf[160];
  return bad_value(x, t, one_of(names, first, buf, sizeof buf));
}

/* "{a,b}": a precision word per operand. */
static bool precision(actx *x, const hlo_tok *v, const ir_attr_desc *d, int out[2]) {
  int last = 0;
  while (d->names[last + 1]) last++;
  if (v->kind != HLO_GROUP || v->open != '{') {
    char ex[160];
    snprintf(ex, sizeof ex, "a list such as {%s,%s}", d->names[0], d->names[last]);
    return bad_value(x, v, ex);
  }
  items it;
  if (!split(x, v, &it)) return false;
  if (it.n != 2) return fail(x, v, "%s needs 2 entries, got %d", d->name, it.n);
  for (int i = 0; i < 2; i++) {
    const hlo_tok *t = v->kids[it.start[i]];
    char buf[160];
    if (it.len[i] != 1) return bad_value(x, t, one_of(d->names, 0, buf, sizeof buf));
    if (!enum_word(x, t, d->names, 0, true, &out[i])) return false;
  }
  return true;
}

/* Decodes a C-escaped string token (quotes included) into the arena. */
static char *unquote(actx *x, const hlo_tok *t) {
  char *out = arena_alloc(x->a, (size_t)t->len);
  base_c_unescape(t->text + 1, (size_t)(t->len - 2), out);
  return out;
}

/* Returns 1 when all fields were known, 0 when some were kept raw only, -1 on error. */
static int metadata(actx *x, const hlo_tok *v, ir_metadata *md) {
  if (v->kind != HLO_GROUP || v->open != '{') {
    bad_value(x, v, "{op_name=\"...\" source_file=\"...\" source_line=N}");
    return -1;
  }
  int known = 1;
  for (int i = 0; i < v->n; i += 3) {
    if (v->kids[i]->kind == ',' && i > 0) i++; /* "a=1, b=2" as newer XLA writes */
    if (i >= v->n) break;
    const hlo_tok *k = v->kids[i];
    if (k->kind != NAME || i + 2 >= v->n || v->kids[i + 1]->kind != '=') {
      bad_value(x, k, "key=value items such as op_name=\"x\"");
      return -1;
    }
    const hlo_tok *val = v->kids[i + 2];
    bool str = strcmp(k->text, "op_type") == 0 || strcmp(k->text, "op_name") == 0 ||
               strcmp(k->text, "source_file") == 0;
    if (str) {
      if (val->kind != STRING) {
        bad_value(x, val, "a string");
        return -1;
      }
      const char *s = unquote(x, val);
      if (k->text[3] == 't') md->op_type = s;
      else if (k->text[3] == 'n') md->op_name = s;
      else md->source_file = s;
    } else if (strcmp(k->text, "source_line") == 0) {
      int64_t n;
      if (val->kind != INT || !fe_hlo_int(x->p, val, &n) || n < 0 || n > INT32_MAX) {
        if (val->kind != INT) bad_value(x, val, "a line number");
        return -1;
      }
      md->source_line = (int32_t)n;
    } else {
      if (val->kind == HLO_GROUP && val->open != '{' && val->open != '[') {
        bad_value(x, val, "a value");
        return -1;
      }
      known = 0;
    }
  }
  return known;
}

/* The called computation v into calls[slot] (the slots below it are
 * IR_NONE until their attribute is read). */
static bool comp_ref(actx *x, const hlo_tok *v, int slot) {
  const hlo_tok *t = v;
  if (v->kind == HLO_GROUP && v->open == '{' && v->n == 1) t = v->kids[0];
  if (t->kind != NAME && t->kind != KW_CONSTANT) return bad_value(x, v, "a computation name");
  int32_t idx = strmap_get(x->c->comp_ids, t->text, (size_t)t->len);
  if (idx < 0) return fail(x, t, "unknown computation '%s'", t->text);
  ir_comp_id id = x->p->comps.v[idx]->id;
  ir_inst_proto *in = x->in;
  if (in->ncalls <= slot) {
    ir_comp_id *calls = arena_array(x->a, (size_t)slot + 1, sizeof(ir_comp_id));
    for (int k = 0; k <= slot; k++) calls[k] = k < in->ncalls ? in->calls[k] : IR_NONE;
    in->calls = calls;
    in->ncalls = slot + 1;
  }
  in->calls[slot] = id;
  return true;
}

/* Attributes XLA's parser accepts on every instruction; kept verbatim. */
static const char *const raw_attrs[] = {
    "backend_config", "frontend_attributes", "sharding", "statistics", "control-predecessors",
    "origin", "result_accuracy", "parameter_replication",
};

/* Attributes XLA's parser accepts on some ops, kept verbatim there: the
 * ops are listed by spelling. Those of OPF_DECLARED ops are all here; the
 * rest are the ones tpucc does not interpret on ops it does. */
static const struct {
  const char *name, *ops;
} op_raw_attrs[] = {
    {"mode", "all-reduce reduce-scatter all-reduce-start"},
    {"conv_kind", "convolution"},
    {"inferred_dimension", "reshape"},
    {"delta", "rng-get-and-update-state"},
    {"num_carries", "scan"},
    {"is_reverse", "scan"},
    {"is_associative", "scan"},
    {"lhs_contracting_dims", "ragged-dot scaled-dot"},
    {"rhs_contracting_dims", "ragged-dot scaled-dot"},
    {"lhs_batch_dims", "ragged-dot scaled-dot"},
    {"rhs_batch_dims", "ragged-dot scaled-dot"},
    {"lhs_ragged_dims", "ragged-dot"},
    {"rhs_group_dims", "ragged-dot"},
    {"output_to_operand_aliasing", "fusion custom-call async-start"},
    {"algorithm", "dot scaled-dot rng-bit-generator"},
    {"channel_id", "ragged-all-to-all send send-done recv recv-done"},
    {"replica_groups", "ragged-all-to-all"},
    {"dimensions", "map sort scan ragged-all-to-all get-dimension-size set-dimension-size"},
    {"slice_sizes", "collective-permute collective-permute-start"},
    {"is_stable", "sort"},
    {"k", "topk"},
    {"largest", "topk"},
    {"window", "custom-call"},
    {"exponent_bits", "reduce-precision"},
    {"mantissa_bits", "reduce-precision"},
    {"custom_call_target", "custom-call"},
    {"api_version", "custom-call"},
    {"opaque", "custom-call"},
    {"operand_layout_constraints", "custom-call"},
    {"custom_call_has_side_effect", "custom-call"},
    {"schedule", "custom-call"},
    {"literal", "custom-call"},
    {"dim_labels", "custom-call"},
    {"feature_group_count", "custom-call"},
    {"batch_group_count", "custom-call"},
    {"operand_precision", "custom-call ragged-dot scaled-dot"},
    {"padding_type", "custom-call"},
    {"async_execution_thread", "async-start async-update async-done"},
    {"cross_program_prefetch_index", "copy-start"},
    {"is_host_transfer", "send send-done recv recv-done"},
    {"infeed_config", "infeed"},
    {"outfeed_config", "outfeed"},
    {"outfeed_shape", "outfeed"},
    {"distribution", "rng"},
    {"domain", "domain"},
    {"epsilon", "batch-norm-training batch-norm-inference batch-norm-grad"},
    {"feature_index", "batch-norm-training batch-norm-inference batch-norm-grad"},
    {"lower", "cholesky triangular-solve"},
    {"left_side", "triangular-solve"},
    {"unit_diagonal", "triangular-solve"},
    {"transpose_a", "triangular-solve"},
    {"fft_type", "fft"},
    {"fft_length", "fft"},
    {"is_composite", "call"},
};

/* Called-computation attributes of OPF_DECLARED ops; list: a braced
 * list ("branch_computations={%a, %b}"), else one name. */
static const struct {
  const char *name, *ops;
  bool list;
} comp_attrs[] = {
    {"to_apply", "call map sort scan custom-call", false},
    {"condition", "while", false},
    {"body", "while", false},
    {"true_computation", "conditional", false},
    {"false_computation", "conditional", false},
    {"branch_computations", "conditional", true},
    {"called_computations", "custom-call", true},
    {"calls", "async-start async-update async-done", false},
};

/* Whether the spelling of op is a word of the space-separated list. */
static bool listed(const char *list, ir_op op) {
  const char *name = ir_op_name(op);
  size_t n = strlen(name);
  for (const char *s = list; (s = strstr(s, name)) != NULL; s += n)
    if ((s == list || s[-1] == ' ') && (s[n] == ' ' || s[n] == 0)) return true;
  return false;
}

bool fe_hlo_is_comp_attr(const char *name) {
  for (size_t i = 0; i < COUNTOF(comp_attrs); i++)
    if (strcmp(comp_attrs[i].name, name) == 0) return true;
  return strcmp(name, "calls") == 0 || strcmp(name, "to_apply") == 0;
}

static ir_raw_attr *push_raw(actx *x, const char *name) {
  ir_inst_proto *in = x->in;
  ir_raw_attr *r = arena_array(x->a, (size_t)in->nraw + 1, sizeof(ir_raw_attr));
  if (in->nraw) memcpy(r, in->raw, sizeof(ir_raw_attr) * (size_t)in->nraw);
  in->raw = r;
  r += in->nraw++;
  r->name = arena_strdup(x->a, name);
  return r;
}

static void add_raw(actx *x, const char *name, const hlo_tok *v) {
  push_raw(x, name)->text = fe_hlo_tok_text(x->p, v);
}

/* A called-computation attribute of a declared op: "name=%c" or, for a
 * list, "name={%a, %b}" (one name without braces is read too). The
 * computations are appended to the instruction's calls. */
static bool comp_refs(actx *x, const hlo_tok *name, const hlo_tok *v, bool list) {
  ir_inst_proto *in = x->in;
  const hlo_tok *one = v;
  int n = 1;
  const hlo_tok *const *names = &one;
  if (v->kind == HLO_GROUP && v->open == '{') {
    items it;
    if (!split(x, v, &it)) return false;
    n = it.n;
    const hlo_tok **ns = arena_array(x->p->scratch, (size_t)n + 1, sizeof(hlo_tok *));
    for (int i = 0; i < n; i++) {
      if (it.len[i] != 1) return bad_value(x, v->kids[it.start[i]], "a computation name");
      ns[i] = v->kids[it.start[i]];
    }
    names = ns;
  } else if (list) {
    list = false; /* a single name written without braces prints back so */
  }
  ir_comp_id *calls = arena_array(x->a, (size_t)(in->ncalls + n) + 1, sizeof(ir_comp_id));
  if (in->ncalls) memcpy(calls, in->calls, sizeof(ir_comp_id) * (size_t)in->ncalls);
  for (int i = 0; i < n; i++) {
    const hlo_tok *t = names[i];
    if (t->kind != NAME && t->kind != KW_CONSTANT) return bad_value(x, t, "a computation name");
    int32_t idx = strmap_get(x->c->comp_ids, t->text, (size_t)t->len);
    if (idx < 0) return fail(x, t, "unknown computation '%s'", t->text);
    calls[in->ncalls + i] = x->p->comps.v[idx]->id;
  }
  ir_raw_attr *r = push_raw(x, name->text);
  r->first_call = in->ncalls;
  r->ncalls = n;
  r->list = list;
  in->calls = calls;
  in->ncalls += n;
  return true;
}

/* The rank of a control op's called-computation attribute in calls[]
 * (ir/ir.h: while [condition, body], conditional [true, false] or the
 * branch list, call and map [to_apply]). */
static int control_rank(const char *name) {
  return strcmp(name, "body") == 0 || strcmp(name, "false_computation") == 0;
}

/* Puts a control op's calls[] in the IR's fixed order, whatever order the
 * text named them in; the raw attributes keep the written order for the
 * printer and point at their new places. */
static void control_order(actx *x) {
  ir_inst_proto *in = x->in;
  ir_comp_id *calls = arena_array(x->a, (size_t)in->ncalls + 1, sizeof(ir_comp_id));
  int at = 0;
  for (int rank = 0; rank < 2; rank++)
    for (int k = 0; k < in->nraw; k++) {
      ir_raw_attr *r = &in->raw[k];
      if (r->text || control_rank(r->name) != rank) continue;
      memcpy(calls + at, in->calls + r->first_call, sizeof(ir_comp_id) * (size_t)r->ncalls);
      r->first_call = at;
      at += r->ncalls;
    }
  in->calls = calls;
}

/* An attribute of an OPF_DECLARED op; false after reporting. */
static bool apply_declared(actx *x, const hlo_tok *name, const hlo_tok *v) {
  ir_inst_proto *in = x->in;
  const char *n = name->text;
  for (size_t i = 0; i < COUNTOF(comp_attrs); i++)
    if (strcmp(n, comp_attrs[i].name) == 0 && listed(comp_attrs[i].ops, in->op))
      return comp_refs(x, name, v, comp_attrs[i].list);
  for (size_t i = 0; i < COUNTOF(op_raw_attrs); i++)
    if (strcmp(n, op_raw_attrs[i].name) == 0 && listed(op_raw_attrs[i].ops, in->op)) {
      add_raw(x, n, v);
      return true;
    }
  for (size_t i = 0; i < COUNTOF(raw_attrs); i++)
    if (strcmp(n, raw_attrs[i]) == 0) {
      add_raw(x, n, v);
      return true;
    }
  return fail(x, name, "unsupported attribute '%s' on %s", n, ir_op_name(in->op));
}

/* The rows of ir/attrs.def, counted; seen-sets are bit masks of them. */
enum {
  NROWS = 0
#define IR_ATTR(...) +1
#include "ir/attrs.def"
#undef IR_ATTR
};
_Static_assert(NROWS <= 64, "a seen-set holds one bit per attribute row");

/* Attributes tpucc interprets that are not ir_attrs fields: the called
 * computations of reductions, scatters and fusions (required on the ops
 * listed), each into its slot of the instruction's calls. */
static const struct {
  const char *name;
  int slot;
  ir_op ops[8];
} call_attrs[] = {
    {"to_apply", 0, {IR_OP_REDUCE, IR_OP_REDUCE_WINDOW, IR_OP_ALL_REDUCE, IR_OP_SCATTER,
                     IR_OP_REDUCE_SCATTER, IR_OP_ALL_REDUCE_START, IR_OP__COUNT}},
    {"calls", 0, {IR_OP_FUSION, IR_OP__COUNT}},
    {"select", 0, {IR_OP_SELECT_AND_SCATTER, IR_OP__COUNT}},
    {"scatter", 1, {IR_OP_SELECT_AND_SCATTER, IR_OP__COUNT}},
};

/* Whether op is in list (ended by IR_OP__COUNT). */
static bool op_in(const ir_op *list, ir_op op) {
  for (; *list != IR_OP__COUNT; list++)
    if (*list == op) return true;
  return false;
}

/* One value of table row d into the instruction's attributes (per kind);
 * false after reporting. */
static bool parse_value(actx *x, const ir_attr_desc *d, const hlo_tok *v) {
  ir_attrs *at = &x->in->a;
  switch (d->kind) {
  case IR_AK_INT: {
    int64_t iv;
    if (!tok_int(x, v, &iv)) return false;
    if (iv < d->min) return bad_value(x, v, d->min == 1 ? "a positive integer" : "a non-negative integer");
    *IR_ATTR_FIELD(at, d->f, int64_t) = iv;
    return true;
  }
  case IR_AK_INTS: return int_list(x, v, IR_ATTR_FIELD(at, d->f, ir_ints));
  case IR_AK_SLICE:
    return slices(x, v, IR_ATTR_FIELD(at, d->f, ir_ints), IR_ATTR_FIELD(at, d->g, ir_ints),
                  IR_ATTR_FIELD(at, d->h, ir_ints));
  case IR_AK_PADS: {
    ir_padding_dim pd[IR_MAX_RANK];
    int k = pads(x, v, pd, IR_MAX_RANK, true);
    if (k < 0) return false;
    *IR_ATTR_FIELD(at, d->g, int32_t) = k;
    *IR_ATTR_FIELD(at, d->f, ir_padding_dim *) = arena_dup(x->a, pd, sizeof(ir_padding_dim) * (size_t)k);
    return true;
  }
  case IR_AK_ENUM: return enum_word(x, v, d->names, (int)d->min, false, IR_ATTR_FIELD(at, d->f, int));
  case IR_AK_PREC: return precision(x, v, d, IR_ATTR_FIELD(at, d->f, int));
  case IR_AK_WINDOW: {
    ir_window *w = arena_alloc(x->a, sizeof *w);
    *IR_ATTR_FIELD(at, d->f, const ir_window *) = w;
    return window(x, v, w);
  }
  case IR_AK_CONV: return dim_labels(x, v, IR_ATTR_FIELD(at, d->f, ir_conv_dims));
  case IR_AK_GROUPS: return replica_groups(x, v, IR_ATTR_FIELD(at, d->f, ir_replica_groups));
  case IR_AK_TYPE: {
    ir_type t = v->kind == NAME ? ir_type_from_name(v->text, (size_t)v->len) : IR_TYPE_INVALID;
    if (t == IR_TYPE_INVALID) return bad_value(x, v, "an element type such as f32");
    *IR_ATTR_FIELD(at, d->f, ir_type) = t;
    return true;
  }
  case IR_AK_LITERAL: break;
  }
  base_die("attribute kind %d has no HLO form (%s)", (int)d->kind, d->name);
}

/* Kept verbatim when it is one of XLA's attributes tpucc does not
 * interpret; false after reporting it unsupported. */
static bool apply_raw(actx *x, const hlo_tok *name, const hlo_tok *v) {
  const char *n = name->text;
  for (size_t i = 0; i < COUNTOF(raw_attrs); i++)
    if (strcmp(n, raw_attrs[i]) == 0) {
      add_raw(x, n, v);
      return true;
    }
  for (size_t i = 0; i < COUNTOF(op_raw_attrs); i++)
    if (strcmp(n, op_raw_attrs[i].name) == 0 && listed(op_raw_attrs[i].ops, x->in->op)) {
      add_raw(x, n, v);
      return true;
    }
  return fail(x, name, "unsupported attribute '%s' on %s", n, ir_op_name(x->in->op));
}

/* One attribute; false after reporting. Marks its table row in *seen. */
static bool apply(actx *x, const hlo_tok *name, const hlo_tok *v, uint64_t *seen) {
  ir_inst_proto *in = x->in;
  ir_op op = in->op;
  const char *n = name->text;
  x->name = name;
  if (strcmp(n, "metadata") == 0) {
    int k = metadata(x, v, &in->meta);
    if (k < 0) return false;
    if (k == 0) add_raw(x, "metadata", v);
    return true;
  }
  if (ir_op_flags(op) & (OPF_DECLARED | OPF_CONTROL)) return apply_declared(x, name, v);
  for (size_t i = 0; i < COUNTOF(call_attrs); i++)
    if (strcmp(n, call_attrs[i].name) == 0) {
      if (!op_in(call_attrs[i].ops, op))
        return fail(x, name, "attribute '%s' does not apply to %s", n, ir_op_name(op));
      return comp_ref(x, v, call_attrs[i].slot);
    }
  bool known = false;
  for (int r = 0; r < ir_attr_count; r++) {
    const ir_attr_desc *d = &ir_attr_table[r];
    if ((d->flags & IR_AF_NOT_HLO) || strcmp(n, d->name) != 0) continue;
    known = true;
    if (!ir_attr_on(&d->ops, op)) continue;
    *seen |= UINT64_C(1) << r;
    return parse_value(x, d, v);
  }
  if (known)
    for (size_t i = 0; i < COUNTOF(op_raw_attrs); i++)
      if (strcmp(n, op_raw_attrs[i].name) == 0 && listed(op_raw_attrs[i].ops, op)) known = false;
  if (known) return fail(x, name, "attribute '%s' does not apply to %s", n, ir_op_name(op));
  return apply_raw(x, name, v);
}

static bool has_attr(const hlo_inst *hi, const char *name) {
  for (int i = 0; i < hi->attrs.n; i++)
    if (strcmp(hi->attrs.v[i].name->text, name) == 0) return true;
  return false;
}

/* The attribute a declared op cannot do without (its called computations,
 * a custom-call's target), or NULL. */
static const char *declared_missing(const hlo_inst *hi, ir_op op) {
  static const struct {
    const char *ops, *attrs[2];
  } need[] = {
      {"while", {"condition", "body"}},
      {"call map sort scan", {"to_apply", NULL}},
      {"custom-call", {"custom_call_target", NULL}},
      {"async-start", {"calls", NULL}},
  };
  if (op == IR_OP_CONDITIONAL) {
    if (has_attr(hi, "branch_computations")) return NULL;
    if (!has_attr(hi, "true_computation")) return "true_computation";
    if (!has_attr(hi, "false_computation")) return "false_computation";
    return NULL;
  }
  for (size_t i = 0; i < COUNTOF(need); i++)
    if (listed(need[i].ops, op))
      for (int k = 0; k < 2; k++)
        if (need[i].attrs[k] && !has_attr(hi, need[i].attrs[k])) return need[i].attrs[k];
  return NULL;
}

bool fe_hlo_attrs(hlo_attr_ctx *c, const hlo_inst *hi) {
  actx x = {c, c->p, c->out, c->p->m->arena, NULL};
  ir_inst_proto *in = c->out;
  bool ok = true;
  uint64_t seen_rows = 0;
  ir_op op = in->op;
  for (int r = 0; r < ir_attr_count && ir_attr_on(&ir_attr_ops_any, op); r++) {
    const ir_attr_desc *d = &ir_attr_table[r];
    if ((d->flags & IR_AF_INIT) && ir_attr_on(&d->ops, op)) *IR_ATTR_FIELD(&in->a, d->f, int64_t) = d->min;
  }
  /* names given twice */
  strmap *seen = hi->attrs.n > 1 ? strmap_create(c->p->scratch) : NULL;
  for (int i = 0; i < hi->attrs.n; i++) {
    const hlo_tok *nm = hi->attrs.v[i].name;
    bool dup = seen && strmap_get(seen, nm->text, (size_t)nm->len) >= 0;
    if (seen) strmap_put(seen, nm->text, (size_t)nm->len, i);
    if (dup) {
      fail(&x, nm, "attribute '%s' is given twice", nm->text);
      ok = false;
      continue;
    }
    if (!apply(&x, nm, hi->attrs.v[i].value, &seen_rows)) ok = false;
  }
  if (!ok) return false;

  /* required attributes */
  const char *missing = NULL;
  if (ir_op_flags(op) & (OPF_DECLARED | OPF_CONTROL)) {
    missing = declared_missing(hi, op);
    if (missing) {
      fail(&x, hi->opcode, "%s needs the attribute '%s'", ir_op_name(op), missing);
      return false;
    }
    if (ir_op_flags(op) & OPF_CONTROL) control_order(&x);
    return true;
  }
  for (size_t i = 0; i < COUNTOF(call_attrs) && !missing; i++)
    if (op_in(call_attrs[i].ops, op) && !has_attr(hi, call_attrs[i].name))
      missing = call_attrs[i].name;
  for (int r = 0; r < ir_attr_count && !missing && ir_attr_on(&ir_attr_ops_any, op); r++) {
    const ir_attr_desc *d = &ir_attr_table[r];
    if (ir_attr_on(&d->required, op) && !(seen_rows >> r & 1)) missing = d->name;
  }
  /* exception: XLA lets a broadcast of a scalar omit dimensions={} */
  if (missing && op == IR_OP_BROADCAST && c->nops == 1 && c->ops[0].type != IR_TUPLE &&
      c->ops[0].rank == 0)
    missing = NULL;
  if (missing) {
    fail(&x, hi->opcode, "%s needs the attribute '%s'", ir_op_name(op), missing);
    return false;
  }

  /* compare type equal to the element type's default is stored as DEFAULT
   * (XLA prints it only when it differs) */
  if (op == IR_OP_COMPARE && c->nops >= 1 && c->ops[0].type != IR_TUPLE) {
    ir_type t = c->ops[0].type;
    ir_cmp_type def = ir_type_is_float(t) || ir_type_is_complex(t)  ? IR_CMPT_FLOAT
                      : t == IR_PRED || ir_type_is_unsigned(t) ? IR_CMPT_UNSIGNED
                                                               : IR_CMPT_SIGNED;
    if (in->a.cmp_type == def) in->a.cmp_type = IR_CMPT_DEFAULT;
  }
  return true;
}

/* Module header: name, is_scheduled, the rest verbatim. (The grammar reads
 * entry_computation_layout; build.c checks it against the entry.) */
void fe_hlo_header(hlo_parser *p) {
  ir_module *m = p->m;
  if (p->module_name) m->name = arena_strdup(m->arena, p->module_name->text);
  if (p->tables.n) {
    m->tables = arena_array(m->arena, (size_t)p->tables.n, sizeof(ir_table));
    for (int i = 0; i < p->tables.n; i++) {
      const hlo_table *t = p->tables.v[i];
      ir_table *mt = &m->tables[m->ntables++];
      mt->name = arena_strdup(m->arena, t->name->text);
      mt->rows = arena_array(m->arena, (size_t)t->ids.n + 1, sizeof(ir_table_row));
      for (int r = 0; r < t->ids.n; r++) {
        ir_table_row *row = &mt->rows[mt->nrows];
        if (!fe_hlo_int(p, t->ids.v[r], &row->id)) continue;
        row->text = fe_hlo_tok_text(p, t->texts.v[r]);
        mt->nrows++;
      }
    }
  }
  strmap *seen = strmap_create(p->scratch);
  for (int i = 0; i < p->header.n; i++) {
    const hlo_tok *k = p->header.v[i].name, *v = p->header.v[i].value;
    bool dup = strmap_get(seen, k->text, (size_t)k->len) >= 0;
    strmap_put(seen, k->text, (size_t)k->len, i);
    if (dup) {
      fe_hlo_error(p, k->loc, "module attribute '%s' is given twice", k->text);
      continue;
    }
    if (strcmp(k->text, "is_scheduled") == 0) {
      if (v->kind != NAME || (strcmp(v->text, "true") != 0 && strcmp(v->text, "false") != 0))
        fe_hlo_error(p, v->loc, "bad value for 'is_scheduled': expected true or false");
      else
        m->is_scheduled = v->text[0] == 't';
      continue;
    }
    if (!m->raw) m->raw = arena_array(m->arena, (size_t)p->header.n, sizeof(ir_raw_attr));
    m->raw[m->nraw].name = arena_strdup(m->arena, k->text);
    m->raw[m->nraw].text = fe_hlo_tok_text(p, v);
    m->nraw++;
  }
}
