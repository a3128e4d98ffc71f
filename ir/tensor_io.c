/* tensor_io.c: tensors in and out of files and command-line text: whole
 * files, raw .bin, choosing a format by extension, IREE-style tensor
 * literals ("2x3xf32=1 2 3 4 5 6") and their printing. The .npy and .npz
 * codecs live in npy.c and npz.c. Contracts are in ir.h. */
#include "ir/ir.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- literals that may not fit ------------------------------------------ */

static ir_literal *try_create(arena *a, const ir_shape *s, int depth) {
  ir_literal *l = arena_try_alloc(a, sizeof *l);
  if (!l || depth > IR_BUDGET_MAX_DEPTH) return NULL;
  l->shape = *s;
  if (s->type == IR_TUPLE) {
    size_t n = (size_t)(s->ntuple > 0 ? s->ntuple : 1);
    l->shape.tuple = arena_try_alloc(a, n * sizeof *s->tuple);
    l->elems = arena_try_alloc(a, n * sizeof *l->elems);
    if (!l->shape.tuple || !l->elems) return NULL;
    for (int i = 0; i < s->ntuple; i++) {
      if (!(l->elems[i] = try_create(a, &s->tuple[i], depth + 1))) return NULL;
      l->shape.tuple[i] = l->elems[i]->shape;
    }
    return l;
  }
  int64_t n;
  size_t bytes;
  if (!ir_shape_elements(s, &n) ||
      base_mul_overflow((size_t)n, (size_t)ir_type_size(s->type), &bytes))
    return NULL;
  l->nbytes = bytes;
  l->data = arena_try_alloc(a, bytes ? bytes : 1);
  return l->data ? l : NULL;
}

ir_literal *ir_literal_try_create(arena *a, const ir_shape *s) { return try_create(a, s, 0); }

/* ---- files ----------------------------------------------------------- */

base_status ir_file_read(const char *path, size_t max_bytes, char **out_data, size_t *out_len,
                         char *err, size_t errlen) {
  struct stat sb;
  if (stat(path, &sb) != 0)
    return base_fail(err, errlen, errno == ENOENT ? ST_NOT_FOUND : ST_IO_ERROR, "%s: %s", path,
                strerror(errno));
  if (S_ISDIR(sb.st_mode)) return base_fail(err, errlen, ST_IO_ERROR, "%s: is a directory", path);
  if (!S_ISREG(sb.st_mode) && !S_ISFIFO(sb.st_mode)) /* devices could be endless */
    return base_fail(err, errlen, ST_IO_ERROR, "%s: not a regular file or a pipe", path);
  FILE *f = fopen(path, "rb");
  if (!f) return base_fail(err, errlen, ST_IO_ERROR, "%s: %s", path, strerror(errno));
  /* Regular files: read the size announced; others (pipes): grow. Either
   * way never more than max_bytes. */
  size_t cap = S_ISREG(sb.st_mode) ? (size_t)sb.st_size : 65536;
  if (S_ISREG(sb.st_mode) && (uint64_t)sb.st_size > max_bytes) {
    fclose(f);
    return base_fail(err, errlen, ST_RESOURCE_EXHAUSTED, "%s: file too large (%lld bytes, limit %zu)",
                path, (long long)sb.st_size, max_bytes);
  }
  if (cap > max_bytes) cap = max_bytes;
  char *buf = base_xmalloc(cap + 1);
  size_t len = 0;
  for (;;) {
    if (len == cap) {
      if (cap >= max_bytes) {
        /* a regular file that grew, or a stream: one more byte means too big */
        int c = fgetc(f);
        if (c == EOF) break;
        free(buf);
        fclose(f);
        return base_fail(err, errlen, ST_RESOURCE_EXHAUSTED, "%s: file too large (limit %zu bytes)",
                    path, max_bytes);
      }
      if (S_ISREG(sb.st_mode)) {
        int c = fgetc(f);
        if (c == EOF) break;
        ungetc(c, f);
      }
      cap = cap * 2 + 1 > max_bytes ? max_bytes : cap * 2 + 1;
      buf = base_xrealloc(buf, cap + 1);
    }
    size_t r = fread(buf + len, 1, cap - len, f);
    len += r;
    if (r == 0) break;
  }
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return base_fail(err, errlen, ST_IO_ERROR, "%s: read error", path);
  }
  buf[len] = 0;
  *out_data = buf;
  *out_len = len;
  return ST_OK;
}

