/* data.c: libtpurt-data (include/tpurt_data.h). Reading IDX, .npy and .npz
 * files into a dataset (every size checked before it is used), and the
 * loader: shuffle, batch, normalise, prefetch on one host thread. */
#include "tpurt_data.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef HAVE_ZLIB
#include <zlib.h>
#endif

enum { MAX_RANK = 8 };

struct tpurt_dataset {
  char msg[512];
  size_t n, elems;
  int rank;
  int64_t dims[MAX_RANK];
  uint8_t *u8;   /* images as bytes, or */
  float *f32;    /* images as float32 */
  int32_t *labels;
};

/* A whole file in memory. */
typedef struct blob {
  uint8_t *p;
  size_t n;
} blob;

typedef struct reader {
  tpurt_dataset_t *ds;
  const tpurt_data_options_t *o;
} reader;

static tpurt_data_status_t fail(tpurt_dataset_t *ds, tpurt_data_status_t s, const char *file,
                                const char *fmt, ...) {
  va_list ap;
  int k = snprintf(ds->msg, sizeof ds->msg, "%s: ", file);
  va_start(ap, fmt);
  if (k > 0 && (size_t)k < sizeof ds->msg)
    vsnprintf(ds->msg + k, sizeof ds->msg - (size_t)k, fmt, ap);
  va_end(ap);
  return s;
}

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[1] << 8 | p[0]); }
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p + 4) << 32 | le32(p); }

/* Inflates src (zlib windowBits wbits: 16+15 gzip, -15 raw deflate) into
 * *out, refusing output past limit and input that ends early. */
static tpurt_data_status_t inflate_to(reader *r, const char *file, const uint8_t *src, size_t n,
                                      int wbits, size_t expect, blob *out) {
#ifdef HAVE_ZLIB
  uint64_t limit = r->o->max_bytes;
  /* With a stated size, one spare byte catches a stream that overshoots it. */
  size_t cap = expect ? expect + 1 : (n < limit / 4 ? n * 4 + 64 : (size_t)limit);
  if (expect > limit)
    return fail(r->ds, TPURT_DATA_FORMAT, file, "stream of %zu bytes exceeds the limit of %llu bytes",
                expect, (unsigned long long)limit);
  uint8_t *buf = malloc(cap ? cap : 1);
  if (!buf)
    return fail(r->ds, TPURT_DATA_OUT_OF_MEMORY, file, "out of memory");
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, wbits) != Z_OK) {
    free(buf);
    return fail(r->ds, TPURT_DATA_OUT_OF_MEMORY, file, "cannot start zlib");
  }
  size_t fed = 0, got = 0;
  int zs = Z_OK;
  while (zs != Z_STREAM_END) {
    if (got == cap) {
      if (expect || cap >= limit) {
        inflateEnd(&z);
        free(buf);
        return fail(r->ds, TPURT_DATA_FORMAT, file,
                    expect ? "compressed stream inflates past its stated size of %zu bytes"
                           : "compressed stream inflates past the limit of %zu bytes",
                    expect ? expect : (size_t)limit);
      }
      size_t ncap = cap > limit / 2 ? (size_t)limit : cap * 2;
      uint8_t *nb = realloc(buf, ncap);
      if (!nb) {
        inflateEnd(&z);
        free(buf);
        return fail(r->ds, TPURT_DATA_OUT_OF_MEMORY, file, "out of memory");
      }
      buf = nb;
      cap = ncap;
    }
    size_t in_chunk = n - fed > (1u << 30) ? (1u << 30) : n - fed;
    size_t out_chunk = cap - got > (1u << 30) ? (1u << 30) : cap - got;
    z.next_in = (Bytef *)(uintptr_t)(src + fed);
    z.avail_in = (uInt)in_chunk;
    z.next_out = buf + got;
    z.avail_out = (uInt)out_chunk;
    zs = inflate(&z, Z_NO_FLUSH);
    fed += in_chunk - z.avail_in;
    got += out_chunk - z.avail_out;
    if (zs == Z_BUF_ERROR && fed == n) {
      inflateEnd(&z);
      free(buf);
      return fail(r->ds, TPURT_DATA_FORMAT, file, "compressed stream is truncated");
    }
    if (zs != Z_OK && zs != Z_STREAM_END && zs != Z_BUF_ERROR) {
      inflateEnd(&z);
      free(buf);
      return fail(r->ds, TPURT_DATA_FORMAT, file, "corrupt compressed stream (%s)",
                  z.msg ? z.msg : "zlib error");
    }
  }
  inflateEnd(&z);
  if (expect && got != expect) {
    free(buf);
    return fail(r->ds, TPURT_DATA_FORMAT, file, "compressed stream gives %zu bytes, not the stated %zu",
                got, expect);
  }
  out->p = buf;
  out->n = got;
  return TPURT_DATA_OK;
