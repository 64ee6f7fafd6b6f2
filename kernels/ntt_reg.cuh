// Pieces shared by the register-radix NTT passes: kernels/ntt_reg.cu (r4, r8: elements as fr_t)
// and kernels/ntt_dfma.cu (r4d: elements as 52-bit limbs for the FP64 multiplier).
#pragma once

#define NTT_KMAX 10      // tw_small[i] = w_(2^NTT_KMAX)^i, i < 2^(NTT_KMAX - 1) (ntt.cu's table)
#define FR_W 8

// Shared memory is word-planar (sm[w * E + phys]). phys XORs slot bits 5..7 into the bank bits:
// with these constants every group's 32-lane access hits 32 banks, for LR = 2 and 3 and any
// b0 and log_c (checked on the CPU: tests/test_ntt_reg_plan.py).
__device__ __forceinline__ int swz(int s) {
    const int h = s >> 5;
    return s ^ ((-(h & 1) & 10) ^ (-((h >> 1) & 1) & 21) ^ (-((h >> 2) & 1) & 25));
}

#define NTT_REG_ARGS                                                                              \
    uint32_t *data, int log_n, int log_sub, int k, int log_c, const uint32_t *__restrict__ tw_small, \
        int tw_mode, const uint32_t *__restrict__ tw_lo, const uint32_t *__restrict__ tw_hi, int tw_bits, \
        const uint32_t *__restrict__ tw1, int tw1_shift
#define NTT_REG_CALL data, log_n, log_sub, k, log_c, tw_small, tw_mode, tw_lo, tw_hi, tw_bits, tw1, tw1_shift
