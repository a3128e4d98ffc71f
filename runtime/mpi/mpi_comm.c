/* mpi_comm.c: the MPI communicator (contracts in mpi_comm.h). Every
 * exchange sends a header (key, size) and then the operand to every other
 * rank with nonblocking point-to-point messages, and polls them against a
 * deadline, so a rank that never answers is named instead of waited for. */
#include "mpi_comm.h"

#include <inttypes.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rt_mpi {
  coll_comm comm; /* first: the coll_comm view */
  MPI_Comm world;
  int rank, size;
  double timeout;
  bool inited_here;
  uint64_t seq;         /* exchanges so far: the message tag */
  unsigned char *rbuf;  /* the other ranks' operands of the current exchange */
  size_t rcap;
  MPI_Request *req;     /* 2 per rank */
  uint64_t *heads;      /* 2 per rank: key, bytes */
  unsigned char **vbuf; /* rt_mpi_exchange_v: per rank, the message received */
  size_t *vcap;
  char *vgot;
  double peer_seconds; /* in rt_mpi_exchange_v and rt_mpi_min_u64 */
  uint64_t peer_calls;
};

bool rt_mpi_launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

static void sleep_briefly(void) {
  struct timespec ts = {0, 20000};
  nanosleep(&ts, NULL);
}

/* Polls the n requests until all complete or the timeout passes; peer[i]
 * is the rank request i talks to. 0, or -1 naming the ranks that did not
 * answer. */
