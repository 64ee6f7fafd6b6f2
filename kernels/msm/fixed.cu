// The G1 MSM over precomputed multiples of fixed bases (optimization P2; host: cuzk/gpu/msm/fixed.py, CPU
// model: tests/gpu/test_msm_model.py).
//
// Tables: t blocks of n rows, table[j n + i] = 2^(c G j) P_i (affine, Montgomery), made once when the key is
// resident: block j + 1 is block j doubled c G times (msm_fixed_table). Window w = j G + g of scalar i is then
// a digit of row j n + i at weight 2^(c g): the windows w = g, G + g, 2G + g, ... share group g's 2^(c-1)
// buckets. One sort pass serves t windows a group, and the window reduction has G groups to fold, not nw
// windows; the keys are those of msm_digits, so the sort, the affine rounds, the bucket sums and the window
// reduction of msm/g1.cu run unchanged over the table's rows.
#include "ec/curve.cuh"
#include "ec/warp_affine.cuh"
#include "msm/digit.cuh"
using namespace cuzk;

typedef unsigned long long u64;
typedef long long i64;

// out[i] = 2^m in[i] for the n affine G1 points of in (m >= 1); a base at infinity (inf[i]) gets zero limbs,
// which no key ever reads. A multiple of an r-torsion point by 2^m is never infinity (r is odd), so every
// other lane has ZZZ != 0 for the warp's one inversion. Threads walk the points in a grid-stride loop whose
// trip count is uniform per warp (the inversion's shuffles need all 32 lanes).
extern "C" __global__ void __launch_bounds__(128)
msm_fixed_table(uint32_t* __restrict__ out, const uint32_t* __restrict__ in, const unsigned char* __restrict__ inf,
                i64 n, int m) {
    constexpr int AW = affine_t<fp_t>::WORDS;
    const int lane = threadIdx.x & 31;
    const i64 tid = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    const i64 stride = (i64)gridDim.x * blockDim.x;
#pragma unroll 1
    for (i64 base = tid - lane; base < n; base += stride) {     // uniform per warp
        const i64 i = base + lane;
        const bool fin = i < n && !inf[i];
        xyzz_t<fp_t> acc = xyzz_t<fp_t>::inf();
        if (fin) {
            acc = xyzz_t<fp_t>::dbl_affine(affine_t<fp_t>::load(in + i * AW));
#pragma unroll 1
            for (int k = 1; k < m; k++) acc = acc.dbl();
        }
        const affine_t<fp_t> a = warp_to_affine(acc, fin);
        if (i < n) a.store(out + i * AW);
    }
}

// The keys of groups [g0, g1) for scalars over t tables of n rows and G groups: window w = j G + g (j < t) at
// keys[((g - g0) t + j) n + i], bucket (g - g0) 2^(c-1) + |d_w| - 1, index j n + i (its table row), so that within
// a bucket the keys stand by ascending index, as msm_plan.sort_bits needs. A zero digit, a window past the
// scalar's top (w >= nw: its digit is 0) or a base at infinity gives ~0 (sorts last). t n < 2^31.
extern "C" __global__ void msm_digits_fixed(u64* keys, const uint32_t* __restrict__ scalars,
                                            const unsigned char* __restrict__ inf, i64 n, int c, int G, int t,
                                            int g0, int g1) {
    const i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const fr_t s = fr_t::load(scalars + i * CUZK_FR_LIMBS).from_mont();
    const bool skip = inf[i] != 0;
    uint32_t carry = 0;
    int w = 0;                                  // the windows in order (the carry), block by block
#pragma unroll 1
    for (int j = 0; j < t; j++) {
        const int last = j + 1 < t ? G : g1;    // the last block's later groups are no pass's business here
#pragma unroll 1
        for (int g = 0; g < last; g++, w++) {
            bool neg;
            const uint32_t d = window_digit(s, w, c, carry, neg);
            if (g < g0 || g >= g1) continue;
            u64 key = ~0ull;
            if (d != 0 && !skip) {
                const u64 bucket = (u64)(g - g0) * (1ull << (c - 1)) + (d - 1);
                key = (bucket << 32) | ((u64)((i64)j * n + i) << 1) | (u64)neg;
            }
            keys[((i64)(g - g0) * t + j) * n + i] = key;
        }
    }
}
