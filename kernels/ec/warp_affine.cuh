// An XYZZ G1 point to affine with the warp's one inversion (ff/warp_inverse.cuh): 1/Z = ZZ / ZZZ,
// x = X / Z^2, y = Y / ZZZ. Every lane of the warp must call it; a lane without a finite point (fin false)
// gets zero limbs. Used by the MSM's tables (msm/fixed.cu) and keygen's G1 fixed-base products.
#pragma once
#include "ec/curve.cuh"
#include "ff/warp_inverse.cuh"

namespace cuzk {

__device__ __forceinline__ affine_t<fp_t> warp_to_affine(const xyzz_t<fp_t>& p, bool fin) {
    const fp_t zi = warp_batch_inverse(fin ? p.ZZZ : fp_t::one());
    affine_t<fp_t> a;
    f_set_zero(a.x);
    f_set_zero(a.y);
    if (fin) {
        const fp_t iZ = f_mul(zi, p.ZZ);
        a.x = f_mul(p.X, f_sqr(iZ));
        a.y = f_mul(p.Y, zi);
    }
    return a;
}

}  // namespace cuzk
