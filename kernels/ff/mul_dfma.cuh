// The FP64-pipe primitives of fastmul build 6 (ff/mul.cuh, mont_mul_dfma): 52-bit limbs held as doubles
// and the exact split of a limb product by DFMA. docs/field-mul.md has the SASS counts.
//
// Representation. `dfma::elem<F>` holds L doubles v[0..L-1] (Fp: L = 8, Fr: L = 5), each an integer in
// [0, 2^52) ("52-bit limbs"), value X = sum v[k] * 2^(52k); from_u32 regroups the canonical uint32[12] /
// uint32[8] little-endian form into them, limb by limb, with no modular change.
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
// The bits are added into uint64 column sums WITHOUT removing the biases; arithmetic is mod 2^64 and every
// true column value stays small (mont_mul_dfma's bounds), so subtracting the total bias of a column once (a
// compile-time constant: each column's init value) gives the exact sum. Both biases are multiples of 2^52,
// so a column mod 2^52 is right even before the bias is removed.
// Denormals never occur (all doubles are 0 or integers >= 1, or the 2^104.. magnitudes), and no
// result depends on FTZ. Every FP op is an explicit intrinsic (no contraction, no fast-math).
#pragma once
#if defined(__CUDACC_RTC__)   // NVRTC (CuPy RawModule): no system headers
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;
#else
#include <cstdint>
#endif

#define DFMA_FN __device__ __forceinline__
#define DFMA_UNROLL _Pragma("unroll")
#define DFMA_CX __host__ __device__ constexpr

namespace dfma {

constexpr uint64_t MASK52 = (1ull << 52) - 1;
constexpr uint64_t LB_BIAS = 0x4330000000000000ull;   // bits of 2^52   (exponent 1075)
constexpr uint64_t HB_BIAS = 0x4670000000000000ull;   // bits of 2^104  (exponent 1127)
constexpr double TWO52 = 4503599627370496.0;          // 2^52
constexpr double TWO104 = 20282409603651670423947251286016.0;                 // 2^104
constexpr double TWO104_52 = 20282409603651674927546878656512.0;              // 2^104 + 2^52

// ---- primitives ----
DFMA_FN double as_double(uint64_t u) { return __longlong_as_double((long long)u); }
DFMA_FN uint64_t as_u64(double d) { return (uint64_t)__double_as_longlong(d); }
DFMA_FN double dsub(double a, double b) { return __dsub_rn(a, b); }
DFMA_FN double dfma_rn(double a, double b, double c) { return __fma_rn(a, b, c); }
// hb = fma_rd(a, b, 2^104) for a, b integers in [0, 2^52).
DFMA_FN double split_hi(double a, double b) { return __fma_rd(a, b, TWO104); }
// x in [0, 2^52) -> the double x (exact): 2^52 + x has bits LB_BIAS | x.
DFMA_FN double u2d(uint64_t x) { return dsub(as_double(x | LB_BIAS), TWO52); }

// ---- fields (constants computed with Python big ints) ----
struct Fp {
    static constexpr int L = 8, N32 = 12;
    static constexpr uint64_t PINV = 0x3fffcfffcfffdull;   // -p^-1 mod 2^52
    static DFMA_CX uint64_t p(int i) {
        constexpr uint64_t v[8] = {0xeffffffffaaabull, 0xfeb153ffffb9full, 0x6b0f6241eabffull, 0x12bf6730d2a0full,
                                   0x764774b84f385ull, 0x1ba7b6434bacdull, 0x1ea397fe69a4bull, 0x000000001a011ull};
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
};

template <class F> struct elem { double v[F::L]; };

// uint32[N32] (little-endian words, value < 2^(32 N32)) -> 52-bit limbs as doubles (no modular change)
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
}  // namespace dfma
