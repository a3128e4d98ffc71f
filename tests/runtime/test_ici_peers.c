/* test_ici_peers.c: the emulator's cores shared across "ranks"
 * (emu_ici_create_shared with tpurt_peers_t), the ranks here being threads
 * of one process that meet through an in-memory hub, so the rounds'
 * agreement runs without MPI (tests/mpi runs it over MPI). The ring of
 * tests/runtime/ici_ring.h on 2, 4 and 8 ranks: every core's values,
 * statistics and ICI counters and every link's counters equal the
 * one-process run's, and the cycles are the hand-derived ones (273, 272,
 * 172); a deadlock on core 5 ends every rank with that core named; peers
 * that fail end the run with their message. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "asm.h"
#include "emu.h"
#include "ici.h"
#include "isa.h"
#include "tpub.h"
#include "tpurt.h"

#define TARGET "v3-8,clock=1GHz,ici_bw=64GB/s,ici_latency=100"
#include "tests/runtime/ici_ring.h"

enum { NC = 8, MAXR = 8, NLINKS = 64 };

/* What every rank (thread) shares: the posted messages and votes. */
typedef struct hub {
  pthread_barrier_t b;
  int nranks, fail;
  const void *send[MAXR][MAXR];
  size_t len[MAXR][MAXR];
  uint64_t vote[MAXR][8];
} hub;

typedef struct rank {
  hub *h;
  int r;
  uint8_t *rbuf[MAXR];
} rank;

static int hub_min(void *user, const uint64_t *mine, uint64_t *out, int k, char *msg,
                   size_t msglen) {
  rank *p = user;
  hub *h = p->h;
  memcpy(h->vote[p->r], mine, (size_t)k * sizeof *mine);
  pthread_barrier_wait(&h->b);
  for (int i = 0; i < k; i++) {
    out[i] = mine[i];
    for (int r = 0; r < h->nranks; r++)
      if (h->vote[r][i] < out[i]) out[i] = h->vote[r][i];
  }
  pthread_barrier_wait(&h->b);
  return 0;
}

static int hub_exchange(void *user, const void *const *send, const size_t *len, const void **recv,
                        size_t *rlen, char *msg, size_t msglen) {
  rank *p = user;
  hub *h = p->h;
  if (h->fail) {
    snprintf(msg, msglen, "rank %d: the hub is down", p->r);
    return -1;
  }
  for (int r = 0; r < h->nranks; r++) {
    h->send[p->r][r] = send[r];
    h->len[p->r][r] = len[r];
  }
  pthread_barrier_wait(&h->b);
  for (int r = 0; r < h->nranks; r++) {
    if (r == p->r) continue;
    free(p->rbuf[r]);
    p->rbuf[r] = malloc(h->len[r][p->r] + 1);
    memcpy(p->rbuf[r], h->send[r][p->r], h->len[r][p->r]);
    recv[r] = p->rbuf[r];
    rlen[r] = h->len[r][p->r];
  }
  pthread_barrier_wait(&h->b);
  return 0;
}

/* One run of a program on the 8 cores: alone (nranks 0) or shared. */
typedef struct run {
  tgt_target t;
  tpub_image *img;
  emu_machine *m[NC];
  uint8_t *hbm[NC];
  emu_stats st[NC];
  emu_fault f[NC];
  emu_ici_stats ist[NC];
  emu_ici_link_stats links[MAXR][NLINKS];
  emu_ici_event ev[MAXR][16]; /* the first link events (emu_ici_log_links) */
  size_t nev[MAXR];
  int rc[MAXR], who[MAXR];
  char err[MAXR][256];
} run;

typedef struct job {
  run *run;
  rank *rank;
  tpurt_peers_t peers;
} job;

/* Rank j->peers.rank's share of the run (or all of it without peers). */
static void *run_share(void *arg) {
  job *j = arg;
  run *u = j->run;
  int lo = 0, hi = NC, r = j->rank ? j->rank->r : 0;
  if (j->rank) emu_ici_share(NC, j->peers.nranks, r, &lo, &hi);
  for (int c = lo; c < hi; c++) {
    u->m[c] = emu_create(&u->t, NULL);
    u->hbm[c] = calloc(1, (size_t)u->img->hbm_bytes);
    if (u->img->nparams) {
      float *x = (float *)(void *)(u->hbm[c] + u->img->params[0].hbm_offset);
      for (uint64_t i = 0; i < u->img->params[0].bytes / 4; i++) x[i] = (float)(1000 * c + (int)i);
    }
  }
  emu_ici *x = emu_ici_create_shared(&u->t, u->m, NC, 2, NULL, j->rank ? &j->peers : NULL);
  if (x) emu_ici_log_links(x);
  u->rc[r] = x ? emu_ici_run(x, u->img, u->hbm, 1000000, u->st, u->f, &u->who[r]) : -3;
  emu_ici_event *ev = x ? emu_ici_take_events(x, &u->nev[r]) : NULL;
  if (ev) memcpy(u->ev[r], ev, (u->nev[r] < 16 ? u->nev[r] : 16) * sizeof *ev);
  free(ev);
  if (x && u->rc[r] == -2) snprintf(u->err[r], sizeof u->err[r], "%s", emu_ici_peer_error(x));
  for (int k = 0; x && k < emu_ici_nlinks(x) && k < NLINKS; k++) u->links[r][k] = *emu_ici_link(x, k);
  emu_ici_destroy(x);
  for (int c = lo; c < hi; c++) {
    u->ist[c] = u->m[c]->ist;
    emu_destroy(u->m[c]);
  }
  return NULL;
}

