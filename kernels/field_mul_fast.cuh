// Faster Montgomery multiplication for mont_t<P> (included by field.cuh unless
// CUZK_MUL_LEGACY is defined). docs/mul-notes.md has the SASS counts and the reasoning.
//
// Algorithm: CIOS, one row per limb b_i (N even, and 2p < 2^(32N): Fp has 3 spare bits,
// Fr 1), on N-word T with T < 2p between rows:
//   R = T + a*b_i                 < 2p + p*2^32 < 2^(32N+32)   (N+1 words)
//   m = R_0 * (-p^-1) mod 2^32
//   T = (R + m*p) / 2^32          < 2p                          (N words)
// and one conditional subtraction of p at the end (the output is fully reduced, < p).
// Inputs must be < p (the mont_t contract).
//
// Each 32x32 product is ONE 64-bit IMAD.WIDE.U32 (PTX mul.wide.u32), giving both halves;
// the old code spent two multiplies per product (IMAD for the low half, IMAD.HI.U32 for
// the high half), each followed by a carry-propagating IADD3.X. The products of even
// limbs a_{2k}*x form 64-bit words at word offsets 0,2,4,..; those of odd limbs at
// 1,3,5,..: each set tiles the number with no overlap, so adding a row is just carry
// chains over whole words (sppark's even/odd split, done with wide products).
//
// Two ways to add the accumulator (CUZK_FASTMUL_VARIANT, default 1; per field with
// CUZK_FASTMUL_VARIANT_FP / CUZK_FASTMUL_VARIANT_FR):
//  1: fold it into the products: a_j*x + t_j < 2^64 always, so ptxas emits
//     IMAD.WIDE.U32 d, a, x, {t_j, 0}; then ONE carry chain (even words + odd words)
//     per row. Costs a zeroing MOV for the high half of the addend pair per product.
//  2: plain products, then TWO carry chains per row (t + even words, then + odd words).
// Per product: 1 IMAD.WIDE.U32 + 1 carry add + 1 MOV (1), or 1 IMAD.WIDE.U32 + 2 carry
// adds (2). Mixed (experiments): 3 = a*b_i rows as 1, m*p rows as 2; 4 = the reverse. Which is faster depends on whether IMAD.WIDE occupies the FMA pipe for one
// or two issue slots: tools/experiments/mul_check.py times both.
//
// 5: one-level Karatsuba product, then reduction of its low half (mont_mul_kara; Fp only
//    unless CUZK_FASTMUL_VARIANT_FR=5). docs/mul-notes.md, "Variant 5".
//
// Carry chains are separate CUZK_ASM (asm volatile) statements, as in field.cuh. With
// CUZK_FASTMUL_HOST the same code compiles as plain C++ for the CPU (a global carry flag
// stands in for CC.CF): tools/experiments/mul_host_check.cpp runs it against big ints.
#pragma once
#include "layout.cuh"

#ifndef CUZK_ASM
#define CUZK_ASM asm volatile
#endif
#ifndef CUZK_FASTMUL_VARIANT
#define CUZK_FASTMUL_VARIANT 1
#endif
#ifndef CUZK_FASTMUL_VARIANT_FP  // per field (12-limb Fp / 8-limb Fr); default: the above
#define CUZK_FASTMUL_VARIANT_FP CUZK_FASTMUL_VARIANT
#endif
#ifndef CUZK_FASTMUL_VARIANT_FR  // variant 5 is Fp-only unless asked for: Fr gains nothing, NTT spills
#define CUZK_FASTMUL_VARIANT_FR (CUZK_FASTMUL_VARIANT == 5 ? 1 : CUZK_FASTMUL_VARIANT)
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
// top of a chain whose result is known >= 0: the host build checks that no borrow is lost
inline uint32_t subc_nb(uint32_t x, uint32_t y) { uint64_t d = (uint64_t)x - y - host_cf(); if (d >> 32) throw "borrow out of subc"; return (uint32_t)d; }
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
        CUZK_ASM(op " %0, %1, %2;" : "=r"(r) : "r"(x), "r"(y));                   \
        return r;                                                                 \
    }
CUZK_FM_OP(add_cc, "add.cc.u32")
CUZK_FM_OP(addc_cc, "addc.cc.u32")
CUZK_FM_OP(addc, "addc.u32")
CUZK_FM_OP(sub_cc, "sub.cc.u32")
CUZK_FM_OP(subc_cc, "subc.cc.u32")
CUZK_FM_OP(subc, "subc.u32")
CUZK_FM_OP(subc_nb, "subc.u32")
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

