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

// --- Variant 2: two rounds in one kernel ("quads", msm_plan.affine_rounds(variant=2)) ---
// Output o = (P0 + P1) + (P2 + P3) of up to 4 consecutive points of one bucket: the same sums,
// in the same order, as two pair rounds. Three walks over the thread's outputs, two batched
// inversions: (1) forward, prefix products of D = d01 d23 into pre[o]; (2) backward, the level-1
// adds A = P0 + P1 (to out[o]) and B = P2 + P3 (to tmp[o]), suffix products of d' = xB - xA
// into pre[o]; (3) forward, out[o] = A + B. pre is its own array (48 B per output, coalesced)
// rather than the x words of out (partial 32-B sectors at a 96-B stride).
//
// Predicted DRAM bytes per add (32-B sectors; an x alone touches 2 sectors of a 96-B point):
//   variant 1, per pair output: x1, x2 128 + prefix write 64 + prefix read 64 + P1, P2 192
//     + out 96 = 544 (keyed round 0: + 32 of keys = 576).
//   variant 2, per quad (3 adds): x0..x3 256 + pre 48 | pre 48 + P0..P3 384 + A 96 + B 96
//     + pre 48 | pre 48 + A 96 + B 96 + out 96 = 1312 -> 437 per add (keyed: + 64 / 3 -> 459).
//   About 20% fewer DRAM bytes (the parked 1/d23 and the suffix reread in walk 2 are recent
//   writes of the same thread: L2, not counted); the passes over the data halve (13 quad
//   kernels for 26 rounds). Predictions, not measurements.
// Fp mults per add: variant 1 6 (3 batch + 3 add); variant 2 per quad 2 (pass 1) + 5 (invD,
// D again, inv *= D, two split inverses) + 6 (two adds) + 1 (d' product) + 2 (pass 3 batch)
// + 3 (add) = 19 -> 6.3 per add: the inverses of a quad's two level-1 pairs share one batch slot.

// Quad plan: output o -> s << 2 | (m - 1), s = in_off[b] + 4 (o - out_off[b]) for the bucket b
// with out_off[b] <= o < out_off[b + 1], m = min(4, in_off[b + 1] - s) points. Needs s < 2^30.
extern "C" __global__ void msm_affine_plan4(uint32_t* plan, const i64* __restrict__ in_off,
                                            const i64* __restrict__ out_off, i64 nb, i64 total) {
    const i64 o = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (o >= total) return;
    i64 lo = 0, hi = nb;
    while (hi - lo > 1) {
        const i64 mid = (lo + hi) >> 1;
        if (out_off[mid] <= o) lo = mid;
        else hi = mid;
    }
    const i64 s = in_off[lo] + 4 * (o - out_off[lo]);
    const i64 m = min((i64)4, in_off[lo + 1] - s);
    plan[o] = ((uint32_t)s << 2) | (uint32_t)(m - 1);
}

// x2 - x1, or 1 (and *degenerate set when flag) if they are equal.
template <class F>
__device__ __forceinline__ F x_diff(const F& x2, const F& x1, int* degenerate, bool flag) {
    F d = x2 - x1;
    if (f_is_zero(d)) {
        if (flag) *degenerate = 1;
        f_set_one(d);
    }
    return d;
}

template <class F, bool KEYED>
__device__ __forceinline__ F entry_x(const u64* __restrict__ sorted, const uint32_t* __restrict__ pts, i64 e) {
    bool neg;
    return F::load(entry_point<F, KEYED>(sorted, pts, e, neg));
}

template <class F, bool KEYED>
__device__ __forceinline__ affine_t<F> entry_affine(const u64* __restrict__ sorted, const uint32_t* __restrict__ pts,
                                                    i64 e) {
    bool neg;
    affine_t<F> a = affine_t<F>::load(entry_point<F, KEYED>(sorted, pts, e, neg));
    if (neg) a.y = f_neg(a.y);
    return a;
}

// P + Q given id = 1 / (xQ - xP), P and Q read from memory (y negated on np / nq) in the order
// that keeps few values live: each coordinate is loaded where it is used (the reloads hit L1).
template <class F>
__device__ __forceinline__ affine_t<F> affine_pair_add(const uint32_t* p, bool np, const uint32_t* q, bool nq,
                                                       const F& id) {
    constexpr int H = affine_t<F>::WORDS / 2;
    F y2 = F::load(q + H), y1 = F::load(p + H);
    if (nq) y2 = f_neg(y2);
    if (np) y1 = f_neg(y1);
    const F lambda = f_mul(y2 - y1, id);
    const F x1 = F::load(p);
    affine_t<F> r;
    r.x = f_sqr(lambda) - x1 - F::load(q);
    y1 = F::load(p + H);
    if (np) y1 = f_neg(y1);
    r.y = f_mul(lambda, x1 - r.x) - y1;
    return r;
}

