/* tpub_ops.c: the OPS section of .tpub files: which HLO instruction (or
 * fusion) of the optimised module each code word serves, with its name,
 * opcode, source location and useful FLOPs. Written by the TPU backend,
 * read by the profiler (runtime/emu/profile.c) and the CLI's reports.
 * Layout: tpub.h; checks: every string printable and bounded, runs start
 * at pc 0 with strictly increasing pcs inside the code, every op index
 * below the op count. */
#include "tpub_ops.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { OPS_LAYOUT = 1, MAX_NAME = 255, MAX_KIND = 63, MAX_FILE = 1023 };


#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int
bad(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static char *dup_str(const rt_allocator *a, const char *s, size_t n) {
  char *d = rt_alloc(a, n + 1);
  if (!d) return NULL;
  if (n) memcpy(d, s, n);
  d[n] = 0;
  return d;
}

static int printable(const uint8_t *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] < 0x20 || s[i] > 0x7e) return 0;
  return 1;
}

void tpub_clear_ops(tpub_image *img) {
  const rt_allocator *a = &img->alloc;
  for (uint32_t i = 0; i < img->nops && img->ops; i++) {
    rt_free(a, img->ops[i].name);
    rt_free(a, img->ops[i].kind);
    rt_free(a, img->ops[i].file);
  }
  rt_free(a, img->ops);
  rt_free(a, img->op_of_pc);
  img->ops = NULL;
  img->op_of_pc = NULL;
  img->nops = 0;
}

/* Copies one op's strings into img->ops[i] (after length checks). */
static int put_op(tpub_image *img, uint32_t i, const tpub_op *o, size_t nl, size_t kl, size_t fl,
                  char *err, size_t errlen) {
  if (nl < 1 || nl > MAX_NAME || kl > MAX_KIND || fl > MAX_FILE)
    return bad(err, errlen, "op %u: name, kind or file length out of range", i);
  tpub_op *d = &img->ops[i];
  d->line = o->line;
  d->col = o->col;
  d->flops = o->flops;
  d->name = dup_str(&img->alloc, o->name, nl);
  d->kind = dup_str(&img->alloc, o->kind, kl);
  d->file = dup_str(&img->alloc, o->file, fl);
  if (!d->name || !d->kind || !d->file) return -2;
  return 0;
}

/* tpub_set_ops (take == NULL: op_of_pc copied) and tpub_set_ops_take
 * (take == op_of_pc: adopted on success). */
static int set_ops(tpub_image *img, const tpub_op *ops, uint32_t nops, const uint32_t *op_of_pc,
                   uint32_t *take, char *err, size_t errlen) {
  tpub_clear_ops(img);
  if (nops == 0) {
    rt_free(&img->alloc, take);
    return 0;
  }
  if (nops > TPUB_MAX_OPS) return bad(err, errlen, "%u ops exceed %u", nops, TPUB_MAX_OPS);
  for (uint32_t pc = 0; pc < img->ncode; pc++)
    if (op_of_pc[pc] >= nops)
      return bad(err, errlen, "code word %u: op %u out of range (%u ops)", pc, op_of_pc[pc], nops);
  img->ops = rt_calloc(&img->alloc, nops, sizeof *img->ops);
  img->op_of_pc = take ? take : rt_alloc(&img->alloc, (size_t)(img->ncode ? img->ncode : 1) * 4);
  if (!img->ops || !img->op_of_pc) {
    rt_free(&img->alloc, img->ops);
    if (!take) rt_free(&img->alloc, img->op_of_pc);
    img->ops = NULL;
    img->op_of_pc = NULL;
    return -2;
  }
  img->nops = nops;
  if (!take) memcpy(img->op_of_pc, op_of_pc, (size_t)img->ncode * 4);
  for (uint32_t i = 0; i < nops; i++) {
    const tpub_op *o = &ops[i];
    const char *k = o->kind ? o->kind : "", *f = o->file ? o->file : "";
    tpub_op c = *o;
    c.kind = (char *)k;
    c.file = (char *)f;
    int rc = put_op(img, i, &c, o->name ? strlen(o->name) : 0, strlen(k), strlen(f), err, errlen);
    if (rc == 0 &&
        (!printable((const uint8_t *)c.name, strlen(c.name)) ||
         !printable((const uint8_t *)k, strlen(k)) || !printable((const uint8_t *)f, strlen(f))))
      rc = bad(err, errlen, "op %u: non-printable byte in a string", i);
    if (rc) {
      if (take) img->op_of_pc = NULL; /* stays the caller's */
      tpub_clear_ops(img);
      return rc;
    }
  }
  return 0;
}

