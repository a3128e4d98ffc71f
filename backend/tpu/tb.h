/* tb.h: private interface of backend/tpu: the program builder (emit.c)
 * and the kernels (copy.c, elem.c, matmul.c, fold.c) that lower.c
 * composes. Prefix tb_ (builder) and tk_ (kernels).
 *
 * Conventions: HBM and VMEM addresses are byte offsets; element strides
 * are in elements. Internal element types are F32, BF16 and S32 (pred and
 * s8 values are held as s32). Every kernel leaves its results in HBM; the
 * builder inserts the semaphores that order units' VMEM accesses. */
#ifndef TPUCC_BACKEND_TPU_TB_H
#define TPUCC_BACKEND_TPU_TB_H

#include "backend/tpu/tpu.h"
#include "isa.h"

enum {
  TB_GRANULE = 512,      /* alignment of every buffer (the race checker's unit) */
  TB_RING = 256,         /* recent VMEM accesses remembered per unit */
  TB_SEM_FENCE = 0,      /* signal U / wait V pairs */
  TB_SEM_DMA = 1,        /* queue-0 DMAs signal TB_SEM_DMA..30 on completion */
  TB_SEM_Q1 = 31,        /* queue-1 DMAs (matmul result stores) signal it */
  TB_DMA_UNIT = ISA_UNIT_DMA0,
  TB_SREG_FIRST = 1, TB_SREG_LAST = 31,
  /* Nesting of called computations the lowering follows (the evaluator's
   * limit, and ir_budget_check's); deeper is a located error. */
  TB_MAX_DEPTH = 64,
  /* Buffers one elementwise program (tk_elementwise) reads, and writes. */
  TK_MAX_INPUTS = 24,
};

typedef struct tb_access {
  uint64_t lo, hi, seq;
  bool write;
} tb_access;

typedef struct tb_unit {
  uint64_t seq;                          /* instructions recorded */
  tb_access ring[TB_RING];
  int head, n;
  uint64_t dropped;                      /* newest seq no longer in the ring */
  uint64_t synced[ISA_UNIT_COUNT];       /* other unit's seq this one waited for */
} tb_unit;

/* VMEM [lo, hi) where another unit, at seq useq, had no access that this
 * one has not waited for and could conflict with (emit.c, conflict_seq):
 * per unit, per other unit, for reads and writes. */
enum { TB_GAPS = 4 };
typedef struct tb_gap {
  uint64_t useq, lo, hi;
} tb_gap;
typedef struct tb_gaps {
  tb_gap gap[ISA_UNIT_COUNT][2][TB_GAPS];
  uint8_t next[ISA_UNIT_COUNT][2];
} tb_gaps;

typedef struct tb_hbm_block {
  uint64_t off, size;
} tb_hbm_block;

/* An HBM buffer as tb_hbm_alloc gave it, recorded for the tpu-buffers
 * dump: its offset and aligned bytes, the code words over which it was
 * held [from, to) (to: UINT64_MAX while held), and the ops that took and
 * freed it (NULL: not freed). */
typedef struct tb_buf {
  uint64_t off, bytes, from, to;
  const char *op, *free_op;
} tb_buf;
typedef VEC(tb_buf) tb_buf_vec;

