// The fr_t element policy of the register-radix NTT pass (ntt_reg.cuh): fr_t in registers and shared
// memory (32 B an element), its products by Mul::mul(a, b, m) (m: the element's index in its group, a
// constant after unrolling). ntt_reg.cu uses fr_t's own product (r4, r8); ntt_split.cu picks a multiplier
// per m (r4x).
//
// Builds of ntt_reg (loader.BUILDS), on fastmul build 6 for Fr only:
//   CUZK_NTT_DIF2 (N4): the DIF butterfly in two modular ops.
//   CUZK_NTT_TW52 (N7): every twiddle table entry (tw_small, tw1, tw_lo, tw_hi) held as 5 doubles, the 52-bit
//     limbs build 6 converts to (10 words an entry): no conversion of the twiddle in a product.
#pragma once
#include "field.cuh"
#include "ntt_reg.cuh"

#if CUZK_NTT_TW52 && CUZK_FASTMUL_VARIANT_FR != 6
#error "CUZK_NTT_TW52 needs fastmul build 6 for Fr (CUZK_FASTMUL_VARIANT_FR=6)"
#endif

#if CUZK_NTT_TW52
using TwFr = dfma::elem<dfma::Fr>;
#define NTT_TWW 10
__device__ __forceinline__ TwFr load_tw52(const uint32_t* p) {
    const double* q = reinterpret_cast<const double*>(p);
    TwFr r;
#pragma unroll
    for (int k = 0; k < 5; k++) r.v[k] = q[k];
    return r;
}
#else
#define NTT_TWW FR_W
#endif

struct FrProduct {               // fr_t's operator* (fastmul, the build's variant)
    static __device__ __forceinline__ cuzk::fr_t mul(const cuzk::fr_t& a, const cuzk::fr_t& b, int) {
#if CUZK_EXP_NTT_CHEAP_MUL       // timing experiment only (wrong output): an add for every product
        return a + b;
#else
        return a * b;
#endif
    }
#if CUZK_NTT_TW52                // N7: a twiddle operand already in 52-bit limbs (one, or both)
    static __device__ __forceinline__ cuzk::fr_t mul(const cuzk::fr_t& a, const TwFr& w, int) {
        cuzk::fr_t r;
        cuzk::fastmul::mont_mul_dfma_e<cuzk::fr_params>(r.v, dfma::from_u32<dfma::Fr>(a.v), w);
        return r;
    }
    static __device__ __forceinline__ cuzk::fr_t mul(const TwFr& a, const TwFr& b, int) {
        cuzk::fr_t r;
        cuzk::fastmul::mont_mul_dfma_e<cuzk::fr_params>(r.v, a, b);
        return r;
    }
#endif
};

template <class Mul = FrProduct>
struct FrPolicy {
    using T = cuzk::fr_t;
    using S = uint32_t;
    static constexpr int SMW = FR_W;
    static constexpr int TWW = NTT_TWW;
    static __device__ __forceinline__ T load(const uint32_t* p) { return T::load(p); }
    static __device__ __forceinline__ void store(const T& x, uint32_t* p) { x.store(p); }
    static __device__ __forceinline__ S word(const T& x, int w) { return x.v[w]; }
    static __device__ __forceinline__ void set_word(T& x, int w, S v) { x.v[w] = v; }
#if CUZK_NTT_TW52
    static __device__ __forceinline__ TwFr tw(const uint32_t* p) { return load_tw52(p); }
#else
    static __device__ __forceinline__ T tw(const uint32_t* p) { return T::load(p); }
#endif
    // w_N^(e_sub << shift), e_sub < 2^log_sub, in the twiddle form. tw_mode 2: tw1[e_sub << tw1_shift] (one
    // load); tw_mode 1: tw_hi[e >> bits] * tw_lo[e & mask] (one multiplication, by Mul with index m ^ 1).
    static __device__ __forceinline__ auto outer_tw(unsigned e_sub, int tw_mode, int shift, const uint32_t* tw_lo,
                                                    const uint32_t* tw_hi, int bits, const uint32_t* tw1,
                                                    int tw1_shift, int m) -> decltype(tw(tw1)) {
        if (tw_mode == 2) return tw(tw1 + ((unsigned long long)e_sub << tw1_shift) * TWW);
        const unsigned long long e = (unsigned long long)e_sub << shift, mask = (1ull << bits) - 1;
        const T t = Mul::mul(tw(tw_hi + (e >> bits) * TWW), tw(tw_lo + (e & mask) * TWW), m ^ 1);
#if CUZK_NTT_TW52
        return dfma::from_u32<dfma::Fr>(t.v);
#else
        return t;
#endif
    }
    // x times its 4-step twiddle: one call site of the product (it is inlined: ~420 instructions)
    static __device__ __forceinline__ T outer(const T& x, unsigned e_sub, int tw_mode, int shift, const uint32_t* tw_lo,
                                              const uint32_t* tw_hi, int bits, const uint32_t* tw1, int tw1_shift,
                                              int m) {
        return Mul::mul(x, outer_tw(e_sub, tw_mode, shift, tw_lo, tw_hi, bits, tw1, tw1_shift, m), m);
    }
    static __device__ __forceinline__ void dit(T& a, T& b, bool one, const uint32_t* wp, int m) {
        T y = one ? b : Mul::mul(b, tw(wp), m);
        b = a - y;
        a = a + y;
    }
    static __device__ __forceinline__ void dif(T& a, T& b, bool one, const uint32_t* wp, int m) {
#if CUZK_NTT_DIF2                // two modular ops a butterfly, not three (N4)
        const T d = a - b;
        a = a + b;
        b = d;
#else
        b = a - b;
        a = a + a - b;                  // a + b_old: one more add, but no spills
                                        // at 128 registers (d = a - b; a += b spills)
#endif
        if (!one) b = Mul::mul(b, tw(wp), m);
    }
};
