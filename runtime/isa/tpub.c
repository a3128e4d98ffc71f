/* tpub.c: reading, writing and verifying .tpub program files. Format and
 * the verification contract: tpub.h. */
#include "tpub.h"

#include "tpub_ops.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa.h"

static const char *const magic = TPUB_MAGIC;

enum { SEC_TARGET = 1, SEC_SIGNATURE, SEC_CODE, SEC_CONST, SEC_SMEM, SEC_OPS, SEC_END };
enum { HEADER_BYTES = 64, SECTION_BYTES = 24, MAX_SECTIONS = 16 };

static const struct {
  const char *name;
  int size;
} dtypes[TPUB_DTYPE_END] = {
#define X(name, code, spelling, bytes) [code] = {spelling, bytes},
    TPURT_DTYPE_LIST(X)
#undef X
};

int tpub_dtype_size(int d) { return d > 0 && d < TPUB_DTYPE_END ? dtypes[d].size : 0; }
const char *tpub_dtype_name(int d) { return d > 0 && d < TPUB_DTYPE_END ? dtypes[d].name : "?"; }
int tpub_dtype_lookup(const char *name, size_t len) {
  for (int d = 1; d < TPUB_DTYPE_END; d++)
    if (strlen(dtypes[d].name) == len && !memcmp(dtypes[d].name, name, len)) return d;
  return -1;
}

/* CRC-32 (IEEE, reflected), eight bytes per step ("slicing by 8"): t[0]
 * is the byte table, t[k][i] the CRC of byte i followed by k zero bytes.
 * The tables are rebuilt per call (8 KiB, a few microseconds): no shared
 * state, and negligible beside the megabytes a program's sections hold. */
static uint32_t crc_update(uint32_t c, const uint8_t *b, size_t n) {
  static const uint32_t poly = 0xEDB88320u;
  uint32_t t[8][256];
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t x = i;
    for (int k = 0; k < 8; k++)
      x = x & 1 ? poly ^ (x >> 1) : x >> 1;
    t[0][i] = x;
  }
  for (int k = 1; k < 8; k++)
    for (int i = 0; i < 256; i++)
      t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint32_t lo = c ^ ((uint32_t)b[i] | (uint32_t)b[i + 1] << 8 | (uint32_t)b[i + 2] << 16 |
                       (uint32_t)b[i + 3] << 24);
    uint32_t hi = (uint32_t)b[i + 4] | (uint32_t)b[i + 5] << 8 | (uint32_t)b[i + 6] << 16 |
                  (uint32_t)b[i + 7] << 24;
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
        t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
  }
  for (; i < n; i++)
    c = t[0][(c ^ b[i]) & 0xFF] ^ (c >> 8);
  return c;
}

