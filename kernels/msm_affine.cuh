// Affine bucket accumulation with batched inversion (msm_plan.affine_rounds; CPU model in
// tests/test_msm_model.py). A round halves every bucket's list: output o is P[s] + P[s + 1]
// (an affine add) or a copy of P[s] (a bucket's odd last point), s from the round plan.
//
// Affine add, x1 != x2: lambda = (y2 - y1) / (x2 - x1), x3 = lambda^2 - x1 - x2,
// y3 = lambda (x1 - x3) - y1. The divisions of a block share one inversion (Montgomery's
// trick): each thread multiplies its d = x2 - x1 into a running product kept in its outputs'
// x words, the block multiplies the threads' products up a tree in shared memory, one thread
// inverts the root (Fermat), the tree hands each thread the inverse of its product, and the
// thread walks its outputs back: 1/d_i = inv * prefix_{i-1}, inv *= d_i. About 6
// multiplications per add (3 batch, lambda, lambda^2, y3) against 10 for a mixed XYZZ add.
//
// x1 == x2 (P + P or P + (-P)) cannot be done affinely: the pair uses d = 1 (the batch stays
// invertible), its output is garbage and *degenerate is set; the host redoes that pass in XYZZ.
#pragma once
#include "msm.cuh"

#ifndef CUZK_AFFINE_TPB
#define CUZK_AFFINE_TPB 128     // threads per block; msm_plan.AFFINE_THREADS
#endif
#ifndef CUZK_AFFINE_BLOCKS_PER_SM
#define CUZK_AFFINE_BLOCKS_PER_SM 4   // msm_plan.AFFINE_BLOCKS_PER_SM
#endif

// Round plan: output o -> s << 1 | paired, s = in_off[b] + 2 (o - out_off[b]) for the bucket b
// with out_off[b] <= o < out_off[b + 1] (binary search), paired = s + 1 < in_off[b + 1].
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

// The block's TPB values v_t -> 1 / v_t (all nonzero), through a product tree in shared memory.
template <class F, int TPB>
__device__ __forceinline__ F block_batch_inverse(const F& v) {
    __shared__ F tree[2 * TPB];           // node i: children 2i, 2i + 1; leaves TPB + t
    const int t = threadIdx.x;
    tree[TPB + t] = v;
    __syncthreads();
    for (int h = TPB / 2; h >= 1; h >>= 1) {
        if (t < h) tree[h + t] = f_mul(tree[2 * (h + t)], tree[2 * (h + t) + 1]);
        __syncthreads();
    }
    if (t == 0) tree[1] = f_inv(tree[1]);
    __syncthreads();
    for (int h = 1; h < TPB; h <<= 1) {   // node i holds 1 / its product: hand it down
        if (t < h) {
            const int i = h + t;
            const F inv = tree[i], a = tree[2 * i], b = tree[2 * i + 1];
            tree[2 * i] = f_mul(inv, b);
            tree[2 * i + 1] = f_mul(inv, a);
        }
        __syncthreads();
    }
    return tree[TPB + t];
}

// One round over outputs [0, total): thread t of block k takes o = k * TPB * per + t + TPB * i.
// KEYED (round 0): P[e] is the base of sorted key e (y negated on its bit); else pts[e].
template <class F, int TPB, bool KEYED>
__device__ __forceinline__ void affine_round(uint32_t* out, const u64* __restrict__ sorted,
                                             const uint32_t* __restrict__ pts, const uint32_t* __restrict__ plan,
                                             i64 total, i64 per, int* degenerate) {
    constexpr int W = affine_t<F>::WORDS;
    const i64 first = blockIdx.x * (i64)TPB * per + threadIdx.x;
    const i64 left = total - first;       // this thread's outputs: ceil(left / TPB), at most per
    const int cnt = left <= 0 ? 0 : (int)min(per, (left + TPB - 1) / TPB);

    // pass 1: prefix products of d_i = x2 - x1 (1 for a copy or a degenerate pair)
    F acc;
    f_set_one(acc);
    for (int i = 0; i < cnt; i++) {
        const i64 o = first + (i64)TPB * i;
        const uint32_t w = plan[o];
        if (w & 1) {
            bool n1, n2;
            const i64 s = w >> 1;
            F d = F::load(entry_point<F, KEYED>(sorted, pts, s + 1, n2)) -
                  F::load(entry_point<F, KEYED>(sorted, pts, s, n1));
            if (f_is_zero(d)) {
                *degenerate = 1;
                f_set_one(d);
            }
            acc = i == 0 ? d : f_mul(acc, d);
        }
        acc.store(out + o * W);           // prefix_i, in the x words of output o
    }

    F inv = block_batch_inverse<F, TPB>(acc);   // 1 / prefix_{cnt-1}

    // pass 2, backwards: 1/d_i = inv * prefix_{i-1}, then inv = 1 / prefix_{i-1} = inv * d_i
    for (int i = cnt - 1; i >= 0; i--) {
        const i64 o = first + (i64)TPB * i;
        const uint32_t w = plan[o];
        const i64 s = w >> 1;
        bool n1, n2;
        const uint32_t* p1 = entry_point<F, KEYED>(sorted, pts, s, n1);
        if (w & 1) {                      // ordered for few live values: no spills at 128 registers
            const uint32_t* p2 = entry_point<F, KEYED>(sorted, pts, s + 1, n2);
            F id = inv;
            if (i > 0) id = f_mul(inv, F::load(out + (o - TPB) * W));
            const F x1 = F::load(p1), x2 = F::load(p2);
            if (i > 0) {
                F d = x2 - x1;
                if (f_is_zero(d)) f_set_one(d);
                inv = f_mul(inv, d);
            }
            F y1 = F::load(p1 + W / 2), y2 = F::load(p2 + W / 2);
            if (n1) y1 = f_neg(y1);
            if (n2) y2 = f_neg(y2);
            const F lambda = f_mul(y2 - y1, id);
            const F x3 = f_sqr(lambda) - x1 - x2;
            const F y3 = f_mul(lambda, x1 - x3) - y1;
            x3.store(out + o * W);
            y3.store(out + o * W + W / 2);
        } else {                          // copy: d_i = 1 leaves inv as it is
            affine_t<F> a = affine_t<F>::load(p1);
            if (n1) a.y = f_neg(a.y);
            a.store(out + o * W);
        }
    }
}

#define CUZK_MSM_AFFINE_KERNELS(G, F)                                                                           \
    extern "C" __global__ void __launch_bounds__(CUZK_AFFINE_TPB, CUZK_AFFINE_BLOCKS_PER_SM)                   \
        G##_affine_round_keyed(uint32_t* out, const u64* sorted, const uint32_t* bases, const uint32_t* plan,  \
                               i64 total, i64 per, int* degenerate) {                                          \
        affine_round<F, CUZK_AFFINE_TPB, true>(out, sorted, bases, plan, total, per, degenerate);              \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(CUZK_AFFINE_TPB, CUZK_AFFINE_BLOCKS_PER_SM)                   \
        G##_affine_round(uint32_t* out, const uint32_t* pts, const uint32_t* plan, i64 total, i64 per,         \
                         int* degenerate) {                                                                    \
        affine_round<F, CUZK_AFFINE_TPB, false>(out, nullptr, pts, plan, total, per, degenerate);              \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(128) G##_sum_affine_direct(                                   \
        uint32_t* out, const uint32_t* pts, const i64* seg_bucket, const i64* seg_first, const i64* offsets,   \
        i64 S, i64 nseg) {                                                                                     \
        sum_affine<F, false>(out, nullptr, pts, seg_bucket, seg_first, offsets, S, nseg);                      \
    }