typedef struct tb {
  arena *a;
  tgt_target t;
  diag *d;
  src_loc loc;          /* instruction being lowered (for errors) */
  const char *opname;
  bool failed;
  base_status status;
  VEC(uint64_t) code;
  uint64_t max_code;
  uint32_t *smem;       /* SMEM image (descriptors) */
  uint32_t smem_words, smem_cap;
  uint32_t dyn_desc;    /* SMEM byte address of the dynamic descriptor slot */
  uint32_t *desc_slot, desc_mask; /* descriptor lookup (emit.c) */
  uint32_t sreg_val[32];
  bool sreg_ok[32];
  uint8_t sreg_older[32], sreg_newer[32], sreg_lru, sreg_mru; /* LRU list, 0 ends it */
  uint8_t sreg_slot[64];   /* value -> register table (emit.c) */
  uint32_t sreg_pinned;    /* bit r: register r taken by tb_sreg_take */
  tb_unit u[ISA_UNIT_COUNT];
  uint32_t units_used;     /* bit u: unit u recorded an access */
  tb_gaps *gaps;           /* [ISA_UNIT_COUNT], in the arena */
  VEC(uint8_t) dma_sem;    /* per DMA (seq - 1): its completion semaphore */
  VEC(uint32_t) dma_ord;   /* per DMA: its token's number on that semaphore */
  uint32_t sem_issued[TGT_SEMS], sem_consumed[TGT_SEMS];
  bool token_dma;          /* tb_dma_token in progress */
  uint32_t q1_pending;     /* queue-1 DMAs whose tokens queue 0 has not taken */
  /* HBM: first-fit over free blocks below hbm_top. */
  VEC(tb_hbm_block) hfree;
  uint64_t hbm_top, hbm_peak, hbm_limit;
  uint64_t vmem_peak;
  uint64_t flops;
  int max_passes;
  int next_mxu;
  int depth;            /* computations being lowered (entry: 1) */
  void *pool;           /* compile.c's constant pool */
  /* Per-op attribution (the .tpub OPS section, helper R): the ops seen so
   * far, the op of every code word, the current op and the FLOPs counter
   * when it became current. */
  VEC(tpub_op) ops;
  VEC(uint32_t) code_op;
  uint32_t cur_op;
  uint64_t op_flops0, op_code0; /* FLOPs and code words when cur_op began */
  const ir_comp *attr_comp; /* instructions of this computation start ops */
  strbuf *explain;          /* NULL, or where tb_explain writes (--explain) */
  int replicas;             /* replicas the program runs as, one per core */
  uint64_t coll_flag;       /* two HBM granules: the collectives' readiness word, where it lands */
  tpu_all_reduce all_reduce; /* how all-reduces are lowered */
  uint32_t coll_desc;       /* SMEM byte address of the collectives' put descriptor (coll_sync.h) */
  uint32_t smem_static;     /* SMEM words below it are rewritten at run time: never interned */
  tb_buf_vec *buflog;       /* NULL, or where tb_hbm_alloc/free log buffers */
} tb;

/* --explain: appends "tiling: OP: message" (OP the op being lowered, an
 * entry instruction or fusion) when asked for; a decision of the lowering
 * or a kernel's plan, said once where it is taken. */
void tb_explain(tb *b, const char *fmt, ...) BASE_PRINTF(2, 3);

/* Records a located error ("tpu: ...") and marks the build failed. */
void tb_error(tb *b, base_status st, const char *fmt, ...) BASE_PRINTF(3, 4);

/* ---- code ------------------------------------------------------------ */
void tb_init(tb *b, arena *a, const tgt_target *t, diag *d);
/* Frees the code words and their op map (heap arrays, not in the arena). */
void tb_fini(tb *b);
/* A scalar register holding v (cached; emits sli when needed). */
int tb_sreg(tb *b, uint32_t v);
/* A scalar register for run-time values (addresses from data): not
 * reused by tb_sreg until tb_sreg_give; at most 8 at once. */
int tb_sreg_take(tb *b);
void tb_sreg_give(tb *b, int r);
/* Appends n encoded words with no memory effect (register code emitted
 * before, replayed), as tb_raw would one by one. */
void tb_words(tb *b, const uint64_t *w, int n);
/* Appends an instruction with no memory effect (scalar, vector ALU). */
void tb_raw(tb *b, isa_op op, int a, int b_, int c, int d, int x, int32_t imm);
/* Vector-unit instructions with their VMEM effects. */
void tb_vld(tb *b, int vd, uint64_t vaddr, uint32_t row_stride, bool bf16);
void tb_vst(tb *b, int vs, uint64_t vaddr, uint32_t row_stride, bool bf16, int mask);
void tb_valu(tb *b, isa_op op, int d, int a, int c);  /* VVV/VV/VI forms */
/* Records that instructions of unit `unit` emitted next with tb_raw (run-
 * time addresses, loops) read and write VMEM [lo, hi): the builder makes
 * the unit wait for other units' conflicting accesses now, and later
 * accesses of other units wait for these. */
