// Pippenger MSM with signed c-bit digits, 2^(c-1) buckets per window, templated over the
// field of the group; msm/g1.cu and msm/g2.cu instantiate it (separate NVRTC modules, so a
// G1 MSM never waits for the much larger G2 code to compile).
//
// Host driver: cuzk/gpu/msm/pippenger.py; index math: cuzk/gpu/msm/plan.py (modelled on the CPU in
// tests/gpu/test_msm_model.py). Per pass of windows [w0, w1):
//   msm_digits        one uint64 key per (window, point): bucket << 32 | index << 1 | negate,
//                     or ~0 for a zero digit / a base at infinity (sorts last); msm_digits_many
//                     the same for several MSMs at once, each with its own buckets;
//   (CuPy sort of the keys, searchsorted -> bucket offsets)
//   G1 only, optional (msm/affine.cuh): affine rounds that halve every bucket's list;
//   *_sum_affine      one thread per segment (<= S entries of one bucket): mixed adds;
//   *_sum_xyzz        merges a bucket's segment partials, again in segments, until one each;
// then over the buckets of one or more passes:
//   *_window_level    chunks of L entries -> (A', T'), level after level (msm_plan.reduce_levels);
// and *_combine (one thread) folds the windows by c doublings each.
#pragma once
#include "ec/curve.cuh"
using namespace cuzk;

typedef unsigned long long u64;
typedef long long i64;

// Signed digits d_w in (-2^(c-1), 2^(c-1)] of scalar i (canonical s), with carry; the key of window
// w in [w0, w1) at keys[(w - w0) * n + i], its bucket (w - w0) * wstride + base + |d_w| - 1.
__device__ __forceinline__ void digit_keys(u64* keys, const fr_t& s, bool skip, i64 i, i64 n, int c, int w0,
                                           int w1, u64 wstride, u64 base) {
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
            const u64 bucket = (u64)(w - w0) * wstride + base + (d - 1);
            key = (bucket << 32) | ((u64)i << 1) | (u64)neg;
        }
        keys[(i64)(w - w0) * n + i] = key;
    }
}

// One MSM: keys for [w0, w1), 2^(c-1) buckets per window.
extern "C" __global__ void msm_digits(u64* keys, const uint32_t* __restrict__ scalars,
                                      const unsigned char* __restrict__ inf, i64 n, int c, int w0, int w1) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const fr_t s = fr_t::load(scalars + i * CUZK_FR_LIMBS).from_mont();
    digit_keys(keys, s, inf[i] != 0, i, n, c, w0, w1, 1ull << (c - 1), 0);
}

// Several MSMs at once (cuzk/gpu/msm/many.py): point i is in part p, part_off[p] <= i < part_off[p + 1];
// window w of part p has buckets ((w - w0) * parts + p) * 2^(c-1) + |d| - 1 (window-major).
extern "C" __global__ void msm_digits_many(u64* keys, const uint32_t* __restrict__ scalars,
                                           const unsigned char* __restrict__ inf, const i64* __restrict__ part_off,
                                           int parts, i64 n, int c, int w0, int w1) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= n) return;
    int p = 0;
    while (p + 1 < parts && i >= part_off[p + 1]) p++;
    const fr_t s = fr_t::load(scalars + i * CUZK_FR_LIMBS).from_mont();
    const u64 half = 1ull << (c - 1);
    digit_keys(keys, s, inf[i] != 0, i, n, c, w0, w1, (u64)parts * half, (u64)p * half);
}

// Pair plan (the affine rounds of msm/affine.cuh, merge_pairs): output o -> s << 1 | paired,
// s = in_off[b] + 2 (o - out_off[b]) for the bucket b with out_off[b] <= o < out_off[b + 1] (binary
// search), paired = s + 1 < in_off[b + 1].
extern "C" __global__ void msm_affine_plan(uint32_t* plan, const i64* __restrict__ in_off,
                                           const i64* __restrict__ out_off, i64 nb, i64 total) {
    const i64 o = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (o >= total) return;
    i64 lo = 0, hi = nb;                  // out_off[lo] <= o < out_off[hi]
    while (hi - lo > 1) {
        const i64 mid = (lo + hi) >> 1;
        if (out_off[mid] <= o) lo = mid;
        else hi = mid;
    }
    const i64 s = in_off[lo] + 2 * (o - out_off[lo]);
    plan[o] = ((uint32_t)s << 1) | (uint32_t)(s + 1 < in_off[lo + 1]);
}

