/* ici.c: many cores and the interconnect (docs/isa.md, "ICI transfers"
 * and "Many cores").
 *
 * A dmaput reads its source on the sending core when it issues (values in
 * program order, like every instruction) and its sending queue holds for
 * the link cycles of the data; the sender's semaphore is signalled when the
 * source has been read. The transfer then waits in the core's outbox for
 * the interconnect: between rounds (below) the run routes every outbox
 * transfer, in (issue cycle, core, sequence) order, over the chips' 2-D
 * torus (dimension order: columns first, then rows, the shorter way round,
 * ties the positive way), takes the first interval of its link cycles at
 * or after its start in which every link of the route is free (two
 * transfers on one link take turns), writes the data into the destination
 * core's memory and signals the destination's semaphore when the last
 * byte has crossed every hop: arrival = link start + link cycles + hops x
 * ici_latency.
 *
 * Determinism: conservative parallel simulation in rounds. Every core's
 * front end has a cycle T; a core blocked on a `iwait` that needs
 * signals has a lower bound of the count-th earliest signal it holds (none:
 * infinite); a halted core is infinite. With M the least of these, no core
 * can still issue a transfer before M, and none arrives before M + L (L =
 * ici_latency, at least 1, every route has at least one hop). So in a round
 * every core runs on its own host thread until its front end reaches
 * bound = M + L, and a `iwait` is decided only when the signals it
 * takes arrive before bound: then no signal that is still to come could
 * have been earlier. What a core does in a round depends only on its state
 * and the bound, and the routing between rounds happens in one thread in a
 * fixed order, so values and cycles do not depend on the number of host
 * threads or on their timing. Each round lets the least core run at least
 * one instruction or decide its wait; when every running core is blocked
 * with too few signals and nothing is in flight, no core can ever signal
 * them: the run stops with a deadlock fault on the lowest such core. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "ici.h"

static emu_time tmax(emu_time a, emu_time b) { return a > b ? a : b; }

/* ---- sending ---------------------------------------------------------- */

static int outbox_push(emu_machine *m, const emu_put *p) {
  if (m->nout == m->capout) {
    uint32_t nc = m->capout ? 2 * m->capout : 16;
    emu_put *o = rt_alloc(&m->alloc, (size_t)nc * sizeof *o);
    if (!o) return -1;
    if (m->nout) memcpy(o, m->out, (size_t)m->nout * sizeof *o);
    rt_free(&m->alloc, m->out);
    m->out = o;
    m->capout = nc;
  }
  m->out[m->nout++] = *p;
  return 0;
}

