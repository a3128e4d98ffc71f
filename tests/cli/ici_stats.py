"""ici_stats.py TPUCC WORKDIR: `tpucc run --stats / --stats-json / --report /
--trace` of modules run as one replica per core of a v3-8, against figures
derived here, independently of the emulator.

Target `v3-8,clock=1GHz,ici_bw=64GB/s,ici_latency=100`: a link moves 64
bytes a cycle, a transfer of b bytes holds each link of its route for
ceil(b / 64) cycles (at least 1; the 4096-byte data transfers read HBM in
fewer cycles than that). Cores 2k and 2k+1 sit on chip k, chip k at column
k % 2, row k // 2 of the 2x2 torus; a transfer between chips goes columns
first, then rows, the shorter way round, ties the positive way (docs/isa.md,
section 8); one between the two cores of a chip takes the sender's on-chip
link. Link ids: chip k's x+, x-, y+, y-, then the on-chip link of each of
its two cores, from 6k.

The collective-permute shifting every core's f32[1024] to the next core
(tests below) moves, per core, its 4096 bytes to core c + 1 mod 8 and, in
the two-phase barrier before it (backend/tpu/lower_coll_move.c), one 4-byte
word to every other core in each phase. From that the expected transfers,
bytes and busy cycles of every link follow. The all-reduce module's line is
checked against the ring bound computed here from the target's figures:
2(N-1)/N x bytes / ici_bw + 2(N-1) x ici_latency / clock.
"""
import csv as csvmod
import json
import math
import os
import subprocess
import sys

TPUCC, WORK = sys.argv[1], sys.argv[2]
TARGET = "v3-8,clock=1GHz,ici_bw=64GB/s,ici_latency=100"
N, CLOCK, BW, LAT = 8, 1e9, 64e9, 100
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def route(src, dst):
    """The link ids a transfer from core src to core dst crosses."""
    if src == dst:
        return []
    c0, c1 = src // 2, dst // 2
    if c0 == c1:
        return [6 * c0 + 4 + src % 2]
    x, y, x1, y1 = c0 % 2, c0 // 2, c1 % 2, c1 // 2
    links = []
    dx, dy = (x1 - x) % 2, (y1 - y) % 2
    sx = 1 if dx <= 2 - dx else -1
    sy = 1 if dy <= 2 - dy else -1
    for _ in range(dx if sx > 0 else 2 - dx):
        links.append(6 * (y * 2 + x) + (0 if sx > 0 else 1))
        x = (x + sx) % 2
    for _ in range(dy if sy > 0 else 2 - dy):
        links.append(6 * (y * 2 + x) + (2 if sy > 0 else 3))
        y = (y + sy) % 2
    return links


def expected_links():
    want = {}
    transfers = [(c, (c + 1) % N, 4096) for c in range(N)]
    transfers += [(c, d, 4) for _ in range(2) for c in range(N) for d in range(N) if d != c]
    for s, d, b in transfers:
        for k in route(s, d):
            t, by, busy = want.get(k, (0, 0, 0))
            want[k] = (t + 1, by + b, busy + max(1, math.ceil(b / 64)))
    return want


