/* matmul.c: C = A x B on the MXUs, tiled from the target description.
 *
 * A is bf16 [M,K], B bf16 [K,N], C f32 [M,N], all row-major in HBM (G
 * independent problems at byte strides). B may instead be stored
 * transposed, [N,K] (bt): its panels then lie in VMEM as Nt rows of K
 * and each weight tile is loaded with the MXU's transposed weight load
 * (mwtt), so no transpose of B is ever materialised; the products and
 * their order are the same, so are the bits. Tile sizes: K tiles of mxu_rows,
 * N panels of mxu_cols, M blocks of at most acc_rows rows chosen so that
 * two A panels (Mb x Kp), 2*mxus B panels (Kp x Nt) and 2*mxus C blocks
 * (Mb x Nt f32) fit in VMEM. Loop order per M block: the A panel is loaded
 * once; N panels rotate over the MXUs (panel j on MXU j mod mxus), each
 * loaded `mxus` panels ahead of its use so its DMA overlaps the previous
 * panels' pushes; within a panel the K tiles accumulate in the MXU
 * accumulators (mpush for the first, mpusha after: ascending k, so the
 * sum is the evaluator's ascending-k f32 sum of exact bf16 products) and
 * the next weight tile loads into the shadow buffer while the current one
 * streams Mb rows. The A panel is held K-tile-major ([nK][Mb][Kt]) and
 * loaded piece by piece, so the first pushes wait only for piece 0.
 * Padding: K and the A/B pads are zero-filled in VMEM, A's with -0 and
 * B's with +0, so every padding product is -0 and adding it leaves any
 * accumulator unchanged (x + -0 = x, also for x = -0): the result is the
 * same at every tiling (docs/numerics.md); columns past N are computed on
 * stale weights and never stored.
 * A may instead be stored transposed, [K,M] (at): each K-tile piece of a
 * row block is staged as [Kt][rows] by one DMA and crosses the vector
 * unit's transpose buffer in 128 x 128 blocks into the panel's
 * [rows][Kt] bf16 layout (RNE from f32, as the other conversions), so a
 * weight gradient X^T dY reads X as it lies instead of a transposed copy
 * through HBM. */
#include "backend/tpu/tb.h"

/* Words that fill A pads: two bf16 -0, or one f32 -0 (staged f32 A). */
#define NEG0_BF16X2 0x80008000u
#define NEG0_F32 0x80000000u

void tk_vfill(tb *b, uint64_t addr, uint64_t bytes, uint32_t word) {
  tb_valu(b, OP_VIMM, 0, (int32_t)word, 0);
  for (uint64_t o = 0; o < bytes; o += TGT_VREG_BYTES_BF16)
    tb_vst(b, 0, addr + o, TGT_VROW_BYTES_BF16, true, 0);
}

/* Loads weight tile k of the B panel at bs into mx's shadow buffer: the
 * panel is Kc rows of Nt (tile k at row k*Kt) or, bt, Nt rows of Kc (tile
 * k at column k*Kt, loaded transposed). */
static void wtile(tb *b, int mx, uint64_t bs, int64_t k, int64_t Kc, bool bt) {
  int64_t Kt = b->t.mxu_rows, Nt = b->t.mxu_cols;
  if (bt)
    tb_mwtt(b, mx, bs + (uint64_t)(k * Kt * 2), (uint32_t)(Kc * 2),
            (uint64_t)((Nt - 1) * Kc * 2 + Kt * 2));
  else
    tb_mwt(b, mx, bs + (uint64_t)(k * Kt * Nt * 2), (uint32_t)(Nt * 2), (uint64_t)(Kt * Nt * 2));
}

/* K too long for VMEM: per (M block, N panel), K chunks of Kc rows stream
 * through two A and two B buffers (A is re-read for every N panel) and
 * accumulate in the MXU in ascending k, as in the resident case. */