int emu_put_exec(emu_machine *m, const isa_inst *in, emu_time earliest, emu_time *start,
                 emu_time *occ, emu_time *lat) {
  uint32_t sa = m->s[in->a], sb = m->s[in->b], da = m->s[in->c];
  uint32_t flags = (uint32_t)in->imm;
  int src_vmem = (flags & ISA_PUT_SRC_VMEM) != 0, dst_vmem = (flags & ISA_PUT_DST_VMEM) != 0;
  uint64_t src_size = src_vmem ? m->t.vmem_bytes : m->hbm_bytes;
  uint64_t dst_size = dst_vmem ? m->t.vmem_bytes : m->hbm_bytes;
  emu_desc d;
  uint32_t dst;
  if (emu_dma_desc(m, "dmaput", da, ISA_PUT_DESC_WORDS, dst_size, &d, &dst)) return -1;
  if (!m->ici)
    return emu_fail(m, EMU_FAULT_CORE,
                    "dmaput: this run has no interconnect (run the program on every core of "
                    "a device)");
  if (dst >= (uint32_t)m->ncores)
    return emu_fail(m, EMU_FAULT_CORE, "dmaput: destination core %u does not exist (%d running)",
                    dst, m->ncores);
  /* Every core runs the same program: the destination's memories have
   * this core's sizes. */
  if (emu_dma_box_check(m, src_vmem ? "dmaput VMEM source" : "dmaput HBM source", sa, d.a, &d,
                        src_size) ||
      emu_dma_box_check(m, dst_vmem ? "dmaput remote VMEM destination" : "dmaput remote HBM destination",
                        sb, d.b, &d, dst_size))
    return -1;
  emu_stats *st = m->st;
  int u = ISA_UNIT_DMA0 + in->x;
  emu_time issue = m->now;
  emu_time link = tgt_ici_cycles(&m->t, d.bytes);
  emu_time s = earliest, o = link;
  if (!src_vmem) { /* the source streams out of HBM, shared with the other queues */
    emu_time h = tgt_hbm_cycles(&m->t, d.bytes);
    if (h == 0) h = 1;
    s = emu_hbm_slot(m, earliest, h);
    if (s > earliest) st->units[u].stall_hbm += s - earliest;
    o = tmax(link, h);
    emu_hbm_reserve(m, s, s + h);
    st->hbm_busy_cycles += h;
    st->hbm_read_bytes += d.bytes;
  }
  if (m->cycle_limit && s + o >= m->cycle_limit) {
    m->now = s;
    return emu_fail(m, EMU_FAULT_CYCLES, "cycle limit of %llu reached by a %llu-byte dmaput",
                    (unsigned long long)m->cycle_limit, (unsigned long long)d.bytes);
  }
  uint8_t *data = rt_alloc(&m->alloc, (size_t)d.bytes);
  if (!data) return emu_fail(m, EMU_FAULT_OOM, "out of memory (host) for a dmaput");
  const uint8_t *mem = src_vmem ? m->vmem : m->hbm;
  uint8_t *w = data;
  for (uint32_t i3 = 0; i3 < d.n[2]; i3++)
    for (uint32_t i2 = 0; i2 < d.n[1]; i2++) {
      int64_t a = (int64_t)sa + d.a[1] * i2 + d.a[2] * i3;
      for (uint32_t i1 = 0; i1 < d.n[0]; i1++, a += d.a[0], w += d.run) {
        if (emu_hazard(m, src_vmem ? 0 : 1, 0, (uint64_t)a, d.run, u, s, s + o)) {
          rt_free(&m->alloc, data);
          return -1;
        }
        memcpy(w, mem + a, d.run);
      }
    }
  emu_put p = {issue, s, link, m->put_seq++, m->core, (int)dst, (int)(flags & ISA_PUT_SEM_MASK),
               dst_vmem, sb, d.run, {d.n[0], d.n[1], d.n[2]}, {d.b[0], d.b[1], d.b[2]}, d.bytes,
               data};
  if (outbox_push(m, &p)) {
    rt_free(&m->alloc, data);
    return emu_fail(m, EMU_FAULT_OOM, "out of memory (host) for a dmaput");
  }
  *start = s;
  *occ = o;
  *lat = o;
  st->dma_transfers++;
  m->ist.puts++;
  m->ist.sent_bytes += d.bytes;
  m->ist.send_cycles += o;
  return emu_sem_signal(m, in->d, 1, s + o, u);
}

/* ---- the torus -------------------------------------------------------- */

typedef struct emu_link {
  emu_time (*iv)[2]; /* busy intervals [start, end), sorted by start */
  uint32_t n, cap;
  emu_ici_link_stats st;
} emu_link;

struct emu_ici {
  tgt_target t;
  rt_allocator alloc;
  int n; /* cores */
  int lo, hi; /* this process runs cores [lo, hi) (all of them without peers) */
  emu_machine **m;
  tpurt_peers_t peers; /* nranks 0: no peers */
  char peer_err[256];
  /* per rank: the round message to it (buffer, capacity, what to send)
   * and the one from it */
  uint8_t **pbuf;
  size_t *pcap, *plen, *prlen;
  const void **psend, **precv;
  int nlinks, per_chip;
  emu_link *links;
  int log;            /* record link events (emu_ici_log_links) */
  emu_ici_event *ev;  /* recorded so far */
  size_t nev, capev;
  int *state; /* per core: EMU_STEP_* of its last step */
  emu_time bound;
  /* the host threads of a run */
  int nthreads;
  pthread_mutex_t mu;
  pthread_cond_t go, done;
  uint64_t gen;
  int next, active, stop;
};

/* Link ids: chip k owns per_chip = 4 + cores_per_chip links from
 * k * per_chip: 0 column+, 1 column-, 2 row+, 3 row-, then the on-chip
 * link out of each of its cores. */
enum { DIR_XP, DIR_XM, DIR_YP, DIR_YM };

int emu_ici_route(const tgt_target *t, int src, int dst, int *links, int max) {
  int cpc = t->cores_per_chip, per = TGT_ICI_LINKS + cpc;
  int c0 = src / cpc, c1 = dst / cpc, n = 0;
  if (src == dst) return 0;
  if (c0 == c1) {
    links[0] = c0 * per + TGT_ICI_LINKS + src % cpc;
    return 1;
  }
  int X = t->topo_x, Y = t->topo_y;
  int x = c0 % X, y = c0 / X, x1 = c1 % X, y1 = c1 / X;
  int dx = ((x1 - x) % X + X) % X, dy = ((y1 - y) % Y + Y) % Y;
  int sx = dx <= X - dx ? 1 : -1, sy = dy <= Y - dy ? 1 : -1;
  int kx = sx > 0 ? dx : X - dx, ky = sy > 0 ? dy : Y - dy;
  for (int i = 0; i < kx && n < max; i++) {
    links[n++] = (y * X + x) * per + (sx > 0 ? DIR_XP : DIR_XM);
    x = ((x + sx) % X + X) % X;
  }
  for (int i = 0; i < ky && n < max; i++) {
    links[n++] = (y * X + x) * per + (sy > 0 ? DIR_YP : DIR_YM);
    y = ((y + sy) % Y + Y) % Y;
  }
  return n;
}

