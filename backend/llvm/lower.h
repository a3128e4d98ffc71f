/* lower.h: private to backend/llvm: the lowering's shared state.
 *
 * Model. Every instruction of a computation is either MATERIALISED (its
 * value lives in a buffer: an input, an output, a slice of the scratch, or
 * a constant global) or INLINE (its value at an index is recomputed where
 * it is used, by the elemental generator in gen.c). In the entry
 * computation everything is materialised; in a fused computation only the
 * root (into the fusion's buffers), dots and convolutions (and their
 * operands) are, so a fusion becomes one loop nest: that is the elementwise
 * fusion. Each materialised non-alias instruction is one KERNEL: a function
 * kernel(env, lo, hi) looping over rows [lo, hi) of its output, which the
 * entry function calls directly or through the parallel-for callback. */
#ifndef TPUCC_BACKEND_LLVM_LOWER_H
#define TPUCC_BACKEND_LLVM_LOWER_H

#include "backend/llvm/cpu.h"
#include "base/coll.h"

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

/* Where a buffer lives at run time. */
typedef enum cbuf_kind { CB_INPUT, CB_OUTPUT, CB_SCRATCH, CB_CONST } cbuf_kind;

typedef struct cbuf {
  cbuf_kind kind;
  int64_t index;        /* input or output leaf index, or scratch offset */
  ir_type type;
  int64_t count;        /* elements */
  LLVMValueRef global;  /* CB_CONST */
  int32_t id;           /* dense id (position in the plan's list) */
  /* CB_SCRATCH: the kernels (in call order) that first and last touch it,
   * and the i64 constant global holding its offset, which is only known
   * once every kernel is emitted (plan.c assigns offsets by lifetime). */
  int32_t first_use, last_use;
  LLVMValueRef off_global;
} cbuf;

typedef struct scope scope;
/* One computation being generated: which instructions are materialised and
 * how parameters are bound (to the parent's operands for fused
 * computations, to scalar values for reducers). */
struct scope {
  ir_comp_id comp;
  const ir_comp *c;
  scope *parent;            /* fused: where param_src lives */
  const ir_id *param_src;   /* fused: per parameter number */
  LLVMValueRef *param_vals; /* scalar scopes: leaves, parameter by parameter */
  int32_t *param_off;       /* scalar scopes: first leaf of each parameter */
  cbuf ***mat;              /* per instruction: its leaves, or NULL (inline) */
  scope **sub;              /* per instruction: nested fusion's scope, lazily */
  uint32_t *visit;          /* scratch marks for walks */
};

/* An index into an array shape: the multi-index and/or the row-major
 * linear index (each computed from the other on demand). */
typedef struct idx {
  int rank;
  const int64_t *dims;
  bool have_multi;
  LLVMValueRef v[IR_MAX_RANK];
  LLVMValueRef lin;
} idx;

typedef struct memo_ent {
  const scope *s;
  ir_id id;
  int32_t leaf;
  int32_t level;
  bool multi;
  int rank;
  LLVMValueRef key[IR_MAX_RANK];
  LLVMValueRef val;
} memo_ent;

typedef struct emitter {
  const ir_module *m;
  cpu_options opt;
  bool aot;
  const struct lk_variant *lk; /* JIT: the library GEMM variant dots call (lk.h); NULL: emitted kernels */
  arena *a;                 /* plan data; dies with the compilation */
  LLVMContextRef ctx;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  LLVMTargetMachineRef tm;
  LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_f32, t_f16, t_f64, t_ptr;
  LLVMTypeRef t_kernel;     /* void(i8*, i64, i64) */
  LLVMTypeRef t_parfor;     /* void(i8*, kernel*, i8*, i64) */
  /* The entry function and its state. */
  LLVMValueRef entry;
  LLVMValueRef entry_env;   /* i8* to [3 x i8*] {inputs, outputs, scratch} */
  LLVMValueRef entry_parfor, entry_parctx;
  LLVMValueRef entry_rep;   /* the replica's context (JIT), or a null pointer (AOT) */
  LLVMBasicBlockRef entry_bb_cur;
  /* The function being emitted. */
  LLVMValueRef fn;
  LLVMBasicBlockRef alloca_bb;
  int32_t nparams_buf;      /* kernel body: buffer params */
  LLVMValueRef *buf_ptr;    /* per cbuf id: the pointer in this function or NULL */
  VEC(memo_ent) memo;
  int32_t level;
  uint32_t visit_gen;
  /* Plan. */
  VEC(cbuf *) bufs;
  int64_t scratch_bytes;
  int32_t ninputs, noutputs;
  int32_t nkernels;
  double work, lib_work;    /* estimated operations of the kernels emitted, and of those
                               only calling precompiled code (lk_call.c) */
  scope *entry_scope;
  cpu_ffi_call *ffi_calls;  /* host-function bindings (custom_call.c); the
                               executable takes them over */
  cpu_coll *colls;          /* collectives (coll.c); the executable takes them over */
  int32_t ncolls;
  LLVMValueRef while_work;  /* double in the entry: work the loops' trips used (control.c) */
  /* Errors. */
  base_status st;
  char *err;
  size_t errlen;
} emitter;

