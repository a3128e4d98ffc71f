/* emu.c: the emulator's front end and dispatch loop: fetches the single
 * instruction stream, runs scalar instructions itself, and for every other
 * instruction computes its values (through the unit files) and its start,
 * occupancy and completion on its unit's queue (docs/isa.md, "Timing"). */
#include "emu.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mxu.h"

int emu_fail(emu_machine *m, emu_fault_kind k, const char *fmt, ...) {
  emu_fault *f = m->f;
  f->kind = k;
  f->pc = m->pc;
  f->word = m->word;
  f->cycle = m->now;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->reason, sizeof f->reason, fmt, ap);
  va_end(ap);
  return -1;
}

int emu_check_range(emu_machine *m, const char *what, int64_t addr, uint64_t len, uint64_t size,
                    int align) {
  if (addr < 0 || (uint64_t)addr > size || len > size - (uint64_t)addr)
    return emu_fail(m, EMU_FAULT_MEMORY, "%s [%lld, %lld) is outside [0, %llu)", what,
                    (long long)addr, (long long)addr + (long long)len, (unsigned long long)size);
  if (align > 1 && addr % align)
    return emu_fail(m, EMU_FAULT_MEMORY, "%s address %lld is not %d-aligned", what, (long long)addr,
                    align);
  return 0;
}

emu_machine *emu_create(const tgt_target *t, const rt_allocator *a) {
  emu_machine *m = rt_calloc(a, 1, sizeof *m);
  if (!m) return NULL;
  m->t = *t;
  m->ncores = 1;
  if (a) m->alloc = *a;
  int ok = 1;
  m->vmem = rt_calloc(a, 1, (size_t)t->vmem_bytes);
  m->smem = rt_calloc(a, 1, (size_t)t->smem_bytes);
  ok = m->vmem && m->smem;
  size_t pw = emu_mxu_packed_w_bytes(t->mxu_rows, t->mxu_cols);
  for (int i = 0; i < t->mxus && ok; i++) {
    emu_mxu *x = &m->mxu[i];
    x->acc = rt_calloc(a, (size_t)t->acc_rows * (size_t)t->mxu_cols, 4);
    x->packed[0] = rt_calloc(a, 1, pw);
    x->packed[1] = rt_calloc(a, 1, pw);
    x->scratch = rt_alloc(a, emu_mxu_scratch_bytes());
    x->tile[0] = rt_calloc(a, (size_t)t->mxu_rows * (size_t)t->mxu_cols, 2);
    x->tile[1] = rt_calloc(a, (size_t)t->mxu_rows * (size_t)t->mxu_cols, 2);
    x->lhs = rt_calloc(a, (size_t)t->acc_rows * (size_t)t->mxu_rows, 2);
    x->acc_ready = rt_calloc(a, (size_t)t->acc_rows / 8, sizeof(emu_time));
    ok = x->acc && x->packed[0] && x->packed[1] && x->scratch && x->tile[0] && x->tile[1] &&
         x->lhs && x->acc_ready;
  }
  if (ok) {
    /* At most one transfer per queue is moving data and queue_depth wait
     * in each queue: that bounds the HBM intervals still in the future. */
    m->hbm_cap = (uint32_t)(t->dma_queues * (t->queue_depth + 1) + 1);
    m->hbm_iv = rt_calloc(a, m->hbm_cap, sizeof *m->hbm_iv);
    ok = m->hbm_iv != NULL;
  }
  if (ok) {
    m->hz[0] = rt_alloc(a, emu_hazard_bytes(t->vmem_bytes));
    ok = m->hz[0] != NULL;
  }
  for (int u = 0; u < ISA_UNIT_COUNT && ok; u++) {
    m->unit[u].ring = rt_calloc(a, (size_t)t->queue_depth, sizeof(emu_time));
    ok = m->unit[u].ring != NULL;
  }
  if (!ok) {
    emu_destroy(m);
    return NULL;
  }
  /* Memories come zeroed from rt_calloc; the ordering state needs its
   * "written by nobody" marks once, later runs clear what they touched. */
  emu_hazard_reset(m->hz[0], t->vmem_bytes);
  return m;
}

void emu_set_systolic(emu_machine *m, int on) { m->systolic = on != 0; }

void emu_set_trace(emu_machine *m, emu_trace_fn fn, void *user) {
  m->trace = fn;
  m->trace_user = user;
}

