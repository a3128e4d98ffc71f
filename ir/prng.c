/* prng.c: the counter-based random bit generators of rng-bit-generator and
 * rng, bit for bit as XLA defines them (xla/hlo/builder/lib/prng.cc and
 * xla/service/rng_bit_generator_expander.cc). Contract: ir.h, "random
 * bits". Pure functions of their arguments: every target computes the
 * same words from the same state.
 *
 * ThreeFry-2x32 has 20 rounds (Random123's threefry2x32_20), Philox-4x32
 * has 10 (philox4x32_10); tests/eval/test_eval_sort_rng.c checks both
 * against Random123's known-answer vectors. */
#include "ir/ir.h"

#include <math.h>
#include <stdlib.h>

static uint32_t rotl32(uint32_t v, int d) { return v << d | v >> (32 - d); }

void ir_threefry2x32(const uint32_t key[2], const uint32_t ctr[2], uint32_t out[2]) {
  static const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  uint32_t ks[3] = {key[0], key[1], 0x1BD11BDAu ^ key[0] ^ key[1]};
  uint32_t x0 = ctr[0] + ks[0], x1 = ctr[1] + ks[1];
  for (int group = 0; group < 5; group++) {
    for (int r = 0; r < 4; r++) {
      x0 += x1;
      x1 = rotl32(x1, rot[(group & 1) * 4 + r]);
      x1 ^= x0;
    }
    /* key injection group+1: ks[(g+1)%3], ks[(g+2)%3] + g + 1 */
    x0 += ks[(group + 1) % 3];
    x1 += ks[(group + 2) % 3] + (uint32_t)(group + 1);
  }
  out[0] = x0;
  out[1] = x1;
}