/* Writes all of data to fd; false with errno set on failure. */
static bool write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t w = write(fd, p, len > ((size_t)1 << 30) ? (size_t)1 << 30 : len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return false;
    }
    p += w;
    len -= (size_t)w;
  }
  return true;
}

base_status ir_file_write(const char *path, const void *data, size_t len, char *err,
                          size_t errlen) {
  struct stat sb;
  bool exists = stat(path, &sb) == 0;
  if (exists && S_ISDIR(sb.st_mode))
    return base_fail(err, errlen, ST_IO_ERROR, "%s: is a directory", path);
  if (exists && !S_ISREG(sb.st_mode)) { /* a device or pipe (/dev/stdout): written in place */
    int fd = open(path, O_WRONLY | O_TRUNC);
    if (fd < 0) return base_fail(err, errlen, ST_IO_ERROR, "%s: %s", path, strerror(errno));
    bool ok = write_all(fd, data, len);
    int e = errno;
    if (close(fd) != 0 && ok) ok = false, e = errno;
    return ok ? ST_OK : base_fail(err, errlen, ST_IO_ERROR, "%s: %s", path, strerror(e));
  }
  /* A regular file: a temporary beside it, synced, renamed over it only
   * when complete, so that a failed write leaves the old file whole. */
  char *tmp = NULL;
  int fd = -1;
  for (int k = 0; k < 100 && fd < 0; k++) {
    free(tmp);
    size_t n = strlen(path) + 40;
    tmp = base_xmalloc(n);
    snprintf(tmp, n, "%s.tmp-%ld-%d", path, (long)getpid(), k);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    base_status st = base_fail(err, errlen, ST_IO_ERROR, "%s: %s", path, strerror(errno));
    free(tmp);
    return st;
  }
  bool ok = (!exists || fchmod(fd, sb.st_mode & 07777) == 0) && write_all(fd, data, len) &&
            fsync(fd) == 0;
  int e = errno;
  if (close(fd) != 0 && ok) ok = false, e = errno;
  if (ok && rename(tmp, path) != 0) ok = false, e = errno;
  if (!ok) unlink(tmp);
  free(tmp);
  return ok ? ST_OK
            : base_fail(err, errlen, ST_IO_ERROR, "%s: %s (the file is unchanged)", path, strerror(e));
}

base_status ir_file_check_writable(const char *path, char *err, size_t errlen) {
  struct stat sb;
  if (!*path) return base_fail(err, errlen, ST_INVALID_ARGUMENT, "empty file name");
  if (stat(path, &sb) == 0) {
    if (S_ISDIR(sb.st_mode)) return base_fail(err, errlen, ST_IO_ERROR, "%s: is a directory", path);
    if (access(path, W_OK) != 0)
      return base_fail(err, errlen, ST_IO_ERROR, "%s: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode)) return ST_OK; /* a device or pipe: written in place */
  }
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
  if (!dir) return base_fail(err, errlen, ST_OUT_OF_MEMORY, "out of memory");
  base_status st = ST_OK;
  if (stat(dir, &sb) != 0)
    st = base_fail(err, errlen, ST_IO_ERROR, "%s: directory %s: %s", path, dir, strerror(errno));
  else if (!S_ISDIR(sb.st_mode))
    st = base_fail(err, errlen, ST_IO_ERROR, "%s: %s is not a directory", path, dir);
  else if (access(dir, W_OK) != 0)
    st = base_fail(err, errlen, ST_IO_ERROR, "%s: directory %s: %s", path, dir, strerror(errno));
  free(dir);
  return st;
}

/* ---- raw .bin -------------------------------------------------------- */

base_status ir_bin_decode(arena *a, const char *what, const void *data, size_t len,
                          const ir_shape *s, ir_literal **out, char *err, size_t errlen) {
  int64_t n;
  size_t bytes;
  if (s->type == IR_TUPLE || !ir_shape_elements(s, &n) ||
      base_mul_overflow((size_t)n, (size_t)ir_type_size(s->type), &bytes))
    return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: shape too large for a raw tensor", what);
  if (bytes != len) {
    strbuf sp;
    sb_init(&sp);
    ir_tensor_print_spec(&sp, s);
    base_status st =
        base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: raw file has %zu bytes but %s needs %zu", what,
             len, sb_str(&sp), bytes);
    sb_free(&sp);
    return st;
  }
  ir_literal *l = ir_literal_create(a, s);
  if (!l) return base_fail(err, errlen, ST_RESOURCE_EXHAUSTED, "%s: shape too large", what);
  const uint8_t *src = data;
  uint8_t *dst = l->data;
  int size = ir_type_size(s->type);
  /* little endian to host order, portably */
  for (int64_t i = 0; i < n; i++) {
    const uint8_t *p = src + i * size;
    if (size == 1) {
      dst[i] = s->type == IR_PRED ? p[0] != 0 : p[0];
      continue;
    }
    uint64_t v = 0;
    for (int k = size - 1; k >= 0; k--)
      v = v << 8 | p[k];
    if (size == 2)
      ((uint16_t *)l->data)[i] = (uint16_t)v;
    else if (size == 4)
      ((uint32_t *)l->data)[i] = (uint32_t)v;
    else
      ((uint64_t *)l->data)[i] = v;
  }
  *out = l;
  return ST_OK;
}