void emu_destroy(emu_machine *m) {
  if (!m) return;
  rt_allocator a = m->alloc;
  rt_free(&a, m->vmem);
  rt_free(&a, m->smem);
  rt_free(&a, m->hz[0]);
  rt_free(&a, m->hbm_iv);
  rt_free(&a, m->hz[1]);
  for (int i = 0; i < TGT_MAX_MXUS; i++) {
    emu_mxu *x = &m->mxu[i];
    rt_free(&a, x->acc);
    rt_free(&a, x->packed[0]);
    rt_free(&a, x->packed[1]);
    rt_free(&a, x->scratch);
    rt_free(&a, x->tile[0]);
    rt_free(&a, x->tile[1]);
    rt_free(&a, x->lhs);
    rt_free(&a, x->acc_ready);
  }
  for (int i = 0; i < TGT_SEMS; i++) {
    rt_free(&a, m->sem[i].heap);
    rt_free(&a, m->isem[i].heap);
  }
  rt_free(&a, m->out);
  for (int u = 0; u < ISA_UNIT_COUNT; u++)
    rt_free(&a, m->unit[u].ring);
  rt_free(&a, m);
}

/* Puts every piece of architectural and timing state back to zero. */
static void reset(emu_machine *m, const tpub_image *img) {
  const tgt_target *t = &m->t;
  memset(m->s, 0, sizeof m->s);
  memset(m->v, 0, sizeof m->v);
  memset(m->mk, 0, sizeof m->mk);
  memset(m->mk[0], 1, sizeof m->mk[0]);
  memset(m->tbuf, 0, sizeof m->tbuf);
  /* Every VMEM access goes through the ordering check, which records the
   * highest byte touched: only that prefix needs clearing (VMEM and its
   * ordering state), which keeps small programs cheap to run. */
  uint64_t vt = m->touched[0];
  memset(m->vmem, 0, (size_t)vt);
  emu_hazard_reset(m->hz[0], vt);
  m->touched[0] = 0;
  memset(m->smem, 0, (size_t)t->smem_bytes);
  for (uint32_t i = 0; i < img->nsmem; i++) {
    uint32_t w = img->smem[i];
    for (int k = 0; k < 4; k++)
      m->smem[4 * i + (uint32_t)k] = (uint8_t)(w >> (8 * k));
  }
  size_t pw = emu_mxu_packed_w_bytes(t->mxu_rows, t->mxu_cols);
  for (int i = 0; i < t->mxus; i++) {
    emu_mxu *x = &m->mxu[i];
    memset(x->acc, 0, (size_t)x->acc_touched * (size_t)t->mxu_cols * 4);
    x->acc_touched = 0;
    memset(x->packed[0], 0, pw);
    memset(x->packed[1], 0, pw);
    memset(x->tile[0], 0, (size_t)t->mxu_rows * (size_t)t->mxu_cols * 2);
    memset(x->tile[1], 0, (size_t)t->mxu_rows * (size_t)t->mxu_cols * 2);
    x->tile_tr[0] = x->tile_tr[1] = 0;
    memset(x->acc_ready, 0, (size_t)t->acc_rows / 8 * sizeof(emu_time));
    x->active = 0;
    x->wl_free = 0;
  }
  for (int u = 0; u < ISA_UNIT_COUNT; u++) {
    emu_unit *q = &m->unit[u];
    q->free_at = q->done_at = 0;
    q->ring_head = q->ring_n = 0;
  }
  memset(m->v_ready, 0, sizeof m->v_ready);
  memset(m->v_read, 0, sizeof m->v_read);
  memset(m->m_ready, 0, sizeof m->m_ready);
  memset(m->m_read, 0, sizeof m->m_read);
  m->tbuf_ready = 0;
  m->hbm_n = 0;
  emu_sem_reset(m);
}

static emu_time tmax(emu_time a, emu_time b) { return a > b ? a : b; }

/* Reads an SMEM word for sld (faults on a bad address). */
static int smem_word(emu_machine *m, int64_t addr, uint32_t **out) {
  if (emu_check_range(m, "SMEM word", addr, 4, m->t.smem_bytes, 4)) return -1;
  *out = (uint32_t *)(void *)(m->smem + addr);
  return 0;
}

