#!/usr/bin/env python3
"""mpi_cov.py: the random and fixed collective cases of
tests/diff/diff_coll_targets.c through `tpucc run`, in one process and
under `mpirun -np 2` and `-np 4`.

  mpi_cov.py MPIRUN TPUCC DIFF_COLL_TARGETS WORKDIR PART [TRIALS SEED]

diff_coll_targets TRIALS SEED --emit=WORKDIR/cases writes every case it
checks in process (module, the inputs of every replica, the TPU target and
what the TPU may refuse; diff_coll_targets.c, emit_case). Then PART:

  cpu  every random case (TRIALS per generator, so each generator at least
       once) on --target=cpu --cpu-numerics=strict --replicas=N: in one
       process the evaluator's output (--target=interp) byte for byte;
       under mpirun -np R, R in 2 and 4, the one-process stdout byte for
       byte when R divides N, else the refusal naming both counts
  tpu  the same cases on the v3-8 board with N cores (one replica each,
       --target=v3-8,ncores=N below 8) with --stats: in one process the
       evaluator's output, or the located refusal the case's row allows;
       under mpirun -np R the one-process stdout and --stats lines byte
       for byte when R divides N (the same refusal for a refused case),
       else "N cores do not split evenly across R ranks"; the cases of a
       reduction over an even number of replicas also with --all-reduce=ps
  pod  the fixed cases (the v2-8 board: a case of every generator; the
       v3-32 pod: every move collective; 1 and 5 cores of a v3-8), and
       tests/mpi/tpu/moves32.hlo on the v3-32 pod: the same checks as tpu,
       and its --trace across 2 and 4 ranks has the one-process events

Exit 0 when every check passes. Every run is bounded (60 s)."""
import os
import shutil
import subprocess
import sys
import time

FAILS = []
NGENS = 9  # the rows of diff_coll_targets.c's table of generators
REDUCING = ("all-reduce", "all-reduce (tuple)", "reduce-scatter")


def env():
    e = dict(os.environ)
    asan = e.get("ASAN_OPTIONS", "")
    e["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "detect_leaks=0"  # run_mpi.py says why
    e["TPUCC_MPI_TIMEOUT"] = "30"
    return e


class Run:
    def __init__(self, cmd, cwd, cache):
        e = env()
        e["TPUCC_CACHE_DIR"] = cache
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, capture_output=True, timeout=60, env=e, cwd=cwd)
            self.rc, self.out, self.err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            self.rc, self.out, self.err = None, b"", b"(did not end within 60 s)"
        self.secs = time.monotonic() - t0
        self.cmd = cmd

    def show(self):
        return "%s -> exit %s in %.1f s\n%s" % (" ".join(self.cmd), self.rc, self.secs,
                                              self.err.decode(errors="replace")[-1500:])


def check(ok, what, *runs):
    if ok:
        return True
    FAILS.append(what)
    print("FAIL:", what)
    for r in runs:
        print(r.show())
    return False


def cases(root):
    """The lines of cases.tsv: name, generator, nrep, target, expect, inputs."""
    with open(os.path.join(root, "cases.tsv")) as f:
        for line in f:
            name, gen, nrep, target, expect, inputs = line.rstrip("\n").split("\t")
            yield name, gen, int(nrep), target, None if expect == "-" else expect, inputs.split()


class Ctx:
    def __init__(self, mpirun, tpucc, cwd, cache):
        self.mpi = [mpirun, "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader"]
        self.tpucc, self.cwd, self.cache = tpucc, cwd, cache

    def run(self, args, np_=0):
        pre = self.mpi + ["-np", str(np_)] if np_ else []
        return Run(pre + [self.tpucc, "run"] + args, self.cwd, self.cache)


def cpu_case(c, name, gen, nrep, inputs):
    """PART cpu for one case."""
    base = [name + ".hlo", "--replicas=%d" % nrep, "--print-max-elements=0"] + inputs
    ref = c.run(base + ["--target=interp"])
    if not check(ref.rc == 0 and ref.out, "%s (%s): interp" % (name, gen), ref):
        return
    flags = base + ["--target=cpu", "--cpu-numerics=strict", "--threads=1"]
    one = c.run(flags)
    check(one.rc == 0 and one.out == ref.out, "%s (%s, %d replicas): cpu against interp" %
          (name, gen, nrep), one)
    for R in (2, 4):
        many = c.run(flags, R)
        what = "%s (%s, %d replicas): cpu across %d ranks" % (name, gen, nrep, R)
        if nrep % R == 0:
            check(many.rc == 0 and many.out == one.out, what + " as in one process", many)
        else:
            want = b"%d replica%s do not split evenly over %d MPI ranks" % (
                nrep, b"" if nrep == 1 else b"s", R)
            check(many.rc == 2 and want in many.err, what + ": refused", many)


def cores_of(target):
    if ",ncores=" in target:
        return int(target.split(",ncores=")[1])
    return {"v2-8": 8, "v3-8": 8, "v3-32": 32}[target]


