# Device calls, one case each (under 10 minutes). Before a call: `bash tools/device_commit.sh`; carry
# [".whl", ".cubin", ".device-commit"] (wheels: ../shared/tools/offline-gpu-wheels.sh; cubins: python
# tools/build_cubins.py --out .cubin). S1-S4b are what session 3 ran (docs/perf-log.md); T1-T5 are left
# for session 4:
#   T1  the whole `pytest -m gpu` (needed: kernels changed since the last full run)
#   T2  the multipliers against big ints and timed: dfma_check.py; mul_check.py --only5 (builds 1, 5, 6)
#   T3  the NTT variants (r4d, r4m; r4 with Fr build 6) and the G1 MSM with Fp build 6, timed
#   T4  10 x 2^27 pipelined with B2 (the witness packed: bits plus the other entries)
#   T5  the cuzk side of the snarkjs ratio; ncu on the affine round kernels (variant 1 vs 2)
# In that order of priority: five calls do not fit one session's 30 minutes; T1-T3 (~27 min with starts)
# decide whether the FP64-pipe multiplier reaches the #4/#5 targets.
# Session 4 ran T2, T2b, T3b, T5b, T6-T12 (docs/perf-log.md). Left for session 5, in this order (all of them is
# ~30 min of device time: pick from the top):
#   U0  `cuzk micro fp_mul/fr_mul --chains 1 --fastmul 6` (the product command's figure for the 2.2e10 target)
#   U5  the snarkjs ratio with snarkjs on the GPU machine too (bash tools/node_bundle.sh first; carry
#       [".whl", ".cubin", ".nodebundle", ".device-commit"], ~49 MB)
#   U1  N2's GPU tests (r4b6) and r4x's (reordered by the ntt_fr.cuh review), then N2 alone at 2^24 (porep_partition, interleaved, 99% intervals)
#   U3  r4's occupancy against its spills, on Fr builds 1 and 6 (CUZK_NTT_R4_BLOCKS 2/3/4), and r2 on build 6
#   U4  small MSMs (G1, G2; 2^14-2^18) over window sizes 5-15 (tools/gpu_msm_small_sweep.py): a latency model
#   U2  10 x 2^27 pipelined with B2 (= T4), now also with the host window fold and the new batch sums
#   T5's second half: ncu on the affine round kernels (variant 1 vs 2)
# Left for session 6, in this order: T1 (the whole `pytest -m gpu`: M2 is on by default since session 5's end),
# U2 (10 x 2^27 with B2, now with M2), U1 (N2's ablation; its tests passed in V1), U3 alone (its Fr build-1 rows
# were cut from V2's output).
# Session 5: V1 = U0 + U1's GPU tests + ncu on the affine rounds (variant 1, the product path) at 2^24;
# V2 = U3 + U5; V3 = the affine round with look-ahead loads (variant 3), tested and timed against variant 1;
# V4 = M2's GPU tests and its resident A/B, and the affine round's stall samples per instruction;
# V5 = variant 3 rewritten, tested and timed; G2 windows of small MSMs; one 2^27 partition;
# V6 = D5 tested and A/B; G2 windows at 2^15; a warm 2^27 partition; U2 (10 x 2^27 with B2);
# V7 = the same-machine snarkjs ratio at 2^18 with M2; V8 = M2 alone at 2^24.
# Session 6: W1 = where the 2^18 resident proof's time goes (host cProfile, kernel durations); W2 = R1; W3 = R2; W4 = P2 and the same-machine snarkjs ratio;
# W5, W6 = the whole GPU suite with R1, R2 on by default; W7 = their 2^24 ablation (others off);
# W8 = R2 with its threshold, and R1, R2 at 2^24 with the others at their defaults; W9 = one 2^27 partition;
# U2 again (10 x 2^27 with the new defaults); W10 = the snarkjs ratio with the final defaults (178.9x there,
# 229.8x on W4's machine). Run tools/device_commit.sh here, before a call, never in the call's command.
# Left for session 7: X1 (H1, written in session 6 and tested on the CPU model only), then host dispatch of the small proof (the ratio's spread between machines is the host's:
# segment_plan's and round_offsets' device reads, the popcount samples, ~600 launches), then the 2^26 MSM's
# rounds (a dedicated Fp squaring) and its sort (50.9 ms).
# Session 7: X1 = H1's tests and A/B (slower: removed); X2 = S1 (the dedicated squaring) and 5 affine blocks an SM;
# X3 = L1 (lazy reduction in the affine rounds); X4 = the whole GPU suite and the same-machine snarkjs ratio;
# U2 again (10 x 2^27, S1 and L1 on); X5 = N2 (NTT on build 6) alone at 2^24, never measured before;
# X6 = the final defaults' GPU tests and cuzk bench; X7 = the micro commands on the backend's path;
# X8 = affine variant 4 (two chains a thread: slower, removed).
# Left for session 8: `cuzk bench --warmup 1` on the GPU (the single-shot phases carry first-use costs: the same H
# MSM plan ran 35-1295 ms across processes; bench_msm_stats.py); 10 x 2^27 with N2 on (U2 ran before it); the small
# proof on slow-host machines (48.8 ms on X3's); the rounds' instruction count (the Fp product itself: every
# latency-hiding form tried so far lost: L2 prefetch, register look-ahead, 5 blocks an SM, two chains a thread).
# Session 8: Y1 = fewer live values in the affine rounds at 4-6 blocks (slower: removed) and `cuzk bench --warmup 1`;
# Y2 = the Fp products called instead of inlined (CUZK_FP_CALL); Y3 = its forms, G2, and the NTT (CUZK_FR_CALL:
# slower, removed); Y4 = I1's GPU tests and 2^26/2^22 figures; Y5 = I1 at 2^24 and the resident 2^18 A/B; U2 with
# I1 (1.620 s a partition); Y6 = the whole GPU suite with I1 on, quads with I1, the same-machine snarkjs ratio;
# Y7 = `cuzk micro msm` at 2^20/24/26; Y8 = ncu stall shares with I1 off/on. Left for session 9: Y9 (affine variant 5,
# look-ahead loads on top of I1: written, compile-checked, GPU tests not yet run), then Y10 (c under I1), Y11 (the Fp
# product's build inside I1's callee).
# Session 9: Y9 (variant 5 slower: removed), Y11 (build 3 in the callee x0.97-0.99), Y10 (c stays), Z1 (the 2^27 c = 22
# anomaly was a tiled-base fallback), Z2 (variant 6, staged loads: the loads hidden, no faster: removed), Z3 (I2's tests
# and A/B: on), Z4 (the whole GPU suite with I2; micro msm), U2 (1.569 s a partition), W10 (snarkjs 323x), Z5 (two
# products a call: slower, removed), Z6 (the H phase per step), Z7 (F1, F2: on). Left for session 10, first: the
# whole GPU suite with F1 and F2 on by default and M3's GPU tests and A/B (Z8), then U2; then the MSM pass loop's host waits
# in the pipeline (U2's h msm spread, 0.91-1.08 s: one kernel for all round sizes, not H1's many launches); the coset
# scale of a, b, c (18.7 ms at 2^27) folded into the iNTT's last pass.
# Session 10: Z8 (the whole GPU suite with F1, F2; M3 x1.38 slower: removed), Z9 (W1 no change: removed; proof 0's
# h msm slow though warm), Z10 (B3: 1.510 s a partition, on with B2), Z11 (c = 24 slower at 2^27, c = 20 stays at
# 2^26), Z12 (N3 -2.6 ms: on; 1.514-1.522 s a partition), Z13 (the whole GPU suite with the final defaults: 721
# passed). The pointwise passes are product-bound (no gain from folding the coset scale into the iNTT). Left for
# session 11: the window reduction in affine batch adds (45 ms at 2^27 c = 22, ~0.9 ns an XYZZ add: ~-14 ms, and
# it is what keeps c small), the MSM's remaining per-round reads, the NTT (#4).
# Then Z14: H2 (no coset NTT of C: six NTTs) passed its 43 GPU tests and took 2^27's h scalars 408.7 -> 353.4 ms; on
# by default. Its 10 x 2^27 pipeline run (one round, on the warm machine) was cut by the session's last device
# seconds before the ten proofs ended (no figure, no error shown). Session 11, first: Z15 (the whole GPU suite with
# H2 on by default, then the 10 x 2^27 pipeline with H2 against -H2: issue 7's figure, estimated ~1.46 s).
# Session 11: Z15 ran (742 GPU tests passed; 1.456-1.461 s a partition with H2); Z16 = K1 (CUB sort over the bucket
# bits) tested and timed (on; 759 GPU tests passed with it); Z17 = K1 alone at 2^24; Z18 = K2 (removed) and K3 (on),
# the whole suite with K1-K3 on: 779 passed. Left for session 12: 10 x 2^27 with K3 (predicted ~1.39 s a partition,
# `pipeline_ab.py --rounds 2 -- "" "-K3"`) and the CUZK_XYZZ_AFFINE_Q experiment's tests (Z19), its timings and 3
# windows a pass at 2^27 (Z20; msm_profile.py now also splits "round plans" from "affine rounds"). The rounds (385 of
# the 2^26 MSM's ~441 ms) are what stands between issue 5 and 0.40 s; the NTT (#4) is product-bound at ~65% of
# build 6's Fr product rate.
# Session 12: Z19 (10 x 2^27 with K3: 1.389-1.400 s a partition; the AFFINE_Q experiment's tests), Z20 (AFFINE_Q -3.5 ms
# at 2^27 only: removed; the round plans 24-37 ms at 2^26, not 5-8; 3 windows a pass), Z21 (K4, K5: on; 2^26 443.5 ->
# 432.5 ms), Z22 (windows a pass: one pass at 2^26 410.3 ms), Z23 (K6, passes from free memory: on; 2^26 413.7, 2^27
# 802.5; 10 x 2^27 1.343 s a partition), Z24 (c at one pass: 20 stays; micro msm 2^26 408.8 ms; the whole GPU suite:
# 771 passed), Z25 (K7, plans by bucket groups: -1.5 ms at 2^26, +7 at 2^27: removed). Left for session 13: Z26 (K8's
# and K9's tests; the rounds' sizes, offsets and plan kernels timed apart, with and without K8, K9: where the ~14 ms
# of "round plans" at 2^26 go), then whatever
# takes the 2^26 MSM the last ~6-9 ms to 0.40 s (issue 5); the NTT (#4) is unchanged.
# Session 13: Z26 (K8, K9: on), Z27 (K10, the window reduction by affine groups: 2^27 -14 ms), Z28 (K10's gather
# kernel; K11, the plans 4 entries a thread: on; K10 on), Z29 (2^26 G1 MSM 399.5-399.8 ms; the whole GPU suite: 805
# passed), Z30 (K12 8 entries: lost), Z31 (K12 strided, K13: no change, removed), Z32 (the final kernels' MSM tests:
# 70 passed; 2^26 400.5-400.9), Z33 (10 x 2^27: h msm median 0.781 s, 1.328 s a partition at the median), Z34 (K14
# staggered inversions: +9 ms, removed). Left for session 14: the new GPU test test_many_k10_group_reduce (K10 on a
# multi-MSM: not yet run); issue 5's 2^26 figure sits at 0.40 s (median 400.5 ms over 12 processes) and needs ~2-3 ms
# of margin: time the round kernel's inversion and the K10 tail's host waits before changing either; c under K10
# (Z35); the NTT (#4).
# Session 14: Z35 (the K10 multi-MSM test passed; c = 22 +5 ms, c = 21 a K10 gather cliff; the rounds' root inversions
# cost 6.2 ms), Z36 (K15, the block inverse by the binary extended Euclid: -4.7 / -5.1 ms, on), Z37 (2^26 G1 MSM
# 395.0-397.5 ms; the whole GPU suite: 815 passed), Z38 (2^27 MSM 756.9 ms; 10 x 2^27), Z39 (2^26 393.4-393.5 on a
# third machine; G2 2^24 559.3; batch addition 2^26 32.0), Z40 (the slow h msm: no overlap, same passes, no
# fallback), Z41 (the 2^27 NTT without barriers / without products: issue 4's levers), Z42 (the DIF butterfly in two
# modular ops: -1.9 ms), Z43 (N4 on: 396 GPU tests passed; 2^27 H phase -7.7 ms), Z44 (10 x 2^27 with K15 and N4: all
# verified, 1.328 s a partition). Left for session 15: issue 4 (the 2^27 DIF passes ~50.5 ms against 45; the products
# run at build 6's full rate, the other ~18.5 ms of instructions add to them: fewer loads, exchanges and index ops a
# pass, or a cheaper product); the slow h msms of a pipeline (host waits inside the MSM, not yet timed).
# Session 15: Z45 (ncu pipe split of the r4b6d pass), Z46 (N5 tiled bit reversal: on; stall reasons), Z47-Z48 (N7 52-bit
# twiddles: the H phase slower, removed), Z49 (issue 4's figures; the whole GPU suite: 850 passed). Left for session 16
# (issue 4, the 2^27 NTT 53.1 ms against 45): a build-6 Fr product with fewer ALU instructions, or more resident warps
# at r4's 80-register cap.
# Session 16: Z51 (N8 full-domain twiddle tables -2.6 ms: on; N9 values < 2p +0.8 ms: removed), Z52 (N10 natural-order
# last pass -2.3 ms: on; the H phase -14 ms with N8), Z53 (r8 on build 6: +10 ms, removed), Z54 (N8's one table for
# both directions; 10 x 2^27 h scalars -16.7 ms), Z55 (the DIF pass by pass: 17.1 + 16.8 + 14.2 ms), Z56 (N11 DIF
# differences a - b + p into products -0.8 ms: on), Z57 (the whole GPU suite: 1022 passed), Z58 (10 x 2^27: 1.309 s a
# partition, all verified), Z59 (N12 16-byte exchanges -0.7 ms: on), Z60 (the whole GPU suite with N12: 1057 passed;
# NTT 2^27 46.64 ms). Left for session 17 (issue 4, 1.6 ms from 45): the modular sums' ALU work (26-27 instructions
# each, ~700 an element), the rest of the passes' non-product work (~4.5 ms a pass by Z55), intt's figure with N12.
# Session 17: Z61 (pass plans: 8,9,10 -1.3 ms; ncu stall samples), Z62 (prefetch slower: removed; lazy stage 0 -0.1),
# Z63 (N13 odd passes' short group at the top -1.5 ms, N15 lazy stage 0: on; N14 plans lose with N13: dropped), Z64
# (the whole GPU suite: 1327 passed; NTT 2^27 45.00 ms), Z65 (N16 warp-uniform skips 0.0 and its swizzle +1.3 ms:
# removed), Z66 (N17 swz4 from a table -1.0 ms: on), Z67 (the whole GPU suite: 1364 passed; NTT 2^27 43.99 ms).
set -o pipefail
source tools/device_setup.sh >/dev/null 2>&1
export CUZK_CUBIN_DIR=$PWD/.cubin CUZK_CACHE_DIR=/tmp/cz
OUT=${OUT:-/tmp}
t0=$(date +%s)
# The 2^26 G1 MSM (msm_profile.py, c = 20, R1 + R2) in one process per CUZK_KERNEL_DEFINES set ("" = none), the sets
# alternated twice; the median line of each.
msm26_alternated() {
  for r in 1 2; do for d in "$@"; do
    echo "defines: ${d:-default}"
    CUZK_KERNEL_DEFINES="$d" timeout 60 python3 tools/experiments/msm_profile.py 26 --affine --c 20 --pairs on \
        --reps 2 2>&1 | tail -1 | cut -c1-300
  done; done
}
# The whole GPU suite, then issue 4's figures: micro ntt and intt at 2^27/24/20, h at 2^27/24
gpu_suite_and_ntt_figures() {
  timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests --ignore=tests/test_gpu.py 2>&1 | tail -2
  timeout 110 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu.py 2>&1 | tail -2
  for L in 27 24 20; do timeout 40 python3 -m cuzk micro ntt --log-size $L -p 1 -n 3 -w 1 2>&1 | tail -1
    timeout 40 python3 -m cuzk micro intt --log-size $L -p 1 -n 3 -w 1 2>&1 | tail -1; done
  for L in 27 24; do timeout 60 python3 -m cuzk micro h --log-size $L -p 1 -n 3 -w 1 2>&1 | tail -1; done
}
# One toggle alone at 2^24 (porep_partition, key made on the GPU) with the others at their defaults: ablate_alone OPT
ablate_alone() {
  timeout 230 python3 -m cuzk ablate --backend cuda --circuit porep_partition --log-size 24 --repeat 8 \
      --opt-set "$1" --others defaults --no-leave-one-out --device-keygen --max-seconds 150 \
      --json "$OUT/ablate_$(echo "$1" | tr 'A-Z' 'a-z')_24d.json" 2>&1 | grep -A3 "^| opt"
}
case "$1" in
Z67)
  # session 17, N17 on by default with its off builds (variant suffix "b"): the whole GPU suite, then issue 4's
  # figures (micro ntt, intt at 2^27/24/20; h at 2^27/24) and N17 alone at 2^27 (-N17)
  gpu_suite_and_ntt_figures
  echo "CUZK_OPT=-N17"; CUZK_OPT=-N17 timeout 40 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1 ;;
