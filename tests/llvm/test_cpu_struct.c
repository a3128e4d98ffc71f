/* test_cpu_struct.c: data movement (broadcast, reshape, transpose, slice,
 * concatenate, pad, reverse, iota, copy), reductions (reduce with any
 * to_apply, variadic reduce, reduce-window), dot_general, convolution,
 * tuples and fusions on the CPU JIT against the reference evaluator, bit
 * for bit under STRICT numerics, and TPU numerics against the evaluator
 * run on operands rounded to bf16. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "tests/llvm/cpu_check.h"

#define D(...) ((const int64_t[]){__VA_ARGS__})
#define INTS(m, ...) tm_ints((m).m->arena, (int)(sizeof((int64_t[]){__VA_ARGS__}) / 8), (int64_t[]){__VA_ARGS__})

/* Random arguments include inf and NaN except under NATIVE numerics, where
 * a convolution's padding contributes 0 * w (NaN for an infinite w) while
 * the evaluator skips padded positions (docs/cpu-backend.md). */
static bool run(tmod *m, ir_id root, cpu_numerics n, int threads, double tol, const char *what) {
  tm_finish(m, root);
  arena *a = arena_create();
  bool ok = tm_check(m, tm_args(m, a, 1234, n != CPU_NUMERICS_NATIVE), n, threads, tol, what);
  arena_destroy(a);
  ir_module_destroy(m->m);
  return ok;
}

static void data_movement(void **state) {
  (void)state;
  ir_type types[] = {IR_PRED, IR_S8, IR_S32, IR_BF16, IR_F16, IR_F32};
  for (size_t ti = 0; ti < COUNTOF(types); ti++) {
    ir_type t = types[ti];
    ir_attrs a;
    { /* broadcast [3,5] -> [4,3,2,5] */
      tmod m = tm_new("bcast");
      ir_id p = tm_param(&m, 0, t, 2, D(3, 5));
      memset(&a, 0, sizeof a);
      a.dimensions = INTS(m, 1, 3);
      ir_inst_proto in;
      memset(&in, 0, sizeof in);
      in.op = IR_OP_BROADCAST;
      in.shape = ir_shape_array(t, 4, D(4, 3, 2, 5));
      in.nops = 1;
      in.ops = &p;
      in.a = a;
      assert_true(run(&m, ir_inst_add(m.m, m.c, &in), CPU_NUMERICS_STRICT, 1, 0, "broadcast"));
    }
    { /* transpose then reshape then slice with strides, reverse */
      tmod m = tm_new("layout");
      ir_id p = tm_param(&m, 0, t, 3, D(4, 6, 5));
      memset(&a, 0, sizeof a);
      a.dimensions = INTS(m, 2, 0, 1);
      ir_id tr = tm_op(&m, IR_OP_TRANSPOSE, &p, 1, &a);
      ir_inst_proto in;
      memset(&in, 0, sizeof in);
      in.op = IR_OP_RESHAPE;
      in.shape = ir_shape_array(t, 2, D(10, 12));
      in.nops = 1;
      in.ops = &tr;
      ir_id rs = ir_inst_add(m.m, m.c, &in);
      memset(&a, 0, sizeof a);
      a.slice_start = INTS(m, 1, 2);
      a.slice_limit = INTS(m, 9, 12);
      a.slice_stride = INTS(m, 3, 2);
      ir_id sl = tm_op(&m, IR_OP_SLICE, &rs, 1, &a);
      memset(&a, 0, sizeof a);
      a.dimensions = INTS(m, 1);
      ir_id rv = tm_op(&m, IR_OP_REVERSE, &sl, 1, &a);
      ir_id cp = tm_op(&m, IR_OP_COPY, &rv, 1, NULL);
      assert_true(run(&m, cp, CPU_NUMERICS_STRICT, 1, 0, "transpose/reshape/slice/reverse"));
    }
    { /* concatenate three along dim 1 */
      tmod m = tm_new("concat");
      ir_id ps[3] = {tm_param(&m, 0, t, 2, D(3, 2)), tm_param(&m, 1, t, 2, D(3, 5)),
                     tm_param(&m, 2, t, 2, D(3, 1))};
      memset(&a, 0, sizeof a);
      a.dimensions = INTS(m, 1);
      assert_true(run(&m, tm_op(&m, IR_OP_CONCATENATE, ps, 3, &a), CPU_NUMERICS_STRICT, 1, 0, "concatenate"));
    }
    { /* pad: negative low edge, interior, high edge */
      tmod m = tm_new("pad");
      ir_id ps[2] = {tm_param(&m, 0, t, 2, D(4, 5)), tm_param(&m, 1, t, 0, NULL)};
      memset(&a, 0, sizeof a);
      ir_padding_dim pd[2] = {{-1, 2, 1}, {3, -2, 2}};
      a.npad = 2;
      a.padding = pd;
      assert_true(run(&m, tm_op(&m, IR_OP_PAD, ps, 2, &a), CPU_NUMERICS_STRICT, 1, 0, "pad"));
    }
    if (t != IR_PRED) { /* iota along dim 1 (pred iota is ill-typed) */
      tmod m = tm_new("iota");
      ir_inst_proto in;
      memset(&in, 0, sizeof in);
      in.op = IR_OP_IOTA;
      in.shape = ir_shape_array(t, 2, D(3, 300));
      in.a.index = 1;
      assert_true(run(&m, ir_inst_add(m.m, m.c, &in), CPU_NUMERICS_STRICT, 1, 0, "iota"));
    }
  }
}

