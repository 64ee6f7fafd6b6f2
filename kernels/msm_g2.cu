// G2 MSM kernels (see msm.cuh); with I1's builds also the affine bucket accumulation (msm_affine.cuh,
// optimization M3), 2 blocks an SM.
#if CUZK_FP_CALL
#include "msm_affine.cuh"
#else
#include "msm.cuh"
#endif

CUZK_MSM_KERNELS(g2, fp2_t)
#if CUZK_FP_CALL
CUZK_MSM_AFFINE_KERNELS(g2, fp2_t, CUZK_AFFINE_BLOCKS_PER_SM_G2)
#endif
