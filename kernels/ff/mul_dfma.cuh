// EXPERIMENT (not used by any kernel): Montgomery multiplication on the FP64 pipe.
// docs/mul-notes.md, "DFMA limbs (experiment)", has the SASS counts and the pipe model.
//
// Representation. An element of Fp (L = 8) or Fr (L = 5) is `dfma::elem<F>`: L doubles v[0..L-1],
// each an integer in [0, 2^52) ("52-bit limbs"), value X = sum v[k] * 2^(52k). In Montgomery form
// X = x * R' mod p with R' = 2^(52L) (Fp: 2^416, Fr: 2^260). mont_mul is LAZY: inputs X, Y < 2p give
// an output < 2p (bound below); canon() (one conditional subtraction) makes it < p.
// Conversions: from_u32 / to_u32 (the existing canonical uint32[12] / uint32[8] little-endian form,
// limb by limb, no modular change), to_mont (x -> x R' mod p, via mont_mul by R'^2 mod p) and
// from_mont (X -> X R'^-1 mod p, canonical).
//
// One limb product a*b (a, b integers in [0, 2^52), so 0 <= ab <= (2^52-1)^2 < 2^104 - 2^53) is
// split EXACTLY with three FP64 instructions:
//   hb = fma_rd(a, b, 2^104)  ab + 2^104 lies in [2^104, 2^105), where the double grid is 2^52, so
//                             round-down gives hb = 2^104 + k*2^52 with k = floor(ab / 2^52) < 2^52.
//                             Bits of hb: (1023+104) << 52 | k  =  HB_BIAS + k.
//   x  = (2^104 + 2^52) - hb  = -(k-1)*2^52: |k-1| < 2^52, so exactly representable (the subtraction
//                             is exact; 2^104 + 2^52 is a double: 53 significant bits).
//   lb = fma(a, b, x)         = ab - k*2^52 + 2^52 = lo + 2^52, lo = ab mod 2^52 in [0, 2^52): an
//                             integer in [2^52, 2^53), exact in any rounding mode.
//                             Bits of lb: (1023+52) << 52 | lo  =  LB_BIAS + lo.
// So ab = lo + k*2^52 with lo = bits(lb) - LB_BIAS, k = bits(hb) - HB_BIAS. Round-to-nearest for hb
// would leave lo in [-2^51, 2^51] and need a 4th instruction to re-bias it; DFMA.RM costs the same.
// The bits are added into uint64 column sums c[k] WITHOUT removing the biases; arithmetic is mod 2^64
// and every true column value is < 2^58 (below), so subtracting the total bias of a column once (it is
// a compile-time constant: each column's init value) gives the exact sum. Both biases are multiples
// of 2^52, so c[k] mod 2^52 is right even before the bias is removed (used for m_i).
//
// mont_mul (SOS: full product, then word-by-word reduction in base 2^52):
//   c[i+j] += lo(a_i b_j), c[i+j+1] += hi(a_i b_j)              (L^2 splits)
//   for i < L:  m = c[i] * PINV mod 2^52 (PINV = -p^-1 mod 2^52; integer multiply, FMA pipe)
//               c[i+j] += lo(m p_j) for j >= 1, c[i+j+1] += hi(m p_j) for j >= 0
//               lo(m p_0) = -c[i] mod 2^52 by the choice of m, so it is not computed: the row's carry
//               c[i+1] += ceil(c[i] / 2^52) = (c[i] + 2^52 - 1) >> 52 (c[i] here is the true value).
//   then c[L..2L-1] (carry-propagated into 52-bit limbs) = (T + M p) / R'.
// Bounds:
//   * column sums: column k receives at most L lo parts and L hi parts from a*b, as many from m*p,
//     each part < 2^52, plus one carry c[k-1]/2^52 < 2^6: true c[k] < 4L 2^52 + 2^6 < 2^58 (L = 8).
//     No uint64 overflow of the TRUE value; the biased running sum may wrap (harmless, mod 2^64).
//     (The host build checks c[k] < 2^58 at every carry.)
//   * output: (T + M p)/R' < T/R' + p with M < R'. Inputs < 2p: T < 4p^2, so the output is
//     < p (1 + 4p/R'); 4p/R' < 2^-33 (Fp), < 0.114 (Fr): output < 2p, which fits L limbs
//     (2p < 2^382 < 2^416, 2p < 2^256 < 2^260). The last carry is 0.
//   * inputs must have limbs < 2^52 (normalized) for the split to be exact; all outputs are.
// Denormals never occur (all doubles are 0 or integers >= 1, or the 2^104.. magnitudes), and no
// result depends on FTZ. Every FP op is an explicit intrinsic (no contraction, no fast-math).
//
// Host build: #define CUZK_DFMA_HOST before including. std::fma is correctly rounded (round to
// nearest); fma_rd for the hb step is emulated exactly (see split_hi below). The host must run in
// the default rounding mode (FE_TONEAREST); all other FP ops here are exact in any mode.
#pragma once
#if defined(__CUDACC_RTC__)   // NVRTC (CuPy RawModule): no system headers
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;
#else
#include <cstdint>
#endif