static void reductions(void **state) {
  (void)state;
  ir_type types[] = {IR_S8, IR_S32, IR_BF16, IR_F16, IR_F32};
  ir_op rops[] = {IR_OP_ADD, IR_OP_MAXIMUM, IR_OP_MINIMUM, IR_OP_MULTIPLY};
  for (size_t ti = 0; ti < COUNTOF(types); ti++)
    for (size_t ri = 0; ri < COUNTOF(rops); ri++)
      for (int dsel = 0; dsel < 4; dsel++) {
        ir_type t = types[ti];
        tmod m = tm_new("reduce");
        ir_comp_id red = tm_binary_comp(&m, rops[ri], t);
        ir_id ps[2] = {tm_param(&m, 0, t, 3, D(5, 7, 33)), tm_param(&m, 1, t, 0, NULL)};
        ir_attrs a;
        memset(&a, 0, sizeof a);
        if (dsel == 0) a.dimensions = INTS(m, 2);
        if (dsel == 1) a.dimensions = INTS(m, 0);
        if (dsel == 2) a.dimensions = INTS(m, 0, 2);
        if (dsel == 3) a.dimensions = INTS(m, 0, 1, 2);
        char what[64];
        snprintf(what, sizeof what, "reduce %s %s sel%d", ir_op_name(rops[ri]), ir_type_name(t), dsel);
        assert_true(run(&m, tm_call(&m, IR_OP_REDUCE, ps, 2, &a, red), CPU_NUMERICS_STRICT, 2, 0, what));
      }
  /* NATIVE numerics reassociate float add/max/min/multiply reductions over
   * the innermost dim (8 partial accumulators): close, not exact. */
  for (size_t ri = 0; ri < 3; ri++)
    for (int dsel = 0; dsel < 2; dsel++) {
      tmod m = tm_new("reduce_native");
      ir_comp_id red = tm_binary_comp(&m, rops[ri], IR_F32);
      ir_id ps[2] = {tm_param(&m, 0, IR_F32, 3, D(5, 7, 333)), tm_param(&m, 1, IR_F32, 0, NULL)};
      ir_attrs a;
      memset(&a, 0, sizeof a);
      a.dimensions = dsel ? INTS(m, 0, 2) : INTS(m, 2);
      char what[64];
      snprintf(what, sizeof what, "native reduce %s sel%d", ir_op_name(rops[ri]), dsel);
      assert_true(run(&m, tm_call(&m, IR_OP_REDUCE, ps, 2, &a, red), CPU_NUMERICS_NATIVE, 2, 1e-4, what));
    }
}

/* argmax over dim 1: reduce((values, indices), (-inf, 0)) with a
 * two-output comparator. */
