/* profile.c: per-op attribution of a run (contract in profile.h; every
 * figure is documented in docs/profiling.md).
 *
 * For each executed instruction the emulator calls prof_event after it
 * counted the instruction's stalls, MACs and HBM traffic. The profiler
 * keeps a snapshot of those counters (globals, and the stall counters of
 * the scalar unit and of the instruction's unit, the only ones an
 * instruction changes) and adds the difference to the instruction's op.
 *
 * Trace: per unit one open span (op, first start, furthest end) that is
 * written when an instruction of another op arrives on that unit. A unit
 * runs its queue in program order and the backend emits ops one after
 * another, so spans on one unit never overlap, and instruction spans
 * (start, occ) nest inside them. HBM bandwidth points are collected and
 * written sorted at the end. */
#include "profile.h"

#include <stdlib.h>
#include <string.h>

typedef struct hbm_point {
  uint64_t t;
  double gbps;
} hbm_point;

typedef struct span {
  int open;
  uint32_t op;
  uint64_t start, end;
  uint64_t insts;
} span;

struct prof {
  rt_allocator a;
  const tpub_image *img;
  tgt_target t;
  tpurt_op_stats_t *ops;
  uint32_t nops;
  emu_machine *m;
  emu_stats last;    /* the counters at the previous instruction */
  uint64_t frontier; /* furthest completion so far */
  uint32_t last_op;
  uint8_t alu[OP__COUNT]; /* vector instructions that compute on 1024 elements */
  FILE *trace;
  uint64_t trace_insts; /* instruction spans still to write */
  span sp[ISA_UNIT_COUNT];
  hbm_point *pts;
  size_t npts, cap;
  int oom;
};

static void json_str(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    if ((unsigned char)*s >= 0x20) fputc(*s, f);
  }
}

static void op_label(const prof *p, uint32_t op, FILE *f) {
  if (!p->img->nops) {
    fputs("(program)", f);
    return;
  }
  const tpub_op *o = &p->img->ops[op];
  json_str(f, o->name);
  if (o->file[0] && o->line) {
    const char *base = strrchr(o->file, '/');
    fputs(" (", f);
    json_str(f, base ? base + 1 : o->file);
    fprintf(f, ":%u)", o->line);
  }
}

static void flush_span(prof *p, int u) {
  span *s = &p->sp[u];
  if (!s->open || !p->trace) return;
  fputs(",\n{\"name\":\"", p->trace);
  op_label(p, s->op, p->trace);
  fprintf(p->trace,
          "\",\"cat\":\"op\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%llu,\"dur\":%llu,"
          "\"args\":{\"op\":%u,\"kind\":\"",
          u, (unsigned long long)s->start, (unsigned long long)(s->end - s->start), s->op);
  json_str(p->trace, p->img->nops ? p->img->ops[s->op].kind : "");
  fprintf(p->trace, "\",\"instructions\":%llu}}", (unsigned long long)s->insts);
  s->open = 0;
}

static void add_point(prof *p, uint64_t t, double gbps) {
  if (p->oom) return;
  if (p->npts == p->cap) {
    size_t nc = p->cap ? p->cap * 2 : 256;
    hbm_point *n = rt_alloc(&p->a, nc * sizeof *n);
    if (!n) {
      p->oom = 1;
      return;
    }
    if (p->npts) memcpy(n, p->pts, p->npts * sizeof *n);
    rt_free(&p->a, p->pts);
    p->pts = n;
    p->cap = nc;
  }
  p->pts[p->npts++] = (hbm_point){t, gbps};
}

static void prof_event(void *user, int unit, uint32_t pc, uint64_t word, uint64_t start,
                       uint64_t occ, uint64_t lat) {
  prof *p = user;
  const emu_stats *st = p->m->st;
  uint32_t op = p->img->nops ? p->img->op_of_pc[pc] : 0;
  tpurt_op_stats_t *o = &p->ops[op];
  emu_stats *last = &p->last;
  o->instructions++;
  uint64_t end = start + (occ > lat ? occ : lat);
  if (o->instructions == 1 || start < o->first_cycle) o->first_cycle = start;
  if (end > o->end_cycle) o->end_cycle = end;
  if (end > p->frontier) {
    o->exclusive_cycles += end - p->frontier;
    p->frontier = end;
  }
  p->last_op = op;
  o->unit_busy[unit] += occ;
  /* The UNIT and RUN counters of TPURT_OP_COUNTERS: their growth since
   * the previous instruction is this instruction's. */
  int us[2] = {ISA_UNIT_SCALAR, unit};
  for (int j = 0; j < (unit == ISA_UNIT_SCALAR ? 1 : 2); j++) {
    const emu_unit_stats *now = &st->units[us[j]];
    emu_unit_stats *was = &last->units[us[j]];
#define ADD_UNIT(field)                                                                            \
  o->field += now->field - was->field;                                                             \
  was->field = now->field;
#define ADD_RUN(field)
#define ADD_OP(field)
#define ADD(field, source) ADD_##source(field)
    TPURT_OP_COUNTERS(ADD)
#undef ADD_UNIT
#undef ADD_RUN
  }
  uint64_t moved =
      (st->hbm_read_bytes - last->hbm_read_bytes) + (st->hbm_write_bytes - last->hbm_write_bytes);
#define ADD_UNIT(field)
#define ADD_RUN(field)                                                                             \
  o->field += st->field - last->field;                                                             \
  last->field = st->field;
  TPURT_OP_COUNTERS(ADD)
#undef ADD
#undef ADD_OP
#undef ADD_RUN
#undef ADD_UNIT
  uint8_t opc = (uint8_t)(word >> 56);
  if (unit == ISA_UNIT_VECTOR) {
    o->vpu_instructions++;
    if (opc < OP__COUNT && p->alu[opc]) o->vpu_element_ops += TGT_SUBLANES * TGT_LANES;
  }
  if (!p->trace) return;
  if (unit >= ISA_UNIT_DMA0 && moved && occ) {
    add_point(p, start, (double)moved / (double)occ * (double)p->t.clock_hz * 1e-9);
    add_point(p, start + occ, 0.0);
  }
  span *sp = &p->sp[unit];
  if (sp->open && sp->op != op) flush_span(p, unit);
  uint64_t busy_end = start + (occ ? occ : 1);
  if (!sp->open) {
    *sp = (span){1, op, start, busy_end, 0};
  } else if (busy_end > sp->end) {
    sp->end = busy_end;
  }
  sp->insts++;
  if (p->trace_insts) {
    p->trace_insts--;
    char text[160] = "?";
    isa_inst in;
    if (!isa_decode(word, &in, NULL, 0)) isa_format(&in, text, sizeof text);
    fputs(",\n{\"name\":\"", p->trace);
    json_str(p->trace, text);
    fprintf(p->trace,
            "\",\"cat\":\"inst\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%llu,\"dur\":%llu,"
            "\"args\":{\"pc\":%u,\"lat\":%llu}}",
            unit, (unsigned long long)start, (unsigned long long)(occ ? occ : 1), pc,
            (unsigned long long)lat);
  }
}

