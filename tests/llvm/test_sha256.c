/* test_sha256.c: the compile cache's SHA-256 (backend/llvm/sha256.c)
 * against the FIPS 180-2 example digests ("abc", the 448-bit two-block
 * message, a million 'a'), fed whole and in uneven pieces. Exit 1 on a
 * mismatch. */
#include "backend/llvm/cache.h"

#include <stdio.h>

static int check(const char *what, const char *msg, size_t len, size_t repeat, size_t piece,
                 const char *want) {
  llvm_sha256 s;
  llvm_sha256_init(&s);
  for (size_t r = 0; r < repeat; r++)
    for (size_t off = 0; off < len; off += piece)
      llvm_sha256_update(&s, msg + off, len - off < piece ? len - off : piece);
  uint8_t d[32];
  llvm_sha256_final(&s, d);
  char hex[65];
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
  if (strcmp(hex, want) == 0) return 0;
  printf("FAIL %s (pieces of %zu): %s, expected %s\n", what, piece, hex, want);
  return 1;
}

int main(void) {
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  int fail = 0;
  for (size_t piece = 1; piece <= 64; piece += 21) {
    fail |= check("abc", "abc", 3, 1, piece,
                  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    fail |= check("448-bit message", two, strlen(two), 1, piece,
                  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    fail |= check("empty", "", 0, 1, piece,
                  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  }
  static char a[1000];
  memset(a, 'a', sizeof a);
  fail |= check("a million 'a'", a, sizeof a, 1000, 333,
                "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  if (!fail) printf("sha256: FIPS 180-2 examples match\n");
  return fail;
}