static void variadic_reduce_argmax(void **state) {
  (void)state;
  tmod m = tm_new("argmax");
  ir_comp_id c = ir_comp_add(m.m, "argmax_cmp");
  ir_comp_id saved = m.c;
  m.c = c;
  ir_id av = tm_param(&m, 0, IR_F32, 0, NULL), ai = tm_param(&m, 1, IR_S32, 0, NULL);
  ir_id bv = tm_param(&m, 2, IR_F32, 0, NULL), bi = tm_param(&m, 3, IR_S32, 0, NULL);
  ir_attrs ca;
  memset(&ca, 0, sizeof ca);
  ca.cmp_dir = IR_CMP_GE;
  ir_id ge = tm_op(&m, IR_OP_COMPARE, (ir_id[]){av, bv}, 2, &ca);
  ir_id v = tm_op(&m, IR_OP_SELECT, (ir_id[]){ge, av, bv}, 3, NULL);
  ir_id i = tm_op(&m, IR_OP_SELECT, (ir_id[]){ge, ai, bi}, 3, NULL);
  ir_comp_get(m.m, c)->root = tm_op(&m, IR_OP_TUPLE, (ir_id[]){v, i}, 2, NULL);
  m.c = saved;
  ir_id x = tm_param(&m, 0, IR_F32, 2, D(17, 29));
  ir_attrs ia;
  memset(&ia, 0, sizeof ia);
  ia.index = 1;
  ir_inst_proto io;
  memset(&io, 0, sizeof io);
  io.op = IR_OP_IOTA;
  io.shape = ir_shape_array(IR_S32, 2, D(17, 29));
  io.a = ia;
  ir_id idx = ir_inst_add(m.m, m.c, &io);
  ir_id ninf = tm_const_f32(&m, -INFINITY), zero = tm_const_scalar(&m, IR_S32, 0);
  ir_attrs ra;
  memset(&ra, 0, sizeof ra);
  ra.dimensions = INTS(m, 1);
  ir_id r = tm_call(&m, IR_OP_REDUCE, (ir_id[]){x, idx, ninf, zero}, 4, &ra, c);
  ir_attrs g;
  memset(&g, 0, sizeof g);
  g.index = 1;
  ir_id gi = tm_op(&m, IR_OP_GET_TUPLE_ELEMENT, &r, 1, &g);
  g.index = 0;
  ir_id gv = tm_op(&m, IR_OP_GET_TUPLE_ELEMENT, &r, 1, &g);
  assert_true(run(&m, tm_op(&m, IR_OP_TUPLE, (ir_id[]){gi, gv, x}, 3, NULL), CPU_NUMERICS_STRICT, 1, 0, "argmax"));
}

static void reduce_window(void **state) {
  (void)state;
  ir_type types[] = {IR_S32, IR_BF16, IR_F32};
  for (size_t ti = 0; ti < COUNTOF(types); ti++)
    for (int variant = 0; variant < 3; variant++) {
      ir_type t = types[ti];
      tmod m = tm_new("rw");
      ir_comp_id red = tm_binary_comp(&m, variant == 1 ? IR_OP_MAXIMUM : IR_OP_ADD, t);
      ir_id ps[2] = {tm_param(&m, 0, t, 4, D(2, 11, 9, 3)), tm_param(&m, 1, t, 0, NULL)};
      ir_attrs a;
      memset(&a, 0, sizeof a);
      ir_window win_a;
      memset(&win_a, 0, sizeof win_a);
      a.window = &win_a;
      win_a.rank = 4;
      for (int d = 0; d < 4; d++)
        win_a.dims[d] = (ir_window_dim){1, 1, 0, 0, 1, 1, false};
      win_a.dims[1] = (ir_window_dim){3, 2, 1, 1, 1, 1, false};
      win_a.dims[2] = (ir_window_dim){2, 1, 0, 1, 1, 1, false};
      if (variant == 2) {
        win_a.dims[1] = (ir_window_dim){3, 1, 2, 0, 2, 1, false}; /* base dilation */
        win_a.dims[2] = (ir_window_dim){2, 2, 1, 1, 1, 2, false}; /* window dilation */
      }
      char what[64];
      snprintf(what, sizeof what, "reduce-window %s v%d", ir_type_name(t), variant);
      assert_true(run(&m, tm_call(&m, IR_OP_REDUCE_WINDOW, ps, 2, &a, red), CPU_NUMERICS_STRICT, 1, 0, what));
    }
}

/* dot_general: plain, transposed operands, batch dims, two contracting
 * dims, mixed types. */
