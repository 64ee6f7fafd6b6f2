// NTT over Fr, register-radix pass: same pass plan and math as ntt/ntt.cu (a size-2^k NTT down
// each column of a 2^k x n2 sub-problem, plus the 4-step twiddle), but each thread keeps
// R = 2^LR elements of one column in registers and runs up to LR radix-2 stages on them
// before exchanging through shared memory: ceil(k / LR) groups, ceil(k / LR) - 1 exchanges
// and barriers per pass (ntt/ntt.cu: k of each).
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
// R = 4, k = 9: 19 a thread of four elements with N13 (groups (8) (7,6) (5,4) (3,2) (1,0): 2 + 12 + 1 in butterflies,
// 4 outer), 20 without it (groups (8,7) ... (2,1) (0): stage 1's w = 1 pairs sit at b0 = 1, per thread, not skipped).
// At 2^27 (9+9+9, tables for sub-problems up to 2^18): 3.625 * 3 + 2 + 1 = 13.875 per element
// (ntt/ntt.cu: 4 * 3 + 2 * 2 = 16).
#include "ntt/fr_policy.cuh"

using Fr32 = FrPolicy<>;         // r4, r8: fr_t and its own product

// R = 8: up to 256 threads (2^11 elements), at most 128 registers.
extern "C" __global__ void __launch_bounds__(256, 2) ntt_r8_dif(NTT_REG_ARGS) { ntt_reg_pass<3, false, Fr32>(NTT_REG_CALL); }
extern "C" __global__ void __launch_bounds__(256, 2) ntt_r8_dit(NTT_REG_ARGS) { ntt_reg_pass<3, true, Fr32>(NTT_REG_CALL); }
// R = 4: up to 256 threads (2^10 elements), 3 blocks an SM: at most 80 registers.
extern "C" __global__ void __launch_bounds__(256, 3) ntt_r4_dif(NTT_REG_ARGS) { ntt_reg_pass<2, false, Fr32>(NTT_REG_CALL); }
extern "C" __global__ void __launch_bounds__(256, 3) ntt_r4_dit(NTT_REG_ARGS) { ntt_reg_pass<2, true, Fr32>(NTT_REG_CALL); }
