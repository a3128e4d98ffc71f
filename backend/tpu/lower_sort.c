/* lower_sort.c: sort, topk and the TopK custom-call on the TPU, in the
 * evaluator's order bit for bit (ir/eval_sort.c: each row sorted by a
 * bottom-up merge sort, runs of 1, 2, 4, ... merged pairwise from the
 * left, a merge taking the right run's head only when comparator(right,
 * left) is true).
 *
 * The rows (the sorted dimension made the last one by a transposing copy
 * when it is not) go through VMEM in blocks of rows. Every operand's
 * block is DMA'd in as 32-bit words (a bf16 element into the high half of
 * a zeroed word, so the word is the element as f32; back out from the
 * high half), each row is merge sorted between two buffers, A and B, and
 * the sorted block (in A or B by the parity of the level count) goes back
 * by DMA. The merge is the evaluator's, step by step, on the scalar unit:
 * the two heads of every operand are loaded at run-time addresses (`vld`,
 * lane 0 used), the comparator runs as vector code (lower_scalar_comp),
 * `vtos` hands its verdict to the front end, the chosen elements are
 * selected and stored (lane 0, mask m7) and the head addresses advance by
 * arithmetic; the run left over is copied element by element. So every
 * comparator the vector unit computes sorts exactly as the evaluator's
 * does: stable or not, NaN and -0 under any compare, comparators that are
 * no strict weak order. The levels are unrolled; rows, pairs of runs and
 * merge steps are run-time loops, so the code does not grow with the data
 * (blocks of rows are unrolled: a few when the operands exceed VMEM).
 *
 * topk is the same sort of the values and their indices (an iota) with
 * the comparator compare(right, left), TOTALORDER, GT when largest (LT
 * otherwise), or the TopK custom-call's own comparator on the values;
 * only the first k columns of each sorted row are stored. */
#include "backend/tpu/lower.h"

static const ir_inst *inst_of(lctx *x, ir_id i) { return &x->comp->insts.v[i]; }

enum {
  SORT_MAX_OPS = 12, /* operands: two vector registers each per merge step */
  V_ZERO = 31,       /* a vector register of zeros */
  M_PICK = 6,        /* the comparator's verdict as a mask */
  M_LANE0 = 7,       /* sublane 0, lane 0: where the stores write */
  SORT_PAD = 512,    /* a vld at a buffer's last word reads 128 words */
};

/* One sort over n operands of R rows of L elements (row-major [R, L] in
 * HBM at in[q]), storing the first K columns of each sorted row at out[q]
 * ([R, K]); cmp reads operands 0..ncmp-1: its input 2q is the right
 * run's head of operand q, 2q + 1 the left run's, its output whether the
 * right head goes first. */
typedef struct sortk {
  int n, ncmp;
  const tk_elem *cmp;
  int64_t R, L, K;
  uint64_t in[SORT_MAX_OPS], out[SORT_MAX_OPS];
  bool h[SORT_MAX_OPS]; /* bf16 in HBM (2 bytes) */
  uint64_t half, ops;   /* VMEM: operand q's A at q * ops, its B at q * ops + half */
  int rRow, rLo, rI, rJ, rM, rH, rK, rT; /* scalar registers while a block sorts */
} sortk;

static int levels_of(int64_t L) {
  int p = 0;
  while (((int64_t)1 << p) < L) p++;
  return p;
}

/* Copies the elements at [*rs, rend) to rK on, one by one (at least one). */
static void copy_run(tb *b, const sortk *k, int rs, int rend) {
  uint64_t top = tb_label(b);
  for (int q = 0; q < k->n; q++) {
    tb_raw(b, OP_VLD, q, rs, 0, 0, 0, (int32_t)((uint64_t)q * k->ops));
    tb_raw(b, OP_VST, q, k->rK, 0, M_LANE0, 0, (int32_t)((uint64_t)q * k->ops));
  }
  tb_raw(b, OP_SADDI, rs, rs, 0, 0, 0, 4);
  tb_raw(b, OP_SADDI, k->rK, k->rK, 0, 0, 0, 4);
  tb_branch(b, OP_BLT, rs, rend, top);
}

