/* driver.h: the one path from module text to a compiled program: parse
 * (frontend/), the pass pipeline for the given target (passes/), then a
 * backend (backend/tpu, backend/llvm). libtpucc (tools/api.c), the tpucc
 * command (tools/cmd_*.c) and libtpurt-cpu's devices (driver/rtdev.c) all
 * go through it. Target specs are parsed here and nowhere else:
 *
 *   interp                                  the reference evaluator
 *   v3 | v2 | v3-8 ...[,key=value...]       a TPU (runtime/isa/target.c)
 *   cpu[,threads=N][,numerics=native|strict|tpu][,replicas=N][,cache=DIR|off]   the LLVM JIT
 *
 * Environment variables only supply documented defaults, read here:
 * TPUCC_CPU_THREADS and TPUCC_CPU_NUMERICS for the cpu options a spec
 * leaves out (when the caller asks for them: the tpucc command and
 * libtpucc, docs/cli.md), TPUCC_CONV_TILE for the cpu convolution tile
 * (docs/cpu-backend.md), and for every cpu spec TPUCC_NO_CACHE,
 * TPUCC_CACHE_DIR, XDG_CACHE_HOME and HOME for the compile cache a spec
 * does not name. Prefix drv_. Not installed. */
#ifndef TPUCC_DRIVER_H
#define TPUCC_DRIVER_H

#include "ir/ir.h"
#include "tpucc.h"

/* ---- text -> module ------------------------------------------------------ */

/* The language of module text: .hlo or .txt is HLO, .tg is .tg; other
 * names are HLO when the text names a module or an entry computation
 * ("HloModule", "ENTRY"), else fallback. */
tpucc_language_t drv_language_of(const char *name, const char *text, size_t len,
                               tpucc_language_t fallback);

/* Parses len bytes of text (not necessarily NUL-terminated) named `name`
 * in diagnostics, registered with d for source lines. entry: for .tg, the
 * graph to compile (NULL: the last). Returns ST_OK with *out, ST_PARSE_ERROR
 * with *out NULL and the errors in d (none when the frontend gave up
 * without one), or ST_UNSUPPORTED when this build has no frontend for the
 * language. *out may have no entry computation (m->entry == IR_NONE). */
base_status drv_parse(const char *name, const char *text, size_t len, tpucc_language_t lang,
                      const char *entry, diag *d, ir_module **out);

/* What the pass pipeline runs and reports. */
typedef struct drv_opt {
  int opt_level;          /* pipeline level 0..2 when passes is NULL */
  const char *passes;     /* "a,b,c": these instead, in order */
  bool verify_each;       /* ir_verify after every pass (else once at the end) */
  strbuf *explain;        /* when non-NULL, the passes' decisions */
  const char *dump_dir;   /* HLO after each pass into DIR, or NULL */
  const char *dump_after; /* regex over pass names for the dumps, or NULL */
  bool time_passes;       /* per-pass times to stderr */
  int64_t all_reduce_combine; /* the all-reduce combiner's limit in bytes: 0 the
                                 target's (TPU: on, else off), < 0 off */
} drv_opt;

/* Runs the passes on m for target (a spec: a TPU spec sizes the passes'
 * decisions, such as what fits VMEM, by that TPU; NULL or any other
 * target: v3's figures). Errors go to d; returns pass_run's status. */
base_status drv_optimize(ir_module *m, const drv_opt *o, const char *target, diag *d);

/* Parses module text named `name` (language: drv_language_of, falling
 * back to .tg) and runs the -O2 pipeline for target, verified after every
 * pass: what libtpurt-cpu's devices compile. NULL with the diagnostics (or
 * the reason) in err as one message. */
ir_module *drv_load(const char *name, const void *text, size_t len, const char *target, char *err,
                    size_t errlen);

/* The diagnostics of d as one message (no trailing newline), or fallback
 * when there are none. */
void drv_diag_message(diag *d, const char *fallback, char *err, size_t errlen);

/* ---- target specs -------------------------------------------------------- */

/* A cpu spec, parsed. numerics is a cpu_numerics value (backend/llvm). */
typedef struct drv_cpu_spec {
  int threads;        /* 1..1024 */
  int numerics;       /* 0 native, 1 strict, 2 tpu */
  int replicas;       /* 1..256: cores of a device, one replica (host thread) each */
  char canonical[80]; /* "cpu,threads=2,numerics=native" (",replicas=N" when N > 1; no cache:
                         it never changes what runs) */
  char cache_dir[1024]; /* the JIT's compile cache; empty: off */
} drv_cpu_spec;

/* True when spec names the cpu ("cpu" or "cpu,..."). */
bool drv_is_cpu_spec(const char *spec);

/* Parses "cpu[,threads=N][,numerics=native|strict|tpu][,replicas=N][,cache=DIR|off]"
 * (a key given twice: the last wins; replicas default 1). The options left
 * out are one thread per online CPU and native numerics; with
 * env_defaults, TPUCC_CPU_THREADS and TPUCC_CPU_NUMERICS when set come
 * first. The compile cache: cache=off or TPUCC_NO_CACHE set (not empty,
 * not "0") turns it off, cache=DIR names it (before TPUCC_NO_CACHE), else
 * TPUCC_CACHE_DIR, else $XDG_CACHE_HOME/tpucc, else $HOME/.cache/tpucc
 * (neither set: off). ST_INVALID_ARGUMENT with a one-line reason in err
 * for a bad spec or variable. */
base_status drv_cpu_spec_parse(const char *spec, bool env_defaults, drv_cpu_spec *out, char *err,
                               size_t errlen);

/* The name of a numerics value ("native", "strict", "tpu"). */
const char *drv_numerics_name(int numerics);

#ifdef TPUCC_HAVE_LLVM
#include "backend/llvm/cpu.h"
/* Fills o (after cpu_options_init) for the spec s: threads, numerics, the
 * compile cache, the convolution tile TPUCC_CONV_TILE=PXxOV asks for, if
 * any, and the compile threads TPUCC_CPU_COMPILE_THREADS=N asks for (else
 * one per online CPU; they change no code). */
void drv_cpu_options(const drv_cpu_spec *s, cpu_options *o);
#endif

/* Whether cpu compiles draw a progress line on stderr (when it is a
 * terminal): the tpucc command turns it on; libraries stay silent. */
void drv_set_progress(bool on);

#endif