int tpub_set_ops(tpub_image *img, const tpub_op *ops, uint32_t nops, const uint32_t *op_of_pc,
                 char *err, size_t errlen) {
  return set_ops(img, ops, nops, op_of_pc, NULL, err, errlen);
}

int tpub_set_ops_take(tpub_image *img, const tpub_op *ops, uint32_t nops, uint32_t *op_of_pc,
                      char *err, size_t errlen) {
  return set_ops(img, ops, nops, op_of_pc, op_of_pc, err, errlen);
}

int tpub_ops_parse(tpub_image *img, const uint8_t *p, uint64_t len, uint32_t count, uint32_t **runs,
                   uint32_t *nruns, char *err, size_t errlen) {
  *runs = NULL;
  *nruns = 0;
  if (count < 1 || count > TPUB_MAX_OPS)
    return bad(err, errlen, "ops: %u ops outside 1..%u", count, TPUB_MAX_OPS);
  if (len < 8) return bad(err, errlen, "ops: truncated header");
  if (rd(p, 4) != OPS_LAYOUT)
    return bad(err, errlen, "ops: layout version %u (this runtime reads %d)", (unsigned)rd(p, 4),
               OPS_LAYOUT);
  uint32_t nr = (uint32_t)rd(p + 4, 4);
  if (nr < 1 || nr > TPUB_MAX_CODE)
    return bad(err, errlen, "ops: %u runs outside 1..%u", nr, TPUB_MAX_CODE);
  uint64_t pos = 8;
  if ((len - pos) / 8 < nr) return bad(err, errlen, "ops: runs are truncated");
  uint32_t *r = rt_alloc(&img->alloc, (size_t)nr * 8);
  if (!r) return -2;
  for (uint32_t i = 0; i < 2 * nr; i++)
    r[i] = (uint32_t)rd(p + pos + 4 * (uint64_t)i, 4);
  pos += (uint64_t)nr * 8;
  img->ops = rt_calloc(&img->alloc, count, sizeof *img->ops);
  if (!img->ops) {
    rt_free(&img->alloc, r);
    return -2;
  }
  img->nops = count;
  int rc = 0;
  for (uint32_t i = 0; i < count && !rc; i++) {
    if (len - pos < 24) {
      rc = bad(err, errlen, "ops: op %u is truncated", i);
      break;
    }
    tpub_op o = {0};
    o.flops = rd(p + pos, 8);
    o.line = (uint32_t)rd(p + pos + 8, 4);
    o.col = (uint32_t)rd(p + pos + 12, 4);
    size_t nl = (size_t)rd(p + pos + 16, 2), kl = (size_t)rd(p + pos + 18, 2),
           fl = (size_t)rd(p + pos + 20, 2);
    if (rd(p + pos + 22, 2)) {
      rc = bad(err, errlen, "ops: op %u: reserved bytes are not zero", i);
      break;
    }
    pos += 24;
    uint64_t sl = (uint64_t)nl + kl + fl;
    if (len - pos < pad8(sl)) {
      rc = bad(err, errlen, "ops: op %u: strings are truncated", i);
      break;
    }
    if (!printable(p + pos, (size_t)sl)) {
      rc = bad(err, errlen, "ops: op %u: non-printable byte in a string", i);
      break;
    }
    o.name = (char *)(p + pos);
    o.kind = (char *)(p + pos + nl);
    o.file = (char *)(p + pos + nl + kl);
    rc = put_op(img, i, &o, nl, kl, fl, err, errlen);
    pos += sl;
    for (; pos % 8 && !rc; pos++)
      if (p[pos]) rc = bad(err, errlen, "ops: op %u: padding is not zero", i);
  }
  if (!rc && pos != len)
    rc = bad(err, errlen, "ops: %llu trailing bytes", (unsigned long long)(len - pos));
  if (rc) {
    rt_free(&img->alloc, r);
    tpub_clear_ops(img);
    return rc;
  }
  *runs = r;
  *nruns = nr;
  return 0;
}

