/* cpu.h: the one interface of backend/llvm/, the CPU fallback.
 *
 * The entry computation of a (verified) module is lowered to LLVM IR through
 * the LLVM-C API, optimised with LLVM's new pass manager for the host CPU
 * (name and features passed explicitly), and either JIT-compiled with ORC
 * LLJIT (cpu_compile / cpu_execute) or written as an object file plus a C
 * header for ahead-of-time embedding (cpu_compile_aot).
 *
 * Generated code contract (both JIT and AOT). The entry symbol is
 *   void NAME(void *const *inputs, void *const *outputs, void *scratch,
 *             cpu_parfor_fn parfor, void *parctx);
 * and in JIT code takes a sixth argument, the replica's context (coll.c:
 * its number, the rendezvous of its collectives, its failure message).
 * inputs: one pointer per array leaf of the parameters, in parameter order
 * (tuple parameters flattened depth-first); outputs: one pointer per array
 * leaf of the root's shape; every buffer holds its elements densely in
 * row-major order with the storage of ir_literal (pred as uint8 0/1, bf16
 * and f16 as uint16 bits). Outputs must not overlap inputs, each other or
 * the scratch. scratch: at least scratch_bytes, 64-byte aligned, reusable
 * across calls, never shared by two concurrent calls. parfor may be NULL
 * (everything runs on the calling thread); otherwise parfor(parctx, k, env,
 * n) must call k(env, lo, hi) over a partition of [0, n) (from any threads)
 * and return when all calls have returned.
 *
 * Numerics: see docs/cpu-backend.md. NATIVE: f32 as the host computes it
 * (dots may use FMA and OpenBLAS, so they differ from the evaluator in the
 * last bits). STRICT: the evaluator's order and roundings (no FMA, ascending
 * k); results equal ir_eval bit for bit except where libm is called on both
 * sides through different paths. TPU: what the emulator computes
 * (docs/numerics.md sections 2-5): dot and convolution operands split into
 * bf16 parts (1, 3 or 6 passes by precision), products exact, one f32 sum
 * in the MXU's order; elementwise ops as the vector unit's kernels
 * (base/vmath.c, canonical NaN); reductions in its tree and row orders.
 *
 * Replicas: a program compiled for N > 1 replicas (cpu_options.replicas)
 * runs as N copies on N host threads (cpu_execute_replicas), each with its
 * own scratch and thread pool, whose collectives meet through a coll_rdv
 * (base/coll.h) and combine in its fixed order (coll.c).
 *
 * Thread safety: a cpu_exe may be used by one cpu_execute or
 * cpu_execute_replicas at a time (its scratch is reused across runs);
 * distinct cpu_exe are independent. */
#ifndef TPUCC_BACKEND_LLVM_CPU_H
#define TPUCC_BACKEND_LLVM_CPU_H

#include "base/coll.h"
#include "ir/ir.h"

#include <stdio.h>

typedef void (*cpu_kernel_fn)(void *env, int64_t lo, int64_t hi);
typedef void (*cpu_parfor_fn)(void *parctx, cpu_kernel_fn k, void *env, int64_t n);

typedef enum cpu_numerics {
  CPU_NUMERICS_NATIVE, /* fastest f32: FMA, BLAS for large dots */
  CPU_NUMERICS_STRICT, /* the reference evaluator's order and roundings */
  CPU_NUMERICS_TPU,    /* the emulator's bits (docs/numerics.md section 5) */
} cpu_numerics;

