/* tpurt.h: libtpurt, the embeddable runtime of tpucc.
 *
 * libtpurt loads compiled TPU programs (.tpub files, or assembly text),
 * checks them once, moves tensors in and out, runs them on the bundled
 * TensorCore emulator and reports what the run cost in cycles. It depends
 * on nothing but the C library: link with `pkg-config --libs tpurt`.
 *
 * libtpurt-cpu (`pkg-config --libs tpurt-cpu`, built when LLVM is found)
 * implements this same header and adds the "cpu" device, whose programs
 * are module text (XLA HLO or .tg) compiled at load time to native code,
 * and module text on TPU devices (compiled to .tpub at load). Link one of
 * the two libraries. docs/runtime.md, "The cpu device".
 *
 *   tpurt_device_options_t o;  tpurt_device_options_init(&o);
 *   o.target = "v3";
 *   tpurt_device_t *dev;       tpurt_device_create(&o, &dev);
 *   tpurt_program_t *prog;     tpurt_program_load_file(dev, "m.tpub", &prog);
 *   tpurt_buffer_t *x;         tpurt_buffer_create(dev, TPURT_F32, 2, dims,
 *                                                  data, bytes, &x);
 *   tpurt_buffer_t *y;         tpurt_program_execute(prog, &x, 1, &y, 1, &st);
 *   tpurt_buffer_read(y, out, bytes);
 *   tpurt_buffer_destroy(y); ... tpurt_program_destroy(prog);
 *   tpurt_device_destroy(dev);
 *
 * Conventions. Every fallible call returns a tpurt_status_t (TPURT_OK is
 * 0); on failure the device keeps a message saying what went wrong, read
 * with tpurt_device_message (like sqlite3_errmsg: owned by the device,
 * valid until the next call on it). Out-parameters come last and are named
 * out_*; on failure they are set to NULL / 0. destroy functions accept NULL.
 *
 * Ownership. A device owns nothing the caller made; programs and buffers
 * are created from a device, must be destroyed before it, and are owned by
 * the caller. Memory comes from the device's allocator (malloc/free when
 * none is given); the library has no global state.
 *
 * Threads. A device and everything made from it is thread-compatible: use
 * it from one thread at a time (different devices are independent and may
 * be used from different threads at once). tpurt_version and
 * tpurt_status_string are thread-safe. */
#ifndef TPURT_H
#define TPURT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define TPURT_API
#else
#define TPURT_API __attribute__((visibility("default")))
#endif

#define TPURT_VERSION_MAJOR 0
#define TPURT_VERSION_MINOR 1
#define TPURT_VERSION_PATCH 0
#define TPURT_VERSION_STRING "0.1.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH */
#define TPURT_VERSION_NUMBER                                                                       \
  (TPURT_VERSION_MAJOR * 10000 + TPURT_VERSION_MINOR * 100 + TPURT_VERSION_PATCH)

/* The version of the library actually linked (TPURT_VERSION_NUMBER). */
TPURT_API int tpurt_version(void);
TPURT_API const char *tpurt_version_string(void);

/* Status codes: X(NAME, "text"). TPURT_NAME is the row's position, fixed
 * for good (TPURT_OK 0 ... TPURT_INVALID_PROGRAM 11); "text" is what
 * tpurt_status_string returns. Codes 0..10 are also libtpucc's (tpucc.h). */
#define TPURT_STATUS_LIST(X)                                                                       \
  X(OK, "ok")                                                                                      \
  X(INVALID_ARGUMENT, "invalid argument") /* a caller passed something malformed */                \
  X(PARSE_ERROR, "parse error")           /* assembly text was rejected */                         \
  X(UNSUPPORTED, "unsupported")           /* well-formed but not supported (e.g. target) */        \
  X(OUT_OF_MEMORY, "out of memory")                                                                \
  X(IO_ERROR, "I/O error")                                                                         \
  X(NOT_FOUND, "not found")                                                                        \
  X(RESOURCE_EXHAUSTED, "resource exhausted") /* the cycle limit was reached */                    \
  X(RUNTIME_FAULT, "runtime fault")           /* the program faulted while running */              \
  X(FAILED_PRECONDITION, "failed precondition")                                                    \
  X(INTERNAL, "internal error")                                                                    \
  X(INVALID_PROGRAM, "invalid program") /* a .tpub file failed verification */

