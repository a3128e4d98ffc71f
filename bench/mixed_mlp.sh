#!/usr/bin/env bash
# bench/mixed_mlp.sh [TPUCC]: modelled v3 cycles of the MLP 784-1024-1024-10
# at batch 256 in mixed precision (bench/mlp_bf16.tg: bf16 activations and
# weights, each layer's f32 result cast to bf16 in the matmul epilogue)
# against the same MLP in f32 (bench/mlp_f32.tg), side by side, with each
# layer's cycles (--report). Emulated cycles are deterministic: the host
# does not enter them. Run by hand (docs/performance.md, "Mixed precision").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
T="${1:-$root/build/tools/tpucc}"
[ -x "$T" ] || { echo "bench/mixed_mlp.sh: build $T first" >&2; exit 2; }
echo "# host: $(lscpu | sed -n 's/^Model name: *//p'); the figures are emulated v3 cycles"
echo "| model | cycles | layer 1 | layer 2 | layer 3 |"
echo "|---|---|---|---|---|"
for m in f32 bf16; do
  "$T" run "$root/bench/mlp_$m.tg" --target=v3 --random-inputs --output= --report=- 2>/dev/null |
    awk -v m="$m" '/^per-op report/ { total = $5 } /^fusion/ { c[n++] = $3 }
      END { printf "| %s | %s | %s | %s | %s |\n", m, total, c[0], c[1], c[2] }'
done
