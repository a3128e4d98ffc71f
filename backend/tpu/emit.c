/* emit.c: the program builder: instruction words, the SMEM image of DMA
 * descriptors, cached scalar registers, HBM allocation, and the insertion
 * of semaphores between units.
 *
 * Synchronisation contract (docs/isa.md section 1): every VMEM access of
 * one unit that conflicts with an earlier access of another unit (either
 * writes) must be ordered by a semaphore. The builder remembers, per unit,
 * the recent VMEM ranges it read and wrote (granule-aligned) and, before
 * emitting an access, makes the unit wait for every other unit whose
 * unsynchronised work conflicts:
 *   - producer vector/MXU:  signal U, sem0, 1 ; wait V, sem0, 1 (a fence);
 *   - producer DMA queue 0: every DMA signals one of sem1..sem31 (picked
 *     from its VMEM address) when it completes; the consumer waits for the
 *     needed DMA's token (completion is in issue order on one queue, so
 *     that covers every earlier DMA), or, when another unit already took
 *     it, for a later token of that semaphore, or fences that unit.
 * Waiting is transitive (a fence of U covers what U had waited for). Only
 * DMA queue 0 touches HBM, so HBM needs no semaphores. */
#include "backend/tpu/tb.h"

#include <stdarg.h>
#include <stdlib.h>

void tb_error(tb *b, base_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (!b->failed || diag_error_count(b->d) < 10)
    diag_error(b->d, b->loc, "tpu: %s%s%s", b->opname ? b->opname : "",
               b->opname ? ": " : "", msg);
  if (!b->failed) b->status = st;
  b->failed = true;
}

void tb_init(tb *b, arena *a, const tgt_target *t, diag *d) {
  memset(b, 0, sizeof *b);
  b->a = a;
  b->t = *t;
  b->d = d;
  b->smem_cap = (uint32_t)(t->smem_bytes / 4);
  b->smem = arena_array(a, b->smem_cap, 4);
  /* Descriptors are 10 words; the last slot is rewritten at run time when
   * the interned ones fill SMEM. */
  b->dyn_desc = (b->smem_cap - 10) * 4;
  uint32_t slots = 16; /* at least twice the descriptors SMEM holds */
  while (slots < 2 * (b->dyn_desc / 40 + 1)) slots *= 2;
  b->desc_slot = arena_array(a, slots, sizeof *b->desc_slot);
  b->desc_mask = slots - 1;
  b->gaps = arena_array(a, ISA_UNIT_COUNT, sizeof *b->gaps);
  b->max_code = TPUB_MAX_CODE - 16;
  b->hbm_limit = t->hbm_bytes < ((uint64_t)1 << 32) ? t->hbm_bytes : ((uint64_t)1 << 32);
  b->max_passes = 1;
}

void tb_fini(tb *b) {
  free(b->code.v);
  free(b->code_op.v);
  b->code.v = NULL;
  b->code_op.v = NULL;
  b->code.n = b->code.cap = b->code_op.n = b->code_op.cap = 0;
}

/* ---- raw code ----------------------------------------------------------- */

/* Appends one encoded word and its op. The code and its op map are heap
 * arrays grown geometrically with realloc (not arena VECs: a program of
 * millions of words would leave every outgrown copy in the arena, each
 * zeroed and copied); tb_fini frees them, or the image takes them. */
static void push_word(tb *b, uint64_t w) {
  if (b->code.n == b->code.cap) {
    int nc = b->code.cap ? b->code.cap * 2 : 4096;
    b->code.v = base_xrealloc(b->code.v, (size_t)nc * sizeof *b->code.v);
    b->code_op.v = base_xrealloc(b->code_op.v, (size_t)nc * sizeof *b->code_op.v);
    b->code.cap = b->code_op.cap = nc;
  }
  b->code.v[b->code.n++] = w;
  if (b->ops.n == 0) tb_set_op(b, "(program)", "", (src_loc){0});
  b->code_op.v[b->code_op.n++] = b->cur_op;
}

/* Appends w unless the build failed or the code is full (an error). */
static void put_word(tb *b, uint64_t w) {
  if (b->failed) return;
  if ((uint64_t)b->code.n >= b->max_code) {
    tb_error(b, ST_RESOURCE_EXHAUSTED, "the program needs more than %llu instructions",
             (unsigned long long)b->max_code);
    return;
  }
  push_word(b, w);
}

static void put(tb *b, isa_op op, int a, int b_, int c, int d, int x, int32_t imm) {
  isa_inst in = {(uint8_t)op, (uint8_t)a, (uint8_t)b_, (uint8_t)c, (uint8_t)d, (uint8_t)x, imm};
  put_word(b, isa_encode(&in));
}

