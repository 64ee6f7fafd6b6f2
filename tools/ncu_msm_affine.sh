# Nsight Compute on the G1 affine round kernels (variant 1 pairs vs variant 2 quads) of one 2^K MSM:
# why variant 2 took 895 ms of rounds at 2^26 where variant 1 took 453 (docs/perf-log.md, session 3),
# and how far variant 1 is from its bounds. Clocks left alone (--clock-control none, METHOD.md).
#   bash tools/ncu_msm_affine.sh [K]        (reports in $OUT/ncu_v1.txt, $OUT/ncu_v2.txt)
source tools/profiler_env.sh
K=${1:-24}
[ -n "$NCU" ] || { echo "no ncu"; exit 2; }
for v in 1 2; do
  timeout 240 "$NCU" --clock-control none --kernel-name regex:'g1_affine_(round|quad)' --launch-skip 2 --launch-count 2 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section SchedulerStats \
      --section WarpStateStats --section LaunchStats \
      python3 tools/experiments/msm_once.py "$K" "$v" > "$OUT/ncu_v$v.txt" 2>&1
  echo "variant $v: exit $?"
  grep -E 'g1_affine|Duration|DRAM Throughput|Memory Throughput|L2 Hit|L1/TEX Hit|Compute \(SM\)|Achieved Occupancy|Registers Per|Issued Ipc|No Eligible|Stall' "$OUT/ncu_v$v.txt" | head -40
done