void emu_ici_link_name(const tgt_target *t, int link, char *buf, size_t n) {
  int per = TGT_ICI_LINKS + t->cores_per_chip, chip = link / per, k = link % per;
  static const char *const dirs[] = {"x+", "x-", "y+", "y-"};
  if (k < TGT_ICI_LINKS)
    snprintf(buf, n, "chip%d(%d,%d) %s", chip, chip % t->topo_x, chip / t->topo_x, dirs[k]);
  else
    snprintf(buf, n, "chip%d core%d on-chip", chip, chip * t->cores_per_chip + k - TGT_ICI_LINKS);
}

void emu_ici_link_ends(const tgt_target *t, int link, int *chip, int *to_chip, int *core) {
  int per = TGT_ICI_LINKS + t->cores_per_chip, k = link % per, X = t->topo_x, Y = t->topo_y;
  *chip = link / per;
  *to_chip = *chip;
  *core = -1;
  if (k >= TGT_ICI_LINKS) {
    *core = *chip * t->cores_per_chip + k - TGT_ICI_LINKS;
    return;
  }
  int x = *chip % X, y = *chip / X;
  if (k == DIR_XP || k == DIR_XM) x = ((x + (k == DIR_XP ? 1 : -1)) % X + X) % X;
  else y = ((y + (k == DIR_YP ? 1 : -1)) % Y + Y) % Y;
  *to_chip = y * X + x;
}

/* The first t >= s at which every link of the route is free for occ. */
static emu_time link_slot(const emu_ici *x, const int *route, int hops, emu_time s,
                          emu_time occ) {
  for (int moved = 1; moved;) {
    moved = 0;
    for (int h = 0; h < hops; h++) {
      const emu_link *l = &x->links[route[h]];
      for (uint32_t i = 0; i < l->n; i++) {
        if (l->iv[i][1] <= s) continue;
        if (l->iv[i][0] >= s + occ) break;
        s = l->iv[i][1];
        moved = 1;
      }
    }
  }
  return s;
}

/* Records one transfer's occupancy of one link; -1 out of memory. */
static int log_event(emu_ici *x, const emu_put *p, const int *route, int h, emu_time s) {
  if (x->nev == x->capev) {
    size_t nc = x->capev ? 2 * x->capev : 64;
    emu_ici_event *e = rt_alloc(&x->alloc, nc * sizeof *e);
    if (!e) return -1;
    if (x->nev) memcpy(e, x->ev, x->nev * sizeof *e);
    rt_free(&x->alloc, x->ev);
    x->ev = e;
    x->capev = nc;
  }
  x->ev[x->nev++] = (emu_ici_event){s, p->occ, p->bytes, route[h], p->src, p->dst, h};
  return 0;
}

void emu_ici_log_links(emu_ici *x) { x->log = 1; }

emu_ici_event *emu_ici_take_events(emu_ici *x, size_t *n) {
  emu_ici_event *e = x->ev;
  *n = x->nev;
  x->ev = NULL;
  x->nev = x->capev = 0;
  if (!*n) {
    rt_free(&x->alloc, e);
    return NULL;
  }
  return e;
}

static int link_reserve(emu_ici *x, emu_link *l, emu_time s, emu_time e) {
  if (l->n == l->cap) {
    uint32_t nc = l->cap ? 2 * l->cap : 8;
    emu_time(*iv)[2] = rt_alloc(&x->alloc, (size_t)nc * sizeof *iv);
    if (!iv) return -1;
    if (l->n) memcpy(iv, l->iv, (size_t)l->n * sizeof *iv);
    rt_free(&x->alloc, l->iv);
    l->iv = iv;
    l->cap = nc;
  }
  emu_iv_insert(l->iv, &l->n, s, e);
  return 0;
}

/* Drops intervals that end by `before`: no transfer starts earlier. */
static void links_prune(emu_ici *x, emu_time before) {
  for (int k = 0; k < x->nlinks; k++) {
    emu_link *l = &x->links[k];
    uint32_t j = 0;
    for (uint32_t i = 0; i < l->n; i++)
      if (l->iv[i][1] > before) {
        l->iv[j][0] = l->iv[i][0];
        l->iv[j][1] = l->iv[i][1];
        j++;
      }
    l->n = j;
  }
}

