/* rows.c: row kernels: reductions over the trailing (minor) dimensions
 * together with their elementwise producers and consumers, on blocks of
 * rows held in VMEM (layer norm, softmax-like row programs, and plain
 * row sums).
 *
 * The value space is [O, R]: O rows (the kept dims) of R elements (the
 * reduced trailing dims, row-major). Every value of a row program is one
 * of
 *   FULL  [O, R]: fusion parameters of that shape (loaded per row block),
 *         elementwise ops of FULL values, broadcasts of ROW values back
 *         along the rows;
 *   ROW   [O]: reduces (add, maximum, minimum of f32 over the trailing
 *         dims), reshapes and elementwise ops of ROW values;
 *   COL   [R]: a parameter broadcast along the trailing dims (a scale or
 *         shift vector), loaded once;
 *   CONST scalar constants (and broadcasts of them).
 * A block of Rb rows of every FULL input (about 256 KiB) is DMAd into
 * VMEM (row stride Rpad = R rounded up to 128 lanes; two slots, the next
 * block loading while this one computes) and, per group of 8 rows, each reduce is one
 * pass over the row's 128-wide chunks: its FULL operand evaluated on 8x128
 * tiles (tk_eval_dag: the kernels of elem.c) and accumulated lane-wise,
 * then folded across lanes (vrlsum / vrlmax / vrlmin), which leaves the
 * row's value broadcast across the lanes of its sublane: exactly the
 * operand a FULL op needs, so a broadcast back along the rows costs
 * nothing. ROW ops run on those registers; a last pass computes the FULL
 * outputs and stores them (f32 or bf16) for one DMA per block; ROW outputs
 * are stored lane 0 of each sublane. The input block is read from HBM
 * once however many passes the program makes.
 *
 * Order of an f32 add (docs/numerics.md, the evaluator's reduce_row):
 * lane l folds elements l, l+128, l+256, ... from element l; the lane
 * partials fold in ascending lane order (vrlsum); the result is
 * init + that sum. The tail chunk's lanes past R are replaced by -0 (the
 * identity of the add for every value, -0 included), max/min by -inf /
 * +inf; max and min are order-free. */
#include "backend/tpu/lower.h"

typedef enum { RC_CONST, RC_FULL, RC_ROW, RC_COL } rclass;
typedef enum { RN_IN, RN_COL, RN_CONST, RN_SCAL, RN_OP, RN_RED, RN_ALIAS } rkind;

typedef struct rnode {
  rkind kind;
  rclass cls;
  ir_type type;
  int input;          /* RN_IN, RN_COL, RN_SCAL: index into the inputs of that kind */
  uint32_t bits;      /* RN_CONST */
  ir_op op;           /* RN_OP: the elementwise op; RN_RED: add, maximum or minimum */
  ir_cmp_dir cmp_dir;
  ir_cmp_type cmp_type;
  int nargs, args[3]; /* RN_OP; RN_RED: operand, init; RN_ALIAS: the aliased node */
} rnode;

typedef struct rprog {
  VEC(rnode) nodes;
  VEC(uint64_t) in_addr; /* FULL inputs, [O, R] row-major */
  VEC(ir_type) in_type;
  VEC(uint64_t) col_addr; /* COL inputs, f32 [R] */
  VEC(uint64_t) scal_addr; /* scalar inputs (reduce inits from HBM), f32 */
  VEC(int) out_node;
  VEC(uint64_t) out_addr;
  VEC(ir_type) out_type; /* FULL outputs: the node's type, or bf16 stored rounded */
  int64_t O, R;
} rprog;

static int rp_add(tb *b, rprog *p, rnode n) {
  VEC_PUSH(b->a, p->nodes, n);
  return p->nodes.n - 1;
}

/* ---- passes: FULL subtrees as elementwise programs ------------------------------ */

/* Where a pass program's input k comes from. */
typedef struct psrc {
  rkind kind; /* RN_IN (load FULL input), RN_COL (load COL input), RN_RED: a ROW register */
  int idx;    /* input index, or the ROW node */
} psrc;

typedef struct pass {
  tk_elem e;
  VEC(tk_node) nodes;
  VEC(psrc) src;
  int *memo; /* rnode -> 1 + tk node */
} pass;

static int pass_node(tb *b, const rprog *p, pass *ps, int i) {
  if (ps->memo[i]) return ps->memo[i] - 1;
  const rnode *n = &p->nodes.v[i];
  tk_node t;
  memset(&t, 0, sizeof t);
  t.type = n->type;
  if (n->kind == RN_ALIAS && n->cls == RC_FULL) {
    int r = pass_node(b, p, ps, n->args[0]);
    ps->memo[i] = r + 1;
    return r;
  }
  if (n->kind == RN_CONST) {
    t.kind = TK_CONST;
    t.bits = n->bits;
  } else if (n->cls == RC_ROW || n->kind == RN_IN || n->kind == RN_COL || n->kind == RN_SCAL) {
    t.kind = TK_IN;
    t.input = ps->src.n;
    psrc s = {n->cls == RC_ROW ? RN_RED : n->kind, n->cls == RC_ROW ? i : n->input};
    if (n->kind == RN_SCAL) s = (psrc){RN_SCAL, n->input};
    VEC_PUSH(b->a, ps->src, s);
  } else { /* a FULL op */
    t.kind = TK_OP;
    t.op = n->op;
    t.cmp_dir = n->cmp_dir;
    t.cmp_type = n->cmp_type;
    t.nargs = n->nargs;
    for (int k = 0; k < n->nargs; k++) t.args[k] = pass_node(b, p, ps, n->args[k]);
  }
  VEC_PUSH(b->a, ps->nodes, t);
  ps->memo[i] = ps->nodes.n;
  return ps->nodes.n - 1;
}