// Variant 2: w[0..N] := t[0..N-1] (+ t_top*2^(32N)) + sum_k e[k]*2^(64k) + sum_k o[k]*2^(64k+32)
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


// ---- variant 5: one-level Karatsuba product (SOS), then a separate reduction ----
// Rows of both parts are added as variant 1 (1) or variant 2 (2); experiment knobs.
#ifndef CUZK_KARA_ROWS_A
#define CUZK_KARA_ROWS_A 1
#endif
#ifndef CUZK_KARA_ROWS_M
#define CUZK_KARA_ROWS_M 2
#endif
#ifndef CUZK_KARA_SPECIAL  // 1: Fr's p_0 = 1, p_1 = 2^32 - 1 rows without multiplies
#define CUZK_KARA_SPECIAL 1
#endif

// w[0..K] = t[0..K-1] + a[0..K-1] * bi (t unread when first): one schoolbook row with the
// even/odd split, t folded into the products (VA 1) or added by two chains (VA 2).
template <int K, int VA>
CUZK_FM_INLINE void row_mul_add(uint32_t* w, const uint32_t* t, const uint32_t* a, uint32_t bi, bool first) {
    constexpr int Q = K / 2;
    uint64_t e[Q], o[Q];
#pragma unroll
    for (int k = 0; k < Q; k++) {
        e[k] = mul_wide(a[2 * k], bi);
        o[k] = mul_wide(a[2 * k + 1], bi);
        if (VA == 1 && !first) {
            e[k] += t[2 * k];
            o[k] += t[2 * k + 1];
        }
    }
    if (VA == 1 || first) {
        w[0] = lo32(e[0]);
        fold<K>(w, e, o, 0);
    } else {
        add_two_chains<K>(w, t, 0, e, o);
    }
}

