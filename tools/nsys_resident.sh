# The GPU kernels of one resident proof at 2^K (porep_like, snarkjs-bench files): time per kernel name, launch
# count, and the proof's wall time, to see where a small proof's ~0.13 s goes (docs/perf-log.md, 2026-11-29).
# Nsight Systems when present, else Nsight Compute (gpu__time_duration per kernel; serialized, no gaps).
#   bash tools/nsys_resident.sh [K]
source tools/profiler_env.sh
K=${1:-18}
RUN="python3 tools/profile_resident.py $K /tmp/sjb cuda --once"
if [ -n "$NSYS" ]; then
  echo "nsys: $NSYS"
  timeout 200 "$NSYS" profile -o "$OUT/resident" --force-overwrite true --capture-range=cudaProfilerApi \
      --trace cuda $RUN 2>&1 | grep -v "^Collecting\|^Generating" | tail -5
  timeout 100 "$NSYS" stats --report cuda_gpu_kern_sum --format csv --output "$OUT/kern" "$OUT/resident.nsys-rep" \
      >/dev/null 2>&1
  timeout 100 "$NSYS" stats --report cuda_api_sum --format csv --output "$OUT/api" "$OUT/resident.nsys-rep" \
      >/dev/null 2>&1
  ls "$OUT"
  python3 - "$OUT" <<'PY'
import csv, glob, sys
for pat in ("kern*.csv", "api*.csv"):
    for f in glob.glob(f"{sys.argv[1]}/{pat}"):
        rows = list(csv.DictReader(open(f)))
        tot = sum(float(r.get("Total Time (ns)", 0) or 0) for r in rows)
        print(f"{f.rsplit('/', 1)[1]}: {len(rows)} names, total {tot / 1e6:.2f} ms")
        for r in rows[:25]:
            print(f"  {float(r['Total Time (ns)']) / 1e6:8.3f} ms  {r['Instances'] if 'Instances' in r else r.get('Num Calls')}"
                  f"  x  {r['Name'][:90]}")
PY
elif [ -n "$NCU" ]; then
  echo "ncu: $NCU (no nsys)"
  timeout 400 "$NCU" --clock-control none --profile-from-start off --metrics gpu__time_duration.sum --csv $RUN \
      > "$OUT/ncu_resident.csv" 2>&1
  python3 - "$OUT/ncu_resident.csv" <<'PY'
import csv, sys, collections
lines = [l for l in open(sys.argv[1]) if l.startswith('"')]
t, n = collections.Counter(), collections.Counter()
for r in csv.DictReader(lines):
    if r.get("Metric Name") == "gpu__time_duration.sum":
        v = float(r["Metric Value"].replace(",", ""))
        scale = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0}[r["Metric Unit"]]
        t[r["Kernel Name"][:90]] += v * scale; n[r["Kernel Name"][:90]] += 1
print(f"{sum(n.values())} kernels, {sum(t.values()):.2f} ms of kernel time")
for name, ms in t.most_common(30):
    print(f"  {ms:8.3f} ms  {n[name]:4d} x  {name}")
PY
else
  echo "neither nsys nor ncu"
fi
