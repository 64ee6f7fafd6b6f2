# Nsight Compute's source counters (warp stall sampling by SASS offset) on the keyed affine round of one 2^K
# G1 MSM: which instructions the long-scoreboard stalls sit on (docs/perf-log.md, 2026-11-29). The offsets
# map to `cuobjdump -sass` of the same prebuilt cubin (.cubin/msm_g1-*.cubin). Clocks left alone.
#   bash tools/ncu_msm_sources.sh [K]     (report in $OUT/ncu_src.txt, raw page in $OUT/ncu_src.csv)
source tools/profiler_env.sh
K=${1:-22}
[ -n "$NCU" ] || { echo "no ncu"; exit 2; }
timeout 200 "$NCU" --clock-control none --kernel-name regex:'g1_affine_round_keyed' --launch-count 1 \
    --section SourceCounters --section WarpStateStats -o "$OUT/ncu_src" \
    python3 tools/msm_once.py "$K" > "$OUT/ncu_src.txt" 2>&1
echo "profile: exit $?"
# per-instruction samples (address, SASS, stall reasons) as CSV
timeout 120 "$NCU" --import "$OUT/ncu_src.ncu-rep" --page source --csv --print-source sass \
    > "$OUT/ncu_src.csv" 2>&1
echo "source page: exit $? ($(wc -l < "$OUT/ncu_src.csv") lines)"
python3 - "$OUT/ncu_src.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
hdr = next((i for i, r in enumerate(rows) if any("Address" in c for c in r)), None)
if hdr is None:
    print("no table:", rows[:3]); sys.exit()
h = rows[hdr]
def col(name):
    return next((i for i, c in enumerate(h) if c.strip() == name), None)
a, s = col("Address"), col("Source")
samp = next((i for i, c in enumerate(h) if "Warp Stall Sampling (All" in c), None)
lsb = next((i for i, c in enumerate(h) if "long_scoreboard" in c.lower()), None)
print("columns:", [c for c in h][:40])
data = []
for r in rows[hdr + 1:]:
    try:
        data.append((float(r[samp] or 0), float(r[lsb] or 0) if lsb is not None else 0.0, r[a], r[s][:70]))
    except (ValueError, IndexError, TypeError):
        pass
tot = sum(d[0] for d in data) or 1
print(f"{len(data)} instructions, {tot:.0f} samples")
for d in sorted(data, reverse=True)[:40]:
    print(f"{d[0]/tot*100:5.1f}%  lsb {d[1]:8.0f}  {d[2]}  {d[3]}")
PY