static bool dot_case(ir_type lt, ir_type rt, ir_type pt, int variant, cpu_numerics n, int threads, double tol) {
  tmod m = tm_new("dot");
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = pt;
  ir_id l, r;
  switch (variant) {
  case 0: /* [33,47] x [47,29] */
    l = tm_param(&m, 0, lt, 2, D(33, 47));
    r = tm_param(&m, 1, rt, 2, D(47, 29));
    a.lhs_contracting = INTS(m, 1);
    a.rhs_contracting = INTS(m, 0);
    break;
  case 1: /* lhs [K,M], rhs [N,K] */
    l = tm_param(&m, 0, lt, 2, D(47, 33));
    r = tm_param(&m, 1, rt, 2, D(29, 47));
    a.lhs_contracting = INTS(m, 0);
    a.rhs_contracting = INTS(m, 1);
    break;
  case 2: /* batch: [B=3, M, K] x [K, B, N] */
    l = tm_param(&m, 0, lt, 3, D(3, 20, 17));
    r = tm_param(&m, 1, rt, 3, D(17, 3, 9));
    a.lhs_batch = INTS(m, 0);
    a.rhs_batch = INTS(m, 1);
    a.lhs_contracting = INTS(m, 2);
    a.rhs_contracting = INTS(m, 0);
    break;
  case 3: /* two contracting dims, in swapped order */
    l = tm_param(&m, 0, lt, 3, D(6, 5, 7));
    r = tm_param(&m, 1, rt, 3, D(7, 4, 6));
    a.lhs_contracting = INTS(m, 2, 0);
    a.rhs_contracting = INTS(m, 0, 2);
    break;
  default: /* large: [256, 300] x [300, 270], several threads */
    l = tm_param(&m, 0, lt, 2, D(256, 300));
    r = tm_param(&m, 1, rt, 2, D(300, 270));
    a.lhs_contracting = INTS(m, 1);
    a.rhs_contracting = INTS(m, 0);
    break;
  }
  ir_shape ss[2] = {*ir_inst_get(m.m, m.c, l)->shape, *ir_inst_get(m.m, m.c, r)->shape}, out;
  char err[200];
  if (!ir_infer_shape(m.m, IR_OP_DOT, ss, 2, &a, NULL, 0, &out, err, sizeof err)) {
    ir_module_destroy(m.m);
    return true;
  }
  char what[64];
  snprintf(what, sizeof what, "dot %s x %s v%d", ir_type_name(lt), ir_type_name(rt), variant);
  return run(&m, tm_op(&m, IR_OP_DOT, (ir_id[]){l, r}, 2, &a), n, threads, tol, what);
}

static void dots_strict(void **state) {
  (void)state;
  ir_type types[] = {IR_S8, IR_S32, IR_BF16, IR_F16, IR_F32, IR_PRED};
  for (int v = 0; v < 5; v++)
    for (size_t i = 0; i < COUNTOF(types); i++) {
      assert_true(dot_case(types[i], types[i], IR_TYPE_INVALID, v, CPU_NUMERICS_STRICT, 2, 0));
      if (types[i] == IR_BF16) assert_true(dot_case(IR_BF16, IR_BF16, IR_F32, v, CPU_NUMERICS_STRICT, 2, 0));
      if (types[i] == IR_S8) assert_true(dot_case(IR_S8, IR_S8, IR_S32, v, CPU_NUMERICS_STRICT, 1, 0));
    }
}

/* NATIVE numerics fuse multiply-adds (the tiled kernel) or call BLAS:
 * close, not exact. */
static void dots_native(void **state) {
  (void)state;
  for (int v = 0; v < 5; v++) assert_true(dot_case(IR_F32, IR_F32, IR_TYPE_INVALID, v, CPU_NUMERICS_NATIVE, 2, 1e-4));
  for (int v = 0; v < 5; v++) assert_true(dot_case(IR_BF16, IR_BF16, IR_F32, v, CPU_NUMERICS_NATIVE, 1, 1e-4));
  /* Through cblas_sgemm where built with OpenBLAS. */
  tmod m = tm_new("blas");
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.lhs_contracting = INTS(m, 1);
  a.rhs_contracting = INTS(m, 0);
  ir_id l = tm_param(&m, 0, IR_F32, 2, D(130, 257)), r = tm_param(&m, 1, IR_F32, 2, D(257, 99));
  tm_finish(&m, tm_op(&m, IR_OP_DOT, (ir_id[]){l, r}, 2, &a));
  cpu_options o;
  cpu_options_init(&o);
  o.use_blas = true;
  o.threads = 2;
  arena *ar = arena_create();
  assert_true(tm_check_opts(&m, tm_args(&m, ar, 5, false), &o, 1e-4, "dot via BLAS"));
  arena_destroy(ar);
  ir_module_destroy(m.m);
}

