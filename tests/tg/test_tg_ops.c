/* test_tg_ops.c: every .tg operation and composite, evaluated with the
 * reference evaluator on pseudo-random inputs and compared element by
 * element with an oracle written here as a straightforward C formula
 * (double precision). Each case's result type is declared in its source,
 * so the lowering's shapes are checked too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/tg/tg_util.h"

typedef double (*oracle)(ir_literal **in, const int64_t *o);

typedef struct tcase {
  const char *name;
  const char *src;
  double tol; /* relative: |got - want| <= tol * (1 + |want|); 0 = exact */
  oracle fn;
} tcase;

/* Element of l at a multi-index. */
static double at_(const ir_literal *l, const int64_t *ix) {
  int64_t lin = 0;
  for (int i = 0; i < l->shape.rank; i++) lin = lin * l->shape.dims[i] + ix[i];
  return ir_literal_get_f64(l, lin);
}
#define AT(l, ...) at_((l), (int64_t[]){__VA_ARGS__})
#define DIM(l, i) ((l)->shape.dims[i])
static double bf(double x) { return ir_bf16_to_f32(ir_f32_to_bf16((float)x)); }
static double fl(double x) { return (float)x; }

/* ---- elementwise ------------------------------------------------------- */

#define G23(body) "graph g(x: f32[2,3], y: f32[2,3]) -> f32[2,3] { return " body "; }"
#define X2 AT(in[0], o[0], o[1])
#define Y2 AT(in[1], o[0], o[1])

#define UN(nm, body, cexpr)                                                    \
  static double o_##nm(ir_literal **in, const int64_t *o) {                    \
    double x = X2, y = Y2;                                                     \
    (void)x, (void)y;                                                          \
    return (cexpr);                                                            \
  }
UN(abs, "abs(x)", fabs(x))
UN(neg, "neg(x)", -x)
UN(negate, "negate(x)", -x)
UN(exp, "exp(x)", exp(x))
UN(expm1, "expm1(x)", expm1(x))
UN(log, "log(x * x + 0.5)", log(fl(fl(x * x) + 0.5)))
UN(log1p, "log1p(x * x)", log1p(fl(x * x)))
UN(sqrt, "sqrt(x * x)", fabs(x))
UN(rsqrt, "rsqrt(x * x + 1)", 1 / sqrt(fl(fl(x * x) + 1)))
UN(cbrt, "cbrt(x)", cbrt(x))
UN(tanh, "tanh(x)", tanh(x))
UN(logistic, "logistic(x)", 1 / (1 + exp(-x)))
UN(sigmoid, "sigmoid(x)", 1 / (1 + exp(-x)))
UN(sin, "sin(x)", sin(x))
UN(cos, "cos(x)", cos(x))
UN(floor, "floor(x * 4)", floor(fl(x * 4)))
UN(ceil, "ceil(x * 4)", ceil(fl(x * 4)))
UN(round, "round(x * 4)", round(fl(x * 4)))
UN(round_even, "round_even(x * 4 + 0.5)", nearbyint(fl(fl(x * 4) + 0.5)))
UN(sign, "sign(x)", x > 0 ? 1 : x < 0 ? -1 : 0)
UN(copy, "copy(x)", x)
UN(unary_minus, "-x", -x)
UN(precedence, "-x ** 2 + 3 * x - 1", fl(fl(-fl(x * x)) + fl(3 * x)) - 1)
UN(literal_fold, "x * (2 + 3) ** 2", x * 25)
UN(add, "x + y", x + y)
UN(add_named, "add(x, y)", x + y)
UN(sub, "x - y", x - y)
UN(sub_named, "sub(x, y)", x - y)
UN(subtract, "subtract(x, y)", x - y)
UN(mul, "x * y", x * y)
UN(mul_named, "mul(x, y)", x * y)
UN(multiply, "multiply(x, y)", x * y)
UN(div, "x / y", fl(x) / fl(y))
UN(div_named, "div(x, y)", x / y)
UN(divide, "divide(x, y)", x / y)
UN(rem, "x % y", fmod(x, y))
UN(rem_named, "rem(x, y)", fmod(x, y))
UN(remainder, "remainder(x, y)", fmod(x, y))
UN(max, "max(x, y)", fmax(x, y))
UN(maximum, "maximum(x, y)", fmax(x, y))
UN(min, "min(x, y)", fmin(x, y))
UN(minimum, "minimum(x, y)", fmin(x, y))
UN(pow, "abs(x) ** y", pow(fabs(x), y))
UN(pow_named, "pow(abs(x), y)", pow(fabs(x), y))
UN(power, "power(abs(x), y)", pow(fabs(x), y))
UN(atan2, "atan2(x, y)", atan2(x, y))
UN(scalar_literal, "2 * x + 0.5", fl(2 * x) + 0.5)
UN(where, "where(x > y, x, 0.0)", x > y ? x : 0)
UN(select, "select(x <= 0, y, x)", x <= 0 ? y : x)
UN(clamp, "clamp(x, -0.5, 0.5)", x < -0.5 ? -0.5 : x > 0.5 ? 0.5 : x)
UN(clip, "clip(x, y, 0.25)", x < y ? (y > 0.25 ? 0.25 : y) : x > 0.25 ? 0.25 : x)
UN(leaky_relu, "leaky_relu(x, alpha=0.2)", x > 0 ? x : fl(0.2 * x))
UN(relu, "relu(x)", x > 0 ? x : 0)
UN(silu, "silu(x)", x / (1 + exp(-x)))
UN(erf, "erf(x * 3)", erf(fl(x * 3)))
UN(gelu, "gelu(x * 3)", 0.5 * fl(x * 3) * (1 + erf(fl(x * 3) / sqrt(2.0))))
UN(gelu_tanh, "gelu(x * 3, approximate=true)",
   0.5 * fl(x * 3) * (1 + tanh(sqrt(2 / M_PI) * (fl(x * 3) + 0.044715 * pow(fl(x * 3), 3)))))
UN(cast_bf16, "cast(cast(x, bf16), f32)", bf(x))
UN(convert_f16, "convert(convert(x, f16), f32)", ir_f16_to_f32(ir_f32_to_f16((float)x)))
UN(zeros_like, "zeros_like(x) + y", y)
UN(ones_like, "ones_like(x) * y", y)


/* comparisons: pred results */
#define CMP(nm, body, cexpr)                                                   \
  static double o_##nm(ir_literal **in, const int64_t *o) {                    \
    double x = X2, y = Y2;                                                     \
    (void)x, (void)y;                                                          \
    return (cexpr) ? 1 : 0;                                                    \
  }
