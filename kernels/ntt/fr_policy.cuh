// The fr_t element policy of the register-radix NTT pass (ntt/reg.cuh): fr_t in registers and shared
// memory (32 B an element), its products by Mul::mul(a, b, m) (m: the element's index in its group, a
// constant after unrolling: a multiplier may depend on it). ntt/reg.cu uses fr_t's own product (r4, r8).
#pragma once
#include "ff/field.cuh"
#include "ntt/reg.cuh"
#ifndef CUZK_NTT_LAZY_SUB         // N11: a DIF difference that goes into a product is left a - b + p (< 2p)
#define CUZK_NTT_LAZY_SUB 0
#endif
#if CUZK_NTT_LAZY_SUB && (CUZK_FASTMUL_VARIANT_FR != 6 || !CUZK_NTT_DIF2)
#error "CUZK_NTT_LAZY_SUB needs fastmul build 6 for Fr (its product takes one input < 2p) and CUZK_NTT_DIF2"
#endif

struct FrProduct {               // fr_t's operator* (fastmul, the build's variant)
    static __device__ __forceinline__ cuzk::fr_t mul(const cuzk::fr_t& a, const cuzk::fr_t& b, int) {
        return a * b;
    }
};

template <class A, class B> struct ntt_same { static constexpr bool value = false; };
template <class A> struct ntt_same<A, A> { static constexpr bool value = true; };

template <class Mul = FrProduct>
struct FrPolicy {
    using T = cuzk::fr_t;
    // N15 (NTT_LAZY0): only build 6's own product takes an input < 2p
    static constexpr bool LAZY_OUTER = CUZK_FASTMUL_VARIANT_FR == 6 && ntt_same<Mul, FrProduct>::value;
    using S = uint32_t;
    static constexpr int SMW = FR_W;
    static __device__ __forceinline__ T load(const uint32_t* p) { return T::load(p); }
    static __device__ __forceinline__ void store(const T& x, uint32_t* p) { x.store(p); }
    // CUZK_NTT_SM128 (ntt/reg.cuh): the element as two 16-byte units, in planes 0 and 1 of E units each
    static constexpr bool VEC4 = true;
    static __device__ __forceinline__ void put4(const T& x, uint4* sm4, int E, int ph) {
        sm4[ph] = make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]);
        sm4[E + ph] = make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]);
    }
    static __device__ __forceinline__ void get4(T& x, const uint4* sm4, int E, int ph) {
        const uint4 lo = sm4[ph], hi = sm4[E + ph];
        x.v[0] = lo.x; x.v[1] = lo.y; x.v[2] = lo.z; x.v[3] = lo.w;
        x.v[4] = hi.x; x.v[5] = hi.y; x.v[6] = hi.z; x.v[7] = hi.w;
    }
    static __device__ __forceinline__ S word(const T& x, int w) { return x.v[w]; }
    static __device__ __forceinline__ void set_word(T& x, int w, S v) { x.v[w] = v; }
    // w_N^(e_sub << shift), e_sub < 2^log_sub. tw_mode 2: tw1[e_sub << tw1_shift] (one load);
    // tw_mode 1: tw_hi[e >> bits] * tw_lo[e & mask] (one multiplication, by Mul with index m ^ 1).
    static __device__ __forceinline__ T outer_tw(unsigned e_sub, int tw_mode, int shift, const uint32_t* tw_lo,
                                                 const uint32_t* tw_hi, int bits, const uint32_t* tw1, int tw1_shift,
                                                 int m) {
        if (tw_mode == 2) return T::load(tw1 + ((unsigned long long)e_sub << tw1_shift) * FR_W);
        const unsigned long long e = (unsigned long long)e_sub << shift, mask = (1ull << bits) - 1;
        return Mul::mul(T::load(tw_hi + (e >> bits) * FR_W), T::load(tw_lo + (e & mask) * FR_W), m ^ 1);
    }
    static __device__ __forceinline__ T outer(const T& x, unsigned e_sub, int tw_mode, int shift, const uint32_t* tw_lo,
                                              const uint32_t* tw_hi, int bits, const uint32_t* tw1, int tw1_shift,
                                              int m) {
        return Mul::mul(x, outer_tw(e_sub, tw_mode, shift, tw_lo, tw_hi, bits, tw1, tw1_shift, m), m);
    }
    static __device__ __forceinline__ void dit(T& a, T& b, bool one, const uint32_t* wp, int m) {
        T y = one ? b : Mul::mul(b, T::load(wp), m);
        b = a - y;
        a = a + y;
    }
    // a - b + p for a, b < p: in (0, 2p), no borrow test (16 carry-chain steps against the reduced 25)
    static __device__ __forceinline__ T sub_plus_p(const T& a, const T& b) {
        uint32_t t[FR_W];
        T r;
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
        for (int j = 1; j < FR_W; j++) asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(t[j]) : "r"(a.v[j]), "r"(b.v[j]));
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(t[0]), "r"(cuzk::fr_mod(0)));
#pragma unroll
        for (int j = 1; j < FR_W - 1; j++)
            asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r.v[j]) : "r"(t[j]), "r"(cuzk::fr_mod(j)));
        asm volatile("addc.u32 %0, %1, %2;" : "=r"(r.v[FR_W - 1]) : "r"(t[FR_W - 1]), "r"(cuzk::fr_mod(FR_W - 1)));
        return r;
    }
    // N15: a + b (< 2p < 2^256, no carry out) and a - b + p, for build 6's product (one input < 2p)
    static __device__ __forceinline__ void dif_lazy(T& a, T& b) {
        const T d = sub_plus_p(a, b);
        asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(a.v[0]) : "r"(b.v[0]));
#pragma unroll
        for (int j = 1; j < FR_W - 1; j++) asm volatile("addc.cc.u32 %0, %0, %1;" : "+r"(a.v[j]) : "r"(b.v[j]));
        asm volatile("addc.u32 %0, %0, %1;" : "+r"(a.v[FR_W - 1]) : "r"(b.v[FR_W - 1]));
        b = d;
    }
    static __device__ __forceinline__ void dif(T& a, T& b, bool one, const uint32_t* wp, int m) {
#if CUZK_NTT_LAZY_SUB            // N11: the product (build 6) takes the difference below 2p; w = 1 keeps it reduced
        if (!one) {
            const T d = sub_plus_p(a, b);
            a = a + b;
            b = Mul::mul(d, T::load(wp), m);
            return;
        }
#endif
#if CUZK_NTT_DIF2                // two modular ops a butterfly, not three (N4: the ntt_reg build r4b6d)
        const T d = a - b;
        a = a + b;
        b = d;
#else
        b = a - b;
        a = a + a - b;                  // a + b_old: one more add, but no spills
                                        // at 128 registers (d = a - b; a += b spills)
#endif
        if (!one) b = Mul::mul(b, T::load(wp), m);
    }
};
