// NTT pass "r4x": ntt/reg.cu's r4 pass with its multiplications split between two multipliers that run on
// different pipes: fastmul build 1 (IMAD.WIDE, the FMA pipe) and build 6 (DFMA, the FP64 pipe; both keep
// the 8 x uint32 Montgomery form, inputs and outputs < r). Nsight Compute on r4 (docs/perf-log.md, 2026-11-29)
// shows the FMA pipe as the busiest unit with FP64 idle; build 6 alone moves the load to FP64 and ALU.
// CUZK_NTT_SPLIT (bit m, m < 4): element m's 4-step twiddle and the butterfly whose first element is m
// multiply on the FP64 pipe. Default 0x6: m = 1, 2 (half of each kind of multiplication).
#define CUZK_FASTMUL_WANT_V6 1
#include "ntt/fr_policy.cuh"
using namespace cuzk;

#ifndef CUZK_NTT_SPLIT
#define CUZK_NTT_SPLIT 0x6
#endif
#ifndef CUZK_NTT_SPLIT_BLOCKS     // blocks of 256 per SM: 2 (128 registers, no spills) or 3 (r4's 80: spills)
#define CUZK_NTT_SPLIT_BLOCKS 2
#endif

struct SplitProduct {             // element m's products on build 6 (FP64 pipe) where its CUZK_NTT_SPLIT bit is set
    static __device__ __forceinline__ fr_t mul(const fr_t& a, const fr_t& b, int m) {
        if (!((CUZK_NTT_SPLIT >> m) & 1)) return a * b;
        fr_t r;
        fastmul::mont_mul_dfma<fr_params>(r.v, a.v, b.v);
        return r;
    }
};

extern "C" __global__ void __launch_bounds__(256, CUZK_NTT_SPLIT_BLOCKS) ntt_r4x_dif(NTT_REG_ARGS) { ntt_reg_pass<2, false, FrPolicy<SplitProduct>>(NTT_REG_CALL); }
extern "C" __global__ void __launch_bounds__(256, CUZK_NTT_SPLIT_BLOCKS) ntt_r4x_dit(NTT_REG_ARGS) { ntt_reg_pass<2, true, FrPolicy<SplitProduct>>(NTT_REG_CALL); }
