// Host build of kernels/ff/inverse.cuh (optimization K15): the same template code the GPU runs.
// Reads lines "f x" (f = p or r, x as hex, x < 2^(32N)) and prints binary_inverse(x) in hex: x^-1 R^2 mod (p or r)
// for x mod p != 0, else 0. tests/gpu/test_field_inv_host.py drives it.
//   g++ -O2 -std=c++17 -I kernels -o /tmp/invhost tests/host/inv_host_check.cpp
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#define __device__
#define __constant__
#define __forceinline__ inline
#include "ff/layout.cuh"
#include "ff/inverse.cuh"

#include "host_check.h"

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