Z66)
  # session 17, issue 4: swz4's XOR term from an 8-entry table in one word (N17), against the bitwise form
  # (CUZK_EXP_SWZ4_BITS=1): the ntt_reg GPU tests, then the 2^27 DIF (+oz) and micro ntt alternated twice; intt, h
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_ntt_reg.py 2>&1 | tail -2
  for r in 1 2; do for d in "" "CUZK_EXP_SWZ4_BITS=1"; do echo "defines: ${d:-none}"
    CUZK_KERNEL_DEFINES=$d timeout 60 python3 tools/experiments/ntt_plans.py 27 - --variants r4b6dts+oz --reps 5 2>&1 | tail -1
    CUZK_KERNEL_DEFINES=$d timeout 60 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1
  done; done
  for c in intt h; do timeout 60 python3 -m cuzk micro $c --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done ;;
Z65)
  # session 17, issue 4: N16 (warp-uniform w = 1 skips; swz4 extended to slot bits 6..8): the ntt_reg GPU tests, then
  # the 2^27 DIF +oz / +ozu against +oz on session 16's swz4 (CUZK_EXP_SWZ4_OLD=1), alternated twice; micro h +oz/+ozu
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_ntt_reg.py 2>&1 | tail -3
  for r in 1 2; do
    timeout 60 python3 tools/experiments/ntt_plans.py 27 - --variants r4b6dts+oz,r4b6dts+ozu --reps 5 2>&1 | tail -2
    CUZK_KERNEL_DEFINES=CUZK_EXP_SWZ4_OLD=1 timeout 60 python3 tools/experiments/ntt_plans.py 27 - --variants r4b6dts+oz \
        --reps 5 2>&1 | tail -1
    for V in r4b6dts+oz r4b6dts+ozu; do echo "CUZK_NTT_VARIANT=$V"
      CUZK_NTT_VARIANT=$V timeout 60 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done
    echo "old swz4, r4b6dts+oz"
    CUZK_KERNEL_DEFINES=CUZK_EXP_SWZ4_OLD=1 CUZK_NTT_VARIANT=r4b6dts+oz timeout 60 python3 -m cuzk micro ntt --log-size 27 \
        -p 1 -n 3 -w 1 2>&1 | tail -1
  done
  for V in r4b6dts+oz r4b6dts+ozu; do echo "CUZK_NTT_VARIANT=$V"
    CUZK_NTT_VARIANT=$V timeout 60 python3 -m cuzk micro h --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done ;;
Z64)
  # session 17, N13 and N15 on by default (variant r4b6dts+oz; N14's plan dropped): the whole GPU suite, then issue 4's
  # figures (micro ntt, intt at 2^27/24/20; h at 2^27/24)
  gpu_suite_and_ntt_figures ;;
Z63)
  # session 17, issue 4: N13 (odd DIF passes' one-stage group at the top), N15 (stage 0 lazy into the 4-step product),
  # N14 (the plan with fewer register groups) as run-time variant features: the ntt_reg GPU tests, then plans x
  # features checked against radix 2 and timed, then micro ntt/intt/h 2^27 per variant
  timeout 260 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_ntt_reg.py 2>&1 | tail -3
  timeout 90 python3 tools/experiments/ntt_plans.py 27 - 8,9,10 7,10,10 10,10,7 --variants r4b6dts,r4b6dts+o,r4b6dts+oz \
      --reps 3 2>&1 | tail -10
  timeout 40 python3 tools/experiments/ntt_plans.py 26 - 8,8,10 --variants r4b6dts,r4b6dts+oz --reps 3 2>&1 | tail -4
  for a in "22 - 6,6,10" "21 - 5,6,10" "18 - 8,10"; do
    timeout 30 python3 tools/experiments/ntt_plans.py $a --variants r4b6dts,r4b6dts+oz --reps 5 2>&1 | tail -4; done
  for V in r4b6dts r4b6dts+oz r4b6dts+ozp; do echo "CUZK_NTT_VARIANT=$V"
    for c in ntt intt h; do CUZK_NTT_VARIANT=$V timeout 60 python3 -m cuzk micro $c --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done
  done ;;
Z62)
  # session 17, issue 4: three experiment defines on the 2^27 DIF (CUZK_NTT_PREFETCH=1/2: each thread's rows and its
  # last-group 4-step twiddles prefetched at the start, into L1/L2; CUZK_NTT_LAZY_OUTER=1: stage 0 unreduced into the
  # 4-step product), each checked against the radix-2 kernel at 2^20 and 2^27 and timed with the default plan and
  # 8,9,10, the sets alternated twice; then the plan through micro ntt/intt/h (CUZK_NTT_PLAN)
  for r in 1 2; do for d in "" "CUZK_NTT_PREFETCH=1" "CUZK_NTT_PREFETCH=2" "CUZK_NTT_LAZY_OUTER=1"; do
    echo "defines: ${d:-none}"
    [ $r = 1 ] && CUZK_KERNEL_DEFINES=$d timeout 30 python3 tools/experiments/ntt_plans.py 20 - 6,7,7 --reps 1 2>&1 | tail -2
    CUZK_KERNEL_DEFINES=$d timeout 60 python3 tools/experiments/ntt_plans.py 27 - 8,9,10 --reps 5 2>&1 | tail -2
  done; done
  for P in "" "27:8,9,10"; do echo "CUZK_NTT_PLAN=${P:-none}"
    for c in ntt intt h; do CUZK_NTT_PLAN=$P timeout 60 python3 -m cuzk micro $c --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done
  done ;;
Z61)
  # session 17, issue 4: the natural NTT's pass plans (ntt.PLAN_KS: fewer register groups, 10+10+7 at 2^27) checked
  # against the default plan and timed pass by pass; then ncu's stall samples on the default 2^27 DIF's first pass
  timeout 150 python3 tools/experiments/ntt_plans.py 27 - 10,10,7 7,10,10 10,7,10 10,9,8 8,9,10 --reps 5 2>&1 | tail -9
  timeout 60 python3 tools/experiments/ntt_plans.py 26 - 10,10,6 6,10,10 10,8,8 8,8,10 --reps 5 2>&1 | tail -8
  timeout 40 python3 tools/experiments/ntt_plans.py 24 - 10,10,4 4,10,10 10,7,7 --reps 5 2>&1 | tail -7
  OUT=$OUT timeout 330 bash tools/ncu_ntt_sources.sh 27 r4b6dts 2>&1 | tail -75 ;;
Z60)
  # session 16, N12 on by default (every N2 build of ntt_reg now exchanges 16-byte units): the whole GPU suite, then
  # issue 4's NTT figures
  timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests --ignore=tests/test_gpu.py 2>&1 | tail -2
  timeout 110 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu.py 2>&1 | tail -2
  for L in 27 24 20; do timeout 30 python3 -m cuzk micro ntt --log-size $L -p 1 -n 3 -w 1 2>&1 | tail -1; done ;;
Z59)
  # session 16, issue 4: N12's experiment define CUZK_NTT_SM128 (the exchanges in 16-byte accesses; cubins for
  # ntt_reg, ntt, field_ops prebuilt with it) tested, then micro ntt 2^27 alternated twice and micro h 2^27 once,
  # against the defaults
  CUZK_KERNEL_DEFINES=CUZK_NTT_SM128=1 timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf \
      tests/test_gpu_ntt_reg.py -k "r4b6d or r8-e11" 2>&1 | tail -2
  for r in 1 2; do for d in "" "CUZK_NTT_SM128=1"; do echo "defines: ${d:-none}"
    CUZK_KERNEL_DEFINES=$d timeout 60 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done; done
  for d in "" "CUZK_NTT_SM128=1"; do echo "defines: ${d:-none}"
    CUZK_KERNEL_DEFINES=$d timeout 60 python3 -m cuzk micro h --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done ;;
Z58)
  # session 16, the final defaults (N8, N10, N11 on): 10 x 2^27 pipelined, one round, every proof verified
  timeout 250 python3 tools/experiments/pipeline_ab.py --rounds 1 -- "" 2>&1 | grep -v "^key:" | tail -3 ;;
Z57)
  # session 16, the final defaults (N8, N10, N11 on): the whole GPU suite (the NTT kernels changed since Z49), then
  # issue 4's figures (micro ntt, intt at 2^27/24/20; h at 2^27/24)
  gpu_suite_and_ntt_figures ;;
Z56)
  # session 16, issue 4: N11 (DIF differences left a - b + p into products) tested; micro ntt 2^27 alternated twice,
  # defaults against +N11; micro h 2^27 once each
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_ntt_reg.py tests/test_micro.py \
      -k "r4b6dts or backends_variant" 2>&1 | tail -2
  for r in 1 2; do for o in "" "+N11"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done; done
  for o in "" "+N11"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 90 python3 -m cuzk micro h --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done ;;
Z55)
  # session 16, issue 4: N8 and N10 on by default; intt's 1/n in the small twiddle table (N10) tested; the DIF's
  # passes timed one by one at 2^27 (r4b6dt, r4b6d; natural); micro intt 2^27 with the defaults and -N10
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_ntt_reg.py tests/test_micro.py \
      -k "natural or r4b6dt or backends_variant or micro" 2>&1 | tail -2
  timeout 60 python3 tools/experiments/ntt_pass_times.py 27 r4b6dt r4b6d --natural 2>&1 | tail -3
  for o in "" "-N10"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro intt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done ;;
