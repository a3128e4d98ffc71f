#!/usr/bin/env python3
"""train_cpu.py: `tpucc train --target=cpu`, and on a v3-8 board and a v3-32
pod, under mpirun.

  train_cpu.py MPIRUN TPUCC MODEL WORKDIR CASE

CASE:
  tpu-same   2 SGD steps of the MLP on 64 random images (8 per core) on
             --target=v3-8 --replicas=8, each step followed by an
             evaluation: one process, 2 ranks emulating 4 cores each and 4
             ranks of 2 write byte-identical checkpoints and the same report
             lines (rank 0 alone prints); every rank emulated its cores
             with the others' (TPUCC_MPI_TIMES: the same number of
             exchanges between the cores on each rank, more than none)
  tpu-pod    the same on the 32 cores of a v3-32 pod (2 images per core;
             2 ranks of 16 cores and 4 of 8)
  tpu-cores  --target=v3-8 without --replicas under 2 ranks: refused,
             asking for the board's cores
  same    24 SGD steps of 2 x 32 examples: 2 ranks (one replica each) and 2
          thread-replicas in one process write byte-identical checkpoints,
          and rank 0 alone prints (the same report lines)
  die     rank 1 is killed (SIGKILL) mid-training: the run ends, naming it
  silent  rank 1 is stopped (SIGSTOP) mid-training: rank 0 gives up after
          TPUCC_MPI_TIMEOUT=20 s (room for ranks that compile at
          different speeds), naming rank 1
  other   rank 1 started with another --seed: the run ends naming it

Every run must end within 90 s. The cpu cases need Fashion-MNIST, the
tpu ones numpy (each skips, exit 77, without it)."""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

FM = "/usr/share/datasets/fashion-mnist"


def env():
    e = dict(os.environ)
    asan = e.get("ASAN_OPTIONS", "")
    e["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "detect_leaks=0"  # run_mpi.py says why
    e["TPUCC_MPI_TIMEOUT"] = "20" if sys.argv[5] == "silent" else "60"
    if sys.argv[5].startswith("tpu-"):
        e["TPUCC_MPI_TIMES"] = "1"
    return e


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(cmd, timeout=90):
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env())
    except subprocess.TimeoutExpired:
        fail("did not end within %d s: %s" % (timeout, " ".join(cmd)))
    print(" ".join(cmd), f"-> exit {p.returncode} in {time.monotonic() - t0:.1f} s")
    print(p.stdout[-2000:])
    sys.stderr.write(p.stderr[-3000:])
    return p


def report(out):
    """The report lines without their timings."""
    return [re.sub(r"[0-9.]+ (images/s|s)\b", "T", l) for l in out.splitlines()]


