/* cmd_dump_module.c: `tpucc dump-module`: print a .tpub program's header,
 * signature, sections and disassembly (which `tpucc asm` turns back into
 * the same file). Built into `tpucc`, or on its own as `tpucc-dump-module`
 * when compiled with -DTPUCC_STANDALONE_MAIN. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "isa.h"
#include "target.h"
#include "tpub.h"

int tpucc_cmd_dump_module(int argc, char **argv);
void tpucc_help_dump_module(FILE *f);

void tpucc_help_dump_module(FILE *f) {
  fputs("usage: tpucc dump-module FILE.tpub [--target=SPEC] [--asm]\n"
        "\n"
        "Checks a .tpub program (container, checksum, and verification against\n"
        "its own target or SPEC) and prints its header, signature, sections, the\n"
        "op table (which HLO op or fusion each code range serves, with its source\n"
        "and FLOPs) and the disassembly. With --asm only the assembly text is\n"
        "printed.\n"
        "\n"
        "The file is checked (a regular file of at most 2 GiB starting with the\n"
        ".tpub magic) before it is read.\n"
        "\n"
        "exit status: 0 a valid program; 1 out of memory; 2 usage error,\n"
        "unreadable or invalid file.\n",
        f);
}

static uint64_t le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* The OPS section: per op its name, kind, source, FLOPs and the code
 * ranges (pc intervals) attributed to it. */
static void print_ops(const tpub_image *img) {
  for (uint32_t k = 0; k < img->nops; k++) {
    const tpub_op *o = &img->ops[k];
    uint32_t words = 0;
    for (uint32_t pc = 0; pc < img->ncode; pc++) words += img->op_of_pc[pc] == k;
    printf("; op %u: %s", k, o->name);
    if (o->kind[0]) printf(" (%s)", o->kind);
    if (o->file[0]) printf(" %s:%u:%u", o->file, (unsigned)o->line, (unsigned)o->col);
    printf(", %llu flops, %u code words", (unsigned long long)o->flops, (unsigned)words);
    int shown = 0;
    for (uint32_t pc = 0; pc < img->ncode;) {
      if (img->op_of_pc[pc] != k) {
        pc++;
        continue;
      }
      uint32_t end = pc;
      while (end < img->ncode && img->op_of_pc[end] == k) end++;
      if (shown++ < 8) printf("%s[%u,%u)", shown == 1 ? " at pc " : " ", (unsigned)pc, (unsigned)end);
      pc = end;
    }
    if (shown > 8) printf(" and %d more ranges", shown - 8);
    printf("\n");
  }
}

int tpucc_cmd_dump_module(int argc, char **argv) {
  const char *in = NULL, *target = NULL;
  int only_asm = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      tpucc_help_dump_module(stdout);
      return 0;
    } else if (!strcmp(a, "--asm")) {
      only_asm = 1;
    } else if (!strncmp(a, "--target=", 9)) {
      target = a + 9;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "tpucc dump-module: error: unknown option '%s'\n", a);
      return 2;
    } else if (in) {
      fprintf(stderr, "tpucc dump-module: error: more than one input file\n");
      return 2;
    } else {
      in = a;
    }
  }
  if (!in) {
    tpucc_help_dump_module(stderr);
    return 2;
  }
  uint8_t *b;
  size_t n;
  char why[512];
  int rf = tpub_read_file(in, NULL, 1, &b, &n, why, sizeof why);
  if (rf != TPUB_FILE_OK) {
    fprintf(stderr, "tpucc dump-module: error: %s\n", why);
    return rf == TPUB_FILE_NO_MEMORY ? 1 : 2;
  }
  tpub_image *img = NULL;
  int rr = tpub_read(b, n, NULL, &img, why, sizeof why);
  if (rr) {
    fprintf(stderr, "%s: error: %s%s\n", in, rr == -2 ? "out of memory" : "invalid program: ",
            rr == -2 ? "" : why);
    rt_free(NULL, b);
    return rr == -2 ? 1 : 2;
  }
  tgt_target t;
  int rc = 0, rv = 0;
  if (tgt_parse(target ? target : img->target, &t, why, sizeof why) ||
      (rv = tpub_verify(img, &t, why, sizeof why)) != 0) {
    fprintf(stderr, "%s: error: %s%s\n", in, rv == -2 ? "out of memory" : "invalid program: ",
            rv == -2 ? "" : why);
    rc = rv == -2 ? 1 : 2;
  }
  if (!only_asm) {
    static const char *const kinds[] = {"?", "target", "signature", "code", "const", "smem", "ops"};
    printf("; %s: .tpub format %u, ISA %u, %zu bytes, crc32 %08x\n", in, (unsigned)le(b + 8, 2),
           (unsigned)le(b + 10, 2), n, (unsigned)le(b + 24, 4));
    printf("; target %s, HBM %llu bytes\n", img->target, (unsigned long long)img->hbm_bytes);
    uint32_t nsec = (uint32_t)le(b + 12, 4);
    for (uint32_t s = 0; s < nsec; s++) {
      const uint8_t *e = b + 64 + 24 * s;
      uint32_t k = (uint32_t)le(e, 4);
      printf("; section %-9s items %-8u offset %-8llu size %llu\n", kinds[k < 7 ? k : 0],
             (unsigned)le(e + 4, 4), (unsigned long long)le(e + 8, 8),
             (unsigned long long)le(e + 16, 8));
    }
    for (uint32_t i = 0; i < img->nparams + img->nresults; i++) {
      int res = i >= img->nparams;
      const tpub_tensor *x = res ? &img->results[i - img->nparams] : &img->params[i];
      printf("; %s %u: %s %s, %llu bytes at HBM %llu\n", res ? "result" : "param",
             res ? i - img->nparams : i, x->name, tpub_dtype_name(x->dtype),
             (unsigned long long)x->bytes, (unsigned long long)x->hbm_offset);
    }
    print_ops(img);
    printf("; %s\n", rc ? "verification FAILED" : "verified");
  }
  char *text = NULL;
  size_t len = 0;
  if (isa_disassemble(img, NULL, &text, &len) == 0) {
    fwrite(text, 1, len, stdout);
    free(text);
  } else {
    fprintf(stderr, "%s: error: out of memory\n", in);
    rc = 1;
  }
  tpub_free(img);
  rt_free(NULL, b);
  return rc;
}

#ifdef TPUCC_STANDALONE_MAIN
int main(int argc, char **argv) { return tpucc_cmd_dump_module(argc - 1, argv + 1); }
#endif
