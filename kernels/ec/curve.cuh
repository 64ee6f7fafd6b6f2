// Short Weierstrass curves with a = 0 over F = fp_t (G1: y^2 = x^3 + 4) or fp2_t
// (G2: y^2 = x^3 + 4(u+1)). b never enters the formulas below.
//
// affine_t: (x, y); the point at infinity is never encoded in it: callers carry a flag.
// xyzz_t:   (X, Y, ZZ, ZZZ) with x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2; infinity is ZZ = 0.
// Formulas: EFD "xyzz" (madd-2008-s, add-2008-s, dbl-2008-s-1, mdbl-2008-s-1), a = 0,
// with the special cases made explicit: an infinite operand, P + P (-> double) and
// P + (-P) (-> infinity).
#pragma once
#include "ff/field.cuh"

namespace cuzk {

// Field helpers that fp2_t lacks, for both field types.
__device__ __forceinline__ bool f_is_zero(const fp_t& a) { return a.is_zero(); }
__device__ __forceinline__ bool f_is_zero(const fp2_t& a) { return a.c0.is_zero() & a.c1.is_zero(); }
__device__ __forceinline__ fp_t f_neg(const fp_t& a) { return fp_t::zero() - a; }
__device__ __forceinline__ fp2_t f_neg(const fp2_t& a) { return {fp_t::zero() - a.c0, fp_t::zero() - a.c1}; }
__device__ __forceinline__ void f_set_zero(fp_t& a) { a = fp_t::zero(); }
__device__ __forceinline__ void f_set_zero(fp2_t& a) { a.c0 = fp_t::zero(); a.c1 = fp_t::zero(); }
__device__ __forceinline__ void f_set_one(fp_t& a) { a = fp_t::one(); }
__device__ __forceinline__ void f_set_one(fp2_t& a) { a.c0 = fp_t::one(); a.c1 = fp_t::zero(); }
// Field products. Fp2 uses a Karatsuba ordered for few live values (the cross term first): G2 state is
// 96 registers per XYZZ point, so every register counts. mul: the Fp product (operator* inlined, or I1's
// called one below).
template <class Mul>
__device__ __forceinline__ fp2_t fp2_mul_lowreg(const fp2_t& a, const fp2_t& b, Mul mul) {
    fp_t t2 = mul(a.c0 + a.c1, b.c0 + b.c1);
    const fp_t t0 = mul(a.c0, b.c0);
    t2 = t2 - t0;
    const fp_t t1 = mul(a.c1, b.c1);
    return {t0 - t1, t2 - t1};
}
#ifndef CUZK_FP_CALL
#define CUZK_FP_CALL 0   // 1 (optimization I1): the curve code's Fp products are called, not inlined
#endif
#if CUZK_FP_CALL
// I1: one copy of the product in the kernel's code. Inlined, every product is ~900 instructions and a
// kernel's loop is 70-300 KB, more than the instruction caches hold; called, the loop is a few KB around
// two callees (the lazy product, the squaring). The full product is the lazy call plus the final
// subtraction inline: the same words as fp_t's operator*.
__device__ __noinline__ fp_t fp_mul_lazy_call(const fp_t a, const fp_t b) { return mul_lazy(a, b); }
__device__ __forceinline__ fp_t fp_mul_call(const fp_t& a, const fp_t& b) {
    fp_t r = fp_mul_lazy_call(a, b);
    fastmul::sub_p_once<fp_params>(r.v, r.v);
    return r;
}
// The squaring keeps its own callee: squaring through the product's call (one callee) measured slower
// (2^26 G1 MSM 498.3 against 487.6 ms, docs/perf-log.md, 2026-11-30).
__device__ __noinline__ fp_t fp_sqr_call(const fp_t a) { return a.sqr(); }
__device__ __forceinline__ fp_t f_mul(const fp_t& a, const fp_t& b) { return fp_mul_call(a, b); }
__device__ __forceinline__ fp_t f_mul_lazy(const fp_t& a, const fp_t& b) { return fp_mul_lazy_call(a, b); }
__device__ __forceinline__ fp_t f_sqr(const fp_t& a) { return fp_sqr_call(a); }
__device__ __forceinline__ fp2_t f_mul(const fp2_t& a, const fp2_t& b) {
    return fp2_mul_lowreg(a, b, [](const fp_t& x, const fp_t& y) { return fp_mul_call(x, y); });
}
__device__ __forceinline__ fp2_t f_sqr(const fp2_t& a) {
    return a.sqr_by([](const fp_t& x, const fp_t& y) { return fp_mul_call(x, y); });
}
#else
__device__ __forceinline__ fp_t f_mul(const fp_t& a, const fp_t& b) { return a * b; }
// L1: a product left < 2p, for operands of further products only (Fp; Fp2 reduces as usual)
__device__ __forceinline__ fp_t f_mul_lazy(const fp_t& a, const fp_t& b) { return mul_lazy(a, b); }
__device__ __forceinline__ fp_t f_sqr(const fp_t& a) { return a.sqr(); }
__device__ __forceinline__ fp2_t f_mul(const fp2_t& a, const fp2_t& b) {
    return fp2_mul_lowreg(a, b, [](const fp_t& x, const fp_t& y) { return x * y; });
}
__device__ __forceinline__ fp2_t f_sqr(const fp2_t& a) { return a.sqr(); }
#endif
__device__ __forceinline__ fp2_t f_mul_lazy(const fp2_t& a, const fp2_t& b) { return f_mul(a, b); }
__device__ __forceinline__ fp_t f_inv(const fp_t& a) { return a.inverse(); }
__device__ __forceinline__ fp2_t f_inv(const fp2_t& a) { return a.inverse(); }
// K15: by the binary extended Euclid (ff/inverse.cuh), for the affine rounds' block inverses
__device__ __forceinline__ fp_t f_inv_binary(const fp_t& a) { return a.inverse_binary(); }
__device__ __forceinline__ fp2_t f_inv_binary(const fp2_t& a) { return a.inverse_binary(); }

template <class F>
struct affine_t {
    static constexpr int WORDS = 2 * (int)(sizeof(F) / 4);
    F x, y;
    __device__ __forceinline__ static affine_t load(const uint32_t* p) {
        affine_t r;
        r.x = F::load(p);
        r.y = F::load(p + WORDS / 2);
        return r;
    }
    __device__ __forceinline__ void store(uint32_t* p) const {
        x.store(p);
        y.store(p + WORDS / 2);
    }
    __device__ __forceinline__ affine_t operator-() const { return {x, f_neg(y)}; }
};

template <class F>
struct xyzz_t {
    static constexpr int WORDS = 4 * (int)(sizeof(F) / 4);
    F X, Y, ZZ, ZZZ;

