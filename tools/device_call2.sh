# Session 2, device call 2: GPU tests of the partition/pipeline merges, porep_partition at 2^20/2^24,
# pipelined proving of 10 circuits.
set -o pipefail
source tools/device_setup.sh
export CUZK_CUBIN_DIR=$PWD/.cubin CUZK_CACHE_DIR=/tmp/cz
nproc; free -g | head -2
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_partition.py tests/test_pipeline.py \
  tests/test_gpu_keygen.py "tests/test_gpu.py::test_gpu_pipeline_proofs_verify" "tests/test_gpu.py::test_prep_msm_matches_cpu" \
  "tests/test_gpu.py::test_each_optimization_gives_valid_proofs" "tests/test_gpu.py::test_key_too_large_fails_cleanly_then_next_proof_works" 2>&1 | tail -4
CUZK_PART_TIMEOUT=150 bash tools/gpu_partition.sh 20 24 2>&1 | tail -45
timeout 120 python3 -m cuzk bench --backend cuda --log-size 20 --circuits 10 --pipeline --compare \
    --timeline $OUT/pipeline20.png --json $OUT/pipeline20.json 2>&1 | grep -v keygen | tail -8
timeout 150 python3 -m cuzk bench --backend cuda --circuit porep_partition --log-size 24 --circuits 10 --pipeline --compare \
    --device-keygen on --timeline $OUT/pipeline_part24.png --json $OUT/pipeline_part24.json 2>&1 | tail -8
python3 tools/pipeline_table.py $OUT/pipeline20.json $OUT/pipeline_part24.json
