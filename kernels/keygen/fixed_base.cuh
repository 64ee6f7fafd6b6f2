// Fixed-base scalar multiplication for test key generation: out[i] = s_i * B for one base B
// (G1 or G2), with a precomputed window table and no doublings. keygen/g1.cu and keygen/g2.cu
// instantiate it (separate NVRTC modules: the G2 code compiles slowly). Host driver and the
// table: cuzk/gpu/keygen.py; CPU model of the digits, the table indices and the warp inverse:
// tests/gpu/test_keygen_model.py.
//
// Table (c-bit signed windows, H = 2^(c-1) entries per window, nw = ceil(256 / c) windows):
//   table[(w * H + d - 1) * WORDS] = d * 2^(c w) * B   (affine, Montgomery), d = 1..H, w < nw.
// A canonical scalar s < r < 2^255 splits into signed digits d_w in [-H, H] with carry, exactly
// as msm_digits does: s = sum_w d_w 2^(c w). Since c * nw >= 256, the top window's raw value is
// below 2^(c-1), so it never negates and no carry is left over. Then s * B = sum_w +-table[w][|d_w|],
// nw mixed additions at most. The special cases of the additions (P + P, P + (-P), infinity)
// are handled by ec/curve.cuh, so any scalar is exact.
//
// To affine: one inversion per warp (ff/warp_inverse.cuh) of z = ZZZ (G1) or its norm c0^2 + c1^2
// (G2, 1/(a + bu) = (a - bu) / (a^2 + b^2)); lanes without a finite point use z = 1.
//
// Threads walk the points in a grid-stride loop whose trip count is uniform per warp (the
// shuffles need all 32 lanes); blockDim must be a multiple of 32. G2 keeps its accumulator in
// memory (scratch: one 96-word slot per thread of the grid), as the G2 MSM does.
#pragma once
#include "ec/curve.cuh"
#include "ec/warp_affine.cuh"
#include "ff/warp_inverse.cuh"
#include "msm/digit.cuh"

namespace cuzk {
namespace kg {

typedef long long i64;

// One G2 table addition, out of line: only pointers cross the call, so the kernel's own state
// (the scalar, the loop) stays out of the addition's register budget.
template <class F>
__device__ __noinline__ void add_affine_mem_call(uint32_t* acc, const uint32_t* p, bool neg) {
    xyzz_add_affine_mem<F>(acc, p, neg);
}

// Norm of the accumulator's ZZZ (an Fp2 element in memory): c0^2 + c1^2.
template <class F>
__device__ __noinline__ fp_t g2_norm_zzz(const uint32_t* acc) {
    constexpr int E = xyzz_t<F>::WORDS / 4;
    const F ZZZ = F::load(acc + 3 * E);
    return ZZZ.c0.sqr() + ZZZ.c1.sqr();
}

// Affine output from the accumulator in memory and ni = 1 / norm(ZZZ); zero limbs unless fin.
template <class F>
__device__ __noinline__ void g2_finish(uint32_t* out, const uint32_t* acc, const fp_t ni, bool fin) {
    constexpr int E = xyzz_t<F>::WORDS / 4;
    affine_t<F> a;
    f_set_zero(a.x); f_set_zero(a.y);
    if (fin) {
        const F ZZZ = F::load(acc + 3 * E);
        const F iZZZ = {ZZZ.c0 * ni, fp_t::zero() - ZZZ.c1 * ni};   // 1/(a + bu) = (a - bu)/(a^2 + b^2)
        const F iZ = f_mul(iZZZ, F::load(acc + 2 * E));             // 1/Z = ZZ / ZZZ
        a.x = f_mul(F::load(acc), f_sqr(iZ));
        a.y = f_mul(F::load(acc + E), iZZZ);
    }
    a.store(out);
}

template <class F>
__device__ __forceinline__ void fixed_base(uint32_t* __restrict__ out, unsigned char* __restrict__ inf,
                                           const uint32_t* __restrict__ scalars, i64 n,
                                           const uint32_t* __restrict__ table, int c, int nw,
                                           uint32_t* __restrict__ scratch) {
    constexpr int AW = affine_t<F>::WORDS;
    const int lane = threadIdx.x & 31;
    const i64 tid = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    const i64 stride = (i64)gridDim.x * blockDim.x;
    const i64 H = 1ll << (c - 1);
#pragma unroll 1
    for (i64 base = tid - lane; base < n; base += stride) {     // uniform per warp
        const i64 i = base + lane;
        const bool valid = i < n;
        fr_t s = fr_t::zero();
        if (valid) s = fr_t::load(scalars + i * CUZK_FR_LIMBS).from_mont();
        if constexpr (sizeof(F) == sizeof(fp_t)) {              // G1: accumulator in registers
            xyzz_t<F> acc = xyzz_t<F>::inf();
            uint32_t carry = 0;
#pragma unroll 1
            for (int w = 0; w < nw; w++) {
                bool neg;
                const uint32_t d = window_digit(s, w, c, carry, neg);
                if (d == 0) continue;
                affine_t<F> p = affine_t<F>::load(table + ((i64)w * H + d - 1) * AW);
                if (neg) p.y = f_neg(p.y);
                acc.add_affine(p);
            }
            const bool fin = valid && !acc.is_inf();
            const affine_t<F> a = warp_to_affine(acc, fin);
            if (valid) {
                a.store(out + i * AW);
                inf[i] = fin ? 0 : 1;
            }
        } else {                                                // G2: accumulator in memory
            constexpr int E = xyzz_t<F>::WORDS / 4;
            uint32_t* acc = scratch + tid * xyzz_t<F>::WORDS;
            xyzz_t<F>::inf().store(acc);
            uint32_t carry = 0;
#pragma unroll 1
            for (int w = 0; w < nw; w++) {
                bool neg;
                const uint32_t d = window_digit(s, w, c, carry, neg);
                if (d == 0) continue;
                add_affine_mem_call<F>(acc, table + ((i64)w * H + d - 1) * AW, neg);
            }
            const bool fin = valid && !f_is_zero(F::load(acc + 2 * E));
            const fp_t ni = warp_batch_inverse(fin ? g2_norm_zzz<F>(acc) : fp_t::one());
            if (valid) {
                g2_finish<F>(out + i * AW, acc, ni, fin);
                inf[i] = fin ? 0 : 1;
            }
        }
    }
}

}  // namespace kg
}  // namespace cuzk
