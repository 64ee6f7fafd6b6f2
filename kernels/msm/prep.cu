// prep_msm: classify Montgomery Fr scalars as 0, 1 or other, for a batch of circuits
// (blockIdx.y = circuit), and merge: a position is 'other' for the batch when any circuit
// has an 'other' scalar there.
#include "ff/field.cuh"
using namespace cuzk;

#define FR_W 8

extern "C" __global__ void classify_scalars(unsigned char* cls, unsigned int* other_any, const uint32_t* z, long long n) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const long long off = (long long)blockIdx.y * n;
    const fr_t v = fr_t::load(z + (off + i) * FR_W);
    const unsigned char c = v.is_zero() ? 0 : (v == fr_t::one() ? 1 : 2);
    cls[off + i] = c;
    if (c == 2) other_any[i] = 1;          // benign race: every writer stores 1
}
