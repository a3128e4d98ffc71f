#!/usr/bin/env python3
"""bench/suite.py BUILD_DIR OUT.json: tpucc's benchmark suite (run by
bench/suite.sh, which builds first). For each workload it measures the
tpucc figure and its anchor in this run, on this machine, and prints a
markdown table (also written next to OUT.json as OUT.md). Groups:

  emulator  simulated bf16 MAC/s of the MXU kernel and of whole programs
            against OpenBLAS sgemm on the host (bench/emu_matmul);
  tpu-v2/v3 modelled MXU utilisation and roofline fraction of large
            matmuls, the transformer block (samples/transformer.tg),
            ResNet-50 convolution layers (bench/suite/resnet_*.tg), an MLP
            at batch 8 and 1024 and an elementwise chain, beside published
            figures of real TPUs (shared/docs/hardware.md);
  issue5-v3 issue 5's targets at full size (TPUCC_BENCH_ONLY=issue5 runs
            only them): the transformer block 8x512x1024 (bench/suite/
            transformer.tg.in) and ResNet-50's convolution layers at batch
            32 (RESNET50, bench/suite/resnet_conv.tg.in), count-weighted;
  cpu       the LLVM backend against OpenBLAS, a STREAM-like triad (bench/
            cpu_*), numpy (and PyTorch when installed);
  compile   `tpucc compile --emit=tpub -O2 --target=v3` of generated graphs
            of 1k, 10k and 100k instructions (medians) against linear
            scaling from the 1k graph, their growth against n log n, and
            ResNet-50 v1.5 inference as one graph (bench/suite/resnet50.py)
            against issue 13's half second; with TPUCC_BENCH_BASELINE (an
            older tpucc binary) each of them also beside that binary's
            compile of the same graph, interleaved in this run, and whether
            the two .tpub files are the same bytes.

  jit       each shipped sample run whole by `tpucc run` on the evaluator,
            on the cpu target with an empty compile cache (cold) and with
            a warm one (cached), interleaved, medians of
            TPUCC_BENCH_JIT_RUNS (default 5), the cold compile's phases.

A workload that cannot run prints "n/a (reason)", never a number it did
not measure. TPUCC_BENCH_ONLY=a,b (emulator, tpu, issue5, cpu, compile,
jit) runs the named groups only. Only the standard library is needed here; numpy and torch
anchors run in a subprocess of a python3 that has them."""
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build-bench"
OUT = sys.argv[2] if len(sys.argv) > 2 else "bench-results.json"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TPUCC = os.path.join(BUILD, "tools", "tpucc")
# An older tpucc (bench/suite.sh builds one from TPUCC_BENCH_BASELINE_REV):
# the compile group then also runs it, as the anchor measured in this run.
BASELINE = os.environ.get("TPUCC_BENCH_BASELINE") or None
BASELINE_NAME = os.environ.get("TPUCC_BENCH_BASELINE_REV") or BASELINE
TMP = tempfile.mkdtemp(prefix="tpucc-bench-")
ENV = dict(os.environ)
ENV.pop("OPENBLAS_CORETYPE", None)  # OpenBLAS picks its kernel at load time
ENV["OPENBLAS_NUM_THREADS"] = "1"   # single-thread comparisons throughout
ENV["OMP_NUM_THREADS"] = "1"

# Published figures (shared/docs/hardware.md; Jouppi et al. ISCA 2017 for
# v1, the TPUv4i paper ISCA 2021 for the v2/v3 production averages).
PUB = {
    "v1_mlp0": (0.125, "TPU v1 MLP0 useful MACs 12.5% (ISCA 2017)"),
    "v1_cnn0": (0.782, "TPU v1 CNN0 useful MACs 78.2% (ISCA 2017)"),
    "v2_avg": (0.51, "TPUv2 production average 51% of peak (ISCA 2021)"),
    "v3_avg": (0.38, "TPUv3 production average 38% of peak (ISCA 2021)"),
    "v2_roof": (0.66, "TPUv2 production average 66% of roofline (ISCA 2021)"),
    "v3_roof": (0.63, "TPUv3 production average 63% of roofline (ISCA 2021)"),
}

rows = []


def row(group, workload, metric, tpucc, anchor, anchor_what, unit="", note=""):
    r = {"group": group, "workload": workload, "metric": metric, "unit": unit,
         "tpucc": tpucc, "anchor": anchor, "anchor_source": anchor_what,
         "ratio": (tpucc / anchor) if isinstance(tpucc, (int, float)) and
         isinstance(anchor, (int, float)) and anchor else None, "note": note}
    rows.append(r)
    print("  %-8s %-28s %-22s %s" % (group, workload, metric, fmt(tpucc, unit)), flush=True)


