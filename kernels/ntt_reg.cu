// NTT over Fr, register-radix pass: same pass plan and math as ntt.cu (a size-2^k NTT down
// each column of a 2^k x n2 sub-problem, plus the 4-step twiddle), but each thread keeps
// R = 2^LR elements of one column in registers and runs up to LR radix-2 stages on them
// before exchanging through shared memory: ceil(k / LR) groups, ceil(k / LR) - 1 exchanges
// and barriers per pass (ntt.cu: k of each).
//
// A group at offset b0 holds rows base + (m << b0), m < R (base has bits [b0, b0+LR) zero)
// and runs stages b0 + t for t in [tlo, thi). Each thread writes back exactly the shared-memory
// slots it read, so one barrier per exchange is enough.
//
// Multiplications per element in one pass of k stages (R = 8, k = 9):
//   butterflies (k - 1 - 1/2 - 1/4) / 2 = 3.625: stage 0 has w = 1, and in the group at
//   b0 = 0 the pairs with w = 1 (half of stage 1, a quarter of stage 2) are skipped;
//   4-step twiddle: 1 (tw_mode 2: one lookup in a table of w_sub powers) or
//   2 (tw_mode 1: tw_hi * tw_lo, then the multiplication itself); 0 in the last pass.
// At 2^27 (9+9+9, tables for sub-problems up to 2^18): 3.625 * 3 + 2 + 1 = 13.875 per element
// (ntt.cu: 4 * 3 + 2 * 2 = 16).
#include "field.cuh"
using namespace cuzk;

#include "ntt_reg.cuh"

// w_N^(e_sub << shift), e_sub < 2^log_sub. tw_mode 2: tw1[e_sub << tw1_shift] (one load);
// tw_mode 1: tw_hi[e >> bits] * tw_lo[e & mask] (one multiplication).
__device__ __forceinline__ fr_t outer_tw(unsigned e_sub, int tw_mode, int shift, const uint32_t* tw_lo,
                                         const uint32_t* tw_hi, int bits, const uint32_t* tw1, int tw1_shift) {
    if (tw_mode == 2) return fr_t::load(tw1 + ((unsigned long long)e_sub << tw1_shift) * FR_W);
    const unsigned long long e = (unsigned long long)e_sub << shift, mask = (1ull << bits) - 1;
    return fr_t::load(tw_hi + (e >> bits) * FR_W) * fr_t::load(tw_lo + (e & mask) * FR_W);
}

