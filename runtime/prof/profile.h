/* profile.h: per-op profiling inside libtpurt (private to runtime/).
 *
 * A profiler hooks the emulator's per-instruction trace callback
 * (emu_set_trace), which runs once for every executed instruction after
 * the emulator has counted its stalls, MACs and HBM bytes. It attributes
 * the change of those counters since the previous instruction, and the
 * instruction's occupancy and completion, to the op the instruction serves
 * (the program's OPS section; one op "(program)" without it). So per-op
 * sums equal the run's totals. Optionally it writes a Chrome trace-event
 * file whose spans are named after the ops. Prefix prof_. */
#ifndef TPUCC_PROF_PROFILE_H
#define TPUCC_PROF_PROFILE_H

#include <stdio.h>

#include "emu.h"
#include "tpurt.h"

typedef struct prof prof;

/* Instruction spans written at most (the op spans always cover the run). */
#define PROF_MAX_INST_SPANS 1000000u

/* A profiler for one run of img on target t; ops receives
 * max(1, img->nops) entries (zeroed here). trace: NULL or an open file the
 * caller closes (written from the first event to prof_finish); with
 * trace_insts every instruction becomes a nested span. NULL on OOM. */
prof *prof_create(const rt_allocator *a, const tpub_image *img, const tgt_target *t,
                  tpurt_op_stats_t *ops, FILE *trace, int trace_insts);
/* Installs the profiler as m's trace hook for the next emu_run. */
void prof_attach(prof *p, emu_machine *m);
/* After the run: gives the rest of the run (st->cycles minus the furthest
 * completion seen) to the op of the last instruction, closes the trace's
 * spans and writes its counters. Returns 0, or -1 when memory ran out
 * while recording counters (the trace then lacks them). */
int prof_finish(prof *p, const emu_stats *st);
void prof_destroy(prof *p); /* accepts NULL */

#endif
