// G1 MSM kernels (see msm/pippenger.cuh), with the affine bucket accumulation (msm/affine.cuh).
#include "msm/affine.cuh"

CUZK_MSM_KERNELS(g1, fp_t)
CUZK_MSM_AFFINE_KERNELS(g1, fp_t)
