/* fuzz_tpub.c: a libFuzzer target for the .tpub loader, verifier and
 * emulator. Build with clang -fsanitize=fuzzer,address -DTPURT_LIBFUZZER
 * (and the runtime sources) to fuzz; the meson build makes a plain
 * executable that replays the files named on its command line, so the
 * target is compiled and exercised by the test suite:
 *     fuzz_tpub FILE...      exit 0 when every file was handled */
#include <stdio.h>

#include "fuzz_one.h"
#include "rt_test.h"

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
    fuzz_one(dev, (const uint8_t *)bytes, n, &c);
    free(bytes);
  }
  printf("fuzz_tpub: %ld rejected, %ld faulted, %ld completed\n", c.rejected,
         c.faulted, c.completed);
  tpurt_device_destroy(dev);
  return 0;
}
#endif
