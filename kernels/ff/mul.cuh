// Montgomery multiplication for mont_t<P> (ff/field.cuh). docs/field-mul.md has the SASS counts and the
// measured rates.
//
// Algorithm: CIOS, one row per limb b_i (N even, and 2p < 2^(32N): Fp has 3 spare bits,
// Fr 1), on N-word T with T < 2p between rows:
//   R = T + a*b_i                 < 2p + p*2^32 < 2^(32N+32)   (N+1 words)
//   m = R_0 * (-p^-1) mod 2^32
//   T = (R + m*p) / 2^32          < 2p                          (N words)
// and one conditional subtraction of p at the end (the output is fully reduced, < p).
// Inputs must be < p (the mont_t contract).
//
// Each 32x32 product is ONE 64-bit IMAD.WIDE.U32 (PTX mul.wide.u32), giving both halves. The products of
// even limbs a_{2k}*x form 64-bit words at word offsets 0,2,4,..; those of odd limbs at 1,3,5,..: each set
// tiles the number with no overlap, so adding a row is just carry chains over whole words (the even/odd
// split of sppark, done with wide products).
//
// Builds, per field (CUZK_FASTMUL_VARIANT_FP for the 12-limb Fp, CUZK_FASTMUL_VARIANT_FR for the 8-limb Fr;
// default 1; loader.BUILDS selects the others):
//  1: the accumulator folded into the products: a_j*x + t_j < 2^64 always, so ptxas emits
//     IMAD.WIDE.U32 d, a, x, {t_j, 0}; then ONE carry chain (even words + odd words) per row.
//  3: the a*b_i rows as 1, the m*p rows as plain products added by TWO carry chains (t + even words, then
//     + odd words): optimization I2's callee.
//  6: the product on the FP64 pipe (mont_mul_dfma, below; ff/mul_dfma.cuh's 52-bit limbs and exact DFMA
//     splits), with a reduction that divides by exactly 2^(32N): same contract and representation as 1
//     and 3. ff/mul_dfma.cuh is included only when a field uses it.
//
// Carry chains are separate `asm volatile` statements, as in ff/field.cuh. With CUZK_FASTMUL_HOST the
// integer builds compile as plain C++ for the CPU (a global carry flag stands in for CC.CF):
// tests/host/mul_host_check.cpp runs them against big ints.
#pragma once
#include "ff/layout.cuh"

#ifndef CUZK_FASTMUL_VARIANT_FP
#define CUZK_FASTMUL_VARIANT_FP 1
#endif
#ifndef CUZK_FASTMUL_VARIANT_FR
#define CUZK_FASTMUL_VARIANT_FR 1
#endif

#if CUZK_FASTMUL_VARIANT_FP == 6 || CUZK_FASTMUL_VARIANT_FR == 6
#ifdef CUZK_FASTMUL_HOST
#error "fastmul build 6 (the FP64 pipe) has no host build"
#endif
#define CUZK_FASTMUL_HAS_V6 1   // mont_mul_dfma
#include "ff/mul_dfma.cuh"
#endif

#ifdef CUZK_FASTMUL_HOST
#define CUZK_FM_INLINE inline
#else
#define CUZK_FM_INLINE __device__ __forceinline__
#endif