typedef enum tpurt_status {
#define TPURT_STATUS_ENUM_(name, text) TPURT_##name,
  TPURT_STATUS_LIST(TPURT_STATUS_ENUM_)
#undef TPURT_STATUS_ENUM_
} tpurt_status_t;

/* "ok", "invalid argument", ... Never NULL. */
TPURT_API const char *tpurt_status_string(tpurt_status_t s);

/* An optional allocator (like lua_Alloc / iree_allocator_t). alloc returns
 * NULL on failure; free accepts NULL. Both get `user`. Every allocation of
 * a device and of everything made from it goes through it. */
typedef struct tpurt_allocator {
  void *(*alloc)(void *user, size_t size);
  void (*free)(void *user, void *ptr);
  void *user;
} tpurt_allocator_t;

/* Element types: X(NAME, code, "name", bytes). TPURT_NAME is code, the
 * element type's number in .tpub files, fixed for good; "name" is what
 * tpurt_dtype_name returns and bytes what tpurt_dtype_size returns. */
#define TPURT_DTYPE_LIST(X)                                                                        \
  X(PRED, 1, "pred", 1) /* one byte, 0 or 1 */                                                     \
  X(S8, 2, "s8", 1)                                                                                \
  X(S32, 3, "s32", 4)                                                                              \
  X(BF16, 4, "bf16", 2)                                                                            \
  X(F16, 5, "f16", 2)                                                                              \
  X(F32, 6, "f32", 4)                                                                              \
  X(U8, 7, "u8", 1)                                                                                \
  X(S16, 8, "s16", 2)                                                                              \
  X(S64, 9, "s64", 8)                                                                              \
  X(U16, 10, "u16", 2)                                                                             \
  X(U32, 11, "u32", 4)                                                                             \
  X(U64, 12, "u64", 8)                                                                             \
  X(F64, 13, "f64", 8)

typedef enum tpurt_dtype {
#define TPURT_DTYPE_ENUM_(name, code, spelling, bytes) TPURT_##name = code,
  TPURT_DTYPE_LIST(TPURT_DTYPE_ENUM_)
#undef TPURT_DTYPE_ENUM_
} tpurt_dtype_t;

/* Size in bytes of one element, 0 for an unknown dtype. Name: "f32". */
TPURT_API size_t tpurt_dtype_size(tpurt_dtype_t d);
TPURT_API const char *tpurt_dtype_name(tpurt_dtype_t d);

/* The most dimensions of a buffer, a signature entry or a host tensor (the
 * .tpub format's limit, TPUB_MAX_RANK). */
#define TPURT_MAX_RANK 12

/* ---- device -------------------------------------------------------------
 * One emulated TensorCore of the given target ("v2", "v3", "v3-8",
 * overrides such as "v3,mxu=64x64,vmem=8MiB"; docs/isa.md lists them), or
 * in libtpurt-cpu the host CPU: "cpu[,threads=N][,numerics=native|strict|
 * tpu][,replicas=N][,cache=DIR|off]" (libtpurt: TPURT_UNSUPPORTED;
 * replicas=N makes a device of N cores, one host thread each, sharing the
 * threads; cache: the JIT's compile cache, docs/runtime.md). "auto" is the spec in the
 * environment variable TPURT_TARGET when set, else "cpu" in libtpurt-cpu,
 * else "v3". The cpu device ignores cycle_limit, mxu_systolic and
 * trace_path. */
typedef struct tpurt_device tpurt_device_t;

/* A host function for HLO custom-calls whose custom_call_target is
 * `target` (as XLA's FFI handlers), on the cpu device: operands are the
 * array leaves of the custom-call's operands (tuples flattened depth
 * first), read-only; results the leaves of its declared result shape,
 * allocated and zeroed by the runtime, to be filled. backend_config: the
 * attribute's text, "" when absent. Return TPURT_OK, or another status
 * with a message in err; the execution then fails with that message and
 * the custom-call's location. */
typedef struct tpurt_host_tensor {
  tpurt_dtype_t dtype;
  int rank;
  int64_t dims[TPURT_MAX_RANK];
  void *data;
  size_t bytes;
} tpurt_host_tensor_t;
typedef tpurt_status_t (*tpurt_custom_call_fn)(void *user_data, const tpurt_host_tensor_t *operands,
                                               int noperands, tpurt_host_tensor_t *results,
                                               int nresults, const char *backend_config,
                                               char *err, size_t errlen);
