// Pippenger MSM with signed c-bit digits, 2^(c-1) buckets per window, templated over the
// field of the group; msm_g1.cu and msm_g2.cu instantiate it (separate NVRTC modules, so a
// G1 MSM never waits for the much larger G2 code to compile).
//
// Host driver: cuzk/gpu/msm.py; index math: cuzk/gpu/msm_plan.py (modelled on the CPU in
// tests/test_msm_model.py). Per pass of windows [w0, w1):
//   msm_digits        one uint64 key per (window, point): bucket << 32 | index << 1 | negate,
//                     or ~0 for a zero digit / a base at infinity (sorts last);
//   (CuPy sort of the keys, searchsorted -> bucket offsets, segment plan)
//   *_sum_affine      one thread per segment (<= S entries of one bucket): mixed adds;
//   *_sum_xyzz        merges a bucket's segment partials, again in segments, until one each;
//   *_window_chunks   per (window, chunk of L buckets): running sums S_t, totals T_t;
//   *_window_final    per window: sum_t S_t + L * sum_t t * T_t.
// Then *_combine (one thread) folds the windows by c doublings each.
#pragma once
#include "ec.cuh"
using namespace cuzk;

typedef unsigned long long u64;
typedef long long i64;

// Canonical scalar -> signed digits d_w in (-2^(c-1), 2^(c-1)], with carry; keys for [w0, w1).
extern "C" __global__ void msm_digits(u64* keys, const uint32_t* __restrict__ scalars,
                                      const unsigned char* __restrict__ inf, i64 n, int c, int w0, int w1) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const fr_t s = fr_t::load(scalars + i * CUZK_FR_LIMBS).from_mont();
    const bool skip = inf[i] != 0;
    const uint32_t half = 1u << (c - 1), mask = (1u << c) - 1;
    uint32_t carry = 0;
    for (int w = 0; w < w1; w++) {
        const int pos = w * c, limb = pos >> 5, off = pos & 31;
        uint32_t bits = 0;
        if (limb < CUZK_FR_LIMBS) {
            bits = s.v[limb] >> off;
            if (off && limb + 1 < CUZK_FR_LIMBS) bits |= s.v[limb + 1] << (32 - off);
            bits &= mask;
        }
        uint32_t d = bits + carry;          // in [0, 2^c]
        bool neg = false;
        if (d > half) { d = (1u << c) - d; neg = true; carry = 1; }
        else carry = 0;
        if (w < w0) continue;
        u64 key = ~0ull;
        if (d != 0 && !skip) {
            const u64 bucket = (u64)(w - w0) * half + (d - 1);
            key = (bucket << 32) | ((u64)i << 1) | (u64)neg;
        }
        keys[(i64)(w - w0) * n + i] = key;
    }
}

// Entries [offsets[b] + t*S, min(.. + S, offsets[b+1])) of bucket b = seg_bucket[j],
// t = j - seg_first[b].
__device__ __forceinline__ void segment_range(i64 j, const i64* seg_bucket, const i64* seg_first,
                                              const i64* offsets, i64 S, i64& start, i64& end) {
    const i64 b = seg_bucket[j];
    start = offsets[b] + (j - seg_first[b]) * S;
    end = min(start + S, offsets[b + 1]);
}

template <class F>
__device__ __forceinline__ void sum_affine(uint32_t* out, const u64* __restrict__ sorted,
                                           const uint32_t* __restrict__ bases, const i64* __restrict__ seg_bucket,
                                           const i64* __restrict__ seg_first, const i64* __restrict__ offsets,
                                           i64 S, i64 nseg) {
    const i64 j = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (j >= nseg) return;
    i64 start, end;
    segment_range(j, seg_bucket, seg_first, offsets, S, start, end);
    if constexpr (sizeof(F) == sizeof(fp_t)) {    // G1: the accumulator lives in registers
        xyzz_t<F> acc = xyzz_t<F>::inf();
        for (i64 e = start; e < end; e++) {
            const u64 key = sorted[e];
            const uint32_t idx = (uint32_t)key >> 1;
            affine_t<F> p = affine_t<F>::load(bases + (i64)idx * affine_t<F>::WORDS);
            if (key & 1) p.y = f_neg(p.y);
            acc.add_affine(p);
        }
        acc.store(out + j * xyzz_t<F>::WORDS);
    } else {                                       // G2: in memory (its output slot)
        uint32_t* acc = out + j * xyzz_t<F>::WORDS;
        xyzz_t<F>::inf().store(acc);
        for (i64 e = start; e < end; e++) {
            const u64 key = sorted[e];
            const uint32_t idx = (uint32_t)key >> 1;
            xyzz_add_affine_mem<F>(acc, bases + (i64)idx * affine_t<F>::WORDS, key & 1);
        }
    }
}

