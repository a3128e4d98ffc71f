/* fold.c: sequential folds with an arbitrary reducer, vectorised across
 * outputs: out[o] = f(...f(f(init, x[0][o]), x[1][o])..., x[R-1][o]).
 *
 * Each block of 1024 outputs (one 8x128 tile) keeps its nv accumulators in
 * vector registers while rows r = 0..R-1 stream through: blocks of rows
 * are DMA'd HBM -> VMEM ([rows, 1024] with the row stride of O) into two
 * alternating buffers, so the next rows load while these fold (with
 * strided inputs the DMA gathers, so a reduction over minor dimensions
 * needs no transposed copy). The order
 * is exactly the reference evaluator's (ascending r per output), so
 * reductions are bit-exact whatever the reducer. The init values are
 * broadcast across lanes by a DMA with source stride 0. */
#include "backend/tpu/tb.h"

static int es_of(ir_type t) { return tk_itype(t) == IR_BF16 ? 2 : 4; }

void tk_fold(tb *b, const tk_elem *red, int nv, const uint64_t *xs, const uint64_t *inits,
             const uint64_t *outs, int64_t R, int64_t O) {
  tk_fold_strided(b, red, nv, xs, O, 1, inits, outs, R, O);
}

void tk_fold_strided(tb *b, const tk_elem *red, int nv, const uint64_t *xs, int64_t sr,
                     int64_t so, const uint64_t *inits, const uint64_t *outs, int64_t R,
                     int64_t O) {
  if (b->failed || O <= 0) return;
  if (nv > 8) {
    tb_error(b, ST_UNSUPPORTED, "reduction of %d values at once (at most 8)", nv);
    return;
  }
  /* Types of accumulator v: red->in_type[v]; of value v: red->in_type[nv + v]. */
  int64_t W = TGT_VREG_ELEMS;
  /* Rows per DMA block: keep each buffer near 256 KiB. */
  uint64_t per = b->t.vmem_bytes / (uint64_t)(4 * nv + 4);
  if (per > ((uint64_t)256 << 10)) per = (uint64_t)256 << 10;
  int64_t Rc = (int64_t)(per / (uint64_t)(W * 4));
  if (Rc < 1) Rc = 1;
  if (Rc > R) Rc = R > 0 ? R : 1;
  uint64_t rowbytes = (uint64_t)W * 4;
  uint64_t buf = tb_align((uint64_t)Rc * rowbytes);
  uint64_t init_off = 2 * (uint64_t)nv * buf, out_off = init_off + (uint64_t)nv * TGT_VREG_BYTES;
  if (!tb_vmem_fits(b, out_off + (uint64_t)nv * TGT_VREG_BYTES, "a reduction")) return;
  /* Broadcast the inits once. */
  if (inits)
    for (int v = 0; v < nv; v++) {
      int es = es_of(red->in_type[v]);
      int64_t d[10] = {es, TGT_VREG_ELEMS, 1, 1, 0, 0, 0, es, 0, 0};
      tb_dma(b, true, init_off + (uint64_t)v * TGT_VREG_BYTES, inits[v], d);
    }
  int64_t nblk = (O + W - 1) / W, nrb = R > 0 ? (R + Rc - 1) / Rc : 0;
  int acc[8], vals[8], in_regs[16], out_regs[8];
  int64_t gen = 0; /* row-block counter for buffer alternation */
  for (int64_t blk = 0; blk < nblk && !b->failed; blk++) {
    int64_t o0 = blk * W, cols = O - o0 < W ? O - o0 : W;
    uint32_t used = 0;
    int64_t r_first = 0;
    for (int v = 0; v < nv; v++) {
      acc[v] = v;
      used |= 1u << v;
    }
    if (inits) {
      for (int v = 0; v < nv; v++) {
        bool h = es_of(red->in_type[v]) == 2;
        tb_vld(b, acc[v], init_off + (uint64_t)v * TGT_VREG_BYTES, tb_row_bytes(h), h);
      }
    }
    /* Load row block 0, then per block: load the next, fold this one. */
    for (int64_t rb = -1; rb < nrb && !b->failed; rb++) {
      if (rb + 1 < nrb) {
        int64_t r0 = (rb + 1) * Rc, rows = R - r0 < Rc ? R - r0 : Rc;
        for (int v = 0; v < nv; v++) {
          int es = es_of(red->in_type[nv + v]);
          /* rows of W outputs; with so != 1 each output's value is gathered
           * element by element (a transpose inside the DMA). */
          int64_t d1[10] = {cols * es, rows, 1, 1, sr * es, 0, 0, W * es, 0, 0};
          int64_t d2[10] = {es, cols, rows, 1, so * es, sr * es, 0, es, W * es, 0};
          tb_dma(b, true, (uint64_t)(2 * v + ((gen + rb + 1) & 1)) * buf,
                 xs[v] + (uint64_t)((r0 * sr + o0 * so) * es), so == 1 ? d1 : d2);
        }
      }
      if (rb < 0) continue;
      int64_t r0 = rb * Rc, rows = R - r0 < Rc ? R - r0 : Rc;
      uint64_t bb = (uint64_t)((gen + rb) & 1);
      for (int64_t r = 0; r < rows && !b->failed; r++) {
        for (int v = 0; v < nv; v++) {
          int es = es_of(red->in_type[nv + v]);
          bool h = es == 2;
          int reg = -1;
          for (int q = 0; q < TGT_VREGS; q++)
            if (!(used >> q & 1)) {
              reg = q;
              break;
            }
          used |= 1u << reg;
          vals[v] = reg;
          tb_vld(b, reg, (uint64_t)(2 * v) * buf + bb * buf + (uint64_t)(r * W * es),
                 h ? 256 : 512, h);
        }
        if (!inits && r0 + r == r_first) {
          /* No init: the first row is the accumulator. */
          for (int v = 0; v < nv; v++) acc[v] = vals[v];
          used = 0;
          for (int v = 0; v < nv; v++) used |= 1u << acc[v];
          continue;
        }
        for (int v = 0; v < nv; v++) {
          in_regs[v] = acc[v];
          in_regs[nv + v] = vals[v];
        }
        if (!tk_eval_dag(b, &used, red, in_regs, out_regs)) return;
        used = 0;
        for (int v = 0; v < nv; v++) {
          acc[v] = out_regs[v];
          used |= 1u << acc[v];
        }
      }
    }
    gen += nrb;
    /* Store the accumulators' first `cols` lanes (row-major tile). */
    for (int v = 0; v < nv; v++) {
      int es = es_of(red->in_type[v]);
      bool h = es == 2;
      tb_vst(b, acc[v], out_off + (uint64_t)v * TGT_VREG_BYTES, tb_row_bytes(h), h, 0);
      int64_t d[10] = {cols * es, 1, 1, 1, 0, 0, 0, 0, 0, 0};
      tb_dma(b, false, out_off + (uint64_t)v * TGT_VREG_BYTES, outs[v] + (uint64_t)(o0 * es), d);
    }
  }
}