typedef struct tpurt_custom_call {
  const char *target; /* copied */
  tpurt_custom_call_fn fn;
  void *user_data; /* must outlive the device */
} tpurt_custom_call_t;

/* Processes sharing one emulated pod (docs/distributed.md): of an n-core
 * device, rank `rank` of `nranks` runs the cores [rank n/nranks,
 * (rank+1) n/nranks) (nranks must divide n); rank 0 gives every core's
 * parameters (the other ranks pass buffers of the parameters' shapes,
 * whose values are not read: one buffer may serve every replica) and
 * gets every core's results, statistics and trace; each other rank gets
 * its own cores' results and statistics (the others' stay zero). Every
 * rank must run the same program: an execution whose ranks loaded
 * different ones fails on each with TPURT_FAILED_PRECONDITION. Between
 * rounds of the emulation the ranks agree through two calls, made by
 * every rank in the same order, each returning 0, or -1 with one line in
 * msg (a rank that did not answer in time named):
 *   min:      out[i] = the least of every rank's mine[i] (k values);
 *   exchange: sends send[r] (len[r] bytes) to every other rank r and
 *             receives rank r's message to this one into recv[r], rlen[r]
 *             (recv[rank] untouched; valid until the next call).
 * libtpurt-mpi builds one over an MPI communicator (tpurt_mpi.h). The
 * user's state must outlive the device, unless release is set: then
 * tpurt_device_destroy calls release(user) once, after the device's last
 * use of the peers, and the state may die there (a tpurt_device_create
 * that fails does not call it). A device is used by one thread at a
 * time. */
typedef struct tpurt_peers {
  int nranks, rank;
  void *user;
  int (*min)(void *user, const uint64_t *mine, uint64_t *out, int k, char *msg, size_t msglen);
  int (*exchange)(void *user, const void *const *send, const size_t *len, const void **recv,
                  size_t *rlen, char *msg, size_t msglen);
  void (*release)(void *user); /* NULL: the caller frees the state after the device */
} tpurt_peers_t;

typedef struct tpurt_device_options {
  const char *target;                 /* default "v3"; copied */
  const tpurt_allocator_t *allocator; /* NULL: malloc/free; copied */
  /* Stop runs after this many cycles; 0 = 10^9 (about a second of
   * simulated time). */
  uint64_t cycle_limit;
  /* Nonzero: every MXU push runs PE by PE through the systolic-array model
   * instead of the fast kernel. Same bits and cycle counts, much slower: a
   * mode that proves the fast path, not one to run models with. Its
   * per-push scratch memory comes from malloc, not from the allocator. */
  int mxu_systolic;
  /* When set, every execution writes a trace to this file (overwritten):
   * Chrome trace-event JSON, readable by chrome://tracing and Perfetto,
   * one event per executed instruction on the row of its unit, from its
   * start for its occupancy (the time axis shows cycles as microseconds).
   * Copied. */
  const char *trace_path;
  /* Host functions for custom-calls of programs loaded as module text on
   * the cpu device (libtpurt-cpu); the table is copied. TPU devices cannot
   * call the host: their compiler refuses such programs, naming the
   * target. */
  const tpurt_custom_call_t *custom_calls;
  size_t ncustom_calls;
  /* Emulated TPU devices of many cores: NULL runs every core in this
   * process; else this process's share with the other ranks (copied). */
  const tpurt_peers_t *peers;
  /* With peers and trace_path: 0, rank 0 writes every core's events to its
   * trace_path (every rank gives one, to send its cores' events); nonzero,
   * each rank writes its own cores' events to its own trace_path, the
   * header naming those cores (the ICI links' row is only in rank 0's
   * trace of every core). */
  int trace_per_rank;
} tpurt_device_options_t;

TPURT_API void tpurt_device_options_init(tpurt_device_options_t *opts);
/* Fails with TPURT_INVALID_ARGUMENT for a bad target, TPURT_UNSUPPORTED
 * for "cpu" in libtpurt (out_device is then NULL and the reason is lost:
 * use tpurt_target_check to get it). */