/* Runs src alone (nranks 0) or on nranks threads; fail: the peers fail. */
static void run_program(const char *src, int nranks, int fail, run *u) {
  memset(u, 0, sizeof *u);
  char msg[512];
  assert_int_equal(tgt_parse(TARGET, &u->t, msg, sizeof msg), 0);
  assert_int_equal(isa_assemble(src, strlen(src), "t.s", NULL, &u->img, msg, sizeof msg), 0);
  assert_int_equal(tpub_verify(u->img, &u->t, msg, sizeof msg), 0);
  if (!nranks) {
    job j = {u, NULL, {0}};
    run_share(&j);
    return;
  }
  static hub h;
  static rank rk[MAXR];
  job jobs[MAXR];
  pthread_t th[MAXR];
  memset(&h, 0, sizeof h);
  h.nranks = nranks;
  h.fail = fail;
  pthread_barrier_init(&h.b, NULL, (unsigned)nranks);
  for (int r = 0; r < nranks; r++) {
    rk[r] = (rank){&h, r, {0}};
    jobs[r] = (job){u, &rk[r], {nranks, r, &rk[r], hub_min, hub_exchange, NULL}};
    assert_int_equal(pthread_create(&th[r], NULL, run_share, &jobs[r]), 0);
  }
  for (int r = 0; r < nranks; r++) pthread_join(th[r], NULL);
  for (int r = 0; r < nranks; r++)
    for (int k = 0; k < MAXR; k++) free(rk[r].rbuf[k]);
  pthread_barrier_destroy(&h.b);
}

static void run_free(run *u) {
  for (int c = 0; c < NC; c++) free(u->hbm[c]);
  tpub_free(u->img);
}

static void ring_on_ranks(void **state) {
  (void)state;
  static run alone, shared;
  run_program(ring_src, 0, 0, &alone);
  assert_int_equal(alone.rc[0], 0);
  for (int c = 0; c < NC; c++) assert_int_equal(alone.st[c].cycles, c == 0 ? 273 : c == 4 ? 272 : 172);
  for (int nr = 2; nr <= 8; nr *= 2) {
    run_program(ring_src, nr, 0, &shared);
    for (int r = 0; r < nr; r++) {
      assert_int_equal(shared.rc[r], 0);
      /* every rank's copy of the links is the one-process run's, and so
       * are the link events every rank records (one per transfer and
       * link: the ring crosses ten links, test_ici_links.c) */
      assert_memory_equal(shared.links[r], alone.links[0], sizeof alone.links[0]);
      assert_int_equal(shared.nev[r], 10);
      assert_memory_equal(shared.ev[r], alone.ev[0], sizeof alone.ev[0]);
    }
    for (int c = 0; c < NC; c++) {
      assert_memory_equal(&shared.st[c], &alone.st[c], sizeof alone.st[c]);
      assert_memory_equal(&shared.ist[c], &alone.ist[c], sizeof alone.ist[c]);
      assert_memory_equal(shared.hbm[c], alone.hbm[c], (size_t)alone.img->hbm_bytes);
      /* core c's y is its predecessor's x: 1000 (c - 1) + i */
      const float *y = (const float *)(const void *)(shared.hbm[c] + 4096);
      assert_true(y[5] == (float)(1000 * ((c + NC - 1) % NC) + 5));
    }
    run_free(&shared);
  }
  run_free(&alone);
}

static void deadlock_on_ranks(void **state) {
  (void)state;
  static run alone, shared;
  run_program(ICI_DEADLOCK_SRC, 0, 0, &alone);
  assert_int_equal(alone.rc[0], -1);
  assert_int_equal(alone.who[0], 5);
  run_program(ICI_DEADLOCK_SRC, 4, 0, &shared);
  for (int r = 0; r < 4; r++) {
    assert_int_equal(shared.rc[r], -1);
    assert_int_equal(shared.who[r], 5);
  }
  assert_string_equal(shared.f[5].reason, alone.f[5].reason);
  assert_non_null(strstr(shared.f[5].reason, "deadlock across cores"));
  assert_int_equal(shared.f[5].pc, alone.f[5].pc);
  for (int c = 0; c < NC; c++) assert_int_equal(shared.st[c].cycles, alone.st[c].cycles);
  run_free(&alone);
  run_free(&shared);
}

static void failing_peers(void **state) {
  (void)state;
  static run shared;
  run_program(ring_src, 2, 1, &shared);
  for (int r = 0; r < 2; r++) {
    assert_int_equal(shared.rc[r], -2);
    char want[64];
    snprintf(want, sizeof want, "rank %d: the hub is down", r);
    assert_string_equal(shared.err[r], want);
  }
  run_free(&shared);
  /* a rank count that does not divide the cores makes no machine */
  int lo, hi;
  assert_int_equal(emu_ici_share(8, 3, 0, &lo, &hi), -1);
  assert_int_equal(emu_ici_share(8, 4, 3, &lo, &hi), 0);
  assert_int_equal(lo, 6);
  assert_int_equal(hi, 8);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(ring_on_ranks),
      cmocka_unit_test(deadlock_on_ranks),
      cmocka_unit_test(failing_peers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