void tb_touch(tb *b, int unit, uint64_t lo, uint64_t hi);
/* DMA on queue 0: load = HBM -> VMEM. desc: run, n1..n3, hbm strides,
 * vmem strides (bytes). */
void tb_dma(tb *b, bool load, uint64_t vaddr, uint64_t haddr, const int64_t desc[10]);
/* tb_dma with the HBM address in scalar register hreg, known only at run
 * time to lie in [hlo, hhi] (both ends checked like tb_dma's address). */
void tb_dma_at(tb *b, bool load, uint64_t vaddr, int hreg, uint64_t hlo, uint64_t hhi, const int64_t desc[10]);
/* MXU instructions. */
/* Unit v waits for everything unit u issued so far (when not already). */
void tb_fence(tb *b, int u, int v);
/* A DMA on queue 1 (stores that should not wait behind queue 0's loads).
 * Contract: only between tb_fence(DMA0 -> DMA1) at a kernel's start and
 * tb_dma_q1_drain at its end, and only for HBM that queue 0 does not touch
 * in between: HBM is not tracked across queues otherwise. */
void tb_dma_q1(tb *b, bool load, uint64_t vaddr, uint64_t haddr, const int64_t desc[10]);
void tb_dma_q1_drain(tb *b);
/* A 4-byte DMA whose completion token covers every earlier DMA: gives a
 * second consumer of a DMA's data a token of its own. */
void tb_dma_token(tb *b);
void tb_mwt(tb *b, int mxu, uint64_t vaddr, uint32_t row_stride, uint64_t bytes_span);
/* mwtt: the weight tile loaded transposed, W[k][n] = bf16 at vaddr + n*row_stride + 2k. */
void tb_mwtt(tb *b, int mxu, uint64_t vaddr, uint32_t row_stride, uint64_t bytes_span);
void tb_mswap(tb *b, int mxu);
void tb_mpush(tb *b, int mxu, bool acc, uint64_t vaddr, uint32_t row_stride, uint32_t acc_row,
              int rows);
void tb_mpopm(tb *b, int mxu, uint64_t vaddr, uint32_t row_stride, uint32_t acc_row, int rows);
void tb_halt(tb *b);
/* Control flow (lower_control.c). tb_barrier brings the program to a
 * state that every path reaches alike: the front end waits until every
 * unit has finished all it was given and every DMA token issued so far
 * is taken, and the builder forgets the values it believed scalar
 * registers hold. Code between two barriers is tracked as straight-line
 * code, so a loop body or a branch that begins and ends with one may run
 * any number of times. tb_label: the next instruction's address, where a
 * branch may land (the register cache forgotten); tb_branch emits
 * beq/bne/blt/jmp to target (0 until tb_patch sets it). */
void tb_barrier(tb *b);
uint64_t tb_label(tb *b);
uint64_t tb_branch(tb *b, isa_op op, int ra, int rb, uint64_t target);
void tb_patch(tb *b, uint64_t at, uint64_t target);
/* Makes every instruction emitted from now on serve a new op (an HLO
 * instruction or fusion of the entry, or a pseudo-op like "(results)");
 * strings must outlive the builder. */
void tb_set_op(tb *b, const char *name, const char *kind, src_loc loc);

/* ---- memory ------------------------------------------------------------ */
uint64_t tb_hbm_alloc(tb *b, uint64_t bytes);
void tb_hbm_free(tb *b, uint64_t off, uint64_t bytes);
/* The log of b->buflog (steps.c): a buffer taken, the held buffer at off
 * freed. */
