# Final device run of a session: GPU tests, MSM timing with the current window choice, full proofs on the GPU.
set -o pipefail
source tools/device_setup.sh
export CUZK_CUBIN_DIR=$PWD/.cubin CUZK_CACHE_DIR=/tmp/cz
python3 -m pytest -q -m gpu tests/test_gpu.py tests/test_gpu_msm.py -p no:cacheprovider 2>&1 | tail -2
python3 tools/gpu_msm_check.py "G1 MSM 2^26" 2>&1 | tail -2
for n in 1 4; do python3 -m cuzk bench --backend cuda --log-size 16 --circuits $n --json $OUT/bench16x$n.json 2>&1 | grep -v keygen | tail -12; done
python3 -m cuzk bench --backend cuda --log-size 16 --circuits 4 --opt all --json $OUT/bench16x4all.json 2>&1 | tail -11
