# Device run: PoRep-shaped partitions (porep_partition) at growing sizes, each its own process, so a
# failure at 2^27 leaves the smaller results printed. Per size: the circuit's counts, then
# `cuzk bench --backend cuda --device-keygen on` (synthesis, GPU keygen kept on the GPU, proof, arkworks
# verification): the phase table with host and device memory, the keygen steps, and "verified".
#
#   bash tools/gpu_partition.sh [LOG_SIZE ...]        (default: 20 24 27; JSON per size in $OUT)
#
# Kernels: prebuilt cubins in $CUZK_CUBIN_DIR (tools/build_cubins.py), else NVRTC compiles them.
# Each size gets at most $CUZK_PART_TIMEOUT seconds (default 560: under the 10-minute command limit).
set -o pipefail
source tools/device_setup.sh
export CUZK_CUBIN_DIR=${CUZK_CUBIN_DIR:-$PWD/.cubin} CUZK_CACHE_DIR=${CUZK_CACHE_DIR:-/tmp/cz}
OUT=${OUT:-/tmp}
sizes=${*:-20 24 27}
free -g | head -2
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader
for k in $sizes; do
    echo "=== porep_partition 2^$k ==="
    python3 -c "from cuzk.circuits import porep_partition as p; print(p.counts($k))"
    t0=$(date +%s)
    timeout "${CUZK_PART_TIMEOUT:-560}" python3 -m cuzk bench --backend cuda --circuit porep_partition --log-size "$k" \
        --device-keygen on --json "$OUT/partition_$k.json" 2>&1 | grep -v "^\s*$"
    rc=$?
    echo "2^$k: exit $rc, wall $(( $(date +%s) - t0 )) s"
done