typedef struct cpu_options {
  int32_t threads;        /* worker threads; 0 = one per online CPU */
  cpu_numerics numerics;
  int32_t opt_level;      /* 0..3; default 3 ("default<O3>") */
  bool fixed_level;        /* JIT: opt_level for every module; default false:
                             a module whose emitted kernels do little work
                             compiles at a lower level (docs/cpu-backend.md,
                             "Compile levels") */
  bool use_blas;          /* large f32 dots through cblas_sgemm (JIT, NATIVE, built with
                             OpenBLAS); default false: the emitted kernel */
  const char *cpu_name;   /* NULL: the host's (LLVMGetHostCPUName) */
  const char *cpu_features; /* NULL: the host's (LLVMGetHostCPUFeatures) */
  const char *entry_name; /* symbol of the entry function; NULL: "tpucc_entry" */
  const char *dump_llvm;  /* when set: write the optimised LLVM IR here ("-":
                             standard output) */
  ir_budget budget;       /* work and memory the module may ask for, checked
                             before lowering (ir.h); zero: the defaults */
  const ir_ffi_table *ffi; /* host functions for custom-calls (JIT only); NULL:
                             none. The table must outlive the compile; the
                             functions and their user data, the executable */
  int32_t conv_tile[2];   /* direct convolution's register tile (PX, OV), for
                             experiments (conv.c); zero or one that does not
                             fit: the model's choice */
  int32_t replicas;       /* replicas the program runs as (0 or 1: one; JIT
                             only above 1); threads are shared among them,
                             max(1, threads / replicas) each */
  const char *cache_dir;  /* cpu_compile: the compile cache's directory (made
                             when missing; docs/cpu-backend.md, "Compile
                             cache"); NULL: no cache. Entries are keyed by the
                             lowered module, the target machine, the options
                             above that change code, LLVM's version and this
                             build; a damaged entry is a miss and is rewritten;
                             a directory that cannot be written only costs the
                             store. Modules calling host functions (ffi) are
                             never cached. */
  int32_t compile_threads; /* cpu_compile: threads optimising and generating
                             code for independent kernels at once (1..8);
                             0: one per online CPU */
  const char *lib_kernels; /* JIT: the precompiled GEMM variant dots call
                             ("avx512", "avx2", "portable"; lk.h), "off":
                             GEMMs emitted per module; NULL: the best this
                             CPU runs, or "off" when cpu_name or cpu_features
                             is set. AOT objects always carry emitted ones. */
  FILE *progress;         /* cpu_compile: when set (a terminal), a line on it
                             while a compile takes over half a second, erased
                             at the end; NULL: silent */
} cpu_options;

void cpu_options_init(cpu_options *o);
/* Parses "native", "strict" or "tpu"; false when unknown. */
bool cpu_numerics_from_name(const char *s, cpu_numerics *out);

/* The CPU count cpu_options.threads = 0 stands for. */
int cpu_default_threads(void);

/* A compiled, runnable program. Owns its JIT, scratch and thread pool. */
typedef struct cpu_exe cpu_exe;

/* The most replicas a program runs as (one host thread each). */
enum { CPU_MAX_REPLICAS = 256 };

/* One replica's context during a run (coll.c): what the generated code
 * passes to the helpers it calls, which record a failure in it. */
typedef struct cpu_rep cpu_rep;

/* A host function bound into compiled code (backend/llvm/custom_call.c).
 * cpu_ffi_invoke is what the generated code calls: 0, or 1 after recording
 * the failure in rep (the entry then returns). */
typedef struct cpu_ffi_call cpu_ffi_call;
int cpu_ffi_invoke(cpu_ffi_call *c, void *const *ops, void *const *res, cpu_rep *rep);
void cpu_ffi_free(cpu_ffi_call *list);

/* A collective of compiled code (coll.c), owned by its executable. The
 * generated code calls cpu_coll_run: 0, or 1 after recording the failure
 * in rep. fold: per leaf, fold(acc, x, lo, hi) sets acc[i] = to_apply(acc[i],
 * x[i]) for lo <= i < hi (NULL for collectives that do not reduce). */
typedef struct cpu_coll cpu_coll;
typedef void (*cpu_fold_fn)(void *acc, const void *x, int64_t lo, int64_t hi);
int cpu_coll_run(cpu_rep *rep, const cpu_coll *c, void *const *ops, void *const *res,
                 const cpu_fold_fn *fold);
void cpu_coll_free(cpu_coll *list);

/* Lowers, optimises and JIT-compiles the entry computation of m (which must
 * verify). m is not kept. Failures (over o->budget: ST_RESOURCE_EXHAUSTED
 * naming the instruction; unsupported op; LLVM error; out of memory) return
 * a status with a message in err. */
base_status cpu_compile(const ir_module *m, const cpu_options *o,
                        cpu_exe **out_exe, char *err, size_t errlen);
/* Runs exe on args (one literal per parameter; shapes must equal the
 * parameters' ignoring layout). On success *out is the result literal,
 * allocated in out_arena. */
base_status cpu_execute(cpu_exe *exe, ir_literal *const *args, int nargs,
                        arena *out_arena, ir_literal **out, char *err,
                        size_t errlen);
/* The same into a result literal the caller made (its shape must equal the
 * result's), so repeated runs touch no fresh memory. */
base_status cpu_execute_to(cpu_exe *exe, ir_literal *const *args, int nargs,
                           ir_literal *out, char *err, size_t errlen);
/* Runs exe (compiled for n = cpu_options.replicas > 1 replicas) as n
 * replicas on n host threads: replica r reads args[r * nargs ..
 * r * nargs + nargs) and writes res[r] (literals the caller made, shapes as
 * cpu_execute_to). Results do not depend on thread timing. A replica that
 * fails (a custom-call, a collective that the others do not run) leaves
 * the rendezvous, so the others stop too; the message is then the failure
 * of the lowest-numbered replica that failed on its own ("replica 1:
 * ..."), else that of the lowest replica that failed. */