#define P23(body) "graph g(x: f32[2,3], y: f32[2,3]) -> pred[2,3] { return " body "; }"
CMP(eq, "x == x * 1", 1)
CMP(ne, "x != y", x != y)
CMP(lt, "x < y", x < y)
CMP(le, "x <= y", x <= y)
CMP(gt, "x > y", x > y)
CMP(ge, "x >= y", x >= y)
CMP(eq_named, "eq(x, y)", x == y)
CMP(ne_named, "ne(x, y)", x != y)
CMP(lt_named, "lt(x, y)", x < y)
CMP(le_named, "le(x, y)", x <= y)
CMP(gt_named, "gt(x, 0)", x > 0)
CMP(ge_named, "ge(x, y)", x >= y)
CMP(compare, "compare(x, y, direction=\"LT\")", x < y)
CMP(and_or, "(x > 0 && y > 0) || x < -0.5", (x > 0 && y > 0) || x < -0.5)
CMP(not_pred, "!(x > y)", !(x > y))
CMP(not_named, "not(x > y)", !(x > y))
CMP(and_named, "and(x > 0, y > 0)", x > 0 && y > 0)
CMP(or_named, "or(x > 0, y > 0)", x > 0 || y > 0)
CMP(xor_named, "xor(x > 0, y > 0)", (x > 0) != (y > 0))
CMP(is_finite, "is_finite(x / (y * 0))", 0)

/* integer ops on s32 inputs in 0..3 */
#define I23(body) "graph g(x: s32[2,3], y: s32[2,3]) -> s32[2,3] { return " body "; }"
#define INT(nm, body, cexpr)                                                   \
  static double o_##nm(ir_literal **in, const int64_t *o) {                    \
    int32_t x = (int32_t)X2, y = (int32_t)Y2;                                  \
    (void)y;                                                                   \
    return (double)(cexpr);                                                    \
  }
INT(int_and, "and(x, y)", x & y)
INT(int_or, "or(x, y)", x | y)
INT(int_xor, "xor(x, y)", x ^ y)
INT(int_not, "not(x)", ~x)
INT(shl, "shl(x, y)", x << y)
INT(shr, "shr(-x, y)", (-x) >> y)
INT(shr_logical, "shr_logical(-x, y)", (int32_t)((uint32_t)(-x) >> y))
INT(popcnt, "popcnt(x - 2)", __builtin_popcount((uint32_t)(x - 2)))
INT(clz, "clz(x)", x == 0 ? 32 : __builtin_clz((uint32_t)x))
INT(int_div, "x / (y + 1)", x / (y + 1))
INT(int_arith, "x * 3 - y + 7", x * 3 - y + 7)
INT(int_abs_sign, "abs(x - 2) + sign(y - 1)", abs(x - 2) + (y > 1 ? 1 : y < 1 ? -1 : 0))
INT(int_pow, "x ** 2", x * x)

static double o_bitcast(ir_literal **in, const int64_t *o) {
  float f = (float)X2;
  int32_t i;
  memcpy(&i, &f, 4);
  return i;
}
static double o_cast_int(ir_literal **in, const int64_t *o) { return trunc(fl(X2 * 10)); }

/* ---- broadcasting and data movement ----------------------------------- */

static double o_bcast_row(ir_literal **in, const int64_t *o) { return AT(in[0], o[0], o[1]) + AT(in[1], o[1]); }
static double o_bcast_outer(ir_literal **in, const int64_t *o) { return AT(in[0], o[0], 0) * AT(in[1], 0, o[1]); }
static double o_tensor_literal(ir_literal **in, const int64_t *o) { return AT(in[0], o[0], o[1]) + (double)(o[1] + 1); }
static double o_constant(ir_literal **in, const int64_t *o) {
  return AT(in[0], o[0], o[1]) * (double)(o[0] * 2 + o[1] + 1);
}
static double o_reshape(ir_literal **in, const int64_t *o) {
  int64_t lin = o[0] * 6 + o[1];
  return ir_literal_get_f64(in[0], lin);
}
static double o_transpose_default(ir_literal **in, const int64_t *o) { return AT(in[0], o[2], o[1], o[0]); }
static double o_transpose_perm(ir_literal **in, const int64_t *o) { return AT(in[0], o[1], o[0], o[2]); }
static double o_broadcast(ir_literal **in, const int64_t *o) { return AT(in[0], o[1]); }
static double o_broadcast_to(ir_literal **in, const int64_t *o) { return AT(in[0], o[1], 0); }
static double o_slice(ir_literal **in, const int64_t *o) { return AT(in[0], 1 + o[0], 2 * o[1]); }
static double o_index_row(ir_literal **in, const int64_t *o) { return AT(in[0], 3, o[0]); }
static double o_index_scalar(ir_literal **in, const int64_t *o) {
  (void)o;
  return AT(in[0], 1, 2);
}
static double o_index_mixed(ir_literal **in, const int64_t *o) { return AT(in[0], 3, 1 + o[0]); }
static double o_concat(ir_literal **in, const int64_t *o) {
  return o[1] < 3 ? AT(in[0], o[0], o[1]) : AT(in[1], o[0], o[1] - 3);
}
static double o_concat3(ir_literal **in, const int64_t *o) {
  return o[0] < 2 ? AT(in[0], o[0], o[1]) : o[0] < 4 ? AT(in[1], o[0] - 2, o[1]) : AT(in[0], o[0] - 4, o[1]) * 2;
}
/* pad(x[2,3], low=[1,0], high=[0,2], interior=[1,0], value=-1) -> [4,5] */
static double o_pad(ir_literal **in, const int64_t *o) {
  int64_t r = o[0] - 1;
  if (r < 0 || r % 2 != 0 || o[1] >= 3) return -1;
  return AT(in[0], r / 2, o[1]);
}
static double o_reverse(ir_literal **in, const int64_t *o) { return AT(in[0], 1 - o[0], o[1]); }
static double o_iota1(ir_literal **in, const int64_t *o) {
  (void)in;
  return (double)o[1];
}
static double o_iota0(ir_literal **in, const int64_t *o) {
  (void)in;
  return (double)o[0];
}
static double o_zeros(ir_literal **in, const int64_t *o) {
  (void)in, (void)o;
  return 0;
}
static double o_ones(ir_literal **in, const int64_t *o) {
  (void)in, (void)o;
  return 1;
}
static double o_full(ir_literal **in, const int64_t *o) {
  (void)in, (void)o;
  return 3.5;
}
static double o_one_hot(ir_literal **in, const int64_t *o) { return AT(in[0], o[0]) == (double)o[1] ? 1 : 0; }

/* ---- reductions --------------------------------------------------------- */

