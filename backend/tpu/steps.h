/* steps.h: private to backend/tpu: the named steps of tpu_compile
 * (compile.c holds their table and bodies) and the step driver and text
 * dumps (steps.c).
 *
 * A step is one row {name, run, dump}: run advances the build, dump
 * writes what the step decided as readable text. The driver runs the rows
 * in order, stops at the first failing one, times each (--time-passes) and
 * writes the dumps asked for (--dump-dir, --dump-after), so adding a step
 * is adding a row. */
#ifndef TPUCC_BACKEND_TPU_STEPS_H
#define TPUCC_BACKEND_TPU_STEPS_H

#include "backend/tpu/lower.h"

/* One compilation: inputs, the builder, and what each step leaves for the
 * next. Lives on tpu_compile's stack; arena-allocated parts die with a. */
typedef struct tpu_build {
  const ir_module *m;
  const tpu_options *o;
  const char *spec;           /* target spec text */
  tgt_target tg;
  diag *d;
  arena *a;
  tb b;
  tv_pool pool;
  lctx x;
  strbuf explain;             /* the kernels' "tiling: OP: ..." lines, when
                                 --explain or a tpu-lower dump asks */
  tb_buf_vec bufs;            /* HBM buffers taken, when a dump asks */
  tpub_tensor *pt, *rt;       /* the signature (tpu-lower, tpu-buffers) */
  int npt, nrt;
  tval *root;                 /* the entry's value (tpu-lower) */
  tpub_image *img;            /* the program (tpu-emit) */
} tpu_build;

typedef struct tpu_step {
  const char *name; /* --dump-after and --time-passes name it */
  base_status (*run)(tpu_build *s); /* errors reported to s->d */
  void (*dump)(strbuf *out, const tpu_build *s);
  const char *doc;  /* one line for --list-passes */
} tpu_step;

/* Runs steps[0..n) on s as tpu_compile's options ask (o->steps): stops
 * after the first step that does not return ST_OK and returns its status;
 * ST_IO_ERROR / ST_INVALID_ARGUMENT (reported) when a dump cannot be
 * written or --dump-after does not compile. */
base_status tpu_steps_run(const tpu_step *steps, int n, tpu_build *s);
/* types.c: one located error in d per instruction whose value holds an
 * element type the TPU does not run (f64: "f64 is not supported on the
 * TPU: ..."); returns their number. */
int tpu_check_types(const ir_module *m, diag *d);

/* The dumps: tpu-lower the ops in program order with their code, FLOPs
 * and each kernel's tile plan; tpu-buffers the HBM assignment table;
 * tpu-emit the image's summary and instruction mix. */
void tpu_dump_lower(strbuf *out, const tpu_build *s);
void tpu_dump_buffers(strbuf *out, const tpu_build *s);
void tpu_dump_emit(strbuf *out, const tpu_build *s);

#endif
