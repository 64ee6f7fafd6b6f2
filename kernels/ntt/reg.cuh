// The register-radix NTT pass, over an element policy (ntt/fr_policy.cuh: fr_t); kernels/ntt/reg.cu
// instantiates it (r4, r8).
#pragma once
#include "ff/layout.cuh"   // uint32_t, uint64_t (NVRTC has no <cstdint>)

#define NTT_KMAX 10      // tw_small[i] = w_(2^NTT_KMAX)^i, i < 2^(NTT_KMAX - 1) (ntt/ntt.cu's table)
#define FR_W 8

// Shared memory is word-planar (sm[w * E + phys]). phys XORs slot bits 5..7 into the bank bits:
// with these constants every group's 32-lane access hits 32 banks, for LR = 2 and 3 and any
// b0 and log_c (checked on the CPU: tests/gpu/test_ntt_plan.py).
__device__ __forceinline__ int swz(int s) {
    const int h = s >> 5;
    return s ^ ((-(h & 1) & 10) ^ (-((h >> 1) & 1) & 21) ^ (-((h >> 2) & 1) & 25));
}

// CUZK_NTT_SM128 (N12, default 1; 0: the builds N12's off state selects): the exchanges move 16 bytes an access
// (two per fr_t element, in two planes of uint4) instead of eight 32-bit words, with swz4: slot bits 3..5 XORed into
// the 16-byte bank-group bits, so that each quarter-warp's 8 lanes hit 8 groups (checked on the CPU:
// tests/gpu/test_ntt_plan.py). A policy without VEC4 keeps the 32-bit words.
#ifndef CUZK_NTT_SM128
#define CUZK_NTT_SM128 1
#endif
// CUZK_NTT_SWZ4_LUT (N17, default 1; 0: the builds N17's off state selects): the XOR term of slot bits 3..5 comes
// from an 8-entry table of 4-bit values in one word (f(v) = 2 v_0 ^ 5 v_1 ^ 6 v_2; ntt.py checks it against SWZ4),
// ~4 instructions an address; 0: bit by bit, ~12.
#ifndef CUZK_NTT_SWZ4_LUT
#define CUZK_NTT_SWZ4_LUT 1
#endif
#define SWZ4_LUT 0x13467520u
__device__ __forceinline__ int swz4(int s) {
#if CUZK_NTT_SWZ4_LUT
    return s ^ (int)((SWZ4_LUT >> ((s >> 1) & 28)) & 7);
#else
    return s ^ ((-((s >> 3) & 1) & 2) ^ (-((s >> 4) & 1) & 5) ^ (-((s >> 5) & 1) & 6));
#endif
}

#define NTT_REG_ARGS                                                                              \
    uint32_t *data, int log_n, int log_sub, int k, int log_c, const uint32_t *__restrict__ tw_small, \
        int tw_mode, const uint32_t *__restrict__ tw_lo, const uint32_t *__restrict__ tw_hi, int tw_bits, \
        const uint32_t *__restrict__ tw1, int tw1_shift, int flags, uint32_t *__restrict__ out
#define NTT_REG_CALL data, log_n, log_sub, k, log_c, tw_small, tw_mode, tw_lo, tw_hi, tw_bits, tw1, tw1_shift, flags, out

// flags (runtime, per launch; cuzk/gpu/ntt.py KERNEL_FLAGS):
#define NTT_ODD_TOP 1    // N13: a DIF pass of odd k runs its one-stage group first (the top stage), so that stages 1
                         // and 0 share the group at b0 = 0, where w = 1 pairs are skipped (else: the bottom stage)
#define NTT_LAZY0 2      // N15: in a pass with a 4-step twiddle, DIF stage 0 (w = 1) leaves a + b and a - b + p
                         // (< 2p) to the 4-step product (policies with LAZY_OUTER: build 6's own product)

// The 4-step twiddle's exponent e < 2^log_sub; tw_mode 3 (N8's table shared by a transform and its inverse):
// the inverse root's w^-e is the forward table's entry at 2^log_sub - e, then read as tw_mode 2.
__device__ __forceinline__ unsigned tw_exp(unsigned e, int tw_mode, int log_sub) {
    return tw_mode == 3 ? (0u - e) & ((1u << log_sub) - 1) : e;
}

