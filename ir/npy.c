/* npy.c: numpy's .npy format, read and write.
 *
 * Layout (numpy/lib/format.py, versions 1.0, 2.0 and 3.0):
 *
 *   "\x93NUMPY" MAJOR MINOR HEADER_LEN HEADER DATA
 *
 *   HEADER_LEN  uint16 little endian (1.0), uint32 little endian (2.0, 3.0)
 *   HEADER      a Python dict literal, ASCII (1.0, 2.0) or UTF-8 (3.0):
 *                 {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 *               padded with spaces and ended by '\n'; numpy pads so that
 *               DATA starts on a 64-byte boundary
 *   DATA        the elements, C (row-major) or Fortran (column-major)
 *               order, in the byte order the descr names ('<' little,
 *               '>' big, '|' not applicable, '=' native = little here)
 *
 * Supported dtypes: b1 (pred), i1 (s8), i4 (s32), f2 (f16), f4 (f32).
 * numpy has no bfloat16; bf16 literals are written as <f4 (exact). */
#include "ir/ir.h"

#include <stdlib.h>

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* ---- header dict ----------------------------------------------------- */

typedef struct hdr {
  const char *p, *end;
  char descr[16];
  bool have_descr, have_fortran, have_shape;
  bool fortran;
  int rank;
  int64_t dims[IR_MAX_RANK];
} hdr;

static void skip_ws(hdr *h) {
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
    h->p++;
}

static bool eat(hdr *h, char c) {
  skip_ws(h);
  if (h->p < h->end && *h->p == c) {
    h->p++;
    return true;
  }
  return false;
}

/* A quoted string ('...' or "..."); no escapes (numpy never writes them in
 * keys or simple descrs). */
static bool read_str(hdr *h, const char **s, size_t *n) {
  skip_ws(h);
  if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return false;
  char q = *h->p++;
  const char *b = h->p;
  while (h->p < h->end && *h->p != q) {
    if (*h->p == '\\') return false;
    h->p++;
  }
  if (h->p >= h->end) return false;
  *s = b;
  *n = (size_t)(h->p - b);
  h->p++;
  return true;
}

static bool read_word(hdr *h, const char *w) {
  skip_ws(h);
  size_t n = strlen(w);
  if ((size_t)(h->end - h->p) < n || memcmp(h->p, w, n) != 0) return false;
  h->p += n;
  return true;
}