Z54)
  # session 16, issue 4: N8's one table for both directions (tw_mode 3: the inverse reads the forward table at -e)
  # tested; micro h 2^27 +N8 once; then 10 x 2^27 pipelined, defaults and +N8 in separate processes (N8's 4 GiB
  # table against the MSM's sort passes, which follow free memory)
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_ntt_reg.py -k "r4b6dt" 2>&1 | tail -2
  CUZK_OPT=+N8 timeout 90 python3 -m cuzk micro h --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1
  for o in "" "+N8"; do echo "spec: ${o:-defaults}"
    timeout 240 python3 tools/experiments/pipeline_ab.py --rounds 1 -- "$o" 2>&1 | grep -v "^key:" | tail -3; done ;;
Z53)
  # session 16, issue 4: the micro variant test (fixed), r8's kernel on r4b6d's build (r8b6d, r8b6dt) tested; micro
  # ntt 2^27 with +N8,+N10 for r4b6dt against r8b6dt, alternated twice; micro h 2^27 +N8 on r8b6dt
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_ntt_reg.py tests/test_micro.py \
      -k "r8b6d or backends_variant" 2>&1 | tail -3
  for r in 1 2; do for v in r4b6dt r8b6dt; do echo "CUZK_NTT_VARIANT=$v"
    CUZK_NTT_VARIANT=$v CUZK_OPT=+N8,+N10 timeout 60 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1
  done; done
  CUZK_NTT_VARIANT=r8b6dt CUZK_OPT=+N8 timeout 90 python3 -m cuzk micro h --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1 ;;
Z52)
  # session 16, issue 4: N10 (natural-order last DIF pass) and N8 after N9's removal and the kernels' new out
  # parameter: the NTT GPU tests; micro ntt 2^27 alternated twice over defaults, +N8, +N10, +N8,+N10; micro h 2^27
  # defaults against +N8, twice
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_ntt_reg.py tests/test_micro.py \
      -k "natural or r4b6d or backends_variant" 2>&1 | tail -3
  for r in 1 2; do for o in "" "+N8" "+N10" "+N8,+N10"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done; done
  for r in 1 2; do for o in "" "+N8"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 90 python3 -m cuzk micro h --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done; done ;;
Z51)
  # session 16, issue 4: N8 (full-domain twiddle tables) and N9 (values < 2p, lazy products) tested, then micro ntt
  # 2^27 alternated twice over defaults, +N8, +N9, +N8,+N9
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_ntt_reg.py tests/test_micro.py \
      -k "r4b6dl or r4b6dt or backends_variant" 2>&1 | tail -3
  for r in 1 2; do for o in "" "+N8" "+N9" "+N8,+N9"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done; done ;;
Z50)
  # session 15, review: the NTT kernels' GPU tests and test_gpu.py after a comment edit in ntt_fr.cuh and the tests'
  # poison helper
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu.py tests/test_micro.py 2>&1 | tail -2
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_ntt_reg.py -k "r4b6" 2>&1 | tail -2 ;;
Z49)
  # session 15, the final defaults (N5 on; N7 removed): issue 4's figures (micro ntt, intt, h at 2^20/24/27), then the
  # whole GPU suite (ntt.cu's kernels changed since Z43's run)
  for L in 27 24 20; do timeout 60 python3 -m cuzk micro ntt --log-size $L -p 1 -n 3 -w 1 2>&1 | tail -1
    timeout 60 python3 -m cuzk micro intt --log-size $L -p 1 -n 3 -w 1 2>&1 | tail -1; done
  for L in 27 24; do timeout 90 python3 -m cuzk micro h --log-size $L -p 1 -n 3 -w 1 2>&1 | tail -1; done
  timeout 280 python3 -m pytest -q -m gpu -p no:cacheprovider tests --ignore=tests/test_gpu.py 2>&1 | tail -2
  timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu.py 2>&1 | tail -2 ;;
Z48)
  # session 15, issue 4: N7 on the DIF passes only (the DIT stays r4b6d), tested and timed against -N7; intt's last pass
  # as one product (bit_reverse with scale) on N3's build
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_ntt_reg.py tests/test_micro.py \
      tests/test_gpu.py -k "r4b6dp or backends_variant or bit_reverse or ntt_forward or pointwise or h_" 2>&1 | tail -2
  for r in 1 2; do for o in "" "-N7"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1
    CUZK_OPT=$o timeout 90 python3 -m cuzk micro h --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done; done
  timeout 60 python3 -m cuzk micro intt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1 ;;
Z47)
  # session 15, issue 4: N7 (52-bit twiddle tables, r4b6dp) tested, then timed against -N7 (micro ntt 2^27 alternated
  # three times, micro h 2^27 twice each), then the DIF and DIT alone (gpu_ntt_check-style: dif/dit 2^27 r4b6d vs r4b6dp)
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_ntt_reg.py tests/test_micro.py \
      -k "r4b6dp or backends_variant" 2>&1 | tail -2
  for r in 1 2 3; do for o in "" "-N7"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done; done
  for r in 1 2; do for o in "" "-N7"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 90 python3 -m cuzk micro h --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done; done
  timeout 120 python3 tools/gpu_ntt_check.py --no-tests --no-mul --variants r4b6d,r4b6dp 2>&1 | tail -6 ;;
Z46)
  # session 15, issue 4: N5 (tiled bit reversal) tested, then timed against -N5 (micro ntt / intt 2^27 alternated,
  # micro h 2^27 once each; micro h now runs with every backend option); then the r4b6d DIF pass's stall reasons
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py tests/test_micro.py \
      -k "bit_reverse or pointwise or ntt or micro" 2>&1 | tail -2
  timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_ntt_reg.py -k "forward_inverse" 2>&1 | tail -1
  for r in 1 2; do for o in "" "-N5"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro intt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1
  done; done
  for o in "" "-N5"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 90 python3 -m cuzk micro h --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1; done
  source tools/profiler_env.sh
  M=""; for s in wait math_pipe_throttle short_scoreboard long_scoreboard barrier not_selected selected dispatch_stall \
      mio_throttle lg_throttle no_instruction branch_resolving; do M=$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio; done
  CUZK_KERNEL_DEFINES="CUZK_FASTMUL_VARIANT_FR=6 CUZK_NTT_DIF2=1" timeout 100 "$NCU" --clock-control none \
      --kernel-name regex:'ntt_r4_dif' --launch-count 2 --metrics "${M#,}" python3 tools/experiments/ntt_once.py 24 r4 2>&1 \
      | grep -E 'ntt_r4|smsp__' ;;
Z45)
  # session 15, first (prepared in session 14): issue 4, ncu's pipe split of the DIF pass on builds 1, 6 and 6 + N4
  # (r4b6d) at 2^24; then the pipeline's slow h msms, each H MSM's host wall and thread CPU seconds
  # (session 15 ran the ncu half only: issue 5 is resolved, the pipeline's h msms stay a note)
  bash tools/ncu_ntt.sh 24 2>&1 | tail -60 ;;
Z44)
  # session 14, the final defaults (K15, N4 on): 10 x 2^27 pipelined, one round, every proof verified
  timeout 250 python3 tools/experiments/pipeline_ab.py --rounds 1 -- "" 2>&1 | grep -v "^key:" | tail -4 ;;
Z43)
  # session 14, N4 on by default (r4b6d): the NTT GPU tests, the micro tests and test_gpu.py (proofs with every
  # toggle alone); then cuzk micro h and ntt at 2^27, the defaults against -N4, alternated
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_ntt_reg.py tests/test_micro.py \
      tests/test_gpu.py 2>&1 | tail -2
  for r in 1 2; do for o in "" "-N4"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro h --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1
  done; done ;;
Z42)
  # session 14, issue 4: the DIF butterfly in two modular ops, not three (CUZK_NTT_DIF2: d = a - b, a += b), against
  # the default; cuzk micro ntt at 2^27 (r4b6) alternated three times, then the r4b6 NTT tests under it
  for r in 1 2 3; do for d in "" "CUZK_NTT_DIF2=1"; do echo "defines: ${d:-default}"
    CUZK_KERNEL_DEFINES="$d" timeout 60 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1
  done; done
  CUZK_KERNEL_DEFINES="CUZK_NTT_DIF2=1" timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf \
      tests/test_gpu_ntt_reg.py -k "r4b6" 2>&1 | tail -2 ;;
Z41)
  # session 14, issue 4: where the 2^27 NTT's time goes, by timing-only experiment defines (wrong output): the
  # exchanges without their barriers (CUZK_EXP_NTT_NO_SYNC), every product an add (CUZK_EXP_NTT_CHEAP_MUL), both;
  # cuzk micro ntt at 2^27 (r4b6), alternated twice
  for r in 1 2; do for d in "" "CUZK_EXP_NTT_NO_SYNC=1" "CUZK_EXP_NTT_CHEAP_MUL=1" \
      "CUZK_EXP_NTT_NO_SYNC=1 CUZK_EXP_NTT_CHEAP_MUL=1"; do echo "defines: ${d:-default}"
    CUZK_KERNEL_DEFINES="$d" timeout 60 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1
  done; done ;;
Z40)
  # session 14: the first-round h msm stall of a pipeline process, measured: per proof, the device seconds of other
  # proofs' spans overlapping its h msm, and the H MSM's max_entries / rounds / fallbacks (pipeline_ab --msm-stats)
  timeout 400 python3 tools/experiments/pipeline_ab.py --rounds 1 --msm-stats -- "" 2>&1 | grep -v "^key:" | tail -9 ;;
Z39)
  # session 14: issue 5's figures on one more machine (cuzk micro msm at 2^26 three times), the G2 MSM at 2^24 and
  # batch addition at 2^26 with today's defaults
  for L in 26 26 26; do timeout 60 python3 -m cuzk micro msm --log-size $L -p 1 -n 3 -w 1 2>&1 | tail -1; done
  timeout 150 python3 -m cuzk micro msm_g2 --log-size 24 -p 1 -n 3 -w 1 2>&1 | tail -1
  timeout 90 python3 -m cuzk micro batch_add --log-size 26 -p 1 -n 3 -w 1 2>&1 | tail -1 ;;
Z38)
  # session 14, K15 on: the 2^27 G1 MSM (cuzk micro msm), then 10 x 2^27 pipelined, one round (issue 7's figure)
  timeout 90 python3 -m cuzk micro msm --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -1
  timeout 400 python3 tools/experiments/pipeline_ab.py --rounds 1 -- "" 2>&1 | grep -v "^key:" | tail -8 ;;
Z37)
  # session 14, K15 on by default: issue 5's figures (cuzk micro msm at 2^26 three times, 2^24, 2^20), then the whole
  # GPU suite
  for L in 26 26 26 24 20; do timeout 60 python3 -m cuzk micro msm --log-size $L -p 1 -n 3 -w 1 2>&1 | tail -1; done
  timeout 280 python3 -m pytest -q -m gpu -p no:cacheprovider -x tests --ignore=tests/test_gpu.py 2>&1 | tail -2
  timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider -x tests/test_gpu.py 2>&1 | tail -2 ;;
Z36)
  # session 14: K15 (the rounds' block inverses by the binary extended Euclid): the field tests of its inverse and
  # the MSM kernel sets with it; the 2^26 MSM, the defaults D against +K15 (profile, alternated); cuzk micro msm at
  # 2^26, the defaults against +K15, alternated
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py tests/test_gpu_msm.py \
      -k "inv or kernel_opts" 2>&1 | tail -3
  B=S1,L1,I1,I2,K1,K3,K4,K5,K6,K8,K9,K10,K11
  timeout 120 python3 tools/experiments/msm_profile.py 26 --affine --c 20 --pairs on --reps 2 --distinct-log 26 \
      --kernels $B $B,K15 2>&1 | grep "^2^26" \
      | sed 's/R1+R2=on //; s/ variant=1//; s/I1,I2,K1,K10,K11,K15,K3,K4,K5,K6,K8,K9,L1,S1/D+K15/; s/I1,I2,K1,K10,K11,K3,K4,K5,K6,K8,K9,L1,S1/D/' \
      | cut -c1-400
  for r in 1 2; do for o in "" "+K15"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro msm --log-size 26 -p 1 -n 3 -w 1 2>&1 | tail -1
  done; done ;;
Z35)
  # session 14, first: the new K10 multi-MSM GPU test with the MSM tests of session 13's kernels; then c at one pass
  # under K10 (2^26: 20, 21, 22; K10 makes wide windows' reductions cheap, the group rounds grow with the buckets); then
  # the 2^26 MSM with and without the rounds' root inversions
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu_msm_many.py \
      -k "k10 or plan_entry or kernel_opts or many_affine" 2>&1 | tail -3
  timeout 150 python3 tools/experiments/msm_profile.py 26 --affine --c 20 21 22 --pairs on --reps 2 --distinct-log 26 \
      2>&1 | grep "^2^26" | sed 's/R1+R2=on //; s/ variant=1//; s/kernels=I1,I2,K1,K10,K11,K3,K4,K5,K6,K8,K9,L1,S1 //' \
      | cut -c1-400
  # the rounds without the block's root inversion (CUZK_EXP_NO_INVERSE: wrong sums, timing only): the inversion's share
  msm26_alternated "" "CUZK_EXP_NO_INVERSE=1" ;;
Z34)
  # session 13 (the budget's last ~3 minutes) or session 14, first: K14 (staggered batch inversions in the unkeyed
  # rounds): its GPU tests, then cuzk micro msm at 2^26, the defaults against +K14, alternated
  timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py -k "k14 or (kernel_opts and random)" \
      2>&1 | tail -3
  for r in 1 2; do for o in "" "+K14"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 40 python3 -m cuzk micro msm --log-size 26 -p 1 -n 3 -w 1 2>&1 | tail -1
  done; done ;;
