/* device.h: how a kind of device plugs into libtpurt (docs/runtime.md,
 * "Devices and drivers"). Prefix rt_.
 *
 * As in IREE's HAL, a driver is a name, a create function and a vtable of
 * device operations. tpurt.c owns the public handles (tpurt_device_t,
 * tpurt_program_t, tpurt_buffer_t), checks every argument against the
 * program's signature, and keeps the messages and metrics; a driver owns
 * its device's state and its programs, and sees only checked calls.
 *
 * A library links a fixed set of drivers, found through rt_linked_drivers:
 * libtpurt defines it in runtime/drivers.c (the emulated TPU alone);
 * libtpurt-cpu in driver/rtdev.c, which adds the cpu driver and a compiler
 * for module text loaded on a TPU device. Nothing here includes the
 * compiler: the compiler registers itself.
 *
 * Many cores: a device has ncores cores (replicas, later processes); an
 * execution passes one rt_replica per core, each with its own parameter
 * and result memory and statistics. A cpu device of "cpu,replicas=N" has N
 * cores (driver/rtdev.c runs each replica on a host thread). */
#ifndef TPUCC_RUNTIME_DEVICE_H
#define TPUCC_RUNTIME_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "tpub.h"
#include "tpurt.h"

typedef struct rt_device rt_device;   /* a driver's device state */
typedef struct rt_program rt_program; /* a driver's loaded program */

/* What a device is, filled by the driver's create. */
typedef struct rt_device_info {
  const char *platform; /* "tpu", "cpu": tpurt_device_platform */
  char target[512];     /* the canonical spec: tpurt_device_target */
  int ncores;           /* cores an execution runs on (rt_replica count) */
} rt_device_info;

/* A loaded program's signature and figures, owned by the program. */
typedef struct rt_program_info {
  uint32_t nparams, nresults;
  const tpub_tensor *params, *results; /* one per array leaf, in order */
  double compile_seconds;              /* < 0: not compiled by this library */
  uint64_t flops;                      /* per execution, when has_flops */
  int has_flops;
} rt_program_info;

/* One core's share of an execution: dense row-major bytes of each
 * parameter and result, sizes as in the signature (results overlap
 * nothing). stats: NULL, or zeroed counters the run fills. */
typedef struct rt_replica {
  void *const *params;
  void *const *results;
  tpurt_stats_t *stats;
} rt_replica;

/* The device operations. Each returns TPURT_OK or a status with one line
 * in msg (msglen bytes). None is NULL. */
typedef struct rt_device_ops {
  /* Loads a program from bytes named `name` (a path or "<memory>"). */
  tpurt_status_t (*load)(rt_device *d, const char *name, const void *bytes, size_t size,
                         rt_program **out, rt_program_info *out_info, char *msg, size_t msglen);
  void (*program_destroy)(rt_program *p); /* accepts NULL */
  /* Buffers: bytes of zeroed memory the host reads and writes, NULL when
   * out of memory; freed by buffer_free (accepts NULL). */
  void *(*buffer_alloc)(rt_device *d, size_t bytes);
  void (*buffer_free)(rt_device *d, void *p);
  /* Runs p once on each of the device's ncores cores (n == ncores). */
  tpurt_status_t (*execute)(rt_program *p, const rt_replica *r, int n, char *msg, size_t msglen);
  void (*destroy)(rt_device *d); /* accepts NULL */
} rt_device_ops;

/* What tpurt_device_options_t gives a driver besides the spec. */
typedef struct rt_device_config {
  const rt_allocator *alloc; /* every allocation of the runtime's own objects */
  uint64_t cycle_limit;      /* emulated devices: cycles per execution */
  int mxu_systolic;          /* emulated devices: PE-by-PE MXU model */
  const char *trace_path;    /* emulated devices: Chrome trace per execution, or NULL */
  const tpurt_custom_call_t *custom_calls; /* host functions (tpurt_device_options_t) */
  size_t ncustom_calls;
  const tpurt_peers_t *peers; /* emulated pods split across processes, or NULL */
  int trace_per_rank;         /* tpurt_device_options_t.trace_per_rank */
} rt_device_config;

typedef struct rt_driver {
  const char *name;         /* "tpu", "cpu" */
  const char *default_spec; /* what "auto" stands for when this driver comes first */
  /* Whether spec names one of this driver's devices (its first word). */
  int (*claims)(const char *spec);
  /* Checks spec (dev NULL: only checks); else creates *dev and fills info. */
  tpurt_status_t (*create)(const char *spec, const rt_device_config *c, rt_device **dev,
                           rt_device_info *info, char *err, size_t errlen);
  const rt_device_ops *ops;
} rt_driver;

/* A compiler for module text (HLO, .tg) loaded on a TPU device: compiles
 * it for the target spec into an image (malloc'd, freed by tpub_free) and
 * the seconds it took. Failures as rt_device_ops.load. */
typedef tpurt_status_t (*rt_text_compiler)(const char *name, const void *text, size_t len,
                                           const char *target, tpub_image **out,
                                           double *out_seconds, char *msg, size_t msglen);

/* The drivers a library links, in the order "auto" prefers them. */
typedef struct rt_drivers {
  const rt_driver *const *v; /* NULL-terminated */
  rt_text_compiler compile_text; /* NULL: TPU devices load .tpub only */
} rt_drivers;

const rt_drivers *rt_linked_drivers(void);

/* The emulated TPU driver (runtime/tpu_device.c), which loads module text
 * through rt_linked_drivers()->compile_text when there is one, and what
 * only its programs have: */
extern const rt_driver rt_tpu_driver;
/* The program's image (owned by the program). */
tpub_image *rt_tpu_program_image(rt_program *p);
/* Assembles TPU assembly into a program of d. */
tpurt_status_t rt_tpu_assemble(rt_device *d, const char *text, size_t len, const char *name,
                               rt_program **out, rt_program_info *info, char *msg, size_t msglen);
/* The links of d's interconnect (0 on a single-core target) and link
 * k's counters of the last execution (tpurt_device_link_stats; k < the
 * count). */
int rt_tpu_link_count(const rt_device *d);
void rt_tpu_link_stats(const rt_device *d, int link, tpurt_link_stats_t *out);
/* One execution profiled per op into ops (tpurt_program_execute_profile). */
tpurt_status_t rt_tpu_execute_profile(rt_program *p, const rt_replica *r,
                                      const tpurt_profile_options_t *o, tpurt_op_stats_t *ops,
                                      char *msg, size_t msglen);

#endif
