#!/bin/sh
# corpus.sh DIR... -- CMD [ARG...]: runs CMD when every DIR (XLA's HLO
# corpus, tests/meson.build's corpus_dir and hlo_stretch_dir) is a
# directory; otherwise prints which one is missing and exits 77, which
# meson reports as SKIP. The suite 'corpus' runs every test through it.
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  if [ ! -d "$1" ]; then
    echo "skipped: no HLO corpus at $1 (give -Dhlo_corpus=DIR)"
    exit 77
  fi
  shift
done
[ "$1" = "--" ] || { echo "usage: corpus.sh DIR... -- CMD [ARG...]" >&2; exit 2; }
shift
exec "$@"
