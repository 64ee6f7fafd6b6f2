# Session 2, device call 6 (last of the session's device time): GPU-side optimizations at 2^24 with C1
# (porep_partition; A1/A2 act on the generic ConstraintSystem only, which this circuit's numpy writer does
# not use); the founding scenario (all five against each alone, 10 circuits synthesized in 10 threads);
# the zkey-on-GPU tests.
set -o pipefail
source tools/device_setup.sh >/dev/null 2>&1
export CUZK_CUBIN_DIR=$PWD/.cubin CUZK_CACHE_DIR=/tmp/cz
t0=$(date +%s)
summ() { python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("setup", {k: r["setup"][k] for k in ("circuit", "log_size", "circuits", "repeat", "parallel_synthesis")}, "wall", round(r["wall_s"]), "s")
for c in r["configurations"]:
    a = c["areas"]
    print(f'{c["label"]:<9}' + " ".join(f'{p}={a[p]["median_s"]*1e3:.1f}' for p in r["areas"]))
for o in r["optimizations"]:
    print(o["name"], {p: (round(e["ratio"], 3), e["low"] and round(e["low"], 3), e["high"] and round(e["high"], 3), e["verdict"])
                      for p, e in o["alone"].items() if p in o["phases"] + ["total"]})
print("attribution", {a: v["optimizations"] for a, v in r["attribution"].items()})
print("interactions", [(i["area"], round(i["all_ratio"], 3), round(i["product_of_singles"], 3)) for i in r["interactions"] if i["significant"]])
PY
}
timeout 165 python3 -m cuzk ablate --backend cuda --circuit porep_partition --log-size 24 --repeat 8 \
    --opt-set D4,C1,B1 --no-leave-one-out --json $OUT/ablate_part24.json --png $OUT/ablate_part24.png \
    > $OUT/ablate_part24.md 2>$OUT/ablate_part24.err
echo "ablate 2^24 rc=$? at $(( $(date +%s) - t0 )) s"; tail -2 $OUT/ablate_part24.err; summ $OUT/ablate_part24.json
timeout 85 python3 -m cuzk ablate --backend cuda --circuit porep_like --log-size 16 --circuits 10 --repeat 8 \
    --parallel-synthesis 10 --synthesis-pool thread --no-leave-one-out \
    --json $OUT/scenario16.json --png $OUT/scenario16.png > $OUT/scenario16.md 2>$OUT/scenario16.err
echo "scenario rc=$? at $(( $(date +%s) - t0 )) s"; tail -2 $OUT/scenario16.err; summ $OUT/scenario16.json
timeout 40 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_zkey_gpu.py 2>&1 | tail -2
echo "done at $(( $(date +%s) - t0 )) s"
