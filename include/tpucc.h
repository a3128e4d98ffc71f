/* tpucc.h: libtpucc, the tpucc compile API.
 *
 * What it does today: compiles XLA HLO text (.hlo) or tpucc graph files
 * (.tg) into a verified module, prints the module as HLO text, describes
 * its signature, and executes it on a target from the target table
 * ("v3"/"v2" and overrides: the TPU emulator; "cpu": the LLVM JIT;
 * "interp": the reference evaluator), whichever this build includes.
 *
 * Handles and ownership:
 *   tpucc_session  owns the diagnostics of the last compilation and the
 *                  message of the last failed call. Create one per thread
 *                  of work; destroy it last.
 *   tpucc_module   a compiled module. Made by a session; must be destroyed
 *                  before that session. Calls on a module report failures
 *                  through its session's message.
 *   tpucc_result   the tensors one execution produced; owns their memory.
 * Every destroy function accepts NULL. Strings returned by the library are
 * owned by the handle they came from and stay valid until that handle's
 * next call of the same kind or its destruction; callers never free them.
 *
 * Errors: every fallible call returns a tpucc_status; on anything but
 * TPUCC_OK, tpucc_session_message() holds a one-line reason and, after a
 * failed compile, tpucc_session_diagnostics() the full report
 * ("file:line:col: error: ..." with source lines and carets).
 *
 * Thread safety: no global mutable state. A session and everything made
 * from it are thread-compatible (use from one thread at a time); distinct
 * sessions may be used concurrently.
 *
 * Tensors cross the API as tpucc_tensor views: dense row-major elements in
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

/* The library's version string ("0.1.0"), to compare with the macros. */
TPUCC_API const char *tpucc_version(void);

typedef enum tpucc_status {
  TPUCC_OK = 0,
  TPUCC_INVALID_ARGUMENT, /* a caller passed something malformed */
  TPUCC_PARSE_ERROR,      /* source text rejected; see the diagnostics */
  TPUCC_UNSUPPORTED,      /* well-formed but outside what tpucc handles */
  TPUCC_OUT_OF_MEMORY,
  TPUCC_IO_ERROR,
  TPUCC_NOT_FOUND,
  TPUCC_RESOURCE_EXHAUSTED, /* a configured limit was reached */
  TPUCC_RUNTIME_FAULT,      /* execution stopped on a fault */
  TPUCC_FAILED_PRECONDITION,
  TPUCC_INTERNAL,
} tpucc_status;

/* A short constant description ("parse error"). Never NULL. */
TPUCC_API const char *tpucc_status_str(tpucc_status s);

typedef enum tpucc_dtype {
  TPUCC_DTYPE_PRED,
  TPUCC_DTYPE_S8,
  TPUCC_DTYPE_S32,
  TPUCC_DTYPE_BF16,
  TPUCC_DTYPE_F16,
  TPUCC_DTYPE_F32,
} tpucc_dtype;

/* "f32", "bf16", ...; element size in bytes (0 for an invalid dtype). */
TPUCC_API const char *tpucc_dtype_name(tpucc_dtype t);
TPUCC_API int tpucc_dtype_size(tpucc_dtype t);

#define TPUCC_MAX_RANK 8

/* A tensor: a description plus, when data is non-NULL, its elements.
 * Signature queries fill dtype/rank/dims/name and leave data NULL. */
typedef struct tpucc_tensor {
  tpucc_dtype dtype;
  int32_t rank;
  int64_t dims[TPUCC_MAX_RANK];
  void *data;       /* dense row-major elements, or NULL */
  size_t nbytes;    /* product(dims) * tpucc_dtype_size(dtype) */
  const char *name; /* the parameter's name in signatures; else NULL */
} tpucc_tensor;

/* ---- sessions -------------------------------------------------------- */

typedef struct tpucc_session tpucc_session;

typedef struct tpucc_session_options {
  int32_t max_errors; /* stop a compilation after this many errors (50) */
} tpucc_session_options;

TPUCC_API void tpucc_session_options_init(tpucc_session_options *o);
/* opts may be NULL (defaults). */
TPUCC_API tpucc_status tpucc_session_create(const tpucc_session_options *opts,
                                            tpucc_session **out_session);
TPUCC_API void tpucc_session_destroy(tpucc_session *s);
/* The last failed call's reason, or "" when the last call succeeded. */
TPUCC_API const char *tpucc_session_message(const tpucc_session *s);
/* The diagnostics of the last compilation (warnings too), or "". */
TPUCC_API const char *tpucc_session_diagnostics(const tpucc_session *s);

