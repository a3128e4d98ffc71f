#!/bin/sh
# cli_asm.sh TPUCC KERNEL_DIR: `tpucc asm` and `tpucc dump-module` round
# trip every kernel (asm -> .tpub -> dump --asm -> asm -> identical bytes),
# and dump-module rejects a corrupted file, a directory, text and huge files
# with a message.
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
# What the file is, checked before it is read: a directory, text, a 3 GiB
# file (sparse) and a 1 GiB one whose header says 64 bytes are refused at
# once with exit status 2 (dump-module read them whole first).
rejects() { # rejects FILE MESSAGE
  if "$tpucc" dump-module "$1" > /dev/null 2> "$tmp/err"; then
    echo "dump-module accepted $1"; exit 1
  elif [ $? -ne 2 ]; then
    echo "dump-module $1: exit status not 2"; cat "$tmp/err"; exit 1
  fi
  grep -q -- "$2" "$tmp/err" || { echo "dump-module $1:"; cat "$tmp/err"; exit 1; }
}
mkdir "$tmp/d.tpub"
rejects "$tmp/d.tpub" "d.tpub: is a directory"
printf 'HloModule m\n' > "$tmp/t.tpub"
rejects "$tmp/t.tpub" "does not start with the TPUB magic"
head -c 24 "$tmp/rowsum.tpub" > "$tmp/big.tpub"
dd if=/dev/zero of="$tmp/big.tpub" bs=1 count=1 seek=1073741823 conv=notrunc 2>/dev/null
rejects "$tmp/big.tpub" "header says [0-9]* bytes, the file has 1073741824"
dd if=/dev/zero of="$tmp/big.tpub" bs=1 count=1 seek=3221225471 conv=notrunc 2>/dev/null
rejects "$tmp/big.tpub" "file too large (3221225472 bytes"
# asm looks at its input first: a device and a 3 GiB file (sparse) are
# refused at once (it read them until memory ran out).
if "$tpucc" asm /dev/zero -o "$tmp/z.tpub" 2> "$tmp/err"; then echo "asm read /dev/zero"; exit 1; fi
grep -q "cannot read '/dev/zero': not a regular file or a pipe" "$tmp/err"
dd if=/dev/zero of="$tmp/big.s" bs=1 count=1 seek=3221225471 2>/dev/null
if "$tpucc" asm "$tmp/big.s" -o "$tmp/z.tpub" 2> "$tmp/err"; then echo "asm read 3 GiB"; exit 1; fi
grep -q "file too large" "$tmp/err"
# Assembly errors carry file:line:col.
printf 'halt\n  vaddf v1, v2\n' > "$tmp/bad.s"
if "$tpucc" asm "$tmp/bad.s" -o "$tmp/x.tpub" 2> "$tmp/err"; then
  echo "bad assembly accepted"; exit 1
fi
grep -q 'bad.s:2:15: error: vaddf expects 3 operands' "$tmp/err"
echo ok