#else
  (void)src, (void)n, (void)wbits, (void)expect, (void)out;
  return fail(r->ds, TPURT_DATA_FORMAT, file, "compressed data, but libtpurt-data was built without zlib");
#endif
}

/* Reads file whole; a gzip stream is inflated. */
static tpurt_data_status_t read_file(reader *r, const char *file, blob *out) {
  FILE *f = fopen(file, "rb");
  if (!f)
    return fail(r->ds, TPURT_DATA_IO, file, "cannot open: %s", strerror(errno));
  blob raw = {0};
  size_t cap = 0;
  for (;;) {
    if (raw.n == cap) {
      if (cap >= r->o->max_bytes) {
        fclose(f);
        free(raw.p);
        return fail(r->ds, TPURT_DATA_FORMAT, file, "larger than the limit of %llu bytes",
                    (unsigned long long)r->o->max_bytes);
      }
      size_t ncap = cap ? cap * 2 : 1 << 16;
      if (ncap > r->o->max_bytes)
        ncap = (size_t)r->o->max_bytes;
      uint8_t *np = realloc(raw.p, ncap);
      if (!np) {
        fclose(f);
        free(raw.p);
        return fail(r->ds, TPURT_DATA_OUT_OF_MEMORY, file, "out of memory");
      }
      raw.p = np;
      cap = ncap;
    }
    size_t k = fread(raw.p + raw.n, 1, cap - raw.n, f);
    raw.n += k;
    if (k == 0)
      break;
  }
  int err = ferror(f);
  fclose(f);
  if (err) {
    free(raw.p);
    return fail(r->ds, TPURT_DATA_IO, file, "read error");
  }
  if (raw.n >= 2 && raw.p[0] == 0x1f && raw.p[1] == 0x8b) {
    tpurt_data_status_t s = inflate_to(r, file, raw.p, raw.n, 16 + 15, 0, out);
    free(raw.p);
    return s;
  }
  *out = raw;
  return TPURT_DATA_OK;
}

/* An array read from a file: kind 'u' (uint8), 'f' (float32), 'i' (int32),
 * 'l' (int64); data points into a blob. */
typedef struct array {
  char kind;
  int rank;
  int64_t dims[MAX_RANK];
  const uint8_t *data;
  size_t count; /* elements */
} array;

/* Element count of dims, or a failure when it overflows size_t or, times
 * item bytes, exceeds have bytes. */
static tpurt_data_status_t check_size(reader *r, const char *file, array *a, size_t item,
                                      size_t have) {
  size_t c = 1;
  for (int i = 0; i < a->rank; i++) {
    if (a->dims[i] < 0 || (a->dims[i] && c > SIZE_MAX / 2 / (size_t)a->dims[i] / item))
      return fail(r->ds, TPURT_DATA_FORMAT, file, "dimension %d (%lld) overflows the size", i,
                  (long long)a->dims[i]);
    c *= (size_t)a->dims[i];
  }
  if (c * item != have)
    return fail(r->ds, TPURT_DATA_FORMAT, file,
                "dims give %zu bytes of data but the file has %zu (%s)", c * item, have,
                c * item > have ? "truncated" : "trailing bytes");
  a->count = c;
  return TPURT_DATA_OK;
}