base_status cpu_execute_replicas(cpu_exe *exe, int n, ir_literal *const *args, int nargs,
                                 ir_literal *const *res, char *err, size_t errlen);
/* When set, cpu_execute_replicas hands every run to it (after checking
 * n): the tpucc command under mpirun sets it to split the replicas over
 * the ranks (tools/mpi_run.c), which it does through cpu_execute_comm,
 * filling every replica's result. */
typedef base_status (*cpu_replicas_fn)(cpu_exe *exe, int n, ir_literal *const *args, int nargs,
                                       ir_literal *const *res, char *err, size_t errlen);
extern cpu_replicas_fn cpu_replicas_hook;
/* The same for the replicas comm->first .. comm->first + comm->local - 1 of
 * comm->n (= cpu_options.replicas), which this process runs on as many
 * host threads; the others run elsewhere and meet through comm
 * (base/coll.h; an MPI communicator when they are other processes, and
 * then each exchange carries the operands' bytes). args and res hold the
 * local replicas only (args[j * nargs ..], res[j] for replica first + j).
 * Folding order and results are those of cpu_execute_replicas. */
base_status cpu_execute_comm(cpu_exe *exe, coll_comm *comm, ir_literal *const *args,
                             int nargs, ir_literal *const *res, char *err, size_t errlen);
void cpu_exe_destroy(cpu_exe *exe); /* accepts NULL */

/* What the compile cache did for a program. */
typedef enum cpu_cache_use {
  CPU_CACHE_OFF,        /* no cache_dir, dump_llvm set, or the module calls host functions or collectives */
  CPU_CACHE_HIT,        /* machine code loaded from the cache: no optimisation, no codegen */
  CPU_CACHE_STORED,     /* compiled and stored */
  CPU_CACHE_NOT_STORED, /* compiled; the store failed (cache_note says why) */
} cpu_cache_use;
/* "off", "hit", "stored", "not stored". */
const char *cpu_cache_use_name(cpu_cache_use u);

/* Facts about a compiled program. */
typedef struct cpu_exe_info {
  double lower_seconds;   /* IR -> LLVM IR */
  double build_seconds;   /* optimisation and code generation of all parts,
                             on their threads at once (wall time; 0 on a hit) */
  double opt_seconds;     /* LLVM pass pipeline, CPU seconds summed over the parts */
  double codegen_seconds; /* machine code generation, CPU seconds summed over the parts */
  double part_max_seconds; /* the CPU seconds of the costliest part: build_seconds
                             on an idle machine with a CPU per part */
  double jit_seconds;     /* linking the objects in the JIT */
  double link_seconds;    /* the same (jit_seconds) */
  double cache_seconds;   /* the cache: key (bitcode + SHA-256), lookup, store */
  int64_t scratch_bytes;
  int32_t kernels;        /* loop nests emitted */
  int32_t threads;
  int32_t opt_level;      /* the level the code was compiled at: opt_level, or
                             lower by the level rule (fixed_level) */
  int32_t parts;          /* objects made (or loaded): kernels compiled in
                             parts on compile_threads threads */
  cpu_cache_use cache;    /* what the compile cache did */
  char cache_note[320];   /* CPU_CACHE_NOT_STORED: why; CPU_CACHE_STORED after
                             a damaged entry: that; else empty */
  char isa[256];          /* the CPU compiled for and the vector width and
                             register tiles its GEMM and convolution kernels
                             chose (chosen when compiling, for that CPU) */
} cpu_exe_info;
void cpu_exe_get_info(const cpu_exe *exe, cpu_exe_info *out);

/* Compiles m with the options o, runs it once on args, destroys the
 * program (tools/targets.c's `cpu` row). */
base_status cpu_run_once(const ir_module *m, const cpu_options *o, ir_literal *const *args,
                         int nargs, arena *a, ir_literal **out, char *err, size_t errlen);

/* Ahead of time: writes an object file defining the entry symbol
 * (o->entry_name, default "tpucc_entry") and, when header_path is set, a C
 * header declaring it with the shapes, types and scratch size. The object
 * calls only libm and libc (no BLAS, no threads: parfor may be NULL).
 * obj_path NULL: no object (o->dump_llvm then gets the optimised IR). */
base_status cpu_compile_aot(const ir_module *m, const cpu_options *o,
                            const char *obj_path, const char *header_path,
                            char *err, size_t errlen);

#endif
