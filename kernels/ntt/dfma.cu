// EXPERIMENT (variant "r4d", not the default): the register-radix NTT pass of ntt/reg.cu (same pass plan,
// arguments, groups, twiddle indexing and DIF/DIT semantics) with the multiplications on the FP64 pipe
// (kernels/ff/mul_dfma.cuh; docs/mul-notes.md, "r4d: the NTT pass on the FP64 multiplier").
//
// Forms. Global memory keeps the 8 x uint32 layout of x * 2^256 mod r (the data's "2^256 form"). A load
// regroups the bits into five 52-bit limbs (the value is unchanged) and the pass works on that raw
// value: additions and subtractions mod r do not care about the form, and every twiddle comes in the
// 2^260 form (w * 2^260 mod r: the host scales the tables by 16), so dfma::mont_mul (x * y * 2^-260)
// of data and twiddle gives x * w * 2^256: the data stays in its 2^256 form. tw_hi * tw_lo (tw_mode 1)
// has tw_lo scaled by 2^8 (w_lo * 2^264) and tw_hi unscaled, so the product is w * 2^260 again.
// A store regroups the limbs back into 8 words. Every value stays canonical (< r): inputs must be < r
// (as for fr_t), add/sub keep it, and the data x twiddle products use mont_mul<CANON = true>.
//
// Registers hold the limbs as integers (dfma::elem_u: uint64 per limb), so add/sub need no FP64
// conversions; a multiplication converts its data input (LOP3 + DADD per limb) and its twiddle (bit
// regrouping + DADD per limb) to doubles. Shared memory: 5 uint64 planes (40 B per element), with
// ntt/reg.cu's swizzle: its 32 lanes hit 32 distinct slots mod 32, so a 64-bit access (banks pair up:
// slot mod 16) has every 8-byte bank pair hit by exactly 2 lanes, the minimum of 2 wavefronts.
//
// Variant "r4m" (ELEM = Mixed): the same pass with the elements in ntt/reg.cu's fr_t form (8 x uint32 in
// registers and shared memory, 32 B per element; fr_t add/sub), regrouped into 52-bit limbs only around each
// multiplication (from_u32 in, to_u32_u out). docs/mul-notes.md has the instruction counts of both.
#include "ff/field.cuh"
#include "ff/mul_dfma.cuh"
#include "ntt/reg.cuh"

namespace {
using FR = dfma::Fr;
using fe = dfma::elem_u<FR>;     // an element in registers: five 52-bit limbs as integers, < r
using fd = dfma::elem<FR>;       // a multiplication input: five doubles
constexpr int L = FR::L;

__device__ __forceinline__ void load8(const uint32_t* p, uint32_t* w) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
    const uint4 a = q[0], b = q[1];
    w[0] = a.x; w[1] = a.y; w[2] = a.z; w[3] = a.w; w[4] = b.x; w[5] = b.y; w[6] = b.z; w[7] = b.w;
}
__device__ __forceinline__ fe load_fe(const uint32_t* p) {
    uint32_t w[FR_W];
    load8(p, w);
    return dfma::from_u32_u<FR>(w);
}
__device__ __forceinline__ void store_fe(const fe& x, uint32_t* p) {
    uint32_t w[FR_W];
    dfma::to_u32_u<FR>(x, w);
    uint4* q = reinterpret_cast<uint4*>(p);
    q[0] = make_uint4(w[0], w[1], w[2], w[3]);
    q[1] = make_uint4(w[4], w[5], w[6], w[7]);
}
// a twiddle from a table (8 x uint32, canonical) as doubles
__device__ __forceinline__ fd load_tw(const uint32_t* p) {
    uint32_t w[FR_W];
    load8(p, w);
    return dfma::from_u32<FR>(w);
}
// x * w * 2^-260 mod r, canonical: x < r (any form), w < 2r (2^260 form)
__device__ __forceinline__ fe mul(const fe& x, const fd& w) { return dfma::mont_mul_u<FR, true>(dfma::to_d<FR>(x), w); }

// w_N^(e_sub << shift) in the 2^260 form, as doubles (< 2r). tw_mode 2: tw1[e_sub << tw1_shift];
// tw_mode 1: tw_hi[e >> bits] * tw_lo[e & mask] (2^256 form x 2^264 form; lazy, < 2r).
__device__ __forceinline__ fd outer_tw_d(unsigned e_sub, int tw_mode, int shift, const uint32_t* tw_lo,
                                         const uint32_t* tw_hi, int bits, const uint32_t* tw1, int tw1_shift) {
    if (tw_mode == 2) return load_tw(tw1 + ((unsigned long long)e_sub << tw1_shift) * FR_W);
    const unsigned long long e = (unsigned long long)e_sub << shift, mask = (1ull << bits) - 1;
    return dfma::mont_mul<FR>(load_tw(tw_hi + (e >> bits) * FR_W), load_tw(tw_lo + (e & mask) * FR_W));
}

