/* test_tpu_ops.c: every op family of the TPU backend on edge shapes
 * (dims not multiples of 8 or 128, size-1 dims, batch dims, strided,
 * dilated and grouped convolutions, negative padding), compiled for v3,
 * v2 and v3,mxu=64x64,vmem=8MiB (and a tiny-VMEM target that forces K
 * chunking), run on the emulator and compared with the reference
 * evaluator (tolerances: tpu_check.h). Also checks that an unsupported op
 * is a located compile error naming it, and every op as the root of a
 * computed value.
 *
 *   test_tpu_ops [--only=NAME]      exit 0 when every case matched */
#include <stdlib.h>

#include "frontend/frontend.h"
#include "tests/tpu/tpu_check.h"

typedef struct tcase {
  const char *name, *text;
  ir_precision prec;
  double tol; /* 0: tpu_check.h's rule */
} tcase;

#define MAXF "%mx (a: f32[], b: f32[]) -> f32[] { %a = f32[] parameter(0)\n %b = f32[] parameter(1)\n ROOT %m = f32[] maximum(%a, %b) }\n"
#define ADDF "%ad (a: f32[], b: f32[]) -> f32[] { %a = f32[] parameter(0)\n %b = f32[] parameter(1)\n ROOT %m = f32[] add(%a, %b) }\n"
#define ADDI "%adi (a: s32[], b: s32[]) -> s32[] { %a = s32[] parameter(0)\n %b = s32[] parameter(1)\n ROOT %m = s32[] add(%a, %b) }\n"

