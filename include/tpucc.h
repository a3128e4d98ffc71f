/* tpucc.h: libtpucc, the tpucc compile API.
 *
 * What it does today: compiles XLA HLO text (.hlo) or tpucc graph files
 * (.tg) into a verified module, prints the module as HLO text, describes
 * its signature, and executes it on a target from the target table
 * ("v3"/"v2" and overrides: the TPU emulator; "cpu": the LLVM JIT;
 * "interp": the reference evaluator), whichever this build includes.
 *
 * Handles and ownership:
 *   tpucc_session_t  owns the diagnostics of the last compilation and the
 *                  message of the last failed call. Create one per thread
 *                  of work; destroy it last.
 *   tpucc_module_t   a compiled module. Made by a session; must be destroyed
 *                  before that session. Calls on a module report failures
 *                  through its session's message.
 *   tpucc_result_t   the tensors one execution produced; owns their memory.
 * Every destroy function accepts NULL. Strings returned by the library are
 * owned by the handle they came from and stay valid until that handle's
 * next call of the same kind or its destruction; callers never free them.
 *
 * Errors: every fallible call returns a tpucc_status_t; on anything but
 * TPUCC_OK, tpucc_session_message() holds a one-line reason and, after a
 * failed compile, tpucc_session_diagnostics() the full report
 * ("file:line:col: error: ..." with source lines and carets).
 *
 * Thread safety: no global mutable state. A session and everything made
 * from it are thread-compatible (use from one thread at a time); distinct
 * sessions may be used concurrently.
 *
 * Tensors cross the API as tpucc_tensor_t views: dense row-major elements in
 * host byte order; pred one byte 0/1; bf16 and f16 as their 16-bit
 * patterns; f32 as float. */
#ifndef TPUCC_H
#define TPUCC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TPUCC_API __attribute__((visibility("default")))
#else
#define TPUCC_API
#endif

#define TPUCC_VERSION_MAJOR 0
#define TPUCC_VERSION_MINOR 1
#define TPUCC_VERSION_PATCH 0
#define TPUCC_VERSION_STRING "0.1.0"

/* MAJOR * 10000 + MINOR * 100 + PATCH */
#define TPUCC_VERSION_NUMBER                                                                       \
  (TPUCC_VERSION_MAJOR * 10000 + TPUCC_VERSION_MINOR * 100 + TPUCC_VERSION_PATCH)

/* The library's version string ("0.1.0"), to compare with the macros. */
TPUCC_API const char *tpucc_version_string(void);

/* Status codes: X(NAME, "text"). TPUCC_NAME is the row's position, fixed
 * for good (TPUCC_OK 0 ... TPUCC_INTERNAL 10, the same numbers as
 * libtpurt's codes of the same names); "text" is what tpucc_status_string
 * returns. */
#define TPUCC_STATUS_LIST(X)                                                                       \
  X(OK, "ok")                                                                                      \
  X(INVALID_ARGUMENT, "invalid argument") /* a caller passed something malformed */                \
  X(PARSE_ERROR, "parse error")           /* source text rejected; see the diagnostics */          \
  X(UNSUPPORTED, "unsupported")           /* well-formed but outside what tpucc handles */         \
  X(OUT_OF_MEMORY, "out of memory")                                                                \
  X(IO_ERROR, "I/O error")                                                                         \
  X(NOT_FOUND, "not found")                                                                        \
  X(RESOURCE_EXHAUSTED, "resource exhausted") /* a configured limit was reached */                 \
  X(RUNTIME_FAULT, "runtime fault")           /* execution stopped on a fault */                   \
  X(FAILED_PRECONDITION, "failed precondition")                                                    \
  X(INTERNAL, "internal error")

typedef enum tpucc_status {
#define TPUCC_STATUS_ENUM_(name, text) TPUCC_##name,
  TPUCC_STATUS_LIST(TPUCC_STATUS_ENUM_)
#undef TPUCC_STATUS_ENUM_
} tpucc_status_t;

/* A short constant description ("parse error"), "unknown status" for a
 * value not in the list. Never NULL. */
TPUCC_API const char *tpucc_status_string(tpucc_status_t s);