TPURT_API tpurt_status_t tpurt_device_create(const tpurt_device_options_t *opts,
                                             tpurt_device_t **out_device);
TPURT_API void tpurt_device_destroy(tpurt_device_t *dev);
/* The message of the last failed call on dev or its children ("" if none). */
TPURT_API const char *tpurt_device_message(const tpurt_device_t *dev);
/* The canonical target spec, every figure spelled out. Owned by dev. */
TPURT_API const char *tpurt_device_target(const tpurt_device_t *dev);
/* Checks a target spec without a device; writes the reason into err. */
TPURT_API tpurt_status_t tpurt_target_check(const char *target, char *err, size_t errlen);
/* "tpu" (an emulated TensorCore) or "cpu" (the host, libtpurt-cpu). */
TPURT_API const char *tpurt_device_platform(const tpurt_device_t *dev);
/* The cores of dev: an execution runs one replica of the program on each
 * (tpurt_program_execute_replicas). 1 for a single TensorCore and for
 * "cpu"; N for "cpu,replicas=N" (N host threads); 0 for NULL. */
TPURT_API int tpurt_device_core_count(const tpurt_device_t *dev);

/* ---- program ------------------------------------------------------------
 * A verified program and its signature. Owned by the caller; must be
 * destroyed before its device. */
typedef struct tpurt_program tpurt_program_t;

/* Loads a .tpub image (bytes are copied) and verifies it against the
 * device's target. TPURT_INVALID_PROGRAM with the reason as the message.
 * libtpurt-cpu also takes module text (HLO or .tg; anything without the
 * .tpub magic): compiled for the device at load, TPURT_PARSE_ERROR with
 * located diagnostics when rejected. The cpu device takes text only. */
TPURT_API tpurt_status_t tpurt_program_load(tpurt_device_t *dev, const void *bytes, size_t size,
                                            tpurt_program_t **out_program);
/* Loads the file at path as tpurt_program_load does, after checking it
 * before reading it whole: TPURT_NOT_FOUND without it, TPURT_IO_ERROR for
 * a directory or anything not a regular file, TPURT_RESOURCE_EXHAUSTED
 * over 2 GiB, TPURT_INVALID_PROGRAM when its .tpub header's size is not the
 * file's (and in libtpurt, which loads no text, without the .tpub magic). */
TPURT_API tpurt_status_t tpurt_program_load_file(tpurt_device_t *dev, const char *path,
                                                 tpurt_program_t **out_program);
/* Assembles text in the assembler form of docs/isa.md and verifies the
 * result. `name` names the text in messages. TPURT_PARSE_ERROR with
 * "name:line:col: error: ..." lines as the message. */
TPURT_API tpurt_status_t tpurt_program_assemble(tpurt_device_t *dev, const char *text, size_t len,
                                                const char *name, tpurt_program_t **out_program);
TPURT_API void tpurt_program_destroy(tpurt_program_t *prog);
/* Serialises the program as a .tpub file. */
TPURT_API tpurt_status_t tpurt_program_save_file(tpurt_program_t *prog, const char *path);

/* The entry signature. */
typedef struct tpurt_tensor_info {
  const char *name; /* owned by the program */
  tpurt_dtype_t dtype;
  int rank;
  int64_t dims[TPURT_MAX_RANK];
  size_t bytes;
} tpurt_tensor_info_t;

TPURT_API size_t tpurt_program_param_count(const tpurt_program_t *prog);
TPURT_API size_t tpurt_program_result_count(const tpurt_program_t *prog);
/* Fill *out_info for parameter/result i; TPURT_INVALID_ARGUMENT when out of
 * range. */
TPURT_API tpurt_status_t tpurt_program_param_info(const tpurt_program_t *prog, size_t i,
                                                  tpurt_tensor_info_t *out_info);
TPURT_API tpurt_status_t tpurt_program_result_info(const tpurt_program_t *prog, size_t i,
                                                   tpurt_tensor_info_t *out_info);

/* ---- buffers ------------------------------------------------------------
 * A dense row-major tensor in device memory. Owned by the caller; must be
 * destroyed before its device. */
typedef struct tpurt_buffer tpurt_buffer_t;

/* Creates a buffer of dtype[dims] holding a copy of `data` (bytes must be
 * exactly the tensor's size; data may be NULL for zeros). */