/* ---- delivering ------------------------------------------------------- */

static int put_cmp(const emu_put *p, const emu_put *q) {
  if (p->issue != q->issue) return p->issue < q->issue ? -1 : 1;
  if (p->src != q->src) return p->src < q->src ? -1 : 1;
  return p->seq < q->seq ? -1 : p->seq > q->seq;
}

static int put_order(const void *a, const void *b) {
  return put_cmp(*(const emu_put *const *)a, *(const emu_put *const *)b);
}

/* Routes one transfer, writes its data into the destination and signals
 * it. -1 when the destination faults (a race with its own accesses, too
 * many signals) or memory runs out; *who is the faulting core. */
static int deliver(emu_ici *x, const emu_put *p, int *who) {
  int route[EMU_ICI_MAX_HOPS];
  int hops = emu_ici_route(&x->t, p->src, p->dst, route, EMU_ICI_MAX_HOPS);
  emu_time s = link_slot(x, route, hops, p->start, p->occ);
  emu_time arrive = s + p->occ + (emu_time)(hops ? hops : 1) * (emu_time)x->t.ici_latency;
  int local = p->dst >= x->lo && p->dst < x->hi;
  /* another rank's core: that rank writes it; host memory faults land on
   * this rank's first core */
  emu_machine *d = x->m[local ? p->dst : x->lo];
  *who = local ? p->dst : x->lo;
  for (int h = 0; h < hops; h++) {
    emu_link *l = &x->links[route[h]];
    if (link_reserve(x, l, s, s + p->occ) || (x->log && log_event(x, p, route, h, s)))
      return emu_fail(d, EMU_FAULT_OOM, "out of memory (host)");
    l->st.transfers++;
    l->st.bytes += p->bytes;
    l->st.busy_cycles += p->occ;
  }
  if (!local) return 0;
  uint8_t *mem = p->dst_vmem ? d->vmem : d->hbm;
  const uint8_t *r = p->data;
  for (uint32_t i3 = 0; i3 < p->n[2]; i3++)
    for (uint32_t i2 = 0; i2 < p->n[1]; i2++) {
      int64_t a = (int64_t)p->dbase + p->st[1] * i2 + p->st[2] * i3;
      for (uint32_t i1 = 0; i1 < p->n[0]; i1++, a += p->st[0], r += p->run) {
        if (emu_hazard(d, p->dst_vmem ? 0 : 1, 1, (uint64_t)a, p->run, EMU_UNIT_ICI, s, arrive))
          return -1;
        memmove(mem + a, r, p->run);
      }
    }
  d->ist.received_bytes += p->bytes;
  return emu_isem_signal(d, p->sem, arrive);
}

/* Routes every core's outbox in order. 0, or -1 with *who faulted. */
static int route_all(emu_ici *x, int *who) {
  size_t n = 0;
  for (int c = 0; c < x->n; c++) n += x->m[c]->nout;
  if (!n) return 0;
  const emu_put **v = rt_alloc(&x->alloc, n * sizeof *v);
  int rc = 0;
  if (!v) {
    *who = 0;
    rc = emu_fail(x->m[0], EMU_FAULT_OOM, "out of memory (host) routing transfers");
  } else {
    size_t k = 0;
    for (int c = 0; c < x->n; c++)
      for (uint32_t i = 0; i < x->m[c]->nout; i++) v[k++] = &x->m[c]->out[i];
    qsort(v, n, sizeof *v, put_order);
    for (size_t i = 0; i < n && !rc; i++) rc = deliver(x, v[i], who);
    rt_free(&x->alloc, v);
  }
  for (int c = 0; c < x->n; c++) {
    emu_machine *m = x->m[c];
    for (uint32_t i = 0; i < m->nout; i++) rt_free(&m->alloc, m->out[i].data);
    m->nout = 0;
  }
  return rc;
}

/* ---- rounds ----------------------------------------------------------- */

/* The earliest cycle at which core c could still issue anything. */
static emu_time lower_bound(emu_ici *x, int c) {
  emu_machine *m = x->m[c];
  if (x->state[c] == EMU_STEP_HALT) return UINT64_MAX;
  if (x->state[c] != EMU_STEP_BLOCKED) return m->fe_t;
  emu_time ready, nth = UINT64_MAX;
  /* bound 0: only asks for the count-th earliest signal. */
  emu_isem_wait(m, m->fe_blocked_sem, m->fe_blocked_n, 0, &ready, &nth);
  return tmax(nth, m->fe_t);
}

