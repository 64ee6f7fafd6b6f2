# The snarkjs ratio with both provers on the GPU machine: node and snarkjs come from the carried
# .nodebundle (tools/node_bundle.sh), the files are made there (GPU keygen), then `cuzk bench-snarkjs` times
# `snarkjs groth16 prove` (all the machine's cores), the cuzk CLI and the resident cuzk proof on the same files,
# each proof verified by the other side.
#   bash tools/gpu_snarkjs_same_machine.sh [SIZES]        (default 16,18; JSON in $OUT/snarkjs_same.json)
set -o pipefail
source tools/device_setup.sh >/dev/null 2>&1
export CUZK_CUBIN_DIR=${CUZK_CUBIN_DIR:-$PWD/.cubin} CUZK_CACHE_DIR=${CUZK_CACHE_DIR:-/tmp/cz}
OUT=${OUT:-/tmp}
SIZES=${1:-16,18}
[ -f .nodebundle/node.xz ] || { echo "no .nodebundle (bash tools/node_bundle.sh, then carry it)"; exit 2; }
python3 - <<'PY'
import lzma, os, shutil, tarfile
os.makedirs("/tmp/nodeb/bin", exist_ok=True)
with lzma.open(".nodebundle/node.xz") as f, open("/tmp/nodeb/bin/node", "wb") as g:
    shutil.copyfileobj(f, g)
os.chmod("/tmp/nodeb/bin/node", 0o755)
with tarfile.open(".nodebundle/snarkjs-modules.tar.xz") as t:
    t.extractall("/tmp/nodeb/sj")
with open("/tmp/nodeb/bin/snarkjs", "w") as f:
    f.write('#!/bin/sh\nexec /tmp/nodeb/bin/node /tmp/nodeb/sj/node_modules/snarkjs/build/cli.cjs "$@"\n')
os.chmod("/tmp/nodeb/bin/snarkjs", 0o755)
PY
export PATH=/tmp/nodeb/bin:$PATH CUZK_SNARKJS=/tmp/nodeb/bin/snarkjs
echo "node $(node --version), $(nproc) cores; $(snarkjs --version 2>&1 | head -1)"
timeout 540 python3 -m cuzk bench-snarkjs --log-sizes "$SIZES" --backend cuda --keygen-backend cuda --repeat 3 \
    --workdir /tmp/sjb --json "$OUT/snarkjs_same.json" 2>&1 | tail -8
