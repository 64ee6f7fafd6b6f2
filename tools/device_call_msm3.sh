# Device call (msm3 branch): variant-2 affine round kernels. The affine GPU tests, then variant 1 vs 2
# at 2^20, 2^24, 2^26 (c = auto and 20) with the 2^26 phase profile; table last. Needs .whl and a .cubin
# built from this tree (python tools/build_cubins.py --out .cubin) carried.
set -o pipefail
source tools/device_setup.sh >/dev/null 2>&1
export CUZK_CUBIN_DIR=$PWD/.cubin CUZK_CACHE_DIR=/tmp/cz
timeout 300 python3 tools/gpu_msm_v2_check.py --sizes 20,24,26 --reps 3 2>&1 | tail -45
