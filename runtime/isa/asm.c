/* asm.c: the assembler: program text -> tpub_image. Two passes over the
 * lines: the first finds labels and .equ names, the second encodes. The
 * text form is described in asm.h and docs/isa.md. */
#include "asm.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "isa.h"

enum { MAX_ERRORS = 10, MAX_SYMS = 4096, MAX_NAME = 63 };

typedef struct sym {
  char name[MAX_NAME + 1];
  int64_t value;
  int is_label;
} sym;

/* Growable arrays of the image being built. */
typedef struct asm_state {
  const rt_allocator *a;
  const char *name;
  const char *text;
  size_t len;
  int line; /* 1-based, current */
  const char *line_start;
  size_t line_len;
  int nerrors, oom;
  rt_buf errs;
  sym *syms;
  int nsyms;
  tpub_image *img;
  uint32_t code_cap, param_cap, result_cap, const_cap;
  uint32_t smem_cap; /* words allocated for img->smem */
  uint64_t last_cap; /* bytes allocated for the last constant's data */
  int pass;
} asm_state;

#if defined(__GNUC__)
static void error_at(asm_state *s, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#endif
static void error_at(asm_state *s, const char *at, const char *fmt, ...) {
  s->nerrors++;
  if (s->nerrors > MAX_ERRORS) return;
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int col = at ? (int)(at - s->line_start) + 1 : 1;
  if (col < 1 || (size_t)col > s->line_len + 1) col = 1;
  rt_buf_printf(&s->errs, "%s:%d:%d: error: %s\n  %.*s\n  %*s^\n", s->name, s->line, col, msg,
                (int)s->line_len, s->line_start, col - 1, "");
}

/* ---- lexing helpers (within one line: [p, end)) ------------------------- */

static const char *skip_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
    p++;
  return p;
}
static int is_ident0(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.';
}
static int is_ident(char c) { return is_ident0(c) || (c >= '0' && c <= '9'); }

static const char *ident_end(const char *p, const char *end) {
  while (p < end && is_ident(*p))
    p++;
  return p;
}

static sym *find_sym(asm_state *s, const char *n, size_t len) {
  for (int i = 0; i < s->nsyms; i++)
    if (strlen(s->syms[i].name) == len && !memcmp(s->syms[i].name, n, len)) return &s->syms[i];
  return NULL;
}

static void add_sym(asm_state *s, const char *n, size_t len, int64_t v, int is_label,
                    const char *at) {
  if (len > MAX_NAME) {
    error_at(s, at, "name '%.*s' is longer than %d characters", (int)len, n, MAX_NAME);
    return;
  }
  if (find_sym(s, n, len)) {
    error_at(s, at, "'%.*s' is defined twice", (int)len, n);
    return;
  }
  if (s->nsyms >= MAX_SYMS) {
    error_at(s, at, "more than %d labels and names", MAX_SYMS);
    return;
  }
  sym *y = &s->syms[s->nsyms++];
  memcpy(y->name, n, len);
  y->name[len] = 0;
  y->value = v;
  y->is_label = is_label;
}

/* Parses an integer literal at [p, end). Returns the end or NULL. */
static const char *parse_int(const char *p, const char *end, int64_t *out) {
  char buf[64];
  size_t n = 0;
  while (p + n < end && n < sizeof buf - 1 && (is_ident(p[n]) || p[n] == '-' || p[n] == '+'))
    n++;
  if (!n) return NULL;
  memcpy(buf, p, n);
  buf[n] = 0;
  char *e;
  errno = 0;
  long long v;
  if (buf[0] == '-')
    v = strtoll(buf, &e, 0);
  else {
    unsigned long long u = strtoull(buf[0] == '+' ? buf + 1 : buf, &e, 0);
    if (u > (unsigned long long)INT64_MAX) return NULL;
    v = (long long)u;
  }
  if (errno || *e || e == buf) return NULL;
  *out = v;
  return p + n;
}

