#!/usr/bin/env bash
# cli_cpu_exp.sh TPUCC: `--target=cpu --cpu-numerics=tpu` prints exactly
# what `--target=v3` prints for exp of a dot's 6912 outputs (the vector
# unit's exp is the double libm exp rounded once; the float expf differed
# on 2 printed values of this module).
set -eu
tpucc=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/m.hlo" <<'HLO'
HloModule m
ENTRY e {
  x = f32[96,64] parameter(0)
  w = f32[64,72] parameter(1)
  d = f32[96,72] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT r = f32[96,72] exponential(d)
}
HLO
"$tpucc" run "$dir/m.hlo" --target=v3 --random-inputs --print-max-elements=100000 > "$dir/v3.txt"
"$tpucc" run "$dir/m.hlo" --target=cpu --cpu-numerics=tpu --threads=1 --random-inputs \
  --print-max-elements=100000 > "$dir/cpu.txt"
if ! cmp -s "$dir/v3.txt" "$dir/cpu.txt"; then
  echo "cpu --cpu-numerics=tpu differs from v3:" >&2
  diff <(tr ' ' '\n' < "$dir/v3.txt") <(tr ' ' '\n' < "$dir/cpu.txt") | head >&2
  exit 1
fi
n=$(tr -s ' \n[]' '\n' < "$dir/v3.txt" | grep -c '^[-0-9.e+]*[0-9]$')
[ "$n" -ge 6912 ] || { echo "only $n values printed" >&2; exit 1; }
echo "v3 and cpu (tpu numerics) agree on $n printed values"
