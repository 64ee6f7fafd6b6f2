// Elementwise curve kernels over ec/curve.cuh, for checks against the host (tests/gpu/test_gpu_msm.py).
// XYZZ points are uint32[n, 4 * field words]; affine ones [n, 2 * field words] plus a flag. Templates over the
// field, with thin extern "C" entries per group.
#include "ec/curve.cuh"
using namespace cuzk;

template <class F>
__device__ __forceinline__ void ec_add(uint32_t* out, const uint32_t* a, const uint32_t* b, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int W = xyzz_t<F>::WORDS;
    xyzz_copy_mem<F>(out + i * W, a + i * W);
    xyzz_add_mem<F>(out + i * W, b + i * W);
}

template <class F>
__device__ __forceinline__ void ec_add_affine(uint32_t* out, const uint32_t* a, const uint32_t* b,
                                              const unsigned char* b_inf, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int W = xyzz_t<F>::WORDS;
    xyzz_t<F> p = xyzz_t<F>::load(a + i * W);
    if (!b_inf[i]) p.add_affine(affine_t<F>::load(b + i * affine_t<F>::WORDS));
    p.store(out + i * W);
}

template <class F>
__device__ __forceinline__ void ec_add_affine_mem(uint32_t* out, const uint32_t* a, const uint32_t* b,
                                                  const unsigned char* b_inf, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int W = xyzz_t<F>::WORDS;
    xyzz_copy_mem<F>(out + i * W, a + i * W);
    if (!b_inf[i]) xyzz_add_affine_mem<F>(out + i * W, b + i * affine_t<F>::WORDS, false);
}

template <class F>
__device__ __forceinline__ void ec_dbl(uint32_t* out, const uint32_t* a, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int W = xyzz_t<F>::WORDS;
    xyzz_copy_mem<F>(out + i * W, a + i * W);
    xyzz_dbl_mem<F>(out + i * W);
}

template <class F>
__device__ __forceinline__ void ec_neg(uint32_t* out, const uint32_t* a, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int W = xyzz_t<F>::WORDS;
    (-xyzz_t<F>::load(a + i * W)).store(out + i * W);
}

template <class F>
__device__ __forceinline__ void ec_to_affine(uint32_t* out, unsigned char* out_inf, const uint32_t* a, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    affine_t<F> r;
    f_set_zero(r.x); f_set_zero(r.y);
    const bool fin = xyzz_t<F>::load(a + i * xyzz_t<F>::WORDS).to_affine(r);
    r.store(out + i * affine_t<F>::WORDS);
    out_inf[i] = !fin;
}

extern "C" __global__ void g1_add(uint32_t* out, const uint32_t* a, const uint32_t* b, long n) {
    ec_add<fp_t>(out, a, b, n);
}
extern "C" __global__ void g1_add_affine(uint32_t* out, const uint32_t* a, const uint32_t* b, const unsigned char* b_inf,
                                        long n) {
    ec_add_affine<fp_t>(out, a, b, b_inf, n);
}
extern "C" __global__ void g1_add_affine_mem(uint32_t* out, const uint32_t* a, const uint32_t* b,
                                            const unsigned char* b_inf, long n) {
    ec_add_affine_mem<fp_t>(out, a, b, b_inf, n);
}
extern "C" __global__ void g1_dbl(uint32_t* out, const uint32_t* a, long n) { ec_dbl<fp_t>(out, a, n); }
extern "C" __global__ void g1_neg(uint32_t* out, const uint32_t* a, long n) { ec_neg<fp_t>(out, a, n); }
extern "C" __global__ void g1_to_affine(uint32_t* out, unsigned char* out_inf, const uint32_t* a, long n) {
    ec_to_affine<fp_t>(out, out_inf, a, n);
}
extern "C" __global__ void g2_add(uint32_t* out, const uint32_t* a, const uint32_t* b, long n) {
    ec_add<fp2_t>(out, a, b, n);
}
extern "C" __global__ void g2_add_affine(uint32_t* out, const uint32_t* a, const uint32_t* b, const unsigned char* b_inf,
                                        long n) {
    ec_add_affine<fp2_t>(out, a, b, b_inf, n);
}
extern "C" __global__ void g2_add_affine_mem(uint32_t* out, const uint32_t* a, const uint32_t* b,
                                            const unsigned char* b_inf, long n) {
    ec_add_affine_mem<fp2_t>(out, a, b, b_inf, n);
}
extern "C" __global__ void g2_dbl(uint32_t* out, const uint32_t* a, long n) { ec_dbl<fp2_t>(out, a, n); }
extern "C" __global__ void g2_neg(uint32_t* out, const uint32_t* a, long n) { ec_neg<fp2_t>(out, a, n); }
extern "C" __global__ void g2_to_affine(uint32_t* out, unsigned char* out_inf, const uint32_t* a, long n) {
    ec_to_affine<fp2_t>(out, out_inf, a, n);
}
