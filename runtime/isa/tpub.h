/* tpub.h: compiled TPU programs (.tpub files) in memory and on disk.
 *
 * ---- File format (version 1, all integers little-endian) ---------------
 *   offset size
 *   0      8   magic "TPUB\r\n\x1a\n"
 *   8      2   format version (TPUB_FORMAT_VERSION)
 *   10     2   ISA version (ISA_VERSION)
 *   12     4   section count (1..16)
 *   16     8   file size in bytes
 *   24     4   CRC-32 (IEEE 802.3, as zlib) of the whole file computed with
 *              these four bytes set to zero
 *   28     4   flags, must be 0
 *   32     8   HBM bytes the program uses (params, results, constants,
 *              scratch all lie below it)
 *   40     24  reserved, must be 0
 *   64     24 x count   section table: u32 kind, u32 item count,
 *                        u64 offset, u64 size
 * Sections start 8-aligned, after the table, in table order, without
 * overlap, inside the file; each kind appears at most once:
 *   1 TARGET     the target spec text (runtime/isa/target.h), count = 0
 *   2 SIGNATURE  count entries, each: u8 role (0 param, 1 result), u8 dtype
 *                (tpub_dtype), u8 rank (0..8), u8 name length (1..63),
 *                u32 0, u64 HBM offset, i64 dims[rank], name bytes, zero
 *                padding to 8. Tensors are dense row-major in HBM.
 *   3 CODE       count instruction words (u64, isa.h), 1..2^24
 *   4 CONST      count entries, each: u64 HBM offset, u64 size, data, zero
 *                padding to 8: written to HBM before each execution
 *   5 SMEM       count u32 words: SMEM's initial contents from address 0
 *   6 OPS        optional per-op attribution (tpub_ops.c): count = ops;
 *                u32 layout version (1), u32 runs; runs x {u32 first pc,
 *                u32 op} (first pcs strictly increasing from 0, each run
 *                lasting until the next, the last until the end of the
 *                code); then count entries, each: u64 useful FLOPs (what
 *                the compiler knows the op computes), u32 line, u32 column,
 *                u16 name length (1..255), u16 kind length (0..63), u16
 *                file length (0..1023), u16 0, the three strings
 *                (printable), zero padding to 8. Loader-checked: every pc
 *                maps to an op index < count.
 * TARGET, SIGNATURE and CODE are required.
 *
 * One CODE section, not one per unit: the scalar unit fetches a single
 * instruction stream and dispatches each instruction to its unit's queue
 * (docs/isa.md, "Why decoupled queues").
 *
 * ---- Verification --------------------------------------------------------
 * tpub_read checks the container (sizes, bounds, checksum, versions, every
 * field) and tpub_verify checks the program against a target: every word
 * decodes, every instruction passes isa_check, the last instruction is halt
 * or jmp (the pc cannot run off the end), every tensor and constant lies in
 * [0, hbm_bytes) without overlapping another, hbm_bytes fits the target's
 * HBM, the SMEM image fits SMEM. A verified program cannot make the
 * emulator misbehave: what remains (dynamic addresses, semaphores, cycle
 * limits) is checked while running and stops with a fault. */
#ifndef TPUCC_TPUB_H
#define TPUCC_TPUB_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "target.h"
#include "tpurt.h" /* the element type list */

#define TPUB_FORMAT_VERSION 1
#define TPUB_MAX_RANK 12 /* a signature entry stores its rank and that many dims: up to
                            12 reads in format 1 (older runtimes refuse above 8) */
#define TPUB_MAX_NAME 63
#define TPUB_MAX_CODE (1u << 24)
#define TPUB_MAX_TENSORS 4096

/* The element types of libtpurt's list (TPURT_DTYPE_LIST, include/tpurt.h):
 * TPUB_NAME is the type's number in the file. The list is in ascending
 * order, so TPUB_DTYPE_END is one past the largest. */
typedef enum tpub_dtype {
#define TPUB_DTYPE_ENUM_(name, code, spelling, bytes) TPUB_##name = code,
  TPURT_DTYPE_LIST(TPUB_DTYPE_ENUM_)
#undef TPUB_DTYPE_ENUM_
  TPUB_DTYPE_END
} tpub_dtype;

/* Element size in bytes (0 for an invalid dtype) and name ("f32"). */
int tpub_dtype_size(int dtype);
const char *tpub_dtype_name(int dtype);
int tpub_dtype_lookup(const char *name, size_t len); /* -1 when unknown */

typedef struct tpub_tensor {
  char name[TPUB_MAX_NAME + 1];
  int dtype;
  int rank;
  int64_t dims[TPUB_MAX_RANK];
  uint64_t hbm_offset;
  uint64_t bytes; /* product of dims x element size */
} tpub_tensor;

