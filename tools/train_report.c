/* train_report.c: the figures of a training run (train.h, "results"):
 * accuracy, per-class and macro F1 from the confusion matrix, the metrics
 * JSON and the SVG of loss and accuracy per epoch. */
#include "tools/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double train_accuracy(const train_confusion *c) {
  int64_t right = 0, all = 0;
  for (int i = 0; i < c->classes; i++)
    for (int j = 0; j < c->classes; j++) {
      all += c->counts[i * c->classes + j];
      if (i == j) right += c->counts[i * c->classes + j];
    }
  return all ? (double)right / (double)all : 0;
}

/* F1 of class k: 2 tp / (2 tp + fp + fn), 0 when the class never occurs
 * and is never predicted. */
static double f1_of(const train_confusion *c, int k) {
  int64_t tp = c->counts[k * c->classes + k], fp = 0, fn = 0;
  for (int i = 0; i < c->classes; i++) {
    if (i == k) continue;
    fp += c->counts[i * c->classes + k];
    fn += c->counts[k * c->classes + i];
  }
  return tp ? 2.0 * (double)tp / (double)(2 * tp + fp + fn) : 0;
}

double train_macro_f1(const train_confusion *c, double *f1) {
  double s = 0;
  for (int k = 0; k < c->classes; k++) {
    double v = f1_of(c, k);
    if (f1) f1[k] = v;
    s += v;
  }
  return c->classes ? s / c->classes : 0;
}

void train_print_confusion(FILE *f, const train_confusion *c) {
  fprintf(f, "class     ");
  for (int k = 0; k < c->classes; k++) fprintf(f, "%6d", k);
  fprintf(f, "\nF1        ");
  for (int k = 0; k < c->classes; k++) fprintf(f, "%6.3f", f1_of(c, k));
  fprintf(f, "\nconfusion (rows: true class, columns: predicted)\n");
  for (int i = 0; i < c->classes; i++) {
    fprintf(f, "%8d  ", i);
    for (int j = 0; j < c->classes; j++) fprintf(f, "%6lld", (long long)c->counts[i * c->classes + j]);
    fputc('\n', f);
  }
}

static void json_str(strbuf *b, const char *s) {
  sb_putc(b, '"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') sb_putc(b, '\\');
    if ((unsigned char)*s < 0x20)
      sb_printf(b, "\\u%04x", (unsigned char)*s);
    else
      sb_putc(b, *s);
  }
  sb_putc(b, '"');
}

bool train_write_metrics(const char *path, const train_options *o, const train_epoch *ep, int nep,
                         const train_confusion *c, double train_seconds, double images_per_second,
                         double compile_seconds, long steps, char *err, size_t errlen) {
  strbuf b;
  sb_init(&b);
  sb_puts(&b, "{\n  \"model\": ");
  json_str(&b, o->model);
  sb_puts(&b, ",\n  \"target\": ");
  json_str(&b, o->target);
  sb_printf(&b, ",\n  \"optimizer\": \"%s\",\n  \"lr\": %.9g,\n  \"schedule\": \"%s\",\n",
            train_opt_name(o->h.opt), o->h.lr, train_sched_name(o->h.sched));
  sb_printf(&b, "  \"batch\": %ld,\n  \"precision\": \"%s\",\n  \"seed\": %llu,\n", o->batch,
            o->precision, (unsigned long long)o->seed);
  const train_epoch *last = nep ? &ep[nep - 1] : NULL;
  double *f1 = calloc((size_t)c->classes + 1, sizeof *f1);
  if (!f1) base_out_of_memory(0);
  double macro = train_macro_f1(c, f1);
  sb_printf(&b, "  \"test_accuracy\": %.6f,\n  \"macro_f1\": %.6f,\n  \"test_loss\": %.6f,\n",
            last ? last->test_accuracy : 0, macro, last ? last->test_loss : 0);
  sb_printf(&b, "  \"train_seconds\": %.3f,\n  \"images_per_second\": %.1f,\n", train_seconds,
            images_per_second);
  sb_printf(&b, "  \"compile_seconds\": %.3f,\n  \"steps\": %ld,\n  \"per_class_f1\": [",
            compile_seconds, steps);
  for (int k = 0; k < c->classes; k++) sb_printf(&b, "%s%.6f", k ? ", " : "", f1[k]);
  sb_puts(&b, "],\n  \"confusion\": [");
  for (int i = 0; i < c->classes; i++) {
    sb_puts(&b, i ? ",\n    [" : "\n    [");
    for (int j = 0; j < c->classes; j++)
      sb_printf(&b, "%s%lld", j ? ", " : "", (long long)c->counts[i * c->classes + j]);
    sb_putc(&b, ']');
  }
  sb_puts(&b, "],\n  \"epochs\": [");
  for (int i = 0; i < nep; i++)
    sb_printf(&b,
              "%s\n    {\"epoch\": %d, \"train_loss\": %.6f, \"test_loss\": %.6f, "
              "\"test_accuracy\": %.6f, \"macro_f1\": %.6f, \"seconds\": %.3f, "
              "\"images_per_second\": %.1f, \"device_seconds\": %.6f, \"cpu_seconds\": %.3f, "
              "\"mxu_utilization\": %.4f}",
              i ? "," : "", i + 1, ep[i].train_loss, ep[i].test_loss, ep[i].test_accuracy,
              ep[i].macro_f1, ep[i].seconds, ep[i].images_per_second, ep[i].device_seconds,
              ep[i].cpu_seconds, ep[i].mxu_utilization);
  sb_puts(&b, "\n  ]\n}\n");
  free(f1);
  bool ok = ir_file_write(path, b.s, b.len, err, errlen) == ST_OK;
  sb_free(&b);
  return ok;
}

