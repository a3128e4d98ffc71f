/* lower_coll_move.c: the collectives that move values between replicas
 * without combining them, one replica per core of a board or pod
 * (docs/tpu-backend.md, "Collectives"; dmaput and iwait, docs/isa.md):
 *
 *   collective-permute    core s puts each operand into core t's result
 *                         for every pair {s,t}; a core that no pair
 *                         targets fills its result with zeros
 *   all-to-all            dimensions={d}: the member at position q puts
 *                         block j (of n along d) of its operand into block
 *                         q of member g[j]'s result, one strided transfer;
 *                         tuple form: its operand j into element q of
 *                         g[j]'s result
 *   collective-broadcast  g[0] puts each operand into every member's result
 *   replica-id            the core's id (coreid), partition-id 0
 * The values are those of the evaluator (ir/eval_coll.c), bit for bit:
 * nothing is combined, bytes only move.
 *
 * Every core runs the same program, learns its replica from `coreid` and
 * branches into code specialised for it; result buffers are allocated
 * before the branches, so they lie at the same HBM address on every core
 * and a core puts data straight into another's result. A core's own part
 * is a local copy once everything it receives has arrived (they may share
 * a granule). Before anything moves, every core takes part in the
 * barrier of all the program's cores (coll_barrier, before the branch):
 * once a core has passed it, every core has reached this collective with
 * its units drained, so nothing a core still reads or writes is
 * overwritten, and no signal of another collective is taken for one of
 * this one. The data then lands on SEM_DATA; each core waits for as many
 * transfers as it receives. */
#include "backend/tpu/coll_sync.h"
#include "backend/tpu/lower.h"

/* ICI semaphore of the data. */
enum { SEM_DATA = 0 };

static const ir_inst *inst_of(lctx *x, ir_id i) { return &x->comp->insts.v[i]; }

/* One transfer: n runs of `run` bytes, consecutive runs `stride` bytes
 * apart on both sides, from this core's src into core `to` at dst. */
typedef struct mput {
  int to, es; /* es: bytes per element */
  uint64_t src, dst, run, stride;
  int64_t n;
} mput;

typedef VEC(mput) mput_vec;

typedef struct mv {
  lctx *x;
  const ir_inst *in;
  const ir_shape *shape; /* the result's (a start op's: its collective's) */
  int nrep;
  int nvals;       /* operands */
  uint64_t *X;     /* operand addresses */
  uint64_t *OUT;   /* result addresses (the tuple's elements) */
  uint64_t *bytes; /* bytes of each operand */
  int *es;         /* bytes per element of each operand */
  int64_t *g;      /* group scratch, nrep */
} mv;

static void add(mv *k, mput_vec *v, int to, int j, uint64_t src, uint64_t dst, uint64_t run,
                int64_t n, uint64_t stride) {
  if (!run || !n) return;
  mput p = {to, k->es[j], src, dst, run, stride, n};
  VEC_PUSH(k->x->b->a, *v, p);
}

/* The transfers core r sends for in, into *v; true when some pair or
 * group makes r a receiver (false: collective-permute with no source for
 * r, whose result is zeros). */
static bool plan(mv *k, int r, mput_vec *v) {
  const ir_inst *in = k->in;
  v->n = 0;
  int p = 0, n = ir_coll_group(in, k->nrep, r, k->g, &p);
  switch (ir_coll_sync_op(in->op)) {
  case IR_OP_COLLECTIVE_PERMUTE: {
    const ir_replica_groups *pr = &in->a->source_target_pairs;
    bool received = false;
    for (int i = 0; i < pr->ngroups; i++) {
      received |= pr->groups[i].v[1] == r;
      if (pr->groups[i].v[0] == r)
        for (int j = 0; j < k->nvals; j++)
          add(k, v, (int)pr->groups[i].v[1], j, k->X[j], k->OUT[j], k->bytes[j], 1, 0);
    }
    return received;
  }
  case IR_OP_COLLECTIVE_BROADCAST:
    for (int q = 0; p == 0 && q < n; q++)
      for (int j = 0; j < k->nvals; j++)
        add(k, v, (int)k->g[q], j, k->X[j], k->OUT[j], k->bytes[j], 1, 0);
    return true;
  case IR_OP_ALL_TO_ALL:
    if (in->a->dimensions.n == 0) { /* operand j -> element p of g[j] */
      for (int j = 0; j < n && j < k->nvals; j++)
        add(k, v, (int)k->g[j], j, k->X[j], k->OUT[p], k->bytes[j], 1, 0);
    } else {
      const ir_shape *s = k->shape;
      int64_t d = in->a->dimensions.v[0], outer = 1, inner = 1;
      for (int i = 0; i < s->rank; i++) {
        if (i < d) outer *= s->dims[i];
        if (i > d) inner *= s->dims[i];
      }
      uint64_t blk = (uint64_t)(s->dims[d] / n * inner) * (uint64_t)k->es[0];
      for (int j = 0; j < n; j++)
        add(k, v, (int)k->g[j], 0, k->X[0] + (uint64_t)j * blk, k->OUT[0] + (uint64_t)p * blk, blk,
            outer, (uint64_t)n * blk);
    }
    return true;
  default:
    return true;
  }
}

