/* report.c: per-op report writers of `tpucc run --report/--roofline` and
 * the Table 3 breakdown of --stats (contract in report.h; every column is
 * documented in docs/profiling.md). Pure functions of a finished run. */
#include "tools/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double tool_report_mxu_peak(const tool_report_target *t) {
  return 2.0 * t->mxus * (double)t->mxu_rows * (double)t->mxu_cols * t->clock_hz;
}
double tool_report_vpu_peak(const tool_report_target *t) { return 8.0 * 128.0 * t->clock_hz; }

void tool_report_row_of(const tool_report *r, size_t i, tool_report_row *o) {
  const tpurt_op_stats_t *s = &r->ops[i];
  const tpurt_op_info_t *in = &r->info[i];
  memset(o, 0, sizeof *o);
  o->cycles = s->end_cycle > s->first_cycle ? s->end_cycle - s->first_cycle : 0;
  o->share = r->stats->cycles ? (double)s->exclusive_cycles / (double)r->stats->cycles : 0;
  o->stall_other = s->stall_sync + s->stall_hbm + s->stall_queue_full;
  o->useful_macs = in->flops / 2;
  /* A program without an op table (assembled by hand): the compiler's
   * count is unknown, every array MAC counts as useful. */
  if (!in->flops && !strcmp(in->name, "(program)")) o->useful_macs = s->mxu_macs;
  o->flops = 2.0 * (double)o->useful_macs + (double)s->vpu_element_ops;
  uint64_t bytes = s->hbm_read_bytes + s->hbm_write_bytes;
  o->intensity = bytes ? o->flops / (double)bytes : -1;
  double secs = (double)o->cycles / r->t.clock_hz;
  o->achieved = secs > 0 ? o->flops / secs : 0;
  o->peak = o->useful_macs ? tool_report_mxu_peak(&r->t) : tool_report_vpu_peak(&r->t);
  if (o->flops <= 0) {
    o->bound = "-";
    return;
  }
  double mem = o->intensity < 0 ? INFINITY : r->t.hbm_bw * o->intensity;
  o->attainable = mem < o->peak ? mem : o->peak;
  o->bound = mem < o->peak ? "memory" : "compute";
  o->roofline_fraction = o->attainable > 0 ? o->achieved / o->attainable : 0;
}

