// Limb layout shared by host (numpy uint32) and device: little-endian 32-bit limbs,
// Montgomery form. Generated from cuzk/field.py; tests/test_kernels_layout.py checks it.
#pragma once
#include <cstdint>

#define CUZK_FP_LIMBS 12
#define CUZK_FR_LIMBS 8

namespace cuzk {
struct fp_t { uint32_t l[CUZK_FP_LIMBS]; };
struct fr_t { uint32_t l[CUZK_FR_LIMBS]; };
// G1 affine: x | y (24 words); G2 affine: x.c0 | x.c1 | y.c0 | y.c1 (48 words).
// Infinity is a separate flag array, never encoded in the limbs.
struct g1_affine_t { fp_t x, y; };
struct g2_affine_t { fp_t x0, x1, y0, y1; };

__device__ __constant__ const uint32_t FP_MODULUS[CUZK_FP_LIMBS] = {0xffffaaabu, 0xb9feffffu, 0xb153ffffu, 0x1eabfffeu, 0xf6b0f624u, 0x6730d2a0u, 0xf38512bfu, 0x64774b84u, 0x434bacd7u, 0x4b1ba7b6u, 0x397fe69au, 0x1a0111eau};
__device__ __constant__ const uint32_t FP_MONT_ONE[CUZK_FP_LIMBS] = {0x0002fffdu, 0x76090000u, 0xc40c0002u, 0xebf4000bu, 0x53c758bau, 0x5f489857u, 0x70525745u, 0x77ce5853u, 0xa256ec6du, 0x5c071a97u, 0xfa80e493u, 0x15f65ec3u};
__device__ __constant__ const uint32_t FP_MONT_R2[CUZK_FP_LIMBS] = {0x1c341746u, 0xf4df1f34u, 0x09d104f1u, 0x0a76e6a6u, 0x4c95b6d5u, 0x8de5476cu, 0x939d83c0u, 0x67eb88a9u, 0xb519952du, 0x9a793e85u, 0x92cae3aau, 0x11988fe5u};
constexpr uint32_t FP_INV32 = 0xfffcfffdu;

__device__ __constant__ const uint32_t FR_MODULUS[CUZK_FR_LIMBS] = {0x00000001u, 0xffffffffu, 0xfffe5bfeu, 0x53bda402u, 0x09a1d805u, 0x3339d808u, 0x299d7d48u, 0x73eda753u};
__device__ __constant__ const uint32_t FR_MONT_ONE[CUZK_FR_LIMBS] = {0xfffffffeu, 0x00000001u, 0x00034802u, 0x5884b7fau, 0xecbc4ff5u, 0x998c4fefu, 0xacc5056fu, 0x1824b159u};
__device__ __constant__ const uint32_t FR_MONT_R2[CUZK_FR_LIMBS] = {0xf3f29c6du, 0xc999e990u, 0x87925c23u, 0x2b6cedcbu, 0x7254398fu, 0x05d31496u, 0x9f59ff11u, 0x0748d9d9u};
constexpr uint32_t FR_INV32 = 0xffffffffu;
}  // namespace cuzk