/* Parses the dict; on failure writes the reason into why. */
static bool parse_header(hdr *h, char *why, size_t whylen) {
  if (!eat(h, '{')) {
    snprintf(why, whylen, "header does not start with '{'");
    return false;
  }
  for (;;) {
    if (eat(h, '}')) break;
    const char *k;
    size_t kn;
    if (!read_str(h, &k, &kn)) {
      snprintf(why, whylen, "expected a quoted key in the header dict");
      return false;
    }
    if (!eat(h, ':')) {
      snprintf(why, whylen, "expected ':' after key '%.*s'", (int)kn, k);
      return false;
    }
    if (kn == 5 && memcmp(k, "descr", 5) == 0) {
      const char *v;
      size_t vn;
      skip_ws(h);
      if (h->p < h->end && *h->p == '[') {
        snprintf(why, whylen, "structured dtypes (descr is a list) are not supported");
        return false;
      }
      if (!read_str(h, &v, &vn)) {
        snprintf(why, whylen, "'descr' is not a quoted string");
        return false;
      }
      if (vn >= sizeof h->descr) {
        snprintf(why, whylen, "unsupported dtype '%.*s'", (int)(vn > 40 ? 40 : vn), v);
        return false;
      }
      memcpy(h->descr, v, vn);
      h->descr[vn] = 0;
      h->have_descr = true;
    } else if (kn == 13 && memcmp(k, "fortran_order", 13) == 0) {
      if (read_word(h, "True"))
        h->fortran = true;
      else if (read_word(h, "False"))
        h->fortran = false;
      else {
        snprintf(why, whylen, "'fortran_order' is neither True nor False");
        return false;
      }
      h->have_fortran = true;
    } else if (kn == 5 && memcmp(k, "shape", 5) == 0) {
      if (!eat(h, '(')) {
        snprintf(why, whylen, "'shape' is not a tuple");
        return false;
      }
      h->rank = 0;
      for (;;) {
        if (eat(h, ')')) break;
        skip_ws(h);
        if (h->p >= h->end || *h->p < '0' || *h->p > '9') {
          snprintf(why, whylen, "'shape' holds something other than non-negative integers");
          return false;
        }
        int64_t v = 0;
        while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
          if (v > (INT64_MAX - 9) / 10) {
            snprintf(why, whylen, "a dimension in 'shape' is too large");
            return false;
          }
          v = v * 10 + (*h->p++ - '0');
        }
        if (h->p < h->end && (*h->p == 'L' || *h->p == 'l')) h->p++; /* Python 2 */
        if (h->rank == IR_MAX_RANK) {
          snprintf(why, whylen, "'shape' has more than %d dimensions", IR_MAX_RANK);
          return false;
        }
        h->dims[h->rank++] = v;
        if (eat(h, ')')) break;
        if (!eat(h, ',')) {
          snprintf(why, whylen, "expected ',' or ')' in 'shape'");
          return false;
        }
      }
      h->have_shape = true;
    } else {
      snprintf(why, whylen, "unexpected key '%.*s' in the header", (int)(kn > 40 ? 40 : kn), k);
      return false;
    }
    if (eat(h, '}')) break;
    if (!eat(h, ',')) {
      snprintf(why, whylen, "expected ',' or '}' in the header dict");
      return false;
    }
  }
  skip_ws(h);
  if (h->p != h->end) {
    snprintf(why, whylen, "unexpected text after the header dict");
    return false;
  }
  if (!h->have_descr || !h->have_fortran || !h->have_shape) {
    snprintf(why, whylen, "header lacks '%s'",
             !h->have_descr     ? "descr"
             : !h->have_fortran ? "fortran_order"
                                : "shape");
    return false;
  }
  return true;
}

/* A numpy dtype as far as we read it: kind b (bool), i (signed), u
 * (unsigned), f (float); size in bytes; byte order. */
typedef struct dtype {
  char kind;
  int size;
  bool big;
} dtype;