static double o_sum_axis1(ir_literal **in, const int64_t *o) {
  double s = 0;
  for (int64_t j = 0; j < 3; j++) s += AT(in[0], o[0], j, o[1]);
  return s;
}
static double o_sum_keep(ir_literal **in, const int64_t *o) {
  double s = 0;
  for (int64_t j = 0; j < 3; j++) s += AT(in[0], o[0], j, o[2]);
  return s;
}
static double o_sum_all(ir_literal **in, const int64_t *o) {
  (void)o;
  double s = 0;
  for (int64_t i = 0; i < 24; i++) s += ir_literal_get_f64(in[0], i);
  return s;
}
static double o_prod(ir_literal **in, const int64_t *o) {
  double s = 1;
  for (int64_t k = 0; k < 4; k++) s *= AT(in[0], o[0], o[1], k) + 1.5;
  return s;
}
static double o_max02(ir_literal **in, const int64_t *o) {
  double m = -INFINITY;
  for (int64_t i = 0; i < 2; i++)
    for (int64_t k = 0; k < 4; k++) m = fmax(m, AT(in[0], i, o[0], k));
  return m;
}
static double o_min_last(ir_literal **in, const int64_t *o) {
  double m = INFINITY;
  for (int64_t k = 0; k < 4; k++) m = fmin(m, AT(in[0], o[0], o[1], k));
  return m;
}
static double o_all1(ir_literal **in, const int64_t *o) {
  bool r = true;
  for (int64_t j = 0; j < 3; j++) r = r && AT(in[0], o[0], j, o[1]) > -0.5;
  return r;
}
static double o_any1(ir_literal **in, const int64_t *o) {
  bool r = false;
  for (int64_t j = 0; j < 3; j++) r = r || AT(in[0], o[0], j, o[1]) > 0.5;
  return r;
}
static double o_mean12(ir_literal **in, const int64_t *o) {
  double s = 0;
  for (int64_t j = 0; j < 3; j++)
    for (int64_t k = 0; k < 4; k++) s += AT(in[0], o[0], j, k);
  return s / 12;
}
static double o_mean_keep(ir_literal **in, const int64_t *o) {
  double s = 0;
  for (int64_t k = 0; k < 4; k++) s += AT(in[0], o[0], o[1], k);
  return s / 4;
}
static double o_id3(ir_literal **in, const int64_t *o) { return AT(in[0], o[0], o[1], o[2]); }

/* ---- contractions ------------------------------------------------------- */

static double o_mm(ir_literal **in, const int64_t *o) {
  double s = 0;
  for (int64_t k = 0; k < DIM(in[0], 1); k++) s += AT(in[0], o[0], k) * AT(in[1], k, o[1]);
  return s;
}
static double o_mm_batch(ir_literal **in, const int64_t *o) {
  double s = 0;
  for (int64_t k = 0; k < 4; k++) s += AT(in[0], o[0], o[1], k) * AT(in[1], o[0], k, o[2]);
  return s;
}
static double o_mm_bcast_rhs(ir_literal **in, const int64_t *o) {
  double s = 0;
  for (int64_t k = 0; k < 4; k++) s += AT(in[0], o[0], o[1], k) * AT(in[1], k, o[2]);
  return s;
}
static double o_mm_bcast_lhs(ir_literal **in, const int64_t *o) {
  double s = 0;
  for (int64_t k = 0; k < 4; k++) s += AT(in[0], o[1], k) * AT(in[1], o[0], k, o[2]);
  return s;
}
static double o_vec_mat(ir_literal **in, const int64_t *o) {
  double s = 0;
  for (int64_t k = 0; k < 4; k++) s += AT(in[0], k) * AT(in[1], k, o[0]);
  return s;
}
static double o_mat_vec(ir_literal **in, const int64_t *o) {
  double s = 0;
  for (int64_t k = 0; k < 4; k++) s += AT(in[0], o[0], k) * AT(in[1], k);
  return s;
}
static double o_dot_t(ir_literal **in, const int64_t *o) {
  double s = 0;
  for (int64_t k = 0; k < 4; k++) s += AT(in[0], k, o[0]) * AT(in[1], k, o[1]);
  return s;
}
static double o_mm_bf16(ir_literal **in, const int64_t *o) {
  double s = 0;
  for (int64_t k = 0; k < 3; k++) s += bf(AT(in[0], o[0], k)) * bf(AT(in[1], k, o[1]));
  return s;
}
static double o_linear(ir_literal **in, const int64_t *o) { return o_mm(in, o) + AT(in[2], o[1]); }

/* Convolution reference: x and output in NHWC or NCHW, kernel HWIO or
 * OIHW, explicit padding. */
typedef struct convp {
  int64_t stride, pad, dil, groups;
  bool nchw;
} convp;
static double conv_ref(ir_literal **in, const int64_t *o, convp p) {
  const ir_literal *x = in[0], *k = in[1];
  int64_t n = o[0], oh = p.nchw ? o[2] : o[1], ow = p.nchw ? o[3] : o[2], oc = p.nchw ? o[1] : o[3];
  int64_t H = p.nchw ? DIM(x, 2) : DIM(x, 1), W = p.nchw ? DIM(x, 3) : DIM(x, 2);
  int64_t KH = p.nchw ? DIM(k, 2) : DIM(k, 0), KW = p.nchw ? DIM(k, 3) : DIM(k, 1);
  int64_t CI = p.nchw ? DIM(k, 1) : DIM(k, 2), CO = p.nchw ? DIM(k, 0) : DIM(k, 3);
  int64_t g = oc / (CO / p.groups);
  double s = 0;
  for (int64_t kh = 0; kh < KH; kh++)
    for (int64_t kw = 0; kw < KW; kw++)
      for (int64_t ci = 0; ci < CI; ci++) {
        int64_t ih = oh * p.stride - p.pad + kh * p.dil, iw = ow * p.stride - p.pad + kw * p.dil;
        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
        int64_t c = g * CI + ci;
        double xv = p.nchw ? AT(x, n, c, ih, iw) : AT(x, n, ih, iw, c);
        double kv = p.nchw ? AT(k, oc, ci, kh, kw) : AT(k, kh, kw, ci, oc);
        s += xv * kv;
      }
  return s;
}
static double o_conv_valid(ir_literal **in, const int64_t *o) { return conv_ref(in, o, (convp){1, 0, 1, 1, false}); }
static double o_conv_same_s2(ir_literal **in, const int64_t *o) { return conv_ref(in, o, (convp){2, 1, 1, 1, false}); }
static double o_conv_dil(ir_literal **in, const int64_t *o) { return conv_ref(in, o, (convp){1, 0, 2, 1, false}); }
static double o_conv_groups(ir_literal **in, const int64_t *o) { return conv_ref(in, o, (convp){1, 0, 1, 2, false}); }
static double o_conv_nchw(ir_literal **in, const int64_t *o) { return conv_ref(in, o, (convp){1, 1, 1, 1, true}); }
/* conv 1-D: x [2,7,3], k [3,3,4], stride 2, padding 1 */
static double o_conv1d(ir_literal **in, const int64_t *o) {
  double s = 0;
  for (int64_t t = 0; t < 3; t++)
    for (int64_t c = 0; c < 3; c++) {
      int64_t i = o[1] * 2 - 1 + t;
      if (i >= 0 && i < 7) s += AT(in[0], o[0], i, c) * AT(in[1], t, c, o[2]);
    }
  return s;
}