static void chunked(tb *b, const tk_mm *mm, int64_t Mb, int64_t Kc, uint64_t apanel,
                    uint64_t bpanel, uint64_t boff, uint64_t coff) {
  int64_t G = mm->G, M = mm->M, N = mm->N, K = mm->K;
  uint64_t A = mm->A, A_g = mm->A_g, B = mm->B, B_g = mm->B_g, C = mm->C, C_g = mm->C_g;
  bool bt = mm->bt;
  int64_t Kt = b->t.mxu_rows, Nt = b->t.mxu_cols;
  int nm = b->t.mxus, nbs = 2 * nm;
  int64_t nN = (N + Nt - 1) / Nt, nMb = (M + Mb - 1) / Mb, nKc = (K + Kc - 1) / Kc;
  int64_t step = 0, panel = 0;
  /* Zero every buffer once: the last chunk's pads stay zero because loads
   * only ever write the valid rows/columns of a chunk of that shape. */
  tk_vfill(b, 0, 2 * apanel, NEG0_BF16X2);
  tk_vfill(b, boff, (uint64_t)nbs * bpanel, 0);
  for (int64_t g = 0; g < G && !b->failed; g++)
    for (int64_t mb = 0; mb < nMb && !b->failed; mb++) {
      int64_t m0 = mb * Mb, rows = M - m0 < Mb ? M - m0 : Mb;
      for (int64_t j = 0; j < nN && !b->failed; j++, panel++) {
        int64_t n0 = j * Nt, cols = N - n0 < Nt ? N - n0 : Nt;
        int mx = (int)(panel % nm);
        for (int64_t kc = 0; kc < nKc; kc++, step++) {
          int64_t k0 = kc * Kc, kl = K - k0 < Kc ? K - k0 : Kc, nk = (kl + Kt - 1) / Kt;
          uint64_t as = (uint64_t)(step & 1) * apanel;
          uint64_t bs = boff + (uint64_t)(step % nbs) * bpanel;
          if (kl < Kc && kc + 1 == nKc) { /* a short last chunk: re-zero its pads */
            tk_vfill(b, as, apanel, NEG0_BF16X2);
            tk_vfill(b, bs, bpanel, 0);
          }
          int64_t da[10] = {kl * 2, rows, 1, 1, K * 2, 0, 0, Kc * 2, 0, 0};
          tb_dma(b, true, as, A + (uint64_t)g * A_g + (uint64_t)((m0 * K + k0) * 2), da);
          if (bt) {
            int64_t db[10] = {kl * 2, cols, 1, 1, K * 2, 0, 0, Kc * 2, 0, 0};
            tb_dma(b, true, bs, B + (uint64_t)g * B_g + (uint64_t)((n0 * K + k0) * 2), db);
          } else {
            int64_t db[10] = {cols * 2, kl, 1, 1, N * 2, 0, 0, Nt * 2, 0, 0};
            tb_dma(b, true, bs, B + (uint64_t)g * B_g + (uint64_t)((k0 * N + n0) * 2), db);
          }
          wtile(b, mx, bs, 0, Kc, bt);
          tb_mswap(b, mx);
          for (int64_t k = 0; k < nk; k++) {
            if (k + 1 < nk) wtile(b, mx, bs, k + 1, Kc, bt);
            tb_mpush(b, mx, kc > 0 || k > 0, as + (uint64_t)(k * Kt * 2), (uint32_t)(Kc * 2), 0,
                     (int)rows);
            if (k + 1 < nk) tb_mswap(b, mx);
          }
        }
        uint64_t cs = coff + (uint64_t)(panel % nbs) * (uint64_t)tb_align((uint64_t)(Mb * Nt * 4));
        tb_mpopm(b, mx, cs, (uint32_t)(Nt * 4), 0, (int)rows);
        int64_t d[10] = {cols * 4, rows, 1, 1, N * 4, 0, 0, Nt * 4, 0, 0};
        tb_dma(b, false, cs, C + (uint64_t)g * C_g + (uint64_t)((m0 * N + n0) * 4), d);
      }
    }
}

/* n f32 values at src -> bf16 at dst (VMEM), RNE; lanes past n are not
 * stored. Four tiles in flight so the loads' latency overlaps. With
 * src_bf16 the source is bf16 already (an exact copy). */
void tk_conv_bf16(tb *b, uint64_t src, bool src_bf16, uint64_t dst, int64_t n) {
  int64_t E = TGT_VREG_ELEMS, tiles = (n + E - 1) / E;
  uint64_t ts = tb_tile_bytes(src_bf16);
  for (int64_t t0 = 0; t0 < tiles; t0 += 4) {
    int gn = tiles - t0 < 4 ? (int)(tiles - t0) : 4;
    for (int g = 0; g < gn; g++)
      tb_vld(b, 8 + g, src + (uint64_t)(t0 + g) * ts, tb_row_bytes(src_bf16), src_bf16);
    for (int g = 0; g < gn; g++) {
      int64_t t = t0 + g, tail = n - t * E;
      int mask = 0;
      if (tail < E) { /* m1 = (r*128 + l) < tail */
        tb_valu(b, OP_VIOTA, 12, 1, 0);
        tb_valu(b, OP_VIMM, 13, TGT_LANES, 0);
        tb_valu(b, OP_VMULI, 12, 12, 13);
        tb_valu(b, OP_VIOTA, 13, 0, 0);
        tb_valu(b, OP_VADDI, 12, 12, 13);
        tb_valu(b, OP_VIMM, 13, (int32_t)tail, 0);
        tb_raw(b, OP_VCMPLTI, 1, 12, 13, 0, 0, 0);
        mask = 1;
      }
      tb_vst(b, 8 + g, dst + (uint64_t)t * TGT_VREG_BYTES_BF16, TGT_VROW_BYTES_BF16, true, mask);
    }
  }
}

static void conv_flat(tb *b, uint64_t src, uint64_t dst, int64_t n) {
  tk_conv_bf16(b, src, false, dst, n);
}

bool tk_matmul_at_ok(const tb *b) { return b->t.mxu_rows == TGT_LANES; }

/* Rows of a staged transposed piece: the block's rows padded to whole
 * 128-lane vectors. */
static int64_t at_cols(int64_t Mb) { return (Mb + TGT_LANES - 1) / TGT_LANES * TGT_LANES; }

/* Staged transposed piece [Kt][cols] at st (elements es bytes) -> the bf16
 * panel piece [rows][Kt] at dst: 128 x 128 blocks through the transpose
 * buffer (rows of the staging are pushed, rows of the piece popped). */
static void at_transpose(tb *b, uint64_t st, int es, int64_t cols, int64_t rows, uint64_t dst,
                         int64_t Kt) {
  for (int64_t c0 = 0; c0 < rows; c0 += TGT_LANES) {
    int64_t nr = rows - c0 < TGT_LANES ? rows - c0 : TGT_LANES;
    for (int j = 0; j < 16; j++)
      tb_vld(b, 16 + j, st + (uint64_t)((8 * j * cols + c0) * es), (uint32_t)(cols * es), es == 2);
    for (int j = 0; j < 16; j++) tb_valu(b, OP_VTPUSH, 16 + j, j, 0);
    for (int j = 0; j < (nr + 7) / 8; j++) tb_valu(b, OP_VTPOP, 16 + j, j, 0);
    for (int j = 0; j < (nr + 7) / 8; j++)
      tb_vst(b, 16 + j, dst + (uint64_t)((c0 + 8 * j) * Kt * 2), (uint32_t)(Kt * 2), true, 0);
  }
}

/* Staged A piece k (f32 A, or A stored transposed): HBM -> staging (slot
 * k&1, or the slot 2 prefilled with -0 for a short last piece) when load,
 * else staging -> bf16 panel piece. asrc: the block's A (row m0; for at,
 * column m0 of A^T). */
