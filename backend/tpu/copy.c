/* copy.c: data movement kernels: strided HBM -> HBM copies through VMEM
 * (transpose, slice, reverse, broadcast, reshape, concatenate and pad all
 * become one of these) and fills.
 *
 * A copy is a box of indices with a source and a destination stride per
 * dimension. Dimensions of size 1 are dropped, neighbours that are
 * contiguous on both sides merge, and a contiguous innermost dimension
 * becomes the DMA's run. The innermost (up to) three remaining dimensions
 * form the DMA descriptor's box; outer ones are unrolled. Each box goes
 * HBM -> VMEM (gathering with the source strides into a dense staging
 * buffer) and VMEM -> HBM (scattering with the destination strides); two
 * staging buffers alternate so a load can overlap the previous store on
 * the HBM timeline. Both run on DMA queue 0, in order, so no semaphores. */
#include "backend/tpu/tb.h"

static uint64_t staging_bytes(const tb *b) {
  uint64_t s = b->t.vmem_bytes / 8;
  if (s > ((uint64_t)4 << 20)) s = (uint64_t)4 << 20;
  return s / TB_GRANULE * TB_GRANULE;
}

typedef struct copy_ctx {
  tb *b;
  uint64_t stage, S;
  int slot;
} copy_ctx;

/* One box: nb dims (inner first) n[], strides in bytes. */
static void box(copy_ctx *c, uint64_t dst, uint64_t src, int64_t run, int nb, const int64_t *n,
                const int64_t *ds, const int64_t *ss) {
  int64_t d[10] = {run, 1, 1, 1, 0, 0, 0, 0, 0, 0};
  int64_t vs = run;
  for (int k = 0; k < nb; k++) {
    d[1 + k] = n[k];
    d[7 + k] = vs;
    vs *= n[k];
  }
  uint64_t v = c->stage + (uint64_t)c->slot * c->S;
  c->slot ^= 1;
  int64_t ld[10], st[10];
  memcpy(ld, d, sizeof d);
  memcpy(st, d, sizeof d);
  for (int k = 0; k < nb; k++) {
    ld[4 + k] = ss[k];
    st[4 + k] = ds[k];
  }
  tb_dma(c->b, true, v, src, ld);
  tb_dma(c->b, false, v, dst, st);
}

/* dims outer-first; strides in bytes; run bytes contiguous. */
static void walk(copy_ctx *c, uint64_t dst, uint64_t src, int64_t run, int r, const int64_t *dims,
                 const int64_t *ds, const int64_t *ss) {
  if (c->b->failed) return;
  uint64_t S = c->S;
  if (r == 0) {
    for (int64_t o = 0; o < run; o += (int64_t)S) {
      int64_t piece = run - o < (int64_t)S ? run - o : (int64_t)S;
      box(c, dst + (uint64_t)o, src + (uint64_t)o, piece, 0, NULL, NULL, NULL);
    }
    return;
  }
  /* Box dims: the innermost nb (<= 3) whose inner part fits. */
  int nb = r < 3 ? r : 3;
  while (nb > 0) {
    int64_t inner = run;
    for (int k = r - nb + 1; k < r; k++) inner *= dims[k];
    if (inner <= (int64_t)S) break;
    nb--;
  }
  if (nb == 0 || r > nb) {
    /* Unroll the outermost dimension. */
    if (nb == 0 || r - nb > 0) {
      for (int64_t i = 0; i < dims[0]; i++)
        walk(c, dst + (uint64_t)(i * ds[0]), src + (uint64_t)(i * ss[0]), run, r - 1, dims + 1,
             ds + 1, ss + 1);
      return;
    }
  }
  /* r == nb: the whole remainder is one box, chunked along its outermost. */
  int64_t inner = run;
  for (int k = 1; k < r; k++) inner *= dims[k];
  int64_t step = (int64_t)S / inner;
  if (step < 1) step = 1;
  int64_t n[3], dsb[3], ssb[3];
  for (int k = 0; k < r; k++) {
    n[k] = dims[r - 1 - k];
    dsb[k] = ds[r - 1 - k];
    ssb[k] = ss[r - 1 - k];
  }
  for (int64_t i = 0; i < dims[0]; i += step) {
    n[r - 1] = dims[0] - i < step ? dims[0] - i : step;
    box(c, dst + (uint64_t)(i * ds[0]), src + (uint64_t)(i * ss[0]), run, r, n, dsb, ssb);
  }
}

void tk_copy(tb *b, uint64_t dst, const int64_t *dst_strides, uint64_t src,
             const int64_t *src_strides, int rank, const int64_t *dims, int esize) {
  int64_t n[IR_MAX_RANK + 1], ds[IR_MAX_RANK + 1], ss[IR_MAX_RANK + 1];
  int r = 0;
  for (int k = 0; k < rank; k++) {
    if (dims[k] == 0) return;
    if (dims[k] == 1) continue;
    n[r] = dims[k];
    ds[r] = dst_strides[k] * esize;
    ss[r] = src_strides[k] * esize;
    r++;
  }
  /* Merge neighbours contiguous on both sides (outer k, inner k+1). */
  for (int k = r - 2; k >= 0; k--)
    if (ds[k] == ds[k + 1] * n[k + 1] && ss[k] == ss[k + 1] * n[k + 1]) {
      n[k] *= n[k + 1];
      ds[k] = ds[k + 1];
      ss[k] = ss[k + 1];
      for (int j = k + 1; j < r - 1; j++) {
        n[j] = n[j + 1];
        ds[j] = ds[j + 1];
        ss[j] = ss[j + 1];
      }
      r--;
    }
  int64_t run = esize;
  if (r > 0 && ds[r - 1] == esize && ss[r - 1] == esize) {
    run = n[r - 1] * esize;
    r--;
  }
  copy_ctx c = {b, 0, staging_bytes(b), 0};
  if (!tb_vmem_fits(b, 2 * c.S, "a copy's staging buffers")) return;
  walk(&c, dst, src, run, r, n, ds, ss);
}

void tk_fill(tb *b, uint64_t dst, int64_t count, int esize, uint32_t bits) {
  if (count <= 0) return;
  uint64_t S = staging_bytes(b);
  uint64_t total = (uint64_t)count * (uint64_t)esize;
  uint64_t fillb = total < S ? tb_align(total) : S;
  /* One vector register holds the pattern; store it over the buffer. */
  uint32_t pat = esize == 2 ? bits << 16 : esize == 1 ? (bits & 0xff) * 0x01010101u : bits;
  bool half = esize == 2;
  tb_valu(b, OP_VIMM, 1, (int32_t)pat, 0);
  uint64_t tile = tb_tile_bytes(half);
  uint64_t base = 2 * S; /* after the copy staging buffers */
  if (!tb_vmem_fits(b, base + fillb + tile, "a fill")) return;
  for (uint64_t o = 0; o < fillb; o += tile)
    tb_vst(b, 1, base + o, tb_row_bytes(half), half, 0);
  for (uint64_t o = 0; o < total; o += fillb) {
    uint64_t piece = total - o < fillb ? total - o : fillb;
    int64_t d[10] = {(int64_t)piece, 1, 1, 1, 0, 0, 0, 0, 0, 0};
    tb_dma(b, false, base, dst + o, d);
  }
}