/* One panel: series[s][i] for i < n epochs, within [lo, hi], at (x0, y0). */
static void panel(strbuf *b, int x0, int y0, const char *title, const double *const *series,
                  const char *const *names, const char *const *colors, int ns, int n) {
  const int w = 360, h = 220;
  double lo = INFINITY, hi = -INFINITY;
  for (int s = 0; s < ns; s++)
    for (int i = 0; i < n; i++) {
      lo = fmin(lo, series[s][i]);
      hi = fmax(hi, series[s][i]);
    }
  if (!(hi > lo)) hi = lo + 1;
  sb_printf(b, "<g transform=\"translate(%d,%d)\">\n", x0, y0);
  sb_printf(b, "<rect width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n", w, h);
  sb_printf(b, "<text x=\"0\" y=\"-8\" font-size=\"13\">%s</text>\n", title);
  sb_printf(b, "<text x=\"-6\" y=\"10\" font-size=\"10\" text-anchor=\"end\">%.3f</text>\n", hi);
  sb_printf(b, "<text x=\"-6\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">%.3f</text>\n", h, lo);
  sb_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">epoch</text>\n",
            w / 2, h + 16);
  for (int s = 0; s < ns; s++) {
    sb_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colors[s]);
    for (int i = 0; i < n; i++)
      sb_printf(b, "%.1f,%.1f ", n > 1 ? (double)w * i / (n - 1) : w / 2.0,
                (double)h * (1 - (series[s][i] - lo) / (hi - lo)));
    sb_puts(b, "\"/>\n");
    sb_printf(b, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"%s\">%s</text>\n", w - 110,
              18 + 14 * s, colors[s], names[s]);
  }
  sb_puts(b, "</g>\n");
}

bool train_write_plot(const char *path, const char *title, const train_epoch *ep, int nep,
                      char *err, size_t errlen) {
  double *v = calloc((size_t)(4 * nep) + 1, sizeof *v);
  if (!v) base_out_of_memory(0);
  for (int i = 0; i < nep; i++) {
    v[i] = ep[i].train_loss;
    v[nep + i] = ep[i].test_loss;
    v[2 * nep + i] = ep[i].test_accuracy;
    v[3 * nep + i] = ep[i].macro_f1;
  }
  strbuf b;
  sb_init(&b);
  sb_puts(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"860\" height=\"320\" "
              "font-family=\"sans-serif\">\n<text x=\"20\" y=\"22\" font-size=\"14\">");
  for (const char *s = title; *s; s++) {
    if (*s == '<') sb_puts(&b, "&lt;");
    else if (*s == '&') sb_puts(&b, "&amp;");
    else sb_putc(&b, *s);
  }
  sb_puts(&b, "</text>\n");
  const double *loss[2] = {v, v + nep}, *acc[2] = {v + 2 * nep, v + 3 * nep};
  const char *ln[2] = {"train loss", "test loss"}, *an[2] = {"test accuracy", "macro-F1"};
  const char *col[2] = {"#1f77b4", "#d62728"};
  panel(&b, 60, 60, "loss", loss, ln, col, 2, nep);
  panel(&b, 480, 60, "test accuracy, macro-F1", acc, an, col, 2, nep);
  sb_puts(&b, "</svg>\n");
  bool ok = ir_file_write(path, b.s, b.len, err, errlen) == ST_OK;
  sb_free(&b);
  free(v);
  return ok;
}
