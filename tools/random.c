/* random.c: the deterministic generator behind `tpucc run --random-inputs`.
 *
 * One splitmix64 stream (Steele, Lea, Flood 2014) seeded with --seed walks
 * the parameters in order and each parameter's elements in row-major
 * order; each element takes one 64-bit draw x:
 *   floats           (x >> 40) * 2^-24 * 2 - 1, uniform in [-1, 1), then
 *                    rounded to the type (to nearest even; f64 exact)
 *   signed ints      (int)(x >> 60) - 8, uniform in [-8, 8)
 *   unsigned ints    x >> 60, uniform in [0, 16)
 *   pred             x >> 63
 * The same seed gives the same inputs on every machine and target. */
#include "tools/tools.h"

uint64_t tool_random_next(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void tool_random_fill(ir_literal *l, uint64_t *state) {
  BASE_ASSERT(l->shape.type != IR_TUPLE);
  int64_t n = ir_shape_count(&l->shape);
  ir_type t = l->shape.type;
  for (int64_t i = 0; i < n; i++) {
    uint64_t x = tool_random_next(state);
    if (ir_type_is_float(t))
      ir_literal_set_f64(l, i, (double)(x >> 40) * (1.0 / 16777216.0) * 2.0 - 1.0);
    else if (t == IR_PRED)
      ir_literal_set_i64(l, i, (int64_t)(x >> 63));
    else if (ir_type_is_unsigned(t))
      ir_literal_set_i64(l, i, (int64_t)(x >> 60));
    else
      ir_literal_set_i64(l, i, (int64_t)(x >> 60) - 8);
  }
}

/* Bytes of an array shape, or -1 when it has no valid element count. */
static double array_bytes(const ir_shape *s) {
  int64_t n;
  if (s->type == IR_TUPLE || !ir_shape_elements(s, &n)) return -1;
  return (double)n * ir_type_size(s->type);
}

base_status tool_random_inputs(arena *a, const ir_shape *ps, const char *const *names, int from,
                               int n, uint64_t *state, ir_literal **args, char *err,
                               size_t errlen) {
  double total = 0;
  for (int i = from; i < n; i++) { /* every cap first: nothing is made in vain */
    double b = array_bytes(&ps[i]);
    strbuf spec;
    sb_init(&spec);
    ir_tensor_print_spec(&spec, &ps[i]);
    const char *why = b < 0 || b > (double)IR_TENSOR_MAX_FILE ? "is over the cap of 4 GiB per parameter"
                      : total + b > (double)TOOL_RANDOM_MAX_TOTAL
                          ? "brings the generated inputs over the cap of 8 GiB in all"
                          : NULL;
    if (why)
      snprintf(err, errlen, "parameter %d '%s' (%s, %.3g bytes) %s: give it with --input", i,
               names[i], sb_str(&spec), b, why);
    sb_free(&spec);
    if (why) return ST_RESOURCE_EXHAUSTED;
    total += b;
  }
  for (int i = from; i < n; i++) {
    if (!(args[i] = ir_literal_try_create(a, &ps[i]))) {
      snprintf(err, errlen, "parameter %d '%s': the host has no memory for %.3g bytes", i,
               names[i], array_bytes(&ps[i]));
      return ST_OUT_OF_MEMORY;
    }
    tool_random_fill(args[i], state);
  }
  return ST_OK;
}