/* One HLO instruction (or fusion) of the optimised module that code
 * serves (the OPS section). Strings are owned by the image. */
typedef struct tpub_op {
  char *name;     /* instruction name ("fusion.3"), or "(parameters)" */
  char *kind;     /* HLO opcode ("fusion", "dot"), may be "" */
  char *file;     /* source file, may be "" */
  uint32_t line, col;
  uint64_t flops; /* useful FLOPs the compiler counted (2 x MACs of dots) */
} tpub_op;

#define TPUB_MAX_OPS (1u << 24)

typedef struct tpub_const {
  uint64_t hbm_offset, size;
  uint8_t *data; /* owned by the image */
} tpub_const;

/* A program in memory. Every pointer is owned by the image and freed by
 * tpub_free with the allocator it was made with. */
typedef struct tpub_image {
  rt_allocator alloc;
  char *target; /* spec text, NUL-terminated */
  uint64_t hbm_bytes;
  uint32_t nparams, nresults;
  tpub_tensor *params, *results;
  uint32_t ncode;
  uint64_t *code;
  uint32_t nconsts;
  tpub_const *consts;
  uint32_t nsmem; /* words */
  uint32_t *smem;
  /* OPS section (optional): nops == 0 means absent; otherwise op_of_pc
   * has ncode entries, each < nops. */
  uint32_t nops;
  tpub_op *ops;
  uint32_t *op_of_pc;
} tpub_image;

/* Sets img's op table from arrays the caller keeps (copied, strings too):
 * ops[nops], op_of_pc[img->ncode]. Returns 0, -1 when an index is out of
 * range or a string too long (err says which), -2 on OOM. */
int tpub_set_ops(tpub_image *img, const tpub_op *ops, uint32_t nops, const uint32_t *op_of_pc,
                 char *err, size_t errlen);
/* tpub_set_ops taking op_of_pc instead of copying it: op_of_pc must come
 * from img's allocator and becomes img's when the call returns 0 (on an
 * error the caller keeps it). Spares a copy of a word per instruction. */
int tpub_set_ops_take(tpub_image *img, const tpub_op *ops, uint32_t nops, uint32_t *op_of_pc,
                      char *err, size_t errlen);
/* Frees img's op table (nops becomes 0). */
void tpub_clear_ops(tpub_image *img);

/* Creates an empty image (all counts 0, target "v3"). NULL on OOM. */
tpub_image *tpub_new(const rt_allocator *a);
void tpub_free(tpub_image *img); /* accepts NULL */

/* Parses and checks a file image. Returns 0 and *out (owned by the caller),
 * or -1 with a reason in err; -2 when memory ran out. bytes are not kept. */
int tpub_read(const void *bytes, size_t size, const rt_allocator *a, tpub_image **out, char *err,
              size_t errlen);

/* Serialises img. Returns 0 and a buffer from a (free with rt_free), -1
 * when img is not representable (err says why), or -2 when memory ran
 * out. */
int tpub_write(const tpub_image *img, const rt_allocator *a, uint8_t **out, size_t *out_size,
               char *err, size_t errlen);

/* Checks img against a target (see "Verification"). Returns 0, -1 with
 * the reason in err, or -2 when memory ran out. */
int tpub_verify(const tpub_image *img, const tgt_target *t, char *err, size_t errlen);

/* The first 8 bytes of every .tpub file. */
#define TPUB_MAGIC "TPUB\r\n\x1a\n"
/* The largest program file the readers accept (2 GiB). */
#define TPUB_MAX_FILE ((uint64_t)1 << 31)

enum {
  TPUB_FILE_OK = 0,
  TPUB_FILE_NOT_FOUND, /* no such file */
  TPUB_FILE_IO,        /* a directory, not a regular file, unreadable */
  TPUB_FILE_TOO_LARGE, /* over TPUB_MAX_FILE bytes */
  TPUB_FILE_NOT_TPUB,  /* no TPUB_MAGIC (need_magic), or a header whose file
                          size is not the file's */
  TPUB_FILE_NO_MEMORY,
};
/* Reads the regular file at path whole through a (NULL: malloc), after
 * checking, before any allocation, that it is a regular file of at most
 * TPUB_MAX_FILE bytes, that it begins with TPUB_MAGIC (need_magic), and
 * when it does, that the file size in its header is the file's.
 * Returns TPUB_FILE_OK with *out (free with rt_free) and *out_len, or one
 * of the codes above with "PATH: reason" in why. The contents are not
 * checked beyond the magic: tpub_read does that. */
int tpub_read_file(const char *path, const rt_allocator *a, int need_magic, uint8_t **out,
                   size_t *out_len, char *why, size_t whylen);

/* CRC-32 (IEEE, reflected, init and xorout 0xFFFFFFFF) of n bytes. */
uint32_t tpub_crc32(const void *p, size_t n);

#endif