static void a_piece(tb *b, const tk_mm *mm, int64_t k, int64_t Kt, int64_t rows, int64_t Mb,
                    uint64_t asrc, uint64_t as, uint64_t saoff, uint64_t sa_slot, bool load) {
  int64_t K = mm->K, kc = K - k * Kt < Kt ? K - k * Kt : Kt;
  int es = mm->a32 ? 4 : 2;
  uint64_t st = saoff + (uint64_t)(kc < Kt ? 2 : (k & 1)) * sa_slot;
  if (mm->at) {
    int64_t cols = at_cols(Mb);
    if (load) {
      int64_t d[10] = {rows * es, kc, 1, 1, mm->M * es, 0, 0, cols * es, 0, 0};
      tb_dma(b, true, st, asrc + (uint64_t)(k * Kt * mm->M * es), d);
    } else {
      at_transpose(b, st, es, cols, rows, as + (uint64_t)(k * Mb * Kt * 2), Kt);
    }
  } else if (load) {
    int64_t d[10] = {kc * 4, rows, 1, 1, K * 4, 0, 0, Kt * 4, 0, 0};
    tb_dma(b, true, st, asrc + (uint64_t)(k * Kt * 4), d);
  } else {
    conv_flat(b, st, as + (uint64_t)(k * Mb * Kt * 2), rows * Kt);
  }
}

static bool mm_core(tb *b, const tk_mm *mm, const tk_aview *av, const tk_epilogue *ep);

bool tk_matmul(tb *b, const tk_mm *mm) { return mm_core(b, mm, NULL, NULL); }

bool tk_matmul_epi(tb *b, const tk_mm *mm, const tk_epilogue *ep) {
  int oes = ep->e->nodes[ep->e->out_node[0]].type == IR_BF16 ? 2 : 4;
  tk_mm m = *mm;
  m.C_g = (uint64_t)(mm->M * mm->N * oes);
  return mm_core(b, &m, NULL, ep);
}

bool tk_matmul_view(tb *b, const tk_mm *mm, const tk_aview *av) {
  return tk_matmul_view_epi(b, mm, av, NULL);
}

bool tk_matmul_view_epi(tb *b, const tk_mm *mm, const tk_aview *av, const tk_epilogue *ep) {
  tk_mm m = *mm;
  m.A = m.A_g = 0;
  m.a32 = m.b32 = m.bt = m.at = false;
  if (ep) m.C_g = (uint64_t)(mm->M * mm->N * (ep->e->nodes[ep->e->out_node[0]].type == IR_BF16 ? 2 : 4));
  return mm_core(b, &m, av, ep);
}

/* What the resident plan's result stores need: the epilogue (optional)
 * and where the C blocks are. */
typedef struct fin_ctx {
  tb *b;
  const tk_elem *epi;
  int dot_in;
  const bool *row;
  int64_t N, Nt;
  int nbs;
  uint64_t coff, cblock, eoff;
  bool q1;
  uint64_t C, C_g;
  tk_plan pl; /* how the epilogue runs on tiles (tk_plan_make) */
  bool obf16; /* the epilogue's output is bf16 */
} fin_ctx;

/* A group of panels j0..j0+gn of the block at row m0 (popped into their C
 * slots) whose epilogue and stores are still to be emitted: its 8x128
 * tiles, panel by panel, `done` of `total` emitted so far. */
typedef struct pend_grp {
  int64_t g, m0, rows, p0, j0, gn, done, total;
} pend_grp;

static void pend_init(pend_grp *p, int64_t g, int64_t m0, int64_t rows, int64_t p0, int64_t j0,
                      int64_t gn, int64_t N, int64_t Nt, bool epi) {
  int64_t tiles = 0;
  for (int64_t jj = j0; jj < j0 + gn; jj++) {
    int64_t cols = N - jj * Nt < Nt ? N - jj * Nt : Nt;
    tiles += epi ? (rows + 7) / 8 * ((cols + 127) / 128) : 1;
  }
  *p = (pend_grp){g, m0, rows, p0, j0, gn, 0, tiles};
}

/* Emits p's tiles up to number upto (the epilogue on 8x128 tiles in
 * place), each panel's store after its last tile; so the caller can
 * spread a group's epilogue between the next group's pushes, and the
 * front end never waits behind a long run of vector instructions while
 * the MXUs have nothing queued. */