prof *prof_create(const rt_allocator *a, const tpub_image *img, const tgt_target *t,
                  tpurt_op_stats_t *ops, FILE *trace, int trace_insts) {
  prof *p = rt_calloc(a, 1, sizeof *p);
  if (!p) return NULL;
  if (a) p->a = *a;
  p->img = img;
  p->t = *t;
  p->ops = ops;
  p->nops = img->nops ? img->nops : 1;
  memset(ops, 0, (size_t)p->nops * sizeof *ops);
  p->trace = trace;
  p->trace_insts = trace_insts ? PROF_MAX_INST_SPANS : 0;
  static const char *const moves[] = {"vld",    "vldh", "vst",  "vsth",  "vldb",   "vstb",
                                      "vbcast", "vimm", "vmov", "viota", "vtpush", "vtpop"};
  for (int op = 0; op < OP__COUNT; op++) {
    const isa_info *fi = isa_info_of((isa_op)op);
    int alu = fi->unit == ISA_VECTOR;
    for (size_t k = 0; k < sizeof moves / sizeof *moves && alu; k++)
      if (!strcmp(fi->mnemonic, moves[k])) alu = 0;
    p->alu[op] = (uint8_t)alu;
  }
  if (trace) {
    fputs("[{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"tpucc core ",
          trace);
    json_str(trace, img->target);
    fputs("\"}}", trace);
    for (int u = 0; u < ISA_UNIT_COUNT; u++) {
      int present = u <= ISA_UNIT_VECTOR || (u >= ISA_UNIT_MXU0 && u < ISA_UNIT_MXU0 + t->mxus) ||
                    (u >= ISA_UNIT_DMA0 && u < ISA_UNIT_DMA0 + t->dma_queues);
      if (!present) continue;
      fprintf(trace,
              ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
              "\"args\":{\"name\":\"%s\"}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\","
              "\"pid\":1,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
              u, isa_unit_name(u), u, u);
    }
  }
  return p;
}

void prof_attach(prof *p, emu_machine *m) {
  p->m = m;
  emu_set_trace(m, prof_event, p);
}

static int point_cmp(const void *x, const void *y) {
  const hbm_point *a = x, *b = y;
  if (a->t != b->t) return a->t < b->t ? -1 : 1;
  /* at one cycle, the end of a transfer (0) before the start of the next */
  return (a->gbps > b->gbps) - (a->gbps < b->gbps);
}

int prof_finish(prof *p, const emu_stats *st) {
  if (st->cycles > p->frontier) {
    p->ops[p->last_op].exclusive_cycles += st->cycles - p->frontier;
    p->frontier = st->cycles;
  }
  if (!p->trace) return p->oom ? -1 : 0;
  for (int u = 0; u < ISA_UNIT_COUNT; u++)
    flush_span(p, u);
  if (p->npts) qsort(p->pts, p->npts, sizeof *p->pts, point_cmp);
  fprintf(p->trace, ",\n{\"name\":\"HBM bandwidth (GB/s)\",\"ph\":\"C\",\"pid\":1,\"ts\":0,"
                    "\"args\":{\"GB/s\":0}}");
  for (size_t i = 0; i < p->npts; i++)
    fprintf(p->trace,
            ",\n{\"name\":\"HBM bandwidth (GB/s)\",\"ph\":\"C\",\"pid\":1,\"ts\":%llu,"
            "\"args\":{\"GB/s\":%.3f}}",
            (unsigned long long)p->pts[i].t, p->pts[i].gbps);
  fputs("\n]\n", p->trace);
  return p->oom ? -1 : 0;
}

void prof_destroy(prof *p) {
  if (!p) return;
  rt_allocator a = p->a;
  rt_free(&a, p->pts);
  rt_free(&a, p);
}