template <class F>
__device__ __forceinline__ void sum_xyzz(uint32_t* out, const uint32_t* __restrict__ partials,
                                         const i64* __restrict__ seg_bucket, const i64* __restrict__ seg_first,
                                         const i64* __restrict__ offsets, i64 S, i64 nseg) {
    const i64 j = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (j >= nseg) return;
    i64 start, end;
    segment_range(j, seg_bucket, seg_first, offsets, S, start, end);
    uint32_t* acc = out + j * xyzz_t<F>::WORDS;   // rare (outsized buckets only): sum in memory
    xyzz_t<F>::inf().store(acc);
    for (i64 e = start; e < end; e++) xyzz_add_mem<F>(acc, partials + e * xyzz_t<F>::WORDS);
}

// Thread g = w * T + t over buckets [t*L, (t+1)*L) of window w (B = T*L buckets each).
// S_t = sum_k (k+1) bucket[t*L + k] (running sum, top down), T_t = sum_k bucket[t*L + k];
// both accumulate in place in chunk_s[g], chunk_t[g].
template <class F>
__device__ __forceinline__ void window_chunks(uint32_t* chunk_s, uint32_t* chunk_t, const uint32_t* __restrict__ buckets,
                                              int nwp, int B, int T) {
    const i64 g = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (g >= (i64)nwp * T) return;
    constexpr int W = xyzz_t<F>::WORDS;
    const int w = (int)(g / T), t = (int)(g % T), L = B / T;
    const i64 base = (i64)w * B + (i64)t * L;
    uint32_t* run = chunk_t + g * W;
    uint32_t* sum = chunk_s + g * W;
    xyzz_t<F>::inf().store(run);
    xyzz_t<F>::inf().store(sum);
    for (int k = L - 1; k >= 0; k--) {
        xyzz_add_mem<F>(run, buckets + (base + k) * W);
        xyzz_add_mem<F>(sum, run);
    }
}

// Window w of the pass: sum_t S_t + 2^log_l * sum_{t>=1} t * T_t -> window_sums[w0 + w].
// sum_t t * T_t = sum_{t>=1} U_t with suffix sums U_t = T_t + ... + T_{T-1}, formed in place.
template <class F>
__device__ __forceinline__ void window_final(uint32_t* window_sums, const uint32_t* __restrict__ chunk_s,
                                             uint32_t* chunk_t, int nwp, int T, int log_l, int w0) {
    const int w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= nwp) return;
    constexpr int W = xyzz_t<F>::WORDS;
    uint32_t* acc = window_sums + (i64)(w0 + w) * W;
    uint32_t* ct = chunk_t + (i64)w * T * W;
    const uint32_t* cs = chunk_s + (i64)w * T * W;
    for (int t = T - 2; t >= 1; t--) xyzz_add_mem<F>(ct + t * W, ct + (t + 1) * W);
    xyzz_t<F>::inf().store(acc);
    for (int t = 1; t < T; t++) xyzz_add_mem<F>(acc, ct + t * W);
    for (int k = 0; k < log_l; k++) xyzz_dbl_mem<F>(acc);
    for (int t = 0; t < T; t++) xyzz_add_mem<F>(acc, cs + t * W);
}

// One thread: sum_w 2^(c w) window_sums[w], Horner from the top window, accumulated in out.
template <class F>
__device__ __forceinline__ void combine(uint32_t* out, const uint32_t* __restrict__ window_sums, int nw, int c) {
    if (blockIdx.x * blockDim.x + threadIdx.x != 0) return;
    constexpr int W = xyzz_t<F>::WORDS;
    xyzz_copy_mem<F>(out, window_sums + (i64)(nw - 1) * W);
    for (int w = nw - 2; w >= 0; w--) {
        for (int k = 0; k < c; k++) xyzz_dbl_mem<F>(out);
        xyzz_add_mem<F>(out, window_sums + (i64)w * W);
    }
}

#define CUZK_MSM_KERNELS(G, F)                                                                                  \
    extern "C" __global__ void __launch_bounds__(128) G##_sum_affine(                                          \
        uint32_t* out, const u64* sorted, const uint32_t* bases, const i64* seg_bucket, const i64* seg_first,  \
        const i64* offsets, i64 S, i64 nseg) {                                                                 \
        sum_affine<F>(out, sorted, bases, seg_bucket, seg_first, offsets, S, nseg);                            \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(128) G##_sum_xyzz(                                            \
        uint32_t* out, const uint32_t* partials, const i64* seg_bucket, const i64* seg_first,                  \
        const i64* offsets, i64 S, i64 nseg) {                                                                 \
        sum_xyzz<F>(out, partials, seg_bucket, seg_first, offsets, S, nseg);                                   \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(128) G##_window_chunks(                                       \
        uint32_t* chunk_s, uint32_t* chunk_t, const uint32_t* buckets, int nwp, int B, int T) {                \
        window_chunks<F>(chunk_s, chunk_t, buckets, nwp, B, T);                                                \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(128) G##_window_final(                                        \
        uint32_t* window_sums, const uint32_t* chunk_s, uint32_t* chunk_t, int nwp, int T, int log_l,          \
        int w0) {                                                                                              \
        window_final<F>(window_sums, chunk_s, chunk_t, nwp, T, log_l, w0);                                     \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(32) G##_combine(uint32_t* out, const uint32_t* window_sums,    \
                                                                 int nw, int c) {                              \
        combine<F>(out, window_sums, nw, c);                                                                   \
    }

