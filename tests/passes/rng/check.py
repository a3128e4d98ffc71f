#!/usr/bin/env python3
"""check.py TPUCC DIR: rng (passes/expand.c: a constant of standard values
and f32 ops) on DIR/rng.hlo for three (a, b) pairs: cpu (-O2 and -O0) and
v3 print exactly what interp prints; uniform values lie in [a, b), the
s32 ones in [-5, 10) with every value drawn; the 4099 normal values have
mean a and deviation b within 5 standard errors."""
import re
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("skipped: numpy is not installed")
    sys.exit(77)

tpucc, d = sys.argv[1], sys.argv[2]


def run(target, a, b, level="-O2"):
    cmd = [tpucc, "run", f"{d}/rng.hlo", f"--target={target}", level, "--print-max-elements=0",
           f"--input=f32={a}",
           f"--input=f32={b}"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"FAIL {target}: {out.stderr}")
    return out.stdout


failures = 0
for a, b in ((0.0, 1.0), (-1.5, 2.25), (3.0, 0.5)):
    ref = run("interp", a, b)
    for t, lv in (("cpu", "-O2"), ("cpu", "-O0"), ("v3", "-O2")):
        if run(t, a, b, lv) != ref:
            print(f"FAIL ({a}, {b}): {t} {lv} differs from interp")
            failures += 1
    vals = [np.array([float(x) for x in re.findall(r"[-+0-9.e]+", line.split("=", 1)[1])])
            for line in ref.splitlines()]
    u, n, k = vals[0], vals[1], vals[3]
    lo, hi = min(a, b), max(a, b)
    if not (np.all(u >= lo) and np.all(u <= hi)):
        print(f"FAIL ({a}, {b}): uniform outside [{lo}, {hi}]")
        failures += 1
    if not (np.all(k >= -5) and np.all(k < 10) and len(set(k)) == 15):
        print(f"FAIL ({a}, {b}): s32 uniform values {sorted(set(k))}")
        failures += 1
    se = abs(b) / np.sqrt(len(n))
    if abs(n.mean() - a) > 5 * se or abs(n.std() - abs(b)) > 5 * se * 1.5:
        print(f"FAIL ({a}, {b}): normal mean {n.mean()} std {n.std()}")
        failures += 1
print(f"3 pairs, {failures} failures")
sys.exit(1 if failures else 0)
