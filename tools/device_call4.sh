# Session 2, device call 4: GPU tests with the affine G1 default; NTT variant timings; the 2^27
# PoRep-shaped partition (key made and kept on the GPU) with the fastest correct NTT variant.
set -o pipefail
source tools/device_setup.sh
export CUZK_CUBIN_DIR=$PWD/.cubin CUZK_CACHE_DIR=/tmp/cz
t0=$(date +%s)
timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider -x tests/test_gpu_msm.py tests/test_gpu_partition.py \
  "tests/test_gpu_ntt_reg.py" "tests/test_gpu.py::test_gpu_pipeline_proofs_verify" \
  "tests/test_gpu.py::test_each_optimization_gives_valid_proofs" 2>&1 | tail -4
echo "tests: $(( $(date +%s) - t0 )) s"
timeout 130 python3 tools/gpu_ntt_check.py --no-tests 2>&1 | tail -16
best=$(cat $OUT/ntt_best.txt 2>/dev/null || echo r2)
echo "NTT variant for the partition: $best  (elapsed $(( $(date +%s) - t0 )) s)"
CUZK_NTT_VARIANT=$best CUZK_PART_TIMEOUT=$(( 560 - ($(date +%s) - t0) )) bash tools/gpu_partition.sh 27 2>&1 | tail -30