static const tcase cases[] = {
    {"elementwise_f32_129x257",
     "HloModule m\nENTRY e {\n %x = f32[129,257] parameter(0)\n %y = f32[129,257] parameter(1)\n"
     " %a = f32[129,257] add(%x, %y)\n %s = f32[129,257] subtract(%a, %y)\n %m = f32[129,257] multiply(%s, %y)\n"
     " %d = f32[129,257] divide(%m, %a)\n %mx = f32[129,257] maximum(%d, %x)\n %mn = f32[129,257] minimum(%mx, %y)\n"
     " %ab = f32[129,257] abs(%mn)\n %ng = f32[129,257] negate(%ab)\n %fl = f32[129,257] floor(%d)\n"
     " %ce = f32[129,257] ceil(%d)\n %re = f32[129,257] round-nearest-even(%m)\n %ra = f32[129,257] round-nearest-afz(%m)\n"
     " %sg = f32[129,257] sign(%x)\n %t = f32[129,257] add(%fl, %ce)\n %u = f32[129,257] add(%re, %ra)\n"
     " %v = f32[129,257] add(%t, %u)\n %w = f32[129,257] add(%v, %sg)\n ROOT %r = (f32[129,257], f32[129,257]) tuple(%w, %ng)\n}\n", IR_PREC_DEFAULT, 0},
    {"transcendental_f32",
     "HloModule m\nENTRY e {\n %x = f32[7,300] parameter(0)\n %e = f32[7,300] exponential(%x)\n %l = f32[7,300] log(%e)\n"
     " %ab = f32[7,300] abs(%x)\n %sq = f32[7,300] sqrt(%ab)\n %one = f32[] constant(1)\n %b1 = f32[7,300] broadcast(%one), dimensions={}\n"
     " %p = f32[7,300] add(%ab, %b1)\n %rs = f32[7,300] rsqrt(%p)\n %th = f32[7,300] tanh(%x)\n %lg = f32[7,300] logistic(%x)\n"
     " %f = pred[7,300] is-finite(%l)\n ROOT %r = (f32[7,300], f32[7,300], f32[7,300], f32[7,300], f32[7,300], pred[7,300]) tuple(%l, %sq, %rs, %th, %lg, %f)\n}\n", IR_PREC_DEFAULT, 0},
    /* sine .. atan2 and cbrt: 16 special inputs (NaN, infinities, signed
     * zeros, huge, subnormal) after the random ones. The exponential puts
     * the module under tpu_check's transcendental rule (4 ulps relative). */
    {"transcendental2_f32_specials",
     "HloModule m\nENTRY e {\n %x = f32[7,300] parameter(0)\n %y = f32[7,300] parameter(1)\n"
     " %xr = f32[2100] reshape(%x)\n %yr = f32[2100] reshape(%y)\n"
     " %sa = f32[16] constant({nan, inf, -inf, 0, -0, 1, -1, 2.5, -2.5, 1e+30, -1e-30, 3, 0.5, -8, 1.40129846e-45, 100})\n"
     " %sb = f32[16] constant({1, 0, inf, -inf, 0, -0, nan, -3, inf, 2, 0.5, -0.5, inf, 3, -1, 0.25})\n"
     " %a = f32[2116] concatenate(%xr, %sa), dimensions={0}\n %b = f32[2116] concatenate(%yr, %sb), dimensions={0}\n"
     " %sn = f32[2116] sine(%a)\n %cs = f32[2116] cosine(%a)\n %em = f32[2116] exponential-minus-one(%a)\n"
     " %lp = f32[2116] log-plus-one(%a)\n %cb = f32[2116] cbrt(%a)\n %ab = f32[2116] abs(%a)\n"
     " %pw = f32[2116] power(%ab, %b)\n %pn = f32[2116] power(%a, %b)\n %at = f32[2116] atan2(%a, %b)\n"
     " %ex = f32[2116] exponential(%a)\n %cc = f32[2116] multiply(%cs, %cb)\n"
     " ROOT %r = (f32[2116], f32[2116], f32[2116], f32[2116], f32[2116], f32[2116], f32[2116], f32[2116], f32[2116], f32[2116]) tuple(%sn, %cs, %em, %lp, %cb, %pw, %pn, %at, %ex, %cc)\n}\n", IR_PREC_DEFAULT, 0},
    /* The same on bf16: the emulator rounds double -> f32 -> bf16, the
     * evaluator f32 libm -> bf16, which can differ by one bf16 ulp (2^-7
     * relative at most). */
    {"transcendental2_bf16_specials",
     "HloModule m\nENTRY e {\n %x = bf16[3,129] parameter(0)\n %y = bf16[3,129] parameter(1)\n"
     " %xr = bf16[387] reshape(%x)\n %yr = bf16[387] reshape(%y)\n"
     " %sa = bf16[12] constant({nan, inf, -inf, 0, -0, 1, -1, 2.5, -2.5, 1e+30, 3, -8})\n"
     " %sb = bf16[12] constant({1, 0, inf, -inf, 0, -0, nan, -3, inf, 2, -0.5, 3})\n"
     " %a = bf16[399] concatenate(%xr, %sa), dimensions={0}\n %b = bf16[399] concatenate(%yr, %sb), dimensions={0}\n"
     " %sn = bf16[399] sine(%a)\n %cs = bf16[399] cosine(%a)\n %em = bf16[399] exponential-minus-one(%a)\n"
     " %lp = bf16[399] log-plus-one(%a)\n %cb = bf16[399] cbrt(%a)\n %ab = bf16[399] abs(%a)\n"
     " %pw = bf16[399] power(%ab, %b)\n %pn = bf16[399] power(%a, %b)\n %at = bf16[399] atan2(%a, %b)\n"
     " ROOT %r = (bf16[399], bf16[399], bf16[399], bf16[399], bf16[399], bf16[399], bf16[399], bf16[399]) tuple(%sn, %cs, %em, %lp, %cb, %pw, %pn, %at)\n}\n", IR_PREC_DEFAULT, 1.0 / 128},
    /* Float remainder is exact (fmod): compared exactly, with x % 0,
     * inf % y, x % inf, NaNs and signed zeros. */
    {"remainder_f32_bf16_exact",
     "HloModule m\nENTRY e {\n %x = f32[5,130] parameter(0)\n %y = f32[5,130] parameter(1)\n"
     " %k = f32[] constant(0.125)\n %kb = f32[5,130] broadcast(%k), dimensions={}\n %ys = f32[5,130] multiply(%y, %kb)\n"
     " %xr = f32[650] reshape(%x)\n %yr = f32[650] reshape(%ys)\n"
     " %sa = f32[12] constant({nan, 1, inf, -inf, 5, -5, 0, -0, 7.5, -7.5, 1e+30, 1.40129846e-45})\n"
     " %sb = f32[12] constant({1, nan, 2, 3, 0, -0, 3, -3, inf, -inf, 3, 1e-45})\n"
     " %a = f32[662] concatenate(%xr, %sa), dimensions={0}\n %b = f32[662] concatenate(%yr, %sb), dimensions={0}\n"
     " %rm = f32[662] remainder(%a, %b)\n %rb = f32[662] remainder(%b, %a)\n"
     " %ha = bf16[662] convert(%a)\n %hb = bf16[662] convert(%b)\n %hr = bf16[662] remainder(%ha, %hb)\n"
     " ROOT %r = (f32[662], f32[662], bf16[662]) tuple(%rm, %rb, %hr)\n}\n", IR_PREC_DEFAULT, 0},
    {"integer_ops_s32_s8_pred",
     "HloModule m\nENTRY e {\n %x = s32[5,129] parameter(0)\n %y = s32[5,129] parameter(1)\n %a = s32[5,129] add(%x, %y)\n"
     " %m = s32[5,129] multiply(%a, %y)\n %s = s32[5,129] subtract(%m, %x)\n %mx = s32[5,129] maximum(%s, %y)\n"
     " %an = s32[5,129] and(%mx, %x)\n %o = s32[5,129] or(%an, %y)\n %xo = s32[5,129] xor(%o, %a)\n %nt = s32[5,129] not(%xo)\n"
     " %ab = s32[5,129] abs(%nt)\n %sh = s32[5,129] shift-left(%ab, %y)\n %sr = s32[5,129] shift-right-arithmetic(%nt, %y)\n"
     " %sl = s32[5,129] shift-right-logical(%nt, %y)\n %c = pred[5,129] compare(%sh, %sr), direction=LT\n"
     " %sel = s32[5,129] select(%c, %sl, %sh)\n %lo = s32[] constant(-100)\n %hi = s32[] constant(1000)\n"
     " %cl = s32[5,129] clamp(%lo, %sel, %hi)\n %b = s8[5,129] convert(%m)\n %b2 = s8[5,129] multiply(%b, %b)\n"
     " %pn = pred[5,129] not(%c)\n %pa = pred[5,129] and(%pn, %c)\n %sg = s32[5,129] sign(%x)\n"
     " %pc = s32[5,129] popcnt(%m)\n %cz = s32[5,129] count-leading-zeros(%sh)\n"
     " %pc8 = s8[5,129] popcnt(%b2)\n %cz8 = s8[5,129] count-leading-zeros(%b2)\n"
     " %dv = s32[5,129] divide(%m, %y)\n %rm = s32[5,129] remainder(%m, %y)\n"
     " %imin = s32[] constant(-2147483648)\n %bmin = s32[5,129] broadcast(%imin), dimensions={}\n"
     " %sl2 = s32[5,129] select(%c, %bmin, %sh)\n %dv2 = s32[5,129] divide(%sl2, %y)\n %rm2 = s32[5,129] remainder(%sl2, %y)\n"
     " %dv8 = s8[5,129] divide(%b2, %b)\n %rm8 = s8[5,129] remainder(%b2, %b)\n"
     " ROOT %r = (s32[5,129], s8[5,129], pred[5,129], s32[5,129], s32[5,129], s32[5,129], s8[5,129], s8[5,129], s32[5,129], s32[5,129], s32[5,129], s32[5,129], s8[5,129], s8[5,129]) tuple(%cl, %b2, %pa, %sg, %pc, %cz, %pc8, %cz8, %dv, %rm, %dv2, %rm2, %dv8, %rm8)\n}\n", IR_PREC_DEFAULT, 0},
    {"converts_and_bf16",
     "HloModule m\nENTRY e {\n %x = f32[3,1,130] parameter(0)\n %k = f32[] constant(100)\n %kb = f32[3,1,130] broadcast(%k), dimensions={}\n"
     " %xs = f32[3,1,130] multiply(%x, %kb)\n %i = s32[3,1,130] convert(%xs)\n %f = f32[3,1,130] convert(%i)\n"
     " %h = bf16[3,1,130] convert(%xs)\n %h2 = bf16[3,1,130] multiply(%h, %h)\n %hf = f32[3,1,130] convert(%h2)\n"
     " %p = pred[3,1,130] convert(%i)\n %pf = f32[3,1,130] convert(%p)\n %s8 = s8[3,1,130] convert(%xs)\n"
     " %c = pred[3,1,130] compare(%x, %f), direction=GE, type=TOTALORDER\n"
     " ROOT %r = (f32[3,1,130], bf16[3,1,130], f32[3,1,130], s8[3,1,130], pred[3,1,130], f32[3,1,130]) tuple(%f, %h2, %hf, %s8, %c, %pf)\n}\n", IR_PREC_DEFAULT, 0},
    {"bf16_params_results",
     "HloModule m\nENTRY e {\n %x = bf16[33,65] parameter(0)\n %y = bf16[33,65] parameter(1)\n %p = pred[33,65] parameter(2)\n"
     " %s8 = s8[33,65] parameter(3)\n %a = bf16[33,65] add(%x, %y)\n %s = bf16[33,65] select(%p, %a, %y)\n"
     " %t = s8[33,65] add(%s8, %s8)\n ROOT %r = (bf16[33,65], s8[33,65], pred[33,65]) tuple(%s, %t, %p)\n}\n", IR_PREC_DEFAULT, 0},
    {"pred_arith_narrow_bitcast",
     "HloModule m\nENTRY e {\n %p = pred[5,129] parameter(0)\n %q = pred[5,129] parameter(1)\n"
     " %s8 = s8[5,129] parameter(2)\n %h = bf16[5,129] parameter(3)\n"
     " %sb = pred[5,129] subtract(%p, %q)\n %dv = pred[5,129] divide(%p, %q)\n %rm = pred[5,129] remainder(%p, %q)\n"
     " %bp = pred[5,129] bitcast-convert(%s8)\n %bs = s8[5,129] bitcast-convert(%p)\n"
     " %ad = s8[5,129] add(%s8, %s8)\n %bd = pred[5,129] bitcast-convert(%ad)\n %bh = bf16[5,129] bitcast-convert(%h)\n"
     " ROOT %r = (pred[5,129], pred[5,129], pred[5,129], pred[5,129], s8[5,129], pred[5,129], bf16[5,129]) tuple(%sb, %dv, %rm, %bp, %bs, %bd, %bh)\n}\n", IR_PREC_DEFAULT, 0},
    {"tuple_parameters",
     "HloModule m\nENTRY e {\n %p = (f32[3,130], (s8[7], bf16[2,5]), pred[4]) parameter(0)\n %x = f32[3,130] parameter(1)\n"
     " %q = (s32[2]) parameter(2)\n %a = f32[3,130] get-tuple-element(%p), index=0\n %s = f32[3,130] add(%a, %x)\n"
     " %in = (s8[7], bf16[2,5]) get-tuple-element(%p), index=1\n %b = s8[7] get-tuple-element(%in), index=0\n"
     " %h = bf16[2,5] get-tuple-element(%in), index=1\n %c = pred[4] get-tuple-element(%p), index=2\n"
     " %i = s32[2] get-tuple-element(%q), index=0\n"
     " ROOT %r = (f32[3,130], s8[7], bf16[2,5], pred[4], s32[2], (f32[3,130], (s8[7], bf16[2,5]), pred[4])) tuple(%s, %b, %h, %c, %i, %p)\n}\n", IR_PREC_DEFAULT, 0},
    {"data_movement",
     "HloModule m\nENTRY e {\n %x = f32[4,9,130] parameter(0)\n %t = f32[130,4,9] transpose(%x), dimensions={2,0,1}\n"
     " %s = f32[2,3,40] slice(%x), slice={[1:4:2], [0:9:3], [5:125:3]}\n %rv = f32[4,9,130] reverse(%x), dimensions={0,2}\n"
     " %c = f32[4,18,130] concatenate(%x, %rv), dimensions={1}\n %z = f32[] constant(-2)\n"
     " %pd = f32[5,15,129] pad(%x, %z), padding=1_0x-1_-1_1x0_-1\n %b = f32[2,4,9,130] broadcast(%x), dimensions={1,2,3}\n"
     " %rs = f32[36,130] reshape(%x)\n %io = s32[4,9,130] iota(), iota_dimension=2\n %iof = f32[9,5] iota(), iota_dimension=0\n"
     " ROOT %r = (f32[130,4,9], f32[2,3,40], f32[4,18,130], f32[5,15,129], f32[2,4,9,130], f32[36,130], s32[4,9,130], f32[9,5]) tuple(%t, %s, %c, %pd, %b, %rs, %io, %iof)\n}\n", IR_PREC_DEFAULT, 0},
    {"dot_129x257x65",
     "HloModule m\nENTRY e {\n %x = f32[129,257] parameter(0)\n %y = f32[257,65] parameter(1)\n"
     " ROOT %d = f32[129,65] dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n", IR_PREC_DEFAULT, 0},
    {"dot_batch_transposed_multi_contracting",
     "HloModule m\nENTRY e {\n %x = f32[7,3,5,9] parameter(0)\n %y = f32[3,9,7,11] parameter(1)\n"
     " ROOT %d = f32[3,5,11] dot(%x, %y), lhs_batch_dims={1}, rhs_batch_dims={0}, lhs_contracting_dims={0,3}, rhs_contracting_dims={2,1}\n}\n", IR_PREC_DEFAULT, 0},
    {"dot_bf16_size1",
     "HloModule m\nENTRY e {\n %x = bf16[1,300] parameter(0)\n %y = bf16[300,1] parameter(1)\n %z = bf16[1,1] dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
     " %v0 = f32[1,300] convert(%x)\n %v = f32[300] reshape(%v0)\n %w0 = bf16[300] reshape(%y)\n %w = f32[300] convert(%w0)\n %s = f32[] dot(%v, %w), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
     " ROOT %r = (bf16[1,1], f32[]) tuple(%z, %s)\n}\n", IR_PREC_DEFAULT, 0},
    {"dot_int_and_pred",
     "HloModule m\nENTRY e {\n %x = s32[3,17] parameter(0)\n %y = s32[17,5] parameter(1)\n %d = s32[3,5] dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
     " %p = pred[4,6] parameter(2)\n %q = pred[6,2] parameter(3)\n %e = pred[4,2] dot(%p, %q), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
     " ROOT %r = (s32[3,5], pred[4,2]) tuple(%d, %e)\n}\n", IR_PREC_DEFAULT, 0},
    {"dot_highest_of_intermediates",
     "HloModule m\nENTRY e {\n %x = f32[20,150] parameter(0)\n %y = f32[150,30] parameter(1)\n %ex = f32[20,150] exponential(%x)\n"
     " %ey = f32[150,30] exponential(%y)\n ROOT %d = f32[20,30] dot(%ex, %ey), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}\n}\n", IR_PREC_DEFAULT, 0},
    {"dot_high_precision_flag",
     "HloModule m\nENTRY e {\n %x = f32[20,150] parameter(0)\n %y = f32[150,30] parameter(1)\n %ex = f32[20,150] exponential(%x)\n"
     " ROOT %d = f32[20,30] dot(%ex, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
     IR_PREC_HIGH, 0},
    {"conv1d_stride_pad",
     "HloModule m\nENTRY e {\n %x = f32[2,37,5] parameter(0)\n %k = f32[4,5,7] parameter(1)\n"
     " ROOT %c = f32[2,19,7] convolution(%x, %k), window={size=4 stride=2 pad=2_1}, dim_labels=b0f_0io->b0f\n}\n", IR_PREC_DEFAULT, 0},
    {"conv2d_dilated_grouped",
     "HloModule m\nENTRY e {\n %x = f32[3,6,11,10] parameter(0)\n %k = f32[3,3,3,4] parameter(1)\n"
     " ROOT %c = f32[3,4,9,7] convolution(%x, %k), window={size=3x3 pad=1_1x1_0 rhs_dilate=2x2 lhs_dilate=1x1}, dim_labels=bf01_01io->bf01, feature_group_count=2\n}\n", IR_PREC_DEFAULT, 0},
    {"conv2d_lhs_dilate_reversal",
     "HloModule m\nENTRY e {\n %x = f32[1,5,6,3] parameter(0)\n %k = f32[2,2,3,4] parameter(1)\n"
     " ROOT %c = f32[1,10,12,4] convolution(%x, %k), window={size=2x2 pad=1_1x1_1 lhs_dilate=2x2 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f\n}\n", IR_PREC_DEFAULT, 0},
    {"conv3d_batch_groups",
     "HloModule m\nENTRY e {\n %x = f32[4,3,5,4,3] parameter(0)\n %k = f32[3,2,2,2,6] parameter(1)\n"
     " ROOT %c = f32[2,6,4,3,2] convolution(%x, %k), window={size=2x2x2}, dim_labels=bf012_i012o->bf012, batch_group_count=2\n}\n", IR_PREC_DEFAULT, 0},
    /* 1x1 stride-1 convolutions of bf16 operands run as plain matmuls
     * (backend/tpu/lower.c lower_pointwise_conv); the io->oi kernel falls
     * back to the general path. */
    {"conv2d_pointwise_bf16",
     "HloModule m\nENTRY e {\n %x = bf16[3,7,9,130] parameter(0)\n %k = bf16[1,1,130,200] parameter(1)\n"
     " ROOT %c = f32[3,7,9,200] convolution(%x, %k), window={size=1x1}, dim_labels=b01f_01io->b01f\n}\n", IR_PREC_DEFAULT, 0},
    {"conv2d_pointwise_strided_bf16",
     "HloModule m\nENTRY e {\n %x = bf16[3,9,8,130] parameter(0)\n %k = bf16[1,1,130,70] parameter(1)\n"
     " ROOT %c = f32[3,5,3,70] convolution(%x, %k), window={size=1x1 stride=2x3}, dim_labels=b01f_01io->b01f\n}\n", IR_PREC_DEFAULT, 0},
    {"conv1d_pointwise_bf16_result",
     "HloModule m\nENTRY e {\n %x = bf16[2,33,64] parameter(0)\n %k = bf16[1,64,24] parameter(1)\n %ko = bf16[1,24,64] parameter(2)\n"
     " %c = bf16[2,33,24] convolution(%x, %k), window={size=1}, dim_labels=b0f_0io->b0f\n"
     " %d = bf16[2,33,24] convolution(%x, %ko), window={size=1}, dim_labels=b0f_0oi->b0f\n"
     " ROOT %t = (bf16[2,33,24], bf16[2,33,24]) tuple(%c, %d)\n}\n", IR_PREC_DEFAULT, 0},
    {"reduce_axes",
     "HloModule m\n" ADDF MAXF ADDI "ENTRY e {\n %x = f32[5,129,3] parameter(0)\n %z = f32[] constant(0)\n %ni = f32[] constant(-inf)\n"
     " %r0 = f32[129,3] reduce(%x, %z), dimensions={0}, to_apply=%ad\n %r1 = f32[5] reduce(%x, %ni), dimensions={1,2}, to_apply=%mx\n"
     " %r2 = f32[] reduce(%x, %z), dimensions={0,1,2}, to_apply=%ad\n %i = s32[5,129,3] parameter(1)\n %zi = s32[] constant(7)\n"
     " %r3 = s32[129] reduce(%i, %zi), dimensions={0,2}, to_apply=%adi\n ROOT %r = (f32[129,3], f32[5], f32[], s32[129]) tuple(%r0, %r1, %r2, %r3)\n}\n", IR_PREC_DEFAULT, 0},
    {"reduce_variadic_argmax",
     "HloModule m\n%am (a: f32[], ai: s32[], b: f32[], bi: s32[]) -> (f32[], s32[]) {\n %a = f32[] parameter(0)\n %ai = s32[] parameter(1)\n"
     " %b = f32[] parameter(2)\n %bi = s32[] parameter(3)\n %g = pred[] compare(%a, %b), direction=GE\n %v = f32[] select(%g, %a, %b)\n"
     " %j = s32[] select(%g, %ai, %bi)\n ROOT %t = (f32[], s32[]) tuple(%v, %j)\n}\n"
     "ENTRY e {\n %x = f32[6,200] parameter(0)\n %io = s32[6,200] iota(), iota_dimension=1\n %ni = f32[] constant(-inf)\n %z = s32[] constant(0)\n"
     " ROOT %r = (f32[6], s32[6]) reduce(%x, %io, %ni, %z), dimensions={1}, to_apply=%am\n}\n", IR_PREC_DEFAULT, 0},
    {"reduce_window_pools",
     "HloModule m\n" ADDF MAXF "ENTRY e {\n %x = f32[2,13,11,3] parameter(0)\n %ni = f32[] constant(-inf)\n %z = f32[] constant(0)\n"
     " %mp = f32[2,7,6,3] reduce-window(%x, %ni), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}, to_apply=%mx\n"
     " %ap = f32[2,12,10,3] reduce-window(%x, %z), window={size=1x2x2x1 rhs_dilate=1x1x2x1 pad=0_0x0_0x1_0x0_0}, to_apply=%ad\n"
     " ROOT %r = (f32[2,7,6,3], f32[2,12,10,3]) tuple(%mp, %ap)\n}\n", IR_PREC_DEFAULT, 0},
    {"reduce_large_to_small_tree",
     "HloModule m\n" ADDF MAXF ADDI "ENTRY e {\n %x = f32[3,40000] parameter(0)\n %i = s32[70000] parameter(1)\n"
     " %z = f32[] constant(0)\n %ni = f32[] constant(-inf)\n %zi = s32[] constant(0)\n"
     " %s = f32[3] reduce(%x, %z), dimensions={1}, to_apply=%ad\n %t = f32[] reduce(%x, %ni), dimensions={0,1}, to_apply=%mx\n"
     " %xt = f32[40000,3] transpose(%x), dimensions={1,0}\n %u = f32[3] reduce(%xt, %z), dimensions={0}, to_apply=%ad\n"
     " %v = s32[] reduce(%i, %zi), dimensions={0}, to_apply=%adi\n"
     " ROOT %r = (f32[3], f32[], f32[3], s32[]) tuple(%s, %t, %u, %v)\n}\n", IR_PREC_DEFAULT, 1e-5},
    {"tuple_gte_allreduce_fusion",
     "HloModule m\n" ADDF "%f (p: f32[9,9], q: f32[9,9]) -> f32[9,9] {\n %p = f32[9,9] parameter(0)\n %q = f32[9,9] parameter(1)\n"
     " %a = f32[9,9] add(%p, %q)\n ROOT %m = f32[9,9] multiply(%a, %p)\n}\n"
     "ENTRY e {\n %x = f32[9,9] parameter(0)\n %y = f32[9,9] parameter(1)\n %t = (f32[9,9], f32[9,9]) tuple(%x, %y)\n"
     " %g = f32[9,9] get-tuple-element(%t), index=1\n %ar = f32[9,9] all-reduce(%g), replica_groups={}, to_apply=%ad\n"
     " %fu = f32[9,9] fusion(%x, %ar), kind=kLoop, calls=%f\n ROOT %r = (f32[9,9], (f32[9,9])) tuple(%fu, (f32[9,9]) tuple(%g))\n}\n", IR_PREC_DEFAULT, 0},
    /* kOutput fusions: the elementwise program runs on the dot's result
     * tiles in VMEM (tk_matmul_epi; the tiny-VMEM target falls back to a
     * separate pass). Bias + relu with a multi-use bias add, over a batch
     * of free dims, N not a multiple of 128 (3 panels: more than one group
     * of MXUs); and a residual add of bf16
     * operands with a batch dim. */
    {"fusion_dot_bias_relu",
     "HloModule m\n%f (p: f32[2,37,70], w: f32[70,300], b: f32[300]) -> f32[2,37,300] {\n"
     " %p = f32[2,37,70] parameter(0)\n %w = f32[70,300] parameter(1)\n %b = f32[300] parameter(2)\n"
     " %d = f32[2,37,300] dot(%p, %w), lhs_contracting_dims={2}, rhs_contracting_dims={0}\n"
     " %bb = f32[2,37,300] broadcast(%b), dimensions={2}\n %a = f32[2,37,300] add(%d, %bb)\n"
     " %z = f32[] constant(0)\n %zb = f32[2,37,300] broadcast(%z), dimensions={}\n"
     " %r = f32[2,37,300] maximum(%a, %zb)\n %h = f32[2,37,300] multiply(%a, %r)\n ROOT %o = f32[2,37,300] add(%h, %r)\n}\n"
     "ENTRY e {\n %x = f32[2,37,70] parameter(0)\n %y = f32[70,300] parameter(1)\n %c = f32[300] parameter(2)\n"
     " ROOT %fu = f32[2,37,300] fusion(%x, %y, %c), kind=kOutput, calls=%f\n}\n", IR_PREC_DEFAULT, 0},
    {"fusion_batch_dot_residual_bf16",
     "HloModule m\n%f (p: bf16[3,20,200], w: bf16[3,200,130], q: f32[3,20,130]) -> f32[3,20,130] {\n"
     " %p = bf16[3,20,200] parameter(0)\n %w = bf16[3,200,130] parameter(1)\n %q = f32[3,20,130] parameter(2)\n"
     " %d = f32[3,20,130] dot(%p, %w), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}\n"
     " ROOT %o = f32[3,20,130] add(%q, %d)\n}\n"
     "ENTRY e {\n %x = bf16[3,20,200] parameter(0)\n %y = bf16[3,200,130] parameter(1)\n %r = f32[3,20,130] parameter(2)\n"
     " ROOT %fu = f32[3,20,130] fusion(%x, %y, %r), kind=kOutput, calls=%f\n}\n", IR_PREC_DEFAULT, 0},
    /* Scaled Q K^T: the right operand contracts its last dim (transposed
     * before the fused matmul). */
    {"fusion_dot_qkt_scale",
     "HloModule m\n%f (q: f32[2,3,40,16], k: f32[2,3,33,16]) -> f32[2,3,40,33] {\n"
     " %q = f32[2,3,40,16] parameter(0)\n %k = f32[2,3,33,16] parameter(1)\n"
     " %d = f32[2,3,40,33] dot(%q, %k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}\n"
     " %s = f32[] constant(0.25)\n %sb = f32[2,3,40,33] broadcast(%s), dimensions={}\n ROOT %o = f32[2,3,40,33] multiply(%d, %sb)\n}\n"
     "ENTRY e {\n %x = f32[2,3,40,16] parameter(0)\n %y = f32[2,3,33,16] parameter(1)\n"
     " ROOT %fu = f32[2,3,40,33] fusion(%x, %y), kind=kOutput, calls=%f\n}\n", IR_PREC_DEFAULT, 0},
    /* Fused attention (backend/tpu/attention.c, the kCustom fusion of
     * passes/fusion.c): split heads of [B, S, H*D] operands folded into
     * the DMAs, scale first, bf16 values, 129 queries (a second MXU panel
     * of one row), 70 keys, merge heads into [B, S, H*Dv]. v3 and v2 run
     * the kernel; the 64x64 MXU and the 192 KiB VMEM fall back to the
     * fused computation instruction by instruction. */
    {"fusion_attention",
     "HloModule m\n" MAXF ADDF "%f (a: f32[2,129,120], b: f32[2,70,120], c: bf16[2,70,3,24]) -> f32[2,129,72] {\n"
     " %a = f32[2,129,120] parameter(0)\n %b = f32[2,70,120] parameter(1)\n %c = bf16[2,70,3,24] parameter(2)\n"
     " %ra = f32[2,129,3,40] reshape(%a)\n %q = f32[2,3,129,40] transpose(%ra), dimensions={0,2,1,3}\n"
     " %rb = f32[2,70,3,40] reshape(%b)\n %k = f32[2,3,70,40] transpose(%rb), dimensions={0,2,1,3}\n"
     " %s = f32[2,3,129,70] dot(%q, %k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={3}\n"
     " %sc = f32[] constant(0.15)\n %sb = f32[2,3,129,70] broadcast(%sc), dimensions={}\n %t = f32[2,3,129,70] multiply(%sb, %s)\n"
     " %ni = f32[] constant(-inf)\n %m = f32[2,3,129] reduce(%t, %ni), dimensions={3}, to_apply=%mx\n"
     " %mb = f32[2,3,129,70] broadcast(%m), dimensions={0,1,2}\n %u = f32[2,3,129,70] subtract(%t, %mb)\n"
     " %e = f32[2,3,129,70] exponential(%u)\n %z0 = f32[] constant(0)\n %z = f32[2,3,129] reduce(%e, %z0), dimensions={3}, to_apply=%ad\n"
     " %zb = f32[2,3,129,70] broadcast(%z), dimensions={0,1,2}\n %p = f32[2,3,129,70] divide(%e, %zb)\n"
     " %o = f32[2,3,129,24] dot(%p, %c), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}\n"
     " %ot = f32[2,129,3,24] transpose(%o), dimensions={0,2,1,3}\n ROOT %r = f32[2,129,72] reshape(%ot)\n}\n"
     "ENTRY e {\n %x = f32[2,129,120] parameter(0)\n %y = f32[2,70,120] parameter(1)\n %w = bf16[2,70,3,24] parameter(2)\n"
     " ROOT %fu = f32[2,129,72] fusion(%x, %y, %w), kind=kCustom, calls=%f\n}\n", IR_PREC_DEFAULT, 0},
    /* Weight gradients X^T dY: the left operand contracts its leading dim,
     * read as it lies through the transpose buffer (f32 and bf16, batch
     * dims, rows and K not multiples of 128, an epilogue). */
    {"dot_transposed_lhs_f32",
     "HloModule m\nENTRY e {\n %x = f32[300,700] parameter(0)\n %y = f32[300,50] parameter(1)\n"
     " ROOT %d = f32[700,50] dot(%x, %y), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n}\n", IR_PREC_DEFAULT, 0},
    {"dot_transposed_lhs_bf16_batch_epilogue",
     "HloModule m\n%f (p: bf16[3,200,72], w: bf16[3,200,130], b: f32[72,130]) -> f32[3,72,130] {\n"
     " %p = bf16[3,200,72] parameter(0)\n %w = bf16[3,200,130] parameter(1)\n %b = f32[72,130] parameter(2)\n"
     " %d = f32[3,72,130] dot(%p, %w), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}\n"
     " %bb = f32[3,72,130] broadcast(%b), dimensions={1,2}\n ROOT %o = f32[3,72,130] add(%d, %bb)\n}\n"
     "ENTRY e {\n %x = bf16[3,200,72] parameter(0)\n %y = bf16[3,200,130] parameter(1)\n %c = f32[72,130] parameter(2)\n"
     " ROOT %fu = f32[3,72,130] fusion(%x, %y, %c), kind=kOutput, calls=%f\n}\n", IR_PREC_DEFAULT, 0},
    {"matmul_256x640x384_bf16",
     "HloModule m\nENTRY e {\n %x = bf16[256,640] parameter(0)\n %y = bf16[640,384] parameter(1)\n"
     " ROOT %d = f32[256,384] dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n", IR_PREC_DEFAULT, 0},
    /* f32 weights of dots with several accumulator blocks of rows (2048
     * on every target here): 3 blocks (4100 rows) convert the weight in
     * VMEM per block, with and without an epilogue (bias), the next
     * block's A piece and first B panels loaded during a block's last
     * group; 5 blocks (8200 rows) convert it in HBM first. */
    {"dot_f32_weight_row_blocks",
     "HloModule m\n%f (p: f32[4100,40], w: f32[40,300], b: f32[300]) -> f32[4100,300] {\n"
     " %p = f32[4100,40] parameter(0)\n %w = f32[40,300] parameter(1)\n %b = f32[300] parameter(2)\n"
     " %d = f32[4100,300] dot(%p, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
     " %bb = f32[4100,300] broadcast(%b), dimensions={1}\n ROOT %a = f32[4100,300] add(%d, %bb)\n}\n"
     "ENTRY e {\n %x = f32[4100,40] parameter(0)\n %y = f32[40,300] parameter(1)\n %c = f32[300] parameter(2)\n"
     " %z = f32[8200,24] parameter(3)\n %v = f32[24,130] parameter(4)\n"
     " %fu = f32[4100,300] fusion(%x, %y, %c), kind=kOutput, calls=%f\n"
     " %d1 = f32[4100,300] dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
     " %d2 = f32[8200,130] dot(%z, %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
     " ROOT %r = (f32[4100,300], f32[4100,300], f32[8200,130]) tuple(%fu, %d1, %d2)\n}\n", IR_PREC_DEFAULT, 0},
    /* An f32 weight whose panels do not fit VMEM as f32 on v2,vmem=4MiB
     * (K = 2048): the first of 4 row blocks converts it in VMEM piece by
     * piece and stores a bf16 copy that the other blocks load. */
    {"dot_f32_weight_once",
     "HloModule m\n%f (p: bf16[600,2048], w: f32[2048,300], b: f32[300]) -> f32[600,300] {\n"
     " %p = bf16[600,2048] parameter(0)\n %w = f32[2048,300] parameter(1)\n %b = f32[300] parameter(2)\n"
     " %d = f32[600,300] dot(%p, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
     " %bb = f32[600,300] broadcast(%b), dimensions={1}\n ROOT %a = f32[600,300] add(%d, %bb)\n}\n"
     "ENTRY e {\n %x = bf16[600,2048] parameter(0)\n %y = f32[2048,300] parameter(1)\n %c = f32[300] parameter(2)\n"
     " ROOT %fu = f32[600,300] fusion(%x, %y, %c), kind=kOutput, calls=%f\n}\n", IR_PREC_DEFAULT, 0},
    /* Right operands stored [batch, N, K] (contracting dim last): the
     * matmul loads their weight tiles transposed (mwtt), f32 ones staged
     * and converted in VMEM with their K pads, in one and in three bf16
     * passes, with an epilogue, and an f32 one too big for the in-VMEM
     * conversion on v2,vmem=4MiB (converted in HBM first). */
    {"dot_weight_nk_f32",
     "HloModule m\nENTRY e {\n %x = f32[129,300] parameter(0)\n %y = f32[65,300] parameter(1)\n"
     " ROOT %d = f32[129,65] dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n}\n", IR_PREC_DEFAULT, 0},
    {"dot_weight_nk_batch_bf16",
     "HloModule m\nENTRY e {\n %x = bf16[3,20,130] parameter(0)\n %y = bf16[3,257,130] parameter(1)\n"
     " ROOT %d = f32[3,20,257] dot(%x, %y), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}\n}\n", IR_PREC_DEFAULT, 0},
    {"dot_weight_nk_high",
     "HloModule m\nENTRY e {\n %x = f32[20,150] parameter(0)\n %y = f32[30,150] parameter(1)\n %ey = f32[30,150] exponential(%y)\n"
     " ROOT %d = f32[20,30] dot(%x, %ey), lhs_contracting_dims={1}, rhs_contracting_dims={1}, operand_precision={high,high}\n}\n", IR_PREC_DEFAULT, 0},
    {"dot_weight_nk_epilogue",
     "HloModule m\n%f (p: f32[37,300], w: f32[140,300], b: f32[140]) -> f32[37,140] {\n"
     " %p = f32[37,300] parameter(0)\n %w = f32[140,300] parameter(1)\n %b = f32[140] parameter(2)\n"
     " %d = f32[37,140] dot(%p, %w), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
     " %bb = f32[37,140] broadcast(%b), dimensions={1}\n %a = f32[37,140] add(%d, %bb)\n"
     " %z = f32[] constant(0)\n %zb = f32[37,140] broadcast(%z), dimensions={}\n ROOT %r = f32[37,140] maximum(%a, %zb)\n}\n"
     "ENTRY e {\n %x = f32[37,300] parameter(0)\n %y = f32[140,300] parameter(1)\n %c = f32[140] parameter(2)\n"
     " ROOT %fu = f32[37,140] fusion(%x, %y, %c), kind=kOutput, calls=%f\n}\n", IR_PREC_DEFAULT, 0},
    {"dot_f32_weight_nk_big",
     "HloModule m\n%f (p: bf16[600,2048], w: f32[300,2048], b: f32[300]) -> f32[600,300] {\n"
     " %p = bf16[600,2048] parameter(0)\n %w = f32[300,2048] parameter(1)\n %b = f32[300] parameter(2)\n"
     " %d = f32[600,300] dot(%p, %w), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
     " %bb = f32[600,300] broadcast(%b), dimensions={1}\n ROOT %a = f32[600,300] add(%d, %bb)\n}\n"
     "ENTRY e {\n %x = bf16[600,2048] parameter(0)\n %y = f32[300,2048] parameter(1)\n %c = f32[300] parameter(2)\n"
     " ROOT %fu = f32[600,300] fusion(%x, %y, %c), kind=kOutput, calls=%f\n}\n", IR_PREC_DEFAULT, 0},
};