void ir_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4]) {
  uint32_t k0 = key[0], k1 = key[1];
  uint32_t x[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
  for (int round = 0; round < 10; round++) {
    uint64_t p0 = (uint64_t)x[0] * 0xD2511F53u, p1 = (uint64_t)x[2] * 0xCD9E8D57u;
    uint32_t y[4] = {(uint32_t)(p1 >> 32) ^ x[1] ^ k0, (uint32_t)p1,
                     (uint32_t)(p0 >> 32) ^ x[3] ^ k1, (uint32_t)p0};
    memcpy(x, y, sizeof x);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  memcpy(out, x, sizeof x);
}

/* Stores the low `bits` bits of w as element i of out (little endian). */
static void put(void *out, int bits, int64_t i, uint64_t w) {
  uint8_t *p = (uint8_t *)out + (size_t)i * (size_t)(bits / 8);
  for (int b = 0; b < bits / 8; b++) p[b] = (uint8_t)(w >> (8 * b));
}

/* XLA's SplitShapeIntoHalves: the dimension a 32-bit ThreeFry output is
 * split on (the first even one, else the first largest); -1 for rank 0. */
static int split_dim(int rank, const int64_t *dims) {
  for (int i = 0; i < rank; i++)
    if (dims[i] % 2 == 0) return i;
  int s = -1;
  for (int i = 0; i < rank; i++)
    if (s < 0 || dims[i] > dims[s]) s = i;
  return s;
}

/* ThreeFry, 32-bit words (narrower types keep the low bits): the output is
 * split in two halves along split_dim; element (a, j, b) is word j % 2 of
 * the block whose counter is state + the row-major index of (a, j / 2, b)
 * in the half shape (split dim ceil(d / 2)). Returns the blocks used. */
static int64_t threefry32(const uint32_t key[2], uint64_t ctr0, int rank, const int64_t *dims,
                          int bits, void *out) {
  int s = split_dim(rank, dims);
  int64_t half[IR_MAX_RANK], n = 1, nhalf = 1;
  for (int i = 0; i < rank; i++) {
    half[i] = i == s ? (dims[i] + 1) / 2 : dims[i];
    n *= dims[i];
    nhalf *= half[i];
  }
  if (rank == 0) {
    uint32_t c[2] = {(uint32_t)ctr0, (uint32_t)(ctr0 >> 32)}, o[2];
    ir_threefry2x32(key, c, o);
    put(out, bits, 0, o[0]);
    return 1;
  }
  int64_t idx[IR_MAX_RANK] = {0};
  for (int64_t e = 0; e < n; e++) {
    int64_t h = 0;
    for (int i = 0; i < rank; i++) h = h * half[i] + (i == s ? idx[i] / 2 : idx[i]);
    uint64_t c64 = ctr0 + (uint64_t)h;
    uint32_t c[2] = {(uint32_t)c64, (uint32_t)(c64 >> 32)}, o[2];
    ir_threefry2x32(key, c, o);
    put(out, bits, e, o[idx[s] % 2]);
    for (int i = rank - 1; i >= 0; i--) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
  return nhalf;
}

/* Philox over a 128-bit counter (lo, hi): block i has counter (lo, hi) +
 * i; its words go out round robin (32-bit: element e = word e % 4 of
 * block e / 4; 64-bit: element e = words 2(e % 2), 2(e % 2) + 1 of block
 * e / 2). Returns the blocks used. */
static int64_t philox(const uint32_t key[2], uint64_t lo, uint64_t hi, int64_t n, int bits,
                      void *out) {
  int per = bits == 64 ? 2 : 4;
  int64_t blocks = (n + per - 1) / per;
  for (int64_t b = 0; b < blocks; b++) {
    uint64_t l = lo + (uint64_t)b, h = hi + (l < lo);
    uint32_t c[4] = {(uint32_t)l, (uint32_t)(l >> 32), (uint32_t)h, (uint32_t)(h >> 32)}, o[4];
    ir_philox4x32(key, c, o);
    for (int k = 0; k < per && b * per + k < n; k++) {
      uint64_t w = bits == 64 ? (uint64_t)o[2 * k] | (uint64_t)o[2 * k + 1] << 32 : o[k];
      put(out, bits, b * per + k, w);
    }
  }
  return blocks;
}

void ir_rng_bit_generator(ir_rng_alg alg, const uint64_t *state, int nstate, int rank,
                          const int64_t *dims, int bits, void *out, uint64_t *new_state) {
  uint32_t key[2] = {(uint32_t)state[0], (uint32_t)(state[0] >> 32)};
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  memcpy(new_state, state, sizeof(uint64_t) * (size_t)nstate);
  if (alg == IR_RNG_THREE_FRY) {
    if (bits == 64) {
      for (int64_t e = 0; e < n; e++) {
        uint64_t c64 = state[1] + (uint64_t)e;
        uint32_t c[2] = {(uint32_t)c64, (uint32_t)(c64 >> 32)}, o[2];
        ir_threefry2x32(key, c, o);
        put(out, 64, e, (uint64_t)o[0] | (uint64_t)o[1] << 32);
      }
      new_state[1] = state[1] + (uint64_t)n;
    } else {
      new_state[1] = state[1] + (uint64_t)threefry32(key, state[1], rank, dims, bits, out);
    }
    return;
  }
  /* Philox (and the default): u64[3] holds the counter in state[1..2]; a
   * u64[2] state's counter is (state[1], state[0]) and only its low word
   * is carried back. */
  uint64_t lo = state[1], hi = nstate >= 3 ? state[2] : state[0];
  int64_t blocks = philox(key, lo, hi, n, bits, out);
  uint64_t nlo = lo + (uint64_t)blocks;
  new_state[1] = nlo;
  if (nstate >= 3) new_state[2] = hi + (nlo < lo);
}

uint64_t ir_rng_key_of(const char *name) {
  uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
  for (const char *p = name ? name : ""; *p; p++) h = (h ^ (uint8_t)*p) * 0x100000001b3u;
  return h;
}

/* u in [0, 1) from 32 random bits: the top 23 bits over 2^23 (exact). */
static float unit_f32(uint32_t w) { return (float)(w >> 9) * 0x1p-23f; }

void ir_rng_standard(ir_rng_dist dist, bool is_int, uint64_t key, int rank, const int64_t *dims,
                     void *out) {
  uint64_t st[3] = {key, 0, 0}, ns[3];
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= dims[i];
  if (dist == IR_RNG_UNIFORM) {
    ir_rng_bit_generator(IR_RNG_PHILOX, st, 3, rank, dims, 32, out, ns);
    if (!is_int)
      for (int64_t e = 0; e < n; e++) {
        uint32_t w;
        memcpy(&w, (uint8_t *)out + 4 * e, 4);
        float u = unit_f32(w);
        memcpy((uint8_t *)out + 4 * e, &u, 4);
      }
    return;
  }
  /* Normal: uniform pairs over XLA's concat shape (the split dimension
   * halved, a dimension of 2 after it), Box-Muller per pair. */
  int s = split_dim(rank, dims);
  int64_t cd[IR_MAX_RANK + 1], nc = 1;
  int cr = 0;
  if (rank == 0) cd[cr++] = 2;
  for (int i = 0; i < rank; i++) {
    cd[cr++] = i == s ? (dims[i] + 1) / 2 : dims[i];
    if (i == s) cd[cr++] = 2;
  }
  for (int i = 0; i < cr; i++) nc *= cd[i];
  uint32_t *bits = malloc(sizeof(uint32_t) * (size_t)(nc ? nc : 1));
  if (!bits) base_die("out of memory for %lld random words", (long long)nc);
  ir_rng_bit_generator(IR_RNG_PHILOX, st, 3, cr, cd, 32, bits, ns);
  int64_t idx[IR_MAX_RANK] = {0};
  for (int64_t e = 0; e < n; e++) {
    /* the pair: concat index with the pair dimension at 0 (x0) and 1 (x1) */
    int64_t h = 0, inner = 1;
    int j = rank == 0 ? 0 : (int)(idx[s] % 2);
    for (int i = 0; i < rank; i++) {
      h = h * cd[i + (i > s)] + (i == s ? idx[i] / 2 : idx[i]);
      if (i == s) h *= 2;
      if (i > s) inner *= dims[i];
    }
    float x0 = unit_f32(bits[h]), x1 = unit_f32(bits[h + inner]);
    float u1 = x0 > 1.0e-7f ? x0 : 1.0e-7f;
    float v1 = (float)(2.0 * 3.14159265358979323846) * x1;
    float u2 = sqrtf(-2.0f * logf(u1));
    float z = j == 0 ? sinf(v1) * u2 : cosf(v1) * u2;
    memcpy((uint8_t *)out + 4 * e, &z, 4);
    for (int i = rank - 1; i >= 0; i--) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
  free(bits);
}

int32_t ir_rng_uniform_s32(uint32_t w, int32_t a, int32_t b) {
  uint32_t range = (uint32_t)b - (uint32_t)a, d = range ? w % range : w, half = d >> 1;
  return (int32_t)((uint32_t)a + half + (d - half));
}
