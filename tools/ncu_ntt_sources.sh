# Nsight Compute on the first DIF pass of one 2^K NTT (default variant r4b6dts): warp stall reasons, pipe use, and the
# source counters (stall samples per SASS instruction, summed by opcode). Clocks left alone (METHOD.md).
#   bash tools/ncu_ntt_sources.sh [K] [VARIANT]   (report in $OUT/ncu_ntt_src.txt, per-instruction CSV in .csv)
source tools/profiler_env.sh
K=${1:-27}
V=${2:-r4b6dts}
[ -n "$NCU" ] || { echo "no ncu"; exit 2; }
M=sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active
M=$M,sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active
M=$M,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active
M=$M,sm__inst_executed.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
timeout 240 "$NCU" --clock-control none --kernel-name regex:'ntt_r4_dif' --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section SchedulerStats --section Occupancy \
    --metrics "$M" -o "$OUT/ncu_ntt_src" \
    python3 tools/ntt_once.py "$K" "$V" > "$OUT/ncu_ntt_src.txt" 2>&1
echo "profile: exit $?"
timeout 120 "$NCU" --import "$OUT/ncu_ntt_src.ncu-rep" --print-summary none >> "$OUT/ncu_ntt_src.txt" 2>&1
grep -E 'ntt_r4|sm__|smsp__|dram__|gpu__|l1tex__|Stall|Warp Cycles|Eligible|Issued Warp|Active Warps|No Eligible' \
    "$OUT/ncu_ntt_src.txt" | head -60
timeout 120 "$NCU" --import "$OUT/ncu_ntt_src.ncu-rep" --page source --csv --print-source sass \
    > "$OUT/ncu_ntt_src.csv" 2>&1
echo "source page: exit $? ($(wc -l < "$OUT/ncu_ntt_src.csv") lines)"
python3 tools/ncu_source_summary.py "$OUT/ncu_ntt_src.csv"