/* Records the first failure (later ones are dropped). Returns false. */
bool llvm_fail(emitter *e, base_status st, const char *fmt, ...) BASE_PRINTF(3, 4);

/* ---- plan.c ---------------------------------------------------------- */
int llvm_leaf_count(const ir_shape *s);
const ir_shape *llvm_leaf_shape(const ir_shape *s, int leaf);
/* The first leaf of tuple element k. */
int llvm_leaf_offset(const ir_shape *s, int k);
cbuf *llvm_new_buf(emitter *e, cbuf_kind k, ir_type t, int64_t count);
cbuf *llvm_scratch_buf(emitter *e, const ir_shape *leaf);
/* The scratch offset of b (i64), for address computations; marks a use of
 * b by the kernel being emitted (or, outside kernels, by the entry's end). */
LLVMValueRef llvm_scratch_off(emitter *e, cbuf *b);
scope *llvm_scope_new(emitter *e, ir_comp_id c, scope *parent);
const ir_inst *llvm_inst(const scope *s, ir_id id);
/* Plans and emits the whole entry function. */
bool llvm_lower_entry(emitter *e);
/* Scratch buffers for the leaves of a shape. */
cbuf **llvm_scratch_leaves(emitter *e, const ir_shape *sh);
/* The entry function's pointer to buffer cb, at the builder's position. */
LLVMValueRef llvm_entry_buf(emitter *e, const cbuf *cb);
/* Plans and emits computation s (its parameters' mat bound to buffers by
 * the caller) at the entry function's current block: its kernels, and
 * the control flow of the control ops it holds. */
bool llvm_lower_called(emitter *e, scope *s);

/* ---- control.c ------------------------------------------------------- */
/* call, while and conditional: materialised into fresh scratch buffers
 * (s->mat[id], planned by the caller), their computations lowered as the
 * entry is, inside loop and branch blocks of the entry function. map is
 * elemental (gen.c). */
static inline bool llvm_is_control(ir_op op) {
  return op == IR_OP_CALL || op == IR_OP_WHILE || op == IR_OP_CONDITIONAL;
}
bool llvm_emit_control(emitter *e, scope *s, ir_id id);

/* ---- elem.c ---------------------------------------------------------- */
LLVMTypeRef llvm_ctype(emitter *e, ir_type t);   /* compute type */
LLVMTypeRef llvm_stype(emitter *e, ir_type t);   /* storage type */
/* The range of an integer type as canonical int64s (ir/eval_internal.h:
 * u64's maximum is all ones, -1). */