/* Every op as the root of a computed value (and a bitcast-convert also of
 * a splat, a constant, a parameter, and ending a fusion's program after a
 * dot): the root's operands are computed in registers by
 * their one elementwise user when they can be, and a root without a
 * buffer of its own must still get one. The entry is
 * ROOT_PRE + the lines + "}"; `comps` are computations before it. */
#define ROOT_PRE                                                                                  \
  "ENTRY e {\n %p0 = f32[4,6] parameter(0)\n %p1 = f32[4,6] parameter(1)\n"                    \
  " %n = f32[4,6] negate(%p0)\n %m = f32[4,6] add(%p0, %p1)\n"
#define FUSION_XY(body) "%f (x: f32[4,6], y: f32[4,6]) -> " body

static const struct {
  const char *name, *comps, *lines;
} roots[] = {
    {"bitcast_convert", "", " ROOT %r = s32[4,6] bitcast-convert(%n)\n"},
    {"bitcast_convert_chain", "",
     " %b = s32[4,6] bitcast-convert(%m)\n %c = s32[4,6] add(%b, %b)\n"
     " ROOT %r = f32[4,6] bitcast-convert(%c)\n"},
    {"bitcast_convert_splat", "",
     " %c = f32[] constant(-1.5)\n %b = f32[4,6] broadcast(%c), dimensions={}\n"
     " ROOT %r = s32[4,6] bitcast-convert(%b)\n"},
    {"bitcast_convert_constant", "",
     " %c = f32[2] constant({1, -2})\n ROOT %r = s32[2] bitcast-convert(%c)\n"},
    {"bitcast_convert_parameter", "", " ROOT %r = s32[4,6] bitcast-convert(%p0)\n"},
    {"bitcast_convert_loop_fusion",
     FUSION_XY("s32[4,6] {\n %x = f32[4,6] parameter(0)\n %y = f32[4,6] parameter(1)\n"
               " %a = f32[4,6] multiply(%x, %y)\n ROOT %b = s32[4,6] bitcast-convert(%a)\n}\n"),
     " ROOT %r = s32[4,6] fusion(%n, %m), kind=kLoop, calls=%f\n"},
    {"bitcast_convert_dot_epilogue",
     FUSION_XY("f32[4,4] {\n %x = f32[4,6] parameter(0)\n %y = f32[4,6] parameter(1)\n"
               " %d = f32[4,4] dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
               " %c = f32[] constant(1)\n %cb = f32[4,4] broadcast(%c), dimensions={}\n"
               " %a = f32[4,4] add(%d, %cb)\n %b = s32[4,4] bitcast-convert(%a)\n"
               " ROOT %r = f32[4,4] bitcast-convert(%b)\n}\n"),
     " ROOT %r = f32[4,4] fusion(%p0, %p1), kind=kOutput, calls=%f\n"},
    {"bitcast_convert_of_dot",
     FUSION_XY("f32[4,4] {\n %x = f32[4,6] parameter(0)\n %y = f32[4,6] parameter(1)\n"
               " %d = f32[4,4] dot(%x, %y), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
               " ROOT %r = f32[4,4] bitcast-convert(%d)\n}\n"),
     " ROOT %r = f32[4,4] fusion(%n, %m), kind=kOutput, calls=%f\n"},
    {"convert", "", " ROOT %r = s32[4,6] convert(%n)\n"},
    {"convert_bf16", "", " ROOT %r = bf16[4,6] convert(%n)\n"},
    {"copy", "", " ROOT %r = f32[4,6] copy(%n)\n"},
    {"reshape", "", " ROOT %r = f32[24] reshape(%n)\n"},
    {"broadcast", "", " ROOT %r = f32[3,4,6] broadcast(%n), dimensions={1,2}\n"},
    {"transpose", "", " ROOT %r = f32[6,4] transpose(%n), dimensions={1,0}\n"},
    {"slice", "", " ROOT %r = f32[2,3] slice(%n), slice={[1:3], [0:6:2]}\n"},
    {"reverse", "", " ROOT %r = f32[4,6] reverse(%n), dimensions={1}\n"},
    {"concatenate", "", " ROOT %r = f32[8,6] concatenate(%n, %m), dimensions={0}\n"},
    {"pad", "",
     " %z = f32[] constant(1)\n %zz = f32[] negate(%z)\n"
     " ROOT %r = f32[6,9] pad(%n, %zz), padding=1_1x1_2\n"},
    {"dot", "", " ROOT %r = f32[4,4] dot(%n, %m), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"},
    {"convolution", "",
     " %a = f32[1,4,6,1] reshape(%n)\n %k = f32[1,2,2,1] slice(%a), slice={[0:1], [0:2], [0:2], [0:1]}\n"
     " %kk = f32[2,2,1,1] reshape(%k)\n"
     " ROOT %r = f32[1,3,5,1] convolution(%a, %kk), window={size=2x2}, dim_labels=b01f_01io->b01f\n"},
    {"reduce", ADDF, " %z = f32[] constant(0)\n ROOT %r = f32[4] reduce(%n, %z), dimensions={1}, to_apply=%ad\n"},
    {"reduce_window", ADDF,
     " %z = f32[] constant(0)\n ROOT %r = f32[3,5] reduce-window(%n, %z), window={size=2x2}, to_apply=%ad\n"},
    {"all_reduce", ADDF, " ROOT %r = f32[4,6] all-reduce(%n), to_apply=%ad\n"},
    {"tuple", "", " ROOT %r = (f32[4,6], f32[4,6]) tuple(%n, %m)\n"},
    {"get_tuple_element", "",
     " %t = (f32[4,6], f32[4,6]) tuple(%n, %m)\n ROOT %r = f32[4,6] get-tuple-element(%t), index=1\n"},
    {"compare", "", " ROOT %r = pred[4,6] compare(%n, %m), direction=LT\n"},
    {"select", "",
     " %c = pred[4,6] compare(%n, %m), direction=LT\n ROOT %r = f32[4,6] select(%c, %n, %m)\n"},
    {"clamp", "", " ROOT %r = f32[4,6] clamp(%n, %m, %p1)\n"},
    {"negate", "", " ROOT %r = f32[4,6] negate(%n)\n"},
};