/* The program computing nodes targets[0..nt) from loads and ROW registers. */
static pass *pass_make(tb *b, const rprog *p, const int *targets, int nt) {
  pass *ps = arena_alloc(b->a, sizeof *ps);
  memset(ps, 0, sizeof *ps);
  ps->memo = arena_array(b->a, (size_t)p->nodes.n + 1, sizeof(int));
  int *outs = arena_array(b->a, (size_t)nt + 1, sizeof(int));
  for (int k = 0; k < nt; k++) outs[k] = pass_node(b, p, ps, targets[k]);
  ps->e.nnodes = ps->nodes.n;
  ps->e.nodes = ps->nodes.v;
  ps->e.ninputs = ps->src.n;
  ps->e.noutputs = nt;
  ps->e.out_node = outs;
  return ps;
}

/* ---- the kernel ------------------------------------------------------------------ */

/* Masks of the kernel: tk_eval_tiles takes m1..m4 for two groups. */
enum { M_TAIL = 5, M_LANE0 = 6, RK_GROUPS = 2 };
/* The most instructions a fused computation made a row kernel may have. */
enum { RK_MAX_INSTS = 1024 };

typedef struct rk {
  tb *b;
  const rprog *p;
  int64_t Rpad, Rb, nC;
  uint64_t col_off, scal_off, in_off, in_slot, out_off, out_slot, row_off, row_slot;
  uint64_t *in_base, *out_base; /* per input / output: offset of slot 0 */
  int G;                         /* groups of 8 rows computed in lockstep */
  int *reg[RK_GROUPS];           /* ROW node -> register, per group */
  uint32_t used[RK_GROUPS];      /* per group: registers in use (outside
                                    its part of the file: all) */
  tk_plan pl;                    /* G tiles at once, no held constants */
  pass **red_pass;               /* per node (reduces): its pass */
  pass *out_pass;
} rk;

static uint32_t part_of(const rk *k, int g) {
  int RP = TGT_VREGS / k->G;
  return RP >= 32 ? 0xffffffffu : ((1u << RP) - 1) << (g * RP);
}

static int ralloc(rk *k, int g) {
  for (int r = 0; r < TGT_VREGS; r++)
    if (!(k->used[g] >> r & 1)) {
      k->used[g] |= 1u << r;
      return r;
    }
  tb_error(k->b, ST_UNSUPPORTED, "row program needs more than %d vector registers",
           TGT_VREGS / k->G);
  return 0;
}
static void rfree(rk *k, int g, int r) { k->used[g] &= ~(1u << r); }

static int esz(ir_type t) { return tk_itype(t) == IR_BF16 ? 2 : 4; }

/* Evaluates pass ps on chunk c of the G groups of 8 rows at r0 + 8g (slot
 * sl), their code interleaved; out[g * noutputs + o] get registers group
 * g owns. */
static bool pass_eval(rk *k, const pass *ps, int64_t r0, int G, int sl, int64_t c, int *out) {
  tb *b = k->b;
  const rprog *p = k->p;
  int ni = ps->e.ninputs, no = ps->e.noutputs;
  int in_regs[RK_GROUPS * 32], loaded[RK_GROUPS][32], nl[RK_GROUPS] = {0};
  if (ni > 32 || no > 32) {
    tb_error(b, ST_UNSUPPORTED, "row program with %d inputs", ni);
    return false;
  }
  for (int g = 0; g < G; g++)
    for (int i = 0; i < ni; i++) {
      psrc s = ps->src.v[i];
      if (s.kind == RN_RED) {
        in_regs[g * ni + i] = k->reg[g][s.idx];
        continue;
      }
      int r = ralloc(k, g);
      loaded[g][nl[g]++] = r;
      in_regs[g * ni + i] = r;
      if (s.kind == RN_IN) {
        int es = esz(p->in_type.v[s.idx]);
        tb_vld(b, r, k->in_base[s.idx] + (uint64_t)sl * k->in_slot +
                         (uint64_t)(((r0 + 8 * g) * k->Rpad + c * 128) * es),
               (uint32_t)(k->Rpad * es), es == 2);
      } else if (s.kind == RN_COL) {
        tb_vld(b, r,
               k->col_off + (uint64_t)s.idx * (uint64_t)tb_align((uint64_t)k->Rpad * 4) +
                   (uint64_t)(c * TGT_VROW_BYTES),
               0, false);
      } else { /* RN_SCAL */
        tb_vld(b, r, k->scal_off + (uint64_t)s.idx * TGT_VREG_BYTES, TGT_VROW_BYTES, false);
      }
    }
  uint32_t keep = 0; /* what the groups hold in their parts */
  for (int g = 0; g < G; g++) keep |= k->used[g] & part_of(k, g);
  if (!tk_eval_tiles_keep(b, &ps->e, &k->pl, G, in_regs, out, keep)) return false;
  for (int g = 0; g < G; g++) {
    /* Outputs that are inputs: loaded ones change owner, ROW registers are
     * copied (the caller may overwrite its outputs). */
    for (int o = 0; o < no; o++) {
      int *op = &out[g * no + o];
      bool is_in = false, is_loaded = false;
      for (int i = 0; i < ni; i++) is_in |= in_regs[g * ni + i] == *op;
      for (int j = 0; j < nl[g]; j++)
        if (loaded[g][j] == *op) loaded[g][j] = -1, is_loaded = true;
      if (is_in && !is_loaded) {
        int r = ralloc(k, g);
        tb_valu(b, OP_VMOV, r, *op, 0);
        *op = r;
      }
      k->used[g] |= 1u << *op;
    }
    for (int j = 0; j < nl[g]; j++)
      if (loaded[g][j] >= 0) rfree(k, g, loaded[g][j]);
  }
  return !b->failed;
}

