#!/usr/bin/python3
"""bench/train_torch.py THREADS [EPOCHS] [mlp|cnn] [STEPS]: the PyTorch anchor of
`tpucc train` (docs/performance.md, "Training"): the model and defaults of
samples/train/fashion_mlp.tg (mlp, the default) or fashion_cnn.tg (cnn) in
torch, one epoch of Fashion-MNIST on THREADS threads (STEPS: only the
first STEPS steps of each epoch).

mlp: 784-256-128-10 (Linear+ReLU, Linear+ReLU, Linear); cnn: conv 3x3x32
+ ReLU, 2x2 max-pool, conv 3x3x64 + ReLU, 2x2 max-pool, dense 1600-128 +
ReLU, dense 128-10, channels-last as tpucc runs it. Glorot-uniform
weights and zero biases, batch 128 with the short last batch dropped,
cross-entropy summed over the batch and divided by 128, torch.optim.Adam
(lr 0.001) with a per-step cosine decay over the run, pixels / 255, the
data shuffled each epoch, f32. The data sit in memory as tensors
before the clock starts (tpucc train's loader prefetches on a thread).
Prints one JSON line: images per second (wall), process CPU seconds
(every thread), the final test accuracy. Run with Debian's python3-torch."""
import gzip
import json
import math
import sys
import time

import numpy as np
import torch

FM = "/usr/share/datasets/fashion-mnist/"


def idx(name, offset):
    with gzip.open(FM + name) as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def main():
    threads = int(sys.argv[1])
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    kind = sys.argv[3] if len(sys.argv) > 3 else "mlp"
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    xtr = torch.tensor(idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 784) / 255.0, dtype=torch.float32)
    ytr = torch.tensor(idx("train-labels-idx1-ubyte.gz", 8).astype(np.int64))
    xte = torch.tensor(idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 784) / 255.0, dtype=torch.float32)
    yte = torch.tensor(idx("t10k-labels-idx1-ubyte.gz", 8).astype(np.int64))
    if kind == "cnn":
        model = torch.nn.Sequential(torch.nn.Unflatten(1, (1, 28, 28)), torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(),
                                    torch.nn.MaxPool2d(2), torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(),
                                    torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(1600, 128),
                                    torch.nn.ReLU(), torch.nn.Linear(128, 10))
        model = model.to(memory_format=torch.channels_last)
    else:
        model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
                                    torch.nn.ReLU(), torch.nn.Linear(128, 10))
    for m in model:
        if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)):
            torch.nn.init.xavier_uniform_(m.weight)
            torch.nn.init.zeros_(m.bias)
    batch, steps = 128, len(xtr) // 128
    if len(sys.argv) > 4:
        steps = min(steps, int(sys.argv[4]))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    total = steps * epochs
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    lossf = torch.nn.CrossEntropyLoss(reduction="sum")
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(epochs):
        perm = torch.randperm(len(xtr))
        for s in range(steps):
            i = perm[s * batch:(s + 1) * batch]
            opt.zero_grad()
            loss = lossf(model(xtr[i]), ytr[i]) / batch
            loss.backward()
            opt.step()
            sched.step()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    with torch.no_grad():
        acc = (model(xte).argmax(1) == yte).float().mean().item()
    print(json.dumps({"threads": threads, "images_per_second": steps * epochs * batch / wall,
                      "seconds": wall, "cpu_seconds": cpu, "test_accuracy": acc}))


main()
