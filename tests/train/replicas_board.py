#!/usr/bin/env python3
"""Data-parallel training on an emulated board against one core.

    replicas_board.py TPUCC MODEL.tg mlp|cnn WORKDIR

From the same initial weights (a checkpoint this script writes) and the
same 64 synthetic images, `tpucc train` runs
  one   --target=v3                          one replica of batch 64
  eight --target=v3-8 --replicas=8            8 replicas of 8 (one per core)
  cpu   --target=cpu,numerics=tpu --replicas=8  8 host threads of 8
with SGD, and checks:

1. eight and cpu agree bit for bit after two steps: both
   fold the all-reduce in base/coll.h's order and compute the TPU's
   numerics (bf16 MXU operands, f32 accumulation); for the MLP so does
   --target=v2-8 --replicas=8.
2. eight against one after one step, element by element, within the bound
   that the documented summation order gives. Each gradient element is a
   sum of N terms that are the same in both runs (per-example products of
   bf16 operands, exact in f32, and the per-example terms of the bias
   sums); only the order of the sum differs: one core sums N terms in its
   own order, eight cores sum N/8 each and the all-reduce folds the 8
   partial sums in base/coll.h's order. Any order of a sum of N terms is
   within gamma(N-1) * S of the exact sum (Higham, Accuracy and Stability
   of Numerical Algorithms, 2nd ed., (4.4)), gamma(k) = k u / (1 - k u),
   u = 2^-24, S = the sum of the terms' magnitudes, so
       |g1 - g8| <= 2 gamma(N-1) S.
   SGD writes w' = fl(w - fl(lr g)); rounding two values apart by d gives
   values apart by at most d + ulp(the larger), so
       |w1' - w8'| <= lr 2 gamma(N-1) S (1 + eta) + ulp(lr |g|) + ulp(|w'|).
   S comes from this script's float64 replay of the step with the TPU's
   bf16 operand roundings; eta = 2^-6 allows for the replay's operands
   sitting one bf16 ulp (2^-8 relative) away from the TPU's where an f32
   sum in another order crossed a rounding boundary, on both factors of a
   term. N: the batch (64) for dense weights and biases; batch x output
   positions for convolution kernels and their biases (64 x 26 x 26 for
   the CNN's first, 64 x 11 x 11 for its second).
The script prints, per tensor, whether the bits match and the largest
difference as a fraction of its bound.
"""
import os
import subprocess
import sys

import numpy as np

U = 2.0 ** -24
ETA = 2.0 ** -6
LR = 0.01
B = 64


def gamma(k):
    return k * U / (1 - k * U)


