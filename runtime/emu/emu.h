/* emu.h: the emulator of one TensorCore, private to runtime/.
 *
 * One semantics for values and cycles: the dispatch loop (emu.c) walks the
 * instruction stream in program order the way the scalar unit fetches it,
 * computes each instruction's values at once, and computes when it starts
 * and finishes on its unit from the timing rules of docs/isa.md ("Timing").
 * Units: emu.c (front end, scalar unit, dispatch, timing), vector.c,
 * matrix.c (MXU unit; the arithmetic is mxu.c), dma.c, sync.c (semaphores).
 *
 * Programs run here have passed tpub_verify; everything else they can do
 * wrong (addresses computed at run time, semaphore misuse, running too
 * long) stops the run with an emu_fault. Not thread-safe: one machine per
 * thread at a time. */
#ifndef TPUCC_EMU_EMU_H
#define TPUCC_EMU_EMU_H

#include <stdint.h>

#include "alloc.h"
#include "isa.h"
#include "target.h"
#include "tpub.h"

/* The emulator's counters are libtpurt's (include/tpurt.h): one field per
 * row of TPURT_UNIT_COUNTERS, and per COUNTED row of TPURT_RUN_COUNTERS,
 * under the same names. emu_stats_export copies them out. */
typedef struct emu_unit_stats {
#define EMU_UNIT_FIELD_(field, label) uint64_t field;
  TPURT_UNIT_COUNTERS(EMU_UNIT_FIELD_)
#undef EMU_UNIT_FIELD_
} emu_unit_stats;

#define EMU_RUN_FIELD_COUNTED(field) uint64_t field;
#define EMU_RUN_FIELD_DERIVED(field)
#define EMU_RUN_FIELD_(field, kind) EMU_RUN_FIELD_##kind(field)
/* A core's interconnect counters of its last run (docs/isa.md, "Counters"),
 * kept in the machine (emu_machine.ist) while it runs; emu_ici_run copies
 * them into the run's statistics (the ici_* counters of tpurt_stats_t). */
typedef struct emu_ici_stats {
  uint64_t puts;           /* dmaput transfers this core sent */
  uint64_t sent_bytes;     /* bytes it sent */
  uint64_t received_bytes; /* bytes other cores (or itself) put into it */
  uint64_t send_cycles;    /* cycles its DMA queues spent reading sources of dmaput */
  uint64_t wait_cycles;    /* cycles its front end waited on signals that came over ICI */
} emu_ici_stats;

typedef struct emu_stats {
  uint64_t cycles; /* from start until every unit drained */
  TPURT_RUN_COUNTERS(EMU_RUN_FIELD_)
  emu_unit_stats units[ISA_UNIT_COUNT];
} emu_stats;
#undef EMU_RUN_FIELD_
#undef EMU_RUN_FIELD_COUNTED
#undef EMU_RUN_FIELD_DERIVED

/* The public statistics of a run on target t: every counter of e, the
 * derived figures (seconds, mxu_peak_macs) and the unit names. */
void emu_stats_export(const emu_stats *e, const tgt_target *t, tpurt_stats_t *out);

typedef enum emu_fault_kind {
  EMU_OK = 0,
  EMU_FAULT_MEMORY,    /* address out of range or misaligned */
  EMU_FAULT_SEMAPHORE, /* wait that can never be satisfied, overflow */
  EMU_FAULT_CYCLES,    /* the cycle limit was reached */
  EMU_FAULT_OOM,       /* host memory ran out */
  EMU_FAULT_OPERAND,   /* a run-time operand is out of range */
  EMU_FAULT_RACE,      /* unsynchronised accesses of two units overlap */
  EMU_FAULT_CORE       /* a dmaput names a core that is not running */
} emu_fault_kind;

typedef struct emu_fault {
  emu_fault_kind kind;
  uint32_t pc;
  uint64_t word;
  uint64_t cycle;
  char reason[256];
} emu_fault;

typedef struct emu_machine emu_machine;

/* Creates a core for target t with memories from a (VMEM, SMEM, MXU
 * accumulators and weights). NULL when memory runs out. */