template <int LR, bool DIT>
__device__ __forceinline__ void ntt_reg_pass(uint32_t* data, int log_n, int log_sub, int k, int log_c,
                                             const uint32_t* __restrict__ tw_small, int tw_mode,
                                             const uint32_t* __restrict__ tw_lo, const uint32_t* __restrict__ tw_hi,
                                             int tw_bits, const uint32_t* __restrict__ tw1, int tw1_shift) {
    constexpr int R = 1 << LR;
    extern __shared__ uint32_t sm[];
    const int E = 1 << (k + log_c);
    const int log_n2 = log_sub - k, log_g = log_n2 - log_c, shift = log_n - log_sub;
    const unsigned long long s = blockIdx.x >> log_g, cg = blockIdx.x & ((1u << log_g) - 1);
    const int c = threadIdx.x & ((1 << log_c) - 1), q = threadIdx.x >> log_c;
    const unsigned i2 = (unsigned)(cg << log_c) + c;       // column, < 2^log_n2
    uint32_t* col = data + (((unsigned long long)blockIdx.y << log_n) + (s << log_sub) + i2) * FR_W;
    const int ng = (k + LR - 1) / LR;
    fr_t x[R];

#pragma unroll 1
    for (int g = 0; g < ng; g++) {
        int s_lo, s_hi;
        if (DIT) { s_lo = g * LR; s_hi = min(k, s_lo + LR); }
        else { s_hi = k - g * LR; s_lo = max(0, s_hi - LR); }
        const int b0 = min(s_lo, k - LR), tlo = s_lo - b0, thi = s_hi - b0;
        const int lo = q & ((1 << b0) - 1);
        const int base = lo | ((q >> b0) << (b0 + LR));

        if (g == 0) {
#pragma unroll
            for (int m = 0; m < R; m++)
                x[m] = fr_t::load(col + ((unsigned long long)(base + (m << b0)) << log_n2) * FR_W);
            if (DIT && tw_mode) {              // b0 == 0 here: rows base + m
#pragma unroll
                for (int m = 0; m < R; m++) {
                    const unsigned r = __brev(base + m) >> (32 - k);
                    x[m] = x[m] * outer_tw(i2 * r, tw_mode, shift, tw_lo, tw_hi, tw_bits, tw1, tw1_shift);
                }
            }
        } else {
            __syncthreads();
#pragma unroll
            for (int m = 0; m < R; m++) {
                const int ph = swz(((base + (m << b0)) << log_c) + c);
#pragma unroll
                for (int w = 0; w < FR_W; w++) x[m].v[w] = sm[w * E + ph];
            }
        }

#pragma unroll
        for (int tt = 0; tt < LR; tt++) {
            const int t = DIT ? tt : LR - 1 - tt;
            if (t < tlo || t >= thi) continue;
            const int st = b0 + t;
#pragma unroll
            for (int m = 0; m < R; m++) {
                if (m & (1 << t)) continue;
                const int jm = m & ((1 << t) - 1);
                const bool one = b0 == 0 && jm == 0;       // w = 1, the same for the whole block
                const uint32_t* wp = tw_small + ((unsigned)(lo + (jm << b0)) << (NTT_KMAX - 1 - st)) * FR_W;
                fr_t& a = x[m];
                fr_t& b = x[m + (1 << t)];
                if (DIT) {
                    fr_t y = one ? b : b * fr_t::load(wp);
                    b = a - y;
                    a = a + y;
                } else {
                    b = a - b;
                    a = a + a - b;                  // a + b_old: one more add, but no spills
                                                    // at 128 registers (d = a - b; a += b spills)
                    if (!one) b = b * fr_t::load(wp);
                }
            }
        }

        if (g == ng - 1) {
#pragma unroll
            for (int m = 0; m < R; m++) {      // one element at a time: each dies at its store
                if (!DIT && tw_mode) {         // b0 == 0 here: rows base + m
                    const unsigned r = __brev(base + m) >> (32 - k);
                    x[m] = x[m] * outer_tw(i2 * r, tw_mode, shift, tw_lo, tw_hi, tw_bits, tw1, tw1_shift);
                }
                x[m].store(col + ((unsigned long long)(base + (m << b0)) << log_n2) * FR_W);
            }
        } else {
#pragma unroll
            for (int m = 0; m < R; m++) {
                const int ph = swz(((base + (m << b0)) << log_c) + c);
#pragma unroll
                for (int w = 0; w < FR_W; w++) sm[w * E + ph] = x[m].v[w];
            }
        }
    }
}

// R = 8: up to 256 threads (2^11 elements), at most 128 registers.
extern "C" __global__ void __launch_bounds__(256, 2) ntt_r8_dif(NTT_REG_ARGS) { ntt_reg_pass<3, false>(NTT_REG_CALL); }
extern "C" __global__ void __launch_bounds__(256, 2) ntt_r8_dit(NTT_REG_ARGS) { ntt_reg_pass<3, true>(NTT_REG_CALL); }
// R = 4: up to 256 threads (2^10 elements), at most 80 registers.
extern "C" __global__ void __launch_bounds__(256, 3) ntt_r4_dif(NTT_REG_ARGS) { ntt_reg_pass<2, false>(NTT_REG_CALL); }
extern "C" __global__ void __launch_bounds__(256, 3) ntt_r4_dit(NTT_REG_ARGS) { ntt_reg_pass<2, true>(NTT_REG_CALL); }
