// Host build of kernels/field_inv.cuh (optimization K15): the same template code the GPU runs.
// Reads lines "f x" (f = p or r, x as hex, x < 2^(32N)) and prints binary_inverse(x) in hex: x^-1 R^2 mod (p or r)
// for x mod p != 0, else 0. tests/test_field_inv_host.py drives it.
//   g++ -O2 -std=c++17 -I kernels -o /tmp/invhost tools/experiments/inv_host_check.cpp
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#define __device__
#define __constant__
#define __forceinline__ inline
#include "layout.cuh"
#include "field_inv.cuh"

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

int main() {
    std::string f, a;
    uint32_t x[12], r[12];
    while (std::cin >> f >> a) {
        const int n = f == "p" ? 12 : 8;
        parse(a, x, n);
        if (n == 12) cuzk::binary_inverse<cuzk::fp_host>(r, x);
        else cuzk::binary_inverse<cuzk::fr_host>(r, x);
        for (int i = n - 1; i >= 0; i--) std::printf("%08x", r[i]);
        std::printf("\n");
    }
    return 0;
}