// r[0..2H-1] = a[0..H-1] * b[0..H-1]: schoolbook rows t = (t + a*b_i) with the even/odd
// split; t + a*b_i < 2^(32H) * 2^32, so no chain carries out of word H.
template <int H, int VA>
CUZK_FM_INLINE void mul_hh(uint32_t* r, const uint32_t* a, const uint32_t* b) {
    static_assert(H % 2 == 0, "even half");
    uint32_t t[H], w[H + 1];
#pragma unroll
    for (int i = 0; i < H; i++) {
        row_mul_add<H, VA>(w, t, a, b[i], i == 0);
        r[i] = w[0];
#pragma unroll
        for (int j = 0; j < H; j++) t[j] = w[j + 1];
    }
#pragma unroll
    for (int j = 0; j < H; j++) r[H + j] = t[j];
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
    constexpr bool SPECIAL = CUZK_KARA_SPECIAL && P::mod(0) == 1u && P::mod(1) == 0xffffffffu;
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

// a*b = L + D*2^(32H) + U*2^(64H), L = a0*b0, U = a1*b1, D = a0*b1 + a1*b0 = S - L - U with
// S = (a0+a1)(b0+b1); a0+a1 = sa + ca*2^(32H) (ca = carry bit), so
// S = sa*sb + (ca*sb + cb*sa)*2^(32H) + ca*cb*2^(64H). Then with T_lo / T_hi the low / high
// N words of a*b: REDC(a*b) = T_hi + (T_lo + M*p)/R <= p + T_hi < 2p (T_hi < p*p/R < p/2).
template <class P, int VA, int VM>
CUZK_FM_INLINE void mont_mul_kara(uint32_t* out, const uint32_t* a, const uint32_t* b) {
    constexpr int N = P::N, H = N / 2;
    uint32_t sa[H], sb[H];
    sa[0] = add_cc(a[0], a[H]);
#pragma unroll
    for (int j = 1; j < H; j++) sa[j] = addc_cc(a[j], a[H + j]);
    const uint32_t ca = addc(0, 0);
    sb[0] = add_cc(b[0], b[H]);
#pragma unroll
    for (int j = 1; j < H; j++) sb[j] = addc_cc(b[j], b[H + j]);
    const uint32_t cb = addc(0, 0);
    uint32_t lo[N], hi[N], d[N + 1];
    // d = S (< 2^(64H+2)): every partial sum below is <= S, so no top carry is lost
    mul_hh<H, VA>(d, sa, sb);
    const uint32_t mca = 0u - ca, mcb = 0u - cb;
    d[N] = ca & cb;
    d[H] = add_cc(d[H], sb[0] & mca);
#pragma unroll
    for (int j = 1; j < H; j++) d[H + j] = addc_cc(d[H + j], sb[j] & mca);
    d[N] = addc(d[N], 0);
    d[H] = add_cc(d[H], sa[0] & mcb);
#pragma unroll
    for (int j = 1; j < H; j++) d[H + j] = addc_cc(d[H + j], sa[j] & mcb);
    d[N] = addc(d[N], 0);
    // d = S - L - U = D >= 0 (< 2^(64H+1)); S - L >= 0 too
    mul_hh<H, VA>(lo, a, b);
    d[0] = sub_cc(d[0], lo[0]);
#pragma unroll
    for (int j = 1; j < N; j++) d[j] = subc_cc(d[j], lo[j]);
    d[N] = subc_nb(d[N], 0);
    mul_hh<H, VA>(hi, a + H, b + H);
    d[0] = sub_cc(d[0], hi[0]);
#pragma unroll
    for (int j = 1; j < N; j++) d[j] = subc_cc(d[j], hi[j]);
    d[N] = subc_nb(d[N], 0);
    // (lo, hi) = a*b: add D at word H; the total < p^2 < 2^(64N) has no carry out
    lo[H] = add_cc(lo[H], d[0]);
#pragma unroll
    for (int j = 1; j < H; j++) lo[H + j] = addc_cc(lo[H + j], d[j]);
#pragma unroll
    for (int j = 0; j <= H; j++) hi[j] = addc_cc(hi[j], d[H + j]);
#pragma unroll
    for (int j = H + 1; j < N - 1; j++) hi[j] = addc_cc(hi[j], 0);
    hi[N - 1] = addc(hi[N - 1], 0);
    redc_low<P, VM>(lo);
    // lo + hi < 2p < 2^(32N); subtract p once if >= p
    uint32_t t[N], s[N];
    t[0] = add_cc(lo[0], hi[0]);
#pragma unroll
    for (int j = 1; j < N - 1; j++) t[j] = addc_cc(lo[j], hi[j]);
    t[N - 1] = addc(lo[N - 1], hi[N - 1]);
    s[0] = sub_cc(t[0], P::mod(0));
#pragma unroll
    for (int j = 1; j < N; j++) s[j] = subc_cc(t[j], P::mod(j));
    const uint32_t borrow = subc(0, 0);
#pragma unroll
    for (int j = 0; j < N; j++) out[j] = borrow ? t[j] : s[j];
}

template <class P>
CUZK_FM_INLINE void mont_mul(uint32_t* out, const uint32_t* a, const uint32_t* b) {
    constexpr int N = P::N, H = N / 2;
    static_assert(N % 2 == 0, "even limb count");
    constexpr int V = N == 12 ? CUZK_FASTMUL_VARIANT_FP : CUZK_FASTMUL_VARIANT_FR;
    static_assert(V >= 1 && V <= 5, "CUZK_FASTMUL_VARIANT is 1 .. 5");
    if (V == 5) {
        mont_mul_kara<P, CUZK_KARA_ROWS_A, CUZK_KARA_ROWS_M>(out, a, b);
        return;
    }
    constexpr int VA = (V == 1 || V == 3) ? 1 : 2;   // how the a*b_i rows add T
    constexpr int VM = (V == 1 || V == 4) ? 1 : 2;   // how the m*p rows add R
    uint32_t t[N];      // T < 2p
    uint32_t w[N + 1];  // R = T + a*b_i
    uint32_t x[N + 1];  // R + m*p (x[0] == 0)
    uint64_t e[H], o[H];
#pragma unroll
    for (int i = 0; i < N; i++) {
        row_mul_add<N, VA>(w, t, a, b[i], i == 0);     // R = T + a*b_i
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
    // T < 2p: subtract p once if T >= p
    uint32_t s[N];
    s[0] = sub_cc(t[0], P::mod(0));
#pragma unroll
    for (int j = 1; j < N; j++) s[j] = subc_cc(t[j], P::mod(j));
    const uint32_t borrow = subc(0, 0);
#pragma unroll
    for (int j = 0; j < N; j++) out[j] = borrow ? t[j] : s[j];
}

}  // namespace fastmul
}  // namespace cuzk
