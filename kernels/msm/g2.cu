// G2 MSM kernels: thin extern "C" entries over the templates of msm/pippenger.cuh.
#include "msm/pippenger.cuh"

extern "C" __global__ void __launch_bounds__(128)
g2_sum_affine(uint32_t* out, const u64* sorted, const uint32_t* bases, const i64* seg_bucket, const i64* seg_first,
              const i64* offsets, i64 S, i64 nseg) {
    sum_affine<fp2_t, true>(out, sorted, bases, seg_bucket, seg_first, offsets, S, nseg);
}
extern "C" __global__ void __launch_bounds__(128)
g2_sum_xyzz(uint32_t* out, const uint32_t* partials, const i64* seg_bucket, const i64* seg_first, const i64* offsets,
            i64 S, i64 nseg) {
    sum_xyzz<fp2_t>(out, partials, seg_bucket, seg_first, offsets, S, nseg);
}
extern "C" __global__ void __launch_bounds__(128)
g2_merge_pairs(uint32_t* out, const uint32_t* partials, const uint32_t* plan, i64 total) {
    merge_pairs<fp2_t>(out, partials, plan, total);
}
extern "C" __global__ void __launch_bounds__(128)
g2_window_level(uint32_t* a_out, uint32_t* t_out, const uint32_t* a_in, const uint32_t* t_in, i64 count, int L,
                int first, int log_scale, int has_a) {
    window_level<fp2_t>(a_out, t_out, a_in, t_in, count, L, first, log_scale, has_a);
}
extern "C" __global__ void __launch_bounds__(128)
g2_window_pair(uint32_t* a_out, uint32_t* t_out, const uint32_t* a_in, const uint32_t* t_in, i64 count, int first,
               int log_scale) {
    window_pair<fp2_t>(a_out, t_out, a_in, t_in, count, first, log_scale);
}
extern "C" __global__ void __launch_bounds__(128)
g2_window_join(uint32_t* out, const uint32_t* hi_sums, const uint32_t* lo_sums, i64 count, int s) {
    window_join<fp2_t>(out, hi_sums, lo_sums, count, s);
}
extern "C" __global__ void __launch_bounds__(32) g2_combine(uint32_t* out, const uint32_t* window_sums, int nw, int c) {
    combine<fp2_t>(out, window_sums, nw, c);
}