/* TPU numerics: dot(x, y) with operands rounded to bf16 and f32 sums must
 * equal the evaluator's dot(bf16(x), bf16(y)) -> f32 exactly (bf16
 * products are exact in f32, so fused multiply-adds round like the
 * evaluator's separate multiply and add). */
static void tpu_case(int64_t M, int64_t K, int64_t N, int threads);

static void dots_tpu_numerics(void **state) {
  (void)state;
  tpu_case(37, 300, 45, 2);   /* tiled kernel, padded edges, one K block */
  tpu_case(130, 600, 70, 2);  /* three K blocks */
  tpu_case(5, 7, 3, 1);       /* row kernel */
}

static void tpu_case(int64_t M, int64_t K, int64_t N, int threads) {
  arena *ar = arena_create();
  tmod t1 = tm_new("tpu"), t2 = tm_new("ref");
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.lhs_contracting = tm_ints(ar, 1, D(1));
  a.rhs_contracting = tm_ints(ar, 1, D(0));
  a.preferred_type = IR_TYPE_INVALID;
  ir_id l = tm_param(&t1, 0, IR_F32, 2, D(M, K)), r = tm_param(&t1, 1, IR_F32, 2, D(K, N));
  tm_finish(&t1, tm_op(&t1, IR_OP_DOT, (ir_id[]){l, r}, 2, &a));
  l = tm_param(&t2, 0, IR_F32, 2, D(M, K));
  r = tm_param(&t2, 1, IR_F32, 2, D(K, N));
  ir_inst_proto cv;
  memset(&cv, 0, sizeof cv);
  cv.op = IR_OP_CONVERT;
  cv.nops = 1;
  cv.shape = ir_shape_array(IR_BF16, 2, D(M, K));
  cv.ops = &l;
  ir_id lb = ir_inst_add(t2.m, t2.c, &cv);
  cv.shape = ir_shape_array(IR_BF16, 2, D(K, N));
  cv.ops = &r;
  ir_id rb = ir_inst_add(t2.m, t2.c, &cv);
  a.preferred_type = IR_F32;
  tm_finish(&t2, tm_op(&t2, IR_OP_DOT, (ir_id[]){lb, rb}, 2, &a));
  ir_literal **args = tm_args(&t1, ar, 77, false);
  char err[256];
  ir_literal *ref = NULL, *got = NULL;
  assert_int_equal(ir_eval(t2.m, NULL, args, 2, ar, &ref, err, sizeof err), ST_OK);
  cpu_options o;
  cpu_options_init(&o);
  o.numerics = CPU_NUMERICS_TPU;
  o.threads = threads;
  cpu_exe *x = NULL;
  assert_int_equal(cpu_compile(t1.m, &o, &x, err, sizeof err), ST_OK);
  assert_int_equal(cpu_execute(x, args, 2, ar, &got, err, sizeof err), ST_OK);
  assert_true(tm_agree(ref, got, 0, "tpu numerics dot"));
  cpu_exe_destroy(x);
  ir_module_destroy(t1.m);
  ir_module_destroy(t2.m);
  arena_destroy(ar);
}

