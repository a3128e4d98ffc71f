/* npz.c: numpy's .npz archives: a zip file whose entries are .npy files.
 *
 * Zip records used (PKWARE APPNOTE 6.3, all fields little endian):
 *
 *   local header   "PK\3\4" ver:2 flags:2 method:2 time:2 date:2 crc:4
 *                  csize:4 usize:4 namelen:2 extralen:2 name extra DATA
 *   central entry  "PK\1\2" made:2 ver:2 flags:2 method:2 time:2 date:2
 *                  crc:4 csize:4 usize:4 namelen:2 extralen:2 commentlen:2
 *                  disk:2 iattr:2 eattr:4 local_offset:4 name extra comment
 *   end record     "PK\5\6" disk:2 cddisk:2 n_here:2 n_total:2 cdsize:4
 *                  cdoffset:4 commentlen:2 comment
 *   zip64 locator  "PK\6\7" disk:4 eocd64_offset:8 ndisks:4   (just before
 *                  the end record)
 *   zip64 end      "PK\6\6" size:8 made:2 ver:2 disk:4 cddisk:4 n_here:8
 *                  n_total:8 cdsize:8 cdoffset:8
 *   zip64 extra    id 0x0001: usize:8 csize:8 local_offset:8 (each present
 *                  only when the 32-bit field is 0xffffffff)
 *
 * Sizes come from the central directory (numpy's writer sets the local
 * header's sizes to 0xffffffff with force_zip64). Methods: 0 stored and,
 * with zlib, 8 deflate. Every offset and size is checked against the
 * archive length; the uncompressed size of a deflated entry is bounded by
 * deflate's maximum ratio before anything is allocated. */
#include "ir/ir.h"

#include <stdlib.h>
#ifdef HAVE_ZLIB
#include <zlib.h>
#endif

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const uint8_t *p) { return rd16(p) | rd16(p + 2) << 16; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static void wr16(strbuf *b, uint32_t v) {
  sb_putc(b, (char)(v & 0xff));
  sb_putc(b, (char)(v >> 8 & 0xff));
}
static void wr32(strbuf *b, uint32_t v) {
  wr16(b, v & 0xffff);
  wr16(b, v >> 16);
}

/* CRC-32 (IEEE 802.3, reflected, as zip uses). The table is built per call
 * on the stack: 256 steps, no global state. */
static uint32_t crc32_of(const uint8_t *p, size_t n) {
  uint32_t tab[256];
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    tab[i] = c;
  }
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++)
    c = tab[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

enum { EOCD_SIZE = 22, CDIR_SIZE = 46, LOCAL_SIZE = 30 };

/* Finds the end record; returns false when absent. */
static bool find_eocd(const uint8_t *d, size_t len, size_t *at) {
  if (len < EOCD_SIZE) return false;
  size_t lo = len - EOCD_SIZE > 65535 ? len - EOCD_SIZE - 65535 : 0;
  for (size_t i = len - EOCD_SIZE + 1; i-- > lo;) {
    if (rd32(d + i) == 0x06054b50 && i + EOCD_SIZE + rd16(d + i + 20) == len) {
      *at = i;
      return true;
    }
  }
  return false;
}

#ifdef HAVE_ZLIB
/* Inflates the raw deflate stream src[0, n) into dst[0, un). With whole,
 * the stream must end exactly there; else inflating stops after un bytes
 * or at the stream's end (a prefix). *out_n: the bytes produced. */
static bool inflate_raw(const uint8_t *src, size_t n, uint8_t *dst, size_t un, bool whole,
                        size_t *out_n) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, -15) != Z_OK) return false;
  zs.next_in = (Bytef *)src;
  zs.next_out = dst;
  int r = Z_OK;
  size_t in_left = n, out_left = un;
  while (r == Z_OK) {
    if (zs.avail_in == 0 && in_left) {
      zs.avail_in = in_left > 0x40000000 ? 0x40000000 : (uInt)in_left;
      in_left -= zs.avail_in;
    }
    if (zs.avail_out == 0 && out_left) {
      zs.avail_out = out_left > 0x40000000 ? 0x40000000 : (uInt)out_left;
      out_left -= zs.avail_out;
    }
    if (!whole && zs.avail_out == 0 && out_left == 0) break; /* the prefix is full */
    r = inflate(&zs, Z_NO_FLUSH);
    /* Z_BUF_ERROR only means "no progress": fine when a refill is due. */
    if (r == Z_BUF_ERROR && ((zs.avail_in == 0 && in_left) || (zs.avail_out == 0 && out_left)))
      r = Z_OK;
  }
  bool ok = whole ? r == Z_STREAM_END && zs.total_out == un && zs.avail_out == 0 && out_left == 0
                  : zs.total_out == un || r == Z_STREAM_END;
  *out_n = zs.total_out;
  inflateEnd(&zs);
  return ok;
}
#endif