/* One merge step at heads rI, rJ: the comparator's verdict into rT, the
 * chosen elements stored at rK, the heads and rK advanced. */
static bool merge_step(tb *b, const sortk *k) {
  int n = k->n, regs[2 * SORT_MAX_OPS], out;
  uint32_t used = 1u << V_ZERO;
  for (int q = 0; q < n; q++) {
    int32_t off = (int32_t)((uint64_t)q * k->ops);
    tb_raw(b, OP_VLD, q, k->rI, 0, 0, 0, off);     /* left head */
    tb_raw(b, OP_VLD, n + q, k->rJ, 0, 0, 0, off); /* right head */
    used |= 1u << q | 1u << (n + q);
  }
  for (int q = 0; q < k->ncmp; q++) {
    regs[2 * q] = n + q;
    regs[2 * q + 1] = q;
  }
  if (!tk_eval_dag(b, &used, k->cmp, regs, &out)) return false;
  tb_raw(b, OP_VTOS, k->rT, out, 0, 0, 0, 0);
  tb_raw(b, OP_VCMPLTI, M_PICK, V_ZERO, out, 0, 0, 0);
  for (int q = 0; q < n; q++) {
    tb_raw(b, OP_VSEL, q, M_PICK, n + q, q, 0, 0);
    tb_raw(b, OP_VST, q, k->rK, 0, M_LANE0, 0, (int32_t)((uint64_t)q * k->ops));
  }
  /* t = 4 when the right head went: j += t, i += 4 - t */
  tb_raw(b, OP_SADDI, k->rK, k->rK, 0, 0, 0, 4);
  tb_raw(b, OP_SSHLI, k->rT, k->rT, 0, 0, 0, 2);
  tb_raw(b, OP_SADD, k->rJ, k->rJ, k->rT, 0, 0, 0);
  tb_raw(b, OP_SSUB, k->rI, k->rI, k->rT, 0, 0, 0);
  tb_raw(b, OP_SADDI, k->rI, k->rI, 0, 0, 0, 4);
  return true;
}

/* Merges the runs of width w of the row at rRow + so into rRow + dso:
 * pairs [lo, lo + w), [lo + w, lo + 2w) clipped to the row, from the left. */
static bool merge_level(tb *b, const sortk *k, int64_t w, uint64_t so, uint64_t dso) {
  int32_t end = (int32_t)(so + (uint64_t)k->L * 4);
  tb_raw(b, OP_SADDI, k->rLo, k->rRow, 0, 0, 0, (int32_t)so);
  uint64_t pair = tb_label(b);
  tb_raw(b, OP_SADD, k->rI, k->rLo, 0, 0, 0, 0);
  tb_raw(b, OP_SADDI, k->rT, k->rRow, 0, 0, 0, end);
  tb_raw(b, OP_SADDI, k->rM, k->rLo, 0, 0, 0, (int32_t)(w * 4));
  tb_raw(b, OP_SMIN, k->rM, k->rM, k->rT, 0, 0, 0);
  tb_raw(b, OP_SADDI, k->rH, k->rLo, 0, 0, 0, (int32_t)(2 * w * 4));
  tb_raw(b, OP_SMIN, k->rH, k->rH, k->rT, 0, 0, 0);
  tb_raw(b, OP_SADD, k->rJ, k->rM, 0, 0, 0, 0);
  tb_raw(b, OP_SADDI, k->rK, k->rLo, 0, 0, 0, (int32_t)((int64_t)dso - (int64_t)so));
  uint64_t to_left = tb_branch(b, OP_BGE, k->rJ, k->rH, 0); /* no right run */
  uint64_t step = tb_label(b);
  if (!merge_step(b, k)) return false;
  uint64_t to_right = tb_branch(b, OP_BGE, k->rI, k->rM, 0); /* left run done */
  tb_branch(b, OP_BLT, k->rJ, k->rH, step);
  tb_patch(b, to_left, tb_label(b)); /* right run done: the left one's rest */
  copy_run(b, k, k->rI, k->rM);
  uint64_t to_next = tb_branch(b, OP_JMP, 0, 0, 0);
  tb_patch(b, to_right, tb_label(b));
  copy_run(b, k, k->rJ, k->rH);
  tb_patch(b, to_next, tb_label(b));
  tb_raw(b, OP_SADDI, k->rLo, k->rLo, 0, 0, 0, (int32_t)(2 * w * 4));
  tb_raw(b, OP_SADDI, k->rT, k->rRow, 0, 0, 0, end);
  tb_branch(b, OP_BLT, k->rLo, k->rT, pair);
  return true;
}