static void run_cores(emu_ici *x) {
  for (;;) {
    pthread_mutex_lock(&x->mu);
    int c = x->next < x->hi ? x->next++ : -1;
    pthread_mutex_unlock(&x->mu);
    if (c < 0) return;
    if (x->state[c] != EMU_STEP_HALT) x->state[c] = emu_advance(x->m[c], x->bound);
  }
}

static void *worker(void *arg) {
  emu_ici *x = arg;
  uint64_t seen = 0;
  pthread_mutex_lock(&x->mu);
  for (;;) {
    while (x->gen == seen && !x->stop)
      pthread_cond_wait(&x->go, &x->mu);
    if (x->stop) break;
    seen = x->gen;
    pthread_mutex_unlock(&x->mu);
    run_cores(x);
    pthread_mutex_lock(&x->mu);
    if (--x->active == 0) pthread_cond_signal(&x->done);
  }
  pthread_mutex_unlock(&x->mu);
  return NULL;
}

/* One round on every host thread (the caller's included). */
static void round_parallel(emu_ici *x) {
  pthread_mutex_lock(&x->mu);
  x->next = x->lo;
  x->active = x->nthreads;
  x->gen++;
  pthread_cond_broadcast(&x->go);
  pthread_mutex_unlock(&x->mu);
  run_cores(x);
  pthread_mutex_lock(&x->mu);
  if (--x->active == 0) pthread_cond_signal(&x->done);
  while (x->active > 0)
    pthread_cond_wait(&x->done, &x->mu);
  pthread_mutex_unlock(&x->mu);
}

int emu_ici_share(int n, int nranks, int rank, int *lo, int *hi) {
  if (nranks < 1 || n % nranks) return -1;
  *lo = rank * (n / nranks);
  *hi = *lo + n / nranks;
  return 0;
}

emu_ici *emu_ici_create_shared(const tgt_target *t, emu_machine **cores, int n, int threads,
                               const rt_allocator *a, const tpurt_peers_t *peers) {
  int lo = 0, hi = n;
  if (peers && (peers->nranks > EMU_ICI_MAX_RANKS || peers->rank < 0 ||
                peers->rank >= peers->nranks ||
                emu_ici_share(n, peers->nranks, peers->rank, &lo, &hi)))
    return NULL;
  emu_ici *x = rt_calloc(a, 1, sizeof *x);
  if (!x) return NULL;
  x->t = *t;
  if (a) x->alloc = *a;
  x->n = n;
  x->lo = lo;
  x->hi = hi;
  if (peers) x->peers = *peers;
  x->m = cores;
  x->per_chip = TGT_ICI_LINKS + t->cores_per_chip;
  x->nlinks = t->chips * x->per_chip;
  x->links = rt_calloc(a, (size_t)x->nlinks, sizeof *x->links);
  x->state = rt_calloc(a, (size_t)n, sizeof *x->state);
  x->nthreads = threads < 1 ? 1 : threads > hi - lo ? hi - lo : threads;
  if (peers) {
    size_t R = (size_t)peers->nranks;
    x->pbuf = rt_calloc(a, R, sizeof *x->pbuf);
    x->pcap = rt_calloc(a, 3 * R, sizeof *x->pcap);
    x->psend = rt_calloc(a, 2 * R, sizeof *x->psend);
    if (x->pcap) x->plen = x->pcap + R, x->prlen = x->pcap + 2 * R;
    if (x->psend) x->precv = x->psend + R;
  }
  if (!x->links || !x->state || (peers && (!x->pbuf || !x->pcap || !x->psend))) {
    emu_ici_destroy(x);
    return NULL;
  }
  for (int c = lo; c < hi; c++) {
    cores[c]->ici = x;
    cores[c]->core = c;
    cores[c]->ncores = n;
  }
  return x;
}

emu_ici *emu_ici_create(const tgt_target *t, emu_machine **cores, int n, int threads,
                        const rt_allocator *a) {
  return emu_ici_create_shared(t, cores, n, threads, a, NULL);
}

void emu_ici_destroy(emu_ici *x) {
  if (!x) return;
  rt_allocator a = x->alloc;
  for (int k = 0; x->links && k < x->nlinks; k++) rt_free(&a, x->links[k].iv);
  rt_free(&a, x->ev);
  for (int c = x->lo; x->state && c < x->hi; c++) {
    x->m[c]->ici = NULL;
    x->m[c]->core = 0;
    x->m[c]->ncores = 1;
  }
  for (int r = 0; x->pbuf && r < x->peers.nranks; r++) rt_free(&a, x->pbuf[r]);
  rt_free(&a, x->pbuf);
  rt_free(&a, x->pcap);
  rt_free(&a, (void *)x->psend);
  rt_free(&a, x->links);
  rt_free(&a, x->state);
  rt_free(&a, x);
}

