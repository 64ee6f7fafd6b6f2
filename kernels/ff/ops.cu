// Elementwise field kernels: checks against the host, Montgomery conversion, throughput. Each entry is a
// thin extern "C" wrapper (the name cuzk/gpu loads) over one of the templates below.
#include "ff/field.cuh"
using namespace cuzk;

// out[i] = op(a[i], b[i]) / op(a[i]) over n elements of F
template <class F, class Op>
__device__ __forceinline__ void binary(uint32_t* out, const uint32_t* a, const uint32_t* b, long n, Op op) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int W = sizeof(F) / 4;
    F x = F::load(a + i * W), y = F::load(b + i * W);
    F r = op(x, y);
    r.store(out + i * W);
}

template <class F, class Op>
__device__ __forceinline__ void unary(uint32_t* out, const uint32_t* a, long n, Op op) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int W = sizeof(F) / 4;
    F x = F::load(a + i * W);
    F r = op(x);
    r.store(out + i * W);
}

// Throughput: each thread runs `iters` rounds of 4 independent multiplication chains.
template <class F>
__device__ __forceinline__ void mul_bench(uint32_t* data, int iters) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    const int W = sizeof(F) / 4;
    F x0 = F::load(data + (4 * i) * W), x1 = F::load(data + (4 * i + 1) * W);
    F x2 = F::load(data + (4 * i + 2) * W), x3 = F::load(data + (4 * i + 3) * W);
    const F y = x0;
    for (int k = 0; k < iters; k++) {
        x0 = x0 * y; x1 = x1 * y; x2 = x2 * y; x3 = x3 * y;
    }
    x0.store(data + (4 * i) * W); x1.store(data + (4 * i + 1) * W);
    x2.store(data + (4 * i + 2) * W); x3.store(data + (4 * i + 3) * W);
}

// The same with one chain per thread (x = x * y): the latency-bound form, 4x the threads for the same work.
template <class F>
__device__ __forceinline__ void mul_bench1(uint32_t* data, int iters) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    const int W = sizeof(F) / 4;
    F x0 = F::load(data + i * W);
    const F y = x0;
    for (int k = 0; k < iters; k++) x0 = x0 * y;
    x0.store(data + i * W);
}

extern "C" __global__ void fp_mul(uint32_t* out, const uint32_t* a, const uint32_t* b, long n) {
    binary<fp_t>(out, a, b, n, [](const fp_t& x, const fp_t& y) { return x * y; });
}
extern "C" __global__ void fp_add(uint32_t* out, const uint32_t* a, const uint32_t* b, long n) {
    binary<fp_t>(out, a, b, n, [](const fp_t& x, const fp_t& y) { return x + y; });
}
extern "C" __global__ void fp_sub(uint32_t* out, const uint32_t* a, const uint32_t* b, long n) {
    binary<fp_t>(out, a, b, n, [](const fp_t& x, const fp_t& y) { return x - y; });
}
extern "C" __global__ void fp_sqr(uint32_t* out, const uint32_t* a, long n) {
    unary<fp_t>(out, a, n, [](const fp_t& x) { return x.sqr(); });
}
extern "C" __global__ void fp_neg(uint32_t* out, const uint32_t* a, long n) {
    unary<fp_t>(out, a, n, [](const fp_t& x) { return -x; });
}
extern "C" __global__ void fp_inv(uint32_t* out, const uint32_t* a, long n) {
    unary<fp_t>(out, a, n, [](const fp_t& x) { return x.inverse(); });
}
extern "C" __global__ void fp_inv_binary(uint32_t* out, const uint32_t* a, long n) {
    unary<fp_t>(out, a, n, [](const fp_t& x) { return x.inverse_binary(); });
}
extern "C" __global__ void fp_to_mont(uint32_t* out, const uint32_t* a, long n) {
    unary<fp_t>(out, a, n, [](const fp_t& x) { return x.to_mont(); });
}
extern "C" __global__ void fp_from_mont(uint32_t* out, const uint32_t* a, long n) {
    unary<fp_t>(out, a, n, [](const fp_t& x) { return x.from_mont(); });
}

