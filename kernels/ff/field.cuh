// Fp (12 limbs), Fr (8 limbs) and Fp2 in Montgomery form on 32-bit limbs.
// Multiplication is CIOS with PTX carry chains (mad.lo.cc / madc.hi.cc); every
// chain is a run of `asm volatile` statements, so the compiler keeps their order.
#pragma once
#include "ff/layout.cuh"
#include "ff/inverse.cuh"

#include "ff/mul.cuh"
#ifndef CUZK_FASTSQR
#define CUZK_FASTSQR 0   // 1: mont_t::sqr by fastmul::mont_sqr (optimization S1, loader.BUILDS)
#endif

namespace cuzk {

struct fp_params {
    static constexpr int N = CUZK_FP_LIMBS;
    static constexpr uint32_t INV = FP_INV32;
    __device__ __forceinline__ static constexpr uint32_t mod(int i) { return fp_mod(i); }
    __device__ __forceinline__ static constexpr uint32_t one(int i) { return fp_one(i); }
    __device__ __forceinline__ static constexpr uint32_t r2(int i) { return fp_r2(i); }
    __device__ __forceinline__ static constexpr uint32_t pm2(int i) { return fp_pm2(i); }
};

struct fr_params {
    static constexpr int N = CUZK_FR_LIMBS;
    static constexpr uint32_t INV = FR_INV32;
    __device__ __forceinline__ static constexpr uint32_t mod(int i) { return fr_mod(i); }
    __device__ __forceinline__ static constexpr uint32_t one(int i) { return fr_one(i); }
    __device__ __forceinline__ static constexpr uint32_t r2(int i) { return fr_r2(i); }
    __device__ __forceinline__ static constexpr uint32_t pm2(int i) { return fr_pm2(i); }
};

template <class P>
struct mont_t {
    static constexpr int N = P::N;
    uint32_t v[N];

    __device__ __forceinline__ static mont_t zero() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }
    __device__ __forceinline__ static mont_t one() {
        mont_t r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = P::one(i);
        return r;
    }
    __device__ __forceinline__ static mont_t load(const uint32_t* p) {
        mont_t r;
        if (N % 4 == 0) {
            const uint4* q = reinterpret_cast<const uint4*>(p);
#pragma unroll
            for (int i = 0; i < N / 4; i++) {
                uint4 w = q[i];
                r.v[4 * i] = w.x; r.v[4 * i + 1] = w.y; r.v[4 * i + 2] = w.z; r.v[4 * i + 3] = w.w;
            }
        } else {
#pragma unroll
            for (int i = 0; i < N; i++) r.v[i] = p[i];
        }
        return r;
    }
    __device__ __forceinline__ void store(uint32_t* p) const {
        if (N % 4 == 0) {
            uint4* q = reinterpret_cast<uint4*>(p);
#pragma unroll
            for (int i = 0; i < N / 4; i++) q[i] = make_uint4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]);
        } else {
#pragma unroll
            for (int i = 0; i < N; i++) p[i] = v[i];
        }
    }
    __device__ __forceinline__ bool is_zero() const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }
    __device__ __forceinline__ bool operator==(const mont_t& o) const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i] ^ o.v[i];
        return acc == 0;
    }

    // r = t - p if t >= p else t, for t < 2p held in N limbs plus a top word `hi`.
    __device__ __forceinline__ static mont_t reduce_once(const uint32_t* t, uint32_t hi) {
        uint32_t s[N], borrow;
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(s[0]) : "r"(t[0]), "r"(P::mod(0)));
#pragma unroll
        for (int j = 1; j < N; j++) asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(s[j]) : "r"(t[j]), "r"(P::mod(j)));
        asm volatile("subc.u32 %0, %1, 0;" : "=r"(borrow) : "r"(hi));
        mont_t r;
#pragma unroll
        for (int j = 0; j < N; j++) r.v[j] = borrow ? t[j] : s[j];
        return r;
    }

    __device__ __forceinline__ friend mont_t operator+(const mont_t& a, const mont_t& b) {
        uint32_t t[N], hi;
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
        for (int j = 1; j < N; j++) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(t[j]) : "r"(a.v[j]), "r"(b.v[j]));
        asm volatile("addc.u32 %0, 0, 0;" : "=r"(hi));
        return reduce_once(t, hi);
    }

    __device__ __forceinline__ friend mont_t operator-(const mont_t& a, const mont_t& b) {
        uint32_t t[N], borrow;
        asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(t[0]) : "r"(a.v[0]), "r"(b.v[0]));
#pragma unroll
        for (int j = 1; j < N; j++) asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(t[j]) : "r"(a.v[j]), "r"(b.v[j]));
        asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));
        // add p back when it went negative: p & borrow-mask
        mont_t r;
        asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(t[0]), "r"(P::mod(0) & borrow));
