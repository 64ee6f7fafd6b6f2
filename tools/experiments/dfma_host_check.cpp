// Host build of kernels/ff/mul_dfma.cuh (CUZK_DFMA_HOST): the same template code the GPU runs, with
// std::fma (correctly rounded, round to nearest) for DFMA and an exact emulation of DFMA.RM.
// Reads lines "op f a [b]" (f = p or r, values in hex, each < 2^(32 N32)) and prints one line each:
//   m f a b   ->  lazy mont_mul(a, b) (< 2p), and the canonical one (mont_mul<F, true>)
//   t f a     ->  to_mont(a) (lazy), from_mont(to_mont(a))
//   a f a b   ->  add(a, b)      (a, b < p)
//   s f a b   ->  sub(a, b)      (a, b < p)
//   c f a     ->  canon(a)       (a < 2p)
// Every value goes in through from_u32 and out through to_u32. tools/experiments/dfma_emulate.py drives
// it and checks against Python big ints.
//   g++ -O2 -std=c++17 -I kernels -o /tmp/dfmahost tools/experiments/dfma_host_check.cpp
// Must NOT be built with -ffast-math (checked below).
#ifdef __FAST_MATH__
#error "dfma_host_check must not be compiled with -ffast-math"
#endif
#include <cfenv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#define CUZK_DFMA_HOST 1
#include "ff/mul_dfma.cuh"

static void parse(const std::string& h, uint32_t* v, int n) {
    std::memset(v, 0, 4 * n);
    int bit = 0;
    for (int i = (int)h.size() - 1; i >= 0; i--, bit += 4) {
        const char c = h[i];
        const uint32_t d = c <= '9' ? c - '0' : (c | 32) - 'a' + 10;
        if (bit >= 32 * n) {
            if (d) throw std::runtime_error("input too wide");
            continue;
        }
        v[bit / 32] |= d << (bit % 32);
    }
}

static void put(const uint32_t* v, int n) {
    char buf[8 * 12 + 2];
    int pos = 0;
    for (int q = n - 1; q >= 0; q--) pos += std::snprintf(buf + pos, sizeof buf - pos, "%08x", v[q]);
    std::fputs(buf, stdout);
}

template <class F> static void run(const std::string& op, const uint32_t* x, const uint32_t* y) {
    using E = dfma::elem<F>;
    const int n = F::N32;
    uint32_t o1[12] = {}, o2[12] = {};
    const E a = dfma::from_u32<F>(x), b = dfma::from_u32<F>(y);
    if (op == "m") {
        dfma::to_u32<F>(dfma::mont_mul<F>(a, b), o1);
        dfma::to_u32<F>(dfma::mont_mul<F, true>(a, b), o2);
        put(o1, n); std::fputc(' ', stdout); put(o2, n);
    } else if (op == "t") {
        const E m = dfma::to_mont<F>(a);
        dfma::to_u32<F>(m, o1);
        dfma::to_u32<F>(dfma::from_mont<F>(m), o2);
        put(o1, n); std::fputc(' ', stdout); put(o2, n);
    } else if (op == "a") {
        dfma::to_u32<F>(dfma::add<F>(a, b), o1); put(o1, n);
    } else if (op == "s") {
        dfma::to_u32<F>(dfma::sub<F>(a, b), o1); put(o1, n);
    } else if (op == "c") {
        dfma::to_u32<F>(dfma::canon<F>(a), o1); put(o1, n);
    } else {
        throw std::runtime_error("bad op " + op);
    }
    std::fputc('\n', stdout);
}

int main() {
    if (std::fegetround() != FE_TONEAREST) { std::fprintf(stderr, "rounding mode is not FE_TONEAREST\n"); return 2; }
    std::ios::sync_with_stdio(false);
    std::string line, op, f, a, b;
    uint32_t x[12], y[12];
    while (std::cin >> op >> f >> a) {
        if (op == "m" || op == "a" || op == "s") std::cin >> b; else b = "0";
        const int n = f == "p" ? dfma::Fp::N32 : dfma::Fr::N32;
        parse(a, x, n);
        parse(b, y, n);
        if (f == "p") run<dfma::Fp>(op, x, y); else run<dfma::Fr>(op, x, y);
    }
    return 0;
}