void tb_words(tb *b, const uint64_t *w, int n) {
  for (int i = 0; i < n && !b->failed; i++) put_word(b, w[i]);
}

void tb_set_op(tb *b, const char *name, const char *kind, src_loc loc) {
  tpub_op o = {(char *)name, (char *)kind, (char *)(loc.file ? loc.file : ""),
               (uint32_t)(loc.line > 0 ? loc.line : 0), (uint32_t)(loc.col > 0 ? loc.col : 0), 0};
  if (b->ops.n > 0) {
    tpub_op *cur = &b->ops.v[b->cur_op];
    cur->flops += b->flops - b->op_flops0;
    b->op_flops0 = b->flops;
    if (cur->flops == 0 && (uint64_t)b->code.n == b->op_code0) { /* emitted nothing: reuse */
      *cur = o;
      return;
    }
  }
  b->op_flops0 = b->flops;
  b->op_code0 = (uint64_t)b->code.n;
  VEC_PUSH(b->a, b->ops, o);
  b->cur_op = (uint32_t)(b->ops.n - 1);
}

void tb_explain(tb *b, const char *fmt, ...) {
  if (!b->explain) return;
  const char *op = b->ops.n > 0 ? b->ops.v[b->cur_op].name : b->opname;
  sb_printf(b->explain, "tiling: %s: ", op && op[0] ? op : "-");
  va_list ap;
  va_start(ap, fmt);
  sb_vprintf(b->explain, fmt, ap);
  va_end(ap);
  sb_putc(b->explain, '\n');
}

void tb_raw(tb *b, isa_op op, int a, int b_, int c, int d, int x, int32_t imm) {
  put(b, op, a, b_, c, d, x, imm);
}

/* The registers TB_SREG_FIRST..LAST in a list from the least to the most
 * recently used; the first use puts them in register order, the order in
 * which never used registers are taken. */
static void sreg_list_init(tb *b) {
  for (int r = TB_SREG_FIRST; r <= TB_SREG_LAST; r++) {
    b->sreg_newer[r] = (uint8_t)(r < TB_SREG_LAST ? r + 1 : 0);
    b->sreg_older[r] = (uint8_t)(r > TB_SREG_FIRST ? r - 1 : 0);
  }
  b->sreg_lru = TB_SREG_FIRST;
  b->sreg_mru = TB_SREG_LAST;
}

/* Moves r to the most recently used end of the list. */
static void sreg_touch(tb *b, int r) {
  if (b->sreg_mru == r) return;
  int o = b->sreg_older[r], n = b->sreg_newer[r]; /* n != 0: r is not the newest */
  if (o) b->sreg_newer[o] = (uint8_t)n;
  else b->sreg_lru = (uint8_t)n;
  b->sreg_older[n] = (uint8_t)o;
  b->sreg_older[r] = b->sreg_mru;
  b->sreg_newer[r] = 0;
  b->sreg_newer[b->sreg_mru] = (uint8_t)r;
  b->sreg_mru = (uint8_t)r;
}

/* Which register holds a value: an open-addressing table of 64 slots
 * (register numbers, 0 empty) over the at most 31 nonzero values the
 * registers hold, probed linearly from the value's hash. */
enum { SREG_SLOTS = 64 };
static unsigned sreg_hash(uint32_t v) { return (v * 2654435761u) >> 26; }

static int sreg_find(const tb *b, uint32_t v) {
  for (unsigned i = sreg_hash(v); b->sreg_slot[i]; i = (i + 1) % SREG_SLOTS)
    if (b->sreg_val[b->sreg_slot[i]] == v) return b->sreg_slot[i];
  return 0;
}

/* Takes register r (holding a nonzero value) out of the table, moving back
 * the entries after it that would no longer be reached. */
static void sreg_unlist(tb *b, int r) {
  unsigned i = sreg_hash(b->sreg_val[r]);
  while (b->sreg_slot[i] != r) i = (i + 1) % SREG_SLOTS;
  for (unsigned j = (i + 1) % SREG_SLOTS; b->sreg_slot[j]; j = (j + 1) % SREG_SLOTS) {
    unsigned h = sreg_hash(b->sreg_val[b->sreg_slot[j]]);
    /* j's entry may move to the hole at i unless its home h lies in (i, j] */
    if ((i < j) ? (h <= i || h > j) : (h <= i && h > j)) {
      b->sreg_slot[i] = b->sreg_slot[j];
      i = j;
    }
  }
  b->sreg_slot[i] = 0;
}