/* The DMA descriptor moving rows x cols elements of operand q between HBM
 * (rows of hcols elements) and VMEM words (rows of L words). */
static void row_desc(const sortk *k, int q, int64_t rows, int64_t cols, int64_t hcols,
                     int64_t d[10]) {
  int64_t L4 = k->L * 4;
  int64_t bf[10] = {2, cols, rows, 1, 2, hcols * 2, 0, 4, L4, 0};
  int64_t wd[10] = {cols * 4, rows, 1, 1, hcols * 4, 0, 0, L4, 0, 0};
  memcpy(d, k->h[q] ? bf : wd, sizeof bf);
}

/* Sorts rows r0 .. r0 + rows - 1: loads, sorts each row, stores. */
static void sort_block(tb *b, sortk *k, int64_t r0, int64_t rows) {
  int64_t d[10];
  for (int q = 0; q < k->n; q++) {
    row_desc(k, q, rows, k->L, k->L, d);
    tb_dma(b, true, (uint64_t)q * k->ops + (k->h[q] ? 2 : 0),
           k->in[q] + (uint64_t)(r0 * k->L * (k->h[q] ? 2 : 4)), d);
  }
  tb_touch(b, ISA_UNIT_VECTOR, 0, (uint64_t)k->n * k->ops);
  tb_valu(b, OP_VIMM, V_ZERO, 0, 0);
  tb_valu(b, OP_VIOTA, 0, 0, 0);
  tb_valu(b, OP_VIOTA, 1, 1, 0);
  tb_raw(b, OP_VCMPEQI, M_LANE0, 0, V_ZERO, 0, 0, 0);
  tb_raw(b, OP_VCMPEQI, M_PICK, 1, V_ZERO, 0, 0, 0);
  tb_raw(b, OP_MAND, M_LANE0, M_LANE0, M_PICK, 0, 0, 0);
  int *r[8] = {&k->rRow, &k->rLo, &k->rI, &k->rJ, &k->rM, &k->rH, &k->rK, &k->rT};
  for (int j = 0; j < 8; j++) *r[j] = tb_sreg_take(b);
  int lv = levels_of(k->L);
  tb_raw(b, OP_SLI, k->rRow, 0, 0, 0, 0, 0);
  uint64_t row = tb_label(b);
  for (int l = 0; l < lv && !b->failed; l++) {
    uint64_t so = l % 2 ? k->half : 0;
    if (!merge_level(b, k, (int64_t)1 << l, so, k->half - so)) break;
  }
  tb_raw(b, OP_SADDI, k->rRow, k->rRow, 0, 0, 0, (int32_t)(k->L * 4));
  tb_branch(b, OP_BLT, k->rRow, tb_sreg(b, (uint32_t)(rows * k->L * 4)), row);
  tb_label(b);
  for (int j = 0; j < 8; j++) tb_sreg_give(b, *r[j]);
  uint64_t res = lv % 2 ? k->half : 0;
  for (int q = 0; q < k->n; q++) {
    row_desc(k, q, rows, k->K, k->K, d);
    tb_dma(b, false, (uint64_t)q * k->ops + res + (k->h[q] ? 2 : 0),
           k->out[q] + (uint64_t)(r0 * k->K * (k->h[q] ? 2 : 4)), d);
  }
}

