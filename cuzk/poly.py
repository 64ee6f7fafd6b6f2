"""Evaluation domains and the NTT over Fr (CPU reference, numpy object arrays).

Radix-2 decimation in time on bit-reversed input; each stage is one vectorized
numpy step, so a size-n transform is log2(n) array operations.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .field import R, fr_array, fr_powers, root_of_unity


@lru_cache(maxsize=32)
def bitrev_perm(n: int) -> np.ndarray:
    logn = n.bit_length() - 1
    idx = np.arange(n, dtype=np.int64)
    rev = np.zeros(n, dtype=np.int64)
    for b in range(logn):
        rev |= ((idx >> b) & 1) << (logn - 1 - b)
    return rev


@dataclass(frozen=True)
class Domain:
    """The multiplicative subgroup of size n = 2^log_n, with the key's generator."""

    log_n: int
    generator: int = 7

    @property
    def n(self) -> int:
        return 1 << self.log_n

    @property
    def omega(self) -> int:
        return root_of_unity(self.log_n, self.generator)

    @property
    def coset_shift(self) -> int:
        # The multiplicative generator: never in the subgroup, so Z(g) = g^n - 1 != 0.
        return self.generator

    @classmethod
    def for_size(cls, m: int, generator: int = 7) -> "Domain":
        log_n = max(1, (max(m, 1) - 1).bit_length())
        return cls(log_n, generator)

    def vanishing_at(self, x: int) -> int:
        return (pow(x, self.n, R) - 1) % R


def _check(a: np.ndarray) -> int:
    n = len(a)
    if n == 0 or n & (n - 1):
        raise ValueError(f"NTT length must be a power of two, got {n}")
    return n


def ntt(a, omega: int) -> np.ndarray:
    """Evaluations of the polynomial with coefficients a at omega^0..omega^(n-1)."""
    a = fr_array(a)
    n = _check(a)
    x = a[bitrev_perm(n)].copy()
    table = fr_powers(omega, max(n // 2, 1))
    m = 2
    while m <= n:
        half = m // 2
        tw = table[:: n // m][:half]
        blk = x.reshape(n // m, m)
        u = blk[:, :half].copy()
        v = (blk[:, half:] * tw) % R
        blk[:, :half] = (u + v) % R
        blk[:, half:] = (u - v) % R
        m *= 2
    return x


def intt(a, omega: int) -> np.ndarray:
    n = _check(np.asarray(a))
    out = ntt(a, pow(omega, -1, R))
    return (out * pow(n, -1, R)) % R


def coset_ntt(a, omega: int, shift: int) -> np.ndarray:
    """Evaluations at shift * omega^i."""
    a = fr_array(a)
    return ntt((a * fr_powers(shift, len(a))) % R, omega)


def coset_intt(a, omega: int, shift: int) -> np.ndarray:
    """Coefficients of the polynomial whose values at shift * omega^i are a."""
    c = intt(a, omega)
    return (c * fr_powers(pow(shift, -1, R), len(c))) % R


def naive_dft(a, omega: int) -> np.ndarray:
    """O(n^2) oracle for tests."""
    a = [int(v) for v in fr_array(a)]
    n = len(a)
    return np.array([sum(a[j] * pow(omega, i * j, R) for j in range(n)) % R for i in range(n)], dtype=object)
