// Shared by the host builds of kernel headers (mul_host_check.cpp, inv_host_check.cpp): the field parameters as
// host constants (include after ff/layout.cuh) and a hex reader into little-endian 32-bit limbs.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace cuzk {
struct fp_host { static constexpr int N = CUZK_FP_LIMBS; static constexpr uint32_t INV = FP_INV32;
                 static constexpr uint32_t mod(int i) { return fp_mod(i); }
                 static constexpr uint32_t r2(int i) { return fp_r2(i); } };
struct fr_host { static constexpr int N = CUZK_FR_LIMBS; static constexpr uint32_t INV = FR_INV32;
                 static constexpr uint32_t mod(int i) { return fr_mod(i); }
                 static constexpr uint32_t r2(int i) { return fr_r2(i); } };
}

static void parse(const std::string& h, uint32_t* v, int n) {
    std::memset(v, 0, 4 * n);
    int bit = 0;
    for (int i = (int)h.size() - 1; i >= 0 && bit < 32 * n; i--, bit += 4) {
        char c = h[i];
        uint32_t d = c <= '9' ? c - '0' : (c | 32) - 'a' + 10;
        v[bit / 32] |= d << (bit % 32);
    }
}