template <class F, int TPB, bool KEYED>
__device__ __forceinline__ void affine_quad(uint32_t* out, uint32_t* tmp, uint32_t* pre, const u64* __restrict__ sorted,
                                            const uint32_t* __restrict__ pts, const uint32_t* __restrict__ plan,
                                            i64 total, i64 per, int* degenerate, int binary_inv) {
    constexpr int W = affine_t<F>::WORDS, H = W / 2;
    const i64 first = blockIdx.x * (i64)TPB * per + threadIdx.x;
    const i64 left = total - first;
    const int cnt = left <= 0 ? 0 : (int)min(per, (left + TPB - 1) / TPB);

    // walk 1: prefix products of D_i = d01 d23 (factors of absent pairs are 1)
    F acc;
    f_set_one(acc);
    for (int i = 0; i < cnt; i++) {
        const i64 o = first + (i64)TPB * i;
        const uint32_t w = plan[o];
        const i64 s = w >> 2;
        const int m = (w & 3) + 1;
        if (m >= 2) {
            F D = x_diff(entry_x<F, KEYED>(sorted, pts, s + 1), entry_x<F, KEYED>(sorted, pts, s), degenerate, true);
            if (m == 4)
                D = f_mul(D, x_diff(entry_x<F, KEYED>(sorted, pts, s + 3), entry_x<F, KEYED>(sorted, pts, s + 2),
                                    degenerate, true));
            acc = i == 0 ? D : f_mul(acc, D);
        }
        acc.store(pre + o * H);
    }

    F inv = block_batch_inverse<F, TPB>(acc, binary_inv);

    // walk 2, backwards: 1/D_i = inv * prefix_{i-1}, inv *= D_i; A, B; suffix_i = prod of d' over
    // outputs i.. of this thread, into pre[o]
    for (int i = cnt - 1; i >= 0; i--) {
        const i64 o = first + (i64)TPB * i;
        const uint32_t w = plan[o];
        const i64 s = w >> 2;
        const int m = (w & 3) + 1;
        if (m == 1) {
            entry_affine<F, KEYED>(sorted, pts, s).store(out + o * W);
        } else {
            F inv01 = inv;
            if (i > 0) inv01 = f_mul(inv, F::load(pre + (o - TPB) * H));
            {
                const F d01 = x_diff(entry_x<F, KEYED>(sorted, pts, s + 1), entry_x<F, KEYED>(sorted, pts, s),
                                     degenerate, false);
                if (m == 4) {
                    const F d23 = x_diff(entry_x<F, KEYED>(sorted, pts, s + 3),
                                         entry_x<F, KEYED>(sorted, pts, s + 2), degenerate, false);
                    if (i > 0) inv = f_mul(inv, f_mul(d01, d23));
                    f_mul(inv01, d01).store(tmp + o * W);   // 1/d23 = (1/D) d01, parked in B's slot:
                    inv01 = f_mul(inv01, d23);              // too few registers to hold it over A
                } else if (i > 0) {
                    inv = f_mul(inv, d01);
                }
            }
            bool n0, n1;
            const uint32_t* p0 = entry_point<F, KEYED>(sorted, pts, s, n0);
            const uint32_t* p1 = entry_point<F, KEYED>(sorted, pts, s + 1, n1);
            affine_pair_add(p0, n0, p1, n1, inv01).store(out + o * W);
            if (m >= 3) {
                affine_t<F> b;
                if (m == 4) {
                    const uint32_t* p2 = entry_point<F, KEYED>(sorted, pts, s + 2, n0);
                    const uint32_t* p3 = entry_point<F, KEYED>(sorted, pts, s + 3, n1);
                    b = affine_pair_add(p2, n0, p3, n1, F::load(tmp + o * W));
                } else {
                    b = entry_affine<F, KEYED>(sorted, pts, s + 2);
                }
                b.store(tmp + o * W);
                F d2 = x_diff(b.x, F::load(out + o * W), degenerate, true);
                if (i + 1 < cnt) d2 = f_mul(d2, F::load(pre + (o + TPB) * H));   // suffix_{i+1}, reread:
                d2.store(pre + o * H);                                            // no register holds it
                continue;
            }
        }
        F one;                            // no d': suffix_i = suffix_{i+1}
        f_set_one(one);
        (i + 1 < cnt ? F::load(pre + (o + TPB) * H) : one).store(pre + o * H);
    }

    F acc2;                               // suffix_0 = prod of this thread's d'
    f_set_one(acc2);
    if (cnt > 0) acc2 = F::load(pre + first * H);
    F inv2 = block_batch_inverse<F, TPB>(acc2, binary_inv);   // 1 / suffix_0

    // walk 3, forwards: 1/d'_i = inv2 * suffix_{i+1}, inv2 *= d'_i; out = A + B
    for (int i = 0; i < cnt; i++) {
        const i64 o = first + (i64)TPB * i;
        if ((plan[o] & 3) < 2) continue;  // m <= 2: out already holds the sum
        F id = inv2;
        if (i + 1 < cnt) {
            id = f_mul(inv2, F::load(pre + (o + TPB) * H));
            inv2 = f_mul(inv2, x_diff(F::load(tmp + o * W), F::load(out + o * W), degenerate, false));
        }
        affine_pair_add(out + o * W, false, tmp + o * W, false, id).store(out + o * W);
    }
}
