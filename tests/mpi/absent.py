#!/usr/bin/env python3
"""absent.py: a tpucc built without MPI (registered only then).

  absent.py TPUCC MODULE

Started as if by mpirun (OMPI_COMM_WORLD_SIZE set), `tpucc run` and
`tpucc train` refuse with exit 1 and say how to get MPI; `tpucc --help`
says it too."""
import os
import subprocess
import sys


def main():
    tpucc, module = sys.argv[1:3]
    want = "-Dmpi=enabled"
    env = dict(os.environ, OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_RANK="0")
    for cmd in ([tpucc, "run", module, "--target=cpu", "--random-inputs"], [tpucc, "train", module]):
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
        print(" ".join(cmd), "-> exit", p.returncode, p.stderr.strip())
        if p.returncode != 1 or "built without MPI" not in p.stderr or want not in p.stderr:
            print("FAIL: expected exit 1 naming the missing MPI and", want)
            return 1
    h = subprocess.run([tpucc, "--help"], capture_output=True, text=True, timeout=60)
    if h.returncode != 0 or want not in h.stdout or "libopenmpi-dev" not in h.stdout:
        print("FAIL: --help does not say how to get MPI")
        return 1
    return 0


sys.exit(main())
