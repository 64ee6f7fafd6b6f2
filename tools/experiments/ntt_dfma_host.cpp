// Host build of the element math of kernels/ntt/dfma.cu (the r4d NTT pass): the same dfma:: template
// code (kernels/ff/mul_dfma.cuh with CUZK_DFMA_HOST), composed exactly as the kernel composes it.
// Reads lines "op a [b [c]]" (values in hex, < 2^256) and prints one line each (hex, 64 digits per value):
//   c x        ->  to_u32_u(from_u32_u(x)), and the limbs through to_d / d2u (both must give x back)
//   a x y      ->  add_u(x, y)                        (x, y < r)
//   s x y      ->  sub_u(x, y)                        (x, y < r)
//   m x w      ->  mul(x, w) = mont_mul_u<Fr, true>(to_d(x), from_u32(w))   (x < r, w < r): x w 2^-260
//   x x w      ->  r4m's mul: to_u32_u(mont_mul_u<Fr, true>(from_u32(x), from_u32(w)))   (same value as m)
//   o x h l    ->  mul(x, mont_mul<Fr>(from_u32(h), from_u32(l)))           (tw_mode 1's outer twiddle)
//   f a b w    ->  DIF butterfly: a + b, (a - b) * w                          (two values)
//   t a b w    ->  DIT butterfly: a + b * w, a - b * w                        (two values)
// tools/experiments/ntt_dfma_check.py drives it and checks against Python big ints.
//   g++ -O2 -std=c++17 -I kernels -o /tmp/nttdfmahost tools/experiments/ntt_dfma_host.cpp
#ifdef __FAST_MATH__
#error "ntt_dfma_host must not be compiled with -ffast-math"
#endif
#include <cfenv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#define CUZK_DFMA_HOST 1
#include "ff/mul_dfma.cuh"

using FR = dfma::Fr;
using fe = dfma::elem_u<FR>;
using fd = dfma::elem<FR>;

static void parse(const std::string& h, uint32_t* v) {
    std::memset(v, 0, 32);
    int bit = 0;
    for (int i = (int)h.size() - 1; i >= 0; i--, bit += 4) {
        const char c = h[i];
        const uint32_t d = c <= '9' ? c - '0' : (c | 32) - 'a' + 10;
        if (bit >= 256) {
            if (d) throw std::runtime_error("input too wide");
            continue;
        }
        v[bit / 32] |= d << (bit % 32);
    }
}
static void put(const fe& x) {
    uint32_t w[8];
    dfma::to_u32_u<FR>(x, w);
    for (int q = 7; q >= 0; q--) std::printf("%08x", w[q]);
}
// the kernel's helpers (ntt/dfma.cu: load_fe, load_tw, mul)
static fe load_fe(const uint32_t* w) { return dfma::from_u32_u<FR>(w); }
static fd load_tw(const uint32_t* w) { return dfma::from_u32<FR>(w); }
static fe mul(const fe& x, const fd& w) { return dfma::mont_mul_u<FR, true>(dfma::to_d<FR>(x), w); }

int main() {
    if (std::fegetround() != FE_TONEAREST) { std::fprintf(stderr, "rounding mode is not FE_TONEAREST\n"); return 2; }
    std::ios::sync_with_stdio(false);
    std::string op, a, b, c;
    uint32_t x[8], y[8], z[8];
    while (std::cin >> op >> a) {
        b = c = "0";
        if (op != "c") std::cin >> b;
        if (op == "o" || op == "f" || op == "t") std::cin >> c;
        parse(a, x); parse(b, y); parse(c, z);
        const fe A = load_fe(x), B = load_fe(y);
        if (op == "c") {
            put(A);
            fe D;
            const fd d = dfma::to_d<FR>(A);
            for (int k = 0; k < FR::L; k++) D.v[k] = dfma::d2u(d.v[k]);
            std::fputc(' ', stdout); put(D);
        } else if (op == "a") {
            put(dfma::add_u<FR>(A, B));
        } else if (op == "s") {
            put(dfma::sub_u<FR>(A, B));
        } else if (op == "m") {
            put(mul(A, load_tw(y)));
        } else if (op == "x") {
            fe r;
            uint32_t o[8];
            dfma::to_u32_u<FR>(dfma::mont_mul_u<FR, true>(dfma::from_u32<FR>(x), load_tw(y)), o);
            r = dfma::from_u32_u<FR>(o);
            put(r);
        } else if (op == "o") {
            put(mul(A, dfma::mont_mul<FR>(load_tw(y), load_tw(z))));
        } else if (op == "f") {
            const fe d = dfma::sub_u<FR>(A, B);
            put(dfma::add_u<FR>(A, B)); std::fputc(' ', stdout); put(mul(d, load_tw(z)));
        } else if (op == "t") {
            const fe t = mul(B, load_tw(z));
            put(dfma::add_u<FR>(A, t)); std::fputc(' ', stdout); put(dfma::sub_u<FR>(A, t));
        } else {
            throw std::runtime_error("bad op " + op);
        }
        std::fputc('\n', stdout);
    }
    return 0;
}
