# Session 2, device call 6: C1 and the GPU-side optimizations at 2^24 (porep_partition; A1/A2 act on the
# generic ConstraintSystem only, which this circuit's numpy writer does not use), then the cuzk side of
# the snarkjs ratio at 2^16/2^18.
set -o pipefail
source tools/device_setup.sh >/dev/null 2>&1
export CUZK_CUBIN_DIR=$PWD/.cubin CUZK_CACHE_DIR=/tmp/cz
t0=$(date +%s)
timeout 170 python3 -m cuzk ablate --backend cuda --circuit porep_partition --log-size 24 --repeat 8 \
    --opt-set B1,D4,A4,C1 --no-leave-one-out --json $OUT/ablate_part24.json --png $OUT/ablate_part24.png \
    > $OUT/ablate_part24.md 2>$OUT/ablate_part24.err
echo "ablate rc=$? in $(( $(date +%s) - t0 )) s"; tail -3 $OUT/ablate_part24.err
python3 - <<'PY'
import json, os
r = json.load(open(os.path.join(os.environ["OUT"], "ablate_part24.json")))
for c in r["configurations"]:
    a = c["areas"]
    print(f'{c["label"]:<9}' + " ".join(f'{p}={a[p]["median_s"]*1e3:.1f}' for p in r["areas"]))
for o in r["optimizations"]:
    print(o["name"], {p: (round(e["ratio"], 3), e["verdict"]) for p, e in o["alone"].items() if p in o["phases"] + ["total"]})
PY
[ -f tools/gpu_snarkjs_ratio.sh ] && timeout $(( 270 - ($(date +%s) - t0) )) bash tools/gpu_snarkjs_ratio.sh 2>&1 | tail -15
