/* cache.c: the persistent compile cache of JIT code (contract: cache.h). */
#include "backend/llvm/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm/Config/llvm-config.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

enum { FORMAT = 1, HEADER = 8 + 4 + 4 + LLVM_CACHE_KEY_BYTES + 8 + 32 };
static const char MAGIC[8] = {'T', 'P', 'U', 'C', 'C', 'J', 'I', 'T'};
static const size_t MAX_ENTRY = (size_t)1 << 30;

/* ---- the build id of the binary holding this code -------------------- */

static uint8_t build_id[64];
static size_t build_id_len;
static pthread_once_t build_id_once = PTHREAD_ONCE_INIT;

static int find_build_id(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  uintptr_t self = (uintptr_t)data;
  bool mine = false;
  for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    mine = ph->p_type == PT_LOAD && self >= lo && self < lo + ph->p_memsz;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_NOTE) continue;
    const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
    while (p + 12 <= end) {
      uint32_t nsz, dsz, type;
      memcpy(&nsz, p, 4);
      memcpy(&dsz, p + 4, 4);
      memcpy(&type, p + 8, 4);
      const uint8_t *name = p + 12, *desc = name + ((nsz + 3) & ~3u);
      if (desc + dsz > end) break;
      if (type == NT_GNU_BUILD_ID && nsz == 4 && !memcmp(name, "GNU", 4) && dsz <= sizeof build_id) {
        memcpy(build_id, desc, dsz);
        build_id_len = dsz;
        return 1;
      }
      p = desc + ((dsz + 3) & ~3u);
    }
  }
  return 1;
}

static void load_build_id(void) { dl_iterate_phdr(find_build_id, (void *)(uintptr_t)&llvm_cache_key); }

/* ---- the key ------------------------------------------------------------ */

static void put_str(llvm_sha256 *s, const char *what, const char *v) {
  uint64_t n = v ? strlen(v) : 0;
  llvm_sha256_update(s, what, strlen(what) + 1);
  llvm_sha256_update(s, &n, sizeof n);
  if (n) llvm_sha256_update(s, v, n);
}

static void put_int(llvm_sha256 *s, const char *what, int64_t v) {
  llvm_sha256_update(s, what, strlen(what) + 1);
  llvm_sha256_update(s, &v, sizeof v);
}

void llvm_cache_key(LLVMModuleRef mod, const cpu_options *o, LLVMTargetMachineRef tm,
                    uint8_t key[LLVM_CACHE_KEY_BYTES]) {
  pthread_once(&build_id_once, load_build_id);
  llvm_sha256 s;
  llvm_sha256_init(&s);
  put_int(&s, "format", FORMAT);
  llvm_sha256_update(&s, build_id, build_id_len);
  put_int(&s, "build id bytes", (int64_t)build_id_len);
  put_str(&s, "llvm", LLVM_VERSION_STRING);
  char *triple = LLVMGetTargetMachineTriple(tm), *cpu = LLVMGetTargetMachineCPU(tm);
  char *feat = LLVMGetTargetMachineFeatureString(tm);
  put_str(&s, "triple", triple);
  put_str(&s, "cpu", cpu);
  put_str(&s, "features", feat);
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(feat);
  put_int(&s, "opt level", o->opt_level);
  put_int(&s, "numerics", o->numerics);
  put_int(&s, "blas", o->use_blas);
  put_int(&s, "conv tile", (int64_t)o->conv_tile[0] << 32 | (uint32_t)o->conv_tile[1]);
  put_str(&s, "entry", o->entry_name ? o->entry_name : "tpucc_entry");
  put_str(&s, "library kernels", o->lib_kernels ? o->lib_kernels : "off");
  LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(mod);
  put_int(&s, "bitcode bytes", (int64_t)LLVMGetBufferSize(bc));
  llvm_sha256_update(&s, LLVMGetBufferStart(bc), LLVMGetBufferSize(bc));
  LLVMDisposeMemoryBuffer(bc);
  llvm_sha256_final(&s, key);
}

/* ---- entries -------------------------------------------------------------- */

