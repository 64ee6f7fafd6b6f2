// G2 MSM kernels (see msm.cuh).
#include "msm.cuh"

CUZK_MSM_KERNELS(g2, fp2_t)
