# Device run (no node there): cuzk's GPU prover on snarkjs files, for the snarkjs ratio at 2^18.
#   1. the GPU tests of the zkey a/b/c path (tests/formats/test_zkey_gpu.py: GPU a/b/c = ZKey.assign, cuda proofs verify);
#   2. `cuzk bench-snarkjs --skip-snarkjs` at 2^16 and 2^18: porep_like files made here (GPU keygen), then
#      `cuzk prove --backend cuda` as a process (CLI) and with the key resident, median of 3, each proof
#      checked by cuzk's verifier;
#   3. a short table; with SNARKJS_S="16=T16,18=T18" (snarkjs prove seconds measured elsewhere on files made
#      the same way) also the ratios.
#
#   bash tools/gpu_snarkjs_ratio.sh            (JSON in $OUT/snarkjs_ratio.json)
#
# Kernels: prebuilt cubins in $CUZK_CUBIN_DIR (default ./.cubin, tools/build_cubins.py); without them NVRTC
# compiles every kernel first (minutes for the G2 MSM).
set -o pipefail
source tools/device_setup.sh >/dev/null 2>&1
export CUZK_CUBIN_DIR=${CUZK_CUBIN_DIR:-$PWD/.cubin} CUZK_CACHE_DIR=${CUZK_CACHE_DIR:-/tmp/cz}
OUT=${OUT:-/tmp}
[ -d "$CUZK_CUBIN_DIR" ] || echo "warning: no cubins in $CUZK_CUBIN_DIR: NVRTC compiles the kernels (slow)"
t0=$(date +%s)
timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider tests/formats/test_zkey_gpu.py 2>&1 | tail -3
echo "gpu tests: $(( $(date +%s) - t0 )) s"
t1=$(date +%s)
timeout 240 python3 -m cuzk bench-snarkjs --log-sizes 16,18 --backend cuda --keygen-backend cuda --skip-snarkjs \
    --repeat 3 --workdir /tmp/sjb --json "$OUT/snarkjs_ratio.json"
rc=$?
echo "bench-snarkjs: exit $rc, $(( $(date +%s) - t1 )) s"
[ -f "$OUT/snarkjs_ratio.json" ] && SNARKJS_S="${SNARKJS_S:-}" python3 - "$OUT/snarkjs_ratio.json" <<'EOF'
import json, os, sys
rows = json.load(open(sys.argv[1]))["rows"]
given = dict(kv.split("=") for kv in os.environ["SNARKJS_S"].split(",") if kv) if os.environ["SNARKJS_S"] else {}
print("| size | cuzk CLI s (samples) | cuzk resident s (samples) | verified | snarkjs s (given) | ratio CLI | ratio resident |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    s = r["samples"]
    sj = float(given[str(r["log_size"])]) if str(r["log_size"]) in given else None
    rat = lambda t: f"{sj / t:.1f}x" if sj else "-"
    print(f"| 2^{r['log_size']} | {r['cuzk_cli_s']:.3f} ({', '.join(f'{t:.3f}' for t in s['cuzk_cli'])}) | "
          f"{r['cuzk_resident_s']:.3f} ({', '.join(f'{t:.3f}' for t in s['cuzk_resident'])}) | {r['verified']} | "
          f"{sj if sj else '-'} | {rat(r['cuzk_cli_s'])} | {rat(r['cuzk_resident_s'])} |")
for r in rows:       # where the resident proof's time goes (its median sample), ms
    ph = r.get("resident_phases", {})
    print(f"2^{r['log_size']} resident phases (host / device ms): " + ", ".join(
        f"{p} {v['host_s'] * 1e3:.1f}/{(v['device_s'] or 0) * 1e3:.1f}" for p, v in ph.items()))
EOF
echo "total: $(( $(date +%s) - t0 )) s"
exit $rc
