// G2 MSM kernels (see msm/pippenger.cuh).
#include "msm/pippenger.cuh"

CUZK_MSM_KERNELS(g2, fp2_t)