TPURT_API tpurt_status_t tpurt_buffer_create(tpurt_device_t *dev, tpurt_dtype_t dtype, int rank,
                                             const int64_t *dims, const void *data, size_t bytes,
                                             tpurt_buffer_t **out_buffer);
TPURT_API void tpurt_buffer_destroy(tpurt_buffer_t *buf);
/* Copies the contents to host memory; bytes must equal the buffer's size. */
TPURT_API tpurt_status_t tpurt_buffer_read(const tpurt_buffer_t *buf, void *data, size_t bytes);
/* Shape of a buffer (name is NULL). */
TPURT_API void tpurt_buffer_info(const tpurt_buffer_t *buf, tpurt_tensor_info_t *out_info);
/* Overwrites the contents with bytes of host data (bytes must equal the
 * buffer's size): the same buffer fed with each step's batch. */
TPURT_API tpurt_status_t tpurt_buffer_write(tpurt_buffer_t *buf, const void *data, size_t bytes);

/* ---- execution and statistics ------------------------------------------
 * Counter meanings are documented in docs/isa.md ("Counters"). Units are
 * indexed 0 scalar, 1 vector, 2..5 mxu0..3, 6..13 dma0..7; units absent
 * from the target stay zero. */
#define TPURT_MAX_UNITS 14

/* The counters of one unit, in the field order of tpurt_unit_stats_t:
 * X(field, "label"). label heads the counter's column in the per-unit
 * tables of tpurt-run and `tpucc run --stats` ("": not a column). */
#define TPURT_UNIT_COUNTERS(X)                                                                     \
  X(instructions, "instrs")         /* instructions this unit executed */                          \
  X(busy_cycles, "busy")            /* cycles its issue slot was occupied */                       \
  X(stall_dependency, "st.dep")     /* waiting for a register (or MXU result) */                   \
  X(stall_sync, "st.sync")          /* waiting on a semaphore a non-DMA unit signals */            \
  X(stall_dma, "st.dma")            /* waiting on a semaphore a DMA signals */                     \
  X(stall_weight_load, "st.weight") /* mswap waiting for its weight load */                        \
  X(stall_hbm, "st.hbm")            /* DMA waiting for HBM held by another queue */                \
  X(stall_queue_full, "st.queue")   /* front end: the target unit's queue was full */              \
  X(last_cycle, "")                 /* when its last instruction completed */

typedef struct tpurt_unit_stats {
  const char *name; /* "scalar", "vector", "mxu0", "dma1", ... */
#define TPURT_UNIT_COUNTER_FIELD_(field, label) uint64_t field;
  TPURT_UNIT_COUNTERS(TPURT_UNIT_COUNTER_FIELD_)
#undef TPURT_UNIT_COUNTER_FIELD_
} tpurt_unit_stats_t;

/* The counters of a run after cycles and seconds, in the field order of
 * tpurt_stats_t: X(field, kind), kind COUNTED (the emulator counts it) or
 * DERIVED (computed from the counts and the target). Each is a key of
 * `tpucc run --stats-json`. */
#define TPURT_RUN_COUNTERS(X)                                                                      \
  X(instructions, COUNTED)     /* instructions issued by the front end */                          \
  X(mxu_macs, COUNTED)         /* useful multiply-accumulates */                                   \
  X(mxu_busy_cycles, COUNTED)  /* array cycles spent streaming lhs rows */                         \
  X(mxu_peak_macs, DERIVED)    /* cycles x MXUs x rows x cols */                                   \
  X(mxu_weight_loads, COUNTED) /* weight tiles loaded */                                           \
  X(hbm_read_bytes, COUNTED)                                                                       \
  X(hbm_write_bytes, COUNTED)                                                                      \
  X(hbm_busy_cycles, COUNTED) /* cycles HBM was transferring */                                    \
  X(dma_transfers, COUNTED)                                                                        \
  X(mxu_array_cycles, COUNTED) /* mxu_systolic only: PE-model cycles stepped */               \
  X(ici_puts, COUNTED)         /* many cores: dmaput transfers this core sent */               \
  X(ici_sent_bytes, COUNTED)   /* bytes it sent over ICI */                                     \
  X(ici_received_bytes, COUNTED) /* bytes other cores put into it */                           \
  X(ici_send_cycles, COUNTED)  /* cycles its DMA queues spent reading dmaput sources */         \
  X(ici_wait_cycles, COUNTED)  /* cycles its front end waited on signals from ICI */