static tpurt_data_status_t parse_idx(reader *r, const char *file, const blob *b, array *a) {
  if (b->n < 4)
    return fail(r->ds, TPURT_DATA_FORMAT, file, "truncated: %zu bytes, no IDX magic", b->n);
  uint32_t m = be32(b->p);
  if ((m >> 16) != 0 || ((m >> 8) & 0xff) != 0x08 || (m & 0xff) == 0 || (m & 0xff) > MAX_RANK)
    return fail(r->ds, TPURT_DATA_FORMAT, file,
                "not an IDX file of unsigned bytes (magic 0x%08x, want 0x000008NN)", (unsigned)m);
  a->rank = (int)(m & 0xff);
  if (b->n < 4 + 4 * (size_t)a->rank)
    return fail(r->ds, TPURT_DATA_FORMAT, file, "truncated: header of %d dims needs %d bytes", a->rank,
                4 + 4 * a->rank);
  for (int i = 0; i < a->rank; i++)
    a->dims[i] = be32(b->p + 4 + 4 * i);
  a->kind = 'u';
  size_t h = 4 + 4 * (size_t)a->rank;
  a->data = b->p + h;
  return check_size(r, file, a, 1, b->n - h);
}

/* Finds 'key': in an npy header dict; returns the text after it. */
static const char *dict_value(const char *h, const char *key) {
  const char *p = strstr(h, key);
  if (!p)
    return NULL;
  p += strlen(key);
  while (*p == ' ')
    p++;
  return *p == ':' ? p + 1 : NULL;
}

static tpurt_data_status_t npy_header(reader *r, const char *file, const char *h, array *a);

static tpurt_data_status_t parse_npy(reader *r, const char *file, const uint8_t *p, size_t n,
                                     array *a) {
  if (n < 10 || memcmp(p, "\x93NUMPY", 6) != 0)
    return fail(r->ds, TPURT_DATA_FORMAT, file, "not an .npy array (bad magic)");
  size_t hl, h0;
  if (p[6] == 1) {
    hl = le16(p + 8);
    h0 = 10;
  } else if (p[6] == 2 || p[6] == 3) {
    if (n < 12)
      return fail(r->ds, TPURT_DATA_FORMAT, file, "truncated .npy header");
    hl = le32(p + 8);
    h0 = 12;
  } else {
    return fail(r->ds, TPURT_DATA_FORMAT, file, ".npy version %d is not 1, 2 or 3", p[6]);
  }
  if (hl > n - h0 || hl > 65536)
    return fail(r->ds, TPURT_DATA_FORMAT, file, "truncated .npy header (%zu bytes stated)", hl);
  char *h = malloc(hl + 1);
  if (!h)
    return fail(r->ds, TPURT_DATA_OUT_OF_MEMORY, file, "out of memory");
  memcpy(h, p + h0, hl);
  h[hl] = 0;
  tpurt_data_status_t s = npy_header(r, file, h, a);
  free(h);
  if (s)
    return s;
  a->data = p + h0 + hl;
  return check_size(r, file, a, a->kind == 'u' ? 1 : a->kind == 'l' ? 8 : 4, n - h0 - hl);
}

/* Reads descr, fortran_order and shape of the header dict h into a. */
static tpurt_data_status_t npy_header(reader *r, const char *file, const char *h, array *a) {
  const char *d = dict_value(h, "'descr'");
  while (d && *d == ' ')
    d++;
  if (d && (!strncmp(d, "'|u1'", 5) || !strncmp(d, "'<u1'", 5)))
    a->kind = 'u';
  else if (d && !strncmp(d, "'<f4'", 5))
    a->kind = 'f';
  else if (d && !strncmp(d, "'<i4'", 5))
    a->kind = 'i';
  else if (d && !strncmp(d, "'<i8'", 5))
    a->kind = 'l';
  else
    return fail(r->ds, TPURT_DATA_FORMAT, file,
                ".npy dtype is not one of |u1, <f4, <i4, <i8 (header: %.80s)", h);
  const char *fo = dict_value(h, "'fortran_order'");
  while (fo && *fo == ' ')
    fo++;
  if (!fo || strncmp(fo, "False", 5) != 0)
    return fail(r->ds, TPURT_DATA_FORMAT, file, ".npy array is not in C order");
  const char *s = dict_value(h, "'shape'");
  while (s && *s == ' ')
    s++;
  if (!s || *s != '(')
    return fail(r->ds, TPURT_DATA_FORMAT, file, ".npy header has no shape");
  s++;
  a->rank = 0;
  for (;;) {
    while (*s == ' ' || *s == ',')
      s++;
    if (*s == ')')
      break;
    if (*s < '0' || *s > '9' || a->rank == MAX_RANK)
      return fail(r->ds, TPURT_DATA_FORMAT, file, ".npy shape is malformed or of rank > %d", MAX_RANK);
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || v > INT64_MAX)
      return fail(r->ds, TPURT_DATA_FORMAT, file, ".npy dimension overflows");
    a->dims[a->rank++] = (int64_t)v;
    s = end;
  }
  return TPURT_DATA_OK;
}

