#!/usr/bin/env python3
"""run_cpu.py: `tpucc run --target=cpu` under mpirun against one process.

  run_cpu.py MPIRUN TPUCC MODULE CASE

CASE:
  same-2, same-4  the module's 4 replicas over 2 or 4 ranks: stdout must be
                  byte for byte the one-process run's (so ranks other than
                  0 print nothing), both checked against interp bit for bit
                  (--cpu-numerics=strict --reference=interp --atol=0)
  uneven          4 replicas over 3 ranks: a usage error naming both counts
  other           rank 1 started with another flag: the run ends naming it
  interp          --target=interp under 2 ranks: a usage error

Every run must end within 60 s. The inputs are large values of both signs,
so a sum folded in another order than base/coll.h's differs."""
import os
import random
import subprocess
import sys
import time


def inputs():
    rnd = random.Random(3)
    p = " ".join(str(rnd.choice([1e8, -1e8, 1.0]) + rnd.randint(0, 99)) for _ in range(48))
    q = " ".join(str((i * 37) % 101 - 50) for i in range(48))
    return ["--input=4x12xf32=" + p, "--input=4x3x4xs32=" + q]


def run(cmd):
    env = dict(os.environ)
    asan = env.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "detect_leaks=0"  # run_mpi.py says why
    env["TPUCC_MPI_TIMEOUT"] = "20"
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        print("FAIL: did not end within 60 s:", " ".join(cmd))
        sys.exit(1)
    print(" ".join(cmd)[:300], f"-> exit {p.returncode} in {time.monotonic() - t0:.1f} s")
    sys.stderr.write(p.stderr.decode(errors="replace")[-3000:])
    return p


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    mpirun, tpucc, module, case = sys.argv[1:5]
    mpi = [mpirun, "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader"]
    flags = ["--target=cpu", "--replicas=4", "--no-cache", "--cpu-numerics=strict",
             "--reference=interp", "--atol=0", "--rtol=0"] + inputs()
    cmd = [tpucc, "run", module] + flags
    if case.startswith("same-"):
        one = run(cmd)
        if one.returncode != 0 or not one.stdout:
            fail("the one-process run failed")
        many = run(mpi + ["-np", case[5:]] + cmd)
        if many.returncode != 0:
            fail("the mpirun run failed")
        if many.stdout != one.stdout:
            fail("outputs differ:\n" + one.stdout.decode()[:800] + "\n---\n" + many.stdout.decode()[:800])
        return 0
    if case == "uneven":
        p, want = run(mpi + ["-np", "3"] + cmd), "4 replicas do not split evenly over 3 MPI ranks"
    elif case == "other":
        p = run(mpi + ["-np", "1"] + cmd + [":", "-np", "1"] + cmd + ["--threads=1"])
        want = "rank 1 runs other work than rank 0"
    elif case == "interp":
        p = run(mpi + ["-np", "2", tpucc, "run", module, "--target=interp"] + inputs())
        want = "under mpirun, tpucc run splits the replicas of --target=cpu"
    else:
        fail("unknown case " + case)
    if p.returncode == 0:
        fail("the run succeeded")
    if want not in p.stderr.decode(errors="replace"):
        fail("stderr lacks " + repr(want))
    if p.stdout:
        fail("a failed run printed results")
    return 0


sys.exit(main())
