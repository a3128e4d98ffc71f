/* dma.c: the DMA queues: HBM <-> VMEM copies described by a descriptor of
 * ten SMEM words at the byte address in the third register operand:
 *   [0] run      contiguous bytes per innermost copy (>= 1)
 *   [1..3] n1..n3  counts of the three outer dimensions (>= 1)
 *   [4..6] hbm stride of dimensions 1..3 (signed bytes)
 *   [7..9] vmem stride of dimensions 1..3 (signed bytes)
 * Run i3 < n3, i2 < n2, i1 < n1 (i1 fastest) copies `run` bytes between
 * HBM at hb + i1*h1 + i2*h2 + i3*h3 and VMEM at vb + i1*v1 + i2*v2 + i3*v3.
 * Every byte of both sides is range-checked before anything moves. A
 * transfer has at most EMU_DMA_MAX_RUNS runs and moves at most as many
 * bytes as its destination memory holds.
 * Timing (docs/isa.md, "DMA timing"): the transfer holds HBM, shared by all
 * queues of the core, for ceil(bytes * 1024 / bpc_q10) cycles starting when
 * both the queue and HBM are free; the queue may start its next transfer
 * then; the semaphore is signalled dma_latency cycles after the data. */
#include "emu.h"

#include <string.h>

/* Lowest and highest start address over the index box. */
static void span(int64_t base, const int64_t st[3], const uint32_t n[3], int64_t *lo, int64_t *hi) {
  *lo = *hi = base;
  for (int k = 0; k < 3; k++) {
    int64_t e = st[k] * (int64_t)(n[k] - 1);
    if (e < 0)
      *lo += e;
    else
      *hi += e;
  }
}

/* HBM is one resource shared by the queues. Transfers are timed in
 * program order but may happen out of it (a later queue can use HBM while
 * an earlier-issued transfer still waits for its data), so HBM keeps its
 * busy intervals and a transfer takes the first gap of `data` cycles at or
 * after `earliest`. Intervals that end before the front end's cycle can no
 * longer matter (every later transfer starts after it) and are dropped. */
emu_time emu_hbm_slot(emu_machine *m, emu_time earliest, emu_time data) {
  uint32_t k = 0;
  while (k < m->hbm_n && m->hbm_iv[k][1] <= m->now)
    k++;
  if (k) {
    memmove(m->hbm_iv, m->hbm_iv + k, (m->hbm_n - k) * sizeof *m->hbm_iv);
    m->hbm_n -= k;
  }
  emu_time t = earliest;
  for (uint32_t i = 0; i < m->hbm_n; i++) {
    if (m->hbm_iv[i][1] <= t) continue;
    if (m->hbm_iv[i][0] >= t + data) break;
    t = m->hbm_iv[i][1];
  }
  return t;
}

void emu_hbm_reserve(emu_machine *m, emu_time s, emu_time e) {
  if (m->hbm_n == m->hbm_cap) {
    /* Cannot happen within the bound of emu_create; keep the latest. */
    memmove(m->hbm_iv, m->hbm_iv + 1, (m->hbm_n - 1) * sizeof *m->hbm_iv);
    m->hbm_n--;
  }
  emu_iv_insert(m->hbm_iv, &m->hbm_n, s, e);
}

void emu_iv_insert(emu_time (*iv)[2], uint32_t *n, emu_time s, emu_time e) {
  uint32_t i = *n;
  while (i > 0 && iv[i - 1][0] > s) {
    iv[i][0] = iv[i - 1][0];
    iv[i][1] = iv[i - 1][1];
    i--;
  }
  iv[i][0] = s;
  iv[i][1] = e;
  (*n)++;
}

int emu_dma_desc(emu_machine *m, const char *mn, uint32_t da, int nwords, uint64_t dst_size,
                 emu_desc *d, uint32_t *extra) {
  if (emu_check_range(m, "DMA descriptor (SMEM)", da, 4u * (uint32_t)nwords, m->t.smem_bytes, 4))
    return -1;
  uint32_t w[ISA_PUT_DESC_WORDS] = {0};
  memcpy(w, m->smem + da, 4u * (uint32_t)nwords);
  d->run = w[0];
  for (int k = 0; k < 3; k++) {
    d->n[k] = w[1 + k];
    d->a[k] = (int32_t)w[4 + k];
    d->b[k] = (int32_t)w[7 + k];
  }
  if (extra) *extra = w[10];
  if (d->run == 0 || d->run > (1u << 30) || !d->n[0] || !d->n[1] || !d->n[2])
    return emu_fail(m, EMU_FAULT_OPERAND,
                    "%s: descriptor at SMEM %u has a zero or huge size "
                    "(run %u, counts %u x %u x %u)",
                    mn, da, d->run, d->n[0], d->n[1], d->n[2]);
  uint64_t count = (uint64_t)d->n[0] * d->n[1] * d->n[2];
  /* Bounds that keep every DMA's host work proportional to real data: at
   * most 2^24 runs, and no more bytes than the destination memory holds
   * (a transfer writing more must overwrite itself). */
  if (count > EMU_DMA_MAX_RUNS)
    return emu_fail(m, EMU_FAULT_OPERAND, "%s: %llu runs exceed %u per transfer", mn,
                    (unsigned long long)count, EMU_DMA_MAX_RUNS);
  d->bytes = count * d->run;
  if (d->bytes > dst_size)
    return emu_fail(m, EMU_FAULT_OPERAND,
                    "%s: %llu bytes exceed the %llu bytes of its destination memory", mn,
                    (unsigned long long)d->bytes, (unsigned long long)dst_size);
  return 0;
}

