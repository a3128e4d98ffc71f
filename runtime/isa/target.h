/* target.h: the description of an emulated TPU core, shared by the runtime
 * (emulator, loader, verifier) and the compiler backend (tile sizes).
 *
 * Every figure the backend or the emulator needs lives in tgt_target; no
 * other file hard-codes a size, a latency or a bandwidth. A target is
 * written as a preset name followed by comma-separated overrides:
 *
 *     v3
 *     v3,mxu=64x64,vmem=8MiB
 *     v2-8,hbm_bw=600GB/s,clock=1GHz,mxus=2,dma_queues=4
 *
 * Presets (per core; figures from shared/docs/hardware.md):
 *     v2    1 MXU 128x128, 700 MHz, 16 MiB VMEM, 16 KiB SMEM, 8 GiB HBM at
 *           350 GB/s                       (one core)
 *     v3    2 MXUs 128x128, 940 MHz, 16 MiB VMEM, 16 KiB SMEM, 16 GiB HBM
 *           at 450 GB/s                    (one core)
 *     v2-8, v3-8   the same core, on a board of 4 chips x 2 cores: 8 cores
 *           run, one program copy each, chips on a 2x2 torus
 *     v2-32 .. v2-512, v3-32 .. v3-2048   pods: the number is cores (chips
 *           = cores / 2, a power of two) on a 2-D torus, 16x16 chips for
 *           the whole v2 pod and 32x32 for v3; smaller slices take the
 *           nearest 2-D shape (columns >= rows, columns / rows <= 2)
 *     Interconnect (ICI): 4 links per chip (the torus neighbours), per link
 *     and direction 62 GB/s on v2 and 82 GB/s on v3 (hardware.md); per hop
 *     one microsecond in cycles of the clock (700 on v2, 940 on v3), a
 *     derived assumption since the figure is not public. The two cores of a
 *     chip reach each other through one on-chip hop of the same bandwidth
 *     and latency.
 *
 * Overrides (sizes accept B, KiB, MiB, GiB, KB, MB, GB; bandwidth accepts
 * B/s, KB/s, MB/s, GB/s; clock accepts Hz, KHz, MHz, GHz; plain numbers are
 * bytes, bytes/s and Hz):
 *     mxu=RxC  mxus=N  vmem=SIZE  smem=SIZE  hbm=SIZE  hbm_bw=BW  clock=F
 *     dma_queues=N  queue_depth=N  dma_latency=CYCLES  acc_rows=N
 *     chips=N  cores=N (per chip)  ncores=N (cores an execution runs on)
 *     topology=AxB (chips: A columns x B rows)  ici_bw=BW  ici_latency=CYCLES
 * Changing chips or cores without ncores (topology) keeps a board or pod
 * running all its cores (recomputes the nearest 2-D shape).
 * Limits: mxus 1..4, dma_queues 1..8, MXU sides 4..256 (multiples of 4),
 * acc_rows 8..65536 (multiple of 8), vmem 64 KiB..1 GiB, smem 1 KiB..1 MiB
 * (multiples of 4), hbm 1 MiB..1 TiB, queue_depth 1..1024, dma_latency
 * 0..100000, clock 1 MHz..100 GHz, hbm_bw 1 MB/s..100 TB/s, chips and
 * cores 1..4096, ncores 1..chips x cores, topology columns x rows = chips,
 * ici_bw 1 MB/s..100 TB/s, ici_latency 1..10000000.
 *
 * Not thread-safe to mutate; a filled tgt_target is plain data. */
#ifndef TPUCC_TGT_TARGET_H
#define TPUCC_TGT_TARGET_H

#include <stddef.h>
#include <stdint.h>

/* Fixed architectural constants of the ISA (not overridable: the encoding
 * and the register file depend on them). */
