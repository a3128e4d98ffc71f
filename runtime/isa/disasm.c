/* disasm.c: tpub_image -> the assembler's text form (asm.h). Jump targets
 * get labels "L<index>:" so the listing reads like hand-written code and
 * assembles back to the same image. */
#include "asm.h"

#include <stdio.h>
#include <string.h>

#include "isa.h"

int isa_disassemble(const tpub_image *img, const rt_allocator *a, char **out_text,
                    size_t *out_len) {
  rt_buf b = {a, NULL, 0, 0, 0};
  *out_text = NULL;
  *out_len = 0;
  uint8_t *is_target = rt_calloc(a, img->ncode ? img->ncode : 1, 1);
  if (!is_target) return -1;
  for (uint32_t pc = 0; pc < img->ncode; pc++) {
    isa_inst in;
    if (isa_decode(img->code[pc], &in, NULL, 0)) continue;
    const char *ops = isa_info_of((isa_op)in.op)->operands;
    if (strchr(ops, 'L') && in.imm >= 0 && (uint32_t)in.imm < img->ncode) is_target[in.imm] = 1;
  }
  rt_buf_printf(&b, ".target %s\n.hbm %llu\n", img->target, (unsigned long long)img->hbm_bytes);
  for (uint32_t i = 0; i < img->nparams + img->nresults; i++) {
    int res = i >= img->nparams;
    const tpub_tensor *t = res ? &img->results[i - img->nparams] : &img->params[i];
    rt_buf_printf(&b, "%s %s %s[", res ? ".result" : ".param", t->name, tpub_dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++)
      rt_buf_printf(&b, "%s%lld", d ? "," : "", (long long)t->dims[d]);
    rt_buf_printf(&b, "] @%llu\n", (unsigned long long)t->hbm_offset);
  }
  for (uint32_t i = 0; i < img->nsmem; i += 8) {
    rt_buf_printf(&b, ".smem %u", i * 4);
    for (uint32_t j = i; j < img->nsmem && j < i + 8; j++)
      rt_buf_printf(&b, "%s%u", j == i ? " " : ", ", img->smem[j]);
    rt_buf_printf(&b, "\n");
  }
  for (uint32_t i = 0; i < img->nconsts; i++) {
    const tpub_const *c = &img->consts[i];
    for (uint64_t o = 0; o < c->size; o += 64) {
      rt_buf_printf(&b, ".const @%llu hex ", (unsigned long long)(c->hbm_offset + o));
      for (uint64_t j = o; j < c->size && j < o + 64; j++)
        rt_buf_printf(&b, "%02x", c->data[j]);
      rt_buf_printf(&b, "\n");
    }
  }
  for (uint32_t pc = 0; pc < img->ncode && !b.oom; pc++) {
    isa_inst in;
    char line[160];
    if (is_target[pc]) rt_buf_printf(&b, "L%u:\n", pc);
    if (isa_decode(img->code[pc], &in, NULL, 0)) {
      rt_buf_printf(&b, "  .word 0x%016llx\n", (unsigned long long)img->code[pc]);
      continue;
    }
    isa_format(&in, line, sizeof line);
    char *at = strchr(line, '@');
    if (at && strchr(isa_info_of((isa_op)in.op)->operands, 'L') && in.imm >= 0 &&
        (uint32_t)in.imm < img->ncode)
      *at = 'L';
    rt_buf_printf(&b, "  %s\n", line);
  }
  rt_free(a, is_target);
  if (b.oom) {
    rt_buf_free(&b);
    return -1;
  }
  if (!b.s) rt_buf_put(&b, "", 0);
  if (b.oom) return -1;
  *out_text = b.s;
  *out_len = b.len;
  return 0;
}
