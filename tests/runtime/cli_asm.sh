#!/bin/sh
# cli_asm.sh TPUCC KERNEL_DIR: `tpucc asm` and `tpucc dump-module` round
# trip every kernel (asm -> .tpub -> dump --asm -> asm -> identical bytes),
# and dump-module rejects a corrupted file with a message.
set -eu
tpucc=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for k in "$dir"/*.s; do
  b=$(basename "$k" .s)
  "$tpucc" asm "$k" -o "$tmp/$b.tpub"
  "$tpucc" dump-module --asm "$tmp/$b.tpub" > "$tmp/$b.dis.s"
  "$tpucc" asm "$tmp/$b.dis.s" -o "$tmp/$b.2.tpub"
  cmp "$tmp/$b.tpub" "$tmp/$b.2.tpub"
  "$tpucc" dump-module "$tmp/$b.tpub" | grep -q '^; verified$'
done
# A flipped byte: rejected with the checksum message, exit status 2.
cp "$tmp/rowsum.tpub" "$tmp/bad.tpub"
printf '\377' | dd of="$tmp/bad.tpub" bs=1 seek=300 conv=notrunc 2>/dev/null
if "$tpucc" dump-module "$tmp/bad.tpub" > /dev/null 2> "$tmp/err"; then
  echo "corrupted file accepted"; exit 1
fi
grep -q 'checksum mismatch' "$tmp/err"
# Assembly errors carry file:line:col.
printf 'halt\n  vaddf v1, v2\n' > "$tmp/bad.s"
if "$tpucc" asm "$tmp/bad.s" -o "$tmp/x.tpub" 2> "$tmp/err"; then
  echo "bad assembly accepted"; exit 1
fi
grep -q 'bad.s:2:15: error: vaddf expects 3 operands' "$tmp/err"
echo ok
