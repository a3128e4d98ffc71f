#!/usr/bin/env python3
"""train_cpu.py: `tpucc train --target=cpu` under mpirun.

  train_cpu.py MPIRUN TPUCC MODEL WORKDIR CASE

CASE:
  same    24 SGD steps of 2 x 32 examples: 2 ranks (one replica each) and 2
          thread-replicas in one process write byte-identical checkpoints,
          and rank 0 alone prints (the same report lines)
  die     rank 1 is killed (SIGKILL) mid-training: the run ends, naming it
  silent  rank 1 is stopped (SIGSTOP) mid-training: rank 0 gives up after
          TPUCC_MPI_TIMEOUT=5 s, naming rank 1
  other   rank 1 started with another --seed: the run ends naming it

Every run must end within 90 s. Needs Fashion-MNIST (skips, exit 77,
without it)."""
import os
import re
import signal
import subprocess
import sys
import time

FM = "/usr/share/datasets/fashion-mnist"


def env():
    e = dict(os.environ)
    asan = e.get("ASAN_OPTIONS", "")
    e["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "detect_leaks=0"  # run_mpi.py says why
    e["TPUCC_MPI_TIMEOUT"] = "5" if sys.argv[5] == "silent" else "60"
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
    print(" ".join(cmd), f"-> exit {p.returncode} in {time.monotonic() - t0:.1f} s")
    sys.stderr.write(err[-3000:])
    return p.returncode, err


def main():
    mpirun, tpucc, model, work, case = sys.argv[1:6]
    if not os.access(os.path.join(FM, "train-images-idx3-ubyte.gz"), os.R_OK):
        print("SKIP: no", FM)
        return 77
    os.makedirs(work, exist_ok=True)
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
