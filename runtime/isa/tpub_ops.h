/* tpub_ops.h: private to runtime/isa: the OPS section of .tpub files
 * (per-op attribution; layout in tpub.h). tpub.c calls these while it
 * reads and writes a file. */
#ifndef TPUCC_TPUB_OPS_H
#define TPUCC_TPUB_OPS_H

#include "tpub.h"

/* Little-endian fields of a .tpub: n bytes at p read as, or written from,
 * an unsigned integer; pad8 rounds a byte count up to the 8-byte grain. */
static inline uint64_t rd(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}
static inline void wr(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint64_t pad8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

/* Parses an OPS section of len bytes at p with count ops into img->ops
 * (img->nops) and *runs (2 x *nruns u32: first pc, op; allocated with
 * img's allocator, the caller frees it). Returns 0, -1 (err says why) or
 * -2 on OOM. The pcs are checked later by tpub_ops_expand. */
int tpub_ops_parse(tpub_image *img, const uint8_t *p, uint64_t len, uint32_t count, uint32_t **runs,
                   uint32_t *nruns, char *err, size_t errlen);
/* Checks runs against img->ncode and img->nops and fills img->op_of_pc. */
int tpub_ops_expand(tpub_image *img, const uint32_t *runs, uint32_t nruns, char *err,
                    size_t errlen);
/* Bytes of the OPS section of img (0 when it has none), and its contents
 * written to p (zeroed memory of that size). */
uint64_t tpub_ops_bytes(const tpub_image *img);
void tpub_ops_store(const tpub_image *img, uint8_t *p);

#endif