void tb_log_taken(tb *b, uint64_t off, uint64_t bytes);
void tb_log_freed(tb *b, uint64_t off);
/* Checks that a kernel's VMEM footprint fits; records the peak. */
bool tb_vmem_fits(tb *b, uint64_t bytes, const char *what);
/* Bytes of a vector register's tile in VMEM, and its row stride when
 * dense (runtime/isa/target.h): 32-bit or (bf16) packed bf16 lanes. */
static inline uint64_t tb_tile_bytes(bool bf16) {
  return bf16 ? TGT_VREG_BYTES_BF16 : TGT_VREG_BYTES;
}
static inline uint32_t tb_row_bytes(bool bf16) {
  return bf16 ? TGT_VROW_BYTES_BF16 : TGT_VROW_BYTES;
}
static inline uint64_t tb_align(uint64_t x) { return (x + TB_GRANULE - 1) / TB_GRANULE * TB_GRANULE; }

/* n (<= 20) words placed in the SMEM image, 40-byte aligned; their byte
 * address (0 after an error: SMEM full). */
uint32_t tb_smem_words(tb *b, const uint32_t *w, int n);
/* n words (a table read at run time) at a new SMEM byte address, in
 * whole 10-word slots; 0 after an error (SMEM full). */
uint32_t tb_smem_array(tb *b, const uint32_t *w, uint32_t n);

/* ---- kernels ------------------------------------------------------------ */

/* dst[i] = src[i] over an index box of rank dims (row-major iteration of
 * dims); element addresses are base + sum(i_k * stride_k) * esize. Strides
 * may be zero (broadcast) or negative (reverse). */
void tk_copy(tb *b, uint64_t dst, const int64_t *dst_strides, uint64_t src,
             const int64_t *src_strides, int rank, const int64_t *dims, int esize);
/* VMEM [addr, addr + bytes) (a multiple of a bf16 tile) = the 32-bit
 * pattern word, with v0 as the scratch register. */
void tk_vfill(tb *b, uint64_t addr, uint64_t bytes, uint32_t word);
/* count elements of esize bytes at dst = the 32-bit pattern bits (bf16:
 * the low 16 bits). */
void tk_fill(tb *b, uint64_t dst, int64_t count, int esize, uint32_t bits);

/* Elementwise expression programs (elem.c). */
typedef enum tk_node_kind { TK_IN, TK_CONST, TK_OP, TK_IOTA_FLAT } tk_node_kind;
typedef struct tk_node {
  tk_node_kind kind;
  ir_type type;        /* IR element type of the value (pred, s8, s32, bf16, f32) */
  int input;           /* TK_IN: input index */
  uint32_t bits;       /* TK_CONST: internal 32-bit value */
  ir_op op;            /* TK_OP */
  ir_cmp_dir cmp_dir;
  ir_cmp_type cmp_type;
  int nargs, args[3];  /* node indices */
} tk_node;
typedef struct tk_elem {
  int nnodes;
  tk_node *nodes;
  int ninputs;
  uint64_t *in_addr;   /* HBM buffers of internal type */
  ir_type *in_type;    /* IR type of each input */
  int noutputs;
  int *out_node;
  uint64_t *out_addr;
  int64_t count;       /* elements of every input and output */
} tk_elem;
/* Checks that every node is supported (errors name the op); true if so. */
bool tk_elem_supported(tb *b, const tk_node *n, const char **why);
void tk_elementwise(tb *b, const tk_elem *e);
/* tk_elementwise with run-time addresses: in_reg and out_reg (each may be
 * NULL) give per input and output 0 (the address is static), or a scalar
 * register whose value at run time is the buffer's HBM address, known to
 * lie in [in_addr[i], in_addr[i] + span] (out_addr likewise). */
void tk_elementwise_at(tb *b, const tk_elem *e, const int *in_reg, const int *out_reg,
                       uint64_t span);
