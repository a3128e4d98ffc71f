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
  rank0-inputs    the inputs as .npy files that only rank 0's working
                  directory holds: rank 0 reads them and sends them, the
                  output is the one-process run's

Every run must end within 60 s. The inputs are large values of both signs,
so a sum folded in another order than base/coll.h's differs."""
import os
import random
import shutil
import subprocess
import sys
import time


def inputs():
    rnd = random.Random(3)
    p = " ".join(str(rnd.choice([1e8, -1e8, 1.0]) + rnd.randint(0, 99)) for _ in range(48))
    q = " ".join(str((i * 37) % 101 - 50) for i in range(48))
    return ["--input=4x12xf32=" + p, "--input=4x3x4xs32=" + q]


def npy(path, dtype, shape, values):
    """Writes a little-endian .npy file (format 1.0) without numpy."""
    import struct
    hdr = "{'descr': '<%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, "".join(f"{d}, " for d in shape))
    hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
    code = {"f4": "f", "i4": "i"}[dtype]
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(struct.pack("<%d%s" % (len(values), code), *values))


def rank0_inputs(mpi, tpucc, module, flags):
    """Case rank0-inputs."""
    import tempfile
    root = tempfile.mkdtemp(prefix="tpucc_mpi_")
    a, b = os.path.join(root, "a"), os.path.join(root, "b")
    os.makedirs(a)
    os.makedirs(b)
    p_text, q_text = (i.split("=", 2)[2].split() for i in inputs())
    npy(os.path.join(a, "p.npy"), "f4", (4, 12), [float(v) for v in p_text])
    npy(os.path.join(a, "q.npy"), "i4", (4, 3, 4), [int(v) for v in q_text])
    cmd = [os.path.abspath(tpucc), "run", os.path.abspath(module)] + flags + ["--input=@p.npy", "--input=@q.npy"]
    os.chdir(a)
    try:
        one = run(cmd)
        many = run(mpi + ["-np", "1", "-wdir", a] + cmd + [":", "-np", "1", "-wdir", b] + cmd)
    finally:
        os.chdir("/")
        shutil.rmtree(root)
    if one.returncode or many.returncode or not one.stdout:
        fail("a run failed")
    if many.stdout != one.stdout:
        fail("outputs differ")
    return 0


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
    if case == "rank0-inputs":
        return rank0_inputs(mpi, tpucc, module, flags[:-2])
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
