/* main.c: a C program that runs a model compiled ahead of time: it links
 * model.o and includes model.h (both generated at build time from
 * model.hlo), with no compiler or LLVM at run time. It checks the results
 * against values worked out by hand:
 *   r = relu(x . W + b), sum = r summed over each row. */
#include "aot_model.h"

#include <stdio.h>
#include <stdlib.h>

int main(void) {
  static const float x[2 * 3] = {1, 2, 3, -1, 0.5f, 2};
  /* x.W = {{8, -4, 2, 0}, {3.25, -3.5, 3, -2.5}}; + b = {0.5, -1, 0, 0.25} */
  static const float want_r[2 * 4] = {8.5f, 0, 2, 0.25f, 3.75f, 0, 3, 0};
  static const float want_sum[2] = {10.75f, 6.75f};
  float r[AOT_MODEL_OUTPUT0_ELEMENTS], sum[AOT_MODEL_OUTPUT1_ELEMENTS];
  const long long dims[] = AOT_MODEL_INPUT0_DIMS;
  if (AOT_MODEL_NUM_INPUTS != 1 || AOT_MODEL_NUM_OUTPUTS != 2 || dims[0] != 2 || dims[1] != 3) {
    fprintf(stderr, "aot_sample: unexpected signature in aot_model.h\n");
    return 1;
  }
  void *scratch = aligned_alloc(64, (AOT_MODEL_SCRATCH_BYTES + 63) / 64 * 64);
  if (!scratch) return 1;
  int bad = 0;
  for (int rep = 0; rep < 2; rep++) { /* the scratch is reusable */
    aot_model_run(x, r, sum, scratch);
    for (int i = 0; i < 8; i++) bad += r[i] != want_r[i];
    for (int i = 0; i < 2; i++) bad += sum[i] != want_sum[i];
  }
  free(scratch);
  printf("r = {%g %g %g %g; %g %g %g %g}, sum = {%g, %g}\n", r[0], r[1], r[2], r[3], r[4], r[5],
         r[6], r[7], sum[0], sum[1]);
  if (bad) fprintf(stderr, "aot_sample: %d values differ from the expected ones\n", bad);
  return bad ? 1 : 0;
}