void llvm_int_range(ir_type t, int64_t *lo, int64_t *hi);
LLVMValueRef llvm_load(emitter *e, ir_type t, LLVMValueRef base, LLVMValueRef lin);
void llvm_store(emitter *e, ir_type t, LLVMValueRef base, LLVMValueRef lin, LLVMValueRef v);
LLVMValueRef llvm_round(emitter *e, ir_type t, LLVMValueRef v);
LLVMValueRef llvm_to_bits(emitter *e, ir_type t, LLVMValueRef v);  /* compute -> storage */
LLVMValueRef llvm_from_bits(emitter *e, ir_type t, LLVMValueRef v);/* storage -> compute */
LLVMValueRef llvm_const_elem(emitter *e, const ir_literal *l, int64_t i);
LLVMValueRef llvm_zero(emitter *e, ir_type t);
LLVMValueRef llvm_i64(emitter *e, int64_t v);
LLVMValueRef llvm_unary(emitter *e, ir_op op, ir_type t, LLVMValueRef x);
LLVMValueRef llvm_binary(emitter *e, ir_op op, ir_type t, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef llvm_compare(emitter *e, const ir_attrs *a, ir_type t, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef llvm_clamp(emitter *e, ir_type t, LLVMValueRef lo, LLVMValueRef x, LLVMValueRef hi);
LLVMValueRef llvm_convert(emitter *e, ir_type from, ir_type to, LLVMValueRef x);
LLVMValueRef llvm_bitcast_convert(emitter *e, ir_type from, ir_type to, LLVMValueRef x);
/* ---- small.c: the small declared ops (ir/small.c) ------------------------ */
/* reduce-precision of x (compute type of float type t) as ir_reduce_precision. */
LLVMValueRef llvm_reduce_precision(emitter *e, ir_type t, LLVMValueRef x, int ebits, int mbits);
/* Whether the cpu runs in (an OPF_RUNS op of c); else fails e with a
 * located message. */
bool llvm_small_supported(emitter *e, const ir_comp *c, const ir_inst *in);
LLVMValueRef llvm_call_intrinsic(emitter *e, const char *name, LLVMTypeRef t,
                                 LLVMValueRef *args, int nargs);
/* TPU numerics, the MXU (docs/numerics.md section 2): the number of bf16
 * passes of a float dot/convolution (1, 3 or 6), pass p multiplying part
 * llvm_mxu_pair[0][p] of the lhs by part llvm_mxu_pair[1][p] of the rhs;
 * part p (0..2) of an f32 value as the MXU reads it; the f32 sum stored. */
extern const int llvm_mxu_pair[2][6];
int llvm_mxu_passes(const ir_inst *in, ir_type lt, ir_type rt);
LLVMValueRef llvm_mxu_part(emitter *e, LLVMValueRef v, int p);
LLVMValueRef llvm_mxu_mac(emitter *e, LLVMValueRef acc, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef llvm_canon_nan(emitter *e, LLVMValueRef v);

/* ---- gen.c ----------------------------------------------------------- */
/* The value (compute type) of leaf `leaf` of instruction id of scope s at
 * index ix (of that leaf's shape): a load when materialised, else computed. */
LLVMValueRef llvm_gen(emitter *e, scope *s, ir_id id, int leaf, idx *ix);
/* The same, computing id itself even when it is materialised. */
LLVMValueRef llvm_gen_self(emitter *e, scope *s, ir_id id, int leaf, idx *ix);
/* Calls scalar computation c on leaf values args; writes its root's leaves. */
void llvm_gen_call(emitter *e, ir_comp_id c, LLVMValueRef *args, LLVMValueRef *out);
LLVMValueRef llvm_idx_lin(emitter *e, idx *ix);
void llvm_idx_multi(emitter *e, idx *ix);
void llvm_idx_scalar(emitter *e, idx *ix);
/* Whether generating id inline ever needs a multi-index. */
bool llvm_needs_multi(emitter *e, scope *s, ir_id id);
/* Marks used[b->id] for every buffer that generating id (itself when self,
 * else as llvm_gen would) may read. */
void llvm_collect(emitter *e, scope *s, ir_id id, bool self, bool *used);
/* The buffer of a constant literal (a global), made once per literal. */
cbuf *llvm_const_buf(emitter *e, const ir_literal *l);
/* The literal of tuple leaf `leaf`. */
const ir_literal *llvm_literal_leaf(const ir_literal *l, int leaf);

/* ---- kernel.c -------------------------------------------------------- */
typedef struct loop {
  LLVMValueRef var, i, hi;
  LLVMBasicBlockRef header, body, exit;
} loop;
LLVMValueRef llvm_loop_begin(emitter *e, loop *l, LLVMValueRef lo, LLVMValueRef hi);
void llvm_loop_end(emitter *e, loop *l);
void llvm_level_push(emitter *e);
void llvm_level_pop(emitter *e);
LLVMValueRef llvm_alloca(emitter *e, LLVMTypeRef t);
/* The base pointer (i8*) of b in the function being emitted. */
LLVMValueRef llvm_buf_ptr(emitter *e, const cbuf *b);
/* Emits the kernel computing materialised instruction id of s. */
bool llvm_emit_kernel(emitter *e, scope *s, ir_id id);
/* The same, storing into outs (one buffer per leaf of id) instead. */
bool llvm_emit_kernel_to(emitter *e, scope *s, ir_id id, cbuf **outs);

/* A kernel under construction: begin creates body(bufs..., lo, hi) and a
 * wrapper(env, lo, hi); end closes it and calls it from the entry over
 * [0, n) rows, in parallel when work is large. */
typedef struct kfn {
  LLVMValueRef body, wrapper;
  LLVMValueRef lo, hi;
  LLVMValueRef saved_fn;
  LLVMBasicBlockRef saved_alloca;
  cbuf **bufs;
  int32_t nbufs;
} kfn;
void llvm_kernel_begin(emitter *e, kfn *k, cbuf **bufs, int nbufs, const char *name);
void llvm_kernel_end(emitter *e, kfn *k, int64_t n, double work);

/* ---- coll.c ----------------------------------------------------------- */
/* One replica's context during a run: set up by the runner (jit.c), passed
 * to the entry, read and written by the helpers the generated code calls
 * on the replica's own thread. */
struct cpu_rep {
  coll_comm *comm;      /* NULL: one replica */
  int32_t id, n;        /* this replica, of n */
  uint8_t *pack;        /* comm spans processes: this replica's leaves as
                           bytes for an exchange (grown by coll.c, freed by
                           the runner) */
  size_t packcap;
  uint64_t seq;         /* collectives run so far */
  const void **all;     /* n slots for exchanges */
  bool failed;          /* msg says why */
  bool own;             /* failed on its own, not because another replica did */
  char msg[1024];
};
/* Records a failure in r (the first wins) and leaves r's rendezvous with
 * it. own: not a consequence of another replica's failure. */
void cpu_rep_fail(cpu_rep *r, bool own, const char *fmt, ...) BASE_PRINTF(3, 4);
/* Called by a while loop's trip that would pass the work limit: fails rep
 * with "WHERE: stopped after TRIPS trips: over the limit of LIMIT steps of
 * work ..." and returns nonzero (control.c). */
int cpu_while_over(const char *where, int64_t trips, double limit, cpu_rep *rep);
/* The collectives, replica-id, partition-id and the -start/-done forms.
 * llvm_coll_alias: op is planned by llvm_coll_plan and runs nothing (the
 * -done forms, partition-id, replica-id of one replica). llvm_coll_call:
 * op is a call llvm_emit_collective emits (every collective, replica-id of
 * several replicas; all-reduce of one replica is plan.c's alias instead). */
bool llvm_coll_alias(const emitter *e, ir_op op);
bool llvm_coll_call(const emitter *e, ir_op op);
/* Plans the buffers of id of s when they are not one scratch buffer per
 * leaf (the alias ops; a -start form's (operands, result, context));
 * false when id is not such an op. */
bool llvm_coll_plan(emitter *e, scope *s, ir_id id);
/* Emits collective id of s (operands and result planned) as a call from
 * the entry function; fails located when it cannot run. */
bool llvm_emit_collective(emitter *e, scope *s, ir_id id);
/* The array leaves of in's operands, in order, into *out; their count. */
int llvm_operand_leaves(emitter *e, scope *s, const ir_inst *in, cbuf ***out);
/* A stack array (in the entry function) of the entry's pointers to v[0..n). */
LLVMValueRef llvm_entry_ptrs(emitter *e, cbuf *const *v, int n);
/* At the entry's current block: rc = name(args) (an i32 function of the
 * given parameter types, all pointers) and a return from the entry when rc
 * is not 0. Counts as one kernel for scratch lifetimes. */
void llvm_entry_call_checked(emitter *e, const char *name, LLVMValueRef *args, int nargs);

/* ---- custom_call.c ---------------------------------------------------- */
/* Emits a custom-call of s calling a registered host function (operands and
 * result materialised); any other target fails located. */
bool llvm_emit_custom_call(emitter *e, scope *s, ir_id id);
/* ---- sort.c ---------------------------------------------------------- */
/* Emits sort, topk or the TopK custom-call id of s (operands and result
 * materialised): the evaluator's merge sort, row by row. */
bool llvm_emit_sort(emitter *e, scope *s, ir_id id);

/* ---- dot.c ----------------------------------------------------------- */
/* Emits dot id of s (operands and result materialised). */
bool llvm_emit_dot(emitter *e, scope *s, ir_id id);
/* Emits convolution id of s (operands and result materialised): implicit
 * GEMM when NATIVE and the form allows, else elementally. */
bool llvm_emit_conv(emitter *e, scope *s, ir_id id);
/* conv.c: the direct NHWC/HWIO f32 kernel; false (nothing emitted) when
 * the convolution is not of that form. */
bool llvm_emit_conv_direct(emitter *e, scope *s, ir_id id);

/* ---- gather.c -------------------------------------------------------- */
/* The element of dynamic-slice, dynamic-update-slice or gather in at ix. */
LLVMValueRef llvm_gen_indexing(emitter *e, scope *s, const ir_inst *in, idx *ix);
/* Emits scatter (select-and-scatter) id of s as one sequential kernel
 * (operands and result materialised). */
bool llvm_emit_scatter(emitter *e, scope *s, ir_id id);
bool llvm_emit_select_and_scatter(emitter *e, scope *s, ir_id id);

/* ---- gemm.c ---------------------------------------------------------- */
/* C = A * B per batch (f32, row-major [NB,M,K] x [NB,K,N] -> [NB,M,N]) with
 * the packed register-tiled kernel; K, M, N >= 1. */
void llvm_emit_gemm(emitter *e, cbuf *A, cbuf *B, cbuf *C, int64_t NB, int64_t M, int64_t N, int64_t K);
/* Implicit-GEMM convolution: A is not a buffer but the image patches of a
 * convolution input, gathered while packing (no im2col buffer). Row m of A
 * is the output position (batch, spatial...) row-major; column k is the
 * window position (spatial... row-major) and input feature (fastest). */
typedef struct gemm_conv {
  cbuf *in;
  int ns;
  int64_t batch, cin;
  int64_t osz[IR_MAX_RANK], isz[IR_MAX_RANK], ksz[IR_MAX_RANK];
  int64_t stride[IR_MAX_RANK], pad_lo[IR_MAX_RANK], rdil[IR_MAX_RANK];
  int64_t s_b, s_c, s_sp[IR_MAX_RANK]; /* input strides in elements */
  /* conv_wgrad.c's kernel-gradient form (rows (out spatial..., batch),
   * columns (feature, window...)): nf input features; inside when no
   * window position reaches outside the input; mr, when not 0, the rows
   * of a register tile (8, or the default). */
  bool wgrad, inside;
  int mr;
  int64_t nf;
} gemm_conv;
void llvm_emit_gemm_conv(emitter *e, const gemm_conv *cv, cbuf *B, cbuf *C, int64_t M, int64_t N, int64_t K);
/* conv_wgrad.c: a convolution contracting over the batch (f01b x i01o ->
 * 01bf, the kernel gradient of a channels-last convolution) as the GEMM
 * of gemm.c under NATIVE numerics; false (nothing emitted) otherwise. */
bool llvm_emit_conv_wgrad(emitter *e, scope *s, ir_id id);
/* Packs rows row0.. (MR of them, those >= M as zeros) and columns k0..k0 +
 * kc of the kernel-gradient A into ap[dst0 + kk MR + r]. */
void llvm_conv_wgrad_pack_a(emitter *e, const gemm_conv *cv, cbuf *A, LLVMValueRef ap, LLVMValueRef row0,
                            LLVMValueRef dst0, LLVMValueRef k0, LLVMValueRef kc, int MR, int64_t M);
/* An elementwise epilogue of a GEMM, applied in registers as each tile of
 * C leaves the kernel (after the last K block): out = op_n(... op_1(acc,
 * x_1) ..., x_n) in f32, x_i a per-column f32 vector (col: N elements, the
 * bias of a dense layer) or an f32 scalar (one element); swap puts x_i on
 * the left. Ops: add, subtract, multiply, divide, maximum, minimum. */
typedef struct gemm_epi_op {
  ir_op op;
  cbuf *x;
  bool col, swap;
} gemm_epi_op;
enum { GEMM_EPI_MAX = 8, GEMM_MAX_ACC = 32, GEMM_MAX_ROWS = 16 };
typedef struct gemm_epi {
  int n;
  gemm_epi_op ops[GEMM_EPI_MAX];
} gemm_epi;
/* llvm_emit_gemm with an epilogue (NULL or n = 0: none). */
void llvm_emit_gemm_epi(emitter *e, cbuf *A, cbuf *B, cbuf *C, int64_t NB, int64_t M, int64_t N, int64_t K,
                        const gemm_epi *epi);
/* dot.c: emits dot id with an epilogue applied as its tiles are stored,
 * into s->mat[id] (f32): only under NATIVE numerics on the tiled kernel;
 * false (nothing emitted, no error) when that does not apply. */
bool llvm_emit_dot_epi(emitter *e, scope *s, ir_id id, const gemm_epi *epi);
/* v (a vector of f32 outputs of one row, lane 0 at output column col, the
 * first `valid` lanes inside the row) after epi's operations. */
LLVMValueRef llvm_gemm_epi_apply(emitter *e, const gemm_epi *epi, LLVMValueRef v, LLVMValueRef col, int valid);
/* Appends to bufs[0..nbufs) the buffers epi reads that a kernel must take
 * as parameters (not constants, not already listed); the new count. bufs
 * has room for GEMM_EPI_MAX more. */
int llvm_gemm_epi_bufs(const gemm_epi *epi, cbuf **bufs, int nbufs);
/* conv.c: the direct kernel with an epilogue (column operands indexed by
 * the output feature) into s->mat[id]; false (nothing emitted, no error)
 * when the convolution is not of the direct kernel's form. */
bool llvm_emit_conv_epi(emitter *e, scope *s, ir_id id, const gemm_epi *epi);
/* lk_call.c: the GEMM (with its epilogue) as calls of the library kernels
 * (lk.h) when e->lk is set and the size rule picks them; false (nothing
 * emitted) otherwise. */
bool llvm_emit_lk_gemm(emitter *e, cbuf *A, cbuf *B, cbuf *C, int64_t NB, int64_t M, int64_t N, int64_t K,
                       const gemm_epi *epi);
/* target.c: the level rule of JIT compiles: the optimisation level (0 or
 * 3) for emitted kernels estimated at `work` operations per run in all
 * (docs/cpu-backend.md, "Compile levels"). */
int llvm_level_for_work(double work);
/* Whether the target has 512-bit vectors (AVX-512F). */
bool llvm_gemm_wide(const emitter *e);
/* What the GEMM and convolution kernels compiled for the CPU cpu_name
 * with features (NULL: the host's) use, one line into buf (--stats). */
void llvm_kernel_isa(const char *cpu_name, const char *features, char *buf, size_t n);
/* acc[v] (allocas of vector type vt, VL lanes) += splat(x) * w[v] for
 * v < n, each a fused multiply-add. */
void llvm_fma_splat(emitter *e, LLVMTypeRef vt, int VL, LLVMValueRef x, const LLVMValueRef *w, int n,
                    const LLVMValueRef *acc);

/* ---- target.c -------------------------------------------------------- */
void llvm_init_native(void);
/* A target machine for the host (or o->cpu_name/cpu_features). */
LLVMTargetMachineRef llvm_host_tm(const cpu_options *o, bool pic, char *err, size_t errlen);
/* Verifies, optimises ("default<On>") the module. */
bool llvm_optimise(emitter *e);
/* Lowers m into a fresh module in ctx; e is initialised here. */
bool llvm_lower_module(emitter *e, const ir_module *m, const cpu_options *o,
                       bool aot, LLVMContextRef ctx, LLVMTargetMachineRef tm,
                       char *err, size_t errlen);
void llvm_emitter_free(emitter *e);

/* ---- pool.c ---------------------------------------------------------- */
/* A fixed pool of threads - 1 workers; the caller is the remaining one. */
typedef struct cpu_pool cpu_pool;
cpu_pool *cpu_pool_create(int threads);
void cpu_pool_destroy(cpu_pool *p); /* accepts NULL */
/* A cpu_parfor_fn: splits [0, n) into one contiguous range per thread. */
void cpu_pool_parfor(void *pool, cpu_kernel_fn k, void *env, int64_t n);

#endif
