#!/usr/bin/env python3
"""check.py TPUCC DIR: the batch-norm expander (passes/batchnorm.c) on
DIR/bn.hlo (training, inference on its mean and variance, grad) for
random inputs of three seeds: interp against numpy's float64 formulas
(|d| <= 2e-5 * (1 + |ref|)), cpu bit-exact with interp (-O2 and -O0: the expander runs at
every level), v3 within the
documented TPU tolerance of interp (|d| <= 1e-5 * (1 + |ref|): rsqrt and
divide on the vector unit, docs/numerics.md)."""
import re
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("skipped: numpy is not installed")
    sys.exit(77)

tpucc, d = sys.argv[1], sys.argv[2]
EPS, FI = 0.001, 1


def fmt(a):
    dims = "x".join(str(n) for n in a.shape)
    return f"{dims}xf32=" + " ".join(repr(float(v)) for v in a.astype(np.float32).ravel())


def run(target, args, level="-O2"):
    cmd = [tpucc, "run", f"{d}/bn.hlo", f"--target={target}", level] + [f"--input={fmt(a)}" for a in args]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"FAIL {target}: {out.stderr}")
    vals = []
    for line in out.stdout.splitlines():
        body = line.split("=", 1)[1]
        vals.append(np.array([float(t) for t in re.findall(r"[-+0-9.eEinfa]+", body)], np.float64))
    return vals


def oracle(x, s, o, dy):
    x, s, o, dy = (a.astype(np.float64) for a in (x, s, o, dy))
    ax = (0, 2)
    b = lambda v: v.reshape(1, -1, 1)
    n = x.size / x.shape[FI]
    mean = x.mean(axis=ax)
    var = (x * x).mean(axis=ax) - mean * mean
    y = (x - b(mean)) / np.sqrt(b(var) + EPS) * b(s) + b(o)
    r = 1 / np.sqrt(var + EPS)
    xm = x - b(mean)
    doff = dy.sum(axis=ax)
    sm = (dy * xm).sum(axis=ax)
    dx = b(s * r / n) * (dy * n - b(doff) - xm * b(sm) / b(var + EPS))
    return [y, mean, var, y, dx, sm * r, doff]


failures = 0
for seed in (1, 2, 3):
    rng = np.random.default_rng(seed)
    args = [rng.normal(size=(2, 3, 2)).astype(np.float32) * 2 + 0.5,
            rng.normal(size=3).astype(np.float32), rng.normal(size=3).astype(np.float32),
            rng.normal(size=(2, 3, 2)).astype(np.float32)]
    ref = [r.ravel() for r in oracle(*args)]
    got = {t: run(t, args) for t in ("interp", "cpu", "v3")}
    got["cpu -O0"] = run("cpu", args, "-O0")
    for k, (r, g) in enumerate(zip(ref, got["interp"])):
        if not np.all(np.abs(g - r) <= 2e-5 * (1 + np.abs(r))):
            print(f"FAIL seed {seed} result {k}: interp {g} numpy {r}")
            failures += 1
    for t in ("cpu", "cpu -O0"):
        if any(not np.array_equal(a, b) for a, b in zip(got[t], got["interp"])):
            print(f"FAIL seed {seed}: {t} differs from interp")
            failures += 1
    for k, (a, b) in enumerate(zip(got["v3"], got["interp"])):
        if not np.all(np.abs(a - b) <= 1e-5 * (1 + np.abs(b))):
            print(f"FAIL seed {seed} result {k}: v3 {a} interp {b}")
            failures += 1
print(f"3 seeds, {failures} failures")
sys.exit(1 if failures else 0)