static void finish_upto(const fin_ctx *f, pend_grp *p, int64_t upto) {
  tb *b = f->b;
  int64_t N = f->N, Nt = f->Nt, rows = p->rows, t = 0;
  if (upto > p->total) upto = p->total;
  for (int64_t jj = p->j0; jj < p->j0 + p->gn && p->done < upto && !b->failed; jj++) {
    int64_t n0 = jj * Nt, cols = N - n0 < Nt ? N - n0 : Nt;
    int64_t nt = f->epi ? (rows + 7) / 8 * ((cols + 127) / 128) : 1;
    if (t + nt <= p->done) {
      t += nt;
      continue;
    }
    int slot = (int)((p->p0 + jj) % f->nbs);
    uint64_t cs = f->coff + (uint64_t)slot * f->cblock;
    const tk_elem *epi = f->epi;
    if (epi) { /* out = epi(result, inputs) on 8x128 tiles, in place, a few at once */
      int64_t ncc = (cols + 127) / 128;
      if (p->done - t < nt && t + (p->done - t) < upto) tk_plan_consts(b, &f->pl);
      for (int64_t q = p->done - t; q < nt && !b->failed;) {
        if (t + q >= upto) return;
        int gn = f->pl.tiles;
        if (gn > nt - q) gn = (int)(nt - q);
        if (gn > upto - t - q) gn = (int)(upto - t - q);
        int RP = tk_plan_part(&f->pl, gn), in_regs[3 * 8], outs[3];
        uint64_t o[3], cb[3]; /* f32 offset of the tile, and half its column's */
        for (int g = 0; g < gn; g++) {
          int64_t r = (q + g) / ncc * 8, c = (q + g) % ncc * 128;
          o[g] = (uint64_t)((r * Nt + c) * 4);
          cb[g] = (uint64_t)(c * 2);
          for (int in = 0, v = 0; in < epi->ninputs; in++) {
            bool rw = in != f->dot_in && f->row && f->row[in]; /* one row, stride 0 */
            uint64_t src = in == f->dot_in ? cs
                                           : f->eoff + (uint64_t)(v++ * f->nbs + slot) * f->cblock;
            int reg = g * RP + in;
            tb_vld(b, reg, src + (rw ? (uint64_t)(c * 4) : o[g]), rw ? 0 : (uint32_t)(Nt * 4),
                   false);
            in_regs[g * epi->ninputs + in] = reg;
          }
        }
        if (!tk_eval_tiles(b, epi, &f->pl, gn, in_regs, outs)) return;
        /* bf16 results go to the first half of each f32 row: tile (r, c)
         * overwrites f32 columns c/2.. of its rows, whose tiles come
         * before it and are loaded already */
        for (int g = 0; g < gn; g++)
          tb_vst(b, outs[g], cs + (f->obf16 ? o[g] - cb[g] : o[g]), (uint32_t)(Nt * 4), f->obf16,
                 0);
        q += gn;
        p->done = t + q;
      }
    }
    t += nt;
    p->done = t;
    int oes = f->obf16 ? 2 : 4;
    int64_t d[10] = {cols * oes, rows, 1, 1, N * oes, 0, 0, Nt * 4, 0, 0};
    uint64_t dst = f->C + (uint64_t)p->g * f->C_g + (uint64_t)((p->m0 * N + n0) * oes);
    if (f->q1) tb_dma_q1(b, false, cs, dst, d);
    else tb_dma(b, false, cs, dst, d);
  }
}

/* The loads of the resident plan in their issue order: per block, the
 * A panel's piece 0 (f32: into its staging slot), then its B panels
 * (f32: into staging slots), the rest of the A panel after the first
 * group's B panels. ld_upto issues them up to panel j of block blk (j
 * past nN reaches into the next block: its loads then run under this
 * block's last group), so a new block's first pushes do not wait for a
 * whole B group and A piece to arrive. */
typedef struct ld_ctx {
  tb *b;
  int64_t M, N, K, Kt, Nt, Mb, nK, nN, nMb, G;
  int nm, nbs;
  uint64_t A, A_g;
  int esa;
  bool a32; /* A staged and converted in VMEM: f32, or stored transposed */
  const tk_mm *mm;
  uint64_t B, B_g;
  bool b32, bt; /* B f32; B stored [N,K] (panels Nt rows of Kp) */
  const tk_aview *av;
  uint64_t aoff, apanel, boff, bpanel, sboff, sb_slot, saoff, sa_slot;
  int64_t blk, j; /* next load: panel j of block blk (j = -1: its A piece 0) */
  uint64_t b_once, scoff, sc_slot; /* B converted once (TK_NO_ONCE: not), its pieces' slots */
} ld_ctx;

enum { ONCE_SLOTS = 4 }; /* staging slots per panel of f32 B pieces converted once */

/* f32 B converted by the first row block (b_once): piece k (K tile k) of
 * panel jj of the group at j0, staged in slot k mod ONCE_SLOTS of the
 * panel's ring. once_load: HBM f32 -> staging; once_conv: staging ->
 * the bf16 panel in VMEM, and after the last piece the panel -> its bf16
 * copy in HBM, which the other row blocks load. */
static uint64_t once_slot(const ld_ctx *c, int64_t jj, int64_t j0, int64_t k) {
  return c->scoff + (uint64_t)((jj - j0) * ONCE_SLOTS + k % ONCE_SLOTS) * c->sc_slot;
}

static void once_load(ld_ctx *c, int64_t g, int64_t jj, int64_t j0, int64_t k) {
  int64_t Kt = c->Kt, N = c->N, n0 = jj * c->Nt, cols = N - n0 < c->Nt ? N - n0 : c->Nt;
  int64_t kc = c->K - k * Kt < Kt ? c->K - k * Kt : Kt;
  int64_t d[10] = {cols * 4, kc, 1, 1, N * 4, 0, 0, c->Nt * 4, 0, 0};
  tb_dma(c->b, true, once_slot(c, jj, j0, k),
         c->B + (uint64_t)g * c->B_g + (uint64_t)((k * Kt * N + n0) * 4), d);
}

static void once_conv(ld_ctx *c, int64_t g, int64_t jj, int64_t j0, int64_t k, uint64_t bs) {
  int64_t Kt = c->Kt, K = c->K, N = c->N, Nt = c->Nt;
  int64_t n0 = jj * Nt, cols = N - n0 < Nt ? N - n0 : Nt, kc = K - k * Kt < Kt ? K - k * Kt : Kt;
  tk_conv_bf16(c->b, once_slot(c, jj, j0, k), false, bs + (uint64_t)(k * Kt * Nt * 2), kc * Nt);
  if (k + 1 < c->nK) return;
  int64_t d[10] = {cols * 2, K, 1, 1, N * 2, 0, 0, Nt * 2, 0, 0};
  tb_dma(c->b, false, bs, c->b_once + (uint64_t)(g * K * N * 2) + (uint64_t)(n0 * 2), d);
}

