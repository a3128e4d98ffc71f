"""check.py: structural checks of tpucc's per-op reports (tests/report).

  check.py CSV TRACE SVG
The CSV has the documented columns, its exclusive cycles sum to the run's
cycles (the furthest end_cycle); the trace is JSON whose spans on each unit
never overlap without nesting and whose op spans carry op names; the SVG is
well-formed XML with one marker per row that has FLOPs."""
import csv
import json
import sys
import xml.etree.ElementTree as ET

COLUMNS = ("op,name,kind,source,instructions,first_cycle,end_cycle,cycles,exclusive_cycles,"
           "share,stall_weight_load,stall_dma_wait,stall_dependency,stall_other,mxu_busy_cycles,"
           "mxu_macs,useful_macs,vpu_instructions,vpu_element_ops,hbm_read_bytes,hbm_write_bytes,"
           "hbm_busy_cycles,flops,intensity,achieved_flops,attainable_flops,roofline_fraction,"
           "bound").split(",")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check_csv(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
        f.seek(0)
        header = f.readline().strip().split(",")
    if header != COLUMNS:
        fail("CSV columns %s" % header)
    if not rows:
        fail("no rows")
    total = max(int(r["end_cycle"]) for r in rows)
    excl = sum(int(r["exclusive_cycles"]) for r in rows)
    if excl != total:
        fail("exclusive cycles sum to %d, the run took %d" % (excl, total))
    share = sum(float(r["share"]) for r in rows)
    if abs(share - 1.0) > 1e-3:
        fail("shares sum to %f" % share)
    for r in rows:
        if int(r["cycles"]) != int(r["end_cycle"]) - int(r["first_cycle"]):
            fail("cycles of %s" % r["name"])
        if r["bound"] not in ("compute", "memory", "-"):
            fail("bound %s" % r["bound"])
        if float(r["flops"]) > 0 and r["bound"] == "-":
            fail("op with flops has no bound")
    return rows, total


def check_trace(path, names):
    with open(path) as f:
        ev = json.load(f)
    spans = [e for e in ev if e.get("ph") == "X"]
    if not spans:
        fail("trace has no spans")
    ops = [e for e in spans if e.get("cat") == "op"]
    if not ops:
        fail("trace has no op spans")
    for e in ops:
        if e["name"].split(" (")[0] not in names:
            fail("span %s names no op of the report" % e["name"])
    if not any(e.get("ph") == "C" and "HBM" in e["name"] for e in ev):
        fail("no HBM bandwidth counter")
    by_tid = {}
    for e in spans:
        by_tid.setdefault(e["tid"], []).append(e)
    for tid, es in by_tid.items():
        es.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in es:
            b, x = e["ts"], e["ts"] + e["dur"]
            while stack and b >= stack[-1][1]:
                stack.pop()
            if stack and x > stack[-1][1]:
                fail("unit %d: span %s [%d,%d) overlaps [%d,%d)" % (tid, e["name"], b, x,
                                                                   stack[-1][0], stack[-1][1]))
            stack.append((b, x))
    return len(spans)


def check_svg(path, rows):
    root = ET.parse(path).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    marks = [c for c in root.iter(ns + "circle") if c.get("class") == "op"]
    want = sum(1 for r in rows if float(r["flops"]) > 0 and int(r["cycles"]) > 0)
    if len(marks) != want:
        fail("SVG has %d markers for %d ops with FLOPs" % (len(marks), want))
    if not [p for p in root.iter(ns + "polyline") if p.get("class") == "ceiling"]:
        fail("SVG has no ceilings")


rows, total = check_csv(sys.argv[1])
n = check_trace(sys.argv[2], {r["name"] for r in rows})
check_svg(sys.argv[3], rows)
print("ok: %d rows, %d cycles, %d spans" % (len(rows), total, n))