typedef struct tpurt_stats {
  uint64_t cycles; /* from start until every unit drained */
  double seconds;  /* cycles / clock */
#define TPURT_RUN_COUNTER_FIELD_(field, kind) uint64_t field;
  TPURT_RUN_COUNTERS(TPURT_RUN_COUNTER_FIELD_)
#undef TPURT_RUN_COUNTER_FIELD_
  tpurt_unit_stats_t units[TPURT_MAX_UNITS];
} tpurt_stats_t;

/* Runs prog with the given parameter buffers (their dtypes and shapes must
 * match the signature exactly). On success creates result buffers into
 * results[0..nresults) (nresults must equal the result count; the caller
 * destroys them) and fills *out_stats if not NULL. A runtime fault returns
 * TPURT_RUNTIME_FAULT (or TPURT_RESOURCE_EXHAUSTED for the cycle limit)
 * with "fault at pc N (instruction): reason" as the message, results set to
 * NULL, and *out_stats holding the counts up to the fault. */
TPURT_API tpurt_status_t tpurt_program_execute(tpurt_program_t *prog, tpurt_buffer_t *const *params,
                                               size_t nparams, tpurt_buffer_t **out_results,
                                               size_t nresults, tpurt_stats_t *out_stats);

/* Runs prog once on each of the device's ncores cores (ncores must be
 * tpurt_device_core_count), as ncores replicas of one program whose
 * collectives (all-reduce, ...) combine the replicas' values in a fixed
 * order (docs/runtime.md, "Replicas"), so results do not depend on thread
 * timing. Replica r reads params[r * nparams .. r * nparams + nparams)
 * (each checked as tpurt_program_execute checks them; a buffer may be
 * passed to several replicas) and gets new result buffers in
 * out_results[r * nresults .. r * nresults + nresults). out_stats: NULL or
 * ncores entries, one per replica. When a replica fails, the others stop at
 * their next collective instead of waiting for it; the call then fails
 * with every result NULL and a message naming the replica ("replica 1:
 * ..."). On a TPU device of several cores tpurt_program_execute and its
 * variants run the program on core 0 alone (a program that talks between
 * cores then ends with a deadlock fault naming the core); on a cpu device
 * of several cores they are TPURT_INVALID_ARGUMENT. */
TPURT_API tpurt_status_t tpurt_program_execute_replicas(tpurt_program_t *prog, size_t ncores,
                                                        tpurt_buffer_t *const *params,
                                                        size_t nparams,
                                                        tpurt_buffer_t **out_results,
                                                        size_t nresults, tpurt_stats_t *out_stats);

/* ---- donation: state that stays on the device -----------------------------
 * A result may be declared to replace a parameter (XLA's input_output_alias):
 * the parameter's buffer is donated to the execution and holds the result
 * afterwards, so weights and optimizer state live in the same buffers from
 * step to step and are read back only when wanted. Module text loaded by
 * libtpurt-cpu declares them in its HLO header
 * (`input_output_alias={ {1}: (0, {}, may-alias) }`: result 1 replaces
 * parameter 0); tpurt_program_set_alias declares them for any program. */

/* Result `result` replaces parameter `param` (-1: no longer). Their dtypes
 * and dims must be equal, and a parameter replaced by one result only;
 * TPURT_INVALID_ARGUMENT otherwise. */
TPURT_API tpurt_status_t tpurt_program_set_alias(tpurt_program_t *prog, size_t result, int param);
/* The parameter result `result` replaces, or -1. */
TPURT_API int tpurt_program_result_alias(const tpurt_program_t *prog, size_t result);
/* tpurt_program_execute with the program's aliases honoured: an aliased
 * result is written into its parameter's buffer (results[r] is set to
 * NULL) and the other results are new buffers as usual. The device writes
 * the new value beside the old one (a second allocation of the buffer's
 * size, made on first use and kept with the buffer) and exchanges them
 * when the run succeeds, so a failed run leaves every parameter as it was
 * and steps after the first allocate nothing for donated state. A donated
 * buffer may not be passed in a second parameter position. The program is
 * not recompiled: any number of executions reuse its compiled code. */