/* pooling over [1,H,W,C] */
static double pool_ref(ir_literal **in, const int64_t *o, int64_t win, int64_t stride, int64_t pad, int kind) {
  double acc = kind == 1 ? -INFINITY : kind == 2 ? INFINITY : 0;
  int cnt = 0;
  for (int64_t a = 0; a < win; a++)
    for (int64_t b = 0; b < win; b++) {
      int64_t h = o[1] * stride - pad + a, w = o[2] * stride - pad + b;
      if (h < 0 || w < 0 || h >= DIM(in[0], 1) || w >= DIM(in[0], 2)) continue;
      double v = AT(in[0], o[0], h, w, o[3]);
      cnt++;
      if (kind == 1) acc = fmax(acc, v);
      else if (kind == 2) acc = fmin(acc, v);
      else acc += v;
    }
  return kind == 3 ? acc / cnt : acc;
}
static double o_max_pool(ir_literal **in, const int64_t *o) { return pool_ref(in, o, 2, 2, 0, 1); }
static double o_min_pool(ir_literal **in, const int64_t *o) { return pool_ref(in, o, 2, 2, 0, 2); }
static double o_sum_pool(ir_literal **in, const int64_t *o) { return pool_ref(in, o, 2, 2, 0, 0); }
static double o_avg_pool(ir_literal **in, const int64_t *o) { return pool_ref(in, o, 2, 2, 0, 3); }
static double o_avg_pool_same(ir_literal **in, const int64_t *o) { return pool_ref(in, o, 3, 1, 1, 3); }
static double o_max_pool_same(ir_literal **in, const int64_t *o) { return pool_ref(in, o, 3, 2, 1, 1); }

/* ---- composites ------------------------------------------------------- */

static double o_softmax(ir_literal **in, const int64_t *o) {
  double m = -INFINITY, z = 0;
  int64_t n = DIM(in[0], 1);
  for (int64_t j = 0; j < n; j++) m = fmax(m, AT(in[0], o[0], j));
  for (int64_t j = 0; j < n; j++) z += exp(AT(in[0], o[0], j) - m);
  return exp(AT(in[0], o[0], o[1]) - m) / z;
}
static double o_log_softmax(ir_literal **in, const int64_t *o) { return log(o_softmax(in, o)); }
static double o_softmax_axis0(ir_literal **in, const int64_t *o) {
  double z = 0;
  for (int64_t i = 0; i < 2; i++) z += exp(AT(in[0], i, o[1]));
  return exp(AT(in[0], o[0], o[1])) / z;
}
static double o_layer_norm(ir_literal **in, const int64_t *o) {
  double m = 0, v = 0;
  for (int64_t j = 0; j < 4; j++) m += AT(in[0], o[0], j) / 4;
  for (int64_t j = 0; j < 4; j++) v += pow(AT(in[0], o[0], j) - m, 2) / 4;
  return (AT(in[0], o[0], o[1]) - m) / sqrt(v + 1e-5) * AT(in[1], o[1]) + AT(in[2], o[1]);
}
static double o_layer_norm_plain(ir_literal **in, const int64_t *o) {
  double m = 0, v = 0;
  for (int64_t j = 0; j < 4; j++) m += AT(in[0], o[0], j) / 4;
  for (int64_t j = 0; j < 4; j++) v += pow(AT(in[0], o[0], j) - m, 2) / 4;
  return (AT(in[0], o[0], o[1]) - m) / sqrt(v + 1e-3);
}
static double o_rms_norm(ir_literal **in, const int64_t *o) {
  double ms = 0;
  for (int64_t j = 0; j < 4; j++) ms += pow(AT(in[0], o[0], j), 2) / 4;
  return AT(in[0], o[0], o[1]) / sqrt(ms + 1e-6) * AT(in[1], o[1]);
}
static double ce_row(ir_literal **in, int64_t i) {
  double m = -INFINITY, z = 0;
  for (int64_t j = 0; j < 5; j++) m = fmax(m, AT(in[0], i, j));
  for (int64_t j = 0; j < 5; j++) z += exp(AT(in[0], i, j) - m);
  int64_t lab = (int64_t)AT(in[1], i);
  return -(AT(in[0], i, lab) - m - log(z));
}
static double o_ce_mean(ir_literal **in, const int64_t *o) {
  (void)o;
  double s = 0;
  for (int64_t i = 0; i < 4; i++) s += ce_row(in, i);
  return s / 4;
}
static double o_ce_sum(ir_literal **in, const int64_t *o) { return o_ce_mean(in, o) * 4; }
static double o_ce_none(ir_literal **in, const int64_t *o) { return ce_row(in, o[0]); }

static double o_softmax_bf16(ir_literal **in, const int64_t *o) {
  double m = -INFINITY, z = 0;
  for (int64_t j = 0; j < 5; j++) m = fmax(m, bf(AT(in[0], o[0], j)));
  for (int64_t j = 0; j < 5; j++) z += exp(bf(AT(in[0], o[0], j)) - m);
  return bf(exp(bf(AT(in[0], o[0], o[1])) - m) / z);
}
static double o_gelu_f16(ir_literal **in, const int64_t *o) {
  double x = ir_f16_to_f32(ir_f32_to_f16((float)(AT(in[0], o[0], o[1]) * 3)));
  return ir_f16_to_f32(ir_f32_to_f16((float)(0.5 * x * (1 + erf(x / sqrt(2.0))))));
}
static double o_int_max(ir_literal **in, const int64_t *o) {
  double m = -INFINITY;
  for (int64_t j = 0; j < 3; j++) m = fmax(m, -100 - AT(in[0], o[0], j));
  return m;
}

static double o_argmax(ir_literal **in, const int64_t *o) {
  int64_t best = 0;
  for (int64_t j = 1; j < 5; j++)
    if (AT(in[0], o[0], j) > AT(in[0], o[0], best)) best = j;
  return (double)best;
}
static double o_argmin0(ir_literal **in, const int64_t *o) {
  int64_t best = 0;
  for (int64_t i = 1; i < 3; i++)
    if (AT(in[0], i, o[1]) < AT(in[0], best, o[1])) best = i;
  return (double)best;
}

/* attention: q [B,Lq,D], k [B,Lk,D], v [B,Lk,Dv]; keep(i, j) masks */
static double attn_ref(ir_literal **in, const int64_t *o, int mode) {
  int64_t b = o[0], i = o[1], dv = o[2], D = DIM(in[0], 2), Lk = DIM(in[1], 1);
  double sc[64], m = -INFINITY, z = 0, r = 0;
  for (int64_t j = 0; j < Lk; j++) {
    double s = 0;
    for (int64_t d = 0; d < D; d++) s += AT(in[0], b, i, d) * AT(in[1], b, j, d);
    s /= sqrt((double)D);
    bool keep = mode == 0 || (mode == 1 && j <= i) || (mode == 2 && j < 4);
    sc[j] = keep ? s : -INFINITY;
    m = fmax(m, sc[j]);
  }
  for (int64_t j = 0; j < Lk; j++) z += exp(sc[j] - m);
  for (int64_t j = 0; j < Lk; j++) r += exp(sc[j] - m) / z * AT(in[2], b, j, dv);
  return r;
}
static double o_attn(ir_literal **in, const int64_t *o) { return attn_ref(in, o, 0); }
static double o_attn_causal(ir_literal **in, const int64_t *o) { return attn_ref(in, o, 1); }
static double o_attn_mask(ir_literal **in, const int64_t *o) { return attn_ref(in, o, 2); }