static bool parse_descr(const char *d, dtype *dt) {
  char order = d[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') return false;
  char k = d[1];
  if (k != 'b' && k != 'i' && k != 'u' && k != 'f') return false;
  if (d[2] < '1' || d[2] > '8' || d[3] != 0) return false;
  int size = d[2] - '0';
  bool ok = k == 'b'   ? size == 1
            : k == 'f' ? size == 2 || size == 4 || size == 8
                       : size == 1 || size == 2 || size == 4 || size == 8;
  if (!ok || (order == '|' && size > 1)) return false;
  dt->kind = k;
  dt->size = size;
  dt->big = order == '>';
  return true;
}

/* The IR type holding the dtype exactly, or IR_TYPE_INVALID. */
static ir_type native_type(dtype dt) {
  switch (dt.kind) {
  case 'b':
    return IR_PRED;
  case 'i':
    return dt.size == 1 ? IR_S8 : dt.size == 2 ? IR_S16 : dt.size == 4 ? IR_S32 : IR_S64;
  case 'u':
    return dt.size == 1 ? IR_U8 : dt.size == 2 ? IR_U16 : dt.size == 4 ? IR_U32 : IR_U64;
  case 'f':
    return dt.size == 2 ? IR_F16 : dt.size == 4 ? IR_F32 : dt.size == 8 ? IR_F64 : IR_TYPE_INVALID;
  default:
    return IR_TYPE_INVALID;
  }
}

static const char *numpy_name(dtype dt, bool known) {
  if (!known) return "unknown";
  static const char *const names[4][4] = {{"int8", "int16", "int32", "int64"},
                                          {"uint8", "uint16", "uint32", "uint64"},
                                          {"?", "float16", "float32", "float64"},
                                          {"bool", "?", "?", "?"}};
  int row = dt.kind == 'i' ? 0 : dt.kind == 'u' ? 1 : dt.kind == 'f' ? 2 : 3;
  int col = dt.size == 1 ? 0 : dt.size == 2 ? 1 : dt.size == 4 ? 2 : 3;
  return names[row][col];
}

/* ---- decode ---------------------------------------------------------- */

static void copy_elem(uint8_t *dst, const uint8_t *src, int size, bool swap) {
  if (!swap) {
    memcpy(dst, src, (size_t)size);
    return;
  }
  for (int i = 0; i < size; i++)
    dst[i] = src[size - 1 - i];
}

/* Walks a row-major index and keeps the column-major (Fortran) element
 * offset in step. */
typedef struct walker {
  int rank;
  const int64_t *dims;
  int64_t idx[IR_MAX_RANK], stride[IR_MAX_RANK], off;
} walker;

static void walker_init(walker *w, int rank, const int64_t *dims) {
  memset(w, 0, sizeof *w);
  w->rank = rank;
  w->dims = dims;
  int64_t st = 1;
  for (int k = 0; k < rank; k++) {
    w->stride[k] = st;
    st *= dims[k];
  }
}

static void walker_next(walker *w) {
  for (int k = w->rank - 1; k >= 0; k--) {
    if (++w->idx[k] < w->dims[k]) {
      w->off += w->stride[k];
      return;
    }
    w->off -= w->stride[k] * (w->idx[k] - 1);
    w->idx[k] = 0;
  }
}

/* Reads one element of dtype dt at p as an int64 (b, i, u: *is_float
 * false; a uint64 above INT64_MAX sets *big) or a double (f). */
static void load(const uint8_t *p, dtype dt, int64_t *iv, double *fv, bool *is_float, bool *big) {
  uint8_t b[8];
  copy_elem(b, p, dt.size, dt.big && dt.size > 1);
  uint64_t u = 0;
  for (int k = dt.size - 1; k >= 0; k--)
    u = u << 8 | b[k]; /* now little endian */
  *is_float = dt.kind == 'f';
  *big = dt.kind == 'u' && u > (uint64_t)INT64_MAX;
  if (dt.kind == 'f') {
    if (dt.size == 2)
      *fv = ir_f16_to_f32((uint16_t)u);
    else if (dt.size == 4) {
      uint32_t x = (uint32_t)u;
      float f;
      memcpy(&f, &x, 4);
      *fv = f;
    } else {
      memcpy(fv, &u, 8);
    }
  } else if (dt.kind == 'i' && dt.size < 8 && (u >> (8 * dt.size - 1)) & 1) {
    *iv = (int64_t)(u | ~(uint64_t)0 << (8 * dt.size)); /* sign-extend */
  } else {
    *iv = (int64_t)u;
  }
}

/* The parsed header of an .npy held in data[0, len): its dict, dtype and
 * where the data starts. len may be a prefix of the file. */
typedef struct npy_head {
  hdr h;
  dtype dt;
  bool known;  /* dt is a dtype tpucc reads */
  ir_type nt;  /* the IR type holding dt exactly, or IR_TYPE_INVALID */
  size_t doff; /* where the data starts */
} npy_head;

static base_status read_head(const char *what, const void *data, size_t len, npy_head *o,
                             char *err, size_t errlen) {
  const uint8_t *d = data;
  if (len < 10 || memcmp(d, npy_magic, 6) != 0)
    return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: not an .npy file (bad magic)", what);
  int major = d[6], minor = d[7];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = (size_t)d[8] | (size_t)d[9] << 8;
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (len < 12) return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: truncated .npy header", what);
    hlen = (size_t)d[8] | (size_t)d[9] << 8 | (size_t)d[10] << 16 | (size_t)d[11] << 24;
    hstart = 12;
  } else {
    return base_fail(err, errlen, ST_UNSUPPORTED, "%s: unsupported .npy format version %d.%d", what,
                major, minor);
  }
  if (minor != 0)
    return base_fail(err, errlen, ST_UNSUPPORTED, "%s: unsupported .npy format version %d.%d", what,
                major, minor);
  if (hlen > len - hstart)
    return base_fail(err, errlen, ST_INVALID_ARGUMENT,
                "%s: .npy header length %zu exceeds the file (%zu bytes)", what, hlen, len);
  memset(o, 0, sizeof *o);
  o->h.p = (const char *)d + hstart;
  o->h.end = o->h.p + hlen;
  char why[160];
  if (!parse_header(&o->h, why, sizeof why))
    return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: malformed .npy header: %s", what, why);
  o->known = parse_descr(o->h.descr, &o->dt);
  o->nt = o->known ? native_type(o->dt) : IR_TYPE_INVALID;
  o->doff = hstart + hlen;
  return ST_OK;
}