def na(group, workload, metric, reason, anchor_what=""):
    row(group, workload, metric, "n/a (%s)" % reason, None, anchor_what)


def fmt(v, unit=""):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if unit == "%":
        return "%.1f%%" % (100 * v)
    if abs(v) >= 1e9:
        return "%.3g G%s" % (v / 1e9, unit)
    if abs(v) >= 1e6:
        return "%.3g M%s" % (v / 1e6, unit)
    return "%.3g %s" % (v, unit) if unit else "%.3g" % v


def sh(cmd, timeout=600):
    """Runs cmd; returns (ok, stdout, stderr or reason)."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV)
    except subprocess.TimeoutExpired:
        return False, "", "timeout after %d s" % timeout
    except OSError as e:
        return False, "", str(e)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
        return False, p.stdout, last[:120]
    return True, p.stdout, p.stderr


def exe(name):
    path = os.path.join(BUILD, "bench", name)
    return path if os.access(path, os.X_OK) else None


def template(name, **subs):
    with open(os.path.join(ROOT, "bench", "suite", name + ".tg.in")) as f:
        text = f.read()
    for k, v in subs.items():
        text = text.replace("@%s@" % k, str(v))
    path = os.path.join(TMP, "%s_%s.tg" % (name, "_".join(str(v) for v in subs.values())))
    with open(path, "w") as f:
        f.write(text)
    return path


# ---- emulator speed ----------------------------------------------------------

def emulator():
    print("emulator speed", flush=True)
    sgemm = None
    b = exe("emu_matmul")
    if not b:
        na("emulator", "mxu kernel 1024^3", "MAC/s", "bench/emu_matmul not built: needs OpenBLAS")
    else:
        ok, out, err = sh([b, "1024", "5"])
        m1 = re.search(r"^mxu\s+([\d.]+) GMAC/s", out, re.M)
        m2 = re.search(r"^sgemm\s+([\d.]+) GMAC/s", out, re.M)
        if ok and m1 and m2:
            sgemm = float(m2.group(1)) * 1e9
            row("emulator", "mxu kernel 1024^3 bf16", "simulated MAC/s", float(m1.group(1)) * 1e9,
                sgemm, "OpenBLAS sgemm 1024^3, 1 thread", "MAC/s")
        else:
            na("emulator", "mxu kernel 1024^3 bf16", "MAC/s", err or "unparsable output")
    # Whole programs: compile + run on v3, MACs / host seconds of execution.
    path = template("matmul", N=2048)
    js = os.path.join(TMP, "emu.json")
    ok, out, err = sh([TPUCC, "run", path, "--target=v3", "--random-inputs", "--output=",
                       "--stats-json=" + js])
    if ok:
        d = json.load(open(js))
        macs = d["flops"] / 2
        row("emulator", "tpucc run matmul 2048^3 (v3)", "simulated MAC/s",
            macs / d["host_seconds"], sgemm, "OpenBLAS sgemm 1024^3, 1 thread" if sgemm else
            "n/a (no OpenBLAS)", "MAC/s",
            "%.3g simulated cycles/s" % (d["cycles"] / d["host_seconds"]))
    else:
        na("emulator", "tpucc run matmul 2048^3 (v3)", "simulated MAC/s", err)


# ---- modelled TPU performance -------------------------------------------------

def tpu_run(path, target, name):
    js = os.path.join(TMP, "%s_%s.json" % (name, target))
    ok, out, err = sh([TPUCC, "run", path, "--target=" + target, "--random-inputs",
                       "--print-max-elements=1", "--output=", "--stats-json=" + js], timeout=900)
    if not ok:
        return None, err
    return json.load(open(js)), None


def tpu():
    work = [("matmul 1024^3", template("matmul", N=1024), "avg"),
            ("matmul 2048^3", template("matmul", N=2048), "avg"),
            ("transformer block (sample, 2x16x64)", os.path.join(ROOT, "samples", "transformer.tg"),
             "avg"),
            ("MLP batch 8", template("mlp", B=8), "v1_mlp0"),
            ("MLP batch 1024", template("mlp", B=1024), "avg")]
    for layer in ("conv1", "res2_1x1", "res2_3x3", "res3_3x3", "res4_3x3", "res5_3x3",
                  "res5_1x1"):
        work.append(("ResNet-50 " + layer + " b8",
                     os.path.join(ROOT, "bench", "suite", "resnet_%s.tg" % layer), "v1_cnn0"))
    work.append(("elementwise chain 2048^2", template("chain", N=2048), "roof"))
    for target in ("v2", "v3"):
        print("modelled TPU performance on %s" % target, flush=True)
        g = "tpu-" + target
        for name, path, anchor in work:
            d, err = tpu_run(path, target, re.sub(r"\W+", "_", name))
            if d is None:
                na(g, name, "MXU useful MACs", err)
                continue
            roof = d["roofline_seconds"] / d["seconds"] if d["seconds"] > 0 else None
            note = "%s-bound, %.0f cycles, %.3g FLOP/s" % (d["roofline_bound"], d["cycles"],
                                                          d["achieved_flops"])
            if anchor == "roof":
                a, what = PUB[target + "_roof"]
                note = "memory-bound, %.0f cycles, HBM %.0f GB/s" % (
                    d["cycles"], d["hbm_bytes"] / d["seconds"] / 1e9)
                row(g, name, "roofline fraction", roof, a, what, "%", note)
                continue
            a, what = PUB[anchor] if anchor != "avg" else PUB[target + "_avg"]
            row(g, name, "MXU useful MACs", d["mxu_useful_fraction"], a, what, "%", note)
            a, what = PUB[target + "_roof"]
            row(g, name, "roofline fraction", roof, a, what, "%", "")


# ---- issue 5 targets (v3) -------------------------------------------------------

# ResNet-50 (v1.5: stride 2 on the 3x3 of a stage's first block) convolution
# layers at batch 32, NHWC: every distinct shape once with how many of the
# network's 53 convolutions have it. (name, HW, CI, CO, R, S, P, count)
RESNET50 = [
    ("conv1 7x7/2 3->64", 224, 3, 64, 7, 2, 3, 1),
    ("res2 1x1 64->64", 56, 64, 64, 1, 1, 0, 1),
    ("res2 3x3 64->64", 56, 64, 64, 3, 1, 1, 3),
    ("res2 1x1 64->256 (+proj)", 56, 64, 256, 1, 1, 0, 4),
    ("res2 1x1 256->64", 56, 256, 64, 1, 1, 0, 2),
    ("res3 1x1 256->128", 56, 256, 128, 1, 1, 0, 1),
    ("res3 3x3/2 128->128", 56, 128, 128, 3, 2, 1, 1),
    ("res3 1x1 128->512", 28, 128, 512, 1, 1, 0, 4),
    ("res3 proj 1x1/2 256->512", 56, 256, 512, 1, 2, 0, 1),
    ("res3 1x1 512->128", 28, 512, 128, 1, 1, 0, 3),
    ("res3 3x3 128->128", 28, 128, 128, 3, 1, 1, 3),
    ("res4 1x1 512->256", 28, 512, 256, 1, 1, 0, 1),
    ("res4 3x3/2 256->256", 28, 256, 256, 3, 2, 1, 1),
    ("res4 1x1 256->1024", 14, 256, 1024, 1, 1, 0, 6),
    ("res4 proj 1x1/2 512->1024", 28, 512, 1024, 1, 2, 0, 1),
    ("res4 1x1 1024->256", 14, 1024, 256, 1, 1, 0, 5),
    ("res4 3x3 256->256", 14, 256, 256, 3, 1, 1, 5),
    ("res5 1x1 1024->512", 14, 1024, 512, 1, 1, 0, 1),
    ("res5 3x3/2 512->512", 14, 512, 512, 3, 2, 1, 1),
    ("res5 1x1 512->2048", 7, 512, 2048, 1, 1, 0, 3),
    ("res5 proj 1x1/2 1024->2048", 14, 1024, 2048, 1, 2, 0, 1),
    ("res5 1x1 2048->512", 7, 2048, 512, 1, 1, 0, 2),
    ("res5 3x3 512->512", 7, 512, 512, 3, 1, 1, 2),
]


def issue5():
    """The issue's v3 targets at full size: the transformer encoder block
    (batch 8, sequence 512, width 1024, 16 heads, MLP 4096) and ResNet-50's
    convolution layers at batch 32, averaged over the network's 53 layers
    (each distinct shape weighted by its count) and as the whole network's
    useful MACs over its summed cycles (time-weighted)."""
    print("issue 5 targets on v3", flush=True)
    g = "issue5-v3"
    path = template("transformer", B=8, S=512, D=1024, H=16, HD=64, F=4096)
    d, err = tpu_run(path, "v3", "transformer_full")
    if d is None:
        na(g, "transformer block 8x512x1024", "MXU useful MACs", err)
    else:
        row(g, "transformer block 8x512x1024, 16 heads, MLP 4096", "MXU useful MACs",
            d["mxu_useful_fraction"], 0.60, "issue 5 target", "%",
            "%s-bound, %.0f cycles, host %.1f s" % (d["roofline_bound"], d["cycles"],
                                                    d["host_seconds"]))
    tot_n = tot_u = tot_flops = tot_peak = 0.0
    missing = []
    for name, hw, ci, co, r, s, p, count in RESNET50:
        ohw = (hw + 2 * p - r) // s + 1
        path = template("resnet_conv", NAME=name.split()[0], N=32, HW=hw, CI=ci, CO=co, R=r,
                        S=s, P=p, OHW=ohw)
        d, err = tpu_run(path, "v3", "r50_" + re.sub(r"\W+", "_", name))
        wl = "ResNet-50 b32 %s x%d" % (name, count)
        if d is None:
            na(g, wl, "MXU useful MACs", err)
            missing.append(name)
            continue
        row(g, wl, "MXU useful MACs", d["mxu_useful_fraction"], None, "", "%",
            "%s-bound, %.0f cycles" % (d["roofline_bound"], d["cycles"]))
        tot_n += count
        tot_u += count * d["mxu_useful_fraction"]
        tot_flops += count * d["flops"]
        tot_peak += count * d["seconds"] * d["peak_flops"]
    if tot_n and not missing:
        row(g, "ResNet-50 b32 conv layers, mean over 53", "MXU useful MACs", tot_u / tot_n, 0.50,
            "issue 5 target", "%", "each distinct shape weighted by its count")
        row(g, "ResNet-50 b32 conv layers, whole network", "MXU useful MACs",
            tot_flops / tot_peak, 0.50, "issue 5 target", "%",
            "sum of FLOPs / (sum of seconds x peak), counts applied")


# ---- CPU backend -----------------------------------------------------------------

def numpy_python():
    """A python3 that imports numpy (the pyenv one may not), or None."""
    for p in ("/usr/bin/python3", shutil.which("python3")):
        if p and sh([p, "-c", "import numpy"])[0]:
            return p
    return None


NUMPY_MLP = r"""
import sys, time, numpy as np
B, runs = 256, int(sys.argv[1])
r = np.random.default_rng(1)
x = r.standard_normal((B, 784), dtype=np.float32)
w = [r.standard_normal(s, dtype=np.float32) * 0.05 for s in ((784, 1024), (1024, 1024), (1024, 10))]
b = [r.standard_normal(s, dtype=np.float32) for s in (1024, 1024, 10)]
def mlp():
    h = np.maximum(x @ w[0] + b[0], 0)
    h = np.maximum(h @ w[1] + b[1], 0)
    return h @ w[2] + b[2]
