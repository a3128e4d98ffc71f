/* report_ici.c: the figures of a module run as one replica per core of a
 * TPU board or pod: per core (cycles, the compute / send / wait split,
 * ICI bytes), per ICI link that carried data (transfers, bytes, busy
 * cycles, utilisation) and, when the module has one all-reduce over every
 * core, its achieved bandwidth against the ring bound of
 * docs/performance.md, "All-reduce". Written as `--stats` lines, the
 * `--stats-json` object and the `--report` table or CSV (docs/cli.md).
 * Contract: report.h. */
#include "tools/report.h"

#include <string.h>

#ifdef TPUCC_HAVE_TPU
#include "target.h"
#endif

bool tool_ici_init(tool_ici_run *r, const char *target, int ncores, const tpurt_stats_t *cores,
                   const tpurt_link_stats_t *links, size_t nlinks, int64_t allreduce_bytes) {
  *r = (tool_ici_run){target, 0, 0, 0, ncores, cores, links, nlinks, allreduce_bytes};
#ifdef TPUCC_HAVE_TPU
  tgt_target t;
  char why[256];
  if (tgt_parse(target, &t, why, sizeof why)) return false;
  r->clock_hz = (double)t.clock_hz;
  r->ici_bw = (double)t.ici_bw;
  r->ici_latency = (double)t.ici_latency;
  return true;
#else
  return false;
#endif
}

int64_t tool_ici_allreduce_bytes(const ir_module *m, int ncores) {
  const ir_inst *found = NULL;
  for (int k = 0; k < m->comps.n; k++) {
    const ir_comp *c = &m->comps.v[k];
    for (int i = 0; i < c->insts.n; i++) {
      const ir_inst *in = &c->insts.v[i];
      if (ir_coll_sync_op(in->op) != IR_OP_ALL_REDUCE) continue;
      if (found) return -1; /* more than one */
      found = in;
    }
  }
  if (!found || found->shape->type == IR_TUPLE || ncores < 2) return -1;
  int64_t g[4096];
  int pos;
  if (ncores > 4096 || ir_coll_group(found, ncores, 0, g, &pos) != ncores) return -1;
  return ir_shape_count(found->shape) * ir_type_size(found->shape->type);
}

uint64_t tool_ici_cycles(const tool_ici_run *r) {
  uint64_t n = 0;
  for (int c = 0; c < r->ncores; c++)
    if (r->cores[c].cycles > n) n = r->cores[c].cycles;
  return n;
}

uint64_t tool_ici_compute_cycles(const tpurt_stats_t *s) {
  return s->cycles > s->ici_wait_cycles ? s->cycles - s->ici_wait_cycles : 0;
}

double tool_ici_utilisation(const tool_ici_run *r, const tpurt_link_stats_t *l) {
  uint64_t n = tool_ici_cycles(r);
  return n ? (double)l->busy_cycles / (double)n : 0;
}

bool tool_ici_allreduce(const tool_ici_run *r, tool_ici_allreduce_t *out) {
  memset(out, 0, sizeof *out);
  if (r->allreduce_bytes < 0 || r->ncores < 2 || r->clock_hz <= 0 || r->ici_bw <= 0) return false;
  double n = r->ncores, moved = 2.0 * (n - 1) / n * (double)r->allreduce_bytes;
  out->bytes = r->allreduce_bytes;
  out->seconds = (double)tool_ici_cycles(r) / r->clock_hz;
  out->bus_bandwidth = out->seconds > 0 ? moved / out->seconds : 0;
  out->bound_seconds = moved / r->ici_bw + 2.0 * (n - 1) * r->ici_latency / r->clock_hz;
  out->bound_fraction = out->seconds > 0 ? out->bound_seconds / out->seconds : 0;
  return true;
}