static void ld_one(ld_ctx *c) {
  tb *b = c->b;
  int64_t blk = c->blk, g = blk / c->nMb, m0 = blk % c->nMb * c->Mb;
  int64_t rows = c->M - m0 < c->Mb ? c->M - m0 : c->Mb, Kt = c->Kt, K = c->K, Nt = c->Nt;
  uint64_t as = c->aoff + (uint64_t)(blk & 1) * c->apanel;
  uint64_t asrc = c->A + (uint64_t)g * c->A_g + (uint64_t)(m0 * (c->mm->at ? 1 : K) * c->esa);
  if (c->j < 0) { /* A piece 0 */
    if (c->av) {
      c->av->load(b, c->av, g, m0, rows, 0, K < Kt ? K : Kt, as, Kt * 2);
      for (int t = 1; t < c->nm; t++) tb_dma_token(b);
    } else if (c->a32) {
      a_piece(b, c->mm, 0, Kt, rows, c->Mb, asrc, as, c->saoff, c->sa_slot, true);
    } else {
      int64_t kc = K < Kt ? K : Kt;
      int64_t d[10] = {kc * 2, rows, 1, 1, K * 2, 0, 0, Kt * 2, 0, 0};
      tb_dma(b, true, as, asrc, d);
      for (int t = 1; t < c->nm; t++) tb_dma_token(b); /* one token per MXU */
    }
    c->j = 0;
    return;
  }
  int64_t j = c->j, n0 = j * Nt, cols = c->N - n0 < Nt ? c->N - n0 : Nt;
  int64_t pg = blk * c->nN + j; /* global panel index */
  if (c->b_once != TK_NO_ONCE && blk % c->nMb == 0) {
    /* converted piece by piece within its group's K steps (mm_core) */
  } else if (c->b_once != TK_NO_ONCE) {
    int64_t d[10] = {cols * 2, K, 1, 1, c->N * 2, 0, 0, Nt * 2, 0, 0};
    tb_dma(b, true, c->boff + (uint64_t)(pg % c->nbs) * c->bpanel,
           c->b_once + (uint64_t)(g * K * c->N * 2) + (uint64_t)(n0 * 2), d);
  } else {
    /* f32: staged now, converted just before its group */
    int es = c->b32 ? 4 : 2;
    uint64_t dst = c->b32 ? c->sboff + (uint64_t)(pg % c->nbs) * c->sb_slot
                          : c->boff + (uint64_t)(pg % c->nbs) * c->bpanel;
    int64_t Kp = c->nK * Kt;
    int64_t d[10] = {cols * es, K, 1, 1, c->N * es, 0, 0, Nt * es, 0, 0};
    int64_t dt[10] = {K * es, cols, 1, 1, K * es, 0, 0, Kp * es, 0, 0};
    tb_dma(b, true, dst, c->B + (uint64_t)g * c->B_g + (uint64_t)((c->bt ? n0 * K : n0) * es),
           c->bt ? dt : d);
  }
  if (!c->a32 && j == (c->nN < c->nm ? c->nN : c->nm) - 1)
    for (int64_t k = 1; k < c->nK; k++) { /* the rest of the A panel */
      int64_t kc = K - k * Kt < Kt ? K - k * Kt : Kt;
      if (c->av) {
        c->av->load(b, c->av, g, m0, rows, k * Kt, kc, as + (uint64_t)(k * c->Mb * Kt * 2),
                    Kt * 2);
      } else {
        int64_t da[10] = {kc * 2, rows, 1, 1, K * 2, 0, 0, Kt * 2, 0, 0};
        tb_dma(b, true, as + (uint64_t)(k * c->Mb * Kt * 2), asrc + (uint64_t)(k * Kt * 2), da);
      }
      for (int t = 1; t < c->nm; t++) tb_dma_token(b);
    }
  if (++c->j == c->nN) {
    c->blk++;
    c->j = -1;
  }
}

/* Issues the loads up to (not including) panel j of block blk; past nN
 * into the next block only when A is a plain bf16 matrix (f32 A pieces are
 * staged and converted in the first group of their block, in slots still
 * in use; a gathered view's loads (convolution patches) issued that early
 * delay the current block's last group: a ResNet 3x3 convolution went from
 * 141,915 to 232,477 cycles). */
static void ld_upto(ld_ctx *c, int64_t blk, int64_t j) {
  int64_t nblk = c->G * c->nMb;
  while (!c->b->failed && c->blk < nblk) {
    if (c->blk < blk) {
      /* earlier loads still to issue: issue them first */
    } else if (c->blk == blk) {
      if (c->j >= j) return;
    } else if (c->blk == blk + 1 && !c->a32 && !c->av &&
               (c->b_once == TK_NO_ONCE || blk % c->nMb)) { /* the bf16 copy is still to store */
      if (c->j >= j - c->nN) return;
    } else {
      return;
    }
    ld_one(c);
  }
}

/* How a matmul is tiled on the target: the MXU tile (Kt x Nt), K padded
 * to Kp (nK tiles), nN panels of Nt columns, row blocks of Mb rows, K
 * held in VMEM in chunks of Kc (Kc < Kp: the chunked plan), and the VMEM
 * layout of its A panels, B panels and C blocks (nbs slots each, two per
 * MXU), the staging of f32 operands and the epilogue inputs' tiles. b32
 * is false and once true when f32 B is converted once into b_once. */
typedef struct mm_plan {
  int64_t Kt, Nt, Kp, nK, nN, Mb, Kc;
  int nm, nbs;
  bool b32, once;
  uint64_t apanel, cblock, bpanel, sa_slot, sb_slot, sc_slot;
  uint64_t aoff, boff, coff, saoff, sboff, eoff, scoff, vtotal;
} mm_plan;

/* The plan of mm with nx epilogue inputs besides the dot, in 7/8 of
 * VMEM: the largest row blocks (at most acc_rows) and K chunks that fit,
 * halving the blocks down to 256 rows, then K, then the blocks. */
