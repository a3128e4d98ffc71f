/* aotc.c: the sample's build-time compiler: HLO text to an object file and
 * a C header through cpu_compile_aot (what `tpucc compile --target=cpu -o
 * model.o --emit-header=model.h` does once the CLI offers it).
 *
 *   aotc IN.hlo OUT.o OUT.h ENTRY_NAME */
#include "backend/llvm/cpu.h"
#include "frontend/frontend.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: aotc IN.hlo OUT.o OUT.h ENTRY_NAME\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    fprintf(stderr, "aotc: cannot open %s\n", argv[1]);
    return 2;
  }
  strbuf text;
  sb_init(&text);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) sb_putn(&text, buf, n);
  fclose(f);
  diag *d = diag_create();
  diag_set_stream(d, stderr);
  ir_module *m = fe_parse_hlo(argv[1], sb_str(&text), text.len, d);
  int rc = 0;
  if (!m) {
    rc = 2;
  } else {
    cpu_options o;
    cpu_options_init(&o);
    o.entry_name = argv[4];
    /* A portable object: no host-specific instructions beyond x86-64-v2. */
    o.cpu_name = "x86-64";
    o.cpu_features = "";
    char err[512];
    if (cpu_compile_aot(m, &o, argv[2], argv[3], err, sizeof err) != ST_OK) {
      fprintf(stderr, "aotc: %s\n", err);
      rc = 1;
    }
  }
  ir_module_destroy(m);
  diag_destroy(d);
  sb_free(&text);
  return rc;
}