    __device__ __forceinline__ static xyzz_t inf() {
        xyzz_t r;
        f_set_zero(r.X); f_set_zero(r.Y); f_set_zero(r.ZZ); f_set_zero(r.ZZZ);
        return r;
    }
    __device__ __forceinline__ static xyzz_t from_affine(const affine_t<F>& p) {
        xyzz_t r;
        r.X = p.x; r.Y = p.y;
        f_set_one(r.ZZ); f_set_one(r.ZZZ);
        return r;
    }
    __device__ __forceinline__ bool is_inf() const { return f_is_zero(ZZ); }

    __device__ __forceinline__ static xyzz_t load(const uint32_t* p) {
        constexpr int E = WORDS / 4;
        xyzz_t r;
        r.X = F::load(p); r.Y = F::load(p + E); r.ZZ = F::load(p + 2 * E); r.ZZZ = F::load(p + 3 * E);
        return r;
    }
    __device__ __forceinline__ void store(uint32_t* p) const {
        constexpr int E = WORDS / 4;
        X.store(p); Y.store(p + E); ZZ.store(p + 2 * E); ZZZ.store(p + 3 * E);
    }
    __device__ __forceinline__ xyzz_t operator-() const { return {X, f_neg(Y), ZZ, ZZZ}; }

    // 2 * (x, y) for an affine point (mdbl-2008-s-1, a = 0): 4M + 3S. Off the hot path.
    __device__ __noinline__ static xyzz_t dbl_affine(const affine_t<F>& p) {
        const F U = p.y + p.y;
        const F V = f_sqr(U);
        const F W = f_mul(U, V);
        const F S = f_mul(p.x, V);
        const F xx = f_sqr(p.x);
        const F M = xx + xx + xx;
        xyzz_t r;
        r.X = f_sqr(M) - (S + S);
        r.Y = f_mul(M, S - r.X) - f_mul(W, p.y);
        r.ZZ = V;
        r.ZZZ = W;
        return r;
    }

