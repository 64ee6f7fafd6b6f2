// Elementwise curve kernels over ec/curve.cuh, for checks against the host (tests/test_gpu_msm.py).
// XYZZ points are uint32[n, 4 * field words]; affine ones [n, 2 * field words] plus a flag.
#include "ec/curve.cuh"
using namespace cuzk;

#define CUZK_EC_OPS(G, F)                                                                            \
    extern "C" __global__ void G##_add(uint32_t* out, const uint32_t* a, const uint32_t* b, long n) { \
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                                        \
        if (i >= n) return;                                                                          \
        const int W = xyzz_t<F>::WORDS;                                                              \
        xyzz_copy_mem<F>(out + i * W, a + i * W);                                                    \
        xyzz_add_mem<F>(out + i * W, b + i * W);                                                     \
    }                                                                                                \
    extern "C" __global__ void G##_add_affine(uint32_t* out, const uint32_t* a, const uint32_t* b,   \
                                              const unsigned char* b_inf, long n) {                  \
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                                        \
        if (i >= n) return;                                                                          \
        const int W = xyzz_t<F>::WORDS;                                                              \
        xyzz_t<F> p = xyzz_t<F>::load(a + i * W);                                                    \
        if (!b_inf[i]) p.add_affine(affine_t<F>::load(b + i * affine_t<F>::WORDS));                  \
        p.store(out + i * W);                                                                        \
    }                                                                                                \
    extern "C" __global__ void G##_add_affine_mem(uint32_t* out, const uint32_t* a, const uint32_t* b, \
                                                  const unsigned char* b_inf, long n) {              \
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                                        \
        if (i >= n) return;                                                                          \
        const int W = xyzz_t<F>::WORDS;                                                              \
        xyzz_copy_mem<F>(out + i * W, a + i * W);                                                    \
        if (!b_inf[i]) xyzz_add_affine_mem<F>(out + i * W, b + i * affine_t<F>::WORDS, false);       \
    }                                                                                                \
    extern "C" __global__ void G##_dbl(uint32_t* out, const uint32_t* a, long n) {                    \
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                                        \
        if (i >= n) return;                                                                          \
        const int W = xyzz_t<F>::WORDS;                                                              \
        xyzz_copy_mem<F>(out + i * W, a + i * W);                                                    \
        xyzz_dbl_mem<F>(out + i * W);                                                                \
    }                                                                                                \
    extern "C" __global__ void G##_neg(uint32_t* out, const uint32_t* a, long n) {                    \
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                                        \
        if (i >= n) return;                                                                          \
        const int W = xyzz_t<F>::WORDS;                                                              \
        (-xyzz_t<F>::load(a + i * W)).store(out + i * W);                                            \
    }                                                                                                \
    extern "C" __global__ void G##_to_affine(uint32_t* out, unsigned char* out_inf, const uint32_t* a, \
                                             long n) {                                               \
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                                        \
        if (i >= n) return;                                                                          \
        affine_t<F> r;                                                                               \
        f_set_zero(r.x); f_set_zero(r.y);                                                            \
        const bool fin = xyzz_t<F>::load(a + i * xyzz_t<F>::WORDS).to_affine(r);                     \
        r.store(out + i * affine_t<F>::WORDS);                                                       \
        out_inf[i] = !fin;                                                                           \
    }

CUZK_EC_OPS(g1, fp_t)
CUZK_EC_OPS(g2, fp2_t)