#ifdef CUZK_DFMA_HOST
#include <cmath>
#include <cstring>
#include <stdexcept>
#define DFMA_FN inline
#define DFMA_UNROLL
#define DFMA_CX constexpr
#else
#define DFMA_FN __device__ __forceinline__
#define DFMA_UNROLL _Pragma("unroll")
#define DFMA_CX __host__ __device__ constexpr
#endif

namespace dfma {

constexpr uint64_t MASK52 = (1ull << 52) - 1;
constexpr uint64_t LB_BIAS = 0x4330000000000000ull;   // bits of 2^52   (exponent 1075)
constexpr uint64_t HB_BIAS = 0x4670000000000000ull;   // bits of 2^104  (exponent 1127)
constexpr double TWO52 = 4503599627370496.0;          // 2^52
constexpr double TWO104 = 20282409603651670423947251286016.0;                 // 2^104
constexpr double TWO104_52 = 20282409603651674927546878656512.0;              // 2^104 + 2^52

// ---- primitives ----
DFMA_FN double as_double(uint64_t u) {
#ifdef CUZK_DFMA_HOST
    double d; std::memcpy(&d, &u, 8); return d;
#else
    return __longlong_as_double((long long)u);
#endif
}
DFMA_FN uint64_t as_u64(double d) {
#ifdef CUZK_DFMA_HOST
    uint64_t u; std::memcpy(&u, &d, 8); return u;
#else
    return (uint64_t)__double_as_longlong(d);
#endif
}
DFMA_FN double dsub(double a, double b) {
#ifdef CUZK_DFMA_HOST
    return a - b;
#else
    return __dsub_rn(a, b);
#endif
}
DFMA_FN double dfma_rn(double a, double b, double c) {
#ifdef CUZK_DFMA_HOST
    return std::fma(a, b, c);
#else
    return __fma_rn(a, b, c);
#endif
}
// hb = fma_rd(a, b, 2^104) for a, b integers in [0, 2^52).
DFMA_FN double split_hi(double a, double b) {
#ifdef CUZK_DFMA_HOST
    // Exact emulation of round-down from a round-to-nearest FMA: r = RN(ab + 2^104) is on the 2^52
    // grid in [2^104, 2^105); e = ab + 2^104 - r is an integer with |e| <= 2^51, so both 2^104 - r
    // and fma(a, b, 2^104 - r) are exact. r rounded up iff e < 0; then r - 2^52 >= 2^104 is exact.
    double r = std::fma(a, b, TWO104);
    double e = std::fma(a, b, TWO104 - r);
    return e < 0 ? r - TWO52 : r;
#else
    return __fma_rd(a, b, TWO104);
#endif
}
// x in [0, 2^52) -> the double x (exact): 2^52 + x has bits LB_BIAS | x.
DFMA_FN double u2d(uint64_t x) { return dsub(as_double(x | LB_BIAS), TWO52); }
// double integer in [0, 2^52) -> uint64 (exact): 2^52 + v is exact, its mantissa is v.
DFMA_FN uint64_t d2u(double v) {
#ifdef CUZK_DFMA_HOST
    return as_u64(v + TWO52) & MASK52;
#else
    return as_u64(__dadd_rn(v, TWO52)) & MASK52;
#endif
}

// ---- fields (constants generated with Python big ints; docs/mul-notes.md) ----
struct Fp {
    static constexpr int L = 8, N32 = 12;
    static constexpr uint64_t PINV = 0x3fffcfffcfffdull;   // -p^-1 mod 2^52
    static DFMA_CX uint64_t p(int i) {
        constexpr uint64_t v[8] = {0xeffffffffaaabull, 0xfeb153ffffb9full, 0x6b0f6241eabffull, 0x12bf6730d2a0full,
                                   0x764774b84f385ull, 0x1ba7b6434bacdull, 0x1ea397fe69a4bull, 0x000000001a011ull};
        return v[i];
    }
    static DFMA_CX uint64_t r2(int i) {   // R'^2 mod p, R' = 2^416
        constexpr uint64_t v[8] = {0xa5bf4cb89af51ull, 0x3afbba7ca31a2ull, 0x2646160ec71f1ull, 0xa84d710465903ull,
                                   0x3480a4a188311ull, 0x98e5907ad91f5ull, 0x2075d74507266ull, 0x0000000008746ull};
        return v[i];
    }
};
struct Fr {
    static constexpr int L = 5, N32 = 8;
    static constexpr uint64_t PINV = 0xffffeffffffffull;   // -r^-1 mod 2^52
    static DFMA_CX uint64_t p(int i) {
        constexpr uint64_t v[5] = {0xfffff00000001ull, 0x02fffe5bfefffull, 0x9a1d80553bda4ull, 0x7d483339d8080ull,
                                   0x073eda753299dull};
        return v[i];
    }
    static DFMA_CX uint64_t r2(int i) {   // R'^2 mod r, R' = 2^260
        constexpr uint64_t v[5] = {0x99103f29c6cf0ull, 0x57927663d999eull, 0xa1c0ed631138bull, 0x3c829f7715f1bull,
                                   0x009ff646cc027ull};
        return v[i];
    }
};

template <class F> struct elem { double v[F::L]; };

// Column k's total bias: the number of lo and hi parts mont_mul adds into it (see the header comment;
// the reduction skips lo(m p_0)), times LB_BIAS / HB_BIAS, mod 2^64. The column starts at -bias.
template <class F> DFMA_CX uint64_t col_init(int k) {
    uint64_t nlo = 0, nhi = 0;
    for (int i = 0; i < F::L; i++)
        for (int j = 0; j < F::L; j++) {
            nlo += (i + j == k) + (i + j == k && j > 0);   // a_i b_j, and m_i p_j (j >= 1)
            nhi += 2 * (i + j + 1 == k);                   // a_i b_j, and m_i p_j
        }
    return 0ull - (nlo * LB_BIAS + nhi * HB_BIAS);
}

// ---- conversions between the uint32[N32] canonical form and 52-bit limbs (no modular change) ----
template <class F> DFMA_FN elem<F> from_u32(const uint32_t* w) {
    elem<F> r;
DFMA_UNROLL
    for (int k = 0; k < F::L; k++) {
        const int bit = 52 * k, q = bit / 32, s = bit % 32;   // limb k = bits [52k, 52k+52)
        uint64_t x = (uint64_t)w[q] >> s;
        if (q + 1 < F::N32) x |= (uint64_t)w[q + 1] << (32 - s);
        if (q + 2 < F::N32 && 64 - s < 52) x |= (uint64_t)w[q + 2] << (64 - s);
        r.v[k] = u2d(x & MASK52);
    }
    return r;
}
// Requires X < 2^(32 N32) (true for every X < 2p).
template <class F> DFMA_FN void to_u32(const elem<F>& a, uint32_t* w) {
    uint64_t u[F::L];
DFMA_UNROLL
    for (int k = 0; k < F::L; k++) u[k] = d2u(a.v[k]);
DFMA_UNROLL
    for (int q = 0; q < F::N32; q++) {
        const int bit = 32 * q, k = bit / 52, s = bit % 52;   // word q = bits [32q, 32q+32)
        uint64_t x = u[k] >> s;
        if (s > 20 && k + 1 < F::L) x |= u[k + 1] << (52 - s);
        w[q] = (uint32_t)x;
    }
}

// ---- reduction helpers on normalized uint64 limbs ----
// t in [0, 2p) -> t mod p (< p): one conditional subtraction (signed borrows, arithmetic shifts).
template <class F> DFMA_FN void cond_sub_p(uint64_t* t) {
    uint64_t d[F::L];
    int64_t br = 0;
DFMA_UNROLL
    for (int k = 0; k < F::L; k++) {
        int64_t s = (int64_t)t[k] - (int64_t)F::p(k) + br;
        d[k] = (uint64_t)s & MASK52;
        br = s >> 52;                     // 0 or -1
    }
DFMA_UNROLL
    for (int k = 0; k < F::L; k++) t[k] = br ? t[k] : d[k];   // borrow out: t < p, keep t
}

// ---- integer-limb form: the same 52-bit limbs held as uint64 (value < p). Additions and subtractions
// need no FP64 conversions in this form; a multiplication input goes through to_d (LOP3 + DADD per limb).
// kernels/ntt/dfma.cu keeps its elements this way between multiplications.
template <class F> struct elem_u { uint64_t v[F::L]; };
template <class F> DFMA_FN elem<F> to_d(const elem_u<F>& a) {
    elem<F> r;
DFMA_UNROLL
    for (int k = 0; k < F::L; k++) r.v[k] = u2d(a.v[k]);
    return r;
}

// ---- Montgomery multiplication: X, Y < 2p (limbs < 2^52) -> X Y R'^-1 mod p, < 2p ----
// CANON = true: the output is < p (one conditional subtraction on the integer limbs).
// mont_mul_u: the same, with the output as integer limbs (elem_u); mont_mul converts them to doubles.
template <class F, bool CANON = false> DFMA_FN elem_u<F> mont_mul_u(const elem<F>& a, const elem<F>& b) {
    constexpr int L = F::L;
    uint64_t c[2 * L];
DFMA_UNROLL
    for (int k = 0; k < 2 * L; k++) c[k] = col_init<F>(k);
    // product: L^2 exact splits
DFMA_UNROLL
    for (int i = 0; i < L; i++)
DFMA_UNROLL
        for (int j = 0; j < L; j++) {
            const double hb = split_hi(a.v[i], b.v[j]);
            const double lb = dfma_rn(a.v[i], b.v[j], dsub(TWO104_52, hb));
            c[i + j] += as_u64(lb);
            c[i + j + 1] += as_u64(hb);
        }
    // reduction, one 52-bit word per row
DFMA_UNROLL
    for (int i = 0; i < L; i++) {
        const uint64_t m = (c[i] * F::PINV) & MASK52;          // c[i] mod 2^52 is bias-free
        const double md = u2d(m);
        c[i + 1] += as_u64(split_hi(md, (double)F::p(0)));      // hi(m p_0); lo(m p_0) is implicit
DFMA_UNROLL
        for (int j = 1; j < L; j++) {
            const double pj = (double)F::p(j);                  // exact: p_j < 2^52
            const double hb = split_hi(md, pj);
            const double lb = dfma_rn(md, pj, dsub(TWO104_52, hb));
            c[i + j] += as_u64(lb);
            c[i + j + 1] += as_u64(hb);
        }
        // all parts of column i are in, so c[i] is its true value; c[i] + lo(m p_0) = 2^52 ceil(c[i]/2^52)
#ifdef CUZK_DFMA_HOST
        if (c[i] >> 58) throw std::runtime_error("dfma: column sum >= 2^58");
#endif
        c[i + 1] += (c[i] + MASK52) >> 52;
    }
    // carry-propagate c[L..2L-1] into 52-bit limbs (value < 2p < R': no carry out)
    uint64_t t[L];
DFMA_UNROLL
    for (int k = 0; k < L; k++) {
        const uint64_t s = c[L + k];
#ifdef CUZK_DFMA_HOST
        if (s >> 58) throw std::runtime_error("dfma: column sum >= 2^58");
#endif
        t[k] = s & MASK52;
        if (k + 1 < L) c[L + k + 1] += s >> 52;
#ifdef CUZK_DFMA_HOST
        else if (s >> 52) throw std::runtime_error("dfma: carry out of the top limb");
#endif
    }
    if (CANON) cond_sub_p<F>(t);
    elem_u<F> r;
DFMA_UNROLL
    for (int k = 0; k < L; k++) r.v[k] = t[k];
    return r;
}
template <class F, bool CANON = false> DFMA_FN elem<F> mont_mul(const elem<F>& a, const elem<F>& b) {
    return to_d<F>(mont_mul_u<F, CANON>(a, b));
}

// X < 2p -> X mod p
template <class F> DFMA_FN elem<F> canon(const elem<F>& a) {
    elem_u<F> t;
DFMA_UNROLL
    for (int k = 0; k < F::L; k++) t.v[k] = d2u(a.v[k]);
    cond_sub_p<F>(t.v);
    return to_d<F>(t);
}

// a, b < p -> (a + b) mod p, (a - b) mod p (canonical in, canonical out; integer limbs)
template <class F> DFMA_FN elem<F> add(const elem<F>& a, const elem<F>& b) {
    elem_u<F> t;
    uint64_t cy = 0;
DFMA_UNROLL
    for (int k = 0; k < F::L; k++) {
        const uint64_t s = d2u(a.v[k]) + d2u(b.v[k]) + cy;
        t.v[k] = s & MASK52;
        cy = s >> 52;
    }
    // a + b < 2p < R': no carry out of the top limb
    cond_sub_p<F>(t.v);
    return to_d<F>(t);
}
template <class F> DFMA_FN elem<F> sub(const elem<F>& a, const elem<F>& b) {
    elem_u<F> t;
    int64_t br = 0;
DFMA_UNROLL
    for (int k = 0; k < F::L; k++) {
        const int64_t s = (int64_t)d2u(a.v[k]) - (int64_t)d2u(b.v[k]) + br;
        t.v[k] = (uint64_t)s & MASK52;
        br = s >> 52;
    }
    if (br) {   // a < b: add p back (the sum wraps past 2^(52L) exactly once)
        uint64_t cy = 0;
DFMA_UNROLL
        for (int k = 0; k < F::L; k++) {
            const uint64_t s = t.v[k] + F::p(k) + cy;
            t.v[k] = s & MASK52;
            cy = s >> 52;
        }
    }
    return to_d<F>(t);
}

// x < 2^(32 N32) (any from_u32 value) -> x R' mod p, < 2p (lazy): T < 2^(32 N32) p, T/R' < p/16
template <class F> DFMA_FN elem<F> to_mont(const elem<F>& a) {
    elem<F> r2;
DFMA_UNROLL
    for (int k = 0; k < F::L; k++) r2.v[k] = (double)F::r2(k);
    return mont_mul<F>(a, r2);
}
// X < 2p -> X R'^-1 mod p, canonical (< p)
template <class F> DFMA_FN elem<F> from_mont(const elem<F>& a) {
    elem<F> one;
DFMA_UNROLL
    for (int k = 0; k < F::L; k++) one.v[k] = k == 0 ? 1.0 : 0.0;
    return mont_mul<F, true>(a, one);
}

// ---- integer-limb helpers (elem_u) ----
// uint32[N32] (little-endian words, value < 2^(32 N32)) -> 52-bit integer limbs (no modular change)
template <class F> DFMA_FN elem_u<F> from_u32_u(const uint32_t* w) {
    elem_u<F> r;
DFMA_UNROLL
    for (int k = 0; k < F::L; k++) {
        const int bit = 52 * k, q = bit / 32, s = bit % 32;
        uint64_t x = (uint64_t)w[q] >> s;
        if (q + 1 < F::N32) x |= (uint64_t)w[q + 1] << (32 - s);
        if (q + 2 < F::N32 && 64 - s < 52) x |= (uint64_t)w[q + 2] << (64 - s);
        r.v[k] = x & MASK52;
    }
    return r;
}
// normalized limbs of X < 2^(32 N32) -> uint32[N32]
template <class F> DFMA_FN void to_u32_u(const elem_u<F>& a, uint32_t* w) {
DFMA_UNROLL
    for (int q = 0; q < F::N32; q++) {
        const int bit = 32 * q, k = bit / 52, s = bit % 52;
        uint64_t x = a.v[k] >> s;
        if (s > 20 && k + 1 < F::L) x |= a.v[k + 1] << (52 - s);
        w[q] = (uint32_t)x;
    }
}
// a, b < p -> (a + b) mod p, (a - b) mod p, canonical; integer only, no branches
template <class F> DFMA_FN elem_u<F> add_u(const elem_u<F>& a, const elem_u<F>& b) {
    elem_u<F> r;
    uint64_t cy = 0;
DFMA_UNROLL
    for (int k = 0; k < F::L; k++) {
        const uint64_t s = a.v[k] + b.v[k] + cy;
        r.v[k] = s & MASK52;
        cy = s >> 52;
    }
    cond_sub_p<F>(r.v);   // a + b < 2p < 2^(52L): no carry out of the top limb
    return r;
}
template <class F> DFMA_FN elem_u<F> sub_u(const elem_u<F>& a, const elem_u<F>& b) {
    elem_u<F> r;
    int64_t br = 0;
DFMA_UNROLL
    for (int k = 0; k < F::L; k++) {
        const int64_t s = (int64_t)a.v[k] - (int64_t)b.v[k] + br;
        r.v[k] = (uint64_t)s & MASK52;
        br = s >> 52;                     // 0 or -1
    }
    const uint64_t msk = (uint64_t)br;    // a < b: add p back (wraps past 2^(52L) once; dropped)
    uint64_t cy = 0;
DFMA_UNROLL
    for (int k = 0; k < F::L; k++) {
        const uint64_t s = r.v[k] + (F::p(k) & msk) + cy;
        r.v[k] = s & MASK52;
        cy = s >> 52;
    }
    return r;
}

}  // namespace dfma