Z33)
  # session 13: 10 x 2^27 pipelined with the session's defaults (K8-K11 on), one round (issue 7's figure)
  timeout 330 python3 tools/experiments/pipeline_ab.py --rounds 1 -- "" 2>&1 | grep -v "^key:" | tail -8 ;;
Z32)
  # session 13, final kernels (K12 and K13 removed; K10 reads the degenerate flag once): the MSM GPU tests of the
  # session's kernels; then issue 5's figures (cuzk micro msm: 2^26 four times, 2^24, 2^20)
  timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu_msm_many.py \
      -k "k10 or plan_entry or kernel_opts or many_affine or repeated or degenerate" 2>&1 | tail -3
  for L in 26 26 26 26 24 20; do timeout 60 python3 -m cuzk micro msm --log-size $L -p 1 -n 3 -w 1 2>&1 | tail -1; done ;;
Z31)
  # session 13: K12 (K11's 4 entries strided by the grid) and K13 (K10's group sums one segment a group): their GPU
  # tests; the 2^26 MSM, the defaults D against +K12, +K13 and both (alternated, 2 reps); cuzk micro msm at 2^26, the
  # defaults against +K12,+K13
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py -k "k10 or plan_entry or kernel_opts" \
      2>&1 | tail -3
  B=S1,L1,I1,I2,K1,K3,K4,K5,K6,K8,K9,K10,K11
  timeout 140 python3 tools/experiments/msm_profile.py 26 --affine --c 20 --pairs on --reps 2 --distinct-log 26 \
      --kernels $B $B,K12 $B,K13 $B,K12,K13 2>&1 | grep "^2^26" \
      | sed 's/R1+R2=on //; s/ variant=1//; s/I1,I2,K1,K10,K11,K12,K13,K3,K4,K5,K6,K8,K9,L1,S1/D+K12+K13/; s/I1,I2,K1,K10,K11,K12,K3,K4,K5,K6,K8,K9,L1,S1/D+K12/; s/I1,I2,K1,K10,K11,K13,K3,K4,K5,K6,K8,K9,L1,S1/D+K13/; s/I1,I2,K1,K10,K11,K3,K4,K5,K6,K8,K9,L1,S1/D/' \
      | cut -c1-400
  for r in 1 2; do for o in "" "+K12,+K13"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro msm --log-size 26 -p 1 -n 3 -w 1 2>&1 | tail -1
  done; done ;;
Z30)
  # session 13: K10's counts kernel and K12 (plans 8 entries a thread): their GPU tests; the 2^26 MSM with the
  # defaults (K10, K11 on) against +K12 and -K10 (alternated, 2 reps); cuzk micro msm at 2^26, the defaults against +K12
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py -k "k10 or plan_entry" \
      2>&1 | tail -3
  B=S1,L1,I1,I2,K1,K3,K4,K5,K6,K8,K9,K11
  timeout 120 python3 tools/experiments/msm_profile.py 26 --affine --c 20 --pairs on --reps 2 --distinct-log 26 \
      --kernels $B,K10 $B,K10,K12 $B 2>&1 | grep "^2^26" \
      | sed 's/R1+R2=on //; s/ variant=1//; s/I1,I2,K1,K10,K11,K12,K3,K4,K5,K6,K8,K9,L1,S1/D+K12/; s/I1,I2,K1,K10,K11,K3,K4,K5,K6,K8,K9,L1,S1/D/; s/I1,I2,K1,K11,K3,K4,K5,K6,K8,K9,L1,S1/D-K10/' \
      | cut -c1-400
  for r in 1 2; do for o in "" "+K12"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro msm --log-size 26 -p 1 -n 3 -w 1 2>&1 | tail -1
  done; done ;;
Z29)
  # session 13, K10 and K11 on by default: issue 5's figures (cuzk micro msm at 2^26 twice, 2^24, 2^20), then the whole
  # GPU suite
  for L in 26 26 24 20; do timeout 60 python3 -m cuzk micro msm --log-size $L -p 1 -n 3 -w 1 2>&1 | tail -1; done
  timeout 260 python3 -m pytest -q -m gpu -p no:cacheprovider -x tests --ignore=tests/test_gpu.py 2>&1 | tail -2
  timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider -x tests/test_gpu.py 2>&1 | tail -2 ;;
Z28)
  # session 13: K10 with its gather kernel and the group rounds' own threshold, and K11 (K4's plans 4 entries a
  # thread): their GPU tests; the 2^26 and 2^27 MSMs, B against +K10, +K11 and both (alternated, 2 reps); cuzk
  # micro msm at 2^26, the defaults against +K10,+K11
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py -k "k10 or plan_entry or kernel_opts" \
      2>&1 | tail -3
  B=S1,L1,I1,I2,K1,K3,K4,K5,K6,K8,K9
  for L in 26 27; do c=$([ $L = 26 ] && echo 20 || echo 22)
    timeout 150 python3 tools/experiments/msm_profile.py $L --affine --c $c --pairs on --reps 2 --distinct-log $L \
        --kernels $B $B,K10 $B,K11 $B,K10,K11 2>&1 | grep "^2^$L" \
        | sed 's/R1+R2=on //; s/ variant=1//; s/I1,I2,K1,K3,K4,K5,K6,K8,K9,L1,S1/B/; s/I1,I2,K1,K10,K3,K4,K5,K6,K8,K9,L1,S1/B+K10/; s/I1,I2,K1,K10,K11,K3,K4,K5,K6,K8,K9,L1,S1/B+K10+K11/; s/I1,I2,K1,K11,K3,K4,K5,K6,K8,K9,L1,S1/B+K11/' \
        | cut -c1-330
  done
  for r in 1 2; do for o in "" "+K10,+K11"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro msm --log-size 26 -p 1 -n 3 -w 1 2>&1 | tail -1
  done; done ;;
Z27)
  # session 13: K10 (the window reduction by affine groups): its GPU tests, then the 2^26 and 2^27 MSMs with and
  # without it (alternated, 2 reps), then cuzk micro msm at 2^26 with and without it
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py -k "k10 or plan_entry" \
      2>&1 | tail -3
  B=S1,L1,I1,I2,K1,K3,K4,K5,K6,K8,K9
  for L in 26 27; do c=$([ $L = 26 ] && echo 20 || echo 22)
    timeout 100 python3 tools/experiments/msm_profile.py $L --affine --c $c --pairs on --reps 2 --distinct-log $L \
        --kernels $B $B,K10 2>&1 | grep "^2^$L" | sed 's/R1+R2=on //; s/ variant=1//; s/I1,I2,K1,K3,K4,K5,K6,K8,K9,L1,S1/B/' \
        | cut -c1-420
  done
  for r in 1 2; do for o in "" "+K10"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro msm --log-size 26 -p 1 -n 3 -w 1 2>&1 | tail -1
  done; done ;;
Z26)
  # session 13, first: the GPU tests of K8 (K5's totals with each count read once) and K9 (each round's offsets from
  # one counts kernel), then the affine rounds' host-side steps timed apart ("round sizes", "round offsets", "round
  # plans": marks added at the end of session 12) at 2^26 and 2^27, the defaults (K4-K6 on) against +K8, +K9 and
  # +K8+K9, alternated, 2 reps
  timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu_msm_many.py \
      -k "plan_entry or kernel_opts or k6 or many_affine" \
      2>&1 | tail -2
  B=S1,L1,I1,I2,K1,K3,K4,K5,K6
  for L in 26 27; do c=$([ $L = 26 ] && echo 20 || echo 22)
    timeout 100 python3 tools/experiments/msm_profile.py $L --affine --c $c --pairs on --reps 2 --distinct-log $L \
        --kernels $B $B,K8 $B,K9 $B,K8,K9 2>&1 | grep "^2^$L" | sed 's/R1+R2=on //; s/ variant=1//; s/I1,I2,K1,K3,K4,K5,K6,L1,S1/B/' \
        | cut -c1-300
  done ;;
Z25)
  # session 12: K7 (round plans by bucket groups, with K5): its GPU tests; the 2^26 and 2^27 MSMs with and without
  # it (alternated in one process); cuzk micro msm at 2^26 with and without it
  timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu_msm_many.py \
      -k "plan_entry or kernel_opts or k6 or many_affine" 2>&1 | tail -2
  B=S1,L1,I1,I2,K1,K3,K4,K5,K6
  for L in 26 27; do c=$([ $L = 26 ] && echo 20 || echo 22)
    timeout 100 python3 tools/experiments/msm_profile.py $L --affine --c $c --pairs on --reps 2 --distinct-log $L \
        --kernels $B $B,K7 2>&1 | grep "^2^$L" | sed 's/R1+R2=on //; s/ variant=1//; s/I1,I2,K1,K3,K4,K5,K6,L1,S1/B/' \
        | cut -c1-240
  done
  for r in 1 2; do for o in "" "+K7"; do echo "CUZK_OPT=${o:-defaults}"
    CUZK_OPT=$o timeout 60 python3 -m cuzk micro msm --log-size 26 -p 1 -n 3 -w 1 2>&1 | tail -1
  done; done ;;
Z24)
  # session 12, K4-K6 on by default: c at one pass (2^26: 20, 21, 22), the issue's figure (cuzk micro msm), then the
  # whole GPU suite
  timeout 100 python3 tools/experiments/msm_profile.py 26 --affine --c 20 21 22 --pairs on --reps 2 --distinct-log 26 \
      2>&1 | grep "^2^26" | sed 's/R1+R2=on //; s/ variant=1//; s/kernels=I1,I2,K1,K3,K4,K5,K6,L1,S1 //' | cut -c1-230
  timeout 90 python3 -m cuzk micro msm --log-size 26 2>&1 | tail -3
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider -x tests --ignore=tests/test_gpu.py 2>&1 | tail -2
  timeout 80 python3 -m pytest -q -m gpu -p no:cacheprovider -x tests/test_gpu.py 2>&1 | tail -2 ;;
Z23)
  # session 12: K6 (windows a sort pass from free memory): its GPU tests; the 2^26 and 2^27 MSMs with and without it
  # (alternated in one process); 10 x 2^27 pipelined with +K6 against the defaults
  timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu_msm_many.py \
      -k "k6 or kernel_opts or many_affine" 2>&1 | tail -2
  B=S1,L1,I1,I2,K1,K3,K4,K5
  for L in 26 27; do c=$([ $L = 26 ] && echo 20 || echo 22)
    timeout 120 python3 tools/experiments/msm_profile.py $L --affine --c $c --pairs on --reps 2 --distinct-log $L \
        --kernels $B $B,K6 2>&1 | grep "^2^$L" | sed 's/R1+R2=on //; s/ variant=1//; s/I1,I2,K1,K3,K4,K5,L1,S1/B/' | cut -c1-250
  done
  timeout 330 python3 tools/experiments/pipeline_ab.py --rounds 2 -- "" "+K6" 2>&1 | grep -v "^key:" | tail -12 ;;
Z22)
  # session 12, K4 + K5 on: windows a sort pass. 2^26 (c = 20, 13 windows) at 4, 6, 7 and 13 a pass (4, 3, 2, 1
  # passes); 2^27 (c = 22, 12 windows) at 2 and 3 (6, 4 passes); each size warmed up once, then alternated
  for L in 26 27; do c=$([ $L = 26 ] && echo 20 || echo 22)
    me=$([ $L = 26 ] && echo "268435456 402653184 469762048 872415232" || echo "268435456 402653184")
    timeout 220 python3 tools/experiments/msm_profile.py $L --affine --c $c --pairs on --reps 3 --distinct-log $L \
        --max-entries $me 2>&1 | grep "^2^$L" | sed 's/R1+R2=on //; s/ variant=1//; s/kernels=[A-Z0-9,]* //' | cut -c1-240
  done ;;
Z21)
  # session 12: K4 (round plans by entry) and K5 (the rounds' sizes read once): their GPU tests, then the 2^26 and
  # 2^27 MSMs over the base, +K4, +K5 and +K4+K5 (alternated in one process; prediction in docs/perf-log.md)
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu_msm_many.py \
      -k "plan_entry or kernel_opts or multi_pass or affine or many" 2>&1 | tail -2
  B=S1,L1,I1,I2,K1,K3
  for L in 26 27; do c=$([ $L = 26 ] && echo 20 || echo 22)
    timeout 150 python3 tools/experiments/msm_profile.py $L --affine --c $c --pairs on --reps 2 --distinct-log $L \
        --kernels $B $B,K4 $B,K5 $B,K4,K5 2>&1 | grep "^2^$L" | sed 's/R1+R2=on //; s/ variant=1//' | cut -c1-250
  done ;;
Z19)
  # session 12, first: 10 x 2^27 with K3 against -K3 (predicted ~1.39 s a partition); then the experiment define
  # CUZK_XYZZ_AFFINE_Q=1 (xyzz_add_mem skips q's ZZ/ZZZ products when both are one; its msm_g1/msm_g2 cubins are in
  # .cubin): the MSM GPU tests in that build. Its timings are Z20
  timeout 300 python3 tools/experiments/pipeline_ab.py --rounds 2 -- "" "-K3" 2>&1 | grep -v "^key:" | tail -12
  CUZK_KERNEL_DEFINES="CUZK_XYZZ_AFFINE_Q=1" timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider \
      tests/test_gpu_msm.py tests/test_gpu_msm_many.py -k "kernel_opts or edge or random or pair or multi_pass or many" \
      2>&1 | tail -2 ;;
