// Kernels for the DFMA-limb experiment (kernels/ff/mul_dfma.cuh): a check kernel, a plain mul kernel
// (for SASS counting) and dependent-chain throughput kernels, for Fp and Fr. Built by
// tools/experiments/dfma_check.py through NVRTC, and for SASS counts with
//   nvcc -cubin -arch=sm_90 -I kernels -Xptxas -v -o /tmp/dfma.cubin tools/experiments/dfma_bench.cu
// Element arrays of doubles are stored limb-major per element: element i, limb k at [i*L + k].
#include "ff/mul_dfma.cuh"

#define DFMA_KERNELS(F, f)                                                                                \
    /* check: uint32 canonical in; lazy and canonical mont_mul out, and the to_mont/from_mont trip */    \
    extern "C" __global__ void dfma_##f##_check(uint32_t* lazy, uint32_t* canon, uint32_t* trip,         \
                                                 const uint32_t* a, const uint32_t* b, long n) {          \
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                                             \
        if (i >= n) return;                                                                               \
        const int W = dfma::F::N32;                                                                       \
        const dfma::elem<dfma::F> x = dfma::from_u32<dfma::F>(a + i * W);                                 \
        const dfma::elem<dfma::F> y = dfma::from_u32<dfma::F>(b + i * W);                                 \
        dfma::to_u32<dfma::F>(dfma::mont_mul<dfma::F>(x, y), lazy + i * W);                               \
        dfma::to_u32<dfma::F>(dfma::mont_mul<dfma::F, true>(x, y), canon + i * W);                        \
        dfma::to_u32<dfma::F>(dfma::from_mont<dfma::F>(dfma::to_mont<dfma::F>(x)), trip + i * W);         \
    }                                                                                                     \
    /* one mul on double limbs (SASS counting) */                                                         \
    extern "C" __global__ void dfma_##f##_mul(double* out, const double* a, const double* b, long n) {   \
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                                             \
        if (i >= n) return;                                                                               \
        const int L = dfma::F::L;                                                                         \
        dfma::elem<dfma::F> x, y;                                                                         \
        for (int k = 0; k < L; k++) { x.v[k] = a[i * L + k]; y.v[k] = b[i * L + k]; }                     \
        const dfma::elem<dfma::F> r = dfma::mont_mul<dfma::F>(x, y);                                      \
        for (int k = 0; k < L; k++) out[i * L + k] = r.v[k];                                              \
    }                                                                                                     \
    /* throughput: 1 chain per thread, x = x * y (lazy or canonical) */                                   \
    template <bool C> __device__ void f##_bench1(double* data, int iters) {                               \
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                                             \
        const int L = dfma::F::L;                                                                         \
        dfma::elem<dfma::F> x;                                                                            \
        for (int k = 0; k < L; k++) x.v[k] = data[i * L + k];                                             \
        const dfma::elem<dfma::F> y = x;                                                                  \
        for (int it = 0; it < iters; it++) x = dfma::mont_mul<dfma::F, C>(x, y);                          \
        for (int k = 0; k < L; k++) data[i * L + k] = x.v[k];                                             \
    }                                                                                                     \
    /* 4 independent chains per thread (elements 4i .. 4i+3) */                                           \
    template <bool C> __device__ void f##_bench4(double* data, int iters) {                               \
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                                             \
        const int L = dfma::F::L;                                                                         \
        dfma::elem<dfma::F> x0, x1, x2, x3;                                                               \
        for (int k = 0; k < L; k++) {                                                                     \
            x0.v[k] = data[(4 * i) * L + k]; x1.v[k] = data[(4 * i + 1) * L + k];                         \
            x2.v[k] = data[(4 * i + 2) * L + k]; x3.v[k] = data[(4 * i + 3) * L + k];                     \
        }                                                                                                 \
        const dfma::elem<dfma::F> y = x0;                                                                 \
        for (int it = 0; it < iters; it++) {                                                              \
            x0 = dfma::mont_mul<dfma::F, C>(x0, y); x1 = dfma::mont_mul<dfma::F, C>(x1, y);               \
            x2 = dfma::mont_mul<dfma::F, C>(x2, y); x3 = dfma::mont_mul<dfma::F, C>(x3, y);               \
        }                                                                                                 \
        for (int k = 0; k < L; k++) {                                                                     \
            data[(4 * i) * L + k] = x0.v[k]; data[(4 * i + 1) * L + k] = x1.v[k];                        \
            data[(4 * i + 2) * L + k] = x2.v[k]; data[(4 * i + 3) * L + k] = x3.v[k];                     \
        }                                                                                                 \
    }                                                                                                     \
    extern "C" __global__ void dfma_##f##_bench1(double* d, int it) { f##_bench1<false>(d, it); }         \
    extern "C" __global__ void dfma_##f##_bench4(double* d, int it) { f##_bench4<false>(d, it); }         \
    extern "C" __global__ void dfma_##f##_bench1c(double* d, int it) { f##_bench1<true>(d, it); }         \
    extern "C" __global__ void dfma_##f##_bench4c(double* d, int it) { f##_bench4<true>(d, it); }

DFMA_KERNELS(Fp, fp)
DFMA_KERNELS(Fr, fr)