/* Element types: X(NAME, "name", bytes). TPUCC_NAME is the row's position,
 * fixed for good (TPUCC_PRED 0 ... TPUCC_F32 5, TPUCC_S16 6 ... TPUCC_F64
 * 12); "name" is what tpucc_dtype_name returns and bytes what
 * tpucc_dtype_size returns. Unsigned types hold their value (u64: its bit
 * pattern); every type runs on interp and cpu; the TPU targets run the
 * 32-bit and narrower ones and refuse f64 (and most s64/u64 arithmetic)
 * with a located error. New types are appended. */
#define TPUCC_DTYPE_LIST(X)                                                                        \
  X(PRED, "pred", 1) /* one byte, 0 or 1 */                                                        \
  X(S8, "s8", 1)                                                                                   \
  X(S32, "s32", 4)                                                                                 \
  X(BF16, "bf16", 2)                                                                               \
  X(F16, "f16", 2)                                                                                 \
  X(F32, "f32", 4)                                                                                 \
  X(S16, "s16", 2)                                                                                 \
  X(S64, "s64", 8)                                                                                 \
  X(U8, "u8", 1)                                                                                   \
  X(U16, "u16", 2)                                                                                 \
  X(U32, "u32", 4)                                                                                 \
  X(U64, "u64", 8)                                                                                 \
  X(F64, "f64", 8)

typedef enum tpucc_dtype {
#define TPUCC_DTYPE_ENUM_(name, spelling, bytes) TPUCC_##name,
  TPUCC_DTYPE_LIST(TPUCC_DTYPE_ENUM_)
#undef TPUCC_DTYPE_ENUM_
} tpucc_dtype_t;

/* "f32", "bf16", ...; element size in bytes (0 for an invalid dtype). */
TPUCC_API const char *tpucc_dtype_name(tpucc_dtype_t t);
TPUCC_API int tpucc_dtype_size(tpucc_dtype_t t);

/* The most dimensions a tensor crossing the API has: the IR's own limit
 * (docs/language.md, "Limits"). */
#define TPUCC_MAX_RANK 12

/* A tensor: a description plus, when data is non-NULL, its elements.
 * Signature queries fill dtype/rank/dims/name and leave data NULL. */
typedef struct tpucc_tensor {
  tpucc_dtype_t dtype;
  int32_t rank;
  int64_t dims[TPUCC_MAX_RANK];
  void *data;       /* dense row-major elements, or NULL */
  size_t nbytes;    /* product(dims) * tpucc_dtype_size(dtype) */
  const char *name; /* the parameter's name in signatures; else NULL */
} tpucc_tensor_t;

/* ---- sessions -------------------------------------------------------- */

typedef struct tpucc_session tpucc_session_t;

typedef struct tpucc_session_options {
  int32_t max_errors; /* stop a compilation after this many errors (50) */
} tpucc_session_options_t;

TPUCC_API void tpucc_session_options_init(tpucc_session_options_t *o);
/* opts may be NULL (defaults). */
TPUCC_API tpucc_status_t tpucc_session_create(const tpucc_session_options_t *opts,
                                              tpucc_session_t **out_session);
TPUCC_API void tpucc_session_destroy(tpucc_session_t *s);
/* The last failed call's reason, or "" when the last call succeeded. */
TPUCC_API const char *tpucc_session_message(const tpucc_session_t *s);
/* The diagnostics of the last compilation (warnings too), or "". */
TPUCC_API const char *tpucc_session_diagnostics(const tpucc_session_t *s);

/* A host function for custom-calls whose custom_call_target is the name it
 * was registered under (as XLA's FFI handlers). operands: the array leaves
 * of the custom-call's operands (tuples flattened depth first), read-only;
 * results: the leaves of its declared result shape, allocated and zeroed by
 * tpucc, to be filled. backend_config: the attribute's text, "" when
 * absent. Return TPUCC_OK, or another status with a message in err; the
 * execution then fails naming the custom-call and the message. Called on
 * the executing thread, one call at a time per execution. */
typedef tpucc_status_t (*tpucc_custom_call_fn)(void *user_data, const tpucc_tensor_t *operands,
                                               int32_t noperands, tpucc_tensor_t *results,
                                               int32_t nresults, const char *backend_config,
                                               char *err, size_t errlen);
/* Registers fn for target in s: modules of s that call it run on "interp"
 * and "cpu" (JIT); the TPU targets refuse them at compile time, naming the
 * target. Registering a target again replaces its function. user_data must
 * stay valid while s executes. */
TPUCC_API tpucc_status_t tpucc_session_register_custom_call(tpucc_session_t *s, const char *target,
                                                            tpucc_custom_call_fn fn,
                                                            void *user_data);

