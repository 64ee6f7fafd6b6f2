# Sourced by the device profiling scripts (ncu_*.sh, nsys_resident.sh): the device setup, the prebuilt cubins,
# $OUT, and the profilers found on the machine ($NCU, $NSYS; empty when absent). Clocks are never touched.
set -o pipefail
source tools/device_setup.sh >/dev/null 2>&1
export CUZK_CUBIN_DIR=${CUZK_CUBIN_DIR:-$PWD/.cubin} CUZK_CACHE_DIR=${CUZK_CACHE_DIR:-/tmp/cz}
OUT=${OUT:-/tmp}
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-systems*/*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys \
       /usr/local/cuda/bin/nsys 2>/dev/null | head -1)
