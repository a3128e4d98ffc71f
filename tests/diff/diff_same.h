/* diff_same.h: the result comparison of the differential tests. */
#ifndef TPUCC_TESTS_DIFF_DIFF_SAME_H
#define TPUCC_TESTS_DIFF_DIFF_SAME_H

#include "ir/ir.h"

#include <math.h>
#include <stdio.h>

/* Whether a and b are equal bit for bit (with nan_any, two NaNs of any
 * payload match); otherwise the first differing element is described in
 * why. */
static inline bool diff_same(const ir_literal *a, const ir_literal *b, bool nan_any, char *why,
                             size_t n) {
  if (!ir_shape_equal(&a->shape, &b->shape)) {
    snprintf(why, n, "result shapes differ");
    return false;
  }
  if (a->shape.type == IR_TUPLE) {
    for (int i = 0; i < a->shape.ntuple; i++)
      if (!diff_same(a->elems[i], b->elems[i], nan_any, why, n)) return false;
    return true;
  }
  int64_t cnt = ir_shape_count(&a->shape);
  int es = ir_type_size(a->shape.type);
  for (int64_t i = 0; i < cnt; i++) {
    const uint8_t *x = (const uint8_t *)a->data + i * es, *y = (const uint8_t *)b->data + i * es;
    if (!memcmp(x, y, (size_t)es)) continue;
    if (nan_any && ir_type_is_float(a->shape.type) && isnan(ir_literal_get_f64(a, i)) &&
        isnan(ir_literal_get_f64(b, i)))
      continue;
    uint32_t xb = 0, yb = 0;
    memcpy(&xb, x, (size_t)es);
    memcpy(&yb, y, (size_t)es);
    snprintf(why, n, "%s element %lld: oracle %.9g (0x%08x), got %.9g (0x%08x)",
             ir_type_name(a->shape.type), (long long)i, ir_literal_get_f64(a, i), xb,
             ir_literal_get_f64(b, i), yb);
    return false;
  }
  return true;
}

#endif
