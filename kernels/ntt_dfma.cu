// EXPERIMENT (variant "r4d", not the default): the register-radix NTT pass of ntt_reg.cu (same pass plan,
// arguments, groups, twiddle indexing and DIF/DIT semantics) with the multiplications on the FP64 pipe
// (kernels/field_mul_dfma.cuh; docs/mul-notes.md, "r4d: the NTT pass on the FP64 multiplier").
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
// ntt_reg.cu's swizzle: its 32 lanes hit 32 distinct slots mod 32, so a 64-bit access (banks pair up:
// slot mod 16) has every 8-byte bank pair hit by exactly 2 lanes, the minimum of 2 wavefronts.
//
// Variant "r4m" (ELEM = Mixed): the same pass with the elements in ntt_reg.cu's fr_t form (8 x uint32 in
// registers and shared memory, 32 B per element; fr_t add/sub), regrouped into 52-bit limbs only around each
// multiplication (from_u32 in, to_u32_u out). docs/mul-notes.md has the instruction counts of both.
#include "field.cuh"
#include "field_mul_dfma.cuh"
#include "ntt_reg.cuh"

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

// Element policies: the register form, its global and shared-memory traffic, add, sub, x * twiddle.
struct Wide52 {                  // r4d: five 52-bit limbs as uint64 in registers and shared memory
    using T = fe;
    static constexpr int SMW = L;                       // 64-bit shared-memory words per element
    using S = uint64_t;
    static __device__ __forceinline__ T load(const uint32_t* p) { return load_fe(p); }
    static __device__ __forceinline__ void store(const T& x, uint32_t* p) { store_fe(x, p); }
    static __device__ __forceinline__ T add(const T& a, const T& b) { return dfma::add_u<FR>(a, b); }
    static __device__ __forceinline__ T sub(const T& a, const T& b) { return dfma::sub_u<FR>(a, b); }
    static __device__ __forceinline__ T mul(const T& x, const fd& w) { return ::mul(x, w); }
    static __device__ __forceinline__ S word(const T& x, int w) { return x.v[w]; }
    static __device__ __forceinline__ void set_word(T& x, int w, S v) { x.v[w] = v; }
};
struct Mixed {                   // r4m: fr_t (8 x uint32) in registers and shared memory
    using T = cuzk::fr_t;
    static constexpr int SMW = FR_W;                    // 32-bit shared-memory words per element
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

// w_N^(e_sub << shift) in the 2^260 form, as doubles (< 2r). tw_mode 2: tw1[e_sub << tw1_shift];
// tw_mode 1: tw_hi[e >> bits] * tw_lo[e & mask] (2^256 form x 2^264 form; lazy, < 2r).
__device__ __forceinline__ fd outer_tw_d(unsigned e_sub, int tw_mode, int shift, const uint32_t* tw_lo,
                                         const uint32_t* tw_hi, int bits, const uint32_t* tw1, int tw1_shift) {
    if (tw_mode == 2) return load_tw(tw1 + ((unsigned long long)e_sub << tw1_shift) * FR_W);
    const unsigned long long e = (unsigned long long)e_sub << shift, mask = (1ull << bits) - 1;
    return dfma::mont_mul<FR>(load_tw(tw_hi + (e >> bits) * FR_W), load_tw(tw_lo + (e & mask) * FR_W));
}

template <int LR, bool DIT, class P>
__device__ __forceinline__ void ntt_dfma_pass(uint32_t* data, int log_n, int log_sub, int k, int log_c,
                                              const uint32_t* __restrict__ tw_small, int tw_mode,
                                              const uint32_t* __restrict__ tw_lo, const uint32_t* __restrict__ tw_hi,
                                              int tw_bits, const uint32_t* __restrict__ tw1, int tw1_shift) {
    constexpr int R = 1 << LR;
    extern __shared__ uint64_t sm_raw[];                  // 8-byte aligned
    typename P::S* const sm = reinterpret_cast<typename P::S*>(sm_raw);
    const int E = 1 << (k + log_c);
    const int log_n2 = log_sub - k, log_g = log_n2 - log_c, shift = log_n - log_sub;
    const unsigned long long s = blockIdx.x >> log_g, cg = blockIdx.x & ((1u << log_g) - 1);
    const int c = threadIdx.x & ((1 << log_c) - 1), q = threadIdx.x >> log_c;
    const unsigned i2 = (unsigned)(cg << log_c) + c;       // column, < 2^log_n2
    uint32_t* col = data + (((unsigned long long)blockIdx.y << log_n) + (s << log_sub) + i2) * FR_W;
    const int ng = (k + LR - 1) / LR;
    typename P::T x[R];

#pragma unroll 1
    for (int g = 0; g < ng; g++) {
        int s_lo, s_hi;
        if (DIT) { s_lo = g * LR; s_hi = min(k, s_lo + LR); }
        else { s_hi = k - g * LR; s_lo = max(0, s_hi - LR); }
        const int b0 = min(s_lo, k - LR), tlo = s_lo - b0, thi = s_hi - b0;
        const int lo = q & ((1 << b0) - 1);
        const int base = lo | ((q >> b0) << (b0 + LR));

        if (g == 0) {
#pragma unroll
            for (int m = 0; m < R; m++)
                x[m] = P::load(col + ((unsigned long long)(base + (m << b0)) << log_n2) * FR_W);
            if (DIT && tw_mode) {              // b0 == 0 here: rows base + m
#pragma unroll
                for (int m = 0; m < R; m++) {
                    const unsigned r = __brev(base + m) >> (32 - k);
                    x[m] = P::mul(x[m], outer_tw_d(i2 * r, tw_mode, shift, tw_lo, tw_hi, tw_bits, tw1, tw1_shift));
                }
            }
        } else {
            __syncthreads();
#pragma unroll
            for (int m = 0; m < R; m++) {
                const int ph = swz(((base + (m << b0)) << log_c) + c);
#pragma unroll
                for (int w = 0; w < P::SMW; w++) P::set_word(x[m], w, sm[w * E + ph]);
            }
        }

#pragma unroll
        for (int tt = 0; tt < LR; tt++) {
            const int t = DIT ? tt : LR - 1 - tt;
            if (t < tlo || t >= thi) continue;
            const int st = b0 + t;
#pragma unroll
            for (int m = 0; m < R; m++) {
                if (m & (1 << t)) continue;
                const int jm = m & ((1 << t) - 1);
                const bool one = b0 == 0 && jm == 0;       // w = 1, the same for the whole block
                const uint32_t* wp = tw_small + ((unsigned)(lo + (jm << b0)) << (NTT_KMAX - 1 - st)) * FR_W;
                typename P::T& a = x[m];
                typename P::T& b = x[m + (1 << t)];
                if (DIT) {
                    const typename P::T y = one ? b : P::mul(b, load_tw(wp));
                    b = P::sub(a, y);
                    a = P::add(a, y);
                } else {
                    const typename P::T d = P::sub(a, b);
                    a = P::add(a, b);
                    b = one ? d : P::mul(d, load_tw(wp));
                }
            }
        }

        if (g == ng - 1) {
#pragma unroll
            for (int m = 0; m < R; m++) {      // one element at a time: each dies at its store
                if (!DIT && tw_mode) {         // b0 == 0 here: rows base + m
                    const unsigned r = __brev(base + m) >> (32 - k);
                    x[m] = P::mul(x[m], outer_tw_d(i2 * r, tw_mode, shift, tw_lo, tw_hi, tw_bits, tw1, tw1_shift));
                }
                P::store(x[m], col + ((unsigned long long)(base + (m << b0)) << log_n2) * FR_W);
            }
        } else {
#pragma unroll
            for (int m = 0; m < R; m++) {
                const int ph = swz(((base + (m << b0)) << log_c) + c);
#pragma unroll
                for (int w = 0; w < P::SMW; w++) sm[w * E + ph] = P::word(x[m], w);
            }
        }
    }
}
}  // namespace

// R = 4: up to 256 threads (2^10 elements, 40 KiB of shared memory: 40 B per element).
extern "C" __global__ void __launch_bounds__(256, 2) ntt_r4d_dif(NTT_REG_ARGS) { ntt_dfma_pass<2, false, Wide52>(NTT_REG_CALL); }
extern "C" __global__ void __launch_bounds__(256, 2) ntt_r4d_dit(NTT_REG_ARGS) { ntt_dfma_pass<2, true, Wide52>(NTT_REG_CALL); }
// r4m: 32 B of shared memory per element (32 KiB per block of 2^10).
extern "C" __global__ void __launch_bounds__(256, 2) ntt_r4m_dif(NTT_REG_ARGS) { ntt_dfma_pass<2, false, Mixed>(NTT_REG_CALL); }
extern "C" __global__ void __launch_bounds__(256, 2) ntt_r4m_dit(NTT_REG_ARGS) { ntt_dfma_pass<2, true, Mixed>(NTT_REG_CALL); }