TPURT_API tpurt_status_t tpurt_program_execute_donated(tpurt_program_t *prog,
                                                       tpurt_buffer_t *const *params,
                                                       size_t nparams,
                                                       tpurt_buffer_t **out_results,
                                                       size_t nresults, tpurt_stats_t *out_stats);

/* Host-side figures of a program, by key (docs/runtime.md, "Statistics"):
 *   "host_seconds"    wall time of its last successful execute call (0 before)
 *   "executions"      successful execute calls so far
 *   "compile_seconds" time its load spent compiling module text (libtpurt-cpu;
 *                     TPURT_NOT_FOUND for a .tpub or assembled program)
 *   "flops"           useful FLOPs of one execution, 2 x multiply-adds of its
 *                     dots and convolutions (TPURT_NOT_FOUND for a program
 *                     without an op table)
 * An unknown key is TPURT_NOT_FOUND. */
TPURT_API tpurt_status_t tpurt_program_metric(const tpurt_program_t *prog, const char *key,
                                              double *out_value);

/* ---- per-op profiles ----------------------------------------------------
 * Programs compiled by tpucc carry an op table (the .tpub OPS section):
 * which HLO instruction or fusion of the optimised module each instruction
 * serves, with its source location. A program without one (assembled by
 * hand) has one op, "(program)". docs/profiling.md documents every field
 * and how it is computed. */
typedef struct tpurt_op_info {
  const char *name; /* "fusion.3", "(parameters)", ...; owned by the program */
  const char *kind; /* HLO opcode ("fusion", "dot"), may be "" */
  const char *file; /* source file, may be "" */
  uint32_t line, col; /* 0 when unknown */
  uint64_t flops;     /* useful FLOPs the compiler counted (2 x dot MACs) */
} tpurt_op_info_t;

/* At least 1. */
TPURT_API size_t tpurt_program_op_count(const tpurt_program_t *prog);
TPURT_API tpurt_status_t tpurt_program_op_info(const tpurt_program_t *prog, size_t i,
                                               tpurt_op_info_t *out_info);

/* What one op cost in a run. Stalls are attributed to the op of the
 * instruction that stalled; sums over ops equal the run's totals. */
/* The counters of tpurt_op_stats_t after unit_busy, in field order:
 * X(field, source). source UNIT: the unit counter of that name, from the
 * units each of the op's instructions ran on (its own and the scalar
 * front end); RUN: the run counter of that name; OP: counted per op
 * (vpu_element_ops: 1024 per vector ALU instruction). */
#define TPURT_OP_COUNTERS(X)                                                                       \
  X(stall_weight_load, UNIT)                                                                       \
  X(stall_dma, UNIT)                                                                               \
  X(stall_dependency, UNIT)                                                                        \
  X(stall_sync, UNIT)                                                                              \
  X(stall_hbm, UNIT)                                                                               \
  X(stall_queue_full, UNIT)                                                                        \
  X(mxu_busy_cycles, RUN)                                                                          \
  X(mxu_macs, RUN)                                                                                 \
  X(mxu_weight_loads, RUN)                                                                         \
  X(vpu_instructions, OP)                                                                          \
  X(vpu_element_ops, OP)                                                                           \
  X(hbm_read_bytes, RUN)                                                                           \
  X(hbm_write_bytes, RUN)                                                                          \
  X(hbm_busy_cycles, RUN)                                                                          \
  X(dma_transfers, RUN)

typedef struct tpurt_op_stats {
  uint64_t instructions;          /* executed instructions of the op */
  uint64_t first_cycle, end_cycle; /* first start .. last completion on any unit */
  uint64_t exclusive_cycles;      /* cycles by which it moved the run's end; sums to cycles */
  uint64_t unit_busy[TPURT_MAX_UNITS]; /* issue-slot cycles per unit (sum of occ) */
#define TPURT_OP_COUNTER_FIELD_(field, source) uint64_t field;
  TPURT_OP_COUNTERS(TPURT_OP_COUNTER_FIELD_)
#undef TPURT_OP_COUNTER_FIELD_
} tpurt_op_stats_t;