/* A register that holds v already, else the least recently used one is
 * loaded. A register not loaded yet holds value 0, which is never looked
 * up here (r0 is zero), and no two registers hold the same value (a value
 * is loaded only when none holds it). */
int tb_sreg(tb *b, uint32_t v) {
  if (v == 0) return 0;
  if (!b->sreg_lru) sreg_list_init(b);
  if (b->sreg_val[b->sreg_mru] == v) return b->sreg_mru; /* the same value again */
  int r = sreg_find(b, v);
  if (r) {
    sreg_touch(b, r);
    return r;
  }
  r = b->sreg_lru;
  while (b->sreg_pinned >> r & 1) r = b->sreg_newer[r];
  BASE_ASSERT(r);
  put(b, OP_SLI, r, 0, 0, 0, 0, (int32_t)v);
  if (b->sreg_val[r]) sreg_unlist(b, r);
  b->sreg_ok[r] = true;
  b->sreg_val[r] = v;
  unsigned i = sreg_hash(v);
  while (b->sreg_slot[i]) i = (i + 1) % SREG_SLOTS;
  b->sreg_slot[i] = (uint8_t)r;
  sreg_touch(b, r);
  return r;
}

int tb_sreg_take(tb *b) {
  if (!b->sreg_lru) sreg_list_init(b);
  int r = b->sreg_lru;
  while (r && (b->sreg_pinned >> r & 1)) r = b->sreg_newer[r];
  BASE_ASSERT(r && __builtin_popcount(b->sreg_pinned) < 8);
  if (b->sreg_val[r]) sreg_unlist(b, r);
  b->sreg_val[r] = 0;
  b->sreg_pinned |= 1u << r;
  sreg_touch(b, r);
  return r;
}

void tb_sreg_give(tb *b, int r) { b->sreg_pinned &= ~(1u << r); }

/* ---- synchronisation ----------------------------------------------------- */

static void absorb(tb *b, int v, int u) {
  /* v now waited for everything u did and everything u had waited for. */
  b->u[v].synced[u] = b->u[u].seq;
  for (int w = 0; w < ISA_UNIT_COUNT; w++)
    if (w != v && b->u[u].synced[w] > b->u[v].synced[w]) b->u[v].synced[w] = b->u[u].synced[w];
}

static void fence(tb *b, int u, int v) {
  put(b, OP_SIGNAL, TB_SEM_FENCE, 0, 0, 0, u, 1);
  put(b, OP_WAIT, TB_SEM_FENCE, 0, 0, 0, v, 1);
  absorb(b, v, u);
}

/* Makes unit v wait until unit u's work up to sequence `need` completed. */
static void sync_to(tb *b, int u, int v, uint64_t need) {
  if (b->u[v].synced[u] >= need) return;
  if (u != TB_DMA_UNIT) {
    fence(b, u, v);
    return;
  }
  /* DMA n signalled semaphore dsem[n] as its ord[n]-th token there.
   * Completion is in issue order on the one queue, so a wait for DMA n's
   * token also covers every earlier DMA. */
  int s = b->dma_sem.v[need - 1];
  uint32_t ord = b->dma_ord.v[need - 1];
  if (ord > b->sem_consumed[s]) {
    put(b, OP_WAIT, s, 0, 0, 0, v, (int32_t)(ord - b->sem_consumed[s]));
    b->sem_consumed[s] = ord;
    if (need > b->u[v].synced[u]) b->u[v].synced[u] = need;
    return;
  }
  /* Its token was taken: the earliest later DMA whose token is still
   * free, on any semaphore (taking the tokens before it there too). */
  uint64_t best = 0;
  for (uint64_t m = need; m < (uint64_t)b->dma_sem.n; m++) {
    int sm = b->dma_sem.v[m];
    if (b->dma_ord.v[m] > b->sem_consumed[sm]) {
      best = m + 1;
      break;
    }
  }
  if (best) {
    int sm = b->dma_sem.v[best - 1];
    uint32_t o = b->dma_ord.v[best - 1];
    put(b, OP_WAIT, sm, 0, 0, 0, v, (int32_t)(o - b->sem_consumed[sm]));
    b->sem_consumed[sm] = o;
    if (best > b->u[v].synced[u]) b->u[v].synced[u] = best;
    return;
  }
  /* Someone else took the tokens: fence a unit that covered `need`. */
  for (int w = 0; w < ISA_UNIT_COUNT; w++)
    if (w != v && w != u && b->u[w].synced[u] >= need) {
      fence(b, w, v);
      if (b->u[v].synced[u] >= need) return;
    }
  /* Unreachable in practice; stay correct by waiting for every unit. */
  for (int w = 1; w < ISA_UNIT_COUNT; w++)
    if (w != v && w != u && b->u[w].seq) fence(b, w, v);
}

