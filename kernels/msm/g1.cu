// G1 MSM kernels: thin extern "C" entries (the names cuzk/gpu/msm/pippenger.py loads) over the templates of
// msm/pippenger.cuh, and the affine bucket accumulation of msm/affine.cuh.
#include "msm/affine.cuh"

extern "C" __global__ void __launch_bounds__(128)
g1_sum_affine(uint32_t* out, const u64* sorted, const uint32_t* bases, const i64* seg_bucket, const i64* seg_first,
              const i64* offsets, i64 S, i64 nseg) {
    sum_affine<fp_t, true>(out, sorted, bases, seg_bucket, seg_first, offsets, S, nseg);
}
extern "C" __global__ void __launch_bounds__(128)
g1_sum_xyzz(uint32_t* out, const uint32_t* partials, const i64* seg_bucket, const i64* seg_first, const i64* offsets,
            i64 S, i64 nseg) {
    sum_xyzz<fp_t>(out, partials, seg_bucket, seg_first, offsets, S, nseg);
}
extern "C" __global__ void __launch_bounds__(128)
g1_merge_pairs(uint32_t* out, const uint32_t* partials, const uint32_t* plan, i64 total) {
    merge_pairs<fp_t>(out, partials, plan, total);
}
extern "C" __global__ void __launch_bounds__(128)
g1_window_level(uint32_t* a_out, uint32_t* t_out, const uint32_t* a_in, const uint32_t* t_in, i64 count, int L,
                int first, int log_scale, int has_a) {
    window_level<fp_t>(a_out, t_out, a_in, t_in, count, L, first, log_scale, has_a);
}
extern "C" __global__ void __launch_bounds__(128)
g1_window_pair(uint32_t* a_out, uint32_t* t_out, const uint32_t* a_in, const uint32_t* t_in, i64 count, int first,
               int log_scale) {
    window_pair<fp_t>(a_out, t_out, a_in, t_in, count, first, log_scale);
}
extern "C" __global__ void __launch_bounds__(128)
g1_window_join(uint32_t* out, const uint32_t* hi_sums, const uint32_t* lo_sums, i64 count, int s) {
    window_join<fp_t>(out, hi_sums, lo_sums, count, s);
}
extern "C" __global__ void __launch_bounds__(32) g1_combine(uint32_t* out, const uint32_t* window_sums, int nw, int c) {
    combine<fp_t>(out, window_sums, nw, c);
}

// The affine rounds (msm/affine.cuh): pairs, keyed (round 0) or not, exact or lazy (L1); and the segment sums
// of a round's output.
extern "C" __global__ void __launch_bounds__(AFFINE_TPB, AFFINE_BLOCKS_PER_SM)
g1_affine_round_keyed(uint32_t* out, const u64* sorted, const uint32_t* bases, const uint32_t* plan, i64 total,
                      i64 per, int* degenerate, int binary_inv) {
    affine_round<fp_t, AFFINE_TPB, true>(out, sorted, bases, plan, total, per, degenerate, binary_inv);
}
extern "C" __global__ void __launch_bounds__(AFFINE_TPB, AFFINE_BLOCKS_PER_SM)
g1_affine_round(uint32_t* out, const uint32_t* pts, const uint32_t* plan, i64 total, i64 per, int* degenerate,
                int binary_inv) {
    affine_round<fp_t, AFFINE_TPB, false>(out, nullptr, pts, plan, total, per, degenerate, binary_inv);
}
extern "C" __global__ void __launch_bounds__(AFFINE_TPB, AFFINE_BLOCKS_PER_SM)
g1_affine_round_keyed_lazy(uint32_t* out, const u64* sorted, const uint32_t* bases, const uint32_t* plan, i64 total,
                           i64 per, int* degenerate, int binary_inv) {
    affine_round<fp_t, AFFINE_TPB, true, true>(out, sorted, bases, plan, total, per, degenerate, binary_inv);
}
extern "C" __global__ void __launch_bounds__(AFFINE_TPB, AFFINE_BLOCKS_PER_SM)
g1_affine_round_lazy(uint32_t* out, const uint32_t* pts, const uint32_t* plan, i64 total, i64 per, int* degenerate,
                     int binary_inv) {
    affine_round<fp_t, AFFINE_TPB, false, true>(out, nullptr, pts, plan, total, per, degenerate, binary_inv);
}
extern "C" __global__ void __launch_bounds__(128)
g1_sum_affine_direct(uint32_t* out, const uint32_t* pts, const i64* seg_bucket, const i64* seg_first,
                     const i64* offsets, i64 S, i64 nseg) {
    sum_affine<fp_t, false>(out, nullptr, pts, seg_bucket, seg_first, offsets, S, nseg);
}