/* ---- compiling ------------------------------------------------------- */

typedef struct tpucc_module tpucc_module_t;

typedef enum tpucc_language {
  TPUCC_LANGUAGE_AUTO, /* by extension: .hlo, .tg; else by content */
  TPUCC_LANGUAGE_HLO,
  TPUCC_LANGUAGE_TG,
} tpucc_language_t;

typedef struct tpucc_compile_options {
  tpucc_language_t language; /* default AUTO */
  const char *entry;         /* .tg: the graph to compile (NULL: the last) */
} tpucc_compile_options_t;

TPUCC_API void tpucc_compile_options_init(tpucc_compile_options_t *o);
/* Reads and compiles a file (at most 256 MiB). opts may be NULL. Fails
 * with TPUCC_NOT_FOUND/TPUCC_IO_ERROR for unreadable files and
 * TPUCC_PARSE_ERROR for rejected text (see tpucc_session_diagnostics). */
TPUCC_API tpucc_status_t tpucc_compile_file(tpucc_session_t *s, const tpucc_compile_options_t *opts,
                                            const char *path, tpucc_module_t **out_module);
/* Compiles text held in memory; name labels diagnostics ("model.hlo") and
 * picks the language under TPUCC_LANGUAGE_AUTO. text need not be
 * NUL-terminated and is copied. */
TPUCC_API tpucc_status_t tpucc_compile_memory(tpucc_session_t *s,
                                              const tpucc_compile_options_t *opts, const char *name,
                                              const char *text, size_t len,
                                              tpucc_module_t **out_module);
TPUCC_API void tpucc_module_destroy(tpucc_module_t *m);

/* The module as HLO text (readable again by tpucc_compile_memory). The
 * text is owned by the module. */
TPUCC_API tpucc_status_t tpucc_module_emit_hlo(tpucc_module_t *m, const char **out_text,
                                               size_t *out_len);

/* The entry's signature: parameters in order, and results (a tuple-shaped
 * root contributes its elements, flattened depth first). Descriptions have
 * data == NULL; names are owned by the module. */
TPUCC_API int32_t tpucc_module_parameter_count(const tpucc_module_t *m);
TPUCC_API tpucc_status_t tpucc_module_parameter(const tpucc_module_t *m, int32_t i,
                                                tpucc_tensor_t *out_desc);
TPUCC_API int32_t tpucc_module_result_count(const tpucc_module_t *m);
TPUCC_API tpucc_status_t tpucc_module_result(const tpucc_module_t *m, int32_t i,
                                             tpucc_tensor_t *out_desc);

/* ---- gradients ------------------------------------------------------ */

typedef struct tpucc_grad_options {
  const int32_t *wrt;     /* parameter numbers to differentiate, in the order
                             the gradients are returned; NULL: every
                             floating-point parameter, in order */
  int32_t nwrt;
  int32_t remat;          /* nonzero: the backward pass recomputes the forward
                             values it reads instead of keeping them */
  int32_t value_and_grad; /* nonzero: the entry must have one floating-point
                             scalar result; no cotangent is taken (seed 1)
                             and the result is (value, gradients...) */
} tpucc_grad_options_t;

TPUCC_API void tpucc_grad_options_init(tpucc_grad_options_t *o);
/* The vector-Jacobian product of m's entry as a new module (jax.vjp):
 * its parameters are m's, then one cotangent per result of m (same dtype
 * and dims, in result order); its result is the tuple of the gradients
 * with respect to the chosen parameters. m is not changed; *out_module
 * belongs to m's session. Fails with TPUCC_INVALID_ARGUMENT for a bad wrt
 * list or result, TPUCC_UNSUPPORTED when a gradient is asked through an op
 * that has none (the message is located: "file:line:col: error: 'NAME'
 * (op): ..."). docs/gradients.md lists the rules. */
TPUCC_API tpucc_status_t tpucc_grad(tpucc_module_t *m, const tpucc_grad_options_t *opts,
                                    tpucc_module_t **out_module);

/* ---- executing ------------------------------------------------------- */

/* Targets a module can execute on, in a fixed order; index 0 is the
 * default. Names are static strings. */
TPUCC_API int32_t tpucc_target_count(void);
TPUCC_API const char *tpucc_target_name(int32_t i);
TPUCC_API const char *tpucc_target_description(int32_t i);

typedef struct tpucc_result tpucc_result_t;

