/* fuzz_tpub.c: a libFuzzer target for the .tpub loader, verifier and
 * emulator. To fuzz (from the source root; corpus: .tpub files made with
 * `tpucc asm tests/runtime/kernels/X.s -o corpus/X.tpub`):
 *   clang -O1 -g -fsanitize=fuzzer,address,undefined -DTPURT_LIBFUZZER \
 *     -D_GNU_SOURCE -std=c11 -Iinclude -I. -Iruntime/isa -Iruntime/emu \
 *     -Itests/runtime tests/runtime/fuzz_tpub.c runtime/isa/\*.c \
 *     runtime/emu/{emu,vector,matrix,mxu,dma,sync,hazard}.c runtime/tpurt.c \
 *     -lm -o fuzz && ./fuzz -max_total_time=120 corpus
 * (1.26 million inputs in 120 s, no finding, when this was written.)
 * Each input is also tried with its size field and checksum repaired, so
 * mutations reach the verifier and the emulator. The meson build makes a plain
 * executable that replays the files named on its command line, so the
 * target is compiled and exercised by the test suite:
 *     fuzz_tpub FILE...      exit 0 when every file was handled
 * A FILE ending in ".s" is assembled first, and then every prefix of the
 * resulting image is tried too (the truncations a fuzzer finds first). */
#include <stdio.h>

#include "asm.h"
#include "fuzz_one.h"
#include "rt_test.h"
#include "tpub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tpurt_device_t *dev; /* the fuzzer's process-wide device */
  static fuzz_counts counts;
  if (!dev) dev = fuzz_device();
  fuzz_one(dev, data, size, &counts);
  /* And the same bytes with a correct size field and checksum, so that
   * mutations reach the verifier and the emulator, not only the CRC. */
  if (size >= 64 && size < (1u << 24)) {
    uint8_t *b = malloc(size);
    if (!b) return 0;
    memcpy(b, data, size);
    for (int i = 0; i < 8; i++)
      b[16 + i] = (uint8_t)((uint64_t)size >> (8 * i));
    memset(b + 24, 0, 4);
    uint32_t crc = tpub_crc32(b, size);
    for (int i = 0; i < 4; i++)
      b[24 + i] = (uint8_t)(crc >> (8 * i));
    fuzz_one(dev, b, size, &counts);
    free(b);
  }
  return 0;
}

#ifndef TPURT_LIBFUZZER
int main(int argc, char **argv) {
  tpurt_device_t *dev = fuzz_device();
  fuzz_counts c = {0, 0, 0};
  for (int i = 1; i < argc; i++) {
    size_t n;
    char *bytes = rt_read_file(argv[i], &n);
    if (!bytes) {
      fprintf(stderr, "fuzz_tpub: cannot read %s\n", argv[i]);
      tpurt_device_destroy(dev);
      return 2;
    }
    size_t l = strlen(argv[i]);
    if (l > 2 && !strcmp(argv[i] + l - 2, ".s")) {
      tpub_image *img = NULL;
      uint8_t *bin = NULL;
      size_t bn = 0;
      char err[2048];
      if (isa_assemble(bytes, n, argv[i], NULL, &img, err, sizeof err) ||
          tpub_write(img, NULL, &bin, &bn, err, sizeof err)) {
        fprintf(stderr, "%s", err);
        tpub_free(img);
        free(bytes);
        tpurt_device_destroy(dev);
        return 2;
      }
      tpub_free(img);
      for (size_t k = 0; k <= bn; k++)
        fuzz_one(dev, bin, k, &c);
      free(bin);
    } else {
      fuzz_one(dev, (const uint8_t *)bytes, n, &c);
    }
    free(bytes);
  }
  printf("fuzz_tpub: %ld rejected, %ld faulted, %ld completed\n", c.rejected, c.faulted,
         c.completed);
  tpurt_device_destroy(dev);
  return 0;
}
#endif
