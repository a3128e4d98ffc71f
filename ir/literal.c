/* literal.c: dense values: creation, element access with conversion,
 * equality. (Printing in HLO syntax lives in print.c.) */
#include "ir/ir.h"

#include <math.h>

ir_literal *ir_literal_create(arena *a, const ir_shape *s) {
  ir_literal *l = arena_alloc(a, sizeof *l);
  l->shape = ir_shape_clone(a, s);
  if (s->type == IR_TUPLE) {
    l->elems = arena_array(a, (size_t)(s->ntuple ? s->ntuple : 1), sizeof(ir_literal *));
    for (int i = 0; i < s->ntuple; i++) l->elems[i] = ir_literal_create(a, &s->tuple[i]);
    return l;
  }
  int64_t n;
  if (!ir_shape_elements(s, &n)) return NULL;
  size_t bytes;
  if (base_mul_overflow((size_t)n, (size_t)ir_type_size(s->type), &bytes)) return NULL;
  l->nbytes = bytes;
  l->data = arena_alloc(a, bytes ? bytes : 1);
  return l;
}

double ir_literal_get_f64(const ir_literal *l, int64_t i) {
  switch (l->shape.type) {
  case IR_PRED: return ((const uint8_t *)l->data)[i] ? 1.0 : 0.0;
  case IR_S8: return ((const int8_t *)l->data)[i];
  case IR_S32: return ((const int32_t *)l->data)[i];
  case IR_BF16: return ir_bf16_to_f32(((const uint16_t *)l->data)[i]);
  case IR_F16: return ir_f16_to_f32(((const uint16_t *)l->data)[i]);
  case IR_F32: return ((const float *)l->data)[i];
  case IR_F64: return ((const double *)l->data)[i];
  case IR_U64: return (double)((const uint64_t *)l->data)[i];
  case IR_C64: return ((const float *)l->data)[2 * i];   /* the real part */
  case IR_C128: return ((const double *)l->data)[2 * i];
  default: return (double)ir_literal_get_i64(l, i);
  }
}

int64_t ir_literal_get_i64(const ir_literal *l, int64_t i) {
  switch (l->shape.type) {
  case IR_PRED: return ((const uint8_t *)l->data)[i] ? 1 : 0;
  case IR_S8: return ((const int8_t *)l->data)[i];
  case IR_S32: return ((const int32_t *)l->data)[i];
  case IR_S4: return ((const int8_t *)l->data)[i];
  case IR_S16: return ((const int16_t *)l->data)[i];
  case IR_S64: return ((const int64_t *)l->data)[i];
  case IR_U4:
  case IR_U8: return ((const uint8_t *)l->data)[i];
  case IR_U16: return ((const uint16_t *)l->data)[i];
  case IR_U32: return ((const uint32_t *)l->data)[i];
  case IR_U64: return (int64_t)((const uint64_t *)l->data)[i]; /* bits */
  case IR_TOKEN: return 0;
  default: {
    double d = ir_literal_get_f64(l, i);
    if (isnan(d)) return 0;
    if (d >= 9.2233720368547758e18) return INT64_MAX;
    if (d <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)d;
  }
  }
}

/* double -> float rounding to odd: truncate, then set the last bit when
 * inexact. Rounding that result again to bf16/f16 (nearest even) equals
 * rounding v directly, which (float)v followed by RNE would not be
 * (double rounding on near-ties). */
static float to_f32_round_odd(double v) {
  float f = (float)v;
  if (isnan(v) || (double)f == v) return f;
  if (fabs((double)f) > fabs(v)) f = nextafterf(f, 0.0f);
  uint32_t u;
  memcpy(&u, &f, 4);
  u |= 1;
  memcpy(&f, &u, 4);
  return f;
}