/* Evaluates e once on 8x128 tiles whose inputs are in registers in_regs;
 * *used is the register pool (bit r = vr in use) before and after; the
 * outputs' registers go to out_regs. false after an error. */
bool tk_eval_dag(tb *b, uint32_t *used, const tk_elem *e, const int *in_regs, int *out_regs);
/* How tk_eval_tiles runs e in a loop over tiles: how many tiles (1..3) at
 * once, and the scalar constants held in registers for the whole loop
 * (constant k in v(31 - k)) instead of one vimm per tile; the other
 * registers are split evenly between the tiles (tk_plan_part). Chosen
 * from a dry run of e's register use. */
enum { TK_PLAN_CONSTS = 16 };
typedef struct tk_plan {
  int tiles, nconst;
  uint32_t bits[TK_PLAN_CONSTS];
} tk_plan;
void tk_plan_make(tb *b, const tk_elem *e, tk_plan *pl);
/* Registers of each tile's part when gn tiles go at once: tile g owns
 * v(g * part) .. v(g * part + part - 1). */
int tk_plan_part(const tk_plan *pl, int gn);
/* Loads pl's constants into their registers: before a run of
 * tk_eval_tiles, again after anything else wrote those registers. */
void tk_plan_consts(tb *b, const tk_plan *pl);
/* Evaluates e on gn <= pl->tiles tiles at once: tile g's inputs are in
 * registers in_regs[g * ninputs + i] within its part; its outputs go to
 * out_regs[g * noutputs + o]. The tiles' register code is interleaved so
 * that one tile's latencies hide behind the others' work; masks m(2g+1),
 * m(2g+2) are tile g's. false after an error. */
bool tk_eval_tiles(tb *b, const tk_elem *e, const tk_plan *pl, int gn, int *in_regs,
                   int *out_regs);
/* tk_eval_tiles leaving the registers in keep alone (values the caller
 * holds in the tiles' parts). */
bool tk_eval_tiles_keep(tb *b, const tk_elem *e, const tk_plan *pl, int gn, int *in_regs,
                        int *out_regs, uint32_t keep);
/* Registers e needs at once on one tile, its inputs included (a dry run). */
int tk_dag_regs(tb *b, const tk_elem *e);
/* Internal type of an IR element type (F32, BF16 or S32); IR_TYPE_INVALID
 * when unsupported. */
ir_type tk_itype(ir_type t);

/* A batched matmul for the MXUs: C[g] = A[g] x B[g] for g < G, each
 * operand row-major in HBM with consecutive g at byte strides *_g. A[g]
 * is [M, K], bf16 or, with a32, f32; B[g] is [K, N] or, with bt, stored
 * transposed as [N, K], bf16 or, with b32, f32; C[g] is f32 [M, N]. f32
 * operands are converted to bf16 (RNE) by the vector unit as their tiles
 * arrive in VMEM; a transposed B's weight tiles are loaded with the MXU's
 * transposed load (same products, same order, same bits). */
typedef struct tk_mm {
  int64_t G, M, N, K;
  uint64_t A, A_g;
  uint64_t B, B_g;
  uint64_t C, C_g;
  bool a32, b32, bt;
  bool at; /* A[g] stored transposed, [K, M] (tk_matmul_at_ok) */
} tk_mm;
/* Can A be read stored transposed ([K, M], f32 or bf16) on this target:
 * its K tiles are 128 deep, so that each piece crosses the vector unit's
 * 128 x 128 transpose buffer whole. */
bool tk_matmul_at_ok(const tb *b);
/* Emits mm. Returns false, emitting nothing, when f32 operands need the
 * K-chunked plan (the caller converts them first); true otherwise (always
 * for bf16 operands). */
