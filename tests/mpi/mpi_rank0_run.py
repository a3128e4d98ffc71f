#!/usr/bin/env python3
"""mpi_rank0_run.py: under mpirun, rank 0 reads the inputs and writes the
outputs (docs/distributed.md, "Who reads and writes").

  mpi_rank0_run.py MPIRUN TPUCC CASE [MODEL]

CASE:
  pod-inputs    `tpucc run --target=v3-8 --random-inputs` over 2 ranks, a
                module with a parameter of 8 MiB per replica (64 MiB for
                the 8): the output is the one-process run's, and rank 1,
                which neither makes the inputs nor holds parameter values
                (its cores' come from rank 0), peaks at least 32 MiB below
                rank 0 in resident memory (a rank holding every replica's
                inputs peaks as high as rank 0 or higher)
  usage-once    a usage error of `tpucc run` and of `tpucc train` under 2
                ranks: printed once, and the run ends with exit status 2
  cpu-gather    `tpucc run --target=cpu` of 4 replicas over 2 ranks with
                results of 4 MiB each: the output file is the one-process
                run's; rank 1 sends rank 0 its replicas' results (8 MiB)
                and gets none back (under 1 MiB from rank 0, as OpenMPI's
                pml monitoring counts the bytes)
  train-data    `tpucc train --target=v3-8 --replicas=8` over 2 ranks, the
                data set in rank 0's working directory alone: rank 1
                reads none (its cores get rank 0's batches), and the
                checkpoint and report lines are the one-process run's
                (MODEL: the MLP sample, an extra argument)
  rank-outputs-cpu, rank-outputs-tpu
                --rank-outputs over 2 ranks (4 cpu replicas; 8 on a v3-8):
                out.rankK.npy holds rank K's half of the one-process
                results, printed lines come one per rank with "rank K: ";
                on the v3-8 each rank's --stats lines are its cores' lines
                of the one-process run and trace.rankK.json holds its
                cores' events of the one-process trace
  trace-header  --trace of 8 cores (one process, and 2 ranks): the header
                names the process row of every core, "core 0" ... "core 7"

Every run must end within 60 s."""
import os
import re
import resource
import subprocess
import sys
import tempfile
import time


def run(cmd, env_extra=None):
    env = dict(os.environ)
    asan = env.get("ASAN_OPTIONS", "")
    env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "detect_leaks=0"  # run_mpi.py says why
    env["TPUCC_MPI_TIMEOUT"] = "30"
    env.update(env_extra or {})
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        fail("did not end within 60 s: " + " ".join(cmd))
    print(" ".join(cmd)[:300], f"-> exit {p.returncode} in {time.monotonic() - t0:.1f} s")
    sys.stderr.write(p.stderr.decode(errors="replace")[-3000:])
    return p


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


BIG = """HloModule big, replica_count=8
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  big = f32[2097152] parameter(0)
  s = f32[4] parameter(1)
  h = f32[4] slice(big), slice={[0:4]}
  t = f32[4] add(h, s)
  ROOT r = f32[4] all-reduce(t), replica_groups={}, to_apply=sum
}
"""


def rank_rss(mpi, tmp, cmd):
    """Runs cmd on 2 ranks, each under this script's `rss` mode: the
    completed process and every rank's peak resident KiB."""
    p = run(mpi + ["-np", "2", sys.executable, os.path.abspath(__file__), "rss", tmp] + cmd)
    rss = []
    for r in range(2):
        try:
            with open(os.path.join(tmp, f"rss.{r}")) as f:
                rss.append(int(f.read()))
        except OSError:
            fail(f"rank {r} reported no memory figure")
    return p, rss


def pod_inputs(mpi, tpucc, tmp):
    mod = os.path.join(tmp, "big.hlo")
    with open(mod, "w") as f:
        f.write(BIG)
    cmd = [tpucc, "run", mod, "--target=v3-8", "--random-inputs"]
    one = run(cmd)
    if one.returncode or not one.stdout.startswith(b"8x4xf32="):
        fail("the one-process run failed")
    many, (r0, r1) = rank_rss(mpi, tmp, cmd)
    if many.returncode:
        fail("the run on 2 ranks failed")
    if many.stdout != one.stdout:
        fail("outputs differ")
    print(f"peak resident memory: rank 0 {r0} KiB, rank 1 {r1} KiB")
    if r0 - r1 < 32 * 1024:
        fail("rank 1 holds the inputs: it peaks less than 32 MiB below rank 0")


WIDE = """HloModule wide, replica_count=4
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  p = f32[4] parameter(0)
  r = f32[4] all-reduce(p), replica_groups={}, to_apply=sum
  ROOT w = f32[262144,4] broadcast(r), dimensions={1}
}
"""


def sent_bytes(stderr):
    """{(from, to): bytes} of the point-to-point messages, as OpenMPI's
    pml monitoring component prints them at the end of the run."""
    got = {}
    for line in stderr.decode(errors="replace").splitlines():
        f = line.split("\t")
        if len(f) >= 4 and f[0] == "E" and f[3].endswith(" bytes"):
            got[(int(f[1]), int(f[2]))] = int(f[3].split()[0])
    return got


