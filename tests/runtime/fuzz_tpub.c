/* fuzz_tpub.c: a libFuzzer target for the .tpub loader, verifier and
 * emulator. Build with clang -fsanitize=fuzzer,address -DTPURT_LIBFUZZER
 * (and the runtime sources) to fuzz; the meson build makes a plain
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
      for (size_t k = 0; k <= bn; k++) fuzz_one(dev, bin, k, &c);
      free(bin);
    } else {
      fuzz_one(dev, (const uint8_t *)bytes, n, &c);
    }
    free(bytes);
  }
  printf("fuzz_tpub: %ld rejected, %ld faulted, %ld completed\n", c.rejected,
         c.faulted, c.completed);
  tpurt_device_destroy(dev);
  return 0;
}
#endif