static void mm_plan_make(const tb *b, const tk_mm *mm, int nx, uint64_t b_once, mm_plan *p) {
  int64_t M = mm->M, N = mm->N, K = mm->K;
  bool a32 = mm->a32, b32 = mm->b32, bt = mm->bt, at = mm->at;
  int64_t Kt = b->t.mxu_rows, Nt = b->t.mxu_cols;
  int nm = b->t.mxus;
  int64_t Kp = (K + Kt - 1) / Kt * Kt, nK = Kp / Kt, nN = (N + Nt - 1) / Nt;
  int nbs = 2 * nm; /* B and C slots */
  uint64_t budget = b->t.vmem_bytes - b->t.vmem_bytes / 8;
  uint64_t apanel = 0, cblock = 0, bpanel = 0, sa_slot = 0, sb_slot = 0, sc_slot = 0;
  uint64_t aoff = 0, boff = 0, coff = 0, saoff = 0, sboff = 0, eoff = 0, scoff = 0, vtotal = 0;
  int64_t Mb = 0, Kc = Kp; /* rows per block, K chunk held in VMEM at once */
  bool once = false; /* f32 B converted by the first row block into b_once */
  for (;;) {
    Mb = (M + 7) / 8 * 8;
    if (Mb > b->t.acc_rows) Mb = b->t.acc_rows;
    Kc = Kp;
    sc_slot = once ? tb_align((uint64_t)(Kt * Nt * 4)) : 0;
    for (;;) {
      apanel = tb_align((uint64_t)(Mb * Kc * 2 + 2048));
      bpanel = tb_align((uint64_t)(Kc * Nt * 2));
      cblock = tb_align((uint64_t)(Mb * Nt * 4));
      sa_slot = at    ? tb_align((uint64_t)(at_cols(Mb) * Kt * (a32 ? 4 : 2)))
                : a32 ? tb_align((uint64_t)(Mb * Kt * 4))
                      : 0;
      sb_slot = b32 ? tb_align((uint64_t)(Kc * Nt * 4)) : 0;
      if (2 * apanel + (uint64_t)nbs * (bpanel + (uint64_t)(1 + nx) * cblock + sb_slot) +
              3 * sa_slot <=
          budget)
        break;
      if (Mb > 256) Mb = (Mb / 2 + 7) / 8 * 8;
      else if (Kc > Kt) Kc = ((Kc / Kt + 1) / 2) * Kt;
      else if (Mb > 8) Mb = (Mb / 2 + 7) / 8 * 8;
      else break;
    }
    boff = 2 * apanel;
    coff = boff + (uint64_t)nbs * bpanel;
    saoff = coff + (uint64_t)nbs * cblock;
    sboff = saoff + 3 * sa_slot;
    eoff = sboff + (uint64_t)nbs * sb_slot; /* epilogue inputs' tiles */
    scoff = eoff + (uint64_t)(nx * nbs) * cblock;
    vtotal = scoff + (uint64_t)(nm * ONCE_SLOTS) * sc_slot;
    /* f32 B panels that do not fit: the first row block converts them
     * piece by piece and keeps a bf16 copy for the others. */
    if (b32 && !bt && b_once != TK_NO_ONCE && (Kc < Kp || vtotal > b->t.vmem_bytes)) {
      b32 = false;
      once = true;
      continue;
    }
    break;
  }
  *p = (mm_plan){Kt,   Nt,   Kp,     nK,     nN,     Mb,      Kc,      nm,      nbs,
                 b32,  once, apanel, cblock, bpanel, sa_slot, sb_slot, sc_slot, aoff,
                 boff, coff, saoff,  sboff,  eoff,   scoff,   vtotal};
}

/* --explain: the plan pl of mm. */
static void mm_explain(tb *b, const tk_mm *mm, const tk_aview *av, const tk_elem *epi,
                       const mm_plan *pl) {
  int64_t G = mm->G, M = mm->M, N = mm->N, K = mm->K;
  int64_t Kt = pl->Kt, Nt = pl->Nt, Kp = pl->Kp, nK = pl->nK, nN = pl->nN, Mb = pl->Mb;
  int64_t Kc = pl->Kc;
  int nm = pl->nm;
  bool a32 = mm->a32, b32 = pl->b32, bt = mm->bt, once = pl->once;
  bool staged = a32 || mm->at;
  uint64_t vtotal = pl->vtotal;
  if (b->explain) {
    int64_t nMb_ = (M + Mb - 1) / Mb;
    tb_explain(b,
               "matmul %lldx[%lld,%lld]x[%lld,%lld]: %lld row block(s) of %lld (acc_rows %d), "
               "%lld panel(s) of %lld columns over %d MXU(s), K in %lld tile(s) of %lld %s; "
               "VMEM %llu of %llu KiB; A %s; B %s%s%s",
               (long long)G, (long long)M, (long long)K, (long long)K, (long long)N,
               (long long)nMb_, (long long)Mb, b->t.acc_rows, (long long)nN, (long long)Nt, nm,
               (long long)nK, (long long)Kt,
               Kc < Kp ? "streamed in chunks (the whole K does not fit VMEM)"
                       : "resident, accumulated in the MXU",
               (unsigned long long)(vtotal >> 10), (unsigned long long)(b->t.vmem_bytes >> 10),
               av       ? "gathered into VMEM by DMA (no patch matrix)"
               : mm->at ? (a32 ? "stored [K,M] f32, transposed through the transpose buffer "
                                 "and converted to bf16 in VMEM"
                               : "stored [K,M], transposed through the transpose buffer in VMEM")
               : a32    ? "f32, converted to bf16 in VMEM"
                        : "bf16",
               bt ? "stored [N,K], loaded transposed (mwtt)" : "stored [K,N]",
               once ? ", f32 converted once by the first row block (its f32 panels do not fit)"
                    : b32 ? ", f32 converted to bf16 in VMEM" : "",
               epi ? "; the epilogue runs on the result tiles in VMEM before their one store"
               : Kc < Kp || staged || av || nMb_ < 2
                   ? ""
                   : "; the next row block's loads go out during the last panel group");
  }
}

