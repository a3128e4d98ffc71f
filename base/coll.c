/* coll.c: chunks, and the rendezvous of replicas on host threads
 * (contracts in coll.h). The rendezvous is a generation barrier guarded by
 * one mutex: a wait ends when the generation moves on (everyone arrived)
 * or, failing that, when some member has left. */
#include "coll.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

void coll_chunk(int64_t count, int n, int c, int64_t *lo, int64_t *hi) {
  /* count * c fits: counts are element counts of host buffers (< 2^48). */
  *lo = count / n * c + count % n * c / n;
  *hi = count / n * (c + 1) + count % n * (c + 1) / n;
}

struct coll_rdv {
  coll_comm comm; /* first: coll_rdv_comm's view */
  size_t *bytes;  /* per member: the size it deposited */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int n;
  int arrived;         /* members at the current barrier */
  uint64_t generation; /* barriers completed */
  int left;            /* first member that left, or -1 */
  char why[192];       /* why it left ("" when it finished) */
  const void **ptrs;   /* per member: its deposit */
  uint64_t *keys;      /* per member: its key */
};

static const coll_comm_ops rdv_comm_ops;

coll_rdv *coll_rdv_create(int n) {
  if (n < 1) return NULL;
  coll_rdv *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->ptrs = calloc((size_t)n, sizeof *r->ptrs);
  r->keys = calloc((size_t)n, sizeof *r->keys);
  r->bytes = calloc((size_t)n, sizeof *r->bytes);
  bool mu = r->ptrs && r->keys && r->bytes && !pthread_mutex_init(&r->mu, NULL);
  if (!mu || pthread_cond_init(&r->cv, NULL)) {
    if (mu) pthread_mutex_destroy(&r->mu);
    free(r->ptrs);
    free(r->keys);
    free(r->bytes);
    free(r);
    return NULL;
  }
  r->n = n;
  r->left = -1;
  r->comm = (coll_comm){&rdv_comm_ops, n, 0, n};
  return r;
}

void coll_rdv_destroy(coll_rdv *r) {
  if (!r) return;
  pthread_cond_destroy(&r->cv);
  pthread_mutex_destroy(&r->mu);
  free(r->ptrs);
  free(r->keys);
  free(r->bytes);
  free(r);
}

int coll_rdv_members(const coll_rdv *r) { return r->n; }

static void left_message(const coll_rdv *r, int m, char *msg, size_t msglen) {
  if (!msg || !msglen) return;
  if (r->why[0])
    snprintf(msg, msglen, "replica %d stopped (%s) while replica %d waited at a collective", r->left,
             r->why, m);
  else
    snprintf(msg, msglen, "replica %d finished while replica %d waited at a collective", r->left, m);
}

/* Arrives at the barrier (mutex held) and waits for the generation to move
 * on. 0, or -1 when a member left before everyone arrived. */
static int barrier_locked(coll_rdv *r, int m, char *msg, size_t msglen) {
  uint64_t gen = r->generation;
  if (r->left >= 0) {
    left_message(r, m, msg, msglen);
    return -1;
  }
  if (++r->arrived == r->n) {
    r->arrived = 0;
    r->generation++;
    pthread_cond_broadcast(&r->cv);
    return 0;
  }
  while (r->generation == gen && r->left < 0) pthread_cond_wait(&r->cv, &r->mu);
  if (r->generation != gen) return 0;
  left_message(r, m, msg, msglen);
  return -1;
}

/* The exchange, with the sizes checked when bytes is not SIZE_MAX. */
static int exchange_sized(coll_rdv *r, int m, uint64_t key, const void *mine, size_t bytes,
                          const void **all, char *msg, size_t msglen) {
  pthread_mutex_lock(&r->mu);
  r->ptrs[m] = mine;
  r->keys[m] = key;
  r->bytes[m] = bytes;
  int rc = barrier_locked(r, m, msg, msglen);
  if (rc == 0) {
    for (int i = 0; i < r->n; i++) {
      if (r->keys[i] == key && r->bytes[i] != bytes) {
        if (msg && msglen)
          snprintf(msg, msglen,
                   "replicas disagree on the size of collective %#" PRIx64
                   ": replica %d gives %zu bytes, replica %d %zu",
                   key, m, bytes, i, r->bytes[i]);
        rc = -1;
        break;
      }
      if (r->keys[i] != key) {
        if (msg && msglen)
          snprintf(msg, msglen,
                   "replicas disagree on the collective they run: replica %d is at collective "
                   "%#" PRIx64 ", replica %d at %#" PRIx64,
                   m, key, i, r->keys[i]);
        rc = -1;
        break;
      }
      all[i] = r->ptrs[i];
    }
  }
  pthread_mutex_unlock(&r->mu);
  return rc;
}

int coll_rdv_exchange(coll_rdv *r, int m, uint64_t key, const void *mine, const void **all,
                      char *msg, size_t msglen) {
  return exchange_sized(r, m, key, mine, SIZE_MAX, all, msg, msglen);
}

int coll_rdv_release(coll_rdv *r, int m, char *msg, size_t msglen) {
  pthread_mutex_lock(&r->mu);
  int rc = barrier_locked(r, m, msg, msglen);
  pthread_mutex_unlock(&r->mu);
  return rc;
}

void coll_rdv_leave(coll_rdv *r, int m, const char *why) {
  pthread_mutex_lock(&r->mu);
  if (r->left < 0) {
    r->left = m;
    snprintf(r->why, sizeof r->why, "%s", why ? why : "");
  }
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

static int comm_exchange(coll_comm *c, int m, uint64_t key, const void *mine, size_t bytes,
                         const void **all, char *msg, size_t msglen) {
  return exchange_sized((coll_rdv *)c, m, key, mine, bytes, all, msg, msglen);
}
static int comm_release(coll_comm *c, int m, char *msg, size_t msglen) {
  return coll_rdv_release((coll_rdv *)c, m, msg, msglen);
}
static void comm_leave(coll_comm *c, int m, const char *why) { coll_rdv_leave((coll_rdv *)c, m, why); }

static const coll_comm_ops rdv_comm_ops = {comm_exchange, comm_release, comm_leave};

coll_comm *coll_rdv_comm(coll_rdv *r) { return &r->comm; }