/* The used links, one line each, and the all-reduce line (text forms). */
static void links_text(const tool_ici_run *r, FILE *f) {
  fprintf(f, "  %-24s %10s %14s %12s %11s\n", "link", "transfers", "bytes", "busy cycles",
          "utilisation");
  for (size_t k = 0; k < r->nlinks; k++) {
    const tpurt_link_stats_t *l = &r->links[k];
    if (!l->transfers) continue;
    fprintf(f, "  %-24s %10llu %14llu %12llu %11.4g\n", l->name,
            (unsigned long long)l->transfers, (unsigned long long)l->bytes,
            (unsigned long long)l->busy_cycles, tool_ici_utilisation(r, l));
  }
  tool_ici_allreduce_t ar;
  if (!tool_ici_allreduce(r, &ar)) return;
  fprintf(f,
          "  all-reduce of %lld bytes over %d cores: %.6g s (the run), bus %.4g GB/s; ring "
          "bound %.6g s, bound/time %.3f\n",
          (long long)ar.bytes, r->ncores, ar.seconds, ar.bus_bandwidth * 1e-9, ar.bound_seconds,
          ar.bound_fraction);
}

void tool_ici_core_lines(const tool_ici_run *r, int lo, int hi, const char *prefix, FILE *f) {
  const tpurt_stats_t *s = r->cores;
  fprintf(f, "%s  %-5s %12s %12s %12s %14s %14s %12s %12s %12s %12s %12s %12s\n", prefix, "core",
          "cycles", "seconds", "instructions", "HBM read", "HBM written", "MXU busy cyc", "ICI sent",
          "ICI received", "ICI send cyc", "ICI wait cyc", "compute cyc");
  for (int c = lo; c < hi; c++)
    fprintf(f, "%s  %-5d %12llu %12.6g %12llu %14llu %14llu %12llu %12llu %12llu %12llu %12llu %12llu\n",
            prefix, c, (unsigned long long)s[c].cycles, s[c].seconds,
            (unsigned long long)s[c].instructions, (unsigned long long)s[c].hbm_read_bytes,
            (unsigned long long)s[c].hbm_write_bytes, (unsigned long long)s[c].mxu_busy_cycles,
            (unsigned long long)s[c].ici_sent_bytes, (unsigned long long)s[c].ici_received_bytes,
            (unsigned long long)s[c].ici_send_cycles, (unsigned long long)s[c].ici_wait_cycles,
            (unsigned long long)tool_ici_compute_cycles(&s[c]));
}

int tool_ici_stats_text(const tool_ici_run *r, FILE *f) {
  fprintf(f, "stats (target %s, %d cores):\n", r->target, r->ncores);
  tool_ici_core_lines(r, 0, r->ncores, "", f);
  links_text(r, f);
  return ferror(f) ? -1 : 0;
}

int tool_ici_report_table(const tool_ici_run *r, FILE *f) {
  uint64_t total = tool_ici_cycles(r);
  fprintf(f, "per-core report (target %s, %d cores, %llu cycles)\n", r->target, r->ncores,
          (unsigned long long)total);
  fprintf(f, "  %-5s %12s %12s %8s %12s %12s %8s %14s %14s\n", "core", "cycles", "compute",
          "share", "ICI send", "ICI wait", "share", "ICI sent", "ICI received");
  for (int c = 0; c < r->ncores; c++) {
    const tpurt_stats_t *s = &r->cores[c];
    double n = s->cycles ? (double)s->cycles : 1;
    fprintf(f, "  %-5d %12llu %12llu %7.1f%% %12llu %12llu %7.1f%% %14llu %14llu\n", c,
            (unsigned long long)s->cycles, (unsigned long long)tool_ici_compute_cycles(s),
            100.0 * (double)tool_ici_compute_cycles(s) / n, (unsigned long long)s->ici_send_cycles,
            (unsigned long long)s->ici_wait_cycles, 100.0 * (double)s->ici_wait_cycles / n,
            (unsigned long long)s->ici_sent_bytes, (unsigned long long)s->ici_received_bytes);
  }
  links_text(r, f);
  return ferror(f) ? -1 : 0;
}