ts = []
for _ in range(runs):
    t = time.perf_counter(); mlp(); ts.append(time.perf_counter() - t)
print(sorted(ts)[runs // 2])
"""

NUMPY_CONV = r"""
import sys, time, numpy as np
from numpy.lib.stride_tricks import sliding_window_view
N, runs = 8, int(sys.argv[1])
r = np.random.default_rng(1)
x = r.standard_normal((N, 56, 56, 64), dtype=np.float32)
k = r.standard_normal((3, 3, 64, 64), dtype=np.float32)
def conv():
    p = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    v = sliding_window_view(p, (3, 3), axis=(1, 2))        # N,56,56,C,3,3
    return np.tensordot(v, k, axes=([4, 5, 3], [0, 1, 2])) # N,56,56,O
ts = []
for _ in range(runs):
    t = time.perf_counter(); conv(); ts.append(time.perf_counter() - t)
print(sorted(ts)[runs // 2])
"""

TORCH = r"""
import sys, time, torch
torch.set_num_threads(1)
what, runs = sys.argv[1], int(sys.argv[2])
g = torch.Generator().manual_seed(1)
if what == "mlp":
    x = torch.randn(256, 784, generator=g)
    w = [torch.randn(*s, generator=g) * 0.05 for s in ((784, 1024), (1024, 1024), (1024, 10))]
    b = [torch.randn(s, generator=g) for s in (1024, 1024, 10)]
    f = lambda: torch.relu(torch.relu(x @ w[0] + b[0]) @ w[1] + b[1]) @ w[2] + b[2]
else:
    x = torch.randn(8, 64, 56, 56, generator=g)
    k = torch.randn(64, 64, 3, 3, generator=g)
    f = lambda: torch.nn.functional.conv2d(x, k, padding=1)
ts = []
with torch.no_grad():
    for _ in range(runs):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
print(sorted(ts)[runs // 2])
"""


def cpu():
    print("CPU backend", flush=True)
    runs = "5"
    b = exe("cpu_matmul")
    if b:
        ok, out, err = sh([b, "1024", runs, "1"])
        m = re.search(r"tpucc cpu ([\d.]+) GFLOP/s, OpenBLAS sgemm ([\d.]+) GFLOP/s", out)
        if ok and m:
            row("cpu", "matmul 1024^3 f32, 1 thread", "FLOP/s", float(m.group(1)) * 1e9,
                float(m.group(2)) * 1e9, "OpenBLAS sgemm, 1 thread", "FLOP/s")
        else:
            na("cpu", "matmul 1024^3 f32, 1 thread", "FLOP/s", err or "unparsable output")
    else:
        na("cpu", "matmul 1024^3 f32", "FLOP/s", "bench/cpu_matmul not built: needs LLVM and OpenBLAS")
    b = exe("cpu_elementwise")
    if b:
        ok, out, err = sh([b, "16", runs, "1"])
        m = re.search(r"= ([\d.]+) GB/s, triad [\d.]+ ms = ([\d.]+) GB/s", out)
        if ok and m:
            row("cpu", "chain relu(x*a+b)*c 16M, 1 thread", "bytes/s", float(m.group(1)) * 1e9,
                float(m.group(2)) * 1e9, "STREAM-like triad in C (-O3), 1 thread", "B/s")
        else:
            na("cpu", "elementwise chain", "bytes/s", err or "unparsable output")
    else:
        na("cpu", "elementwise chain", "bytes/s", "bench/cpu_elementwise not built: needs LLVM")
    npy = numpy_python()
    have_torch = bool(npy) and sh([npy, "-c", "import torch"])[0]
    for what, binary, script, label in (
            ("mlp", "cpu_mlp", NUMPY_MLP, "MLP 784-1024-1024-10 b256, 1 thread"),
            ("conv", "cpu_conv", NUMPY_CONV, "conv 3x3 56x56x64->64 b8, 1 thread")):
        b = exe(binary)
        t_tpucc = None
        if not b:
            na("cpu", label, "seconds", "bench/%s not built: needs LLVM and OpenBLAS" % binary)
        else:
            ok, out, err = sh([b, runs, "1"])
            m = re.search(r"tpucc cpu ([\d.]+) ms", out)
            if ok and m:
                t_tpucc = float(m.group(1)) * 1e-3
            else:
                na("cpu", label, "seconds", err or "unparsable output")
        if t_tpucc is None:
            continue
        if npy:
            ok, out, err = sh([npy, "-c", script, runs])
            if ok:
                a = float(out.strip())
                # ratio: anchor time / tpucc time (> 1: tpucc faster); store as speeds
                row("cpu", label, "runs/s (1/median)", 1 / t_tpucc, 1 / a, "numpy (%s), 1 thread"
                    % npy, "/s", "tpucc %.2f ms, numpy %.2f ms" % (t_tpucc * 1e3, a * 1e3))
            else:
                row("cpu", label, "runs/s (1/median)", 1 / t_tpucc, "n/a (numpy: %s)" % err,
                    "numpy", "/s")
        else:
            row("cpu", label, "runs/s (1/median)", 1 / t_tpucc, "n/a (python3-numpy absent)",
                "numpy", "/s")
        if have_torch:
            ok, out, err = sh([npy, "-c", TORCH, what, runs])
            if ok:
                a = float(out.strip())
                row("cpu", label, "runs/s vs PyTorch", 1 / t_tpucc, 1 / a, "PyTorch CPU, 1 thread",
                    "/s", "tpucc %.2f ms, torch %.2f ms" % (t_tpucc * 1e3, a * 1e3))
            else:
                na("cpu", label, "runs/s vs PyTorch", "torch: " + err)
        else:
            na("cpu", label, "runs/s vs PyTorch", "python3-torch not installed: skipped")


# ---- compile time -------------------------------------------------------------------

def gen_graph(n, path):
    """An HLO module of n instructions: two parameters and a random DAG of
    elementwise ops on f32[8,128] reading recent values."""
    r = random.Random(n)
    ops = ("add", "multiply", "subtract", "maximum")
    lines = ["HloModule gen%d" % n, "", "ENTRY main {",
             "  p0 = f32[8,128]{1,0} parameter(0)", "  p1 = f32[8,128]{1,0} parameter(1)"]
    names = ["p0", "p1"]
    for i in range(n - 2):
        a = names[-1 - r.randrange(min(8, len(names)))]
        root = "ROOT " if i == n - 3 else ""
        if r.random() < 0.2:
            lines.append("  %sv%d = f32[8,128]{1,0} tanh(%s)" % (root, i, a))
        else:
            b = names[-1 - r.randrange(min(64, len(names)))]
            lines.append("  %sv%d = f32[8,128]{1,0} %s(%s, %s)" % (root, i, r.choice(ops), a, b))
        names.append("v%d" % i)
    lines.append("}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def run_child(cmd, timeout, env=None):
    """Runs cmd (in env, default ENV); returns (ok, stderr or reason, wall
    s, CPU s (user + sys), peak RSS bytes) of that one child (os.wait4)."""
    with tempfile.TemporaryFile() as eout:
        t0 = time.perf_counter()
        try:
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=eout, env=env or ENV)
        except OSError as e:
            return False, str(e), 0, 0, 0
        deadline = t0 + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                p.kill()
                os.wait4(p.pid, 0)
                return False, "timeout after %d s" % timeout, 0, 0, 0
            time.sleep(0.002)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        eout.seek(0)
        err = eout.read().decode(errors="replace")
    if p.returncode != 0:
        return False, (err.strip().splitlines() or ["exit %d" % p.returncode])[-1][:120], 0, 0, 0
    return True, err, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024


def timed(cmds, runs, timeout=600):
    """Runs each command of cmds `runs` times, interleaved (a, b, a, b, ...:
    both see the same load); returns per command (median wall s, median CPU
    s of the child (user + sys), median passes s from --time-passes, peak
    RSS bytes, error)."""
    res = [([], [], [], []) for _ in cmds]
    errs = [None for _ in cmds]
    for _ in range(runs):
        for k, cmd in enumerate(cmds):
            if errs[k]:
                continue
            ok, err, wall, cpu, rss = run_child(cmd, timeout)
            if not ok:
                errs[k] = err
                continue
            m = re.search(r"^\s*total\s+([\d.]+) ms", err, re.M)
            for v, x in zip(res[k], (wall, cpu, float(m.group(1)) * 1e-3 if m else 0.0, rss)):
                v.append(x)
    med = lambda v: sorted(v)[len(v) // 2]
    return [(None, None, None, None, errs[k]) if errs[k] else
            (med(r[0]), med(r[1]), med(r[2]), max(r[3]), None) for k, r in enumerate(res)]


def compile_cmd(path, out, tpucc=None):
    return [tpucc or TPUCC, "compile", path, "--emit=tpub", "--target=v3", "-O2", "--time-passes",
            "-o", out]


def same_file(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


def compile_pair(path, name, runs):
    """Compiles path with tpucc and, when TPUCC_BENCH_BASELINE names an
    older tpucc, with it too (runs interleaved); the baseline's row has the
    old binary's rate as its anchor and says whether the two .tpub files
    are the same bytes. Returns tpucc's (wall, cpu, passes, rss, err) and
    the .tpub path."""
    out = os.path.join(TMP, "new.tpub")
    cmds = [compile_cmd(path, out)]
    if BASELINE:
        cmds.append(compile_cmd(path, os.path.join(TMP, "base.tpub"), BASELINE))
    res = timed(cmds, runs)
    if BASELINE:
        (w, c, p, m, e), (bw, bc, bp, bm, be) = res
        label = name + ", vs baseline"
        if e or be:
            na("compile", label, "compiles/s", e or "baseline: " + be)
        else:
            same = same_file(out, os.path.join(TMP, "base.tpub"))
            row("compile", label, "compiles/s", 1 / w, 1 / bw,
                "the same compile by the baseline tpucc (%s), same run" % BASELINE_NAME, "/s",
                "median of %d, interleaved: %.3f s vs %.3f s wall, %.3f s vs %.3f s CPU, "
                "peak RSS %.0f vs %.0f MB; .tpub %s" % (
                    runs, w, bw, c, bc, m / 1e6, bm / 1e6,
                    "identical" if same else "DIFFERENT"))
    return res[0], out


def compile_time():
    """Generated graphs of 1k, 10k and 100k instructions (median of several
    runs each), the growth between sizes as an exponent of n and against
    n log n, and ResNet-50 v1.5 inference as one graph (bench/suite/
    resnet50.py); every figure is parse + -O2 passes + v3 lowering + the
    .tpub write, wall time (CPU time in the notes)."""
    print("compile time", flush=True)
    runs = {1000: 7, 10000: 5, 100000: 3}
    t = {}
    for n in (1000, 10000, 100000):
        path = os.path.join(TMP, "gen%d.hlo" % n)
        gen_graph(n, path)
        name = "generated graph %dk instructions" % (n // 1000)
        (wall, cpu, passes, rss, err), _ = compile_pair(path, name, runs[n])
        if wall is None:
            na("compile", name, "instructions/s", err)
            continue
        t[n] = (wall, cpu)
        note = "median of %d: %.3f s (-O2 passes %.3f s, parse + lowering + write %.3f s); " \
               "CPU %.3f s; peak RSS %.0f MB" % (runs[n], wall, passes, wall - passes, cpu,
                                                rss / 1e6)
        if n == 1000:
            row("compile", name, "instructions/s", n / wall, None,
                "reference point of the scaling anchor", "/s", note)
        else:
            # anchor: linear scaling from the 1k graph (ratio 1 = linear time)
            row("compile", name, "instructions/s", n / wall, 1000 / t[1000][0],
                "1k graph's rate (linear scaling)", "/s", note)
    for a, b in ((1000, 10000), (10000, 100000)):
        if a not in t or b not in t:
            continue
        nlogn = (b * math.log(b)) / (a * math.log(a))
        gw, gc = t[b][0] / t[a][0], t[b][1] / t[a][1]
        row("compile", "growth %dk -> %dk" % (a // 1000, b // 1000), "time ratio", gw, nlogn,
            "n log n ratio (tpucc / anchor <= 1: no worse than n log n)", "",
            "exponent of n %.2f (wall), %.2f (CPU, ratio %.2f)" % (
                math.log(gw) / math.log(b / a), math.log(gc) / math.log(b / a), gc))
    sys.path.insert(0, os.path.join(ROOT, "bench", "suite"))
    import resnet50
    path = os.path.join(TMP, "resnet50.tg")
    with open(path, "w") as f:
        f.write(resnet50.resnet50(32))
    name = "ResNet-50 v1.5 inference b32, whole graph"
    (wall, cpu, passes, rss, err), out = compile_pair(path, name, 5)
    if wall is None:
        na("compile", name, "compiles/s", err)
    else:
        size = os.path.getsize(out)
        row("compile", name, "compiles/s", 1 / wall, 2.0, "issue 13 target: at most 0.5 s", "/s",
            "median of 5: %.3f s (-O2 passes %.3f s); CPU %.3f s; peak RSS %.0f MB; "
            ".tpub %.1f MB" % (wall, passes, cpu, rss / 1e6, size / 1e6))


# ---- cpu target start-up: cold and cached JIT against the evaluator ---------------

def jit():
    """Each shipped sample (samples/*.tg) run whole by `tpucc run` (process
    start, parse, -O2 passes, compile, run, print), interleaved: on the
    evaluator, on the cpu target with an empty compile cache (cold: a fresh
    directory per run; with one compile thread, and with the default, one
    per CPU) and with a warm one (cached). Medians of wall time; the ratios
    against the evaluator are issue 18's (cold <= 3, cached <= 1.5). The
    cold run's --stats-json gives where its compile time went."""
    print("cpu target start-up (cold and cached JIT vs the evaluator)", flush=True)
    runs = int(os.environ.get("TPUCC_BENCH_JIT_RUNS", "5"))
    samples = sorted(f for f in os.listdir(os.path.join(ROOT, "samples")) if f.endswith(".tg"))
    for name in samples:
        path = os.path.join(ROOT, "samples", name)
        warm = os.path.join(TMP, "jit-warm-" + name)
        base = [TPUCC, "run", path, "--random-inputs", "--output="]
        ok, _, err = sh(base + ["--target=cpu", "--cache-dir=" + warm])  # fills the cache
        if not ok:
            na("jit", name, "seconds", err)
            continue
        t = {"interp": [], "cold1": [], "cold": [], "cached": []}
        cpu_t = {"interp": [], "cold1": [], "cold": [], "cached": []}
        env1 = dict(ENV, TPUCC_CPU_COMPILE_THREADS="1")
        phases = []
        failed = None
        for i in range(runs):
            cold_dir = os.path.join(TMP, "jit-cold-%s-%d" % (name, i))
            js = os.path.join(TMP, "jit-%s-%d.json" % (name, i))
            for kind, cmd, env in (
                    ("interp", base + ["--target=interp"], None),
                    ("cold1", base + ["--target=cpu", "--no-cache"], env1),
                    ("cold", base + ["--target=cpu", "--cache-dir=" + cold_dir,
                                     "--stats-json=" + js], None),
                    ("cached", base + ["--target=cpu", "--cache-dir=" + warm], None)):
                ok, err, wall, cpu_s, _ = run_child(cmd, 600, env)
                if not ok:
                    failed = err
                    break
                t[kind].append(wall)
                cpu_t[kind].append(cpu_s)
            if failed:
                break
            d = json.load(open(js))
            phases.append((d["lower_seconds"], d["opt_seconds"], d["codegen_seconds"],
                           d["link_seconds"], d["cache_seconds"], d["compile_seconds"],
                           d["build_seconds"], d["part_max_seconds"], d["parts"]))
            shutil.rmtree(cold_dir, ignore_errors=True)
        if failed:
            na("jit", name, "seconds", failed)
            continue
        med = lambda v: sorted(v)[len(v) // 2]
        ti, tc, tw = med(t["interp"]), med(t["cold"]), med(t["cached"])
        t1 = med(t["cold1"])
        ph = [med([p[k] for p in phases]) for k in range(9)]
        row("jit", name + " cold, 1 compile thread", "seconds (wall, median)", t1, ti,
            "tpucc run --target=interp, same run", "s",
            "median of %d; ratio = cpu / interp: %.2f; CPU time %.3f vs %.3f s"
            % (runs, t1 / ti, med(cpu_t["cold1"]), med(cpu_t["interp"])))
        row("jit", name + " cold", "seconds (wall, median)", tc, ti,
            "tpucc run --target=interp, same run", "s",
            "median of %d; ratio = cpu / interp: %.2f (goal <= 3); CPU time %.3f vs %.3f s; "
            "compile %.3f s = lower %.3f + optimise and codegen %.3f in %d parts (CPU: optimise "
            "%.3f, codegen %.3f, costliest part %.3f) + link %.3f + cache %.3f"
            % (runs, tc / ti, med(cpu_t["cold"]), med(cpu_t["interp"]), ph[5], ph[0], ph[6],
               ph[8], ph[1], ph[2], ph[7], ph[3], ph[4]))
        row("jit", name + " cached", "seconds (wall, median)", tw, ti,
            "tpucc run --target=interp, same run", "s",
            "median of %d; ratio = cpu / interp: %.2f (goal <= 1.5); CPU time %.3f vs %.3f s"
            % (runs, tw / ti, med(cpu_t["cached"]), med(cpu_t["interp"])))


def table():
    out = ["| group | workload | metric | tpucc | anchor (same run) | ratio | anchor is | note |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = "%.3f" % r["ratio"] if r["ratio"] is not None else "-"
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["group"], r["workload"], r["metric"], fmt(r["tpucc"], r["unit"]),
            fmt(r["anchor"], r["unit"]), ratio, r["anchor_source"], r["note"]))
    return "\n".join(out)


def machine():
    model = "?"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return model, os.cpu_count(), open("/proc/loadavg").read().split()[:3]


def host_isa():
    """The widest x86 vector ISA the host offers ("avx512f", "avx2",
    "sse4.2", ...) from /proc/cpuinfo, or the machine name elsewhere:
    figures from hosts of different ISAs are not comparable."""
    flags = set()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith(("flags", "Features")):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    for isa in ("avx512f", "avx2", "avx", "sse4_2"):
        if isa in flags:
            return isa.replace("_", ".")
    return os.uname().machine


def main():
    if not os.access(TPUCC, os.X_OK):
        sys.exit("suite.py: %s is not built" % TPUCC)
    model, ncpu, load = machine()
    isa = host_isa()
    t0 = time.time()
    print("machine: %s (%s), %d cpus, load %s" % (model, isa, ncpu, " ".join(load)), flush=True)
    only = os.environ.get("TPUCC_BENCH_ONLY", "emulator,tpu,issue5,cpu,compile,jit").split(",")
    for name, fn in (("emulator", emulator), ("tpu", tpu), ("issue5", issue5), ("cpu", cpu),
                     ("compile", compile_time), ("jit", jit)):
        if name in only:
            fn()
    secs = time.time() - t0
    md = table()
    head = ("machine: %s (%s), %d cpus, load at start %s; suite %.0f s; ratio = tpucc / anchor "
            "(higher is better for tpucc except where the anchor is a published utilisation, "
            "where 1 means the same share of peak)" % (model, isa, ncpu, " ".join(load), secs))
    print()
    print(head)
    print()
    print(md)
    with open(OUT, "w") as f:
        json.dump({"machine": model, "isa": isa, "cpus": ncpu, "load": load, "seconds": secs,
                   "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": rows},
                  f, indent=1)
    with open(os.path.splitext(OUT)[0] + ".md", "w") as f:
        f.write(head + "\n\n" + md + "\n")
    shutil.rmtree(TMP, ignore_errors=True)


main()
