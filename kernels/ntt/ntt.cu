// NTT over Fr: one launch per pass of up to NTT_KMAX radix-2 stages in shared memory.
//
// DIF pass (natural -> bit-reversed overall): a size-2^k DIF NTT down each column of a
// sub-problem of size 2^log_sub viewed as 2^k rows x n2 columns, then slot (p, i2) is
// multiplied by w_sub^(i2 * bitrev_k(p)). The DIT pass is its transpose (twiddle first,
// then a DIT NTT), run over the passes in reverse order: bit-reversed -> natural.
// Twiddles: w_N^e = tw_hi[e >> tw_bits] * tw_lo[e & mask]; in-pass roots come from
// tw_small[i] = w_(2^NTT_KMAX)^i.
#include "ff/field.cuh"
#include "ntt/bitrev.cuh"
using namespace cuzk;

#define NTT_KMAX 10
#define FR_W 8

__device__ __forceinline__ fr_t twiddle(const uint32_t* tw_lo, const uint32_t* tw_hi, int bits, unsigned long long e) {
    const unsigned long long mask = (1ull << bits) - 1;   // exponents below 2^31 here
    return fr_t::load(tw_hi + (e >> bits) * FR_W) * fr_t::load(tw_lo + (e & mask) * FR_W);
}

__device__ __forceinline__ fr_t sm_get(const uint32_t* sm, int E, int slot) {
    fr_t r;
#pragma unroll
    for (int w = 0; w < FR_W; w++) r.v[w] = sm[w * E + slot];
    return r;
}

__device__ __forceinline__ void sm_put(uint32_t* sm, int E, int slot, const fr_t& x) {
#pragma unroll
    for (int w = 0; w < FR_W; w++) sm[w * E + slot] = x.v[w];
}

extern "C" __global__ void __launch_bounds__(512, 2)
ntt_pass(uint32_t* data, int log_n, int log_sub, int k, int log_c, int dit,
         const uint32_t* __restrict__ tw_small, const uint32_t* __restrict__ tw_lo,
         const uint32_t* __restrict__ tw_hi, int tw_bits) {
    extern __shared__ uint32_t sm[];
    const int half = 1 << (k - 1), C = 1 << log_c, E = 1 << (k + log_c);
    const int log_n2 = log_sub - k;
    const unsigned long long groups = 1ull << (log_n2 - log_c);
    const unsigned long long s = blockIdx.x / groups, cg = blockIdx.x % groups;
    const int c = threadIdx.x & (C - 1), bf = threadIdx.x >> log_c;
    const unsigned i2 = (unsigned)(cg * C + c);        // < 2^log_n2; log_n <= 31
    // the thread's two elements: rows bf and bf + half of column i2
    uint32_t* g0 = data + (((unsigned long long)blockIdx.y << log_n) + (s << log_sub) +
                           ((unsigned long long)bf << log_n2) + (unsigned long long)i2) * FR_W;
#define NTT_ROW(q) ((q) ? g0 + ((unsigned long long)half << log_n2) * FR_W : g0)
    const bool tw = log_n2 > 0;
    const int shift = log_n - log_sub;
    // bitrev_k(bf) is even and bitrev_k(bf + half) = bitrev_k(bf) + 1
    const unsigned r0 = __brev(bf) >> (32 - k);

#pragma unroll 1
    for (int q = 0; q < 2; q++) {              // one element at a time keeps registers low
        fr_t t;
        if (dit && tw) t = twiddle(tw_lo, tw_hi, tw_bits, (i2 * (r0 + q)) << shift);   // x not live yet
        fr_t x = fr_t::load(NTT_ROW(q));
        if (dit && tw) x = x * t;
        sm_put(sm, E, (bf + q * half) * C + c, x);
    }
    __syncthreads();

    for (int i = 0; i < k; i++) {
        const int st = dit ? i : k - 1 - i;
        const int h = 1 << st, j = bf & (h - 1);
        const int i0 = ((bf >> st) << (st + 1)) + j, i1 = i0 + h;
        fr_t x = sm_get(sm, E, i0 * C + c), y = sm_get(sm, E, i1 * C + c);
        // stage 0 has only w = 1: no multiplication there
        if (dit) {
            if (st > 0) y = y * fr_t::load(tw_small + (j << (NTT_KMAX - st - 1)) * FR_W);
            sm_put(sm, E, i0 * C + c, x + y);
            sm_put(sm, E, i1 * C + c, x - y);
        } else {
            sm_put(sm, E, i0 * C + c, x + y);
            x = x - y;                           // y dead before the multiplication
            if (st > 0) x = x * fr_t::load(tw_small + (j << (NTT_KMAX - st - 1)) * FR_W);
            sm_put(sm, E, i1 * C + c, x);
        }
        __syncthreads();
    }

#pragma unroll 1
    for (int q = 0; q < 2; q++) {
        fr_t t;
        if (!dit && tw) t = twiddle(tw_lo, tw_hi, tw_bits, (i2 * (r0 + q)) << shift);
        fr_t x = sm_get(sm, E, (bf + q * half) * C + c);
        if (!dit && tw) x = x * t;
        x.store(NTT_ROW(q));
    }
#undef NTT_ROW
}