/* The seq of unit u's newest access that unit v has not waited for and
 * that conflicts with v's access to [lo, hi), or 0. The ring is scanned
 * newest first: seqs fall along it (a merge renews only the newest entry)
 * and lie above dropped, so the first conflict is the newest. A scan that
 * finds none also records the gap around [lo, hi) free of u's accesses
 * that could conflict (writes, or any when v writes); while u records
 * nothing new (same seq) the accesses v has not waited for can only
 * become fewer, so a later range inside a recorded gap needs no scan. */
static uint64_t conflict_seq(tb *b, int v, int u, uint64_t lo, uint64_t hi, bool write) {
  const tb_unit *U = &b->u[u];
  tb_gap *g = b->gaps[v].gap[u][write];
  for (int k = 0; k < TB_GAPS; k++)
    if (g[k].useq == U->seq && g[k].lo <= lo && hi <= g[k].hi) return 0;
  uint64_t synced = b->u[v].synced[u], glo = 0, ghi = UINT64_MAX;
  for (int k = 0; k < U->n; k++) {
    const tb_access *r = &U->ring[(unsigned)(U->head - 1 - k) % TB_RING];
    if (r->seq <= synced) break;
    if (!r->write && !write) continue;
    if (r->lo < hi && lo < r->hi) return r->seq;
    if (r->hi <= lo && r->hi > glo) glo = r->hi;
    if (r->lo >= hi && r->lo < ghi) ghi = r->lo;
  }
  tb_gap *slot = &g[b->gaps[v].next[u][write]++ % TB_GAPS];
  *slot = (tb_gap){U->seq, glo, ghi};
  return 0;
}

/* Orders an access of unit v to VMEM [lo, hi) after conflicting accesses
 * of other units, then records it. */
static void access(tb *b, int v, uint64_t lo, uint64_t hi, bool write) {
  BASE_ASSERT(v > 0 && v < ISA_UNIT_COUNT && b->gaps); /* not in a dry run's builder */
  if (b->failed) return;
  lo = lo / TB_GRANULE * TB_GRANULE;
  hi = tb_align(hi);
  /* units 1.. that recorded accesses, in increasing order */
  for (uint32_t m = b->units_used & ~(1u << v) & ~1u; m; m &= m - 1) {
    int u = __builtin_ctz(m);
    if (b->u[u].seq <= b->u[v].synced[u]) continue;
    tb_unit *U = &b->u[u];
    uint64_t need = conflict_seq(b, v, u, lo, hi, write);
    if (!need && U->dropped > b->u[v].synced[u]) need = U->dropped;
    if (need) sync_to(b, u, v, need);
  }
  tb_unit *V = &b->u[v];
  V->seq++;
  b->units_used |= 1u << v;
  /* Merge with the previous access when it touches it; never for DMAs,
   * whose completions are waited for one by one. */
  if (V->n > 0 && v != TB_DMA_UNIT) {
    tb_access *p = &V->ring[(V->head - 1 + TB_RING) % TB_RING];
    if (p->write == write && p->lo <= hi && lo <= p->hi) {
      if (lo < p->lo) p->lo = lo;
      if (hi > p->hi) p->hi = hi;
      p->seq = V->seq;
      return;
    }
  }
  if (V->n == TB_RING) {
    tb_access *old = &V->ring[V->head];
    if (old->seq > V->dropped) V->dropped = old->seq;
    V->n--;
  }
  V->ring[V->head] = (tb_access){lo, hi, V->seq, write};
  V->head = (V->head + 1) % TB_RING;
  V->n++;
}

void tb_touch(tb *b, int unit, uint64_t lo, uint64_t hi) { access(b, unit, lo, hi, true); }

/* ---- unit instructions ---------------------------------------------------- */

void tb_vld(tb *b, int vd, uint64_t vaddr, uint32_t row_stride, bool bf16) {
  uint64_t span = (uint64_t)row_stride * 7 + (bf16 ? 256 : 512);
  access(b, ISA_UNIT_VECTOR, vaddr, vaddr + span, false);
  int rs = tb_sreg(b, row_stride);
  put(b, bf16 ? OP_VLDH : OP_VLD, vd, 0, rs, 0, 0, (int32_t)vaddr);
}

void tb_vst(tb *b, int vs, uint64_t vaddr, uint32_t row_stride, bool bf16, int mask) {
  uint64_t span = (uint64_t)row_stride * 7 + (bf16 ? 256 : 512);
  access(b, ISA_UNIT_VECTOR, vaddr, vaddr + span, true);
  int rs = tb_sreg(b, row_stride);
  put(b, bf16 ? OP_VSTH : OP_VST, vs, 0, rs, mask, 0, (int32_t)vaddr);
}

