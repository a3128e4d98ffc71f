/* tpurt_run.c: `tpurt-run`, the runtime's own runner: load a .tpub program
 * (or assemble a .s file), run it on an emulated core with zero or random
 * parameters, and print its statistics. For architects comparing targets
 * (`--target=v3,hbm_bw=900GB/s`) and for anyone reading a trace.
 *
 *   tpurt-run FILE.tpub|FILE.s [--target=SPEC] [--random=SEED]
 *             [--trace=OUT.json] [--systolic] [--cycle-limit=N]
 *
 * Prints one line per result (name, shape, CRC-32 of its bytes) and the
 * counters of docs/isa.md, section 9. Exit status: 0 ran to the end; 1 the
 * program faulted; 2 usage error or a program that does not load. Uses only
 * the public API (include/tpurt.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpurt.h"

static void usage(FILE *f) {
  fputs("usage: tpurt-run FILE.tpub|FILE.s [--target=SPEC] [--random=SEED]\n"
        "                 [--trace=OUT.json] [--systolic] [--cycle-limit=N]\n"
        "Runs a TPU program on the emulator with zero (or random) parameters and\n"
        "prints the results' CRC-32 and the run's counters.\n",
        f);
}

/* Assembly text of at most 1 GiB (a directory reports a size far above). */
static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END)) {
    fclose(f);
    return NULL;
  }
  long len = ftell(f);
  if (len < 0 || len > (1L << 30) || fseek(f, 0, SEEK_SET)) {
    fclose(f);
    return NULL;
  }
  char *b = malloc((size_t)len + 1);
  if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
    free(b);
    b = NULL;
  }
  fclose(f);
  if (b) b[len] = 0;
  *n = (size_t)len;
  return b;
}

/* A decimal number in [min, 2^64); false for anything else. */
static int number(const char *flag, const char *s, unsigned long long min,
                  unsigned long long *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (s[0] < '0' || s[0] > '9' || *end || errno || v < min) {
    fprintf(stderr, "tpurt-run: %s: '%s' is not a number of at least %llu\n", flag, s, min);
    return 0;
  }
  *out = v;
  return 1;
}

static uint32_t crc32_of(const unsigned char *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}

static void shape(const tpurt_tensor_info_t *t) {
  printf("%s[", tpurt_dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++)
    printf("%s%lld", i ? "," : "", (long long)t->dims[i]);
  printf("]");
}

/* The command line. */
typedef struct run_args {
  const char *file;
  tpurt_device_options_t dev;
  unsigned long long seed;
  int random;
} run_args;

/* Parses argv into *r: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, run_args *r) {
  tpurt_device_options_init(&r->dev);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strncmp(a, "--target=", 9)) {
      r->dev.target = a + 9;
    } else if (!strncmp(a, "--trace=", 8)) {
      r->dev.trace_path = a + 8;
    } else if (!strcmp(a, "--systolic")) {
      r->dev.mxu_systolic = 1;
    } else if (!strncmp(a, "--cycle-limit=", 14)) {
      unsigned long long n;
      if (!number("--cycle-limit", a + 14, 1, &n)) return 2;
      r->dev.cycle_limit = n;
    } else if (!strncmp(a, "--random=", 9)) {
      r->random = 1;
      if (!number("--random", a + 9, 0, &r->seed)) return 2;
    } else if (a[0] == '-' || r->file) {
      usage(stderr);
      return 2;
    } else {
      r->file = a;
    }
  }
  if (!r->file) {
    usage(stderr);
    return 2;
  }
  return -1;
}

/* Loads a .tpub (or assembles a .s) file; NULL after printing why. */
static tpurt_program_t *load(tpurt_device_t *dev, const char *file) {
  tpurt_program_t *prog = NULL;
  size_t len = strlen(file);
  tpurt_status_t st;
  if (len > 2 && !strcmp(file + len - 2, ".s")) {
    size_t n = 0;
    char *text = slurp(file, &n);
    if (!text) {
      fprintf(stderr, "tpurt-run: cannot read %s (a text file of at most 1 GiB)\n", file);
      return NULL;
    }
    st = tpurt_program_assemble(dev, text, n, file, &prog);
    free(text);
  } else {
    st = tpurt_program_load_file(dev, file, &prog);
  }
  if (st != TPURT_OK) fprintf(stderr, "%s\n", tpurt_device_message(dev));
  return prog;
}

/* Makes parameter i's buffer: zeros, or pseudo-random bytes from *seed
 * (floats kept small: random bytes would make NaNs). An exit status. */
static int make_param(tpurt_device_t *dev, tpurt_program_t *prog, size_t i, const run_args *r,
                      unsigned long long *seed, tpurt_buffer_t **out) {
  tpurt_tensor_info_t t;
  tpurt_program_param_info(prog, i, &t);
  unsigned char *data = r->random ? malloc(t.bytes ? t.bytes : 1) : NULL;
  if (r->random && !data) {
    fprintf(stderr, "tpurt-run: out of memory for the %zu bytes of parameter %s\n", t.bytes,
            t.name);
    return 1;
  }
  if (data) {
    for (size_t k = 0; k < t.bytes; k++) {
      *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
      data[k] = (unsigned char)(*seed >> 56);
    }
    if (t.dtype == TPURT_F32)
      for (size_t k = 3; k < t.bytes; k += 4)
        data[k] = (unsigned char)(0x3C + (data[k] & 0x81));
    if (t.dtype == TPURT_BF16)
      for (size_t k = 1; k < t.bytes; k += 2)
        data[k] = (unsigned char)(0x3C + (data[k] & 0x81));
  }
  tpurt_status_t st = tpurt_buffer_create(dev, t.dtype, t.rank, t.dims, data, data ? t.bytes : 0, out);
  free(data);
  if (st != TPURT_OK) {
    fprintf(stderr, "%s\n", tpurt_device_message(dev));
    return 2;
  }
  return 0;
}

