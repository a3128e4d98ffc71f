#!/usr/bin/env python3
"""grad_torch.py: whole models' gradients against PyTorch's autograd.

For tests/passes/grad/mlp.tg and cnn.tg (losses of an MLP and of a small
CNN with max pooling, softmax cross-entropy averaged over the batch):
`tpucc grad --value-and-grad` writes the module, `tpucc run` runs it on
the interp target with seeded inputs (.npy), and the loss and every
gradient must match PyTorch's autograd of the same model in float64
within rtol 2e-4, atol 2e-5 (the evaluator computes in f32).

usage: grad_torch.py TPUCC WORKDIR    (exit 77, skipped, without torch)
"""
import os
import subprocess
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print('SKIP: %s' % e)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))


def mlp(p):
    w1, b1, w2, b2, x, labels = p
    h = torch.relu(x @ w1 + b1)
    return F.cross_entropy(h @ w2 + b2, labels)


def cnn(p):
    k1, c1, k2, c2, w, b, x, labels = p
    def block(h, k, c):  # NHWC in and out, HWIO kernels
        y = F.conv2d(h.permute(0, 3, 1, 2), k.permute(3, 2, 0, 1), padding=1)
        y = F.max_pool2d(torch.relu(y + c.view(1, -1, 1, 1)), 2)
        return y.permute(0, 2, 3, 1)
    h = block(block(x, k1, c1), k2, c2)
    return F.cross_entropy(h.reshape(4, 32) @ w + b, labels)


MODELS = {
    'mlp': (mlp, [(20, 16), (16,), (16, 10), (10,), (8, 20), (8,)]),
    'cnn': (cnn, [(3, 3, 1, 4), (4,), (3, 3, 4, 8), (8,), (32, 10), (10,), (4, 8, 8, 1), (4,)]),
}


def check(tpucc, work, name):
    fn, shapes = MODELS[name]
    rng = np.random.default_rng(5)
    arrays = []
    for k, s in enumerate(shapes):
        if k == len(shapes) - 1:
            arrays.append(rng.integers(0, 10, size=s).astype(np.int32))
        else:
            arrays.append((rng.standard_normal(s) * 0.5).astype(np.float32))
    vjp = os.path.join(work, name + '_vag.hlo')
    subprocess.run([tpucc, 'grad', os.path.join(HERE, 'grad', name + '.tg'), '--value-and-grad', '-o', vjp],
                   check=True)
    args = [tpucc, 'run', vjp, '--target=interp']
    for k, a in enumerate(arrays):
        path = os.path.join(work, '%s_in%d.npy' % (name, k))
        np.save(path, a)
        args.append('--input=@' + path)
    nout = len(shapes)  # the loss, then one gradient per float parameter
    outs = [os.path.join(work, '%s_out%d.npy' % (name, k)) for k in range(nout)]
    args += ['--output=@' + o for o in outs]
    subprocess.run(args, check=True)
    got = [np.load(o) for o in outs]
    params = [torch.tensor(a.astype(np.float64), requires_grad=True) for a in arrays[:-1]]
    loss = fn(params + [torch.tensor(arrays[-1].astype(np.int64))])
    loss.backward()
    want = [loss.detach().numpy()] + [p.grad.numpy() for p in params]
    bad = 0
    for k, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape or not np.allclose(g, w, rtol=2e-4, atol=2e-5):
            err = np.max(np.abs(g.astype(np.float64) - w)) if g.shape == w.shape else float('nan')
            print('FAIL %s: output %d (%s) differs from torch: max |diff| %g' % (name, k, 'loss' if k == 0 else
                                                                                'gradient', err))
            bad += 1
    print('%s %s: loss %.6f, %d gradients against torch autograd' % ('FAIL' if bad else 'ok  ', name,
                                                                     float(got[0]), len(got) - 1))
    return bad


def main():
    tpucc, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    bad = sum(check(tpucc, work, n) for n in MODELS)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