void ir_literal_set_f64(ir_literal *l, int64_t i, double v) {
  switch (l->shape.type) {
  case IR_PRED: ((uint8_t *)l->data)[i] = v != 0; break;
  case IR_S8:
  case IR_S32: {
    /* float -> int saturates, NaN -> 0 (XLA's convert semantics) */
    int64_t x = isnan(v) ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
    if (l->shape.type == IR_S8) ((int8_t *)l->data)[i] = (int8_t)(x > 127 ? 127 : x < -128 ? -128 : x);
    else ((int32_t *)l->data)[i] = (int32_t)(x > INT32_MAX ? INT32_MAX : x < INT32_MIN ? INT32_MIN : x);
    break;
  }
  case IR_BF16: ((uint16_t *)l->data)[i] = ir_f32_to_bf16(to_f32_round_odd(v)); break;
  case IR_F16: ((uint16_t *)l->data)[i] = ir_f32_to_f16(to_f32_round_odd(v)); break;
  case IR_F32: ((float *)l->data)[i] = (float)v; break;
  case IR_F64: ((double *)l->data)[i] = v; break;
  case IR_C64: ((float *)l->data)[2 * i] = (float)v; ((float *)l->data)[2 * i + 1] = 0; break;
  case IR_C128: ((double *)l->data)[2 * i] = v; ((double *)l->data)[2 * i + 1] = 0; break;
  case IR_TOKEN: break;
  default: {
    /* the wider integers: saturate to the type's range, NaN -> 0 */
    double lo = ir_type_is_unsigned(l->shape.type) ? 0 : -9.2233720368547758e18;
    if (isnan(v)) v = 0;
    if (v < lo) v = lo;
    if (ir_type_is_unsigned(l->shape.type) && v >= 1.8446744073709552e19) {
      ir_literal_set_i64(l, i, -1); /* all ones: the u64 maximum, wrapped below */
    } else if (ir_type_is_unsigned(l->shape.type) && v >= 9.2233720368547758e18) {
      ir_literal_set_i64(l, i, (int64_t)(uint64_t)v);
    } else {
      ir_literal_set_i64(l, i, v >= 9.2233720368547758e18 ? INT64_MAX : (int64_t)v);
    }
    break;
  }
  }
}

void ir_literal_set_i64(ir_literal *l, int64_t i, int64_t v) {
  switch (l->shape.type) {
  case IR_PRED: ((uint8_t *)l->data)[i] = v != 0; break;
  case IR_S8: ((int8_t *)l->data)[i] = (int8_t)(uint8_t)(uint64_t)v; break;
  case IR_S32: ((int32_t *)l->data)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
  case IR_S4: ((int8_t *)l->data)[i] = (int8_t)((int8_t)((uint8_t)(uint64_t)v << 4) >> 4); break;
  case IR_U4: ((uint8_t *)l->data)[i] = (uint8_t)((uint64_t)v & 15); break;
  case IR_S16: ((int16_t *)l->data)[i] = (int16_t)(uint16_t)(uint64_t)v; break;
  case IR_U8: ((uint8_t *)l->data)[i] = (uint8_t)(uint64_t)v; break;
  case IR_U16: ((uint16_t *)l->data)[i] = (uint16_t)(uint64_t)v; break;
  case IR_U32: ((uint32_t *)l->data)[i] = (uint32_t)(uint64_t)v; break;
  case IR_S64: ((int64_t *)l->data)[i] = v; break;
  case IR_U64: ((uint64_t *)l->data)[i] = (uint64_t)v; break;
  default: ir_literal_set_f64(l, i, (double)v); break;
  }
}

bool ir_literal_equal(const ir_literal *a, const ir_literal *b) {
  if (!ir_shape_equal(&a->shape, &b->shape)) return false;
  if (a->shape.type == IR_TUPLE) {
    for (int i = 0; i < a->shape.ntuple; i++)
      if (!ir_literal_equal(a->elems[i], b->elems[i])) return false;
    return true;
  }
  return a->nbytes == b->nbytes && memcmp(a->data, b->data, a->nbytes) == 0;
}
