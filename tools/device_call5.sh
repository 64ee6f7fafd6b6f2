# Session 2, device call 5: NTT/H tests with r4 as the default; pipelined proving of 10 circuits at
# 2^24 (shared-memory hand-off) and of 10 PoRep-shaped partitions at 2^27 (key kept on the GPU).
set -o pipefail
source tools/device_setup.sh >/dev/null 2>&1
export CUZK_CUBIN_DIR=$PWD/.cubin CUZK_CACHE_DIR=/tmp/cz
timeout 40 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu.py -k "ntt or h_matches or pipeline_proofs" 2>&1 | tail -2
timeout 70 python3 -m cuzk bench --backend cuda --circuit porep_partition --log-size 24 --circuits 10 --pipeline --compare \
    --device-keygen on --timeline $OUT/pipeline_part24.png --json $OUT/pipeline_part24.json 2>&1 | tail -5
free -g | head -2
timeout 440 python3 -m cuzk bench --backend cuda --circuit porep_partition --log-size 27 --circuits 10 --pipeline --compare \
    --pipeline-workers 3 --pipeline-depth 2 --device-keygen on \
    --timeline $OUT/pipeline_part27.png --json $OUT/pipeline_part27.json 2>&1 | tail -20
python3 tools/pipeline_table.py $OUT/pipeline_part24.json $OUT/pipeline_part27.json
