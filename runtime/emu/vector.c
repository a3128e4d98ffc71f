/* vector.c: the vector unit's values: 32 registers of 8 sublanes x 128
 * lanes of 32-bit words, 8 mask registers, the transpose buffer, VMEM
 * loads and stores. Numerics (docs/isa.md, "Vector numerics"): IEEE f32
 * with the host in its default environment (round to nearest even,
 * subnormals kept); every f32 result that is a NaN is stored as the
 * canonical quiet NaN 0x7FC00000; transcendental functions are the double
 * precision C library function of the widened input, rounded once to f32. */
#include "emu.h"

#include <math.h>
#include <string.h>

#include "mxu.h"
#include "base/base.h"

#define NS TGT_SUBLANES
#define NL TGT_LANES
#define CANON_NAN 0x7FC00000u

/* The scalar kernels live in base/vmath.c (shared with the evaluator's
 * TPU-numerics mode, so both compute the same bits). */
static float f_of(uint32_t u) { return vmath_float(u); }
static uint32_t u_of(float f) { return vmath_bits(f); }

void emu_vector_regs(const isa_inst *in, uint32_t *vr, uint32_t *vw, uint32_t *mr, uint32_t *mw) {
  const char *ops = isa_info_of((isa_op)in->op)->operands;
  const uint8_t regs[4] = {in->a, in->b, in->c, in->d};
  *vr = *vw = *mr = *mw = 0;
  int r = 0;
  for (const char *p = ops; *p; p++) {
    if (*p != 'S' && *p != 'V' && *p != 'M' && *p != 'E') continue;
    int idx = r++;
    int dst = idx == 0 && in->op != OP_VST && in->op != OP_VSTH && in->op != OP_VSTB &&
              in->op != OP_VTPUSH;
    if (*p == 'V') *(dst ? vw : vr) |= 1u << regs[idx];
    if (*p == 'M') *(dst ? mw : mr) |= 1u << regs[idx];
  }
}

/* Fetches 8 rows at sa + imm + r*sb of rowbytes each: checks them all. */
static int rows_ok(emu_machine *m, const char *what, uint32_t base, int32_t imm, int32_t stride,
                   uint64_t rowbytes, int align, int64_t *addr0) {
  int64_t a0 = (int64_t)base + imm;
  int64_t a7 = a0 + (int64_t)stride * (NS - 1);
  int64_t lo = a0 < a7 ? a0 : a7, hi = a0 < a7 ? a7 : a0;
  if (emu_check_range(m, what, lo, (uint64_t)(hi - lo) + rowbytes, m->t.vmem_bytes, 1)) return -1;
  if (a0 % align || stride % align)
    return emu_fail(m, EMU_FAULT_MEMORY, "%s: address %lld or row stride %d is not %d-aligned",
                    what, (long long)a0, stride, align);
  *addr0 = a0;
  return 0;
}

typedef float (*un_fn)(float);
static float op_cvtif(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return vmath_cvtif(u);
}