int emu_ici_nlinks(const emu_ici *x) { return x->nlinks; }
const char *emu_ici_peer_error(const emu_ici *x) { return x->peer_err; }
const emu_ici_link_stats *emu_ici_link(const emu_ici *x, int link) { return &x->links[link].st; }

/* The lowest of this process's cores blocked on an `iwait`, or -1. */
static int first_blocked(const emu_ici *x) {
  for (int c = x->lo; c < x->hi; c++)
    if (x->state[c] == EMU_STEP_BLOCKED) return c;
  return -1;
}

/* A deadlock: every running core waits for signals no core can send; the
 * fault goes to core c, the lowest blocked one. */
static void deadlock_fault(emu_ici *x, int c) {
  emu_machine *m = x->m[c];
  m->pc = m->fe_pc;
  m->word = m->img->code[m->fe_pc];
  m->now = m->fe_t;
  uint32_t have = m->isem[m->fe_blocked_sem].n;
  emu_fail(m, EMU_FAULT_SEMAPHORE,
           "iwait for %u on semaphore %d can never complete: %u signals are pending "
           "and no core can send more (deadlock across cores)",
           m->fe_blocked_n, m->fe_blocked_sem, have);
}

static int deadlock(emu_ici *x) {
  int c = first_blocked(x);
  if (c < 0) return 0;
  deadlock_fault(x, c);
  return c;
}

/* This process's cores: the least lower bound, *live when one runs. */
static emu_time local_bound(emu_ici *x, int *live) {
  emu_time lo = UINT64_MAX;
  *live = 0;
  for (int c = x->lo; c < x->hi; c++) {
    *live |= x->state[c] != EMU_STEP_HALT;
    emu_time b = lower_bound(x, c);
    if (b < lo) lo = b;
  }
  return lo;
}

/* Runs this process's cores up to the round's bound from the least lower
 * bound lo; returns the first that faulted, or -1. */
static int run_round(emu_ici *x, emu_time lo) {
  links_prune(x, lo);
  emu_time L = (emu_time)x->t.ici_latency;
  x->bound = lo > UINT64_MAX - L ? UINT64_MAX : lo + L;
  if (x->nthreads > 1) {
    round_parallel(x);
  } else {
    x->next = x->lo;
    run_cores(x);
  }
  for (int c = x->lo; c < x->hi; c++)
    if (x->state[c] == EMU_STEP_FAULT) return c;
  return -1;
}

/* The rounds of one run; every core has begun. Returns -1 (fault on core
 * *who) or 0. */
static int rounds(emu_ici *x, int *who) {
  for (;;) {
    int live;
    emu_time lo = local_bound(x, &live);
    if (!live) return 0;
    if (lo == UINT64_MAX) {
      *who = deadlock(x);
      return -1;
    }
    if ((*who = run_round(x, lo)) >= 0) return -1;
    if (route_all(x, who)) return -1;
  }
}

/* ---- cores shared across ranks ---------------------------------------- */

static int peer_fail(emu_ici *x, const char *msg) {
  snprintf(x->peer_err, sizeof x->peer_err, "%s", msg);
  return -2;
}

/* The rank that runs core c. */
static int rank_of(const emu_ici *x, int c) { return c / (x->hi - x->lo); }

/* Grows the send buffer of rank r to hold n bytes; -1 out of memory. */
static int peer_room(emu_ici *x, int r, size_t n) {
  if (n <= x->pcap[r]) return 0;
  size_t nc = x->pcap[r] ? x->pcap[r] : 256;
  while (nc < n)
    nc *= 2;
  uint8_t *b = rt_alloc(&x->alloc, nc);
  if (!b) return -1;
  rt_free(&x->alloc, x->pbuf[r]);
  x->pbuf[r] = b;
  x->pcap[r] = nc;
  return 0;
}

/* Every other rank's message: a header {fault core or UINT64_MAX, count},
 * count transfer descriptors (this rank's cores' outboxes in core and
 * issue order, data NULL), then the data of those whose destination is
 * the receiver's, in the same order. -1 out of memory. */