/* Emits mm on the resident plan pl (the whole K in VMEM). */
static void mm_resident(tb *b, const tk_mm *mm, const tk_aview *av, const tk_epilogue *ep,
                        const mm_plan *pl) {
  int64_t G = mm->G, M = mm->M, N = mm->N, K = mm->K;
  uint64_t A = mm->A, A_g = mm->A_g, B = mm->B, B_g = mm->B_g, C = mm->C, C_g = mm->C_g;
  bool a32 = mm->a32 || mm->at, b32 = pl->b32, bt = mm->bt, once = pl->once;
  const tk_elem *epi = ep ? ep->e : NULL;
  int dot_in = ep ? ep->dot_in : -1;
  const bool *row = ep ? ep->row : NULL;
  uint64_t b_once = once ? ep->b_once : TK_NO_ONCE;
  int esa = mm->a32 ? 4 : 2;
  int64_t Kt = pl->Kt, Nt = pl->Nt, Kp = pl->Kp, nK = pl->nK, nN = pl->nN, Mb = pl->Mb;
  int nm = pl->nm, nbs = pl->nbs;
  uint64_t apanel = pl->apanel, cblock = pl->cblock, bpanel = pl->bpanel;
  uint64_t sa_slot = pl->sa_slot, sb_slot = pl->sb_slot, sc_slot = pl->sc_slot;
  uint64_t aoff = pl->aoff, boff = pl->boff, coff = pl->coff, saoff = pl->saoff;
  uint64_t sboff = pl->sboff, eoff = pl->eoff, scoff = pl->scoff;
  if (a32 && K % Kt) /* the short last piece */
    tk_vfill(b, saoff + 2 * sa_slot, sa_slot, mm->a32 ? NEG0_F32 : NEG0_BF16X2);
  /* Zero pads: A columns K..Kp and B rows K..Kp, in every slot. */
  if (Kp != K) {
    tk_vfill(b, aoff, 2 * apanel, NEG0_BF16X2);
    tk_vfill(b, boff, (uint64_t)nbs * bpanel, 0);
    /* transposed f32 B: its staged rows' pad columns convert to the +0 pads */
    if (b32 && bt) tk_vfill(b, sboff, (uint64_t)nbs * sb_slot, 0);
  }
  int64_t nMb = (M + Mb - 1) / Mb;
  int64_t blk = 0, panel = 0;
  /* Result stores go on DMA queue 1 when there is one, so that the next
   * block's loads on queue 0 never wait behind a store waiting for an MXU.
   * Queue 1 starts after everything queue 0 did and queue 0 takes its
   * tokens at the end (tb_dma_q1's contract: C is touched by nothing else
   * meanwhile). */
  bool q1 = b->t.dma_queues > 1;
  if (q1) tb_fence(b, ISA_UNIT_DMA0, ISA_UNIT_DMA0 + 1);
  fin_ctx fc = {b, epi, dot_in, row, N, Nt, nbs, coff, cblock, eoff, q1, C, C_g,
                {0, 0, {0}}, epi && epi->nodes[epi->out_node[0]].type == IR_BF16};
  if (epi) tk_plan_make(b, epi, &fc.pl);
  pend_grp pend = {0, 0, 0, 0, 0, 0, 0, 0};
  ld_ctx lc = {b, M, N, K, Kt, Nt, Mb, nK, nN, nMb, G, nm, nbs, A, A_g, esa, a32, mm, B, B_g, b32, bt,
               av, aoff, apanel, boff, bpanel, sboff, sb_slot, saoff, sa_slot, 0, -1,
               b_once, scoff, sc_slot};
  for (int64_t g = 0; g < G && !b->failed; g++)
    for (int64_t mb = 0; mb < nMb && !b->failed; mb++, blk++) {
      int64_t m0 = mb * Mb, rows = M - m0 < Mb ? M - m0 : Mb;
      uint64_t as = aoff + (uint64_t)(blk & 1) * apanel;
      uint64_t asrc = A + (uint64_t)g * A_g + (uint64_t)(m0 * (mm->at ? 1 : K) * esa);
      int64_t p0 = panel; /* global index of panel j = 0 of this block */
      /* Panels go in groups of `mxus`, one per MXU, their instructions
       * interleaved tile by tile so that no MXU queue fills while another
       * MXU starves; B panels load one group in front of their use, the
       * next block's first group (and its first A piece) during this
       * block's last group. */
      for (int64_t j0 = 0; j0 < nN && !b->failed; j0 += nm) {
        int64_t gn = nN - j0 < nm ? nN - j0 : nm;
        ld_upto(&lc, blk, j0 + gn + nm);
        if (epi) /* the epilogue inputs' tiles of this group's panels */
          for (int64_t jj = j0; jj < j0 + gn; jj++) {
            int64_t n0 = jj * Nt, cols = N - n0 < Nt ? N - n0 : Nt;
            int slot = (int)((p0 + jj) % nbs), v = 0;
            for (int in = 0; in < epi->ninputs; in++) {
              if (in == dot_in) continue;
              bool rw = row && row[in];
              int64_t d[10] = {cols * 4, rw ? 1 : rows, 1, 1, N * 4, 0, 0, Nt * 4, 0, 0};
              tb_dma(b, true, eoff + (uint64_t)(v * nbs + slot) * cblock,
                     epi->in_addr[in] + (rw ? (uint64_t)(n0 * 4)
                                            : (uint64_t)(g * M * N * 4) +
                                                  (uint64_t)((m0 * N + n0) * 4)),
                     d);
              v++;
            }
          }
        if (b32)
          for (int64_t jj = j0; jj < j0 + gn; jj++)
            conv_flat(b, sboff + (uint64_t)((p0 + jj) % nbs) * sb_slot,
                      boff + (uint64_t)((p0 + jj) % nbs) * bpanel, bt ? Nt * Kp : K * Nt);
        /* The previous group's epilogue (after these conversions) is
         * spread over this group's K steps. */
        bool conv = once && mb == 0; /* this group's f32 B pieces convert in its K steps */
        for (int64_t k = 0; k < nK; k++) {
          if (pend.total) finish_upto(&fc, &pend, pend.total * (k + 1) / nK);
          /* pieces 0..2 first, then piece k+2 at step k (two tiles before
           * its weight load), each staging load ONCE_SLOTS - 1 pieces
           * before its conversion */
          for (int64_t kk = conv ? (k ? k + 2 : 0) : nK; kk <= k + 2 && kk < nK; kk++)
            for (int64_t jj = j0; jj < j0 + gn; jj++) {
              if (kk == 0)
                for (int64_t q = 0; q < ONCE_SLOTS - 1 && q < nK; q++) once_load(&lc, g, jj, j0, q);
              once_conv(&lc, g, jj, j0, kk, boff + (uint64_t)((p0 + jj) % nbs) * bpanel);
              if (kk + ONCE_SLOTS - 1 < nK) once_load(&lc, g, jj, j0, kk + ONCE_SLOTS - 1);
            }
          if (a32 && j0 == 0) { /* convert piece k, stage piece k+1 */
            a_piece(b, mm, k, Kt, rows, Mb, asrc, as, saoff, sa_slot, false);
            if (k + 1 < nK) a_piece(b, mm, k + 1, Kt, rows, Mb, asrc, as, saoff, sa_slot, true);
          }
          for (int64_t jj = j0; jj < j0 + gn; jj++) {
            int mx = (int)((p0 + jj) % nm);
            uint64_t bs = boff + (uint64_t)((p0 + jj) % nbs) * bpanel;
            if (k == 0) {
              wtile(b, mx, bs, 0, Kp, bt);
              tb_mswap(b, mx);
            }
            if (k + 1 < nK) wtile(b, mx, bs, k + 1, Kp, bt);
            tb_mpush(b, mx, k > 0, as + (uint64_t)(k * Mb * Kt * 2), (uint32_t)(Kt * 2), 0,
                     (int)rows);
            if (k + 1 < nK) tb_mswap(b, mx);
          }
        }
        if (pend.total) finish_upto(&fc, &pend, pend.total);
        for (int64_t jj = j0; jj < j0 + gn; jj++)
          tb_mpopm(b, (int)((p0 + jj) % nm), coff + (uint64_t)((p0 + jj) % nbs) * cblock,
                   (uint32_t)(Nt * 4), 0, (int)rows);
        /* This group's epilogue and stores go between the next group's
         * pushes (after its B conversions), or after the last group;
         * without an epilogue, or with one K step and no conversions to
         * put first, the stores go now. */
        pend_init(&pend, g, m0, rows, p0, j0, gn, N, Nt, epi != NULL);
        if (!epi || (!b32 && nK < 2)) finish_upto(&fc, &pend, pend.total);
      }
      panel += nN;
    }
  if (pend.total) finish_upto(&fc, &pend, pend.total);
  if (q1) tb_dma_q1_drain(b);
}

