#!/usr/bin/python3
"""bench/cpu_torch.py RUNS THREADS [MLP_MS CONV_MS [MLP_CPU_MS CONV_CPU_MS]]: the PyTorch
CPU anchors of docs/performance.md ("CPU backend"), run by bench/cpu.sh
right after cpu_mlp and cpu_conv on the same thread count:

  MLP inference 784-1024-1024-10, batch 256, f32 (Linear+ReLU, Linear+ReLU,
  Linear) under torch.no_grad();
  3x3 convolution 64->64 channels, 56x56, batch 8, padding 1, f32, input and
  weights in torch.channels_last memory format.

torch.set_num_threads(THREADS); two warm-up runs, then the median of RUNS,
of wall time and of process CPU time (time.process_time, all threads: the
figure that does not count waiting for a CPU on a shared machine, as
bench/cpu_bench.h measures tpucc). Given tpucc's median times (ms, from
cpu_mlp / cpu_conv: wall, then CPU time), prints the ratios torch / tpucc
(above 1: tpucc faster). Run with the Debian python3-torch: /usr/bin/python3."""
import statistics
import sys
import time

import torch


def median_ms(fn, runs):
    """(median wall ms, median process CPU ms) of fn over runs."""
    for _ in range(2):
        fn()
    ts, cs = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        ts.append(time.perf_counter() - t0)
        cs.append(time.process_time() - c0)
    return statistics.median(ts) * 1e3, statistics.median(cs) * 1e3


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    ours = [float(x) for x in sys.argv[3:7]]
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    with torch.no_grad():
        mlp = torch.nn.Sequential(
            torch.nn.Linear(784, 1024), torch.nn.ReLU(),
            torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
            torch.nn.Linear(1024, 10)).eval()
        x = torch.rand(256, 784) * 2 - 1
        mlp_ms = median_ms(lambda: mlp(x), runs)
        conv = torch.nn.Conv2d(64, 64, 3, padding=1, bias=False).eval()
        conv = conv.to(memory_format=torch.channels_last)
        xi = (torch.rand(8, 64, 56, 56) * 2 - 1).to(memory_format=torch.channels_last)
        y = conv(xi)
        assert y.is_contiguous(memory_format=torch.channels_last)
        conv_ms = median_ms(lambda: conv(xi), runs)
    ver = torch.__version__
    line = f"torch {ver} threads={threads} runs={runs}: mlp {mlp_ms[0]:.2f} ms [CPU time {mlp_ms[1]:.2f} ms]"
    if len(ours) > 0:
        line += f" (torch/tpucc {mlp_ms[0] / ours[0]:.2f}"
        if len(ours) > 2:
            line += f", CPU time {mlp_ms[1] / ours[2]:.2f}"
        line += ")"
    line += f", conv3x3 channels-last {conv_ms[0]:.2f} ms [CPU time {conv_ms[1]:.2f} ms]"
    if len(ours) > 1:
        line += f" (torch/tpucc {conv_ms[0] / ours[1]:.2f}"
        if len(ours) > 3:
            line += f", CPU time {conv_ms[1] / ours[3]:.2f}"
        line += ")"
    print(line, flush=True)


if __name__ == "__main__":
    main()
