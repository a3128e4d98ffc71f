/* sync.c: counting semaphores. A signal adds tokens stamped with the cycle
 * it takes effect; a wait takes the earliest tokens and may proceed at the
 * latest of their stamps. Waits are resolved in program order, so a wait
 * can only be satisfied by signals issued before it: a wait that finds too
 * few tokens can never complete and faults as a deadlock. More than
 * EMU_SEM_MAX pending tokens on one semaphore is a fault too. */
#include "emu.h"

static void sift_up(emu_token *h, uint32_t i) {
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (h[p].t <= h[i].t) break;
    emu_token x = h[p];
    h[p] = h[i];
    h[i] = x;
    i = p;
  }
}

static void sift_down(emu_token *h, uint32_t n, uint32_t i) {
  for (;;) {
    uint32_t l = 2 * i + 1, r = l + 1, s = i;
    if (l < n && h[l].t < h[s].t) s = l;
    if (r < n && h[r].t < h[s].t) s = r;
    if (s == i) return;
    emu_token x = h[s];
    h[s] = h[i];
    h[i] = x;
    i = s;
  }
}

int emu_sem_signal(emu_machine *m, int sem, uint32_t count, emu_time t, int unit) {
  emu_sem *q = &m->sem[sem];
  if ((uint64_t)q->n + count > EMU_SEM_MAX)
    return emu_fail(m, EMU_FAULT_SEMAPHORE,
                    "semaphore %d overflows: more than %d signals not yet "
                    "waited for",
                    sem, EMU_SEM_MAX);
  if (q->n + count > q->cap) {
    uint32_t nc = q->cap ? q->cap : 16;
    while (nc < q->n + count)
      nc *= 2;
    emu_token *nh = rt_alloc(&m->alloc, (size_t)nc * sizeof *nh);
    if (!nh) return emu_fail(m, EMU_FAULT_OOM, "out of memory (host)");
    for (uint32_t i = 0; i < q->n; i++)
      nh[i] = q->heap[i];
    rt_free(&m->alloc, q->heap);
    q->heap = nh;
    q->cap = nc;
  }
  for (uint32_t i = 0; i < count; i++) {
    q->heap[q->n] = (emu_token){t, (uint8_t)unit};
    sift_up(q->heap, q->n);
    q->n++;
  }
  return 0;
}

int emu_sem_wait(emu_machine *m, int sem, uint32_t count, emu_time *ready, int *from_dma) {
  emu_sem *q = &m->sem[sem];
  if (q->n < count)
    return emu_fail(m, EMU_FAULT_SEMAPHORE,
                    "wait for %u on semaphore %d can never complete: only %u "
                    "signals were issued before it (deadlock)",
                    count, sem, q->n);
  emu_time t = 0;
  int dma = 0;
  for (uint32_t i = 0; i < count; i++) {
    emu_token x = q->heap[0];
    q->heap[0] = q->heap[--q->n];
    sift_down(q->heap, q->n, 0);
    if (x.t >= t) {
      t = x.t;
      dma = x.unit >= ISA_UNIT_DMA0;
    }
  }
  *ready = t;
  *from_dma = dma;
  return 0;
}

void emu_sem_reset(emu_machine *m) {
  for (int i = 0; i < TGT_SEMS; i++)
    m->sem[i].n = 0;
}