def run(args):
    p = subprocess.run([TPUCC, "run"] + args, capture_output=True, text=True)
    check(p.returncode == 0, "tpucc run %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p


os.makedirs(WORK, exist_ok=True)
shift = os.path.join(WORK, "shift8.hlo")
with open(shift, "w") as f:
    f.write("HloModule shift8, replica_count=8\nENTRY e {\n  x = f32[1024] parameter(0)\n"
            "  ROOT y = f32[1024] collective-permute(x), source_target_pairs="
            "{{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7},{7,0}}\n}\n")
ar = os.path.join(WORK, "ar8.hlo")
with open(ar, "w") as f:
    f.write("HloModule ar8, replica_count=8\nadd {\n  a = f32[] parameter(0)\n"
            "  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n"
            "  x = f32[1024] parameter(0)\n"
            "  ROOT r = f32[1024] all-reduce(x), replica_groups={}, to_apply=add\n}\n")

# ---- the collective-permute: every used link, hand-derived -------------
js, tr, csv = (os.path.join(WORK, n) for n in ("s.json", "t.json", "r.csv"))
p = run([shift, "--target=" + TARGET, "--random-inputs", "--output=", "--stats",
         "--stats-json=" + js, "--trace=" + tr, "--report=" + csv])
s = json.load(open(js))
want = expected_links()
got = {l["id"]: (l["transfers"], l["bytes"], l["busy_cycles"]) for l in s["links"]}
check(got == want, "links: got %s, want %s" % (sorted(got.items()), sorted(want.items())))
check(len(want) == 16, "16 used links derived, %d" % len(want))
check(s["cores"] == N and len(s["per_core"]) == N, "eight cores")
cycles = max(c["cycles"] for c in s["per_core"])
check(s["cycles"] == cycles, "the run's cycles are the slowest core's")
check(s["all_reduce"] is None, "no all-reduce in a collective-permute")
for c in s["per_core"]:
    check(c["ici_sent_bytes"] == 4096 + 2 * 7 * 4, "core %d sent %d" % (c["core"], c["ici_sent_bytes"]))
    check(c["ici_received_bytes"] == 4096 + 2 * 7 * 4, "core %d received" % c["core"])
    check(c["ici_puts"] == 1 + 2 * 7, "core %d puts" % c["core"])
    check(c["compute_cycles"] == c["cycles"] - c["ici_wait_cycles"], "core %d compute" % c["core"])
text = p.stderr.splitlines()
for l in s["links"]:
    check(abs(l["utilisation"] - l["busy_cycles"] / cycles) < 1e-6, "utilisation of " + l["name"])
    line = [t for t in text if t.startswith("  " + l["name"] + "  ")]
    check(len(line) == 1 and line[0].split()[-4:-1] == [str(l["transfers"]), str(l["bytes"]),
                                                         str(l["busy_cycles"])],
          "--stats line of %s: %s" % (l["name"], line))
check(sum(1 for t in text if t.startswith("  chip")) == 16, "16 link lines in --stats")
# --report=FILE.csv: a row per core and per used link, the JSON's figures
rows = list(csvmod.reader(open(csv)))
check(rows[0][:3] == ["kind", "index", "name"], "csv header")
links = [r for r in rows[1:] if r[0] == "link"]
check(len(links) == 16 and all(want[int(r[1])] == tuple(int(v) for v in r[9:12]) for r in links),
      "csv link rows")
cores = [r for r in rows[1:] if r[0] == "core"]
check([int(r[3]) for r in cores] == [c["cycles"] for c in s["per_core"]], "csv core rows")
# --trace: pid 9 holds the links, a span per transfer and link crossed
events = json.load(open(tr))
spans = {}
for e in events:
    if e.get("pid") == 9 and e.get("ph") == "X":
        t, b, busy = spans.get(e["tid"], (0, 0, 0))
        spans[e["tid"]] = (t + 1, b + e["args"]["bytes"], busy + e["dur"])
check(spans == want, "trace link spans: %s" % sorted(spans.items()))
names = {e["tid"]: e["args"]["name"] for e in events
         if e.get("pid") == 9 and e.get("name") == "thread_name"}
check(names == {l["id"]: l["name"] for l in s["links"]}, "trace link names")
check(any(e.get("name") == "process_name" and e["args"]["name"] == "ICI links" for e in events),
      "trace: the ICI links process")

# ---- the all-reduce: its line against the ring bound ---------------------
p = run([ar, "--target=" + TARGET, "--random-inputs", "--output=", "--stats", "--stats-json=" + js,
         "--report=-"])
s = json.load(open(js))
a = s["all_reduce"]
secs = s["cycles"] / CLOCK
bound = 2 * (N - 1) / N * 4096 / BW + 2 * (N - 1) * LAT / CLOCK
check(a is not None and a["bytes"] == 4096, "the all-reduce's bytes")
check(abs(a["seconds"] - secs) < 1e-12, "all-reduce seconds %s" % a)
check(abs(a["bound_seconds"] - bound) < 1e-12, "bound %g, want %g" % (a["bound_seconds"], bound))
check(abs(a["bus_bandwidth"] / (2 * (N - 1) / N * 4096 / secs) - 1) < 1e-8, "bus bandwidth")
check(abs(a["bound_fraction"] - bound / secs) < 1e-6, "bound fraction")
want_line = "  all-reduce of 4096 bytes over 8 cores: %.6g s (the run), bus %.4g GB/s; ring bound " \
            "%.6g s, bound/time %.3f" % (secs, 2 * (N - 1) / N * 4096 / secs * 1e-9, bound, bound / secs)
check(p.stderr.count(want_line) == 1, "--stats all-reduce line, want %r" % want_line)
check(p.stdout.count(want_line) == 1, "--report=- all-reduce line")
check(p.stdout.startswith("per-core report (target %s, 8 cores, %d cycles)" % (TARGET, s["cycles"])),
      "--report=- heading")

# ---- flags a replicated run still refuses -------------------------------
p = subprocess.run([TPUCC, "run", ar, "--target=" + TARGET, "--random-inputs", "--roofline=x.svg"],
                   capture_output=True, text=True)
check(p.returncode != 0 and "runs 1 replica with these flags" in p.stderr, "--roofline refused")
sys.exit(1 if failures else 0)
