# 10 PoRep partitions at 2^27 on 1, 2, 4 (and 8) GPUs of one host, `bench --pipeline --devices d`, every proof
# verified: seconds a proof and the scaling efficiency against one GPU (tools/pipeline_table.py --scaling).
# Run from the repository root on a machine with several GPUs (a device kind of 2 or more), carrying .cubin
# and .whl; DEVICES="1 2" picks the runs. Each run makes its keys on the GPUs (about 55 s, side by side after the first) before the clock.
set -o pipefail
source tools/device_setup.sh >/dev/null 2>&1
export CUZK_CUBIN_DIR=$PWD/.cubin CUZK_CACHE_DIR=/tmp/cz CUZK_REQUIRE_GPU=1
OUT=${OUT:-out}; mkdir -p "$OUT"
n=$(nvidia-smi -L | wc -l); nproc; free -g | head -2; echo "GPUs: $n"
for d in ${DEVICES:-1 2 4 8}; do      # one device call each where a call is limited (DEVICES=2 OUT=...)
    [ "$d" -le "$n" ] || break
    timeout "${RUN_TIMEOUT:-590}" python3 -m cuzk bench --backend cuda --circuit porep_partition --log-size 27 \
        --circuits "${CIRCUITS:-10}" --pipeline --devices "$d" --device-keygen on \
        --json "$OUT/multi-$d.json" --timeline "$OUT/multi-$d.png" 2>&1 | grep -v "^key" | tail -8
done
python3 tools/pipeline_table.py --scaling "$OUT"/multi-*.json
