"""The NTT's plans on the host: the pass kernels (variants) and their builds, the passes of a size, each pass's
twiddle tables and the host values of the power tables. gpu/ntt.py runs them on the device; the CPU models of the
kernels (tests/ntt_emulator.py) run them here."""
from __future__ import annotations

import numpy as np

from ..field import R, fr_powers, fr_to_limbs, root_of_unity
from .kernel_sources import BUILDS

KMAX = 10            # stages per shared-memory pass (2^10 elements, 32 KiB)

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


def small_table_host(generator: int, inverse: bool, scale: int = 1) -> np.ndarray:
    """scale * w_(2^KMAX)^i, i < 2^(KMAX - 1), as Montgomery limbs."""
    w = root_of_unity(KMAX, generator)
    if inverse:
        w = pow(w, -1, R)
    return fr_to_limbs((fr_powers(w, 1 << (KMAX - 1)) * (scale % R)) % R)


def natural_dif(variant: str | None, log_n: int) -> bool:
    """Whether ntt.dif(..., out=) runs for this variant and size: a register-radix pass kernel for every pass."""
    lr = VARIANTS[split_variant(variant)[0]][0]
    return lr > 1 and all(k >= lr for _, k, _ in variant_plan(variant, log_n))


def variant_plan(variant: str | None, log_n: int) -> list[tuple[int, int, int]]:
    """The passes a variant runs at 2^log_n (before ntt._run's fallback to radix 2 below 2^lr stages a pass): every
    variant's are plan's."""
    split_variant(variant)
    return plan(log_n)


def natural_scaled(variant: str | None, log_n: int) -> bool:
    """Whether an inverse NTT can carry its 1/n in a twiddle table and write natural order (N10): a register-radix
    DIF with exactly one pass on the shared small table (2^27: the second; not 2^20, whose one twiddled pass reads
    N8's large table)."""
    tw1_max = VARIANTS[split_variant(variant)[0]][1]
    return natural_dif(variant, log_n) and \
        sum(m == 2 and tb <= TW1_SMALL for m, tb in pass_twiddles(variant_plan(variant, log_n), tw1_max)) == 1


BR_T = 4             # kernels/ntt/bitrev.cuh: tiles of 2^BR_T x 2^BR_T elements, one a block of 2^(2 BR_T) threads


def bitrev_tiled(log_n: int, tiled: bool) -> bool:
    """Whether a bit reversal at 2^log_n runs by tiles (N5, when `tiled`): from 2^(2 BR_T) elements."""
    return tiled and log_n >= 2 * BR_T