void ir_bin_encode(strbuf *b, const ir_literal *l) {
  int64_t n = ir_shape_count(&l->shape);
  int size = ir_type_size(l->shape.type);
  for (int64_t i = 0; i < n; i++) {
    uint64_t v = size == 1   ? ((const uint8_t *)l->data)[i]
                 : size == 2 ? ((const uint16_t *)l->data)[i]
                 : size == 4 ? ((const uint32_t *)l->data)[i]
                             : ((const uint64_t *)l->data)[i];
    for (int k = 0; k < size; k++)
      sb_putc(b, (char)(v >> (8 * k) & 0xff));
  }
}

/* ---- files by extension ---------------------------------------------- */

static bool ends_with(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && strcmp(s + n - m, suf) == 0;
}

base_status ir_tensor_read_file(arena *a, const char *path, const ir_shape *shape,
                                ir_named_literal **out, int *out_n, char *err, size_t errlen) {
  char *data;
  size_t len;
  base_status st = ir_file_read(path, IR_TENSOR_MAX_FILE, &data, &len, err, errlen);
  if (st != ST_OK) return st;
  bool npy = ends_with(path, ".npy"), npz = ends_with(path, ".npz"), bin = ends_with(path, ".bin");
  if (!npy && !npz && !bin) { /* sniff */
    npy = len >= 6 && memcmp(data, "\x93NUMPY", 6) == 0;
    npz = len >= 4 && memcmp(data, "PK\3\4", 4) == 0;
    bin = !npy && !npz && shape;
  }
  if (npy) {
    ir_literal *l;
    st = ir_npy_decode(a, path, data, len, &l, err, errlen);
    if (st == ST_OK) {
      ir_named_literal *r = arena_alloc(a, sizeof *r);
      r->name = arena_strdup(a, path);
      r->lit = l;
      *out = r;
      *out_n = 1;
    }
  } else if (npz) {
    st = ir_npz_decode(a, path, data, len, NULL, NULL, out, out_n, err, errlen);
  } else if (bin && shape) {
    ir_literal *l;
    st = ir_bin_decode(a, path, data, len, shape, &l, err, errlen);
    if (st == ST_OK) {
      ir_named_literal *r = arena_alloc(a, sizeof *r);
      r->name = arena_strdup(a, path);
      r->lit = l;
      *out = r;
      *out_n = 1;
    }
  } else if (bin) {
    st = base_fail(err, errlen, ST_INVALID_ARGUMENT,
              "%s: a raw .bin needs an explicit shape and type, e.g. 2x2xbf16=@%s", path, path);
  } else {
    st = base_fail(err, errlen, ST_INVALID_ARGUMENT,
              "%s: not an .npy or .npz file (give SHAPExTYPE=@file for raw data)", path);
  }
  free(data);
  return st;
}

base_status ir_tensor_write_file(const char *path, const ir_literal *l, char *err, size_t errlen) {
  if (l->shape.type == IR_TUPLE)
    return base_fail(err, errlen, ST_UNSUPPORTED, "%s: a tuple cannot be written to one tensor file",
                path);
  strbuf b;
  sb_init(&b);
  base_status st = ST_OK;
  if (ends_with(path, ".npy")) {
    st = ir_npy_encode(&b, l, err, errlen);
  } else if (ends_with(path, ".npz")) {
    ir_named_literal one = {"arr_0", (ir_literal *)l};
    st = ir_npz_encode(&b, &one, 1, err, errlen);
  } else if (ends_with(path, ".bin")) {
    ir_bin_encode(&b, l);
  } else {
    st = base_fail(err, errlen, ST_INVALID_ARGUMENT,
              "%s: unknown tensor file extension (use .npy, .npz or .bin)", path);
  }
  if (st == ST_OK) st = ir_file_write(path, b.s ? b.s : "", b.len, err, errlen);
  sb_free(&b);
  return st;
}

