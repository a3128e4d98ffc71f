/* isa.c: the instruction table, binary encoding and per-instruction checks.
 * Encoding diagram: isa.h. */
#include "isa.h"

#include <stdio.h>
#include <string.h>

static const isa_info infos[OP__COUNT] = {
#define ISA(name, mn, unit, fmt, occ, lat, sem) [OP_##name] = {mn, ISA_##unit, fmt, occ, lat, sem},
#include "isa.def"
#undef ISA
};

const isa_info *isa_info_of(isa_op op) { return &infos[op]; }

int isa_lookup(const char *mn, size_t len) {
  for (int i = 0; i < OP__COUNT; i++)
    if (strlen(infos[i].mnemonic) == len && !memcmp(infos[i].mnemonic, mn, len)) return i;
  return -1;
}

/* Which fields an op's operands occupy. */
typedef struct usage {
  int nregs; /* fields a.. used */
  int x, imm;
} usage;

static usage usage_of(const char *fmt) {
  usage u = {0, 0, 0};
  for (const char *p = fmt; *p; p++)
    switch (*p) {
    case 'S':
    case 'V':
    case 'M':
    case 'E':
      u.nregs++;
      break;
    case 'I':
    case 'L':
      u.imm = 1;
      break;
    default:
      u.x = 1;
      break;
    }
  return u;
}

uint64_t isa_encode(const isa_inst *in) {
  return (uint64_t)in->op << 56 | (uint64_t)(in->a & 31) << 51 | (uint64_t)(in->b & 31) << 46 |
         (uint64_t)(in->c & 31) << 41 | (uint64_t)(in->d & 31) << 36 |
         (uint64_t)(in->x & 15) << 32 | (uint64_t)(uint32_t)in->imm;
}

int isa_decode(uint64_t w, isa_inst *out, char *err, size_t errlen) {
  isa_inst in;
  in.op = (uint8_t)(w >> 56);
  in.a = (uint8_t)(w >> 51 & 31);
  in.b = (uint8_t)(w >> 46 & 31);
  in.c = (uint8_t)(w >> 41 & 31);
  in.d = (uint8_t)(w >> 36 & 31);
  in.x = (uint8_t)(w >> 32 & 15);
  in.imm = (int32_t)(uint32_t)w;
  if (in.op >= OP__COUNT) {
    if (err) snprintf(err, errlen, "unknown opcode %u", in.op);
    return -1;
  }
  usage u = usage_of(infos[in.op].operands);
  const uint8_t regs[4] = {in.a, in.b, in.c, in.d};
  for (int i = u.nregs; i < 4; i++)
    if (regs[i]) {
      if (err)
        snprintf(err, errlen, "%s: unused register field %c is not zero", infos[in.op].mnemonic,
                 'a' + i);
      return -1;
    }
  if ((!u.x && in.x) || (!u.imm && in.imm)) {
    if (err)
      snprintf(err, errlen, "%s: unused %s field is not zero", infos[in.op].mnemonic,
               !u.x && in.x ? "x" : "imm");
    return -1;
  }
  *out = in;
  return 0;
}

const char *isa_unit_name(int unit) {
  static const char *const names[ISA_UNIT_COUNT] = {"scalar", "vector", "mxu0", "mxu1", "mxu2",
                                                    "mxu3",   "dma0",   "dma1", "dma2", "dma3",
                                                    "dma4",   "dma5",   "dma6", "dma7"};
  return unit >= 0 && unit < ISA_UNIT_COUNT ? names[unit] : "?";
}

int isa_exec_unit(const isa_inst *in) {
  switch (infos[in->op].unit) {
  case ISA_SCALAR:
    return ISA_UNIT_SCALAR;
  case ISA_VECTOR:
    return ISA_UNIT_VECTOR;
  case ISA_MXU:
    return ISA_UNIT_MXU0 + in->x;
  case ISA_DMA:
    return ISA_UNIT_DMA0 + in->x;
  case ISA_SYNC:
    return in->x;
  }
  return 0;
}

