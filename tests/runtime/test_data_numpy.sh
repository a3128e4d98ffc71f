#!/bin/sh
# test_data_numpy.sh DATA_DUMP: files written by numpy itself (np.save,
# np.savez with its zip64 entries, np.savez_compressed) read by
# libtpurt-data give numpy's values. Skips (77) without a python3 that has
# numpy.
dump=${1:?usage: test_data_numpy.sh DATA_DUMP}
case "$dump" in /*) ;; *) dump=$(pwd)/$dump ;; esac
py=
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import numpy' 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || { echo "SKIP: no python3 with numpy"; exit 77; }
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
"$py" - "$t" <<'PY' || exit 1
import sys, numpy as np
t = sys.argv[1]
rng = np.random.default_rng(3)
x = rng.integers(0, 256, size=(7, 3, 2), dtype=np.uint8)
y = rng.integers(0, 10, size=7).astype(np.int64)
np.savez(t + '/a.npz', x_train=x, y_train=y)
np.savez_compressed(t + '/b.npz', x_train=x, y_train=y)
np.save(t + '/x.npy', (x.astype(np.float32) - 0.5))
np.save(t + '/y.npy', y.astype(np.int32))
def dump(xs, name):
    with open(t + '/' + name, 'w') as f:
        f.write(' '.join(str(v) for v in xs.shape) + '\n')
        for i in range(xs.shape[0]):
            f.write('%d:%s\n' % (y[i], ''.join(' %g' % v for v in xs[i].reshape(-1))))
dump(x, 'want_u8')
dump(x.astype(np.float32) - 0.5, 'want_f32')
PY
bad=0
for c in "a.npz:want_u8" "b.npz:want_u8" "x.npy y.npy:want_f32"; do
  files=${c%%:*}; want=${c#*:}
  (cd "$t" && "$dump" $files) > "$t/got" 2>&1
  if cmp -s "$t/got" "$t/$want"; then
    echo "ok: $files"
  else
    echo "FAIL: $files"; diff "$t/$want" "$t/got" | head -5; bad=1
  fi
done
exit $bad
