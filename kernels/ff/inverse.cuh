// Inversion by the binary extended Euclid algorithm (optimization K15: the affine rounds' one inverse a block).
// Variable time: for public values only (MSM bucket sums). Fermat's a^(p-2) is a chain of ~610 dependent
// products; this is ~0.7 * 2 * 381 subtract-and-halve steps of a few dozen integer ops each.
//
// On limb arrays of P::N little-endian words, P: N, INV (= -p^-1 mod 2^32), mod(i), r2(i) (R^2 mod p, R =
// 2^(32N)). Input x < 2p (a lazy product), read as x mod p = a R (Montgomery form); output a^-1 R < p, or 0
// for x = 0 mod p. Invariants, for u, v odd between steps: x1 x = u R^2 and x2 x = v R^2 (mod p), from
// u = x, x1 = R^2, v = p, x2 = 0. When u (or v) reaches 1, x1 (or x2) is R^2 / x = a^-1 R.
// The host build (tests/host/inv_host_check.cpp, tests/gpu/test_field_inv_host.py) runs this same code.
#pragma once
#include "ff/layout.cuh"   // uint32_t, uint64_t (NVRTC has no <cstdint>)

namespace cuzk {
namespace binv {

__device__ __forceinline__ uint32_t shr_pair(uint32_t lo, uint32_t hi, int k) {   // (hi:lo) >> k, k < 32
#ifdef __CUDA_ARCH__
    return __funnelshift_r(lo, hi, k);
#else
    return (uint32_t)(((uint64_t)hi << 32 | lo) >> k);
#endif
}

__device__ __forceinline__ int ctz(uint32_t w) {   // w != 0
#ifdef __CUDA_ARCH__
    return __ffs(w) - 1;
#else
    return __builtin_ctz(w);
#endif
}

// r = a - b; returns the borrow
template <int N>
__device__ __forceinline__ uint32_t sub(uint32_t* r, const uint32_t* a, const uint32_t* b) {
    uint32_t br = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        const uint64_t d = (uint64_t)a[i] - b[i] - br;
        r[i] = (uint32_t)d;
        br = (uint32_t)(d >> 63);
    }
    return br;
}

template <int N>
__device__ __forceinline__ bool is_one(const uint32_t* a) {
    uint32_t acc = a[0] ^ 1u;
#pragma unroll
    for (int i = 1; i < N; i++) acc |= a[i];
    return acc == 0;
}

// w /= 2^k until w is odd (w != 0), and x = x / 2^k mod p alongside: x + m p, m = x INV mod 2^k, is a multiple
// of 2^k below 2^k p, so the quotient stays < p. At most 31 bits a step (a zero low word: 31).
template <int N>
__device__ __forceinline__ void halve(uint32_t* w, uint32_t* x, const uint32_t* p, uint32_t inv) {
    while (!(w[0] & 1)) {
        if (!w[0]) {                               // rare: a zero low word; w = 0 (a bad input) would not end
            uint32_t nz = 0;
#pragma unroll
            for (int i = 1; i < N; i++) nz |= w[i];
            if (!nz) return;
        }
        const int k = w[0] ? ctz(w[0]) : 31;
#pragma unroll
        for (int i = 0; i < N - 1; i++) w[i] = shr_pair(w[i], w[i + 1], k);
        w[N - 1] >>= k;
        const uint32_t m = (x[0] * inv) & ((1u << k) - 1);
        uint32_t t[N];
        uint64_t c = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            c += (uint64_t)m * p[i] + x[i];
            t[i] = (uint32_t)c;
            c >>= 32;
        }
#pragma unroll
        for (int i = 0; i < N - 1; i++) x[i] = shr_pair(t[i], t[i + 1], k);
        x[N - 1] = shr_pair(t[N - 1], (uint32_t)c, k);
    }
}

// x = x - y mod p (x, y < p)
template <int N>
__device__ __forceinline__ void sub_mod(uint32_t* x, const uint32_t* y, const uint32_t* p) {
    if (sub<N>(x, x, y)) {
        uint64_t c = 0;
#pragma unroll
        for (int i = 0; i < N; i++) {
            c += (uint64_t)x[i] + p[i];
            x[i] = (uint32_t)c;
            c >>= 32;
        }
    }
}

}  // namespace binv

template <class P>
__device__ __forceinline__ void binary_inverse(uint32_t* out, const uint32_t* in) {
    constexpr int N = P::N;
    uint32_t p[N], u[N], v[N], x1[N], x2[N], t[N];
#pragma unroll
    for (int i = 0; i < N; i++) {
        p[i] = P::mod(i);
        v[i] = p[i];
        x1[i] = P::r2(i);
        x2[i] = 0;
    }
    const uint32_t ge = !binv::sub<N>(t, in, p);   // in >= p: take in - p
    uint32_t nz = 0;
#pragma unroll
    for (int i = 0; i < N; i++) {
        u[i] = ge ? t[i] : in[i];
        nz |= u[i];
    }
    if (!nz) {
#pragma unroll
        for (int i = 0; i < N; i++) out[i] = 0;
        return;
    }
    binv::halve<N>(u, x1, p, P::INV);
    // u, v odd and coprime (u == v only at 1). Each step shortens u v by a bit at least: 64 N steps bound it
    // (an input >= 2p breaks the contract; it ends there, with 0, rather than hang the block)
    for (int step = 0;; step++) {
        if (step == 64 * N) {
#pragma unroll
            for (int i = 0; i < N; i++) x1[i] = 0;
            break;
        }
        if (binv::is_one<N>(u)) break;
        if (binv::is_one<N>(v)) {
#pragma unroll
            for (int i = 0; i < N; i++) x1[i] = x2[i];
            break;
        }
        if (!binv::sub<N>(t, u, v)) {              // u > v
#pragma unroll
            for (int i = 0; i < N; i++) u[i] = t[i];
            binv::sub_mod<N>(x1, x2, p);
            binv::halve<N>(u, x1, p, P::INV);
        } else {
            binv::sub<N>(v, v, u);
            binv::sub_mod<N>(x2, x1, p);
            binv::halve<N>(v, x2, p, P::INV);
        }
    }
#pragma unroll
    for (int i = 0; i < N; i++) out[i] = x1[i];
}

}  // namespace cuzk