bool tk_matmul(tb *b, const tk_mm *mm);
/* What the vector unit applies to the f32 result tiles of a matmul in
 * VMEM before their single store (tk_matmul_epi): the elementwise
 * program e, whose input dot_in is the dot's result, its other inputs f32
 * [G, M, N] row-major buffers (e->in_addr), or when row[k] (row may be
 * NULL) an f32 [N] vector broadcast over G, M; its one output f32 or
 * bf16. b_once (TK_NO_ONCE: none) is an HBM bf16 [G, K, N] buffer: when
 * f32 B's panels do not fit VMEM, the first row block of each problem
 * converts them K tile by K tile and stores them there, the other row
 * blocks load that copy (the same RNE rounding, so the same bits; the
 * conversion runs under the MXU work); not with bt, whose f32 B is then
 * converted by the caller. */
#define TK_NO_ONCE UINT64_MAX /* b_once: none */
typedef struct tk_epilogue {
  const tk_elem *e;
  int dot_in;
  const bool *row;
  uint64_t b_once;
} tk_epilogue;
/* tk_matmul with the epilogue ep, its output stored at mm->C as [G, M, N]
 * (mm->C_g is not used). The vector unit applies the same kernels as
 * tk_elementwise to the same f32 values (same bits). false, emitting
 * nothing, when the plan does not fit (the caller then runs tk_matmul and
 * tk_elementwise). */
bool tk_matmul_epi(tb *b, const tk_mm *mm, const tk_epilogue *ep);
/* n f32 (or, with src_bf16, bf16) values at VMEM src -> bf16 (RNE) at
 * VMEM dst, 1024 per 8x128 tile (tiles of 4 KiB, or 2 KiB, at src). */
void tk_conv_bf16(tb *b, uint64_t src, bool src_bf16, uint64_t dst, int64_t n);
/* A left operand that is not a matrix in HBM (a convolution's patches):
 * load emits the DMAs that put bf16 A[g][m0..m0+rows)[k0..k0+kc) into
 * VMEM at dst with row stride rs bytes (columns past kc untouched). */
typedef struct tk_aview tk_aview;
struct tk_aview {
  void (*load)(tb *b, const tk_aview *av, int64_t g, int64_t m0, int64_t rows, int64_t k0,
               int64_t kc, uint64_t dst, int64_t rs);
  const void *ctx;
};
/* tk_matmul with bf16 A given by the view av (mm->A, A_g and a32 are not
 * used; B bf16 [K, N]); false (nothing emitted) when the plan would need
 * K chunking: the caller then materialises A. */
bool tk_matmul_view(tb *b, const tk_mm *mm, const tk_aview *av);
/* tk_matmul_view with the epilogue ep (tk_matmul_epi's contract, its
 * output at mm->C as [G, M, N]; ep->b_once unused): false, emitting
 * nothing, when the plan does not fit. */
bool tk_matmul_view_epi(tb *b, const tk_mm *mm, const tk_aview *av, const tk_epilogue *ep);
/* Whether tk_matmul_view_epi of mm (bf16 operands) with an epilogue of
 * nx inputs besides the product finds its resident plan (whole K in VMEM). */
bool tk_matmul_view_fits(const tb *b, const tk_mm *mm, int nx);

/* Fold: out[o] = f(...f(f(init, x[0][o]), x[1][o])..., x[R-1][o]) for
 * o < O, for nv variadic values: inputs xs[v] are [R, O] row-major of
 * internal types, inits are [1]-element buffers (or start from row 0 when
 * init is NULL). The reducer is an elementwise program whose inputs are
 * the nv accumulators then the nv values, outputs the nv new accumulators. */
void tk_fold(tb *b, const tk_elem *reducer, int nv, const uint64_t *xs, const uint64_t *inits,
             const uint64_t *outs, int64_t R, int64_t O);
/* The same with element (r, o) of input v at xs[v] + (r*sr + o*so) elements. */
void tk_fold_strided(tb *b, const tk_elem *reducer, int nv, const uint64_t *xs, int64_t sr,
                     int64_t so, const uint64_t *inits, const uint64_t *outs, int64_t R,
                     int64_t O);

#endif