emu_machine *emu_create(const tgt_target *t, const rt_allocator *a);
void emu_destroy(emu_machine *m); /* accepts NULL */

/* Runs a verified program. hbm is the program's HBM (img->hbm_bytes,
 * already holding constants and parameters). Registers, VMEM, SMEM (from
 * the image), accumulators and timing start from zero. Fills *st. Returns
 * 0, or -1 with *f describing the fault (st then holds the counts up to the
 * fault). cycle_limit 0 means no limit. */
int emu_run(emu_machine *m, const tpub_image *img, uint8_t *hbm, uint64_t cycle_limit,
            emu_stats *st, emu_fault *f);

/* The same run in steps, for many cores (ici.c): emu_begin prepares a run
 * as emu_run does (0, or -1 with *f set); emu_advance runs instructions
 * while the front end's cycle is below `bound` and returns EMU_STEP_HALT
 * (the program ended: st->cycles set), EMU_STEP_YIELD (the front end
 * reached bound), EMU_STEP_BLOCKED (an `iwait` cannot be decided yet: too
 * few signals, or they arrive at or after bound, and signals from other
 * cores may still come; see emu_ici_*), or
 * EMU_STEP_FAULT; emu_end releases the run's state and must follow every
 * successful emu_begin. */
enum { EMU_STEP_HALT, EMU_STEP_YIELD, EMU_STEP_BLOCKED, EMU_STEP_FAULT };
int emu_begin(emu_machine *m, const tpub_image *img, uint8_t *hbm, uint64_t cycle_limit,
              emu_stats *st, emu_fault *f);
int emu_advance(emu_machine *m, uint64_t bound);
void emu_end(emu_machine *m);

/* A trace hook called once per executed instruction with the unit that ran
 * it, its start cycle, occupancy and latency (scalar instructions: the
 * front-end cycle, 1, 1). NULL disables tracing. */
typedef void (*emu_trace_fn)(void *user, int unit, uint32_t pc, uint64_t word, uint64_t start,
                             uint64_t occ, uint64_t lat);
void emu_set_trace(emu_machine *m, emu_trace_fn fn, void *user);

/* Selects the MXU arithmetic: 0 the fast kernel (default), 1 the PE-by-PE
 * systolic model, which must give the same bits (a proof mode, slow). */
void emu_set_systolic(emu_machine *m, int on);

/* ---- shared between the unit files (not for other folders) -------------- */

typedef uint64_t emu_time;

typedef struct emu_token {
  emu_time t;
  uint8_t unit; /* who signalled */
} emu_token;

typedef struct emu_sem {
  emu_token *heap; /* min-heap on t, n entries */
  uint32_t n, cap;
} emu_sem;

enum { EMU_SEM_MAX = 65535 }; /* pending signals per semaphore */
#define EMU_DMA_MAX_RUNS (1u << 24) /* contiguous runs per DMA transfer */

typedef struct emu_mxu {
  float *acc;       /* acc_rows x mxu_cols */
  float *packed[2]; /* weights packed for emu_mxu_matmul_packed */
  int active;       /* index of the active buffer; shadow is !active */
  void *scratch;
  uint16_t *tile[2];    /* raw bf16 weights of each buffer (systolic mode) */
  int tile_tr[2];       /* tile[i] is stored transposed (N rows of K) */
  uint16_t *lhs;        /* acc_rows x K bf16 gather buffer */
  emu_time wl_free;     /* weight path free (shadow loaded) */
  uint32_t acc_touched; /* accumulator rows [0, acc_touched) were written */
  emu_time *acc_ready;  /* per 8-row block: results ready */
} emu_mxu;

/* Memory-ordering state of one granule of VMEM or HBM (hazard.c). Data
 * arriving over ICI is written by the pseudo-unit EMU_UNIT_ICI. */
enum { EMU_GRANULE = 512, EMU_NO_UNIT = 0xFF, EMU_UNIT_ICI = ISA_UNIT_COUNT };
typedef struct emu_granule {
  emu_time w_end;                 /* the last write completes */
  emu_time r_end[ISA_UNIT_COUNT]; /* each unit's reads complete */
  uint8_t w_unit;                 /* who wrote last, EMU_NO_UNIT: the host */
} emu_granule;

