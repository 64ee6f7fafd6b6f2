// Elementwise field kernels: checks against the host, Montgomery conversion, throughput.
#include "ff/field.cuh"
using namespace cuzk;

#define CUZK_BINARY(F, name, expr)                                                              \
    extern "C" __global__ void name(uint32_t* out, const uint32_t* a, const uint32_t* b, long n) { \
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                                   \
        if (i >= n) return;                                                                     \
        const int W = sizeof(F) / 4;                                                            \
        F x = F::load(a + i * W), y = F::load(b + i * W);                                       \
        F r = (expr);                                                                           \
        r.store(out + i * W);                                                                   \
    }

#define CUZK_UNARY(F, name, expr)                                                     \
    extern "C" __global__ void name(uint32_t* out, const uint32_t* a, long n) {       \
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                         \
        if (i >= n) return;                                                           \
        const int W = sizeof(F) / 4;                                                  \
        F x = F::load(a + i * W);                                                     \
        F r = (expr);                                                                 \
        r.store(out + i * W);                                                         \
    }

CUZK_BINARY(fp_t, fp_mul, x * y)
CUZK_BINARY(fp_t, fp_add, x + y)
CUZK_BINARY(fp_t, fp_sub, x - y)
CUZK_UNARY(fp_t, fp_sqr, x.sqr())
CUZK_UNARY(fp_t, fp_neg, -x)
CUZK_UNARY(fp_t, fp_inv, x.inverse())
CUZK_UNARY(fp_t, fp_inv_binary, x.inverse_binary())
CUZK_UNARY(fp_t, fp_to_mont, x.to_mont())
CUZK_UNARY(fp_t, fp_from_mont, x.from_mont())

CUZK_BINARY(fr_t, fr_mul, x * y)
CUZK_BINARY(fr_t, fr_add, x + y)
CUZK_BINARY(fr_t, fr_sub, x - y)
CUZK_UNARY(fr_t, fr_sqr, x.sqr())
CUZK_UNARY(fr_t, fr_neg, -x)
CUZK_UNARY(fr_t, fr_inv, x.inverse())
CUZK_UNARY(fr_t, fr_inv_binary, x.inverse_binary())
CUZK_UNARY(fr_t, fr_to_mont, x.to_mont())
CUZK_UNARY(fr_t, fr_from_mont, x.from_mont())

CUZK_BINARY(fp2_t, fp2_mul, x * y)
CUZK_BINARY(fp2_t, fp2_add, x + y)
CUZK_BINARY(fp2_t, fp2_sub, x - y)
CUZK_UNARY(fp2_t, fp2_sqr, x.sqr())
CUZK_UNARY(fp2_t, fp2_inv, x.inverse())
CUZK_UNARY(fp2_t, fp2_inv_binary, x.inverse_binary())

// Throughput: each thread runs `iters` rounds of 4 independent multiplication chains.
#define CUZK_MUL_BENCH(F, name)                                                        \
    extern "C" __global__ void name(uint32_t* data, int iters) {                       \
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                          \
        const int W = sizeof(F) / 4;                                                   \
        F x0 = F::load(data + (4 * i) * W), x1 = F::load(data + (4 * i + 1) * W);      \
        F x2 = F::load(data + (4 * i + 2) * W), x3 = F::load(data + (4 * i + 3) * W);  \
        const F y = x0;                                                                \
        for (int k = 0; k < iters; k++) {                                              \
            x0 = x0 * y; x1 = x1 * y; x2 = x2 * y; x3 = x3 * y;                        \
        }                                                                              \
        x0.store(data + (4 * i) * W); x1.store(data + (4 * i + 1) * W);                \
        x2.store(data + (4 * i + 2) * W); x3.store(data + (4 * i + 3) * W);            \
    }

CUZK_MUL_BENCH(fp_t, fp_mul_bench)
CUZK_MUL_BENCH(fr_t, fr_mul_bench)

// The same with one chain per thread (x = x * y): the latency-bound form, 4x the threads for the same work.
#define CUZK_MUL_BENCH1(F, name)                                                       \
    extern "C" __global__ void name(uint32_t* data, int iters) {                       \
        long i = blockIdx.x * (long)blockDim.x + threadIdx.x;                          \
        const int W = sizeof(F) / 4;                                                   \
        F x0 = F::load(data + i * W);                                                  \
        const F y = x0;                                                                \
        for (int k = 0; k < iters; k++) x0 = x0 * y;                                   \
        x0.store(data + i * W);                                                        \
    }

CUZK_MUL_BENCH1(fp_t, fp_mul_bench1)
CUZK_MUL_BENCH1(fr_t, fr_mul_bench1)
