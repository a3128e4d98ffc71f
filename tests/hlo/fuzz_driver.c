/* fuzz_driver.c: runs LLVMFuzzerTestOneInput (fuzz_hlo.c) without
 * libFuzzer, deterministically:
 *
 *   fuzz_driver [-n MUTATIONS_PER_FILE] DIR...
 *
 * Every .hlo file in the directories is run as is, then MUTATIONS_PER_FILE
 * (default 24) mutants made with a fixed-seed generator: bit flips, byte
 * overwrites with syntax characters, truncations, deletions, duplicated
 * chunks, and whole lines spliced in from other files (which makes
 * duplicate and undefined names, stray attributes, mismatched shapes).
 * A crash, sanitizer report or abort fails the test. */
#include "base/base.h"

#include <dirent.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static const char syntax[] = "{}[](),=:%\"/*-x_0123456789.fsbpe \n";

/* Lines of every file read so far, for splicing. */
static struct {
  const uint8_t *s;
  size_t n;
} lines[1 << 14];
static int nlines;
static uint8_t *bufs[4096]; /* file buffers, freed at exit */
static int nbufs;

static void add_lines(const uint8_t *src, size_t n) {
  size_t start = 0;
  for (size_t i = 0; i <= n && nlines < (int)COUNTOF(lines); i++) {
    if (i == n || src[i] == '\n') {
      if (i > start) {
        lines[nlines].s = src + start;
        lines[nlines].n = i - start + (i < n);
        nlines++;
      }
      start = i + 1;
    }
  }
}

/* Writes mutant k of src (n bytes) into dst (capacity 2n+64); returns its length. */
static size_t mutate(const uint8_t *src, size_t n, uint8_t *dst) {
  memcpy(dst, src, n);
  size_t len = n;
  int steps = 1 + (int)(next() % 3);
  for (int s = 0; s < steps; s++) {
    size_t at = len ? (size_t)(next() % len) : 0;
    switch (next() % 6) {
    case 0: /* bit flip */
      if (len) dst[at] ^= (uint8_t)(1u << (next() % 8));
      break;
    case 1: /* syntax character */
      if (len) dst[at] = (uint8_t)syntax[next() % (sizeof syntax - 1)];
      break;
    case 2: /* truncate */
      len = at;
      break;
    case 3: { /* delete a chunk */
      size_t k = 1 + (size_t)(next() % 16);
      if (at + k > len) k = len - at;
      memmove(dst + at, dst + at + k, len - at - k);
      len -= k;
      break;
    }
    case 4: { /* splice a line from some file at a line start */
      if (!nlines) break;
      int li = (int)(next() % (uint64_t)nlines);
      size_t k = lines[li].n;
      if (len + k > 2 * n + 32) break;
      while (at > 0 && dst[at - 1] != '\n') at--;
      memmove(dst + at + k, dst + at, len - at);
      memcpy(dst + at, lines[li].s, k);
      len += k;
      break;
    }
    default: { /* duplicate a chunk */
      size_t k = 1 + (size_t)(next() % 32);
      if (at + k > len) k = len - at;
      if (len + k > 2 * n + 32) break;
      memmove(dst + at + k, dst + at, len - at);
      len += k;
      break;
    }
    }
  }
  return len;
}

int main(int argc, char **argv) {
  int per_file = 24, runs = 0, files = 0;
  int a = 1;
  if (argc > 2 && strcmp(argv[1], "-n") == 0) {
    per_file = atoi(argv[2]);
    a = 3;
  }
  for (; a < argc; a++) {
    DIR *dir = opendir(argv[a]);
    if (!dir) {
      fprintf(stderr, "cannot open %s\n", argv[a]);
      return 2;
    }
    struct dirent *e;
    while ((e = readdir(dir))) {
      size_t l = strlen(e->d_name);
      if (l < 5 || strcmp(e->d_name + l - 4, ".hlo") != 0) continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
      FILE *f = fopen(path, "rb");
      if (!f) continue;
      fseek(f, 0, SEEK_END);
      long sz = ftell(f);
      fseek(f, 0, SEEK_SET);
      uint8_t *src = base_xmalloc((size_t)sz + 1);
      size_t n = fread(src, 1, (size_t)sz, f);
      fclose(f);
      uint8_t *dst = base_xmalloc(2 * n + 64);
      add_lines(src, n); /* src stays alive: its lines are spliced later */
      if (nbufs < (int)COUNTOF(bufs)) bufs[nbufs++] = src;
      LLVMFuzzerTestOneInput(src, n);
      runs++;
      for (int k = 0; k < per_file; k++) {
        size_t len = mutate(src, n, dst);
        LLVMFuzzerTestOneInput(dst, len);
        runs++;
      }
      free(dst);
      files++;
    }
    closedir(dir);
  }
  for (int i = 0; i < nbufs; i++) free(bufs[i]);
  printf("%d files, %d runs, no failure\n", files, runs);
  return files ? 0 : 1;
}