/* Runs k over its rows, in blocks that fit VMEM. */
static void sort_run(tb *b, sortk *k) {
  if (k->R <= 0 || k->L <= 0 || k->K <= 0 || b->failed) return;
  uint64_t budget = b->t.vmem_bytes / 8 * 7, per = budget / (2 * (uint64_t)k->n) / 4096 * 4096;
  uint64_t rowb = (uint64_t)k->L * 4;
  if (per < rowb + SORT_PAD) {
    tb_error(b, ST_UNSUPPORTED,
             "a row of %lld elements of %d operand(s) does not fit VMEM (%llu bytes: two "
             "buffers of the row per operand)",
             (long long)k->L, k->n, (unsigned long long)b->t.vmem_bytes);
    return;
  }
  int64_t rb = (int64_t)((per - SORT_PAD) / rowb);
  if (rb > k->R) rb = k->R;
  k->half = (rb * rowb + SORT_PAD + 4095) / 4096 * 4096;
  k->ops = 2 * k->half;
  if (!tb_vmem_fits(b, (uint64_t)k->n * k->ops, "a sort")) return;
  for (int q = 0; q < k->n; q++) /* bf16 words: low halves zero for good */
    if (k->h[q]) tk_vfill(b, (uint64_t)q * k->ops, k->half, 0);
  tb_explain(b, "sort: %lld row(s) of %lld element(s), %d operand(s), %lld row(s) per VMEM block: "
             "the evaluator's merge sort, %d level(s), one merge step per element and level on "
             "the scalar unit",
             (long long)k->R, (long long)k->L, k->n, (long long)rb, levels_of(k->L));
  for (int64_t r0 = 0; r0 < k->R && !b->failed; r0 += rb)
    sort_block(b, k, r0, k->R - r0 < rb ? k->R - r0 : rb);
}

/* v with dimension d moved last (a new reference). */
static tval *dim_last(tb *b, tval *v, int d) {
  if (d == v->rank - 1) return tv_ref(b, v);
  int64_t perm[IR_MAX_RANK];
  int j = 0;
  for (int k = 0; k < v->rank; k++)
    if (k != d) perm[j++] = k;
  perm[j] = d;
  return tv_transpose(b, v, perm);
}

/* The inverse of dim_last on a result (consumes v). */
static tval *dim_back(tb *b, tval *v, int d) {
  if (d == v->rank - 1) return v;
  int64_t perm[IR_MAX_RANK];
  for (int k = 0; k < v->rank; k++) perm[k] = k < d ? k : k == d ? v->rank - 1 : k - 1;
  tval *r = tv_transpose(b, v, perm);
  tv_release(b, v);
  return r;
}

static tval *tuple_of(tb *b, tval **e, int n) {
  tval *t = arena_alloc(b->a, sizeof *t);
  t->tuple = true;
  t->n = n;
  t->elems = arena_array(b->a, (size_t)n, sizeof(tval *));
  memcpy(t->elems, e, (size_t)n * sizeof(tval *));
  return t;
}

/* Sorts vals (n arrays of one shape) along d keeping the first K of each
 * sorted row; outs[q] the results (dims of vals with d of size K). */
