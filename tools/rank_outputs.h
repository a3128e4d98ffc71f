/* rank_outputs.h: `tpucc run --rank-outputs` (docs/distributed.md, "Who
 * reads and writes"): each MPI rank writes its own replicas' results,
 * statistics and trace. Prefix tool_rank_. */
#ifndef TPUCC_TOOLS_RANK_OUTPUTS_H
#define TPUCC_TOOLS_RANK_OUTPUTS_H

#include "ir/ir.h"

/* path with ".rankK" before its extension (the last dot of its last
 * component, not a leading one): "y.npy" -> "y.rank1.npy", "dir/t" ->
 * "dir/t.rank1". In a. */
const char *tool_rank_path(arena *a, const char *path, int rank);

/* Rows first .. first + n - 1 of l's leading dimension (an array whose
 * dims[0] >= first + n): a view of l's data, no copy, in a. */
ir_literal *tool_rank_rows(arena *a, const ir_literal *l, int first, int n);

#endif