static int peer_messages(emu_ici *x, int fault, uint64_t *count) {
  int R = x->peers.nranks;
  size_t bytes[EMU_ICI_MAX_RANKS] = {0};
  *count = 0;
  for (int c = x->lo; c < x->hi; c++)
    for (uint32_t i = 0; i < x->m[c]->nout; i++) {
      (*count)++;
      bytes[rank_of(x, x->m[c]->out[i].dst)] += x->m[c]->out[i].bytes;
    }
  uint64_t head[2] = {fault < 0 ? UINT64_MAX : (uint64_t)fault, *count};
  size_t dlen = sizeof head + *count * sizeof(emu_put);
  for (int r = 0; r < R; r++) {
    x->plen[r] = 0;
    x->psend[r] = NULL;
    if (r == x->peers.rank) continue;
    if (peer_room(x, r, dlen + bytes[r])) return -1;
    uint8_t *w = x->pbuf[r];
    memcpy(w, head, sizeof head);
    w += sizeof head;
    for (int c = x->lo; c < x->hi; c++)
      for (uint32_t i = 0; i < x->m[c]->nout; i++, w += sizeof(emu_put)) {
        emu_put p = x->m[c]->out[i];
        p.data = NULL;
        memcpy(w, &p, sizeof p);
      }
    for (int c = x->lo; c < x->hi; c++)
      for (uint32_t i = 0; i < x->m[c]->nout; i++) {
        const emu_put *p = &x->m[c]->out[i];
        if (rank_of(x, p->dst) != r) continue;
        memcpy(w, p->data, (size_t)p->bytes);
        w += p->bytes;
      }
    x->psend[r] = x->pbuf[r];
    x->plen[r] = dlen + bytes[r];
  }
  return 0;
}

/* Every rank's transfers of the round, in one array (data: this rank's
 * own, or the bytes received for this rank's cores, else NULL); the
 * least fault core any rank reported into *fault (-1: none). NULL after
 * setting msg. */
static emu_put *peer_gather(emu_ici *x, uint64_t mine, size_t *total, int *fault, char *msg,
                            size_t msglen) {
  int R = x->peers.nranks, me = x->peers.rank;
  uint64_t n = mine;
  for (int r = 0; r < R; r++) {
    if (r == me) continue;
    uint64_t head[2];
    if (x->prlen[r] < sizeof head) goto bad;
    memcpy(head, x->precv[r], sizeof head);
    if (head[1] > (x->prlen[r] - sizeof head) / sizeof(emu_put)) goto bad;
    if (head[0] != UINT64_MAX && (*fault < 0 || head[0] < (uint64_t)*fault)) *fault = (int)head[0];
    n += head[1];
  }
  emu_put *all = rt_alloc(&x->alloc, (size_t)(n ? n : 1) * sizeof *all);
  if (!all) {
    snprintf(msg, msglen, "out of memory (host) routing transfers");
    return NULL;
  }
  size_t k = 0;
  for (int c = x->lo; c < x->hi; c++)
    for (uint32_t i = 0; i < x->m[c]->nout; i++) all[k++] = x->m[c]->out[i];
  for (int r = 0; r < R; r++) {
    if (r == me) continue;
    const uint8_t *b = x->precv[r];
    uint64_t head[2];
    memcpy(head, b, sizeof head);
    size_t at = sizeof head + (size_t)head[1] * sizeof(emu_put);
    for (uint64_t i = 0; i < head[1]; i++, k++) {
      memcpy(&all[k], b + sizeof head + i * sizeof(emu_put), sizeof(emu_put));
      all[k].data = NULL;
      if (all[k].dst < x->lo || all[k].dst >= x->hi) continue;
      if (all[k].bytes > x->prlen[r] - at) {
        rt_free(&x->alloc, all);
        goto bad;
      }
      all[k].data = (uint8_t *)(uintptr_t)(b + at);
      at += all[k].bytes;
    }
  }
  *total = (size_t)n;
  return all;
bad:
  snprintf(msg, msglen, "a malformed round message from another rank");
  return NULL;
}

static int put_value_order(const void *a, const void *b) { return put_cmp(a, b); }

/* route_all across ranks: every rank routes every transfer over its copy
 * of the links; this rank writes and signals its own cores. 0; -1 with
 * *who when a core faulted in this round's run (on any rank: every rank
 * agrees); 1 with *who when this rank's delivery faulted it; -2 when the
 * peers failed. */
static int route_shared(emu_ici *x, int fault, int *who) {
  char msg[256];
  uint64_t mine = 0;
  if (peer_messages(x, fault, &mine)) return peer_fail(x, "out of memory (host) for a round message");
  if (x->peers.exchange(x->peers.user, x->psend, x->plen, x->precv, x->prlen, msg, sizeof msg))
    return peer_fail(x, msg);
  size_t n = 0;
  emu_put *all = peer_gather(x, mine, &n, &fault, msg, sizeof msg);
  int rc = 0;
  if (!all) {
    rc = peer_fail(x, msg);
  } else if (fault >= 0) {
    *who = fault;
    rc = -1;
  } else {
    qsort(all, n, sizeof *all, put_value_order);
    for (size_t i = 0; i < n && !rc; i++) rc = deliver(x, &all[i], who);
    rc = -rc;
  }
  rt_free(&x->alloc, all);
  for (int c = x->lo; c < x->hi; c++) {
    emu_machine *m = x->m[c];
    for (uint32_t i = 0; i < m->nout; i++) rt_free(&m->alloc, m->out[i].data);
    m->nout = 0;
  }
  return rc;
}