static bool conv_case(ir_type t, int variant, cpu_numerics num) {
  tmod m = tm_new("conv");
  ir_attrs a;
  memset(&a, 0, sizeof a);
  a.preferred_type = IR_TYPE_INVALID;
  a.feature_group_count = 1;
  a.batch_group_count = 1;
  ir_window win_a;
  memset(&win_a, 0, sizeof win_a);
  a.window = &win_a;
  win_a.rank = 2;
  ir_conv_dims *cd = &a.conv;
  cd->nspatial = 2;
  ir_id x, k;
  /* NHWC input, HWIO kernel, NHWC output: b01f_01io->b01f */
  cd->in_batch = 0, cd->in_spatial[0] = 1, cd->in_spatial[1] = 2, cd->in_feature = 3;
  cd->k_spatial[0] = 0, cd->k_spatial[1] = 1, cd->k_in = 2, cd->k_out = 3;
  cd->out_batch = 0, cd->out_spatial[0] = 1, cd->out_spatial[1] = 2, cd->out_feature = 3;
  for (int d = 0; d < 2; d++) win_a.dims[d] = (ir_window_dim){3, 1, 1, 1, 1, 1, false};
  int64_t cin = num == CPU_NUMERICS_NATIVE ? 16 : 4, cout = num == CPU_NUMERICS_NATIVE ? 40 : 6;
  if (variant == 1) { /* strides, asymmetric padding, dilations, reversal */
    win_a.dims[0] = (ir_window_dim){3, 2, 2, 0, 1, 2, false};
    win_a.dims[1] = (ir_window_dim){3, 1, 1, 2, 2, 1, true};
  }
  if (variant == 2) a.feature_group_count = 2; /* grouped */
  if (variant == 3) { /* NCHW / OIHW layouts */
    cd->in_batch = 0, cd->in_feature = 1, cd->in_spatial[0] = 2, cd->in_spatial[1] = 3;
    cd->k_out = 0, cd->k_in = 1, cd->k_spatial[0] = 2, cd->k_spatial[1] = 3;
    cd->out_batch = 0, cd->out_feature = 1, cd->out_spatial[0] = 2, cd->out_spatial[1] = 3;
  }
  if (variant == 4) a.batch_group_count = 2;
  if (variant == 6) { /* direct kernel: 48 outputs, strides, asymmetric padding */
    cout = 48;
    win_a.dims[0] = (ir_window_dim){3, 2, 1, 2, 1, 1, false};
    win_a.dims[1] = (ir_window_dim){3, 1, 2, 0, 1, 1, false};
  }
  if (variant == 7) cout = 64; /* direct kernel: 4 vectors of outputs, padding 1 */
  if (variant == 5) { /* strides, asymmetric padding, window dilation */
    win_a.dims[0] = (ir_window_dim){3, 2, 2, 0, 1, 2, false};
    win_a.dims[1] = (ir_window_dim){3, 1, 0, 2, 1, 1, false};
  }
  int64_t kin = cin / a.feature_group_count;
  if (variant == 3) {
    x = tm_param(&m, 0, t, 4, D(2, cin, 9, 8));
    k = tm_param(&m, 1, t, 4, D(cout, kin, 3, 3));
  } else {
    x = tm_param(&m, 0, t, 4, D(variant == 4 ? 4 : 2, 9, 8, cin));
    k = tm_param(&m, 1, t, 4, D(3, 3, kin, cout));
  }
  ir_shape ss[2] = {*ir_inst_get(m.m, m.c, x)->shape, *ir_inst_get(m.m, m.c, k)->shape}, out;
  char err[200];
  if (!ir_infer_shape(m.m, IR_OP_CONVOLUTION, ss, 2, &a, NULL, 0, &out, err, sizeof err)) {
    fprintf(stderr, "conv v%d rejected: %s\n", variant, err);
    ir_module_destroy(m.m);
    return false;
  }
  char what[64];
  snprintf(what, sizeof what, "convolution %s v%d", ir_type_name(t), variant);
  return run(&m, tm_op(&m, IR_OP_CONVOLUTION, (ir_id[]){x, k}, 2, &a), num, 2,
             num == CPU_NUMERICS_STRICT ? 0 : 1e-4, what);
}

static void convolutions(void **state) {
  (void)state;
  for (int v = 0; v < 8; v++) {
    assert_true(conv_case(IR_F32, v, CPU_NUMERICS_STRICT));
    assert_true(conv_case(IR_BF16, v, CPU_NUMERICS_STRICT));
    assert_true(conv_case(IR_S32, v, CPU_NUMERICS_STRICT));
    /* NATIVE: the direct kernel (v6, v7), the implicit GEMM (v0, v5), else
     * elemental. */
    assert_true(conv_case(IR_F32, v, CPU_NUMERICS_NATIVE));
    assert_true(conv_case(IR_BF16, v, CPU_NUMERICS_NATIVE));
  }
}

/* A fused computation: the loop fusion relu(x*a+b)*c with a broadcast
 * scalar, a multi-output fusion returning (sum over rows, elementwise), and
 * a fusion with a dot inside plus a bias add. */