def tpu_case(c, label, target, nrep, args, ref_args, expect):
    """PART tpu and pod for one module: args run on target with --stats in
    one process (against interp with ref_args) and across 2 and 4 ranks."""
    ref = c.run(ref_args + ["--target=interp", "--replicas=%d" % nrep, "--print-max-elements=0"])
    if not check(ref.rc == 0 and ref.out, label + ": interp", ref):
        return
    flags = args + ["--target=" + target, "--replicas=%d" % nrep, "--print-max-elements=0", "--stats"]
    one = c.run(flags)
    refused = one.rc != 0 and expect is not None
    if refused:  # the row's located refusal: "cNNN.hlo:LINE:COL: error: ..."
        check(one.rc == 1 and expect.encode() in one.err and b".hlo:" in one.err and
              b": error: " in one.err, label + ": the located refusal " + repr(expect), one)
    else:
        check(one.rc == 0 and one.out == ref.out, label + " against interp", one)
        if nrep > 1:
            check(b"\n  %d " % (nrep - 1) in one.err, label + ": a --stats line per core", one)
    ncores = cores_of(target)
    for R in (2, 4):
        many = c.run(flags, R)
        what = "%s across %d ranks" % (label, R)
        if refused:  # the compile's refusal comes first
            first = one.err.splitlines()[0]
            check(many.rc == one.rc and first in many.err.splitlines(),
                  what + ": the one-process refusal", many)
        elif nrep == 1:
            want = b"one replica runs in one process, not across %d MPI ranks" % R
            check(many.rc == 2 and want in many.err and not many.out, what + ": refused", many)
        elif ncores % R:
            want = b"%d cores do not split evenly across %d ranks" % (ncores, R)
            check(many.rc != 0 and want in many.err and not many.out, what + ": refused", many)
        else:
            check(many.rc == 0 and many.out == one.out and many.err == one.err,
                  what + ": stdout and --stats lines as in one process", many)


def pod_trace(c, work, args):
    """--trace of args on the v3-32 pod: rank 0's file across 2 and 4 ranks
    holds the one-process file's events (compared as sorted lines without
    their separating commas: one process writes them as its threads run),
    every one of the 32 cores'."""
    def events(path):
        with open(path, "rb") as f:
            return sorted(l.rstrip(b"\n").rstrip(b",") for l in f)
    flags = args + ["--target=v3-32", "--replicas=32", "--output="]
    one = c.run(flags + ["--trace=" + os.path.join(work, "t1.json")])
    if not check(one.rc == 0, "moves32 --trace in one process", one):
        return
    want = events(os.path.join(work, "t1.json"))
    check(len(want) > 1000 and any(b'"pid":32,' in l for l in want), "moves32: a trace of 32 cores", one)
    for R in (2, 4):
        path = os.path.join(work, "t%d.json" % R)
        many = c.run(flags + ["--trace=" + path], R)
        check(many.rc == 0 and events(path) == want,
              "moves32 --trace across %d ranks: the one-process events" % R, many)


def main():
    mpirun, tpucc, gen_exe, work, part = sys.argv[1:6]
    trials, seed = (sys.argv[6:8] + ["1", "1"][len(sys.argv[6:8]):])
    shutil.rmtree(work, ignore_errors=True)
    root = os.path.join(work, "cases")
    os.makedirs(root)
    g = subprocess.run([gen_exe, trials, seed, "--emit=" + root], capture_output=True, text=True,
                       timeout=300)
    print(g.stdout, g.stderr[-2000:])
    if g.returncode != 0 or not os.path.exists(os.path.join(root, "cases.tsv")):
        print("FAIL: diff_coll_targets did not check and write its cases")
        return 1
    c = Ctx(mpirun, os.path.abspath(tpucc), root, os.path.join(work, "cache"))
    t0 = time.monotonic()
    todo = list(cases(root))
    nrandom = int(trials) * NGENS  # the random cases come first, then the fixed ones
    gens = set()
    for i, (name, gen, nrep, target, expect, inputs) in enumerate(todo):
        label = "%s (%s, %d replicas on %s)" % (name, gen, nrep, target)
        if part == "cpu" and i < nrandom:
            cpu_case(c, name, gen, nrep, inputs)
        elif part == "tpu" and i < nrandom:
            tpu_case(c, label, target, nrep, [name + ".hlo"] + inputs, [name + ".hlo"] + inputs, expect)
            if gen in REDUCING and nrep % 2 == 0:  # the parameter-server lowering too
                tpu_case(c, label + " --all-reduce=ps", target, nrep,
                         [name + ".hlo", "--all-reduce=ps"] + inputs, [name + ".hlo"] + inputs, expect)
        elif part == "pod" and i >= nrandom:
            tpu_case(c, label, target, nrep, [name + ".hlo"] + inputs, [name + ".hlo"] + inputs, expect)
        else:
            continue
        gens.add(gen)
    if part == "pod":
        mod = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tpu", "moves32.hlo")
        rnd = [mod, "--random-inputs", "--seed=3"]
        tpu_case(c, "moves32.hlo on v3-32", "v3-32", 32, rnd, rnd, None)
        pod_trace(c, work, rnd)
    if part in ("cpu", "tpu") and len(gens) < NGENS:
        check(False, "every generator ran (ran: %s)" % sorted(gens))
    print("mpi_cov %s: %d generators, %.1f s, %d failure(s)" % (part, len(gens), time.monotonic() - t0,
                                                               len(FAILS)))
    return 1 if FAILS else 0


sys.exit(main())
