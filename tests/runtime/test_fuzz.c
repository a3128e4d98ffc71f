/* test_fuzz.c: thousands of mutated and truncated .tpub files (built from
 * the kernels in kernels/) are loaded and, when they verify, run: every
 * one must be rejected with a message, fault cleanly, or complete. Half of
 * the mutations repair the checksum (and size field) so that they reach the
 * verifier and the emulator instead of stopping at the CRC. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "asm.h"
#include "fuzz_one.h"
#include "isa.h"
#include "rt_test.h"
#include "tpub.h"

static uint8_t *build(const char *kernel, size_t *n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", KERNEL_DIR, kernel);
  size_t len = 0;
  char *text = rt_read_file(path, &len);
  assert_non_null(text);
  tpub_image *img = NULL;
  char err[2048];
  assert_int_equal(isa_assemble(text, len, kernel, NULL, &img, err, sizeof err), 0);
  uint8_t *bytes = NULL;
  assert_int_equal(tpub_write(img, NULL, &bytes, n, err, sizeof err), 0);
  tpub_free(img);
  free(text);
  return bytes;
}

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static void repair(uint8_t *b, size_t n) {
  if (n < 64) return;
  for (int i = 0; i < 8; i++)
    b[16 + i] = (uint8_t)((uint64_t)n >> (8 * i));
  put32(b + 24, 0);
  put32(b + 24, tpub_crc32(b, n));
}

static void mutate_and_load(const char *kernel, int rounds, fuzz_counts *c) {
  size_t n;
  uint8_t *orig = build(kernel, &n);
  uint8_t *b = malloc(n);
  tpurt_device_t *dev = fuzz_device();
  uint64_t seed = 1234;
  fuzz_one(dev, orig, n, c); /* the original completes */
  assert_int_equal(c->completed, 1);
  for (int r = 0; r < rounds; r++) {
    memcpy(b, orig, n);
    size_t len = n;
    uint64_t x = rt_rand(&seed);
    switch (x % 6) {
    case 0: /* truncate */
      len = (size_t)(rt_rand(&seed) % n);
      break;
    case 1:
    case 2: { /* flip a few bytes anywhere */
      int k = 1 + (int)(rt_rand(&seed) % 4);
      for (int i = 0; i < k; i++)
        b[rt_rand(&seed) % n] ^= (uint8_t)(1 + rt_rand(&seed) % 255);
      break;
    }
    case 3: { /* a random code word: mostly valid instructions */
      size_t first = 64 + 24 * 5, pos = first + 8 * (rt_rand(&seed) % ((n - first) / 8));
      uint64_t w = rt_rand(&seed);
      w = (w & 0x00FFFFFFFFFFFFFFull) | (uint64_t)(rt_rand(&seed) % (OP__COUNT + 2)) << 56;
      if (rt_rand(&seed) % 2) w &= 0xFFFFFFF0000FFFFFull; /* small imm, few regs */
      for (int i = 0; i < 8; i++)
        b[pos + (size_t)i] = (uint8_t)(w >> (8 * i));
      break;
    }
    case 4: { /* small integers into header and section-table fields */
      size_t pos = rt_rand(&seed) % (64 + 24 * 5);
      b[pos] = (uint8_t)(rt_rand(&seed) % 4 ? rt_rand(&seed) % 3 : 0xff);
      break;
    }
    default: { /* flip a bit in the signature, constants or SMEM */
      size_t pos = rt_rand(&seed) % n;
      b[pos] ^= (uint8_t)(1u << (rt_rand(&seed) % 8));
      break;
    }
    }
    if (x >> 32 & 1) repair(b, len);
    fuzz_one(dev, b, len, c);
  }
  tpurt_device_destroy(dev);
  free(b);
  free(orig);
}

static void mutated_tpub_files_never_crash(void **state) {
  (void)state;
  const char *kernels[] = {"elementwise.s", "rowsum.s", "transpose.s"};
  fuzz_counts total = {0, 0, 0};
  for (size_t k = 0; k < 3; k++) {
    fuzz_counts c = {0, 0, 0};
    mutate_and_load(kernels[k], 3000, &c);
    total.rejected += c.rejected;
    total.faulted += c.faulted;
    total.completed += c.completed;
  }
  fprintf(stderr, "  %ld rejected, %ld faulted, %ld completed\n", total.rejected, total.faulted,
          total.completed);
  assert_int_equal(total.rejected + total.faulted + total.completed, 3 * 3001);
  /* The mix reaches every stage. */
  assert_true(total.rejected > 1000);
  assert_true(total.completed > 100);
  assert_true(total.faulted > 10);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mutated_tpub_files_never_crash),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