int emu_vector_exec(emu_machine *m, const isa_inst *in) {
  uint32_t(*v)[NS][NL] = m->v;
  uint32_t *s = m->s;
  uint32_t(*d)[NL] = v[in->a];
  uint32_t(*A)[NL] = v[in->b];
  uint32_t(*B)[NL] = v[in->c];
  uint32_t tmp[NS][NL];
  un_fn un = NULL;
  switch ((isa_op)in->op) {
  case OP_VLD:
  case OP_VLDH: {
    int h = in->op == OP_VLDH;
    int64_t a0;
    int32_t stride = (int32_t)s[in->c];
    if (rows_ok(m, h ? "vldh VMEM range" : "vld VMEM range", s[in->b], in->imm, stride,
                (uint64_t)NL * (h ? 2 : 4), h ? 2 : 4, &a0))
      return -1;
    for (int r = 0; r < NS; r++)
      if (emu_hazard(m, 0, 0, (uint64_t)(a0 + (int64_t)stride * r), (uint64_t)NL * (h ? 2 : 4),
                     ISA_UNIT_VECTOR, m->now, m->now + 1))
        return -1;
    for (int r = 0; r < NS; r++) {
      const uint8_t *p = m->vmem + a0 + (int64_t)stride * r;
      if (h) {
        for (int l = 0; l < NL; l++) {
          uint16_t x;
          memcpy(&x, p + 2 * l, 2);
          d[r][l] = (uint32_t)x << 16;
        }
      } else {
        memcpy(d[r], p, NL * 4);
      }
    }
    return 0;
  }
  case OP_VST:
  case OP_VSTH: {
    int h = in->op == OP_VSTH;
    int64_t a0;
    int32_t stride = (int32_t)s[in->c];
    if (rows_ok(m, h ? "vsth VMEM range" : "vst VMEM range", s[in->b], in->imm, stride,
                (uint64_t)NL * (h ? 2 : 4), h ? 2 : 4, &a0))
      return -1;
    for (int r = 0; r < NS; r++)
      if (emu_hazard(m, 0, 1, (uint64_t)(a0 + (int64_t)stride * r), (uint64_t)NL * (h ? 2 : 4),
                     ISA_UNIT_VECTOR, m->now, m->now + 1))
        return -1;
    uint8_t(*mk)[NL] = m->mk[in->d];
    for (int r = 0; r < NS; r++) {
      uint8_t *p = m->vmem + a0 + (int64_t)stride * r;
      for (int l = 0; l < NL; l++) {
        if (!mk[r][l]) continue;
        if (h) {
          uint16_t x = base_f32_to_bf16(f_of(d[r][l]));
          memcpy(p + 2 * l, &x, 2);
        } else {
          memcpy(p + 4 * l, &d[r][l], 4);
        }
      }
    }
    return 0;
  }
  case OP_VLDB:
  case OP_VSTB: {
    int st = in->op == OP_VSTB;
    int64_t a0;
    int32_t stride = (int32_t)s[in->c];
    if (rows_ok(m, st ? "vstb VMEM range" : "vldb VMEM range", s[in->b], in->imm, stride, NL, 1,
                &a0))
      return -1;
    for (int r = 0; r < NS; r++)
      if (emu_hazard(m, 0, st, (uint64_t)(a0 + (int64_t)stride * r), NL, ISA_UNIT_VECTOR, m->now,
                     m->now + 1))
        return -1;
    uint8_t(*mk)[NL] = m->mk[in->d];
    for (int r = 0; r < NS; r++) {
      uint8_t *p = m->vmem + a0 + (int64_t)stride * r;
      for (int l = 0; l < NL; l++) {
        if (!st)
          d[r][l] = (uint32_t)(int32_t)(int8_t)p[l];
        else if (mk[r][l])
          p[l] = (uint8_t)d[r][l];
      }
    }
    return 0;
  }
  case OP_VBCAST:
  case OP_VIMM: {
    uint32_t x = in->op == OP_VBCAST ? s[in->b] : (uint32_t)in->imm;
    for (int r = 0; r < NS; r++)
      for (int l = 0; l < NL; l++)
        d[r][l] = x;
    return 0;
  }
  case OP_VMOV:
    memmove(d, A, sizeof tmp);
    return 0;
  case OP_VIOTA:
    for (int r = 0; r < NS; r++)
      for (int l = 0; l < NL; l++)
        d[r][l] = (uint32_t)(in->imm ? r : l);
    return 0;
#define BIN(OP, EXPR)                                                                              \
  case OP:                                                                                         \
    for (int r = 0; r < NS; r++)                                                                   \
      for (int l = 0; l < NL; l++) {                                                               \
        uint32_t a = A[r][l], b = B[r][l];                                                         \
        (void)a;                                                                                   \
        (void)b;                                                                                   \
        d[r][l] = (EXPR);                                                                          \
      }                                                                                            \
    return 0;
    BIN(OP_VADDF, u_of(f_of(a) + f_of(b)))
    BIN(OP_VSUBF, u_of(f_of(a) - f_of(b)))
    BIN(OP_VMULF, u_of(f_of(a) * f_of(b)))
    BIN(OP_VDIVF, u_of(f_of(a) / f_of(b)))
    BIN(OP_VMAXF, vmath_fmax(a, b))
    BIN(OP_VPOW, u_of(vmath_pow(f_of(a), f_of(b))))
    BIN(OP_VATAN2, u_of(vmath_atan2(f_of(a), f_of(b))))
    BIN(OP_VREMF, u_of(vmath_fmod(f_of(a), f_of(b))))
    BIN(OP_VMINF, vmath_fmin(a, b))
    BIN(OP_VADDI, a + b)
    BIN(OP_VSUBI, a - b)
    BIN(OP_VMULI, a * b)
    BIN(OP_VMAXI, (int32_t)a > (int32_t)b ? a : b)
    BIN(OP_VMINI, (int32_t)a < (int32_t)b ? a : b)
    BIN(OP_VAND, a & b)
    BIN(OP_VOR, a | b)
    BIN(OP_VXOR, a ^ b)
    BIN(OP_VSHL, a << (b & 31))
    BIN(OP_VSHR, a >> (b & 31))
    BIN(OP_VSRA, (uint32_t)((int32_t)a >> (b & 31)))
#undef BIN
  case OP_VEXP:
    un = vmath_exp;
    break;
  case OP_VLOG:
    un = vmath_log;
    break;
  case OP_VTANH:
    un = vmath_tanh;
    break;
  case OP_VLOGISTIC:
    un = vmath_logistic;
    break;
  case OP_VSQRT:
    un = vmath_sqrt;
    break;
  case OP_VRSQRT:
    un = vmath_rsqrt;
    break;
  case OP_VCVTIF:
    un = op_cvtif;
    break;
  case OP_VFLOOR:
    un = vmath_floor;
    break;
  case OP_VCEIL:
    un = vmath_ceil;
    break;
  case OP_VRNE:
    un = vmath_rne;
    break;
  case OP_VSIN:
    un = vmath_sin;
    break;
  case OP_VCOS:
    un = vmath_cos;
    break;
  case OP_VEXPM1:
    un = vmath_expm1;
    break;
  case OP_VLOG1P:
    un = vmath_log1p;
    break;
  case OP_VERF:
    un = vmath_erf;
    break;
  case OP_VCBRT:
    un = vmath_cbrt;
    break;
  case OP_VRNDBF:
    for (int r = 0; r < NS; r++)
      for (int l = 0; l < NL; l++)
        d[r][l] = (uint32_t)base_f32_to_bf16(f_of(A[r][l])) << 16;
    return 0;
  case OP_VABSF:
  case OP_VNEGF: {
    uint32_t and_ = in->op == OP_VABSF ? 0x7FFFFFFFu : 0xFFFFFFFFu;
    uint32_t xor_ = in->op == OP_VNEGF ? 0x80000000u : 0;
    for (int r = 0; r < NS; r++)
      for (int l = 0; l < NL; l++)
        d[r][l] = (A[r][l] & and_) ^ xor_;
    return 0;
  }
  case OP_VCVTFI:
    for (int r = 0; r < NS; r++)
      for (int l = 0; l < NL; l++)
        d[r][l] = (uint32_t)vmath_cvtfi(A[r][l]);
    return 0;
#define CMP(OP, EXPR)                                                                              \
  case OP:                                                                                         \
    if (in->a == 0) return 0; /* m0 stays all ones */                                              \
    for (int r = 0; r < NS; r++)                                                                   \
      for (int l = 0; l < NL; l++) {                                                               \
        uint32_t a = A[r][l], b = B[r][l];                                                         \
        float x = f_of(a), y = f_of(b);                                                            \
        (void)x;                                                                                   \
        (void)y;                                                                                   \
        m->mk[in->a][r][l] = (uint8_t)(EXPR);                                                      \
      }                                                                                            \
    return 0;
    CMP(OP_VCMPEQF, x == y)
    CMP(OP_VCMPNEF, x != y)
    CMP(OP_VCMPLTF, x < y)
    CMP(OP_VCMPLEF, x <= y)
    CMP(OP_VCMPEQI, a == b)
    CMP(OP_VCMPLTI, (int32_t)a < (int32_t)b)
    CMP(OP_VCMPLEI, (int32_t)a <= (int32_t)b)
#undef CMP
  case OP_VSEL: {
    /* vsel vd, mask(b), va(c), vb(d) */
    uint8_t(*mk)[NL] = m->mk[in->b];
    uint32_t(*X)[NL] = v[in->c];
    uint32_t(*Y)[NL] = v[in->d];
    for (int r = 0; r < NS; r++)
      for (int l = 0; l < NL; l++)
        tmp[r][l] = mk[r][l] ? X[r][l] : Y[r][l];
    memcpy(d, tmp, sizeof tmp);
    return 0;
  }
  case OP_MAND:
  case OP_MOR:
  case OP_MNOT: {
    if (in->a == 0) return 0;
    uint8_t(*md)[NL] = m->mk[in->a];
    uint8_t(*ma)[NL] = m->mk[in->b];
    uint8_t(*mb)[NL] = m->mk[in->c];
    for (int r = 0; r < NS; r++)
      for (int l = 0; l < NL; l++)
        md[r][l] = (uint8_t)(in->op == OP_MAND  ? (ma[r][l] & mb[r][l])
                             : in->op == OP_MOR ? (ma[r][l] | mb[r][l])
                                                : !ma[r][l]);
    return 0;
  }
  case OP_VRLSUM:
  case OP_VRLMAX:
  case OP_VRLMIN:
    for (int r = 0; r < NS; r++) {
      uint32_t acc = A[r][0];
      for (int l = 1; l < NL; l++) {
        uint32_t x = A[r][l];
        acc = in->op == OP_VRLSUM   ? u_of(f_of(acc) + f_of(x))
              : in->op == OP_VRLMAX ? vmath_fmax(acc, x)
                                    : vmath_fmin(acc, x);
      }
      if (f_of(acc) != f_of(acc)) acc = CANON_NAN;
      for (int l = 0; l < NL; l++)
        tmp[r][l] = acc;
    }
    memcpy(d, tmp, sizeof tmp);
    return 0;
  case OP_VRSSUM:
  case OP_VRSMAX:
  case OP_VRSMIN:
    for (int l = 0; l < NL; l++) {
      uint32_t acc = A[0][l];
      for (int r = 1; r < NS; r++) {
        uint32_t x = A[r][l];
        acc = in->op == OP_VRSSUM   ? u_of(f_of(acc) + f_of(x))
              : in->op == OP_VRSMAX ? vmath_fmax(acc, x)
                                    : vmath_fmin(acc, x);
      }
      if (f_of(acc) != f_of(acc)) acc = CANON_NAN;
      for (int r = 0; r < NS; r++)
        tmp[r][l] = acc;
    }
    memcpy(d, tmp, sizeof tmp);
    return 0;
  case OP_VTPUSH:
    /* vtpush va, blk: operand a is the source. */
    for (int r = 0; r < NS; r++)
      memcpy(m->tbuf[NS * in->imm + r], v[in->a][r], NL * 4);
    return 0;
  case OP_VTPOP:
    for (int r = 0; r < NS; r++)
      for (int l = 0; l < NL; l++)
        d[r][l] = m->tbuf[l][NS * in->imm + r];
    return 0;
  default:
    return emu_fail(m, EMU_FAULT_OPERAND, "not a vector instruction");
  }
  for (int r = 0; r < NS; r++)
    for (int l = 0; l < NL; l++)
      d[r][l] = u_of(un(f_of(A[r][l])));
  return 0;
}
