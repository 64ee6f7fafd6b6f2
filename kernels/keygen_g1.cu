// G1 fixed-base scalar multiplication for key generation (see keygen.cuh).
#include "keygen.cuh"

CUZK_KEYGEN_KERNELS(g1, cuzk::fp_t)
