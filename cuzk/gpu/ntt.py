"""NTT over Fr on the GPU: pass plans, twiddle tables and launches.

Vectors are cupy uint32[batch, n, 8] (or [n, 8]) in Montgomery form.
  dif(x, root):  natural -> bit-reversed,  DFT_root
  dit(x, root):  bit-reversed -> natural,  DFT_root
The inverse transforms use root^-1 and leave the factor n to the caller (folded into
coset scaling where there is one).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..field import R, fr_powers, fr_to_limbs, root_of_unity
from .loader import kernel

KMAX = 10            # stages per shared-memory pass (2^10 elements, 32 KiB)
THREADS = 256


def plan(log_n: int) -> list[tuple[int, int, int]]:
    """DIF passes as (log_sub, k, log_c); the DIT runs them in reverse."""
    if not 1 <= log_n <= 31:
        raise ValueError(f"NTT sizes are 2^1 .. 2^31, got 2^{log_n}")
    passes = -(-log_n // KMAX)
    base, rem = divmod(log_n, passes)
    ks = [base + 1] * rem + [base] * (passes - rem)
    out, log_sub = [], log_n
    for k in ks:
        log_c = min(log_sub - k, KMAX - k)
        out.append((log_sub, k, log_c))
        log_sub -= k
    return out


def split_bits(log_n: int) -> int:
    return max(1, (log_n + 1) // 2)


def power_tables_host(x: int, log_n: int, scale: int = 1) -> tuple[np.ndarray, np.ndarray, int]:
    """lo[i] = scale * x^i (i < 2^bits), hi[i] = x^(i * 2^bits): P(e) = hi[e >> bits] * lo[e & mask]."""
    bits = split_bits(log_n)
    lo = (fr_powers(x, 1 << bits) * (scale % R)) % R
    hi = fr_powers(pow(x, 1 << bits, R), max(1, 1 << max(0, log_n - bits)))
    return fr_to_limbs(lo), fr_to_limbs(hi), bits


@lru_cache(maxsize=64)
def _power_tables(x: int, log_n: int, scale: int = 1):
    import cupy
    lo, hi, bits = power_tables_host(x, log_n, scale)
    return cupy.asarray(lo), cupy.asarray(hi), bits


@lru_cache(maxsize=16)
def _small_table(generator: int, inverse: bool):
    import cupy
    w = root_of_unity(KMAX, generator)
    if inverse:
        w = pow(w, -1, R)
    return cupy.asarray(fr_to_limbs(fr_powers(w, 1 << (KMAX - 1))))


def _run(x, log_n: int, generator: int, inverse: bool, dit: bool):
    import cupy
    n = 1 << log_n
    batch = x.size // (n * 8)
    if x.dtype != cupy.uint32 or x.size != batch * n * 8 or not x.flags.c_contiguous:
        raise ValueError("NTT input must be a contiguous uint32 array of [batch, n, 8]")
    w = root_of_unity(log_n, generator)
    if inverse:
        w = pow(w, -1, R)
    lo, hi, bits = _power_tables(w, log_n)
    small = _small_table(generator, inverse)
    f = kernel("ntt", "ntt_pass")
    passes = plan(log_n)
    for log_sub, k, log_c in (reversed(passes) if dit else passes):
        e = 1 << (k + log_c)
        blocks = (n >> log_sub) * (1 << (log_sub - k - log_c))
        f((blocks, batch), (e // 2,),
          (x, np.int32(log_n), np.int32(log_sub), np.int32(k), np.int32(log_c), np.int32(int(dit)),
           small, lo, hi, np.int32(bits)),
          shared_mem=e * 32)
    return x


def dif(x, log_n: int, generator: int = 7, inverse: bool = False):
    """In place: natural order in, bit-reversed out."""
    return _run(x, log_n, generator, inverse, dit=False)


def dit(x, log_n: int, generator: int = 7, inverse: bool = False):
    """In place: bit-reversed in, natural out."""
    return _run(x, log_n, generator, inverse, dit=True)


def bit_reverse(x, log_n: int):
    import cupy
    n = 1 << log_n
    batch = x.size // (n * 8)
    out = cupy.empty_like(x)
    kernel("ntt", "bit_reverse")(((n + THREADS - 1) // THREADS, batch), (THREADS,), (out, x, np.int32(log_n)))
    return out


def scale_powers(x, log_n: int, base: int, scale: int = 1, bitrev: bool = False):
    """In place: x[j] *= scale * base^j (base^bitrev(j) when bitrev)."""
    n = 1 << log_n
    batch = x.size // (n * 8)
    lo, hi, bits = _power_tables(base % R, log_n, scale % R)
    name = "scale_bitrev_powers" if bitrev else "scale_powers"
    kernel("ntt", name)(((n + THREADS - 1) // THREADS, batch), (THREADS,), (x, np.int32(log_n), lo, hi, np.int32(bits)))
    return x


def ntt(x, log_n: int, generator: int = 7):
    """Natural -> natural forward NTT (out of place)."""
    return bit_reverse(dif(x.copy(), log_n, generator), log_n)


def intt(x, log_n: int, generator: int = 7):
    """Natural -> natural inverse NTT, scaled by 1/n (out of place)."""
    y = dif(x.copy(), log_n, generator, inverse=True)
    scale_powers(y, log_n, 1, pow(1 << log_n, -1, R))
    return bit_reverse(y, log_n)


def coset_ntt(x, log_n: int, shift: int, generator: int = 7):
    """Coefficients (natural) -> values at shift * w^i (natural)."""
    y = scale_powers(x.copy(), log_n, shift)
    return ntt(y, log_n, generator)


def coset_intt(x, log_n: int, shift: int, generator: int = 7):
    """Values at shift * w^i (natural) -> coefficients (natural)."""
    y = dif(x.copy(), log_n, generator, inverse=True)
    scale_powers(y, log_n, pow(shift, -1, R), pow(1 << log_n, -1, R), bitrev=True)
    return bit_reverse(y, log_n)


# --- CPU emulation of the pass schedule (tests the index math without a GPU) ---

def _bitrev(v: np.ndarray, bits: int) -> np.ndarray:
    out = np.zeros_like(v)
    for b in range(bits):
        out |= ((v >> b) & 1) << (bits - 1 - b)
    return out


def emulate(x: np.ndarray, log_n: int, root: int, dit_order: bool) -> np.ndarray:
    """The kernels' pass algorithm on an object array: dif (natural -> bitrev) or dit."""
    n = 1 << log_n
    x = x.copy()
    passes = plan(log_n)
    for log_sub, k, _ in (reversed(passes) if dit_order else passes):
        n1, n2 = 1 << k, 1 << (log_sub - k)
        v = x.reshape(n >> log_sub, n1, n2)
        p = np.arange(n1, dtype=np.int64)
        i2 = np.arange(n2, dtype=np.int64)
        e = (np.outer(_bitrev(p, k), i2) << (log_n - log_sub)).astype(object)
        tw = np.vectorize(lambda t: pow(root, int(t), R), otypes=[object])(e) if n2 > 1 else None
        if dit_order and tw is not None:
            v[:] = (v * tw) % R
        w_sub = pow(root, n >> k, R)            # primitive 2^k-th root
        stages = range(k) if dit_order else range(k - 1, -1, -1)
        for st in stages:
            h = 1 << st
            blk = v.reshape(v.shape[0], n1 // (2 * h), 2, h, n2)
            j = np.arange(h)
            w = np.array([pow(w_sub, int(t) << (k - st - 1), R) for t in j], dtype=object)[:, None]
            a, b = blk[:, :, 0].copy(), blk[:, :, 1].copy()
            if dit_order:
                b = (b * w) % R
                blk[:, :, 0], blk[:, :, 1] = (a + b) % R, (a - b) % R
            else:
                blk[:, :, 0], blk[:, :, 1] = (a + b) % R, ((a - b) * w) % R
        if not dit_order and tw is not None:
            v[:] = (v * tw) % R
        x = v.reshape(n)
    return x