static void fusions(void **state) {
  (void)state;
  for (int variant = 0; variant < 3; variant++) {
    tmod m = tm_new("fusion");
    ir_comp_id fc = ir_comp_add(m.m, "fused");
    ir_comp_get(m.m, fc)->is_fusion = true;
    ir_comp_id main = m.c;
    ir_id root;
    int nargs = 3;
    m.c = fc;
    if (variant == 0) {
      ir_id x = tm_param(&m, 0, IR_F32, 2, D(64, 600)), av = tm_param(&m, 1, IR_F32, 2, D(64, 600));
      ir_id bv = tm_param(&m, 2, IR_F32, 1, D(600));
      ir_attrs ba;
      memset(&ba, 0, sizeof ba);
      ba.dimensions = INTS(m, 1);
      ir_inst_proto bi;
      memset(&bi, 0, sizeof bi);
      bi.op = IR_OP_BROADCAST;
      bi.shape = ir_shape_array(IR_F32, 2, D(64, 600));
      ir_id bb = ir_inst_add(m.m, m.c, &(ir_inst_proto){.op = IR_OP_BROADCAST, .shape = bi.shape, .nops = 1,
                                             .ops = &bv, .a = ba});
      ir_id mul = tm_op(&m, IR_OP_MULTIPLY, (ir_id[]){x, av}, 2, NULL);
      ir_id add = tm_op(&m, IR_OP_ADD, (ir_id[]){mul, bb}, 2, NULL);
      ir_id z = tm_const_f32(&m, 0.0f);
      ir_id zb = ir_inst_add(m.m, m.c, &(ir_inst_proto){.op = IR_OP_BROADCAST, .shape = bi.shape, .nops = 1, .ops = &z});
      ir_id relu = tm_op(&m, IR_OP_MAXIMUM, (ir_id[]){add, zb}, 2, NULL);
      root = tm_op(&m, IR_OP_MULTIPLY, (ir_id[]){relu, x}, 2, NULL);
    } else if (variant == 1) {
      ir_comp_id red = tm_binary_comp(&m, IR_OP_ADD, IR_F32);
      ir_id x = tm_param(&m, 0, IR_F32, 2, D(50, 70)), y = tm_param(&m, 1, IR_F32, 2, D(50, 70));
      ir_id z = tm_param(&m, 2, IR_F32, 0, NULL);
      ir_id e = tm_op(&m, IR_OP_EXP, &x, 1, NULL);
      ir_id s = tm_op(&m, IR_OP_SUBTRACT, (ir_id[]){e, y}, 2, NULL);
      ir_attrs ra;
      memset(&ra, 0, sizeof ra);
      ra.dimensions = INTS(m, 1);
      ir_id r = tm_call(&m, IR_OP_REDUCE, (ir_id[]){s, z}, 2, &ra, red);
      root = tm_op(&m, IR_OP_TUPLE, (ir_id[]){r, s, e}, 3, NULL);
    } else {
      ir_id x = tm_param(&m, 0, IR_F32, 2, D(40, 64)), w = tm_param(&m, 1, IR_F32, 2, D(64, 30));
      ir_id bv = tm_param(&m, 2, IR_F32, 1, D(30));
      ir_attrs da;
      memset(&da, 0, sizeof da);
      da.lhs_contracting = INTS(m, 1);
      da.rhs_contracting = INTS(m, 0);
      da.preferred_type = IR_TYPE_INVALID;
      ir_id t2 = tm_op(&m, IR_OP_TANH, &x, 1, NULL);
      ir_id d = tm_op(&m, IR_OP_DOT, (ir_id[]){t2, w}, 2, &da);
      ir_attrs ba;
      memset(&ba, 0, sizeof ba);
      ba.dimensions = INTS(m, 1);
      ir_id bb = ir_inst_add(m.m, m.c, &(ir_inst_proto){.op = IR_OP_BROADCAST, .shape = ir_shape_array(IR_F32, 2, D(40, 30)),
                                                  .nops = 1, .ops = &bv, .a = ba});
      root = tm_op(&m, IR_OP_ADD, (ir_id[]){d, bb}, 2, NULL);
    }
    ir_comp_get(m.m, fc)->root = root;
    ir_comp_finish(m.m, fc);
    m.c = main;
    ir_id ps[3];
    const ir_comp *fcp = ir_comp_get(m.m, fc);
    for (int i = 0; i < nargs; i++) ps[i] = tm_param_shape(&m, i, fcp->insts.v[fcp->params[i]].shape);
    ir_attrs fa;
    memset(&fa, 0, sizeof fa);
    ir_id f = tm_call(&m, IR_OP_FUSION, ps, nargs, &fa, fc);
    char what[32];
    snprintf(what, sizeof what, "fusion v%d", variant);
    assert_true(run(&m, f, CPU_NUMERICS_STRICT, 2, 0, what));
  }
}