/* Runs every roots[] module on v3 and v2; the number that failed. */
static int check_roots(const char *only, int *runs) {
  int fails = 0;
  for (size_t k = 0; k < COUNTOF(roots); k++) {
    if (only && !strstr(roots[k].name, only)) continue;
    char text[4096], name[128];
    snprintf(text, sizeof text, "HloModule m\n%s%s%s}\n", roots[k].comps, ROOT_PRE, roots[k].lines);
    ir_module *m = tc_parse(roots[k].name, text);
    static const char *const rt[] = {"v3", "v2"};
    for (size_t t = 0; t < COUNTOF(rt); t++) {
      snprintf(name, sizeof name, "root_of_computed_%s@%s", roots[k].name, rt[t]);
      int r = tc_check(m, rt[t], IR_PREC_DEFAULT, 99 + k, -1, name);
      ++*runs;
      if (r == 0) printf("PASS %s\n", name);
      else fails++;
    }
    ir_module_destroy(m);
  }
  return fails;
}

static const char *const targets[] = {"v3", "v2", "v3,mxu=64x64,vmem=8MiB", "v2,vmem=192KiB",
                                      "v2,vmem=4MiB"};

/* An op without a vector-unit sequence (integer power) and an element
 * type without a vector-unit representation (f64) are located errors
 * naming the op / the type. */