static int unit_exists(int u, const tgt_target *t) {
  if (u == ISA_UNIT_SCALAR || u == ISA_UNIT_VECTOR) return 1;
  if (u >= ISA_UNIT_MXU0 && u < ISA_UNIT_MXU0 + t->mxus) return 1;
  if (u >= ISA_UNIT_DMA0 && u < ISA_UNIT_DMA0 + t->dma_queues) return 1;
  return 0;
}

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    if (err) snprintf(err, errlen, __VA_ARGS__);                                                   \
    return -1;                                                                                     \
  } while (0)

/* A static VMEM access [addr, addr+len) when base and stride are s0. */
static int vmem_static_ok(int64_t addr, uint64_t len, const tgt_target *t) {
  return addr >= 0 && (uint64_t)addr + len <= t->vmem_bytes;
}

static int imm_check(const isa_inst *in, const tgt_target *t, char *err, size_t errlen);

int isa_check(const isa_inst *in, const tgt_target *t, uint32_t ncode, char *err, size_t errlen) {
  const isa_info *f = &infos[in->op];
  const uint8_t regs[4] = {in->a, in->b, in->c, in->d};
  int r = 0;
  for (const char *p = f->operands; *p; p++)
    switch (*p) {
    case 'M':
      if (regs[r] >= TGT_MREGS)
        FAIL("%s: mask register m%d does not exist (m0..m7)", f->mnemonic, regs[r]);
      r++;
      break;
    case 'S':
    case 'V':
    case 'E':
      r++;
      break; /* 5 bits: always valid */
    case 'L':
      if (in->imm < 0 || (uint32_t)in->imm >= ncode)
        FAIL("%s: jump target %d outside the code (0..%u)", f->mnemonic, in->imm,
             ncode ? ncode - 1 : 0);
      break;
    case 'X':
      if (in->x >= t->mxus)
        FAIL("%s: mxu%d does not exist on this target (%d MXUs)", f->mnemonic, in->x, t->mxus);
      break;
    case 'Q':
      if (in->x >= t->dma_queues)
        FAIL("%s: dma%d does not exist on this target (%d queues)", f->mnemonic, in->x,
             t->dma_queues);
      break;
    case 'U':
      if (!unit_exists(in->x, t))
        FAIL("%s: unit %d (%s) does not exist on this target", f->mnemonic, in->x,
             isa_unit_name(in->x));
      break;
    default:
      break;
    }
  return imm_check(in, t, err, errlen) < 0 ? -1 : 0;
}

/* isa_check's rules for immediates and static addresses, by opcode: 0
 * when in passes, -1 (a reason in err) when not, 1 when op has no rule. */
