#!/usr/bin/env python3
"""coll_corpus.py TPUCC CORPUS STRETCH: the collective modules of XLA's HLO
corpora run on interp with their replica counts (`tpucc run --replicas`,
stacked random per-replica inputs) and checked against numpy models of
what each computes (docs/collectives.md); the one that needs a vendor
custom-call gives the located error. Exit 77 (skip) without numpy."""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print('skipped: no numpy')
    sys.exit(77)

tpucc, corpus, stretch = sys.argv[1:4]
failures = 0
runs = 0


def run(path, nrep, inputs, nout, tmp):
    """Runs path with nrep replicas; (returncode, stderr, outputs)."""
    args = [tpucc, 'run', path, '--target=interp', '--replicas=%d' % nrep]
    for k, x in enumerate(inputs):
        f = os.path.join(tmp, 'in%d.npy' % k)
        np.save(f, x)
        args.append('--input=@' + f)
    outs = [os.path.join(tmp, 'out%d.npy' % k) for k in range(nout)]
    args += ['--output=@' + o for o in outs]
    p = subprocess.run(args, capture_output=True, text=True)
    got = [np.load(o) for o in outs] if p.returncode == 0 else []
    return p.returncode, p.stderr, got


def check(name, nrep, inputs, want, tmp, path):
    global failures, runs
    runs += 1
    rc, err, got = run(path, nrep, inputs, len(want), tmp)
    if rc != 0:
        print('FAIL %s (%d replicas): exit %d: %s' % (name, nrep, rc, err.strip()))
        failures += 1
        return
    for k, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or not np.array_equal(g, w):
            print('FAIL %s (%d replicas): result %d: got %s %s, want %s %s'
                  % (name, nrep, k, g.dtype, g.shape, w.dtype, w.shape))
            failures += 1


rng = np.random.default_rng(5)
with tempfile.TemporaryDirectory() as tmp:
    S = lambda n: os.path.join(stretch, n + '.hlo')
    C = lambda n: os.path.join(corpus, n + '.hlo')

    # replica_count=30; groups [3,10]<=[6,5]T(1,0), gathered along dim 1
    x = rng.standard_normal((30, 128, 32)).astype(np.float32)
    groups = np.arange(30).reshape(6, 5).T.reshape(3, 10)
    want = np.stack([np.concatenate([x[m] for m in g], axis=1)
                     for r in range(30) for g in groups if r in g])
    check('AllGatherWithSubgroupsIotaList', 30, [x], [want], tmp,
          S('hlo_parser_test__AllGatherWithSubgroupsIotaList'))

    # replica_count=4; 0->1, 1->2, 2->3; replica 0 receives zeros
    x = rng.standard_normal((4, 128, 32)).astype(np.float32)
    want = np.stack([np.zeros((128, 32), np.float32), x[0], x[1], x[2]])
    check('CollectivePermute', 4, [x], [want], tmp, S('hlo_parser_test__CollectivePermute'))

    # groups {{0,1}}: two replicas, each keeps its half of the sum
    x = rng.standard_normal((2, 8)).astype(np.float32)
    s = x[1] + x[0]
    check('ReduceScatter', 2, [x], [np.stack([s[:4], s[4:]])], tmp,
          S('hlo_parser_test__ReduceScatter'))

    # and of (replica-id == 0) over every replica: true only alone
    check('AllReduceAnd_Pred', 1, [], [np.array([True])], tmp,
          S('collective_ops_test__AllReduceAnd_Pred'))
    check('AllReduceAnd_Pred', 4, [], [np.zeros((4, 1), bool)], tmp,
          S('collective_ops_test__AllReduceAnd_Pred'))

    # two all-reduces (add) over every replica
    a = rng.integers(-50, 50, (3, 5)).astype(np.float32)
    b = rng.integers(-50, 50, (3, 5)).astype(np.float32)
    # three terms, chunked: every chunk sums all three; small integers are exact
    sa, sb = a.sum(0), b.sum(0)
    check('AllReduce_CombinableAllReduces', 3, [a, b],
          [np.stack([sa] * 3), np.stack([sb] * 3)], tmp,
          C('collective_ops_test__AllReduce_CombinableAllReduces'))

    # groups {{0}}: one replica, the identity
    x = rng.standard_normal(8).astype(np.float32)
    check('AllReduceAllReduce', 1, [x], [x], tmp, C('hlo_parser_test__AllReduceAllReduce'))

    # an all-to-all over 8 replicas behind a vendor barrier custom-call: a
    # located error
    runs += 1
    p = subprocess.run([tpucc, 'run', S('hlo_parser_test__AsyncStartWithAliasing'),
                        '--target=interp', '--replicas=8', '--random-inputs'],
                       capture_output=True, text=True)
    if p.returncode != 1 or "custom-call target 'BarrierStart' is unknown" not in p.stderr:
        print('FAIL AsyncStartWithAliasing: exit %d: %s' % (p.returncode, p.stderr.strip()))
        failures += 1

print('%d runs, %d failed' % (runs, failures))
sys.exit(1 if failures else 0)