#pragma unroll
        for (int j = 1; j < N; j++)
            asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r.v[j]) : "r"(t[j]), "r"(P::mod(j) & borrow));
        return r;
    }

    __device__ __forceinline__ mont_t operator-() const { return zero() - *this; }

    // CIOS Montgomery product (fastmul::mont_mul, ff/mul.cuh): for each limb b_i, t += a*b_i, then
    // t = (t + m*p) / 2^32 with m = t_0 * (-p^-1).
    __device__ __forceinline__ friend mont_t operator*(const mont_t& a, const mont_t& b) {
        mont_t r;
        fastmul::mont_mul<P>(r.v, a.v, b.v);
        return r;
    }

    // a * b left < 2p (optimization L1): only for values that go on into products (any product accepts
    // inputs < 2p); Fp only (4p < 2^(32N)). Compare, add or store it as a field element only after a product.
    __device__ __forceinline__ friend mont_t mul_lazy(const mont_t& a, const mont_t& b) {
        static_assert(N == 12, "lazy products need 4p < 2^(32N): Fp only");
        mont_t r;
        fastmul::mont_mul<P, false>(r.v, a.v, b.v);
        return r;
    }

    // CUZK_FASTSQR=1 (optimization S1): fastmul::mont_sqr, a squaring with (N^2 + N) / 2 products
    __device__ __forceinline__ mont_t sqr() const {
#if CUZK_FASTSQR
        mont_t r;
        fastmul::mont_sqr<P>(r.v, v);
        return r;
#else
        return *this * *this;
#endif
    }

    __device__ __forceinline__ mont_t& operator*=(const mont_t& o) { return *this = *this * o; }
    __device__ __forceinline__ mont_t& operator+=(const mont_t& o) { return *this = *this + o; }
    __device__ __forceinline__ mont_t& operator-=(const mont_t& o) { return *this = *this - o; }

    // a^(p-2) by left-to-right square and multiply; inverse of 0 is 0.
    __device__ __noinline__ mont_t inverse() const {
        mont_t r = one();
        for (int i = N - 1; i >= 0; i--) {
            const uint32_t e = P::pm2(i);
            for (int bit = 31; bit >= 0; bit--) {
                r = r.sqr();
                if ((e >> bit) & 1) r = r * *this;
            }
        }
        return r;
    }

    // The same inverse by the binary extended Euclid (ff/inverse.cuh; K15): variable time, ~10x shorter chain.
    // Takes a value < 2p (a lazy product) too.
    __device__ __noinline__ mont_t inverse_binary() const {
        mont_t r;
        binary_inverse<P>(r.v, v);
        return r;
    }

    __device__ __forceinline__ mont_t to_mont() const {
        mont_t r2;
#pragma unroll
        for (int i = 0; i < N; i++) r2.v[i] = P::r2(i);
        return *this * r2;
    }
    __device__ __forceinline__ mont_t from_mont() const {
        mont_t one_plain = zero();
        one_plain.v[0] = 1;
        return *this * one_plain;
    }
};

typedef mont_t<fp_params> fp_t;
typedef mont_t<fr_params> fr_t;

// Fp2 = Fp[u] / (u^2 + 1)
struct fp2_t {
    fp_t c0, c1;
    __device__ __forceinline__ static fp2_t load(const uint32_t* p) {
        fp2_t r;
        r.c0 = fp_t::load(p);
        r.c1 = fp_t::load(p + CUZK_FP_LIMBS);
        return r;
    }
    __device__ __forceinline__ void store(uint32_t* p) const {
        c0.store(p);
        c1.store(p + CUZK_FP_LIMBS);
    }
    __device__ __forceinline__ friend fp2_t operator+(const fp2_t& a, const fp2_t& b) { return {a.c0 + b.c0, a.c1 + b.c1}; }
    __device__ __forceinline__ friend fp2_t operator-(const fp2_t& a, const fp2_t& b) { return {a.c0 - b.c0, a.c1 - b.c1}; }
    __device__ __forceinline__ friend fp2_t operator*(const fp2_t& a, const fp2_t& b) {
        // Karatsuba: 3 Fp multiplications
        fp_t t0 = a.c0 * b.c0, t1 = a.c1 * b.c1;
        fp_t t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
        return {t0 - t1, t2 - t0 - t1};
    }
    // (c0 + c1)(c0 - c1) + 2 c0 c1 u, over the Fp product mul (ec/curve.cuh's I1 passes a called one)
    template <class Mul>
    __device__ __forceinline__ fp2_t sqr_by(Mul mul) const {
        fp_t m = mul(c0, c1);
        return {mul(c0 + c1, c0 - c1), m + m};
    }
    __device__ __forceinline__ fp2_t sqr() const {
        return sqr_by([](const fp_t& a, const fp_t& b) { return a * b; });
    }
    __device__ __forceinline__ fp2_t inverse() const {
        // 1 / (c0 + c1 u) = (c0 - c1 u) / (c0^2 + c1^2)
        fp_t d = (c0.sqr() + c1.sqr()).inverse();
        return {c0 * d, -(c1 * d)};
    }
    __device__ __forceinline__ fp2_t inverse_binary() const {
        fp_t d = (c0.sqr() + c1.sqr()).inverse_binary();
        return {c0 * d, -(c1 * d)};
    }
};

}  // namespace cuzk