/* Queue admission: the front end waits while unit u's queue is full. */
static void admit(emu_machine *m, int u, emu_time *T) {
  emu_unit *q = &m->unit[u];
  uint32_t depth = (uint32_t)m->t.queue_depth;
  if (q->ring_n < depth) return;
  emu_time oldest = q->ring[q->ring_head];
  if (oldest > *T) {
    m->st->units[ISA_UNIT_SCALAR].stall_queue_full += oldest - *T;
    *T = oldest;
  }
}

static void record_start(emu_machine *m, int u, emu_time start) {
  emu_unit *q = &m->unit[u];
  uint32_t depth = (uint32_t)m->t.queue_depth;
  if (q->ring_n < depth) {
    q->ring[(q->ring_head + q->ring_n) % depth] = start;
    q->ring_n++;
  } else {
    q->ring[q->ring_head] = start;
    q->ring_head = (q->ring_head + 1) % depth;
  }
}

/* Timing of a vector instruction: operands ready (RAW), destinations no
 * longer being read by another unit (WAR). */
static emu_time vector_deps(emu_machine *m, const isa_inst *in, uint32_t *vr, uint32_t *vw,
                            uint32_t *mr, uint32_t *mw) {
  emu_time dep = 0;
  emu_vector_regs(in, vr, vw, mr, mw);
  for (int i = 0; i < TGT_VREGS; i++) {
    if (*vr >> i & 1) dep = tmax(dep, m->v_ready[i]);
    if (*vw >> i & 1) dep = tmax(dep, m->v_read[i]);
  }
  for (int i = 0; i < TGT_MREGS; i++) {
    if (*mr >> i & 1) dep = tmax(dep, m->m_ready[i]);
    if (*mw >> i & 1) dep = tmax(dep, m->m_read[i]);
  }
  if (in->op == OP_VTPOP) dep = tmax(dep, m->tbuf_ready);
  return dep;
}

int emu_begin(emu_machine *m, const tpub_image *img, uint8_t *hbm, uint64_t cycle_limit,
              emu_stats *st, emu_fault *f) {
  memset(st, 0, sizeof *st);
  memset(f, 0, sizeof *f);
  m->st = st;
  m->f = f;
  m->hbm = hbm;
  m->hbm_bytes = img->hbm_bytes;
  m->cycle_limit = cycle_limit;
  m->systolic_cycles = 0;
  m->img = img;
  m->fe_t = 0;
  m->fe_pc = 0;
  m->nout = 0;
  m->put_seq = 0;
  memset(&m->ist, 0, sizeof m->ist);
  reset(m, img);
  m->hz[1] = rt_alloc(&m->alloc, emu_hazard_bytes(img->hbm_bytes));
  if (!m->hz[1]) {
    m->pc = 0;
    m->word = img->code[0];
    m->now = 0;
    emu_fail(m, EMU_FAULT_OOM, "out of memory (host) for the HBM ordering state");
    m->st = NULL;
    m->f = NULL;
    return -1;
  }
  emu_hazard_reset(m->hz[1], img->hbm_bytes);
  m->touched[1] = 0;
  return 0;
}

void emu_end(emu_machine *m) {
  rt_free(&m->alloc, m->hz[1]);
  m->hz[1] = NULL;
  for (uint32_t i = 0; i < m->nout; i++) rt_free(&m->alloc, m->out[i].data);
  m->nout = 0;
  m->st->mxu_array_cycles = (uint64_t)m->systolic_cycles;
  m->st = NULL;
  m->f = NULL;
}

int emu_run(emu_machine *m, const tpub_image *img, uint8_t *hbm, uint64_t cycle_limit,
            emu_stats *st, emu_fault *f) {
  if (emu_begin(m, img, hbm, cycle_limit, st, f)) return -1;
  int rc = emu_advance(m, UINT64_MAX);
  emu_end(m);
  return rc == EMU_STEP_HALT ? 0 : -1;
}

/* `wait scalar` (this core's signals; faults when too few were issued)
 * and `iwait` (signals that came over ICI): takes the signals and moves
 * the front end to the latest (counted as a stall by who signalled it).
 * iwait returns 1 (blocked: nothing changed) while it cannot be decided
 * before bound; alone (no interconnect) too few signals are a fault. */