/* ---- shape specs ------------------------------------------------------ */

static ir_type spec_type(const char *s, size_t n) {
  ir_type t = ir_type_from_name(s, n);
  if (t != IR_TYPE_INVALID) return t;
  static const struct {
    const char *alias;
    ir_type t;
  } aliases[] = {{"i1", IR_PRED},   {"i8", IR_S8},     {"si8", IR_S8},   {"i16", IR_S16},
                 {"si16", IR_S16}, {"i32", IR_S32},   {"si32", IR_S32}, {"i64", IR_S64},
                 {"si64", IR_S64}, {"ui8", IR_U8},    {"ui16", IR_U16}, {"ui32", IR_U32},
                 {"ui64", IR_U64}, {"bool", IR_PRED}};
  for (unsigned i = 0; i < COUNTOF(aliases); i++)
    if (strlen(aliases[i].alias) == n && memcmp(aliases[i].alias, s, n) == 0) return aliases[i].t;
  return IR_TYPE_INVALID;
}

static bool parse_dim(const char *s, size_t n, int64_t *out) {
  if (n == 0) return false;
  int64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    if (v > (INT64_MAX - 9) / 10) return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

base_status ir_tensor_parse_spec(const char *text, size_t len, ir_shape *out, char *err,
                                 size_t errlen) {
  while (len && (*text == ' ' || *text == '\t'))
    text++, len--;
  while (len && (text[len - 1] == ' ' || text[len - 1] == '\t'))
    len--;
  int64_t dims[IR_MAX_RANK];
  int rank = 0;
  ir_type t;
  const char *br = memchr(text, '[', len);
  if (br) { /* HLO spelling: f32[2,3] */
    t = spec_type(text, (size_t)(br - text));
    if (t == IR_TYPE_INVALID || text[len - 1] != ']')
      return base_fail(err, errlen, ST_INVALID_ARGUMENT,
                  "bad shape '%.*s' (expected e.g. 2x3xf32 or f32[2,3])", (int)len, text);
    const char *p = br + 1, *end = text + len - 1;
    while (p < end) {
      const char *c = memchr(p, ',', (size_t)(end - p));
      const char *e = c ? c : end;
      if (rank == IR_MAX_RANK)
        return base_fail(err, errlen, ST_INVALID_ARGUMENT, "shape '%.*s' has more than %d dimensions",
                    (int)len, text, IR_MAX_RANK);
      if (!parse_dim(p, (size_t)(e - p), &dims[rank++]))
        return base_fail(err, errlen, ST_INVALID_ARGUMENT, "bad dimension '%.*s' in shape '%.*s'",
                    (int)(e - p), p, (int)len, text);
      p = c ? c + 1 : end;
    }
  } else {
    const char *p = text, *end = text + len;
    for (;;) {
      const char *x = memchr(p, 'x', (size_t)(end - p));
      if (!x) break;
      if (rank == IR_MAX_RANK)
        return base_fail(err, errlen, ST_INVALID_ARGUMENT, "shape '%.*s' has more than %d dimensions",
                    (int)len, text, IR_MAX_RANK);
      if (!parse_dim(p, (size_t)(x - p), &dims[rank++]))
        return base_fail(err, errlen, ST_INVALID_ARGUMENT,
                    "bad dimension '%.*s' in shape '%.*s' (expected e.g. 2x3xf32)", (int)(x - p), p,
                    (int)len, text);
      p = x + 1;
    }
    t = spec_type(p, (size_t)(end - p));
    if (t == IR_TYPE_INVALID)
      return base_fail(err, errlen, ST_INVALID_ARGUMENT,
                  "unknown element type '%.*s' in '%.*s' (known: pred s8 s16 s32 s64 u8 u16 "
                  "u32 u64 bf16 f16 f32 f64, i1 i8 i16 i32 i64 ui8 ui16 ui32 ui64)",
                  (int)(end - p), p, (int)len, text);
  }
  ir_shape s = ir_shape_array(t, rank, dims);
  int64_t n;
  if (!ir_shape_elements(&s, &n))
    return base_fail(err, errlen, ST_INVALID_ARGUMENT, "shape '%.*s' is too large", (int)len, text);
  *out = s;
  return ST_OK;
}

void ir_tensor_print_spec(strbuf *b, const ir_shape *s) {
  if (s->type == IR_TUPLE) {
    sb_putc(b, '(');
    for (int i = 0; i < s->ntuple; i++) {
      if (i) sb_puts(b, ", ");
      ir_tensor_print_spec(b, &s->tuple[i]);
    }
    sb_putc(b, ')');
    return;
  }
  for (int i = 0; i < s->rank; i++)
    sb_printf(b, "%lldx", (long long)s->dims[i]);
  sb_puts(b, ir_type_name(s->type));
}

/* ---- literal values ------------------------------------------------- */

static bool is_sep(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '[' || c == ']';
}

/* Stores one value token into element i of l; false with a reason. */
static bool parse_value(ir_literal *l, int64_t i, const char *tok, size_t n, char *why,
                        size_t whylen) {
  char buf[64];
  if (n >= sizeof buf) {
    snprintf(why, whylen, "value '%.20s...' is too long", tok);
    return false;
  }
  memcpy(buf, tok, n);
  buf[n] = 0;
  ir_type t = l->shape.type;
  if (t == IR_PRED) {
    if (!strcmp(buf, "true") || !strcmp(buf, "True") || !strcmp(buf, "1"))
      ir_literal_set_i64(l, i, 1);
    else if (!strcmp(buf, "false") || !strcmp(buf, "False") || !strcmp(buf, "0"))
      ir_literal_set_i64(l, i, 0);
    else {
      snprintf(why, whylen, "'%s' is not a pred value (0, 1, true, false)", buf);
      return false;
    }
    return true;
  }
  char *end;
  errno = 0;
  if (ir_type_is_int(t)) {
    /* the type's range: [lo, hi] signed, [0, uhi] unsigned */
    int bits = ir_type_size(t) * 8;
    bool uns = ir_type_is_unsigned(t);
    uint64_t uhi = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    int64_t hi = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1, lo = -hi - 1;
    bool bad_range;
    int64_t v;
    if (uns) {
      unsigned long long u = strtoull(buf, &end, 10);
      bad_range = errno == ERANGE || buf[strspn(buf, " ")] == '-' || u > uhi;
      v = (int64_t)u;
    } else {
      long long x = strtoll(buf, &end, 10);
      bad_range = errno == ERANGE || x < lo || x > hi;
      v = x;
    }
    if (end == buf || *end) {
      snprintf(why, whylen, "'%s' is not an integer", buf);
      return false;
    }
    if (bad_range) {
      snprintf(why, whylen, "%s is out of range for %s", buf, ir_type_name(t));
      return false;
    }
    ir_literal_set_i64(l, i, v);
    return true;
  }
  double v = strtod(buf, &end);
  if (end == buf || *end) {
    snprintf(why, whylen, "'%s' is not a number", buf);
    return false;
  }
  /* ERANGE on underflow is fine (the value rounds to zero or a subnormal);
   * overflow gives +-inf as the type would. */
  ir_literal_set_f64(l, i, v);
  return true;
}

static base_status parse_values(arena *a, const ir_shape *s, const char *text, ir_literal **out,
                                char *err, size_t errlen) {
  ir_literal *l = NULL;
  int64_t n = ir_shape_count(s);
  /* Count tokens first, so the literal is allocated only for a valid count. */
  int64_t count = 0;
  for (const char *p = text; *p;) {
    while (*p && is_sep(*p))
      p++;
    if (!*p) break;
    count++;
    while (*p && !is_sep(*p))
      p++;
  }
  if (count != n && !(count == 1 && n > 0))
    return base_fail(err, errlen, ST_INVALID_ARGUMENT, "expected %lld value%s, got %lld", (long long)n,
                n == 1 ? "" : "s", (long long)count);
  if ((uint64_t)n * (uint64_t)ir_type_size(s->type) > IR_TENSOR_MAX_FILE)
    return base_fail(err, errlen, ST_RESOURCE_EXHAUSTED,
                "tensor too large (%lld elements; the limit is %zu bytes)", (long long)n,
                IR_TENSOR_MAX_FILE);
  l = ir_literal_create(a, s);
  if (!l) return base_fail(err, errlen, ST_RESOURCE_EXHAUSTED, "shape too large");
  int64_t i = 0;
  char why[160];
  for (const char *p = text; *p;) {
    while (*p && is_sep(*p))
      p++;
    if (!*p) break;
    const char *b = p;
    while (*p && !is_sep(*p))
      p++;
    if (!parse_value(l, i, b, (size_t)(p - b), why, sizeof why))
      return base_fail(err, errlen, ST_INVALID_ARGUMENT, "value %lld: %s", (long long)i, why);
    i++;
  }
  if (count == 1 && n > 1) { /* splat */
    size_t sz = (size_t)ir_type_size(s->type);
    for (int64_t k = 1; k < n; k++)
      memcpy((char *)l->data + k * sz, l->data, sz);
  }
  *out = l;
  return ST_OK;
}

/* Converts a file's literal to the shape the argument spelled: same dims;
 * same type, or f32 given as bf16/f16 (rounded). */
static base_status fit_to_spec(arena *a, const char *path, ir_literal **l, const ir_shape *s,
                               char *err, size_t errlen) {
  ir_literal *g = *l;
  ir_shape want = *s;
  want.type = g->shape.type;
  if (!ir_shape_equal(&want, &g->shape) ||
      (g->shape.type != s->type &&
       !(g->shape.type == IR_F32 && (s->type == IR_BF16 || s->type == IR_F16)))) {
    strbuf x, y;
    sb_init(&x);
    sb_init(&y);
    ir_tensor_print_spec(&x, s);
    ir_tensor_print_spec(&y, &g->shape);
    base_status st =
        base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s holds %s, not %s", path, sb_str(&y), sb_str(&x));
    sb_free(&x);
    sb_free(&y);
    return st;
  }
  if (g->shape.type != s->type) {
    ir_literal *c = ir_literal_create(a, s);
    int64_t n = ir_shape_count(s);
    for (int64_t i = 0; i < n; i++)
      ir_literal_set_f64(c, i, ir_literal_get_f64(g, i));
    *l = c;
  }
  return ST_OK;
}

/* Reads "@path", "@path.npz:name"; shape (or NULL) as the argument gave. */
static base_status parse_file(arena *a, const char *path, const ir_shape *shape,
                              ir_named_literal **out, int *out_n, char *err, size_t errlen) {
  const char *sel = NULL;
  char *p = arena_strdup(a, path);
  char *z = strstr(p, ".npz:");
  if (z) {
    sel = z + 5;
    z[4] = 0;
  }
  if (!*p) return base_fail(err, errlen, ST_INVALID_ARGUMENT, "empty file name after '@'");
  bool raw = shape && !ends_with(p, ".npy") && !ends_with(p, ".npz");
  ir_named_literal *r;
  int n;
  base_status st;
  bool npy = shape && ends_with(p, ".npy"), npz = sel || ends_with(p, ".npz");
  if (npy || npz) {
    char *data;
    size_t len;
    st = ir_file_read(p, IR_TENSOR_MAX_FILE, &data, &len, err, errlen);
    if (st != ST_OK) return st;
    if (npz) { /* only the entry asked for, checked before it is inflated */
      st = ir_npz_decode(a, p, data, len, sel, shape, &r, &n, err, errlen);
    } else { /* the type given converts */
      r = arena_alloc(a, sizeof *r);
      r->name = p;
      n = 1;
      st = ir_npy_decode_as(a, p, data, len, shape->type, &r->lit, err, errlen);
    }
    free(data);
  } else {
    st = ir_tensor_read_file(a, p, raw ? shape : NULL, &r, &n, err, errlen);
  }
  if (st != ST_OK) return st;
  if (shape && !raw) {
    st = fit_to_spec(a, p, &r[0].lit, shape, err, errlen);
    if (st != ST_OK) return st;
  }
  *out = r;
  *out_n = n;
  return ST_OK;
}

base_status ir_tensor_parse(arena *a, const char *text, ir_named_literal **out, int *out_n,
                            char *err, size_t errlen) {
  while (*text == ' ' || *text == '\t')
    text++;
  if (*text == '@') return parse_file(a, text + 1, NULL, out, out_n, err, errlen);
  const char *eq = strchr(text, '=');
  if (!eq)
    return base_fail(err, errlen, ST_INVALID_ARGUMENT,
                "expected SHAPExTYPE=VALUES (e.g. 2x3xf32=1 2 3 4 5 6), "
                "SHAPExTYPE=@file.bin or @file.npy");
  ir_shape s;
  base_status st = ir_tensor_parse_spec(text, (size_t)(eq - text), &s, err, errlen);
  if (st != ST_OK) return st;
  const char *rhs = eq + 1;
  while (*rhs == ' ' || *rhs == '\t')
    rhs++;
  if (*rhs == '@') return parse_file(a, rhs + 1, &s, out, out_n, err, errlen);
  ir_named_literal *r = arena_alloc(a, sizeof *r);
  r->name = "";
  st = parse_values(a, &s, rhs, &r->lit, err, errlen);
  if (st != ST_OK) return st;
  *out = r;
  *out_n = 1;
  return ST_OK;
}

/* ---- printing -------------------------------------------------------- */

/* Shortest "%.*g" that reads back to the same value in type t. */
static void print_float(strbuf *b, double v, ir_type t) {
  if (isnan(v)) {
    sb_puts(b, signbit(v) ? "-nan" : "nan");
    return;
  }
  if (isinf(v)) {
    sb_puts(b, v < 0 ? "-inf" : "inf");
    return;
  }
  /* Find the fewest significant digits that read back to the same value,
   * then spell them positionally unless the exponent is extreme (as
   * Python's repr does): 10, 0.001, 1e+20, 1e-05. */
  char buf[48];
  int p = 1;
  for (; p <= 17; p++) {
    snprintf(buf, sizeof buf, "%.*e", p - 1, v);
    double r = strtod(buf, NULL);
    bool same;
    if (t == IR_F32)
      same = (float)r == (float)v;
    else if (t == IR_BF16)
      same = ir_f32_to_bf16((float)r) == ir_f32_to_bf16((float)v);
    else if (t == IR_F16)
      same = ir_f32_to_f16((float)r) == ir_f32_to_f16((float)v);
    else
      same = r == v;
    if (same) break;
  }
  const char *e = strchr(buf, 'e');
  int exp = e ? atoi(e + 1) : 0;
  if (exp >= -4 && exp < 16)
    snprintf(buf, sizeof buf, "%.*f", p - 1 - exp > 0 ? p - 1 - exp : 0, v);
  else
    snprintf(buf, sizeof buf, "%.*g", p, v);
  sb_puts(b, buf);
}

void ir_tensor_print_elem(strbuf *b, const ir_literal *l, int64_t idx) {
  ir_type t = l->shape.type;
  if (ir_type_is_float(t))
    print_float(b, ir_literal_get_f64(l, idx), t);
  else if (t == IR_U64)
    sb_printf(b, "%llu", (unsigned long long)(uint64_t)ir_literal_get_i64(l, idx));
  else
    sb_printf(b, "%lld", (long long)ir_literal_get_i64(l, idx));
}

typedef struct printer {
  strbuf *b;
  const ir_literal *l;
  int64_t next, max;
  bool stopped;
} printer;

static void print_dim(printer *p, int d) {
  const ir_shape *s = &p->l->shape;
  if (d == s->rank - 1) {
    for (int64_t i = 0; i < s->dims[d] && !p->stopped; i++) {
      if (p->max && p->next >= p->max) {
        sb_puts(p->b, i ? " ..." : "...");
        p->stopped = true;
        return;
      }
      if (i) sb_putc(p->b, ' ');
      ir_tensor_print_elem(p->b, p->l, p->next++);
    }
    return;
  }
  for (int64_t i = 0; i < s->dims[d] && !p->stopped; i++) {
    sb_putc(p->b, '[');
    print_dim(p, d + 1);
    sb_putc(p->b, ']');
  }
}

void ir_tensor_print(strbuf *b, const ir_literal *l, int64_t max_elems) {
  if (l->shape.type == IR_TUPLE) {
    for (int i = 0; i < l->shape.ntuple; i++) {
      if (i) sb_putc(b, '\n');
      ir_tensor_print(b, l->elems[i], max_elems);
    }
    return;
  }
  ir_tensor_print_spec(b, &l->shape);
  sb_putc(b, '=');
  if (l->shape.rank == 0) {
    ir_tensor_print_elem(b, l, 0);
    return;
  }
  printer p = {b, l, 0, max_elems, false};
  print_dim(&p, 0);
}