static uint32_t red_identity(ir_op op) {
  return op == IR_OP_ADD ? 0x80000000u : op == IR_OP_MAXIMUM ? 0xFF800000u : 0x7F800000u;
}
static isa_op red_vop(ir_op op) {
  return op == IR_OP_ADD ? OP_VADDF : op == IR_OP_MAXIMUM ? OP_VMAXF : OP_VMINF;
}

/* Reduce node i for the G groups at r0: their ROW registers in k->reg. */
static void reduce_rows(rk *k, int i, int64_t r0, int G, int sl) {
  tb *b = k->b;
  const rnode *n = &k->p->nodes.v[i];
  int64_t R = k->p->R;
  int acc[RK_GROUPS] = {-1, -1}, v[RK_GROUPS];
  for (int64_t c = 0; c < k->nC && !b->failed; c++) {
    if (!pass_eval(k, k->red_pass[i], r0, G, sl, c, v)) return;
    for (int g = 0; g < G; g++) {
      if (c == k->nC - 1 && R % 128) { /* lanes past R: the op's identity */
        int t = ralloc(k, g);
        tb_valu(b, OP_VIMM, t, (int32_t)red_identity(n->op), 0);
        tb_raw(b, OP_VSEL, v[g], M_TAIL, v[g], t, 0, 0);
        rfree(k, g, t);
      }
      if (acc[g] < 0) {
        acc[g] = v[g];
      } else {
        tb_valu(b, red_vop(n->op), acc[g], acc[g], v[g]);
        rfree(k, g, v[g]);
      }
    }
  }
  isa_op lop = n->op == IR_OP_ADD ? OP_VRLSUM : n->op == IR_OP_MAXIMUM ? OP_VRLMAX : OP_VRLMIN;
  for (int g = 0; g < G; g++) tb_valu(b, lop, acc[g], acc[g], 0);
  /* result = op(init, lanes' fold) */
  const rnode *in = &k->p->nodes.v[n->args[1]];
  for (int g = 0; g < G; g++) {
    int t = ralloc(k, g);
    if (in->kind == RN_CONST) tb_valu(b, OP_VIMM, t, (int32_t)in->bits, 0);
    else
      tb_vld(b, t, k->scal_off + (uint64_t)in->input * TGT_VREG_BYTES, TGT_VROW_BYTES, false);
    tb_valu(b, red_vop(n->op), acc[g], t, acc[g]);
    rfree(k, g, t);
    k->reg[g][i] = acc[g];
  }
}

/* A ROW op node for group g's rows: one-node program on registers. */
static int row_op(rk *k, int g, int i) {
  tb *b = k->b;
  const rnode *n = &k->p->nodes.v[i];
  tk_node nodes[4];
  int in_regs[3], ni = 0;
  memset(nodes, 0, sizeof nodes);
  for (int a = 0; a < n->nargs; a++) {
    const rnode *an = &k->p->nodes.v[n->args[a]];
    nodes[a].type = an->type;
    if (an->kind == RN_CONST) {
      nodes[a].kind = TK_CONST;
      nodes[a].bits = an->bits;
    } else {
      nodes[a].kind = TK_IN;
      nodes[a].input = ni;
      in_regs[ni++] = k->reg[g][n->args[a]];
    }
  }
  tk_node *o = &nodes[n->nargs];
  o->kind = TK_OP;
  o->type = n->type;
  o->op = n->op;
  o->cmp_dir = n->cmp_dir;
  o->cmp_type = n->cmp_type;
  o->nargs = n->nargs;
  for (int a = 0; a < n->nargs; a++) o->args[a] = a;
  int root = n->nargs, out = 0;
  tk_elem e = {n->nargs + 1, nodes, ni, NULL, NULL, 1, &root, NULL, 0};
  if (!tk_eval_dag(b, &k->used[g], &e, in_regs, &out)) return 0;
  return out;
}

/* The G groups of 8 rows at r0, r0 + 8, ...: every ROW node in order
 * (reduces as passes over the chunks), then the outputs. */
static void rows_groups(rk *k, int64_t r0, int G, int sl) {
  tb *b = k->b;
  const rprog *p = k->p;
  for (int g = 0; g < G; g++) k->used[g] = ~part_of(k, g);
  for (int i = 0; i < p->nodes.n && !b->failed; i++) {
    const rnode *n = &p->nodes.v[i];
    if (n->cls != RC_ROW) continue;
    if (n->kind == RN_RED) {
      reduce_rows(k, i, r0, G, sl);
      continue;
    }
    for (int g = 0; g < G; g++)
      k->reg[g][i] = n->kind == RN_ALIAS ? k->reg[g][n->args[0]] : row_op(k, g, i);
  }
  /* FULL outputs: one pass over the chunks; ROW outputs: lane 0 of each
   * sublane to consecutive words. */
  int outs[RK_GROUPS * 32], nf = k->out_pass ? k->out_pass->e.noutputs : 0;
  for (int64_t c = 0; c < k->nC && k->out_pass && !b->failed; c++) {
    if (!pass_eval(k, k->out_pass, r0, G, sl, c, outs)) return;
    for (int g = 0; g < G; g++)
      for (int o = 0, f = 0; o < p->out_node.n; o++) {
        if (p->nodes.v[p->out_node.v[o]].cls != RC_FULL) continue;
        int es = esz(p->out_type.v[o]), r = outs[g * nf + f++];
        tb_vst(b, r, k->out_base[o] + (uint64_t)sl * k->out_slot +
                         (uint64_t)(((r0 + 8 * g) * k->Rpad + c * 128) * es),
               (uint32_t)(k->Rpad * es), es == 2, 0);
        rfree(k, g, r);
      }
  }
  for (int g = 0; g < G; g++)
    for (int o = 0; o < p->out_node.n; o++)
      if (p->nodes.v[p->out_node.v[o]].cls == RC_ROW)
        tb_vst(b, k->reg[g][p->out_node.v[o]],
               k->out_base[o] + (uint64_t)sl * k->row_slot + (uint64_t)((r0 + 8 * g) * 4), 4,
               false, M_LANE0);
}

