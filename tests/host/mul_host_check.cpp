// Host build of kernels/ff/mul.cuh (CUZK_FASTMUL_HOST): the very template code the
// GPU runs, with the PTX carry-chain primitives replaced by C++ on a global carry flag.
// Reads lines "f a b" (f = p or r, a and b as hex) and prints the Montgomery product
// a*b*2^(-32N) mod (p or r) in hex; f = P or R: a*a the same way, through mont_sqr (b ignored);
// f = l: the Fp product left unreduced (mont_mul<P, false>, optimization L1: < 2p, not canonical).
// tests/gpu/test_field_sqr_host.py drives it, for the integer builds (1, 3):
//   g++ -O2 -std=c++17 -DCUZK_FASTMUL_VARIANT_FP=3 -DCUZK_FASTMUL_VARIANT_FR=3 -I kernels -o /tmp/mulhost tests/host/mul_host_check.cpp
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#define __device__
#define __constant__
#define __forceinline__ inline
#define CUZK_FASTMUL_HOST 1
#include "ff/layout.cuh"
#include "ff/mul.cuh"

#include "host_check.h"

int main() {
    std::string f, a, b;
    uint32_t x[12], y[12], r[12];
    while (std::cin >> f >> a >> b) {
        const bool sq = f == "P" || f == "R", lazy = f == "l";
        const int n = f == "p" || f == "P" || f == "l" ? 12 : 8;
        parse(a, x, n);
        parse(b, y, n);
        try {
            if (lazy) cuzk::fastmul::mont_mul<cuzk::fp_host, false>(r, x, y);
            else if (sq && n == 12) cuzk::fastmul::mont_sqr<cuzk::fp_host>(r, x);
            else if (sq) cuzk::fastmul::mont_sqr<cuzk::fr_host>(r, x);
            else if (n == 12) cuzk::fastmul::mont_mul<cuzk::fp_host>(r, x, y);
            else cuzk::fastmul::mont_mul<cuzk::fr_host>(r, x, y);
        } catch (const char* e) {
            std::printf("ERROR %s\n", e);
            continue;
        }
        for (int i = n - 1; i >= 0; i--) std::printf("%08x", r[i]);
        std::printf("\n");
    }
    return 0;
}