static int frontend_wait(emu_machine *m, const isa_inst *in, emu_time bound, emu_time *T) {
  emu_unit_stats *us = &m->st->units[ISA_UNIT_SCALAR];
  uint32_t n = (uint32_t)in->imm;
  emu_time ready;
  int unit = EMU_UNIT_ICI;
  if (in->op == OP_WAIT) {
    int from_dma;
    if (emu_sem_wait(m, in->a, n, &ready, &from_dma)) return -1;
    unit = from_dma ? ISA_UNIT_DMA0 : ISA_UNIT_VECTOR;
  } else {
    int ok = emu_isem_wait(m, in->a, n, m->ici ? bound : UINT64_MAX, &ready, NULL);
    if (ok < 0) return -1;
    if (!ok && !m->ici)
      return emu_fail(m, EMU_FAULT_SEMAPHORE,
                      "iwait for %u on semaphore %d can never complete: this run has no "
                      "interconnect (deadlock)",
                      n, in->a);
    if (!ok) {
      m->fe_blocked_sem = in->a;
      m->fe_blocked_n = n;
      return 1;
    }
  }
  if (ready > *T) {
    if (unit == EMU_UNIT_ICI)
      m->ist.wait_cycles += ready - *T;
    else if (unit >= ISA_UNIT_DMA0)
      us->stall_dma += ready - *T;
    else
      us->stall_sync += ready - *T;
    *T = ready;
  }
  return 0;
}