static int wait_all(rt_mpi *p, MPI_Request *rq, int n, const int *peer, uint64_t key, char *msg,
                    size_t msglen) {
  double t0 = MPI_Wtime();
  for (;;) {
    int pending = 0;
    for (int i = 0; i < n; i++) {
      if (rq[i] == MPI_REQUEST_NULL) continue;
      int flag = 0;
      if (MPI_Test(&rq[i], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        snprintf(msg, msglen, "an MPI message to or from rank %d failed", peer[i]);
        return -1;
      }
      pending += !flag;
    }
    if (!pending) return 0;
    if (MPI_Wtime() - t0 > p->timeout) break;
    sleep_briefly();
  }
  int len = snprintf(msg, msglen, "no answer within %.0f s at collective %#" PRIx64 " from rank",
                     p->timeout, key);
  for (int i = 0; i < n && len > 0 && (size_t)len < msglen; i++)
    if (rq[i] != MPI_REQUEST_NULL) len += snprintf(msg + len, msglen - (size_t)len, " %d", peer[i]);
  return -1;
}

/* Posts a receive from and a send to every other rank of count bytes each
 * (recv at rbase + rank * count), and waits for them. */
static int all_to_all_bytes(rt_mpi *p, const void *mine, void *rbase, size_t count, int tag,
                            uint64_t key, char *msg, size_t msglen) {
  int n = 0, peer[2 * 1024];
  int cap = (int)(sizeof peer / sizeof *peer);
  for (int r = 0; r < p->size; r++) {
    if (r == p->rank) continue;
    if (n + 2 > cap) {
      snprintf(msg, msglen, "more than %d ranks", cap / 2);
      return -1;
    }
    peer[n] = r;
    MPI_Irecv((unsigned char *)rbase + (size_t)r * count, (int)count, MPI_BYTE, r, tag, p->world,
              &p->req[n]);
    n++;
    peer[n] = r;
    MPI_Isend(mine, (int)count, MPI_BYTE, r, tag, p->world, &p->req[n]);
    n++;
  }
  return wait_all(p, p->req, n, peer, key, msg, msglen);
}

int rt_mpi_grow(unsigned char **buf, size_t *cap, size_t need, char *msg, size_t msglen) {
  if (need <= *cap) return 0;
  unsigned char *nb = realloc(*buf, need);
  if (!nb) {
    snprintf(msg, msglen, "out of memory for a collective of %zu bytes", need);
    return -1;
  }
  *buf = nb;
  *cap = need;
  return 0;
}

static int mpi_exchange(coll_comm *c, int m, uint64_t key, const void *mine, size_t bytes,
                        const void **all, char *msg, size_t msglen) {
  rt_mpi *p = (rt_mpi *)c;
  if (bytes > INT_MAX) {
    snprintf(msg, msglen, "a collective operand of %zu bytes is more than MPI sends at once", bytes);
    return -1;
  }
  int tag = 1 + (int)(p->seq++ % 30000u);
  uint64_t head[2] = {key, bytes};
  if (all_to_all_bytes(p, head, p->heads, sizeof head, tag, key, msg, msglen)) return -1;
  for (int r = 0; r < p->size; r++) {
    if (r == p->rank) continue;
    if (p->heads[2 * r] != key) {
      snprintf(msg, msglen,
               "ranks disagree on the collective they run: rank %d is at collective %#" PRIx64
               ", rank %d at %#" PRIx64,
               m, key, r, p->heads[2 * r]);
      return -1;
    }
    if (p->heads[2 * r + 1] != bytes) {
      snprintf(msg, msglen,
               "ranks disagree on the size of collective %#" PRIx64
               ": rank %d gives %zu bytes, rank %d %" PRIu64,
               key, m, bytes, r, p->heads[2 * r + 1]);
      return -1;
    }
  }
  if (rt_mpi_grow(&p->rbuf, &p->rcap, bytes * (size_t)p->size, msg, msglen)) return -1;
  if (bytes && all_to_all_bytes(p, mine, p->rbuf, bytes, tag, key, msg, msglen)) return -1;
  for (int r = 0; r < p->size; r++) all[r] = r == p->rank ? mine : p->rbuf + (size_t)r * bytes;
  return 0;
}

static int mpi_release(coll_comm *c, int m, char *msg, size_t msglen) { return 0; }

static void mpi_leave(coll_comm *c, int m, const char *why) {
  if (why) rt_mpi_abort((rt_mpi *)c, why);
}

static const coll_comm_ops mpi_ops = {mpi_exchange, mpi_release, mpi_leave};

static void free_mpi(rt_mpi *p) {
  for (int r = 0; p->vbuf && r < p->size; r++) free(p->vbuf[r]);
  free(p->vbuf);
  free(p->vcap);
  free(p->vgot);
  free(p->rbuf);
  free(p->req);
  free(p->heads);
  free(p);
}

/* The fingerprint check of rt_mpi_open: every rank's against rank 0's;
 * hint ends the message naming a rank that differs. */
static int check_fingerprints(rt_mpi *p, uint64_t fingerprint, const char *hint, char *err,
                              size_t errlen) {
  const void *all[1024];
  if (p->size > 1024) {
    snprintf(err, errlen, "more than 1024 ranks");
    return -1;
  }
  if (mpi_exchange(&p->comm, p->rank, 0x6670ull, &fingerprint, sizeof fingerprint, all, err,
                   errlen))
    return -1;
  uint64_t f0;
  memcpy(&f0, all[0], sizeof f0);
  for (int r = 1; r < p->size; r++) {
    uint64_t fr;
    memcpy(&fr, all[r], sizeof fr);
    if (fr != f0) {
      snprintf(err, errlen, "rank %d runs other work than rank 0 (fingerprint %016" PRIx64
               " against %016" PRIx64 "): %s", r, fr, f0, hint);
      return -2;
    }
  }
  return 0;
}

/* MPI_Comm_dup bounded by the timeout: the duplication waits for every
 * rank of comm, and MPI does not say which one is missing. A duplication
 * that timed out stays pending. */
static int dup_bounded(MPI_Comm comm, double timeout, MPI_Comm *out, char *err, size_t errlen) {
  MPI_Request rq;
  if (MPI_Comm_idup(comm, out, &rq) != MPI_SUCCESS) {
    snprintf(err, errlen, "MPI_Comm_idup failed");
    return -1;
  }
  double t0 = MPI_Wtime();
  for (;;) {
    int flag = 0;
    if (MPI_Test(&rq, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      snprintf(err, errlen, "duplicating the communicator failed");
      return -1;
    }
    if (flag) return 0;
    if (MPI_Wtime() - t0 > timeout) break;
    sleep_briefly();
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  snprintf(err, errlen,
           "no answer within %.0f s while duplicating the communicator (rank %d of %d here): "
           "a rank of it did not join, silent or gone",
           timeout, rank, size);
  return -1;
}

/* Frees the requests a failed exchange left pending (cancelled first, so
 * that no message lands in freed memory; a send that cannot be cancelled
 * is left to MPI). */
static void drop_pending(rt_mpi *p) {
  for (int i = 0; p->req && i < 2 * p->size; i++) {
    if (p->req[i] == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&p->req[i]);
    int flag = 0;
    for (int k = 0; k < 1000 && !flag; k++) {
      MPI_Test(&p->req[i], &flag, MPI_STATUS_IGNORE);
      if (!flag) sleep_briefly();
    }
    if (!flag) MPI_Request_free(&p->req[i]);
  }
}

/* Duplicates comm into p and checks the fingerprints (the thread level is
 * the caller's check). 0; -1 (communication) or -2 (fingerprints) with
 * one line in err; p is then freed. */
static int attach(rt_mpi *p, MPI_Comm comm, uint64_t fingerprint, double timeout_seconds,
                  const char *hint, char *err, size_t errlen) {
  p->timeout = timeout_seconds > 0 ? timeout_seconds : 60;
  if (dup_bounded(comm, p->timeout, &p->world, err, errlen)) {
    free(p);
    return -1;
  }
  MPI_Comm_set_errhandler(p->world, MPI_ERRORS_RETURN);
  MPI_Comm_rank(p->world, &p->rank);
  MPI_Comm_size(p->world, &p->size);
  p->comm = (coll_comm){&mpi_ops, p->size, p->rank, 1};
  p->req = malloc(2 * (size_t)p->size * sizeof *p->req);
  p->heads = calloc(2 * (size_t)p->size, sizeof *p->heads);
  int rc = 0;
  if (!p->req || !p->heads) {
    snprintf(err, errlen, "out of memory");
    rc = -1;
  } else {
    for (int i = 0; i < 2 * p->size; i++) p->req[i] = MPI_REQUEST_NULL;
    rc = check_fingerprints(p, fingerprint, hint, err, errlen);
  }
  if (rc) rt_mpi_release(p);
  return rc;
}

int rt_mpi_open(uint64_t fingerprint, double timeout_seconds, rt_mpi **out, char *err,
                size_t errlen) {
  *out = NULL;
  rt_mpi *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  int inited = 0, provided = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
      snprintf(err, errlen, "MPI_Init_thread failed");
      free(p);
      return -1;
    }
  } else {
    MPI_Query_thread(&provided);
  }
  int rc = -1;
  if (provided < MPI_THREAD_SERIALIZED) {
    snprintf(err, errlen, "this MPI gives thread level %d; tpucc needs MPI_THREAD_SERIALIZED",
             provided);
    free(p);
  } else {
    rc = attach(p, MPI_COMM_WORLD, fingerprint, timeout_seconds,
                "start every rank with the same program, target and flags", err, errlen);
  }
  if (rc) {
    if (!inited) MPI_Finalize();
    return -1;
  }
  p->inited_here = !inited;
  *out = p;
  return 0;
}

int rt_mpi_open_comm(MPI_Comm comm, uint64_t fingerprint, double timeout_seconds,
                     const char *hint, rt_mpi **out, char *err, size_t errlen) {
  *out = NULL;
  rt_mpi *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  int rc = attach(p, comm, fingerprint, timeout_seconds, hint, err, errlen);
  if (!rc) *out = p;
  return rc;
}

void rt_mpi_release(rt_mpi *p) {
  if (!p) return;
  drop_pending(p);
  if (p->world != MPI_COMM_NULL) MPI_Comm_free(&p->world);
  free_mpi(p);
}

int rt_mpi_rank(const rt_mpi *p) { return p->rank; }
int rt_mpi_size(const rt_mpi *p) { return p->size; }
coll_comm *rt_mpi_comm(rt_mpi *p) { return &p->comm; }

void rt_mpi_abort(rt_mpi *p, const char *msg) {
  fprintf(stderr, "tpucc: rank %d: %s\n", p->rank, msg);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1); /* MPI_Abort does not return; this is for MPIs that let it */
}