/* graphs calling graphs */
static double o_calls(ir_literal **in, const int64_t *o) {
  double x = X2;
  return fl(x * x) + fl(fl(x + 1) * fl(x + 1));
}
static double o_multi(ir_literal **in, const int64_t *o) {
  double x = AT(in[0], o[0]);
  return fl(x + 1) - fl(x * 2);
}

#define C(nm, src, tol) {#nm, src, tol, o_##nm}
#define UC(nm, body) {#nm, G23(body), 2e-6, o_##nm}
#define PC(nm, body) {#nm, P23(body), 0, o_##nm}
#define IC(nm, body) {#nm, I23(body), 0, o_##nm}

static const tcase cases[] = {
    UC(abs, "abs(x)"), UC(neg, "neg(x)"), UC(negate, "negate(x)"), UC(exp, "exp(x)"), UC(expm1, "expm1(x)"),
    UC(log, "log(x * x + 0.5)"), UC(log1p, "log1p(x * x)"), UC(sqrt, "sqrt(x * x)"),
    UC(rsqrt, "rsqrt(x * x + 1)"), UC(cbrt, "cbrt(x)"), UC(tanh, "tanh(x)"), UC(logistic, "logistic(x)"),
    UC(sigmoid, "sigmoid(x)"), UC(sin, "sin(x)"), UC(cos, "cos(x)"), UC(floor, "floor(x * 4)"),
    UC(ceil, "ceil(x * 4)"), UC(round, "round(x * 4)"), UC(round_even, "round_even(x * 4 + 0.5)"),
    UC(sign, "sign(x)"), UC(copy, "copy(x)"), UC(unary_minus, "-x"), UC(precedence, "-x ** 2 + 3 * x - 1"),
    UC(literal_fold, "x * (2 + 3) ** 2"), UC(add, "x + y"), UC(add_named, "add(x, y)"), UC(sub, "x - y"),
    UC(sub_named, "sub(x, y)"), UC(subtract, "subtract(x, y)"), UC(mul, "x * y"), UC(mul_named, "mul(x, y)"),
    UC(multiply, "multiply(x, y)"), UC(div, "x / y"), UC(div_named, "div(x, y)"), UC(divide, "divide(x, y)"),
    UC(rem, "x % y"), UC(rem_named, "rem(x, y)"), UC(remainder, "remainder(x, y)"), UC(max, "max(x, y)"),
    UC(maximum, "maximum(x, y)"), UC(min, "min(x, y)"), UC(minimum, "minimum(x, y)"), UC(pow, "abs(x) ** y"),
    UC(pow_named, "pow(abs(x), y)"), UC(power, "power(abs(x), y)"), UC(atan2, "atan2(x, y)"),
    UC(scalar_literal, "2 * x + 0.5"), UC(where, "where(x > y, x, 0.0)"), UC(select, "select(x <= 0, y, x)"),
    UC(clamp, "clamp(x, -0.5, 0.5)"), UC(clip, "clip(x, y, 0.25)"), UC(leaky_relu, "leaky_relu(x, alpha=0.2)"),
    UC(relu, "relu(x)"), UC(silu, "silu(x)"), {"erf", G23("erf(x * 3)"), 1e-6, o_erf},
    {"gelu", G23("gelu(x * 3)"), 1e-6, o_gelu}, {"gelu_tanh", G23("gelu(x * 3, approximate=true)"), 1e-6, o_gelu_tanh},
    UC(cast_bf16, "cast(cast(x, bf16), f32)"), UC(convert_f16, "convert(convert(x, f16), f32)"),
    UC(zeros_like, "zeros_like(x) + y"), UC(ones_like, "ones_like(x) * y"),
    PC(eq, "x == x * 1"), PC(ne, "x != y"), PC(lt, "x < y"), PC(le, "x <= y"), PC(gt, "x > y"), PC(ge, "x >= y"),
    PC(eq_named, "eq(x, y)"), PC(ne_named, "ne(x, y)"), PC(lt_named, "lt(x, y)"), PC(le_named, "le(x, y)"),
    PC(gt_named, "gt(x, 0)"), PC(ge_named, "ge(x, y)"), PC(compare, "compare(x, y, direction=\"LT\")"),
    PC(and_or, "(x > 0 && y > 0) || x < -0.5"), PC(not_pred, "!(x > y)"), PC(not_named, "not(x > y)"),
    PC(and_named, "and(x > 0, y > 0)"), PC(or_named, "or(x > 0, y > 0)"), PC(xor_named, "xor(x > 0, y > 0)"),
    PC(is_finite, "is_finite(x / (y * 0))"),
    IC(int_and, "and(x, y)"), IC(int_or, "or(x, y)"), IC(int_xor, "xor(x, y)"), IC(int_not, "not(x)"),
    IC(shl, "shl(x, y)"), IC(shr, "shr(-x, y)"), IC(shr_logical, "shr_logical(-x, y)"), IC(popcnt, "popcnt(x - 2)"),
    IC(clz, "clz(x)"), IC(int_div, "x / (y + 1)"), IC(int_arith, "x * 3 - y + 7"),
    IC(int_abs_sign, "abs(x - 2) + sign(y - 1)"), IC(int_pow, "x ** 2"),
    C(bitcast, "graph g(x: f32[2,3]) -> s32[2,3] { return bitcast_convert(x, s32); }", 0),
    C(cast_int, "graph g(x: f32[2,3]) -> s32[2,3] { return cast(x * 10, s32); }", 0),
    C(bcast_row, "graph g(x: f32[2,3], y: f32[3]) -> f32[2,3] { return x + y; }", 1e-6),
    C(bcast_outer, "graph g(x: f32[2,1], y: f32[1,3]) -> f32[2,3] { return x * y; }", 1e-6),
    C(tensor_literal, "graph g(x: f32[2,3]) -> f32[2,3] { return x + [1, 2, 3]; }", 1e-6),
    C(constant, "graph g(x: f32[2,3]) -> f32[2,3] { return x * constant([[1, 2, 3], [3, 4, 5]], f32); }", 1e-6),
    C(reshape, "graph g(x: f32[2,3,4]) -> f32[4,6] { return reshape(x, [4, -1]); }", 0),
    C(transpose_default, "graph g(x: f32[2,3,4]) -> f32[4,3,2] { return transpose(x); }", 0),
    C(transpose_perm, "graph g(x: f32[2,3,4]) -> f32[3,2,4] { return transpose(x, perm=[1, 0, 2]); }", 0),
    C(broadcast, "graph g(x: f32[3]) -> f32[2,3] { return broadcast(x, [2, 3], dimensions=[1]); }", 0),
    C(broadcast_to, "graph g(x: f32[3,1]) -> f32[2,3,4] { return broadcast_to(x, [2, 3, 4]); }", 0),
    C(slice, "graph g(x: f32[4,6]) -> f32[2,3] { return slice(x, start=[1, 0], limit=[3, 6], stride=[1, 2]); }", 0),
    {"index_slice", "graph g(x: f32[4,6]) -> f32[2,3] { return x[1:3, ::2]; }", 0, o_slice},
    C(index_row, "graph g(x: f32[4,6]) -> f32[6] { return x[-1]; }", 0),
    C(index_scalar, "graph g(x: f32[4,6]) -> f32[] { return x[1, 2]; }", 0),
    C(index_mixed, "graph g(x: f32[4,6]) -> f32[3] { return x[3, 1:4]; }", 0),
    C(concat, "graph g(x: f32[2,3], y: f32[2,2]) -> f32[2,5] { return concat(x, y, axis=1); }", 0),
    C(concat3, "graph g(x: f32[2,3], y: f32[2,3]) -> f32[6,3] { return concatenate(x, y, x * 2); }", 0),
    C(pad, "graph g(x: f32[2,3]) -> f32[4,5] { return pad(x, low=[1, 0], high=[0, 2], interior=[1, 0], value=-1); }", 0),
    C(reverse, "graph g(x: f32[2,3]) -> f32[2,3] { return reverse(x, axes=[0]); }", 0),
    C(iota1, "graph g() -> s32[3,4] { return iota(s32[3,4], axis=1); }", 0),
    C(iota0, "graph g() -> f32[3,4] { return iota(f32[3,4]); }", 0),
    C(zeros, "graph g() -> f32[2,3] { return zeros(f32[2,3]); }", 0),
    C(ones, "graph g() -> s32[4] { return ones(s32[4]); }", 0),
    C(full, "graph g() -> f32[2,2] { return full(f32[2,2], 3.5); }", 0),
    C(one_hot, "graph g(l: s32[4]) -> f32[4,5] { return one_hot(l, 5); }", 0),
    C(sum_axis1, "graph g(x: f32[2,3,4]) -> f32[2,4] { return reduce_sum(x, axes=[1]); }", 1e-6),
    C(sum_keep, "graph g(x: f32[2,3,4]) -> f32[2,1,4] { return sum(x, axes=1, keepdims=true); }", 1e-6),
    C(sum_all, "graph g(x: f32[2,3,4]) -> f32[] { return reduce_sum(x); }", 1e-6),
    C(prod, "graph g(x: f32[2,3,4]) -> f32[2,3] { return reduce_prod(x + 1.5, axes=[-1]); }", 1e-6),
    C(max02, "graph g(x: f32[2,3,4]) -> f32[3] { return reduce_max(x, axes=[0, 2]); }", 0),
    C(min_last, "graph g(x: f32[2,3,4]) -> f32[2,3] { return reduce_min(x, axes=-1); }", 0),
    C(all1, "graph g(x: f32[2,3,4]) -> pred[2,4] { return reduce_all(x > -0.5, axes=[1]); }", 0),
    C(any1, "graph g(x: f32[2,3,4]) -> pred[2,4] { return reduce_any(x > 0.5, axes=[1]); }", 0),
    C(mean12, "graph g(x: f32[2,3,4]) -> f32[2] { return reduce_mean(x, axes=[1, 2]); }", 1e-6),
    C(mean_keep, "graph g(x: f32[2,3,4]) -> f32[2,3,1] { return mean(x, axes=[2], keepdims=true); }", 1e-6),
    {"all_reduce", "graph g(x: f32[2,3,4]) -> f32[2,3,4] { return all_reduce(x, kind=\"sum\"); }", 0, o_id3},
    {"matmul", "graph g(x: f32[3,4], y: f32[4,5]) -> f32[3,5] { return matmul(x, y); }", 1e-6, o_mm},
    {"matmul_at", "graph g(x: f32[3,4], y: f32[4,5]) -> f32[3,5] { return x @ y; }", 1e-6, o_mm},
    C(mm_batch, "graph g(x: f32[2,3,4], y: f32[2,4,5]) -> f32[2,3,5] { return x @ y; }", 1e-6),
    C(mm_bcast_rhs, "graph g(x: f32[2,3,4], y: f32[4,5]) -> f32[2,3,5] { return matmul(x, y); }", 1e-6),
    C(mm_bcast_lhs, "graph g(x: f32[3,4], y: f32[2,4,5]) -> f32[2,3,5] { return matmul(x, y); }", 1e-6),
    C(vec_mat, "graph g(x: f32[4], y: f32[4,5]) -> f32[5] { return x @ y; }", 1e-6),
    C(mat_vec, "graph g(x: f32[3,4], y: f32[4]) -> f32[3] { return x @ y; }", 1e-6),
    {"dot", "graph g(x: f32[3,4], y: f32[4,5]) -> f32[3,5] { return dot(x, y); }", 1e-6, o_mm},
    C(dot_t, "graph g(x: f32[4,3], y: f32[4,5]) -> f32[3,5] { return dot(x, y, lhs_contracting=[0], rhs_contracting=[0]); }", 1e-6),
    {"dot_batch", "graph g(x: f32[2,3,4], y: f32[2,4,5]) -> f32[2,3,5] { return dot(x, y, lhs_batch=[0], rhs_batch=[0], lhs_contracting=[2], rhs_contracting=[1]); }", 1e-6, o_mm_batch},
    C(mm_bf16, "graph g(x: f32[2,3], y: f32[3,4]) -> f32[2,4] { return matmul(cast(x, bf16), cast(y, bf16), preferred_type=f32); }", 1e-6),
    C(linear, "graph g(x: f32[3,4], w: f32[4,5], b: f32[5]) -> f32[3,5] { return linear(x, w, b); }", 1e-6),
    C(conv_valid, "graph g(x: f32[1,5,5,2], k: f32[3,3,2,3]) -> f32[1,3,3,3] { return conv2d(x, k); }", 1e-5),
    C(conv_same_s2, "graph g(x: f32[1,5,5,2], k: f32[3,3,2,2]) -> f32[1,3,3,2] { return conv2d(x, k, strides=[2, 2], padding=\"SAME\"); }", 1e-5),
    C(conv_dil, "graph g(x: f32[1,6,6,1], k: f32[2,2,1,1]) -> f32[1,4,4,1] { return conv2d(x, k, dilation=2); }", 1e-5),
    C(conv_groups, "graph g(x: f32[1,4,4,4], k: f32[3,3,2,4]) -> f32[1,2,2,4] { return conv2d(x, k, groups=2); }", 1e-5),
    C(conv_nchw, "graph g(x: f32[1,2,5,5], k: f32[3,2,3,3]) -> f32[1,3,5,5] { return conv2d(x, k, padding=[[1, 1], [1, 1]], layout=\"NCHW\", kernel_layout=\"OIHW\"); }", 1e-5),
    C(conv1d, "graph g(x: f32[2,7,3], k: f32[3,3,4]) -> f32[2,4,4] { return conv(x, k, strides=2, padding=1); }", 1e-5),
    C(max_pool, "graph g(x: f32[1,4,4,2]) -> f32[1,2,2,2] { return max_pool(x, window=[2, 2]); }", 0),
    C(min_pool, "graph g(x: f32[1,4,4,2]) -> f32[1,2,2,2] { return min_pool(x, window=2); }", 0),
    C(sum_pool, "graph g(x: f32[1,4,4,2]) -> f32[1,2,2,2] { return sum_pool(x, window=[2, 2], strides=[2, 2]); }", 1e-6),
    C(avg_pool, "graph g(x: f32[1,4,4,2]) -> f32[1,2,2,2] { return avg_pool(x, window=[2, 2]); }", 1e-6),
    C(avg_pool_same, "graph g(x: f32[1,3,3,1]) -> f32[1,3,3,1] { return avg_pool(x, window=3, strides=1, padding=\"SAME\"); }", 1e-6),
    C(max_pool_same, "graph g(x: f32[1,5,5,1]) -> f32[1,3,3,1] { return max_pool(x, window=3, strides=2, padding=\"SAME\"); }", 0),
    C(argmax, "graph g(x: f32[3,5]) -> s32[3] { return argmax(x); }", 0),
    C(argmin0, "graph g(x: s32[3,4]) -> s32[1,4] { return argmin(x, axis=0, keepdims=true); }", 0),
    C(softmax_bf16, "graph g(x: f32[3,5]) -> f32[3,5] { return cast(softmax(cast(x, bf16)), f32); }", 0),
    C(gelu_f16, "graph g(x: f32[2,3]) -> f32[2,3] { return cast(gelu(cast(x * 3, f16)), f32); }", 1e-3),
    C(int_max, "graph g(x: s32[2,3]) -> s32[2] { return reduce_max(-100 - x, axes=[1]); }", 0),
    C(softmax, "graph g(x: f32[3,5]) -> f32[3,5] { return softmax(x); }", 1e-6),
    C(log_softmax, "graph g(x: f32[3,5]) -> f32[3,5] { return log_softmax(x, axis=-1); }", 1e-6),
    C(softmax_axis0, "graph g(x: f32[2,3]) -> f32[2,3] { return softmax(x, axis=0); }", 1e-6),
    C(layer_norm, "graph g(x: f32[3,4], s: f32[4], b: f32[4]) -> f32[3,4] { return layer_norm(x, s, b); }", 1e-5),
    C(layer_norm_plain, "graph g(x: f32[3,4]) -> f32[3,4] { return layer_norm(x, eps=0.001); }", 1e-5),
    C(rms_norm, "graph g(x: f32[3,4], s: f32[4]) -> f32[3,4] { return rms_norm(x, s); }", 1e-5),
    C(ce_mean, "graph g(x: f32[4,5], l: s32[4]) -> f32[] { return cross_entropy(x, l); }", 1e-6),
    C(ce_sum, "graph g(x: f32[4,5], l: s32[4]) -> f32[] { return cross_entropy(x, l, reduction=\"sum\"); }", 1e-6),
    C(ce_none, "graph g(x: f32[4,5], l: s32[4]) -> f32[4] { return cross_entropy(x, l, reduction=\"none\"); }", 1e-6),
    C(attn, "graph g(q: f32[2,3,4], k: f32[2,5,4], v: f32[2,5,2]) -> f32[2,3,2] { return scaled_dot_product_attention(q, k, v); }", 1e-5),
    C(attn_causal, "graph g(q: f32[1,4,4], k: f32[1,4,4], v: f32[1,4,3]) -> f32[1,4,3] { return attention(q, k, v, causal=true); }", 1e-5),
    C(attn_mask, "graph g(q: f32[2,3,4], k: f32[2,5,4], v: f32[2,5,2]) -> f32[2,3,2] { return attention(q, k, v, mask=iota(s32[3,5], axis=1) < 4); }", 1e-5),
    C(calls, "graph sq(a: f32[2,3]) -> f32[2,3] { return a * a; }\n"
             "graph g(x: f32[2,3], y: f32[2,3]) -> f32[2,3] { let b = x + 1; return sq(x) + sq(b); }", 1e-6),
    C(multi, "graph two(a: f32[3]) -> (f32[3], f32[3]) { return a + 1, a * 2; }\n"
             "graph g(x: f32[3]) -> f32[3] { let p, q = two(x); return p - q; }", 1e-6),
};

