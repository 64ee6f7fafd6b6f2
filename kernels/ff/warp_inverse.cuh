// One Fp inversion per warp (Montgomery's trick by shuffles): the inclusive prefix and suffix products
// of z over the 32 lanes, one Fermat inverse of the total, then 1/z_i = prefix_(i-1) * suffix_(i+1) / total.
// For grid-stride loops whose trip count is uniform per warp: all 32 lanes must call it, every z nonzero.
// Used by keygen's fixed-base products (keygen/fixed_base.cuh) and the MSM's tables (msm/fixed.cu).
#pragma once
#include "ff/field.cuh"

namespace cuzk {

constexpr unsigned FULL = 0xffffffffu;

__device__ __forceinline__ fp_t shfl_fp(const fp_t& a, int src) {
    fp_t r;
#pragma unroll
    for (int k = 0; k < CUZK_FP_LIMBS; k++) r.v[k] = __shfl_sync(FULL, a.v[k], src);
    return r;
}
__device__ __forceinline__ fp_t shfl_up_fp(const fp_t& a, int d) {
    fp_t r;
#pragma unroll
    for (int k = 0; k < CUZK_FP_LIMBS; k++) r.v[k] = __shfl_up_sync(FULL, a.v[k], d);
    return r;
}
__device__ __forceinline__ fp_t shfl_down_fp(const fp_t& a, int d) {
    fp_t r;
#pragma unroll
    for (int k = 0; k < CUZK_FP_LIMBS; k++) r.v[k] = __shfl_down_sync(FULL, a.v[k], d);
    return r;
}

// 1/z for every lane of the warp (all 32 lanes must call it, every z nonzero).
__device__ __forceinline__ fp_t warp_batch_inverse(const fp_t& z) {
    const int lane = threadIdx.x & 31;
    fp_t pre = z, suf = z;                  // inclusive prefix / suffix products
#pragma unroll 1
    for (int d = 1; d < 32; d <<= 1) {
        const fp_t t = shfl_up_fp(pre, d);
        if (lane >= d) pre = pre * t;
    }
#pragma unroll 1
    for (int d = 1; d < 32; d <<= 1) {
        const fp_t t = shfl_down_fp(suf, d);
        if (lane + d < 32) suf = suf * t;
    }
    const fp_t inv = shfl_fp(pre, 31).inverse();
    fp_t ep = shfl_up_fp(pre, 1), es = shfl_down_fp(suf, 1);
    if (lane == 0) ep = fp_t::one();
    if (lane == 31) es = fp_t::one();
    return (ep * es) * inv;
}

}  // namespace cuzk