/* A fusion whose computation is a chain of 3000 elementwise ops: the
 * backend cuts it into shallow pieces instead of recursing 3000 deep. A
 * reducer with a 2500-long chain is refused with a message. */
static void long_chains(void **state) {
  (void)state;
  tmod m = tm_new("chain");
  ir_comp_id fc = ir_comp_add(m.m, "fused");
  ir_comp_get(m.m, fc)->is_fusion = true;
  ir_comp_id main = m.c;
  m.c = fc;
  ir_id x = tm_param(&m, 0, IR_F32, 1, D(1000)), v = x;
  for (int i = 0; i < 3000; i++) v = tm_op(&m, i % 3 == 2 ? IR_OP_SUBTRACT : IR_OP_ADD, (ir_id[]){v, x}, 2, NULL);
  ir_comp_get(m.m, fc)->root = v;
  ir_comp_finish(m.m, fc);
  m.c = main;
  ir_id p = tm_param(&m, 0, IR_F32, 1, D(1000));
  ir_attrs fa;
  memset(&fa, 0, sizeof fa);
  assert_true(run(&m, tm_call(&m, IR_OP_FUSION, &p, 1, &fa, fc), CPU_NUMERICS_STRICT, 1, 0, "long fusion chain"));

  tmod r = tm_new("deep_reducer");
  ir_comp_id rc = ir_comp_add(r.m, "reducer");
  r.c = rc;
  ir_id a = tm_param(&r, 0, IR_F32, 0, NULL), b = tm_param(&r, 1, IR_F32, 0, NULL), w = a;
  for (int i = 0; i < 2500; i++) w = tm_op(&r, IR_OP_ADD, (ir_id[]){w, b}, 2, NULL);
  ir_comp_get(r.m, rc)->root = w;
  ir_comp_finish(r.m, rc);
  r.c = 0;
  ir_id ps[2] = {tm_param(&r, 0, IR_F32, 1, D(10)), tm_const_f32(&r, 0)};
  ir_attrs ra;
  memset(&ra, 0, sizeof ra);
  ra.dimensions = tm_ints(r.m->arena, 1, D(0));
  tm_finish(&r, tm_call(&r, IR_OP_REDUCE, ps, 2, &ra, rc));
  cpu_exe *ex = NULL;
  char err[256];
  assert_int_equal(cpu_compile(r.m, NULL, &ex, err, sizeof err), ST_UNSUPPORTED);
  assert_non_null(strstr(err, "chain of more than"));
  assert_null(ex);
  ir_module_destroy(r.m);
}

/* A chain of 12 unfused elementwise instructions over f32[1000]: each
 * intermediate dies once its user ran, so the scratch holds two of them,
 * not eleven; the values still match the evaluator. */
static void scratch_is_shared(void **state) {
  (void)state;
  tmod m = tm_new("chain");
  ir_id x = tm_param(&m, 0, IR_F32, 1, D(1000)), v = x;
  for (int i = 0; i < 12; i++) v = tm_op(&m, i % 2 ? IR_OP_MULTIPLY : IR_OP_ADD, (ir_id[]){v, x}, 2, NULL);
  tm_finish(&m, v);
  arena *ar = arena_create();
  assert_true(tm_check(&m, tm_args(&m, ar, 3, true), CPU_NUMERICS_STRICT, 1, 0, "chain"));
  cpu_exe *ex = NULL;
  char err[256];
  assert_int_equal(cpu_compile(m.m, NULL, &ex, err, sizeof err), ST_OK);
  cpu_exe_info info;
  cpu_exe_get_info(ex, &info);
  assert_int_equal(info.scratch_bytes, 2 * 4032); /* two 4000-byte slices, 64-byte aligned */
  cpu_exe_destroy(ex);
  arena_destroy(ar);
  ir_module_destroy(m.m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(data_movement),   cmocka_unit_test(reductions),
      cmocka_unit_test(variadic_reduce_argmax), cmocka_unit_test(reduce_window),
      cmocka_unit_test(dots_strict),     cmocka_unit_test(dots_native),
      cmocka_unit_test(dots_tpu_numerics), cmocka_unit_test(convolutions),
      cmocka_unit_test(fusions),         cmocka_unit_test(long_chains),
      cmocka_unit_test(scratch_is_shared),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