static int imm_check(const isa_inst *in, const tgt_target *t, char *err, size_t errlen) {
  const isa_info *f = &infos[in->op];
  int64_t imm = in->imm;
  switch ((isa_op)in->op) {
  case OP_WAIT:
  case OP_SIGNAL:
  case OP_IWAIT:
    if (imm < 1 || imm > 65535)
      FAIL("%s: count %lld outside 1..65535", f->mnemonic, (long long)imm);
    break;
  case OP_SLD:
  case OP_SST: {
    if (in->b == 0 && (imm < 0 || imm % 4 || (uint64_t)imm + 4 > t->smem_bytes))
      FAIL("%s: SMEM address %lld is not a 4-aligned word inside SMEM "
           "(%llu bytes)",
           f->mnemonic, (long long)imm, (unsigned long long)t->smem_bytes);
    break;
  }
  case OP_VTOS:
    if (imm < 0 || imm >= TGT_SUBLANES * TGT_LANES)
      FAIL("vtos: element %lld outside 0..%d", (long long)imm, TGT_SUBLANES * TGT_LANES - 1);
    break;
  case OP_VIOTA:
    if (imm != 0 && imm != 1)
      FAIL("viota: mode %lld must be 0 (lane) or 1 (sublane)", (long long)imm);
    break;
  case OP_VTPUSH:
  case OP_VTPOP:
    if (imm < 0 || imm >= TGT_LANES / TGT_SUBLANES)
      FAIL("%s: block %lld outside 0..%d", f->mnemonic, (long long)imm,
           TGT_LANES / TGT_SUBLANES - 1);
    break;
  case OP_VLD:
  case OP_VLDH:
  case OP_VLDB:
  case OP_VST:
  case OP_VSTH:
  case OP_VSTB: {
    int esz = in->op == OP_VLD || in->op == OP_VST     ? 4
              : in->op == OP_VLDB || in->op == OP_VSTB ? 1
                                                       : 2;
    if (in->b == 0 && in->c == 0 && !vmem_static_ok(imm, (uint64_t)esz * TGT_LANES, t))
      FAIL("%s: VMEM range at %lld is outside VMEM (%llu bytes)", f->mnemonic, (long long)imm,
           (unsigned long long)t->vmem_bytes);
    if (in->b == 0 && imm % esz)
      FAIL("%s: VMEM address %lld is not %d-aligned", f->mnemonic, (long long)imm, esz);
    break;
  }
  case OP_MPUSH:
  case OP_MPUSHA:
  case OP_MPOPM:
    if (imm < 1 || imm > t->acc_rows)
      FAIL("%s: row count %lld outside 1..%d", f->mnemonic, (long long)imm, t->acc_rows);
    break;
  case OP_MPUSHV:
  case OP_MPUSHVA:
    if (t->mxu_rows > TGT_LANES)
      FAIL("%s: needs an MXU of at most %d rows (this one has %d)", f->mnemonic, TGT_LANES,
           t->mxu_rows);
    break;
  case OP_COREID:
    if (imm != 0 && imm != 1)
      FAIL("coreid: selector %lld must be 0 (core id) or 1 (core count)", (long long)imm);
    break;
  case OP_DMAPUT:
    if (imm & ~(int64_t)ISA_PUT_FLAGS_MASK)
      FAIL("dmaput: flags 0x%llx: only bits 0-4 (remote semaphore), 5 (source VMEM) and 6 "
           "(destination VMEM) may be set",
           (unsigned long long)(uint32_t)imm);
    break;
  case OP_MPOP:
    if (imm < 0 || imm >= t->mxu_cols)
      FAIL("mpop: column offset %lld outside 0..%d", (long long)imm, t->mxu_cols - 1);
    break;
  default:
    return 1;
  }
  return 0;
}

/* Field positions (isa.h's diagram). */
enum { SHIFT_A = 51, SHIFT_X = 32 };
#define FIELD5(k) ((uint64_t)31 << (SHIFT_A - 5 * (k))) /* register field k: a, b, c, d */

void isa_checker_init(isa_checker *c, const tgt_target *t, uint32_t ncode) {
  memset(c, 0, sizeof *c);
  c->t = *t;
  c->ncode = ncode;
  for (int op = 0; op < OP__COUNT; op++) {
    usage u = usage_of(infos[op].operands);
    uint64_t zero = 0;
    for (int k = u.nregs; k < 4; k++) zero |= FIELD5(k);
    if (!u.x) zero |= (uint64_t)15 << SHIFT_X;
    if (!u.imm) zero |= 0xFFFFFFFFu;
    uint32_t xok = 0xFFFF;
    int r = 0;
    for (const char *p = infos[op].operands; *p; p++) {
      uint32_t allow = 0;
      switch (*p) {
      case 'M': /* m0..m7: the field's two high bits are zero */
        zero |= FIELD5(r) & ~((uint64_t)7 << (SHIFT_A - 5 * r));
        r++;
        continue;
      case 'S':
      case 'V':
      case 'E': r++; continue;
      case 'L': c->label[op] = 1; continue;
      case 'I': continue;
      case 'X':
        for (int v = 0; v < 16; v++) allow |= (uint32_t)(v < t->mxus) << v;
        break;
      case 'Q':
        for (int v = 0; v < 16; v++) allow |= (uint32_t)(v < t->dma_queues) << v;
        break;
      default: /* U */
        for (int v = 0; v < 16; v++) allow |= (uint32_t)unit_exists(v, t) << v;
        break;
      }
      xok &= allow;
    }
    c->zero[op] = zero;
    c->xok[op] = (uint16_t)xok;
    isa_inst probe = {(uint8_t)op, 0, 0, 0, 0, 0, 0};
    c->imm_rule[op] = imm_check(&probe, t, NULL, 0) != 1;
  }
}