Z20)
  # session 12, after Z19: the CUZK_XYZZ_AFFINE_Q=1 MSMs against the default (processes alternated), then three
  # windows a sort pass at 2^27
  for r in 1 2; do for d in "" "CUZK_XYZZ_AFFINE_Q=1"; do for L in 27 26; do c=$([ $L = 26 ] && echo 20 || echo 22)
    echo "defines: ${d:-default}"
    CUZK_KERNEL_DEFINES="$d" timeout 60 python3 tools/experiments/msm_profile.py $L --affine --c $c --pairs on \
        --reps 1 --distinct-log $L 2>&1 | grep "^2^$L" | sed 's/R1+R2=on //; s/ variant=1//' | cut -c1-215
  done; done; done
  # three windows a sort pass at 2^27 (4 passes, not 6: fewer scalar reads and launches, ~4 GB more at the peak)
  timeout 100 python3 tools/experiments/msm_profile.py 27 --affine --c 22 --pairs on --reps 2 --distinct-log 27 \
      --max-entries 268435456 402653184 2>&1 | grep "^2^27" | sed 's/R1+R2=on //; s/ variant=1//' | cut -c1-240 ;;
Z18)
  # session 11: K2 (canonical scalars once) and K3 (offsets from the keys), both on by default in this tree: their GPU
  # tests, the 2^26 and 2^27 MSMs over the four sets (alternated in one process), then the whole GPU suite
  timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu_msm_many.py \
      tests/test_gpu_sort.py -k "kernel_opts or k2 or multi_pass or untouched or many or sort" 2>&1 | tail -2
  B=S1,L1,I1,I2,K1
  for L in 26 27; do c=$([ $L = 26 ] && echo 20 || echo 22)
    timeout 110 python3 tools/experiments/msm_profile.py $L --affine --c $c --pairs on --reps 2 --distinct-log $L \
        --kernels $B $B,K2 $B,K3 $B,K2,K3 2>&1 | grep "^2^$L" | sed 's/R1+R2=on //; s/ variant=1//' | cut -c1-215
  done
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -x tests --ignore=tests/test_gpu.py 2>&1 | tail -2
  timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider -x tests/test_gpu.py 2>&1 | tail -2 ;;
Z17)
  # session 11: K1 alone at 2^24 (others at their defaults; 8 rounds, 99% intervals), then the NTT figure at 2^27
  ablate_alone K1
  timeout 120 python3 -m cuzk micro ntt --log-size 27 -p 1 -n 3 -w 1 2>&1 | tail -2 ;;
Z16)
  # session 11: K1 (the bucket keys sorted by CUB over their bucket bits alone): its GPU tests, the 2^26 and 2^27 MSMs
  # with and without it (alternated in one process, distinct bases), then 10 x 2^27 pipelined, defaults against +K1
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_sort.py tests/test_gpu_msm.py \
      -k "sort or kernel_opts or multi_pass" 2>&1 | tail -2
  for L in 26 27; do c=$([ $L = 26 ] && echo 20 || echo 22)
    timeout 120 python3 tools/experiments/msm_profile.py $L --affine --c $c --pairs on --reps 2 --distinct-log $L \
        --kernels S1,L1,I1,I2 S1,L1,I1,I2,K1 2>&1 | grep "^2^$L" | cut -c1-300
  done
  timeout 300 python3 tools/experiments/pipeline_ab.py --rounds 2 -- "" "+K1" 2>&1 | grep -v "^key:" | tail -12 ;;
Z15)
  # session 11, first: the whole GPU suite with H2 on by default; then 10 x 2^27 pipelined, H2 against -H2 (one
  # key, alternated; Z14's single run was cut by the device budget before its proofs ended)
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests --ignore=tests/test_gpu.py 2>&1 | tail -3
  timeout 80 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py 2>&1 | tail -2
  timeout 300 python3 tools/experiments/pipeline_ab.py --rounds 2 -- "" "-H2" 2>&1 | grep -v "^key:" | tail -12 ;;
Z14)
  # session 10, last (~200 s left): H2's GPU tests (h against the CPU with and without it, its kernels against
  # Python ints, the same h on random a, b, c, a proof with H2 alone), then the H phase's steps at 2^27
  timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py \
      -k "h_matches_cpu or pointwise or h2 or (each_optimization and H2)" 2>&1 | tail -2
  timeout 70 python3 tools/experiments/h_profile.py 27 --reps 2 2>&1 | grep "coeff F1 N3" | cut -c1-320 ;;
Z13)
  # session 10, last: the whole GPU suite with the final defaults (N3, B2, B3 on)
  timeout 220 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests --ignore=tests/test_gpu.py 2>&1 | tail -3
  timeout 80 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py 2>&1 | tail -2 ;;
Z12)
  # session 10, last: N3 (the H phase's pointwise passes on Fr build 6): its GPU tests, the H steps at 2^27 with and
  # without it, then 10 x 2^27 pipelined with the final defaults (B2, B3 on) against +N3, one key, alternated
  timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py \
      -k "h_matches_cpu or pointwise or scale_bit_reverse or each_optimization" 2>&1 | tail -2
  timeout 80 python3 tools/experiments/h_profile.py 27 --reps 2 2>&1 | grep "coeff" | cut -c1-300
  timeout 330 python3 tools/experiments/pipeline_ab.py --rounds 2 "" "+N3" 2>&1 | grep -v "^key:" | tail -10 ;;
Z11)
  # session 10: c = 24 (11 windows, not 12) for the 2^27 H MSM on distinct bases, against c = 22; 2^26 over c = 20, 22,
  # 24 on distinct bases (session 9's 2^26 rows used tiled bases); the affine window-size test made deterministic
  timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py -k window_sizes 2>&1 | tail -1
  timeout 260 python3 tools/experiments/msm_profile.py 27 --affine --c 22 24 --pairs on --reps 2 --distinct-log 27 \
      2>&1 | grep "^2^27" | cut -c1-260
  timeout 200 python3 tools/experiments/msm_profile.py 26 --affine --c 20 22 24 --pairs on --reps 2 --distinct-log 26 \
      2>&1 | grep "^2^26" | cut -c1-260 ;;
Z10)
  # session 10: the GPU suite after the MSM pass loop lost its redundant device reads (affine_rounds counts on the
  # host), with B3's pipeline tests; the 2^26 MSM; then B3 (the packed witness through /dev/shm) at 10 x 2^27
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests --ignore=tests/test_gpu.py 2>&1 | tail -2
  timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py 2>&1 | tail -2
  timeout 60 python3 -m cuzk micro msm --log-size 26 -p 1 -n 3 -w 1 -o $OUT/micro_msm26.json 2>&1 | tail -1
  CUZK_OPT=+B2 timeout 300 python3 tools/experiments/pipeline_ab.py --rounds 2 "" "+B3" 2>&1 | grep -v "^key:" \
      | tail -10 ;;
Z9)
  # session 10: M3's removal (the G2 bad-args test), the pipeline's GPU tests (warm-up along the pipelined path, W1),
  # then W1 against the defaults at 10 x 2^27, one key, alternated runs (tools/experiments/pipeline_ab.py; B2 on)
  timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_pipeline.py \
      -k "bad_args or g2 or pipeline" 2>&1 | tail -2
  CUZK_OPT=+B2 timeout 440 python3 tools/experiments/pipeline_ab.py --rounds 2 "" "+W1" 2>&1 | grep -v "^key:" \
      | tail -14 ;;
Z8)
  # session 10, first: the whole GPU suite with F1 and F2 on by default (M3 off; its own tests run in it too:
  # test_g2_affine_*), then M3 (G2 affine rounds, I1 builds) at 2^22 and in the 2^24 ablation
  timeout 250 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests --ignore=tests/test_gpu.py 2>&1 | tail -3
  timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py 2>&1 | tail -3
  for o in "" "+M3"; do CUZK_OPT=$o timeout 60 python3 -m cuzk micro msm_g2 --log-size 22 -p 1 -n 3 -w 1 \
      -o $OUT/micro_g2_22_m3$o.json 2>&1 | tail -1; done
  ablate_alone M3 ;;
Z7)
  # session 9, last: F1 (the H phase's last scale and bit reversal fused) and F2 (a pipelined proof consumes its a, b,
  # c in place): their GPU tests, the H phase's steps at 2^27 with F1, then 10 x 2^27 pipelined with both
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py tests/test_pipeline.py \
      -k "h_matches_cpu or scale_bit_reverse or spendable or each_optimization or pipeline" 2>&1 | tail -2
  timeout 60 python3 tools/experiments/h_profile.py 27 --reps 2 2>&1 | tail -3 | cut -c1-250
  CUZK_OPT=+B2,+F1,+F2 timeout 300 bash tools/gpu_pipeline27.sh 2>&1 | grep -E "^run|^pipelined|verified" ;;
Z6)
  # session 9, last: where the H phase's 0.414 s at 2^27 goes (7 NTTs and the pointwise passes, per step), and the
  # host's share of the 2^27 H MSM (Nsight Systems: the kernels' sum against the events' time of one plain MSM)
  timeout 150 python3 tools/experiments/h_profile.py 24 27 --reps 2 2>&1 | tail -4
  source tools/profiler_env.sh
  if [ -n "$NSYS" ]; then
    timeout 200 "$NSYS" profile -o "$OUT/msm27" --force-overwrite true --capture-range=cudaProfilerApi --trace cuda \
        python3 tools/experiments/msm_profile.py 27 --affine --c 22 --pairs on --distinct-log 27 --profiler-range \
        2>&1 | grep -E "profiled MSM|rror" | head -5
    timeout 100 "$NSYS" stats --report cuda_gpu_kern_sum --format csv --output "$OUT/k27" "$OUT/msm27.nsys-rep" \
        >/dev/null 2>&1
    python3 - "$OUT" <<'PY'
import csv, glob, sys
for f in glob.glob(f"{sys.argv[1]}/k27*.csv"):
    rows = list(csv.DictReader(open(f)))
    tot = sum(float(r.get("Total Time (ns)", 0) or 0) for r in rows)
    n = sum(int(r.get("Instances", 0) or 0) for r in rows)
    print(f"kernels: {len(rows)} names, {n} launches, sum {tot / 1e6:.1f} ms")
    for r in rows[:6]:
        print(f"  {float(r['Total Time (ns)']) / 1e6:8.1f} ms {r['Instances']:>6} x {r['Name'][:70]}")
PY
  else echo "no nsys"; fi ;;
Z5)
  # session 9: two products in one call (CUZK_AFFINE_PAIR=1, experiment define: id and the next inv of the second
  # walk): the G1 kernel-set window sums under it (word for word against the default kernels and arkworks), then
  # the 2^26 MSM alternated with the defaults
  CUZK_KERNEL_DEFINES="CUZK_AFFINE_PAIR=1" timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf \
      "tests/test_gpu_msm.py::test_kernel_opts_same_window_sums[1-random]" \
      "tests/test_gpu_msm.py::test_kernel_opts_same_window_sums[1-mixed]" \
      "tests/test_gpu_msm.py::test_kernel_opts_same_window_sums[1-small]" 2>&1 | tail -2
  msm26_alternated "" "CUZK_AFFINE_PAIR=1" ;;
Z4)
  # session 9: the whole GPU suite with I2 on by default, then issue 5's figures through `cuzk micro msm`
  timeout 250 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests --ignore=tests/test_gpu.py 2>&1 | tail -3
  timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py 2>&1 | tail -3
  for L in 20 24 26; do timeout 100 python3 -m cuzk micro msm --log-size $L -p 1 -n 3 -w 1 -o $OUT/micro_msm$L.json \
      2>&1 | tail -1; done ;;
Z3)
  # session 9: I2 (I1's callee on Fp build 3): its GPU tests (window sums word for word over the kernel sets, batch
  # sums, every toggle alone gives a valid proof), the 2^26 G1 MSM with and without it (interleaved), the 2^22 G2
  # MSM, then I2 at 2^24 with the others at their defaults
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu.py \
      -k "kernel_opts or each_optimization" 2>&1 | tail -2
  timeout 100 python3 tools/experiments/msm_profile.py 26 --affine --c 20 --pairs on --kernels S1,L1,I1 S1,L1,I1,I2 \
      --reps 3 2>&1 | grep median
  for o in "" "+I2"; do CUZK_OPT=$o timeout 60 python3 -m cuzk micro msm_g2 --log-size 22 -p 1 -n 3 -w 1 \
      -o $OUT/micro_g2_22$o.json 2>&1 | tail -1; done
  ablate_alone I2 ;;
Z2)
  # session 9: affine variant 6 (staged loads: cp.async into shared memory, plan words and keys ahead): its GPU
  # tests, the 2^26 MSM against variant 1 (interleaved), the same with Fp build 3 in I1's callee, ncu at 2^22
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py -k "variant6" 2>&1 | tail -2
  timeout 100 python3 tools/experiments/msm_profile.py 26 --affine --c 20 --pairs on --variants 1 6 --reps 3 2>&1 \
      | grep -E "median|variant=6" | cut -c1-260
  CUZK_KERNEL_DEFINES="CUZK_FASTMUL_VARIANT_FP=3" timeout 100 python3 tools/experiments/msm_profile.py 26 --affine \
      --c 20 --pairs on --variants 1 6 --reps 2 2>&1 | grep median
  TAG=_v6 timeout 110 bash tools/ncu_msm_affine.sh 22 6 2>&1 | grep -E "g1_affine|Duration|DRAM Throughput|Issue Slots Busy|Warp Cycles Per|long_scoreboard|barrier" | head -16 ;;
