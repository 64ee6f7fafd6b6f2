"""The H polynomial's scalars on the GPU, for both key conventions (design §2).

abc: device uint32[3, n, 8], a | b | c evaluations over the domain, Montgomery; consumed.
coeff:        iNTT -> coset shift g (and 1/n) -> NTT on the coset -> (ab - c)/Z(g)
              -> coset iNTT -> natural-order coefficients, the first n - 1 returned.
odd_lagrange: iNTT -> shift by w_2n (and 1/n) -> NTT -> ab - c at the odd 2n-th roots.
Bit-reversed order between the DIF and DIT passes needs no permutation in between.
"""
from __future__ import annotations

import numpy as np

from ..field import R, root_of_unity
from ..poly import Domain
from . import ntt
from .fr import upload
from .loader import kernel

THREADS = 256


def h_scalars(abc, domain: Domain, convention: str, check: bool = True, variant: str | None = None, mark=None,
              fused_tail: bool = False, pointwise_b6: bool = False):
    """variant: the NTT pass kernel (ntt.VARIANTS key; None: ntt.VARIANT). mark(name), when given, is called after
    each step (profiling: tools/experiments/h_profile.py). fused_tail (optimization F1): the last coset scale and
    the bit reversal in one pass (ntt.scale_bit_reverse). pointwise_b6 (optimization N3): the coset scales and
    the combine on Fr build 6 (ntt.POINTWISE_B6)."""
    import cupy
    mark = mark or (lambda name: None)
    pw = ntt.POINTWISE_B6 if pointwise_b6 else ()
    L, n, gen = domain.log_n, domain.n, domain.generator
    ninv = pow(n, -1, R)
    ntt.dif(abc, L, gen, inverse=True, variant=variant)     # natural -> bitrev coefficients (x n)
    mark("iNTT a, b, c")
    if convention == "coeff":
        shift = domain.coset_shift
        factor = pow(domain.vanishing_at(shift), -1, R)
    elif convention == "odd_lagrange":
        shift = root_of_unity(L + 1, gen)
        factor = 1
    else:
        raise ValueError(f"unknown H convention {convention!r}")
    ntt.scale_powers(abc, L, shift, ninv, bitrev=True, build=pw)
    mark("coset scale a, b, c")
    ntt.dit(abc, L, gen, variant=variant)                    # bitrev -> natural values on the coset
    mark("NTT a, b, c")
    q = cupy.empty((n, 8), dtype=cupy.uint32)
    f = upload([factor])
    kernel("ntt", "abc_combine", pw)(((n + THREADS - 1) // THREADS,), (THREADS,), (q, abc, f, np.int64(n)))
    mark("(ab - c) / Z")
    if convention == "odd_lagrange":
        return q
    ntt.dif(q, L, gen, inverse=True, variant=variant)
    mark("iNTT h")
    if fused_tail:
        h = ntt.scale_bit_reverse(q, L, pow(shift, -1, R), ninv, build=pw)
        mark("coset scale and bit reverse h")
    else:
        ntt.scale_powers(q, L, pow(shift, -1, R), ninv, bitrev=True, build=pw)
        mark("coset scale h")
        h = ntt.bit_reverse(q, L)
        mark("bit reverse")
    if check and bool(h[n - 1].any()):
        raise ArithmeticError("H has degree n - 1: the assignment does not satisfy the QAP")
    return h[: n - 1]
