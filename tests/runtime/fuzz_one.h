/* fuzz_one.h: what the loader fuzz target and the mutation test do with
 * one candidate .tpub: load it; if it verifies, run it with zero-filled
 * parameters under a small cycle limit. Any outcome but a crash, a hang or
 * a sanitizer report is fine; the counters say which outcome it was. */
#ifndef TPUCC_FUZZ_ONE_H
#define TPUCC_FUZZ_ONE_H

#include <stdint.h>
#include <stdlib.h>

#include "tpurt.h"

/* A device small enough that every run is cheap. */
#define FUZZ_TARGET "v3,vmem=256KiB,hbm=4MiB,acc_rows=256"
#define FUZZ_CYCLES 20000

typedef struct fuzz_counts {
  long rejected, faulted, completed;
} fuzz_counts;

static inline void fuzz_one(tpurt_device_t *dev, const uint8_t *data, size_t size, fuzz_counts *c) {
  tpurt_program_t *p = NULL;
  if (tpurt_program_load(dev, data, size, &p) != TPURT_OK) {
    /* Rejections always come with a message. */
    if (!tpurt_device_message(dev)[0]) abort();
    c->rejected++;
    return;
  }
  size_t np = tpurt_program_param_count(p), nr = tpurt_program_result_count(p);
  tpurt_buffer_t **in = calloc(np + 1, sizeof *in);
  tpurt_buffer_t **out = calloc(nr + 1, sizeof *out);
  int ok = in && out;
  for (size_t i = 0; i < np && ok; i++) {
    tpurt_tensor_info_t t;
    tpurt_program_param_info(p, i, &t);
    ok = tpurt_buffer_create(dev, t.dtype, t.rank, t.dims, NULL, 0, &in[i]) == TPURT_OK;
  }
  if (ok) {
    tpurt_status_t st = tpurt_program_execute(p, in, np, out, nr, NULL);
    if (st == TPURT_OK)
      c->completed++;
    else
      c->faulted++;
    for (size_t i = 0; i < nr; i++)
      tpurt_buffer_destroy(out[i]);
  }
  for (size_t i = 0; i < np && in; i++)
    tpurt_buffer_destroy(in[i]);
  free(in);
  free(out);
  tpurt_program_destroy(p);
}

static inline tpurt_device_t *fuzz_device(void) {
  tpurt_device_options_t o;
  tpurt_device_options_init(&o);
  o.target = FUZZ_TARGET;
  o.cycle_limit = FUZZ_CYCLES;
  tpurt_device_t *d = NULL;
  if (tpurt_device_create(&o, &d) != TPURT_OK) abort();
  return d;
}

#endif
