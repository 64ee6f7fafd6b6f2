// G2 fixed-base scalar multiplication for key generation (see keygen.cuh).
#include "keygen.cuh"

CUZK_KEYGEN_KERNELS(g2, cuzk::fp2_t)
