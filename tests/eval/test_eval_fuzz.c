/* test_eval_fuzz.c: random, mostly malformed instructions (random op,
 * operands, result shape and attributes) must give a status, never a
 * crash, an out-of-bounds access or undefined behaviour (the suite runs
 * under ASan and UBSan). A fixed seed makes failures reproducible; when a
 * case succeeds, its result must be a well-formed literal of the declared
 * shape. */
#include "eval_test.h"

static uint64_t rng_state;

static uint64_t rnd(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ull;
}

/* Uniform in [lo, hi]. */
static int64_t pick(int64_t lo, int64_t hi) {
  return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static ir_type rand_type(void) { return (ir_type)pick(0, IR_F32); }

static ir_shape rand_shape(ir_type t, int max_rank) {
  int64_t dims[IR_MAX_RANK];
  int rank = (int)pick(0, max_rank);
  for (int i = 0; i < rank; i++)
    dims[i] = pick(0, 3);
  return ir_shape_array(t, rank, dims);
}

static ir_ints rand_ints(arena *a, int maxn, int64_t lo, int64_t hi) {
  ir_ints v;
  v.n = (int32_t)pick(0, maxn);
  v.v = arena_array(a, (size_t)(v.n ? v.n : 1), sizeof(int64_t));
  for (int i = 0; i < v.n; i++)
    v.v[i] = pick(lo, hi);
  return v;
}

static void rand_literal_data(ir_literal *l) {
  for (size_t i = 0; i < l->nbytes; i++)
    ((uint8_t *)l->data)[i] = (uint8_t)rnd();
  if (l->shape.type == IR_PRED)
    for (size_t i = 0; i < l->nbytes; i++)
      ((uint8_t *)l->data)[i] &= 1;
}

static void rand_attrs(arena *a, ir_attrs *at, int rank_hint) {
  memset(at, 0, sizeof *at);
  at->index = pick(-1, 3);
  at->dimensions = rand_ints(a, 4, -1, 4);
  if (pick(0, 1)) { /* often a plausible permutation / dim list */
    at->dimensions.n = rank_hint;
    at->dimensions.v = arena_array(a, IR_MAX_RANK, sizeof(int64_t));
    for (int i = 0; i < rank_hint; i++)
      at->dimensions.v[i] = rank_hint - 1 - i;
  }
  at->slice_start = rand_ints(a, 4, -1, 3);
  at->slice_limit = rand_ints(a, 4, -1, 4);
  at->slice_stride = rand_ints(a, 4, -1, 3);
  at->npad = (int32_t)pick(0, 4);
  at->padding = arena_array(a, 4, sizeof(ir_padding_dim));
  for (int i = 0; i < 4; i++)
    at->padding[i] = (ir_padding_dim){pick(-3, 3), pick(-3, 3), pick(-1, 2)};
  at->cmp_dir = (ir_cmp_dir)pick(0, 5);
  at->cmp_type = (ir_cmp_type)pick(0, 4);
  at->lhs_batch = rand_ints(a, 2, -1, 3);
  at->rhs_batch = rand_ints(a, 2, -1, 3);
  at->lhs_contracting = rand_ints(a, 2, -1, 3);
  at->rhs_contracting = rand_ints(a, 2, -1, 3);
  ir_window *win = arena_alloc(a, sizeof *win);
  at->window = pick(0, 3) != 0 ? win : NULL;
  win->rank = (int32_t)pick(0, 3);
  for (int i = 0; i < IR_MAX_RANK; i++)
    win->dims[i] = (ir_window_dim){pick(-1, 3), pick(-1, 3), pick(-2, 2),    pick(-2, 2),
                                                                              pick(0, 3),  pick(0, 3),  pick(0, 1) != 0};
                                         at->conv.nspatial = (int32_t)pick(-1, 2);
                                         at->conv.in_batch = (int8_t)pick(-1, 3), at->conv.in_feature = (int8_t)pick(-1, 3);
                                         at->conv.k_in = (int8_t)pick(-1, 3), at->conv.k_out = (int8_t)pick(-1, 3);
                                         at->conv.out_batch = (int8_t)pick(-1, 3), at->conv.out_feature = (int8_t)pick(-1, 3);
                                         for (int i = 0; i < IR_MAX_RANK; i++) {
      at->conv.in_spatial[i] = (int8_t)pick(-1, 3);
      at->conv.k_spatial[i] = (int8_t)pick(-1, 3);
      at->conv.out_spatial[i] = (int8_t)pick(-1, 3);
    }
    if (pick(0, 1)) { /* a valid 1-d labelling */
      at->conv.nspatial = 1;
      at->conv.in_batch = 0, at->conv.in_feature = 1, at->conv.in_spatial[0] = 2;
      at->conv.k_out = 0, at->conv.k_in = 1, at->conv.k_spatial[0] = 2;
      at->conv.out_batch = 0, at->conv.out_feature = 1, at->conv.out_spatial[0] = 2;
    }
    at->feature_group_count = pick(-1, 3);
    at->batch_group_count = pick(-1, 3);
    at->preferred_type = IR_TYPE_INVALID;
  }

static void random_instructions_never_crash(void **state) {
  (void)state;
  rng_state = 0x9e3779b97f4a7c15ull;
  int ok = 0, failed = 0;
  for (int iter = 0; iter < 20000; iter++) {
    tb t;
    tb_init(&t);
    t.opts.max_bytes = 1 << 22;
    t.opts.max_steps = 1 << 22;
    ir_type ty = rand_type();
    /* to_apply candidates */
    ir_comp_id comps[3] = {tb_binary_comp(&t, IR_OP_ADD, ty), tb_slow_add_comp(&t, ty),
                           tb_binary_comp(&t, (ir_op)pick(IR_OP_ADD, IR_OP_SHR_L), rand_type())};
    int nparams = (int)pick(0, 3);
    ir_literal *args[3];
    ir_id ids[8];
    int nids = 0;
    for (int i = 0; i < nparams; i++) {
      ir_shape s = rand_shape(pick(0, 2) ? ty : rand_type(), 3);
      ids[nids++] = tb_param(&t, i, s);
      args[i] = ir_literal_create(t.out, &s);
      rand_literal_data(args[i]);
    }
    int nconst = (int)pick(0, 2);
    for (int i = 0; i < nconst; i++) {
      ir_shape s = pick(0, 1) ? ir_shape_scalar(ty) : rand_shape(ty, 2);
      ir_literal *l = ir_literal_create(t.m->arena, &s);
      rand_literal_data(l);
      ir_attrs a;
      memset(&a, 0, sizeof a);
      a.literal = l;
      ids[nids++] = tb_op(&t, IR_OP_CONSTANT, s, &a, 0, NULL, 0, NULL);
    }
    int nops_inst = (int)pick(1, 3);
    ir_id last = nids ? ids[nids - 1] : IR_NONE;
    for (int k = 0; k < nops_inst; k++) {
      ir_op op = (ir_op)pick(IR_OP_IOTA, IR_OP__COUNT - 1);
      int arity = ir_op_arity(op);
      int nops = arity >= 0 && arity <= 8 && pick(0, 7) ? arity : (int)pick(0, 4);
      ir_id ops[8];
      for (int i = 0; i < nops; i++)
        ops[i] = nids ? ids[pick(0, nids - 1)] : (ir_id)pick(-1, 2);
      ir_shape rs;
      if (pick(0, 9) == 0) {
        ir_shape el[2] = {rand_shape(ty, 2), rand_shape(ty, 2)};
        rs = tuple_shape(&t, 2, el);
      } else if (nops > 0 && ops[0] >= 0 && ops[0] < ir_comp_get(t.m, t.c)->insts.n && pick(0, 1)) {
        rs = *ir_inst_get(t.m, t.c, ops[0])->shape; /* often the operand's shape */
        if (pick(0, 3) == 0 && rs.type != IR_TUPLE) rs.type = rand_type();
      } else {
        rs = rand_shape(pick(0, 2) ? ty : rand_type(), 3);
      }
      ir_attrs a;
      rand_attrs(t.m->arena, &a, rs.type == IR_TUPLE ? 0 : rs.rank);
      ir_comp_id call = pick(0, 5) ? comps[pick(0, 2)] : (ir_comp_id)pick(-1, 8);
      int ncalls = (ir_op_flags(op) & OPF_CALLS) ? (pick(0, 7) ? 1 : (int)pick(0, 2)) : 0;
      ir_comp_id calls[2] = {call, call};
      last = tb_op(&t, op, rs, &a, nops, ops, ncalls, calls);
      ids[nids < 8 ? nids++ : 7] = last;
    }
    ir_literal *out = NULL;
    t.err[0] = 0;
    base_status st = tb_eval(&t, last, args, nparams, &out);
    if (st == ST_OK) {
      ok++;
      assert_non_null(out);
      assert_true(ir_shape_equal(&out->shape, ir_inst_get(t.m, t.entry, last)->shape));
    } else {
      failed++;
      assert_null(out);
      assert_true(strlen(t.err) > 0);
    }
    tb_free(&t);
  }
  /* the generator must reach both outcomes often enough to mean anything */
  assert_true(ok > 500);
  assert_true(failed > 500);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_instructions_never_crash),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
