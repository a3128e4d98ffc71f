/* sync.c: counting semaphores. A signal adds tokens stamped with the cycle
 * it takes effect; a wait takes the earliest tokens and may proceed at the
 * latest of their stamps. Waits are resolved in program order, so a wait
 * can only be satisfied by signals issued before it: a wait that finds too
 * few tokens can never complete and faults as a deadlock. More than
 * EMU_SEM_MAX pending tokens on one semaphore is a fault too.
 *
 * Signals that come over ICI (another core's dmaput, or this core's own)
 * are kept apart, per semaphore, and only `iwait` sees them (and sees
 * nothing else): it takes the earliest, and is decided only once no
 * signal still to come can arrive before the ones it takes
 * (emu_isem_wait and the bound of ici.c). */
#include "emu.h"

#include <string.h>

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

static int push(emu_machine *m, emu_sem *q, int sem, uint32_t count, emu_time t, int unit) {
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

int emu_sem_signal(emu_machine *m, int sem, uint32_t count, emu_time t, int unit) {
  return push(m, &m->sem[sem], sem, count, t, unit);
}

int emu_isem_signal(emu_machine *m, int sem, emu_time t) {
  return push(m, &m->isem[sem], sem, 1, t, EMU_UNIT_ICI);
}

static emu_token pop(emu_sem *q) {
  emu_token x = q->heap[0];
  q->heap[0] = q->heap[--q->n];
  sift_down(q->heap, q->n, 0);
  return x;
}

/* The count-th earliest stamp of q (count <= q->n), from a copy of the
 * heap; -1 when memory runs out. */
static int nth_stamp(emu_machine *m, const emu_sem *q, uint32_t count, emu_time *out) {
  if (count == 1) {
    *out = q->heap[0].t;
    return 0;
  }
  emu_token *h = rt_alloc(&m->alloc, (size_t)q->n * sizeof *h);
  if (!h) return -1;
  memcpy(h, q->heap, (size_t)q->n * sizeof *h);
  emu_sem c = {h, q->n, q->n};
  emu_time t = 0;
  for (uint32_t i = 0; i < count; i++) t = pop(&c).t;
  rt_free(&m->alloc, h);
  *out = t;
  return 0;
}

int emu_isem_wait(emu_machine *m, int sem, uint32_t count, emu_time bound, emu_time *ready,
                  emu_time *nth) {
  emu_sem *q = &m->isem[sem];
  emu_time t = UINT64_MAX;
  if (q->n >= count && nth_stamp(m, q, count, &t)) {
    emu_fail(m, EMU_FAULT_OOM, "out of memory (host)");
    return -1;
  }
  if (nth) *nth = t;
  if (t == UINT64_MAX || t >= bound) return 0;
  for (uint32_t i = 0; i < count; i++) pop(q);
  *ready = t;
  return 1;
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
    emu_token x = pop(q);
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
    m->sem[i].n = m->isem[i].n = 0;
}