/* Finds entry key + ".npy" of a zip archive by walking its local headers;
 * inflates it when deflated. *owned is set when out needs freeing. */
static tpurt_data_status_t npz_entry(reader *r, const char *file, const blob *z, const char *key,
                                     blob *out, int *owned) {
  size_t at = 0, kl = strlen(key);
  *owned = 0;
  while (at + 30 <= z->n && le32(z->p + at) == 0x04034b50) {
    const uint8_t *h = z->p + at;
    unsigned flags = le16(h + 6), method = le16(h + 8);
    uint64_t csize = le32(h + 18), usize = le32(h + 22);
    size_t nl = le16(h + 26), el = le16(h + 28);
    if (nl + el > z->n - at - 30)
      return fail(r->ds, TPURT_DATA_FORMAT, file, "truncated zip entry header at offset %zu", at);
    const uint8_t *name = h + 30, *extra = name + nl;
    if (csize == 0xffffffffu || usize == 0xffffffffu) {
      size_t e = 0;
      int found = 0;
      while (e + 4 <= el) {
        unsigned id = le16(extra + e), len = le16(extra + e + 2);
        if (len > el - e - 4)
          break;
        if (id == 1) {
          size_t q = e + 4;
          if (usize == 0xffffffffu && q + 8 <= e + 4 + len)
            usize = le64(extra + q), q += 8;
          if (csize == 0xffffffffu && q + 8 <= e + 4 + len)
            csize = le64(extra + q);
          found = 1;
        }
        e += 4 + len;
      }
      if (!found)
        return fail(r->ds, TPURT_DATA_FORMAT, file, "zip64 entry without its sizes at offset %zu", at);
    }
    if (flags & 8)
      return fail(r->ds, TPURT_DATA_FORMAT, file,
                  "zip entry at offset %zu has sizes only in a data descriptor (unsupported)", at);
    size_t d0 = at + 30 + nl + el;
    if (csize > z->n - d0)
      return fail(r->ds, TPURT_DATA_FORMAT, file, "truncated zip entry at offset %zu", at);
    if (nl == kl + 4 && !memcmp(name, key, kl) && !memcmp(name + kl, ".npy", 4)) {
      if (usize > r->o->max_bytes)
        return fail(r->ds, TPURT_DATA_FORMAT, file, "entry %s of %llu bytes exceeds the limit of %llu",
                    key, (unsigned long long)usize, (unsigned long long)r->o->max_bytes);
      if (method == 0) {
        if (usize != csize)
          return fail(r->ds, TPURT_DATA_FORMAT, file, "stored entry %s has different sizes", key);
        out->p = (uint8_t *)(uintptr_t)(z->p + d0);
        out->n = (size_t)csize;
        return TPURT_DATA_OK;
      }
      if (method != 8)
        return fail(r->ds, TPURT_DATA_FORMAT, file, "entry %s uses zip method %u (not stored or deflate)",
                    key, method);
      tpurt_data_status_t s = inflate_to(r, file, z->p + d0, (size_t)csize, -15, (size_t)usize, out);
      *owned = s == TPURT_DATA_OK;
      return s;
    }
    at = d0 + (size_t)csize;
  }
  return fail(r->ds, TPURT_DATA_FORMAT, file, "no entry %s.npy in the archive", key);
}