/* A dmaput issued and read at its source, waiting for the interconnect
 * (ici.c): the sender fills it, the run routes it between two rounds. */
typedef struct emu_put {
  emu_time issue;  /* front-end cycle it issued at: links are granted in (issue, core, seq) order */
  emu_time start;  /* the sending queue starts reading the source */
  emu_time occ;    /* link cycles: tgt_ici_cycles(bytes) */
  uint64_t seq;    /* per sender, in issue order */
  int src, dst;    /* cores */
  int sem;         /* the destination's semaphore */
  int dst_vmem;    /* destination memory: VMEM, else HBM */
  uint32_t dbase;  /* destination address */
  uint32_t run, n[3];
  int64_t st[3];   /* destination strides */
  uint64_t bytes;
  uint8_t *data;   /* the source bytes in run order (values at issue) */
} emu_put;

typedef struct emu_ici emu_ici;

typedef struct emu_unit {
  emu_time free_at; /* issue slot free */
  emu_time done_at; /* all issued work complete */
  emu_time *ring;   /* start times of the last queue_depth instructions */
  uint32_t ring_head, ring_n;
} emu_unit;

struct emu_machine {
  tgt_target t;
  rt_allocator alloc;
  uint32_t s[TGT_SREGS];
  uint32_t v[TGT_VREGS][TGT_SUBLANES][TGT_LANES];
  uint8_t mk[TGT_MREGS][TGT_SUBLANES][TGT_LANES];
  uint32_t tbuf[TGT_LANES][TGT_LANES];
  uint8_t *vmem, *smem;
  uint8_t *hbm;
  uint64_t hbm_bytes;
  emu_mxu mxu[TGT_MAX_MXUS];
  emu_sem sem[TGT_SEMS];
  emu_unit unit[ISA_UNIT_COUNT];
  emu_time v_ready[TGT_VREGS], v_read[TGT_VREGS];
  emu_time m_ready[TGT_MREGS], m_read[TGT_MREGS];
  emu_time tbuf_ready;
  emu_time (*hbm_iv)[2]; /* HBM busy intervals [start, end), sorted */
  uint32_t hbm_n, hbm_cap;
  emu_stats *st;
  emu_fault *f;
  uint32_t pc;
  uint64_t word;
  emu_granule *hz[2];   /* VMEM, HBM ordering state; NULL: not checked */
  uint64_t touched[2];  /* end of the highest VMEM / HBM byte accessed:
                           what the next run must clear */
  emu_time now;         /* front-end time of the instruction being executed */
  uint64_t cycle_limit; /* 0: none */
  int systolic;         /* MXU pushes run PE by PE (mxu_systolic.c) */
  emu_trace_fn trace;
  void *trace_user;
  int64_t systolic_cycles; /* array cycles the PE-by-PE model stepped */
  /* Many cores (ici.c). */
  int core, ncores;           /* this core's id, cores running (0, 1 alone) */
  emu_ici *ici;               /* the interconnect, NULL when running alone */
  emu_ici_stats ist;          /* interconnect counters of the run */
  emu_sem isem[TGT_SEMS];     /* signals that came over ICI: `iwait` only */
  emu_put *out;               /* dmaputs issued this round */
  uint32_t nout, capout;
  uint64_t put_seq;
  /* The front end between steps (emu_begin / emu_advance). */
  const tpub_image *img;
  emu_time fe_t;
  uint32_t fe_pc;
  int fe_blocked_sem;         /* the semaphore a blocked `iwait` waits on */
  uint32_t fe_blocked_n;      /* and how many signals it needs */
};

/* Records a fault for the current instruction; returns -1. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int emu_fail(emu_machine *m, emu_fault_kind k, const char *fmt, ...);

/* Checks [addr, addr + len) against a memory of `size` bytes and an
 * alignment; faults naming `what` otherwise. */
int emu_check_range(emu_machine *m, const char *what, int64_t addr, uint64_t len, uint64_t size,
                    int align);