Z1)
  # session 9: Y10's 2^27 c = 22 row spent 194.8 ms in bucket sums (13-15 at c = 21, 23): a degenerate pass redone in
  # XYZZ (copies of a tiled base meeting as P + P) or the product's schedule? The stats, tiled (2^24) and distinct bases
  timeout 120 python3 tools/experiments/msm_profile.py 27 --affine --c 21 22 --pairs on --reps 1 2>&1 | grep "^2^27"
  timeout 200 python3 tools/experiments/msm_profile.py 27 --affine --c 21 22 23 --pairs on --reps 2 --distinct-log 27 \
      2>&1 | grep "^2^27" ;;
S1)
  # session 3, call 1: GPU tests of what session 2 merged untested, MSM variant 2, the 2^24 ablation (A4 added)
  timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_pipeline.py tests/test_gpu_partition.py \
      "tests/test_gpu.py::test_each_optimization_gives_valid_proofs" 2>&1 | tail -2
  timeout 200 python3 tools/gpu_msm_v2_check.py --sizes 20,24,26 --reps 3 2>&1 | tail -30
  timeout 230 python3 -m cuzk ablate --backend cuda --circuit porep_partition --log-size 24 --repeat 8 \
      --opt-set D4,C1,B1,A4,M1,N1 --no-leave-one-out --device-keygen --max-seconds 170 \
      --json $OUT/ablate_part24.json --png $OUT/ablate_part24.png 2>&1 | tail -45 ;;
S2)
  # session 3, call 2: the founding scenario; 10 x 2^27 pipelined (witness-only workers) with C1 on
  timeout 170 python3 -m cuzk ablate --backend cuda --circuit porep_like --log-size 16 --circuits 10 --repeat 8 \
      --parallel-synthesis 10 --synthesis-pool thread --no-leave-one-out --max-seconds 140 --opt-set A1,A2,B1,D4,A4 \
      --json $OUT/scenario16.json --png $OUT/scenario16.png 2>&1 | tail -40
  CUZK_OPT=+C1 timeout 380 bash tools/gpu_pipeline27.sh 2>&1 | tail -40 ;;
S3)
  # session 3, call 3: A1, A2, A4 at 2^24 on porep_like (the generic ConstraintSystem, where A1/A2 act);
  # A4 with the GPU-made key needs the B_G2 download, tested first
  opts=A1,A2,A4
  timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider "tests/test_gpu_partition.py::test_a4_with_a_device_key" \
      2>&1 | tail -2 | grep -q "1 passed" || { echo "A4 device-key test failed: A4 left out"; opts=A1,A2; }
  timeout 500 python3 -m cuzk ablate --backend cuda --circuit porep_like --log-size 24 --repeat 8 \
      --opt-set $opts --no-leave-one-out --device-keygen --max-seconds 400 \
      --json $OUT/ablate_like24.json --png $OUT/ablate_like24.png 2>&1 | tail -45 ;;
S4a)
  # session 3, call 4: A4 with a GPU-made key (test output shown), then A4 at 2^24 on porep_partition
  timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider "tests/test_gpu_partition.py::test_a4_with_a_device_key" \
      2>&1 | tail -25
  timeout 300 python3 -m cuzk ablate --backend cuda --circuit porep_partition --log-size 24 --repeat 8 \
      --opt-set A4 --device-keygen --max-seconds 240 \
      --json $OUT/ablate_part24_a4.json --png $OUT/ablate_part24_a4.png 2>&1 | tail -40 ;;
S4b)
  # session 3, call 5: A1, A2 at 2^24 on porep_like: the 3 rounds of call 3 resumed to 8
  cp docs/perf-data/ablate-like-2p24.part1.json $OUT/ablate_like24.json
  timeout 560 python3 -m cuzk ablate --resume $OUT/ablate_like24.json --repeat 8 --max-seconds 530 \
      --png $OUT/ablate_like24.png 2>&1 | tail -45 ;;
T1)
  # session 4, call 1: the whole GPU suite (428 tests; kernels changed since session 3's last suite run)
  timeout 570 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests 2>&1 | tail -12 ;;
T1a)
  # the GPU suite in two calls (one may not fit 10 minutes): tests/test_gpu.py ...
  timeout 570 python3 -m pytest -q -m gpu -p no:cacheprovider -rf --durations=8 tests/test_gpu.py 2>&1 | tail -16 ;;
T1b)
  # ... and every other GPU test
  timeout 570 python3 -m pytest -q -m gpu -p no:cacheprovider -rf --durations=8 tests --ignore=tests/test_gpu.py \
      2>&1 | tail -16 ;;
T2)
  # session 4, call 2: the multipliers, each checked against big ints and timed: the FP64-pipe experiment
  # (dfma_check.py), then builds 1, 5 (Karatsuba) and 6 (mont_t on the FP64 pipe) (mul_check.py --only5)
  timeout 150 python3 tools/experiments/dfma_check.py 2>&1 | tail -25
  timeout 330 python3 tools/experiments/mul_check.py --only5 2>&1 | tail -30 ;;
T3)
  # session 4, call 3: the NTT and the MSM on the new multipliers: every NTT variant (r4d, r4m included)
  # at 2^20/2^24/2^27; r4 rebuilt with Fr variant 6; the G1 MSM at 2^24/2^26 with Fp variant 6 vs the default
  timeout 150 python3 tools/gpu_ntt_check.py --no-tests --no-mul --variants r4,r4d,r4m 2>&1 | tail -10
  CUZK_KERNEL_DEFINES="CUZK_FASTMUL_VARIANT_FR=6" timeout 100 python3 tools/gpu_ntt_check.py --no-tests --no-mul \
      --variants r4 2>&1 | tail -6
  timeout 90 python3 tools/gpu_msm_affine_check.py --sizes 24,26 --no-tests 2>&1 | tail -8
  CUZK_KERNEL_DEFINES="CUZK_FASTMUL_VARIANT_FP=6 CUZK_AFFINE_BLOCKS_PER_SM=3" timeout 200 \
      python3 tools/gpu_msm_affine_check.py --sizes 24,26 --no-tests 2>&1 | tail -8 ;;
T2b)
  # session 4, call 1b: T2 cut short by blocks that do not launch (build 6 at 512 threads): rerun quick, Fr only
  # for dfma; then the NTT variants (T3's first half)
  timeout 90 python3 tools/experiments/dfma_check.py --quick --fields fr 2>&1 | tail -9
  timeout 200 python3 tools/experiments/mul_check.py --only5 --quick 2>&1 | grep -v "^  ok" | tail -16
  timeout 150 python3 tools/gpu_ntt_check.py --no-tests --no-mul --variants r4,r4d,r4m 2>&1 | tail -10
  CUZK_KERNEL_DEFINES="CUZK_FASTMUL_VARIANT_FR=6" timeout 100 python3 tools/gpu_ntt_check.py --no-tests --no-mul \
      --variants r4 2>&1 | tail -6 ;;
T3b)
  # session 4: T3's second half, the G1 MSM with Fp build 6 against the default
  timeout 90 python3 tools/gpu_msm_affine_check.py --sizes 24,26 --no-tests 2>&1 | tail -8
  CUZK_KERNEL_DEFINES="CUZK_FASTMUL_VARIANT_FP=6 CUZK_AFFINE_BLOCKS_PER_SM=3" timeout 200 \
      python3 tools/gpu_msm_affine_check.py --sizes 24,26 --no-tests 2>&1 | tail -8 ;;
T5b)
  # session 4: ncu on the NTT passes (Fr builds 1 and 6), then the cuzk side of the snarkjs ratio
  timeout 280 bash tools/ncu_ntt.sh 24 2>&1 | tail -150
  SNARKJS_S="16=6.05,18=13.83" timeout 300 bash tools/gpu_snarkjs_ratio.sh 2>&1 | tail -15 ;;
T6)
  # session 4: r4x (products split between the FMA and FP64 pipes), its GPU tests, three builds of it; then the
  # snarkjs ratio with the resident proof's phases, and a host profile of the resident proof at 2^18
  timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_ntt_reg.py -k r4x 2>&1 | tail -2
  timeout 100 python3 tools/gpu_ntt_check.py --no-tests --no-mul --variants r4,r4x 2>&1 | tail -9 | head -4
  for d in "CUZK_NTT_SPLIT_BLOCKS=3" "CUZK_NTT_SPLIT=0x2" "CUZK_NTT_SPLIT=0xE"; do echo "r4x $d"
    CUZK_KERNEL_DEFINES="$d" timeout 80 python3 tools/gpu_ntt_check.py --no-tests --no-mul --variants r4x 2>&1 | grep "^r4x"
  done
  SNARKJS_S="16=6.05,18=13.83" timeout 150 bash tools/gpu_snarkjs_ratio.sh 2>&1 | tail -6
  timeout 60 python3 tools/experiments/profile_resident.py 18 /tmp/sjb cuda 2>&1 | head -70 ;;
T7)
  # session 4: the kernels of one resident proof at 2^18 (nsys or ncu), then the GPU tests outside test_gpu.py
  timeout 60 python3 -m cuzk bench-snarkjs --log-sizes 18 --backend cuda --keygen-backend cuda --skip-snarkjs \
      --repeat 1 --workdir /tmp/sjb 2>&1 | tail -1
  timeout 200 bash tools/nsys_resident.sh 18 2>&1 | tail -70
  timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider -rf --durations=8 tests --ignore=tests/test_gpu.py \
      2>&1 | tail -16 ;;
T8)
  # session 4: the host window fold and the shorter segments: GPU MSM tests, the snarkjs ratio with phases,
  # the kernels of one 2^18 proof again
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_zkey_gpu.py \
      2>&1 | tail -4
  SNARKJS_S="16=6.05,18=13.83" timeout 150 bash tools/gpu_snarkjs_ratio.sh 2>&1 | tail -6
  timeout 200 bash tools/nsys_resident.sh 18 2>&1 | tail -24 ;;
T9)
  # session 4, last call: tests/test_gpu.py (the rest of the suite passed in T7/T8 after the last kernel change),
  # then the 2^16/2^18 resident proofs without and with P1 (concurrent streams)
  timeout 290 python3 -m pytest -q -m gpu -p no:cacheprovider -rf --durations=5 tests/test_gpu.py 2>&1 | tail -12
  SNARKJS_S="16=6.05,18=13.83" timeout 80 bash tools/gpu_snarkjs_ratio.sh 2>&1 | tail -5
  CUZK_OPT=+P1 timeout 60 python3 -m cuzk bench-snarkjs --log-sizes 18 --backend cuda --keygen-backend cuda \
      --skip-snarkjs --repeat 5 --workdir /tmp/sjb --json /tmp/p1.json 2>&1 | tail -2
  python3 -c "import json; r = json.load(open('/tmp/p1.json'))['rows'][0]; print('P1 2^18 resident', r['samples']['cuzk_resident'], {p: round(v['host_s'] * 1e3, 1) for p, v in r['resident_phases'].items()})" ;;
T10)
  # session 4: every GPU test outside test_gpu.py again (the MSM's host fold came after T7), then P1 alone at
  # 2^18 (porep_like, one circuit, interleaved rounds, 99% intervals)
  timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests --ignore=tests/test_gpu.py 2>&1 | tail -4
  timeout 150 python3 -m cuzk ablate --backend cuda --circuit porep_like --log-size 18 --repeat 12 --opt-set P1 \
      --no-leave-one-out --device-keygen --max-seconds 120 --json $OUT/ablate_p1_18.json 2>&1 | tail -22 ;;
T11)
  # session 4: the resident 2^16 and 2^18 proofs, default and +P1 interleaved in one process
  timeout 90 python3 tools/experiments/resident_ab.py 18 15 "" +P1 2>&1 | tail -4
  timeout 60 python3 tools/experiments/resident_ab.py 16 15 "" +P1 2>&1 | tail -3 ;;
T12)
  # session 4: batch sums planned on the host (merges of 4): their GPU tests, then interleaved against the old ones
  timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu.py \
      -k "batch_add or each_optimization or p1_same or pipeline_proofs" 2>&1 | tail -3
  timeout 60 python3 tools/experiments/resident_ab.py 18 15 "" old-batch 2>&1 | tail -3
  timeout 40 python3 tools/experiments/resident_ab.py 16 15 "" old-batch 2>&1 | tail -2 ;;
U0)
  for f in fp_mul fr_mul; do for a in "--chains 4 --fastmul 1" "--chains 1 --fastmul 1" "--chains 1 --fastmul 6"; do
    timeout 90 python3 -m cuzk micro $f $a -p 3 -n 5 -w 1 2>&1 | tail -1; done; done ;;
V1)
  bash tools/device_next.sh U0
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_ntt_reg.py tests/test_gpu.py \
      -k "r4b6 or r4x or each_optimization" 2>&1 | tail -3
  OUT=$OUT timeout 250 bash tools/ncu_msm_affine.sh 24 1 2>&1 | tail -95 ;;
V2)
  # U3 (NTT occupancy), then U5 (the snarkjs ratio with snarkjs on the GPU machine; carry .nodebundle too)
  bash tools/device_next.sh U3
  OUT=$OUT timeout 480 bash tools/gpu_snarkjs_same_machine.sh 16,18 2>&1 | tail -12 ;;
