#!/usr/bin/env python3
"""coll_numpy.py TPUCC [CASES [SEED]]: every collective (and the async
start/done pairs of all-reduce, all-gather and collective-permute) with random shapes,
replica counts, groups (empty, list and iota form) and reductions (add,
maximum and the non-commutative a*2+b, which shows the order of the
terms), run by `tpucc run --target=interp --replicas=N` on stacked
per-replica inputs and compared element for element with an independent
numpy model of docs/collectives.md: a reduction folds chunk c of a group
g[0..n-1] from g[(c+1)%n] round to g[c], chunk c being elements
floor(c*E/n)..floor((c+1)*E/n) of the flattened value (all-reduce) or
member c's slice (reduce-scatter). Exit 77 (skip) without numpy."""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print('skipped: no numpy')
    sys.exit(77)

HLO_TYPE = {np.float32: 'f32', np.int32: 's32'}


def iota_groups(G, S, dims, perm):
    """XLA's [G,S]<=[dims]T(perm), from its definition."""
    a = np.arange(int(np.prod(dims))).reshape(dims)
    if perm is not None:
        a = a.transpose(perm)
    return a.reshape(G, S).tolist()


def rand_groups(rng, N):
    """(text, groups as lists); empty means every replica in order."""
    sizes = [s for s in range(1, N + 1) if N % s == 0]
    S = int(rng.choice(sizes))
    G = N // S
    kind = int(rng.integers(3))
    if kind == 0:
        return '{}', [list(range(N))]
    if kind == 1:
        perm = rng.permutation(N).tolist()
        groups = [perm[i * S:(i + 1) * S] for i in range(G)]
        return '{' + ','.join('{' + ','.join(map(str, g)) + '}' for g in groups) + '}', groups
    # iota: N laid out as a random factorisation, maybe transposed
    dims = []
    rest = N
    while rest > 1 and len(dims) < 3:
        f = int(rng.choice([d for d in range(2, rest + 1) if rest % d == 0]))
        dims.append(f)
        rest //= f
    if rest > 1 or not dims:
        dims.append(rest)
    perm = rng.permutation(len(dims)).tolist() if len(dims) > 1 and rng.integers(2) else None
    text = '[%d,%d]<=[%s]' % (G, S, ','.join(map(str, dims)))
    if perm is not None:
        text += 'T(%s)' % ','.join(map(str, perm))
    return text, iota_groups(G, S, dims, perm)


def group_of(groups, r):
    for g in groups:
        if r in g:
            return g, g.index(r)
    raise AssertionError('replica %d in no group' % r)


def combine(kind, acc, b):
    if kind == 'add':
        return acc + b
    if kind == 'max':
        return np.maximum(acc, b)
    return acc * acc.dtype.type(2) + b  # a*2+b


def fold(kind, vals, g, c):
    """Chunk c's fold over group g of the arrays vals[replica]."""
    n = len(g)
    acc = vals[g[(c + 1) % n]].copy()
    for k in range(1, n):
        acc = combine(kind, acc, vals[g[(c + 1 + k) % n]])
    return acc


def chunk(count, n, c):
    return c * count // n, (c + 1) * count // n


def np_all_reduce(x, groups, kind, r):
    g, _ = group_of(groups, r)
    flat = {m: x[m].reshape(-1) for m in g}
    out = np.empty_like(flat[g[0]])
    for c in range(len(g)):
        lo, hi = chunk(out.size, len(g), c)
        out[lo:hi] = fold(kind, {m: flat[m][lo:hi] for m in g}, g, c)
    return out.reshape(x[r].shape)


def np_reduce_scatter(x, groups, kind, d, r):
    g, p = group_of(groups, r)
    parts = {m: np.split(x[m], len(g), axis=d)[p] for m in g}
    return fold(kind, parts, g, p)


def np_all_gather(x, groups, d, r):
    g, _ = group_of(groups, r)
    return np.concatenate([x[m] for m in g], axis=d)


def np_all_to_all(x, groups, d, r):
    g, p = group_of(groups, r)
    return np.concatenate([np.split(x[m], len(g), axis=d)[p] for m in g], axis=d)