// The pass itself, over an element policy P (ntt/fr_policy.cuh: fr_t): P::T in
// registers, P::SMW words of type P::S per element in shared memory (word-planar, swizzled), and
// P::load/store (global, 8 x uint32), P::word/set_word, P::outer (x times its 4-step twiddle) and the
// butterflies P::dit / P::dif (a, b, w = 1 for the block?, twiddle table entry). The last argument of
// outer/dit/dif is the element's (or pair's) index m < R, a constant after unrolling (a multiplier may use it).
// out (N10; the last DIF pass only, log_sub == k, else null): element i of the transform goes to out[bitrev(i)],
// natural order, and block b takes sub-problem bitrev(b), so that the blocks running together write neighbouring
// elements.
template <int LR, bool DIT, class P>
__device__ __forceinline__ void ntt_reg_pass(uint32_t* data, int log_n, int log_sub, int k, int log_c,
                                             const uint32_t* __restrict__ tw_small, int tw_mode,
                                             const uint32_t* __restrict__ tw_lo, const uint32_t* __restrict__ tw_hi,
                                             int tw_bits, const uint32_t* __restrict__ tw1, int tw1_shift,
                                             int flags, uint32_t* __restrict__ out) {
    constexpr int R = 1 << LR;
    extern __shared__ __align__(16) uint64_t sm_raw[];    // 16-byte aligned
    typename P::S* const sm = reinterpret_cast<typename P::S*>(sm_raw);
    const int E = 1 << (k + log_c);
    const int log_n2 = log_sub - k, log_g = log_n2 - log_c, shift = log_n - log_sub;
    const bool natural = !DIT && out != nullptr;
    const unsigned long long s = natural ? (shift ? __brev(blockIdx.x) >> (32 - shift) : 0u) : blockIdx.x >> log_g;
    const unsigned long long cg = blockIdx.x & ((1u << log_g) - 1);
    const int c = threadIdx.x & ((1 << log_c) - 1), q = threadIdx.x >> log_c;
    const unsigned i2 = (unsigned)(cg << log_c) + c;       // column, < 2^log_n2
    uint32_t* col = data + (((unsigned long long)blockIdx.y << log_n) + (s << log_sub) + i2) * FR_W;
    const int ng = (k + LR - 1) / LR;
    typename P::T x[R];

#pragma unroll 1
    for (int g = 0; g < ng; g++) {
        int s_lo, s_hi;
        if (DIT) { s_lo = g * LR; s_hi = min(k, s_lo + LR); }
        else if (flags & NTT_ODD_TOP) { s_lo = (ng - 1 - g) * LR; s_hi = min(k, s_lo + LR); }
        else { s_hi = k - g * LR; s_lo = max(0, s_hi - LR); }
        const int b0 = min(s_lo, k - LR), tlo = s_lo - b0, thi = s_hi - b0;
        const int lo = q & ((1 << b0) - 1);
        const int base = lo | ((q >> b0) << (b0 + LR));

        if (g == 0) {
#pragma unroll
            for (int m = 0; m < R; m++)
                x[m] = P::load(col + ((unsigned long long)(base + (m << b0)) << log_n2) * FR_W);
            if (DIT && tw_mode) {              // b0 == 0 here: rows base + m
#pragma unroll
                for (int m = 0; m < R; m++) {
                    const unsigned r = __brev(base + m) >> (32 - k);
                    x[m] = P::outer(x[m], tw_exp(i2 * r, tw_mode, log_sub), tw_mode == 3 ? 2 : tw_mode, shift, tw_lo,
                                    tw_hi, tw_bits, tw1, tw1_shift, m);
                }
            }
        } else {
            __syncthreads();
#pragma unroll
            for (int m = 0; m < R; m++) {
#if CUZK_NTT_SM128
                if constexpr (P::VEC4) {
                    P::get4(x[m], reinterpret_cast<const uint4*>(sm_raw), E, swz4(((base + (m << b0)) << log_c) + c));
                    continue;
                }
#endif
                const int ph = swz(((base + (m << b0)) << log_c) + c);
#pragma unroll
                for (int w = 0; w < P::SMW; w++) P::set_word(x[m], w, sm[w * E + ph]);
            }
        }

#pragma unroll
        for (int tt = 0; tt < LR; tt++) {
            const int t = DIT ? tt : LR - 1 - tt;
            if (t < tlo || t >= thi) continue;
            const int st = b0 + t;
#pragma unroll
            for (int m = 0; m < R; m++) {
                if (m & (1 << t)) continue;
                const int jm = m & ((1 << t) - 1);
                const bool one = b0 == 0 && jm == 0;       // w = 1, the same for the whole block
                const uint32_t* wp = tw_small + ((unsigned)(lo + (jm << b0)) << (NTT_KMAX - 1 - st)) * FR_W;
                if (DIT) {
                    P::dit(x[m], x[m + (1 << t)], one, wp, m);
                    continue;
                }
                if constexpr (P::LAZY_OUTER) {   // N15
                    if (st == 0 && tw_mode && (flags & NTT_LAZY0)) {
                        P::dif_lazy(x[m], x[m + (1 << t)]);
                        continue;
                    }
                }
                P::dif(x[m], x[m + (1 << t)], one, wp, m);
            }
        }

        if (g == ng - 1) {
#pragma unroll
            for (int m = 0; m < R; m++) {      // one element at a time: each dies at its store
                if (!DIT && tw_mode) {         // b0 == 0 here: rows base + m
                    const unsigned r = __brev(base + m) >> (32 - k);
                    x[m] = P::outer(x[m], tw_exp(i2 * r, tw_mode, log_sub), tw_mode == 3 ? 2 : tw_mode, shift, tw_lo,
                                    tw_hi, tw_bits, tw1, tw1_shift, m);
                }
                if (natural) {                 // log_n2 == 0, b0 == 0: element (s << k) + base + m
                    const unsigned i = (unsigned)(s << k) + base + m;
                    P::store(x[m], out + (((unsigned long long)blockIdx.y << log_n) + (__brev(i) >> (32 - log_n))) * FR_W);
                } else {
                    P::store(x[m], col + ((unsigned long long)(base + (m << b0)) << log_n2) * FR_W);
                }
            }
        } else {
#pragma unroll
            for (int m = 0; m < R; m++) {
#if CUZK_NTT_SM128
                if constexpr (P::VEC4) {
                    P::put4(x[m], reinterpret_cast<uint4*>(sm_raw), E, swz4(((base + (m << b0)) << log_c) + c));
                    continue;
                }
#endif
                const int ph = swz(((base + (m << b0)) << log_c) + c);
#pragma unroll
                for (int w = 0; w < P::SMW; w++) sm[w * E + ph] = P::word(x[m], w);
            }
        }
    }
}