/* Parses an immediate: integer, f32 literal with an f suffix, or a name. */
static const char *parse_imm(asm_state *s, const char *p, const char *end, int64_t *out,
                             int label) {
  const char *q = p;
  while (q < end && *q != ',' && *q != ' ' && *q != '\t' && *q != '\r')
    q++;
  size_t n = (size_t)(q - p);
  if (!n) return NULL;
  if (p[0] == '@') {
    const char *r = parse_int(p + 1, q, out);
    return r == q ? q : NULL;
  }
  if (is_ident0(p[0]) && ident_end(p, q) == q &&
      !(n >= 2 && p[n - 1] == 'f' && (!strncmp(p, "inf", 3) || !strncmp(p, "nan", 3)))) {
    sym *y = find_sym(s, p, n);
    if (!y) {
      if (s->pass == 2) error_at(s, p, "undefined name '%.*s'", (int)n, p);
      *out = 0;
      return q;
    }
    if (label && !y->is_label) {
      error_at(s, p, "'%.*s' is not a label", (int)n, p);
    }
    *out = y->value;
    return q;
  }
  if (n >= 2 && p[n - 1] == 'f' && !(n > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))) {
    char buf[64];
    if (n - 1 >= sizeof buf) return NULL;
    memcpy(buf, p, n - 1);
    buf[n - 1] = 0;
    char *e;
    float f = strtof(buf, &e);
    if (*e || e == buf) return NULL;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    *out = (int32_t)bits;
    return q;
  }
  const char *r = parse_int(p, q, out);
  return r == q ? q : NULL;
}

/* ---- image growth ------------------------------------------------------- */

static int grow(asm_state *s, void **arr, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap) return 0;
  uint32_t nc = *cap ? *cap * 2 : 64;
  while (nc < need)
    nc *= 2;
  void *na = rt_calloc(s->a, nc, elem);
  if (!na) {
    s->oom = 1;
    return -1;
  }
  if (*arr && *cap) memcpy(na, *arr, (size_t)*cap * elem);
  rt_free(s->a, *arr);
  *arr = na;
  *cap = nc;
  return 0;
}

static void emit_word(asm_state *s, uint64_t w) {
  tpub_image *img = s->img;
  if (img->ncode >= TPUB_MAX_CODE) {
    error_at(s, NULL, "more than %u instructions", TPUB_MAX_CODE);
    return;
  }
  if (grow(s, (void **)&img->code, &s->code_cap, img->ncode + 1, 8)) return;
  img->code[img->ncode++] = w;
}

/* ---- instructions ------------------------------------------------------- */

static int reg_operand(const char *p, size_t n, const char *prefix, int max) {
  size_t pl = strlen(prefix);
  if (n <= pl || n > pl + 2 || memcmp(p, prefix, pl)) return -1;
  int v = 0;
  for (size_t i = pl; i < n; i++) {
    if (p[i] < '0' || p[i] > '9') return -1;
    v = v * 10 + (p[i] - '0');
  }
  if (n == pl + 2 && p[pl] == '0') return -1;
  return v < max ? v : -1;
}

