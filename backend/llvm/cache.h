/* cache.h: private to backend/llvm: the persistent compile cache of JIT
 * code (cache.c), its hash (sha256.c) and the progress line of long
 * compiles (progress.c).
 *
 * An entry is the object file LLVM made for one lowered module, in
 * DIR/<64 hex digits>.tjo, keyed by the SHA-256 of: the cache format, the
 * build id of the binary holding this code (ELF NT_GNU_BUILD_ID), the
 * LLVM version, the target machine (triple, CPU name, feature string,
 * optimisation level, relocation model), the options that change code
 * (numerics, BLAS, convolution tile, entry name) and the module's
 * fingerprint: the bitcode of the lowered, unoptimised LLVM module, which
 * holds every decision of the lowering, constants included. The file holds
 * a header (magic, format, the key, the payload's length and SHA-256) and
 * the object. A file whose header, key, length or checksum does not match
 * is a miss and is replaced by the next store; stores write a temporary
 * file in DIR, fsync it and rename it over the entry, so readers and
 * concurrent writers only ever see whole entries. */
#ifndef TPUCC_BACKEND_LLVM_CACHE_H
#define TPUCC_BACKEND_LLVM_CACHE_H

#include "backend/llvm/lower.h"

#include <llvm-c/TargetMachine.h>
#include <stdio.h>

typedef struct llvm_sha256 {
  uint32_t h[8];
  uint64_t len;
  uint8_t buf[64];
  size_t fill;
} llvm_sha256;
void llvm_sha256_init(llvm_sha256 *s);
void llvm_sha256_update(llvm_sha256 *s, const void *data, size_t n);
void llvm_sha256_final(llvm_sha256 *s, uint8_t out[32]);

enum { LLVM_CACHE_KEY_BYTES = 32 };

/* The key of compiling mod (lowered, not yet optimised) with o on tm. */
void llvm_cache_key(LLVMModuleRef mod, const cpu_options *o, LLVMTargetMachineRef tm,
                    uint8_t key[LLVM_CACHE_KEY_BYTES]);
/* The object stored under key in dir (malloc'd, *len bytes), or NULL when
 * there is none or it is damaged (*why says which, for statistics). */
void *llvm_cache_load(const char *dir, const uint8_t key[LLVM_CACHE_KEY_BYTES], size_t *len,
                      const char **why);
/* Stores obj under key in dir (made if missing, mode 0700). False with
 * the reason in err when it cannot (a read-only directory, a full disk):
 * the compile goes on without it. */
bool llvm_cache_store(const char *dir, const uint8_t key[LLVM_CACHE_KEY_BYTES], const void *obj,
                      size_t len, char *err, size_t errlen);
/* The entry's path for key in dir. */
void llvm_cache_path(const char *dir, const uint8_t key[LLVM_CACHE_KEY_BYTES], char *out,
                     size_t outlen);

/* split.c: optimises e->mod and generates its machine code as up to
 * nparts objects made on as many threads (one when the module does not
 * split; e->opt.dump_llvm: one), into objs[0..n). Returns n, or 0 after a
 * failure (in e). e->mod is changed (and still owned by the caller).
 * secs: the CPU seconds of optimisation and of code generation, summed
 * over the parts, and the most CPU seconds one part took. */
enum { LLVM_MAX_PARTS = 8 };
int llvm_compile_parts(emitter *e, int nparts, LLVMMemoryBufferRef *objs, double secs[3]);

/* A line on f (a terminal) while a compile runs for more than half a
 * second: the phase and the seconds so far, redrawn every 0.2 s and
 * erased at the end. NULL f: nothing (and NULL is returned). */
typedef struct llvm_progress llvm_progress;
llvm_progress *llvm_progress_start(FILE *f, int32_t kernels);
void llvm_progress_phase(llvm_progress *p, const char *phase); /* accepts NULL */
void llvm_progress_end(llvm_progress *p);                      /* accepts NULL */

#endif