static void sort_values(tb *b, sortk *k, tval **vals, int d, tval **outs) {
  const tval *v0 = vals[0];
  int64_t dims[IR_MAX_RANK];
  tval *t[SORT_MAX_OPS], *o[SORT_MAX_OPS];
  for (int q = 0; q < k->n; q++) {
    t[q] = dim_last(b, vals[q], d);
    memcpy(dims, t[q]->dims, sizeof dims);
    dims[v0->rank - 1] = k->K;
    o[q] = tv_new(b, vals[q]->type, v0->rank, dims);
    k->in[q] = tv_addr(t[q]);
    k->out[q] = tv_addr(o[q]);
    k->h[q] = tv_esize(vals[q]->type) == 2;
  }
  k->L = v0->dims[d];
  k->R = k->L ? v0->count / k->L : 0;
  sort_run(b, k);
  for (int q = 0; q < k->n; q++) {
    tv_release(b, t[q]);
    outs[q] = dim_back(b, o[q], d);
  }
}

void lower_sort(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tb *b = x->b;
  int64_t dim;
  bool stable;
  if (!ir_sort_attrs_of(in, &dim, &stable) || in->ncalls != 1) {
    tb_error(b, ST_INVALID_ARGUMENT, "malformed sort (the verifier reports why)");
    return;
  }
  if (in->nops > SORT_MAX_OPS) {
    tb_error(b, ST_UNSUPPORTED, "sort of %d operands: the TPU sorts at most %d at once", in->nops,
             SORT_MAX_OPS);
    return;
  }
  tk_elem cmp;
  src_loc at = b->loc;
  if (!lower_scalar_comp_as(x, in->calls[0], &cmp, "comparator")) return;
  b->loc = at;
  sortk k = {.n = in->nops, .ncmp = in->nops, .cmp = &cmp};
  tval *vals[SORT_MAX_OPS], *outs[SORT_MAX_OPS];
  for (int q = 0; q < k.n; q++) vals[q] = x->val[in->ops[q]];
  k.K = vals[0]->dims[dim];
  sort_values(b, &k, vals, (int)dim, outs);
  x->val[i] = k.n == 1 ? outs[0] : tuple_of(b, outs, k.n);
}

void lower_topk(lctx *x, ir_id i) {
  const ir_inst *in = inst_of(x, i);
  tb *b = x->b;
  int64_t kk;
  bool largest;
  tval *v = x->val[in->ops[0]];
  if (!ir_topk_attrs_of(in, &kk, &largest) || in->nops != 1 || v->tuple || v->rank < 1) {
    tb_error(b, ST_INVALID_ARGUMENT, "malformed top-k (the verifier reports why)");
    return;
  }
  tk_elem cmp;
  tk_node nodes[3];
  ir_type types[2] = {v->type, v->type};
  int outn = 2;
  if (in->op == IR_OP_CUSTOM_CALL && in->ncalls == 1) {
    src_loc at = b->loc;
    if (!lower_scalar_comp_as(x, in->calls[0], &cmp, "comparator")) return;
    b->loc = at;
  } else {
    nodes[0] = (tk_node){.kind = TK_IN, .type = v->type, .input = 0};
    nodes[1] = (tk_node){.kind = TK_IN, .type = v->type, .input = 1};
    nodes[2] = (tk_node){.kind = TK_OP, .type = IR_PRED, .op = IR_OP_COMPARE,
                         .cmp_dir = largest ? IR_CMP_GT : IR_CMP_LT,
                         .cmp_type = IR_CMPT_TOTALORDER, .nargs = 2, .args = {0, 1}};
    cmp = (tk_elem){.nnodes = 3, .nodes = nodes, .ninputs = 2, .in_type = types,
                    .noutputs = 1, .out_node = &outn};
  }
  sortk k = {.n = 2, .ncmp = 1, .cmp = &cmp, .K = kk};
  tval *vals[2] = {v, lower_iota_value(b, IR_S32, v->rank, v->dims, v->rank - 1)}, *outs[2];
  if (!vals[1]) return;
  sort_values(b, &k, vals, v->rank - 1, outs);
  tv_release(b, vals[1]);
  x->val[i] = tuple_of(b, outs, 2);
}