/* Emits the row kernel of p; false (nothing emitted) when a block of 8
 * rows does not fit VMEM. */
static bool rows_kernel(tb *b, const rprog *p) {
  int64_t O = p->O, R = p->R, Rpad = (R + 127) / 128 * 128;
  uint64_t in_row = 0, out_row = 0, row_rows = 0;
  for (int i = 0; i < p->in_addr.n; i++) in_row += (uint64_t)(Rpad * esz(p->in_type.v[i]));
  int nrow_out = 0;
  for (int o = 0; o < p->out_node.n; o++) {
    const rnode *n = &p->nodes.v[p->out_node.v[o]];
    if (n->cls == RC_FULL) out_row += (uint64_t)(Rpad * esz(p->out_type.v[o]));
    else nrow_out++;
  }
  row_rows = (uint64_t)nrow_out * 4;
  uint64_t fixed = (uint64_t)p->col_addr.n * tb_align((uint64_t)Rpad * 4) +
                   (uint64_t)p->scal_addr.n * TGT_VREG_BYTES + 2 * (uint64_t)nrow_out * 1024 +
                   (uint64_t)(p->in_addr.n + p->out_node.n) * 2 * TB_GRANULE;
  uint64_t budget = b->t.vmem_bytes / 4 * 3;
  /* Blocks of about 256 KiB of f32 rows (16 to 512 rows): the first
   * block's load and the last block's store overlap nothing, so they stay
   * short. */
  int64_t Rb = (O + 7) / 8 * 8, cap = ((int64_t)1 << 18) / (Rpad * 4) / 16 * 16;
  if (cap < 16) cap = 16;
  if (cap > 512) cap = 512;
  if (Rb > cap) Rb = cap;
  while (Rb > 8 && fixed + 2 * (uint64_t)Rb * (in_row + out_row + row_rows) > budget)
    Rb = (Rb / 2 + 7) / 8 * 8;
  if (fixed + 2 * (uint64_t)Rb * (in_row + out_row + row_rows) > budget) return false;
  rk k;
  memset(&k, 0, sizeof k);
  k.b = b;
  k.p = p;
  k.Rpad = Rpad;
  k.Rb = Rb;
  k.nC = Rpad / 128;
  k.in_base = arena_array(b->a, (size_t)p->in_addr.n + 1, sizeof(uint64_t));
  k.out_base = arena_array(b->a, (size_t)p->out_node.n + 1, sizeof(uint64_t));
  for (int g = 0; g < RK_GROUPS; g++) k.reg[g] = arena_array(b->a, (size_t)p->nodes.n + 1, sizeof(int));
  k.red_pass = arena_array(b->a, (size_t)p->nodes.n + 1, sizeof(pass *));
  /* VMEM: COL vectors, scalar tiles, then two slots of every FULL input,
   * FULL output and ROW output block. */
  uint64_t at = 0;
  k.col_off = at;
  at += (uint64_t)p->col_addr.n * tb_align((uint64_t)Rpad * 4);
  k.scal_off = at;
  at += (uint64_t)p->scal_addr.n * TGT_VREG_BYTES;
  /* every slot of a kind has the size of the widest (f32) one */
  k.in_slot = tb_align((uint64_t)(Rb * Rpad * 4));
  for (int i = 0; i < p->in_addr.n; i++, at += 2 * k.in_slot) k.in_base[i] = at;
  k.out_slot = tb_align((uint64_t)(Rb * Rpad * 4));
  k.row_slot = tb_align((uint64_t)(Rb * 4 + 1024));
  for (int o = 0; o < p->out_node.n; o++) {
    k.out_base[o] = at;
    at += 2 * (p->nodes.v[p->out_node.v[o]].cls == RC_FULL ? k.out_slot : k.row_slot);
  }
  if (at > b->t.vmem_bytes) return false;
  if (!tb_vmem_fits(b, at, "a row kernel")) return true;
  tb_explain(b, "row kernel: %lld rows of %lld elements, blocks of %lld rows with every row in "
                "VMEM (%llu of %llu KiB), each input read once and each output written once",
             (long long)p->O, (long long)p->R, (long long)Rb, (unsigned long long)(at >> 10),
             (unsigned long long)(b->t.vmem_bytes >> 10));
  /* passes */
  int nfull = 0, *ft = arena_array(b->a, (size_t)p->out_node.n + 1, sizeof(int));
  for (int o = 0; o < p->out_node.n; o++)
    if (p->nodes.v[p->out_node.v[o]].cls == RC_FULL) ft[nfull++] = p->out_node.v[o];
  if (nfull) k.out_pass = pass_make(b, p, ft, nfull);
  for (int i = 0; i < p->nodes.n; i++)
    if (p->nodes.v[i].kind == RN_RED) k.red_pass[i] = pass_make(b, p, &p->nodes.v[i].args[0], 1);
  /* Two groups in lockstep when each fits half the registers: its ROW
   * values, an accumulator, a tail identity and the widest pass. */
  int nrow = 0, need = 0;
  for (int i = 0; i < p->nodes.n; i++)
    nrow += p->nodes.v[i].cls == RC_ROW && p->nodes.v[i].kind != RN_ALIAS;
  for (int i = 0; i < p->nodes.n; i++)
    if (k.red_pass[i] && tk_dag_regs(b, &k.red_pass[i]->e) > need) need = tk_dag_regs(b, &k.red_pass[i]->e);
  if (k.out_pass && tk_dag_regs(b, &k.out_pass->e) > need) need = tk_dag_regs(b, &k.out_pass->e);
  k.G = nrow + 2 + need <= TGT_VREGS / 2 && Rb % 16 == 0 ? 2 : 1;
  k.pl.tiles = k.G;
  /* loads of the COL vectors and scalar inits; masks */
  for (int c = 0; c < p->col_addr.n; c++) {
    int64_t d[10] = {R * 4, 1, 1, 1, 0, 0, 0, 0, 0, 0};
    tb_dma(b, true, k.col_off + (uint64_t)c * tb_align((uint64_t)Rpad * 4), p->col_addr.v[c], d);
  }
  for (int s = 0; s < p->scal_addr.n; s++) {
    int64_t d[10] = {4, TGT_VREG_ELEMS, 1, 1, 0, 0, 0, 4, 0, 0};
    tb_dma(b, true, k.scal_off + (uint64_t)s * TGT_VREG_BYTES, p->scal_addr.v[s], d);
  }
  tb_valu(b, OP_VIOTA, 0, 0, 0);
  tb_valu(b, OP_VIMM, 1, (int32_t)(R % 128), 0);
  tb_raw(b, OP_VCMPLTI, M_TAIL, 0, 1, 0, 0, 0);
  tb_valu(b, OP_VIMM, 1, 1, 0);
  tb_raw(b, OP_VCMPLTI, M_LANE0, 0, 1, 0, 0, 0);
  int64_t nblk = (O + Rb - 1) / Rb;
  for (int64_t blk = -1; blk < nblk && !b->failed; blk++) {
    if (blk + 1 < nblk) {
      int64_t o0 = (blk + 1) * Rb, rows = O - o0 < Rb ? O - o0 : Rb;
      int sl = (int)((blk + 1) & 1);
      for (int i = 0; i < p->in_addr.n; i++) {
        int es = esz(p->in_type.v[i]);
        int64_t d[10] = {R * es, rows, 1, 1, R * es, 0, 0, Rpad * es, 0, 0};
        tb_dma(b, true, k.in_base[i] + (uint64_t)sl * k.in_slot,
               p->in_addr.v[i] + (uint64_t)(o0 * R * es), d);
      }
    }
    if (blk < 0) continue;
    int64_t o0 = blk * Rb, rows = O - o0 < Rb ? O - o0 : Rb;
    int sl = (int)(blk & 1);
    /* (a last odd group of 8 rows has a partner on stale rows of the
     * slot, computed and never stored: Rb is a multiple of 16 then) */
    for (int64_t r0 = 0; r0 < rows && !b->failed; r0 += 8 * k.G) rows_groups(&k, r0, k.G, sl);
    for (int o = 0; o < p->out_node.n; o++) {
      const rnode *n = &p->nodes.v[p->out_node.v[o]];
      if (n->cls == RC_FULL) {
        int es = esz(p->out_type.v[o]);
        int64_t d[10] = {R * es, rows, 1, 1, R * es, 0, 0, Rpad * es, 0, 0};
        tb_dma(b, false, k.out_base[o] + (uint64_t)sl * k.out_slot,
               p->out_addr.v[o] + (uint64_t)(o0 * R * es), d);
      } else {
        int64_t d[10] = {rows * 4, 1, 1, 1, 0, 0, 0, 0, 0, 0};
        tb_dma(b, false, k.out_base[o] + (uint64_t)sl * k.row_slot, p->out_addr.v[o] + (uint64_t)(o0 * 4),
               d);
      }
    }
  }
  return true;
}