typedef struct tpucc_execute_options {
  const char *target; /* a name from the target list, "cpu" with options
                         ("cpu,threads=2,numerics=strict,cache=DIR|off":
                         docs/cli.md; the options left out from
                         TPUCC_CPU_THREADS and TPUCC_CPU_NUMERICS when set,
                         the compile cache's as docs/cpu-backend.md says);
                         NULL: the default */
  int64_t max_bytes;  /* refuse to materialise more than this (0: 16 GiB) */
  int32_t replicas;   /* replicas to run (docs/collectives.md); 0: the module's
                         replica_count on a target that runs replicas, else 1 */
} tpucc_execute_options_t;

TPUCC_API void tpucc_execute_options_init(tpucc_execute_options_t *o);
/* Runs the module's entry on inputs (one per parameter, in order; dtype and
 * dims must match the signature exactly; data is read, never written). On
 * success *out_result holds one tensor per result. With N = opts->replicas
 * replicas, an input may instead have one extra leading dimension N
 * (replica r gets its slice r), and with N > 1 every result has a leading
 * dimension N (replica r's result at index r); a target that runs fewer
 * replicas than asked fails with TPUCC_UNSUPPORTED. A mismatched input
 * fails with TPUCC_INVALID_ARGUMENT naming the parameter, expected and
 * given; an unknown target fails with TPUCC_NOT_FOUND listing the known. */
TPUCC_API tpucc_status_t tpucc_execute(tpucc_module_t *m, const tpucc_execute_options_t *opts,
                                       const tpucc_tensor_t *inputs, int32_t ninputs,
                                       tpucc_result_t **out_result);
TPUCC_API int32_t tpucc_result_count(const tpucc_result_t *r);
/* The i-th result tensor, or NULL when i is out of range; owned by r. */
TPUCC_API const tpucc_tensor_t *tpucc_result_tensor(const tpucc_result_t *r, int32_t i);
TPUCC_API void tpucc_result_destroy(tpucc_result_t *r);

/* ---- deprecated names ----------------------------------------------------
 * The names of the first release, before this header followed libtpurt's
 * naming rule (docs/runtime.md, "Naming"). Each is an alias of its
 * replacement, with the same value or type. */
/* deprecated: use tpucc_version_string; removed after the next release */
#define tpucc_version tpucc_version_string
/* deprecated: use tpucc_status_string; removed after the next release */
#define tpucc_status_str tpucc_status_string
/* deprecated: use tpucc_status_t; removed after the next release */
typedef tpucc_status_t tpucc_status;
/* deprecated: use tpucc_dtype_t; removed after the next release */
typedef tpucc_dtype_t tpucc_dtype;
/* deprecated: use tpucc_tensor_t; removed after the next release */
typedef tpucc_tensor_t tpucc_tensor;
/* deprecated: use tpucc_session_t; removed after the next release */
typedef tpucc_session_t tpucc_session;
/* deprecated: use tpucc_session_options_t; removed after the next release */
typedef tpucc_session_options_t tpucc_session_options;
/* deprecated: use tpucc_module_t; removed after the next release */
typedef tpucc_module_t tpucc_module;
/* deprecated: use tpucc_language_t; removed after the next release */
typedef tpucc_language_t tpucc_language;
/* deprecated: use tpucc_compile_options_t; removed after the next release */
typedef tpucc_compile_options_t tpucc_compile_options;
/* deprecated: use tpucc_result_t; removed after the next release */
typedef tpucc_result_t tpucc_result;
/* deprecated: use tpucc_execute_options_t; removed after the next release */
typedef tpucc_execute_options_t tpucc_execute_options;
/* deprecated: use TPUCC_PRED; removed after the next release */
#define TPUCC_DTYPE_PRED TPUCC_PRED
/* deprecated: use TPUCC_S8; removed after the next release */
#define TPUCC_DTYPE_S8 TPUCC_S8
/* deprecated: use TPUCC_S32; removed after the next release */
#define TPUCC_DTYPE_S32 TPUCC_S32
/* deprecated: use TPUCC_BF16; removed after the next release */
#define TPUCC_DTYPE_BF16 TPUCC_BF16
/* deprecated: use TPUCC_F16; removed after the next release */
#define TPUCC_DTYPE_F16 TPUCC_F16
/* deprecated: use TPUCC_F32; removed after the next release */
#define TPUCC_DTYPE_F32 TPUCC_F32

#ifdef __cplusplus
}
#endif

#endif
