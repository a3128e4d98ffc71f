# common.sh: what the tests/train scripts share, sourced after they set
# T (tpucc), SRC (the source tree), W (a fresh work directory) and run
# `set -u`. Makes W and defines the helpers.
FM=/usr/share/datasets/fashion-mnist
MLP=$SRC/samples/train/fashion_mlp.tg
rm -rf "$W" && mkdir -p "$W" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
need_data() { [ -r $FM/train-images-idx3-ubyte.gz ] || { echo "SKIP: no $FM"; exit 77; }; }
# expect_error OUTPUT_FILE STATUS PATTERN: the run failed with STATUS and said PATTERN.
expect_error() {
  [ "$2" = "$3" ] || { cat "$1"; fail "exit status $2, expected $3"; }
  grep -q -- "$4" "$1" || { cat "$1"; fail "no '$4' in the output"; }
}
json_num() { sed -n "s/^  \"$2\": \([0-9.e+-]*\),*$/\1/p" "$1"; }