static inline int check_word(const isa_checker *c, uint64_t w, isa_inst *out) {
  unsigned op = (unsigned)(w >> 56);
  if (op >= OP__COUNT || (w & c->zero[op])) return -1;
  isa_inst in;
  in.op = (uint8_t)op;
  in.a = (uint8_t)(w >> 51 & 31);
  in.b = (uint8_t)(w >> 46 & 31);
  in.c = (uint8_t)(w >> 41 & 31);
  in.d = (uint8_t)(w >> 36 & 31);
  in.x = (uint8_t)(w >> SHIFT_X & 15);
  in.imm = (int32_t)(uint32_t)w;
  if (!(c->xok[op] >> in.x & 1)) return -1;
  if (c->label[op] && (in.imm < 0 || (uint32_t)in.imm >= c->ncode)) return -1;
  if (c->imm_rule[op] && imm_check(&in, &c->t, NULL, 0)) return -1;
  *out = in;
  return 0;
}

int isa_check_word(const isa_checker *c, uint64_t w, isa_inst *out) {
  return check_word(c, w, out);
}

uint32_t isa_check_words(const isa_checker *c, const uint64_t *code, uint32_t n) {
  isa_inst in;
  for (uint32_t i = 0; i < n; i++)
    if (check_word(c, code[i], &in)) return i;
  return n;
}

int isa_format(const isa_inst *in, char *buf, size_t n) {
  const isa_info *f = &infos[in->op];
  const uint8_t regs[4] = {in->a, in->b, in->c, in->d};
  int r = 0;
  size_t len = 0;
  int k = snprintf(buf, n, "%s", f->mnemonic);
#define ADV(k_)                                                                                    \
  do {                                                                                             \
    len += (size_t)(k_);                                                                           \
  } while (0)
  ADV(k);
  for (const char *p = f->operands; *p; p++) {
    const char *sep = p == f->operands ? " " : ", ";
    char *dst = len < n ? buf + len : NULL;
    size_t room = len < n ? n - len : 0;
    switch (*p) {
    case 'S':
      k = snprintf(dst, room, "%ss%d", sep, regs[r++]);
      break;
    case 'V':
      k = snprintf(dst, room, "%sv%d", sep, regs[r++]);
      break;
    case 'M':
      k = snprintf(dst, room, "%sm%d", sep, regs[r++]);
      break;
    case 'E':
      k = snprintf(dst, room, "%ssem%d", sep, regs[r++]);
      break;
    case 'I':
      k = snprintf(dst, room, "%s%d", sep, in->imm);
      break;
    case 'L':
      k = snprintf(dst, room, "%s@%d", sep, in->imm);
      break;
    case 'X':
      k = snprintf(dst, room, "%smxu%d", sep, in->x);
      break;
    case 'Q':
      k = snprintf(dst, room, "%sdma%d", sep, in->x);
      break;
    default:
      k = in->x < ISA_UNIT_COUNT ? snprintf(dst, room, "%s%s", sep, isa_unit_name(in->x))
                                 : snprintf(dst, room, "%sunit%d", sep, in->x);
      break;
    }
    ADV(k);
  }
#undef ADV
  return (int)len;
}