void tb_valu(tb *b, isa_op op, int d, int a, int c) {
  const isa_info *fi = isa_info_of(op);
  const char *f = fi->operands;
  if (!strcmp(f, "VI")) put(b, op, d, 0, 0, 0, 0, a);
  else if (strlen(f) == 2) put(b, op, d, a, 0, 0, 0, 0);
  else put(b, op, d, a, c, 0, 0, 0);
}

/* The SMEM byte address of descriptor d: interned (each distinct
 * descriptor once, in order of first use, found through the hash table
 * desc_slot of descriptor numbers + 1), or the dynamic slot when SMEM is
 * full. */
static uint32_t desc_addr(tb *b, const int64_t d[10]) {
  uint32_t w[10], h = 2166136261u; /* FNV-1a over the words */
  for (int i = 0; i < 10; i++) {
    w[i] = (uint32_t)(int32_t)d[i];
    h = (h ^ w[i]) * 16777619u;
  }
  uint32_t at = h & b->desc_mask;
  for (; b->desc_slot[at]; at = (at + 1) & b->desc_mask) {
    uint32_t s = (b->desc_slot[at] - 1) * 10;
    if (!memcmp(b->smem + s, w, sizeof w)) return s * 4;
  }
  if (b->smem_words + 10 <= b->dyn_desc / 4) {
    memcpy(b->smem + b->smem_words, w, sizeof w);
    b->desc_slot[at] = b->smem_words / 10 + 1;
    b->smem_words += 10;
    return (b->smem_words - 10) * 4;
  }
  /* SMEM full: write the descriptor into the dynamic slot (read at issue). */
  for (int i = 0; i < 10; i++) put(b, OP_SST, tb_sreg(b, w[i]), 0, 0, 0, 0, (int32_t)(b->dyn_desc + 4 * i));
  return b->dyn_desc;
}

uint32_t tb_smem_words(tb *b, const uint32_t *w, int n) {
  /* Whole 10-word slots keep desc_addr's slot numbering. */
  uint32_t need = (uint32_t)(n + 9) / 10 * 10;
  if (b->failed) return 0;
  /* Interned: SMEM from smem_static on is read-only at run time, so any
   * slot-aligned run of words there equal to these (zero-padded to whole
   * slots) serves. */
  uint32_t want[20] = {0};
  if (n >= 1 && n <= 20) memcpy(want, w, (size_t)n * sizeof *w);
  for (uint32_t s = b->smem_static; n >= 1 && n <= 20 && s + need <= b->smem_words; s += 10)
    if (!memcmp(b->smem + s, want, need * sizeof *want)) return s * 4;
  if (n < 1 || n > 20) {
    tb_error(b, ST_INTERNAL, "tb_smem_words of %d words", n);
    return 0;
  }
  return tb_smem_array(b, w, (uint32_t)n);
}

uint32_t tb_smem_array(tb *b, const uint32_t *w, uint32_t n) {
  uint32_t need = (n + 9) / 10 * 10;
  if (b->failed) return 0;
  if (n < 1 || b->smem_words + need > b->dyn_desc / 4) {
    tb_error(b, ST_RESOURCE_EXHAUSTED, "SMEM is full (%u words of descriptors)", b->smem_words);
    return 0;
  }
  memset(b->smem + b->smem_words, 0, need * sizeof *b->smem);
  memcpy(b->smem + b->smem_words, w, (size_t)n * sizeof *w);
  b->smem_words += need;
  return (b->smem_words - need) * 4;
}

/* The byte range [*lo, *hi) a transfer touches on one side (strides at
 * desc[s..s+2]) from base; desc's counts are at least 1. */
static void dma_box(const int64_t desc[10], int s, int64_t base, int64_t *lo, int64_t *hi) {
  *lo = *hi = base;
  for (int k = 0; k < 3; k++) {
    int64_t e = desc[s + k] * (desc[1 + k] - 1);
    if (e < 0) *lo += e;
    else *hi += e;
  }
  *hi += desc[0];
}

/* A transfer the ISA can encode (docs/isa.md, "DMA descriptors"): a run
 * of 1..2^30 bytes, counts of 1..2^24, strides that fit the descriptor's
 * signed 32-bit words, and both boxes inside memory the target addresses
 * (HBM below hbm_limit, at most 2^32). Otherwise a located error and
 * false: what the arithmetic above computed in 64 bits is never wrapped
 * into a descriptor. Sets the VMEM box. */