namespace cuzk {
namespace fastmul {

// ---- primitives (PTX on the device; plain C++ on the host emulation) ----
#ifdef CUZK_FASTMUL_HOST
inline uint32_t& host_cf() { static thread_local uint32_t cf = 0; return cf; }
inline uint64_t mul_wide(uint32_t a, uint32_t b) { return (uint64_t)a * b; }
inline uint32_t add_cc(uint32_t x, uint32_t y) { uint64_t s = (uint64_t)x + y; host_cf() = s >> 32; return (uint32_t)s; }
inline uint32_t addc_cc(uint32_t x, uint32_t y) { uint64_t s = (uint64_t)x + y + host_cf(); host_cf() = s >> 32; return (uint32_t)s; }
inline uint32_t addc(uint32_t x, uint32_t y) { uint64_t s = (uint64_t)x + y + host_cf(); if (s >> 32) throw "carry out of addc"; return (uint32_t)s; }
inline uint32_t sub_cc(uint32_t x, uint32_t y) { host_cf() = x < y; return x - y; }
inline uint32_t subc_cc(uint32_t x, uint32_t y) { uint64_t d = (uint64_t)x - y - host_cf(); host_cf() = (d >> 32) & 1; return (uint32_t)d; }
inline uint32_t subc(uint32_t x, uint32_t y) { return x - y - host_cf(); }
#else
// 64-bit product in asm: NVVM would turn a product by a constant into a 64-bit mul.lo.s64.
// Non-volatile: it touches no condition code. mul.wide + a 64-bit add of {c, 0} is fused by
// ptxas into one IMAD.WIDE.U32 with an addend pair; PTX mad.wide.u32 is NOT (ptxas splits it
// into IMAD.WIDE.U32 + IADD3 + IMAD.X), so it is deliberately not used.
__device__ __forceinline__ uint64_t mul_wide(uint32_t a, uint32_t b) {
    uint64_t r;
    asm("mul.wide.u32 %0, %1, %2;" : "=l"(r) : "r"(a), "r"(b));
    return r;
}
#define CUZK_FM_OP(name, op)                                                      \
    __device__ __forceinline__ uint32_t name(uint32_t x, uint32_t y) {            \
        uint32_t r;                                                               \
        asm volatile(op " %0, %1, %2;" : "=r"(r) : "r"(x), "r"(y));                   \
        return r;                                                                 \
    }
CUZK_FM_OP(add_cc, "add.cc.u32")
CUZK_FM_OP(addc_cc, "addc.cc.u32")
CUZK_FM_OP(addc, "addc.u32")
CUZK_FM_OP(sub_cc, "sub.cc.u32")
CUZK_FM_OP(subc_cc, "subc.cc.u32")
CUZK_FM_OP(subc, "subc.u32")
#undef CUZK_FM_OP
#endif

CUZK_FM_INLINE uint32_t lo32(uint64_t x) { return (uint32_t)x; }
CUZK_FM_INLINE uint32_t hi32(uint64_t x) { return (uint32_t)(x >> 32); }

// w[1..N] := words 1..N of  sum_k e[k]*2^(64k) + sum_k o[k]*2^(64k+32) + top*2^(32N).
// (word 0 is lo32(e[0])). One carry chain; its carry out of word N is zero by the bounds.
template <int N>
CUZK_FM_INLINE void fold(uint32_t* w, const uint64_t* e, const uint64_t* o, uint32_t top) {
    constexpr int H = N / 2;
    w[1] = add_cc(hi32(e[0]), lo32(o[0]));
#pragma unroll
    for (int k = 1; k < H; k++) {
        w[2 * k] = addc_cc(lo32(e[k]), hi32(o[k - 1]));
        w[2 * k + 1] = addc_cc(hi32(e[k]), lo32(o[k]));
    }
    w[N] = addc(hi32(o[H - 1]), top);
}

// Build 3's m*p rows: w[0..N] := t[0..N-1] (+ t_top*2^(32N)) + sum_k e[k]*2^(64k) + sum_k o[k]*2^(64k+32)
// as two carry chains (even words, then odd words). No carry out of word N (bounds).
template <int N>
CUZK_FM_INLINE void add_two_chains(uint32_t* w, const uint32_t* t, uint32_t t_top, const uint64_t* e,
                                   const uint64_t* o) {
    constexpr int H = N / 2;
    w[0] = add_cc(t[0], lo32(e[0]));
    w[1] = addc_cc(t[1], hi32(e[0]));
#pragma unroll
    for (int k = 1; k < H; k++) {
        w[2 * k] = addc_cc(t[2 * k], lo32(e[k]));
        w[2 * k + 1] = addc_cc(t[2 * k + 1], hi32(e[k]));
    }
    w[N] = addc(t_top, 0);
    w[1] = add_cc(w[1], lo32(o[0]));
#pragma unroll
    for (int k = 1; k < H; k++) {
        w[2 * k] = addc_cc(w[2 * k], hi32(o[k - 1]));
        w[2 * k + 1] = addc_cc(w[2 * k + 1], lo32(o[k]));
    }
    w[N] = addc(w[N], hi32(o[H - 1]));
}


// out = t - p if t >= p, else t (t < 2p): the final step of every multiplication path.
template <class P>
CUZK_FM_INLINE void sub_p_once(uint32_t* out, const uint32_t* t) {
    constexpr int N = P::N;
    uint32_t s[N];
    s[0] = sub_cc(t[0], P::mod(0));
#pragma unroll
    for (int j = 1; j < N; j++) s[j] = subc_cc(t[j], P::mod(j));
    const uint32_t borrow = subc(0, 0);
#pragma unroll
    for (int j = 0; j < N; j++) out[j] = borrow ? t[j] : s[j];
}

// w[0..K] = t[0..K-1] + a[0..K-1] * bi (t unread when first): one schoolbook row with the even/odd split,
// t folded into the products.
template <int K>
CUZK_FM_INLINE void row_mul_add(uint32_t* w, const uint32_t* t, const uint32_t* a, uint32_t bi, bool first) {
    constexpr int Q = K / 2;
    uint64_t e[Q], o[Q];
#pragma unroll
    for (int k = 0; k < Q; k++) {
        e[k] = mul_wide(a[2 * k], bi);
        o[k] = mul_wide(a[2 * k + 1], bi);
        if (!first) {
            e[k] += t[2 * k];
            o[k] += t[2 * k + 1];
        }
    }
    w[0] = lo32(e[0]);
    fold<K>(w, e, o, 0);
}

// t := (t + M*p) / 2^(32N), M = t * (-p^-1) mod 2^(32N): N rows W = (W + m*p) / 2^32.
// W < 2^(32N) stays true (W + m*p < 2^(32N) + 2^32*p < 2^(32N+32)); the result is <= p.
template <class P, int VM>
CUZK_FM_INLINE void redc_low(uint32_t* t) {
    constexpr int N = P::N, H = N / 2;
    uint32_t x[N + 1];
    uint64_t e[H], o[H];
    // p = ...ffffffff 00000001 (Fr): m*p_0 + t_0 = (t_0 != 0)*2^32 and m*p_1 + t_1 = m*2^32 + t_1 - m
    // take no multiplies (the first k = 0 pair is then always in the accumulated form)
    constexpr bool SPECIAL = P::mod(0) == 1u && P::mod(1) == 0xffffffffu;
#pragma unroll
    for (int i = 0; i < N; i++) {
        const uint32_t m = t[0] * P::INV;
#pragma unroll
        for (int k = 0; k < H; k++) {
            if (SPECIAL && k == 0) {
                const uint32_t ol = sub_cc(t[1], m), oh = subc(m, 0);
                e[0] = (uint64_t)(t[0] != 0) << 32;
                o[0] = ((uint64_t)oh << 32) | ol;
                continue;
            }
            e[k] = mul_wide(m, P::mod(2 * k));
            o[k] = mul_wide(m, P::mod(2 * k + 1));
            if (VM == 1 || SPECIAL) {
                e[k] += t[2 * k];
                o[k] += t[2 * k + 1];
            }
        }
        if (VM == 1 || SPECIAL)
            fold<N>(x, e, o, 0);
        else
            add_two_chains<N>(x, t, 0, e, o);
#pragma unroll
        for (int j = 0; j < N; j++) t[j] = x[j + 1];
    }
}

// out = REDC(lo + hi * 2^(32N)) for a product split in halves (hi < p / 2 for a, b < 2p when 4p <= 2^(32N),
// or for a, b < p): redc_low(lo) + hi < 2p, then one conditional subtraction of p. lo is overwritten.
template <class P, int VM>
CUZK_FM_INLINE void redc_halves(uint32_t* out, uint32_t* lo, const uint32_t* hi) {
    constexpr int N = P::N;
    redc_low<P, VM>(lo);
    uint32_t t[N];
    t[0] = add_cc(lo[0], hi[0]);
#pragma unroll
    for (int j = 1; j < N - 1; j++) t[j] = addc_cc(lo[j], hi[j]);
    t[N - 1] = addc(lo[N - 1], hi[N - 1]);
    sub_p_once<P>(out, t);
}

#ifdef CUZK_FASTMUL_HAS_V6
// ---- variant 6: Montgomery multiplication on the FP64 pipe, R = 2^(32N) exactly ----
// a, b < p as N uint32 words -> from_u32: L limbs of 52 bits as doubles (Fp: L = 8, Fr: L = 5;
// 32N <= 52L, so every value < 2^(32N) fits). T = a*b in uint64 column sums c[0..2L-1] from L^2
// exact splits (ff/mul_dfma.cuh: hb = DFMA.RM(a, b, 2^104), lb = DFMA(a, b, 2^104 + 2^52 - hb)).
// Reduction by 2^(32N) = 2^(52K + S), K = floor(32N / 52), S = 32N - 52K (Fp: K = 7, S = 20;
// Fr: K = 4, S = 48):
//   K full rounds of 52 bits (m = c_i * (-p^-1) mod 2^52, lo(m p_0) implicit:
//   c_{i+1} += ceil(c_i / 2^52)), which divide by 2^(52K); then ONE S-bit round:
//   m_S = c_K * (-p^-1) mod 2^S (-p^-1 mod 2^S = PINV mod 2^S), c_{K+j} += lo(m_S p_j),
//   c_{K+j+1} += hi(m_S p_j) for all j (L splits; lo(m_S p_0) is needed now: c_K + lo is only
//   divisible by 2^S, not by 2^52). Then V = sum_k c_{K+k} 2^(52k) (carry-propagated) is
//   (T + M p) / 2^(52K) with M = the combined multiplier < 2^(32N), V = 0 mod 2^S, and the output
//   words are bits [S + 32q, S + 32q + 32) of V: the final shift by S costs nothing extra, it is
//   folded into the 52 -> 32 regrouping. Cost vs. the alternatives: reducing by R' = 2^(52L) with
//   L full rounds and then multiplying by 2^(52L - 32N) mod p (2^32 for Fp, 2^4 for
//   Fr) costs the same FP64 work (K = L - 1 here, so the S-bit round just replaces the last full
//   round: one more full split, one fewer hi-only split) PLUS a shift-and-reduce (quotient estimate,
//   subtract a multiple of p, integer pipe); scaling an operand by 2^(52L-32N) mod p costs the same
//   extra. So the S-bit round is the cheapest exact scheme.
// Bounds (each relied on below):
//   * output: V / 2^S = (T + M p) / 2^(32N) < p*p / 2^(32N) + p < 2p (p < 2^(32N) / 2: Fp 2^381 vs 2^384,
//     Fr 2^255 vs 2^256), so one conditional subtraction gives < p, and V < 2p 2^S < 2^(32N + S)
//     fits the NV = 2L - K limbs c_K..c_{2L-1} (Fp 404 <= 468 bits, Fr 304 <= 312): no carry out.
//   * column sums: column k receives at most v6_parts(k) parts (each < 2^52) plus one carry < 2^6, so
//     with parts <= 63 the true value stays < 2^58 < 2^64 (static_assert below). The biased running sum may wrap (mod 2^64, harmless).
//   * splits: every factor is an integer in [0, 2^52) (from_u32 limbs, m < 2^52, m_S < 2^S, p_j < 2^52).
template <int N> struct v6_field { using F = dfma::Fp; };   // 12 words
template <> struct v6_field<8> { using F = dfma::Fr; };     // 8 words

template <class F> DFMA_CX int v6_K() { return 32 * F::N32 / 52; }
template <class F> DFMA_CX int v6_S() { return 32 * F::N32 - 52 * v6_K<F>(); }

// Column k's parts: (nlo, nhi) counts, as added by mont_mul_dfma (the full rounds skip lo(m_i p_0)).
template <class F> DFMA_CX int v6_nlo(int k) {
    int n = 0;
    for (int i = 0; i < F::L; i++)
        for (int j = 0; j < F::L; j++) n += (i + j == k) + (i < v6_K<F>() && j > 0 && i + j == k);
    for (int j = 0; j < F::L; j++) n += (v6_K<F>() + j == k);
    return n;
}
template <class F> DFMA_CX int v6_nhi(int k) {
    int n = 0;
    for (int i = 0; i < F::L; i++)
        for (int j = 0; j < F::L; j++) n += (i + j + 1 == k) + (i < v6_K<F>() && i + j + 1 == k);
    for (int j = 0; j < F::L; j++) n += (v6_K<F>() + j + 1 == k);
    return n;
}
template <class F> DFMA_CX int v6_max_parts() {
    int m = 0;
    for (int k = 0; k < 2 * F::L; k++) m = m < v6_nlo<F>(k) + v6_nhi<F>(k) ? v6_nlo<F>(k) + v6_nhi<F>(k) : m;
    return m;
}
// The column starts at minus its total bias (LB_BIAS per lo part, HB_BIAS per hi part), mod 2^64.
template <class F> DFMA_CX uint64_t v6_col_init(int k) {
    return 0ull - ((uint64_t)v6_nlo<F>(k) * dfma::LB_BIAS + (uint64_t)v6_nhi<F>(k) * dfma::HB_BIAS);
}

template <class P>
CUZK_FM_INLINE void mont_mul_dfma(uint32_t* out, const uint32_t* a, const uint32_t* b) {
    using F = typename v6_field<P::N>::F;
    constexpr int N = P::N, L = F::L, K = v6_K<F>(), S = v6_S<F>(), NV = 2 * L - K;
    static_assert(F::N32 == N, "field mismatch");
    static_assert(S > 0 && S < 52 && K < L, "round layout: K full rounds + 1 S-bit round; c_{K+L} exists");
    static_assert(v6_max_parts<F>() <= 63, "column sums < 63 * 2^52 + 2^6 <= 2^58");
    static_assert(S + 32 * N <= 52 * NV, "V < 2^(32N+S) fits NV limbs: no carry out of the top one");
    using dfma::as_u64;
    const dfma::elem<F> x = dfma::from_u32<F>(a), y = dfma::from_u32<F>(b);   // a, b < p: limbs < 2^52
    uint64_t c[2 * L];
#pragma unroll
    for (int k = 0; k < 2 * L; k++) c[k] = v6_col_init<F>(k);
    // T = a*b: L^2 exact splits
#pragma unroll
    for (int i = 0; i < L; i++)
#pragma unroll
        for (int j = 0; j < L; j++) {
            const double hb = dfma::split_hi(x.v[i], y.v[j]);
            const double lb = dfma::dfma_rn(x.v[i], y.v[j], dfma::dsub(dfma::TWO104_52, hb));
            c[i + j] += as_u64(lb);
            c[i + j + 1] += as_u64(hb);
        }
    // K full rounds of 52 bits (c[i] mod 2^52 is bias-free: both biases are multiples of 2^52)
#pragma unroll
    for (int i = 0; i < K; i++) {
        const uint64_t m = (c[i] * F::PINV) & dfma::MASK52;
        const double md = dfma::u2d(m);
        c[i + 1] += as_u64(dfma::split_hi(md, (double)F::p(0)));   // hi(m p_0); lo(m p_0) implicit
#pragma unroll
        for (int j = 1; j < L; j++) {
            const double pj = (double)F::p(j);                       // exact: p_j < 2^52
            const double hb = dfma::split_hi(md, pj);
            const double lb = dfma::dfma_rn(md, pj, dfma::dsub(dfma::TWO104_52, hb));
            c[i + j] += as_u64(lb);
            c[i + j + 1] += as_u64(hb);
        }
        // column i is complete (true value); c[i] + lo(m p_0) = 2^52 ceil(c[i] / 2^52)
        c[i + 1] += (c[i] + dfma::MASK52) >> 52;
    }
    // one S-bit round: m_S = c_K * (-p^-1) mod 2^S, all L parts of m_S * p
    {
        uint64_t m;
        if (S <= 32)   // only the low S bits matter: a 32-bit multiply suffices
            m = (uint32_t)c[K] * (uint32_t)F::PINV & (uint32_t)((1ull << S) - 1);
        else
            m = (c[K] * F::PINV) & ((1ull << S) - 1);
        const double md = dfma::u2d(m);
#pragma unroll
        for (int j = 0; j < L; j++) {
            const double pj = (double)F::p(j);
            const double hb = dfma::split_hi(md, pj);
            const double lb = dfma::dfma_rn(md, pj, dfma::dsub(dfma::TWO104_52, hb));
            c[K + j] += as_u64(lb);
            c[K + j + 1] += as_u64(hb);
        }
    }
    // V = carry-propagated c[K..2L-1]; V = 0 mod 2^S, V < 2^(52 NV): no carry out of the top limb
    uint64_t t[NV];
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const uint64_t s = c[K + k];
        t[k] = s & dfma::MASK52;
        if (k + 1 < NV) c[K + k + 1] += s >> 52;
    }
    // words of V / 2^S (< 2p < 2^(32N)): bits [S + 32q, S + 32q + 32)
    uint32_t w[N];
#pragma unroll
    for (int q = 0; q < N; q++) {
        const int bit = S + 32 * q, k = bit / 52, sh = bit % 52;
        uint64_t v = t[k] >> sh;
        if (sh > 20 && k + 1 < NV) v |= t[k + 1] << (52 - sh);
        w[q] = (uint32_t)v;
    }
    sub_p_once<P>(out, w);       // < 2p
}
#endif  // CUZK_FASTMUL_HAS_V6

// REDUCE false (optimization L1, Fp only): the output is left < 2p (no final subtraction). With 4p < 2^(32N)
// (Fp: p < 2^381) inputs < 2p keep every row's T < 3p and give (a b + M p) / R < 4p^2 / R + p < 2p; every
// product here accepts inputs < 2p, and the reduced ones return < p.
template <class P, bool REDUCE = true>
CUZK_FM_INLINE void mont_mul(uint32_t* out, const uint32_t* a, const uint32_t* b) {
    constexpr int N = P::N, H = N / 2;
    static_assert(N % 2 == 0, "even limb count");
    constexpr int V = N == 12 ? CUZK_FASTMUL_VARIANT_FP : CUZK_FASTMUL_VARIANT_FR;
    static_assert(V == 1 || V == 3 || V == 6, "CUZK_FASTMUL_VARIANT_FP / _FR is 1, 3 or 6");
#ifdef CUZK_FASTMUL_HAS_V6
    if (V == 6) {
        mont_mul_dfma<P>(out, a, b);
        return;
    }
#endif
    constexpr int VM = V == 1 ? 1 : 2;   // how the m*p rows add R: folded (1) or by two chains (3)
    uint32_t t[N];      // T < 2p
    uint32_t w[N + 1];  // R = T + a*b_i
    uint32_t x[N + 1];  // R + m*p (x[0] == 0)
    uint64_t e[H], o[H];
#pragma unroll
    for (int i = 0; i < N; i++) {
        row_mul_add<N>(w, t, a, b[i], i == 0);     // R = T + a*b_i
        // R + m*p, then drop word 0 (it is zero)
        const uint32_t m = w[0] * P::INV;
#pragma unroll
        for (int k = 0; k < H; k++) {
            e[k] = mul_wide(m, P::mod(2 * k));
            o[k] = mul_wide(m, P::mod(2 * k + 1));
            if (VM == 1) {
                e[k] += w[2 * k];
                o[k] += w[2 * k + 1];
            }
        }
        if (VM == 1)
            fold<N>(x, e, o, w[N]);
        else
            add_two_chains<N>(x, w, w[N], e, o);
#pragma unroll
        for (int j = 0; j < N; j++) t[j] = x[j + 1];
    }
    if (REDUCE) {
        sub_p_once<P>(out, t);   // T < 2p
    } else {
#pragma unroll
        for (int j = 0; j < N; j++) out[j] = t[j];
    }
}

// ---- squaring (optimization S1): a^2 in (N^2 + N) / 2 products, then redc_low ----
// D = sum_{i<j} a_i a_j 2^(32(i+j)) by rows (row i: a_i * a[i+1..N-1] at word 2i+1, the words
// below folded into the products: a_i a_j + r_k < 2^64), one carry chain a row; then
// a^2 = 2 D + sum_i a_i^2 2^(64 i) (a one-bit shift, then one chain); then redc_halves:
// REDC(a^2) = hi + (lo + M p) / R < 2p (redc_halves). Products: Fp 78 + 144
// (mont_mul: 288), Fr 36 + 64 (128).
template <int N>
CUZK_FM_INLINE void sqr_wide(uint32_t* r, const uint32_t* a) {
#pragma unroll
    for (int k = 0; k < 2 * N; k++) r[k] = 0;
#pragma unroll
    for (int i = 0; i < N - 1; i++) {
        const int L = N - 1 - i, b = 2 * i + 1;      // constants after unrolling
        uint64_t pr[N];
#pragma unroll
        for (int j = 0; j < N - 1; j++)
            if (j < L) pr[j] = mul_wide(a[i], a[i + 1 + j]) + r[b + j];
        r[b] = lo32(pr[0]);
        if (L == 1) {
            r[b + 1] = hi32(pr[0]);
            continue;
        }
        r[b + 1] = add_cc(lo32(pr[1]), hi32(pr[0]));
#pragma unroll
        for (int j = 2; j < N - 1; j++)
            if (j < L) r[b + j] = addc_cc(lo32(pr[j]), hi32(pr[j - 1]));
        r[b + L] = addc(hi32(pr[L - 1]), 0);           // the row's top word: fresh (zero) before it
    }
    r[2 * N - 1] = r[2 * N - 2] >> 31;               // 2 D (D < 2^(64N - 1))
#pragma unroll
    for (int k = 2 * N - 2; k > 0; k--) r[k] = (r[k] << 1) | (r[k - 1] >> 31);
    uint64_t d[N];
#pragma unroll
    for (int i = 0; i < N; i++) d[i] = mul_wide(a[i], a[i]);
    r[0] = lo32(d[0]);                               // word 0 of 2 D is zero
    r[1] = add_cc(r[1], hi32(d[0]));
#pragma unroll
    for (int i = 1; i < N - 1; i++) {
        r[2 * i] = addc_cc(r[2 * i], lo32(d[i]));
        r[2 * i + 1] = addc_cc(r[2 * i + 1], hi32(d[i]));
    }
    r[2 * N - 2] = addc_cc(r[2 * N - 2], lo32(d[N - 1]));
    r[2 * N - 1] = addc(r[2 * N - 1], hi32(d[N - 1]));   // a^2 < 2^(64N): no carry out
}

template <class P>
CUZK_FM_INLINE void mont_sqr(uint32_t* out, const uint32_t* a) {
    constexpr int N = P::N;
    constexpr int V = N == 12 ? CUZK_FASTMUL_VARIANT_FP : CUZK_FASTMUL_VARIANT_FR;
    if (V == 6) {                                    // build 6: its own product
        mont_mul<P>(out, a, a);
        return;
    }
    constexpr int VM = V == 1 ? 1 : 2;
    uint32_t r[2 * N];
    sqr_wide<N>(r, a);
    redc_halves<P, VM>(out, r, r + N);
}

}  // namespace fastmul
}  // namespace cuzk