V3)
  # affine round variant 3 (look-ahead loads): its GPU tests, then v1 vs v3 interleaved at 2^20, 2^24, 2^26
  # (historical: variant 3 was removed after V5; this case and V5 now stop at the variant check)
  timeout 560 python3 tools/gpu_msm_v2_check.py --sizes 20,24,26 --reps 3 --variants 1,3,1,3 -k "v3 or affine_variant" \
      2>&1 | tail -32 ;;
V4)
  # M2's GPU tests and msm_g1's after the msm_digits refactor; M2 in the resident 2^18 proof (interleaved A/B);
  # ncu stall samples per instruction of the keyed affine round (why variant 3 missed)
  timeout 420 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm_many.py tests/test_gpu_msm.py \
      2>&1 | tail -3
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py tests/test_gpu_partition.py \
      -k "each_optimization or m2" 2>&1 | tail -3
  timeout 150 python3 tools/experiments/resident_ab.py 18 12 "" +M2 2>&1 | tail -8
  OUT=$OUT timeout 200 bash tools/ncu_msm_sources.sh 22 1 2>&1 | tail -46 ;;
V5)
  # variant 3 (rewritten: register look-ahead) tested and timed; small G2 MSMs over c (b_g2's window); one 2^27
  # partition with today's defaults (issue 7's GPU time per partition)
  timeout 200 python3 tools/gpu_msm_v2_check.py --sizes 24,26 --reps 3 --variants 1,3,1,3 -k "v3" 2>&1 | tail -14
  timeout 150 python3 tools/gpu_msm_small_sweep.py --groups 2 --sizes 14,16,18 --cs 5-13 --reps 5 2>&1 | grep -E "fastest|ALL|MISMATCH"
  OUT=$OUT CUZK_PART_TIMEOUT=200 bash tools/gpu_partition.sh 27 2>&1 | tail -22 ;;
V6)
  # D5's GPU tests and its resident A/B (with M2); G2 windows per c around 2^15; a 2^27 partition after a 2^20 warm-up
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py -k "each_optimization" 2>&1 | tail -2
  timeout 120 python3 tools/experiments/resident_ab.py 18 12 +M2 +M2,+D5 2>&1 | tail -3
  timeout 90 python3 tools/gpu_msm_small_sweep.py --groups 2 --sizes 15 --cs 9-14 --reps 5 2>&1 | grep -E "^G2|ALL|MISMATCH"
  OUT=$OUT CUZK_PART_TIMEOUT=200 bash tools/gpu_partition.sh 20 27 2>&1 | grep -v "^\[" | tail -24 ;;
V7)
  # the snarkjs ratio at 2^18 with M2 on, both provers on this machine in one call (carry .nodebundle)
  CUZK_OPT=+M2 OUT=$OUT timeout 400 bash tools/gpu_snarkjs_same_machine.sh 18 2>&1 | tail -6 ;;
V8)
  # M2 alone at 2^24 (porep_partition, key made on the GPU): does it cost anything where each MSM fills the GPU?
  timeout 240 python3 -m cuzk ablate --backend cuda --circuit porep_partition --log-size 24 --repeat 8 --opt-set M2 \
      --no-leave-one-out --device-keygen --max-seconds 180 --json $OUT/ablate_m2_24.json 2>&1 | tail -16 ;;
W1)
  # session 6: where the 2^18 resident proof goes now (M2 on): cProfile of 5 proofs (host), then one proof's
  # kernels (Nsight Compute durations per kernel name)
  timeout 150 python3 tools/experiments/profile_resident.py 18 /tmp/sjb cuda 2>&1 | grep -v "^\[" | head -75
  timeout 200 bash tools/nsys_resident.sh 18 2>&1 | tail -30 ;;
W2)
  # session 6: R1 (window reduction by pair levels): GPU tests, every toggle alone, then the resident 2^18 A/B
  # and the kernels of one +R1 proof
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu_msm_many.py \
      -k "pair_levels or matches_arkworks or window_sizes or edge_cases" 2>&1 | tail -3
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py -k each_optimization 2>&1 | tail -3
  timeout 90 python3 tools/experiments/resident_ab.py 18 12 "" +R1 2>&1 | tail -4
  CUZK_OPT=+R1 timeout 120 bash tools/nsys_resident.sh 18 2>&1 | tail -22 ;;
W3)
  # session 6: R2 (merges in pairs): GPU tests, every toggle alone, the resident 2^18 A/B/C, one +R1+R2 proof's
  # kernels, and the 2^26 MSM with R1+R2 off/on
  timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu_msm_many.py \
      -k "pair or batch_add or batch_many or matches_arkworks" 2>&1 | tail -3
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py -k each_optimization 2>&1 | tail -3
  timeout 100 python3 tools/experiments/resident_ab.py 18 12 "" +R1 +R1,+R2 2>&1 | tail -5
  CUZK_OPT=+R1,+R2 timeout 120 bash tools/nsys_resident.sh 18 2>&1 | tail -3
  timeout 150 python3 tools/experiments/msm_profile.py 26 --affine --c 20 --pairs both 2>&1 | tail -3 ;;
W4)
  # session 6: P2 (G2 work overlapped): its GPU tests and every toggle alone; the resident 2^18 A/B/C; then the
  # same-machine snarkjs ratio at 2^18 with R1, R2 (and P2 when its tests passed). Carry .nodebundle.
  opt=+R1,+R2,+P2
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py -k "p2 or each_optimization" \
      2>&1 | tail -3 | tee /tmp/w4t.txt
  grep -q failed /tmp/w4t.txt && opt=+R1,+R2
  timeout 100 python3 tools/experiments/resident_ab.py 18 12 "" +R1,+R2 +R1,+R2,+P2 2>&1 | tail -4
  echo "snarkjs ratio with CUZK_OPT=$opt"
  CUZK_OPT=$opt OUT=$OUT timeout 300 bash tools/gpu_snarkjs_same_machine.sh 18 2>&1 | tail -6 ;;
W5)
  # session 6: the whole GPU suite with R1 and R2 on by default, part 1 (every file but test_gpu.py)
  timeout 420 python3 -m pytest -q -m gpu -p no:cacheprovider -rf --durations=5 tests --ignore=tests/test_gpu.py \
      2>&1 | tail -12 ;;
W6)
  # session 6: part 2 (test_gpu.py), then R1 and R2 alone at 2^24 (porep_partition, key made on the GPU)
  timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider -rf --durations=5 tests/test_gpu.py 2>&1 | tail -10
  bash tools/device_next.sh W7 ;;
W7)
  timeout 260 python3 -m cuzk ablate --backend cuda --circuit porep_partition --log-size 24 --repeat 8 \
      --opt-set R1,R2 --no-leave-one-out --device-keygen --max-seconds 200 --json $OUT/ablate_r12_24.json 2>&1 | tail -16 ;;
W8)
  # session 6: R2 only where a merge level has <= PAIR_MERGE_MAX partials (W7: slower at 2^24 with the others
  # off); its GPU tests; R1, R2 at 2^24 with the other optimizations at their defaults; the 2^18 A/B again
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu_msm_many.py \
      tests/test_gpu.py -k "pair or batch_add or batch_many or each_optimization or same_parts or p2" 2>&1 | tail -3
  timeout 240 python3 -m cuzk ablate --backend cuda --circuit porep_partition --log-size 24 --repeat 8 \
      --opt-set R1,R2 --others defaults --no-leave-one-out --device-keygen --max-seconds 180 \
      --json $OUT/ablate_r12_24d.json 2>&1 | grep -A4 "^| opt"
  timeout 100 python3 tools/experiments/resident_ab.py 18 12 "" -R2 -R1,-R2 2>&1 | tail -4 ;;
W9)
  # session 6: one 2^27 partition with the new defaults (R1, R2, M2), after a 2^20 warm-up: proved and verified
  OUT=$OUT CUZK_PART_TIMEOUT=300 bash tools/gpu_partition.sh 20 27 2>&1 | grep -v "^\[" | tail -16 ;;
W10)
  # session 6: the same-machine snarkjs ratio at 2^18 with the final defaults (R1, R2 on; P2 off). Carry .nodebundle
  OUT=$OUT timeout 280 bash tools/gpu_snarkjs_same_machine.sh 18 2>&1 | tail -5 ;;
Y1)
  # session 8 (LOWREG, FR_CALL and CUZK_FP_CALL=2's numbering were removed after Y3: commits f67e32f, f655c86 have them)
  # session 8: affine pass 2 with few live values (CUZK_AFFINE_LOWREG=1, experiment define): its GPU tests at 5 blocks
  # an SM (G1 affine rounds against arkworks, window sums word for word across S1/L1); the 2^26 MSM, one process per
  # build, alternated (default; LOWREG at 4, 5, 6 blocks); then `cuzk bench --warmup 1` at 2^20 on the GPU
  LR="CUZK_AFFINE_LOWREG=1"
  CUZK_KERNEL_DEFINES="$LR CUZK_AFFINE_BLOCKS_PER_SM=5" timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider -rf \
      tests/test_gpu_msm.py -k "affine or same_window_sums and 1-" 2>&1 | tail -3
  msm26_alternated "" "$LR" "$LR CUZK_AFFINE_BLOCKS_PER_SM=5" "$LR CUZK_AFFINE_BLOCKS_PER_SM=6"
  timeout 150 python3 -m cuzk bench --backend cuda --log-size 20 --warmup 1 2>&1 | tail -22 ;;
Y2)
  # session 8: the Fp products called instead of inlined (CUZK_FP_CALL=1, experiment define): GPU tests (G1 affine and
  # XYZZ against arkworks, S1/L1 word for word), then the 2^26 MSM alternated: default, CALL, CALL + LOWREG at 5 blocks
  CUZK_KERNEL_DEFINES="CUZK_FP_CALL=1" timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider -rf \
      tests/test_gpu_msm.py -k "affine or same_window_sums and 1-" 2>&1 | tail -3
  msm26_alternated "" "CUZK_FP_CALL=1" "CUZK_FP_CALL=1 CUZK_AFFINE_LOWREG=1 CUZK_AFFINE_BLOCKS_PER_SM=5" ;;
Y3)
  # session 8: called products in every G1/G2 MSM kernel (CUZK_FP_CALL=1; 2: the full product as the lazy call plus
  # the subtraction) and in the NTT passes (CUZK_FR_CALL=1): GPU tests of both, then the 2^26 G1 MSM and the
  # 2^22 G2 MSM and the NTT passes, one process per build, alternated
  CUZK_KERNEL_DEFINES="CUZK_FP_CALL=1" timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf \
      tests/test_gpu_msm.py 2>&1 | tail -2
  CUZK_KERNEL_DEFINES="CUZK_FR_CALL=1" timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider -rf \
      tests/test_gpu_ntt_reg.py -k "r4 and not r4x and not r4d and not r4m" 2>&1 | tail -2
  msm26_alternated "" "CUZK_FP_CALL=1" "CUZK_FP_CALL=2" "CUZK_FP_CALL=1 CUZK_AFFINE_BLOCKS_PER_SM=3"
  for d in "" "CUZK_FP_CALL=1" "CUZK_FP_CALL=2" ""; do echo "G2 defines: ${d:-default}"
    CUZK_KERNEL_DEFINES="$d" timeout 90 python3 -m cuzk micro msm_g2 --log-size 22 -p 1 -n 3 -w 1 2>&1 | tail -1
  done
  for d in "" "CUZK_FR_CALL=1" "" "CUZK_FR_CALL=1"; do echo "NTT defines: ${d:-default}"
    CUZK_KERNEL_DEFINES="$d" timeout 90 python3 tools/gpu_ntt_check.py --no-tests --no-mul --variants r4,r4b6 2>&1 \
        | grep -E "^(r4|bad|ALL|FAIL)" | tail -4
  done ;;
Y4)
  # session 8: I1 (the MSM kernels with the Fp products called; registry toggle now): its GPU tests (window sums word
  # for word with S1/L1/I1 sets, G1 and G2, every edge case; every toggle alone gives verified proofs), then the 2^26
  # G1 MSM with and without I1 (one process, interleaved), I1 with the squaring through the product (experiment),
  # and the 2^22 G2 MSM with and without I1
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu_msm_many.py \
      2>&1 | tail -2
  timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py -k "each_optimization" 2>&1 | tail -2
  timeout 80 python3 tools/experiments/msm_profile.py 26 --affine --c 20 --pairs on --kernels S1,L1 S1,L1,I1 --reps 3 \
      2>&1 | grep median
  CUZK_KERNEL_DEFINES="CUZK_FP_CALL_SQR=1" timeout 60 python3 tools/experiments/msm_profile.py 26 --affine --c 20 \
      --pairs on --kernels S1,L1,I1 --reps 2 2>&1 | grep median
  for o in "" "+I1"; do echo "G2 CUZK_OPT=$o"
    CUZK_OPT="$o" timeout 90 python3 -m cuzk micro msm_g2 --log-size 22 -p 1 -n 3 -w 1 2>&1 | tail -1
  done ;;
Y5)
  # session 8: I1 alone at 2^24 with the others at their defaults (porep_partition), then the resident 2^18 A/B
  timeout 260 python3 -m cuzk ablate --backend cuda --circuit porep_partition --log-size 24 --repeat 8 \
      --opt-set I1 --others defaults --no-leave-one-out --device-keygen --max-seconds 180 \
      --json $OUT/ablate_i1_24d.json 2>&1 | grep -A3 "^| opt"
  timeout 100 python3 tools/experiments/resident_ab.py 18 12 "" +I1 2>&1 | tail -3 ;;
