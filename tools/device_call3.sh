# Session 2, device call 3: the msm2 and ntt2 merges (affine bucket sums, parallel window reduction,
# register-radix NTT variants, C1 batch addition): GPU tests and timings, each step time-boxed.
set -o pipefail
source tools/device_setup.sh
export CUZK_CUBIN_DIR=$PWD/.cubin CUZK_CACHE_DIR=/tmp/cz
timeout 320 python3 tools/gpu_msm_affine_check.py --sizes 20,24,26 --reps 3 2>&1 | tail -40
timeout 230 python3 tools/gpu_ntt_check.py 2>&1 | tail -40
