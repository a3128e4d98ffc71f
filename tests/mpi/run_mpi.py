#!/usr/bin/env python3
"""run_mpi.py: runs a program under mpirun and checks how the run ended.

  run_mpi.py MPIRUN NP EXPECT PROGRAM ARGS...

EXPECT is "ok" (exit 0 and "rank R: ok" from every rank) or a text that
stderr must contain after a failing exit. Every run must end within 60 s:
a hang is a failure. As root, mpirun needs --allow-run-as-root; on a host
with fewer cores than ranks, --oversubscribe.

Under AddressSanitizer, leak detection is off for these runs: OpenMPI's
components, loaded with dlopen and unloaded at MPI_Finalize, leave blocks
whose stacks end in an unknown module, which no suppression can name.
Every other check of the sanitizers stays on."""
import os
import subprocess
import sys
import time


def command(mpirun, np_, prog, extra=()):
    """The mpirun command line for np_ ranks of prog (a list)."""
    return [mpirun, "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader",
            *extra, "-np", str(np_)] + prog


def run(cmd):
    """Runs cmd with leak checking off, bounded by 60 s: (CompletedProcess
    or None when it did not end, seconds taken)."""
    t0 = time.monotonic()
    try:
        env = dict(os.environ)
        asan = env.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "detect_leaks=0"
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - t0
    return p, time.monotonic() - t0


def main():
    mpirun, np_, expect, prog = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    cmd = command(mpirun, np_, prog)
    p, took = run(cmd)
    if p is None:
        print("FAIL: the run did not end within 60 s:", " ".join(cmd))
        return 1
    print(" ".join(cmd), f"-> exit {p.returncode} in {took:.1f} s")
    print(p.stdout[-2000:])
    print(p.stderr[-2000:], file=sys.stderr)
    if expect == "ok":
        oks = [f"rank {r}: ok" in p.stdout for r in range(np_)]
        if p.returncode != 0 or not all(oks):
            print("FAIL: expected every rank to finish", oks)
            return 1
        return 0
    if p.returncode == 0:
        print("FAIL: the run succeeded; expected an error containing", repr(expect))
        return 1
    if expect not in p.stderr:
        print("FAIL: stderr lacks", repr(expect))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