static int check_unsupported(void) {
  static const struct {
    const char *text, *at, *what;
  } u[] = {
      {"HloModule m\nENTRY e {\n %x = s32[4] parameter(0)\n ROOT %s = s32[4] power(%x, %x)\n}\n",
       "unsupported.hlo:4:", "error: tpu: power"},
      {"HloModule m\nENTRY e {\n %x = f64[4] parameter(0)\n ROOT %s = f64[4] sine(%x)\n}\n",
       "unsupported.hlo:3:", "f64 is not supported on the TPU"},
  };
  int fails = 0;
  for (size_t k = 0; k < COUNTOF(u); k++) {
    ir_module *m = tc_parse("unsupported.hlo", u[k].text);
    diag *d = diag_create();
    tpub_image *img = NULL;
    base_status st = tpu_compile(m, NULL, d, &img, NULL);
    const char *t = diag_text(d);
    int bad = st != ST_UNSUPPORTED || img || !strstr(t, u[k].at) || !strstr(t, u[k].what);
    if (bad) printf("FAIL unsupported_op_error %zu: status %d, diagnostics:\n%s\n", k, (int)st, t);
    else printf("PASS unsupported_op_error %zu\n", k);
    fails += bad;
    diag_destroy(d);
    tpub_free(img);
    ir_module_destroy(m);
  }
  return fails;
}

