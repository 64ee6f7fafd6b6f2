"""The H polynomial's scalars on the GPU, for both key conventions (docs/architecture.md, Conventions).

abc: device uint32[3, n, 8], a | b | c evaluations over the domain, Montgomery; consumed.
coeff:        iNTT -> coset shift g (and 1/n) -> NTT on the coset -> (ab - c)/Z(g)
              -> coset iNTT -> natural-order coefficients, the first n - 1 returned.
coeff, H2:    iNTT -> coset shift of a, b only -> NTT -> ab/Z(g) -> coset iNTT, less C's coefficients / Z(g)
              (six NTTs, not seven; the same h).
odd_lagrange: iNTT -> shift by w_2n (and 1/n) -> NTT -> ab - c at the odd 2n-th roots.
Bit-reversed order between the DIF and DIT passes needs no permutation in between.
"""
from __future__ import annotations

import cupy
import numpy as np

from ..field import R
from ..poly import Domain
from ..qap import qap
from . import ntt
from .ntt_plan import POINTWISE_B6
from .fr import upload
from .loader import kernel

THREADS = 256


def h_scalars(abc, domain: Domain, convention, check: bool = True, variant: str | None = None, mark=None,
              fused_tail: bool = False, pointwise_b6: bool = False, skip_c: bool = False, tiled_bitrev: bool = False):
    """variant: the NTT pass kernel (ntt_plan.VARIANTS key; None: ntt_plan.VARIANT). mark(name), when given, is called after
    each step (profiling). fused_tail (optimization F1): the last coset scale and
    the bit reversal in one pass (ntt.scale_bit_reverse). pointwise_b6 (optimization N3): the coset scales and
    the combine on Fr build 6 (ntt_plan.POINTWISE_B6). skip_c (optimization H2, `coeff` only): no coset NTT of c.
    tiled_bitrev (optimization N5): the last pass's bit reversal by tiles (ntt.bit_reverse's `tiled`).
    H(gx) Z(gx) = A(gx) B(gx) - C(gx) and Z(gx) = g^n - 1 mod x^n - 1, with H and C of degree < n, so
    H(gx) = f (A(gx) B(gx) mod x^n - 1) - f C(gx), f = 1 / Z(g): h = iNTT_coset(a b f) - f C's coefficients,
    the very polynomial of the seven-NTT path for any a, b, c (satisfying or not)."""
    mark = mark or (lambda name: None)
    pw = POINTWISE_B6 if pointwise_b6 else ()
    L, n, gen = domain.log_n, domain.n, domain.generator
    ninv = pow(n, -1, R)
    ntt.dif(abc, L, gen, inverse=True, variant=variant)     # natural -> bitrev coefficients (x n)
    mark("iNTT a, b, c")
    qp = qap(convention)
    shift, factor = qp.shift(domain), qp.factor(domain)
    skip_c = skip_c and qp.interpolates
    ev = abc[:2] if skip_c else abc                          # C stays as n x its coefficients (H2)
    ntt.scale_powers(ev, L, shift, ninv, bitrev=True, build=pw)
    mark("coset scale a, b" if skip_c else "coset scale a, b, c")
    ntt.dit(ev, L, gen, variant=variant)                     # bitrev -> natural values on the coset
    mark("NTT a, b" if skip_c else "NTT a, b, c")
    q = cupy.empty((n, 8), dtype=cupy.uint32)
    f = upload([factor])
    kernel("ntt/ntt", "ab_combine" if skip_c else "abc_combine", pw)(((n + THREADS - 1) // THREADS,), (THREADS,),
                                                                     (q, abc, f, np.int64(n)))
    mark("a b / Z" if skip_c else "(ab - c) / Z")
    if not qp.interpolates:
        return q
    ntt.dif(q, L, gen, inverse=True, variant=variant)
    mark("iNTT h")
    sub = factor * ninv                                      # f C = (f / n) (n C) for H2
    if fused_tail and skip_c:
        h = ntt.scale_bit_reverse(q, L, pow(shift, -1, R), ninv, build=pw, sub=abc[2], k=sub,
                                   tiled=tiled_bitrev)
        mark("coset scale, - f C and bit reverse h")
    elif fused_tail:
        h = ntt.scale_bit_reverse(q, L, pow(shift, -1, R), ninv, build=pw, tiled=tiled_bitrev)
        mark("coset scale and bit reverse h")
    else:
        ntt.scale_powers(q, L, pow(shift, -1, R), ninv, bitrev=True, build=pw)
        mark("coset scale h")
        if skip_c:
            ntt.sub_scaled(q, abc[2], sub, build=pw)
            mark("- f C")
        h = ntt.bit_reverse(q, L, tiled=tiled_bitrev)
        mark("bit reverse")
    if check and bool(h[n - 1].any()):
        raise ArithmeticError("H has degree n - 1: the assignment does not satisfy the QAP")
    return h[: n - 1]