int emu_advance(emu_machine *m, uint64_t bound) {
  const tpub_image *img = m->img;
  emu_stats *st = m->st;
  const uint64_t cycle_limit = m->cycle_limit;
  const uint64_t *code = img->code;
  const uint32_t ncode = img->ncode;
  emu_time T = m->fe_t; /* front-end cycle */
  uint32_t pc = m->fe_pc;
  uint32_t *s = m->s;
  int rc = 0;
  for (;;) {
    if (T >= bound) {
      m->fe_t = T;
      m->fe_pc = pc;
      return EMU_STEP_YIELD;
    }
    if (cycle_limit && T >= cycle_limit) {
      m->now = T;
      m->pc = pc;
      m->word = pc < ncode ? code[pc] : 0;
      rc = emu_fail(m, EMU_FAULT_CYCLES, "cycle limit of %llu reached (runaway loop?)",
                    (unsigned long long)cycle_limit);
      break;
    }
    isa_inst in;
    /* Verified code: every word decodes, pc stays inside the code. */
    uint64_t w = code[pc];
    in.op = (uint8_t)(w >> 56);
    in.a = (uint8_t)(w >> 51 & 31);
    in.b = (uint8_t)(w >> 46 & 31);
    in.c = (uint8_t)(w >> 41 & 31);
    in.d = (uint8_t)(w >> 36 & 31);
    in.x = (uint8_t)(w >> 32 & 15);
    in.imm = (int32_t)(uint32_t)w;
    m->pc = pc;
    m->word = w;
    m->now = T;
    st->instructions++;
    uint32_t next = pc + 1;
    uint32_t a = s[in.b], b = s[in.c];
    uint32_t imm = (uint32_t)in.imm;
    uint32_t r = 0;
    int writes = 1;
    switch ((isa_op)in.op) {
    case OP_HALT:
      goto done;
    case OP_SLI:
      r = imm;
      break;
    case OP_SADD:
      r = a + b;
      break;
    case OP_SSUB:
      r = a - b;
      break;
    case OP_SMUL:
      r = a * b;
      break;
    case OP_SAND:
      r = a & b;
      break;
    case OP_SOR:
      r = a | b;
      break;
    case OP_SXOR:
      r = a ^ b;
      break;
    case OP_SSHL:
      r = a << (b & 31);
      break;
    case OP_SSHR:
      r = a >> (b & 31);
      break;
    case OP_SSRA:
      r = (uint32_t)((int32_t)a >> (b & 31));
      break;
    case OP_SMIN:
      r = (int32_t)a < (int32_t)b ? a : b;
      break;
    case OP_SMAX:
      r = (int32_t)a > (int32_t)b ? a : b;
      break;
    case OP_SSLT:
      r = (int32_t)a < (int32_t)b;
      break;
    case OP_SSLTU:
      r = a < b;
      break;
    case OP_SSEQ:
      r = a == b;
      break;
    case OP_SADDI:
      r = a + imm;
      break;
    case OP_SMULI:
      r = a * imm;
      break;
    case OP_SANDI:
      r = a & imm;
      break;
    case OP_SSHLI:
      r = a << (imm & 31);
      break;
    case OP_SSHRI:
      r = a >> (imm & 31);
      break;
    case OP_SSLTI:
      r = (int32_t)a < (int32_t)imm;
      break;
    case OP_SLD: {
      uint32_t *p;
      if (smem_word(m, (int64_t)a + in.imm, &p)) goto fault;
      r = *p;
      break;
    }
    case OP_SST: {
      uint32_t *p;
      if (smem_word(m, (int64_t)a + in.imm, &p)) goto fault;
      *p = s[in.a];
      writes = 0;
      break;
    }
    case OP_BEQ:
      writes = 0;
      if (s[in.a] == s[in.b]) next = imm;
      break;
    case OP_BNE:
      writes = 0;
      if (s[in.a] != s[in.b]) next = imm;
      break;
    case OP_BLT:
      writes = 0;
      if ((int32_t)s[in.a] < (int32_t)s[in.b]) next = imm;
      break;
    case OP_BGE:
      writes = 0;
      if ((int32_t)s[in.a] >= (int32_t)s[in.b]) next = imm;
      break;
    case OP_JMP:
      writes = 0;
      next = imm;
      break;
    case OP_VTOS: {
      /* The one way data flows from the vector unit to control: the front
       * end waits for the register (a dependency stall) and reads it. */
      emu_time ready = m->v_ready[in.b];
      if (ready > T) {
        st->units[ISA_UNIT_SCALAR].stall_dependency += ready - T;
        T = ready;
      }
      if (m->v_read[in.b] < T) m->v_read[in.b] = T;
      r = m->v[in.b][(uint32_t)in.imm / TGT_LANES][(uint32_t)in.imm % TGT_LANES];
      break;
    }
    case OP_IWAIT: {
      writes = 0;
      int blocked = frontend_wait(m, &in, bound, &T);
      if (blocked < 0) goto fault;
      if (blocked) { /* the iwait issues again in a later step */
        st->instructions--;
        m->fe_t = T;
        m->fe_pc = pc;
        return EMU_STEP_BLOCKED;
      }
      break;
    }
    case OP_COREID:
      r = imm ? (uint32_t)m->ncores : (uint32_t)m->core;
      break;
    case OP_LOOP:
      writes = 0;
      if (in.a) s[in.a]--;
      if (s[in.a] != 0) next = imm;
      break;
    default: {
      /* A unit instruction (or a sync on the scalar unit). */
      writes = 0;
      int u = isa_exec_unit(&in);
      emu_unit_stats *us = &st->units[u];
      if (u == ISA_UNIT_SCALAR) {
        /* wait/signal executed by the front end itself. */
        if (in.op == OP_WAIT) {
          if (frontend_wait(m, &in, bound, &T)) goto fault;
        } else {
          if (emu_sem_signal(m, in.a, imm, T + 1, u)) goto fault;
        }
        if (m->trace) m->trace(m->trace_user, u, pc, w, T, 1, 1);
        us->instructions++;
        break;
      }
      admit(m, u, &T);
      m->now = T;
      emu_unit *q = &m->unit[u];
      emu_time earliest = tmax(T, q->free_at);
      emu_time start = earliest, occ = 1, lat = 1;
      if (in.op == OP_WAIT) {
        emu_time ready;
        int from_dma;
        if (emu_sem_wait(m, in.a, imm, &ready, &from_dma)) goto fault;
        if (ready > earliest) {
          if (from_dma)
            us->stall_dma += ready - earliest;
          else
            us->stall_sync += ready - earliest;
          start = ready;
        }
      } else if (in.op == OP_SIGNAL) {
        /* A fence: after everything the unit issued has completed. */
        start = tmax(earliest, q->done_at);
        us->stall_dependency += start - earliest;
        if (emu_sem_signal(m, in.a, imm, start + 1, u)) goto fault;
      } else if (u == ISA_UNIT_VECTOR) {
        uint32_t vr, vw, mr, mw;
        emu_time dep = vector_deps(m, &in, &vr, &vw, &mr, &mw);
        if (dep > earliest) {
          us->stall_dependency += dep - earliest;
          start = dep;
        }
        const isa_info *fi = isa_info_of((isa_op)in.op);
        occ = (emu_time)fi->occ;
        lat = (emu_time)fi->lat;
        m->now = start;
        if (emu_vector_exec(m, &in)) goto fault;
        for (int i = 0; i < TGT_VREGS; i++) {
          if (vr >> i & 1) m->v_read[i] = tmax(m->v_read[i], start);
          if (vw >> i & 1) m->v_ready[i] = tmax(m->v_ready[i], start + lat);
        }
        for (int i = 0; i < TGT_MREGS; i++) {
          if (mr >> i & 1) m->m_read[i] = tmax(m->m_read[i], start);
          if (mw >> i & 1) m->m_ready[i] = tmax(m->m_ready[i], start + lat);
        }
        if (in.op == OP_VTPUSH) m->tbuf_ready = tmax(m->tbuf_ready, start + lat);
      } else if (u < ISA_UNIT_DMA0) {
        if (emu_matrix_exec(m, &in, earliest, &start, &occ, &lat)) goto fault;
      } else if (in.op == OP_DMAPUT) {
        if (emu_put_exec(m, &in, earliest, &start, &occ, &lat)) goto fault;
      } else {
        if (emu_dma_exec(m, &in, earliest, &start, &occ, &lat)) goto fault;
      }
      if (cycle_limit && start >= cycle_limit) {
        m->now = start;
        rc = emu_fail(m, EMU_FAULT_CYCLES, "cycle limit of %llu reached on %s",
                      (unsigned long long)cycle_limit, isa_unit_name(u));
        goto out;
      }
      record_start(m, u, start);
      if (m->trace) m->trace(m->trace_user, u, pc, w, start, occ, lat);
      q->free_at = start + occ;
      q->done_at = tmax(q->done_at, start + lat);
      us->instructions++;
      us->busy_cycles += occ;
      us->last_cycle = q->done_at;
      break;
    }
    }
    if (m->trace && isa_info_of((isa_op)in.op)->unit == ISA_SCALAR)
      m->trace(m->trace_user, ISA_UNIT_SCALAR, pc, w, T, 1, 1);
    if (writes) {
      s[in.a] = r;
      s[0] = 0;
      st->units[ISA_UNIT_SCALAR].instructions++;
    } else if (isa_info_of((isa_op)in.op)->unit == ISA_SCALAR) {
      st->units[ISA_UNIT_SCALAR].instructions++;
    }
    T += 1;
    st->units[ISA_UNIT_SCALAR].busy_cycles++;
    pc = next;
  }
done : {
  st->units[ISA_UNIT_SCALAR].instructions++;
  if (m->trace) m->trace(m->trace_user, ISA_UNIT_SCALAR, pc, code[pc], T, 1, 1);
  emu_time end = T + 1;
  for (int u = 0; u < ISA_UNIT_COUNT; u++)
    end = tmax(end, tmax(m->unit[u].done_at, m->unit[u].free_at));
  st->units[ISA_UNIT_SCALAR].busy_cycles++;
  st->units[ISA_UNIT_SCALAR].last_cycle = T + 1;
  st->cycles = end;
  m->fe_t = T;
  m->fe_pc = pc;
  /* Past the limit (the front end's limit too, T >= cycle_limit, ends
   * here): the drain's fault. */
  if (cycle_limit && end > cycle_limit) {
    m->now = end;
    rc = emu_fail(m, EMU_FAULT_CYCLES, "cycle limit of %llu reached while draining",
                  (unsigned long long)cycle_limit);
  }
  if (rc) goto out;
  return EMU_STEP_HALT;
}
fault:
  rc = -1;
out: {
    emu_time end = T;
    for (int u = 0; u < ISA_UNIT_COUNT; u++)
      end = tmax(end, m->unit[u].done_at);
    st->cycles = end;
  }
  m->fe_t = T;
  m->fe_pc = pc;
  return EMU_STEP_FAULT;
}

void emu_stats_export(const emu_stats *e, const tgt_target *t, tpurt_stats_t *out) {
  memset(out, 0, sizeof *out);
  out->cycles = e->cycles;
  out->seconds = (double)e->cycles / (double)t->clock_hz;
#define COPY_COUNTED(field) out->field = e->field;
#define COPY_DERIVED(field)
#define COPY(field, kind) COPY_##kind(field)
  TPURT_RUN_COUNTERS(COPY)
#undef COPY
#undef COPY_DERIVED
#undef COPY_COUNTED
  out->mxu_peak_macs = e->cycles * tgt_peak_macs_per_cycle(t);
  for (int u = 0; u < TPURT_MAX_UNITS; u++) {
    out->units[u].name = isa_unit_name(u);
#define COPY(field, label) out->units[u].field = e->units[u].field;
    TPURT_UNIT_COUNTERS(COPY)
#undef COPY
  }
}
