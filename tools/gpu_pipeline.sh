# Pipelined proving on the GPU: 10 circuits with synthesis on host workers ahead of
# the prover, key resident, against the same 10 one after another (--compare). Prints a table last.
set -o pipefail
source tools/device_setup.sh
export CUZK_CUBIN_DIR=${CUZK_CUBIN_DIR:-$PWD/.cubin} CUZK_CACHE_DIR=${CUZK_CACHE_DIR:-/tmp/cz}
nproc; free -g | head -2
for k in 20 22; do
  timeout 270 python3 -m cuzk bench --backend cuda --log-size $k --circuits 10 --pipeline --compare \
    --timeline $OUT/pipeline$k.png --json $OUT/pipeline$k.json 2>&1 | grep -v keygen | tail -18
done
# the same 2^20 pipeline with threads instead of processes (GIL contention with the prover thread)
timeout 150 python3 -m cuzk bench --backend cuda --log-size 20 --circuits 10 --pipeline --synthesis-pool thread \
  --timeline $OUT/pipeline20thread.png --json $OUT/pipeline20thread.json 2>&1 | tail -3
python3 -m pytest -q -m gpu tests/pipeline/test_pipeline.py -p no:cacheprovider 2>&1 | tail -2
python3 tools/pipeline_table.py $OUT/pipeline20.json $OUT/pipeline22.json $OUT/pipeline20thread.json
