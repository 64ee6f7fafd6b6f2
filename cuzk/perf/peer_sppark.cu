// The peer's G1 MSM and NTT over device-resident inputs, for `cuzk peer` (cuzk/perf/peer.py): built at run
// time against supranational's sppark (and the blst headers its BLS12-381 fields include), fetched at a
// pinned commit; neither is part of this repository. Both take cuzk's device layouts as they are: affine G1
// points as 2 x 12 little-endian 32-bit limbs and Fr as 8, all in Montgomery form, which is sppark's
// fp_t/fr_t device representation.
#include <cuda.h>
#include <cstring>

#include <ff/bls12-381.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;

#include <msm/pippenger.cuh>
#include <ntt/ntt.cuh>

// Sum s_i P_i of n device-resident points and Montgomery scalars; `out` gets the Jacobian (X, Y, Z), each
// 12 limbs in Montgomery form (peer_point_bytes() bytes). Returns the CUDA error code (0: done).
// sppark works on streams of its own, made non-blocking: they do not wait for the caller's work on the legacy
// stream (the copy of the inputs), nor does the caller wait for sppark's. Each entry point syncs the device at
// both ends, so the inputs are whole when sppark reads them and its result is whole when the caller does.
static int device_sync()
{
    return (int)cudaDeviceSynchronize();
}

extern "C" int peer_msm_g1(void* out, const void* d_points, const void* d_scalars, size_t n)
{
    if (int e = device_sync())
        return e;
    msm_t<bucket_t, point_t, affine_t, scalar_t> msm{nullptr, n};
    point_t r;
    RustError e = msm.invoke(r, dev_ptr_t<affine_t>((affine_t*)d_points), n,
                             dev_ptr_t<scalar_t>((scalar_t*)d_scalars), true);
    std::memcpy(out, &r, sizeof(r));
    return e.code ? e.code : device_sync();
}

// The forward NTT over 2^lg elements in place, natural order in and out (sppark's NN order).
struct PeerNTT : public NTT {
    static int forward(fr_t* d, uint32_t lg)
    {
        const gpu_t& gpu = select_gpu();
        if (int e = device_sync())
            return e;
        try {
            NTT_internal(d, lg, InputOutputOrder::NN, Direction::forward, Type::standard,
                         const_cast<gpu_t&>(gpu));
            gpu.sync();
        } catch (const cuda_error& e) {
            return e.code();
        }
        return device_sync();
    }
};

extern "C" int peer_ntt(void* d_inout, uint32_t lg) { return PeerNTT::forward((fr_t*)d_inout, lg); }

extern "C" size_t peer_point_bytes() { return sizeof(point_t); }
