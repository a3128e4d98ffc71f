#!/usr/bin/python3
"""bench/train_follow.py [TPUCC] [STEPS] [OPTIMIZER] [BOUND]: do the first STEPS (default 200)
steps of samples/train/fashion_mlp.tg on the cpu target with strict
numerics follow PyTorch's losses from the same initial weights and data
order? (docs/performance.md, "Training").

tpucc train runs with --loss-log; this script rebuilds what it used from
the documented formulas, in numpy: the Glorot-uniform initial weights
(docs/training.md, "Initial values": SplitMix64 keyed by seed, tensor and
element) and epoch 0's order (include/tpurt_data.h: the Fisher-Yates
shuffle keyed by seed ^ SplitMix64(0)), then trains the same MLP with
torch.optim.Adam (lr 0.001, constant; OPTIMIZER sgd: SGD at lr 0.05) on
pixels * float32(1/255) and compares every loss: relative difference at
most BOUND (default 1e-4). Exit 1 otherwise.

Each step also finds PyTorch's ReLU pre-activation nearest to zero
relative to its f32 rounding scale (2^-24 times the sum of the magnitudes
of its terms). A gate below that scale is decided by rounding: programs
that sum the same dot in different orders may switch it differently, and
Adam then takes a full learning-rate step on the weights only that
example reaches. On failure the script names the first such gate.
Run with Debian's python3-torch."""
import gzip
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

M64 = (1 << 64) - 1
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FM = "/usr/share/datasets/fashion-mnist/"


def mix(x):
    """SplitMix64's output for state x, elementwise on uint64 arrays."""
    with np.errstate(over="ignore"):
        z = (x + np.uint64(0x9E3779B97F4A7C15)).astype(np.uint64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def mix1(x):
    return int(mix(np.array([x & M64], dtype=np.uint64))[0])


def glorot(seed, k, shape):
    if len(shape) < 2:
        return np.zeros(shape, dtype=np.float32)
    rf = float(np.prod(shape[:-2])) if len(shape) > 2 else 1.0
    limit = np.sqrt(6.0 / (rf * shape[-2] + rf * shape[-1]))
    i = np.arange(int(np.prod(shape)), dtype=np.uint64)
    r = mix(np.uint64(seed) ^ np.uint64(mix1(k)) ^ mix(mix(i)))
    u = (r >> np.uint64(40)).astype(np.float64) / 16777216.0
    return ((2 * u - 1) * limit).astype(np.float32).reshape(shape)


def order(seed, epoch, n):
    """The loader's permutation of epoch `epoch` for loader seed `seed`."""
    perm = np.arange(n, dtype=np.int64)
    e = mix1(epoch)
    r = mix(np.uint64(seed) ^ mix(np.uint64(e) ^ mix(np.arange(n, dtype=np.uint64))))
    for i in range(n - 1, 0, -1):
        j = ((int(r[i]) >> 32) * (i + 1)) >> 32
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def near_gate(a, w, b, z, layer):
    """(|z| / scale, layer, example, unit, z, scale) of the pre-activation
    z = a w + b nearest to zero relative to its f32 rounding scale."""
    with torch.no_grad():
        scale = (a.abs() @ w.abs() + b.abs()) * 2.0 ** -24
        r = z.abs() / torch.clamp_min(scale, 1e-30)
        k = int(r.argmin())
        n, j = divmod(k, z.shape[1])
        return (r.flatten()[k].item(), layer, n, j, z[n, j].item(), scale[n, j].item())


def main():
    tpucc = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build/tools/tpucc")
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    optimizer = sys.argv[3] if len(sys.argv) > 3 else "adam"
    bound = float(sys.argv[4]) if len(sys.argv) > 4 else 1e-4
    lr = 1e-3 if optimizer == "adam" else 0.05
    seed = 0
    with tempfile.TemporaryDirectory() as w:
        log = os.path.join(w, "loss.txt")
        subprocess.run([tpucc, "train", os.path.join(ROOT, "samples/train/fashion_mlp.tg"), "--epochs=1",
                        "--steps-per-epoch=%d" % steps, "--schedule=constant", "--test-examples=128",
                        "--target=cpu,numerics=strict", "--threads=1", "--quiet", "--seed=%d" % seed,
                        "--loss-log=" + log, "--optimizer=" + optimizer, "--lr=%g" % lr], check=True, stdout=subprocess.DEVNULL)
        ours = [float(v) for v in open(log).read().split()]
    with gzip.open(FM + "train-images-idx3-ubyte.gz") as f:
        raw = np.frombuffer(f.read(), dtype=np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(FM + "train-labels-idx1-ubyte.gz") as f:
        lab = np.frombuffer(f.read(), dtype=np.uint8, offset=8).astype(np.int64)
    x = torch.tensor(raw.astype(np.float32) * np.float32(1 / 255))
    y = torch.tensor(lab)
    shapes = [(784, 256), (256,), (256, 128), (128,), (128, 10), (10,)]
    ws = [torch.tensor(glorot(seed, k, s), requires_grad=True) for k, s in enumerate(shapes)]
    perm = order(seed ^ mix1(0), 0, len(raw))
    torch.set_num_threads(1)
    opt = torch.optim.Adam(ws, lr=lr) if optimizer == "adam" else torch.optim.SGD(ws, lr=lr)
    worst, first, gates = 0.0, None, []
    for s in range(steps):
        i = torch.tensor(perm[s * 128:(s + 1) * 128])
        z1 = x[i] @ ws[0] + ws[1]
        h = torch.relu(z1)
        z2 = h @ ws[2] + ws[3]
        gates.append(min(near_gate(x[i], ws[0], ws[1], z1, 1), near_gate(h, ws[2], ws[3], z2, 2)))
        h = torch.relu(z2)
        loss = torch.nn.functional.cross_entropy(h @ ws[4] + ws[5], y[i], reduction="sum") / 128
        opt.zero_grad()
        loss.backward()
        opt.step()
        d = abs(ours[s] - loss.item()) / abs(loss.item())
        worst = max(worst, d)
        if d > bound and first is None:
            first = s + 1
        if s in (0, 1, 9, 49, 99, steps - 1):
            print("step %4d  tpucc %.7f  torch %.7f  relative difference %.2e" % (s + 1, ours[s], loss.item(), d))
    print("%s: worst relative difference over %d steps: %.2e (bound %.0e)%s" % (
        optimizer, steps, worst, bound, "" if first is None else "; first above it at step %d" % first))
    for s in range(first or 0):
        if gates[s][0] < 1:
            r, layer, n, j, z, scale = gates[s]
            print("step %d: ReLU gate within f32 rounding of 0 (layer %d, example %d, unit %d: pre-activation %.3e, "
                  "rounding scale %.3e)" % (s + 1, layer, n, j, z, scale))
            break
    sys.exit(0 if len(ours) == steps and worst <= bound else 1)


main()