/* One central-directory entry, checked against the archive. */
typedef struct entry {
  char *name; /* without ".npy" */
  uint32_t method, crc;
  uint64_t csize, usize, loff, doff; /* local header at loff, data at doff */
} entry;

static int by_offset(const void *a, const void *b) {
  const entry *x = *(entry *const *)a, *y = *(entry *const *)b;
  return x->loff < y->loff ? -1 : x->loff > y->loff;
}

/* Reads the central directory into ents[0, *n): every entry's records,
 * sizes and offsets checked against the archive, no two entries sharing
 * bytes or a name, each inflating to at most IR_TENSOR_MAX_FILE bytes,
 * before anything is inflated. */
static base_status read_directory(arena *a, const char *what, const uint8_t *d, size_t len,
                                  entry **out, uint64_t *out_n, char *err, size_t errlen) {
  size_t eocd;
  if (len >= 4 && rd32(d) != 0x04034b50 && rd32(d) != 0x06054b50)
    return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: not an .npz (zip) file (bad magic)", what);
  if (!find_eocd(d, len, &eocd))
    return base_fail(err, errlen, ST_INVALID_ARGUMENT,
                "%s: not a complete .npz (zip) file: no end-of-central-directory record", what);
  uint64_t nent = rd16(d + eocd + 10), cdsize = rd32(d + eocd + 12), cdoff = rd32(d + eocd + 16);
  if (rd16(d + eocd + 4) != 0 || rd16(d + eocd + 6) != 0)
    return base_fail(err, errlen, ST_UNSUPPORTED, "%s: multi-disk zip archives are not supported", what);
  if (nent == 0xffff || cdsize == 0xffffffffu || cdoff == 0xffffffffu) {
    if (eocd < 20 || rd32(d + eocd - 20) != 0x07064b50)
      return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: zip64 locator missing", what);
    uint64_t z = rd64(d + eocd - 20 + 8);
    if (z > len || len - z < 56 || rd32(d + z) != 0x06064b50)
      return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: bad zip64 end record", what);
    nent = rd64(d + z + 32);
    cdsize = rd64(d + z + 40);
    cdoff = rd64(d + z + 48);
  }
  if (cdoff > len || cdsize > len - cdoff)
    return base_fail(err, errlen, ST_INVALID_ARGUMENT,
                "%s: central directory (offset %llu, %llu bytes) lies outside the file (%zu "
                "bytes)",
                what, (unsigned long long)cdoff, (unsigned long long)cdsize, len);
  if (nent > cdsize / CDIR_SIZE)
    return base_fail(err, errlen, ST_INVALID_ARGUMENT,
                "%s: %llu entries cannot fit a %llu-byte central directory", what,
                (unsigned long long)nent, (unsigned long long)cdsize);
  entry *ents = arena_array(a, nent ? (size_t)nent : 1, sizeof *ents);
  entry **order = arena_array(a, nent ? (size_t)nent : 1, sizeof *order);
  const uint8_t *cd = d + cdoff, *cdend = cd + cdsize;
  for (uint64_t e = 0; e < nent; e++) {
    entry *en = &ents[e];
    order[e] = en;
    if (cdend - cd < CDIR_SIZE || rd32(cd) != 0x02014b50)
      return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: central directory entry %llu is corrupt",
                  what, (unsigned long long)e);
    uint32_t flags = rd16(cd + 8);
    en->method = rd16(cd + 10);
    en->crc = rd32(cd + 16);
    en->csize = rd32(cd + 20);
    en->usize = rd32(cd + 24);
    en->loff = rd32(cd + 42);
    size_t nl = rd16(cd + 28), xl = rd16(cd + 30), cl = rd16(cd + 32);
    if ((size_t)(cdend - cd) - CDIR_SIZE < nl + xl + cl)
      return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: central directory entry %llu is corrupt",
                  what, (unsigned long long)e);
    const char *name = (const char *)cd + CDIR_SIZE;
    /* zip64 extra field */
    const uint8_t *x = cd + CDIR_SIZE + nl, *xend = x + xl;
    while (xend - x >= 4) {
      uint32_t id = rd16(x), sz = rd16(x + 2);
      if ((size_t)(xend - x - 4) < sz) break;
      if (id == 1) {
        const uint8_t *f = x + 4, *fend = f + sz;
        if (en->usize == 0xffffffffu && fend - f >= 8) en->usize = rd64(f), f += 8;
        if (en->csize == 0xffffffffu && fend - f >= 8) en->csize = rd64(f), f += 8;
        if (en->loff == 0xffffffffu && fend - f >= 8) en->loff = rd64(f), f += 8;
      }
      x += 4 + sz;
    }
    cd += CDIR_SIZE + nl + xl + cl;
    char *ename = arena_strndup(a, name, nl);
    if (memchr(name, 0, nl))
      return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: entry %llu has a NUL in its name", what,
                  (unsigned long long)e);
    if (flags & 1)
      return base_fail(err, errlen, ST_UNSUPPORTED, "%s: entry '%s' is encrypted", what, ename);
    if (nl < 4 || memcmp(name + nl - 4, ".npy", 4) != 0)
      return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: entry '%s' is not an .npy file", what,
                  ename);
    if (en->loff > len || len - en->loff < LOCAL_SIZE || rd32(d + en->loff) != 0x04034b50)
      return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: entry '%s': bad local header offset", what,
                  ename);
    en->doff = en->loff + LOCAL_SIZE + rd16(d + en->loff + 26) + rd16(d + en->loff + 28);
    if (en->doff > len || en->csize > len - en->doff)
      return base_fail(err, errlen, ST_INVALID_ARGUMENT,
                  "%s: entry '%s': data (%llu bytes at %llu) lies outside the file (%zu bytes)",
                  what, ename, (unsigned long long)en->csize, (unsigned long long)en->doff, len);
    if (en->usize > IR_TENSOR_MAX_FILE)
      return base_fail(err, errlen, ST_RESOURCE_EXHAUSTED,
                  "%s: entry '%s' holds %llu bytes, over the limit of %zu for one array", what,
                  ename, (unsigned long long)en->usize, IR_TENSOR_MAX_FILE);
    if (en->method == 0 && en->usize != en->csize)
      return base_fail(err, errlen, ST_INVALID_ARGUMENT,
                  "%s: entry '%s': stored entry with differing sizes", what, ename);
    /* deflate never expands more than ~1032:1 */
    if (en->method == 8 && en->usize / 1032 > en->csize + 1)
      return base_fail(err, errlen, ST_INVALID_ARGUMENT,
                  "%s: entry '%s': declared size %llu is impossible for %llu compressed bytes",
                  what, ename, (unsigned long long)en->usize, (unsigned long long)en->csize);
    if (en->method != 0 && en->method != 8)
      return base_fail(err, errlen, ST_UNSUPPORTED,
                  "%s: entry '%s' uses zip compression method %u (only stored and deflate)", what,
                  ename, en->method);
    ename[nl - 4] = 0;
    en->name = ename;
  }
  /* Entries own disjoint byte ranges [local header, end of data): a zip
   * whose records share data would inflate the same bytes many times. */
  qsort(order, (size_t)nent, sizeof *order, by_offset);
  for (uint64_t e = 1; e < nent; e++)
    if (order[e]->loff < order[e - 1]->doff + order[e - 1]->csize)
      return base_fail(err, errlen, ST_INVALID_ARGUMENT,
                  "%s: entries '%s' and '%s' overlap (at byte %llu): not an archive numpy writes",
                  what, order[e - 1]->name, order[e]->name, (unsigned long long)order[e]->loff);
  strmap *names = strmap_create(a);
  for (uint64_t e = 0; e < nent; e++) {
    size_t nl = strlen(ents[e].name);
    if (strmap_get(names, ents[e].name, nl) >= 0)
      return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: two entries are named '%s.npy'", what,
                  ents[e].name);
    strmap_put(names, ents[e].name, nl, 0);
  }
  *out = ents;
  *out_n = nent;
  return ST_OK;
}