extern "C" __global__ void fr_mul(uint32_t* out, const uint32_t* a, const uint32_t* b, long n) {
    binary<fr_t>(out, a, b, n, [](const fr_t& x, const fr_t& y) { return x * y; });
}
extern "C" __global__ void fr_add(uint32_t* out, const uint32_t* a, const uint32_t* b, long n) {
    binary<fr_t>(out, a, b, n, [](const fr_t& x, const fr_t& y) { return x + y; });
}
extern "C" __global__ void fr_sub(uint32_t* out, const uint32_t* a, const uint32_t* b, long n) {
    binary<fr_t>(out, a, b, n, [](const fr_t& x, const fr_t& y) { return x - y; });
}
extern "C" __global__ void fr_sqr(uint32_t* out, const uint32_t* a, long n) {
    unary<fr_t>(out, a, n, [](const fr_t& x) { return x.sqr(); });
}
extern "C" __global__ void fr_neg(uint32_t* out, const uint32_t* a, long n) {
    unary<fr_t>(out, a, n, [](const fr_t& x) { return -x; });
}
extern "C" __global__ void fr_inv(uint32_t* out, const uint32_t* a, long n) {
    unary<fr_t>(out, a, n, [](const fr_t& x) { return x.inverse(); });
}
extern "C" __global__ void fr_inv_binary(uint32_t* out, const uint32_t* a, long n) {
    unary<fr_t>(out, a, n, [](const fr_t& x) { return x.inverse_binary(); });
}
extern "C" __global__ void fr_to_mont(uint32_t* out, const uint32_t* a, long n) {
    unary<fr_t>(out, a, n, [](const fr_t& x) { return x.to_mont(); });
}
extern "C" __global__ void fr_from_mont(uint32_t* out, const uint32_t* a, long n) {
    unary<fr_t>(out, a, n, [](const fr_t& x) { return x.from_mont(); });
}

extern "C" __global__ void fp2_mul(uint32_t* out, const uint32_t* a, const uint32_t* b, long n) {
    binary<fp2_t>(out, a, b, n, [](const fp2_t& x, const fp2_t& y) { return x * y; });
}
extern "C" __global__ void fp2_add(uint32_t* out, const uint32_t* a, const uint32_t* b, long n) {
    binary<fp2_t>(out, a, b, n, [](const fp2_t& x, const fp2_t& y) { return x + y; });
}
extern "C" __global__ void fp2_sub(uint32_t* out, const uint32_t* a, const uint32_t* b, long n) {
    binary<fp2_t>(out, a, b, n, [](const fp2_t& x, const fp2_t& y) { return x - y; });
}
extern "C" __global__ void fp2_sqr(uint32_t* out, const uint32_t* a, long n) {
    unary<fp2_t>(out, a, n, [](const fp2_t& x) { return x.sqr(); });
}
extern "C" __global__ void fp2_inv(uint32_t* out, const uint32_t* a, long n) {
    unary<fp2_t>(out, a, n, [](const fp2_t& x) { return x.inverse(); });
}
extern "C" __global__ void fp2_inv_binary(uint32_t* out, const uint32_t* a, long n) {
    unary<fp2_t>(out, a, n, [](const fp2_t& x) { return x.inverse_binary(); });
}

extern "C" __global__ void fp_mul_bench(uint32_t* data, int iters) { mul_bench<fp_t>(data, iters); }
extern "C" __global__ void fp_mul_bench1(uint32_t* data, int iters) { mul_bench1<fp_t>(data, iters); }
extern "C" __global__ void fr_mul_bench(uint32_t* data, int iters) { mul_bench<fr_t>(data, iters); }
extern "C" __global__ void fr_mul_bench1(uint32_t* data, int iters) { mul_bench1<fr_t>(data, iters); }
