# Device run: the prover's headline figures in one call, each with its own limit, a table last.
#   cuzk peer (sppark beside cuzk, results checked equal), G1 MSM 2^26 with and without P2 at the default table
#   budget, NTT 2^24 and 2^27, 10 x 2^27 partitions pipelined.
# The peer's sources and its shim come prebuilt in .peercache (git-ignored; carry it, no network there):
#   CUZK_CACHE_DIR=$PWD/.peercache/cz python -c "from cuzk.perf import peer; ..." (peer.fetch, peer.build sm_90)
set -u -o pipefail
START=$(date +%s)
source tools/device_setup.sh
export CUZK_CUBIN_DIR=${CUZK_CUBIN_DIR:-$PWD/.cubin} CUZK_CACHE_DIR=${CUZK_CACHE_DIR:-/tmp/cz}
OUT=$(realpath -m "${OUT:-/tmp/out}") DEADLINE=${DEADLINE:-570}
mkdir -p "$OUT" "$CUZK_CACHE_DIR"
[ -d .peercache/cz/peer ] && cp -r .peercache/cz/peer "$CUZK_CACHE_DIR/"
left() { echo $(( DEADLINE - ($(date +%s) - START) )); }
step() {  # name, limit s, command...: run while time is left, its log in $OUT
    local name=$1 lim=$2; shift 2
    local l; l=$(left); [ "$l" -lt "$lim" ] && lim=$l
    [ "$lim" -gt 10 ] || { echo "$name: no time left"; return 0; }
    local t=$(date +%s)
    timeout "$lim" "$@" >"$OUT/$name.log" 2>&1
    echo "$name rc=$? $(( $(date +%s) - t )) s"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
step peer 200 python3 -m cuzk peer --json "$OUT/peer.json"
step msm26 90 python3 -m cuzk micro msm --log-size 26 -p 1 -n 3 -w 1
step msm26_p2 120 env CUZK_OPT=+P2 python3 -m cuzk micro msm --log-size 26 -p 1 -n 3 -w 1
step ntt24 40 python3 -m cuzk micro ntt --log-size 24 -p 1 -n 5 -w 1
step ntt27 60 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1
step pipe27 200 python3 -m cuzk bench --backend cuda --circuit porep_partition --log-size 27 --circuits 10 \
    --pipeline --device-keygen on --json "$OUT/p27.json"
echo "== peer"; grep -v "^cuzk:" "$OUT/peer.log" | tail -7
for n in msm26 msm26_p2 ntt24 ntt27; do echo "== $n: $(grep Mean "$OUT/$n.log" | tail -1)"; done
echo "== pipe27"; python3 tools/pipeline_table.py "$OUT/p27.json" 2>&1 | tail -12
