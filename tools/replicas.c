/* replicas.c: splitting inputs across replicas and stacking their results
 * (contract in replicas.h). */
#include "tools/replicas.h"

bool tool_replica_input_fits(const ir_shape *given, const ir_shape *param, int nrep) {
  if (ir_shape_equal(given, param)) return true;
  if (nrep < 1 || given->type != param->type || given->type == IR_TUPLE ||
      given->rank != param->rank + 1 || given->dims[0] != nrep)
    return false;
  for (int i = 0; i < param->rank; i++)
    if (given->dims[i + 1] != param->dims[i]) return false;
  return true;
}

ir_literal ***tool_replica_split(const ir_shape *params, ir_literal *const *args, int nargs,
                                 int nrep, arena *a) {
  ir_literal ***out = arena_array(a, (size_t)nrep, sizeof *out);
  for (int r = 0; r < nrep; r++) {
    out[r] = arena_array(a, (size_t)(nargs ? nargs : 1), sizeof **out);
    for (int k = 0; k < nargs; k++) {
      if (ir_shape_equal(&args[k]->shape, &params[k])) {
        out[r][k] = args[k];
        continue;
      }
      ir_literal *l = arena_alloc(a, sizeof *l);
      l->shape = ir_shape_array(params[k].type, params[k].rank, params[k].dims);
      l->nbytes = args[k]->nbytes / (size_t)nrep;
      l->data = (uint8_t *)args[k]->data + l->nbytes * (size_t)r;
      out[r][k] = l;
    }
  }
  return out;
}

static ir_literal *stack(ir_literal *const *outs, int nrep, arena *a) {
  const ir_literal *first = outs[0];
  ir_literal *l = arena_alloc(a, sizeof *l);
  if (first->shape.type == IR_TUPLE) {
    int n = first->shape.ntuple;
    ir_shape *el = arena_array(a, (size_t)(n ? n : 1), sizeof(ir_shape));
    l->elems = arena_array(a, (size_t)(n ? n : 1), sizeof(ir_literal *));
    ir_literal **part = arena_array(a, (size_t)nrep, sizeof(ir_literal *));
    for (int i = 0; i < n; i++) {
      for (int r = 0; r < nrep; r++) part[r] = outs[r]->elems[i];
      l->elems[i] = stack(part, nrep, a);
      el[i] = l->elems[i]->shape;
    }
    memset(&l->shape, 0, sizeof l->shape);
    l->shape.type = IR_TUPLE;
    l->shape.ntuple = n;
    l->shape.tuple = el;
    return l;
  }
  int64_t dims[IR_MAX_RANK + 1];
  dims[0] = nrep;
  for (int i = 0; i < first->shape.rank; i++) dims[i + 1] = first->shape.dims[i];
  l->shape = ir_shape_array(first->shape.type, first->shape.rank + 1, dims);
  l->nbytes = first->nbytes * (size_t)nrep;
  l->data = arena_alloc(a, l->nbytes ? l->nbytes : 1);
  for (int r = 0; r < nrep; r++)
    if (first->nbytes) memcpy((uint8_t *)l->data + first->nbytes * (size_t)r, outs[r]->data, first->nbytes);
  return l;
}

/* Whether every array leaf of v can take one more dimension. */
static bool stackable(const ir_literal *v) {
  if (v->shape.type != IR_TUPLE) return v->shape.rank < IR_MAX_RANK;
  for (int i = 0; i < v->shape.ntuple; i++)
    if (!stackable(v->elems[i])) return false;
  return true;
}

ir_literal *tool_replica_stack(ir_literal *const *outs, int nrep, arena *a) {
  return nrep >= 1 && stackable(outs[0]) ? stack(outs, nrep, a) : NULL;
}

int tool_replicas_default(const ir_module *m) {
  long long n = ir_module_count_attr(m, "replica_count");
  return n >= 1 && n <= 1 << 20 ? (int)n : 1;
}