def cpu_gather(mpi, tpucc, tmp):
    mod = os.path.join(tmp, "wide.hlo")
    with open(mod, "w") as f:
        f.write(WIDE)
    cmd = [tpucc, "run", mod, "--target=cpu", "--no-cache",
           "--input=4x4xf32=1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16"]
    one = run(cmd + ["--output=@" + os.path.join(tmp, "one.npy")])
    monitor = ["--mca", "pml_monitoring_enable", "1", "--mca", "pml_monitoring_enable_output", "2"]
    many = run(mpi + monitor + ["-np", "2"] + cmd + ["--output=@" + os.path.join(tmp, "two.npy")])
    if one.returncode or many.returncode:
        fail("a run failed")
    with open(os.path.join(tmp, "one.npy"), "rb") as a, open(os.path.join(tmp, "two.npy"), "rb") as b:
        if a.read() != b.read():
            fail("outputs differ")
    sent = sent_bytes(many.stderr)
    print("bytes sent between the ranks:", sent)
    if (1, 0) not in sent or (0, 1) not in sent:
        fail("no message counts (OpenMPI's pml monitoring component)")
    if sent[(1, 0)] < 8 << 20:
        fail("rank 1 did not send rank 0 its replicas' 8 MiB of results")
    if sent[(0, 1)] >= 1 << 20:
        fail("rank 0 sent rank 1 its replicas' results")


