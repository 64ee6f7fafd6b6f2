# Device run: the gate's accuracy within one call (issue: thresholds from measured noise). Recording runs
# first (A/A under the config, each leaving a noise record), then gate runs under the thresholds derived from
# every record there is, until the deadline; each run its own calibrate invocation, so a killed call keeps
# what finished.
#
#   REC=2 INJ=ntt_msm_h:0.03,tail_msm:0.03 TAG=i3 bash tools/gpu_gate_accuracy.sh
#
# CFG    gate config (default tools/gate-cuda24.toml)          NZ   noise record prefix (default noise24)
# REC    recording runs to make first (default 0)             INJ  injection for the gated runs ("" = A/A)
# MACHINE  the recording runs' machine name (default h200 on an H200, else the GPU's name, e.g. nvidia-h100-80gb-hbm3)
# TAG    name of this batch's files                           RUNS most gated runs (default 99)
# DEADLINE  seconds after the start by which a run must end (default 575); MAXRUN  a run's longest (default 200)
#
# Noise records: DATA/$NZ-*.jsonl (DATA default .device; carried there, recorded ones added), so runs of several
# calls and leases share one set and merge (python -m cuzk.perf.calibrate --merge). Into $OUT: the new records,
# each run's calibrate JSON, and nz.tgz with every run's gate.json and log (a call returns at most 8 files).
set -u -o pipefail
START=$(date +%s)
source tools/device_setup.sh
export CUZK_CUBIN_DIR=${CUZK_CUBIN_DIR:-$PWD/.cubin} CUZK_CACHE_DIR=${CUZK_CACHE_DIR:-/tmp/cz}
CFG=${CFG:-tools/gate-cuda24.toml} NZ=${NZ:-noise24} REC=${REC:-0} INJ=${INJ:-} TAG=${TAG:-run}
RUNS=${RUNS:-99} DEADLINE=${DEADLINE:-575} MAXRUN=${MAXRUN:-200} DATA=${DATA:-.device}
OUT=$(realpath -m "${OUT:-/tmp/out}") W=/tmp/nz-$TAG
# the records' machine: the H200's as its records in docs/perf-data have it, else the GPU's name made a slug
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
[ "$GPU" = "NVIDIA H200" ] && MACHINE=${MACHINE:-h200}
MACHINE=${MACHINE:-$(echo "$GPU" | tr 'A-Z' 'a-z' | tr -cs 'a-z0-9._\n' '-' | sed 's/-*$//' | cut -c1-64)}
rm -rf "$W"                     # a warm machine keeps an earlier call's runs of the same TAG
mkdir -p "$OUT" "$DATA" "$W"
left() { echo $(( DEADLINE - ($(date +%s) - START) )); }
table=()

one() {  # one calibrate run: name, then calibrate's arguments
    local name=$1; shift
    local t=$(date +%s) limit=$(( $(left) - 5 ))
    [ "$limit" -gt 0 ] || return 0          # timeout 0 would mean no limit
    timeout "$limit" python3 -m cuzk.perf.calibrate --config "$CFG" --runs 1 --workdir "$W/$name" \
        --json "$OUT/$name.json" "$@" >"$W/$name.log" 2>&1
    local rc=$?
    local line
    line=$(python3 - "$OUT/$name.json" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))["runs"][0]
    rat = " ".join(f"{k.split('/')[-1]}={v:.4f}" for k, v in sorted(r["ratios"].items()))
    print(f"exit {r['exit']} flagged {','.join(x.split('/')[-1] for x in r['flagged']) or '-'} {rat}")
except Exception as e:
    print(f"no result ({type(e).__name__})")
EOF
)
    table+=("$name rc=$rc $(( $(date +%s) - t ))s $line")
    tail -3 "$W/$name.log"
}

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
for i in $(seq 1 "$REC"); do
    [ "$(left)" -gt "$MAXRUN" ] || break
    n=rec-$TAG-$i
    one "$n" --record-noise "$MACHINE"
    f=$(ls "$W/$n"/run*/gate-noise.jsonl 2>/dev/null | head -1)
    if [ -n "$f" ]; then cp "$f" "$DATA/$NZ-$TAG-$i.jsonl"; cp "$f" "$OUT/$NZ-$TAG-$i.jsonl"; fi
done
noise=()
for f in "$DATA/$NZ"-*.jsonl; do [ -f "$f" ] && noise+=(--noise "$f"); done
echo "noise records: $(( ${#noise[@]} / 2 ))"
k=0
while [ "$k" -lt "$RUNS" ] && [ "$(left)" -gt "$MAXRUN" ] && [ "${#noise[@]}" -gt 0 ]; do
    k=$((k + 1))
    if [ -n "$INJ" ]; then one "$TAG-$k" --inject "$INJ" "${noise[@]}"; else one "$TAG-$k" "${noise[@]}"; fi
done
# every run's gate.json, report and log, and the calibrate JSONs again: one file, whatever the count of runs
cp "$OUT"/*.json "$W"/ 2>/dev/null
(cd /tmp && find "nz-$TAG" -path '*/repo' -prune -o \( -name '*.json' -o -name '*.log' -o -name report.md \) -print0 |
    tar czf "$OUT/nz.tgz" --null -T -) || echo "no runs to pack"
# does the idle rival's CPU beside a sample follow how slow it was (docs/runners.md 4.1)?
mapfile -t gj < <(find "$W" -path '*/repo' -prune -o -name gate.json -print)
[ "${#gj[@]}" -eq 0 ] || python3 -m cuzk.perf.rival_idle "${gj[@]}" || true
# what else ran on the sampling CPU beside the samples (foreign_ms, the gate's read of the whole request), and what
# the sampling thread itself read across its timed calls (held_ms, away_ms), and the device interrupts served on
# the sampling CPU during each sample (irqs, a count), and what the device probes around a GPU sample waited
# (device_wait_us): the honest level the rules are set from
[ "${#gj[@]}" -eq 0 ] || python3 - "${gj[@]}" <<'EOF' || true
import json, statistics, sys
per, worst = {}, {}
for f in sys.argv[1:]:
    for o in json.load(open(f))["outcomes"]:
        for rd in o["rounds"]:
            for s in ("base", "head"):
                for a, ar in rd[s]["areas"].items():
                    n = ar.get("number", 1)
                    for k in ("foreign_ms", "held_ms", "away_ms", "irqs", "device_wait_us"):
                        per.setdefault((k, a), []).extend(x for x in ar.get(k) or [] if x is not None)
                    h, w = ar.get("held_ms") or [], ar.get("away_ms") or []
                    if h and None not in h and None not in w:    # a round's median share of the sample: the round rule
                        for k, xs in (("held", h), ("held+away", [x + y for x, y in zip(h, w)])):
                            m = statistics.median(x / 1e3 / (t * n) for x, t in zip(xs, ar["samples"]))
                            worst[(k, a)] = max(worst.get((k, a), 0.0), m)
q = lambda v, p: sorted(v)[min(len(v) - 1, int(p * len(v)))] if v else float("nan")
for (k, a), v in sorted(per.items()):
    print(f"{k:10s} {a:15s} n={len(v)} median {q(v, .5):.3f} p99 {q(v, .99):.3f} max {max(v, default=0):.3f}")
for (k, a), m in sorted(worst.items()):
    print(f"round median {k:9s} {a:15s} most {m:.4%} of the sample")
EOF
echo "=== $TAG: $(( $(date +%s) - START )) s"
[ "${#table[@]}" -eq 0 ] || printf '%s\n' "${table[@]}"