base_status ir_npy_peek(const char *what, const void *data, size_t len, ir_shape *out_shape,
                        size_t *out_size, char *err, size_t errlen) {
  npy_head o;
  base_status st = read_head(what, data, len, &o, err, errlen);
  if (st != ST_OK) return st;
  int64_t n;
  *out_shape = ir_shape_array(o.nt == IR_TYPE_INVALID ? IR_F32 : o.nt, o.h.rank, o.h.dims);
  if (!ir_shape_elements(out_shape, &n) || !o.known ||
      (double)n * o.dt.size > (double)SIZE_MAX - (double)o.doff)
    *out_size = SIZE_MAX;
  else
    *out_size = o.doff + (size_t)n * (size_t)o.dt.size;
  out_shape->type = o.nt;
  return ST_OK;
}

static base_status decode(arena *a, const char *what, const void *data, size_t len, ir_type as,
                          ir_literal **out, char *err, size_t errlen) {
  const uint8_t *d = data;
  npy_head o;
  base_status st = read_head(what, data, len, &o, err, errlen);
  if (st != ST_OK) return st;
  hdr h = o.h;
  dtype dt = o.dt;
  bool known = o.known;
  ir_type nt = o.nt;
  if (!known || (nt == IR_TYPE_INVALID && as == IR_TYPE_INVALID))
    return base_fail(err, errlen, ST_UNSUPPORTED,
                "%s: unsupported dtype '%s' (%s): tpucc reads bool, int8/16/32/64, "
                "uint8/16/32/64, float16, float32 and float64 (convert with .astype(); raw .bin "
                "for bf16)",
                what, h.descr, numpy_name(dt, known));
  ir_type t = as == IR_TYPE_INVALID ? nt : as;
  if (dt.kind == 'f' && !ir_type_is_float(t))
    return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: %s data cannot be read as %s", what,
                numpy_name(dt, true), ir_type_name(t));
  ir_shape s = ir_shape_array(t, h.rank, h.dims);
  int64_t n;
  size_t bytes;
  if (!ir_shape_elements(&s, &n) || base_mul_overflow((size_t)n, (size_t)dt.size, &bytes))
    return base_fail(err, errlen, ST_RESOURCE_EXHAUSTED, "%s: shape too large", what);
  size_t doff = o.doff, avail = len - doff;
  if (bytes > avail)
    return base_fail(err, errlen, ST_INVALID_ARGUMENT,
                "%s: truncated: shape needs %zu data bytes, the file has %zu", what, bytes, avail);
  if (bytes < avail)
    return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: %zu unexpected bytes after the array data",
                what, avail - bytes);
  ir_literal *l = ir_literal_create(a, &s);
  if (!l) return base_fail(err, errlen, ST_RESOURCE_EXHAUSTED, "%s: shape too large", what);
  const uint8_t *src = d + doff;
  walker w;
  walker_init(&w, h.rank, h.dims);
  if (nt == t) { /* same type: copy, swapping bytes when needed */
    uint8_t *dst = l->data;
    int size = dt.size;
    bool swap = dt.big && size > 1;
    if (!h.fortran && !swap) {
      memcpy(dst, src, bytes);
    } else {
      for (int64_t i = 0; i < n; i++, walker_next(&w))
        copy_elem(dst + i * size, src + (h.fortran ? w.off : i) * size, size, swap);
    }
    if (t == IR_PRED)
      for (int64_t i = 0; i < n; i++)
        dst[i] = dst[i] != 0;
  } else { /* converting: floats round to nearest even, ints must fit */
    int bits = ir_type_size(t) * 8;
    bool uns = ir_type_is_unsigned(t);
    int64_t hi = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - (uns ? 0 : 1))) - 1;
    int64_t lo = uns ? 0 : -hi - 1;
    for (int64_t i = 0; i < n; i++, walker_next(&w)) {
      int64_t iv = 0;
      double fv = 0;
      bool isf, big;
      load(src + (h.fortran ? w.off : i) * dt.size, dt, &iv, &fv, &isf, &big);
      if (isf)
        ir_literal_set_f64(l, i, fv);
      else if (ir_type_is_float(t))
        ir_literal_set_f64(l, i, big ? (double)(uint64_t)iv : (double)iv);
      else if (t == IR_PRED)
        ir_literal_set_i64(l, i, iv != 0);
      else if ((big && t != IR_U64) || (!big && (iv < lo || iv > hi)))
        return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: element %lld (%s%lld) does not fit %s",
                    what, (long long)i, big ? "2^64" : "", (long long)iv, ir_type_name(t));
      else
        ir_literal_set_i64(l, i, iv);
    }
  }
  *out = l;
  return ST_OK;
}