/* ---- lowering --------------------------------------------------------------------- */

/* The reducer's op when to_apply is one add, maximum or minimum of its two
 * f32 parameters; IR_OP__COUNT otherwise. */
static ir_op row_reducer(const ir_module *m, ir_comp_id c) {
  const ir_comp *cp = &m->comps.v[c];
  int live = 0;
  for (int i = 0; i < cp->insts.n; i++) live += !cp->insts.v[i].dead;
  if (cp->root < 0 || live != 3) return IR_OP__COUNT;
  const ir_inst *r = &cp->insts.v[cp->root];
  if ((r->op != IR_OP_ADD && r->op != IR_OP_MAXIMUM && r->op != IR_OP_MINIMUM) || r->nops != 2 ||
      r->shape->type != IR_F32 || r->shape->rank != 0)
    return IR_OP__COUNT;
  const ir_inst *a = &cp->insts.v[r->ops[0]], *bb = &cp->insts.v[r->ops[1]];
  if (a->op != IR_OP_PARAMETER || bb->op != IR_OP_PARAMETER ||
      a->a->parameter_number == bb->a->parameter_number)
    return IR_OP__COUNT;
  return r->op;
}

bool lower_rows_applies(const ir_module *m, const ir_inst *red, const ir_shape *os) {
  if (red->op != IR_OP_REDUCE || red->nops != 2 || os->type != IR_F32 || os->rank < 1) return false;
  ir_op op = row_reducer(m, red->calls[0]);
  if (op == IR_OP__COUNT) return false;
  int nr = red->a->dimensions.n;
  bool isred[IR_MAX_RANK] = {0};
  for (int k = 0; k < nr; k++) isred[red->a->dimensions.v[k]] = true;
  int64_t R = 1, O = 1;
  for (int d = 0; d < os->rank; d++) {
    if (isred[d] != (d >= os->rank - nr)) return false;
    if (isred[d]) R *= os->dims[d];
    else O *= os->dims[d];
  }
  if (nr < 1 || R < 1 || O < 1) return false;
  /* the tree order of many rows into few outputs stays lower_reduce's */
  return !(op == IR_OP_ADD && lower_tree_fold(R, O));
}