static bool dma_encodable(tb *b, uint64_t vaddr, uint64_t haddr, const int64_t desc[10],
                          int64_t *vlo, int64_t *vhi) {
  const char *what = NULL;
  int64_t bad = 0;
  if (desc[0] < 1 || desc[0] > ((int64_t)1 << 30)) what = "contiguous run", bad = desc[0];
  for (int k = 0; k < 3 && !what; k++)
    if (desc[1 + k] < 1 || desc[1 + k] > ((int64_t)1 << 24)) what = "count", bad = desc[1 + k];
  for (int k = 4; k < 10 && !what; k++)
    if (desc[k] < INT32_MIN || desc[k] > INT32_MAX)
      what = k < 7 ? "HBM stride" : "VMEM stride", bad = desc[k];
  if (what) {
    tb_error(b, ST_RESOURCE_EXHAUSTED,
             "a DMA %s of %lld bytes does not fit the target's 32-bit DMA descriptors", what,
             (long long)bad);
    return false;
  }
  int64_t hlo, hhi;
  dma_box(desc, 4, (int64_t)haddr, &hlo, &hhi);
  dma_box(desc, 7, (int64_t)vaddr, vlo, vhi);
  if (hlo < 0 || (uint64_t)hhi > b->hbm_limit || *vlo < 0 || (uint64_t)*vhi > b->t.vmem_bytes) {
    tb_error(b, ST_RESOURCE_EXHAUSTED,
             "a DMA reaches HBM bytes [%lld, %lld) and VMEM bytes [%lld, %lld), outside the "
             "%llu and %llu bytes the target addresses",
             (long long)hlo, (long long)hhi, (long long)*vlo, (long long)*vhi,
             (unsigned long long)b->hbm_limit, (unsigned long long)b->t.vmem_bytes);
    return false;
  }
  return true;
}

/* Issues a DMA whose VMEM box [lo, hi) is checked: the HBM address is
 * register hreg, or (hreg < 0) the constant haddr. */
static void issue_dma(tb *b, bool load, uint64_t vaddr, int hreg, uint64_t haddr, const int64_t desc[10],
                      int64_t lo, int64_t hi) {
  access(b, TB_DMA_UNIT, (uint64_t)lo, (uint64_t)hi, load);
  uint32_t da = desc_addr(b, desc);
  int rv = tb_sreg(b, (uint32_t)vaddr), rh = hreg >= 0 ? hreg : tb_sreg(b, (uint32_t)haddr),
      rd = tb_sreg(b, da);
  /* The completion semaphore is picked from the VMEM address, so that
   * consumers of different buffers take tokens of different semaphores. */
  int sem = TB_SEM_DMA + (int)((b->token_dma ? (uint64_t)b->dma_sem.n : vaddr / 4096) %
                               (uint64_t)(TB_SEM_Q1 - TB_SEM_DMA));
  put(b, load ? OP_DMALD : OP_DMAST, rv, rh, rd, sem, 0, 0);
  b->sem_issued[sem]++;
  VEC_PUSH(b->a, b->dma_sem, (uint8_t)sem);
  VEC_PUSH(b->a, b->dma_ord, b->sem_issued[sem]);
  /* Keep pending tokens far below the semaphore limit. */
  if (b->sem_issued[sem] - b->sem_consumed[sem] > 30000)
    sync_to(b, TB_DMA_UNIT, ISA_UNIT_VECTOR, b->u[TB_DMA_UNIT].seq);
}

void tb_dma(tb *b, bool load, uint64_t vaddr, uint64_t haddr, const int64_t desc[10]) {
  if (b->failed) return;
  int64_t lo, hi;
  if (dma_encodable(b, vaddr, haddr, desc, &lo, &hi)) issue_dma(b, load, vaddr, -1, haddr, desc, lo, hi);
}

void tb_dma_at(tb *b, bool load, uint64_t vaddr, int hreg, uint64_t hlo, uint64_t hhi, const int64_t desc[10]) {
  if (b->failed) return;
  int64_t lo, hi;
  if (dma_encodable(b, vaddr, hlo, desc, &lo, &hi) && dma_encodable(b, vaddr, hhi, desc, &lo, &hi))
    issue_dma(b, load, vaddr, hreg, 0, desc, lo, hi);
}

void tb_fence(tb *b, int u, int v) {
  if (b->failed || b->u[v].synced[u] >= b->u[u].seq) return;
  fence(b, u, v);
}

