/* rtdev.h: the compiler side of libtpurt-cpu (docs/runtime.md, "The cpu
 * device"). Prefix cpu_rt_.
 *
 * libtpurt-cpu is runtime/tpurt.c built with TPURT_HAVE_CPU plus rtdev.c:
 * the same public API as libtpurt, with two additions that need the
 * compiler: the "cpu" device, whose programs are module text (XLA HLO or
 * .tg) compiled at load time to native code by this backend's JIT, and
 * module text loaded on a TPU device, compiled at load time to a .tpub
 * image by backend/tpu. Both run the -O2 pass pipeline first, as `tpucc
 * run` does.
 *
 * Memory: the compiler, LLVM and the JIT allocate with malloc (the
 * compiler stops the process when malloc fails), not with the device's
 * allocator; only tpurt.c's own objects (buffers, handles) use that.
 * Thread-compatible: one call on a program at a time. */
#ifndef TPUCC_BACKEND_LLVM_RTDEV_H
#define TPUCC_BACKEND_LLVM_RTDEV_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "tpub.h"
#include "tpurt.h"

/* A parsed cpu device spec: "cpu[,threads=N][,numerics=native|strict|tpu]". */
typedef struct cpu_rt_spec {
  int threads;  /* 1..1024; the spec's default is one per online CPU */
  int numerics; /* a cpu_numerics value */
  char canonical[64]; /* "cpu,threads=2,numerics=native" */
} cpu_rt_spec;

/* TPURT_OK, or TPURT_INVALID_ARGUMENT with the reason in err. */
tpurt_status_t cpu_rt_parse_spec(const char *spec, cpu_rt_spec *out, char *err, size_t errlen);

/* A compiled cpu program and its flat signature: one tensor per array leaf
 * of the entry's parameters (tuple parameters flattened depth-first, named
 * "param.0", ...), one per leaf of the root ("result.0", ...). */
typedef struct cpu_rt_program cpu_rt_program;

typedef struct cpu_rt_info {
  uint32_t nparams, nresults;
  const tpub_tensor *params, *results; /* owned by the program */
  double compile_seconds;              /* parse + passes + LLVM + JIT */
  uint64_t flops;                      /* cpu_rt_flops of the optimised module */
  int threads;
} cpu_rt_info;

/* Compiles module text (`name` names it in diagnostics; ".tg" picks the
 * .tg frontend, anything else HLO). Failures: TPURT_PARSE_ERROR with the
 * "name:line:col: error: ..." diagnostics, TPURT_UNSUPPORTED for an element
 * type libtpurt cannot hold or an op the backend cannot lower, with the
 * reason in err. */
tpurt_status_t cpu_rt_compile(const char *name, const void *text, size_t len,
                              const cpu_rt_spec *spec, cpu_rt_program **out, char *err,
                              size_t errlen);
void cpu_rt_get_info(const cpu_rt_program *p, cpu_rt_info *out);
/* Runs p: in[i] / out[i] point at each parameter / result leaf's dense
 * row-major bytes (sizes as in the signature; outputs overlap nothing). */
tpurt_status_t cpu_rt_execute(cpu_rt_program *p, void *const *in, void *const *out, char *err,
                              size_t errlen);
void cpu_rt_destroy(cpu_rt_program *p); /* accepts NULL */

/* Compiles module text for the TPU target spec into an image (allocated
 * with malloc, freed by tpub_free). Same failures as cpu_rt_compile, plus
 * TPURT_RESOURCE_EXHAUSTED when it does not fit the target. */
tpurt_status_t cpu_rt_compile_tpu(const char *name, const void *text, size_t len,
                                  const char *target, tpub_image **out, double *out_seconds,
                                  char *err, size_t errlen);

#endif
