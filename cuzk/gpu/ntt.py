"""NTT over Fr on the GPU: twiddle tables on the device and the pass launches (the passes, variants and host
tables: ntt_plan.py).

Vectors are cupy uint32[batch, n, 8] (or [n, 8]) in Montgomery form.
  dif(x, root):  natural -> bit-reversed,  DFT_root
  dit(x, root):  bit-reversed -> natural,  DFT_root
The inverse transforms use root^-1 and leave the factor n to the caller (folded into
coset scaling where there is one).
"""
from __future__ import annotations

import numpy as np

from ..field import R, root_of_unity
from .fr import to_mont, upload
from .loader import kernel
from .ntt_plan import (BR_T, KERNEL_FLAGS, REG_BUILDS, TW1_SMALL, VARIANTS, bitrev_tiled, natural_dif, natural_scaled,
                       pass_twiddles, plan, power_tables_host, small_table_host, split_variant)
from .per_device import device_cache

THREADS = 256


@device_cache(maxsize=64)
def _power_tables(x: int, log_n: int, scale: int = 1):
    import cupy
    lo, hi, bits = power_tables_host(x, log_n, scale)
    return cupy.asarray(lo), cupy.asarray(hi), bits


@device_cache(maxsize=16)
def _small_table(generator: int, inverse: bool, scale: int = 1):
    import cupy
    return cupy.asarray(small_table_host(generator, inverse, scale))


def _tw1(w: int, log_n: int, bits: int, scale: int = 1):
    """The one-lookup table; those over 2^TW1_SMALL entries (N8: 2^27 is 4 GiB, built for the forward root and
    read at -e for the inverse: tw_mode 3) in a cache of their own that keeps two."""
    return (_tw1_table if bits <= TW1_SMALL else _tw1_table_big)(w, log_n, bits, scale)


@device_cache(maxsize=16)
def _tw1_table(w: int, log_n: int, bits: int, scale: int = 1):
    """tw1[x] = scale * w^(x << (log_n - bits)), x < 2^bits: built on the device from ones."""
    import cupy
    t = cupy.zeros((1 << bits, 8), dtype=cupy.uint32)
    t[:, 0] = 1
    to_mont(t)
    return scale_powers(t, bits, pow(w, 1 << (log_n - bits), R), scale)


_tw1_table_big = device_cache(maxsize=2)(_tw1_table.__wrapped__)


