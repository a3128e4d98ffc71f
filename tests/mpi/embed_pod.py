#!/usr/bin/env python3
"""embed_pod.py: samples/embed_mpi/pod.c (libtpurt-mpi through its public
header) under mpirun, each run bounded as run_mpi.py bounds it.

  embed_pod.py MPIRUN TPUCC POD WORKDIR CASE

CASE
  v3-8, v3-32  an all-reduce over every core, compiled by `tpucc compile`:
               -np 2 and -np 4 print the bytes of -np 1 (every core's
               results and statistics line); the values are the sums the
               sample's inputs give, computed here
  split        a world of 4 split into 2 pods of 2 ranks, each running its
               own v3-8: pod 0 prints what one process prints, pod 1 the
               sums of its own inputs with the same statistics
  uneven       8 cores on 3 ranks: refused with a message"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_mpi  # noqa: E402

COUNT = 20
MODULE = """HloModule ar, replica_count={n}
sum {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}
ENTRY e {{
  p = f32[{count}] parameter(0)
  ROOT r = f32[{count}] all-reduce(p), replica_groups={{}}, to_apply=sum
}}
"""


def compile_ar(tpucc, work, target, n):
    hlo = os.path.join(work, f"ar{n}.hlo")
    tpub = os.path.join(work, f"ar{n}.tpub")
    with open(hlo, "w") as f:
        f.write(MODULE.format(n=n, count=COUNT))
    subprocess.run([tpucc, "compile", hlo, f"--target={target}", "-o", tpub], check=True)
    return tpub


def expected_results(pod, n):
    """pod.c's inputs: core c, element j = (pod+1)(c+1)(j mod 7 + 1); the
    all-reduce gives every core the sum over c (small integers: exact)."""
    total = sum(c + 1 for c in range(n))
    vals = " ".join(str((pod + 1) * total * (j % 7 + 1)) for j in range(COUNT))
    return [f"pod {pod} core {c} result 0: {vals}" for c in range(n)]


def check_output(out, pod, n):
    """Errors in out, pod `pod`'s print of n cores."""
    lines = out.splitlines()
    errs = []
    if lines[:n] != expected_results(pod, n):
        errs.append(f"pod {pod}: results are not the sums: {lines[:2]}")
    stats = lines[n:]
    if len(stats) != n or not all(re.match(rf"pod {pod} core {c} stats: cycles=[1-9]", s)
                                  for c, s in enumerate(stats)):
        errs.append(f"pod {pod}: not one stats line per core: {stats[:2]}")
    elif not all("ici_sent_bytes=0 " not in s for s in stats):
        errs.append(f"pod {pod}: a core sent nothing over ICI")
    return errs


def mpirun(mpirun_path, np_, prog, extra=()):
    cmd = run_mpi.command(mpirun_path, np_, prog, extra)
    p, took = run_mpi.run(cmd)
    if p is None:
        print("FAIL: did not end within 60 s:", " ".join(cmd))
        sys.exit(1)
    print(" ".join(cmd), f"-> exit {p.returncode} in {took:.1f} s")
    if p.returncode != 0:
        print(p.stderr[-3000:])
    return p


def same(mp, tpucc, pod, work, target, n):
    tpub = compile_ar(tpucc, work, target, n)
    outs = {}
    for np_ in (1, 2, 4):
        p = mpirun(mp, np_, [pod, tpub, f"--target={target}"])
        if p.returncode != 0:
            return [f"-np {np_} failed"]
        outs[np_] = p.stdout
    errs = check_output(outs[1], 0, n)
    for np_ in (2, 4):
        if outs[np_] != outs[1]:
            errs.append(f"-np {np_} prints other bytes than -np 1")
    return errs


def split(mp, tpucc, pod, work):
    tpub = compile_ar(tpucc, work, "v3-8", 8)
    one = mpirun(mp, 1, [pod, tpub, "--target=v3-8"])
    outdir = os.path.join(work, "split-out")
    p = mpirun(mp, 4, [pod, tpub, "--target=v3-8", "--pods=2"], ["--output-filename", outdir])
    if one.returncode or p.returncode:
        return ["a run failed"]
    text = {}
    for rank in range(4):
        path = [os.path.join(d, "stdout") for d, _, files in os.walk(outdir)
                if d.endswith(f"rank.{rank}") and "stdout" in files]
        text[rank] = open(path[0]).read() if path else ""
    errs = []
    if text[1] or text[3]:
        errs.append("a pod's rank 1 printed")
    if text[0] != one.stdout:
        errs.append("pod 0 (world ranks 0, 1) prints other bytes than one process")
    errs += check_output(text[2], 1, 8)
    stats0 = [s.split(" ", 2)[2] for s in text[0].splitlines()[8:]]
    stats1 = [s.split(" ", 2)[2] for s in text[2].splitlines()[8:]]
    if stats0 != stats1:
        errs.append("pod 1's statistics are not pod 0's")
    return errs


def uneven(mp, tpucc, pod, work):
    tpub = compile_ar(tpucc, work, "v3-8", 8)
    p = mpirun(mp, 3, [pod, tpub, "--target=v3-8"])
    want = "8 cores do not split evenly across the communicator's 3 ranks"
    if p.returncode == 0 or want not in p.stderr:
        return [f"3 ranks for 8 cores: exit {p.returncode}, stderr lacks {want!r}"]
    return []


def main():
    mp, tpucc, pod, work, case = sys.argv[1:6]
    os.makedirs(work, exist_ok=True)
    if case in ("v3-8", "v3-32"):
        errs = same(mp, tpucc, pod, work, case, 8 if case == "v3-8" else 32)
    elif case == "split":
        errs = split(mp, tpucc, pod, work)
    else:
        errs = uneven(mp, tpucc, pod, work)
    for e in errs:
        print("FAIL:", e)
    if not errs:
        print("PASS", case)
    return 1 if errs else 0


sys.exit(main())