int emu_dma_box_check(emu_machine *m, const char *what, uint32_t base, const int64_t st[3],
                      const emu_desc *d, uint64_t size) {
  int64_t lo, hi;
  span(base, st, d->n, &lo, &hi);
  return emu_check_range(m, what, lo, (uint64_t)(hi - lo) + d->run, size, 1);
}

int emu_dma_exec(emu_machine *m, const isa_inst *in, emu_time earliest, emu_time *start,
                 emu_time *occ, emu_time *lat) {
  int load = in->op == OP_DMALD;
  const char *mn = load ? "dmald" : "dmast";
  uint32_t vb = m->s[in->a], hb = m->s[in->b], da = m->s[in->c];
  emu_desc d;
  if (emu_dma_desc(m, mn, da, 10, load ? m->t.vmem_bytes : m->hbm_bytes, &d, NULL)) return -1;
  uint32_t run = d.run;
  const uint32_t *n = d.n;
  const int64_t *hs = d.a, *vs = d.b;
  uint64_t bytes = d.bytes;
  if (emu_dma_box_check(m, load ? "dmald HBM source" : "dmast HBM destination", hb, hs, &d,
                        m->hbm_bytes) ||
      emu_dma_box_check(m, load ? "dmald VMEM destination" : "dmast VMEM source", vb, vs, &d,
                        m->t.vmem_bytes))
    return -1;
  /* Timing. */
  emu_stats *st = m->st;
  emu_time data = tgt_hbm_cycles(&m->t, bytes);
  if (data == 0) data = 1;
  emu_time hstart = emu_hbm_slot(m, earliest, data);
  if (hstart > earliest) st->units[ISA_UNIT_DMA0 + in->x].stall_hbm += hstart - earliest;
  int u = ISA_UNIT_DMA0 + in->x;
  emu_time done = hstart + data + (emu_time)m->t.dma_latency;
  /* A transfer that cannot finish within the cycle limit stops the run
   * before the host spends time copying it. */
  if (m->cycle_limit && hstart + data >= m->cycle_limit) {
    m->now = hstart;
    return emu_fail(m, EMU_FAULT_CYCLES, "cycle limit of %llu reached by a %llu-byte DMA",
                    (unsigned long long)m->cycle_limit, (unsigned long long)bytes);
  }
  for (uint32_t i3 = 0; i3 < n[2]; i3++)
    for (uint32_t i2 = 0; i2 < n[1]; i2++) {
      int64_t h = (int64_t)hb + hs[1] * i2 + hs[2] * i3;
      int64_t v = (int64_t)vb + vs[1] * i2 + vs[2] * i3;
      for (uint32_t i1 = 0; i1 < n[0]; i1++, h += hs[0], v += vs[0]) {
        /* The source is read while the data moves; the destination is
         * written until the transfer completes. */
        if (emu_hazard(m, load ? 1 : 0, 0, (uint64_t)(load ? h : v), run, u, hstart,
                       hstart + data) ||
            emu_hazard(m, load ? 0 : 1, 1, (uint64_t)(load ? v : h), run, u, hstart, done))
          return -1;
        if (load)
          memmove(m->vmem + v, m->hbm + h, run);
        else
          memmove(m->hbm + h, m->vmem + v, run);
      }
    }

  emu_hbm_reserve(m, hstart, hstart + data);
  *start = hstart;
  *occ = data;
  *lat = data + (emu_time)m->t.dma_latency;
  st->hbm_busy_cycles += data;
  st->dma_transfers++;
  if (load)
    st->hbm_read_bytes += bytes;
  else
    st->hbm_write_bytes += bytes;
  return emu_sem_signal(m, in->d, 1, hstart + *lat, ISA_UNIT_DMA0 + in->x);
}