def shape_text(dt, dims):
    return '%s[%s]' % (HLO_TYPE[dt], ','.join(map(str, dims)))


def reducer(kind, t):
    body = {'add': 'ROOT c = %s[] add(a, b)' % t, 'max': 'ROOT c = %s[] maximum(a, b)' % t,
            'lin': 'two = %s[] constant(2)\n  m = %s[] multiply(a, two)\n  ROOT c = %s[] add(m, b)'
                   % (t, t, t)}[kind]
    return 'f {\n  a = %s[] parameter(0)\n  b = %s[] parameter(1)\n  %s\n}\n\n' % (t, t, body)


def make_case(rng):
    """(hlo text, N, x stacked [N]+shape, expected: list over results of
    stacked [N]+result arrays)."""
    N = int(rng.integers(1, 9))
    op = str(rng.choice(['all-reduce', 'reduce-scatter', 'all-gather', 'all-to-all',
                         'all-to-all-tuple', 'collective-permute', 'collective-broadcast']))
    gtext, groups = rand_groups(rng, N)
    n = len(groups[0])
    kind = str(rng.choice(['add', 'max', 'lin']))
    dt = np.int32 if kind == 'add' and rng.integers(3) == 0 else np.float32
    t = HLO_TYPE[dt]
    rank = int(rng.integers(1, 4))
    dims = [int(rng.integers(1, 4)) for _ in range(rank)]
    d = int(rng.integers(rank))
    if op in ('reduce-scatter', 'all-to-all'):
        dims[d] *= n
    if op == 'all-to-all-tuple':
        dims = [n] + dims
    if dt == np.int32:
        x = rng.integers(-2 ** 31, 2 ** 31, size=[N] + dims, dtype=np.int64).astype(np.int32)
    elif kind == 'lin':
        x = rng.integers(-8, 9, size=[N] + dims).astype(np.float32) / np.float32(4)
    else:
        x = rng.standard_normal([N] + dims).astype(np.float32)
    ps = shape_text(dt, dims)
    comp = ''
    ent = '  p = %s parameter(0)\n' % ps
    start = bool(rng.integers(3) == 0)  # the async start/done pair instead
    if op == 'all-reduce':
        comp = reducer(kind, t)
        if start:
            ent += ('  s = %s all-reduce-start(p), replica_groups=%s, to_apply=f\n'
                    '  ROOT r = %s all-reduce-done(s)\n' % (ps, gtext, ps))
        else:
            ent += '  ROOT r = %s all-reduce(p), replica_groups=%s, to_apply=f\n' % (ps, gtext)
        exp = [np.stack([np_all_reduce(x, groups, kind, r) for r in range(N)])]
    elif op == 'reduce-scatter':
        comp = reducer(kind, t)
        rd = list(dims)
        rd[d] //= n
        ent += ('  ROOT r = %s reduce-scatter(p), replica_groups=%s, dimensions={%d}, to_apply=f\n'
                % (shape_text(dt, rd), gtext, d))
        exp = [np.stack([np_reduce_scatter(x, groups, kind, d, r) for r in range(N)])]
    elif op == 'all-gather':
        rd = list(dims)
        rd[d] *= n
        rs = shape_text(dt, rd)
        if start:
            ent += ('  s = (%s, %s) all-gather-start(p), replica_groups=%s, dimensions={%d}\n'
                    '  ROOT r = %s all-gather-done(s)\n' % (ps, rs, gtext, d, rs))
        else:
            ent += '  ROOT r = %s all-gather(p), replica_groups=%s, dimensions={%d}\n' % (
                rs, gtext, d)
        exp = [np.stack([np_all_gather(x, groups, d, r) for r in range(N)])]
    elif op == 'all-to-all':
        ent += '  ROOT r = %s all-to-all(p), replica_groups=%s, dimensions={%d}\n' % (ps, gtext, d)
        exp = [np.stack([np_all_to_all(x, groups, d, r) for r in range(N)])]
    elif op == 'all-to-all-tuple':
        es = shape_text(dt, dims[1:])
        for j in range(n):
            lim = ','.join(['[%d:%d]' % (j, j + 1)] + ['[0:%d]' % v for v in dims[1:]])
            ent += '  s%d = %s slice(p), slice={%s}\n' % (j, shape_text(dt, [1] + dims[1:]), lim)
            ent += '  o%d = %s reshape(s%d)\n' % (j, es, j)
        ent += ('  ROOT r = (%s) all-to-all(%s), replica_groups=%s\n'
                % (', '.join([es] * n), ', '.join('o%d' % j for j in range(n)), gtext))
        exp = []
        for j in range(n):
            rows = []
            for r in range(N):
                g, p = group_of(groups, r)
                rows.append(x[g[j]][p])
            exp.append(np.stack(rows))
    elif op == 'collective-permute':
        k = int(rng.integers(0, N + 1))
        src = rng.permutation(N)[:k].tolist()
        dst = rng.permutation(N)[:k].tolist()
        pairs = '{' + ','.join('{%d,%d}' % (s, q) for s, q in zip(src, dst)) + '}'
        if start:
            ent += ('  s = (%s, %s, u32[], u32[]) collective-permute-start(p), '
                    'source_target_pairs=%s\n  ROOT r = %s collective-permute-done(s)\n'
                    % (ps, ps, pairs, ps))
        else:
            ent += '  ROOT r = %s collective-permute(p), source_target_pairs=%s\n' % (ps, pairs)
        rows = [np.zeros(dims, dt) for _ in range(N)]
        for s, q in zip(src, dst):
            rows[q] = x[s]
        exp = [np.stack(rows)]
    else:
        ent += '  ROOT r = %s collective-broadcast(p), replica_groups=%s\n' % (ps, gtext)
        exp = [np.stack([x[group_of(groups, r)[0][0]] for r in range(N)])]
    header = 'HloModule coll' + (', replica_count=%d' % N if rng.integers(2) else '')
    return '%s\n\n%sENTRY e {\n%s}\n' % (header, comp, ent), N, x, exp, op, kind