def bf16(x):
    """x rounded to bfloat16 (to nearest, ties to even), as float32."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def mm(a, b):
    """An MXU matmul: bf16 operands, f32 result."""
    return (bf16(a).astype(np.float64) @ bf16(b).astype(np.float64)).astype(np.float32)


def absmm(a, b):
    """sum_k |bf16(a)[i,k]| |bf16(b)[k,j]| in float64."""
    return np.abs(bf16(a).astype(np.float64)) @ np.abs(bf16(b).astype(np.float64))


def softmax_grad(z, y):
    e = np.exp(z.astype(np.float64) - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1
    return (p / B).astype(np.float32)


def patches(x, k):
    """[B, H-k+1, W-k+1, k, k, C] windows of NHWC x."""
    v = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(1, 2))
    return v.transpose(0, 1, 2, 4, 5, 3)


def conv(x, w):
    """VALID 3x3 convolution of NHWC x with HWIO w, MXU numerics."""
    p = patches(x, 3)
    b, h, wd = p.shape[:3]
    return mm(p.reshape(b * h * wd, -1), w.reshape(-1, w.shape[3])).reshape(b, h, wd, -1)


def pool(h):
    """2x2 max-pool (VALID) and the mask of each window's first maximum."""
    b, hh, ww, c = h.shape
    hh, ww = hh // 2 * 2, ww // 2 * 2
    v = h[:, :hh, :ww].reshape(b, hh // 2, 2, ww // 2, 2, c).transpose(0, 1, 3, 5, 2, 4)
    v = v.reshape(b, hh // 2, ww // 2, c, 4)
    arg = v.argmax(axis=4)
    mask = np.zeros(h.shape, dtype=bool)
    for k in range(4):
        dy, dx = divmod(k, 2)
        mask[:, dy:hh:2, dx:ww:2] |= (arg == k).transpose(0, 1, 2, 3)
    return v.max(axis=4), mask


def unpool(d, mask):
    """The max-pool's gradient: d to each window's maximum."""
    up = np.zeros(mask.shape, dtype=np.float32)
    hh, ww = d.shape[1] * 2, d.shape[2] * 2
    up[:, :hh, :ww] = np.repeat(np.repeat(d, 2, axis=1), 2, axis=2)
    return up * mask


def mlp_terms(w, x, y):
    """{name: (S, N)} for the MLP sample."""
    h1 = np.maximum(mm(x, w["w1"]) + w["b1"], 0)
    h2 = np.maximum(mm(h1, w["w2"]) + w["b2"], 0)
    dz = softmax_grad(mm(h2, w["w3"]) + w["b3"], y)
    dh2 = mm(dz, w["w3"].T) * (h2 > 0)
    dh1 = mm(dh2, w["w2"].T) * (h1 > 0)
    s = {"w3": absmm(h2.T, dz), "w2": absmm(h1.T, dh2), "w1": absmm(x.T, dh1)}
    s.update({"b3": np.abs(dz).sum(0), "b2": np.abs(dh2).sum(0), "b1": np.abs(dh1).sum(0)})
    return {k: (v, B) for k, v in s.items()}


def cnn_terms(w, x, y):
    """{name: (S, N)} for the CNN sample."""
    img = x.reshape(B, 28, 28, 1)
    h1 = np.maximum(conv(img, w["k1"]) + w["c1"], 0)
    p1, m1 = pool(h1)
    h2 = np.maximum(conv(p1, w["k2"]) + w["c2"], 0)
    p2, m2 = pool(h2)
    flat = p2.reshape(B, 1600)
    h3 = np.maximum(mm(flat, w["w1"]) + w["b1"], 0)
    dz = softmax_grad(mm(h3, w["w2"]) + w["b2"], y)
    dh3 = mm(dz, w["w2"].T) * (h3 > 0)
    dflat = mm(dh3, w["w1"].T)
    d2 = unpool(dflat.reshape(B, 5, 5, 64), m2) * (h2 > 0)
    # the input gradient of the second convolution: a full convolution of
    # d2 with the flipped kernel
    pad = np.pad(d2, ((0, 0), (2, 2), (2, 2), (0, 0)))
    flip = w["k2"][::-1, ::-1].transpose(0, 1, 3, 2)
    dp1 = conv(pad, flip)
    d1 = unpool(dp1, m1) * (h1 > 0)

    def kernel(a, d):
        p = patches(a, 3)
        n = p.shape[0] * p.shape[1] * p.shape[2]
        return absmm(p.reshape(n, -1).T, d.reshape(n, -1)).reshape(3, 3, a.shape[3], -1), n

    s = {"w2": (absmm(h3.T, dz), B), "w1": (absmm(flat.T, dh3), B),
         "b2": (np.abs(dz).sum(0), B), "b1": (np.abs(dh3).sum(0), B)}
    s["k2"] = kernel(p1, d2)
    s["k1"] = kernel(img, d1)
    s["c2"] = (np.abs(d2).astype(np.float64).sum((0, 1, 2)), B * 11 * 11)
    s["c1"] = (np.abs(d1).astype(np.float64).sum((0, 1, 2)), B * 26 * 26)
    return s


SHAPES = {
    "mlp": {"w1": (784, 256), "b1": (256,), "w2": (256, 128), "b2": (128,), "w3": (128, 10),
            "b3": (10,)},
    "cnn": {"k1": (3, 3, 1, 32), "c1": (32,), "k2": (3, 3, 32, 64), "c2": (64,),
            "w1": (1600, 128), "b1": (128,), "w2": (128, 10), "b2": (10,)},
}


def main():
    tpucc, model, kind, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    r = np.random.default_rng(11)
    proto = r.integers(0, 256, size=(10, 784))
    yl = r.integers(0, 10, size=B)
    px = np.clip(proto[yl] + r.normal(0, 60, size=(B, 784)), 0, 255).astype(np.uint8)
    data = os.path.join(work, "data.npz")
    np.savez(data, x_train=px.reshape(B, 28, 28), y_train=yl, x_test=px.reshape(B, 28, 28),
             y_test=yl)
    w0 = {}
    for k, s in SHAPES[kind].items():
        lim = np.sqrt(6.0 / (np.prod(s[:-1]) + s[-1])) if len(s) > 1 else 0.05
        w0[k] = r.uniform(-lim, lim, size=s).astype(np.float32)
    init = os.path.join(work, "init.npz")
    np.savez(init, step=np.float32(0), epoch=np.int32(0), **w0)

    def train(name, target, epochs, replicas):
        out = os.path.join(work, "%s_%d.npz" % (name, epochs))
        cmd = [tpucc, "train", model, "--data=" + data, "--target=" + target,
               "--replicas=%d" % replicas, "--batch=%d" % B, "--epochs=%d" % epochs,
               "--test-examples=%d" % B, "--optimizer=sgd", "--lr=%g" % LR, "--schedule=constant",
               "--resume=" + init, "--checkpoint=" + out, "--quiet"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            sys.exit("%s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
        return np.load(out)

    eight, cpu = train("eight", "v3-8", 2, 8), train("cpu", "cpu,numerics=tpu", 2, 8)
    for k in w0:
        assert np.array_equal(eight[k].view(np.uint32), cpu[k].view(np.uint32)), \
            "%s after 2 steps: v3-8 and 8 cpu replicas differ" % k
    print("v3-8 and 8 cpu thread replicas: every tensor bit for bit after 2 steps")
    if kind == "mlp":  # the v2 board: the same numerics and order (the MLP only, for time)
        v2 = train("v2", "v2-8", 2, 8)
        for k in w0:
            assert np.array_equal(eight[k].view(np.uint32), v2[k].view(np.uint32)), \
                "%s after 2 steps: v3-8 and v2-8 differ" % k
        print("v2-8 and v3-8: every tensor bit for bit after 2 steps")
    one, eight = train("one", "v3", 1, 1), train("eight", "v3-8", 1, 8)
    x = (px.astype(np.float32) / np.float32(255)).astype(np.float32)
    terms = (mlp_terms if kind == "mlp" else cnn_terms)(w0, x, yl)
    worst = 0.0
    for k in w0:
        a, b = one[k].astype(np.float64), eight[k].astype(np.float64)
        s, n = terms[k]
        big = np.maximum(np.abs(a), np.abs(b)).astype(np.float32)
        # lr |g| is the update w0 - w' up to the last rounding: ulp(w') more at most
        w = w0[k].astype(np.float64)
        lrg = (np.maximum(np.abs(w - a), np.abs(w - b)) + np.spacing(big)).astype(np.float32)
        bound = LR * 2 * gamma(n - 1) * s * (1 + ETA) + np.spacing(lrg) + np.spacing(big)
        d = np.abs(a - b)
        ratio = float(np.max(d / bound))
        worst = max(worst, ratio)
        print("%-3s %-16s N=%-6d bits %s, largest difference %.3g = %.3f of its bound"
              % (k, str(w0[k].shape), n, "equal " if np.array_equal(one[k], eight[k]) else "differ",
                 float(d.max()), ratio))
        assert np.all(d <= bound), "%s: v3-8 differs from v3 beyond the summation-order bound" % k
    print("v3-8 (8 replicas) against v3 (one replica, global batch): within the bound, "
          "at most %.3f of it" % worst)


main()