typedef struct tpurt_profile_options {
  /* When set: a Chrome trace-event JSON file (Perfetto, chrome://tracing):
   * one track per unit, spans named after the op they serve (with their
   * source line), HBM bandwidth as a counter. Overrides the device's
   * trace_path for this run. */
  const char *trace_path;
  /* Nonzero: also one nested span per instruction inside its op's span,
   * for the first million instructions. */
  int trace_instructions;
} tpurt_profile_options_t;

TPURT_API void tpurt_profile_options_init(tpurt_profile_options_t *opts);

/* tpurt_program_execute, plus per-op statistics into out_ops (an array of
 * tpurt_program_op_count(prog) entries, may be NULL) and the trace of
 * opts (may be NULL). On a fault out_ops holds the counts up to it. */
TPURT_API tpurt_status_t tpurt_program_execute_profile(
    tpurt_program_t *prog, tpurt_buffer_t *const *params, size_t nparams,
    tpurt_buffer_t **out_results, size_t nresults, tpurt_stats_t *out_stats,
    const tpurt_profile_options_t *opts, tpurt_op_stats_t *out_ops);

/* The cycle breakdown of the TPU v1 paper's Table 3, over MXU time
 * (cycles x mxus; docs/profiling.md). The six classes are disjoint and sum
 * to total: array_active (rows streaming), weight_stall (mswap waiting for
 * its weight load), weight_shift (MXU slot held by weight loads, swaps and
 * result pops), dependency_stall (waiting for registers, accumulator
 * results or a fence), input_stall (waiting on a semaphore: DMA'd inputs
 * or another unit), non_matrix (the MXU idle while other units work). */
typedef struct tpurt_breakdown {
  uint64_t total;
  uint64_t array_active, weight_stall, weight_shift, non_matrix, dependency_stall, input_stall;
} tpurt_breakdown_t;

/* mxus: the target's MXU count (<= 0: the MXUs that ran instructions). */
TPURT_API void tpurt_stats_breakdown(const tpurt_stats_t *s, int mxus, tpurt_breakdown_t *out);

/* The program's text form (assembler syntax), NUL-terminated, allocated
 * with the device allocator; free it with tpurt_free. */
TPURT_API tpurt_status_t tpurt_program_disassemble(tpurt_program_t *prog, char **out_text);
TPURT_API void tpurt_free(tpurt_device_t *dev, void *ptr);

/* ---- the interconnect ---------------------------------------------------
 * An emulated TPU device of several cores ("v3-8", the pods) joins its
 * chips by ICI links on a 2-D torus (docs/isa.md, "Many cores"): chip k
 * has four torus links out of it (x+, x-, y+, y-, towards its neighbour
 * in that direction) and one on-chip link out of each of its cores, link
 * ids k x (4 + cores per chip) onwards in that order. A transfer holds
 * every link of its route for the same busy cycles. The counters are those
 * of the device's last execution (zero before one, and after an execution
 * that used no interconnect: one core alone); a device whose cores are
 * shared with other processes (tpurt_device_options_t.peers) has every
 * link's counters on every rank, equal to the one-process run's. */
typedef struct tpurt_link_stats {
  char name[48];         /* "chip0(0,0) x+", "chip1 core2 on-chip" */
  const char *direction; /* "x+", "x-", "y+", "y-" or "on-chip"; static */
  int chip;              /* the chip it leaves */
  int to_chip;           /* the chip it reaches (chip itself: on-chip) */
  int core;              /* on-chip: the core it leaves; -1 for a torus link */
  uint64_t transfers;    /* transfers that crossed it */
  uint64_t bytes;        /* their bytes */
  uint64_t busy_cycles;  /* cycles it carried data; utilisation is busy_cycles
                            over the execution's cycles (its slowest core's) */
} tpurt_link_stats_t;

/* The links of dev: chips x (4 + cores per chip) on a TPU device of
 * several cores; 0 for a single core, for cpu devices and for NULL. */
TPURT_API size_t tpurt_device_link_count(const tpurt_device_t *dev);
/* Link `link`'s figures of the last execution into *out;
 * TPURT_INVALID_ARGUMENT (out zeroed) when link >= the link count. */
TPURT_API tpurt_status_t tpurt_device_link_stats(tpurt_device_t *dev, size_t link,
                                                 tpurt_link_stats_t *out_stats);

#ifdef __cplusplus
}
#endif

#endif