/* A CSV field: quoted when it holds a comma, quote or newline. */
static void csv_str(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\n")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

static void source_of(const tpurt_op_info_t *in, char *buf, size_t n) {
  if (in->file[0] && in->line)
    snprintf(buf, n, "%s:%u:%u", in->file, in->line, in->col);
  else
    snprintf(buf, n, "%s", in->file);
}

int tool_report_csv(const tool_report *r, FILE *f) {
  fputs("op,name,kind,source,instructions,first_cycle,end_cycle,cycles,exclusive_cycles,share,"
        "stall_weight_load,stall_dma_wait,stall_dependency,stall_other,mxu_busy_cycles,mxu_macs,"
        "useful_macs,vpu_instructions,vpu_element_ops,hbm_read_bytes,hbm_write_bytes,"
        "hbm_busy_cycles,flops,intensity,achieved_flops,attainable_flops,roofline_fraction,"
        "bound\n",
        f);
  for (size_t i = 0; i < r->nops; i++) {
    const tpurt_op_stats_t *s = &r->ops[i];
    if (!s->instructions) continue;
    tool_report_row w;
    tool_report_row_of(r, i, &w);
    char src[1200];
    source_of(&r->info[i], src, sizeof src);
    fprintf(f, "%zu,", i);
    csv_str(f, r->info[i].name);
    fputc(',', f);
    csv_str(f, r->info[i].kind);
    fputc(',', f);
    csv_str(f, src);
    fprintf(f,
            ",%llu,%llu,%llu,%llu,%llu,%.6f,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,"
            "%llu,%llu,%.0f,",
            (unsigned long long)s->instructions, (unsigned long long)s->first_cycle,
            (unsigned long long)s->end_cycle, (unsigned long long)w.cycles,
            (unsigned long long)s->exclusive_cycles, w.share,
            (unsigned long long)s->stall_weight_load, (unsigned long long)s->stall_dma,
            (unsigned long long)s->stall_dependency, (unsigned long long)w.stall_other,
            (unsigned long long)s->mxu_busy_cycles, (unsigned long long)s->mxu_macs,
            (unsigned long long)w.useful_macs, (unsigned long long)s->vpu_instructions,
            (unsigned long long)s->vpu_element_ops, (unsigned long long)s->hbm_read_bytes,
            (unsigned long long)s->hbm_write_bytes, (unsigned long long)s->hbm_busy_cycles,
            w.flops);
    if (w.intensity < 0)
      fputs("inf", f);
    else
      fprintf(f, "%.6g", w.intensity);
    fprintf(f, ",%.6g,%.6g,%.6f,%s\n", w.achieved, w.attainable, w.roofline_fraction, w.bound);
  }
  return ferror(f) ? -1 : 0;
}

static const char *human(double v, char *buf, size_t n) {
  static const char *suf[] = {"", "k", "M", "G", "T", "P"};
  int k = 0;
  while (fabs(v) >= 1000 && k < 5) {
    v /= 1000;
    k++;
  }
  snprintf(buf, n, k ? "%.3g%s" : "%.0f%s", v, suf[k]);
  return buf;
}

int tool_report_table(const tool_report *r, FILE *f) {
  fprintf(f, "per-op report (target %s, %llu cycles)\n", r->t.spec,
          (unsigned long long)r->stats->cycles);
  fprintf(f, "%-28s %-18s %9s %6s %8s %8s %8s %8s %8s %8s %8s %8s %7s %s\n", "op", "source",
          "cycles", "share", "st.wt", "st.dma", "st.dep", "st.oth", "mxu.busy", "useful", "vpu",
          "hbm.rd", "AI", "bound");
  uint64_t excl = 0;
  for (size_t i = 0; i < r->nops; i++) {
    const tpurt_op_stats_t *s = &r->ops[i];
    if (!s->instructions) continue;
    tool_report_row w;
    tool_report_row_of(r, i, &w);
    excl += s->exclusive_cycles;
    const tpurt_op_info_t *in = &r->info[i];
    char src[64], b[8][32];
    const char *base = strrchr(in->file, '/');
    base = base ? base + 1 : in->file;
    if (in->line)
      snprintf(src, sizeof src, "%.50s:%u", base, in->line);
    else
      snprintf(src, sizeof src, "%.60s", base);
    char ai[32];
    if (w.intensity < 0)
      snprintf(ai, sizeof ai, "inf");
    else
      snprintf(ai, sizeof ai, "%.3g", w.intensity);
    fprintf(f, "%-28.28s %-18.18s %9llu %5.1f%% %8s %8s %8s %8s %8s %8s %8s %8s %7s %s\n", in->name,
            src, (unsigned long long)w.cycles, 100 * w.share,
            human((double)s->stall_weight_load, b[0], 32), human((double)s->stall_dma, b[1], 32),
            human((double)s->stall_dependency, b[2], 32), human((double)w.stall_other, b[3], 32),
            human((double)s->mxu_busy_cycles, b[4], 32), human((double)w.useful_macs, b[5], 32),
            human((double)s->vpu_instructions, b[6], 32),
            human((double)s->hbm_read_bytes, b[7], 32), ai, w.bound);
  }
  fprintf(f, "%-28s %-18s %9llu %5.1f%%  (share: exclusive cycles, they sum to the run)\n", "total",
          "", (unsigned long long)r->stats->cycles,
          r->stats->cycles ? 100.0 * (double)excl / (double)r->stats->cycles : 0);
  return ferror(f) ? -1 : 0;
}


/* ---- roofline SVG ---------------------------------------------------------- */

enum { W = 900, H = 600, ML = 90, MR = 30, MT = 50, MB = 70 };

typedef struct axes {
  double x0, x1, y0, y1; /* log10 ranges */
} axes;

static double px(const axes *a, double x) {
  return ML + (log10(x) - a->x0) / (a->x1 - a->x0) * (W - ML - MR);
}
static double py(const axes *a, double y) {
  return H - MB - (log10(y) - a->y0) / (a->y1 - a->y0) * (H - MT - MB);
}

static void xml_str(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '&':
      fputs("&amp;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    default:
      if ((unsigned char)*s >= 0x20) fputc(*s, f);
    }
  }
}

/* A ceiling: horizontal at peak from the ridge, bandwidth slope below it. */
static void ceiling(FILE *f, const axes *a, double peak, double bw, const char *color,
                    const char *dash, const char *label) {
  double lo = pow(10, a->x0), hi = pow(10, a->x1), ridge = peak / bw;
  double xs = ridge < lo ? lo : ridge;
  fprintf(f,
          "<polyline class=\"ceiling\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s%s%s "
          "points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
          color, dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "", px(a, lo),
          py(a, bw * lo < peak ? bw * lo : peak), px(a, xs), py(a, peak), px(a, hi), py(a, peak));
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"%s\" text-anchor=\"end\">",
          px(a, hi) - 4, py(a, peak) - 6, color);
  xml_str(f, label);
  fputs("</text>\n", f);
}