def main():
    tpucc = sys.argv[1]
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    rng = np.random.default_rng(seed)
    failures = 0
    seen = set()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(cases):
            text, N, x, exp, op, kind = make_case(rng)
            seen.add(op)
            hlo = os.path.join(tmp, 'c.hlo')
            with open(hlo, 'w') as f:
                f.write(text)
            xp = os.path.join(tmp, 'x.npy')
            np.save(xp, x)
            outs = [os.path.join(tmp, 'y%d.npy' % k) for k in range(len(exp))]
            for o in outs:
                if os.path.exists(o):
                    os.remove(o)
            cmd = [tpucc, 'run', hlo, '--target=interp', '--replicas=%d' % N, '--input=@' + xp]
            cmd += ['--output=@' + o for o in outs]
            p = subprocess.run(cmd, capture_output=True, text=True)
            ok = p.returncode == 0
            why = p.stderr.strip()
            for k, o in enumerate(outs):
                if not ok:
                    break
                got = np.load(o)
                want = exp[k] if N > 1 else exp[k][0]
                if got.shape != want.shape or got.dtype != want.dtype:
                    ok, why = False, 'result %d: got %s %s, want %s %s' % (
                        k, got.dtype, got.shape, want.dtype, want.shape)
                elif not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
                    bad = np.argwhere(got != want)[:3].tolist()
                    ok, why = False, 'result %d differs at %s: got %s want %s' % (
                        k, bad, got[tuple(bad[0])] if bad else '?', want[tuple(bad[0])] if bad else '?')
            if not ok:
                failures += 1
                print('case %d (%s, %s, %d replicas) FAILED: %s\n%s' % (i, op, kind, N, why, text))
    missing = {'all-reduce', 'reduce-scatter', 'all-gather', 'all-to-all', 'all-to-all-tuple',
               'collective-permute', 'collective-broadcast'} - seen
    if missing and cases >= 50:
        print('cases never generated: %s' % ', '.join(sorted(missing)))
        failures += 1
    print('%d cases, %d failed' % (cases, failures))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