    // 2 * this (dbl-2008-s-1, a = 0): 6M + 3S. Infinity (ZZ = 0) stays infinity: ZZ3 = V * ZZ.
    __device__ __forceinline__ xyzz_t dbl() const {
        const F U = Y + Y;
        const F V = f_sqr(U);
        const F W = f_mul(U, V);
        const F S = f_mul(X, V);
        const F xx = f_sqr(X);
        const F M = xx + xx + xx;
        xyzz_t r;
        r.X = f_sqr(M) - (S + S);
        r.Y = f_mul(M, S - r.X) - f_mul(W, Y);
        r.ZZ = f_mul(V, ZZ);
        r.ZZZ = f_mul(W, ZZZ);
        return r;
    }

    // this += p for a finite affine p (madd-2008-s): 8M + 2S in the general case. Ordered
    // so that few values are live at once (G2 fits in 255 registers only just).
    __device__ __forceinline__ void add_affine(const affine_t<F>& p) {
        if (is_inf()) { *this = from_affine(p); return; }
        const F P = f_mul(p.x, ZZ) - X;           // U2 - X1
        const F R = f_mul(p.y, ZZZ) - Y;          // S2 - Y1
        if (f_is_zero(P)) {                       // same x: P + P or P + (-P)
            if (f_is_zero(R)) *this = dbl_affine(p);
            else *this = inf();
            return;
        }
        const F PP = f_sqr(P);
        ZZ = f_mul(ZZ, PP);
        const F Q = f_mul(X, PP);
        const F PPP = f_mul(P, PP);
        ZZZ = f_mul(ZZZ, PPP);
        X = f_sqr(R) - PPP - (Q + Q);
        Y = f_mul(R, Q - X) - f_mul(Y, PPP);
    }

