/* cpu_jit: JIT latency, the time from IR to runnable code, over a folder of
 * HLO modules (the corpus, the samples).
 *
 *   bench/cpu_jit DIR [opt_level]      (default opt level 3)
 *
 * For each .hlo file that parses: cpu_compile (no cache; compile threads
 * as TPUCC_CPU_COMPILE_THREADS says, default one per online CPU),
 * reporting the phases of cpu_exe_info (lowering to LLVM IR, the LLVM pass
 * pipeline and machine code generation of all parts (wall), linking in
 * LLJIT; the CPU seconds of optimisation and code generation summed over
 * the parts). Prints one line per module and the median, 90th percentile
 * and maximum of the totals. */
#include "backend/llvm/cpu.h"
#include "bench/cpu_bench.h"
#include "frontend/frontend.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cpu_jit DIR [opt_level]\n");
    return 2;
  }
  int lvl = argc > 2 ? atoi(argv[2]) : 3;
  DIR *d = opendir(argv[1]);
  if (!d) {
    fprintf(stderr, "cpu_jit: cannot open %s\n", argv[1]);
    return 2;
  }
  char **names = NULL;
  int nn = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l < 5 || strcmp(de->d_name + l - 4, ".hlo") != 0) continue;
    names = realloc(names, sizeof(char *) * (size_t)(nn + 1));
    names[nn++] = strdup(de->d_name);
  }
  closedir(d);
  qsort(names, (size_t)nn, sizeof(char *), cmp_str);
  double *tot = calloc((size_t)nn + 1, sizeof(double));
  double sum_l = 0, sum_o = 0, sum_j = 0;
  int n = 0;
  for (int i = 0; i < nn; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], names[i]);
    FILE *f = fopen(path, "rb");
    strbuf text;
    sb_init(&text);
    char buf[65536];
    size_t k;
    while (f && (k = fread(buf, 1, sizeof buf, f)) > 0) sb_putn(&text, buf, k);
    if (f) fclose(f);
    diag *dg = diag_create();
    ir_module *m = fe_parse_hlo(path, sb_str(&text), text.len, dg);
    if (m) {
      cpu_options o;
      cpu_options_init(&o);
      o.threads = 1;
      o.opt_level = lvl;
      const char *ct = getenv("TPUCC_CPU_COMPILE_THREADS");
      if (ct) o.compile_threads = atoi(ct);
      cpu_exe *x = NULL;
      char err[256];
      if (cpu_compile(m, &o, &x, err, sizeof err) == ST_OK) {
        cpu_exe_info info;
        cpu_exe_get_info(x, &info);
        double t = info.lower_seconds + info.build_seconds + info.jit_seconds;
        printf("%-70s %7.1f ms (lower %.1f, optimise+codegen %.1f in %d part%s, link %.1f; CPU: "
               "optimise %.1f, codegen %.1f; %d kernels)\n",
               names[i], t * 1e3, info.lower_seconds * 1e3, info.build_seconds * 1e3, (int)info.parts,
               info.parts == 1 ? "" : "s", info.jit_seconds * 1e3, info.opt_seconds * 1e3,
               info.codegen_seconds * 1e3, info.kernels);
        tot[n++] = t;
        sum_l += info.lower_seconds;
        sum_o += info.build_seconds;
        sum_j += info.jit_seconds;
      } else {
        printf("%-70s failed: %s\n", names[i], err);
      }
      cpu_exe_destroy(x);
      ir_module_destroy(m);
    }
    diag_destroy(dg);
    sb_free(&text);
    free(names[i]);
  }
  free(names);
  if (n) {
    qsort(tot, (size_t)n, sizeof(double), bench_cmp_double);
    printf("cpu_jit O%d: %d modules, median %.1f ms, p90 %.1f ms, max %.1f ms; "
           "time split: lower %.0f%%, optimise+codegen %.0f%%, link %.0f%%\n",
           lvl, n, tot[n / 2] * 1e3, tot[(n * 9) / 10] * 1e3, tot[n - 1] * 1e3,
           100 * sum_l / (sum_l + sum_o + sum_j), 100 * sum_o / (sum_l + sum_o + sum_j),
           100 * sum_j / (sum_l + sum_o + sum_j));
  }
  free(tot);
  return 0;
}
