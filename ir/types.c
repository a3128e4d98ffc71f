/* types.c: element types, op table lookups, and exact bf16/f16 conversion. */
#include "ir/ir.h"

#include <math.h>

static const struct {
  const char *name;
  int size;
} types[] = {
#define X(e, s, n) {s, n},
    IR_ELEM_TYPES(X)
#undef X
};

const char *ir_type_name(ir_type t) {
  if (t == IR_TUPLE) return "tuple";
  if ((unsigned)t >= COUNTOF(types)) return "invalid";
  return types[t].name;
}

int ir_type_size(ir_type t) {
  return (unsigned)t < COUNTOF(types) ? types[t].size : 0;
}

bool ir_type_is_float(ir_type t) {
  return t == IR_BF16 || t == IR_F16 || t == IR_F32 || t == IR_F64;
}
bool ir_type_is_unsigned(ir_type t) {
  return t == IR_U4 || t == IR_U8 || t == IR_U16 || t == IR_U32 || t == IR_U64;
}
bool ir_type_is_int(ir_type t) {
  return t == IR_S4 || t == IR_S8 || t == IR_S16 || t == IR_S32 || t == IR_S64 ||
         ir_type_is_unsigned(t);
}
bool ir_type_is_complex(ir_type t) { return t == IR_C64 || t == IR_C128; }

enum {
#define X(e, s, n) CORE_##e,
  TPUCC_DTYPE_LIST(X)
#undef X
  CORE_COUNT
};
bool ir_type_is_core(ir_type t) { return (unsigned)t < CORE_COUNT; }

int ir_type_tpurt_code(ir_type t) {
  switch (t) {
#define X(e, s, n) case IR_##e: return TPURT_##e;
    TPUCC_DTYPE_LIST(X)
#undef X
  default: return 0;
  }
}

ir_type ir_type_of_tpurt_code(int code) {
  switch (code) {
#define X(e, s, n) case TPURT_##e: return IR_##e;
    TPUCC_DTYPE_LIST(X)
#undef X
  default: return IR_TYPE_INVALID;
  }
}

ir_type ir_type_from_name(const char *s, size_t len) {
  for (unsigned i = 0; i < COUNTOF(types); i++)
    if (strlen(types[i].name) == len && memcmp(types[i].name, s, len) == 0)
      return (ir_type)i;
  return IR_TYPE_INVALID;
}

static const struct {
  const char *name;
  int arity;
  unsigned flags;
} ops[] = {
#define OP(e, s, n, f, doc) {s, n, f},
#include "ir/ops.def"
#undef OP
};

const char *ir_op_name(ir_op op) {
  return (unsigned)op < IR_OP__COUNT ? ops[op].name : "invalid-op";
}
int ir_op_arity(ir_op op) { return (unsigned)op < IR_OP__COUNT ? ops[op].arity : -1; }
unsigned ir_op_flags(ir_op op) { return (unsigned)op < IR_OP__COUNT ? ops[op].flags : 0; }

ir_op ir_op_from_name(const char *s, size_t len) {
  for (int i = 0; i < IR_OP__COUNT; i++)
    if (strlen(ops[i].name) == len && memcmp(ops[i].name, s, len) == 0)
      return (ir_op)i;
  return IR_OP__COUNT;
}

uint16_t ir_f32_to_bf16(float f) { return base_f32_to_bf16(f); }
float ir_bf16_to_f32(uint16_t h) { return base_bf16_to_f32(h); }

/* f32 -> f16 with round to nearest even, including into subnormals. */
uint16_t ir_f32_to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  uint32_t absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u) return (uint16_t)(sign | 0x7e00 | ((absu >> 13) & 0x3ff));
  if (absu >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* >= 65520: inf */
  if (absu < 0x38800000u) {
    /* Result is subnormal or zero: value / 2^-24, rounded to nearest even. */
    if (absu < 0x33000000u) return sign; /* < 2^-25: rounds to 0 */
    uint32_t mant = (absu & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)(absu >> 23); /* 14..24 */
    uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return (uint16_t)(sign | q);
  }
  uint32_t e = (absu >> 23) - 112; /* rebias 127 -> 15 */
  uint32_t mant = absu & 0x7fffffu;
  uint32_t h = (e << 10) | (mant >> 13), rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
  return (uint16_t)(sign | h);
}

float ir_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float f;
  if (e == 0) {
    f = ldexpf((float)m, -24);
    return sign ? -f : f;
  }
  uint32_t u = e == 31 ? (sign | 0x7f800000u | (m << 13))
                       : (sign | ((e + 112) << 23) | (m << 13));
  memcpy(&f, &u, 4);
  return f;
}
