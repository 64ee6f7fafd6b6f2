# 10 PoRep-shaped partitions at 2^27, pipelined, with witness-only workers (circuits.witness:
# no matrices, limbs written straight into shared memory) and the memory-planned default worker count
# (pipeline.plan_workers; the chosen count and its reasons go to stderr as "pipeline: N worker(s) ...").
set -o pipefail
source tools/device_setup.sh >/dev/null 2>&1
export CUZK_CUBIN_DIR=$PWD/.cubin CUZK_CACHE_DIR=/tmp/cz
nproc; free -g | head -2
timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider tests/pipeline/test_pipeline.py 2>&1 | tail -2
timeout 500 python3 -m cuzk bench --backend cuda --circuit porep_partition --log-size 27 --circuits 10 --pipeline --compare \
    --device-keygen on --timeline $OUT/p27.png --json $OUT/p27.json 2>&1 | grep -v "^key:" | tail -32
free -g | head -2
python3 tools/pipeline_table.py $OUT/p27.json