void tb_dma_q1(tb *b, bool load, uint64_t vaddr, uint64_t haddr, const int64_t desc[10]) {
  if (b->failed) return;
  int64_t lo, hi;
  if (!dma_encodable(b, vaddr, haddr, desc, &lo, &hi)) return;
  access(b, TB_DMA_UNIT + 1, (uint64_t)lo, (uint64_t)hi, load);
  uint32_t da = desc_addr(b, desc);
  int rv = tb_sreg(b, (uint32_t)vaddr), rh = tb_sreg(b, (uint32_t)haddr), rd = tb_sreg(b, da);
  put(b, load ? OP_DMALD : OP_DMAST, rv, rh, rd, TB_SEM_Q1, 1, 0);
  b->q1_pending++;
  if (b->q1_pending > 30000) tb_dma_q1_drain(b);
}

void tb_dma_q1_drain(tb *b) {
  if (b->failed || !b->q1_pending) return;
  /* Queue 0 takes every queue-1 token: HBM traffic of both stays ordered
   * and the semaphore never fills. */
  put(b, OP_WAIT, TB_SEM_Q1, 0, 0, 0, TB_DMA_UNIT, (int32_t)b->q1_pending);
  b->q1_pending = 0;
  absorb(b, TB_DMA_UNIT, TB_DMA_UNIT + 1);
}

void tb_dma_token(tb *b) {
  /* 4 bytes from HBM 0 into the last VMEM granule, which nothing else
   * uses: its completion token covers every DMA issued before it. */
  int64_t d[10] = {4, 1, 1, 1, 0, 0, 0, 0, 0, 0};
  b->token_dma = true;
  tb_dma(b, true, b->t.vmem_bytes - TB_GRANULE, 0, d);
  b->token_dma = false;
}

void tb_mwt(tb *b, int mxu, uint64_t vaddr, uint32_t row_stride, uint64_t bytes_span) {
  access(b, ISA_UNIT_MXU0 + mxu, vaddr, vaddr + bytes_span, false);
  int ra = tb_sreg(b, (uint32_t)vaddr), rs = tb_sreg(b, row_stride);
  put(b, OP_MWT, ra, rs, 0, 0, mxu, 0);
}

void tb_mwtt(tb *b, int mxu, uint64_t vaddr, uint32_t row_stride, uint64_t bytes_span) {
  access(b, ISA_UNIT_MXU0 + mxu, vaddr, vaddr + bytes_span, false);
  int ra = tb_sreg(b, (uint32_t)vaddr), rs = tb_sreg(b, row_stride);
  put(b, OP_MWTT, ra, rs, 0, 0, mxu, 0);
}

void tb_mswap(tb *b, int mxu) { put(b, OP_MSWAP, 0, 0, 0, 0, mxu, 0); }

void tb_mpush(tb *b, int mxu, bool acc, uint64_t vaddr, uint32_t row_stride, uint32_t acc_row,
              int rows) {
  access(b, ISA_UNIT_MXU0 + mxu, vaddr,
         vaddr + (uint64_t)row_stride * (uint64_t)(rows - 1) + 2u * (uint64_t)b->t.mxu_rows, false);
  int ra = tb_sreg(b, (uint32_t)vaddr), rs = tb_sreg(b, row_stride), rc = tb_sreg(b, acc_row);
  put(b, acc ? OP_MPUSHA : OP_MPUSH, ra, rs, rc, 0, mxu, rows);
}

void tb_mpopm(tb *b, int mxu, uint64_t vaddr, uint32_t row_stride, uint32_t acc_row, int rows) {
  access(b, ISA_UNIT_MXU0 + mxu, vaddr,
         vaddr + (uint64_t)row_stride * (uint64_t)(rows - 1) + 4u * (uint64_t)b->t.mxu_cols, true);
  int ra = tb_sreg(b, (uint32_t)vaddr), rs = tb_sreg(b, row_stride), rc = tb_sreg(b, acc_row);
  put(b, OP_MPOPM, ra, rs, rc, 0, mxu, rows);
}

void tb_halt(tb *b) { put(b, OP_HALT, 0, 0, 0, 0, 0, 0); }

/* ---- control flow ---------------------------------------------------------- */

static void sreg_forget(tb *b) {
  memset(b->sreg_val, 0, sizeof b->sreg_val);
  memset(b->sreg_ok, 0, sizeof b->sreg_ok);
  memset(b->sreg_slot, 0, sizeof b->sreg_slot);
  b->sreg_lru = b->sreg_mru = 0;
}

