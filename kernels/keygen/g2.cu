// G2 fixed-base scalar multiplication for key generation (see keygen/fixed_base.cuh).
#include "keygen/fixed_base.cuh"

CUZK_KEYGEN_KERNELS(g2, cuzk::fp2_t)
