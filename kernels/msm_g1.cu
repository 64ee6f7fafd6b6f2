// G1 MSM kernels (see msm.cuh).
#include "msm.cuh"

CUZK_MSM_KERNELS(g1, fp_t)