uint32_t tpub_crc32(const void *p, size_t n) { return crc_update(0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu; }

#if defined(__GNUC__)
static void fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#endif
static void fail(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

tpub_image *tpub_new(const rt_allocator *a) {
  tpub_image *img = rt_calloc(a, 1, sizeof *img);
  if (!img) return NULL;
  if (a) img->alloc = *a;
  img->target = rt_alloc(a, 3);
  if (!img->target) {
    rt_free(a, img);
    return NULL;
  }
  memcpy(img->target, "v3", 3);
  return img;
}

void tpub_free(tpub_image *img) {
  if (!img) return;
  rt_allocator a = img->alloc;
  for (uint32_t i = 0; i < img->nconsts && img->consts; i++)
    rt_free(&a, img->consts[i].data);
  rt_free(&a, img->consts);
  rt_free(&a, img->params);
  rt_free(&a, img->results);
  rt_free(&a, img->code);
  rt_free(&a, img->smem);
  rt_free(&a, img->target);
  tpub_clear_ops(img);
  rt_free(&a, img);
}


/* ---- reading ------------------------------------------------------------ */

/* Reads a sized tensor entry at *pos within [0, end); advances *pos. */
static int read_tensor(const uint8_t *b, uint64_t *pos, uint64_t end, tpub_tensor *t, int *role,
                       char *err, size_t errlen, uint32_t idx) {
  uint64_t p = *pos;
  if (end - p < 16) {
    fail(err, errlen, "signature entry %u: truncated", idx);
    return -1;
  }
  *role = b[p];
  t->dtype = b[p + 1];
  t->rank = b[p + 2];
  int nlen = b[p + 3];
  if (*role > 1) {
    fail(err, errlen,
         "signature entry %u: role %d is neither param (0) nor "
         "result (1)",
         idx, *role);
    return -1;
  }
  if (!tpub_dtype_size(t->dtype)) {
    fail(err, errlen, "signature entry %u: unknown dtype %d", idx, t->dtype);
    return -1;
  }
  if (t->rank > TPUB_MAX_RANK) {
    fail(err, errlen, "signature entry %u: rank %d exceeds %d", idx, t->rank, TPUB_MAX_RANK);
    return -1;
  }
  if (nlen < 1 || nlen > TPUB_MAX_NAME) {
    fail(err, errlen, "signature entry %u: name length %d outside 1..%d", idx, nlen, TPUB_MAX_NAME);
    return -1;
  }
  if (rd(b + p + 4, 4)) {
    fail(err, errlen, "signature entry %u: reserved bytes are not zero", idx);
    return -1;
  }
  t->hbm_offset = rd(b + p + 8, 8);
  p += 16;
  uint64_t need = (uint64_t)t->rank * 8 + (uint64_t)nlen;
  if (end - p < pad8(need)) {
    fail(err, errlen, "signature entry %u: truncated", idx);
    return -1;
  }
  uint64_t elems = 1;
  for (int i = 0; i < t->rank; i++) {
    int64_t d = (int64_t)rd(b + p + 8 * (uint64_t)i, 8);
    if (d < 0 || d > (int64_t)1 << 40) {
      fail(err, errlen, "signature entry %u: dimension %d is %lld", idx, i, (long long)d);
      return -1;
    }
    t->dims[i] = d;
    if (d && elems > ((uint64_t)1 << 42) / (uint64_t)d) {
      fail(err, errlen, "signature entry %u: too many elements", idx);
      return -1;
    }
    elems *= (uint64_t)d;
  }
  t->bytes = elems * (uint64_t)tpub_dtype_size(t->dtype);
  p += (uint64_t)t->rank * 8;
  for (int i = 0; i < nlen; i++) {
    uint8_t c = b[p + (uint64_t)i];
    if (c < 0x21 || c > 0x7e) {
      fail(err, errlen,
           "signature entry %u: name has a non-printable or "
           "space byte",
           idx);
      return -1;
    }
    t->name[i] = (char)c;
  }
  t->name[nlen] = 0;
  p += (uint64_t)nlen;
  for (; p % 8; p++)
    if (b[p]) {
      fail(err, errlen, "signature entry %u: padding is not zero", idx);
      return -1;
    }
  *pos = p;
  return 0;
}

#define OOM()                                                                                      \
  do {                                                                                             \
    rc = -2;                                                                                       \
    fail(err, errlen, "out of memory");                                                            \
    goto out;                                                                                      \
  } while (0)
#define BAD(...)                                                                                   \
  do {                                                                                             \
    fail(err, errlen, __VA_ARGS__);                                                                \
    rc = -1;                                                                                       \
    goto out;                                                                                      \
  } while (0)

/* The fixed header of a .tpub of size bytes at b: magic, versions, size,
 * checksum, flags, reserved bytes; *nsec gets the section count. */
static int check_header(const uint8_t *b, size_t size, uint32_t *nsec, char *err, size_t errlen) {
  int rc = 0;
  if (!b || size < HEADER_BYTES) BAD("file is too short for a .tpub header (%zu bytes)", size);
  if (memcmp(b, magic, 8)) BAD("not a .tpub file (bad magic)");
  uint32_t fmt = (uint32_t)rd(b + 8, 2), isav = (uint32_t)rd(b + 10, 2);
  if (fmt != TPUB_FORMAT_VERSION)
    BAD("unsupported .tpub format version %u (this runtime reads %d)", fmt, TPUB_FORMAT_VERSION);
  if (isav != ISA_VERSION)
    BAD("program uses ISA version %u, this runtime implements %d", isav, ISA_VERSION);
  *nsec = (uint32_t)rd(b + 12, 4);
  uint64_t fsize = rd(b + 16, 8);
  if (fsize != size)
    BAD("file size field says %llu bytes, the file has %zu (truncated or "
        "padded)",
        (unsigned long long)fsize, size);
  static const uint8_t zero[4] = {0, 0, 0, 0};
  uint32_t want = (uint32_t)rd(b + 24, 4);
  uint32_t c = crc_update(0xFFFFFFFFu, b, 24);
  c = crc_update(c, zero, 4);
  c = crc_update(c, b + 28, size - 28) ^ 0xFFFFFFFFu;
  if (c != want)
    BAD("checksum mismatch (stored %08x, computed %08x): the file is "
        "corrupt",
        want, c);
  if (rd(b + 28, 4)) BAD("unknown header flags %08llx", (unsigned long long)rd(b + 28, 4));
  for (int i = 40; i < 64; i++)
    if (b[i]) BAD("reserved header byte %d is not zero", i);
  if (*nsec < 1 || *nsec > MAX_SECTIONS) BAD("section count %u outside 1..%d", *nsec, MAX_SECTIONS);
  if ((uint64_t)HEADER_BYTES + (uint64_t)*nsec * SECTION_BYTES > size)
    BAD("section table runs past the end of the file");
out:
  return rc;
}

/* One section's payload p[0..len) of count items into img (the section
 * readers below): 0, -1 (malformed, err says why) or -2 (out of memory). */
static int read_target(tpub_image *img, const rt_allocator *a, const uint8_t *p, uint64_t len,
                       uint32_t count, char *err, size_t errlen) {
  int rc = 0;
  if (count) BAD("target section: item count must be 0");
  if (len == 0 || len > 1024)
    BAD("target section: length %llu outside 1..1024", (unsigned long long)len);
  for (uint64_t i = 0; i < len; i++)
    if (p[i] < 0x21 || p[i] > 0x7e) BAD("target section: non-printable byte");
  rt_free(a, img->target);
  img->target = rt_alloc(a, len + 1);
  if (!img->target) OOM();
  memcpy(img->target, p, len);
  img->target[len] = 0;
out:
  return rc;
}

static int read_signature(tpub_image *img, const rt_allocator *a, const uint8_t *p, uint64_t len,
                          uint32_t count, char *err, size_t errlen) {
  int rc = 0;
  tpub_tensor *tmp = NULL;
  int *roles = NULL;
  if (count > TPUB_MAX_TENSORS) BAD("signature: %u entries exceed %d", count, TPUB_MAX_TENSORS);
  tmp = rt_calloc(a, count ? count : 1, sizeof *tmp);
  roles = rt_calloc(a, count ? count : 1, sizeof *roles);
  if (!tmp || !roles) OOM();
  uint64_t pos = 0;
  uint32_t np = 0, nr = 0;
  for (uint32_t i = 0; i < count; i++) {
    if (read_tensor(p, &pos, len, &tmp[i], &roles[i], err, errlen, i)) {
      rc = -1;
      goto out;
    }
    if (roles[i])
      nr++;
    else
      np++;
  }
  if (pos != len) BAD("signature: %llu trailing bytes", (unsigned long long)(len - pos));
  img->params = rt_calloc(a, np ? np : 1, sizeof(tpub_tensor));
  img->results = rt_calloc(a, nr ? nr : 1, sizeof(tpub_tensor));
  if (!img->params || !img->results) OOM();
  for (uint32_t i = 0; i < count; i++) {
    if (roles[i])
      img->results[img->nresults++] = tmp[i];
    else
      img->params[img->nparams++] = tmp[i];
  }
out:
  rt_free(a, tmp);
  rt_free(a, roles);
  return rc;
}

static int read_code(tpub_image *img, const rt_allocator *a, const uint8_t *p, uint64_t len,
                     uint32_t count, char *err, size_t errlen) {
  int rc = 0;
  if (count < 1 || count > TPUB_MAX_CODE)
    BAD("code: %u instructions outside 1..%u", count, TPUB_MAX_CODE);
  if (len != (uint64_t)count * 8)
    BAD("code: section size %llu is not 8 x %u", (unsigned long long)len, count);
  img->code = rt_alloc(a, (size_t)count * 8);
  if (!img->code) OOM();
  for (uint32_t i = 0; i < count; i++)
    img->code[i] = rd(p + 8 * (uint64_t)i, 8);
  img->ncode = count;
out:
  return rc;
}

static int read_consts(tpub_image *img, const rt_allocator *a, const uint8_t *p, uint64_t len,
                       uint32_t count, char *err, size_t errlen) {
  int rc = 0;
  if (count > 65536) BAD("constants: %u entries exceed 65536", count);
  img->consts = rt_calloc(a, count ? count : 1, sizeof(tpub_const));
  if (!img->consts) OOM();
  uint64_t pos = 0;
  for (uint32_t i = 0; i < count; i++) {
    if (len - pos < 16) BAD("constant %u: truncated", i);
    uint64_t hoff = rd(p + pos, 8), csz = rd(p + pos + 8, 8);
    pos += 16;
    if (csz > len - pos || pad8(csz) > len - pos)
      BAD("constant %u: %llu bytes run past the section", i, (unsigned long long)csz);
    tpub_const *c = &img->consts[img->nconsts];
    c->hbm_offset = hoff;
    c->size = csz;
    c->data = rt_alloc(a, (size_t)csz);
    if (!c->data) OOM();
    img->nconsts++;
    memcpy(c->data, p + pos, (size_t)csz);
    pos += csz;
    for (; pos % 8; pos++)
      if (p[pos]) BAD("constant %u: padding is not zero", i);
  }
  if (pos != len) BAD("constants: %llu trailing bytes", (unsigned long long)(len - pos));
out:
  return rc;
}

static int read_smem(tpub_image *img, const rt_allocator *a, const uint8_t *p, uint64_t len,
                     uint32_t count, char *err, size_t errlen) {
  int rc = 0;
  if (count > (1u << 18)) BAD("smem: %u words exceed %u", count, 1u << 18);
  if (len != (uint64_t)count * 4)
    BAD("smem: section size %llu is not 4 x %u", (unsigned long long)len, count);
  img->smem = rt_alloc(a, (size_t)count * 4);
  if (!img->smem) OOM();
  for (uint32_t i = 0; i < count; i++)
    img->smem[i] = (uint32_t)rd(p + 4 * (uint64_t)i, 4);
  img->nsmem = count;
out:
  return rc;
}

int tpub_read(const void *bytes, size_t size, const rt_allocator *a, tpub_image **out, char *err,
              size_t errlen) {
  const uint8_t *b = bytes;
  tpub_image *img = NULL;
  uint32_t *op_runs = NULL, op_nruns = 0; /* OPS section, checked after CODE */
  uint32_t nsec = 0;
  *out = NULL;
  int rc = check_header(b, size, &nsec, err, errlen);
  if (rc) goto out;
  img = tpub_new(a);
  if (!img) OOM();
  img->hbm_bytes = rd(b + 32, 8);

  uint64_t prev_end = HEADER_BYTES + (uint64_t)nsec * SECTION_BYTES;
  int seen[SEC_END] = {0};
  for (uint32_t s = 0; s < nsec && !rc; s++) {
    const uint8_t *e = b + HEADER_BYTES + (uint64_t)s * SECTION_BYTES;
    uint32_t kind = (uint32_t)rd(e, 4), count = (uint32_t)rd(e + 4, 4);
    uint64_t off = rd(e + 8, 8), len = rd(e + 16, 8);
    if (kind < SEC_TARGET || kind >= SEC_END) BAD("section %u: unknown kind %u", s, kind);
    if (seen[kind]++) BAD("section %u: kind %u appears twice", s, kind);
    if (off % 8) BAD("section %u: offset %llu is not 8-aligned", s, (unsigned long long)off);
    if (off < prev_end) BAD("section %u: overlaps the table or the previous section", s);
    if (off > size || len > size - off) BAD("section %u: runs past the end of the file", s);
    prev_end = off + len;
    const uint8_t *p = b + off;
    switch (kind) {
    case SEC_TARGET: rc = read_target(img, a, p, len, count, err, errlen); break;
    case SEC_SIGNATURE: rc = read_signature(img, a, p, len, count, err, errlen); break;
    case SEC_CODE: rc = read_code(img, a, p, len, count, err, errlen); break;
    case SEC_CONST: rc = read_consts(img, a, p, len, count, err, errlen); break;
    case SEC_SMEM: rc = read_smem(img, a, p, len, count, err, errlen); break;
    case SEC_OPS:
      rc = tpub_ops_parse(img, p, len, count, &op_runs, &op_nruns, err, errlen);
      if (rc == -2) fail(err, errlen, "out of memory");
      else if (rc) rc = -1;
      break;
    }
  }
  if (rc) goto out;
  if (!seen[SEC_TARGET]) BAD("missing target section");
  if (!seen[SEC_SIGNATURE]) BAD("missing signature section");
  if (!seen[SEC_CODE]) BAD("missing code section");
  if (op_runs) {
    rc = tpub_ops_expand(img, op_runs, op_nruns, err, errlen);
    if (rc == -2) fail(err, errlen, "out of memory");
    else if (rc) rc = -1;
    if (rc) goto out;
  }
out:
  rt_free(a, op_runs);
  if (rc) {
    tpub_free(img);
    return rc;
  }
  *out = img;
  return 0;
}

/* ---- writing ------------------------------------------------------------ */

int tpub_write(const tpub_image *img, const rt_allocator *a, uint8_t **out, size_t *out_size,
               char *err, size_t errlen) {
  *out = NULL;
  *out_size = 0;
  size_t tlen = strlen(img->target);
  if (tlen == 0 || tlen > 1024) {
    fail(err, errlen, "target spec length %zu outside 1..1024", tlen);
    return -1;
  }
  int nsec = 3 + (img->nconsts > 0) + (img->nsmem > 0) + (img->nops > 0);
  uint64_t sig = 0;
  for (uint32_t i = 0; i < img->nparams + img->nresults; i++) {
    const tpub_tensor *t = i < img->nparams ? &img->params[i] : &img->results[i - img->nparams];
    size_t nl = strlen(t->name);
    if (nl < 1 || nl > TPUB_MAX_NAME || t->rank < 0 || t->rank > TPUB_MAX_RANK) {
      fail(err, errlen, "tensor %u: bad name or rank", i);
      return -1;
    }
    sig += 16 + pad8((uint64_t)t->rank * 8 + nl);
  }
  uint64_t cst = 0;
  for (uint32_t i = 0; i < img->nconsts; i++)
    cst += 16 + pad8(img->consts[i].size);
  uint64_t off[SEC_END] = {0}, len[SEC_END] = {0};
  uint64_t pos = HEADER_BYTES + (uint64_t)nsec * SECTION_BYTES;
  len[SEC_TARGET] = tlen;
  len[SEC_SIGNATURE] = sig;
  len[SEC_CODE] = (uint64_t)img->ncode * 8;
  len[SEC_CONST] = cst;
  len[SEC_SMEM] = (uint64_t)img->nsmem * 4;
  len[SEC_OPS] = tpub_ops_bytes(img);
  for (int k = SEC_TARGET; k < SEC_END; k++) {
    if ((k == SEC_CONST && !img->nconsts) || (k == SEC_SMEM && !img->nsmem) ||
        (k == SEC_OPS && !img->nops))
      continue;
    off[k] = pos;
    pos = pad8(pos + len[k]);
  }
  if (pos > SIZE_MAX) {
    fail(err, errlen, "program too large");
    return -1;
  }
  uint8_t *b = rt_calloc(a, 1, (size_t)pos);
  if (!b) {
    fail(err, errlen, "out of memory");
    return -2;
  }
  memcpy(b, magic, 8);
  wr(b + 8, TPUB_FORMAT_VERSION, 2);
  wr(b + 10, ISA_VERSION, 2);
  wr(b + 12, (uint64_t)nsec, 4);
  wr(b + 16, pos, 8);
  wr(b + 32, img->hbm_bytes, 8);
  int s = 0;
  for (int k = SEC_TARGET; k < SEC_END; k++) {
    if ((k == SEC_CONST && !img->nconsts) || (k == SEC_SMEM && !img->nsmem) ||
        (k == SEC_OPS && !img->nops))
      continue;
    uint8_t *e = b + HEADER_BYTES + SECTION_BYTES * s++;
    uint32_t count = k == SEC_SIGNATURE ? img->nparams + img->nresults
                     : k == SEC_CODE    ? img->ncode
                     : k == SEC_CONST   ? img->nconsts
                     : k == SEC_SMEM    ? img->nsmem
                     : k == SEC_OPS     ? img->nops
                                        : 0;
    wr(e, (uint64_t)k, 4);
    wr(e + 4, count, 4);
    wr(e + 8, off[k], 8);
    wr(e + 16, len[k], 8);
  }
  memcpy(b + off[SEC_TARGET], img->target, tlen);
  uint8_t *p = b + off[SEC_SIGNATURE];
  for (uint32_t i = 0; i < img->nparams + img->nresults; i++) {
    const tpub_tensor *t = i < img->nparams ? &img->params[i] : &img->results[i - img->nparams];
    size_t nl = strlen(t->name);
    p[0] = i < img->nparams ? 0 : 1;
    p[1] = (uint8_t)t->dtype;
    p[2] = (uint8_t)t->rank;
    p[3] = (uint8_t)nl;
    wr(p + 8, t->hbm_offset, 8);
    p += 16;
    for (int d = 0; d < t->rank; d++, p += 8)
      wr(p, (uint64_t)t->dims[d], 8);
    memcpy(p, t->name, nl);
    p += pad8((uint64_t)t->rank * 8 + nl) - (uint64_t)t->rank * 8;
  }
  p = b + off[SEC_CODE];
  for (uint32_t i = 0; i < img->ncode; i++)
    wr(p + 8 * (uint64_t)i, img->code[i], 8);
  if (img->nconsts) {
    p = b + off[SEC_CONST];
    for (uint32_t i = 0; i < img->nconsts; i++) {
      wr(p, img->consts[i].hbm_offset, 8);
      wr(p + 8, img->consts[i].size, 8);
      if (img->consts[i].size) memcpy(p + 16, img->consts[i].data, (size_t)img->consts[i].size);
      p += 16 + pad8(img->consts[i].size);
    }
  }
  if (img->nsmem) {
    p = b + off[SEC_SMEM];
    for (uint32_t i = 0; i < img->nsmem; i++)
      wr(p + 4 * (uint64_t)i, img->smem[i], 4);
  }
  if (img->nops) tpub_ops_store(img, b + off[SEC_OPS]);
  wr(b + 24, tpub_crc32(b, (size_t)pos), 4);
  *out = b;
  *out_size = (size_t)pos;
  return 0;
}

/* ---- verification ------------------------------------------------------- */

typedef struct range {
  uint64_t lo, hi;
  const char *what;
  uint32_t idx;
} range;

static int range_cmp(const void *x, const void *y) {
  const range *a = x, *b = y;
  if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
  return a->hi < b->hi ? -1 : a->hi > b->hi;
}

int tpub_verify(const tpub_image *img, const tgt_target *t, char *err, size_t errlen) {
  char why[200];
  if (img->hbm_bytes > t->hbm_bytes) {
    fail(err, errlen, "program needs %llu bytes of HBM, the target has %llu",
         (unsigned long long)img->hbm_bytes, (unsigned long long)t->hbm_bytes);
    return -1;
  }
  if ((uint64_t)img->nsmem * 4 > t->smem_bytes) {
    fail(err, errlen, "SMEM image of %u words exceeds SMEM (%llu bytes)", img->nsmem,
         (unsigned long long)t->smem_bytes);
    return -1;
  }
  if (img->ncode < 1) {
    fail(err, errlen, "program has no code");
    return -1;
  }
  isa_checker ck;
  isa_checker_init(&ck, t, img->ncode);
  /* Words the table rejects go through isa_decode and isa_check, for the
   * reason (they reject the same words). */
  for (uint32_t pc = 0; (pc += isa_check_words(&ck, img->code + pc, img->ncode - pc)) < img->ncode;
       pc++) {
    isa_inst in;
    if (isa_decode(img->code[pc], &in, why, sizeof why) ||
        isa_check(&in, t, img->ncode, why, sizeof why)) {
      fail(err, errlen, "code word %u (0x%016llx): %s", pc, (unsigned long long)img->code[pc], why);
      return -1;
    }
  }
  int last = (int)(img->code[img->ncode - 1] >> 56);
  if (last != OP_HALT && last != OP_JMP) {
    fail(err, errlen,
         "the last instruction (%u) must be halt or jmp, so "
         "that execution cannot run past the code",
         img->ncode - 1);
    return -1;
  }
  if (img->nops) {
    for (uint32_t pc = 0; pc < img->ncode; pc++)
      if (!img->op_of_pc || img->op_of_pc[pc] >= img->nops) {
        fail(err, errlen, "code word %u: op index out of range (%u ops)", pc, img->nops);
        return -1;
      }
  }
  /* Every tensor and constant inside HBM, none overlapping another. */
  size_t n = (size_t)img->nparams + img->nresults + img->nconsts;
  range *rs = rt_calloc(&img->alloc, n ? n : 1, sizeof *rs);
  if (!rs) {
    fail(err, errlen, "out of memory");
    return -2;
  }
  for (size_t i = 0; i < n; i++) {
    range *r = &rs[i];
    if (i < img->nparams) {
      *r = (range){img->params[i].hbm_offset, img->params[i].bytes, "parameter", (uint32_t)i};
    } else if (i < (size_t)img->nparams + img->nresults) {
      const tpub_tensor *x = &img->results[i - img->nparams];
      *r = (range){x->hbm_offset, x->bytes, "result", (uint32_t)(i - img->nparams)};
    } else {
      const tpub_const *c = &img->consts[i - img->nparams - img->nresults];
      *r =
          (range){c->hbm_offset, c->size, "constant", (uint32_t)(i - img->nparams - img->nresults)};
    }
    /* hi holds the size until here; lo + size may not wrap. */
    if (r->lo > img->hbm_bytes || r->hi > img->hbm_bytes - r->lo) {
      fail(err, errlen, "%s %u lies outside the program's HBM [0, %llu)", r->what, r->idx,
           (unsigned long long)img->hbm_bytes);
      rt_free(&img->alloc, rs);
      return -1;
    }
    r->hi += r->lo;
  }
  qsort(rs, n, sizeof *rs, range_cmp);
  for (size_t i = 1; i < n; i++)
    if (rs[i].lo < rs[i - 1].hi && rs[i].hi > rs[i].lo && rs[i - 1].hi > rs[i - 1].lo) {
      fail(err, errlen, "%s %u overlaps %s %u in HBM", rs[i].what, rs[i].idx, rs[i - 1].what,
           rs[i - 1].idx);
      rt_free(&img->alloc, rs);
      return -1;
    }
  rt_free(&img->alloc, rs);
  return 0;
}
