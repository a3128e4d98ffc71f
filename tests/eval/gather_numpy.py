#!/usr/bin/env python3
"""gather_numpy.py TPUCC [CASES [SEED]]: gathers and scatters with random
dimension numbers (collapsed, batching, index vector order, implicit index
vector) and out-of-range s32/s8 indices, run by `tpucc run --target=interp`
and compared element for element with an independent numpy model of XLA's
semantics (starts clamped for gather; a scatter window that does not fit is
skipped whole; windows added in row-major order of the indices). Exit 77
(skip) without numpy."""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print('skipped: no numpy')
    sys.exit(77)


def rand_dims(rng, x_shape):
    r = len(x_shape)
    win = [int(rng.integers(1, d + 1)) for d in x_shape]
    smap = [d for d in range(r) if rng.integers(2)] or [r - 1]
    rng.shuffle(smap)
    nb = int(rng.integers(0, 3))
    bd = [int(rng.integers(1, 5)) for _ in range(nb)]
    obatch, col = [], []
    for d in range(r):
        if d not in smap and not obatch and nb and rng.integers(3) == 0:
            obatch, win[d], bd[0] = [d], 1, x_shape[d]
        elif win[d] == 1 and rng.integers(2):
            col.append(d)
    implicit = len(smap) == 1 and rng.integers(2) == 1
    ix_shape = bd + ([] if implicit else [len(smap)])
    wdims = [d for d in range(r) if d not in col and d not in obatch]
    rank = len(wdims) + nb
    pos = sorted(rng.choice(rank, size=len(wdims), replace=False).tolist()) if wdims else []
    return dict(win=win, smap=smap, col=col, obatch=obatch, ibatch=[0] if obatch else [], nb=nb,
                bd=bd, ivd=nb, ix_shape=ix_shape, wdims=wdims, pos=pos, rank=rank)


def starts(x_shape, idx, dn, G):
    s = [0] * len(x_shape)
    for k, d in enumerate(dn['smap']):
        s[d] = int(idx[tuple(G) + ((k,) if len(dn['ix_shape']) > dn['nb'] else ())])
    for d in dn['obatch']:
        s[d] = G[0]
    return s


def window_index(dn, G, rank):
    t, g = [], 0
    for o in range(rank):
        if o in dn['pos']:
            t.append(slice(None))
        else:
            t.append(G[g])
            g += 1
    return tuple(t)


def np_gather(x, idx, dn):
    out_shape, g, w = [], 0, 0
    for o in range(dn['rank']):
        if o in dn['pos']:
            out_shape.append(dn['win'][dn['wdims'][w]])
            w += 1
        else:
            out_shape.append(dn['bd'][g])
            g += 1
    out = np.zeros(out_shape, x.dtype)
    for G in np.ndindex(*dn['bd']):
        s = starts(x.shape, idx, dn, G)
        s = [min(max(v, 0), x.shape[d] - dn['win'][d]) for d, v in enumerate(s)]
        win = x[tuple(slice(s[d], s[d] + dn['win'][d]) for d in range(x.ndim))]
        out[window_index(dn, G, dn['rank'])] = win.reshape([dn['win'][d] for d in dn['wdims']])
    return out, out_shape


def np_scatter(x, idx, upd, dn):
    res = x.copy()
    for G in np.ndindex(*dn['bd']):
        s = starts(x.shape, idx, dn, G)
        if any(v < 0 or v > x.shape[d] - dn['win'][d] for d, v in enumerate(s)):
            continue
        sl = tuple(slice(s[d], s[d] + dn['win'][d]) for d in range(x.ndim))
        w = upd[window_index(dn, G, dn['rank'])].reshape(res[sl].shape)
        res[sl] = res[sl] + w
    return res


def ints(v):
    return '{' + ','.join(str(i) for i in v) + '}'


def hlo(kind, x_shape, dn, ity, out_shape):
    xs = 'f32[%s]' % ','.join(map(str, x_shape))
    ixs = '%s[%s]' % (ity, ','.join(map(str, dn['ix_shape'])))
    os_ = 'f32[%s]' % ','.join(map(str, out_shape))
    common = ('%s={%s}, %s=%s, %s=%s' % ('collapsed_slice_dims' if kind == 'g' else 'inserted_window_dims',
              ','.join(map(str, dn['col'])), 'start_index_map' if kind == 'g' else 'scatter_dims_to_operand_dims',
              ints(dn['smap']), 'operand_batching_dims' if kind == 'g' else 'input_batching_dims', ints(dn['obatch'])))
    common += ', %s=%s, index_vector_dim=%d' % (
        'start_indices_batching_dims' if kind == 'g' else 'scatter_indices_batching_dims', ints(dn['ibatch']), dn['ivd'])
    if kind == 'g':
        return ('ENTRY e {\n  x = %s parameter(0)\n  i = %s parameter(1)\n  ROOT g = %s gather(x, i), '
                'offset_dims=%s, %s, slice_sizes=%s\n}\n' % (xs, ixs, os_, ints(dn['pos']), common, ints(dn['win'])))
    return ('add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\n'
            'ENTRY e {\n  x = %s parameter(0)\n  i = %s parameter(1)\n  u = %s parameter(2)\n'
            '  ROOT s = %s scatter(x, i, u), update_window_dims=%s, %s, to_apply=add\n}\n'
            % (xs, ixs, os_, xs, ints(dn['pos']), common))


def main():
    tpucc = sys.argv[1]
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    rng = np.random.default_rng(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for c in range(cases):
            x_shape = [int(rng.integers(1, 6)) for _ in range(int(rng.integers(1, 4)))]
            dn = rand_dims(rng, x_shape)
            ity = 's8' if rng.integers(4) == 0 else 's32'
            x = rng.integers(-100, 100, size=x_shape).astype(np.float32) / 8
            idx = np.asarray(rng.integers(-3, 8, size=dn['ix_shape']), dtype=np.int8 if ity == 's8' else np.int32)
            g, out_shape = np_gather(x, idx, dn)
            kind = 'g' if c % 2 == 0 else 's'
            args = [x, idx]
            if kind == 's':
                args.append(np.asarray(rng.integers(-100, 100, size=out_shape) / 4, dtype=np.float32))
                want = np_scatter(x, idx, args[2], dn)
            else:
                want = g
            text = hlo(kind, x_shape, dn, ity, out_shape if kind == 'g' else out_shape)
            path = os.path.join(tmp, 'case.hlo')
            with open(path, 'w') as f:
                f.write(text)
            cmd = [tpucc, 'run', path, '--target=interp', '--output=@' + os.path.join(tmp, 'out.npy')]
            for k, a in enumerate(args):
                np.save(os.path.join(tmp, 'a%d.npy' % k), a)
                cmd.append('--input=@' + os.path.join(tmp, 'a%d.npy' % k))
            r = subprocess.run(cmd, capture_output=True, text=True)
            got = np.load(os.path.join(tmp, 'out.npy')) if r.returncode == 0 else None
            if got is None or got.shape != want.shape or not np.array_equal(got, want):
                bad += 1
                print('case %d differs:\n%s%s\nwant %s\ngot %s' % (c, text, r.stderr, want, got))
    print('%d cases, %d failed' % (cases, bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