void llvm_cache_path(const char *dir, const uint8_t key[LLVM_CACHE_KEY_BYTES], char *out,
                     size_t outlen) {
  char hex[2 * LLVM_CACHE_KEY_BYTES + 1];
  for (int i = 0; i < LLVM_CACHE_KEY_BYTES; i++) snprintf(hex + 2 * i, 3, "%02x", key[i]);
  snprintf(out, outlen, "%s/%s.tjo", dir, hex);
}

static bool read_all(int fd, uint8_t *p, size_t n) {
  while (n) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r, n -= (size_t)r;
  }
  return true;
}

void *llvm_cache_load(const char *dir, const uint8_t key[LLVM_CACHE_KEY_BYTES], size_t *len,
                      const char **why) {
  char path[4096];
  llvm_cache_path(dir, key, path, sizeof path);
  *len = 0;
  *why = "no entry";
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  uint8_t h[HEADER];
  uint8_t *obj = NULL;
  *why = "a damaged entry (ignored; replaced)";
  if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < HEADER ||
      (size_t)st.st_size > MAX_ENTRY || !read_all(fd, h, HEADER))
    goto out;
  uint32_t fmt;
  uint64_t n;
  memcpy(&fmt, h + 8, 4);
  memcpy(&n, h + 16 + LLVM_CACHE_KEY_BYTES, 8);
  if (memcmp(h, MAGIC, 8) || fmt != FORMAT || memcmp(h + 16, key, LLVM_CACHE_KEY_BYTES) ||
      n != (uint64_t)st.st_size - HEADER || n == 0)
    goto out;
  obj = malloc((size_t)n);
  if (!obj || !read_all(fd, obj, (size_t)n)) goto fail;
  uint8_t sum[32];
  llvm_sha256 s;
  llvm_sha256_init(&s);
  llvm_sha256_update(&s, obj, (size_t)n);
  llvm_sha256_final(&s, sum);
  if (memcmp(sum, h + 24 + LLVM_CACHE_KEY_BYTES, 32)) goto fail;
  *len = (size_t)n;
  *why = NULL;
  goto out;
fail:
  free(obj);
  obj = NULL;
out:
  close(fd);
  return obj;
}

static bool write_all(int fd, const uint8_t *p, size_t n) {
  while (n) {
    ssize_t r = write(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r, n -= (size_t)r;
  }
  return true;
}

/* mkdir -p dir (the last component 0700). */
static bool make_dir(const char *dir) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return false;
  for (char *c = p + 1; *c; c++) {
    if (*c != '/') continue;
    *c = 0;
    if (mkdir(p, 0755) && errno != EEXIST) return false;
    *c = '/';
  }
  return !mkdir(p, 0700) || errno == EEXIST;
}

bool llvm_cache_store(const char *dir, const uint8_t key[LLVM_CACHE_KEY_BYTES], const void *obj,
                      size_t len, char *err, size_t errlen) {
  static atomic_uint seq;
  char path[4096], tmp[4200];
  llvm_cache_path(dir, key, path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(), atomic_fetch_add(&seq, 1));
  if (!make_dir(dir)) {
    snprintf(err, errlen, "cannot make %s: %s", dir, strerror(errno));
    return false;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    snprintf(err, errlen, "cannot write in %s: %s", dir, strerror(errno));
    return false;
  }
  uint8_t h[HEADER] = {0};
  uint32_t fmt = FORMAT;
  uint64_t n = len;
  memcpy(h, MAGIC, 8);
  memcpy(h + 8, &fmt, 4);
  memcpy(h + 16, key, LLVM_CACHE_KEY_BYTES);
  memcpy(h + 16 + LLVM_CACHE_KEY_BYTES, &n, 8);
  llvm_sha256 s;
  llvm_sha256_init(&s);
  llvm_sha256_update(&s, obj, len);
  llvm_sha256_final(&s, h + 24 + LLVM_CACHE_KEY_BYTES);
  bool ok = write_all(fd, h, HEADER) && write_all(fd, obj, len) && !fsync(fd);
  int e = errno;
  ok = !close(fd) && ok;
  if (ok && rename(tmp, path)) ok = false, e = errno;
  if (!ok) {
    snprintf(err, errlen, "cannot store %s: %s", path, strerror(e));
    unlink(tmp);
    return false;
  }
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* the rename itself durable */
  if (dfd >= 0) {
    (void)fsync(dfd); /* a directory that cannot be synced still holds the entry */
    close(dfd);
  }
  return true;
}
