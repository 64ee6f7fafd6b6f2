// G2 fixed-base scalar multiplication for key generation (keygen/fixed_base.cuh).
#include "keygen/fixed_base.cuh"

extern "C" __global__ void __launch_bounds__(128)
kg_fixed_base_g2(uint32_t* out, unsigned char* inf, const uint32_t* scalars, long long n, const uint32_t* table,
                  int c, int nw, uint32_t* scratch) {
    cuzk::kg::fixed_base<cuzk::fp2_t>(out, inf, scalars, n, table, c, nw, scratch);
}
