// G1 MSM kernels (see msm.cuh), with the affine bucket accumulation (msm_affine.cuh).
#include "msm_affine.cuh"

CUZK_MSM_KERNELS(g1, fp_t)
CUZK_MSM_AFFINE_KERNELS(g1, fp_t)