Y6)
  # session 8, close: the whole GPU suite on the final kernels and defaults (I1 on); the affine quads (variant 2)
  # with I1 against variant 1 (inlined they were x1.97 slower: 390 KB of code); the same-machine snarkjs ratio at
  # 2^18 (carry .nodebundle too)
  timeout 230 python3 -m pytest -q -m gpu -p no:cacheprovider -rf --durations=3 tests --ignore=tests/test_gpu.py \
      2>&1 | tail -5
  timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider -rf --durations=3 tests/test_gpu.py 2>&1 | tail -5
  timeout 70 python3 tools/experiments/msm_profile.py 26 --affine --c 20 --pairs on --variants 1 2 --reps 1 2>&1 \
      | tail -2 | cut -c1-330
  OUT=$OUT timeout 170 bash tools/gpu_snarkjs_same_machine.sh 18 2>&1 | tail -5 ;;
Y7)
  # session 8, last: issue 5's MSM figures through `cuzk micro msm` (pyperf, the registry's MSM options: I1 on)
  for L in 20 24 26; do timeout 100 python3 -m cuzk micro msm --log-size $L -p 1 -n 3 -w 1 -o $OUT/micro_msm$L.json \
      2>&1 | tail -1; done ;;
Y8)
  # session 8, if device time is left: ncu on the 2^22 affine rounds with I1 off and on (the stall reasons, now with
  # no_instruction: is the fetch wait gone?)
  for k in S1,L1 S1,L1,I1; do echo "kernels $k"
    MSM_KERNEL_OPTS=$k TAG=_${k//,/} timeout 110 bash tools/ncu_msm_affine.sh 22 1 2>&1 | grep -E "g1_affine|Duration|Issue Slots Busy|Eligible Warps|Warp Cycles Per|stalled" | head -24
  done ;;
Y9)
  # session 9, first: affine variant 5 (look-ahead loads: plan words 3 ahead, keys 2 ahead, L2 prefetch of the next
  # output's points; written in session 8 on top of I1, compile-checked only): its GPU tests, then the 2^26 MSM
  # against variant 1 (one process, interleaved) and the ncu stall shares of its rounds at 2^22
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py -k "variant5" 2>&1 | tail -2
  timeout 100 python3 tools/experiments/msm_profile.py 26 --affine --c 20 --pairs on --variants 1 5 --reps 3 2>&1 \
      | grep median
  TAG=_v5 timeout 110 bash tools/ncu_msm_affine.sh 22 5 2>&1 | grep -E "g1_affine|Duration|Issue Slots Busy|Warp Cycles Per|long_scoreboard|no_instruction" | head -16 ;;
Y10)
  # session 9: the window size under I1 (choose_window's constants were fitted before I1 made the XYZZ reductions
  # cheaper): the G1 MSM at 2^24, 2^26, 2^27 over c, one run each (steps shown)
  timeout 250 python3 tools/experiments/msm_profile.py 24 26 --affine --c 18 19 20 21 22 --pairs on --reps 1 2>&1 \
      | cut -c1-200
  timeout 200 python3 tools/experiments/msm_profile.py 27 --affine --c 20 21 22 23 --pairs on --reps 1 2>&1 | cut -c1-200 ;;
Y11)
  # session 9: the Fp product's build inside I1's callee (session 8 prebuilt the cubins: msm_g1 [S1 I1], keygen_g1,
  # keygen_fr, field_ops with each define): build 3 (product rows in one chain, reduction rows in two; no spills)
  # and build 6 (FP64 pipe; 116 B of spills at 128 registers) against build 1; each checked on random inputs first
  for v in 3 6; do
    CUZK_KERNEL_DEFINES="CUZK_FASTMUL_VARIANT_FP=$v" timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider -rf \
        tests/test_gpu_msm.py -k "test_g1_affine_random" 2>&1 | tail -1
  done
  msm26_alternated "" "CUZK_FASTMUL_VARIANT_FP=3" "CUZK_FASTMUL_VARIANT_FP=6" ;;
X1)
  # session 7, first: H1 (each MSM pass sized from two reads of the device; CPU-model tested in session 6):
  # its GPU tests and every toggle alone, then the resident 2^18 A/B, then H1 at 2^24 with the others at defaults
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu_msm_many.py \
      tests/test_gpu.py -k "presized or each_optimization or same_parts" 2>&1 | tail -3
  timeout 100 python3 tools/experiments/resident_ab.py 18 12 "" +H1 2>&1 | tail -3
  timeout 240 python3 -m cuzk ablate --backend cuda --circuit porep_partition --log-size 24 --repeat 8 \
      --opt-set H1 --others defaults --no-leave-one-out --device-keygen --max-seconds 130 \
      --json $OUT/ablate_h1_24d.json 2>&1 | grep -A3 "^| opt"
  CUZK_OPT=+H1 timeout 90 python3 tools/experiments/profile_resident.py 18 /tmp/sjb cuda 2>&1 | grep -v "^\[" | head -60 ;;
X2)
  # session 7: S1 (the MSM kernels' dedicated Fp squaring): its GPU tests, every toggle alone, same parts; the 2^26
  # MSM with and without it (R1, R2 on, interleaved); affine rounds at 5 blocks an SM (96 registers, ~50 B of
  # spills; an experiment define); the resident 2^18 A/B; S1 at 2^24 with the others at their defaults
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu.py \
      -k "fast_sqr or each_optimization or same_parts or ec_ops" 2>&1 | tail -3
  timeout 100 python3 tools/experiments/msm_profile.py 26 --affine --c 20 --pairs on --sqr both --reps 3 2>&1 | tail -3
  CUZK_KERNEL_DEFINES="CUZK_AFFINE_BLOCKS_PER_SM=5" timeout 90 python3 tools/experiments/msm_profile.py 26 --affine \
      --c 20 --pairs on --reps 3 2>&1 | tail -2
  timeout 60 python3 tools/experiments/sort_variants.py 26 28 2>&1 | tail -2
  timeout 60 python3 tools/experiments/resident_ab.py 18 12 "" +S1 2>&1 | tail -3
  timeout 200 python3 -m cuzk ablate --backend cuda --circuit porep_partition --log-size 24 --repeat 8 \
      --opt-set S1 --others defaults --no-leave-one-out --device-keygen --max-seconds 130 \
      --json $OUT/ablate_s1_24d.json 2>&1 | grep -A3 "^| opt" ;;
X3)
  # session 7: L1 (lazy reduction in the G1 affine rounds): its GPU tests (window sums word for word with S1 and L1
  # alone and together, every edge case; batch sums; every toggle alone; same parts), the 2^26 MSM against S1
  # alone, the resident 2^18 A/B, L1 at 2^24 with the others at their defaults
  timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py tests/test_gpu.py \
      -k "kernel_opts or each_optimization or same_parts or ec_ops or affine" 2>&1 | tail -3
  timeout 100 python3 tools/experiments/msm_profile.py 26 --affine --c 20 --pairs on --kernels S1 S1,L1 --reps 3 \
      2>&1 | tail -3
  timeout 60 python3 tools/experiments/resident_ab.py 18 12 "" +L1 2>&1 | tail -3
  timeout 200 python3 -m cuzk ablate --backend cuda --circuit porep_partition --log-size 24 --repeat 8 \
      --opt-set L1 --others defaults --no-leave-one-out --device-keygen --max-seconds 130 \
      --json $OUT/ablate_l1_24d.json 2>&1 | grep -A3 "^| opt" ;;
X4)
  # session 7, last: the whole GPU suite on the final kernels and defaults, then the same-machine snarkjs ratio at
  # 2^18 (carry .nodebundle too)
  timeout 230 python3 -m pytest -q -m gpu -p no:cacheprovider -rf --durations=3 tests --ignore=tests/test_gpu.py \
      2>&1 | tail -6
  timeout 190 python3 -m pytest -q -m gpu -p no:cacheprovider -rf --durations=3 tests/test_gpu.py 2>&1 | tail -6
  OUT=$OUT timeout 170 bash tools/gpu_snarkjs_same_machine.sh 18 2>&1 | tail -5 ;;
X5)
  # session 7: N2 (the NTT passes on fastmul build 6), never measured alone: r4 and r4b6 at 2^20/2^24/2^27
  # (outputs checked), then N2 at 2^24 with the others at their defaults
  timeout 150 python3 tools/gpu_ntt_check.py --no-tests --no-mul --variants r4,r4b6 2>&1 | grep -E "^(r4|bad|ALL|FAIL)" | tail -8
  timeout 230 python3 -m cuzk ablate --backend cuda --circuit porep_partition --log-size 24 --repeat 8 \
      --opt-set N2 --others defaults --no-leave-one-out --device-keygen --max-seconds 150 \
      --json $OUT/ablate_n2_24d.json 2>&1 | grep -A3 "^| opt" ;;
X6)
  # session 7, close: the final defaults (N2 on since X5): test_gpu.py, then the README's main command at 2^20
  timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu.py tests/test_gpu_ntt_reg.py 2>&1 | tail -3
  timeout 200 python3 -m cuzk bench --backend cuda --log-size 20 2>&1 | tail -16 ;;
X7)
  # session 7, close: the micro commands now time the backend's path (window sums with the registry's MSM options;
  # the NTT variant N1/N2 pick): their GPU tests, then the issue figures through them (pyperf, CUDA events)
  timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_micro.py 2>&1 | tail -2
  timeout 150 python3 -m cuzk micro msm --log-size 26 -p 2 -n 3 -o $OUT/micro_msm26.json 2>&1 | tail -4
  timeout 100 python3 -m cuzk micro ntt --log-size 27 -p 2 -n 3 -o $OUT/micro_ntt27.json 2>&1 | tail -4 ;;
X8)
  # session 7: affine variant 4 (two chains a thread, 3 blocks an SM; experiment): its GPU tests, then the 2^26 MSM
  # against variant 1, interleaved, with and without L1 (variant 4's lazy kernels spill 24-28 B; the others none)
  timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_msm.py -k "variant4" 2>&1 | tail -2
  timeout 150 python3 tools/experiments/msm_profile.py 26 --affine --c 20 --pairs on --kernels S1,L1 S1 \
      --variants 1 4 --reps 2 2>&1 | tail -4 ;;
U5)
  OUT=$OUT timeout 560 bash tools/gpu_snarkjs_same_machine.sh 16,18 2>&1 | tail -12 ;;
U1)
  timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider -rf tests/test_gpu_ntt_reg.py tests/test_gpu.py \
      -k "r4b6 or r4x or each_optimization" 2>&1 | tail -3
  timeout 420 python3 -m cuzk ablate --backend cuda --circuit porep_partition --log-size 24 --repeat 8 --opt-set N2 \
      --no-leave-one-out --device-keygen --max-seconds 360 --json $OUT/ablate_n2_24.json 2>&1 | tail -20 ;;
U3)
  # r4 at 2, 3 (default) and 4 blocks an SM, Fr builds 1 and 6 (nvcc -Xptxas -v, sm_90: build 1 106/91, 76/78,
  # 64/64 registers with 0, 0, 140/96 B of spills; build 6 128/128, 80/80, 64/64 with 0, 76/32, 500/276 B)
  for fr in 1 6; do for b in 2 3 4; do echo "r4 Fr build $fr, $b blocks/SM"
    CUZK_KERNEL_DEFINES="CUZK_FASTMUL_VARIANT_FR=$fr CUZK_NTT_R4_BLOCKS=$b" timeout 60 \
        python3 tools/gpu_ntt_check.py --no-tests --no-mul --variants r4 2>&1 | grep "^r4 "
  done; done
  # r2 (64 registers, 2 blocks of 512: twice r4's warps) on Fr build 6 (40 B of spills): does occupancy beat barriers?
  CUZK_KERNEL_DEFINES="CUZK_FASTMUL_VARIANT_FR=6" timeout 90 python3 tools/gpu_ntt_check.py --no-tests --no-mul \
      --variants r2 2>&1 | grep "^r2 " ;;
U4)
  timeout 300 python3 tools/gpu_msm_small_sweep.py --sizes 14,16,18 --cs 5-15 --reps 5 2>&1 | tail -75 ;;
U2)
  CUZK_OPT=+B2 timeout 560 bash tools/gpu_pipeline27.sh 2>&1 | tail -40 ;;
T4)
  # session 4, call 4: B2 (packed witness hand-off and upload) in the 10 x 2^27 pipeline; before (session 3,
  # B2 off): 35.59 s, 3.56 s a proof, synthesis device time 0.66-0.96 s a proof, GPU busy 26.0 s
  CUZK_OPT=+B2 timeout 420 bash tools/gpu_pipeline27.sh 2>&1 | tail -40 ;;
T5)
  # session 4, if time is left: the cuzk side of the snarkjs ratio; ncu on the affine rounds (variant 1 vs 2)
  SNARKJS_S="16=6.05,18=13.83" timeout 280 bash tools/gpu_snarkjs_ratio.sh 2>&1 | tail -15
  timeout 280 bash tools/ncu_msm_affine.sh 24 2>&1 | tail -60 ;;
*) echo "usage: bash tools/device_next.sh S1|S2|S3|S4a|S4b|T1..T12|T1a|T1b|T2b|T3b|T5b|U1|U2"; exit 2 ;;
esac
echo "elapsed $(( $(date +%s) - t0 )) s"