static void run_case(void **state) {
  const tcase *tc = *state;
  diag *d = diag_create();
  ir_module *m = fe_parse_tg("case.tg", tc->src, strlen(tc->src), NULL, d);
  if (!m) fail_msg("%s: does not compile:\n%s", tc->name, diag_text(d));
  arena *a = arena_create();
  uint64_t seed = 1469598103934665603ULL;
  for (const char *p = tc->name; *p; p++) seed = (seed ^ (uint8_t)*p) * 1099511628211ULL;
  int n;
  ir_literal **args = tgu_random_args(m, a, seed | 1, &n);
  ir_eval_options o;
  ir_eval_options_init(&o);
  ir_literal *out;
  char err[256];
  if (ir_eval(m, &o, args, n, a, &out, err, sizeof err) != ST_OK) fail_msg("%s: eval failed: %s", tc->name, err);
  assert_int_not_equal(out->shape.type, IR_TUPLE);
  int64_t count = ir_shape_count(&out->shape), idx[IR_MAX_RANK] = {0};
  for (int64_t i = 0; i < count; i++) {
    double got = ir_literal_get_f64(out, i), want = tc->fn(args, idx);
    bool ok = (isnan(got) && isnan(want)) || got == want || fabs(got - want) <= tc->tol * (1 + fabs(want));
    if (!ok) fail_msg("%s: element %lld: got %.9g, want %.9g", tc->name, (long long)i, got, want);
    for (int k = out->shape.rank - 1; k >= 0; k--) {
      if (++idx[k] < out->shape.dims[k]) break;
      idx[k] = 0;
    }
  }
  arena_destroy(a);
  ir_module_destroy(m);
  diag_destroy(d);
}

