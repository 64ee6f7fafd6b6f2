// a/b/c evaluation: the sparse matrix-vector product of synthesis (CSR, one thread per row),
// the bellman input rows, zero padding to the domain, and the a*b = c check.
#include "ff/field.cuh"
using namespace cuzk;

#define FR_W 8

// out[row] = sum_k coeffs[k] * z[cols[k]] for rows < m; Montgomery in and out.
extern "C" __global__ void spmv_csr(uint32_t* out, const long long* __restrict__ indptr, const int* __restrict__ cols,
                                    const uint32_t* __restrict__ coeffs, const uint32_t* __restrict__ z, long long m) {
    const long long row = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (row >= m) return;
    fr_t acc = fr_t::zero();
    const long long end = indptr[row + 1];
    for (long long k = indptr[row]; k < end; k++)
        acc += fr_t::load(coeffs + k * FR_W) * fr_t::load(z + (long long)cols[k] * FR_W);
    acc.store(out + row * FR_W);
}

// The same with compact coefficients: coeffs = table[index[k]] (a small table of distinct values).
extern "C" __global__ void spmv_csr_table(uint32_t* out, const long long* __restrict__ indptr,
                                          const int* __restrict__ cols, const unsigned short* __restrict__ index,
                                          const uint32_t* __restrict__ table, const uint32_t* __restrict__ z,
                                          long long m) {
    const long long row = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (row >= m) return;
    fr_t acc = fr_t::zero();
    const long long end = indptr[row + 1];
    for (long long k = indptr[row]; k < end; k++)
        acc += fr_t::load(table + (long long)index[k] * FR_W) * fr_t::load(z + (long long)cols[k] * FR_W);
    acc.store(out + row * FR_W);
}

// Rows m .. n-1 of a, b, c (abc = a | b | c, n each): a = z_i for the input rows, else 0.
extern "C" __global__ void abc_tail(uint32_t* abc, const uint32_t* __restrict__ z, long long m, long long num_inputs,
                                    long long n) {
    const long long i = m + blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const fr_t a = (i - m < num_inputs) ? fr_t::load(z + (i - m) * FR_W) : fr_t::zero();
    a.store(abc + i * FR_W);
    fr_t::zero().store(abc + (n + i) * FR_W);
    fr_t::zero().store(abc + (2 * n + i) * FR_W);
}

// bad[i] = 1 where a*b != c, over the first m rows.
extern "C" __global__ void abc_check(unsigned char* bad, const uint32_t* abc, long long m, long long n) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= m) return;
    const fr_t a = fr_t::load(abc + i * FR_W), b = fr_t::load(abc + (n + i) * FR_W),
               c = fr_t::load(abc + (2 * n + i) * FR_W);
    bad[i] = (a * b == c) ? 0 : 1;
}