// out[b][bitrev(i)] = in[b][i] (out of place), over a batch in blockIdx.y.
extern "C" __global__ void bit_reverse(uint32_t* out, const uint32_t* in, int log_n) {
    const long long n = 1ll << log_n;
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const long long off = (long long)blockIdx.y * n * FR_W;
    const long long r = (long long)(__brevll((unsigned long long)i) >> (64 - log_n));
    fr_t::load(in + off + i * FR_W).store(out + off + r * FR_W);
}

// bit_reverse by tiles (N5, ntt/bitrev.cuh): log_n >= 2 * BR_T, grid (2^(log_n - 2 BR_T), batch) x BR_TILE threads.
extern "C" __global__ void __launch_bounds__(BR_TILE) bit_reverse_tiled(uint32_t* out, const uint32_t* in, int log_n) {
    const long long off = ((long long)blockIdx.y << log_n) * FR_W;
    bitrev_tile(out + off, log_n, [&](unsigned long long j, unsigned long long) { return fr_t::load(in + off + j * FR_W); });
}

// out[b][bitrev(j)] = in[b][j] * k: the inverse NTT's 1/n with its reversal (one product an element), one-pass and
// tiled (N5) forms.
extern "C" __global__ void bit_reverse_scale(uint32_t* out, const uint32_t* in, const uint32_t* k, int log_n) {
    const long long n = 1ll << log_n;
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const long long off = (long long)blockIdx.y * n * FR_W;
    const long long r = (long long)(__brevll((unsigned long long)i) >> (64 - log_n));
    (fr_t::load(in + off + i * FR_W) * fr_t::load(k)).store(out + off + r * FR_W);
}
extern "C" __global__ void __launch_bounds__(BR_TILE) bit_reverse_scale_tiled(uint32_t* out, const uint32_t* in,
                                                                              const uint32_t* k, int log_n) {
    const long long off = ((long long)blockIdx.y << log_n) * FR_W;
    const fr_t kk = fr_t::load(k);
    bitrev_tile(out + off, log_n, [&](unsigned long long j, unsigned long long) { return fr_t::load(in + off + j * FR_W) * kk; });
}

// data[b][j] *= P(bitrev(j)) where P(e) = tw_hi[e >> bits] * tw_lo[e & mask]: the coset
// shift (and 1/n) applied to coefficients held in bit-reversed order.
extern "C" __global__ void scale_bitrev_powers(uint32_t* data, int log_n, const uint32_t* __restrict__ tw_lo,
                                               const uint32_t* __restrict__ tw_hi, int bits) {
    const long long n = 1ll << log_n;
    const long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (j >= n) return;
    uint32_t* p = data + (long long)blockIdx.y * n * FR_W + j * FR_W;
    const unsigned long long e = __brevll((unsigned long long)j) >> (64 - log_n);
    (fr_t::load(p) * twiddle(tw_lo, tw_hi, bits, e)).store(p);
}

// out[b][bitrev(j)] = data[b][j] * P(bitrev(j)) (out of place): scale_bitrev_powers and bit_reverse in one pass
// (optimization F1: the H phase's last coset scale).
extern "C" __global__ void scale_bitrev_powers_out(uint32_t* out, const uint32_t* data, int log_n,
                                                   const uint32_t* __restrict__ tw_lo,
                                                   const uint32_t* __restrict__ tw_hi, int bits) {
    const long long n = 1ll << log_n;
    const long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (j >= n) return;
    const long long off = (long long)blockIdx.y * n * FR_W;
    const unsigned long long e = __brevll((unsigned long long)j) >> (64 - log_n);
    (fr_t::load(data + off + j * FR_W) * twiddle(tw_lo, tw_hi, bits, e)).store(out + off + (long long)e * FR_W);
}