    // Affine coordinates with one inversion: iZ = ZZ / ZZZ, x = X iZ^2, y = Y / ZZZ.
    // Returns false (and leaves out untouched) for infinity.
    __device__ __forceinline__ bool to_affine(affine_t<F>& out) const {
        if (is_inf()) return false;
        const F iZZZ = f_inv(ZZZ);
        const F iZ = f_mul(iZZZ, ZZ);
        out.x = f_mul(X, f_sqr(iZ));
        out.y = f_mul(Y, iZZZ);
        return true;
    }
};

// Out-of-line add and double on points in memory, for cold, latency-bound code (bucket and
// window reduction): only pointers cross the call, so callers keep no point state live.
template <class F>
__device__ __noinline__ void xyzz_dbl_mem(uint32_t* acc) { xyzz_t<F>::load(acc).dbl().store(acc); }

// *acc += *q (add-2008-s, 12M + 2S), loading each coordinate when first needed and storing
// each result when final, so G2 (96 words per point) stays within 255 registers. All loads
// of q precede the first store, so acc == q works too.
template <class F>
__device__ __noinline__ void xyzz_add_mem(uint32_t* acc, const uint32_t* q) {
    constexpr int E = xyzz_t<F>::WORDS / 4;       // words per coordinate
    const F ZZ2 = F::load(q + 2 * E);
    if (f_is_zero(ZZ2)) return;                   // q = infinity
    const F ZZ1 = F::load(acc + 2 * E);
    if (f_is_zero(ZZ1)) { xyzz_t<F>::load(q).store(acc); return; }
    const F U1 = f_mul(F::load(acc), ZZ2);
    const F P = f_mul(F::load(q), ZZ1) - U1;      // U2 - U1
    const F ZZ12 = f_mul(ZZ1, ZZ2);
    const F ZZZ2 = F::load(q + 3 * E), ZZZ1 = F::load(acc + 3 * E);
    const F S1 = f_mul(F::load(acc + E), ZZZ2);
    const F R = f_mul(F::load(q + E), ZZZ1) - S1; // S2 - S1
    const F ZZZ12 = f_mul(ZZZ1, ZZZ2);
    if (f_is_zero(P)) {                           // same x: acc is still unchanged in memory
        if (f_is_zero(R)) xyzz_dbl_mem<F>(acc);   // P + P
        else xyzz_t<F>::inf().store(acc);         // P + (-P)
        return;
    }
    const F PP = f_sqr(P);
    const F Q = f_mul(U1, PP);
    f_mul(ZZ12, PP).store(acc + 2 * E);
    const F PPP = f_mul(P, PP);
    f_mul(ZZZ12, PPP).store(acc + 3 * E);
    const F X3 = f_sqr(R) - PPP - (Q + Q);
    X3.store(acc);
    (f_mul(R, Q - X3) - f_mul(S1, PPP)).store(acc + E);
}
// *acc += (x, y) or (x, -y) for a finite affine point at p (madd-2008-s), with the
// accumulator in memory: the G2 bucket loop, where registers cannot hold it and a point.
template <class F>
__device__ __forceinline__ void xyzz_add_affine_mem(uint32_t* acc, const uint32_t* p, bool neg) {
    constexpr int E = xyzz_t<F>::WORDS / 4, A = affine_t<F>::WORDS / 2;
    const F ZZ1 = F::load(acc + 2 * E);
    if (f_is_zero(ZZ1)) {
        affine_t<F> a = affine_t<F>::load(p);
        if (neg) a.y = f_neg(a.y);
        xyzz_t<F>::from_affine(a).store(acc);
        return;
    }
    const F X1 = F::load(acc);
    const F P = f_mul(F::load(p), ZZ1) - X1;      // U2 - X1
    const F ZZZ1 = F::load(acc + 3 * E);
    F y2 = F::load(p + A);
    if (neg) y2 = f_neg(y2);
    const F Y1 = F::load(acc + E);
    const F R = f_mul(y2, ZZZ1) - Y1;             // S2 - Y1
    if (f_is_zero(P)) {
        if (f_is_zero(R)) xyzz_t<F>::dbl_affine({F::load(p), y2}).store(acc);
        else xyzz_t<F>::inf().store(acc);
        return;
    }
    const F PP = f_sqr(P);
    f_mul(ZZ1, PP).store(acc + 2 * E);
    const F Q = f_mul(X1, PP);
    const F PPP = f_mul(P, PP);
    f_mul(ZZZ1, PPP).store(acc + 3 * E);
    const F X3 = f_sqr(R) - PPP - (Q + Q);
    X3.store(acc);
    (f_mul(R, Q - X3) - f_mul(Y1, PPP)).store(acc + E);
}

template <class F>
__device__ __forceinline__ void xyzz_copy_mem(uint32_t* dst, const uint32_t* src) {
    xyzz_t<F>::load(src).store(dst);
}

typedef affine_t<fp_t> g1_affine_t;
typedef affine_t<fp2_t> g2_affine_t;
typedef xyzz_t<fp_t> g1_xyzz_t;
typedef xyzz_t<fp2_t> g2_xyzz_t;

}  // namespace cuzk
