/* grad_check.c: `tpucc grad` semantics over whole modules. For every
 * .hlo file given (directories scanned, files sorted): the VJP module
 * (ir_grad_module, then again with remat) must verify, print as HLO that
 * reads back, and agree with central finite differences on the evaluator
 * (grad_fd.h: in float64 where the module widens to it; up to 6 sampled
 * elements per parameter). A module is
 * skipped, with the reason, when the transformation refuses it (an op
 * without a gradient is a located error: the message must carry
 * file:line:col), when the evaluator refuses it, or when it has no
 * floating-point parameter.
 *
 *   grad_check [--min-checked=N] PATH...
 *
 * Exit status 0 when every module passed or was skipped and at least N
 * modules (default 1) were checked; 1 otherwise. */
#include <stdio.h>
#include <stdlib.h>

#include "frontend/frontend.h"
#include "tests/passes/hlo_files.h"
#include "tests/passes/grad_fd.h"

static int failures, checked, skipped, in_f64;

static bool has_float_param(const ir_module *m) {
  const ir_comp *e = &m->comps.v[m->entry];
  for (int p = 0; p < e->nparams; p++)
    if (ir_type_is_float(e->insts.v[e->params[p]].shape->type)) return true;
  return false;
}

/* The VJP prints as HLO that reads back and verifies. */
static bool round_trips(const ir_module *m, const char *path) {
  ir_module *v;
  char err[512];
  if (ir_grad_module(m, NULL, &v, err, sizeof err) != ST_OK) return false;
  strbuf b;
  sb_init(&b);
  ir_print_module(&b, v);
  diag *d = diag_create();
  ir_module *back = fe_parse_hlo(path, sb_str(&b), b.len, d);
  if (!back) fprintf(stderr, "%s: the vjp does not read back:\n%s", path, diag_text(d));
  bool ok = back != NULL;
  ir_module_destroy(back);
  diag_destroy(d);
  sb_free(&b);
  ir_module_destroy(v);
  return ok;
}

static void check_file(const char *path) {
  char *text, err[512];
  size_t len;
  if (ir_file_read(path, 1 << 26, &text, &len, err, sizeof err) != ST_OK) {
    fprintf(stderr, "FAIL %s: %s\n", path, err);
    failures++;
    return;
  }
  diag *d = diag_create();
  ir_module *m = fe_parse_hlo(path, text, len, d);
  free(text);
  diag_destroy(d);
  if (!m || !has_float_param(m)) {
    printf("SKIP %s: %s\n", path, m ? "no floating-point parameter" : "not imported");
    skipped++;
    ir_module_destroy(m);
    return;
  }
  char msg[1024];
  int n = 0, nr = 0;
  gfd_options o;
  gfd_options_init(&o);
  o.max_elems = 6;
  bool f64 = false;
  gfd_outcome r = gfd_check_f64(m, &o, msg, sizeof msg, &n, &f64);
  if (r == GFD_PASS) {
    o.remat = true;
    r = gfd_check(m, &o, msg, sizeof msg, &nr);
  }
  if (r == GFD_PASS && !round_trips(m, path)) r = GFD_FAIL;
  if (r == GFD_SKIP && !strncmp(msg, "grad: ", 6) && strstr(msg, "not supported") && !strstr(msg, ".hlo:")) {
    fprintf(stderr, "FAIL %s: refusal without a location: %s\n", path, msg);
    r = GFD_FAIL;
  }
  switch (r) {
  case GFD_PASS:
    printf("ok   %s (%d elements, %d under remat; %s)\n", path, n, nr, f64 ? "f64" : "as typed");
    checked++;
    in_f64 += f64;
    break;
  case GFD_SKIP:
    printf("SKIP %s: %s\n", path, msg);
    skipped++;
    break;
  default:
    fprintf(stderr, "FAIL %s: %s\n", path, msg);
    failures++;
  }
  ir_module_destroy(m);
}

int main(int argc, char **argv) {
  long min_checked = 1;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--min-checked=", 14))
      min_checked = strtol(argv[i] + 14, NULL, 10);
    else
      tp_for_each_hlo(argv[i], check_file);
  }
  printf("%d checked (%d in f64), %d skipped, %d failed\n", checked, in_f64, skipped, failures);
  if (checked < min_checked) fprintf(stderr, "only %d modules checked (want %ld)\n", checked, min_checked);
  return failures || checked < min_checked ? 1 : 0;
}
