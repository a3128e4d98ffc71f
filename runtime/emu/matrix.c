/* matrix.c: the MXU unit: weight loads into the shadow buffer, the swap,
 * lhs pushes accumulating into the f32 accumulator memory, and pops. The
 * arithmetic is E2's kernel (mxu.h); this file does addressing, checks and
 * timing (docs/isa.md, "MXU timing"):
 *   mwt/mwtt  queue slot 1 cycle; the weight path loads K rows, one per
 *             cycle, after the previous load: ready at wl_start + K
 *   mswap     starts when the shadow is loaded (weight-load stall), 1 cycle
 *   mpush*    R rows stream one per cycle: occupies R cycles, results ready
 *             R + K + N cycles after the start (fill and drain)
 *   mpop      waits for the rows' results; 1 cycle, vreg ready 1 later
 *   mpopm     waits for the rows' results; ceil(R/8) cycles */
#include "emu.h"

#include <string.h>

#include "mxu.h"

static emu_time tmax(emu_time a, emu_time b) { return a > b ? a : b; }

/* Gathers R rows of `cols` bf16 from VMEM at addr with a byte stride into
 * dst (row-major, cols per row), after checking the range. */
static int gather_bf16(emu_machine *m, const char *what, uint32_t addr, int32_t stride, int rows,
                       int cols, uint16_t *dst, int unit, emu_time t0, emu_time t1) {
  int64_t a0 = addr, al = a0 + (int64_t)stride * (rows - 1);
  int64_t lo = a0 < al ? a0 : al, hi = a0 < al ? al : a0;
  if (emu_check_range(m, what, lo, (uint64_t)(hi - lo) + 2u * (uint64_t)cols, m->t.vmem_bytes, 2))
    return -1;
  if (stride % 2) return emu_fail(m, EMU_FAULT_MEMORY, "%s: row stride %d is odd", what, stride);
  for (int r = 0; r < rows; r++)
    if (emu_hazard(m, 0, 0, (uint64_t)(a0 + (int64_t)stride * r), 2u * (uint64_t)cols, unit, t0,
                   t1))
      return -1;
  if (dst)
    for (int r = 0; r < rows; r++)
      memcpy(dst + (size_t)r * (size_t)cols, m->vmem + a0 + (int64_t)stride * r, 2u * (size_t)cols);
  return 0;
}

static int acc_rows_ok(emu_machine *m, const char *what, uint32_t row, uint32_t rows) {
  if (row > (uint32_t)m->t.acc_rows || rows > (uint32_t)m->t.acc_rows - row)
    return emu_fail(m, EMU_FAULT_MEMORY, "%s: accumulator rows [%u, %llu) outside [0, %d)", what,
                    row, (unsigned long long)row + rows, m->t.acc_rows);
  return 0;
}

static emu_time acc_ready(emu_mxu *x, uint32_t row, uint32_t rows) {
  emu_time t = 0;
  for (uint32_t b = row / 8; b <= (row + rows - 1) / 8; b++)
    t = tmax(t, x->acc_ready[b]);
  return t;
}

static void set_acc_ready(emu_mxu *x, uint32_t row, uint32_t rows, emu_time t) {
  for (uint32_t b = row / 8; b <= (row + rows - 1) / 8; b++)
    x->acc_ready[b] = tmax(x->acc_ready[b], t);
}

/* An instruction ready at earliest whose operand is ready at dep starts
 * at dep when that is later, the wait counted as a dependency stall. */
static void wait_dependency(emu_unit_stats *us, emu_time earliest, emu_time dep, emu_time *start) {
  if (dep > earliest) {
    us->stall_dependency += dep - earliest;
    *start = dep;
  }
}