/* One line per result: name, shape, CRC-32 of its bytes. An exit status. */
static int print_results(tpurt_program_t *prog, tpurt_buffer_t *const *out, size_t nr) {
  for (size_t i = 0; i < nr; i++) {
    tpurt_tensor_info_t t;
    tpurt_program_result_info(prog, i, &t);
    unsigned char *data = malloc(t.bytes ? t.bytes : 1);
    if (!data) {
      fprintf(stderr, "tpurt-run: out of memory for the %zu bytes of result %s\n", t.bytes, t.name);
      return 1;
    }
    tpurt_buffer_read(out[i], data, t.bytes);
    printf("result %s ", t.name);
    shape(&t);
    printf(" crc32 %08x\n", crc32_of(data, t.bytes));
    free(data);
  }
  return 0;
}

/* The counters of docs/isa.md, section 9. */
static void print_stats(const tpurt_device_t *dev, const tpurt_stats_t *s) {
  printf("target %s\n", tpurt_device_target(dev));
  printf("cycles %llu (%.3f us), instructions %llu\n", (unsigned long long)s->cycles,
         s->seconds * 1e6, (unsigned long long)s->instructions);
  printf("mxu macs %llu, utilisation %.1f%%, busy %llu cycles, weight loads %llu\n",
         (unsigned long long)s->mxu_macs,
         s->mxu_peak_macs ? 100.0 * (double)s->mxu_macs / (double)s->mxu_peak_macs : 0.0,
         (unsigned long long)s->mxu_busy_cycles, (unsigned long long)s->mxu_weight_loads);
  printf("hbm read %llu, written %llu bytes, busy %llu cycles, %llu transfers\n",
         (unsigned long long)s->hbm_read_bytes, (unsigned long long)s->hbm_write_bytes,
         (unsigned long long)s->hbm_busy_cycles, (unsigned long long)s->dma_transfers);
  printf("%-7s", "unit");
#define HEAD(field, label)                                                                         \
  if (*label) printf(" %10s", label);
  TPURT_UNIT_COUNTERS(HEAD)
#undef HEAD
  putchar('\n');
  for (int u = 0; u < TPURT_MAX_UNITS; u++) {
    const tpurt_unit_stats_t *x = &s->units[u];
    if (!x->instructions) continue;
    printf("%-7s", x->name);
#define CELL(field, label)                                                                         \
  if (*label) printf(" %10llu", (unsigned long long)x->field);
    TPURT_UNIT_COUNTERS(CELL)
#undef CELL
    putchar('\n');
  }
}

/* Makes the parameters, runs prog once and prints; an exit status. */
static int run(tpurt_device_t *dev, tpurt_program_t *prog, const run_args *r) {
  size_t np = tpurt_program_param_count(prog), nr = tpurt_program_result_count(prog);
  tpurt_buffer_t **in = calloc(np + 1, sizeof *in), **out = calloc(nr + 1, sizeof *out);
  int rc = 1;
  unsigned long long seed = r->seed;
  tpurt_stats_t s;
  if (!in || !out) {
    fprintf(stderr, "tpurt-run: out of memory\n");
    goto done;
  }
  rc = 0;
  for (size_t i = 0; i < np && !rc; i++) rc = make_param(dev, prog, i, r, &seed, &in[i]);
  if (rc) goto done;
  if (tpurt_program_execute(prog, in, np, out, nr, &s) != TPURT_OK) {
    fprintf(stderr, "%s\n", tpurt_device_message(dev));
    rc = 1;
  } else if ((rc = print_results(prog, out, nr)) != 0) {
    goto done;
  }
  print_stats(dev, &s);
done:
  for (size_t i = 0; in && i < np; i++)
    tpurt_buffer_destroy(in[i]);
  for (size_t i = 0; out && i < nr; i++)
    tpurt_buffer_destroy(out[i]);
  free(in);
  free(out);
  return rc;
}

int main(int argc, char **argv) {
  run_args r = {0};
  int rc = parse_args(argc, argv, &r);
  if (rc >= 0) return rc;
  char err[512];
  if (tpurt_target_check(r.dev.target, err, sizeof err) != TPURT_OK) {
    fprintf(stderr, "tpurt-run: %s\n", err);
    return 2;
  }
  tpurt_device_t *dev = NULL;
  if (tpurt_device_create(&r.dev, &dev) != TPURT_OK) {
    fprintf(stderr, "tpurt-run: cannot create the device\n");
    return 2;
  }
  tpurt_program_t *prog = load(dev, r.file);
  rc = prog ? run(dev, prog, &r) : 2;
  tpurt_program_destroy(prog);
  tpurt_device_destroy(dev);
  return rc;
}