/* An entry graph with two results returns a tuple. */
static void tuple_result(void **state) {
  (void)state;
  const char *src = "graph g(x: s32[3]) -> (s32[3], s32[]) { return x * 2, reduce_sum(x); }";
  diag *d = diag_create();
  ir_module *m = fe_parse_tg("t.tg", src, strlen(src), NULL, d);
  assert_non_null(m);
  arena *a = arena_create();
  ir_shape s = ir_shape_array(IR_S32, 1, (int64_t[]){3});
  ir_literal *x = ir_literal_create(a, &s);
  for (int i = 0; i < 3; i++) ir_literal_set_i64(x, i, i + 5);
  ir_eval_options o;
  ir_eval_options_init(&o);
  ir_literal *out;
  char err[256];
  assert_int_equal(ir_eval(m, &o, &x, 1, a, &out, err, sizeof err), ST_OK);
  assert_int_equal(out->shape.type, IR_TUPLE);
  assert_int_equal(out->shape.ntuple, 2);
  for (int i = 0; i < 3; i++) assert_int_equal(ir_literal_get_i64(out->elems[0], i), 2 * (i + 5));
  assert_int_equal(ir_literal_get_i64(out->elems[1], 0), 5 + 6 + 7);
  arena_destroy(a);
  ir_module_destroy(m);
  diag_destroy(d);
}