def rank_pid(root, rank):
    """The pid of the process below root started as MPI rank `rank`."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    todo = list(kids.get(root, []))
    while todo:
        pid = todo.pop()
        todo += kids.get(pid, [])
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if b"OMPI_COMM_WORLD_RANK=%d\0" % rank in f.read():
                    return pid
        except OSError:
            pass
    return None


def fault(mpi, base, work, sig):
    """Starts a long run, signals rank 1 once rank 0 wrote its first
    checkpoint (training is under way), and returns the finished run."""
    ck = os.path.join(work, "c.npz")
    if os.path.exists(ck):
        os.remove(ck)  # of an earlier run
    cmd = mpi + ["-np", "2"] + base + ["--steps-per-epoch=10", "--epochs=100000", "--checkpoint=" + ck]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
    t0 = time.monotonic()
    victim = None
    try:
        while not os.path.exists(ck):
            if p.poll() is not None or time.monotonic() - t0 > 60:
                fail("training did not get under way")
            time.sleep(0.1)
        victim = rank_pid(p.pid, 1)
        if not victim:
            fail("no process of rank 1")
        os.kill(victim, sig)
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("the run did not end within 60 s of the fault")
    finally:
        if victim and sig == signal.SIGSTOP:
            try:
                os.kill(victim, signal.SIGKILL)
            except OSError:
                pass
        if p.poll() is None:  # a failed check: end the run (mpirun ends its ranks)
            p.terminate()
            p.wait(timeout=30)
    print(" ".join(cmd), f"-> exit {p.returncode} in {time.monotonic() - t0:.1f} s")
    sys.stderr.write(err[-3000:])
    return p.returncode, err


def tpu_case(mpi, tpucc, model, work, case):
    """The tpu-* cases (module docstring)."""
    try:
        import numpy as np
    except ImportError:
        print("SKIP: no numpy")
        return 77
    B = 64
    r = np.random.default_rng(5)
    px, yl = r.integers(0, 256, size=(B, 28, 28), dtype=np.uint8), r.integers(0, 10, size=B)
    data = os.path.join(work, "data.npz")
    np.savez(data, x_train=px, y_train=yl, x_test=px, y_test=yl)
    target, cores = ("v3-32", 32) if case == "tpu-pod" else ("v3-8", 8)
    base = [tpucc, "train", model, "--data=" + data, "--target=" + target, "--batch=%d" % B,
            "--epochs=2", "--test-examples=%d" % B, "--optimizer=sgd", "--lr=0.05",
            "--schedule=constant", "--quiet"]
    if case == "tpu-cores":
        p = run(mpi + ["-np", "2"] + base)
        if p.returncode != 2 or "--replicas=<its cores>" not in p.stderr:
            fail("expected exit 2 asking for --replicas=<its cores>")
        return 0
    a = os.path.join(work, "one.npz")
    one = run(base + ["--replicas=%d" % cores, "--checkpoint=" + a])
    if one.returncode:
        fail("the one-process run failed")
    w = np.load(a)  # trained weights: after 2 epochs of 1 step
    if int(w["epoch"]) != 2 or float(w["step"]) != 2.0:
        fail("the checkpoint is not after 2 epochs of 1 step")
    with open(a, "rb") as f:
        want = f.read()
    for n in (2, 4):
        b = os.path.join(work, "ranks%d.npz" % n)
        many = run(mpi + ["-np", str(n)] + base + ["--replicas=%d" % cores, "--checkpoint=" + b])
        if many.returncode:
            fail("the run on %d ranks failed" % n)
        with open(b, "rb") as f:
            if f.read() != want:
                fail("the checkpoints of %d ranks and one process differ" % n)
        calls = dict(re.findall(r"rank (\d+): compile and train .* in (\d+) MPI exchanges",
                                many.stderr))
        if sorted(calls) != [str(k) for k in range(n)] or len(set(calls.values())) != 1 or \
                calls["0"] == "0":
            fail("the %d ranks did not share the cores (exchanges per rank: %r)" % (n, calls))
        if report(one.stdout) != report(many.stdout) or not one.stdout:
            fail("the reports differ (or a rank other than 0 printed)")
    return 0


def main():
    mpirun, tpucc, model, work, case = sys.argv[1:6]
    if case.startswith("tpu-"):
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        mpi = [mpirun, "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader"]
        return tpu_case(mpi, tpucc, model, work, case)
    if not os.access(os.path.join(FM, "train-images-idx3-ubyte.gz"), os.R_OK):
        print("SKIP: no", FM)
        return 77
    # a fresh directory: a checkpoint left by an earlier run would look
    # like this run's training under way
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    mpi = [mpirun, "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader"]
    base = [tpucc, "train", model, "--batch=32", "--test-examples=256", "--threads=1", "--quiet",
            "--optimizer=sgd", "--lr=0.01"]
    if case == "same":
        a = [os.path.join(work, "threads.npz"), os.path.join(work, "ranks.npz")]
        args = ["--epochs=1", "--steps-per-epoch=24"]
        one = run(base + args + ["--replicas=2", "--checkpoint=" + a[0]])
        many = run(mpi + ["-np", "2"] + base + args + ["--checkpoint=" + a[1]])
        if one.returncode or many.returncode:
            fail("a run failed")
        with open(a[0], "rb") as f0, open(a[1], "rb") as f1:
            if f0.read() != f1.read():
                fail("the checkpoints of 2 ranks and 2 thread-replicas differ")
        if report(one.stdout) != report(many.stdout) or not one.stdout:
            fail("the reports differ (or a rank other than 0 printed)")
        return 0
    if case == "other":
        p = run(mpi + ["-np", "1"] + base + ["--epochs=1"] + [":", "-np", "1"] + base + ["--epochs=1", "--seed=2"])
        rc, err, want = p.returncode, p.stderr, "rank 1 runs other work than rank 0"
    elif case == "die":
        rc, err = fault(mpi, base, work, signal.SIGKILL)
        want = "rank 1"
    elif case == "silent":
        rc, err = fault(mpi, base, work, signal.SIGSTOP)
        want = "from rank 1"
    else:
        fail("unknown case " + case)
    if rc == 0:
        fail("the run succeeded")
    if want not in err:
        fail("stderr lacks " + repr(want))
    return 0


sys.exit(main())