int main(int argc, char **argv) {
  const char *only = argc > 1 && !strncmp(argv[1], "--only=", 7) ? argv[1] + 7 : NULL;
  int fail = 0, n = 0;
  for (size_t i = 0; i < COUNTOF(cases); i++) {
    if (only && !strstr(cases[i].name, only)) continue;
    ir_module *m = tc_parse(cases[i].name, cases[i].text);
    for (size_t t = 0; t < COUNTOF(targets); t++) {
      /* The tiny-VMEM target only for contractions (K chunking). */
      if (t == 3 && !strstr(cases[i].name, "dot") && !strstr(cases[i].name, "conv") &&
          !strstr(cases[i].name, "matmul"))
        continue;
      /* The 4 MiB target only for the f32 weights converted once. */
      if (t == 4 && !strstr(cases[i].name, "weight")) continue;
      char name[256];
      snprintf(name, sizeof name, "%s@%s", cases[i].name, targets[t]);
      int r = tc_check(m, targets[t], cases[i].prec, 1234 + i, cases[i].tol > 0 ? cases[i].tol : -1,
                       name);
      n++;
      if (r == 0) printf("PASS %s\n", name);
      else fail++;
    }
    ir_module_destroy(m);
  }
  fail += check_roots(only, &n);
  if (!only) fail += check_unsupported();
  printf("test_tpu_ops: %d of %d runs failed\n", fail, n);
  return fail ? 1 : 0;
}