/* Checks entry en's .npy header (inflating only its first bytes) against
 * the entry's size and, when given, the expected dims, before the entry is
 * inflated whole. */
static base_status check_header(arena *a, const char *what, const uint8_t *d, const entry *en,
                                const ir_shape *expect, char *err, size_t errlen) {
  enum { PEEK = 1 << 16 };
  uint8_t head[PEEK];
  const uint8_t *h = d + en->doff;
  size_t hn = en->usize < PEEK ? (size_t)en->usize : PEEK;
  if (en->method == 8) {
#ifdef HAVE_ZLIB
    if (!inflate_raw(d + en->doff, (size_t)en->csize, head, hn, false, &hn))
      return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: entry '%s.npy': corrupt deflate data",
                  what, en->name);
    h = head;
#else
    return base_fail(err, errlen, ST_UNSUPPORTED,
                "%s: entry '%s.npy' is deflated (numpy.savez_compressed) but this tpucc was "
                "built without zlib; save with numpy.savez instead",
                what, en->name);
#endif
  }
  ir_shape s;
  size_t size;
  const char *sub = arena_printf(a, "%s:%s.npy", what, en->name);
  base_status st = ir_npy_peek(sub, h, hn, &s, &size, err, errlen);
  if (st != ST_OK) return st;
  if (expect) {
    bool same = s.rank == expect->rank;
    for (int k = 0; same && k < s.rank; k++) same = s.dims[k] == expect->dims[k];
    if (!same) {
      strbuf want, got;
      sb_init(&want);
      sb_init(&got);
      ir_tensor_print_spec(&want, expect);
      s.type = expect->type;
      ir_tensor_print_spec(&got, &s);
      st = base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: expected %s, the array is %s", sub,
                sb_str(&want), sb_str(&got));
      sb_free(&want);
      sb_free(&got);
      return st;
    }
  }
  if (size != SIZE_MAX && size != en->usize)
    return base_fail(err, errlen, ST_INVALID_ARGUMENT,
                "%s: the .npy header implies %zu bytes, the archive says %llu", sub, size,
                (unsigned long long)en->usize);
  return ST_OK;
}

