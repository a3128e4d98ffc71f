/* tpub_file.c: reading a program file whole, after checking what it is
 * (tpub_read_file: the contract is in tpub.h). */
#include "tpub.h"

#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#if defined(__GNUC__)
static int fail(int rc, char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#endif
static int fail(int rc, char *why, size_t whylen, const char *fmt, ...) {
  if (why && whylen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
  }
  return rc;
}

int tpub_read_file(const char *path, const rt_allocator *a, int need_magic, uint8_t **out,
                   size_t *out_len, char *why, size_t whylen) {
  *out = NULL;
  *out_len = 0;
  FILE *f = fopen(path, "rb");
  if (!f)
    return fail(errno == ENOENT ? TPUB_FILE_NOT_FOUND : TPUB_FILE_IO, why, whylen, "%s: %s", path,
                strerror(errno));
  struct stat sb;
  int rc = TPUB_FILE_OK;
  if (fstat(fileno(f), &sb) != 0)
    rc = fail(TPUB_FILE_IO, why, whylen, "%s: %s", path, strerror(errno));
  else if (S_ISDIR(sb.st_mode))
    rc = fail(TPUB_FILE_IO, why, whylen, "%s: is a directory", path);
  else if (!S_ISREG(sb.st_mode))
    rc = fail(TPUB_FILE_IO, why, whylen, "%s: not a regular file", path);
  else if ((uint64_t)sb.st_size > TPUB_MAX_FILE)
    rc = fail(TPUB_FILE_TOO_LARGE, why, whylen,
              "%s: file too large (%llu bytes; a program file has at most %llu)", path,
              (unsigned long long)sb.st_size, (unsigned long long)TPUB_MAX_FILE);
  if (rc == TPUB_FILE_OK) {
    /* The header first: the magic, and the size it records. */
    uint8_t head[24] = {0};
    size_t got = fread(head, 1, sizeof head, f);
    bool tpub = got >= 8 && memcmp(head, TPUB_MAGIC, 8) == 0;
    uint64_t said = 0;
    for (int i = 7; i >= 0; i--) said = said << 8 | head[16 + i];
    if (fseek(f, 0, SEEK_SET) != 0)
      rc = fail(TPUB_FILE_IO, why, whylen, "%s: %s", path, strerror(errno));
    else if (need_magic && !tpub)
      rc = fail(TPUB_FILE_NOT_TPUB, why, whylen,
                "%s: not a .tpub program (it does not start with the TPUB magic)", path);
    else if (tpub && (got < sizeof head || said != (uint64_t)sb.st_size))
      rc = fail(TPUB_FILE_NOT_TPUB, why, whylen,
                "%s: not a valid .tpub program: its header says %llu bytes, the file has %llu",
                path, (unsigned long long)said, (unsigned long long)sb.st_size);
  }
  if (rc != TPUB_FILE_OK) {
    fclose(f);
    return rc;
  }
  size_t n = (size_t)sb.st_size;
  uint8_t *buf = rt_alloc(a, n + 1); /* one more byte: a file that grew is seen */
  if (!buf) {
    fclose(f);
    return fail(TPUB_FILE_NO_MEMORY, why, whylen, "%s: out of memory reading %zu bytes", path, n);
  }
  size_t got = fread(buf, 1, n + 1, f);
  int err = ferror(f);
  fclose(f);
  if (err || got != n) {
    rt_free(a, buf);
    return fail(TPUB_FILE_IO, why, whylen, "%s: %s", path,
                err ? "read error" : "the file changed size while being read");
  }
  *out = buf;
  *out_len = n;
  return TPUB_FILE_OK;
}
