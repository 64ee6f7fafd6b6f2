// Bit reversal by tiles through shared memory (optimization N5): out[bitrev(j)] = f(j) over 2^log_n
// elements, log_n >= 2 * BR_T, one tile a block, one element a thread.
//
// j = (a, m, c): a the top BR_T bits, c the low BR_T bits, m the middle ones. Its output index is
// (rev(c), rev(m), rev(a)). A block takes one m and all 2^BR_T x 2^BR_T pairs (a, c): it reads 2^BR_T runs
// of 2^BR_T consecutive elements (c varies) and writes 2^BR_T runs of 2^BR_T consecutive elements (rev(a)
// varies): 512-byte runs both ways, where the one-pass kernel writes every element alone (32 B).
//
// Shared memory is word-planar (sm[w * BR_TILE + slot]); slot(a, c) = a * 2^BR_T + (c ^ (a & 14)) puts the
// 32 lanes of a warp in 32 banks both when it stores (a in {2i, 2i + 1}, c any) and when it loads (c in
// {2i, 2i + 1}, a any): bank = (a & 1) * 16 + (c ^ (a & 14)).
#pragma once
#include "ff/field.cuh"

#define BR_T 4
#define BR_TILE (1 << (2 * BR_T))      // 256 elements (8 KiB): the block size

__device__ __forceinline__ int br_slot(int a, int c) { return (a << BR_T) | (c ^ (a & 14)); }
__device__ __forceinline__ int br_rev(int x) { return __brev(x) >> (32 - BR_T); }

// F: fr_t f(unsigned long long j, unsigned long long e), the value of input j, whose output index is e.
// out: this batch's vector (blockIdx.y is the caller's).
template <class F>
__device__ __forceinline__ void bitrev_tile(uint32_t* out, int log_n, const F& f) {
    __shared__ uint32_t sm[8 * BR_TILE];
    const int mid = log_n - 2 * BR_T;
    const unsigned long long m = blockIdx.x;
    const unsigned long long rm = mid ? __brevll(m) >> (64 - mid) : 0;
    const int tid = threadIdx.x, hi = tid >> BR_T, lo = tid & ((1 << BR_T) - 1);
    {   // read: thread (a, c) = (hi, lo)
        const unsigned long long j = ((unsigned long long)hi << (log_n - BR_T)) | (m << BR_T) | lo;
        const unsigned long long e = ((unsigned long long)br_rev(lo) << (log_n - BR_T)) | (rm << BR_T) | br_rev(hi);
        const cuzk::fr_t v = f(j, e);
        const int s = br_slot(hi, lo);
#pragma unroll
        for (int w = 0; w < 8; w++) sm[w * BR_TILE + s] = v.v[w];
    }
    __syncthreads();
    {   // write: thread (c, rev(a)) = (hi, lo) stores output (rev(c), rev(m), rev(a))
        const int s = br_slot(br_rev(lo), hi);
        cuzk::fr_t v;
#pragma unroll
        for (int w = 0; w < 8; w++) v.v[w] = sm[w * BR_TILE + s];
        const unsigned long long e = ((unsigned long long)br_rev(hi) << (log_n - BR_T)) | (rm << BR_T) | lo;
        v.store(out + e * 8);
    }
}
