"""Summarize ncu's source page (--page source --csv --print-source sass): stall samples summed by opcode and by
stall reason, and the top instructions.
    python3 tools/ncu_source_summary.py FILE.csv [TOP]
"""
import csv
import sys
from collections import defaultdict

rows = list(csv.reader(open(sys.argv[1], errors="replace")))
top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
hdr = next((i for i, r in enumerate(rows) if any(c.strip() == "Address" for c in r)), None)
if hdr is None:
    sys.exit(f"no table: {rows[:3]}")
h = [c.strip() for c in rows[hdr]]
a, s = h.index("Address"), h.index("Source")
samp = next(i for i, c in enumerate(h) if c.startswith("Warp Stall Sampling (All"))
execd = next((i for i, c in enumerate(h) if c == "Instructions Executed"), None)
reasons = [(i, c) for i, c in enumerate(h) if c.startswith("stall_") or ("Stall" in c and "(All" not in c and
                                                                          "Not-issued" not in c)]


def num(v):
    try:
        return float(str(v).replace(",", "") or 0)
    except ValueError:
        return 0.0


data = [r for r in rows[hdr + 1:] if len(r) == len(h)]
tot = sum(num(r[samp]) for r in data) or 1
ins = sum(num(r[execd]) for r in data) if execd is not None else 0
print(f"{len(data)} instructions, {tot:.0f} samples, {ins:.3g} warp instructions executed")
by_op, by_op_n = defaultdict(float), defaultdict(float)
for r in data:
    op = r[s].split()[0] if r[s].split() else "?"
    if op.startswith("@"):
        op = r[s].split()[1] if len(r[s].split()) > 1 else op
    op = op.split(".")[0]
    by_op[op] += num(r[samp])
    if execd is not None:
        by_op_n[op] += num(r[execd])
print("| opcode | samples % | executed % |")
print("|---|---|---|")
for op, v in sorted(by_op.items(), key=lambda t: -t[1])[:25]:
    print(f"| {op} | {v / tot * 100:.1f} | {by_op_n[op] / (ins or 1) * 100:.1f} |")
if reasons:
    sums = {c: sum(num(r[i]) for r in data) for i, c in reasons}
    st = sum(sums.values()) or 1
    print("stall reasons (share of the per-reason samples):")
    for c, v in sorted(sums.items(), key=lambda t: -t[1])[:14]:
        print(f"  {v / st * 100:5.1f}%  {c}")
print(f"top {top} instructions by samples:")
for r in sorted(data, key=lambda r: -num(r[samp]))[:top]:
    print(f"{num(r[samp]) / tot * 100:5.2f}%  {r[a]}  {r[s][:80]}")