static void assemble_inst(asm_state *s, int op, const char *p, const char *end) {
  const isa_info *f = isa_info_of((isa_op)op);
  isa_inst in = {(uint8_t)op, 0, 0, 0, 0, 0, 0};
  uint8_t regs[4] = {0, 0, 0, 0};
  int r = 0, idx = 0;
  for (const char *k = f->operands; *k; k++, idx++) {
    p = skip_ws(p, end);
    if (idx > 0) {
      if (p >= end || *p != ',') {
        error_at(s, p, "%s expects %d operands (%s)", f->mnemonic, (int)strlen(f->operands),
                 f->operands);
        return;
      }
      p = skip_ws(p + 1, end);
    }
    const char *q = p;
    while (q < end && *q != ',' && *q != ' ' && *q != '\t' && *q != '\r')
      q++;
    size_t n = (size_t)(q - p);
    int v = -1;
    int64_t imm = 0;
    switch (*k) {
    case 'S':
      v = reg_operand(p, n, "s", 32);
      break;
    case 'V':
      v = reg_operand(p, n, "v", 32);
      break;
    case 'M':
      v = reg_operand(p, n, "m", 32);
      break;
    case 'E':
      v = reg_operand(p, n, "sem", 32);
      break;
    case 'X':
      v = reg_operand(p, n, "mxu", TGT_MAX_MXUS);
      break;
    case 'Q':
      v = reg_operand(p, n, "dma", TGT_MAX_DMA_QUEUES);
      break;
    case 'U':
      for (int u = 0; u < ISA_UNIT_COUNT; u++)
        if (strlen(isa_unit_name(u)) == n && !memcmp(isa_unit_name(u), p, n)) v = u;
      break;
    case 'I':
    case 'L':
      if (!parse_imm(s, p, q, &imm, *k == 'L')) {
        error_at(s, p, "%s: operand %d: expected %s", f->mnemonic, idx + 1,
                 *k == 'L' ? "a label" : "an immediate");
        return;
      }
      if (imm < INT32_MIN || imm > (int64_t)UINT32_MAX) {
        error_at(s, p, "%s: operand %d: %lld does not fit in 32 bits", f->mnemonic, idx + 1,
                 (long long)imm);
        return;
      }
      in.imm = (int32_t)(uint32_t)imm;
      v = 0;
      break;
    default:
      break;
    }
    if (v < 0) {
      static const char *const want[] = {['S'] = "a scalar register s0..s31",
                                         ['V'] = "a vector register v0..v31",
                                         ['M'] = "a mask register m0..m7",
                                         ['E'] = "a semaphore sem0..sem31",
                                         ['X'] = "an MXU mxu0..mxu3",
                                         ['Q'] = "a DMA queue dma0..dma7",
                                         ['U'] = "a unit (scalar, vector, mxuN, dmaN)"};
      error_at(s, p, "%s: operand %d: expected %s, found '%.*s'", f->mnemonic, idx + 1,
               want[(unsigned char)*k], (int)n, p);
      return;
    }
    if (*k == 'S' || *k == 'V' || *k == 'M' || *k == 'E')
      regs[r++] = (uint8_t)v;
    else if (*k == 'X' || *k == 'Q' || *k == 'U')
      in.x = (uint8_t)v;
    p = q;
  }
  p = skip_ws(p, end);
  if (p < end) {
    error_at(s, p, "%s: unexpected text after the operands", f->mnemonic);
    return;
  }
  in.a = regs[0];
  in.b = regs[1];
  in.c = regs[2];
  in.d = regs[3];
  emit_word(s, isa_encode(&in));
}

/* ---- directives --------------------------------------------------------- */