enum {
  TGT_SUBLANES = 8, /* rows of a vector register */
  TGT_LANES = 128,  /* columns of a vector register */
  /* A vector register's tile as vld/vst move it: 32-bit lanes, or bf16
   * packed two to a word (the bf16 forms). */
  TGT_VREG_ELEMS = TGT_SUBLANES * TGT_LANES, /* elements of a vector register */
  TGT_VREG_BYTES = 4 * TGT_VREG_ELEMS,       /* a 32-bit tile in VMEM (4 KiB) */
  TGT_VREG_BYTES_BF16 = 2 * TGT_VREG_ELEMS,  /* a bf16 tile in VMEM (2 KiB) */
  TGT_VROW_BYTES = 4 * TGT_LANES,            /* one sublane of 32-bit lanes (512) */
  TGT_VROW_BYTES_BF16 = 2 * TGT_LANES,       /* one sublane of bf16 lanes (256) */
  TGT_SREGS = 32,   /* scalar registers s0..s31; s0 reads as 0 */
  TGT_VREGS = 32,   /* vector registers v0..v31, 8x128 x 32 bit */
  TGT_MREGS = 8,    /* mask registers m0..m7, 8x128 bits; m0 all ones */
  TGT_SEMS = 32,    /* semaphores 0..31 */
  TGT_MAX_MXUS = 4,
  TGT_MAX_DMA_QUEUES = 8,
  TGT_MAX_UNITS = 2 + TGT_MAX_MXUS + TGT_MAX_DMA_QUEUES,
};

typedef struct tgt_target {
  char preset[8];      /* "v2", "v3" */
  int chips;           /* chips on the board (1 for v2/v3) */
  int cores_per_chip;  /* TensorCores per chip (2) */
  int mxus;            /* MXUs per core */
  int mxu_rows;        /* K: rows of the weight tile (systolic depth) */
  int mxu_cols;        /* N: columns of the weight tile */
  int acc_rows;        /* rows of the f32 accumulator memory per MXU */
  uint64_t vmem_bytes; /* vector memory per core */
  uint64_t smem_bytes; /* scalar memory per core */
  uint64_t hbm_bytes;  /* HBM capacity per core */
  uint64_t hbm_bw;     /* HBM bandwidth per core, bytes per second */
  uint64_t clock_hz;   /* core clock */
  int dma_queues;      /* independent DMA queues per core */
  int queue_depth;     /* entries in each unit's instruction queue */
  int dma_latency;     /* cycles from DMA start to first byte */
  int ncores;          /* cores an execution runs on (1 for v2, v3) */
  int topo_x, topo_y;  /* the chips' 2-D torus: columns x rows */
  uint64_t ici_bw;     /* bytes per second per ICI link and direction */
  int ici_latency;     /* cycles per hop */
} tgt_target;

/* Fills *t with the preset's figures. Returns 0, or -1 for an unknown name. */
int tgt_preset(const char *name, tgt_target *t);

/* Parses "preset,key=value,..." into *t. Returns 0 on success; on failure
 * returns -1 and writes a one-line reason into err (errlen bytes, may be 0).
 * *t is unspecified after a failure. */
int tgt_parse(const char *spec, tgt_target *t, char *err, size_t errlen);

/* Checks that every figure is within the documented limits. Returns 0 or -1
 * with a reason in err. tgt_parse calls it. */
int tgt_validate(const tgt_target *t, char *err, size_t errlen);

/* Writes the canonical spec (the preset followed by every figure, so that
 * tgt_parse of the result gives back *t) into buf; returns the length it
 * needed (snprintf semantics). */
int tgt_format(const tgt_target *t, char *buf, size_t n);

/* Derived figures. */
int tgt_cores(const tgt_target *t); /* chips x cores_per_chip */
/* ICI links per chip: the four torus neighbours (x-1, x+1, y-1, y+1). */
enum { TGT_ICI_LINKS = 4 };
/* ICI link bytes per cycle in 1/1024 units (at least 1), and the cycles
 * `bytes` occupy one link: ceil(bytes*1024/bpc), at least 1. */
uint64_t tgt_ici_bytes_per_cycle_q10(const tgt_target *t);
uint64_t tgt_ici_cycles(const tgt_target *t, uint64_t bytes);
/* HBM bytes per cycle in 1/1024 units (fixed point, at least 1). */
uint64_t tgt_hbm_bytes_per_cycle_q10(const tgt_target *t);
/* Cycles that moving `bytes` through HBM occupies it: ceil(bytes*1024/bpc). */
uint64_t tgt_hbm_cycles(const tgt_target *t, uint64_t bytes);
/* Peak MACs per cycle of the core (mxus x rows x cols). */
uint64_t tgt_peak_macs_per_cycle(const tgt_target *t);

#endif