int tool_report_svg(const tool_report *r, FILE *f) {
  const tool_report_target *t = &r->t;
  double mp = tool_report_mxu_peak(t), vp = tool_report_vpu_peak(t), bw = t->hbm_bw;
  /* Axis ranges: decades around the ridge points and every op. */
  double xmin = 0.1, xmax = 1e4, ymin = 1e9, ymax = mp * 3;
  size_t nmark = 0;
  for (size_t i = 0; i < r->nops; i++) {
    if (!r->ops[i].instructions) continue;
    tool_report_row w;
    tool_report_row_of(r, i, &w);
    if (w.flops <= 0 || w.cycles == 0) continue;
    nmark++;
    if (w.intensity > 0 && w.intensity < xmin) xmin = w.intensity;
    if (w.intensity > xmax) xmax = w.intensity;
    if (w.achieved > 0 && w.achieved < ymin) ymin = w.achieved;
  }
  axes a = {floor(log10(xmin)), ceil(log10(xmax)) + (xmax >= 1e4 ? 1 : 0), floor(log10(ymin)),
            ceil(log10(ymax))};
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
          "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n"
          "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
          W, H, W, H, W, H);
  fprintf(f, "<text x=\"%d\" y=\"28\" font-size=\"16\" text-anchor=\"middle\">Roofline of ", W / 2);
  xml_str(f, t->spec);
  fprintf(f, " (%llu cycles; MXU peak %.3g FLOP/s, HBM %.3g B/s)</text>\n",
          (unsigned long long)r->stats->cycles, mp, bw);
  /* Grid and axes: one line per decade. */
  for (int d = (int)a.x0; d <= (int)a.x1; d++) {
    double x = px(&a, pow(10, d));
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>\n"
            "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">1e%d</text>\n",
            x, MT, x, H - MB, x, H - MB + 16, d);
  }
  for (int d = (int)a.y0; d <= (int)a.y1; d++) {
    double y = py(&a, pow(10, d));
    fprintf(f,
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
            "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">1e%d</text>\n",
            ML, y, W - MR, y, ML - 6, y + 4, d);
  }
  fprintf(f,
          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"black\"/>\n"
          "<text x=\"%d\" y=\"%d\" font-size=\"13\" text-anchor=\"middle\">arithmetic intensity "
          "(FLOP per HBM byte, log)</text>\n"
          "<text x=\"20\" y=\"%d\" font-size=\"13\" text-anchor=\"middle\" "
          "transform=\"rotate(-90 20 %d)\">achieved FLOP/s (log)</text>\n",
          ML, MT, W - ML - MR, H - MT - MB, (ML + W - MR) / 2, H - 20, (MT + H - MB) / 2,
          (MT + H - MB) / 2);
  char lab[128];
  snprintf(lab, sizeof lab, "MXU peak %.3g FLOP/s (ridge %.0f FLOP/B)", mp, mp / bw);
  ceiling(f, &a, mp, bw, "#c0392b", NULL, lab);
  snprintf(lab, sizeof lab, "vector unit %.3g FLOP/s (ridge %.1f FLOP/B)", vp, vp / bw);
  ceiling(f, &a, vp, bw, "#2874a6", "6,4", lab);
  /* Markers: labels for the ops that took the most cycles. */
  uint64_t *ex = calloc(nmark + 1, sizeof *ex);
  size_t k = 0;
  for (size_t i = 0; i < r->nops; i++) {
    tool_report_row w;
    if (!r->ops[i].instructions) continue;
    tool_report_row_of(r, i, &w);
    if (w.flops <= 0 || w.cycles == 0) continue;
    if (ex) ex[k++] = r->ops[i].exclusive_cycles;
  }
  uint64_t cut = 0;
  if (ex && nmark > 12) { /* label the 12 biggest */
    for (size_t i = 0; i < nmark; i++)
      for (size_t j = i + 1; j < nmark; j++)
        if (ex[j] > ex[i]) {
          uint64_t tmp = ex[i];
          ex[i] = ex[j];
          ex[j] = tmp;
        }
    cut = ex[11];
  }
  free(ex);
  size_t skipped = 0;
  for (size_t i = 0; i < r->nops; i++) {
    const tpurt_op_stats_t *s = &r->ops[i];
    if (!s->instructions) continue;
    tool_report_row w;
    tool_report_row_of(r, i, &w);
    if (w.flops <= 0 || w.cycles == 0) {
      skipped++;
      continue;
    }
    double xi = w.intensity < 0 ? pow(10, a.x1) : w.intensity;
    double x = px(&a, xi), y = py(&a, w.achieved > 0 ? w.achieved : pow(10, a.y0));
    const char *col = strcmp(w.bound, "memory") ? "#c0392b" : "#2874a6";
    fprintf(f,
            "<circle class=\"op\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" "
            "fill-opacity=\"0.7\"><title>",
            x, y, col);
    xml_str(f, r->info[i].name);
    fprintf(f, " (%s): %.3g FLOP/B, %.3g FLOP/s, %.1f%% of its roofline, %.1f%% of cycles", w.bound,
            w.intensity < 0 ? INFINITY : w.intensity, w.achieved, 100 * w.roofline_fraction,
            100 * w.share);
    fputs("</title></circle>\n", f);
    if (s->exclusive_cycles >= cut) {
      fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">", x + 7, y - 4);
      xml_str(f, r->info[i].name);
      fputs("</text>\n", f);
    }
  }
  fprintf(f,
          "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#555\">%zu op%s plotted (red: "
          "compute-bound, blue: memory-bound); %zu op%s without FLOPs (data movement) not "
          "plotted</text>\n</svg>\n",
          ML, H - 40, nmark, nmark == 1 ? "" : "s", skipped, skipped == 1 ? "" : "s");
  return ferror(f) ? -1 : 0;
}
