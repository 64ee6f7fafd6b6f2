// NTT pass "r4x": ntt_reg.cu's r4 pass with its multiplications split between two multipliers that run on
// different pipes: fastmul build 1 (IMAD.WIDE, the FMA pipe) and build 6 (DFMA, the FP64 pipe; both keep
// the 8 x uint32 Montgomery form, inputs and outputs < r). Nsight Compute on r4 (docs/perf-log.md, session 4)
// shows the FMA pipe as the busiest unit with FP64 idle; build 6 alone moves the load to FP64 and ALU.
// CUZK_NTT_SPLIT (bit m, m < 4): element m's 4-step twiddle and the butterfly whose first element is m
// multiply on the FP64 pipe. Default 0x6: m = 1, 2 (half of each kind of multiplication).
#define CUZK_FASTMUL_WANT_V6 1
#include "field.cuh"
using namespace cuzk;

#include "ntt_reg.cuh"

#ifndef CUZK_NTT_SPLIT
#define CUZK_NTT_SPLIT 0x6
#endif
#ifndef CUZK_NTT_SPLIT_BLOCKS     // blocks of 256 per SM: 2 (128 registers, no spills) or 3 (r4's 80: spills)
#define CUZK_NTT_SPLIT_BLOCKS 2
#endif

__device__ __forceinline__ fr_t mul_by(const fr_t& a, const fr_t& b, int m) {
    if (!((CUZK_NTT_SPLIT >> m) & 1)) return a * b;
    fr_t r;
    fastmul::mont_mul_dfma<fr_params>(r.v, a.v, b.v);
    return r;
}

struct SplitFr {                 // fr_t in registers and shared memory, as ntt_reg.cu's Fr32
    using T = fr_t;
    using S = uint32_t;
    static constexpr int SMW = FR_W;
    static __device__ __forceinline__ T load(const uint32_t* p) { return T::load(p); }
    static __device__ __forceinline__ void store(const T& x, uint32_t* p) { x.store(p); }
    static __device__ __forceinline__ S word(const T& x, int w) { return x.v[w]; }
    static __device__ __forceinline__ void set_word(T& x, int w, S v) { x.v[w] = v; }
    static __device__ __forceinline__ T outer(const T& x, unsigned e_sub, int tw_mode, int shift, const uint32_t* tw_lo,
                                              const uint32_t* tw_hi, int bits, const uint32_t* tw1, int tw1_shift,
                                              int m) {
        fr_t w;
        if (tw_mode == 2) {
            w = fr_t::load(tw1 + ((unsigned long long)e_sub << tw1_shift) * FR_W);
        } else {
            const unsigned long long e = (unsigned long long)e_sub << shift, mask = (1ull << bits) - 1;
            w = mul_by(fr_t::load(tw_hi + (e >> bits) * FR_W), fr_t::load(tw_lo + (e & mask) * FR_W), m ^ 1);
        }
        return mul_by(x, w, m);
    }
    static __device__ __forceinline__ void dit(T& a, T& b, bool one, const uint32_t* wp, int m) {
        T y = one ? b : mul_by(b, T::load(wp), m);
        b = a - y;
        a = a + y;
    }
    static __device__ __forceinline__ void dif(T& a, T& b, bool one, const uint32_t* wp, int m) {
        b = a - b;
        a = a + a - b;
        if (!one) b = mul_by(b, T::load(wp), m);
    }
};

extern "C" __global__ void __launch_bounds__(256, CUZK_NTT_SPLIT_BLOCKS) ntt_r4x_dif(NTT_REG_ARGS) { ntt_reg_pass<2, false, SplitFr>(NTT_REG_CALL); }
extern "C" __global__ void __launch_bounds__(256, CUZK_NTT_SPLIT_BLOCKS) ntt_r4x_dit(NTT_REG_ARGS) { ntt_reg_pass<2, true, SplitFr>(NTT_REG_CALL); }