static void dir_tensor(asm_state *s, int result, const char *p, const char *end) {
  tpub_image *img = s->img;
  tpub_tensor t;
  memset(&t, 0, sizeof t);
  p = skip_ws(p, end);
  const char *ne = p;
  while (ne < end && *ne != ' ' && *ne != '\t')
    ne++;
  size_t nl = (size_t)(ne - p);
  if (nl < 1 || nl > TPUB_MAX_NAME) {
    error_at(s, p, "expected a tensor name of 1..%d characters", TPUB_MAX_NAME);
    return;
  }
  memcpy(t.name, p, nl);
  p = skip_ws(ne, end);
  const char *de = p;
  while (de < end && *de != '[')
    de++;
  t.dtype = tpub_dtype_lookup(p, (size_t)(de - p));
  if (t.dtype < 0 || de >= end) {
    error_at(s, p, "expected dtype[dims] such as f32[128,256]");
    return;
  }
  p = de + 1;
  uint64_t elems = 1;
  p = skip_ws(p, end);
  if (p < end && *p == ']') {
    p++;
  } else {
    for (;;) {
      int64_t d;
      p = skip_ws(p, end);
      const char *q = p;
      while (q < end && *q >= '0' && *q <= '9')
        q++;
      if (q == p || !parse_int(p, q, &d) || d > ((int64_t)1 << 40)) {
        error_at(s, p, "expected a dimension");
        return;
      }
      if (t.rank >= TPUB_MAX_RANK) {
        error_at(s, p, "more than %d dimensions", TPUB_MAX_RANK);
        return;
      }
      t.dims[t.rank++] = d;
      if (d && elems > ((uint64_t)1 << 42) / (uint64_t)d) {
        error_at(s, p, "tensor too large");
        return;
      }
      elems *= (uint64_t)d;
      p = skip_ws(q, end);
      if (p < end && *p == ',') {
        p++;
        continue;
      }
      if (p < end && *p == ']') {
        p++;
        break;
      }
      error_at(s, p, "expected ',' or ']'");
      return;
    }
  }
  t.bytes = elems * (uint64_t)tpub_dtype_size(t.dtype);
  p = skip_ws(p, end);
  int64_t off;
  if (p >= end || *p != '@' || !(p = parse_imm(s, p, end, &off, 0)) || off < 0) {
    error_at(s, p ? p : end, "expected @offset (HBM byte offset)");
    return;
  }
  if (skip_ws(p, end) < end) {
    error_at(s, p, "unexpected text after the tensor");
    return;
  }
  t.hbm_offset = (uint64_t)off;
  if (result) {
    if (img->nresults >= TPUB_MAX_TENSORS ||
        grow(s, (void **)&img->results, &s->result_cap, img->nresults + 1, sizeof t))
      return;
    img->results[img->nresults++] = t;
  } else {
    if (img->nparams >= TPUB_MAX_TENSORS ||
        grow(s, (void **)&img->params, &s->param_cap, img->nparams + 1, sizeof t))
      return;
    img->params[img->nparams++] = t;
  }
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Appends n bytes to the constant at off (merging with the previous one
 * when it ends exactly at off). */
static void add_const(asm_state *s, uint64_t off, const uint8_t *data, size_t n) {
  tpub_image *img = s->img;
  tpub_const *last = img->nconsts ? &img->consts[img->nconsts - 1] : NULL;
  if (last && last->hbm_offset + last->size == off) {
    /* Grow geometrically: disassembled programs spell big constants as
     * thousands of adjacent 64-byte lines. */
    if (last->size + n > s->last_cap) {
      uint64_t nc = s->last_cap ? s->last_cap : 1024;
      while (nc < last->size + n)
        nc *= 2;
      if (nc > SIZE_MAX) {
        s->oom = 1;
        return;
      }
      uint8_t *nd = rt_alloc(s->a, (size_t)nc);
      if (!nd) {
        s->oom = 1;
        return;
      }
      memcpy(nd, last->data, (size_t)last->size);
      rt_free(s->a, last->data);
      last->data = nd;
      s->last_cap = nc;
    }
    memcpy(last->data + last->size, data, n);
    last->size += n;
    return;
  }
  if (img->nconsts >= 65536 ||
      grow(s, (void **)&img->consts, &s->const_cap, img->nconsts + 1, sizeof(tpub_const)))
    return;
  uint8_t *nd = rt_alloc(s->a, n);
  if (!nd) {
    s->oom = 1;
    return;
  }
  memcpy(nd, data, n);
  img->consts[img->nconsts++] = (tpub_const){off, n, nd};
  s->last_cap = n;
}

static void dir_const(asm_state *s, const char *p, const char *end) {
  int64_t off;
  p = skip_ws(p, end);
  if (p >= end || *p != '@' || !(p = parse_imm(s, p, end, &off, 0)) || off < 0) {
    error_at(s, p ? p : end, "expected @offset (HBM byte offset)");
    return;
  }
  p = skip_ws(p, end);
  const char *ke = ident_end(p, end);
  size_t kl = (size_t)(ke - p);
  uint8_t buf[512];
  size_t n = 0;
  uint64_t at = (uint64_t)off;
  if (kl == 3 && !memcmp(p, "hex", 3)) {
    p = skip_ws(ke, end);
    while (p < end && hexval(*p) >= 0) {
      if (p + 1 >= end || hexval(p[1]) < 0) {
        error_at(s, p, "odd number of hex digits");
        return;
      }
      buf[n++] = (uint8_t)(hexval(p[0]) << 4 | hexval(p[1]));
      p += 2;
      if (n == sizeof buf) {
        add_const(s, at, buf, n);
        at += n;
        n = 0;
      }
    }
    if (skip_ws(p, end) < end) {
      error_at(s, p, "expected hex digits");
      return;
    }
  } else {
    int dt = tpub_dtype_lookup(p, kl);
    if (dt != TPUB_F32 && dt != TPUB_S32 && dt != TPUB_BF16 && dt != TPUB_U8) {
      error_at(s, p, "expected hex, f32, s32, bf16 or u8");
      return;
    }
    p = ke;
    for (;;) {
      p = skip_ws(p, end);
      if (p >= end) break;
      const char *q = p;
      while (q < end && *q != ',' && *q != ' ' && *q != '\t')
        q++;
      char tok[64];
      size_t tl = (size_t)(q - p);
      if (tl == 0 || tl >= sizeof tok) {
        error_at(s, p, "expected a value");
        return;
      }
      memcpy(tok, p, tl);
      tok[tl] = 0;
      char *e;
      uint32_t bits = 0;
      int sz = tpub_dtype_size(dt);
      if (dt == TPUB_F32 || dt == TPUB_BF16) {
        float f = strtof(tok, &e);
        if (dt == TPUB_BF16)
          bits = base_f32_to_bf16(f);
        else
          memcpy(&bits, &f, 4);
      } else {
        long long v = strtoll(tok, &e, 0);
        bits = (uint32_t)v;
        if (dt == TPUB_U8 && (v < 0 || v > 255)) e = tok;
      }
      if (*e || e == tok) {
        error_at(s, p, "malformed %s value '%s'", tpub_dtype_name(dt), tok);
        return;
      }
      for (int i = 0; i < sz; i++)
        buf[n++] = (uint8_t)(bits >> (8 * i));
      if (n + 4 > sizeof buf) {
        add_const(s, at, buf, n);
        at += n;
        n = 0;
      }
      p = skip_ws(q, end);
      if (p < end && *p == ',') p++;
    }
  }
  if (n) add_const(s, at, buf, n);
}

static void dir_smem(asm_state *s, const char *p, const char *end) {
  tpub_image *img = s->img;
  int64_t off;
  p = skip_ws(p, end);
  if (!(p = parse_imm(s, p, end, &off, 0)) || off < 0 || off % 4 || off >= (1 << 20)) {
    error_at(s, p ? p : end, "expected a 4-aligned SMEM byte address below 1 MiB");
    return;
  }
  uint32_t w = (uint32_t)(off / 4);
  for (;;) {
    p = skip_ws(p, end);
    if (p >= end) break;
    int64_t v;
    const char *q = parse_imm(s, p, end, &v, 0);
    if (!q || v < INT32_MIN || v > (int64_t)UINT32_MAX) {
      error_at(s, p, "expected a 32-bit word");
      return;
    }
    if (w >= (1u << 18)) {
      error_at(s, p, "SMEM image larger than 1 MiB");
      return;
    }
    if (w >= s->smem_cap) {
      uint32_t nc = s->smem_cap ? s->smem_cap : 64;
      while (nc <= w)
        nc *= 2;
      uint32_t *ns = rt_calloc(s->a, nc, 4);
      if (!ns) {
        s->oom = 1;
        return;
      }
      if (img->nsmem) memcpy(ns, img->smem, (size_t)img->nsmem * 4);
      rt_free(s->a, img->smem);
      img->smem = ns;
      s->smem_cap = nc;
    }
    if (w >= img->nsmem) img->nsmem = w + 1;
    img->smem[w++] = (uint32_t)v;
    p = skip_ws(q, end);
    if (p < end && *p == ',') p++;
  }
}

/* ---- driver ------------------------------------------------------------- */

static void do_line(asm_state *s, const char *p, const char *end, uint32_t *pc) {
  p = skip_ws(p, end);
  /* labels */
  for (;;) {
    const char *e = ident_end(p, end);
    const char *c = skip_ws(e, end);
    if (e > p && is_ident0(*p) && *p != '.' && c < end && *c == ':') {
      if (s->pass == 1) add_sym(s, p, (size_t)(e - p), *pc, 1, p);
      p = skip_ws(c + 1, end);
      continue;
    }
    break;
  }
  if (p >= end) return;
  const char *e = ident_end(p, end);
  size_t n = (size_t)(e - p);
  if (*p == '.') {
#define DIR(x) (n == strlen(x) && !memcmp(p, x, n))
    if (DIR(".word")) {
      (*pc)++;
      if (s->pass == 2) {
        int64_t v;
        const char *q = skip_ws(e, end);
        const char *r = parse_int(q, end, &v);
        if (!r || skip_ws(r, end) < end)
          error_at(s, q, "expected a 64-bit word");
        else
          emit_word(s, (uint64_t)v);
      }
      return;
    }
    if (DIR(".equ")) {
      if (s->pass == 1) {
        const char *q = skip_ws(e, end);
        const char *qe = ident_end(q, end);
        int64_t v;
        const char *r = qe > q ? parse_imm(s, skip_ws(qe, end), end, &v, 0) : NULL;
        if (!r || !is_ident0(*q) || skip_ws(r, end) < end)
          error_at(s, q, "expected .equ NAME VALUE");
        else
          add_sym(s, q, (size_t)(qe - q), v, 0, q);
      }
      return;
    }
    if (s->pass == 1) {
      if (!(DIR(".target") || DIR(".hbm") || DIR(".param") || DIR(".result") || DIR(".const") ||
            DIR(".smem")))
        error_at(s, p, "unknown directive '%.*s'", (int)n, p);
      return;
    }
    if (DIR(".target")) {
      const char *q = skip_ws(e, end);
      const char *qe = q;
      while (qe < end && *qe != ' ' && *qe != '\t' && *qe != '\r')
        qe++;
      if (qe == q || skip_ws(qe, end) < end || qe - q > 1024) {
        error_at(s, q, "expected a target spec such as v3,mxu=64x64");
        return;
      }
      char *t = rt_alloc(s->a, (size_t)(qe - q) + 1);
      if (!t) {
        s->oom = 1;
        return;
      }
      memcpy(t, q, (size_t)(qe - q));
      t[qe - q] = 0;
      rt_free(s->a, s->img->target);
      s->img->target = t;
    } else if (DIR(".hbm")) {
      int64_t v;
      const char *q = skip_ws(e, end);
      const char *r = parse_imm(s, q, end, &v, 0);
      if (!r || v < 0 || skip_ws(r, end) < end)
        error_at(s, q, "expected a byte count");
      else
        s->img->hbm_bytes = (uint64_t)v;
    } else if (DIR(".param") || DIR(".result")) {
      dir_tensor(s, DIR(".result"), e, end);
    } else if (DIR(".const")) {
      dir_const(s, e, end);
    } else if (DIR(".smem")) {
      dir_smem(s, e, end);
    }
#undef DIR
    return;
  }
  int op = isa_lookup(p, n);
  if (op < 0 || (e < end && *e != ' ' && *e != '\t' && *e != '\r')) {
    if (s->pass == 1) error_at(s, p, "unknown instruction '%.*s'", (int)n, p);
    (*pc)++;
    return;
  }
  if (s->pass == 2) assemble_inst(s, op, e, end);
  (*pc)++;
}

int isa_assemble(const char *text, size_t len, const char *name, const rt_allocator *a,
                 tpub_image **out, char *err, size_t errlen) {
  asm_state s;
  memset(&s, 0, sizeof s);
  s.a = a;
  s.name = name ? name : "<asm>";
  s.text = text;
  s.len = len;
  s.errs.a = a;
  *out = NULL;
  if (err && errlen) err[0] = 0;
  s.syms = rt_calloc(a, MAX_SYMS, sizeof(sym));
  s.img = tpub_new(a);
  if (!s.syms || !s.img) {
    rt_free(a, s.syms);
    tpub_free(s.img);
    return -2;
  }
  for (s.pass = 1; s.pass <= 2 && !s.nerrors && !s.oom; s.pass++) {
    uint32_t pc = 0;
    const char *p = text, *end = text + len;
    s.line = 0;
    while (p < end && !s.oom) {
      const char *nl = memchr(p, '\n', (size_t)(end - p));
      const char *le = nl ? nl : end;
      s.line++;
      s.line_start = p;
      s.line_len = (size_t)(le - p);
      /* strip comments */
      const char *ce = p;
      while (ce < le && *ce != ';' && *ce != '#')
        ce++;
      if (memchr(p, 0, (size_t)(le - p))) {
        error_at(&s, p, "NUL byte in the source");
      } else {
        do_line(&s, p, ce, &pc);
      }
      p = nl ? nl + 1 : end;
    }
  }
  if (!s.nerrors && !s.oom && s.img->ncode == 0) {
    s.line = 0;
    s.line_start = "";
    s.line_len = 0;
    error_at(&s, NULL, "the program has no instructions");
  }
  int rc = 0;
  if (s.oom || s.errs.oom) {
    rc = -2;
    if (err && errlen) snprintf(err, errlen, "out of memory");
  } else if (s.nerrors) {
    rc = -1;
    if (s.nerrors > MAX_ERRORS)
      rt_buf_printf(&s.errs, "%s: %d more errors\n", s.name, s.nerrors - MAX_ERRORS);
    if (err && errlen) snprintf(err, errlen, "%s", s.errs.s ? s.errs.s : "error");
  }
  rt_buf_free(&s.errs);
  rt_free(a, s.syms);
  if (rc) {
    tpub_free(s.img);
    return rc;
  }
  *out = s.img;
  return 0;
}
