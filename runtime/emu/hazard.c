/* hazard.c: the memory-ordering check. Units meet in VMEM and HBM only
 * through semaphores (docs/isa.md, section 1); this file proves, for every
 * access, that the program's synchronisation orders it after every
 * conflicting access of another unit, in the cycles the timing rules
 * computed. That is what lets the emulator compute values in program order
 * and still be exact: a program whose accesses could overlap in time stops
 * with a fault instead of getting values its cycle count does not match.
 *
 * Memory is tracked in granules of EMU_GRANULE bytes. Per granule: when the
 * last write completes and by which unit, and per unit until when it reads.
 * An access by unit u during [t0, t1) conflicts when
 *   - it reads or writes while another unit's write is still in flight
 *     (that write completes after t0), or
 *   - it writes while another unit still reads (until after t0).
 * Accesses of one unit never conflict with each other: each unit's queue
 * is in order. A granule shared by unrelated data can report a false
 * conflict; the compiler keeps buffers granule-aligned. */
#include "emu.h"

#include <string.h>

static emu_time tmax(emu_time a, emu_time b) { return a > b ? a : b; }

size_t emu_hazard_bytes(uint64_t mem_bytes) {
  uint64_t g = (mem_bytes + EMU_GRANULE - 1) / EMU_GRANULE;
  return (size_t)g * sizeof(emu_granule);
}

static const char *const mem_names[2] = {"VMEM", "HBM"};

static const char *unit_name(int u) { return u == EMU_UNIT_ICI ? "ici" : isa_unit_name(u); }

int emu_hazard(emu_machine *m, int mem, int write, uint64_t addr, uint64_t len, int unit,
               emu_time t0, emu_time t1) {
  emu_granule *gs = m->hz[mem];
  if (!gs || len == 0) return 0;
  if (addr + len > m->touched[mem]) m->touched[mem] = addr + len;
  uint64_t g0 = addr / EMU_GRANULE, g1 = (addr + len - 1) / EMU_GRANULE;
  for (uint64_t g = g0; g <= g1; g++) {
    emu_granule *x = &gs[g];
    m->now = t0; /* a fault is reported at the cycle of the access */
    if (x->w_unit != EMU_NO_UNIT && x->w_unit != unit && x->w_end > t0)
      return emu_fail(m, EMU_FAULT_RACE,
                      "%s bytes [%llu, %llu) %s by %s at cycle %llu while %s "
                      "still writes them until cycle %llu: a semaphore is "
                      "missing (or two buffers share a granule)",
                      mem_names[mem], (unsigned long long)(g * EMU_GRANULE),
                      (unsigned long long)((g + 1) * EMU_GRANULE), write ? "written" : "read",
                      unit_name(unit), (unsigned long long)t0, unit_name(x->w_unit),
                      (unsigned long long)x->w_end);
    if (write)
      for (int u = 0; u < ISA_UNIT_COUNT; u++)
        if (u != unit && x->r_end[u] > t0)
          return emu_fail(m, EMU_FAULT_RACE,
                          "%s bytes [%llu, %llu) written by %s at cycle %llu "
                          "while %s still reads them until cycle %llu: a "
                          "semaphore is missing (or two buffers share a "
                          "granule)",
                          mem_names[mem], (unsigned long long)(g * EMU_GRANULE),
                          (unsigned long long)((g + 1) * EMU_GRANULE), unit_name(unit),
                          (unsigned long long)t0, isa_unit_name(u),
                          (unsigned long long)x->r_end[u]);
  }
  for (uint64_t g = g0; g <= g1; g++) {
    emu_granule *x = &gs[g];
    if (write) {
      x->w_end = x->w_unit == unit ? tmax(x->w_end, t1) : t1;
      x->w_unit = (uint8_t)unit;
    } else {
      x->r_end[unit] = tmax(x->r_end[unit], t1);
    }
  }
  return 0;
}

void emu_hazard_reset(emu_granule *gs, uint64_t mem_bytes) {
  uint64_t n = (mem_bytes + EMU_GRANULE - 1) / EMU_GRANULE;
  memset(gs, 0, (size_t)n * sizeof *gs);
  for (uint64_t g = 0; g < n; g++)
    gs[g].w_unit = EMU_NO_UNIT;
}