bool tk_matmul_view_fits(const tb *b, const tk_mm *mm, int nx) {
  mm_plan pl;
  mm_plan_make(b, mm, nx, TK_NO_ONCE, &pl);
  return mm->K > 0 && b->t.mxu_cols % 128 == 0 && nx < 8 && pl.Kc == pl.Kp &&
         pl.vtotal <= b->t.vmem_bytes;
}

static bool mm_core(tb *b, const tk_mm *mm, const tk_aview *av, const tk_epilogue *ep) {
  int64_t G = mm->G, M = mm->M, N = mm->N, K = mm->K;
  const tk_elem *epi = ep ? ep->e : NULL;
  if (b->failed || G <= 0 || M <= 0 || N <= 0) return true;
  int nx = epi ? epi->ninputs - 1 : 0; /* epilogue inputs besides the dot */
  if (epi && (K == 0 || b->t.mxu_cols % 128 || epi->ninputs > 8)) return false;
  if (K == 0) {
    for (int64_t g = 0; g < G; g++)
      tk_fill(b, mm->C + (uint64_t)g * mm->C_g, M * N, 4, 0);
    return true;
  }
  mm_plan pl;
  mm_plan_make(b, mm, nx, ep ? ep->b_once : TK_NO_ONCE, &pl);
  /* f32 operands are converted in VMEM only by the resident plan. */
  if ((mm->a32 || mm->at || pl.b32 || pl.once || av || epi) &&
      (pl.Kc < pl.Kp || pl.vtotal > b->t.vmem_bytes)) {
    tb_explain(b,
               "matmul %lldx[%lld,%lld]x[%lld,%lld]: no resident plan for %s: K = %lld "
               "does not fit VMEM whole (%llu of %llu KiB)",
               (long long)G, (long long)M, (long long)K, (long long)K, (long long)N,
               epi  ? "the epilogue"
               : av ? "a gathered A view"
                    : "operands converted in VMEM",
               (long long)K, (unsigned long long)(pl.vtotal >> 10),
               (unsigned long long)(b->t.vmem_bytes >> 10));
    return false;
  }
  if (!tb_vmem_fits(b, pl.vtotal, "a matmul's tiles")) return true;
  mm_explain(b, mm, av, epi, &pl);
  if (pl.Kc < pl.Kp)
    chunked(b, mm, pl.Mb, pl.Kc, pl.apanel, pl.bpanel, pl.boff, pl.coff);
  else
    mm_resident(b, mm, av, ep, &pl);
  return true;
}
