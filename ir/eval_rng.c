/* eval_rng.c: rng-bit-generator and rng.
 *
 * rng-bit-generator: XLA's RngBitGeneratorExpander, bit for bit
 * (ir_rng_bit_generator in prng.c): the state is u64 words, read and
 * written little-endian.
 * rng: the standard values of ir_rng_standard under the instruction's key
 * (ir_rng_key_of), then, computed in f32 and rounded once to the result
 * type: uniform float u * (b - a) + a; normal a + b * z; uniform s32 as
 * XLA's ConvertRandomBitsToUniformInt: range = u32(b) - u32(a), dist =
 * bits % range (bits when range is 0), a + dist / 2 + (dist - dist / 2),
 * wrapping. */
#include "ir/eval_internal.h"

base_status ev_rng_bit_generator(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops,
                                 ir_literal **out) {
  ir_rng_alg alg;
  const ir_shape *st = &ops[0]->shape, *rs = in->shape;
  if (!ir_rng_alg_of(in, &alg) || st->type != IR_U64 || st->rank != 1 || st->dims[0] < 2 ||
      st->dims[0] > 3 || rs->type != IR_TUPLE || rs->ntuple != 2)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "malformed rng-bit-generator");
  const ir_shape *bs = &rs->tuple[1];
  int bits = ir_type_size(bs->type) * 8;
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "bits of %s", ir_type_name(bs->type));
  base_status s = ev_work(cx, in, (double)ir_shape_count(bs) * 20);
  ir_literal *o[2];
  if (s == ST_OK) s = ev_new_array(cx, in, st, &o[0]);
  if (s == ST_OK) s = ev_new_array(cx, in, bs, &o[1]);
  if (s != ST_OK) return s;
  uint64_t state[3], next[3];
  int ns = (int)st->dims[0];
  memcpy(state, ops[0]->data, sizeof(uint64_t) * (size_t)ns);
  ir_rng_bit_generator(alg, state, ns, bs->rank, bs->dims, bits, o[1]->data, next);
  memcpy(o[0]->data, next, sizeof(uint64_t) * (size_t)ns);
  return ev_new_tuple(cx, in, o, 2, out);
}

base_status ev_rng(ev_ctx *cx, const ir_inst *in, ir_literal *const *ops, ir_literal **out) {
  ir_rng_dist dist;
  const ir_shape *rs = in->shape;
  if (!ir_rng_dist_of(in, &dist) || in->nops != 2 || rs->type == IR_TUPLE)
    return ev_fail(cx, in, ST_INVALID_ARGUMENT, "malformed rng");
  int64_t n = ir_shape_count(rs);
  bool is_int = rs->type == IR_S32;
  void *std;
  base_status s = ev_work(cx, in, (double)n * 20);
  if (s == ST_OK) s = ev_alloc_array(cx, in, n ? n : 1, 4, &std);
  if (s == ST_OK) s = ev_new_array(cx, in, rs, out);
  if (s != ST_OK) return s;
  ir_rng_standard(dist, is_int, ir_rng_key_of(in->info->name), rs->rank, rs->dims, std);
  uint8_t *o = (*out)->data;
  size_t es = (size_t)ir_type_size(rs->type);
  if (is_int) {
    int32_t a = (int32_t)ev_load_i(IR_S32, ops[0]->data), b = (int32_t)ev_load_i(IR_S32, ops[1]->data);
    for (int64_t e = 0; e < n; e++) {
      uint32_t w;
      memcpy(&w, (uint8_t *)std + 4 * e, 4);
      ev_store_i(IR_S32, o + 4 * e, ir_rng_uniform_s32(w, a, b));
    }
    return ST_OK;
  }
  float a = ev_load_f(rs->type, ops[0]->data), b = ev_load_f(rs->type, ops[1]->data);
  float span = b - a;
  for (int64_t e = 0; e < n; e++) {
    float z;
    memcpy(&z, (uint8_t *)std + 4 * e, 4);
    float v = dist == IR_RNG_UNIFORM ? z * span + a : a + b * z;
    ev_store_f(rs->type, o + (size_t)e * es, v);
  }
  return ST_OK;
}
