// Fr values in [0, 2p) (optimization N9). The lazy build of the NTT passes keeps its elements below 2p from
// its loads to the transform's last stores, so that build 6's product skips its final subtraction
// (fastmul::mont_mul<P, false>: one input < 2p, the other < p, output < 2p). 2p < 2^256; a + b < 4p carries
// into a ninth word. The same carry chains as mont_t's + and -, with 2p in place of p.
#pragma once
#include "field.cuh"

namespace cuzk {
namespace lazy {

__device__ __forceinline__ constexpr uint32_t fr_2p(int i) { return (fr_mod(i) << 1) | (i ? fr_mod(i - 1) >> 31 : 0u); }

// (a + b) mod 2p, a, b < 2p
__device__ __forceinline__ fr_t add(const fr_t& a, const fr_t& b) {
    constexpr int N = fr_t::N;
    uint32_t t[N], s[N], hi, borrow;
    CUZK_ASM("add.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
    for (int j = 1; j < N; j++) CUZK_ASM("addc.cc.u32 %0, %1, %2;" : "=r"(t[j]) : "r"(a.v[j]), "r"(b.v[j]));
    CUZK_ASM("addc.u32 %0, 0, 0;" : "=r"(hi));
    CUZK_ASM("sub.cc.u32 %0, %1, %2;" : "=r"(s[0]) : "r"(t[0]), "r"(fr_2p(0)));
#pragma unroll
    for (int j = 1; j < N; j++) CUZK_ASM("subc.cc.u32 %0, %1, %2;" : "=r"(s[j]) : "r"(t[j]), "r"(fr_2p(j)));
    CUZK_ASM("subc.u32 %0, %1, 0;" : "=r"(borrow) : "r"(hi));
    fr_t r;
#pragma unroll
    for (int j = 0; j < N; j++) r.v[j] = borrow ? t[j] : s[j];   // borrow: a + b < 2p
    return r;
}

// (a - b) mod 2p, a, b < 2p
__device__ __forceinline__ fr_t sub(const fr_t& a, const fr_t& b) {
    constexpr int N = fr_t::N;
    uint32_t t[N], borrow;
    CUZK_ASM("sub.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
    for (int j = 1; j < N; j++) CUZK_ASM("subc.cc.u32 %0, %1, %2;" : "=r"(t[j]) : "r"(a.v[j]), "r"(b.v[j]));
    CUZK_ASM("subc.u32 %0, 0, 0;" : "=r"(borrow));
    fr_t r;                                   // a < b: add 2p back (wraps past 2^256 once)
    CUZK_ASM("add.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(t[0]), "r"(fr_2p(0) & borrow));
#pragma unroll
    for (int j = 1; j < N; j++) CUZK_ASM("addc.cc.u32 %0, %1, %2;" : "=r"(r.v[j]) : "r"(t[j]), "r"(fr_2p(j) & borrow));
    return r;
}

// a < 2p -> a mod p
__device__ __forceinline__ fr_t canon(const fr_t& a) { return fr_t::reduce_once(a.v, 0); }

#if CUZK_FASTMUL_VARIANT_FR == 6   // its bound: one input < p (the integer builds need both < p for Fr)
// a * b R^-1, a < 2p, b < p -> < 2p
__device__ __forceinline__ fr_t mul(const fr_t& a, const fr_t& b) {
    fr_t r;
    fastmul::mont_mul<fr_params, false>(r.v, a.v, b.v);
    return r;
}
#endif

}  // namespace lazy
}  // namespace cuzk