/* Inflates (or points at) entry en and decodes its .npy. */
static base_status decode_entry(arena *a, const char *what, const uint8_t *d, const entry *en,
                                ir_literal **out, char *err, size_t errlen) {
  const uint8_t *npy = d + en->doff;
  uint8_t *buf = NULL;
#ifdef HAVE_ZLIB
  if (en->method == 8) {
    if (!(buf = malloc(en->usize ? (size_t)en->usize : 1)))
      return base_fail(err, errlen, ST_OUT_OF_MEMORY,
                  "%s: entry '%s.npy': the host has no memory for %llu bytes", what, en->name,
                  (unsigned long long)en->usize);
    size_t got;
    if (!inflate_raw(d + en->doff, (size_t)en->csize, buf, (size_t)en->usize, true, &got)) {
      free(buf);
      return base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: entry '%s.npy': corrupt deflate data",
                  what, en->name);
    }
    npy = buf;
  }
#endif
  base_status st = ST_OK;
  if (crc32_of(npy, (size_t)en->usize) != en->crc)
    st = base_fail(err, errlen, ST_INVALID_ARGUMENT, "%s: entry '%s.npy': CRC-32 mismatch", what,
              en->name);
  else
    st = ir_npy_decode(a, arena_printf(a, "%s:%s.npy", what, en->name), npy, (size_t)en->usize,
                       out, err, errlen);
  free(buf);
  return st;
}

base_status ir_npz_decode(arena *a, const char *what, const void *data, size_t len,
                          const char *select, const ir_shape *expect, ir_named_literal **out,
                          int *out_n, char *err, size_t errlen) {
  const uint8_t *d = data;
  entry *ents = NULL;
  uint64_t nent = 0;
  base_status st = read_directory(a, what, d, len, &ents, &nent, err, errlen);
  if (st != ST_OK) return st;
  uint64_t first = 0, count = nent;
  if (select) {
    while (first < nent && strcmp(ents[first].name, select) != 0) first++;
    if (first == nent) {
      strbuf names;
      sb_init(&names);
      for (uint64_t i = 0; i < nent; i++) sb_printf(&names, "%s%s", i ? ", " : "", ents[i].name);
      st = base_fail(err, errlen, ST_NOT_FOUND, "%s has no array '%s' (it has: %s)", what, select,
                nent ? sb_str(&names) : "none");
      sb_free(&names);
      return st;
    }
    count = 1;
  } else if (expect && nent != 1) {
    return base_fail(err, errlen, ST_INVALID_ARGUMENT,
                "%s holds %llu arrays; with a shape, select one as @%s:NAME", what,
                (unsigned long long)nent, what);
  }
  /* Every header first, and the total, so that nothing is inflated for an
   * archive that is refused. */
  uint64_t total = 0;
  for (uint64_t e = first; e < first + count; e++) {
    if ((st = check_header(a, what, d, &ents[e], expect, err, errlen)) != ST_OK) return st;
    total += ents[e].usize;
    if (total > IR_TENSOR_MAX_FILE)
      return base_fail(err, errlen, ST_RESOURCE_EXHAUSTED,
                  "%s: its arrays hold more than %zu bytes in all", what, IR_TENSOR_MAX_FILE);
  }
  ir_named_literal *res = arena_array(a, count ? (size_t)count : 1, sizeof *res);
  for (uint64_t e = first; e < first + count; e++) {
    if ((st = decode_entry(a, what, d, &ents[e], &res[e - first].lit, err, errlen)) != ST_OK)
      return st;
    res[e - first].name = ents[e].name;
  }
  *out = res;
  *out_n = (int)count;
  return ST_OK;
}

