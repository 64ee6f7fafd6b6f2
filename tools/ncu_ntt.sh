# Nsight Compute on the NTT passes (r4 DIF) of one 2^K transform: what bounds a pass, given that a 1.23x
# faster Fr multiplication (Fr build 6) made the 2^27 NTT only 1.04x faster (docs/perf-log.md, 2026-11-29).
# Clocks left alone (--clock-control none, METHOD.md).
#   bash tools/ncu_ntt.sh [K]        (reports in $OUT/ncu_ntt_b1.txt, _b6.txt, _b6d.txt: build 6 with N4's DIF2)
# The Fr builds are ntt/reg's module builds (loader.BUILDS), picked by the variants r4, r4b6 and r4b6d.
source tools/profiler_env.sh
K=${1:-24}
[ -n "$NCU" ] || { echo "no ncu"; exit 2; }
variant() { case $1 in 1) echo r4 ;; 6) echo r4b6 ;; 6d) echo r4b6d ;; esac; }
for b in 1 6 6d; do
  timeout 200 "$NCU" --clock-control none --kernel-name regex:'ntt_r4_dif' \
      --launch-count 3 --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      --section Occupancy --section SchedulerStats --section WarpStateStats --section LaunchStats \
      --section InstructionStats \
      python3 tools/ntt_once.py "$K" "$(variant $b)" > "$OUT/ncu_ntt_b$b.txt" 2>&1
  echo "Fr build $b: exit $?"
  grep -E 'ntt_r4|Duration|DRAM Throughput|Memory Throughput|L1/TEX Hit|L2 Hit|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Issued Ipc|Issue Slots Busy|No Eligible|Executed Ipc|Shared Memory|Bank' "$OUT/ncu_ntt_b$b.txt" | head -45
done
# pipe utilization of the same passes (a separate run: an unknown metric name only fails this part)
M=sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active
M=$M,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active
M=$M,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active
M=$M,sm__inst_executed.sum,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_short_scoreboard.ratio
for b in 1 6 6d; do
  timeout 100 "$NCU" --clock-control none --kernel-name regex:'ntt_r4_dif' \
      --launch-count 3 --metrics "$M" python3 tools/ntt_once.py "$K" "$(variant $b)" > "$OUT/ncu_ntt_pipes_b$b.txt" 2>&1
  echo "pipes, Fr build $b: exit $?"
  grep -E 'ntt_r4|sm__|smsp__' "$OUT/ncu_ntt_pipes_b$b.txt" | head -40
done
