/* cmd_asm.c: `tpucc asm`: assemble TPU assembly text (docs/isa.md, section
 * 4) into a verified .tpub program file. Built into `tpucc`, or on its own
 * as `tpucc-asm` when compiled with -DTPUCC_STANDALONE_MAIN. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "asm.h"
#include "target.h"
#include "tpub.h"

int tpucc_cmd_asm(int argc, char **argv);
void tpucc_help_asm(FILE *f);

void tpucc_help_asm(FILE *f) {
  fputs("usage: tpucc asm FILE.s [-o FILE.tpub] [--target=SPEC]\n"
        "\n"
        "Assembles TPU assembly (docs/isa.md) into a .tpub program, verified\n"
        "against its .target (or SPEC, e.g. v3,mxu=64x64) before it is written.\n"
        "\n"
        "options:\n"
        "  -o FILE          output file (default: FILE.s with .tpub)\n"
        "  --target=SPEC    verify against SPEC instead of the file's .target\n"
        "  -h, --help       this text\n"
        "\n"
        "exit status: 0 success; 1 the output could not be written; 2 usage\n"
        "error, unreadable input, assembly or verification error.\n",
        f);
}

/* Assembly text: a regular file or a pipe of at most MAX_TEXT bytes (a
 * larger regular file is refused before reading, a pipe once that much
 * was read). NULL with the reason in why. */
enum { MAX_TEXT = 1 << 30 };

static char *read_all(const char *path, size_t *n, const char **why) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    *why = strerror(errno);
    return NULL;
  }
  struct stat sb;
  *why = NULL;
  if (fstat(fileno(f), &sb) != 0 || !(S_ISREG(sb.st_mode) || S_ISFIFO(sb.st_mode)))
    *why = "not a regular file or a pipe";
  else if (S_ISREG(sb.st_mode) && sb.st_size >= MAX_TEXT)
    *why = "file too large (1 GiB at most)";
  if (*why) {
    fclose(f);
    return NULL;
  }
  size_t cap = 4096, len = 0;
  char *s = malloc(cap);
  while (s) {
    size_t k = fread(s + len, 1, cap - len, f);
    len += k;
    if (len < cap) break;
    char *ns = cap < MAX_TEXT ? realloc(s, cap *= 2) : NULL;
    if (!ns) free(s);
    s = ns;
  }
  int err = ferror(f);
  fclose(f);
  if (err || !s) {
    free(s);
    *why = err ? "read error" : "out of memory, or more than 1 GiB";
    return NULL;
  }
  *n = len;
  return s;
}

int tpucc_cmd_asm(int argc, char **argv) {
  const char *in = NULL, *out = NULL, *target = NULL;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      tpucc_help_asm(stdout);
      return 0;
    } else if (!strcmp(a, "-o") && i + 1 < argc) {
      out = argv[++i];
    } else if (!strncmp(a, "-o", 2) && a[2]) {
      out = a + 2;
    } else if (!strncmp(a, "--target=", 9)) {
      target = a + 9;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "tpucc asm: error: unknown option '%s'\n", a);
      return 2;
    } else if (in) {
      fprintf(stderr, "tpucc asm: error: more than one input file\n");
      return 2;
    } else {
      in = a;
    }
  }
  if (!in) {
    tpucc_help_asm(stderr);
    return 2;
  }
  size_t n = 0;
  const char *why_not;
  char *text = read_all(in, &n, &why_not);
  if (!text) {
    fprintf(stderr, "tpucc asm: error: cannot read '%s': %s\n", in, why_not);
    return 2;
  }
  static char err[8192];
  tpub_image *img = NULL;
  int rc = isa_assemble(text, n, in, NULL, &img, err, sizeof err);
  free(text);
  if (rc) {
    fputs(err, stderr);
    return 2;
  }
  tgt_target t;
  char why[512];
  if (tgt_parse(target ? target : img->target, &t, why, sizeof why)) {
    fprintf(stderr, "%s: error: %s\n", in, why);
    tpub_free(img);
    return 2;
  }
  if (tpub_verify(img, &t, why, sizeof why)) {
    fprintf(stderr, "%s: error: %s\n", in, why);
    tpub_free(img);
    return 2;
  }
  char def[4096];
  if (!out) {
    size_t l = strlen(in);
    const char *dot = strrchr(in, '.');
    if (dot && !strchr(dot, '/')) l = (size_t)(dot - in);
    snprintf(def, sizeof def, "%.*s.tpub", (int)l, in);
    out = def;
  }
  uint8_t *bytes = NULL;
  size_t size = 0;
  rc = tpub_write(img, NULL, &bytes, &size, why, sizeof why);
  tpub_free(img);
  if (rc) {
    fprintf(stderr, "tpucc asm: error: %s\n", why);
    return 1;
  }
  FILE *f = fopen(out, "wb");
  int ok = f && fwrite(bytes, 1, size, f) == size;
  if (f && fclose(f)) ok = 0;
  free(bytes);
  if (!ok) {
    fprintf(stderr, "tpucc asm: error: cannot write '%s'\n", out);
    return 1;
  }
  return 0;
}

#ifdef TPUCC_STANDALONE_MAIN
int main(int argc, char **argv) { return tpucc_cmd_asm(argc - 1, argv + 1); }
#endif
