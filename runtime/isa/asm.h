/* asm.h: the assembler and disassembler of the text form of programs.
 *
 * Text form (docs/isa.md, "Assembler"): one statement per line; ';' or '#'
 * starts a comment; "name:" defines a label at the next instruction.
 *     .target v3,mxu=64x64           target spec (target.h)
 *     .hbm 1048576                   HBM bytes the program uses
 *     .param x bf16[256,256] @0      parameter: name, dtype[dims], HBM offset
 *     .result y f32[256,256] @131072 result
 *     .const @4096 f32 1.0, 2.5      constant data in HBM (also s32, bf16,
 *                                    u8 values, or "hex 00ff..")
 *     .smem 64 256, 1, 1, 1          SMEM words from byte address 64
 *     .equ ROWS 128                  a named immediate
 *     loop0: vaddf v1, v2, v3        an instruction (isa.def operands)
 * Immediates are decimal or 0x hex integers, .equ names, or f32 literals
 * written with an f suffix (1.5f, -2e-3f): their bits. Label operands are
 * label names or @index. Constants at adjacent offsets merge into one.
 *
 * The disassembler writes this form; assembling it gives back the same
 * image (same code words, tensors, constants and SMEM). */
#ifndef TPUCC_ISA_ASM_H
#define TPUCC_ISA_ASM_H

#include <stddef.h>

#include "alloc.h"
#include "tpub.h"

/* Assembles text (len bytes, need not be NUL-terminated). name is used in
 * messages ("name:line:col: error: ..."). Returns 0 and a new image in
 * *out, -1 with the errors (up to 10, each with the source line and a
 * caret) in err, or -2 when memory ran out. The image is not verified
 * against a target: call tpub_verify. */
int isa_assemble(const char *text, size_t len, const char *name, const rt_allocator *a,
                 tpub_image **out, char *err, size_t errlen);

/* Disassembles img into NUL-terminated text allocated from a (free with
 * rt_free). Words that do not decode are written as ".word 0x...". Returns
 * 0, or -1 when memory ran out. */
int isa_disassemble(const tpub_image *img, const rt_allocator *a, char **out_text, size_t *out_len);

#endif