def _run(x, log_n: int, generator: int, inverse: bool, dit: bool, variant: str | None = None, out=None,
         scale: int = 1):
    """The passes. scale (natural_scaled): the one pass that reads the shared table of sub-problems up to 2^TW1_SMALL
    multiplies every element by it too (its table is scaled)."""
    import cupy
    n = 1 << log_n
    batch = x.size // (n * 8)
    if x.dtype != cupy.uint32 or x.size != batch * n * 8 or not x.flags.c_contiguous:
        raise ValueError("NTT input must be a contiguous uint32 array of [batch, n, 8]")
    w_fwd = root_of_unity(log_n, generator)
    w = pow(w_fwd, -1, R) if inverse else w_fwd
    variant, feats = split_variant(variant)
    lr, tw1_max = VARIANTS[variant]
    passes = plan(log_n)
    flags = sum(KERNEL_FLAGS[f] for f in feats)
    if lr > 1 and any(k < lr for _, k, _ in passes):
        lr = 1                                            # 2^1, 2^2: the radix-2 kernel
    if out is not None and (dit or lr == 1):
        raise ValueError("an NTT with its output in natural order (out) is a register-radix DIF")
    lo, hi, bits = _power_tables(w, log_n)
    small = _small_table(generator, inverse)
    if lr == 1:
        f = kernel("ntt/ntt", "ntt_pass")
        for log_sub, k, log_c in (reversed(passes) if dit else passes):
            e = 1 << (k + log_c)
            blocks = (n >> log_sub) * (1 << (log_sub - k - log_c))
            f((blocks, batch), (e // 2,),
              (x, np.int32(log_n), np.int32(log_sub), np.int32(k), np.int32(log_c), np.int32(int(dit)),
               small, lo, hi, np.int32(bits)),
              shared_mem=e * 32)
        return x
    f = kernel("ntt/reg", f"ntt_r{1 << lr}_{'dit' if dit else 'dif'}", REG_BUILDS.get(variant, ()))
    steps = list(zip(passes, pass_twiddles(passes, tw1_max)))
    if scale % R != 1 and sum(m == 2 and tb <= TW1_SMALL for _, (m, tb) in steps) != 1:
        raise ValueError(f"no single small-table pass carries a scale at 2^{log_n} ({variant})")
    for i, ((log_sub, k, log_c), (mode, tb)) in enumerate(reversed(steps) if dit else steps):
        e = 1 << (k + log_c)
        blocks = (n >> log_sub) * (1 << (log_sub - k - log_c))
        if mode == 2 and tb > TW1_SMALL:                    # N8's large tables: one for both directions
            tw1 = _tw1(w_fwd, log_n, tb)
            mode = 3 if inverse else 2
        elif mode == 2:
            tw1 = _tw1(w, log_n, tb, scale % R)
        else:
            tw1 = lo                                        # a valid pointer, never read
        f((blocks, batch), (e >> lr,),
          (x, np.int32(log_n), np.int32(log_sub), np.int32(k), np.int32(log_c), small, np.int32(mode),
           lo, hi, np.int32(bits), tw1, np.int32(tb - log_sub if mode >= 2 else 0), np.int32(flags),
           out if out is not None and i == len(steps) - 1 else np.uint64(0)),
          shared_mem=e * 32)
    return x if out is None else out


def dif(x, log_n: int, generator: int = 7, inverse: bool = False, variant: str | None = None, out=None):
    """In place: natural order in, bit-reversed out. variant: a VARIANTS key (default VARIANT). With `out` (N10;
    register-radix variants, 2^3 and up): the last pass writes the transform to out in natural order instead (x is
    left after the other passes)."""
    return _run(x, log_n, generator, inverse, False, variant, out)


def dit(x, log_n: int, generator: int = 7, inverse: bool = False, variant: str | None = None):
    """In place: bit-reversed in, natural out."""
    return _run(x, log_n, generator, inverse, True, variant)


def bit_reverse(x, log_n: int, tiled: bool = True, scale: int | None = None, build: tuple = ()):
    """Out of place: out[b][bitrev(j)] = x[b][j] (times `scale`, when given: one product an element, on ntt/ntt.cu's
    `build`). tiled (optimization N5): by tiles through shared memory, reading and writing 512-byte runs (2^8
    elements and up), instead of one scattered 32-byte write an element."""
    import cupy
    n = 1 << log_n
    batch = x.size // (n * 8)
    out = cupy.empty_like(x)
    if scale is None:
        name, args = "bit_reverse", (out, x, np.int32(log_n))
    else:
        name, args = "bit_reverse_scale", (out, x, upload([scale % R]), np.int32(log_n))
    if bitrev_tiled(log_n, tiled):
        kernel("ntt/ntt", name + "_tiled", build)((n >> 2 * BR_T, batch), (1 << 2 * BR_T,), args)
    else:
        kernel("ntt/ntt", name, build)(((n + THREADS - 1) // THREADS, batch), (THREADS,), args)
    return out


def scale_powers(x, log_n: int, base: int, scale: int = 1, bitrev: bool = False, build: tuple = ()):
    """In place: x[j] *= scale * base^j (base^bitrev(j) when bitrev). build: ntt/ntt.cu's build (POINTWISE_B6: N3)."""
    n = 1 << log_n
    batch = x.size // (n * 8)
    lo, hi, bits = _power_tables(base % R, log_n, scale % R)
    name = "scale_bitrev_powers" if bitrev else "scale_powers"
    kernel("ntt/ntt", name, build)(((n + THREADS - 1) // THREADS, batch), (THREADS,),
                                   (x, np.int32(log_n), lo, hi, np.int32(bits)))
    return x


def scale_bit_reverse(x, log_n: int, base: int, scale: int = 1, build: tuple = (), sub=None, k: int = 0,
                      tiled: bool = True):
    """Out of place: y[bitrev(j)] = x[j] * scale * base^bitrev(j), i.e. scale_powers(x, bitrev=True) then
    bit_reverse in one pass (optimization F1). With `sub` (one vector of n, as x): less sub[j] * k (H2's last
    pass). tiled: as bit_reverse's (N5)."""
    import cupy
    n = 1 << log_n
    batch = x.size // (n * 8)
    lo, hi, bits = _power_tables(base % R, log_n, scale % R)
    out = cupy.empty_like(x)
    if bitrev_tiled(log_n, tiled):
        grid, block, suffix = (n >> 2 * BR_T, batch), (1 << 2 * BR_T,), "_tiled"
    else:
        grid, block, suffix = ((n + THREADS - 1) // THREADS, batch), (THREADS,), ""
    tail = (np.int32(log_n), lo, hi, np.int32(bits))
    if sub is None:
        kernel("ntt/ntt", "scale_bitrev_powers_out" + suffix, build)(grid, block, (out, x, *tail))
        return out
    if batch != 1 or sub.size != x.size:
        raise ValueError(f"scale_bit_reverse with sub takes one vector of 2^{log_n} elements and a sub as large")
    kernel("ntt/ntt", "scale_bitrev_powers_sub_out" + suffix, build)(grid, block, (out, x, sub, upload([k % R]), *tail))
    return out


def sub_scaled(x, y, k: int, build: tuple = ()):
    """In place: x[j] -= y[j] * k (H2 without F1)."""
    n = x.size // 8
    if y.size != x.size:
        raise ValueError(f"sub_scaled: x has {n} elements, y {y.size // 8}")
    kernel("ntt/ntt", "sub_scaled", build)(((n + THREADS - 1) // THREADS,), (THREADS,),
                                           (x, y, upload([k % R]), np.int64(n)))
    return x


def ntt(x, log_n: int, generator: int = 7, variant: str | None = None, tiled: bool = True, natural: bool = True,
        overwrite_x: bool = False):
    """Natural -> natural forward NTT (out of place): DIF passes whose last one writes natural order (natural:
    N10), else DIF passes, then the bit reversal (tiled: N5). overwrite_x (as in scipy.fft): the passes may run in
    x itself, which is left holding their work, instead of in a copy of it (one read and one write of x saved)."""
    import cupy
    work = x if overwrite_x else x.copy()
    if natural and natural_dif(variant, log_n):
        return dif(work, log_n, generator, variant=variant, out=cupy.empty_like(x))
    return bit_reverse(dif(work, log_n, generator, variant=variant), log_n, tiled=tiled)


def intt(x, log_n: int, generator: int = 7, variant: str | None = None, tiled: bool = True, build: tuple = (),
         natural: bool = True):
    """Natural -> natural inverse NTT, scaled by 1/n (out of place). natural (N10, where natural_scaled): DIF passes
    with 1/n in the small twiddle table and the last pass writing natural order; else DIF passes, then 1/n and the
    bit reversal in one pass (one product an element, on ntt/ntt.cu's `build`: POINTWISE_B6 for N3's)."""
    import cupy
    inv_n = pow(1 << log_n, -1, R)
    if natural and natural_scaled(variant, log_n):
        return _run(x.copy(), log_n, generator, True, False, variant, out=cupy.empty_like(x), scale=inv_n)
    y = dif(x.copy(), log_n, generator, inverse=True, variant=variant)
    return bit_reverse(y, log_n, tiled=tiled, scale=inv_n, build=build)


def coset_ntt(x, log_n: int, shift: int, generator: int = 7):
    """Coefficients (natural) -> values at shift * w^i (natural)."""
    y = scale_powers(x.copy(), log_n, shift)
    return ntt(y, log_n, generator, overwrite_x=True)


def coset_intt(x, log_n: int, shift: int, generator: int = 7):
    """Values at shift * w^i (natural) -> coefficients (natural)."""
    y = dif(x.copy(), log_n, generator, inverse=True)
    scale_powers(y, log_n, pow(shift, -1, R), pow(1 << log_n, -1, R), bitrev=True)
    return bit_reverse(y, log_n)
