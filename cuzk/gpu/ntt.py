"""NTT over Fr on the GPU: pass plans, twiddle tables and launches.

Vectors are cupy uint32[batch, n, 8] (or [n, 8]) in Montgomery form.
  dif(x, root):  natural -> bit-reversed,  DFT_root
  dit(x, root):  bit-reversed -> natural,  DFT_root
The inverse transforms use root^-1 and leave the factor n to the caller (folded into
coset scaling where there is one).
"""
from __future__ import annotations

import numpy as np

from ..field import R, fr_powers, fr_to_limbs, root_of_unity
from .fr import to_mont, upload
from .kernel_sources import BUILDS
from .loader import kernel
from .per_device import device_cache

KMAX = 10            # stages per shared-memory pass (2^10 elements, 32 KiB)
THREADS = 256

# Pass kernels: (log2 elements per thread, largest sub-problem whose 4-step twiddle is one table lookup;
# 0 = always tw_hi * tw_lo). A block holds at most 2^KMAX elements.
#   r2: kernels/ntt/ntt.cu, one butterfly per thread per stage.
#   r4, r8: kernels/ntt/reg.cu, 4 or 8 elements per thread in registers.
#   r4b6: r4's kernel built with fastmul build 6 for Fr (products on the FP64 pipe; kernel_sources.BUILDS): N2.
#   r4b6d: r4b6 with its DIF butterfly in two modular ops, not three (CUZK_NTT_DIF2): N2 and N4.
#   A "t" suffix (N8): every 4-step twiddle is one table lookup, up to the full domain (a 2^27 NTT keeps a
#        2^27-entry table, 4 GiB, for both directions, beside the 2^18 one), instead of tw_hi * tw_lo above 2^18.
#   An "s" suffix (N11): the DIF difference that goes into a product is a - b + p (< 2p, no borrow test: build 6's
#        product takes one input < 2p), CUZK_NTT_LAZY_SUB.
#   A "w" suffix (N12 off): the exchanges in 32-bit words (CUZK_NTT_SM128=0), not 16-byte units.
#   A "b" suffix (N17 off): the 16-byte exchanges' swizzle bit by bit (CUZK_NTT_SWZ4_LUT=0), not from a table.
VARIANTS = {
    "r2": (1, 0),
    "r4": (2, 18),
    "r8": (3, 18),
}
R4B6_BUILD = BUILDS["ntt/reg"][0]                  # r4b6: ntt_reg built with CUZK_FASTMUL_VARIANT_FR=6
R4B6D_BUILD = BUILDS["ntt/reg"][1]                 # r4b6d: and with CUZK_NTT_DIF2=1 (N4)
R4B6DS_BUILD = BUILDS["ntt/reg"][2]                # r4b6ds: and with CUZK_NTT_LAZY_SUB=1 (N11)
REG_BUILDS = {"r4b6": R4B6_BUILD, "r4b6d": R4B6D_BUILD,   # variants run by a build of ntt_reg
              "r4b6dt": R4B6D_BUILD, "r4b6ds": R4B6DS_BUILD, "r4b6dts": R4B6DS_BUILD}
REG_BUILDS |= {v + "w": b + ("CUZK_NTT_SM128=0",) for v, b in REG_BUILDS.items()} | \
    {v + "b": b + ("CUZK_NTT_SWZ4_LUT=0",) for v, b in REG_BUILDS.items()}   # N12 off: 32-bit exchanges; N17 off
assert all(b in BUILDS["ntt/reg"] for b in REG_BUILDS.values())
VARIANTS |= {v: (2, 31 if "t" in v else 18) for v in REG_BUILDS}   # "t": N8's full-domain tables
TW1_SMALL = 18       # N8: sub-problems up to 2^18 share one table (L2-resident); larger ones get their own
POINTWISE_B6 = BUILDS["ntt/ntt"][0]                    # N3: ntt/ntt.cu's pointwise kernels on Fr build 6
# Run-time features of the register-radix passes, after a "+" in a variant name ("r4b6dts+oz"): kernel flags
# (kernels/ntt/reg.cuh).
#   o (N13): a DIF pass of odd k runs its one-stage group first, so that stages 1 and 0 share the b0 = 0 group and
#      its w = 1 pairs are skipped: 0.25 product an element fewer in such a pass.
#   z (N15): stage 0 of a pass with a 4-step twiddle leaves a + b and a - b + p (< 2p) to the 4-step product (build 6's
#      own product only: r4b6*).
KERNEL_FLAGS = {"o": 1, "z": 2}
FEATURES = "oz"


def split_variant(variant: str | None) -> tuple[str, str]:
    """(the VARIANTS key, its run-time features)."""
    base, _, feats = (variant or VARIANT).partition("+")
    if base not in VARIANTS or set(feats) - set(FEATURES):
        raise ValueError(f"unknown NTT variant {variant!r}: a VARIANTS key, then + and features of {FEATURES!r}")
    return base, feats


VARIANT = "r4"    # calls without a variant; the cuda backend picks by N1 (r4: 2^27 55 ms vs r2 61)


def plan(log_n: int) -> list[tuple[int, int, int]]:
    """DIF passes as (log_sub, k, log_c); the DIT runs them in reverse. The stages split evenly into the fewest
    passes of at most KMAX; a block holds 2^(k + log_c) <= 2^KMAX elements."""
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


