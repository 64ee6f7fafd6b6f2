// Fr kernels for key generation (host driver: cuzk/gpu/keygen.py): the QAP column values at tau,
// u_j = sum_k M[k, j] * lag[k], and the elementwise scalar formulas. All values Montgomery.
//
// Column sums without Fr reductions per term: the products are written limb-transposed in
// column-sorted order, CuPy takes per-limb uint64 prefix sums (exact: nnz < 2^31 terms of < 2^32),
// each column's per-limb sums come out as differences, and kg_limbsum_reduce folds the eight
// uint64 limb sums back into one Fr element. A sum of Montgomery representations is the
// Montgomery representation of the sum, so no conversion is needed.
#include "ff/field.cuh"
using namespace cuzk;

typedef long long i64;
typedef unsigned long long u64;

// prod[l * nnz + k] = limb l of coeffs[e] * lag[rows[e]], e = order[k].
extern "C" __global__ void kg_products(uint32_t* __restrict__ prod, const i64* __restrict__ order,
                                       const i64* __restrict__ rows, const uint32_t* __restrict__ coeffs,
                                       const uint32_t* __restrict__ lag, i64 nnz) {
    const i64 k = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (k >= nnz) return;
    const i64 e = order[k];
    const fr_t p = fr_t::load(coeffs + e * CUZK_FR_LIMBS) * fr_t::load(lag + rows[e] * CUZK_FR_LIMBS);
#pragma unroll
    for (int l = 0; l < CUZK_FR_LIMBS; l++) prod[l * nnz + k] = p.v[l];
}

// kg_products with compact coefficients: coeffs[e] = table[index[e]].
extern "C" __global__ void kg_products_table(uint32_t* __restrict__ prod, const i64* __restrict__ order,
                                             const i64* __restrict__ rows, const unsigned short* __restrict__ index,
                                             const uint32_t* __restrict__ table, const uint32_t* __restrict__ lag,
                                             i64 nnz) {
    const i64 k = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (k >= nnz) return;
    const i64 e = order[k];
    const fr_t p = fr_t::load(table + (i64)index[e] * CUZK_FR_LIMBS) * fr_t::load(lag + rows[e] * CUZK_FR_LIMBS);
#pragma unroll
    for (int l = 0; l < CUZK_FR_LIMBS; l++) prod[l * nnz + k] = p.v[l];
}

// out[i] = (sum_l seg[l * nv + i] * 2^(32 l)) mod r, for per-limb sums seg < 2^64.
// Words: w_l = lo32(seg_l) + hi32(seg_(l-1)) + carry (< 3 * 2^32, so the carry stays <= 2);
// V = lo + 2^256 * hi with lo = w_0..w_7 < 2^256 < 3r and hi = w_8 | w_9 << 32 < 2^33.
// V mod r = (lo - r - r as needed) + (hi * 2^256 mod r), and hi * 2^256 mod r = mont(hi * R^2).
extern "C" __global__ void kg_limbsum_reduce(uint32_t* __restrict__ out, const u64* __restrict__ seg, i64 nv) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= nv) return;
    uint32_t w[CUZK_FR_LIMBS];
    u64 acc = 0, hi_prev = 0;
#pragma unroll
    for (int l = 0; l < CUZK_FR_LIMBS; l++) {
        const u64 x = seg[l * nv + i];
        acc += (x & 0xffffffffull) + hi_prev;
        w[l] = (uint32_t)acc;
        acc >>= 32;
        hi_prev = x >> 32;
    }
    acc += hi_prev;
    fr_t lo = fr_t::reduce_once(w, 0);
    lo = fr_t::reduce_once(lo.v, 0);
    fr_t hi = fr_t::zero();
    hi.v[0] = (uint32_t)acc;
    hi.v[1] = (uint32_t)(acc >> 32);
    (lo + hi.to_mont()).store(out + i * CUZK_FR_LIMBS);
}

// out = beta * u + alpha * v + w, with ab = beta | alpha.
extern "C" __global__ void kg_combine(uint32_t* out, const uint32_t* __restrict__ u, const uint32_t* __restrict__ v,
                                      const uint32_t* __restrict__ w, const uint32_t* __restrict__ ab, i64 n) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const i64 o = i * CUZK_FR_LIMBS;
    const fr_t r = fr_t::load(ab) * fr_t::load(u + o) + fr_t::load(ab + CUZK_FR_LIMBS) * fr_t::load(v + o) +
                   fr_t::load(w + o);
    r.store(out + o);
}

// out = x * s for one scalar s (out may be x).
extern "C" __global__ void kg_scale(uint32_t* out, const uint32_t* x, const uint32_t* __restrict__ s, i64 n) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const i64 o = i * CUZK_FR_LIMBS;
    (fr_t::load(x + o) * fr_t::load(s)).store(out + o);
}

// bad[0] = 1 if any of the n canonical (non-Montgomery) elements is >= r.
extern "C" __global__ void kg_check_canonical(unsigned int* bad, const uint32_t* __restrict__ x, i64 n) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const uint32_t* p = x + i * CUZK_FR_LIMBS;
    int lt = 0;                                 // compare from the top limb: -1 below r, 1 at or above
#pragma unroll
    for (int l = CUZK_FR_LIMBS - 1; l >= 0; l--) {
        if (lt == 0 && p[l] != fr_mod(l)) lt = p[l] < fr_mod(l) ? -1 : 1;
    }
    if (lt >= 0) atomicOr(bad, 1u);
}