// scale_bitrev_powers_out by tiles (N5): the same output, written in 512-byte runs.
extern "C" __global__ void __launch_bounds__(BR_TILE) scale_bitrev_powers_out_tiled(
        uint32_t* out, const uint32_t* data, int log_n, const uint32_t* __restrict__ tw_lo,
        const uint32_t* __restrict__ tw_hi, int bits) {
    const long long off = ((long long)blockIdx.y << log_n) * FR_W;
    bitrev_tile(out + off, log_n, [&](unsigned long long j, unsigned long long e) {
        return fr_t::load(data + off + j * FR_W) * twiddle(tw_lo, tw_hi, bits, e);
    });
}

// data[b][j] *= P(j), natural order.
extern "C" __global__ void scale_powers(uint32_t* data, int log_n, const uint32_t* __restrict__ tw_lo,
                                        const uint32_t* __restrict__ tw_hi, int bits) {
    const long long n = 1ll << log_n;
    const long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (j >= n) return;
    uint32_t* p = data + (long long)blockIdx.y * n * FR_W + j * FR_W;
    (fr_t::load(p) * twiddle(tw_lo, tw_hi, bits, (unsigned long long)j)).store(p);
}

// H2: x[bitrev(j)] = data[j] * P(bitrev(j)) - sub[j] * k (out of place): F1's pass, less k times C's coefficients
// (the H phase without C's coset NTT: h = iNTT_coset(a b f) - f C).
extern "C" __global__ void scale_bitrev_powers_sub_out(uint32_t* out, const uint32_t* data, const uint32_t* sub,
                                                       const uint32_t* k, int log_n, const uint32_t* __restrict__ tw_lo,
                                                       const uint32_t* __restrict__ tw_hi, int bits) {
    const long long n = 1ll << log_n;
    const long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (j >= n) return;
    const unsigned long long e = __brevll((unsigned long long)j) >> (64 - log_n);
    (fr_t::load(data + j * FR_W) * twiddle(tw_lo, tw_hi, bits, e) - fr_t::load(sub + j * FR_W) * fr_t::load(k))
        .store(out + (long long)e * FR_W);
}

// scale_bitrev_powers_sub_out by tiles (N5); one vector (no batch).
extern "C" __global__ void __launch_bounds__(BR_TILE) scale_bitrev_powers_sub_out_tiled(
        uint32_t* out, const uint32_t* data, const uint32_t* sub, const uint32_t* k, int log_n,
        const uint32_t* __restrict__ tw_lo, const uint32_t* __restrict__ tw_hi, int bits) {
    const fr_t kk = fr_t::load(k);
    bitrev_tile(out, log_n, [&](unsigned long long j, unsigned long long e) {
        return fr_t::load(data + j * FR_W) * twiddle(tw_lo, tw_hi, bits, e) - fr_t::load(sub + j * FR_W) * kk;
    });
}

// H2 without F1: x[j] -= y[j] * k over n elements, in place.
extern "C" __global__ void sub_scaled(uint32_t* x, const uint32_t* y, const uint32_t* k, long long n) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    (fr_t::load(x + i * FR_W) - fr_t::load(y + i * FR_W) * fr_t::load(k)).store(x + i * FR_W);
}

// H2: q = a * b * f over n elements; ab holds a | b (each n elements).
extern "C" __global__ void ab_combine(uint32_t* q, const uint32_t* ab, const uint32_t* f, long long n) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    (fr_t::load(ab + i * FR_W) * fr_t::load(ab + (n + i) * FR_W) * fr_t::load(f)).store(q + i * FR_W);
}

// q = (a * b - c) * f over n elements; abc holds a | b | c (each n elements).
extern "C" __global__ void abc_combine(uint32_t* q, const uint32_t* abc, const uint32_t* f, long long n) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    const fr_t a = fr_t::load(abc + i * FR_W), b = fr_t::load(abc + (n + i) * FR_W),
               c = fr_t::load(abc + (2 * n + i) * FR_W);
    ((a * b - c) * fr_t::load(f)).store(q + i * FR_W);
}