def tw1_bits(passes, tw1_max: int) -> int:
    """Size (log2) of the one-lookup twiddle table: the largest twiddled sub-problem <= 2^tw1_max,
    or 0 when no pass uses it."""
    return max([ls for ls, k, _ in passes if ls > k and ls <= tw1_max], default=0)


def pass_twiddles(passes, tw1_max: int) -> list[tuple[int, int]]:
    """Per pass (plan order): (tw_mode, bits of its one-lookup table). tw_mode 0: no 4-step twiddle (the last
    DIF pass); 2: one lookup in a table of 2^bits entries; 1: tw_hi * tw_lo. Sub-problems up to
    2^min(tw1_max, TW1_SMALL) share the table of the largest of them; larger ones up to 2^tw1_max (N8) each
    get a table of their own size."""
    small = tw1_bits(passes, min(tw1_max, TW1_SMALL))
    out = []
    for log_sub, k, _ in passes:
        if log_sub == k:
            out.append((0, 0))
        elif small and log_sub <= small:
            out.append((2, small))
        elif log_sub <= tw1_max:
            out.append((2, log_sub))
        else:
            out.append((1, 0))
    return out


def split_bits(log_n: int) -> int:
    return max(1, (log_n + 1) // 2)


def power_tables_host(x: int, log_n: int, scale: int = 1) -> tuple[np.ndarray, np.ndarray, int]:
    """lo[i] = scale * x^i (i < 2^bits), hi[i] = x^(i * 2^bits): P(e) = hi[e >> bits] * lo[e & mask]."""
    bits = split_bits(log_n)
    lo = (fr_powers(x, 1 << bits) * (scale % R)) % R
    hi = fr_powers(pow(x, 1 << bits, R), max(1, 1 << max(0, log_n - bits)))
    return fr_to_limbs(lo), fr_to_limbs(hi), bits


@device_cache(maxsize=64)
def _power_tables(x: int, log_n: int, scale: int = 1):
    import cupy
    lo, hi, bits = power_tables_host(x, log_n, scale)
    return cupy.asarray(lo), cupy.asarray(hi), bits


def small_table_host(generator: int, inverse: bool, scale: int = 1) -> np.ndarray:
    """scale * w_(2^KMAX)^i, i < 2^(KMAX - 1), as Montgomery limbs."""
    w = root_of_unity(KMAX, generator)
    if inverse:
        w = pow(w, -1, R)
    return fr_to_limbs((fr_powers(w, 1 << (KMAX - 1)) * (scale % R)) % R)


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


def natural_dif(variant: str | None, log_n: int) -> bool:
    """Whether dif(..., out=) runs for this variant and size: a register-radix pass kernel for every pass."""
    lr = VARIANTS[split_variant(variant)[0]][0]
    return lr > 1 and all(k >= lr for _, k, _ in variant_plan(variant, log_n))


def variant_plan(variant: str | None, log_n: int) -> list[tuple[int, int, int]]:
    """The passes a variant runs at 2^log_n (before _run's fallback to radix 2 below 2^lr stages a pass): every
    variant's are plan's."""
    split_variant(variant)
    return plan(log_n)


def dit(x, log_n: int, generator: int = 7, inverse: bool = False, variant: str | None = None):
    """In place: bit-reversed in, natural out."""
    return _run(x, log_n, generator, inverse, True, variant)


BR_T = 4             # kernels/ntt/bitrev.cuh: tiles of 2^BR_T x 2^BR_T elements, one a block of 2^(2 BR_T) threads


def _tiles(log_n: int, tiled: bool) -> bool:
    return tiled and log_n >= 2 * BR_T


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
        from .fr import upload
        name, args = "bit_reverse_scale", (out, x, upload([scale % R]), np.int32(log_n))
    if _tiles(log_n, tiled):
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
    if _tiles(log_n, tiled):
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


def ntt(x, log_n: int, generator: int = 7, variant: str | None = None, tiled: bool = True, natural: bool = True):
    """Natural -> natural forward NTT (out of place): DIF passes whose last one writes natural order (natural:
    N10), else DIF passes, then the bit reversal (tiled: N5)."""
    import cupy
    if natural and natural_dif(variant, log_n):
        return dif(x.copy(), log_n, generator, variant=variant, out=cupy.empty_like(x))
    return bit_reverse(dif(x.copy(), log_n, generator, variant=variant), log_n, tiled=tiled)


def natural_scaled(variant: str | None, log_n: int) -> bool:
    """Whether an inverse NTT can carry its 1/n in a twiddle table and write natural order (N10): a register-radix
    DIF with exactly one pass on the shared small table (2^27: the second; not 2^20, whose one twiddled pass reads
    N8's large table)."""
    tw1_max = VARIANTS[split_variant(variant)[0]][1]
    return natural_dif(variant, log_n) and \
        sum(m == 2 and tb <= TW1_SMALL for m, tb in pass_twiddles(variant_plan(variant, log_n), tw1_max)) == 1


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
    return ntt(y, log_n, generator)


def coset_intt(x, log_n: int, shift: int, generator: int = 7):
    """Values at shift * w^i (natural) -> coefficients (natural)."""
    y = dif(x.copy(), log_n, generator, inverse=True)
    scale_powers(y, log_n, pow(shift, -1, R), pow(1 << log_n, -1, R), bitrev=True)
    return bit_reverse(y, log_n)
