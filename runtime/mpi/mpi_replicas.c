/* mpi_replicas.c: replicas on threads of several ranks (contracts in
 * mpi_replicas.h). */
#include "mpi_replicas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rt_mpi_replicas {
  coll_comm comm; /* first: the coll_comm view */
  rt_mpi *p;
  coll_rdv *rdv;       /* the local members */
  const void **locs;   /* local * local: each local member's view of the local exchange */
  const void **rall;   /* per rank: its block of the world's exchange */
  const void **table;  /* per member: where its operand is, valid until the next exchange */
  unsigned char *send; /* the local members' operands, back to back */
  size_t scap;
};

static int rep_exchange(coll_comm *c, int m, uint64_t key, const void *mine, size_t bytes,
                        const void **all, char *msg, size_t msglen) {
  rt_mpi_replicas *x = (rt_mpi_replicas *)c;
  int lm = m - c->first, nl = c->local;
  coll_comm *loc = coll_rdv_comm(x->rdv);
  const void **mylocs = x->locs + (size_t)lm * (size_t)nl;
  if (loc->ops->exchange(loc, lm, key, mine, bytes, mylocs, msg, msglen)) return -1;
  if (lm == 0) {
    /* The first local member speaks for the rank; the others wait for it
     * in the release below, so the table is complete when they read it. */
    size_t need = bytes * (size_t)nl;
    if (rt_mpi_grow(&x->send, &x->scap, need, msg, msglen)) return -1;
    for (int j = 0; j < nl; j++)
      if (bytes) memcpy(x->send + (size_t)j * bytes, mylocs[j], bytes);
    coll_comm *w = rt_mpi_comm(x->p);
    if (w->ops->exchange(w, rt_mpi_rank(x->p), key, x->send, need, x->rall, msg, msglen)) return -1;
    for (int i = 0; i < c->n; i++)
      x->table[i] = (const unsigned char *)x->rall[i / nl] + (size_t)(i % nl) * bytes;
  }
  if (loc->ops->release(loc, lm, msg, msglen)) return -1;
  memcpy(all, x->table, sizeof *all * (size_t)c->n);
  return 0;
}

/* Every member's table entry stays valid until the first local member
 * writes the next exchange, which it does only once every local member
 * has arrived there: nothing to wait for here. */
static int rep_release(coll_comm *c, int m, char *msg, size_t msglen) { return 0; }

static void rep_leave(coll_comm *c, int m, const char *why) {
  rt_mpi_replicas *x = (rt_mpi_replicas *)c;
  if (why) {
    char line[1200];
    snprintf(line, sizeof line, "replica %d: %s", m, why);
    rt_mpi_abort(x->p, line);
  }
  coll_rdv_leave(x->rdv, m - c->first, NULL);
}

static const coll_comm_ops rep_ops = {rep_exchange, rep_release, rep_leave};

int rt_mpi_replicas_create(rt_mpi *p, int n, rt_mpi_replicas **out, char *err, size_t errlen) {
  *out = NULL;
  int size = rt_mpi_size(p);
  if (n < 1 || n % size) {
    snprintf(err, errlen, "%d replicas do not split evenly over %d MPI ranks: give a multiple of %d",
             n, size, size);
    return -1;
  }
  int nl = n / size;
  rt_mpi_replicas *x = calloc(1, sizeof *x);
  if (x) {
    x->rdv = coll_rdv_create(nl);
    x->locs = calloc((size_t)nl * (size_t)nl, sizeof *x->locs);
    x->rall = calloc((size_t)size, sizeof *x->rall);
    x->table = calloc((size_t)n, sizeof *x->table);
  }
  if (!x || !x->rdv || !x->locs || !x->rall || !x->table) {
    rt_mpi_replicas_destroy(x);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  x->p = p;
  x->comm = (coll_comm){&rep_ops, n, rt_mpi_rank(p) * nl, nl};
  *out = x;
  return 0;
}

coll_comm *rt_mpi_replicas_comm(rt_mpi_replicas *x) { return &x->comm; }

void rt_mpi_replicas_destroy(rt_mpi_replicas *x) {
  if (!x) return;
  coll_rdv_destroy(x->rdv);
  free(x->locs);
  free(x->rall);
  free(x->table);
  free(x->send);
  free(x);
}
