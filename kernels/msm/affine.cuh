// Affine bucket accumulation with batched inversion (msm_plan.affine_rounds; CPU model in
// tests/gpu/test_msm_model.py). A round halves every bucket's list: output o is P[s] + P[s + 1]
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
#include "msm/pippenger.cuh"

constexpr int AFFINE_TPB = 128;           // threads per block of the round kernels; msm_plan.AFFINE_THREADS
constexpr int AFFINE_BLOCKS_PER_SM = 4;   // their resident blocks per SM; msm_plan.AFFINE_BLOCKS_PER_SM

// f_mul, or f_mul_lazy (optimization L1: the result left < 2p) where it only goes on into products.
template <bool LAZY, class F>
__device__ __forceinline__ F mul_l(const F& a, const F& b) {
    if constexpr (LAZY) return f_mul_lazy(a, b);
    else return f_mul(a, b);
}

// The block's TPB values v_t -> 1 / v_t (all nonzero), through a product tree in shared memory. LAZY: the
// tree's products and the inverses handed down left < 2p (inputs may be too); the root's inverse reduces.
// binary (K15): the root's inverse by the binary extended Euclid, not Fermat.
template <class F, int TPB, bool LAZY = false>
__device__ __forceinline__ F block_batch_inverse(const F& v, bool binary) {
    __shared__ F tree[2 * TPB];           // node i: children 2i, 2i + 1; leaves TPB + t
    const int t = threadIdx.x;
    tree[TPB + t] = v;
    __syncthreads();
    for (int h = TPB / 2; h >= 1; h >>= 1) {
        if (t < h) tree[h + t] = mul_l<LAZY>(tree[2 * (h + t)], tree[2 * (h + t) + 1]);
        __syncthreads();
    }
    if (t == 0) tree[1] = binary ? f_inv_binary(tree[1]) : f_inv(tree[1]);
    __syncthreads();
    for (int h = 1; h < TPB; h <<= 1) {   // node i holds 1 / its product: hand it down
        if (t < h) {
            const int i = h + t;
            const F inv = tree[i], a = tree[2 * i], b = tree[2 * i + 1];
            tree[2 * i] = mul_l<LAZY>(inv, b);
            tree[2 * i + 1] = mul_l<LAZY>(inv, a);
        }
        __syncthreads();
    }
    return tree[TPB + t];
}

// One round over outputs [0, total): thread t of block k takes o = k * TPB * per + t + TPB * i.
// KEYED (round 0): P[e] is the base of sorted key e (y negated on its bit); else pts[e].
// LAZY (L1): the prefix products, the inverses and lambda are left < 2p (each goes only into products);
// lambda^2 and y3's product reduce, so x3, y3 are canonical.
template <class F, int TPB, bool KEYED, bool LAZY = false>
__device__ __forceinline__ void affine_round(uint32_t* out, const u64* __restrict__ sorted,
                                             const uint32_t* __restrict__ pts, const uint32_t* __restrict__ plan,
                                             i64 total, i64 per, int* degenerate, int binary_inv) {
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
            acc = i == 0 ? d : mul_l<LAZY>(acc, d);
        }
        acc.store(out + o * W);           // prefix_i, in the x words of output o
    }

    F inv = block_batch_inverse<F, TPB, LAZY>(acc, binary_inv);   // 1 / prefix_{cnt-1}

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
            if (i > 0) id = mul_l<LAZY>(inv, F::load(out + (o - TPB) * W));
            const F x1 = F::load(p1), x2 = F::load(p2);
            if (i > 0) {
                F d = x2 - x1;
                if (f_is_zero(d)) f_set_one(d);
                inv = mul_l<LAZY>(inv, d);
            }
            F y1 = F::load(p1 + W / 2), y2 = F::load(p2 + W / 2);
            if (n1) y1 = f_neg(y1);
            if (n2) y2 = f_neg(y2);
            const F lambda = mul_l<LAZY>(y2 - y1, id);
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