void rt_mpi_close(rt_mpi *p) {
  if (!p) return;
  const void *all[1024];
  char msg[512];
  unsigned char none = 0;
  if (mpi_exchange(&p->comm, p->rank, 0x656e64ull, &none, 0, all, msg, sizeof msg))
    rt_mpi_abort(p, msg);
  MPI_Comm_free(&p->world);
  if (p->inited_here) MPI_Finalize();
  free_mpi(p);
}

/* ---- variable-size exchange and minimum (emulated pods, tpurt_peers_t) ---- */

/* Receives rank r's message of this exchange when it has come: 1, 0 when
 * not yet, -1 out of memory. */
static int take_message(rt_mpi *p, int r, int tag, const void **recv, size_t *rlen) {
  int flag = 0, count = 0;
  MPI_Status status;
  MPI_Iprobe(r, tag, p->world, &flag, &status);
  if (!flag) return 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  if ((size_t)count > p->vcap[r]) {
    unsigned char *b = realloc(p->vbuf[r], (size_t)count);
    if (!b) return -1;
    p->vbuf[r] = b;
    p->vcap[r] = (size_t)count;
  }
  MPI_Recv(p->vbuf[r], count, MPI_BYTE, r, tag, p->world, MPI_STATUS_IGNORE);
  recv[r] = p->vbuf[r];
  rlen[r] = (size_t)count;
  p->vgot[r] = 1;
  return 1;
}

