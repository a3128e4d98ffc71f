/* mxu_systolic.c: the MXU as a weight-stationary systolic array, stepped one
 * cycle at a time, processing element by processing element.
 *
 * This is the textbook picture, not a fast path: it exists so that tests can
 * prove the fast kernel (mxu.c) computes the same bits as the array would.
 * Contract and numerics: mxu.h. Picture for a 3 x 3 array, output row i:
 *
 *            psum in (acc[i][n0+c]) enters column c at cycle i + c
 *                 |           |           |
 *   lhs[i][k0+0] -> PE(0,0) -> PE(0,1) -> PE(0,2) ->      row r gets its
 *   lhs[i][k0+1] -> PE(1,0) -> PE(1,1) -> PE(1,2) ->      activation at
 *   lhs[i][k0+2] -> PE(2,0) -> PE(2,1) -> PE(2,2) ->      cycle i + r
 *                 |           |           |
 *            psum out -> acc[i][n0+c] at the end of cycle i + (R-1) + c
 *
 * Each cycle every PE latches the activation from its left neighbour (row
 * r's input port for column 0) and the partial sum from the PE above (the
 * accumulator for row 0), and outputs
 *     psum_out = fma(activation, weight, psum_in)       (one f32 rounding)
 * to the PE below; the activation moves on to the right. Because row r's
 * input is delayed by r cycles and column c's psum by c cycles, the
 * activation lhs[i][k0+r] and the partial sum of output (i, n0+c) meet in
 * PE(r,c) at cycle i + r + c: each output sums its products down a column,
 * k ascending, exactly the order of the contract. Every register carries the
 * output row it belongs to (a tag); a PE asserts that the two tags it
 * combines agree, so a skew error cannot go unnoticed.
 * PEs of rows past the end of k hold no weight and pass partial sums through
 * unchanged (a zero weight would not do: inf * 0 is NaN and -0 + 0 is +0);
 * columns past the end of n are never written back. */
#include "runtime/emu/mxu.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

typedef struct pe_state {
  float w;   /* the stationary weight */
  float a;   /* activation register (moves right) */
  float p;   /* partial-sum register (moves down) */
  int a_tag; /* output row of the activation, -1 for a bubble */
  int p_tag; /* output row of the partial sum, -1 for a bubble */
} pe_state;

static float in_value(uint16_t h, int keep_sub) {
  if (!keep_sub && (h & 0x7F80u) == 0) h &= 0x8000u;
  return base_bf16_to_f32(h);
}

static float canonical(float x) {
  if (isnan(x)) {
    uint32_t u = 0x7FC00000u;
    memcpy(&x, &u, sizeof x);
  }
  return x;
}

/* One weight tile: rows kr = min(R, k - k0) hold weights, columns
 * nc = min(C, n - n0) are written back. Returns the cycles stepped. */
static int64_t run_tile(pe_state *pe, int R, int C, const uint16_t *lhs, const uint16_t *w,
                        float *acc, int m, int k0, int kr, int n0, int nc, int lds, int ld_w,
                        int ld_acc, unsigned flags) {
  int keep = (flags & EMU_MXU_KEEP_SUBNORMALS) != 0;
  int tr = (flags & EMU_MXU_W_TRANSPOSED) != 0;
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      pe_state *s = &pe[(size_t)r * (size_t)C + (size_t)c];
      s->w = 0.0f;
      if (r < kr && c < nc) {
        size_t kk = (size_t)(k0 + r), j = (size_t)(n0 + c);
        s->w = in_value(tr ? w[j * (size_t)ld_w + kk] : w[kk * (size_t)ld_w + j], keep);
      }
      s->a = s->p = 0.0f;
      s->a_tag = s->p_tag = -1;
    }

  /* The last output row leaves the last column at cycle m-1 + R-1 + C-1. */
  int64_t cycles = (int64_t)m + R + C - 2;
  for (int64_t t = 0; t < cycles; t++) {
    /* Update in reverse so each PE still sees its neighbours' values from
     * the previous cycle (the registers all clock together). */
    for (int r = R - 1; r >= 0; r--)
      for (int c = C - 1; c >= 0; c--) {
        pe_state *s = &pe[(size_t)r * (size_t)C + (size_t)c];
        float a_in, p_in;
        int a_tag, p_tag;
        if (c == 0) { /* row r's input port: lhs[t - r][k0 + r] */
          int64_t i = t - r;
          a_tag = (i >= 0 && i < m && r < kr) ? (int)i : -1;
          a_in =
              a_tag >= 0 ? in_value(lhs[(size_t)i * (size_t)lds + (size_t)(k0 + r)], keep) : 0.0f;
        } else {
          a_in = s[-1].a;
          a_tag = s[-1].a_tag;
        }
        if (r == 0) { /* column c's accumulator port: acc[t - c][n0 + c] */
          int64_t i = t - c;
          p_tag = (i >= 0 && i < m && c < nc) ? (int)i : -1;
          p_in = p_tag >= 0 ? acc[(size_t)i * (size_t)ld_acc + (size_t)(n0 + c)] : 0.0f;
        } else {
          p_in = s[-C].p;
          p_tag = s[-C].p_tag;
        }
        float p_out = p_in;
        if (r < kr && p_tag >= 0) { /* a live PE with a live partial sum */
          assert(a_tag == p_tag && "systolic skew broken");
          p_out = fmaf(a_in, s->w, p_in);
        }
        s->a = a_in;
        s->a_tag = a_tag;
        s->p = p_out;
        s->p_tag = p_tag;
        if (r == R - 1 && p_tag >= 0) /* leaves the array: write back */
          acc[(size_t)p_tag * (size_t)ld_acc + (size_t)(n0 + c)] = canonical(p_out);
      }
  }
  return cycles;
}

int64_t emu_mxu_systolic_matmul_bf16(const uint16_t *lhs, const uint16_t *w, float *acc, int m,
                                     int k, int n, int lds_lhs, int ld_w, int ld_acc, int rows,
                                     int cols, unsigned flags) {
  assert(rows >= 1 && cols >= 1);
  if (m <= 0 || k <= 0 || n <= 0) return 0;
  assert(lds_lhs >= k && ld_acc >= n && ld_w >= ((flags & EMU_MXU_W_TRANSPOSED) ? k : n));
  pe_state *pe = malloc((size_t)rows * (size_t)cols * sizeof *pe);
  if (!pe) return -1;
  int64_t cycles = 0;
  for (int k0 = 0; k0 < k; k0 += rows) /* ascending k: the contract's order */
    for (int n0 = 0; n0 < n; n0 += cols)
      cycles += run_tile(pe, rows, cols, lhs, w, acc, m, k0, k - k0 < rows ? k - k0 : rows, n0,
                         n - n0 < cols ? n - n0 : cols, lds_lhs, ld_w, ld_acc, flags);
  free(pe);
  return cycles;
}
