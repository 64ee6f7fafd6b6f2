# Nsight Compute on the G1 affine round kernels of one 2^K MSM (round 0 keyed, rounds 1-2): what bounds
# them (pipes, stall reasons, memory) (docs/perf-log.md, 2026-11-29). Clocks left alone (--clock-control none,
# METHOD.md).
#   bash tools/ncu_msm_affine.sh [K]     (default 24; report in $OUT/ncu_affine$TAG.txt)
# $MSM_KERNEL_OPTS picks the kernels' toggles (tools/msm_once.py); $TAG names the report.
source tools/profiler_env.sh
K=${1:-24}
[ -n "$NCU" ] || { echo "no ncu"; exit 2; }
M=sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active
M=$M,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active
M=$M,sm__inst_executed.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
for r in long_scoreboard short_scoreboard wait math_pipe_throttle barrier lg_throttle not_selected mio_throttle \
    no_instruction branch_resolving; do
  M=$M,smsp__average_warp_latency_issue_stalled_$r.ratio
done
R=$OUT/ncu_affine$TAG.txt
timeout 240 "$NCU" --clock-control none --kernel-name regex:'g1_affine_round' --launch-count 3 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy \
    --section SchedulerStats --section WarpStateStats --section LaunchStats --section InstructionStats \
    --metrics "$M" python3 tools/msm_once.py "$K" > "$R" 2>&1
echo "profile: exit $?"
grep -E 'g1_affine|Duration|DRAM Throughput|L2 Hit|L1/TEX Hit|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Issued Ipc|Issue Slots Busy|No Eligible|Eligible Warps|Warp Cycles Per Issued|sm__|smsp__|l1tex__|Stall|stall' \
    "$R" | cut -c1-300 | head -90
