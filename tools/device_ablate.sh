# GPU ablation on the device: tools/device_ablate.sh NAME [cuzk ablate args...]
# Writes $OUT/NAME.json, $OUT/NAME.png and $OUT/NAME.md (the report).
set -o pipefail
source tools/device_setup.sh
export CUZK_CUBIN_DIR=$PWD/.cubin CUZK_CACHE_DIR=/tmp/cz
name=$1; shift
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
python3 -m cuzk ablate --backend cuda "$@" --json $OUT/$name.json --png $OUT/$name.png > $OUT/$name.md
rc=$?
tail -c 6000 $OUT/$name.md
echo "ablate rc=$rc"
