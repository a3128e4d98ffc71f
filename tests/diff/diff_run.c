/* diff_run.c: the oracle and target runs of the differential tests
 * (diff_run.h). */
#include "tests/diff/diff_run.h"
#include "backend/tpu/tpu.h"
#include "passes/passes.h"

#include <stdio.h>

base_status diff_eval(const ir_module *m, bool tpu, ir_literal **args, int nargs, arena *a,
                      ir_literal **out, char *err, size_t errlen) {
  ir_eval_options eo;
  ir_eval_options_init(&eo);
  eo.tpu_numerics = tpu;
  return ir_eval(m, &eo, args, nargs, a, out, err, errlen);
}

ir_module *diff_optimise(const ir_module *m, int opt_level, const char *passes, char *err,
                         size_t errlen) {
  ir_module *o = ir_module_clone(m);
  diag *d = diag_create();
  pass_ctx pc;
  memset(&pc, 0, sizeof pc);
  pc.d = d;
  pc.opt_level = opt_level;
  pc.verify = true;
  if (pass_run(o, &pc, passes, NULL) != ST_OK) {
    snprintf(err, errlen, "-O%d pipeline failed: %s", opt_level, diag_first_message(d));
    ir_module_destroy(o);
    o = NULL;
  }
  diag_destroy(d);
  return o;
}

void diff_print_module(const ir_module *m) {
  strbuf b;
  sb_init(&b);
  ir_print_module(&b, m);
  fprintf(stderr, "%s\n", sb_str(&b));
  sb_free(&b);
}

diff_outcome diff_run_tpu(const ir_module *m, const char *target, ir_literal **args, int nargs,
                          arena *a, ir_literal **out, char *err, size_t errlen) {
  tpu_options o;
  tpu_options_init(&o);
  o.target = target;
  diag *d = diag_create();
  tpub_image *img = NULL;
  diff_outcome r = DIFF_RAN;
  if (tpu_compile(m, &o, d, &img, NULL) != ST_OK) {
    snprintf(err, errlen, "%s", diag_text(d));
    r = DIFF_REFUSED;
  } else if (tpu_execute(img, target, m, args, nargs, a, out, NULL, NULL, err, errlen) != ST_OK) {
    r = DIFF_FAILED;
  }
  tpub_free(img);
  diag_destroy(d);
  return r;
}

#ifdef HAVE_LLVM
diff_outcome diff_run_cpu(const ir_module *m, cpu_numerics numerics, ir_literal **args, int nargs,
                          arena *a, ir_literal **out, char *err, size_t errlen) {
  cpu_options o;
  cpu_options_init(&o);
  o.numerics = numerics;
  o.threads = 1;
  cpu_exe *x = NULL;
  diff_outcome r = DIFF_RAN;
  if (cpu_compile(m, &o, &x, err, errlen) != ST_OK) r = DIFF_REFUSED;
  else if (cpu_execute(x, args, nargs, a, out, err, errlen) != ST_OK) r = DIFF_FAILED;
  cpu_exe_destroy(x);
  return r;
}
#endif
