"""ntt_msm_h: the H polynomial's scalars by NTTs, then their MSM over the H bases.

coeff:        h = coset-iNTT((a'b' - c') / Z(g)), a' = coset-NTT(iNTT(a)) on g·<ω>;
              h has degree <= n - 2, so its top coefficient must be zero.
odd_lagrange: the scalars are a'b' - c' at the odd 2n-th roots ω_2n^(2i+1); no division.
"""
from __future__ import annotations

import numpy as np

from ..field import R, fr_powers
from ..poly import Domain, coset_intt, coset_ntt, intt, ntt


def h_scalars(a, b, c, domain: Domain, convention: str) -> np.ndarray:
    w = domain.omega
    if convention == "coeff":
        g = domain.coset_shift
        ev = [coset_ntt(intt(v, w), w, g) for v in (a, b, c)]
        zinv = pow(domain.vanishing_at(g), -1, R)
        q = ((ev[0] * ev[1] - ev[2]) * zinv) % R
        h = coset_intt(q, w, g)
        if h[-1] != 0:
            raise ArithmeticError("H has degree n - 1: the assignment does not satisfy the QAP")
        return h[:-1]
    if convention == "odd_lagrange":
        shift = fr_powers(Domain(domain.log_n + 1, domain.generator).omega, domain.n)
        ev = [ntt((intt(v, w) * shift) % R, w) for v in (a, b, c)]
        return (ev[0] * ev[1] - ev[2]) % R
    raise ValueError(f"unknown H convention {convention!r}")