const char *lower_rows_refusal(const tgt_target *t, ir_op op, int64_t R, int64_t O, arena *a) {
  if (op == IR_OP_ADD && lower_tree_fold(R, O))
    return "an f32 sum of 4096 or more elements into fewer than 1024 outputs folds as a tree";
  /* 8 rows of every input must fit VMEM beside the kernel's other
   * buffers (rows_kernel); 1/16 of it keeps room for a fusion's inputs. */
  if ((uint64_t)R * 4 * TGT_SUBLANES > t->vmem_bytes / 16)
    return arena_printf(a, "8 rows of %lld f32 elements take more than 1/16 of VMEM", (long long)R);
  return NULL;
}

bool lower_row_reduce(lctx *x, ir_id i) {
  const ir_inst *in = &x->comp->insts.v[i];
  tval *v = x->val[in->ops[0]], *init = x->val[in->ops[1]];
  if (in->shape->type == IR_TUPLE || v->type != IR_F32 ||
      !lower_rows_applies(x->m, in, x->comp->insts.v[in->ops[0]].shape))
    return false;
  tb *b = x->b;
  rprog p;
  memset(&p, 0, sizeof p);
  p.O = 1;
  for (int d = 0; d < in->shape->rank; d++) p.O *= in->shape->dims[d];
  p.R = v->count / (p.O ? p.O : 1);
  VEC_PUSH(b->a, p.in_addr, tv_addr(v));
  VEC_PUSH(b->a, p.in_type, IR_F32);
  VEC_PUSH(b->a, p.scal_addr, tv_addr(init));
  rnode n0 = {RN_IN, RC_FULL, IR_F32, 0, 0, 0, 0, 0, 0, {0, 0, 0}};
  rnode n1 = {RN_SCAL, RC_CONST, IR_F32, 0, 0, 0, 0, 0, 0, {0, 0, 0}};
  rnode n2 = {RN_RED, RC_ROW, IR_F32, 0, 0, row_reducer(x->m, in->calls[0]), 0, 0, 2, {0, 1, 0}};
  rp_add(b, &p, n0);
  rp_add(b, &p, n1);
  int r = rp_add(b, &p, n2);
  tval *out = tv_new(x->b, in->shape->type, in->shape->rank, in->shape->dims);
  VEC_PUSH(b->a, p.out_node, r);
  VEC_PUSH(b->a, p.out_addr, tv_addr(out));
  VEC_PUSH(b->a, p.out_type, IR_F32);
  if (!rows_kernel(b, &p)) {
    tv_release(x->b, out);
    return false;
  }
  x->val[i] = out;
  return true;
}

static bool same_dims(int rank, const int64_t *a, int rb, const int64_t *bd) {
  if (rank != rb) return false;
  for (int k = 0; k < rank; k++)
    if (a[k] != bd[k]) return false;
  return true;
}

/* A row program under construction from fusion instruction fin's
 * computation fc over the row space S (its first reduce's operand): O
 * rows of its nk leading dims, R elements of its nr trailing dims. */
typedef struct rbuild {
  lctx *x;
  const ir_inst *fin;
  const ir_comp *fc;
  const ir_shape *S;
  int nr, nk;
  rprog *p;
  int *node;  /* instruction -> its rnode, or -1 */
  int *colof; /* parameter -> 1 + its COL input, or 0 */
  const char *why; /* the condition an instruction failed, for --explain */
  const ir_inst *at;
} rbuild;

/* Records why instruction in is not part of a row program; false. */
static bool no(rbuild *rb, const ir_inst *in, const char *why) {
  rb->why = why;
  rb->at = in;
  return false;
}

/* The row space: the operand shape of fc's first reduce (*nr trailing
 * dims reduced), NULL when there is none or it is not a row reduce. */
static const ir_shape *row_space(const ir_module *m, const ir_comp *fc, int *nr) {
  for (int i = 0; i < fc->insts.n; i++) {
    const ir_inst *in = &fc->insts.v[i];
    if (in->dead || in->op != IR_OP_REDUCE) continue;
    const ir_shape *os = fc->insts.v[in->ops[0]].shape;
    if (!lower_rows_applies(m, in, os)) return NULL;
    *nr = in->a->dimensions.n;
    return os;
  }
  return NULL;
}

/* A parameter: a FULL input when it has the row space's dims; *skip (no
 * node) when it is a COL vector, made by its broadcasts. */
static bool param_node(rbuild *rb, const ir_inst *in, rnode *r, bool *skip) {
  tb *b = rb->x->b;
  tval *v = rb->x->val[rb->fin->ops[in->a->parameter_number]];
  if (!v || v->tuple) return no(rb, in, "a parameter is not a lowered array");
  if (!same_dims(in->shape->rank, in->shape->dims, rb->S->rank, rb->S->dims)) {
    *skip = true;
    return true;
  }
  r->kind = RN_IN;
  r->cls = RC_FULL;
  r->input = rb->p->in_addr.n;
  VEC_PUSH(b->a, rb->p->in_addr, tv_addr(v));
  VEC_PUSH(b->a, rb->p->in_type, v->type);
  return true;
}

/* A broadcast: of a constant (the constant), of a ROW value back along
 * the rows (an alias), or of an f32 parameter along the leading dims (a
 * COL input, loaded once). */