/* ---- compiling ------------------------------------------------------- */

typedef struct tpucc_module tpucc_module;

typedef enum tpucc_language {
  TPUCC_LANGUAGE_AUTO, /* by extension: .hlo, .tg; else by content */
  TPUCC_LANGUAGE_HLO,
  TPUCC_LANGUAGE_TG,
} tpucc_language;

typedef struct tpucc_compile_options {
  tpucc_language language; /* default AUTO */
  const char *entry;       /* .tg: the graph to compile (NULL: the last) */
} tpucc_compile_options;

TPUCC_API void tpucc_compile_options_init(tpucc_compile_options *o);
/* Reads and compiles a file (at most 256 MiB). opts may be NULL. Fails
 * with TPUCC_NOT_FOUND/TPUCC_IO_ERROR for unreadable files and
 * TPUCC_PARSE_ERROR for rejected text (see tpucc_session_diagnostics). */
TPUCC_API tpucc_status tpucc_compile_file(tpucc_session *s, const tpucc_compile_options *opts,
                                          const char *path, tpucc_module **out_module);
/* Compiles text held in memory; name labels diagnostics ("model.hlo") and
 * picks the language under TPUCC_LANGUAGE_AUTO. text need not be
 * NUL-terminated and is copied. */
TPUCC_API tpucc_status tpucc_compile_memory(tpucc_session *s, const tpucc_compile_options *opts,
                                            const char *name, const char *text, size_t len,
                                            tpucc_module **out_module);
TPUCC_API void tpucc_module_destroy(tpucc_module *m);

/* The module as HLO text (readable again by tpucc_compile_memory). The
 * text is owned by the module. */
TPUCC_API tpucc_status tpucc_module_emit_hlo(tpucc_module *m, const char **out_text,
                                             size_t *out_len);

/* The entry's signature: parameters in order, and results (a tuple-shaped
 * root contributes its elements, flattened depth first). Descriptions have
 * data == NULL; names are owned by the module. */
TPUCC_API int32_t tpucc_module_parameter_count(const tpucc_module *m);
TPUCC_API tpucc_status tpucc_module_parameter(const tpucc_module *m, int32_t i,
                                              tpucc_tensor *out_desc);
TPUCC_API int32_t tpucc_module_result_count(const tpucc_module *m);
TPUCC_API tpucc_status tpucc_module_result(const tpucc_module *m, int32_t i,
                                           tpucc_tensor *out_desc);

/* ---- executing ------------------------------------------------------- */

/* Targets a module can execute on, in a fixed order; index 0 is the
 * default. Names are static strings. */
TPUCC_API int32_t tpucc_target_count(void);
TPUCC_API const char *tpucc_target_name(int32_t i);
TPUCC_API const char *tpucc_target_description(int32_t i);

typedef struct tpucc_result tpucc_result;

typedef struct tpucc_execute_options {
  const char *target; /* a name from the target list, "cpu" with options
                         ("cpu,threads=2,numerics=strict": docs/cli.md; the
                         options left out from TPUCC_CPU_THREADS and
                         TPUCC_CPU_NUMERICS when set); NULL: the default */
  int64_t max_bytes;  /* refuse to materialise more than this (0: 16 GiB) */
} tpucc_execute_options;

TPUCC_API void tpucc_execute_options_init(tpucc_execute_options *o);
/* Runs the module's entry on inputs (one per parameter, in order; dtype and
 * dims must match the signature exactly; data is read, never written). On
 * success *out_result holds one tensor per result. A mismatched input
 * fails with TPUCC_INVALID_ARGUMENT naming the parameter, expected and
 * given; an unknown target fails with TPUCC_NOT_FOUND listing the known. */
TPUCC_API tpucc_status tpucc_execute(tpucc_module *m, const tpucc_execute_options *opts,
                                     const tpucc_tensor *inputs, int32_t ninputs,
                                     tpucc_result **out_result);
TPUCC_API int32_t tpucc_result_count(const tpucc_result *r);
/* The i-th result tensor, or NULL when i is out of range; owned by r. */
TPUCC_API const tpucc_tensor *tpucc_result_tensor(const tpucc_result *r, int32_t i);
TPUCC_API void tpucc_result_destroy(tpucc_result *r);

#ifdef __cplusplus
}
#endif

#endif
