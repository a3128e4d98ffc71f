/* isa.h: the tpucc TensorCore instruction set: opcodes, the binary
 * encoding, per-instruction checks, the disassembler and the assembler.
 * Everything is derived from the table in isa.def. Used by the runtime
 * (loader, emulator) and by the compiler backend (encoder).
 *
 * ---- Encoding -----------------------------------------------------------
 * Every instruction is one 64-bit little-endian word:
 *
 *   63      56 55   51 50   46 45   41 40   36 35  32 31                  0
 *  +----------+-------+-------+-------+-------+------+---------------------+
 *  |  opcode  |   a   |   b   |   c   |   d   |  x   |         imm         |
 *  +----------+-------+-------+-------+-------+------+---------------------+
 *       8        5       5       5       5       4             32
 *
 * opcode is the row of isa.def. Register and semaphore operands (letters
 * S V M E) fill a, b, c, d in operand order; I and L fill imm (two's
 * complement); X, Q and U fill x (U: 0 scalar, 1 vector, 2+i mxu i, 6+q dma
 * queue q). Fields an instruction does not use must be zero: the decoder
 * rejects the word otherwise, so every valid word has exactly one text form
 * and encode(decode(w)) == w.
 *
 * Not thread-safe to mutate; all functions here are reentrant. */
#ifndef TPUCC_ISA_H
#define TPUCC_ISA_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "target.h"

/* Bumped whenever a row of isa.def changes meaning or the encoding changes. */
#define ISA_VERSION 1

typedef enum isa_op {
#define ISA(name, mn, unit, fmt, occ, lat, sem) OP_##name,
#include "isa.def"
#undef ISA
  OP__COUNT
} isa_op;

typedef enum isa_unit_kind { ISA_SCALAR, ISA_VECTOR, ISA_MXU, ISA_DMA, ISA_SYNC } isa_unit_kind;

/* Unit ids (field x of U operands, and the emulator's unit numbering). */
enum {
  ISA_UNIT_SCALAR = 0,
  ISA_UNIT_VECTOR = 1,
  ISA_UNIT_MXU0 = 2,
  ISA_UNIT_DMA0 = 2 + TGT_MAX_MXUS,
  ISA_UNIT_COUNT = ISA_UNIT_DMA0 + TGT_MAX_DMA_QUEUES
};

typedef struct isa_info {
  const char *mnemonic;
  isa_unit_kind unit;
  const char *operands; /* letters, see isa.def */
  int occ, lat;         /* -1: derived (docs/isa.md) */
  const char *semantics;
} isa_info;

/* The row for op; op must be < OP__COUNT. */
const isa_info *isa_info_of(isa_op op);
/* The op with this mnemonic, or -1. */
int isa_lookup(const char *mnemonic, size_t len);

/* A decoded instruction: fields as in the diagram above. */
typedef struct isa_inst {
  uint8_t op, a, b, c, d, x;
  int32_t imm;
} isa_inst;

uint64_t isa_encode(const isa_inst *in);
/* Decodes w. Returns 0, or -1 when the opcode is unknown or an unused field
 * is not zero (a reason goes into err, errlen bytes). */
int isa_decode(uint64_t w, isa_inst *out, char *err, size_t errlen);

/* Checks one decoded instruction against a target and a code size: register
 * classes (masks < 8), semaphores, MXU and DMA queue indices, label targets
 * (< ncode), immediate ranges, and memory ranges when they are static (base
 * and stride registers are s0). Returns 0 or -1 with a reason in err. */
int isa_check(const isa_inst *in, const tgt_target *t, uint32_t ncode, char *err, size_t errlen);

/* isa_decode and isa_check of many words against one target and code
 * size, from a table built once (per opcode: the bits that must be zero,
 * the values field x may take, whether imm is a label, whether isa_check
 * has a rule for its immediate). isa_check_word
 * returns 0 and the decoded instruction exactly when isa_decode and
 * isa_check would both accept w; -1 otherwise (call them for the reason). */
typedef struct isa_checker {
  tgt_target t;
  uint32_t ncode;
  uint64_t zero[OP__COUNT];
  uint16_t xok[OP__COUNT];
  uint8_t label[OP__COUNT], imm_rule[OP__COUNT];
} isa_checker;
void isa_checker_init(isa_checker *c, const tgt_target *t, uint32_t ncode);
int isa_check_word(const isa_checker *c, uint64_t w, isa_inst *out);
/* The index of the first word of code[0..n) that isa_check_word rejects,
 * or n. */
uint32_t isa_check_words(const isa_checker *c, const uint64_t *code, uint32_t n);

/* dmaput's immediate: the destination core's semaphore in bits 0-4, the
 * source in VMEM (else HBM) in bit 5, the destination in VMEM (else HBM) in
 * bit 6; the other bits are zero. Its SMEM descriptor is the 10 words of
 * dmald/dmast (strides 4..6 the source's, 7..9 the destination's) and a
 * word 10 naming the destination core (docs/isa.md, "ICI transfers"). */
enum {
  ISA_PUT_SEM_MASK = 31,
  ISA_PUT_SRC_VMEM = 32,
  ISA_PUT_DST_VMEM = 64,
  ISA_PUT_FLAGS_MASK = 127,
  ISA_PUT_DESC_WORDS = 11
};

/* Unit id that executes `in` (ISA_UNIT_*; for SYNC the unit operand). */
int isa_exec_unit(const isa_inst *in);
/* Name of a unit id ("scalar", "vector", "mxu0", "dma1"); "?" when bad. */
const char *isa_unit_name(int unit);

/* Writes the text form of one instruction (no label names: L operands are
 * printed as "@index") into buf; returns snprintf's count. */
int isa_format(const isa_inst *in, char *buf, size_t n);

#endif