static bool broadcast_node(rbuild *rb, const ir_inst *in, rnode *r) {
  rprog *p = rb->p;
  const ir_shape *s = in->shape, *S = rb->S;
  const ir_inst *o = &rb->fc->insts.v[in->ops[0]];
  int on = rb->node[in->ops[0]], nk = rb->nk, nr = rb->nr;
  const ir_ints *dm = &in->a->dimensions;
  if (on >= 0 && p->nodes.v[on].kind == RN_CONST) {
    *r = p->nodes.v[on];
    return true;
  }
  bool full = same_dims(s->rank, s->dims, S->rank, S->dims);
  if (full && on >= 0 && p->nodes.v[on].cls == RC_ROW && dm->n == nk &&
      same_dims(o->shape->rank, o->shape->dims, nk, S->dims)) {
    bool lead = true;
    for (int k = 0; k < nk; k++)
      lead &= dm->v[k] == k;
    if (!lead) return no(rb, in, "a row value is broadcast along other than the leading dims");
    r->kind = RN_ALIAS;
    r->cls = RC_FULL;
    r->args[0] = on;
    r->type = p->nodes.v[on].type;
    return true;
  }
  if (full && o->op == IR_OP_PARAMETER && o->shape->type == IR_F32 && dm->n == nr &&
      same_dims(o->shape->rank, o->shape->dims, nr, S->dims + nk)) {
    bool trail = true;
    for (int k = 0; k < nr; k++)
      trail &= dm->v[k] == nk + k;
    if (!trail) return no(rb, in, "a parameter is broadcast along other than the trailing (row) dims");
    int64_t pn = o->a->parameter_number;
    if (!rb->colof[pn]) {
      tval *v = rb->x->val[rb->fin->ops[pn]];
      if (!v || v->tuple || v->type != IR_F32) return no(rb, in, "a broadcast column vector is not f32");
      VEC_PUSH(rb->x->b->a, p->col_addr, tv_addr(v));
      rb->colof[pn] = p->col_addr.n;
    }
    r->kind = RN_COL;
    r->cls = RC_FULL;
    r->input = rb->colof[pn] - 1;
    return true;
  }
  return no(rb, in, "a broadcast that is none of: a constant, a row value along the rows, an f32 "
                    "parameter along the leading dims");
}

/* A row reduce of a FULL f32 value over the row space from a constant. */
static bool reduce_node(rbuild *rb, const ir_inst *in, rnode *r) {
  const rprog *p = rb->p;
  const ir_shape *os = rb->fc->insts.v[in->ops[0]].shape;
  int on = rb->node[in->ops[0]], init = rb->node[in->ops[1]];
  if (!lower_rows_applies(rb->x->m, in, os) || in->a->dimensions.n != rb->nr ||
      !same_dims(os->rank, os->dims, rb->S->rank, rb->S->dims) || on < 0 ||
      p->nodes.v[on].cls != RC_FULL || p->nodes.v[on].type != IR_F32 || init < 0 ||
      p->nodes.v[init].kind != RN_CONST)
    return no(rb, in, "a reduce that is not an f32 row reduction of a full value over the row space "
                      "from a constant");
  r->kind = RN_RED;
  r->cls = RC_ROW;
  r->op = row_reducer(rb->x->m, in->calls[0]);
  r->nargs = 2;
  r->args[0] = on;
  r->args[1] = init;
  return true;
}

/* An elementwise op of FULL values (and constants), or of ROW values. */
static bool elem_node(rbuild *rb, const ir_inst *in, rnode *r) {
  if (!(ir_op_flags(in->op) & OPF_ELEMWISE) && in->op != IR_OP_CONVERT)
    return no(rb, in, "an op that is not elementwise, a broadcast, a reduce or a reshape of row values");
  r->kind = RN_OP;
  r->op = in->op;
  r->cmp_dir = in->a->cmp_dir;
  r->cmp_type = in->a->cmp_type;
  r->nargs = in->nops;
  bool full = false, row = false;
  for (int k = 0; k < in->nops; k++) {
    int an = rb->node[in->ops[k]];
    if (an < 0) return no(rb, in, "an operand has no value in the row program");
    r->args[k] = an;
    full |= rb->p->nodes.v[an].cls == RC_FULL;
    row |= rb->p->nodes.v[an].cls == RC_ROW;
  }
  if (full == row) return no(rb, in, "an op mixes full and row values, or has constants only");
  r->cls = full ? RC_FULL : RC_ROW;
  tk_node t = {TK_OP,         in->shape->type, 0,        0,        in->op,
               in->a->cmp_dir, in->a->cmp_type, in->nops, {0, 0, 0}};
  const char *why;
  return tk_elem_supported(rb->x->b, &t, &why) || no(rb, in, why);
}

/* The node of instruction in (*skip: it has none); false when in is not
 * part of a row program. */
static bool inst_node(rbuild *rb, const ir_inst *in, rnode *r, bool *skip) {
  const ir_shape *s = in->shape;
  if (s->type == IR_TUPLE || tk_itype(s->type) == IR_TYPE_INVALID)
    return no(rb, in, "a value of a type the vector unit does not compute");
  memset(r, 0, sizeof *r);
  r->type = s->type;
  switch (in->op) {
  case IR_OP_PARAMETER:
    return param_node(rb, in, r, skip);
  case IR_OP_CONSTANT:
    if (s->rank != 0) return no(rb, in, "a constant that is not a scalar");
    r->kind = RN_CONST;
    r->cls = RC_CONST;
    r->bits = lit_bits(in->a->literal, 0);
    return true;
  case IR_OP_BROADCAST:
    return broadcast_node(rb, in, r);
  case IR_OP_RESHAPE: {
    int on = rb->node[in->ops[0]];
    int64_t cnt = 1;
    for (int k = 0; k < s->rank; k++)
      cnt *= s->dims[k];
    if (on < 0 || rb->p->nodes.v[on].cls != RC_ROW || cnt != rb->p->O)
      return no(rb, in, "a reshape of something other than a row value");
    r->kind = RN_ALIAS;
    r->cls = RC_ROW;
    r->args[0] = on;
    return true;
  }
  case IR_OP_REDUCE:
    return reduce_node(rb, in, r);
  default:
    return elem_node(rb, in, r);
  }
}