void tb_barrier(tb *b) {
  if (b->failed) return;
  tb_dma_q1_drain(b);
  for (int s = TB_SEM_DMA; s < TB_SEM_Q1; s++)
    if (b->sem_issued[s] > b->sem_consumed[s]) {
      put(b, OP_WAIT, s, 0, 0, 0, ISA_UNIT_SCALAR, (int32_t)(b->sem_issued[s] - b->sem_consumed[s]));
      b->sem_consumed[s] = b->sem_issued[s];
    }
  for (int u = 1; u < ISA_UNIT_COUNT; u++)
    if (b->u[u].seq > b->u[ISA_UNIT_SCALAR].synced[u]) fence(b, u, ISA_UNIT_SCALAR);
  for (int v = 0; v < ISA_UNIT_COUNT; v++)
    for (int u = 0; u < ISA_UNIT_COUNT; u++)
      if (u != v) b->u[v].synced[u] = b->u[u].seq;
  sreg_forget(b);
}

uint64_t tb_label(tb *b) {
  sreg_forget(b);
  return (uint64_t)b->code.n;
}

uint64_t tb_branch(tb *b, isa_op op, int ra, int rb, uint64_t target) {
  uint64_t at = (uint64_t)b->code.n;
  put(b, op, ra, rb, 0, 0, 0, (int32_t)target);
  return at;
}

void tb_patch(tb *b, uint64_t at, uint64_t target) {
  isa_inst in;
  if (b->failed || at >= (uint64_t)b->code.n || isa_decode(b->code.v[at], &in, NULL, 0) != 0) return;
  in.imm = (int32_t)target;
  b->code.v[at] = isa_encode(&in);
}

/* ---- memory --------------------------------------------------------------- */

uint64_t tb_hbm_alloc(tb *b, uint64_t bytes) {
  bytes = tb_align(bytes ? bytes : 1);
  for (int i = 0; i < b->hfree.n; i++) {
    tb_hbm_block *f = &b->hfree.v[i];
    if (f->size < bytes) continue;
    uint64_t off = f->off;
    f->off += bytes;
    f->size -= bytes;
    if (!f->size) {
      memmove(f, f + 1, (size_t)(b->hfree.n - i - 1) * sizeof *f);
      b->hfree.n--;
    }
    if (b->buflog) tb_log_taken(b, off, bytes);
    return off;
  }
  uint64_t off = b->hbm_top;
  if (off + bytes > b->hbm_limit) {
    if (!b->failed)
      tb_error(b, ST_RESOURCE_EXHAUSTED,
               "HBM exhausted: a buffer of %llu bytes does not fit (%llu of %llu bytes in use; "
               "addresses are 32-bit)",
               (unsigned long long)bytes, (unsigned long long)b->hbm_top,
               (unsigned long long)b->hbm_limit);
    return 0;
  }
  b->hbm_top += bytes;
  if (b->hbm_top > b->hbm_peak) b->hbm_peak = b->hbm_top;
  if (b->buflog) tb_log_taken(b, off, bytes);
  return off;
}

void tb_hbm_free(tb *b, uint64_t off, uint64_t bytes) {
  if (b->buflog) tb_log_freed(b, off);
  bytes = tb_align(bytes ? bytes : 1);
  int i = 0;
  while (i < b->hfree.n && b->hfree.v[i].off < off) i++;
  tb_hbm_block nb = {off, bytes};
  VEC_PUSH(b->a, b->hfree, nb);
  memmove(&b->hfree.v[i + 1], &b->hfree.v[i], (size_t)(b->hfree.n - 1 - i) * sizeof nb);
  b->hfree.v[i] = nb;
  /* Coalesce with neighbours. */
  if (i + 1 < b->hfree.n && b->hfree.v[i].off + b->hfree.v[i].size == b->hfree.v[i + 1].off) {
    b->hfree.v[i].size += b->hfree.v[i + 1].size;
    memmove(&b->hfree.v[i + 1], &b->hfree.v[i + 2], (size_t)(b->hfree.n - i - 2) * sizeof nb);
    b->hfree.n--;
  }
  if (i > 0 && b->hfree.v[i - 1].off + b->hfree.v[i - 1].size == b->hfree.v[i].off) {
    b->hfree.v[i - 1].size += b->hfree.v[i].size;
    memmove(&b->hfree.v[i], &b->hfree.v[i + 1], (size_t)(b->hfree.n - i - 1) * sizeof nb);
    b->hfree.n--;
  }
}

bool tb_vmem_fits(tb *b, uint64_t bytes, const char *what) {
  if (bytes > b->vmem_peak) b->vmem_peak = bytes;
  if (bytes <= b->t.vmem_bytes) return true;
  tb_error(b, ST_RESOURCE_EXHAUSTED, "%s needs %llu bytes of VMEM, the target has %llu", what,
           (unsigned long long)bytes, (unsigned long long)b->t.vmem_bytes);
  return false;
}