// The butterflies and the 4-step twiddle of both policies, from E's add, sub and x * twiddle.
template <class E>
struct DfmaSteps {              // (templates on T: E is incomplete where it derives from this)
    template <class T>
    static __device__ __forceinline__ T outer(const T& x, unsigned e_sub, int tw_mode, int shift, const uint32_t* tw_lo,
                                              const uint32_t* tw_hi, int bits, const uint32_t* tw1, int tw1_shift, int) {
        return E::mul(x, outer_tw_d(e_sub, tw_mode, shift, tw_lo, tw_hi, bits, tw1, tw1_shift));
    }
    template <class T>
    static __device__ __forceinline__ void dit(T& a, T& b, bool one, const uint32_t* wp, int) {
        const T y = one ? b : E::mul(b, load_tw(wp));
        b = E::sub(a, y);
        a = E::add(a, y);
    }
    template <class T>
    static __device__ __forceinline__ void dif(T& a, T& b, bool one, const uint32_t* wp, int) {
        const T d = E::sub(a, b);
        a = E::add(a, b);
        b = one ? d : E::mul(d, load_tw(wp));
    }
};

// Element policies: the register form, its global and shared-memory traffic, add, sub, x * twiddle.
struct Wide52 : DfmaSteps<Wide52> {                  // r4d: five 52-bit limbs as uint64 in registers and shared memory
    using T = fe;
    static constexpr int SMW = L;                       // 64-bit shared-memory words per element
    static constexpr bool VEC4 = false;
    static constexpr bool LAZY_OUTER = false;
    using S = uint64_t;
    static __device__ __forceinline__ T load(const uint32_t* p) { return load_fe(p); }
    static __device__ __forceinline__ void store(const T& x, uint32_t* p) { store_fe(x, p); }
    static __device__ __forceinline__ T add(const T& a, const T& b) { return dfma::add_u<FR>(a, b); }
    static __device__ __forceinline__ T sub(const T& a, const T& b) { return dfma::sub_u<FR>(a, b); }
    static __device__ __forceinline__ T mul(const T& x, const fd& w) { return ::mul(x, w); }
    static __device__ __forceinline__ S word(const T& x, int w) { return x.v[w]; }
    static __device__ __forceinline__ void set_word(T& x, int w, S v) { x.v[w] = v; }
};
struct Mixed : DfmaSteps<Mixed> {                   // r4m: fr_t (8 x uint32) in registers and shared memory
    using T = cuzk::fr_t;
    static constexpr int SMW = FR_W;                    // 32-bit shared-memory words per element
    static constexpr bool VEC4 = false;
    static constexpr bool LAZY_OUTER = false;
    using S = uint32_t;
    static __device__ __forceinline__ T load(const uint32_t* p) { return T::load(p); }
    static __device__ __forceinline__ void store(const T& x, uint32_t* p) { x.store(p); }
    static __device__ __forceinline__ T add(const T& a, const T& b) { return a + b; }
    static __device__ __forceinline__ T sub(const T& a, const T& b) { return a - b; }
    static __device__ __forceinline__ T mul(const T& x, const fd& w) {
        T r;
        dfma::to_u32_u<FR>(dfma::mont_mul_u<FR, true>(dfma::from_u32<FR>(x.v), w), r.v);
        return r;
    }
    static __device__ __forceinline__ S word(const T& x, int w) { return x.v[w]; }
    static __device__ __forceinline__ void set_word(T& x, int w, S v) { x.v[w] = v; }
};


}  // namespace

// R = 4: up to 256 threads (2^10 elements, 40 KiB of shared memory: 40 B per element).
extern "C" __global__ void __launch_bounds__(256, 2) ntt_r4d_dif(NTT_REG_ARGS) { ntt_reg_pass<2, false, Wide52>(NTT_REG_CALL); }
extern "C" __global__ void __launch_bounds__(256, 2) ntt_r4d_dit(NTT_REG_ARGS) { ntt_reg_pass<2, true, Wide52>(NTT_REG_CALL); }
// r4m: 32 B of shared memory per element (32 KiB per block of 2^10).
extern "C" __global__ void __launch_bounds__(256, 2) ntt_r4m_dif(NTT_REG_ARGS) { ntt_reg_pass<2, false, Mixed>(NTT_REG_CALL); }
extern "C" __global__ void __launch_bounds__(256, 2) ntt_r4m_dit(NTT_REG_ARGS) { ntt_reg_pass<2, true, Mixed>(NTT_REG_CALL); }