int tool_ici_report_csv(const tool_ici_run *r, FILE *f) {
  fputs("kind,index,name,cycles,compute_cycles,ici_send_cycles,ici_wait_cycles,ici_sent_bytes,"
        "ici_received_bytes,transfers,bytes,busy_cycles,utilisation\n",
        f);
  for (int c = 0; c < r->ncores; c++) {
    const tpurt_stats_t *s = &r->cores[c];
    fprintf(f, "core,%d,core %d,%llu,%llu,%llu,%llu,%llu,%llu,,,,\n", c, c,
            (unsigned long long)s->cycles, (unsigned long long)tool_ici_compute_cycles(s),
            (unsigned long long)s->ici_send_cycles, (unsigned long long)s->ici_wait_cycles,
            (unsigned long long)s->ici_sent_bytes, (unsigned long long)s->ici_received_bytes);
  }
  for (size_t k = 0; k < r->nlinks; k++) {
    const tpurt_link_stats_t *l = &r->links[k];
    if (!l->transfers) continue;
    fprintf(f, "link,%zu,\"%s\",,,,,,,%llu,%llu,%llu,%.6g\n", k, l->name, /* names hold commas */
            (unsigned long long)l->transfers, (unsigned long long)l->bytes,
            (unsigned long long)l->busy_cycles, tool_ici_utilisation(r, l));
  }
  return ferror(f) ? -1 : 0;
}

int tool_ici_stats_json(const tool_ici_run *r, FILE *f) {
  uint64_t total = tool_ici_cycles(r);
  fprintf(f, "{\"target\": \"%s\", \"cores\": %d, \"cycles\": %llu, \"seconds\": %.9g,\n",
          r->target, r->ncores, (unsigned long long)total,
          r->clock_hz > 0 ? (double)total / r->clock_hz : 0);
  fputs(" \"per_core\": [", f);
  for (int c = 0; c < r->ncores; c++) {
    const tpurt_stats_t *s = &r->cores[c];
    fprintf(f, "%s\n  {\"core\": %d, \"cycles\": %llu, \"seconds\": %.9g", c ? "," : "", c,
            (unsigned long long)s->cycles, s->seconds);
#define TOOL_ICI_KEY_(field, kind) fprintf(f, ", \"" #field "\": %llu", (unsigned long long)s->field);
    TPURT_RUN_COUNTERS(TOOL_ICI_KEY_)
#undef TOOL_ICI_KEY_
    fprintf(f, ", \"compute_cycles\": %llu}", (unsigned long long)tool_ici_compute_cycles(s));
  }
  fputs("],\n \"links\": [", f);
  int first = 1;
  for (size_t k = 0; k < r->nlinks; k++) {
    const tpurt_link_stats_t *l = &r->links[k];
    if (!l->transfers) continue;
    fprintf(f,
            "%s\n  {\"id\": %zu, \"name\": \"%s\", \"direction\": \"%s\", \"chip\": %d, "
            "\"to_chip\": %d, \"core\": %d, \"transfers\": %llu, \"bytes\": %llu, "
            "\"busy_cycles\": %llu, \"utilisation\": %.6g}",
            first ? "" : ",", k, l->name, l->direction, l->chip, l->to_chip, l->core,
            (unsigned long long)l->transfers, (unsigned long long)l->bytes,
            (unsigned long long)l->busy_cycles, tool_ici_utilisation(r, l));
    first = 0;
  }
  fputs("],\n \"all_reduce\": ", f);
  tool_ici_allreduce_t ar;
  if (tool_ici_allreduce(r, &ar))
    fprintf(f,
            "{\"bytes\": %lld, \"seconds\": %.9g, \"bus_bandwidth\": %.9g, \"bound_seconds\": "
            "%.9g, \"bound_fraction\": %.9g}}\n",
            (long long)ar.bytes, ar.seconds, ar.bus_bandwidth, ar.bound_seconds,
            ar.bound_fraction);
  else
    fputs("null}\n", f);
  return ferror(f) ? -1 : 0;
}