/* The SMEM byte address of the dmaput descriptor w: an equal one already
 * in the image (descriptors sit at 10-word slots and SMEM from
 * smem_static up to the dynamic slot never changes at run time), else a
 * new one. */
static uint32_t put_desc(tb *b, const uint32_t *w) {
  for (uint32_t at = b->smem_static; at + ISA_PUT_DESC_WORDS <= b->smem_words; at += 10)
    if (!memcmp(b->smem + at, w, ISA_PUT_DESC_WORDS * sizeof *w)) return at * 4;
  return tb_smem_words(b, w, ISA_PUT_DESC_WORDS);
}

/* Puts p (another core) over ICI, signalling its SEM_DATA; the front end
 * takes the sender's token at once (nothing else pends on TB_SEM_Q1
 * after a barrier). */
static void xput(tb *b, const mput *p) {
  if (b->failed) return;
  uint32_t w[ISA_PUT_DESC_WORDS] = {(uint32_t)p->run, (uint32_t)p->n, 1, 1, (uint32_t)p->stride,
                                    0, 0, (uint32_t)p->stride, 0, 0, (uint32_t)p->to};
  uint32_t da = put_desc(b, w);
  int rs = tb_sreg(b, (uint32_t)p->src);
  int rt = tb_sreg(b, (uint32_t)p->dst);
  int rd = tb_sreg(b, da);
  tb_raw(b, OP_DMAPUT, rs, rt, rd, TB_SEM_Q1, 0, SEM_DATA);
  tb_raw(b, OP_WAIT, TB_SEM_Q1, 0, 0, 0, ISA_UNIT_SCALAR, 1);
}

/* Core r's code (after the barrier): its transfers (its own part copied
 * locally), the wait for what it receives, zeros where nothing comes. */
static void emit_core(mv *k, int r, mput_vec *v) {
  tb *b = k->x->b;
  int incoming = 0;
  for (int q = 0; q < k->nrep; q++) {
    if (q == r) continue;
    plan(k, q, v);
    for (int i = 0; i < v->n; i++) incoming += v->v[i].to == r;
  }
  bool received = plan(k, r, v);
  tb_barrier(b);
  for (int i = 0; i < v->n; i++)
    if (v->v[i].to != r) xput(b, &v->v[i]);
  /* the own part after every arrival: they may share its granules */
  if (incoming) tb_raw(b, OP_IWAIT, SEM_DATA, 0, 0, 0, 0, incoming);
  for (int i = 0; i < v->n; i++) {
    const mput *p = &v->v[i];
    if (p->to != r) continue;
    int64_t es = p->es, st[2] = {(int64_t)p->stride / es, 1}, dims[2] = {p->n, (int64_t)p->run / es};
    tk_copy(b, p->dst, st, p->src, st, 2, dims, p->es);
  }
  for (int j = 0; !received && j < k->nvals; j++)
    tk_fill(b, k->OUT[j], (int64_t)(k->bytes[j] / (uint64_t)k->es[j]), k->es[j], 0);
  tb_barrier(b);
}

/* The barrier of all cores, then emit_core for every core behind a
 * branch on coreid (one core: straight). */
static void per_core(mv *k) {
  tb *b = k->x->b;
  mput_vec v = {0};
  if (k->nrep == 1) {
    emit_core(k, 0, &v);
    return;
  }
  coll_barrier(b);
  int rc = tb_sreg_take(b);
  tb_raw(b, OP_COREID, rc, 0, 0, 0, 0, 0);
  uint64_t *to = arena_array(b->a, (size_t)k->nrep, sizeof(uint64_t));
  uint64_t *join = arena_array(b->a, (size_t)k->nrep, sizeof(uint64_t));
  for (int r = 0; r + 1 < k->nrep; r++) to[r] = tb_branch(b, OP_BEQ, rc, tb_sreg(b, (uint32_t)r), 0);
  to[k->nrep - 1] = tb_branch(b, OP_JMP, 0, 0, 0);
  tb_sreg_give(b, rc);
  for (int r = 0; r < k->nrep && !b->failed; r++) {
    tb_patch(b, to[r], tb_label(b));
    emit_core(k, r, &v);
    join[r] = tb_branch(b, OP_JMP, 0, 0, 0);
  }
  uint64_t end = tb_label(b);
  for (int r = 0; r < k->nrep && !b->failed; r++) tb_patch(b, join[r], end);
}

