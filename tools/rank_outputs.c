/* rank_outputs.c: `tpucc run --rank-outputs` (contracts in
 * rank_outputs.h). */
#include "tools/rank_outputs.h"

#include <string.h>

const char *tool_rank_path(arena *a, const char *path, int rank) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  if (!dot || dot == base) return arena_printf(a, "%s.rank%d", path, rank);
  return arena_printf(a, "%.*s.rank%d%s", (int)(dot - path), path, rank, dot);
}

ir_literal *tool_rank_rows(arena *a, const ir_literal *l, int first, int n) {
  ir_literal *v = arena_alloc(a, sizeof *v);
  *v = *l;
  int64_t dims[IR_MAX_RANK];
  memcpy(dims, l->shape.dims, sizeof(int64_t) * (size_t)l->shape.rank);
  size_t row = l->shape.dims[0] ? l->nbytes / (size_t)l->shape.dims[0] : 0;
  dims[0] = n;
  v->shape = ir_shape_array(l->shape.type, l->shape.rank, dims);
  v->nbytes = row * (size_t)n;
  v->data = (uint8_t *)l->data + row * (size_t)first;
  return v;
}