/* The program's outputs (p->out_node): the root, or the root tuple's
 * elements, each an op's FULL value or an f32 ROW value; false otherwise. */
static bool rows_outputs(rbuild *rb, const ir_inst *root, int nout) {
  rprog *p = rb->p;
  for (int o = 0; o < nout; o++) {
    ir_id oi = root->op == IR_OP_TUPLE ? root->ops[o] : rb->fc->root;
    int on = rb->node[oi];
    const ir_inst *oin = &rb->fc->insts.v[oi];
    if (on < 0 || p->nodes.v[on].cls == RC_CONST || p->nodes.v[on].cls == RC_COL)
      return no(rb, oin, "an output is a constant or a column vector");
    const rnode *rn = &p->nodes.v[on];
    if (rn->cls == RC_FULL && rn->kind != RN_OP) return no(rb, oin, "an output is an input as it is");
    if (rn->cls == RC_ROW && rn->type != IR_F32) return no(rb, oin, "a row output is not f32");
    VEC_PUSH(rb->x->b->a, p->out_node, on);
  }
  return true;
}

/* The row program of fusion fi in rb (its row space found): built and
 * emitted, or false, with rb->why when an instruction is the reason. */
static bool rows_build(rbuild *rb, ir_id fi, bool out_bf16) {
  lctx *x = rb->x;
  const ir_comp *fc = rb->fc;
  rprog *p = rb->p;
  tb *b = x->b;
  int n = fc->insts.n;
  rb->nk = rb->S->rank - rb->nr;
  p->O = 1;
  p->R = 1;
  for (int d = 0; d < rb->S->rank; d++) {
    if (d < rb->nk)
      p->O *= rb->S->dims[d];
    else
      p->R *= rb->S->dims[d];
  }
  rb->node = arena_array(b->a, (size_t)n + 1, sizeof(int));
  rb->colof = arena_array(b->a, (size_t)rb->fin->nops + 1, sizeof(int));
  for (int i = 0; i < n; i++) {
    const ir_inst *in = &fc->insts.v[i];
    rb->node[i] = -1;
    if (in->dead || in->op == IR_OP_TUPLE) continue;
    rnode r;
    bool skip = false;
    if (!inst_node(rb, in, &r, &skip)) return false;
    if (!skip) rb->node[i] = rp_add(b, p, r);
  }
  const ir_inst *root = &fc->insts.v[fc->root];
  int nout = root->op == IR_OP_TUPLE ? root->nops : 1;
  if (nout > 32) return no(rb, root, "more than 32 outputs");
  if (!rows_outputs(rb, root, nout)) return false;
  tval **outs = arena_array(b->a, (size_t)nout + 1, sizeof(tval *));
  for (int o = 0; o < nout; o++) {
    const ir_shape *s = root->op == IR_OP_TUPLE ? fc->insts.v[root->ops[o]].shape : root->shape;
    /* a single f32 FULL root that only one-pass dots use: stored as bf16 */
    ir_type t = out_bf16 && nout == 1 && s->type == IR_F32 &&
                        p->nodes.v[p->out_node.v[o]].cls == RC_FULL
                    ? IR_BF16
                    : s->type;
    outs[o] = tv_new(b, t, s->rank, s->dims);
    VEC_PUSH(b->a, p->out_addr, tv_addr(outs[o]));
    VEC_PUSH(b->a, p->out_type, t);
  }
  if (!rows_kernel(b, p)) {
    for (int o = 0; o < nout; o++)
      tv_release(b, outs[o]);
    return no(rb, root, "its blocks of rows do not fit VMEM");
  }
  if (root->op != IR_OP_TUPLE) {
    x->val[fi] = outs[0];
  } else {
    tval *t = arena_alloc(b->a, sizeof *t);
    memset(t, 0, sizeof *t);
    t->tuple = true;
    t->n = nout;
    t->elems = outs;
    x->val[fi] = t;
  }
  return true;
}

bool lower_rows_fusion(lctx *x, ir_id fi, bool out_bf16) {
  const ir_inst *fin = &x->comp->insts.v[fi];
  if (fin->op != IR_OP_FUSION || fin->ncalls != 1) return false;
  const ir_comp *fc = &x->m->comps.v[fin->calls[0]];
  /* pass_node recurses once per link of a chain of FULL ops: bounded by
   * the instruction count (longer fusions go instruction by instruction). */
  if (fc->insts.n > RK_MAX_INSTS) return false;
  rprog p;
  memset(&p, 0, sizeof p);
  rbuild rb = {x, fin, fc, NULL, 0, 0, &p, NULL, NULL, NULL, NULL};
  rb.S = row_space(x->m, fc, &rb.nr);
  if (!rb.S) return false;
  bool ok = rows_build(&rb, fi, out_bf16);
  if (!ok && rb.why)
    tb_explain(x->b, "row kernel not used for %%%s: %%%s: %s", fin->info->name ? fin->info->name : "?",
               rb.at && rb.at->info->name ? rb.at->info->name : "?", rb.why);
  return ok;
}
