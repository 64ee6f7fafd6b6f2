// Signed c-bit digits of a canonical scalar, window by window with the carry (as msm_digits makes them):
// shared by keygen's fixed-base products (keygen/fixed_base.cuh) and the MSM over tables (msm/fixed.cu).
#pragma once
#include "ff/field.cuh"

namespace cuzk {

// s.v[i] for i < 8, else 0, without indexing a register array dynamically.
__device__ __forceinline__ uint32_t limb_sel(const fr_t& s, int i) {
    uint32_t r = 0;
#pragma unroll
    for (int k = 0; k < CUZK_FR_LIMBS; k++) r = (i == k) ? s.v[k] : r;
    return r;
}

// Signed digit of window w (c < 32 bits): |d| in [0, 2^(c-1)], neg, and the carry into w + 1.
__device__ __forceinline__ uint32_t window_digit(const fr_t& s, int w, int c, uint32_t& carry, bool& neg) {
    const int pos = w * c, limb = pos >> 5, off = pos & 31;
    const uint32_t half = 1u << (c - 1), mask = (1u << c) - 1;
    uint32_t bits = limb_sel(s, limb) >> off;
    if (off) bits |= limb_sel(s, limb + 1) << (32 - off);
    bits &= mask;
    uint32_t d = bits + carry;              // in [0, 2^c]
    if (d > half) { d = (1u << c) - d; neg = true; carry = 1; }
    else { neg = false; carry = 0; }
    return d;
}

}  // namespace cuzk