int emu_matrix_exec(emu_machine *m, const isa_inst *in, emu_time earliest, emu_time *start,
                    emu_time *occ, emu_time *lat) {
  const int K = m->t.mxu_rows, N = m->t.mxu_cols;
  emu_mxu *x = &m->mxu[in->x];
  emu_unit_stats *us = &m->st->units[ISA_UNIT_MXU0 + in->x];
  uint32_t *s = m->s;
  *start = earliest;
  *occ = 1;
  *lat = 1;
  switch ((isa_op)in->op) {
  case OP_MWT:
  case OP_MWTT: {
    int tr = in->op == OP_MWTT;
    emu_time wl_start = tmax(earliest, x->wl_free);
    /* Memory holds K rows of N (mwt) or N rows of K (mwtt), read by the
     * weight path during its K cycles. */
    int sh = !x->active;
    if (gather_bf16(m, tr ? "mwtt VMEM range" : "mwt VMEM range", s[in->a], (int32_t)s[in->b],
                    tr ? N : K, tr ? K : N, x->tile[sh], ISA_UNIT_MXU0 + in->x, wl_start,
                    wl_start + (emu_time)K))
      return -1;
    x->tile_tr[sh] = tr;
    emu_mxu_pack_w(x->tile[sh], K, N, tr ? K : N, tr ? EMU_MXU_W_TRANSPOSED : 0, x->packed[sh]);
    x->wl_free = wl_start + (emu_time)K;
    m->st->mxu_weight_loads++;
    *lat = x->wl_free - earliest;
    return 0;
  }
  case OP_MSWAP:
    if (x->wl_free > earliest) {
      us->stall_weight_load += x->wl_free - earliest;
      *start = x->wl_free;
    }
    x->active = !x->active;
    return 0;
  case OP_MPUSH:
  case OP_MPUSHA:
  case OP_MPUSHV:
  case OP_MPUSHVA: {
    int fromv = in->op == OP_MPUSHV || in->op == OP_MPUSHVA;
    int accum = in->op == OP_MPUSHA || in->op == OP_MPUSHVA;
    uint32_t rows = fromv ? TGT_SUBLANES : (uint32_t)in->imm;
    uint32_t row = fromv ? s[in->b] : s[in->c];
    if (acc_rows_ok(m, "mpush", row, rows)) return -1;
    const uint16_t *lhs;
    int lds;
    if (fromv) {
      /* The vreg must be ready (RAW on a register). */
      emu_time dep = m->v_ready[in->a];
      wait_dependency(us, earliest, dep, start);
      m->v_read[in->a] = tmax(m->v_read[in->a], *start);
      for (int r = 0; r < TGT_SUBLANES; r++)
        for (int k = 0; k < K; k++) {
          float f;
          memcpy(&f, &m->v[in->a][r][k], 4);
          x->lhs[(size_t)r * (size_t)K + (size_t)k] = base_f32_to_bf16(f);
        }
      lhs = x->lhs;
      lds = K;
    } else {
      uint32_t addr = s[in->a];
      int32_t stride = (int32_t)s[in->b];
      /* Range and ordering checks of the rows streamed in [start,
       * start + rows); then read in place when the layout allows. */
      if (gather_bf16(m, "mpush VMEM range", addr, stride, (int)rows, K, NULL,
                      ISA_UNIT_MXU0 + in->x, *start, *start + rows))
        return -1;
      if (stride >= 2 * K && stride % 2 == 0 && addr % 2 == 0 &&
          (uint64_t)addr + (uint64_t)stride * (rows - 1) + 2u * (uint64_t)K <= m->t.vmem_bytes) {
        lhs = (const uint16_t *)(const void *)(m->vmem + addr);
        lds = stride / 2;
      } else {
        for (uint32_t r = 0; r < rows; r++)
          memcpy(x->lhs + (size_t)r * (size_t)K, m->vmem + (int64_t)addr + (int64_t)stride * r,
                 2u * (size_t)K);
        lhs = x->lhs;
        lds = K;
      }
    }
    float *acc = x->acc + (size_t)row * (size_t)N;
    if (row + rows > x->acc_touched) x->acc_touched = row + rows;
    if (!accum) memset(acc, 0, (size_t)rows * (size_t)N * 4);
    if (m->systolic) {
      int act = x->active, tr = x->tile_tr[act];
      int64_t c = emu_mxu_systolic_matmul_bf16(lhs, x->tile[act], acc, (int)rows, K, N, lds,
                                               tr ? K : N, N, K, N, tr ? EMU_MXU_W_TRANSPOSED : 0);
      if (c < 0) return emu_fail(m, EMU_FAULT_OOM, "out of memory (host)");
      m->systolic_cycles += c;
    } else {
      emu_mxu_matmul_packed(lhs, x->packed[x->active], acc, (int)rows, K, N, lds, N, 0, x->scratch);
    }
    *occ = rows;
    *lat = (emu_time)rows + (emu_time)K + (emu_time)N;
    set_acc_ready(x, row, rows, *start + *lat);
    m->st->mxu_macs += (uint64_t)rows * (uint64_t)K * (uint64_t)N;
    m->st->mxu_busy_cycles += rows;
    return 0;
  }
  case OP_MPOP: {
    uint32_t row = s[in->b];
    if (acc_rows_ok(m, "mpop", row, TGT_SUBLANES)) return -1;
    emu_time dep = tmax(acc_ready(x, row, TGT_SUBLANES), m->v_read[in->a]);
    wait_dependency(us, earliest, dep, start);
    for (int r = 0; r < TGT_SUBLANES; r++)
      for (int l = 0; l < TGT_LANES; l++) {
        int c = in->imm + l;
        float f = c < N ? x->acc[(size_t)(row + (uint32_t)r) * (size_t)N + (size_t)c] : 0.0f;
        memcpy(&m->v[in->a][r][l], &f, 4);
      }
    m->v_ready[in->a] = tmax(m->v_ready[in->a], *start + 1);
    return 0;
  }
  case OP_MPOPM: {
    uint32_t row = s[in->c], rows = (uint32_t)in->imm;
    if (acc_rows_ok(m, "mpopm", row, rows)) return -1;
    uint32_t addr = s[in->a];
    int32_t stride = (int32_t)s[in->b];
    int64_t a0 = addr, al = a0 + (int64_t)stride * (rows - 1);
    int64_t lo = a0 < al ? a0 : al, hi = a0 < al ? al : a0;
    if (emu_check_range(m, "mpopm VMEM range", lo, (uint64_t)(hi - lo) + 4u * (uint64_t)N,
                        m->t.vmem_bytes, 4))
      return -1;
    if (stride % 4)
      return emu_fail(m, EMU_FAULT_MEMORY, "mpopm: row stride %d is not 4-aligned", stride);
    emu_time dep = acc_ready(x, row, rows);
    wait_dependency(us, earliest, dep, start);
    *occ = (rows + 7) / 8;
    for (uint32_t r = 0; r < rows; r++)
      if (emu_hazard(m, 0, 1, (uint64_t)(a0 + (int64_t)stride * r), 4u * (uint64_t)N,
                     ISA_UNIT_MXU0 + in->x, *start, *start + *occ))
        return -1;
    for (uint32_t r = 0; r < rows; r++)
      memcpy(m->vmem + a0 + (int64_t)stride * r, x->acc + (size_t)(row + r) * (size_t)N,
             4u * (size_t)N);
    *occ = (rows + 7) / 8;
    *lat = *occ;
    return 0;
  }
  default:
    return emu_fail(m, EMU_FAULT_OPERAND, "not an MXU instruction");
  }
}