base_status ir_npy_decode(arena *a, const char *what, const void *data, size_t len,
                          ir_literal **out, char *err, size_t errlen) {
  return decode(a, what, data, len, IR_TYPE_INVALID, out, err, errlen);
}

base_status ir_npy_decode_as(arena *a, const char *what, const void *data, size_t len, ir_type as,
                             ir_literal **out, char *err, size_t errlen) {
  BASE_ASSERT(as == IR_TYPE_INVALID || ir_type_is_core(as));
  return decode(a, what, data, len, as, out, err, errlen);
}

/* ---- encode ---------------------------------------------------------- */

base_status ir_npy_encode(strbuf *b, const ir_literal *l, char *err, size_t errlen) {
  const ir_shape *s = &l->shape;
  if (s->type == IR_TUPLE)
    return base_fail(err, errlen, ST_UNSUPPORTED, "a tuple cannot be written to .npy");
  static const char *const descr[] = {
      [IR_PRED] = "|b1", [IR_S8] = "|i1",  [IR_S16] = "<i2", [IR_S32] = "<i4", [IR_S64] = "<i8",
      [IR_U8] = "|u1",   [IR_U16] = "<u2", [IR_U32] = "<u4", [IR_U64] = "<u8", [IR_BF16] = "<f4",
      [IR_F16] = "<f2",  [IR_F32] = "<f4", [IR_F64] = "<f8"};
  if (!ir_type_is_core(s->type))
    return base_fail(err, errlen, ST_UNSUPPORTED, "%s cannot be written to .npy",
                     ir_type_name(s->type));
  strbuf h;
  sb_init(&h);
  sb_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr[s->type]);
  for (int i = 0; i < s->rank; i++)
    sb_printf(&h, "%lld, ", (long long)s->dims[i]);
  if (s->rank > 1)
    h.len -= 2; /* numpy spells (3,) and (2, 3) */
  else if (s->rank == 1)
    h.len -= 1;
  sb_puts(&h, "), }");
  /* Pad with spaces so that 10 + header (with '\n') is a multiple of 64. */
  while ((10 + h.len + 1) % 64 != 0)
    sb_putc(&h, ' ');
  sb_putc(&h, '\n');
  sb_putn(b, npy_magic, 6);
  sb_putc(b, 1);
  sb_putc(b, 0);
  sb_putc(b, (char)(h.len & 0xff));
  sb_putc(b, (char)(h.len >> 8));
  sb_putn(b, h.s, h.len);
  sb_free(&h);
  if (s->type == IR_BF16) {
    int64_t n = ir_shape_count(s);
    const uint16_t *v = l->data;
    for (int64_t i = 0; i < n; i++) {
      float f = ir_bf16_to_f32(v[i]);
      uint32_t u;
      memcpy(&u, &f, 4);
      char le[4] = {(char)(u & 0xff), (char)(u >> 8 & 0xff), (char)(u >> 16 & 0xff),
                    (char)(u >> 24)};
      sb_putn(b, le, 4);
    }
  } else {
    ir_bin_encode(b, l);
  }
  return ST_OK;
}