/* replica-id (the core's id, stored from a vector register) and
 * partition-id (0), u32 held as an s32 word. */
static void lower_ids(lctx *x, ir_id i) {
  tb *b = x->b;
  const ir_inst *in = inst_of(x, i);
  tval *out = tv_new(b, IR_S32, 0, NULL);
  x->val[i] = out;
  if (in->op == IR_OP_PARTITION_ID) {
    tk_fill(b, tv_addr(out), 1, tv_esize(out->type), 0);
    return;
  }
  if (!tb_vmem_fits(b, TGT_VREG_BYTES, "replica-id")) return;
  int rc = tb_sreg_take(b);
  tb_raw(b, OP_COREID, rc, 0, 0, 0, 0, 0);
  tb_valu(b, OP_VBCAST, 1, rc, 0);
  tb_sreg_give(b, rc);
  tb_vst(b, 1, 0, tb_row_bytes(false), false, 0);
  int64_t d[10] = {4, 1, 1, 1, 0, 0, 0, 0, 0, 0};
  tb_dma(b, false, 0, tv_addr(out), d);
}

/* The result of in: one array per operand (a tuple when several). */
static tval *results(mv *k) {
  tb *b = k->x->b;
  const ir_shape *s = k->shape;
  if (s->type != IR_TUPLE) {
    tval *o = tv_new(b, s->type, s->rank, s->dims);
    k->OUT[0] = tv_addr(o);
    return o;
  }
  tval *t = arena_alloc(b->a, sizeof *t);
  t->tuple = true;
  t->n = s->ntuple;
  t->elems = arena_array(b->a, (size_t)(s->ntuple ? s->ntuple : 1), sizeof(tval *));
  for (int j = 0; j < s->ntuple; j++) {
    t->elems[j] = tv_new(b, s->tuple[j].type, s->tuple[j].rank, s->tuple[j].dims);
    k->OUT[j] = tv_addr(t->elems[j]);
  }
  return t;
}

/* The value of the move in (a collective-permute-start: its permute) of
 * result shape `shape`, or NULL after an error. */
tval *coll_move_value(lctx *x, const ir_inst *in, const ir_shape *shape) {
  tb *b = x->b;
  mv k = {x, in, shape, b->replicas, in->nops, NULL, NULL, NULL, NULL, NULL};
  size_t nv = (size_t)(in->nops ? in->nops : 1);
  k.X = arena_array(b->a, nv, sizeof(uint64_t));
  k.OUT = arena_array(b->a, nv, sizeof(uint64_t));
  k.bytes = arena_array(b->a, nv, sizeof(uint64_t));
  k.es = arena_array(b->a, nv, sizeof(int));
  k.g = arena_array(b->a, (size_t)k.nrep, sizeof(int64_t));
  for (int j = 0; j < in->nops; j++) {
    const tval *v = x->val[in->ops[j]];
    if (v->tuple) {
      tb_error(b, ST_UNSUPPORTED, "%s of a tuple operand", ir_op_name(in->op));
      return NULL;
    }
    k.es[j] = tv_esize(v->type);
    k.X[j] = tv_addr(v);
    k.bytes[j] = (uint64_t)v->count * (uint64_t)k.es[j];
    if (k.bytes[j] > (UINT64_C(1) << 30)) {
      tb_error(b, ST_UNSUPPORTED, "%s of %llu bytes per operand (a transfer moves at most 1 GiB)",
               ir_op_name(in->op), (unsigned long long)k.bytes[j]);
      return NULL;
    }
  }
  for (int r = 0; r < k.nrep; r++) {
    int p;
    if (!ir_coll_group(in, k.nrep, r, k.g, &p)) {
      tb_error(b, ST_INVALID_ARGUMENT, "%s: replica_groups do not list replica %d of %d",
               ir_op_name(in->op), r, k.nrep);
      return NULL;
    }
  }
  tval *out = results(&k);
  tb_explain(b, "%s over %d replica%s: puts straight into the receivers' results after a "
             "two-phase barrier of all cores; a core's own part copied locally",
             ir_op_name(in->op), k.nrep, k.nrep == 1 ? "" : "s");
  per_core(&k);
  return out;
}

void lower_coll_move(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  if (in->op == IR_OP_REPLICA_ID || in->op == IR_OP_PARTITION_ID) {
    lower_ids(x, i);
    return;
  }
  tval *v = coll_move_value(x, in, in->shape);
  if (v) x->val[i] = v;
}