/* Parses one file (or npz entry) as an array. */
static tpurt_data_status_t parse_any(reader *r, const char *file, const blob *b, array *a) {
  if (b->n >= 6 && !memcmp(b->p, "\x93NUMPY", 6))
    return parse_npy(r, file, b->p, b->n, a);
  return parse_idx(r, file, b, a);
}

static tpurt_data_status_t take_images(reader *r, const char *file, const array *a) {
  tpurt_dataset_t *ds = r->ds;
  if (a->rank < 2)
    return fail(ds, TPURT_DATA_FORMAT, file, "images need rank >= 2 (N, ...), not %d", a->rank);
  if (a->kind != 'u' && a->kind != 'f')
    return fail(ds, TPURT_DATA_FORMAT, file, "images must be uint8 or float32");
  if (a->dims[0] > UINT32_MAX)
    return fail(ds, TPURT_DATA_FORMAT, file, "more than 2^32 examples");
  ds->n = (size_t)a->dims[0];
  ds->rank = a->rank - 1;
  ds->elems = 1;
  for (int i = 1; i < a->rank; i++)
    ds->dims[i - 1] = a->dims[i], ds->elems *= (size_t)a->dims[i];
  size_t bytes = a->count * (a->kind == 'u' ? 1 : 4);
  void *p = malloc(bytes ? bytes : 1);
  if (!p)
    return fail(ds, TPURT_DATA_OUT_OF_MEMORY, file, "out of memory");
  memcpy(p, a->data, bytes);
  if (a->kind == 'u')
    ds->u8 = p;
  else
    ds->f32 = p;
  return TPURT_DATA_OK;
}

static tpurt_data_status_t take_labels(reader *r, const char *file, const array *a) {
  tpurt_dataset_t *ds = r->ds;
  if (a->kind == 'f')
    return fail(ds, TPURT_DATA_FORMAT, file, "labels must be integers, not float32");
  if (a->rank != 1)
    return fail(ds, TPURT_DATA_FORMAT, file, "labels need rank 1, not %d", a->rank);
  if ((size_t)a->dims[0] != ds->n)
    return fail(ds, TPURT_DATA_FORMAT, file, "%lld labels for %zu images", (long long)a->dims[0], ds->n);
  ds->labels = malloc(ds->n ? ds->n * sizeof *ds->labels : 1);
  if (!ds->labels)
    return fail(ds, TPURT_DATA_OUT_OF_MEMORY, file, "out of memory");
  for (size_t i = 0; i < ds->n; i++) {
    int64_t v;
    if (a->kind == 'u')
      v = a->data[i];
    else if (a->kind == 'i')
      v = (int32_t)le32(a->data + 4 * i);
    else
      v = (int64_t)le64(a->data + 8 * i);
    if (v < 0 || v >= r->o->num_classes)
      return fail(ds, TPURT_DATA_FORMAT, file, "label %lld of example %zu is outside [0, %d)",
                  (long long)v, i, r->o->num_classes);
    ds->labels[i] = (int32_t)v;
  }
  return TPURT_DATA_OK;
}

void tpurt_data_options_init(tpurt_data_options_t *o) {
  memset(o, 0, sizeof *o);
  o->images_key = "x_train";
  o->labels_key = "y_train";
  o->num_classes = 10;
  o->max_bytes = (uint64_t)1 << 30;
}

static tpurt_data_status_t open_files(reader *r) {
  const tpurt_data_options_t *o = r->o;
  blob bi = {0}, bl = {0};
  tpurt_data_status_t s = read_file(r, o->images, &bi);
  if (s)
    return s;
  array a;
  if (bi.n >= 4 && le32(bi.p) == 0x04034b50) {
    blob ei = {0}, el = {0};
    int oi = 0, ol = 0;
    char where[600];
    s = npz_entry(r, o->images, &bi, o->images_key, &ei, &oi);
    snprintf(where, sizeof where, "%s:%s", o->images, o->images_key);
    if (!s && !(s = parse_any(r, where, &ei, &a)))
      s = take_images(r, where, &a);
    if (!s)
      s = npz_entry(r, o->images, &bi, o->labels_key, &el, &ol);
    snprintf(where, sizeof where, "%s:%s", o->images, o->labels_key);
    if (!s && !(s = parse_any(r, where, &el, &a)))
      s = take_labels(r, where, &a);
    if (oi)
      free(ei.p);
    if (ol)
      free(el.p);
    free(bi.p);
    return s;
  }
  if (!(s = parse_any(r, o->images, &bi, &a)))
    s = take_images(r, o->images, &a);
  free(bi.p);
  if (s)
    return s;
  if (!o->labels)
    return fail(r->ds, TPURT_DATA_INVALID_ARGUMENT, o->images, "not an .npz archive, and no labels file given");
  if ((s = read_file(r, o->labels, &bl)))
    return s;
  if (!(s = parse_any(r, o->labels, &bl, &a)))
    s = take_labels(r, o->labels, &a);
  free(bl.p);
  return s;
}