/* The entry can be chosen by name; metadata points at the .tg lines. */
static void entry_and_metadata(void **state) {
  (void)state;
  const char *src = "graph a(x: f32[2]) -> f32[2] { return x + 1; }\n"
                    "graph b(x: f32[2]) -> f32[2] {\n"
                    "  let h = exp(x);\n"
                    "  return h * 2;\n"
                    "}\n";
  diag *d = diag_create();
  ir_module *m = fe_parse_tg("m.tg", src, strlen(src), "a", d);
  assert_non_null(m);
  assert_string_equal(ir_comp_get(m, m->entry)->name, "a");
  ir_module_destroy(m);
  m = fe_parse_tg("m.tg", src, strlen(src), NULL, d);
  assert_non_null(m);
  ir_comp *c = ir_comp_get(m, m->entry);
  assert_string_equal(c->name, "b");
  bool saw_exp = false;
  for (int i = 0; i < c->insts.n; i++) {
    ir_inst *in = &c->insts.v[i];
    assert_string_equal(in->info->meta.source_file, "m.tg");
    assert_string_equal(in->info->loc.file, "m.tg");
    if (in->op == IR_OP_EXP) {
      saw_exp = true;
      assert_int_equal(in->info->meta.source_line, 3);
      assert_int_equal(in->info->loc.col, 11);
      assert_string_equal(in->info->name, "h");
      assert_string_equal(in->info->meta.op_name, "b/exp");
    }
    if (in->op == IR_OP_MULTIPLY) assert_int_equal(in->info->meta.source_line,
                                                   4);
  }
  assert_true(saw_exp);
  ir_module_destroy(m);
  assert_null(fe_parse_tg("m.tg", src, strlen(src), "nope", d));
  assert_non_null(strstr(diag_text(d), "no graph named 'nope'"));
  diag_destroy(d);
}

/* `x @ w + b` lowers to dot, an explicit broadcast of b and add, named
 * after the let (docs/language.md, "How constructs lower to IR"). */
static void lowering_structure(void **state) {
  (void)state;
  const char *src = "graph layer(x: f32[4,8], w: f32[8,3], b: f32[3]) -> f32[4,3] {\n"
                    "  let h = x @ w + b;\n"
                    "  return h;\n"
                    "}\n";
  diag *d = diag_create();
  ir_module *m = fe_parse_tg("l.tg", src, strlen(src), NULL, d);
  assert_non_null(m);
  ir_comp *c = ir_comp_get(m, m->entry);
  int nparams = 0, ndot = 0, nbcast = 0, nadd = 0;
  for (int i = 0; i < c->insts.n; i++) {
    ir_inst *in = &c->insts.v[i];
    switch (in->op) {
    case IR_OP_PARAMETER: nparams++; break;
    case IR_OP_DOT:
      ndot++;
      assert_int_equal(in->a->lhs_contracting.n, 1);
      assert_int_equal(in->a->lhs_contracting.v[0], 1);
      assert_int_equal(in->a->rhs_contracting.v[0], 0);
      assert_int_equal(in->a->lhs_batch.n, 0);
      assert_int_equal(in->info->loc.col, 13);
      break;
    case IR_OP_BROADCAST:
      nbcast++;
      assert_int_equal(in->a->dimensions.n, 1);
      assert_int_equal(in->a->dimensions.v[0], 1);
      assert_int_equal(in->shape->dims[0], 4);
      assert_int_equal(in->shape->dims[1], 3);
      assert_string_equal(ir_inst_get(m, m->entry, in->ops[0])->info->name,
                          "b");
      break;
    case IR_OP_ADD:
      nadd++;
      assert_string_equal(in->info->name, "h");
      assert_int_equal(c->root, i);
      assert_int_equal(in->info->loc.col, 17);
      break;
    default: fail_msg("unexpected op %s", ir_op_name(in->op));
    }
  }
  assert_int_equal(nparams, 3);
  assert_int_equal(ndot, 1);
  assert_int_equal(nbcast, 1);
  assert_int_equal(nadd, 1);
  ir_module_destroy(m);
  diag_destroy(d);
}

/* erf's expansion (A&S 7.1.26 in f32) is within 1e-6 of C's erf on a
 * dense grid over [-5, 5], and odd. */
static void erf_accuracy(void **state) {
  (void)state;
  const char *src = "graph g(x: f32[2001]) -> f32[2001] { return erf(x); }";
  diag *d = diag_create();
  ir_module *m = fe_parse_tg("e.tg", src, strlen(src), NULL, d);
  assert_non_null(m);
  arena *a = arena_create();
  ir_shape s = ir_shape_array(IR_F32, 1, (int64_t[]){2001});
  ir_literal *x = ir_literal_create(a, &s);
  for (int i = 0; i < 2001; i++) ir_literal_set_f64(x, i, -5 + i * 0.005);
  ir_eval_options o;
  ir_eval_options_init(&o);
  ir_literal *out;
  char err[256];
  assert_int_equal(ir_eval(m, &o, &x, 1, a, &out, err, sizeof err), ST_OK);
  double worst = 0;
  for (int i = 0; i < 2001; i++) {
    double xv = ir_literal_get_f64(x, i), e = fabs(ir_literal_get_f64(out, i) - erf(xv));
    if (e > worst) worst = e;
    assert_true(ir_literal_get_f64(out, i) == -ir_literal_get_f64(out, 2000 - i));
  }
  if (worst > 1e-6) fail_msg("erf: max abs error %g", worst);
  arena_destroy(a);
  ir_module_destroy(m);
  diag_destroy(d);
}

int main(void) {
  struct CMUnitTest tests[COUNTOF(cases) + 5];
  size_t n = 0;
  for (size_t i = 0; i < COUNTOF(cases); i++)
    tests[n++] = (struct CMUnitTest){cases[i].name, run_case, NULL, NULL, (void *)&cases[i]};
  tests[n++] = (struct CMUnitTest)cmocka_unit_test(tuple_result);
  tests[n++] = (struct CMUnitTest)cmocka_unit_test(entry_and_metadata);
  tests[n++] = (struct CMUnitTest)cmocka_unit_test(lowering_structure);
  tests[n++] = (struct CMUnitTest)cmocka_unit_test(erf_accuracy);
  return _cmocka_run_group_tests("tg_ops", tests, n, NULL, NULL);
}
