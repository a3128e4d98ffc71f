#!/usr/bin/python3
"""optim_torch.py TEST_TRAIN_OPTIM: the optimizer library against PyTorch's
torch.optim itself (SGD with and without momentum, Nesterov and weight
decay, Adam, AdamW, clip_grad_norm_): four steps on a f32[5] and a
f32[2,3] parameter with the gradients of test_optim.c's grad_at, the
library run by `test_train_optim --dump` on the evaluator. Exit 77 (skip)
when torch is not importable."""
import math
import subprocess
import sys

try:
    import torch
except ImportError:
    print("SKIP: no torch")
    sys.exit(77)

N0, N1, STEPS = 5, 6, 4
CASES = [("sgd", 0.1, 0, 0), ("sgd", 0.1, 0.01, 0), ("momentum", 0.05, 0, 0), ("nesterov", 0.05, 0.02, 0),
         ("adam", 0.01, 0, 0), ("adam", 0.01, 0.05, 0), ("adamw", 0.01, 0.1, 0), ("adam", 0.02, 0, 0.5),
         ("sgd", 0.3, 0, 1.0)]


def torch_run(opt, lr, wd, clip):
    w0 = torch.tensor([0.1 * i - 0.4 for i in range(N0)], dtype=torch.float32, requires_grad=True)
    w1 = torch.tensor([0.1 * i - 0.4 for i in range(N0, N0 + N1)], dtype=torch.float32).reshape(2, 3)
    w1.requires_grad_(True)
    ps = [w0, w1]
    if opt == "sgd":
        o = torch.optim.SGD(ps, lr=lr, weight_decay=wd)
    elif opt in ("momentum", "nesterov"):
        o = torch.optim.SGD(ps, lr=lr, momentum=0.9, nesterov=opt == "nesterov", weight_decay=wd)
    elif opt == "adam":
        o = torch.optim.Adam(ps, lr=lr, weight_decay=wd)
    else:
        o = torch.optim.AdamW(ps, lr=lr, weight_decay=wd)
    rows = []
    for step in range(STEPS):
        g = [math.sin(1.7 * i + 0.9 * step) * (1 + 0.3 * i) for i in range(N0 + N1)]
        w0.grad = torch.tensor(g[:N0], dtype=torch.float32)
        w1.grad = torch.tensor(g[N0:], dtype=torch.float32).reshape(2, 3)
        if clip:
            torch.nn.utils.clip_grad_norm_(ps, clip)
        o.step()
        rows.append([float(v) for v in w0.detach()] + [float(v) for v in w1.detach().reshape(-1)])
    return rows


bad = 0
for opt, lr, wd, clip in CASES:
    out = subprocess.run([sys.argv[1], "--dump", opt, repr(lr), repr(wd), repr(clip)], capture_output=True,
                         text=True, check=True).stdout.split("\n")
    ours = [[float(v) for v in line.split()] for line in out if line.strip()]
    ref = torch_run(opt, lr, wd, clip)
    # The C test's tolerance: 2e-6 relative plus 2e-7 absolute (for weights near 0).
    worst = max(abs(a - b) / (2e-6 * abs(b) + 2e-7) for ra, rb in zip(ours, ref) for a, b in zip(ra, rb))
    ok = len(ours) == STEPS and worst <= 1
    bad += not ok
    print("%-8s lr=%g wd=%g clip=%g: worst difference %.3f of the tolerance %s" % (opt, lr, wd, clip, worst,
                                                                           "ok" if ok else "FAIL"))
sys.exit(1 if bad else 0)