int tpub_ops_expand(tpub_image *img, const uint32_t *runs, uint32_t nruns, char *err,
                    size_t errlen) {
  if (runs[0] != 0) return bad(err, errlen, "ops: the first run starts at pc %u, not 0", runs[0]);
  for (uint32_t i = 0; i < nruns; i++) {
    if (runs[2 * i] >= img->ncode)
      return bad(err, errlen, "ops: run %u starts at pc %u, past the code (%u words)", i,
                 runs[2 * i], img->ncode);
    if (i && runs[2 * i] <= runs[2 * i - 2])
      return bad(err, errlen, "ops: run %u does not start after run %u", i, i - 1);
    if (runs[2 * i + 1] >= img->nops)
      return bad(err, errlen, "ops: run %u names op %u of %u", i, runs[2 * i + 1], img->nops);
  }
  img->op_of_pc = rt_alloc(&img->alloc, (size_t)img->ncode * 4);
  if (!img->op_of_pc) return -2;
  for (uint32_t i = 0; i < nruns; i++) {
    uint32_t end = i + 1 < nruns ? runs[2 * i + 2] : img->ncode;
    for (uint32_t pc = runs[2 * i]; pc < end; pc++)
      img->op_of_pc[pc] = runs[2 * i + 1];
  }
  return 0;
}

static uint32_t count_runs(const tpub_image *img) {
  uint32_t n = 0;
  for (uint32_t pc = 0; pc < img->ncode; pc++)
    if (pc == 0 || img->op_of_pc[pc] != img->op_of_pc[pc - 1]) n++;
  return n;
}

uint64_t tpub_ops_bytes(const tpub_image *img) {
  if (!img->nops) return 0;
  uint64_t n = 8 + (uint64_t)count_runs(img) * 8;
  for (uint32_t i = 0; i < img->nops; i++) {
    const tpub_op *o = &img->ops[i];
    n += 24 + pad8(strlen(o->name) + strlen(o->kind) + strlen(o->file));
  }
  return n;
}

void tpub_ops_store(const tpub_image *img, uint8_t *p) {
  if (!img->nops) return;
  uint32_t nr = 0;
  wr(p, OPS_LAYOUT, 4);
  uint8_t *q = p + 8;
  for (uint32_t pc = 0; pc < img->ncode; pc++)
    if (pc == 0 || img->op_of_pc[pc] != img->op_of_pc[pc - 1]) {
      wr(q, pc, 4);
      wr(q + 4, img->op_of_pc[pc], 4);
      q += 8;
      nr++;
    }
  wr(p + 4, nr, 4);
  for (uint32_t i = 0; i < img->nops; i++) {
    const tpub_op *o = &img->ops[i];
    size_t nl = strlen(o->name), kl = strlen(o->kind), fl = strlen(o->file);
    wr(q, o->flops, 8);
    wr(q + 8, o->line, 4);
    wr(q + 12, o->col, 4);
    wr(q + 16, nl, 2);
    wr(q + 18, kl, 2);
    wr(q + 20, fl, 2);
    q += 24;
    memcpy(q, o->name, nl);
    memcpy(q + nl, o->kind, kl);
    memcpy(q + nl + kl, o->file, fl);
    q += pad8(nl + kl + fl);
  }
}