tpurt_data_status_t tpurt_dataset_open(const tpurt_data_options_t *o, tpurt_dataset_t **out_ds) {
  tpurt_dataset_t *ds = calloc(1, sizeof *ds);
  *out_ds = ds;
  if (!ds)
    return TPURT_DATA_OUT_OF_MEMORY;
  if (!o || !o->images)
    return fail(ds, TPURT_DATA_INVALID_ARGUMENT, "tpurt_dataset_open", "no images file given");
  if (o->num_classes < 1 || (!o->labels && (!o->images_key || !o->labels_key)))
    return fail(ds, TPURT_DATA_INVALID_ARGUMENT, o->images, "num_classes < 1 or no .npz keys");
  reader r = {ds, o};
  return open_files(&r);
}

void tpurt_dataset_destroy(tpurt_dataset_t *ds) {
  if (!ds)
    return;
  free(ds->u8);
  free(ds->f32);
  free(ds->labels);
  free(ds);
}

const char *tpurt_dataset_message(const tpurt_dataset_t *ds) { return ds ? ds->msg : "out of memory"; }
size_t tpurt_dataset_count(const tpurt_dataset_t *ds) { return ds->labels ? ds->n : 0; }
size_t tpurt_dataset_example_elems(const tpurt_dataset_t *ds) { return ds->elems; }
int tpurt_dataset_example_dims(const tpurt_dataset_t *ds, int64_t *dims, int max) {
  for (int i = 0; i < ds->rank && i < max; i++)
    dims[i] = ds->dims[i];
  return ds->rank;
}
int32_t tpurt_dataset_label(const tpurt_dataset_t *ds, size_t i) { return ds->labels[i]; }
double tpurt_dataset_value(const tpurt_dataset_t *ds, size_t i, size_t j) {
  size_t k = i * ds->elems + j;
  return ds->u8 ? (double)ds->u8[k] : (double)ds->f32[k];
}

/* ---- the loader ---------------------------------------------------------- */

typedef struct slot {
  float *images;
  int32_t *labels;
  tpurt_batch_t b;
} slot;

struct tpurt_loader {
  const tpurt_dataset_t *ds;
  tpurt_loader_options_t o;
  size_t per_epoch;
  uint64_t total;      /* batches to produce; UINT64_MAX when unbounded */
  uint32_t *perm;      /* the producer's order for perm_epoch */
  int perm_epoch;
  slot *ring;          /* prefetch + 1 slots: K made ahead and the one returned */
  int nslots;
  uint64_t produced, consumed; /* batch sequence numbers */
  int stop, threaded;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  tpurt_loader_stats_t st;
};

static uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void tpurt_loader_order(const tpurt_loader_t *ld, int epoch, uint32_t *perm) {
  size_t n = tpurt_dataset_count(ld->ds);
  for (size_t i = 0; i < n; i++)
    perm[i] = (uint32_t)i;
  if (!ld->o.shuffle)
    return;
  uint64_t e = splitmix64((uint64_t)epoch);
  for (size_t i = n; i-- > 1;) {
    uint64_t rnd = splitmix64(ld->o.seed ^ splitmix64(e ^ splitmix64(i)));
    size_t j = (size_t)(((rnd >> 32) * (uint64_t)(i + 1)) >> 32);
    uint32_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Makes batch seq into s (called by one thread at a time). */
static void produce(tpurt_loader_t *ld, uint64_t seq, slot *s) {
  const tpurt_dataset_t *ds = ld->ds;
  int epoch = (int)(seq / ld->per_epoch);
  size_t index = (size_t)(seq % ld->per_epoch), n = tpurt_dataset_count(ds);
  if (epoch != ld->perm_epoch) {
    tpurt_loader_order(ld, epoch, ld->perm);
    ld->perm_epoch = epoch;
  }
  size_t first = index * ld->o.batch, count = n - first < ld->o.batch ? n - first : ld->o.batch;
  size_t m = ds->elems;
  float sc = ld->o.scale, off = ld->o.offset;
  for (size_t k = 0; k < count; k++) {
    size_t ex = ld->perm[first + k];
    float *dst = s->images + k * m;
    if (ds->u8) {
      const uint8_t *src = ds->u8 + ex * m;
      for (size_t j = 0; j < m; j++)
        dst[j] = (float)src[j] * sc + off;
    } else {
      const float *src = ds->f32 + ex * m;
      for (size_t j = 0; j < m; j++)
        dst[j] = src[j] * sc + off;
    }
    s->labels[k] = ds->labels[ex];
  }
  s->b = (tpurt_batch_t){count, m, s->images, s->labels, epoch, index};
}

static void *producer(void *arg) {
  tpurt_loader_t *ld = arg;
  pthread_mutex_lock(&ld->mu);
  for (;;) {
    while (!ld->stop && ld->produced < ld->total &&
           ld->produced - ld->consumed >= (uint64_t)ld->o.prefetch)
      pthread_cond_wait(&ld->cv, &ld->mu);
    if (ld->stop || ld->produced >= ld->total)
      break;
    uint64_t seq = ld->produced;
    slot *s = &ld->ring[seq % (uint64_t)ld->nslots];
    pthread_mutex_unlock(&ld->mu);
    uint64_t t0 = now_ns();
    produce(ld, seq, s);
    uint64_t dt = now_ns() - t0;
    pthread_mutex_lock(&ld->mu);
    ld->st.produce_ns += dt;
    ld->produced++;
    pthread_cond_broadcast(&ld->cv);
  }
  pthread_mutex_unlock(&ld->mu);
  return NULL;
}

void tpurt_loader_options_init(tpurt_loader_options_t *o) {
  memset(o, 0, sizeof *o);
  o->batch = 32;
  o->shuffle = 1;
  o->epochs = 1;
  o->scale = 1.0f / 255.0f;
}

tpurt_data_status_t tpurt_loader_create(const tpurt_dataset_t *ds, const tpurt_loader_options_t *o,
                                        tpurt_loader_t **out_loader) {
  *out_loader = NULL;
  size_t n = ds ? tpurt_dataset_count(ds) : 0;
  if (!o || o->batch == 0 || o->epochs < 0 || o->prefetch < 0 || o->prefetch > 1024)
    return TPURT_DATA_INVALID_ARGUMENT;
  size_t per = o->drop_remainder ? n / o->batch : (n + o->batch - 1) / o->batch;
  if (per == 0 || o->batch > SIZE_MAX / 4 / (ds->elems ? ds->elems : 1))
    return TPURT_DATA_INVALID_ARGUMENT;
  tpurt_loader_t *ld = calloc(1, sizeof *ld);
  if (!ld)
    return TPURT_DATA_OUT_OF_MEMORY;
  ld->ds = ds;
  ld->o = *o;
  ld->per_epoch = per;
  ld->total = o->epochs ? (uint64_t)o->epochs * per : UINT64_MAX;
  ld->perm_epoch = -1;
  ld->nslots = o->prefetch + 1;
  ld->perm = malloc(n * sizeof *ld->perm);
  ld->ring = calloc((size_t)ld->nslots, sizeof *ld->ring);
  int ok = ld->perm && ld->ring;
  for (int i = 0; ok && i < ld->nslots; i++) {
    ld->ring[i].images = malloc(o->batch * (ds->elems ? ds->elems : 1) * sizeof(float));
    ld->ring[i].labels = malloc(o->batch * sizeof(int32_t));
    ok = ld->ring[i].images && ld->ring[i].labels;
  }
  if (!ok) {
    tpurt_loader_destroy(ld);
    return TPURT_DATA_OUT_OF_MEMORY;
  }
  if (o->prefetch > 0) {
    if (pthread_mutex_init(&ld->mu, NULL)) {
      tpurt_loader_destroy(ld);
      return TPURT_DATA_IO;
    }
    if (pthread_cond_init(&ld->cv, NULL)) {
      pthread_mutex_destroy(&ld->mu);
      tpurt_loader_destroy(ld);
      return TPURT_DATA_IO;
    }
    if (pthread_create(&ld->thread, NULL, producer, ld)) {
      pthread_cond_destroy(&ld->cv);
      pthread_mutex_destroy(&ld->mu);
      tpurt_loader_destroy(ld);
      return TPURT_DATA_IO;
    }
    ld->threaded = 1;
  }
  *out_loader = ld;
  return TPURT_DATA_OK;
}

void tpurt_loader_destroy(tpurt_loader_t *ld) {
  if (!ld)
    return;
  if (ld->threaded) {
    pthread_mutex_lock(&ld->mu);
    ld->stop = 1;
    pthread_cond_broadcast(&ld->cv);
    pthread_mutex_unlock(&ld->mu);
    pthread_join(ld->thread, NULL);
    pthread_cond_destroy(&ld->cv);
    pthread_mutex_destroy(&ld->mu);
  }
  for (int i = 0; ld->ring && i < ld->nslots; i++) {
    free(ld->ring[i].images);
    free(ld->ring[i].labels);
  }
  free(ld->ring);
  free(ld->perm);
  free(ld);
}

tpurt_data_status_t tpurt_loader_next(tpurt_loader_t *ld, tpurt_batch_t *out_batch) {
  memset(out_batch, 0, sizeof *out_batch);
  if (ld->consumed >= ld->total)
    return TPURT_DATA_END;
  uint64_t t0 = now_ns();
  slot *s = &ld->ring[ld->consumed % (uint64_t)ld->nslots];
  if (!ld->threaded) {
    produce(ld, ld->consumed, s);
    uint64_t dt = now_ns() - t0;
    ld->st.produce_ns += dt;
    ld->st.wait_ns += dt;
    ld->st.stalls++;
    *out_batch = s->b;
    ld->consumed++;
  } else {
    /* Slot seq stays untouched until batch seq + prefetch + 1 is made,
     * which waits for the next call's consumed++. */
    pthread_mutex_lock(&ld->mu);
    if (ld->produced <= ld->consumed) {
      ld->st.stalls++;
      while (ld->produced <= ld->consumed)
        pthread_cond_wait(&ld->cv, &ld->mu);
    }
    ld->st.wait_ns += now_ns() - t0;
    *out_batch = s->b;
    ld->consumed++;
    pthread_cond_broadcast(&ld->cv);
    pthread_mutex_unlock(&ld->mu);
  }
  ld->st.batches++;
  return TPURT_DATA_OK;
}

size_t tpurt_loader_batches_per_epoch(const tpurt_loader_t *ld) { return ld->per_epoch; }

void tpurt_loader_stats(const tpurt_loader_t *ld, tpurt_loader_stats_t *out_stats) {
  if (ld->threaded)
    pthread_mutex_lock((pthread_mutex_t *)(uintptr_t)&ld->mu);
  *out_stats = ld->st;
  if (ld->threaded)
    pthread_mutex_unlock((pthread_mutex_t *)(uintptr_t)&ld->mu);
}

tpurt_data_status_t tpurt_batch_replica(const tpurt_batch_t *b, int r, int n, tpurt_batch_t *out_batch) {
  if (n < 1 || r < 0 || r >= n || b->count % (size_t)n != 0) {
    memset(out_batch, 0, sizeof *out_batch);
    return TPURT_DATA_INVALID_ARGUMENT;
  }
  size_t per = b->count / (size_t)n, first = per * (size_t)r;
  *out_batch = *b;
  out_batch->count = per;
  out_batch->images = b->images + first * b->elems;
  out_batch->labels = b->labels + first;
  return TPURT_DATA_OK;
}
