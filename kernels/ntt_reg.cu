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

struct Fr32 {                    // r4, r8: fr_t in registers and shared memory (32 B an element)
    using T = fr_t;
    using S = uint32_t;
    static constexpr int SMW = FR_W;
    static __device__ __forceinline__ T load(const uint32_t* p) { return T::load(p); }
    static __device__ __forceinline__ void store(const T& x, uint32_t* p) { x.store(p); }
    static __device__ __forceinline__ S word(const T& x, int w) { return x.v[w]; }
    static __device__ __forceinline__ void set_word(T& x, int w, S v) { x.v[w] = v; }
    static __device__ __forceinline__ T outer(const T& x, unsigned e_sub, int tw_mode, int shift, const uint32_t* tw_lo,
                                              const uint32_t* tw_hi, int bits, const uint32_t* tw1, int tw1_shift, int) {
        return x * outer_tw(e_sub, tw_mode, shift, tw_lo, tw_hi, bits, tw1, tw1_shift);
    }
    static __device__ __forceinline__ void dit(T& a, T& b, bool one, const uint32_t* wp, int) {
        T y = one ? b : b * T::load(wp);
        b = a - y;
        a = a + y;
    }
    static __device__ __forceinline__ void dif(T& a, T& b, bool one, const uint32_t* wp, int) {
        b = a - b;
        a = a + a - b;                  // a + b_old: one more add, but no spills
                                        // at 128 registers (d = a - b; a += b spills)
        if (!one) b = b * T::load(wp);
    }
};

// R = 8: up to 256 threads (2^11 elements), at most 128 registers.
extern "C" __global__ void __launch_bounds__(256, 2) ntt_r8_dif(NTT_REG_ARGS) { ntt_reg_pass<3, false, Fr32>(NTT_REG_CALL); }
extern "C" __global__ void __launch_bounds__(256, 2) ntt_r8_dit(NTT_REG_ARGS) { ntt_reg_pass<3, true, Fr32>(NTT_REG_CALL); }
// R = 4: up to 256 threads (2^10 elements), 3 blocks an SM: at most 80 registers. CUZK_NTT_R4_BLOCKS (an
// experiment define) trades registers for resident warps: 2 (128 registers) or 4 (64).
#ifndef CUZK_NTT_R4_BLOCKS
#define CUZK_NTT_R4_BLOCKS 3
#endif
extern "C" __global__ void __launch_bounds__(256, CUZK_NTT_R4_BLOCKS) ntt_r4_dif(NTT_REG_ARGS) { ntt_reg_pass<2, false, Fr32>(NTT_REG_CALL); }
extern "C" __global__ void __launch_bounds__(256, CUZK_NTT_R4_BLOCKS) ntt_r4_dit(NTT_REG_ARGS) { ntt_reg_pass<2, true, Fr32>(NTT_REG_CALL); }