base_status ir_npz_encode(strbuf *b, const ir_named_literal *arrays, int n, char *err,
                          size_t errlen) {
  if (n > 0xfffe) return base_fail(err, errlen, ST_UNSUPPORTED, "too many arrays for one .npz");
  size_t base = b->len;
  size_t *offs = base_xmalloc(sizeof(size_t) * (size_t)(n ? n : 1));
  uint32_t *crcs = base_xmalloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
  uint32_t *sizes = base_xmalloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
  base_status st = ST_OK;
  strbuf npy;
  sb_init(&npy);
  for (int i = 0; i < n && st == ST_OK; i++) {
    npy.len = 0;
    st = ir_npy_encode(&npy, arrays[i].lit, err, errlen);
    if (st != ST_OK) break;
    size_t nl = strlen(arrays[i].name) + 4;
    if (npy.len > 0xfffffffeu || b->len - base > 0xfffffffeu - npy.len - nl - LOCAL_SIZE ||
        nl > 0xffff) {
      st = base_fail(err, errlen, ST_UNSUPPORTED,
                "array '%s' is too large for an .npz (4 GiB); write .npy files instead",
                arrays[i].name);
      break;
    }
    offs[i] = b->len - base;
    crcs[i] = crc32_of((const uint8_t *)npy.s, npy.len);
    sizes[i] = (uint32_t)npy.len;
    wr32(b, 0x04034b50);
    wr16(b, 20);   /* version needed: 2.0 */
    wr16(b, 0);    /* flags */
    wr16(b, 0);    /* stored */
    wr16(b, 0);    /* time 00:00:00 */
    wr16(b, 0x21); /* date 1980-01-01 */
    wr32(b, crcs[i]);
    wr32(b, sizes[i]);
    wr32(b, sizes[i]);
    wr16(b, (uint32_t)nl);
    wr16(b, 0);
    sb_puts(b, arrays[i].name);
    sb_puts(b, ".npy");
    sb_putn(b, npy.s, npy.len);
  }
  sb_free(&npy);
  if (st == ST_OK) {
    size_t cdstart = b->len - base;
    for (int i = 0; i < n; i++) {
      size_t nl = strlen(arrays[i].name) + 4;
      wr32(b, 0x02014b50);
      wr16(b, 20);
      wr16(b, 20);
      wr16(b, 0);
      wr16(b, 0);
      wr16(b, 0);
      wr16(b, 0x21);
      wr32(b, crcs[i]);
      wr32(b, sizes[i]);
      wr32(b, sizes[i]);
      wr16(b, (uint32_t)nl);
      wr16(b, 0);
      wr16(b, 0);
      wr16(b, 0);
      wr16(b, 0);
      wr32(b, 0);
      wr32(b, (uint32_t)offs[i]);
      sb_puts(b, arrays[i].name);
      sb_puts(b, ".npy");
    }
    size_t cdsize = b->len - base - cdstart;
    if (cdstart + cdsize > 0xfffffffeu) {
      st = base_fail(err, errlen, ST_UNSUPPORTED, "arrays too large for an .npz (4 GiB)");
    } else {
      wr32(b, 0x06054b50);
      wr16(b, 0);
      wr16(b, 0);
      wr16(b, (uint32_t)n);
      wr16(b, (uint32_t)n);
      wr32(b, (uint32_t)cdsize);
      wr32(b, (uint32_t)cdstart);
      wr16(b, 0);
    }
  }
  free(offs);
  free(crcs);
  free(sizes);
  return st;
}