def npy_bytes(descr, shape, data):
    """A .npy file (format 1.0) of raw little-endian data."""
    import struct
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join(f"{d}, " for d in shape))
    hdr += " " * (63 - (10 + len(hdr)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + data


def train_data(mpi, tpucc, tmp, model):
    import random
    import struct
    import zipfile
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    os.makedirs(a)
    os.makedirs(b)
    rnd = random.Random(7)
    n = 128
    px = bytes(rnd.randrange(256) for _ in range(n * 28 * 28))
    yl = struct.pack("<%dq" % n, *(rnd.randrange(10) for _ in range(n)))
    with zipfile.ZipFile(os.path.join(a, "data.npz"), "w") as z:
        for part in ("train", "test"):
            z.writestr(f"x_{part}.npy", npy_bytes("|u1", (n, 28, 28), px))
            z.writestr(f"y_{part}.npy", npy_bytes("<i8", (n,), yl))
    cmd = [tpucc, "train", model, "--data=data.npz", "--target=v3-8", "--replicas=8", "--batch=64",
           "--epochs=1", "--test-examples=64", "--optimizer=sgd", "--lr=0.05", "--schedule=constant",
           "--quiet"]
    one_ck, two_ck = os.path.join(tmp, "one.npz"), os.path.join(tmp, "two.npz")
    os.chdir(a)
    one = run(cmd + ["--checkpoint=" + one_ck])
    two = run(mpi + ["-np", "1", "-wdir", a] + cmd + ["--checkpoint=" + two_ck] +
              [":", "-np", "1", "-wdir", b] + cmd + ["--checkpoint=" + two_ck])
    os.chdir("/")
    if one.returncode or two.returncode:
        fail("a run failed")
    with open(one_ck, "rb") as f0, open(two_ck, "rb") as f1:
        if f0.read() != f1.read():
            fail("the checkpoints differ")

    def report(out):
        return [re.sub(rb"[0-9.]+ (images/s|s)\b", b"T", l) for l in out.splitlines()]
    if report(one.stdout) != report(two.stdout) or not one.stdout:
        fail("the report lines differ")


PER = """HloModule per, replica_count=%d
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  p = f32[3] parameter(0)
  r = f32[3] all-reduce(p), replica_groups={}, to_apply=sum
  ROOT y = f32[3] multiply(r, p)
}
"""


def npy_data(path):
    """The shape and the data bytes of a .npy file."""
    import ast
    import struct
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<H", b[8:10])[0]
    return ast.literal_eval(b[10:10 + n].decode())["shape"], b[10 + n:]


def rank_outputs(mpi, tpucc, tmp, target, n):
    """Case rank-outputs-*: n replicas on target, one process against 2
    ranks with --rank-outputs."""
    mod = os.path.join(tmp, "per.hlo")
    with open(mod, "w") as f:
        f.write(PER % n)
    vals = " ".join(str(i % 7 + 1) for i in range(3 * n))
    tpu = target != "cpu"
    flags = ["--stats", "--trace=%s"] if tpu else ["--no-cache"]
    cmd = [tpucc, "run", mod, "--target=" + target, f"--input={n}x3xf32={vals}"]
    one = run(cmd + [f.replace("%s", os.path.join(tmp, "one.json")) for f in flags] +
              ["--output=@" + os.path.join(tmp, "one.npy")])
    two = run(mpi + ["-np", "2"] + cmd + [f.replace("%s", os.path.join(tmp, "two.json")) for f in flags] +
              ["--rank-outputs", "--output=@" + os.path.join(tmp, "two.npy")])
    printed = run(mpi + ["-np", "2"] + cmd + ["--rank-outputs"] + (["--no-cache"] if not tpu else []))
    if one.returncode or two.returncode or printed.returncode:
        fail("a run failed")
    shape, data = npy_data(os.path.join(tmp, "one.npy"))
    half = len(data) // 2
    for k in range(2):
        sk, dk = npy_data(os.path.join(tmp, f"two.rank{k}.npy"))
        if sk != (n // 2,) + shape[1:] or dk != data[k * half:(k + 1) * half]:
            fail(f"two.rank{k}.npy is not rank {k}'s half of the one-process results")
    # printed: each rank its own replicas, prefixed
    lines = sorted(printed.stdout.decode().splitlines())
    if [l.split(":", 1)[0] for l in lines] != ["rank 0", "rank 1"]:
        fail(f"printed lines {lines!r}")
    if not tpu:
        return
    # --stats: each rank's lines are the one-process lines of its cores
    base = [l for l in one.stderr.decode().splitlines() if l.startswith("  ") and l.split()[0].isdigit()]
    if len(base) != n:
        fail(f"{len(base)} stats lines in one process, {n} cores")
    for k in range(2):
        mine = [l[len(f"rank {k}: "):] for l in two.stderr.decode().splitlines()
                if l.startswith(f"rank {k}:   ") and l.split()[2].isdigit()]
        if mine != base[k * n // 2:(k + 1) * n // 2]:
            fail(f"rank {k}'s stats lines differ from its cores' in one process")
    # --trace: each rank's file holds its own cores' events, the one-process ones
    import json
    with open(os.path.join(tmp, "one.json")) as f:
        ev1 = json.load(f)
    for k in range(2):
        with open(os.path.join(tmp, f"two.rank{k}.json")) as f:
            evk = json.load(f)
        own = range(k * n // 2 + 1, (k + 1) * n // 2 + 1)
        want = sorted(json.dumps(e, sort_keys=True) for e in ev1 if e["pid"] in own)
        got = sorted(json.dumps(e, sort_keys=True) for e in evk)
        if got != want or len(got) < 100:
            fail(f"two.rank{k}.json is not its cores' part of the one-process trace")


def usage_once(mpi, tpucc, tmp):
    mod = os.path.join(tmp, "big.hlo")
    with open(mod, "w") as f:
        f.write(BIG)
    for cmd, want in (([tpucc, "run", mod, "--no-such-flag"], b"no-such-flag"),
                      ([tpucc, "train", "--no-such-flag"], b"no-such-flag")):
        p = run(mpi + ["-np", "2"] + cmd)
        lines = [l for l in p.stderr.splitlines() if b"error:" in l]
        if p.returncode != 2:
            fail(f"exit status {p.returncode}, expected 2")
        if len(lines) != 1 or want not in lines[0]:
            fail(f"{len(lines)} error lines, expected 1 naming {want!r}: {lines!r}")


def header_names(path):
    import json
    with open(path) as f:
        ev = json.load(f)
    return sorted((e["pid"], e["args"]["name"]) for e in ev if e.get("name") == "process_name")


def trace_header(mpi, tpucc, tmp):
    mod = os.path.join(tmp, "big.hlo")
    with open(mod, "w") as f:
        f.write(BIG.replace("2097152", "16"))
    want = [(c + 1, f"core {c}") for c in range(8)] + [(9, "ICI links")]
    for pre, name in (([], "one.json"), (mpi + ["-np", "2"], "two.json")):
        path = os.path.join(tmp, name)
        p = run(pre + [tpucc, "run", mod, "--target=v3-8", "--random-inputs", "--trace=" + path])
        if p.returncode:
            fail("the traced run failed")
        got = header_names(path)
        if got != want:
            fail(f"{name}: process rows named {got!r}")


def rss_mode(tmp, cmd):
    """One rank: runs cmd, passes its output on, and writes its peak
    resident KiB to tmp/rss.RANK."""
    p = subprocess.run(cmd)
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMIX_RANK", "0"))
    with open(os.path.join(tmp, "rss." + rank), "w") as f:
        f.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
    return p.returncode


def main():
    if sys.argv[1] == "rss":
        return rss_mode(sys.argv[2], sys.argv[3:])
    mpirun, tpucc, case = sys.argv[1:4]
    model = sys.argv[4] if len(sys.argv) > 4 else None
    mpi = [mpirun, "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader"]
    tpucc = os.path.abspath(tpucc)
    cases = {"pod-inputs": pod_inputs, "cpu-gather": cpu_gather, "train-data": train_data,
             "rank-outputs-cpu": None, "rank-outputs-tpu": None, "usage-once": usage_once, "trace-header": trace_header}
    if case not in cases:
        fail("unknown case " + case)
    with tempfile.TemporaryDirectory(prefix="tpucc_rank0_") as tmp:
        if case.startswith("rank-outputs-"):
            rank_outputs(mpi, tpucc, tmp, {"cpu": "cpu", "tpu": "v3-8"}[case[13:]],
                         4 if case.endswith("cpu") else 8)
        elif case == "train-data":
            train_data(mpi, tpucc, tmp, os.path.abspath(model))
        else:
            cases[case](mpi, tpucc, tmp)
    print("PASS", case)
    return 0


sys.exit(main())