// The same words by input entry (optimization K4), no search: entry s of bucket b (b = keys[s] >> 32 in the first
// round, ids[s] after it) at an even place in its run writes output o = out_off[b] + (s - in_off[b]) / 2, and
// ids_out[o] = b, the bucket of the next round's entry o.
extern "C" __global__ void msm_affine_plan_entry(uint32_t* plan, uint32_t* ids_out, const u64* __restrict__ keys,
                                                 const uint32_t* __restrict__ ids, const i64* __restrict__ in_off,
                                                 const i64* __restrict__ out_off, i64 count) {
    const i64 s = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (s >= count) return;
    const uint32_t b = keys ? (uint32_t)(keys[s] >> 32) : ids[s];
    const i64 first = in_off[b], d = s - first;
    if (d & 1) return;
    const i64 o = out_off[b] + (d >> 1);
    plan[o] = ((uint32_t)s << 1) | (uint32_t)(s + 1 < in_off[b + 1]);
    ids_out[o] = b;
}

// msm_affine_plan_entry over 4 consecutive entries a thread (optimization K11): the keys' (ids') loads and then the
// offsets' are issued together, four chains in flight a thread instead of one. (8 consecutive entries, and 4 strided
// by the grid, measured no better: docs/perf-log.md, 2026-11-30.)
extern "C" __global__ void msm_affine_plan_entry4(uint32_t* plan, uint32_t* ids_out, const u64* __restrict__ keys,
                                                  const uint32_t* __restrict__ ids, const i64* __restrict__ in_off,
                                                  const i64* __restrict__ out_off, i64 count) {
    constexpr int E = 4;
    const i64 s0 = (blockIdx.x * (i64)blockDim.x + threadIdx.x) * E;
    if (s0 >= count) return;
    uint32_t b[E];
#pragma unroll
    for (int i = 0; i < E; i++) {
        const i64 s = min(s0 + i, count - 1);
        b[i] = keys ? (uint32_t)(keys[s] >> 32) : ids[s];
    }
    i64 first[E], out[E], next[E];
#pragma unroll
    for (int i = 0; i < E; i++) {
        first[i] = in_off[b[i]];
        out[i] = out_off[b[i]];
        next[i] = in_off[b[i] + 1];
    }
#pragma unroll
    for (int i = 0; i < E; i++) {
        const i64 s = s0 + i, d = s - first[i];
        if (s < count && !(d & 1)) {
            const i64 o = out[i] + (d >> 1);
            plan[o] = ((uint32_t)s << 1) | (uint32_t)(s + 1 < next[i]);
            ids_out[o] = b[i];
        }
    }
}

// K10's H order (msm_plan.group_offsets): H's bucket t, in the order (unit, lo - 1, hi), is bucket
// b = u B + (hi << s) + lo - 1 of the rounds' runs.
__device__ __forceinline__ i64 group_h_bucket(i64 t, i64 B, int s) {
    const i64 HB = B >> s, per_unit = ((1ll << s) - 1) * HB;
    const i64 u = t / per_unit, r = t - u * per_unit, lo1 = r / HB, hi = r - lo1 * HB;
    return u * B + (hi << s) + lo1;
}

// K10's H counts: cnt[t] = the run length of H's bucket t, straight from the offsets.
extern "C" __global__ void msm_group_counts(i64* cnt, const i64* __restrict__ off, i64 nh, i64 B, int s) {
    const i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t >= nh) return;
    const i64 b = group_h_bucket(t, B, s);
    cnt[t] = off[b + 1] - off[b];
}

// K10's gather: H's bucket t's run pts[off[b], off[b+1]) goes to out[count + off_h[t] ..). aw: words a point (a
// multiple of 4).
extern "C" __global__ void msm_group_gather(uint32_t* out, const uint32_t* __restrict__ pts, const i64* __restrict__ off,
                                            const i64* __restrict__ off_h, i64 nh, i64 B, int s, i64 count, int aw) {
    const i64 t = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (t >= nh) return;
    const i64 b = group_h_bucket(t, B, s);
    const i64 first = off[b], n = (off[b + 1] - first) * (aw / 4);
    const uint4* src = reinterpret_cast<const uint4*>(pts + first * aw);
    uint4* dst = reinterpret_cast<uint4*>(out + (count + off_h[t]) * aw);
    for (i64 i = 0; i < n; i++) dst[i] = src[i];
}

