"""The R1CS-to-QAP conventions: how a key's H bases are made and which scalars the prover puts on them.

A key names its convention (keys.ProvingKey.convention, written into every key file); `qap(name)` is the
object for it. Each one gives what keygen and the prover need, as arkworks' R1CSToQAP does:
- `h_len(n)`: how many H bases a domain of n has;
- `h_query(domain, tau)`: the H bases' scalars before the division by delta (keygen, CPU reference);
- `h_scalars(a, b, c, domain)`: the H MSM's scalars from a proof's a, b, c (the prover, CPU reference);
- `shift(domain)`, `factor(domain)`, `interpolates`: a'b' - c' is formed on shift * <w> and scaled by
  factor; with `interpolates` the scalars are that product's coefficients, else its values (the GPU's
  H pipeline, cuzk/gpu/h.py, follows these).

coeff (bellperson, supraseal): H_i = [tau^i Z(tau) / delta], i < n - 1; the scalars are the
  coefficients of (ab - c) / Z: h = coset-iNTT((a'b' - c') / Z(g)), a' = coset-NTT(iNTT(a)) on g<w>,
  and h's top coefficient must be zero.
odd_lagrange (snarkjs): H_j = [L_(2j+1)(tau) / delta] over the 2n-th roots, j < n; the scalars are
  a'b' - c' at the odd 2n-th roots w_2n^(2j+1), with no division.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from .field import R, fr_powers
from .poly import Domain, coset_intt, coset_ntt, intt


class QAP(ABC):
    name: str
    interpolates: bool        # the H scalars are coefficients (True) or values on the shifted domain

    @abstractmethod
    def shift(self, domain: Domain) -> int:
        """The s with a'b' - c' formed at s * w^i."""

    def factor(self, domain: Domain) -> int:
        """What a'b' - c' is multiplied by there (1 / Z(s) where Z does not vanish)."""
        return 1

    @abstractmethod
    def h_len(self, n: int) -> int:
        """The number of H bases for a domain of size n."""

    @abstractmethod
    def h_query(self, domain: Domain, tau: int) -> np.ndarray:
        """The H bases' scalars, before the division by delta."""

    @abstractmethod
    def h_scalars(self, a, b, c, domain: Domain) -> np.ndarray:
        """The H MSM's scalars (object array of Fr ints) from a, b, c over the domain."""

    def __repr__(self) -> str:
        return f"qap({self.name!r})"


class CoeffQAP(QAP):
    name = "coeff"
    interpolates = True

    def shift(self, domain: Domain) -> int:
        return domain.coset_shift

    def factor(self, domain: Domain) -> int:
        return pow(domain.vanishing_at(domain.coset_shift), -1, R)

    def h_len(self, n: int) -> int:
        return n - 1

    def h_query(self, domain: Domain, tau: int) -> np.ndarray:
        return (fr_powers(tau, domain.n - 1) * domain.vanishing_at(tau)) % R

    def h_scalars(self, a, b, c, domain: Domain) -> np.ndarray:
        w, g = domain.omega, self.shift(domain)
        ev = [coset_ntt(intt(v, w), w, g) for v in (a, b, c)]
        h = coset_intt(((ev[0] * ev[1] - ev[2]) * self.factor(domain)) % R, w, g)
        if h[-1] != 0:
            raise ArithmeticError("H has degree n - 1: the assignment does not satisfy the QAP")
        return h[:-1]


class OddLagrangeQAP(QAP):
    name = "odd_lagrange"
    interpolates = False

    def shift(self, domain: Domain) -> int:
        return Domain(domain.log_n + 1, domain.generator).omega

    def h_len(self, n: int) -> int:
        return n

    def h_query(self, domain: Domain, tau: int) -> np.ndarray:
        big = Domain(domain.log_n + 1, domain.generator)
        return intt(fr_powers(tau, 2 * domain.n), big.omega)[1::2].copy()

    def h_scalars(self, a, b, c, domain: Domain) -> np.ndarray:
        w = domain.omega
        ev = [coset_ntt(intt(v, w), w, self.shift(domain)) for v in (a, b, c)]
        return (ev[0] * ev[1] - ev[2]) % R


COEFF, ODD_LAGRANGE = CoeffQAP(), OddLagrangeQAP()
QAPS = {q.name: q for q in (COEFF, ODD_LAGRANGE)}
CONVENTIONS = tuple(QAPS)        # the names, in the order key files number them


def qap(convention: str | QAP) -> QAP:
    """The convention named `convention` (or the object itself); a clear error for an unknown name."""
    if isinstance(convention, QAP):
        return convention
    try:
        return QAPS[convention]
    except (KeyError, TypeError):
        raise ValueError(f"unknown H convention {convention!r}; known: {', '.join(CONVENTIONS)}") from None