static int exchange_v(rt_mpi *p, const void *const *send, const size_t *len, const void **recv,
                      size_t *rlen, char *msg, size_t msglen) {
  if (!p->vbuf) {
    p->vbuf = calloc((size_t)p->size, sizeof *p->vbuf);
    p->vcap = calloc((size_t)p->size, sizeof *p->vcap);
    p->vgot = calloc((size_t)p->size, 1);
    if (!p->vbuf || !p->vcap || !p->vgot) {
      snprintf(msg, msglen, "out of memory");
      return -1;
    }
  }
  int tag = 1 + (int)(p->seq++ % 30000u), n = 0;
  static const unsigned char none = 0;
  for (int r = 0; r < p->size; r++) {
    p->vgot[r] = r == p->rank;
    if (r == p->rank) continue;
    if (len[r] > INT_MAX) {
      snprintf(msg, msglen, "a message of %zu bytes is more than MPI sends at once", len[r]);
      return -1;
    }
    MPI_Isend(len[r] ? send[r] : &none, (int)len[r], MPI_BYTE, r, tag, p->world, &p->req[n++]);
  }
  double t0 = MPI_Wtime();
  for (;;) {
    int waiting = 0, moved = 0;
    for (int r = 0; r < p->size; r++) {
      if (p->vgot[r]) continue;
      int got = take_message(p, r, tag, recv, rlen);
      if (got < 0) {
        snprintf(msg, msglen, "out of memory for a message from rank %d", r);
        return -1;
      }
      moved |= got;
      waiting += !got;
    }
    int sent = 0;
    MPI_Testall(n, p->req, &sent, MPI_STATUSES_IGNORE);
    if (!waiting && sent) return 0;
    if (MPI_Wtime() - t0 > p->timeout) break;
    if (!moved) sleep_briefly();
  }
  int l = snprintf(msg, msglen, "no answer within %.0f s from rank", p->timeout);
  for (int r = 0; r < p->size && l > 0 && (size_t)l < msglen; r++)
    if (!p->vgot[r]) l += snprintf(msg + l, msglen - (size_t)l, " %d", r);
  return -1;
}

int rt_mpi_exchange_v(rt_mpi *p, const void *const *send, const size_t *len, const void **recv,
                      size_t *rlen, char *msg, size_t msglen) {
  double t0 = MPI_Wtime();
  int rc = exchange_v(p, send, len, recv, rlen, msg, msglen);
  p->peer_seconds += MPI_Wtime() - t0;
  p->peer_calls++;
  return rc;
}

static int min_u64(rt_mpi *p, const uint64_t *mine, uint64_t *out, int k, char *msg,
                   size_t msglen) {
  size_t bytes = (size_t)k * sizeof *mine, need = bytes * (size_t)p->size;
  if (need > p->rcap) {
    unsigned char *nb = realloc(p->rbuf, need);
    if (!nb) {
      snprintf(msg, msglen, "out of memory");
      return -1;
    }
    p->rbuf = nb;
    p->rcap = need;
  }
  int tag = 1 + (int)(p->seq++ % 30000u);
  if (all_to_all_bytes(p, mine, p->rbuf, bytes, tag, 0x6d696eull, msg, msglen)) return -1;
  memcpy(p->rbuf + (size_t)p->rank * bytes, mine, bytes);
  for (int i = 0; i < k; i++) {
    out[i] = mine[i];
    for (int r = 0; r < p->size; r++) {
      uint64_t v;
      memcpy(&v, p->rbuf + (size_t)r * bytes + (size_t)i * sizeof v, sizeof v);
      if (v < out[i]) out[i] = v;
    }
  }
  return 0;
}

int rt_mpi_min_u64(rt_mpi *p, const uint64_t *mine, uint64_t *out, int k, char *msg,
                   size_t msglen) {
  double t0 = MPI_Wtime();
  int rc = min_u64(p, mine, out, k, msg, msglen);
  p->peer_seconds += MPI_Wtime() - t0;
  p->peer_calls++;
  return rc;
}

double rt_mpi_peer_seconds(const rt_mpi *p, uint64_t *calls) {
  if (calls) *calls = p->peer_calls;
  return p->peer_seconds;
}

static int peers_min(void *user, const uint64_t *mine, uint64_t *out, int k, char *msg,
                     size_t msglen) {
  return rt_mpi_min_u64(user, mine, out, k, msg, msglen);
}

static int peers_exchange(void *user, const void *const *send, const size_t *len,
                          const void **recv, size_t *rlen, char *msg, size_t msglen) {
  return rt_mpi_exchange_v(user, send, len, recv, rlen, msg, msglen);
}

void rt_mpi_peers(rt_mpi *p, tpurt_peers_t *out) {
  *out = (tpurt_peers_t){p->size, p->rank, p, peers_min, peers_exchange, NULL};
}