// Every round's size at once (optimization K5): totals[r] = sum_b ceil(cnt_b / 2^r), cnt_b = off[b+1] - off[b],
// for r < 32 (totals zeroed by the caller); one warp sum and one atomic per warp and r.
extern "C" __global__ void msm_round_totals(u64* totals, const i64* __restrict__ off, i64 nb) {
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (int r = 0; r < 32; r++) {
        u64 acc = 0;
        for (i64 b = blockIdx.x * (i64)blockDim.x + threadIdx.x; b < nb; b += stride)
            acc += (u64)((off[b + 1] - off[b] + ((1ll << r) - 1)) >> r);
        for (int k = 16; k; k >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, k);
        if ((threadIdx.x & 31) == 0 && acc) atomicAdd(totals + r, acc);
    }
}

// One round's output counts in one kernel (optimization K9): cnt[b] = ceil((in_off[b+1] - in_off[b]) / 2^shift);
// the host's cumsum of them is the round's offsets (shift 1: a pair round).
extern "C" __global__ void msm_round_counts(i64* cnt, const i64* __restrict__ in_off, i64 nb, int shift) {
    const i64 b = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (b < nb) cnt[b] = (in_off[b + 1] - in_off[b] + ((1ll << shift) - 1)) >> shift;
}

// msm_round_totals with each count read once (optimization K8): 32 running sums a thread, in registers.
extern "C" __global__ void msm_round_totals1(u64* totals, const i64* __restrict__ off, i64 nb) {
    const i64 stride = (i64)gridDim.x * blockDim.x;
    u64 acc[32];
#pragma unroll
    for (int r = 0; r < 32; r++) acc[r] = 0;
    for (i64 b = blockIdx.x * (i64)blockDim.x + threadIdx.x; b < nb; b += stride) {
        const u64 c = (u64)(off[b + 1] - off[b]);
#pragma unroll
        for (int r = 0; r < 32; r++) acc[r] += (c + ((1ull << r) - 1)) >> r;
    }
#pragma unroll
    for (int r = 0; r < 32; r++) {
        u64 a = acc[r];
        for (int k = 16; k; k >>= 1) a += __shfl_xor_sync(0xffffffffu, a, k);
        if ((threadIdx.x & 31) == 0 && a) atomicAdd(totals + r, a);
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

// Entry e of a bucket run: KEYED -> the base of sorted key e (negate: its low bit), else pts[e].
template <class F, bool KEYED>
__device__ __forceinline__ const uint32_t* entry_point(const u64* __restrict__ sorted, const uint32_t* __restrict__ pts,
                                                       i64 e, bool& neg) {
    if constexpr (KEYED) {
        const u64 key = sorted[e];
        neg = key & 1;
        return pts + (i64)((uint32_t)key >> 1) * affine_t<F>::WORDS;
    } else {
        neg = false;
        return pts + e * affine_t<F>::WORDS;
    }
}

template <class F, bool KEYED>
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
            bool neg;
            affine_t<F> p = affine_t<F>::load(entry_point<F, KEYED>(sorted, bases, e, neg));
            if (neg) p.y = f_neg(p.y);
            acc.add_affine(p);
        }
        acc.store(out + j * xyzz_t<F>::WORDS);
    } else {                                       // G2: in memory (its output slot)
        uint32_t* acc = out + j * xyzz_t<F>::WORDS;
        xyzz_t<F>::inf().store(acc);
        for (i64 e = start; e < end; e++) {
            bool neg;
            const uint32_t* p = entry_point<F, KEYED>(sorted, bases, e, neg);
            xyzz_add_affine_mem<F>(acc, p, neg);
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

// Pair merge of partial sums (msm_plan.bucket_sums with pairs, optimization R2): output o is
// P[s] + P[s + 1] or a copy of P[s], w = plan[o] = s << 1 | paired (msm_affine_plan's words): one add
// deep, against sum_xyzz's chain of up to S.
template <class F>
__device__ __forceinline__ void merge_pairs(uint32_t* out, const uint32_t* __restrict__ partials,
                                            const uint32_t* __restrict__ plan, i64 total) {
    const i64 o = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (o >= total) return;
    constexpr int W = xyzz_t<F>::WORDS;
    const uint32_t w = plan[o];
    const uint32_t* p = partials + (i64)(w >> 1) * W;
    uint32_t* acc = out + o * W;
    xyzz_copy_mem<F>(acc, p);
    if (w & 1) xyzz_add_mem<F>(acc, p + W);
}

// One level of the window reduction (msm_plan.reduce_levels), thread g over chunk g of L entries:
// A'[g] = sum_j A[gL+j] + sum_j (j + first) T[gL+j] (running sums, top down; no A when !has_a),
// T'[g] = 2^log_scale * sum_j T[gL+j]. Both accumulate in their output slots.
template <class F>
__device__ __forceinline__ void window_level(uint32_t* a_out, uint32_t* t_out, const uint32_t* __restrict__ a_in,
                                             const uint32_t* __restrict__ t_in, i64 count, int L, int first,
                                             int log_scale, int has_a) {
    const i64 g = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (g >= count) return;
    constexpr int W = xyzz_t<F>::WORDS;
    uint32_t* run = t_out + g * W;
    uint32_t* acc = a_out + g * W;
    xyzz_t<F>::inf().store(run);
    xyzz_t<F>::inf().store(acc);
    for (int j = L - 1; j >= 0; j--) {
        const i64 e = g * L + j;
        if (!first) xyzz_add_mem<F>(acc, run);     // weight j: the entries above j
        xyzz_add_mem<F>(run, t_in + e * W);
        if (first) xyzz_add_mem<F>(acc, run);      // weight j + 1
        if (has_a) xyzz_add_mem<F>(acc, a_in + e * W);
    }
    for (int k = 0; k < log_scale; k++) xyzz_dbl_mem<F>(run);
}

// A pair level of the window reduction (msm_plan.reduce_windows with pairs): entries 2g, 2g + 1 -> g,
// A'[g] = A[2g] + A[2g+1] + T[2g+1] (first: T[2g] + 2 T[2g+1], no A), T'[g] = 2^log_scale (T[2g] + T[2g+1]).
// A' and T' are made by two warps, so a level is two operations deep (window_level: about 3L), and each
// warp takes one role (no divergence). log_scale 0 is the last level: T' is not made.
template <class F>
__device__ __forceinline__ void window_pair(uint32_t* a_out, uint32_t* t_out, const uint32_t* __restrict__ a_in,
                                            const uint32_t* __restrict__ t_in, i64 count, int first, int log_scale) {
    const i64 h = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    const i64 warp = h >> 5, g = ((warp >> 1) << 5) | (h & 31);
    if (g >= count) return;
    constexpr int W = xyzz_t<F>::WORDS;
    const uint32_t* t0 = t_in + 2 * g * W;
    if (warp & 1) {
        if (log_scale == 0) return;
        uint32_t* t = t_out + g * W;
        xyzz_copy_mem<F>(t, t0);
        xyzz_add_mem<F>(t, t0 + W);
        for (int k = 0; k < log_scale; k++) xyzz_dbl_mem<F>(t);
    } else {
        uint32_t* a = a_out + g * W;
        const uint32_t* a0 = first ? t0 : a_in + 2 * g * W;
        xyzz_copy_mem<F>(a, a0 + (first ? W : 0));
        xyzz_add_mem<F>(a, first ? t0 : a0 + W);
        xyzz_add_mem<F>(a, t0 + W);
    }
}

// A window's sum from its two group reductions (optimization K10, msm_plan.group_windows):
// out[g] = 2^s hi_sums[g] + lo_sums[g].
template <class F>
__device__ __forceinline__ void window_join(uint32_t* out, const uint32_t* __restrict__ hi_sums,
                                            const uint32_t* __restrict__ lo_sums, i64 count, int s) {
    const i64 g = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (g >= count) return;
    constexpr int W = xyzz_t<F>::WORDS;
    uint32_t* acc = out + g * W;
    xyzz_copy_mem<F>(acc, hi_sums + g * W);
    for (int k = 0; k < s; k++) xyzz_dbl_mem<F>(acc);
    xyzz_add_mem<F>(acc, lo_sums + g * W);
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