enum { VOTE_FAULT, VOTE_BOUND, VOTE_IDLE, VOTE_BLOCKED, VOTES };

/* rounds() across ranks: before each round the ranks agree on the least
 * fault core (a fault reported by any ends the run), the least lower
 * bound, whether any core runs and the least blocked core (for a
 * deadlock); after it they exchange transfers (route_shared). fault: a
 * core of this rank that faulted beginning, or -1. */
static int rounds_shared(emu_ici *x, int fault, int *who) {
  char msg[256];
  for (;;) {
    int live, b = first_blocked(x);
    uint64_t v[VOTES], g[VOTES];
    v[VOTE_FAULT] = fault < 0 ? UINT64_MAX : (uint64_t)fault;
    v[VOTE_BOUND] = local_bound(x, &live);
    v[VOTE_IDLE] = !live;
    v[VOTE_BLOCKED] = b < 0 ? UINT64_MAX : (uint64_t)b;
    if (x->peers.min(x->peers.user, v, g, VOTES, msg, sizeof msg)) return peer_fail(x, msg);
    if (g[VOTE_FAULT] != UINT64_MAX) {
      *who = (int)g[VOTE_FAULT];
      return -1;
    }
    if (g[VOTE_IDLE]) return 0;
    if (g[VOTE_BOUND] == UINT64_MAX) {
      *who = (int)g[VOTE_BLOCKED];
      if (*who >= x->lo && *who < x->hi) deadlock_fault(x, *who);
      return -1;
    }
    int rc = route_shared(x, run_round(x, g[VOTE_BOUND]), who);
    if (rc < 0) return rc;
    fault = rc ? *who : -1; /* a delivery fault here: the next vote ends the run */
  }
}

int emu_ici_run(emu_ici *x, const tpub_image *img, uint8_t *const *hbm, uint64_t cycle_limit,
                emu_stats *st, emu_fault *f, int *fault_core) {
  int begun = x->lo, rc = 0, who = 0;
  for (; begun < x->hi; begun++) {
    x->state[begun] = EMU_STEP_YIELD;
    if (emu_begin(x->m[begun], img, hbm[begun], cycle_limit, &st[begun], &f[begun])) {
      who = begun;
      rc = -1;
      break;
    }
  }
  pthread_t th[EMU_ICI_MAX_THREADS];
  int nth = 0, want = x->nthreads;
  x->gen = 0;
  x->stop = 0;
  x->next = x->lo;
  pthread_mutex_init(&x->mu, NULL);
  pthread_cond_init(&x->go, NULL);
  pthread_cond_init(&x->done, NULL);
  for (int i = 1; !rc && i < want && i < EMU_ICI_MAX_THREADS; i++) {
    if (pthread_create(&th[nth], NULL, worker, x)) break;
    nth++;
  }
  x->nthreads = nth + 1; /* fewer when the host refused a thread */
  if (x->peers.nranks)
    rc = rounds_shared(x, rc ? who : -1, &who);
  else if (!rc)
    rc = rounds(x, &who);
  x->nthreads = want;
  if (nth) {
    pthread_mutex_lock(&x->mu);
    x->stop = 1;
    pthread_cond_broadcast(&x->go);
    pthread_mutex_unlock(&x->mu);
    for (int i = 0; i < nth; i++) pthread_join(th[i], NULL);
  }
  pthread_mutex_destroy(&x->mu);
  pthread_cond_destroy(&x->go);
  pthread_cond_destroy(&x->done);
  for (int c = x->lo; c < begun; c++) {
    /* A core stopped mid-run (another faulted) counts up to where it is. */
    if (x->state[c] != EMU_STEP_HALT && st[c].cycles < x->m[c]->fe_t) st[c].cycles = x->m[c]->fe_t;
    const emu_ici_stats *is = &x->m[c]->ist; /* the core's interconnect counters, in its stats */
    st[c].ici_puts = is->puts;
    st[c].ici_sent_bytes = is->sent_bytes;
    st[c].ici_received_bytes = is->received_bytes;
    st[c].ici_send_cycles = is->send_cycles;
    st[c].ici_wait_cycles = is->wait_cycles;
    emu_end(x->m[c]);
  }
  *fault_core = who;
  return rc;
}