/* Memory ordering (hazard.c): records an access of mem (0 VMEM, 1 HBM)
 * [addr, addr + len) by unit during cycles [t0, t1); faults with
 * EMU_FAULT_RACE when it overlaps another unit's access in time. */
int emu_hazard(emu_machine *m, int mem, int write, uint64_t addr, uint64_t len, int unit,
               emu_time t0, emu_time t1);
size_t emu_hazard_bytes(uint64_t mem_bytes);
void emu_hazard_reset(emu_granule *gs, uint64_t mem_bytes);

/* Vector unit (vector.c): values of one vector instruction. */
int emu_vector_exec(emu_machine *m, const isa_inst *in);
/* Register operands a vector instruction reads and writes (for timing):
 * fills masks of vregs/mregs read and written. */
void emu_vector_regs(const isa_inst *in, uint32_t *vread, uint32_t *vwrite, uint32_t *mread,
                     uint32_t *mwrite);

/* MXU unit (matrix.c): values and timing of one MXU instruction issued at
 * `earliest` (queue and issue constraints applied); returns the start time
 * through *start and the occupancy/latency through *occ, *lat. */
int emu_matrix_exec(emu_machine *m, const isa_inst *in, emu_time earliest, emu_time *start,
                    emu_time *occ, emu_time *lat);

/* DMA (dma.c): values and timing of one DMA instruction. */
int emu_dma_exec(emu_machine *m, const isa_inst *in, emu_time earliest, emu_time *start,
                 emu_time *occ, emu_time *lat);

/* A DMA descriptor (dma.c): run bytes, counts n1..n3, strides a of the
 * first address (HBM for dmald/dmast, the source for dmaput) and b of the
 * second (VMEM; the destination). emu_dma_desc reads nwords (10, or 11
 * with word 10 into *extra) from SMEM at da and checks sizes against the
 * destination's; emu_dma_box_check checks the whole box from base. Both
 * fault (-1) naming mn / what. */
typedef struct emu_desc {
  uint32_t run, n[3];
  int64_t a[3], b[3];
  uint64_t bytes;
} emu_desc;
int emu_dma_desc(emu_machine *m, const char *mn, uint32_t da, int nwords, uint64_t dst_size,
                 emu_desc *d, uint32_t *extra);
int emu_dma_box_check(emu_machine *m, const char *what, uint32_t base, const int64_t st[3],
                      const emu_desc *d, uint64_t size);

/* ICI transfers (ici.c): values and sender-side timing of one dmaput. */
int emu_put_exec(emu_machine *m, const isa_inst *in, emu_time earliest, emu_time *start,
                 emu_time *occ, emu_time *lat);
/* HBM slot and reservation shared by the DMA queues (dma.c). */
emu_time emu_hbm_slot(emu_machine *m, emu_time earliest, emu_time data);
void emu_hbm_reserve(emu_machine *m, emu_time s, emu_time e);
/* Inserts [s, e) into n intervals sorted by start (room for one more). */
void emu_iv_insert(emu_time (*iv)[2], uint32_t *n, emu_time s, emu_time e);

/* Semaphores (sync.c). */
int emu_sem_signal(emu_machine *m, int sem, uint32_t count, emu_time t, int unit);
/* Consumes count tokens; *ready = when the last was signalled, *from_dma
 * when that token came from a DMA queue. */
int emu_sem_wait(emu_machine *m, int sem, uint32_t count, emu_time *ready, int *from_dma);
void emu_sem_reset(emu_machine *m);
/* ICI signals (sync.c): adds one token of the destination semaphore. */
int emu_isem_signal(emu_machine *m, int sem, emu_time t);
/* iwait: when at least count ICI signals are pending on sem and the
 * count-th earliest arrives before bound, consumes the count earliest and
 * returns 1 with *ready its stamp; returns 0 and changes nothing
 * otherwise. *nth (may be NULL) gets the count-th earliest stamp, or
 * UINT64_MAX when too few are pending. -1 when memory runs out. */
int emu_isem_wait(emu_machine *m, int sem, uint32_t count, emu_time bound, emu_time *ready,
                  emu_time *nth);

#endif
